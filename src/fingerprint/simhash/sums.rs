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

use crate::exec::parallel::prefetch;

/// Counts below this are grouped and counted in integers: features of one
/// count share one weight.
const GROUPED_COUNTS: usize = 32;

pub(super) fn log_weighted_simhash(distinct: &DistinctHashes) -> (u64, u32) {
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
/// table (the hashes are xxh3 outputs, uniform already, so their upper
/// bits give the slot, [`home`]) whose slots belong to the current document when stamped
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
    pub(super) fn clear(&mut self) {
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

    /// Counts every hash. The hashes come computed (see [`super::document_sums::HashChunks`]), so
    /// that each one's slot can be fetched into the cache a few hashes
    /// ahead of its turn.
    pub(super) fn insert_all(&mut self, mut hashes: &[u64]) {
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

    /// How many times `hash` was counted for the current document.
    pub(super) fn count_of(&self, hash: u64) -> u32 {
        if self.hashes.is_empty() {
            return 0;
        }
        let mut at = home(hash, self.mask);
        while self.slots[at].document == self.document {
            let entry = self.slots[at].entry as usize;
            if self.hashes[entry] == hash {
                return self.counts[entry];
            }
            at = (at + 1) & self.mask;
        }
        0
    }

    /// The distinct hashes with their counts, in the order first seen.
    pub(super) fn entries(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
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
