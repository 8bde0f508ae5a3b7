#!/usr/bin/env bash
# Benchmark of `neardup match` end to end from Parquet, and of the same join
# in DuckDB SQL on the same files. Before and after, the CPU's speed and the
# cost of first touches (scripts/machine_state.sh).
#
#   scripts/bench.sh [CORPUS_ROWS] [DUCKDB_SHARDS]
#
# Generates |B| = 1M queries and CORPUS_ROWS (default 40M) corpus rows with
# `neardup gen` into bench-data/ (kept out of git), matches them at k = 3 on
# every core, and reports corpus rows per second per core and peak memory:
# once on the shards neardup wrote, once on the same rows as pyarrow writes
# them (scripts/write_pyarrow_shards.py: snappy, dictionary, 64Ki-row groups).
# DuckDB joins the queries with the first DUCKDB_SHARDS (default 1) of the
# pyarrow-written shards, in the same run. KERNEL=avx2 (or avx512, portable)
# forces `match --kernel`: an AVX-512 host then measures the AVX2 or portable
# kernel (the portable one is what ARM runs). VERIFY=1 measures the quality
# mode instead, `match --verify` (its k = 6) on shards with sketches (data
# generated with `gen --sketch`); DuckDB runs its k = 3 join, and its k = 6
# join on the first 200,000 rows of a shard (it compares far more pairs).
set -euo pipefail
cd "$(dirname "$0")/.."
corpus_rows=${1:-40000000}
duckdb_shards=${2:-1}
cores=$(nproc)
data=bench-data/q1m-c${corpus_rows}
sketch=() verify=() mode="k=3"
if [ -n "${VERIFY:-}" ]; then
    data=$data-sketch sketch=(--sketch) verify=(--verify) mode="--verify (k=6)"
fi

cargo build --release --quiet
bin=target/release/neardup
if [ ! -f "$data/_SUCCESS" ]; then
    "$bin" gen --out "$data" --queries 1000000 --corpus "$corpus_rows" --shards 16 --row-group-rows 1048576 --overwrite "${sketch[@]}"
fi

if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r scripts/requirements-bench.txt
# The same corpus as pyarrow writes it (snappy, dictionary, 64Ki-row groups).
if [ ! -f "$data/corpus-pyarrow/_SUCCESS" ]; then
    .venv/bin/python scripts/write_pyarrow_shards.py "$data/corpus" "$data/corpus-pyarrow"
fi

# neardup match on CORPUS_DIR, with its figures under LABEL.
run_match() {
    local label=$1 corpus=$2
    local kernel=()
    if [ -n "${KERNEL:-}" ]; then kernel=(--kernel "$KERNEL"); fi
    echo "== neardup match, $mode, $cores workers, corpus written by $label, $("$bin" plan --num-queries 1000000 "${kernel[@]}" | grep '^kernel:')"
    /usr/bin/time -v "$bin" match --queries "$data/queries" --corpus "$corpus" --out bench-data/pairs \
        --workers "$cores" --overwrite "${kernel[@]}" "${verify[@]}" 2> bench-data/time.txt
    peak_kib=$(awk '/Maximum resident set size/ {print $6}' bench-data/time.txt)
    python3 - "$cores" "$peak_kib" <<'PY'
import json, sys
cores, peak = int(sys.argv[1]), int(sys.argv[2])
s = json.load(open("bench-data/pairs/_summary.json"))
verified = f" of {s['candidates']} candidates" if s.get("verify_threshold") is not None else ""
print(f"corpus rows {s['rows_scanned']}, pairs {s['pairs']}{verified}, total {s['seconds']:.2f}s "
      f"(build {s['build_seconds']:.2f}s, scan {s['scan_seconds']:.2f}s)")
end_to_end = s['rows_scanned'] / s['seconds']
print(f"end to end (table build included): {end_to_end / 1e6:.2f}M rows/s, {end_to_end / cores / 1e6:.2f}M rows/s per core; "
      f"scan alone {s['rows_per_second'] / cores / 1e6:.2f}M rows/s per core")
print(f"peak memory: {peak / 1024:.0f} MiB")
PY
}
# shellcheck source=scripts/machine_state.sh
source scripts/machine_state.sh
machine_state before
run_match neardup "$data/corpus"
run_match pyarrow "$data/corpus-pyarrow"

if [ "$duckdb_shards" -gt 0 ]; then
    shards=$(ls "$data"/corpus-pyarrow/part-*.parquet | head -n "$duckdb_shards" | paste -sd,)
    echo "== DuckDB SQL, same join, $cores threads, $duckdb_shards pyarrow-written shard(s)"
    .venv/bin/python scripts/bench_duckdb.py "$data/queries/*.parquet" "$shards" 3 "$cores" | tee bench-data/duckdb.json
    if [ -n "${VERIFY:-}" ]; then
        echo "== DuckDB SQL, the same join at k = 6, the first 200,000 rows of the shard(s)"
        .venv/bin/python scripts/bench_duckdb.py "$data/queries/*.parquet" "$shards" 6 "$cores" 200000
    fi
fi
machine_state after
