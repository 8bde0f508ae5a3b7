"""Independent WARC/WET writer and DuckDB reader for tests/fingerprint.rs.

    warc_writer.py write DIR    writes DIR/sample.warc.gz, DIR/sample.wet.gz
                                (written by warcio, one gzip member per record)
                                and DIR/manifest.json (what each record holds)
    warc_writer.py read SHARDS  prints the fingerprint shards' rows as JSON, read by DuckDB
"""
import io
import json
import sys
from pathlib import Path


def write(out):
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    out = Path(out)
    manifest = {"warc": [], "wet": []}
    with open(out / "sample.warc.gz", "wb") as f:
        w = WARCWriter(f, gzip=True)
        w.write_record(w.create_warcinfo_record("sample.warc.gz", {"software": "warcio"}))

        def respond(url, html):
            headers = StatusAndHeaders(
                "200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1"
            )
            payload = io.BytesIO(html.encode())
            w.write_record(
                w.create_warc_record(url, "response", payload=payload, http_headers=headers)
            )
            manifest["warc"].append({"url": url, "html": html})

        for i in range(40):
            url = f"http://example.org/page/{i}"
            request = w.create_warc_record(
                url, "request", payload=io.BytesIO(f"GET /page/{i} HTTP/1.1\r\n\r\n".encode())
            )
            w.write_record(request)
            respond(
                url,
                f"<html><head><title>Page {i}</title><style>p {{ margin: 0 }}</style>"
                f"<script>var views = {i * 7};</script></head><body>"
                f"<nav><a href='/'>Home</a> <a href='/about'>About us</a></nav>"
                f"<h1>Story number {i}</h1><p>The crawler fetched this page on day {i % 5}."
                f" Paragraph with words café, naïve and 中文内容第{i}段。</p>"
                f"<footer>Copyright example.org</footer></body></html>",
            )
        # Pages that are all template (a tag listing, an empty search page):
        # main-content extraction finds nothing and falls back to all the text.
        for i in range(2):
            respond(
                f"http://example.org/tags/{i}",
                f"<html><head><title>Tag {i}</title></head><body>"
                f"<nav><a href='/'>Home</a> <a href='/about'>About us</a></nav>"
                f"<footer>Copyright example.org, tag listing {i}</footer></body></html>",
            )
        image = StatusAndHeaders("200 OK", [("Content-Type", "image/png")], protocol="HTTP/1.1")
        w.write_record(
            w.create_warc_record(
                "http://example.org/logo.png", "response",
                payload=io.BytesIO(b"\x89PNG\r\n"), http_headers=image,
            )
        )
    with open(out / "sample.wet.gz", "wb") as f:
        w = WARCWriter(f, gzip=True)
        w.write_record(w.create_warcinfo_record("sample.wet.gz", {"software": "warcio"}))
        for i in range(30):
            url = f"https://news.example.com/{i}"
            text = f"Headline {i}\nThe cat sat on the mat {i} times.\n你妈妈喊你回家吃饭哦，第{i}次。\n"
            w.write_record(
                w.create_warc_record(
                    url, "conversion", payload=io.BytesIO(text.encode()),
                    warc_content_type="text/plain",
                )
            )
            manifest["wet"].append({"url": url, "text": text})
    (out / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False))


def read(shards):
    import duckdb

    rel = duckdb.sql(f"SELECT id, url, simhash, n_features, n_chars FROM read_parquet('{shards}')")
    types = [str(t) for t in rel.types]
    rows = [dict(zip(["id", "url", "simhash", "n_features", "n_chars"], r)) for r in rel.fetchall()]
    print(json.dumps({"types": types, "rows": rows}, ensure_ascii=False))


if __name__ == "__main__":
    {"write": write, "read": read}[sys.argv[1]](sys.argv[2])
