//! The sketch: [`SKETCH_BITS`] more simhash bits of a document's features,
//! beside its 64, for `match --verify` (a pair's distance over all 256
//! bits separates Jaccard 0.9 from 0.75 where 64 bits cannot). More
//! bits do not pay: sketches of up to 960 bits moved no point of the
//! quality mode's recall and precision on the real sets, where how the
//! features' cosine follows Jaccard is the limit, not the sketch's noise.
//!
//! Defined, as the fingerprint is, so that it never moves (scheme v7 pins
//! it with golden values):
//! 1. each feature's xxh3-64 hash `h` (step 4 of the fingerprint) gives
//!    three words `w_j = mix(h + (j + 1) * 0x9E3779B97F4A7C15)`, `j = 0, 1,
//!    2`, where `mix` is SplitMix64's finaliser: independent bits for every
//!    feature, with no second pass over the text;
//! 2. sketch bit `64 j + i` sums, over the distinct features, the
//!    feature's weight when bit `i` of `w_j` is set and minus it otherwise;
//!    the weight is the fingerprint's (term frequency, or `1 + ln(count)`);
//! 3. under log weights the sum is taken count by count, in ascending
//!    count: for each count `c`, `(1 + ln c)` times the exact integer sum
//!    of the features seen `c` times. One order, so one result everywhere,
//!    with no second summation for bits near zero (the fingerprint's own
//!    order, by hash, needs one);
//! 4. the bit is set when its sum is positive. A document without
//!    features has sketch 0.

use super::sums::{log_weight, sign_bits, BitCounts};
pub use crate::io::parquet::Sketch;
use crate::random::{mix, GOLDEN};

/// Words of the sketch.
pub const SKETCH_WORDS: usize = std::mem::size_of::<Sketch>() / 8;

/// Bits of the sketch.
pub const SKETCH_BITS: usize = 64 * SKETCH_WORDS;

/// The sketch words of a feature hash (step 1).
#[inline(always)]
fn sketch_words(hash: u64) -> Sketch {
    std::array::from_fn(|j| mix(hash.wrapping_add((j as u64 + 1).wrapping_mul(GOLDEN))))
}

/// The sketch's bits counted occurrence by occurrence, under term
/// frequency: the integer sums of step 2.
#[derive(Default)]
pub(super) struct SketchCounts([BitCounts; SKETCH_WORDS]);

impl SketchCounts {
    #[inline]
    pub(super) fn add(&mut self, hash: u64) {
        for (counts, word) in self.0.iter_mut().zip(sketch_words(hash)) {
            counts.add(word);
        }
    }

    pub(super) fn sketch(&mut self) -> Sketch {
        std::array::from_fn(|j| {
            let sums = self.0[j].signed_sums();
            sign_bits(sums.iter().map(|&s| s as f64))
        })
    }
}

/// Counts below this are grouped, each count's features counted in
/// integers; the rarer higher counts are sorted.
const GROUPED_COUNTS: usize = 16;

/// The sketch of distinct features and their counts under log weights
/// (step 3).
pub(super) fn log_weighted_sketch(entries: impl Iterator<Item = (u64, u32)>) -> Sketch {
    let mut groups: Vec<SketchCounts> = (0..GROUPED_COUNTS).map(|_| Default::default()).collect();
    let mut frequent: Vec<(u32, u64)> = Vec::new();
    for (hash, count) in entries {
        match groups.get_mut(count as usize) {
            Some(group) => group.add(hash),
            None => frequent.push((count, hash)),
        }
    }
    let mut sums = [0.0f64; SKETCH_BITS];
    let mut add_group = |count: u32, group: &mut SketchCounts| {
        let weight = log_weight(count);
        for (j, counts) in group.0.iter_mut().enumerate() {
            let signed = counts.signed_sums();
            for (sum, s) in sums[64 * j..64 * (j + 1)].iter_mut().zip(signed) {
                *sum += weight * s as f64;
            }
        }
    };
    for (count, group) in groups.iter_mut().enumerate() {
        if group.0[0].count() > 0 {
            add_group(count as u32, group);
        }
    }
    frequent.sort_unstable();
    for run in frequent.chunk_by(|a, b| a.0 == b.0) {
        let mut group = SketchCounts::default();
        run.iter().for_each(|&(_, hash)| group.add(hash));
        add_group(run[0].0, &mut group);
    }
    std::array::from_fn(|j| sign_bits(sums[64 * j..64 * (j + 1)].iter().copied()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Step 2 as defined: one float sum per bit, each distinct feature's
    /// weight added in ascending count (step 3).
    fn defined_sketch(hashes: &[u64], log_weights: bool) -> Sketch {
        let mut sorted = hashes.to_vec();
        sorted.sort_unstable();
        let mut distinct: Vec<(u32, u64)> = sorted
            .chunk_by(|a, b| a == b)
            .map(|run| (run.len() as u32, run[0]))
            .collect();
        distinct.sort_unstable();
        let mut sums = [0.0f64; SKETCH_BITS];
        for run in distinct.chunk_by(|a, b| a.0 == b.0) {
            let count = run[0].0;
            let mut signed = [0i64; SKETCH_BITS];
            for &(_, hash) in run {
                for (j, word) in sketch_words(hash).into_iter().enumerate() {
                    for i in 0..64 {
                        signed[64 * j + i] += if (word >> i) & 1 == 1 { 1 } else { -1 };
                    }
                }
            }
            let weight = match log_weights {
                true => 1.0 + f64::from(count).ln(),
                false => f64::from(count),
            };
            for (sum, s) in sums.iter_mut().zip(signed) {
                *sum += weight * s as f64;
            }
        }
        std::array::from_fn(|j| {
            (0..64).fold(0, |acc, i| acc | (u64::from(sums[64 * j + i] > 0.0) << i))
        })
    }

    fn counted(hashes: &[u64], log_weights: bool) -> Sketch {
        match log_weights {
            false => {
                let mut counts = SketchCounts::default();
                hashes.iter().for_each(|&h| counts.add(h));
                counts.sketch()
            }
            true => {
                let mut sorted = hashes.to_vec();
                sorted.sort_unstable();
                let entries: Vec<(u64, u32)> = sorted
                    .chunk_by(|a, b| a == b)
                    .map(|run| (run[0], run.len() as u32))
                    .collect();
                log_weighted_sketch(entries.into_iter())
            }
        }
    }

    #[test]
    fn counted_sketches_give_the_defined_bits() {
        let mut state = 7u64;
        let mut next = || {
            state = state.wrapping_add(GOLDEN);
            mix(state)
        };
        for case in 0..400 {
            let len = (next() % [5, 300, 3000][case % 3]) as usize;
            let vocabulary = [3, 40, 1 << 20][case % 3 / 2 + case % 2];
            let words: Vec<u64> = (0..vocabulary.min(4096)).map(|_| next()).collect();
            let hashes: Vec<u64> = (0..len)
                .map(|_| words[(next() % vocabulary.min(4096)) as usize])
                .collect();
            for log_weights in [false, true] {
                assert_eq!(
                    counted(&hashes, log_weights),
                    defined_sketch(&hashes, log_weights),
                    "case {case}, log weights {log_weights}"
                );
            }
        }
        assert_eq!(counted(&[], true), [0; SKETCH_WORDS]);
        assert_eq!(counted(&[], false), [0; SKETCH_WORDS]);
    }

    #[test]
    fn the_sketch_words_are_pinned() {
        // SplitMix64's first output for seed 0 is mix(GOLDEN).
        assert_eq!(sketch_words(0)[0], 0xE220_A839_7B1D_CDAF);
    }
}
