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

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::exec::progress::RowsProgress;
use crate::io::parquet::input::refuse_output_over_inputs;
use crate::io::staging::write_file;
use crate::io::storage::{is_url, reaches_hidden, subdirectories, OutputPrefix};
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

/// The nights of `dirs` (night directories, in the order given; a glob
/// in a directory's last part stands for the directories it matches that
/// hold stage outputs, in name order: a job's corpus, or its logs, often
/// lie beside its nights).
pub(crate) fn discover_nights(dirs: &[PathBuf]) -> Result<Vec<NightDirs>> {
    if dirs.is_empty() {
        bail!("give at least one night directory");
    }
    let mut nights = Vec::new();
    for dir in dirs {
        let Some(matched) = expand_night(dir)? else {
            nights.push(NightDirs::discover(dir)?);
            continue;
        };
        let before = nights.len();
        for night in matched {
            nights.extend(NightDirs::discover_any(&night)?);
        }
        if nights.len() == before {
            bail!(
                "{}: no directory this pattern matches holds stage outputs (subdirectories with a _summary.json of fingerprint, match or cluster)",
                dir.display()
            );
        }
    }
    refuse_a_night_twice(&nights)?;
    warn_of_dates_out_of_order(&nights);
    Ok(nights)
}

/// Refuses a night given twice (by two names, or a name and a glob): it
/// would be two points of the trends.
fn refuse_a_night_twice(nights: &[NightDirs]) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for night in nights {
        let stages: Vec<String> = night
            .stages()
            .map(|dir| std::path::absolute(dir).unwrap_or_else(|_| dir.clone()))
            .map(|dir| dir.to_string_lossy().trim_end_matches('/').to_string())
            .collect();
        if !seen.insert(stages) {
            bail!(
                "night {} is given twice: give each night once, oldest first",
                night.name
            );
        }
    }
    Ok(())
}

/// Warns when nights named by date (`2026-12-01`) are not given oldest
/// first: the last given is the one shown in detail, and the trends run
/// in the order given.
fn warn_of_dates_out_of_order(nights: &[NightDirs]) {
    let is_date = |name: &str| {
        let b = name.as_bytes();
        b.len() == 10
            && b[4] == b'-'
            && b[7] == b'-'
            && b.iter()
                .enumerate()
                .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
    };
    if !nights.iter().all(|night| is_date(&night.name)) {
        return;
    }
    if let Some(pair) = nights.windows(2).find(|pair| pair[0].name > pair[1].name) {
        tracing::warn!(
            "night {} is given before night {}: the trends run in the order given, and the last night given ({}) is the one shown in detail; give them oldest first",
            pair[0].name,
            pair[1].name,
            nights[nights.len() - 1].name
        );
    }
}

/// The directories a glob in `dir`'s last part matches (None: `dir` has
/// no glob). A store cannot be globbed by the shell, so `neardup report
/// 's3://crawl/nights/*'` is expanded here, as a local one may be.
fn expand_night(dir: &Path) -> Result<Option<Vec<PathBuf>>> {
    let shown = dir.to_string_lossy();
    let trimmed = shown.trim_end_matches('/');
    let (parent, last) = match trimmed.rsplit_once('/') {
        Some(("", last)) => ("/", last),
        Some(split) => split,
        None => (".", trimmed),
    };
    if !last.contains(['*', '?', '[']) {
        return Ok(None);
    }
    let pattern =
        glob::Pattern::new(last).with_context(|| format!("{shown}: invalid glob pattern"))?;
    let matched: Vec<PathBuf> = subdirectories(parent)?
        .into_iter()
        .filter(|sub| {
            sub.rsplit('/')
                .next()
                .is_some_and(|name| pattern.matches(name) && !reaches_hidden(last, name))
        })
        .map(PathBuf::from)
        .collect();
    if matched.is_empty() {
        bail!("{shown}: no night directories match this pattern");
    }
    Ok(Some(matched))
}

/// Refuses an `out` that exists and is not a report: a crawl file, a
/// shard or a job spec named by mistake would be replaced.
fn refuse_replacing_another_file(out: &Path) -> Result<()> {
    let shown = out.to_string_lossy();
    let start = page::PAGE_START.as_bytes();
    match crate::io::storage::read_head(&shown, start.len() as u64)? {
        Some(head) if head != start => bail!(
            "{shown}: exists and is not a neardup report; remove it, or give --out another file"
        ),
        _ => Ok(()),
    }
}

/// Refuses an `out` that is a directory, or a prefix holding objects: a
/// report written over its name would hide them from every reader that
/// takes the name for an object.
fn refuse_a_directory(out: &Path) -> Result<()> {
    let shown = out.to_string_lossy();
    let directory = match is_url(&shown) {
        true => OutputPrefix::parse(&shown).and_then(|prefix| prefix.exists())?,
        false => out.is_dir(),
    };
    if directory {
        let what = match is_url(&shown) {
            true => "a prefix holding objects",
            false => "a directory",
        };
        bail!("{shown}: is {what}; give --out the HTML file to write");
    }
    Ok(())
}

/// Writes the report of `opts.nights` to `opts.out`.
pub(crate) fn run_report(opts: &ReportOptions) -> Result<ReportSummary> {
    let started = Instant::now();
    let Some((last, earlier)) = opts.nights.split_last() else {
        bail!("give at least one night directory");
    };
    refuse_a_directory(&opts.out)?;
    // The page may go beside a night's stages, never into one.
    let stages: Vec<String> = (opts.nights.iter())
        .flat_map(NightDirs::stages)
        .map(|dir| dir.display().to_string())
        .collect();
    refuse_output_over_inputs(&opts.out, &stages)?;
    refuse_replacing_another_file(&opts.out)?;
    let rows = Arc::new(AtomicU64::new(0));
    let total = night::rows_to_read(last);
    let progress = RowsProgress::start(opts.progress, total, rows.clone());
    tracing::info!(nights = opts.nights.len(), rows = total, "report started");
    let mut nights = earlier
        .iter()
        .map(|dirs| night::read_night(dirs.clone(), &rows, false))
        .collect::<Result<Vec<_>>>()?;
    nights.push(night::read_night(last.clone(), &rows, true)?);
    progress.finish();
    tracing::info!(seconds = started.elapsed().as_secs_f64(), "nights read");
    let html = page::render(&nights);
    write_file(&opts.out, html.as_bytes())?;
    tracing::info!(bytes = html.len(), out = %opts.out.display(), "report written");
    Ok(ReportSummary {
        nights: nights.len(),
        rows_read: rows.load(Ordering::Relaxed),
        bytes: html.len(),
        seconds: started.elapsed().as_secs_f64(),
    })
}
