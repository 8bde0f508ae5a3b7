//! The query side: B's distinct fingerprints with their ids, and the
//! pigeonhole tables built over them once per process.
//!
//! B's distinct fingerprints are stored once, each with its list of ids
//! (a *group*). A table buckets them by the leading `ceil(log2 |B|)` bits
//! of its key (a directory of offsets, about one bucket per group), holding
//! the original fingerprints. Per entry a table keeps 32 bits in a row with
//! the fewest key bits (the *residue*, which the kernels compare: two
//! fingerprints within k differ in at most k of any of their bits), the other 32 bits in
//! a parallel array, and the group. Each bucket also has a 64-bit *filter
//! word*: bit `j` is set when an entry has `j` as the next 6 bits of its
//! key. For keys of up to the index bits plus 6 (the usual case) the filter
//! is exact: a probe that finds its bit clear has no candidate there.
//!
//! The build runs on every worker's thread of the process: B is read and
//! sorted in pieces, then ordered once by the leading bits of each distinct
//! lead block (shared by every table whose key starts with it), and each
//! table is a counting sort within each lead partition (about 100 entries,
//! whose counters stay in L1), the tables in parallel.

use crate::exec::parallel::in_parallel;
use crate::exec::parallel::prefetch;
use crate::exec::sorting::scatter_sorted_runs;
use crate::io::parquet::Sketch;
use crate::matching::design::{Block, Design, TableSpec, BITS};
use crate::matching::kernel::Kernel;
use crate::matching::lead_groups::{lead_groups, LeadGroup};
use std::sync::OnceLock;

/// A piece of B as read: its ids, fingerprints and, when asked, sketches.
pub(crate) struct QueryRows {
    pub(crate) ids: Vec<i64>,
    pub(crate) fingerprints: Vec<u64>,
    pub(crate) sketches: Vec<Sketch>,
}

/// B with every distinct fingerprint stored once.
///
/// A fingerprint shared by many query rows is one *group*: the tables hold the
/// group once, so a corpus row checks it once, and a match expands to every id
/// of the group only when it is emitted.
#[derive(Debug, Default)]
pub struct QuerySet {
    /// Distinct fingerprints, ascending.
    fingerprints: Vec<u64>,
    /// `ids[starts[g]..starts[g + 1]]` are the ids of group `g`, ascending.
    starts: Vec<u32>,
    ids: Vec<i64>,
}

impl QuerySet {
    /// Groups `(fingerprint, id)` rows by fingerprint. Repeated rows collapse.
    pub fn from_rows(rows: Vec<(u64, i64)>) -> QuerySet {
        QuerySet::from_runs(vec![rows], 1)
    }

    /// [`Self::from_rows`] of the rows of several runs, as one, sorted on
    /// `threads` threads: the same set whatever the runs and threads.
    pub(crate) fn from_runs(runs: Vec<Vec<(u64, i64)>>, threads: usize) -> QuerySet {
        let rows = sort_by_fingerprint_then_id(runs, threads);
        let mut set = QuerySet {
            fingerprints: Vec::with_capacity(rows.len()),
            starts: Vec::with_capacity(rows.len() + 1),
            ids: Vec::with_capacity(rows.len()),
        };
        // Repeated rows are next to each other: skipped in the same pass.
        let mut last = None;
        for row @ (fingerprint, id) in rows {
            if last == Some(row) {
                continue;
            }
            last = Some(row);
            if set.fingerprints.last() != Some(&fingerprint) {
                set.fingerprints.push(fingerprint);
                set.starts.push(set.ids.len() as u32);
            }
            set.ids.push(id);
        }
        set.starts.push(set.ids.len() as u32);
        set
    }

    /// Number of distinct fingerprints.
    pub fn groups(&self) -> usize {
        self.fingerprints.len()
    }

    /// Number of distinct (id, fingerprint) rows.
    pub(crate) fn rows(&self) -> usize {
        self.ids.len()
    }

    /// The fingerprint of group `g`.
    pub(crate) fn fingerprint(&self, g: u32) -> u64 {
        self.fingerprints[g as usize]
    }

    /// The row of group `g`'s first id: its ids are rows `first_row(g)..`
    /// in order (every row sorted by fingerprint, then id).
    pub(crate) fn first_row(&self, g: u32) -> usize {
        self.starts[g as usize] as usize
    }

    /// The ids of group `g`, ascending.
    pub(crate) fn ids(&self, g: u32) -> &[i64] {
        let g = g as usize;
        &self.ids[self.starts[g] as usize..self.starts[g + 1] as usize]
    }

    /// Every distinct id of B, ascending.
    pub(crate) fn sorted_ids(&self) -> Vec<i64> {
        let mut ids = self.ids.clone();
        radsort::sort(&mut ids);
        ids.dedup();
        ids
    }
}

/// Sorts rows as `sort_unstable` would: one counting scatter by the
/// leading bits of the fingerprint into buckets of about 16 rows, then each
/// bucket by a comparison sort. Two linear passes where a full radix sort
/// makes eight.
fn sort_by_fingerprint_then_id(runs: Vec<Vec<(u64, i64)>>, threads: usize) -> Vec<(u64, i64)> {
    let sorter = || |_: usize, bucket: &mut [(u64, i64)]| bucket.sort_unstable();
    scatter_sorted_runs(runs, |&(f, _)| f, 16, threads, sorter)
}

/// The left rotation that brings to the top the 32 bits (cyclically in a
/// row) with the fewest key bits, the first such window from the end of
/// `lead`: a key bit is equal in every entry of a bucket, so each key bit
/// in the residue is a bit that no longer tells candidates apart (at k = 6
/// the window just after the lead block holds a second key block).
fn residue_rotation(spec: &TableSpec, lead: Block) -> u32 {
    let after_lead = lead.start + lead.len;
    let key_bits_in = |rotation: u32| (spec.key_mask.rotate_left(rotation) >> 32).count_ones();
    (0..64)
        .map(|step| (after_lead + step) % 64)
        .min_by_key(|&rotation| key_bits_in(rotation))
        .expect("64 rotations")
}

/// `f`'s residue (the top 32 bits once rotated left by `rotation`) and the
/// rest; [`join_at_residue`] puts them back together.
#[inline(always)]
fn split_at_residue(f: u64, rotation: u32) -> (u32, u32) {
    let rotated = f.rotate_left(rotation);
    ((rotated >> 32) as u32, rotated as u32)
}

/// The fingerprint whose residue and rest under `rotation` these are.
#[inline(always)]
fn join_at_residue(residue: u32, rest: u32, rotation: u32) -> u64 {
    (u64::from(residue) << 32 | u64::from(rest)).rotate_right(rotation)
}

/// One table: B's fingerprints bucketed by the table's key prefix.
#[derive(Debug)]
pub(crate) struct Table {
    /// One word per bucket: bit `j` is set when some entry of the bucket has
    /// `j` as the next [`crate::matching::design::FILTER_BITS`] bits of its key. A probe
    /// reads this word alone, and only a set bit (about one probe in 64 for
    /// the usual one entry per bucket) goes on to the entries: every pair's
    /// key matches exactly, so its bit is set.
    filters: Vec<u64>,
    /// `entries[offsets[b]..offsets[b + 1]]` is bucket `b`. Never
    /// decreasing, and ending at the number of entries: unsafe code relies
    /// on it ([`Table::directory`]).
    offsets: Vec<u32>,
    /// 32 bits of each entry's fingerprint, outside the table's key where
    /// they can be ([`Table::residue`]), in bucket order. Two fingerprints within k
    /// differ in at most k of any of their bits, so the kernels compare
    /// these (the wide one 16 to an AVX-512 vector, where whole fingerprints
    /// took 8) and read the whole fingerprint (with `rests`) only for the
    /// few entries that pass: one in a million random ones.
    residues: Vec<u32>,
    /// The other 32 bits of each entry's fingerprint, parallel to `residues`:
    /// read only for the entries that pass, and then with one cache miss
    /// (looking the fingerprint up through the group took two, dependent).
    rests: Vec<u32>,
    /// The group of each entry, parallel to `residues`; read only on a match.
    groups: Vec<u32>,
    /// Left rotation that brings the residue's bits to the top.
    residue_rotation: u32,
}

/// Zero residues after the last bucket's: a vector read from any of a
/// bucket's first 64 entries stays inside the residues, so the wide kernel
/// loads whole vectors and drops the lanes past the bucket only in the rare
/// bucket with a lane near (masking each load by the bucket's length cost
/// the AVX2 loop two instructions a vector, in the hot path).
pub(crate) const RESIDUE_PADDING: usize = 64;

impl Table {
    /// Buckets every group of `order` (B in its lead block's order) by the
    /// table's key prefix: a counting sort within each lead partition, whose
    /// ~100 entries and their buckets' counters stay in L1, where one sort
    /// over all 2^index_bits buckets missed the cache on nearly every entry.
    /// Each bucket lists its fingerprints in ascending order, so the layout
    /// is deterministic.
    fn build(spec: &TableSpec, lead: Block, order: &LeadOrder) -> Table {
        let n = order.fingerprints.len();
        let local_bits = spec.index_bits - order.bits;
        let local_mask = (1usize << local_bits) - 1;
        let mut filters = vec![0u64; spec.buckets()];
        let mut offsets = vec![0u32; spec.buckets() + 1];
        let residue_rotation = residue_rotation(spec, lead);
        let mut residues = vec![0u32; n + RESIDUE_PADDING];
        let mut rests = vec![0u32; n];
        let mut groups = vec![0u32; n];
        let mut fill = vec![0u32; 1 << local_bits];
        for (partition, range) in order.partitions().enumerate() {
            let first_bucket = partition << local_bits;
            let entries = &order.fingerprints[range.clone()];
            fill.fill(0);
            for &f in entries {
                let key = spec.probe_key(f);
                let bucket = spec.bucket_of(key);
                filters[bucket] |= spec.filter_bit(key);
                fill[bucket & local_mask] += 1;
            }
            let mut next = range.start as u32;
            for (local, slot) in fill.iter_mut().enumerate() {
                offsets[first_bucket + local] = next;
                next += std::mem::replace(slot, next);
            }
            for (&f, &g) in entries.iter().zip(&order.groups[range]) {
                let slot = &mut fill[spec.bucket(f) & local_mask];
                let (residue, rest) = split_at_residue(f, residue_rotation);
                residues[*slot as usize] = residue;
                rests[*slot as usize] = rest;
                groups[*slot as usize] = g;
                *slot += 1;
            }
        }
        offsets[spec.buckets()] = n as u32;
        Table {
            filters,
            offsets,
            residues,
            rests,
            groups,
            residue_rotation,
        }
    }

    /// The fingerprint of entry `e`.
    #[inline(always)]
    pub(crate) fn fingerprint(&self, e: usize) -> u64 {
        join_at_residue(self.residues[e], self.rests[e], self.residue_rotation)
    }

    /// Warms the cache for [`Table::fingerprint`] of entry `e`: its rest,
    /// which no probe read, is what misses.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub(crate) fn prefetch_fingerprint(&self, e: usize) {
        if let Some(rest) = self.rests.get(e) {
            crate::exec::parallel::prefetch(rest);
        }
    }

    /// The 32 bits of `f` that the table's residues hold: 32 in a row,
    /// wrapping around, with the fewest key bits (equal in every entry of a
    /// bucket). Any 32 bits would keep the check exact; these make it
    /// sharpest.
    #[inline(always)]
    pub(crate) fn residue(&self, f: u64) -> u32 {
        self.residue_rule()(f)
    }

    /// [`Table::residue`] as a copy of its rule: a kernel's hot loop keeps
    /// it in a register instead of reading it from the table for each row.
    #[inline(always)]
    pub(crate) fn residue_rule(&self) -> impl Fn(u64) -> u32 + Copy {
        let rotation = self.residue_rotation;
        move |f| split_at_residue(f, rotation).0
    }

    /// The bucket directory and the residues: bucket `b`'s residues are
    /// `residues[offsets[b] as usize..offsets[b + 1] as usize]`. For a
    /// kernel's hot loop, which then keeps both slices in registers.
    /// `offsets` has an entry per bucket and one more, never decreases and
    /// ends [`RESIDUE_PADDING`] entries before `residues.len()`
    /// ([`Table::build`] makes it so, and nothing changes it): the wide
    /// kernel reads a bucket's first 64 residues unchecked on that promise.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub(crate) fn directory(&self) -> (&[u32], &[u32]) {
        (&self.offsets, &self.residues)
    }

    /// The residues of entries `entries` (a bucket's).
    #[inline(always)]
    pub(crate) fn residues_of(&self, entries: std::ops::Range<usize>) -> &[u32] {
        &self.residues[entries]
    }

    /// Asks the CPU to fetch bucket `b`'s first residue into cache.
    #[inline(always)]
    pub(crate) fn prefetch_residues(&self, b: usize) {
        if let Some(r) = self.residues.get(self.offsets[b] as usize) {
            prefetch(r);
        }
    }

    /// Whether bucket `b` may hold an entry whose key starts with the probe key
    /// `probe_key`; false means it certainly does not.
    #[cfg(test)]
    pub(crate) fn may_hold(&self, spec: &TableSpec, b: usize, probe_key: u64) -> bool {
        self.filters[b] & spec.filter_bit(probe_key) != 0
    }

    /// The filter word of every bucket, indexed by bucket.
    #[inline(always)]
    pub(crate) fn filters(&self) -> &[u64] {
        &self.filters
    }

    /// Asks the CPU to fetch bucket `b`'s directory entry into cache.
    #[inline(always)]
    pub(crate) fn prefetch_directory(&self, b: usize) {
        prefetch(&self.offsets[b]);
    }

    /// The entries of bucket `b`.
    #[inline(always)]
    pub(crate) fn bucket_entries(&self, b: usize) -> std::ops::Range<usize> {
        self.offsets[b] as usize..self.offsets[b + 1] as usize
    }

    #[inline(always)]
    pub(crate) fn group(&self, entry: usize) -> u32 {
        self.groups[entry]
    }
}

/// B's groups ordered by the leading `bits` bits of one block (stable, so
/// ascending within a partition): the shared first pass of every table whose
/// key starts with that block.
#[derive(Debug)]
struct LeadOrder {
    bits: u32,
    /// `fingerprints[starts[p]..starts[p + 1]]` have partition `p`.
    starts: Vec<u32>,
    fingerprints: Vec<u64>,
    groups: Vec<u32>,
}

impl LeadOrder {
    /// Orders `queries` by the first `bits` bits of `block`.
    fn new(queries: &QuerySet, block: Block, bits: u32) -> LeadOrder {
        debug_assert!(bits <= block.len);
        let shift = BITS - block.start - bits;
        let mask = (1u64 << bits) - 1;
        let partition = |f: u64| (f.checked_shr(shift).unwrap_or(0) & mask) as usize;
        let mut starts = vec![0u32; (1 << bits) + 1];
        for &f in &queries.fingerprints {
            starts[partition(f) + 1] += 1;
        }
        for p in 0..1 << bits {
            starts[p + 1] += starts[p];
        }
        let n = queries.groups();
        let mut fill = starts.clone();
        let mut fingerprints = vec![0u64; n];
        let mut groups = vec![0u32; n];
        for (g, &f) in queries.fingerprints.iter().enumerate() {
            let slot = &mut fill[partition(f)];
            fingerprints[*slot as usize] = f;
            groups[*slot as usize] = g as u32;
            *slot += 1;
        }
        LeadOrder {
            bits,
            starts,
            fingerprints,
            groups,
        }
    }

    /// The entries of each partition, in partition order.
    fn partitions(&self) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        self.starts.windows(2).map(|w| w[0] as usize..w[1] as usize)
    }
}

/// B, its design and its tables: everything a worker probes, shared read-only
/// by all worker threads of a process.
#[derive(Debug)]
pub struct Index {
    pub(crate) design: Design,
    pub(crate) queries: QuerySet,
    pub(crate) tables: Vec<Table>,
    /// How the probe kernel partitions corpus rows for cache locality.
    pub(crate) lead_groups: Vec<LeadGroup>,
    /// The kernel that probes them: this CPU's best unless
    /// [`Index::probed_by`] says otherwise.
    pub(crate) kernel: Kernel,
}

impl Index {
    /// Builds every table of `design` over `queries` on up to `threads`
    /// threads, each table from its lead group's [`LeadOrder`] (the tables
    /// sharing their first key block share it). The first table of a group
    /// to be built makes the group's order: the tasks take every group's
    /// first table before any group's second, so a thread waits on an order
    /// another is making only when threads outnumber groups, and none waits
    /// for the others between the orders and the tables (made in two
    /// rounds, a thread done with its orders would wait for the others).
    pub fn build(design: Design, queries: QuerySet, threads: usize) -> Index {
        let lead_groups = lead_groups(&design);
        let order_of = |g: usize| {
            let tables = lead_groups[g].tables();
            let block = design.blocks[design.tables[tables[0]].blocks[0]];
            let bits = tables
                .iter()
                .map(|&t| design.tables[t].index_bits.min(block.len))
                .min()
                .unwrap_or(0);
            LeadOrder::new(&queries, block, bits)
        };
        let orders: Vec<OnceLock<LeadOrder>> =
            lead_groups.iter().map(|_| OnceLock::new()).collect();
        let lists: Vec<&[usize]> = lead_groups.iter().map(LeadGroup::tables).collect();
        let tasks = tables_by_rank_in_group(&lists);
        let mut built = in_parallel(tasks.len(), threads, |task| {
            let (g, t) = tasks[task];
            let order = orders[g].get_or_init(|| order_of(g));
            let lead = design.blocks[design.tables[t].blocks[0]];
            (t, Table::build(&design.tables[t], lead, order))
        });
        built.sort_unstable_by_key(|&(t, _)| t);
        let tables = built.into_iter().map(|(_, table)| table).collect();
        Index {
            design,
            queries,
            tables,
            lead_groups,
            kernel: Kernel::best().0,
        }
    }

    /// The index probed by `kernel`, which this CPU must run
    /// ([`Kernel::choose`]).
    pub fn probed_by(self, kernel: Kernel) -> Index {
        Index { kernel, ..self }
    }
}

/// Every table of `groups` (each group's tables) as `(group, table)`: each
/// group's first table, then each group's second, and so on.
fn tables_by_rank_in_group(groups: &[&[usize]]) -> Vec<(usize, usize)> {
    let most = groups.iter().map(|tables| tables.len()).max().unwrap_or(0);
    (0..most)
        .flat_map(|rank| {
            groups
                .iter()
                .enumerate()
                .filter_map(move |(g, tables)| tables.get(rank).map(|&t| (g, t)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_sort_as_a_comparison_sort_would() {
        let mut rng = crate::random::SplitMix64::new(3);
        // Below and above the size that scatters first; fingerprints
        // crowded into a few hundred of the scatter's buckets, and spread.
        for (n, spread) in [(50_000, false), (300_000, false), (300_000, true)] {
            let mut rows: Vec<(u64, i64)> = (0..n)
                .map(|_| {
                    let f = if spread {
                        rng.next_u64()
                    } else {
                        rng.below(5_000) << 50 | rng.below(4)
                    };
                    (f, rng.next_u64() as i64 >> rng.below(60))
                })
                .collect();
            rows.extend([(u64::MAX, i64::MIN), (0, i64::MAX), (u64::MAX, -1)]);
            let mut want = rows.clone();
            want.sort_unstable();
            // Whole, and cut into runs sorted on several threads.
            let runs: Vec<Vec<(u64, i64)>> = rows.chunks(70_001).map(<[_]>::to_vec).collect();
            assert_eq!(sort_by_fingerprint_then_id(runs, 3), want, "n={n}");
            assert_eq!(sort_by_fingerprint_then_id(vec![rows], 1), want, "n={n}");
        }
    }

    #[test]
    fn every_groups_first_table_is_built_before_any_groups_second() {
        let groups: [&[usize]; 3] = [&[0, 1], &[2], &[3, 4, 5]];
        assert_eq!(
            tables_by_rank_in_group(&groups),
            vec![(0, 0), (1, 2), (2, 3), (0, 1), (2, 4), (2, 5)]
        );
        assert!(tables_by_rank_in_group(&[]).is_empty());
    }

    #[test]
    fn groups_share_fingerprints_and_collapse_repeated_rows() {
        let q = QuerySet::from_rows(vec![(5, 2), (5, 1), (9, 3), (5, 2)]);
        assert_eq!(q.groups(), 2);
        assert_eq!(q.rows(), 3);
        assert_eq!(q.ids(0), &[1, 2]);
        assert_eq!(q.fingerprint(1), 9);
        assert_eq!(q.ids(1), &[3]);
        assert_eq!(q.sorted_ids(), vec![1, 2, 3]);
    }

    #[test]
    fn every_group_sits_in_its_bucket_of_every_table() {
        let rows: Vec<(u64, i64)> = (0..5000u64)
            .map(|i| {
                (
                    i.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17),
                    i as i64,
                )
            })
            .collect();
        let queries = QuerySet::from_rows(rows);
        let design = Design::new(queries.groups() as u64, 3, 5);
        let index = Index::build(design, queries, 3);
        for (t, table) in index.tables.iter().enumerate() {
            let spec = &index.design.tables[t];
            let mut seen = 0;
            for b in 0..spec.buckets() {
                let bucket = table.bucket_entries(b);
                for (e, &residue) in bucket.clone().zip(table.residues_of(bucket)) {
                    let f = table.fingerprint(e);
                    assert_eq!(index.queries.fingerprint(table.group(e)), f);
                    assert_eq!(spec.bucket(f), b);
                    assert!(table.may_hold(spec, b, spec.probe_key(f)));
                    assert_eq!(table.residue(f), residue);
                    seen += 1;
                }
            }
            assert_eq!(seen, index.queries.groups());
        }
    }

    /// The table as one stable counting sort over all buckets lays it out.
    fn reference_table(spec: &TableSpec, lead: Block, queries: &QuerySet) -> Table {
        let mut filters = vec![0u64; spec.buckets()];
        let mut offsets = vec![0u32; spec.buckets() + 1];
        for &f in &queries.fingerprints {
            let key = spec.probe_key(f);
            filters[spec.bucket_of(key)] |= spec.filter_bit(key);
            offsets[spec.bucket_of(key) + 1] += 1;
        }
        for b in 0..spec.buckets() {
            offsets[b + 1] += offsets[b];
        }
        let mut fill = offsets.clone();
        let residue_rotation = residue_rotation(spec, lead);
        let mut residues = vec![0u32; queries.groups() + RESIDUE_PADDING];
        let mut rests = vec![0u32; queries.groups()];
        let mut groups = vec![0u32; queries.groups()];
        for (g, &f) in queries.fingerprints.iter().enumerate() {
            let slot = &mut fill[spec.bucket(f)];
            (residues[*slot as usize], rests[*slot as usize]) =
                split_at_residue(f, residue_rotation);
            groups[*slot as usize] = g as u32;
            *slot += 1;
        }
        Table {
            filters,
            offsets,
            residues,
            rests,
            groups,
            residue_rotation,
        }
    }

    #[test]
    fn residues_hold_32_bits_outside_the_key_where_they_can_and_never_add_distance() {
        let mut rng = crate::random::SplitMix64::new(9);
        for (n, k, m) in [
            (1 << 20, 3, 4),
            (1 << 20, 3, 5),
            (1 << 20, 6, 8),
            (1 << 24, 6, 9),
            (100, 0, 1),
        ] {
            let design = Design::new(n, k, m);
            let queries = QuerySet::from_rows(vec![(0, 0)]);
            let index = Index::build(design, queries, 1);
            for (spec, table) in index.design.tables.iter().zip(&index.tables) {
                let key_bits = table.residue(spec.key_mask).count_ones();
                let blocks = &spec.blocks;
                let lead = index.design.blocks[blocks[0]];
                match (k, m) {
                    // One key block of 16: the 32 bits after it.
                    (3, 4) => assert_eq!(key_bits, 0, "{blocks:?}"),
                    // Eight blocks of 8, two of them the key: four free
                    // blocks in a row unless the key's are four apart.
                    (6, 8) => {
                        let apart = (blocks[1] - blocks[0]) % 4 == 0;
                        assert_eq!(key_bits, if apart { 8 } else { 0 }, "{blocks:?}");
                    }
                    _ => {}
                }
                if lead.len < 64 {
                    assert!(key_bits < 32, "k={k} m={m} {blocks:?}");
                }
                assert_eq!(table.residue(u64::MAX).count_ones(), 32);
                for _ in 0..1000 {
                    let (a, b) = (rng.next_u64(), rng.next_u64() >> rng.below(64));
                    let residue_distance = (table.residue(a) ^ table.residue(b)).count_ones();
                    assert!(residue_distance <= (a ^ b).count_ones());
                    let (residue, rest) = split_at_residue(a, table.residue_rotation);
                    assert_eq!(join_at_residue(residue, rest, table.residue_rotation), a);
                }
            }
        }
    }

    #[test]
    fn tables_built_from_lead_orders_equal_one_counting_sort() {
        let mut rng = crate::random::SplitMix64::new(7);
        for (n, k, m) in [
            (0, 3, 5),
            (1, 3, 5),
            (2, 0, 1),
            (300, 1, 2),
            (5_000, 3, 4),
            (20_000, 3, 5),
            (20_000, 3, 6),
            (20_000, 6, 9),
            (70_000, 2, 4),
        ] {
            // Clustered fingerprints too: many share their lead bits.
            let rows: Vec<(u64, i64)> = (0..n)
                .map(|i| {
                    let f = rng.next_u64();
                    (if i % 3 == 0 { f >> 40 } else { f }, i as i64)
                })
                .collect();
            let queries = QuerySet::from_rows(rows);
            let design = Design::new(queries.groups() as u64, k, m);
            let index = Index::build(design, queries, 3);
            for (spec, table) in index.design.tables.iter().zip(&index.tables) {
                let lead = index.design.blocks[spec.blocks[0]];
                let want = reference_table(spec, lead, &index.queries);
                assert_eq!(table.filters, want.filters, "n={n} k={k} m={m}");
                assert_eq!(table.offsets, want.offsets, "n={n} k={k} m={m}");
                assert_eq!(table.residues, want.residues);
                assert_eq!(table.rests, want.rests);
                assert_eq!(table.groups, want.groups);
            }
        }
    }
}
