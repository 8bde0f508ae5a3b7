//! The evidence in `drop/`: the URL of each dropped page (`url`) and of the
//! page kept in its place (`keep_url`), from the pages table's `url` column.
//!
//! A part is written as its rows come, long before its writer could know
//! their URLs without holding every page's. So when the pages table has
//! URLs, the part is first written plain beside its final name, and once it
//! is whole its writer reads it back, gathers the ids it names, reads the
//! pages table's ids and URLs once, and writes the part with the two
//! columns. Its memory is the URLs of the part's pages, at the end of the
//! job, when the union-find's memory is gone; the rows and their order do
//! not change, so the part is the same whatever the workers and processes.

use std::path::Path;

use anyhow::{Context, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, Int8Type};
use arrow_array::Array;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::components::mix;
use crate::keep_order::URL;
use crate::parquet_io::output::{write_drops_with_urls, DropColumns};
use crate::parquet_io::pages::PagesTable;

/// Writes `part` from the plain part `written` (then removed) with the URLs
/// of both pages of every row, as `table` has them (the first row of a
/// page with a URL, in the table's order).
pub fn attach_urls(written: &Path, part: &Path, table: &PagesTable) -> Result<()> {
    let rows = read_drops(written)?;
    let index = IdIndex::new(rows.ids.iter().chain(&rows.keep_ids).copied());
    let urls = UrlsOf::read(&index, table)?;
    write_drops_with_urls(part, &rows, |id| urls.get(index.find(id)?))?;
    std::fs::remove_file(written).with_context(|| format!("{}: cannot remove", written.display()))
}

/// Reads a `drop/` part whole.
fn read_drops(path: &Path) -> Result<DropColumns> {
    let shown = path.display();
    let file = std::fs::File::open(path).with_context(|| format!("{shown}: cannot open"))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|builder| builder.build())
        .with_context(|| format!("{shown}: cannot read"))?;
    let mut rows = DropColumns::default();
    for batch in reader {
        let batch = batch.with_context(|| format!("{shown}: cannot decode"))?;
        let column = |at: usize| batch.column(at);
        rows.ids
            .extend(column(0).as_primitive::<Int64Type>().values());
        rows.keep_ids
            .extend(column(1).as_primitive::<Int64Type>().values());
        rows.distances
            .extend(column(2).as_primitive::<Int8Type>().iter());
    }
    Ok(rows)
}

/// A set of ids, each numbered, looked up by the bucket of its mixed bits:
/// ids of any spread fall evenly into buckets of a few each.
struct IdIndex {
    /// The ids' [`mix`]es (a bijection), sorted and each once.
    mixed: Vec<u64>,
    /// Where each bucket (the top bits of a mix) starts in `mixed`.
    starts: Vec<u32>,
    shift: u32,
}

impl IdIndex {
    fn new(ids: impl Iterator<Item = i64>) -> IdIndex {
        let mut mixed: Vec<u64> = ids.map(mix).collect();
        radsort::sort(&mut mixed);
        mixed.dedup();
        let bits = (mixed.len().max(1).next_power_of_two().trailing_zeros()).clamp(1, 30);
        let shift = 64 - bits;
        let mut starts = vec![0u32; (1 << bits) + 1];
        for &m in &mixed {
            starts[(m >> shift) as usize + 1] += 1;
        }
        for b in 1..starts.len() {
            starts[b] += starts[b - 1];
        }
        IdIndex {
            mixed,
            starts,
            shift,
        }
    }

    fn len(&self) -> usize {
        self.mixed.len()
    }

    /// The number of `id`, if it is in the set.
    fn find(&self, id: i64) -> Option<usize> {
        let m = mix(id);
        let bucket = (m >> self.shift) as usize;
        let (start, end) = (
            self.starts[bucket] as usize,
            self.starts[bucket + 1] as usize,
        );
        let at = start + self.mixed[start..end].partition_point(|&x| x < m);
        (at < end && self.mixed[at] == m).then_some(at)
    }
}

/// The URLs of the ids of an [`IdIndex`], by number, in one buffer.
struct UrlsOf {
    text: String,
    /// Each id's URL in `text`: `(start, length)`; length `u32::MAX`: none.
    spans: Vec<(u64, u32)>,
}

impl UrlsOf {
    /// Reads the ids and URLs of `table`, keeping those of `index`.
    fn read(index: &IdIndex, table: &PagesTable) -> Result<UrlsOf> {
        let mut urls = UrlsOf {
            text: String::new(),
            spans: vec![(0, u32::MAX); index.len()],
        };
        for unit in 0..table.units() {
            table.read_unit_columns(unit, &[URL], |ids, batch, _| {
                let Some(column) = batch.column_by_name(URL) else {
                    return Ok(());
                };
                let mut keep = |row: usize, url: &str| {
                    if let Some(at) = index.find(ids[row]) {
                        if urls.spans[at].1 == u32::MAX {
                            let start = urls.text.len() as u64;
                            urls.text.push_str(url);
                            urls.spans[at] = (start, url.len().min(u32::MAX as usize - 1) as u32);
                        }
                    }
                };
                match column.data_type() {
                    arrow_schema::DataType::Utf8 => {
                        let strings = column.as_string::<i32>();
                        (0..strings.len())
                            .filter(|&row| strings.is_valid(row))
                            .for_each(|row| keep(row, strings.value(row)));
                    }
                    arrow_schema::DataType::LargeUtf8 => {
                        let strings = column.as_string::<i64>();
                        (0..strings.len())
                            .filter(|&row| strings.is_valid(row))
                            .for_each(|row| keep(row, strings.value(row)));
                    }
                    _ => {
                        let strings = column.as_string_view();
                        (0..strings.len())
                            .filter(|&row| strings.is_valid(row))
                            .for_each(|row| keep(row, strings.value(row)));
                    }
                }
                Ok(())
            })?;
        }
        Ok(urls)
    }

    fn get(&self, at: usize) -> Option<&str> {
        let (start, len) = self.spans[at];
        (len != u32::MAX).then(|| &self.text[start as usize..start as usize + len as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_finds_each_of_its_ids_and_nothing_else() {
        // Hashed ids, small integers and extremes: mixed, all spread evenly.
        let ids: Vec<i64> = (1..=5_000i64)
            .map(|i| mix(i) as i64)
            .chain(0..3_000)
            .chain([i64::MIN, i64::MAX, -1])
            .collect();
        let index = IdIndex::new(ids.iter().chain(&ids).copied());
        assert_eq!(index.len(), 8_003);
        let mut numbers: Vec<usize> = ids.iter().map(|&id| index.find(id).unwrap()).collect();
        numbers.sort_unstable();
        numbers.dedup();
        assert_eq!(numbers.len(), 8_003, "each id has a number of its own");
        for absent in [3_000, 10_000, -2, i64::MIN + 1] {
            assert_eq!(index.find(absent), None, "{absent}");
        }
        assert_eq!(IdIndex::new(std::iter::empty()).find(5), None);
    }
}
