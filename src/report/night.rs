//! One night's outputs, read into the figures the report shows.
//!
//! A night is a directory whose subdirectories are stage outputs, each told
//! by its `_summary.json`: `fingerprint`'s has a `scheme`, `match`'s its
//! `queries`, `cluster`'s its `clusters`. Only what the stages wrote is
//! read, in streaming passes that keep no per-pair state:
//! 1. the pairs' `distance` column (and `wide_distance`, from
//!    `match --verify`), for the histograms;
//! 2. the clusters' `id`, `cluster_id` and `cluster_size`, for the sizes
//!    and the largest clusters (their members, up to [`MEMBERS_KEPT`]);
//! 3. the drops, whose ids are kept in a set, and the night's pages' `id`
//!    and `url`, for pages and drops by host and the samples' URLs; a page
//!    fetched twice is counted once (a set of the ids seen). The night's
//!    pages are the fingerprint stage's output, else the files `match`
//!    read as B, when they are still where it read them (a job whose
//!    fingerprints are made elsewhere names them as `[match] queries`). A
//!    corpus page is not among them: its URL, when `cluster` had the
//!    corpus's, is the `keep_url` of a page dropped in its favour.
//!
//! A stage output without `_SUCCESS` (a stage that failed or is still
//! running) is refused in the night shown in detail, naming it: its files
//! may be partial, and a page built from them would look like a complete
//! night. In an earlier night, one of the trends, it is left out and named
//! ([`Night::unfinished`]): its figures are gaps, and one failed night does
//! not keep a month of nights from their report.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{bail, Context, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int16Type, Int8Type};
use arrow_array::{Array, ArrowPrimitiveType, Int64Array, PrimitiveArray, RecordBatch};
use serde_json::Value;

use crate::io::parquet::columns::string_values;
use crate::io::parquet::input::{expand_locations, read_columns};
use crate::io::parquet::output::{DROP_URL, KEEP_URL, KEPT_BY};
use crate::io::parquet::WIDE_DISTANCE;
use crate::io::staging::{file_exists, is_complete};
use crate::io::storage::{is_url, read_whole, subdirectories, Location, SUMMARY};

/// The largest clusters shown.
pub(crate) const LARGEST_CLUSTERS: usize = 20;
/// Sample pages shown of each of the largest clusters, kept and dropped.
pub(crate) const SAMPLES: usize = 5;
/// Members of a large cluster remembered to find its samples among.
const MEMBERS_KEPT: usize = 1 << 20;
/// Hosts shown in the drops-by-host chart.
pub(crate) const HOSTS: usize = 30;

/// Where a night's stage outputs are.
#[derive(Clone, Debug, Default)]
pub(crate) struct NightDirs {
    /// The night's name (its directory's).
    pub(crate) name: String,
    pub(crate) fingerprints: Option<PathBuf>,
    pub(crate) pairs: Option<PathBuf>,
    pub(crate) clusters: Option<PathBuf>,
}

impl NightDirs {
    /// The night's stage outputs.
    pub(crate) fn stages(&self) -> impl Iterator<Item = &PathBuf> {
        [&self.fingerprints, &self.pairs, &self.clusters]
            .into_iter()
            .flatten()
    }

    /// The stage outputs among `dir`'s subdirectories; none is an error.
    pub(crate) fn discover(dir: &Path) -> Result<NightDirs> {
        match Self::discover_any(dir)? {
            Some(found) => Ok(found),
            None => bail!(
                "{}: no stage outputs (subdirectories with a _summary.json of fingerprint, match or cluster)",
                dir.display()
            ),
        }
    }

    /// The stage outputs among `dir`'s subdirectories, if it has any.
    pub(crate) fn discover_any(dir: &Path) -> Result<Option<NightDirs>> {
        let subdirs = subdirectories(&dir.to_string_lossy())?;
        let mut found = NightDirs {
            name: dir
                .file_name()
                .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into()),
            ..NightDirs::default()
        };
        for sub in subdirs.into_iter().map(PathBuf::from) {
            // A hidden directory is a stage's staging, not an output.
            if is_hidden(&sub) {
                continue;
            }
            // A directory of another kind is passed over; a summary that
            // names no stage would leave the stage out of the page unsaid.
            if !file_exists(&sub.join(SUMMARY))? {
                continue;
            }
            let summary = read_summary(&sub)?;
            let (slot, stage) = match () {
                _ if summary.get("scheme").is_some() => (&mut found.fingerprints, "fingerprint"),
                _ if summary.get("queries").is_some() => (&mut found.pairs, "match"),
                _ if summary.get("clusters").is_some() => (&mut found.clusters, "cluster"),
                _ => bail!(
                    "{}: not the summary of a fingerprint, match or cluster output",
                    sub.join(SUMMARY).display()
                ),
            };
            // Which of two is the night's, nothing says: the page would
            // show one beside another's figures.
            if let Some(first) = slot {
                bail!(
                    "{}: two {stage} outputs, {} and {}: a night's report shows one of each stage; report a directory holding one",
                    dir.display(),
                    first.display(),
                    sub.display()
                );
            }
            *slot = Some(sub);
        }
        let none = found.stages().next().is_none();
        Ok((!none).then_some(found))
    }
}

fn is_hidden(dir: &Path) -> bool {
    let name = dir.file_name().map(|name| name.to_string_lossy());
    name.is_some_and(|name| name.starts_with('.'))
}

fn read_summary(dir: &Path) -> Result<Value> {
    let path = dir.join(SUMMARY);
    let text = read_whole(&path.to_string_lossy())?;
    serde_json::from_slice(&text).with_context(|| format!("{}: not JSON", path.display()))
}

/// A page of a sample: its id and URL (if the night's fingerprints have
/// it).
#[derive(Clone, Debug)]
pub(crate) struct SamplePage {
    pub(crate) id: i64,
    pub(crate) url: Option<String>,
    /// Whether it is among the night's fingerprints (known only when they
    /// have a `url` column).
    pub(crate) tonight: bool,
}

/// A dropped page of a sample, with the page kept for it.
#[derive(Clone, Debug)]
pub(crate) struct SampleDrop {
    pub(crate) page: SamplePage,
    pub(crate) keep: SamplePage,
    /// The pair's distance (`None` under the `component` policy).
    pub(crate) distance: Option<i8>,
    /// Its wide distance, for verified pairs (`match --verify`).
    pub(crate) wide_distance: Option<i16>,
    /// The key its kept page won by.
    pub(crate) kept_by: Option<String>,
}

/// One of the largest clusters.
#[derive(Clone, Debug)]
pub(crate) struct LargeCluster {
    pub(crate) representative: SamplePage,
    pub(crate) size: u64,
    /// Of its pages, how many were dropped.
    pub(crate) dropped: u64,
    pub(crate) kept_sample: Vec<SamplePage>,
    pub(crate) dropped_sample: Vec<SampleDrop>,
}

/// A host's pages in the night's fingerprints and drops among them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct HostDrops {
    pub(crate) host: String,
    pub(crate) pages: u64,
    pub(crate) dropped: u64,
}

/// What the report shows of one night.
#[derive(Debug, Default)]
pub(crate) struct Night {
    pub(crate) dirs: NightDirs,
    pub(crate) fingerprint_summary: Option<Value>,
    pub(crate) match_summary: Option<Value>,
    pub(crate) cluster_summary: Option<Value>,
    /// Pairs by distance, 0 to k.
    pub(crate) distances: Vec<u64>,
    /// Pairs by wide distance, 0 to the `--verify` threshold; empty when
    /// the pairs were not verified.
    pub(crate) wide_distances: Vec<u64>,
    /// Clusters by size.
    pub(crate) cluster_sizes: BTreeMap<u64, u64>,
    pub(crate) largest: Vec<LargeCluster>,
    /// Every host with a drop, the most drops first (the page shows the
    /// first [`HOSTS`]).
    pub(crate) hosts: Vec<HostDrops>,
    /// Drops whose page is not in the night's fingerprints (corpus pages),
    /// or all drops when the fingerprints have no URLs.
    pub(crate) drops_outside: u64,
    /// The night's pages, as specs: the fingerprint stage's output, else
    /// the files `match` read as B if they are there; empty: neither, or
    /// a night of the trends alone (not read).
    pub(crate) pages: Vec<String>,
    /// Whether the night's pages have URLs (hosts can be shown).
    pub(crate) has_urls: bool,
    /// Drops by the key their kept page won by (`drop/`'s `kept_by`), most
    /// first; empty for outputs of versions without it.
    pub(crate) kept_by: KeyCounts,
    /// The fingerprint shards `neardup explain` needs for the samples: the
    /// night's and the corpus's.
    pub(crate) explain_fingerprints: Vec<String>,
    /// Stages of an earlier night left out: their outputs have no `_SUCCESS`.
    pub(crate) unfinished: Vec<&'static str>,
}

impl Night {
    /// Pages fingerprinted, pairs and drops, from the summaries.
    pub(crate) fn documents(&self) -> Option<u64> {
        number(&self.fingerprint_summary, &["documents"])
            .or_else(|| number(&self.match_summary, &["queries", "rows"]))
    }

    pub(crate) fn pairs(&self) -> Option<u64> {
        number(&self.match_summary, &["pairs"])
    }

    pub(crate) fn dropped(&self) -> Option<u64> {
        number(&self.cluster_summary, &["dropped"])
    }
}

/// The unsigned number at `path` in a summary, if there.
pub(crate) fn number(summary: &Option<Value>, path: &[&str]) -> Option<u64> {
    let mut value = summary.as_ref()?;
    for key in path {
        value = value.get(key)?;
    }
    value.as_u64()
}

/// Reads the night's summaries and outputs; `rows` counts the rows read,
/// for progress.
pub(crate) fn read_night(mut dirs: NightDirs, rows: &AtomicU64, details: bool) -> Result<Night> {
    let mut unfinished = Vec::new();
    for (stage, slot) in [
        ("fingerprint", &mut dirs.fingerprints),
        ("match", &mut dirs.pairs),
        ("cluster", &mut dirs.clusters),
    ] {
        let Some(dir) = slot else { continue };
        if details {
            refuse_incomplete(dir)?;
        } else if !is_complete(dir)? {
            unfinished.push(stage);
            *slot = None;
        }
    }
    let mut night = Night {
        unfinished,
        fingerprint_summary: dirs.fingerprints.as_deref().map(read_summary).transpose()?,
        match_summary: dirs.pairs.as_deref().map(read_summary).transpose()?,
        cluster_summary: dirs.clusters.as_deref().map(read_summary).transpose()?,
        ..Night::default()
    };
    if !details {
        night.dirs = dirs;
        return Ok(night);
    }
    night.pages = night_pages(&dirs, &night.match_summary)?;
    night.explain_fingerprints = explain_fingerprints(&night.pages, &night.match_summary);
    night.dirs = dirs;
    if let Some(pairs) = &night.dirs.pairs {
        let k = number(&night.match_summary, &["k"]).unwrap_or(3);
        let threshold = number(&night.match_summary, &["verify_threshold"]);
        (night.distances, night.wide_distances) = read_distances(pairs, k, threshold, rows)?;
    }
    let Some(clusters) = night.dirs.clusters.clone() else {
        return Ok(night);
    };
    let (sizes, mut largest) = read_clusters(&clusters.join("clusters"), rows)?;
    night.cluster_sizes = sizes;
    let (dropped, kept_by) = read_drops(&clusters.join("drop"), &mut largest, rows)?;
    night.kept_by = kept_by;
    let pages = expand_locations(&night.pages)?;
    let with_urls = (pages.iter())
        .map(|file| has_column_in(std::slice::from_ref(file), "url"))
        .collect::<Result<Vec<bool>>>()?;
    if with_urls.contains(&true) {
        let pages: Vec<(&Location, bool)> = pages.iter().zip(with_urls).collect();
        let (hosts, found) = read_hosts(&pages, &dropped, &mut largest, rows)?;
        night.drops_outside = dropped.len() as u64 - found;
        night.hosts = hosts;
        night.has_urls = true;
    } else {
        night.drops_outside = dropped.len() as u64;
    }
    night.largest = largest.into_clusters();
    Ok(night)
}

/// Fails, naming `dir`, if it is a stage output without `_SUCCESS`.
fn refuse_incomplete(dir: &Path) -> Result<()> {
    match is_complete(dir)? {
        false => bail!(
            "{}: no _SUCCESS, so the stage did not finish; run it again before reporting",
            dir.display()
        ),
        true => Ok(()),
    }
}

/// The night's pages ([`Night::pages`]): the fingerprint stage's output,
/// else the files `match` read as B, if every one is still there (a
/// relative path is read from the working directory, as `match` read it).
fn night_pages(dirs: &NightDirs, match_summary: &Option<Value>) -> Result<Vec<String>> {
    if let Some(dir) = &dirs.fingerprints {
        return Ok(vec![dir.display().to_string()]);
    }
    let queries = summary_files(match_summary, "queries");
    for file in &queries {
        if !file_exists(Path::new(file))? {
            return Ok(Vec::new());
        }
    }
    Ok(queries.into_iter().map(str::to_string).collect())
}

/// The files a match summary lists for `side` (`queries` or `corpus`).
fn summary_files<'a>(match_summary: &'a Option<Value>, side: &str) -> Vec<&'a str> {
    match_summary
        .as_ref()
        .and_then(|s| s.get(side)?.get("files")?.as_array())
        .map(|files| files.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The shards a sample pair's pages are in: the night's pages and the
/// corpus `match` read (its files' directories, or the files themselves
/// where a directory holds others), local ones as absolute paths, so that
/// a command copied from the page runs from any directory (the page is
/// often opened far from where the job ran).
fn explain_fingerprints(pages: &[String], match_summary: &Option<Value>) -> Vec<String> {
    let mut specs: Vec<String> = match pages {
        [dir] => vec![dir.clone()],
        files => read_files(&files.iter().map(String::as_str).collect::<Vec<_>>()),
    };
    specs.extend(read_files(&summary_files(match_summary, "corpus")));
    specs.into_iter().map(absolute).collect()
}

/// Paths that name `files` and no other fingerprint file: their
/// directories ([`corpus_directories`]), except that a directory holding
/// files `match` did not read (an archive of which the job names one
/// shard) is given as the files read, since `explain` would find a page's
/// row there that no pair came from.
fn read_files(files: &[&str]) -> Vec<String> {
    let read: std::collections::HashSet<&str> = files.iter().copied().collect();
    let holds_others = |dir: &str| {
        let listed = parquet_files(Path::new(dir)).unwrap_or_default();
        listed
            .iter()
            .any(|file| !read.contains(file.to_string().as_str()))
    };
    let directories = corpus_directories(files);
    if !directories.iter().any(|dir| holds_others(dir)) {
        return directories;
    }
    let mut specs = Vec::new();
    let mut partly_read = std::collections::HashMap::new();
    for file in files {
        let dir = parent_of(file);
        match *partly_read.entry(dir).or_insert_with(|| holds_others(dir)) {
            true => specs.push(file.to_string()),
            false if !specs.iter().any(|spec| spec == dir) => specs.push(dir.to_string()),
            false => {}
        }
    }
    specs
}

/// The directory (or prefix) of `file`, as named.
fn parent_of(file: &str) -> &str {
    file.rsplit_once('/').map_or(".", |(dir, _)| dir)
}

/// A local path from the working directory, else `spec` as it is.
fn absolute(spec: String) -> String {
    if is_url(&spec) {
        return spec;
    }
    match std::path::absolute(&spec) {
        Ok(path) => path.display().to_string(),
        Err(_) => spec,
    }
}

/// The most corpus directories an `explain` command lists one by one.
const LISTED_DIRECTORIES: usize = 4;

/// Directories that name `files` for `--fingerprints`: each file's own,
/// once, in order; more than [`LISTED_DIRECTORIES`] (a corpus of many
/// nightly batches) become the deepest directory above them all, when
/// there is one below the root.
fn corpus_directories(files: &[&str]) -> Vec<String> {
    let mut parents: Vec<&str> = Vec::new();
    for file in files {
        let parent = parent_of(file);
        if !parents.contains(&parent) {
            parents.push(parent);
        }
    }
    if parents.len() <= LISTED_DIRECTORIES {
        return parents.into_iter().map(str::to_string).collect();
    }
    let mut common = parents[0].to_string();
    for parent in &parents[1..] {
        while !format!("{parent}/").starts_with(&format!("{common}/")) && common.contains('/') {
            common = common
                .rsplit_once('/')
                .map_or("", |(dir, _)| dir)
                .to_string();
        }
    }
    match common.trim_start_matches('/').contains('/') {
        true => vec![common],
        false => parents.into_iter().map(str::to_string).collect(),
    }
}

/// Whether the first Parquet file under `dir` has column `name`.
fn has_column(dir: &Path, name: &str) -> Result<bool> {
    has_column_in(&parquet_files(dir)?, name)
}

/// Whether the first of `files` has column `name`.
fn has_column_in(files: &[Location], name: &str) -> Result<bool> {
    let Some(first) = files.first() else {
        return Ok(false);
    };
    let footer = crate::io::parquet::input::read_footer(first)?;
    Ok(footer.schema().index_of(name).is_ok())
}

fn parquet_files(dir: &Path) -> Result<Vec<Location>> {
    expand_locations(&[dir.display().to_string()])
}

/// Pairs by distance (0 to `k`) and, for verified pairs (a `threshold`),
/// by wide distance (0 to it); a larger value, from a file of another k or
/// threshold, widens its histogram.
fn read_distances(
    dir: &Path,
    k: u64,
    threshold: Option<u64>,
    rows: &AtomicU64,
) -> Result<(Vec<u64>, Vec<u64>)> {
    let mut counts = vec![0u64; k as usize + 1];
    let mut wide_counts = threshold.map_or(Vec::new(), |t| vec![0u64; t as usize + 1]);
    let columns: &[&str] = match threshold {
        Some(_) => &["distance", WIDE_DISTANCE],
        None => &["distance"],
    };
    read_columns(&parquet_files(dir)?, columns, |batch, file| {
        let distances = int8_column(batch, "distance", file)?;
        count_values(distances.iter().flatten().map(i64::from), &mut counts);
        if threshold.is_some() {
            let wide = primitive_column::<Int16Type>(batch, WIDE_DISTANCE, file, "INT16")?;
            count_values(wide.iter().flatten().map(i64::from), &mut wide_counts);
        }
        rows.fetch_add(batch.num_rows() as u64, Ordering::Relaxed);
        Ok(())
    })?;
    Ok((counts, wide_counts))
}

/// Adds each value (negative ones as 0) to its count in `counts`, grown to
/// hold it.
fn count_values(values: impl Iterator<Item = i64>, counts: &mut Vec<u64>) {
    for value in values {
        let at = value.max(0) as usize;
        if at >= counts.len() {
            counts.resize(at + 1, 0);
        }
        counts[at] += 1;
    }
}

/// A batch's column `name` as the integer type `T` (`expected` names it in
/// the error).
fn primitive_column<'a, T: ArrowPrimitiveType>(
    batch: &'a RecordBatch,
    name: &str,
    file: &Location,
    expected: &str,
) -> Result<&'a PrimitiveArray<T>> {
    let column = batch.column_by_name(name).context("projected column")?;
    column.as_primitive_opt::<T>().with_context(|| {
        format!(
            "{file}: column `{name}` has type {}, expected {expected}",
            column.data_type()
        )
    })
}

fn int8_column<'a>(
    batch: &'a RecordBatch,
    name: &str,
    file: &Location,
) -> Result<&'a PrimitiveArray<Int8Type>> {
    primitive_column(batch, name, file, "INT8")
}

/// A string column's values, null where a row has none.
fn string_column<'a>(
    batch: &'a RecordBatch,
    name: &str,
    file: &Location,
) -> Result<Vec<Option<&'a str>>> {
    let column = batch.column_by_name(name).context("projected column")?;
    Ok(string_values(column, name, &file.to_string())?.collect())
}

fn int64_column<'a>(batch: &'a RecordBatch, name: &str, file: &Location) -> Result<&'a Int64Array> {
    primitive_column(batch, name, file, "INT64")
}

/// The largest clusters as the clusters' pass finds them: a cluster enters
/// at its first row if it is among the largest so far, and since every
/// row of a cluster carries its size, one that does not enter then never
/// will.
#[derive(Default)]
struct Largest {
    /// `(size, cluster_id)`, smallest first.
    heap: BinaryHeap<Reverse<(u64, i64)>>,
    /// Members of the clusters in the heap (and of some evicted since).
    members: HashMap<i64, Vec<i64>>,
    /// Each member's cluster, once the pass is over.
    cluster_of: HashMap<i64, i64>,
    dropped: HashMap<i64, Vec<SampleDrop>>,
    dropped_count: HashMap<i64, u64>,
    /// Every remembered member that is dropped, sampled or not.
    dropped_members: HashSet<i64>,
    /// URLs from the night's fingerprints, of the samples' pages.
    urls: HashMap<i64, Option<String>>,
    /// URLs from `drop/` (which has them for corpus pages too), of
    /// remembered members kept in another page's place.
    keep_urls: HashMap<i64, String>,
}

impl Largest {
    fn see(&mut self, id: i64, cluster: i64, size: u64) {
        if let Some(members) = self.members.get_mut(&cluster) {
            if members.len() < MEMBERS_KEPT {
                members.push(id);
            }
            return;
        }
        let enters = self.heap.len() < LARGEST_CLUSTERS
            || self
                .heap
                .peek()
                .is_some_and(|Reverse(least)| (size, cluster) > *least);
        if !enters {
            return;
        }
        self.heap.push(Reverse((size, cluster)));
        self.members.insert(cluster, vec![id]);
        if self.heap.len() > LARGEST_CLUSTERS {
            if let Some(Reverse((_, evicted))) = self.heap.pop() {
                self.members.remove(&evicted);
            }
        }
    }

    /// A row of `drop/`, page `id` dropped for `keep` (with its URL when
    /// `drop/` has one): counted, and sampled (as `sample` makes it, so a
    /// row not sampled costs no copy of its strings), when its page is a
    /// remembered member.
    fn see_drop(
        &mut self,
        id: i64,
        (keep, keep_url): (i64, Option<&str>),
        sample: impl FnOnce() -> SampleDrop,
    ) {
        if let Some(url) = keep_url.filter(|_| self.cluster_of.contains_key(&keep)) {
            self.keep_urls
                .entry(keep)
                .or_insert_with(|| url.to_string());
        }
        let Some(&cluster) = self.cluster_of.get(&id) else {
            return;
        };
        *self.dropped_count.entry(cluster).or_default() += 1;
        self.dropped_members.insert(id);
        let samples = self.dropped.entry(cluster).or_default();
        if samples.len() < SAMPLES {
            samples.push(sample());
        }
    }

    /// After the clusters' pass: which cluster each remembered member is in.
    fn index_members(&mut self) {
        for (&cluster, members) in &self.members {
            for &id in members {
                self.cluster_of.insert(id, cluster);
            }
        }
    }

    /// The ids whose URLs the samples show.
    fn sample_ids(&self) -> HashSet<i64> {
        let mut ids: HashSet<i64> = self.members.keys().copied().collect();
        for (&cluster, members) in &self.members {
            ids.extend(kept_members(cluster, members, &self.dropped_members).take(SAMPLES));
        }
        for drops in self.dropped.values() {
            ids.extend(drops.iter().flat_map(|d| [d.page.id, d.keep.id]));
        }
        ids
    }

    fn into_clusters(self) -> Vec<LargeCluster> {
        // The fingerprints' URL, else `drop/`'s: the only one a corpus page has.
        let known = |page: &SamplePage| SamplePage {
            id: page.id,
            tonight: self.urls.contains_key(&page.id),
            url: (self.urls.get(&page.id).cloned().flatten())
                .or_else(|| page.url.clone())
                .or_else(|| self.keep_urls.get(&page.id).cloned()),
        };
        let url = |id: i64| {
            known(&SamplePage {
                id,
                url: None,
                tonight: false,
            })
        };
        let mut clusters: Vec<(u64, i64)> = self.heap.into_iter().map(|Reverse(c)| c).collect();
        clusters.sort_by(|a, b| b.cmp(a));
        clusters
            .into_iter()
            .map(|(size, cluster)| {
                let members = self.members.get(&cluster).map_or(&[][..], Vec::as_slice);
                let dropped = self.dropped.get(&cluster);
                LargeCluster {
                    representative: url(cluster),
                    size,
                    dropped: self.dropped_count.get(&cluster).copied().unwrap_or(0),
                    kept_sample: kept_members(cluster, members, &self.dropped_members)
                        .take(SAMPLES)
                        .map(url)
                        .collect(),
                    dropped_sample: dropped
                        .into_iter()
                        .flatten()
                        .map(|d| SampleDrop {
                            page: known(&d.page),
                            keep: known(&d.keep),
                            distance: d.distance,
                            wide_distance: d.wide_distance,
                            kept_by: d.kept_by.clone(),
                        })
                        .collect(),
                }
            })
            .collect()
    }
}

/// The members of a cluster that are not dropped, the representative
/// (`cluster`) first.
fn kept_members<'a>(
    cluster: i64,
    members: &'a [i64],
    dropped: &'a HashSet<i64>,
) -> impl Iterator<Item = i64> + 'a {
    let others = members
        .iter()
        .copied()
        .filter(move |&id| id != cluster && !dropped.contains(&id));
    std::iter::once(cluster).chain(others)
}

/// Clusters by size, and the largest clusters with their members.
fn read_clusters(dir: &Path, rows: &AtomicU64) -> Result<(BTreeMap<u64, u64>, Largest)> {
    let mut rows_by_size: BTreeMap<u64, u64> = BTreeMap::new();
    let mut largest = Largest::default();
    let columns = ["id", "cluster_id", "cluster_size"];
    read_columns(&parquet_files(dir)?, &columns, |batch, file| {
        let ids = int64_column(batch, "id", file)?;
        let clusters = int64_column(batch, "cluster_id", file)?;
        let sizes = int64_column(batch, "cluster_size", file)?;
        for r in 0..batch.num_rows() {
            let size = sizes.value(r).max(0) as u64;
            *rows_by_size.entry(size).or_default() += 1;
            largest.see(ids.value(r), clusters.value(r), size);
        }
        rows.fetch_add(batch.num_rows() as u64, Ordering::Relaxed);
        Ok(())
    })?;
    largest.index_members();
    let sizes = rows_by_size
        .into_iter()
        .filter(|&(size, _)| size > 0)
        .map(|(size, pages)| (size, pages / size))
        .collect();
    Ok((sizes, largest))
}

/// Drops by the key their kept page won by: `(key, drops)`.
pub(crate) type KeyCounts = Vec<(String, u64)>;

/// Every dropped id, and the drops by `kept_by` (most first); the largest
/// clusters' drops counted and sampled.
fn read_drops(
    dir: &Path,
    largest: &mut Largest,
    rows: &AtomicU64,
) -> Result<(HashSet<i64>, KeyCounts)> {
    let mut dropped = HashSet::new();
    let mut kept_by: HashMap<String, u64> = HashMap::new();
    // Outputs of versions before them have no `wide_distance` or `kept_by`.
    let wide = has_column(dir, WIDE_DISTANCE)?;
    let with_kept_by = has_column(dir, KEPT_BY)?;
    // Nor, unless the pages table or the corpus had them, URLs.
    let with_urls = has_column(dir, KEEP_URL)?;
    let mut columns = vec!["id", "keep_id", "distance"];
    columns.extend(wide.then_some(WIDE_DISTANCE));
    columns.extend(with_kept_by.then_some(KEPT_BY));
    columns.extend(
        with_urls
            .then_some([DROP_URL, KEEP_URL])
            .into_iter()
            .flatten(),
    );
    read_columns(&parquet_files(dir)?, &columns, |batch, file| {
        let ids = int64_column(batch, "id", file)?;
        let keeps = int64_column(batch, "keep_id", file)?;
        let distances = int8_column(batch, "distance", file)?;
        let wides = wide
            .then(|| primitive_column::<Int16Type>(batch, WIDE_DISTANCE, file, "INT16"))
            .transpose()?;
        let names: Vec<Option<&str>> = match with_kept_by {
            true => string_column(batch, KEPT_BY, file)?,
            false => vec![None; batch.num_rows()],
        };
        let (urls, keep_urls) = match with_urls {
            true => (
                string_column(batch, DROP_URL, file)?,
                string_column(batch, KEEP_URL, file)?,
            ),
            false => (vec![None; batch.num_rows()], vec![None; batch.num_rows()]),
        };
        for (r, name) in names.into_iter().enumerate() {
            let id = ids.value(r);
            dropped.insert(id);
            if let Some(name) = name {
                match kept_by.get_mut(name) {
                    Some(count) => *count += 1,
                    None => {
                        kept_by.insert(name.to_string(), 1);
                    }
                }
            }
            let keep = keeps.value(r);
            largest.see_drop(id, (keep, keep_urls[r]), || SampleDrop {
                page: SamplePage {
                    id,
                    url: urls[r].map(str::to_string),
                    tonight: false,
                },
                keep: SamplePage {
                    id: keep,
                    url: keep_urls[r].map(str::to_string),
                    tonight: false,
                },
                distance: distances.is_valid(r).then(|| distances.value(r)),
                wide_distance: wides.and_then(|w| w.is_valid(r).then(|| w.value(r))),
                kept_by: name.map(str::to_string),
            });
        }
        rows.fetch_add(batch.num_rows() as u64, Ordering::Relaxed);
        Ok(())
    })?;
    let mut kept_by: KeyCounts = kept_by.into_iter().collect();
    kept_by.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok((dropped, kept_by))
}

/// The host of a URL: what lies between `://` and the next `/`, `?`, `#`
/// or `:`, without a user, in the URL's case.
pub(crate) fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let authority = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    match authority.rfind(':') {
        Some(colon) if !authority.ends_with(']') => &authority[..colon],
        _ => authority,
    }
}

/// Pages and drops by host over the night's pages (every host with a
/// drop, the most drops first), how many drops were found among them, and
/// the samples' URLs. A page met again (fetched twice) counts once, under
/// its first URL; the pages of a file without `url` (each with whether it
/// has one) count as pages without a URL.
fn read_hosts(
    pages: &[(&Location, bool)],
    dropped: &HashSet<i64>,
    largest: &mut Largest,
    rows: &AtomicU64,
) -> Result<(Vec<HostDrops>, u64)> {
    let wanted = largest.sample_ids();
    let mut hosts: HashMap<String, (u64, u64)> = HashMap::new();
    let mut seen: HashSet<i64> = HashSet::new();
    let mut found = 0u64;
    for &(file, has_url) in pages {
        let columns: &[&str] = match has_url {
            true => &["id", "url"],
            false => &["id"],
        };
        read_columns(std::slice::from_ref(file), columns, |batch, file| {
            let ids = int64_column(batch, "id", file)?;
            let urls = match has_url {
                true => string_column(batch, "url", file)?,
                false => vec![None; batch.num_rows()],
            };
            for (r, url) in urls.into_iter().enumerate() {
                let id = ids.value(r);
                if !seen.insert(id) {
                    continue;
                }
                let is_dropped = dropped.contains(&id);
                found += u64::from(is_dropped);
                if wanted.contains(&id) {
                    largest.urls.insert(id, url.map(str::to_string));
                }
                let host = url
                    .map_or("(pages without a URL)", host_of)
                    .to_ascii_lowercase();
                let entry = hosts.entry(host).or_default();
                entry.0 += 1;
                entry.1 += u64::from(is_dropped);
            }
            rows.fetch_add(batch.num_rows() as u64, Ordering::Relaxed);
            Ok(())
        })?;
    }
    let mut hosts: Vec<HostDrops> = hosts
        .into_iter()
        .filter(|(_, (_, dropped))| *dropped > 0)
        .map(|(host, (pages, dropped))| HostDrops {
            host,
            pages,
            dropped,
        })
        .collect();
    hosts.sort_by(|a, b| b.dropped.cmp(&a.dropped).then_with(|| a.host.cmp(&b.host)));
    Ok((hosts, found))
}

/// Rows the detail passes will read, for the progress bar.
pub(crate) fn rows_to_read(dirs: &NightDirs) -> u64 {
    let count = |dir: Option<PathBuf>| {
        dir.and_then(|d| parquet_files(&d).ok())
            .and_then(|files| crate::io::parquet::input::count_rows(&files).ok())
            .unwrap_or(0)
    };
    let clusters = dirs.clusters.clone();
    count(dirs.pairs.clone())
        + count(clusters.as_ref().map(|c| c.join("clusters")))
        + count(clusters.as_ref().map(|c| c.join("drop")))
        + count(dirs.fingerprints.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_the_authority_without_user_or_port() {
        assert_eq!(host_of("https://Example.org/a/b?c"), "Example.org");
        assert_eq!(host_of("http://user:pw@example.net:8080/x"), "example.net");
        assert_eq!(host_of("https://[::1]/x"), "[::1]");
        assert_eq!(host_of("example.com/path"), "example.com");
    }

    #[test]
    fn the_directories_of_corpus_files() {
        assert!(corpus_directories(&[]).is_empty());
        assert_eq!(corpus_directories(&["a/b/c.parquet"]), ["a/b"]);
        // Apart, each its own: never a broad common directory like /tmp.
        let apart = ["/tmp/x/1.parquet", "/tmp/y/2.parquet", "/tmp/x/3.parquet"];
        assert_eq!(corpus_directories(&apart), ["/tmp/x", "/tmp/y"]);
        // Many nightly batches: the corpus directory above them.
        let batches: Vec<String> = (1..=9)
            .map(|d| format!("/n/corpus/2026-12-0{d}/part-00000.parquet"))
            .collect();
        let batches: Vec<&str> = batches.iter().map(String::as_str).collect();
        assert_eq!(corpus_directories(&batches), ["/n/corpus"]);
        // Only the root above them: each listed.
        let roots: Vec<String> = (1..=5).map(|d| format!("/d{d}/f.parquet")).collect();
        let roots: Vec<&str> = roots.iter().map(String::as_str).collect();
        assert_eq!(corpus_directories(&roots).len(), 5);
    }

    /// A directory of which match read some files is named by those files,
    /// so that explain finds no row there that no pair came from.
    #[test]
    fn a_directory_match_read_in_part_is_given_as_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let (archive, batch) = (dir.path().join("archive"), dir.path().join("batch"));
        for (folder, names) in [
            (&archive, ["a.parquet", "b.parquet"]),
            (&batch, ["c.parquet", "d.parquet"]),
        ] {
            std::fs::create_dir(folder).unwrap();
            for name in names {
                std::fs::write(folder.join(name), "").unwrap();
            }
        }
        let path = |folder: &Path, name: &str| folder.join(name).display().to_string();
        let (a, c, d) = (
            path(&archive, "a.parquet"),
            path(&batch, "c.parquet"),
            path(&batch, "d.parquet"),
        );
        let whole = read_files(&[&c, &d]);
        assert_eq!(whole, [batch.display().to_string()]);
        let part = read_files(&[&a, &c, &d]);
        assert_eq!(part, [a.clone(), batch.display().to_string()]);
    }

    #[test]
    fn the_largest_clusters_are_kept_whatever_the_row_order() {
        let mut largest = Largest::default();
        // 30 clusters of sizes 1..=30, rows interleaved.
        let mut rows = Vec::new();
        for size in 1..=30u64 {
            for m in 0..size {
                rows.push((size as i64 * 1000 + m as i64, size as i64 * 1000, size));
            }
        }
        rows.sort_by_key(|&(id, _, _)| (id % 7, id));
        for (id, cluster, size) in rows {
            largest.see(id, cluster, size);
        }
        let mut sizes: Vec<u64> = largest.heap.iter().map(|Reverse((s, _))| *s).collect();
        sizes.sort();
        assert_eq!(sizes, (11..=30).collect::<Vec<u64>>());
        for Reverse((size, cluster)) in &largest.heap {
            assert_eq!(largest.members[cluster].len() as u64, *size);
        }
    }

    #[test]
    fn the_kept_sample_holds_no_dropped_page_sampled_or_not() {
        // One cluster of 14: its representative 50 (met last), 13 drops
        // (more than the samples), and a second cluster whose pages stay.
        let mut largest = Largest::default();
        let rows = (1..=13)
            .map(|id| (id, 50, 14))
            .chain([(50, 50, 14), (60, 60, 2), (61, 60, 2)]);
        for (id, cluster, size) in rows {
            largest.see(id, cluster, size);
        }
        largest.index_members();
        let page = |id| SamplePage {
            id,
            url: None,
            tonight: false,
        };
        for id in 1..=13 {
            largest.see_drop(id, (50, None), || SampleDrop {
                page: page(id),
                keep: page(50),
                distance: Some(0),
                wide_distance: None,
                kept_by: None,
            });
        }
        let clusters = largest.into_clusters();
        let kept = |c: &LargeCluster| c.kept_sample.iter().map(|p| p.id).collect::<Vec<_>>();
        assert_eq!((clusters[0].size, clusters[0].dropped), (14, 13));
        assert_eq!(clusters[0].dropped_sample.len(), SAMPLES);
        assert_eq!(kept(&clusters[0]), [50]);
        assert_eq!(kept(&clusters[1]), [60, 61]);
    }
}
