//! Which pages to drop, and in favour of which kept page.
//!
//! A component joins pages through chains: in a page edited a little every
//! day, the first and the last version may be far more than k bits apart.
//! Dropping every page of a component in favour of its representative
//! ([`DropPolicy::Component`]) then drops pages for a page they were never
//! paired with. [`DropPolicy::Direct`] only drops a page for a kept page it is
//! paired with, so every drop is backed by a pair within k.
//!
//! Under the direct policy a worker's share is swept once, in priority
//! order over all its pages: clusters do not interact, so one sweep is
//! every cluster's pass. The pairs are first sorted by their later end in
//! that order, by counting, a bucket of 2,048 positions at a time, in the
//! pair log's place. A page is kept unless a partner earlier in the order
//! is kept; its drop names the nearest such partner (by wide distance, for
//! `match --verify`'s pairs, then by distance, then the first in the
//! order: a [`Closeness`]). Without keys, the drops come out in two
//! id-ordered runs (pages that rank first, then the others), merged as the
//! drop rows are made; with keys, they are first sorted into one run by id
//! ([`DirectDrops::into_id_order`]). A
//! drop (12 bytes: its page and kept partner by position) is written over
//! sorted pairs the sweep has already read, so drops take no memory of
//! their own. This sweep is the one sequential step for a giant cluster:
//! the greedy rule is an order, and a chain of pages each deciding the next
//! cannot be split without rounds that grow with the chain.
//!
//! A drop also names the key its keeper won by (`kept_by`, a [`KeptBy`]):
//! the first key under which the two pages differ. Sorted by keys, that is
//! the least, over the positions after the keeper's up to the dropped
//! page's, of each position's *step*, the first key under which it differs
//! from the one before it ([`Steps`]: a byte a position, found as the
//! order is sorted, or where the pages that rank first end). The sweep
//! keeps the suffix minima of the steps on a stack of at most one entry a
//! key ([`LeastSteps`]), so each drop's key costs a scan of a few entries
//! and no read of the keys. Under the component policy a drop compares its
//! page's keys with its representative's, which a joined cluster's
//! workers are given with the cluster.

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use serde::{Deserialize, Serialize};

use crate::cluster::components::{Closeness, KeyedPage, Page, PairLog, MISSING};
use crate::cluster::keep_order::{KeptBy, KeyWords, MAX_KEY_WORDS};
use crate::exec::parallel::in_chunks;
use crate::exec::parallel::prefetch;
use crate::exec::sorting::{
    bucket_starts, ordered, place_and_sort, scatter_sorted_runs, sort_by_slot, sort_on_threads,
};
use crate::io::parquet::WIDE_BITS;

/// How many pairs (or pages) ahead a random read is fetched.
const LOOKAHEAD: usize = 16;

/// Bits of a [`Closeness`] that hold the distance (at most 64). Above
/// them, the pair's wide distance (`match --verify`'s) plus one (0: the
/// pairs have none), so that the wide distance decides first and a drop
/// row gives both.
const DISTANCE_BITS: u32 = 7;

/// The closeness of a pair `distance` bits apart, and `wide` over 256 bits.
pub(crate) fn closeness(distance: u8, wide: Option<u16>) -> Closeness {
    debug_assert!(distance <= 64 && wide.is_none_or(|w| u32::from(w) <= WIDE_BITS));
    (wide.map_or(0, |w| w + 1) << DISTANCE_BITS) | Closeness::from(distance)
}

/// A closeness's distance and wide distance (if the pair had one).
pub(crate) fn distances_of(closeness: Closeness) -> (u8, Option<u16>) {
    let distance = (closeness & ((1 << DISTANCE_BITS) - 1)) as u8;
    (distance, (closeness >> DISTANCE_BITS).checked_sub(1))
}

/// Why a page is dropped for its keeper, as a `drop/` row gives it: the
/// closeness of their pair (none under the component policy, where the two
/// may only be chained), and the first key under which the keeper ranks
/// before it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Grounds {
    pub(crate) near: Option<Closeness>,
    pub(crate) kept_by: KeptBy,
}

/// How the keep/drop list is made from the pairs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum DropPolicy {
    /// Pages in priority order (`--keep-by`): a page is kept unless a
    /// partner earlier in that order is kept; then it is dropped for the
    /// nearest such partner (by wide distance for `match --verify`'s pairs,
    /// then distance; the earliest in that order among the nearest).
    #[default]
    Direct,
    /// Every page of a component is dropped for its representative.
    Component,
}

impl fmt::Display for DropPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DropPolicy::Direct => "direct",
            DropPolicy::Component => "component",
        })
    }
}

/// The [`DropPolicy::Direct`] drops of a set of pages: without keys, those
/// of pages that rank first, by id, then those of the others, by id (with
/// keys, one run by id, [`DirectDrops::into_id_order`]). They are given in
/// id order ([`DirectDrops::next_by_id`]) by a merge of the runs: no lookup
/// table, no random access but a kept page's id.
///
/// A drop names its two pages by position in priority order, not by id
/// (12 bytes instead of 24), and lies in the front of the sorted pairs the
/// sweep has read past, so drops need no fresh memory of their own.
#[derive(Debug, Default)]
pub(crate) struct DirectDrops {
    /// `(dropped position, kept position, closeness, kept by)`.
    drops: Vec<OrientedPair>,
    /// The swept pages' ids, by position.
    ids: Vec<i64>,
    /// How many of `drops` are of pages that rank first.
    first: usize,
}

/// Where a reader of [`DirectDrops`] in id order is: the next drop of each
/// run. Readers of their own read disjoint ranges of ids on threads of
/// their own ([`DirectDrops::cursor_before`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct DropCursor([usize; 2]);

impl DirectDrops {
    /// The drops as one run in id order, for pages whose priority order is
    /// not their id order within each run (they have keys): a scatter by
    /// id into buckets sorted in the cache, the ids read where they are.
    pub(crate) fn into_id_order(mut self, threads: usize) -> DirectDrops {
        let ids = &self.ids;
        let key = |drop: &OrientedPair| ordered(ids[drop.0 as usize]);
        let sorter =
            || move |_: usize, bucket: &mut [OrientedPair]| bucket.sort_unstable_by_key(key);
        let drops = std::mem::take(&mut self.drops);
        self.drops = scatter_sorted_runs(vec![drops], key, 1 << 10, threads, sorter);
        self.first = self.drops.len();
        self
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.drops.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.drops.is_empty()
    }

    /// A cursor at the first drop.
    pub(crate) fn start(&self) -> DropCursor {
        DropCursor([0, self.first])
    }

    /// A cursor at the first drop of id `id` or more.
    pub(crate) fn cursor_before(&self, id: i64) -> DropCursor {
        let before = |run: std::ops::Range<usize>| {
            let start = run.start;
            start + self.drops[run].partition_point(|d| self.ids[d.0 as usize] < id)
        };
        DropCursor([before(0..self.first), before(self.first..self.drops.len())])
    }

    /// The drop at `cursor` in id order, `(id, keep_id, grounds)`,
    /// whichever run it is in, if its id is at most `last` (whatever its
    /// id, if `None`); moves `cursor` past it.
    pub(crate) fn next_by_id(
        &self,
        cursor: &mut DropCursor,
        last: Option<i64>,
    ) -> Option<(i64, i64, Grounds)> {
        let (run, id) = self.run_of_next(cursor)?;
        if last.is_some_and(|last| id > last) {
            return None;
        }
        let at = cursor.0[run];
        cursor.0[run] += 1;
        // The kept page is anywhere in `ids`.
        if let Some(&(_, ahead, ..)) = self.drops.get(at + LOOKAHEAD) {
            prefetch(&self.ids[ahead as usize]);
        }
        let (_, keep, near, kept_by) = self.drops[at];
        let grounds = Grounds {
            near: Some(near),
            kept_by,
        };
        Some((id, self.ids[keep as usize], grounds))
    }

    /// The run whose drop at `cursor` has the least id, and that id.
    fn run_of_next(&self, cursor: &DropCursor) -> Option<(usize, i64)> {
        let ends = [self.first, self.drops.len()];
        let id_at = |run: usize| {
            let at = cursor.0[run];
            (at < ends[run]).then(|| self.ids[self.drops[at].0 as usize])
        };
        match (id_at(0), id_at(1)) {
            (Some(a), Some(b)) if b < a => Some((1, b)),
            (Some(a), _) => Some((0, a)),
            (None, Some(b)) => Some((1, b)),
            (None, None) => None,
        }
    }
}

/// How pages that rank alike are ordered: by their keys (by place in
/// `by_id`, [`crate::cluster::keep_order`]) if they have any, then by id.
pub(crate) struct PlaceKeys<'a> {
    /// Words of keys a page (0: by id alone).
    pub(crate) words: usize,
    /// The key of each word ([`crate::cluster::keep_order::KeepOrder::word_keys`]).
    pub(crate) word_keys: &'a [KeptBy],
    pub(crate) keys: &'a (dyn Fn(usize) -> KeyWords + Sync),
    /// Fetches a place's keys ahead of their use (a place past the end is
    /// ignored).
    pub(crate) prefetch: &'a (dyn Fn(usize) + Sync),
}

/// The [`DropPolicy::Direct`] drops among `by_id` (pages with indexes
/// below `n`, sorted by id) whose `rank` (by place in `by_id`, asked in
/// order) is known, paired by `pairs` (by
/// index; a pair whose first end is not swept is skipped): one sweep in
/// priority order (those that rank first, then the others, each by their
/// `keys` and then id) over all of them. Clusters do not interact, so one
/// sweep over many clusters is each cluster's pass; a cluster decided
/// elsewhere is left out by ranking its pages `None`.
pub(crate) fn direct_drops(
    by_id: &[KeyedPage],
    n: usize,
    rank: impl Fn(usize) -> Option<bool> + Sync,
    keys: Option<PlaceKeys<'_>>,
    mut pairs: PairLog,
    threads: usize,
) -> DirectDrops {
    let position: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(MISSING)).collect();
    let keyed = keys.as_ref().is_some_and(|keys| keys.words > 0);
    let (ids, steps) = match keys.filter(|_| keyed) {
        Some(keys) => in_keyed_priority_order(by_id, rank, &keys, &position, threads),
        None => {
            let (ids, first_positions) = in_priority_order(by_id, rank, &position, threads);
            (
                ids,
                Steps {
                    first_positions,
                    ..Steps::default()
                },
            )
        }
    };
    pairs.rename_by(&position, threads);
    drop(position);
    let oriented = sorted_by_later_end(
        ids.len(),
        pairs.len(),
        |range| pairs.pairs_in(range),
        threads,
    );
    drop(pairs);
    let drops = greedy_sweep(&steps, oriented, ids);
    match keyed {
        true => drops.into_id_order(threads),
        false => drops,
    }
}

/// The pages of `by_id` whose `rank` is known, in priority order: their ids
/// by position, and how many rank first; each page's position is written
/// into `position`, by index. The sweep reads an id at random for each
/// drop; one array by position is one cache miss where a position's place
/// in `by_id` and then its page would be two. On `threads` threads
/// ([`in_two_runs`]; `position`'s entries, at random places, are each
/// written once, by one thread).
fn in_priority_order(
    by_id: &[KeyedPage],
    rank: impl Fn(usize) -> Option<bool> + Sync,
    position: &[AtomicU32],
    threads: usize,
) -> (Vec<i64>, usize) {
    let id_at = |at: usize, to: usize| {
        let (id, index, _) = by_id[at];
        position[index as usize].store(to as Page, Relaxed);
        id
    };
    // A page's index is anywhere in `position`.
    let ahead = |at: usize| {
        if let Some(&(_, index, _)) = by_id.get(at) {
            prefetch(&position[index as usize]);
        }
    };
    in_two_runs(by_id.len(), rank, id_at, ahead, threads)
}

/// The places `0..len` whose `rank` is known as two runs, those that rank
/// first and then the others, each in place order: `item(place, to)` at
/// its position `to`, and how many rank first (`ahead(place)` fetches what
/// `item` reads, [`LOOKAHEAD`] places ahead). Each place is ranked once,
/// into a byte a place; the items are then placed from two cursors, with
/// no buffer for the places that rank later: grown by doubling, that
/// buffer would be copied into fresh memory several times over (a nightly
/// run's pages mostly rank later). On `threads` threads, each ranking and
/// placing a range of places (its cursors start where the ranges before
/// it end).
fn in_two_runs<T: Copy + bytemuck::Zeroable + Send>(
    len: usize,
    rank: impl Fn(usize) -> Option<bool> + Sync,
    item: impl Fn(usize, usize) -> T + Sync,
    ahead: impl Fn(usize) + Sync,
    threads: usize,
) -> (Vec<T>, usize) {
    const FIRST: u8 = 1;
    const LATER: u8 = 2;
    let threads = threads.clamp(1, len.max(1));
    let each = len.div_ceil(threads).max(1);
    let mut ranks = vec![0u8; len];
    // Per range: how many rank first, and how many later.
    let counts: Vec<[usize; 2]> = in_chunks(&mut ranks, each, |start, ranks| {
        let mut count = [0, 0];
        for (at, r) in ranks.iter_mut().enumerate() {
            *r = match rank(start + at) {
                Some(true) => FIRST,
                Some(false) => LATER,
                None => continue,
            };
            count[usize::from(*r - 1)] += 1;
        }
        count
    });
    let first: usize = counts.iter().map(|c| c[0]).sum();
    let later: usize = counts.iter().map(|c| c[1]).sum();
    // Zeroed fresh memory: untouched until an item is placed.
    let mut items: Vec<T> = bytemuck::allocation::zeroed_vec(first + later);
    // Each range's share of the two runs of `items`, and where they start.
    let (mut firsts, mut laters) = items.split_at_mut(first);
    let (mut shares, mut starts) = (Vec::new(), [0, first]);
    for count in &counts {
        let (f, rest_f) = std::mem::take(&mut firsts).split_at_mut(count[0]);
        let (l, rest_l) = std::mem::take(&mut laters).split_at_mut(count[1]);
        (firsts, laters) = (rest_f, rest_l);
        shares.push((f, l, starts));
        starts = [starts[0] + count[0], starts[1] + count[1]];
    }
    let place = |range: usize, f: &mut [T], l: &mut [T], starts: [usize; 2]| {
        let places = range * each..((range + 1) * each).min(len);
        let ranks = &ranks[places.clone()];
        let mut runs = [f.iter_mut().zip(starts[0]..), l.iter_mut().zip(starts[1]..)];
        for (at, &r) in places.zip(ranks) {
            ahead(at + LOOKAHEAD);
            if r != 0 {
                if let Some((slot, to)) = runs[usize::from(r - 1)].next() {
                    *slot = item(at, to);
                }
            }
        }
    };
    in_chunks(&mut shares, 1, |range, share| {
        let (f, l, starts) = &mut share[0];
        place(range, f, l, *starts);
    });
    (items, first)
}

/// [`in_priority_order`] when pages have keys: each run (those that rank
/// first, then the others) sorted by the pages' keys and then id, with
/// each position's step from the one before it. A page's entry is its
/// words of keys and then its place in `by_id` (the id's order), packed
/// into the fewest 64-bit words that hold them, and the entries are sorted
/// in place: every key is in the sort, so the keys are read once, in
/// order, never at random. The entries' memory then becomes the ids by
/// position, read in the order it is written over, so the sort costs no
/// memory beyond the ids'. On `threads` threads, the entries are made and
/// sorted (a giant component's worker has the process's idle cores).
fn in_keyed_priority_order(
    by_id: &[KeyedPage],
    rank: impl Fn(usize) -> Option<bool> + Sync,
    keys: &PlaceKeys<'_>,
    position: &[AtomicU32],
    threads: usize,
) -> (Vec<i64>, Steps) {
    match keys.words {
        0..=3 => keyed_order::<2>(by_id, rank, keys, position, threads),
        4..=5 => keyed_order::<3>(by_id, rank, keys, position, threads),
        6..=7 => keyed_order::<4>(by_id, rank, keys, position, threads),
        _ => keyed_order::<5>(by_id, rank, keys, position, threads),
    }
}

/// [`in_keyed_priority_order`] with entries of `S` words: room for
/// `2S - 1` words of keys and the place.
fn keyed_order<const S: usize>(
    by_id: &[KeyedPage],
    rank: impl Fn(usize) -> Option<bool> + Sync,
    keys: &PlaceKeys<'_>,
    position: &[AtomicU32],
    threads: usize,
) -> (Vec<i64>, Steps) {
    debug_assert!(keys.words < 2 * S && keys.words <= MAX_KEY_WORDS);
    let entry = |place: usize| {
        let mut entry = [0u64; S];
        // Two words of keys a word of the entry, the first in its high half,
        // so that entries compare as the keys do.
        for (w, &word) in (keys.keys)(place)[..keys.words].iter().enumerate() {
            entry[w / 2] |= u64::from(word) << (32 * (1 - w % 2));
        }
        entry[S - 1] |= place as u64;
        entry
    };
    let (mut entries, first) =
        in_two_runs(by_id.len(), rank, |at, _| entry(at), keys.prefetch, threads);
    sort_on_threads(&mut entries[..first], threads);
    sort_on_threads(&mut entries[first..], threads);
    let mut by_keys = Vec::with_capacity(entries.len());
    for run in [&entries[..first], &entries[first..]] {
        by_keys.extend(steps_of(run, keys));
    }
    let len = entries.len();
    let mut ids: Vec<i64> = bytemuck::allocation::cast_vec(entries);
    for at in 0..len {
        // Entry `at` is words S at to S at + S - 1; id `at` is word `at`,
        // which lies in an entry already read.
        let place = (ids[S * at + S - 1] as u64 & u64::from(u32::MAX)) as usize;
        let (id, page, _) = by_id[place];
        position[page as usize].store(at as Page, Relaxed);
        ids[at] = id;
    }
    ids.truncate(len);
    release_spare_memory(&mut ids);
    let steps = Steps {
        first_positions: first,
        by_keys,
    };
    (ids, steps)
}

/// Each entry's step from the one before it in a sorted run (see
/// [`Steps`]; the first's is `id`): the first word of keys they differ in.
fn steps_of<const S: usize>(run: &[[u64; S]], keys: &PlaceKeys<'_>) -> Vec<KeptBy> {
    let words = |entry: &[u64; S]| {
        let mut words = [0u32; MAX_KEY_WORDS];
        for (w, word) in words.iter_mut().enumerate().take(keys.words) {
            *word = (entry[w / 2] >> (32 * (1 - w % 2))) as u32;
        }
        words
    };
    let after = run.windows(2).map(|pair| {
        let [before, entry] = [&pair[0], &pair[1]].map(words);
        KeptBy::between(&before[..keys.words], &entry[..keys.words], keys.word_keys)
    });
    run.first()
        .map(|_| KeptBy::ID)
        .into_iter()
        .chain(after)
        .collect()
}

/// Hands the whole memory pages of `items`' spare capacity back to the
/// kernel: the keyed entries' words past the ids, which the allocator
/// would keep resident through the sweep (a shrink in place frees nothing,
/// and one that moves holds both copies at once).
#[cfg_attr(not(unix), allow(unused_variables))]
fn release_spare_memory<T>(items: &mut Vec<T>) {
    #[cfg(unix)]
    {
        const PAGE: usize = 4096;
        let size = std::mem::size_of::<T>();
        let base = items.as_mut_ptr() as usize;
        let start = (base + items.len() * size).next_multiple_of(PAGE);
        let end = (base + items.capacity() * size) / PAGE * PAGE;
        if end > start {
            // SAFETY: the range lies in the vector's allocation, past its
            // length: memory no value lives in, which reads as zeros if
            // touched again.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) };
        }
    }
}

/// A pair as the sweep takes it: `(later position, earlier position,
/// closeness, kept by)`; the last is the drop's, once the sweep has
/// written one over the pair.
pub(crate) type OrientedPair = (Page, Page, Closeness, KeptBy);

/// Where each position in priority order first differs from the one
/// before it: the first key under which two positions differ is the least
/// step between them (sorted by keys, a later key only counts where the
/// earlier ones tie).
#[derive(Debug, Default)]
pub(crate) struct Steps {
    /// How many positions rank first: where they end is a step under
    /// `corpus` (the first key whenever any page ranks first).
    pub(crate) first_positions: usize,
    /// Each position's step under the keys (none: pages have no keys).
    pub(crate) by_keys: Vec<KeptBy>,
}

impl Steps {
    fn at(&self, position: usize) -> KeptBy {
        match position == self.first_positions {
            true => KeptBy::CORPUS,
            false => self.by_keys.get(position).copied().unwrap_or(KeptBy::ID),
        }
    }
}

/// The least step from any position up to the last one pushed: a stack of
/// suffix minima, positions and steps both increasing, so it holds at most
/// one entry a key and one for `id`.
#[derive(Default)]
struct LeastSteps(Vec<(Page, KeptBy)>);

impl LeastSteps {
    fn push(&mut self, position: Page, step: KeptBy) {
        while self.0.last().is_some_and(|&(_, s)| s >= step) {
            self.0.pop();
        }
        self.0.push((position, step));
    }

    /// The first key under which `earlier` differs from the last position
    /// pushed.
    fn since(&self, earlier: Page) -> KeptBy {
        let after = self.0.iter().find(|&&(position, _)| position > earlier);
        after.map_or(KeptBy::ID, |&(_, step)| step)
    }
}

/// Positions per bucket of [`sorted_by_later_end`]'s first pass: a bucket's
/// pairs sort in the cache.
const POSITIONS_PER_BUCKET: usize = 1 << 11;

/// Every pair among `pages` positions (self-pairs left out) as
/// `(later, earlier, distance)`, sorted by its later end, for
/// [`greedy_sweep`], from the `len` pairs that `pairs_in(range)` reads a
/// range at a time. They are read twice (to count, then to place), and
/// their memory can go before the sort: the pairs are placed by buckets of
/// later ends, and each bucket is sorted on its own by counting, so the only
/// memory besides the result is one bucket's scratch, not a second copy of
/// every pair. Sorting rather than building adjacency lists keeps every
/// pass streaming: for a chain of scattered ids, each adjacency append
/// would be a cache miss. On `threads` threads, each counting a range of
/// the pairs, then placing and sorting those of a range of later ends
/// (each reads them all once more).
pub(crate) fn sorted_by_later_end<I>(
    pages: usize,
    len: usize,
    pairs_in: impl Fn(Range<usize>) -> I + Sync,
    threads: usize,
) -> Vec<OrientedPair>
where
    I: Iterator<Item = (Page, Page, Closeness)> + Clone + Send + Sync,
{
    let bucket_of = |&(later, ..): &OrientedPair| later as usize / POSITIONS_PER_BUCKET;
    let oriented_in = |range| {
        pairs_in(range)
            .filter(|&(a, b, _)| a != b)
            .map(|(a, b, near)| (a.max(b), a.min(b), near, KeptBy::ID))
    };
    let buckets = pages.div_ceil(POSITIONS_PER_BUCKET);
    let starts = bucket_starts(len, oriented_in, buckets, bucket_of, threads);
    let mut sorted = vec![(0, 0, 0, KeptBy::ID); starts[buckets]];
    // Each bucket by counting, its counts and copy in the first-level
    // cache: quicker than a radix sort of each bucket.
    let sorter = || {
        let (mut counts, mut scratch) = (Vec::new(), Vec::new());
        move |bucket: usize, pairs: &mut [OrientedPair]| {
            let first = (bucket * POSITIONS_PER_BUCKET) as Page;
            let offset = |&(later, ..): &OrientedPair| (later - first) as usize;
            sort_by_slot(
                pairs,
                POSITIONS_PER_BUCKET,
                offset,
                u32::MAX,
                &mut scratch,
                &mut counts,
            );
        }
    };
    place_and_sort(
        oriented_in(0..len),
        &bucket_of,
        &starts,
        &mut sorted,
        threads,
        sorter,
    );
    sorted
}

/// The greedy sweep itself, over pages named by their position in
/// priority order (`ids` their ids, by position; `steps` where each first
/// differs from the one before it), paired by `oriented` (from
/// [`sorted_by_later_end`]; repeats are harmless); ties in closeness go to
/// the earliest in priority order. One pass in priority order; the ids of
/// the earlier ends, at random places, are fetched a few pairs ahead. A
/// dropped page has read at least one pair, so its drop is written over a
/// pair already read.
pub(crate) fn greedy_sweep(
    steps: &Steps,
    mut oriented: Vec<OrientedPair>,
    ids: Vec<i64>,
) -> DirectDrops {
    let mut kept = vec![false; ids.len()];
    let (mut next, mut dropped) = (0, 0);
    let mut least = LeastSteps::default();
    // How many drops are of pages that rank first (they come first).
    let mut first_drops = None;
    for p in 0..ids.len() as Page {
        if p as usize == steps.first_positions {
            first_drops = Some(dropped);
        }
        least.push(p, steps.at(p as usize));
        // The nearest kept partner.
        let mut best: Option<(Closeness, Page)> = None;
        while let Some(&(later, q, near, _)) = oriented.get(next) {
            if later != p {
                break;
            }
            if let Some(&(_, ahead, ..)) = oriented.get(next + LOOKAHEAD) {
                prefetch(&ids[ahead as usize]);
                prefetch(&kept[ahead as usize]);
            }
            next += 1;
            if !kept[q as usize] {
                continue;
            }
            best = match best {
                Some((d, b)) if d < near || (d == near && b <= q) => Some((d, b)),
                _ => Some((near, q)),
            };
        }
        match best {
            Some((near, keep)) => {
                debug_assert!(dropped < next);
                oriented[dropped] = (p, keep, near, least.since(keep));
                dropped += 1;
            }
            None => kept[p as usize] = true,
        }
    }
    oriented.truncate(dropped);
    let first = first_drops.unwrap_or(dropped);
    DirectDrops {
        drops: oriented,
        ids,
        first,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::components::sorted_by_id;

    /// A page: `(ranks first, id)`.
    type RankedPage = (bool, i64);
    /// A pair: `(id, id, distance)`, in either direction.
    type WeightedPair = (i64, i64, Closeness);
    /// A drop row: `(id, keep_id, distance)`.
    type Drop = (i64, i64, Closeness);

    fn pair_log(pairs: impl Iterator<Item = (Page, Page, Closeness)>) -> PairLog {
        let mut log = PairLog::default();
        for (a, b, near) in pairs {
            log.extend(&[a, b], std::iter::once(near));
        }
        log
    }

    /// The drops over `pages` (`(ranks first, id)`) and the `pairs` among
    /// them, as the sweep gives them, its steps on `threads` threads.
    fn direct_drops_of(
        pages: &[RankedPage],
        pairs: &[WeightedPair],
        threads: usize,
    ) -> DirectDrops {
        let index = |id: i64| pages.iter().position(|p| p.1 == id).unwrap() as Page;
        let indexed = pair_log(pairs.iter().map(|&(a, b, d)| (index(a), index(b), d)));
        let by_id = sorted_by_id(
            vec![(0..pages.len() as Page)
                .map(|page| (pages[page as usize].1, page, 0))
                .collect()],
            1,
        );
        let rank = |at: usize| Some(pages[by_id[at].1 as usize].0);
        direct_drops(&by_id, pages.len(), rank, None, indexed, threads)
    }

    /// Every drop in id order, `(id, keep_id, closeness, kept by)`.
    fn every_drop(drops: &DirectDrops) -> Vec<(i64, i64, Closeness, KeptBy)> {
        let mut at = drops.start();
        std::iter::from_fn(|| drops.next_by_id(&mut at, None))
            .map(|(id, keep, grounds)| (id, keep, grounds.near.unwrap(), grounds.kept_by))
            .collect()
    }

    /// [`direct_drops_of`], all of them, in id order; the same on 1, 2 and
    /// 3 threads.
    fn drops_of(pages: &[RankedPage], pairs: &[WeightedPair]) -> Vec<Drop> {
        let on = |threads: usize| {
            let drops = direct_drops_of(pages, pairs, threads);
            let found: Vec<Drop> = every_drop(&drops)
                .into_iter()
                .map(|(id, keep, near, _)| (id, keep, near))
                .collect();
            assert_eq!(found.len(), drops.len());
            assert!(found.is_sorted_by_key(|&(id, ..)| id));
            found
        };
        let found = on(1);
        for threads in [2, 3] {
            assert_eq!(on(threads), found, "{threads} threads");
        }
        found
    }

    #[test]
    fn a_chain_alternates_keep_and_drop() {
        let pages: Vec<RankedPage> = (0..6).map(|i| (false, i)).collect();
        let pairs: Vec<WeightedPair> = (0..5).map(|i| (i + 1, i, 2)).collect();
        let drops = drops_of(&pages, &pairs);
        assert_eq!(drops, vec![(1, 0, 2), (3, 2, 2), (5, 4, 2)]);
    }

    #[test]
    fn drops_are_given_in_id_order_up_to_a_bound() {
        // 10 and 14 rank first: 10 is kept and 14 drops for it; 11 and 12
        // drop for 10; 13 and 15 are paired only with dropped pages, so
        // kept. The drops' two runs ([14] and [11, 12]) are merged by id.
        let pages = vec![
            (false, 11),
            (true, 14),
            (false, 12),
            (true, 10),
            (false, 13),
            (false, 15),
        ];
        let pairs = [
            (10, 14, 2),
            (10, 11, 1),
            (12, 10, 2),
            (12, 13, 1),
            (14, 15, 3),
        ];
        let drops = drops_of(&pages, &pairs);
        assert_eq!(drops, vec![(11, 10, 1), (12, 10, 2), (14, 10, 2)]);
        let given = direct_drops_of(&pages, &pairs, 2);
        let mut at = given.start();
        // 11 and 12 rank later than 10, so 10 was kept over them for being
        // first; 14 ranks first as 10 does.
        let grounds = |near, kept_by| Grounds {
            near: Some(near),
            kept_by,
        };
        assert_eq!(given.next_by_id(&mut at, Some(10)), None);
        let eleven = Some((11, 10, grounds(1, KeptBy::CORPUS)));
        assert_eq!(given.next_by_id(&mut at, Some(11)), eleven);
        assert_eq!(given.next_by_id(&mut at, Some(11)), None);
        let twelve = Some((12, 10, grounds(2, KeptBy::CORPUS)));
        assert_eq!(given.next_by_id(&mut at, Some(13)), twelve);
        assert_eq!(given.next_by_id(&mut at, Some(13)), None);
        let fourteen = Some((14, 10, grounds(2, KeptBy::ID)));
        assert_eq!(given.next_by_id(&mut at, None), fourteen);
        assert_eq!(given.next_by_id(&mut at, None), None);
        // A reader may start at any id: at the first drop of that id or
        // more, whichever run it is in.
        assert_eq!(given.cursor_before(i64::MIN), given.start());
        assert_eq!(given.cursor_before(10), given.start());
        for (from, first) in [(11, Some(11)), (12, Some(12)), (13, Some(14)), (15, None)] {
            let mut at = given.cursor_before(from);
            let next = given.next_by_id(&mut at, None).map(|drop| drop.0);
            assert_eq!(next, first, "from {from}");
        }
        let mut at = given.cursor_before(12);
        assert_eq!(given.next_by_id(&mut at, Some(13)), twelve);
        assert_eq!(given.next_by_id(&mut at, Some(13)), None);
        assert_eq!(at, given.cursor_before(14));
    }

    #[test]
    fn a_long_chain_given_out_of_order_alternates_too() {
        // Longer than a bucket of `sorted_by_later_end`.
        let n = 3 * POSITIONS_PER_BUCKET as i64 + 5;
        let pages: Vec<RankedPage> = (0..n).rev().map(|i| (false, i)).collect();
        let pairs: Vec<WeightedPair> = (0..n - 1).map(|i| (i, i + 1, 1)).collect();
        let drops = drops_of(&pages, &pairs);
        let expected: Vec<Drop> = (0..n / 2).map(|i| (2 * i + 1, 2 * i, 1)).collect();
        assert_eq!(drops, expected);
    }

    #[test]
    fn the_nearest_kept_partner_wins_then_the_smallest_id() {
        // 10 and 20 are corpus pages (first); 5 is paired with both.
        let pages = vec![(true, 20), (true, 10), (false, 5), (false, 6)];
        let pairs = vec![(5, 10, 3), (5, 20, 1), (6, 10, 2), (6, 20, 2)];
        let drops = drops_of(&pages, &pairs);
        assert_eq!(drops, vec![(5, 20, 1), (6, 10, 2)]);
    }

    #[test]
    fn closeness_orders_by_wide_distance_then_distance_and_gives_both_back() {
        for distance in [0, 1, 3, 64] {
            assert_eq!(distances_of(closeness(distance, None)), (distance, None));
            for wide in [0, 1, 22, 255, 256] {
                let near = closeness(distance, Some(wide));
                assert_eq!(distances_of(near), (distance, Some(wide)));
            }
        }
        assert!(closeness(64, Some(3)) < closeness(0, Some(4)));
        assert!(closeness(2, Some(3)) < closeness(3, Some(3)));
        assert!(closeness(64, None) < closeness(0, Some(0)));
    }

    #[test]
    fn a_verified_page_drops_for_its_partner_nearest_over_256_bits() {
        // 5's partners: 10 is 1 bit apart over 64 but 30 over 256; 20 is
        // 3 bits apart over 64 and 12 over 256.
        let pages = vec![(true, 20), (true, 10), (false, 5)];
        let pairs = [
            (5, 10, closeness(1, Some(30))),
            (5, 20, closeness(3, Some(12))),
        ];
        let drops = drops_of(&pages, &pairs);
        assert_eq!(drops, vec![(5, 20, closeness(3, Some(12)))]);
    }

    #[test]
    fn a_page_whose_earlier_partners_are_all_dropped_is_kept() {
        // 1 is kept, 2 drops for 1, and 3 (paired only with 2) is kept.
        let pages = vec![(false, 1), (false, 2), (false, 3)];
        let drops = drops_of(&pages, &[(1, 2, 1), (2, 3, 1), (3, 3, 0)]);
        assert_eq!(drops, vec![(2, 1, 1)]);
    }

    #[test]
    fn pages_without_a_rank_are_left_to_others() {
        // 0-1-2 is decided here; 3-4 is another's (no rank): no drop of 4.
        let pages: Vec<RankedPage> = (0..5).map(|i| (false, i)).collect();
        let pairs = [(0, 1, 1), (1, 2, 1), (3, 4, 1)];
        let by_id = sorted_by_id(
            vec![(0..5).map(|page| (i64::from(page), page, 0)).collect()],
            1,
        );
        let rank = |at: usize| {
            let page = by_id[at].1;
            (page < 3).then_some(pages[page as usize].0)
        };
        let drops = direct_drops(&by_id, 5, rank, None, pair_log(pairs.into_iter()), 1);
        assert_eq!(every_drop(&drops), vec![(1, 0, 1, KeptBy::ID)]);
    }

    #[test]
    fn pages_with_keys_are_swept_in_key_order_and_their_drops_come_by_id() {
        // A chain 0-1-2-3-4, a pair 5-6 and a chain 7-8-9; keys (four
        // words, the fourth breaking ties of the first three) put 1 before
        // 3, which rank first whatever their keys, then 4, 2, 0, 6, 5, 7,
        // 8, 9.
        let keys: [[u32; 4]; 10] = [
            [0, 0, 2, 1],
            [0, 0, 9, 0],
            [0, 0, 2, 0],
            [1, 0, 0, 0],
            [0, 0, 1, 0],
            [0, 5, 0, 0],
            [0, 4, 0, 0],
            [0, 6, 0, 0],
            [0, 7, 0, 0],
            [0, 7, 0, 3],
        ];
        let first = [
            false, true, false, true, false, false, false, false, false, false,
        ];
        let pairs = [
            (0, 1, 1),
            (1, 2, 1),
            (2, 3, 1),
            (3, 4, 1),
            (5, 6, 2),
            (7, 8, 1),
            (8, 9, 1),
            (7, 9, 2),
        ];
        // The words' keys: corpus has none; rel-canonical and
        // canonical-url one each; earliest two.
        let order = crate::cluster::keep_order::KeepOrder::default_with_pages();
        let word_keys = order.word_keys();
        assert_eq!(word_keys.len(), 4);
        let by_id = sorted_by_id(
            vec![(0..10).map(|page| (i64::from(page), page, 0)).collect()],
            1,
        );
        let words = |at: usize| {
            let mut k = [0; crate::cluster::keep_order::MAX_KEY_WORDS];
            k[..4].copy_from_slice(&keys[by_id[at].1 as usize]);
            k
        };
        let prefetch = |_: usize| {};
        for threads in [1, 2] {
            let place_keys = PlaceKeys {
                words: 4,
                word_keys: &word_keys,
                keys: &words,
                prefetch: &prefetch,
            };
            let rank = |at: usize| Some(first[by_id[at].1 as usize]);
            let log = pair_log(pairs.iter().copied());
            let drops = direct_drops(&by_id, 10, rank, Some(place_keys), log, threads);
            // Order: 1, 3 (first, by keys), then 4, 2, 0, 6, 5, 7, 8, 9: 1
            // and 3 are kept; 4 drops for 3, 0 for 1, and 2, as near to
            // both, for 1, the earlier, each for a keeper that ranks first;
            // 5 drops for 6 (canonical-url, the second word); 8 drops for 7
            // (canonical-url), and so does 9, 2 bits away, though 8 lies
            // between them and 9 differs from 8 only in earliest's second
            // word, the fourth.
            assert_eq!(
                every_drop(&drops),
                vec![
                    (0, 1, 1, KeptBy::CORPUS),
                    (2, 1, 1, KeptBy::CORPUS),
                    (4, 3, 1, KeptBy::CORPUS),
                    (5, 6, 2, word_keys[1]),
                    (8, 7, 1, word_keys[1]),
                    (9, 7, 2, word_keys[1]),
                ],
                "{threads} threads"
            );
            let mut from = drops.cursor_before(3);
            let (id, keep, grounds) = drops.next_by_id(&mut from, None).unwrap();
            assert_eq!((id, keep, grounds.near), (4, 3, Some(1)));
        }
    }

    #[test]
    fn pages_are_ordered_by_every_word_of_their_keys_whatever_the_words() {
        // Words from a few values, so that pages tie on any prefix of them;
        // the oracle sorts whole pages (rank, words, id) and names each
        // position's first differing word.
        let order = crate::cluster::keep_order::KeepOrder::parse(
            "earliest,latest,column:a:asc,column:b:desc",
        )
        .unwrap();
        let all_word_keys = order.word_keys();
        let mut next = 0x2545_f491_4f6c_dd1d_u64;
        let mut random = move |below: u64| {
            next ^= next << 13;
            next ^= next >> 7;
            next ^= next << 17;
            next % below
        };
        let n = 500;
        let keys: Vec<KeyWords> = (0..n)
            .map(|_| std::array::from_fn(|_| random(3) as u32 * 0x7fff_ffff))
            .collect();
        let first: Vec<Option<bool>> = (0..n)
            .map(|_| [None, Some(true), Some(false), Some(false)][random(4) as usize])
            .collect();
        let by_id = sorted_by_id(
            vec![(0..n as Page)
                .map(|page| (random(1 << 40) as i64 - (1 << 39), page, 0))
                .collect()],
            1,
        );
        // 3 threads: each ranks and places a range of the pages.
        for (words, threads) in (1..=MAX_KEY_WORDS).flat_map(|w| [(w, 1), (w, 3)]) {
            let word_keys = &all_word_keys[..words];
            let keys_at = |at: usize| {
                let mut k = [0; MAX_KEY_WORDS];
                k[..words].copy_from_slice(&keys[by_id[at].1 as usize][..words]);
                k
            };
            let prefetch = |_: usize| {};
            let place_keys = PlaceKeys {
                words,
                word_keys,
                keys: &keys_at,
                prefetch: &prefetch,
            };
            let position: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(MISSING)).collect();
            let rank = |at: usize| first[by_id[at].1 as usize];
            let (ids, steps) =
                in_keyed_priority_order(&by_id, rank, &place_keys, &position, threads);

            let mut expected: Vec<(bool, KeyWords, i64, Page)> = (0..by_id.len())
                .filter_map(|at| rank(at).map(|f| (!f, keys_at(at), by_id[at].0, by_id[at].1)))
                .collect();
            expected.sort_unstable();
            let expected_ids: Vec<i64> = expected.iter().map(|&(_, _, id, _)| id).collect();
            assert_eq!(ids, expected_ids, "{words} words, {threads} threads");
            let firsts = expected.iter().filter(|&&(later, ..)| !later).count();
            assert_eq!(steps.first_positions, firsts, "{words} words");
            for (at, &(later, ref k, _, page)) in expected.iter().enumerate() {
                assert_eq!(position[page as usize].load(Relaxed), at as Page);
                let step = match at {
                    0 => KeptBy::ID,
                    _ if expected[at - 1].0 != later => KeptBy::ID,
                    _ => {
                        let before = &expected[at - 1].1;
                        (0..words)
                            .find(|&w| before[w] != k[w])
                            .map_or(KeptBy::ID, |w| word_keys[w])
                    }
                };
                assert_eq!(steps.by_keys[at], step, "{words} words, position {at}");
            }
        }
    }

    #[test]
    fn pairs_sorted_bucket_by_bucket_are_sorted_by_their_later_end() {
        let pages = 5 * POSITIONS_PER_BUCKET + 17;
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % pages as u64) as Page
        };
        let pairs: Vec<(Page, Page, Closeness)> = (0..20_000)
            .map(|i| (next(), next(), (i % 4) as Closeness))
            .chain([(7, 7, 0), (pages as Page - 1, 0, 3)])
            .collect();
        let mut expected: Vec<OrientedPair> = pairs
            .iter()
            .filter(|&&(a, b, _)| a != b)
            .map(|&(a, b, d)| (a.max(b), a.min(b), d, KeptBy::ID))
            .collect();
        expected.sort_unstable();
        // Several threads place and sort ranges of buckets of their own.
        for threads in [1, 2, 3, 8] {
            let sorted = sorted_by_later_end(
                pages,
                pairs.len(),
                |range| pairs[range].iter().copied(),
                threads,
            );
            assert!(sorted.is_sorted_by_key(|&(later, ..)| later));
            let mut found = sorted;
            found.sort_unstable();
            assert_eq!(found, expected, "{threads} threads");
        }
    }

    #[test]
    fn the_least_step_since_any_earlier_position_is_the_first_difference() {
        // Steps of a few keys and `id`, at random; every earlier position
        // against a brute-force minimum.
        let order = crate::cluster::keep_order::KeepOrder::parse("corpus,longest,latest").unwrap();
        let kinds: Vec<KeptBy> = [KeptBy::CORPUS, KeptBy::ID]
            .into_iter()
            .chain(order.word_keys())
            .collect();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: usize| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 33) as usize % n
        };
        let steps: Vec<KeptBy> = (0..400).map(|_| kinds[next(kinds.len())]).collect();
        let mut least = LeastSteps::default();
        for (p, &step) in steps.iter().enumerate() {
            least.push(p as Page, step);
            assert!(least.0.len() <= kinds.len());
            for q in 0..p {
                let brute = *steps[q + 1..=p].iter().min().unwrap();
                assert_eq!(least.since(q as Page), brute, "{q}..={p}");
            }
        }
    }

    #[test]
    fn policies_print_as_the_flag_spells_them() {
        use clap::ValueEnum;
        for policy in [DropPolicy::Direct, DropPolicy::Component] {
            assert_eq!(DropPolicy::from_str(&policy.to_string(), false), Ok(policy));
        }
        assert!(DropPolicy::from_str("nearest", false).is_err());
    }
}
