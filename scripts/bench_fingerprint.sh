#!/usr/bin/env bash
# End-to-end throughput of `neardup fingerprint` on ONE large file, the case
# where a nightly job gets a single Common Crawl WARC (about 1 GB): the
# sample WARC (real HTML pages written by warcio) and the sample WET (real
# text) each repeated into one gzipped file of COPIES copies in bench-data/
# (kept out of git), fingerprinted with 1 worker and with every core, under
# the default scheme or SCHEME_ARGS. Each line gives wall time, the rate in
# MB/s of gzip and of uncompressed WARC or WET, and CPU time.
#
#   scripts/bench_fingerprint.sh            COPIES=300 (WARC: 110 MB gzipped, 310 MB plain)
#   COPIES=30 SCHEME_ARGS="--scheme v2" scripts/bench_fingerprint.sh
#   NEARDUP=/tmp/neardup-before scripts/bench_fingerprint.sh   (another build, to compare)
set -euo pipefail
cd "$(dirname "$0")/.."
copies=${COPIES:-300}
cores=$(nproc)
cargo build --release --quiet
# The WARC's HTML pages (main-content extraction on) and the WET's text.
for sample in pages.warc.gz text.wet.gz; do
    name=${sample%%.*}
    dir=bench-data/one-big-$name-$copies
    file=$dir/big.${sample#*.}
    if [ ! -f "$file" ]; then
        mkdir -p "$dir"
        for _ in $(seq "$copies"); do cat "data-samples/crawl/$sample"; done > "$file.tmp"
        mv "$file.tmp" "$file"
    fi
    gzipped=$(stat -c %s "$file")
    plain=$(( $(gzip -dc "data-samples/crawl/$sample" | wc -c) * copies ))
    for workers in 1 "$cores"; do
        # shellcheck disable=SC2086 # SCHEME_ARGS is a list of flags
        /usr/bin/time -f "%e %U %S %M" -o bench-data/fingerprint-time.txt \
            "${NEARDUP:-target/release/neardup}" fingerprint --input "$dir" --out bench-data/one-big-fp \
            --workers "$workers" ${SCHEME_ARGS:-} --overwrite > /dev/null
        read -r wall user sys peak < bench-data/fingerprint-time.txt
        python3 - "$sample" "$workers" "$wall" "$user" "$sys" "$peak" "$gzipped" "$plain" <<'PY'
import sys
sample, workers, wall, user, sys_, peak = sys.argv[1], int(sys.argv[2]), *map(float, sys.argv[3:7])
gzipped, plain = int(sys.argv[7]), int(sys.argv[8])
print(f"{sample:<13} {workers} worker(s): {wall:.2f}s wall, {gzipped / wall / 1e6:.1f} MB/s of gzip, "
      f"{plain / wall / 1e6:.1f} MB/s uncompressed ({plain / wall / 1e6 / workers:.1f} per core), "
      f"user {user:.2f}s sys {sys_:.2f}s, peak {peak / 1024:.0f} MiB")
PY
    done
done
