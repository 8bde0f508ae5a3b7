//! What a worker does with its pages once it knows which of its local
//! components were joined with another worker's.
//!
//! Most clusters of a night's pairs are small and read by one worker: every
//! pair of such a cluster, so every page, is in that worker's union-find, and
//! nothing another worker holds can change it. Those clusters are counted
//! and their drops chosen where they are, and their rows go straight to the
//! part writers; only the pages and pairs of joined clusters travel to the
//! cluster's owner. On 10M pairs in small clusters that is under 2% of the
//! pages.

use crate::cluster_owner::{Addressed, Assigned, Member};
use crate::clustering::{count_cluster, drop_of, ClusterTotals};
use crate::components::{Components, Page, MISSING};
use crate::dataflow::components::{owner_of, JoinedRoots, SharedPages};
use crate::drop_policy::{direct_drops, sorted_by_id, DirectDrops, DropPolicy, KeyedPage};
use crate::part_runs::{RunBuilder, RunSlice};

/// A record for a joined cluster's owner, or a row decided here.
pub type Routed = Result<Addressed, RunSlice>;

/// A worker's pairs as page indexes of its [`Components`], kept for the
/// direct policy's pass: 9 bytes a pair, instead of reading the pairs again
/// and looking every id up a second time.
#[derive(Debug, Default)]
pub struct PairLog {
    ends: Vec<[Page; 2]>,
    distances: Vec<u8>,
}

impl PairLog {
    /// Appends a batch: `ends` two pages per pair, as
    /// [`Components::add_pairs`] leaves them.
    pub fn extend(&mut self, ends: &[Page], distances: impl Iterator<Item = u8>) {
        self.ends
            .extend(ends.chunks_exact(2).map(|pair| [pair[0], pair[1]]));
        self.distances.extend(distances);
        debug_assert_eq!(self.ends.len(), self.distances.len());
    }

    /// Makes room for `pairs` pairs in all.
    pub fn reserve(&mut self, pairs: usize) {
        self.ends.reserve(pairs.saturating_sub(self.len()));
        self.distances.reserve(pairs.saturating_sub(self.len()));
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn pairs(&self) -> impl Iterator<Item = (Page, Page, u8)> + Clone + '_ {
        self.pairs_in(0..self.len())
    }

    fn pairs_in(
        &self,
        range: std::ops::Range<usize>,
    ) -> impl Iterator<Item = (Page, Page, u8)> + Clone + '_ {
        self.ends[range.clone()]
            .iter()
            .zip(&self.distances[range])
            .map(|(&[a, b], &distance)| (a, b, distance))
    }
}

/// Pages or pairs routed per slice: small enough that a slice's records
/// flow on before the next is made, large enough that slices cost nothing.
const SLICE: usize = 1 << 18;

/// How far ahead of the page being written its cluster's root is fetched:
/// pages come in id order, their roots anywhere in memory.
const LOOKAHEAD: usize = 16;

/// What this worker knows when its joined components are resolved.
pub struct RouterInput {
    pub worker: u32,
    pub components: Components,
    pub joined: JoinedRoots,
    pub shared: SharedPages,
    /// The pairs, under the direct policy.
    pub pairs: Option<PairLog>,
    pub policy: DropPolicy,
    pub parts: usize,
    pub peers: usize,
    pub max_size: u64,
}

/// Routes every page (and under the direct policy every pair), a slice at
/// a time: a member or pair record to a joined cluster's owner, or the rows
/// of a cluster this worker saw whole, counted into `totals`.
pub struct Router {
    input: RouterInput,
    roots: Vec<Page>,
    /// A page of a joined cluster: its slot among those sent its owner.
    slots: Vec<Page>,
    sent: Vec<u32>,
    rows: RunBuilder,
    stage: Stage,
    pub totals: ClusterTotals,
}

/// Where a [`Router`] is.
enum Stage {
    /// Joined clusters' pages, to their owners.
    JoinedPages {
        next: usize,
    },
    /// Local clusters' pages in id order, to the part writers.
    LocalPages {
        by_id: Vec<KeyedPage>,
        drops: DirectDrops,
        next: usize,
    },
    /// Joined clusters' pairs, to their owners.
    JoinedPairs {
        next: usize,
    },
    Done,
}

impl Router {
    pub fn new(mut input: RouterInput) -> Router {
        let components = &mut input.components;
        let roots = (0..components.len() as Page)
            .map(|page| components.find(page))
            .collect();
        Router {
            slots: vec![MISSING; input.components.len()],
            sent: vec![0; input.peers],
            rows: RunBuilder::new(2 * input.worker, input.parts),
            input,
            roots,
            stage: Stage::JoinedPages { next: 0 },
            totals: ClusterTotals::default(),
        }
    }

    /// Gives the next slice; false once everything is given (and the
    /// memory freed).
    pub fn next_slice(&mut self, give: &mut dyn FnMut(Routed)) -> bool {
        let pages = self.input.components.len();
        let pairs = self.input.pairs.as_ref().map_or(0, PairLog::len);
        self.stage = match std::mem::replace(&mut self.stage, Stage::Done) {
            Stage::JoinedPages { next } if next < pages => {
                let end = (next + SLICE).min(pages);
                (next..end).for_each(|page| self.route_joined_page(page as Page, give));
                Stage::JoinedPages { next: end }
            }
            Stage::JoinedPages { .. } => Stage::JoinedPairs { next: 0 },
            Stage::JoinedPairs { next } if next < pairs => {
                let end = (next + SLICE).min(pairs);
                self.route_joined_pairs(next..end, give);
                Stage::JoinedPairs { next: end }
            }
            Stage::JoinedPairs { .. } => {
                let (by_id, drops) = self.local_pages();
                self.free_joined();
                Stage::LocalPages {
                    by_id,
                    drops,
                    next: 0,
                }
            }
            Stage::LocalPages {
                by_id,
                mut drops,
                next,
            } if next < by_id.len() => {
                let end = (next + SLICE).min(by_id.len());
                for at in next..end {
                    if let Some(&(_, _, root)) = by_id.get(at + LOOKAHEAD) {
                        self.input.components.prefetch_node(root);
                    }
                    self.local_page_rows(by_id[at], &mut drops, give);
                }
                Stage::LocalPages {
                    by_id,
                    drops,
                    next: end,
                }
            }
            Stage::LocalPages { .. } => {
                self.rows.finish(&mut |slice| give(Err(slice)));
                Stage::Done
            }
            _ => Stage::Done,
        };
        if matches!(self.stage, Stage::Done) {
            self.free();
            return false;
        }
        true
    }

    fn root(&self, page: Page) -> Page {
        self.roots[page as usize]
    }

    /// A joined cluster's page: its member record, to the cluster's owner.
    fn route_joined_page(&mut self, page: Page, give: &mut dyn FnMut(Routed)) {
        let input = &mut self.input;
        let Some(&cluster) = input.joined.get(&self.roots[page as usize]) else {
            return;
        };
        let id = input.components.id(page);
        let owner = owner_of(cluster, input.peers);
        let slot = self.sent[owner as usize];
        self.sent[owner as usize] += 1;
        self.slots[page as usize] = slot;
        let member = Assigned::Member(Member {
            source: input.worker,
            slot,
            id,
            cluster,
            first: input.components.ranks_first(page),
            shared: input.shared.contains(&id),
        });
        give(Ok((owner, member)));
    }

    /// The pages of the clusters seen whole here, in id order, and under
    /// the direct policy their drops: one greedy sweep over all of them at
    /// once (clusters do not interact, so one pass in priority order over
    /// every page is each cluster's pass).
    fn local_pages(&self) -> (Vec<KeyedPage>, DirectDrops) {
        let components = &self.input.components;
        let local = (0..components.len() as Page)
            .filter(|&page| self.slots[page as usize] == MISSING)
            .map(|page| (components.id(page), page, self.root(page)));
        let by_id = sorted_by_id(local);
        let drops = match self.input.pairs.as_ref() {
            Some(pairs) => direct_drops(
                &by_id,
                components.len(),
                |page| components.ranks_first(page),
                pairs.pairs(),
            ),
            None => DirectDrops::default(),
        };
        (by_id, drops)
    }

    /// A page of a cluster seen whole here: its rows, and its cluster
    /// counted once.
    fn local_page_rows(
        &mut self,
        (id, page, root): KeyedPage,
        drops: &mut DirectDrops,
        give: &mut dyn FnMut(Routed),
    ) {
        let components = &mut self.input.components;
        let cluster = components.representative(root);
        let size = components.component_size(root);
        if page == root {
            count_cluster(
                &mut self.totals,
                u64::from(size),
                cluster,
                self.input.max_size,
            );
        }
        let drop = drop_of(self.input.policy, (id, cluster), drops.take(page));
        self.rows
            .page((id, cluster, size), drop, &mut |slice| give(Err(slice)));
    }

    /// Pairs `range` of the log that belong to joined clusters, to their
    /// owners, by their ends' slots.
    fn route_joined_pairs(&self, range: std::ops::Range<usize>, give: &mut dyn FnMut(Routed)) {
        let Some(pairs) = self.input.pairs.as_ref() else {
            return;
        };
        for (a, b, distance) in pairs.pairs_in(range) {
            if self.slots[a as usize] == MISSING {
                continue;
            }
            let cluster = self.input.joined[&self.root(a)];
            let pair = Assigned::Pair {
                source: self.input.worker,
                a: self.slots[a as usize],
                b: self.slots[b as usize],
                distance,
            };
            give(Ok((owner_of(cluster, self.input.peers), pair)));
        }
    }

    /// Joined clusters are routed and local drops chosen: frees what only
    /// they needed before the local rows fill the writers.
    fn free_joined(&mut self) {
        self.input.pairs = None;
        self.input.joined = JoinedRoots::default();
        self.input.shared = SharedPages::default();
        self.slots = Vec::new();
    }

    /// Everything is routed: frees the memory before the owners and the
    /// writers need theirs.
    fn free(&mut self) {
        self.free_joined();
        self.input.components = Components::new(false);
        self.roots = Vec::new();
    }
}
