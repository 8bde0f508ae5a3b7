//! The keys read from a page's URLs: `canonical-url`, how much a URL
//! looks like the page's own address rather than another view of it, and
//! `rel-canonical`, whether the page's canonical link names itself.

/// A key of `canonical-url` as one word, least first: whether the URL
/// names another view of a page (a mobile or AMP host, [`variant_host`];
/// an AMP, print or mobile segment or query key, a tracking query key, or
/// a directory's default page, [`path_segments`], [`variant_query`]; a
/// fragment; a scheme or host in capitals, [`in_capitals`]) in the top
/// bit, such URLs coming after the page's own, whatever their scheme;
/// then the scheme (https, http, any other) in two bits, then whether
/// there is a query string, then the path's segments (nine bits), then
/// the URL's length in bytes (nineteen bits); segments and lengths beyond
/// their bits count as the most they hold. Every page's URL is keyed, so its `:`, `/`, `?`, `#`
/// and `@` are found a vector at a time, not by `str`'s splits.
pub(crate) fn canonical_url_key(url: &str) -> u32 {
    let bytes = url.as_bytes();
    let (scheme, rest) = match scheme_end(bytes) {
        Some(at) => (&bytes[..at], &bytes[at + 3..]),
        None => (&[][..], bytes),
    };
    let scheme_rank = match scheme {
        _ if scheme.eq_ignore_ascii_case(b"https") => 0,
        _ if scheme.eq_ignore_ascii_case(b"http") => 1,
        _ => 2,
    };
    let parts = UrlParts::of(rest);
    let (segments, variant_path) = path_segments(parts.path);
    let variant = parts.fragment
        || in_capitals(scheme)
        || host_in_capitals(parts.host)
        || variant_path
        || variant_host(parts.host)
        || parts.query.is_some_and(variant_query);
    let segments = segments.min(511) as u32;
    let length = url.len().min((1 << 19) - 1) as u32;
    (variant as u32) << 31
        | scheme_rank << 29
        | (parts.query.is_some() as u32) << 28
        | segments << 19
        | length
}

/// Where a URL's scheme ends: at the first `:` followed by `//`.
fn scheme_end(bytes: &[u8]) -> Option<usize> {
    memchr::memchr_iter(b':', bytes).find(|&at| bytes[at + 1..].starts_with(b"//"))
}

/// A URL after its scheme, cut as the key reads it: the host (up to the
/// first `/`, `?` or `#`), the path (after that `/`, up to `?` or `#`),
/// the query (after the first `?`, up to `#`), and whether a `#` follows.
struct UrlParts<'a> {
    host: &'a [u8],
    path: &'a [u8],
    query: Option<&'a [u8]>,
    fragment: bool,
}

impl<'a> UrlParts<'a> {
    fn of(rest: &'a [u8]) -> UrlParts<'a> {
        let hash = memchr::memchr(b'#', rest).unwrap_or(rest.len());
        let question = memchr::memchr(b'?', &rest[..hash]);
        let path_end = question.unwrap_or(hash);
        let slash = memchr::memchr(b'/', &rest[..path_end]);
        UrlParts {
            host: &rest[..slash.unwrap_or(path_end)],
            path: slash.map_or(&[][..], |at| &rest[at + 1..path_end]),
            query: question.map(|at| &rest[at + 1..hash]),
            fragment: hash < rest.len(),
        }
    }
}

/// Host prefixes of a site's mobile or AMP copy.
const VARIANT_HOSTS: &[&str] = &["m.", "mobile.", "amp.", "print."];

/// Path segments and query keys of a page's AMP, print or mobile view.
const VARIANT_PARTS: &[&str] = &["amp", "print", "printable", "mobile"];

/// Query keys that track where a visitor came from: the page is the same
/// without them. Keys starting `utm_` too.
const TRACKING_KEYS: &[&str] = &["fbclid", "gclid", "msclkid", "mc_cid", "mc_eid", "yclid"];

/// A directory's default page, the same page as the directory itself.
const INDEX_PAGES: &[&str] = &[
    "index.html",
    "index.htm",
    "index.php",
    "index.asp",
    "default.aspx",
    "default.asp",
    "default.htm",
];

/// Whether `part` is one of `names`, whatever its case.
fn is_one_of(part: &[u8], names: &[&str]) -> bool {
    names
        .iter()
        .any(|name| part.eq_ignore_ascii_case(name.as_bytes()))
}

/// A path's non-empty segments, and whether it names another view of a
/// page: a segment that is a [`VARIANT_PARTS`] name, or a last piece that
/// names a directory's default page ([`INDEX_PAGES`]).
fn path_segments(path: &[u8]) -> (usize, bool) {
    let (mut segments, mut variant, mut start, mut last) = (0, false, 0, &[][..]);
    for end in memchr::memchr_iter(b'/', path).chain([path.len()]) {
        last = &path[start..end];
        segments += usize::from(!last.is_empty());
        variant |= is_one_of(last, VARIANT_PARTS);
        start = end + 1;
    }
    (segments, variant || is_one_of(last, INDEX_PAGES))
}

/// Whether a host (after any `user@`) begins with a mobile or AMP prefix
/// that leaves a domain of two labels: `m.org` is a site.
fn variant_host(host: &[u8]) -> bool {
    let host = without_user(host);
    VARIANT_HOSTS.iter().any(|prefix| {
        host.len() >= prefix.len()
            && host[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
            && host[prefix.len()..].contains(&b'.')
    })
}

/// A URL's authority without the user name and password before an `@`.
fn without_user(host: &[u8]) -> &[u8] {
    match memchr::memrchr(b'@', host) {
        Some(at) => &host[at + 1..],
        None => host,
    }
}

/// Whether a scheme or host has capitals: both are read in any case, so
/// `HTTPS://DOCS.EXAMPLE/` is the page's address spelled otherwise than
/// its links and browsers spell it.
fn in_capitals(part: &[u8]) -> bool {
    part.iter().any(u8::is_ascii_uppercase)
}

/// [`in_capitals`] for a host, after any `user@`: an IPv6 address is
/// written in hex digits of either case.
fn host_in_capitals(host: &[u8]) -> bool {
    let host = without_user(host);
    host.first() != Some(&b'[') && in_capitals(host)
}

/// Whether a query has a key (before any `=`) that is a [`VARIANT_PARTS`]
/// name or tracks the visitor ([`TRACKING_KEYS`], `utm_...`).
fn variant_query(query: &[u8]) -> bool {
    query.split(|&byte| byte == b'&').any(|pair| {
        let key = pair.split(|&byte| byte == b'=').next().unwrap_or(&[]);
        is_one_of(key, VARIANT_PARTS) || is_tracking_key(key)
    })
}

fn is_tracking_key(key: &[u8]) -> bool {
    (key.len() > 4 && key[..4].eq_ignore_ascii_case(b"utm_")) || is_one_of(key, TRACKING_KEYS)
}

/// A key of `rel-canonical`: [`NAMES_ITSELF`] for a page whose canonical
/// link names itself (as URLs, whatever their fragments), [`NAMES_NONE`]
/// for one without a link, [`NAMES_ANOTHER`] for one whose link names
/// another page of its own site, [`NAMES_OTHER_SITE`] for one naming a
/// page of another site ([`same_site`]): the site says that page is the one
/// to keep, if the pages table lists it
/// ([`crate::cluster::keep_order::KeepOrder::named_word`] gives the final
/// word). A link from a page below a site's home to a home page (any
/// site's) is [`NAMES_HOME`]: if that home was crawled, the link is a
/// template's mistake (every page of the site naming its home), which
/// would lose each page to a copy naming nothing, and counts as none. A
/// view of the home page (`/index.html`, `/?utm_source=...`) naming it is
/// no such mistake.
pub(crate) fn rel_canonical_key(url: Option<&str>, canonical: Option<&str>) -> u32 {
    let Some(canonical) = canonical else {
        return NAMES_NONE;
    };
    if url.is_some_and(|url| same_page(url, canonical)) {
        return NAMES_ITSELF;
    }
    let below_home = |url: &str| path_of(url).is_some_and(|(path, _)| !is_home_path(path));
    let names_home = path_of(canonical).is_some_and(|(path, query)| path.is_empty() && !query);
    match (names_home && url.is_some_and(below_home), url) {
        (true, _) => NAMES_HOME,
        (false, Some(url)) if !same_site(url, canonical) => NAMES_OTHER_SITE,
        (false, _) => NAMES_ANOTHER,
    }
}

/// [`rel_canonical_key`]'s words, least first. A row naming another page
/// ([`NAMES_ANOTHER`], of its own site, [`NAMES_HOME`] or
/// [`NAMES_OTHER_SITE`]) has its final word once the pages table is read
/// ([`crate::cluster::keep_order::KeepOrder::named_word`]): a page never
/// crawled named by a page of its own site makes that page its site's own
/// copy ([`NAMES_ITSELF`]); named from another site, a copy there
/// (syndicated, or a scraper's that kept the link) ranks after the site's
/// own and before copies naming nothing ([`NAMES_ELSEWHERE`]); a page
/// crawled is deferred to ([`NAMES_ANOTHER`]).
pub(crate) const NAMES_ITSELF: u32 = 0;
pub(crate) const NAMES_ELSEWHERE: u32 = 1;
pub(crate) const NAMES_NONE: u32 = 2;
pub(crate) const NAMES_ANOTHER: u32 = 3;
pub(crate) const NAMES_HOME: u32 = 4;
pub(crate) const NAMES_OTHER_SITE: u32 = 5;
const _: () = assert!(NAMES_ITSELF < NAMES_ELSEWHERE && NAMES_ELSEWHERE < NAMES_NONE);
const _: () = assert!(NAMES_NONE < NAMES_ANOTHER);

/// Whether two absolute URLs are pages of one site: their hosts alike but
/// for case, a user, a port, and a leading `www.` or a mobile or AMP prefix
/// ([`VARIANT_HOSTS`]), as `amp.news.example` and `www.news.example` are.
/// A link without a scheme (a team's table may hold relative ones) is its
/// page's site.
fn same_site(url: &str, canonical: &str) -> bool {
    match (site_of(url), site_of(canonical)) {
        (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
        (_, None) => true,
        (None, Some(_)) => false,
    }
}

/// A URL's host as [`same_site`] compares it.
fn site_of(url: &str) -> Option<&[u8]> {
    let bytes = url.as_bytes();
    let host = without_user(UrlParts::of(&bytes[scheme_end(bytes)? + 3..]).host);
    let host = match memchr::memrchr(b':', host) {
        Some(colon) if !host.ends_with(b"]") => &host[..colon],
        _ => host,
    };
    let prefixes = std::iter::once("www.").chain(VARIANT_HOSTS.iter().copied());
    let bare = prefixes
        .filter(|prefix| host.len() > prefix.len())
        .find(|prefix| host[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes()))
        .map(|prefix| &host[prefix.len()..])
        .filter(|rest| rest.contains(&b'.'));
    Some(bare.unwrap_or(host))
}

/// A hash of the page a URL names: the same for two URLs exactly when
/// [`same_page`] says they name the same page (a plain URL is hashed as
/// the URL Standard writes it, without parsing), `scratch` holding the
/// text hashed.
pub(crate) fn page_hash(url: &str, scratch: &mut Vec<u8>) -> u64 {
    scratch.clear();
    match PlainUrl::of(url) {
        // Most URLs a crawl stores are so: hashed without a copy.
        Some(plain) if plain.as_written => return xxhash_rust::xxh3::xxh3_64(url.as_bytes()),
        Some(plain) => plain.write_parsed(scratch),
        None => match url::Url::parse(url) {
            Ok(mut parsed) => {
                parsed.set_fragment(None);
                scratch.extend_from_slice(escapes_normalized(parsed.as_str()).as_bytes());
            }
            // Text that does not parse is only ever the same page as itself;
            // a tag byte no URL starts with keeps it apart from one that does.
            Err(_) => {
                scratch.push(0);
                scratch.extend_from_slice(url.as_bytes());
            }
        },
    }
    xxhash_rust::xxh3::xxh3_64(scratch)
}

/// A URL's path (after the host's `/`) and whether it has a query; none
/// for a URL without a scheme.
fn path_of(url: &str) -> Option<(&[u8], bool)> {
    let bytes = url.as_bytes();
    let at = scheme_end(bytes)?;
    let parts = UrlParts::of(&bytes[at + 3..]);
    Some((parts.path, parts.query.is_some()))
}

/// Whether a path is a site's home: empty, or a directory's default page
/// ([`INDEX_PAGES`]) alone.
fn is_home_path(path: &[u8]) -> bool {
    path.is_empty() || is_one_of(path, INDEX_PAGES)
}

/// Whether two URLs name the same page: equal as the URL Standard parses
/// them, fragments aside and percent-escapes normalized
/// ([`escapes_normalized`]), or the same text where either does not parse.
/// The same text is the same page whether or not it parses, and two plain
/// http(s) URLs ([`PlainUrl`]) compare as they are: parsing costs far more,
/// and every page with a canonical link is compared.
fn same_page(url: &str, canonical: &str) -> bool {
    if url == canonical {
        return true;
    }
    match (PlainUrl::of(url), PlainUrl::of(canonical)) {
        (Some(a), Some(b)) => a.same_page(&b),
        _ => parsed_same_page(url, canonical),
    }
}

/// [`same_page`] by parsing both URLs.
fn parsed_same_page(url: &str, canonical: &str) -> bool {
    let page = |text: &str| {
        url::Url::parse(text).ok().map(|mut url| {
            url.set_fragment(None);
            url
        })
    };
    match (page(url), page(canonical)) {
        (Some(a), Some(b)) => {
            a == b || escapes_normalized(a.as_str()) == escapes_normalized(b.as_str())
        }
        _ => url == canonical,
    }
}

/// A URL with its percent-escapes as RFC 3986 (6.2.2) compares them: an
/// escaped letter, digit, `-`, `.`, `_` or `~` decoded, any other escape's
/// hex digits in capitals. The URL Standard keeps escapes as written, and
/// sites write a page's canonical link with escapes its crawled URL lacks
/// (`/%63` for `/c`) or in the other case (`%c3%a9` for `%C3%A9`).
fn escapes_normalized(url: &str) -> String {
    let bytes = url.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let escaped = bytes
            .get(at + 1..at + 3)
            .filter(|hex| bytes[at] == b'%' && hex.iter().all(u8::is_ascii_hexdigit));
        let hex_digit = |digit: u8| (digit as char).to_digit(16).unwrap_or(0) as u8;
        match escaped.map(|hex| hex_digit(hex[0]) << 4 | hex_digit(hex[1])) {
            Some(byte) if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) => {
                out.push(byte);
                at += 3;
            }
            Some(_) => {
                out.push(b'%');
                out.extend(bytes[at + 1..at + 3].iter().map(u8::to_ascii_uppercase));
                at += 3;
            }
            None => {
                out.push(bytes[at]);
                at += 1;
            }
        }
    }
    // Only ASCII was decoded, and every other byte kept: still UTF-8.
    String::from_utf8(out).expect("a URL with ASCII escapes decoded")
}

/// An http(s) URL that the URL Standard leaves as it is but for the case
/// of its scheme and host, and a `/` for an empty path: before any `#`,
/// only letters, digits and `-._~/?&=` (nothing to percent-encode or
/// decode, no port, user or dot segment); a host of letters, digits, `-`
/// and `.` whose last label starts with a letter (no IP address, no
/// trailing dot) and that has no `xn--` label (no IDNA to check).
struct PlainUrl<'a> {
    https: bool,
    host: &'a [u8],
    path: &'a [u8],
    query: Option<&'a [u8]>,
    /// Whether the text is already as the URL Standard writes it: scheme
    /// and host in small letters, a `/` after the host, no fragment.
    as_written: bool,
}

impl<'a> PlainUrl<'a> {
    fn of(url: &'a str) -> Option<PlainUrl<'a>> {
        let bytes = url.as_bytes();
        let starts = |prefix: &str| {
            bytes.len() >= prefix.len()
                && bytes[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
        };
        let (https, rest) = match () {
            _ if starts("https://") => (true, &bytes[8..]),
            _ if starts("http://") => (false, &bytes[7..]),
            _ => return None,
        };
        let parts = UrlParts::of(rest);
        // The host is held to fewer bytes below; the `/` and `?` between the
        // parts are plain. Every page's URL is read: a table says which
        // bytes are which, rather than a comparison per kind.
        let all = |part: &[u8], class: u8| {
            // No branch a byte, which the loop's unrolling rewards.
            let each = |ok, &byte: &u8| ok & BYTE_CLASSES[byte as usize];
            part.iter().fold(class, each) == class
        };
        if !all(parts.path, PLAIN) || !parts.query.is_none_or(|query| all(query, PLAIN)) {
            return None;
        }
        let host = parts.host;
        // The classes every byte of the host has, and those some byte has.
        let (every, some) = host.iter().fold((HOST, 0), |(every, some), &byte| {
            let classes = BYTE_CLASSES[byte as usize];
            (every & classes, some | classes)
        });
        let last_label = &host[memchr::memrchr(b'.', host).map_or(0, |at| at + 1)..];
        let host_plain = every == HOST
            && last_label.first().is_some_and(u8::is_ascii_alphabetic)
            && (some & DASH == 0
                || !host
                    .split(|&byte| byte == b'.')
                    .any(|label| label.len() >= 4 && label[..4].eq_ignore_ascii_case(b"xn--")));
        let path = parts.path;
        let dot_segment = (path.first() == Some(&b'.')
            || memchr::memmem::find(path, b"/.").is_some())
            && path
                .split(|&byte| byte == b'/')
                .any(|s| s == b"." || s == b"..");
        let scheme_len = bytes.len() - rest.len();
        let as_written = !parts.fragment
            && rest.get(host.len()) == Some(&b'/')
            && !in_capitals(&bytes[..scheme_len])
            && some & UPPER == 0;
        (host_plain && !dot_segment).then_some(PlainUrl {
            https,
            host,
            path: parts.path,
            query: parts.query,
            as_written,
        })
    }

    /// Writes the URL as the URL Standard serializes it, its fragment
    /// left out: every byte of a plain URL stands as it is, but for the
    /// scheme's and host's case and a `/` after the host.
    fn write_parsed(&self, out: &mut Vec<u8>) {
        let scheme: &[u8] = if self.https { b"https://" } else { b"http://" };
        out.extend_from_slice(scheme);
        out.extend(self.host.iter().map(u8::to_ascii_lowercase));
        out.push(b'/');
        out.extend_from_slice(self.path);
        if let Some(query) = self.query {
            out.push(b'?');
            out.extend_from_slice(query);
        }
    }

    fn same_page(&self, other: &PlainUrl<'_>) -> bool {
        self.https == other.https
            && self.host.eq_ignore_ascii_case(other.host)
            && self.path == other.path
            && self.query == other.query
    }
}

/// [`BYTE_CLASSES`]: a byte that stands in a [`PlainUrl`] as it is,
/// whatever its place; a byte of a plain host; a capital; a `-`.
const PLAIN: u8 = 1;
const HOST: u8 = 2;
const UPPER: u8 = 4;
const DASH: u8 = 8;

/// Each byte's classes: [`PLAIN`], [`HOST`], [`UPPER`], [`DASH`].
static BYTE_CLASSES: [u8; 256] = {
    let mut classes = [0; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        if b.is_ascii_alphanumeric() {
            classes[byte] = PLAIN | HOST;
        }
        byte += 1;
    }
    let mut at = 0;
    let marks = b"-._~/?&=";
    while at < marks.len() {
        classes[marks[at] as usize] |= PLAIN;
        at += 1;
    }
    classes[b'-' as usize] |= HOST | DASH;
    classes[b'.' as usize] |= HOST;
    let mut capital = b'A';
    while capital <= b'Z' {
        classes[capital as usize] |= UPPER;
        capital += 1;
    }
    classes
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::components::mix;
    use crate::cluster::keep_order::NO_VALUE;

    #[test]
    fn plain_urls_compare_and_hash_as_the_url_standard_parses_them() {
        // Pairs of URLs made of pieces, plain and not (ports, users, IP
        // addresses, IDNA, dot segments, escapes, spaces), each beside a
        // respelling of itself or another URL.
        let starts = [
            "http://", "https://", "HTTP://", "HtTpS://", "ftp://", "http:/", "",
        ];
        let hosts = [
            "a.org",
            "A.ORG",
            "www.a.org",
            "m.a.org",
            "a..org",
            ".a.org",
            "a.org.",
            "a-b.org",
            "-a.org",
            "127.0.0.1",
            "127.1",
            "0x7f.1",
            "a.123",
            "a.0x1",
            "xn--nxasmq6b.org",
            "XN--a.org",
            "a.xn--zz",
            "a.org:80",
            "a.org:443",
            "u@a.org",
            "a%2Eorg",
            "é.org",
            "localhost",
            "1a.org",
            "a.b1",
            "",
        ];
        let paths = [
            "",
            "/",
            "/x",
            "/X",
            "//x",
            "/x/",
            "/./x",
            "/x/..",
            "/x/../y",
            "/%2e/x",
            "/%7Eu",
            "/%63%316",
            "/c16",
            "/%c3%a9",
            "/%C3%A9",
            "/%2F",
            "/a b",
            "/~u",
            "/a-b_c.d",
            "/x;y",
            "/x\\y",
            "/x\ty",
            "/é",
            "/.well-known",
        ];
        let queries = ["", "?", "?a=1", "?a=1&b", "?a b", "?'", "?a=/../"];
        let fragments = ["", "#", "#top", "#a b"];
        let mut state = 11i64;
        let mut pick = |options: &[&'static str]| {
            state = mix(state) as i64;
            options[(state as u64 % options.len() as u64) as usize]
        };
        let mut plain = 0;
        let mut scratch = Vec::new();
        for _ in 0..300_000 {
            let url = [
                pick(&starts),
                pick(&hosts),
                pick(&paths),
                pick(&queries),
                pick(&fragments),
            ];
            let other = match pick(&["case", "fragment", "slash", "other"]) {
                "case" => [pick(&starts), pick(&hosts), url[2], url[3], url[4]],
                "fragment" => [url[0], url[1], url[2], url[3], pick(&fragments)],
                "slash" => [url[0], url[1], pick(&["", "/"]), url[3], url[4]],
                _ => [
                    pick(&starts),
                    pick(&hosts),
                    pick(&paths),
                    pick(&queries),
                    pick(&fragments),
                ],
            };
            let (a, b) = (url.concat(), other.concat());
            plain += usize::from(PlainUrl::of(&a).is_some() && PlainUrl::of(&b).is_some());
            let same = same_page(&a, &b);
            assert_eq!(same, parsed_same_page(&a, &b), "{a:?} {b:?}");
            let mut hash = |url| page_hash(url, &mut scratch);
            assert_eq!(same, hash(&a) == hash(&b), "{a:?} {b:?}");
        }
        assert!(
            plain > 10_000,
            "only {plain} pairs were compared as plain URLs"
        );
    }

    #[test]
    fn a_canonical_link_names_its_page_whatever_escapes_either_writes() {
        let names_itself = |url, canonical| rel_canonical_key(Some(url), Some(canonical)) == 0;
        for (url, canonical) in [
            ("https://a.org/c16", "https://a.org/%63%316"),
            ("https://a.org/%7Eu/x", "https://a.org/~u/x"),
            ("https://a.org/caf%C3%A9", "https://a.org/caf%c3%a9"),
            ("https://a.org/café", "https://a.org/caf%c3%a9"),
            ("https://a.org/p?q=%41%2f", "https://a.org/p?q=A%2F"),
        ] {
            assert!(names_itself(url, canonical), "{url} {canonical}");
            assert!(names_itself(canonical, url), "{canonical} {url}");
        }
        // An escaped `/`, `?` or `%` is no plain one: another page.
        for (url, canonical) in [
            ("https://a.org/x/y", "https://a.org/x%2Fy"),
            ("https://a.org/x?y", "https://a.org/x%3Fy"),
            ("https://a.org/%25", "https://a.org/%2525"),
            ("https://a.org/%6", "https://a.org/%06"),
            ("https://a.org/x%+Ay", "https://a.org/x%0Ay"),
        ] {
            assert!(!names_itself(url, canonical), "{url} {canonical}");
        }
    }

    #[test]
    fn canonical_urls_rank_by_variant_then_scheme_then_query_then_segments_then_length() {
        let ranked = [
            "https://a.org/x/y",
            "https://a.org/x/yy",
            "https://a.org/x/y/z",
            "https://a.org/x/y/z/",
            "https://a.org/?s=1",
            "http://a.org/",
            "ftp://a.org/",
            "a.org/x",
            "https://m.a.org/x",
            "https://a.org/x#comments",
            "https://a.org/amp/x",
            "https://a.org/x/index.html",
            "https://a.org/x?print=1",
            "http://a.org/x?utm_source=feed",
        ];
        let keys: Vec<u32> = ranked.iter().map(|url| canonical_url_key(url)).collect();
        assert!(keys.windows(2).all(|w| w[0] <= w[1]), "{keys:?}");
        assert!(canonical_url_key("https://a.org/x/y") < canonical_url_key("https://a.org/x/y/z"));
        // Each view of a page comes after the page's own URL.
        for (page, view) in [
            ("https://www.a.org/news/story", "https://m.a.org/news/story"),
            ("https://a.org/news/story", "https://a.org/news/story/amp"),
            ("https://a.org/news/story", "https://a.org/print/news/story"),
            ("https://a.org/news/", "https://a.org/news/index.html"),
            ("https://a.org/news/", "https://a.org/news/Default.aspx"),
            ("https://a.org/story", "https://a.org/story#history"),
            ("https://a.org/p?id=5", "https://a.org/p?id=5&print=1"),
            ("https://a.org/p?id=5", "https://a.org/p?amp&id=5"),
            (
                "http://a.org/x",
                "https://a.org/x?utm_source=hn&utm_medium=link",
            ),
            ("http://a.org/x", "https://a.org/print/x"),
            ("https://a.org/p?id=5", "https://a.org/p?id=5&fbclid=Iw1"),
            ("https://docs.a.org/Install", "https://DOCS.A.ORG/Install"),
            ("https://a.org/x", "HTTPS://a.org/x"),
            ("https://u:P@a.org/x", "https://u:p@A.org/x"),
            ("https://[2001:DB8::1]/x", "https://[2001:DB8::1]/x#a"),
        ] {
            assert!(
                canonical_url_key(page) < canonical_url_key(view),
                "{page} {view}"
            );
        }
        // Names that merely begin like a view are no views.
        for page in [
            "https://mail.a.org/x",
            "https://a.org/amplifiers/x",
            "https://a.org/printers",
            "https://a.org/x?printer=1",
            "https://a.org/x?utm_=1&utm",
            "https://a.org/x?gclid_x=1",
            "https://m.org/x",
        ] {
            assert_eq!(canonical_url_key(page) >> 31, 0, "{page}");
        }
        // A trailing slash or a fragment adds no segment; a scheme in
        // capitals is the same scheme.
        let segments = |url| canonical_url_key(url) >> 19 & 511;
        assert_eq!(segments("https://a.org/x/y/"), 2);
        assert_eq!(segments("HTTPS://a.org/x/y#z/w"), 2);
        assert_eq!(canonical_url_key("HTTPS://a.org/") >> 29 & 3, 0);
        assert!(canonical_url_key(&format!("https://a.org/{}", "x".repeat(1 << 20))) < NO_VALUE);
    }

    #[test]
    fn the_key_read_as_bytes_is_the_key_as_first_written_on_any_url() {
        // URLs made of the pieces the key looks for, in every order and
        // case, as an attacker or a broken crawler might write them.
        let pieces = [
            "https://",
            "HTTP://",
            "ftp://",
            "://",
            "m.",
            "Mobile.",
            "amp.",
            "print.",
            "a",
            "org",
            ".",
            "@",
            "/",
            "//",
            "?",
            "&",
            "=",
            "#",
            "amp",
            "PRINT",
            "printable",
            "mobile",
            "utm_",
            "gclid",
            "index.html",
            "Default.aspx",
            "index.htm",
            "é",
            "x",
            "%2F",
            ":",
            "[",
        ];
        let mut state = 7i64;
        for _ in 0..200_000 {
            state = mix(state) as i64;
            let mut url = String::new();
            let mut bits = state as u64;
            for _ in 0..(bits % 12) {
                bits = mix(bits as i64);
                url.push_str(pieces[(bits % pieces.len() as u64) as usize]);
            }
            assert_eq!(canonical_url_key(&url), reference_key(&url), "{url:?}");
        }
        for url in [
            "",
            "https://",
            "https://m.a",
            "http://u@m.a.org",
            "a/b?c#d?e/f",
            "?#/",
        ] {
            assert_eq!(canonical_url_key(url), reference_key(url), "{url:?}");
        }
    }

    /// `canonical_url_key` as it was first written, on `str`'s splits: the
    /// rule the key keeps, which the key read as bytes is checked against.
    fn reference_key(url: &str) -> u32 {
        let (scheme, rest) = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => (0, rest),
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => (1, rest),
            Some((_, rest)) => (2, rest),
            None => (2, url),
        };
        let (before_fragment, fragment) = match rest.split_once('#') {
            Some((before, _)) => (before, true),
            None => (rest, false),
        };
        let (address, query) = match before_fragment.split_once('?') {
            Some((address, query)) => (address, Some(query)),
            None => (before_fragment, None),
        };
        let (host, path) = address.split_once('/').unwrap_or((address, ""));
        let scheme_capitals = url
            .split_once("://")
            .is_some_and(|(scheme, _)| scheme.chars().any(|c| c.is_ascii_uppercase()));
        let bare_host = host.rsplit_once('@').map_or(host, |(_, host)| host);
        let host_capitals =
            !bare_host.starts_with('[') && bare_host.chars().any(|c| c.is_ascii_uppercase());
        let variant = fragment
            || scheme_capitals
            || host_capitals
            || is_variant_ref(host, path, query.unwrap_or(""));
        let segments = path.split('/').filter(|s| !s.is_empty()).count().min(511) as u32;
        let length = url.len().min((1 << 19) - 1) as u32;
        (variant as u32) << 31
            | scheme << 29
            | (query.is_some() as u32) << 28
            | segments << 19
            | length
    }

    fn is_variant_ref(host: &str, path: &str, query: &str) -> bool {
        let host = host.rsplit_once('@').map_or(host, |(_, host)| host);
        let is = |part: &str, names: &[&str]| names.iter().any(|n| part.eq_ignore_ascii_case(n));
        // The prefix must leave a domain of two labels: `m.org` is a site.
        let variant_host = VARIANT_HOSTS.iter().any(|prefix| {
            let (start, rest) = host.split_at_checked(prefix.len()).unwrap_or(("", ""));
            start.eq_ignore_ascii_case(prefix) && rest.contains('.')
        });
        let mut segments = path.split('/').filter(|s| !s.is_empty());
        let last = path.rsplit('/').next().unwrap_or("");
        let mut query_keys = query
            .split('&')
            .map(|pair| pair.split('=').next().unwrap_or(""));
        variant_host
            || segments.any(|segment| is(segment, VARIANT_PARTS))
            || is(last, INDEX_PAGES)
            || query_keys.any(|key| {
                is(key, VARIANT_PARTS)
                    || is(key, TRACKING_KEYS)
                    || key
                        .get(..4)
                        .is_some_and(|start| start.eq_ignore_ascii_case("utm_"))
                        && key.len() > 4
            })
    }
}
