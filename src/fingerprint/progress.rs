//! `fingerprint`'s progress: bytes read and documents, shown on a bar.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::exec::progress::{human, Progress};

/// `fingerprint`'s live counters, for the progress bar.
#[derive(Debug, Default)]
pub(crate) struct TextCounters {
    pub(crate) bytes: AtomicU64,
    pub(crate) documents: AtomicU64,
}

/// The `fingerprint` bar: bytes read, documents, rate.
pub(crate) struct BytesProgress;

impl BytesProgress {
    pub(crate) fn start(enabled: bool, bytes: u64, counters: Arc<TextCounters>) -> Progress {
        let started = Instant::now();
        Progress::start(
            enabled,
            bytes,
            "{spinner} [{elapsed_precise}] {bar:30} {bytes}/{total_bytes}  {msg}",
            move || {
                let read = counters.bytes.load(Ordering::Relaxed);
                let documents = counters.documents.load(Ordering::Relaxed);
                let rate = read as f64 / started.elapsed().as_secs_f64().max(1e-9);
                let message = format!("{} documents, {}B/s", human(documents as f64), human(rate));
                (read, message)
            },
        )
    }
}
