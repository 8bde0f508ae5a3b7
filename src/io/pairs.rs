//! The output record and how pairs are split into parts.

use serde::{Deserialize, Serialize};

/// A near-duplicate pair: a row of B and a row of F (or of B, with `--self`)
/// whose fingerprints differ in `distance <= k` bits.
///
/// Field order is the output's sort order: by query, then corpus, then the
/// fingerprints, so that repeated rows sit together and any worker count
/// produces the same bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Pair {
    pub query_id: i64,
    pub corpus_id: i64,
    pub query_simhash: u64,
    pub corpus_simhash: u64,
    pub distance: u8,
    /// Whether the corpus row is a row of B (a `--self` pair): the
    /// clustering then knows which pages are already in the corpus.
    pub self_pair: bool,
    /// Bits apart over the fingerprints and sketches, 256 bits in all
    /// (`match --verify`); `None` unverified.
    pub wide_distance: Option<u16>,
}

/// Query-id ranges of the output parts.
///
/// Boundaries come from B's distinct ids, split into `parts` runs of equal
/// count, so part sizes follow B and never depend on the worker count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Parts {
    /// `starts[p]` is the first query id of part `p + 1`.
    starts: Vec<i64>,
}

impl Parts {
    /// Splits the ascending, distinct `ids` into `parts` ranges.
    pub(crate) fn from_sorted_ids(ids: &[i64], parts: usize) -> Parts {
        let parts = parts.max(1);
        let starts = (1..parts)
            .map(|p| {
                ids.get((p * ids.len()).div_ceil(parts))
                    .copied()
                    .unwrap_or(i64::MAX)
            })
            .collect();
        Parts { starts }
    }

    /// Number of parts.
    pub(crate) fn len(&self) -> usize {
        self.starts.len() + 1
    }

    /// The part a query id belongs to.
    pub(crate) fn part_of(&self, query_id: i64) -> usize {
        self.starts.partition_point(|&start| start <= query_id)
    }
}

/// Sorts pairs into output order and removes repeated ones (the same corpus
/// row read from two shards, or found both as a corpus and a self pair).
pub(crate) fn sort_and_dedup(pairs: &mut Vec<Pair>) {
    pairs.sort_unstable();
    pairs.dedup();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_split_ids_evenly_and_in_order() {
        let ids: Vec<i64> = (0..10).map(|i| i * 10).collect();
        let parts = Parts::from_sorted_ids(&ids, 3);
        assert_eq!(parts.len(), 3);
        let assigned: Vec<usize> = ids.iter().map(|&id| parts.part_of(id)).collect();
        assert_eq!(assigned, vec![0, 0, 0, 0, 1, 1, 1, 2, 2, 2]);
        assert_eq!(parts.part_of(i64::MIN), 0);
        assert_eq!(parts.part_of(i64::MAX), 2);
    }

    #[test]
    fn more_parts_than_ids_leaves_trailing_parts_empty() {
        let parts = Parts::from_sorted_ids(&[7], 3);
        assert_eq!(parts.len(), 3);
        assert_eq!(parts.part_of(7), 0);
        let empty = Parts::from_sorted_ids(&[], 2);
        assert_eq!(empty.part_of(1), 0);
    }
}
