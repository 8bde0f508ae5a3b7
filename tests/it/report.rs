//! `neardup report` and the report stage of `neardup run`, on two nights of
//! the sample crawl: the page's figures equal the stages' summaries and
//! what DuckDB computes from the Parquet outputs (`tests/report_expect.py`),
//! the sample pairs' `explain` commands run, and a real browser (Debian's
//! Chromium) loads the page with no error and draws every mark.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use serde_json::Value;

use crate::common::{json_of, neardup, python_with, run_ok};

/// A job over the sample crawl writing nights under `dir/nights/{date}`,
/// appending each night to `dir/corpus`; `verified`: in the quality mode
/// (`verify = true`, the default scheme's sketches, its own corpus only),
/// else scheme v4 against the sample corpus.
fn write_job(dir: &Path, verified: bool) -> PathBuf {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples");
    let (scheme, corpus, verify) = match verified {
        true => ("", String::new(), "verify = true"),
        false => (
            "scheme = \"v4\"",
            format!(
                "\"{}/crawl-fingerprints/part-00000.parquet\", ",
                samples.display()
            ),
            "",
        ),
    };
    let spec = format!(
        r#"
[runtime]
workers = 2

[fingerprint]
input = ["{samples}/crawl/text.wet.gz"]
out = "nights/{{date}}/fingerprints"
{scheme}

[match]
corpus = [{corpus}"corpus"]
out = "nights/{{date}}/pairs"
self = true
{verify}

[cluster]
out = "nights/{{date}}/clusters"

[append]
corpus = "corpus"
batch = "{{date}}"
"#,
        samples = samples.display()
    );
    let path = dir.join("job.toml");
    std::fs::write(&path, spec).unwrap();
    path
}

/// The values of attribute `name` of every element that has `marker` in its
/// tag, in order.
fn attributes(html: &str, marker: &str, name: &str) -> Vec<String> {
    html.split('<')
        .filter(|tag| tag.contains(marker))
        .filter_map(|tag| {
            let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
            Some(tag[at..at + tag[at..].find('"')?].to_string())
        })
        .collect()
}

/// The chart's SVG in the page.
fn chart<'a>(html: &'a str, name: &str) -> &'a str {
    let start = html
        .find(&format!("data-chart=\"{name}\""))
        .unwrap_or_else(|| panic!("no chart {name}"));
    &html[start..start + html[start..].find("</svg>").unwrap()]
}

/// The bars of chart `name`: `(label, value)`, top to bottom.
fn labelled_bars(html: &str, name: &str) -> Vec<(String, u64)> {
    let chart = chart(html, name);
    attributes(chart, "class=\"bar\"", "data-label")
        .into_iter()
        .zip(attributes(chart, "class=\"bar\"", "data-value"))
        .map(|(label, value)| (label, value.parse().unwrap()))
        .collect()
}

/// DuckDB's rows `[label, ..]` as `(label, the count at column `at`)`.
fn labelled_counts(rows: &Value, at: usize) -> Vec<(String, u64)> {
    let rows = rows.as_array().unwrap().iter();
    rows.map(|row| {
        (
            row[0].as_str().unwrap().to_string(),
            row[at].as_u64().unwrap(),
        )
    })
    .collect()
}

/// `data-key` figures of the page: `stage.key` to the value shown.
fn stage_figures(html: &str) -> BTreeMap<String, String> {
    html.split("data-key=\"")
        .skip(1)
        .map(|rest| {
            // The raw value, as the summary has it; the cell shows it
            // formatted for reading.
            let key = &rest[..rest.find('"').unwrap()];
            let value = rest.split("data-value=\"").nth(1).unwrap();
            let value = &value[..value.find('"').unwrap()];
            (key.to_string(), value.to_string())
        })
        .collect()
}

fn summary(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("_summary.json")).unwrap()).unwrap()
}

fn unescape(text: &str) -> String {
    text.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// Checks each figure the page shows against the stage's summary.
fn check_stage_figures(html: &str, night: &Path) {
    let figures = stage_figures(html);
    let stages = [
        ("fingerprint", "fingerprints"),
        ("match", "pairs"),
        ("cluster", "clusters"),
    ];
    let mut checked = 0;
    for (key, shown) in &figures {
        let (stage, path) = key.split_once('.').unwrap();
        let dir = stages.iter().find(|s| s.0 == stage).unwrap().1;
        let mut value = &summary(&night.join(dir));
        for part in path.split('.') {
            value = &value[part];
        }
        let shown = unescape(shown);
        match value {
            Value::Number(n) if n.is_f64() => {
                let v: f64 = shown.parse().unwrap();
                assert!(
                    (v - n.as_f64().unwrap()).abs() < 1e-3,
                    "{key}: {shown} vs {n}"
                );
            }
            Value::String(s) => assert_eq!(&shown, s, "{key}"),
            Value::Array(items) => {
                let items: Vec<&str> = items.iter().map(|i| i.as_str().unwrap()).collect();
                assert_eq!(shown, items.join(", "), "{key}");
            }
            other => assert_eq!(shown, other.to_string(), "{key}"),
        }
        checked += 1;
    }
    for key in [
        "fingerprint.documents",
        "match.pairs",
        "cluster.dropped",
        "cluster.clusters",
    ] {
        assert!(figures.contains_key(key), "{key} shown");
    }
    assert!(checked >= 20, "{checked} figures");
    // The quality mode's figures, only in the quality mode.
    let verified = !summary(&night.join("pairs"))["verify_threshold"].is_null();
    for key in ["match.verify_threshold", "match.candidates"] {
        assert_eq!(figures.contains_key(key), verified, "{key}");
    }
}

/// The values of a bar chart's bars, in order.
fn bar_values(html: &str, name: &str) -> Vec<u64> {
    attributes(chart(html, name), "class=\"bar\"", "data-value")
        .iter()
        .map(|v| v.parse().unwrap())
        .collect()
}

/// Counts by value (a JSON array from 0), 0 to `last`, none beyond it.
fn counts(values: &Value, last: u64) -> Vec<u64> {
    let mut counts: Vec<u64> = values
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert!(counts.len() as u64 <= last + 1, "{counts:?}");
    counts.resize(last as usize + 1, 0);
    counts
}

/// `neardup report` of `nights` into `page`, and the page.
fn report_page(nights: &[&Path], page: &Path) -> String {
    let mut args = vec!["report"];
    args.extend(nights.iter().map(|night| night.to_str().unwrap()));
    args.extend(["--out", page.to_str().unwrap()]);
    run_ok(&args);
    std::fs::read_to_string(page).unwrap()
}

/// Checks the charts and the largest clusters against DuckDB's figures.
fn check_night_details(html: &str, night: &Path) -> Value {
    check_night_over(html, night, None)
}

/// [`check_night_details`] of a night whose pages are `pages` (a glob),
/// not its fingerprint stage's output.
fn check_night_over(html: &str, night: &Path, pages: Option<&str>) -> Value {
    let expected = json_of(
        Command::new(python_with("duckdb"))
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/report_expect.py"))
            .arg(night)
            .args(pages),
    );

    // Pairs by distance, 0 to k, and verified pairs by wide distance, 0 to
    // the threshold: one bar each.
    let pairs = summary(&night.join("pairs"));
    let k = pairs["k"].as_u64().unwrap();
    assert_eq!(
        bar_values(html, "distances"),
        counts(&expected["distances"], k)
    );
    // Verified sample drops give their wide distance, within the threshold.
    let sample_drops = html.matches("<tr class=\"drop\"").count();
    let wide: Vec<u64> = attributes(html, "class=\"drop\"", "data-wide-distance")
        .iter()
        .map(|v| v.parse().unwrap())
        .collect();
    match pairs["verify_threshold"].as_u64() {
        Some(threshold) => {
            let shown = bar_values(html, "wide-distances");
            assert_eq!(shown, counts(&expected["wide_distances"], threshold));
            assert!(
                shown.iter().sum::<u64>() > 0,
                "the night has verified pairs"
            );
            assert!(sample_drops > 0);
            assert_eq!(wide.len(), sample_drops);
            assert!(wide.iter().all(|&w| w <= threshold), "{wide:?}");
        }
        None => {
            assert!(!html.contains("data-chart=\"wide-distances\""));
            assert!(wide.is_empty());
        }
    }

    let sizes = chart(html, "cluster-sizes");
    let points: Vec<(u64, u64)> = attributes(sizes, "class=\"point\"", "data-x")
        .iter()
        .zip(attributes(sizes, "class=\"point\"", "data-y"))
        .map(|(x, y)| (x.parse().unwrap(), y.parse().unwrap()))
        .collect();
    let expected_sizes: Vec<(u64, u64)> = expected["cluster_sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_u64().unwrap(), p[1].as_u64().unwrap()))
        .collect();
    assert_eq!(points, expected_sizes);

    assert_eq!(
        labelled_bars(html, "hosts"),
        labelled_counts(&expected["hosts"], 2)
    );

    // Drops by the key that kept their partner: every drop counted once.
    let bars = labelled_bars(html, "kept-by");
    assert_eq!(bars, labelled_counts(&expected["kept_by"], 1));
    assert_eq!(
        html.matches(", kept by ").count(),
        sample_drops,
        "every sample drop names its key"
    );

    let rows: Vec<(u64, i64, u64)> = attributes(html, "class=\"cluster\"", "data-size")
        .iter()
        .zip(attributes(html, "class=\"cluster\"", "data-id"))
        .zip(attributes(html, "class=\"cluster\"", "data-dropped"))
        .map(|((s, id), d)| (s.parse().unwrap(), id.parse().unwrap(), d.parse().unwrap()))
        .collect();
    let expected_largest: Vec<(u64, i64, u64)> = expected["largest"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c[0].as_u64().unwrap(),
                c[1].as_i64().unwrap(),
                c[2].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(rows, expected_largest);
    // Each cluster's sample shows some pages and counts the rest.
    let samples = html.split("<tr class=\"cluster\"").skip(1);
    for (sample, &(size, id, _)) in samples.zip(&rows) {
        let sample = &sample[..sample.find("</details>").unwrap()];
        let shown =
            sample.matches("<tr><td>kept</td>").count() + sample.matches("class=\"drop\"").count();
        let more: Vec<u64> = attributes(sample, "class=\"more\"", "data-more")
            .iter()
            .map(|m| m.parse().unwrap())
            .collect();
        assert!(more.iter().all(|&m| m > 0), "{id}: {sample}");
        assert_eq!(
            shown as u64 + more.iter().sum::<u64>(),
            size,
            "{id}: {sample}"
        );
    }
    check_page_urls(html, &expected);
    expected
}

/// Each of the largest clusters' representatives shows its URL, from the
/// night's fingerprints or, for a corpus page, from `drop/`; each sample
/// drop shows the URL of the page kept in its place when `drop/` has it.
fn check_page_urls(html: &str, expected: &Value) {
    for shown in expected["representative_urls"].as_array().unwrap() {
        let id = shown[0].as_i64().unwrap();
        let cell = match shown[1].as_str() {
            Some(url) => format!(
                "<span dir=\"ltr\">{}</span> <span class=\"meta\">({id})</span>",
                escape(url)
            ),
            None => format!("id {id} <span class=\"meta\">(a corpus page"),
        };
        assert!(html.contains(&cell), "{cell}");
    }
    if expected["drops_without_keep_url"] == 0 {
        assert!(
            !html.contains("in favour of id "),
            "a kept page without its URL"
        );
    }
    assert!(
        html.contains("in favour of <span dir=\"ltr\">http"),
        "sample drops name their kept page's URL"
    );
}

/// `text` as the page writes it in HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

#[test]
fn the_report_of_two_nights_shows_what_the_outputs_hold() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let job = write_job(d, false);
    for date in ["2026-12-01", "2026-12-02"] {
        let printed = run_ok(&["run", job.to_str().unwrap(), "--date", date]);
        assert!(printed.contains("report: reported 1 night(s)"), "{printed}");
        assert!(d.join(format!("nights/{date}/report.html")).is_file());
    }
    // Done nights are skipped, the report too.
    let again = run_ok(&["run", job.to_str().unwrap(), "--date", "2026-12-02"]);
    assert!(again.contains("report: skipped"), "{again}");

    let (first, second) = (d.join("nights/2026-12-01"), d.join("nights/2026-12-02"));
    // Nights out of date order are named in a warning; a night given twice
    // (here by its path and by a glob) is refused on one line.
    let in_order = |nights: &[&Path]| {
        let mut args = vec!["report".to_string()];
        args.extend(nights.iter().map(|n| n.to_str().unwrap().to_string()));
        args.extend([
            "--out".to_string(),
            d.join("order.html").display().to_string(),
        ]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        neardup(&args)
    };
    let backwards = in_order(&[&second, &first]);
    assert!(backwards.status.success(), "{backwards:?}");
    let said = String::from_utf8_lossy(&backwards.stderr);
    assert!(
        said.contains("night 2026-12-02 is given before night 2026-12-01"),
        "{said}"
    );
    let forwards = in_order(&[&first, &second]);
    assert!(forwards.stderr.is_empty(), "{forwards:?}");
    let twice = in_order(&[&first, &d.join("nights/2026-12-0[1]")]);
    assert!(!twice.status.success());
    let said = String::from_utf8_lossy(&twice.stderr);
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(said.contains("night 2026-12-01 is given twice"), "{said}");
    // The stage's page and the command's are the same page.
    let html = report_page(&[&second], &d.join("report.html"));
    assert_eq!(
        html,
        std::fs::read_to_string(second.join("report.html")).unwrap()
    );
    assert!(!html.contains("<script") && !html.contains("http-equiv"));
    assert!(
        !html.contains(" src=\"") && !html.contains("<link"),
        "nothing fetched"
    );
    check_stage_figures(&html, &second);
    let expected = check_night_details(&html, &second);
    // The same crawl fetched again: every page is dropped for the page kept
    // the night before, now a corpus page; the first night, new pages
    // competing, more than one key was at work on a crawl of several sites.
    let bars = labelled_bars(&html, "kept-by");
    assert!(bars.len() == 1 && bars[0].0 == "corpus", "{bars:?}");
    let first_html = report_page(&[&first], &d.join("first.html"));
    let first_bars = labelled_bars(&first_html, "kept-by");
    assert!(first_bars.len() > 1, "{first_bars:?}");
    // Corpus pages kept for tonight's copies: their URLs come from drop/.
    let from_drops = expected["representative_urls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|shown| shown[2] == "drops")
        .count();
    assert!(from_drops > 0, "{expected}");

    // The drops of a `cluster` before `wide_distance`: the same page.
    let drops = second.join("clusters/drop");
    let before = d.join("drop-before-wide");
    std::fs::rename(&drops, &before).unwrap();
    std::fs::create_dir(&drops).unwrap();
    for part in crate::common::part_files(&before) {
        let file = std::fs::File::open(&part).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
        let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
        let wide = batches[0].schema().index_of("wide_distance").unwrap();
        let kept: Vec<usize> = (0..batches[0].num_columns())
            .filter(|&c| c != wide)
            .collect();
        let out = std::fs::File::create(drops.join(part.file_name().unwrap())).unwrap();
        let schema = Arc::new(batches[0].schema().project(&kept).unwrap());
        let mut writer = ArrowWriter::try_new(out, schema, None).unwrap();
        for batch in &batches {
            writer.write(&batch.project(&kept).unwrap()).unwrap();
        }
        writer.close().unwrap();
    }
    assert!(report_page(&[&second], &d.join("before-wide.html")) == html);

    // Every sample pair's command explains it, as printed: the sample
    // corpus's shards, like the night's, say where each record lies.
    run_explain_commands(&html);
    // A report of a night named from its parent runs its commands from
    // anywhere: the page is opened far from where the job ran.
    let elsewhere = d.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let report = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .current_dir(d)
        .args(["report", "nights/2026-12-02", "--out", "relative.html"])
        .output()
        .unwrap();
    assert!(report.status.success(), "{report:?}");
    let relative = std::fs::read_to_string(d.join("relative.html")).unwrap();
    let command = relative.split("<code>neardup explain ").nth(1).unwrap();
    let command = unescape(&command[..command.find("</code>").unwrap()]);
    let out = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .current_dir(&elsewhere)
        .arg("explain")
        .args(command.split_whitespace())
        .output()
        .unwrap();
    assert!(out.status.success(), "{command}: {out:?}");

    // Two nights: the trends, one point per night and series.
    let html = report_page(&[&first, &second], &d.join("both.html"));
    check_night_details(&html, &second);
    // A glob passes over what lies beside the nights with no stage output
    // (a job's corpus, its logs).
    std::fs::create_dir_all(d.join("nights/logs/old")).unwrap();
    // Nor does it take a hidden directory holding a stage's output.
    let hidden = d.join("nights/_tmp/pairs");
    std::fs::create_dir_all(&hidden).unwrap();
    for file in std::fs::read_dir(second.join("pairs")).unwrap() {
        let file = file.unwrap().path();
        std::fs::copy(&file, hidden.join(file.file_name().unwrap())).unwrap();
    }
    let globbed = report_page(&[&d.join("nights/*")], &d.join("globbed.html"));
    assert!(globbed == html, "the glob's page is the two nights'");
    let volume = chart(&html, "trend-volume");
    assert_eq!(attributes(volume, "class=\"point\"", "data-y").len(), 4);
    let rows: Vec<String> = attributes(&html, "class=\"night\"", "data-night");
    assert_eq!(rows, ["2026-12-01", "2026-12-02"]);
    let pairs: Vec<u64> = attributes(volume, "data-series=\"pairs\"", "data-y")
        .iter()
        .map(|v| v.parse().unwrap())
        .collect();
    let expected: Vec<u64> = [&first, &second]
        .iter()
        .map(|n| summary(&n.join("pairs"))["pairs"].as_u64().unwrap())
        .collect();
    assert_eq!(pairs, expected);
    // The crawl fetched again: the second night scans the first's batch
    // too, older versions of its own pages, which pair with nothing.
    let scanned = |night: &Path| summary(&night.join("pairs"))["rows_scanned"].as_u64();
    assert!(
        scanned(&second) > scanned(&first),
        "the second night also scans the first's batch"
    );
    assert_eq!(expected[1], expected[0]);
    let rates: Vec<f64> = attributes(chart(&html, "trend-drop-rate"), "class=\"point\"", "data-y")
        .iter()
        .map(|v| v.parse().unwrap())
        .collect();
    for (night, rate) in [&first, &second].iter().zip(rates) {
        let dropped = summary(&night.join("clusters"))["dropped"]
            .as_f64()
            .unwrap();
        let documents = summary(&night.join("fingerprints"))["documents"]
            .as_f64()
            .unwrap();
        assert!((rate - dropped / documents).abs() < 1e-12);
    }
}

/// Runs job spec `spec` in `dir` for night 2026-12-01; it must succeed.
fn run_night_of(dir: &Path, spec: &str) {
    run_night_on(dir, spec, "2026-12-01");
}

/// Runs `spec` as `dir`'s job for the night of `date`.
fn run_night_on(dir: &Path, spec: &str, date: &str) {
    std::fs::write(dir.join("job.toml"), spec).unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .current_dir(dir)
        .args(["run", "job.toml", "--date", date])
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
}

/// Runs every sample pair's `explain` command as the page prints it.
fn run_explain_commands(html: &str) {
    let commands: Vec<String> = html
        .split("<code>neardup explain ")
        .skip(1)
        .map(|rest| unescape(&rest[..rest.find("</code>").unwrap()]))
        .collect();
    assert!(!commands.is_empty());
    for command in &commands {
        let args: Vec<&str> = std::iter::once("explain")
            .chain(command.split_whitespace())
            .collect();
        let out = neardup(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("distance: "));
    }
}

/// Nights fingerprinted from a Parquet table with its own column names:
/// their sample pairs' `explain` commands give them, and run as printed,
/// reading each page's row back from the table; on the second night the
/// kept page is a corpus page, whose appended shard has no fingerprint
/// summary for `explain` to read the names from.
#[test]
fn explain_commands_of_a_night_from_a_parquet_table_give_its_columns() {
    use arrow_array::{ArrayRef, Int64Array, StringArray};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = "a page copied word for word to another site, with its own long sentence";
    let other = "a page about something else entirely, which nothing else copies at all";
    let write_table = |date: &str, ids: Vec<i64>, links: Vec<&str>, bodies: Vec<&str>| {
        let batch = RecordBatch::try_from_iter([
            ("doc", Arc::new(Int64Array::from(ids)) as ArrayRef),
            ("link", Arc::new(StringArray::from(links))),
            ("body", Arc::new(StringArray::from(bodies))),
        ])
        .unwrap();
        let table = d.join("tables").join(date);
        std::fs::create_dir_all(&table).unwrap();
        let file = std::fs::File::create(table.join("pages.parquet")).unwrap();
        let mut writer = ArrowWriter::try_new(file, batch.schema(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
    };
    write_table(
        "2026-12-01",
        vec![1, 2, 3],
        vec![
            "https://a.example/copy",
            "https://b.example/copy",
            "https://c.example/other",
        ],
        vec![text, text, other],
    );
    let spec = "[runtime]\nworkers = 1\n\n[fingerprint]\ninput = [\"tables/{date}\"]\n\
                out = \"nights/{date}/fingerprints\"\nid_field = \"doc\"\nurl_field = \"link\"\n\
                text_field = \"body\"\n\n[match]\ncorpus = [\"corpus\"]\nout = \"nights/{date}/pairs\"\n\n\
                [cluster]\nout = \"nights/{date}/clusters\"\n\n[append]\ncorpus = \"corpus\"\nbatch = \"{date}\"\n";
    std::fs::create_dir(d.join("corpus")).unwrap();
    run_night_on(d, spec, "2026-12-01");
    let flags = " --id-field doc --url-field link --text-field body</code>";
    let html = std::fs::read_to_string(d.join("nights/2026-12-01/report.html")).unwrap();
    assert!(html.contains(flags), "{html}");
    run_explain_commands(&html);
    // Tonight's copy of page 1, which the corpus holds since last night.
    write_table(
        "2026-12-02",
        vec![4, 5],
        vec!["https://d.example/copy", "https://e.example/new"],
        vec![
            text,
            "a page that is new tonight and like no other page in the crawl",
        ],
    );
    run_night_on(d, spec, "2026-12-02");
    let html = std::fs::read_to_string(d.join("nights/2026-12-02/report.html")).unwrap();
    assert!(
        html.contains("neardup explain 4 1 --fingerprints"),
        "{html}"
    );
    assert!(html.contains(flags), "{html}");
    run_explain_commands(&html);
}

/// A job whose fingerprints are made elsewhere (no `[fingerprint]`; its
/// B, `[match] queries`, has the pages' URLs), some pages fetched twice:
/// the page counts hosts over B, each page once, and its `explain`
/// commands name B. With B gone from where `match` read it, the page says
/// why it has no hosts.
#[test]
fn a_night_without_a_fingerprint_stage_counts_hosts_over_its_b_each_page_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples/crawl-fingerprints");
    let b = d.join("b");
    std::fs::create_dir(&b).unwrap();
    for (from, to) in [(0, 0), (1, 1), (0, 2)] {
        let name = |i| format!("part-0000{i}.parquet");
        std::fs::copy(samples.join(name(from)), b.join(name(to))).unwrap();
    }
    let spec = "[runtime]\nworkers = 2\n\n[match]\nqueries = [\"b\"]\nout = \"nights/{date}/pairs\"\nself = true\n\n[cluster]\nout = \"nights/{date}/clusters\"\n";
    run_night_of(d, spec);
    let night = d.join("nights/2026-12-01");
    let html = std::fs::read_to_string(night.join("report.html")).unwrap();
    assert!(html.contains("No fingerprint output in this night's directory"));
    let pages = format!("{}/*.parquet", b.display());
    let expected = check_night_over(&html, &night, Some(&pages));
    assert!(!expected["hosts"].as_array().unwrap().is_empty());
    assert!(
        !html.contains("not among tonight's pages"),
        "every drop is B's"
    );
    assert!(html.contains(&format!("--fingerprints {}</code>", b.display())));
    run_explain_commands(&html);

    std::fs::rename(&b, d.join("b-moved")).unwrap();
    let html = report_page(&[&night], &d.join("moved.html"));
    assert!(html.contains("No hosts to count: the night has no fingerprint output, and the files"));
    assert!(
        !html.contains("neardup explain"),
        "no command that cannot run"
    );
}

#[test]
fn a_real_browser_loads_the_report_without_errors_and_draws_every_mark() {
    let chromium = std::env::var_os("NEARDUP_TEST_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/browser");
    if !chromium.exists() || !driver.join("node_modules/playwright-core").exists() {
        eprintln!(
            "skipped: no Chromium at {} or no playwright-core in {} (scripts/test.sh installs both)",
            chromium.display(),
            driver.display()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let job = write_job(d, true);
    for date in ["2026-12-01", "2026-12-02"] {
        run_ok(&["run", job.to_str().unwrap(), "--date", date]);
    }
    let (first, second) = (d.join("nights/2026-12-01"), d.join("nights/2026-12-02"));
    // A corpus batch dated after the run, with a path longer than a phone
    // is wide: its warning wraps too.
    let cluster_summary = second.join("clusters/_summary.json");
    let mut summary_json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&cluster_summary).unwrap()).unwrap();
    let long_path = format!("s3://crawl-archive/corpus/{}/2099-01-01", "x".repeat(120));
    summary_json["corpus_batches"] = serde_json::json!([
        {"batch": long_path, "row_groups": 1, "latest_fetch_time": "2099-01-01T00:00:00Z", "after_now": true},
    ]);
    std::fs::write(&cluster_summary, summary_json.to_string()).unwrap();
    let page = d.join("report.html");
    let html = report_page(&[&first, &second], &page);
    assert!(html.contains("1 corpus batch(es) dated after the run"));
    let shot = d.join("report.png");
    let seen = json_of(
        Command::new("node")
            .arg(driver.join("check_page.mjs"))
            .arg(&page)
            .arg(&shot)
            .env("NEARDUP_TEST_CHROMIUM", &chromium),
    );
    assert_eq!(seen["errors"], serde_json::json!([]), "{seen}");
    // Long values wrap and charts scroll in their box: no sideways page;
    // yet every chart's title shows whole, and every header fits its cell.
    assert!(seen["phone_width"].as_u64().unwrap() <= 375, "{seen}");
    assert_eq!(seen["phone"]["cut_titles"], serde_json::json!([]), "{seen}");
    assert_eq!(
        seen["phone"]["overflowing_headers"],
        serde_json::json!([]),
        "{seen}"
    );
    // The trends' legend is outside the scrolling box, beside the page.
    assert!(
        html.contains("<p class=\"legend\">"),
        "a legend under the trends"
    );

    check_stage_figures(&html, &second);
    let expected = check_night_details(&html, &second);
    let k = summary(&second.join("pairs"))["k"].as_u64().unwrap();
    let charts = &seen["charts"];
    assert_eq!(charts["distances"]["bars"], k + 1);
    let threshold = summary(&second.join("pairs"))["verify_threshold"]
        .as_u64()
        .expect("a night in the quality mode");
    assert_eq!(charts["wide-distances"]["bars"], threshold + 1);
    assert_eq!(
        charts["cluster-sizes"]["points"],
        expected["cluster_sizes"].as_array().unwrap().len()
    );
    assert_eq!(
        charts["hosts"]["bars"],
        expected["hosts"].as_array().unwrap().len()
    );
    assert_eq!(charts["trend-volume"]["points"], 4);
    assert_eq!(charts["trend-drop-rate"]["points"], 2);
    for (name, chart) in charts.as_object().unwrap() {
        assert!(
            chart["width"].as_f64().unwrap() > 300.0,
            "{name} is drawn: {chart}"
        );
        assert!(
            chart["height"].as_f64().unwrap() > 50.0,
            "{name} is drawn: {chart}"
        );
    }
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "a screenshot"
    );
}

/// A night whose pages (B, fingerprinted elsewhere) are files with URLs
/// beside files of ids and fingerprints alone: the report counts the
/// latter as pages without a URL, rather than failing after the stages
/// have committed.
#[test]
fn a_night_of_files_with_and_without_urls_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let queries = d.join("queries");
    std::fs::create_dir(&queries).unwrap();
    let shards = Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples/crawl-fingerprints");
    std::fs::copy(shards.join("part-00000.parquet"), queries.join("a.parquet")).unwrap();
    let mut rng = neardup::random::SplitMix64::new(4);
    let (ids, fps): (Vec<i64>, Vec<u64>) = crate::common::random_rows(&mut rng, 30, 1 << 40)
        .into_iter()
        .unzip();
    neardup::io::parquet::output::write_fingerprints(&queries.join("b.parquet"), &ids, &fps, 10)
        .unwrap();
    let spec = d.join("night.toml");
    let text = "[match]\nqueries = [\"queries\"]\nout = \"nights/{date}/pairs\"\n[cluster]\nout = \"nights/{date}/clusters\"\n";
    std::fs::write(&spec, text).unwrap();
    run_ok(&["run", spec.to_str().unwrap(), "--date", "2026-12-01"]);
    let html = std::fs::read_to_string(d.join("nights/2026-12-01/report.html")).unwrap();
    assert!(html.contains("hosts"), "{html}");
}

#[test]
fn report_refuses_a_missing_or_empty_night_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let out_page = dir.path().join("r.html");
    let check = |night: &Path, names: &str| {
        let out = neardup(&[
            "report",
            night.to_str().unwrap(),
            "--out",
            out_page.to_str().unwrap(),
        ]);
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(names), "{stderr}");
        assert!(!out_page.exists(), "nothing written");
    };
    check(
        &dir.path().join("no-such-night"),
        "no-such-night: cannot read",
    );
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::create_dir(empty.join("pairs")).unwrap();
    check(&empty, "empty: no stage outputs");
    check(
        &dir.path().join("emp*"),
        "emp*: no directory this pattern matches holds stage outputs",
    );
    check(
        &dir.path().join("night-*"),
        "night-*: no night directories match this pattern",
    );
}

/// A stage output without _SUCCESS may be partial: the report refuses it
/// on one line naming it, as it does a stage's summary it cannot read. An
/// --out that is a directory is refused too, and leaves no temporary file
/// beside it; so is one inside a stage's output, and an existing file
/// that is not a report.
#[test]
fn report_refuses_an_unfinished_stage_a_bad_summary_and_an_out_in_a_stage() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let job = write_job(d, false);
    run_ok(&["run", job.to_str().unwrap(), "--date", "2026-12-01"]);
    let night = d.join("nights/2026-12-01");
    let night_arg = night.to_str().unwrap();
    let page_dir = d.join("pages");
    std::fs::create_dir(&page_dir).unwrap();
    let out = neardup(&["report", night_arg, "--out", page_dir.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("pages: is a directory"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");

    // A page written into a stage's output would replace one of its files
    // while its _SUCCESS stays.
    for into in ["pairs/part-00000.parquet", "clusters/drop/page.html"] {
        let target = night.join(into);
        let before = std::fs::read(&target).ok();
        let out = neardup(&["report", night_arg, "--out", target.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("the output overlaps the input"), "{stderr}");
        assert_eq!(std::fs::read(&target).ok(), before, "{into}");
    }

    // A file that is not a report (a corpus shard, a crawl file, the job
    // spec) is not replaced; a report is, as a rerun writes it again.
    let shard = d.join("corpus-shard.parquet");
    std::fs::copy(night.join("pairs/part-00000.parquet"), &shard).unwrap();
    for target in [shard, job.clone()] {
        let before = std::fs::read(&target).unwrap();
        let out = neardup(&["report", night_arg, "--out", target.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("exists and is not a neardup report"),
            "{stderr}"
        );
        assert_eq!(std::fs::read(&target).unwrap(), before);
    }
    let page = d.join("again.html");
    for _ in 0..2 {
        run_ok(&["report", night_arg, "--out", page.to_str().unwrap()]);
    }
    // A directory that is not there is named, not the page's temporary.
    let nowhere = d.join("nowhere/r.html");
    let out = neardup(&["report", night_arg, "--out", nowhere.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let said = format!("{}: no such directory", d.join("nowhere").display());
    assert!(
        stderr.contains(&said) && !stderr.contains("r.html.tmp"),
        "{stderr}"
    );

    // A summary that is not JSON, or names no stage, is an error naming
    // it, not a stage left out of the page.
    let summary = night.join("pairs/_summary.json");
    let kept = std::fs::read(&summary).unwrap();
    for text in ["{not json", "{}"] {
        std::fs::write(&summary, text).unwrap();
        let page = d.join("r.html");
        let out = neardup(&["report", night_arg, "--out", page.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{text}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(&*summary.to_string_lossy()), "{stderr}");
        assert!(!page.exists());
    }
    std::fs::write(&summary, kept).unwrap();

    // Two outputs of one stage (another -k run beside the night's): which
    // is the night's, nothing says.
    let other = night.join("pairs-k6");
    let copied = Command::new("cp")
        .arg("-r")
        .arg(night.join("pairs"))
        .arg(&other)
        .status()
        .unwrap();
    assert!(copied.success());
    let page = d.join("r.html");
    let out = neardup(&["report", night_arg, "--out", page.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("two match outputs") && stderr.contains("pairs-k6"),
        "{stderr}"
    );
    assert!(!page.exists());
    // A hidden one is a stage's staging (a run in progress), passed over.
    std::fs::rename(&other, night.join(".pairs.neardup-staging")).unwrap();
    run_ok(&["report", night_arg, "--out", page.to_str().unwrap()]);
    std::fs::remove_dir_all(night.join(".pairs.neardup-staging")).unwrap();
    std::fs::remove_file(&page).unwrap();

    std::fs::remove_file(night.join("pairs/_SUCCESS")).unwrap();
    let page = d.join("r.html");
    let out = neardup(&["report", night_arg, "--out", page.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    let named = format!("{}: no _SUCCESS", night.join("pairs").display());
    assert!(stderr.contains(&named), "{stderr}");
    assert!(!page.exists());

    // The same night before a finished one: a gap in the trends, named.
    run_ok(&["run", job.to_str().unwrap(), "--date", "2026-12-02"]);
    let html = report_page(&[&d.join("nights/*")], &page);
    assert!(html.contains("left out: 2026-12-01 (match).</p>"), "{html}");
    let row = html.split("data-night=\"2026-12-01\">").nth(1).unwrap();
    let row = &row[..row.find("</tr>").unwrap()];
    assert_eq!(row.matches("<td class=\"n\">-</td>").count(), 1, "{row}");
}
