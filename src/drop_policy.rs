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
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

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

/// The [`DropPolicy::Direct`] drops over `pages` and the `pairs` among them,
/// sorted by id. The greedy pass is the sequential one, so the result is the
/// same whatever order the pages and pairs come in: it depends on priority
/// order alone. Time is linear in the pairs after one sort of the pages.
pub fn direct_drops(pages: &[RankedPage], pairs: &[WeightedPair]) -> Result<Vec<Drop>> {
    let mut order: Vec<RankedPage> = pages.to_vec();
    order.sort_unstable_by_key(|&(first, id)| (!first, id));
    order.dedup();
    let position: FxHashMap<i64, u32> = order
        .iter()
        .enumerate()
        .map(|(p, &(_, id))| (id, p as u32))
        .collect();
    if position.len() != order.len() {
        bail!("a page was given two ranks (internal error)");
    }
    let earlier = earlier_partners(&position, pairs, order.len())?;
    let mut kept = vec![false; order.len()];
    let mut drops = Vec::new();
    for (p, &(_, id)) in order.iter().enumerate() {
        let best = earlier
            .of(p)
            .iter()
            .filter(|&&(q, _)| kept[q as usize])
            .map(|&(q, distance)| (distance, order[q as usize].1))
            .min();
        match best {
            Some((distance, keep)) => drops.push((id, keep, distance)),
            None => kept[p] = true,
        }
    }
    drops.sort_unstable();
    Ok(drops)
}

/// Each page's partners that come before it in priority order, as a
/// compressed adjacency list (one counting pass, one filling pass).
struct Earlier {
    starts: Vec<u32>,
    partners: Vec<(u32, u8)>,
}

impl Earlier {
    fn of(&self, p: usize) -> &[(u32, u8)] {
        &self.partners[self.starts[p] as usize..self.starts[p + 1] as usize]
    }
}

fn earlier_partners(
    position: &FxHashMap<i64, u32>,
    pairs: &[WeightedPair],
    pages: usize,
) -> Result<Earlier> {
    let ordered = |&(a, b, distance): &WeightedPair| -> Result<Option<(u32, u32, u8)>> {
        let (Some(&pa), Some(&pb)) = (position.get(&a), position.get(&b)) else {
            bail!("pair ({a}, {b}) names a page outside its component (internal error)");
        };
        Ok((pa != pb).then(|| (pa.min(pb), pa.max(pb), distance)))
    };
    let mut starts = vec![0u32; pages + 1];
    for pair in pairs {
        if let Some((_, later, _)) = ordered(pair)? {
            starts[later as usize + 1] += 1;
        }
    }
    for p in 0..pages {
        starts[p + 1] += starts[p];
    }
    let mut fill = starts.clone();
    let mut partners = vec![(0u32, 0u8); starts[pages] as usize];
    for pair in pairs {
        if let Some((first, later, distance)) = ordered(pair)? {
            partners[fill[later as usize] as usize] = (first, distance);
            fill[later as usize] += 1;
        }
    }
    Ok(Earlier { starts, partners })
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
