//! What a worker does with its pages once it knows which of its local
//! components were joined with another worker's.
//!
//! Every worker writes the `clusters/` rows of its own pages (a page
//! several workers saw, by the least of them), each page's cluster and size
//! being its local component's or, if that was joined, the joined
//! cluster's: no page travels to be written, however large its cluster.
//!
//! Drops are chosen where a cluster's pairs are. Most clusters of a night's
//! pairs are small and read by one worker: every pair of such a cluster is in
//! that worker's log, and nothing another worker holds can change its drops,
//! so they are chosen here. Under the direct policy the pages and pairs of a
//! joined cluster travel to its owner, which chooses its drops; when
//! clusters are small, few pages travel.
//!
//! Rows are made in id order and go to their part's writer as sorted runs
//! ([`crate::cluster::part_runs`]). A share on several threads (a giant component,
//! see [`crate::cluster::components`]) has its rows made on them too, a slice of
//! 131,072 pages a thread at a time, each thread into buffers of its own;
//! under the direct policy its drops are chosen on a thread of their own
//! while its `clusters/` rows are made and written, so the writers do not
//! wait for the sweep.

use crate::cluster::cluster_owner::{Addressed, Assigned, SlotPair};
use crate::cluster::components::{Components, DirectShare, KeyedPage, Page, RanksByPlace, MISSING};
use crate::cluster::drop_policy::{
    direct_drops, DirectDrops, DropCursor, DropPolicy, Grounds, PlaceKeys,
};
use crate::cluster::join::{owner_of, ClusterOf, JoinedRoots, SharedPage, SharedPages};
use crate::cluster::keep_order::{KeptBy, KeyWords};
use crate::cluster::part_runs::{router_run, Giving, RangeRows, RowSink, RunBuilder, RunSlice};
use crate::cluster::summary::{count_cluster, ClusterTotals};
use crate::exec::parallel::in_chunks;
use crate::exec::parallel::prefetch;
use crate::io::commit::Merge;
use std::sync::Arc;

/// What a worker's routing gives: a record for a joined cluster's owner,
/// or rows decided here, on their way to their part's writer.
#[derive(Clone)]
pub(crate) enum Routed {
    ToOwner(Addressed),
    Decided(RunSlice),
}

impl Routed {
    /// The owner's records as `Ok`, the decided rows as `Err`, for
    /// timely's `ok_err`.
    pub(crate) fn split(self) -> Result<Addressed, RunSlice> {
        match self {
            Routed::ToOwner(addressed) => Ok(addressed),
            Routed::Decided(rows) => Err(rows),
        }
    }
}

/// Pages or pairs routed per slice: small enough that a slice's records
/// flow on before the next is made, large enough that slices cost nothing.
const SLICE: usize = 1 << 18;

/// Pages whose rows each thread makes at a time when a share's rows are
/// made on several; their rows wait to be taken into the runs in order.
/// Each such slice starts the helper threads and waits for the slowest,
/// so smaller slices start threads more often and larger ones wait longer.
const THREAD_SLICE: usize = 1 << 17;

/// Pages or pairs per record sent to an owner.
const BATCH: usize = 1 << 14;

/// How far ahead of the page being written its cluster's root is fetched:
/// pages come in id order, their roots anywhere in memory.
const LOOKAHEAD: usize = 16;

/// Marks a page's tag as naming a joined cluster: a worker's pages are
/// fewer than 2^31 ([`crate::cluster::components::MAX_PROCESS_PAGES`]).
const JOINED: u32 = 1 << 31;

/// What this worker knows when its joined components are resolved.
pub(crate) struct RouterInput {
    pub(crate) worker: u32,
    pub(crate) components: Components,
    /// Every page `(id, page, local root)`, in id order.
    pub(crate) by_id: Vec<KeyedPage>,
    /// Whether each of them ranks first, by place.
    pub(crate) ranks: RanksByPlace,
    pub(crate) joined: JoinedRoots,
    pub(crate) shared: SharedPages,
    /// The pairs, under the direct policy.
    pub(crate) direct: Option<DirectShare>,
    /// Threads the sweep and the rows may use (see
    /// [`crate::cluster::components::threads_for_share`]).
    pub(crate) threads: usize,
    pub(crate) policy: DropPolicy,
    /// The key of each word of a page's keys.
    pub(crate) word_keys: Arc<[KeptBy]>,
    pub(crate) parts: usize,
    pub(crate) peers: usize,
    pub(crate) max_size: u64,
}

/// Routes every page, a slice at a time: under the direct policy, the
/// pages and pairs of joined clusters to their owners; then the rows of
/// every page this worker writes (and the drops of the clusters it saw
/// whole), counted into `totals`.
pub(crate) struct Router {
    input: RouterInput,
    /// Every page's joined cluster's owner (or [`MISSING`]), by page, for
    /// routing joined clusters' pairs (only then): one random read a pair
    /// instead of the page's tag and then its cluster.
    owners: Vec<u32>,
    /// Every page `(id, page, tag)`, in id order; the tag is the page's
    /// local root, or [`JOINED`] and the index of its joined cluster in
    /// `clusters`. Shared with the thread that chooses the local drops.
    by_id: Arc<Vec<KeyedPage>>,
    /// Whether each of them ranks first, by place; shared as `by_id` is.
    ranks: Arc<RanksByPlace>,
    /// The joined clusters `(cluster, owner)`.
    clusters: Vec<(ClusterOf, u32)>,
    /// Their representatives' keys, by index, where pages have keys and
    /// drops are made here (under the component policy).
    rep_keys: Vec<KeyWords>,
    /// A page of a joined cluster: its slot among those sent its owner.
    slots: Vec<Page>,
    /// Joined pages that rank first, and those that do not: `(place in
    /// by_id, owner)`, each in priority order once sorted.
    firsts: Vec<(u32, u32)>,
    later: Vec<(u32, u32)>,
    /// Pages and pairs waiting to be sent, per owner.
    outbox: Vec<Outbox>,
    sent: Vec<u32>,
    rows: RunBuilder,
    /// Each thread's rows of its range of a slice, when the share has
    /// several (kept from slice to slice).
    ranges: Vec<RangeRows>,
    stage: Stage,
    pub(crate) totals: ClusterTotals,
}

/// What waits to be sent to one owner.
#[derive(Default)]
struct Outbox {
    ids: Vec<i64>,
    /// The pages' keys, [`Components::key_words`] a page.
    keys: Vec<u32>,
    pairs: Vec<SlotPair>,
}

/// Where a [`Router`] is.
enum Stage {
    /// Joined clusters' pages, in id order, set aside as they rank
    /// (`firsts`, `later`) and then each sorted by their keys, so that each
    /// owner gets a worker's pages in priority order.
    JoinedPages {
        next: usize,
    },
    /// The pages set aside that rank first, to their owners.
    FirstPages {
        next: usize,
    },
    /// The others, to their owners.
    LaterPages {
        next: usize,
    },
    /// Joined clusters' pairs, to their owners.
    JoinedPairs {
        next: usize,
    },
    /// Under the direct policy, the drops of the clusters seen whole here
    /// are chosen, or for a giant component's share set to be chosen on a
    /// thread of their own ([`Router::local_drops`]).
    LocalDrops,
    /// Every page's `clusters/` rows in id order (and under the component
    /// policy its drop), to the part writers, while a giant component's
    /// drops are chosen.
    Members {
        drops: LocalDrops,
        next: usize,
    },
    /// The direct drops in id order, to the part writers.
    Drops {
        drops: DirectDrops,
        cursor: DropCursor,
        next: usize,
    },
    Done,
}

impl Router {
    pub(crate) fn new(mut input: RouterInput) -> Router {
        debug_assert!(input.components.len() < crate::cluster::components::MAX_PROCESS_PAGES);
        let mut joined = std::mem::take(&mut input.joined);
        let rep_keys = match input.policy {
            DropPolicy::Component => joined.take_keys(),
            DropPolicy::Direct => Vec::new(),
        };
        let clusters: Vec<(ClusterOf, u32)> = joined
            .clusters()
            .iter()
            .map(|&cluster| (cluster, owner_of(cluster.0, input.peers)))
            .collect();
        // Tags are local roots so far.
        let mut by_id = std::mem::take(&mut input.by_id);
        let ranks = Arc::new(std::mem::take(&mut input.ranks));
        if !clusters.is_empty() {
            for at in 0..by_id.len() {
                if let Some(&(_, _, ahead)) = by_id.get(at + LOOKAHEAD) {
                    joined.prefetch(ahead);
                }
                let tag = &mut by_id[at].2;
                if let Some(c) = joined.get(*tag) {
                    *tag = JOINED | c;
                }
            }
        }
        let sends = input.policy == DropPolicy::Direct && !clusters.is_empty();
        let mut owners = Vec::new();
        if sends {
            owners.resize(input.components.len(), MISSING);
            for (at, &(_, page, tag)) in by_id.iter().enumerate() {
                match by_id.get(at + LOOKAHEAD) {
                    Some(&(_, page, tag)) if tag & JOINED != 0 => {
                        prefetch(&clusters[(tag & !JOINED) as usize]);
                        prefetch(&owners[page as usize]);
                    }
                    _ => {}
                }
                if tag & JOINED != 0 {
                    owners[page as usize] = clusters[(tag & !JOINED) as usize].1;
                }
            }
        }
        Router {
            slots: if sends {
                vec![MISSING; input.components.len()]
            } else {
                Vec::new()
            },
            firsts: Vec::new(),
            later: Vec::new(),
            outbox: (0..input.peers).map(|_| Outbox::default()).collect(),
            sent: vec![0; input.peers],
            rows: RunBuilder::new(router_run(input.worker), input.parts),
            ranges: Vec::new(),
            stage: match sends {
                true => Stage::JoinedPages { next: 0 },
                false => Stage::LocalDrops,
            },
            input,
            owners,
            by_id: Arc::new(by_id),
            ranks,
            clusters,
            rep_keys,
            totals: ClusterTotals::default(),
        }
    }

    /// Gives the next slice; false once everything is given (and the
    /// memory freed).
    pub(crate) fn next_slice(&mut self, give: &mut dyn FnMut(Routed)) -> bool {
        let pages = self.by_id.len();
        let pairs = self.input.direct.as_ref().map_or(0, |d| d.pairs.len());
        self.stage = match std::mem::replace(&mut self.stage, Stage::Done) {
            Stage::JoinedPages { next } if next < pages => {
                let end = (next + SLICE).min(pages);
                for at in next..end {
                    self.prefetch_joined_page(at + LOOKAHEAD);
                    self.route_joined_page(at);
                }
                Stage::JoinedPages { next: end }
            }
            Stage::JoinedPages { .. } => {
                self.sort_set_aside();
                Stage::FirstPages { next: 0 }
            }
            Stage::FirstPages { next } if next < self.firsts.len() => Stage::FirstPages {
                next: self.send_set_aside(next, true, give),
            },
            Stage::FirstPages { .. } => {
                self.firsts = Vec::new();
                self.flush(true, give);
                Stage::LaterPages { next: 0 }
            }
            Stage::LaterPages { next } if next < self.later.len() => Stage::LaterPages {
                next: self.send_set_aside(next, false, give),
            },
            Stage::LaterPages { .. } => {
                self.later = Vec::new();
                self.flush(false, give);
                Stage::JoinedPairs { next: 0 }
            }
            Stage::JoinedPairs { next } if next < pairs => {
                let end = (next + SLICE).min(pairs);
                self.route_joined_pairs(next..end, give);
                Stage::JoinedPairs { next: end }
            }
            Stage::JoinedPairs { .. } => {
                self.flush(false, give);
                Stage::LocalDrops
            }
            Stage::LocalDrops => {
                let direct = self.input.direct.take();
                self.free_joined();
                let drops = match direct {
                    Some(direct) => self.local_drops(direct),
                    None => LocalDrops::Chosen(DirectDrops::default()),
                };
                Stage::Members { drops, next: 0 }
            }
            Stage::Members { drops, next } if next < pages => {
                let next = self.rows_from(next, None, give);
                Stage::Members { drops, next }
            }
            Stage::Members { drops, .. } => {
                let drops = drops.chosen();
                let (cursor, next) = (drops.start(), if drops.is_empty() { pages } else { 0 });
                Stage::Drops {
                    drops,
                    cursor,
                    next,
                }
            }
            Stage::Drops {
                drops,
                mut cursor,
                next,
            } if next < pages => {
                let next = self.rows_from(next, Some((&drops, &mut cursor)), give);
                Stage::Drops {
                    drops,
                    cursor,
                    next,
                }
            }
            Stage::Drops {
                drops, mut cursor, ..
            } => {
                let give = &mut |slice| give(Routed::Decided(slice));
                let mut sink = Giving {
                    rows: &mut self.rows,
                    give,
                };
                drops_up_to(&drops, &mut cursor, None, &mut sink);
                self.rows.finish(give);
                Stage::Done
            }
            Stage::Done => Stage::Done,
        };
        if matches!(self.stage, Stage::Done) {
            self.free();
            return false;
        }
        true
    }

    /// The joined cluster (and its owner) of a page's tag (see `by_id`).
    fn joined(&self, tag: u32) -> Option<(ClusterOf, u32)> {
        joined_of(&self.clusters, tag)
    }

    /// Asks the CPU to fetch what routing the page at `place` in id order
    /// reads, if it is of a joined cluster: its cluster, flags and slot are
    /// random places in arrays far larger than the cache.
    fn prefetch_joined_page(&self, place: usize) {
        let Some(&(_, page, tag)) = self.by_id.get(place) else {
            return;
        };
        if tag & JOINED != 0 {
            prefetch(&self.clusters[(tag & !JOINED) as usize]);
            self.input.shared.prefetch(page);
            prefetch(&self.slots[page as usize]);
        }
    }

    /// The page at `place` in id order, if of a joined cluster: set aside
    /// by whether it ranks first.
    fn route_joined_page(&mut self, place: usize) {
        let (_, page, tag) = self.by_id[place];
        let Some((_, owner)) = self.joined(tag) else {
            return;
        };
        let ranks_first = match self.input.shared.get(page) {
            Some(shared) => shared.first,
            None => self.ranks.get(place),
        };
        match ranks_first {
            true => self.firsts.push((place as u32, owner)),
            false => self.later.push((place as u32, owner)),
        }
    }

    /// Sorts the joined pages set aside by their keys (they are in id
    /// order, which breaks the keys' ties), if pages have keys.
    fn sort_set_aside(&mut self) {
        let components = &self.input.components;
        if components.key_words() == 0 {
            return;
        }
        let by_id = &self.by_id;
        for pages in [&mut self.firsts, &mut self.later] {
            pages.sort_by_cached_key(|&(place, _)| {
                (components.keys(by_id[place as usize].1), place)
            });
        }
    }

    /// Sends a slice of the pages set aside (`firsts` or `later`) from
    /// `next` on; gives where the next slice starts.
    fn send_set_aside(&mut self, next: usize, first: bool, give: &mut dyn FnMut(Routed)) -> usize {
        let len = if first {
            self.firsts.len()
        } else {
            self.later.len()
        };
        let end = (next + SLICE).min(len);
        for at in next..end {
            let (place, owner) = if first {
                self.firsts[at]
            } else {
                self.later[at]
            };
            let (id, page, _) = self.by_id[place as usize];
            self.send_page(id, page, owner as usize, first, give);
        }
        end
    }

    /// A joined cluster's page, to its owner, numbered by its slot there
    /// (pages go in priority order, so slots are in priority order too).
    fn send_page(
        &mut self,
        id: i64,
        page: Page,
        owner: usize,
        first: bool,
        give: &mut dyn FnMut(Routed),
    ) {
        self.slots[page as usize] = self.sent[owner];
        self.sent[owner] += 1;
        let words = self.input.components.key_words();
        let outbox = &mut self.outbox[owner];
        outbox.ids.push(id);
        if words > 0 {
            let keys = self.input.components.keys(page);
            outbox.keys.extend_from_slice(&keys[..words]);
        }
        if outbox.ids.len() >= BATCH {
            self.send_pages(owner, first, give);
        }
    }

    /// Pairs `range` of the log that belong to joined clusters, to their
    /// owners, by their ends' slots.
    fn route_joined_pairs(&mut self, range: std::ops::Range<usize>, give: &mut dyn FnMut(Routed)) {
        let Some(direct) = self.input.direct.take() else {
            return;
        };
        let pairs = &direct.pairs;
        let mut ahead = pairs
            .pairs_in((range.start + LOOKAHEAD).min(range.end)..range.end)
            .fuse();
        for (a, b, near) in pairs.pairs_in(range) {
            // The ends' owners and slots are random places in memory.
            if let Some((a, b, _)) = ahead.next() {
                prefetch(&self.owners[a as usize]);
                prefetch(&self.slots[a as usize]);
                prefetch(&self.slots[b as usize]);
            }
            let owner = match self.owners[a as usize] {
                MISSING => continue,
                owner => owner as usize,
            };
            let ends = (self.slots[a as usize], self.slots[b as usize], near);
            self.outbox[owner].pairs.push(ends);
            if self.outbox[owner].pairs.len() >= BATCH {
                self.send_pairs(owner, give);
            }
        }
        // The iterator borrows the log, which goes back to its place.
        drop(ahead);
        self.input.direct = Some(direct);
    }

    /// Sends the ids waiting for `owner`, all of pages that rank `first`
    /// (or not).
    fn send_pages(&mut self, owner: usize, first: bool, give: &mut dyn FnMut(Routed)) {
        let ids = std::mem::take(&mut self.outbox[owner].ids);
        let keys = std::mem::take(&mut self.outbox[owner].keys);
        if !ids.is_empty() {
            let pages = Assigned::Pages {
                source: self.input.worker,
                first_slot: self.sent[owner] - ids.len() as u32,
                first,
                ids,
                keys,
            };
            give(Routed::ToOwner((owner as u32, pages)));
        }
    }

    fn send_pairs(&mut self, owner: usize, give: &mut dyn FnMut(Routed)) {
        let pairs = std::mem::take(&mut self.outbox[owner].pairs);
        if !pairs.is_empty() {
            let source = self.input.worker;
            give(Routed::ToOwner((
                owner as u32,
                Assigned::Pairs { source, pairs },
            )));
        }
    }

    /// Sends what waits in every owner's outbox (pages that rank `first`,
    /// or not).
    fn flush(&mut self, first: bool, give: &mut dyn FnMut(Routed)) {
        for owner in 0..self.outbox.len() {
            self.send_pages(owner, first, give);
            self.send_pairs(owner, give);
        }
    }

    /// The drops of the clusters seen whole here: one greedy sweep over all
    /// of their pages at once (clusters do not interact, so one pass in
    /// priority order over every page is each cluster's pass). Pages of
    /// joined clusters (tagged [`JOINED`]) are their owners' to decide.
    ///
    /// A share with several threads (a giant component's) chooses them on
    /// a thread of its own while its `clusters/` rows are made and written:
    /// its worker's peers, with their shares done, would otherwise idle
    /// until its first rows came. A share of one thread gains nothing by it.
    fn local_drops(&self, direct: DirectShare) -> LocalDrops {
        let DirectShare { pairs } = direct;
        let ranks = self.ranks.clone();
        let threads = self.input.threads;
        let by_id = self.by_id.clone();
        let components = self.input.components.clone();
        let word_keys = self.input.word_keys.clone();
        let pages = components.len();
        let choose = move || {
            let rank = |at: usize| (by_id[at].2 & JOINED == 0).then(|| ranks.get(at));
            let keys = |at: usize| components.keys(by_id[at].1);
            let prefetch = |at: usize| {
                if let Some(&(_, page, _)) = by_id.get(at) {
                    components.prefetch_keys(page);
                }
            };
            let keys = PlaceKeys {
                words: components.key_words(),
                word_keys: &word_keys,
                keys: &keys,
                prefetch: &prefetch,
            };
            direct_drops(&by_id, pages, rank, Some(keys), pairs, threads)
        };
        match threads {
            0 | 1 => LocalDrops::Chosen(choose()),
            _ => LocalDrops::Choosing(std::thread::spawn(choose)),
        }
    }

    /// The rows of the pages from `next` on, a slice of them for each
    /// thread the share may use: their `clusters/` rows, or with `drops`
    /// (and where the last slice left off in them) their direct drops;
    /// gives where the next slice starts. With several threads, each makes
    /// the rows of its range of the slice, taken into the runs in turn: a
    /// giant component's rows fall to one worker, whose core would
    /// otherwise be the one busy while the others only write their parts.
    fn rows_from(
        &mut self,
        next: usize,
        mut drops: Option<(&DirectDrops, &mut DropCursor)>,
        give: &mut dyn FnMut(Routed),
    ) -> usize {
        let threads = self.input.threads.max(1);
        let pages = match threads {
            1 => SLICE,
            _ => THREAD_SLICE * threads,
        };
        let end = (next + pages).min(self.by_id.len());
        let maker = RowMaker {
            by_id: &self.by_id,
            ranks: &self.ranks,
            clusters: &self.clusters,
            rep_keys: &self.rep_keys,
            word_keys: &self.input.word_keys,
            components: &self.input.components,
            shared: &self.input.shared,
            policy: self.input.policy,
            max_size: self.input.max_size,
        };
        let give = &mut |slice| give(Routed::Decided(slice));
        if threads == 1 {
            let mut sink = Giving {
                rows: &mut self.rows,
                give,
            };
            match drops.as_mut() {
                None => maker.members(next..end, &mut sink, &mut self.totals),
                Some((drops, cursor)) => maker.drops(next..end, drops, cursor, &mut sink),
            }
            return end;
        }
        if self.ranges.len() != threads {
            self.ranges = (0..threads)
                .map(|_| RangeRows::new(self.input.parts))
                .collect();
        }
        let each = (end - next).div_ceil(threads);
        let first = drops.as_ref().map(|(_, cursor)| **cursor);
        let made = in_chunks(&mut self.ranges, 1, |t, range| {
            let start = (next + t * each).min(end);
            let stop = (start + each).min(end);
            let mut totals = ClusterTotals::default();
            if start == stop {
                return (None, totals);
            }
            let at = match &drops {
                None => {
                    maker.members(start..stop, &mut range[0], &mut totals);
                    None
                }
                Some((drops, _)) => {
                    let mut at = match (t, first) {
                        (0, Some(first)) => first,
                        _ => drops.cursor_before(maker.by_id[start].0),
                    };
                    maker.drops(start..stop, drops, &mut at, &mut range[0]);
                    Some(at)
                }
            };
            (at, totals)
        });
        for (range, (at, totals)) in self.ranges.iter_mut().zip(made) {
            self.rows.take_in(range, give);
            self.totals.merge(totals);
            if let (Some(at), Some((_, cursor))) = (at, drops.as_mut()) {
                **cursor = at;
            }
        }
        end
    }

    /// Joined clusters are routed: frees what only that needed before the
    /// local drops' sweep and the rows need theirs.
    fn free_joined(&mut self) {
        self.input.direct = None;
        self.slots = Vec::new();
        self.owners = Vec::new();
    }

    /// Everything is routed: frees the memory before the owners and the
    /// writers need theirs.
    fn free(&mut self) {
        self.free_joined();
        self.clusters = Vec::new();
        self.rep_keys = Vec::new();
        self.input.shared = SharedPages::default();
        self.input.components = Components::default();
        self.by_id = Arc::default();
        self.ranks = Arc::default();
    }
}

/// The direct drops of the clusters a router saw whole: chosen, or being
/// chosen on a thread of their own.
enum LocalDrops {
    Chosen(DirectDrops),
    Choosing(std::thread::JoinHandle<DirectDrops>),
}

impl LocalDrops {
    /// The drops, once chosen.
    fn chosen(self) -> DirectDrops {
        match self {
            LocalDrops::Chosen(drops) => drops,
            LocalDrops::Choosing(thread) => thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        }
    }
}

/// The joined cluster (and its owner) of a page's tag (see `Router::by_id`).
fn joined_of(clusters: &[(ClusterOf, u32)], tag: u32) -> Option<(ClusterOf, u32)> {
    match tag & JOINED {
        0 => None,
        _ => Some(clusters[(tag & !JOINED) as usize]),
    }
}

/// What making the rows of a range of a worker's pages reads, and nothing
/// that it writes: ranges can be made on several threads at once.
struct RowMaker<'a> {
    by_id: &'a [KeyedPage],
    ranks: &'a RanksByPlace,
    clusters: &'a [(ClusterOf, u32)],
    rep_keys: &'a [KeyWords],
    word_keys: &'a [KeptBy],
    components: &'a Components,
    shared: &'a SharedPages,
    policy: DropPolicy,
    max_size: u64,
}

impl RowMaker<'_> {
    /// The `clusters/` rows of the pages at `range` of `by_id` (and under
    /// the component policy their drops), counted into `totals`.
    fn members(
        &self,
        range: std::ops::Range<usize>,
        sink: &mut impl RowSink,
        totals: &mut ClusterTotals,
    ) {
        for at in range {
            // A root's node, then (once it has come) its representative's
            // id: two random places in memory.
            match self.by_id.get(at + 2 * LOOKAHEAD) {
                Some(&(_, _, tag)) if tag & JOINED == 0 => self.components.prefetch_node(tag),
                Some(&(_, page, tag)) => {
                    prefetch(&self.clusters[(tag & !JOINED) as usize]);
                    self.shared.prefetch(page);
                }
                None => {}
            }
            if let Some(&(_, _, tag)) = self.by_id.get(at + LOOKAHEAD) {
                if tag & JOINED == 0 {
                    self.components.prefetch_representative(tag);
                }
            }
            self.page_rows(at, sink, totals);
        }
    }

    /// The direct drops of the pages at `range` of `by_id`, from `cursor`
    /// on, up to the range's last id.
    fn drops(
        &self,
        range: std::ops::Range<usize>,
        drops: &DirectDrops,
        cursor: &mut DropCursor,
        sink: &mut impl RowSink,
    ) {
        if let Some(&(last, ..)) = range.end.checked_sub(1).and_then(|at| self.by_id.get(at)) {
            drops_up_to(drops, cursor, Some(last), sink);
        }
    }

    /// A page's rows, if this worker writes it: its cluster's (counted once,
    /// at its representative's row), and under the component policy its
    /// drop (the direct policy's come from [`DirectDrops`]).
    fn page_rows(&self, at: usize, sink: &mut impl RowSink, totals: &mut ClusterTotals) {
        let (id, page, tag) = self.by_id[at];
        let joined = joined_of(self.clusters, tag);
        let copy = |shared: SharedPage| !shared.writes;
        if joined.is_some() && self.shared.get(page).is_some_and(copy) {
            return;
        }
        let (cluster, size) = match joined {
            Some(((cluster, size, _), _)) => (cluster, size),
            None => (
                self.components.representative(tag),
                self.components.component_size(tag),
            ),
        };
        if id == cluster {
            count_cluster(totals, u64::from(size), cluster, self.max_size);
        }
        sink.member((id, cluster, size));
        if self.policy == DropPolicy::Component && id != cluster {
            let grounds = Grounds {
                near: None,
                kept_by: self.kept_by(at, joined.map(|(cluster, _)| cluster)),
            };
            sink.drop((id, cluster, grounds));
        }
    }

    /// The first key under which the page at `at` ranks after the
    /// representative of its cluster (`joined`, if it is): under the
    /// component policy, the page it is dropped for.
    fn kept_by(&self, at: usize, joined: Option<ClusterOf>) -> KeptBy {
        let (_, page, tag) = self.by_id[at];
        let first = match joined {
            Some((_, _, first)) => first,
            None => self.components.representative_ranks_first(tag),
        };
        if first && !self.ranks_first(at, joined.is_some()) {
            return KeptBy::CORPUS;
        }
        if self.word_keys.is_empty() {
            return KeptBy::ID;
        }
        let representative = match joined {
            Some(_) => self.rep_keys[(tag & !JOINED) as usize],
            None => self.components.least(tag).keys,
        };
        KeptBy::between(&representative, &self.components.keys(page), self.word_keys)
    }

    /// Whether the page at `at` ranks first: a page of a joined cluster
    /// that other workers saw too, as they all know together.
    fn ranks_first(&self, at: usize, joined: bool) -> bool {
        let shared = joined.then(|| self.shared.get(self.by_id[at].1)).flatten();
        shared.map_or_else(|| self.ranks.get(at), |shared| shared.first)
    }
}

/// The direct drops from `cursor` on, in id order, up to id `last` (all of
/// them if `None`).
fn drops_up_to(
    drops: &DirectDrops,
    cursor: &mut DropCursor,
    last: Option<i64>,
    sink: &mut impl RowSink,
) {
    while let Some(row) = drops.next_by_id(cursor, last) {
        sink.drop(row);
    }
}
