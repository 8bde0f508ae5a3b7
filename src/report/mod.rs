//! `neardup report`: a night's results as one HTML page, and the trends of
//! several nights.
//!
//! It reads only what the stages wrote ([`night`]): their summaries, the
//! pairs' distances, the clusters, the drops, and the night's fingerprints
//! for URLs. The page ([`page`]) is self-contained, its charts inline SVG
//! ([`svg`]), so it opens offline, from an object store or a CI artifact.
//! The nights and the page may be local or in an object store.
//! With several nights, the last is shown in detail and all in the trends.

mod night;
mod page;
mod svg;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Result};

use crate::exec::progress::RowsProgress;
use crate::io::parquet::output::write_file;
pub(crate) use night::NightDirs;

/// What `neardup report` was asked.
#[derive(Clone, Debug)]
pub(crate) struct ReportOptions {
    /// The nights, oldest first; the last is shown in detail.
    pub(crate) nights: Vec<NightDirs>,
    pub(crate) out: PathBuf,
    pub(crate) progress: bool,
}

/// What a report run did.
#[derive(Debug)]
pub(crate) struct ReportSummary {
    pub(crate) nights: usize,
    pub(crate) rows_read: u64,
    pub(crate) bytes: usize,
    pub(crate) seconds: f64,
}

impl ReportSummary {
    /// The line the command prints.
    pub(crate) fn line(&self, out: &std::path::Path) -> String {
        format!(
            "reported {} night(s) from {} rows in {:.2}s: {} bytes -> {}",
            self.nights,
            self.rows_read,
            self.seconds,
            self.bytes,
            out.display()
        )
    }
}

/// The nights of `dirs` (night directories, in the order given).
pub(crate) fn discover_nights(dirs: &[PathBuf]) -> Result<Vec<NightDirs>> {
    if dirs.is_empty() {
        bail!("give at least one night directory");
    }
    dirs.iter().map(|dir| NightDirs::discover(dir)).collect()
}

/// Writes the report of `opts.nights` to `opts.out`.
pub(crate) fn run_report(opts: &ReportOptions) -> Result<ReportSummary> {
    let started = Instant::now();
    let Some((last, earlier)) = opts.nights.split_last() else {
        bail!("give at least one night directory");
    };
    let rows = Arc::new(AtomicU64::new(0));
    let total = night::rows_to_read(last);
    let progress = RowsProgress::start(opts.progress, total, rows.clone());
    let mut nights = earlier
        .iter()
        .map(|dirs| night::read_night(dirs.clone(), &rows, false))
        .collect::<Result<Vec<_>>>()?;
    nights.push(night::read_night(last.clone(), &rows, true)?);
    progress.finish();
    let html = page::render(&nights);
    write_file(&opts.out, html.as_bytes())?;
    Ok(ReportSummary {
        nights: nights.len(),
        rows_read: rows.load(Ordering::Relaxed),
        bytes: html.len(),
        seconds: started.elapsed().as_secs_f64(),
    })
}
