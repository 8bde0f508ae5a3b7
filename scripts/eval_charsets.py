"""Pages served in legacy character encodings, as much of the web still is:
does `neardup fingerprint` give each the fingerprint of its UTF-8 original?

The pages: Rust by Example in Chinese, Japanese, Korean and Spanish, as the
Rust toolchain ships it (`rustup component add rust-docs`), each served in
UTF-8 and re-encoded by Python's codecs as a site in that language would
serve it: GBK, Shift_JIS (Windows' cp932), EUC-JP, EUC-KR (cp949) and
ISO-8859-1 (cp1252). A character the encoding lacks becomes a numeric
character reference (`&#8594;`), as browsers submit and many sites store
them, so every version renders to the same text. Each re-encoded page is
served three ways:

- `header`: the HTTP `Content-Type` names its charset (the page's own
  `<meta charset="UTF-8">` removed);
- `meta`: only a `<meta charset>` in the page names it;
- `none`: nothing names it, from a host under the language's country
  domain (`.cn`, `.jp`, `.kr`, `.es`), and again under `.com`.

All versions go into one WARC written by warcio; neardup fingerprints it
(`--workers 2`, default scheme) and each version's fingerprint is compared
with its UTF-8 original's. A version counts as *same* when the fingerprints
are equal, *within k* when they differ in at most k bits, *missing* when no
fingerprint was made (a bad record).

    .venv/bin/python scripts/eval_charsets.py [--neardup BIN] [--k 3] [--json FILE]
"""

import argparse
import atexit
import glob
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import duckdb
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

# language: (country domain, [(label served, Python codec)])
LANGUAGES = {
    "zh": ("cn", [("gbk", "gbk")]),
    "ja": ("jp", [("shift_jis", "cp932"), ("euc-jp", "euc_jp")]),
    "ko": ("kr", [("euc-kr", "cp949")]),
    "es": ("es", [("iso-8859-1", "cp1252")]),
}
DECLARATIONS = ["header", "meta", "none"]
META_UTF8 = re.compile(r"<meta\s+charset\s*=\s*[\"']?utf-8[\"']?\s*/?>", re.I)


def toolchain_docs(release="stable"):
    home = os.path.expanduser("~/.rustup/toolchains")
    found = glob.glob(f"{home}/{release}-*/share/doc/rust/html/rust-by-example")
    if not found:
        sys.exit(f"no {release} toolchain docs under {home} (rustup component add rust-docs)")
    return found[0]


def pages_of(root, language):
    for file in sorted(glob.glob(f"{root}/{language}/**/*.html", recursive=True)):
        rel = os.path.relpath(file, f"{root}/{language}")
        if os.path.basename(rel) in ("print.html", "toc.html", "404.html"):
            continue
        html = open(file, encoding="utf-8").read()
        if not META_UTF8.search(html):
            continue
        yield rel, html


def write_warc(path, root):
    """Writes every version; returns {url: (language, rel, label, declaration, tld)}."""
    versions = {}
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)

        def serve(url, payload, content_type, what):
            headers = StatusAndHeaders("200 OK", [("Content-Type", content_type)], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(
                url, "response", payload=io.BytesIO(payload), http_headers=headers))
            versions[url] = what

        for language, (tld, encodings) in LANGUAGES.items():
            for rel, html in pages_of(root, language):
                serve(f"http://rbe.example.{tld}/utf-8/{language}/{rel}", html.encode(),
                      "text/html; charset=utf-8", (language, rel, "utf-8", "header", tld))
                bare = META_UTF8.sub("", html, count=1)
                for label, codec in encodings:
                    def encoded(text):
                        return text.encode(codec, errors="xmlcharrefreplace")
                    at = f"{label}/{language}/{rel}"
                    serve(f"http://rbe.example.{tld}/header/{at}", encoded(bare),
                          f"text/html; charset={label}", (language, rel, label, "header", tld))
                    meta = META_UTF8.sub(f'<meta charset="{label}">', html, count=1)
                    serve(f"http://rbe.example.{tld}/meta/{at}", encoded(meta),
                          "text/html", (language, rel, label, "meta", tld))
                    for host_tld in (tld, "com"):
                        serve(f"http://rbe.example.{host_tld}/none/{at}", encoded(bare),
                              "text/html", (language, rel, label, "none", host_tld))
    return versions


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--neardup", default="target/release/neardup")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="neardup-charsets-")
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    warc, out = os.path.join(work, "pages.warc.gz"), os.path.join(work, "fp")
    versions = write_warc(warc, toolchain_docs())
    subprocess.run([args.neardup, "fingerprint", "--input", warc, "--out", out, "--workers", "2"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    simhash = dict(duckdb.sql(f"SELECT url, simhash FROM read_parquet('{out}/*.parquet')").fetchall())
    summary = json.load(open(os.path.join(out, "_summary.json")))

    original = {(lang, rel): simhash.get(url) for url, (lang, rel, label, _, _) in versions.items()
                if label == "utf-8"}
    rows = {}
    for url, (lang, rel, label, declaration, tld) in versions.items():
        if label == "utf-8":
            continue
        key = f"{lang} {label} {declaration}" + (f" .{tld}" if declaration == "none" else "")
        row = rows.setdefault(key, {"pages": 0, "same": 0, "within_k": 0, "missing": 0})
        row["pages"] += 1
        got, want = simhash.get(url), original[(lang, rel)]
        if got is None or want is None:
            row["missing"] += 1
            continue
        distance = bin((got ^ want) & (2**64 - 1)).count("1")
        row["same"] += distance == 0
        row["within_k"] += distance <= args.k
    figures = {
        "versions": rows,
        "originals": len(original),
        "bad_records": summary["bad_records"],
        "charsets": summary.get("charsets", {}),
        "charset_guesses": summary.get("charset_guesses", 0),
    }
    print(f"{len(original)} pages in UTF-8; {len(versions) - len(original)} re-encoded versions; "
          f"bad records {figures['bad_records']}; decoded from {figures['charsets']}, "
          f"{figures['charset_guesses']} guessed")
    print(f"{'version':28} {'pages':>6} {'same':>6} {'within k':>9} {'missing':>8}")
    for key, row in rows.items():
        print(f"{key:28} {row['pages']:6} {row['same']:6} {row['within_k']:9} {row['missing']:8}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
