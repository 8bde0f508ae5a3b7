#!/usr/bin/env bash
# Two builds of neardup, run alternately on the same command, so that the
# VM's drift (20-40% within an hour on this machine) falls on both alike:
#
#   scripts/bench_ab.sh OLD_BIN NEW_BIN [ROUNDS] -- ARGS...
#
# e.g., the build of HEAD~1 against this one on the `night` pair graph:
#
#   git worktree add /tmp/old HEAD~1 && (cd /tmp/old && cargo build --release)
#   scripts/bench_ab.sh /tmp/old/target/release/neardup target/release/neardup 4 -- \
#       cluster --pairs bench-data/cluster-night --out bench-data/ab-out \
#       --corpus-wins --workers 2 --parts 2 --overwrite
#
# Each round runs OLD then NEW (the order flips every round), each after
# PAUSE seconds idle (default 3: memory freed by the run before is then
# handed back to the host, as at the start of a nightly job). Prints every
# run (wall, user and system seconds, minor faults, peak RSS), then each
# build's median and range. With an `--out DIR` among ARGS, it also checks
# that both builds wrote the same bytes (every Parquet file under DIR).
set -euo pipefail
if [ $# -lt 3 ]; then
    sed -n '2,19p' "$0" >&2
    exit 2
fi
old=$1 new=$2
shift 2
rounds=4
if [ "$1" != "--" ]; then rounds=$1; shift; fi
[ "$1" = "--" ] || { echo "bench_ab.sh: expected -- before the neardup arguments" >&2; exit 2; }
shift
args=("$@")
out=""
for ((i = 0; i < ${#args[@]} - 1; i++)); do
    if [ "${args[i]}" = "--out" ]; then out=${args[i + 1]}; fi
done
log=$(mktemp)
times=$(mktemp)
trap 'rm -f "$log" "$times"' EXIT

digest() {
    [ -n "$out" ] && [ -d "$out" ] || return 0
    (cd "$out" && find . -name '*.parquet' -print0 | sort -z | xargs -0 md5sum | md5sum | cut -c1-12)
}

for ((r = 0; r < rounds; r++)); do
    order=(old new)
    if ((r % 2 == 1)); then order=(new old); fi
    for which in "${order[@]}"; do
        bin=$old
        if [ "$which" = new ]; then bin=$new; fi
        sleep "${PAUSE:-3}"
        if ! /usr/bin/time -f "%e %U %S %R %M" -o "$times" "$bin" "${args[@]}" > /dev/null 2> "$log"; then
            echo "bench_ab.sh: $which ($bin) failed:" >&2
            cat "$log" >&2
            exit 1
        fi
        read -r wall user sys faults peak < "$times"
        d=$(digest)
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$which" "$wall" "$user" "$sys" "$faults" "$peak" "$d"
    done
done | python3 -c '
import statistics, sys
runs = {}
digests = {}
print("build\twall s\tuser s\tsys s\tfaults\tpeak KiB\toutputs", flush=True)
for line in sys.stdin:
    print(line, end="", flush=True)
    which, wall, user, sys_, faults, peak, digest = line.rstrip("\n").split("\t")
    runs.setdefault(which, []).append((float(wall), float(user), float(sys_), int(faults), int(peak) / 1024))
    digests.setdefault(which, set()).add(digest)
print()
names = ("wall s", "user s", "sys s", "minor faults", "peak MiB")
for which in ("old", "new"):
    rows = runs.get(which, [])
    cells = []
    for i, name in enumerate(names):
        values = [row[i] for row in rows]
        fmt = "{:,.0f}" if i >= 3 else "{:.2f}"
        cells.append(f"{name} " + fmt.format(statistics.median(values))
                     + " (" + fmt.format(min(values)) + "-" + fmt.format(max(values)) + ")")
    print(f"{which}: {len(rows)} runs, medians (ranges): " + ", ".join(cells))
old, new = digests.get("old", set()), digests.get("new", set())
if old != {""} and new != {""}:
    same = len(old) == 1 and old == new
    print("outputs: " + ("the same bytes" if same else f"DIFFER: old {sorted(old)} new {sorted(new)}"))
'
