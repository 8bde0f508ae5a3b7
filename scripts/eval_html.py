"""Quality of `neardup fingerprint` on real HTML: mdBook sites shipped with
the Rust toolchain (the book, the reference, the Cargo book, the nomicon, the
edition guide) and rustdoc API pages (alloc, proc_macro, test), in two
releases (stable and nightly), written into a WARC
with warcio. The same page in two releases is a real near-duplicate; pages
of one site share a heavy template (a sidebar listing every chapter, menus).

Truth: Jaccard of word 5-shingles of each page's main content, taken here
independently of neardup (Python's html.parser, the text inside <main>,
without code listings' line numbers, which shift when a line is added);
pages without a <main> (redirect stubs) have no truth and are left out.
With --unmark, the pages are served without what marks their content
(`<main>`, `<article>`, `role="main"`), as many pages on the web are, and
the truth stays that of the marked pages: this measures main-content
extraction on its other cues alone.
Recall: of the pairs of the same page in both releases with J >= 0.9, the
share within k = 3. Precision: of the pairs within k, the share with
J >= 0.8. By length of the main content in words.

With --peers, the peer schemes of scripts/peers.py are scored beside
neardup on the same pages (`pip install -r scripts/requirements-eval.txt`).

    .venv/bin/python scripts/eval_html.py [--modes main,all] [--k 3] [--peers] [--unmark] [--json FILE]
        [--docs A,B]    (two releases of another site, e.g. two Sphinx builds, instead)
        [--flags '--scheme v5']    (an older scheme: it fixes its own HTML text, so give one mode)
        [--show-false N]    (the N least alike of the false pairs in each length bucket)
        [--draws]    (also the sketch's 64-bit words as fingerprints: k's spread over 4 draws)
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
from html.parser import HTMLParser

import duckdb
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

import scoring

SITES = ["book", "reference", "cargo", "nomicon", "edition-guide",  # mdBook
         "alloc", "proc_macro", "test"]  # rustdoc: static sidebars of every item
RELEASES = ["stable", "nightly"]
HIDDEN = {"script", "style", "noscript", "template"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
        "param", "source", "track", "wbr"}


# A code listing's line-number gutter (Pygments, Chroma, Rouge, rustdoc,
# cgit): not content, and every number after a line added shifts.
GUTTERS = {"linenos", "linenodiv", "lineno", "ln", "lnt", "rouge-gutter", "src-line-numbers",
           "linenumbers"}


class MainText(HTMLParser):
    """The text inside `<main>` or an element with `role="main"` (Sphinx
    marks its body so), or with `everything` all the text; never a
    line-number gutter's."""

    def __init__(self, everything=False):
        super().__init__()
        self.open = []  # (tag, marks main, is a gutter) of the open elements
        self.depth_main = 0
        self.hidden = 0
        self.gutters = 0
        self.everything = everything
        self.parts = []

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            return
        marks = tag == "main" or ("role", "main") in attrs
        gutter = any(c.lower() in GUTTERS for k, v in attrs if k == "class" and v for c in v.split())
        self.open.append((tag, marks, gutter))
        self.depth_main += marks
        self.gutters += gutter
        if tag in HIDDEN:
            self.hidden += 1
        self.parts.append(" ")

    def handle_endtag(self, tag):
        tags = [t for t, *_ in self.open]
        if tag in tags:
            at = len(tags) - 1 - tags[::-1].index(tag)
            self.depth_main -= sum(marks for _, marks, _ in self.open[at:])
            self.gutters -= sum(gutter for *_, gutter in self.open[at:])
            del self.open[at:]
        if tag in HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        self.parts.append(" ")

    def handle_data(self, data):
        if (self.depth_main or self.everything) and not self.hidden and not self.gutters:
            self.parts.append(data)


def main_words(html, everything=False):
    """The words inside the main content, or with `everything` all of the
    page's (the truth of a redirect stub, which marks none)."""
    parser = MainText(everything)
    parser.feed(html)
    return re.findall(r"\w+", "".join(parser.parts).lower())


def shingles(words, n=5):
    if len(words) < n:
        return {" ".join(words)} if words else set()
    return {" ".join(words[i:i + n]) for i in range(len(words) - n + 1)}


def jaccard(a, b):
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def toolchain_docs(release):
    home = os.path.expanduser("~/.rustup/toolchains")
    found = glob.glob(f"{home}/{release}-*/share/doc/rust/html")
    return found[0] if found else None


def unmarked(html):
    """The page without what marks its content (`<main>`, `<article>`,
    `role="main"`), as many pages on the web are: what is left to tell
    content from template is the page's other elements and its links."""
    html = re.sub(r"<(/?)(?:main|article)\b", r"<\1div", html, flags=re.I)
    return re.sub(r"""\srole\s*=\s*["']?main["']?""", "", html, flags=re.I)


def write_warc(path, unmark=False, docs=None):
    """The pages of the Rust docs of both releases, or of `docs`: two
    directories holding two releases of one site (`--docs A,B`)."""
    pages = {}
    releases = RELEASES if docs is None else ["a", "b"]
    sites = SITES if docs is None else ["."]
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for at, release in enumerate(releases):
            root = toolchain_docs(release) if docs is None else docs[at]
            if root is None:
                sys.exit(f"no {release} toolchain docs under ~/.rustup (rustup component add rust-docs)")
            for site in sites:
                for file in sorted(glob.glob(f"{root}/{site}/**/*.html", recursive=True)):
                    rel = os.path.relpath(file, root)
                    if os.path.basename(rel) in ("print.html", "toc.html", "404.html"):
                        continue
                    html = open(file, encoding="utf-8", errors="replace").read()
                    words = main_words(html)
                    if unmark:
                        html = unmarked(html)
                    rel = os.path.normpath(rel)
                    url = f"http://{release}.docs.example/{rel}"
                    headers = StatusAndHeaders(
                        "200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
                    writer.write_record(writer.create_warc_record(
                        url, "response", payload=io.BytesIO(html.encode()), http_headers=headers))
                    everything = shingles(main_words(html, everything=True))
                    pages[url] = (rel, shingles(words), len(words), html, everything)
    return pages


BUCKETS = ["<50", "50-200", "200-1000", ">1000"]


def bucket(words):
    """A pair's length bucket, by its shorter page's words: stubs and
    generated reference pages are the first."""
    if words < 200:
        return "<50" if words < 50 else "50-200"
    return "200-1000" if words <= 1000 else ">1000"


def show_false(found, truth, same_page, pages, bucket_of, n):
    """Each mode's false pairs (within k, J < 0.8) by length bucket: how
    many, how many are one page in both releases, and the `n` least alike,
    with their distance and words."""
    for mode, pairs in found.items():
        false = sorted((truth[p], p) for p in pairs if p in truth and truth[p] < 0.8)
        for b in BUCKETS:
            shown = [(j, p) for j, p in false if bucket_of(p) == b]
            if not shown:
                continue
            same = sum(p in same_page for _, p in shown)
            print(f"\n{mode} {b}: {len(shown)} false pairs, {same} of them one page in both releases")
            for j, p in shown[:n]:
                # neardup's pairs carry (distance, wide distance); peers' none.
                found_as = pairs[p] if isinstance(pairs, dict) else None
                distance = found_as[0] if isinstance(found_as, tuple) else "?"
                words = " / ".join(str(pages[url][2]) for url in p)
                print(f"  J {j:.2f}  distance {distance}  words {words}  {p[0]}  {p[1]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--modes", default="main,all")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--neardup", default="target/release/neardup")
    ap.add_argument("--flags", default="", help="more `fingerprint` flags, e.g. '--log-weights'")
    ap.add_argument("--json", help="also write the figures here, by mode and length")
    ap.add_argument("--show-false", type=int, default=0, metavar="N",
                    help="list the N least alike false pairs (within k, J < 0.8) of each length bucket")
    ap.add_argument("--peers", action="store_true", help="also score scripts/peers.py's schemes")
    ap.add_argument("--unmark", action="store_true",
                    help="serve the pages without <main>, <article> and role=main (the truth is unchanged)")
    ap.add_argument("--docs", help="A,B: two releases of another site (built HTML directories) "
                                   "instead of the Rust docs")
    scoring.add_verify_args(ap)
    scoring.add_draws_arg(ap)
    args = ap.parse_args()
    scoring.refuse_draws_with(ap, args)
    if "--scheme" in args.flags and "," in args.modes:
        ap.error("a named scheme fixes its own HTML text: give one mode (--modes main)")
    work = tempfile.mkdtemp(prefix="neardup-eval-")
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    warc = os.path.join(work, "docs.warc.gz")
    docs = args.docs.split(",") if args.docs else None
    pages = write_warc(warc, args.unmark, docs)
    print(f"{len(pages)} pages from {', '.join(docs or SITES)} in {', '.join(docs and ['a', 'b'] or RELEASES)}")

    found = {}
    for mode in args.modes.split(","):
        fp, pairs = os.path.join(work, f"fp-{mode}"), os.path.join(work, f"pairs-{mode}")
        # A named scheme fixes its HTML text: `--html-text` would be refused.
        html_text = [] if "--scheme" in args.flags else ["--html-text", mode]
        subprocess.run([args.neardup, "fingerprint", "--input", warc, "--out", fp,
                        *html_text, "--workers", "2", *args.flags.split()],
                       check=True, stdout=subprocess.DEVNULL)
        urls = dict(duckdb.sql(f"SELECT id, url FROM read_parquet('{fp}/*.parquet')").fetchall())
        rows = scoring.self_pairs(args.neardup, fp, scoring.match_k(args), pairs, "--workers", "2",
                                  args=args)
        found[mode] = {tuple(sorted((urls[q], urls[c]))): d for (q, c), d in rows.items()}
        if args.draws:
            scoring.add_sketch_draws(found, mode, args.neardup, fp, args.k, os.path.join(work, mode),
                                     keyed=lambda rows: {tuple(sorted((urls[q], urls[c]))): d
                                                         for (q, c), d in rows.items()})
        fallbacks = json.load(open(os.path.join(fp, "_summary.json")))["main_content_fallbacks"]
        print(f"{mode}: {len(found[mode])} pairs within k={args.k}, {fallbacks} main-content fallbacks")
    if args.peers:
        import peers

        urls = sorted(pages)
        for name, main_content in [("resiliparse-all+simhash", False),
                                   ("resiliparse-main+simhash", True)]:
            fingerprints = {i: peers.simhash_default(peers.html_text(pages[url][3], main_content))
                            for i, url in enumerate(urls)}
            pairs = peers.pairs_within_k(fingerprints, args.k, args.neardup, work, name)
            found[name] = {(urls[a], urls[b]) for a, b in pairs}
            print(f"{name} ({peers.PEERS[name]}): {len(found[name])} pairs within k={args.k}")

    by_rel = {}
    for url, (rel, *_) in pages.items():
        by_rel.setdefault(rel, []).append(url)
    # Pages without main content (redirect stubs) have no truth: left out.
    empty = {url for url, (_, words, *_) in pages.items() if not words}
    print(f"{len(empty)} pages without a <main> (redirect stubs) scored apart")
    same_page = {tuple(sorted(urls)) for urls in by_rel.values() if len(urls) == 2}
    candidates = (set().union(*found.values()) | same_page)
    candidates = {p for p in candidates if not (set(p) & empty)}
    truth = {pair: jaccard(pages[pair[0]][1], pages[pair[1]][1]) for pair in candidates}
    # Recall over a set no method chooses: the same page in both releases.
    positives = {p for p in same_page if p in truth and truth[p] >= 0.9}

    # Pairs with a page that has no truth are left out of precision too.
    scored = {mode: {p for p in pairs if p in truth} for mode, pairs in found.items()}
    if args.frontier:
        long = {p for p in truth if min(pages[p[0]][2], pages[p[1]][2]) >= 50}
        rows = {}
        for mode in args.modes.split(","):
            for label, kept in [("50+ words", long), ("all", set(truth))]:
                pairs = {p: d for p, d in found[mode].items() if p in kept}
                rows[f"{mode}, {label}"] = scoring.frontier(
                    pairs, positives & kept, lambda a, b: truth[(a, b)], f"{mode}, {label} ")
        if args.json:
            json.dump(rows, open(args.json, "w"), indent=1)
        return
    print()
    def bucket_of(pair):
        return bucket(min(pages[pair[0]][2], pages[pair[1]][2]))

    figures = scoring.score(scored, positives, lambda a, b: truth[(a, b)], bucket_of, BUCKETS)
    if args.draws:
        for mode in args.modes.split(","):
            scoring.add_spread(figures, mode)
    if args.show_false:
        show_false(found, truth, same_page, pages, bucket_of, args.show_false)
    # Redirect stubs, scored apart on their whole text: pairs of two stubs.
    stub_pairs = {p for p in set().union(*found.values()) | same_page if set(p) <= empty}
    stub_truth = {p: jaccard(pages[p[0]][4], pages[p[1]][4]) for p in stub_pairs}
    stub_positives = {p for p in same_page if p in stub_truth and stub_truth[p] >= 0.9}
    stub_found = {mode: {p for p in pairs if p in stub_truth} for mode, pairs in found.items()}
    print("\nredirect stubs (no <main>), truth on their whole text:")
    figures["stubs"] = scoring.score(stub_found, stub_positives,
                                     lambda a, b: stub_truth[(a, b)], lambda p: "all", [])
    if args.json:
        json.dump(figures, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
