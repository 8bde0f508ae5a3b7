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
use crate::clustering::{count_cluster, member_rows, placement_part, ClusterTotals, PartRow, Row};
use crate::components::{Components, Page, MISSING};
use crate::dataflow::components::{owner_of, JoinedRoots, SharedPages};
use crate::drop_policy::{direct_drops, DropPolicy};

/// A record for a joined cluster's owner, or a row decided here.
pub type Routed = Result<Addressed, PartRow>;

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
    stage: Stage,
    pub totals: ClusterTotals,
}

/// Where a [`Router`] is.
enum Stage {
    Pages {
        next: usize,
    },
    LocalDrops {
        drops: Vec<(Page, i64, u8)>,
        next: usize,
    },
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
            input,
            roots,
            stage: Stage::Pages { next: 0 },
            totals: ClusterTotals::default(),
        }
    }

    /// Gives the next slice; false once everything is given (and the
    /// memory freed).
    pub fn next_slice(&mut self, give: &mut dyn FnMut(Routed)) -> bool {
        let pages = self.input.components.len();
        let pairs = self.input.pairs.as_ref().map_or(0, PairLog::len);
        self.stage = match std::mem::replace(&mut self.stage, Stage::Done) {
            Stage::Pages { next } if next < pages => {
                let end = (next + SLICE).min(pages);
                (next..end).for_each(|page| self.route_page(page as Page, give));
                Stage::Pages { next: end }
            }
            Stage::Pages { .. } if self.input.pairs.is_some() => Stage::LocalDrops {
                drops: self.local_drops(),
                next: 0,
            },
            Stage::LocalDrops { drops, next } if next < drops.len() => {
                let end = (next + SLICE).min(drops.len());
                for &(page, keep, distance) in &drops[next..end] {
                    let cluster = self.input.components.representative(self.root(page));
                    let part = placement_part(cluster, self.input.parts);
                    let id = self.input.components.id(page);
                    give(Err((part, Row::Drop(id, keep, Some(distance)))));
                }
                Stage::LocalDrops { drops, next: end }
            }
            Stage::LocalDrops { .. } => Stage::JoinedPairs { next: 0 },
            Stage::JoinedPairs { next } if next < pairs => {
                let end = (next + SLICE).min(pairs);
                self.route_joined_pairs(next..end, give);
                Stage::JoinedPairs { next: end }
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

    /// A page's member record for its joined cluster's owner, or its rows.
    fn route_page(&mut self, page: Page, give: &mut dyn FnMut(Routed)) {
        let input = &mut self.input;
        let root = self.roots[page as usize];
        let id = input.components.id(page);
        if let Some(&cluster) = input.joined.get(&root) {
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
            return;
        }
        let cluster = input.components.representative(root);
        let size = input.components.component_size(root);
        if page == root {
            count_cluster(&mut self.totals, u64::from(size), cluster, input.max_size);
        }
        let member = (id, cluster, size);
        member_rows(input.policy, input.parts, member, &mut |row| give(Err(row)));
    }

    /// The drops of the clusters seen whole here, `(page, keep_id,
    /// distance)`: one greedy sweep over all of them at once (clusters do
    /// not interact, so one pass in priority order over every page is each
    /// cluster's pass).
    fn local_drops(&self) -> Vec<(Page, i64, u8)> {
        let Some(pairs) = self.input.pairs.as_ref() else {
            return Vec::new();
        };
        let components = &self.input.components;
        let local =
            (0..components.len() as Page).filter(|&page| self.slots[page as usize] == MISSING);
        direct_drops(
            local,
            components.len(),
            |page| components.id(page),
            |page| components.ranks_first(page),
            pairs.pairs(),
        )
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

    /// Everything is routed: frees the memory before the owners and the
    /// writers need theirs.
    fn free(&mut self) {
        self.input.components = Components::new(false);
        self.input.pairs = None;
        self.input.joined = JoinedRoots::default();
        self.input.shared = SharedPages::default();
        self.roots = Vec::new();
        self.slots = Vec::new();
    }
}
