//! The body of an HTTP response as a WARC `response` record stores it,
//! decoded as a browser would before rendering it (scheme v10 on).
//!
//! Tools that record raw HTTP traffic (wget `--warc-file`, Heritrix,
//! warcprox, Browsertrix) store the bytes on the wire: a body may be sent
//! in chunks (`Transfer-Encoding: chunked`) and compressed
//! (`Content-Encoding: gzip`). Fingerprinted as stored, a compressed page
//! is noise and a chunked one carries its chunk-size lines into the text.
//! Common Crawl removes both itself and renames the headers
//! (`X-Crawler-Transfer-Encoding`, `X-Crawler-Content-Encoding`), so only
//! the two headers by their own names are read, and such a record is left
//! as it is.
//!
//! Decoding undoes the transfer codings, then the content codings, each
//! list (one header's comma-separated values, several headers' values in
//! turn) from its last coding to its first, as they were applied:
//! - `chunked`, a transfer coding only (RFC 9112, section 7.1): chunk
//!   extensions are skipped, and so is the trailer section, which may be
//!   cut short; a line may end in a bare LF, as the RFC lets a recipient
//!   accept;
//! - `gzip` and `x-gzip` (one member or several), `deflate` (zlib-wrapped
//!   as the RFC says, or raw deflate as some servers send and browsers
//!   accept: a body without a zlib header, or one that fails as zlib, is
//!   read as raw), and `identity`, in either header;
//! - `br` and `zstd`, content codings only.
//!
//! An empty body (a `HEAD` or `304` answer) is left empty, and a coding
//! not listed (`none` and `utf-8` are common misuses) is passed over, as
//! browsers do. A body that does not decode, and one that decompresses to
//! more than [`MAX_DECODED_BODY`] (a decompression bomb would otherwise
//! take the reader's memory), are bad records with the reason. Only HTML responses, the records fingerprinted, are decoded.

use std::borrow::Cow;
use std::io::Read;

use flate2::bufread::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};

/// Whether the bodies of HTTP responses are fingerprinted as stored or
/// decoded: part of a scheme, as it moves the fingerprints of pages sent
/// compressed or in chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpBodies {
    /// As stored (schemes v1 to v9).
    Raw,
    /// Transfer and content codings undone (since v10).
    Decoded,
}

const TRANSFER: &str = "Transfer-Encoding";
const CONTENT: &str = "Content-Encoding";

/// The most bytes a compressed body may decode to.
pub(crate) const MAX_DECODED_BODY: usize = 64 << 20;

/// The body `payload` of a response with the header block `http_headers`
/// (status line included), its transfer and content codings undone; or why
/// it cannot be, a bad record's reason.
pub(crate) fn decode_body<'a>(
    http_headers: &[u8],
    payload: &'a [u8],
) -> Result<Cow<'a, [u8]>, String> {
    let transfer = codings(http_headers, TRANSFER);
    let content = codings(http_headers, CONTENT);
    let mut body = Cow::Borrowed(payload);
    let steps = transfer
        .iter()
        .rev()
        .map(|c| (TRANSFER, c))
        .chain(content.iter().rev().map(|c| (CONTENT, c)));
    for (header, coding) in steps {
        if body.is_empty() {
            break;
        }
        if let Some(decoded) = undo(header, coding, &body)? {
            body = Cow::Owned(decoded);
        }
    }
    Ok(body)
}

/// The codings that the header `name` lists, in the order applied,
/// lower-cased and without parameters; across several such headers in turn.
fn codings(http_headers: &[u8], name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in http_headers.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        if !line[..colon]
            .trim_ascii()
            .eq_ignore_ascii_case(name.as_bytes())
        {
            continue;
        }
        for coding in line[colon + 1..].split(|&b| b == b',') {
            let coding = coding.split(|&b| b == b';').next().unwrap_or_default();
            let coding = coding.trim_ascii();
            if !coding.is_empty() {
                out.push(String::from_utf8_lossy(coding).to_ascii_lowercase());
            }
        }
    }
    out
}

/// `body` with `coding` undone; None for `identity` and for a coding not
/// listed, left as stored.
/// `br` and `zstd` are content codings only, `chunked` a transfer coding
/// only (as the IANA registries list them).
fn undo(header: &str, coding: &str, body: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let failed = |error: String| format!("{header} {coding}: {error}");
    let transfer = header == TRANSFER;
    let decoded = match coding {
        "identity" => return Ok(None),
        "chunked" if transfer => dechunk(body),
        "gzip" | "x-gzip" => capped(MultiGzDecoder::new(body)),
        "deflate" => inflate(body),
        "br" if !transfer => capped(brotli::Decompressor::new(body, 1 << 16)),
        "zstd" if !transfer => match zstd::stream::read::Decoder::with_buffer(body) {
            Ok(decoder) => capped(decoder),
            Err(error) => Err(error.to_string()),
        },
        // As browsers do: `none`, `utf-8` and other misused values are
        // common, and the body is as sent.
        _ => return Ok(None),
    };
    decoded.map(Some).map_err(failed)
}

/// A `deflate` body: zlib-wrapped if it starts with a zlib header and
/// decodes as zlib, else raw deflate.
fn inflate(body: &[u8]) -> Result<Vec<u8>, String> {
    let zlib_header = body.len() >= 2
        && body[0] & 0x0f == 8
        && body[0] >> 4 <= 7
        && u16::from_be_bytes([body[0], body[1]]).is_multiple_of(31);
    if zlib_header {
        match capped(ZlibDecoder::new(body)) {
            Err(error) if error != TOO_LARGE => {}
            decoded => return decoded,
        }
    }
    capped(DeflateDecoder::new(body))
}

/// The reason given for a body that decodes to more than
/// [`MAX_DECODED_BODY`].
const TOO_LARGE: &str = "decodes to more than 64 MiB";

/// All that `decoder` gives, if it is at most [`MAX_DECODED_BODY`].
fn capped(decoder: impl Read) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    decoder
        .take(MAX_DECODED_BODY as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|error| error.to_string())?;
    match out.len() > MAX_DECODED_BODY {
        true => Err(TOO_LARGE.to_string()),
        false => Ok(out),
    }
}

/// A chunked body's data (RFC 9112, section 7.1).
fn dechunk(body: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(body.len());
    let mut at = 0;
    loop {
        if at == body.len() {
            return Err("ends before its last chunk".to_string());
        }
        let end = body[at..].iter().position(|&b| b == b'\n');
        let line = &body[at..end.map_or(body.len(), |end| at + end)];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let size = chunk_size(line).ok_or_else(|| {
            let shown = String::from_utf8_lossy(&line[..line.len().min(40)]).into_owned();
            format!("`{}` is not a chunk-size line", shown.escape_debug())
        })?;
        let Some(end) = end else {
            return Err("ends before its last chunk".to_string());
        };
        at += end + 1;
        if size == 0 {
            // The trailer section, which nothing here reads.
            return Ok(out);
        }
        let data = usize::try_from(size)
            .ok()
            .and_then(|size| body.get(at..at.checked_add(size)?))
            .ok_or("ends inside a chunk")?;
        out.extend_from_slice(data);
        at += data.len();
        at += match &body[at..] {
            [b'\r', b'\n', ..] => 2,
            [b'\n', ..] => 1,
            [] => return Err("ends before its last chunk".to_string()),
            _ => return Err("a chunk is longer than its size says".to_string()),
        };
    }
}

/// The size a chunk-size line gives (`1*HEXDIG [ BWS ";" chunk-ext ]`).
fn chunk_size(line: &[u8]) -> Option<u64> {
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    let rest = line[digits..].trim_ascii();
    if digits == 0 || !(rest.is_empty() || rest.starts_with(b";")) {
        return None;
    }
    let hex = std::str::from_utf8(&line[..digits]).ok()?;
    u64::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const PAGE: &[u8] = b"<html><body><p>The same page, however it was sent.</p></body></html>";

    fn decode(headers: &str, payload: &[u8]) -> Result<Vec<u8>, String> {
        let headers = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n{headers}");
        decode_body(headers.as_bytes(), payload).map(Cow::into_owned)
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    fn zlib(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    fn raw_deflate(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    fn brotli(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut e = brotli::CompressorWriter::new(&mut out, 4096, 9, 22);
            e.write_all(bytes).unwrap();
        }
        out
    }

    fn zstd(bytes: &[u8]) -> Vec<u8> {
        zstd::encode_all(bytes, 3).unwrap()
    }

    /// `bytes` in chunks of `n`, each size line with `extension`, the last
    /// chunk followed by `trailer`.
    fn chunked(bytes: &[u8], n: usize, extension: &str, trailer: &str) -> Vec<u8> {
        let mut out = Vec::new();
        for piece in bytes.chunks(n) {
            out.extend(format!("{:X}{extension}\r\n", piece.len()).into_bytes());
            out.extend_from_slice(piece);
            out.extend_from_slice(b"\r\n");
        }
        out.extend(format!("0{extension}\r\n{trailer}\r\n").into_bytes());
        out
    }

    #[test]
    fn chunked_bodies_are_joined_past_extensions_and_trailers() {
        let body = chunked(PAGE, 7, "", "");
        assert_eq!(
            decode("Transfer-Encoding: chunked\r\n", &body).unwrap(),
            PAGE
        );
        let body = chunked(
            PAGE,
            10,
            " ; name=\"value\";flag",
            "Expires: never\r\nX-Sum: 1\r\n",
        );
        assert_eq!(
            decode("Transfer-Encoding: Chunked\r\n", &body).unwrap(),
            PAGE
        );
        // Bare LFs, and a body cut short inside its trailer section.
        let lf = String::from_utf8(chunked(PAGE, 16, "", "X-Sum: 1")).unwrap();
        let lf = lf.replace("\r\n", "\n");
        assert_eq!(
            decode("Transfer-Encoding: chunked\r\n", lf.as_bytes()).unwrap(),
            PAGE
        );
        assert_eq!(
            decode("Transfer-Encoding: chunked\r\n", b"5\r\nabcde\r\n0\r\n").unwrap(),
            b"abcde"
        );
    }

    #[test]
    fn broken_chunked_bodies_are_undecodable() {
        let te = "Transfer-Encoding: chunked\r\n";
        let whole = chunked(PAGE, 10, "", "");
        let cut = &whole[..whole.len() / 2];
        let error = decode(te, cut).unwrap_err();
        assert!(
            error.starts_with("Transfer-Encoding chunked: ends "),
            "{error}"
        );
        let error = decode(te, &whole[..whole.len() - 5]).unwrap_err();
        assert_eq!(
            error,
            "Transfer-Encoding chunked: ends before its last chunk"
        );
        let error = decode(te, PAGE).unwrap_err();
        assert!(error.contains("is not a chunk-size line"), "{error}");
        let error = decode(te, b"3\r\nabcdef\r\n0\r\n\r\n").unwrap_err();
        assert!(error.contains("longer than its size"), "{error}");
        let error = decode(te, b"ffffffffffffffffff\r\nabc\r\n0\r\n\r\n").unwrap_err();
        assert!(error.contains("not a chunk-size line"), "{error}");
        let error = decode(te, b"ffffffff\r\nabc\r\n0\r\n\r\n").unwrap_err();
        assert!(error.contains("ends inside a chunk"), "{error}");
    }

    #[test]
    fn every_content_coding_is_undone() {
        let cases = [
            ("gzip", gzip(PAGE)),
            ("x-gzip", gzip(PAGE)),
            ("GZIP", [gzip(&PAGE[..9]), gzip(&PAGE[9..])].concat()),
            ("deflate", zlib(PAGE)),
            ("deflate", raw_deflate(PAGE)),
            ("br", brotli(PAGE)),
            ("zstd", zstd(PAGE)),
            ("identity", PAGE.to_vec()),
        ];
        for (coding, body) in cases {
            assert_eq!(body == PAGE, coding == "identity", "{coding}");
            let headers = format!("Content-Encoding: {coding}\r\n");
            assert_eq!(decode(&headers, &body).unwrap(), PAGE, "{coding}");
        }
        assert!(
            zlib(PAGE)[0] & 0x0f == 8 && raw_deflate(PAGE)[0] & 0x0f != 8,
            "one deflate body has a zlib header, the other not"
        );
    }

    #[test]
    fn stacked_codings_are_undone_last_first() {
        let body = brotli(&gzip(PAGE));
        assert_eq!(
            decode("Content-Encoding: gzip, br\r\n", &body).unwrap(),
            PAGE
        );
        // Two headers make one list, in turn.
        let headers = "Content-Encoding: gzip\r\nContent-Encoding: br\r\n";
        assert_eq!(decode(headers, &body).unwrap(), PAGE);
        assert!(decode("Content-Encoding: br, gzip\r\n", &body).is_err());
        // Chunks are undone before the content coding.
        let body = chunked(&gzip(PAGE), 13, ";x=1", "");
        let headers = "Transfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n";
        assert_eq!(decode(headers, &body).unwrap(), PAGE);
        let headers = "Transfer-Encoding: gzip, chunked\r\n";
        assert_eq!(decode(headers, &body).unwrap(), PAGE);
        let headers = "Content-Encoding: identity, gzip, identity\r\n";
        assert_eq!(decode(headers, &gzip(PAGE)).unwrap(), PAGE);
    }

    #[test]
    fn unknown_codings_are_passed_over_and_corrupt_ones_are_undecodable() {
        for headers in [
            "Content-Encoding: none\r\n",
            "Content-Encoding: utf-8\r\n",
            "Content-Encoding: compress\r\n",
            "Transfer-Encoding: br\r\n",
            "Content-Encoding: chunked\r\n",
        ] {
            assert_eq!(decode(headers, PAGE).unwrap(), PAGE, "{headers}");
        }
        let headers = "Content-Encoding: gzip, none\r\n";
        assert_eq!(decode(headers, &gzip(PAGE)).unwrap(), PAGE);
        let mut corrupt = gzip(PAGE);
        let mid = corrupt.len() / 2;
        corrupt[mid] ^= 0x5a;
        let error = decode("Content-Encoding: gzip\r\n", &corrupt).unwrap_err();
        assert!(error.starts_with("Content-Encoding gzip: "), "{error}");
        let error = decode("Content-Encoding: gzip\r\n", PAGE).unwrap_err();
        assert!(error.starts_with("Content-Encoding gzip: "), "{error}");
        let cut = &gzip(PAGE)[..20];
        assert!(decode("Content-Encoding: gzip\r\n", cut).is_err());
        for coding in ["br", "zstd", "deflate"] {
            let headers = format!("Content-Encoding: {coding}\r\n");
            let bytes = [0xff, 0xfe, 0xfd, 0x00, 0x13, 0x37].repeat(8);
            let error = decode(&headers, &bytes).unwrap_err();
            assert!(
                error.starts_with(&format!("Content-Encoding {coding}: ")),
                "{error}"
            );
        }
    }

    #[test]
    fn a_body_that_decodes_past_the_cap_is_undecodable() {
        let zeros = vec![0u8; MAX_DECODED_BODY + 1];
        let just = &zeros[..MAX_DECODED_BODY];
        for (coding, encode) in [
            ("gzip", gzip as fn(&[u8]) -> Vec<u8>),
            ("deflate", zlib),
            ("br", brotli),
            ("zstd", zstd),
        ] {
            let headers = format!("Content-Encoding: {coding}\r\n");
            let bomb = encode(&zeros);
            assert!(bomb.len() < 1 << 20, "{coding}: {} bytes", bomb.len());
            let error = decode(&headers, &bomb).unwrap_err();
            assert_eq!(error, format!("Content-Encoding {coding}: {TOO_LARGE}"));
        }
        let at_the_cap = decode("Content-Encoding: gzip\r\n", &gzip(just)).unwrap();
        assert_eq!(at_the_cap.len(), MAX_DECODED_BODY);
        assert_eq!(
            TOO_LARGE,
            format!("decodes to more than {} MiB", MAX_DECODED_BODY >> 20)
        );
    }

    #[test]
    fn bodies_without_codings_or_decoded_by_the_crawler_are_left_as_stored() {
        let cases = [
            "",
            "Content-Encoding: identity\r\n",
            "X-Crawler-Content-Encoding: gzip\r\n",
            "X-Crawler-Transfer-Encoding: chunked\r\nX-Crawler-Content-Encoding: br\r\n",
            "X-Content-Encoding-Over-Network: gzip\r\n",
        ];
        for headers in cases {
            let headers = format!("HTTP/1.1 200 OK\r\n{headers}");
            let body = decode_body(headers.as_bytes(), PAGE).unwrap();
            assert!(matches!(body, Cow::Borrowed(b) if b == PAGE), "{headers}");
        }
        // An empty body (a HEAD's answer) has nothing to decode.
        let headers = b"HTTP/1.1 304 Not Modified\r\nContent-Encoding: gzip";
        assert_eq!(decode_body(headers, b"").unwrap(), &b""[..]);
    }
}
