//! The join of local components, spread over the workers: a few rounds of
//! a partitioned merge, then what is left at worker 0.
//!
//! ```text
//!   links (node joins node)
//!     --by a hash of the node joined--> each worker's union-find over its links (a round)
//!     --(node, this worker's set), by a hash of the node--> nodes several workers' sets hold
//!     --(set, the least set holding the node), to the set's worker--> the sets' links: the next round
//!   ... after the last round, the links left --> worker 0's union-find
//!   clusters back, a round at a time: a set another round joined takes its cluster from there;
//!   the others are whole clusters of their own
//! ```
//!
//! A round's worker joins the links it is sent, so a node whose links all
//! went to one worker is settled there: only the nodes whose links went to
//! several workers join those workers' sets in the next round. Links go by
//! a hash of the node they join, and the nodes a shared page joins are all
//! joined to one (its least sighting), so the sightings of a page meet at
//! one worker in the first round. Each round, with another hash, leaves a
//! fraction of the links it got: two rounds leave worker 0 a small share
//! of what it would join alone, while the rounds' work is spread evenly.
//! Two workers run one round ([`rounds_for`]).
//!
//! A set's pages and least label are a sum and a least over its links
//! (see [`NodeLink::pages`]), so they come right however its links are
//! split among workers; a node's cluster is given by each worker its own
//! links reached, all alike, and kept once by [`super::JoinedRoots`].

use std::cell::RefCell;
use std::rc::Rc;

use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::Stream;

use super::links::{owner_of, ClusterOf, JoinLabel, Node, NodeLink, Resolved};
use super::node_forest::{join_at_worker_zero, Hashed, NodeForest};
use crate::exec::after_all::{after_all, after_all_gathered};

/// Rounds spread over the workers before the links left go to worker 0,
/// on `peers` workers. Two workers take one: it costs a little time, but
/// worker 0 joins links while the workers still describe theirs
/// ([`super::describe_joined`]), and a forest of every link there beside
/// that step's state was a process's peak.
fn rounds_for(peers: usize) -> u64 {
    match peers {
        0..=1 => 0,
        2 => 1,
        _ => 2,
    }
}

/// A node as `(node, the set holding it at a worker)`.
type Sighting = (Node, Node);

/// The clusters of the local components that `links` join (see the module
/// doc), each given to its worker.
pub(crate) fn spread_join<'scope, L: JoinLabel>(
    links: Stream<'scope, u64, Vec<NodeLink<L>>>,
) -> Stream<'scope, u64, Vec<Resolved<L::Keys>>> {
    let peers = links.scope().peers();
    let me = links.scope().index() as u32;
    let mut links = links;
    let mut rounds = Vec::new();
    for round in 0..rounds_for(peers) {
        let forest = Rc::new(RefCell::new(Round::<L>::default()));
        links = next_links(
            shared_sets(
                round_sightings(links, round, peers, me, forest.clone()),
                round,
                peers,
            ),
            forest.clone(),
        );
        rounds.push(forest);
    }
    let mut resolved = join_at_worker_zero(links);
    for forest in rounds.into_iter().rev() {
        resolved = resolve_round(resolved, forest);
    }
    resolved
}

/// A round's union-find at one worker, and what it keeps to give its
/// nodes their clusters once the later rounds have given its sets theirs.
struct Round<L: JoinLabel> {
    forest: NodeForest<L, Hashed>,
    /// Each node's root, once every link is in.
    roots: Vec<u32>,
    /// The clusters the later rounds gave this worker's sets, by root,
    /// with their representatives' keys.
    joined: Vec<Option<(ClusterOf, L::Keys)>>,
}

impl<L: JoinLabel> Default for Round<L> {
    fn default() -> Self {
        Round {
            forest: NodeForest::default(),
            roots: Vec::new(),
            joined: Vec::new(),
        }
    }
}

/// A round's key of a node: its hash decides its worker, another each
/// round and for each use.
fn salted(node: Node, round: u64, use_: u64) -> i64 {
    let key = u64::from(node.0) << 32 | u64::from(node.1);
    (key ^ (round * 2 + use_ + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)) as i64
}

/// Joins the links at the worker of the node each joins; once all are in,
/// gives every node's sighting, to the worker of the node.
fn round_sightings<'scope, L: JoinLabel>(
    links: Stream<'scope, u64, Vec<NodeLink<L>>>,
    round: u64,
    peers: usize,
    me: u32,
    forest: Rc<RefCell<Round<L>>>,
) -> Stream<'scope, u64, Vec<Sighting>> {
    let absorbed = forest.clone();
    after_all(
        links,
        Exchange::new(move |link: &NodeLink<L>| {
            owner_of(salted(link.joins, round, 0), peers) as u64
        }),
        "JoinRound",
        move |batch| {
            absorbed.borrow_mut().forest.add(batch);
            batch.clear();
        },
        move |give| {
            let started = std::time::Instant::now();
            let mut forest = forest.borrow_mut();
            let roots = forest.forest.roots();
            for (&node, &root) in forest.forest.nodes.iter().zip(&roots) {
                give((node, (me, root)));
            }
            forest.joined = vec![None; roots.len()];
            forest.roots = roots;
            // Nodes are looked up no more: the roots hold what the rounds
            // after need.
            forest.forest.index = Hashed::default();
            tracing::debug!(
                round,
                links = forest.forest.links,
                nodes = forest.forest.nodes.len(),
                seconds = started.elapsed().as_secs_f64(),
                rss_mib = ?crate::exec::logging::resident_mib(),
                "join round"
            );
        },
    )
}

/// At each node's worker: for a node several workers' sets hold, each
/// such set and the least of them, to the set's worker.
fn shared_sets<'scope>(
    sightings: Stream<'scope, u64, Vec<Sighting>>,
    round: u64,
    peers: usize,
) -> Stream<'scope, u64, Vec<(Node, Node)>> {
    after_all_gathered(
        sightings,
        Exchange::new(move |&(node, _): &Sighting| owner_of(salted(node, round, 1), peers) as u64),
        "SharedInRound",
        move |mut all, give| {
            // In place (this step is where a round's memory peaks): a
            // radix sort would take as much again.
            all.sort_unstable();
            for same in all
                .chunk_by(|a, b| a.0 == b.0)
                .filter(|same| same.len() > 1)
            {
                let least = same[0].1;
                for &(_, set) in same {
                    give((set, least));
                }
            }
        },
    )
}

/// At each set's worker: the set's links for the next round, one for each
/// set it joins, its pages on the first.
fn next_links<'scope, L: JoinLabel>(
    joins: Stream<'scope, u64, Vec<(Node, Node)>>,
    forest: Rc<RefCell<Round<L>>>,
) -> Stream<'scope, u64, Vec<NodeLink<L>>> {
    after_all_gathered(
        joins,
        Exchange::new(|&(set, _): &(Node, Node)| u64::from(set.0)),
        "NextRoundLinks",
        move |mut joins, give| {
            joins.sort_unstable();
            joins.dedup();
            let forest = forest.borrow();
            let sets = &forest.forest.sets;
            for (at, &(set, least)) in joins.iter().enumerate() {
                let first = at == 0 || joins[at - 1].0 != set;
                let own = &sets[set.1 as usize];
                give(NodeLink {
                    node: set,
                    joins: least,
                    least: own.least,
                    pages: if first { own.pages } else { 0 },
                });
            }
        },
    )
}

/// Once the later rounds have given this worker's joined sets their
/// clusters: every node whose own links came here, its set's cluster.
fn resolve_round<'scope, L: JoinLabel>(
    resolved: Stream<'scope, u64, Vec<Resolved<L::Keys>>>,
    forest: Rc<RefCell<Round<L>>>,
) -> Stream<'scope, u64, Vec<Resolved<L::Keys>>> {
    let absorbed = forest.clone();
    after_all(
        resolved,
        Exchange::new(|&(worker, ..): &Resolved<L::Keys>| u64::from(worker)),
        "ResolveRound",
        move |data| {
            let mut forest = absorbed.borrow_mut();
            for (_, root, cluster, keys) in data.drain(..) {
                forest.joined[root as usize] = Some((cluster, keys));
            }
        },
        move |give| {
            let round = std::mem::take(&mut *forest.borrow_mut());
            let forest = &round.forest;
            for (at, &(worker, root)) in forest.nodes.iter().enumerate() {
                if !forest.own[at] {
                    continue;
                }
                let set = round.roots[at];
                let (cluster, keys) = match &round.joined[set as usize] {
                    Some(joined) => joined.clone(),
                    None => (forest.cluster_of_set(set), forest.keys_of_set(set)),
                };
                give((worker, root, cluster, keys));
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use timely::dataflow::operators::{Input, Inspect};

    use super::super::node_forest::tests::random_links;
    use super::*;
    use crate::cluster::join::IdLabel;

    /// The clusters [`spread_join`] gives on `workers` workers of one
    /// process, each node's own links given at its worker, as
    /// `describe_joined` gives them.
    fn spread(links: &[NodeLink<IdLabel>], workers: usize) -> Vec<Resolved<()>> {
        let given = Arc::new(Mutex::new(Vec::new()));
        let (links, out) = (Arc::new(links.to_vec()), given.clone());
        timely::execute(timely::Config::process(workers), move |worker| {
            let me = worker.index() as u32;
            let out = out.clone();
            let mut input = worker.dataflow::<u64, _, _>(|scope| {
                let (input, links) = scope.new_input::<Vec<NodeLink<IdLabel>>>();
                spread_join(links).inspect(move |r| out.lock().unwrap().push(*r));
                input
            });
            let mine = links
                .iter()
                .filter(|link| link.node.0 % workers as u32 == me);
            for (at, link) in mine.enumerate() {
                input.send(link.clone());
                if at % 1000 == 0 {
                    worker.step();
                }
            }
            drop(input);
            while worker.step_or_park(None) {}
        })
        .unwrap();
        Arc::try_unwrap(given).unwrap().into_inner().unwrap()
    }

    #[test]
    fn spread_over_any_number_of_workers_every_node_gets_its_sets_cluster() {
        let (links, expected) = random_links(20_000, 4);
        for workers in [1, 2, 3, 4] {
            let given = spread(&links, workers);
            let mut clusters: HashMap<Node, ClusterOf> = HashMap::new();
            for (worker, root, cluster, ()) in given {
                let before = clusters.insert((worker, root), cluster);
                assert!(
                    before.is_none_or(|c| c == cluster),
                    "({worker}, {root}) given two clusters on {workers} workers"
                );
            }
            assert_eq!(clusters, expected, "{workers} workers");
        }
    }
}
