"""Builds a crawl of crawl-file size from real pages, for
scripts/bench_fingerprint.sh: every HTML page of a Rust toolchain's
documentation (`rustup component add rust-docs`; about 48,600 pages and
550 MB of HTML for 1.95: mdBook books, rustdoc API pages, redirect stubs),
written by warcio into

- OUT/warc/docs.warc.gz: one gzipped WARC of HTTP responses, about the size
  of a Common Crawl WARC once uncompressed;
- OUT/wet/docs.wet.gz: one gzipped WET of conversion records, the visible
  text of the same pages (Python's html.parser: all text outside script,
  style, noscript and template, as Common Crawl's WET files keep a page's
  whole text).

Every page is distinct, unlike a small sample repeated: nothing a run
learns from one page (a cache, a branch predictor) comes back on the next
copy, and the page sizes, markup and text are as the docs ship them.

    .venv/bin/python scripts/make_docs_crawl.py OUT [RELEASE]   (default: stable)
"""

import glob
import io
import os
import sys
from html.parser import HTMLParser
from multiprocessing import Pool

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

HIDDEN = {"script", "style", "noscript", "template"}


class VisibleText(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hidden = 0
        self.parts = []

    def handle_starttag(self, tag, attrs):
        if tag in HIDDEN:
            self.hidden += 1

    def handle_endtag(self, tag):
        if tag in HIDDEN and self.hidden:
            self.hidden -= 1

    def handle_data(self, data):
        if not self.hidden:
            self.parts.append(data)


def page(path):
    """The page's bytes and its visible text, one space between words."""
    raw = open(path, "rb").read()
    parser = VisibleText()
    parser.feed(raw.decode("utf-8", errors="replace"))
    parser.close()
    return raw, " ".join(" ".join(parser.parts).split())


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out, release = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "stable"
    home = os.path.expanduser("~/.rustup/toolchains")
    roots = glob.glob(f"{home}/{release}-*/share/doc/rust/html")
    if not roots:
        sys.exit(f"no {release} toolchain docs under {home} (rustup component add rust-docs)")
    root = roots[0]
    files = sorted(glob.glob(f"{root}/**/*.html", recursive=True))
    os.makedirs(f"{out}/warc", exist_ok=True)
    os.makedirs(f"{out}/wet", exist_ok=True)
    warc_path, wet_path = f"{out}/warc/docs.warc.gz", f"{out}/wet/docs.wet.gz"
    html_bytes = text_bytes = 0
    with open(warc_path + ".tmp", "wb") as warc_file, open(wet_path + ".tmp", "wb") as wet_file:
        warc, wet = WARCWriter(warc_file, gzip=True), WARCWriter(wet_file, gzip=True)
        headers = [("Content-Type", "text/html; charset=utf-8")]
        with Pool() as pool:
            for path, (raw, text) in zip(files, pool.imap(page, files, chunksize=64)):
                url = f"https://doc.rust-lang.example/{os.path.relpath(path, root)}"
                http = StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1")
                warc.write_record(warc.create_warc_record(
                    url, "response", payload=io.BytesIO(raw), http_headers=http))
                body = text.encode()
                wet.write_record(wet.create_warc_record(
                    url, "conversion", payload=io.BytesIO(body), warc_content_type="text/plain"))
                html_bytes += len(raw)
                text_bytes += len(body)
    os.replace(warc_path + ".tmp", warc_path)
    os.replace(wet_path + ".tmp", wet_path)
    print(f"{len(files)} pages from {root}: {html_bytes / 1e6:.0f} MB of HTML -> {warc_path}, "
          f"{text_bytes / 1e6:.0f} MB of text -> {wet_path}")


if __name__ == "__main__":
    main()
