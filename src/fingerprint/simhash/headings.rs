//! Headings weigh more (HTML pages from the fifth main-content rules,
//! scheme v9): a feature of a heading's text weighs [`HEADING_WEIGHT`]
//! times what it would, under either weighting.
//!
//! Defined so that steps 3 to 5 of the fingerprint (and the sketch) stay as
//! they are: the headings' features are made of each heading's text alone,
//! as step 2 makes the page's (under the page's own choice of features);
//! each distinct one, `h`, that occurs `c` times among the page's features
//! is added `c` more times under each of [`HEADING_WEIGHT`] - 1 further
//! hashes, `mix(h + i * 0xD1B54A32D192ED03)` for `i = 1, 2, 3`
//! (SplitMix64's finaliser). The further hashes are features of their own,
//! independent of every other, each weighing what `h` weighs: `c` under
//! term frequency, `1 + ln c` under log weights, so four times in all.
//! `n_features` does not count them.
//!
//! Why weigh them: a heading names what its page or section is. Sibling
//! pages of one generator share most of their text (a "moved" stub's
//! sentence, the methods every iterator has) and differ in their headings;
//! the same page in two releases keeps its headings.
//!
//! Under log weights the sums' table of distinct features gives each
//! heading feature's count. Under term frequency the page's features are
//! counted as they stream to the sums: a 4096-bit filter on the hash's top
//! bits lets nearly every feature past with one test, and the few that
//! pass are looked up among the headings' features.

use crate::random::mix;

/// How many times a heading's features count.
pub const HEADING_WEIGHT: u64 = 4;

/// The odd constant that makes a heading feature's further hashes.
const HEADING_SALT: u64 = 0xD1B5_4A32_D192_ED03;

/// The further hashes a heading's feature of hash `hash` adds.
pub(crate) fn heading_copies(hash: u64) -> impl Iterator<Item = u64> {
    (1..HEADING_WEIGHT).map(move |copy| mix(hash.wrapping_add(copy.wrapping_mul(HEADING_SALT))))
}

/// The distinct features of a page's headings and how often each occurs
/// among the page's features.
pub(super) struct HeadingFeatures {
    /// Sorted.
    hashes: Vec<u64>,
    counts: Vec<u32>,
    filter: Box<[u64; FILTER_WORDS]>,
}

const FILTER_WORDS: usize = 64;

/// The filter's bit for `hash`: its top 12 bits.
fn filter_bit(hash: u64) -> (usize, u64) {
    let bit = (hash >> 52) as usize;
    (bit / 64, 1 << (bit % 64))
}

impl HeadingFeatures {
    /// `None` when the headings have no features.
    pub(super) fn of(mut hashes: Vec<u64>) -> Option<HeadingFeatures> {
        if hashes.is_empty() {
            return None;
        }
        hashes.sort_unstable();
        hashes.dedup();
        let mut filter = Box::new([0u64; FILTER_WORDS]);
        for &hash in &hashes {
            let (word, bit) = filter_bit(hash);
            filter[word] |= bit;
        }
        Some(HeadingFeatures {
            counts: vec![0; hashes.len()],
            hashes,
            filter,
        })
    }

    /// Counts `hash` if it is a heading's feature.
    #[inline]
    pub(super) fn note(&mut self, hash: u64) {
        let (word, bit) = filter_bit(hash);
        if self.filter[word] & bit != 0 {
            if let Ok(at) = self.hashes.binary_search(&hash) {
                self.counts[at] += 1;
            }
        }
    }

    /// Takes each feature's count from `count`.
    pub(super) fn count_with(&mut self, mut count: impl FnMut(u64) -> u32) {
        for (&hash, slot) in self.hashes.iter().zip(&mut self.counts) {
            *slot = count(hash);
        }
    }

    /// Pushes the further hashes, each as often as its feature occurred;
    /// returns how many.
    pub(super) fn push_copies(&self, out: &mut impl Extend<u64>) -> u32 {
        let mut pushed = 0u64;
        for (&hash, &count) in self.hashes.iter().zip(&self.counts) {
            for copy in heading_copies(hash) {
                out.extend(std::iter::repeat_n(copy, count as usize));
            }
            pushed += u64::from(count) * (HEADING_WEIGHT - 1);
        }
        pushed as u32
    }
}

/// A sink of feature hashes that counts the headings' features on their
/// way to `inner`.
pub(super) struct Counting<'a, E> {
    pub(super) inner: &'a mut E,
    pub(super) headings: &'a mut HeadingFeatures,
}

impl<E: Extend<u64>> Extend<u64> for Counting<'_, E> {
    fn extend<I: IntoIterator<Item = u64>>(&mut self, hashes: I) {
        let headings = &mut *self.headings;
        self.inner
            .extend(hashes.into_iter().inspect(|&hash| headings.note(hash)));
    }
}
