//! Near-duplicate clusters on timely: every worker's union-find over its
//! share of the pairs, merged into the global components at worker 0, then
//! every page (and, for the direct drop policy, every pair) sent to the
//! worker that writes its cluster's part.
//!
//! ```text
//!   local union-find (every worker: its row groups) --each page and its local root--> merge (worker 0)
//!     --members to their writers, root owners back to each worker--> route pairs (re-read, direct policy)
//!     --pairs to their component's writer--> write parts --> commit
//! ```
//!
//! Only pages cross the network in the merge: a worker's union-find keeps
//! one record per page however many pairs it read, so worker 0 receives at
//! most the pages of each worker, and its time and memory grow with pages,
//! not with pairs or with the length of a chain.

use std::cell::RefCell;
use std::rc::Rc;

use anyhow::Result;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::Stream;

use crate::components::{Components, Page};
use crate::parquet_io::input::PairRow;

/// A page as one worker's union-find left it:
/// `(id, its local root's id, in the corpus, the worker)`.
pub type LocalPage = (i64, i64, bool, u32);

/// What one worker sends another.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Routed {
    /// A page, its cluster's representative and size, and whether it ranks
    /// first (a corpus page under `--corpus-wins`).
    Member {
        id: i64,
        cluster: i64,
        size: u32,
        first: bool,
    },
    /// The worker that owns the component of one of the target's local roots.
    Owner { root: i64, owner: u32 },
    /// A pair of a component the target owns: `(id, id, distance)`.
    Pair(i64, i64, u8),
}

/// A [`Routed`] message and the global index of the worker it goes to.
pub type Addressed = (u32, Routed);

/// Where a cluster's rows are written: a hash of its representative picks
/// the part, so parts do not depend on the number of workers, and part `p`
/// is written by worker `p % peers`.
#[derive(Clone, Copy, Debug)]
pub struct Placement {
    pub parts: usize,
    pub peers: usize,
}

impl Placement {
    pub fn part(&self, cluster: i64) -> usize {
        (xxhash_rust::xxh3::xxh3_64(&cluster.to_le_bytes()) % self.parts as u64) as usize
    }

    pub fn owner(&self, cluster: i64) -> u32 {
        (self.part(cluster) % self.peers) as u32
    }
}

/// One worker's view of the pair graph: its union-find (at worker 0, after
/// the merge, the global one) and the owners of its local roots.
#[derive(Debug)]
pub struct WorkerGraph {
    pub components: Components,
    owners: FxHashMap<Page, u32>,
}

impl WorkerGraph {
    pub fn new(corpus_wins: bool) -> WorkerGraph {
        WorkerGraph {
            components: Components::new(corpus_wins),
            owners: FxHashMap::default(),
        }
    }

    /// This worker's pages with their local roots, for the merge.
    pub fn local_pages(&mut self, worker: u32) -> impl Iterator<Item = LocalPage> + '_ {
        let c = &mut self.components;
        (0..c.len() as Page).map(move |page| {
            let root = c.find(page);
            (c.id(page), c.id(root), c.in_corpus(page), worker)
        })
    }

    /// The worker that owns the component of page `id`, which this worker read.
    fn owner(&mut self, id: i64) -> Option<u32> {
        let page = self.components.get(id)?;
        let root = self.components.find(page);
        self.owners.get(&root).copied()
    }
}

/// Merges every worker's local components at worker 0 (`me` is this
/// worker's index). Once all have come, sends each page to the worker that
/// writes its cluster's part and, when `owners_back`, tells every worker
/// which worker owns the component of each of its local roots.
pub fn merge_at_worker_zero<'scope>(
    local: Stream<'scope, u64, Vec<LocalPage>>,
    graph: Rc<RefCell<WorkerGraph>>,
    me: usize,
    placement: Placement,
    owners_back: bool,
) -> Stream<'scope, u64, Vec<Addressed>> {
    local.unary_frontier::<CapacityContainerBuilder<Vec<Addressed>>, _, _, _>(
        Exchange::new(|_: &LocalPage| 0),
        "MergeComponents",
        move |capability, _info| {
            let mut capability = Some(capability);
            let mut roots_of: Vec<(u32, i64)> = Vec::new();
            move |(input, frontier), output| {
                input.for_each(|_time, data| {
                    let c = &mut graph.borrow_mut().components;
                    for &(id, root, in_corpus, worker) in data.iter() {
                        let (page, root_page) = (c.page(id), c.page(root));
                        if in_corpus {
                            c.mark_in_corpus(page);
                        }
                        c.union(page, root_page);
                        if owners_back && id == root {
                            roots_of.push((worker, id));
                        }
                    }
                });
                if !frontier.is_empty() {
                    return;
                }
                let Some(capability) = capability.take() else {
                    return;
                };
                if me != 0 {
                    return;
                }
                let started = std::time::Instant::now();
                let graph = &mut *graph.borrow_mut();
                let mut session = output.session(&capability);
                let c = &mut graph.components;
                for page in 0..c.len() as Page {
                    let rep = c.representative(page);
                    let cluster = c.id(rep);
                    let member = Routed::Member {
                        id: c.id(page),
                        cluster,
                        size: c.component_size(page),
                        first: c.label(page).0 == 0,
                    };
                    session.give((placement.owner(cluster), member));
                    if owners_back && c.find(page) == page {
                        graph.owners.insert(page, placement.owner(cluster));
                    }
                }
                for (worker, root) in roots_of.drain(..) {
                    let page = c.page(root);
                    let rep = c.representative(page);
                    let owner = placement.owner(c.id(rep));
                    session.give((worker, Routed::Owner { root, owner }));
                }
                tracing::info!(
                    pages = c.len(),
                    seconds = started.elapsed().as_secs_f64(),
                    "components merged; members sent"
                );
            }
        },
    )
}

/// Reads this worker's pairs again, handing each batch to the callback.
pub type Reread = Box<dyn FnMut(&mut dyn FnMut(&[PairRow])) -> Result<()>>;

/// Passes members on to their writers and learns the owners of this
/// worker's local roots; once all have come, re-reads this worker's pairs
/// with `reread` (if given) and sends each to the writer of its component.
/// An error of `reread` goes to `fail`.
pub fn route_pairs<'scope>(
    assigned: Stream<'scope, u64, Vec<Addressed>>,
    graph: Rc<RefCell<WorkerGraph>>,
    mut reread: Option<Reread>,
    mut fail: impl FnMut(anyhow::Error) + 'static,
) -> Stream<'scope, u64, Vec<Addressed>> {
    assigned.unary_frontier::<CapacityContainerBuilder<Vec<Addressed>>, _, _, _>(
        Exchange::new(|(target, _): &Addressed| *target as u64),
        "RoutePairs",
        move |capability, _info| {
            let mut capability = Some(capability);
            move |(input, frontier), output| {
                input.for_each(|time, data| {
                    let mut session = output.session(&time);
                    let graph = &mut *graph.borrow_mut();
                    for (target, routed) in data.drain(..) {
                        match routed {
                            Routed::Owner { root, owner } => {
                                if let Some(page) = graph.components.get(root) {
                                    graph.owners.insert(page, owner);
                                }
                            }
                            other => session.give((target, other)),
                        }
                    }
                });
                if !frontier.is_empty() {
                    return;
                }
                let Some(capability) = capability.take() else {
                    return;
                };
                let Some(reread) = reread.as_mut() else {
                    return;
                };
                let mut session = output.session(&capability);
                let graph = &mut *graph.borrow_mut();
                let mut missing = None;
                let sent = reread(&mut |rows| {
                    for row in rows {
                        match graph.owner(row.query) {
                            Some(owner) => session.give((
                                owner,
                                Routed::Pair(row.query, row.corpus, row.distance),
                            )),
                            None => missing = Some((row.query, row.corpus)),
                        }
                    }
                });
                if let Err(error) = sent {
                    fail(error);
                } else if let Some((q, c)) = missing {
                    fail(anyhow::anyhow!(
                        "pair ({q}, {c}) was not in this worker's components on the second read (did the input change during the run?)"
                    ));
                }
            }
        },
    )
}
