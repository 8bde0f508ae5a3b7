//! Connected components on timely: every worker's union-find over its share
//! of the pairs, joined where workers saw the same page; each worker then
//! learns which of its local components were joined, and into which cluster.
//!
//! ```text
//!   local union-find (every worker: its row groups)
//!     --a bit per page, each range of the bitmap to its worker--> bits set by two workers or more
//!     --those bits, to every worker--> the sightings of pages whose bit is among them
//!     --each (id, worker, rank, local root), by a hash of the id--> find shared pages
//!     --local roots that share a page, to their worker--> describe them (least label, pages)
//!     --links between local components--> join them: rounds spread over the workers, then
//!       worker 0 for what is left ([`rounds`])
//!     --each joined local root's cluster and size, back to its worker--> after_joins
//! ```
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

mod rounds;

use std::cell::RefCell;
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, ParallelizationContract};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::Stream;

use crate::cluster::components::{mix, Components, KeyedPage, Label, Page, MISSING};
use crate::cluster::keep_order::MAX_KEY_WORDS;
use crate::exec::parallel::prefetch;

/// A page as one worker's union-find holds it: `(id, worker and rank,
/// local root, page)`, the rank (whether the page ranks first, as that
/// worker saw it) in the lowest bit. The page comes back with its joins, so
/// that its worker marks it by index rather than looking its id up.
pub(crate) type Sighting = (i64, u32, Page, Page);

/// A component of one worker's union-find: `(worker, local root)`.
pub(crate) type Node = (u32, Page);

/// A local component that shares a page with another worker's, sent to its
/// worker: `(worker, local root, the page, the node it joins, whether the
/// page ranks first)`; the node joined is the least of the page's
/// sightings, and the page ranks first if any worker saw it so (only one
/// may have seen the pair that makes it a corpus page).
pub(crate) type Join = (u32, Page, Page, Node, bool);

/// A local component's least label as the join carries it: a [`Label`]
/// when the run orders pages by keys, an [`IdLabel`] when by corpus and id
/// alone. The join's records are its traffic and most of its workers'
/// memory, and eight unused key words were half of each.
pub(crate) trait JoinLabel:
    Copy + Ord + std::fmt::Debug + Serialize + for<'de> Deserialize<'de> + Send + 'static
{
    /// After every real label: a node's until its own link comes.
    const NONE: Self;
    /// The least label of a local component.
    fn of(components: &Components, root: Page) -> Self;
    fn id(&self) -> i64;
}

impl JoinLabel for Label {
    const NONE: Label = Label {
        later: true,
        keys: [u32::MAX; MAX_KEY_WORDS],
        id: i64::MAX,
    };

    fn of(components: &Components, root: Page) -> Label {
        components.least(root)
    }

    fn id(&self) -> i64 {
        self.id
    }
}

/// A [`Label`] without keys, in the same order as a keyless one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct IdLabel {
    pub(crate) later: bool,
    pub(crate) id: i64,
}

impl JoinLabel for IdLabel {
    const NONE: IdLabel = IdLabel {
        later: true,
        id: i64::MAX,
    };

    fn of(components: &Components, root: Page) -> IdLabel {
        let Label { later, id, .. } = components.least(root);
        IdLabel { later, id }
    }

    fn id(&self) -> i64 {
        self.id
    }
}

/// A joined local component as the join needs it: one per node it joins
/// (pages shared with the same node make one link).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(bound = "")]
pub(crate) struct NodeLink<L: JoinLabel> {
    pub(crate) node: Node,
    pub(crate) joins: Node,
    /// The node's least label (every link of a node carries it: a set's
    /// least is a least, whichever links reach it).
    pub(crate) least: L,
    /// What the link adds to its set's pages: on a node's first link its
    /// pages, less on every link the pages it shares through that link
    /// that another worker writes (they are counted there). A sum, so
    /// that a set's pages come right wherever its links are added up.
    pub(crate) pages: i64,
}

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

/// A cluster as the workers that hold its pages need it: `(id, pages)`.
pub(crate) type ClusterOf = (i64, u32);

/// A joined local component's cluster: `(worker, local root, cluster)`.
pub(crate) type Resolved = (u32, Page, ClusterOf);

/// The worker that owns a key (a page or a cluster id) among `peers` (also
/// a row's output part): its hash's remainder. A power of two (the usual
/// count of workers and parts) takes the hash's low bits, the same
/// remainder without a division: every output row pays for this once or
/// twice, and a division is a sizeable share of making a drop row.
pub(crate) fn owner_of(key: i64, peers: usize) -> u32 {
    let hash = xxhash_rust::xxh3::xxh3_64(&key.to_le_bytes());
    let peers = peers as u64;
    let owner = match peers.is_power_of_two() {
        true => hash & (peers - 1),
        false => hash % peers,
    };
    owner as u32
}

/// The sightings of `pages`: those of a worker's share of its process's
/// pages that pass the [`SharedFilter`], in id order, so that each page's
/// owner merges sorted runs instead of sorting them.
pub(crate) fn sightings<'a>(
    components: &'a Components,
    pages: impl Iterator<Item = &'a KeyedPage> + 'a,
    worker: u32,
) -> impl Iterator<Item = Sighting> + 'a {
    pages.map(move |&(id, page, root)| {
        let rank = u32::from(components.ranks_first(page));
        (id, worker << 1 | rank, root, page)
    })
}

/// A bitmap over page ids that tells which pages more than one worker may
/// have seen, so that only those are sighted: every worker sets the bit of
/// each of its pages, and a bit set by two workers or more lets a page
/// through. A page two workers saw always passes (no false negatives); a
/// page one worker saw passes when another worker's page set the same bit,
/// about as often as the other workers' pages are a share of the bits.
///
/// Sighting every page cost a 16-byte record per page through the
/// exchange and a merge at its owner; a bit per page (a few per pair) costs
/// a sixteenth of it or less.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SharedFilter {
    log2_bits: u32,
    /// Whether pages can be shared at all: the workers of one process
    /// share one union-find and split its components, so only workers of
    /// different processes see the same page.
    shares: bool,
}

/// Words of a filter's bitmap given to one worker: `(worker, range, words)`.
pub(crate) type FilterChunk = (u32, u32, Vec<u64>);

impl SharedFilter {
    /// A filter for a job of `pairs` pairs on `peers` workers in
    /// `processes` processes: about 8 bits per pair (pages are at most two
    /// per pair, so at most a quarter of the bits are set), and at most 32
    /// bits per pair a worker (the bitmap is held by every worker: it must
    /// not outgrow a worker's own share). One process shares nothing, and
    /// gets the least bitmap, which lets nothing through.
    pub(crate) fn new(pairs: u64, peers: usize, processes: usize) -> SharedFilter {
        let shares = processes > 1;
        let bits = match shares {
            false => 0,
            true => (8 * pairs).min(32 * pairs / peers as u64),
        };
        let log2_bits = bits.max(1).next_power_of_two().trailing_zeros();
        SharedFilter {
            log2_bits: log2_bits.clamp(MIN_FILTER_LOG2, MAX_FILTER_LOG2),
            shares,
        }
    }

    fn words(&self) -> usize {
        1 << (self.log2_bits - 6)
    }

    /// The bit of page `id`.
    fn bit(&self, id: i64) -> usize {
        (mix(id) >> (64 - self.log2_bits)) as usize
    }

    /// The words of range `range` of `peers`.
    fn range(&self, range: usize, peers: usize) -> std::ops::Range<usize> {
        let words = self.words();
        range * words / peers..(range + 1) * words / peers
    }

    /// A worker's bitmap of its pages, cut into one chunk per worker (the
    /// range that worker combines). The bits are random places in a bitmap
    /// larger than the cache, so each is fetched a few pages ahead.
    pub(crate) fn chunks(&self, pages: &[KeyedPage], peers: usize) -> Vec<FilterChunk> {
        let mut words = vec![0u64; self.words()];
        let pages = if self.shares { pages } else { &[] };
        for (at, &(id, ..)) in pages.iter().enumerate() {
            if let Some(&(ahead, ..)) = pages.get(at + LOOKAHEAD) {
                prefetch(&words[self.bit(ahead) / 64]);
            }
            let bit = self.bit(id);
            words[bit / 64] |= 1 << (bit % 64);
        }
        (0..peers)
            .map(|r| (r as u32, r as u32, words[self.range(r, peers)].to_vec()))
            .collect()
    }

    /// The pages that may be shared, by `twice` (the bits set by two
    /// workers or more, from [`seen_twice`]).
    pub(crate) fn passing<'a>(
        &'a self,
        twice: &'a [u64],
        pages: &'a [KeyedPage],
    ) -> impl Iterator<Item = &'a KeyedPage> + 'a {
        let pages = if self.shares { pages } else { &[] };
        pages.iter().enumerate().filter_map(move |(at, page)| {
            if let Some(&(ahead, ..)) = pages.get(at + LOOKAHEAD) {
                prefetch(&twice[self.bit(ahead) / 64]);
            }
            let bit = self.bit(page.0);
            (twice[bit / 64] >> (bit % 64) & 1 == 1).then_some(page)
        })
    }
}

/// How many pages ahead a filter's bit is fetched.
const LOOKAHEAD: usize = 16;

/// The least filter: one word.
const MIN_FILTER_LOG2: u32 = 6;
/// The largest filter: 256 MiB a worker.
const MAX_FILTER_LOG2: u32 = 31;

/// At each worker, the range of the filter it combines: the bits that two
/// workers or more set, given to every worker.
pub(crate) fn seen_twice<'scope>(
    chunks: Stream<'scope, u64, Vec<FilterChunk>>,
    peers: usize,
) -> Stream<'scope, u64, Vec<FilterChunk>> {
    let combined = Rc::new(RefCell::new(None::<(u32, Vec<u64>, Vec<u64>)>));
    let absorbed = combined.clone();
    after_all(
        chunks,
        Exchange::new(|&(worker, ..): &FilterChunk| u64::from(worker)),
        "SeenTwice",
        move |data| {
            let mut combined = absorbed.borrow_mut();
            for (_, range, words) in data.drain(..) {
                let (_, once, twice) = combined
                    .get_or_insert_with(|| (range, vec![0; words.len()], vec![0; words.len()]));
                count_twice(once, twice, &words);
            }
        },
        move |give| {
            if let Some((range, _, twice)) = combined.borrow_mut().take() {
                for worker in 0..peers as u32 {
                    give((worker, range, twice.clone()));
                }
            }
        },
    )
}

/// Adds one worker's `words` to a range's bits seen `once` and `twice`
/// (or more).
fn count_twice(once: &mut [u64], twice: &mut [u64], words: &[u64]) {
    for ((once, twice), &word) in once.iter_mut().zip(twice.iter_mut()).zip(words) {
        *twice |= *once & word;
        *once |= word;
    }
}

/// At every worker, once the bits seen twice are all in: `sighted` gives
/// the sightings of its pages that may be shared (see [`sightings`]).
pub(crate) fn shared_sightings<'scope>(
    twice: Stream<'scope, u64, Vec<FilterChunk>>,
    filter: SharedFilter,
    peers: usize,
    sighted: impl FnOnce(&[u64], &mut dyn FnMut(Sighting)) + 'static,
) -> Stream<'scope, u64, Vec<Sighting>> {
    let bits = Rc::new(RefCell::new(vec![0u64; filter.words()]));
    let absorbed = bits.clone();
    let mut sighted = Some(sighted);
    after_all(
        twice,
        Exchange::new(|&(worker, ..): &FilterChunk| u64::from(worker)),
        "SharedSightings",
        move |data| {
            let mut bits = absorbed.borrow_mut();
            for (_, range, words) in data.drain(..) {
                bits[filter.range(range as usize, peers)].copy_from_slice(&words);
            }
        },
        move |give| {
            let bits = std::mem::take(&mut *bits.borrow_mut());
            if let Some(sighted) = sighted.take() {
                sighted(&bits, give);
            }
        },
    )
}

/// Absorbs all of `input`, then (once its frontier is empty) calls `finish`
/// once with a function that gives output: the shape of every step here,
/// each of which needs all of its input before it can say anything.
pub(crate) fn after_all<'scope, D, O, P>(
    input: Stream<'scope, u64, Vec<D>>,
    pact: P,
    name: &str,
    absorb: impl FnMut(&mut Vec<D>) + 'static,
    mut finish: impl FnMut(&mut dyn FnMut(O)) + 'static,
) -> Stream<'scope, u64, Vec<O>>
where
    D: 'static,
    O: Clone + 'static,
    P: ParallelizationContract<u64, Vec<D>>,
{
    after_all_in_slices(input, pact, name, absorb, move || {
        move |give: &mut dyn FnMut(O)| {
            finish(give);
            false
        }
    })
}

/// [`after_all`] for work that reads its input as it came: the batches are
/// kept as received and given to `finish` as one [`Batches`].
fn after_all_batches<'scope, D, O, P>(
    input: Stream<'scope, u64, Vec<D>>,
    pact: P,
    name: &str,
    mut finish: impl FnMut(Batches<D>, &mut dyn FnMut(O)) + 'static,
) -> Stream<'scope, u64, Vec<O>>
where
    D: 'static,
    O: Clone + 'static,
    P: ParallelizationContract<u64, Vec<D>>,
{
    let batches_in = Rc::new(RefCell::new(Vec::<Vec<D>>::new()));
    let absorbed = batches_in.clone();
    after_all(
        input,
        pact,
        name,
        move |data| absorbed.borrow_mut().push(std::mem::take(data)),
        move |give| {
            let batches = std::mem::take(&mut *batches_in.borrow_mut());
            finish(Batches(&batches), give);
        },
    )
}

/// [`after_all`] for work that sorts its input: gathered into one vector
/// as it comes, rather than kept in its batches and copied at the end.
fn after_all_gathered<'scope, D, O, P>(
    input: Stream<'scope, u64, Vec<D>>,
    pact: P,
    name: &str,
    mut finish: impl FnMut(Vec<D>, &mut dyn FnMut(O)) + 'static,
) -> Stream<'scope, u64, Vec<O>>
where
    D: 'static,
    O: Clone + 'static,
    P: ParallelizationContract<u64, Vec<D>>,
{
    let gathered = Rc::new(RefCell::new(Vec::<D>::new()));
    let absorbed = gathered.clone();
    after_all(
        input,
        pact,
        name,
        move |data| absorbed.borrow_mut().append(data),
        move |give| finish(std::mem::take(&mut *gathered.borrow_mut()), give),
    )
}

/// Work that gives its output a slice at a time: called until it returns
/// false (no more to give).
pub(crate) trait Slices<O> {
    fn next_slice(&mut self, give: &mut dyn FnMut(O)) -> bool;
}

impl<O, F: FnMut(&mut dyn FnMut(O)) -> bool> Slices<O> for F {
    fn next_slice(&mut self, give: &mut dyn FnMut(O)) -> bool {
        self(give)
    }
}

/// [`after_all`] for output too large to hold twice: once the input is all
/// in, `start` makes the work, whose slices are given one per activation of
/// the operator, so that each slice flows on to the operators downstream
/// (and their workers) before the next is made, instead of every record
/// waiting in a channel at once.
pub(crate) fn after_all_in_slices<'scope, D, O, P, S>(
    input: Stream<'scope, u64, Vec<D>>,
    pact: P,
    name: &str,
    mut absorb: impl FnMut(&mut Vec<D>) + 'static,
    start: impl FnOnce() -> S + 'static,
) -> Stream<'scope, u64, Vec<O>>
where
    D: 'static,
    O: Clone + 'static,
    P: ParallelizationContract<u64, Vec<D>>,
    S: Slices<O> + 'static,
{
    let scope = input.scope();
    let step = name.to_string();
    input.unary_frontier::<CapacityContainerBuilder<Vec<O>>, _, _, _>(
        pact,
        name,
        move |capability, info| {
            let activator = scope.activator_for(info.address);
            let mut capability = Some(capability);
            let (mut start, mut work) = (Some(start), None);
            let mut started = None;
            move |(input, frontier), output| {
                input.for_each(|_time, data| absorb(data));
                if !frontier.is_empty() {
                    return;
                }
                let Some(held) = capability.as_ref() else {
                    return;
                };
                if let Some(start) = start.take() {
                    let rss_mib = crate::exec::logging::resident_mib();
                    tracing::debug!(step, ?rss_mib, "all input in");
                    started = Some(std::time::Instant::now());
                    work = Some(start());
                }
                let Some(work) = work.as_mut() else {
                    return;
                };
                let more = {
                    let mut session = output.session(held);
                    work.next_slice(&mut |item| session.give(item))
                };
                if more {
                    activator.activate();
                } else {
                    capability = None;
                    let seconds = started.map(|t| t.elapsed().as_secs_f64());
                    let rss_mib = crate::exec::logging::resident_mib();
                    tracing::debug!(step, seconds, ?rss_mib, "all output given");
                }
            }
        },
    )
}

/// At each page's owner: the pages several workers saw, as joins of their
/// local components. Each worker sends its sightings in id order, so they
/// arrive as one sorted run per worker, and the pages seen twice are found
/// by merging the runs. `expected` is how many sightings this worker will
/// likely get (its own page count, as ids hash evenly), set before they
/// come: the runs are sized once instead of doubling (and copying) their
/// way up.
pub(crate) fn find_shared<'scope>(
    sightings: Stream<'scope, u64, Vec<Sighting>>,
    peers: usize,
    expected: Rc<std::cell::Cell<usize>>,
) -> Stream<'scope, u64, Vec<Join>> {
    let runs = Rc::new(RefCell::new(Vec::<Vec<Sighting>>::new()));
    let absorbed = runs.clone();
    after_all(
        sightings,
        Exchange::new(move |&(id, ..): &Sighting| owner_of(id, peers) as u64),
        "FindShared",
        move |data| {
            let mut runs = absorbed.borrow_mut();
            if runs.is_empty() {
                // A worker's share of this owner's sightings, and an eighth more.
                let each = (expected.get() / peers) * 9 / 8;
                runs.extend((0..peers).map(|_| Vec::with_capacity(each)));
            }
            for sighting in data.drain(..) {
                runs[(sighting.1 >> 1) as usize].push(sighting);
            }
        },
        move |give| {
            let mut runs = std::mem::take(&mut *runs.borrow_mut());
            for run in &mut runs {
                // Timely delivers a sender's records in order; sorting is
                // only a guard, and costs nothing on a sorted run but a pass.
                if !run.is_sorted_by_key(|&(id, ..)| id) {
                    radsort::sort_by_key(run, |&(id, ..)| id);
                }
            }
            let node = |&(_, worker, root, _): &Sighting| (worker >> 1, root);
            for_each_shared(&runs, |same| {
                // The least worker, not the first to arrive: who writes the
                // page must not depend on timing.
                let head = same.iter().map(node).min().unwrap_or(node(&same[0]));
                let first = same.iter().any(|&(_, worker, ..)| worker & 1 == 1);
                for sighting in same {
                    let (worker, root) = node(sighting);
                    give((worker, root, sighting.3, head, first));
                }
            });
        },
    )
}

/// Calls `shared` with the sightings of each id that is in more than one
/// of `runs` (each sorted by id, an id at most once per run), in id order:
/// a merge of the runs' heads, one sift of a heap per sighting.
fn for_each_shared(runs: &[Vec<Sighting>], mut shared: impl FnMut(&[Sighting])) {
    use std::cmp::Reverse;
    use std::collections::binary_heap::{BinaryHeap, PeekMut};
    let mut heads: BinaryHeap<Reverse<(i64, usize, usize)>> = runs
        .iter()
        .enumerate()
        .filter_map(|(run, sightings)| Some(Reverse((sightings.first()?.0, run, 0))))
        .collect();
    let mut same: Vec<Sighting> = Vec::new();
    let mut current = None;
    while let Some(mut top) = heads.peek_mut() {
        let Reverse((id, run, at)) = *top;
        if current != Some(id) {
            if same.len() > 1 {
                shared(&same);
            }
            same.clear();
            current = Some(id);
        }
        same.push(runs[run][at]);
        match runs[run].get(at + 1) {
            Some(next) => *top = Reverse((next.0, run, at + 1)),
            None => drop(PeekMut::pop(top)),
        }
    }
    if same.len() > 1 {
        shared(&same);
    }
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
) -> Stream<'scope, u64, Vec<Resolved>> {
    match key_words {
        0 => rounds::spread_join(describe_joined::<IdLabel>(joins, graph, shared)),
        _ => rounds::spread_join(describe_joined::<Label>(joins, graph, shared)),
    }
}

/// At each joined component's worker: its least label and size, for the
/// join, once per node it joins. The worker's pages that other workers saw
/// too are marked in `shared`, with whether this worker writes them.
///
/// A component that shares several pages with the same node sends one
/// link for them all, with their copies counted: fewer links, each a
/// record through the exchange and a union in the join.
fn describe_joined<'scope, L: JoinLabel>(
    joins: Stream<'scope, u64, Vec<Join>>,
    graph: Rc<RefCell<Components>>,
    shared: Rc<RefCell<SharedPages>>,
) -> Stream<'scope, u64, Vec<NodeLink<L>>> {
    after_all_batches(
        joins,
        Exchange::new(|&(worker, ..): &Join| worker as u64),
        "DescribeJoined",
        move |joins, give| {
            let components = &*graph.borrow();
            let mut shared = shared.borrow_mut();
            for link in links_of(joins, components, &mut shared) {
                give(link);
            }
        },
    )
}

/// The links of a worker's joins (see [`describe_joined`]), marking their
/// pages in `shared`: a root's first link is found by an array by root;
/// a root that joins several nodes (rare) gives a link for each further
/// join, not merged.
fn links_of<L: JoinLabel>(
    received: Batches<Join>,
    components: &Components,
    shared: &mut SharedPages,
) -> Vec<NodeLink<L>> {
    let mut links: Vec<NodeLink<L>> = Vec::new();
    if received.is_empty() {
        return links;
    }
    let mut first_link = vec![MISSING; components.len()];
    for (&(worker, root, page, joins, first), ahead) in received.with_ahead(LOOKAHEAD) {
        // Roots and pages are random places in this worker's arrays.
        if let Some(&(_, root, page, ..)) = ahead {
            components.prefetch_node(root);
            shared.prefetch(page);
            prefetch(&first_link[root as usize]);
        }
        let writes = (worker, root) == joins;
        shared.mark(page, components.len(), SharedPage { writes, first });
        let copies = i64::from(!writes);
        let pages = match links.get_mut(first_link[root as usize] as usize) {
            Some(link) if link.joins == joins => {
                link.pages -= copies;
                continue;
            }
            Some(_) => 0,
            None => {
                first_link[root as usize] = links.len() as u32;
                i64::from(components.component_size(root))
            }
        };
        links.push(NodeLink {
            node: (worker, root),
            joins,
            least: L::of(components, root),
            pages: pages - copies,
        });
    }
    links
}

/// At worker 0: the clusters (id and size) of the joined local components
/// the rounds left joined (see [`rounds`]). Links are joined as they
/// arrive, each batch then dropped: held until the last came, they were
/// most of worker 0's memory, and the union-find waited for the slowest
/// worker's links.
fn join_at_worker_zero<'scope, L: JoinLabel>(
    links: Stream<'scope, u64, Vec<NodeLink<L>>>,
) -> Stream<'scope, u64, Vec<Resolved>> {
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
            for ((worker, root), cluster) in joined.clusters() {
                give((worker, root, cluster));
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
struct NodeForest<L: JoinLabel, I> {
    /// Each node's index.
    index: I,
    /// Each node's `(worker, local root)`, by index.
    nodes: Vec<Node>,
    sets: Vec<NodeSet<L>>,
    /// Whether a node's own links came here (its cluster is given from
    /// here, by [`rounds`]).
    own: Vec<bool>,
    /// A batch's nodes, kept for the next batch.
    batch_nodes: Vec<u32>,
    /// Links joined.
    links: usize,
}

/// Where a [`NodeForest`] finds a node's index.
trait NodeIndex: Default {
    /// The node's index, if it has one, else `next` after numbering it so.
    fn index_or(&mut self, node: Node, next: u32) -> u32;
    /// Asks the CPU to fetch the node's entry.
    fn prefetch(&self, node: Node);
}

/// Indexes by worker and local root ([`MISSING`]: none).
#[derive(Default)]
struct ByRoot(Vec<Vec<u32>>);

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
struct Hashed(rustc_hash::FxHashMap<u64, u32>);

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
struct NodeSet<L> {
    parent: u32,
    /// Nodes in the set.
    size: u32,
    /// Distinct pages in the set, as far as its links here count them
    /// (a part of a set whose other links are elsewhere may be below 0).
    pages: i64,
    least: L,
}

/// How many links ahead a node's entries are fetched.
const JOIN_LOOKAHEAD: usize = 16;

/// Records an operator received, kept in the batches they came in: read
/// as one sequence, never gathered into one vector (which would double its
/// way up, copying the records and first-touching them twice over).
struct Batches<'a, T>(&'a [Vec<T>]);

impl<T> Clone for Batches<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Batches<'_, T> {}

impl<'a, T> Batches<'a, T> {
    fn is_empty(self) -> bool {
        self.0.iter().all(Vec::is_empty)
    }

    fn iter(self) -> impl Iterator<Item = &'a T> + Clone {
        self.0.iter().flatten()
    }

    /// Each record with the one `ahead` records after it, if any: what to
    /// fetch while the record is worked on.
    fn with_ahead(self, ahead: usize) -> impl Iterator<Item = (&'a T, Option<&'a T>)> {
        let mut later = self.iter().skip(ahead);
        self.iter().map(move |record| (record, later.next()))
    }
}

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
    fn from_links(links: Batches<NodeLink<L>>) -> NodeForest<L, I> {
        let mut forest = NodeForest::default();
        for batch in links.0 {
            forest.add(batch);
        }
        forest
    }

    /// Joins a batch of links: each link's node is numbered (and its label
    /// and pages put in) first, then the unions, each a few links behind
    /// the fetches of its entries.
    fn add(&mut self, links: &[NodeLink<L>]) {
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
    fn index(&mut self, node: Node) -> u32 {
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

    fn find(&mut self, mut node: u32) -> u32 {
        while self.sets[node as usize].parent != node {
            let grand = self.sets[self.sets[node as usize].parent as usize].parent;
            self.sets[node as usize].parent = grand;
            node = grand;
        }
        node
    }

    fn union(&mut self, a: u32, b: u32) {
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
    fn roots(&mut self) -> Vec<u32> {
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
    fn cluster_of_set(&self, root: u32) -> ClusterOf {
        let set = &self.sets[root as usize];
        let pages = u32::try_from(set.pages.max(0)).unwrap_or(u32::MAX);
        (set.least.id(), pages)
    }

    /// Every node's cluster, by index, when every link is here.
    fn clusters(&mut self) -> impl Iterator<Item = (Node, ClusterOf)> + '_ {
        let roots = self.roots();
        let this = &*self;
        this.nodes
            .iter()
            .zip(roots)
            .map(move |(&node, root)| (node, this.cluster_of_set(root)))
    }
}

/// The clusters of this worker's joined local components, by local root:
/// an index per root into the clusters, as they arrived. A root not in it
/// is a cluster this worker saw whole.
#[derive(Debug, Default)]
pub(crate) struct JoinedRoots {
    index: Vec<Page>,
    clusters: Vec<ClusterOf>,
}

impl JoinedRoots {
    /// Notes a joined root's cluster (a root's cluster may come from
    /// several workers of the join, each the same: once is kept).
    fn insert(&mut self, root: Page, cluster: ClusterOf) {
        if self.index.len() <= root as usize {
            self.index.resize(root as usize + 1, MISSING);
        }
        if self.index[root as usize] != MISSING {
            return;
        }
        self.index[root as usize] = self.clusters.len() as Page;
        self.clusters.push(cluster);
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
}

/// At every worker, once the clusters of its joined components are known:
/// `start` makes the work that follows from them (the rest of this
/// worker's roots are whole clusters of their own), given a slice at a time
/// (see [`after_all_in_slices`]).
pub(crate) fn after_joins<'scope, O, S>(
    resolved: Stream<'scope, u64, Vec<Resolved>>,
    name: &str,
    start: impl FnOnce(JoinedRoots) -> S + 'static,
) -> Stream<'scope, u64, Vec<O>>
where
    O: Clone + 'static,
    S: Slices<O> + 'static,
{
    let joined = Rc::new(RefCell::new(JoinedRoots::default()));
    let absorbed = joined.clone();
    after_all_in_slices(
        resolved,
        Exchange::new(|&(worker, ..): &Resolved| worker as u64),
        name,
        move |data| {
            let mut joined = absorbed.borrow_mut();
            for (_, root, cluster) in data.drain(..) {
                joined.insert(root, cluster);
            }
        },
        move || start(std::mem::take(&mut *joined.borrow_mut())),
    )
}

#[cfg(test)]
pub(super) mod tests {
    use std::collections::HashMap;

    use super::*;

    /// A label with no keys.
    pub(super) fn keyless(later: bool, id: i64) -> IdLabel {
        IdLabel { later, id }
    }

    #[test]
    fn pages_shared_with_the_same_node_make_one_link_with_their_copies() {
        // This worker's graph: one component {1, 2, 3}, one {10, 11}.
        let graph = crate::cluster::components::SharedGraph::new(false, 1, 0);
        graph.prepare(0, 0, None);
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
        let mut links: Vec<NodeLink<IdLabel>> =
            links_of(Batches(&batches), components, &mut shared);
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

    /// The bits seen twice of `workers`' pages, combined range by range as
    /// the dataflow does.
    fn twice_of(filter: SharedFilter, workers: &[Vec<KeyedPage>]) -> Vec<u64> {
        let peers = workers.len();
        let chunks: Vec<Vec<FilterChunk>> = workers
            .iter()
            .map(|pages| filter.chunks(pages, peers))
            .collect();
        let mut bits = vec![0; filter.words()];
        for range in 0..peers {
            let words = filter.range(range, peers);
            let (mut once, mut twice) = (vec![0; words.len()], vec![0; words.len()]);
            for chunk in &chunks {
                assert_eq!(chunk[range].1 as usize, range);
                count_twice(&mut once, &mut twice, &chunk[range].2);
            }
            bits[words].copy_from_slice(&twice);
        }
        bits
    }

    #[test]
    fn every_page_several_workers_saw_passes_the_filter_and_few_others_do() {
        // Three workers, ids with structure (multiples of 2^40, sequential,
        // scattered by a multiply): every sixth id is seen by two workers.
        let ids = (0..60_000i64).map(|i| match i % 3 {
            0 => i << 40,
            1 => i,
            _ => i.wrapping_mul(2_862_933_555_777_941_757),
        });
        let mut workers = vec![Vec::new(); 3];
        let mut shared = std::collections::HashSet::new();
        for (n, id) in ids.enumerate() {
            workers[n % 3].push((id, n as Page, 0));
            if n % 6 == 0 {
                workers[(n + 1) % 3].push((id, n as Page, 0));
                shared.insert(id);
            }
        }
        let pairs = 40_000;
        let filter = SharedFilter::new(pairs, 3, 3);
        let twice = twice_of(filter, &workers);
        for pages in &workers {
            let passing: Vec<i64> = filter.passing(&twice, pages).map(|p| p.0).collect();
            let unshared = pages.iter().filter(|p| !shared.contains(&p.0)).count();
            let let_through = passing.iter().filter(|id| !shared.contains(id)).count();
            for page in pages.iter().filter(|p| shared.contains(&p.0)) {
                assert!(passing.contains(&page.0), "shared page {} filtered", page.0);
            }
            // About 50,000 of 2^18 bits set by the other workers.
            assert!(
                unshared > 0 && let_through * 4 < unshared,
                "{let_through} of {unshared}"
            );
        }
        // One worker shares nothing: nothing passes.
        let one = SharedFilter::new(pairs, 1, 1);
        let twice = twice_of(one, &workers[..1]);
        assert_eq!(one.passing(&twice, &workers[0]).count(), 0);
        // Nor do the workers of one process (they split one union-find),
        // even where their pages' bits meet.
        let process = SharedFilter::new(pairs, 3, 1);
        let twice = twice_of(process, &workers);
        for pages in &workers {
            assert_eq!(process.passing(&twice, pages).count(), 0);
        }
    }

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
        let mut joined = NodeForest::<_, ByRoot>::from_links(Batches(&batches));
        let clusters: Vec<(Node, ClusterOf)> = joined.clusters().collect();
        let cluster_of = |node: Node| clusters.iter().find(|(n, _)| *n == node).unwrap().1;
        // 4 + 3 + 2 pages, less the two copies.
        for node in [(0, 7), (1, 2), (2, 900)] {
            assert_eq!(cluster_of(node), (10, 7), "{node:?}");
        }
        for node in [(0, 3), (2, 5)] {
            assert_eq!(cluster_of(node), (50, 2), "{node:?}");
        }
        assert_eq!(clusters.len(), 5);
    }

    /// Random links among `count` nodes of `workers` workers, many joining
    /// long paths (each node to the next of a shuffled order), in no
    /// helpful order; and each node's cluster, found by spreading labels
    /// along the pairs until nothing changes. Each node has a link to itself
    /// with its 3 pages, and each pair a link that takes off one copy.
    pub(super) fn random_links(
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
                let (IdLabel { id, .. }, pages) = sets[set];
                (node, (id, pages as u32))
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
        let mut by_root = NodeForest::<_, ByRoot>::from_links(Batches(&batches));
        assert_eq!(by_root.clusters().collect::<HashMap<_, _>>(), expected);
        let mut hashed = NodeForest::<_, Hashed>::from_links(Batches(&batches));
        assert_eq!(hashed.clusters().collect::<HashMap<_, _>>(), expected);
    }

    #[test]
    fn labels_without_keys_order_as_keyless_labels_do_in_half_the_bytes() {
        let labels: Vec<(bool, i64)> = [i64::MIN, -3, 0, 1, 7, i64::MAX]
            .into_iter()
            .flat_map(|id| [(false, id), (true, id)])
            .collect();
        for &(a_later, a) in &labels {
            for &(b_later, b) in &labels {
                let full = |later, id| Label {
                    later,
                    id,
                    ..Label::default()
                };
                assert_eq!(
                    keyless(a_later, a).cmp(&keyless(b_later, b)),
                    full(a_later, a).cmp(&full(b_later, b)),
                    "{a_later} {a} against {b_later} {b}"
                );
            }
        }
        assert!(keyless(true, i64::MAX) <= IdLabel::NONE);
        assert!(std::mem::size_of::<NodeLink<IdLabel>>() <= 40);
        assert!(std::mem::size_of::<NodeSet<IdLabel>>() <= 32);
    }

    #[test]
    fn a_filter_has_about_eight_bits_a_pair_and_at_most_thirty_two_a_worker() {
        let bits = |pairs, peers| 1u64 << SharedFilter::new(pairs, peers, peers).log2_bits;
        assert_eq!(bits(10_000_000, 2), 1 << 27);
        assert_eq!(bits(10_000_000, 64), 1 << 23);
        assert_eq!(bits(10_000_000, 1), 64);
        assert_eq!(bits(0, 4), 64);
        assert_eq!(bits(u64::MAX / 64, 2), 1 << MAX_FILTER_LOG2);
        // More workers than words: some ranges are empty, and that is fine.
        let filter = SharedFilter::new(1, 200, 200);
        let total: usize = (0..200).map(|r| filter.range(r, 200).len()).sum();
        assert_eq!(total, filter.words());
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
        for_each_shared(&runs, |same| {
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
