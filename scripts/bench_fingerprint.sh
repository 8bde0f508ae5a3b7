#!/usr/bin/env bash
# End-to-end throughput of `neardup fingerprint` on ONE large file, the case
# where a nightly job gets a single Common Crawl WARC (about 1 GB): the
# sample WARC (real HTML pages written by warcio) repeated into a gzipped
# WARC of COPIES copies in bench-data/ (kept out of git), fingerprinted
# with 1 worker and with every core. Each line gives wall time, the rate in
# MB/s of gzip and of uncompressed WARC, and CPU time.
#
#   scripts/bench_fingerprint.sh            COPIES=300 (110 MB gzipped, 310 MB of WARC)
#   COPIES=30 scripts/bench_fingerprint.sh
set -euo pipefail
cd "$(dirname "$0")/.."
copies=${COPIES:-300}
cores=$(nproc)
cargo build --release --quiet
dir=bench-data/one-big-warc-$copies
if [ ! -f "$dir/big.warc.gz" ]; then
    mkdir -p "$dir"
    for _ in $(seq "$copies"); do cat data-samples/crawl/pages.warc.gz; done > "$dir/big.warc.gz.tmp"
    mv "$dir/big.warc.gz.tmp" "$dir/big.warc.gz"
fi
gzipped=$(stat -c %s "$dir/big.warc.gz")
plain=$(( $(gzip -dc data-samples/crawl/pages.warc.gz | wc -c) * copies ))
for workers in 1 "$cores"; do
    /usr/bin/time -f "%e %U %S %M" -o bench-data/fingerprint-time.txt \
        target/release/neardup fingerprint --input "$dir" --out bench-data/one-big-warc-fp \
        --workers "$workers" --overwrite > /dev/null
    read -r wall user sys peak < bench-data/fingerprint-time.txt
    python3 - "$workers" "$wall" "$user" "$sys" "$peak" "$gzipped" "$plain" <<'PY'
import sys
workers, wall, user, sys_, peak = int(sys.argv[1]), *map(float, sys.argv[2:6])
gzipped, plain = int(sys.argv[6]), int(sys.argv[7])
print(f"{workers} worker(s): {wall:.2f}s wall, {gzipped / wall / 1e6:.1f} MB/s of gzip, "
      f"{plain / wall / 1e6:.1f} MB/s of WARC ({plain / wall / 1e6 / workers:.1f} per core), "
      f"user {user:.2f}s sys {sys_:.2f}s, peak {peak / 1024:.0f} MiB")
PY
done
