//! Step 5 of the algorithm: the per-bit weighted sums of a document's
//! feature hashes, and their sign bits.
//!
//! Term-frequency weights are integers, so their sums are counted exactly in
//! integers, in any order. Log weights (`1 + ln(count)` per distinct feature)
//! are floats, and a float sum depends on its order: the algorithm defines it
//! as the left-to-right sum over the distinct features in the order of their
//! hashes, so that every run gives the same bits. That definition is kept to
//! the bit, but computed faster (sorting every document's hashes and adding
//! 64 floats per feature was most of the time of character 5-grams): the
//! distinct features are counted in a hash table, the features of each count
//! (all those seen once, all those seen twice, ...) share one weight, so
//! their bits are counted in integers and each count's total multiplied by
//! its weight once. That sum differs from the defined one by rounding alone,
//! which is bounded: a bit whose sum is further from zero than the bound has
//! the defined sign; a bit within it (a sum that is exactly zero, in
//! practice) is summed again the defined way.

use std::cell::RefCell;

use super::sketch::{log_weighted_sketch, Sketch, SketchCounts};
use crate::exec::parallel::prefetch;

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

    /// The simhash of the hashes added, and how many there were.
    pub(super) fn simhash(&mut self) -> (u64, u32) {
        match self {
            Sums::TermFrequency(counts, _) => {
                let sums = counts.signed_sums();
                (sign_bits(sums.iter().map(|&s| s as f64)), counts.count)
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

/// Counts below this are grouped and counted in integers: features of one
/// count share one weight.
const GROUPED_COUNTS: usize = 32;

fn log_weighted_simhash(distinct: &DistinctHashes) -> (u64, u32) {
    let n = distinct.occurrences;
    // Per bit, sum over counts c of weight(c) times (features of count c
    // with the bit set minus those without), the products exact integers
    // times one float each; the rare features seen more often as floats.
    let mut groups: [BitCounts; GROUPED_COUNTS] = std::array::from_fn(|_| BitCounts::default());
    let mut frequent = WeightedBits::default();
    let mut terms = 0u64;
    for (hash, count) in distinct.entries() {
        match groups.get_mut(count as usize) {
            Some(group) => group.add(hash),
            None => {
                frequent.add(hash, log_weight(count));
                terms += 1;
            }
        }
    }
    let mut fast = [0.0f64; 64];
    for (count, group) in groups.iter_mut().enumerate().filter(|(_, g)| g.count > 0) {
        let weight = log_weight(count as u32);
        for (sum, signed) in fast.iter_mut().zip(group.signed_sums()) {
            *sum += weight * signed as f64;
        }
        terms += 1;
    }
    for (sum, f) in fast.iter_mut().zip(frequent.0) {
        *sum += f;
    }
    let bound = rounding_bound(n, terms);
    let mut simhash = sign_bits(fast.iter().copied());
    let unsure: Vec<usize> = (0..64).filter(|&b| fast[b].abs() <= bound).collect();
    if !unsure.is_empty() {
        let defined = distinct.sums_in_hash_order(&unsure);
        for (&bit, sum) in unsure.iter().zip(defined) {
            simhash = (simhash & !(1 << bit)) | (u64::from(sum > 0.0) << bit);
        }
    }
    (simhash, n)
}

/// The weight of a feature seen `count` times under log weights.
pub(super) fn log_weight(count: u32) -> f64 {
    1.0 + f64::from(count).ln()
}

/// A bound on how far both the defined sum and the fast sum of one bit can
/// be from the exact real sum of the same weights, for `n` occurrences
/// summed by the fast way in `terms` float terms.
///
/// With unit roundoff `u = 2^-53`, summing `m` terms left to right errs by
/// at most `(m - 1) u / (1 - (m - 1) u)` times the sum of their magnitudes,
/// and a product by `u` times its magnitude. The defined sum has at most
/// `n` terms, each weight at most its count (`1 + ln c <= c`), so its
/// magnitudes sum to at most `n`: it errs by about `n u n`. The fast sum's
/// terms are products of a weight and an exact integer, their magnitudes
/// again summing to at most `n`: it errs by about `(terms + 1) u n`. Four
/// times the sum of both, with the counts padded, covers them: a fast sum
/// further from zero than this has the sign of the exact sum, which is then
/// further from zero than the defined sum's error, so the defined sum has
/// that sign too.
fn rounding_bound(n: u32, terms: u64) -> f64 {
    let n = f64::from(n) + 4.0;
    let terms = n + terms as f64 + 4.0;
    4.0 * terms * f64::EPSILON * n
}

/// The sign bits of 64 per-bit sums: bit `i` set when sum `i` is positive.
pub(super) fn sign_bits(sums: impl Iterator<Item = f64>) -> u64 {
    sums.enumerate()
        .fold(0u64, |acc, (i, s)| acc | (u64::from(s > 0.0) << i))
}

/// How many of the hashes added have each bit set, counted exactly.
///
/// Eight bits at a time: `(h >> j) & 0x0101..01` puts bits `j, j+8, ...,
/// j+56` in the eight bytes of a word, and eight such words add up a byte
/// counter per bit with eight shifts, masks and adds per hash (instead of
/// 64). Bytes hold 255, so they are emptied into 32-bit totals every 255
/// hashes.
pub(super) struct BitCounts {
    bytes: [u64; 8],
    in_bytes: u32,
    ones: [u32; 64],
    count: u32,
}

impl Default for BitCounts {
    fn default() -> Self {
        BitCounts {
            bytes: [0; 8],
            in_bytes: 0,
            ones: [0; 64],
            count: 0,
        }
    }
}

pub(super) const LOW_BIT_OF_EACH_BYTE: u64 = 0x0101_0101_0101_0101;

impl BitCounts {
    #[inline]
    pub(super) fn add(&mut self, hash: u64) {
        for (j, lane) in self.bytes.iter_mut().enumerate() {
            *lane += (hash >> j) & LOW_BIT_OF_EACH_BYTE;
        }
        self.in_bytes += 1;
        self.count += 1;
        if self.in_bytes == 255 {
            self.empty_bytes();
        }
    }

    /// How many hashes were added.
    pub(super) fn count(&self) -> u32 {
        self.count
    }

    fn empty_bytes(&mut self) {
        for (j, lane) in self.bytes.iter_mut().enumerate() {
            for k in 0..8 {
                self.ones[8 * k + j] += ((*lane >> (8 * k)) & 0xff) as u32;
            }
            *lane = 0;
        }
        self.in_bytes = 0;
    }

    /// Per bit, the number of hashes with the bit set minus those without.
    pub(super) fn signed_sums(&mut self) -> [i64; 64] {
        self.empty_bytes();
        let n = i64::from(self.count);
        std::array::from_fn(|i| 2 * i64::from(self.ones[i]) - n)
    }
}

/// Per-bit float sums: `+w` where a hash has the bit set, `-w` where not.
struct WeightedBits([f64; 64]);

impl Default for WeightedBits {
    fn default() -> Self {
        WeightedBits([0.0; 64])
    }
}

impl WeightedBits {
    /// The sign bit of `weight` flipped for the zeros, without a branch, so
    /// that the 64 independent sums vectorise.
    #[inline]
    fn add(&mut self, hash: u64, weight: f64) {
        let weight = weight.to_bits();
        for (i, sum) in self.0.iter_mut().enumerate() {
            let zero = !(hash >> i) & 1;
            *sum += f64::from_bits(weight ^ (zero << 63));
        }
    }
}

/// The distinct hashes of one document and their counts: an open-addressing
/// table (the hashes are xxh3 outputs, uniform already, so their top bits
/// are the slot) whose slots belong to the current document when stamped
/// with its number, so that clearing it costs nothing.
///
/// A slot holds only its stamp and the index of its entry; the hashes and
/// counts lie apart, dense, in the order first seen. So a page's slots
/// (8 bytes each, for a page of 2,000 grams 32 kB) stay in the first level
/// of cache, and the entries are read in order: with hash and count in the
/// slots (16 bytes each), reading the entries back through the slots would
/// cost a cache miss each.
///
/// The table is as large as the largest document's features need, but each
/// document uses only the first slots its own need (`mask`): after one huge
/// page, a small page's features stay in a table that fits the cache
/// rather than scattered over far more memory than the cache holds.
#[derive(Default)]
pub(super) struct DistinctHashes {
    slots: Vec<Slot>,
    /// The hashes counted for the current document.
    occurrences: u32,
    /// The slots the current document uses, less one (a power of two).
    mask: usize,
    document: u32,
    /// The current document's distinct hashes, in the order first seen...
    hashes: Vec<u64>,
    /// ...and how many times each was seen.
    counts: Vec<u32>,
}

#[derive(Clone, Copy, Default)]
struct Slot {
    document: u32,
    /// The index of the slot's hash in `hashes` and `counts`.
    entry: u32,
}

const MIN_SLOTS: usize = 1 << 10;

/// A hash's first slot: the hashes are xxh3 outputs, uniform already, so
/// their upper bits serve.
#[inline]
fn home(hash: u64, mask: usize) -> usize {
    (hash >> 32) as usize & mask
}

impl DistinctHashes {
    fn clear(&mut self) {
        self.hashes.clear();
        self.counts.clear();
        self.occurrences = 0;
        self.next_document();
    }

    /// A new stamp: every slot stamped before is free.
    fn next_document(&mut self) {
        self.document = self.document.wrapping_add(1);
        if self.document == 0 {
            // After 2^32 stamps one could be mistaken for a current one.
            self.slots.fill(Slot::default());
            self.document = 1;
        }
    }

    /// Uses `slots` slots from now on (a power of two, at least twice as
    /// many as the table's current entries), the current document's
    /// entries placed again; the table grows if it has fewer.
    fn use_slots(&mut self, slots: usize) {
        if slots > self.slots.len() {
            self.slots = vec![Slot::default(); slots];
            self.document = 0;
        }
        self.next_document();
        self.mask = slots - 1;
        for (entry, &hash) in self.hashes.iter().enumerate() {
            let mut i = home(hash, self.mask);
            while self.slots[i].document == self.document {
                i = (i + 1) & self.mask;
            }
            self.slots[i] = Slot {
                document: self.document,
                entry: entry as u32,
            };
        }
    }

    /// Counts every hash. The hashes come computed (see [`HashChunks`]), so
    /// that each one's slot can be fetched into the cache a few hashes
    /// ahead of its turn.
    fn insert_all(&mut self, mut hashes: &[u64]) {
        // At most half full: sized here for every hash to be new rather
        // than while counting (half rather than a quarter, so that the
        // slots fit the cache better). Until the document has entries,
        // its hashes size its slots, smaller than the last document's if
        // it is smaller.
        let wanted = (2 * (self.hashes.len() + hashes.len()).min(1 << 20))
            .next_power_of_two()
            .max(MIN_SLOTS);
        if self.hashes.is_empty() || wanted > self.mask + 1 {
            self.use_slots(wanted);
        }
        self.occurrences = self.occurrences.wrapping_add(hashes.len() as u32);
        // Past 2^20 distinct hashes the table grows while counting: the
        // hashes go in pieces that stay within half even if all are new.
        while !hashes.is_empty() {
            let slots = self.mask + 1;
            let room = slots / 2 - self.hashes.len();
            if room == 0 {
                self.use_slots(2 * slots);
                continue;
            }
            let (piece, rest) = hashes.split_at(room.min(hashes.len()));
            self.count_within_half(piece);
            hashes = rest;
        }
    }

    /// Counts hashes that fit in the slots at most half full however many
    /// are new, so that no hash checks for growth. The table's fields are
    /// taken apart into locals: through `self`, the compiler would reload
    /// them from memory for every hash, as each push could change them.
    fn count_within_half(&mut self, hashes: &[u64]) {
        const AHEAD: usize = 16;
        let DistinctHashes {
            slots,
            mask,
            document,
            hashes: entries,
            counts,
            ..
        } = self;
        let (mask, document) = (*mask, *document);
        let slots = &mut slots[..=mask];
        entries.reserve(hashes.len());
        counts.reserve(hashes.len());
        for (i, &hash) in hashes.iter().enumerate() {
            if let Some(&next) = hashes.get(i + AHEAD) {
                prefetch(&slots[home(next, mask)]);
            }
            let mut at = home(hash, mask);
            loop {
                let slot = &mut slots[at];
                if slot.document != document {
                    *slot = Slot {
                        document,
                        entry: entries.len() as u32,
                    };
                    entries.push(hash);
                    counts.push(1);
                    break;
                }
                let entry = slot.entry as usize;
                if entries[entry] == hash {
                    counts[entry] += 1;
                    break;
                }
                at = (at + 1) & mask;
            }
        }
    }

    /// The distinct hashes with their counts, in the order first seen.
    fn entries(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.hashes.iter().copied().zip(self.counts.iter().copied())
    }

    /// The sums of `bits` as the algorithm defines them: the weights of the
    /// distinct hashes added left to right in the order of the hashes.
    fn sums_in_hash_order(&self, bits: &[usize]) -> Vec<f64> {
        let mut entries: Vec<(u64, u32)> = self.entries().collect();
        entries.sort_unstable();
        bits.iter()
            .map(|&bit| {
                entries.iter().fold(0.0, |sum, &(hash, count)| {
                    let weight = log_weight(count);
                    if (hash >> bit) & 1 == 1 {
                        sum + weight
                    } else {
                        sum - weight
                    }
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
    }

    /// Documents of every shape the shortcuts could get wrong: few features
    /// (sums exactly zero), many repeats of few features, a vocabulary
    /// small enough that many counts exceed the byte counters, pairs of
    /// complementary hashes whose log weights cancel exactly, and more
    /// distinct hashes than the table's first size.
    #[test]
    fn fast_sums_give_the_defined_bits() {
        let mut rng = Rng(13);
        for case in 0..3000 {
            let len = match case % 5 {
                0 => (rng.next() % 8) as usize,
                1 => (rng.next() % 300) as usize,
                2 => 1000 + (rng.next() % 5000) as usize,
                _ => (rng.next() % 3000) as usize,
            };
            let vocabulary = match case % 4 {
                0 => 1 + rng.next() % 4,
                1 => 1 + rng.next() % 50,
                _ => u64::MAX,
            };
            let words: Vec<u64> = (0..vocabulary.min(4096)).map(|_| rng.next()).collect();
            let mut hashes: Vec<u64> = (0..len)
                .map(|_| match vocabulary {
                    u64::MAX => rng.next(),
                    v => words[(rng.next() % v) as usize],
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
                let (a, b, c, d) = (rng.next(), rng.next(), rng.next(), rng.next());
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
        let mut rng = Rng(29);
        for (len, vocabulary) in [
            (3 * HashChunks::LEN + 17, u64::MAX),
            (2 * HashChunks::LEN + 5, 5000),
            (HashChunks::LEN, 3),
        ] {
            let words: Vec<u64> = (0..vocabulary.min(5000)).map(|_| rng.next()).collect();
            let hashes: Vec<u64> = (0..len)
                .map(|_| match vocabulary {
                    u64::MAX => rng.next(),
                    v => words[(rng.next() % v) as usize],
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

    #[test]
    fn byte_counters_carry_into_totals() {
        let mut counts = BitCounts::default();
        for _ in 0..1000 {
            counts.add(u64::MAX);
        }
        counts.add(1);
        let sums = counts.signed_sums();
        assert_eq!(sums[0], 1001);
        assert!(sums[1..].iter().all(|&s| s == 999));
    }

    #[test]
    fn the_table_counts_across_growth_and_documents() {
        let mut table = DistinctHashes::default();
        for document in 0..3u64 {
            table.clear();
            for i in 0..5000u64 {
                table.insert_all(&[(i % 2500).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ document]);
            }
            assert_eq!(table.hashes.len(), 2500);
            assert!(table.entries().all(|(_, count)| count == 2));
        }
    }

    #[test]
    fn a_small_document_after_a_large_one_counts_in_fewer_slots() {
        let mut table = DistinctHashes::default();
        let hashes = |n: u64, salt: u64| {
            (0..2 * n).map(move |i| (i % n).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt)
        };
        for (document, n) in [100_000u64, 10, 3000, 100_000, 1].into_iter().enumerate() {
            table.clear();
            let hashes: Vec<u64> = hashes(n, document as u64).collect();
            table.insert_all(&hashes);
            assert_eq!(table.occurrences, 2 * n as u32);
            assert_eq!(table.hashes.len(), n as usize);
            assert!(table.entries().all(|(_, count)| count == 2));
            assert!(table.mask < (16 * n as usize).max(MIN_SLOTS));
        }
        assert!(table.slots.len() >= 400_000);
    }
}
