//! The runtime: a dataflow on one process or on several timely processes
//! (named `runtime`, as "cluster" names near-duplicate clusters here).
//!
//! Several processes are plain timely: processes joined by a list of `host:port`
//! addresses (a hostfile, a pattern, or a scheduler's node list: see
//! [`crate::exec::scheduler`]), each with `--workers` threads, exchanging data
//! over TCP.
//! neardup only takes over the start-up handshake ([`handshake`]), because
//! timely's own waits forever for a peer that never comes and prints its
//! progress on stdout; the connected sockets are handed to timely unchanged.
//!
//! A stage of process 0 alone (a job's append and report) is run by
//! [`on_process_0`]: the others connect as for any stage and wait for its
//! outcome, so none exits 0 when process 0 failed to commit.
//!
//! A peer that goes silent without closing its sockets (frozen, or its host
//! gone) is noticed by [`crate::exec::liveness`]: beside each timely connection is
//! a heartbeat connection, and a peer silent for `--peer-timeout` ends the
//! process with one line naming it. The kernel's TCP keepalive is on for
//! both, so a dead host's connections also fail at the socket.
//!
//! A peer that dies mid-run closes its sockets; timely's network threads then
//! panic with "timely communication error". Workers blocked on that peer
//! would wait forever, so the process exits at once, naming the peer, without
//! writing `_SUCCESS`. A worker thread that panics (a bug) leaves the other
//! workers of its process waiting just as long for its progress, on one
//! process as on many: that too ends the process at once, with one line.
//! So does SIGINT, SIGTERM or SIGHUP ([`stop_on_signals`]). Each way out
//! runs the clean-ups of the outputs still in progress (`on_abort`): a
//! committed output's is dropped with its guard, so a job stopped in a later
//! stage keeps it.
//!
//! [`options`] says where the workers are; [`terms`] what the processes
//! agree on; [`handshake`] how they connect; [`abort`] how a process stops
//! at once.

mod abort;
mod handshake;
mod options;
mod terms;

use std::io::Write;
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets;
use timely::communication::allocator::ProcessBuilder;
use timely::communication::{AllocatorBuilder, Hooks, WorkerGuards};
use timely::worker::Worker;

use crate::exec::liveness::{Heartbeats, PeerNotices};
use crate::exec::parallel::lock;

#[cfg(unix)]
pub use abort::{claim_the_exit, stop_on_signals};
pub(crate) use abort::{on_abort, pause_in_commit_if_told, AbortCleanup};
pub(crate) use options::{process_env, ProcessSettings, Timeouts};
pub use options::{read_hostfile, RuntimeOptions};
pub(crate) use terms::{Terms, FIRST_STAGE};

use abort::{exit_on_a_failed_thread, LOST_PEER_EXIT, PEER_ADDRESSES};
use handshake::{connect_peers, PeerSockets, TELL_TIMEOUT};
use terms::{agree, FAILED};

/// Workers one process may have: a page's worker is two bytes.
pub(crate) const MAX_WORKERS: usize = 1 << 16;

/// The first error any worker of this process hit.
#[derive(Default)]
pub(crate) struct Failure(Mutex<Option<anyhow::Error>>);

impl Failure {
    pub(crate) fn record(&self, error: anyhow::Error) {
        lock(&self.0).get_or_insert(error);
    }

    pub(crate) fn happened(&self) -> bool {
        lock(&self.0).is_some()
    }

    /// The recorded error, if any.
    pub(crate) fn take(&self) -> Option<anyhow::Error> {
        lock(&self.0).take()
    }
}

/// Worker threads when none are asked for: every core this process may run
/// on (its CPU affinity and cgroup quota, as a scheduler sets them), so that a
/// job run by hand uses the machine as a job under Slurm or Kubernetes uses
/// its allocation. Several processes on one host should each be given their
/// share with `--workers`.
pub(crate) fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Warns, once a process, of more workers than [`OVERSUBSCRIBED`] times
/// the cores: each worker is a thread with buffers of its own, so they add
/// memory and no speed, and thousands of them exhaust a host's memory or
/// threads (a worker then fails at start, which reads like a bug).
fn warn_of_workers_beyond_the_cores(workers: usize) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    let cores = default_workers();
    if workers > OVERSUBSCRIBED * cores {
        WARNED.call_once(|| {
            tracing::warn!(
                "--workers {workers} is more than {OVERSUBSCRIBED} times the {cores} core(s) this process may use: more workers add memory, not speed"
            )
        });
    }
}

/// Workers a core beyond which [`warn_of_workers_beyond_the_cores`] warns.
const OVERSUBSCRIBED: usize = 4;

/// Names a worker (its index among all workers) that panics as it starts:
/// fault injection for the tests of [`abort::exit_on_a_failed_thread`].
const PANIC_FAULT_VAR: &str = "NEARDUP_FAULT_PANIC_WORKER";

/// The processes of the stage in progress, until it starts to connect: a
/// process that fails before then (a missing input on its host) tells its
/// peers, which would otherwise wait out `--connect-timeout` for it.
static NOT_YET_CONNECTED: Mutex<Option<RuntimeOptions>> = Mutex::new(None);

/// Marks the start of a stage run on `runtime`, for
/// [`tell_peers_of_failure`].
pub(crate) fn stage_starting(runtime: &RuntimeOptions) {
    *lock(&NOT_YET_CONNECTED) = (runtime.processes > 1).then(|| runtime.clone());
}

/// Tells the peers of a stage that failed before it connected why: it
/// connects as the stage would (within [`TELL_TIMEOUT`]) and sends the error
/// in place of its terms, so that each peer stops with a line naming it.
pub fn tell_peers_of_failure(error: &anyhow::Error) {
    let Some(runtime) = lock(&NOT_YET_CONNECTED).take() else {
        return;
    };
    let Ok(addresses) = runtime.addresses() else {
        return;
    };
    let timeout = runtime.connect_timeout.min(TELL_TIMEOUT);
    if let Ok((_, mut heartbeats)) = connect_peers(&addresses, runtime.process, timeout, None) {
        let bytes = Terms::error(FAILED, error).encode();
        for stream in heartbeats.iter_mut().flatten() {
            let _ = stream.write_all(&bytes);
        }
    }
}

/// Starts `func` on every worker of this process, joined to its peers when
/// there is more than one process (which must agree on `terms`), like
/// `timely::execute`.
pub(crate) fn execute<T, F>(
    runtime: &RuntimeOptions,
    terms: &Terms,
    func: F,
) -> Result<WorkerGuards<T>>
where
    T: Send + 'static,
    F: Fn(&mut Worker) -> T + Send + Sync + 'static,
{
    runtime.validate()?;
    warn_of_workers_beyond_the_cores(runtime.workers);
    exit_on_a_failed_thread();
    let faulty: Option<usize> = std::env::var(PANIC_FAULT_VAR)
        .ok()
        .and_then(|v| v.parse().ok());
    let func = move |worker: &mut Worker| {
        if faulty == Some(worker.index()) {
            panic!("{PANIC_FAULT_VAR}: injected fault");
        }
        func(worker)
    };
    if runtime.processes == 1 {
        return timely::execute(timely::Config::process(runtime.workers), func)
            .map_err(|e| anyhow!("cannot start timely workers: {e}"));
    }
    let sockets = join_processes(runtime, terms)?;
    let hooks = Hooks::default();
    let local = ProcessBuilder::new_typed_vector(runtime.workers, hooks.refill.clone(), None);
    let (builders, guard) =
        initialize_networking_from_sockets(local, sockets, runtime.process, runtime.workers, hooks)
            .context("cannot start the network threads")?;
    let builders = builders.into_iter().map(AllocatorBuilder::Tcp).collect();
    timely::execute::execute_from(
        builders,
        Box::new(guard),
        timely::WorkerConfig::default(),
        func,
    )
    .map_err(|e| anyhow!("cannot start timely workers: {e}"))
}

/// Connects this process to its peers only to check that they agree on
/// `terms` (a job's plan, before its first stage), then lets the
/// connections go: each stage connects anew.
pub(crate) fn agree_with_peers(runtime: &RuntimeOptions, terms: &Terms) -> Result<()> {
    if runtime.processes == 1 {
        return Ok(());
    }
    join_processes(runtime, terms).map(drop)
}

/// Connects this process to its peers for a stage, which they must agree
/// on (`terms`), and watches their heartbeats; returns the connections
/// that are not the heartbeats', for timely or for [`on_process_0`].
fn join_processes(runtime: &RuntimeOptions, terms: &Terms) -> Result<PeerSockets> {
    lock(&NOT_YET_CONNECTED).take();
    let addresses = runtime.addresses()?;
    // Another hostfile on one process may still connect (a process's own
    // line is read by it alone), yet says it was started otherwise.
    let terms = &terms
        .clone()
        .with_shown("the processes' addresses", addresses.join(" "));
    exit_before_stage_if_told(terms);
    // A job's stages each connect anew; the previous stage's beats go on
    // until every process has joined this one, so that a peer lost between
    // stages is told from one still on its way.
    let previous = lock(&HEARTBEATS).take();
    let grace = previous.as_ref().map(|beats| (beats, runtime.peer_timeout));
    let (sockets, mut heartbeats) =
        connect_peers(&addresses, runtime.process, runtime.connect_timeout, grace)?;
    agree(
        &mut heartbeats,
        runtime.process,
        terms,
        runtime.connect_timeout,
    )?;
    if let Some(previous) = previous {
        previous.stop();
    }
    *lock(&PEER_ADDRESSES) = (addresses, runtime.process);
    *lock(&HEARTBEATS) = Some(watch_peers(heartbeats, runtime.peer_timeout)?);
    Ok(sockets)
}

/// Names a stage before which the process exits at once, as a process
/// killed between a job's stages would: fault injection for the tests of
/// [`handshake::connect_peers`].
const EXIT_FAULT_VAR: &str = "NEARDUP_FAULT_EXIT_BEFORE_STAGE";

fn exit_before_stage_if_told(terms: &Terms) {
    let told = std::env::var(EXIT_FAULT_VAR).ok();
    if told.is_some_and(|stage| terms.stage() == Some(stage.as_str())) {
        std::process::exit(9);
    }
}

/// The outcome term of a step of process 0 alone that failed; its value is
/// the error.
const STEP_FAILED: &str = "process 0's step failed";

/// Runs `work`, a stage of process 0 alone (a job's append or report), and
/// makes every other process learn how it ended: they connect as for any
/// stage, watch process 0's heartbeats while it works, and fail with its
/// error if it failed, so that no process exits 0 while process 0 did not
/// commit. Elsewhere than process 0 the stage's line is `elsewhere`.
pub(crate) fn on_process_0(
    runtime: &RuntimeOptions,
    stage: &str,
    elsewhere: String,
    work: impl FnOnce() -> Result<String>,
) -> Result<String> {
    if runtime.processes == 1 {
        return work();
    }
    let mut sockets = join_processes(runtime, &Terms::new(stage, runtime))?;
    if !runtime.is_leader() {
        let stream = sockets[0].as_mut().context("no connection to process 0")?;
        return hear_outcome_of_process_0(stream, runtime.process, stage).map(|()| elsewhere);
    }
    let result = work();
    let outcome = match &result {
        Ok(_) => Terms::default(),
        Err(error) => Terms::error(STEP_FAILED, error),
    };
    let bytes = outcome.encode();
    for stream in sockets.iter_mut().flatten() {
        let _ = stream.write_all(&bytes);
    }
    result
}

/// Waits for process 0 to say how its `stage` ended (its heartbeats say
/// meanwhile that it is alive): an error if it failed or stopped first.
fn hear_outcome_of_process_0(stream: &mut TcpStream, me: usize, stage: &str) -> Result<()> {
    stream.set_read_timeout(None)?;
    let Some(outcome) = Terms::decode(stream) else {
        bail!("process {me}: process 0 stopped before saying how its {stage} ended");
    };
    match outcome.error_under(STEP_FAILED) {
        Some(error) => bail!("process {me}: process 0's {stage} failed: {error}"),
        None => Ok(()),
    }
}

/// The heartbeats of the running dataflow, if on several processes.
static HEARTBEATS: Mutex<Option<Heartbeats>> = Mutex::new(None);

/// What the peers of the running dataflow said of a lost process (none:
/// one process, or between stages).
fn peer_notices() -> Option<Arc<PeerNotices>> {
    lock(&HEARTBEATS).as_ref().map(Heartbeats::notices)
}

/// Beats to every peer and watches them: a peer silent for `timeout` ends
/// this process with one line naming it.
fn watch_peers(heartbeats: PeerSockets, timeout: Duration) -> Result<Heartbeats> {
    let peers = heartbeats
        .into_iter()
        .enumerate()
        .filter_map(|(peer, socket)| Some((peer, socket?)))
        .collect();
    Heartbeats::start(peers, timeout, move |peer| {
        if let Some(notices) = peer_notices() {
            notices.tell_lost(peer);
        }
        let (addresses, _) = lock(&PEER_ADDRESSES).clone();
        let address = addresses.get(peer).map(String::as_str).unwrap_or("?");
        abort::abort(
            LOST_PEER_EXIT,
            &format!(
                "error: process {peer} ({address}) sent nothing for {}s (--peer-timeout); stopping without _SUCCESS",
                timeout.as_secs_f64()
            ),
        );
    })
}
