//! Sorting large arrays in two passes over memory.
//!
//! A radix sort of 64-bit keys makes eight passes over its array, each
//! reading and writing all of it: for arrays far larger than the cache
//! that is most of its time. One counting scatter by the keys' leading
//! bits into buckets small enough to sort in the cache, then each bucket
//! on its own, reads and writes the array twice.

use std::ops::Range;

use crate::exec::parallel::{in_chunks, in_parallel};

/// Below this many items, sorting whole is as fast.
const SCATTER_FROM: usize = 1 << 16;

/// The items of `runs`, as one, sorted by `key`: a counting scatter by the
/// leading bits of `key` above the least key (so keys bunched in a narrow
/// range spread over the buckets too) into buckets of about `per_bucket`
/// items, then each bucket sorted by a sorter that `sorter` makes for each
/// thread (so that each has its own scratch), which must sort by `key` (and
/// may break its ties). On `threads` threads (see [`place_and_sort`]); the
/// scatter reads each run where it is, so they need not be put together
/// first.
pub(crate) fn scatter_sorted_runs<T, S>(
    mut runs: Vec<Vec<T>>,
    key: impl Fn(&T) -> u64 + Sync,
    per_bucket: usize,
    threads: usize,
    sorter: impl Fn() -> S + Sync,
) -> Vec<T>
where
    T: Copy + Default + Send + Sync,
    S: FnMut(usize, &mut [T]),
{
    let len: usize = runs.iter().map(Vec::len).sum();
    if len < SCATTER_FROM {
        let mut items = match runs.len() {
            1 => runs.pop().unwrap_or_default(),
            _ => runs.concat(),
        };
        sorter()(0, &mut items);
        return items;
    }
    let items_in = |range| pieces_in(&runs, range);
    let (least, most) = over_ranges(len, threads, |range| {
        items_in(range)
            .map(|item| key(&item))
            .fold((u64::MAX, 0), |(lo, hi), k| (lo.min(k), hi.max(k)))
    })
    .into_iter()
    .fold((u64::MAX, 0), |(lo, hi), (l, h)| (lo.min(l), hi.max(h)));
    let buckets = (len / per_bucket.max(1)).next_power_of_two();
    let by_key = KeyBuckets::new(least, most, buckets);
    let bucket = |item: &T| by_key.of(key(item));
    let starts = bucket_starts(len, items_in, buckets + 1, bucket, threads);
    let mut sorted = vec![T::default(); len];
    place_and_sort(
        items_in(0..len),
        &bucket,
        &starts,
        &mut sorted,
        threads,
        sorter,
    );
    sorted
}

/// Keys in `least..=most` cut into `count` (a power of two) buckets of
/// equal width, in key order, by their leading bits above `least` (so
/// keys bunched in a narrow range spread over the buckets too).
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyBuckets {
    least: u64,
    shift: u32,
}

impl KeyBuckets {
    pub(crate) fn new(least: u64, most: u64, count: usize) -> KeyBuckets {
        let span_bits = 64 - (most - least).leading_zeros();
        let shift = span_bits.saturating_sub(count.trailing_zeros());
        KeyBuckets { least, shift }
    }

    /// The bucket of a key in `least..=most`: below `count`.
    pub(crate) fn of(&self, key: u64) -> usize {
        // One bucket over a 64-bit span shifts by 64: every key is in it.
        (key - self.least).checked_shr(self.shift).unwrap_or(0) as usize
    }
}

/// Fewest items a thread of [`over_ranges`] is given, so that small sorts
/// (a worker's share of a night in small clusters) stay on one thread.
const ITEMS_PER_RANGE: usize = 1 << 16;

/// `pass` over each of up to `threads` ranges of `0..len`, each on a thread
/// of its own (with one thread, here); the results in range order. For the
/// passes before a scatter (the least and most key, the counts by bucket),
/// which one thread would make while the others idle.
pub(crate) fn over_ranges<R: Send>(
    len: usize,
    threads: usize,
    pass: impl Fn(Range<usize>) -> R + Sync,
) -> Vec<R> {
    let threads = threads.clamp(1, len.div_ceil(ITEMS_PER_RANGE).max(1));
    if threads == 1 {
        return vec![pass(0..len)];
    }
    let each = len.div_ceil(threads);
    in_parallel(threads, threads, |t| {
        pass(t * each..((t + 1) * each).min(len))
    })
}

/// The items of `range` of `pieces` taken one after the other (the runs
/// of a sort, the slices a worker received), without putting them
/// together.
pub(crate) fn pieces_in<'a, T: Copy + 'a, P: AsRef<[T]>>(
    pieces: &'a [P],
    range: Range<usize>,
) -> impl Iterator<Item = T> + Clone + 'a {
    let starts = pieces.iter().scan(0, |start, piece| {
        let at = *start;
        *start += piece.as_ref().len();
        Some((at, piece.as_ref()))
    });
    starts.flat_map(move |(start, piece)| {
        let end = start + piece.len();
        let (from, to) = (range.start.clamp(start, end), range.end.clamp(start, end));
        piece[from - start..to - start].iter().copied()
    })
}

/// Where each of `buckets` buckets starts once the `len` items of
/// `items_in(0..len)` are placed by `bucket`, and (last) where they end:
/// counted on up to `threads` threads, each over a range of the items.
pub(crate) fn bucket_starts<T, I: Iterator<Item = T>>(
    len: usize,
    items_in: impl Fn(Range<usize>) -> I + Sync,
    buckets: usize,
    bucket: impl Fn(&T) -> usize + Sync,
    threads: usize,
) -> Vec<usize> {
    let counts = over_ranges(len, threads, |range| {
        let mut counts = vec![0usize; buckets + 1];
        // `for_each`, not `for`: over chained iterators (several runs, a
        // log's chunks), a fold is one tight loop per piece.
        items_in(range).for_each(|item| counts[bucket(&item) + 1] += 1);
        counts
    });
    let mut starts = vec![0usize; buckets + 1];
    for counts in counts {
        for (start, count) in starts.iter_mut().zip(counts) {
            *start += count;
        }
    }
    for b in 1..starts.len() {
        starts[b] += starts[b - 1];
    }
    starts
}

/// Sorts `items` on `threads` threads: the item whose place ends the first
/// half of the threads' share is put in its place with the lesser items
/// before it ([`slice::select_nth_unstable`], about two passes), then each
/// side is sorted on its half of the threads. In place: no memory beyond
/// the items'.
pub(crate) fn sort_on_threads<T: Ord + Send>(items: &mut [T], threads: usize) {
    if threads < 2 || items.len() < SCATTER_FROM {
        items.sort_unstable();
        return;
    }
    let low_threads = threads / 2;
    let split = items.len() * low_threads / threads;
    items.select_nth_unstable(split);
    let (low, high) = items.split_at_mut(split);
    std::thread::scope(|scope| {
        scope.spawn(|| sort_on_threads(low, low_threads));
        sort_on_threads(high, threads - low_threads);
    });
}

/// Places `items` into `out` by `bucket` (bucket `b` at
/// `starts[b]..starts[b + 1]`, from [`bucket_starts`]), then sorts each
/// bucket with `(b, bucket)` by a sorter from `sorter`. On `threads`
/// threads, each places and sorts a range of buckets holding about an
/// equal share of the items: every thread reads all the items (a streaming
/// pass) but writes only its own part of `out`, so the scatter's writes,
/// which miss the cache, are shared out and no thread writes where another
/// does.
pub(crate) fn place_and_sort<T, S>(
    items: impl Iterator<Item = T> + Clone + Send + Sync,
    bucket: &(impl Fn(&T) -> usize + Sync),
    starts: &[usize],
    out: &mut [T],
    threads: usize,
    sorter: impl Fn() -> S + Sync,
) where
    T: Copy + Send,
    S: FnMut(usize, &mut [T]),
{
    let buckets = starts.len() - 1;
    let threads = threads.clamp(1, buckets.max(1));
    // Where each thread's range of buckets ends.
    let ends: Vec<usize> = (1..=threads)
        .map(|t| match t == threads {
            true => buckets,
            false => starts
                .partition_point(|&s| s < out.len() * t / threads)
                .min(buckets),
        })
        .collect();
    let place = |range: std::ops::Range<usize>, out: &mut [T]| {
        if range.is_empty() {
            return;
        }
        let base = starts[range.start];
        let mut next: Vec<usize> = starts[range.clone()].iter().map(|&s| s - base).collect();
        items.clone().for_each(|item| {
            let b = bucket(&item);
            if range.contains(&b) {
                let at = &mut next[b - range.start];
                out[*at] = item;
                *at += 1;
            }
        });
        let mut sort = sorter();
        for b in range {
            sort(b, &mut out[starts[b] - base..starts[b + 1] - base]);
        }
    };
    // Each thread's range of buckets and its part of `out`.
    let (mut pieces, mut rest, mut first) = (Vec::new(), out, 0);
    for &end in &ends {
        let (mine, after) = std::mem::take(&mut rest).split_at_mut(starts[end] - starts[first]);
        pieces.push((first..end, mine));
        (rest, first) = (after, end);
    }
    in_chunks(&mut pieces, 1, |_, piece| {
        let (range, out) = &mut piece[0];
        place(range.clone(), out);
    });
}

/// Most items per slot of [`sort_spread_by_key`]'s counting pass before it
/// leaves the sort to another.
const MOST_PER_SLOT: u32 = 16;

/// Sorts `items` by `key` (not stably) if the keys are spread evenly, as
/// hashed ids are: a counting scatter into about two slots an item by the
/// keys' leading bits, then an insertion sort that only orders the few
/// items sharing a slot. Three passes over `items`, where a radix sort of
/// 64-bit keys makes one per byte that varies. Gives false, leaving
/// `items` as they were, if some slot would hold more than
/// [`MOST_PER_SLOT`] items (bunched or repeated keys), for the caller to
/// sort otherwise. `scratch` and `counts` are kept between calls.
pub(crate) fn sort_spread_by_key<T: Copy>(
    items: &mut [T],
    key: impl Fn(&T) -> u64,
    scratch: &mut Vec<T>,
    counts: &mut Vec<u32>,
) -> bool {
    let Some((least, most)) = items
        .iter()
        .map(&key)
        .fold(None, |range: Option<(u64, u64)>, k| match range {
            None => Some((k, k)),
            Some((lo, hi)) => Some((lo.min(k), hi.max(k))),
        })
    else {
        return true;
    };
    let slot_bits = (2 * items.len()).next_power_of_two().trailing_zeros();
    let span_bits = 64 - (most - least).leading_zeros();
    let shift = span_bits.saturating_sub(slot_bits);
    let slot = |item: &T| ((key(item) - least) >> shift) as usize;
    if !sort_by_slot(items, 1 << slot_bits, slot, MOST_PER_SLOT, scratch, counts) {
        return false;
    }
    // Items are in order of their slots; order within each.
    for at in 1..items.len() {
        let item = items[at];
        let k = key(&item);
        let mut to = at;
        while to > 0 && key(&items[to - 1]) > k {
            items[to] = items[to - 1];
            to -= 1;
        }
        items[to] = item;
    }
    true
}

/// Sorts `items` by `slot` (each below `slots`), stably, by counting
/// through `scratch`, unless some slot would hold more than `most` items:
/// then gives false and leaves them as they were. A bucket small enough for
/// the cache sorts in two passes over it; `scratch` and `counts` are kept
/// between calls, so that sorting bucket after bucket allocates nothing.
pub(crate) fn sort_by_slot<T: Copy>(
    items: &mut [T],
    slots: usize,
    slot: impl Fn(&T) -> usize,
    most: u32,
    scratch: &mut Vec<T>,
    counts: &mut Vec<u32>,
) -> bool {
    counts.clear();
    counts.resize(slots + 1, 0);
    for item in items.iter() {
        counts[slot(item) + 1] += 1;
    }
    let mut crowded = false;
    for at in 1..counts.len() {
        crowded |= counts[at] > most;
        counts[at] += counts[at - 1];
    }
    if crowded {
        return false;
    }
    scratch.clear();
    scratch.extend_from_slice(items);
    for item in scratch.iter() {
        let at = &mut counts[slot(item)];
        items[*at as usize] = *item;
        *at += 1;
    }
    true
}

/// An `i64`'s bits as a `u64` in the same order.
pub(crate) fn ordered(key: i64) -> u64 {
    (key as u64) ^ (1 << 63)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_buckets_stay_below_their_count_over_any_span() {
        for (least, most) in [(0, u64::MAX), (5, 5), (1 << 40, (1 << 40) + 999)] {
            for count in [1, 2, 64, 1 << 20] {
                let buckets = KeyBuckets::new(least, most, count);
                let keys = [least, most, least + (most - least) / 2];
                let of: Vec<usize> = keys.iter().map(|&k| buckets.of(k)).collect();
                assert!(
                    of.iter().all(|&b| b < count),
                    "{least}..={most} in {count}: {of:?}"
                );
                assert!(of[0] <= of[2] && of[2] <= of[1], "in key order: {of:?}");
            }
        }
    }

    /// A xorshift generator of spread keys.
    fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    #[test]
    fn a_sort_on_several_threads_sorts_as_one_does() {
        // Past SCATTER_FROM, so that the threads split it; repeated keys too.
        let mut next = xorshift(7);
        for len in [10, SCATTER_FROM * 3 + 5] {
            let items: Vec<[u64; 2]> = (0..len).map(|_| [next() % 1000, next()]).collect();
            let mut expected = items.clone();
            expected.sort_unstable();
            for threads in [1, 2, 3, 4] {
                let mut sorted = items.clone();
                sort_on_threads(&mut sorted, threads);
                assert!(sorted == expected, "{len} items on {threads} threads");
            }
        }
    }

    #[test]
    fn spread_keys_sort_by_counting_and_bunched_ones_are_left_alone() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1du64);
        let (mut scratch, mut counts) = (Vec::new(), Vec::new());
        let key = |&(k, _): &(u64, u32)| k;
        // Spread: hashed keys, and consecutive ones (a bucket of small ids).
        let spread: Vec<Vec<(u64, u32)>> = vec![
            (0..1024).map(|i| (next(), i)).collect(),
            (0..1000).map(|i| (u64::from(5000 - i), i)).collect(),
            (0..3).map(|i| (next(), i)).collect(),
            Vec::new(),
        ];
        for items in spread {
            let mut sorted = items.clone();
            assert!(sort_spread_by_key(
                &mut sorted,
                key,
                &mut scratch,
                &mut counts
            ));
            let mut expected = items;
            expected.sort_unstable();
            assert!(sorted == expected);
        }
        // Bunched: one key repeated, or most keys in a sliver of the range.
        let bunched: Vec<Vec<(u64, u32)>> = vec![
            (0..100).map(|i| (7, i)).collect(),
            (0..1000)
                .map(|i| (u64::from(i % 50), i))
                .chain([(u64::MAX, 1000)])
                .collect(),
        ];
        for items in bunched {
            let mut left = items.clone();
            assert!(!sort_spread_by_key(
                &mut left,
                key,
                &mut scratch,
                &mut counts
            ));
            assert!(left == items);
        }
    }

    #[test]
    fn pieces_read_by_range_and_counted_on_several_threads_match_one_pass() {
        let mut next = xorshift(0x5851_f42d_4c95_7f2du64);
        // Uneven pieces, empty ones among them, 200k items in all.
        let pieces: Vec<Vec<u64>> = [0, 70_000, 1, 0, 64_999, 65_000]
            .iter()
            .map(|&n| (0..n).map(|_| next()).collect())
            .collect();
        let all: Vec<u64> = pieces.concat();
        for range in [
            0..0,
            0..all.len(),
            3..70_002,
            70_000..70_001,
            135_000..all.len(),
        ] {
            let read: Vec<u64> = pieces_in(&pieces, range.clone()).collect();
            assert!(read == all[range.clone()], "{range:?}");
        }
        let bucket = |&k: &u64| (k >> 54) as usize;
        let mut expected = vec![0usize; 1025];
        for k in &all {
            expected[bucket(k) + 1] += 1;
        }
        for b in 1..expected.len() {
            expected[b] += expected[b - 1];
        }
        for threads in [1, 2, 3, 8] {
            let items_in = |range| pieces_in(&pieces, range);
            let starts = bucket_starts(all.len(), items_in, 1024, bucket, threads);
            assert!(starts == expected, "{threads} threads");
            let ranges = over_ranges(all.len(), threads, |range| range);
            assert_eq!(ranges.len(), threads.min(4), "{threads} threads");
            assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
            assert_eq!(
                (ranges[0].start, ranges[ranges.len() - 1].end),
                (0, all.len())
            );
        }
    }

    #[test]
    fn keys_spread_bunched_and_repeated_sort_as_a_comparison_sort_would() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15u64);
        let n = 300_000;
        let families: Vec<Vec<(i64, u32)>> = vec![
            // Spread over the i64 range, negative ones among them.
            (0..n).map(|i| (next() as i64, i)).collect(),
            // Bunched: small sequential ids, and one far outlier.
            (0..n)
                .map(|i| (i64::from((n - i) % 5000), i))
                .chain([(i64::MAX, n)])
                .collect(),
            // All equal; and the extremes only.
            (0..n).map(|i| (7, i)).collect(),
            (0..n)
                .map(|i| (if i % 2 == 0 { i64::MIN } else { i64::MAX }, i))
                .collect(),
            // Too few to scatter.
            (0..1000).map(|i| (next() as i64, i)).collect(),
        ];
        for items in families {
            let mut expected = items.clone();
            expected.sort_unstable();
            for per_bucket in [16, 1024] {
                let sorter = || |_: usize, b: &mut [(i64, u32)]| b.sort_unstable();
                let key = |&(k, _): &(i64, u32)| ordered(k);
                let found = scatter_sorted_runs(vec![items.clone()], key, per_bucket, 1, sorter);
                assert!(found == expected);
                // Cut into runs, on several threads, each placing and
                // sorting its own range of buckets.
                for threads in [2, 3, 7] {
                    let runs: Vec<Vec<_>> = items.chunks(9_000).map(<[_]>::to_vec).collect();
                    let found = scatter_sorted_runs(runs, key, per_bucket, threads, sorter);
                    assert!(found == expected, "{threads} threads");
                }
            }
        }
    }
}
