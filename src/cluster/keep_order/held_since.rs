//! How long the corpus has held a page (`corpus` first with `--corpus`):
//! since the first batch of it that holds the page was complete.
//!
//! A batch is an output committed whole: the nearest directory above a
//! file, up to the path given, that holds `_SUCCESS` (each night `append`
//! writes, a `fingerprint` or Spark output), else the path given (a
//! DuckDB or pyarrow archive, however partitioned). It was complete at its
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
//! of it ranks after every other corpus page.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::Result;
use arrow_schema::DataType;

use super::{ordered_values, FETCH_TIME};
use crate::io::parquet::pages::PagesTable;
use crate::io::storage::is_committed;

/// The time of the batch of each unit (row group) of the corpus `table`.
pub(super) fn batch_times(table: &PagesTable) -> Result<Vec<u64>> {
    let started = Instant::now();
    let mut batches: HashMap<(String, &str), String> = HashMap::new();
    let mut times: HashMap<String, Option<u64>> = HashMap::new();
    let mut clock_times = true;
    let mut batch_of = Vec::with_capacity(table.units());
    for unit in 0..table.units() {
        let (directory, spec) = (table.unit_directory(unit), table.unit_spec(unit));
        let batch = match batches.entry((directory, spec)) {
            Entry::Occupied(known) => known.get().clone(),
            Entry::Vacant(new) => {
                let batch = committed_batch(&new.key().0, spec)?;
                new.insert(batch).clone()
            }
        };
        let (latest, clock) = latest_time(table, unit)?;
        clock_times &= clock;
        let time = times.entry(batch.clone()).or_default();
        *time = [*time, latest].into_iter().flatten().max();
        batch_of.push(batch);
    }
    if clock_times {
        warn_of_future_batches(&times);
    }
    let seconds = started.elapsed().as_secs_f64();
    tracing::info!(batches = times.len(), seconds, "corpus batches timed");
    Ok(batch_of
        .iter()
        .map(|batch| times[batch].unwrap_or(0))
        .collect())
}

/// Warns of each batch whose time, a clock time, is after now.
fn warn_of_future_batches(times: &HashMap<String, Option<u64>>) {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let now = (since_epoch.as_micros() as u64) ^ (1 << 63);
    for batch in batches_after(times, now) {
        tracing::warn!("--corpus {batch}: its latest fetch_time is after now, so every page of it ranks as held the shortest (a crawler's clock set wrong?)");
    }
}

/// The batches timed after `now`, in order.
fn batches_after(times: &HashMap<String, Option<u64>>, now: u64) -> Vec<&String> {
    let mut after: Vec<&String> = times
        .iter()
        .filter(|(_, time)| time.is_some_and(|time| time > now))
        .map(|(batch, _)| batch)
        .collect();
    after.sort();
    after
}

/// The batch of a file in `directory`, named by the path `spec`: the
/// nearest directory at or above it, up to the one `spec` names (or
/// names files in), that holds `_SUCCESS`; else `spec`.
fn committed_batch(directory: &str, spec: &str) -> Result<String> {
    let fixed = spec
        .find(['*', '?', '['])
        .map_or(spec, |glob| &spec[..glob]);
    let reaches_spec = |at: &str| {
        fixed
            .strip_prefix(at)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            || at.is_empty()
    };
    let mut at = directory;
    loop {
        if is_committed(at)? {
            return Ok(at.to_string());
        }
        match at.rsplit_once('/') {
            Some((up, _)) if !reaches_spec(at) => at = up,
            _ => return Ok(spec.to_string()),
        }
    }
}

/// The latest `fetch_time` of unit `unit`, from its statistics or else
/// its column (`None` if it has none), and whether the column holds clock
/// times (not numbers of some other unit).
fn latest_time(table: &PagesTable, unit: usize) -> Result<(Option<u64>, bool)> {
    let Some(maxes) = table.unit_statistics_max(unit, FETCH_TIME)? else {
        return Ok((None, true));
    };
    let clock = matches!(
        maxes.data_type(),
        DataType::Timestamp(..) | DataType::Date32 | DataType::Date64
    );
    let location = table.unit_path(unit).to_string();
    if let Some(latest) = ordered_values(&maxes, FETCH_TIME, &location)?[0] {
        return Ok((Some(latest), clock));
    }
    let mut latest = None;
    table.read_unit_columns(unit, &[FETCH_TIME], |_, batch, location| {
        if let Some(times) = batch.column_by_name(FETCH_TIME) {
            let times = ordered_values(times, FETCH_TIME, location)?;
            latest = latest.into_iter().chain(times.into_iter().flatten()).max();
        }
        Ok(())
    })?;
    Ok((latest, clock))
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, RecordBatch, TimestampMicrosecondArray};
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
        let table = PagesTable::open("--corpus", &specs, &[], none, &[FETCH_TIME], none).unwrap();
        let times = batch_times(&table).unwrap();
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
        assert_eq!(committed_batch(&host, &glob).unwrap(), glob);
        let glob = format!("{}/*/*.parquet", at("corpus").display());
        let night = at("corpus/1").display().to_string();
        assert_eq!(committed_batch(&night, &glob).unwrap(), night);
        // Batches timed after the clock are named, those without times not.
        let times = HashMap::from([
            ("b".to_string(), Some(time(800))),
            ("a".to_string(), Some(time(900))),
            ("c".to_string(), Some(time(700))),
            ("old".to_string(), None),
        ]);
        assert_eq!(batches_after(&times, time(750)), ["a", "b"]);
    }
}
