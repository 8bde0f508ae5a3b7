"""Quality of `neardup fingerprint` on real plain text: the Debian copyright
files of the packages installed on this machine (/usr/share/doc/*/copyright),
full of licences quoted whole or in part, with each package's own names,
years and file lists.

Truth: word 5-shingle Jaccard over every pair of files (exact, all pairs).
Recall: of the pairs with J >= 0.9, the share within k = 3; precision: of
the pairs within k, the share with J >= 0.8. By length in words.

With --peers, the peer scheme of scripts/peers.py (`simhash` with its
defaults) is scored beside neardup on the same files
(`pip install -r scripts/requirements-eval.txt`).

    .venv/bin/python scripts/eval_text.py ["--flags=--features words"] [--peers] [--draws] [--json FILE]
"""

import argparse
import atexit
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile

import scoring


def shingles(words, n=5):
    if len(words) < n:
        return frozenset([hash(" ".join(words))]) if words else frozenset()
    return frozenset(hash(" ".join(words[i:i + n])) for i in range(len(words) - n + 1))


def bucket(words):
    return "<200" if words < 200 else ("200-1000" if words <= 1000 else ">1000")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--neardup", default="target/release/neardup")
    ap.add_argument("--flags", default="", help="more `fingerprint` flags")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--peers", action="store_true", help="also score scripts/peers.py's simhash")
    scoring.add_verify_args(ap)
    scoring.add_draws_arg(ap)
    args = ap.parse_args()
    scoring.refuse_draws_with(ap, args)
    work = tempfile.mkdtemp(prefix="neardup-eval-text-")
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    docs = {}
    with open(os.path.join(work, "docs.jsonl"), "w") as out:
        for i, path in enumerate(sorted(glob.glob("/usr/share/doc/*/copyright"))):
            text = open(path, encoding="utf-8", errors="replace").read()
            words = re.findall(r"\w+", text.lower())
            if not words:
                continue
            docs[i] = (path, shingles(words), len(words), text)
            out.write(json.dumps({"id": i, "url": path, "text": text}) + "\n")
    fp, pairs = os.path.join(work, "fp"), os.path.join(work, "pairs")
    subprocess.run([args.neardup, "fingerprint", "--input", os.path.join(work, "docs.jsonl"),
                    "--out", fp, *args.flags.split()], check=True, stdout=subprocess.DEVNULL)
    found = {"neardup": scoring.self_pairs(args.neardup, fp, scoring.match_k(args), pairs, args=args)}
    if args.draws:
        scoring.add_sketch_draws(found, "neardup", args.neardup, fp, args.k, work)
    if args.peers:
        import peers

        fingerprints = {i: peers.simhash_default(doc[3]) for i, doc in docs.items()}
        found["simhash"] = peers.pairs_within_k(fingerprints, args.k, args.neardup, work, "simhash")

    def jaccard(a, b):
        sa, sb = docs[a][1], docs[b][1]
        return len(sa & sb) / len(sa | sb)

    ids = sorted(docs)
    positives = set()
    for x, a in enumerate(ids):
        for b in ids[x + 1:]:
            na, nb = len(docs[a][1]), len(docs[b][1])
            if min(na, nb) >= 0.9 * max(na, nb) and jaccard(a, b) >= 0.9:
                positives.add((a, b))
    print(f"{len(docs)} files, {len(positives)} pairs with J >= 0.9, "
          f"{len(found['neardup'])} pairs within k={args.k} ({args.flags or 'defaults'})")
    if args.frontier:
        rows = scoring.frontier(found["neardup"], positives, jaccard)
        if args.json:
            json.dump(rows, open(args.json, "w"), indent=1)
        return
    figures = scoring.score(found, positives, jaccard,
                            lambda p: bucket(min(docs[p[0]][2], docs[p[1]][2])),
                            ["<200", "200-1000", ">1000"])
    if args.draws:
        scoring.add_spread(figures, "neardup")
    if args.json:
        json.dump(scoring.neardup_first(figures), open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
