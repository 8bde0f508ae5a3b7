//! The union-find over joined local components that worker 0 and each join
//! round run ([`NodeForest`]).

use std::cell::RefCell;
use std::rc::Rc;

use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::Stream;

use super::links::{ClusterOf, JoinLabel, Node, NodeLink, Resolved};
use crate::cluster::components::MISSING;
use crate::exec::after_all::after_all;
use crate::exec::parallel::prefetch;

/// At worker 0: the clusters (id and size) of the joined local components
/// the rounds left joined (see [`super::rounds`]). Links are joined as they
/// arrive, each batch then dropped: held until the last came, they were
/// most of worker 0's memory, and the union-find waited for the slowest
/// worker's links.
pub(super) fn join_at_worker_zero<'scope, L: JoinLabel>(
    links: Stream<'scope, u64, Vec<NodeLink<L>>>,
) -> Stream<'scope, u64, Vec<Resolved<L::Keys>>> {
    let forest = Rc::new(RefCell::new(NodeForest::<L, ByRoot>::default()));
    let absorbed = forest.clone();
    after_all(
        links,
        Exchange::new(|_: &NodeLink<L>| 0),
        "JoinAtWorkerZero",
        move |batch| {
            absorbed.borrow_mut().add(batch);
            batch.clear();
        },
        move |give| {
            let started = std::time::Instant::now();
            let mut joined = std::mem::take(&mut *forest.borrow_mut());
            let (links, components) = (joined.links, joined.nodes.len());
            for ((worker, root), cluster, keys) in joined.clusters() {
                give((worker, root, cluster, keys));
            }
            if links > 0 {
                tracing::info!(
                    links,
                    components,
                    seconds_after_the_last = started.elapsed().as_secs_f64(),
                    "local components joined at worker 0"
                );
            }
        },
    )
}

/// A union-find over joined local components, over dense node indexes,
/// fed a batch of links at a time: at worker 0 a node's index is found in
/// an array per worker, indexed by local root and grown as roots come
/// ([`ByRoot`]: a hash map of millions of nodes, and then sorting their
/// keys, were most of the one sequential step's time when most clusters
/// span workers); in a round, where any worker's roots come to every
/// worker, in a hash map ([`Hashed`]), so that no worker holds an array by
/// every worker's pages. A set's fields are one record, so a union
/// touches one cache line per root, and every random access is fetched a
/// few links ahead.
///
/// A link may name a node before any of that node's own links: the node
/// is numbered then, with no pages and no label; a set's pages and least
/// label are a sum and a least, in any order.
pub(super) struct NodeForest<L: JoinLabel, I> {
    /// Each node's index.
    pub(super) index: I,
    /// Each node's `(worker, local root)`, by index.
    pub(super) nodes: Vec<Node>,
    pub(super) sets: Vec<NodeSet<L>>,
    /// Whether a node's own links came here (its cluster is given from
    /// here, by [`super::rounds`]).
    pub(super) own: Vec<bool>,
    /// A batch's nodes, kept for the next batch.
    pub(super) batch_nodes: Vec<u32>,
    /// Links joined.
    pub(super) links: usize,
}

/// Where a [`NodeForest`] finds a node's index.
pub(super) trait NodeIndex: Default {
    /// The node's index, if it has one, else `next` after numbering it so.
    fn index_or(&mut self, node: Node, next: u32) -> u32;
    /// Asks the CPU to fetch the node's entry.
    fn prefetch(&self, node: Node);
}

/// Indexes by worker and local root ([`MISSING`]: none).
#[derive(Default)]
pub(super) struct ByRoot(Vec<Vec<u32>>);

impl NodeIndex for ByRoot {
    fn index_or(&mut self, (worker, root): Node, next: u32) -> u32 {
        let (worker, root) = (worker as usize, root as usize);
        if self.0.len() <= worker {
            self.0.resize_with(worker + 1, Vec::new);
        }
        let slots = &mut self.0[worker];
        if slots.len() <= root {
            slots.resize((root + 1).max(2 * slots.len()), MISSING);
        }
        if slots[root] == MISSING {
            slots[root] = next;
        }
        slots[root]
    }

    fn prefetch(&self, (worker, root): Node) {
        let slots = self.0.get(worker as usize);
        if let Some(entry) = slots.and_then(|slots| slots.get(root as usize)) {
            prefetch(entry);
        }
    }
}

/// Indexes by node, hashed.
#[derive(Default)]
pub(super) struct Hashed(rustc_hash::FxHashMap<u64, u32>);

impl NodeIndex for Hashed {
    fn index_or(&mut self, (worker, root): Node, next: u32) -> u32 {
        *self
            .0
            .entry(u64::from(worker) << 32 | u64::from(root))
            .or_insert(next)
    }

    fn prefetch(&self, _: Node) {}
}

/// A node of [`NodeForest`]; the sizes and least label are its set's at a root.
#[derive(Clone, Copy, Debug)]
pub(super) struct NodeSet<L> {
    pub(super) parent: u32,
    /// Nodes in the set.
    pub(super) size: u32,
    /// Distinct pages in the set, as far as its links here count them
    /// (a part of a set whose other links are elsewhere may be below 0).
    pub(super) pages: i64,
    pub(super) least: L,
}

/// How many links ahead a node's entries are fetched.
const JOIN_LOOKAHEAD: usize = 16;

impl<L: JoinLabel, I: NodeIndex> Default for NodeForest<L, I> {
    fn default() -> Self {
        NodeForest {
            index: I::default(),
            nodes: Vec::new(),
            sets: Vec::new(),
            own: Vec::new(),
            batch_nodes: Vec::new(),
            links: 0,
        }
    }
}

impl<L: JoinLabel, I: NodeIndex> NodeForest<L, I> {
    #[cfg(test)]
    fn from_links(batches: &[Vec<NodeLink<L>>]) -> NodeForest<L, I> {
        let mut forest = NodeForest::default();
        for batch in batches {
            forest.add(batch);
        }
        forest
    }

    /// Joins a batch of links: each link's node is numbered (and its label
    /// and pages put in) first, then the unions, each a few links behind
    /// the fetches of its entries.
    pub(super) fn add(&mut self, links: &[NodeLink<L>]) {
        let mut batch = std::mem::take(&mut self.batch_nodes);
        batch.clear();
        for (at, link) in links.iter().enumerate() {
            if let Some(ahead) = links.get(at + JOIN_LOOKAHEAD) {
                self.index.prefetch(ahead.node);
            }
            let node = self.index(link.node);
            self.own[node as usize] = true;
            let root = self.find(node) as usize;
            self.sets[root].pages += link.pages;
            self.sets[root].least = self.sets[root].least.min(link.least);
            batch.push(node);
        }
        for (at, link) in links.iter().enumerate() {
            if let Some(further) = links.get(at + 2 * JOIN_LOOKAHEAD) {
                self.index.prefetch(further.joins);
            }
            if let Some(ahead) = links.get(at + JOIN_LOOKAHEAD) {
                let joins = self.index(ahead.joins);
                self.prefetch_parent(joins);
                self.prefetch_parent(batch[at + JOIN_LOOKAHEAD]);
            }
            let joins = self.index(link.joins);
            self.union(batch[at], joins);
        }
        self.links += links.len();
        self.batch_nodes = batch;
    }

    /// A node's index, numbering it if it has none.
    pub(super) fn index(&mut self, node: Node) -> u32 {
        let next = self.nodes.len() as u32;
        let index = self.index.index_or(node, next);
        if index == next {
            self.nodes.push(node);
            self.sets.push(NodeSet {
                parent: index,
                size: 1,
                pages: 0,
                least: L::NONE,
            });
            self.own.push(false);
        }
        index
    }

    /// Asks the CPU to fetch a node's parent's entry.
    fn prefetch_parent(&self, node: u32) {
        prefetch(&self.sets[self.sets[node as usize].parent as usize]);
    }

    pub(super) fn find(&mut self, mut node: u32) -> u32 {
        while self.sets[node as usize].parent != node {
            let grand = self.sets[self.sets[node as usize].parent as usize].parent;
            self.sets[node as usize].parent = grand;
            node = grand;
        }
        node
    }

    pub(super) fn union(&mut self, a: u32, b: u32) {
        let (a, b) = (self.find(a), self.find(b));
        if a == b {
            return;
        }
        let (sa, sb) = (self.sets[a as usize], self.sets[b as usize]);
        let (big, small) = match sa.size >= sb.size {
            true => (a, b),
            false => (b, a),
        };
        self.sets[small as usize].parent = big;
        self.sets[big as usize] = NodeSet {
            parent: big,
            size: sa.size + sb.size,
            pages: sa.pages + sb.pages,
            least: sa.least.min(sb.least),
        };
    }

    /// Every node's root, by index.
    pub(super) fn roots(&mut self) -> Vec<u32> {
        (0..self.sets.len())
            .map(|node| {
                if node + JOIN_LOOKAHEAD < self.sets.len() {
                    self.prefetch_parent((node + JOIN_LOOKAHEAD) as u32);
                }
                self.find(node as u32)
            })
            .collect()
    }

    /// The cluster of the set whose root is `root`, if every link of the
    /// set is here: its least label's id and its pages (a `clusters/`
    /// row's size is 32 bits, as a worker's own are).
    pub(super) fn cluster_of_set(&self, root: u32) -> ClusterOf {
        let set = &self.sets[root as usize];
        let pages = u32::try_from(set.pages.max(0)).unwrap_or(u32::MAX);
        (set.least.id(), pages, set.least.ranks_first())
    }

    /// The keys of the representative of the set whose root is `root`.
    pub(super) fn keys_of_set(&self, root: u32) -> L::Keys {
        self.sets[root as usize].least.keys()
    }

    /// Every node's cluster, and its representative's keys, when every link
    /// is here.
    pub(super) fn clusters(&mut self) -> impl Iterator<Item = (Node, ClusterOf, L::Keys)> + '_ {
        let roots = self.roots();
        let this = &*self;
        this.nodes
            .iter()
            .zip(roots)
            .map(move |(&node, root)| (node, this.cluster_of_set(root), this.keys_of_set(root)))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::collections::HashMap;

    use super::super::links::tests::keyless;
    use super::super::links::IdLabel;
    use super::*;

    #[test]
    fn joined_nodes_get_their_cluster_whatever_order_their_links_come_in() {
        let link = |node: Node, joins: Node, least: i64, pages: i64| NodeLink {
            node,
            joins,
            least: keyless(true, least),
            pages,
        };
        // Nodes (0, 7) and (1, 2) share a page written by worker 0; (1, 2)
        // and (2, 900) share one written by worker 1; (0, 3) and (2, 5)
        // share one written by worker 0. A link may name a node before that
        // node's own link.
        let links = [
            link((1, 2), (0, 7), 40, 3 - 1),
            link((2, 900), (1, 2), 10, 2 - 1),
            link((0, 7), (0, 7), 30, 4),
            link((1, 2), (1, 2), 40, 0),
            link((2, 5), (0, 3), 60, 2 - 1),
            link((0, 3), (0, 3), 50, 1),
        ];
        // In two batches, as they come from different workers.
        let batches = [links[..2].to_vec(), links[2..].to_vec()];
        let mut joined = NodeForest::<_, ByRoot>::from_links(&batches);
        let clusters = clusters_of(&mut joined);
        let cluster_of = |node: Node| clusters[&node];
        // 4 + 3 + 2 pages, less the two copies.
        for node in [(0, 7), (1, 2), (2, 900)] {
            assert_eq!(cluster_of(node), (10, 7, false), "{node:?}");
        }
        for node in [(0, 3), (2, 5)] {
            assert_eq!(cluster_of(node), (50, 2, false), "{node:?}");
        }
        assert_eq!(clusters.len(), 5);
    }

    /// Random links among `count` nodes of `workers` workers, many joining
    /// long paths (each node to the next of a shuffled order), in no
    /// helpful order; and each node's cluster, found by spreading labels
    /// along the pairs until nothing changes. Each node has a link to itself
    /// with its 3 pages, and each pair a link that takes off one copy.
    pub(in crate::cluster::join) fn random_links(
        count: u32,
        workers: u32,
    ) -> (Vec<NodeLink<IdLabel>>, HashMap<Node, ClusterOf>) {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 33) % n
        };
        let n = count as usize;
        let nodes: Vec<Node> = (0..count).map(|i| (i % workers, i * 7)).collect();
        let least = |i: usize| keyless(i.is_multiple_of(5), 10_000_000 - i as i64);
        let mut links = Vec::new();
        for (i, &node) in nodes.iter().enumerate() {
            links.push(NodeLink {
                node,
                joins: node,
                least: least(i),
                pages: 3,
            });
        }
        let mut pairs = Vec::new();
        for i in 0..n * 19 / 20 {
            let j = if i % 4 == 0 {
                next(n as u64) as usize
            } else {
                i + 1
            };
            pairs.push((i, j));
            links.push(NodeLink {
                node: nodes[i],
                joins: nodes[j],
                least: least(i),
                pages: -1,
            });
        }
        for at in (1..links.len()).rev() {
            links.swap(at, next(at as u64 + 1) as usize);
        }
        let mut label: Vec<usize> = (0..n).collect();
        loop {
            let mut changed = false;
            for &(i, j) in &pairs {
                let min = label[i].min(label[j]);
                for end in [i, j] {
                    if label[end] != min {
                        label[end] = min;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        let mut sets = HashMap::new();
        for (i, &set) in label.iter().enumerate() {
            let copies = pairs.iter().filter(|&&(a, _)| a == i).count() as i64;
            let entry = sets.entry(set).or_insert((keyless(true, i64::MAX), 0i64));
            entry.0 = entry.0.min(least(i));
            entry.1 += 3 - copies;
        }
        let clusters = nodes
            .iter()
            .zip(&label)
            .map(|(&node, set)| {
                let (IdLabel { id, later }, pages) = sets[set];
                (node, (id, pages as u32, !later))
            })
            .collect();
        (links, clusters)
    }

    #[test]
    fn every_node_gets_its_sets_cluster_on_deep_random_forests() {
        // Every node's cluster must be its whole set's least label and
        // pages, however deep the forest (path halving leaves a node's
        // parent short of its root), with either index.
        let (links, expected) = random_links(2_000, 3);
        // In batches of uneven sizes (some shorter than the lookahead, one
        // empty), as timely delivers them.
        let mut batches: Vec<Vec<NodeLink<IdLabel>>> = Vec::new();
        let mut rest = &links[..];
        for size in [5, 0, 1, 40].into_iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (batch, after) = rest.split_at(size.min(rest.len()));
            batches.push(batch.to_vec());
            rest = after;
        }
        let mut by_root = NodeForest::<_, ByRoot>::from_links(&batches);
        assert_eq!(clusters_of(&mut by_root), expected);
        let mut hashed = NodeForest::<_, Hashed>::from_links(&batches);
        assert_eq!(clusters_of(&mut hashed), expected);
    }

    /// Each node's cluster.
    fn clusters_of<I: NodeIndex>(forest: &mut NodeForest<IdLabel, I>) -> HashMap<Node, ClusterOf> {
        forest
            .clusters()
            .map(|(node, cluster, ())| (node, cluster))
            .collect()
    }
}
