//! The owner of joined clusters under `--drop-policy direct`: the clusters
//! whose pairs several workers read, each sent to one worker (a hash of its
//! id) that chooses its drops. Their `clusters/` rows need no owner: every
//! worker writes its own pages' (see [`crate::cluster::local_clusters`]).
//!
//! A sender gives its pages in priority order (those that rank first, then
//! the others, each by keys and then id) and numbers them densely (their
//! *slots* here), and names a pair's ends by those slots: the owner merges
//! the senders' runs into priority order (a page several workers saw comes
//! once from each, adjacent in the merge) and never looks an id up. All the
//! owner's clusters then share one greedy sweep in priority order, as a
//! worker's own clusters do: a 10M-page chain costs a merge and a pass, not
//! a sort or a hash lookup per pair end.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::Stream;

use crate::cluster::components::{Closeness, Page};
use crate::cluster::drop_policy::{
    greedy_sweep, sorted_by_later_end, DirectDrops, DropCursor, Steps,
};
use crate::cluster::keep_order::{KeptBy, KeyWords, MAX_KEY_WORDS};
use crate::cluster::part_runs::{RunBuilder, RunSlice};
use crate::cluster::summary::ClusterTotals;
use crate::exec::after_all::after_all_in_slices;
use crate::exec::runtime::Failure;
use crate::exec::sorting::pieces_in;
use crate::io::commit::WorkerOutcome;

/// A pair as an owner is sent it: `(slot, slot, closeness)`, its ends'
/// slots from its source (and once placed, their positions).
pub(crate) type SlotPair = (Page, Page, Closeness);

/// What a worker sends a joined cluster's owner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Assigned {
    /// The ids of pages that rank `first` (or not) in priority order, the
    /// first at slot `first_slot` of `source`, and their keys (the same
    /// number of words a page, none if pages have no keys).
    Pages {
        source: u32,
        first_slot: u32,
        first: bool,
        ids: Vec<i64>,
        keys: Vec<u32>,
    },
    /// Pairs `(slot, slot, closeness)` by their ends' slots from `source`.
    Pairs { source: u32, pairs: Vec<SlotPair> },
}

/// An [`Assigned`] record and the global index of the worker it goes to.
pub(crate) type Addressed = (u32, Assigned);

/// The owner's side of the dataflow.
pub(crate) struct ClusterOwner {
    /// The run its rows form (unique among the producers of rows).
    pub(crate) run: u32,
    pub(crate) parts: usize,
    /// The key of each word of a page's keys.
    pub(crate) word_keys: Vec<KeptBy>,
    pub(crate) state: Rc<RefCell<WorkerOutcome<ClusterTotals>>>,
    pub(crate) failure: Arc<Failure>,
}

/// Consecutive pages of one source: `(first slot, rank first, ids, keys)`.
type PageSlice = (u32, bool, Vec<i64>, Vec<u32>);

/// What an owner received, per source: slices of pages and of pairs.
#[derive(Default)]
struct Inbox {
    pages: Vec<Vec<PageSlice>>,
    pairs: Vec<Vec<Vec<SlotPair>>>,
}

impl Inbox {
    fn add(&mut self, assigned: Assigned) {
        let source = match &assigned {
            Assigned::Pages { source, .. } | Assigned::Pairs { source, .. } => *source as usize,
        };
        if self.pages.len() <= source {
            self.pages.resize_with(source + 1, Vec::new);
            self.pairs.resize_with(source + 1, Vec::new);
        }
        match assigned {
            Assigned::Pages {
                first_slot,
                first,
                ids,
                keys,
                ..
            } => self.pages[source].push((first_slot, first, ids, keys)),
            Assigned::Pairs { pairs, .. } => self.pairs[source].push(pairs),
        }
    }

    fn is_empty(&self) -> bool {
        self.pages.iter().all(Vec::is_empty)
    }
}

impl ClusterOwner {
    /// Takes every record of this worker's joined clusters; once all have
    /// come, gives their drop rows.
    pub(crate) fn rows<'scope>(
        self,
        assigned: Stream<'scope, u64, Vec<Addressed>>,
    ) -> Stream<'scope, u64, Vec<RunSlice>> {
        let inbox = Rc::new(RefCell::new(Inbox::default()));
        let absorbed = inbox.clone();
        after_all_in_slices(
            assigned,
            Exchange::new(|&(target, _): &Addressed| target as u64),
            "OwnClusters",
            move |data| {
                let inbox = &mut *absorbed.borrow_mut();
                data.drain(..).for_each(|(_, assigned)| inbox.add(assigned));
            },
            move || {
                let inbox = std::mem::take(&mut *inbox.borrow_mut());
                let mut work = (!self.failure.happened() && !inbox.is_empty())
                    .then(|| OwnerWork::start(&self, inbox));
                move |give: &mut dyn FnMut(RunSlice)| match work.as_mut() {
                    Some(Ok(work)) => work.next_slice(give),
                    Some(Err(_)) => {
                        if let Some(Err(error)) = work.take() {
                            self.state.borrow_mut().fail(error, &self.failure);
                        }
                        false
                    }
                    None => {
                        // No rows, but the writers wait for this owner's
                        // runs to end.
                        RunBuilder::new(self.run, self.parts).finish(give);
                        false
                    }
                }
            },
        )
    }
}

/// Drop rows given per slice (see [`after_all_in_slices`]).
const SLICE: usize = 1 << 18;

/// An owner's drops, chosen, given as rows in id order a slice at a time.
struct OwnerWork {
    drops: DirectDrops,
    cursor: DropCursor,
    rows: RunBuilder,
}

impl OwnerWork {
    /// Merges the pages into priority order and chooses the drops.
    fn start(owner: &ClusterOwner, inbox: Inbox) -> Result<OwnerWork> {
        let started = Instant::now();
        let Inbox { pages, mut pairs } = inbox;
        let runs = pages
            .into_iter()
            .enumerate()
            .map(|(source, slices)| SourceRun::new(source, slices))
            .collect::<Result<Vec<_>>>()?;
        let merged = merge_in_priority_order(runs, &owner.word_keys)?;
        to_positions(&mut pairs, &merged.positions)?;
        drop(merged.positions);
        let ids = merged.ids;
        let slices: Vec<&[SlotPair]> = pairs.iter().flatten().map(Vec::as_slice).collect();
        let len = slices.iter().map(|slice| slice.len()).sum();
        let oriented = sorted_by_later_end(ids.len(), len, |range| pieces_in(&slices, range), 1);
        drop(pairs);
        let pages = ids.len();
        let drops = greedy_sweep(&merged.steps, oriented, ids);
        // With keys, priority order within a run is not id order.
        let drops = match merged.keyed {
            true => drops.into_id_order(1),
            false => drops,
        };
        tracing::info!(
            pages,
            seconds = started.elapsed().as_secs_f64(),
            rss_mib = ?crate::exec::logging::resident_mib(),
            "joined clusters' drops chosen"
        );
        Ok(OwnerWork {
            cursor: drops.start(),
            drops,
            rows: RunBuilder::new(owner.run, owner.parts),
        })
    }

    /// Gives the next slice of drop rows in id order; false once all are
    /// given.
    fn next_slice(&mut self, give: &mut dyn FnMut(RunSlice)) -> bool {
        for _ in 0..SLICE {
            let Some(row) = self.drops.next_by_id(&mut self.cursor, None) else {
                self.rows.finish(give);
                return false;
            };
            self.rows.drop(row, give);
        }
        true
    }
}

/// A page's place in priority order: `(ranks later, keys, id)`.
type PriorityKey = (bool, KeyWords, i64);

/// One source's pages in slot order (so in priority order), read once,
/// each slice freed once read.
struct SourceRun {
    source: usize,
    slices: std::vec::IntoIter<PageSlice>,
    /// The slice being read, and where.
    current: Option<(PageSlice, usize)>,
    /// Slots in all.
    len: usize,
    /// Whether its pages came with keys.
    keyed: bool,
}

impl SourceRun {
    /// The slices put end to end, which must cover the slots from 0
    /// without a gap or an overlap.
    fn new(source: usize, mut slices: Vec<PageSlice>) -> Result<SourceRun> {
        slices.sort_unstable_by_key(|&(first_slot, ..)| first_slot);
        let mut slots = 0;
        for &(first_slot, _, ref ids, ref keys) in &slices {
            if first_slot as usize != slots {
                bail!("worker {source} sent slot {first_slot} out of place (internal error)");
            }
            if !keys.is_empty() && keys.len() % ids.len().max(1) != 0 {
                bail!("worker {source} sent keys that are not whole pages' (internal error)");
            }
            slots += ids.len();
        }
        let keyed = slices.iter().any(|(.., keys)| !keys.is_empty());
        Ok(SourceRun {
            source,
            slices: slices.into_iter(),
            current: None,
            len: slots,
            keyed,
        })
    }

    /// The next page's place in priority order.
    fn peek(&mut self) -> Option<PriorityKey> {
        loop {
            if let Some(((_, first, ids, keys), at)) = &self.current {
                if let Some(&id) = ids.get(*at) {
                    let words = keys.len() / ids.len();
                    let mut page_keys = [0; MAX_KEY_WORDS];
                    page_keys[..words].copy_from_slice(&keys[at * words..(at + 1) * words]);
                    return Some((!first, page_keys, id));
                }
            }
            self.current = Some((self.slices.next()?, 0));
        }
    }

    fn advance(&mut self) {
        if let Some((_, at)) = &mut self.current {
            *at += 1;
        }
    }
}

/// The sources' pages merged into priority order.
struct Merged {
    /// The distinct pages' ids, by position.
    ids: Vec<i64>,
    /// Where each position first differs from the one before it.
    steps: Steps,
    /// Whether the pages came with keys.
    keyed: bool,
    /// Each source's slots' positions.
    positions: Vec<Vec<Page>>,
}

/// Merges the sources' runs (each in priority order: those that rank first,
/// by keys and id, then the others) into one; a page several sources sent
/// (ranked alike by all, see [`crate::cluster::join::Join`], with
/// the same keys, read from the same rows) is one position. Each position's
/// step is the first of `word_keys` its keys differ from the last's in.
fn merge_in_priority_order(mut runs: Vec<SourceRun>, word_keys: &[KeptBy]) -> Result<Merged> {
    let mut ids: Vec<i64> = Vec::with_capacity(runs.iter().map(|run| run.len).sum());
    let mut steps = Steps::default();
    let keyed = runs.iter().any(|run| run.keyed);
    let mut positions: Vec<Vec<Page>> =
        runs.iter().map(|run| Vec::with_capacity(run.len)).collect();
    let mut heads: Vec<Option<PriorityKey>> = runs.iter_mut().map(SourceRun::peek).collect();
    let mut last: Option<PriorityKey> = None;
    loop {
        // The least head: sources are few (the workers), and a scan of a
        // handful of keys in cache beats a heap's pop and push per page.
        let least = heads
            .iter()
            .enumerate()
            .filter_map(|(r, head)| head.map(|key| (key, r)))
            .min();
        let Some((key, r)) = least else {
            break;
        };
        match last {
            Some(last) if last == key => {}
            Some(last) if last > key => {
                bail!(
                    "worker {} sent its pages out of order (internal error)",
                    runs[r].source
                )
            }
            _ => {
                if keyed {
                    let step = last.map(|last| KeptBy::between(&last.1, &key.1, word_keys));
                    steps.by_keys.push(step.unwrap_or(KeptBy::ID));
                }
                ids.push(key.2);
                steps.first_positions += usize::from(!key.0);
                last = Some(key);
            }
        }
        positions[r].push(ids.len() as Page - 1);
        runs[r].advance();
        heads[r] = runs[r].peek();
    }
    Ok(Merged {
        ids,
        steps,
        keyed,
        positions,
    })
}

/// Every pair's ends, slots of its source, turned into positions in place.
fn to_positions(pairs: &mut [Vec<Vec<SlotPair>>], positions: &[Vec<Page>]) -> Result<()> {
    for (source, slices) in pairs.iter_mut().enumerate() {
        let positions = positions.get(source).map_or(&[][..], Vec::as_slice);
        for (a, b, _) in slices.iter_mut().flatten() {
            match (positions.get(*a as usize), positions.get(*b as usize)) {
                (Some(&at_a), Some(&at_b)) => (*a, *b) = (at_a, at_b),
                _ => bail!(
                    "a pair from worker {source} names a page it did not send (internal error)"
                ),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(source: usize, slices: Vec<PageSlice>) -> SourceRun {
        SourceRun::new(source, slices).unwrap()
    }

    #[test]
    fn runs_merge_into_priority_order_with_shared_pages_once() {
        // Source 0: corpus pages 4, 9, then 1, 7, 8; source 1: corpus page
        // 9 (shared), then 2, 7 (shared), 10, in slices given out of order.
        let runs = vec![
            run(
                0,
                vec![
                    (2, false, vec![1, 7, 8], Vec::new()),
                    (0, true, vec![4, 9], Vec::new()),
                ],
            ),
            run(
                1,
                vec![
                    (1, false, vec![2], Vec::new()),
                    (0, true, vec![9], Vec::new()),
                    (2, false, vec![7, 10], Vec::new()),
                ],
            ),
        ];
        let merged = merge_in_priority_order(runs, &[]).unwrap();
        assert_eq!(merged.ids, vec![4, 9, 1, 2, 7, 8, 10]);
        assert_eq!(merged.steps.first_positions, 2);
        assert!(merged.steps.by_keys.is_empty());
        assert_eq!(
            merged.positions,
            vec![vec![0, 1, 2, 4, 5], vec![1, 3, 4, 6]]
        );
    }

    #[test]
    fn runs_with_keys_merge_by_keys_then_id() {
        // Two keys of a word each: source 0 sends 5 (keys 1, 4) and 2
        // (keys 3, 0); source 1 sends 8 (keys 1, 4), 6 (keys 1, 6), then 2
        // (shared); corpus page 9 (keys 7, 7) ranks first whatever its keys.
        let runs = vec![
            run(0, vec![(0, false, vec![5, 2], vec![1, 4, 3, 0])]),
            run(
                1,
                vec![
                    (0, true, vec![9], vec![7, 7]),
                    (1, false, vec![8, 6, 2], vec![1, 4, 1, 6, 3, 0]),
                ],
            ),
        ];
        // The keys are at places 1 and 2 of the order (corpus is 0).
        let order = crate::cluster::keep_order::KeepOrder::parse("corpus,rel-canonical,longest");
        let word_keys = order.unwrap().word_keys();
        let merged = merge_in_priority_order(runs, &word_keys).unwrap();
        assert_eq!(merged.ids, vec![9, 5, 8, 6, 2]);
        assert_eq!(merged.steps.first_positions, 1);
        let (second, third) = (word_keys[0], word_keys[1]);
        assert_ne!(second, third);
        assert_eq!(
            merged.steps.by_keys,
            vec![KeptBy::ID, second, KeptBy::ID, third, second]
        );
        assert_eq!(merged.positions, vec![vec![1, 4], vec![0, 2, 3, 4]]);
    }

    #[test]
    fn a_gap_in_slots_or_pages_out_of_order_is_an_internal_error() {
        assert!(SourceRun::new(
            0,
            vec![
                (0, false, vec![1], Vec::new()),
                (2, false, vec![3], Vec::new())
            ]
        )
        .is_err());
        let unordered = vec![run(0, vec![(0, false, vec![5, 3], Vec::new())])];
        assert!(merge_in_priority_order(unordered, &[]).is_err());
        let mut pairs = vec![vec![vec![(0, 1, 2)]]];
        assert!(to_positions(&mut pairs, &[vec![7]]).is_err());
        assert!(to_positions(&mut pairs, &[vec![7, 3]]).is_ok());
        assert_eq!(pairs, vec![vec![vec![(7, 3, 2)]]]);
    }
}
