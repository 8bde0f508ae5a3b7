"""Reads a neardup match output with Spark and joins it back to the shards.

Not run in CI (it needs a Java runtime and `pip install pyspark`):
    python scripts/spark_check.py OUT_DIR QUERIES_DIR CORPUS_DIR
Prints the schema, the row count, and the number of pairs that join back to
both shards on (id, simhash); the last two numbers must be equal. For
verified pairs (`match --verify`), also the shards' schema and the pairs
whose `wide_distance` disagrees with their sketches (none may).
"""
import sys

from pyspark.sql import SparkSession

out, queries, corpus = sys.argv[1:4]
spark = SparkSession.builder.appName("neardup-check").master("local[2]").getOrCreate()
spark.read.parquet(out).createOrReplaceTempView("pairs")
spark.read.parquet(queries).createOrReplaceTempView("queries")
spark.read.parquet(corpus).createOrReplaceTempView("corpus")
spark.sql("SELECT * FROM pairs").printSchema()
rows = spark.sql("SELECT count(*) FROM pairs").first()[0]
joined = spark.sql("""
    SELECT count(*) FROM pairs p
    JOIN queries q ON q.id = p.query_id AND q.simhash = p.query_simhash
    JOIN (SELECT id, simhash FROM corpus UNION SELECT id, simhash FROM queries) c
      ON c.id = p.corpus_id AND c.simhash = p.corpus_simhash
    WHERE bit_count(p.query_simhash ^ p.corpus_simhash) = p.distance
""").first()[0]
print(f"rows={rows} joined={joined}")
wrong_wide = 0
if "wide_distance" in spark.table("pairs").columns:
    # Verified pairs: each wide distance again, from the shards' sketches
    # (BinaryType in Spark) and the pair's distance.
    spark.sql("SELECT * FROM queries").printSchema()
    sketched = spark.sql("""
        SELECT p.distance, p.wide_distance, q.sketch AS a, c.sketch AS b FROM pairs p
        JOIN queries q ON q.id = p.query_id AND q.simhash = p.query_simhash
        JOIN (SELECT id, simhash, sketch FROM corpus UNION ALL SELECT id, simhash, sketch FROM queries) c
          ON c.id = p.corpus_id AND c.simhash = p.corpus_simhash
    """).collect()
    wrong_wide = sum(
        r.distance + sum(bin(x ^ y).count("1") for x, y in zip(r.a, r.b)) != r.wide_distance
        for r in sketched)
    print(f"verified={len(sketched)} wrong_wide={wrong_wide}")
sys.exit(0 if rows == joined and wrong_wide == 0 else 1)
