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

use serde::{Deserialize, Serialize};

use crate::clustering::{count_cluster, placement_part, ClusterTotals, PartRow, Row};
use crate::components::{Components, Page, MISSING};
use crate::dataflow::components::{owner_of, JoinedRoots};
use crate::drop_policy::{DropPolicy, Sweep};

/// What a worker sends a joined cluster's owner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Assigned {
    /// A page, its cluster's representative, and whether it ranks first (a
    /// corpus page under `--corpus-wins`).
    Member { id: i64, cluster: i64, first: bool },
    /// A pair of the cluster: `(cluster, id, id, distance)`.
    Pair(i64, i64, i64, u8),
}

/// An [`Assigned`] record and the global index of the worker it goes to.
pub type Addressed = (u32, Assigned);

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
        self.ends
            .iter()
            .zip(&self.distances)
            .map(|(&[a, b], &distance)| (a, b, distance))
    }
}

/// How this worker's pages and pairs are routed.
pub struct Router<'a> {
    pub components: &'a mut Components,
    pub joined: &'a JoinedRoots,
    /// The pairs, under the direct policy.
    pub pairs: Option<&'a PairLog>,
    pub policy: DropPolicy,
    pub parts: usize,
    pub peers: usize,
    pub max_size: u64,
}

impl Router<'_> {
    /// Gives every page (and under the direct policy every pair): a member
    /// or pair record to a joined cluster's owner, or the rows of a cluster
    /// this worker saw whole, counted into `totals`.
    pub fn route(&mut self, totals: &mut ClusterTotals, give: &mut dyn FnMut(Routed)) {
        let roots = self.roots();
        for page in 0..self.components.len() as Page {
            let root = roots[page as usize];
            let id = self.components.id(page);
            let (cluster, joined) = self.cluster_of(root);
            if joined {
                let first = self.components.ranks_first(page);
                let member = Assigned::Member { id, cluster, first };
                give(Ok((owner_of(cluster, self.peers), member)));
                continue;
            }
            let size = self.components.component_size(root);
            if page == root {
                count_cluster(totals, u64::from(size), cluster, self.max_size);
            }
            let part = placement_part(cluster, self.parts);
            give(Err((part, Row::Member(id, cluster, size))));
            if self.policy == DropPolicy::Component && id != cluster {
                give(Err((part, Row::Drop(id, cluster, None))));
            }
        }
        if let Some(pairs) = self.pairs {
            self.route_pairs(pairs, &roots, give);
        }
    }

    /// Each page's root, found once.
    fn roots(&mut self) -> Vec<Page> {
        (0..self.components.len() as Page)
            .map(|page| self.components.find(page))
            .collect()
    }

    /// A root's cluster id, and whether it was joined with other workers'.
    fn cluster_of(&mut self, root: Page) -> (i64, bool) {
        match self.joined.get(&root) {
            Some(&cluster) => (cluster, true),
            None => (self.components.representative(root), false),
        }
    }

    /// Pairs of joined clusters go to their owners; the drops of the
    /// others come from one greedy sweep over all of them at once (clusters
    /// do not interact, so one pass in priority order over every page is
    /// each cluster's pass).
    fn route_pairs(&mut self, pairs: &PairLog, roots: &[Page], give: &mut dyn FnMut(Routed)) {
        let is_local = |page: Page| !self.joined.contains_key(&roots[page as usize]);
        let order = self.local_pages_in_priority_order(&is_local);
        let mut position = vec![MISSING; self.components.len()];
        for (at, &page) in order.iter().enumerate() {
            position[page as usize] = at as Page;
        }
        let local = pairs
            .pairs()
            .filter(|&(a, _, _)| position[a as usize] != MISSING)
            .map(|(a, b, distance)| (position[a as usize], position[b as usize], distance));
        let components = &*self.components;
        let id_of = |at: Page| components.id(order[at as usize]);
        let mut drops = Vec::new();
        Sweep::default().run(order.len(), local, id_of, &mut drops);
        for (at, keep, distance) in drops {
            let page = order[at as usize];
            let cluster = self.components.representative(roots[page as usize]);
            let part = placement_part(cluster, self.parts);
            let id = self.components.id(page);
            give(Err((part, Row::Drop(id, keep, Some(distance)))));
        }
        for (a, b, distance) in pairs.pairs().filter(|&(a, _, _)| !is_local(a)) {
            let cluster = self.joined[&roots[a as usize]];
            let (a, b) = (self.components.id(a), self.components.id(b));
            let pair = Assigned::Pair(cluster, a, b, distance);
            give(Ok((owner_of(cluster, self.peers), pair)));
        }
    }

    /// The pages of clusters seen whole here, in priority order: those that
    /// rank first, then the rest, each by id.
    fn local_pages_in_priority_order(&self, is_local: &dyn Fn(Page) -> bool) -> Vec<Page> {
        let components = &*self.components;
        let mut by_id: Vec<(i64, Page)> = (0..components.len() as Page)
            .filter(|&page| is_local(page))
            .map(|page| (components.id(page), page))
            .collect();
        radsort::sort_by_key(&mut by_id, |&(id, _)| id);
        let first = |&&(_, page): &&(i64, Page)| components.ranks_first(page);
        let ranked_first = by_id.iter().filter(first);
        let others = by_id.iter().filter(|entry| !first(entry));
        ranked_first.chain(others).map(|&(_, page)| page).collect()
    }
}
