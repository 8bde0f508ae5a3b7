//! How many distinct pages a process's pairs hold, estimated from a
//! worker's first rows, so that the union-find's id table is sized once.
//!
//! Two estimates bound the truth, and the order of the rows says which to
//! trust:
//!
//! - **Linear**: the sample's distinct pages per pair, times the pairs. It
//!   is right when a page's pairs lie together (`match`'s order, id order,
//!   one cluster after another): the sample has seen all of its pages'
//!   repeats, and later rows bring new pages at the same rate. In random
//!   order it runs high: most repeats fall outside the sample.
//! - **Chao1** (Chao, 1984): the pages seen plus f1² / 2f2, where f1 and f2
//!   count the pages seen once and twice. It estimates the pages a random
//!   sample has not seen; on rows where pages lie together it sees no
//!   unseen pages and runs far low.
//!
//! The sample's two halves tell the orders apart: in random order a page
//! seen k times lies in both halves with probability 1 - 2^(1-k), and where
//! pages lie together it rarely does. The ratio of pages seen in both to
//! that expectation, `mixing` (1 random, 0 local), weighs the two estimates
//! geometrically, Chao1 by its square: an estimate short of the truth costs
//! the table a doubling, which on a large graph costs more than a table too
//! large does, so Chao1 is trusted fully only where the order is plainly
//! random. The estimate never exceeds the linear one, nor falls below the
//! pages seen.
//!
//! Only pages whose id hashes into one bucket of [`SAMPLED_PAGES`] are
//! counted, every sighting of each: the counts per page are exact, and the
//! counting sorts an eighth of the ids.

use crate::cluster::components::{mix, PageEstimate};

/// One page in this many is counted (by a hash of its id).
const SAMPLED_PAGES: u64 = 8;

/// Chao1 runs low when some pages repeat far more than others (Chao,
/// 1984): it is raised by a tenth.
const CHAO1_MARGIN: f64 = 1.1;

/// The distinct pages likely in `process_pairs` pairs, from `first`, a
/// sample of them, each pair given as its two page ids in row order; and
/// the linear estimate, their bound.
pub(crate) fn expected_pages(
    first: impl ExactSizeIterator<Item = (i64, i64)>,
    process_pairs: usize,
) -> PageEstimate {
    let rows = first.len();
    if rows == 0 {
        return PageEstimate::exact(0);
    }
    let counts = SightingCounts::of(first);
    let seen = counts.pages as f64 * SAMPLED_PAGES as f64;
    let linear = seen / rows as f64 * process_pairs as f64;
    let unseen = (counts.once * counts.once) as f64 / (2.0 * (counts.twice + 1) as f64);
    let chao1 = seen + unseen * SAMPLED_PAGES as f64;
    let mixing = counts.mixing();
    let weight = mixing * mixing;
    let estimate = (CHAO1_MARGIN * chao1).powf(weight) * linear.powf(1.0 - weight);
    tracing::debug!(
        rows,
        seen,
        linear,
        chao1,
        mixing,
        estimate,
        "pages estimated"
    );
    PageEstimate {
        likely: estimate.clamp(seen.min(linear), linear) as usize,
        linear: linear as usize,
    }
}

/// How the sampled pages were seen in a sample.
#[derive(Debug, Default, PartialEq)]
struct SightingCounts {
    pages: usize,
    /// Pages seen once, and twice.
    once: usize,
    twice: usize,
    /// Pages seen in both halves of the sample.
    in_both_halves: usize,
    /// The pages in both halves that random order would give: the sum over
    /// pages seen k times of 1 - 2^(1-k).
    in_both_if_random: f64,
}

impl SightingCounts {
    fn of(pairs: impl ExactSizeIterator<Item = (i64, i64)>) -> SightingCounts {
        let middle = pairs.len() / 2;
        // (id, in the second half), sorted: a page's sightings are a run.
        let mut sightings: Vec<(i64, bool)> = pairs
            .enumerate()
            .flat_map(|(row, (a, b))| [(a, row >= middle), (b, row >= middle)])
            .filter(|&(id, _)| mix(id).is_multiple_of(SAMPLED_PAGES))
            .collect();
        sightings.sort_unstable();
        let mut counts = SightingCounts::default();
        for run in sightings.chunk_by(|x, y| x.0 == y.0) {
            counts.pages += 1;
            match run.len() {
                1 => counts.once += 1,
                2 => counts.twice += 1,
                _ => {}
            }
            // Sorted, a run in both halves starts in the first and ends in the second.
            counts.in_both_halves += usize::from(!run[0].1 && run[run.len() - 1].1);
            counts.in_both_if_random += 1.0 - 2f64.powi(1 - run.len().min(64) as i32);
        }
        counts
    }

    /// 1 when repeats spread over the sample as in random order, 0 when
    /// each page's sightings lie together.
    fn mixing(&self) -> f64 {
        if self.in_both_if_random < 1.0 {
            // Hardly a page repeats: nothing tells the orders apart, and
            // both estimates agree.
            return 1.0;
        }
        (self.in_both_halves as f64 / self.in_both_if_random).min(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids scattered over the i64 range, as hashes of URLs are.
    fn id(page: u64) -> i64 {
        mix(page as i64 ^ 0x5eed) as i64
    }

    fn estimate(all: &[(i64, i64)], rows: usize) -> f64 {
        expected_pages(all[..rows].iter().copied(), all.len()).likely as f64
    }

    /// `pairs` random pairs over `pages` pages, in random order (the order
    /// of a Spark or DuckDB join).
    fn random_graph(pages: u64, pairs: u64) -> Vec<(i64, i64)> {
        (0..pairs)
            .map(|e| (id(mix(e as i64) % pages), id(mix(!(e as i64)) % pages)))
            .collect()
    }

    /// Clusters of `size` pages one after another, each a chain: the order
    /// of `match` or of an id sort, where a page's pairs lie together.
    fn local_graph(clusters: u64, size: u64) -> Vec<(i64, i64)> {
        (0..clusters)
            .flat_map(|c| (1..size).map(move |i| (id(c * size + i - 1), id(c * size + i))))
            .collect()
    }

    fn distinct(pairs: &[(i64, i64)]) -> usize {
        let mut ids: Vec<i64> = pairs.iter().flat_map(|&(a, b)| [a, b]).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len()
    }

    #[test]
    fn random_order_is_estimated_near_the_truth_not_at_the_linear_bound() {
        let all = random_graph(2_000_000, 2_400_000);
        let rows = 1 << 17;
        let truth = distinct(&all) as f64;
        let linear = distinct(&all[..rows]) as f64 / rows as f64 * all.len() as f64;
        let estimate = estimate(&all, rows);
        assert!(linear > 1.5 * truth, "{linear} {truth}");
        // Chao1 counts the pages a pair could have named (here 2M, of which
        // 1.8M are named), and is raised by a tenth: high, never short.
        assert!(
            (0.95..1.3).contains(&(estimate / truth)),
            "{estimate} {truth}"
        );
    }

    #[test]
    fn pages_whose_pairs_lie_together_are_estimated_linearly() {
        let all = local_graph(300_000, 5);
        let truth = distinct(&all) as f64;
        let estimate = estimate(&all, 1 << 17);
        assert!(
            (0.95..1.1).contains(&(estimate / truth)),
            "{estimate} {truth}"
        );
        let counts = SightingCounts::of(all[..1 << 17].iter().copied());
        assert!(counts.mixing() < 0.05, "{counts:?}");
    }

    #[test]
    fn a_star_is_not_taken_for_a_vast_unseen_graph() {
        // One page in every pair, the others seen once: Chao1 alone would
        // guess millions of pages never seen.
        let all: Vec<(i64, i64)> = (0..400_000).map(|leaf| (id(0), id(leaf + 1))).collect();
        let estimate = estimate(&all, 1 << 16);
        assert!(estimate <= 1.01 * distinct(&all) as f64, "{estimate}");
    }

    #[test]
    fn counts_follow_each_pages_sightings() {
        // Ids chosen so that every one is counted.
        let ids: Vec<i64> = (0..)
            .map(|i: i64| i)
            .filter(|&i| mix(i).is_multiple_of(SAMPLED_PAGES))
            .take(4)
            .collect();
        let [a, b, c, d] = [ids[0], ids[1], ids[2], ids[3]];
        // Halves: rows 0-1 and 2-3. a: 3 sightings in both halves; b: 2 in
        // the first; c: 2 in both; d: once.
        let pairs = [(a, b), (c, b), (a, c), (d, a)];
        let counts = SightingCounts::of(pairs.into_iter());
        assert_eq!((counts.pages, counts.once, counts.twice), (4, 1, 2));
        assert_eq!(counts.in_both_halves, 2);
        assert!((counts.in_both_if_random - (0.75 + 0.5 + 0.5)).abs() < 1e-9);
        assert_eq!(expected_pages(std::iter::empty(), 10).likely, 0);
    }
}
