//! Shared helpers for the end-to-end tests: data builders, a brute-force
//! oracle, and readers for what `match` writes.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use arrow_array::{Array, BooleanArray, Int16Array, Int64Array, Int8Array};
use neardup::io::pairs::Pair;
use neardup::io::parquet::output::{write_fingerprints, write_sketched_fingerprints};
use neardup::io::parquet::Sketch;
use neardup::matching::{run_match, MatchOptions};
use neardup::random::SplitMix64;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

pub type Rows = Vec<(i64, u64)>;

/// Writes `columns` (all nullable) as one Parquet file at `path`.
pub fn write_batch(path: &Path, columns: Vec<(&str, arrow_array::ArrayRef)>) {
    let fields: Vec<arrow_schema::Field> = columns
        .iter()
        .map(|(n, a)| arrow_schema::Field::new(*n, a.data_type().clone(), true))
        .collect();
    let batch = arrow_array::RecordBatch::try_new(
        std::sync::Arc::new(arrow_schema::Schema::new(fields)),
        columns.into_iter().map(|(_, a)| a).collect(),
    )
    .unwrap();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), None)
            .unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

/// Writes rows as a shard with small row groups, so every file has several units.
pub fn write_shard(path: &Path, rows: &[(i64, u64)]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let ids: Vec<i64> = rows.iter().map(|r| r.0).collect();
    let fps: Vec<u64> = rows.iter().map(|r| r.1).collect();
    write_fingerprints(path, &ids, &fps, 97).unwrap();
}

/// Writes rows with their sketches as shards of row groups of
/// `group_rows` rows, split into `shards` files under `dir`.
pub fn write_sketched_shards(
    dir: &Path,
    rows: &[(i64, u64, Sketch)],
    shards: usize,
    group_rows: usize,
) -> Vec<String> {
    let per = rows.len().div_ceil(shards.max(1)).max(1);
    let mut paths = Vec::new();
    for (i, chunk) in rows.chunks(per).enumerate() {
        let path = dir.join(format!("shard-{i:03}.parquet"));
        std::fs::create_dir_all(dir).unwrap();
        let ids: Vec<i64> = chunk.iter().map(|r| r.0).collect();
        let fps: Vec<u64> = chunk.iter().map(|r| r.1).collect();
        let sketches: Vec<Sketch> = chunk.iter().map(|r| r.2).collect();
        write_sketched_fingerprints(&path, &ids, &fps, &sketches, group_rows).unwrap();
        paths.push(path.display().to_string());
    }
    paths
}

/// Writes `rows` split into `shards` files under `dir`.
pub fn write_shards(dir: &Path, rows: &[(i64, u64)], shards: usize) -> Vec<String> {
    let per = rows.len().div_ceil(shards.max(1)).max(1);
    let mut paths = Vec::new();
    for (i, chunk) in rows.chunks(per).enumerate() {
        let path = dir.join(format!("shard-{i:03}.parquet"));
        write_shard(&path, chunk);
        paths.push(path.display().to_string());
    }
    if rows.is_empty() {
        let path = dir.join("shard-000.parquet");
        write_shard(&path, &[]);
        paths.push(path.display().to_string());
    }
    paths
}

/// Every pair within k, by comparing all of them; with `self_join`, a
/// corpus row whose id B also holds is an older version of that page and
/// pairs with nothing (B's row pairs in its place).
pub fn oracle(queries: &[(i64, u64)], corpus: &[(i64, u64)], k: u32, self_join: bool) -> Vec<Pair> {
    let in_b: std::collections::HashSet<i64> = queries.iter().map(|q| q.0).collect();
    let current = |c: &(i64, u64)| !(self_join && in_b.contains(&c.0));
    let mut out = Vec::new();
    let mut consider =
        |(qid, qf): (i64, u64), (cid, cf): (i64, u64), keep: bool, self_pair: bool| {
            let d = (qf ^ cf).count_ones();
            if d <= k && keep {
                out.push(Pair {
                    query_id: qid,
                    corpus_id: cid,
                    query_simhash: qf,
                    corpus_simhash: cf,
                    distance: d as u8,
                    self_pair,
                    wide_distance: None,
                });
            }
        };
    for &q in queries {
        for &c in corpus.iter().filter(|c| current(c)) {
            consider(q, c, q.0 != c.0, false);
        }
        if self_join {
            for &c in queries {
                consider(q, c, q.0 < c.0, true);
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Reads `part-*.parquet` of an output directory in part order.
pub fn read_pairs(dir: &Path) -> Vec<Pair> {
    let mut out = Vec::new();
    for part in part_files(dir) {
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&part).unwrap())
            .unwrap()
            .build()
            .unwrap();
        for batch in reader {
            let batch = batch.unwrap();
            let col = |i: usize| {
                batch
                    .column(i)
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .unwrap()
                    .clone()
            };
            let (q, c, qs, cs) = (col(0), col(1), col(2), col(3));
            let d = batch
                .column(4)
                .as_any()
                .downcast_ref::<Int8Array>()
                .unwrap();
            let s = batch
                .column(5)
                .as_any()
                .downcast_ref::<BooleanArray>()
                .unwrap();
            let wide = (batch.num_columns() > 6).then(|| {
                let column = batch.column(6).as_any();
                column.downcast_ref::<Int16Array>().unwrap().clone()
            });
            for r in 0..batch.num_rows() {
                out.push(Pair {
                    query_id: q.value(r),
                    corpus_id: c.value(r),
                    query_simhash: qs.value(r) as u64,
                    corpus_simhash: cs.value(r) as u64,
                    distance: d.value(r) as u8,
                    self_pair: s.value(r),
                    wide_distance: wide.as_ref().map(|w| w.value(r) as u16),
                });
            }
            assert_eq!(d.null_count(), 0);
        }
    }
    out
}

pub fn part_files(dir: &Path) -> Vec<PathBuf> {
    let mut parts: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("part-")
        })
        .collect();
    parts.sort();
    parts
}

/// Writes `warc_writer.py MODE`'s crawl (written by warcio) into `crawl`,
/// which it creates.
pub fn write_warcio_crawl(mode: &str, crawl: &Path) {
    assert!(
        write_warcio_crawl_of_real_pages(mode, crawl, "its pages"),
        "warc_writer.py {mode}: this machine lacks its pages"
    );
}

/// [`write_warcio_crawl`] of a mode made of real pages this machine may
/// lack (`pages`, as the skip names them): false, having said the test
/// is skipped, when it has none.
pub fn write_warcio_crawl_of_real_pages(mode: &str, crawl: &Path, pages: &str) -> bool {
    std::fs::create_dir_all(crawl).unwrap();
    let helper = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/warc_writer.py");
    let status = std::process::Command::new(python_with("warcio"))
        .arg(&helper)
        .arg(mode)
        .arg(crawl)
        .status()
        .unwrap();
    if status.code() == Some(3) {
        eprintln!("skipped: no {pages} here");
        return false;
    }
    assert!(status.success(), "warc_writer.py {mode}");
    true
}

/// The record batches of the part files in `dir`, in part order.
pub fn parquet_batches(dir: &Path) -> Vec<arrow_array::RecordBatch> {
    let mut batches = Vec::new();
    for part in part_files(dir) {
        let file = std::fs::File::open(&part).unwrap();
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
        batches.extend(reader.map(Result::unwrap));
    }
    batches
}

/// The bytes of every part file under `dir`, in part order.
pub fn part_bytes(dir: &Path) -> Vec<Vec<u8>> {
    part_files(dir)
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect()
}

/// Runs the `neardup` binary with `args`.
pub fn neardup(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(args)
        .output()
        .unwrap()
}

/// Runs the `neardup` binary with `args`, which must succeed; its stdout.
pub fn run_ok(args: &[&str]) -> String {
    let out = neardup(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `match` through the library with real Parquet in and out.
pub fn run(
    dir: &Path,
    queries: &[(i64, u64)],
    corpus: Option<&[(i64, u64)]>,
    k: u32,
    self_join: bool,
    workers: usize,
    parts: usize,
) -> PathBuf {
    let q = write_shards(&dir.join("queries"), queries, 2);
    let c = corpus
        .map(|rows| write_shards(&dir.join("corpus"), rows, 3))
        .unwrap_or_default();
    let out = dir.join(format!("out-k{k}-w{workers}-p{parts}-s{self_join}"));
    let mut opts = MatchOptions::new(q, c, out.clone());
    opts.k = k;
    opts.self_join = self_join;
    opts.runtime.workers = workers;
    opts.parts = parts;
    opts.overwrite = true;
    run_match(&opts).unwrap();
    assert!(out.join("_SUCCESS").exists());
    out
}

/// Random rows with ids starting at `first_id`.
pub fn random_rows(rng: &mut SplitMix64, n: usize, first_id: i64) -> Rows {
    (0..n)
        .map(|i| (first_id + i as i64, rng.next_u64()))
        .collect()
}

/// Corpus rows that copy random queries with exactly `d` bits flipped, for
/// every `d` in `0..=max_d`, plus unrelated rows.
pub fn planted_corpus(
    rng: &mut SplitMix64,
    queries: &Rows,
    per_distance: usize,
    max_d: u32,
    noise: usize,
    first_id: i64,
) -> Rows {
    let mut rows = Vec::new();
    let mut id = first_id;
    for d in 0..=max_d {
        for _ in 0..per_distance {
            let q = queries[rng.below(queries.len() as u64) as usize].1;
            rows.push((id, rng.flip_bits(q, d)));
            id += 1;
        }
    }
    for _ in 0..noise {
        rows.push((id, rng.next_u64()));
        id += 1;
    }
    rows
}

/// `tests/simhash_reference.py`'s `[simhash, n_features, n_chars, sketch]`
/// of each case (`{"text", "features", "log_weights", "keep_stop_words"}`).
pub fn reference_simhashes(cases: &serde_json::Value) -> Vec<(u64, u64, u64, [u64; 3])> {
    use std::io::Write;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/simhash_reference.py");
    let mut child = Command::new(python_with("xxhash"))
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(cases.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The test Python (`.venv/`, installed by `scripts/test.sh`; or
/// `NEARDUP_TEST_PYTHON`), checked to have `module`.
pub fn python_with(module: &str) -> PathBuf {
    let candidate = std::env::var_os("NEARDUP_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python"));
    let ok = Command::new(&candidate)
        .args(["-c", &format!("import {module}")])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        ok,
        "no Python with {module} at {} (run scripts/test.sh, which installs it)",
        candidate.display()
    );
    candidate
}

/// The log filter under which a `match` process logs each unit it reads,
/// and nothing else: a test waits for that line to know the process is
/// mid-scan.
pub const UNIT_READ_LOG: (&str, &str) = ("RUST_LOG", "neardup::unit_read=debug");

/// A child's stderr, read line by line on a thread of its own, so that a
/// test can wait for an event the child logs and still see all it wrote.
pub struct StderrLines {
    lines: std::sync::mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl StderrLines {
    /// Takes `child`'s stderr, which must be piped.
    pub fn of(child: &mut std::process::Child) -> StderrLines {
        use std::io::BufRead;
        let stderr = child.stderr.take().expect("stderr is piped");
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        StderrLines {
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits until a line holding `needle` comes; panics (with what came)
    /// if the child closes its stderr first, or if none comes within a
    /// minute (a hang guard, not a timing check).
    pub fn wait_for(&mut self, needle: &str) {
        let limit = std::time::Duration::from_secs(60);
        loop {
            match self.lines.recv_timeout(limit) {
                Ok(line) => {
                    let found = line.contains(needle);
                    self.seen.push(line);
                    if found {
                        return;
                    }
                }
                Err(error) => panic!(
                    "no line with `{needle}` ({error}); stderr:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    /// Everything the child wrote to stderr (it must have exited), without
    /// the lines holding `unless`.
    pub fn text_without(mut self, unless: &str) -> String {
        self.seen.extend(self.lines.iter());
        let kept: Vec<&str> = self
            .seen
            .iter()
            .map(String::as_str)
            .filter(|line| !line.contains(unless))
            .collect();
        kept.join("\n")
    }
}

/// The JSON a helper command prints; it must succeed.
pub fn json_of(command: &mut Command) -> serde_json::Value {
    let out = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{command:?}: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The `neardup.scheme` key of a shard's Parquet metadata.
pub fn shard_scheme(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).unwrap();
    let reader =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
    let metadata = reader.metadata().file_metadata();
    metadata
        .key_value_metadata()?
        .iter()
        .find(|kv| kv.key == "neardup.scheme")
        .and_then(|kv| kv.value.clone())
}
