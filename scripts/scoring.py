"""What the quality evaluations (scripts/eval_*.py, scripts/peers.py) share:
the pairs within k of a set of fingerprints, as `neardup match --self` finds
them, and recall and precision of several schemes' pairs by length bucket.

Recall: of the `positives` (pairs with J >= 0.9), the share a scheme found
within k; precision: of the pairs a scheme found, the share with J >= 0.8.

With `--draws`, k's figures are also given for three more draws of the
64-bit fingerprint: each 64-bit word of the sketch (more simhash bits of
the same features under other hash functions) taken as the fingerprint.
Where near-misses come in cliques (templated pages a few bits apart), k =
3's precision turns on which hash functions were drawn: one draw's figure
can be luck, the spread over four is not.

The quality mode (`match --verify`) is scored with `--verify T` (threshold
T at the given k; `--verify recommended`: the threshold `match` picks for
the shards), and its frontier over k and T with `--frontier`: one
match with every candidate within k = 8 and its wide distance, then each
(k, T) scored on those pairs.
"""

import os
import subprocess

import duckdb

# The frontier's grid.
FRONTIER_K = [3, 4, 5, 6, 7, 8]
FRONTIER_T = list(range(12, 41, 2))


def add_verify_args(ap):
    ap.add_argument("--verify", metavar="T",
                    help="score `match --verify --verify-threshold T` at --k "
                         "(`recommended`: `match --verify` with its own threshold)")
    ap.add_argument("--frontier", action="store_true",
                    help="score --verify over a grid of k and T (k = 8 pairs, scored by their distances)")


def add_draws_arg(ap):
    ap.add_argument("--draws", action="store_true",
                    help="also score the sketch's three 64-bit words as fingerprints, "
                         "and give the spread over the four draws")


def refuse_draws_with(ap, args, *others):
    """Ends with a usage error if `--draws` comes with `--verify`,
    `--frontier` or any of `others` (`(flag, value)`): draws score k alone."""
    given = [("--verify", args.verify), ("--frontier", args.frontier), *others]
    if args.draws and any(value for _, value in given):
        ap.error(f"--draws scores k alone: not with {', '.join(flag for flag, _ in given)}")


def match_k(args):
    """The k the match runs at: the frontier's largest under --frontier."""
    return max(FRONTIER_K) if args.frontier else args.k


def self_pairs(neardup, fingerprints, k, out, *flags, args=None):
    """The pairs `(a, b)`, a < b, of ids of the fingerprint shards in
    `fingerprints` within k bits of each other (`neardup match --self`,
    written to `out`), each with its `(distance, wide_distance)` (None
    unless verified: with `args` of `add_verify_args`, as they ask)."""
    verify = []
    if args is not None and args.frontier:
        verify = ["--verify", "--verify-threshold", "256"]
    elif args is not None and args.verify == "recommended":
        verify = ["--verify"]
    elif args is not None and args.verify is not None:
        verify = ["--verify", "--verify-threshold", args.verify]
    subprocess.run([neardup, "match", "--queries", fingerprints, "--self", "-k", str(k),
                    "--out", out, *verify, *flags], check=True, stdout=subprocess.DEVNULL)
    wide = "wide_distance" if verify else "NULL"
    rows = duckdb.sql(
        f"SELECT least(query_id, corpus_id), greatest(query_id, corpus_id), distance, {wide} "
        f"FROM read_parquet('{out}/*.parquet')").fetchall()
    return {(a, b): (d, w) for a, b, d, w in rows}


def add_sketch_draws(found, scheme, neardup, fingerprints, k, work, keyed=lambda rows: rows):
    """Adds to `found` the `self_pairs` of each 64-bit word of the shards'
    sketches taken as the fingerprint (independent draws of the same
    features' simhash), as `scheme draw 2` to `scheme draw 4`; `keyed`
    turns a draw's pairs of ids into the caller's pairs."""
    rows = duckdb.sql(f"SELECT id, sketch FROM read_parquet('{fingerprints}/*.parquet')").fetchall()
    if not rows or any(sketch is None for _, sketch in rows):
        raise SystemExit(f"--draws: the shards in {fingerprints} have no sketch (scheme v7 or later)")
    for word in range(len(rows[0][1]) // 8):
        shard = os.path.join(work, f"draw-{word + 2}")
        os.makedirs(shard)
        con = duckdb.connect()
        con.execute("CREATE TABLE t (id BIGINT, simhash BIGINT)")
        con.executemany("INSERT INTO t VALUES (?, ?)", [
            (i, int.from_bytes(sketch[8 * word:8 * word + 8], "little", signed=True))
            for i, sketch in rows])
        con.execute(f"COPY t TO '{shard}/part-0.parquet' (FORMAT parquet)")
        found[f"{scheme} draw {word + 2}"] = keyed(self_pairs(neardup, shard, k, shard + "-pairs"))


def add_spread(figures, scheme):
    """Prints the mean, least and most of recall and precision over all
    pages of `scheme` and its draws (in `figures`, as `score` returns
    them), and adds them as `scheme draws`."""
    draws = [s for s in figures if s == scheme or s.startswith(f"{scheme} draw ")]
    line, summary = [], {"draws": len(draws)}
    for measure in ["recall", "precision"]:
        values = [figures[d]["all"][measure] for d in draws]
        summary |= {measure: sum(values) / len(values),
                    f"{measure}_least": min(values), f"{measure}_most": max(values)}
        line.append(f"{measure} {summary[measure]:.3f} ({min(values):.3f}-{max(values):.3f})")
    print(f"{scheme}, {len(draws)} draws, all: " + ", ".join(line))
    figures[f"{scheme} draws"] = {"all": summary}


def frontier(found, positives, jaccard, label=""):
    """Prints and returns recall and precision of `found` (`{pair:
    (distance, wide_distance)}`, every pair within the grid's largest k)
    at each (k, T) of the grid."""
    good = {p: jaccard(*p) >= 0.8 for p in found}
    rows = {}
    print(f"\nfrontier {label}(k, T: recall / precision of found)")
    for k in FRONTIER_K:
        cells = []
        for t in FRONTIER_T:
            got = [p for p, (d, w) in found.items() if d <= k and w <= t]
            recall = sum(p in found and found[p][0] <= k and found[p][1] <= t
                         for p in positives) / max(1, len(positives))
            precision = sum(good[p] for p in got) / max(1, len(got))
            rows[f"k={k} T={t}"] = {"recall": recall, "precision": precision, "found": len(got)}
            cells.append(f"{t}:{recall:.3f}/{precision:.3f}")
        print(f"k={k} " + " ".join(cells))
    return rows


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
    peer's under `peer:NAME`, each further draw's under `draw N` and their
    spread under `draws`."""
    return {**figures["neardup"],
            **{scheme.removeprefix("neardup ") if scheme.startswith("neardup ")
               else f"peer:{scheme}": v for scheme, v in figures.items() if scheme != "neardup"}}
