#!/usr/bin/env bash
# Benchmark of `neardup match` reading its inputs from an S3 API on loopback
# (moto's server, from the tests' requirements) against reading the same
# files from local disk, alternating:
#
#   scripts/bench_object_store.sh [CORPUS_ROWS] [ROUNDS]
#
# Generates |B| = 1M queries and CORPUS_ROWS (default 20M) corpus rows with
# `neardup gen` into bench-data/ (kept out of git), uploads them to a fresh
# moto server, and prints, per run, the scan rate (corpus rows per second per
# core) and the time end to end, in two settings:
# - "own core": the server pinned to the last core, neardup (one worker, its
#   I/O threads too) pinned to the first, as a store on other machines would
#   be: what neardup's object-store path (footers, ranged reads of the column
#   chunks, the I/O runtime) costs it;
# - "all cores": neardup on every core, one of them shared with the server, a
#   Python process whose CPU time then comes out of neardup's.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus_rows=${1:-20000000}
rounds=${2:-3}
cores=$(nproc)
data=bench-data/q1m-c${corpus_rows}

cargo build --release --quiet
bin=target/release/neardup
if [ ! -f "$data/_SUCCESS" ]; then
    "$bin" gen --out "$data" --queries 1000000 --corpus "$corpus_rows" --shards 16 --row-group-rows 1048576 --overwrite
fi
if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r scripts/requirements-test.txt

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
server_core=()
if [ "$cores" -gt 1 ]; then server_core=(taskset -c $((cores - 1))); fi
"${server_core[@]}" .venv/bin/python -m moto.server -H 127.0.0.1 -p "$port" > bench-data/moto.log 2>&1 &
moto=$!
trap 'kill $moto 2> /dev/null' EXIT
until python3 -c "import socket; socket.create_connection(('127.0.0.1', $port))" 2> /dev/null; do sleep 0.2; done
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench AWS_REGION=us-east-1
export AWS_ENDPOINT_URL=http://127.0.0.1:$port AWS_ALLOW_HTTP=true
.venv/bin/python - "$AWS_ENDPOINT_URL" "$data" <<'PY'
import os, sys, boto3
endpoint, root = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
s3.create_bucket(Bucket="bench")
for sub in ("queries", "corpus"):
    for name in sorted(os.listdir(os.path.join(root, sub))):
        s3.upload_file(os.path.join(root, sub, name), "bench", f"{sub}/{name}")
PY

# neardup match with its figures under LABEL: `run_match LABEL WORKERS
# PREFIX... -- QUERIES CORPUS`, PREFIX the command it runs under.
run_match() {
    local label=$1 workers=$2
    shift 2
    local prefix=()
    while [ "$1" != -- ]; do prefix+=("$1"); shift; done
    "${prefix[@]}" "$bin" match --queries "$2" --corpus "$3" --out bench-data/pairs-os \
        --workers "$workers" --overwrite > /dev/null
    python3 - "$label" "$workers" <<'PY'
import json, sys
label, cores = sys.argv[1], int(sys.argv[2])
s = json.load(open("bench-data/pairs-os/_summary.json"))
print(f"{label:15} {s['rows_scanned']:,} rows, {s['pairs']:,} pairs: total {s['seconds']:.2f}s "
      f"(build {s['build_seconds']:.2f}s, scan {s['scan_seconds']:.2f}s), "
      f"scan {s['rows_per_second'] / cores / 1e6:.2f}M rows/s per core")
PY
}
first_core=(taskset -c 0)
for _ in $(seq "$rounds"); do
    if [ "$cores" -gt 1 ]; then
        run_match "local own core" 1 "${first_core[@]}" -- "$data/queries" "$data/corpus"
        run_match "s3 own core" 1 "${first_core[@]}" -- s3://bench/queries s3://bench/corpus
    fi
    run_match "local all cores" "$cores" -- "$data/queries" "$data/corpus"
    run_match "s3 all cores" "$cores" -- s3://bench/queries s3://bench/corpus
done
