//! JSONL: one JSON object per line, with configurable id, url and text fields
//! (gzipped files are read too).

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

use anyhow::{Context, Result};
use flate2::read::MultiGzDecoder;
use serde_json::Value;

use super::{url_id, BadRecord, Document, Record, TextFields};
use crate::storage::Location;

/// Reads every line of a JSONL file; a line that is not a JSON object with a
/// string text field and an id (an integer id field, or a url to hash) is a
/// bad record at the line's offset.
pub fn read(
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
    loop {
        line.clear();
        let n = input
            .read_until(b'\n', &mut line)
            .with_context(|| format!("{path}: cannot read at offset {offset}"))?;
        if n == 0 {
            return Ok(());
        }
        let record = if line.iter().all(u8::is_ascii_whitespace) {
            Record::Skipped
        } else {
            parse_line(&line, fields)
                .unwrap_or_else(|reason| Record::Bad(BadRecord { offset, reason }))
        };
        offset += n as u64;
        sink(record, offset)?;
    }
}

fn parse_line(line: &[u8], fields: &TextFields) -> Result<Record, String> {
    let text = std::str::from_utf8(line).map_err(|_| "invalid UTF-8".to_string())?;
    let value: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
    let object = value.as_object().ok_or("not a JSON object")?;
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
            .ok_or_else(|| format!("field `{}` is not a 64-bit integer: {n}", fields.id))?,
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
    Ok(Record::Document(Document {
        id,
        url,
        text,
        html: false,
        charset: None,
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
        assert!(matches!(got[4], Record::Skipped));
    }
}
