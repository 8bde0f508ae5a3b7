//! Inputs Apache Spark wrote (`tests/fixtures/spark`, see its README), as a
//! crawl team's Spark jobs write them: INT96 timestamps, Spark's default,
//! and pairs from a self-join, which carry no `self_pair`.

use std::collections::BTreeMap;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, TimestampMicrosecondType};

use crate::common::{parquet_batches, run_ok};

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/spark")
        .join(name)
        .display()
        .to_string()
}

/// `drop/`'s rows of a cluster output: dropped id to the id kept for it
/// and the key it won by.
fn drops(out: &Path) -> BTreeMap<i64, (i64, String)> {
    let mut rows = BTreeMap::new();
    for batch in parquet_batches(&out.join("drop")) {
        let column = |name: &str| batch.column(batch.schema().index_of(name).unwrap()).clone();
        let (ids, keeps, keys) = (column("id"), column("keep_id"), column("kept_by"));
        for r in 0..batch.num_rows() {
            let key = keys.as_string::<i32>().value(r).to_string();
            rows.insert(
                ids.as_primitive::<Int64Type>().value(r),
                (keeps.as_primitive::<Int64Type>().value(r), key),
            );
        }
    }
    rows
}

fn cluster(pairs: &str, pages: &str, keep_by: Option<&str>, out: &Path) -> String {
    let out_arg = out.display().to_string();
    let mut args = vec![
        "cluster", "--pairs", pairs, "--pages", pages, "--out", &out_arg,
    ];
    args.extend(keep_by.iter().flat_map(|keys| ["--keep-by", keys]));
    run_ok(&args)
}

/// INT96 fetch times of 1600 and 9999 rank as those years, as the same
/// times written as TIMESTAMP_MICROS do: read as nanoseconds in an i64
/// they wrapped around, and the later page was kept as the earliest.
#[test]
fn int96_times_outside_the_nanosecond_range_rank_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let pairs = fixture("pairs-int96.parquet");
    let expected: BTreeMap<i64, (i64, String)> = [(1, 2), (4, 3), (6, 5)]
        .into_iter()
        .map(|(id, keep)| (id, (keep, "earliest".to_string())))
        .collect();
    for pages in ["pages-int96.parquet", "pages-micros.parquet"] {
        let out = dir.path().join(pages);
        cluster(&pairs, &fixture(pages), Some("earliest"), &out);
        assert_eq!(drops(&out), expected, "{pages}");
    }
}

/// `fingerprint --time-field` on an INT96 column writes each fetch time
/// exactly, 1600 and 9999 among them.
#[test]
fn fingerprint_keeps_int96_fetch_times_of_any_year() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("shards");
    let input = fixture("text-int96.parquet");
    let out_arg = out.display().to_string();
    run_ok(&[
        "fingerprint",
        "--input",
        &input,
        "--time-field",
        "fetch_time",
        "--out",
        &out_arg,
    ]);
    let mut times = BTreeMap::new();
    for batch in parquet_batches(&out) {
        let column = |name: &str| batch.column(batch.schema().index_of(name).unwrap()).clone();
        let (urls, fetched) = (column("url"), column("fetch_time"));
        for r in 0..batch.num_rows() {
            let url = urls.as_string::<i32>().value(r).to_string();
            times.insert(
                url,
                fetched.as_primitive::<TimestampMicrosecondType>().value(r),
            );
        }
    }
    let expected: BTreeMap<String, i64> = [
        ("https://t.example/1", -11_676_096_000_000_000),
        ("https://t.example/2", 253_402_300_799_000_000),
        ("https://t.example/3", 1_796_126_400_000_000),
    ]
    .into_iter()
    .map(|(url, micros)| (url.to_string(), micros))
    .collect();
    assert_eq!(times, expected);
}

/// Pairs from a Spark self-join (no `self_pair`, a pair listed both ways
/// and a page paired with itself) under the default keep order: its
/// `corpus` key is left out (the pairs cannot tell corpus pages) and the
/// rest rank the pages; asked for, `corpus` is still refused.
#[test]
fn pairs_a_spark_join_made_take_the_default_order_without_its_corpus_key() {
    let dir = tempfile::tempdir().unwrap();
    let (pairs, pages) = (
        fixture("pairs-joined.parquet"),
        fixture("pages-joined.parquet"),
    );
    let out = dir.path().join("default");
    cluster(&pairs, &pages, None, &out);
    // Page 2's URL is canonical (no query string); page 4 has neither URL
    // nor time, and ranks last.
    let expected: BTreeMap<i64, (i64, String)> =
        [(1, (2, "canonical-url")), (4, (3, "canonical-url"))]
            .into_iter()
            .map(|(id, (keep, key))| (id, (keep, key.to_string())))
            .collect();
    assert_eq!(drops(&out), expected);
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("_summary.json")).unwrap()).unwrap();
    assert_eq!(
        summary["keep_by"],
        serde_json::json!(["rel-canonical", "canonical-url", "earliest"])
    );
    let asked = crate::common::neardup(&[
        "cluster",
        "--pairs",
        &pairs,
        "--pages",
        &pages,
        "--keep-by",
        "corpus,earliest",
        "--out",
        &dir.path().join("asked").display().to_string(),
    ]);
    let stderr = String::from_utf8_lossy(&asked.stderr);
    assert!(!asked.status.success());
    assert!(stderr.contains("no column `self_pair`"), "{stderr}");
}

/// A page fingerprinted from Parquet has no byte range of its own:
/// `explain` reads its table back whole, for the page's row, and prints
/// the text Spark wrote, which gives the stored fingerprint.
#[test]
fn explain_reads_a_page_from_parquet_input_back_from_its_table() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("shards").display().to_string();
    let input = fixture("text-int96.parquet");
    run_ok(&["fingerprint", "--input", &input, "--out", &out]);
    let json: serde_json::Value = serde_json::from_str(&run_ok(&[
        "explain",
        "https://t.example/1",
        "3",
        "--fingerprints",
        &out,
        "--json",
    ]))
    .unwrap();
    for (page, text) in [
        (&json["a"], "hello world this is a page about things"),
        (&json["b"], "third page is here with words"),
    ] {
        assert_eq!(page["text"], text, "{page}");
        assert_eq!(page["recomputed"], page["simhash"], "{page}");
    }
    let text = run_ok(&["explain", "1", "3", "--fingerprints", &out]);
    let read_whole = format!("record {input} (read whole: no byte range of its own)");
    assert_eq!(text.matches(&read_whole).count(), 2, "{text}");
}
