"""Independent WARC/WET writer and DuckDB reader for tests/it/fingerprint.rs.

    warc_writer.py write DIR        writes DIR/sample.warc.gz, DIR/sample.wet.gz
                                    (written by warcio, one gzip member per record)
                                    and DIR/manifest.json (what each record holds)
    warc_writer.py write-plain DIR  the same records, uncompressed: DIR/sample.warc,
                                    DIR/sample.wet
    warc_writer.py read SHARDS      prints the fingerprint shards' rows as JSON, read
                                    by DuckDB, each with what a plain ranged read of
                                    [offset, offset + length) of its source holds
    warc_writer.py sphinx DIR       builds a Sphinx site of generated reference pages
                                    into DIR/site, and DIR/sphinx.warc.gz of its pages
    warc_writer.py copies DIR       writes DIR/copies.warc.gz: real texts (this
                                    machine's licence files), each copied under
                                    several URLs (https and http, tracking queries,
                                    deeper paths, other sites) on other dates, some
                                    with a line more or less, for cluster --keep-by
    warc_writer.py canonical DIR    writes DIR/canonical.warc.gz: real texts, each an
                                    original page (http, a deep path, fetched last)
                                    naming itself canonical by a relative and an
                                    absolute link, its AMP view naming it, a
                                    syndicated copy naming it in an HTTP Link
                                    header, a copy whose two links name different
                                    pages, and a copy whose content carries a
                                    canonical link in its body
    warc_writer.py canonical-uncrawled DIR
                                    the same without the original pages: the pages
                                    the links name were never crawled
    warc_writer.py canonical-docs DIR
                                    writes DIR/docs.warc.gz and DIR/manifest.json from
                                    the real pages that name their site's copy
                                    canonical (Node.js's API docs, Underscore's home):
                                    each at a mirror as it is, at a shorter URL with
                                    its canonical link cut out and fetched first, and
                                    every other one at the URL it names; exits 3 if
                                    this machine has no such pages
    warc_writer.py read-the-docs DIR
                                    writes DIR/rtd.warc.gz and DIR/manifest.json from
                                    real pages in Read the Docs' Sphinx theme (QEMU's
                                    tool manuals, as Debian ships them): each as it is
                                    and, at another URL, with a site-wide announcement
                                    before the theme's wrapper; exits 3 if this
                                    machine has none
    warc_writer.py encoded DIR      writes DIR/encoded.warc.gz: one HTML page sent
                                    plain, gzip-encoded, chunked, chunked and gzipped
                                    (the raw HTTP a proxy records), and a corrupt gzip
                                    body; and DIR/manifest.json (the page, each URL
                                    and its record's offset)
    warc_writer.py statuses DIR     writes DIR/statuses.warc.gz: on four sites, a
                                    page, a redirect and a "Not Found" with the
                                    server's stock bodies, a server error, and pages
                                    with nothing to read (an empty body, a script-only
                                    app shell, an image); and DIR/manifest.json (the
                                    URLs of the pages, of the other responses, and of
                                    the empty pages)
"""
import datetime
import io
import json
import sys
import zlib
from pathlib import Path

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
# Records are dated 37 s apart from here, across 2024's leap day.
FIRST_DATE = datetime.datetime(2024, 2, 28, 23, 59, 30, tzinfo=datetime.timezone.utc)


def warc_date(n):
    """The n-th record's WARC-Date, in turn in whole seconds, with microseconds,
    and at +02:00; and the instant in microseconds since the epoch."""
    at = FIRST_DATE + datetime.timedelta(seconds=37 * n)
    if n % 3 == 1:
        at = at.replace(microsecond=1000 * n + 7)
        text = at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    elif n % 3 == 2:
        text = (at + datetime.timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%S+02:00")
    else:
        text = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return text, (at - EPOCH) // datetime.timedelta(microseconds=1)


def write(out, gzip=True):
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    out = Path(out)
    suffix = ".gz" if gzip else ""
    manifest = {"warc": [], "wet": []}
    dated = iter(range(1_000_000))

    def create(w, *args, date=None, **kwargs):
        """warcio's record, with the next WARC-Date (or `date`); its date,
        instant and record id."""
        text, micros = warc_date(next(dated))
        if date is not None:
            text, micros = date, None
        record = w.create_warc_record(*args, warc_headers_dict={"WARC-Date": text}, **kwargs)
        about = {
            "date": text,
            "micros": micros,
            "record_id": record.rec_headers.get_header("WARC-Record-ID"),
        }
        return record, about

    with open(out / f"sample.warc{suffix}", "wb") as f:
        w = WARCWriter(f, gzip=gzip)
        w.write_record(w.create_warcinfo_record(f"sample.warc{suffix}", {"software": "warcio"}))

        def respond(url, html):
            headers = StatusAndHeaders(
                "200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1"
            )
            payload = io.BytesIO(html.encode())
            record, about = create(w, url, "response", payload=payload, http_headers=headers)
            w.write_record(record)
            manifest["warc"].append({"url": url, "html": html, **about})

        for i in range(40):
            url = f"http://example.org/page/{i}"
            request, _ = create(
                w, url, "request", payload=io.BytesIO(f"GET /page/{i} HTTP/1.1\r\n\r\n".encode())
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
        record, _ = create(
            w, "http://example.org/logo.png", "response",
            payload=io.BytesIO(b"\x89PNG\r\n"), http_headers=image,
        )
        w.write_record(record)
    with open(out / f"sample.wet{suffix}", "wb") as f:
        w = WARCWriter(f, gzip=gzip)
        w.write_record(w.create_warcinfo_record(f"sample.wet{suffix}", {"software": "warcio"}))
        for i in range(30):
            url = f"https://news.example.com/{i}"
            text = f"Headline {i}\nThe cat sat on the mat {i} times.\n你妈妈喊你回家吃饭哦，第{i}次。\n"
            # The last page's date is not a date: it loses its fetch time only.
            record, about = create(
                w, url, "conversion", payload=io.BytesIO(text.encode()),
                warc_content_type="text/plain", date="yesterday" if i == 29 else None,
            )
            w.write_record(record)
            manifest["wet"].append({"url": url, "text": text, **about})
    (out / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False))


def ranged_read(source, offset, length):
    """What `length` bytes from `offset` of `source` hold, read as a crawl
    team would: `exact` when they are one whole gzip member (of a gzipped
    file) or start at a `WARC/` line and end in a blank line (of a plain
    one); `records`, the WARC records warcio reads from them; `object`, a
    JSONL line's JSON."""
    with open(source, "rb") as f:
        f.seek(offset)
        data = f.read(length)
    if ".jsonl" in source:
        return {"object": json.loads(data)}
    from warcio.archiveiterator import ArchiveIterator

    if source.endswith(".gz"):
        member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        decoded = member.decompress(data)
        exact = member.eof and member.unused_data == b""
    else:
        decoded = data
        exact = data.startswith(b"WARC/") and data.endswith(b"\r\n\r\n")
    records = []
    # The whole block, HTTP headers too, to check it against Content-Length.
    for record in ArchiveIterator(io.BytesIO(decoded), no_record_parse=True):
        body = record.raw_stream.read()
        records.append({
            "type": record.rec_type,
            "uri": record.rec_headers.get_header("WARC-Target-URI"),
            "record_id": record.rec_headers.get_header("WARC-Record-ID"),
            "date": record.rec_headers.get_header("WARC-Date"),
            "whole": len(body) == int(record.rec_headers.get_header("Content-Length")),
        })
    return {"exact": exact, "records": records}


COLUMNS = ["id", "url", "simhash", "sketch", "n_features", "n_chars", "fetch_time", "source", "offset",
           "length", "canonical_url", "main_content"]


def read(shards):
    import duckdb

    rel = duckdb.sql(f"SELECT * FROM read_parquet('{shards}')")
    types = [str(t) for t in rel.types]
    # The sketch is there unless the shards were made with --no-sketch.
    expected = [c for c in COLUMNS if c != "sketch" or c in rel.columns]
    if rel.columns != expected[: len(rel.columns)]:
        sys.exit(f"unexpected columns {rel.columns}")
    # The instant as DuckDB reads it, in microseconds since the epoch
    # (whatever the session's time zone, and without Python's time zones).
    # The sketch's bytes stay out of the rows (its type is reported).
    listed = [c for c in rel.columns if c != "sketch"]
    select = ", ".join('epoch_us(fetch_time)' if c == "fetch_time" else f'"{c}"' for c in listed)
    rel = duckdb.sql(f"SELECT {select} FROM read_parquet('{shards}')")
    rows = []
    for values in rel.fetchall():
        row = dict(zip(listed, values))
        if row.get("offset") is not None:
            row["range"] = ranged_read(row["source"], row["offset"], row["length"])
        rows.append(row)
    print(json.dumps({"types": types, "rows": rows}, ensure_ascii=False))


def html_headers(extra=(), status="200 OK"):
    """An HTML response's status line and headers, `extra` after them."""
    from warcio.statusandheaders import StatusAndHeaders

    return StatusAndHeaders(
        status, [("Content-Type", "text/html; charset=utf-8")] + list(extra), protocol="HTTP/1.1"
    )


def write_response(w, url, html, headers, date):
    """Writes the HTTP response `html` (text) of `url`, dated `date`."""
    w.write_record(w.create_warc_record(
        url, "response", payload=io.BytesIO(html.encode()), http_headers=headers,
        warc_headers_dict={"WARC-Date": date.strftime("%Y-%m-%dT%H:%M:%SZ")},
    ))


def copies(out):
    """Pages copied under several URLs, in an order unlike their dates, so
    that no key's choice is the first record's or the smallest id's."""
    from warcio.warcwriter import WARCWriter

    licences = Path("/usr/share/common-licenses")
    names = ["Apache-2.0", "GPL-3", "MPL-2.0", "LGPL-2.1", "Artistic", "GFDL-1.3", "CC0-1.0"]
    variants = [
        # (URL pattern, days after the first crawl, text: same, more, less)
        ("http://mirror.example.net/{name}?utm_source=feed", 3, "same"),
        ("https://licences.example.org/{name}", 5, "more"),
        ("https://licences.example.org/archive/2024/{name}", 1, "same"),
        ("http://licences.example.org/{name}", 0, "less"),
        ("https://copy.example.com/{name}?ref=1", 2, "same"),
    ]
    headers = html_headers()
    with open(Path(out) / "copies.warc.gz", "wb") as f:
        w = WARCWriter(f, gzip=True)
        for n, name in enumerate(names):
            paragraphs = [p for p in (licences / name).read_text().split("\n\n") if p.strip()]
            paragraphs = paragraphs[:12]
            for v, (pattern, days, text) in enumerate(variants[n % 2:] + variants[: n % 2]):
                body = paragraphs + ["Share this page with a friend."] if text == "more" else paragraphs
                body = body[:-1] if text == "less" else body
                html = "<html><body><main>" + "".join(f"<p>{p}</p>" for p in body) + "</main></body></html>"
                date = FIRST_DATE + datetime.timedelta(days=days, seconds=n)
                write_response(w, pattern.format(name=name.lower()), html, headers, date)


def canonical(out, crawled=True):
    """Copies of pages whose sites name the original with rel="canonical",
    every copy with a URL and a fetch time the other keys would prefer;
    the originals themselves only if `crawled`."""
    from warcio.warcwriter import WARCWriter

    licences = Path("/usr/share/common-licenses")
    names = ["Apache-2.0", "GPL-3", "MPL-2.0", "LGPL-2.1"]
    with open(Path(out) / "canonical.warc.gz", "wb") as f:
        w = WARCWriter(f, gzip=True)
        for n, licence in enumerate(names):
            name = licence.lower()
            paragraphs = [p for p in (licences / licence).read_text().split("\n\n") if p.strip()][:12]
            main = "<main>" + "".join(f"<p>{p}</p>" for p in paragraphs) + "</main>"
            path = f"/articles/2024/{name}/full-story.html"
            original = "http://publisher.example" + path
            link = '<link rel="canonical" href="{}">'
            in_header = [("Link", f'<https://cdn.example/s.css>; rel=preload, <{original}>; rel="canonical"')]
            pages = [
                # (URL, days after the first crawl, head, start of the body, HTTP headers)
                (original, 6, link.format(path) + link.format(original), "", []),
                (f"https://publisher.example/amp/{name}", 0, link.format(original), "", []),
                (f"https://news.example/{name}", 1, "", "", in_header),
                (f"https://copy.example/{name}", 2, link.format("/") + link.format(original), "", []),
                (f"https://t.example/{name}", 3, "", link.format(f"https://t.example/{name}"), []),
            ]
            for url, days, head, body, extra in pages[0 if crawled else 1:]:
                html = f"<html><head><title>{name}</title>{head}</head><body>{body}{main}</body></html>"
                date = FIRST_DATE + datetime.timedelta(days=days, seconds=n)
                write_response(w, url, html, html_headers(extra), date)


def canonical_docs(out):
    """Real pages with canonical links, mirrored and copied: which page of
    each does cluster keep?"""
    import glob
    import re
    from warcio.warcwriter import WARCWriter

    files = sorted(glob.glob("/usr/share/doc/nodejs/api/*.html"))
    files += glob.glob("/usr/share/doc/libjs-underscore/index.html")
    link = re.compile(r'<link rel="canonical" href="([^"]+)"\s*/?>\n?')
    pages = []
    for file in files:
        html = Path(file).read_text(encoding="utf-8")
        found = link.search(html)
        if found:
            pages.append((file, html, found))
    if len(pages) < 20:
        print(f"only {len(pages)} pages with a canonical link on this machine", file=sys.stderr)
        sys.exit(3)
    headers = html_headers()
    manifest = []
    with open(Path(out) / "docs.warc.gz", "wb") as f:
        w = WARCWriter(f, gzip=True)
        for n, (file, html, found) in enumerate(pages):
            site, name = file.split("/")[-2:]
            page = Path(name).stem if site == "api" else site
            named = found.group(1)
            copy = html[:found.start()] + html[found.end():]
            group = [
                # (URL, role, days after the first crawl, HTML)
                (f"https://copy.example/{page}", "copy", 0, copy),
                (f"https://mirror.example/docs/{site}/{name}", "mirror", 1, html),
            ]
            if n % 2 == 0:
                group.append((named, "original", 2, html))
            for url, role, days, body in group:
                date = FIRST_DATE + datetime.timedelta(days=days, seconds=n)
                write_response(w, url, body, headers, date)
                manifest.append({"url": url, "role": role, "page": page})
    (Path(out) / "manifest.json").write_text(json.dumps(manifest))


def read_the_docs(out):
    """Real pages whose role="main" content lies inside wrappers the theme
    names for navigation (`wy-grid-for-nav`, `wy-nav-content`)."""
    import glob
    from warcio.warcwriter import WARCWriter

    wrapper = '<div class="wy-grid-for-nav">'
    files = [f for f in sorted(glob.glob("/usr/share/doc/qemu-utils/*.html"))
             if wrapper in Path(f).read_text(encoding="utf-8")]
    if len(files) < 3:
        print(f"only {len(files)} Read the Docs pages on this machine", file=sys.stderr)
        sys.exit(3)
    banner = ('<div class="announcement"><p>Version 10.1 has been released! '
              'Read the release notes for what changed.</p></div>')
    headers = html_headers()
    manifest = []
    with open(Path(out) / "rtd.warc.gz", "wb") as f:
        w = WARCWriter(f, gzip=True)
        for n, file in enumerate(files):
            html = Path(file).read_text(encoding="utf-8")
            name = Path(file).name
            for url, body, bannered in [
                (f"https://www.qemu.org/docs/master/tools/{name}", html, False),
                (f"https://qemu.example/tools/{name}", html.replace(wrapper, banner + wrapper, 1), True),
            ]:
                date = FIRST_DATE + datetime.timedelta(seconds=2 * n + bannered)
                write_response(w, url, body, headers, date)
                manifest.append({"url": url, "page": name, "banner": bannered})
    (Path(out) / "manifest.json").write_text(json.dumps(manifest))


def encoded(out):
    """The same page in HTTP responses as a recording proxy stores them:
    compressed and in chunks. The gzip bodies are Python's zlib at level 9
    with no time in their header, the same bytes on every run."""
    import gzip
    from warcio.warcwriter import WARCWriter

    paragraphs = [
        "Near-duplicate pages differ in a date, a counter or an advertisement, "
        "and a crawl holds millions of them.",
        "A fingerprint of each page's main content finds them in one pass over "
        "the crawl, however the server sent the page.",
        "Compressed or sent in chunks, the page is the same page to a reader.",
    ]
    html = ("<!doctype html><html><head><meta charset=\"utf-8\"><title>Sent encoded</title>"
            "</head><body><nav><a href=\"/\">Home</a> <a href=\"/about\">About</a></nav>"
            "<main><h1>One page, four ways</h1>"
            + "".join(f"<p>{p}</p>" for p in paragraphs)
            + "</main><footer>Example footer</footer></body></html>").encode()
    zipped = gzip.compress(html, compresslevel=9, mtime=0)

    def chunked(body, size):
        """`body` in chunks of `size`, the first with a chunk extension, and
        a trailer after the last."""
        pieces = [body[i:i + size] for i in range(0, len(body), size)]
        out = b"".join(
            b"%x%s\r\n%s\r\n" % (len(p), b";name=value" if i == 0 else b"", p)
            for i, p in enumerate(pieces))
        return out + b"0\r\nX-Checksum: none\r\n\r\n"

    corrupt = bytearray(zipped)
    corrupt[len(corrupt) // 2] ^= 0x5A
    responses = [
        ("https://encoded.example/plain", html, []),
        ("https://encoded.example/gzip", zipped, [("Content-Encoding", "gzip")]),
        ("https://encoded.example/chunked", chunked(html, 100),
         [("Transfer-Encoding", "chunked")]),
        ("https://encoded.example/chunked-gzip", chunked(zipped, 64),
         [("Transfer-Encoding", "chunked"), ("Content-Encoding", "gzip")]),
        ("https://encoded.example/corrupt", bytes(corrupt), [("Content-Encoding", "gzip")]),
    ]
    manifest = {"html": html.decode(), "records": []}
    with open(Path(out) / "encoded.warc.gz", "wb") as f:
        w = WARCWriter(f, gzip=True)
        for url, body, codings in responses:
            headers = html_headers(codings)
            offset = f.tell()
            w.write_record(w.create_warc_record(
                url, "response", payload=io.BytesIO(body), http_headers=headers))
            manifest["records"].append({"url": url, "offset": offset})
    (Path(out) / "manifest.json").write_text(json.dumps(manifest))


def statuses(out):
    """Responses that are not pages, and pages with nothing to read, on
    four sites, beside one real page each."""
    from warcio.warcwriter import WARCWriter

    def stock(title, text):
        # Apache's stock body: the same on every site it serves.
        return (f"<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">\n<html><head>\n"
                f"<title>{title}</title>\n</head><body>\n<h1>{title.split(' ', 1)[1]}</h1>\n"
                f"<p>{text}</p>\n<hr>\n<address>Apache/2.4.62 (Debian) Server at "
                f"example Port 443</address>\n</body></html>\n")

    sites = ["alpha.example", "beta.example", "gamma.example", "delta.example"]
    topics = ["tides and the moon", "bread and yeast", "bridges and steel", "bees and clover"]
    responses, manifest = [], {"pages": [], "others": [], "empty": []}
    for site, topic in zip(sites, topics):
        page = (f"<html><head><title>{topic}</title></head><body><main><h1>On {topic}</h1>"
                + "".join(f"<p>Paragraph {i} of a page about {topic}, written for {site}, "
                          f"with its own words on {topic.split()[0]}.</p>" for i in range(6))
                + "</main></body></html>")
        responses.append((f"https://{site}/", "200 OK", page, "pages"))
        moved = stock("301 Moved Permanently",
                      "The document has moved <a href=\"https://www.example/\">here</a>.")
        responses.append((f"http://{site}/old", "301 Moved Permanently", moved, "others"))
        missing = stock("404 Not Found", "The requested URL was not found on this server.")
        responses.append((f"https://{site}/gone", "404 Not Found", missing, "others"))
        responses.append((f"https://{site}/error", "500 Internal Server Error",
                          stock("500 Internal Server Error",
                                "The server encountered an internal error."), "others"))
        responses.append((f"https://{site}/blank", "200 OK", "<html><body></body></html>",
                          "empty"))
        responses.append((f"https://{site}/app", "200 OK",
                          "<!doctype html><html><head><script src=\"/app.js\"></script>"
                          "<script>window.boot()</script></head><body><div id=\"root\"></div>"
                          "</body></html>", "empty"))
        responses.append((f"https://{site}/photo", "200 OK",
                          "<html><body><img src=\"/photo.jpg\" alt=\"\"></body></html>",
                          "empty"))
    with open(Path(out) / "statuses.warc.gz", "wb") as f:
        w = WARCWriter(f, gzip=True)
        for url, status, body, kind in responses:
            headers = html_headers(status=status)
            w.write_record(w.create_warc_record(
                url, "response", payload=io.BytesIO(body.encode()), http_headers=headers))
            manifest[kind].append(url)
    (Path(out) / "manifest.json").write_text(json.dumps(manifest))


OPERANDS = ["vdst", "vcc", "src0", "src1", "vsrc1", "sdst", "ssrc0", "ssrc1", "simm16", "m0",
            "exec", "scc"]


def sphinx(out):
    """A real Sphinx site (this machine's Sphinx, its default theme) of 40
    generated reference pages, as an ISA manual's: each page is the same
    sentence and a list of its operands, each a link to the glossary, and
    that list is all that tells the pages apart. Built into OUT/site and
    written, every HTML page, into OUT/sphinx.warc.gz."""
    import glob
    import os
    import subprocess
    from warcio.warcwriter import WARCWriter

    src = Path(out) / "src"
    src.mkdir(parents=True)
    (src / "conf.py").write_text('project = "ISA"\nhtml_theme = "alabaster"\n')
    glossary = "Operands\n========\n\n" + "".join(
        f".. _op-{o}:\n\n{o}\n{'-' * len(o)}\n\nThe {o} operand.\n\n" for o in OPERANDS)
    (src / "operands.rst").write_text(glossary)
    pages = []
    for i in range(40):
        # Six of the twelve operands, a different six on every page.
        chosen = [o for bit, o in enumerate(OPERANDS) if (i * 2654435761 >> bit) & 1][:6]
        links = ", ".join(f":ref:`{o} <op-{o}>`" for o in chosen)
        page = f"inst_{i:02}"
        (src / f"{page}.rst").write_text(
            "VOP2 instruction\n================\n\nEncoded as VOP2 or VOP3.\n\n"
            f"Operands:\n\n{links}\n")
        pages.append(page)
    toctree = "\n".join(f"   {p}" for p in ["operands", *pages])
    (src / "index.rst").write_text(f"ISA\n===\n\n.. toctree::\n\n{toctree}\n")
    site = Path(out) / "site"
    subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", str(src), str(site)],
                   check=True)
    headers = html_headers()
    with open(Path(out) / "sphinx.warc.gz", "wb") as f:
        w = WARCWriter(f, gzip=True)
        for file in sorted(glob.glob(f"{site}/*.html")):
            url = "https://isa.example/" + os.path.basename(file)
            w.write_record(w.create_warc_record(
                url, "response", payload=io.BytesIO(Path(file).read_bytes()),
                http_headers=headers))


if __name__ == "__main__":
    commands = {
        "sphinx": sphinx,
        "write": write,
        "write-plain": lambda out: write(out, gzip=False),
        "read": read,
        "copies": copies,
        "encoded": encoded,
        "canonical": canonical,
        "canonical-uncrawled": lambda out: canonical(out, crawled=False),
        "canonical-docs": canonical_docs,
        "read-the-docs": read_the_docs,
        "statuses": statuses,
    }
    commands[sys.argv[1]](sys.argv[2])
