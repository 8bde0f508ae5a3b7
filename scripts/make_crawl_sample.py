"""Builds data-samples/crawl/: a small crawl of real documents with real
near-duplicates, written by warcio (an independent WARC writer).

    .venv/bin/python scripts/make_crawl_sample.py [SEEDS_DIR]

- pages.warc.gz: HTTP responses with HTML pages made from Debian's
  /usr/share/doc/*/copyright files (150 of them, 1-20 KB). Packages built from
  one source share their copyright file, and most license texts repeat, so
  the sample has exact and near duplicates of every kind: same text under
  another URL, one license with other copyright lines, a longer variant.
  Each page gets a site header and footer and a script, as crawled pages do.
- text.wet.gz: conversion records (extracted text, as Common Crawl's WET
  files) of the next 150 copyright files, plus the project's seed write-ups
  from SEEDS_DIR (default ../shared/seeds; two of them are Chinese copies of
  one blog post).
"""
import html
import io
import sys
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

out = Path(__file__).resolve().parent.parent / "data-samples" / "crawl"
seeds = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/seeds")
out.mkdir(parents=True, exist_ok=True)

files = sorted(
    p for p in Path("/usr/share/doc").glob("*/copyright") if 1000 <= p.stat().st_size <= 20000
)
pages, texts = files[:150], files[150:300]

with open(out / "pages.warc.gz", "wb") as f:
    w = WARCWriter(f, gzip=True)
    w.write_record(w.create_warcinfo_record("pages.warc.gz", {"software": "warcio"}))
    for i, path in enumerate(pages):
        package = path.parent.name
        url = f"https://sources.example.org/{package}/copyright"
        body = (
            "<!DOCTYPE html><html><head><title>Copyright of " + package + "</title>"
            "<style>pre { white-space: pre-wrap }</style>"
            f"<script>track('{package}', {i});</script></head><body>"
            "<nav>Home | Packages | Licenses | Search</nav><pre>"
            + html.escape(path.read_text(errors="replace"))
            + f"</pre><footer>Page {i} of the sample mirror.</footer></body></html>"
        ).encode()
        headers = StatusAndHeaders(
            "200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1"
        )
        w.write_record(
            w.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=headers)
        )

with open(out / "text.wet.gz", "wb") as f:
    w = WARCWriter(f, gzip=True)
    w.write_record(w.create_warcinfo_record("text.wet.gz", {"software": "warcio"}))
    docs = [
        (f"https://mirror.example.net/{p.parent.name}/copyright", p.read_text(errors="replace"))
        for p in texts
    ]
    docs += [
        (f"https://blog.example.cn/{p.stem}", p.read_text(errors="replace"))
        for p in sorted(seeds.glob("*.txt"))
    ]
    for url, text in docs:
        w.write_record(
            w.create_warc_record(
                url, "conversion", payload=io.BytesIO(text.encode()), warc_content_type="text/plain"
            )
        )
print(f"{len(pages)} pages, {len(docs)} text records -> {out}")
