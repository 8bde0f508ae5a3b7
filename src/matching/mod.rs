//! The `match` command as a library call: read B, design and build its
//! tables, scan F on timely workers, and publish the parts.

pub(crate) mod dataflow;
pub mod design;
pub mod kernel;
pub(crate) mod lead_groups;
pub(crate) mod pair_runs;
pub mod probe;
pub(crate) mod progress;
pub mod tables;
pub mod verify;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{bail, Result};
use serde::Serialize;

use crate::exec::parallel::lock;
use crate::exec::parallel::{in_parallel, Tickets};
use crate::exec::progress::human;
use crate::exec::runtime::{RuntimeOptions, Terms};
use crate::io::commit::commit_staging;
use crate::io::pairs::Parts;
use crate::io::parquet::input::{into_finer_units, open_inputs, Columns, FingerprintFile, Unit};
use crate::io::parquet::schemes;
use crate::io::parquet::WIDE_BITS;
use crate::io::staging::{part_name, Staging};
use crate::io::storage::tails_digest;
use crate::matching::dataflow::{process_units, IdSet, Job, MatchTotals, ScanUnit, Side};
use crate::matching::design::{Design, MAX_K};
use crate::matching::kernel::Kernel;
use crate::matching::pair_runs::DEFAULT_PAIR_MEMORY_MIB;
use crate::matching::progress::{ScanCounters, ScanProgress};
use crate::matching::tables::{Index, QueryRows, QuerySet};
use crate::matching::verify::{QuerySketches, Threshold, Verification};

/// Options of `neardup match`.
#[derive(Clone, Debug)]
pub struct MatchOptions {
    pub(crate) queries: Vec<String>,
    pub(crate) corpus: Vec<String>,
    pub(crate) out: PathBuf,
    pub k: u32,
    pub self_join: bool,
    /// Match B and F even when their fingerprint schemes differ.
    pub(crate) allow_mixed_schemes: bool,
    pub runtime: RuntimeOptions,
    pub parts: usize,
    pub overwrite: bool,
    pub(crate) columns: Columns,
    /// Blocks of the table design (`--blocks`); none: planned.
    pub blocks: Option<u32>,
    pub(crate) table_memory: u64,
    /// The probe kernel (`--kernel`); none: this CPU's best.
    pub kernel: Option<Kernel>,
    /// Bytes of pairs a worker holds in memory before it spills them to
    /// disk as sorted runs.
    pub pair_memory: u64,
    /// `--verify`: keep the pairs within this wide distance (see
    /// [`verify`]); none: every pair within k.
    pub verify_threshold: Option<Threshold>,
    pub(crate) progress: bool,
}

impl MatchOptions {
    /// Options with the CLI's defaults, on one worker of one process (the
    /// CLI's workers default to every core).
    pub fn new(queries: Vec<String>, corpus: Vec<String>, out: PathBuf) -> MatchOptions {
        MatchOptions {
            queries,
            corpus,
            out,
            k: 3,
            self_join: false,
            allow_mixed_schemes: false,
            runtime: RuntimeOptions::default(),
            parts: 1,
            overwrite: false,
            columns: Columns::default(),
            blocks: None,
            table_memory: design::DEFAULT_TABLE_MEMORY,
            kernel: None,
            pair_memory: DEFAULT_PAIR_MEMORY_MIB << 20,
            verify_threshold: None,
            progress: false,
        }
    }

    /// Refuses options no run could take, before anything is read (a
    /// job's, before its first stage runs).
    pub(crate) fn validate(&self) -> Result<()> {
        check_k(self.k)?;
        design::check_blocks_range(self.k, self.blocks)?;
        if let Some(Threshold::Given(t)) = self.verify_threshold {
            if t > WIDE_BITS {
                bail!("--verify-threshold {t} is out of range: the wide distance is at most {WIDE_BITS}");
            }
        }
        design::check_table_memory(self.table_memory)?;
        if self.pair_memory == 0 {
            bail!("--pair-memory-mib 0 leaves no memory for pairs: give at least 1");
        }
        if self.corpus.is_empty() && !self.self_join {
            bail!("nothing to match: give --corpus, --self, or both");
        }
        self.runtime.validate()?;
        if self.parts == 0 {
            bail!("--parts must be at least 1");
        }
        Ok(())
    }
}

/// Refuses a distance threshold the design does not support.
pub(crate) fn check_k(k: u32) -> Result<()> {
    if k > MAX_K {
        bail!("-k {k} is out of range: k must be between 0 and {MAX_K}");
    }
    Ok(())
}

/// What a run did; written to `_summary.json`.
#[derive(Clone, Debug, Serialize)]
pub struct MatchSummary {
    pub(crate) queries: InputSummary,
    pub(crate) corpus: InputSummary,
    /// The fingerprint schemes the inputs record (one, or none when no
    /// input records one; several only with `--allow-mixed-schemes`).
    pub(crate) schemes: Vec<String>,
    pub(crate) self_join: bool,
    pub(crate) k: u32,
    pub(crate) design: Design,
    /// The probe kernel that ran ([`Kernel::runs`]).
    pub(crate) kernel: &'static str,
    pub(crate) workers: usize,
    pub(crate) processes: usize,
    pub(crate) parts: usize,
    pub(crate) rows_scanned: u64,
    pub(crate) pairs: u64,
    /// Pairs (sightings, before the de-duplication) spilled to disk beyond
    /// `--pair-memory-mib`.
    pub pairs_spilled: u64,
    /// `--verify`'s threshold on the wide distance, if verified.
    pub(crate) verify_threshold: Option<u32>,
    /// Pairs within k that `--verify` checked (sightings, before the
    /// de-duplication); 0 without it.
    pub(crate) candidates: u64,
    pub(crate) seconds: f64,
    pub(crate) build_seconds: f64,
    pub(crate) scan_seconds: f64,
    pub(crate) rows_per_second: f64,
}

/// One side's inputs.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct InputSummary {
    pub(crate) files: Vec<String>,
    pub(crate) rows: u64,
    pub(crate) row_groups: usize,
}

impl InputSummary {
    fn of(files: &[FingerprintFile], units: &[Unit]) -> InputSummary {
        InputSummary {
            files: files.iter().map(|f| f.path.to_string()).collect(),
            rows: files.iter().map(|f| f.rows()).sum(),
            row_groups: units.len(),
        }
    }
}

/// Runs `match` end to end and returns its summary. On several processes every
/// process calls this with its own `--process`; process 0 creates the output
/// directory and commits it once every worker's parts are written.
pub fn run_match(opts: &MatchOptions) -> Result<MatchSummary> {
    let started = Instant::now();
    tracing::info!("match started");
    opts.validate()?;
    crate::exec::runtime::stage_starting(&opts.runtime);
    let mut staging = Staging::for_job(
        &opts.out,
        opts.overwrite,
        opts.runtime.is_leader(),
        opts.queries.iter().chain(&opts.corpus),
    )?;
    let inputs = Inputs::open(opts)?;
    let threads = opts.runtime.workers;
    let verifying = inputs.verify_threshold.is_some();
    let rows = read_query_rows(
        &inputs.query_files,
        &inputs.query_units,
        &opts.columns,
        threads,
        verifying,
    )?;
    let verify = inputs.verify_threshold.map(|threshold| Verification {
        threshold,
        queries: QuerySketches::of_rows(&rows),
    });
    let queries = query_set(rows, threads);
    if let Some(verify) = &verify {
        assert_eq!(
            verify.queries.rows(),
            queries.rows(),
            "a sketch per row of B"
        );
    }
    tracing::info!(
        rows = queries.rows(),
        distinct = queries.groups(),
        "read queries"
    );

    // With `--self`, B's rows are the newest of their pages: a corpus row
    // of a page B holds again is an older version, compared by B's row.
    let supersedes = opts.self_join && !inputs.corpus_files.is_empty();
    // B's ids are sorted only when asked for: one part needs no boundaries.
    let sorted_ids = match opts.parts > 1 || supersedes {
        true => queries.sorted_ids(),
        false => Vec::new(),
    };
    let parts = Parts::from_sorted_ids(&sorted_ids, opts.parts);
    let superseded = supersedes.then(|| IdSet::new(sorted_ids));
    let index = build_tables(opts, queries)?;
    if let Some(staging) = &mut staging {
        staging.expect_parts((0..parts.len()).map(|p| part_name(p).into()));
    }
    let build_seconds = started.elapsed().as_secs_f64();

    let units = scan_units(
        &inputs.corpus_units,
        opts.self_join.then_some(&inputs.query_units[..]),
    );
    let summary = Arc::new(Mutex::new(SummaryDraft {
        queries: InputSummary::of(&inputs.query_files, &inputs.query_units),
        corpus: InputSummary::of(&inputs.corpus_files, &inputs.corpus_units),
        schemes: inputs.schemes,
        verify_threshold: inputs.verify_threshold,
        design: index.design.clone(),
        kernel: index.kernel.runs(),
        parts: parts.len(),
        build_seconds,
        started,
        scan_started: Instant::now(),
    }));
    // --verify-threshold before -k, which verifying widens.
    let terms = Terms::new("match", &opts.runtime)
        .with_shown(
            "--verify-threshold",
            (inputs.verify_threshold).map_or("none".into(), |t| t.to_string()),
        )
        .with_shown("-k", opts.k)
        .with_shown("--self", opts.self_join)
        .with_shown("--parts", opts.parts)
        .with_shown(
            "--blocks",
            opts.blocks.map_or("automatic".into(), |m| m.to_string()),
        )
        .with_shown("--table-memory-mib", opts.table_memory >> 20)
        .with_all_shown(opts.columns.as_flags())
        .with_shown("--out", opts.out.display())
        .with_files("queries", &files_and_rows(&inputs.query_files), "rows")
        .with_files("corpus", &files_and_rows(&inputs.corpus_files), "rows")
        .with_input_tails(&opts.runtime, || {
            let files = inputs.query_files.iter().chain(&inputs.corpus_files);
            tails_digest(files.map(|file| &file.path))
        })?;
    let mine = process_units(&units, opts.runtime.processes, opts.runtime.process);
    let local_rows = mine.iter().map(|&u| units[u].unit.rows).sum();
    let local_units = mine.len() as u64;
    let job = Arc::new(Job {
        index,
        parts,
        corpus_files: inputs.corpus_files,
        query_files: inputs.query_files,
        units,
        tickets: Tickets::new(mine.len()),
        mine,
        columns: opts.columns.clone(),
        out_dir: Staging::dir_for(&opts.out)?,
        pair_memory: opts.pair_memory,
        verify,
        superseded,
    });
    let counters = Arc::new(ScanCounters::default());
    let progress = ScanProgress::start(opts.progress, local_units, local_rows, counters.clone());
    let (commit, written) = {
        let (summary, opts) = (summary.clone(), opts.clone());
        commit_staging(staging, move |totals: &MatchTotals| {
            Ok(lock(&summary).finish(&opts, *totals))
        })
    };
    let result = dataflow::run(job, &opts.runtime, &terms, counters, commit);
    progress.finish();
    let totals = result?;
    let committed = lock(&written).take();
    Ok(committed.unwrap_or_else(|| lock(&summary).finish(opts, totals)))
}

/// `mib` MiB in bytes; a figure beyond any machine's memory is as good as
/// no limit (shifted, it would wrap around to a small one).
pub(crate) fn bytes_of_mib(mib: u64) -> u64 {
    mib.saturating_mul(1 << 20)
}

/// Each file's path and rows, which every process must see alike.
fn files_and_rows(files: &[FingerprintFile]) -> Vec<(String, u64)> {
    files
        .iter()
        .map(|f| (f.path.to_string(), f.rows()))
        .collect()
}

/// The fingerprint files of B and F, their units, and what their schemes
/// decide.
struct Inputs {
    query_files: Vec<FingerprintFile>,
    query_units: Vec<Unit>,
    corpus_files: Vec<FingerprintFile>,
    corpus_units: Vec<Unit>,
    /// The schemes B and F record (one unless mixed schemes are allowed).
    schemes: Vec<String>,
    /// `--verify`'s threshold, for the schemes the files record.
    verify_threshold: Option<u32>,
}

impl Inputs {
    /// Opens B and F (footers only) and checks them against each other
    /// and against the options: sketches for `--verify`, one scheme unless
    /// mixed schemes are allowed.
    fn open(opts: &MatchOptions) -> Result<Inputs> {
        let (query_files, query_units) = open_inputs(&opts.queries, &opts.columns)?;
        let (corpus_files, corpus_units) = match opts.corpus.is_empty() {
            true => (Vec::new(), Vec::new()),
            false => open_inputs(&opts.corpus, &opts.columns)?,
        };
        if opts.verify_threshold.is_some() {
            for file in query_files.iter().chain(&corpus_files) {
                file.check_sketch()?;
            }
        }
        let file_schemes = schemes_of(&query_files, &corpus_files);
        let schemes = same_schemes(&file_schemes, opts.allow_mixed_schemes)?;
        let verify_threshold = opts.verify_threshold.map(|t| {
            let (threshold, why) = t.resolve(file_schemes.iter().map(|f| f.scheme.as_deref()));
            tracing::info!(threshold, why, "verify threshold");
            threshold
        });
        Ok(Inputs {
            query_files,
            query_units,
            corpus_files,
            corpus_units,
            schemes,
            verify_threshold,
        })
    }
}

/// Chooses the kernel and the table design for B and builds the tables.
fn build_tables(opts: &MatchOptions, queries: QuerySet) -> Result<Index> {
    let (kernel, why) = Kernel::choose(opts.kernel)?;
    let stored = queries.groups() as u64;
    design::check_blocks(stored, opts.k, opts.blocks, opts.table_memory)?;
    let plan = design::plan(
        stored,
        opts.k,
        opts.table_memory,
        opts.blocks,
        kernel.probe_cost(),
    );
    plan.refuse_over_budget()?;
    tracing::info!(
        design = %plan.design.describe(),
        kernel = kernel.runs(),
        why,
        "table design"
    );
    let building = Instant::now();
    let index = Index::build(plan.design, queries, opts.runtime.workers).probed_by(kernel);
    let seconds = building.elapsed().as_secs_f64();
    tracing::info!(seconds, "tables built");
    Ok(index)
}

/// The scheme each file of B and F records.
fn schemes_of(queries: &[FingerprintFile], corpus: &[FingerprintFile]) -> Vec<schemes::SchemeOf> {
    let sides = [("B", queries), ("F", corpus)];
    sides
        .iter()
        .flat_map(|&(side, files)| {
            files.iter().map(move |f| schemes::SchemeOf {
                side,
                path: f.path.to_string(),
                scheme: f.scheme(),
            })
        })
        .collect()
}

/// The fingerprint schemes of B's and F's files, refused when they differ
/// (see [`schemes::check_same`]).
fn same_schemes(files: &[schemes::SchemeOf], allow_mixed: bool) -> Result<Vec<String>> {
    let (schemes, mixed) = schemes::check_same(files, allow_mixed)?;
    let unrecorded: Vec<&schemes::SchemeOf> = files.iter().filter(|f| f.scheme.is_none()).collect();
    if let (Some(first), false) = (unrecorded.first(), schemes.is_empty()) {
        // A shard rewritten by another tool (a DuckDB COPY, a Spark job)
        // loses the scheme neardup recorded: nothing checks it any more.
        tracing::warn!(
            "{} ({}) and {} more file(s) record no fingerprint scheme: they are matched against `{}` unchecked",
            first.path,
            first.side,
            unrecorded.len() - 1,
            schemes.join(" | ")
        );
    }
    if mixed {
        tracing::warn!(
            "matching fingerprints of {} schemes (--allow-mixed-schemes): {}",
            schemes.len(),
            schemes.join(" | ")
        );
    }
    Ok(schemes)
}

/// The corpus units, then (with `--self`) B's own.
fn scan_units(corpus: &[Unit], queries: Option<&[Unit]>) -> Vec<ScanUnit> {
    let side = |side| move |&unit| ScanUnit { side, unit };
    let mut units: Vec<ScanUnit> = corpus.iter().map(side(Side::Corpus)).collect();
    units.extend(queries.unwrap_or_default().iter().map(side(Side::Queries)));
    units
}

/// The parts of the summary known before the scan.
struct SummaryDraft {
    queries: InputSummary,
    corpus: InputSummary,
    schemes: Vec<String>,
    /// `--verify`'s threshold, resolved for the shards.
    verify_threshold: Option<u32>,
    design: Design,
    kernel: &'static str,
    parts: usize,
    build_seconds: f64,
    started: Instant,
    scan_started: Instant,
}

impl SummaryDraft {
    fn finish(&self, opts: &MatchOptions, totals: MatchTotals) -> MatchSummary {
        let scan_seconds = self.scan_started.elapsed().as_secs_f64();
        let rows_scanned = totals.corpus_rows + totals.self_rows;
        MatchSummary {
            queries: self.queries.clone(),
            corpus: self.corpus.clone(),
            schemes: self.schemes.clone(),
            self_join: opts.self_join,
            k: opts.k,
            design: self.design.clone(),
            kernel: self.kernel,
            workers: opts.runtime.workers,
            processes: opts.runtime.processes,
            parts: self.parts,
            rows_scanned,
            pairs: totals.pairs,
            pairs_spilled: totals.pairs_spilled,
            verify_threshold: self.verify_threshold,
            candidates: totals.candidates,
            seconds: self.started.elapsed().as_secs_f64(),
            build_seconds: self.build_seconds,
            scan_seconds,
            rows_per_second: rows_scanned as f64 / scan_seconds.max(1e-9),
        }
    }
}

/// Reads every row of B (its files' `units`) into memory, grouped by
/// fingerprint, on `threads` threads: on one, the other cores would wait
/// for the reading and the sort.
pub(crate) fn read_queries(
    files: &[FingerprintFile],
    units: &[Unit],
    columns: &Columns,
    threads: usize,
) -> Result<QuerySet> {
    let rows = read_query_rows(files, units, columns, threads, false)?;
    Ok(query_set(rows, threads))
}

/// Reads every row of B (its files' `units`), with its sketch if
/// `sketches`, on `threads` threads, a piece each at a time.
fn read_query_rows(
    files: &[FingerprintFile],
    units: &[Unit],
    columns: &Columns,
    threads: usize,
    sketches: bool,
) -> Result<Vec<QueryRows>> {
    let pieces = into_finer_units(files, units, threads);
    let rows = in_parallel(pieces.len(), threads, |p| {
        let unit = &pieces[p];
        let file = &files[unit.file];
        // Not sized from the footer, which proved slower.
        let (mut ids, mut fingerprints, mut sketched) = (Vec::new(), Vec::new(), Vec::new());
        file.read_fetched(file.fetch_unit(unit), columns, &mut ids, &mut fingerprints)?;
        if sketches {
            let rows: Vec<u64> = (unit.offset..unit.offset + unit.rows).collect();
            file.read_sketches(unit.row_group, &rows, &mut sketched)?;
        }
        Ok(QueryRows {
            ids,
            fingerprints,
            sketches: sketched,
        })
    });
    rows.into_iter().collect()
}

/// B's rows grouped by fingerprint, sorted on `threads` threads.
fn query_set(rows: Vec<QueryRows>, threads: usize) -> QuerySet {
    let runs = rows
        .into_iter()
        .map(|piece| piece.fingerprints.into_iter().zip(piece.ids).collect())
        .collect();
    QuerySet::from_runs(runs, threads)
}

impl MatchSummary {
    /// The one line printed at the end of a run.
    pub(crate) fn line(&self, out: &std::path::Path) -> String {
        let verified = match self.verify_threshold {
            Some(t) => format!(
                " (verified: wide distance <= {t}, of {} candidates)",
                self.candidates
            ),
            None => String::new(),
        };
        format!(
            "matched {} rows against {} queries (k={}, {}) in {:.2}s ({} rows/s, {} worker(s)): {} pairs{verified} in {} part(s) -> {}",
            human(self.rows_scanned as f64),
            human(self.queries.rows as f64),
            self.k,
            self.design.describe(),
            self.seconds,
            human(self.rows_per_second),
            self.workers * self.processes,
            self.pairs,
            self.parts,
            out.display()
        )
    }
}
