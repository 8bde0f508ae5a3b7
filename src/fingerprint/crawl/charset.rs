//! The text of an HTML response's bytes, in whatever character encoding the
//! site served it.
//!
//! A crawl holds pages in GBK, Shift_JIS, EUC-KR, windows-1251 and
//! windows-1252 beside UTF-8. Read as UTF-8, such a page is either
//! invalid (and was dropped as a bad record) or, decoded leniently, a run
//! of replacement characters that every page of its site would share. So
//! the bytes are decoded the way a browser would render them, with one
//! change that keeps every fingerprint already computed:
//!
//! 1. bytes that are valid UTF-8 are UTF-8, whatever the page declares (a
//!    page labelled `iso-8859-1` that is valid UTF-8 is nearly always
//!    mislabelled UTF-8: valid UTF-8 by accident is rare in other
//!    encodings), and so is UTF-8 cut short inside its last character
//!    (Common Crawl truncates records at 1 MiB);
//! 2. a byte order mark names the encoding (UTF-16);
//! 3. the charset the HTTP `Content-Type` header declares, else a `<meta>`
//!    in the first 1,024 bytes (the HTML standard's prescan); a page that
//!    declares UTF-8 but is not is UTF-8 with replacement characters, as
//!    browsers show it;
//! 4. a page that declares nothing is guessed by chardetng (Firefox's
//!    detector), told the URL's top-level domain.
//!
//! Labels are the Encoding Standard's (encoding_rs): `iso-8859-1` and
//! `ascii` mean windows-1252, `gb2312` means GBK, and so on.
//!
//! The guess reads a sample, not the page: its first 512 bytes that are
//! not ASCII, with 16 bytes either side of each (chardetng reads every byte
//! with every candidate). `_summary.json` counts the pages decoded from
//! each encoding but UTF-8 (`charsets`, by the Encoding Standard's name)
//! and those guessed (`charset_guesses`), in all and per file.

use std::borrow::Cow;

use chardetng::EncodingDetector;
use encoding_rs::{Encoding, REPLACEMENT, UTF_16BE, UTF_16LE, UTF_8, WINDOWS_1252, X_USER_DEFINED};
use html5gum::Token;

use super::html::tokens;

/// How far the `<meta>` prescan looks, as the HTML standard's does.
const PRESCAN_BYTES: usize = 1024;

/// Bytes that are not ASCII a guess is made from, at most, and the bytes
/// taken either side of each.
const GUESS_FROM: usize = 512;
const GUESS_CONTEXT: usize = 16;

/// The encoding a page's bytes were decoded from, when it was not UTF-8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Charset {
    pub(crate) encoding: &'static Encoding,
    /// Guessed from the bytes: the page declared no encoding.
    pub(crate) guessed: bool,
}

impl Charset {
    /// The encoding's name in the Encoding Standard (`GBK`, `Shift_JIS`).
    pub(crate) fn name(&self) -> &'static str {
        self.encoding.name()
    }
}

/// The text of an HTML `payload` served with the `Content-Type` value
/// `content_type` from `url`, and the encoding it was decoded from if that
/// was not UTF-8.
pub(crate) fn decode_html<'a>(
    payload: &'a [u8],
    content_type: Option<&[u8]>,
    url: Option<&str>,
) -> (Cow<'a, str>, Option<Charset>) {
    let error = match std::str::from_utf8(payload) {
        Ok(text) => return (Cow::Borrowed(text), None),
        Err(error) => error,
    };
    if error.error_len().is_none() {
        // Valid up to a last character cut short.
        let valid = &payload[..error.valid_up_to()];
        return (
            Cow::Borrowed(std::str::from_utf8(valid).unwrap_or_default()),
            None,
        );
    }
    if let Some((encoding, bom)) = Encoding::for_bom(payload) {
        return decoded(&payload[bom..], encoding, false);
    }
    let declared = content_type
        .and_then(charset_parameter)
        .and_then(Encoding::for_label)
        .or_else(|| meta_charset(payload));
    match declared {
        Some(encoding) if encoding != REPLACEMENT => decoded(payload, encoding, false),
        _ => decoded(payload, guess(payload, url), true),
    }
}

fn decoded<'a>(
    bytes: &'a [u8],
    encoding: &'static Encoding,
    guessed: bool,
) -> (Cow<'a, str>, Option<Charset>) {
    let (text, _had_errors) = encoding.decode_without_bom_handling(bytes);
    let charset = (encoding != UTF_8).then_some(Charset { encoding, guessed });
    (text, charset)
}

/// chardetng's guess for bytes that are not UTF-8, from their first
/// [`GUESS_FROM`] bytes that are not ASCII and the bytes beside them.
///
/// chardetng reads every byte with each of its candidates, ASCII too: fed
/// whole pages (real ones are mostly ASCII markup), it would keep the reader
/// that feeds every worker busy guessing. Fed this sample, it guesses as well
/// on every page of `scripts/eval_charsets.py`. The sample may end inside a
/// character, so it is not fed as the last bytes, where a character cut short
/// counts against an encoding (fed so, short samples of EUC-JP pages were
/// guessed as Shift_JIS).
fn guess(bytes: &[u8], url: Option<&str>) -> &'static Encoding {
    let mut detector = EncodingDetector::new();
    detector.feed(&around_non_ascii(bytes), false);
    let tld = url.and_then(top_level_domain);
    detector.guess(tld.as_deref().map(str::as_bytes), false)
}

/// The first [`GUESS_FROM`] bytes that are not ASCII, each with the
/// [`GUESS_CONTEXT`] bytes either side of it; bytes apart are joined by a
/// space, so no letters meet that did not. No character is cut but the
/// last: a trail byte (in Shift_JIS or GBK it may look like an ASCII
/// letter) is next to its lead, which is not ASCII, and a piece starts
/// after a byte that is ASCII and so is no lead.
fn around_non_ascii(bytes: &[u8]) -> Vec<u8> {
    let mut sample = Vec::new();
    let mut kept_to = 0;
    let non_ascii = bytes.iter().enumerate().filter(|(_, &b)| b >= 0x80);
    for (at, _) in non_ascii.take(GUESS_FROM) {
        let from = at.saturating_sub(GUESS_CONTEXT).max(kept_to);
        if from > kept_to && !sample.is_empty() {
            sample.push(b' ');
        }
        let to = (at + GUESS_CONTEXT + 1).min(bytes.len());
        sample.extend_from_slice(&bytes[from..to]);
        kept_to = to;
    }
    sample
}

/// The last label of the URL's host, lower case, as chardetng takes it
/// (it panics on anything but a lower-case ASCII label without dots).
fn top_level_domain(url: &str) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    let Some(url::Host::Domain(host)) = url.host() else {
        return None;
    };
    let label = host
        .trim_end_matches('.')
        .rsplit('.')
        .next()?
        .to_ascii_lowercase();
    let plain = !label.is_empty()
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-');
    plain.then_some(label)
}

/// The value of the first `Content-Type` line of an HTTP header block,
/// trimmed: what says whether a response is HTML, and in which charset.
pub(crate) fn content_type(http_headers: &[u8]) -> Option<&[u8]> {
    http_headers.split(|&b| b == b'\n').find_map(|line| {
        let colon = line.iter().position(|&b| b == b':')?;
        let name = line[..colon].trim_ascii();
        name.eq_ignore_ascii_case(b"content-type")
            .then(|| line[colon + 1..].trim_ascii())
    })
}

/// The encoding a `<meta>` in the first [`PRESCAN_BYTES`] declares:
/// `<meta charset=...>`, or `<meta http-equiv="content-type"
/// content="...; charset=...">`. As the standard's prescan says, a UTF-16
/// label there means UTF-8 (the page could not have been read so far if it
/// were UTF-16) and `x-user-defined` means windows-1252.
fn meta_charset(payload: &[u8]) -> Option<&'static Encoding> {
    let head = &payload[..payload.len().min(PRESCAN_BYTES)];
    let label = tokens(head).find_map(|token| match token {
        Token::StartTag(tag) if tag.name.eq_ignore_ascii_case(b"meta") => {
            let attribute = |name: &[u8]| tag.attributes.get(name).map(|v| v.value.to_vec());
            attribute(b"charset").or_else(|| {
                let equiv = attribute(b"http-equiv")?;
                equiv
                    .trim_ascii()
                    .eq_ignore_ascii_case(b"content-type")
                    .then_some(())?;
                charset_parameter(&attribute(b"content")?).map(<[u8]>::to_vec)
            })
        }
        _ => None,
    })?;
    let encoding = Encoding::for_label(&label)?;
    Some(match encoding {
        e if e == UTF_16BE || e == UTF_16LE => UTF_8,
        e if e == X_USER_DEFINED => WINDOWS_1252,
        e => e,
    })
}

/// The value after the first `charset` followed by `=` in a `Content-Type`
/// value, unquoted: the standard's "extracting a character encoding from a
/// meta element", which also reads HTTP headers as browsers do.
fn charset_parameter(value: &[u8]) -> Option<&[u8]> {
    let mut rest = value;
    loop {
        let at = find_ignoring_case(rest, b"charset")?;
        rest = rest[at + b"charset".len()..].trim_ascii_start();
        if let Some(after) = rest.strip_prefix(b"=") {
            rest = after.trim_ascii_start();
            break;
        }
    }
    match rest.first() {
        Some(&quote @ (b'"' | b'\'')) => {
            let end = rest[1..].iter().position(|&b| b == quote)?;
            Some(&rest[1..1 + end])
        }
        Some(_) => {
            let end = rest
                .iter()
                .position(|&b| b == b';' || b.is_ascii_whitespace())
                .unwrap_or(rest.len());
            Some(&rest[..end])
        }
        None => None,
    }
}

fn find_ignoring_case(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHINESE: &str =
        "近似重复的网页检测是搜索引擎的重要问题，镜像站点和转载文章都会产生大量重复内容。";
    const JAPANESE: &str = "ウェブページの重複検出は検索エンジンにとって重要な問題です。";
    const RUSSIAN: &str = "Обнаружение почти одинаковых веб-страниц важно для поисковых систем.";
    const SPANISH: &str =
        "La detección de páginas casi idénticas es un problema clásico del rastreo.";

    fn encoded(text: &str, encoding: &'static Encoding) -> Vec<u8> {
        let (bytes, _, unmappable) = encoding.encode(text);
        assert!(!unmappable, "{} cannot encode the sample", encoding.name());
        bytes.into_owned()
    }

    fn page(body: &str) -> String {
        format!("<html><head><title>t</title></head><body><p>{body}</p></body></html>")
    }

    fn served_as(content_type: &str) -> Option<&[u8]> {
        Some(content_type.as_bytes())
    }

    #[test]
    fn utf8_is_kept_whatever_the_page_declares() {
        let html = page(SPANISH);
        let (text, charset) = decode_html(
            html.as_bytes(),
            served_as("text/html; charset=iso-8859-1"),
            None,
        );
        assert!(matches!(text, Cow::Borrowed(_)));
        assert_eq!((text.as_ref(), charset), (html.as_str(), None));
    }

    #[test]
    fn utf8_cut_inside_its_last_character_is_utf8() {
        let html = page(CHINESE);
        let cut = &html.as_bytes()[..html.find('的').unwrap() + 2];
        let (text, charset) = decode_html(cut, served_as("text/html"), None);
        assert_eq!(charset, None);
        assert_eq!(text, html[..html.find('的').unwrap()]);
    }

    #[test]
    fn the_http_header_declares_the_encoding() {
        for (sample, encoding, label) in [
            (CHINESE, encoding_rs::GBK, "gb2312"),
            (JAPANESE, encoding_rs::SHIFT_JIS, "Shift_JIS"),
            (JAPANESE, encoding_rs::EUC_JP, "\"euc-jp\""),
            (RUSSIAN, encoding_rs::WINDOWS_1251, "windows-1251"),
            (SPANISH, WINDOWS_1252, "ISO-8859-1"),
        ] {
            let html = page(sample);
            let bytes = encoded(&html, encoding);
            let content_type = format!("text/html;charset = {label}");
            let (text, charset) = decode_html(&bytes, served_as(&content_type), None);
            assert_eq!(text, html, "{label}");
            assert_eq!(
                charset,
                Some(Charset {
                    encoding,
                    guessed: false
                }),
                "{label}"
            );
        }
    }

    #[test]
    fn a_meta_element_declares_the_encoding() {
        let metas = [
            "<meta charset=\"euc-kr\">",
            "<META http-equiv=\"Content-Type\" content=\"text/html; charset=EUC-KR\">",
            "<meta content='text/html;charset=euc-kr' http-equiv='content-type'>",
        ];
        for meta in metas {
            let html = format!("<!DOCTYPE html><html><head>{meta}</head><body>한국어 웹 페이지의 중복 검출</body></html>");
            let bytes = encoded(&html, encoding_rs::EUC_KR);
            let (text, charset) = decode_html(&bytes, served_as("text/html"), None);
            assert_eq!(text, html, "{meta}");
            let expected = Charset {
                encoding: encoding_rs::EUC_KR,
                guessed: false,
            };
            assert_eq!(charset, Some(expected), "{meta}");
        }
    }

    #[test]
    fn the_header_comes_before_a_meta_element() {
        let html = format!(
            "<html><head><meta charset=\"windows-1252\"></head><body>{RUSSIAN}</body></html>"
        );
        let bytes = encoded(&html, encoding_rs::WINDOWS_1251);
        let (text, _) = decode_html(&bytes, served_as("text/html; charset=windows-1251"), None);
        assert_eq!(text, html);
    }

    #[test]
    fn a_meta_element_past_the_prescan_is_not_read() {
        let padding = " ".repeat(PRESCAN_BYTES);
        let html = format!(
            "<html><head>{padding}<meta charset=\"koi8-r\"></head><body>{RUSSIAN}</body></html>"
        );
        assert_eq!(meta_charset(&encoded(&html, encoding_rs::KOI8_R)), None);
        let early = html.replacen(&padding, "", 1);
        assert_eq!(
            meta_charset(&encoded(&early, encoding_rs::KOI8_R)),
            Some(encoding_rs::KOI8_R)
        );
    }

    #[test]
    fn undeclared_pages_are_guessed_with_the_domain() {
        for (sample, encoding, url) in [
            (CHINESE, encoding_rs::GBK, "http://news.example.cn/a"),
            (JAPANESE, encoding_rs::SHIFT_JIS, "http://www.example.jp/a"),
            (RUSSIAN, encoding_rs::WINDOWS_1251, "http://example.ru/a"),
            (SPANISH, WINDOWS_1252, "http://example.es/a"),
        ] {
            let html = page(&[sample; 4].join(" "));
            let bytes = encoded(&html, encoding);
            let (text, charset) = decode_html(&bytes, served_as("text/html"), Some(url));
            assert_eq!(text, html, "{url}");
            assert_eq!(
                charset,
                Some(Charset {
                    encoding,
                    guessed: true
                }),
                "{url}"
            );
        }
    }

    #[test]
    fn the_guess_reads_whole_characters_and_a_bounded_sample() {
        // Shift_JIS trail bytes may be ASCII letters: a sample cut after
        // the ASCII beside a run must not end inside a character.
        let gap = "y".repeat(5_000);
        for pad in 0..40 {
            let text = format!("{}{JAPANESE} {gap} {JAPANESE}{JAPANESE}", "x".repeat(pad));
            let bytes = encoded(&text, encoding_rs::SHIFT_JIS);
            let sample = around_non_ascii(&bytes);
            let decoded =
                encoding_rs::SHIFT_JIS.decode_without_bom_handling_and_without_replacement(&sample);
            assert!(
                decoded.is_some(),
                "pad {pad}: {}",
                String::from_utf8_lossy(&sample)
            );
            assert!(
                sample.len() < bytes.len() - 4_000,
                "pad {pad}: the gap was sampled"
            );
        }
        let long = encoded(&CHINESE.repeat(100), encoding_rs::GBK);
        let sample = around_non_ascii(&long);
        assert!(
            sample.len() < 2 * GUESS_FROM,
            "{} bytes sampled",
            sample.len()
        );
    }

    #[test]
    fn utf16_is_known_by_its_byte_order_mark() {
        let html = page(JAPANESE);
        let mut bytes = vec![0xFF, 0xFE];
        bytes.extend(html.encode_utf16().flat_map(u16::to_le_bytes));
        let (text, charset) = decode_html(&bytes, served_as("text/html; charset=utf-8"), None);
        assert_eq!(text, html);
        assert_eq!(
            charset,
            Some(Charset {
                encoding: UTF_16LE,
                guessed: false
            })
        );
    }

    #[test]
    fn invalid_utf8_that_declares_utf8_keeps_its_valid_text() {
        let bytes = b"<p>caf\xe9 cr\xc3\xa8me</p>";
        let (text, charset) = decode_html(bytes, served_as("text/html; charset=UTF-8"), None);
        assert_eq!((text.as_ref(), charset), ("<p>caf\u{FFFD} crème</p>", None));
    }

    #[test]
    fn charset_parameters_are_read_as_browsers_read_them() {
        let cases: [(&[u8], Option<&[u8]>); 7] = [
            (b"text/html; charset=gbk", Some(b"gbk")),
            (b"text/html;CHARSET=\"Big5\"; q=1", Some(b"Big5")),
            (b"text/html; charset='koi8-r'", Some(b"koi8-r")),
            (b"text/html; charset = utf-8 ", Some(b"utf-8")),
            (b"text/html; charsetx; charset=sjis", Some(b"sjis")),
            (b"text/html; charset=\"unclosed", None),
            (b"text/html", None),
        ];
        for (value, expected) in cases {
            assert_eq!(
                charset_parameter(value),
                expected,
                "{}",
                String::from_utf8_lossy(value)
            );
        }
    }

    #[test]
    fn the_content_type_is_the_first_such_header_whatever_its_case() {
        let cases: [(&[u8], Option<&[u8]>); 4] = [
            (
                b"HTTP/1.1 200 OK\r\nServer: x\r\nContent-Type: text/html; charset=gbk\r\n",
                Some(b"text/html; charset=gbk"),
            ),
            (
                b"HTTP/1.1 200 OK\r\ncontent-TYPE :text/html",
                Some(b"text/html"),
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Type: text/html",
                Some(b"text/plain"),
            ),
            (b"HTTP/1.1 200 OK\r\nX-Content-Type-Options: nosniff", None),
        ];
        for (headers, expected) in cases {
            assert_eq!(
                content_type(headers),
                expected,
                "{}",
                String::from_utf8_lossy(headers)
            );
        }
    }

    #[test]
    fn top_level_domains_are_plain_lower_case_labels() {
        assert_eq!(
            top_level_domain("http://WWW.Example.JP./x").as_deref(),
            Some("jp")
        );
        assert_eq!(
            top_level_domain("https://例え.テスト/").as_deref(),
            Some("xn--zckzah")
        );
        assert_eq!(top_level_domain("http://127.0.0.1/"), None);
        assert_eq!(top_level_domain("not a url"), None);
    }
}
