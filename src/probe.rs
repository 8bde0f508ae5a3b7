//! The probe kernel: corpus fingerprints against B's tables.
//!
//! This loop is the product's hot path: every corpus fingerprint visits one
//! bucket in each table. Corpus rows are taken in small batches and each
//! table's buckets for the whole batch are located before any is read, so the
//! memory loads of a batch overlap instead of waiting on each other.

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

/// Rows whose bucket loads are issued together.
const BATCH: usize = 16;

/// Reusable buffers of one probing worker.
#[derive(Default)]
pub struct Scratch {
    buckets: Vec<usize>,
    ranges: Vec<(u32, u32)>,
}

/// Appends to `out` every `(row, group)` of `corpus` within distance k, each
/// exactly once: a pair seen in several tables is kept only by its owner table.
///
/// Group prefetching: for a batch of rows, first every table's bucket number
/// is computed and its directory entry prefetched, then every directory entry
/// is read and the bucket's first line prefetched, and only then are the
/// buckets scanned. The loads of a batch are then in flight together instead
/// of one after another.
pub fn probe(index: &Index, corpus: &[u64], scratch: &mut Scratch, out: &mut Vec<Match>) {
    let k = index.design.k;
    let tables = index.tables.len();
    scratch.buckets.resize(tables * BATCH, 0);
    scratch.ranges.resize(tables * BATCH, (0, 0));
    for (chunk_no, chunk) in corpus.chunks(BATCH).enumerate() {
        let base = chunk_no * BATCH;
        for (t, (spec, table)) in index.design.tables.iter().zip(&index.tables).enumerate() {
            let buckets = &mut scratch.buckets[t * BATCH..][..chunk.len()];
            for (slot, &y) in buckets.iter_mut().zip(chunk) {
                *slot = spec.bucket(y);
                table.prefetch_bucket(*slot);
            }
        }
        for (t, table) in index.tables.iter().enumerate() {
            let buckets = &scratch.buckets[t * BATCH..][..chunk.len()];
            let ranges = &mut scratch.ranges[t * BATCH..][..chunk.len()];
            for (slot, &b) in ranges.iter_mut().zip(buckets) {
                let r = table.bucket_range(b);
                table.prefetch_entry(r.start);
                *slot = (r.start as u32, r.end as u32);
            }
        }
        for (t, table) in index.tables.iter().enumerate() {
            let ranges = &scratch.ranges[t * BATCH..][..chunk.len()];
            let entries = table.fingerprints();
            for (i, (&y, &(start, end))) in chunk.iter().zip(ranges).enumerate() {
                for e in start as usize..end as usize {
                    let xor = entries[e] ^ y;
                    let distance = xor.count_ones();
                    if distance <= k && index.design.owner(xor) == Some(t) {
                        out.push(Match { row: (base + i) as u32, group: table.group(e), distance: distance as u8 });
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::{plan, DEFAULT_TABLE_MEMORY};
    use crate::tables::QuerySet;

    fn brute_force(queries: &QuerySet, corpus: &[u64], k: u32) -> Vec<Match> {
        let mut out = Vec::new();
        for (row, &y) in corpus.iter().enumerate() {
            for g in 0..queries.groups() as u32 {
                let d = (queries.fingerprint(g) ^ y).count_ones();
                if d <= k {
                    out.push(Match { row: row as u32, group: g, distance: d as u8 });
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
        let rows: Vec<(u64, i64)> = base.iter().enumerate().map(|(i, &f)| (f, i as i64)).collect();
        let corpus: Vec<u64> = (0..900)
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
                let index = Index::build(design, QuerySet::from_rows(rows.clone()), 2);
                let mut found = Vec::new();
                probe(&index, &corpus, &mut Scratch::default(), &mut found);
                found.sort();
                assert_eq!(found, expected, "k={k} m={m}");
            }
        }
    }
}
