//! `neardup fingerprint` end to end: WARC and WET files written by another
//! tool (warcio) are read record for record, the shards are read back by
//! DuckDB, each page's record is found again by a plain ranged read of the
//! range its row gives, broken records are reported without stopping the
//! file, and bad input gets one clear line.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, TimestampMicrosecondType};
use arrow_array::{
    Array, ArrayRef, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray,
    TimestampNanosecondArray,
};
use arrow_schema::{DataType, TimeUnit};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;

use crate::common::*;
use neardup::fingerprint::crawl::html::{self, MainRules, PageText};
use neardup::fingerprint::crawl::url_id;
use neardup::fingerprint::scheme::Scheme;
use neardup::fingerprint::simhash::{
    fingerprint, fingerprint_page, fingerprint_with, Features, SimhashOptions,
};
use serde_json::Value;

fn helper() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/warc_writer.py")
        .display()
        .to_string()
}

/// `neardup fingerprint --input INPUT --out OUT` with `extra` flags.
fn fingerprint_into(input: &Path, out: &Path, extra: &[&str]) {
    let (input, out) = (input.to_str().unwrap(), out.to_str().unwrap());
    run_ok(&[&["fingerprint", "--input", input, "--out", out], extra].concat());
}

/// Writes the warcio sample into `dir/crawl` and returns its manifest.
fn write_sample(dir: &Path) -> Value {
    write_sample_with(dir, "write", "crawl")
}

/// Writes the warcio sample into `dir/NAME` by the helper's `command`
/// (`write`: gzipped, `write-plain`) and returns its manifest, moved out
/// of the crawl (its name is a JSONL input's).
fn write_sample_with(dir: &Path, command: &str, name: &str) -> Value {
    let crawl = dir.join(name);
    std::fs::create_dir_all(&crawl).unwrap();
    let status = Command::new(python_with("warcio"))
        .args([&helper(), command, crawl.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
    let manifest = std::fs::read_to_string(crawl.join("manifest.json")).unwrap();
    let moved = dir.join(format!("manifest-{name}.json"));
    std::fs::rename(crawl.join("manifest.json"), moved).unwrap();
    serde_json::from_str(&manifest).unwrap()
}

/// The shards' types and rows as DuckDB reads them, each row with what a
/// plain ranged read of its record's range holds (see `warc_writer.py`).
fn read_with_duckdb(out: &Path) -> Value {
    let read = Command::new(python_with("duckdb"))
        .args([&helper(), "read", &format!("{}/*.parquet", out.display())])
        .output()
        .unwrap();
    assert!(
        read.status.success(),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );
    serde_json::from_slice(&read.stdout).unwrap()
}

/// DuckDB's types of a fingerprint shard's columns.
const SHARD_TYPES: [&str; 12] = [
    "BIGINT",
    "VARCHAR",
    "BIGINT",
    "BLOB",
    "INTEGER",
    "INTEGER",
    "TIMESTAMP WITH TIME ZONE",
    "VARCHAR",
    "BIGINT",
    "BIGINT",
    "VARCHAR",
    "BOOLEAN",
];

/// Checks every shard row of the warcio sample against its manifest: the
/// row's fetch time is its record's WARC-Date, its source is the file it
/// was read from, and reading `[offset, offset + length)` of that file
/// gives exactly its record (one whole gzip member, or a plain record from
/// `WARC/` to its blank line), which warcio reads as the one record with
/// the page's URI, record id and date.
fn assert_rows_find_their_records(table: &Value, manifest: &Value, crawl: &Path, suffix: &str) {
    let mut pages = BTreeMap::new();
    for kind in ["warc", "wet"] {
        let file = crawl.join(format!("sample.{kind}{suffix}"));
        for page in manifest[kind].as_array().unwrap() {
            let url = page["url"].as_str().unwrap().to_string();
            pages.insert(url, (page.clone(), file.display().to_string()));
        }
    }
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(rows.len(), pages.len());
    let mut undated = 0;
    for row in rows {
        let url = row["url"].as_str().unwrap();
        let (page, file) = &pages[url];
        assert_eq!(row["source"], file.as_str(), "{url}");
        assert_eq!(row["fetch_time"], page["micros"], "{url}: {}", page["date"]);
        undated += usize::from(row["fetch_time"].is_null());
        let range = &row["range"];
        assert_eq!(range["exact"], true, "{url}: {row}");
        let records = range["records"].as_array().unwrap();
        assert_eq!(records.len(), 1, "{url}: {range}");
        assert_eq!(records[0]["uri"], url);
        assert_eq!(records[0]["record_id"], page["record_id"], "{url}");
        assert_eq!(records[0]["date"], page["date"], "{url}");
        assert_eq!(records[0]["whole"], true, "{url}");
    }
    // The WET page dated `yesterday` is fingerprinted, without a time.
    assert_eq!(undated, 1);
}

fn summary(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("_summary.json")).unwrap()).unwrap()
}

/// `RUST_LOG=info` logs fingerprint's steps to stderr, a line a shard;
/// stdout holds the summary line alone.
#[test]
fn fingerprint_logs_its_steps_at_info() {
    let dir = tempfile::tempdir().unwrap();
    let crawl = Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples/crawl");
    let out = dir.path().join("fp");
    let output = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .env("RUST_LOG", "info")
        .args(["fingerprint", "--input", crawl.to_str().unwrap(), "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("fingerprint started"), "{stderr}");
    let shards = crate::common::part_files(&out).len();
    assert_eq!(stderr.matches("shard written").count(), shards, "{stderr}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.starts_with("fingerprinted "), "{stdout}");
}

#[test]
fn warcio_files_are_read_record_for_record_and_duckdb_reads_the_shards() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = write_sample(dir.path());
    let out = dir.path().join("fp");
    let crawl = dir.path().join("crawl");
    fingerprint_into(&crawl, &out, &["--workers", "2"]);
    assert!(out.join("_SUCCESS").exists());
    let s = summary(&out);
    // 42 HTML responses + 30 conversions; 40 requests, 1 image, 2 warcinfo skipped.
    assert_eq!(s["documents"], 72);
    assert_eq!(s["skipped_records"], 43);
    assert_eq!(s["bad_records"], 0);
    assert_eq!(s["html_pages"], 42);
    // The two pages that are all template keep all their text.
    assert_eq!(s["main_content_fallbacks"], 2);
    let warc_shard = s["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["format"] == "warc");
    let warc_scheme = warc_shard.unwrap()["scheme"].as_str().unwrap();
    assert!(
        warc_scheme.ends_with(" html=main/6 http=decoded uri=unbracketed"),
        "{warc_scheme}"
    );

    let mut expected = std::collections::BTreeMap::new();
    let options = Scheme::default().simhash;
    for r in manifest["wet"].as_array().unwrap() {
        let (url, text) = (r["url"].as_str().unwrap(), r["text"].as_str().unwrap());
        expected.insert(url.to_string(), fingerprint(text, &options));
    }
    for r in manifest["warc"].as_array().unwrap() {
        let (url, page) = (r["url"].as_str().unwrap(), r["html"].as_str().unwrap());
        let page = html::page_text(page, Scheme::default().html);
        let f = fingerprint_page(&page.text, &page.headings, &options, false);
        expected.insert(url.to_string(), f);
    }

    let table = read_with_duckdb(&out);
    assert_eq!(table["types"], serde_json::json!(SHARD_TYPES));
    assert_rows_find_their_records(&table, &manifest, &crawl, ".gz");
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(rows.len(), expected.len());
    for row in rows {
        let url = row["url"].as_str().unwrap();
        let f = expected
            .get(url)
            .unwrap_or_else(|| panic!("unexpected url {url}"));
        assert_eq!(row["id"].as_i64().unwrap(), url_id(url), "{url}");
        assert_eq!(row["simhash"].as_i64().unwrap() as u64, f.simhash, "{url}");
        assert_eq!(
            row["n_features"].as_u64().unwrap(),
            u64::from(f.n_features),
            "{url}"
        );
        assert_eq!(
            row["n_chars"].as_u64().unwrap(),
            u64::from(f.n_chars),
            "{url}"
        );
    }
    // Markup, scripts and styles are gone, and so are the navigation and
    // the footer; the page's words are there.
    let page0 = html::page_text(
        manifest["warc"][0]["html"].as_str().unwrap(),
        Scheme::default().html,
    )
    .text;
    assert!(
        page0.contains("Story number 0") && page0.contains("中文内容第0段"),
        "{page0}"
    );
    for gone in ["views", "margin", "About us", "Copyright", "Page 0"] {
        assert!(!page0.contains(gone), "{gone} in {page0}");
    }
}

#[test]
fn plain_warc_and_wet_records_are_found_by_their_ranges_and_a_whole_file_member_gives_none() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = write_sample_with(dir.path(), "write-plain", "plain");
    let plain = dir.path().join("plain");
    let out = dir.path().join("fp");
    fingerprint_into(&plain, &out, &["--workers", "2"]);
    let s = summary(&out);
    assert_eq!(
        (s["documents"].as_u64(), s["bad_records"].as_u64()),
        (Some(72), Some(0))
    );
    let table = read_with_duckdb(&out);
    assert_eq!(table["types"], serde_json::json!(SHARD_TYPES));
    assert_rows_find_their_records(&table, &manifest, &plain, "");

    // The same files gzipped whole, each one member: the same fetch times,
    // and no range.
    let whole = dir.path().join("whole");
    std::fs::create_dir_all(&whole).unwrap();
    for name in ["sample.warc", "sample.wet"] {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, &std::fs::read(plain.join(name)).unwrap()).unwrap();
        std::fs::write(whole.join(format!("{name}.gz")), gz.finish().unwrap()).unwrap();
    }
    let out_whole = dir.path().join("fp-whole");
    fingerprint_into(&whole, &out_whole, &[]);
    for part in ["part-00000.parquet", "part-00001.parquet"] {
        let rows = read_attributes(&out.join(part));
        let whole_rows = read_attributes(&out_whole.join(part));
        assert_eq!(whole_rows.len(), rows.len());
        for (plain_row, whole_row) in rows.iter().zip(&whole_rows) {
            assert_eq!(whole_row.id, plain_row.id);
            assert_eq!(whole_row.fetch_time, plain_row.fetch_time);
            assert!(plain_row.offset.is_some() && plain_row.length.is_some());
            assert_eq!((whole_row.offset, whole_row.length), (None, None));
            assert!(whole_row.source.ends_with(".gz"), "{}", whole_row.source);
        }
    }
}

#[test]
fn shards_are_identical_for_any_worker_count() {
    let dir = tempfile::tempdir().unwrap();
    write_sample(dir.path());
    write_sample_with(dir.path(), "write-plain", "plain");
    let crawl = dir.path().join("crawl");
    let plain = dir.path().join("plain");
    let mut shards = Vec::new();
    for workers in ["1", "2", "3"] {
        let out = dir.path().join(format!("fp{workers}"));
        run_ok(&[
            "fingerprint",
            "--input",
            crawl.to_str().unwrap(),
            plain.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--workers",
            workers,
        ]);
        let bytes: Vec<Vec<u8>> = part_files(&out)
            .iter()
            .map(|p| std::fs::read(p).unwrap())
            .collect();
        assert_eq!(bytes.len(), 4);
        shards.push(bytes);
    }
    assert_eq!(shards[0], shards[1]);
    assert_eq!(shards[0], shards[2]);
}

/// Every named scheme and `--html-text all` on the warcio crawl: each
/// WARC page's fingerprint is the library's for the scheme's text of the
/// page, the shards record the HTML mode, fallbacks are counted only where
/// main content is asked for and marked in `main_content` (false: the page
/// fell back; null: none looked for), and the text shard (WET) is the same
/// under schemes that differ only in their HTML mode.
#[test]
fn named_schemes_and_html_modes_fingerprint_warc_pages_as_they_say() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = write_sample(dir.path());
    let crawl = dir.path().join("crawl");
    let runs: [(&str, &[&str], &str, PageText); 7] = [
        ("v1", &["--scheme", "v1"], "v1", PageText::All),
        (
            "v2",
            &["--scheme", "v2"],
            "v2",
            PageText::Main(MainRules::FIRST),
        ),
        (
            "v3",
            &["--scheme", "v3"],
            "v3",
            PageText::Main(MainRules::FIRST),
        ),
        (
            "v4",
            &["--scheme", "v4"],
            "v4",
            PageText::Main(MainRules::SECOND),
        ),
        (
            "v5",
            &["--scheme", "v5"],
            "v5",
            PageText::Main(MainRules::SECOND),
        ),
        (
            "v6",
            &["--scheme", "v6"],
            "v6",
            PageText::Main(MainRules::THIRD),
        ),
        (
            "all",
            &["--html-text", "all", "--no-sketch"],
            "v6",
            PageText::All,
        ),
    ];
    let mut wet_shards = Vec::new();
    for (name, flags, simhash_of, mode) in runs {
        let out = dir.path().join(name);
        let mut args = vec!["fingerprint", "--input", crawl.to_str().unwrap()];
        args.extend(["--out", out.to_str().unwrap()]);
        args.extend(flags);
        run_ok(&args);
        let options = Scheme::named(simhash_of).unwrap().simhash;
        let mut main_content = std::collections::BTreeMap::new();
        let expected: std::collections::BTreeMap<i64, u64> = manifest["warc"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let (url, page) = (r["url"].as_str().unwrap(), r["html"].as_str().unwrap());
                let page = html::page_text(page, mode);
                let f = fingerprint_page(&page.text, &page.headings, &options, false);
                let found = (mode != PageText::All).then_some(!page.fell_back);
                main_content.insert(url_id(url), found);
                (url_id(url), f.simhash)
            })
            .collect();
        // Shards come in input order: the WARC's, then the WET's.
        let shards = part_files(&out);
        let got: std::collections::BTreeMap<i64, u64> =
            read_documents(&shards[0]).into_iter().collect();
        assert_eq!(got, expected, "{name}");
        assert_eq!(read_main_content(&shards[0]), main_content, "{name}");
        let text = read_main_content(&shards[1]);
        assert!(text.values().all(Option::is_none), "{name}: {text:?}");
        let s = summary(&out);
        assert_eq!(s["files"][0]["format"], "warc", "{name}");
        let scheme = shard_scheme(&shards[0]).unwrap();
        // Flags without a name take the default's HTTP decoding and URIs.
        let http = match name == "all" {
            true => " http=decoded uri=unbracketed",
            false => "",
        };
        assert!(
            scheme.ends_with(&format!(" html={mode}{http}")),
            "{name}: {scheme}"
        );
        assert_eq!(s["html_pages"], 42, "{name}");
        let fallbacks = if mode == PageText::All { 0 } else { 2 };
        assert_eq!(s["main_content_fallbacks"], fallbacks, "{name}");
        wet_shards.push(std::fs::read(&shards[1]).unwrap());
    }
    // v1 and v2 differ only in the HTML mode; v3 and v4 too, and v5, v6
    // and `--html-text all`.
    assert_eq!(wet_shards[0], wet_shards[1]);
    assert_eq!(wet_shards[2], wet_shards[3]);
    assert_eq!(wet_shards[4], wet_shards[5]);
    assert_eq!(wet_shards[5], wet_shards[6]);
    assert_ne!(wet_shards[0], wet_shards[2]);
}

/// The ids of a shard, in row order.
fn shard_ids(path: &Path) -> Vec<i64> {
    read_documents(path).into_iter().map(|(id, _)| id).collect()
}

#[test]
fn one_big_file_is_shared_by_every_worker_and_its_shard_is_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples/crawl/pages.warc.gz");
    let copy = std::fs::read(&sample).unwrap();
    // Gzip members concatenate: six copies are one valid WARC of ~18 MB of
    // records, read in many batches.
    let (one, big) = (dir.path().join("one"), dir.path().join("big"));
    std::fs::create_dir_all(&one).unwrap();
    std::fs::create_dir_all(&big).unwrap();
    std::fs::write(one.join("pages.warc.gz"), &copy).unwrap();
    std::fs::write(big.join("pages.warc.gz"), copy.repeat(6)).unwrap();
    let fingerprint = |input: &Path, out: &Path, workers: &str| {
        fingerprint_into(input, out, &["--workers", workers]);
        std::fs::read(out.join("part-00000.parquet")).unwrap()
    };
    fingerprint(&one, &dir.path().join("fp-one"), "1");
    let once = shard_ids(&dir.path().join("fp-one/part-00000.parquet"));
    assert!(once.len() > 100, "{} documents", once.len());
    let shards: Vec<Vec<u8>> = ["1", "2", "3"]
        .iter()
        .map(|workers| fingerprint(&big, &dir.path().join(format!("fp{workers}")), workers))
        .collect();
    assert_eq!(shards[0], shards[1], "1 and 2 workers");
    assert_eq!(shards[0], shards[2], "1 and 3 workers");
    // Rows are in reading order: the copy's rows, six times over.
    assert_eq!(
        shard_ids(&dir.path().join("fp2/part-00000.parquet")),
        once.repeat(6)
    );
    let summary = summary(&dir.path().join("fp2"));
    assert_eq!(summary["documents"], 6 * once.len());
    assert_eq!(summary["files"].as_array().unwrap().len(), 1);
}

#[test]
fn a_corrupt_gzip_member_is_reported_with_its_offset_and_the_rest_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = write_sample(dir.path());
    let wet = dir.path().join("crawl/sample.wet.gz");
    let mut bytes = std::fs::read(&wet).unwrap();
    // Member starts: every gzip header. Break the deflate data of the 6th member.
    let starts: Vec<usize> = bytes
        .windows(3)
        .enumerate()
        .filter(|(_, w)| *w == [0x1f, 0x8b, 0x08])
        .map(|(i, _)| i)
        .collect();
    let (start, end) = (starts[5], starts[6]);
    for b in &mut bytes[start + 12..end - 8] {
        *b ^= 0x5a;
    }
    std::fs::write(&wet, &bytes).unwrap();
    let out = dir.path().join("fp");
    let run = crate::common::neardup(&[
        "fingerprint",
        "--input",
        wet.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success());
    // The warning names the file and offset, in plain text: stderr is a
    // pipe here, and colours are for terminals.
    let stderr = String::from_utf8(run.stderr).unwrap();
    assert!(
        stderr.contains(&format!("sample.wet.gz: bad record at offset {start}")),
        "{stderr}"
    );
    assert!(!stderr.contains('\x1b'), "{stderr:?}");
    let s = summary(&out);
    assert_eq!(s["documents"], 29, "{s}");
    // The documents' bytes are those of every text but the lost one.
    let texts: Vec<u64> = manifest["wet"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["text"].as_str().unwrap().len() as u64)
        .collect();
    let lost = texts.iter().sum::<u64>() - s["document_bytes"].as_u64().unwrap();
    assert!(texts.contains(&lost), "{lost} bytes lost: {s}");
    // Both rates are printed: of the gzipped file, and of its documents.
    let line = String::from_utf8(run.stdout).unwrap();
    assert!(
        line.contains(" of files at ") && line.contains(" of documents at "),
        "{line}"
    );
    assert_eq!(s["bad_records"], 1);
    assert_eq!(s["bad"][0]["offset"], start as u64);
    assert!(s["bad"][0]["file"]
        .as_str()
        .unwrap()
        .ends_with("sample.wet.gz"));
    assert!(
        s["bad"][0]["reason"].as_str().unwrap().contains("gzip"),
        "{s}"
    );
}

/// A WARC cut in the middle, plain, gzipped per record (warcio) or gzipped
/// whole, keeps the pages before the cut: the run succeeds and the cut is
/// one bad record, logged on one line naming the file. Gzipped whole, it
/// gave no page at all.
#[test]
fn a_truncated_warc_keeps_the_pages_before_the_cut_plain_or_gzipped_either_way() {
    let dir = tempfile::tempdir().unwrap();
    write_sample_with(dir.path(), "write-plain", "plain");
    write_sample_with(dir.path(), "write", "members");
    let plain = std::fs::read(dir.path().join("plain/sample.warc")).unwrap();
    let members = std::fs::read(dir.path().join("members/sample.warc.gz")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &plain).unwrap();
    let whole = gz.finish().unwrap();
    let full = dir.path().join("fp-full");
    fingerprint_into(&dir.path().join("plain/sample.warc"), &full, &[]);
    let expected = read_documents(&full.join("part-00000.parquet"));
    for (layout, bytes, name) in [
        ("plain", plain, "sample.warc"),
        ("members", members, "sample.warc.gz"),
        ("whole", whole, "sample.warc.gz"),
    ] {
        let cut = dir.path().join(format!("cut-{layout}")).join(name);
        std::fs::create_dir_all(cut.parent().unwrap()).unwrap();
        std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
        let out = dir.path().join(format!("fp-{layout}"));
        let run = neardup(&[
            "fingerprint",
            "--input",
            cut.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "{layout}: {stderr}");
        let logged: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("bad record"))
            .collect();
        assert_eq!(logged.len(), 1, "{layout}: {stderr}");
        assert!(logged[0].contains(&format!("{name}: bad record at offset ")));
        assert_eq!(summary(&out)["bad_records"], 1, "{layout}");
        let rows = read_documents(&out.join("part-00000.parquet"));
        assert!(
            rows.len() >= expected.len() / 4 && expected.starts_with(&rows),
            "{layout}: {} of {} pages",
            rows.len(),
            expected.len()
        );
    }
}

#[test]
fn jsonl_and_parquet_text_inputs_give_the_same_fingerprints() {
    let dir = tempfile::tempdir().unwrap();
    let docs = [
        (1i64, "http://a/", "the cat sat on the mat"),
        (2, "http://b/", "我们在北京大学学习"),
    ];
    let jsonl: String = docs
        .iter()
        .map(|(id, url, text)| {
            serde_json::json!({"doc": id, "link": url, "body": text}).to_string() + "\n"
        })
        .collect();
    std::fs::write(dir.path().join("docs.jsonl"), jsonl).unwrap();
    let table = RecordBatch::try_from_iter([
        (
            "doc",
            Arc::new(Int64Array::from_iter_values(docs.iter().map(|d| d.0))) as ArrayRef,
        ),
        (
            "link",
            Arc::new(StringArray::from_iter_values(docs.iter().map(|d| d.1))),
        ),
        (
            "body",
            Arc::new(StringArray::from_iter_values(docs.iter().map(|d| d.2))),
        ),
    ])
    .unwrap();
    let file = std::fs::File::create(dir.path().join("docs.parquet")).unwrap();
    let mut writer = ArrowWriter::try_new(file, table.schema(), None).unwrap();
    writer.write(&table).unwrap();
    writer.close().unwrap();

    let mut outputs = Vec::new();
    for input in ["docs.jsonl", "docs.parquet"] {
        let out = dir.path().join(format!("fp-{input}"));
        run_ok(&[
            "fingerprint",
            "--input",
            dir.path().join(input).to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--id-field",
            "doc",
            "--url-field",
            "link",
            "--text-field",
            "body",
            "--features",
            "chars:3",
        ]);
        outputs.push(fingerprint_columns(&out.join("part-00000.parquet")));
    }
    // The same rows: only the page attributes (source, range) differ.
    assert!(outputs[0] == outputs[1], "{outputs:?}");
    let options = SimhashOptions {
        features: Features::Chars(3),
        ..Default::default()
    };
    let rows = read_documents(&dir.path().join("fp-docs.jsonl/part-00000.parquet"));
    let expected: Vec<(i64, u64)> = docs
        .iter()
        .map(|d| (d.0, fingerprint(d.2, &options).simhash))
        .collect();
    assert_eq!(rows, expected);
}

/// A JSONL file that a Windows tool opened with a UTF-8 byte order mark
/// gives the fingerprints of the same file without it, and no bad record.
#[test]
fn a_jsonl_file_opening_with_a_byte_order_mark_gives_the_same_fingerprints() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = [(1, "the cat sat on the mat"), (2, "a dog in the fog")]
        .iter()
        .map(|(id, text)| serde_json::json!({"id": id, "text": text}).to_string() + "\n")
        .collect();
    std::fs::write(dir.path().join("plain.jsonl"), &lines).unwrap();
    std::fs::write(dir.path().join("bom.jsonl"), format!("\u{feff}{lines}")).unwrap();
    let mut outputs = Vec::new();
    for name in ["plain", "bom"] {
        let out = dir.path().join(format!("fp-{name}"));
        fingerprint_into(&dir.path().join(format!("{name}.jsonl")), &out, &[]);
        assert_eq!(summary(&out)["bad_records"], 0, "{name}");
        outputs.push(fingerprint_columns(&out.join("part-00000.parquet")));
    }
    assert_eq!(outputs[0].iter().map(|b| b.num_rows()).sum::<usize>(), 2);
    assert!(outputs[0] == outputs[1], "{outputs:?}");
}

/// A shard row's page attributes.
#[derive(Debug)]
struct Attributes {
    id: i64,
    fetch_time: Option<i64>,
    source: String,
    offset: Option<i64>,
    length: Option<i64>,
}

/// The page attributes of every row of a shard, read by arrow, after
/// checking their types.
fn read_attributes(path: &Path) -> Vec<Attributes> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap())
        .unwrap()
        .build()
        .unwrap();
    let mut out = Vec::new();
    for batch in reader {
        let batch = batch.unwrap();
        let column = |name: &str| batch.column_by_name(name).unwrap().clone();
        let times = column("fetch_time");
        assert_eq!(
            times.data_type(),
            &DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
        );
        let times = times.as_primitive::<TimestampMicrosecondType>();
        let (ids, sources) = (column("id"), column("source"));
        let (offsets, lengths) = (column("offset"), column("length"));
        let (offsets, lengths) = (
            offsets.as_primitive::<Int64Type>(),
            lengths.as_primitive::<Int64Type>(),
        );
        let value = |a: &arrow_array::PrimitiveArray<_>, i| a.is_valid(i).then(|| a.value(i));
        for i in 0..batch.num_rows() {
            out.push(Attributes {
                id: ids.as_primitive::<Int64Type>().value(i),
                fetch_time: times.is_valid(i).then(|| times.value(i)),
                source: sources.as_string::<i32>().value(i).to_string(),
                offset: value(offsets, i),
                length: value(lengths, i),
            });
        }
    }
    out
}

/// Microseconds since the epoch of some instants, as `date -u -d ... +%s%6N` gives them.
const MAY_1_12_34_56: i64 = 1_714_566_896_000_000;
const FEB_29_23_59_59: i64 = 1_709_251_199_000_000;

/// An input file whose records give no document (here a page of
/// whitespace alone) is named in one warning (its shard is empty); the run
/// goes on, and a file with documents is not named.
#[test]
fn a_file_without_documents_is_named_in_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    std::fs::write(input.join("good.jsonl"), r#"{"id": 1, "text": "a page"}"#).unwrap();
    std::fs::write(input.join("blank.jsonl"), r#"{"id": 2, "text": " \t "}"#).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(["fingerprint", "--input"])
        .arg(&input)
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("WARN")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    let said = "blank.jsonl: no documents (records skipped: 0, pages without text: 1, bad: 0)";
    assert!(warnings[0].contains(said), "{stderr}");
}

#[test]
fn jsonl_lines_give_their_time_field_and_their_range() {
    let dir = tempfile::tempdir().unwrap();
    // (line, fetch time, or None for a bad record)
    let lines: [(&str, Option<Option<i64>>); 9] = [
        (
            r#"{"id": 1, "url": "http://a/", "text": "one", "fetched": "2024-05-01T12:34:56Z"}"#,
            Some(Some(MAY_1_12_34_56)),
        ),
        (
            r#"{"id": 2, "url": "http://b/", "text": "two", "fetched": "2024-05-01T14:34:56.123456+02:00"}"#,
            Some(Some(MAY_1_12_34_56 + 123_456)),
        ),
        (
            r#"{"id": 3, "text": "three", "fetched": "2024-03-01T04:59:59.5+05:00"}"#,
            Some(Some(FEB_29_23_59_59 + 500_000)),
        ),
        (
            r#"{"id": 4, "url": "http://d/", "text": "four", "fetched": "2024-02-29T18:59:59-05:00"}"#,
            Some(Some(FEB_29_23_59_59)),
        ),
        (r#"{"id": 5, "text": "five"}"#, Some(None)),
        (r#"{"id": 6, "text": "six", "fetched": null}"#, Some(None)),
        (
            r#"{"id": 7, "text": "seven", "fetched": "2024-02-30T00:00:00Z"}"#,
            None,
        ),
        (r#"{"id": 8, "text": "eight", "fetched": 1714566896}"#, None),
        (
            r#"{"id": 9, "text": "nine", "fetched": "2024-05-01 12:34:56z"}"#,
            Some(Some(MAY_1_12_34_56)),
        ),
    ];
    // Line breaks of both kinds, and a blank line.
    let mut file = String::new();
    for (i, (line, _)) in lines.iter().enumerate() {
        file.push_str(line);
        file.push_str(if i % 2 == 0 { "\n" } else { "\r\n" });
        if i == 4 {
            file.push('\n');
        }
    }
    let crawl = dir.path().join("crawl");
    std::fs::create_dir_all(&crawl).unwrap();
    std::fs::write(crawl.join("docs.jsonl"), &file).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, file.as_bytes()).unwrap();
    std::fs::write(crawl.join("more.jsonl.gz"), gz.finish().unwrap()).unwrap();
    let out = dir.path().join("fp");
    fingerprint_into(&crawl, &out, &["--time-field", "fetched"]);
    let s = summary(&out);
    assert_eq!(s["documents"], 14);
    assert_eq!(s["bad_records"], 4);
    let reasons: Vec<&str> = s["bad"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["reason"].as_str().unwrap())
        .collect();
    let invalid_date = r#"field `fetched` is not an RFC 3339 date-time: "2024-02-30T00:00:00Z""#;
    let number = "field `fetched` is not an RFC 3339 date-time: 1714566896";
    assert_eq!(reasons, [invalid_date, number, invalid_date, number]);

    let expected: Vec<(i64, Option<i64>)> = lines
        .iter()
        .filter_map(|(line, time)| {
            let id = serde_json::from_str::<Value>(line).unwrap()["id"]
                .as_i64()
                .unwrap();
            time.map(|t| (id, t))
        })
        .collect();
    // Sorted by name: docs.jsonl, then more.jsonl.gz.
    let plain = read_attributes(&out.join("part-00000.parquet"));
    let gzipped = read_attributes(&out.join("part-00001.parquet"));
    for (rows, name) in [(&plain, "docs.jsonl"), (&gzipped, "more.jsonl.gz")] {
        let got: Vec<(i64, Option<i64>)> = rows.iter().map(|r| (r.id, r.fetch_time)).collect();
        assert_eq!(got, expected, "{name}");
        for row in rows.iter() {
            assert_eq!(row.source, crawl.join(name).display().to_string());
        }
    }
    assert!(gzipped
        .iter()
        .all(|r| r.offset.is_none() && r.length.is_none()));
    // A plain ranged read of a plain file's row gives its line's object,
    // read by Python's json.
    let table = read_with_duckdb(&out);
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 14);
    let mut ranged = 0;
    for row in rows
        .iter()
        .filter(|r| r["source"].as_str().unwrap().ends_with("docs.jsonl"))
    {
        let line = lines
            .iter()
            .map(|(line, _)| serde_json::from_str::<Value>(line).unwrap())
            .find(|object| object["id"] == row["id"])
            .unwrap();
        assert_eq!(row["range"]["object"], line, "{row}");
        ranged += 1;
    }
    assert_eq!(ranged, 7);
    // Without --time-field, no fetch time.
    let out_none = dir.path().join("fp-none");
    fingerprint_into(&crawl.join("docs.jsonl"), &out_none, &[]);
    let rows = read_attributes(&out_none.join("part-00000.parquet"));
    assert_eq!(rows.len(), 9);
    assert!(rows
        .iter()
        .all(|r| r.fetch_time.is_none() && r.offset.is_some()));
}

#[test]
fn parquet_time_columns_of_timestamps_or_strings_give_fetch_times_and_bad_ones_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let n = 4;
    let at = [MAY_1_12_34_56, FEB_29_23_59_59, -1_500_000, 0];
    let table = RecordBatch::try_from_iter([
        (
            "id",
            Arc::new(Int64Array::from_iter_values(1..=n)) as ArrayRef,
        ),
        (
            "text",
            Arc::new(StringArray::from_iter_values(
                (1..=n).map(|i| format!("page {i}")),
            )),
        ),
        // Milliseconds, in a zone.
        (
            "t_ms",
            Arc::new(
                TimestampMillisecondArray::from(vec![
                    Some(at[0] / 1000),
                    Some(at[1] / 1000),
                    Some(at[2] / 1000),
                    None,
                ])
                .with_timezone("+02:00"),
            ),
        ),
        // Nanoseconds, without a zone (read as UTC).
        (
            "t_ns",
            Arc::new(TimestampNanosecondArray::from(vec![
                Some(at[0] * 1000 + 999),
                None,
                Some(at[2] * 1000),
                Some(0),
            ])),
        ),
        (
            "t_str",
            Arc::new(StringArray::from(vec![
                Some("2024-05-01T14:34:56+02:00"),
                Some("2024-02-29T23:59:59.000Z"),
                Some("the day before"),
                None,
            ])),
        ),
        ("t_int", Arc::new(Int64Array::from_iter_values(0..n))),
    ])
    .unwrap();
    let input = dir.path().join("docs.parquet");
    let file = std::fs::File::create(&input).unwrap();
    let mut writer = ArrowWriter::try_new(file, table.schema(), None).unwrap();
    writer.write(&table).unwrap();
    writer.close().unwrap();
    let input = input.display().to_string();

    let fingerprint = |column: &str| {
        let out = dir.path().join(format!("fp-{column}"));
        let result = neardup(&[
            "fingerprint",
            "--input",
            &input,
            "--out",
            out.to_str().unwrap(),
            "--time-field",
            column,
        ]);
        (out, result)
    };
    for (column, expected, bad) in [
        ("t_ms", vec![Some(at[0]), Some(at[1]), Some(at[2]), None], 0),
        ("t_ns", vec![Some(at[0]), None, Some(at[2]), Some(0)], 0),
        ("t_str", vec![Some(at[0]), Some(at[1]), None], 1),
    ] {
        let (out, result) = fingerprint(column);
        assert!(result.status.success(), "{column}: {result:?}");
        let rows = read_attributes(&out.join("part-00000.parquet"));
        let got: Vec<Option<i64>> = rows.iter().map(|r| r.fetch_time).collect();
        assert_eq!(got, expected, "{column}");
        for row in &rows {
            assert_eq!((row.offset, row.length), (None, None));
            assert_eq!(row.source, input);
        }
        let s = summary(&out);
        assert_eq!(s["bad_records"], bad, "{column}");
        if bad > 0 {
            assert_eq!(s["bad"][0]["offset"], 2);
            assert_eq!(
                s["bad"][0]["reason"],
                r#"column `t_str` is not an RFC 3339 date-time: "the day before""#
            );
        }
    }
    // A missing column, or one of another type: one line naming the file
    // and the column, and nothing written.
    for (column, needle) in [
        ("fetched", format!("{input}: no time column `fetched`")),
        (
            "t_int",
            format!(
                "{input}: column `t_int` has type Int64, expected a TIMESTAMP or RFC 3339 strings"
            ),
        ),
    ] {
        let (out, result) = fingerprint(column);
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert!(!result.status.success(), "{column}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(&needle), "{stderr}");
        assert!(!out.exists(), "{column}");
    }
    // An id or URL column named on the command line must be there: a typo
    // would give every page a URL hash for an id, or no URL.
    for flag in ["--id-field", "--url-field"] {
        let out = dir.path().join("fp-typo");
        let result = neardup(&[
            "fingerprint",
            "--input",
            &input,
            "--out",
            out.to_str().unwrap(),
            flag,
            "doc_idd",
        ]);
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert_eq!(result.status.code(), Some(1), "{flag}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        let needle = format!("{input}: no column `doc_idd` ({flag})");
        assert!(stderr.contains(&needle), "{stderr}");
        assert!(!out.exists(), "{flag}");
    }
}

/// The columns of a shard up to `n_chars`: the document and its
/// fingerprint, without the page attributes.
fn fingerprint_columns(path: &Path) -> Vec<RecordBatch> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap())
        .unwrap()
        .build()
        .unwrap();
    reader
        .map(|batch| batch.unwrap().project(&[0, 1, 2, 3, 4]).unwrap())
        .collect()
}

/// `main_content` of a shard's pages, by id.
fn read_main_content(path: &Path) -> std::collections::BTreeMap<i64, Option<bool>> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap())
        .unwrap()
        .build()
        .unwrap();
    let mut out = std::collections::BTreeMap::new();
    for batch in reader {
        let batch = batch.unwrap();
        let ids = batch
            .column_by_name("id")
            .unwrap()
            .as_primitive::<Int64Type>();
        let found = batch.column_by_name("main_content").unwrap().as_boolean();
        out.extend(ids.values().iter().copied().zip(found.iter()));
    }
    out
}

/// `(id, simhash)` of a fingerprint shard.
fn read_documents(path: &Path) -> Vec<(i64, u64)> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap())
        .unwrap()
        .build()
        .unwrap();
    let mut out = Vec::new();
    for batch in reader {
        let batch = batch.unwrap();
        let ids = batch
            .column_by_name("id")
            .unwrap()
            .as_primitive::<Int64Type>()
            .clone();
        let fps = batch
            .column_by_name("simhash")
            .unwrap()
            .as_primitive::<Int64Type>()
            .clone();
        out.extend(
            ids.values()
                .iter()
                .zip(fps.values())
                .map(|(&i, &f)| (i, f as u64)),
        );
    }
    out
}

#[test]
fn bad_input_gets_one_line_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello").unwrap();
    let wet = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data-samples/crawl/text.wet.gz")
        .display()
        .to_string();
    let cases: [(&[&str], &str); 4] = [
        (
            &["--input", &wet, "--time-field", "fetched"],
            "time field `fetched` is given, but the input is WARC or WET",
        ),
        (
            &["--input", "/nonexistent/crawl.warc.gz"],
            "/nonexistent/crawl.warc.gz: no such file",
        ),
        (&["--input", "NOTES"], "cannot tell the input format"),
        (
            &["--input", "NOTES", "--features", "letters:3"],
            "--features letters:3",
        ),
    ];
    let notes = dir.path().join("notes.txt").display().to_string();
    for (args, needle) in cases {
        let out = dir.path().join("out");
        let mut all = vec!["fingerprint", "--out", out.to_str().unwrap()];
        all.extend(
            args.iter()
                .map(|a| if *a == "NOTES" { notes.as_str() } else { a }),
        );
        let result = neardup(&all);
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert!(!result.status.success(), "{args:?}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!out.exists());
    }
}

/// The simhash and the sketch as `src/fingerprint/simhash/mod.rs`'s,
/// `sketch.rs`'s and `headings.rs`'s module docs describe them, implemented
/// independently in Python, give the same fingerprints and sketches.
#[test]
fn an_independent_implementation_of_the_documented_algorithm_agrees() {
    // Features seen more often than the sketch groups by count.
    let repeated = "ice cream and ".repeat(25) + "a cone";
    let texts = [
        repeated.as_str(),
        "the cat sat on the mat",
        "We all scream for ICE CREAM, and the cream is cold",
        "  Ｆｕｌｌｗｉｄｔｈ letters   and ligatures: ﬁne ﬂour \n\t x",
        "Near duplicate detection for web crawling in 2007 by Manku Jain and Das Sarma",
        "a",
        "",
        "Ünïcödé wörds àre lówer-cased; ΣΊΣΥΦΟΣ too",
    ];
    let mut cases = Vec::new();
    let mut expected = Vec::new();
    let variants = ["words", "shingles:2", "shingles:3", "chars:3", "chars:5"]
        .into_iter()
        .map(|features| (features, false))
        .chain([("words", true), ("chars:5", true), ("script", false)]);
    for (features, log_weights) in variants {
        for keep_stop_words in [false, true] {
            for text in texts {
                let options = SimhashOptions {
                    features: features.parse().unwrap(),
                    log_weights,
                    stop_words: !keep_stop_words,
                };
                let f = fingerprint_with(text, &options, true);
                assert_eq!(fingerprint(text, &options).simhash, f.simhash);
                cases.push(serde_json::json!({"text": text, "features": features, "log_weights": log_weights, "keep_stop_words": keep_stop_words}));
                let counts = (u64::from(f.n_features), u64::from(f.n_chars));
                expected.push((f.simhash, counts.0, counts.1, f.sketch.unwrap()));
            }
        }
    }
    // Headings weigh four times (v9's HTML pages): a heading's words that
    // recur in the text, one that does not, and a heading shorter than a
    // gram.
    let page = "Closures and iterators. Closures capture their environment; \
                iterators chain closures. Smart pointers";
    let headings = ["Closures and iterators", "Smart pointers", "it"];
    let ranges: Vec<std::ops::Range<usize>> = headings
        .iter()
        .map(|h| {
            let at = page.rfind(h).unwrap();
            at..at + h.len()
        })
        .collect();
    for (features, log_weights) in [("script", false), ("words", false), ("chars:3", true)] {
        let options = SimhashOptions {
            features: features.parse().unwrap(),
            log_weights,
            stop_words: true,
        };
        let f = fingerprint_page(page, &ranges, &options, true);
        cases.push(serde_json::json!({"text": page, "features": features, "log_weights": log_weights, "keep_stop_words": false, "headings": headings}));
        let counts = (u64::from(f.n_features), u64::from(f.n_chars));
        expected.push((f.simhash, counts.0, counts.1, f.sketch.unwrap()));
        let plain = fingerprint_with(page, &options, true);
        assert_ne!(
            plain.simhash, f.simhash,
            "{features}: the headings weigh nothing"
        );
    }
    let got = crate::common::reference_simhashes(&serde_json::json!(cases));
    for ((case, e), g) in cases.iter().zip(&expected).zip(&got) {
        assert_eq!(e, g, "{case}");
    }
}

#[test]
fn shards_record_their_scheme_and_match_refuses_mixed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let docs: String = (0..40)
        .map(|i| {
            let text = format!(
                "page {} about the weather in town number {} today",
                i % 7,
                i % 5
            );
            serde_json::json!({"id": i, "url": format!("http://x/{i}"), "text": text}).to_string()
                + "\n"
        })
        .collect();
    std::fs::write(dir.path().join("docs.jsonl"), docs).unwrap();
    let input = dir.path().join("docs.jsonl");
    let input = input.to_str().unwrap();
    let out = |name: &str| dir.path().join(name);
    let path = |name: &str| out(name).display().to_string();

    // On text (no HTML), the schemes v2 and v1 differ in nothing: same
    // bytes, same scheme string. The default is another scheme.
    let by_scheme = |name: &str| {
        run_ok(&[
            "fingerprint",
            "--input",
            input,
            "--out",
            &path(name),
            "--scheme",
            name,
        ])
    };
    by_scheme("v1");
    by_scheme("v2");
    run_ok(&["fingerprint", "--input", input, "--out", &path("default")]);
    let shard = |name: &str| out(name).join("part-00000.parquet");
    assert_eq!(
        std::fs::read(shard("v2")).unwrap(),
        std::fs::read(shard("v1")).unwrap()
    );
    let default = shard_scheme(&shard("default")).unwrap();
    assert!(default.contains("features=script("), "{default}");
    assert_eq!(summary(&out("default"))["scheme_name"], "v12");
    // --no-sketch leaves v12's sketch out: a scheme without a name, whose
    // text shards are v6's, byte for byte but for what names the tool's run
    // (v12 differs from v6 only in HTML pages and the sketch).
    by_scheme("v6");
    let no_sketch = ["fingerprint", "--input", input, "--no-sketch", "--out"];
    run_ok(&[&no_sketch[..], &[&path("no-sketch")]].concat());
    assert_eq!(summary(&out("no-sketch"))["scheme_name"], Value::Null);
    assert_eq!(
        std::fs::read(shard("no-sketch")).unwrap(),
        std::fs::read(shard("v6")).unwrap()
    );
    assert_eq!(summary(&out("v2"))["scheme_name"], "v2");
    let v1 = shard_scheme(&shard("v1")).expect("a scheme in the shard's metadata");
    assert!(
        v1.starts_with("simhash64/1 ") && v1.contains("features=words"),
        "{v1}"
    );
    assert_eq!(summary(&out("v1"))["files"][0]["scheme"], v1.as_str());
    assert_eq!(summary(&out("v1"))["scheme_name"], "v1");

    // Another scheme is recorded as such.
    run_ok(&[
        "fingerprint",
        "--input",
        input,
        "--out",
        &path("chars"),
        "--features",
        "chars:4",
    ]);
    let chars = shard_scheme(&shard("chars")).unwrap();
    assert!(chars.contains("features=chars:4"), "{chars}");
    assert_eq!(summary(&out("chars"))["scheme_name"], Value::Null);

    // A scheme and its parts together are refused.
    let both = neardup(&[
        "fingerprint",
        "--input",
        input,
        "--out",
        &path("both"),
        "--scheme",
        "v1",
        "--features",
        "chars:4",
    ]);
    assert!(!both.status.success());
    assert!(!out("both").exists());

    // match refuses B and F of different schemes, naming a file of each.
    let pairs = path("pairs");
    let (queries, corpus) = (path("v1"), path("chars"));
    let match_mixed = |extra: &[&str]| {
        let mut args = vec!["match", "--queries", &queries, "--corpus", &corpus];
        args.extend(["--out", &pairs]);
        args.extend(extra);
        neardup(&args)
    };
    let mixed = match_mixed(&[]);
    assert_eq!(mixed.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&mixed.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    for needle in [
        shard("v1").display().to_string(),
        shard("chars").display().to_string(),
        v1.clone(),
        chars.clone(),
    ] {
        assert!(stderr.contains(&needle), "{needle} not in {stderr}");
    }
    assert!(!out("pairs").exists());

    // ... unless told, and the summary says which schemes met.
    assert!(match_mixed(&["--allow-mixed-schemes"]).status.success());
    let schemes = summary(&out("pairs"))["schemes"].clone();
    assert_eq!(schemes.as_array().unwrap().len(), 2, "{schemes}");

    // Shards made by other tools have no scheme and are matched with any.
    let other = out("other");
    std::fs::create_dir(&other).unwrap();
    write_shard(&other.join("part-0.parquet"), &[(1, 5), (2, 7)]);
    assert_eq!(shard_scheme(&other.join("part-0.parquet")), None);
    let pairs = path("pairs-other");
    let other_arg = other.to_str().unwrap();
    let matched = neardup(&[
        "match",
        "--queries",
        &path("v1"),
        "--corpus",
        other_arg,
        "--out",
        &pairs,
    ]);
    assert!(matched.status.success());
    assert_eq!(
        summary(&out("pairs-other"))["schemes"],
        serde_json::json!([v1])
    );
    // ... said on one line: a shard rewritten by DuckDB or Spark has lost
    // its scheme, and nothing checks it against B's.
    let stderr = String::from_utf8_lossy(&matched.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    let said = format!(
        "{} (F) and 0 more file(s) record no fingerprint scheme",
        other.join("part-0.parquet").display()
    );
    assert!(stderr.contains(&said) && stderr.contains(&v1), "{stderr}");
}

/// A WARC's shard records its HTML mode and a WET's does not: the two are
/// of one scheme, and `match` takes them together without a word.
#[test]
fn html_and_text_shards_of_one_scheme_are_matched_together() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (fp, pairs) = (dir.path().join("fp"), dir.path().join("pairs"));
    let crawl = root.join("data-samples/crawl").display().to_string();
    run_ok(&[
        "fingerprint",
        "--input",
        &crawl,
        "--out",
        &fp.display().to_string(),
    ]);
    let schemes: Vec<String> = part_files(&fp)
        .iter()
        .map(|shard| shard_scheme(shard).unwrap())
        .collect();
    assert_eq!(schemes.len(), 2);
    assert!(schemes[0].contains(" html=main") != schemes[1].contains(" html=main"));
    let matched = neardup(&[
        "match",
        "--queries",
        &fp.display().to_string(),
        "--self",
        "--out",
        &pairs.display().to_string(),
    ]);
    assert!(
        matched.status.success(),
        "{}",
        String::from_utf8_lossy(&matched.stderr)
    );
    assert!(String::from_utf8_lossy(&matched.stderr).trim().is_empty());
    assert!(pairs.join("_SUCCESS").exists());
}

/// A real Sphinx site (the machine's Sphinx, its default theme) of 40
/// generated reference pages, each the same sentence and a list of its
/// operands, every operand a link: v5 drops the list as link-dense, so all
/// 40 pages get one fingerprint; v6, the default, keeps lists of links
/// inside the content the page marks (`role="main"`), so each page gets its
/// own, and the text is still the content's, not the theme's sidebar.
#[test]
fn a_sphinx_sites_reference_pages_are_told_apart_by_their_lists_of_links() {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new(python_with("sphinx"))
        .args([&helper(), "sphinx", dir.path().to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
    let warc = dir.path().join("sphinx.warc.gz");
    let reference_pages = |scheme: &[&str]| {
        let out = dir.path().join(format!("fp{}", scheme.join("")));
        let mut args = vec!["fingerprint", "--input", warc.to_str().unwrap()];
        args.extend(["--out", out.to_str().unwrap()]);
        args.extend(scheme);
        run_ok(&args);
        let shards = read_with_duckdb(&out);
        let rows = shards["rows"].as_array().unwrap().clone();
        let pages: BTreeMap<String, (i64, i64)> = rows
            .iter()
            .filter(|row| row["url"].as_str().unwrap().contains("/inst_"))
            .map(|row| {
                let url = row["url"].as_str().unwrap().to_string();
                (
                    url,
                    (
                        row["id"].as_i64().unwrap(),
                        row["simhash"].as_i64().unwrap(),
                    ),
                )
            })
            .collect();
        (out, pages)
    };
    let distinct = |pages: &BTreeMap<String, (i64, i64)>| {
        let values: std::collections::HashSet<i64> = pages.values().map(|p| p.1).collect();
        values.len()
    };
    let (_, v5) = reference_pages(&["--scheme", "v5"]);
    let (out, v6) = reference_pages(&[]);
    assert_eq!((v5.len(), v6.len()), (40, 40));
    assert_eq!(distinct(&v5), 1, "v5 drops the lists of links");
    assert_eq!(distinct(&v6), 40, "v6 keeps them");
    let summary: Value =
        serde_json::from_slice(&std::fs::read(out.join("_summary.json")).unwrap()).unwrap();
    assert_eq!(
        summary["scheme_name"], "v12",
        "the default: v6's text of these pages, headings weighed, with a sketch"
    );
    let (id, _) = v6["https://isa.example/inst_07.html"];
    let text = run_ok(&[
        "explain",
        "--text",
        &id.to_string(),
        "--fingerprints",
        out.to_str().unwrap(),
    ]);
    let words: Vec<&str> = text.split_whitespace().collect();
    assert!(
        text.contains("Encoded as VOP2 or VOP3. Operands:"),
        "{text}"
    );
    assert!(
        words.len() < 20,
        "the theme's sidebar is not content: {text}"
    );
}

/// What `fingerprint --scheme v9` gave the warcio-written encoded pages
/// (`warc_writer.py encoded`) before v10: the compressed and chunked bytes
/// as the page. A published scheme keeps them.
const V9_ENCODED: [(&str, u64); 5] = [
    ("plain", 0x155120342e001129),
    ("gzip", 0x9d39efd1eadc0760),
    ("chunked", 0x1511a0742f201123),
    ("chunked-gzip", 0x9d3deeb8a9dc8360),
    ("corrupt", 0x9d39efd1eadc0760),
];

/// Writes the warcio crawl of the helper's `command` into `crawl`, and
/// returns the manifest it wrote beside it (removed: it is no crawl file).
fn write_crawl_with_manifest(command: &str, crawl: &Path) -> Value {
    std::fs::create_dir_all(crawl).unwrap();
    let status = Command::new(python_with("warcio"))
        .args([&helper(), command, crawl.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(crawl.join("manifest.json")).unwrap();
    std::fs::remove_file(crawl.join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Real pages in Read the Docs' Sphinx theme (QEMU's tool manuals, as
/// Debian ships them), each as it is and with a site-wide announcement
/// before the theme's wrapper. The theme puts its `role="main"` inside
/// elements whose classes say `nav`: under v11 every page fell back to all
/// its text, and with the announcement every page was the announcement
/// alone, one fingerprint for all. From v12 each is its own content, the
/// same with or without the announcement.
#[test]
fn read_the_docs_pages_are_their_content_from_v12_on() {
    let dir = tempfile::tempdir().unwrap();
    let crawl = dir.path().join("crawl");
    let pages = "Read the Docs pages (Debian's qemu-utils docs)";
    if !write_warcio_crawl_of_real_pages("read-the-docs", &crawl, pages) {
        return;
    }
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(crawl.join("manifest.json")).unwrap())
            .unwrap();
    let pages = manifest.as_array().unwrap();
    // Each page's fingerprint, in the manifest's order: as it is, then
    // with the announcement.
    let by_scheme = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        fingerprint_into(&crawl.join("rtd.warc.gz"), &out, extra);
        let got: BTreeMap<i64, u64> = read_documents(&out.join("part-00000.parquet"))
            .into_iter()
            .collect();
        let fingerprints: Vec<u64> = pages
            .iter()
            .map(|page| got[&url_id(page["url"].as_str().unwrap())])
            .collect();
        (summary(&out), fingerprints)
    };
    let (v12_summary, v12) = by_scheme("default", &[]);
    assert_eq!(v12_summary["scheme_name"], "v12");
    assert_eq!(v12_summary["main_content_fallbacks"], 0);
    for (pair, page) in v12.chunks(2).zip(pages.iter().step_by(2)) {
        assert_eq!(
            pair[0], pair[1],
            "{}: the announcement is not the page",
            page["page"]
        );
    }
    let shipped: Vec<u64> = v12.iter().copied().step_by(2).collect();
    for (i, a) in shipped.iter().enumerate() {
        for b in &shipped[i + 1..] {
            assert!(
                (a ^ b).count_ones() > 3,
                "two manuals within k = 3: {a:016x} {b:016x}"
            );
        }
    }
    let (v11_summary, v11) = by_scheme("v11", &["--scheme", "v11"]);
    assert_eq!(v11_summary["main_content_fallbacks"], pages.len() / 2);
    let announced: std::collections::BTreeSet<u64> =
        v11.iter().copied().skip(1).step_by(2).collect();
    assert_eq!(
        announced.len(),
        1,
        "v11: every announced page is the announcement"
    );
}

/// A page sent plain, gzip-encoded, chunked, and chunked and gzipped, as a
/// recording proxy stores the raw HTTP (warcio writes the WARC): under
/// v10 on (v12 the default), all four give the plain page's fingerprint, a corrupt
/// gzip body is a bad record at its record's offset, and `explain` reads
/// the pages back decoded; under v9 every body is read as stored, and the
/// fingerprints are the ones v9 always gave.
#[test]
fn pages_sent_compressed_or_in_chunks_are_the_plain_page_from_v10_on() {
    let dir = tempfile::tempdir().unwrap();
    let crawl = dir.path().join("crawl");
    let manifest = write_crawl_with_manifest("encoded", &crawl);
    let url = |name: &str| format!("https://encoded.example/{name}");
    let fingerprints = |out: &Path| -> BTreeMap<i64, u64> {
        read_documents(&out.join("part-00000.parquet"))
            .into_iter()
            .collect()
    };

    let v10 = Scheme::named("v10").unwrap();
    let page = html::page_text(manifest["html"].as_str().unwrap(), v10.html);
    assert!(page.text.contains("One page, four ways"), "{}", page.text);
    let plain = fingerprint_page(&page.text, &page.headings, &v10.simhash, false).simhash;
    let default = dir.path().join("default");
    let run = neardup(&[
        "fingerprint",
        "--input",
        crawl.to_str().unwrap(),
        "--out",
        default.to_str().unwrap(),
    ]);
    assert!(run.status.success());
    let got = fingerprints(&default);
    for name in ["plain", "gzip", "chunked", "chunked-gzip"] {
        assert_eq!(got[&url_id(&url(name))], plain, "{name} under v10");
    }
    assert_eq!(got.len(), 4);
    let s = summary(&default);
    assert_eq!(s["scheme_name"], "v12");
    assert!(
        s["scheme"]
            .as_str()
            .unwrap()
            .ends_with(" html=main/6 http=decoded uri=unbracketed"),
        "{s}"
    );
    assert_eq!(
        (s["documents"].as_u64(), s["bad_records"].as_u64()),
        (Some(4), Some(1))
    );
    let corrupt_at = manifest["records"][4]["offset"].as_u64().unwrap();
    assert_eq!(manifest["records"][4]["url"], url("corrupt"));
    assert_eq!(s["bad"][0]["offset"], corrupt_at);
    let reason = s["bad"][0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("cannot decode the HTTP body: Content-Encoding gzip: "),
        "{reason}"
    );
    let stderr = String::from_utf8(run.stderr).unwrap();
    let line = format!("encoded.warc.gz: bad record at offset {corrupt_at}: {reason}");
    assert!(stderr.contains(&line), "{line} not in {stderr}");
    let named = dir.path().join("v10");
    fingerprint_into(&crawl, &named, &["--scheme", "v10"]);
    assert_eq!(fingerprints(&named), got);

    let v9 = dir.path().join("v9");
    fingerprint_into(&crawl, &v9, &["--scheme", "v9"]);
    let got = fingerprints(&v9);
    for (name, simhash) in V9_ENCODED {
        assert_eq!(got[&url_id(&url(name))], simhash, "{name} under v9");
    }
    assert_eq!(got.len(), 5);
    assert_eq!(V9_ENCODED[0].1, plain, "v10 is v9 on a page sent plain");
    // As stored, the chunked page is too far from the plain one for k = 3.
    assert!((V9_ENCODED[2].1 ^ plain).count_ones() > 3);
    assert_eq!(summary(&v9)["bad_records"], 0);

    // `explain` reads a record back as its shard's scheme read it.
    for (out, name, simhash) in [
        (&default, "chunked-gzip", plain),
        (&default, "gzip", plain),
        (&v9, "gzip", V9_ENCODED[1].1),
    ] {
        let json: Value = serde_json::from_str(&run_ok(&[
            "explain",
            "--text",
            &url(name),
            "--fingerprints",
            out.to_str().unwrap(),
            "--json",
        ]))
        .unwrap();
        let hex = |v: &Value| u64::from_str_radix(v.as_str().unwrap(), 16).unwrap();
        assert_eq!(hex(&json["simhash"]), simhash, "{name}: {json}");
        assert_eq!(hex(&json["recomputed"]), simhash, "{name}: {json}");
        let decoded = json["text"] == page.text.as_str();
        assert_eq!(decoded, simhash == plain, "{name}: {json}");
    }
}

/// A run none of whose records could be read (a WET file read as JSONL, a
/// file that is no WARC) fails on one line naming the file, and commits
/// nothing; beside readable files, such a file is one warning. So does a
/// run of empty files, and an empty file beside others warns. A file's
/// bad records are logged up to ten, then one line says the rest are not.
#[test]
fn a_run_with_no_readable_record_fails_on_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let wet = Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples/crawl/text.wet.gz");
    let garbage = d.join("garbage.warc");
    std::fs::write(&garbage, "this is not a WARC file\n".repeat(100)).unwrap();
    let out = d.join("fp");
    let (out_s, wet_s, garbage_s) = (
        out.to_str().unwrap(),
        wet.to_str().unwrap(),
        garbage.to_str().unwrap(),
    );
    for (args, named) in [
        (
            vec![wet_s, "--format", "jsonl"],
            "text.wet.gz: no record could be read as jsonl",
        ),
        (
            vec![garbage_s],
            "garbage.warc: no record could be read as warc",
        ),
    ] {
        let run = neardup(&[&["fingerprint", "--out", out_s, "--input"], &args[..]].concat());
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with("error: ") && stderr.contains(named),
            "{stderr}"
        );
        assert!(stderr.contains("is --format right?"), "{stderr}");
        let left: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|name| name != "garbage.warc")
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }

    // Beside a readable file: one warning for the unreadable one.
    let run = neardup(&["fingerprint", "--out", out_s, "--input", garbage_s, wet_s]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let warned: Vec<&str> = stderr.lines().filter(|l| l.contains("WARN")).collect();
    assert_eq!(warned.len(), 1, "{stderr}");
    assert!(warned[0].contains("garbage.warc: no record could be read as warc"));
    assert_eq!(summary(&out)["bad_records"], 1);

    // A crawl of empty files (a crawler stopped before it wrote) fails on
    // one line too; beside a readable file, an empty one is a warning.
    let empty = d.join("empty.warc.gz");
    std::fs::write(&empty, "").unwrap();
    let empty_s = empty.to_str().unwrap();
    let out_empty = d.join("fp-empty");
    let out_empty_s = out_empty.to_str().unwrap();
    let run = neardup(&["fingerprint", "--out", out_empty_s, "--input", empty_s]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    let refusal = format!("error: {empty_s}: holds no record, nor do the 0 other input file(s)");
    assert!(stderr.starts_with(&refusal), "{stderr}");
    assert!(!out_empty.exists());
    let run = neardup(&[
        "fingerprint",
        "--out",
        out_empty_s,
        "--input",
        empty_s,
        wet_s,
    ]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let warned: Vec<&str> = stderr.lines().filter(|l| l.contains("WARN")).collect();
    assert_eq!(warned.len(), 1, "{stderr}");
    assert!(warned[0].contains(&format!("{empty_s}: holds no record")));

    // Many bad lines among good ones: ten logged, then one line.
    let jsonl = d.join("docs.jsonl");
    let lines: String = (0..40)
        .map(|i| match i % 2 {
            0 => format!("{{\"id\": {i}, \"text\": \"page {i}\"}}\n"),
            _ => "not json\n".to_string(),
        })
        .collect();
    std::fs::write(&jsonl, lines).unwrap();
    let out = d.join("fp-jsonl");
    let run = neardup(&[
        "fingerprint",
        "--out",
        out.to_str().unwrap(),
        "--input",
        jsonl.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert_eq!(
        stderr.matches("bad record at offset").count(),
        10,
        "{stderr}"
    );
    assert_eq!(stderr.matches("more bad records, not logged").count(), 1);
    assert_eq!(summary(&out)["bad_records"], 20);
    assert_eq!(summary(&out)["documents"], 20);
}

/// Responses that are not pages (a redirect, a "Not Found", a server
/// error, each the server's stock body, the same on every site) and pages
/// with nothing to read (an empty body, an app shell, an image) are left
/// out and counted: before, all of them paired across four unrelated
/// sites (84 pairs among 28 records). The sites' own pages are kept.
#[test]
fn responses_that_are_not_pages_and_empty_pages_are_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let crawl = dir.path().join("crawl");
    let manifest = write_crawl_with_manifest("statuses", &crawl);
    let urls = |kind: &str| -> Vec<String> {
        let list = manifest[kind].as_array().unwrap();
        list.iter()
            .map(|u| u.as_str().unwrap().to_string())
            .collect()
    };
    let out = dir.path().join("fp");
    fingerprint_into(&crawl, &out, &[]);
    let mut kept: Vec<i64> = read_documents(&out.join("part-00000.parquet"))
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    kept.sort_unstable();
    let mut pages: Vec<i64> = urls("pages").iter().map(|u| url_id(u)).collect();
    pages.sort_unstable();
    assert_eq!(kept, pages);
    let s = summary(&out);
    assert_eq!(
        s["skipped_records"].as_u64(),
        Some(urls("others").len() as u64)
    );
    assert_eq!(s["empty_pages"].as_u64(), Some(urls("empty").len() as u64));
    assert_eq!(s["files"][0]["empty_pages"], s["empty_pages"]);

    let pairs = dir.path().join("pairs");
    let out_arg = out.to_str().unwrap();
    let matched = neardup(&[
        "match",
        "--queries",
        out_arg,
        "--self",
        "--out",
        pairs.to_str().unwrap(),
    ]);
    assert!(matched.status.success());
    assert!(String::from_utf8_lossy(&matched.stdout).contains(": 0 pairs"));
}

/// wget 1.21 writes `WARC-Target-URI: <http://…>`. From v11 on the brackets
/// are left out of `url` and its id, which are then another tool's, and a
/// relative canonical link resolves; v10 keeps them, and `match` refuses to
/// compare the two schemes' HTML shards, whose ids of such pages differ.
#[test]
fn wget_s_bracketed_target_uris_are_plain_urls_from_v11_on() {
    let dir = tempfile::tempdir().unwrap();
    let page = r#"<html><head><link rel="canonical" href="/docs/page.html"></head><body><main><p>A page wget fetched, with a canonical link of its own and words enough to fingerprint.</p></main></body></html>"#;
    let http = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n{page}");
    let record = format!(
        "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: <http://w.example/docs/page.html>\r\nWARC-Date: 2026-12-01T00:00:00Z\r\nWARC-Record-ID: <urn:uuid:1>\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n{http}\r\n\r\n",
        http.len()
    );
    let crawl = dir.path().join("crawl");
    std::fs::create_dir(&crawl).unwrap();
    std::fs::write(crawl.join("wget.warc"), record).unwrap();
    let rows = |out: &Path| {
        let file = std::fs::File::open(out.join("part-00000.parquet")).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
        let batch = reader.build().unwrap().next().unwrap().unwrap();
        let column = |name: &str| {
            batch
                .column_by_name(name)
                .unwrap()
                .as_string::<i32>()
                .clone()
        };
        let id = batch
            .column_by_name("id")
            .unwrap()
            .as_primitive::<Int64Type>();
        let (url, canonical) = (column("url"), column("canonical_url"));
        let canonical = canonical
            .is_valid(0)
            .then(|| canonical.value(0).to_string());
        (id.value(0), url.value(0).to_string(), canonical)
    };
    let (v10, v11) = (dir.path().join("v10"), dir.path().join("v11"));
    fingerprint_into(&crawl, &v10, &["--scheme", "v10"]);
    fingerprint_into(&crawl, &v11, &[]);
    let bracketed = "<http://w.example/docs/page.html>";
    assert_eq!(rows(&v10), (url_id(bracketed), bracketed.to_string(), None));
    let plain = "http://w.example/docs/page.html";
    let expected = (url_id(plain), plain.to_string(), Some(plain.to_string()));
    assert_eq!(rows(&v11), expected);

    let out = dir.path().join("pairs");
    let refused = neardup(&[
        "match",
        "--queries",
        v11.to_str().unwrap(),
        "--corpus",
        v10.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("uri=unbracketed"), "{stderr}");
    assert!(!out.exists());
}
