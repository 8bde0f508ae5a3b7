//! The rows of `cluster`'s output parts, travelling as sorted runs.
//!
//! Every part is written sorted by id. Rather than have each part's writer
//! gather its rows and sort them all (holding them twice, for the sort's
//! scratch), every producer (a worker's router, a worker's cluster owner)
//! gives its rows in id order: a *run* per part, cut into slices so that
//! rows flow to the writers while they are made, and sent a slice, not a
//! row, at a time. The writer then merges its few runs per part as it
//! writes: no sort, no second copy.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use crate::clustering::placement_part;

/// A `clusters/` row: `(id, cluster_id, cluster_size)`.
pub type MemberRow = (i64, i64, u32);

/// A `drop/` row: `(id, keep_id, distance)`; no distance under
/// `--drop-policy component`.
pub type DropRow = (i64, i64, Option<u8>);

/// Consecutive rows of one run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Rows {
    Members(Vec<MemberRow>),
    Drops(Vec<DropRow>),
}

/// Which output a row goes to: `clusters/` or `drop/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    Members,
    Drops,
}

impl Rows {
    pub fn kind(&self) -> RowKind {
        match self {
            Rows::Members(_) => RowKind::Members,
            Rows::Drops(_) => RowKind::Drops,
        }
    }
}

/// A slice of a run: the `seq`-th slice of the rows that producer `run`
/// gives part `part`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSlice {
    pub part: u32,
    pub run: u32,
    pub seq: u32,
    pub rows: Rows,
}

/// One producer's rows for every part, taken in id order and given as
/// slices.
pub struct RunBuilder {
    run: u32,
    slice_rows: usize,
    members: Vec<Vec<MemberRow>>,
    drops: Vec<Vec<DropRow>>,
    /// Slices given so far, per part.
    seq: Vec<u32>,
}

impl RunBuilder {
    /// A builder for producer `run` (unique among all producers) over
    /// `parts` parts. A slice holds up to 64Ki rows, fewer with many parts,
    /// so that all the buffers together stay near 1Mi rows.
    pub fn new(run: u32, parts: usize) -> RunBuilder {
        let slice_rows = ((1 << 20) / parts.max(1)).clamp(1 << 10, 1 << 16);
        RunBuilder {
            run,
            slice_rows,
            members: (0..parts).map(|_| Vec::with_capacity(slice_rows)).collect(),
            drops: (0..parts).map(|_| Vec::with_capacity(slice_rows)).collect(),
            seq: vec![0; parts],
        }
    }

    /// A page's `clusters/` row, in its part; pages come in id order.
    pub fn member(&mut self, row: MemberRow, give: &mut dyn FnMut(RunSlice)) {
        let part = placement_part(row.0, self.members.len()) as usize;
        self.members[part].push(row);
        if self.members[part].len() >= self.slice_rows {
            self.give_members(part, give);
        }
    }

    /// A page's `drop/` row, in its part; drops come in id order.
    pub fn drop(&mut self, row: DropRow, give: &mut dyn FnMut(RunSlice)) {
        let part = placement_part(row.0, self.drops.len()) as usize;
        self.drops[part].push(row);
        if self.drops[part].len() >= self.slice_rows {
            self.give_drops(part, give);
        }
    }

    /// Gives every part's last slices.
    pub fn finish(&mut self, give: &mut dyn FnMut(RunSlice)) {
        for part in 0..self.members.len() {
            self.give_members(part, give);
            self.give_drops(part, give);
        }
    }

    fn give_members(&mut self, part: usize, give: &mut dyn FnMut(RunSlice)) {
        if !self.members[part].is_empty() {
            let fresh = self.fresh();
            let rows = std::mem::replace(&mut self.members[part], fresh);
            give(self.slice(part, Rows::Members(rows)));
        }
    }

    fn give_drops(&mut self, part: usize, give: &mut dyn FnMut(RunSlice)) {
        if !self.drops[part].is_empty() {
            let fresh = self.fresh();
            let rows = std::mem::replace(&mut self.drops[part], fresh);
            give(self.slice(part, Rows::Drops(rows)));
        }
    }

    /// A buffer for the next slice, at its full size at once (as the first
    /// ones are): grown by doubling, every slice would be copied (into fresh
    /// memory) on the way. Memory is only touched as rows are written.
    fn fresh<T>(&self) -> Vec<T> {
        Vec::with_capacity(self.slice_rows)
    }

    fn slice(&mut self, part: usize, rows: Rows) -> RunSlice {
        let seq = self.seq[part];
        self.seq[part] += 1;
        RunSlice {
            part: part as u32,
            run: self.run,
            seq,
            rows,
        }
    }
}

/// The slices one part's writer received, by kind: `(run, seq, rows)`.
#[derive(Debug, Default)]
pub struct PartRuns {
    members: Vec<(u32, u32, Vec<MemberRow>)>,
    drops: Vec<(u32, u32, Vec<DropRow>)>,
}

impl PartRuns {
    pub fn add(&mut self, slice: RunSlice) {
        match slice.rows {
            Rows::Members(rows) => self.members.push((slice.run, slice.seq, rows)),
            Rows::Drops(rows) => self.drops.push((slice.run, slice.seq, rows)),
        }
    }

    /// The `clusters/` rows, merged into id order.
    pub fn members(&mut self) -> Merged<MemberRow> {
        Merged::new(std::mem::take(&mut self.members))
    }

    /// The `drop/` rows, merged into id order.
    pub fn drops(&mut self) -> Merged<DropRow> {
        Merged::new(std::mem::take(&mut self.drops))
    }
}

/// Sorted runs merged into one sorted sequence, freeing each slice once
/// read.
pub struct Merged<T> {
    runs: Vec<Run<T>>,
    heads: Heads,
    len: usize,
}

/// Runs up to which [`Heads::Few`] is used.
const FEW_RUNS: usize = 8;

/// The runs' next keys `(key, run)`.
enum Heads {
    /// A list scanned for its least: a compare and a select per run a row,
    /// where a heap's sift mispredicts a branch on about every other row of
    /// runs whose ids interleave (as hashed ids do).
    Few(Vec<(i64, usize)>),
    /// Least on top.
    Many(BinaryHeap<Reverse<(i64, usize)>>),
}

/// A run's slices, in order, the current one being read.
struct Run<T> {
    slices: std::vec::IntoIter<Vec<T>>,
    current: std::vec::IntoIter<T>,
}

/// A row of a part: its id comes first.
pub trait Row {
    fn id(&self) -> i64;
}

impl<A, B> Row for (i64, A, B) {
    fn id(&self) -> i64 {
        self.0
    }
}

impl<T: Row> Merged<T> {
    fn new(mut slices: Vec<(u32, u32, Vec<T>)>) -> Merged<T> {
        let len = slices.iter().map(|(_, _, rows)| rows.len()).sum();
        slices.sort_unstable_by_key(|&(run, seq, _)| (run, seq));
        let mut runs: Vec<Run<T>> = Vec::new();
        let mut last_run = None;
        let mut grouped: Vec<Vec<T>> = Vec::new();
        for (run, _, rows) in slices {
            if last_run.is_some_and(|last| last != run) {
                runs.push(Run::of(std::mem::take(&mut grouped)));
            }
            last_run = Some(run);
            grouped.push(rows);
        }
        if !grouped.is_empty() {
            runs.push(Run::of(grouped));
        }
        let heads = match runs.len() {
            0..=FEW_RUNS => Heads::Few(Vec::new()),
            _ => Heads::Many(BinaryHeap::new()),
        };
        Merged { runs, heads, len }.primed()
    }

    /// Rows in all.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn primed(mut self) -> Merged<T> {
        for r in 0..self.runs.len() {
            if let Some(key) = self.runs[r].peek_key() {
                match &mut self.heads {
                    Heads::Few(heads) => heads.push((key, r)),
                    Heads::Many(heads) => heads.push(Reverse((key, r))),
                }
            }
        }
        self
    }
}

impl<T: Row> Run<T> {
    fn of(slices: Vec<Vec<T>>) -> Run<T> {
        Run {
            slices: slices.into_iter(),
            current: Vec::new().into_iter(),
        }
    }

    /// The key of the next row, loading the next slice if need be.
    fn peek_key(&mut self) -> Option<i64> {
        loop {
            if let Some(row) = self.current.as_slice().first() {
                return Some(row.id());
            }
            self.current = self.slices.next()?.into_iter();
        }
    }

    fn next(&mut self) -> Option<T> {
        loop {
            if let Some(row) = self.current.next() {
                return Some(row);
            }
            self.current = self.slices.next()?.into_iter();
        }
    }
}

impl<T: Row + Copy> Merged<T> {
    /// One sorted run, as given.
    #[cfg(test)]
    pub(crate) fn from_sorted(rows: Vec<T>) -> Merged<T> {
        Merged::new(vec![(0, 0, rows)])
    }

    /// Gives the next `n` rows (fewer if fewer are left) to `push`, in
    /// order. Two runs (a part's usual lot: one per worker of a process)
    /// are merged slice by slice in a loop that takes each row without a
    /// branch on the ids: hashed ids interleave at random, so a branch
    /// would mispredict on about every other row. Otherwise row by row.
    pub fn take_into(&mut self, mut n: usize, mut push: impl FnMut(T)) {
        while n > 0 {
            if matches!(&self.heads, Heads::Few(heads) if heads.len() == 2) {
                let taken = self.merge_two(n, &mut push);
                if taken > 0 {
                    n -= taken;
                    continue;
                }
            }
            match self.next() {
                Some(row) => push(row),
                None => return,
            }
            n -= 1;
        }
    }

    /// Merges up to `n` rows of the two runs' current slices, until one of
    /// them ends; gives how many.
    fn merge_two(&mut self, n: usize, push: &mut impl FnMut(T)) -> usize {
        let Heads::Few(heads) = &mut self.heads else {
            return 0;
        };
        let (r0, r1) = (heads[0].1, heads[1].1);
        let (a, b) = (
            self.runs[r0].current.as_slice(),
            self.runs[r1].current.as_slice(),
        );
        let (mut i, mut j) = (0, 0);
        while i + j < n && i < a.len() && j < b.len() {
            let first = a[i].id() < b[j].id();
            push(if first { a[i] } else { b[j] });
            i += usize::from(first);
            j += usize::from(!first);
        }
        for (at, (r, taken)) in [(r0, i), (r1, j)].into_iter().enumerate().rev() {
            let run = &mut self.runs[r];
            if taken > 0 {
                run.current.nth(taken - 1);
            }
            match run.peek_key() {
                Some(key) => heads[at].0 = key,
                None => {
                    heads.swap_remove(at);
                }
            }
        }
        i + j
    }
}

impl<T: Row> Iterator for Merged<T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        let heads = match &mut self.heads {
            Heads::Few(heads) => {
                let least = (1..heads.len()).fold(0, |least, at| {
                    if heads[at].0 < heads[least].0 {
                        at
                    } else {
                        least
                    }
                });
                let &(_, r) = heads.get(least)?;
                let run = &mut self.runs[r];
                let row = run.next();
                match run.peek_key() {
                    Some(key) => heads[least].0 = key,
                    None => {
                        heads.swap_remove(least);
                    }
                }
                return row;
            }
            Heads::Many(heads) => heads,
        };
        let mut top = heads.peek_mut()?;
        let Reverse((_, r)) = *top;
        let run = &mut self.runs[r];
        let row = run.next();
        match run.peek_key() {
            Some(key) => *top = Reverse((key, r)),
            None => {
                std::collections::binary_heap::PeekMut::pop(top);
            }
        }
        row
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
                builder.drop((id, cluster, None), &mut |s| out.push(s));
            }
        }
        builder.finish(&mut |s| out.push(s));
        out
    }

    #[test]
    fn runs_sent_in_any_order_merge_into_id_order() {
        // A few producers and more than `FEW_RUNS` (the two ways of
        // finding the least head), each in id order, of the ids of one
        // part of 1Ki; many slices each (1Ki rows).
        let parts = 1 << 10;
        let target = placement_part(0, parts);
        let ours: Vec<i64> = (0..)
            .filter(|&id| placement_part(id, parts) == target)
            .take(15_000)
            .collect();
        for producers in [3, FEW_RUNS + 4] {
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
                .collect();
            assert!(slices.len() >= 30, "{} slices", slices.len());
            // Arrival order is not run order.
            slices.reverse();
            slices.rotate_left(7);
            let mut part = PartRuns::default();
            for slice in slices {
                assert_eq!(slice.part, target);
                part.add(slice);
            }
            let members = part.members();
            assert_eq!(members.len(), 15_000);
            let ids: Vec<i64> = members.map(|row| row.0).collect();
            assert_eq!(ids, ours, "{producers} producers");
            let drops: Vec<i64> = part.drops().map(|row| row.0).collect();
            assert_eq!(drops, ours[1..], "{producers} producers");
        }
    }

    #[test]
    fn taken_in_chunks_two_runs_or_more_merge_as_row_by_row() {
        // Ids interleaved at random among the runs, slices of uneven sizes
        // (one empty), one run longer than the others: the two-run loop
        // ends at slice bounds, at a chunk's end and where a run runs out.
        let mut rng = crate::gen::SplitMix64::new(5);
        for runs in [1, 2, 3] {
            let mut rows: Vec<Vec<MemberRow>> = vec![Vec::new(); runs];
            for id in 0..5_000i64 {
                let run = if id > 4_000 {
                    0
                } else {
                    rng.below(runs as u64) as usize
                };
                rows[run].push((id, id / 7, 1 + (id % 5) as u32));
            }
            let slices = || {
                let mut slices = Vec::new();
                for (run, rows) in rows.iter().enumerate() {
                    let (mut start, mut seq) = (0, 0);
                    while start <= rows.len() {
                        let end = (start + seq * 37 % 300).min(rows.len());
                        slices.push((run as u32, seq as u32, rows[start..end].to_vec()));
                        (start, seq) = (end + usize::from(end == rows.len()), seq + 1);
                    }
                }
                slices
            };
            let expected: Vec<MemberRow> = Merged::new(slices()).collect();
            assert!(expected.iter().zip(0..5_000).all(|(row, id)| row.0 == id));
            for chunk in [1, 7, 256, 10_000] {
                let mut merged = Merged::new(slices());
                let mut got = Vec::new();
                while got.len() < expected.len() {
                    let before = got.len();
                    merged.take_into(chunk, |row| got.push(row));
                    assert_eq!(got.len() - before, chunk.min(expected.len() - before));
                }
                merged.take_into(chunk, |row| got.push(row));
                assert_eq!(got, expected, "{runs} runs, chunks of {chunk}");
            }
        }
    }

    #[test]
    fn rows_go_to_their_pages_part() {
        let parts = 4;
        let rows: Vec<(i64, i64)> = (0..200).map(|i| (i, i / 10 * 10)).collect();
        let mut by_part: Vec<PartRuns> = (0..parts).map(|_| PartRuns::default()).collect();
        for slice in slices_of(0, parts, &rows) {
            by_part[slice.part as usize].add(slice);
        }
        let (mut members, mut drops) = (0, 0);
        for (p, part) in by_part.iter_mut().enumerate() {
            let mut last = i64::MIN;
            for (id, _, _) in part.members() {
                assert_eq!(placement_part(id, parts), p as u32);
                assert!(id > last);
                last = id;
                members += 1;
            }
            for (id, keep, _) in part.drops() {
                assert_eq!(placement_part(id, parts), p as u32);
                assert_eq!(keep, id / 10 * 10);
                drops += 1;
            }
        }
        assert_eq!((members, drops), (200, 180));
    }
}
