//! The `match` command as a library call: read B, design and build its
//! tables, scan F on timely workers, and publish the parts.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Result};
use serde::Serialize;

use crate::dataflow::{self, Counters, Failure, Job, ScanUnit, Side};
use crate::design::{self, Design, BITS, MAX_K};
use crate::pairs::Parts;
use crate::parquet_io::input::{open_inputs, Columns, FingerprintFile, Unit};
use crate::parquet_io::output::Staging;
use crate::progress::{human, ScanProgress};
use crate::tables::{Index, QuerySet};

/// Options of `neardup match`.
#[derive(Clone, Debug)]
pub struct MatchOptions {
    pub queries: Vec<String>,
    pub corpus: Vec<String>,
    pub out: PathBuf,
    pub k: u32,
    pub self_join: bool,
    pub workers: usize,
    pub parts: usize,
    pub overwrite: bool,
    pub columns: Columns,
    pub blocks: Option<u32>,
    pub table_memory: u64,
    pub progress: bool,
}

impl MatchOptions {
    /// Options with the CLI's defaults.
    pub fn new(queries: Vec<String>, corpus: Vec<String>, out: PathBuf) -> MatchOptions {
        MatchOptions {
            queries,
            corpus,
            out,
            k: 3,
            self_join: false,
            workers: 1,
            parts: 1,
            overwrite: false,
            columns: Columns::default(),
            blocks: None,
            table_memory: design::DEFAULT_TABLE_MEMORY,
            progress: false,
        }
    }

    fn validate(&self) -> Result<()> {
        check_k(self.k)?;
        if let Some(m) = self.blocks {
            if m <= self.k || m > BITS {
                bail!(
                    "--blocks {m} is out of range: it must be more than k ({}) and at most 64",
                    self.k
                );
            }
        }
        if self.corpus.is_empty() && !self.self_join {
            bail!("nothing to match: give --corpus, --self, or both");
        }
        if self.workers == 0 {
            bail!("--workers must be at least 1");
        }
        if self.parts == 0 {
            bail!("--parts must be at least 1");
        }
        Ok(())
    }
}

/// Refuses a distance threshold the design does not support.
pub fn check_k(k: u32) -> Result<()> {
    if k > MAX_K {
        bail!("-k {k} is out of range: k must be between 0 and {MAX_K}");
    }
    Ok(())
}

/// What a run did; written to `_summary.json`.
#[derive(Debug, Serialize)]
pub struct MatchSummary {
    pub queries: InputSummary,
    pub corpus: InputSummary,
    pub self_join: bool,
    pub k: u32,
    pub design: Design,
    pub workers: usize,
    pub parts: usize,
    pub rows_scanned: u64,
    pub pairs: u64,
    pub seconds: f64,
    pub build_seconds: f64,
    pub scan_seconds: f64,
    pub rows_per_second: f64,
}

/// One side's inputs.
#[derive(Debug, Serialize)]
pub struct InputSummary {
    pub files: Vec<String>,
    pub rows: u64,
    pub row_groups: usize,
}

impl InputSummary {
    fn of(files: &[FingerprintFile], units: &[Unit]) -> InputSummary {
        InputSummary {
            files: files.iter().map(|f| f.path.display().to_string()).collect(),
            rows: files.iter().map(|f| f.rows()).sum(),
            row_groups: units.len(),
        }
    }
}

/// Runs `match` end to end and returns its summary.
pub fn run_match(opts: &MatchOptions) -> Result<MatchSummary> {
    let started = Instant::now();
    opts.validate()?;
    let staging = Staging::create(&opts.out, opts.overwrite)?;

    let (query_files, query_units) = open_inputs(&opts.queries, &opts.columns)?;
    let (corpus_files, corpus_units) = if opts.corpus.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        open_inputs(&opts.corpus, &opts.columns)?
    };
    let queries = read_queries(&query_files, &opts.columns)?;
    tracing::info!(
        rows = queries.rows(),
        distinct = queries.groups(),
        "read queries"
    );

    let plan = design::plan(
        queries.groups() as u64,
        opts.k,
        opts.table_memory,
        opts.blocks,
    );
    tracing::info!(design = %plan.design.describe(), "table design");
    let parts = Parts::from_sorted_ids(&queries.sorted_ids(), opts.parts);
    let index = Index::build(plan.design, queries, opts.workers);
    let build_seconds = started.elapsed().as_secs_f64();

    let mut units: Vec<ScanUnit> = corpus_units
        .iter()
        .map(|&unit| ScanUnit {
            side: Side::Corpus,
            unit,
        })
        .collect();
    if opts.self_join {
        units.extend(query_units.iter().map(|&unit| ScanUnit {
            side: Side::Queries,
            unit,
        }));
    }
    let total_rows: u64 = units.iter().map(|u| u.unit.rows).sum();
    let summary_inputs = (
        InputSummary::of(&query_files, &query_units),
        InputSummary::of(&corpus_files, &corpus_units),
    );

    let job = Arc::new(Job {
        index,
        parts,
        corpus_files,
        query_files,
        units,
        columns: opts.columns.clone(),
        out_dir: staging.dir().to_path_buf(),
    });
    let counters = Arc::new(Counters::default());
    let progress = ScanProgress::start(
        opts.progress,
        job.units.len() as u64,
        total_rows,
        counters.clone(),
    );
    let scan_started = Instant::now();
    let result = dataflow::run(
        job.clone(),
        timely::Config::process(opts.workers),
        counters.clone(),
        Arc::new(Failure::default()),
    );
    progress.finish();
    result?;
    let scan_seconds = scan_started.elapsed().as_secs_f64();

    let rows_scanned =
        counters.corpus_rows.load(Ordering::Relaxed) + counters.self_rows.load(Ordering::Relaxed);
    let seconds = started.elapsed().as_secs_f64();
    let summary = MatchSummary {
        queries: summary_inputs.0,
        corpus: summary_inputs.1,
        self_join: opts.self_join,
        k: opts.k,
        design: job.index.design.clone(),
        workers: opts.workers,
        parts: job.parts.len(),
        rows_scanned,
        pairs: counters.pairs_written.load(Ordering::Relaxed),
        seconds,
        build_seconds,
        scan_seconds,
        rows_per_second: rows_scanned as f64 / scan_seconds.max(1e-9),
    };
    staging.commit_with_summary(&summary)?;
    Ok(summary)
}

/// Reads every row of B into memory, grouped by fingerprint.
pub fn read_queries(files: &[FingerprintFile], columns: &Columns) -> Result<QuerySet> {
    let mut rows = Vec::new();
    for file in files {
        file.read_all(columns, |ids, fingerprints| {
            rows.extend(fingerprints.iter().copied().zip(ids.iter().copied()));
            Ok(())
        })?;
    }
    Ok(QuerySet::from_rows(rows))
}

impl MatchSummary {
    /// The one line printed at the end of a run.
    pub fn line(&self, out: &std::path::Path) -> String {
        format!(
            "matched {} rows against {} queries (k={}, {}) in {:.2}s ({} rows/s, {} workers): {} pairs in {} part(s) -> {}",
            human(self.rows_scanned as f64),
            human(self.queries.rows as f64),
            self.k,
            self.design.describe(),
            self.seconds,
            human(self.rows_per_second),
            self.workers,
            self.pairs,
            self.parts,
            out.display()
        )
    }
}
