//! Reading the pairs into the process's union-find: which row groups a
//! process and its workers read, how the union-find is sized from the
//! first rows, and the pages table's keys written into it.
//!
//! **Reading.** The pairs' row groups are spread over the processes
//! balanced by rows; a process's workers each take the next, largest first,
//! as they finish the last, and stream it into the union-find 64Ki pairs at
//! a time. A local row group over a quarter of a worker's share of the
//! pairs (and over 64Ki rows) is cut into pieces of about that size: pyarrow
//! writes a 1M-pair file as one row group and Spark cuts at 128 MB, and such
//! a file read whole would leave every worker but one idle. A process
//! decodes a row group's pieces with one reader, from which its workers take
//! batches in turn. Row groups in an object store are not cut: each piece
//! would fetch all of it.
//!
//! The union-find's id table is sized before any pair is added: each
//! worker estimates the process's distinct pages from up to 1Mi pairs of
//! its first row group ([`crate::cluster::page_estimate`]). Under
//! `--drop-policy direct` the pairs are also logged as page numbers and
//! nearness, 10 bytes a pair, for the drop sweep; under `component`
//! nothing per pair is kept.

use std::cell::RefCell;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

use anyhow::{bail, Result};

use crate::cluster::components::{
    GraphWriter, KeyWriter, Page, PageEstimate, PairLog, SharedGraph, MAX_PROCESS_PAGES,
};
use crate::cluster::drop_policy::closeness;
use crate::cluster::keep_order::{list_named, KeepOrder, PageSet, RowKeys, URL};
use crate::cluster::page_estimate::expected_pages;
use crate::cluster::summary::ClusterTotals;
use crate::exec::parallel::{share_of_process, Tickets};
use crate::exec::runtime::RuntimeOptions;
use crate::io::commit::WorkerOutcome;
use crate::io::parquet::input::{PairRow, PairUnit, SharedRowGroup};
use crate::io::parquet::pages::PagesTable;

/// The pair units one process reads: placed among processes balanced by rows,
/// and taken by the process's workers one at a time, largest first, as each
/// finishes the last. Handed out statically (round robin), one worker may
/// read more rows than another, and whichever worker the VM slows holds the
/// others up at the split. A unit's rows come from its row group's
/// [`SharedRowGroup`]: pieces of one row group are decoded by one reader.
pub(crate) struct ProcessUnits {
    /// Largest first.
    units: Vec<PairUnit>,
    /// Each unit's row group in `groups`.
    group_of: Vec<usize>,
    groups: Vec<SharedRowGroup>,
    tickets: Tickets,
}

impl ProcessUnits {
    pub(crate) fn of(units: Vec<PairUnit>, runtime: &RuntimeOptions) -> ProcessUnits {
        let rows: Vec<u64> = units.iter().map(|unit| unit.rows as u64).collect();
        let units: Vec<PairUnit> = share_of_process(&rows, runtime.processes, runtime.process)
            .into_iter()
            .map(|u| units[u].clone())
            .collect();
        let (groups, group_of) = SharedRowGroup::of_pieces(&units);
        ProcessUnits {
            tickets: Tickets::new(units.len()),
            units,
            group_of,
            groups,
        }
    }

    /// The next unit, for whichever worker asks: its rows are then taken
    /// a batch or a few at a time ([`UnitRows`]).
    fn next_unit(&self) -> Option<UnitRows<'_>> {
        let u = self.tickets.take()?;
        Some(UnitRows {
            group: &self.groups[self.group_of[u]],
            left: self.units[u].rows,
        })
    }

    pub(crate) fn pairs(&self) -> usize {
        self.units.iter().map(|unit| unit.rows).sum()
    }
}

/// A unit's rows not yet taken. A worker streams them into the union-find a
/// batch at a time: held whole, a unit's rows and the ids and pages made of
/// them would each be written and read again out of the cache. Only the first
/// unit's sample is held whole, to size the union-find.
struct UnitRows<'a> {
    group: &'a SharedRowGroup,
    left: usize,
}

impl UnitRows<'_> {
    /// Replaces `rows` with whole batches of the unit's rows, at least
    /// `rows_wanted` of them unless the unit runs out first; false once
    /// none are left (other workers may have taken the last of a shared
    /// row group's).
    fn take(&mut self, rows_wanted: usize, rows: &mut Vec<PairRow>) -> Result<bool> {
        rows.clear();
        if self.left > 0 {
            self.group.take(rows_wanted.min(self.left), rows)?;
            self.left = self.left.saturating_sub(rows.len());
        }
        Ok(!rows.is_empty())
    }
}

/// Which table's rows [`write_keys`] reads.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyRows {
    /// `--pages`: the keys of its rows.
    Pages,
    /// `--corpus`: its rows' pages are corpus pages, and their keys are
    /// read where it has the columns.
    Corpus,
}

/// Reads the pages table's row groups (as many as this worker gets to)
/// and writes the keys of their rows that are pages of the graph, only
/// the keys' columns read; under [`KeyRows::Corpus`], also marks those
/// pages as the corpus's, held since `held_since` of their unit (empty
/// unless corpus pages rank by it: [`KeepOrder::held_since`]). With
/// `lists_pages`, the pages of every row are listed for the canonical
/// links that name them ([`KeepOrder::list_pages`]).
pub(crate) fn write_keys(
    table: &PagesTable,
    keep: &KeepOrder,
    units: &Tickets,
    rows: KeyRows,
    held_since: &[u64],
    lists_pages: bool,
    writer: &mut KeyWriter<'_>,
) -> Result<()> {
    let in_corpus = rows == KeyRows::Corpus;
    let columns = keep.columns();
    let optional = keep.optional_columns();
    let read: Vec<&str> = columns.iter().map(String::as_str).chain(optional).collect();
    let mut keys = RowKeys::default();
    while let Some(unit) = units.take() {
        table.read_unit_columns(unit, &read, |ids, batch, location| {
            if lists_pages {
                keep.list_pages(batch, location, &mut keys)?;
                writer.list(&mut keys.listed);
            }
            if writer.find(ids) == 0 {
                return Ok(());
            }
            if in_corpus {
                writer.mark_in_corpus();
            }
            if keep.words() > 0 {
                keys.clear();
                let wanted = |row| writer.is_page(row);
                let since = held_since.get(unit).copied();
                keep.encode(batch, location, wanted, since, &mut keys)?;
                writer.write(&keys);
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// Reads the URLs of the corpus's row groups (as many as this worker gets
/// to) and puts into `found` the hashes of the pages among `unlisted`
/// that its rows are ([`list_named`]): the corpus holds too
/// many rows to list them all, as the pages table's are.
pub(crate) fn list_named_rows(
    table: &PagesTable,
    units: &Tickets,
    named: &PageSet,
    found: &mut Vec<u64>,
) -> Result<()> {
    let mut scratch = Vec::new();
    while let Some(unit) = units.take() {
        table.read_unit_columns(unit, &[URL], |_, batch, location| {
            list_named(batch, location, named, &mut scratch, found)
        })?;
    }
    Ok(())
}

/// Rows of a worker's first unit that size the union-find: enough for the
/// count of distinct ids to see pages repeat as the whole graph does.
const SAMPLE_ROWS: usize = 1 << 20;

/// Reads row groups of its process (`units`, as many as this worker gets
/// to) into the process's union-find (`worker` its index in the process),
/// and under the direct policy their pairs into `log` as page numbers. The
/// union-find is sized from every worker's first rows before any pair is
/// added. Pairs read are counted in `read` as they come (the progress bar).
pub(crate) fn add_pairs(
    graph: &SharedGraph,
    worker: usize,
    units: &ProcessUnits,
    log: &mut Option<PairLog>,
    state: &RefCell<WorkerOutcome<ClusterTotals>>,
    read: &AtomicU64,
) -> Result<()> {
    let mut rows = Vec::new();
    let mut unit = units.next_unit();
    let sampled = match unit.as_mut() {
        Some(first) => first.take(SAMPLE_ROWS, &mut rows),
        None => Ok(false),
    };
    let (estimate, range) = match sampled {
        Ok(true) => {
            let ids = rows.iter().map(|r| (r.query, r.corpus));
            (expected_pages(ids, units.pairs()), id_range(&rows))
        }
        _ => (PageEstimate::exact(0), None),
    };
    // Every worker prepares, even one with nothing to read or a bad file:
    // the others wait for it.
    graph.prepare(worker, estimate, range);
    sampled?;
    let mut adder = PairAdder {
        graph,
        writer: graph.writer(),
        ends: Vec::new(),
        share: units.pairs().div_ceil(graph.workers()),
        same_page_pairs: 0,
    };
    let mut add = |rows: &[PairRow], group: &SharedRowGroup| -> Result<()> {
        state.borrow_mut().body.pairs += rows.len() as u64;
        read.fetch_add(rows.len() as u64, Relaxed);
        rows.chunks(BATCH_PAIRS)
            .try_for_each(|batch| adder.add(batch, group, log.as_mut()))
    };
    // `rows` holds the first unit's sample; later units start empty.
    while let Some(mut reading) = unit {
        let mut read = 0;
        loop {
            read += rows.len();
            add(&rows, reading.group)?;
            if !reading.take(1, &mut rows)? {
                break;
            }
        }
        tracing::debug!(worker, rows = read, "pair unit read");
        rows.clear();
        unit = units.next_unit();
    }
    state.borrow_mut().body.same_page_pairs += adder.same_page_pairs;
    Ok(())
}

/// Pairs interned and linked at a time: the ids and pages made of them
/// stay in the cache.
const BATCH_PAIRS: usize = 1 << 16;

/// One worker's adding of pairs to its process's union-find.
struct PairAdder<'a> {
    graph: &'a SharedGraph,
    writer: GraphWriter<'a>,
    /// A batch's pages, two per pair.
    ends: Vec<Page>,
    /// An even share of the process's pairs: the first chunk of the pair
    /// log has room for that many, later ones for an eighth of it.
    share: usize,
    /// Pairs of a page with itself, passed over.
    same_page_pairs: u64,
}

impl PairAdder<'_> {
    fn add(
        &mut self,
        batch: &[PairRow],
        group: &SharedRowGroup,
        log: Option<&mut PairLog>,
    ) -> Result<()> {
        let held = self.graph.pages();
        // Every worker of the process may be adding a batch as large.
        if held + 2 * batch.len() * self.graph.workers() >= MAX_PROCESS_PAGES {
            bail!(
                "{}: a process would hold more than 2^31 pages ({held} so far): run on more processes",
                group.path()
            );
        }
        // A page paired with itself (a self-join without `a.id != b.id`)
        // says nothing: kept, it would make a cluster of one.
        let other_pages = |r: &&PairRow| r.query != r.corpus;
        let pairs = batch
            .iter()
            .filter(other_pages)
            .map(|r| (r.query, r.corpus, r.corpus_in_corpus));
        self.writer.add_pairs(pairs, &mut self.ends);
        let same_page = batch.len() - self.ends.len() / 2;
        self.same_page_pairs += same_page as u64;
        if let Some(log) = log {
            let chunk = if log.is_empty() {
                self.share
            } else {
                self.share / 8
            };
            log.make_room(batch.len(), chunk.max(1));
            let nearness = batch
                .iter()
                .filter(other_pages)
                .map(|r| closeness(r.distance, r.wide_distance));
            log.extend(&self.ends, nearness);
        }
        Ok(())
    }
}

/// The least and greatest id of some pairs (none if there are none).
fn id_range(rows: &[PairRow]) -> Option<(i64, i64)> {
    let ids = rows.iter().flat_map(|r| [r.query, r.corpus]);
    let least = ids.clone().min()?;
    Some((least, ids.max()?))
}
