#!/usr/bin/env bash
# Two releases of a documentation site whose pages hold source listings
# with line numbers: pdoc's API pages of networkx 3.2.1 and 3.4.2 (each
# module's page shows its source, every line numbered by Pygments), for
# `scripts/eval_html.py --docs`. Needs Python 3 and PyPI; about 3 minutes.
#
#   scripts/make_pdoc_docs.sh DIR     -> DIR/networkx-3.2.1, DIR/networkx-3.4.2
#   .venv/bin/python scripts/eval_html.py --modes main --docs DIR/networkx-3.2.1,DIR/networkx-3.4.2
set -euo pipefail
out=${1:?usage: scripts/make_pdoc_docs.sh DIR}
mkdir -p "$out"
python3 -m venv "$out/venv"
"$out/venv/bin/pip" install --quiet --disable-pip-version-check pdoc==16.0.0
for version in 3.2.1 3.4.2; do
    "$out/venv/bin/pip" install --quiet --disable-pip-version-check --target "$out/src-$version" "networkx==$version"
    rm -rf "$out/networkx-$version"
    # The test modules import pytest; they are not documentation.
    PYTHONPATH="$out/src-$version" "$out/venv/bin/pdoc" -o "$out/networkx-$version" networkx \
        '!networkx.*tests*' '!networkx.conftest' 2> "$out/pdoc-$version.log"
    echo "$(find "$out/networkx-$version" -name '*.html' | wc -l) pages -> $out/networkx-$version"
done
