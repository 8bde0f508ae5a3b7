#!/usr/bin/env bash
# Benchmark of `neardup match` end to end from Parquet, and of the same join
# in DuckDB SQL on the same files.
#
#   scripts/bench.sh [CORPUS_ROWS] [DUCKDB_SHARDS]
#
# Generates |B| = 1M queries and CORPUS_ROWS (default 40M) corpus rows with
# `neardup gen` into bench-data/ (kept out of git), matches them at k = 3 on
# every core, and reports corpus rows per second per core and peak memory.
# DuckDB joins the queries with the first DUCKDB_SHARDS (default 1) shards.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus_rows=${1:-40000000}
duckdb_shards=${2:-1}
cores=$(nproc)
data=bench-data/q1m-c${corpus_rows}

cargo build --release --quiet
bin=target/release/neardup
if [ ! -f "$data/_SUCCESS" ]; then
    "$bin" gen --out "$data" --queries 1000000 --corpus "$corpus_rows" --shards 16 --row-group-rows 1048576 --overwrite
fi

echo "== neardup match, k=3, $cores workers"
/usr/bin/time -v "$bin" match --queries "$data/queries" --corpus "$data/corpus" --out bench-data/pairs \
    --workers "$cores" --overwrite 2> bench-data/time.txt
peak_kib=$(awk '/Maximum resident set size/ {print $6}' bench-data/time.txt)
python3 - "$cores" "$peak_kib" <<'PY'
import json, sys
cores, peak = int(sys.argv[1]), int(sys.argv[2])
s = json.load(open("bench-data/pairs/_summary.json"))
print(f"corpus rows {s['rows_scanned']}, pairs {s['pairs']}, total {s['seconds']:.2f}s "
      f"(build {s['build_seconds']:.2f}s, scan {s['scan_seconds']:.2f}s)")
print(f"rate: {s['rows_per_second'] / 1e6:.2f}M rows/s, {s['rows_per_second'] / cores / 1e6:.2f}M rows/s per core")
print(f"peak memory: {peak / 1024:.0f} MiB")
PY

if [ "$duckdb_shards" -gt 0 ]; then
    if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r scripts/requirements-test.txt
    shards=$(ls "$data"/corpus/part-*.parquet | head -n "$duckdb_shards" | paste -sd,)
    echo "== DuckDB SQL, same join, $cores threads, $duckdb_shards shard(s)"
    .venv/bin/python scripts/bench_duckdb.py "$data/queries/*.parquet" "$shards" 3 "$cores" | tee bench-data/duckdb.json
fi
