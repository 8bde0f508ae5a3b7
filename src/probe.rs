//! The probe kernel: corpus fingerprints against B's tables.
//!
//! This loop is the product's hot path: every corpus fingerprint visits one
//! bucket in each table. Probed in arrival order, each visit is a random read
//! into tables far larger than the CPU caches (10 tables of 1M entries for
//! |B| = 1M, k = 3), and the scan runs at the speed of memory latency.
//!
//! So a large batch of corpus rows is first *radix-partitioned* by the leading
//! bits of a table's first key block: the rows of one partition can only
//! visit one contiguous slice of that table's buckets, small enough to stay in
//! the CPU cache while the partition is probed. Tables sharing their first key
//! block share the partitioning pass. Partitioning changes only the order of
//! the visits, never which buckets are visited, so the result is the same.

use crate::design::Design;
use crate::tables::Index;

/// A corpus row within distance k of a group of B.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Match {
    /// Row of the probed slice.
    pub row: u32,
    /// Group of B (a distinct query fingerprint).
    pub group: u32,
    /// Hamming distance.
    pub distance: u8,
}

/// Entries of a table slice that one partition should visit: the tables of a
/// group are probed one after another, so one table's slice of filter words
/// (2^15 to 2^16 buckets, 256 to 512 KB) must fit in L2 beside the rows.
const SLICE_ENTRIES_LOG2: u32 = 15;
/// Probe keys computed at a time, on the stack, before their buckets are read.
const KEY_CHUNK: usize = 256;
/// How many hits ahead the bucket's entries are prefetched (its directory
/// entry twice as far ahead).
const PREFETCH_HITS: usize = 8;
/// Batches smaller than this are probed directly: partitioning would not pay.
const MIN_PARTITIONED_ROWS: usize = 1 << 14;

/// Tables that share their first key block, and how to partition rows for them.
#[derive(Clone, Debug)]
pub struct LeadGroup {
    /// Partition number of a fingerprint: `(f >> shift) & mask`.
    shift: u32,
    mask: u64,
    tables: Vec<usize>,
}

/// Groups the design's tables by first key block; a group's partitions cut
/// its tables into slices of about 2^SLICE_ENTRIES_LOG2 entries.
pub fn lead_groups(design: &Design) -> Vec<LeadGroup> {
    lead_groups_with(design, SLICE_ENTRIES_LOG2)
}

/// Like [`lead_groups`], with slices of about `2^slice_log2` entries.
fn lead_groups_with(design: &Design, slice_log2: u32) -> Vec<LeadGroup> {
    let stored_log2 = 63 - design.stored.max(1).leading_zeros();
    let mut groups: Vec<(usize, LeadGroup)> = Vec::new();
    for (t, spec) in design.tables.iter().enumerate() {
        let lead = spec.blocks[0];
        if let Some((_, g)) = groups.iter_mut().find(|(b, _)| *b == lead) {
            g.tables.push(t);
            continue;
        }
        let block = design.blocks[lead];
        let bits = stored_log2
            .saturating_sub(slice_log2)
            .min(block.len)
            .min(spec.index_bits)
            .min(12);
        let shift = 64 - block.start - bits;
        groups.push((
            lead,
            LeadGroup {
                shift,
                mask: (1u64 << bits) - 1,
                tables: vec![t],
            },
        ));
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

/// Reusable buffers of one probing worker.
#[derive(Default)]
pub struct Scratch {
    fingerprints: Vec<u64>,
    rows: Vec<u32>,
    starts: Vec<u32>,
    hits: Vec<(u32, u32)>,
}

/// Appends to `out` every `(row, group)` of `corpus` within distance k, each
/// exactly once: a pair seen in several tables is kept only by its owner table.
pub fn probe(index: &Index, corpus: &[u64], scratch: &mut Scratch, out: &mut Vec<Match>) {
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
    let partitioned =
        corpus.len() >= MIN_PARTITIONED_ROWS && index.lead_groups.iter().any(|g| g.mask > 0);
    if !partitioned {
        scratch.rows.clear();
        scratch.rows.extend(0..corpus.len() as u32);
        for t in 0..index.tables.len() {
            probe_slice(index, t, corpus, &scratch.rows, &mut scratch.hits, out);
        }
        return;
    }
    for group in &index.lead_groups {
        partition(corpus, group, scratch);
        for p in 0..scratch.starts.len() - 1 {
            let range = scratch.starts[p] as usize..scratch.starts[p + 1] as usize;
            let fingerprints = &scratch.fingerprints[range.clone()];
            let rows = &scratch.rows[range];
            for &t in &group.tables {
                probe_slice(index, t, fingerprints, rows, &mut scratch.hits, out);
            }
        }
    }
}

/// Probes rows against table `t`; for a partition, the buckets of these rows
/// all lie in one cache-sized slice. Three steps, each a loop doing one thing:
/// - probe keys for a chunk of rows, computed several per vector instruction;
/// - per key, one load of the bucket's filter word and one bit test, with no
///   branch on the data: every probe writes its slot in `hits`, and only a set
///   filter bit advances past it, so the rare hits cost no mispredictions;
/// - the hits' buckets, whose directory entries and first entries are
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
            table.prefetch_entries(ahead as usize);
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

/// Counting-sort scatter of `corpus` into the group's partitions.
#[inline(always)]
fn partition(corpus: &[u64], group: &LeadGroup, scratch: &mut Scratch) {
    let parts = group.mask as usize + 1;
    let key = |f: u64| ((f >> group.shift) & group.mask) as usize;
    scratch.starts.clear();
    scratch.starts.resize(parts + 1, 0);
    for &f in corpus {
        scratch.starts[key(f) + 1] += 1;
    }
    for p in 0..parts {
        scratch.starts[p + 1] += scratch.starts[p];
    }
    scratch.fingerprints.resize(corpus.len(), 0);
    scratch.rows.resize(corpus.len(), 0);
    let mut fill: Vec<u32> = scratch.starts[..parts].to_vec();
    scatter(
        corpus,
        key,
        &mut fill,
        &mut scratch.fingerprints,
        &mut scratch.rows,
    );
}

/// The scatter loop on its own, over disjoint slices, so the compiler keeps
/// each fill counter in a register between its load and its store instead of
/// reloading it after every write (it cannot otherwise rule out aliasing).
#[inline(always)]
fn scatter(
    corpus: &[u64],
    key: impl Fn(u64) -> usize,
    fill: &mut [u32],
    fingerprints: &mut [u64],
    rows: &mut [u32],
) {
    for (row, &f) in corpus.iter().enumerate() {
        let part = key(f);
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
    let k = index.design.k;
    let table = &index.tables[t];
    for e in table.bucket_entries(b) {
        let xor = table.fingerprint(e) ^ f;
        let distance = xor.count_ones();
        if distance <= k && index.design.owner(xor) == Some(t) {
            out.push(Match {
                row,
                group: table.group(e),
                distance: distance as u8,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::{plan, DEFAULT_TABLE_MEMORY};
    use crate::tables::QuerySet;

    type Kernel = fn(&Index, &[u64], &mut Scratch, &mut Vec<Match>);

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
        for k in [0, 1, 3, 5] {
            let queries = QuerySet::from_rows(rows.clone());
            let expected = brute_force(&queries, &corpus, k);
            for m in [k + 1, k + 2, k + 4] {
                let design = plan(queries.groups() as u64, k, DEFAULT_TABLE_MEMORY, Some(m)).design;
                let mut index = Index::build(design, QuerySet::from_rows(rows.clone()), 2);
                // B is small here, so also force partitioning: slices of 2^2
                // entries. `probe` may pick a CPU-specific build of the
                // kernel, so the portable one is checked as well.
                for slice_log2 in [SLICE_ENTRIES_LOG2, 2] {
                    index.lead_groups = lead_groups_with(&index.design, slice_log2);
                    for (name, kernel) in [("probe", probe as Kernel), ("portable", probe_batch)] {
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
