//! Connected components across processes, on timely: each worker holds
//! whole components of its process's union-find (its share, see
//! [`crate::cluster::components`]), so workers of one process never share a
//! page; the shares are joined where workers of different processes saw
//! the same page, and each worker then learns which of its local
//! components were joined, and into which cluster.
//!
//! ```text
//!   each worker's share of its process's union-find
//!     --a bit per page, each range of the bitmap to its worker--> bits set by two workers or more
//!     --those bits, to every worker--> the sightings of pages whose bit is among them
//!     --each (id, worker, rank, local root), by a hash of the id--> find shared pages (as they come)
//!     --local roots that share a page, to their worker--> describe them (least label, pages)
//!     --links between local components--> join them: rounds spread over the workers, then
//!       worker 0 for what is left ([`rounds`])
//!     --each joined local root's cluster and size, back to its worker--> after_joins
//! ```
//!
//! The nodes, labels and links every step shares are [`links`]'s; the
//! bitmap is [`filter`]'s; the sightings, the shared pages and the links
//! made of them are [`shared_pages`]'s; the union-find over local
//! components is [`node_forest`]'s, run by worker 0 and by each of
//! [`rounds`].
//!
//! A page several workers saw is *written* by one of them (the least
//! worker): only that one gives its `clusters/` row, and the others' copies
//! are taken off the joined cluster's size.
//!
//! Every step is spread over the workers: worker 0 alone joins only what
//! the rounds leave, a small share of the local components that share a
//! page with another worker's, and never the pages. A page
//! seen by one worker only mostly never leaves it: the bitmap
//! ([`SharedFilter`]) lets through only pages whose bit another worker's page
//! set too, so when clusters are small few of the pages are sighted instead
//! of all of them. Time and memory grow with pages, never with pairs or the
//! length of a chain.
//!
//! **Why a process holds every page its pairs touch.** Pages could instead
//! be owned by one process each (a hash of the id), with a pair that
//! crosses processes kept as an edge to the other page's id and resolved
//! here. That was built and measured (issue 73): each process interns fewer
//! pages, but every crossing pair becomes a link of the join, where a page
//! held by two processes ties all of its pairs on each side into one
//! sighting. On a random giant component about half the pairs cross on two
//! processes, so the join grew as much as the union-find shrank: no
//! process's peak fell, and the run was slower.

mod filter;
mod links;
mod node_forest;
mod rounds;
mod shared_pages;

pub(crate) use filter::{seen_twice, shared_sightings, FilterChunk, SharedFilter};
use links::IdLabel;
pub(crate) use links::{owner_of, ClusterOf, RepresentativeKeys, Resolved};
use shared_pages::describe_joined;
pub(crate) use shared_pages::{find_shared, sightings, Join, SharedPage, SharedPages};

use std::cell::RefCell;
use std::rc::Rc;

use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::Stream;

use crate::cluster::components::{Components, Label, Page, MISSING};
use crate::cluster::keep_order::KeyWords;
use crate::exec::after_all::{after_all_in_slices, Slices};
use crate::exec::parallel::prefetch;

/// The clusters of joined local components, each with its
/// representative's keys if pages have any.
pub(crate) enum JoinedClusters<'scope> {
    Keyless(Stream<'scope, u64, Vec<Resolved<()>>>),
    Keyed(Stream<'scope, u64, Vec<Resolved<KeyWords>>>),
}

/// Local components that share pages, joined into clusters: described at
/// their workers, joined in rounds spread over the workers and then at
/// worker 0 ([`rounds`]), each resolved back to its worker. Their labels
/// carry keys only if pages have any (`key_words`).
pub(crate) fn join_components<'scope>(
    joins: Stream<'scope, u64, Vec<Join>>,
    graph: Rc<RefCell<Components>>,
    shared: Rc<RefCell<SharedPages>>,
    key_words: usize,
) -> JoinedClusters<'scope> {
    match key_words {
        0 => JoinedClusters::Keyless(rounds::spread_join(describe_joined::<IdLabel>(
            joins, graph, shared,
        ))),
        _ => JoinedClusters::Keyed(rounds::spread_join(describe_joined::<Label>(
            joins, graph, shared,
        ))),
    }
}

/// The clusters of this worker's joined local components, by local root:
/// an index per root into the clusters, as they arrived. A root not in it
/// is a cluster this worker saw whole.
#[derive(Debug, Default)]
pub(crate) struct JoinedRoots {
    index: Vec<Page>,
    clusters: Vec<ClusterOf>,
    /// The clusters' representatives' keys, by index, where pages have
    /// keys.
    keys: Vec<KeyWords>,
}

impl JoinedRoots {
    /// Notes a joined root's cluster (a root's cluster may come from
    /// several workers of the join, each the same: once is kept).
    fn insert(&mut self, root: Page, cluster: ClusterOf, keys: &impl RepresentativeKeys) {
        if self.index.len() <= root as usize {
            self.index.resize(root as usize + 1, MISSING);
        }
        if self.index[root as usize] != MISSING {
            return;
        }
        self.index[root as usize] = self.clusters.len() as Page;
        self.clusters.push(cluster);
        self.keys.extend(keys.words());
    }

    /// The index of the cluster of a local root, if it was joined.
    pub(crate) fn get(&self, root: Page) -> Option<u32> {
        self.index
            .get(root as usize)
            .copied()
            .filter(|&index| index != MISSING)
    }

    /// Asks the CPU to fetch a root's entry ahead of [`Self::get`].
    pub(crate) fn prefetch(&self, root: Page) {
        if let Some(entry) = self.index.get(root as usize) {
            prefetch(entry);
        }
    }

    /// The joined clusters, by index.
    pub(crate) fn clusters(&self) -> &[ClusterOf] {
        &self.clusters
    }

    /// Their representatives' keys, by index (none if pages have no
    /// keys).
    pub(crate) fn take_keys(&mut self) -> Vec<KeyWords> {
        std::mem::take(&mut self.keys)
    }
}

/// At every worker, once the clusters of its joined components are known:
/// `start` makes the work that follows from them (the rest of this
/// worker's roots are whole clusters of their own), given a slice at a time
/// (see [`after_all_in_slices`]).
pub(crate) fn after_joins<'scope, K, O, S>(
    resolved: Stream<'scope, u64, Vec<Resolved<K>>>,
    name: &str,
    start: impl FnOnce(JoinedRoots) -> S + 'static,
) -> Stream<'scope, u64, Vec<O>>
where
    K: RepresentativeKeys,
    O: Clone + 'static,
    S: Slices<O> + 'static,
{
    let joined = Rc::new(RefCell::new(JoinedRoots::default()));
    let absorbed = joined.clone();
    after_all_in_slices(
        resolved,
        Exchange::new(|&(worker, ..): &Resolved<K>| worker as u64),
        name,
        move |data| {
            let mut joined = absorbed.borrow_mut();
            for (_, root, cluster, keys) in data.drain(..) {
                joined.insert(root, cluster, &keys);
            }
        },
        move || start(std::mem::take(&mut *joined.borrow_mut())),
    )
}
