//! Which pages to drop, and in favour of which kept page.
//!
//! A component joins pages through chains: in a page edited a little every
//! day, the first and the last version may be far more than k bits apart.
//! Dropping every page of a component in favour of its representative
//! ([`DropPolicy::Component`]) then drops pages for a page they were never
//! paired with. [`DropPolicy::Direct`] only drops a page for a kept page it is
//! paired with, so every drop is backed by a pair within k.

use std::fmt;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::components::{IdTable, Page, MISSING};

/// How the keep/drop list is made from the pairs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum DropPolicy {
    /// Pages in priority order (corpus first under `--corpus-wins`, then the
    /// smallest id): a page is kept unless a partner earlier in that order
    /// is kept; then it is dropped for the nearest such partner.
    #[default]
    Direct,
    /// Every page of a component is dropped for its representative.
    Component,
}

impl fmt::Display for DropPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DropPolicy::Direct => "direct",
            DropPolicy::Component => "component",
        })
    }
}

/// A page in priority order's terms: `(first, id)`, where `first` marks a
/// page that ranks before all others (a corpus page under `--corpus-wins`).
pub type RankedPage = (bool, i64);

/// A pair: `(id, id, distance)`, in either direction.
pub type WeightedPair = (i64, i64, u8);

/// A drop row: `(id, keep_id, distance)`.
pub type Drop = (i64, i64, u8);

/// A drop as [`Sweep`] gives it: `(position in priority order, keep_id,
/// distance)`.
pub type SweptDrop = (Page, i64, u8);

/// Components up to this many pages find a page's position by scanning
/// them, not through a hash table.
const LINEAR_SEARCH_PAGES: usize = 16;

/// The [`DropPolicy::Direct`] greedy pass, one component at a time, with
/// its buffers kept between components (most components have a handful of
/// pages, and there are millions of them).
#[derive(Debug, Default)]
pub struct DirectPass {
    order: Vec<RankedPage>,
    position: IdTable,
    ends: Vec<i64>,
    positions: Vec<Page>,
    sweep: Sweep,
    dropped: Vec<SweptDrop>,
}

impl DirectPass {
    /// Appends to `drops` the drops of one component: its `pages` and the
    /// `pairs` among them. The pass is the sequential one, so the result
    /// depends on priority order alone, not on the order pages and pairs
    /// come in. Time is linear in the pairs after one sort of the pages.
    pub fn drops(
        &mut self,
        pages: &[RankedPage],
        pairs: &[WeightedPair],
        drops: &mut Vec<Drop>,
    ) -> Result<()> {
        self.put_in_priority_order(pages);
        if self.order.len() > LINEAR_SEARCH_PAGES {
            let order = &self.order;
            if let Err(id) = self.position.number(order.len(), |p| order[p].1) {
                bail!("page {id} was given two ranks (internal error)");
            }
        } else if let Some(id) = self.a_repeated_id() {
            bail!("page {id} was given two ranks (internal error)");
        }
        self.find_positions(pairs);
        for (ends, &(a, b, _)) in self.positions.chunks_exact(2).zip(pairs) {
            if ends[0] == MISSING || ends[1] == MISSING {
                bail!("pair ({a}, {b}) names a page outside its component (internal error)");
            }
        }
        let ranked = self
            .positions
            .chunks_exact(2)
            .zip(pairs)
            .map(|(ends, &(_, _, distance))| (ends[0], ends[1], distance));
        let order = &self.order;
        let id_of = |p: Page| order[p as usize].1;
        self.dropped.clear();
        self.sweep
            .run(order.len(), ranked, id_of, &mut self.dropped);
        drops.extend(
            self.dropped
                .iter()
                .map(|&(p, keep, distance)| (id_of(p), keep, distance)),
        );
        Ok(())
    }

    /// Fills `order` with `pages` in priority order. Pages come from their
    /// cluster's owner in id order, and then a stable partition (pages that
    /// rank first, then the others) is that order without a sort.
    fn put_in_priority_order(&mut self, pages: &[RankedPage]) {
        self.order.clear();
        if pages.is_sorted_by_key(|&(_, id)| id) {
            self.order.extend(pages.iter().filter(|&&(first, _)| first));
            self.order
                .extend(pages.iter().filter(|&&(first, _)| !first));
        } else {
            self.order.extend_from_slice(pages);
            self.order.sort_unstable_by_key(|&(first, id)| (!first, id));
        }
        self.order.dedup();
    }

    /// An id `order` holds twice (with both ranks), in a cluster small
    /// enough to compare every two pages.
    fn a_repeated_id(&self) -> Option<i64> {
        let order = &self.order;
        (1..order.len()).find_map(|p| {
            order[..p]
                .iter()
                .any(|q| q.1 == order[p].1)
                .then_some(order[p].1)
        })
    }

    /// The positions in priority order of the pairs' ends (into
    /// `positions`, [`MISSING`] for a page not in `order`): by a scan of
    /// `order` for the handful of pages most clusters have, else by the
    /// id table.
    fn find_positions(&mut self, pairs: &[WeightedPair]) {
        self.ends.clear();
        self.ends.extend(pairs.iter().flat_map(|&(a, b, _)| [a, b]));
        if self.order.len() > LINEAR_SEARCH_PAGES {
            self.position.get_many(&self.ends, &mut self.positions);
            return;
        }
        self.positions.clear();
        let order = &self.order;
        self.positions.extend(self.ends.iter().map(|&end| {
            order
                .iter()
                .position(|&(_, id)| id == end)
                .map_or(MISSING, |p| p as Page)
        }));
    }
}

/// The greedy sweep itself, over pages named by their position in priority
/// order: each page's earlier partners as a compressed adjacency list (one
/// counting pass, one filling pass), then one pass in order. Its buffers are
/// kept between calls.
#[derive(Debug, Default)]
pub struct Sweep {
    starts: Vec<u32>,
    fill: Vec<u32>,
    partners: Vec<(u32, u8)>,
    kept: Vec<bool>,
}

impl Sweep {
    /// Appends to `drops` the drops among `pages` pages in priority order,
    /// paired by `pairs` (`(position, position, distance)`, every position
    /// below `pages`; self-pairs and repeats are harmless); `id_of` names a
    /// position's page (ties in distance go to the smallest id).
    pub fn run(
        &mut self,
        pages: usize,
        pairs: impl Iterator<Item = (Page, Page, u8)> + Clone,
        id_of: impl Fn(Page) -> i64,
        drops: &mut Vec<SweptDrop>,
    ) {
        self.earlier_partners(pages, pairs);
        self.kept.clear();
        self.kept.resize(pages, false);
        for p in 0..pages {
            let partners = &self.partners[self.starts[p] as usize..self.starts[p + 1] as usize];
            let best = partners
                .iter()
                .filter(|&&(q, _)| self.kept[q as usize])
                .map(|&(q, distance)| (distance, id_of(q)))
                .min();
            match best {
                Some((distance, keep)) => drops.push((p as Page, keep, distance)),
                None => self.kept[p] = true,
            }
        }
    }

    fn earlier_partners(
        &mut self,
        pages: usize,
        pairs: impl Iterator<Item = (Page, Page, u8)> + Clone,
    ) {
        self.starts.clear();
        self.starts.resize(pages + 1, 0);
        for (a, b, _) in pairs.clone() {
            if a != b {
                self.starts[a.max(b) as usize + 1] += 1;
            }
        }
        for p in 0..pages {
            self.starts[p + 1] += self.starts[p];
        }
        self.partners.clear();
        self.partners.resize(self.starts[pages] as usize, (0, 0));
        self.fill.clear();
        self.fill.extend_from_slice(&self.starts[..pages]);
        for (a, b, distance) in pairs {
            let (first, later) = (a.min(b), a.max(b));
            if first != later {
                self.partners[self.fill[later as usize] as usize] = (first, distance);
                self.fill[later as usize] += 1;
            }
        }
    }
}

/// The [`DropPolicy::Direct`] drops over `pages` and the `pairs` among them,
/// sorted by id: [`DirectPass`] over one component.
pub fn direct_drops(pages: &[RankedPage], pairs: &[WeightedPair]) -> Result<Vec<Drop>> {
    let mut drops = Vec::new();
    DirectPass::default().drops(pages, pairs, &mut drops)?;
    drops.sort_unstable();
    Ok(drops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_alternates_keep_and_drop() {
        let pages: Vec<RankedPage> = (0..6).map(|i| (false, i)).collect();
        let pairs: Vec<WeightedPair> = (0..5).map(|i| (i + 1, i, 2)).collect();
        let drops = direct_drops(&pages, &pairs).unwrap();
        assert_eq!(drops, vec![(1, 0, 2), (3, 2, 2), (5, 4, 2)]);
    }

    #[test]
    fn a_long_chain_given_out_of_order_alternates_too() {
        // Past LINEAR_SEARCH_PAGES, positions come from the id table.
        let n = 3 * LINEAR_SEARCH_PAGES as i64;
        let pages: Vec<RankedPage> = (0..n).rev().map(|i| (false, i)).collect();
        let pairs: Vec<WeightedPair> = (0..n - 1).map(|i| (i, i + 1, 1)).collect();
        let drops = direct_drops(&pages, &pairs).unwrap();
        let expected: Vec<Drop> = (0..n / 2).map(|i| (2 * i + 1, 2 * i, 1)).collect();
        assert_eq!(drops, expected);
    }

    #[test]
    fn a_page_with_two_ranks_is_an_error_in_small_and_large_components() {
        for n in [3, 3 * LINEAR_SEARCH_PAGES as i64] {
            let mut pages: Vec<RankedPage> = (0..n).map(|i| (false, i)).collect();
            pages.push((true, 1));
            let error = direct_drops(&pages, &[(0, 1, 0)]).unwrap_err();
            assert!(error.to_string().contains("page 1 "), "{error}");
        }
    }

    #[test]
    fn the_nearest_kept_partner_wins_then_the_smallest_id() {
        // 10 and 20 are corpus pages (first); 5 is paired with both.
        let pages = vec![(true, 20), (true, 10), (false, 5), (false, 6)];
        let pairs = vec![(5, 10, 3), (5, 20, 1), (6, 10, 2), (6, 20, 2)];
        let drops = direct_drops(&pages, &pairs).unwrap();
        assert_eq!(drops, vec![(5, 20, 1), (6, 10, 2)]);
    }

    #[test]
    fn a_page_whose_earlier_partners_are_all_dropped_is_kept() {
        // 1 is kept, 2 drops for 1, and 3 (paired only with 2) is kept.
        let pages = vec![(false, 1), (false, 2), (false, 3)];
        let drops = direct_drops(&pages, &[(1, 2, 1), (2, 3, 1), (3, 3, 0)]).unwrap();
        assert_eq!(drops, vec![(2, 1, 1)]);
    }

    #[test]
    fn a_pair_outside_the_pages_is_an_error() {
        let error = direct_drops(&[(false, 1)], &[(1, 2, 0)]).unwrap_err();
        assert!(error.to_string().contains("(1, 2)"), "{error}");
    }

    #[test]
    fn policies_print_as_the_flag_spells_them() {
        use clap::ValueEnum;
        for policy in [DropPolicy::Direct, DropPolicy::Component] {
            assert_eq!(DropPolicy::from_str(&policy.to_string(), false), Ok(policy));
        }
        assert!(DropPolicy::from_str("nearest", false).is_err());
    }
}
