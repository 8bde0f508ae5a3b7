//! The owner of joined clusters: the clusters whose pages several workers
//! saw, each sent whole to one worker (a hash of its id) that counts it and
//! chooses its drops.
//!
//! A sender numbers the pages it sends each owner densely (its *slots*
//! there) and names a pair's ends by those slots, so the owner places pages
//! in arrays by `(sender, slot)` and never looks an id up: only a page that
//! several workers saw comes more than once, flagged by its senders, and
//! only those are matched by id. All the owner's clusters then share one
//! greedy sweep in priority order, as a worker's own clusters do: a 10M-page
//! chain costs one radix sort and a pass, not a hash lookup per pair end.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Result};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::Stream;

use crate::clustering::{count_cluster, drop_of, ClusterTotals};
use crate::components::Page;
use crate::dataflow::commit::Report;
use crate::dataflow::components::after_all_in_slices;
use crate::dataflow::Failure;
use crate::drop_policy::{direct_drops, sorted_by_id, DirectDrops, DropPolicy, KeyedPage};
use crate::part_runs::{RunBuilder, RunSlice};

/// What a worker sends a joined cluster's owner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Assigned {
    Member(Member),
    /// A pair, by its ends' slots from `source`.
    Pair {
        source: u32,
        a: u32,
        b: u32,
        distance: u8,
    },
}

/// An [`Assigned`] record and the global index of the worker it goes to.
pub type Addressed = (u32, Assigned);

/// A page of a joined cluster: its slot among those `source` sends this
/// owner, its cluster's representative, whether it ranks first (a corpus
/// page under `--corpus-wins`) and whether other workers saw it too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub source: u32,
    pub slot: u32,
    pub id: i64,
    pub cluster: i64,
    pub first: bool,
    pub shared: bool,
}

/// The owner's side of the dataflow.
pub struct ClusterOwner {
    /// The run its rows form (unique among the producers of rows).
    pub run: u32,
    pub policy: DropPolicy,
    pub parts: usize,
    pub max_size: u64,
    pub state: Rc<RefCell<Report<ClusterTotals>>>,
    pub failure: Arc<Failure>,
}

impl ClusterOwner {
    /// Takes every record of this worker's joined clusters; once all have
    /// come, gives their rows.
    pub fn rows<'scope>(
        self,
        assigned: Stream<'scope, u64, Vec<Addressed>>,
    ) -> Stream<'scope, u64, Vec<RunSlice>> {
        type Inbox = (Vec<Member>, Vec<(u32, u32, u32, u8)>);
        let inbox = Rc::new(RefCell::new(Inbox::default()));
        let absorbed = inbox.clone();
        after_all_in_slices(
            assigned,
            Exchange::new(|&(target, _): &Addressed| target as u64),
            "OwnClusters",
            move |data| {
                let (members, pairs) = &mut *absorbed.borrow_mut();
                for (_, assigned) in data.drain(..) {
                    match assigned {
                        Assigned::Member(member) => members.push(member),
                        Assigned::Pair {
                            source,
                            a,
                            b,
                            distance,
                        } => pairs.push((source, a, b, distance)),
                    }
                }
            },
            move || {
                let (members, pairs) = std::mem::take(&mut *inbox.borrow_mut());
                let mut work = (!self.failure.happened() && !members.is_empty())
                    .then(|| OwnerWork::start(&self, members, &pairs));
                move |give: &mut dyn FnMut(RunSlice)| match work.as_mut() {
                    Some(Ok(work)) => work.next_slice(give),
                    Some(Err(_)) => {
                        if let Some(Err(error)) = work.take() {
                            self.state.borrow_mut().fail(error, &self.failure);
                        }
                        false
                    }
                    None => false,
                }
            },
        )
    }
}

/// Pages given per slice (see [`after_all_in_slices`]).
const SLICE: usize = 1 << 18;

/// An owner's clusters, counted and their drops chosen, given as rows in
/// id order a slice at a time.
struct OwnerWork {
    policy: DropPolicy,
    /// `(cluster id, size)` of each cluster, by a dense index.
    clusters: Vec<(i64, u32)>,
    /// The distinct pages `(id, index, cluster's dense index)` in id order,
    /// and the next to give.
    by_id: Vec<KeyedPage>,
    next: usize,
    drops: DirectDrops,
    rows: RunBuilder,
}

impl OwnerWork {
    /// Places the pages, counts the clusters into the totals, and under the
    /// direct policy chooses the drops.
    fn start(
        owner: &ClusterOwner,
        members: Vec<Member>,
        pairs: &[(u32, u32, u32, u8)],
    ) -> Result<OwnerWork> {
        let started = Instant::now();
        let pages = Pages::place(members)?;
        let mut dense = FxHashMap::<i64, u32>::default();
        let mut clusters: Vec<(i64, u32)> = Vec::new();
        let keyed = pages.distinct().map(|x| {
            let Member { id, cluster, .. } = pages.held[x];
            let c = *dense.entry(cluster).or_insert_with(|| {
                clusters.push((cluster, 0));
                clusters.len() as u32 - 1
            });
            clusters[c as usize].1 += 1;
            (id, x as Page, c)
        });
        let by_id = sorted_by_id(keyed);
        {
            let totals = &mut owner.state.borrow_mut().body;
            for &(cluster, size) in &clusters {
                count_cluster(totals, u64::from(size), cluster, owner.max_size);
            }
        }
        let drops = match owner.policy {
            DropPolicy::Direct => owner_drops(&pages, &by_id, pairs)?,
            DropPolicy::Component => DirectDrops::default(),
        };
        tracing::info!(
            pages = by_id.len(),
            clusters = clusters.len(),
            seconds = started.elapsed().as_secs_f64(),
            rss_mib = ?crate::logging::resident_mib(),
            "joined clusters counted and drops chosen"
        );
        Ok(OwnerWork {
            policy: owner.policy,
            clusters,
            by_id,
            next: 0,
            drops,
            rows: RunBuilder::new(owner.run, owner.parts),
        })
    }

    /// Gives the next slice of pages' rows; false once all are given.
    fn next_slice(&mut self, give: &mut dyn FnMut(RunSlice)) -> bool {
        let end = (self.next + SLICE).min(self.by_id.len());
        for &(id, x, c) in &self.by_id[self.next..end] {
            let (cluster, size) = self.clusters[c as usize];
            let drop = drop_of(self.policy, (id, cluster), self.drops.take(x));
            self.rows.page((id, cluster, size), drop, give);
        }
        self.next = end;
        if end < self.by_id.len() {
            return true;
        }
        self.rows.finish(give);
        false
    }
}

/// One greedy sweep over every page of an owner's clusters (`by_id`, the
/// distinct pages in id order).
fn owner_drops(
    pages: &Pages,
    by_id: &[KeyedPage],
    pairs: &[(u32, u32, u32, u8)],
) -> Result<DirectDrops> {
    let mut ends = Vec::with_capacity(pairs.len());
    for &(source, a, b, distance) in pairs {
        match (pages.index(source, a), pages.index(source, b)) {
            (Some(a), Some(b)) => ends.push((a, b, distance)),
            _ => bail!("a pair from worker {source} names a page it did not send (internal error)"),
        }
    }
    Ok(direct_drops(
        by_id,
        pages.held.len(),
        |x| pages.held[x as usize].first,
        ends.into_iter(),
    ))
}

/// An owner's pages, at `base[source] + slot`, with the pages several
/// workers sent joined into one.
struct Pages {
    held: Vec<Member>,
    base: Vec<usize>,
    /// The index standing for each index: itself, or the first copy of a
    /// page several workers sent.
    canonical: Vec<Page>,
}

impl Pages {
    fn place(members: Vec<Member>) -> Result<Pages> {
        let sources = members
            .iter()
            .map(|m| m.source as usize + 1)
            .max()
            .unwrap_or(0);
        let mut base = vec![0usize; sources + 1];
        for m in &members {
            base[m.source as usize + 1] += 1;
        }
        for s in 0..sources {
            base[s + 1] += base[s];
        }
        let n = members.len();
        let mut held: Vec<Option<Member>> = vec![None; n];
        for m in members {
            let at = base[m.source as usize] + m.slot as usize;
            match held.get_mut(at) {
                Some(place @ None) => *place = Some(m),
                _ => bail!(
                    "worker {} sent slot {} twice or out of range (internal error)",
                    m.source,
                    m.slot
                ),
            }
        }
        let mut held: Vec<Member> = held.into_iter().flatten().collect();
        base.truncate(sources);
        let mut canonical: Vec<Page> = (0..n as Page).collect();
        let mut first_copy = FxHashMap::<i64, Page>::default();
        for x in 0..n {
            if held[x].shared {
                let kept = *first_copy.entry(held[x].id).or_insert(x as Page);
                canonical[x] = kept;
                held[kept as usize].first |= held[x].first;
            }
        }
        Ok(Pages {
            held,
            base,
            canonical,
        })
    }

    /// The canonical index of `slot` from `source`.
    fn index(&self, source: u32, slot: u32) -> Option<Page> {
        let base = *self.base.get(source as usize)?;
        let at = base + slot as usize;
        let next = self.base.get(source as usize + 1).copied();
        let end = next.unwrap_or(self.held.len());
        (at < end).then(|| self.canonical[at])
    }

    /// The index of every distinct page.
    fn distinct(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.held.len()).filter(|&x| self.is_distinct(x))
    }

    /// Whether `x` is a page's first copy.
    fn is_distinct(&self, x: usize) -> bool {
        self.canonical[x] as usize == x
    }
}
