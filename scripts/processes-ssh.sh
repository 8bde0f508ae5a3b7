#!/usr/bin/env bash
# Runs a job spec on a cluster of hosts over ssh: one process per line of the
# hostfile (line I, `host:port`, is process I).
#
#   scripts/processes-ssh.sh HOSTFILE JOB.toml [neardup run flags, e.g. --date 2026-11-22]
#
# Every host needs the neardup binary (NEARDUP, default `neardup` on its
# PATH) and must see HOSTFILE, JOB.toml and every path in the spec at the same
# absolute paths (shared storage). Ports must be open between the hosts.
# Each process's output goes to LOGDIR (default ./process-logs/) on this
# machine; the script exits non-zero if any process failed. Not run in CI.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 HOSTFILE JOB.toml [run flags...]" >&2
    exit 2
fi
hostfile=$(realpath "$1")
spec=$(realpath "$2")
shift 2
bin=${NEARDUP:-neardup}
logs=${LOGDIR:-process-logs}
mkdir -p "$logs"

mapfile -t hosts < <(grep -v '^[[:space:]]*\(#\|$\)' "$hostfile")
pids=()
for i in "${!hosts[@]}"; do
    host=${hosts[$i]%:*}
    # shellcheck disable=SC2029 # the command line is built here on purpose
    ssh -o BatchMode=yes "$host" \
        "$bin run $(printf '%q' "$spec") --hostfile $(printf '%q' "$hostfile") --process $i $(printf '%q ' "$@")" \
        > "$logs/process-$i.log" 2>&1 &
    pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then
        echo "process $i (${hosts[$i]}) failed; see $logs/process-$i.log" >&2
        status=1
    fi
done
exit $status
