//! `match`'s progress: the scan's live counters, shown on a bar (row
//! groups, rows, rate, pairs) and totalled in the summary.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::exec::progress::{human, Progress};

/// `match`'s live counters, for progress and the summary.
#[derive(Debug, Default)]
pub(crate) struct ScanCounters {
    pub(crate) units_done: AtomicU64,
    pub(crate) corpus_rows: AtomicU64,
    pub(crate) self_rows: AtomicU64,
    pub(crate) pairs_found: AtomicU64,
    pub(crate) pairs_written: AtomicU64,
}

/// The `match` scan's bar: row groups, rows, rate, pairs.
pub(crate) struct ScanProgress;

impl ScanProgress {
    pub(crate) fn start(
        enabled: bool,
        units: u64,
        rows: u64,
        counters: Arc<ScanCounters>,
    ) -> Progress {
        let started = Instant::now();
        Progress::start(
            enabled,
            units,
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} row groups  {msg}",
            move || {
                let scanned = counters.corpus_rows.load(Ordering::Relaxed)
                    + counters.self_rows.load(Ordering::Relaxed);
                let rate = scanned as f64 / started.elapsed().as_secs_f64().max(1e-9);
                let message = format!(
                    "{}/{} rows, {}/s, {} pairs",
                    human(scanned as f64),
                    human(rows as f64),
                    human(rate),
                    counters.pairs_found.load(Ordering::Relaxed)
                );
                (counters.units_done.load(Ordering::Relaxed), message)
            },
        )
    }
}
