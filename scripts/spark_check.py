"""Reads a neardup match output with Spark and joins it back to the shards.

Not run in CI (it needs a Java runtime and `pip install pyspark`):
    python scripts/spark_check.py OUT_DIR QUERIES_DIR CORPUS_DIR
Prints the schema, the row count, and the number of pairs that join back to
both shards on (id, simhash); the last two numbers must be equal.
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
sys.exit(0 if rows == joined else 1)
