//! Where a run's workers are: [`RuntimeOptions`], from the flags or a job
//! spec ([`ProcessSettings`]) completed from a scheduler's environment, and
//! every process's address (a hostfile, a pattern, or Slurm's node list).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::exec::scheduler::{Env, Scheduler};

use super::MAX_WORKERS;

/// Where a job's workers run: threads in this process and, optionally, the
/// other processes of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeOptions {
    /// Worker threads per process.
    pub workers: usize,
    /// Processes of the run (1: no networking).
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
            process: process.unwrap_or(0),
            peers,
            connect_timeout: seconds("--connect-timeout", timeouts.connect)?,
            peer_timeout: seconds("--peer-timeout", timeouts.peer)?,
        };
        options.validate()?;
        // Each process left at 0 would take process 0's address, and the
        // second to start would fail to listen or wait for peers that never
        // come. Checked last: a bad hostfile or pattern says more.
        if processes > 1 && process.is_none() {
            bail!(
                "{processes} processes need --process on each (its index, 0 to {}; \
                 or a scheduler's JOB_COMPLETION_INDEX or SLURM_PROCID)",
                processes - 1
            );
        }
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
    pub(super) fn addresses(&self) -> Result<Vec<String>> {
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
    /// the hostfile's length, no process index (process 0 of one process;
    /// several need an index each: [`RuntimeOptions::from_settings`]). A scheduler's index is taken only
    /// for a run of several processes, so a single-process run is the same
    /// wherever it runs.
    pub(crate) fn resolve(&self, env: Env) -> Result<(Option<usize>, usize, Option<Peers>)> {
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
            (Some(i), _) => Some(i),
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
                Some(scheduler.process())
            }
            (None, _) => None,
        };
        Ok((process, processes, peers))
    }
}

/// The processes' timeouts as given, in seconds.
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
        if let Some(first) = addresses.iter().position(|a| a == line) {
            // Both processes would listen there, or one would connect to
            // itself and wait out --connect-timeout.
            bail!(
                "{}: line {}: {line} is process {first}'s address too; each process needs its own",
                path.display(),
                number + 1
            );
        }
        addresses.push(line.to_string());
    }
    if addresses.is_empty() {
        bail!("{}: lists no host:port", path.display());
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

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
    fn a_hostfile_naming_an_address_twice_or_none_is_refused() {
        let file = hostfile("# two processes\n127.0.0.1:4000\n127.0.0.1:4000\n");
        let error = read_hostfile(file.path()).unwrap_err().to_string();
        assert!(
            error.contains("line 3: 127.0.0.1:4000 is process 0's address too"),
            "{error}"
        );
        let file = hostfile("# nobody yet\n\n");
        let error = read_hostfile(file.path()).unwrap_err().to_string();
        assert!(error.ends_with("lists no host:port"), "{error}");
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
        assert_eq!(from_slurm, (Some(1), 2, Some(peers)));
        let port = ProcessSettings {
            port: Some(9),
            ..ProcessSettings::default()
        };
        let peers = Peers::Slurm(vec!["n1:9".into(), "n2:9".into()]);
        assert_eq!(
            port.resolve(&env_of(SLURM)).unwrap(),
            (Some(1), 2, Some(peers))
        );
        let flagged = ProcessSettings {
            process: Some(0),
            hostfile_pattern: Some("h{i}:1".into()),
            ..ProcessSettings::default()
        };
        let pattern = Some(Peers::Pattern("h{i}:1".into()));
        assert_eq!(
            flagged.resolve(&env_of(SLURM)).unwrap(),
            (Some(0), 2, pattern)
        );
        // One process: the scheduler's index is not taken.
        let alone = ProcessSettings {
            processes: Some(1),
            ..ProcessSettings::default()
        };
        assert_eq!(alone.resolve(&env_of(SLURM)).unwrap().0, None);
        // Several processes and no index at all: refused, not process 0.
        let unnumbered = ProcessSettings {
            processes: Some(2),
            hostfile_pattern: Some("h{i}:1".into()),
            ..ProcessSettings::default()
        };
        let timeouts = Timeouts {
            connect: 1.0,
            peer: 1.0,
        };
        let error = RuntimeOptions::from_settings(1, &unnumbered, timeouts, &env_of(&[]))
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("2 processes need --process on each (its index, 0 to 1"),
            "{error}"
        );
        const POD: &[(&str, &str)] = &[("JOB_COMPLETION_INDEX", "3")];
        let pods = ProcessSettings {
            processes: Some(4),
            hostfile_pattern: Some("neardup-{i}.neardup:4100".into()),
            ..ProcessSettings::default()
        };
        let (process, processes, peers) = pods.resolve(&env_of(POD)).unwrap();
        assert_eq!((process, processes), (Some(3), 4));
        let opts = RuntimeOptions {
            processes,
            process: 3,
            peers,
            ..RuntimeOptions::default()
        };
        assert_eq!(opts.addresses().unwrap()[3], "neardup-3.neardup:4100");
        assert_eq!(
            ProcessSettings::default().resolve(&env_of(&[])).unwrap(),
            (None, 1, None)
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
}
