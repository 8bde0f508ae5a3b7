//! The probe kernel: corpus fingerprints against B's tables.
//!
//! This loop is the product's hot path: every corpus fingerprint visits one
//! bucket in each table. Probed in arrival order, each visit is a random read
//! into tables far larger than the CPU caches (4 to 10 tables of 1M entries
//! for |B| = 1M, k = 3), and the scan runs at the speed of memory latency.
//!
//! So a large batch of corpus rows is first *radix-partitioned* by the leading
//! bits of a table's first key block: the rows of one partition can only
//! visit one contiguous slice of that table's buckets, small enough to stay in
//! the CPU cache while the partition is probed. Tables sharing their first key
//! block share the partitioning pass. Partitioning changes only the order of
//! the visits, never which buckets are visited, so the result is the same.
//!
//! Each worker probes batches of 1M corpus rows. A batch is partitioned (16
//! ways for |B| = 1M) by the leading bits of each table's first key block,
//! the counts of every lead group taken in one pass, so that a partition's
//! probes of one table stay in a slice of it that fits in L2. Not when the
//! pass costs more than it spares ([`partitioning_pays`]): a wide design of
//! one table a lead group and about a cache line a bucket probes in arrival
//! order, the lines its buckets' first vectors read prefetched ahead.
//!
//! Two kernels check the candidates, both by residue first (32 bits in a
//! row with the fewest of the table's key bits, [`crate::matching::tables`];
//! the whole fingerprint is read only for an entry within k on its residue):
//! - the *wide* kernel (x86-64 with AVX-512 or AVX2, whatever the design)
//!   takes each row's bucket whole. Its first vectors of residues (the mean
//!   bucket length plus two standard deviations: 2 vectors of 16 with
//!   AVX-512, 3 of 8 with AVX2) are XORed with the row's, counted and
//!   compared with k, with no branch on the length: the vectors are read
//!   whole (the residues end in padding), and the lanes past the bucket are
//!   dropped by its length only in a bucket with a lane near. AVX-512 counts
//!   with VPOPCNTD into a mask register. AVX2, for k up to 3, clears each
//!   lane's lowest set bit k times and joins the vectors by their minimum,
//!   one test for zero a row; for a larger k it counts by a nibble table
//!   (`vpshufb`). Longer buckets loop on. Every line the first vectors of a
//!   bucket read is prefetched 16 rows ahead (a bucket of about a line starts
//!   mid-line, so it nearly always spans two), and its directory entry 32
//!   rows ahead, so that reading it for that prefetch waits on no miss (a
//!   directory larger than L2 stalled the loop there); a bucket with an
//!   entry near the row is only noted, and checked after the loop, where its
//!   cache misses overlap; the directory is read through bucket numbers
//!   masked to its size, unchecked;
//! - the *filter-word* kernel (every other CPU, which the planner gives many
//!   tables of long keys) runs three tight loops per table and partition:
//!   probe keys for 256 rows at a time; one load of a filter word and one bit
//!   test per key, writing every probe's slot and advancing only on a set
//!   bit, so no branch depends on the data; then the probes with a set bit
//!   (about 2% for |B| = 1M) have their buckets checked exactly, each
//!   bucket's directory entry and first entry prefetched a few hits ahead.
//!
//! The binary targets x86-64-v2; the kernels are also compiled for AVX2 and
//! BMI2 (and AVX-512), picked at run time. The tests run the portable
//! kernel and every variant of the wide one the CPU can run.

use crate::matching::design::Design;
use crate::matching::kernel::Kernel;
use crate::matching::lead_groups::LeadGroup;
use crate::matching::tables::Index;

/// A corpus row within distance k of a group of B.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Match {
    /// Row of the probed slice.
    pub(crate) row: u32,
    /// Group of B (a distinct query fingerprint).
    pub(crate) group: u32,
    /// Hamming distance.
    pub(crate) distance: u8,
}

/// Probe keys computed at a time, on the stack, before their buckets are read.
const KEY_CHUNK: usize = 256;
/// How many hits ahead the bucket's entries are prefetched (its directory
/// entry twice as far ahead).
const PREFETCH_HITS: usize = 8;
/// Batches smaller than this are probed directly: partitioning would not pay.
const MIN_PARTITIONED_ROWS: usize = 1 << 14;

/// Reusable buffers of one probing worker.
#[derive(Default)]
pub struct Scratch {
    fingerprints: Vec<u64>,
    rows: Vec<u32>,
    starts: Vec<u32>,
    /// Every lead group's partition sizes ([`count_partitions`]), and where
    /// each group's start.
    counts: Vec<u32>,
    counted: Vec<usize>,
    hits: Vec<(u32, u32)>,
    /// The wide kernel's buckets with entries near a row, per table slice.
    #[cfg(target_arch = "x86_64")]
    near_buckets: Vec<wide::NearBucket>,
}

/// Appends to `out` every `(row, group)` of `corpus` within distance k, each
/// exactly once: a pair seen in several tables is kept only by its owner table.
pub fn probe(index: &Index, corpus: &[u64], scratch: &mut Scratch, out: &mut Vec<Match>) {
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = index.kernel.simd() {
        // SAFETY: this CPU has every feature of `simd` ([`Kernel::choose`]).
        return unsafe { wide::probe(simd, index, corpus, scratch, out) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("bmi2") && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: this CPU has every feature `probe_x86_64_v3` is compiled
        // for, as checked just above.
        return unsafe { probe_x86_64_v3(index, corpus, scratch, out) };
    }
    probe_batch(index, corpus, scratch, out)
}

/// The kernel compiled for x86-64-v3 CPUs (2013 on), while the crate is
/// built for x86-64-v2 so that it still runs on older ones. Key extraction
/// shifts by amounts held in registers; BMI2's shifts take them in any
/// register instead of only `cl`, which saves a move per shift on the hot path.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi1,bmi2,lzcnt,avx2")]
unsafe fn probe_x86_64_v3(
    index: &Index,
    corpus: &[u64],
    scratch: &mut Scratch,
    out: &mut Vec<Match>,
) {
    probe_batch(index, corpus, scratch, out)
}

/// [`probe`] for any CPU, inlined into each compiled variant.
#[inline(always)]
fn probe_batch(index: &Index, corpus: &[u64], scratch: &mut Scratch, out: &mut Vec<Match>) {
    probe_partitioned(index, corpus, scratch, out, probe_slice);
}

/// Partitions `corpus` for each lead group (see the module's doc) and hands
/// every partition's rows to `probe_slice` once per table of the group.
#[inline(always)]
fn probe_partitioned(
    index: &Index,
    corpus: &[u64],
    scratch: &mut Scratch,
    out: &mut Vec<Match>,
    mut probe_slice: impl FnMut(&Index, usize, &[u64], &[u32], &mut Vec<(u32, u32)>, &mut Vec<Match>),
) {
    let partitioned = corpus.len() >= MIN_PARTITIONED_ROWS
        && index.lead_groups.iter().any(|g| g.mask > 0)
        && partitioning_pays(index.kernel, &index.design, &index.lead_groups);
    if !partitioned {
        scratch.rows.clear();
        scratch.rows.extend(0..corpus.len() as u32);
        for t in 0..index.tables.len() {
            probe_slice(index, t, corpus, &scratch.rows, &mut scratch.hits, out);
        }
        return;
    }
    count_partitions(corpus, &index.lead_groups, scratch);
    for (g, group) in index.lead_groups.iter().enumerate() {
        partition(corpus, group, g, scratch);
        for p in 0..scratch.starts.len() - 1 {
            let range = scratch.starts[p] as usize..scratch.starts[p + 1] as usize;
            let fingerprints = &scratch.fingerprints[range.clone()];
            let rows = &scratch.rows[range];
            for &t in group.tables() {
                probe_slice(index, t, fingerprints, rows, &mut scratch.hits, out);
            }
        }
    }
}

/// Residues in a cache line.
const LINE_RESIDUES: usize = 16;

/// Whether partitioning a batch pays for `index`'s kernel. The pass counts
/// and scatters the batch once per lead group, to spare each table's probes
/// their cache misses; a wide design whose lead groups are one table each,
/// its buckets about a line (|B| = 1M, k = 3: 4 tables of 16 residues),
/// reads too little a row for the pass to pay. Filter words, several tables
/// a group (larger k) and longer buckets (larger B, k = 4) keep it.
fn partitioning_pays(kernel: Kernel, design: &Design, lead_groups: &[LeadGroup]) -> bool {
    kernel == Kernel::Portable
        || design.expected_candidates > LINE_RESIDUES as f64
        || lead_groups.iter().any(|g| g.tables().len() > 1)
}

/// Probes rows against table `t`; for a partition, the buckets of these rows
/// all lie in one cache-sized slice. Three steps, each a loop doing one thing:
/// - probe keys for a chunk of rows, computed several per vector instruction;
/// - per key, one load of the bucket's filter word and one bit test, with no
///   branch on the data: every probe writes its slot in `hits`, and only a set
///   filter bit advances past it, so the rare hits cost no mispredictions;
/// - the hits' buckets, whose directory entries and first residues are
///   prefetched a few hits ahead so that their cache misses overlap.
#[inline(always)]
fn probe_slice(
    index: &Index,
    t: usize,
    fingerprints: &[u64],
    rows: &[u32],
    hits: &mut Vec<(u32, u32)>,
    out: &mut Vec<Match>,
) {
    let spec = &index.design.tables[t];
    let table = &index.tables[t];
    // A local slice keeps the filters' address and length in registers: the
    // stores to `slots` would otherwise make the loop reload them per probe.
    let filters = table.filters();
    if hits.len() < fingerprints.len() {
        hits.resize(fingerprints.len(), (0, 0));
    }
    let slots = &mut hits[..fingerprints.len()];
    let filter_bits = spec.filter_bits;
    let filter_mask = (1u64 << filter_bits) - 1;
    let mut found = 0;
    let mut keys = [0u32; KEY_CHUNK];
    for (c, chunk) in fingerprints.chunks(KEY_CHUNK).enumerate() {
        let keys = &mut keys[..chunk.len()];
        spec.probe_keys(chunk, keys);
        for (j, &key) in keys.iter().enumerate() {
            let b = (key >> filter_bits) as usize;
            slots[found] = ((c * KEY_CHUNK + j) as u32, b as u32);
            found += ((filters[b] >> (u64::from(key) & filter_mask)) & 1) as usize;
        }
    }
    let hits = &slots[..found];
    for (j, &(i, b)) in hits.iter().enumerate() {
        if let Some(&(_, ahead)) = hits.get(j + 2 * PREFETCH_HITS) {
            table.prefetch_directory(ahead as usize);
        }
        if let Some(&(_, ahead)) = hits.get(j + PREFETCH_HITS) {
            table.prefetch_residues(ahead as usize);
        }
        scan_bucket(
            index,
            t,
            fingerprints[i as usize],
            rows[i as usize],
            b as usize,
            out,
        );
    }
}

/// Counts the rows of `corpus` in each partition of every lead group, in one
/// pass over the batch (a batch of 1M rows is larger than L2). The groups'
/// counters are apart, so consecutive increments seldom wait on one another.
/// Group `g`'s counts start at `scratch.counted[g]` in `scratch.counts`.
#[inline(never)]
fn count_partitions(corpus: &[u64], groups: &[LeadGroup], scratch: &mut Scratch) {
    let (counts, counted) = (&mut scratch.counts, &mut scratch.counted);
    counted.clear();
    let mut total = 0;
    for group in groups {
        counted.push(total);
        total += group.mask as usize + 1;
    }
    counts.clear();
    counts.resize(total, 0);
    match groups.len() {
        4 => count_groups::<4>(corpus, groups, counts),
        3 => count_groups::<3>(corpus, groups, counts),
        2 => count_groups::<2>(corpus, groups, counts),
        _ => {
            for (group, counts) in groups.iter().zip(split_counts(groups, counts)) {
                count_groups::<1>(corpus, std::slice::from_ref(group), counts);
            }
        }
    }
}

/// Each group's counters in `counts`, in group order.
fn split_counts<'a>(groups: &[LeadGroup], mut counts: &'a mut [u32]) -> Vec<&'a mut [u32]> {
    groups
        .iter()
        .map(|group| {
            let (mine, rest) = std::mem::take(&mut counts).split_at_mut(group.mask as usize + 1);
            counts = rest;
            mine
        })
        .collect()
}

/// [`count_partitions`] for `N` groups at once, each with its counters in
/// a slice of its own, so that every increment is checked by its mask alone.
#[inline(always)]
fn count_groups<const N: usize>(corpus: &[u64], groups: &[LeadGroup], counts: &mut [u32]) {
    let mut slices = split_counts(groups, counts).into_iter();
    let mut counters: [&mut [u32]; N] = std::array::from_fn(|_| slices.next().unwrap_or_default());
    let keys: [(u32, u64); N] = std::array::from_fn(|g| (groups[g].shift, groups[g].mask));
    for (counter, &(_, mask)) in counters.iter().zip(&keys) {
        assert_eq!(counter.len() as u64, mask + 1, "a counter per partition");
    }
    for &f in corpus {
        for (counter, &(shift, mask)) in counters.iter_mut().zip(&keys) {
            counter[((f >> shift) & mask) as usize] += 1;
        }
    }
}

/// Counting-sort scatter of `corpus` into the partitions of `group`, the
/// `g`th lead group, counted by [`count_partitions`].
#[inline(always)]
fn partition(corpus: &[u64], group: &LeadGroup, g: usize, scratch: &mut Scratch) {
    let parts = group.mask as usize + 1;
    let counts = &scratch.counts[scratch.counted[g]..][..parts];
    scratch.starts.clear();
    scratch.starts.push(0);
    let mut start = 0;
    for &count in counts {
        start += count;
        scratch.starts.push(start);
    }
    scratch.fingerprints.resize(corpus.len(), 0);
    scratch.rows.resize(corpus.len(), 0);
    let mut fill: Vec<u32> = scratch.starts[..parts].to_vec();
    scatter(
        corpus,
        (group.shift, group.mask),
        &mut fill,
        &mut scratch.fingerprints,
        &mut scratch.rows,
    );
}

/// The scatter loop on its own, over disjoint slices, so the compiler keeps
/// each fill counter in a register between its load and its store instead of
/// reloading it after every write (it cannot otherwise rule out aliasing),
/// and not inlined, so that the kernel's other values do not crowd its
/// registers, to be reloaded from the stack for every row.
#[inline(never)]
fn scatter(
    corpus: &[u64],
    (shift, mask): (u32, u64),
    fill: &mut [u32],
    fingerprints: &mut [u64],
    rows: &mut [u32],
) {
    for (row, &f) in corpus.iter().enumerate() {
        let part = ((f >> shift) & mask) as usize;
        let slot = fill[part] as usize;
        fill[part] = slot as u32 + 1;
        fingerprints[slot] = f;
        rows[slot] = row as u32;
    }
}

/// Checks the entries of bucket `b` of table `t` against `f`, keeping the
/// pairs `t` owns.
#[inline(never)]
fn scan_bucket(index: &Index, t: usize, f: u64, row: u32, b: usize, out: &mut Vec<Match>) {
    let table = &index.tables[t];
    let residue = table.residue(f);
    let bucket = table.bucket_entries(b);
    for (e, &r) in bucket.clone().zip(table.residues_of(bucket)) {
        if (r ^ residue).count_ones() <= index.design.k {
            keep_if_owned(index, t, e, f, row, out);
        }
    }
}

/// Keeps entry `e` of table `t` (within k of `f` on its residue) as a match
/// of row `row` when its whole fingerprint is within k and `t` owns the pair.
#[inline(always)]
fn keep_if_owned(index: &Index, t: usize, e: usize, f: u64, row: u32, out: &mut Vec<Match>) {
    let table = &index.tables[t];
    let xor = table.fingerprint(e) ^ f;
    let distance = xor.count_ones();
    if distance <= index.design.k && index.design.owner(xor) == Some(t) {
        out.push(Match {
            row,
            group: table.group(e),
            distance: distance as u8,
        });
    }
}

/// The kernel of x86-64 with AVX-512 or AVX2: buckets compared a vector at
/// a time, which makes fewer, wider tables pay.
#[cfg(target_arch = "x86_64")]
mod wide;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matching::design::{plan, DEFAULT_TABLE_MEMORY};
    use crate::matching::lead_groups::{lead_groups, lead_groups_with, SLICE_ENTRIES_LOG2};
    use crate::matching::tables::QuerySet;

    /// The partition pass is skipped only for a wide kernel on a design of
    /// one table a lead group and about a line a bucket: |B| = 1M at k = 3,
    /// not at k = 4 (longer buckets) or k = 6 (several tables a group), and
    /// never for filter words.
    #[test]
    fn the_partition_pass_is_skipped_only_where_a_row_reads_a_line_a_table() {
        let pays = |kernel: super::Kernel, k: u32| {
            let design = plan(1 << 20, k, DEFAULT_TABLE_MEMORY, None, kernel.probe_cost()).design;
            partitioning_pays(kernel, &design, &lead_groups(&design))
        };
        assert!(!pays(super::Kernel::Avx512, 3));
        assert!(!pays(super::Kernel::Avx2, 3));
        assert!(pays(super::Kernel::Portable, 3));
        for kernel in [super::Kernel::Avx512, super::Kernel::Avx2] {
            assert!(pays(kernel, 4), "{kernel:?}");
            assert!(pays(kernel, 6), "{kernel:?}");
        }
    }

    type Kernel = fn(&Index, &[u64], &mut Scratch, &mut Vec<Match>);
    type AnyKernel = Box<dyn Fn(&Index, &[u64], &mut Scratch, &mut Vec<Match>)>;

    fn brute_force(queries: &QuerySet, corpus: &[u64], k: u32) -> Vec<Match> {
        let mut out = Vec::new();
        for (row, &y) in corpus.iter().enumerate() {
            for g in 0..queries.groups() as u32 {
                let d = (queries.fingerprint(g) ^ y).count_ones();
                if d <= k {
                    out.push(Match {
                        row: row as u32,
                        group: g,
                        distance: d as u8,
                    });
                }
            }
        }
        out
    }

    /// The design of `m` blocks for `queries` at `k`.
    fn forced_design(queries: &QuerySet, k: u32, m: u32) -> Design {
        plan(
            queries.groups() as u64,
            k,
            DEFAULT_TABLE_MEMORY,
            Some(m),
            super::Kernel::Portable.probe_cost(),
        )
        .design
    }

    /// Every kernel this CPU can run, whatever the design: `probe` (which
    /// picks one), the portable one, and the wide one with each number of
    /// unconditional vectors.
    fn kernels() -> Vec<(String, AnyKernel)> {
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut kernels: Vec<(String, AnyKernel)> = vec![
            ("probe".into(), Box::new(probe as Kernel)),
            ("portable".into(), Box::new(probe_batch as Kernel)),
        ];
        #[cfg(target_arch = "x86_64")]
        for simd in crate::matching::kernel::Simd::all_available() {
            for vectors in 1..=simd.max_vectors() {
                kernels.push((
                    format!("wide, {simd:?}, {vectors} vectors"),
                    Box::new(move |index, corpus, scratch, out| {
                        // SAFETY: this CPU has the features, checked above.
                        unsafe { wide::probe_with(simd, index, corpus, scratch, out, vectors) }
                    }),
                ));
            }
        }
        kernels
    }

    /// Asserts that every kernel finds `expected` at k = 3, with 4 and 5 blocks.
    fn every_kernel_finds(rows: &[(u64, i64)], corpus: &[u64], expected: &[Match]) {
        for m in [4, 5] {
            let design = forced_design(&QuerySet::from_rows(rows.to_vec()), 3, m);
            let index = Index::build(design, QuerySet::from_rows(rows.to_vec()), 2);
            for (name, kernel) in kernels() {
                let mut found = Vec::new();
                kernel(&index, corpus, &mut Scratch::default(), &mut found);
                found.sort();
                assert_eq!(found, expected, "{name}: m={m}");
            }
        }
    }

    #[test]
    fn hot_buckets_longer_than_the_unconditional_vectors_are_scanned_whole() {
        // 3,000 queries, 1,200 of them sharing their first 16 bits (one
        // bucket of 1,200 entries in a 4-table design at k = 3), the rest
        // random; corpus rows near both.
        let mut rng = crate::random::SplitMix64::new(5);
        let rows: Vec<(u64, i64)> = (0..3_000)
            .map(|i| {
                let f = rng.next_u64();
                (if i < 1_200 { 0xabcd << 48 | f >> 16 } else { f }, i)
            })
            .collect();
        let queries = QuerySet::from_rows(rows.clone());
        let corpus: Vec<u64> = (0..30_000)
            .map(|i| {
                let mut f = rows[i % rows.len()].0;
                for _ in 0..rng.below(5) {
                    f ^= 1 << rng.below(64);
                }
                f
            })
            .collect();
        let expected = brute_force(&queries, &corpus, 3);
        assert!(expected.len() > 20_000, "{}", expected.len());
        every_kernel_finds(&rows, &corpus, &expected);
    }

    #[test]
    fn entries_past_a_bucket_near_the_row_are_not_taken() {
        // Consecutive top-16-bit keys, each query's residue (the 32 bits
        // after the top block) with at most one bit set, and corpus rows
        // with at most two: a vector from a bucket of the table keyed on
        // the top block reads the next buckets' entries, and from the last
        // bucket the residues' zero padding, all near every row on their
        // residue though not in its bucket.
        let rows: Vec<(u64, i64)> = (0..3_000u64)
            .map(|i| (i << 48 | 1 << (i % 48), i as i64))
            .collect();
        let queries = QuerySet::from_rows(rows.clone());
        let corpus: Vec<u64> = (0..3_000u64)
            .flat_map(|i| [i << 48, i << 48 | 0b11 << (i % 40), 0xffff << 48 | i])
            .collect();
        let expected = brute_force(&queries, &corpus, 3);
        assert!(expected.len() > 3_000, "{}", expected.len());
        every_kernel_finds(&rows, &corpus, &expected);
    }

    #[test]
    fn finds_exactly_the_pairs_within_k_for_every_m() {
        let mut state = 11u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let base: Vec<u64> = (0..300).map(|_| next()).collect();
        let rows: Vec<(u64, i64)> = base
            .iter()
            .enumerate()
            .map(|(i, &f)| (f, i as i64))
            .collect();
        let corpus: Vec<u64> = (0..40_000)
            .map(|i| {
                let mut f = base[i % base.len()];
                for _ in 0..(next() % 6) {
                    f ^= 1 << (next() % 64);
                }
                f
            })
            .collect();
        for k in [0, 1, 2, 3, 5] {
            let queries = QuerySet::from_rows(rows.clone());
            let expected = brute_force(&queries, &corpus, k);
            for m in [k + 1, k + 2, k + 4] {
                let design = forced_design(&queries, k, m);
                let mut index = Index::build(design, QuerySet::from_rows(rows.clone()), 2);
                // B is small here, so also force partitioning: slices of 2^2
                // entries. `probe` may pick a CPU-specific build of the
                // kernel, so the portable one is checked as well.
                for slice_log2 in [SLICE_ENTRIES_LOG2, 2] {
                    index.lead_groups = lead_groups_with(&index.design, slice_log2);
                    for (name, kernel) in kernels() {
                        let mut found = Vec::new();
                        kernel(&index, &corpus, &mut Scratch::default(), &mut found);
                        found.sort();
                        assert_eq!(found, expected, "{name}: k={k} m={m} slice 2^{slice_log2}");
                    }
                }
            }
        }
    }
}
