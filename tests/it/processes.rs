//! Several processes on loopback ports: the same bytes as one
//! process (placed by flags, or by Kubernetes' and Slurm's variables), a
//! peer killed mid-run, a peer that never starts.

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use neardup::exec::runtime::read_hostfile;
use neardup::io::parquet::output::write_fingerprints;
use neardup::random::SplitMix64;

fn neardup() -> Command {
    Command::new(env!("CARGO_BIN_EXE_neardup"))
}

/// A hostfile of `n` loopback addresses on ports that were free a moment ago.
fn hostfile(dir: &Path, n: usize) -> PathBuf {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let path = dir.join(format!("hosts-{n}"));
    let mut file = std::fs::File::create(&path).unwrap();
    writeln!(file, "# {n} local processes").unwrap();
    for l in &listeners {
        writeln!(file, "{}", l.local_addr().unwrap()).unwrap();
    }
    path
}

/// Starts process `i` of a cluster running `args`.
fn spawn(args: &[String], hosts: &Path, i: usize, workers: usize, env: &[(&str, &str)]) -> Child {
    neardup()
        .args(args)
        .args(["--hostfile", &hosts.display().to_string()])
        .args([
            "--process",
            &i.to_string(),
            "--workers",
            &workers.to_string(),
        ])
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Runs `args` on `processes` local processes and returns their outputs.
fn run_cluster(dir: &Path, args: &[String], processes: usize, workers: usize) -> Vec<Output> {
    let hosts = hostfile(dir, processes);
    let children: Vec<Child> = (0..processes)
        .map(|i| spawn(args, &hosts, i, workers, &[]))
        .collect();
    wait_all(children)
}

/// Each child's output, in order, once it has exited.
fn wait_all(children: Vec<Child>) -> Vec<Output> {
    (children.into_iter())
        .map(|c| c.wait_with_output().unwrap())
        .collect()
}

fn assert_all_succeeded(outputs: &[Output]) {
    for (i, o) in outputs.iter().enumerate() {
        assert!(
            o.status.success(),
            "process {i} failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// The files of an output directory except the summary (which has timings).
fn data_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.ends_with("_summary.json"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    files.sort();
    files
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// B and F with planted pairs, as shards with many row groups.
fn match_inputs(dir: &Path) -> (String, String, usize) {
    let mut rng = SplitMix64::new(42);
    let queries = random_rows(&mut rng, 3_000, 0);
    let mut corpus = planted_corpus(&mut rng, &queries, 300, 5, 20_000, 1_000_000);
    corpus.extend(queries.iter().take(200).map(|&(id, f)| (id + 5_000_000, f)));
    let q = dir.join("queries");
    let c = dir.join("corpus");
    write_shards(&q, &queries, 2);
    write_shards(&c, &corpus, 4);
    let expected = oracle(&queries, &corpus, 3, false).len();
    (q.display().to_string(), c.display().to_string(), expected)
}

fn match_args(q: &str, c: Option<&str>, out: &Path, self_join: bool) -> Vec<String> {
    let mut args = strings(&["match", "--queries", q, "--parts", "3", "--out"]);
    args.push(out.display().to_string());
    if let Some(c) = c {
        args.extend(strings(&["--corpus", c]));
    }
    if self_join {
        args.push("--self".into());
    }
    args
}

#[test]
fn two_and_three_processes_write_the_bytes_of_one() {
    let dir = tempfile::tempdir().unwrap();
    let (q, c, expected) = match_inputs(dir.path());
    for (corpus, self_join) in [
        (Some(c.as_str()), false),
        (Some(c.as_str()), true),
        (None, true),
    ] {
        let one = dir.path().join("one");
        let status = neardup()
            .args(match_args(&q, corpus, &one, self_join))
            .args(["--workers", "2", "--overwrite"])
            .output()
            .unwrap();
        assert!(status.status.success());
        let baseline = data_files(&one);
        if corpus.is_some() && !self_join {
            assert_eq!(read_pairs(&one).len(), expected);
        }
        for (processes, workers) in [(2, 1), (3, 2)] {
            let out = dir.path().join(format!(
                "p{processes}-w{workers}-self{self_join}-c{}",
                corpus.is_some()
            ));
            let outputs = run_cluster(
                dir.path(),
                &match_args(&q, corpus, &out, self_join),
                processes,
                workers,
            );
            assert_all_succeeded(&outputs);
            assert!(out.join("_SUCCESS").exists());
            assert_eq!(
                data_files(&out),
                baseline,
                "{processes} processes x {workers} workers, self {self_join}"
            );
            // Every process reports the same totals.
            let lines: Vec<String> = outputs
                .iter()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .collect();
            let pairs = |l: &str| l.split(": ").last().unwrap().to_string();
            assert!(
                lines.iter().all(|l| pairs(l) == pairs(&lines[0])),
                "{lines:?}"
            );
        }
    }
}

/// A port free on every one of `hosts` a moment ago.
fn port_free_on(hosts: &[&str]) -> u16 {
    loop {
        let first = TcpListener::bind((hosts[0], 0)).unwrap();
        let port = first.local_addr().unwrap().port();
        if hosts[1..]
            .iter()
            .all(|h| TcpListener::bind((*h, port)).is_ok())
        {
            return port;
        }
    }
}

/// Starts `processes` processes of `args` with no placement flags, each
/// told its place only by the environment `env_of(i)` gives it, logging
/// how they connect.
fn run_placed_by_env(
    args: &[String],
    processes: usize,
    env_of: impl Fn(usize) -> Vec<(String, String)>,
) -> Vec<Output> {
    let children: Vec<Child> = (0..processes)
        .map(|i| {
            neardup()
                .args(args)
                .env_remove("JOB_COMPLETION_INDEX")
                .env_remove("SLURM_PROCID")
                .env("RUST_LOG", "neardup=info")
                .envs(env_of(i))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    wait_all(children)
}

/// Every process succeeded, took its index from `variable`, and joined
/// the others (rather than running alone).
fn assert_all_placed(outputs: &[Output], variable: &str) {
    assert_all_succeeded(outputs);
    for (i, o) in outputs.iter().enumerate() {
        let log = String::from_utf8_lossy(&o.stderr);
        let from = format!("process index from {variable}");
        assert!(log.contains(&from), "process {i}: {log}");
        assert!(log.contains("processes connected"), "process {i}: {log}");
    }
}

#[test]
fn processes_placed_by_kubernetes_and_slurm_variables_write_the_bytes_of_one() {
    let dir = tempfile::tempdir().unwrap();
    let (q, c, _) = match_inputs(dir.path());
    let one = dir.path().join("one");
    let status = neardup()
        .args(match_args(&q, Some(&c), &one, true))
        .args(["--workers", "2"])
        .status()
        .unwrap();
    assert!(status.success());
    let baseline = data_files(&one);

    // Kubernetes: an Indexed Job's index, peers by a pattern (two loopback
    // addresses standing for a headless Service's pod names).
    let port = port_free_on(&["127.0.0.10", "127.0.0.11"]);
    let out = dir.path().join("kubernetes");
    let mut args = match_args(&q, Some(&c), &out, true);
    let pattern = format!("127.0.0.1{{i}}:{port}");
    args.extend(strings(&[
        "--hostfile-pattern",
        &pattern,
        "--processes",
        "2",
    ]));
    let outputs = run_placed_by_env(&args, 2, |i| {
        vec![("JOB_COMPLETION_INDEX".into(), i.to_string())]
    });
    assert_all_placed(&outputs, "JOB_COMPLETION_INDEX");
    assert_eq!(data_files(&out), baseline);

    // Slurm: rank, task count, node list and tasks per node, nothing else.
    let port = port_free_on(&["127.0.0.1", "127.0.0.2"]);
    let out = dir.path().join("slurm");
    let mut args = match_args(&q, Some(&c), &out, true);
    args.extend(strings(&["--port", &port.to_string()]));
    let outputs = run_placed_by_env(&args, 2, |i| {
        [
            ("SLURM_PROCID", i.to_string()),
            ("SLURM_NTASKS", "2".into()),
            ("SLURM_JOB_NODELIST", "127.0.0.[1-2]".into()),
            ("SLURM_TASKS_PER_NODE", "1(x2)".into()),
        ]
        .map(|(k, v)| (k.to_string(), v))
        .to_vec()
    });
    assert_all_placed(&outputs, "SLURM_PROCID");
    assert_eq!(data_files(&out), baseline);

    // A flag wins over the environment: told it is process 0 of one, a
    // Slurm task runs alone.
    let out = dir.path().join("alone");
    let mut args = match_args(&q, Some(&c), &out, true);
    args.extend(strings(&["--workers", "2", "--processes", "1"]));
    let outputs = run_placed_by_env(&args, 1, |_| {
        vec![
            ("SLURM_PROCID".into(), "1".into()),
            ("SLURM_NTASKS".into(), "2".into()),
            ("SLURM_JOB_NODELIST".into(), "127.0.0.[1-2]".into()),
        ]
    });
    assert_all_succeeded(&outputs);
    assert_eq!(data_files(&out), baseline);

    // An index out of range gets one line naming its variable.
    let out = dir.path().join("bad");
    let mut args = match_args(&q, Some(&c), &out, true);
    args.extend(strings(&[
        "--hostfile-pattern",
        &pattern,
        "--processes",
        "2",
    ]));
    let outputs = run_placed_by_env(&args, 1, |_| {
        vec![("JOB_COMPLETION_INDEX".into(), "2".into())]
    });
    let stderr = String::from_utf8_lossy(&outputs[0].stderr);
    assert!(!outputs[0].status.success());
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("JOB_COMPLETION_INDEX=2 is out of range"),
        "{stderr}"
    );
    assert!(!out.exists());
}

#[test]
fn fingerprint_shards_are_the_same_on_two_processes() {
    let dir = tempfile::tempdir().unwrap();
    let crawl = Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples/crawl");
    let crawl = crawl.display().to_string();
    let one = dir.path().join("one");
    let two = dir.path().join("two");
    let status = neardup()
        .args(["fingerprint", "--input", &crawl, "--out"])
        .arg(&one)
        .output()
        .unwrap();
    assert!(status.status.success());
    let mut args = strings(&["fingerprint", "--input", &crawl, "--out"]);
    args.push(two.display().to_string());
    let outputs = run_cluster(dir.path(), &args, 2, 1);
    assert_all_succeeded(&outputs);
    assert_eq!(data_files(&two), data_files(&one));
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(two.join("_summary.json")).unwrap()).unwrap();
    assert_eq!(summary["processes"], 2);
    assert_eq!(summary["files"].as_array().unwrap().len(), 2);
}

/// Waits for a child, killing it if it outlives `limit` (a hang guard, not a
/// timing check), and returns its output.
fn wait_or_kill(mut child: Child, limit: Duration) -> (Output, bool) {
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return (child.wait_with_output().unwrap(), false);
        }
        if started.elapsed() > limit {
            child.kill().unwrap();
            return (child.wait_with_output().unwrap(), true);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_peer_killed_mid_run_stops_the_others_and_a_rerun_is_complete() {
    let dir = tempfile::tempdir().unwrap();
    let (q, c, expected) = match_inputs(dir.path());
    let out = dir.path().join("pairs");
    let args = match_args(&q, Some(&c), &out, false);
    let hosts = hostfile(dir.path(), 3);
    // Every unit takes 100 ms, so the scan outlasts the kill by seconds.
    let delay = ("NEARDUP_TEST_UNIT_DELAY_MS", "100");
    let mut children: Vec<Option<Child>> = (0..3)
        .map(|i| {
            let log = if i == 1 {
                UNIT_READ_LOG
            } else {
                ("RUST_LOG", "info")
            };
            Some(spawn(&args, &hosts, i, 1, &[delay, log]))
        })
        .collect();
    let staging = dir.path().join(".pairs.neardup-staging");
    // Kill process 1 once it has read a unit: the processes are connected
    // and scanning, well before the scan ends.
    let mut victim = children[1].take().unwrap();
    StderrLines::of(&mut victim).wait_for("unit read");
    victim.kill().unwrap();
    victim.wait().unwrap();
    for (i, child) in children.into_iter().enumerate() {
        let Some(child) = child else { continue };
        let (output, hung) = wait_or_kill(child, Duration::from_secs(60));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !hung,
            "process {i} did not stop after its peer died: {stderr}"
        );
        assert!(!output.status.success(), "process {i} must fail");
        // A survivor may hear first that the other survivor stopped, for
        // process 1: it names process 1 all the same.
        assert!(
            stderr.contains("lost process 1 "),
            "process {i} should name process 1: {stderr}"
        );
        let errors = stderr.lines().filter(|l| l.starts_with("error: ")).count();
        assert_eq!(errors, 1, "process {i} stops with one line: {stderr}");
    }
    assert!(!out.join("_SUCCESS").exists());
    assert!(
        !out.exists(),
        "a failed run must not leave the output directory"
    );
    assert!(!staging.exists(), "process 0 removes its staging directory");

    let outputs = run_cluster(dir.path(), &args, 3, 1);
    assert_all_succeeded(&outputs);
    assert!(out.join("_SUCCESS").exists());
    assert_eq!(read_pairs(&out).len(), expected);
}

#[test]
fn a_peer_that_never_starts_times_out_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let (q, c, _) = match_inputs(dir.path());
    let out = dir.path().join("pairs");
    let hosts = hostfile(dir.path(), 3);
    let address = read_hostfile(&hosts).unwrap()[2].clone();
    let mut args = match_args(&q, Some(&c), &out, false);
    args.extend(strings(&["--connect-timeout", "1"]));
    let output = neardup()
        .args(&args)
        .args(["--hostfile", &hosts.display().to_string(), "--process", "0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--connect-timeout"), "{stderr}");
    assert!(
        stderr.contains(&format!("process 2 ({address})")) && stderr.contains("process 1"),
        "{stderr}"
    );
    assert!(!out.exists());
}

#[test]
fn bad_cluster_flags_get_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (q, c, _) = match_inputs(dir.path());
    let out = dir.path().join("pairs");
    let hosts = hostfile(dir.path(), 2);
    let hosts = hosts.display().to_string();
    for (extra, needle) in [
        (
            vec!["--processes", "2"],
            "needs --hostfile or --hostfile-pattern",
        ),
        (
            vec![
                "--hostfile-pattern",
                "127.0.0.1:4100",
                "--processes",
                "2",
                "--process",
                "1",
            ],
            "has no {i}",
        ),
        (
            vec!["--hostfile-pattern", "127.0.0.{i}"],
            "needs --processes",
        ),
        (
            vec![
                "--hostfile-pattern",
                "h{i}",
                "--processes",
                "2",
                "--process",
                "0",
            ],
            "gives \"h0\", not host:port",
        ),
        (
            vec!["--hostfile", &hosts, "--hostfile-pattern", "h{i}:1"],
            "not both",
        ),
        (
            vec!["--hostfile", &hosts, "--process", "2"],
            "--process 2 is out of range",
        ),
        (
            vec!["--hostfile", &hosts, "--processes", "3", "--process", "1"],
            "lists 2 address(es)",
        ),
        (
            vec!["--hostfile", &hosts],
            "2 processes need --process on each",
        ),
        (
            vec!["--connect-timeout", "0"],
            "--connect-timeout 0 is out of range",
        ),
        (
            vec!["--peer-timeout", "0"],
            "--peer-timeout 0 is out of range",
        ),
    ] {
        let output = neardup()
            .args(match_args(&q, Some(&c), &out, false))
            .args(&extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{extra:?}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(needle), "{extra:?}: {stderr}");
        assert!(!out.exists());
    }
}

#[test]
fn a_worker_that_panics_stops_every_process_with_one_line_and_a_rerun_is_complete() {
    let dir = tempfile::tempdir().unwrap();
    let (q, c, expected) = match_inputs(dir.path());
    let out = dir.path().join("pairs");
    let args = match_args(&q, Some(&c), &out, false);
    let staging = dir.path().join(".pairs.neardup-staging");
    let fault = [("NEARDUP_FAULT_PANIC_WORKER", "1")];
    let stopped = |output: &Output, hung: bool| {
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(!hung, "a run with a failed worker hung: {stderr}");
        (output.status.code(), stderr)
    };
    // One process of two workers: worker 0 would wait for worker 1 forever.
    let child = neardup()
        .args(&args)
        .args(["--workers", "2"])
        .envs(fault)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (output, hung) = wait_or_kill(child, Duration::from_secs(60));
    let (code, stderr) = stopped(&output, hung);
    assert_eq!(code, Some(4), "{stderr}");
    assert!(
        stderr.contains("error: worker 1 failed (NEARDUP_FAULT_PANIC_WORKER"),
        "{stderr}"
    );
    assert!(!out.exists() && !staging.exists(), "nothing is left behind");
    // Two processes of one worker: process 1's worker fails, process 0 then
    // loses process 1.
    let hosts = hostfile(dir.path(), 2);
    let children: Vec<Child> = (0..2).map(|i| spawn(&args, &hosts, i, 1, &fault)).collect();
    let mut lines = Vec::new();
    for child in children {
        let (output, hung) = wait_or_kill(child, Duration::from_secs(60));
        lines.push(stopped(&output, hung));
    }
    assert_eq!(lines[1].0, Some(4), "{}", lines[1].1);
    assert!(
        lines[1].1.contains("process 1's worker 0 failed"),
        "{}",
        lines[1].1
    );
    assert_eq!(lines[0].0, Some(3), "{}", lines[0].1);
    assert!(lines[0].1.contains("lost process 1 "), "{}", lines[0].1);
    assert!(!out.exists() && !staging.exists(), "nothing is left behind");

    let outputs = run_cluster(dir.path(), &args, 2, 1);
    assert_all_succeeded(&outputs);
    assert_eq!(read_pairs(&out).len(), expected);
}

/// Sends `signal` (`-STOP`, `-KILL`) to a child with the system's `kill`.
fn signal(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {signal} failed");
}

/// Process 1 freezes; process 0 stops for it first (a shorter
/// `--peer-timeout`), and process 2 sees process 0 go before it has
/// given up on process 1 itself: it names process 1 all the same, as
/// process 0 told it before it stopped.
#[test]
fn a_survivor_names_the_process_another_survivor_stopped_for() {
    let dir = tempfile::tempdir().unwrap();
    let (q, c, _) = match_inputs(dir.path());
    let args = match_args(&q, Some(&c), &dir.path().join("pairs"), false);
    let with_timeout =
        |seconds: &str| [args.clone(), strings(&["--peer-timeout", seconds])].concat();
    let hosts = hostfile(dir.path(), 3);
    let frozen_at = read_hostfile(&hosts).unwrap()[1].clone();
    let delay = ("NEARDUP_TEST_UNIT_DELAY_MS", "100");
    // Process 2 beats every 2.5 s, well within process 0's 4 s, and would
    // give up on process 1 only after 10 s.
    let first = spawn(&with_timeout("4"), &hosts, 0, 1, &[delay]);
    let mut frozen = spawn(&with_timeout("4"), &hosts, 1, 1, &[delay, UNIT_READ_LOG]);
    let last = spawn(&with_timeout("10"), &hosts, 2, 1, &[delay]);
    StderrLines::of(&mut frozen).wait_for("unit read");
    signal(&frozen, "-STOP");
    let outputs: Vec<(Output, bool)> = [first, last]
        .into_iter()
        .map(|child| wait_or_kill(child, Duration::from_secs(60)))
        .collect();
    signal(&frozen, "-KILL");
    let _ = frozen.wait_with_output();
    let said = [
        format!("error: process 1 ({frozen_at}) sent nothing for 4s (--peer-timeout)"),
        format!("error: lost process 1 ({frozen_at}) of the run (process 0 stopped for it)"),
    ];
    for ((output, hung), said) in outputs.iter().zip(said) {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!hung, "{stderr}");
        assert_eq!(output.status.code(), Some(3), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(&said), "{said}: {stderr}");
    }
}

#[test]
fn a_frozen_peer_stops_the_others_after_the_peer_timeout_and_a_rerun_is_complete() {
    let dir = tempfile::tempdir().unwrap();
    let (q, c, expected) = match_inputs(dir.path());
    let out = dir.path().join("pairs");
    let mut args = match_args(&q, Some(&c), &out, false);
    args.extend(strings(&["--peer-timeout", "3"]));
    let hosts = hostfile(dir.path(), 2);
    let address = read_hostfile(&hosts).unwrap()[1].clone();
    let delay = ("NEARDUP_TEST_UNIT_DELAY_MS", "100");
    let leader = spawn(&args, &hosts, 0, 1, &[delay]);
    let mut frozen = spawn(&args, &hosts, 1, 1, &[delay, UNIT_READ_LOG]);
    let staging = dir.path().join(".pairs.neardup-staging");
    // Frozen once it has read a unit: mid-scan, connected to process 0.
    StderrLines::of(&mut frozen).wait_for("unit read");
    // SIGSTOP: the process holds its sockets open and sends nothing, as a
    // host that lost power or a machine swapping would.
    signal(&frozen, "-STOP");
    let (output, hung) = wait_or_kill(leader, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    signal(&frozen, "-KILL");
    let _ = frozen.wait_with_output();
    assert!(!hung, "process 0 waited for a frozen peer: {stderr}");
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "error: process 1 ({address}) sent nothing for 3s (--peer-timeout); stopping without _SUCCESS"
        )),
        "{stderr}"
    );
    assert!(!out.exists() && !staging.exists(), "nothing is left behind");

    let outputs = run_cluster(dir.path(), &args, 2, 1);
    assert_all_succeeded(&outputs);
    assert_eq!(read_pairs(&out).len(), expected);
}

/// `command` with SIGINT and SIGHUP as an interactive shell leaves them
/// to a foreground command (a test run in the background inherits them
/// ignored, and an ignored signal is never delivered).
fn with_default_signals(command: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGHUP, libc::SIG_DFL);
            Ok(())
        })
    }
}

#[test]
fn a_signal_stops_a_run_in_one_line_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let (q, c, expected) = match_inputs(dir.path());
    let out = dir.path().join("pairs");
    let args = match_args(&q, Some(&c), &out, false);
    let staging = dir.path().join(".pairs.neardup-staging");
    for (name, signal_name, code) in [
        ("-INT", "SIGINT", 130),
        ("-TERM", "SIGTERM", 143),
        ("-HUP", "SIGHUP", 129),
    ] {
        let mut child = with_default_signals(
            neardup()
                .args(&args)
                .env("NEARDUP_TEST_UNIT_DELAY_MS", "100")
                .env(UNIT_READ_LOG.0, UNIT_READ_LOG.1)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        )
        .spawn()
        .unwrap();
        let mut lines = StderrLines::of(&mut child);
        lines.wait_for("unit read");
        assert!(staging.exists(), "{name}: mid-scan, the output is staged");
        signal(&child, name);
        let (output, hung) = wait_or_kill(child, Duration::from_secs(60));
        let stderr = lines.text_without("unit read");
        assert!(!hung, "{name}: {stderr}");
        assert_eq!(output.status.code(), Some(code), "{name}: {stderr}");
        assert_eq!(
            stderr.trim_end(),
            format!("error: stopped by {signal_name}; the output in progress is removed, without _SUCCESS")
        );
        assert!(
            !out.exists() && !staging.exists(),
            "{name}: nothing is left behind"
        );
    }
    let output = neardup().args(&args).output().unwrap();
    assert!(output.status.success());
    assert_eq!(read_pairs(&out).len(), expected);
}

/// A signal that comes as the output is committed waits for the commit,
/// then stops the process with one line that says the output is complete,
/// and a non-zero exit; no second line, no exit 0.
#[test]
fn a_signal_during_a_commit_waits_for_it_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (q, c, expected) = match_inputs(dir.path());
    let out = dir.path().join("pairs");
    let args = match_args(&q, Some(&c), &out, false);
    let mut child = with_default_signals(
        neardup()
            .args(&args)
            .env("NEARDUP_TEST_PAUSE_IN_COMMIT", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .spawn()
    .unwrap();
    let mut lines = StderrLines::of(&mut child);
    lines.wait_for("committing");
    signal(&child, "-TERM");
    let (output, hung) = wait_or_kill(child, Duration::from_secs(60));
    let stderr = lines.text_without("committing");
    assert!(!hung, "{stderr}");
    assert_eq!(output.status.code(), Some(143), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "error: stopped by SIGTERM once its output was committed, complete with _SUCCESS; nothing after it runs"
    );
    assert!(out.join("_SUCCESS").exists());
    assert_eq!(read_pairs(&out).len(), expected);
}

/// `gen` stopped mid-run leaves neither its staging nor its run's lock.
#[test]
fn a_signal_stops_gen_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gen");
    let mut child = neardup()
        .args(["gen", "--out", out.to_str().unwrap()])
        .args([
            "--queries",
            "1000",
            "--corpus",
            "1000000000",
            "--shards",
            "64",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let staged = dir.path().join(".gen.neardup-staging/corpus");
    while !staged.exists() {
        assert!(child.try_wait().unwrap().is_none(), "gen ended first");
        std::thread::sleep(Duration::from_millis(2));
    }
    signal(&child, "-TERM");
    let (output, hung) = wait_or_kill(child, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!hung, "{stderr}");
    assert_eq!(output.status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("stopped by SIGTERM"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_slow_but_live_peer_does_not_trip_the_peer_timeout() {
    let dir = tempfile::tempdir().unwrap();
    // Four row groups: a unit or two per process.
    let mut rng = SplitMix64::new(7);
    let rows = random_rows(&mut rng, 800, 0);
    let (ids, fps): (Vec<i64>, Vec<u64>) = rows.into_iter().unzip();
    let shard = dir.path().join("queries").join("shard-000.parquet");
    std::fs::create_dir_all(shard.parent().unwrap()).unwrap();
    write_fingerprints(&shard, &ids, &fps, 200).unwrap();
    let q = shard.display().to_string();
    let out = dir.path().join("pairs");
    let mut args = match_args(&q, None, &out, true);
    args.extend(strings(&["--peer-timeout", "1"]));
    let hosts = hostfile(dir.path(), 2);
    // Process 1 spends 2.5 s on each of its units, sending nothing on
    // timely's connection meanwhile: longer than the timeout, which only
    // silence on the heartbeat connection trips.
    let leader = spawn(&args, &hosts, 0, 1, &[]);
    let slow = spawn(
        &args,
        &hosts,
        1,
        1,
        &[("NEARDUP_TEST_UNIT_DELAY_MS", "2500")],
    );
    let mut outputs = Vec::new();
    for child in [leader, slow] {
        let (output, hung) = wait_or_kill(child, Duration::from_secs(120));
        assert!(!hung, "{}", String::from_utf8_lossy(&output.stderr));
        outputs.push(output);
    }
    assert_all_succeeded(&outputs);
    let single = dir.path().join("single");
    let single_args = match_args(&q, None, &single, true);
    let output = neardup().args(&single_args).output().unwrap();
    assert!(output.status.success());
    assert_eq!(data_files(&out), data_files(&single));
}

/// Processes started with different settings or inputs would each do their
/// share of a different job: each stops before the dataflow, on one line
/// naming the setting, and nothing is written.
#[test]
fn processes_started_with_different_jobs_stop_on_one_line_naming_the_difference() {
    let dir = tempfile::tempdir().unwrap();
    let (q, c, _) = match_inputs(dir.path());
    let fewer = dir.path().join("fewer");
    std::fs::create_dir(&fewer).unwrap();
    std::fs::copy(
        Path::new(&c).join("shard-000.parquet"),
        fewer.join("shard-000.parquet"),
    )
    .unwrap();
    let pairs = dir.path().join("pairs").display().to_string();
    run_ok(&["match", "--queries", &q, "--self", "--out", &pairs]);
    let out = dir.path().join("out");
    let base = match_args(&q, Some(&c), &out, true);
    let with = |extra: &[&str]| [base.clone(), strings(extra)].concat();
    let fewer = fewer.display().to_string();
    let parts_2: Vec<String> = base
        .iter()
        .map(|a| if a == "3" { "2".into() } else { a.clone() })
        .collect();
    let cluster_args = strings(&[
        "cluster",
        "--pairs",
        &pairs,
        "--out",
        &out.display().to_string(),
    ]);
    let crawl = Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples/crawl");
    let fingerprint_args = strings(&[
        "fingerprint",
        "--input",
        &crawl.display().to_string(),
        "--out",
        &out.display().to_string(),
    ]);
    let cases: Vec<(Vec<String>, Vec<String>, &str)> = vec![
        (with(&["-k", "3"]), with(&["-k", "4"]), "-k: "),
        (with(&["--blocks", "5"]), base.clone(), "--blocks: "),
        (base.clone(), parts_2, "--parts: "),
        (
            base.clone(),
            match_args(&q, Some(&fewer), &out, true),
            "corpus: ",
        ),
        (
            base.clone(),
            strings(&[
                "cluster",
                "--pairs",
                &pairs,
                "--out",
                &out.display().to_string(),
            ]),
            "stage: ",
        ),
        (
            cluster_args.clone(),
            [
                cluster_args.clone(),
                strings(&["--drop-policy", "component"]),
            ]
            .concat(),
            "--drop-policy: ",
        ),
        (
            fingerprint_args.clone(),
            [fingerprint_args.clone(), strings(&["--no-sketch"])].concat(),
            "the scheme: ",
        ),
        (
            fingerprint_args.clone(),
            [fingerprint_args.clone(), strings(&["--text-field", "body"])].concat(),
            "--text-field: ",
        ),
    ];
    for (first, second, needle) in cases {
        let hosts = hostfile(dir.path(), 2);
        let children = [
            spawn(&first, &hosts, 0, 1, &[]),
            spawn(&second, &hosts, 1, 1, &[]),
        ];
        for (i, child) in children.into_iter().enumerate() {
            let output = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(
                output.status.code(),
                Some(1),
                "{needle}, process {i}: {stderr}"
            );
            assert_eq!(stderr.trim_end().lines().count(), 1, "{needle}: {stderr}");
            assert!(stderr.contains("was started with another job"), "{stderr}");
            assert!(stderr.contains(needle), "`{needle}` not in {stderr}");
            // Values as the flags take them, not as Rust spells them.
            let values = match needle {
                "--drop-policy: " => Some(("direct", "component")),
                "--blocks: " => Some(("5", "automatic")),
                "the scheme: " => Some(("--scheme v12", "--scheme v12 --no-sketch")),
                "--text-field: " => Some(("text", "body")),
                _ => None,
            };
            // Files counted with their rows, or listed if few: never Rust's
            // dump of a list, nor "other files" on both sides.
            if needle == "corpus: " {
                assert!(stderr.contains(" 4 files of "), "{stderr}");
                assert!(stderr.contains("shard-000.parquet ("), "{stderr}");
            }
            if let Some((first, second)) = values {
                let (theirs, ours) = if i == 0 {
                    (second, first)
                } else {
                    (first, second)
                };
                let said = format!("{needle}{theirs} there, {ours} here");
                assert!(stderr.contains(&said), "{stderr}");
            }
        }
        assert!(!out.exists(), "{needle}: an output was written");
        let staging = dir.path().join(".out.neardup-staging");
        assert!(!staging.exists(), "{needle}: staging left behind");
    }
    // Another hostfile on process 1 that still connects: its own line,
    // which no peer reads, names another interface.
    let hosts = hostfile(dir.path(), 2);
    let lines = std::fs::read_to_string(&hosts).unwrap();
    let own = lines.lines().last().unwrap();
    let other = dir.path().join("hosts-other");
    let port = own.rsplit(':').next().unwrap();
    std::fs::write(&other, lines.replace(own, &format!("0.0.0.0:{port}"))).unwrap();
    let children = [
        spawn(&base, &hosts, 0, 1, &[]),
        spawn(&base, &other, 1, 1, &[]),
    ];
    for child in children {
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("the processes' addresses: "), "{stderr}");
    }
    assert!(!out.exists(), "another hostfile: an output was written");
}

/// A process that fails before its stage connects (an input missing on its
/// host) tells its peers why, so each stops on one line naming it rather
/// than waiting out --connect-timeout for a peer that will never come.
#[test]
fn a_process_that_fails_on_its_input_stops_its_peers_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let (q, c, _) = match_inputs(dir.path());
    let out = dir.path().join("out");
    let missing = dir.path().join("missing").display().to_string();
    let hosts = hostfile(dir.path(), 3);
    let children = [
        spawn(&match_args(&q, Some(&c), &out, true), &hosts, 0, 1, &[]),
        spawn(
            &match_args(&q, Some(&missing), &out, true),
            &hosts,
            1,
            1,
            &[],
        ),
        spawn(&match_args(&q, Some(&c), &out, true), &hosts, 2, 1, &[]),
    ];
    for (i, child) in children.into_iter().enumerate() {
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "process {i}: {stderr}");
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "process {i}: {stderr}"
        );
        assert!(
            stderr.contains("missing: no such file"),
            "process {i}: {stderr}"
        );
        if i != 1 {
            let reason = format!("process {i}: process 1 failed before starting: ");
            assert!(stderr.contains(&reason), "{stderr}");
        }
    }
    assert!(!out.exists());
    assert!(!dir.path().join(".out.neardup-staging").exists());
}

/// Processes that name one relative `--out` from different working
/// directories do not share it: process 0 must not commit a directory that
/// lacks the other process's parts, and says why on one line.
#[test]
fn an_output_not_shared_by_every_process_is_not_committed() {
    let dir = tempfile::tempdir().unwrap();
    let (q, c, _) = match_inputs(dir.path());
    let args = match_args(&q, Some(&c), Path::new("pairs"), false);
    let hosts = hostfile(dir.path(), 2);
    let homes = [dir.path().join("a"), dir.path().join("b")];
    for home in &homes {
        std::fs::create_dir(home).unwrap();
    }
    // A staging directory left in process 1's directory lets its writes
    // succeed there, unseen by process 0.
    std::fs::create_dir(homes[1].join(".pairs.neardup-staging")).unwrap();
    // Process i runs in homes[i], each naming `pairs` as its --out.
    let start = |hosts: &Path| start_in_homes(&homes, &args, hosts);
    let children = start(&hosts);
    let outputs = wait_all(children);
    let stderr = String::from_utf8_lossy(&outputs[0].stderr);
    assert_eq!(outputs[0].status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("storage all processes share") && stderr.contains("part-00001.parquet"),
        "{stderr}"
    );
    let theirs = String::from_utf8_lossy(&outputs[1].stderr);
    assert_eq!(outputs[1].status.code(), Some(1), "{theirs}");
    assert!(
        theirs.contains("process 0's commit failed: ") && theirs.contains("part-00001.parquet"),
        "{theirs}"
    );
    assert!(!homes[0].join("pairs").exists(), "nothing is committed");

    // Without one, process 1 cannot write its part, and says why.
    std::fs::remove_dir_all(homes[1].join(".pairs.neardup-staging")).unwrap();
    let hosts = hostfile(dir.path(), 2);
    let children = start(&hosts);
    assert_each_stops_on_unshared_storage(children);
    assert!(!homes[0].join("pairs").exists(), "nothing is committed");
}

/// Asserts that each process stops on one line saying that `--out` must
/// be shared.
fn assert_each_stops_on_unshared_storage(children: Vec<Child>) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, child) in children.into_iter().enumerate() {
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "process {i}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("storage all processes share"),
            "process {i}: {stderr}"
        );
        lines.push(stderr.into_owned());
    }
    lines
}

/// Starts process i of `args` in `homes[i]`, one worker each.
fn start_in_homes(homes: &[PathBuf], args: &[String], hosts: &Path) -> Vec<Child> {
    (homes.iter().enumerate())
        .map(|(i, home)| {
            neardup()
                .current_dir(home)
                .args(args)
                .args(["--hostfile", &hosts.display().to_string()])
                .args(["--process", &i.to_string(), "--workers", "1"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect()
}

/// A fingerprint of fewer files than processes: process 1 writes no
/// shard, yet an `--out` it does not share is refused as one with parts
/// is, and a shared one holds the shard alone, as one process writes it.
#[test]
fn a_process_that_writes_no_shard_still_shares_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let warc = Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples/crawl/pages.warc.gz");
    let args = |out: &str| {
        strings(&[
            "fingerprint",
            "--input",
            &warc.display().to_string(),
            "--out",
            out,
        ])
    };
    let alone = dir.path().join("alone");
    let alone_args = args(&alone.display().to_string());
    run_ok(&alone_args.iter().map(String::as_str).collect::<Vec<_>>());
    let shared = dir.path().join("shared").display().to_string();
    assert_all_succeeded(&run_cluster(dir.path(), &args(&shared), 2, 1));
    assert_eq!(data_files(Path::new(&shared)), data_files(&alone));

    let homes = [dir.path().join("a"), dir.path().join("b")];
    for home in &homes {
        std::fs::create_dir(home).unwrap();
    }
    // Process 1 finds no staging directory where it runs, and every
    // process says so.
    let children = start_in_homes(&homes, &args("shards"), &hostfile(dir.path(), 2));
    for line in assert_each_stops_on_unshared_storage(children) {
        assert!(line.contains("process 1: "), "{line}");
    }
    assert!(!homes[0].join("shards").exists(), "nothing is committed");

    // One left there by an earlier run: process 0 finds no mark of it.
    std::fs::create_dir(homes[1].join(".shards.neardup-staging")).unwrap();
    let children = start_in_homes(&homes, &args("shards"), &hostfile(dir.path(), 2));
    let outputs = wait_all(children);
    let stderr = String::from_utf8_lossy(&outputs[0].stderr);
    assert_eq!(outputs[0].status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("process 1 did not write to")
            && stderr.contains("storage all processes share"),
        "{stderr}"
    );
    assert_eq!(outputs[1].status.code(), Some(1));
    assert!(!homes[0].join("shards").exists(), "nothing is committed");
}

/// Holds `address` as another program would: accepts every connection and
/// writes `answer` (nothing: never speaks) on each, keeping them open.
fn occupy(address: &str, answer: &'static [u8]) -> TcpListener {
    let listener = TcpListener::bind(address).unwrap();
    let accepting = listener.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in accepting.incoming() {
            let Ok(mut stream) = stream else { break };
            let _ = stream.write_all(answer);
            held.push(stream);
        }
    });
    listener
}

/// A port another program holds: the process that cannot listen there
/// stops at once naming it and tells its peers, which stop too instead of
/// waiting out --connect-timeout, whether the program answers nothing or
/// something; a process that reaches a program that answers, but not as
/// neardup, stops at once saying so.
#[test]
fn a_port_held_by_another_program_stops_every_process_at_once_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let (q, c, _) = match_inputs(dir.path());
    let out = dir.path().join("pairs");
    let mut args = match_args(&q, Some(&c), &out, false);
    // Far beyond the hang guard below: only the fix stops them before it.
    args.extend(strings(&["--connect-timeout", "600"]));
    let cases: [(usize, &'static [u8], [&str; 2]); 3] = [
        (
            1,
            b"",
            ["process 1 failed before starting: ", "cannot listen on"],
        ),
        (
            0,
            b"",
            ["cannot listen on", "process 0 failed before starting: "],
        ),
        (
            0,
            b"HTTP/1.1 400 Bad Request\r\n\r\n",
            ["cannot listen on", "answered, but not as neardup"],
        ),
    ];
    for (held, answer, expected) in cases {
        let hosts = hostfile(dir.path(), 2);
        let address = read_hostfile(&hosts).unwrap()[held].clone();
        let _program = occupy(&address, answer);
        let children: Vec<Child> = (0..2).map(|i| spawn(&args, &hosts, i, 1, &[])).collect();
        for (i, child) in children.into_iter().enumerate() {
            let (output, hung) = wait_or_kill(child, Duration::from_secs(120));
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(!hung, "process {i} waited for its peer: {stderr}");
            assert_eq!(output.status.code(), Some(1), "process {i}: {stderr}");
            assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
            assert!(stderr.contains(&address), "process {i}: {stderr}");
            assert!(stderr.contains(expected[i]), "process {i}: {stderr}");
        }
        assert!(!out.exists());
    }
}

/// Two runs on one --out would write one staging directory: the second
/// stops on one line naming the first, which completes. A lock left by a
/// process that is gone (a crash) does not block the next run.
#[test]
fn a_second_run_on_the_same_output_is_refused_and_a_stale_lock_is_taken_over() {
    let dir = tempfile::tempdir().unwrap();
    let (q, c, expected) = match_inputs(dir.path());
    let out = dir.path().join("pairs");
    let args = match_args(&q, Some(&c), &out, false);
    let lock = dir.path().join(".pairs.neardup-lock");
    let delay = ("NEARDUP_TEST_UNIT_DELAY_MS", "100");
    let mut first = neardup()
        .args(&args)
        .envs([delay, UNIT_READ_LOG])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = StderrLines::of(&mut first);
    lines.wait_for("unit read");
    let second = neardup().args(&args).output().unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    let holder = format!("another run (process {} on ", first.id());
    assert!(stderr.contains(&holder), "{stderr}");
    assert!(stderr.contains(&lock.display().to_string()), "{stderr}");
    let status = first.wait().unwrap();
    assert!(status.success(), "{}", lines.text_without("unit read"));
    assert_eq!(read_pairs(&out).len(), expected);
    assert!(!lock.exists(), "the commit releases the lock");

    // A crashed run's lock: its process is gone from this host.
    let mut gone = Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    std::fs::write(&lock, format!("{} {}", host.trim(), gone.id())).unwrap();
    let mut again = args.clone();
    again.push("--overwrite".into());
    let output = neardup().args(&again).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(read_pairs(&out).len(), expected);
    assert!(!lock.exists());
}

/// Rows as a Parquet file of two INT64 columns `names` whose size and
/// footer depend on the row count alone: no compression, dictionary or
/// statistics.
fn write_plain_table(path: &Path, names: [&str; 2], rows: &[(i64, u64)]) {
    use parquet::basic::Compression;
    use parquet::file::properties::{EnabledStatistics, WriterProperties};
    let ids: Vec<i64> = rows.iter().map(|r| r.0).collect();
    let fps: Vec<i64> = rows.iter().map(|r| r.1 as i64).collect();
    let batch = arrow_array::RecordBatch::try_from_iter([
        (
            names[0],
            std::sync::Arc::new(arrow_array::Int64Array::from(ids)) as _,
        ),
        (
            names[1],
            std::sync::Arc::new(arrow_array::Int64Array::from(fps)) as _,
        ),
    ])
    .unwrap();
    let properties = WriterProperties::builder()
        .set_compression(Compression::UNCOMPRESSED)
        .set_dictionary_enabled(false)
        .set_statistics_enabled(EnabledStatistics::None)
        .set_max_row_group_row_count(Some(1_000))
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(properties)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

/// Two hosts whose input of one name and size holds other rows (a stale
/// copy): the processes stop before the dataflow on one line saying so,
/// for match's fingerprints, cluster's pairs and fingerprint's crawl text
/// alike. They used
/// to compare names and sizes only, and wrote wrong pairs with exit 0.
#[test]
fn processes_reading_other_bytes_under_one_name_stop_before_the_dataflow() {
    let dir = tempfile::tempdir().unwrap();
    let hosts: Vec<PathBuf> = (0..2)
        .map(|i| dir.path().join(format!("host{i}")))
        .collect();
    for (i, host) in hosts.iter().enumerate() {
        std::fs::create_dir(host).unwrap();
        let mut rng = SplitMix64::new(7 + i as u64);
        let rows = random_rows(&mut rng, 5_000, 0);
        write_plain_table(&host.join("q.parquet"), ["id", "simhash"], &rows);
        let pairs: Vec<(i64, u64)> = rows.iter().map(|&(id, f)| (id, f >> 50)).collect();
        write_plain_table(&host.join("p.parquet"), ["query_id", "corpus_id"], &pairs);
        let letter = if i == 0 { 'a' } else { 'b' };
        let doc = format!(
            "{{\"id\": 1, \"text\": \"{}\"}}\n",
            letter.to_string().repeat(40)
        );
        std::fs::write(host.join("docs.jsonl"), doc).unwrap();
    }
    for name in ["q.parquet", "p.parquet", "docs.jsonl"] {
        let sizes: Vec<u64> = (hosts.iter())
            .map(|host| host.join(name).metadata().unwrap().len())
            .collect();
        assert_eq!(
            sizes[0], sizes[1],
            "{name}: the hosts' files differ in size"
        );
    }
    let out = dir.path().join("out").display().to_string();
    for stage in [
        strings(&["match", "--queries", "q.parquet", "--self", "--out", &out]),
        strings(&["fingerprint", "--input", "docs.jsonl", "--out", &out]),
        strings(&[
            "cluster",
            "--pairs",
            "p.parquet",
            "--drop-policy",
            "component",
        ])
        .into_iter()
        .chain(strings(&["--out", &out]))
        .collect(),
    ] {
        let addresses = hostfile(dir.path(), 2);
        let children = start_in_homes(&hosts, &stage, &addresses);
        for (i, child) in children.into_iter().enumerate() {
            let output = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(1), "{}, {i}: {stderr}", stage[0]);
            assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
            let said = format!(
                "process {} reads other bytes under the same input file names and sizes",
                1 - i
            );
            assert!(stderr.contains(&said), "{}: {stderr}", stage[0]);
        }
        assert!(
            !Path::new(&out).exists(),
            "{}: an output was written",
            stage[0]
        );
    }
}
