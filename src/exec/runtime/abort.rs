//! Stopping the process at once, with one line and the outputs in progress
//! removed ([`on_abort`]): a lost peer, a worker thread's panic, or SIGINT,
//! SIGTERM or SIGHUP.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};

use crate::exec::logging::print_error;
use crate::exec::parallel::lock;

/// Exit status of a process that lost a peer mid-run (closed or silent).
pub(super) const LOST_PEER_EXIT: i32 = 3;

/// Exit status of a process one of whose worker threads panicked.
const WORKER_PANIC_EXIT: i32 = 4;

/// Set once the process is stopping at once: the first stop ends it.
static ABORTING: AtomicBool = AtomicBool::new(false);

/// Whether this process's latest output was committed, and no other begun
/// since: a stop then removes nothing, and says so.
static LATEST_OUTPUT_COMMITTED: AtomicBool = AtomicBool::new(false);

/// How the line of a stop for a lost peer or a failed worker ends.
const WITHOUT_SUCCESS: &str = "; stopping without _SUCCESS";

/// Ends the process at once with `line` and `code`, after the clean-ups
/// [`on_abort`] named: the other threads may be waiting forever. A line
/// that says the output is left without `_SUCCESS` says otherwise when it
/// was committed first (the stop waited for the commit).
pub(super) fn abort(code: i32, line: &str) -> ! {
    stop(code, |committed| {
        match (committed, line.strip_suffix(WITHOUT_SUCCESS)) {
            (true, Some(cause)) => {
                format!("{cause}; stopping once this process's output was committed, with _SUCCESS")
            }
            _ => line.to_string(),
        }
    })
}

/// [`abort`] with the line as `line_for` gives it, told whether a commit
/// under way finished first. The clean-ups' lock is taken before the line
/// is printed (a commit under way ends first) and held until the exit, so
/// no thread commits, or fails for want of, an output being removed.
fn stop(code: i32, line_for: impl FnOnce(bool) -> String) -> ! {
    // One line: a lost peer is often told by several threads at once (each
    // connection's, a peer that stopped in turn), and the first ends it.
    if ABORTING.swap(true, Ordering::SeqCst) {
        park_forever();
    }
    let cleanups = lock(&ABORT_CLEANUP);
    crate::exec::progress::clear_bar();
    print_error(&line_for(LATEST_OUTPUT_COMMITTED.load(Ordering::SeqCst)));
    // The latest first, as values are dropped: an output's staging goes
    // before the lock whose directory is removed once empty.
    for (_, cleanup) in cleanups.iter().rev() {
        cleanup();
    }
    std::process::exit(code);
}

fn park_forever() -> ! {
    loop {
        std::thread::park();
    }
}

/// Names a test's pause in a local commit until a stop comes: the commit
/// logs `committing` and waits for the stop, which then waits for it.
const PAUSE_IN_COMMIT_VAR: &str = "NEARDUP_TEST_PAUSE_IN_COMMIT";

/// Fault injection for the tests of a stop during a commit.
pub(crate) fn pause_in_commit_if_told() {
    if std::env::var_os(PAUSE_IN_COMMIT_VAR).is_none() {
        return;
    }
    print_error("committing");
    while !ABORTING.load(Ordering::SeqCst) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Claims the ending of the process for the main thread, done or failing,
/// unless a stop under way has it (then waits for the stop to end it): the
/// main thread must neither exit 0 nor print a second line after a stop's,
/// and a signal that comes once the run is done is not taken.
pub fn claim_the_exit() {
    if ABORTING.swap(true, Ordering::SeqCst) {
        park_forever();
    }
}

/// What to remove when the process stops at once (a lost peer, a failed
/// worker, a signal): process 0's outputs in progress, so that an aborted
/// run leaves nothing behind. Each is keyed by its [`AbortCleanup`].
static ABORT_CLEANUP: Mutex<Vec<(u64, Cleanup)>> = Mutex::new(Vec::new());

type Cleanup = Box<dyn Fn() + Send>;

/// A clean-up [`abort`] runs while this lives: an output's, until it is
/// committed (a job's later stage failing must not remove it).
#[derive(Debug)]
pub(crate) struct AbortCleanup(u64);

impl AbortCleanup {
    /// Runs `commit` with stops held off, and drops this clean-up if it
    /// succeeds (if not, it stays while `self` lives): a stop that comes
    /// meanwhile (a signal, a lost peer) waits for it, then finds the
    /// output committed, where running the clean-up halfway through the
    /// commit would have left a complete-looking output holding part of
    /// its files, or none.
    pub(crate) fn disarm_after<T, E>(&self, commit: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let mut cleanups = lock(&ABORT_CLEANUP);
        let committed = commit();
        if committed.is_ok() {
            cleanups.retain(|(key, _)| *key != self.0);
            LATEST_OUTPUT_COMMITTED.store(true, Ordering::SeqCst);
        }
        committed
    }
}

impl Drop for AbortCleanup {
    fn drop(&mut self) {
        lock(&ABORT_CLEANUP).retain(|(key, _)| *key != self.0);
    }
}

/// Runs `cleanup` (best effort) if this process has to stop at once while
/// the returned guard lives.
pub(crate) fn on_abort(cleanup: impl Fn() + Send + 'static) -> AbortCleanup {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let key = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    lock(&ABORT_CLEANUP).push((key, Box::new(cleanup)));
    LATEST_OUTPUT_COMMITTED.store(false, Ordering::SeqCst);
    AbortCleanup(key)
}

/// Stops the process on SIGINT, SIGTERM or SIGHUP (Ctrl-C, `kill`, a
/// scheduler's preemption) as on a lost peer: one line, and the outputs
/// in progress removed. Called before any other thread exists, so every
/// thread inherits the blocked signals and one watcher takes them in plain
/// code, where removing files and objects is safe. A signal the process
/// was started ignoring (`nohup`) stays ignored.
#[cfg(unix)]
pub fn stop_on_signals() {
    let signals = block_stop_signals();
    let _ = std::thread::Builder::new()
        .name("neardup:signals".into())
        .spawn(move || stop_on_first(signals));
}

/// SIGINT, SIGTERM and SIGHUP, blocked in this thread and so in every
/// thread it starts.
#[cfg(unix)]
fn block_stop_signals() -> libc::sigset_t {
    // SAFETY: sigset operations on a local set, and this thread's mask.
    unsafe {
        let mut signals: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut signals);
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut signals, signal);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &signals, std::ptr::null_mut());
        signals
    }
}

/// Waits for one of `signals` and aborts, exiting as a shell reports a
/// process the signal ended (128 + its number). The signals are unblocked
/// here first, so a second one ends the process at once, clean-up or not.
#[cfg(unix)]
fn stop_on_first(signals: libc::sigset_t) {
    let mut signal = 0;
    // SAFETY: `signals` is a valid set; only this thread's mask changes.
    unsafe {
        if libc::sigwait(&signals, &mut signal) != 0 {
            return;
        }
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &signals, std::ptr::null_mut());
    }
    let name = match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "SIGHUP",
    };
    stop(128 + signal, |committed| {
        let outcome = match committed {
            true => " once its output was committed, complete with _SUCCESS; nothing after it runs",
            false => "; the output in progress is removed, without _SUCCESS",
        };
        format!("error: stopped by {name}{outcome}")
    });
}

/// Every process's address, to name a lost peer, and this process's index
/// (no addresses: a single process).
pub(super) static PEER_ADDRESSES: Mutex<(Vec<String>, usize)> = Mutex::new((Vec::new(), 0));

/// A thread of timely whose panic ends the process: a network thread
/// (`timely:send-N`, `timely:recv-N`: process N is lost) or a worker
/// (`timely:work-N`).
#[derive(Debug, PartialEq, Eq)]
enum FailedThread {
    Network { peer: usize },
    Worker { index: usize },
}

impl FailedThread {
    fn of(name: &str) -> Option<FailedThread> {
        let number = |prefix: &str| name.strip_prefix(prefix)?.parse::<usize>().ok();
        if let Some(peer) = number("timely:recv-").or_else(|| number("timely:send-")) {
            return Some(FailedThread::Network { peer });
        }
        number("timely:work-").map(|index| FailedThread::Worker { index })
    }
}

/// Installs (once) a panic hook that turns the panic of a timely thread
/// into an immediate exit with one line, removing process 0's staging: the
/// other workers would otherwise wait forever for the lost peer or the
/// failed worker.
pub(super) fn exit_on_a_failed_thread() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(move || {
        let default_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let thread = std::thread::current();
            let Some(failed) = thread.name().and_then(FailedThread::of) else {
                return default_hook(info);
            };
            let cause = info
                .payload()
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| info.payload().downcast_ref::<&str>().copied())
                .unwrap_or("no message");
            let (addresses, process) = lock(&PEER_ADDRESSES).clone();
            let (code, line) = match failed {
                FailedThread::Network { peer } => {
                    // The peer may have stopped for another that was lost:
                    // that one is named, and the others are told of it. A
                    // peer that stopped for this process (it heard nothing
                    // from it) is the one named.
                    let notices = super::peer_notices();
                    let lost = notices.as_ref().and_then(|n| n.lost_through(peer));
                    let lost = lost.filter(|&lost| lost != process).unwrap_or(peer);
                    if let Some(notices) = notices {
                        notices.tell_lost(lost);
                    }
                    let address = addresses.get(lost).map(String::as_str).unwrap_or("?");
                    let line = match lost == peer {
                        true => format!(
                            "error: lost process {peer} ({address}) of the run: {cause}{WITHOUT_SUCCESS}"
                        ),
                        false => format!(
                            "error: lost process {lost} ({address}) of the run (process {peer} stopped for it){WITHOUT_SUCCESS}"
                        ),
                    };
                    (LOST_PEER_EXIT, line)
                }
                FailedThread::Worker { index } => {
                    let place = info
                        .location()
                        .map(|l| format!(" at {}:{}", l.file(), l.line()))
                        .unwrap_or_default();
                    // Thread names count this process's workers only.
                    let worker = match addresses.is_empty() {
                        true => format!("worker {index}"),
                        false => format!("process {process}'s worker {index}"),
                    };
                    let line = format!(
                        "error: {worker} failed ({cause}{place}), a bug in neardup; stopping without _SUCCESS"
                    );
                    (WORKER_PANIC_EXIT, line)
                }
            };
            abort(code, &line);
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_waits_for_a_commit_and_then_finds_its_clean_up_gone() {
        let registered = |key: u64| lock(&ABORT_CLEANUP).iter().any(|(k, _)| *k == key);
        let committed = on_abort(|| panic!("a committed output's clean-up ran"));
        let key = committed.0;
        let done: Result<(), ()> = committed.disarm_after(|| {
            // `abort` takes this lock before it runs any clean-up.
            assert!(ABORT_CLEANUP.try_lock().is_err(), "a stop would not wait");
            Ok(())
        });
        assert_eq!(done, Ok(()));
        assert!(!registered(key));
        // A failed commit keeps its clean-up while its guard lives.
        let failed = on_abort(|| ());
        let key = failed.0;
        let refused = failed.disarm_after(|| Err::<(), _>("cannot rename"));
        assert_eq!(refused, Err("cannot rename"));
        assert!(registered(key));
        drop(failed);
        assert!(!registered(key));
    }

    #[test]
    fn timely_threads_are_told_apart_by_name() {
        assert_eq!(
            FailedThread::of("timely:recv-2"),
            Some(FailedThread::Network { peer: 2 })
        );
        assert_eq!(
            FailedThread::of("timely:send-0"),
            Some(FailedThread::Network { peer: 0 })
        );
        assert_eq!(
            FailedThread::of("timely:work-13"),
            Some(FailedThread::Worker { index: 13 })
        );
        assert_eq!(FailedThread::of("neardup:read"), None);
        assert_eq!(FailedThread::of("timely:work-x"), None);
        assert_eq!(FailedThread::of("main"), None);
    }
}
