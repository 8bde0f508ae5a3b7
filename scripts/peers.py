"""Peer schemes for the quality evaluations (scripts/eval_*.py): the simhash
a crawl engineer would otherwise reach for, run as its own package runs it,
on the same pages and scored by the same truth as neardup.

- `simhash` (PyPI, 2.1.2), `Simhash(text)` with its defaults: the text
  lowercased, only its word characters kept, character 4-grams weighted by
  their count, each hashed by MD5; 64 bits. This is "the usual Python
  simhash default" of issue 13.
- For HTML, the page's text comes from resiliparse (PyPI, 2.0.1):
  `extract_plain_text(html)` (all text) or, with `main_content=True`, its
  main-content extraction.

Pairs within k are found by `neardup match --self` on the peer's
fingerprints (exact: see the oracle tests), so only the fingerprints differ.
"""

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from simhash import Simhash

import scoring

PEERS = {
    "simhash": "simhash 2.1.2 defaults (char 4-grams, counts, MD5)",
    "resiliparse-all+simhash": "resiliparse's text of the whole page, then simhash 2.1.2 defaults",
    "resiliparse-main+simhash": "resiliparse's main content, then simhash 2.1.2 defaults",
}


# simhash 2.1.2 multiplies a feature's bits (uint8) by its count: under
# numpy 2 (NEP 50) a count above 255 overflows and raises (its issue #74,
# open). Under numpy 1, which it was written for, the product was int64:
# its bits are given as int64 here, so that it computes what it computed.
Simhash._bitarray_from_bytes = staticmethod(
    lambda digest: np.unpackbits(np.frombuffer(digest, dtype=">B")).astype(np.int64))


def simhash_default(text):
    """The fingerprint `simhash` gives `text` with its defaults (a u64)."""
    return Simhash(text).value


def html_text(html, main_content):
    """A page's text as resiliparse extracts it."""
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(html, main_content=main_content)


def pairs_within_k(fingerprints, k, neardup, work, name):
    """The pairs `(a, b)`, a < b, of keys of `fingerprints` (int -> u64)
    whose fingerprints differ in at most k bits."""
    shard = os.path.join(work, f"peer-{name}")
    pairs = os.path.join(work, f"peer-{name}-pairs")
    os.makedirs(shard, exist_ok=True)
    # INT64 holds the u64's bit pattern, as neardup stores fingerprints.
    table = pa.table({
        "id": pa.array(list(fingerprints), pa.int64()),
        "simhash": pa.array([v - (1 << 64) if v >= 1 << 63 else v
                             for v in fingerprints.values()], pa.int64()),
    })
    pq.write_table(table, os.path.join(shard, "part-00000.parquet"))
    return scoring.self_pairs(neardup, shard, k, pairs, "--workers", "2")
