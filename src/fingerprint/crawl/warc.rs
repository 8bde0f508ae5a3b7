//! WARC and WET files, plain or gzipped (one gzip member per record, as
//! Common Crawl writes them, or the whole file in one member).
//!
//! The record grammar is the `warc` crate's parser; this module adds what a
//! crawl job needs around it: streaming, gzip members decoded one at a time,
//! and recovery. A gzip member that does not decode is reported at its offset
//! and reading resumes at the next gzip member header; a record that does not
//! parse is reported and reading resumes at the next `WARC/` version line.
//!
//! A member the file ends inside (a truncated file) keeps the records it
//! decoded to whole before the end, read as any others but without a range:
//! a file gzipped whole and cut short keeps every record before the cut, as
//! the same file plain or gzipped per record does, and the cut is its one
//! bad record. Its bytes are not searched for another member, as nothing
//! follows it: a whole file's compressed bytes may hold the gzip magic
//! number by chance. A member damaged otherwise is lost whole: its decoder
//! may have turned the damage into wrong bytes before it noticed.
//!
//! Each document records its `WARC-Date` (null when missing or not RFC
//! 3339) and, where one range of the file holds its record alone, that
//! range ([`Span`]): in a file of one gzip member per record, the member,
//! whose compressed length both decoders report as they finish it (no
//! second pass); in a plain file, the bytes the record parser took, from
//! the `WARC/` line through the closing `\r\n\r\n`. A member holding
//! several records (a whole file in one member) gives none: no range of
//! it decompresses to one record alone.
//!
//! The body of an HTML `response` record is decoded (its HTTP transfer and
//! content codings undone) when the scheme says so: see [`super::http`].

use std::borrow::Cow;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::ptr::NonNull;

use anyhow::{Context, Result};
use flate2::bufread::GzDecoder;

use super::charset::{content_type, decode_html};
use super::http::{decode_body, HttpBodies};
use super::timestamp::parse_rfc3339;
use super::{url_id, BadRecord, Document, Record, Span};
use crate::io::storage::{is_read_failure, InputReader, Location};

const GZIP_MAGIC: [u8; 3] = [0x1f, 0x8b, 0x08];
/// Bytes read at a time from a plain file.
const CHUNK: usize = 1 << 20;

/// Reads every record of a WARC or WET file, HTTP response bodies as
/// `http` says.
pub fn read(
    path: &Location,
    http: HttpBodies,
    sink: &mut dyn FnMut(Record, u64) -> Result<()>,
) -> Result<()> {
    let mut input = BufReader::with_capacity(CHUNK, path.reader()?);
    let gzipped = input
        .fill_buf()
        .with_context(|| format!("{path}: cannot read"))?
        .starts_with(&GZIP_MAGIC[..2]);
    if gzipped {
        read_members(&mut input, http, sink).with_context(|| format!("{path}: cannot read"))
    } else {
        parse_stream(Some(&mut input), &mut Vec::new(), 0, None, http, sink)
            .with_context(|| format!("{path}: cannot read"))
    }
}

/// The first record of `bytes`, one record's span of a WARC or WET file
/// as a shard's `offset` and `length` give it: a gzip member, or the
/// record's plain bytes. HTTP bodies are read as [`read`] reads them.
pub(crate) fn record_in(bytes: &[u8], http: HttpBodies) -> Result<Record> {
    let mut plain = Vec::new();
    match bytes.starts_with(&GZIP_MAGIC[..2]) {
        true => {
            GzDecoder::new(bytes)
                .read_to_end(&mut plain)
                .context("not a whole gzip member")?;
        }
        false => plain.extend_from_slice(bytes),
    }
    let mut first = None;
    parse_stream(None, &mut plain, 0, None, http, &mut |record, _| {
        first.get_or_insert(record);
        Ok(())
    })?;
    first.context("no WARC record there")
}

/// Decodes gzip members one after another; records are reported at their
/// member's offset.
///
/// A member that lies whole in the read buffer (a record each, in Common
/// Crawl's files: all but about one per buffer) is decoded in one call by
/// libdeflate; any other (one that runs past the buffer, a bad one, a whole
/// file in one member) by flate2's streaming decoder, which reports it as
/// before.
fn read_members(
    input: &mut BufReader<InputReader>,
    http: HttpBodies,
    sink: &mut dyn FnMut(Record, u64) -> Result<()>,
) -> Result<()> {
    // One buffer for every member (a record each, in Common Crawl's files).
    let mut decoded = Vec::new();
    let mut whole_members = WholeMembers::new();
    loop {
        if input.fill_buf()?.is_empty() {
            return Ok(());
        }
        let offset = input.stream_position()?;
        let whole = match whole_members.as_mut() {
            Some(members) => members.decode(input.fill_buf()?, &mut decoded),
            None => None,
        };
        if let Some(used) = whole {
            input.consume(used);
            let member = Span {
                offset,
                length: used as u64,
            };
            let end = offset + used as u64;
            parse_stream(None, &mut decoded, end, Some(member), http, sink)?;
            continue;
        }
        let mut decoder = GzDecoder::new(&mut *input);
        decoded.clear();
        match decoder.read_to_end(&mut decoded) {
            Ok(_) => {
                let end = input.stream_position()?;
                let member = Span {
                    offset,
                    length: end - offset,
                };
                parse_stream(None, &mut decoded, end, Some(member), http, sink)?;
            }
            // The file could not be read, not decoded: no record is bad.
            Err(error) if is_read_failure(&error) => return Err(error.into()),
            Err(error) => {
                let bad = BadRecord {
                    offset,
                    reason: format!("bad gzip member: {error}"),
                };
                let cut_by_the_end = error.kind() == std::io::ErrorKind::UnexpectedEof
                    && input.fill_buf()?.is_empty();
                if cut_by_the_end {
                    let end = input.stream_position()?;
                    parse_decoded_before_the_end(&mut decoded, offset, end, http, sink)?;
                    return sink(Record::Bad(bad), end);
                }
                input.seek(SeekFrom::Start(offset + 1))?;
                skip_to_gzip_member(input)?;
                sink(Record::Bad(bad), input.stream_position()?)?;
            }
        }
    }
}

/// Reads the records in `decoded`, what the member at `offset` decoded to
/// before the file ended inside it, each whole one as a record of a good
/// member but without a range (no range of the file decompresses to it).
/// The last, if it does not parse, is the part the end cut off: the
/// caller's bad record, not another.
fn parse_decoded_before_the_end(
    decoded: &mut Vec<u8>,
    offset: u64,
    end: u64,
    http: HttpBodies,
    sink: &mut dyn FnMut(Record, u64) -> Result<()>,
) -> Result<()> {
    let member = Span {
        offset,
        length: end - offset,
    };
    let mut held: Option<(Record, u64)> = None;
    parse_stream(
        None,
        decoded,
        end,
        Some(member),
        http,
        &mut |record, at| match held.replace((without_span(record), at)) {
            Some((before, at)) => sink(before, at),
            None => Ok(()),
        },
    )?;
    match held {
        Some((Record::Bad(_), _)) | None => Ok(()),
        Some((record, at)) => sink(record, at),
    }
}

/// `record` without the range of its document.
fn without_span(record: Record) -> Record {
    match record {
        Record::Document(document) => Record::Document(Document {
            span: None,
            ..document
        }),
        other => other,
    }
}

/// libdeflate's decompressor, for gzip members held whole in memory: it
/// decodes a member in one call, faster than flate2's streaming zlib-rs
/// (which keeps a window and state for input that may stop anywhere).
struct WholeMembers(NonNull<libdeflate_sys::libdeflate_decompressor>);

/// Output beyond which a member is left to the streaming decoder.
const MAX_WHOLE_OUTPUT: usize = 64 << 20;

impl WholeMembers {
    /// None if libdeflate cannot allocate its decompressor (then every
    /// member goes to the streaming decoder).
    fn new() -> Option<Self> {
        // SAFETY: allocates a decompressor (a few kB), or returns null.
        NonNull::new(unsafe { libdeflate_sys::libdeflate_alloc_decompressor() }).map(WholeMembers)
    }

    /// Decodes the gzip member at the start of `input` into `out` (which
    /// it replaces), checking its CRC and length, and returns the bytes of
    /// `input` it took; None if `input` does not hold a whole valid member
    /// or it decodes to more than [`MAX_WHOLE_OUTPUT`].
    fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Option<usize> {
        use libdeflate_sys::{
            libdeflate_gzip_decompress_ex,
            libdeflate_result_LIBDEFLATE_INSUFFICIENT_SPACE as INSUFFICIENT_SPACE,
            libdeflate_result_LIBDEFLATE_SUCCESS as SUCCESS,
        };
        out.clear();
        out.reserve(1 << 18);
        loop {
            let (mut used, mut written) = (0usize, 0usize);
            // SAFETY: the decompressor is ours alone (this struct is neither
            // Send nor Clone); libdeflate reads at most `input.len()` bytes of
            // `input`, writes at most `out.capacity()` bytes to `out`'s
            // buffer, and reports how many of each.
            let result = unsafe {
                libdeflate_gzip_decompress_ex(
                    self.0.as_ptr(),
                    input.as_ptr().cast(),
                    input.len(),
                    out.as_mut_ptr().cast(),
                    out.capacity(),
                    &mut used,
                    &mut written,
                )
            };
            match result {
                SUCCESS => {
                    // SAFETY: libdeflate wrote these `written` bytes, at most
                    // the capacity.
                    unsafe { out.set_len(written) };
                    return Some(used);
                }
                INSUFFICIENT_SPACE if out.capacity() < MAX_WHOLE_OUTPUT => {
                    out.reserve(2 * out.capacity());
                }
                _ => return None,
            }
        }
    }
}

impl Drop for WholeMembers {
    fn drop(&mut self) {
        // SAFETY: allocated by `new`, freed once.
        unsafe { libdeflate_sys::libdeflate_free_decompressor(self.0.as_ptr()) }
    }
}

/// Consumes bytes up to the next gzip member header (or the end).
fn skip_to_gzip_member(input: &mut BufReader<InputReader>) -> Result<()> {
    loop {
        let buf = input.fill_buf()?;
        if buf.len() < GZIP_MAGIC.len() {
            // A header may straddle the buffer's end: seeking drops the
            // buffer, and the next fill reads on from this very byte.
            let position = input.stream_position()?;
            input.seek(SeekFrom::Start(position))?;
            let refilled = input.fill_buf()?.len();
            if refilled < GZIP_MAGIC.len() {
                input.consume(refilled);
                return Ok(());
            }
            continue;
        }
        match find(buf, &GZIP_MAGIC) {
            Some(i) => {
                input.consume(i);
                return Ok(());
            }
            None => {
                let n = buf.len() - (GZIP_MAGIC.len() - 1);
                input.consume(n);
            }
        }
    }
}

/// Parses records from a stream of WARC bytes starting at file offset
/// `base`: those already in `buf`, then those read from `input` (`None` for
/// a gzip member, decoded whole into `buf`). `member` is the gzip member's
/// place in the file, whose offset is reported for every record of it;
/// `None` for a plain file, whose records are reported at their own offset.
fn parse_stream(
    mut input: Option<&mut dyn Read>,
    buf: &mut Vec<u8>,
    base: u64,
    member: Option<Span>,
    http: HttpBodies,
    sink: &mut dyn FnMut(Record, u64) -> Result<()>,
) -> Result<()> {
    let mut start = 0usize; // first unparsed byte of buf
    let mut consumed = 0u64; // stream bytes before buf[0]
    let mut eof = input.is_none();
    loop {
        let pending = &buf[start..];
        let offset_here = match member {
            Some(member) => member.offset,
            None => base + consumed + start as u64,
        };
        let progress = |parsed: usize| match member {
            Some(_) => base,
            None => base + consumed + parsed as u64,
        };
        if pending.iter().all(u8::is_ascii_whitespace) && eof {
            return Ok(());
        }
        match warc::parser::record(pending) {
            Ok((rest, (_version, headers, body))) => {
                let used = pending.len() - rest.len();
                let span = match member {
                    // The member is decoded whole: alone in it if first
                    // and followed by nothing.
                    Some(member) => {
                        (start == 0 && rest.iter().all(u8::is_ascii_whitespace)).then_some(member)
                    }
                    None => Some(Span {
                        offset: offset_here,
                        length: used as u64,
                    }),
                };
                let record = to_record(&headers, body, offset_here, span, http);
                start += used;
                sink(record, progress(start))?;
            }
            Err(nom::Err::Incomplete(_)) if !eof => {
                if start > 0 && start >= buf.len() / 2 {
                    consumed += start as u64;
                    buf.drain(..start);
                    start = 0;
                }
                eof = read_more(&mut input, buf)?;
            }
            Err(error) => {
                let reason = match error {
                    nom::Err::Incomplete(_) => "truncated record".to_string(),
                    _ => "malformed record header".to_string(),
                };
                // Skip past this record's version line, to the next one.
                let skip = next_version_line(&buf[start + 1..]).map(|i| i + 1);
                start = match skip {
                    Some(i) => start + i,
                    None if eof => buf.len(),
                    None => {
                        // Keep reading until the next version line shows up.
                        eof = read_more(&mut input, buf)?;
                        continue;
                    }
                };
                sink(
                    Record::Bad(BadRecord {
                        offset: offset_here,
                        reason,
                    }),
                    progress(start),
                )?;
            }
        }
    }
}

/// Appends up to [`CHUNK`] more bytes of `input` to `buf`; true at the end.
fn read_more(input: &mut Option<&mut dyn Read>, buf: &mut Vec<u8>) -> Result<bool> {
    let Some(input) = input else {
        return Ok(true);
    };
    let old = buf.len();
    buf.resize(old + CHUNK, 0);
    let n = loop {
        match input.read(&mut buf[old..]) {
            Ok(n) => break n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        }
    };
    buf.truncate(old + n);
    Ok(n == 0)
}

/// Offset of the next line that starts with `WARC/`.
fn next_version_line(bytes: &[u8]) -> Option<usize> {
    let needle = b"\nWARC/";
    bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|i| i + 1)
}

fn header<'a>(headers: &'a [(&str, &[u8])], name: &str) -> Option<&'a [u8]> {
    headers
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
        .map(|(_, value)| *value)
}

/// Turns a parsed record into a document: conversion records carry text,
/// response records an HTTP response whose HTML is decoded to UTF-8 and
/// kept as HTML, for the fingerprint to take its text (its body's content
/// encoding undone first if `http` says so).
fn to_record(
    headers: &[(&str, &[u8])],
    body: &[u8],
    offset: u64,
    span: Option<Span>,
    http: HttpBodies,
) -> Record {
    let kind = header(headers, "WARC-Type").unwrap_or_default();
    let url = header(headers, "WARC-Target-URI")
        .map(|u| String::from_utf8_lossy(u).trim().to_string())
        .filter(|u| !u.is_empty());
    let bad = |reason: &str| {
        Record::Bad(BadRecord {
            offset,
            reason: reason.to_string(),
        })
    };
    let mut header_canonicals = Vec::new();
    let (text, html, charset) = if kind.eq_ignore_ascii_case(b"conversion") {
        match std::str::from_utf8(body) {
            Ok(text) => (text.to_string(), false, None),
            Err(_) => return bad("invalid UTF-8 in conversion record"),
        }
    } else if kind.eq_ignore_ascii_case(b"response") {
        let Some((http_headers, payload)) = http_parts(body) else {
            if !is_http_record(headers) {
                return Record::Skipped;
            }
            return bad("response record without an HTTP header block");
        };
        let content_type = content_type(http_headers);
        if !content_type.is_some_and(is_html) || !is_success(http_headers) {
            return Record::Skipped;
        }
        let payload = match http {
            HttpBodies::Raw => Cow::Borrowed(payload),
            HttpBodies::Decoded => match decode_body(http_headers, payload) {
                Ok(payload) => payload,
                Err(reason) => return bad(&format!("cannot decode the HTTP body: {reason}")),
            },
        };
        let (page, charset) = decode_html(&payload, content_type, url.as_deref());
        header_canonicals = link_header_canonicals(http_headers);
        (page.into_owned(), true, charset)
    } else {
        return Record::Skipped;
    };
    let id = match (&url, header(headers, "WARC-Record-ID")) {
        (Some(url), _) => url_id(url),
        (None, Some(record_id)) => url_id(&String::from_utf8_lossy(record_id)),
        (None, None) => return bad("record without WARC-Target-URI or WARC-Record-ID"),
    };
    // A date that is missing or unreadable loses the fetch time, not the page.
    let fetch_time = header(headers, "WARC-Date")
        .and_then(|date| std::str::from_utf8(date).ok())
        .and_then(parse_rfc3339);
    Record::Document(Document {
        id,
        url,
        text,
        html,
        charset,
        fetch_time,
        span,
        header_canonicals,
    })
}

/// The targets of an HTTP response's `Link` headers with `rel="canonical"`
/// (RFC 8288: `<URL>; rel="canonical"`, several links a header, comma
/// separated), as written: a server can name a page's canonical URL there
/// instead of in its HTML. A link with an `anchor` is about another
/// resource; a header that is not UTF-8 names no URL to trust.
pub(crate) fn link_header_canonicals(http_headers: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    for line in http_headers.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        if !line[..colon].trim_ascii().eq_ignore_ascii_case(b"link") {
            continue;
        }
        let Ok(mut rest) = std::str::from_utf8(&line[colon + 1..]) else {
            continue;
        };
        // Each link is `<target>` and its parameters, up to the next `<`
        // outside quotes (a target's own commas are inside its brackets).
        while let Some(open) = rest.find('<') {
            let Some(close) = rest[open..].find('>').map(|at| open + at) else {
                break;
            };
            let target = rest[open + 1..close].trim();
            let (params, end) = link_params(&rest[close + 1..]);
            let canonical = params.iter().any(|(name, rels)| {
                name == "rel"
                    && rels
                        .split_ascii_whitespace()
                        .any(|rel| rel.eq_ignore_ascii_case("canonical"))
            });
            let anchored = params.iter().any(|(name, _)| name == "anchor");
            if canonical && !anchored && !target.is_empty() {
                found.push(target.to_string());
            }
            rest = &rest[close + 1 + end..];
        }
    }
    found
}

/// A link's parameters (`; rel="canonical"; title="a; b"`), read up to the
/// next `<` outside quotes: `(name, value)` pairs, names in lower case and
/// values unquoted; gives where they end.
fn link_params(text: &str) -> (Vec<(String, String)>, usize) {
    let mut params = Vec::new();
    let (mut name, mut value) = (String::new(), String::new());
    let (mut in_value, mut quoted) = (false, false);
    let mut end = text.len();
    for (at, c) in text.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '<' if !quoted => {
                end = at;
                break;
            }
            ';' | ',' if !quoted => {
                push_param(&mut params, &mut name, &mut value);
                in_value = false;
            }
            '=' if !quoted && !in_value => in_value = true,
            c if in_value => value.push(c),
            c => name.push(c),
        }
    }
    push_param(&mut params, &mut name, &mut value);
    (params, end)
}

fn push_param(params: &mut Vec<(String, String)>, name: &mut String, value: &mut String) {
    let taken = (name.trim().to_ascii_lowercase(), value.trim().to_string());
    if !taken.0.is_empty() {
        params.push(taken);
    }
    name.clear();
    value.clear();
}

/// An HTTP response's header block and payload, split at the first blank
/// line: `\r\n\r\n`, or, in a response with none, `\n\n` (a server that
/// ends its header lines with a bare line feed, which browsers and warcio
/// read; wget stores such a response as sent).
fn http_parts(body: &[u8]) -> Option<(&[u8], &[u8])> {
    if let Some(split) = find(body, b"\r\n\r\n") {
        return Some((&body[..split], &body[split + 4..]));
    }
    let split = find(body, b"\n\n")?;
    Some((&body[..split], &body[split + 2..]))
}

/// Whether a response record may hold HTTP: its `Content-Type` is
/// `application/http` or absent. Heritrix records each host's DNS lookup
/// (`dns:` URIs, `text/dns`) and whois answers as responses too; they are
/// no pages, not bad records.
fn is_http_record(headers: &[(&str, &[u8])]) -> bool {
    header(headers, "Content-Type").is_none_or(|value| {
        let value = value.trim_ascii();
        value.len() >= 16 && value[..16].eq_ignore_ascii_case(b"application/http")
    })
}

/// Whether an HTTP response's status line says 2xx: a redirect's or an
/// error's body (a server's stock "Moved" or "Not Found" page) is not the
/// page, and the same stock body on many sites would pair them. A status
/// line that cannot be read passes.
fn is_success(http_headers: &[u8]) -> bool {
    let status_line = http_headers
        .split(|&b| b == b'\n')
        .next()
        .unwrap_or_default();
    let mut words = status_line.split(|&b| b == b' ').filter(|w| !w.is_empty());
    let (Some(version), Some(code)) = (words.next(), words.next()) else {
        return true;
    };
    let is_code = code.len() == 3 && code.iter().all(u8::is_ascii_digit);
    !(version.starts_with(b"HTTP/") && is_code) || code[0] == b'2'
}

/// `text/html`, `application/xhtml+xml` and the like.
fn is_html(content_type: &[u8]) -> bool {
    content_type
        .windows(4)
        .any(|w| w.eq_ignore_ascii_case(b"html"))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn record(kind: &str, uri: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
        let mut out = format!(
            "WARC/1.0\r\nWARC-Type: {kind}\r\nWARC-Target-URI: {uri}\r\nWARC-Record-ID: <urn:uuid:{uri}>\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        out.extend_from_slice(body);
        out.extend_from_slice(b"\r\n\r\n");
        out
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    fn read_all(bytes: &[u8]) -> Vec<Record> {
        read_as(bytes, HttpBodies::Decoded)
    }

    fn read_as(bytes: &[u8], http: HttpBodies) -> Vec<Record> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.warc");
        std::fs::write(&path, bytes).unwrap();
        let mut out = Vec::new();
        read(&Location::Local(path), http, &mut |r, _| {
            out.push(r);
            Ok(())
        })
        .unwrap();
        out
    }

    fn summary(records: &[Record]) -> Vec<String> {
        records
            .iter()
            .map(|r| match r {
                Record::Document(d) => {
                    // Response records carry the page's HTML, for
                    // fingerprinting to choose its text.
                    let text = match d.html {
                        true => crate::fingerprint::crawl::html::to_text(&d.text),
                        false => d.text.clone(),
                    };
                    format!(
                        "doc {} {}",
                        d.url.as_deref().unwrap_or("-"),
                        text.split_whitespace().collect::<Vec<_>>().join(" ")
                    )
                }
                Record::Bad(b) => format!("bad {} {}", b.offset, b.reason),
                Record::Skipped => "skipped".to_string(),
            })
            .collect()
    }

    fn sample() -> Vec<Vec<u8>> {
        vec![
            record("warcinfo", "-", "application/warc-fields", b"software: test\r\n"),
            record("conversion", "http://a/", "text/plain", "plain text é".as_bytes()),
            record(
                "response",
                "http://b/",
                "application/http; msgtype=response",
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<html><head><style>p{}</style><script>var x=1;</script></head><body><p>Hello <b>web</b></p></body></html>",
            ),
            record(
                "response",
                "http://c/",
                "application/http; msgtype=response",
                b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\n\r\n\x89PNG",
            ),
        ]
    }

    #[test]
    fn a_responses_link_header_canonicals_are_taken() {
        let headers = "HTTP/1.1 200 OK\r\nLink: <https://cdn.example/s.css>; rel=preload, \
                       <https://a.example/p,q>; rel=\"canonical\"\r\nlink:</x>;REL=\"Canonical alternate\"\r\n\
                       Content-Type: text/html";
        assert_eq!(
            link_header_canonicals(headers.as_bytes()),
            ["https://a.example/p,q", "/x"]
        );
        let others = "HTTP/1.1 200 OK\r\nLink: <https://a.example/2>; rel=next\r\nX-Link: <a>; rel=canonical";
        assert!(link_header_canonicals(others.as_bytes()).is_empty());
        let quoted =
            "Link: <https://s.example/c12>; title=\"see <b>; rel=canonical\"; rel=canonical";
        assert_eq!(
            link_header_canonicals(quoted.as_bytes()),
            ["https://s.example/c12"]
        );
        let anchored = "Link: <https://s.example/a>; rel=canonical; anchor=\"/other\"";
        assert!(link_header_canonicals(anchored.as_bytes()).is_empty());
        assert!(
            link_header_canonicals(b"Link: <https://s.example/t>; title=\"rel=canonical\"")
                .is_empty()
        );
        assert!(
            link_header_canonicals(b"Link: <https://r.example/caf\xe9>; rel=canonical").is_empty()
        );
        let body = format!("{headers}\r\n\r\n<html><body><p>Hello</p></body></html>");
        let response = record(
            "response",
            "http://b/",
            "application/http; msgtype=response",
            body.as_bytes(),
        );
        let [Record::Document(document)] = &read_all(&response)[..] else {
            panic!("one document");
        };
        assert_eq!(document.header_canonicals, ["https://a.example/p,q", "/x"]);
    }

    #[test]
    fn plain_and_gzipped_files_give_the_same_documents() {
        let records = sample();
        let plain: Vec<u8> = records.concat();
        let members: Vec<u8> = records.iter().flat_map(|r| gzip(r)).collect();
        let whole = gzip(&plain);
        let expected = vec![
            "skipped".to_string(),
            "doc http://a/ plain text é".to_string(),
            "doc http://b/ Hello web".to_string(),
            "skipped".to_string(),
        ];
        assert_eq!(summary(&read_all(&plain)), expected);
        assert_eq!(summary(&read_all(&members)), expected);
        assert_eq!(summary(&read_all(&whole)), expected);
    }

    /// libdeflate's whole-member decoding: a member followed by the next,
    /// one that decodes to more than the first guess of its size, and the
    /// members it must leave to the streaming decoder (cut short, damaged).
    #[test]
    fn whole_members_are_decoded_and_partial_or_bad_ones_left_alone() {
        let mut members = WholeMembers::new().unwrap();
        let mut out = Vec::new();
        let text = b"WARC/1.0\r\n a record's bytes".repeat(3);
        let mut two = gzip(&text);
        let first = two.len();
        two.extend(gzip(b"the next member"));
        assert_eq!(members.decode(&two, &mut out), Some(first));
        assert_eq!(out, text);
        let large: Vec<u8> = (0..3_000_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
            .collect();
        let packed = gzip(&large);
        assert_eq!(members.decode(&packed, &mut out), Some(packed.len()));
        assert!(out == large);
        assert_eq!(members.decode(&two[..first - 1], &mut out), None);
        let mut damaged = two[..first].to_vec();
        damaged[first / 2] ^= 0x55;
        assert_eq!(members.decode(&damaged, &mut out), None);
        assert_eq!(members.decode(b"not gzip at all", &mut out), None);
    }

    /// Members that run past the read buffer (decoded by the streaming
    /// decoder) among those that lie in it whole (by libdeflate), and one
    /// larger than the buffer, give the documents of the plain file.
    #[test]
    fn members_across_the_read_buffer_give_every_document() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut word = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("w{:x}", x & 0xf_ffff)
        };
        let records: Vec<Vec<u8>> = (0..2000)
            .map(|i| {
                let words = if i == 1000 { 300_000 } else { 400 };
                let text = (0..words).map(|_| word()).collect::<Vec<_>>().join(" ");
                let uri = format!("http://x/{i}");
                record("conversion", &uri, "text/plain", text.as_bytes())
            })
            .collect();
        let plain = records.concat();
        let members: Vec<u8> = records.iter().flat_map(|r| gzip(r)).collect();
        assert!(members.len() > 3 * CHUNK, "{} bytes", members.len());
        let expected = summary(&read_all(&plain));
        assert_eq!(expected.len(), 2000);
        assert_eq!(summary(&read_all(&members)), expected);
        assert_eq!(summary(&read_all(&gzip(&plain))), expected);
    }

    /// A conversion record with a `WARC-Date` header, if given.
    fn dated(uri: &str, date: Option<&str>) -> Vec<u8> {
        let body = format!("text of {uri}");
        let date = date.map_or(String::new(), |d| format!("WARC-Date: {d}\r\n"));
        format!(
            "WARC/1.0\r\nWARC-Type: conversion\r\nWARC-Target-URI: {uri}\r\n{date}Content-Length: {}\r\n\r\n{body}\r\n\r\n",
            body.len()
        )
        .into_bytes()
    }

    /// `(url, fetch_time, span)` of every document.
    fn attributes(records: &[Record]) -> Vec<(String, Option<i64>, Option<Span>)> {
        records
            .iter()
            .filter_map(|r| match r {
                Record::Document(d) => Some((d.url.clone().unwrap(), d.fetch_time, d.span)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn documents_carry_their_warc_date_and_the_range_that_holds_their_record_alone() {
        let records = [
            record(
                "warcinfo",
                "-",
                "application/warc-fields",
                b"software: test\r\n",
            ),
            dated("http://a/", Some("2024-05-01T12:34:56Z")),
            dated("http://b/", Some("2024-05-01T14:34:57.5+02:00")),
            dated("http://c/", Some("1 May 2024")),
            dated("http://d/", None),
        ];
        let a = parse_rfc3339("2024-05-01T12:34:56Z").unwrap();
        let times = [Some(a), Some(a + 1_500_000), None, None];
        let starts: Vec<u64> = records
            .iter()
            .scan(0u64, |at, r| {
                let start = *at;
                *at += r.len() as u64;
                Some(start)
            })
            .collect();

        // Plain: each record's own bytes.
        let plain = records.concat();
        let got = attributes(&read_all(&plain));
        assert_eq!(got.len(), 4);
        for (i, (_, time, span)) in got.iter().enumerate() {
            let span = span.expect("a plain record has its range");
            let bytes = &plain[span.offset as usize..(span.offset + span.length) as usize];
            assert_eq!(bytes, &records[i + 1][..], "record {i}");
            assert_eq!(span.offset, starts[i + 1]);
            assert_eq!(*time, times[i], "record {i}");
        }

        // A member per record: the member, which decompresses to the record.
        let members: Vec<Vec<u8>> = records.iter().map(|r| gzip(r)).collect();
        let file = members.concat();
        let got = attributes(&read_all(&file));
        let mut at = members[0].len() as u64;
        for (i, (_, time, span)) in got.iter().enumerate() {
            assert_eq!(
                *span,
                Some(Span {
                    offset: at,
                    length: members[i + 1].len() as u64
                }),
                "record {i}"
            );
            let range = &file[at as usize..at as usize + members[i + 1].len()];
            let mut decoded = Vec::new();
            GzDecoder::new(range).read_to_end(&mut decoded).unwrap();
            assert_eq!(decoded, records[i + 1]);
            assert_eq!(*time, times[i]);
            at += members[i + 1].len() as u64;
        }

        // One member for the whole file: no range holds a record alone.
        let got = attributes(&read_all(&gzip(&plain)));
        assert_eq!(got.len(), 4);
        assert!(got.iter().all(|(_, _, span)| span.is_none()), "{got:?}");
        let got_times: Vec<Option<i64>> = got.iter().map(|g| g.1).collect();
        assert_eq!(got_times, times);
    }

    /// A member larger than the read buffer goes to the streaming decoder,
    /// which reports its length as libdeflate does.
    #[test]
    fn a_member_past_the_read_buffer_has_its_range_too() {
        let text: String = (0..400_000u32)
            .map(|i| format!("{:x} ", i.wrapping_mul(2_654_435_761)))
            .collect();
        let big = record("conversion", "http://big/", "text/plain", text.as_bytes());
        let small = dated("http://small/", Some("2024-05-01T12:34:56Z"));
        let members = [gzip(&small), gzip(&big), gzip(&small)];
        assert!(members[1].len() > CHUNK, "{} bytes", members[1].len());
        let file = members.concat();
        let got = attributes(&read_all(&file));
        let offsets = [0, members[0].len(), members[0].len() + members[1].len()];
        let spans: Vec<Option<Span>> = got.iter().map(|g| g.2).collect();
        let expected: Vec<Option<Span>> = (0..3)
            .map(|i| {
                Some(Span {
                    offset: offsets[i] as u64,
                    length: members[i].len() as u64,
                })
            })
            .collect();
        assert_eq!(spans, expected);
    }

    #[test]
    fn a_bad_gzip_member_is_reported_and_the_rest_is_read() {
        let records = sample();
        let members: Vec<Vec<u8>> = records.iter().map(|r| gzip(r)).collect();
        let mut file = Vec::new();
        file.extend_from_slice(&members[0]);
        let bad_offset = file.len() as u64;
        let mut broken = members[1].clone();
        let mid = broken.len() / 2;
        broken[mid..mid + 4].copy_from_slice(b"XXXX");
        file.extend_from_slice(&broken);
        file.extend_from_slice(&members[2]);
        let got = summary(&read_all(&file));
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(
            got[1].starts_with(&format!("bad {bad_offset} bad gzip member")),
            "{got:?}"
        );
        assert_eq!(got[2], "doc http://b/ Hello web");
    }

    /// A response whose header lines end in a bare line feed is read as
    /// one ending in `\r\n`, with the same fingerprint text; Heritrix's
    /// `dns:` and whois responses are skipped, not bad; a response of
    /// `application/http` without a header block is still bad.
    #[test]
    fn bare_line_feed_headers_are_read_and_non_http_responses_skipped() {
        let http = "application/http; msgtype=response";
        let page = b"<html><body><p>A page served with bare line feeds.</p></body></html>";
        let response = |eol: &str| {
            let head = format!("HTTP/1.1 200 OK{eol}Content-Type: text/html{eol}{eol}");
            [head.as_bytes(), page].concat()
        };
        let dns = b"20261201000000\nexample.com.\t300\tIN\tA\t192.0.2.1\n";
        let file = [
            record("response", "http://a/", http, &response("\r\n")),
            record("response", "http://b/", http, &response("\n")),
            record("response", "dns:example.com", "text/dns", dns),
            record(
                "response",
                "whois://whois.iana.org/example",
                "text/plain",
                b"domain: EXAMPLE",
            ),
            record("response", "http://c/", http, b"no header block at all"),
        ]
        .concat();
        let got = read_all(&file);
        let texts: Vec<&str> = got
            .iter()
            .filter_map(|r| match r {
                Record::Document(d) => Some(d.text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(texts.len(), 2, "{got:?}");
        assert_eq!(texts[0], texts[1]);
        assert!(
            matches!(got[2], Record::Skipped) && matches!(got[3], Record::Skipped),
            "{got:?}"
        );
        assert!(
            matches!(&got[4], Record::Bad(b) if b.reason.contains("HTTP header block")),
            "{got:?}"
        );
    }

    /// A file cut in the middle, plain, gzipped per record or gzipped
    /// whole, keeps the documents of the records before the cut, and the
    /// cut is one bad record.
    #[test]
    fn a_file_cut_short_keeps_the_records_before_the_cut_in_every_layout() {
        let records: Vec<Vec<u8>> = (0..40u64)
            .map(|i| {
                let text: String = (0..300u64)
                    .map(|j| format!("{:x} ", (i * 1000 + j).wrapping_mul(0x9E37_79B9_7F4A_7C15)))
                    .collect();
                let uri = format!("http://x/{i}");
                record("conversion", &uri, "text/plain", text.as_bytes())
            })
            .collect();
        let plain = records.concat();
        let members: Vec<u8> = records.iter().flat_map(|r| gzip(r)).collect();
        let expected = summary(&read_all(&plain));
        for (layout, file) in [
            ("plain", plain.clone()),
            ("per record", members),
            ("whole", gzip(&plain)),
        ] {
            let got = summary(&read_all(&file[..file.len() / 2]));
            let (last, documents) = got.split_last().unwrap();
            assert!(last.starts_with("bad "), "{layout}: {last}");
            assert!(
                documents.len() > 5 && expected.starts_with(documents),
                "{layout}: {got:?}"
            );
        }
    }

    #[test]
    fn html_in_another_encoding_is_decoded_and_its_charset_kept() {
        let html = "<html><body><p>近似重复的网页检测</p></body></html>";
        let (gbk, _, _) = encoding_rs::GBK.encode(html);
        let mut http =
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=gb2312\r\n\r\n".to_vec();
        http.extend_from_slice(&gbk);
        let file = record(
            "response",
            "http://e/",
            "application/http; msgtype=response",
            &http,
        );
        match &read_all(&file)[..] {
            [Record::Document(document)] => {
                assert_eq!(document.text, html);
                let charset = document.charset.expect("decoded from GBK");
                assert_eq!((charset.name(), charset.guessed), ("GBK", false));
            }
            other => panic!("{other:?}"),
        }
    }

    /// A response record of an HTML `body` sent with the HTTP header
    /// lines `codings`.
    fn response(uri: &str, codings: &str, body: &[u8]) -> Vec<u8> {
        let mut http =
            format!("HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n{codings}\r\n")
                .into_bytes();
        http.extend_from_slice(body);
        record("response", uri, "application/http; msgtype=response", &http)
    }

    /// `bytes` in chunks of 9 bytes, with a chunk extension and a trailer.
    fn chunked(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for piece in bytes.chunks(9) {
            out.extend(format!("{:x};ext=1\r\n", piece.len()).into_bytes());
            out.extend_from_slice(piece);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\nX-Trailer: yes\r\n\r\n");
        out
    }

    /// Under v10 a page sent compressed or in chunks is the page sent
    /// plain, and a body that does not decode is a bad record at its
    /// record's offset (its member's, gzipped); before v10 every body is
    /// read as stored. The one record of a span (`neardup explain`) is
    /// read the same way.
    #[test]
    fn http_bodies_are_decoded_when_the_scheme_says_so() {
        let page = b"<html><body><p>Hello <b>web</b></p></body></html>";
        let mut corrupt = gzip(page);
        let mid = corrupt.len() / 2;
        corrupt[mid] ^= 0x5a;
        let bomb = gzip(&vec![
            b' ';
            crate::fingerprint::crawl::http::MAX_DECODED_BODY + 1
        ]);
        let gzip_chunked = "Transfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n";
        let records = [
            response("http://plain/", "", page),
            response("http://gzip/", "Content-Encoding: gzip\r\n", &gzip(page)),
            response(
                "http://chunked/",
                "Transfer-Encoding: chunked\r\n",
                &chunked(page),
            ),
            response("http://both/", gzip_chunked, &chunked(&gzip(page))),
            // Common Crawl's: decoded by the crawler, the headers renamed.
            response(
                "http://cc/",
                "X-Crawler-Transfer-Encoding: chunked\r\nX-Crawler-Content-Encoding: gzip\r\n",
                page,
            ),
            response("http://corrupt/", "Content-Encoding: gzip\r\n", &corrupt),
            response("http://none/", "Content-Encoding: none\r\n", page),
            response("http://bomb/", "Content-Encoding: gzip\r\n", &bomb),
        ];
        let offsets = |records: &[Vec<u8>]| -> Vec<u64> {
            let mut at = 0;
            records
                .iter()
                .map(|r| {
                    at += r.len() as u64;
                    at - r.len() as u64
                })
                .collect()
        };
        let members: Vec<Vec<u8>> = records.iter().map(|r| gzip(r)).collect();
        for (file, at) in [
            (records.concat(), offsets(&records)),
            (members.concat(), offsets(&members)),
        ] {
            let got = summary(&read_as(&file, HttpBodies::Decoded));
            let cannot = "cannot decode the HTTP body: Content-Encoding";
            assert_eq!(
                got[..5],
                ["plain", "gzip", "chunked", "both", "cc"]
                    .map(|n| format!("doc http://{n}/ Hello web"))
            );
            assert_eq!(got[6], "doc http://none/ Hello web");
            assert!(
                got[5].starts_with(&format!("bad {} {cannot} gzip: ", at[5])),
                "{}",
                got[5]
            );
            assert_eq!(
                got[7],
                format!("bad {} {cannot} gzip: decodes to more than 64 MiB", at[7])
            );
            assert_eq!(got.len(), 8);
        }
        let raw = read_as(&records.concat(), HttpBodies::Raw);
        let texts: Vec<&str> = raw
            .iter()
            .map(|r| match r {
                Record::Document(d) => d.text.as_str(),
                other => panic!("read as stored, every record is a page: {other:?}"),
            })
            .collect();
        assert_eq!(texts[0], std::str::from_utf8(page).unwrap());
        assert_eq!(texts[4], texts[0]);
        assert_eq!(texts[2], String::from_utf8(chunked(page)).unwrap());
        assert_eq!(texts[6], texts[0]);
        assert!(!texts[1].contains("Hello") && !texts[3].contains("Hello"));
        // A span's one record, as `explain` reads it back.
        for (i, record) in records.iter().enumerate() {
            for http in [HttpBodies::Raw, HttpBodies::Decoded] {
                let from_span = record_in(&members[i], http).unwrap();
                let from_file = summary(&read_as(record, http));
                assert_eq!(summary(&[from_span]), from_file, "record {i}, {http:?}");
            }
        }
    }

    #[test]
    fn truncated_and_invalid_records_are_reported_with_offsets() {
        let records = sample();
        let mut file = records[1].clone();
        let invalid_at = file.len() as u64;
        file.extend(record(
            "conversion",
            "http://bad/",
            "text/plain",
            b"caf\xe9",
        ));
        let good_again = record("conversion", "http://d/", "text/plain", b"after");
        file.extend_from_slice(&good_again);
        let truncated_at = file.len() as u64;
        file.extend_from_slice(&records[1][..records[1].len() - 10]);
        let got = summary(&read_all(&file));
        assert_eq!(
            got,
            vec![
                "doc http://a/ plain text é".to_string(),
                format!("bad {invalid_at} invalid UTF-8 in conversion record"),
                "doc http://d/ after".to_string(),
                format!("bad {truncated_at} truncated record"),
            ]
        );
    }

    #[test]
    fn only_2xx_responses_are_pages_and_an_unreadable_status_line_passes() {
        for (headers, page) in [
            ("HTTP/1.1 200 OK\r\nContent-Type: text/html", true),
            ("HTTP/1.0 206 Partial Content", true),
            ("HTTP/2 203", true),
            ("HTTP/1.1 301 Moved Permanently", false),
            ("HTTP/1.1 304 Not Modified", false),
            ("HTTP/1.1  404 Not Found", false),
            ("HTTP/1.1 503", false),
            ("Content-Type: text/html", true),
            ("HTTP/1.1 OK", true),
            ("", true),
        ] {
            assert_eq!(is_success(headers.as_bytes()), page, "{headers:?}");
        }
    }
}
