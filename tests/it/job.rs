//! `neardup run JOB.toml`: the sample job end to end, resuming, the next
//! night, cluster runs through scripts/processes-local.sh, the Slurm and
//! Kubernetes launch examples, and bad specs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;
use neardup::matching::verify::TEXT_THRESHOLD;

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
            ("append", "appended"),
            ("report", "reported")
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
    // The batch is tonight's shards without tonight's drops, its scheme kept.
    let batch = d.join("sample-output/corpus").join(NIGHT);
    let dropped: std::collections::HashSet<i64> = int64_column(&night.join("clusters/drop"), "id")
        .into_iter()
        .collect();
    assert!(!dropped.is_empty());
    let mut kept = int64_column(&night.join("fingerprints"), "id");
    kept.retain(|id| !dropped.contains(id));
    assert_eq!(int64_column(&batch, "id"), kept);
    assert_eq!(
        shard_scheme(&batch.join("part-00000.parquet")),
        shard_scheme(&night.join("fingerprints/part-00000.parquet"))
    );

    // Run again: everything is complete.
    let again = run(d, &["jobs/sample.toml", "--date", NIGHT]);
    assert_eq!(
        verbs(&again),
        ["skipped", "skipped", "skipped", "skipped", "skipped"]
    );

    // A night that failed after fingerprinting resumes at match.
    std::fs::remove_file(night.join("pairs/_SUCCESS")).unwrap();
    let resumed = run(d, &["jobs/sample.toml", "--date", NIGHT]);
    assert_eq!(
        verbs(&resumed),
        ["skipped", "matched", "clustered", "appended", "reported"]
    );
    // Tonight's own batch is not part of tonight's corpus.
    assert_eq!(read_pairs(&night.join("pairs")), pairs);

    let forced = run(d, &["jobs/sample.toml", "--date", NIGHT, "--force"]);
    assert_eq!(
        verbs(&forced),
        [
            "fingerprinted",
            "matched",
            "clustered",
            "appended",
            "reported"
        ]
    );

    // The next night sees this night's batch in its corpus.
    let next = run(d, &["jobs/sample.toml", "--date", "2026-11-23"]);
    assert_eq!(
        verbs(&next),
        [
            "fingerprinted",
            "matched",
            "clustered",
            "appended",
            "reported"
        ]
    );
    let summary: serde_json::Value = serde_json::from_slice(
        &std::fs::read(d.join("sample-output/2026-11-23/pairs/_summary.json")).unwrap(),
    )
    .unwrap();
    // The sample night's pairs fit the default budget: nothing spilled.
    assert_eq!(summary["pairs_spilled"], 0, "{summary}");
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
    // The crawl fetched again: yesterday's batch holds older versions of
    // tonight's pages, which pair with nothing (tonight's rows pair in their
    // place), so the night finds the first night's pairs.
    let first: serde_json::Value =
        serde_json::from_slice(&std::fs::read(night.join("pairs/_summary.json")).unwrap()).unwrap();
    assert!(summary["rows_scanned"].as_u64() > first["rows_scanned"].as_u64());
    let next_pairs = read_pairs(&d.join("sample-output/2026-11-23/pairs"));
    assert_eq!(next_pairs, pairs);
    // The sample crawl fetched again: every page dropped the first night is
    // dropped again for the same page, and no page kept then is dropped (a
    // dropped page in the corpus would rank as a corpus page, and win
    // where its next keys are better).
    let drops_of = |night: &str| -> std::collections::BTreeSet<(i64, i64)> {
        let drops = drop_rows(&d.join("sample-output").join(night).join("clusters/drop"));
        drops.into_iter().map(|(id, keep, ..)| (id, keep)).collect()
    };
    assert_eq!(drops_of("2026-11-23"), drops_of(NIGHT));
    // Every drop names both pages' URLs, those of pages kept from the
    // corpus too (every sample page has one).
    for night in [NIGHT, "2026-11-23"] {
        let night = d.join("sample-output").join(night);
        let tonight: std::collections::HashSet<i64> =
            int64_column(&night.join("fingerprints"), "id")
                .into_iter()
                .collect();
        let drops = drop_rows(&night.join("clusters/drop"));
        let kept_from_corpus = drops.iter().filter(|d| !tonight.contains(&d.1)).count();
        assert!(kept_from_corpus > 0, "{}", night.display());
        for (id, keep, url, keep_url) in &drops {
            assert!(
                url.is_some() && keep_url.is_some(),
                "{id} for {keep}: {url:?}, {keep_url:?}"
            );
        }
    }
}

/// A stage that runs again unmarks every later stage first: a night
/// stopped after it committed, before the next stage was made again from
/// its new output, resumes at that next stage instead of finding the old
/// one complete.
#[test]
fn a_stage_run_again_leaves_no_later_stage_marked_complete() {
    let dir = scratch();
    let d = dir.path();
    let night = d.join("sample-output").join(NIGHT);
    run(d, &["jobs/sample.toml", "--date", NIGHT]);
    let marks = [
        night.join("clusters/_SUCCESS"),
        d.join("sample-output/corpus").join(NIGHT).join("_SUCCESS"),
        night.join("report.html"),
    ];
    assert!(marks.iter().all(|mark| mark.exists()));

    // match runs again and commits; cluster then fails (its pages table's
    // footer reads, its data does not), as a night stopped between the two
    // would.
    std::fs::remove_file(night.join("pairs/_SUCCESS")).unwrap();
    let mut shard = std::fs::read(night.join("fingerprints/part-00000.parquet")).unwrap();
    let half = shard.len() / 2;
    shard[4..half].fill(0);
    std::fs::write(d.join("broken.parquet"), shard).unwrap();
    let good = std::fs::read_to_string(d.join("jobs/sample.toml")).unwrap();
    let failing = good.replace(
        "max_cluster_size = 1000",
        "max_cluster_size = 1000\npages = [\"../broken.parquet\"]",
    );
    let spec = write_spec(d, &failing);
    let stopped = run(d, &[&spec, "--date", NIGHT]);
    let stderr = String::from_utf8_lossy(&stopped.stderr);
    assert!(!stopped.status.success(), "{stderr}");
    assert!(stderr.contains("stage cluster"), "{stderr}");
    assert!(night.join("pairs/_SUCCESS").exists(), "match committed");
    for mark in &marks {
        assert!(!mark.exists(), "{} still marks its stage", mark.display());
    }

    let resumed = run(d, &["jobs/sample.toml", "--date", NIGHT]);
    assert_eq!(
        verbs(&resumed),
        ["skipped", "skipped", "clustered", "appended", "reported"]
    );
}

/// One run of a night at a time: a second, started while the first runs
/// (a --force rerun rewriting what it would find complete), stops on one
/// line naming the first, before any stage; the lock goes with the run.
#[test]
fn a_second_run_of_a_night_is_refused_while_the_first_runs() {
    let dir = scratch();
    let d = dir.path();
    let night = d.join("sample-output").join(NIGHT);
    std::fs::create_dir_all(&night).unwrap();
    let lock = night.join(".pairs.night.neardup-lock");
    // Held by a live process of this host: this test's, which locks it as
    // a run does.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    std::fs::write(&lock, format!("{} {}", host.trim(), std::process::id())).unwrap();
    let held = std::fs::File::open(&lock).unwrap();
    held.try_lock().unwrap();
    let second = run(d, &["jobs/sample.toml", "--date", NIGHT]);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    let holder = format!("another run (process {} on ", std::process::id());
    assert!(
        stderr.contains(&holder) && stderr.contains("running this night"),
        "{stderr}"
    );
    // Named by the night's directory, not the lock's made-up name.
    assert!(
        stderr.contains(&format!("sample-output/{NIGHT}: another run")),
        "{stderr}"
    );
    assert!(!night.join("fingerprints").exists(), "a stage ran");

    drop(held);
    let first = run(d, &["jobs/sample.toml", "--date", NIGHT]);
    assert_eq!(verbs(&first).len(), 5);
    assert!(!lock.exists(), "the run releases its lock");
}

/// The INT64 column `name` of the part files in `dir`.
fn int64_column(dir: &Path, name: &str) -> Vec<i64> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    parquet_batches(dir)
        .iter()
        .flat_map(|batch| {
            let column = batch.column_by_name(name).unwrap();
            column.as_primitive::<Int64Type>().values().to_vec()
        })
        .collect()
}

/// `drop/`'s rows: `(id, keep_id, url, keep_url)`.
fn drop_rows(dir: &Path) -> Vec<(i64, i64, Option<String>, Option<String>)> {
    use arrow_array::cast::AsArray;
    let mut rows = Vec::new();
    let ids = int64_column(dir, "id");
    let keeps = int64_column(dir, "keep_id");
    let strings = |name: &str| -> Vec<Option<String>> {
        parquet_batches(dir)
            .iter()
            .flat_map(|batch| {
                let column = batch.column_by_name(name).unwrap().as_string::<i32>();
                column
                    .iter()
                    .map(|s| s.map(str::to_string))
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let (urls, keep_urls) = (strings("url"), strings("keep_url"));
    for (at, (&id, &keep)) in ids.iter().zip(&keeps).enumerate() {
        rows.push((id, keep, urls[at].clone(), keep_urls[at].clone()));
    }
    rows
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
        [
            "fingerprinted",
            "matched",
            "clustered",
            "appended",
            "reported"
        ]
    );
    let expected = night_files(one.path());
    assert_eq!(expected.len(), 5);
    for n in [2, 3] {
        let dir = scratch();
        let output = Command::new(repo().join("scripts/processes-local.sh"))
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
        // Process 0 writes the night's report; the others say so.
        assert!(
            stdout.contains("[process 0] report: reported 1 night(s)"),
            "{stdout}"
        );
        for i in 1..n {
            let line = format!("[process {i}] report: process {i}: the report is process 0's");
            assert!(stdout.contains(&line), "{stdout}");
        }
        assert_eq!(night_files(dir.path()), expected, "{n} processes");
    }
    // A process that fails fails the script, its line marked.
    let failed = Command::new(repo().join("scripts/processes-local.sh"))
        .current_dir(one.path())
        .env("NEARDUP", env!("CARGO_BIN_EXE_neardup"))
        .args(["2", "jobs/missing.toml"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&failed.stdout);
    assert_eq!(failed.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("[process 1] error: jobs/missing.toml: cannot read"),
        "{stdout}"
    );
}

/// A job without `[fingerprint]` clusters with its queries as the pages
/// table when they have the default keys' columns (neardup's shards), so
/// its keys and `drop/`'s URLs are a fingerprinting job's; queries of ids
/// and fingerprints alone leave the keys to the corpus.
#[test]
fn a_job_without_fingerprint_reads_its_queries_as_pages_when_they_can_be() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let shards = repo().join("data-samples/crawl-fingerprints/part-00000.parquet");
    let bare = d.join("bare.parquet");
    let mut rng = neardup::random::SplitMix64::new(9);
    let (ids, fps): (Vec<i64>, Vec<u64>) = random_rows(&mut rng, 50, 0).into_iter().unzip();
    neardup::io::parquet::output::write_fingerprints(&bare, &ids, &fps, 100).unwrap();
    for (name, queries, keys) in [
        (
            "shards",
            shards.display().to_string(),
            vec!["corpus", "rel-canonical", "canonical-url", "earliest"],
        ),
        ("bare", bare.display().to_string(), vec!["corpus"]),
    ] {
        let spec = d.join(format!("{name}.toml"));
        let text = format!(
            "[match]\nqueries = [\"{queries}\"]\nout = \"{name}/{{date}}/pairs\"\n[cluster]\nout = \"{name}/{{date}}/clusters\"\n"
        );
        std::fs::write(&spec, text).unwrap();
        let output = run(d, &[&spec.display().to_string(), "--date", NIGHT]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{name}: {stderr}");
        let summary = d.join(name).join(NIGHT).join("clusters/_summary.json");
        let summary: serde_json::Value =
            serde_json::from_slice(&std::fs::read(summary).unwrap()).unwrap();
        assert_eq!(summary["keep_by"], serde_json::json!(keys), "{name}");
        assert_eq!(summary["drop_urls"], name == "shards", "{name}");
    }
}

fn write_spec(dir: &Path, text: &str) -> String {
    let path = dir.join("jobs/bad.toml");
    std::fs::write(&path, text).unwrap();
    "jobs/bad.toml".to_string()
}

/// A night to be fingerprinted under another scheme than its corpus is
/// refused before any stage runs, on one line naming the spec's key and
/// both schemes; `allow_mixed_schemes` in the spec's `[match]` lets the
/// same night through.
#[test]
fn a_night_of_another_scheme_is_refused_unless_the_spec_allows_it() {
    let dir = scratch();
    let d = dir.path();
    let good = std::fs::read_to_string(d.join("jobs/sample.toml")).unwrap();
    let v1 = good.replace("scheme = \"v4\"", "scheme = \"v1\"");
    assert_ne!(v1, good);
    let spec = write_spec(d, &v1);
    let refused = run(d, &[&spec, "--date", NIGHT]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    for needle in [
        "jobs/bad.toml: [fingerprint] scheme: fingerprint schemes differ",
        "features=words",
        "features=script(",
    ] {
        assert!(stderr.contains(needle), "`{needle}` not in {stderr}");
    }
    let night = d.join("sample-output").join(NIGHT);
    assert!(!night.join("fingerprints").exists());

    let allowed = v1.replace("self = true", "self = true\nallow_mixed_schemes = true");
    let spec = write_spec(d, &allowed);
    let output = run(d, &[&spec, "--date", NIGHT]);
    assert_eq!(
        verbs(&output),
        [
            "fingerprinted",
            "matched",
            "clustered",
            "appended",
            "reported"
        ]
    );
}

/// `verify = true` in `[match]` runs the quality mode: against a corpus
/// shard without sketches (the sample's, scheme v4) it is one line naming
/// the shard; on the night's own sketched shards (of WET text: text's threshold)
/// it verifies the pairs, which carry their wide distances to the
/// clustering and the rest of the night.
#[test]
fn a_night_in_the_quality_mode_verifies_its_pairs() {
    let dir = scratch();
    let d = dir.path();
    let good = std::fs::read_to_string(d.join("jobs/sample.toml")).unwrap();
    let v7 = good
        .lines()
        .filter(|line| !line.starts_with("scheme = ") && *line != "k = 3")
        .collect::<Vec<_>>()
        .join("\n");
    let verified = v7.replace(
        "self = true",
        "self = true\nverify = true\nallow_mixed_schemes = true",
    );
    let spec = write_spec(d, &verified);
    let refused = run(d, &[&spec, "--date", NIGHT]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    for needle in [
        "crawl-fingerprints/part-00000.parquet",
        "no column `sketch`",
    ] {
        assert!(stderr.contains(needle), "`{needle}` not in {stderr}");
    }
    let night = d.join("sample-output").join(NIGHT);
    assert!(!night.join("pairs/_SUCCESS").exists());

    let own = verified.replace(
        "    \"../data-samples/crawl-fingerprints/part-00000.parquet\",\n",
        "",
    );
    assert_ne!(own, verified);
    let output = run(d, &[&write_spec(d, &own), "--date", NIGHT]);
    assert_eq!(
        verbs(&output),
        ["skipped", "matched", "clustered", "appended", "reported"]
    );
    let pairs = read_pairs(&night.join("pairs"));
    assert!(!pairs.is_empty());
    assert!(pairs.iter().all(|p| p
        .wide_distance
        .is_some_and(|w| u32::from(w) <= TEXT_THRESHOLD)));
    let summary = std::fs::read_to_string(night.join("pairs/_summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
    assert_eq!(
        (&summary["k"], &summary["verify_threshold"]),
        (&6.into(), &TEXT_THRESHOLD.into())
    );
    // Each drop gives its pair's wide distance.
    let wide_of: std::collections::HashMap<(i64, i64), u16> = pairs
        .iter()
        .flat_map(|p| {
            let wide = p.wide_distance.unwrap();
            [
                ((p.query_id, p.corpus_id), wide),
                ((p.corpus_id, p.query_id), wide),
            ]
        })
        .collect();
    let mut drops = 0;
    for part in part_files(&night.join("clusters/drop")) {
        let file = std::fs::File::open(&part).unwrap();
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
        for batch in reader.map(Result::unwrap) {
            use arrow_array::cast::AsArray;
            use arrow_array::types::{Int16Type, Int64Type};
            use arrow_array::Array;
            let column = |name: &str| batch.column_by_name(name).unwrap().clone();
            let (ids, keeps) = (column("id"), column("keep_id"));
            let (ids, keeps) = (
                ids.as_primitive::<Int64Type>(),
                keeps.as_primitive::<Int64Type>(),
            );
            let wide = column("wide_distance");
            let wide = wide.as_primitive::<Int16Type>();
            for r in 0..batch.num_rows() {
                let pair = (ids.value(r), keeps.value(r));
                let shown = wide.is_valid(r).then(|| wide.value(r) as u16);
                assert_eq!(shown, wide_of.get(&pair).copied(), "{pair:?}");
                drops += 1;
            }
        }
    }
    assert!(drops > 0);
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
            good.replace("k = 3", "k = 3\nverify_threshold = 20"),
            "verify_threshold needs verify = true",
        ),
        (
            good.replace("k = 3", "k = 3\nverify = true"),
            "[fingerprint] scheme v4 leaves them out",
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
            good.replace("scheme = \"v4\"", "features = \"bigrams\""),
            "bigrams",
        ),
        (
            good.replace("scheme = \"v4\"", "scheme = \"v99\""),
            "no such scheme",
        ),
        (
            good.replace("workers = 2", "workers = 0"),
            "--workers must be at least 1",
        ),
        (
            good.replace(
                "workers = 2",
                "workers = 2\nprocesses = 2\nhostfile_pattern = \"h:1\"",
            ),
            "--hostfile-pattern \"h:1\" has no {i}",
        ),
        (
            good.replace("{date}/pairs", "{dat}/pairs"),
            "unknown placeholder {dat}",
        ),
        (
            good.replace("batch = \"{date}\"", "batch = \"latest\""),
            "[append] batch \"latest\" has no {date}",
        ),
        (
            good.replace("{date}/pairs", "{date}/fingerprints"),
            "overlap",
        ),
        (
            good.replace("{date}/clusters", "{date}/fingerprints/clusters"),
            "overlap",
        ),
        (
            good.replace("{date}/pairs", "corpus/{date}-pairs"),
            "[match] out: ",
        ),
        // Values a later stage refuses are refused before the first runs.
        (
            good.replace("k = 3", "k = 65"),
            "[match]: -k 65 is out of range",
        ),
        (
            good.replace("self = true", "self = true\nparts = 0"),
            "[match]: --parts must be at least 1",
        ),
        (
            good.replace("k = 3", "verify = true\nverify_threshold = 999"),
            "[match]: --verify-threshold 999 is out of range",
        ),
        (
            good.replace("max_cluster_size = 1000", "parts = 0"),
            "[cluster]: --parts must be at least 1",
        ),
        (
            good.replace("max_cluster_size = 1000", "max_cluster_size = 0"),
            "[cluster]: --max-cluster-size must be at least 1",
        ),
        (
            good.replace(
                "input = [\"../data-samples/crawl/text.wet.gz\"]",
                "input = []",
            ),
            "[fingerprint] input: no input given",
        ),
        // A key's column the pages table lacks: the shards fingerprint will
        // write, or a table the spec names.
        (
            good.replace("\"earliest\"]", "\"column:quality:desc\"]"),
            "[cluster]: --keep-by corpus,rel-canonical,canonical-url,column:quality:desc reads column `quality`",
        ),
        (
            good.replace(
                "max_cluster_size = 1000",
                "pages = [\"../data-samples/crawl-fingerprints/part-00000.parquet\"]",
            )
            .replace("\"earliest\"]", "\"column:url:asc\"]"),
            "column `url` has type Utf8, but --keep-by column:url:asc needs a number",
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

/// A stand-in for Slurm's `srun` in a test: starts `FAKE_SRUN_TASKS` copies
/// of its command, one task per node of `FAKE_SRUN_NODES`, each with the
/// variables a step's tasks get, and fails if any task fails.
const FAKE_SRUN: &str = r#"#!/usr/bin/env bash
while [[ $1 == --* ]]; do shift; done
n=$FAKE_SRUN_TASKS
pids=()
for ((i = 0; i < n; i++)); do
    SLURM_PROCID=$i SLURM_STEP_NUM_TASKS=$n SLURM_STEP_NODELIST=$FAKE_SRUN_NODES \
    SLURM_STEP_TASKS_PER_NODE="1(x$n)" SLURM_CPUS_PER_TASK=1 \
        "$@" > "task-$i.log" 2>&1 &
    pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
exit $status
"#;

/// Two loopback addresses standing for two nodes, `127.x.y.[1-2]`, whose
/// port 4100 (the example's) was free a moment ago.
fn two_nodes_with_port_4100_free() -> String {
    let mut rng = neardup::random::SplitMix64::new(std::process::id() as u64);
    loop {
        let (x, y) = (rng.next_u64() % 200 + 20, rng.next_u64() % 250);
        let free =
            |node: u64| std::net::TcpListener::bind(format!("127.{x}.{y}.{node}:4100")).is_ok();
        if free(1) && free(2) {
            return format!("127.{x}.{y}.[1-2]");
        }
    }
}

#[test]
fn the_slurm_example_runs_a_night_on_two_tasks_with_the_bytes_of_one() {
    let one = scratch();
    let output = run(one.path(), &["jobs/sample.toml", "--date", NIGHT]);
    assert!(output.status.success());
    let expected = night_files(one.path());

    // The example runs jobs/nightly.toml: here, the sample night.
    let dir = scratch();
    let d = dir.path();
    std::fs::copy(d.join("jobs/sample.toml"), d.join("jobs/nightly.toml")).unwrap();
    let bin = d.join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_neardup"), bin.join("neardup")).unwrap();
    std::fs::write(bin.join("srun"), FAKE_SRUN).unwrap();
    let mut mode = std::fs::metadata(bin.join("srun")).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
    std::fs::set_permissions(bin.join("srun"), mode).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let output = Command::new("bash")
        .current_dir(d)
        .arg(repo().join("jobs/slurm.sbatch"))
        .args(["--date", NIGHT])
        .env("PATH", path)
        .env("FAKE_SRUN_TASKS", "2")
        .env("FAKE_SRUN_NODES", two_nodes_with_port_4100_free())
        .env("RUST_LOG", "neardup=info")
        .output()
        .unwrap();
    let logs: Vec<String> = (0..2)
        .map(|i| std::fs::read_to_string(d.join(format!("task-{i}.log"))).unwrap_or_default())
        .collect();
    assert!(output.status.success(), "{logs:?}");
    for log in &logs {
        assert!(log.contains("process index from SLURM_PROCID"), "{log}");
        assert!(log.contains("processes connected"), "{log}");
    }
    assert_eq!(night_files(d), expected);
}

/// The fields of `jobs/kubernetes.yaml` that must agree with each other
/// and with neardup, as JSON, read by PyYAML.
fn kubernetes_example() -> serde_json::Value {
    let python = python_with("yaml");
    let script = r#"
import json, sys, yaml
docs = {d["kind"]: d for d in yaml.safe_load_all(open(sys.argv[1]))}
service, job = docs["Service"], docs["Job"]
pod = job["spec"]["template"]["spec"]
container = pod["containers"][0]
print(json.dumps({
    "service": service["metadata"]["name"],
    "cluster_ip": service["spec"]["clusterIP"],
    "service_port": service["spec"]["ports"][0]["port"],
    "not_ready": service["spec"].get("publishNotReadyAddresses", False),
    "selector": service["spec"]["selector"],
    "job": job["metadata"]["name"],
    "mode": job["spec"]["completionMode"],
    "completions": job["spec"]["completions"],
    "parallelism": job["spec"]["parallelism"],
    "subdomain": pod["subdomain"],
    "args": container["args"],
    "container_port": container["ports"][0]["containerPort"],
}))
"#;
    let output = Command::new(python)
        .args(["-c", script])
        .arg(repo().join("jobs/kubernetes.yaml"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn the_kubernetes_example_names_its_pods_as_neardup_expects() {
    let k = kubernetes_example();
    let args: Vec<String> = k["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let flag = |name: &str| {
        let at = args.iter().position(|a| a == name).unwrap();
        args[at + 1].clone()
    };
    // A pod's DNS name under a headless Service is <hostname>.<subdomain>,
    // and an Indexed Job's pod is named <job>-<index>.
    assert_eq!(k["mode"], "Indexed");
    assert_eq!(k["cluster_ip"], "None");
    assert_eq!(k["not_ready"], true);
    assert_eq!(k["subdomain"], k["service"]);
    assert_eq!(k["selector"]["job-name"], k["job"]);
    let processes: u64 = flag("--processes").parse().unwrap();
    assert_eq!(k["completions"], processes);
    assert_eq!(k["parallelism"], processes);
    let port = k["service_port"].as_u64().unwrap();
    assert_eq!(k["container_port"], port);
    let pattern = format!(
        "{}-{{i}}.{}:{port}",
        k["job"].as_str().unwrap(),
        k["service"].as_str().unwrap()
    );
    assert_eq!(flag("--hostfile-pattern"), pattern);

    // The container's arguments, on the spec the ConfigMap holds: the last
    // pod's index is in range, one past it is refused with one line.
    assert_eq!(args[..2], ["run", "/etc/neardup/nightly.toml"]);
    let spec = repo().join("jobs/nightly.toml");
    let run_as = |index: u64| {
        Command::new(env!("CARGO_BIN_EXE_neardup"))
            .arg("run")
            .arg(&spec)
            .args(&args[2..])
            .env("JOB_COMPLETION_INDEX", index.to_string())
            .output()
            .unwrap()
    };
    let stderr = |o: &Output| String::from_utf8_lossy(&o.stderr).into_owned();
    let last = run_as(processes - 1);
    // It gets past its placement to the spec's inputs (absent here).
    assert!(stderr(&last).contains("/crawl/"), "{}", stderr(&last));
    let past = run_as(processes);
    assert!(!past.status.success());
    let expected = format!("JOB_COMPLETION_INDEX={processes} is out of range");
    assert!(stderr(&past).contains(&expected), "{}", stderr(&past));
    assert_eq!(stderr(&past).trim_end().lines().count(), 1);
}

/// A hostfile of two loopback addresses on ports free a moment ago.
fn two_local_addresses(dir: &Path) -> PathBuf {
    let listeners: Vec<std::net::TcpListener> = (0..2)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let lines: Vec<String> = listeners
        .iter()
        .map(|l| l.local_addr().unwrap().to_string())
        .collect();
    let path = dir.join("hosts");
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

/// `run jobs/sample.toml` for [`NIGHT`] on two local processes of one
/// worker, each process's command amended by `amend(process, command)`.
fn run_night_on_two_processes(dir: &Path, amend: impl Fn(usize, &mut Command)) -> Vec<Output> {
    let hosts = two_local_addresses(dir);
    let children: Vec<std::process::Child> = (0..2)
        .map(|i| {
            let mut command = Command::new(env!("CARGO_BIN_EXE_neardup"));
            command
                .current_dir(dir)
                .args(["run", "jobs/sample.toml", "--date", NIGHT, "--workers", "1"])
                .args(["--hostfile", &hosts.display().to_string()])
                .args(["--process", &i.to_string()])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            amend(i, &mut command);
            command.spawn().unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect()
}

/// `--force` given to one process of a run, not the others: every process
/// stops before any stage with one line naming the difference, and the
/// complete night stays as it was. Process 1 used to skip every stage and
/// exit 0 while process 0 reran them and waited for it.
#[test]
fn processes_that_differ_on_force_stop_before_the_first_stage() {
    let dir = scratch();
    let night = dir.path().join("sample-output").join(NIGHT);
    run(dir.path(), &["jobs/sample.toml", "--date", NIGHT]);
    let before = night_files(dir.path());
    let outputs = run_night_on_two_processes(dir.path(), |i, command| {
        if i == 0 {
            command.arg("--force");
        }
    });
    for (i, output) in outputs.iter().enumerate() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "process {i}: {stderr}");
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "process {i}: {stderr}"
        );
        let (there, here) = match i {
            0 => ("false", "true"),
            _ => ("true", "false"),
        };
        let said = format!("was started with another job (--force: {there} there, {here} here)");
        assert!(stderr.contains(&said), "process {i}: {stderr}");
        assert!(
            output.stdout.is_empty(),
            "process {i}: no stage ran or skipped"
        );
    }
    assert_eq!(night_files(dir.path()), before);
    assert!(night.join("report.html").exists());

    // Process 1 on a host where the night's outputs are not there (the
    // same relative paths from another directory): it would run the
    // stages process 0 skips, which is said as such.
    let elsewhere = scratch();
    let outputs = run_night_on_two_processes(dir.path(), |i, command| {
        if i == 1 {
            command.current_dir(elsewhere.path());
        }
    });
    for (i, output) in outputs.iter().enumerate() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "process {i}: {stderr}");
        assert!(
            stderr.contains("would run other stages of the night (the first stage to run: ")
                && stderr.contains("it sees other outputs"),
            "process {i}: {stderr}"
        );
    }
    assert!(!elsewhere.path().join("sample-output").exists());
}

/// A process whose spec it refuses (an input missing on its host) tells
/// its peers why at once: they stop with its reason, not after waiting out
/// --connect-timeout for a process that will never connect.
#[test]
fn a_process_that_refuses_the_spec_tells_its_peers_why() {
    let dir = scratch();
    let without_inputs = scratch();
    std::fs::remove_file(without_inputs.path().join("data-samples")).unwrap();
    let outputs = run_night_on_two_processes(dir.path(), |i, command| {
        command.args(["--connect-timeout", "300"]);
        if i == 0 {
            command.current_dir(without_inputs.path());
        }
    });
    let missing = "data-samples/crawl/text.wet.gz";
    for (i, output) in outputs.iter().enumerate() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "process {i}: {stderr}");
        assert!(stderr.contains(missing), "process {i}: {stderr}");
    }
    let stderr = String::from_utf8_lossy(&outputs[1].stderr);
    assert!(
        stderr.contains("process 1: process 0 failed before starting: "),
        "{stderr}"
    );
    assert!(!dir.path().join("sample-output").join(NIGHT).exists());
}

/// The append is process 0's alone; when it fails, process 1 must not exit
/// 0 as if the night were complete, but say that process 0's append failed.
#[test]
fn when_process_0_fails_to_append_every_process_fails() {
    let dir = scratch();
    let night = dir.path().join("sample-output").join(NIGHT);
    let batch = dir.path().join("sample-output/corpus").join(NIGHT);
    run(dir.path(), &["jobs/sample.toml", "--date", NIGHT]);
    // The append runs again (its _SUCCESS is gone), and cannot copy a shard.
    std::fs::remove_file(batch.join("_SUCCESS")).unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("nowhere"),
        night.join("fingerprints/part-09999.parquet"),
    )
    .unwrap();
    let outputs = run_night_on_two_processes(dir.path(), |_, _| {});
    for (i, output) in outputs.iter().enumerate() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "process {i}: {stderr}");
        assert!(
            stderr.contains("part-09999.parquet"),
            "process {i}: {stderr}"
        );
    }
    let stderr = String::from_utf8_lossy(&outputs[1].stderr);
    assert!(
        stderr.contains("process 1: process 0's append failed: "),
        "{stderr}"
    );
    assert!(!batch.join("_SUCCESS").exists());
}

/// The job's corpus named by a glob inside it runs on the first night,
/// when the glob matches nothing yet, and matches the batches after; a
/// corpus match never reads is warned of.
#[test]
fn a_corpus_glob_inside_the_appended_corpus_runs_from_the_first_night() {
    let dir = scratch();
    let sample = std::fs::read_to_string(dir.path().join("jobs/sample.toml")).unwrap();
    let globbed = sample.replace(
        "\"../sample-output/corpus\",\n]",
        "\"../sample-output/corpus/*/*.parquet\",\n]",
    );
    assert_ne!(globbed, sample);
    std::fs::write(dir.path().join("jobs/globbed.toml"), &globbed).unwrap();
    let first = run(dir.path(), &["jobs/globbed.toml", "--date", NIGHT]);
    assert_eq!(verbs(&first).len(), 5);
    assert!(String::from_utf8_lossy(&first.stderr).is_empty());
    let second = run(dir.path(), &["jobs/globbed.toml", "--date", "2026-11-23"]);
    let printed = String::from_utf8_lossy(&second.stdout);
    let matched = printed.lines().find(|l| l.starts_with("match: ")).unwrap();
    let first_printed = String::from_utf8_lossy(&first.stdout);
    let first_matched = first_printed
        .lines()
        .find(|l| l.starts_with("match: "))
        .unwrap();
    assert_ne!(matched, first_matched, "the batch appended is matched");

    let unmatched = sample.replace("    \"../sample-output/corpus\",\n", "");
    assert_ne!(unmatched, sample);
    std::fs::write(dir.path().join("jobs/unmatched.toml"), unmatched).unwrap();
    let output = run(dir.path(), &["jobs/unmatched.toml", "--date", "2026-11-24"]);
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("sample-output/corpus is not in [match] corpus"),
        "{stderr}"
    );

    // A batch without _SUCCESS (a killed --force rerun) is refused however
    // the corpus is named: never read as complete, nor passed over.
    let batch = dir.path().join("sample-output/corpus").join(NIGHT);
    std::fs::remove_file(batch.join("_SUCCESS")).unwrap();
    for spec in ["jobs/sample.toml", "jobs/globbed.toml"] {
        let output = run(dir.path(), &[spec, "--date", "2026-11-25"]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{spec}: {stderr}");
        let said = format!("corpus/{NIGHT}: a neardup output without _SUCCESS");
        assert!(stderr.contains(&said), "{spec}: {stderr}");
    }
}

/// A process lost between a job's stages (gone once one is committed)
/// stops the others within `--peer-timeout` as a peer lost mid-stage does,
/// not after `--connect-timeout` as if it had never started; the committed
/// stage stays, for the rerun.
#[test]
fn a_process_lost_between_stages_stops_the_others_as_a_lost_peer() {
    let dir = scratch();
    let night = dir.path().join("sample-output").join(NIGHT);
    let outputs = run_night_on_two_processes(dir.path(), |i, command| {
        command.args(["--peer-timeout", "2", "--connect-timeout", "300"]);
        if i == 1 {
            command.env("NEARDUP_FAULT_EXIT_BEFORE_STAGE", "match");
        }
    });
    assert_eq!(outputs[1].status.code(), Some(9), "the injected exit");
    let stderr = String::from_utf8_lossy(&outputs[0].stderr);
    assert_eq!(outputs[0].status.code(), Some(3), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("error: lost process 1 (127.0.0.1:")
            && stderr.contains("between stages")
            && stderr.contains("within 2s (--peer-timeout)"),
        "{stderr}"
    );
    assert!(night.join("fingerprints/_SUCCESS").exists());
    assert!(!night.join("pairs/_SUCCESS").exists());
}

/// A night stopped (SIGTERM mid-scan) or failed in its first stage leaves
/// no empty night directory behind: the lock's directories go with it.
#[test]
fn a_night_stopped_before_its_first_output_leaves_no_directory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut rng = neardup::random::SplitMix64::new(3);
    let (ids, fps): (Vec<i64>, Vec<u64>) = random_rows(&mut rng, 400, 0).into_iter().unzip();
    let queries = d.join("queries.parquet");
    neardup::io::parquet::output::write_fingerprints(&queries, &ids, &fps, 100).unwrap();
    std::fs::write(d.join("broken.parquet"), "not parquet").unwrap();
    let spec = |queries: &str| {
        let path = d.join("night.toml");
        let text = format!(
            "[match]\nqueries = [\"{queries}\"]\nself = true\nout = \"nights/{{date}}/pairs\"\n"
        );
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let nights = d.join("nights");

    let mut child = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .current_dir(d)
        .args(["run", &spec("queries.parquet"), "--date", NIGHT])
        .env("NEARDUP_TEST_UNIT_DELAY_MS", "100")
        .env(UNIT_READ_LOG.0, UNIT_READ_LOG.1)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = StderrLines::of(&mut child);
    lines.wait_for("unit read");
    assert!(nights.join(NIGHT).exists(), "mid-scan, the night is there");
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let output = child.wait_with_output().unwrap();
    let stderr = lines.text_without("unit read");
    assert_eq!(output.status.code(), Some(143), "{stderr}");
    assert!(!nights.exists(), "stopped: {stderr}");

    let failed = run(d, &[&spec("broken.parquet"), "--date", NIGHT]);
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert_eq!(failed.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("broken.parquet"), "{stderr}");
    assert!(!nights.exists(), "failed: {stderr}");
}

/// A bad `--hostfile` or `--process` on the command line is named as the
/// flag it is, not as the spec's `[runtime]`.
#[test]
fn a_bad_process_flag_is_not_blamed_on_the_spec() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("hosts"), "127.0.0.1:4700\n").unwrap();
    for (flags, needle) in [
        (
            &["--hostfile", "missing-hosts"][..],
            "missing-hosts: cannot read hostfile",
        ),
        (
            &["--hostfile", "hosts", "--process", "3"][..],
            "--process 3 is out of range",
        ),
    ] {
        let mut args = vec!["jobs/sample.toml", "--date", NIGHT];
        args.extend(flags);
        let refused = run(d, &args);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(needle), "{stderr}");
        assert!(!stderr.contains("sample.toml"), "{stderr}");
    }
}

/// A news article's text, crawled under several URLs by the night jobs below.
const FERRY_ARTICLE: &str = "The harbour council met on Tuesday to discuss the new ferry \
    timetable. Residents asked for earlier sailings in winter, when the road over the pass is \
    closed, and for a shelter at the north pier. The council agreed to publish a draft in March \
    and to hold two public meetings before any change takes effect next summer.";

/// An archive the corpus was seeded with, copied without `_SUCCESS` (as a
/// DuckDB or pyarrow export is), one shard per crawl file: an AMP view
/// fetched minutes before the page it is a view of. A night that crawls
/// both again keeps the page, by its URL: the archive is one batch, its
/// pages held alike. `run` gave the cluster stage the archive's files,
/// each a batch of its own, and the view, held minutes longer, was kept.
#[test]
fn a_run_holds_an_archive_without_success_as_one_batch() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = FERRY_ARTICLE;
    let (view, page) = (
        "https://amp.harbour.example/ferry",
        "https://harbour.example/ferry",
    );
    let record = |url: &str, minute: u32, day: u32| {
        serde_json::json!({"url": url, "text": text,
            "fetched": format!("2026-11-{day:02}T03:{minute:02}:00Z")})
        .to_string()
    };
    std::fs::create_dir_all(d.join("archive-crawl")).unwrap();
    std::fs::write(d.join("archive-crawl/a.jsonl"), record(view, 1, 1) + "\n").unwrap();
    std::fs::write(d.join("archive-crawl/b.jsonl"), record(page, 5, 1) + "\n").unwrap();
    let archive_fp = d.join("archive-fp");
    run_ok(&[
        "fingerprint",
        "--input",
        d.join("archive-crawl").to_str().unwrap(),
        "--time-field",
        "fetched",
        "--out",
        archive_fp.to_str().unwrap(),
    ]);
    std::fs::create_dir_all(d.join("archive")).unwrap();
    for shard in part_files(&archive_fp) {
        std::fs::copy(&shard, d.join("archive").join(shard.file_name().unwrap())).unwrap();
    }
    std::fs::create_dir_all(d.join("crawl")).unwrap();
    let tonight = [record(view, 1, 20), record(page, 5, 20)].join("\n") + "\n";
    std::fs::write(d.join("crawl/2026-11-20.jsonl"), tonight).unwrap();
    write_jsonl_job(d, r#"["../archive/*.parquet", "../out/corpus"]"#);
    let id = neardup::fingerprint::crawl::url_id;
    let dropped = night_drops(d, "2026-11-20");
    assert_eq!(dropped, [(id(view), id(page))]);
}

/// Writes `jobs/night.toml`: a night of `crawl/{date}.jsonl` (fetch times
/// in `fetched`) matched against `corpus` (a TOML list) and itself,
/// clustered, and appended to `out/corpus`.
fn write_jsonl_job(d: &Path, corpus: &str) {
    std::fs::create_dir_all(d.join("jobs")).unwrap();
    let spec = r#"
[runtime]
workers = 2
[fingerprint]
input = ["../crawl/{date}.jsonl"]
out = "../out/{date}/fingerprints"
time_field = "fetched"
[match]
corpus = CORPUS
out = "../out/{date}/pairs"
[cluster]
out = "../out/{date}/clusters"
[append]
corpus = "../out/corpus"
batch = "{date}"
"#;
    std::fs::write(d.join("jobs/night.toml"), spec.replace("CORPUS", corpus)).unwrap();
}

/// Runs `jobs/night.toml` for `date` and gives its drops: `(id, keep_id)`.
fn night_drops(d: &Path, date: &str) -> Vec<(i64, i64)> {
    let output = run(d, &["jobs/night.toml", "--date", date]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{date}: {stderr}");
    let drop_dir = d.join("out").join(date).join("clusters/drop");
    drop_rows(&drop_dir)
        .into_iter()
        .map(|(id, keep, ..)| (id, keep))
        .collect()
}

/// Four nights of a crawl (JSONL with fetch times): the https copy of a
/// page the corpus held since night 1 is dropped for it on night 2, kept
/// and appended on night 3 (it was replaced for a night), and on night 4,
/// the same again, meets the page as a corpus page too. The page held
/// longest is kept again, though the copy's URL is the more canonical: no
/// page any night kept is dropped later, and the copy's drops agree.
#[test]
fn a_page_kept_one_night_is_not_dropped_for_a_copy_that_came_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let article = FERRY_ARTICLE;
    let notice = "This page is being updated. Our editors are reviewing the article after a \
        reader pointed out an error in the figures for freight tonnage, which were taken from \
        last year's annual report instead of this year's. Please check back tomorrow.";
    let other = |night: usize| {
        format!(
            "Weather for night {night}: light winds from the west, clear skies over the hills, \
            frost in sheltered valleys and fog patches by the estuary until mid morning."
        )
    };
    let (mirror, copy) = (1_i64, 2_i64);
    let record = |id: i64, url: &str, text: &str, night: usize| {
        serde_json::json!({
            "id": id, "url": url, "text": text,
            "fetched": format!("2026-11-0{night}T03:00:00Z"),
        })
        .to_string()
    };
    let nights: [Vec<String>; 4] = [
        vec![record(
            mirror,
            "http://mirror.example/copies/ferry",
            article,
            1,
        )],
        vec![record(copy, "https://harbour.example/ferry", article, 2)],
        vec![record(copy, "https://harbour.example/ferry", notice, 3)],
        vec![record(copy, "https://harbour.example/ferry", article, 4)],
    ];
    std::fs::create_dir_all(d.join("crawl")).unwrap();
    for (n, records) in nights.iter().enumerate() {
        let mut lines = records.clone();
        lines.push(record(
            100 + n as i64,
            "https://weather.example/",
            &other(n + 1),
            n + 1,
        ));
        let path = d.join(format!("crawl/2026-11-0{}.jsonl", n + 1));
        std::fs::write(path, lines.join("\n") + "\n").unwrap();
    }
    write_jsonl_job(d, r#"["../out/corpus"]"#);
    let drops: Vec<Vec<(i64, i64)>> = (1..=4)
        .map(|night| night_drops(d, &format!("2026-11-0{night}")))
        .collect();
    assert_eq!(
        drops,
        [vec![], vec![(copy, mirror)], vec![], vec![(copy, mirror)]],
        "drops by night"
    );
}

/// Writes `jobs/night.toml` ([`write_jsonl_job`], its own corpus) and a
/// crawl of one page for `date`; gives the crawl's path.
fn write_one_page_night(d: &Path, date: &str) -> PathBuf {
    std::fs::create_dir_all(d.join("crawl")).unwrap();
    let record = serde_json::json!({"url": "https://harbour.example/ferry",
        "text": FERRY_ARTICLE, "fetched": format!("{date}T03:00:00Z")});
    let crawl = d.join(format!("crawl/{date}.jsonl"));
    std::fs::write(&crawl, format!("{record}\n")).unwrap();
    write_jsonl_job(d, r#"["../out/corpus"]"#);
    crawl
}

/// A directory at the night's corpus batch path that neardup did not write
/// (a team's own archive of that date) is refused on one line, nothing of
/// the night is committed, and it is left as it was; a file there too. The
/// night's first stage used to remove the batch path whole, however it was
/// made.
#[test]
fn a_night_leaves_what_it_did_not_write_at_its_batch_path() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let date = "2026-11-20";
    write_one_page_night(d, date);
    let shown = format!("out/corpus/{date}");
    let batch = d.join(&shown);
    std::fs::create_dir_all(&batch).unwrap();
    let notes = batch.join("notes.txt");
    std::fs::write(&notes, "the team's own").unwrap();
    let output = run(d, &["jobs/night.toml", "--date", date]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    let refusal =
        format!("[append] batch: {shown}: not a neardup output ({shown}/notes.txt is none");
    assert!(stderr.contains(&refusal), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "the team's own");
    assert!(!d.join("out").join(date).exists(), "no stage committed");

    std::fs::remove_dir_all(&batch).unwrap();
    std::fs::write(&batch, "a file").unwrap();
    let output = run(d, &["jobs/night.toml", "--date", date]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    let refusal = format!("[append] batch: {shown}: is a file, not a neardup output");
    assert!(stderr.contains(&refusal), "{stderr}");
    assert_eq!(std::fs::read_to_string(&batch).unwrap(), "a file");

    std::fs::remove_file(&batch).unwrap();
    let output = run(d, &["jobs/night.toml", "--date", date]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(batch.join("_SUCCESS").exists());
}

/// A rerun (`--force`) that fails before its first stage commits leaves
/// the night as it was: every stage still complete, its corpus batch
/// still there. The marks used to go as the first stage started, the
/// corpus batch whole, so a rerun stopped early took the night out of the
/// corpus until it was run again.
#[test]
fn a_rerun_stopped_before_its_first_commit_leaves_the_night_whole() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let date = "2026-11-20";
    let crawl = write_one_page_night(d, date);
    let first = run(d, &["jobs/night.toml", "--date", date]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let night = d.join("out").join(date);
    let batch = d.join("out/corpus").join(date);
    let marks = [
        night.join("fingerprints/_SUCCESS"),
        night.join("pairs/_SUCCESS"),
        night.join("clusters/_SUCCESS"),
        batch.join("_SUCCESS"),
        night.join("report.html"),
    ];
    assert!(marks.iter().all(|mark| mark.exists()));
    let appended = part_files(&batch);
    assert!(!appended.is_empty());

    // The crawl file emptied: the rerun's fingerprint stage fails.
    std::fs::write(&crawl, "").unwrap();
    let rerun = run(d, &["jobs/night.toml", "--date", date, "--force"]);
    let stderr = String::from_utf8_lossy(&rerun.stderr);
    assert!(!rerun.status.success(), "{stderr}");
    assert!(stderr.contains("stage fingerprint"), "{stderr}");
    for mark in &marks {
        assert!(mark.exists(), "{} is gone", mark.display());
    }
    assert_eq!(part_files(&batch), appended);
}
