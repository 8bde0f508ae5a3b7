"""How good are the near-duplicate pairs of the real crawl sample?

    .venv/bin/python scripts/crawl_sample_quality.py FINGERPRINTS PAIRS

Reads the documents of data-samples/crawl/ again (with warcio, the HTML
pages' <pre> text), and compares `match --self` pairs made from FINGERPRINTS
with word 3-shingle Jaccard similarity: pairs below 0.5 are false positives,
and pairs of documents at 0.9 or more that `match` missed are misses.
"""
import html as h
import re
import sys

import duckdb
from warcio.archiveiterator import ArchiveIterator

texts = {}
for fn in ["data-samples/crawl/pages.warc.gz", "data-samples/crawl/text.wet.gz"]:
    with open(fn, "rb") as f:
        for r in ArchiveIterator(f):
            if r.rec_type in ("response", "conversion"):
                t = r.content_stream().read().decode("utf-8", "replace")
                if r.rec_type == "response":
                    m = re.search(r"<pre>(.*)</pre>", t, re.S)
                    t = h.unescape(m.group(1)) if m else t
                texts[r.rec_headers.get_header("WARC-Target-URI")] = t


def shingles(t):
    w = re.findall(r"\w+", t.lower())
    return set(zip(w, w[1:], w[2:]))


def jaccard(a, b):
    return len(a & b) / max(1, len(a | b))


fp, pairs = sys.argv[1], sys.argv[2]
rows = duckdb.sql(
    f"SELECT q.url, c.url FROM '{pairs}/*.parquet' p"
    f" JOIN '{fp}/*.parquet' q ON q.id = p.query_id JOIN '{fp}/*.parquet' c ON c.id = p.corpus_id"
).fetchall()
S = {u: shingles(t) for u, t in texts.items()}
false_positives = sum(1 for a, b in rows if jaccard(S[a], S[b]) < 0.5)
urls = sorted(texts)
truth = {
    frozenset((a, b))
    for i, a in enumerate(urls)
    for b in urls[i + 1 :]
    if jaccard(S[a], S[b]) >= 0.9
}
found = {frozenset(r) for r in rows if r[0] != r[1]}
print(f"{len(rows)} pairs, {false_positives} with Jaccard < 0.5; "
      f"{len(truth & found)} of {len(truth)} pairs with Jaccard >= 0.9 found")
