//! The bitmap that keeps most pages from being sighted: only a page whose
//! bit another worker's page set too may be shared ([`SharedFilter`]).

use std::cell::RefCell;
use std::ops::Range;
use std::rc::Rc;

use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::Stream;

use super::links::LOOKAHEAD;
use super::shared_pages::Sighting;
use crate::cluster::components::{mix, KeyedPage};
use crate::exec::after_all::{after_all, after_all_in_slices};
use crate::exec::parallel::prefetch;

/// A bitmap over page ids that tells which pages more than one worker may
/// have seen, so that only those are sighted: every worker sets the bit of
/// each of its pages, and a bit set by two workers or more lets a page
/// through. A page two workers saw always passes (no false negatives); a
/// page one worker saw passes when another worker's page set the same bit,
/// about as often as the other workers' pages are a share of the bits.
///
/// Sighting every page costs a 24-byte record per page through the
/// exchange and a merge at its owner; a bit per page (a few per pair) costs
/// a sixteenth of it or less.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SharedFilter {
    log2_bits: u32,
    /// Whether pages can be shared at all: the workers of one process
    /// share one union-find and split its components, so only workers of
    /// different processes see the same page.
    shares: bool,
}

/// Words of a filter's bitmap given to one worker: `(worker, range, words)`.
pub(crate) type FilterChunk = (u32, u32, Vec<u64>);

impl SharedFilter {
    /// A filter for a job of `pairs` pairs on `peers` workers in
    /// `processes` processes: about 8 bits per pair (pages are at most two
    /// per pair, so at most a quarter of the bits are set), and at most 32
    /// bits per pair a worker (the bitmap is held by every worker: it must
    /// not outgrow a worker's own share). One process shares nothing, and
    /// gets the least bitmap, which lets nothing through.
    pub(crate) fn new(pairs: u64, peers: usize, processes: usize) -> SharedFilter {
        let shares = processes > 1;
        let bits = match shares {
            false => 0,
            true => (8 * pairs).min(32 * pairs / peers as u64),
        };
        let log2_bits = bits.max(1).next_power_of_two().trailing_zeros();
        SharedFilter {
            log2_bits: log2_bits.clamp(MIN_FILTER_LOG2, MAX_FILTER_LOG2),
            shares,
        }
    }

    fn words(&self) -> usize {
        1 << (self.log2_bits - 6)
    }

    /// The bit of page `id`.
    fn bit(&self, id: i64) -> usize {
        (mix(id) >> (64 - self.log2_bits)) as usize
    }

    /// The words of range `range` of `peers`.
    fn range(&self, range: usize, peers: usize) -> std::ops::Range<usize> {
        let words = self.words();
        range * words / peers..(range + 1) * words / peers
    }

    /// A worker's bitmap of its pages, cut into one chunk per worker (the
    /// range that worker combines). The bits are random places in a bitmap
    /// larger than the cache, so each is fetched a few pages ahead.
    pub(crate) fn chunks(&self, pages: &[KeyedPage], peers: usize) -> Vec<FilterChunk> {
        let mut words = vec![0u64; self.words()];
        let pages = if self.shares { pages } else { &[] };
        for (at, &(id, ..)) in pages.iter().enumerate() {
            if let Some(&(ahead, ..)) = pages.get(at + LOOKAHEAD) {
                prefetch(&words[self.bit(ahead) / 64]);
            }
            let bit = self.bit(id);
            words[bit / 64] |= 1 << (bit % 64);
        }
        (0..peers)
            .map(|r| (r as u32, r as u32, words[self.range(r, peers)].to_vec()))
            .collect()
    }

    /// The pages that may be shared, by `twice` (the bits set by two
    /// workers or more, from [`seen_twice`]), each with its place in `pages`.
    pub(crate) fn passing<'a>(
        &'a self,
        twice: &'a [u64],
        pages: &'a [KeyedPage],
    ) -> impl Iterator<Item = (usize, &'a KeyedPage)> + 'a {
        let pages = if self.shares { pages } else { &[] };
        pages.iter().enumerate().filter_map(move |(at, page)| {
            if let Some(&(ahead, ..)) = pages.get(at + LOOKAHEAD) {
                prefetch(&twice[self.bit(ahead) / 64]);
            }
            let bit = self.bit(page.0);
            (twice[bit / 64] >> (bit % 64) & 1 == 1).then_some((at, page))
        })
    }
}

/// The least filter: one word.
const MIN_FILTER_LOG2: u32 = 6;
/// The largest filter: 256 MiB a worker.
const MAX_FILTER_LOG2: u32 = 31;

/// At each worker, the range of the filter it combines: the bits that two
/// workers or more set, given to every worker.
pub(crate) fn seen_twice<'scope>(
    chunks: Stream<'scope, u64, Vec<FilterChunk>>,
    peers: usize,
) -> Stream<'scope, u64, Vec<FilterChunk>> {
    let combined = Rc::new(RefCell::new(None::<(u32, Vec<u64>, Vec<u64>)>));
    let absorbed = combined.clone();
    after_all(
        chunks,
        Exchange::new(|&(worker, ..): &FilterChunk| u64::from(worker)),
        "SeenTwice",
        move |data| {
            let mut combined = absorbed.borrow_mut();
            for (_, range, words) in data.drain(..) {
                let (_, once, twice) = combined
                    .get_or_insert_with(|| (range, vec![0; words.len()], vec![0; words.len()]));
                count_twice(once, twice, &words);
            }
        },
        move |give| {
            if let Some((range, _, twice)) = combined.borrow_mut().take() {
                for worker in 0..peers as u32 {
                    give((worker, range, twice.clone()));
                }
            }
        },
    )
}

/// Adds one worker's `words` to a range's bits seen `once` and `twice`
/// (or more).
fn count_twice(once: &mut [u64], twice: &mut [u64], words: &[u64]) {
    for ((once, twice), &word) in once.iter_mut().zip(twice.iter_mut()).zip(words) {
        *twice |= *once & word;
        *once |= word;
    }
}

/// Pages a worker sights per activation: each slice of sightings flows to
/// the owners, which find what they can of it ([`super::find_shared`]),
/// before the next is made.
const SIGHTED_PER_SLICE: usize = 1 << 16;

/// At every worker, once the bits seen twice are all in: `sighted` gives
/// the sightings of its pages in a range of them that may be shared (see
/// [`super::sightings`]), and says whether pages are left past it.
pub(crate) fn shared_sightings<'scope>(
    twice: Stream<'scope, u64, Vec<FilterChunk>>,
    filter: SharedFilter,
    peers: usize,
    mut sighted: impl FnMut(&[u64], Range<usize>, &mut dyn FnMut(Sighting)) -> bool + 'static,
) -> Stream<'scope, u64, Vec<Sighting>> {
    let bits = Rc::new(RefCell::new(vec![0u64; filter.words()]));
    let absorbed = bits.clone();
    after_all_in_slices(
        twice,
        Exchange::new(|&(worker, ..): &FilterChunk| u64::from(worker)),
        "SharedSightings",
        move |data| {
            let mut bits = absorbed.borrow_mut();
            for (_, range, words) in data.drain(..) {
                bits[filter.range(range as usize, peers)].copy_from_slice(&words);
            }
        },
        move || {
            let bits = std::mem::take(&mut *bits.borrow_mut());
            let mut next = 0;
            move |give: &mut dyn FnMut(Sighting)| {
                if !filter.shares {
                    return false;
                }
                let pages = next..next + SIGHTED_PER_SLICE;
                next = pages.end;
                sighted(&bits, pages, give)
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::components::Page;

    /// The bits seen twice of `workers`' pages, combined range by range as
    /// the dataflow does.
    fn twice_of(filter: SharedFilter, workers: &[Vec<KeyedPage>]) -> Vec<u64> {
        let peers = workers.len();
        let chunks: Vec<Vec<FilterChunk>> = workers
            .iter()
            .map(|pages| filter.chunks(pages, peers))
            .collect();
        let mut bits = vec![0; filter.words()];
        for range in 0..peers {
            let words = filter.range(range, peers);
            let (mut once, mut twice) = (vec![0; words.len()], vec![0; words.len()]);
            for chunk in &chunks {
                assert_eq!(chunk[range].1 as usize, range);
                count_twice(&mut once, &mut twice, &chunk[range].2);
            }
            bits[words].copy_from_slice(&twice);
        }
        bits
    }

    #[test]
    fn every_page_several_workers_saw_passes_the_filter_and_few_others_do() {
        // Three workers, ids with structure (multiples of 2^40, sequential,
        // scattered by a multiply): every sixth id is seen by two workers.
        let ids = (0..60_000i64).map(|i| match i % 3 {
            0 => i << 40,
            1 => i,
            _ => i.wrapping_mul(2_862_933_555_777_941_757),
        });
        let mut workers = vec![Vec::new(); 3];
        let mut shared = std::collections::HashSet::new();
        for (n, id) in ids.enumerate() {
            workers[n % 3].push((id, n as Page, 0));
            if n % 6 == 0 {
                workers[(n + 1) % 3].push((id, n as Page, 0));
                shared.insert(id);
            }
        }
        let pairs = 40_000;
        let filter = SharedFilter::new(pairs, 3, 3);
        let twice = twice_of(filter, &workers);
        for pages in &workers {
            let passing: Vec<i64> = filter.passing(&twice, pages).map(|(_, p)| p.0).collect();
            let unshared = pages.iter().filter(|p| !shared.contains(&p.0)).count();
            let let_through = passing.iter().filter(|id| !shared.contains(id)).count();
            for page in pages.iter().filter(|p| shared.contains(&p.0)) {
                assert!(passing.contains(&page.0), "shared page {} filtered", page.0);
            }
            // About 50,000 of 2^18 bits set by the other workers.
            assert!(
                unshared > 0 && let_through * 4 < unshared,
                "{let_through} of {unshared}"
            );
        }
        // One worker shares nothing: nothing passes.
        let one = SharedFilter::new(pairs, 1, 1);
        let twice = twice_of(one, &workers[..1]);
        assert_eq!(one.passing(&twice, &workers[0]).count(), 0);
        // Nor do the workers of one process (they split one union-find),
        // even where their pages' bits meet.
        let process = SharedFilter::new(pairs, 3, 1);
        let twice = twice_of(process, &workers);
        for pages in &workers {
            assert_eq!(process.passing(&twice, pages).count(), 0);
        }
    }

    #[test]
    fn a_filter_has_about_eight_bits_a_pair_and_at_most_thirty_two_a_worker() {
        let bits = |pairs, peers| 1u64 << SharedFilter::new(pairs, peers, peers).log2_bits;
        assert_eq!(bits(10_000_000, 2), 1 << 27);
        assert_eq!(bits(10_000_000, 64), 1 << 23);
        assert_eq!(bits(10_000_000, 1), 64);
        assert_eq!(bits(0, 4), 64);
        assert_eq!(bits(u64::MAX / 64, 2), 1 << MAX_FILTER_LOG2);
        // More workers than words: some ranges are empty, and that is fine.
        let filter = SharedFilter::new(1, 200, 200);
        let total: usize = (0..200).map(|r| filter.range(r, 200).len()).sum();
        assert_eq!(total, filter.words());
    }
}
