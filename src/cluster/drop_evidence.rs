//! The evidence in `drop/`: the key each kept page won by (`kept_by`), and
//! the URL of each dropped page (`url`) and of the page kept in its place
//! (`keep_url`), from the pages table's `url` column, and for the pages it
//! lacks (those kept from the corpus) from the corpus's shards
//! (`cluster --corpus`).
//!
//! A part is written as its rows come, long before its writer could know
//! their URLs or keys without holding every page's. So when the pages table
//! has URLs or keys, the part is first written plain beside its final name,
//! and once it is whole its writer reads it back, gathers the ids it names,
//! reads the pages table's ids, keys and URLs once, and writes the part with
//! the evidence. Its memory is the URLs and keys of the part's pages, at
//! the end of the job, when the union-find's memory is gone; the rows and
//! their order do not change, so the part is the same whatever the workers
//! and processes.
//!
//! `kept_by` is `corpus` when the kept page ranks first and the dropped one
//! does not: the sweep knows it (and only the processes together know
//! which pages rank first), so the plain part carries it. Otherwise it is
//! the first key under which the two pages' words differ, computed from the
//! same rows as the union-find's (a page with several rows has its least
//! words, one without any all ones), or `id` when none differ.
//!
//! The corpus is read after the pages table, for the ids still without a
//! URL, and only its ids in full: a row group's URLs are read only when
//! its ids include one of them, since a night's drops are kept in favour
//! of a few corpus pages among billions.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int16Type, Int64Type, Int8Type};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::cluster::components::mix;
use crate::cluster::drop_policy::{closeness, Grounds};
use crate::cluster::keep_order::{KeepOrder, NO_VALUE, URL};
use crate::cluster::part_writer::{write_drops_with_evidence, DropColumns};
use crate::exec::parallel::prefetch;
use crate::io::parquet::pages::{string_values, PagesTable};

/// `kept_by` of a page kept for being in the corpus.
pub(crate) const BY_CORPUS: &str = "corpus";
/// `kept_by` of a page kept for its smaller id, every key being tied.
pub(crate) const BY_ID: &str = "id";

/// Where `drop/`'s evidence comes from: the pages table (keys and URLs),
/// then the corpus for the URLs of pages the table lacks.
pub(crate) struct EvidenceSources {
    pages: Option<Arc<PagesTable>>,
    corpus: Option<PagesTable>,
    keep: KeepOrder,
}

impl EvidenceSources {
    /// The sources of a run that orders pages by `keep`: none if neither
    /// table has URLs and the keys read no pages table (then `kept_by` is
    /// known when the part is first written).
    pub(crate) fn of(
        pages: &Option<Arc<PagesTable>>,
        corpus: Option<PagesTable>,
        keep: &KeepOrder,
    ) -> Option<Arc<EvidenceSources>> {
        let sources = EvidenceSources {
            pages: pages.clone(),
            corpus,
            keep: keep.clone(),
        };
        (sources.urls() || keep.words() > 0).then(|| Arc::new(sources))
    }

    /// Whether `drop/` has `url` and `keep_url`.
    pub(crate) fn urls(&self) -> bool {
        self.corpus.is_some() || self.pages.as_ref().is_some_and(|t| t.has_optional(0))
    }

    /// The corpus read for URLs, if any.
    pub(crate) fn corpus(&self) -> Option<&PagesTable> {
        self.corpus.as_ref()
    }
}

/// Writes `part` from the plain part `written` (then removed) with the
/// evidence of every row, as `sources` have it (the first row of a page
/// with a URL, in a table's order), each table read on `threads` threads.
pub(crate) fn attach_evidence(
    written: &Path,
    part: &Path,
    sources: &EvidenceSources,
    threads: usize,
) -> Result<()> {
    let rows = read_drops(written)?;
    let index = IdIndex::new(rows.ids.iter().chain(&rows.keep_ids).copied());
    let keep = &sources.keep;
    let mut facts = PageFacts::new(index.len(), keep.words());
    if let Some(table) = &sources.pages {
        facts = facts.read(&index, table, Skim::No, Some(keep), threads)?;
    }
    if let Some(corpus) = &sources.corpus {
        let missing = facts.missing();
        if missing.contains(&true) {
            facts = facts.read(&index, corpus, Skim::For(&missing), None, threads)?;
        }
    }
    let (mut at_id, mut at_keep) = (Vec::new(), Vec::new());
    index.find_all(&rows.ids, &mut at_id);
    index.find_all(&rows.keep_ids, &mut at_keep);
    let names = keep.names();
    let kept_by = |row: usize| -> &str {
        if rows.grounds[row].by_corpus {
            return BY_CORPUS;
        }
        let (kept, dropped) = (facts.words(at_keep[row]), facts.words(at_id[row]));
        match keep.first_difference(kept, dropped) {
            Some(key) => &names[key],
            None => BY_ID,
        }
    };
    let url_of = |row: usize, keep: bool| {
        let at = if keep { at_keep[row] } else { at_id[row] };
        facts.url(at as usize)
    };
    let url_of = sources.urls().then_some(&url_of as _);
    write_drops_with_evidence(part, &rows, kept_by, url_of)?;
    std::fs::remove_file(written).with_context(|| format!("{}: cannot remove", written.display()))
}

/// Reads a plain `drop/` part whole.
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
        let distances = column(2).as_primitive::<Int8Type>().iter();
        let wide = column(3).as_primitive::<Int16Type>().iter();
        let kept_by = column(4).as_string::<i32>().iter();
        let grounds = distances.zip(wide).zip(kept_by).map(|((d, w), by)| {
            let wide = w.map(|w| w as u16);
            Grounds {
                near: d.map(|d| closeness(d as u8, wide)),
                by_corpus: by == Some(BY_CORPUS),
            }
        });
        rows.grounds.extend(grounds);
    }
    Ok(rows)
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

/// The URLs and keys of the ids of an [`IdIndex`], by number: the URLs in
/// one buffer, the keys' words `width` a number.
struct PageFacts {
    text: String,
    /// Each id's URL in `text`: `(start, length)`; length `u32::MAX`: none.
    spans: Vec<(u64, u32)>,
    width: usize,
    /// Each id's least words ([`NO_VALUE`]s: no row).
    words: Vec<u32>,
}

/// What one unit of a table gives: `(number, URL)` in its order, and the
/// keys' words of each row of a wanted id, if read.
#[derive(Default)]
struct UnitFacts {
    numbers: Vec<u32>,
    ends: Vec<usize>,
    text: String,
    /// `(number, words)` of each row, `width` words a row.
    keyed: Vec<u32>,
    words: Vec<u32>,
}

/// Whether a table's URLs are read in every row group, or only in those
/// whose ids include one marked (by number) as still wanted.
#[derive(Clone, Copy)]
enum Skim<'a> {
    No,
    For(&'a [bool]),
}

impl PageFacts {
    /// No URL and no row yet for each of `len` numbers, of `width` words.
    fn new(len: usize, width: usize) -> PageFacts {
        PageFacts {
            text: String::new(),
            spans: vec![(0, u32::MAX); len],
            width,
            words: vec![NO_VALUE; len * width],
        }
    }

    /// Reads the ids and URLs of `table` (and with `keys` each row's
    /// words) on `threads` threads, adding the URLs of those of `index`
    /// that have none yet and keeping each one's least words: each unit's
    /// on its own, then added in the table's order as soon as the units
    /// before it are (so the first row of a page wins whatever the
    /// threads, and at most a unit a thread waits).
    fn read(
        self,
        index: &IdIndex,
        table: &PagesTable,
        skim: Skim,
        keys: Option<&KeepOrder>,
        threads: usize,
    ) -> Result<PageFacts> {
        let keys = keys.filter(|keys| keys.words() > 0);
        let merged = std::sync::Mutex::new(InOrder {
            next: 0,
            waiting: std::collections::BTreeMap::new(),
            facts: self,
        });
        let read = crate::exec::parallel::in_parallel(table.units(), threads, |unit| {
            let found = unit_facts(index, table, skim, keys, unit)?;
            let mut guard = crate::exec::parallel::lock(&merged);
            let merged = &mut *guard;
            merged.waiting.insert(unit, found);
            while let Some(found) = merged.waiting.remove(&merged.next) {
                merged.facts.add(&found);
                merged.next += 1;
            }
            Ok(())
        });
        read.into_iter().collect::<Result<()>>()?;
        let merged = merged.into_inner().unwrap_or_else(|e| e.into_inner());
        Ok(merged.facts)
    }

    /// Takes the URLs of numbers that have none yet, and each row's words
    /// where they are less than its number's so far.
    fn add(&mut self, found: &UnitFacts) {
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
        if self.width == 0 {
            return;
        }
        for (&number, words) in found.keyed.iter().zip(found.words.chunks(self.width)) {
            let at = number as usize * self.width;
            let least = &mut self.words[at..at + self.width];
            if *words < *least {
                least.copy_from_slice(words);
            }
        }
    }

    /// Whether each number still has no URL.
    fn missing(&self) -> Vec<bool> {
        self.spans.iter().map(|span| span.1 == u32::MAX).collect()
    }

    fn url(&self, at: usize) -> Option<&str> {
        let (start, len) = *self.spans.get(at)?;
        (len != u32::MAX).then(|| &self.text[start as usize..start as usize + len as usize])
    }

    /// A number's least words.
    fn words(&self, at: u32) -> &[u32] {
        let at = at as usize * self.width;
        &self.words[at..at + self.width]
    }
}

/// [`PageFacts::read`]'s units, added in order.
struct InOrder {
    next: usize,
    waiting: std::collections::BTreeMap<usize, UnitFacts>,
    facts: PageFacts,
}

/// The words of the rows of `batch` whose `numbers` are wanted, added to
/// `found`: only those rows are encoded (a part's pages are a fraction of
/// the table's, and encoding a URL key parses the URL).
fn encode_wanted(
    keys: &KeepOrder,
    batch: &arrow_array::RecordBatch,
    location: &str,
    numbers: &[u32],
    found: &mut UnitFacts,
) -> Result<()> {
    let wanted: arrow_array::BooleanArray = numbers.iter().map(|&n| Some(n != u32::MAX)).collect();
    if wanted.true_count() == 0 {
        return Ok(());
    }
    let rows = arrow_select::filter::filter_record_batch(batch, &wanted)
        .with_context(|| format!("{location}: cannot select rows"))?;
    keys.encode(&rows, location, &mut found.words)?;
    found
        .keyed
        .extend(numbers.iter().copied().filter(|&n| n != u32::MAX));
    Ok(())
}

/// The URLs of unit `unit` of `table` whose ids `index` has, and with
/// `keys` their rows' words.
fn unit_facts(
    index: &IdIndex,
    table: &PagesTable,
    skim: Skim,
    keys: Option<&KeepOrder>,
    unit: usize,
) -> Result<UnitFacts> {
    let mut found = UnitFacts::default();
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
    let mut each = |ids: &[i64], batch: &arrow_array::RecordBatch, location: &str| {
        index.find_all(ids, &mut numbers);
        if let Some(keys) = keys {
            encode_wanted(keys, batch, location, &numbers, &mut found)?;
        }
        let Some(column) = batch.column_by_name(URL) else {
            return Ok(());
        };
        for (&number, url) in numbers.iter().zip(string_values(column, URL, location)?) {
            if let (Some(url), true) = (url, number != u32::MAX) {
                found.numbers.push(number);
                found.text.push_str(url);
                found.ends.push(found.text.len());
            }
        }
        Ok(())
    };
    match keys {
        // The key columns and `url`, as the union-find read them.
        Some(_) => table.read_unit(unit, &mut each)?,
        None => table.read_unit_columns(unit, &[URL], &mut each)?,
    }
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
