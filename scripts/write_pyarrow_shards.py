"""Rewrites neardup's fingerprint shards as pyarrow writes Parquet when a
user calls `pq.write_table` without options (snappy, dictionary encoding
that falls back to plain when the dictionary grows too large), with
ROW_GROUP rows per row group: 65,536 by default, the shape the shards in
issue 14 had (pyarrow's own default is 1,048,576 rows since version 15;
Spark's writers cut row groups by bytes, 128 MiB).

    .venv/bin/python scripts/write_pyarrow_shards.py IN_DIR OUT_DIR [ROW_GROUP]
"""

import glob
import os
import sys

import pyarrow.parquet as pq


def main():
    source, target = sys.argv[1], sys.argv[2]
    row_group = int(sys.argv[3]) if len(sys.argv) > 3 else 65536
    os.makedirs(target, exist_ok=True)
    for path in sorted(glob.glob(os.path.join(source, "part-*.parquet"))):
        names = pq.read_schema(path).names
        table = pq.read_table(path, columns=[c for c in ["id", "simhash", "sketch"] if c in names])
        pq.write_table(table, os.path.join(target, os.path.basename(path)), row_group_size=row_group)
    open(os.path.join(target, "_SUCCESS"), "w").close()


if __name__ == "__main__":
    main()
