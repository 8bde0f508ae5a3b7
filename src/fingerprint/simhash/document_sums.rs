//! A document's sums: its feature hashes added a chunk at a time
//! ([`HashChunks`]) to the fingerprint's per-bit sums and, when asked, the
//! sketch's ([`Sums`]), under term frequency or log weights
//! ([`super::sums`] computes each).

use std::cell::RefCell;

use super::sketch::{log_weighted_sketch, Sketch, SketchCounts};
use super::sums::{log_weighted_simhash, sign_bits, BitCounts, DistinctHashes};

/// The simhash of a document's feature hashes and how many there were,
/// under term-frequency (`log_weights == false`) or log weights.
#[cfg(test)]
pub(super) fn simhash_of(hashes: &[u64], log_weights: bool) -> (u64, u32) {
    with_sums(log_weights, false, |sums| {
        sums.add(hashes);
        sums.simhash()
    })
}

/// Runs `f` with empty sums of one document's features: the thread's own
/// table of distinct hashes under log weights. With `sketch`, the sums
/// also give the document's sketch.
pub(super) fn with_sums<R>(log_weights: bool, sketch: bool, f: impl FnOnce(&mut Sums) -> R) -> R {
    if !log_weights {
        let sketch = sketch.then(SketchCounts::default);
        return f(&mut Sums::TermFrequency(BitCounts::default(), sketch));
    }
    DISTINCT.with(|distinct| {
        let mut distinct = distinct.borrow_mut();
        distinct.clear();
        f(&mut Sums::Log(&mut distinct, sketch))
    })
}

thread_local! {
    /// One table per thread, reused by every document it fingerprints.
    static DISTINCT: RefCell<DistinctHashes> = RefCell::new(DistinctHashes::default());
}

/// The per-bit sums of one document's feature hashes, added a slice at a
/// time (see [`HashChunks`]).
// One at a time on a thread's stack: a box per document would buy nothing.
#[allow(clippy::large_enum_variant)]
pub(super) enum Sums<'t> {
    /// The counts, and the sketch's when one is wanted.
    TermFrequency(BitCounts, Option<SketchCounts>),
    /// The distinct hashes, and whether a sketch is wanted.
    Log(&'t mut DistinctHashes, bool),
}

impl Sums<'_> {
    pub(super) fn add(&mut self, hashes: &[u64]) {
        match self {
            Sums::TermFrequency(counts, sketch) => {
                hashes.iter().for_each(|&h| counts.add(h));
                if let Some(sketch) = sketch {
                    hashes.iter().for_each(|&h| sketch.add(h));
                }
            }
            Sums::Log(distinct, _) => distinct.insert_all(hashes),
        }
    }

    /// How many times `hash` was added, where the sums keep count (log
    /// weights keep each distinct hash's).
    pub(super) fn count_of(&self, hash: u64) -> Option<u32> {
        match self {
            Sums::TermFrequency(..) => None,
            Sums::Log(distinct, _) => Some(distinct.count_of(hash)),
        }
    }

    /// The simhash of the hashes added, and how many there were.
    pub(super) fn simhash(&mut self) -> (u64, u32) {
        match self {
            Sums::TermFrequency(counts, _) => {
                let sums = counts.signed_sums();
                (sign_bits(sums.iter().map(|&s| s as f64)), counts.count())
            }
            Sums::Log(distinct, _) => log_weighted_simhash(distinct),
        }
    }

    /// The sketch of the hashes added, if one was wanted.
    pub(super) fn sketch(&mut self) -> Option<Sketch> {
        match self {
            Sums::TermFrequency(_, sketch) => sketch.as_mut().map(SketchCounts::sketch),
            Sums::Log(distinct, true) => Some(log_weighted_sketch(distinct.entries())),
            Sums::Log(_, false) => None,
        }
    }
}

/// Hashes on their way to [`Sums`], gathered in a buffer of at most
/// [`HashChunks::LEN`] and added whenever it fills.
///
/// Gathered whole, a large page's hashes would grow each worker's buffer,
/// doubling, and filling it anew would fault its memory in again. Chunks
/// stay in the second level of cache however long the page.
pub(super) struct HashChunks<'a, 't> {
    chunk: &'a mut Vec<u64>,
    sums: &'a mut Sums<'t>,
}

impl<'a, 't> HashChunks<'a, 't> {
    /// Hashes in a chunk: 256 kB.
    pub(super) const LEN: usize = 1 << 15;

    pub(super) fn new(chunk: &'a mut Vec<u64>, sums: &'a mut Sums<'t>) -> Self {
        chunk.clear();
        HashChunks { chunk, sums }
    }

    /// How many times `hash` was added so far, where the sums keep count.
    pub(super) fn count_of(&mut self, hash: u64) -> Option<u32> {
        self.flush();
        self.sums.count_of(hash)
    }

    /// Adds the hashes still in the buffer to the sums.
    pub(super) fn flush(&mut self) {
        self.sums.add(self.chunk);
        self.chunk.clear();
    }
}

impl Extend<u64> for HashChunks<'_, '_> {
    /// Hashes that fit a chunk whole (by their upper bound) go into it by
    /// `Vec`'s own loop, the chunk emptied first if they would overflow
    /// it: taken `room` at a time, the window hashes' loop is slower.
    /// Longer runs go a chunk at a time.
    fn extend<I: IntoIterator<Item = u64>>(&mut self, hashes: I) {
        let mut hashes = hashes.into_iter();
        if let (_, Some(upper)) = hashes.size_hint() {
            if upper <= Self::LEN {
                if upper > Self::LEN - self.chunk.len() {
                    self.flush();
                }
                self.chunk.extend(hashes);
                return;
            }
        }
        loop {
            let room = Self::LEN - self.chunk.len();
            self.chunk.extend(hashes.by_ref().take(room));
            if self.chunk.len() < Self::LEN {
                return;
            }
            self.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::SplitMix64;

    /// The algorithm as defined, with nothing clever: one float sum per
    /// bit, and log weights over the distinct hashes in hash order.
    fn defined_simhash(hashes: &[u64], log_weights: bool) -> u64 {
        let mut sums = [0.0f64; 64];
        let mut add = |hash: u64, weight: f64| {
            for (i, sum) in sums.iter_mut().enumerate() {
                *sum += if (hash >> i) & 1 == 1 {
                    weight
                } else {
                    -weight
                };
            }
        };
        if log_weights {
            let mut sorted = hashes.to_vec();
            sorted.sort_unstable();
            for run in sorted.chunk_by(|a, b| a == b) {
                add(run[0], 1.0 + (run.len() as f64).ln());
            }
        } else {
            hashes.iter().for_each(|&h| add(h, 1.0));
        }
        sign_bits(sums.into_iter())
    }

    /// Documents of every shape the shortcuts could get wrong: few features
    /// (sums exactly zero), many repeats of few features, a vocabulary
    /// small enough that many counts exceed the byte counters, pairs of
    /// complementary hashes whose log weights cancel exactly, and more
    /// distinct hashes than the table's first size.
    #[test]
    fn fast_sums_give_the_defined_bits() {
        let mut rng = SplitMix64::new(13);
        for case in 0..3000 {
            let len = match case % 5 {
                0 => (rng.next_u64() % 8) as usize,
                1 => (rng.next_u64() % 300) as usize,
                2 => 1000 + (rng.next_u64() % 5000) as usize,
                _ => (rng.next_u64() % 3000) as usize,
            };
            let vocabulary = match case % 4 {
                0 => 1 + rng.next_u64() % 4,
                1 => 1 + rng.next_u64() % 50,
                _ => u64::MAX,
            };
            let words: Vec<u64> = (0..vocabulary.min(4096)).map(|_| rng.next_u64()).collect();
            let mut hashes: Vec<u64> = (0..len)
                .map(|_| match vocabulary {
                    u64::MAX => rng.next_u64(),
                    v => words[(rng.next_u64() % v) as usize],
                })
                .collect();
            if case % 7 == 0 {
                // Each hash beside its complement, as often: every bit's sum is zero.
                let complements: Vec<u64> = hashes.iter().map(|h| !h).collect();
                hashes.extend(complements);
            }
            if case % 11 == 0 {
                // Bit 0's weights cancel in the reals, 2 (1 + ln 2) = (1 +
                // ln 4) + 1, but not always in floats: the fast sum and the
                // defined one round differently, a hair either side of zero.
                let set = |h: u64, bit: bool| (h & !1) | u64::from(bit);
                let (a, b, c, d) = (
                    rng.next_u64(),
                    rng.next_u64(),
                    rng.next_u64(),
                    rng.next_u64(),
                );
                hashes = [set(a, true); 2]
                    .into_iter()
                    .chain([set(b, true); 2])
                    .chain([set(c, false); 4])
                    .chain([set(d, false)])
                    .collect();
            }
            for log_weights in [false, true] {
                assert_eq!(
                    simhash_of(&hashes, log_weights),
                    (defined_simhash(&hashes, log_weights), hashes.len() as u32),
                    "case {case}, log weights {log_weights}, {} hashes",
                    hashes.len()
                );
            }
        }
    }

    /// Hashes fed in pieces of every size, through iterators of known and
    /// unknown length, sum as they do all at once, and the chunk never
    /// outgrows its buffer.
    #[test]
    fn hashes_added_in_chunks_sum_as_all_at_once() {
        let mut rng = SplitMix64::new(29);
        for (len, vocabulary) in [
            (3 * HashChunks::LEN + 17, u64::MAX),
            (2 * HashChunks::LEN + 5, 5000),
            (HashChunks::LEN, 3),
        ] {
            let words: Vec<u64> = (0..vocabulary.min(5000)).map(|_| rng.next_u64()).collect();
            let hashes: Vec<u64> = (0..len)
                .map(|_| match vocabulary {
                    u64::MAX => rng.next_u64(),
                    v => words[(rng.next_u64() % v) as usize],
                })
                .collect();
            for log_weights in [false, true] {
                let mut chunk = Vec::with_capacity(HashChunks::LEN);
                let summed = with_sums(log_weights, false, |sums| {
                    let mut chunks = HashChunks::new(&mut chunk, sums);
                    let (mut rest, mut piece) = (&hashes[..], 1);
                    while !rest.is_empty() {
                        let (now, later) = rest.split_at(piece.min(rest.len()));
                        match piece % 2 {
                            0 => chunks.extend(now.iter().copied()),
                            _ => chunks.extend(now.iter().copied().filter(|_| true)),
                        }
                        (rest, piece) = (later, 3 * piece + 1);
                    }
                    chunks.flush();
                    sums.simhash()
                });
                assert_eq!(
                    summed,
                    (defined_simhash(&hashes, log_weights), len as u32),
                    "{len} hashes, log weights {log_weights}"
                );
                assert_eq!(chunk.capacity(), HashChunks::LEN);
            }
        }
    }
}
