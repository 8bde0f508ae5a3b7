#!/usr/bin/env bash
# Runs a job spec as a timely cluster of N processes on this machine, on free
# loopback ports: the way to try cluster mode on one box.
#
#   scripts/processes-local.sh N JOB.toml [neardup run flags, e.g. --date 2026-11-22 --force]
#
# Writes a hostfile of N 127.0.0.1 ports, starts `neardup run JOB.toml
# --hostfile ... --process I` for I in 0..N-1, prints each process's lines
# as they come, marked [process I], and exits non-zero if any process
# failed. NEARDUP (default: the release binary, built if missing) names the
# binary; python3 picks the ports.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 N JOB.toml [run flags...]" >&2
    exit 2
fi
n=$1
spec=$2
shift 2
root="$(cd "$(dirname "$0")/.." && pwd)"
bin=${NEARDUP:-$root/target/release/neardup}
if [ ! -x "$bin" ]; then
    (cd "$root" && cargo build --release --quiet)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
hostfile="$work/hosts"
# Ports the kernel hands out for port 0, held open together so they differ.
python3 - "$n" > "$hostfile" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
for s in socks:
    print(f"127.0.0.1:{s.getsockname()[1]}")
PY

pids=()
for ((i = 0; i < n; i++)); do
    # pipefail: the pipeline fails if the process does.
    "$bin" run "$spec" --hostfile "$hostfile" --process "$i" "$@" 2>&1 \
        | sed -u "s/^/[process $i] /" &
    pids+=($!)
done
status=0
for ((i = 0; i < n; i++)); do
    if ! wait "${pids[$i]}"; then
        status=1
    fi
done
exit $status
