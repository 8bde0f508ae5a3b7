#!/usr/bin/env bash
# The test command: installs what the tests need (DuckDB's Python package, in
# .venv/), warcio (an independent WARC writer), xxhash (for the independent
# simhash) and PyYAML (to read jobs/kubernetes.yaml), checks formatting and
# lints, and runs every test in release mode.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r scripts/requirements-test.txt
export NEARDUP_TEST_PYTHON="$PWD/.venv/bin/python"

cargo fmt --all -- --check
cargo clippy --release --all-targets -- -D warnings
cargo test --release
