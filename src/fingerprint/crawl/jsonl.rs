//! JSONL: one JSON object per line, with configurable id, url and text fields
//! (gzipped files are read too), and an optional fetch time field of RFC
//! 3339 strings.
//!
//! A line of a plain file is its document's [`Span`]: its first byte, and
//! its length without the line break, so that the range is the JSON object.
//! A gzipped file gives none, as no range of it is one line.
//!
//! Gzipped data that does not decode (a file cut short, a damaged member)
//! ends the file as one bad record, after the lines decoded before it, as
//! a WARC file cut short does; a failure to read the file is an error.
//!
//! A field named by a flag other than its default (`--id-field`,
//! `--url-field`), or the time field, that no object of a file has is a
//! typo, refused as a Parquet column of that name would be: a record may
//! lack a field, but a file none of whose records has it would silently
//! give every page a URL hash, no URL or no fetch time.
//!
//! A UTF-8 byte order mark at the very start of the (decompressed) text,
//! as Windows tools write one, is passed over: the first line's range
//! begins after it. Anywhere else it is part of its line.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

use anyhow::{Context, Result};
use flate2::read::MultiGzDecoder;
use serde_json::Value;

use super::timestamp::parse_rfc3339;
use super::{url_id, BadRecord, Document, Record, Span, TextFields};
use crate::io::storage::{is_read_failure, Location};

/// Reads every line of a JSONL file; a line that is not a JSON object with a
/// string text field and an id (an integer id field, or a url to hash), or
/// whose time field is neither absent, null nor an RFC 3339 string, is a bad
/// record at the line's offset.
pub(crate) fn read(
    path: &Location,
    fields: &TextFields,
    sink: &mut dyn FnMut(Record, u64) -> Result<()>,
) -> Result<()> {
    let mut file = path.reader()?;
    let mut magic = [0u8; 2];
    let gzipped = file.read_exact(&mut magic).is_ok() && magic == [0x1f, 0x8b];
    file.seek(SeekFrom::Start(0))
        .with_context(|| format!("{path}: cannot read"))?;
    let input: Box<dyn Read> = if gzipped {
        Box::new(MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    let mut offset = 0u64;
    let mut found = FieldsFound::default();
    loop {
        line.clear();
        let n = match input.read_until(b'\n', &mut line) {
            Ok(n) => n,
            Err(error) if gzipped && !is_read_failure(&error) => {
                let reason = format!("bad gzip data: {error}");
                let end = offset + line.len() as u64;
                return sink(Record::Bad(BadRecord { offset, reason }), end);
            }
            Err(error) => {
                return Err(error)
                    .with_context(|| format!("{path}: cannot read at offset {offset}"))
            }
        };
        if n == 0 {
            return found.refuse_absent(path, fields);
        }
        let bom = leading_bom_len(&line, offset);
        let (content, start) = (&line[bom..], offset + bom as u64);
        offset += n as u64;
        // A blank line is no record: nothing read from it shows the file
        // is JSONL (a WET file read as JSONL has many).
        if content.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let span = (!gzipped).then(|| Span {
            offset: start,
            length: line_length(content) as u64,
        });
        let record =
            parse_line_noting(content, fields, span, &mut found).unwrap_or_else(|reason| {
                Record::Bad(BadRecord {
                    offset: start,
                    reason,
                })
            });
        sink(record, offset)?;
    }
}

/// The UTF-8 byte order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The length of a byte order mark opening `line` if the line is the
/// file's first (at `offset` 0), else 0.
fn leading_bom_len(line: &[u8], offset: u64) -> usize {
    match offset == 0 && line.starts_with(BOM) {
        true => BOM.len(),
        false => 0,
    }
}

/// A line's length without its line break (`\n` or `\r\n`).
fn line_length(line: &[u8]) -> usize {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line).len()
}

/// A JSON value as a bad record's reason shows it: cut short if long.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

/// Why number `n` is no id: JSON parses an integer beyond 64 bits as a
/// float, which prints as `1e+23`, not as written.
fn not_an_id(field: &str, n: &serde_json::Number) -> String {
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 => {
            format!("field `{field}` is an integer beyond 64 bits (about {f:.3e})")
        }
        _ => format!("field `{field}` is not an integer: {n}"),
    }
}

/// Which of the fields named were found in some object of a file.
#[derive(Default)]
struct FieldsFound {
    objects: bool,
    id: bool,
    url: bool,
    time: bool,
}

impl FieldsFound {
    fn note(&mut self, object: &serde_json::Map<String, Value>, fields: &TextFields) {
        self.objects = true;
        self.id |= object.contains_key(&fields.id);
        self.url |= object.contains_key(&fields.url);
        self.time |= (fields.time.as_ref()).is_some_and(|time| object.contains_key(time));
    }

    /// Refuses a field asked for by name (not its default) that no object
    /// of the file `path` has.
    fn refuse_absent(&self, path: &Location, fields: &TextFields) -> Result<()> {
        let defaults = TextFields::default();
        let absent = |field: &str, flag: &str| format!("no object has a field `{field}` ({flag})");
        let mut missing = Vec::new();
        if !self.id && fields.id != defaults.id {
            missing.push(absent(&fields.id, "--id-field"));
        }
        if !self.url && fields.url != defaults.url {
            missing.push(absent(&fields.url, "--url-field"));
        }
        if let Some(time) = fields.time.as_ref().filter(|_| !self.time) {
            missing.push(absent(time, "--time-field"));
        }
        match self.objects && !missing.is_empty() {
            true => anyhow::bail!("{path}: {}", missing.join("; ")),
            false => Ok(()),
        }
    }
}

pub(super) fn parse_line(
    line: &[u8],
    fields: &TextFields,
    span: Option<Span>,
) -> Result<Record, String> {
    parse_line_noting(line, fields, span, &mut FieldsFound::default())
}

/// [`parse_line`], noting in `found` which fields its object has.
fn parse_line_noting(
    line: &[u8],
    fields: &TextFields,
    span: Option<Span>,
    found: &mut FieldsFound,
) -> Result<Record, String> {
    let text = std::str::from_utf8(line).map_err(|_| "invalid UTF-8".to_string())?;
    let value: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
    let object = value.as_object().ok_or("not a JSON object")?;
    found.note(object, fields);
    let text = match object.get(&fields.text) {
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(format!("field `{}` is not a string", fields.text)),
        None => return Err(format!("no field `{}`", fields.text)),
    };
    let url = match object.get(&fields.url) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Null) | None => None,
        Some(_) => return Err(format!("field `{}` is not a string", fields.url)),
    };
    let id = match (object.get(&fields.id), &url) {
        (Some(Value::Number(n)), _) => n
            .as_i64()
            .or_else(|| n.as_u64().map(|u| u as i64))
            .ok_or_else(|| not_an_id(&fields.id, n))?,
        (Some(Value::Null) | None, Some(url)) => url_id(url),
        (Some(other), _) => {
            return Err(format!("field `{}` is not an integer: {other}", fields.id))
        }
        (None, None) => {
            return Err(format!(
                "neither an id field `{}` nor a url field `{}`",
                fields.id, fields.url
            ))
        }
    };
    let fetch_time = match fields.time.as_ref().map(|f| (f, object.get(f))) {
        None | Some((_, None | Some(Value::Null))) => None,
        Some((field, Some(value))) => {
            let time = value.as_str().and_then(parse_rfc3339);
            Some(time.ok_or_else(|| {
                format!(
                    "field `{field}` is not an RFC 3339 date-time: {}",
                    shown(value)
                )
            })?)
        }
    };
    Ok(Record::Document(Document {
        id,
        url,
        text,
        html: false,
        charset: None,
        fetch_time,
        span,
        header_canonicals: Vec::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_documents_or_bad_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docs.jsonl");
        let lines = [
            r#"{"id": 7, "url": "http://a/", "text": "hello"}"#,
            r#"{"url": "http://b/", "text": "world"}"#,
            r#"{"id": "x", "text": "bad id"}"#,
            r#"not json"#,
            "",
            r#"{"id": 9}"#,
        ];
        std::fs::write(&path, lines.join("\n")).unwrap();
        let mut got = Vec::new();
        read(
            &Location::Local(path),
            &TextFields::default(),
            &mut |r, _| {
                got.push(r);
                Ok(())
            },
        )
        .unwrap();
        let Record::Document(a) = &got[0] else {
            panic!("{got:?}")
        };
        assert_eq!((a.id, a.text.as_str()), (7, "hello"));
        let Record::Document(b) = &got[1] else {
            panic!("{got:?}")
        };
        assert_eq!(b.id, url_id("http://b/"));
        let offsets: Vec<u64> = got
            .iter()
            .filter_map(|r| match r {
                Record::Bad(b) => Some(b.offset),
                _ => None,
            })
            .collect();
        let line_start = |i: usize| lines[..i].iter().map(|l| l.len() as u64 + 1).sum::<u64>();
        assert_eq!(offsets, vec![line_start(2), line_start(3), line_start(5)]);
        assert_eq!(got.len(), lines.len() - 1, "the blank line is no record");
    }

    /// An id beyond 64 bits is said to be so, not printed as the float
    /// JSON parsed it into (`1e+23`); an unsigned 64-bit id is its bits.
    #[test]
    fn ids_beyond_64_bits_or_fractions_are_named_as_such() {
        let id = |json: &str| {
            let line = format!(r#"{{"id": {json}, "text": "x"}}"#);
            parse_line(line.as_bytes(), &TextFields::default(), None).map(|record| match record {
                Record::Document(document) => document.id,
                other => panic!("{other:?}"),
            })
        };
        assert_eq!(id("18446744073709551615"), Ok(-1));
        assert_eq!(
            id("99999999999999999999999"),
            Err("field `id` is an integer beyond 64 bits (about 1.000e23)".to_string())
        );
        assert_eq!(
            id("3.5"),
            Err("field `id` is not an integer: 3.5".to_string())
        );
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, bytes).unwrap();
        gz.finish().unwrap()
    }

    /// A gzipped file cut in the middle or damaged there, gzipped whole or a
    /// member a line, keeps the documents of the lines before the damage,
    /// and the damage is a bad record that ends the file (a damaged
    /// member's decoder may first give wrong bytes, bad lines of their own).
    #[test]
    fn damaged_gzip_keeps_the_lines_before_the_damage() {
        let lines: Vec<String> = (0..200u64)
            .map(|i| {
                let words: String = (0..40u64)
                    .map(|j| format!("{:x} ", (i * 100 + j).wrapping_mul(0x9E37_79B9_7F4A_7C15)))
                    .collect();
                format!("{{\"id\": {i}, \"text\": \"{words}\"}}\n")
            })
            .collect();
        let ids = |records: &[Record]| -> Vec<i64> {
            let documents = records.iter().filter_map(|r| match r {
                Record::Document(d) => Some(d.id),
                _ => None,
            });
            documents.collect()
        };
        let whole = gzip(lines.concat().as_bytes());
        let members: Vec<u8> = lines.iter().flat_map(|l| gzip(l.as_bytes())).collect();
        let mut damaged = whole.clone();
        let middle = damaged.len() / 2;
        damaged[middle..middle + 64].fill(0xAA);
        for (layout, file, cut) in [
            ("whole, cut", whole[..whole.len() / 2].to_vec(), true),
            (
                "a member a line, cut",
                members[..members.len() / 2].to_vec(),
                true,
            ),
            ("whole, damaged", damaged, false),
        ] {
            let got = read_bytes(&file, &TextFields::default());
            let (last, documents) = got.split_last().unwrap();
            let Record::Bad(bad) = last else {
                panic!("{layout}: {last:?}")
            };
            assert!(bad.reason.starts_with("bad gzip data"), "{layout}: {bad:?}");
            let kept = ids(documents);
            if cut {
                assert_eq!(kept.len(), documents.len(), "{layout}: one bad record");
            }
            assert!(kept.len() > 20, "{layout}: {} kept", kept.len());
            assert_eq!(kept, (0..kept.len() as i64).collect::<Vec<_>>(), "{layout}");
        }
    }

    fn read_bytes(bytes: &[u8], fields: &TextFields) -> Vec<Record> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docs.jsonl");
        std::fs::write(&path, bytes).unwrap();
        let mut got = Vec::new();
        read(&Location::Local(path), fields, &mut |r, _| {
            got.push(r);
            Ok(())
        })
        .unwrap();
        got
    }

    /// A byte order mark opening the file, plain or gzipped, is passed
    /// over; the first line's range starts after it. One on a later line
    /// is that line's, and makes it bad JSON.
    #[test]
    fn a_byte_order_mark_at_the_start_of_the_file_is_passed_over() {
        let lines = [
            r#"{"id": 1, "text": "first"}"#,
            r#"{"id": 2, "text": "second"}"#,
        ];
        let file = lines.join("\n").into_bytes();
        let with_bom = [BOM, file.as_slice()].concat();
        let documents = |records: &[Record]| -> Vec<(i64, String)> {
            let document = |r: &Record| match r {
                Record::Document(d) => (d.id, d.text.clone()),
                other => panic!("{other:?}"),
            };
            records.iter().map(document).collect()
        };
        let fields = TextFields::default();
        let got = read_bytes(&with_bom, &fields);
        assert_eq!(documents(&got), documents(&read_bytes(&file, &fields)));
        let Record::Document(first) = &got[0] else {
            unreachable!()
        };
        let span = first.span.unwrap();
        assert_eq!((span.offset, span.length), (3, lines[0].len() as u64));
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &with_bom).unwrap();
        let got = read_bytes(&gz.finish().unwrap(), &fields);
        assert_eq!(documents(&got), documents(&read_bytes(&file, &fields)));

        let inner = [
            lines[0].as_bytes(),
            b"\n".as_slice(),
            BOM,
            lines[1].as_bytes(),
        ]
        .concat();
        let got = read_bytes(&inner, &fields);
        assert!(matches!(&got[1], Record::Bad(b) if b.reason.starts_with("invalid JSON")));
    }

    /// A field named by a flag that no object has is a typo, refused on
    /// one line naming each; one that some object lacks is not, nor a
    /// default name no object has (the id is then the URL's hash).
    #[test]
    fn a_named_field_no_object_has_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docs.jsonl");
        let lines = [
            r#"{"ident": 1, "link": "https://a.example/", "text": "a", "fetched": "2024-05-01T12:34:56Z"}"#,
            r#"{"url": "https://b.example/", "text": "b"}"#,
        ];
        std::fs::write(&path, lines.join("\n")).unwrap();
        let read_with = |id: &str, url: &str, time: &str| {
            let fields = TextFields {
                id: id.into(),
                url: url.into(),
                time: Some(time.into()),
                ..TextFields::default()
            };
            read(&Location::Local(path.clone()), &fields, &mut |_, _| Ok(()))
        };
        read_with("ident", "link", "fetched").unwrap();
        read_with("id", "url", "fetched").unwrap();
        let error = read_with("idnt", "lnk", "fetchd").unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "{}: no object has a field `idnt` (--id-field); no object has a field `lnk` (--url-field); no object has a field `fetchd` (--time-field)",
                path.display()
            )
        );
    }

    #[test]
    fn lines_carry_their_range_and_time_field() {
        let fields = TextFields {
            time: Some("fetched".into()),
            ..TextFields::default()
        };
        let lines = [
            r#"{"id": 1, "text": "a", "fetched": "2024-05-01T12:34:56Z"}"#,
            r#"{"id": 2, "text": "b", "fetched": "2024-05-01T14:34:56.25+02:00"}"#,
            r#"{"id": 3, "text": "c"}"#,
            r#"{"id": 4, "text": "d", "fetched": null}"#,
            r#"{"id": 5, "text": "e", "fetched": "yesterday"}"#,
            r#"{"id": 6, "text": "f", "fetched": 1714566896}"#,
        ];
        // Line breaks of both kinds, and none after the last line.
        let file = format!("{}\r\n{}\n", lines[..2].join("\n"), lines[2..].join("\n"));
        let file = file.trim_end().as_bytes().to_vec();
        let got = read_bytes(&file, &fields);
        let t = parse_rfc3339("2024-05-01T12:34:56Z").unwrap();
        let expected_times = [Some(t), Some(t + 250_000), None, None];
        for (i, record) in got[..4].iter().enumerate() {
            let Record::Document(d) = record else {
                panic!("{i}: {record:?}")
            };
            assert_eq!(d.fetch_time, expected_times[i], "line {i}");
            let span = d.span.expect("a plain line has its range");
            let bytes = &file[span.offset as usize..(span.offset + span.length) as usize];
            assert_eq!(bytes, lines[i].as_bytes(), "line {i}");
        }
        let reasons: Vec<&str> = got[4..]
            .iter()
            .map(|r| match r {
                Record::Bad(b) => b.reason.as_str(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            reasons,
            [
                r#"field `fetched` is not an RFC 3339 date-time: "yesterday""#,
                "field `fetched` is not an RFC 3339 date-time: 1714566896",
            ]
        );

        // Without --time-field the field is not read; gzipped lines have no range.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &file).unwrap();
        let got = read_bytes(&gz.finish().unwrap(), &TextFields::default());
        assert_eq!(got.len(), 6);
        for record in got {
            let Record::Document(d) = record else {
                panic!("{record:?}")
            };
            assert_eq!((d.fetch_time, d.span), (None, None));
        }
    }
}
