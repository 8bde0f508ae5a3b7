//! The report's HTML: one self-contained page, its style inline and its
//! charts inline SVG ([`super::svg`]), no script. Every figure is also in
//! the markup as data (`data-key` on a stage figure, `data-size` on a
//! cluster's row), for tests and scripts that read the page.

use std::fmt::Write;

use serde_json::Value;

use super::night::{LargeCluster, Night, SampleDrop, SamplePage, HOSTS, LARGEST_CLUSTERS};
use super::svg::{bars, escape, horizontal_bars, lines, log_log};
use crate::exec::logging::visible_line;
use crate::fingerprint::crawl::TextFields;

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:980px;color:#222;padding:0 1em}\
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:.5em 0}td,th{padding:2px 10px;text-align:left;vertical-align:top}\
th{font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}\
.stages{display:flex;gap:2em;flex-wrap:wrap;align-items:flex-start}.meta{color:#666}\
svg.chart{width:100%;height:auto;max-width:760px;display:block;margin:1em 0}\
svg .title{font-size:15px;font-weight:600}svg .tick,svg .value{font-size:11px;fill:#444}svg .axis-label{font-size:12px}\
code{font-size:12px;background:#f4f4f4;padding:1px 4px;word-break:break-all}details{margin:.3em 0}\
span[dir]{overflow-wrap:anywhere}.figures td{max-width:24em;overflow-wrap:anywhere}.chart-box{overflow-x:auto;scrollbar-width:thin;scrollbar-color:#999 #eee;\
background:linear-gradient(to right,#fff 30%,#fff0),linear-gradient(to left,#fff 30%,#fff0) 100% 0,\
radial-gradient(farthest-side at 0 50%,#0003,#0000),radial-gradient(farthest-side at 100% 50%,#0003,#0000) 100% 0;\
background-repeat:no-repeat;background-size:40px 100%,40px 100%,14px 100%,14px 100%;background-attachment:local,local,scroll,scroll}\
.chart-box::-webkit-scrollbar{height:8px}.chart-box::-webkit-scrollbar-thumb{background:#999;border-radius:4px}\
.chart-box::-webkit-scrollbar-track{background:#eee}svg.chart{min-width:540px}\
.legend{margin:-.5em 0 1em}.legend span{margin-right:1.5em;white-space:nowrap}.swatch{display:inline-block;width:10px;height:10px;margin-right:4px}\
.warn{background:#fff4e5;border-left:4px solid #c8553d;padding:.4em .8em}nav a{margin-right:1em}\
#largest-clusters,.sample{width:100%;table-layout:fixed}#largest-clusters th:nth-child(-n+2){width:5.5em}\
.sample td:first-child{width:30%}#largest-clusters td{overflow-wrap:anywhere}tr.cluster-sample>td{padding-top:0}\
@media (max-width:600px){#largest-clusters td,#largest-clusters th{padding:2px 4px}#largest-clusters th:nth-child(-n+2){width:4.8em}\
.sample td,.sample td:first-child{display:block;width:auto;padding-left:0}.sample td:first-child{font-weight:600;padding-top:.5em}}";

/// How a figure is shown.
#[derive(Clone, Copy)]
enum Shown {
    /// A count: `1,234,567`.
    Count,
    /// Bytes: `368,823 (369 kB)`.
    Bytes,
    /// Seconds, or a rate per second: `0.011`, `738,686`.
    Seconds,
    Rate,
    /// As the summary has it (a name, a list, yes or no).
    Text,
}

/// The figures of each stage's summary, by the keys a user asks about: the
/// summary's key, its label, and how its value is shown.
const FINGERPRINT_KEYS: &[(&str, &str, Shown)] = &[
    ("documents", "documents", Shown::Count),
    ("bad_records", "bad records", Shown::Count),
    ("skipped_records", "skipped records", Shown::Count),
    ("empty_pages", "empty pages, left out", Shown::Count),
    ("html_pages", "HTML pages", Shown::Count),
    (
        "main_content_fallbacks",
        "HTML pages, no main content (main_content = false)",
        Shown::Count,
    ),
    ("bytes", "bytes read", Shown::Bytes),
    ("seconds", "seconds", Shown::Seconds),
    ("documents_per_second", "documents per second", Shown::Rate),
    ("scheme_name", "scheme", Shown::Text),
    ("scheme", "scheme's rules", Shown::Text),
];
const MATCH_KEYS: &[(&str, &str, Shown)] = &[
    ("queries.rows", "queries (B)", Shown::Count),
    ("corpus.rows", "corpus rows (F)", Shown::Count),
    ("k", "k: most bits apart", Shown::Count),
    (
        "verify_threshold",
        "verify threshold (bits of 256)",
        Shown::Count,
    ),
    ("self_join", "B against itself", Shown::Text),
    ("candidates", "candidates verified", Shown::Count),
    ("pairs", "pairs", Shown::Count),
    ("seconds", "seconds", Shown::Seconds),
    ("rows_per_second", "rows per second", Shown::Rate),
];
const CLUSTER_KEYS: &[(&str, &str, Shown)] = &[
    ("pairs", "pairs", Shown::Count),
    ("pages", "pages in pairs", Shown::Count),
    ("clusters", "clusters", Shown::Count),
    ("dropped", "dropped pages", Shown::Count),
    ("largest_cluster", "largest cluster (pages)", Shown::Count),
    (
        "oversized_clusters",
        "clusters above --max-cluster-size",
        Shown::Count,
    ),
    ("drop_policy", "drop policy", Shown::Text),
    ("keep_by", "keep by (--keep-by)", Shown::Text),
    ("seconds", "seconds", Shown::Seconds),
];

/// How every report begins, up to its night's name: what marks a file as
/// a report that `report --out` may replace.
pub(crate) const PAGE_START: &str = concat!(
    "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">",
    "<meta name=\"viewport\" content=\"width=device-width\"><title>neardup report: "
);
const TITLE_START: &str = "neardup report: ";

/// The page for `nights`, the last of them in detail.
pub(crate) fn render(nights: &[Night]) -> String {
    let night = nights.last().expect("at least one night");
    let mut html = String::new();
    let title = escape(&visible_line(&night.dirs.name));
    let _ = write!(
        html,
        "{PAGE_START}{title}</title><style>{STYLE}</style></head><body><h1>{TITLE_START}{title}</h1>",
    );
    let _ = write!(
        html,
        "<p class=\"meta\">{} night(s); written by neardup {}. Figures come from the stages' <code>_summary.json</code> and their Parquet outputs.</p>",
        nights.len(),
        env!("CARGO_PKG_VERSION")
    );
    // Each section as (id, link text, its HTML: empty when the night has
    // nothing for it, and then no link either).
    let trend = match nights.len() > 1 {
        true => trends(nights),
        false => String::new(),
    };
    let sections = [
        ("stages", "Stages", stage_figures(night)),
        ("distances", "Pairs by distance", distances(night)),
        ("wide-distances", "Wide distance", wide_distances(night)),
        ("cluster-sizes", "Cluster sizes", cluster_sizes(night)),
        ("kept-by", "Kept by", kept_by(night)),
        ("hosts", "Hosts", hosts(night)),
        ("largest", "Largest clusters", largest(night)),
        ("trends", "Nights", trend),
    ];
    html.push_str(&contents(&sections));
    html.push_str("<p>A <b>dropped</b> page is a near-duplicate of a page kept in its place: the drop list (<code>drop/</code>) names the pages a crawl can remove or skip.</p>");
    for (i, (_, _, section)) in sections.iter().enumerate() {
        html.push_str(section);
        if i == 0 {
            // The warnings right under the stages' figures.
            html.push_str(&oversized(night));
            html.push_str(&future_batches(night));
        }
    }
    html.push_str("</body></html>\n");
    html
}

/// A summary's value at a dotted key, as the summary has it (a list
/// joined by commas); none for a null, and none for `candidates` unless
/// the pairs were verified (they are all candidates then).
fn raw(summary: &Value, key: &str) -> Option<String> {
    if key == "candidates" && summary["verify_threshold"].is_null() {
        return None;
    }
    let mut value = summary;
    for part in key.split('.') {
        value = value.get(part)?;
    }
    Some(match value {
        Value::Null => return None,
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    })
}

/// A raw value as a reader takes it in: thousands separated, seconds to
/// the millisecond, bytes with their size in kB, MB or GB.
fn shown(raw: &str, how: Shown) -> String {
    let Ok(number) = raw.parse::<f64>() else {
        return match raw {
            "true" => "yes".to_string(),
            "false" => "no".to_string(),
            _ => raw.to_string(),
        };
    };
    match how {
        Shown::Count | Shown::Rate => thousands(number.round() as u64),
        Shown::Seconds => format!("{number:.3}"),
        Shown::Bytes => {
            let (size, unit) = match number {
                n if n >= 1e9 => (n / 1e9, "GB"),
                n if n >= 1e6 => (n / 1e6, "MB"),
                n => (n / 1e3, "kB"),
            };
            format!("{} ({size:.1} {unit})", thousands(number as u64))
        }
        Shown::Text => raw.to_string(),
    }
}

/// `n` things, `one` or `many` of them: `1 page`, `1,234 pages`.
fn count_of(n: u64, one: &str, many: &str) -> String {
    match n {
        1 => format!("1 {one}"),
        n => format!("{} {many}", thousands(n)),
    }
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

fn stage_figures(night: &Night) -> String {
    let mut html = String::from("<section id=\"stages\"><h2>Stages</h2><div class=\"stages\">");
    let stages = [
        ("fingerprint", &night.fingerprint_summary, FINGERPRINT_KEYS),
        ("match", &night.match_summary, MATCH_KEYS),
        ("cluster", &night.cluster_summary, CLUSTER_KEYS),
    ];
    let mut missing = Vec::new();
    for (stage, summary, keys) in stages {
        let Some(summary) = summary else {
            missing.push(stage);
            continue;
        };
        let _ = write!(
            html,
            "<table class=\"figures\" data-stage=\"{stage}\"><caption><b>{stage}</b></caption>"
        );
        for &(key, label, how) in keys.iter() {
            if let Some(value) = raw(summary, key) {
                let _ = write!(
                    html,
                    "<tr><th>{}</th><td class=\"n\" data-key=\"{stage}.{key}\" data-value=\"{}\">{}</td></tr>",
                    escape(label),
                    escape(&value),
                    escape(&shown(&value, how))
                );
            }
        }
        html.push_str("</table>");
    }
    html.push_str("</div>");
    if !missing.is_empty() {
        let _ = write!(
            html,
            "<p class=\"meta\" id=\"missing-stages\">No {} output in this night's directory: {} not shown.</p>",
            missing.join(" or "),
            match missing.as_slice() {
                ["fingerprint"] => "its figures are",
                _ => "their figures, and the sections made from them, are",
            }
        );
    }
    html.push_str("</section>");
    html
}

/// Links to the sections the page has.
fn contents(sections: &[(&str, &str, String)]) -> String {
    let mut html = String::from("<nav aria-label=\"sections\">");
    for (id, name, _) in sections.iter().filter(|s| !s.2.is_empty()) {
        let _ = write!(html, "<a href=\"#{id}\">{name}</a>");
    }
    html.push_str("</nav>");
    html
}

/// A warning for clusters above `--max-cluster-size`: one page kept for
/// thousands is more often a template or a boilerplate page than a copy.
fn oversized(night: &Night) -> String {
    let Some(summary) = &night.cluster_summary else {
        return String::new();
    };
    let count = summary["oversized_clusters"].as_u64().unwrap_or(0);
    if count == 0 {
        return String::new();
    }
    let ids: Vec<String> = summary["oversized"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|c| format!("{} ({} pages)", c["cluster_id"], c["size"]))
                .collect()
        })
        .unwrap_or_default();
    format!(
        "<p class=\"warn\" id=\"oversized\"><b>{count} cluster(s) above --max-cluster-size {}</b>: {}. Check their pages before acting on their drops (a shared template or boilerplate can join unrelated pages).</p>",
        summary["max_cluster_size"],
        escape(&ids.join(", "))
    )
}

/// A warning for corpus batches dated after the run: their pages rank as
/// held the shortest, so a crawler's clock set wrong drops them.
fn future_batches(night: &Night) -> String {
    let Some(summary) = &night.cluster_summary else {
        return String::new();
    };
    // Each path in `<code>`, which breaks anywhere: a long path overflows a
    // phone's screen otherwise.
    let batches: Vec<String> = summary["corpus_batches"]
        .as_array()
        .map(|list| {
            let after = list.iter().filter(|b| b["after_now"] == true);
            let paths = after.filter_map(|b| b["batch"].as_str());
            paths
                .map(|path| format!("<code>{}</code>", escape(path)))
                .collect()
        })
        .unwrap_or_default();
    if batches.is_empty() {
        return String::new();
    }
    format!(
        "<p class=\"warn\" id=\"future-batches\"><b>{} corpus batch(es) dated after the run</b>: {}. Their pages rank as held the shortest, after every other corpus page: check the crawler's clock.</p>",
        batches.len(),
        batches.join(", ")
    )
}

fn distances(night: &Night) -> String {
    if night.dirs.pairs.is_none() {
        return String::new();
    }
    if night.distances.iter().all(|&n| n == 0) {
        return "<section id=\"distances\"><h2>Pairs by distance</h2><p>No pairs tonight.</p></section>".to_string();
    }
    let bars_of: Vec<(String, f64)> = night
        .distances
        .iter()
        .enumerate()
        .map(|(d, &n)| (d.to_string(), n as f64))
        .collect();
    format!(
        "<section id=\"distances\"><h2>Pairs by distance</h2>{}{}</section>",
        bars(
            "distances",
            "Pairs by Hamming distance",
            "distance (bits)",
            "pairs",
            &bars_of
        ),
        bars_table(&["distance (bits)", "pairs"], &bars_of)
    )
}

/// The most bars of the wide-distance chart: a larger threshold's
/// distances are shown in ranges.
const WIDE_BARS: usize = 32;

/// Verified pairs (`match --verify`) by wide distance: how close to the
/// threshold the kept pairs lie.
fn wide_distances(night: &Night) -> String {
    if night.wide_distances.is_empty() {
        return String::new();
    }
    let bars_of = in_ranges(&night.wide_distances, WIDE_BARS);
    format!(
        "<section id=\"wide-distances\"><h2>Verified pairs by wide distance</h2>{}{}</section>",
        bars(
            "wide-distances",
            "Pairs by wide distance, of 256 bits",
            "wide distance (bits)",
            "pairs",
            &bars_of
        ),
        bars_table(&["wide distance (bits)", "pairs"], &bars_of)
    )
}

/// A chart's figures as a table, folded under it: what a screen reader
/// reads, and what a reader copies.
fn figures_table(header: &[&str], rows: impl Iterator<Item = Vec<String>>) -> String {
    let mut html = String::from(
        "<details class=\"figures-table\"><summary>the figures as a table</summary><table><tr>",
    );
    for name in header {
        let _ = write!(html, "<th>{}</th>", escape(name));
    }
    html.push_str("</tr>");
    for row in rows {
        html.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let class = if i > 0 { " class=\"n\"" } else { "" };
            let _ = write!(html, "<td{class}>{}</td>", escape(cell));
        }
        html.push_str("</tr>");
    }
    html.push_str("</table></details>");
    html
}

/// [`figures_table`] of a bar chart's bars.
fn bars_table(header: &[&str], bars: &[(String, f64)]) -> String {
    let rows = bars
        .iter()
        .map(|(label, n)| vec![label.clone(), thousands(*n as u64)]);
    figures_table(header, rows)
}

/// [`figures_table`] of horizontal bars with their notes.
fn notes_table(header: &[&str], rows: &[(String, f64, String)]) -> String {
    let rows = rows
        .iter()
        .map(|(label, n, note)| vec![label.clone(), thousands(*n as u64), note.clone()]);
    figures_table(header, rows)
}

/// `counts` (by value from 0) as at most `most` bars: each value its own
/// bar when they fit, else ranges of equal width, labelled `a-b`.
fn in_ranges(counts: &[u64], most: usize) -> Vec<(String, f64)> {
    let width = counts.len().div_ceil(most.max(1)).max(1);
    counts
        .chunks(width)
        .enumerate()
        .map(|(i, chunk)| {
            let (from, to) = (i * width, i * width + chunk.len() - 1);
            let label = match from == to {
                true => from.to_string(),
                false => format!("{from}-{to}"),
            };
            (label, chunk.iter().sum::<u64>() as f64)
        })
        .collect()
}

fn cluster_sizes(night: &Night) -> String {
    if night.dirs.clusters.is_none() {
        return String::new();
    }
    if night.cluster_sizes.is_empty() {
        return "<section id=\"cluster-sizes\"><h2>Cluster sizes</h2><p>No clusters tonight.</p></section>".to_string();
    }
    let points: Vec<(f64, f64)> = night
        .cluster_sizes
        .iter()
        .map(|(&size, &count)| (size as f64, count as f64))
        .collect();
    let rows = points
        .iter()
        .map(|&(size, n)| vec![thousands(size as u64), thousands(n as u64)]);
    format!(
        "<section id=\"cluster-sizes\"><h2>Cluster sizes</h2>{}{}</section>",
        log_log(
            "cluster-sizes",
            "Clusters by size (log-log)",
            "cluster size (pages)",
            "clusters",
            &points
        ),
        figures_table(&["cluster size (pages)", "clusters"], rows)
    )
}

/// Drops by the key of `--keep-by` their kept page won by.
fn kept_by(night: &Night) -> String {
    if night.kept_by.is_empty() {
        return String::new();
    }
    let dropped: u64 = night.kept_by.iter().map(|(_, n)| n).sum();
    let rows: Vec<(String, f64, String)> = night
        .kept_by
        .iter()
        .map(|(key, n)| {
            let share = *n as f64 / dropped.max(1) as f64;
            (key.clone(), *n as f64, format!("{:.1}%", share * 100.0))
        })
        .collect();
    format!(
        "<section id=\"kept-by\"><h2>Drops by the key that kept their partner</h2>{}{}<p>The first key of <code>--keep-by</code> under which the kept page ranks before the dropped one; <code>id</code>: every key tied, and the smaller id was kept.</p></section>",
        horizontal_bars(
            "kept-by",
            "Dropped pages by the key that kept their partner",
            "dropped pages (and their share of all drops)",
            &rows
        ),
        notes_table(&["key", "dropped pages", "share of all drops"], &rows)
    )
}

fn hosts(night: &Night) -> String {
    if night.dirs.clusters.is_none() {
        return String::new();
    }
    let without =
        |why: &str| format!("<section id=\"hosts\"><h2>Drops by host</h2><p>{why}</p></section>");
    if night.pages.is_empty() {
        return without("No hosts to count: the night has no fingerprint output, and the files <code>match</code> read as B are not where it read them.");
    }
    if !night.has_urls {
        return without("The night's pages have no <code>url</code> column: no hosts to count.");
    }
    if night.hosts.is_empty() {
        return without(&format!(
            "No page dropped tonight is among the night's pages{}.",
            match night.drops_outside {
                0 => String::new(),
                n => format!(" ({} dropped: corpus pages)", count_of(n, "page", "pages")),
            }
        ));
    }
    let (shown, left_out) = night.hosts.split_at(night.hosts.len().min(HOSTS));
    let rows: Vec<(String, f64, String)> = shown
        .iter()
        .map(|h| {
            let rate = h.dropped as f64 / h.pages.max(1) as f64;
            (
                visible_line(&h.host).into_owned(),
                h.dropped as f64,
                format!(
                    "{:.1}% of {}",
                    rate * 100.0,
                    count_of(h.pages, "page", "pages")
                ),
            )
        })
        .collect();
    let mut html = format!(
        "<section id=\"hosts\"><h2>Drops by host</h2>{}",
        horizontal_bars(
            "hosts",
            &match left_out.is_empty() {
                true => "Every host with dropped pages".to_string(),
                false => format!("The {HOSTS} hosts with the most dropped pages"),
            },
            "dropped pages (and the share of the host's pages tonight)",
            &rows
        )
    );
    html.push_str(&notes_table(
        &["host", "dropped pages", "share of its pages tonight"],
        &rows,
    ));
    if !left_out.is_empty() {
        let dropped: u64 = left_out.iter().map(|h| h.dropped).sum();
        let _ = write!(
            html,
            "<p class=\"more-hosts\">Not shown: {}, with {}.</p>",
            count_of(left_out.len() as u64, "more host", "more hosts"),
            count_of(dropped, "dropped page", "dropped pages")
        );
    }
    if night.drops_outside > 0 {
        let _ = write!(
            html,
            "<p>{} not among tonight's pages (corpus pages): not counted by host.</p>",
            count_of(night.drops_outside, "dropped page is", "dropped pages are")
        );
    }
    html.push_str("</section>");
    html
}

/// The most characters of a URL a sample shows: a crawl's longest URLs
/// (tens of kilobytes of query string) would make the page unreadable.
const URL_SHOWN: usize = 300;

/// A page as the samples show it: its URL (control, bidirectional and
/// invisible characters shown as escapes, laid out left to right, cut
/// after [`URL_SHOWN`] characters) and id, or its id and why it has no URL.
fn page_cell(night: &Night, page: &SamplePage) -> String {
    let why = match (&page.url, page.tonight, night.has_urls) {
        (Some(url), _, _) => {
            let url = visible_line(url);
            let cut = match url.char_indices().nth(URL_SHOWN) {
                Some((at, _)) => format!(
                    "{}… <span class=\"meta\">({} more characters)</span>",
                    escape(&url[..at]),
                    thousands((url.chars().count() - URL_SHOWN) as u64)
                ),
                None => escape(&url),
            };
            return format!(
                "<span dir=\"ltr\">{cut}</span> <span class=\"meta\">({})</span>",
                page.id
            );
        }
        (None, true, _) => "tonight's page, fingerprinted without a URL",
        (None, false, true) => "a corpus page: no URL among tonight's fingerprints or drops",
        (None, false, false) => "no URL: the night's fingerprints have none",
    };
    format!("id {} <span class=\"meta\">({why})</span>", page.id)
}

fn largest(night: &Night) -> String {
    if night.dirs.clusters.is_none() {
        return String::new();
    }
    if night.largest.is_empty() {
        return "<section id=\"largest\"><h2>Largest clusters</h2><p>No clusters tonight.</p></section>".to_string();
    }
    let heading = match night.largest.len() {
        n if n >= LARGEST_CLUSTERS => format!("The {LARGEST_CLUSTERS} largest clusters"),
        1 => "The night's one cluster".to_string(),
        n => format!("The night's {n} clusters, largest first"),
    };
    let mut html = format!(
        "<section id=\"largest\"><h2>{heading}</h2><table id=\"largest-clusters\"><tr><th>size</th><th>dropped</th><th>representative (kept)</th></tr>"
    );
    for cluster in &night.largest {
        let _ = write!(
            html,
            "<tr class=\"cluster\" data-size=\"{}\" data-dropped=\"{}\" data-id=\"{}\"><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr><tr class=\"cluster-sample\"><td colspan=\"3\"><details><summary>sample</summary>{}</details></td></tr>",
            cluster.size,
            cluster.dropped,
            cluster.representative.id,
            cluster.size,
            cluster.dropped,
            page_cell(night, &cluster.representative),
            samples(night, cluster)
        );
    }
    html.push_str("</table></section>");
    html
}

/// A cluster's sample pages, kept and dropped, and how many it has besides.
fn samples(night: &Night, cluster: &LargeCluster) -> String {
    let (kept, dropped) = (&cluster.kept_sample, &cluster.dropped_sample);
    let mut html = String::from("<table class=\"sample\">");
    for page in kept {
        let _ = write!(
            html,
            "<tr><td>kept</td><td>{}</td></tr>",
            page_cell(night, page)
        );
    }
    for drop in dropped {
        // Under the component policy a drop has no pair of its own.
        let distance = drop.distance.map_or_else(
            || " (same cluster)".to_string(),
            |d| format!(", {}", count_of(d.max(0) as u64, "bit", "bits")),
        );
        // Verified drops: the wide distance, as an attribute and in words.
        let (wide_attribute, wide) = match drop.wide_distance {
            Some(w) => (
                format!(" data-wide-distance=\"{w}\""),
                format!(" ({w} of 256 with the sketch)"),
            ),
            None => Default::default(),
        };
        let kept_by = drop.kept_by.as_deref().map_or_else(String::new, |key| {
            format!(", kept by {}", escape(&visible_line(key)))
        });
        let _ = write!(
            html,
            "<tr class=\"drop\"{wide_attribute}><td>dropped{distance}{wide}{kept_by}</td><td>{}<br>in favour of {}{}</td></tr>",
            page_cell(night, &drop.page),
            page_cell(night, &drop.keep),
            explain_command(night, drop).map_or_else(String::new, |command| format!(
                "<br><code>{}</code>",
                escape(&command)
            ))
        );
    }
    let more = cluster
        .size
        .saturating_sub((kept.len() + dropped.len()) as u64);
    if more > 0 {
        let _ = write!(
            html,
            "<tr class=\"more\" data-more=\"{more}\"><td colspan=\"2\">and {} more (clusters/ lists every page with its cluster_id)</td></tr>",
            thousands(more)
        );
    }
    html.push_str("</table>");
    html
}

/// The command that explains a sample pair; none without fingerprints to
/// find its pages in. A page's row in a Parquet or JSONL.gz input is found
/// by the fields `fingerprint` read, given when not the defaults: `explain`
/// reads them beside a night's shards, but the corpus's appended copies
/// have no fingerprint summary.
pub(crate) fn explain_command(night: &Night, drop: &SampleDrop) -> Option<String> {
    if night.explain_fingerprints.is_empty() {
        return None;
    }
    let mut command = format!(
        "neardup explain {} {} --fingerprints",
        drop.page.id, drop.keep.id
    );
    for spec in &night.explain_fingerprints {
        command.push(' ');
        command.push_str(&shell_quoted(spec));
    }
    // `explain`'s defaults are `fingerprint`'s.
    let defaults = TextFields::default();
    for (key, flag, default) in [
        ("id_field", "--id-field", &defaults.id),
        ("url_field", "--url-field", &defaults.url),
        ("text_field", "--text-field", &defaults.text),
    ] {
        let given = (night.fingerprint_summary.as_ref()).and_then(|summary| summary[key].as_str());
        if let Some(field) = given.filter(|field| field != default) {
            command.push_str(&format!(" {flag} {}", shell_quoted(field)));
        }
    }
    Some(command)
}

fn shell_quoted(text: &str) -> String {
    match text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-:=+@".contains(c))
    {
        true => text.to_string(),
        false => format!("'{}'", text.replace('\'', r"'\''")),
    }
}

fn trends(nights: &[Night]) -> String {
    let names: Vec<String> = nights.iter().map(|n| n.dirs.name.clone()).collect();
    // A night without a figure is a gap in its line, never a zero.
    let figure = |f: &dyn Fn(&Night) -> Option<u64>| -> Vec<Option<f64>> {
        nights.iter().map(|n| f(n).map(|v| v as f64)).collect()
    };
    let pages = figure(&Night::documents);
    let pairs = figure(&Night::pairs);
    let rates: Vec<Option<f64>> = nights
        .iter()
        .map(|n| match (n.dropped(), n.documents()) {
            (Some(dropped), Some(pages)) if pages > 0 => Some(dropped as f64 / pages as f64),
            _ => None,
        })
        .collect();
    let mut html = String::from("<section id=\"trends\"><h2>Nights</h2>");
    html.push_str(&lines(
        "trend-volume",
        "Pages and pairs per night",
        "count",
        &names,
        &[("pages".into(), pages), ("pairs".into(), pairs)],
        false,
    ));
    html.push_str(&lines(
        "trend-drop-rate",
        "Drop rate per night",
        "drop rate",
        &names,
        &[("drop rate".into(), rates)],
        true,
    ));
    html.push_str("<p>The drop rate is a night's dropped pages, corpus pages dropped for it among them, per page it fingerprinted; a night without one of the figures has no point.</p>");
    let unfinished: Vec<String> = (nights.iter())
        .filter(|night| !night.unfinished.is_empty())
        .map(|night| {
            format!(
                "{} ({})",
                escape(&visible_line(&night.dirs.name)),
                night.unfinished.join(", ")
            )
        })
        .collect();
    if !unfinished.is_empty() {
        let _ = write!(
            html,
            "<p class=\"warn\" id=\"unfinished\">Stages that did not finish (no <code>_SUCCESS</code>), left out: {}.</p>",
            unfinished.join("; ")
        );
    }
    html.push_str(
        "<table id=\"nights\"><tr><th>night</th><th>pages</th><th>pairs</th><th>dropped</th></tr>",
    );
    for night in nights {
        let cell = |v: Option<u64>| v.map_or_else(|| "-".to_string(), thousands);
        let _ = write!(
            html,
            "<tr class=\"night\" data-night=\"{n}\"><td>{n}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            cell(night.documents()),
            cell(night.pairs()),
            cell(night.dropped()),
            n = escape(&visible_line(&night.dirs.name))
        );
    }
    html.push_str("</table></section>");
    html
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn page(id: i64, url: Option<&str>, tonight: bool) -> SamplePage {
        SamplePage {
            id,
            url: url.map(str::to_string),
            tonight,
        }
    }

    #[test]
    fn a_page_shows_its_url_safely_or_why_it_has_none() {
        let mut night = Night {
            has_urls: true,
            ..Night::default()
        };
        let reversed = page(1, Some("https://a.example/\u{202e}exe.gpj<b>"), true);
        assert_eq!(
            page_cell(&night, &reversed),
            "<span dir=\"ltr\">https://a.example/\\u{202e}exe.gpj&lt;b&gt;</span> <span class=\"meta\">(1)</span>"
        );
        // Two URLs that differ where nothing shows never look the same.
        let hidden = page(4, Some("https://ws.example/x\ny\u{2060}"), true);
        assert!(page_cell(&night, &hidden).contains("https://ws.example/x\\u{000a}y\\u{2060}<"));
        // A URL of 50,000 characters shows its first 300.
        let long = format!("https://a.example/?q={}", "é".repeat(50_000));
        let cell = page_cell(&night, &page(5, Some(&long), true));
        assert!(cell.len() < 1_000, "{cell}");
        assert!(
            cell.contains("… <span class=\"meta\">(49,721 more characters)</span>"),
            "{cell}"
        );
        assert!(page_cell(&night, &page(2, None, true)).contains("tonight's page"));
        assert!(page_cell(&night, &page(3, None, false)).contains("a corpus page"));
        night.has_urls = false;
        assert!(page_cell(&night, &page(3, None, false)).contains("have none"));
    }

    #[test]
    fn an_empty_night_says_so_and_oversized_clusters_and_future_batches_are_named() {
        let mut night = Night::default();
        night.dirs.pairs = Some(PathBuf::from("pairs"));
        night.dirs.clusters = Some(PathBuf::from("clusters"));
        night.distances = vec![0; 4];
        night.cluster_summary = Some(serde_json::json!({
            "max_cluster_size": 1000,
            "oversized_clusters": 1,
            "oversized": [{"cluster_id": -5, "size": 5000}],
            "corpus_batches": [
                {"batch": "corpus/2026-12-01", "after_now": false},
                {"batch": "corpus/2099-01-01", "after_now": true},
            ],
        }));
        let html = render(&[night]);
        assert!(html.contains("No pairs tonight."));
        assert!(!html.contains("data-chart=\"distances\""));
        assert!(html.contains("No clusters tonight."));
        assert!(html.contains("1 cluster(s) above --max-cluster-size 1000</b>: -5 (5000 pages)"));
        assert!(html.contains(
            "1 corpus batch(es) dated after the run</b>: <code>corpus/2099-01-01</code>."
        ));
        assert!(html.contains("<a href=\"#largest\">"));
        assert!(!html.contains("<a href=\"#trends\">"));
    }

    #[test]
    fn each_chart_has_its_figures_as_a_table() {
        let mut night = Night::default();
        night.dirs.pairs = Some(PathBuf::from("pairs"));
        night.distances = vec![5, 0, 1234];
        let html = distances(&night);
        assert!(html.contains("<summary>the figures as a table</summary>"));
        assert!(html.contains("<tr><td>2</td><td class=\"n\">1,234</td></tr>"));
        night.has_urls = true;
        night.dirs.clusters = Some(PathBuf::from("clusters"));
        night.pages = vec!["fingerprints".into()];
        night.hosts = vec![crate::report::night::HostDrops {
            host: "a.example\u{202e}".into(),
            pages: 8,
            dropped: 1,
        }];
        let html = hosts(&night);
        assert!(html.contains("<td>a.example\\u{202e}</td><td class=\"n\">1</td><td class=\"n\">12.5% of 8 pages</td>"));
    }

    /// Beyond the hosts shown, one line counts the hosts and drops left
    /// out: a crawl has thousands of hosts with a drop.
    #[test]
    fn the_hosts_left_out_are_counted_in_a_line() {
        let mut night = Night {
            has_urls: true,
            ..Night::default()
        };
        night.dirs.clusters = Some(PathBuf::from("clusters"));
        night.pages = vec!["fingerprints".into()];
        night.hosts = (0..HOSTS + 2)
            .map(|i| crate::report::night::HostDrops {
                host: format!("h{i}.example"),
                pages: 10,
                dropped: 3,
            })
            .collect();
        let html = hosts(&night);
        assert!(html.contains(&format!("The {HOSTS} hosts with the most dropped pages")));
        assert!(
            html.contains("Not shown: 2 more hosts, with 6 dropped pages."),
            "{html}"
        );
        assert!(!html.contains(&format!("h{HOSTS}.example")));
        night.hosts.truncate(HOSTS);
        let html = hosts(&night);
        assert!(html.contains("Every host with dropped pages") && !html.contains("more-hosts"));
    }

    #[test]
    fn a_section_without_figures_says_why_in_words() {
        let mut night = Night::default();
        night.dirs.clusters = Some(PathBuf::from("clusters"));
        night.has_urls = true;
        night.drops_outside = 1;
        assert!(hosts(&night).contains("the night has no fingerprint output, and the files"));
        night.pages = vec!["in/night.parquet".into()];
        // Drops, none of tonight's pages among them: a sentence, no chart.
        let html = hosts(&night);
        assert!(html.contains("No page dropped tonight is among the night's pages (1 page dropped: corpus pages)."), "{html}");
        assert!(!html.contains("<svg"));
        // A night without a cluster output says so under the stages.
        night.match_summary = Some(serde_json::json!({"pairs": 3}));
        night.dirs.clusters = None;
        let html = stage_figures(&night);
        assert!(
            html.contains("No fingerprint or cluster output in this night's directory"),
            "{html}"
        );
        assert_eq!(
            (count_of(1, "bit", "bits"), count_of(1234, "bit", "bits")),
            ("1 bit".into(), "1,234 bits".into())
        );
    }

    #[test]
    fn figures_are_shown_as_a_reader_takes_them_in() {
        assert_eq!(shown("1234567", Shown::Count), "1,234,567");
        assert_eq!(shown("999", Shown::Count), "999");
        assert_eq!(shown("738685.5", Shown::Rate), "738,686");
        assert_eq!(shown("0.010829008", Shown::Seconds), "0.011");
        assert_eq!(shown("368823", Shown::Bytes), "368,823 (368.8 kB)");
        assert_eq!(shown("true", Shown::Text), "yes");
        assert_eq!(shown("v4", Shown::Text), "v4");
    }

    #[test]
    fn counts_are_bars_of_their_own_until_they_need_ranges() {
        let labels = |bars: &[(String, f64)]| bars.iter().map(|b| b.0.clone()).collect::<Vec<_>>();
        let few = in_ranges(&[5, 0, 7], 32);
        assert_eq!(labels(&few), ["0", "1", "2"]);
        assert_eq!(few.iter().map(|b| b.1).collect::<Vec<_>>(), [5.0, 0.0, 7.0]);
        // 0..=40 in ranges of two, the last value alone; no pair is lost.
        let counts: Vec<u64> = (0..41).collect();
        let ranged = in_ranges(&counts, 32);
        assert_eq!(ranged.len(), 21);
        assert_eq!((ranged[0].0.as_str(), ranged[0].1), ("0-1", 1.0));
        assert_eq!((ranged[20].0.as_str(), ranged[20].1), ("40", 40.0));
        let total: f64 = ranged.iter().map(|b| b.1).sum();
        assert_eq!(total, counts.iter().sum::<u64>() as f64);
    }
}
