//! The evidence in `drop/` beyond what the sweep gives (`kept_by` comes
//! with each drop, [`crate::cluster::drop_policy`]): the URL of each
//! dropped page (`url`) and of the page kept in its place (`keep_url`),
//! from the pages table's `url` column, and for the pages it lacks (those
//! kept from the corpus) from the corpus's shards (`cluster --corpus`).
//!
//! A part is written as its rows come, long before its writer could know
//! their URLs without holding every page's. So when the pages table has
//! URLs, the part is first written plain beside its final name, and once it
//! is whole its writer reads it back, gathers the ids it names, reads the
//! pages table's ids and URLs once, and writes the part with the two
//! columns. Its memory is the URLs of the part's pages, at the end of the
//! job, when the union-find's memory is gone; the rows and their order do
//! not change, so the part is the same whatever the workers and processes.
//!
//! The corpus is read after the pages table, for the ids still without a
//! URL, and only its ids in full: a row group's URLs are read only when
//! its ids include one of them, since a night's drops are kept in favour
//! of a few corpus pages among billions.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{RecordBatch, RecordBatchReader, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::cluster::components::mix;
use crate::cluster::keep_order::URL;
use crate::exec::parallel::prefetch;
use crate::io::parquet::output::{
    ascending, FileLayout, OpenParquet, OUTPUT_ZSTD_LEVEL, ROW_GROUP_ROWS,
};
use crate::io::parquet::pages::{string_values, PagesTable};

/// Where `drop/`'s URLs come from: the pages table, then the corpus for
/// the pages the table lacks.
pub(crate) struct EvidenceSources {
    pages: Option<Arc<PagesTable>>,
    corpus: Option<PagesTable>,
}

impl EvidenceSources {
    /// The sources of a run: none if neither table has URLs (then each
    /// part is written once, as its rows come).
    pub(crate) fn of(
        pages: &Option<Arc<PagesTable>>,
        corpus: Option<PagesTable>,
    ) -> Option<Arc<EvidenceSources>> {
        let urls = corpus.is_some() || pages.as_ref().is_some_and(|t| t.has_optional(0));
        let sources = EvidenceSources {
            pages: pages.clone(),
            corpus,
        };
        urls.then(|| Arc::new(sources))
    }

    /// The corpus read for URLs, if any.
    pub(crate) fn corpus(&self) -> Option<&PagesTable> {
        self.corpus.as_ref()
    }
}

/// Writes `part` from the plain part `written` (then removed): its row
/// groups as they are, each with the URLs of both pages of every row
/// (`url` and `keep_url`) as `sources` have them (the first row of a page
/// with a URL, in a table's order), each table read on `threads` threads.
pub(crate) fn attach_evidence(
    written: &Path,
    part: &Path,
    sources: &EvidenceSources,
    threads: usize,
) -> Result<()> {
    let (plain, groups) = read_groups(written)?;
    let ids = |column: usize| {
        let groups = groups.iter();
        groups.flat_map(move |group| {
            group
                .column(column)
                .as_primitive::<Int64Type>()
                .values()
                .iter()
                .copied()
        })
    };
    let index = IdIndex::new(ids(0).chain(ids(1)));
    let mut urls = UrlsOf::new(index.len());
    if let Some(table) = &sources.pages {
        urls = urls.read(&index, table, Skim::No, threads)?;
    }
    if let Some(corpus) = &sources.corpus {
        let missing = urls.missing();
        if missing.contains(&true) {
            urls = urls.read(&index, corpus, Skim::For(&missing), threads)?;
        }
    }
    write_with_urls(part, &plain, &groups, &index, &urls)?;
    std::fs::remove_file(written).with_context(|| format!("{}: cannot remove", written.display()))
}

/// Reads a plain `drop/` part whole: its schema, and a batch a row group.
fn read_groups(path: &Path) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let shown = path.display();
    let file = std::fs::File::open(path).with_context(|| format!("{shown}: cannot open"))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|builder| builder.with_batch_size(ROW_GROUP_ROWS).build())
        .with_context(|| format!("{shown}: cannot read"))?;
    let schema = RecordBatchReader::schema(&reader);
    let groups = reader.collect::<Result<Vec<_>, _>>();
    Ok((
        schema,
        groups.with_context(|| format!("{shown}: cannot decode"))?,
    ))
}

/// Writes the row groups of a plain `drop/` part to `part` with the URLs
/// of both pages of every row, as [`crate::cluster::part_writer`] writes
/// one without them.
fn write_with_urls(
    part: &Path,
    plain: &Schema,
    groups: &[RecordBatch],
    index: &IdIndex,
    urls: &UrlsOf,
) -> Result<()> {
    let mut fields: Vec<Field> = plain.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new("url", DataType::Utf8, true));
    fields.push(Field::new("keep_url", DataType::Utf8, true));
    let layout = FileLayout {
        schema: Arc::new(Schema::new(fields)),
        zstd_level: OUTPUT_ZSTD_LEVEL,
        sorting: Some(ascending(&[0])),
        key_values: None,
        group_rows: ROW_GROUP_ROWS,
        raw: false,
    };
    let mut open = OpenParquet::create(part, &layout)?;
    let mut numbers = Vec::new();
    for group in groups {
        let mut columns = group.columns().to_vec();
        for column in [0, 1] {
            index.find_all(
                group.column(column).as_primitive::<Int64Type>().values(),
                &mut numbers,
            );
            let urls = numbers.iter().map(|&n| urls.get(n as usize));
            columns.push(Arc::new(StringArray::from_iter(urls)));
        }
        open.write_group(&RecordBatch::try_new(layout.schema.clone(), columns)?)?;
    }
    open.close()
}

/// How many lookups ahead a slot is fetched.
const LOOKAHEAD: usize = 16;

/// A set of ids, each numbered, in an open-addressing table by the ids'
/// mixed bits: a lookup is one random read, fetched ahead.
struct IdIndex {
    /// `[mixed id, number]`; number `u64::MAX`: empty.
    slots: Vec<[u64; 2]>,
    shift: u32,
    len: usize,
}

const EMPTY: u64 = u64::MAX;

impl IdIndex {
    fn new(ids: impl Iterator<Item = i64> + Clone) -> IdIndex {
        let most = ids.clone().count();
        // At most 3/4 full, whatever share of the ids repeat, and never
        // full: a lookup of an absent id stops at an empty slot.
        let bits = (most * 4 / 3 + 1)
            .max(2)
            .next_power_of_two()
            .trailing_zeros();
        let mut index = IdIndex {
            slots: vec![[0, EMPTY]; 1 << bits],
            shift: 64 - bits,
            len: 0,
        };
        for id in ids {
            let m = mix(id);
            let at = index.slot_of(m);
            if index.slots[at][1] == EMPTY {
                index.slots[at] = [m, index.len as u64];
                index.len += 1;
            }
        }
        index
    }

    fn len(&self) -> usize {
        self.len
    }

    /// The slot holding the mixed id `m`, or the empty one where it goes.
    fn slot_of(&self, m: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut at = (m >> self.shift) as usize;
        while self.slots[at][1] != EMPTY && self.slots[at][0] != m {
            at = (at + 1) & mask;
        }
        at
    }

    /// The number of `id`, if it is in the set.
    fn find(&self, id: i64) -> Option<usize> {
        let number = self.slots[self.slot_of(mix(id))][1];
        (number != EMPTY).then_some(number as usize)
    }

    /// The numbers of `ids` (`u32::MAX` for an id not in the set), each
    /// slot fetched a few ids ahead.
    fn find_all(&self, ids: &[i64], out: &mut Vec<u32>) {
        out.clear();
        for (at, &id) in ids.iter().enumerate() {
            if let Some(&ahead) = ids.get(at + LOOKAHEAD) {
                prefetch(&self.slots[(mix(ahead) >> self.shift) as usize]);
            }
            out.push(self.find(id).map_or(u32::MAX, |n| n as u32));
        }
    }
}

/// The URLs of the ids of an [`IdIndex`], by number, in one buffer.
struct UrlsOf {
    text: String,
    /// Each id's URL in `text`: `(start, length)`; length `u32::MAX`: none.
    spans: Vec<(u64, u32)>,
}

/// The URLs one unit of the table gives: `(number, URL)` in its order.
#[derive(Default)]
struct UnitUrls {
    numbers: Vec<u32>,
    ends: Vec<usize>,
    text: String,
}

/// Whether a table's URLs are read in every row group, or only in those
/// whose ids include one marked (by number) as still wanted.
#[derive(Clone, Copy)]
enum Skim<'a> {
    No,
    For(&'a [bool]),
}

impl UrlsOf {
    /// No URL yet for each of `len` numbers.
    fn new(len: usize) -> UrlsOf {
        UrlsOf {
            text: String::new(),
            spans: vec![(0, u32::MAX); len],
        }
    }

    /// Reads the ids and URLs of `table` on `threads` threads, adding those
    /// of `index` that have none yet: each unit's on its own, then added in
    /// the table's order as soon as the units before it are (so the first
    /// row of a page wins whatever the threads, and at most a unit a thread
    /// waits).
    fn read(
        self,
        index: &IdIndex,
        table: &PagesTable,
        skim: Skim,
        threads: usize,
    ) -> Result<UrlsOf> {
        let merged = std::sync::Mutex::new(InOrder {
            next: 0,
            waiting: std::collections::BTreeMap::new(),
            urls: self,
        });
        let read = crate::exec::parallel::in_parallel(table.units(), threads, |unit| {
            let found = unit_urls(index, table, skim, unit)?;
            let mut guard = crate::exec::parallel::lock(&merged);
            let merged = &mut *guard;
            merged.waiting.insert(unit, found);
            while let Some(found) = merged.waiting.remove(&merged.next) {
                merged.urls.add(&found);
                merged.next += 1;
            }
            Ok(())
        });
        read.into_iter().collect::<Result<()>>()?;
        let merged = merged.into_inner().unwrap_or_else(|e| e.into_inner());
        Ok(merged.urls)
    }

    /// Takes the URLs of numbers that have none yet.
    fn add(&mut self, found: &UnitUrls) {
        let mut start = 0;
        for (&number, &end) in found.numbers.iter().zip(&found.ends) {
            let span = &mut self.spans[number as usize];
            if span.1 == u32::MAX {
                let url = &found.text[start..end];
                *span = (
                    self.text.len() as u64,
                    url.len().min(u32::MAX as usize - 1) as u32,
                );
                self.text.push_str(url);
            }
            start = end;
        }
    }

    /// Whether each number still has no URL.
    fn missing(&self) -> Vec<bool> {
        self.spans.iter().map(|span| span.1 == u32::MAX).collect()
    }

    fn get(&self, at: usize) -> Option<&str> {
        let (start, len) = *self.spans.get(at)?;
        (len != u32::MAX).then(|| &self.text[start as usize..start as usize + len as usize])
    }
}

/// [`UrlsOf::read`]'s units, added in order.
struct InOrder {
    next: usize,
    waiting: std::collections::BTreeMap<usize, UnitUrls>,
    urls: UrlsOf,
}

/// The URLs of unit `unit` of `table` whose ids `index` has.
fn unit_urls(index: &IdIndex, table: &PagesTable, skim: Skim, unit: usize) -> Result<UnitUrls> {
    let mut found = UnitUrls::default();
    let mut numbers = Vec::new();
    if let Skim::For(wanted) = skim {
        let mut any = false;
        table.read_unit_columns(unit, &[], |ids, _, _| {
            index.find_all(ids, &mut numbers);
            any |= numbers
                .iter()
                .any(|&n| wanted.get(n as usize) == Some(&true));
            Ok(())
        })?;
        if !any {
            return Ok(found);
        }
    }
    table.read_unit_columns(unit, &[URL], |ids, batch, location| {
        let Some(column) = batch.column_by_name(URL) else {
            return Ok(());
        };
        index.find_all(ids, &mut numbers);
        for (&number, url) in numbers.iter().zip(string_values(column, URL, location)?) {
            if let (Some(url), true) = (url, number != u32::MAX) {
                found.numbers.push(number);
                found.text.push_str(url);
                found.ends.push(found.text.len());
            }
        }
        Ok(())
    })?;
    Ok(found)
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

    #[test]
    fn an_index_of_any_size_keeps_an_empty_slot_so_absent_ids_are_not_found() {
        // Two ids (one drop and its keeper) once filled a table of two slots,
        // and a lookup of any other page went round it for ever.
        for most in 0..200i64 {
            let index = IdIndex::new(0..most);
            assert!(index.slots.len() > index.len(), "{most} ids");
            assert_eq!(index.find(most), None, "{most} ids");
        }
    }
}
