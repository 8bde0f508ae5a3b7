//! The `neardup` binary: bad input gets one clear line and a non-zero exit,
//! and leaves nothing at the output directory.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use crate::common::*;
use arrow_array::{ArrayRef, Int32Array, Int64Array, StringArray};
use neardup::matching::kernel::Kernel;
use neardup::random::SplitMix64;

/// Runs a failing `match` and checks the contract: non-zero exit, one stderr
/// line naming `needle`, no output directory, no staging leftovers.
fn assert_fails(dir: &Path, args: &[&str], needle: &str) {
    let out = dir.join("out");
    let out_s = out.display().to_string();
    let mut all = vec!["match"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", &out_s]);
    let result = neardup(&all);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(!result.status.success(), "{args:?} should fail");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "one line for {args:?}, got: {stderr}"
    );
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(
        stderr.contains(needle),
        "{args:?}: `{needle}` not in: {stderr}"
    );
    assert!(!out.exists(), "{args:?} left {out_s}");
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().contains("staging"))
        .collect();
    assert!(leftovers.is_empty(), "staging left behind: {leftovers:?}");
}

fn good_shard(dir: &Path) -> String {
    let mut rng = SplitMix64::new(1);
    let path = dir.join("good.parquet");
    write_shard(&path, &random_rows(&mut rng, 20, 0));
    path.display().to_string()
}

/// More workers than four a core are warned of once (they add memory, not
/// speed; thousands fail at start as if neardup had a bug), and still run.
#[test]
fn workers_far_beyond_the_cores_are_warned_of() {
    let dir = tempfile::tempdir().unwrap();
    let good = good_shard(dir.path());
    let cores = std::thread::available_parallelism().unwrap().get();
    let out = dir.path().join("out").display().to_string();
    for (workers, warned) in [(4 * cores, false), (4 * cores + 1, true)] {
        let workers = workers.to_string();
        let args = ["match", "--queries", &good, "--self", "--out", &out];
        let output = neardup(&[&args[..], &["--overwrite", "--workers", &workers]].concat());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
        let said = format!("--workers {workers} is more than 4 times the {cores} core(s)");
        assert_eq!(
            stderr.matches(&said).count(),
            usize::from(warned),
            "{stderr}"
        );
    }
}

#[test]
fn missing_input_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let good = good_shard(dir.path());
    let missing = dir.path().join("nope.parquet").display().to_string();
    assert_fails(
        dir.path(),
        &["--queries", &missing, "--corpus", &good],
        "nope.parquet: no such file",
    );
    let pattern = dir.path().join("none-*.parquet").display().to_string();
    assert_fails(
        dir.path(),
        &["--queries", &good, "--corpus", &pattern],
        "no files match",
    );
}

#[test]
fn a_file_that_is_not_parquet_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let good = good_shard(dir.path());
    let bad = dir.path().join("text.parquet");
    std::fs::write(&bad, "id,simhash\n1,2\n").unwrap();
    assert_fails(
        dir.path(),
        &["--queries", &good, "--corpus", bad.to_str().unwrap()],
        "text.parquet: not a readable Parquet file",
    );
}

#[test]
fn missing_and_wrongly_typed_columns_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let good = good_shard(dir.path());
    let no_simhash = dir.path().join("no_simhash.parquet");
    write_batch(
        &no_simhash,
        vec![
            ("id", Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef),
            ("fp", Arc::new(Int64Array::from(vec![3, 4]))),
        ],
    );
    assert_fails(
        dir.path(),
        &["--queries", &good, "--corpus", no_simhash.to_str().unwrap()],
        "no column `simhash`",
    );

    let text = dir.path().join("text_simhash.parquet");
    write_batch(
        &text,
        vec![
            ("id", Arc::new(Int64Array::from(vec![1])) as ArrayRef),
            ("simhash", Arc::new(StringArray::from(vec!["a"]))),
        ],
    );
    assert_fails(
        dir.path(),
        &["--queries", text.to_str().unwrap(), "--self"],
        "column `simhash` has type Utf8",
    );

    let narrow = dir.path().join("int32_id.parquet");
    write_batch(
        &narrow,
        vec![
            ("id", Arc::new(Int32Array::from(vec![1])) as ArrayRef),
            ("simhash", Arc::new(Int64Array::from(vec![5]))),
        ],
    );
    assert_fails(
        dir.path(),
        &["--queries", &good, "--corpus", narrow.to_str().unwrap()],
        "column `id` has type Int32",
    );

    // Renamed columns are found with --id-column / --simhash-column.
    let out = dir.path().join("renamed");
    let result = neardup(&[
        "match",
        "--queries",
        no_simhash.to_str().unwrap(),
        "--self",
        "--simhash-column",
        "fp",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
}

#[test]
fn nulls_in_id_or_simhash_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let good = good_shard(dir.path());
    let nulls = dir.path().join("nulls.parquet");
    write_batch(
        &nulls,
        vec![
            (
                "id",
                Arc::new(Int64Array::from(vec![Some(1), None])) as ArrayRef,
            ),
            ("simhash", Arc::new(Int64Array::from(vec![3, 4]))),
        ],
    );
    assert_fails(
        dir.path(),
        &["--queries", &good, "--corpus", nulls.to_str().unwrap()],
        "nulls.parquet: column `id` has 1 null values",
    );
}

#[test]
fn k_out_of_range_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let good = good_shard(dir.path());
    assert_fails(
        dir.path(),
        &["--queries", &good, "--self", "-k", "11"],
        "-k 11 is out of range",
    );
    assert_fails(
        dir.path(),
        &["--queries", &good, "--self", "-k", "-1"],
        "-k -1 is out of range: k must be between 0 and 10",
    );
    assert_fails(
        dir.path(),
        &["--queries", &good, "--self", "-k", "3", "--blocks", "3"],
        "--blocks 3 is out of range",
    );
    assert_fails(
        dir.path(),
        &["--queries", &good, "--self", "-k", "5", "--blocks", "64"],
        "7624512 tables at k = 5, more than 65536",
    );
    assert_fails(
        dir.path(),
        &[
            "--queries",
            &good,
            "--self",
            "--blocks",
            "40",
            "--table-memory-mib",
            "1",
        ],
        "more than --table-memory-mib 1",
    );
    // No design fits: the fewest tables over 100k fingerprints need more.
    let many = dir.path().join("many.parquet");
    let mut rng = neardup::random::SplitMix64::new(5);
    write_shard(&many, &random_rows(&mut rng, 100_000, 0));
    let many = many.display().to_string();
    assert_fails(
        dir.path(),
        &["--queries", &many, "--self", "--table-memory-mib", "1"],
        "no table design fits --table-memory-mib 1: the smallest, 4 tables (m = 4), needs ",
    );
    assert_fails(
        dir.path(),
        &["--queries", &good, "--self", "--pair-memory-mib", "0"],
        "--pair-memory-mib 0 leaves no memory for pairs",
    );
    let no_tables = "--table-memory-mib 0 leaves no memory for the tables";
    assert_fails(
        dir.path(),
        &["--queries", &good, "--self", "--table-memory-mib", "0"],
        no_tables,
    );
    // A budget beyond any machine's (2^44 MiB: 2^64 bytes) is no limit,
    // not wrapped around to none.
    let huge = neardup(&[
        "plan",
        "--num-queries",
        "1000",
        "--table-memory-mib",
        "17592186044416",
    ]);
    let stdout = String::from_utf8_lossy(&huge.stdout);
    assert!(
        huge.status.success(),
        "{}",
        String::from_utf8_lossy(&huge.stderr)
    );
    assert!(!stdout.contains("refuses"), "{stdout}");
    let plan = neardup(&["plan", "--num-queries", "1000", "--table-memory-mib", "0"]);
    let stderr = String::from_utf8_lossy(&plan.stderr);
    assert!(!plan.status.success());
    assert_eq!(
        stderr.trim_end(),
        format!("error: {no_tables}: give at least 1")
    );
}

/// An existing --out is refused without --overwrite, and with it unless
/// it holds only what neardup writes.
#[test]
fn an_existing_output_directory_is_refused_unless_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let good = good_shard(dir.path());
    let out = dir.path().join("existing");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep.txt"), "mine").unwrap();
    let out_arg = out.to_str().unwrap();
    let to_out = |extra: &[&str]| {
        neardup(
            &[
                &["match", "--queries", &good, "--self", "--out", out_arg],
                extra,
            ]
            .concat(),
        )
    };
    let result = to_out(&[]);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(!result.status.success());
    assert!(
        stderr.contains("existing: output directory already exists"),
        "{stderr}"
    );
    assert!(out.join("keep.txt").exists() && !out.join("_SUCCESS").exists());

    // --overwrite replaces only what neardup writes: a directory holding
    // anything else, at any depth, is someone's (a mistyped --out).
    let overwrite = || to_out(&["--overwrite"]);
    let result = overwrite();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("keep.txt is none of its files"), "{stderr}");
    assert!(out.join("keep.txt").exists());
    std::fs::remove_file(out.join("keep.txt")).unwrap();
    std::fs::create_dir(out.join("sub")).unwrap();
    std::fs::write(out.join("sub/part-00000.parquet"), "x").unwrap();
    assert!(overwrite().status.success(), "an empty directory, parts");
    assert!(out.join("_SUCCESS").exists() && !out.join("sub").exists());

    // A neardup output, finished or with its _SUCCESS removed to run again.
    std::fs::remove_file(out.join("_SUCCESS")).unwrap();
    assert!(overwrite().status.success());
    std::fs::write(out.join("notes.md"), "mine").unwrap();
    assert_eq!(overwrite().status.code(), Some(1));
    assert!(out.join("notes.md").exists() && out.join("_SUCCESS").exists());
}

#[test]
fn a_failed_overwrite_keeps_the_old_output() {
    let dir = tempfile::tempdir().unwrap();
    let good = good_shard(dir.path());
    let out = dir.path().join("out");
    assert!(neardup(&[
        "match",
        "--queries",
        &good,
        "--self",
        "--out",
        out.to_str().unwrap()
    ])
    .status
    .success());
    let missing = dir.path().join("missing.parquet");
    let result = neardup(&[
        "match",
        "--queries",
        &good,
        "--corpus",
        missing.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--overwrite",
    ]);
    assert!(!result.status.success());
    assert!(
        out.join("_SUCCESS").exists(),
        "the complete old output is still there"
    );
}

#[test]
fn in_a_pipe_match_prints_only_the_summary_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = good_shard(dir.path());
    let out = dir.path().join("out");
    let result = neardup(&[
        "match",
        "--queries",
        &good,
        "--corpus",
        &good,
        "--out",
        out.to_str().unwrap(),
        "--parts",
        "2",
    ]);
    assert!(result.status.success());
    assert!(
        result.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(
        stdout.contains("0 pairs in 2 part(s)"),
        "the same ids are not pairs: {stdout}"
    );
    for name in [
        "part-00000.parquet",
        "part-00001.parquet",
        "_summary.json",
        "_SUCCESS",
    ] {
        assert!(out.join(name).exists(), "{name}");
    }
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("_summary.json")).unwrap()).unwrap();
    assert_eq!(summary["k"], 3);
    assert_eq!(summary["rows_scanned"], 20);
    // Without --workers, every core the process may use.
    let cores = std::thread::available_parallelism().unwrap().get();
    assert!(
        stdout.contains(&format!(", {cores} worker(s))")),
        "{stdout}"
    );
    assert_eq!(summary["design"]["tables"].as_array().unwrap().len(), 4);
}

/// Runs `args` on a terminal (a pseudo-terminal made by util-linux's
/// `script`), or `None` where there is no `script`. Its stdout is what the
/// terminal showed, stdout and stderr together.
fn on_a_terminal(args: &[&str]) -> Option<Output> {
    let script = ["/usr/bin/script", "/bin/script"]
        .into_iter()
        .find(|p| Path::new(p).exists())?;
    let line: Vec<String> = std::iter::once(env!("CARGO_BIN_EXE_neardup"))
        .chain(args.iter().copied())
        .map(|a| format!("'{a}'"))
        .collect();
    let output = Command::new(script)
        .args(["-q", "-e", "-c", &line.join(" "), "/dev/null"])
        .env("TERM", "xterm")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    Some(output)
}

#[test]
fn long_stages_draw_a_progress_bar_on_a_terminal_and_none_in_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name).display().to_string();
    let (out, self_rate) = (d("gen"), "0.2");
    run_ok(&[
        "gen",
        "--out",
        &out,
        "--queries",
        "20000",
        "--corpus",
        "200000",
        "--self-rate",
        self_rate,
    ]);
    let matching = [
        "match",
        "--queries",
        &d("gen/queries"),
        "--corpus",
        &d("gen/corpus"),
        "--self",
        "--out",
        &d("pairs"),
        "--overwrite",
    ];
    let clustering = [
        "cluster",
        "--pairs",
        &d("pairs"),
        "--out",
        &d("clusters"),
        "--overwrite",
    ];
    // In a pipe: the summary line alone, nothing on stderr.
    for args in [&matching[..], &clustering[..]] {
        let result = neardup(args);
        assert!(result.status.success(), "{args:?}");
        assert!(
            result.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&result.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&result.stdout).lines().count(), 1);
    }
    // On a terminal: the bar, then the same line. `cluster`'s names the
    // step its workers have reached when it is first drawn, which on a
    // loaded machine may be past the reading.
    let cluster_steps = [
        "pairs  reading pairs",
        "pairs  reading the pages' keys",
        "pairs  splitting components",
        "pairs  joining components",
        "pairs  choosing drops",
    ];
    for (args, bars) in [
        (&matching[..], &["row groups"][..]),
        (&clustering[..], &cluster_steps[..]),
    ] {
        let Some(result) = on_a_terminal(args) else {
            eprintln!("skipped: no `script` (util-linux) to make a terminal");
            return;
        };
        let shown = String::from_utf8_lossy(&result.stdout);
        assert!(result.status.success(), "{args:?}: {shown}");
        assert!(
            bars.iter().any(|bar| shown.contains(bar)),
            "{args:?}: no progress bar in {shown:?}"
        );
        let summary = if args[0] == "match" {
            "matched "
        } else {
            "clustered "
        };
        assert!(shown.contains(summary), "{shown:?}");
    }
}

/// `neardup plan | head`: a reader that closes the pipe early ends the
/// output quietly, not with a panic.
#[test]
fn plan_into_a_closed_pipe_exits_quietly() {
    let mut plan = Command::new(env!("CARGO_BIN_EXE_neardup"));
    plan.args(["plan", "--num-queries", "1000000", "-k", "3"]);
    succeeds_into_a_closed_pipe(&mut plan);
}

/// Runs `command` with its stdout a pipe whose reader has gone, and checks
/// that it succeeds without a panic or an error.
pub(crate) fn succeeds_into_a_closed_pipe(command: &mut Command) {
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let result = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("error"),
        "{stderr}"
    );
}

#[test]
fn a_job_whose_summary_meets_a_closed_pipe_still_succeeds() {
    // The summary line is printed after the output is committed: a reader
    // gone by then (a pipe into `head` that ended) must neither panic the
    // job nor make its exit status a failure.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let r = neardup(&[
        "gen",
        "--out",
        data.to_str().unwrap(),
        "--queries",
        "500",
        "--corpus",
        "5000",
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let out = dir.path().join("m");
    succeeds_into_a_closed_pipe(
        Command::new(env!("CARGO_BIN_EXE_neardup"))
            .args(["match", "--queries"])
            .arg(data.join("queries"))
            .arg("--corpus")
            .arg(data.join("corpus"))
            .arg("--out")
            .arg(&out),
    );
    assert!(out.join("_SUCCESS").exists());
}

#[test]
fn plan_prints_the_design_and_its_alternatives() {
    // Forced portable, 16M queries: the paper's 10 tables of filter words,
    // the alternatives each with their estimated probe time.
    let portable = run_ok(&[
        "plan",
        "--num-queries",
        "16000000",
        "-k",
        "3",
        "--kernel",
        "portable",
    ]);
    assert!(
        portable.contains("m=5 blocks [13,13,13,13,12], 10 tables, key 25-26 bits"),
        "{portable}"
    );
    assert!(
        portable.contains("kernel: filter words (--kernel portable: chosen by --kernel)"),
        "{portable}"
    );
    assert!(
        portable.contains("expected candidates per probe: 0."),
        "{portable}"
    );
    let alternative = |plan: &str, m: &str| {
        plan.lines()
            .find(|l| l.trim_start().starts_with(m))
            .unwrap_or_else(|| panic!("no {m} line in {plan}"))
            .to_string()
    };
    let four = alternative(&portable, "m=4 ");
    assert!(
        four.contains("ns/row") && four.ends_with("slower"),
        "{four}"
    );
    // A wide kernel keeps 4 tables of 244 candidates a probe: checked a
    // vector at a time, they cost less than 6 more tables.
    let (best, why) = Kernel::best();
    if best == Kernel::Portable {
        eprintln!("skipped the wide kernel's plan: {why}");
    } else {
        let wide = run_ok(&["plan", "--num-queries", "16000000", "-k", "3"]);
        assert!(
            wide.contains("m=4 blocks [16,16,16,16], 4 tables"),
            "{wide}"
        );
        assert!(wide.contains("kernel: wide buckets"), "{wide}");
        assert!(alternative(&wide, "m=5 ").ends_with("slower"), "{wide}");
    }
    let bad = neardup(&["plan", "--num-queries", "10", "-k", "12"]);
    assert!(!bad.status.success());
}

#[test]
fn gen_is_deterministic_and_its_planted_pairs_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    for out in [&a, &b] {
        let r = neardup(&[
            "gen",
            "--out",
            out.to_str().unwrap(),
            "--queries",
            "2000",
            "--corpus",
            "20000",
            "--shards",
            "3",
            "--seed",
            "5",
        ]);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    }
    for f in [
        "queries/part-00000.parquet",
        "corpus/part-00002.parquet",
        "planted.parquet",
    ] {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f}"
        );
    }
    let out = dir.path().join("m");
    let r = neardup(&[
        "match",
        "--queries",
        a.join("queries").to_str().unwrap(),
        "--corpus",
        a.join("corpus").to_str().unwrap(),
        "--self",
        "-k",
        "5",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(r.status.success());
    let found = read_pairs(&out);
    let planted_dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        a.join("planted.parquet"),
        planted_dir.path().join("part-00000.parquet"),
    )
    .unwrap();
    let planted = read_pairs(planted_dir.path());
    assert!(planted.len() > 100);
    assert!(planted
        .iter()
        .all(|p| (p.query_simhash ^ p.corpus_simhash).count_ones() == p.distance as u32));
    let missing: Vec<_> = planted
        .iter()
        .filter(|p| found.binary_search(p).is_err())
        .collect();
    assert!(
        missing.is_empty(),
        "planted pairs not found: {:?}",
        &missing[..missing.len().min(5)]
    );
}

/// A 16 KiB disk for `neardup` runs: a directory that each run sees as a
/// tmpfs of its own, mounted in a user and mount namespace (`unshare`), so
/// that no root is needed and nothing outlives the run.
struct SmallDisk {
    dir: std::path::PathBuf,
    /// Where a run lists what it left on the disk (outside the disk).
    listing: std::path::PathBuf,
}

/// What a run on a [`SmallDisk`] gave: its output, and the names it left
/// on the disk.
struct DiskRun {
    output: Output,
    left: Vec<String>,
}

/// Exit status of the namespace's shell when it cannot mount the tmpfs.
const CANNOT_MOUNT: i32 = 97;

impl SmallDisk {
    /// The disk at `dir/disk`, or None with the reason printed where this
    /// machine gives no user namespaces (the test is then skipped).
    fn new(dir: &Path) -> Option<SmallDisk> {
        let disk = SmallDisk {
            dir: dir.join("disk"),
            listing: dir.join("left-on-disk.txt"),
        };
        std::fs::create_dir_all(&disk.dir).unwrap();
        let probe = disk.run_command("true", &[]);
        if probe.output.status.code() == Some(CANNOT_MOUNT) || !probe.output.status.success() {
            eprintln!(
                "skipped: cannot mount a tmpfs in a user namespace here (`unshare --user --map-root-user --mount`): {}",
                String::from_utf8_lossy(&probe.output.stderr).trim()
            );
            return None;
        }
        Some(disk)
    }

    /// Runs `neardup args` with the disk mounted.
    fn run(&self, args: &[&str]) -> DiskRun {
        self.run_command(env!("CARGO_BIN_EXE_neardup"), args)
    }

    /// Runs `neardup args` on the disk once a file `filler` has filled it.
    fn run_when_full(&self, args: &[&str]) -> DiskRun {
        let fill_then_run = "cat /dev/zero > \"$0/filler\" 2>/dev/null; exec \"$@\"";
        let disk = self.dir.to_str().unwrap();
        let neardup = env!("CARGO_BIN_EXE_neardup");
        let args = [&["-c", fill_then_run, disk, neardup][..], args].concat();
        self.run_command("sh", &args)
    }

    fn run_command(&self, program: &str, args: &[&str]) -> DiskRun {
        // $1 the disk, $2 the listing, then the command; the command's
        // exit status is the shell's.
        let script = format!(
            "mount -t tmpfs -o size=16k tmpfs \"$1\" || exit {CANNOT_MOUNT}
             disk=$1; listing=$2; shift 2
             \"$@\"; status=$?
             ls -A \"$disk\" > \"$listing\"
             exit $status"
        );
        let output = Command::new("unshare")
            .args([
                "--user",
                "--map-root-user",
                "--mount",
                "sh",
                "-c",
                &script,
                "sh",
            ])
            .arg(&self.dir)
            .arg(&self.listing)
            .arg(program)
            .args(args)
            .output()
            .expect("unshare (util-linux) runs");
        let left = std::fs::read_to_string(&self.listing)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect();
        DiskRun { output, left }
    }
}

/// `args` as the `&str`s [`neardup`] takes.
fn strs<const N: usize>(args: &[String; N]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// A run that filled the disk: exit 1, one error line naming `file` and the
/// OS error once, and nothing left on the disk.
fn assert_failed_cleanly(failed: &DiskRun, file: &str) {
    let stderr = String::from_utf8_lossy(&failed.output.stderr);
    assert_eq!(failed.output.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains(&format!("{file}: cannot write: No space left on device")),
        "{stderr}"
    );
    assert_eq!(lines[0].matches("No space left").count(), 1, "{stderr}");
    assert!(
        failed.left.is_empty(),
        "a failed run leaves nothing: {:?}",
        failed.left
    );
}

#[test]
fn a_full_disk_gets_one_line_naming_the_file_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let Some(disk) = SmallDisk::new(dir.path()) else {
        return;
    };
    // A WARC of 900 real pages: its shard is larger than the disk.
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples/crawl/pages.warc.gz");
    let input = dir.path().join("input");
    std::fs::create_dir_all(&input).unwrap();
    let warc = std::fs::read(sample).unwrap();
    std::fs::write(input.join("pages.warc.gz"), warc.repeat(6)).unwrap();
    let args = |out: &Path| {
        let input = input.to_str().unwrap().to_string();
        [
            "fingerprint",
            "--input",
            &input,
            "--out",
            out.to_str().unwrap(),
        ]
        .map(str::to_string)
    };
    assert_failed_cleanly(
        &disk.run(&strs(&args(&disk.dir.join("fp")))),
        "part-00000.parquet",
    );
    // The same run on a disk with room completes.
    let roomy = dir.path().join("fp");
    assert!(neardup(&strs(&args(&roomy))).status.success());
    assert!(roomy.join("_SUCCESS").exists());
}

#[test]
fn match_and_cluster_on_a_full_disk_fail_cleanly_and_complete_with_room() {
    let dir = tempfile::tempdir().unwrap();
    let Some(disk) = SmallDisk::new(dir.path()) else {
        return;
    };
    // 20,000 queries, a fifth of 100,000 corpus rows planted near them: the
    // pairs, and the clusters of their pages, are larger than the disk.
    let data = dir.path().join("data");
    let generated = neardup(&[
        "gen",
        "--out",
        data.to_str().unwrap(),
        "--queries",
        "20000",
        "--corpus",
        "100000",
        "--plant-rate",
        "0.2",
    ]);
    assert!(generated.status.success());
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let (queries, corpus) = (path(&data.join("queries")), path(&data.join("corpus")));
    let matching = |out: &Path| {
        let out = path(out);
        [
            "match",
            "--queries",
            &queries,
            "--corpus",
            &corpus,
            "--out",
            &out,
        ]
        .map(str::to_string)
    };
    let full = matching(&disk.dir.join("pairs"));
    assert_failed_cleanly(&disk.run(&strs(&full)), "part-00000.parquet");
    let pairs = dir.path().join("pairs");
    assert!(neardup(&strs(&matching(&pairs))).status.success());
    let clustering = |out: &Path| {
        let out = path(out);
        ["cluster", "--pairs", &path(&pairs), "--out", &out].map(str::to_string)
    };
    let full = clustering(&disk.dir.join("clusters"));
    assert_failed_cleanly(&disk.run(&strs(&full)), "part-00000.parquet");
    let clusters = dir.path().join("clusters");
    assert!(neardup(&strs(&clustering(&clusters))).status.success());
    assert!(clusters.join("_SUCCESS").exists());
}

/// A lock that cannot be written is removed, not left empty beside the
/// output it names.
#[test]
fn a_lock_on_a_full_disk_is_not_left_behind() {
    let dir = tempfile::tempdir().unwrap();
    let Some(disk) = SmallDisk::new(dir.path()) else {
        return;
    };
    let queries = Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples/fingerprints/queries");
    let out = disk.dir.join("pairs");
    let args = [
        "match",
        "--queries",
        queries.to_str().unwrap(),
        "--self",
        "--out",
        out.to_str().unwrap(),
    ];
    let failed = disk.run_when_full(&args);
    let stderr = String::from_utf8_lossy(&failed.output.stderr);
    assert_eq!(failed.output.status.code(), Some(1), "{stderr}");
    let line = format!(
        "{}: cannot take the lock for writing this output: {}: cannot write: No space left on device",
        out.display(),
        disk.dir.join(".pairs.neardup-lock").display()
    );
    assert!(stderr.contains(&line), "{stderr}");
    assert_eq!(failed.left, ["filler"], "nothing but the filler");
}

/// `--verify` on shards without a sketch is one clear line naming the file.
#[test]
fn verify_refuses_shards_without_a_sketch_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64::new(5);
    let rows = random_rows(&mut rng, 50, 0);
    let plain = write_shards(&dir.path().join("plain"), &rows, 1);
    let out = dir.path().join("out");
    let args = [
        "match",
        "--queries",
        &plain[0],
        "--self",
        "--verify",
        "--out",
    ];
    let result = neardup(&[&args[..], &[out.to_str().unwrap()]].concat());
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(!result.status.success());
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&plain[0]) && stderr.contains("no column `sketch`"),
        "{stderr}"
    );
    assert!(!out.join("_SUCCESS").exists());
    let threshold_alone = neardup(&[
        "match",
        "--queries",
        &plain[0],
        "--self",
        "--verify-threshold",
        "9",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&threshold_alone.stderr);
    assert!(!threshold_alone.status.success());
    assert_eq!(
        stderr.trim_end(),
        "error: --verify-threshold needs --verify",
        "{stderr}"
    );
}

/// An output that is an input, holds one, or lies in an input directory (or
/// one a glob reaches into) is refused on one line, `--overwrite` or not,
/// and the input is left as it was; a sibling with a longer name, or a
/// directory beside a glob's files, is not.
#[test]
fn an_output_over_an_input_is_refused_even_with_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let shard = d.join("top/fp/part-0.parquet");
    write_shard(&shard, &random_rows(&mut SplitMix64::new(3), 50, 0));
    let bytes = std::fs::read(&shard).unwrap();
    std::fs::create_dir_all(d.join("nights/a")).unwrap();
    std::fs::write(
        d.join("top/crawl.jsonl"),
        "{\"url\":\"u\",\"text\":\"t\"}\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(d.join("top/fp"), d.join("link")).unwrap();
    let p = |rel: &str| d.join(rel).display().to_string();
    let pairs = p("top/pairs");
    let glob = p("top/fp/*.parquet");
    run_ok(&["match", "--queries", &glob, "--self", "--out", &pairs]);
    let cases: Vec<Vec<String>> = vec![
        vec![
            "match".into(),
            "--queries".into(),
            p("top/fp"),
            "--out".into(),
            p("top/fp"),
        ],
        vec![
            "match".into(),
            "--queries".into(),
            p("top/fp"),
            "--out".into(),
            p("top"),
        ],
        vec![
            "match".into(),
            "--queries".into(),
            p("top/fp"),
            "--out".into(),
            p("top/fp/pairs"),
        ],
        vec![
            "match".into(),
            "--queries".into(),
            p("top/fp/part-0.parquet"),
            "--out".into(),
            p("top/./x/../fp/"),
        ],
        vec![
            "match".into(),
            "--queries".into(),
            p("top/fp"),
            "--out".into(),
            p("link"),
        ],
        vec![
            "match".into(),
            "--queries".into(),
            p("top/*/part-*.parquet"),
            "--out".into(),
            p("top/fp"),
        ],
        vec![
            "match".into(),
            "--queries".into(),
            p("top/fp"),
            "--corpus".into(),
            p("nights/*/fp"),
            "--out".into(),
            p("nights/b"),
        ],
        vec![
            "cluster".into(),
            "--pairs".into(),
            pairs.clone(),
            "--out".into(),
            p("top"),
        ],
        vec![
            "fingerprint".into(),
            "--input".into(),
            p("top/crawl.jsonl"),
            "--out".into(),
            p("top"),
        ],
    ];
    for case in &cases {
        let mut args: Vec<&str> = case.iter().map(String::as_str).collect();
        args.push("--overwrite");
        if args[0] == "match" {
            args.push("--self");
        }
        let result = neardup(&args);
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert_eq!(result.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains("overlaps the input"), "{args:?}: {stderr}");
        assert_eq!(std::fs::read(&shard).unwrap(), bytes, "{args:?}");
        assert!(d.join("top/crawl.jsonl").exists(), "{args:?}");
        assert!(!d.join("top/fp/_SUCCESS").exists() && !d.join("top/_SUCCESS").exists());
    }
    assert!(d.join("top/pairs/_SUCCESS").exists());
    let sibling = p("top/fp2");
    run_ok(&[
        "match",
        "--queries",
        &p("top/fp"),
        "--self",
        "--out",
        &sibling,
    ]);
}

/// A glob reads as Spark reads one: a matched directory as a directory
/// input, and what a wildcard reaches through a name that starts with `_`
/// or `.` skipped: a killed run's staging directory beside an output. A
/// file named twice is read once.
#[test]
fn a_glob_reads_the_directories_it_matches_and_skips_hidden_names() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut rng = SplitMix64::new(9);
    for night in ["a", "b"] {
        let fp = d.join(format!("nights/{night}/fp"));
        write_shard(&fp.join("part-0.parquet"), &random_rows(&mut rng, 40, 0));
        std::fs::write(fp.join("_SUCCESS"), "").unwrap();
        std::fs::write(fp.join("_summary.json"), "{}").unwrap();
        std::fs::write(fp.join(".part-1.parquet.tmp"), "partial").unwrap();
        let staging = d.join(format!("nights/{night}/.fp.neardup-staging"));
        write_shard(
            &staging.join("part-0.parquet"),
            &random_rows(&mut rng, 40, 0),
        );
    }
    let killed = d.join("nights/.c.neardup-staging/fp/part-0.parquet");
    write_shard(&killed, &random_rows(&mut rng, 40, 0));
    let p = |rel: &str| d.join(rel).display().to_string();
    let pairs_of = |queries: &[String], out: &str| {
        let mut args = vec!["match", "--self", "-k", "10", "--out", out];
        for q in queries {
            args.extend(["--queries", q.as_str()]);
        }
        run_ok(&args);
        part_bytes(Path::new(out))
    };
    let listed = pairs_of(&[p("nights/a/fp"), p("nights/b/fp")], &p("listed"));
    assert_eq!(pairs_of(&[p("nights/*/fp")], &p("by-dirs")), listed);
    let files = [p("nights/a/fp/*"), p("nights/b/fp/*")];
    assert_eq!(pairs_of(&files, &p("by-files")), listed);
    let deep = [p("nights/*/*/*.parquet")];
    assert_eq!(pairs_of(&deep, &p("by-deep-files")), listed);
    // A file named twice (a directory and a glob into it) is read once.
    let twice = [p("nights/a/fp"), p("nights/b/fp"), p("nights/a/fp/*")];
    assert_eq!(pairs_of(&twice, &p("twice")), listed);
    let rows = |out: &str| {
        let summary = std::fs::read(Path::new(out).join("_summary.json")).unwrap();
        let summary: serde_json::Value = serde_json::from_slice(&summary).unwrap();
        summary["rows_scanned"].as_u64().unwrap()
    };
    assert_eq!(rows(&p("twice")), 80);
    assert_eq!(rows(&p("twice")), rows(&p("listed")));
}

/// `gen` refuses a rate outside 0..=1 (or not a number), a distance
/// beyond 64 bits and sizes beyond what it makes in memory in one line
/// naming the flag and its value, and writes nothing.
#[test]
fn gen_refuses_rates_and_distances_out_of_range_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    for (flag, value) in [
        ("--plant-rate", "2"),
        ("--plant-rate", "NaN"),
        ("--self-rate", "1.5"),
        ("--self-rate", "inf"),
        ("--max-distance", "65"),
    ] {
        let args = [
            "gen",
            "--out",
            out.to_str().unwrap(),
            "--queries",
            "10",
            "--corpus",
            "10",
            flag,
            value,
        ];
        let result = neardup(&args);
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert_eq!(result.status.code(), Some(1), "{flag} {value}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        let named = format!("error: {flag} {value} is out of range");
        assert!(stderr.starts_with(&named), "{stderr}");
        assert!(!out.exists(), "{flag} {value}");
    }
    // Sizes it could not hold (a panic, and the run's lock left behind),
    // and row groups of no rows.
    let huge = u64::MAX.to_string();
    for (sizes, named) in [
        (
            vec!["--queries", &huge, "--corpus", "10"],
            format!("--queries {huge} is out of range"),
        ),
        (
            vec!["--queries", "10", "--corpus", &huge],
            format!("--corpus {huge} over --shards 1 is out of range"),
        ),
        (
            vec!["--queries", "10", "--corpus", "8589934592"],
            "makes shards of more than 4294967296 rows".to_string(),
        ),
        (
            vec!["--queries", "10", "--corpus", "10", "--row-group-rows", "0"],
            "--row-group-rows must be at least 1".to_string(),
        ),
    ] {
        let args = [&["gen", "--out", out.to_str().unwrap()][..], &sizes].concat();
        let result = neardup(&args);
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert_eq!(result.status.code(), Some(1), "{sizes:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(&named), "{stderr}");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "{sizes:?} left {left:?}");
    }
}

/// A flag the parser refuses is one line and exit code 1, as any other
/// bad input; help still prints whole and exits 0.
#[test]
fn flags_the_parser_refuses_get_one_line_and_exit_code_1() {
    let dir = tempfile::tempdir().unwrap();
    let good = good_shard(dir.path());
    for (args, needle) in [
        (
            vec!["match", "--queries", &good, "--self", "-k", "-1"],
            "'-1'",
        ),
        (
            vec![
                "match",
                "--queries",
                &good,
                "--self",
                "--blocks",
                "99999999999",
            ],
            "'99999999999'",
        ),
        (
            vec!["match", "--queries", &good, "--self", "--threshold", "4"],
            "'--threshold'",
        ),
        (
            vec!["clusters"],
            "'clusters'; tip: a similar subcommand exists: 'cluster'",
        ),
        // What is missing, the near spelling and the values taken are said
        // on the one line.
        (
            vec!["match", "--out", "x"],
            "not provided: --queries <QUERIES>",
        ),
        (
            vec!["match", "--queries", &good, "--self", "--overwirte"],
            "found; tip: a similar argument exists: '--overwrite'",
        ),
        (
            vec![
                "cluster",
                "--pairs",
                &good,
                "--out",
                "o",
                "--drop-policy",
                "all",
            ],
            "[possible values: direct, component]",
        ),
    ] {
        let out = neardup(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("error: ") && stderr.contains(needle),
            "{stderr}"
        );
        assert!(stderr.trim_end().ends_with("(see --help)"), "{stderr}");
    }
    let help = neardup(&["match", "--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).lines().count() > 10);
    // No command at all: the help, on stderr, as a flag error.
    let bare = neardup(&[]);
    assert_eq!(bare.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bare.stderr).contains("Commands:"));
}

/// A stderr that cannot be written (a full disk; a reader gone, as
/// `2>&1 | head -1` leaves it) loses the logs, not the run: no panic, the
/// output committed, and an error still exits 1.
#[test]
fn an_unwritable_stderr_loses_the_logs_not_the_run() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("skipped: no /dev/full on this system");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let good = good_shard(dir.path());
    let out = dir.path().join("out");
    let status = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(["match", "--queries", &good, "--self", "--out"])
        .arg(&out)
        .env("RUST_LOG", "info")
        .stderr(full.try_clone().unwrap())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(out.join("_SUCCESS").exists());
    let failed = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(["match", "--queries", "nowhere.parquet", "--self", "--out"])
        .arg(dir.path().join("out2"))
        .stderr(full)
        .status()
        .unwrap();
    assert_eq!(failed.code(), Some(1));
}

/// Whether `line` sets a colour or a style (`ESC [ n m`), not only moves
/// the cursor or clears.
fn has_colour(line: &str) -> bool {
    line.split('\u{1b}').skip(1).any(|after| {
        let code = after.strip_prefix('[').unwrap_or("");
        let end = code.find(|c: char| !c.is_ascii_digit() && c != ';');
        end.is_some_and(|at| code[at..].starts_with('m'))
    })
}

/// `text` without the cursor moves it ends in (`ESC [ n A`, `ESC [ n B`,
/// carriage returns).
fn without_cursor_moves(mut text: &str) -> &str {
    loop {
        let trimmed = text.trim_end_matches('\r');
        let moved = trimmed
            .strip_suffix(['A', 'B'])
            .map(|rest| rest.trim_end_matches(|c: char| c.is_ascii_digit()))
            .and_then(|rest| rest.strip_suffix("\u{1b}["));
        match moved {
            Some(rest) => text = rest,
            None => return trimmed,
        }
    }
}

/// On a terminal, a log line written while a progress bar is drawn clears
/// the bar first: no line starts after the bar's text, and no frame of it
/// is left above the logs. Run under `script`, the terminal a user has.
#[test]
fn log_lines_on_a_terminal_clear_the_progress_bar_first() {
    let has_script = Command::new("script").arg("--version").output();
    if !has_script.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: no `script` (util-linux) to give the run a terminal");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let good = good_shard(dir.path());
    let pairs = dir.path().join("pairs");
    run_ok(&[
        "match",
        "--queries",
        &good,
        "--self",
        "-k",
        "10",
        "--out",
        pairs.to_str().unwrap(),
    ]);
    let command = format!(
        "RUST_LOG=info '{}' cluster --pairs '{}' --out '{}' --max-cluster-size 2",
        env!("CARGO_BIN_EXE_neardup"),
        pairs.display(),
        dir.path().join("clusters").display()
    );
    let screen = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .unwrap();
    assert!(screen.status.success(), "{screen:?}");
    let bytes = String::from_utf8_lossy(&screen.stdout);
    let dim = "\u{1b}[2m";
    let lines: Vec<usize> = bytes.match_indices(" INFO").map(|(at, _)| at).collect();
    assert!(!lines.is_empty(), "{bytes:?}");
    for at in lines {
        // The line's start: its timestamp (27 bytes), dimmed on a terminal.
        let start = bytes[..at].rfind(dim).unwrap_or(at);
        // A bar of several lines is cleared line by line, the cursor then
        // moved back up to the first: moves after the last clear are fine.
        let before = without_cursor_moves(&bytes[..start]);
        assert!(
            before.is_empty() || before.ends_with('\n') || before.ends_with("\u{1b}[2K"),
            "a log line after the bar's text: {:?}",
            &before[before.len().saturating_sub(60)..]
        );
    }
    // A frame of the bar (its elapsed time), whatever step it showed: the
    // step's name depends on when the bar's ticker ran.
    assert!(bytes.contains("[00:00:"), "a bar was drawn: {bytes:?}");
    // A terminal that takes no escapes gets the logs plain, and no bar.
    for setting in ["TERM=dumb", "CLICOLOR=0"] {
        let plain = Command::new("script")
            .args([
                "-qec",
                &format!("{setting} {}", command.replace("clusters", setting)),
                "/dev/null",
            ])
            .output()
            .unwrap();
        let bytes = String::from_utf8_lossy(&plain.stdout);
        assert!(plain.status.success(), "{setting}: {bytes}");
        assert!(bytes.contains(" INFO"), "{setting}: {bytes:?}");
        let coloured = bytes
            .lines()
            .filter(|line| line.contains(" INFO") && has_colour(line));
        assert_eq!(coloured.count(), 0, "{setting}: {bytes:?}");
    }
}

/// A stage output with its summary but no _SUCCESS did not finish (or is
/// being written again): read as an input, it would give a part of the
/// pairs as if they were all. It is refused, naming it; pairs written by
/// another tool (no summary) are read, and so is the output once done.
#[test]
fn an_unfinished_output_is_refused_as_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let good = good_shard(dir.path());
    let pairs = dir.path().join("pairs");
    let pairs_arg = pairs.to_str().unwrap();
    let matched = neardup(&["match", "--queries", &good, "--self", "--out", pairs_arg]);
    assert!(matched.status.success());
    let cluster = |out: &str| {
        let out = dir.path().join(out);
        neardup(&[
            "cluster",
            "--pairs",
            pairs_arg,
            "--out",
            out.to_str().unwrap(),
        ])
    };
    assert!(cluster("done").status.success());
    std::fs::remove_file(pairs.join("_SUCCESS")).unwrap();
    // Named as a directory, by a glob of directories or of files, or a file.
    for input in [
        pairs_arg.to_string(),
        format!("{}/*", dir.path().display()),
        format!("{pairs_arg}/*.parquet"),
        format!("{pairs_arg}/part-00000.parquet"),
    ] {
        let out = dir.path().join("partial");
        let refused = neardup(&["cluster", "--pairs", &input, "--out", out.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        let said = format!("{pairs_arg}: a neardup output without _SUCCESS");
        assert!(stderr.contains(&said), "{stderr}");
        assert!(!out.exists());
    }
    std::fs::remove_file(pairs.join("_summary.json")).unwrap();
    assert!(
        cluster("elsewhere").status.success(),
        "pairs of another tool"
    );
    // A corpus batch of a job's append stage has no summary but its list
    // of sources: without _SUCCESS, it is as unfinished.
    std::fs::write(pairs.join("_sources.json"), "[]").unwrap();
    let refused = cluster("partial");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{pairs_arg}: a neardup output without _SUCCESS")),
        "{stderr}"
    );
}
