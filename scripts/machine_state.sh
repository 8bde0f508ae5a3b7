# What the machine gives a benchmark right now, sourced by the bench
# scripts, which print it before and after their runs. On a shared VM both
# drift within the hour, and the same build's figures drift with them:
#
# - machine_state WHEN: the CPU model and cores; the CPU's speed (a fixed
#   Python loop timed 200 times: the fastest run is what the core gives
#   when the host leaves it alone, the median what it gave this benchmark;
#   on 2026-11-29 the AMD EPYC VM gave 3.4 ms at best and 6.1 in the median);
#   and what first touching fresh memory costs (dd reading 256 MiB of
#   /dev/zero into a new buffer, once and four times: the difference leaves
#   the first touches), in microseconds a 4 KiB page (1.2-1.6 in the Intel
#   VM's fast spells, 2-7 in its slow ones).
machine_state() {
    sleep "${PAUSE:-0}"
    local model once four
    model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
    once=$(dd if=/dev/zero of=/dev/null bs=256M count=1 2>&1 | awk '/copied/ {print $(NF-3)}')
    four=$(dd if=/dev/zero of=/dev/null bs=256M count=4 2>&1 | awk '/copied/ {print $(NF-3)}')
    python3 - "$1" "$model" "$(nproc)" "$once" "$four" <<'PY'
import sys, time
when, model, cores, once, four = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
runs = []
for _ in range(200):
    start = time.perf_counter()
    sum(range(200_000))
    runs.append(time.perf_counter() - start)
runs.sort()
touch = (once - (four - once) / 3) * 1e6 / 65536
print(f"machine ({when}): {model}, {cores} cores; CPU loop {runs[0] * 1e3:.2f} ms at best, "
      f"{runs[len(runs) // 2] * 1e3:.2f} median; first touch {touch:.2f} us a 4 KiB page")
PY
}
