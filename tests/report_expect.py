"""What `neardup report` should show of a night, computed by DuckDB from the
night's Parquet outputs alone (tests/it/report.rs compares it with the page).

    report_expect.py NIGHT_DIR [PAGES]
                                 prints JSON: distances, wide_distances (for verified
                                 pairs; else empty), cluster_sizes,
                                 largest (size, id, dropped), representative_urls (id, URL,
                                 where from), drops_without_keep_url,
                                 hosts (host, pages, dropped), kept_by (key, drops)
"""
import json
import sys

import duckdb

night = sys.argv[1]
pairs = f"'{night}/pairs/*.parquet'"
clusters = f"'{night}/clusters/clusters/*.parquet'"
drops = f"'{night}/clusters/drop/*.parquet'"
# The night's pages: its fingerprints, else the files match read as B.
fingerprints = f"'{sys.argv[2] if len(sys.argv) > 2 else night + '/fingerprints/*.parquet'}'"
db = duckdb.connect()

distances = dict(db.sql(f"select distance, count(*) from {pairs} group by 1").fetchall())
pair_columns = [c[0] for c in db.sql(f"describe select * from {pairs}").fetchall()]
wide = {}
if "wide_distance" in pair_columns:
    wide = dict(db.sql(f"select wide_distance, count(*) from {pairs} group by 1").fetchall())
sizes = db.sql(
    f"select cluster_size, count(distinct cluster_id) from {clusters} group by 1 order by 1"
).fetchall()
drop_columns = [c[0] for c in db.sql(f"describe select * from {drops}").fetchall()]
# drop/ has URLs when cluster had a table of them.
keep_url = "keep_url" if "keep_url" in drop_columns else "null::varchar"
# A page fetched twice counts once, under its first URL.
pages = f"(select id, first(url) as url from {fingerprints} group by id)"
# A representative's URL: the night's fingerprints', else drop/'s keep_url
# of a page dropped in its favour (a corpus page's only URL).
largest = db.sql(
    f"""with c as (select distinct cluster_id, cluster_size from {clusters}
                   order by cluster_size desc, cluster_id desc limit 20)
        select c.cluster_size, c.cluster_id,
               (select count(*) from {drops} d join {clusters} m on d.id = m.id
                where m.cluster_id = c.cluster_id),
               (select any_value(url) from {fingerprints} f where f.id = c.cluster_id),
               (select any_value({keep_url}) from {drops} d where d.keep_id = c.cluster_id)
        from c order by c.cluster_size desc, c.cluster_id desc"""
).fetchall()
drops_without_keep_url = db.sql(f"select count(*) - count({keep_url}) from {drops}").fetchone()[0]
hosts = db.sql(
    f"""with f as (select id, lower(regexp_extract(url, '^[a-zA-Z]+://(?:[^@/]*@)?([^/:?#]+)', 1)) as host
                   from {pages})
        select host, count(*) as pages, count(d.id) as dropped
        from f left join {drops} d on d.id = f.id
        group by host having count(d.id) > 0
        order by dropped desc, host limit 30"""
).fetchall()
kept_by = db.sql(f"select kept_by, count(*) from {drops} group by 1 order by 2 desc, 1").fetchall()
print(json.dumps({
    "distances": [distances.get(d, 0) for d in range(max(distances, default=0) + 1)],
    "wide_distances": [wide.get(d, 0) for d in range(max(wide, default=-1) + 1)],
    "cluster_sizes": [[s, n] for s, n in sizes],
    "largest": [[s, c, d] for s, c, d, _, _ in largest],
    "representative_urls": [[c, f or k, "fingerprints" if f else "drops" if k else None]
                            for _, c, _, f, k in largest],
    "drops_without_keep_url": drops_without_keep_url,
    "hosts": [[h, p, d] for h, p, d in hosts],
    "kept_by": [[k, n] for k, n in kept_by],
}))
