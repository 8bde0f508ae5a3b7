//! What a worker's share of its process's components holds besides them:
//! its pages sorted by id ([`ShareRoom`]) and, under the direct drop
//! policy, the pairs among them as page numbers ([`PairLog`]), which the
//! union-find logs as it reads and the split hands to each pair's owner.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

#[cfg(test)]
use super::mix;
use super::{Page, LOOKAHEAD, MISSING};
use crate::exec::parallel::in_chunks;
#[cfg(test)]
use crate::exec::sorting::scatter_sorted_runs;
use crate::exec::sorting::{ordered, sort_spread_by_key, KeyBuckets};

/// How near a pair's pages are, as the direct drop policy compares a
/// page's kept partners, nearest first (it says how the wide distance and
/// the distance share the bits): smaller is nearer.
pub(crate) type Closeness = u16;

/// A worker's pairs as page numbers of its process's
/// [`crate::cluster::components::SharedGraph`], kept for the direct policy's pass: 10
/// bytes a pair, instead of reading the pairs again and looking every id up
/// a second time. Held as the chunks it was put together from (a log per
/// worker that read pairs of these components), so that putting logs
/// together copies nothing.
#[derive(Debug, Default)]
pub struct PairLog {
    chunks: Vec<PairChunk>,
}

/// Consecutive pairs of a [`PairLog`].
#[derive(Debug, Default)]
struct PairChunk {
    ends: Vec<[Page; 2]>,
    nearness: Vec<Closeness>,
}

impl PairChunk {
    fn with_capacity(pairs: usize) -> PairChunk {
        PairChunk {
            ends: Vec::with_capacity(pairs),
            nearness: Vec::with_capacity(pairs),
        }
    }

    /// The owner of every pair's first end, if they have one: owners are
    /// read until one differs, which among small clusters (roots hashed to
    /// workers) is within a few pairs.
    fn sole_owner(&self, owner: impl Fn(Page) -> usize, prefetch: impl Fn(Page)) -> Option<usize> {
        let first = owner(self.ends.first()?[0]);
        for (at, &[a, _]) in self.ends.iter().enumerate() {
            if let Some(&[ahead, _]) = self.ends.get(at + LOOKAHEAD) {
                prefetch(ahead);
            }
            if owner(a) != first {
                return None;
            }
        }
        Some(first)
    }

    fn pairs_in(
        &self,
        range: std::ops::Range<usize>,
    ) -> impl Iterator<Item = (Page, Page, Closeness)> + Clone + '_ {
        self.ends[range.clone()]
            .iter()
            .zip(&self.nearness[range])
            .map(|(&[a, b], &near)| (a, b, near))
    }
}

impl PairLog {
    /// Appends a batch: `ends` two pages per pair, as
    /// [`crate::cluster::components::GraphWriter::add_pairs`] leaves them.
    pub(crate) fn extend(&mut self, ends: &[Page], nearness: impl Iterator<Item = Closeness>) {
        let chunk = self.last_chunk();
        chunk
            .ends
            .extend(ends.chunks_exact(2).map(|pair| [pair[0], pair[1]]));
        chunk.nearness.extend(nearness);
        debug_assert_eq!(chunk.ends.len(), chunk.nearness.len());
    }

    /// Makes room for `pairs` more pairs: if the last chunk has not that
    /// much room left, in a new chunk of `pairs` or `chunk` pairs, whichever
    /// is more, so that nothing logged is ever copied (a worker does not
    /// know ahead how many pairs it will read: its process's workers take
    /// row groups as they finish the last).
    pub(crate) fn make_room(&mut self, pairs: usize, chunk: usize) {
        let room = self
            .chunks
            .last()
            .map_or(0, |last| last.ends.capacity() - last.ends.len());
        if room < pairs {
            self.chunks.push(PairChunk::with_capacity(pairs.max(chunk)));
        }
    }

    fn last_chunk(&mut self) -> &mut PairChunk {
        if self.chunks.is_empty() {
            self.chunks.push(PairChunk::default());
        }
        let last = self.chunks.len() - 1;
        &mut self.chunks[last]
    }

    pub(crate) fn len(&self) -> usize {
        self.chunks.iter().map(|chunk| chunk.ends.len()).sum()
    }

    /// Every pair's first end, in the log's order.
    pub(crate) fn first_ends(&self) -> impl Iterator<Item = Page> + '_ {
        self.chunks
            .iter()
            .flat_map(|chunk| chunk.ends.iter().map(|&[a, _]| a))
    }

    /// The log cut into `n` logs by `owner` of a pair's first end (whose
    /// data `prefetch` fetches a few pairs ahead), each in this log's order.
    /// A chunk whose pairs all go to one log (a giant component's) is
    /// handed over whole: a copy would touch all of its pairs' memory a
    /// second time.
    pub(crate) fn split_by(
        self,
        n: usize,
        owner: impl Fn(Page) -> usize,
        prefetch: impl Fn(Page),
    ) -> Vec<PairLog> {
        if n == 1 {
            return vec![self];
        }
        // Chunks of room for an even split and a little more, a new one
        // when one is full (a giant component's pairs all go to one
        // worker): growing by doubling would copy and touch each log's
        // memory again.
        let each = self.len() / n + self.len() / n / 8 + 16;
        let mut logs: Vec<PairLog> = (0..n).map(|_| PairLog::default()).collect();
        for chunk in self.chunks {
            if let Some(to) = chunk.sole_owner(&owner, &prefetch) {
                logs[to].chunks.push(chunk);
                continue;
            }
            for (at, (&[a, b], &near)) in chunk.ends.iter().zip(&chunk.nearness).enumerate() {
                if let Some(&[ahead, _]) = chunk.ends.get(at + LOOKAHEAD) {
                    prefetch(ahead);
                }
                logs[owner(a)].push(a, b, near, each);
            }
        }
        logs
    }

    /// Appends one pair, in a new chunk of room for `each` pairs if the
    /// last is full.
    fn push(&mut self, a: Page, b: Page, near: Closeness, each: usize) {
        self.make_room(1, each);
        let last = self.last_chunk();
        last.ends.push([a, b]);
        last.nearness.push(near);
    }

    /// The logs one after the other: their chunks, not copied.
    pub(crate) fn concat(logs: Vec<PairLog>) -> PairLog {
        PairLog {
            chunks: logs.into_iter().flat_map(|log| log.chunks).collect(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Renames both ends of every pair by `position`, in place, its chunks
    /// shared among `threads` threads; a pair whose first end has no
    /// position (it is not swept) becomes a self-pair, which the sweep
    /// ignores.
    pub(crate) fn rename_by(&mut self, position: &[AtomicU32], threads: usize) {
        let position_of = |page: Page| position[page as usize].load(Relaxed);
        let rename = |chunks: &mut [PairChunk]| {
            for ends in chunks.iter_mut().flat_map(|chunk| &mut chunk.ends) {
                let [a, b] = *ends;
                *ends = match position_of(a) {
                    MISSING => [MISSING; 2],
                    at => [at, position_of(b)],
                };
            }
        };
        let each = self.chunks.len().div_ceil(threads.max(1));
        in_chunks(&mut self.chunks, each, |_, group| rename(group));
    }

    /// The pairs of `range` (positions in the whole log), across chunks.
    pub(crate) fn pairs_in(
        &self,
        range: std::ops::Range<usize>,
    ) -> impl Iterator<Item = (Page, Page, Closeness)> + Clone + '_ {
        let starts = self.chunks.iter().scan(0, |start, chunk| {
            let at = *start;
            *start += chunk.ends.len();
            Some((at, chunk))
        });
        starts.flat_map(move |(start, chunk)| {
            let end = start + chunk.ends.len();
            let (from, to) = (range.start.clamp(start, end), range.end.clamp(start, end));
            chunk.pairs_in(from - start..to - start)
        })
    }
}

/// What the direct policy's pass needs of a worker's share of its
/// process's pages, besides the pages: the pairs of its components.
#[derive(Debug, Default)]
pub(crate) struct DirectShare {
    pub(crate) pairs: PairLog,
}

/// Whether each page of a worker's share ranks first, by its place in the
/// share's `by_id`: kept while the roots are counted, which reads the marks
/// in that order anyway, so that later steps need not read each page's
/// flags at random. Empty when no page can rank first.
#[derive(Debug, Default)]
pub(crate) struct RanksByPlace(pub(super) Vec<bool>);

impl RanksByPlace {
    /// Whether the page at `at` of `by_id` ranks first.
    pub(crate) fn get(&self, at: usize) -> bool {
        !self.0.is_empty() && self.0[at]
    }
}

/// How many of its process's `workers` threads a worker holding `share` of
/// the process's `pages` may use for its sorts, sweep and rows: in
/// proportion, rounded. A giant component falls whole to one worker, whose
/// work then takes the cores the other workers, with nothing left to do,
/// leave idle.
pub(crate) fn threads_for_share(share: usize, pages: usize, workers: usize) -> usize {
    match pages {
        0 => 1,
        _ => ((workers * share + pages / 2) / pages).clamp(1, workers.max(1)),
    }
}

/// A page as the output needs it: `(id, index, what the caller carries
/// along)`; the third field fills what would be padding.
pub(crate) type KeyedPage = (i64, Page, u32);

/// The pages of several runs sorted by id as one (a scatter, then buckets of
/// about 1,024 pages in the cache, [`id_sorter`]), as a share's pages are
/// ([`ShareRoom`]): for tests that make shares of their own.
///
/// On `threads` threads (see [`crate::exec::sorting::place_and_sort`]).
#[cfg(test)]
pub(crate) fn sorted_by_id(runs: Vec<Vec<KeyedPage>>, threads: usize) -> Vec<KeyedPage> {
    let key = |&(id, ..): &KeyedPage| ordered(id);
    let sorter = || {
        let mut sort = id_sorter();
        move |_: usize, bucket: &mut [KeyedPage]| sort(bucket)
    };
    scatter_sorted_runs(runs, key, PAGES_PER_BUCKET, threads, sorter)
}

/// Sorts buckets of pages by id, one after another, keeping its scratch:
/// by counting where ids are spread as hashes are, else by radix sort.
fn id_sorter() -> impl FnMut(&mut [KeyedPage]) {
    let (mut scratch, mut counts) = (Vec::new(), Vec::new());
    move |bucket| {
        let key = |&(id, ..): &KeyedPage| ordered(id);
        if !sort_spread_by_key(bucket, key, &mut scratch, &mut counts) {
            radsort::sort_by_key(bucket, |&(id, ..)| id);
        }
    }
}

/// Pages a bucket of ids holds on average when a worker's share is even:
/// a bucket sorts in the cache.
const PAGES_PER_BUCKET: usize = 1 << 10;

/// How the workers place their shares' pages by id without a sort's
/// second copy ([`super::SharedGraph::split`]): the span of the process's
/// ids (as [`ordered`]) cut into buckets of equal width, each a range of
/// every share, which the workers fill, and then sorted on its own.
#[derive(Clone, Copy, Debug)]
pub(super) struct IdBuckets {
    by_key: KeyBuckets,
    count: usize,
}

impl IdBuckets {
    /// Buckets for the ids of `span` (none: no page), about
    /// [`PAGES_PER_BUCKET`] a bucket in an even share of `pages` on
    /// `workers` workers.
    pub(super) fn new(span: Option<(u64, u64)>, pages: usize, workers: usize) -> IdBuckets {
        let (least, most) = span.unwrap_or((0, 0));
        let count = (pages / PAGES_PER_BUCKET / workers.max(1)).next_power_of_two();
        IdBuckets {
            by_key: KeyBuckets::new(least, most, count),
            count,
        }
    }

    pub(super) fn count(&self) -> usize {
        self.count
    }

    /// The bucket of an id in the span.
    pub(super) fn of(&self, id: i64) -> usize {
        self.by_key.of(ordered(id))
    }
}

/// Where one worker writes the pages it flattened that fall to one share
/// ([`super::Forest::place_by_id`]): the share's array, and by bucket of
/// ids the place of this worker's next page there and the end of its room.
#[derive(Debug, Default)]
pub(super) struct Places {
    /// The array's address: the share's worker owns it, its room reserved,
    /// and keeps it in place until every worker has written its pages.
    share: usize,
    next: Vec<usize>,
    ends: Vec<usize>,
}

impl Places {
    pub(super) fn put(&mut self, bucket: usize, page: KeyedPage) {
        let at = self.next[bucket];
        assert!(
            at < self.ends[bucket],
            "more pages for a bucket than counted"
        );
        // SAFETY: `at` is in this worker's room of the bucket, which lies in
        // the array's reserved room (see `ShareRoom::new`), and no other
        // worker writes there; the array's owner reads it only once every
        // worker has written.
        unsafe { (self.share as *mut KeyedPage).add(at).write(page) };
        self.next[bucket] = at + 1;
    }

    /// Panics unless every place was written (the array is then whole).
    pub(super) fn check_filled(&self) {
        assert!(
            self.next == self.ends,
            "fewer pages for a share than counted"
        );
    }
}

/// A worker's share being filled by every worker ([`Places`]).
pub(super) struct ShareRoom {
    pages: Vec<KeyedPage>,
    /// Where each bucket starts, and (last) where they end.
    starts: Vec<usize>,
}

impl ShareRoom {
    /// Pages of the share.
    pub(super) fn len(&self) -> usize {
        self.starts.last().copied().unwrap_or(0)
    }

    /// Room for the pages every worker counted for this share, `counts`
    /// (by worker, by bucket), and each worker's places in it: bucket by
    /// bucket, each worker's pages after the previous worker's.
    pub(super) fn new(counts: &[Vec<u32>], buckets: usize) -> (ShareRoom, Vec<Places>) {
        let all: usize = counts.iter().flatten().map(|&n| n as usize).sum();
        let mut pages: Vec<KeyedPage> = Vec::with_capacity(all);
        let share = pages.as_mut_ptr() as usize;
        let mut places: Vec<Places> = counts
            .iter()
            .map(|_| Places {
                share,
                next: Vec::with_capacity(buckets),
                ends: Vec::with_capacity(buckets),
            })
            .collect();
        let (mut starts, mut at) = (Vec::with_capacity(buckets + 1), 0);
        for bucket in 0..buckets {
            starts.push(at);
            for (places, counts) in places.iter_mut().zip(counts) {
                places.next.push(at);
                at += counts.get(bucket).map_or(0, |&n| n as usize);
                places.ends.push(at);
            }
        }
        starts.push(at);
        (ShareRoom { pages, starts }, places)
    }

    /// The share, each bucket sorted by id, on `threads` threads.
    ///
    /// # Safety
    /// Every worker has written all the places [`Self::new`] gave it
    /// ([`Places::check_filled`] passed), and those writes happen before
    /// this call (a barrier between).
    pub(super) unsafe fn into_sorted(self, threads: usize) -> Vec<KeyedPage> {
        let len = self.len();
        let ShareRoom { mut pages, starts } = self;
        // SAFETY: the caller's promise: every place below `len` is written.
        unsafe { pages.set_len(len) };
        let mut buckets: Vec<&mut [KeyedPage]> = Vec::with_capacity(starts.len());
        let mut rest = &mut pages[..];
        for bucket in starts.windows(2) {
            let (this, after) = std::mem::take(&mut rest).split_at_mut(bucket[1] - bucket[0]);
            buckets.push(this);
            rest = after;
        }
        let each = buckets.len().div_ceil(threads.max(1));
        in_chunks(&mut buckets, each, |_, buckets| {
            let mut sort = id_sorter();
            buckets.iter_mut().for_each(|bucket| sort(bucket));
        });
        pages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every worker's pages `(id, page, worker)` written into the shares
    /// (by `share_of(id)`) as the split does, then each share sorted.
    fn placed(
        pages_of: &[Vec<KeyedPage>],
        share_of: impl Fn(i64) -> usize,
        shares: usize,
    ) -> Vec<Vec<KeyedPage>> {
        let all = pages_of.iter().flatten();
        let span = all.clone().map(|&(id, ..)| ordered(id));
        let span = span.clone().min().zip(span.max());
        let buckets = IdBuckets::new(span, all.count(), shares);
        let counts: Vec<Vec<Vec<u32>>> = (0..shares)
            .map(|share| {
                let mut counts = vec![vec![0u32; buckets.count()]; pages_of.len()];
                for (worker, pages) in pages_of.iter().enumerate() {
                    for &(id, ..) in pages.iter().filter(|&&(id, ..)| share_of(id) == share) {
                        counts[worker][buckets.of(id)] += 1;
                    }
                }
                counts
            })
            .collect();
        let (rooms, mut places): (Vec<ShareRoom>, Vec<Vec<Places>>) = counts
            .iter()
            .map(|counts| ShareRoom::new(counts, buckets.count()))
            .unzip();
        for (worker, pages) in pages_of.iter().enumerate() {
            for &page in pages {
                places[share_of(page.0)][worker].put(buckets.of(page.0), page);
            }
        }
        places.iter().flatten().for_each(Places::check_filled);
        let threads = [1, 2].into_iter().cycle();
        // SAFETY: every place is filled (checked above), on this thread.
        rooms
            .into_iter()
            .zip(threads)
            .map(|(room, threads)| unsafe { room.into_sorted(threads) })
            .collect()
    }

    #[test]
    fn shares_are_placed_by_id_bucket_and_sorted_whatever_the_ids_span() {
        let mut next = 0x9e37_79b9_7f4a_7c15_u64;
        let mut random = move || {
            next ^= next << 13;
            next ^= next >> 7;
            next ^= next << 17;
            next
        };
        let spreads: [Box<dyn Fn(u64) -> i64>; 3] = [
            Box::new(|r| r as i64),
            Box::new(|r| (r % 1000) as i64 - 500),
            Box::new(|r| {
                if r % 2 == 0 {
                    i64::MIN + (r % 7) as i64
                } else {
                    i64::MAX - (r % 5) as i64
                }
            }),
        ];
        for spread in &spreads {
            let pages_of: Vec<Vec<KeyedPage>> = (0..3u32)
                .map(|worker| {
                    (0..40_000u32)
                        .map(|page| (spread(random()), page, worker))
                        .collect()
                })
                .collect();
            let share_of = |id: i64| (mix(id) % 2) as usize;
            let shares = placed(&pages_of, share_of, 2);
            for (share, got) in shares.iter().enumerate() {
                let mut expected: Vec<KeyedPage> = pages_of
                    .iter()
                    .flatten()
                    .copied()
                    .filter(|&(id, ..)| share_of(id) == share)
                    .collect();
                expected.sort_unstable();
                let mut sorted = got.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, expected, "share {share}: every page, once");
                assert!(got.is_sorted_by_key(|&(id, ..)| id), "share {share}: by id");
            }
        }
    }

    #[test]
    #[should_panic(expected = "more pages for a bucket than counted")]
    fn a_page_beyond_its_count_is_refused() {
        let (_room, mut places) = ShareRoom::new(&[vec![1, 0]], 2);
        places[0].put(0, (1, 0, 0));
        places[0].put(0, (2, 1, 0));
    }

    fn pair_log(pairs: impl Iterator<Item = (Page, Page, Closeness)>) -> PairLog {
        let mut log = PairLog::default();
        for (a, b, near) in pairs {
            log.extend(&[a, b], std::iter::once(near));
        }
        log
    }

    #[test]
    fn a_share_takes_threads_in_proportion_to_its_pages() {
        // Two workers: a giant's worker takes both cores, an even split one
        // each; an idle process or worker still has one.
        assert_eq!(threads_for_share(10, 10, 2), 2);
        assert_eq!(threads_for_share(8, 10, 2), 2);
        assert_eq!(threads_for_share(5, 10, 2), 1);
        assert_eq!(threads_for_share(0, 10, 2), 1);
        assert_eq!(threads_for_share(0, 0, 2), 1);
        assert_eq!(threads_for_share(6, 10, 4), 2);
        assert_eq!(threads_for_share(10, 10, 1), 1);
    }

    #[test]
    fn room_is_made_in_a_new_chunk_and_nothing_logged_moves() {
        let mut log = PairLog::default();
        log.make_room(3, 4);
        log.extend(&[1, 2, 3, 4, 5, 6], [0, 1, 2].into_iter());
        let first = log.chunks[0].ends.as_ptr();
        // One pair's room is left: enough for one, not for two.
        log.make_room(1, 4);
        assert_eq!(log.chunks.len(), 1);
        log.make_room(2, 4);
        assert_eq!(log.chunks.len(), 2);
        assert_eq!(log.chunks[1].ends.capacity(), 4);
        log.extend(&[7, 8, 9, 10], [3, 0].into_iter());
        assert_eq!(log.chunks[0].ends.as_ptr(), first);
        let pairs: Vec<_> = log.pairs_in(0..log.len()).collect();
        assert_eq!(
            pairs,
            vec![(1, 2, 0), (3, 4, 1), (5, 6, 2), (7, 8, 3), (9, 10, 0)]
        );
    }

    #[test]
    fn a_chunk_of_one_owner_is_handed_over_whole_and_every_log_keeps_the_order() {
        // Three chunks: mixed owners, all of owner 1, mixed.
        let chunks: [Vec<(Page, Page, Closeness)>; 3] = [
            (0..50).map(|i| (i, i + 1, 1)).collect(),
            (100..160).map(|i| (i * 2 + 1, i, 2)).collect(),
            (200..260).map(|i| (i, i + 3, 3)).collect(),
        ];
        let mut log = PairLog::default();
        for pairs in &chunks {
            log.make_room(pairs.len(), pairs.len());
            for &(a, b, near) in pairs {
                log.extend(&[a, b], std::iter::once(near));
            }
        }
        assert_eq!(log.chunks.len(), 3);
        let whole = log.chunks[1].ends.as_ptr();
        let owner = |a: Page| (a % 2) as usize;
        let logs = log.split_by(2, owner, |_| ());
        assert!(logs[1].chunks.iter().any(|c| c.ends.as_ptr() == whole));
        assert!(logs[0].chunks.iter().all(|c| c.ends.as_ptr() != whole));
        for (o, log) in logs.iter().enumerate() {
            let expected: Vec<(Page, Page, Closeness)> = chunks
                .iter()
                .flatten()
                .filter(|p| owner(p.0) == o)
                .copied()
                .collect();
            let split: Vec<(Page, Page, Closeness)> = log
                .chunks
                .iter()
                .flat_map(|c| c.pairs_in(0..c.ends.len()))
                .collect();
            assert_eq!(split, expected, "owner {o}");
        }
    }

    #[test]
    fn logs_put_together_read_as_one_across_their_chunks() {
        let all: Vec<(Page, Page, Closeness)> = (0..1000)
            .map(|i| (i, i * 7 % 1000, (i % 4) as Closeness))
            .collect();
        // Split by an owner, then put together: chunks of uneven lengths
        // (room for 297 pairs each, so the two larger logs take two), one
        // log empty.
        let owner = |a: Page| {
            if a.is_multiple_of(3) {
                0
            } else if a < 600 {
                1
            } else {
                3
            }
        };
        let logs = pair_log(all.iter().copied()).split_by(4, owner, |_| ());
        assert_eq!(
            logs.iter().map(PairLog::len).collect::<Vec<_>>(),
            vec![334, 400, 0, 266]
        );
        let log = PairLog::concat(logs);
        assert_eq!(log.chunks.len(), 5);
        let mut expected: Vec<(Page, Page, Closeness)> = Vec::new();
        for o in 0..4 {
            expected.extend(all.iter().filter(|p| owner(p.0) == o));
        }
        for range in [
            0..1000,
            0..334,
            300..800,
            334..734,
            733..735,
            999..1000,
            500..500,
        ] {
            let found: Vec<_> = log.pairs_in(range.clone()).collect();
            assert_eq!(found, expected[range.clone()], "{range:?}");
        }
        let position: Vec<Page> = (0..1000)
            .map(|p| if p == 5 { MISSING } else { 999 - p })
            .collect();
        let expected: Vec<_> = expected
            .iter()
            .map(|&(a, b, d)| match a {
                5 => (MISSING, MISSING, d),
                _ => (999 - a, position[b as usize], d),
            })
            .collect();
        // The chunks renamed on one thread, or shared among several.
        for threads in [1, 2, 3, 9] {
            let mut renamed = PairLog {
                chunks: log
                    .chunks
                    .iter()
                    .map(|chunk| PairChunk {
                        ends: chunk.ends.clone(),
                        nearness: chunk.nearness.clone(),
                    })
                    .collect(),
            };
            let atomic: Vec<AtomicU32> = position.iter().map(|&p| AtomicU32::new(p)).collect();
            renamed.rename_by(&atomic, threads);
            let found: Vec<_> = renamed.pairs_in(0..renamed.len()).collect();
            assert_eq!(found, expected, "{threads} threads");
        }
    }
}
