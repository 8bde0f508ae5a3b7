//! The runtime: a dataflow on one process or on a timely cluster of processes
//! (named `runtime`, as "cluster" names near-duplicate clusters here).
//!
//! A cluster is plain timely: processes joined by a list of `host:port`
//! addresses (a hostfile, a pattern, or a scheduler's node list: see
//! [`crate::exec::scheduler`]), each with `--workers` threads, exchanging data
//! over TCP.
//! neardup only takes over the start-up handshake, because timely's own waits
//! forever for a peer that never comes and prints its progress on stdout. The
//! handshake here is timely's (lower-numbered processes accept, higher ones
//! connect and send their index as a big-endian u64), with a deadline, and
//! the connected sockets are handed to timely unchanged. The accepting side
//! answers with a [`GREETING`], so that a process that reaches another
//! program on a peer's port stops at once; a process that cannot listen on
//! its own port tells its lower-numbered peers ([`listen`]).
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

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use socket2::{SockRef, TcpKeepalive};
use timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets;
use timely::communication::allocator::ProcessBuilder;
use timely::communication::{AllocatorBuilder, Hooks, WorkerGuards};
use timely::worker::Worker;

use crate::exec::liveness::Heartbeats;
use crate::exec::parallel::lock;
use crate::exec::scheduler::{Env, Scheduler};

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

/// Exit status of a process that lost a peer mid-run (closed or silent).
const LOST_PEER_EXIT: i32 = 3;
/// Exit status of a process one of whose worker threads panicked.
const WORKER_PANIC_EXIT: i32 = 4;
/// Names a worker (its index among all workers) that panics as it starts:
/// fault injection for the tests of the hook above.
const PANIC_FAULT_VAR: &str = "NEARDUP_FAULT_PANIC_WORKER";
/// How long a connecting peer has to send its index.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Pause between connection attempts.
const RETRY_PAUSE: Duration = Duration::from_millis(100);
/// Marks, in the handshake, a peer's heartbeat connection (as opposed to
/// its timely connection).
const HEARTBEAT_CONNECTION: u64 = 1 << 63;
/// Marks, in the handshake, a connection that only brings a lower-numbered
/// peer's failure before starting: one that cannot listen on its port
/// tells the higher-numbered peers so, since on that port they may find a
/// program that accepts and never answers.
const FAILURE_NOTICE: u64 = 1 << 62;
/// TCP keepalive: probes after this long idle, every `KEEPALIVE_INTERVAL`,
/// `KEEPALIVE_RETRIES` times, before the kernel fails the connection.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
const KEEPALIVE_RETRIES: u32 = 3;

/// Where a job's workers run: threads in this process and, optionally, the
/// other processes of a cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeOptions {
    /// Worker threads per process.
    pub workers: usize,
    /// Processes in the cluster (1: no networking).
    pub(crate) processes: usize,
    /// This process's index, 0 to `processes - 1`; process 0 commits the output.
    pub(crate) process: usize,
    /// Where the processes' `host:port` addresses come from; needed when
    /// `processes > 1`.
    pub(crate) peers: Option<Peers>,
    /// How long to wait for every peer to connect.
    pub(crate) connect_timeout: Duration,
    /// How long a peer may send nothing, not even a heartbeat, before this
    /// process stops.
    pub(crate) peer_timeout: Duration,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        RuntimeOptions {
            workers: 1,
            processes: 1,
            process: 0,
            peers: None,
            connect_timeout: Duration::from_secs(60),
            peer_timeout: Duration::from_secs(60),
        }
    }
}

impl RuntimeOptions {
    /// One process with `workers` threads.
    pub fn local(workers: usize) -> RuntimeOptions {
        RuntimeOptions {
            workers,
            ..RuntimeOptions::default()
        }
    }

    /// Options from flags or a job spec, completed from a scheduler's
    /// environment (`env`) where they are silent: see [`ProcessSettings::resolve`].
    /// The timeouts are in seconds.
    pub(crate) fn from_settings(
        workers: usize,
        settings: &ProcessSettings,
        timeouts: Timeouts,
        env: Env,
    ) -> Result<RuntimeOptions> {
        let (process, processes, peers) = settings.resolve(env)?;
        let options = RuntimeOptions {
            workers,
            processes,
            process,
            peers,
            connect_timeout: seconds("--connect-timeout", timeouts.connect)?,
            peer_timeout: seconds("--peer-timeout", timeouts.peer)?,
        };
        options.validate()?;
        Ok(options)
    }

    /// Workers across all processes.
    pub(crate) fn peers(&self) -> usize {
        self.workers * self.processes
    }

    /// Whether work item `i`, given to global worker `i % peers` as every
    /// neardup dataflow does, runs on this process (whose workers are
    /// `process * workers ..`).
    pub(crate) fn runs_here(&self, i: usize) -> bool {
        (i % self.peers()) / self.workers == self.process
    }

    /// Whether this process gathers the workers' reports and commits the output.
    pub(crate) fn is_leader(&self) -> bool {
        self.process == 0
    }

    /// Checks the numbers and that the hostfile lists every process.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.workers == 0 {
            bail!("--workers must be at least 1");
        }
        if self.workers > MAX_WORKERS {
            bail!("--workers must be at most {}", MAX_WORKERS);
        }
        if self.processes == 0 {
            bail!("--processes must be at least 1");
        }
        if self.process >= self.processes {
            bail!(
                "--process {} is out of range: processes are numbered 0 to {}",
                self.process,
                self.processes - 1
            );
        }
        if self.processes > 1 {
            self.addresses()?;
        }
        Ok(())
    }

    /// Every process's address, by index.
    fn addresses(&self) -> Result<Vec<String>> {
        let n = self.processes;
        let addresses = match &self.peers {
            None => bail!(
                "--processes {n} needs --hostfile or --hostfile-pattern (one host:port per process)"
            ),
            Some(Peers::Hostfile(path)) => {
                let addresses = read_hostfile(path)?;
                if addresses.len() < n {
                    bail!(
                        "{}: lists {} address(es) but --processes is {n}",
                        path.display(),
                        addresses.len(),
                    );
                }
                addresses[..n].to_vec()
            }
            Some(Peers::Pattern(pattern)) => {
                if !pattern.contains("{i}") {
                    bail!("--hostfile-pattern {pattern:?} has no {{i}}: every process would get the same address");
                }
                let addresses: Vec<String> = (0..n)
                    .map(|i| pattern.replace("{i}", &i.to_string()))
                    .collect();
                if let Some(bad) = addresses.iter().find(|a| !is_host_port(a)) {
                    bail!("--hostfile-pattern {pattern:?} gives {bad:?}, not host:port");
                }
                addresses
            }
            Some(Peers::Slurm(addresses)) => {
                if addresses.len() != n {
                    bail!(
                        "Slurm's node list lays out {} task(s) but --processes is {n}",
                        addresses.len()
                    );
                }
                addresses.clone()
            }
        };
        Ok(addresses)
    }
}

/// Where the processes' addresses come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Peers {
    /// One `host:port` per line; line i is process i.
    Hostfile(PathBuf),
    /// `{i}` replaced by each process's index: for a Kubernetes Indexed
    /// Job, its pods' DNS names under a headless Service.
    Pattern(String),
    /// Laid out from a Slurm step's node list.
    Slurm(Vec<String>),
}

/// What the flags or a job spec say about the processes, before a
/// scheduler's environment fills in what they leave out.
#[derive(Clone, Debug, Default)]
pub(crate) struct ProcessSettings {
    pub(crate) processes: Option<usize>,
    pub(crate) process: Option<usize>,
    pub(crate) hostfile: Option<PathBuf>,
    pub(crate) hostfile_pattern: Option<String>,
    /// The first port on each node for peers from a Slurm node list.
    pub(crate) port: Option<u16>,
}

/// The default base port for peers from a Slurm node list.
pub(crate) const DEFAULT_PORT: u16 = 4100;

impl ProcessSettings {
    /// `(process, processes, peers)`. Flags win; what they leave out comes
    /// from a scheduler (Kubernetes' `JOB_COMPLETION_INDEX`, Slurm's
    /// `SLURM_PROCID`, task count and node list), else from the defaults:
    /// the hostfile's length, process 0. A scheduler's index is taken only
    /// for a run of several processes, so a single-process run is the same
    /// wherever it runs.
    pub(crate) fn resolve(&self, env: Env) -> Result<(usize, usize, Option<Peers>)> {
        let scheduler = Scheduler::detect(env)?;
        let slurm = match &scheduler {
            Some(Scheduler::Slurm(step)) => Some(step),
            _ => None,
        };
        let peers = match (&self.hostfile, &self.hostfile_pattern, slurm) {
            (Some(_), Some(_), _) => bail!("give --hostfile or --hostfile-pattern, not both"),
            (Some(path), None, _) => Some(Peers::Hostfile(path.clone())),
            (None, Some(pattern), _) => Some(Peers::Pattern(pattern.clone())),
            (None, None, Some(step)) if step.tasks > 1 => Some(Peers::Slurm(
                step.addresses(self.port.unwrap_or(DEFAULT_PORT))?,
            )),
            (None, None, _) => None,
        };
        let processes = match (self.processes, &peers) {
            (Some(n), _) => n,
            (None, Some(Peers::Hostfile(path))) => read_hostfile(path)?.len(),
            (None, Some(Peers::Slurm(addresses))) => addresses.len(),
            (None, Some(Peers::Pattern(_))) => match slurm {
                Some(step) => step.tasks,
                None => bail!("--hostfile-pattern needs --processes (how many processes to name)"),
            },
            (None, None) => 1,
        };
        let process = match (self.process, &scheduler) {
            (Some(i), _) => i,
            (None, Some(scheduler)) if processes > 1 => {
                if scheduler.process() >= processes {
                    bail!(
                        "{}={} is out of range: there are {processes} processes",
                        scheduler.index_variable(),
                        scheduler.process()
                    );
                }
                tracing::info!(
                    process = scheduler.process(),
                    processes,
                    "process index from {}",
                    scheduler.index_variable()
                );
                scheduler.process()
            }
            (None, _) => 0,
        };
        Ok((process, processes, peers))
    }
}

/// The cluster's timeouts as given, in seconds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timeouts {
    /// `--connect-timeout`: for every peer to connect.
    pub(crate) connect: f64,
    /// `--peer-timeout`: for a connected peer's silence.
    pub(crate) peer: f64,
}

/// A flag's positive number of seconds as a duration.
fn seconds(flag: &str, value: f64) -> Result<Duration> {
    match value.is_finite() && value > 0.0 {
        true => Ok(Duration::from_secs_f64(value)),
        false => bail!("{flag} {value} is out of range: give a positive number of seconds"),
    }
}

/// Reads a hostfile: one `host:port` per line; blank lines and lines starting
/// with `#` are skipped, so the n-th address is process n.
pub fn read_hostfile(path: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read hostfile", path.display()))?;
    let mut addresses = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if !is_host_port(line) {
            bail!(
                "{}: line {}: expected host:port, found {line:?}",
                path.display(),
                number + 1
            );
        }
        addresses.push(line.to_string());
    }
    Ok(addresses)
}

/// The process's own environment, for [`RuntimeOptions::from_settings`].
pub(crate) fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn is_host_port(address: &str) -> bool {
    address
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
}

/// What every process of a cluster must be started with alike: the stage,
/// its settings and its input files. Processes that differ would each do
/// their share of a different job, and the output would look complete.
/// Each process sends its terms to every peer before the dataflow starts,
/// and stops with one line naming the first that differs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Terms(Vec<(String, String)>);

/// A term's value longer than this is sent as its hash.
const TERM_SHOWN: usize = 100;

/// More bytes of terms than this come from no neardup.
const MAX_TERMS_BYTES: usize = 1 << 20;

impl Terms {
    /// The terms of `stage` run on `workers` threads a process.
    pub(crate) fn new(stage: &str, runtime: &RuntimeOptions) -> Terms {
        Terms(vec![
            ("stage".to_string(), stage.to_string()),
            ("--workers".to_string(), runtime.workers.to_string()),
        ])
    }

    pub(crate) fn with(mut self, name: &str, value: impl std::fmt::Debug) -> Terms {
        let value = format!("{value:?}");
        let value = match value.len() > TERM_SHOWN {
            true => format!("#{:016x}", xxhash_rust::xxh3::xxh3_64(value.as_bytes())),
            false => value,
        };
        self.0.push((name.to_string(), value));
        self
    }

    fn encode(&self) -> Vec<u8> {
        let text = serde_json::to_vec(&self.0).unwrap_or_default();
        let mut bytes = (text.len() as u32).to_be_bytes().to_vec();
        bytes.extend(text);
        bytes
    }

    fn decode(stream: &mut TcpStream) -> Option<Terms> {
        let mut length = [0u8; 4];
        stream.read_exact(&mut length).ok()?;
        let length = u32::from_be_bytes(length) as usize;
        if length > MAX_TERMS_BYTES {
            return None;
        }
        let mut text = vec![0u8; length];
        stream.read_exact(&mut text).ok()?;
        serde_json::from_slice(&text).ok().map(Terms)
    }

    /// Where `theirs` first differs from these, in one line.
    fn difference(&self, theirs: &Terms) -> Option<String> {
        let find = |terms: &Terms, name: &str| {
            terms
                .0
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        let names = self.0.iter().chain(&theirs.0).map(|(n, _)| n.as_str());
        names
            .map(|name| (name, find(self, name), find(theirs, name)))
            .find_map(|(name, ours, theirs)| {
                let shown = |v: &Option<String>| match v {
                    None => "none".to_string(),
                    Some(v) if v.starts_with('#') => "other files or values".to_string(),
                    Some(v) => v.clone(),
                };
                (ours != theirs)
                    .then(|| format!("{name}: {} there, {} here", shown(&theirs), shown(&ours)))
            })
    }
}

/// The cluster of the stage in progress, until it starts to connect: a
/// process that fails before then (a missing input on its host) tells its
/// peers, which would otherwise wait out `--connect-timeout` for it.
static NOT_YET_CONNECTED: Mutex<Option<RuntimeOptions>> = Mutex::new(None);

/// How long a failed process tries to reach its peers to tell them.
const TELL_TIMEOUT: Duration = Duration::from_secs(10);

/// The term that stands for all others when a process failed before its
/// stage could start; its value is the error.
const FAILED: &str = "failed before starting";

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
    if let Ok((_, mut heartbeats)) = connect_peers(&addresses, runtime.process, timeout) {
        let failed = Terms(vec![(FAILED.to_string(), format!("{error:#}"))]);
        let bytes = failed.encode();
        for stream in heartbeats.iter_mut().flatten() {
            let _ = stream.write_all(&bytes);
        }
    }
}

/// Sends this process's terms to every peer, then reads theirs (each within
/// `timeout`: a peer sends its terms once all of its own peers connected):
/// one line naming the first peer and term that differ, or a peer that sent
/// none.
fn agree(heartbeats: &mut PeerSockets, me: usize, terms: &Terms, timeout: Duration) -> Result<()> {
    let bytes = terms.encode();
    for stream in heartbeats.iter_mut().flatten() {
        let _ = stream.write_all(&bytes);
    }
    for (peer, stream) in heartbeats.iter_mut().enumerate() {
        let Some(stream) = stream else { continue };
        stream.set_read_timeout(Some(timeout))?;
        let theirs = Terms::decode(stream);
        stream.set_read_timeout(None)?;
        if let Some(Terms(failed)) = &theirs {
            if let Some((_, error)) = failed.iter().find(|(name, _)| name == FAILED) {
                bail!("process {me}: process {peer} failed before starting: {error}");
            }
        }
        match theirs.map(|theirs| terms.difference(&theirs)) {
            None => bail!("process {me}: process {peer} sent no job terms: is it running this neardup?"),
            Some(Some(difference)) => bail!(
                "process {me}: process {peer} was started with another job ({difference}); start every process with the same command"
            ),
            Some(None) => {}
        }
    }
    Ok(())
}

/// Starts `func` on every worker of this process, joined to the cluster when
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
    let sockets = join_cluster(runtime, terms)?;
    let hooks = Hooks::default();
    let local = ProcessBuilder::new_typed_vector(runtime.workers, hooks.refill.clone(), None);
    let (builders, guard) =
        initialize_networking_from_sockets(local, sockets, runtime.process, runtime.workers, hooks)
            .context("cannot start the cluster's network threads")?;
    let builders = builders.into_iter().map(AllocatorBuilder::Tcp).collect();
    timely::execute::execute_from(
        builders,
        Box::new(guard),
        timely::WorkerConfig::default(),
        func,
    )
    .map_err(|e| anyhow!("cannot start timely workers: {e}"))
}

/// Connects this process to its peers for a stage, which they must agree
/// on (`terms`), and watches their heartbeats; returns the connections
/// that are not the heartbeats', for timely or for [`on_process_0`].
fn join_cluster(runtime: &RuntimeOptions, terms: &Terms) -> Result<PeerSockets> {
    lock(&NOT_YET_CONNECTED).take();
    let addresses = runtime.addresses()?;
    // A job's stages each connect anew: the previous stage's beats end.
    if let Some(previous) = lock(&HEARTBEATS).take() {
        previous.stop();
    }
    let (sockets, mut heartbeats) =
        connect_peers(&addresses, runtime.process, runtime.connect_timeout)?;
    agree(
        &mut heartbeats,
        runtime.process,
        terms,
        runtime.connect_timeout,
    )?;
    *lock(&PEER_ADDRESSES) = (addresses, runtime.process);
    *lock(&HEARTBEATS) = Some(watch_peers(heartbeats, runtime.peer_timeout)?);
    Ok(sockets)
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
    let mut sockets = join_cluster(runtime, &Terms::new(stage, runtime))?;
    if !runtime.is_leader() {
        let stream = sockets[0].as_mut().context("no connection to process 0")?;
        return hear_outcome_of_process_0(stream, runtime.process, stage).map(|()| elsewhere);
    }
    let result = work();
    let outcome = match &result {
        Ok(_) => Terms::default(),
        Err(error) => Terms(vec![(STEP_FAILED.to_string(), format!("{error:#}"))]),
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
    let Some(Terms(outcome)) = Terms::decode(stream) else {
        bail!("process {me}: process 0 stopped before saying how its {stage} ended");
    };
    match outcome.iter().find(|(name, _)| name == STEP_FAILED) {
        Some((_, error)) => bail!("process {me}: process 0's {stage} failed: {error}"),
        None => Ok(()),
    }
}

/// A process's connections to its peers, by peer index (none to itself).
type PeerSockets = Vec<Option<TcpStream>>;

/// Connects this process to every other one, twice (timely's connection
/// and a heartbeat connection): it accepts the higher-numbered processes on
/// its own address and connects to the lower-numbered ones, until all are
/// connected or `timeout` has passed.
fn connect_peers(
    addresses: &[String],
    me: usize,
    timeout: Duration,
) -> Result<(PeerSockets, PeerSockets)> {
    let deadline = Instant::now() + timeout;
    let listener = listen(addresses, me, timeout)?;
    listener
        .set_nonblocking(true)
        .context("cannot configure the listening socket")?;
    let mut sockets: PeerSockets = addresses.iter().map(|_| None).collect();
    let mut heartbeats: PeerSockets = addresses.iter().map(|_| None).collect();
    loop {
        for peer in 0..me {
            if sockets[peer].is_none() || heartbeats[peer].is_none() {
                if let Some((timely, heartbeat)) =
                    try_connect(&addresses[peer], me).map_err(|e| {
                        anyhow!("process {me}: process {peer} ({}) {e}", addresses[peer])
                    })?
                {
                    sockets[peer] = Some(timely);
                    heartbeats[peer] = Some(heartbeat);
                }
            }
        }
        accept_waiting(&listener, me, &mut sockets, &mut heartbeats)?;
        let missing: Vec<usize> = (0..addresses.len())
            .filter(|&p| p != me && (sockets[p].is_none() || heartbeats[p].is_none()))
            .collect();
        if missing.is_empty() {
            tracing::info!(process = me, peers = addresses.len(), "cluster connected");
            return Ok((sockets, heartbeats));
        }
        if Instant::now() >= deadline {
            let names: Vec<String> = missing
                .iter()
                .map(|&p| format!("process {p} ({})", addresses[p]))
                .collect();
            bail!(
                "process {me}: gave up after {}s (--connect-timeout): not connected to {}",
                timeout.as_secs_f64(),
                names.join(", ")
            );
        }
        std::thread::sleep(RETRY_PAUSE);
    }
}

/// Listens on this process's address. A port another program holds is
/// told at once to every peer, which would otherwise wait out
/// `--connect-timeout` for this process (the higher-numbered ones would
/// find that program there, and one that never answers cannot be told
/// from a busy peer: see [`GREETING`]).
fn listen(addresses: &[String], me: usize, timeout: Duration) -> Result<TcpListener> {
    let error = match TcpListener::bind(&addresses[me]) {
        Ok(listener) => return Ok(listener),
        Err(e) if e.kind() == ErrorKind::AddrInUse => anyhow!(
            "process {me}: cannot listen on {}: {e}; is another program using the port?",
            addresses[me]
        ),
        Err(e) => anyhow!("process {me}: cannot listen on {}: {e}", addresses[me]),
    };
    tell_peers_unconnected(addresses, me, &error, timeout.min(TELL_TIMEOUT));
    Err(error)
}

/// Tells each peer reached within `timeout` that this process failed
/// before starting, and why, as [`tell_peers_of_failure`] does once
/// connected to all: a lower-numbered peer as this process would connect
/// to it, a higher-numbered one on a [`FAILURE_NOTICE`] connection.
fn tell_peers_unconnected(
    addresses: &[String],
    me: usize,
    error: &anyhow::Error,
    timeout: Duration,
) {
    let deadline = Instant::now() + timeout;
    let failed = Terms(vec![(FAILED.to_string(), format!("{error:#}"))]).encode();
    let mut untold: Vec<usize> = (0..addresses.len()).filter(|&peer| peer != me).collect();
    let told = |peer: usize| match peer < me {
        true => match try_connect(&addresses[peer], me) {
            Ok(Some((_timely, mut heartbeat))) => heartbeat.write_all(&failed).is_ok(),
            Ok(None) => false,
            Err(_) => true,
        },
        false => send_failure_notice(&addresses[peer], me, &failed),
    };
    while !untold.is_empty() && Instant::now() < deadline {
        untold.retain(|&peer| !told(peer));
        if !untold.is_empty() {
            std::thread::sleep(RETRY_PAUSE);
        }
    }
}

/// A peer's address, resolved (the first, if it names several).
fn resolve(address: &str) -> Option<SocketAddr> {
    address.to_socket_addrs().ok()?.next()
}

/// A connection to `target`, if it takes one within a second.
fn dial(target: SocketAddr) -> Option<TcpStream> {
    TcpStream::connect_timeout(&target, Duration::from_secs(1)).ok()
}

/// Sends `failed` (encoded [`Terms`]) to a higher-numbered peer on a
/// [`FAILURE_NOTICE`] connection; whether its address took it. The peer
/// reads it when it next accepts, even after this process is gone.
fn send_failure_notice(address: &str, me: usize, failed: &[u8]) -> bool {
    let Some(mut stream) = resolve(address).and_then(dial) else {
        return false;
    };
    let notice = (me as u64 | FAILURE_NOTICE).to_be_bytes();
    stream
        .write_all(&notice)
        .and_then(|()| stream.write_all(failed))
        .is_ok()
}

/// What a process sends back once a peer has introduced itself, so that
/// the peer knows it reached neardup, not another program on the port.
const GREETING: &[u8; 8] = b"neardup\n";

/// One attempt to connect to a lower-numbered peer and introduce ourselves,
/// on timely's connection and then on the heartbeat connection: `None` if
/// it is not reached (yet), an error if another program answers there.
fn try_connect(address: &str, me: usize) -> Result<Option<(TcpStream, TcpStream)>> {
    let Some(target) = resolve(address) else {
        return Ok(None);
    };
    let introduce = |index: u64| -> Result<Option<TcpStream>> {
        let Some(mut stream) = dial(target) else {
            return Ok(None);
        };
        let sent = configure(&stream).and_then(|()| stream.write_all(&index.to_be_bytes()));
        if sent.is_err() {
            return Ok(None);
        }
        match hear_greeting(&mut stream) {
            Greeting::Neardup => Ok(Some(stream)),
            // Not accepted yet (a busy peer), or the peer just stopped.
            Greeting::Nothing => Ok(None),
            Greeting::Other => {
                bail!("answered, but not as neardup: another program is on its port")
            }
        }
    };
    let Some(timely) = introduce(me as u64)? else {
        return Ok(None);
    };
    let Some(heartbeat) = introduce(me as u64 | HEARTBEAT_CONNECTION)? else {
        return Ok(None);
    };
    Ok(Some((timely, heartbeat)))
}

/// What came back on a connection once this process introduced itself.
enum Greeting {
    Neardup,
    Other,
    Nothing,
}

/// Reads a peer's [`GREETING`] (within [`HANDSHAKE_TIMEOUT`]).
fn hear_greeting(stream: &mut TcpStream) -> Greeting {
    let mut heard = [0u8; GREETING.len()];
    let mut got = 0;
    let _ = stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT));
    while got < heard.len() {
        match stream.read(&mut heard[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break,
        }
        if heard[..got] != GREETING[..got] {
            return Greeting::Other;
        }
    }
    let _ = stream.set_read_timeout(None);
    match got == heard.len() {
        true => Greeting::Neardup,
        false => Greeting::Nothing,
    }
}

/// No Nagle delay (timely's messages are latency-bound), and TCP keepalive.
fn configure(stream: &TcpStream) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let keepalive = TcpKeepalive::new()
        .with_time(KEEPALIVE_IDLE)
        .with_interval(KEEPALIVE_INTERVAL)
        .with_retries(KEEPALIVE_RETRIES);
    SockRef::from(stream).set_tcp_keepalive(&keepalive)
}

/// Accepts every pending connection from a higher-numbered peer, or fails
/// on a lower-numbered one's [`FAILURE_NOTICE`]. A connection that does
/// not introduce itself as a peer (a port scanner, a stray client) is
/// dropped.
fn accept_waiting(
    listener: &TcpListener,
    me: usize,
    sockets: &mut [Option<TcpStream>],
    heartbeats: &mut [Option<TcpStream>],
) -> Result<()> {
    loop {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
            Err(e) => {
                tracing::warn!("accepting a peer failed: {e}");
                return Ok(());
            }
        };
        let Some((index, stream)) = read_peer_index(stream) else {
            tracing::warn!("dropped a connection that is not a cluster peer");
            continue;
        };
        if index & FAILURE_NOTICE != 0 {
            read_failure_notice(stream, me, index & !FAILURE_NOTICE)?;
            continue;
        }
        let peer = (index & !HEARTBEAT_CONNECTION) as usize;
        if peer <= me || peer >= sockets.len() {
            tracing::warn!("dropped a connection that is not a cluster peer");
            continue;
        }
        let mut stream = stream;
        if stream.write_all(GREETING).is_err() {
            continue;
        }
        match index & HEARTBEAT_CONNECTION {
            0 => sockets[peer] = Some(stream),
            _ => heartbeats[peer] = Some(stream),
        }
    }
}

/// The error a lower-numbered `peer` sent on a [`FAILURE_NOTICE`]
/// connection (one that sends none is dropped).
fn read_failure_notice(mut stream: TcpStream, me: usize, peer: u64) -> Result<()> {
    let _ = stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT));
    let Some(Terms(failed)) = Terms::decode(&mut stream) else {
        tracing::warn!("dropped a connection that is not a cluster peer");
        return Ok(());
    };
    match failed.iter().find(|(name, _)| name == FAILED) {
        Some((_, error)) if peer < me as u64 => {
            bail!("process {me}: process {peer} failed before starting: {error}")
        }
        _ => Ok(()),
    }
}

fn read_peer_index(mut stream: TcpStream) -> Option<(u64, TcpStream)> {
    stream.set_nonblocking(false).ok()?;
    stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT)).ok()?;
    let mut index = [0u8; 8];
    stream.read_exact(&mut index).ok()?;
    stream.set_read_timeout(None).ok()?;
    configure(&stream).ok()?;
    Some((u64::from_be_bytes(index), stream))
}

/// The heartbeats of the running dataflow, if on a cluster.
static HEARTBEATS: Mutex<Option<Heartbeats>> = Mutex::new(None);

/// Beats to every peer and watches them: a peer silent for `timeout` ends
/// this process with one line naming it.
fn watch_peers(heartbeats: PeerSockets, timeout: Duration) -> Result<Heartbeats> {
    let peers = heartbeats
        .into_iter()
        .enumerate()
        .filter_map(|(peer, socket)| Some((peer, socket?)))
        .collect();
    Heartbeats::start(peers, timeout, move |peer| {
        let (addresses, _) = lock(&PEER_ADDRESSES).clone();
        let address = addresses.get(peer).map(String::as_str).unwrap_or("?");
        abort(
            LOST_PEER_EXIT,
            &format!(
                "error: process {peer} ({address}) sent nothing for {}s (--peer-timeout); stopping without _SUCCESS",
                timeout.as_secs_f64()
            ),
        );
    })
}

/// Ends the process at once with `line` and `code`, after the clean-ups
/// [`on_abort`] named: the other threads may be waiting forever.
fn abort(code: i32, line: &str) -> ! {
    eprintln!("{line}");
    for (_, cleanup) in lock(&ABORT_CLEANUP).iter() {
        cleanup();
    }
    std::process::exit(code);
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
    abort(
        128 + signal,
        &format!("error: stopped by {name}; the output in progress is removed, without _SUCCESS"),
    );
}

/// The cluster's addresses, to name a lost peer, and this process's index
/// (no addresses: a single process).
static PEER_ADDRESSES: Mutex<(Vec<String>, usize)> = Mutex::new((Vec::new(), 0));

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
fn exit_on_a_failed_thread() {
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
                    let address = addresses.get(peer).map(String::as_str).unwrap_or("?");
                    let line = format!(
                        "error: lost process {peer} ({address}) of the cluster: {cause}; stopping without _SUCCESS"
                    );
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

    fn hostfile(text: &str) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        file
    }

    #[test]
    fn hostfile_skips_comments_and_blank_lines() {
        let file = hostfile("# cluster\n127.0.0.1:4000\n\n  host-b:4001  \n");
        let addresses = read_hostfile(file.path()).unwrap();
        assert_eq!(addresses, vec!["127.0.0.1:4000", "host-b:4001"]);
    }

    #[test]
    fn hostfile_names_the_bad_line() {
        let file = hostfile("127.0.0.1:4000\nhost-b\n");
        let error = read_hostfile(file.path()).unwrap_err().to_string();
        assert!(
            error.contains("line 2") && error.contains("host-b"),
            "{error}"
        );
    }

    #[test]
    fn validate_checks_process_numbers_and_hostfile_length() {
        let file = hostfile("127.0.0.1:4000\n127.0.0.1:4001\n");
        let mut opts = RuntimeOptions {
            processes: 3,
            peers: Some(Peers::Hostfile(file.path().to_path_buf())),
            ..RuntimeOptions::default()
        };
        let error = opts.validate().unwrap_err().to_string();
        assert!(error.contains("lists 2 address(es)"), "{error}");
        opts.processes = 2;
        opts.process = 2;
        let error = opts.validate().unwrap_err().to_string();
        assert!(error.contains("--process 2 is out of range"), "{error}");
        opts.process = 1;
        opts.validate().unwrap();
        opts.peers = None;
        assert!(opts
            .validate()
            .unwrap_err()
            .to_string()
            .contains("--hostfile"));
    }

    fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn flags_win_over_a_scheduler_and_fill_from_it_where_silent() {
        const SLURM: &[(&str, &str)] = &[
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "2"),
            ("SLURM_JOB_NODELIST", "n[1-2]"),
        ];
        let from_slurm = ProcessSettings::default().resolve(&env_of(SLURM)).unwrap();
        let peers = Peers::Slurm(vec!["n1:4100".into(), "n2:4100".into()]);
        assert_eq!(from_slurm, (1, 2, Some(peers)));
        let port = ProcessSettings {
            port: Some(9),
            ..ProcessSettings::default()
        };
        let peers = Peers::Slurm(vec!["n1:9".into(), "n2:9".into()]);
        assert_eq!(port.resolve(&env_of(SLURM)).unwrap(), (1, 2, Some(peers)));
        let flagged = ProcessSettings {
            process: Some(0),
            hostfile_pattern: Some("h{i}:1".into()),
            ..ProcessSettings::default()
        };
        let pattern = Some(Peers::Pattern("h{i}:1".into()));
        assert_eq!(flagged.resolve(&env_of(SLURM)).unwrap(), (0, 2, pattern));
        // One process: the scheduler's index is not taken.
        let alone = ProcessSettings {
            processes: Some(1),
            ..ProcessSettings::default()
        };
        assert_eq!(alone.resolve(&env_of(SLURM)).unwrap().0, 0);
        const POD: &[(&str, &str)] = &[("JOB_COMPLETION_INDEX", "3")];
        let pods = ProcessSettings {
            processes: Some(4),
            hostfile_pattern: Some("neardup-{i}.neardup:4100".into()),
            ..ProcessSettings::default()
        };
        let (process, processes, peers) = pods.resolve(&env_of(POD)).unwrap();
        assert_eq!((process, processes), (3, 4));
        let opts = RuntimeOptions {
            processes,
            process,
            peers,
            ..RuntimeOptions::default()
        };
        assert_eq!(opts.addresses().unwrap()[3], "neardup-3.neardup:4100");
        assert_eq!(
            ProcessSettings::default().resolve(&env_of(&[])).unwrap(),
            (0, 1, None)
        );
    }

    #[test]
    fn every_work_item_runs_on_exactly_one_process() {
        for (processes, workers) in [(1, 1), (2, 1), (3, 2)] {
            let on = |process| RuntimeOptions {
                workers,
                processes,
                process,
                ..RuntimeOptions::default()
            };
            for i in 0..50 {
                let homes: Vec<usize> = (0..processes).filter(|&p| on(p).runs_here(i)).collect();
                assert_eq!(homes, vec![(i % (processes * workers)) / workers]);
            }
        }
    }

    #[test]
    fn connect_names_the_peer_that_never_came() {
        let addresses = vec![free_address(), free_address()];
        let error = connect_peers(&addresses, 0, Duration::from_millis(300))
            .unwrap_err()
            .to_string();
        let expected = format!("not connected to process 1 ({})", addresses[1]);
        assert!(error.contains(&expected), "{error}");
    }

    fn free_address() -> String {
        let probe = TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().to_string()
    }

    #[test]
    fn two_peers_connect_with_the_timely_handshake_and_a_heartbeat_connection() {
        let addresses = vec![free_address(), free_address()];
        let second = addresses.clone();
        let joiner = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            connect_peers(&second, 1, Duration::from_secs(10)).unwrap()
        });
        let (sockets, heartbeats) = connect_peers(&addresses, 0, Duration::from_secs(10)).unwrap();
        let (their_sockets, their_heartbeats) = joiner.join().unwrap();
        assert!(sockets[0].is_none() && sockets[1].is_some());
        assert!(their_sockets[0].is_some() && their_sockets[1].is_none());
        // Keepalive is on for both connections, on both sides.
        for socket in [
            &sockets[1],
            &heartbeats[1],
            &their_sockets[0],
            &their_heartbeats[0],
        ] {
            let socket = socket.as_ref().unwrap();
            assert!(SockRef::from(socket).keepalive().unwrap());
        }
        // The two connections are told apart: a byte on one side's timely
        // socket arrives on the other's timely socket, not its heartbeat.
        let mut theirs = their_sockets[0].as_ref().unwrap();
        theirs.write_all(b"t").unwrap();
        let mut heartbeat = their_heartbeats[0].as_ref().unwrap();
        heartbeat.write_all(b"h").unwrap();
        let mut byte = [0u8; 1];
        sockets[1].as_ref().unwrap().read_exact(&mut byte).unwrap();
        assert_eq!(&byte, b"t");
        heartbeats[1]
            .as_ref()
            .unwrap()
            .read_exact(&mut byte)
            .unwrap();
        assert_eq!(&byte, b"h");
    }
}
