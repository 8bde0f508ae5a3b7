//! Mutation fuzzing of every reader, end to end: real WARC, WET, JSONL,
//! fingerprint shards and pair files, corrupted by a seeded mutator (bits
//! flipped, bytes overwritten, chunks cut, repeated or inserted, the file
//! truncated), each fed to the command that reads it. Whatever the damage,
//! the run must not panic, must exit 0 or 1, and must leave no `_SUCCESS`
//! (nor an output directory) when it fails. Bounded by a fixed number of
//! cases per format, so every format is tested on any machine.
//!
//! The coverage-guided targets for the WARC and HTML readers are in
//! `tests/cargo-fuzz/` (`cargo fuzz`, not run here).

use crate::common::neardup;
use neardup::random::SplitMix64;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Mutated inputs per text format (a `fingerprint` run each).
const TEXT_CASES: usize = 100;
/// Mutated inputs per Parquet format (a `match` or `cluster` run each, whose
/// dataflow takes longer to start).
const PARQUET_CASES: usize = 60;

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data-samples")
        .join(name)
}

/// The records of a gzipped WARC or WET sample, decompressed, up to the
/// `records`-th record: small enough that a case runs in milliseconds.
fn first_records(name: &str, records: usize) -> Vec<u8> {
    let mut text = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(sample(name)).unwrap())
        .read_to_end(&mut text)
        .unwrap();
    let starts: Vec<usize> = text
        .windows(8)
        .enumerate()
        .filter(|(_, w)| w == b"WARC/1.0" || w == b"WARC/1.1")
        .map(|(at, _)| at)
        .collect();
    let end = starts.get(records).copied().unwrap_or(text.len());
    text.truncate(end);
    text
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// One to four random edits of `bytes`.
fn mutate(rng: &mut SplitMix64, bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let mut below = |n: usize| (rng.next_u64() % n.max(1) as u64) as usize;
    for _ in 0..1 + below(4) {
        let len = out.len().max(1);
        match below(7) {
            0 => {
                let at = below(len);
                if let Some(b) = out.get_mut(at) {
                    *b ^= 1 << below(8);
                }
            }
            1 => {
                let at = below(len);
                let value = below(256) as u8;
                if let Some(b) = out.get_mut(at) {
                    *b = value;
                }
            }
            2 => out.truncate(below(len)),
            3 => {
                let (from, n) = (below(len), below(256));
                let end = (from + n).min(out.len());
                out.drain(from.min(end)..end);
            }
            4 => {
                let (from, n) = (below(len), 1 + below(512));
                let end = (from + n).min(out.len());
                let chunk = out[from.min(end)..end].to_vec();
                let at = below(len).min(out.len());
                out.splice(at..at, chunk);
            }
            5 => {
                let at = below(len).min(out.len());
                let noise: Vec<u8> = (0..1 + below(64)).map(|_| below(256) as u8).collect();
                out.splice(at..at, noise);
            }
            _ => {
                // Bytes that matter to the parsers: digits (lengths),
                // newlines, quotes, braces, NUL, 0xFF.
                let at = below(len);
                let value = b"0123456789\r\n\"{}:\0\xff"[below(18)];
                if let Some(b) = out.get_mut(at) {
                    *b = value;
                }
            }
        }
    }
    out
}

/// A format's seed file and the command that reads a mutated copy of it.
struct Target {
    name: &'static str,
    /// The file name the mutated copy gets (the format comes from it).
    file: &'static str,
    seed: Vec<u8>,
    /// How many mutated copies are run.
    cases: usize,
    /// Whether to gzip the mutated bytes (so the parser, not only gunzip,
    /// sees the damage).
    gzip_after: bool,
    /// The command's arguments for an input file and an output directory.
    args: fn(&str, &str) -> Vec<String>,
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

fn fingerprint_args(input: &str, out: &str) -> Vec<String> {
    strings(&["fingerprint", "--input", input, "--out", out])
}

fn targets(dir: &Path) -> Vec<Target> {
    let warc = first_records("crawl/pages.warc.gz", 12);
    let wet = first_records("crawl/text.wet.gz", 12);
    let jsonl: String = String::from_utf8_lossy(&wet)
        .split("WARC/1.0")
        .enumerate()
        .map(|(i, record)| {
            let text: String = record.chars().take(2000).collect();
            format!("{}\n", serde_json::json!({"id": i, "text": text}))
        })
        .collect();
    let shard = std::fs::read(sample("crawl-fingerprints/part-00000.parquet")).unwrap();
    // Pairs as `match` writes them, from the sample's fingerprints.
    let pairs_dir = dir.join("seed-pairs");
    let fingerprints = sample("crawl-fingerprints").display().to_string();
    let made = neardup(&[
        "match",
        "--queries",
        &fingerprints,
        "--self",
        "--out",
        pairs_dir.to_str().unwrap(),
    ]);
    assert!(made.status.success(), "{made:?}");
    let pairs = std::fs::read(pairs_dir.join("part-00000.parquet")).unwrap();
    let whole_gz = std::fs::read(sample("crawl/pages.warc.gz")).unwrap();
    vec![
        Target {
            name: "WARC",
            file: "input.warc",
            seed: warc.clone(),
            cases: TEXT_CASES,
            gzip_after: false,
            args: fingerprint_args,
        },
        Target {
            name: "WARC, gzipped after the damage",
            file: "input.warc.gz",
            seed: warc,
            cases: TEXT_CASES,
            gzip_after: true,
            args: fingerprint_args,
        },
        Target {
            name: "gzipped WARC, damaged compressed",
            file: "input.warc.gz",
            seed: whole_gz[..whole_gz.len().min(60_000)].to_vec(),
            cases: TEXT_CASES,
            gzip_after: false,
            args: fingerprint_args,
        },
        Target {
            name: "WET",
            file: "input.wet",
            seed: wet,
            cases: TEXT_CASES,
            gzip_after: false,
            args: fingerprint_args,
        },
        Target {
            name: "JSONL",
            file: "input.jsonl",
            seed: jsonl.into_bytes(),
            cases: TEXT_CASES,
            gzip_after: false,
            args: fingerprint_args,
        },
        Target {
            name: "fingerprint shard",
            file: "input.parquet",
            seed: shard,
            cases: PARQUET_CASES,
            gzip_after: false,
            args: |input, out| strings(&["match", "--queries", input, "--self", "--out", out]),
        },
        Target {
            name: "pair file",
            file: "input.parquet",
            seed: pairs,
            cases: PARQUET_CASES,
            gzip_after: false,
            args: |input, out| strings(&["cluster", "--pairs", input, "--out", out]),
        },
    ]
}

#[test]
fn mutated_inputs_never_panic_and_failures_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64::new(0x5eed);
    let mut ran = 0;
    for target in targets(dir.path()) {
        let (mut failed, mut bad_records) = (0, 0);
        for case in 0..target.cases {
            let mut bytes = mutate(&mut rng, &target.seed);
            if target.gzip_after {
                bytes = gzip(&bytes);
            }
            let case_dir = dir.path().join(format!("case-{ran}"));
            std::fs::create_dir_all(&case_dir).unwrap();
            let input = case_dir.join(target.file);
            std::fs::write(&input, &bytes).unwrap();
            let out = case_dir.join("out");
            let args = (target.args)(input.to_str().unwrap(), out.to_str().unwrap());
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let output = neardup(&args);
            let stderr = String::from_utf8_lossy(&output.stderr);
            let code = output.status.code();
            // A failing case's input is kept outside the test's directory.
            let kept = std::env::temp_dir().join(format!("neardup-fuzz-{ran}-{}", target.file));
            let context = || {
                let _ = std::fs::copy(&input, &kept);
                format!(
                    "{} case {case} (input kept at {}): {stderr}",
                    target.name,
                    kept.display()
                )
            };
            assert!(!stderr.contains("panicked"), "panic: {}", context());
            assert!(
                matches!(code, Some(0) | Some(1)),
                "exit {code:?}: {}",
                context()
            );
            if code == Some(1) {
                failed += 1;
                assert!(
                    !out.join("_SUCCESS").exists(),
                    "_SUCCESS after a failure: {}",
                    context()
                );
                assert!(!out.exists(), "a failed run left its output: {}", context());
                let errors = stderr.lines().filter(|l| l.starts_with("error:")).count();
                assert_eq!(errors, 1, "one error line: {}", context());
            } else {
                assert!(out.join("_SUCCESS").exists(), "{}", context());
                let summary = std::fs::read_to_string(out.join("_summary.json")).unwrap();
                let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
                bad_records += summary["bad_records"].as_u64().unwrap_or(0);
            }
            std::fs::remove_dir_all(&case_dir).unwrap();
            ran += 1;
        }
        eprintln!(
            "{}: {failed} of {} refused with one line, the rest read ({bad_records} bad records counted)",
            target.name, target.cases
        );
        // The damage reaches the parsers: some runs fail, or count bad records.
        assert!(
            failed + bad_records > 0,
            "{}: no case was damaged",
            target.name
        );
    }
}
