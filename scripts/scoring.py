"""What the quality evaluations (scripts/eval_*.py, scripts/peers.py) share:
the pairs within k of a set of fingerprints, as `neardup match --self` finds
them, and recall and precision of several schemes' pairs by length bucket.

Recall: of the `positives` (pairs with J >= 0.9), the share a scheme found
within k; precision: of the pairs a scheme found, the share with J >= 0.8.
"""

import subprocess

import duckdb


def self_pairs(neardup, fingerprints, k, out, *flags):
    """The pairs `(a, b)`, a < b, of ids of the fingerprint shards in
    `fingerprints` within k bits of each other (`neardup match --self`,
    written to `out`)."""
    subprocess.run([neardup, "match", "--queries", fingerprints, "--self", "-k", str(k),
                    "--out", out, *flags], check=True, stdout=subprocess.DEVNULL)
    return set(duckdb.sql(
        f"SELECT least(query_id, corpus_id), greatest(query_id, corpus_id) "
        f"FROM read_parquet('{out}/*.parquet')").fetchall())


def score(found, positives, jaccard, bucket_of, buckets):
    """Prints and returns `{scheme: {bucket: figures}}` for `found`
    (`{scheme: set of pairs}`); `bucket_of(pair)` names a pair's bucket."""
    figures = {}
    width = max(map(len, found), default=0)
    for scheme, pairs in found.items():
        for b in [*buckets, "all"]:
            pos = [p for p in positives if b == "all" or bucket_of(p) == b]
            got = [p for p in pairs if b == "all" or bucket_of(p) == b]
            recall = sum(p in pairs for p in pos) / max(1, len(pos))
            precision = sum(jaccard(*p) >= 0.8 for p in got) / max(1, len(got))
            figures.setdefault(scheme, {})[b] = {"recall": recall, "positives": len(pos),
                                                 "precision": precision, "found": len(got)}
            print(f"{scheme:{width}} {b:9} recall {recall:6.3f} of {len(pos):5}  "
                  f"precision {precision:6.3f} of {len(got):5}")
    return figures


def neardup_first(figures):
    """The figures as the tests read them: neardup's at the top level, each
    peer's under `peer:NAME`."""
    return {**figures["neardup"],
            **{f"peer:{scheme}": v for scheme, v in figures.items() if scheme != "neardup"}}
