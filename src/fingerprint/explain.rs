//! `neardup explain`: why two pages were called near-duplicates, and what
//! text a page was fingerprinted from.
//!
//! A page is looked up by id or URL in fingerprint shards. Its record is
//! read back from the shard's `source`, `offset` and `length` (one ranged
//! read, local or from an object store), and its text is chosen again
//! under the shard's scheme, so the text shown is the text that was
//! hashed. The fingerprint recomputed from it is compared with the stored
//! one: they differ only if the file changed since, or the scheme's rules
//! did (which a published scheme never does).
//!
//! A Parquet or JSONL input is read with the id, url and text fields that
//! `fingerprint` recorded in the `_summary.json` beside the shard, unless
//! the command line names them: shards copied without their summary, or
//! made by another tool, need the flags.
//!
//! For two pages it shows a word diff of the texts and the features that
//! push the bits the two fingerprints disagree on, and, when both shards
//! hold sketches, the pages' wide distance: what `match --verify` compares.
//! A feature's push on bit
//! `i` is its weight in one page minus its weight in the other, signed by
//! bit `i` of its hash; it counts toward the disagreement when it moves the
//! two sums the way the two bits differ.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use anyhow::{bail, Context, Result};
use arrow_array::{Array, FixedSizeBinaryArray, Int64Array, RecordBatch, UInt64Array};
use serde::Serialize;
use similar::{ChangeTag, TextDiff};

use crate::exec::logging::{visible, visible_line};
use crate::fingerprint::crawl::html::{page_text, Extracted};
use crate::fingerprint::crawl::{read_file, record_in_span, Document, Format, Record, TextFields};
use crate::fingerprint::scheme::Scheme;
use crate::fingerprint::simhash::{
    feature_list, fingerprint_page, hash_feature, heading_copies, FeatureList,
};
use crate::io::parquet::columns::{check_int64, string_values};
use crate::io::parquet::input::expand_locations_with;
use crate::io::parquet::pages::PagesTable;
use crate::io::parquet::{
    sketch_of_bytes, wide_distance, Sketch, METADATA_KEY, SKETCH_BYTES, SKETCH_COLUMN,
};
use crate::io::storage::{is_url, Location};

/// What `neardup explain` was asked.
#[derive(Clone, Debug)]
pub(crate) struct ExplainOptions {
    /// One page (its text alone) or two (why they matched): ids or URLs.
    pub(crate) pages: Vec<String>,
    /// The fingerprint shards to look the pages up in.
    pub(crate) fingerprints: Vec<String>,
    /// JSON on stdout instead of text.
    pub(crate) json: bool,
    /// The most features shown.
    pub(crate) top_features: usize,
    /// The id, url and text fields of JSONL and Parquet input named on the
    /// command line.
    pub(crate) fields: GivenFields,
}

/// The input fields named on the command line; each one not named is the
/// one `fingerprint` recorded beside the shard, else its default.
#[derive(Clone, Debug, Default)]
pub(crate) struct GivenFields {
    pub(crate) id: Option<String>,
    pub(crate) url: Option<String>,
    pub(crate) text: Option<String>,
}

/// The fields to read the input of `shard` with: those given, else those
/// in the `_summary.json` of the shard's directory, else the defaults.
fn fields_for(shard: &str, given: &GivenFields) -> TextFields {
    let recorded = recorded_fields(shard);
    let field = |given: &Option<String>, key: &str, default: String| {
        given
            .clone()
            .or_else(|| recorded.as_ref()?[key].as_str().map(str::to_string))
            .unwrap_or(default)
    };
    let defaults = TextFields::default();
    TextFields {
        id: field(&given.id, "id_field", defaults.id),
        url: field(&given.url, "url_field", defaults.url),
        text: field(&given.text, "text_field", defaults.text),
        time: None,
    }
}

/// The `_summary.json` beside `shard`, if it has one that reads as JSON.
fn recorded_fields(shard: &str) -> Option<serde_json::Value> {
    let summary = match (is_url(shard), shard.rsplit_once('/')) {
        (true, Some((dir, _))) => format!("{dir}/_summary.json"),
        (true, None) => return None,
        (false, _) => {
            let dir = Path::new(shard)
                .parent()
                .filter(|dir| !dir.as_os_str().is_empty());
            dir.unwrap_or(Path::new("."))
                .join("_summary.json")
                .display()
                .to_string()
        }
    };
    let read = crate::io::storage::read_head(&summary, u64::MAX);
    let bytes = match read {
        Ok(bytes) => bytes?,
        Err(error) => {
            tracing::warn!("{error:#}; the input fields are the flags' defaults");
            return None;
        }
    };
    serde_json::from_slice(&bytes)
        .map_err(|error| {
            tracing::warn!(
                "{summary}: not JSON ({error}); the input fields are the flags' defaults"
            )
        })
        .ok()
}

/// A page as its shard holds it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct StoredPage {
    pub(crate) id: i64,
    pub(crate) url: Option<String>,
    /// The stored fingerprint, as hex of its 64 bits.
    #[serde(serialize_with = "as_hex")]
    pub(crate) simhash: u64,
    pub(crate) source: Option<String>,
    pub(crate) offset: Option<i64>,
    pub(crate) length: Option<i64>,
    /// The stored sketch, if the shard has one (hex of its three words).
    #[serde(serialize_with = "sketch_as_hex")]
    pub(crate) sketch: Option<Sketch>,
    /// The shard's scheme string.
    pub(crate) scheme: Option<String>,
    /// The shard the page was found in.
    pub(crate) shard: String,
    /// Which `--fingerprints` path holds the shard (0: the first).
    #[serde(skip)]
    pub(crate) path: usize,
    /// How many rows `--fingerprints` holds for the page (a page fetched
    /// again has one a fetch).
    pub(crate) rows: usize,
}

/// A page with the text it was fingerprinted from.
#[derive(Debug, Serialize)]
pub(crate) struct ExplainedPage {
    #[serde(flatten)]
    pub(crate) stored: StoredPage,
    /// The fingerprint of `text` under the shard's scheme.
    #[serde(serialize_with = "as_hex")]
    pub(crate) recomputed: u64,
    /// Characters of `text` once normalised, as the shards' `n_chars` counts.
    pub(crate) n_chars: u32,
    /// The shard's scheme, as its description names it.
    #[serde(skip)]
    pub(crate) scheme: Scheme,
    /// Whether the record was HTML (its text chosen by the scheme's rules).
    pub(crate) html: bool,
    /// Whether main-content extraction found nothing and fell back to all
    /// the text.
    pub(crate) main_content_fallback: bool,
    pub(crate) text: String,
    /// Where `text` holds a heading's text, whose features weigh more.
    #[serde(skip)]
    pub(crate) headings: Vec<std::ops::Range<usize>>,
}

/// A run of words of the diff.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub(crate) struct DiffPart {
    /// `equal`, `delete` (only in the first page) or `insert` (only in the
    /// second).
    pub(crate) op: &'static str,
    pub(crate) text: String,
}

/// A feature and how much it pushes the bits the two pages disagree on.
#[derive(Debug, Serialize)]
pub(crate) struct FeaturePush {
    pub(crate) feature: String,
    pub(crate) count_a: u32,
    pub(crate) count_b: u32,
    /// Of the disagreeing bits, those it pushes toward the disagreement.
    pub(crate) bits: Vec<u32>,
    /// Its push summed over the disagreeing bits (weight units).
    pub(crate) push: f64,
}

/// Why two pages matched.
#[derive(Debug, Serialize)]
pub(crate) struct Explanation {
    pub(crate) a: ExplainedPage,
    pub(crate) b: ExplainedPage,
    pub(crate) distance: u32,
    /// Bits apart over fingerprints and sketches (256 bits), when both
    /// pages have sketches.
    pub(crate) wide_distance: Option<u32>,
    pub(crate) differing_bits: Vec<u32>,
    /// The features each text was cut into (`chars:5`, `words`, ...).
    pub(crate) features: String,
    pub(crate) diff: Vec<DiffPart>,
    pub(crate) top_features: Vec<FeaturePush>,
}

fn as_hex<S: serde::Serializer>(value: &u64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&format_args!("{value:016x}"))
}

fn sketch_as_hex<S: serde::Serializer>(
    value: &Option<Sketch>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some([a, b, c]) => serializer.collect_str(&format_args!("{a:016x}{b:016x}{c:016x}")),
        None => serializer.serialize_none(),
    }
}

/// Runs `neardup explain`, writing to stdout.
pub(crate) fn run_explain(opts: &ExplainOptions) -> Result<()> {
    let stored = closest_rows(find_pages(&opts.fingerprints, &opts.pages)?);
    if let [a, b] = &stored[..] {
        // Two fetches of one page compare; one row with itself says nothing.
        if (a.id, &a.shard, a.offset) == (b.id, &b.shard, b.offset) {
            bail!(
                "{} and {} are the same row of one page (id {}): give two pages, or --text {} for its text",
                opts.pages[0],
                opts.pages[1],
                a.id,
                opts.pages[0]
            );
        }
    }
    let pages = stored
        .into_iter()
        .map(|page| explain_page(page, &opts.fields))
        .collect::<Result<Vec<_>>>()?;
    let mut out = std::io::stdout().lock();
    let color = crate::exec::logging::colours_on(&std::io::stdout());
    let written = match <[ExplainedPage; 2]>::try_from(pages) {
        Ok([a, b]) => {
            let explanation = explain_pair(a, b, opts.top_features);
            match opts.json {
                true => writeln!(out, "{}", serde_json::to_string_pretty(&explanation)?),
                false => out.write_all(render_pair(&explanation, color).as_bytes()),
            }
        }
        Err(mut one) => {
            let page = one.remove(0);
            match opts.json {
                true => writeln!(out, "{}", serde_json::to_string_pretty(&page)?),
                false => writeln!(out, "{}", visible(&page.text)),
            }
        }
    };
    match written {
        // A reader that stopped early (`| head`) has what it wanted.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        written => written.context("cannot write to stdout"),
    }
}

/// Of each page's rows, the one explained: for two pages, the two rows
/// closest in fingerprint (the rows `match` pairs, when a page fetched
/// again has rows of other content), else the first found. A page the
/// first `--fingerprints` path holds counts its rows there alone: the
/// night's shards come first (as in the report's command), and `match`
/// pairs a page the night fetched again by its new row, passing over
/// its older rows in the corpus (where every row counts).
fn closest_rows(found: Vec<Vec<StoredPage>>) -> Vec<StoredPage> {
    let totals: Vec<usize> = found.iter().map(Vec::len).collect();
    let found: Vec<Vec<StoredPage>> = found.into_iter().map(tonights_if_any).collect();
    let chosen = match &found[..] {
        [a, b] => {
            let pairs = (0..a.len()).flat_map(|i| (0..b.len()).map(move |j| (i, j)));
            let apart = |&(i, j): &(usize, usize)| (a[i].simhash ^ b[j].simhash).count_ones();
            let (i, j) = pairs.min_by_key(apart).unwrap_or((0, 0));
            vec![i, j]
        }
        _ => vec![0; found.len()],
    };
    let alone = found.len() == 1;
    let taken = found.into_iter().zip(chosen).zip(totals);
    let taken = taken.map(|((mut pages, at), rows)| {
        if alone && rows > 1 {
            tracing::warn!(
                "{}: {rows} rows in --fingerprints (fetched {rows} times); the first found is shown",
                pages[0].id
            );
        }
        let mut page = pages.swap_remove(at);
        page.rows = rows;
        page
    });
    taken.collect()
}

/// A page's rows in the first `--fingerprints` path if it has any there,
/// else all of them.
fn tonights_if_any(mut rows: Vec<StoredPage>) -> Vec<StoredPage> {
    if rows.iter().any(|row| row.path == 0) {
        rows.retain(|row| row.path == 0);
    }
    rows
}

/// The pages `wanted` (ids or URLs) in the shards of `specs`, in the order
/// asked, each with every row found, in the order read.
pub(crate) fn find_pages(specs: &[String], wanted: &[String]) -> Result<Vec<Vec<StoredPage>>> {
    const COLUMNS: [&str; 6] = [
        "url",
        "simhash",
        "source",
        "offset",
        "length",
        SKETCH_COLUMN,
    ];
    // A shard's `simhash` is what a pair is explained by: a file without
    // it (a cluster output, say) is named, not one of its rows.
    let table = PagesTable::open(
        "--fingerprints",
        specs,
        (&["simhash".to_string()], "--fingerprints must have"),
        check_int64,
        &COLUMNS,
        |_, _, _| Ok(()),
    )?;
    // An id as its unsigned value too (other tools print the hash so): the
    // same 64 bits.
    let ids: Vec<Option<i64>> = wanted
        .iter()
        .map(|w| (w.parse().ok()).or_else(|| w.parse::<u64>().ok().map(|id| id as i64)))
        .collect();
    let mut found: Vec<Vec<StoredPage>> = vec![Vec::new(); wanted.len()];
    for unit in 0..table.units() {
        let shard = table.unit_path(unit).to_string();
        let path = (specs.iter().position(|spec| spec == table.unit_spec(unit))).unwrap_or(0);
        let scheme = table.unit_metadata(unit, METADATA_KEY);
        table.read_unit_columns(unit, &COLUMNS, |row_ids, batch, location| {
            let urls = optional_strings(batch, "url", location)?;
            let sources = optional_strings(batch, "source", location)?;
            let at = |values: &Option<Vec<Option<&str>>>, row: usize| {
                values.as_ref().and_then(|v| v[row]).map(str::to_string)
            };
            for (row, &id) in row_ids.iter().enumerate() {
                let url = urls.as_ref().and_then(|urls| urls[row]);
                for (w, want) in wanted.iter().enumerate() {
                    let hit = match ids[w] {
                        Some(wanted_id) => wanted_id == id,
                        None => url == Some(want.as_str()),
                    };
                    if hit {
                        found[w].push(StoredPage {
                            id,
                            url: at(&urls, row),
                            simhash: required_i64(batch, "simhash", row, location)? as u64,
                            source: at(&sources, row),
                            offset: optional_i64(batch, "offset", row),
                            length: optional_i64(batch, "length", row),
                            sketch: optional_sketch(batch, row),
                            scheme: scheme.clone(),
                            shard: shard.clone(),
                            path,
                            rows: 1,
                        });
                    }
                }
            }
            Ok(())
        })?;
    }
    let files = table.units();
    found
        .into_iter()
        .zip(wanted)
        .map(|(rows, want)| {
            (!rows.is_empty()).then_some(rows).with_context(|| {
                format!(
                    "{want}: no page with this id or URL in --fingerprints {} ({files} row group{})",
                    specs.join(" "),
                    if files == 1 { "" } else { "s" }
                )
            })
        })
        .collect()
}

/// The values of a string column, if the batch has it.
fn optional_strings<'a>(
    batch: &'a RecordBatch,
    name: &str,
    location: &str,
) -> Result<Option<Vec<Option<&'a str>>>> {
    let Some(column) = batch.column_by_name(name) else {
        return Ok(None);
    };
    Ok(Some(string_values(column, name, location)?.collect()))
}

/// Row `row` of an INT64 or UINT64 column, if the batch has it and it is
/// not null.
fn optional_i64(batch: &RecordBatch, name: &str, row: usize) -> Option<i64> {
    let column = batch.column_by_name(name)?;
    if column.is_null(row) {
        return None;
    }
    let any = column.as_any();
    if let Some(values) = any.downcast_ref::<Int64Array>() {
        return Some(values.value(row));
    }
    any.downcast_ref::<UInt64Array>()
        .map(|values| values.value(row) as i64)
}

/// Row `row`'s sketch, if the batch has a `sketch` column of sketches.
fn optional_sketch(batch: &RecordBatch, row: usize) -> Option<Sketch> {
    let column = batch.column_by_name(SKETCH_COLUMN)?;
    let values = column.as_any().downcast_ref::<FixedSizeBinaryArray>()?;
    let whole = values.value_length() as usize == SKETCH_BYTES && !values.is_null(row);
    whole.then(|| sketch_of_bytes(values.value(row)))
}

fn required_i64(batch: &RecordBatch, name: &str, row: usize, location: &str) -> Result<i64> {
    optional_i64(batch, name, row)
        .with_context(|| format!("{location}: no INT64 `{name}` value for row {row}"))
}

/// The page's record read back and its text chosen as `fingerprint` chose it.
fn explain_page(stored: StoredPage, given: &GivenFields) -> Result<ExplainedPage> {
    let Some(source) = &stored.source else {
        bail!(
            "page {} ({}): no `source`, `offset` and `length` to read its record back from \
             (its shard lacks the columns)",
            stored.id,
            stored.shard
        );
    };
    let description = stored
        .scheme
        .as_deref()
        .with_context(|| format!("{}: the shard records no scheme", stored.shard))?;
    let scheme = Scheme::from_description(description).with_context(|| {
        format!(
            "{}: scheme `{description}` is not one this neardup computes",
            stored.shard
        )
    })?;
    let location = source_location(source, &stored.shard)?;
    let format = Format::from_path(&location)?;
    let fields = &fields_for(&stored.shard, given);
    let document = match (stored.offset, stored.length) {
        (Some(offset), Some(length)) => {
            let bytes = read_span(&location, offset, length)?;
            let end = offset + length;
            match record_in_span(&bytes, format, fields, scheme.http)
                .with_context(|| format!("{source}, bytes {offset}..{end}"))?
            {
                Record::Document(document) => document,
                Record::Bad(bad) => bail!("{source}, bytes {offset}..{end}: {}", bad.reason),
                Record::Skipped => bail!("{source}, bytes {offset}..{end}: a record with no text"),
            }
        }
        _ => document_of_page(&location, format, fields, &scheme, &stored)?,
    };
    let page = fingerprinted_text(&document, &scheme);
    let recomputed = fingerprint_page(&page.text, &page.headings, &scheme.simhash, false);
    Ok(ExplainedPage {
        stored,
        recomputed: recomputed.simhash,
        n_chars: recomputed.n_chars,
        scheme,
        html: document.html,
        main_content_fallback: page.fell_back,
        text: page.text,
        headings: page.headings,
    })
}

/// Page `stored`'s record in a file whose records have no byte range of
/// their own (a Parquet table, JSONL.gz, WARC records sharing a gzip
/// member): the file read whole as `fingerprint` read it, for the page's
/// records; of a page fetched more than once there, the one whose text
/// gives the stored fingerprint.
fn document_of_page(
    location: &Location,
    format: Format,
    fields: &TextFields,
    scheme: &Scheme,
    stored: &StoredPage,
) -> Result<Document> {
    let mut records = Vec::new();
    read_file(location, format, fields, scheme.http, &mut |record, _| {
        if let Record::Document(mut document) = record {
            scheme.target_uri.apply(&mut document);
            if document.id == stored.id {
                records.push(document);
            }
        }
        Ok(())
    })?;
    if records.is_empty() {
        bail!(
            "page {} ({}): no record of it in {location} (read whole, as its records have no \
             byte range of their own) by id field `{}`, url field `{}` and text field `{}`: \
             give --id-field, --url-field and --text-field as fingerprint had them",
            stored.id,
            stored.shard,
            fields.id,
            fields.url,
            fields.text
        );
    }
    let gives_stored = |document: &Document| {
        let page = fingerprinted_text(document, scheme);
        fingerprint_page(&page.text, &page.headings, &scheme.simhash, false).simhash
            == stored.simhash
    };
    let chosen = records.iter().position(gives_stored).unwrap_or(0);
    Ok(records.swap_remove(chosen))
}

/// The text of `document` that `fingerprint` hashed under `scheme`: an
/// HTML page's as its rules extract it, a text record's whole.
fn fingerprinted_text(document: &Document, scheme: &Scheme) -> Extracted {
    match document.html {
        true => page_text(&document.text, scheme.html),
        false => Extracted {
            text: document.text.clone(),
            ..Extracted::default()
        },
    }
}

/// The file a shard's `source` names: an object URL, or a local path as
/// `fingerprint` was given it. A relative one is found from the working
/// directory, else from the directories above the shard (`fingerprint` ran
/// in one of them when the crawl and the outputs share a root), so that
/// it is found from any directory.
fn source_location(source: &str, shard: &str) -> Result<Location> {
    let found = |spec: &str| {
        let files = expand_locations_with(&[spec.to_string()], &[]).ok()?;
        files.into_iter().next()
    };
    let relative = !is_url(source) && !is_url(shard) && Path::new(source).is_relative();
    // Made absolute, so that a shard named relative to a directory below
    // the root `fingerprint` ran in still has that root above it.
    let shard_path = std::path::absolute(shard).unwrap_or_else(|_| shard.into());
    let above_shard = shard_path.ancestors().skip(1).filter(|_| relative);
    let mut candidates = std::iter::once(source.to_string())
        .chain(above_shard.map(|dir| dir.join(source).display().to_string()));
    candidates
        .find_map(|candidate| found(&candidate))
        .with_context(|| format!("{source}: cannot open the record's source file (looked from the working directory and from the directories above {shard})"))
}

/// `length` bytes at `offset` of `location`.
fn read_span(location: &Location, offset: i64, length: i64) -> Result<Vec<u8>> {
    let source = location;
    let (Ok(offset), Ok(length)) = (u64::try_from(offset), u64::try_from(length)) else {
        bail!("{source}: offset {offset} and length {length} are not a byte range");
    };
    let end = offset.saturating_add(length);
    let past_end = |size: u64| {
        anyhow::anyhow!(
            "{source}: bytes {offset}..{end} run past its end ({size} bytes): the file changed since it was fingerprinted"
        )
    };
    let size = location.size()?;
    if end > size {
        return Err(past_end(size));
    }
    let mut reader = location.reader()?;
    reader
        .seek(SeekFrom::Start(offset))
        .with_context(|| format!("{source}: cannot seek to {offset}"))?;
    let mut bytes = Vec::new();
    reader
        .take(length)
        .read_to_end(&mut bytes)
        .with_context(|| format!("{source}: cannot read bytes {offset}..{end}"))?;
    if bytes.len() as u64 != length {
        // Cut while it was read.
        return Err(past_end(offset + bytes.len() as u64));
    }
    Ok(bytes)
}

/// Why `a` and `b` matched.
fn explain_pair(a: ExplainedPage, b: ExplainedPage, top: usize) -> Explanation {
    let differing = a.stored.simhash ^ b.stored.simhash;
    let list_a = feature_list(&a.text, &a.headings, &a.scheme.simhash);
    let list_b = feature_list(&b.text, &b.headings, &a.scheme.simhash);
    let top_features = pushing_features(&list_a, &list_b, a.stored.simhash, differing, top);
    let features = match list_a.log_weights {
        true => format!("{}, log weights", list_a.features),
        false => format!("{}, counts", list_a.features),
    };
    let simhashes = (a.stored.simhash, b.stored.simhash);
    let wide_distance = match (&a.stored.sketch, &b.stored.sketch) {
        (Some(x), Some(y)) => Some(wide_distance(simhashes, (x, y))),
        _ => None,
    };
    Explanation {
        diff: word_diff(&a.text, &b.text),
        distance: differing.count_ones(),
        wide_distance,
        differing_bits: bits_of(differing),
        features,
        top_features,
        a,
        b,
    }
}

fn bits_of(word: u64) -> Vec<u32> {
    (0..64).filter(|i| word >> i & 1 == 1).collect()
}

/// The `top` features that push hardest on the bits `differing` that the
/// fingerprints disagree on, toward `a`'s values there (see the module
/// doc); features that push nothing toward them are left out.
pub(crate) fn pushing_features(
    a: &FeatureList,
    b: &FeatureList,
    simhash_a: u64,
    differing: u64,
    top: usize,
) -> Vec<FeaturePush> {
    let differing_bits = bits_of(differing);
    let text = counted_in_both(&a.counts, &b.counts).map(|(f, counts)| (f, counts, false));
    let headings =
        counted_in_both(&a.heading_counts, &b.heading_counts).map(|(f, counts)| (f, counts, true));
    let mut pushes: Vec<FeaturePush> = text
        .chain(headings)
        .filter_map(|(feature, (count_a, count_b), heading)| {
            let delta = a.weight(count_a) - b.weight(count_b);
            // A heading's feature pushes through its further hashes.
            let hashes: Vec<u64> = match heading {
                false => vec![hash_feature(feature)],
                true => heading_copies(hash_feature(feature)).collect(),
            };
            let mut bits = Vec::new();
            let mut push = 0.0;
            for &bit in &differing_bits {
                let toward = if simhash_a >> bit & 1 == 1 { 1.0 } else { -1.0 };
                let on_bit: f64 = hashes
                    .iter()
                    .map(|hash| if hash >> bit & 1 == 1 { delta } else { -delta } * toward)
                    .sum();
                if on_bit > 0.0 {
                    bits.push(bit);
                }
                push += on_bit;
            }
            (push > 0.0).then(|| FeaturePush {
                feature: match heading {
                    false => feature.to_string(),
                    true => format!("{feature} (heading)"),
                },
                count_a,
                count_b,
                bits,
                push,
            })
        })
        .collect();
    pushes.sort_by(|x, y| {
        y.push
            .total_cmp(&x.push)
            .then_with(|| x.feature.cmp(&y.feature))
    });
    pushes.truncate(top);
    pushes
}

/// Each feature of either list (`a`'s first), with its counts in `a` and
/// in `b`.
fn counted_in_both<'l>(
    a: &'l [(String, u32)],
    b: &'l [(String, u32)],
) -> impl Iterator<Item = (&'l str, (u32, u32))> {
    let counts = |list: &'l [(String, u32)]| -> HashMap<&'l str, u32> {
        list.iter().map(|(f, c)| (f.as_str(), *c)).collect()
    };
    let (in_a, in_b) = (counts(a), counts(b));
    let only_in_b: Vec<&str> = b
        .iter()
        .map(|(f, _)| f.as_str())
        .filter(|f| !in_a.contains_key(f))
        .collect();
    a.iter()
        .map(|(f, _)| f.as_str())
        .chain(only_in_b)
        .map(move |f| {
            let count = |map: &HashMap<&str, u32>| map.get(f).copied().unwrap_or(0);
            (f, (count(&in_a), count(&in_b)))
        })
}

/// The word diff of `a` to `b`: runs of equal, deleted and inserted words
/// (whitespace kept with the words).
pub(crate) fn word_diff(a: &str, b: &str) -> Vec<DiffPart> {
    let diff = TextDiff::configure()
        .timeout(std::time::Duration::from_secs(5))
        .diff_words(a, b);
    let mut parts: Vec<DiffPart> = Vec::new();
    for change in diff.iter_all_changes() {
        let op = match change.tag() {
            ChangeTag::Equal => "equal",
            ChangeTag::Delete => "delete",
            ChangeTag::Insert => "insert",
        };
        match parts.last_mut() {
            Some(last) if last.op == op => last.text.push_str(change.value()),
            _ => parts.push(DiffPart {
                op,
                text: change.value().to_string(),
            }),
        }
    }
    parts
}

/// Words of an equal run kept either side of a change.
const CONTEXT_WORDS: usize = 8;

/// The explanation as text: the two pages, their distance, the diff with
/// long equal runs cut to their ends, the features, and the two texts.
fn render_pair(e: &Explanation, color: bool) -> String {
    let mut out = String::new();
    for (name, page) in [("A", &e.a), ("B", &e.b)] {
        out.push_str(&render_page_head(name, page));
    }
    let bits: Vec<String> = e.differing_bits.iter().map(u32::to_string).collect();
    out.push_str(&format!(
        "distance: {} bits{}\n\n",
        e.distance,
        match bits.is_empty() {
            true => String::new(),
            false => format!(" ({})", bits.join(", ")),
        }
    ));
    if let Some(wide) = e.wide_distance {
        out.push_str(&format!(
            "wide distance: {wide} of 256 bits (fingerprints and sketches: what match --verify compares)\n\n"
        ));
    }
    out.push_str("word diff, A to B ([-only in A-] {+only in B+}):\n");
    out.push_str(&render_diff(&e.diff, color));
    out.push_str("\n\n");
    if !e.top_features.is_empty() {
        out.push_str(&format!(
            "features pushing the differing bits ({}):\n{:>8} {:>6} {:>6}  {:<16} feature\n",
            e.features, "push", "in A", "in B", "bits"
        ));
        for f in &e.top_features {
            let bits: Vec<String> = f.bits.iter().map(u32::to_string).collect();
            out.push_str(&format!(
                "{:>8.2} {:>6} {:>6}  {:<16} {:?}\n",
                f.push,
                f.count_a,
                f.count_b,
                bits.join(","),
                f.feature
            ));
        }
        out.push('\n');
    }
    for (name, page) in [("A", &e.a), ("B", &e.b)] {
        out.push_str(&format!(
            "--- text of {name}, as fingerprinted ({} characters; {} once normalised, as n_chars counts) ---\n{}\n\n",
            page.text.chars().count(),
            page.n_chars,
            visible(&page.text)
        ));
    }
    out
}

fn render_page_head(name: &str, page: &ExplainedPage) -> String {
    let s = &page.stored;
    let check = match page.recomputed == s.simhash {
        true => "recomputed from its record: the same".to_string(),
        false => format!(
            "recomputed from its record: {:016x}, NOT the same (the file or the rules changed since)",
            page.recomputed
        ),
    };
    let text = match (page.html, page.main_content_fallback) {
        (false, _) => "text record",
        (true, false) => "HTML, main content",
        (true, true) => "HTML, no main content found: all its text",
    };
    let span = match (s.offset, s.length) {
        (Some(offset), Some(length)) => format!("bytes {offset}..{}", offset + length),
        // A row of a table, or a record sharing its gzip member.
        _ => "(read whole: no byte range of its own)".to_string(),
    };
    let mut head = format!(
        "{name}: {} {}\n   simhash {:016x} ({check})\n   record {} {span} ({text}); shard {}\n",
        s.id,
        visible_line(s.url.as_deref().unwrap_or("(no url)")),
        s.simhash,
        visible_line(s.source.as_deref().unwrap_or("?")),
        visible_line(&s.shard)
    );
    if s.rows > 1 {
        head.push_str(&format!(
            "   one of {} rows of this page in --fingerprints: the one nearest the other page (of the first path's, if it holds any)\n",
            s.rows
        ));
    }
    head
}

/// The diff's parts, equal runs longer than twice [`CONTEXT_WORDS`] cut
/// to their ends; red and green on a terminal, `[-…-]` and `{+…+}` else.
fn render_diff(parts: &[DiffPart], color: bool) -> String {
    // A change of whitespace alone (a line break for a space) is no change
    // of words: marked, it would show as empty marks.
    let blank = |part: &DiffPart| part.text.trim().is_empty();
    if parts.iter().all(|part| part.op == "equal" || blank(part)) {
        return "(the same words)".to_string();
    }
    let mut out = String::new();
    for (i, part) in parts.iter().enumerate() {
        // Whitespace after a changed run goes outside its marks.
        let text = visible(&part.text);
        let words = text.trim_end();
        let space = &text[words.len()..];
        match part.op {
            "equal" => out.push_str(&cut_equal(&text, i > 0, i + 1 < parts.len())),
            "delete" if blank(part) => {}
            _ if blank(part) => out.push_str(&text),
            "delete" if color => out.push_str(&format!("\x1b[31m{words}\x1b[0m{space}")),
            "insert" if color => out.push_str(&format!("\x1b[32m{words}\x1b[0m{space}")),
            "delete" => out.push_str(&format!("[-{words}-]{space}")),
            _ => out.push_str(&format!("{{+{words}+}}{space}")),
        }
    }
    out
}

/// An equal run with only [`CONTEXT_WORDS`] kept next to each change
/// (`before`: a change comes before it; `after`: one comes after).
fn cut_equal(text: &str, before: bool, after: bool) -> String {
    let words: Vec<&str> = text.split_inclusive(char::is_whitespace).collect();
    let head = if before { CONTEXT_WORDS } else { 0 };
    let tail = if after { CONTEXT_WORDS } else { 0 };
    if words.len() <= head + tail + 1 {
        return text.to_string();
    }
    let mut out: String = words[..head].concat();
    out.push_str("… ");
    out.push_str(&words[words.len() - tail..].concat());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::simhash::{fingerprint, SimhashOptions};

    #[test]
    fn the_word_diff_names_the_changed_words() {
        let parts = word_diff("the cat sat on the mat", "the dog sat on the mat");
        let changed: Vec<(&str, &str)> = parts
            .iter()
            .filter(|p| p.op != "equal")
            .map(|p| (p.op, p.text.trim()))
            .collect();
        assert_eq!(changed, [("delete", "cat"), ("insert", "dog")]);
        assert_eq!(
            render_diff(&parts, false),
            "the [-cat-]{+dog+} sat on the mat"
        );
    }

    /// A page fetched twice, first with other content: the pair explained
    /// is the rows `match` paired, the two nearest, each counting its rows.
    #[test]
    fn a_page_of_several_rows_is_explained_by_its_row_nearest_the_other() {
        let row = |id: i64, simhash: u64, shard: &str| StoredPage {
            id,
            url: None,
            simhash,
            source: None,
            offset: None,
            length: None,
            sketch: None,
            scheme: None,
            shard: shard.to_string(),
            path: 0,
            rows: 1,
        };
        let x = vec![row(1, 0xFFFF_0000, "jan-1"), row(1, 0x0F0F, "jan-5")];
        let y = vec![row(2, 0x0F0E, "jan-5")];
        let chosen = closest_rows(vec![x.clone(), y.clone()]);
        assert_eq!((chosen[0].shard.as_str(), chosen[0].rows), ("jan-5", 2));
        assert_eq!((chosen[1].shard.as_str(), chosen[1].rows), ("jan-5", 1));
        let swapped = closest_rows(vec![y.clone(), x.clone()]);
        assert_eq!((swapped[1].shard.as_str(), swapped[1].rows), ("jan-5", 2));
        let alone = closest_rows(vec![x]);
        assert_eq!((alone[0].shard.as_str(), alone[0].rows), ("jan-1", 2));
        let page = ExplainedPage {
            stored: chosen.into_iter().next().unwrap(),
            recomputed: 0x0F0F,
            n_chars: 0,
            scheme: Scheme::default(),
            html: false,
            main_content_fallback: false,
            text: String::new(),
            headings: Vec::new(),
        };
        let head = render_page_head("A", &page);
        assert!(head.contains("one of 2 rows of this page"), "{head}");

        // Fetched again tonight (the first path) with an edit: tonight's
        // row is the one match paired, not the corpus's older copy (the
        // second path) that equals the other page.
        let old = StoredPage {
            path: 1,
            ..row(1, 0x0F0E, "corpus/jan-1")
        };
        let x = vec![old, row(1, 0x0F01, "night")];
        let chosen = closest_rows(vec![x, y.clone()]);
        assert_eq!((chosen[0].shard.as_str(), chosen[0].rows), ("night", 2));
        // Only in the corpus's paths: every row counts, the nearest shown.
        let in_corpus = |path, simhash, shard| StoredPage {
            path,
            ..row(1, simhash, shard)
        };
        let x = vec![
            in_corpus(1, 0x0F01, "archive"),
            in_corpus(2, 0x0F0E, "batch"),
        ];
        let chosen = closest_rows(vec![x, y]);
        assert_eq!((chosen[0].shard.as_str(), chosen[0].rows), ("batch", 2));
    }

    /// Texts that differ in whitespace alone have the same words; where
    /// words change too, a change of whitespace shows no empty marks.
    #[test]
    fn a_change_of_whitespace_alone_is_no_change_of_words() {
        let same = word_diff("the cat sat.\n", "the cat sat.\n ");
        assert!(same.iter().any(|p| p.op != "equal"), "{same:?}");
        assert_eq!(render_diff(&same, false), "(the same words)");
        let shown = render_diff(&word_diff("a cat sat.\n", "a dog sat.\n "), false);
        assert!(shown.contains("[-cat-]{+dog+}"), "{shown}");
        assert!(
            !shown.contains("[--]") && !shown.contains("{++}"),
            "{shown}"
        );
    }

    #[test]
    fn crawled_escape_sequences_reach_the_terminal_as_text() {
        let parts = word_diff("see \u{1b}[2J here", "see \u{1b}[31m here");
        let shown = render_diff(&parts, true);
        // Only the diff's own colours are escapes; the page's are text.
        assert_eq!(shown.matches('\u{1b}').count(), 4, "{shown:?}");
        assert!(shown.contains("\\u{001b}[2J"), "{shown:?}");
    }

    #[test]
    fn long_equal_runs_are_cut_to_their_ends() {
        let same: String = (0..40).map(|i| format!("w{i} ")).collect();
        let a = format!("{same}old end");
        let b = format!("{same}new end");
        let shown = render_diff(&word_diff(&a, &b), false);
        assert!(shown.starts_with("… w32 "), "{shown}");
        assert!(shown.contains("[-old-]{+new+}"), "{shown}");
    }

    #[test]
    fn the_pushing_features_are_those_that_differ() {
        let options = SimhashOptions {
            features: crate::fingerprint::simhash::Features::Words,
            log_weights: false,
            stop_words: false,
        };
        let a = "alpha beta gamma delta epsilon zeta eta theta";
        let b = "alpha beta gamma delta epsilon zeta eta iota";
        let (fa, fb) = (
            fingerprint(a, &options).simhash,
            fingerprint(b, &options).simhash,
        );
        assert_ne!(fa, fb);
        let pushes = pushing_features(
            &feature_list(a, &[], &options),
            &feature_list(b, &[], &options),
            fa,
            fa ^ fb,
            10,
        );
        let names: Vec<&str> = pushes.iter().map(|p| p.feature.as_str()).collect();
        assert!(!names.is_empty());
        assert!(
            names.iter().all(|n| ["theta", "iota"].contains(n)),
            "{names:?}"
        );
        // The bits they push toward are all among the differing ones.
        assert!(pushes
            .iter()
            .all(|p| p.bits.iter().all(|&bit| (fa ^ fb) >> bit & 1 == 1)));
    }

    /// Two pages that differ in their heading alone: the heading's words
    /// push through their further hashes too, and are shown as a heading's.
    #[test]
    fn a_headings_features_push_as_the_headings() {
        let options = SimhashOptions {
            features: crate::fingerprint::simhash::Features::Words,
            log_weights: false,
            stop_words: false,
        };
        let body = " alpha beta gamma delta epsilon zeta eta theta";
        let (a, b) = (format!("iota{body}"), format!("kappa{body}"));
        // Each page's first word is its heading.
        let heading = |text: &str| std::iter::once(0..text.find(' ').unwrap()).collect::<Vec<_>>();
        let fingerprint = |text: &str| fingerprint_page(text, &heading(text), &options, false);
        let (fa, fb) = (fingerprint(&a).simhash, fingerprint(&b).simhash);
        assert_ne!(fa, fb);
        let list_a = feature_list(&a, &heading(&a), &options);
        let list_b = feature_list(&b, &heading(&b), &options);
        let pushes = pushing_features(&list_a, &list_b, fa, fa ^ fb, 10);
        let mut names: Vec<&str> = pushes.iter().map(|p| p.feature.as_str()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            ["iota", "iota (heading)", "kappa", "kappa (heading)"],
            "{pushes:?}"
        );
        // Three further hashes each: a heading's word pushes harder than
        // the word alone.
        let push = |name: &str| pushes.iter().find(|p| p.feature == name).unwrap().push;
        assert!(push("iota (heading)") > push("iota"), "{pushes:?}");
        assert!(push("kappa (heading)") > push("kappa"), "{pushes:?}");
    }
}
