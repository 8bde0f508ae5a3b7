#!/usr/bin/env bash
# Benchmark of the planner's choice: `match` with each table design near the
# one `plan` picks, timed beside the planner's estimate, so that a host can
# check (and refit) the probe costs in src/matching/kernel.rs.
#
#   scripts/bench_plan.sh [K ...]            (default: 2 3 4 5 6)
#
# Query sets: scripts/bench.sh's 1M queries, and the first 1 and 4 of its
# pyarrow-written corpus shards (3.75M and 15M rows with its 60M corpus);
# QUERY_SHARDS="0 1 4" chooses them (0 is the 1M queries). The corpus is
# those shards, scanned on every core. For each k and query set, every
# design the planner estimates within 3x of its choice runs once with
# `--blocks`; `*` marks the planner's choice. KERNEL=avx2 (or avx512,
# portable) forces `--kernel`. Run scripts/bench.sh 60000000 0 first for
# the data.
set -euo pipefail
cd "$(dirname "$0")/.."
data=bench-data/q1m-c${CORPUS_ROWS:-60000000}
ks=${*:-2 3 4 5 6}
cores=$(nproc)
kernel=()
if [ -n "${KERNEL:-}" ]; then kernel=(--kernel "$KERNEL"); fi
if [ ! -f "$data/corpus-pyarrow/_SUCCESS" ]; then
    echo "no $data/corpus-pyarrow: run scripts/bench.sh ${CORPUS_ROWS:-60000000} 0 first" >&2
    exit 1
fi
cargo build --release --quiet
bin=target/release/neardup
work=bench-data/plan
rm -rf "$work" && mkdir -p "$work"

# The query set of N corpus shards (0: the 1M queries), as a directory.
query_set() {
    local n=$1
    if [ "$n" = 0 ]; then echo "$data/queries"; return; fi
    mkdir -p "$work/q$n"
    ls "$data"/corpus-pyarrow/part-*.parquet | head -n "$n" | while read -r f; do
        ln -sf "$PWD/$f" "$work/q$n/"
    done
    echo "$work/q$n"
}

echo "$(lscpu | sed -n 's/^Model name: *//p'), $cores cores, $("$bin" plan --num-queries 1 "${kernel[@]}" | grep '^kernel:')"
printf '%-9s %-3s %-4s %7s %12s %13s %14s %9s\n' queries k m tables candidates "estimate ns" "measured ns" "peak MiB"
for n in ${QUERY_SHARDS:-0 1 4}; do
    queries=$(query_set "$n")
    for k in $ks; do
        # The planner's alternatives: m, tables, candidates, estimate, verdict.
        "$bin" plan --queries "$queries" -k "$k" "${kernel[@]}" |
            awk '/^  m=/ { sub("m=", "", $1); print $1, $2, $4, $7, $9 }' >"$work/alternatives"
        chosen=$(awk '$5 == "chosen" { print $4 }' "$work/alternatives")
        while read -r m tables candidates estimate verdict; do
            if awk -v e="$estimate" -v c="$chosen" 'BEGIN { exit !(e > 3 * c) }'; then continue; fi
            /usr/bin/time -f %M -o "$work/peak" "$bin" match --queries "$queries" \
                --corpus "$data/corpus-pyarrow" --out "$work/pairs" --overwrite \
                --workers "$cores" -k "$k" --blocks "$m" "${kernel[@]}" >/dev/null 2>"$work/log"
            mark=$([ "$verdict" = chosen ] && echo '*' || echo ' ')
            python3 - "$n" "$k" "$m$mark" "$tables" "$candidates" "$estimate" "$cores" "$(cat "$work/peak")" <<'PY'
import json, sys
n, k, m, tables, candidates, estimate, cores, peak = sys.argv[1:]
s = json.load(open("bench-data/plan/pairs/_summary.json"))
measured = s["scan_seconds"] * int(cores) / s["rows_scanned"] * 1e9
label = "1M" if n == "0" else f"{n} shards"
print(f"{label:<9} {k:<3} {m:<4} {tables:>7} {float(candidates):>12.3f} {float(estimate):>13.1f} {measured:>14.1f} {int(peak) // 1024:>9}")
PY
        done <"$work/alternatives"
    done
done
