//! Progress on a terminal, silence in a pipe.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::dataflow::Counters;

/// A progress bar over row groups, redrawn from the scan counters by a
/// background thread so the workers never touch the terminal.
pub struct ScanProgress {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ScanProgress {
    /// Starts drawing when `enabled` and stderr is a terminal; otherwise does nothing.
    pub fn start(enabled: bool, units: u64, rows: u64, counters: Arc<Counters>) -> ScanProgress {
        let stop = Arc::new(AtomicBool::new(false));
        if !enabled || !std::io::stderr().is_terminal() {
            return ScanProgress { stop, thread: None };
        }
        let bar = ProgressBar::with_draw_target(Some(units), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} row groups  {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let started = std::time::Instant::now();
            loop {
                let done = flag.load(Ordering::Relaxed);
                let scanned = counters.corpus_rows.load(Ordering::Relaxed)
                    + counters.self_rows.load(Ordering::Relaxed);
                let rate = scanned as f64 / started.elapsed().as_secs_f64().max(1e-9);
                bar.set_position(counters.units_done.load(Ordering::Relaxed));
                bar.set_message(format!(
                    "{}/{} rows, {}/s, {} pairs",
                    human(scanned as f64),
                    human(rows as f64),
                    human(rate),
                    counters.pairs_found.load(Ordering::Relaxed)
                ));
                if done {
                    bar.finish_and_clear();
                    return;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        ScanProgress {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops and clears the bar.
    pub fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// `1234567.0` as `1.23M`.
pub fn human(x: f64) -> String {
    match x {
        x if x >= 1e9 => format!("{:.2}G", x / 1e9),
        x if x >= 1e6 => format!("{:.2}M", x / 1e6),
        x if x >= 1e3 => format!("{:.1}k", x / 1e3),
        x => format!("{x:.0}"),
    }
}
