//! Sorting large arrays in two passes over memory.
//!
//! A radix sort of 64-bit keys makes eight passes over its array, each
//! reading and writing all of it: for arrays far larger than the cache
//! that is most of its time. One counting scatter by the keys' leading
//! bits into buckets small enough to sort in the cache, then each bucket
//! on its own, reads and writes the array twice.

/// Below this many items, sorting whole is as fast.
const SCATTER_FROM: usize = 1 << 16;

/// `items` sorted by `key`: a counting scatter by the leading bits of `key`
/// above the least key (so keys bunched in a narrow range spread over the
/// buckets too) into buckets of about `per_bucket` items, then
/// `sort_bucket` on each bucket, which must sort by `key` (and may break
/// its ties).
pub fn scatter_sorted<T: Copy + Default>(
    items: Vec<T>,
    key: impl Fn(&T) -> u64,
    per_bucket: usize,
    sort_bucket: impl FnMut(&mut [T]),
) -> Vec<T> {
    scatter_sorted_runs(vec![items], key, per_bucket, sort_bucket)
}

/// [`scatter_sorted`] of the items of several runs, as one: the scatter
/// reads each run where it is, so they need not be put together first.
pub fn scatter_sorted_runs<T: Copy + Default>(
    mut runs: Vec<Vec<T>>,
    key: impl Fn(&T) -> u64,
    per_bucket: usize,
    mut sort_bucket: impl FnMut(&mut [T]),
) -> Vec<T> {
    let len: usize = runs.iter().map(Vec::len).sum();
    if len < SCATTER_FROM {
        let mut items = match runs.len() {
            1 => runs.pop().unwrap_or_default(),
            _ => runs.concat(),
        };
        sort_bucket(&mut items);
        return items;
    }
    let items = || runs.iter().flatten();
    let (least, most) = items()
        .map(&key)
        .fold((u64::MAX, 0), |(lo, hi), k| (lo.min(k), hi.max(k)));
    let buckets = (len / per_bucket.max(1)).next_power_of_two();
    let span_bits = 64 - (most - least).leading_zeros();
    let shift = span_bits.saturating_sub(buckets.trailing_zeros());
    let bucket = |item: &T| ((key(item) - least) >> shift) as usize;
    let mut starts = vec![0usize; buckets + 2];
    // `for_each`, not `for`: over several runs, a fold is one tight loop
    // per run.
    items().for_each(|item| starts[bucket(item) + 1] += 1);
    for b in 1..starts.len() {
        starts[b] += starts[b - 1];
    }
    let mut next = starts.clone();
    let mut sorted = vec![T::default(); len];
    items().for_each(|item| {
        let at = &mut next[bucket(item)];
        sorted[*at] = *item;
        *at += 1;
    });
    drop(runs);
    for bounds in starts.windows(2) {
        sort_bucket(&mut sorted[bounds[0]..bounds[1]]);
    }
    sorted
}

/// An `i64`'s bits as a `u64` in the same order.
pub fn ordered(key: i64) -> u64 {
    (key as u64) ^ (1 << 63)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_spread_bunched_and_repeated_sort_as_a_comparison_sort_would() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
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
                let items = items.clone();
                let sort = |b: &mut [(i64, u32)]| b.sort_unstable();
                let found = scatter_sorted(items, |&(k, _)| ordered(k), per_bucket, sort);
                assert!(found == expected);
            }
        }
    }
}
