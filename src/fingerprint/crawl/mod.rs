//! Reading crawl documents: WARC and WET files (plain or gzipped), JSONL, and
//! Parquet text columns.
//!
//! Every reader hands each record to a sink as either a [`Document`] or a
//! [`BadRecord`]: a record that cannot be read is reported with its file
//! offset and reading goes on with the next one. Only a file that cannot be
//! opened at all is an error.
//!
//! A document also carries what the shard records about the page besides
//! its fingerprint: when it was fetched ([`Document::fetch_time`]) and
//! where its record lies in the file ([`Span`]), so that a crawl keeps the
//! earliest copy of a page and reads any page's record back with one ranged
//! read. The file's own name is the shard's, not each document's: it is
//! written once per shard.

pub(crate) mod charset;
pub mod html;
pub mod http;
pub(crate) mod jsonl;
pub(crate) mod table;
pub(crate) mod timestamp;
pub mod warc;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

pub(crate) use crate::io::parquet::output::Span;
use crate::io::storage::{has_extension, Location};
use http::HttpBodies;

/// One document to fingerprint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    pub(crate) id: i64,
    pub(crate) url: Option<String>,
    /// The text, or with `html` the page's HTML, whose text is chosen when
    /// it is fingerprinted (`--html-text`).
    pub text: String,
    pub(crate) html: bool,
    /// The encoding an HTML response was decoded from, if not UTF-8:
    /// counted by the reader, not sent on with the document.
    #[serde(skip)]
    pub(crate) charset: Option<charset::Charset>,
    /// When the page was fetched, in microseconds since the Unix epoch
    /// (UTC): a WARC record's `WARC-Date`, or the `--time-field` of JSONL
    /// and Parquet input; `None` when unknown.
    pub(crate) fetch_time: Option<i64>,
    /// Where the record lies in its file, when one range holds it alone.
    pub(crate) span: Option<Span>,
    /// The canonical links of a WARC response's HTTP `Link` headers, as
    /// written ([`warc::link_header_canonicals`]).
    pub(crate) header_canonicals: Vec<String>,
}

/// How a WARC response's `WARC-Target-URI` becomes the page's `url`, and
/// the id made of it: as written, or without the angle brackets wget 1.21
/// writes around it (`<http://…>`, as WARC 1.0's examples did), which
/// another tool's crawl of the page leaves out, and which no URL parser
/// reads (the page's relative canonical link did not resolve).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetUri {
    AsWritten,
    Unbracketed,
}

impl TargetUri {
    /// Takes an HTML page's URL, and the id made of it, by this rule.
    pub(crate) fn apply(self, document: &mut Document) {
        if self == TargetUri::AsWritten || !document.html {
            return;
        }
        let Some(url) = &document.url else {
            return;
        };
        let inner = url.strip_prefix('<').and_then(|u| u.strip_suffix('>'));
        let Some(inner) = inner.map(str::trim).filter(|u| !u.is_empty()) else {
            return;
        };
        let inner = inner.to_string();
        if document.id == url_id(url) {
            document.id = url_id(&inner);
        }
        document.url = Some(inner);
    }
}

/// A record that could not be read, and where it starts in its file (for a
/// gzipped WARC/WET file: the offset of its gzip member, as in Common Crawl's
/// indexes; for JSONL: the line's first byte).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BadRecord {
    pub(crate) offset: u64,
    pub(crate) reason: String,
}

/// What a reader found at one record.
#[derive(Debug)]
pub enum Record {
    Document(Document),
    Bad(BadRecord),
    /// A record that carries no text to fingerprint (warcinfo, request,
    /// metadata, a non-HTML response).
    Skipped,
}

/// The id of a document that has only a URL: xxh3-64 of the URL's UTF-8
/// bytes, as the INT64 with the same bits. Stable across runs and machines.
pub fn url_id(url: &str) -> i64 {
    xxh3_64(url.as_bytes()) as i64
}

/// Input formats of `fingerprint`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Format {
    /// WARC: response records with HTML (markup stripped), and conversion records.
    Warc,
    /// WET: Common Crawl's conversion records of extracted text.
    Wet,
    /// One JSON object per line.
    Jsonl,
    /// A Parquet table with a text column.
    Parquet,
}

impl std::fmt::Display for Format {
    /// As `--format` names it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use clap::ValueEnum;
        let name = self.to_possible_value().map(|v| v.get_name().to_string());
        f.write_str(name.as_deref().unwrap_or("?"))
    }
}

impl Format {
    /// The format a file's name suggests: the first whose
    /// [`Format::extensions`] the name ends with, in any case.
    pub(crate) fn from_path(path: &Location) -> Result<Format> {
        let name = path.to_string().to_lowercase();
        <Format as clap::ValueEnum>::value_variants()
            .iter()
            .copied()
            .find(|f| f.extensions().iter().any(|e| has_extension(&name, e)))
            .with_context(|| {
                format!(
                    "{path}: cannot tell the input format from the name; give --format warc|wet|jsonl|parquet"
                )
            })
    }

    /// File name endings of the format: what a directory is searched for and
    /// what [`Format::from_path`] recognises.
    pub(crate) fn extensions(self) -> &'static [&'static str] {
        match self {
            Format::Warc => &["warc", "warc.gz"],
            Format::Wet => &["wet", "wet.gz"],
            Format::Jsonl => &[
                "jsonl",
                "jsonl.gz",
                "json",
                "json.gz",
                "ndjson",
                "ndjson.gz",
            ],
            Format::Parquet => &["parquet"],
        }
    }
}

/// Field and column names of JSONL and Parquet inputs.
#[derive(Clone, Debug)]
pub(crate) struct TextFields {
    pub(crate) id: String,
    pub(crate) url: String,
    pub(crate) text: String,
    /// The fetch time's field or column (`--time-field`), if any.
    pub(crate) time: Option<String>,
}

impl TextFields {
    /// The fields as the flags that name them, each with its value.
    pub(crate) fn as_flags(&self) -> [(&'static str, String); 4] {
        [
            ("--id-field", self.id.clone()),
            ("--url-field", self.url.clone()),
            ("--text-field", self.text.clone()),
            ("--time-field", self.time.clone().unwrap_or("none".into())),
        ]
    }
}

impl Default for TextFields {
    fn default() -> Self {
        TextFields {
            id: "id".into(),
            url: "url".into(),
            text: "text".into(),
            time: None,
        }
    }
}

/// Reads every record of `path` in `format`, handing each to `sink`; the
/// bodies of HTTP responses as `http` says.
pub(crate) fn read_file(
    path: &Location,
    format: Format,
    fields: &TextFields,
    http: HttpBodies,
    sink: &mut dyn FnMut(Record, u64) -> Result<()>,
) -> Result<()> {
    match format {
        Format::Warc | Format::Wet => warc::read(path, http, sink),
        Format::Jsonl => jsonl::read(path, fields, sink),
        Format::Parquet => table::read(path, fields, sink),
    }
}

/// The record that one span of a file in `format` holds (a shard's
/// `source`, `offset` and `length`): a WARC or WET record, or a JSONL line,
/// read as [`read_file`] reads it.
pub(crate) fn record_in_span(
    bytes: &[u8],
    format: Format,
    fields: &TextFields,
    http: HttpBodies,
) -> Result<Record> {
    match format {
        Format::Warc | Format::Wet => warc::record_in(bytes, http),
        Format::Jsonl => Ok(jsonl::parse_line(bytes, fields, None)
            .unwrap_or_else(|reason| Record::Bad(BadRecord { offset: 0, reason }))),
        Format::Parquet => anyhow::bail!("Parquet input rows have no byte span"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under `Unbracketed`, an HTML page's bracketed target URI loses its
    /// brackets, and its id is the plain URL's, as another tool's crawl of
    /// the page gives; a given id, text records and `AsWritten` are kept.
    #[test]
    fn a_bracketed_target_uri_is_taken_without_its_brackets() {
        let page = |url: &str, id: i64, html: bool| Document {
            id,
            url: Some(url.to_string()),
            text: String::new(),
            html,
            charset: None,
            fetch_time: None,
            span: None,
            header_canonicals: Vec::new(),
        };
        let bracketed = "<http://a.example/x>";
        let taken = |rule: TargetUri, mut document: Document| {
            rule.apply(&mut document);
            (document.url.unwrap(), document.id)
        };
        let plain = (
            "http://a.example/x".to_string(),
            url_id("http://a.example/x"),
        );
        let from_url = page(bracketed, url_id(bracketed), true);
        assert_eq!(taken(TargetUri::Unbracketed, from_url), plain);
        let given_id = page(bracketed, 7, true);
        assert_eq!(taken(TargetUri::Unbracketed, given_id).1, 7);
        for (rule, document) in [
            (
                TargetUri::AsWritten,
                page(bracketed, url_id(bracketed), true),
            ),
            (
                TargetUri::Unbracketed,
                page(bracketed, url_id(bracketed), false),
            ),
        ] {
            let kept = (bracketed.to_string(), url_id(bracketed));
            assert_eq!(taken(rule, document), kept, "{rule:?}");
        }
        let half = page("<http://a.example/x", 1, true);
        assert_eq!(taken(TargetUri::Unbracketed, half).0, "<http://a.example/x");
    }
}
