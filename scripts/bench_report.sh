#!/usr/bin/env bash
# Benchmark of `neardup report` on a synthetic night of 10M pages and 50M
# pairs, written by DuckDB into bench-data/report-night/ (kept out of git):
#
#   scripts/bench_report.sh            three runs; each line: wall time, peak RSS
#
# - fingerprints/: 10M pages, ids scattered over the i64 range as URL hashes
#   are, URLs on 20,000 hosts;
# - pairs/: 50M `--self` pairs, by query id as `match` writes them (each
#   end scattered on its own, so a query id is not always the lesser), distances
#   0 to 3: the pages in blocks of 16, 80 of each block's 120 pairs, and
#   every 100th block paired with the next, which chains some blocks into
#   larger clusters;
# - clusters/: `neardup cluster` of those pairs.
set -euo pipefail
cd "$(dirname "$0")/.."
night=bench-data/report-night
cargo build --release --quiet
if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r scripts/requirements-bench.txt

if [ ! -f "$night/clusters/_SUCCESS" ]; then
    rm -rf "$night"
    mkdir -p "$night/fingerprints" "$night/pairs"
    .venv/bin/python - "$night" <<'PY'
import json, sys
import duckdb
night = sys.argv[1]
db = duckdb.connect()
db.sql("SET threads = 2")
scatter = lambda x: f"(({x})::HUGEINT * 2862933555777941757 % 9223372036854775783)::BIGINT"
db.sql(f"""COPY (SELECT {scatter('x')} AS id, 'https://site' || (x % 20000) || '.example/p/' || x AS url,
                        (hash(x) >> 1)::BIGINT AS simhash
                 FROM range(10000000) t(x))
           TO '{night}/fingerprints/part-00000.parquet' (FORMAT parquet)""")
db.sql(f"""COPY (WITH inside AS (
                    SELECT b * 16 + i AS a, b * 16 + j AS c FROM range(625000) r(b), range(16) s(i), range(16) u(j)
                    WHERE i < j AND hash(b * 256 + i * 16 + j) % 3 != 0),
                 across AS (SELECT b * 16 AS a, (b + 1) * 16 AS c FROM range(624999) r(b) WHERE b % 100 = 0),
                 pairs AS (SELECT * FROM inside UNION ALL SELECT * FROM across)
                 SELECT {scatter('a')} AS query_id, {scatter('c')} AS corpus_id,
                        (hash(a) >> 1)::BIGINT AS query_simhash, (hash(c) >> 1)::BIGINT AS corpus_simhash,
                        (hash(a + c) % 4)::TINYINT AS distance, true AS self_pair
                 FROM pairs ORDER BY query_id, corpus_id)
           TO '{night}/pairs' (FORMAT parquet, PER_THREAD_OUTPUT true)""")
pairs = db.sql(f"SELECT count(*) FROM '{night}/pairs/*.parquet'").fetchone()[0]
json.dump({"scheme": "synthetic", "documents": 10_000_000}, open(f"{night}/fingerprints/_summary.json", "w"))
json.dump({"queries": {"rows": 10_000_000}, "pairs": pairs, "k": 3, "self_join": True},
          open(f"{night}/pairs/_summary.json", "w"))
print(f"{pairs} pairs", file=sys.stderr)
PY
    touch "$night/fingerprints/_SUCCESS" "$night/pairs/_SUCCESS"
    target/release/neardup cluster --pairs "$night/pairs" --out "$night/clusters" >&2
fi

pairs=$(.venv/bin/python -c "import json, sys; print(json.load(open(sys.argv[1]))[\"pairs\"])" "$night/pairs/_summary.json")
for run in 1 2 3; do
    /usr/bin/time -f "%e %M" -o bench-data/report-time target/release/neardup report "$night" \
        --out bench-data/report.html > /dev/null
    read -r wall kib < bench-data/report-time
    echo "report, 10M pages and $pairs pairs: ${wall}s wall, peak RSS $((kib / 1024)) MiB"
done
