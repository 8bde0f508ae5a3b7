//! Inputs and outputs in object storage, against real servers on loopback:
//! moto's S3 server (`moto[server]`, installed by scripts/test.sh),
//! Azurite (Azure Blob Storage's emulator, likewise) and an HTTP server that
//! answers byte ranges. Reading and writing `s3://`, `az://` and `http://`
//! gives the bytes of the same runs on local files; failures get one line.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use arrow_array::cast::AsArray;
use arrow_array::RecordBatch;
use neardup::random::SplitMix64;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server process on a loopback port, killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(mut command: Command, port: u16) -> Server {
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut server = Server { child, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "server on {port} did not start");
            assert!(server.child.try_wait().unwrap().is_none(), "server exited");
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }

    /// moto's S3 server; `env` configures it (e.g. to check credentials).
    fn s3(env: &[(&str, &str)]) -> Server {
        let port = free_port();
        let mut command = Command::new(python_with("moto"));
        command
            .args(["-m", "moto.server", "-H", "127.0.0.1", "-p"])
            .arg(port.to_string())
            .envs(env.iter().copied());
        Server::start(command, port)
    }

    /// A static HTTP server of `dir` that answers byte ranges, and fails
    /// every `fail_every`-th request with 503 (0: none).
    fn http(dir: &Path, fail_every: usize) -> Server {
        Server::http_with(dir, &[fail_every.to_string()])
    }

    /// [`Self::http`], its files gone (404) from byte `gone_from` on.
    fn http_gone_from(dir: &Path, gone_from: u64) -> Server {
        Server::http_with(dir, &["0".into(), gone_from.to_string()])
    }

    fn http_with(dir: &Path, options: &[String]) -> Server {
        let port = free_port();
        let mut command = Command::new(python_with("http.server"));
        command
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/range_http_server.py"))
            .arg(dir)
            .arg(port.to_string())
            .args(options);
        Server::start(command, port)
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Uploads every file under `dir` to `s3://bucket/prefix/...` (making the
/// bucket), with boto3, as another tool would have written them.
fn upload(server: &Server, bucket: &str, dir: &Path, prefix: &str) {
    let script = r#"
import os, sys, boto3
endpoint, bucket, root, prefix = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
                  aws_secret_access_key="test", region_name="us-east-1")
if bucket not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
    s3.create_bucket(Bucket=bucket)
for dirpath, _, files in os.walk(root):
    for name in files:
        path = os.path.join(dirpath, name)
        s3.upload_file(path, bucket, prefix + "/" + os.path.relpath(path, root))
"#;
    let status = Command::new(python_with("boto3"))
        .args(["-c", script, &server.endpoint(), bucket])
        .arg(dir)
        .arg(prefix)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Downloads every object under `s3://bucket/prefix/` into `dir`, with
/// boto3, as a reader of the output would see it.
fn download(server: &Server, bucket: &str, prefix: &str, dir: &Path) {
    let script = r#"
import os, sys, boto3
endpoint, bucket, prefix, root = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
                  aws_secret_access_key="test", region_name="us-east-1")
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
    for item in page.get("Contents", []):
        path = os.path.join(root, os.path.relpath(item["Key"], prefix))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        s3.download_file(bucket, item["Key"], path)
"#;
    let status = Command::new(python_with("boto3"))
        .args(["-c", script, &server.endpoint(), bucket, prefix])
        .arg(dir)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Downloads one object: `endpoint bucket key path`.
const DOWNLOAD_ONE: &str = r#"
import sys, boto3
endpoint, bucket, key, path = sys.argv[1:]
boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
             aws_secret_access_key="test", region_name="us-east-1").download_file(bucket, key, path)
"#;

/// `neardup` with the S3 credentials and endpoint of `server`.
fn neardup_on(server: &Server) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_neardup"));
    command
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", server.endpoint())
        .env("AWS_ALLOW_HTTP", "true");
    command
}

fn succeeded(output: &Output) -> bool {
    if !output.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&output.stderr));
    }
    output.status.success()
}

/// Runs `neardup args` as two processes joined by a loopback hostfile
/// written in `dir`; true when both succeed. Each process's local staging
/// (for an output in an object store) is under `dir/tmp`, which must be
/// empty again once they have succeeded.
fn two_processes_succeed(server: &Server, args: &[String], dir: &Path) -> bool {
    let hosts = dir.join("hosts");
    let addresses = format!("127.0.0.1:{}\n127.0.0.1:{}\n", free_port(), free_port());
    std::fs::write(&hosts, addresses).unwrap();
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let children: Vec<Child> = (0..2)
        .map(|i| {
            neardup_on(server)
                .env("TMPDIR", &tmp)
                .args(args)
                .args(["--hostfile", &hosts.display().to_string()])
                .args(["--process", &i.to_string()])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let ok = outputs.iter().all(succeeded);
    if ok {
        let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }
    ok
}

/// The data files of an output directory (its parts, not the summary).
fn parts_of(dir: &Path) -> Vec<(String, Vec<u8>)> {
    part_files(dir)
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(dir).unwrap().display().to_string();
            (name, std::fs::read(&p).unwrap())
        })
        .collect()
}

/// B (2 shards) and F (4 shards, with planted pairs) under `dir`, with a
/// `_SUCCESS` marker and a `_temporary/` shard in F that readers must skip.
fn inputs(dir: &Path) -> (PathBuf, PathBuf) {
    let mut rng = SplitMix64::new(7);
    let queries = random_rows(&mut rng, 2_000, 0);
    let corpus = planted_corpus(&mut rng, &queries, 200, 5, 8_000, 1_000_000);
    let (q, c) = (dir.join("queries"), dir.join("corpus"));
    write_shards(&q, &queries, 2);
    write_shards(&c, &corpus, 4);
    std::fs::write(c.join("_SUCCESS"), b"").unwrap();
    write_shard(&c.join("_temporary/shard-x.parquet"), &queries[..10]);
    (q, c)
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn match_cluster_and_a_job_read_s3_with_the_bytes_of_local_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (q, c) = inputs(d);
    let server = Server::s3(&[]);
    upload(&server, "crawl", &q, "night/queries");
    upload(&server, "crawl", &c, "corpus");

    let local = d.join("local");
    let mut command = neardup_on(&server);
    command.args(["match", "--self", "--parts", "3", "--workers", "2"]);
    let output = command
        .args(["--queries", &q.display().to_string()])
        .args(["--corpus", &c.display().to_string()])
        .args(["--out", &local.display().to_string()])
        .output()
        .unwrap();
    assert!(succeeded(&output));
    let baseline = parts_of(&local);
    assert_eq!(baseline.len(), 3);

    // A glob for B (a `?` in it, which a URL would take for a query), a
    // prefix (a "directory", with entries to skip) for F.
    let remote_args = |out: &Path| {
        let mut list = args(&["match", "--self", "--parts", "3"]);
        list.extend(args(&[
            "--queries",
            "s3://crawl/night/queries/shard-00?.parquet",
        ]));
        list.extend(args(&["--corpus", "s3://crawl/corpus", "--out"]));
        list.push(out.display().to_string());
        list
    };
    let remote = d.join("remote");
    let output = neardup_on(&server)
        .args(remote_args(&remote))
        .args(["--workers", "2"])
        .output()
        .unwrap();
    assert!(succeeded(&output));
    assert_eq!(parts_of(&remote), baseline);
    // An `http://` endpoint is plain HTTP by choice, as boto3 takes it:
    // no `AWS_ALLOW_HTTP` needed (object_store alone says "builder error").
    let plain = d.join("plain");
    let output = neardup_on(&server)
        .env_remove("AWS_ALLOW_HTTP")
        .args(remote_args(&plain))
        .output()
        .unwrap();
    assert!(succeeded(&output));
    assert_eq!(parts_of(&plain), baseline);

    // Two processes, each reading its share of the row groups from S3.
    let two = d.join("two");
    assert!(two_processes_succeed(&server, &remote_args(&two), d));
    assert_eq!(parts_of(&two), baseline);

    // `cluster` on the pairs as a Spark job would find them: a prefix with
    // `_SUCCESS` and `_summary.json` beside the parts.
    upload(&server, "crawl", &local, "pairs");
    let cluster = |pairs: &str, out: &Path| {
        neardup_on(&server)
            .args(["cluster", "--corpus-wins", "--parts", "2", "--pairs", pairs])
            .args(["--out", &out.display().to_string()])
            .output()
            .unwrap()
    };
    let (from_disk, from_s3) = (d.join("clusters-local"), d.join("clusters-s3"));
    assert!(succeeded(&cluster(
        &local.display().to_string(),
        &from_disk
    )));
    assert!(succeeded(&cluster("s3://crawl/pairs", &from_s3)));
    assert!(!parts_of(&from_disk.join("clusters")).is_empty());
    for sub in ["clusters", "drop"] {
        assert_eq!(parts_of(&from_s3.join(sub)), parts_of(&from_disk.join(sub)));
    }

    // A job spec whose inputs are objects, and so are its outputs: a
    // rerun finds their `_SUCCESS` and the report, and skips all three.
    std::fs::write(
        d.join("night.toml"),
        "[match]\nqueries = [\"s3://crawl/night/queries\"]\ncorpus = [\"s3://crawl/corpus\"]\n\
         out = \"s3://crawl/{date}/pairs\"\nself = true\nparts = 3\n\n\
         [cluster]\nout = \"s3://crawl/{date}/clusters\"\nparts = 2\n",
    )
    .unwrap();
    let night = |extra: &[&str]| {
        neardup_on(&server)
            .args(["run", &d.join("night.toml").display().to_string()])
            .args(["--date", "2026-11-22"])
            .args(extra)
            .output()
            .unwrap()
    };
    let output = night(&[]);
    assert!(succeeded(&output));
    let job = d.join("job");
    download(&server, "crawl", "2026-11-22", &job);
    assert_eq!(parts_of(&job.join("pairs")), baseline);
    assert!(job.join("pairs/_SUCCESS").exists());
    for sub in ["clusters", "drop"] {
        assert_eq!(
            parts_of(&job.join("clusters").join(sub)),
            parts_of(&from_disk.join(sub))
        );
    }
    let again = night(&[]);
    assert!(succeeded(&again));
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert_eq!(stdout.matches("skipped").count(), 3, "{stdout}");
}

#[test]
fn outputs_in_s3_are_committed_without_rename_with_the_bytes_of_local_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (q, c) = inputs(d);
    let server = Server::s3(&[]);
    let empty = d.join("empty");
    std::fs::create_dir(&empty).unwrap();
    upload(&server, "results", &empty, "");
    let run = |args: &[String]| neardup_on(&server).args(args).output().unwrap();
    let matching_in = |out: &str, parts: &str| {
        let mut list = args(&["match", "--self", "--parts", parts, "--out", out]);
        list.extend(args(&["--queries", &q.display().to_string()]));
        list.extend(args(&["--corpus", &c.display().to_string()]));
        list
    };
    let matching = |out: &str| matching_in(out, "3");
    let local = d.join("local");
    let mut one = matching(&local.display().to_string());
    one.extend(args(&["--workers", "2"]));
    assert!(succeeded(&run(&one)));
    let baseline = parts_of(&local);

    // One process of 2 workers, then 2 processes of one: every worker
    // uploads its own parts; process 0 writes `_SUCCESS` last.
    let mut to_s3 = matching("s3://results/pairs");
    to_s3.extend(args(&["--workers", "2"]));
    let output = run(&to_s3);
    assert!(succeeded(&output));
    let got = d.join("got");
    download(&server, "results", "pairs", &got);
    assert_eq!(parts_of(&got), baseline);
    assert!(got.join("_SUCCESS").exists() && got.join("_summary.json").exists());

    assert!(two_processes_succeed(
        &server,
        &matching("s3://results/two"),
        d
    ));
    let two = d.join("two");
    download(&server, "results", "two", &two);
    assert_eq!(parts_of(&two), baseline);
    assert!(two.join("_SUCCESS").exists());
    // Without its _SUCCESS, it is an output whose stage did not finish:
    // refused as an input.
    let unmark = "import sys, boto3\nboto3.client('s3', endpoint_url=sys.argv[1], aws_access_key_id='test', aws_secret_access_key='test', region_name='us-east-1').delete_object(Bucket='results', Key='two/_SUCCESS')";
    let status = Command::new(python_with("boto3"))
        .args(["-c", unmark, &server.endpoint()])
        .status()
        .unwrap();
    assert!(status.success());
    // Named as a prefix, by a glob, or one of its objects.
    for pairs in [
        "s3://results/two",
        "s3://results/two/*.parquet",
        "s3://results/two/part-00000.parquet",
    ] {
        let partial = args(&["cluster", "--pairs", pairs, "--out", "s3://results/c-two"]);
        let output = run(&partial);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{pairs}: {stderr}");
        assert!(
            stderr.contains("s3://results/two: a neardup output without _SUCCESS"),
            "{pairs}: {stderr}"
        );
    }

    // An existing prefix is refused, and left as it was; --overwrite
    // replaces it.
    let output = run(&to_s3);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("s3://results/pairs: output prefix already exists"),
        "{stderr}"
    );
    let kept = d.join("kept");
    download(&server, "results", "pairs", &kept);
    assert_eq!(parts_of(&kept), baseline);
    // Not over another tool's objects, though.
    let theirs = d.join("theirs");
    std::fs::create_dir_all(theirs.join("2026")).unwrap();
    std::fs::write(theirs.join("2026/events.json"), "{}").unwrap();
    upload(&server, "results", &theirs, "theirs");
    let mut over_theirs = matching_in("s3://results/theirs", "2");
    over_theirs.push("--overwrite".into());
    let output = run(&over_theirs);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("theirs/2026/events.json is none of its files"),
        "{stderr}"
    );
    download(&server, "results", "theirs", &d.join("theirs-after"));
    assert!(d.join("theirs-after/2026/events.json").exists());
    let mut overwrite = matching_in("s3://results/pairs", "2");
    overwrite.push("--overwrite".into());
    assert!(succeeded(&run(&overwrite)));
    let replaced = d.join("replaced");
    download(&server, "results", "pairs", &replaced);
    assert_eq!(parts_of(&replaced).len(), 2, "the old third part is gone");

    // The input named another way is still the input: --overwrite would
    // have deleted it. A `#` or `%` would put the output elsewhere than
    // shown: refused.
    let pairs_as = |out: &str| {
        let mut list = args(&["cluster", "--pairs", "s3://results/pairs", "--out", out]);
        list.push("--overwrite".into());
        list
    };
    for (out, needle) in [
        ("s3a://results/./pairs", "overlaps the input"),
        ("S3://Results/x/../pairs/", "overlaps the input"),
        ("s3://results/pairs#v2", "cannot hold `#`"),
        ("s3://results#v2", "cannot hold `#`"),
        ("s3://results/p%61irs", "cannot hold `%`"),
        ("s3://results/pairs?v2", "overlaps the input"),
        ("s3://results/other?v2", "cannot hold `?`"),
    ] {
        let output = run(&pairs_as(out));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{out}: {stderr}");
        assert!(stderr.contains(needle), "{out}: {stderr}");
    }
    // An object of the output's name: the output would lie beside it.
    let object = d.join("object");
    std::fs::create_dir_all(&object).unwrap();
    std::fs::write(object.join("report.html"), "<p>a page</p>").unwrap();
    upload(&server, "results", &object, "night");
    let output = run(&pairs_as("s3://results/night/report.html"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("an object of that name exists"), "{stderr}");
    let intact = d.join("intact");
    download(&server, "results", "pairs", &intact);
    assert_eq!(parts_of(&intact), parts_of(&replaced));

    // `cluster` and `fingerprint` write there too.
    let clusters = d.join("clusters");
    let cluster = |out: &str| {
        args(&[
            "cluster",
            "--corpus-wins",
            "--parts",
            "2",
            "--pairs",
            &local.display().to_string(),
            "--out",
            out,
        ])
    };
    assert!(succeeded(&run(&cluster(&clusters.display().to_string()))));
    assert!(succeeded(&run(&cluster("s3://results/clusters"))));
    let got = d.join("got-clusters");
    download(&server, "results", "clusters", &got);
    for sub in ["clusters", "drop"] {
        assert_eq!(parts_of(&got.join(sub)), parts_of(&clusters.join(sub)));
    }
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples/crawl");
    let fingerprint = |out: &str| {
        args(&[
            "fingerprint",
            "--input",
            &samples.display().to_string(),
            "--out",
            out,
        ])
    };
    let fingerprints = d.join("fingerprints");
    assert!(succeeded(&run(&fingerprint(
        &fingerprints.display().to_string()
    ))));
    assert!(succeeded(&run(&fingerprint("s3://results/fingerprints"))));
    let got = d.join("got-fingerprints");
    download(&server, "results", "fingerprints", &got);
    assert_eq!(parts_of(&got), parts_of(&fingerprints));
    assert!(got.join("_SUCCESS").exists());

    // An HTTP URL is read-only.
    let output = run(&matching("https://example.invalid/pairs"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("HTTP URLs are read-only"), "{stderr}");
}

/// A fingerprint output's shards, by name: their rows without the `source`
/// column, and the sources it names (the input as given: a local path, or
/// an object's URL).
fn shards_and_sources(dir: &Path) -> Vec<(String, Vec<RecordBatch>, Vec<String>)> {
    part_files(dir)
        .into_iter()
        .map(|path| {
            let name = path.strip_prefix(dir).unwrap().display().to_string();
            let reader = std::fs::File::open(&path).unwrap();
            let reader = ParquetRecordBatchReaderBuilder::try_new(reader)
                .unwrap()
                .build()
                .unwrap();
            let (mut batches, mut sources) = (Vec::new(), Vec::new());
            for batch in reader {
                let mut batch = batch.unwrap();
                let source = batch.remove_column(batch.schema().index_of("source").unwrap());
                sources.extend(
                    source
                        .as_string::<i32>()
                        .iter()
                        .map(|s| s.unwrap().to_string()),
                );
                batches.push(batch);
            }
            sources.dedup();
            (name, batches, sources)
        })
        .collect()
}

/// The shards of the same files read from disk and from an object store
/// are the same but for the `source` they name.
#[test]
fn fingerprint_streams_warc_wet_and_jsonl_objects_with_the_bytes_of_local_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let crawl = d.join("crawl");
    std::fs::create_dir(&crawl).unwrap();
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples/crawl");
    for name in ["pages.warc.gz", "text.wet.gz"] {
        std::fs::copy(samples.join(name), crawl.join(name)).unwrap();
    }
    // A WARC with a damaged gzip member in the middle: reading it seeks back
    // to just after the member's start, which an object reader must do too.
    let mut damaged = std::fs::read(samples.join("pages.warc.gz")).unwrap();
    let middle = damaged.len() / 2;
    for byte in &mut damaged[middle..middle + 64] {
        *byte ^= 0x5a;
    }
    std::fs::write(crawl.join("damaged.warc.gz"), damaged).unwrap();
    let jsonl: Vec<String> = (0..300)
        .map(|i| {
            format!(
                r#"{{"id": {i}, "text": "page {} of a site about {} things"}}"#,
                i / 3,
                i % 7
            )
        })
        .collect();
    std::fs::write(crawl.join("docs.jsonl"), jsonl.join("\n")).unwrap();

    let server = Server::s3(&[]);
    upload(&server, "crawl", &crawl, "2026-11-22");
    let fingerprint = |input: &str, out: &Path| {
        neardup_on(&server)
            .args(["fingerprint", "--workers", "2", "--input", input, "--out"])
            .arg(out)
            .output()
            .unwrap()
    };
    let (local, remote) = (d.join("fp-local"), d.join("fp-s3"));
    let output = fingerprint(&crawl.display().to_string(), &local);
    assert!(succeeded(&output));
    let bad = |out: &Path| {
        let summary = std::fs::read_to_string(out.join("_summary.json")).unwrap();
        let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
        summary["bad_records"].as_u64()
    };
    assert!(bad(&local) > Some(0), "the damaged member is reported");
    assert!(succeeded(&fingerprint("s3://crawl/2026-11-22", &remote)));
    let (shards, remote_shards) = (shards_and_sources(&local), shards_and_sources(&remote));
    assert_eq!(shards.len(), 4);
    assert_eq!(remote_shards.len(), 4);
    let names = [
        "damaged.warc.gz",
        "docs.jsonl",
        "pages.warc.gz",
        "text.wet.gz",
    ];
    for ((shard, remote_shard), name) in shards.iter().zip(&remote_shards).zip(names) {
        assert_eq!(shard.0, remote_shard.0);
        assert!(shard.1 == remote_shard.1, "{name}: other rows");
        assert_eq!(shard.2, [crawl.join(name).display().to_string()]);
        assert_eq!(remote_shard.2, [format!("s3://crawl/2026-11-22/{name}")]);
    }
    assert_eq!(bad(&remote), bad(&local));

    // `explain` reads a record back from its object by one ranged read:
    // the text it shows is the local file's, and hashes to the stored
    // fingerprint (a WET record, and a JSONL line).
    for page in ["https://mirror.example.net/libdw1/copyright", "5"] {
        let explain = |shards: &Path| -> serde_json::Value {
            let output = neardup_on(&server)
                .args(["explain", "--json", "--text", page, "--fingerprints"])
                .arg(shards)
                .output()
                .unwrap();
            assert!(succeeded(&output), "{page}");
            serde_json::from_slice(&output.stdout).unwrap()
        };
        let (on_disk, in_s3) = (explain(&local), explain(&remote));
        assert!(in_s3["source"].as_str().unwrap().starts_with("s3://crawl/"));
        assert_eq!(in_s3["text"], on_disk["text"], "{page}");
        assert!(!in_s3["text"].as_str().unwrap().is_empty());
        assert_eq!(in_s3["recomputed"], in_s3["simhash"], "{page}");
    }
}

/// A nightly job (fingerprint, match, cluster, append) with every path in
/// `root` (a directory or an `s3://` prefix), over the sample crawl, under
/// the scheme the sample corpus was made with.
fn nightly_spec(root: &str) -> String {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples/crawl");
    format!(
        "[fingerprint]\ninput = [\"{}\"]\nout = \"{root}/{{date}}/fingerprints\"\nscheme = \"v4\"\n\n\
         [match]\ncorpus = [\"{root}/corpus\"]\nout = \"{root}/{{date}}/pairs\"\nself = true\n\n\
         [cluster]\nout = \"{root}/{{date}}/clusters\"\ncorpus_wins = true\n\n\
         [append]\ncorpus = \"{root}/corpus\"\nbatch = \"{{date}}\"\n",
        samples.join("text.wet.gz").display()
    )
}

#[test]
fn two_nights_of_a_job_in_s3_append_and_match_as_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = Server::s3(&[]);
    // The corpus before neardup ran nightly.
    let base = d.join("base");
    std::fs::create_dir(&base).unwrap();
    let fingerprints =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples/crawl-fingerprints");
    std::fs::copy(
        fingerprints.join("part-00000.parquet"),
        base.join("part-00000.parquet"),
    )
    .unwrap();
    upload(&server, "crawl", &base, "jobs/corpus/base");
    let disk = d.join("disk");
    std::fs::create_dir_all(disk.join("corpus/base")).unwrap();
    std::fs::copy(
        base.join("part-00000.parquet"),
        disk.join("corpus/base/part-00000.parquet"),
    )
    .unwrap();

    for (name, root) in [
        ("disk.toml", disk.display().to_string()),
        ("s3.toml", "s3://crawl/jobs".into()),
    ] {
        std::fs::write(d.join(name), nightly_spec(&root)).unwrap();
        for date in ["2026-11-22", "2026-11-23"] {
            let output = neardup_on(&server)
                .args(["run", &d.join(name).display().to_string(), "--date", date])
                .output()
                .unwrap();
            assert!(succeeded(&output), "{name} {date}");
        }
    }
    let got = d.join("got");
    download(&server, "crawl", "jobs", &got);
    for stage in [
        "2026-11-23/fingerprints",
        "2026-11-23/pairs",
        "2026-11-23/clusters/clusters",
        "2026-11-23/clusters/drop",
        "corpus/2026-11-22",
        "corpus/2026-11-23",
    ] {
        let parts = parts_of(&disk.join(stage));
        assert!(!parts.is_empty(), "{stage}");
        assert_eq!(parts_of(&got.join(stage)), parts, "{stage}");
    }
    assert!(got.join("corpus/2026-11-23/_SUCCESS").exists());
    // The second night ranked the same corpus batches, each named in its
    // store: the base shard (no _SUCCESS: the corpus path), then night 1.
    let batches = |root: &Path, prefix: &str| -> Vec<(String, serde_json::Value)> {
        let summary = root.join("2026-11-23/clusters/_summary.json");
        let summary: serde_json::Value =
            serde_json::from_slice(&std::fs::read(summary).unwrap()).unwrap();
        let listed = summary["corpus_batches"].as_array().unwrap().iter();
        let name = |b: &serde_json::Value| b["batch"].as_str().unwrap().replacen(prefix, "", 1);
        listed
            .map(|b| (name(b), b["latest_fetch_time"].clone()))
            .collect()
    };
    let on_disk = batches(&disk, &disk.display().to_string());
    assert_eq!(on_disk, batches(&got, "s3://crawl/jobs"));
    let names: Vec<&str> = on_disk.iter().map(|b| b.0.as_str()).collect();
    assert_eq!(names, ["/corpus", "/corpus/2026-11-22"]);
    // The second night matched against the first night's batch too.
    let rows = |root: &Path, date: &str| {
        let summary = std::fs::read_to_string(root.join(date).join("pairs/_summary.json")).unwrap();
        serde_json::from_str::<serde_json::Value>(&summary).unwrap()["rows_scanned"].as_u64()
    };
    assert!(rows(&got, "2026-11-23") > rows(&got, "2026-11-22"));

    // Each night's report went into S3, with the marks of the report on
    // disk; a rerun finds it there and skips it.
    let disk_marks = report_marks(&disk.join("2026-11-23/report.html"));
    assert!(disk_marks.len() > 20, "{disk_marks:?}");
    assert_eq!(
        report_marks(&got.join("2026-11-23/report.html")),
        disk_marks
    );
    let again = neardup_on(&server)
        .args(["run", &d.join("s3.toml").display().to_string()])
        .args(["--date", "2026-11-23"])
        .output()
        .unwrap();
    assert!(succeeded(&again));
    let printed = String::from_utf8_lossy(&again.stdout);
    assert!(
        printed.contains("report: skipped, s3://crawl/jobs/2026-11-23/report.html exists"),
        "{printed}"
    );
    // `neardup report` reads nights in S3, a glob standing for both (and
    // not the corpus beside them), and writes its page there.
    let two_nights = |root: &str, out: &str| {
        let output = neardup_on(&server)
            .args(["report", &format!("{root}/2026-11-2?"), "--out", out])
            .output()
            .unwrap();
        assert!(succeeded(&output), "{root}");
    };
    two_nights("s3://crawl/jobs", "s3://crawl/reports/two-nights.html");
    // Written again over itself, but never over an object that is no
    // report: a corpus shard here.
    two_nights("s3://crawl/jobs", "s3://crawl/reports/two-nights.html");
    let shard = "s3://crawl/jobs/corpus/2026-11-22/part-00000.parquet";
    let refused = neardup_on(&server)
        .args(["report", "s3://crawl/jobs/2026-11-23", "--out", shard])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is not a neardup report"), "{stderr}");
    // Nor over a prefix, which an object of its name would hide.
    let refused = neardup_on(&server)
        .args(["report", "s3://crawl/jobs/2026-11-23", "--out"])
        .arg("s3://crawl/jobs/corpus")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("s3://crawl/jobs/corpus: is a prefix holding objects"),
        "{stderr}"
    );
    two_nights(
        &disk.display().to_string(),
        &d.join("two-nights.html").display().to_string(),
    );
    download(&server, "crawl", "reports", &d.join("reports"));
    let trend = report_marks(&d.join("two-nights.html"));
    for night in ["2026-11-22", "2026-11-23"] {
        assert!(
            trend.contains(&format!("data-night=\"{night}\"")),
            "{trend:?}"
        );
    }
    assert_eq!(report_marks(&d.join("reports/two-nights.html")), trend);
    // A page at the bucket's root is a file there too.
    two_nights("s3://crawl/jobs", "s3://crawl/two-nights.html");
    let page = d.join("root.html");
    let status = Command::new(python_with("boto3"))
        .args([
            "-c",
            DOWNLOAD_ONE,
            &server.endpoint(),
            "crawl",
            "two-nights.html",
        ])
        .arg(&page)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(report_marks(&page), trend);
}

/// The `data-*` attributes of the report at `page`, in order: what the
/// outputs hold, without their paths or timings.
fn report_marks(page: &Path) -> Vec<String> {
    let html = std::fs::read_to_string(page).unwrap();
    let mut marks = Vec::new();
    let mut rest = html.as_str();
    while let Some(at) = rest.find(" data-") {
        rest = &rest[at + 1..];
        let open = rest.find('"').unwrap();
        let close = open + 1 + rest[open + 1..].find('"').unwrap();
        marks.push(rest[..=close].to_string());
        rest = &rest[close..];
    }
    // A timing's value differs from run to run: its key stays, its value not.
    let timing = |mark: &String| mark.starts_with("data-key=") && mark.contains("second");
    let timed: Vec<bool> = marks.iter().map(timing).collect();
    let mut kept = Vec::new();
    for (i, mark) in marks.into_iter().enumerate() {
        if !(i > 0 && timed[i - 1] && mark.starts_with("data-value=")) {
            kept.push(mark);
        }
    }
    kept
}

/// Starts `command` slowed by `delay_ms` after each row group it reads,
/// and returns once it has read one: a test can act mid-scan.
fn start_mid_scan(command: &mut Command, delay_ms: &str) -> (Child, StderrLines) {
    let mut child = command
        .env("NEARDUP_TEST_UNIT_DELAY_MS", delay_ms)
        .env(UNIT_READ_LOG.0, UNIT_READ_LOG.1)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = StderrLines::of(&mut child);
    lines.wait_for("unit read");
    (child, lines)
}

/// A job whose outputs are in S3, stopped by SIGTERM in its second
/// stage: the first stage's committed output stays (only the output in
/// progress is removed), and a rerun resumes from it.
#[test]
fn a_job_stopped_mid_stage_keeps_its_committed_stages_in_s3() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = Server::s3(&[]);
    // An empty bucket.
    std::fs::create_dir(d.join("empty")).unwrap();
    upload(&server, "crawl", &d.join("empty"), "empty");
    let (_, corpus) = inputs(d);
    let wet = Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples/crawl/text.wet.gz");
    let spec = d.join("night.toml");
    std::fs::write(
        &spec,
        format!(
            "[fingerprint]\ninput = [\"{}\"]\nout = \"s3://crawl/night/fingerprints\"\n\n\
             [match]\ncorpus = [\"{}\"]\nout = \"s3://crawl/night/pairs\"\n",
            wet.display(),
            corpus.display()
        ),
    )
    .unwrap();
    let mut run = neardup_on(&server);
    run.args(["run", &spec.display().to_string()]);
    let (child, lines) = start_mid_scan(&mut run, "100");
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    let stderr = lines.text_without("unit read");
    assert_eq!(output.status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("stopped by SIGTERM"), "{stderr}");
    let got = d.join("got");
    download(&server, "crawl", "night", &got);
    assert!(got.join("fingerprints/_SUCCESS").exists(), "{stderr}");
    assert!(!part_like(&got.join("fingerprints")).is_empty());
    assert!(
        !got.join("pairs").exists(),
        "the stage in progress is removed"
    );

    let again = neardup_on(&server)
        .args(["run", &spec.display().to_string()])
        .output()
        .unwrap();
    assert!(succeeded(&again));
    let printed = String::from_utf8_lossy(&again.stdout);
    assert!(printed.contains("fingerprint: skipped"), "{printed}");
    assert!(printed.contains("match: matched"), "{printed}");
}

/// Runs `command`, which must fail with one line holding every one of
/// `needles`, and write nothing at `out`.
fn assert_fails_with(mut command: Command, out: &Path, needles: &[&str]) {
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
    assert!(!out.exists(), "{stderr}");
}

#[test]
fn object_store_failures_get_one_line_naming_the_url_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (q, c) = inputs(d);
    let mut server = Server::s3(&[]);
    upload(&server, "crawl", &q, "queries");
    upload(&server, "crawl", &c, "corpus");
    let out = d.join("pairs");
    let out_arg = out.display().to_string();
    let matching_to = |server: &Server, queries: &str, out: &str| {
        let mut command = neardup_on(server);
        command.args(["match", "--self", "--queries", queries, "--out", out]);
        command
    };
    let matching = |server: &Server, queries: &str| matching_to(server, queries, &out_arg);
    assert_fails_with(
        matching(&server, "s3://no-bucket/queries"),
        &out,
        &[
            "s3://no-bucket/queries",
            "NoSuchBucket: The specified bucket does not exist",
        ],
    );
    // An output in a bucket that is not there: said so, not taken for a
    // lock other runs keep taking.
    assert_fails_with(
        matching_to(&server, "s3://crawl/queries", "s3://no-bucket/pairs"),
        &out,
        &[
            "s3://no-bucket/pairs/_neardup-lock: cannot write",
            "NoSuchBucket: The specified bucket does not exist",
        ],
    );
    assert_fails_with(
        matching(&server, "s3://crawl/nothing-here"),
        &out,
        &["s3://crawl/nothing-here: no such object"],
    );
    assert_fails_with(
        matching(&server, "s3://crawl/que*/none-*.parquet"),
        &out,
        &["no objects match this pattern"],
    );

    // Wrong credentials, on a server that checks them.
    let strict = Server::s3(&[("INITIAL_NO_AUTH_ACTION_COUNT", "0")]);
    assert_fails_with(
        matching(&strict, "s3://crawl/queries"),
        &out,
        &["s3://crawl/queries", "403 Forbidden"],
    );

    // The server stops mid-scan: footers were read, row groups are not.
    let mut slow = matching(&server, "s3://crawl/queries");
    slow.args(["--corpus", "s3://crawl/corpus"])
        .env("NEARDUP_TEST_UNIT_DELAY_MS", "50")
        .env(UNIT_READ_LOG.0, UNIT_READ_LOG.1)
        .stderr(Stdio::piped());
    let mut child = slow.spawn().unwrap();
    let mut lines = StderrLines::of(&mut child);
    lines.wait_for("unit read");
    server.stop();
    let output = child.wait_with_output().unwrap();
    let stderr = lines.text_without("unit read");
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("s3://crawl/"), "{stderr}");
    assert!(stderr.contains("cannot read row group"), "{stderr}");
    assert!(!out.exists(), "{stderr}");
}

/// An S3 profile in the files the AWS CLI writes (`~/.aws/credentials`,
/// `~/.aws/config`): `AWS_PROFILE` alone gives the keys, region and
/// endpoint. A profile not there, or one that gets its keys another way,
/// is one line naming it.
#[test]
fn an_aws_profile_in_the_cli_files_gives_keys_region_and_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (q, _) = inputs(d);
    let server = Server::s3(&[]);
    upload(&server, "crawl", &q, "queries");
    let home = d.join("home");
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    std::fs::write(
        home.join(".aws/credentials"),
        "[default]\naws_access_key_id = nobody\naws_secret_access_key = nothing\n\n\
         [crawl]\naws_access_key_id = test\naws_secret_access_key = test\n",
    )
    .unwrap();
    std::fs::write(
        home.join(".aws/config"),
        format!(
            "[profile crawl]\nregion = us-east-1\nendpoint_url = {}\n\n\
             [profile sso]\nsso_session = corp\nregion = us-east-1\n",
            server.endpoint()
        ),
    )
    .unwrap();
    let matching = |profile: &str, out: &Path| {
        s3_match_without_aws_settings(&home, out)
            .env("AWS_PROFILE", profile)
            .output()
            .unwrap()
    };
    let (local, remote) = (d.join("local"), d.join("remote"));
    match_self_locally(&q, &local);
    assert!(succeeded(&matching("crawl", &remote)));
    assert_eq!(parts_of(&remote), parts_of(&local));
    for (profile, said) in [
        ("nightly", "AWS_PROFILE=nightly: no such profile"),
        ("sso", "AWS profile `sso` gets its keys by `sso_session`"),
    ] {
        let out = d.join(profile);
        let output = matching(profile, &out);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(said), "{stderr}");
        assert!(!out.exists());
    }
}

/// `match --self` of `s3://crawl/queries` into `out`, with `home` as HOME
/// and none of the AWS settings of the environment the tests run in: keys,
/// profile, region, endpoint, and the files and roles they name.
fn s3_match_without_aws_settings(home: &Path, out: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_neardup"));
    for name in [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_REGION",
        "AWS_ENDPOINT_URL",
        "AWS_CONFIG_FILE",
        "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ] {
        command.env_remove(name);
    }
    command
        .env("HOME", home)
        .args([
            "match",
            "--self",
            "--queries",
            "s3://crawl/queries",
            "--out",
        ])
        .arg(out);
    command
}

/// With no keys in the environment or the profile files, S3 asks the
/// instance metadata endpoint for a role's; where it fails (a laptop), the
/// one line says which credentials to set, not only the endpoint's address.
#[test]
fn s3_without_credentials_says_what_to_set() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut command = s3_match_without_aws_settings(dir.path(), &out);
    // A closed port: refused at once, where the real address may hang.
    let metadata = format!("http://127.0.0.1:{}", free_port());
    command.env("AWS_METADATA_ENDPOINT", metadata);
    assert_fails_with(
        command,
        &out,
        &[
            "s3://crawl/queries",
            "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE",
        ],
    );
}

/// Azure without an account in the environment or the URL: the one line
/// names the variables to set and the URL forms, not only `object_store`'s
/// "Account must be specified".
#[test]
fn azure_without_an_account_says_what_to_set() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut command = Command::new(env!("CARGO_BIN_EXE_neardup"));
    for (name, _) in std::env::vars().filter(|(name, _)| name.starts_with("AZURE_")) {
        command.env_remove(name);
    }
    command.args([
        "match",
        "--queries",
        "az://crawl/queries",
        "--self",
        "--out",
    ]);
    command.arg(&out);
    assert_fails_with(
        command,
        &out,
        &[
            "az://crawl: cannot set up",
            "Azure reads AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY, or AZURE_STORAGE_CONNECTION_STRING",
        ],
    );
}

/// Puts an empty object at each of `keys`, as a folder's marker.
fn put_empty(server: &Server, bucket: &str, keys: &[&str]) {
    let script = r#"
import sys, boto3
endpoint, bucket, *keys = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
                  aws_secret_access_key="test", region_name="us-east-1")
for key in keys:
    s3.put_object(Bucket=bucket, Key=key, Body=b"")
"#;
    let status = Command::new(python_with("boto3"))
        .args(["-c", script, &server.endpoint(), bucket])
        .args(keys)
        .status()
        .unwrap();
    assert!(status.success());
}

/// An empty object of a prefix's own name, a folder's marker (ADLS Gen2
/// keeps one per directory, S3 tools make them), neither hides the objects
/// under it nor stops an output there; alone, it is named as the input.
#[test]
fn an_empty_object_of_a_prefix_name_is_a_folder_not_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (q, c) = inputs(d);
    let server = Server::s3(&[]);
    upload(&server, "crawl", &q, "queries");
    upload(&server, "crawl", &c, "corpus");
    put_empty(&server, "crawl", &["queries", "corpus", "pairs", "empty"]);
    let matching = |queries: &str, corpus: &str, out: &str| {
        neardup_on(&server)
            .args(["match", "--self", "--parts", "2", "--queries", queries])
            .args(["--corpus", corpus, "--out", out])
            .output()
            .unwrap()
    };
    let local = d.join("local");
    let (q, c) = (q.display().to_string(), c.display().to_string());
    assert!(succeeded(&matching(&q, &c, &local.display().to_string())));
    let output = matching(
        "s3://crawl/queries",
        "s3://crawl/corpus",
        "s3://crawl/pairs",
    );
    assert!(succeeded(&output));
    let remote = d.join("remote");
    download(&server, "crawl", "pairs", &remote);
    assert_eq!(parts_of(&remote), parts_of(&local));
    assert!(remote.join("_SUCCESS").exists());

    let out = d.join("none");
    let output = matching("s3://crawl/empty", &c, &out.display().to_string());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("s3://crawl/empty"), "{stderr}");
    assert!(!out.exists());
}

#[test]
fn http_inputs_are_read_by_byte_ranges_through_transient_errors_with_the_bytes_of_local_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (q, c) = inputs(d);
    // Every fifth request fails with 503: object_store retries them.
    let server = Server::http(d, 5);
    let local = d.join("local");
    let status = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(["match", "--self", "--queries", &q.display().to_string()])
        .args(["--corpus", &c.display().to_string()])
        .args(["--out", &local.display().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let url = |path: &Path| {
        format!(
            "{}/{}",
            server.endpoint(),
            path.strip_prefix(d).unwrap().display()
        )
    };
    let mut command = Command::new(env!("CARGO_BIN_EXE_neardup"));
    command.args(["match", "--self"]);
    for shard in part_like(&q) {
        command.args(["--queries", &url(&shard)]);
    }
    for shard in part_like(&c) {
        command.args(["--corpus", &url(&shard)]);
    }
    let remote = d.join("remote");
    let output = command
        .args(["--out", &remote.display().to_string()])
        .output()
        .unwrap();
    assert!(succeeded(&output));
    assert_eq!(parts_of(&remote), parts_of(&local));

    let missing = format!("{}/queries/none.parquet", server.endpoint());
    let mut command = Command::new(env!("CARGO_BIN_EXE_neardup"));
    command.args(["match", "--self", "--queries", &missing, "--out"]);
    command.arg(d.join("x"));
    assert_fails_with(
        command,
        &d.join("x"),
        &[&format!("{missing}: no such object")],
    );
    let listing = format!("{}/queries/*.parquet", server.endpoint());
    let mut command = Command::new(env!("CARGO_BIN_EXE_neardup"));
    command.args(["match", "--self", "--queries", &listing, "--out"]);
    command.arg(d.join("x"));
    assert_fails_with(command, &d.join("x"), &["cannot be listed"]);
}

/// One run at a time writes an output in S3: a second, started while the
/// first writes, stops on one line naming the lock (both committed parts
/// to one prefix); the lock goes with the first run.
#[test]
fn a_second_writer_of_an_s3_output_is_refused_while_the_first_writes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (q, c) = inputs(d);
    let server = Server::s3(&[]);
    std::fs::create_dir(d.join("empty")).unwrap();
    upload(&server, "crawl", &d.join("empty"), "empty");
    let matching = || {
        let mut command = neardup_on(&server);
        command
            .args([
                "match",
                "--self",
                "--workers",
                "1",
                "--overwrite",
                "--queries",
            ])
            .arg(&q)
            .arg("--corpus")
            .arg(&c)
            .args(["--out", "s3://crawl/night/pairs"]);
        command
    };
    let (mut first, _lines) = start_mid_scan(&mut matching(), "300");
    // A reader meanwhile finds an output not yet complete.
    let reading = |pairs: &str| {
        let out = d.join("clusters");
        neardup_on(&server)
            .args(["cluster", "--pairs", pairs, "--out"])
            .arg(&out)
            .output()
            .unwrap()
    };
    let refused = reading("s3://crawl/night/pairs");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("s3://crawl/night/pairs: a neardup output without _SUCCESS"),
        "{stderr}"
    );
    let second = matching().output().unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("another run (process"), "{stderr}");
    assert!(
        stderr.contains("s3://crawl/night/pairs/_neardup-lock"),
        "{stderr}"
    );
    assert!(first.wait().unwrap().success());
    let got = d.join("got");
    download(&server, "crawl", "night", &got);
    assert!(got.join("pairs/_SUCCESS").exists());
    assert!(
        !got.join("pairs/_neardup-lock").exists(),
        "the lock is gone"
    );
    assert!(!got.join("pairs/_UNFINISHED").exists(), "and its marker");
    assert!(succeeded(&matching().output().unwrap()));

    // A run killed outright (SIGKILL, the OOM killer) cannot remove what
    // it wrote: its marker says it did not finish, and the next run takes
    // over its lock.
    let (mut killed, _lines) = start_mid_scan(&mut matching(), "300");
    killed.kill().unwrap();
    killed.wait().unwrap();
    let refused = reading("s3://crawl/night/pairs");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("without _SUCCESS"), "{stderr}");
    assert!(succeeded(&matching().output().unwrap()));
    assert!(succeeded(&reading("s3://crawl/night/pairs")));
}

/// Sets up moto's IAM for [`a_role_allowed_only_its_output_prefix_writes_the_output`]
/// (`endpoint queries-dir`): its first three requests make an
/// administrator, who makes the bucket, uploads the queries and makes a
/// role allowed to read `queries/` and write `night/pairs/*` only. Prints
/// both roles' keys.
const LIMITED_ROLE: &str = r#"
import json, os, sys, boto3
endpoint, root = sys.argv[1:]
def client(kind, key="test", secret="test"):
    return boto3.client(kind, endpoint_url=endpoint, aws_access_key_id=key,
                        aws_secret_access_key=secret, region_name="us-east-1")
def user(iam, name, statements):
    iam.create_user(UserName=name)
    policy = {"Version": "2012-10-17", "Statement": statements}
    iam.put_user_policy(UserName=name, PolicyName=name, PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName=name)["AccessKey"]
    return key["AccessKeyId"], key["SecretAccessKey"]
admin = user(client("iam"), "admin", [{"Effect": "Allow", "Action": "*", "Resource": "*"}])
s3 = client("s3", *admin)
s3.create_bucket(Bucket="crawl")
for dirpath, _, files in os.walk(root):
    for name in files:
        path = os.path.join(dirpath, name)
        s3.upload_file(path, "crawl", "queries/" + os.path.relpath(path, root))
night = user(client("iam", *admin), "night", [
    {"Effect": "Allow", "Action": "s3:*", "Resource": "arn:aws:s3:::crawl/night/pairs/*"},
    {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::crawl/queries/*"},
    {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::crawl"},
    # moto lets a DeleteObjects request (object_store's delete) through only
    # with this, then checks each key against the bucket's policy; AWS
    # checks each key against the role's.
    {"Effect": "Allow", "Action": "s3:DeleteObject", "Resource": "arn:aws:s3:::crawl"},
])
print(*admin, *night)
"#;

/// Downloads `night/pairs/` into `dir` and prints every key of the bucket
/// (`endpoint key secret dir`).
const FETCH_AS: &str = r#"
import os, sys, boto3
endpoint, key, secret, root = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key,
                  aws_secret_access_key=secret, region_name="us-east-1")
for item in s3.list_objects_v2(Bucket="crawl").get("Contents", []):
    print(item["Key"])
    if item["Key"].startswith("night/pairs/"):
        path = os.path.join(root, os.path.relpath(item["Key"], "night/pairs"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        s3.download_file("crawl", item["Key"], path)
"#;

/// `match --self` of the local `queries` into `out`, the bytes to compare.
fn match_self_locally(queries: &Path, out: &Path) {
    let (queries, out) = (queries.display().to_string(), out.display().to_string());
    run_ok(&["match", "--self", "--queries", &queries, "--out", &out]);
}

/// What a boto3 script (`script args...`) prints; it must succeed.
fn boto3_stdout(script_and_args: &[&str]) -> String {
    let output = Command::new(python_with("boto3"))
        .arg("-c")
        .args(script_and_args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    String::from_utf8(output.stdout).unwrap()
}

/// A role allowed to write only its output's prefix (`night/pairs/*`), as
/// a team's IAM policy grants a nightly job, writes and then overwrites
/// its output there: the run's lock lies inside the prefix, and nothing is
/// written beside it. Checked by moto's IAM, which refuses what AWS would.
#[test]
fn a_role_allowed_only_its_output_prefix_writes_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (q, _) = inputs(d);
    let server = Server::s3(&[("INITIAL_NO_AUTH_ACTION_COUNT", "3")]);
    let endpoint = server.endpoint();
    let keys = boto3_stdout(&[LIMITED_ROLE, &endpoint, &q.display().to_string()]);
    let [admin_key, admin_secret, night_key, night_secret] =
        keys.split_whitespace().collect::<Vec<_>>()[..]
    else {
        panic!("four keys: {keys}")
    };
    let local = d.join("local");
    match_self_locally(&q, &local);
    let matching = |out: &str, extra: &[&str]| {
        neardup_on(&server)
            .env("AWS_ACCESS_KEY_ID", night_key)
            .env("AWS_SECRET_ACCESS_KEY", night_secret)
            .args(["match", "--self", "--queries", "s3://crawl/queries"])
            .args(["--out", out])
            .args(extra)
            .output()
            .unwrap()
    };
    // The role may not write beside its prefix: the server does refuse it.
    let beside = matching("s3://crawl/night/other", &[]);
    let stderr = String::from_utf8_lossy(&beside.stderr);
    assert_eq!(beside.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("403 Forbidden"), "{stderr}");
    assert!(succeeded(&matching("s3://crawl/night/pairs", &[])));
    // The first run removed its lock: the second takes no stale one over.
    let again = matching("s3://crawl/night/pairs", &["--overwrite"]);
    assert!(succeeded(&again));
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(!stderr.contains("lock"), "{stderr}");
    let got = d.join("got");
    let got_arg = got.display().to_string();
    let listed = boto3_stdout(&[FETCH_AS, &endpoint, admin_key, admin_secret, &got_arg]);
    for key in listed.lines() {
        assert!(
            key.starts_with("queries/") || key.starts_with("night/pairs/"),
            "{key}"
        );
    }
    assert!(
        listed.lines().any(|key| key == "night/pairs/_SUCCESS"),
        "{listed}"
    );
    assert!(
        !listed.contains("_neardup-lock"),
        "the lock is gone: {listed}"
    );
    assert_eq!(parts_of(&got), parts_of(&local));
}

/// A shard cut short between its listing and its reading fails the run on
/// one line naming it: the store's shorter answer was a panic in the
/// reader's thread.
#[test]
fn a_shard_cut_while_the_run_reads_fails_on_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (q, c) = inputs(d);
    let server = Server::s3(&[]);
    upload(&server, "crawl", &c, "corpus");
    let mut matching = neardup_on(&server);
    matching
        .args(["match", "--self", "--workers", "1", "--queries"])
        .arg(&q)
        .args(["--corpus", "s3://crawl/corpus", "--out"])
        .arg(d.join("pairs"));
    let (child, lines) = start_mid_scan(&mut matching, "300");
    let last = part_like(&c).pop().unwrap();
    let cut = d.join("cut");
    std::fs::create_dir(&cut).unwrap();
    std::fs::write(cut.join(last.file_name().unwrap()), b"hello\n").unwrap();
    upload(&server, "crawl", &cut, "corpus");
    let output = child.wait_with_output().unwrap();
    let stderr = lines.text_without("unit read");
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    let name = last.file_name().unwrap().to_string_lossy();
    assert!(
        stderr.contains(&format!("s3://crawl/corpus/{name}")),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!d.join("pairs").exists());
}

/// A crawl file whose bytes stop coming midway fails the run on one line:
/// it is not a bad record in a run that commits without the rest.
#[test]
fn a_crawl_file_that_cannot_be_read_to_its_end_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples/crawl/text.wet.gz");
    // Gzip members one after another, past the reader's first 8 MiB window.
    let crawl = std::fs::read(sample).unwrap().repeat(30);
    assert!(crawl.len() > 9 << 20);
    std::fs::write(d.join("big.wet.gz"), &crawl).unwrap();
    let server = Server::http_gone_from(d, 8 << 20);
    let out = d.join("fingerprints");
    let mut command = Command::new(env!("CARGO_BIN_EXE_neardup"));
    command.args(["fingerprint", "--input"]);
    command.arg(format!("{}/big.wet.gz", server.endpoint()));
    command.arg("--out").arg(&out);
    assert_fails_with(command, &out, &["big.wet.gz: cannot read bytes 8388608.."]);
}

/// The shards directly in `dir` (not below), sorted.
fn part_like(dir: &Path) -> Vec<PathBuf> {
    let mut shards: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .collect();
    shards.sort();
    shards
}

/// The Azurite account's well-known key (Azure's documentation publishes it).
const AZURITE_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// Azurite, Azure Blob Storage's emulator (installed by scripts/test.sh
/// into scripts/azurite/), in memory on a loopback port.
fn azurite() -> Server {
    let program = std::env::var_os("NEARDUP_TEST_AZURITE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("scripts/azurite/node_modules/.bin/azurite-blob")
        });
    assert!(
        program.exists(),
        "no Azurite at {} (run scripts/test.sh, which installs it)",
        program.display()
    );
    let port = free_port();
    let mut command = Command::new(program);
    command
        .args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string()])
        .args(["--inMemoryPersistence", "--disableTelemetry", "--loose"])
        .arg("--skipApiVersionCheck");
    Server::start(command, port)
}

/// Runs a Python `script` against Azurite's account with
/// azure-storage-blob, a client other tools use: `blobs` is the account's
/// service client, `args` the script's arguments.
fn azure_client(server: &Server, script: &str, args: &[&str]) {
    let prelude = format!(
        "import os, sys\nfrom azure.storage.blob import BlobServiceClient\n\
         blobs = BlobServiceClient.from_connection_string(\
         'DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={AZURITE_KEY};\
         BlobEndpoint={}/devstoreaccount1;')\n",
        server.endpoint()
    );
    let status = Command::new(python_with("azure.storage.blob"))
        .args(["-c", &format!("{prelude}{script}")])
        .args(args)
        .status()
        .unwrap();
    assert!(status.success());
}

/// The crawl sample through `fingerprint`, `match --self`, `cluster` and
/// `report`, every input and output in Azure Blob Storage (Azurite) as `az://`
/// URLs: what a reader downloads is what the same runs write to disk.
#[test]
fn the_crawl_pipeline_in_azure_blob_storage_writes_the_bytes_of_local_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = azurite();
    azure_client(&server, "blobs.create_container('crawl')", &[]);
    let samples = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data-samples/crawl")
        .display()
        .to_string();
    let run = |root: &str| {
        let steps = [
            vec!["fingerprint", "--input", &samples, "--workers", "2"],
            vec![
                "match",
                "--queries",
                "{root}/fp",
                "--self",
                "--workers",
                "2",
            ],
            vec!["cluster", "--pairs", "{root}/pairs", "--workers", "2"],
            vec!["report", "{root}"],
        ];
        let outs = ["fp", "pairs", "clusters", "report.html"];
        for (step, out) in steps.iter().zip(outs) {
            let args: Vec<String> = step.iter().map(|a| a.replace("{root}", root)).collect();
            let output = Command::new(env!("CARGO_BIN_EXE_neardup"))
                .env("AZURE_STORAGE_USE_EMULATOR", "true")
                .env("AZURITE_BLOB_STORAGE_URL", server.endpoint())
                .args(&args)
                .args(["--out", &format!("{root}/{out}")])
                .output()
                .unwrap();
            assert!(succeeded(&output), "{args:?}");
        }
    };
    let local = d.join("local");
    run(&local.display().to_string());
    run("az://crawl/night");
    // A connection string alone, as the Azure CLI, azcopy and the SDKs
    // take it: account, key and blob endpoint.
    let connection = format!(
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={AZURITE_KEY};\
         BlobEndpoint={}/devstoreaccount1;",
        server.endpoint()
    );
    let output = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .env("AZURE_STORAGE_CONNECTION_STRING", &connection)
        .args([
            "match",
            "--queries",
            "az://crawl/night/fp",
            "--self",
            "--workers",
            "2",
        ])
        .args(["--out", "az://crawl/connected/pairs"])
        .output()
        .unwrap();
    assert!(succeeded(&output));
    let downloaded = d.join("downloaded");
    let script = "
container = blobs.get_container_client('crawl')
for blob in container.list_blobs(name_starts_with=sys.argv[2] + '/'):
    path = os.path.join(sys.argv[1], os.path.relpath(blob.name, sys.argv[2]))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as f:
        f.write(container.download_blob(blob.name).readall())
";
    azure_client(
        &server,
        script,
        &[&downloaded.display().to_string(), "night"],
    );
    let connected = d.join("connected");
    azure_client(
        &server,
        script,
        &[&connected.display().to_string(), "connected"],
    );
    assert_eq!(
        parts_of(&connected.join("pairs")),
        parts_of(&local.join("pairs"))
    );
    for parts in ["fp", "pairs", "clusters/clusters", "clusters/drop"] {
        let (mine, theirs) = (
            parts_of(&local.join(parts)),
            parts_of(&downloaded.join(parts)),
        );
        assert!(!mine.is_empty(), "{parts}");
        assert_eq!(mine, theirs, "{parts}");
    }
    for out in ["fp", "pairs", "clusters"] {
        assert!(downloaded.join(out).join("_SUCCESS").exists(), "{out}");
    }
    // `report` read the night in the container and wrote its page there.
    let local_marks = report_marks(&local.join("report.html"));
    assert!(local_marks.len() > 20, "{local_marks:?}");
    assert_eq!(report_marks(&downloaded.join("report.html")), local_marks);
}

/// `match --verify` on shards in S3 reads B's sketches and F's candidate
/// rows' sketches from the objects (each row group's sketch chunk fetched
/// only where it has a candidate) and writes the bytes of the same run on
/// local files.
#[test]
fn match_verify_reads_sketches_from_s3_with_the_bytes_of_local_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = d.join("data");
    run_ok(&[
        "gen",
        "--out",
        &data.display().to_string(),
        "--queries",
        "2000",
        "--corpus",
        "30000",
        "--shards",
        "3",
        "--plant-rate",
        "0.02",
        "--row-group-rows",
        "4000",
        "--sketch",
    ]);
    let server = Server::s3(&[]);
    upload(&server, "crawl", &data, "gen");
    let verify = |queries: String, corpus: String, out: &Path| {
        let mut command = neardup_on(&server);
        command.args([
            "match",
            "--verify",
            "--self",
            "--parts",
            "2",
            "--workers",
            "2",
        ]);
        let output = command
            .args(["--queries", &queries, "--corpus", &corpus])
            .args(["--out", &out.display().to_string()])
            .output()
            .unwrap();
        assert!(succeeded(&output));
    };
    let (local, remote) = (d.join("local"), d.join("remote"));
    let path = |sub: &str| data.join(sub).display().to_string();
    verify(path("queries"), path("corpus"), &local);
    let url = |sub: &str| format!("s3://crawl/gen/{sub}");
    verify(url("queries"), url("corpus"), &remote);
    let pairs = read_pairs(&local);
    assert!(pairs.len() > 100 && pairs.iter().all(|p| p.wide_distance.is_some()));
    assert_eq!(parts_of(&remote), parts_of(&local));
}
