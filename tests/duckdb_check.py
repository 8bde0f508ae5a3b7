"""Reads a neardup match output with the real DuckDB and reports what it sees.

Usage: duckdb_check.py OUT_DIR QUERIES_GLOB CORPUS_GLOB
Prints one JSON object: column types, row count, sort violations, pairs whose
distance disagrees with the fingerprints, and pairs that join back to the shards;
for verified pairs (`match --verify`), the shards' types too and the pairs whose
`wide_distance` disagrees with the fingerprints and the sketches (BLOB, cast to BIT).
"""
import json
import sys

import duckdb

out, queries, corpus = sys.argv[1:4]
con = duckdb.connect()
parts = f"{out}/part-*.parquet"
types = {
    name: kind
    for name, kind, *_ in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{parts}')").fetchall()
}
rows = con.execute(f"SELECT count(*) FROM read_parquet('{parts}')").fetchone()[0]
# Part order then row order must be strictly increasing in (query_id, corpus_id).
unsorted = con.execute(f"""
    WITH t AS (
        SELECT query_id, corpus_id,
               lag(query_id) OVER w AS pq, lag(corpus_id) OVER w AS pc
        FROM read_parquet('{parts}', filename = true, file_row_number = true)
        WINDOW w AS (ORDER BY filename, file_row_number))
    SELECT count(*) FROM t WHERE pq IS NOT NULL AND (query_id, corpus_id) <= (pq, pc)
""").fetchone()[0]
wrong_distance = con.execute(f"""
    SELECT count(*) FROM read_parquet('{parts}')
    WHERE bit_count(xor(query_simhash, corpus_simhash)) <> distance
""").fetchone()[0]
joined = con.execute(f"""
    SELECT count(*) FROM read_parquet('{parts}') p
    JOIN read_parquet('{queries}') q ON q.id = p.query_id AND q.simhash = p.query_simhash
    JOIN (SELECT id, simhash FROM read_parquet('{corpus}')
          UNION SELECT id, simhash FROM read_parquet('{queries}')) c
      ON c.id = p.corpus_id AND c.simhash = p.corpus_simhash
""").fetchone()[0]
self_pairs = con.execute(f"SELECT count(*) FROM read_parquet('{parts}') WHERE self_pair").fetchone()[0]
verified = {}
if "wide_distance" in types:
    verified["shard_types"] = {
        name: kind
        for name, kind, *_ in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{queries}')").fetchall()
    }
    verified["wrong_wide"] = con.execute(f"""
        SELECT count(*) FROM read_parquet('{parts}') p
        JOIN read_parquet('{queries}') q ON q.id = p.query_id AND q.simhash = p.query_simhash
        JOIN (SELECT id, simhash, sketch FROM read_parquet('{corpus}')
              UNION SELECT id, simhash, sketch FROM read_parquet('{queries}')) c
          ON c.id = p.corpus_id AND c.simhash = p.corpus_simhash
        WHERE bit_count(xor(p.query_simhash, p.corpus_simhash))
              + bit_count(xor(q.sketch::BIT, c.sketch::BIT)) <> p.wide_distance
    """).fetchone()[0]
print(json.dumps({
    **verified,
    "self_pairs": self_pairs,
    "duckdb": duckdb.__version__,
    "types": types,
    "rows": rows,
    "unsorted": unsorted,
    "wrong_distance": wrong_distance,
    "joined": joined,
}))
