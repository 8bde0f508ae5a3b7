"""The simhash as src/fingerprint/simhash/mod.rs's module doc describes it, written independently in Python
(xxhash's xxh3-64, unicodedata's NFKC), for texts whose words are plain
runs of letters and digits (where UAX #29 and `\\w+` agree) and without Han
characters (no jieba here).

    simhash_reference.py < texts.json   prints [[simhash, n_features, n_chars, sketch], ...]

and the sketch (scheme v7) as src/fingerprint/simhash/sketch.rs's module doc
describes it: `sketch` is its three words.

texts.json: [{"text": ..., "features": "script" | "words" | "shingles:N" | "chars:N",
              "log_weights": bool, "keep_stop_words": bool, "headings": [...]}, ...]

`headings` (optional): texts whose features weigh four times, as
src/fingerprint/simhash/headings.rs's module doc describes (scheme v9).

`script` (the default features) on text without Han characters is
character 5-grams with log weights.
"""
import json
import math
import re
import sys
import unicodedata
from pathlib import Path

import xxhash

rust = (Path(__file__).resolve().parent.parent / "src" / "fingerprint" / "simhash" / "words.rs").read_text()
block = re.search(r"const STOP_WORDS: &\[&str\] = &\[(.*?)\];", rust, re.S).group(1)
STOP_WORDS = set(re.findall(r'"([^"]*)"', block))


def normalize(text):
    # Lower case one character at a time: no final-sigma rule.
    text = "".join(c.lower() for c in unicodedata.normalize("NFKC", text))
    return " ".join(text.split())


def grams_of(text, features, keep_stop_words):
    kind, _, n = features.partition(":")
    n = int(n or 1)
    if kind == "chars":
        grams = [text[i : i + n] for i in range(len(text) - n + 1)] if len(text) >= n else [text]
        grams = [g for g in grams if g]
    else:
        words = re.findall(r"\w+", text)
        if not keep_stop_words:
            words = [w for w in words if w not in STOP_WORDS]
        grams = [" ".join(words[i : i + n]) for i in range(len(words) - n + 1)]
    return grams


HEADING_SALT = 0xD1B54A32D192ED03


def simhash(text, features, log_weights, keep_stop_words, headings=()):
    text = normalize(text)
    if features == "script":
        features, log_weights = "chars:5", True
    grams = grams_of(text, features, keep_stop_words)
    sums = [0] * 64
    hashes = [xxhash.xxh3_64_intdigest(g.encode()) for g in grams]
    # Each distinct feature of the headings, counted c times in the text,
    # adds c more of each of three further hashes.
    heading_hashes = {xxhash.xxh3_64_intdigest(g.encode())
                      for h in headings for g in grams_of(normalize(h), features, keep_stop_words)}
    for h in sorted(heading_hashes):
        count = hashes.count(h)
        for i in range(1, 4):
            hashes += [mix((h + i * HEADING_SALT) & MASK)] * count
    if log_weights:
        # Each distinct feature once, weighted 1 + ln(count), in the order
        # of their hashes (the order decides the float sums' rounding).
        counts = {}
        for h in hashes:
            counts[h] = counts.get(h, 0) + 1
        weighted = [(h, 1.0 + math.log(counts[h])) for h in sorted(counts)]
    else:
        weighted = [(h, 1) for h in hashes]
    for h, w in weighted:
        for i in range(64):
            sums[i] += w if (h >> i) & 1 else -w
    fingerprint = sum(1 << i for i in range(64) if sums[i] > 0)
    return [fingerprint, len(grams), len(text), sketch(hashes, log_weights)]


MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def sketch(hashes, log_weights):
    # Each distinct feature's three words; the sums taken count by count,
    # in ascending count, each count's exact integer sum times its weight.
    counts = {}
    for h in hashes:
        counts[h] = counts.get(h, 0) + 1
    sums = [0.0] * 192
    for count in sorted(set(counts.values())):
        signed = [0] * 192
        for h in (h for h, c in counts.items() if c == count):
            for j in range(3):
                word = mix((h + (j + 1) * GOLDEN) & MASK)
                for i in range(64):
                    signed[64 * j + i] += 1 if (word >> i) & 1 else -1
        weight = 1.0 + math.log(count) if log_weights else float(count)
        for b in range(192):
            sums[b] += weight * signed[b]
    return [sum(1 << i for i in range(64) if sums[64 * j + i] > 0) for j in range(3)]


cases = json.load(sys.stdin)
print(json.dumps([simhash(c["text"], c["features"], c["log_weights"], c["keep_stop_words"],
                          c.get("headings", ())) for c in cases]))
