#!/usr/bin/env bash
# Benchmark of `neardup cluster` on pair graphs written by DuckDB into
# bench-data/ (kept out of git), clustered with --corpus-wins on every core:
#
#   scripts/bench_cluster.sh [SHAPE...]      SHAPE: small hashed night chain star clique onegroup
#                                            giant giant-sorted (default: all)
#   PARTS=1 scripts/bench_cluster.sh         output parts (default: one per core)
#   PAUSE=5 scripts/bench_cluster.sh         seconds idle before each run (default 0)
#   PROCESSES=2 scripts/bench_cluster.sh     a timely cluster of that many processes on
#                                            loopback ports, sharing the cores (time,
#                                            RSS and CPU are process 0's; a second line
#                                            gives every process's peak and their sum)
#   PAGES=urls scripts/bench_cluster.sh      each run again with --pages, a pages table of
#                                            10M rows (DuckDB: id, fetch_time, url,
#                                            canonical_url, n_chars) and the default keys,
#                                            so drop/ gets url and keep_url too
#   PAGES=keys scripts/bench_cluster.sh      the same with a table without url (id,
#                                            fetch_time, n_chars) and keys corpus,earliest,longest
#   IN_GRAPH=30 PAGES=urls scripts/bench_cluster.sh   with only 30% of the table's pages in a
#                                            pair (a night's table holds every page it fetched,
#                                            most of them duplicating none; default 100)
#
# - small:  10M pairs in small clusters (blocks of 5 ids), 1% of pairs joining
#           random pages, which chains blocks into larger components;
# - hashed: the same graph with its ids scattered over the i64 range, as page
#           ids (hashes of URLs) are: no two pages of a cluster are near in id
#           order, so every per-page array is read at random;
# - night:  the hashed graph in the order `match` writes pairs (by query id):
#           a cluster's pairs are in different row groups, read by
#           different workers, as a real night's pairs are (the workers of
#           a process share one union-find, so this costs what `hashed`
#           does; with a union-find per worker it cost twice as much);
# - chain:  one 10M-page chain (ids scattered, so no locality helps);
# - star:   1M leaves paired with one page;
# - clique: 2M pairs in cliques of 16, 64 and 256 pages (a third each);
# - onegroup: the hashed graph rewritten by pyarrow as one row group of 10M
#           pairs (snappy), as Spark's 128 MB row groups or a pyarrow
#           `write_table` with a large `row_group_size` hold a night's pairs:
#           cut into pieces so that every worker reads.
# - giant:  a crawl-like graph in random order, as a Spark or DuckDB join
#           writes pairs: 13.7M pages with hashed ids, a giant component
#           (6M random pairs among 5.2M ids, 3.6M of them paired), a
#           3M-page chain, 2,000 templated sites of 50 pages (each a
#           clique), and 7M pages in triples: about 16.1M pairs, written by
#           pyarrow in 1M-row row groups;
# - giant-sorted: the same pairs sorted by query_id.
# A third of the pairs are `--self` pairs; distances are 0 to 3. With PAGES,
# the pages table holds 10M of a shape's ids (small: 0..10M; the others
# scattered as their ids are; clique's ids lie beyond 0..10M, so its table
# names none of its pages), and a line after each pair of runs
# gives the run with --pages against the one without: its pairs/s, and its
# extra peak memory per page of the pair graph.
# Each shape runs with both drop policies; the line gives time, pairs/s,
# peak RSS, CPU time and minor page faults (/usr/bin/time). On a VM whose host backs memory
# lazily, system time (first touches of memory) depends on what ran just
# before: memory a previous run freed seconds ago is still backed, memory
# idle for a few seconds is handed back to the host (free page reporting)
# and costs a host fault to touch again. PAUSE=5 makes every run start cold.
# Before and after the runs a line gives that cost and the CPU's speed
# (scripts/machine_state.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
shapes=("$@")
if [ ${#shapes[@]} -eq 0 ]; then shapes=(small hashed night chain star clique onegroup giant giant-sorted); fi
cores=$(nproc)
parts=${PARTS:-$cores}
processes=${PROCESSES:-1}
workers=$(( cores / processes > 0 ? cores / processes : 1 ))
hosts=bench-data/bench-cluster-hosts
mkdir -p bench-data
for i in $(seq 0 $((processes - 1))); do echo "127.0.0.1:$((4700 + i))"; done > "$hosts"

cargo build --release --quiet
if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r scripts/requirements-bench.txt

# A bijection of 0..p-1 (p prime): scatters consecutive ids over the i64 range.
scatter="((x::HUGEINT * 2862933555777941757) % 9223372036854775783)::BIGINT"
small_q="(e // 4) * 5 + (hash(e) % 5)::BIGINT"
small_c="CASE WHEN e % 100 = 0 THEN (hash(e * 3) % 12500000)::BIGINT
              ELSE (e // 4) * 5 + (hash(e + 7) % 5)::BIGINT END"
declare -A sql=(
  [small]="SELECT $small_q AS q, $small_c AS c, e FROM range(10000000) t(e)"
  [hashed]="SELECT ${scatter//x/($small_q)} AS q, ${scatter//x/($small_c)} AS c, e
            FROM range(10000000) t(e)"
  [night]="SELECT ${scatter//x/($small_q)} AS q, ${scatter//x/($small_c)} AS c, e
           FROM range(10000000) t(e) ORDER BY q, c"
  [chain]="SELECT ${scatter//x/e} AS q, ${scatter//x/(e + 1)} AS c, e FROM range(9999999) t(e)"
  [star]="SELECT ${scatter//x/(e + 1)} AS q, 0::BIGINT AS c, e FROM range(1000000) t(e)"
  [clique]="WITH sizes AS (SELECT * FROM (VALUES (16, 5550), (64, 330), (256, 20)) v(s, n)),
                 cliques AS (SELECT s, s * 100000 + i AS k FROM sizes, range(n) r(i)),
                 pairs AS (SELECT k * 1000 + a AS q, k * 1000 + b AS c
                           FROM cliques, range(s) x(a), range(s) y(b) WHERE a > b)
            SELECT q, c, row_number() OVER () AS e FROM pairs"
)

pages_table() {  # pages_table plain|scattered -> the path of the shape's pages table
    local ids=$1 in_graph=${IN_GRAPH:-100} path="bench-data/pages-$PAGES-$1"
    if [ "$PAGES" = urls ]; then path="bench-data/pages-urls-canonical-$1"; fi
    if [ "$in_graph" != 100 ]; then path="$path-$in_graph"; fi
    path="$path.parquet"
    if [ ! -f "$path" ]; then
        local id="e" url=""
        if [ "$ids" = scattered ]; then id="${scatter//x/e}"; fi
        # A shape's ids are never negative: -1 - id is no page of it.
        if [ "$in_graph" != 100 ]; then
            id="CASE WHEN hash(e * 23) % 100 < $in_graph THEN $id ELSE -1 - $id END"
        fi
        if [ "$PAGES" = urls ]; then
            url="CASE hash(e) % 4 WHEN 0 THEN 'http://' ELSE 'https://' END || 'site'
                 || (hash(e * 3) % 5000)::VARCHAR || '.example.com/' || repeat('a/', (hash(e * 11) % 4)::INT)
                 || e::VARCHAR || CASE WHEN hash(e * 13) % 5 = 0 THEN '?utm_source=feed' ELSE '' END"
            # As fingerprint shards give it: none (text, or no link) for
            # 40%; the page itself for 50%, verbatim or with its scheme
            # and host in capitals; another page for 10%.
            url="$url AS url, CASE hash(e * 19) % 10
                 WHEN 0 THEN NULL WHEN 1 THEN NULL WHEN 2 THEN NULL WHEN 3 THEN NULL
                 WHEN 8 THEN replace(replace($url, 'https://site', 'HTTPS://SITE'), 'http://site', 'HTTP://SITE')
                 WHEN 9 THEN 'https://site0.example.com/' || (e + 1)::VARCHAR
                 ELSE $url END AS canonical_url,"
        fi
        .venv/bin/python - "$path" "SELECT $id AS id,
              TIMESTAMP '2026-11-30' + to_microseconds((hash(e * 7) % 86400000000)::BIGINT) AS fetch_time,
              $url (hash(e * 17) % 20000)::INTEGER AS n_chars
            FROM range(10000000) t(e)" <<'PY'
import sys, duckdb
duckdb.connect().execute(f"COPY ({sys.argv[2]}) TO '{sys.argv[1]}' (FORMAT parquet, ROW_GROUP_SIZE 1048576)")
PY
    fi
    echo "$path"
}

# shellcheck source=scripts/machine_state.sh
source scripts/machine_state.sh
machine_state before

for shape in "${shapes[@]}"; do
    data=bench-data/cluster-$shape
    if [ "$shape" = onegroup ] && [ ! -f "$data/part-00000.parquet" ]; then
        if [ ! -f bench-data/cluster-hashed/part-00000.parquet ]; then
            echo "onegroup is made from hashed: run scripts/bench_cluster.sh hashed first" >&2
            exit 1
        fi
        mkdir -p "$data"
        .venv/bin/python - bench-data/cluster-hashed "$data/part-00000.parquet" <<'PY'
import sys
import pyarrow.parquet as pq
table = pq.read_table(sys.argv[1])
pq.write_table(table, sys.argv[2], row_group_size=table.num_rows, compression="snappy")
PY
    fi
    if [[ $shape == giant* ]] && [ ! -f "$data/part-00000.parquet" ]; then
        mkdir -p "$data"
        order=$([ "$shape" = giant ] && echo "hash(e * 31)" || echo "query_id, corpus_id")
        .venv/bin/python - "$data/part-00000.parquet" "$order" "$scatter" <<'PY'
import sys
import duckdb
import pyarrow.parquet as pq
path, order, scatter = sys.argv[1:]
ids = lambda x: scatter.replace("x", f"({x})")
# Pages by range: giant 0..5.2M, chain 5.2M..8.2M, sites 8.2M..8.3M, small 8.3M..15.3M.
pairs = f'''
  SELECT (hash(e) % 5200000)::BIGINT AS a, (hash(e + 99991) % 5200000)::BIGINT AS b FROM range(6000000) t(e)
  UNION ALL SELECT 5200000 + e, 5200000 + e + 1 FROM range(2999999) t(e)
  UNION ALL SELECT 8200000 + s * 50 + i, 8200000 + s * 50 + j FROM range(2000) r(s), range(50) x(i), range(50) y(j) WHERE i < j
  UNION ALL SELECT 8300000 + e, 8300000 + e + 1 FROM range(7000000) t(e) WHERE e % 3 != 2
'''
table = duckdb.connect().execute(f'''
  SELECT {ids("a")} AS query_id, {ids("b")} AS corpus_id, (hash(e * 5) % 4)::TINYINT AS distance,
         e % 3 = 0 AS self_pair
  FROM (SELECT a, b, row_number() OVER () AS e FROM ({pairs}) WHERE a != b)
  ORDER BY {order}
''').to_arrow_table()
pq.write_table(table, path, row_group_size=1 << 20)
PY
    fi
    if [ ! -f "$data/part-00000.parquet" ]; then
        mkdir -p "$data"
        .venv/bin/python - "$data/part-00000.parquet" "${sql[$shape]}" <<'PY'
import sys, duckdb
path, graph = sys.argv[1], sys.argv[2]
duckdb.connect().execute(f"""
COPY (
  SELECT q AS query_id, c AS corpus_id, (hash(e * 5) % 4)::TINYINT AS distance,
         e % 3 = 0 AS self_pair
  FROM ({graph})
) TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE 1048576)
""")
PY
    fi
    variants=(plain)
    if [ -n "${PAGES:-}" ]; then
        case $shape in small|clique) ids=plain ;; *) ids=scattered ;; esac
        table=$(pages_table "$ids")
        variants=(plain pages)
    fi
    for policy in direct component; do
      for variant in "${variants[@]}"; do
        out=bench-data/clusters-$shape
        sleep "${PAUSE:-0}"
        run=(target/release/neardup cluster --pairs "$data" --out "$out"
             --drop-policy $policy --workers "$workers" --parts "$parts" --overwrite)
        case $variant in
            plain) run+=(--corpus-wins) ;;
            pages) run+=(--pages "$table")
                   if [ "$PAGES" = keys ]; then run+=(--keep-by corpus,earliest,longest); fi ;;
        esac
        peers=()
        if [ "$processes" -gt 1 ]; then
            run+=(--hostfile "$hosts")
            for i in $(seq 1 $((processes - 1))); do
                /usr/bin/time -f "%M" -o "bench-data/cluster-peak-$i.txt" \
                    "${run[@]}" --process "$i" > /dev/null 2>&1 &
                peers+=($!)
            done
            run+=(--process 0)
        fi
        /usr/bin/time -v "${run[@]}" > /dev/null 2> bench-data/cluster-time.txt
        for peer in "${peers[@]}"; do wait "$peer"; done
        # Every process's peak RSS in MiB, process 0's first, and their sum.
        peaks=$(awk '/Maximum resident set size/ {printf "%d", $6 / 1024}' bench-data/cluster-time.txt)
        for i in $(seq 1 $((processes - 1))); do
            peaks+=" $(awk '{printf "%d", $1 / 1024}' "bench-data/cluster-peak-$i.txt")"
        done
        peak_kib=$(awk '/Maximum resident set size/ {print $6}' bench-data/cluster-time.txt)
        wall=$(awk '/Elapsed \(wall clock\)/ {print $8}' bench-data/cluster-time.txt)
        cpu=$(awk '/User time/ {u=$4} /System time/ {s=$4} /Minor .* page faults/ {f=$NF}
                   END {print "user " u " s, sys " s " s, " f " minor faults"}' bench-data/cluster-time.txt)
        python3 - "$shape" "$policy" "$peak_kib" "$wall" "$out/_summary.json" "$cpu" "$variant" "$peaks" <<'PY'
import json, sys
shape, policy, peak_kib, wall, summary, cpu, variant, peaks = sys.argv[1:]
s = json.load(open(summary))
keys = ",".join(s["keep_by"]) + (" +urls" if s.get("drop_urls") else "")
print(f"{shape:6} {policy:9} {s['processes']}x{s['workers']} {s['pairs']:>10,} pairs {s['pages']:>10,} pages "
      f"{s['clusters']:>9,} clusters (largest {s['largest_cluster']:,}) {s['dropped']:>10,} dropped | "
      f"{s['seconds']:6.2f}s (wall {wall}) {s['pairs'] / s['seconds'] / 1e6:5.2f}M pairs/s "
      f"peak {int(peak_kib) / 1024:5.0f} MiB ({cpu}) [{keys}]")
if len(peaks.split()) > 1:
    mib = [int(p) for p in peaks.split()]
    print(f"{'':16} peak of each process: {' '.join(map(str, mib))} MiB, {sum(mib)} MiB in all")
if variant == "plain":
    json.dump({"peak_kib": int(peak_kib), "seconds": s["seconds"]}, open("bench-data/cluster-plain.json", "w"))
else:
    plain = json.load(open("bench-data/cluster-plain.json"))
    extra = (int(peak_kib) - plain["peak_kib"]) * 1024 / s["pages"]
    print(f"{'':16} --pages: {s['seconds'] / plain['seconds']:.2f}x the time, "
          f"{extra:+.1f} bytes of peak a page")
PY
      done
    done
done
machine_state after
