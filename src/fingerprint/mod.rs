//! The `fingerprint` command as a library call: crawl documents in, one
//! fingerprint shard per input file out.
//!
//! Input files are assigned to timely workers statically (file `i` to worker
//! `i % peers`, counting the workers of every process of a cluster), so shard
//! `part-0000i.parquet` always comes from input file `i` in sorted order,
//! whatever the number of workers or processes. That worker reads the file;
//! all workers fingerprint its documents (see [`crate::fingerprint::dataflow`]).

pub mod crawl;
pub(crate) mod dataflow;
pub(crate) mod explain;
pub mod scheme;
pub mod simhash;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::exec::parallel::lock;
use crate::exec::progress::TextCounters;
use crate::exec::progress::{human, BytesProgress};
use crate::exec::runtime::Failure;
use crate::exec::runtime::{self, RuntimeOptions, Terms};
use crate::fingerprint::crawl::html::PageText;
use crate::fingerprint::crawl::{BadRecord, Format, TextFields};
use crate::fingerprint::dataflow::{
    fingerprint_batches, in_reading_order, read_documents, write_shards, FileRead, FilesRead,
    InFlight, InputFile, ReadState, RowBatch,
};
use crate::fingerprint::scheme::Scheme;
use crate::io::commit::{
    await_outcome, commit_staging, gather_and_commit, Merge, OutcomeSlot, Report,
};
use crate::io::parquet::input::expand_locations_with;
use crate::io::parquet::output::write_documents;
use crate::io::staging::{part_name, Staging};
use crate::io::storage::Location;

/// Bad records listed in `_summary.json` (all are counted).
const LISTED_BAD_RECORDS: usize = 1000;

/// Options of `neardup fingerprint`.
#[derive(Clone, Debug)]
pub(crate) struct FingerprintOptions {
    pub(crate) inputs: Vec<String>,
    pub(crate) out: PathBuf,
    /// The input format; `None` tells it from each file's name.
    pub(crate) format: Option<Format>,
    pub(crate) fields: TextFields,
    /// How documents are fingerprinted, HTML pages' text chosen included.
    pub(crate) scheme: Scheme,
    pub(crate) runtime: RuntimeOptions,
    pub(crate) overwrite: bool,
    pub(crate) progress: bool,
}

impl FingerprintOptions {
    /// Options with the CLI's defaults.
    pub(crate) fn new(inputs: Vec<String>, out: PathBuf) -> FingerprintOptions {
        FingerprintOptions {
            inputs,
            out,
            format: None,
            fields: TextFields::default(),
            scheme: Scheme::default(),
            runtime: RuntimeOptions::default(),
            overwrite: false,
            progress: false,
        }
    }
}

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
    /// The fingerprint scheme, as every shard's metadata records it.
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
    pub(crate) workers: usize,
    pub(crate) processes: usize,
    pub(crate) files: Vec<FileSummary>,
    pub(crate) documents: u64,
    pub(crate) bad_records: u64,
    pub(crate) skipped_records: u64,
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
            "fingerprinted {} documents from {} file(s): {} of files at {:.1} MB/s, {} of documents at {:.1} MB/s ({} workers, features {}): {} bad and {} skipped records -> {}",
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
            out.display()
        )
    }
}

fn human_bytes(bytes: u64) -> String {
    format!("{}B", human(bytes as f64))
}

/// Every file's result, gathered from all workers.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct FileResults(Vec<FileResult>);

impl Merge for FileResults {
    fn merge(&mut self, other: Self) {
        self.0.extend(other.0);
    }
}

/// Runs `fingerprint` end to end and returns its summary. On a cluster every
/// process calls this; process 0 creates the output and commits it.
pub(crate) fn run_fingerprint(opts: &FingerprintOptions) -> Result<FingerprintSummary> {
    let started = Instant::now();
    opts.runtime.validate()?;
    runtime::stage_starting(&opts.runtime);
    let inputs = input_files(opts)?;
    let mut staging = Staging::for_job(
        &opts.out,
        opts.overwrite,
        opts.runtime.is_leader(),
        &opts.inputs,
    )?;
    if let Some(staging) = &mut staging {
        staging.expect_parts((0..inputs.len()).map(|i| part_name(i).into()));
    }
    let dir = Staging::dir_for(&opts.out)?;
    let local_bytes: u64 = inputs
        .iter()
        .enumerate()
        .filter(|(i, _)| opts.runtime.runs_here(*i))
        .map(|(_, (_, _, bytes))| bytes)
        .sum();
    let counters = Arc::new(TextCounters::default());
    let progress = BytesProgress::start(opts.progress, local_bytes, counters.clone());

    let (commit, written) = {
        let opts = opts.clone();
        commit_staging(staging, move |results: &FileResults| {
            summarize(results.0.clone(), &opts, started.elapsed().as_secs_f64())
        })
    };
    let files: Vec<(String, u64)> = inputs
        .iter()
        .map(|(file, _, bytes)| (file.to_string(), *bytes))
        .collect();
    let terms = Terms::new("fingerprint", &opts.runtime)
        .with("--format", opts.format)
        .with("fields", &opts.fields)
        .with("--scheme", opts.scheme)
        .with("--out", &opts.out)
        .with("inputs", files);
    let failure = Arc::new(Failure::default());
    let outcome = Arc::new(OutcomeSlot::default());
    let job = Arc::new((inputs, opts.clone(), dir));
    crate::fingerprint::simhash::prepare_han_segmentation(&opts.scheme.simhash);
    let guards = {
        let (failure, outcome, counters) = (failure.clone(), outcome.clone(), counters.clone());
        runtime::execute(&opts.runtime, &terms, move |worker| {
            let (me, peers) = (worker.index(), worker.peers());
            let (job, counters) = (job.clone(), counters.clone());
            let (commit, outcome) = (commit.clone(), outcome.clone());
            let state = ReadState {
                report: Rc::new(RefCell::new(Report::new(me))),
                failure: failure.clone(),
                read: FilesRead::default(),
                in_flight: Rc::new(RefCell::new(InFlight::new(peers))),
                wake_reader: Rc::default(),
            };
            worker.dataflow::<u64, _, _>(move |scope| {
                let (inputs, opts, _) = &*job;
                let mine: Vec<InputFile> = inputs
                    .iter()
                    .enumerate()
                    .skip(me)
                    .step_by(peers)
                    .map(|(i, (path, format, bytes))| (i, path.clone(), *format, *bytes))
                    .collect();
                // Batches in flight: 8 a worker, a few MiB of text (see
                // `spawn_reader`'s channel for why not 4).
                let window = (8 * peers).clamp(16, 128);
                let fields = opts.fields.clone();
                let http = opts.scheme.http;
                let batches =
                    read_documents(scope, mine, fields, http, counters.clone(), window, &state);
                let rows = fingerprint_batches(batches, opts.scheme, counters);
                let write = {
                    let (job, report) = (job.clone(), state.report.clone());
                    Box::new(move |file: u32, found: FileRead, batches| {
                        let (inputs, opts, dir) = &*job;
                        let (path, format, bytes) = &inputs[file as usize];
                        let shard = dir.join(part_name(file as usize));
                        let result =
                            write_shard(path, *format, *bytes, &shard, opts, found, batches)?;
                        report.borrow_mut().body.0.push(result);
                        Ok(())
                    })
                };
                let reports = write_shards(rows, peers, &state, write);
                gather_and_commit(reports, me, peers, commit, outcome);
            });
        })?
    };
    let result = await_outcome(guards, &failure, &outcome);
    progress.finish();
    let results = result?;
    if let Some(summary) = lock(&written).take() {
        return Ok(summary);
    }
    Ok(summarize(results.0, opts, started.elapsed().as_secs_f64()))
}

/// The input files in sorted order, each with its format and size.
pub(crate) fn input_files(opts: &FingerprintOptions) -> Result<Vec<(Location, Format, u64)>> {
    let formats = match &opts.format {
        Some(format) => std::slice::from_ref(format),
        None => <Format as clap::ValueEnum>::value_variants(),
    };
    let extensions: Vec<&str> = formats
        .iter()
        .flat_map(|f| f.extensions().iter().copied())
        .collect();
    let files = expand_locations_with(&opts.inputs, &extensions)?;
    files
        .into_iter()
        .map(|path| {
            let format = match opts.format {
                Some(format) => format,
                None => Format::from_path(&path)?,
            };
            let bytes = path.size()?;
            Ok((path, format, bytes))
        })
        .collect()
}

/// One file's summary and its bad records.
type FileResult = (FileSummary, Vec<BadRecord>);

/// Writes one input file's shard from its rows, gathered from the workers
/// that fingerprinted them.
fn write_shard(
    path: &Location,
    format: Format,
    bytes: u64,
    shard: &Path,
    opts: &FingerprintOptions,
    found: FileRead,
    batches: Vec<RowBatch>,
) -> Result<FileResult> {
    let (rows, html_pages, fallbacks) = in_reading_order(&found, batches)
        .with_context(|| format!("{path}: cannot gather its rows"))?;
    // Only WARC files hold HTML pages; their shards' scheme names the text
    // chosen from them.
    let scheme = opts.scheme.describe(format == Format::Warc);
    let file = path.to_string();
    write_documents(shard, &rows, &scheme, &file)?;
    let summary = FileSummary {
        file,
        shard: shard
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        format,
        bytes,
        document_bytes: found.document_bytes,
        documents: rows.ids.len() as u64,
        bad_records: found.bad.len() as u64,
        skipped_records: found.skipped,
        html_pages,
        main_content_fallbacks: fallbacks,
        charsets: found.charsets,
        charset_guesses: found.charset_guesses,
        scheme,
    };
    Ok((summary, found.bad))
}

fn summarize(
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
        workers: opts.runtime.workers,
        processes: opts.runtime.processes,
        documents,
        bad_records: files.iter().map(|f| f.bad_records).sum(),
        skipped_records: files.iter().map(|f| f.skipped_records).sum(),
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
