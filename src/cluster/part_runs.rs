//! The rows of `cluster`'s output parts, travelling as sorted runs.
//!
//! Every part is written sorted by id. Rather than have each part's writer
//! gather its rows and sort them all (holding them twice, for the sort's
//! scratch), every producer (a worker's router, a worker's cluster owner)
//! gives its rows in id order: a *run* per part, cut into slices so that
//! rows flow to the writers while they are made, and sent a slice, not a
//! row, at a time. The writer merges its few runs per part ([`RunMerge`])
//! as the slices come, writing every row no run still to come can precede:
//! a part is written while it is made, and each slice is freed once merged
//! (holding every run until the last slice came would cost a worker's rows
//! twice over in fresh memory).
//!
//! Slices are of 65,536 rows (fewer with many parts). Part `p`'s
//! `clusters/` file is written by worker `p % peers` (the workers of every
//! process), its `drop/` file by the worker half the peers further on, so with one part two workers
//! write the two files at once. Each producer ends every run it may give
//! with a marked last slice (empty if it has no rows), and a writer hands
//! Parquet every 65,536 rows below the least id all unfinished runs have
//! reached. Every part gets the same calls whenever its rows come, so its
//! bytes are the same for any number of workers. Two runs are merged by a
//! loop with no branch on the ids, more by a heap; the writer checks that
//! ids strictly increase.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::cluster::drop_policy::Grounds;
use crate::cluster::join::owner_of;

/// The part a page's rows go to: a hash of its id, so parts do not depend
/// on the number of workers, and a giant cluster's rows are spread over
/// every part (and writer) rather than all in one.
pub(crate) fn placement_part(id: i64, parts: usize) -> u32 {
    owner_of(id, parts)
}

/// A `clusters/` row: `(id, cluster_id, cluster_size)`.
pub(crate) type MemberRow = (i64, i64, u32);

/// A `drop/` row: `(id, keep_id, grounds)`, the grounds giving its
/// `distance`, `wide_distance` and `kept_by`.
pub(crate) type DropRow = (i64, i64, Grounds);

/// Consecutive rows of one run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Rows {
    Members(Vec<MemberRow>),
    Drops(Vec<DropRow>),
}

/// Which output a row goes to: `clusters/` or `drop/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RowKind {
    Members,
    Drops,
}

impl Rows {
    pub(crate) fn kind(&self) -> RowKind {
        match self {
            Rows::Members(_) => RowKind::Members,
            Rows::Drops(_) => RowKind::Drops,
        }
    }
}

/// A slice of a run: the `seq`-th slice of the rows of one kind that
/// producer `run` gives part `part`; `last` marks the run's end (every
/// producer ends every run it may give, empty or not, so that a writer
/// knows when no more rows can come from it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RunSlice {
    pub(crate) part: u32,
    pub(crate) run: u32,
    pub(crate) seq: u32,
    pub(crate) last: bool,
    pub(crate) rows: Rows,
}

/// The run number of worker `worker`'s router: unique among producers.
pub(crate) fn router_run(worker: u32) -> u32 {
    2 * worker
}

/// The run number of worker `worker`'s owner of joined clusters.
pub(crate) fn owner_run(worker: u32) -> u32 {
    2 * worker + 1
}

/// One producer's rows for every part, taken in id order and given as
/// slices.
pub(crate) struct RunBuilder {
    run: u32,
    slice_rows: usize,
    /// The rows of each part's slices being filled.
    pending: RangeRows,
    /// Slices given so far, per part and kind.
    seq: Vec<[u32; 2]>,
}

impl RunBuilder {
    /// A builder for producer `run` (unique among all producers) over
    /// `parts` parts. A slice holds up to 64Ki rows, fewer with many parts,
    /// so that all the buffers together stay near 1Mi rows.
    pub(crate) fn new(run: u32, parts: usize) -> RunBuilder {
        let slice_rows = ((1 << 20) / parts.max(1)).clamp(1 << 10, 1 << 16);
        RunBuilder {
            run,
            slice_rows,
            pending: RangeRows::with_capacity(parts, slice_rows),
            seq: vec![[0; 2]; parts],
        }
    }

    /// A page's `clusters/` row, in its part; pages come in id order.
    #[inline]
    pub(crate) fn member(&mut self, row: MemberRow, give: &mut dyn FnMut(RunSlice)) {
        let part = self.pending.add_member(row);
        if self.pending.members[part].len() >= self.slice_rows {
            self.give(part, RowKind::Members, false, give);
        }
    }

    /// A page's `drop/` row, in its part; drops come in id order.
    #[inline]
    pub(crate) fn drop(&mut self, row: DropRow, give: &mut dyn FnMut(RunSlice)) {
        let part = self.pending.add_drop(row);
        if self.pending.drops[part].len() >= self.slice_rows {
            self.give(part, RowKind::Drops, false, give);
        }
    }

    /// Appends the rows of `range` (of pages after every row given so far)
    /// to their parts' runs, giving each slice as it fills, as if they had
    /// come one at a time; empties `range`, whose buffers keep their room
    /// for the next range.
    pub(crate) fn take_in(&mut self, range: &mut RangeRows, give: &mut dyn FnMut(RunSlice)) {
        let n = self.slice_rows;
        for part in 0..self.seq.len() {
            let (mut members, mut drops) = (0, 0);
            let (members_in, drops_in) = (&range.members[part], &range.drops[part]);
            while fill(&mut self.pending.members[part], members_in, &mut members, n) {
                self.give(part, RowKind::Members, false, give);
            }
            while fill(&mut self.pending.drops[part], drops_in, &mut drops, n) {
                self.give(part, RowKind::Drops, false, give);
            }
            range.members[part].clear();
            range.drops[part].clear();
        }
    }

    /// Gives every part's last slices, ending each of its runs.
    pub(crate) fn finish(&mut self, give: &mut dyn FnMut(RunSlice)) {
        for part in 0..self.seq.len() {
            self.give(part, RowKind::Members, true, give);
            self.give(part, RowKind::Drops, true, give);
        }
    }

    /// Gives part `part`'s rows of `kind` as the next slice of its run.
    fn give(&mut self, part: usize, kind: RowKind, last: bool, give: &mut dyn FnMut(RunSlice)) {
        let n = self.slice_rows;
        let rows = match kind {
            RowKind::Members => Rows::Members(take_slice(&mut self.pending.members[part], last, n)),
            RowKind::Drops => Rows::Drops(take_slice(&mut self.pending.drops[part], last, n)),
        };
        give(self.slice(part, last, rows));
    }

    fn slice(&mut self, part: usize, last: bool, rows: Rows) -> RunSlice {
        let kind = usize::from(rows.kind() == RowKind::Drops);
        let seq = self.seq[part][kind];
        self.seq[part][kind] += 1;
        RunSlice {
            part: part as u32,
            run: self.run,
            seq,
            last,
            rows,
        }
    }
}

/// Copies `rows[*at..]` into `buffer` until it holds `slice_rows`; true if
/// it is full (then the caller gives it and asks again).
fn fill<T: Copy>(buffer: &mut Vec<T>, rows: &[T], at: &mut usize, slice_rows: usize) -> bool {
    let room = slice_rows.saturating_sub(buffer.len());
    let end = (*at + room).min(rows.len());
    buffer.extend_from_slice(&rows[*at..end]);
    *at = end;
    buffer.len() >= slice_rows
}

/// Where a producer's rows go as they are made, in id order: its run
/// ([`Giving`]), or the buffers of one range of its pages ([`RangeRows`]).
pub(crate) trait RowSink {
    fn member(&mut self, row: MemberRow);
    fn drop(&mut self, row: DropRow);
}

/// A producer's [`RunBuilder`], giving each slice as it fills.
pub(crate) struct Giving<'a> {
    pub(crate) rows: &'a mut RunBuilder,
    pub(crate) give: &'a mut dyn FnMut(RunSlice),
}

impl RowSink for Giving<'_> {
    #[inline]
    fn member(&mut self, row: MemberRow) {
        self.rows.member(row, self.give);
    }

    #[inline]
    fn drop(&mut self, row: DropRow) {
        self.rows.drop(row, self.give);
    }
}

/// Rows by part: those of one range of a producer's pages, made on a
/// thread of its own while the ranges after it are made on others, then
/// taken into the producer's runs in turn ([`RunBuilder::take_in`]); or
/// the rows of a [`RunBuilder`]'s slices being filled.
#[derive(Debug, Default)]
pub(crate) struct RangeRows {
    members: Vec<Vec<MemberRow>>,
    drops: Vec<Vec<DropRow>>,
}

impl RangeRows {
    pub(crate) fn new(parts: usize) -> RangeRows {
        RangeRows::with_capacity(parts, 0)
    }

    fn with_capacity(parts: usize, rows: usize) -> RangeRows {
        RangeRows {
            members: (0..parts).map(|_| Vec::with_capacity(rows)).collect(),
            drops: (0..parts).map(|_| Vec::with_capacity(rows)).collect(),
        }
    }

    /// Adds a `clusters/` row to its part; gives the part.
    #[inline]
    fn add_member(&mut self, row: MemberRow) -> usize {
        let part = placement_part(row.0, self.members.len()) as usize;
        self.members[part].push(row);
        part
    }

    /// Adds a `drop/` row to its part; gives the part.
    #[inline]
    fn add_drop(&mut self, row: DropRow) -> usize {
        let part = placement_part(row.0, self.drops.len()) as usize;
        self.drops[part].push(row);
        part
    }
}

impl RowSink for RangeRows {
    #[inline]
    fn member(&mut self, row: MemberRow) {
        self.add_member(row);
    }

    #[inline]
    fn drop(&mut self, row: DropRow) {
        self.add_drop(row);
    }
}

/// The rows of `buffer`, leaving in their place a buffer for the next
/// slice (none once the run ends) at its full size of `slice_rows` at once,
/// as the first ones are: grown by doubling, every slice would be copied
/// (into fresh memory) on the way. Memory is only touched as rows are
/// written.
fn take_slice<T>(buffer: &mut Vec<T>, last: bool, slice_rows: usize) -> Vec<T> {
    let fresh = if last {
        Vec::new()
    } else {
        Vec::with_capacity(slice_rows)
    };
    std::mem::replace(buffer, fresh)
}

/// A row of a run: what the runs are merged by.
pub(crate) trait Row {
    fn id(&self) -> i64;
}

impl<A, B> Row for (i64, A, B) {
    fn id(&self) -> i64 {
        self.0
    }
}

/// The runs of one part and kind, merged into id order as their slices
/// come: rows are given once no run can still send a smaller id, that is up
/// to the least id that every unfinished run has reached.
pub(crate) struct RunMerge<T> {
    /// By producer: its queue, if the producer is expected to send.
    runs: Vec<Option<RunQueue<T>>>,
}

/// One run's slices as they came.
struct RunQueue<T> {
    /// Slices that came before one of a lower `seq` (timely delivers a
    /// sender's records in order; this is only a guard).
    early: BTreeMap<u32, (Vec<T>, bool)>,
    next_seq: u32,
    /// Slices in order, none empty, the front one merged up to `taken`.
    ready: VecDeque<Vec<T>>,
    taken: usize,
    /// The last slice came: `ready` is all that is left.
    finished: bool,
}

impl<T> RunQueue<T> {
    fn new() -> RunQueue<T> {
        RunQueue {
            early: BTreeMap::new(),
            next_seq: 0,
            ready: VecDeque::new(),
            taken: 0,
            finished: false,
        }
    }

    /// The rows of the front slice not merged yet.
    fn front(&self) -> &[T] {
        self.ready.front().map_or(&[], |slice| &slice[self.taken..])
    }

    /// Marks `n` more rows of the front slice merged, freeing it once all are.
    fn advance(&mut self, n: usize) {
        self.taken += n;
        if self
            .ready
            .front()
            .is_some_and(|slice| self.taken == slice.len())
        {
            self.ready.pop_front();
            self.taken = 0;
        }
    }
}

impl<T: Row + Copy> RunMerge<T> {
    /// A merge of the runs of producers `runs`; slices of other producers
    /// must be empty.
    pub(crate) fn new(runs: impl IntoIterator<Item = u32>) -> RunMerge<T> {
        let mut merge = RunMerge { runs: Vec::new() };
        for run in runs {
            let at = run as usize;
            if merge.runs.len() <= at {
                merge.runs.resize_with(at + 1, || None);
            }
            merge.runs[at] = Some(RunQueue::new());
        }
        merge
    }

    /// Takes in the `seq`-th slice of producer `run` (its `last`).
    pub(crate) fn add(&mut self, run: u32, seq: u32, rows: Vec<T>, last: bool) -> Result<()> {
        let Some(Some(queue)) = self.runs.get_mut(run as usize) else {
            if rows.is_empty() {
                return Ok(());
            }
            bail!("rows from producer {run}, which was to send none (internal error)");
        };
        if queue.finished || seq < queue.next_seq || queue.early.contains_key(&seq) {
            bail!("slice {seq} of producer {run} came twice or after its last (internal error)");
        }
        queue.early.insert(seq, (rows, last));
        while let Some((rows, last)) = queue.early.remove(&queue.next_seq) {
            queue.next_seq += 1;
            if !rows.is_empty() {
                queue.ready.push_back(rows);
            }
            queue.finished = last;
        }
        Ok(())
    }

    /// A producer whose last slice has not come, if any.
    pub(crate) fn unfinished(&self) -> Option<u32> {
        self.runs
            .iter()
            .enumerate()
            .find(|(_, queue)| queue.as_ref().is_some_and(|q| !q.finished))
            .map(|(run, _)| run as u32)
    }

    /// How many rows [`Self::merge_ready`] could give now.
    pub(crate) fn mergeable(&self) -> usize {
        let Some(bound) = self.bound() else {
            return 0;
        };
        let mut rows = 0;
        for queue in self.runs.iter().flatten() {
            for (at, slice) in queue.ready.iter().enumerate() {
                let from = if at == 0 { queue.taken } else { 0 };
                let below = match slice.last().is_some_and(|row| row.id() <= bound) {
                    true => slice.len(),
                    false => slice.partition_point(|row| row.id() <= bound),
                };
                rows += below.saturating_sub(from);
                if below < slice.len() {
                    break;
                }
            }
        }
        rows
    }

    /// Gives at most `most` rows, in id order, of those that no run still
    /// to come can precede; returns how many it gave.
    pub(crate) fn merge_ready(&mut self, most: usize, mut push: impl FnMut(T)) -> usize {
        let mut given = 0;
        while given < most {
            let Some(bound) = self.bound() else {
                break;
            };
            let n = self.merge_fronts(bound, most - given, &mut push);
            if n == 0 {
                break;
            }
            given += n;
        }
        given
    }

    /// The greatest id every row up to which may be given now: the least of
    /// the last ids the unfinished runs have sent (`i64::MAX` when all are
    /// finished); `None` while an unfinished run has nothing waiting, or
    /// nothing at all waits.
    fn bound(&self) -> Option<i64> {
        let mut bound = i64::MAX;
        let mut waiting = false;
        for queue in self.runs.iter().flatten() {
            match (queue.ready.back(), queue.finished) {
                (None, true) => {}
                (None, false) => return None,
                (Some(_), true) => waiting = true,
                (Some(back), false) => {
                    waiting = true;
                    bound = bound.min(back.last().map_or(i64::MIN, Row::id));
                }
            }
        }
        waiting.then_some(bound)
    }

    /// Merges the rows up to `bound` of every run's front slice, at most
    /// `most` of them, and none past the end of a front slice with more of
    /// its run behind it (those rows may precede the rest of another front
    /// slice): the run whose front slice ends lowest gives all of it
    /// (unless `most` stops it first).
    fn merge_fronts(&mut self, bound: i64, most: usize, push: &mut impl FnMut(T)) -> usize {
        let mut bound = bound;
        for queue in self.runs.iter().flatten() {
            if queue.ready.len() > 1 {
                let front_end = queue.ready.front().and_then(|s| s.last()).map(Row::id);
                bound = bound.min(front_end.unwrap_or(i64::MIN));
            }
        }
        let mut segments: Vec<(usize, &[T])> = Vec::new();
        for (run, queue) in self.runs.iter().enumerate() {
            if let Some(queue) = queue {
                let front = queue.front();
                let end = front.partition_point(|row| row.id() <= bound);
                if end > 0 {
                    segments.push((run, &front[..end]));
                }
            }
        }
        let mut taken = vec![0; segments.len()];
        match segments.as_slice() {
            [] => {}
            [(_, a)] => {
                taken[0] = a.len().min(most);
                a[..taken[0]].iter().for_each(|&row| push(row));
            }
            [(_, a), (_, b)] => (taken[0], taken[1]) = merge_two(a, b, most, push),
            _ => merge_many(&segments, &mut taken, most, push),
        }
        let runs: Vec<usize> = segments.iter().map(|&(run, _)| run).collect();
        for (run, n) in runs.into_iter().zip(&taken) {
            if let Some(queue) = self.runs[run].as_mut() {
                queue.advance(*n);
            }
        }
        taken.iter().sum()
    }
}

/// Merges two sorted slices, at most `most` rows, picking each row without
/// a branch on the ids; how many rows of each it took.
fn merge_two<T: Row + Copy>(
    a: &[T],
    b: &[T],
    most: usize,
    push: &mut impl FnMut(T),
) -> (usize, usize) {
    let (mut i, mut j) = (0, 0);
    while i + j < most && i < a.len() && j < b.len() {
        let first = a[i].id() < b[j].id();
        push(if first { a[i] } else { b[j] });
        i += usize::from(first);
        j += usize::from(!first);
    }
    while i + j < most && i < a.len() {
        push(a[i]);
        i += 1;
    }
    while i + j < most && j < b.len() {
        push(b[j]);
        j += 1;
    }
    (i, j)
}

/// Merges three sorted slices or more (many workers' runs), at most `most`
/// rows, by a heap of their heads; counts each slice's rows in `taken`.
fn merge_many<T: Row + Copy>(
    segments: &[(usize, &[T])],
    taken: &mut [usize],
    most: usize,
    push: &mut impl FnMut(T),
) {
    let mut heads: BinaryHeap<Reverse<(i64, usize)>> = segments
        .iter()
        .enumerate()
        .map(|(s, (_, rows))| Reverse((rows[0].id(), s)))
        .collect();
    let mut given = 0;
    while given < most {
        let Some(Reverse((_, s))) = heads.pop() else {
            break;
        };
        let rows = segments[s].1;
        push(rows[taken[s]]);
        taken[s] += 1;
        given += 1;
        if let Some(next) = rows.get(taken[s]) {
            heads.push(Reverse((next.id(), s)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gives `rows` (each `(id, cluster)`) through a builder as run `run`.
    fn slices_of(run: u32, parts: usize, ids: &[(i64, i64)]) -> Vec<RunSlice> {
        let mut builder = RunBuilder::new(run, parts);
        let mut out = Vec::new();
        for &(id, cluster) in ids {
            builder.member((id, cluster, 1), &mut |s| out.push(s));
            if id != cluster {
                builder.drop((id, cluster, Grounds::default()), &mut |s| out.push(s));
            }
        }
        builder.finish(&mut |s| out.push(s));
        out
    }

    /// A part's two merges (members and drops) over producers `runs`,
    /// fed `slices` in the order given, `most` rows at a time after each.
    fn merged(
        runs: &[u32],
        slices: Vec<RunSlice>,
        most: usize,
    ) -> Result<(Vec<MemberRow>, Vec<DropRow>)> {
        let mut members = RunMerge::new(runs.iter().copied());
        let mut drops = RunMerge::new(runs.iter().copied());
        let (mut m, mut d) = (Vec::new(), Vec::new());
        for slice in slices {
            match slice.rows {
                Rows::Members(rows) => members.add(slice.run, slice.seq, rows, slice.last)?,
                Rows::Drops(rows) => drops.add(slice.run, slice.seq, rows, slice.last)?,
            }
            while members.merge_ready(most, |row| m.push(row)) > 0 {}
            while drops.merge_ready(most, |row| d.push(row)) > 0 {}
        }
        assert_eq!((members.unfinished(), drops.unfinished()), (None, None));
        Ok((m, d))
    }

    #[test]
    fn runs_sent_in_any_order_merge_into_id_order() {
        // Two producers and more (two ways of merging), each in id order,
        // of the ids of one part of 1Ki; many slices each (1Ki rows),
        // arriving in an order that is not the runs' (seqs out of order).
        let parts = 1 << 10;
        let target = placement_part(0, parts);
        let ours: Vec<i64> = (0..)
            .filter(|&id| placement_part(id, parts) == target)
            .take(15_000)
            .collect();
        for producers in [2, 3, 12] {
            let runs: Vec<Vec<(i64, i64)>> = (0..producers)
                .map(|r| {
                    ours.iter()
                        .skip(r)
                        .step_by(producers)
                        .map(|&id| (id, ours[0]))
                        .collect()
                })
                .collect();
            let mut slices: Vec<RunSlice> = runs
                .iter()
                .enumerate()
                .flat_map(|(r, rows)| slices_of(r as u32, parts, rows))
                .filter(|slice| slice.part == target)
                .collect();
            assert!(slices.len() >= 30, "{} slices", slices.len());
            slices.reverse();
            slices.rotate_left(7);
            let producers: Vec<u32> = (0..producers as u32).collect();
            let (members, drops) = merged(&producers, slices, usize::MAX).unwrap();
            let ids: Vec<i64> = members.iter().map(|row| row.0).collect();
            assert_eq!(ids, ours, "{} producers", producers.len());
            let drops: Vec<i64> = drops.iter().map(|row| row.0).collect();
            assert_eq!(drops, ours[1..], "{} producers", producers.len());
        }
    }

    #[test]
    fn rows_are_given_as_soon_as_no_run_can_precede_them_and_not_before() {
        // Ids dealt at random among 1, 2 or 3 runs, slices of uneven sizes
        // interleaved at random (each run's in order), taken 1, 7 or 256
        // rows at a time: every row comes out once, in id order, and
        // after each slice exactly the rows below every unfinished run's
        // last id have come out.
        let mut rng = crate::random::SplitMix64::new(5);
        for runs in [1usize, 2, 3] {
            let mut all: Vec<Vec<MemberRow>> = vec![Vec::new(); runs];
            for id in 0..5_000i64 {
                let run = if id > 4_000 {
                    0
                } else {
                    rng.below(runs as u64) as usize
                };
                all[run].push((id, id / 7, 1 + (id % 5) as u32));
            }
            let pending: Vec<VecDeque<RunSlice>> = all
                .iter()
                .enumerate()
                .map(|(run, rows)| {
                    let mut slices = VecDeque::new();
                    let (mut start, mut seq) = (0, 0u32);
                    while start < rows.len() || slices.is_empty() {
                        let end = (start + (seq as usize * 37) % 300).min(rows.len());
                        let slice = Rows::Members(rows[start..end].to_vec());
                        let last = end == rows.len();
                        slices.push_back(RunSlice {
                            part: 0,
                            run: run as u32,
                            seq,
                            last,
                            rows: slice,
                        });
                        (start, seq) = (end, seq + 1);
                    }
                    slices
                })
                .collect();
            for most in [1, 7, 256] {
                let mut merge = RunMerge::new(0..runs as u32);
                let mut out = Vec::new();
                let mut queues = pending.clone();
                let mut sent_to: Vec<Option<i64>> = vec![None; runs];
                while queues.iter().any(|q| !q.is_empty()) {
                    let run = loop {
                        let run = rng.below(runs as u64) as usize;
                        if !queues[run].is_empty() {
                            break run;
                        }
                    };
                    let slice = queues[run].pop_front().unwrap();
                    let Rows::Members(rows) = slice.rows else {
                        unreachable!()
                    };
                    if let Some(row) = rows.last() {
                        sent_to[run] = Some(row.0);
                    }
                    let ended = slice.last;
                    merge.add(slice.run, slice.seq, rows, ended).unwrap();
                    // Every row below the least id an unfinished run has
                    // reached can come out; none above it.
                    let bound = (0..runs)
                        .filter(|&r| !queues[r].is_empty())
                        .map(|r| sent_to[r].unwrap_or(i64::MIN))
                        .min()
                        .unwrap_or(i64::MAX);
                    let expected = all.iter().flatten().filter(|row| row.0 <= bound).count();
                    assert_eq!(merge.mergeable(), expected - out.len());
                    while merge.merge_ready(most, |row| out.push(row)) > 0 {}
                    assert_eq!(out.len(), expected, "{runs} runs, {most} at a time");
                    assert_eq!(merge.mergeable(), 0);
                }
                let ids: Vec<i64> = out.iter().map(|row| row.0).collect();
                assert_eq!(
                    ids,
                    (0..5_000).collect::<Vec<_>>(),
                    "{runs} runs, {most} at a time"
                );
                assert_eq!(merge.unfinished(), None);
            }
        }
    }

    #[test]
    fn a_run_not_yet_ended_holds_back_the_rows_after_its_last() {
        let slice = |run, seq, ids: &[i64], last| RunSlice {
            part: 0,
            run,
            seq,
            last,
            rows: Rows::Members(ids.iter().map(|&id| (id, id, 1)).collect()),
        };
        let mut merge = RunMerge::new([0, 2]);
        let mut out = Vec::new();
        let add = |merge: &mut RunMerge<MemberRow>, s: RunSlice| {
            let Rows::Members(rows) = s.rows else {
                unreachable!()
            };
            merge.add(s.run, s.seq, rows, s.last)
        };
        // Producer 2 has sent nothing: nothing can be given.
        add(&mut merge, slice(0, 0, &[1, 5, 9], false)).unwrap();
        assert_eq!(merge.merge_ready(usize::MAX, |r| out.push(r.0)), 0);
        // Producer 2 up to 6: rows up to 6 of both.
        add(&mut merge, slice(2, 0, &[2, 6], false)).unwrap();
        merge.merge_ready(usize::MAX, |r| out.push(r.0));
        assert_eq!(out, [1, 2, 5, 6]);
        assert_eq!(merge.unfinished(), Some(0));
        // Producer 1 was to send nothing: its empty end is taken, rows are
        // refused, and so is a slice that came twice.
        add(&mut merge, slice(1, 0, &[], true)).unwrap();
        assert!(add(&mut merge, slice(1, 1, &[3], true)).is_err());
        assert!(add(&mut merge, slice(2, 0, &[7], false)).is_err());
        // A slice that comes before the one it follows waits for it.
        add(&mut merge, slice(2, 2, &[], true)).unwrap();
        assert_eq!(merge.merge_ready(usize::MAX, |r| out.push(r.0)), 0);
        add(&mut merge, slice(2, 1, &[8], false)).unwrap();
        add(&mut merge, slice(0, 1, &[10], true)).unwrap();
        merge.merge_ready(usize::MAX, |r| out.push(r.0));
        assert_eq!(out, [1, 2, 5, 6, 8, 9, 10]);
        assert_eq!(merge.unfinished(), None);
    }

    #[test]
    fn rows_go_to_their_pages_part() {
        let parts = 4;
        let rows: Vec<(i64, i64)> = (0..200).map(|i| (i, i / 10 * 10)).collect();
        let mut by_part: Vec<Vec<RunSlice>> = vec![Vec::new(); parts];
        let slices = slices_of(0, parts, &rows);
        // Every part's two runs are ended, each once.
        assert_eq!(slices.iter().filter(|s| s.last).count(), 2 * parts);
        for slice in slices {
            by_part[slice.part as usize].push(slice);
        }
        let (mut members, mut drops) = (0, 0);
        for (p, slices) in by_part.into_iter().enumerate() {
            let (m, d) = merged(&[0], slices, 64).unwrap();
            for &(id, _, _) in &m {
                assert_eq!(placement_part(id, parts), p as u32);
            }
            assert!(m.windows(2).all(|w| w[0].0 < w[1].0));
            for &(id, keep, _) in &d {
                assert_eq!(placement_part(id, parts), p as u32);
                assert_eq!(keep, id / 10 * 10);
            }
            (members, drops) = (members + m.len(), drops + d.len());
        }
        assert_eq!((members, drops), (200, 180));
    }

    #[test]
    fn ranges_taken_in_turn_give_the_slices_rows_given_one_at_a_time_do() {
        // Ranges of uneven lengths, some empty, one longer than a slice
        // (65,536 rows a part with 3 parts): each part's run of each kind
        // gets the same slices, cut at the same rows, numbered alike (the
        // runs' slices interleave in another order, which no writer sees).
        let parts = 3;
        let rows: Vec<(i64, i64)> = (0..300_000).map(|i| (i, i / 10 * 10)).collect();
        let expected = slices_of(4, parts, &rows);
        let mut builder = RunBuilder::new(4, parts);
        let mut range = RangeRows::new(parts);
        let mut given = Vec::new();
        let mut start = 0;
        for len in [1, 0, 70_000, 12_345, 0, 150_000, 300_000] {
            let end = (start + len).min(rows.len());
            for &(id, cluster) in &rows[start..end] {
                range.member((id, cluster, 1));
                if id != cluster {
                    range.drop((id, cluster, Grounds::default()));
                }
            }
            builder.take_in(&mut range, &mut |s| given.push(s));
            start = end;
        }
        builder.finish(&mut |s| given.push(s));
        let by_run = |mut slices: Vec<RunSlice>| {
            slices.sort_by_key(|s| (s.part, s.rows.kind() == RowKind::Drops, s.seq));
            slices
        };
        assert!(expected.len() > 2 * parts, "some runs span slices");
        assert_eq!(by_run(given), by_run(expected));
    }
}
