#!/usr/bin/env bash
# Benchmark of `neardup cluster`: EDGES pairs (default 10M) written by DuckDB
# into bench-data/ (kept out of git), clustered on every core.
#
#   scripts/bench_cluster.sh [EDGES]
#
# The graph looks like a night's near-duplicates: most pages sit in small
# clusters (edges inside blocks of 5 ids), and 1% of edges join random pages,
# which chains blocks into larger components. A third are `--self` pairs.
set -euo pipefail
cd "$(dirname "$0")/.."
edges=${1:-10000000}
cores=$(nproc)
data=bench-data/pairs-e${edges}

cargo build --release --quiet
if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r scripts/requirements-test.txt
if [ ! -f "$data/part-00000.parquet" ]; then
    mkdir -p "$data"
    .venv/bin/python - "$edges" "$data/part-00000.parquet" <<'PY'
import sys, duckdb
edges, path = int(sys.argv[1]), sys.argv[2]
nodes = edges // 4 * 5
duckdb.connect().execute(f"""
COPY (
  SELECT (e // 4) * 5 + (hash(e) % 5)::BIGINT AS query_id,
         CASE WHEN e % 100 = 0 THEN (hash(e * 3) % {nodes})::BIGINT
              ELSE (e // 4) * 5 + (hash(e + 7) % 5)::BIGINT END AS corpus_id,
         e % 3 = 0 AS self_pair
  FROM range({edges}) t(e)
) TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE 1048576)
""")
PY
fi

echo "== neardup cluster, $edges pairs, $cores workers"
/usr/bin/time -v target/release/neardup cluster --pairs "$data" --out bench-data/clusters \
    --corpus-wins --workers "$cores" --overwrite 2> bench-data/cluster-time.txt
peak_kib=$(awk '/Maximum resident set size/ {print $6}' bench-data/cluster-time.txt)
wall=$(awk '/Elapsed \(wall clock\)/ {print $8}' bench-data/cluster-time.txt)
python3 - "$peak_kib" "$wall" <<'PY'
import json, sys
s = json.load(open("bench-data/clusters/_summary.json"))
print(f"pairs {s['pairs']}, pages {s['pages']}, clusters {s['clusters']}, largest {s['largest_cluster']}, "
      f"dropped {s['dropped']}")
print(f"time {s['seconds']:.2f}s (wall {sys.argv[2]}), {s['pairs'] / s['seconds'] / 1e6:.2f}M pairs/s; "
      f"peak memory {int(sys.argv[1]) / 1024:.0f} MiB")
PY
