//! `neardup run JOB.toml`: the sample job end to end, resuming, the next
//! night, cluster runs through scripts/cluster-local.sh, and bad specs.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A scratch copy of the repo's layout: `jobs/sample.toml` and a link to
/// `data-samples/`, so the job's relative paths work and its outputs land here.
fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("jobs")).unwrap();
    std::fs::copy(
        repo().join("jobs/sample.toml"),
        dir.path().join("jobs/sample.toml"),
    )
    .unwrap();
    std::os::unix::fs::symlink(repo().join("data-samples"), dir.path().join("data-samples"))
        .unwrap();
    dir
}

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neardup"))
        .current_dir(dir)
        .arg("run")
        .args(args)
        .output()
        .unwrap()
}

/// Each stage's verb from a run's stdout: `fingerprint: skipped, ...` -> ("fingerprint", "skipped").
fn stages(output: &Output) -> Vec<(String, String)> {
    assert!(
        output.status.success(),
        "run failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| {
            let (stage, rest) = l.split_once(": ").unwrap();
            let verb = rest.split([' ', ',']).next().unwrap();
            (stage.to_string(), verb.to_string())
        })
        .collect()
}

fn verbs(output: &Output) -> Vec<String> {
    stages(output).into_iter().map(|(_, v)| v).collect()
}

const NIGHT: &str = "2026-11-22";

#[test]
fn sample_job_runs_skips_resumes_and_feeds_the_next_night() {
    let dir = scratch();
    let d = dir.path();
    let night = d.join("sample-output").join(NIGHT);
    let first = run(d, &["jobs/sample.toml", "--date", NIGHT]);
    assert_eq!(
        stages(&first),
        [
            ("fingerprint", "fingerprinted"),
            ("match", "matched"),
            ("cluster", "clustered"),
            ("append", "appended")
        ]
        .map(|(s, v)| (s.to_string(), v.to_string()))
    );
    // The match stage is `match --self` of B against the corpus shard.
    let direct = d.join("direct");
    let status = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(["match", "--self", "--workers", "2", "--queries"])
        .arg(night.join("fingerprints"))
        .arg("--corpus")
        .arg(repo().join("data-samples/crawl-fingerprints/part-00000.parquet"))
        .arg("--out")
        .arg(&direct)
        .output()
        .unwrap();
    assert!(status.status.success());
    let pairs = read_pairs(&night.join("pairs"));
    assert!(!pairs.is_empty());
    assert_eq!(pairs, read_pairs(&direct));
    let batch = d.join("sample-output/corpus").join(NIGHT);
    assert_eq!(
        std::fs::read(batch.join("part-00000.parquet")).unwrap(),
        std::fs::read(night.join("fingerprints/part-00000.parquet")).unwrap()
    );

    // Run again: everything is complete.
    let again = run(d, &["jobs/sample.toml", "--date", NIGHT]);
    assert_eq!(verbs(&again), ["skipped", "skipped", "skipped", "skipped"]);

    // A night that failed after fingerprinting resumes at match.
    std::fs::remove_file(night.join("pairs/_SUCCESS")).unwrap();
    let resumed = run(d, &["jobs/sample.toml", "--date", NIGHT]);
    assert_eq!(
        verbs(&resumed),
        ["skipped", "matched", "clustered", "appended"]
    );
    // Tonight's own batch is not part of tonight's corpus.
    assert_eq!(read_pairs(&night.join("pairs")), pairs);

    let forced = run(d, &["jobs/sample.toml", "--date", NIGHT, "--force"]);
    assert_eq!(
        verbs(&forced),
        ["fingerprinted", "matched", "clustered", "appended"]
    );

    // The next night sees this night's batch in its corpus.
    let next = run(d, &["jobs/sample.toml", "--date", "2026-11-23"]);
    assert_eq!(
        verbs(&next),
        ["fingerprinted", "matched", "clustered", "appended"]
    );
    let summary: serde_json::Value = serde_json::from_slice(
        &std::fs::read(d.join("sample-output/2026-11-23/pairs/_summary.json")).unwrap(),
    )
    .unwrap();
    let corpus_files: Vec<String> = summary["corpus"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    assert!(
        corpus_files
            .iter()
            .any(|f| f.contains(&format!("corpus/{NIGHT}/"))),
        "{corpus_files:?}"
    );
    assert!(!corpus_files
        .iter()
        .any(|f| f.contains("corpus/2026-11-23/")));
    // Yesterday's copies of tonight's pages have the same ids, so they are no
    // pairs; yesterday's near-copies are.
    let next_pairs = read_pairs(&d.join("sample-output/2026-11-23/pairs"));
    assert!(next_pairs.len() > pairs.len());
    assert!(next_pairs.iter().all(|p| p.query_id != p.corpus_id));
}

/// The data files (not summaries) of a night's outputs, by relative path.
fn night_files(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    for stage in [
        format!("{NIGHT}/fingerprints"),
        format!("{NIGHT}/pairs"),
        format!("{NIGHT}/clusters/clusters"),
        format!("{NIGHT}/clusters/drop"),
        format!("corpus/{NIGHT}"),
    ] {
        let dir = root.join("sample-output").join(&stage);
        let done = if stage.contains("clusters/") {
            dir.parent().unwrap().join("_SUCCESS")
        } else {
            dir.join("_SUCCESS")
        };
        assert!(done.exists(), "{stage}");
        for part in part_files(&dir) {
            let name = format!("{stage}/{}", part.file_name().unwrap().to_string_lossy());
            files.push((name, std::fs::read(&part).unwrap()));
        }
    }
    files
}

#[test]
fn a_job_on_two_and_three_local_processes_writes_the_bytes_of_one() {
    let one = scratch();
    let output = run(one.path(), &["jobs/sample.toml", "--date", NIGHT]);
    assert_eq!(
        verbs(&output),
        ["fingerprinted", "matched", "clustered", "appended"]
    );
    let expected = night_files(one.path());
    assert_eq!(expected.len(), 5);
    for n in [2, 3] {
        let dir = scratch();
        let output = Command::new(repo().join("scripts/cluster-local.sh"))
            .current_dir(dir.path())
            .env("NEARDUP", env!("CARGO_BIN_EXE_neardup"))
            .args([
                &n.to_string(),
                "jobs/sample.toml",
                "--date",
                NIGHT,
                "--workers",
                "1",
            ])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        for i in 0..n {
            assert!(
                stdout.contains(&format!("[process {i}] match: matched")),
                "{stdout}"
            );
        }
        assert_eq!(night_files(dir.path()), expected, "{n} processes");
    }
}

fn write_spec(dir: &Path, text: &str) -> String {
    let path = dir.join("jobs/bad.toml");
    std::fs::write(&path, text).unwrap();
    "jobs/bad.toml".to_string()
}

#[test]
fn bad_job_specs_get_one_line() {
    let dir = scratch();
    let d = dir.path();
    let good = std::fs::read_to_string(d.join("jobs/sample.toml")).unwrap();
    let cases = [
        (
            good.replace("self = true", "self = true\nthreshold = 4"),
            "unknown field `threshold`",
        ),
        (
            good.replace("k = 3", "k = \"three\""),
            "key `k`: invalid type",
        ),
        (
            good.replace("text.wet.gz", "missing.wet.gz"),
            "missing.wet.gz: no such file",
        ),
        (
            good.replace("part-00000.parquet", "nope.parquet"),
            "[match] corpus",
        ),
        (good.replace("[append]", "[apend]"), "unknown field `apend`"),
        (
            good.replace("features = \"words\"", "features = \"bigrams\""),
            "bigrams",
        ),
        (
            good.replace("workers = 2", "workers = 0"),
            "--workers must be at least 1",
        ),
    ];
    for (text, needle) in cases {
        let spec = write_spec(d, &text);
        let output = run(d, &[&spec, "--date", NIGHT]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{needle}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{needle}: {stderr}");
        assert!(stderr.contains("jobs/bad.toml"), "{stderr}");
        assert!(stderr.contains(needle), "`{needle}` not in {stderr}");
        assert!(!d.join("sample-output").exists(), "{needle}: a stage ran");
    }
    let output = run(d, &["jobs/sample.toml", "--date", "22/11/2026"]);
    assert!(String::from_utf8_lossy(&output.stderr).contains("--date"));
}
