//! The evidence in `drop/` beyond what the sweep gives (`kept_by` comes
//! with each drop, [`crate::cluster::drop_policy`]): the URL of each
//! dropped page (`url`) and of the page kept in its place (`keep_url`),
//! from the pages table's `url` column, and for the pages it lacks (those
//! kept from the corpus) from the corpus's shards (`cluster --corpus`).
//!
//! A part is written as its rows come, long before its writer could know
//! their URLs without holding every page's. So when the pages table or
//! the corpus has URLs, each part is first written plain beside its final name. Each of a
//! process's workers hands its whole plain parts over
//! ([`EvidenceSources::hand_over`]), and the last to do so indexes the ids
//! all of them name ([`IdIndex`]), reads the tables' ids and URLs once for
//! them all, and writes each part again (its row groups as they were, with
//! the two columns beside them), each step on every thread of the process:
//! the other workers have nothing left to do. The tables are so read
//! once a process, not once a part: with many parts a process, as at crawl
//! scale, reading the corpus's ids for each part would cost the most. The
//! memory is the URLs of the process's drops, at the end of the job, when
//! the union-find's memory is gone; the rows and their order do not
//! change, so a part is the same whatever the workers and processes.
//!
//! The corpus is read after the pages table, for the ids still without a
//! URL, and only its ids in full: a row group's URLs are read only when
//! its ids include one of them, since a night's drops are kept in favour
//! of a few corpus pages among billions.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use arrow_array::builder::StringBuilder;
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{RecordBatch, RecordBatchReader, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use crate::cluster::components::mix;
use crate::cluster::keep_order::URL;
use crate::cluster::OPTIONAL_URL;
use crate::exec::parallel::{in_chunks, in_parallel, lock, prefetch};
use crate::io::parquet::columns::string_values;
use crate::io::parquet::output::{FileLayout, OpenParquet, DROP_URL, KEEP_URL, ROW_GROUP_ROWS};
use crate::io::parquet::pages::PagesTable;

/// Where `drop/`'s URLs come from: the pages table, then the corpus for
/// the pages the table lacks; and the plain parts of the process's workers
/// handed over so far.
pub(crate) struct EvidenceSources {
    pages: Option<Arc<PagesTable>>,
    corpus: Option<Arc<PagesTable>>,
    /// The process's workers, each of which hands its plain parts over once.
    workers: usize,
    handed: Mutex<Handed>,
}

/// The plain parts handed over, and by how many workers.
#[derive(Default)]
struct Handed {
    parts: Vec<PlainPart>,
    workers: usize,
}

/// A `drop/` part written plain (`written`), to be written again with its
/// URLs as `part`.
pub(crate) struct PlainPart {
    pub(crate) written: PathBuf,
    pub(crate) part: PathBuf,
}

impl EvidenceSources {
    /// The sources of a run on `workers` workers a process: none if
    /// neither table has URLs (then each part is written once, as its rows
    /// come).
    pub(crate) fn of(
        pages: &Option<Arc<PagesTable>>,
        corpus: Option<Arc<PagesTable>>,
        workers: usize,
    ) -> Option<Arc<EvidenceSources>> {
        let urls = corpus.is_some() || pages.as_ref().is_some_and(|t| t.has_optional(OPTIONAL_URL));
        let sources = EvidenceSources {
            pages: pages.clone(),
            corpus,
            workers,
            handed: Mutex::default(),
        };
        urls.then(|| Arc::new(sources))
    }

    /// Takes a worker's plain parts, none or several; each of the
    /// process's workers hands its over once. The last to do so gives every
    /// part its URLs, so that the tables are read once a process rather
    /// than once a part; the others go on meanwhile (their reports reach
    /// the commit before its report does).
    pub(crate) fn hand_over(&self, parts: Vec<PlainPart>) -> Result<()> {
        let all = {
            let mut handed = lock(&self.handed);
            handed.parts.extend(parts);
            handed.workers += 1;
            let last = handed.workers == self.workers;
            last.then(|| std::mem::take(&mut handed.parts))
        };
        match all {
            Some(parts) => self.attach(&parts),
            None => Ok(()),
        }
    }

    /// Writes each of `parts` from its plain part (then removed): its row
    /// groups as they are, each with the URLs of both pages of every row
    /// (`url` and `keep_url`) as the tables have them (the first row of a
    /// page with a URL, in a table's order), on the process's workers'
    /// threads (all idle by now but this one).
    fn attach(&self, parts: &[PlainPart]) -> Result<()> {
        let threads = self.workers;
        let index = {
            let ids = in_parallel(parts.len(), threads, |p| read_ids(&parts[p].written));
            let ids: Vec<[Vec<i64>; 2]> = ids.into_iter().collect::<Result<_>>()?;
            let slices: Vec<&[i64]> = ids.iter().flatten().map(Vec::as_slice).collect();
            IdIndex::new(&slices, threads)
        };
        tracing::debug!(ids = index.len(), "drop/'s ids indexed");
        let mut urls = UrlsOf::new(index.len());
        if let Some(table) = &self.pages {
            urls = urls.read(&index, table, Skim::No, threads)?;
        }
        if let Some(corpus) = &self.corpus {
            let missing = urls.missing();
            if missing.contains(&true) {
                urls = urls.read(&index, corpus, Skim::For(&missing), threads)?;
            }
        }
        tracing::debug!("drop/'s URLs read");
        // Parts in parallel (and a part's columns, when parts are fewer than
        // threads), each read again as it is written so that only the
        // parts being written are held.
        let each = (threads / parts.len().max(1)).max(1);
        let written = in_parallel(parts.len(), threads, |p| {
            let PlainPart { written, part } = &parts[p];
            write_with_urls(part, read_groups(written, None)?, (&index, &urls), each)?;
            std::fs::remove_file(written)
                .with_context(|| format!("{}: cannot remove", written.display()))
        });
        written.into_iter().collect()
    }
}

/// The ids of a plain `drop/` part's pages (`id`) and of their keepers
/// (`keep_id`).
fn read_ids(path: &Path) -> Result<[Vec<i64>; 2]> {
    let plain = read_groups(path, Some(&[0, 1]))?;
    let mut ids = [0, 1].map(|_| Vec::with_capacity(plain.rows));
    for group in plain.groups {
        let group = group?;
        for (column, ids) in ids.iter_mut().enumerate() {
            ids.extend_from_slice(group.column(column).as_primitive::<Int64Type>().values());
        }
    }
    Ok(ids)
}

/// A plain `drop/` part being read, a batch a row group.
struct PlainGroups {
    schema: SchemaRef,
    rows: usize,
    groups: Box<dyn Iterator<Item = Result<RecordBatch>> + Send>,
}

/// Reads a plain `drop/` part, or only its `columns`, a row group at a
/// time: only the group being written again is held.
fn read_groups(path: &Path, columns: Option<&[usize]>) -> Result<PlainGroups> {
    let shown = path.display();
    let file = std::fs::File::open(path).with_context(|| format!("{shown}: cannot open"))?;
    let mut rows = 0;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|builder| {
            rows = usize::try_from(builder.metadata().file_metadata().num_rows()).unwrap_or(0);
            let builder = builder.with_batch_size(ROW_GROUP_ROWS);
            let builder = match columns {
                Some(columns) => {
                    let mask =
                        ProjectionMask::roots(builder.parquet_schema(), columns.iter().copied());
                    builder.with_projection(mask)
                }
                None => builder,
            };
            builder.build()
        })
        .with_context(|| format!("{shown}: cannot read"))?;
    let schema = RecordBatchReader::schema(&reader);
    let shown = shown.to_string();
    let groups = reader.map(move |group| group.with_context(|| format!("{shown}: cannot decode")));
    Ok(PlainGroups {
        schema,
        rows,
        groups: Box::new(groups),
    })
}

/// Writes the row groups of a plain `drop/` part to `part` with the URLs
/// of both pages of every row, as [`crate::cluster::part_writer`] writes
/// one without them; each group's columns made and encoded on up to
/// `threads` threads.
fn write_with_urls(
    part: &Path,
    plain: PlainGroups,
    (index, urls): (&IdIndex, &UrlsOf),
    threads: usize,
) -> Result<()> {
    let mut fields: Vec<Field> = plain
        .schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new(DROP_URL, DataType::Utf8, true));
    fields.push(Field::new(KEEP_URL, DataType::Utf8, true));
    let layout = FileLayout::cluster_part(Arc::new(Schema::new(fields)), false);
    let mut file = OpenParquet::create(part, &layout)?.columnwise()?;
    let plain_columns = plain.schema.fields().len();
    for group in plain.groups {
        let group = group?;
        file.write_group(threads, |c| match c.checked_sub(plain_columns) {
            None => Ok(group.column(c).clone()),
            // `url` of `id` (column 0), `keep_url` of `keep_id` (column 1).
            Some(of) => {
                let ids = group.column(of).as_primitive::<Int64Type>().values();
                let mut numbers = Vec::with_capacity(ids.len());
                index.find_all(ids, &mut numbers);
                Ok(Arc::new(urls.column(&numbers)))
            }
        })?;
    }
    file.close()
}

/// How many lookups ahead a slot is fetched.
const LOOKAHEAD: usize = 16;

/// The fewest slots a region of an [`IdIndex`] has when it has several.
const MIN_REGION_BITS: u32 = 16;

/// A set of ids, each numbered, in an open-addressing table by the ids'
/// mixed bits: a lookup is one random read, fetched ahead.
///
/// The table is cut into regions by the top bits of the mixed ids, one for
/// each thread that builds it, and a probe wraps within its region: the
/// ids are first sorted into their regions (a pass in order), then each
/// region is filled by a thread of its own, numbering its ids from 0, and
/// a number is its region's offset plus that. Built on one thread, a
/// process's drops would leave every other core idle at the end of the job.
struct IdIndex {
    /// `[mixed id, number in its region + 1]`; 0: empty.
    slots: Vec<[u64; 2]>,
    shift: u32,
    /// Slots per region, as a power of two.
    region_bits: u32,
    /// Each region's first number.
    offsets: Vec<usize>,
    len: usize,
}

impl IdIndex {
    /// The index of the ids in `slices`, built on up to `threads` threads.
    fn new(slices: &[&[i64]], threads: usize) -> IdIndex {
        let most: usize = slices.iter().map(|ids| ids.len()).sum();
        // At most 3/4 full, whatever share of the ids repeat, and never
        // full: a lookup of an absent id stops at an empty slot.
        let bits = (most * 4 / 3 + 1)
            .max(2)
            .next_power_of_two()
            .trailing_zeros();
        let regions = threads.max(1).next_power_of_two().trailing_zeros();
        let region_bits = bits.saturating_sub(regions).max(MIN_REGION_BITS).min(bits);
        let by_region = in_parallel(slices.len(), threads, |s| {
            in_regions(slices[s], bits - region_bits)
        });
        // Ids crowded into one region (they would fill it) are indexed as
        // one region, on one thread.
        let room = (1usize << region_bits) / 8 * 7;
        let crowded = (0..1usize << (bits - region_bits))
            .any(|r| by_region.iter().map(|of| of[r].len()).sum::<usize>() > room);
        match crowded {
            false => IdIndex::fill(bits, region_bits, &by_region),
            true => {
                let whole: Vec<Vec<Vec<u64>>> =
                    by_region.into_iter().map(|of| vec![of.concat()]).collect();
                IdIndex::fill(bits, bits, &whole)
            }
        }
    }

    /// A table of `2^bits` slots in regions of `2^region_bits`, each filled
    /// on a thread of its own with its mixed ids from each of `by_region`.
    fn fill(bits: u32, region_bits: u32, by_region: &[Vec<Vec<u64>>]) -> IdIndex {
        let mut index = IdIndex {
            slots: vec![[0, 0]; 1 << bits],
            shift: 64 - bits,
            region_bits,
            offsets: Vec::new(),
            len: 0,
        };
        let (shift, mask) = (index.shift, (1usize << region_bits) - 1);
        let counts = in_chunks(&mut index.slots, 1 << region_bits, |start, region| {
            let r = start >> region_bits;
            let mut ahead = by_region.iter().flat_map(|of| &of[r]).skip(LOOKAHEAD);
            let mut numbered = 0;
            for &m in by_region.iter().flat_map(|of| &of[r]) {
                if let Some(&next) = ahead.next() {
                    prefetch(&region[(next >> shift) as usize & mask]);
                }
                let at = slot_in_region(region, m, shift);
                if region[at][1] == 0 {
                    numbered += 1;
                    region[at] = [m, numbered];
                }
            }
            numbered as usize
        });
        index.offsets = counts
            .iter()
            .scan(0, |first, &count| {
                let this = *first;
                *first += count;
                Some(this)
            })
            .collect();
        index.len = counts.iter().sum();
        index
    }

    fn len(&self) -> usize {
        self.len
    }

    /// The slot holding the mixed id `m`, or the empty one where it goes,
    /// in the region of its home.
    fn slot_of(&self, m: u64) -> usize {
        let size = 1usize << self.region_bits;
        let first = (m >> self.shift) as usize & !(size - 1);
        first + slot_in_region(&self.slots[first..first + size], m, self.shift)
    }

    /// The number of `id`, if it is in the set.
    fn find(&self, id: i64) -> Option<usize> {
        let at = self.slot_of(mix(id));
        let number = self.slots[at][1] as usize;
        (number != 0).then(|| self.offsets[at >> self.region_bits] + number - 1)
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

/// The slot of `region` (a power of two of an [`IdIndex`]'s slots) holding
/// the mixed id `m`, or the empty one where it goes: a probe starts at its
/// home (its top bits above `shift`, within the region) and wraps within the
/// region.
fn slot_in_region(region: &[[u64; 2]], m: u64, shift: u32) -> usize {
    let mask = region.len() - 1;
    let mut at = (m >> shift) as usize & mask;
    while region[at][1] != 0 && region[at][0] != m {
        at = (at + 1) & mask;
    }
    at
}

/// The mixed bits of `ids`, by region: their top `region_bits` bits.
fn in_regions(ids: &[i64], region_bits: u32) -> Vec<Vec<u64>> {
    let each = (ids.len() >> region_bits) + (ids.len() >> (region_bits + 4)) + 16;
    let mut regions: Vec<Vec<u64>> = (0..1 << region_bits)
        .map(|_| Vec::with_capacity(each))
        .collect();
    for &id in ids {
        let m = mix(id);
        let r = m.checked_shr(64 - region_bits).unwrap_or(0) as usize;
        regions[r].push(m);
    }
    regions
}

/// The URLs of the ids of an [`IdIndex`], by number, in the texts of the
/// batches they were read from (each made at its size, never copied again).
struct UrlsOf {
    texts: Vec<String>,
    spans: Vec<Span>,
}

/// Where a number's URL is: in `texts[text]`, from `start`, `len` bytes
/// long ([`Span::NONE`]: no URL).
#[derive(Clone, Copy)]
struct Span {
    text: u32,
    len: u32,
    start: u64,
}

impl Span {
    const NONE: Span = Span {
        text: 0,
        len: u32::MAX,
        start: 0,
    };

    fn is_url(&self) -> bool {
        self.len != u32::MAX
    }
}

/// The URLs one batch of the table gives: `(number, URL)` in its order,
/// the URLs in one text made at its size.
struct FoundUrls {
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
            texts: Vec::new(),
            spans: vec![Span::NONE; len],
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
        let read = in_parallel(table.units(), threads, |unit| {
            let found = unit_urls(index, table, skim, unit)?;
            let mut guard = lock(&merged);
            let merged = &mut *guard;
            merged.waiting.insert(unit, found);
            while let Some(found) = merged.waiting.remove(&merged.next) {
                found.into_iter().for_each(|batch| merged.urls.add(batch));
                merged.next += 1;
            }
            Ok(())
        });
        read.into_iter().collect::<Result<()>>()?;
        let merged = merged.into_inner().unwrap_or_else(|e| e.into_inner());
        Ok(merged.urls)
    }

    /// Takes the URLs of numbers that have none yet, keeping the batch's
    /// text if any does.
    fn add(&mut self, found: FoundUrls) {
        let text = self.texts.len() as u32;
        let (mut start, mut taken) = (0, false);
        for (&number, &end) in found.numbers.iter().zip(&found.ends) {
            let span = &mut self.spans[number as usize];
            if !span.is_url() {
                let len = (end - start).min(u32::MAX as usize - 1) as u32;
                *span = Span {
                    text,
                    len,
                    start: start as u64,
                };
                taken = true;
            }
            start = end;
        }
        if taken {
            self.texts.push(found.text);
        }
    }

    /// Whether each number still has no URL.
    fn missing(&self) -> Vec<bool> {
        self.spans.iter().map(|span| !span.is_url()).collect()
    }

    fn text_of(&self, span: Span) -> Option<&str> {
        let start = span.start as usize;
        span.is_url()
            .then(|| &self.texts[span.text as usize][start..][..span.len as usize])
    }

    /// The URLs of `numbers` (`u32::MAX`, or a number without one: null),
    /// as a column made at its size. Both the spans and the URLs are read
    /// at random, so each is fetched a few numbers ahead: the spans in one
    /// pass, then the URLs as they are copied.
    fn column(&self, numbers: &[u32]) -> StringArray {
        let spans: Vec<Span> = (0..numbers.len())
            .map(|at| {
                let ahead = numbers.get(at + LOOKAHEAD);
                if let Some(span) = ahead.and_then(|&n| self.spans.get(n as usize)) {
                    prefetch(span);
                }
                self.spans
                    .get(numbers[at] as usize)
                    .copied()
                    .unwrap_or(Span::NONE)
            })
            .collect();
        let with_url = |span: &&Span| span.is_url();
        let bytes = spans
            .iter()
            .filter(with_url)
            .map(|span| span.len as usize)
            .sum();
        let mut column = StringBuilder::with_capacity(spans.len(), bytes);
        for (at, &span) in spans.iter().enumerate() {
            if let Some(ahead) = spans.get(at + LOOKAHEAD).filter(with_url) {
                let text = self.texts[ahead.text as usize].as_bytes();
                if let Some(first) = text.get(ahead.start as usize) {
                    prefetch(first);
                }
            }
            column.append_option(self.text_of(span));
        }
        column.finish()
    }
}

/// [`UrlsOf::read`]'s units, added in order.
struct InOrder {
    next: usize,
    waiting: std::collections::BTreeMap<usize, Vec<FoundUrls>>,
    urls: UrlsOf,
}

/// The URLs of unit `unit` of `table` whose ids `index` has (and, when
/// skimming, that are still wanted), batch by batch.
fn unit_urls(
    index: &IdIndex,
    table: &PagesTable,
    skim: Skim,
    unit: usize,
) -> Result<Vec<FoundUrls>> {
    let mut batches = Vec::new();
    let mut numbers = Vec::new();
    let wanted = |number: u32| match skim {
        Skim::No => number != u32::MAX,
        Skim::For(wanted) => wanted.get(number as usize) == Some(&true),
    };
    if let Skim::For(_) = skim {
        let mut any = false;
        table.read_unit_columns(unit, &[], |ids, _, _| {
            index.find_all(ids, &mut numbers);
            any |= numbers.iter().any(|&n| wanted(n));
            Ok(())
        })?;
        if !any {
            return Ok(batches);
        }
    }
    table.read_unit_columns(unit, &[URL], |ids, batch, location| {
        let Some(column) = batch.column_by_name(URL) else {
            return Ok(());
        };
        index.find_all(ids, &mut numbers);
        let urls = numbers.iter().zip(string_values(column, URL, location)?);
        let urls: Vec<(u32, &str)> = urls
            .filter_map(|(&number, url)| Some((number, url?)).filter(|_| wanted(number)))
            .collect();
        let bytes = urls.iter().map(|(_, url)| url.len()).sum();
        let mut found = FoundUrls {
            numbers: Vec::with_capacity(urls.len()),
            ends: Vec::with_capacity(urls.len()),
            text: String::with_capacity(bytes),
        };
        for (number, url) in urls {
            found.numbers.push(number);
            found.text.push_str(url);
            found.ends.push(found.text.len());
        }
        batches.push(found);
        Ok(())
    })?;
    Ok(batches)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks that `index` numbers each of `ids` (and nothing else) once,
    /// densely from 0.
    fn assert_numbers_each_id_once(index: &IdIndex, ids: &[i64], absent: &[i64]) {
        let distinct: std::collections::HashSet<i64> = ids.iter().copied().collect();
        assert_eq!(index.len(), distinct.len());
        let mut numbers: Vec<usize> = distinct.iter().map(|&id| index.find(id).unwrap()).collect();
        numbers.sort_unstable();
        assert!(
            numbers.iter().copied().eq(0..distinct.len()),
            "each id has a number of its own, from 0 on"
        );
        for &id in absent {
            assert_eq!(index.find(id), None, "{id}");
        }
    }

    #[test]
    fn an_index_finds_each_of_its_ids_and_nothing_else() {
        // Hashed ids, small integers and extremes: mixed, all spread evenly.
        let ids: Vec<i64> = (1..=5_000i64)
            .map(|i| mix(i) as i64)
            .chain(0..3_000)
            .chain([i64::MIN, i64::MAX, -1])
            .collect();
        let absent = [3_000, 10_000, -2, i64::MIN + 1];
        for threads in [1, 2, 3] {
            let index = IdIndex::new(&[&ids[..], &ids[..]], threads);
            assert_numbers_each_id_once(&index, &ids, &absent);
            // Ids given over several slices, a lookahead's worth and less each.
            let cut: Vec<&[i64]> = ids.chunks(LOOKAHEAD + 3).collect();
            assert_numbers_each_id_once(&IdIndex::new(&cut, threads), &ids, &absent);
        }
        assert_eq!(IdIndex::new(&[], 2).find(5), None);
    }

    #[test]
    fn an_index_in_regions_numbers_every_id_as_one_region_does() {
        // Large enough for regions of their own on 2 and 4 threads; the
        // ids repeat, across slices and within one. The last few have the
        // table's last slot as their home: their probes wrap to the start
        // of the last region.
        let last_home = (0..8).map(|k| unmix(u64::MAX - k));
        let ids: Vec<i64> = (0..300_000i64)
            .map(|i| mix(i % 250_000) as i64 ^ (i % 7))
            .chain(last_home)
            .collect();
        let (a, b) = ids.split_at(120_000);
        let absent: Vec<i64> = (0..1_000).map(|i| mix(i + 10_000_000) as i64).collect();
        for threads in [1, 2, 4] {
            let index = IdIndex::new(&[a, b, a], threads);
            let regions = index.slots.len() >> index.region_bits;
            assert_eq!(regions, threads, "{threads} threads");
            assert_numbers_each_id_once(&index, &ids, &absent);
        }
    }

    /// The id whose [`mix`] is `m`: SplitMix64's finalizer undone.
    fn unmix(m: u64) -> i64 {
        let unshift = |mut z: u64, by: u32| {
            let mut shifted = z >> by;
            while shifted != 0 {
                z ^= shifted;
                shifted >>= by;
            }
            z
        };
        let inverse = |a: u64| {
            (0..6).fold(a, |x, _| {
                x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)))
            })
        };
        let mut z = unshift(m, 31);
        z = unshift(z.wrapping_mul(inverse(0x94d0_49bb_1331_11eb)), 27);
        z = unshift(z.wrapping_mul(inverse(0xbf58_476d_1ce4_e5b9)), 30);
        z as i64
    }

    #[test]
    fn ids_crowding_one_region_are_indexed_as_one_region() {
        assert_eq!(mix(unmix(0x1234_5678_9abc_def0)), 0x1234_5678_9abc_def0);
        // 100,000 ids make a table of 2^18 slots, in 4 regions of 2^16 on
        // 4 threads; 60,000 of them mix into the first region, which with
        // a quarter of the others is more than it holds.
        let crowded = (0..60_000u64).map(|i| unmix(i * ((1 << 62) / 60_000) + 1));
        let spread = (0..40_000i64).map(|i| mix(i) as i64);
        let ids: Vec<i64> = crowded.chain(spread).collect();
        assert!(ids.iter().take(60_000).all(|&id| mix(id) >> 62 == 0));
        let index = IdIndex::new(&[&ids[..]], 4);
        assert_eq!(index.slots.len(), 1 << 18);
        assert_eq!(index.region_bits, 18, "one region");
        assert_numbers_each_id_once(&index, &ids, &[unmix(3 << 62), unmix(2)]);
    }

    #[test]
    fn an_index_of_any_size_keeps_an_empty_slot_so_absent_ids_are_not_found() {
        // Two ids (one drop and its keeper) once filled a table of two slots,
        // and a lookup of any other page went round it for ever.
        for most in 0..200i64 {
            let ids: Vec<i64> = (0..most).collect();
            let index = IdIndex::new(&[&ids[..]], 2);
            assert!(index.slots.len() > index.len(), "{most} ids");
            assert_eq!(index.find(most), None, "{most} ids");
        }
    }
}
