//! From sightings to links: the pages several workers saw are found where
//! their ids meet, and each local component that shares one is described
//! to the join by its worker.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::Stream;

use super::links::{owner_of, JoinLabel, Node, NodeLink, LOOKAHEAD};
use crate::cluster::components::{Chunked, Components, KeyedPage, Page, MISSING};
use crate::exec::after_all::{after_all_in_slices, as_it_comes};
use crate::exec::parallel::prefetch;

/// A page as one worker's share holds it: `(id, worker and rank,
/// local root, page)`, the rank (whether the page ranks first, as that
/// worker saw it) in the lowest bit. The page comes back with its joins, so
/// that its worker marks it by index rather than looking its id up.
pub(crate) type Sighting = (i64, u32, Page, Page);

/// A local component that shares a page with another worker's, sent to its
/// worker: `(worker, local root, the page, the node it joins, whether the
/// page ranks first)`; the node joined is the least of the page's
/// sightings, and the page ranks first if any worker saw it so (only one
/// may have seen the pair that makes it a corpus page).
pub(crate) type Join = (u32, Page, Page, Node, bool);

/// A page other workers saw too, as this worker needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SharedPage {
    /// This worker writes the page's rows (it is the least that saw it).
    pub(crate) writes: bool,
    /// The page ranks first, as all the workers that saw it know together.
    pub(crate) first: bool,
}

/// The pages of a worker that other workers saw too: a byte of flags per
/// page, read by index as pages are routed (a hash map by id was most of
/// the routing's time when most clusters span workers).
#[derive(Debug, Default)]
pub(crate) struct SharedPages {
    flags: Vec<u8>,
}

const SEEN_ELSEWHERE: u8 = 1;
const WRITES: u8 = 2;
const RANKS_FIRST: u8 = 4;

impl SharedPages {
    /// Marks `page` (of `pages` in all) as seen by other workers too.
    fn mark(&mut self, page: Page, pages: usize, shared: SharedPage) {
        if self.flags.is_empty() {
            self.flags = vec![0; pages];
        }
        self.flags[page as usize] = SEEN_ELSEWHERE
            | if shared.writes { WRITES } else { 0 }
            | if shared.first { RANKS_FIRST } else { 0 };
    }

    /// Asks the CPU to fetch a page's flags ahead of [`Self::get`].
    pub(crate) fn prefetch(&self, page: Page) {
        if let Some(flags) = self.flags.get(page as usize) {
            prefetch(flags);
        }
    }

    /// The page, if other workers saw it too.
    pub(crate) fn get(&self, page: Page) -> Option<SharedPage> {
        let flags = *self.flags.get(page as usize)?;
        (flags & SEEN_ELSEWHERE != 0).then_some(SharedPage {
            writes: flags & WRITES != 0,
            first: flags & RANKS_FIRST != 0,
        })
    }
}

/// The sightings of `pages`: those of a worker's share of its process's
/// pages that pass the [`super::SharedFilter`], in id order, so that each page's
/// owner merges sorted runs instead of sorting them, each with whether it
/// ranks first.
pub(crate) fn sightings<'a>(
    pages: impl Iterator<Item = (&'a KeyedPage, bool)> + 'a,
    worker: u32,
) -> impl Iterator<Item = Sighting> + 'a {
    pages.map(move |(&(id, page, root), first)| (id, worker << 1 | u32::from(first), root, page))
}

/// At each page's owner: the pages several workers saw, as joins of their
/// local components, found as the sightings come ([`SharedFinder`]).
pub(crate) fn find_shared<'scope>(
    sightings: Stream<'scope, u64, Vec<Sighting>>,
    peers: usize,
) -> Stream<'scope, u64, Vec<Join>> {
    let finder = Rc::new(RefCell::new(SharedFinder::new(peers)));
    let absorbed = finder.clone();
    as_it_comes(
        sightings,
        Exchange::new(move |&(id, ..): &Sighting| owner_of(id, peers) as u64),
        "FindShared",
        move |data, give| {
            let mut finder = absorbed.borrow_mut();
            finder.absorb(data);
            finder.find_ready(|same| joins_of(same, &mut *give));
        },
        move |give| {
            // Taken, so that the runs' room is freed once they are merged.
            let mut finder = std::mem::replace(&mut *finder.borrow_mut(), SharedFinder::new(0));
            finder.find_rest(|same| joins_of(same, &mut *give));
        },
    )
}

/// The joins of one shared page, given its sightings.
fn joins_of(same: &[Sighting], give: &mut dyn FnMut(Join)) {
    let node = |&(_, worker, root, _): &Sighting| (worker >> 1, root);
    // The least worker, not the first to arrive: who writes the page must
    // not depend on timing.
    let head = same.iter().map(node).min().unwrap_or(node(&same[0]));
    let first = same.iter().any(|&(_, worker, ..)| worker & 1 == 1);
    for sighting in same {
        let (worker, root) = node(sighting);
        give((worker, root, sighting.3, head, first));
    }
}

/// The sightings at one owner, merged as they come. Each worker sends its
/// sightings in id order, and timely delivers a sender's records in order,
/// so an id at or below every worker's last one so far has all of its
/// sightings in: those ids are found at once and their sightings dropped.
/// What waits is only how far the workers are apart, not every sighting
/// (held until the last came, they were a process's largest step).
struct SharedFinder {
    /// Each worker's sightings not yet merged, in id order.
    runs: Vec<VecDeque<Sighting>>,
    /// Each worker's last id so far; `None` until its first comes.
    last: Vec<Option<i64>>,
    /// Reused for the sightings of one id.
    same: Vec<Sighting>,
}

impl SharedFinder {
    fn new(peers: usize) -> SharedFinder {
        SharedFinder {
            runs: vec![VecDeque::new(); peers],
            last: vec![None; peers],
            same: Vec::new(),
        }
    }

    /// Takes a batch of sightings.
    fn absorb(&mut self, data: &mut Vec<Sighting>) {
        for sighting in data.drain(..) {
            let worker = (sighting.1 >> 1) as usize;
            let last = &mut self.last[worker];
            assert!(
                last.is_none_or(|last| last < sighting.0),
                "worker {worker}'s sightings came out of id order"
            );
            *last = Some(sighting.0);
            self.runs[worker].push_back(sighting);
        }
    }

    /// Calls `shared` with the sightings of each id in more than one run
    /// whose sightings are all in.
    fn find_ready(&mut self, shared: impl FnMut(&[Sighting])) {
        if let Some(bound) = self.last.iter().copied().min().flatten() {
            self.merge(Some(bound), shared);
        }
    }

    /// [`Self::find_ready`] once every sighting is in.
    fn find_rest(&mut self, shared: impl FnMut(&[Sighting])) {
        self.merge(None, shared);
    }

    /// Merges the runs' heads up to `bound` (every id at or below it is
    /// whole), calling `shared` with the sightings of each id in more
    /// than one run, in id order: one sift of a heap per sighting.
    fn merge(&mut self, bound: Option<i64>, mut shared: impl FnMut(&[Sighting])) {
        use std::cmp::Reverse;
        use std::collections::binary_heap::{BinaryHeap, PeekMut};
        let runs = &mut self.runs;
        let mut heads: BinaryHeap<Reverse<(i64, usize)>> = runs
            .iter()
            .enumerate()
            .filter_map(|(run, sightings)| Some(Reverse((sightings.front()?.0, run))))
            .collect();
        let same = &mut self.same;
        same.clear();
        while let Some(mut top) = heads.peek_mut() {
            let Reverse((id, run)) = *top;
            if bound.is_some_and(|bound| id > bound) {
                break;
            }
            if same.first().is_some_and(|s| s.0 != id) {
                if same.len() > 1 {
                    shared(same);
                }
                same.clear();
            }
            same.extend(runs[run].pop_front());
            match runs[run].front() {
                Some(next) => *top = Reverse((next.0, run)),
                None => drop(PeekMut::pop(top)),
            }
        }
        if same.len() > 1 {
            shared(same);
        }
        same.clear();
    }
}

/// At each joined component's worker: its least label and size, for the
/// join, once per node it joins. The worker's pages that other workers saw
/// too are marked in `shared`, with whether this worker writes them.
///
/// A component that shares several pages with the same node sends one
/// link for them all, with their copies counted: fewer links, each a
/// record through the exchange and a union in the join. Joins are made
/// into links as they come, each batch then dropped, and the links are
/// given a chunk at a time, each chunk dropped as given: the joins held
/// until the last came, and the links held while a copy of them waited
/// in the exchange, made this step a process's peak.
pub(super) fn describe_joined<'scope, L: JoinLabel>(
    joins: Stream<'scope, u64, Vec<Join>>,
    graph: Rc<RefCell<Components>>,
    shared: Rc<RefCell<SharedPages>>,
) -> Stream<'scope, u64, Vec<NodeLink<L>>> {
    let links = Rc::new(RefCell::new(JoinLinks::<L>::default()));
    let absorbed = links.clone();
    after_all_in_slices(
        joins,
        Exchange::new(|&(worker, ..): &Join| worker as u64),
        "DescribeJoined",
        move |batch| {
            let components = &*graph.borrow();
            absorbed
                .borrow_mut()
                .add(batch, components, &mut shared.borrow_mut());
            *batch = Vec::new();
        },
        move || {
            // Taken whole: the first links by root are not needed again.
            let made = std::mem::take(&mut *links.borrow_mut()).links;
            let mut chunks = made.into_chunks().into_iter();
            move |give: &mut dyn FnMut(NodeLink<L>)| match chunks.next() {
                Some(chunk) => {
                    chunk.into_iter().for_each(&mut *give);
                    true
                }
                None => false,
            }
        },
    )
}

/// The links of a worker's joins (see [`describe_joined`]), made a batch
/// at a time and kept in chunks: a root's first link is found by an array
/// by root; a root that joins several nodes (rare) gives a link for each
/// further join, not merged.
struct JoinLinks<L: JoinLabel> {
    /// Each root's first link, by root; empty until a join comes.
    first_link: Vec<u32>,
    links: Chunked<NodeLink<L>>,
}

impl<L: JoinLabel> Default for JoinLinks<L> {
    fn default() -> Self {
        JoinLinks {
            first_link: Vec::new(),
            links: Chunked::default(),
        }
    }
}

impl<L: JoinLabel> JoinLinks<L> {
    /// Adds a batch of joins, marking their pages in `shared`.
    fn add(&mut self, joins: &[Join], components: &Components, shared: &mut SharedPages) {
        if self.first_link.is_empty() && !joins.is_empty() {
            self.first_link = vec![MISSING; components.len()];
        }
        for (at, &(worker, root, page, joins_node, first)) in joins.iter().enumerate() {
            // Roots and pages are random places in this worker's arrays.
            if let Some(&(_, root, page, ..)) = joins.get(at + LOOKAHEAD) {
                components.prefetch_node(root);
                shared.prefetch(page);
                prefetch(&self.first_link[root as usize]);
            }
            let writes = (worker, root) == joins_node;
            shared.mark(page, components.len(), SharedPage { writes, first });
            let copies = i64::from(!writes);
            let first_link = &mut self.first_link[root as usize];
            let pages = match self.links.at_mut(*first_link) {
                Some(link) if link.joins == joins_node => {
                    link.pages -= copies;
                    continue;
                }
                Some(_) => 0,
                None => {
                    *first_link = self.links.len();
                    i64::from(components.component_size(root))
                }
            };
            self.links.push(NodeLink {
                node: (worker, root),
                joins: joins_node,
                least: L::of(components, root),
                pages: pages - copies,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::links::IdLabel;
    use super::*;
    use crate::cluster::components::CHUNK_BITS;

    #[test]
    fn pages_shared_with_the_same_node_make_one_link_with_their_copies() {
        // This worker's graph: one component {1, 2, 3}, one {10, 11}.
        let graph = crate::cluster::components::SharedGraph::new(false, 1, 0);
        graph.prepare(0, crate::cluster::components::PageEstimate::exact(0), None);
        let mut ends = Vec::new();
        let pairs = [(1, 2, false), (2, 3, false), (10, 11, false)];
        graph.writer().add_pairs(pairs.into_iter(), &mut ends);
        let share = graph.split(0, None);
        let (components, by_id) = (&share.components, &share.by_id);
        let of = |id: i64| *by_id.iter().find(|p| p.0 == id).unwrap();
        let ((_, p1, r), (_, p2, _), (_, p3, _)) = (of(1), of(2), of(3));
        let ((_, p10, s), (_, p11, _)) = (of(10), of(11));
        let me = 1;
        // Two of {1, 2, 3}'s pages join worker 0's node (0, 7), which
        // writes them; its third it writes itself. {10, 11} joins two
        // nodes. The joins come in two batches, as from two owners.
        let batches = vec![
            vec![(me, r, p1, (0, 7), false), (me, s, p10, (0, 7), false)],
            vec![
                (me, r, p2, (me, r), true),
                (me, r, p3, (0, 7), false),
                (me, s, p11, (0, 9), false),
            ],
        ];
        let mut shared = SharedPages::default();
        let mut made = JoinLinks::<IdLabel>::default();
        for batch in &batches {
            made.add(batch, components, &mut shared);
        }
        let mut links: Vec<NodeLink<IdLabel>> = made.links.chunks().concat();
        links.sort_by_key(|link| (link.node, link.joins));
        // A root's first link carries its pages; each link takes off the
        // copies it names.
        let summary: Vec<(Node, Node, i64)> = links
            .iter()
            .map(|link| (link.node, link.joins, link.pages))
            .collect();
        let mut expected = vec![
            ((me, r), (0, 7), 3 - 2),
            ((me, r), (me, r), 0),
            ((me, s), (0, 7), 2 - 1),
            ((me, s), (0, 9), -1),
        ];
        expected.sort_by_key(|&(node, joins, ..)| (node, joins));
        assert_eq!(summary, expected);
        assert!(links
            .iter()
            .all(|link| link.least.id == if link.node.1 == r { 1 } else { 10 }));
        // Every shared page is marked, written here only where it joins
        // this worker's own node.
        assert_eq!(
            shared.get(p2),
            Some(SharedPage {
                writes: true,
                first: true
            })
        );
        for page in [p1, p3, p10, p11] {
            assert_eq!(shared.get(page).map(|s| s.writes), Some(false));
        }
    }

    #[test]
    fn a_roots_link_in_an_earlier_chunk_takes_its_later_copies() {
        // More components than a chunk holds links: {2i, 2i + 1} each.
        let components_count = (1 << CHUNK_BITS) + 100;
        let graph = crate::cluster::components::SharedGraph::new(false, 1, 0);
        graph.prepare(0, crate::cluster::components::PageEstimate::exact(0), None);
        let pairs = (0..components_count as i64).map(|i| (2 * i, 2 * i + 1, false));
        graph.writer().add_pairs(pairs, &mut Vec::new());
        let share = graph.split(0, None);
        // Each component shares both pages with worker 0's node (0, 7),
        // which writes them: the first pages in one batch, the second
        // pages (their links by then in every chunk) in another.
        let joins = |odd: i64| -> Vec<Join> {
            let pages = share.by_id.iter().filter(|&&(id, ..)| id % 2 == odd);
            pages
                .map(|&(_, page, root)| (1, root, page, (0, 7), false))
                .collect()
        };
        let mut made = JoinLinks::<IdLabel>::default();
        let mut shared = SharedPages::default();
        for batch in [joins(0), joins(1)] {
            made.add(&batch, &share.components, &mut shared);
        }
        assert_eq!(made.links.chunks().len(), 2);
        let links = made.links.chunks().concat();
        assert_eq!(links.len(), components_count);
        // Two pages, both copies written by worker 0: nothing left to count.
        assert!(links
            .iter()
            .all(|link| link.pages == 0 && link.joins == (0, 7)));
        let mut nodes: Vec<Node> = links.iter().map(|link| link.node).collect();
        nodes.sort_unstable();
        nodes.dedup();
        assert_eq!(nodes.len(), components_count);
    }

    #[test]
    fn sightings_merged_as_they_come_find_what_the_whole_merge_finds() {
        // Three workers' runs of ids (each a multiple of w + 2), sent in
        // batches of 7 in turn, as an owner receives them.
        let runs: Vec<Vec<Sighting>> = (0..3u32)
            .map(|w| {
                (0..3000i64)
                    .filter(|id| id % i64::from(w + 2) == 0)
                    .map(|id| (id, w << 1 | (id % 5 == 0) as u32, id as Page, w))
                    .collect()
            })
            .collect();
        let whole = {
            let mut finder = SharedFinder::new(3);
            runs.iter().for_each(|run| finder.absorb(&mut run.clone()));
            let mut found = Vec::new();
            finder.find_rest(|same| found.push(same.to_vec()));
            found
        };
        let mut finder = SharedFinder::new(3);
        let (mut found, mut found_early) = (Vec::new(), 0);
        let batches: Vec<Vec<&[Sighting]>> = runs.iter().map(|r| r.chunks(7).collect()).collect();
        for at in 0..batches.iter().map(Vec::len).max().unwrap() {
            for run in &batches {
                if let Some(batch) = run.get(at) {
                    finder.absorb(&mut batch.to_vec());
                    finder.find_ready(|same| found.push(same.to_vec()));
                }
            }
            found_early = found.len();
        }
        finder.find_rest(|same| found.push(same.to_vec()));
        assert_eq!(found, whole);
        // All but the last batches' ids were found before the end.
        assert!(
            found_early * 10 > whole.len() * 9,
            "{found_early} of {}",
            whole.len()
        );
    }

    #[test]
    fn ids_in_several_runs_are_found_once_each_with_every_sighting() {
        // Run w: multiples of w + 2 below 600 (run 3 is empty), so an id is
        // shared when two or more of 2, 3, 4 divide it.
        let runs: Vec<Vec<Sighting>> = (0..4u32)
            .map(|w| match w {
                3 => Vec::new(),
                _ => (0..600i64)
                    .filter(|id| id % i64::from(w + 2) == 0)
                    .map(|id| (id, w << 1, id as Page, id as Page))
                    .collect(),
            })
            .collect();
        let mut found = Vec::new();
        let mut finder = SharedFinder::new(runs.len());
        for run in &runs {
            finder.absorb(&mut run.clone());
        }
        finder.find_rest(|same| {
            let workers: Vec<u32> = same.iter().map(|s| s.1 >> 1).collect();
            assert!(same.iter().all(|s| s.0 == same[0].0));
            found.push((same[0].0, workers));
        });
        let expected: Vec<(i64, Vec<u32>)> = (0..600i64)
            .map(|id| {
                (
                    id,
                    (0..3u32).filter(|w| id % i64::from(w + 2) == 0).collect(),
                )
            })
            .filter(|(_, workers): &(i64, Vec<u32>)| workers.len() > 1)
            .collect();
        let mut sorted_found = found.clone();
        sorted_found.iter_mut().for_each(|(_, w)| w.sort_unstable());
        assert_eq!(sorted_found, expected);
        assert!(found.is_sorted_by_key(|(id, _)| *id));
    }
}
