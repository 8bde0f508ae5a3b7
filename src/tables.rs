//! The query side: B's distinct fingerprints with their ids, and the
//! pigeonhole tables built over them once per process.

use crate::design::{Design, TableSpec};
use crate::probe::{lead_groups, LeadGroup};

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
    /// Groups `(id, fingerprint)` rows by fingerprint. Repeated rows collapse.
    pub fn from_rows(mut rows: Vec<(u64, i64)>) -> QuerySet {
        rows.sort_unstable();
        rows.dedup();
        let mut set = QuerySet::default();
        for (fingerprint, id) in rows {
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
    pub fn rows(&self) -> usize {
        self.ids.len()
    }

    /// The fingerprint of group `g`.
    pub fn fingerprint(&self, g: u32) -> u64 {
        self.fingerprints[g as usize]
    }

    /// The ids of group `g`, ascending.
    pub fn ids(&self, g: u32) -> &[i64] {
        let g = g as usize;
        &self.ids[self.starts[g] as usize..self.starts[g + 1] as usize]
    }

    /// Every distinct id of B, ascending.
    pub fn sorted_ids(&self) -> Vec<i64> {
        let mut ids = self.ids.clone();
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

/// One table: B's fingerprints bucketed by the table's key prefix.
#[derive(Debug)]
pub struct Table {
    /// One word per bucket: bit `j` is set when some entry of the bucket has
    /// `j` as the next [`crate::design::FILTER_BITS`] bits of its key. A probe
    /// reads this word alone, and only a set bit (about one probe in 64 for
    /// the usual one entry per bucket) goes on to the entries: every pair's
    /// key matches exactly, so its bit is set.
    filters: Vec<u64>,
    /// `entries[offsets[b]..offsets[b + 1]]` is bucket `b`.
    offsets: Vec<u32>,
    /// Original (unpermuted) fingerprints, in bucket order.
    fingerprints: Vec<u64>,
    /// The group of each entry, parallel to `fingerprints`; read only on a match.
    groups: Vec<u32>,
}

impl Table {
    /// Buckets every group with a stable counting sort, so each bucket lists
    /// its fingerprints in ascending order and the layout is deterministic.
    fn build(design: &Design, table: usize, queries: &QuerySet) -> Table {
        let spec = &design.tables[table];
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
        let n = queries.groups();
        let mut fingerprints = vec![0u64; n];
        let mut groups = vec![0u32; n];
        for (g, &f) in queries.fingerprints.iter().enumerate() {
            let slot = &mut fill[spec.bucket(f)];
            fingerprints[*slot as usize] = f;
            groups[*slot as usize] = g as u32;
            *slot += 1;
        }
        Table {
            filters,
            offsets,
            fingerprints,
            groups,
        }
    }

    /// Whether bucket `b` may hold an entry whose key starts with the probe key
    /// `probe_key`; false means it certainly does not.
    #[inline(always)]
    pub fn may_hold(&self, spec: &TableSpec, b: usize, probe_key: u64) -> bool {
        self.filters[b] & spec.filter_bit(probe_key) != 0
    }

    /// The filter word of every bucket, indexed by bucket.
    #[inline(always)]
    pub fn filters(&self) -> &[u64] {
        &self.filters
    }

    /// Asks the CPU to fetch bucket `b`'s directory entry into cache.
    #[inline(always)]
    pub fn prefetch_directory(&self, b: usize) {
        prefetch(&self.offsets[b]);
    }

    /// Asks the CPU to fetch bucket `b`'s first entry into cache.
    #[inline(always)]
    pub fn prefetch_entries(&self, b: usize) {
        if let Some(f) = self.fingerprints.get(self.offsets[b] as usize) {
            prefetch(f);
        }
    }

    /// The entries of bucket `b`.
    #[inline(always)]
    pub fn bucket_entries(&self, b: usize) -> std::ops::Range<usize> {
        self.offsets[b] as usize..self.offsets[b + 1] as usize
    }

    #[inline(always)]
    pub fn fingerprint(&self, entry: usize) -> u64 {
        self.fingerprints[entry]
    }

    #[inline(always)]
    pub fn group(&self, entry: usize) -> u32 {
        self.groups[entry]
    }
}

/// A hint to fetch `value`'s cache line; it never faults and has no effect
/// on the result.
#[inline(always)]
pub(crate) fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of every x86-64 CPU, and a prefetch reads nothing
    // into the program: it only warms the cache for a valid reference.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast::<i8>());
    }
}

/// B, its design and its tables: everything a worker probes, shared read-only
/// by all worker threads of a process.
#[derive(Debug)]
pub struct Index {
    pub design: Design,
    pub queries: QuerySet,
    pub tables: Vec<Table>,
    /// How the probe kernel partitions corpus rows for cache locality.
    pub lead_groups: Vec<LeadGroup>,
}

impl Index {
    /// Builds every table of `design` over `queries`, one thread per table up
    /// to `threads` at once.
    pub fn build(design: Design, queries: QuerySet, threads: usize) -> Index {
        let n = design.tables.len();
        let threads = threads.clamp(1, n.max(1));
        let mut tables: Vec<Option<Table>> = (0..n).map(|_| None).collect();
        std::thread::scope(|scope| {
            let chunks: Vec<_> = tables.chunks_mut(n.div_ceil(threads).max(1)).collect();
            let mut first = 0;
            for chunk in chunks {
                let start = first;
                first += chunk.len();
                let (design, queries) = (&design, &queries);
                scope.spawn(move || {
                    for (i, slot) in chunk.iter_mut().enumerate() {
                        *slot = Some(Table::build(design, start + i, queries));
                    }
                });
            }
        });
        let tables = tables.into_iter().flatten().collect();
        let lead_groups = lead_groups(&design);
        Index {
            design,
            queries,
            tables,
            lead_groups,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                for e in table.bucket_entries(b) {
                    let f = table.fingerprint(e);
                    assert_eq!(spec.bucket(f), b);
                    assert!(table.may_hold(spec, b, spec.probe_key(f)));
                    assert_eq!(index.queries.fingerprint(table.group(e)), f);
                    seen += 1;
                }
            }
            assert_eq!(seen, index.queries.groups());
        }
    }
}
