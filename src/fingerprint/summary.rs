//! What a `fingerprint` run reports: each input file's result, gathered
//! from the workers that read the files, and the run's `_summary.json` and
//! line.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::exec::progress::human_bytes;
use crate::fingerprint::crawl::html::PageText;
use crate::fingerprint::crawl::{BadRecord, Format};
use crate::fingerprint::options::FingerprintOptions;
use crate::io::commit::Merge;

/// Bad records listed in `_summary.json` (all are counted).
const LISTED_BAD_RECORDS: usize = 1000;

/// A bad record with the file it is in.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct FileBadRecord {
    pub(crate) file: String,
    #[serde(flatten)]
    pub(crate) record: BadRecord,
}

/// What one input file gave.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct FileSummary {
    pub(crate) file: String,
    pub(crate) shard: String,
    pub(crate) format: Format,
    pub(crate) bytes: u64,
    /// Bytes of the documents, uncompressed and decoded.
    #[serde(default)]
    pub(crate) document_bytes: u64,
    pub(crate) documents: u64,
    pub(crate) bad_records: u64,
    pub(crate) skipped_records: u64,
    /// HTML pages (WARC responses) among the documents.
    pub(crate) html_pages: u64,
    /// HTML pages whose main content was empty, fingerprinted on all their
    /// text (`--html-text main`).
    pub(crate) main_content_fallbacks: u64,
    /// Documents with nothing to fingerprint, left out of the shard.
    #[serde(default)]
    pub(crate) empty_pages: u64,
    /// HTML pages decoded from another encoding than UTF-8, by the
    /// Encoding Standard's name for it (`GBK`, `Shift_JIS`).
    #[serde(default)]
    pub(crate) charsets: BTreeMap<String, u64>,
    /// Of those, pages that declared no encoding, whose encoding was
    /// guessed from their bytes.
    #[serde(default)]
    pub(crate) charset_guesses: u64,
    /// The fingerprint scheme the shard records.
    pub(crate) scheme: String,
}

/// What a run did; written to `_summary.json`.
#[derive(Debug, Serialize)]
pub(crate) struct FingerprintSummary {
    /// The fingerprint scheme, as the shards of WARC files record it (those
    /// of text files record it without its HTML part).
    pub(crate) scheme: String,
    /// Its name, when it is a named scheme (`--scheme`).
    pub(crate) scheme_name: Option<String>,
    pub(crate) html_text: PageText,
    pub(crate) html_pages: u64,
    /// HTML pages with no main content, fingerprinted on all their text.
    pub(crate) main_content_fallbacks: u64,
    /// HTML pages decoded from another encoding than UTF-8, by encoding.
    pub(crate) charsets: BTreeMap<String, u64>,
    /// Of those, pages whose encoding was guessed.
    pub(crate) charset_guesses: u64,
    pub(crate) features: String,
    pub(crate) log_weights: bool,
    pub(crate) stop_words: bool,
    /// The JSONL fields or Parquet columns read, which `explain` needs
    /// again to find a page's row.
    pub(crate) id_field: String,
    pub(crate) url_field: String,
    pub(crate) text_field: String,
    pub(crate) workers: usize,
    pub(crate) processes: usize,
    pub(crate) files: Vec<FileSummary>,
    pub(crate) documents: u64,
    pub(crate) bad_records: u64,
    pub(crate) skipped_records: u64,
    /// Documents with nothing to fingerprint (no text, or none the
    /// features read): left out, as their fingerprints would all be 0.
    pub(crate) empty_pages: u64,
    /// The first bad records, with file and offset.
    pub(crate) bad: Vec<FileBadRecord>,
    /// Bytes of the input files as stored (compressed, for `.gz`).
    pub(crate) bytes: u64,
    /// Bytes of the documents, uncompressed and decoded.
    pub(crate) document_bytes: u64,
    pub(crate) seconds: f64,
    /// Of the input files as stored.
    pub(crate) megabytes_per_second: f64,
    /// Of the documents, uncompressed.
    pub(crate) document_megabytes_per_second: f64,
    pub(crate) documents_per_second: f64,
}

impl FingerprintSummary {
    /// The one line printed at the end of a run.
    pub(crate) fn line(&self, out: &Path) -> String {
        format!(
            "fingerprinted {} documents from {} file(s): {} of files at {:.1} MB/s, {} of documents at {:.1} MB/s ({} workers, features {}): {} bad and {} skipped records, {} empty pages left out -> {}",
            self.documents,
            self.files.len(),
            human_bytes(self.bytes),
            self.megabytes_per_second,
            human_bytes(self.document_bytes),
            self.document_megabytes_per_second,
            self.workers * self.processes,
            self.features,
            self.bad_records,
            self.skipped_records,
            self.empty_pages,
            out.display()
        )
    }
}

/// Every file's result, gathered from all workers.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct FileResults(pub(crate) Vec<FileResult>);

impl Merge for FileResults {
    fn merge(&mut self, other: Self) {
        self.0.extend(other.0);
    }
}

/// One file's summary and its bad records.
pub(crate) type FileResult = (FileSummary, Vec<BadRecord>);

/// Refuses a run none of whose records could be read: some were bad (a
/// WET file read as JSONL, a file that is no WARC), and its shards would be
/// empty, every record a warning; or there were none (every file empty: a
/// crawler stopped before it wrote), and an empty night would be committed
/// and later skipped as done. Among readable files, each file none of whose
/// records could be read is named in one warning (a crawler's file cut
/// inside its first record), as is each empty one, and the run goes on.
/// So is a file whose records were read and gave no document (a WARC of
/// images or redirects): its shard is empty too.
pub(crate) fn refuse_unreadable(results: &[FileResult]) -> Result<()> {
    let read = |f: &FileSummary| f.documents > 0 || f.skipped_records > 0 || f.empty_pages > 0;
    refuse_empty(results, read)?;
    for (file, _) in results.iter().filter(|(f, _)| read(f) && f.documents == 0) {
        tracing::warn!(
            "{}: no documents (records skipped: {}, pages without text: {}, bad: {}): its shard is empty",
            file.file,
            file.skipped_records,
            file.empty_pages,
            file.bad_records
        );
    }
    let unreadable = results
        .iter()
        .filter(|(f, bad)| !read(f) && !bad.is_empty());
    let bad_records: usize = results.iter().map(|(_, bad)| bad.len()).sum();
    let none_read = !results.iter().any(|(f, _)| read(f));
    for (file, bad) in unreadable {
        let (first, format) = (&bad[0], file.format);
        let line = format!(
            "{}: no record could be read as {format} ({} bad; the first at offset {}: {})",
            file.file,
            bad.len(),
            first.offset,
            first.reason
        );
        if none_read {
            bail!("{line}; {bad_records} bad records in all and none read: is --format right?");
        }
        tracing::warn!("{line}");
    }
    Ok(())
}

/// Refuses a run whose files hold no record at all, read or bad; warns of
/// each empty file beside others that hold records.
fn refuse_empty(results: &[FileResult], read: impl Fn(&FileSummary) -> bool) -> Result<()> {
    let empty = |f: &FileSummary| !read(f) && f.bad_records == 0;
    let mut empties = results.iter().map(|(f, _)| f).filter(|f| empty(f));
    if results.iter().all(|(f, _)| empty(f)) {
        if let Some(first) = empties.next() {
            let others = results.len() - 1;
            bail!(
                "{}: holds no record, nor do the {others} other input file(s): an empty crawl (a crawler stopped before it wrote?)",
                first.file
            );
        }
    }
    for file in empties {
        tracing::warn!("{}: holds no record", file.file);
    }
    Ok(())
}

/// The run's summary from every file's result, files by shard.
pub(crate) fn summarize(
    mut results: Vec<FileResult>,
    opts: &FingerprintOptions,
    seconds: f64,
) -> FingerprintSummary {
    results.sort_by(|a, b| a.0.shard.cmp(&b.0.shard));
    let files: Vec<FileSummary> = results.iter().map(|(f, _)| f.clone()).collect();
    let bad: Vec<FileBadRecord> = results
        .iter()
        .flat_map(|(f, bad)| {
            bad.iter().map(|record| FileBadRecord {
                file: f.file.clone(),
                record: record.clone(),
            })
        })
        .take(LISTED_BAD_RECORDS)
        .collect();
    let documents = files.iter().map(|f| f.documents).sum::<u64>();
    let bytes = files.iter().map(|f| f.bytes).sum::<u64>();
    let document_bytes = files.iter().map(|f| f.document_bytes).sum::<u64>();
    FingerprintSummary {
        scheme: opts.scheme.describe(true),
        scheme_name: opts.scheme.name().map(str::to_string),
        html_text: opts.scheme.html,
        html_pages: files.iter().map(|f| f.html_pages).sum(),
        main_content_fallbacks: files.iter().map(|f| f.main_content_fallbacks).sum(),
        charsets: files.iter().flat_map(|f| &f.charsets).fold(
            BTreeMap::new(),
            |mut all, (name, pages)| {
                *all.entry(name.clone()).or_default() += pages;
                all
            },
        ),
        charset_guesses: files.iter().map(|f| f.charset_guesses).sum(),
        features: opts.scheme.simhash.features.to_string(),
        log_weights: opts.scheme.simhash.log_weights,
        stop_words: opts.scheme.simhash.stop_words,
        id_field: opts.fields.id.clone(),
        url_field: opts.fields.url.clone(),
        text_field: opts.fields.text.clone(),
        workers: opts.runtime.workers,
        processes: opts.runtime.processes,
        documents,
        bad_records: files.iter().map(|f| f.bad_records).sum(),
        skipped_records: files.iter().map(|f| f.skipped_records).sum(),
        empty_pages: files.iter().map(|f| f.empty_pages).sum(),
        bad,
        bytes,
        document_bytes,
        seconds,
        megabytes_per_second: bytes as f64 / 1e6 / seconds.max(1e-9),
        document_megabytes_per_second: document_bytes as f64 / 1e6 / seconds.max(1e-9),
        documents_per_second: documents as f64 / seconds.max(1e-9),
        files,
    }
}
