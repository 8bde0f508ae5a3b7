//! How long the corpus has held a page (`corpus` first with `--corpus`):
//! since the first batch of it that holds the page was complete.
//!
//! A batch is an output committed whole: the nearest directory above a
//! file that holds `_SUCCESS` (each night `append` writes, a `fingerprint`
//! or Spark output), however its files were given (the directory, a glob,
//! or files in its partitions), else the path given (a DuckDB or pyarrow
//! archive, however partitioned). It was complete at its
//! latest `fetch_time`: no page of it was fetched after it was written,
//! while an old page refetched into it (a crawl's stray old segment) says
//! nothing of when it came. The pages of one batch tie, so the next keys
//! decide between them: a batch was deduplicated as a whole (or never),
//! and ranking its pages by the minutes between their fetches would keep
//! an AMP view fetched before the page it names for good.
//!
//! The time comes from the row groups' statistics; a row group without
//! them (a writer that wrote none, or Spark's INT96 times) has its column
//! read. Every process reads the same footers and markers, so every
//! process gives a page the same time. A batch without times (shards from
//! before `fetch_time`) is held since 0: the longest. A batch timed after
//! the run's clock (a crawler's clock set wrong) is warned of: every page
//! of it ranks after every other corpus page. `_summary.json` lists the
//! batches with their times, so that a `kept_by = corpus` can be checked.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::Result;
use arrow_array::temporal_conversions::timestamp_us_to_datetime;
use arrow_schema::DataType;
use serde::Serialize;

use super::{ordered_values, ValueKind, FETCH_TIME};
use crate::io::parquet::pages::PagesTable;
use crate::io::storage::is_committed;

/// The corpus's batches: the time of each unit's, and the list.
#[derive(Debug, Default)]
pub(crate) struct CorpusBatches {
    /// The time of each unit (row group)'s batch, in unit order.
    pub(crate) unit_times: Vec<u64>,
    /// The batches, the longest held first.
    pub(crate) listed: Vec<CorpusBatch>,
}

/// One batch of the corpus, as `_summary.json` lists it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct CorpusBatch {
    /// The committed directory, or the `--corpus` path as given.
    pub(crate) batch: String,
    pub(crate) row_groups: u64,
    /// Its latest `fetch_time`: RFC 3339 in UTC for a timestamp or date,
    /// else the column's number; none: held the longest.
    pub(crate) latest_fetch_time: Option<String>,
    /// Whether that time is after the run's clock (warned of).
    pub(crate) after_now: bool,
}

/// A batch's latest time, with the type of the column it came from, and
/// its row groups.
#[derive(Debug, Default)]
struct Timing {
    latest: Option<(u64, DataType)>,
    row_groups: u64,
}

impl Timing {
    fn latest_time(&self) -> Option<u64> {
        self.latest.as_ref().map(|(time, _)| *time)
    }

    /// The time its pages rank by: none ranks as held the longest.
    fn rank_time(&self) -> u64 {
        self.latest_time().unwrap_or(0)
    }
}

/// The batches of the units (row groups) of the corpus `table` and their
/// times; warns of the batches timed after now.
pub(super) fn batch_times(table: &PagesTable) -> Result<CorpusBatches> {
    let started = Instant::now();
    let mut batches: HashMap<(String, &str), String> = HashMap::new();
    let mut committed = HashMap::new();
    let mut times: HashMap<String, Timing> = HashMap::new();
    let mut batch_of = Vec::with_capacity(table.units());
    for unit in 0..table.units() {
        let (directory, spec) = (table.unit_directory(unit), table.unit_spec(unit));
        let batch = match batches.entry((directory, spec)) {
            Entry::Occupied(known) => known.get().clone(),
            Entry::Vacant(new) => {
                let batch = committed_batch(&new.key().0, spec, &mut committed)?;
                new.insert(batch).clone()
            }
        };
        let latest = latest_time(table, unit)?;
        let timing = times.entry(batch.clone()).or_default();
        timing.row_groups += 1;
        if latest.as_ref().map(|(time, _)| *time) > timing.latest_time() {
            timing.latest = latest;
        }
        batch_of.push(batch);
    }
    let unit_times = batch_of
        .iter()
        .map(|batch| times[batch].rank_time())
        .collect();
    let listed = listed(times, now());
    for batch in listed.iter().filter(|batch| batch.after_now) {
        tracing::warn!(
            "--corpus {}: its latest fetch_time is after now, so every page of it ranks as held the shortest (a crawler's clock set wrong?)",
            batch.batch
        );
    }
    let seconds = started.elapsed().as_secs_f64();
    tracing::info!(batches = listed.len(), seconds, "corpus batches timed");
    Ok(CorpusBatches { unit_times, listed })
}

/// The run's clock as a clock time's order ([`super::ordered_values`]).
fn now() -> u64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    (since_epoch.as_micros() as u64) ^ (1 << 63)
}

/// The batches timed by `times`, the longest held first (then by name),
/// each marked if its time is a clock time after `now`.
fn listed(times: HashMap<String, Timing>, now: u64) -> Vec<CorpusBatch> {
    let mut order: Vec<(u64, String, Timing)> = times
        .into_iter()
        .map(|(batch, timing)| (timing.rank_time(), batch, timing))
        .collect();
    order.sort_unstable_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    order
        .into_iter()
        .map(|(_, batch, timing)| CorpusBatch {
            batch,
            row_groups: timing.row_groups,
            after_now: timing
                .latest
                .as_ref()
                .is_some_and(|(time, data_type)| is_clock(data_type) && *time > now),
            latest_fetch_time: timing
                .latest
                .map(|(time, data_type)| shown_time(time, &data_type)),
        })
        .collect()
}

/// Whether a column of `data_type` holds clock times, not numbers of some
/// other unit.
fn is_clock(data_type: &DataType) -> bool {
    ValueKind::of(data_type) == Some(ValueKind::Clock)
}

/// A value in the order [`super::ordered_values`] gives it, shown as the
/// column of `data_type` held it: a clock time in RFC 3339 (UTC).
fn shown_time(ordered: u64, data_type: &DataType) -> String {
    let signed = (ordered ^ (1 << 63)) as i64;
    match data_type {
        _ if is_clock(data_type) => timestamp_us_to_datetime(signed).map_or_else(
            || signed.to_string(),
            |time| format!("{time}Z").replacen(' ', "T", 1),
        ),
        _ if data_type.is_integer() => signed.to_string(),
        _ => {
            let bits = match ordered >> 63 {
                1 => ordered & !(1 << 63),
                _ => !ordered,
            };
            f64::from_bits(bits).to_string()
        }
    }
}

/// The batch of a file in `directory`, named by the path `spec`: the
/// nearest directory at or above it that holds `_SUCCESS` (to a bucket's
/// root; `committed` remembers the directories looked at), else `spec`;
/// either named without `.` segments or a trailing `/`, so that one batch
/// has one name however a path spells it. Above the path `spec` names, a
/// directory that cannot be looked at (a role allowed only the corpus's
/// prefix) ends the search rather than the run.
fn committed_batch(
    directory: &str,
    spec: &str,
    committed: &mut HashMap<String, bool>,
) -> Result<String> {
    let spec = tidy(spec);
    let fixed = spec
        .find(['*', '?', '['])
        .map_or(&*spec, |glob| &spec[..glob]);
    let above_spec = |at: &str| {
        let rest = fixed.strip_prefix(at);
        rest.is_some_and(|rest| rest.starts_with('/') && rest.len() > 1)
    };
    let mut at = tidy(directory);
    while !at.is_empty() {
        let is = match committed.get(&at) {
            Some(&is) => is,
            None => match is_committed(&at) {
                Ok(is) => {
                    committed.insert(at.clone(), is);
                    is
                }
                Err(_) if above_spec(&at) => break,
                Err(error) => return Err(error),
            },
        };
        if is {
            return Ok(at);
        }
        match parent_directory(&at) {
            Some(up) => at = up.to_string(),
            None => break,
        }
    }
    Ok(spec)
}

/// The directory above `at`; none above a bucket (`s3://bucket`) or a
/// relative path's first directory, or for the root.
fn parent_directory(at: &str) -> Option<&str> {
    let (up, _) = at.rsplit_once('/')?;
    let in_bucket = |url_path: &str| url_path.contains('/');
    match at.split_once("://") {
        Some((_, path)) if !in_bucket(path) => None,
        _ => Some(up).filter(|up| !up.is_empty()),
    }
}

/// `path` without `.` segments or trailing `/`s (a URL's `//` stays).
fn tidy(path: &str) -> String {
    let segments: Vec<&str> = path.split('/').filter(|s| *s != ".").collect();
    let last = segments
        .iter()
        .rposition(|s| !s.is_empty())
        .map_or(0, |i| i + 1);
    match last {
        0 if path.starts_with('/') => "/".to_string(),
        _ => segments[..last].join("/"),
    }
}

/// The latest `fetch_time` of unit `unit`, from its statistics or else
/// its column, with the column's type (`None` if it has no time).
fn latest_time(table: &PagesTable, unit: usize) -> Result<Option<(u64, DataType)>> {
    let Some(maxes) = table.unit_statistics_max(unit, FETCH_TIME)? else {
        return Ok(None);
    };
    let data_type = maxes.data_type().clone();
    let location = table.unit_path(unit).to_string();
    if let Some(latest) = ordered_values(&maxes, FETCH_TIME, &location)?[0] {
        return Ok(Some((latest, data_type)));
    }
    let mut latest = None;
    table.read_unit_columns(unit, &[FETCH_TIME], |_, batch, location| {
        if let Some(times) = batch.column_by_name(FETCH_TIME) {
            let times = ordered_values(times, FETCH_TIME, location)?;
            latest = latest.into_iter().chain(times.into_iter().flatten()).max();
        }
        Ok(())
    })?;
    Ok(latest.map(|latest| (latest, data_type)))
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, TimestampMicrosecondArray};
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::{EnabledStatistics, WriterProperties};

    use super::*;

    /// Writes a file of ids from 1 and `times` (unless `!timed`: ids
    /// alone), with or without statistics, in row groups of two rows.
    fn write_times(path: &Path, times: &[Option<i64>], timed: bool, statistics: bool) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let ids = Int64Array::from_iter_values(1..=times.len() as i64);
        let mut columns = vec![("id", Arc::new(ids) as ArrayRef)];
        if timed {
            let times = TimestampMicrosecondArray::from(times.to_vec()).with_timezone("UTC");
            columns.push((FETCH_TIME, Arc::new(times) as ArrayRef));
        }
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let enabled = match statistics {
            true => EnabledStatistics::Chunk,
            false => EnabledStatistics::None,
        };
        let props = WriterProperties::builder()
            .set_statistics_enabled(enabled)
            .set_max_row_group_row_count(Some(2))
            .build();
        let file = std::fs::File::create(path).unwrap();
        let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
    }

    #[test]
    fn a_batch_is_a_committed_output_or_a_path_given_held_since_its_latest_time() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name);
        let commit = |name: &str| std::fs::write(at(name).join("_SUCCESS"), "").unwrap();
        // Night 1: its latest time is in its second file's first row group.
        write_times(
            &at("corpus/1/a.parquet"),
            &[Some(500), Some(400)],
            true,
            true,
        );
        let night = [Some(900), None, Some(300)];
        write_times(&at("corpus/1/b.parquet"), &night, true, true);
        commit("corpus/1");
        // Night 2 by a writer without statistics, a null first and a stray
        // old page last.
        let night = [None, Some(700), Some(1)];
        write_times(&at("corpus/2/a.parquet"), &night, true, false);
        commit("corpus/2");
        // An archive from before fetch times: no column, or only nulls.
        write_times(&at("corpus/old/a.parquet"), &[Some(1)], false, true);
        write_times(&at("corpus/old/b.parquet"), &[None, None], true, true);
        commit("corpus/old");
        // An archive partitioned by host, not committed: one batch.
        write_times(&at("hive/host=a/x.parquet"), &[Some(200)], true, true);
        write_times(&at("hive/host=b/y.parquet"), &[Some(250)], true, true);
        let specs = ["corpus", "hive"].map(|name| at(name).display().to_string());
        let none = |_: &str, _: &str, _: &arrow_schema::DataType| Ok(());
        let table =
            PagesTable::open("--corpus", &specs, (&[], ""), none, &[FETCH_TIME], none).unwrap();
        let batches = batch_times(&table).unwrap();
        let times = &batches.unit_times;
        // Night 2's time was read from its column.
        for unit in 3..5 {
            let maxes = table.unit_statistics_max(unit, FETCH_TIME).unwrap();
            assert!(table.unit_directory(unit).ends_with('2'));
            assert_eq!(maxes.map(|m| m.null_count()), Some(1), "unit {unit}");
        }
        let time = |micros: i64| (micros as u64) ^ (1 << 63);
        let expected = [900, 900, 900, 700, 700].map(time);
        assert_eq!(times[..5], expected);
        assert_eq!(times[5..7], [0, 0]);
        assert_eq!(times[7..], [time(250), time(250)]);
        // A glob's batch is the path given unless a directory it reaches
        // was committed.
        let glob = format!("{}/*/*.parquet", at("hive").display());
        let host = at("hive/host=a").display().to_string();
        let known = &mut HashMap::new();
        assert_eq!(committed_batch(&host, &glob, known).unwrap(), glob);
        let glob = format!("{}/*/*.parquet", at("corpus").display());
        let night = at("corpus/1").display().to_string();
        assert_eq!(committed_batch(&night, &glob, known).unwrap(), night);
        // A file in a committed output's partition, given alone, is of
        // that output; a path's spellings name one batch.
        std::fs::create_dir_all(at("corpus/1/host=a")).unwrap();
        let partition = format!("{}/./host=a/", at("corpus/1").display());
        let file = format!("{partition}x.parquet");
        assert_eq!(committed_batch(&partition, &file, known).unwrap(), night);
        let hive = at("hive").display().to_string();
        let spelt = format!("{}/./hive//", dir.path().display());
        assert_eq!(committed_batch(&host, &spelt, known).unwrap(), hive);
        assert_eq!(tidy("./a/./b/"), "a/b");
        assert_eq!(tidy("s3://bucket/a/"), "s3://bucket/a");
        assert_eq!(tidy("/"), "/");
        assert_eq!(parent_directory("s3://bucket/a"), Some("s3://bucket"));
        assert_eq!(parent_directory("s3://bucket"), None);
        assert_eq!(parent_directory("/a"), None);
        assert_eq!(parent_directory("a"), None);
        // The list: the longest held first, with each batch's time.
        let shown: Vec<(&str, u64, Option<&str>, bool)> = batches
            .listed
            .iter()
            .map(|b| {
                let name = b.batch.rsplit('/').next().unwrap();
                (
                    name,
                    b.row_groups,
                    b.latest_fetch_time.as_deref(),
                    b.after_now,
                )
            })
            .collect();
        let expected = [
            ("old", 2, None, false),
            ("hive", 2, Some("1970-01-01T00:00:00.000250Z"), false),
            ("2", 2, Some("1970-01-01T00:00:00.000700Z"), false),
            ("1", 3, Some("1970-01-01T00:00:00.000900Z"), false),
        ];
        assert_eq!(shown, expected);
        // Batches timed after the clock are marked; those without times,
        // or whose times are not clock times, are not.
        let timing = |micros: Option<i64>, data_type: DataType| Timing {
            latest: micros.map(|micros| (time(micros), data_type)),
            row_groups: 1,
        };
        let clock = || DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, None);
        let times = HashMap::from([
            ("b".to_string(), timing(Some(800), clock())),
            ("a".to_string(), timing(Some(900), DataType::Date32)),
            ("c".to_string(), timing(Some(700), clock())),
            ("n".to_string(), timing(Some(1000), DataType::Int64)),
            ("old".to_string(), timing(None, clock())),
        ]);
        let after: Vec<(String, Option<String>, bool)> = listed(times, time(750))
            .into_iter()
            .map(|b| (b.batch, b.latest_fetch_time, b.after_now))
            .collect();
        let expected = [
            ("old", None, false),
            ("c", Some("1970-01-01T00:00:00.000700Z"), false),
            ("b", Some("1970-01-01T00:00:00.000800Z"), true),
            ("a", Some("1970-01-01T00:00:00.000900Z"), true),
            ("n", Some("1000"), false),
        ]
        .map(|(b, t, after)| (b.to_string(), t.map(str::to_string), after));
        assert_eq!(after, expected);
        assert_eq!(shown_time(time(-5), &DataType::Int32), "-5");
        assert_eq!(shown_time(time(5), &DataType::UInt64), "5");
        let real = |v: f64| {
            ordered_values(
                &(Arc::new(Float64Array::from(vec![v])) as ArrayRef),
                "t",
                "f",
            )
            .unwrap()[0]
                .unwrap()
        };
        assert_eq!(shown_time(real(-2.0), &DataType::Float64), "-2");
        assert_eq!(shown_time(real(1.5), &DataType::Float64), "1.5");
    }
}
