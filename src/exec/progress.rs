//! Progress on a terminal, silence in a pipe: the bar every stage draws
//! its own ([`Progress`]; `match`'s and `fingerprint`'s are in their
//! stages), and the bars of jobs that read rows and then go through steps.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::exec::parallel::lock;

/// Live counters of a job that reads rows and then goes through steps of
/// its own: rows read, and the furthest step any worker has reached.
#[derive(Debug, Default)]
pub(crate) struct StepCounters {
    pub(crate) rows: AtomicU64,
    step: AtomicUsize,
}

impl StepCounters {
    /// Notes that a worker has reached step `step` (workers reach steps at
    /// their own pace: the bar shows the furthest).
    pub(crate) fn reach(&self, step: usize) {
        self.step.fetch_max(step, Ordering::Relaxed);
    }
}

/// The bar being drawn, if any: log lines are written around it
/// ([`write_around_bar`]).
static DRAWN: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Writes `bytes` (a log line) to stderr, the bar being drawn, if any,
/// cleared first and drawn again after: a line written over it would
/// leave the bar's last frame on screen and the line after its text.
pub(crate) fn write_around_bar(bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let bar = lock(&DRAWN).clone();
    match bar {
        Some(bar) => bar.suspend(|| std::io::stderr().lock().write_all(bytes)),
        None => std::io::stderr().lock().write_all(bytes),
    }
}

/// Clears the bar being drawn, for good: the process is ending on a line
/// of its own, which the bar's last frame would otherwise sit above.
pub(crate) fn clear_bar() {
    if let Some(bar) = lock(&DRAWN).take() {
        bar.finish_and_clear();
    }
}

/// A progress bar redrawn by a background thread from shared counters, so
/// the workers never touch the terminal. Draws nothing unless stderr is a
/// terminal.
pub(crate) struct Progress {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts a bar of length `len` when `enabled` and stderr is a terminal;
    /// every 200 ms `update` gives its position and message.
    pub(crate) fn start(
        enabled: bool,
        len: u64,
        template: &str,
        update: impl Fn() -> (u64, String) + Send + 'static,
    ) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        if !enabled || !std::io::stderr().is_terminal() {
            return Progress { stop, thread: None };
        }
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let flag = stop.clone();
        *lock(&DRAWN) = Some(bar.clone());
        let thread = std::thread::spawn(move || loop {
            let done = flag.load(Ordering::Relaxed);
            let (position, message) = update();
            bar.set_position(position);
            bar.set_message(message);
            if done {
                *lock(&DRAWN) = None;
                bar.finish_and_clear();
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        });
        Progress {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops and clears the bar.
    pub(crate) fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The `cluster` bar: rows read (`rows` of them, each one `unit`), then the
/// step the workers are at, one of `steps` (the first is reading the rows).
pub(crate) struct StepsProgress;

impl StepsProgress {
    pub(crate) fn start(
        enabled: bool,
        rows: u64,
        unit: &str,
        steps: &'static [&'static str],
        counters: Arc<StepCounters>,
    ) -> Progress {
        let started = Instant::now();
        Progress::start(
            enabled,
            rows,
            &format!("{{spinner}} [{{elapsed_precise}}] {{bar:30}} {{human_pos}}/{{human_len}} {unit}  {{msg}}"),
            move || {
                let read = counters.rows.load(Ordering::Relaxed);
                let step = counters.step.load(Ordering::Relaxed).min(steps.len() - 1);
                let message = match step {
                    0 => {
                        let rate = read as f64 / started.elapsed().as_secs_f64().max(1e-9);
                        format!("{}, {}/s", steps[0], human(rate))
                    }
                    _ => steps[step].to_string(),
                };
                (read, message)
            },
        )
    }
}

/// A bar over rows read, for readers of whole outputs (the report).
pub(crate) struct RowsProgress;

impl RowsProgress {
    pub(crate) fn start(enabled: bool, rows: u64, read: Arc<AtomicU64>) -> Progress {
        let started = Instant::now();
        Progress::start(
            enabled,
            rows,
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} rows  {msg}",
            move || {
                let done = read.load(Ordering::Relaxed);
                let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-9);
                (done, format!("{}/s", human(rate)))
            },
        )
    }
}

/// `1234567` bytes as `1.23MB`.
pub(crate) fn human_bytes(bytes: u64) -> String {
    format!("{}B", human(bytes as f64))
}

/// `1234567.0` as `1.23M`.
pub(crate) fn human(x: f64) -> String {
    match x {
        x if x >= 1e9 => format!("{:.2}G", x / 1e9),
        x if x >= 1e6 => format!("{:.2}M", x / 1e6),
        x if x >= 1e3 => format!("{:.1}k", x / 1e3),
        x => format!("{x:.0}"),
    }
}
