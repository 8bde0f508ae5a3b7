//! Which pages to drop, and in favour of which kept page.
//!
//! A component joins pages through chains: in a page edited a little every
//! day, the first and the last version may be far more than k bits apart.
//! Dropping every page of a component in favour of its representative
//! ([`DropPolicy::Component`]) then drops pages for a page they were never
//! paired with. [`DropPolicy::Direct`] only drops a page for a kept page it is
//! paired with, so every drop is backed by a pair within k.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::components::{Page, MISSING};

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

/// A page as the output needs it: `(id, index, what the caller carries
/// along)`; the third field fills what would be padding.
pub type KeyedPage = (i64, Page, u32);

/// Pages sorted by id (one radix sort): the order rows are written in, and
/// the order [`direct_drops`] ranks pages by.
pub fn sorted_by_id(pages: impl Iterator<Item = KeyedPage>) -> Vec<KeyedPage> {
    let mut by_id: Vec<KeyedPage> = pages.collect();
    radsort::sort_by_key(&mut by_id, |&(id, ..)| id);
    by_id
}

/// The [`DropPolicy::Direct`] drops of a set of pages, `(index, keep_id,
/// distance)`, in priority order: those of pages that rank first, by id,
/// then those of the others, by id. They are taken page by page in id
/// order ([`DirectDrops::take`]) with a cursor into each of the two runs:
/// no lookup table, no random access.
#[derive(Debug, Default)]
pub struct DirectDrops {
    drops: Vec<(Page, i64, u8)>,
    /// How many of `drops` are of pages that rank first.
    first: usize,
    /// The next drop of each run.
    next: [usize; 2],
}

impl DirectDrops {
    /// How many pages are dropped.
    pub fn len(&self) -> usize {
        self.drops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.drops.is_empty()
    }

    /// The drops the sweep found, `(position, keep_id, distance)` in
    /// position order; positions below `first_positions` rank first.
    fn from_sweep(drops: Vec<(Page, i64, u8)>, first_positions: usize) -> DirectDrops {
        let first = drops.partition_point(|&(at, ..)| (at as usize) < first_positions);
        DirectDrops {
            next: [0, first],
            drops,
            first,
        }
    }

    /// The next drop in id order (`id_of` names a page), whichever run it
    /// is in: for a caller that walks the drops rather than its pages.
    pub fn next_by_id(&mut self, id_of: impl Fn(Page) -> i64) -> Option<(Page, i64, u8)> {
        let ends = [self.first, self.drops.len()];
        let id_at = |run: usize| {
            let at = self.next[run];
            (at < ends[run]).then(|| id_of(self.drops[at].0))
        };
        let run = match (id_at(0), id_at(1)) {
            (Some(a), Some(b)) => usize::from(b < a),
            (Some(_), None) => 0,
            (None, Some(_)) => 1,
            (None, None) => return None,
        };
        self.next[run] += 1;
        Some(self.drops[self.next[run] - 1])
    }

    /// The drop of `page`, if it is dropped; pages must come in id order.
    pub fn take(&mut self, page: Page) -> Option<(i64, u8)> {
        let ends = [self.first, self.drops.len()];
        for (next, end) in self.next.iter_mut().zip(ends) {
            let at = *next;
            if at < end && self.drops[at].0 == page {
                *next += 1;
                let (_, keep, distance) = self.drops[at];
                return Some((keep, distance));
            }
        }
        None
    }
}

/// The [`DropPolicy::Direct`] drops among `by_id` (pages with indexes
/// below `n`, sorted by id) whose `rank` is known, paired by `pairs` (by
/// index; a pair whose first end is not swept is skipped): one sweep in
/// priority order (those that rank first, then the others, each by id)
/// over all of them. Clusters do not interact, so one sweep over many
/// clusters is each cluster's pass; a cluster decided elsewhere is left out
/// by ranking its pages `None`.
pub fn direct_drops(
    by_id: &[KeyedPage],
    n: usize,
    rank: impl Fn(&KeyedPage) -> Option<bool>,
    pairs: impl Iterator<Item = (Page, Page, u8)>,
) -> DirectDrops {
    // Positions in priority order, as places in `by_id`: one pass, each
    // page ranked once.
    let mut order: Vec<Page> = Vec::with_capacity(by_id.len());
    let mut later: Vec<Page> = Vec::new();
    for (at, page) in by_id.iter().enumerate() {
        match rank(page) {
            Some(true) => order.push(at as Page),
            Some(false) => later.push(at as Page),
            None => {}
        }
    }
    let first_positions = order.len();
    order.append(&mut later);
    drop(later);
    let mut position = vec![MISSING; n];
    for (at, &place) in order.iter().enumerate() {
        position[by_id[place as usize].1 as usize] = at as Page;
    }
    let ranked = pairs
        .filter(|&(a, _, _)| position[a as usize] != MISSING)
        .map(|(a, b, distance)| (position[a as usize], position[b as usize], distance));
    let id_of = |at: Page| by_id[order[at as usize] as usize].0;
    let mut drops = greedy_sweep(order.len(), first_positions, ranked, id_of);
    for drop in &mut drops.drops {
        drop.0 = by_id[order[drop.0 as usize] as usize].1;
    }
    drops
}

/// The greedy sweep itself, over `pages` pages named by their position in
/// priority order (the first `first_positions` rank first), paired by
/// `pairs` (`(position, position, distance)`, every position below
/// `pages`; self-pairs and repeats are harmless); `id_of` names a
/// position's page (ties in distance go to the smallest id). Every pair
/// becomes `(later position, earlier position, distance)`, radix-sorted by
/// its later end (a few streaming passes: building adjacency lists instead
/// costs a random access per pair end, and for a chain of scattered ids
/// each is a cache miss), then one pass in order.
pub fn greedy_sweep(
    pages: usize,
    first_positions: usize,
    pairs: impl Iterator<Item = (Page, Page, u8)>,
    id_of: impl Fn(Page) -> i64,
) -> DirectDrops {
    let mut oriented: Vec<(Page, Page, u8)> = Vec::with_capacity(pairs.size_hint().1.unwrap_or(0));
    oriented.extend(
        pairs
            .filter(|&(a, b, _)| a != b)
            .map(|(a, b, distance)| (a.max(b), a.min(b), distance)),
    );
    radsort::sort_by_key(&mut oriented, |&(later, ..)| later);
    let mut kept = vec![false; pages];
    let mut drops = Vec::new();
    let mut partners = oriented.iter().peekable();
    for p in 0..pages as Page {
        // The nearest kept partner; ids are looked up only to break a tie
        // in distance (positions are not in id order across ranks).
        let mut best: Option<(u8, Page)> = None;
        while let Some(&(_, q, distance)) = partners.next_if(|&&(later, ..)| later == p) {
            if !kept[q as usize] {
                continue;
            }
            best = match best {
                Some((d, b)) if d < distance || (d == distance && id_of(b) <= id_of(q)) => {
                    Some((d, b))
                }
                _ => Some((distance, q)),
            };
        }
        match best {
            Some((distance, keep)) => drops.push((p, id_of(keep), distance)),
            None => kept[p as usize] = true,
        }
    }
    DirectDrops::from_sweep(drops, first_positions)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page: `(ranks first, id)`.
    type RankedPage = (bool, i64);
    /// A pair: `(id, id, distance)`, in either direction.
    type WeightedPair = (i64, i64, u8);
    /// A drop row: `(id, keep_id, distance)`.
    type Drop = (i64, i64, u8);

    /// The drops over `pages` (`(ranks first, id)`) and the `pairs` among
    /// them, sorted by id.
    fn drops_of(pages: &[RankedPage], pairs: &[WeightedPair]) -> Vec<Drop> {
        let index = |id: i64| pages.iter().position(|p| p.1 == id).unwrap() as Page;
        let indexed = pairs.iter().map(|&(a, b, d)| (index(a), index(b), d));
        let by_id =
            sorted_by_id((0..pages.len() as Page).map(|page| (pages[page as usize].1, page, 0)));
        let rank = |&(_, page, _): &KeyedPage| Some(pages[page as usize].0);
        let mut drops = direct_drops(&by_id, pages.len(), rank, indexed);
        let found: Vec<Drop> = by_id
            .iter()
            .filter_map(|&(id, page, _)| drops.take(page).map(|(keep, d)| (id, keep, d)))
            .collect();
        assert_eq!(found.len(), drops.len());
        found
    }

    #[test]
    fn a_chain_alternates_keep_and_drop() {
        let pages: Vec<RankedPage> = (0..6).map(|i| (false, i)).collect();
        let pairs: Vec<WeightedPair> = (0..5).map(|i| (i + 1, i, 2)).collect();
        let drops = drops_of(&pages, &pairs);
        assert_eq!(drops, vec![(1, 0, 2), (3, 2, 2), (5, 4, 2)]);
    }

    #[test]
    fn a_long_chain_given_out_of_order_alternates_too() {
        let n = 48;
        let pages: Vec<RankedPage> = (0..n).rev().map(|i| (false, i)).collect();
        let pairs: Vec<WeightedPair> = (0..n - 1).map(|i| (i, i + 1, 1)).collect();
        let drops = drops_of(&pages, &pairs);
        let expected: Vec<Drop> = (0..n / 2).map(|i| (2 * i + 1, 2 * i, 1)).collect();
        assert_eq!(drops, expected);
    }

    #[test]
    fn the_nearest_kept_partner_wins_then_the_smallest_id() {
        // 10 and 20 are corpus pages (first); 5 is paired with both.
        let pages = vec![(true, 20), (true, 10), (false, 5), (false, 6)];
        let pairs = vec![(5, 10, 3), (5, 20, 1), (6, 10, 2), (6, 20, 2)];
        let drops = drops_of(&pages, &pairs);
        assert_eq!(drops, vec![(5, 20, 1), (6, 10, 2)]);
    }

    #[test]
    fn a_page_whose_earlier_partners_are_all_dropped_is_kept() {
        // 1 is kept, 2 drops for 1, and 3 (paired only with 2) is kept.
        let pages = vec![(false, 1), (false, 2), (false, 3)];
        let drops = drops_of(&pages, &[(1, 2, 1), (2, 3, 1), (3, 3, 0)]);
        assert_eq!(drops, vec![(2, 1, 1)]);
    }

    #[test]
    fn pages_without_a_rank_are_left_to_others() {
        // 0-1-2 is decided here; 3-4 is another's (no rank): no drop of 4.
        let pages: Vec<RankedPage> = (0..5).map(|i| (false, i)).collect();
        let pairs = [(0, 1, 1), (1, 2, 1), (3, 4, 1)];
        let by_id = sorted_by_id((0..5).map(|page| (i64::from(page), page, 0)));
        let rank = |&(_, page, _): &KeyedPage| (page < 3).then_some(pages[page as usize].0);
        let mut drops = direct_drops(&by_id, 5, rank, pairs.into_iter());
        let found: Vec<(Page, i64)> = (0..5)
            .filter_map(|page| drops.take(page).map(|(keep, _)| (page, keep)))
            .collect();
        assert_eq!(found, vec![(1, 0)]);
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
