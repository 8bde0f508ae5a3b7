//! The `fingerprint` command as a library call: crawl documents in, one
//! fingerprint shard per input file out.
//!
//! Input files are assigned to timely workers statically (file `i` to worker
//! `i % peers`, counting the workers of every process of the run), so shard
//! `part-0000i.parquet` always comes from input file `i` (in the order the
//! inputs are given, each directory's or glob's files sorted),
//! whatever the number of workers or processes. That worker reads the file;
//! all workers fingerprint its documents (see [`crate::fingerprint::dataflow`]).

pub mod crawl;
pub(crate) mod dataflow;
pub(crate) mod explain;
pub(crate) mod options;
pub(crate) mod progress;
pub mod scheme;
pub mod simhash;
pub(crate) mod summary;

pub(crate) use options::FingerprintOptions;

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::exec::parallel::lock;
use crate::exec::runtime::Failure;
use crate::exec::runtime::{self, Terms};
use crate::fingerprint::crawl::Format;
use crate::fingerprint::dataflow::{
    fingerprint_batches, in_reading_order, read_documents, write_shards, FileRead, FilesRead,
    InFlight, InputFile, ReadState, RowBatch,
};
use crate::fingerprint::progress::{BytesProgress, TextCounters};
use crate::fingerprint::summary::{
    refuse_unreadable, summarize, FileResult, FileResults, FileSummary, FingerprintSummary,
};
use crate::io::commit::{
    await_outcome, commit_staging, gather_and_commit, OutcomeSlot, WorkerOutcome,
};
use crate::io::parquet::input::expand_locations_with;
use crate::io::parquet::output::write_documents;
use crate::io::staging::{mark_process_present, part_name, Staging};
use crate::io::storage::{tails_digest, Location};

/// Runs `fingerprint` end to end and returns its summary. On several processes every
/// process calls this; process 0 creates the output and commits it.
pub(crate) fn run_fingerprint(opts: &FingerprintOptions) -> Result<FingerprintSummary> {
    let started = Instant::now();
    opts.runtime.validate()?;
    runtime::stage_starting(&opts.runtime);
    let inputs = input_files(opts)?;
    refuse_an_unread_time_field(opts, &inputs)?;
    tracing::info!(
        files = inputs.len(),
        bytes = inputs.iter().map(|(_, _, bytes)| bytes).sum::<u64>(),
        scheme = opts.scheme.name().unwrap_or("given by flags"),
        "fingerprint started"
    );
    let mut staging = Staging::for_job(
        &opts.out,
        opts.overwrite,
        opts.runtime.is_leader(),
        &opts.inputs,
    )?;
    if let Some(staging) = &mut staging {
        staging.expect_parts((0..inputs.len()).map(|i| part_name(i).into()));
        staging.expect_processes(opts.runtime.processes);
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
            refuse_unreadable(&results.0)?;
            Ok(summarize(
                results.0.clone(),
                &opts,
                started.elapsed().as_secs_f64(),
            ))
        })
    };
    let files: Vec<(String, u64)> = inputs
        .iter()
        .map(|(file, _, bytes)| (file.to_string(), *bytes))
        .collect();
    let terms = Terms::new("fingerprint", &opts.runtime)
        .with_shown(
            "--format",
            opts.format.map_or("by name".into(), |f| f.to_string()),
        )
        .with_all_shown(opts.fields.as_flags())
        .with_shown("the scheme", opts.scheme.as_flags())
        .with_shown("--out", opts.out.display())
        .with_files("inputs", &files, "bytes")
        .with_input_tails(&opts.runtime, || {
            tails_digest(inputs.iter().map(|(file, _, _)| file))
        })?;
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
                report: Rc::new(RefCell::new(WorkerOutcome::new(me))),
                failure: failure.clone(),
                read: FilesRead::default(),
                in_flight: Rc::new(RefCell::new(InFlight::new(peers))),
                wake_reader: Rc::default(),
            };
            let (out, dir) = (&job.1.out, &job.2);
            if me % job.1.runtime.workers == 0 {
                let marked = mark_process_present(out, dir, job.1.runtime.process);
                if let Err(error) = marked {
                    state.report.borrow_mut().fail(error, &failure);
                }
            }
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
                        tracing::info!(
                            file = %path,
                            documents = result.0.documents,
                            bad_records = result.0.bad_records,
                            "shard written"
                        );
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

/// The input files in the order given, each directory's or glob's files
/// sorted, each with its format and size.
pub(crate) fn input_files(opts: &FingerprintOptions) -> Result<Vec<(Location, Format, u64)>> {
    if opts.inputs.is_empty() {
        bail!("no input given: name the crawl files or directories");
    }
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

/// Refuses a time field when every input is WARC or WET: their records
/// take their fetch time from `WARC-Date`, and the field, accepted, would
/// seem to have been read.
fn refuse_an_unread_time_field(
    opts: &FingerprintOptions,
    inputs: &[(Location, Format, u64)],
) -> Result<()> {
    let crawl_only =
        (inputs.iter()).all(|(_, format, _)| matches!(format, Format::Warc | Format::Wet));
    match (&opts.fields.time, crawl_only) {
        (Some(field), true) => bail!(
            "time field `{field}` is given, but the input is WARC or WET, whose records take their fetch time from WARC-Date: leave it out (it is for JSONL and Parquet)"
        ),
        _ => Ok(()),
    }
}

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
    let (rows, counts) = in_reading_order(&found, batches)
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
        html_pages: counts.html_pages,
        main_content_fallbacks: counts.fallbacks,
        empty_pages: counts.empty,
        charsets: found.charsets,
        charset_guesses: found.charset_guesses,
        scheme,
    };
    Ok((summary, found.bad))
}
