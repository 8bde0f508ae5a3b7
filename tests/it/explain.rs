//! `neardup explain` on a warcio-written crawl: the text it prints is the
//! text `fingerprint` hashed (an independent simhash of it equals the
//! stored fingerprint), the distance is the fingerprints', and the word
//! diff rebuilds both texts and names the words that differ.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{neardup, python_with, run_ok, write_warcio_crawl};

/// A crawl of copies written by warcio (`warc_writer.py copies`) and its
/// fingerprints, in `dir`: the fingerprints' directory.
fn fingerprinted_copies(dir: &Path) -> PathBuf {
    let crawl = dir.join("crawl");
    write_warcio_crawl("copies", &crawl);
    let fingerprints = dir.join("fp");
    run_ok(&[
        "fingerprint",
        "--input",
        crawl.to_str().unwrap(),
        "--out",
        fingerprints.to_str().unwrap(),
    ]);
    fingerprints
}

/// A table with its own column names, holding a page fetched twice:
/// `explain` reads the row whose text gives the stored fingerprint, by the
/// columns `fingerprint` recorded beside its shards, or by those given;
/// with neither, one line names the fields it tried and the flags to give.
#[test]
fn explain_finds_a_parquet_pages_row_by_the_columns_fingerprint_was_given() {
    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("pages.parquet");
    let texts = [
        "the first fetch of the page said one thing about rivers and hills",
        "a page about something else entirely, with its own long sentence",
        "the second fetch of the page said another thing about lakes and woods",
    ];
    let batch = RecordBatch::try_from_iter([
        ("doc", Arc::new(Int64Array::from(vec![7, 8, 7])) as ArrayRef),
        ("body", Arc::new(StringArray::from(texts.to_vec()))),
    ])
    .unwrap();
    let file = std::fs::File::create(&table).unwrap();
    let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let shards = dir.path().join("fp").display().to_string();
    let table = table.display().to_string();
    let fields = ["--id-field", "doc", "--text-field", "body"];
    run_ok(
        &[
            &["fingerprint", "--input", &table, "--out", &shards][..],
            &fields,
        ]
        .concat(),
    );
    // The stored row of page 7 nearest page 8 is one of its two fetches;
    // the text read back is the one that gives it.
    let explain = |extra: &[&str]| {
        neardup(
            &[
                &["explain", "7", "8", "--fingerprints", &shards, "--json"][..],
                extra,
            ]
            .concat(),
        )
    };
    let explained = |extra: &[&str]| {
        let output = explain(extra);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{extra:?}: {stderr}");
        let json: Value = serde_json::from_slice(&output.stdout).unwrap();
        let (a, b) = (&json["a"], &json["b"]);
        assert!(
            [texts[0], texts[2]].contains(&a["text"].as_str().unwrap()),
            "{a}"
        );
        assert_eq!(b["text"], texts[1]);
        for page in [a, b] {
            assert_eq!(page["recomputed"], page["simhash"], "{page}");
        }
    };
    explained(&fields);
    explained(&[]);
    let refused = |extra: &[&str], tried: &str| {
        let output = explain(extra);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("pages.parquet"), "{stderr}");
        assert!(stderr.contains(tried), "{stderr}");
    };
    refused(
        &["--text-field", "text"],
        "no text column `text` (--text-field)",
    );
    // Shards copied without their summary: the defaults, each missing
    // column named at once, then the flags.
    std::fs::remove_file(dir.path().join("fp/_summary.json")).unwrap();
    refused(
        &[],
        "no text column `text` (--text-field); neither an id column `id` nor a url column `url` (--id-field, --url-field)",
    );
    explained(&fields);
}

/// A JSONL.gz page is read by the text field `fingerprint` recorded; a
/// field named wrongly finds no record, and the line names the fields tried.
#[test]
fn explain_reads_jsonl_by_the_recorded_text_field_and_names_a_wrong_one() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("pages.jsonl.gz");
    let text = "a page whose text is in a field of its own name, long enough to hash";
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    writeln!(gz, "{}", serde_json::json!({"id": 7, "body": text})).unwrap();
    std::fs::write(&input, gz.finish().unwrap()).unwrap();
    let shards = dir.path().join("fp").display().to_string();
    let input = input.display().to_string();
    run_ok(&[
        "fingerprint",
        "--input",
        &input,
        "--text-field",
        "body",
        "--out",
        &shards,
    ]);
    let explain = |extra: &[&str]| {
        let args = [
            &["explain", "--text", "7", "--fingerprints", &shards][..],
            extra,
        ]
        .concat();
        neardup(&args)
    };
    let output = explain(&[]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), text);
    // A shard named from its own directory finds the summary beside it.
    let output = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .current_dir(&shards)
        .args([
            "explain",
            "--text",
            "7",
            "--fingerprints",
            "part-00000.parquet",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), text);
    let output = explain(&["--text-field", "text"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("by id field `id`, url field `url` and text field `text`: give --id-field, --url-field and --text-field"),
        "{stderr}"
    );
}

/// A crawl fingerprinted from its own directory by a relative path is
/// explained from any other: the source is found from above the shard.
#[test]
fn a_crawl_fingerprinted_by_a_relative_path_is_explained_from_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    write_warcio_crawl("copies", &dir.path().join("night/crawl"));
    let binary = env!("CARGO_BIN_EXE_neardup");
    let fingerprinted = Command::new(binary)
        .current_dir(dir.path().join("night"))
        .args(["fingerprint", "--input", "./crawl/../crawl", "--out", "fp"])
        .output()
        .unwrap();
    assert!(fingerprinted.status.success(), "{fingerprinted:?}");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let fp = dir.path().join("night/fp");
    // From elsewhere, and from inside the shards' directory with the
    // shards named relative to it (the night's root is above, not in,
    // the relative path).
    for (from, shards) in [(elsewhere, fp.clone()), (fp, ".".into())] {
        let explained = Command::new(binary)
            .current_dir(&from)
            .args(["explain", "https://licences.example.org/apache-2.0"])
            .args([
                "https://licences.example.org/archive/2024/apache-2.0",
                "--json",
            ])
            .arg("--fingerprints")
            .arg(&shards)
            .output()
            .unwrap();
        assert!(explained.status.success(), "{from:?}: {explained:?}");
        let json: Value = serde_json::from_slice(&explained.stdout).unwrap();
        for page in [&json["a"], &json["b"]] {
            assert_eq!(page["source"], "./crawl/../crawl/copies.warc.gz");
            let text = page["text"].as_str().unwrap();
            assert!(text.contains("Apache License"), "{text}");
        }
    }
    // An id given as its unsigned value (as xxhash prints it) is the page
    // of those 64 bits: the archived copy's id is negative.
    let id =
        neardup::fingerprint::crawl::url_id("https://licences.example.org/archive/2024/apache-2.0");
    assert!(id < 0);
    let unsigned = (id as u64).to_string();
    let by_unsigned = run_ok(&[
        "explain",
        &unsigned,
        "https://licences.example.org/apache-2.0",
        "--json",
        "--fingerprints",
        dir.path().join("night/fp").to_str().unwrap(),
    ]);
    let json: Value = serde_json::from_str(&by_unsigned).unwrap();
    assert_eq!(json["a"]["id"], id, "{json}");
}

/// `simhash_reference.py`'s fingerprint of `text` under the default
/// scheme (character 5-grams, log weights, for text without Han).
fn reference_simhash(text: &str) -> u64 {
    let case = serde_json::json!([{"text": text, "features": "script", "log_weights": false, "keep_stop_words": false}]);
    crate::common::reference_simhashes(&case)[0].0
}

fn hex(value: &Value) -> u64 {
    u64::from_str_radix(value.as_str().unwrap(), 16).unwrap()
}

#[test]
fn explain_prints_the_hashed_texts_their_distance_and_the_changed_words() {
    let dir = tempfile::tempdir().unwrap();
    let fingerprints = fingerprinted_copies(dir.path());
    let fp = fingerprints.to_str().unwrap();
    // Two copies of one licence: the second has a paragraph more.
    let (same, more) = (
        "https://licences.example.org/archive/2024/apache-2.0",
        "https://licences.example.org/apache-2.0",
    );
    let json: Value = serde_json::from_str(&run_ok(&[
        "explain",
        same,
        more,
        "--fingerprints",
        fp,
        "--json",
    ]))
    .unwrap();
    let (a, b) = (&json["a"], &json["b"]);
    assert_eq!(a["url"], same);
    assert_eq!(b["url"], more);
    for page in [a, b] {
        let text = page["text"].as_str().unwrap();
        assert!(text.contains("Apache License"), "{text}");
        assert_eq!(hex(&page["simhash"]), hex(&page["recomputed"]));
        assert_eq!(reference_simhash(text), hex(&page["simhash"]));
    }
    let (fa, fb) = (hex(&a["simhash"]), hex(&b["simhash"]));
    assert_eq!(json["distance"], (fa ^ fb).count_ones());
    assert!(json["distance"].as_u64().unwrap() > 0);
    // The shards have sketches (v7 on): the wide distance is what `match --verify`
    // gives the same pair.
    let pairs = dir.path().join("verified");
    run_ok(&[
        "match",
        "--queries",
        fp,
        "--self",
        "--verify",
        "-k",
        "10",
        "--verify-threshold",
        "256",
        "--out",
        pairs.to_str().unwrap(),
    ]);
    let ids = [a["id"].as_i64().unwrap(), b["id"].as_i64().unwrap()];
    let verified = crate::common::read_pairs(&pairs)
        .into_iter()
        .find(|p| ids.contains(&p.query_id) && ids.contains(&p.corpus_id))
        .expect("the pair within k = 10");
    let wide = verified.wide_distance.unwrap();
    assert_eq!(json["wide_distance"], u64::from(wide));
    assert!(u64::from(wide) > json["distance"].as_u64().unwrap());
    let bits: Vec<u64> = json["differing_bits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_u64().unwrap())
        .collect();
    assert_eq!(bits.iter().fold(0u64, |w, &b| w | 1 << b), fa ^ fb);

    // The diff rebuilds both texts, and what it inserts is the paragraph
    // the second copy has more.
    let parts = json["diff"].as_array().unwrap();
    let rebuilt = |skip: &str| -> String {
        parts
            .iter()
            .filter(|p| p["op"] != skip)
            .map(|p| p["text"].as_str().unwrap())
            .collect()
    };
    assert_eq!(rebuilt("insert"), a["text"].as_str().unwrap());
    assert_eq!(rebuilt("delete"), b["text"].as_str().unwrap());
    let inserted: String = parts
        .iter()
        .filter(|p| p["op"] == "insert")
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert!(
        inserted.contains("Share this page with a friend."),
        "{inserted:?}"
    );
    assert!(parts.iter().all(|p| p["op"] != "delete"));

    // The features shown push only differing bits, and are character
    // 5-grams the second text has more often: counts checked against the
    // texts (ASCII here: lower case, whitespace runs one space).
    let normalized = |page: &Value| -> String {
        let text = page["text"].as_str().unwrap().to_lowercase();
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let (text_a, text_b) = (normalized(a), normalized(b));
    let occurrences = |text: &str, gram: &str| {
        (0..text.len())
            .filter(|&i| text[i..].starts_with(gram))
            .count() as u64
    };
    let features = json["top_features"].as_array().unwrap();
    assert!(!features.is_empty());
    for f in features {
        let gram = f["feature"].as_str().unwrap();
        assert!(f["bits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|b| bits.contains(&b.as_u64().unwrap())));
        assert_eq!(
            f["count_a"].as_u64().unwrap(),
            occurrences(&text_a, gram),
            "{f}"
        );
        assert_eq!(
            f["count_b"].as_u64().unwrap(),
            occurrences(&text_b, gram),
            "{f}"
        );
        assert!(f["count_b"].as_u64() > f["count_a"].as_u64(), "{f}");
    }

    // The text view: each page's text alone, as the JSON has it; and the
    // plain view names both URLs and marks the insertion.
    let text = run_ok(&["explain", "--text", more, "--fingerprints", fp]);
    assert_eq!(text.trim_end_matches('\n'), b["text"].as_str().unwrap());
    let by_id = run_ok(&[
        "explain",
        "--text",
        &b["id"].to_string(),
        "--fingerprints",
        fp,
    ]);
    assert_eq!(by_id, text);
    let plain = run_ok(&["explain", same, more, "--fingerprints", fp]);
    assert!(plain.contains(same) && plain.contains(more), "{plain}");
    // Into `| head`, which stops reading: quietly, with success.
    crate::cli::succeeds_into_a_closed_pipe(Command::new(env!("CARGO_BIN_EXE_neardup")).args([
        "explain",
        same,
        more,
        "--fingerprints",
        fp,
    ]));
    assert!(
        plain.contains("{+Share this page with a friend.+}"),
        "{plain}"
    );
    assert!(!plain.contains('\x1b'), "no colour in a pipe");
    let wide = format!("wide distance: {} of 256 bits", json["wide_distance"]);
    assert!(plain.contains(&wide), "{plain}");
}

/// DuckDB's answer to `sql` (its first value, as Python prints it; nothing
/// for a statement), `{path}` in it standing for `path`.
fn duckdb_on(path: &Path, sql: &str) -> String {
    let script = "import sys, duckdb\n\
                  r = duckdb.sql(sys.argv[1].replace('{path}', sys.argv[2]))\n\
                  if r is not None: print(r.fetchone()[0])";
    let out = Command::new(python_with("duckdb"))
        .args(["-c", script, sql, path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn explain_refuses_bad_input_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let fingerprints = fingerprinted_copies(dir.path());
    let fp = fingerprints.to_str().unwrap();
    let one_error = |args: &[&str], names: &str| {
        let out = neardup(args);
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{stderr}");
        assert!(lines[0].contains(names), "{stderr}");
        assert!(out.stdout.is_empty());
    };
    // An id in no shard.
    one_error(
        &["explain", "--text", "12345", "--fingerprints", fp],
        "12345: no page with this id or URL",
    );
    // One page twice (by its id and its URL): nothing to compare.
    one_error(
        &[
            "explain",
            "https://licences.example.org/apache-2.0",
            &neardup::fingerprint::crawl::url_id("https://licences.example.org/apache-2.0")
                .to_string(),
            "--fingerprints",
            fp,
        ],
        "are the same row of one page",
    );
    // A cluster's output, which has ids but no fingerprints: the file is
    // named, not one of its rows.
    let drops = dir.path().join("drop.parquet");
    duckdb_on(
        &drops,
        "copy (select 12345::bigint id, 1::bigint keep_id) to '{path}'",
    );
    one_error(
        &[
            "explain",
            "12345",
            "1",
            "--fingerprints",
            drops.to_str().unwrap(),
        ],
        "no column `simhash` (columns: id, keep_id), which --fingerprints must have",
    );
    // A missing shard directory.
    let missing = dir.path().join("nowhere");
    one_error(
        &[
            "explain",
            "--text",
            "1",
            "--fingerprints",
            missing.to_str().unwrap(),
        ],
        "nowhere",
    );
    // Shards with no `source` (as `gen` writes them).
    let generated = dir.path().join("gen");
    run_ok(&[
        "gen",
        "--out",
        generated.to_str().unwrap(),
        "--queries",
        "10",
        "--corpus",
        "10",
    ]);
    let queries = generated.join("queries");
    let first: Value = duckdb_on(&queries, "select id from '{path}/*.parquet' limit 1")
        .parse()
        .unwrap();
    one_error(
        &[
            "explain",
            "--text",
            &first.to_string(),
            "--fingerprints",
            queries.to_str().unwrap(),
        ],
        "no `source`, `offset` and `length`",
    );
    // The record's file cut short since: the error gives its size.
    let crawl: Vec<PathBuf> = std::fs::read_dir(dir.path().join("crawl"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(crawl.len(), 1, "{crawl:?}");
    let kept = std::fs::read(&crawl[0]).unwrap();
    std::fs::write(&crawl[0], &kept[..100]).unwrap();
    let apache = [
        "explain",
        "--text",
        "https://licences.example.org/apache-2.0",
        "--fingerprints",
        fp,
    ];
    one_error(&apache, "run past its end (100 bytes)");
    // The record's file gone since.
    std::fs::remove_dir_all(dir.path().join("crawl")).unwrap();
    one_error(&apache, "copies.warc.gz");
}
