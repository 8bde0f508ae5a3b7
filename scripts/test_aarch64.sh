#!/usr/bin/env bash
# Lints neardup for aarch64-unknown-linux-gnu (Graviton, Ampere), cross-
# compiles its tests and runs under qemu-user every library test (the golden
# fingerprints and the probe kernel's oracles among them) and the match
# exactness tests (brute-force oracles at k = 0 to 7, byte identity across
# workers and kernels). Installs what it needs: the target's standard
# library (rustup), Debian's cross gcc and qemu-user (apt, as root).
#
#   scripts/test_aarch64.sh
#
# Tests that start the neardup binary or Python are left out: under
# qemu-user a child process would need binfmt_misc, which a container
# rarely has.
set -euo pipefail
cd "$(dirname "$0")/.."
target=aarch64-unknown-linux-gnu

need=()
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
command -v qemu-aarch64 >/dev/null || need+=(qemu-user)
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "scripts/test_aarch64.sh: needs ${need[*]} (Debian packages); run as root or install them" >&2
        exit 1
    fi
    apt-get install -y -qq "${need[@]}" >/dev/null \
        || { apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null; }
fi
rustup target add "$target" >/dev/null

export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"
export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc
export CXX_aarch64_unknown_linux_gnu=aarch64-linux-gnu-g++
export AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar

cargo clippy --profile test-release --target "$target" --all-targets -- -D warnings
cargo test --profile test-release --target "$target" --lib
cargo test --profile test-release --target "$target" --test it -- exactness::
