"""The same B x F join in DuckDB SQL, for comparison with `neardup match`.

Usage: bench_duckdb.py QUERIES_GLOB CORPUS_FILES K THREADS [CORPUS_ROWS]
(CORPUS_FILES comma-separated; CORPUS_ROWS: only the first rows of F, for a
large k, where the join compares far more pairs)
Uses the pigeonhole idea in plain SQL: with k + 1 blocks, a pair within k
bits agrees exactly on at least one block, so the union of k + 1 equi-joins on
one block, filtered by bit_count(xor) <= k, is the exact answer.
"""
import json
import sys
import time

import duckdb

queries, corpus_files, k, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
limit = f"LIMIT {int(sys.argv[5])}" if len(sys.argv) > 5 else ""
corpus = "[" + ", ".join(f"'{f}'" for f in corpus_files.split(",")) + "]"
con = duckdb.connect()
con.execute(f"SET threads = {threads}")
blocks = k + 1
width = 64 // blocks
joins = []
for b in range(blocks):
    shift = 64 - (b + 1) * width if b < blocks - 1 else 0
    bits = width if b < blocks - 1 else 64 - (blocks - 1) * width
    mask = (1 << bits) - 1
    key = lambda col: f"(({col} >> {shift}) & {mask})"
    joins.append(f"""
        SELECT q.id AS query_id, c.id AS corpus_id, q.simhash AS qs, c.simhash AS cs
        FROM q JOIN c ON {key('q.simhash')} = {key('c.simhash')}
        WHERE bit_count(xor(q.simhash, c.simhash)) <= {k} AND q.id <> c.id""")
sql = f"""
    WITH q AS (SELECT id, simhash FROM read_parquet('{queries}')),
         c AS (SELECT id, simhash FROM read_parquet({corpus}) {limit})
    SELECT count(*) FROM (SELECT DISTINCT * FROM ({' UNION ALL '.join(joins)}))"""
rows = con.execute(f"SELECT count(*) FROM (SELECT 1 FROM read_parquet({corpus}) {limit})").fetchone()[0]
started = time.time()
pairs = con.execute(sql).fetchone()[0]
seconds = time.time() - started
print(json.dumps({"duckdb": duckdb.__version__, "corpus_rows": rows, "pairs": pairs, "seconds": round(seconds, 2),
                  "rows_per_second_per_core": round(rows / seconds / threads)}))
