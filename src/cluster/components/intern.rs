//! Interning: page ids to page numbers in an open-addressing table
//! ([`IdTable`]), and the per-page arrays ([`Arrays`]) the table hands
//! numbers into, in segments that grow without moving.

use super::*;
use crate::exec::huge_pages::FreshZeroed;

/// Zeroed memory, on huge pages where it is large enough: every array
/// by page is read at random.
pub(super) fn zeroed<T: bytemuck::Zeroable>(n: usize) -> FreshZeroed<T> {
    FreshZeroed::on_huge_pages(n)
}

/// Pages per segment of a [`Segmented`] array.
pub(super) const SEGMENT_BITS: u32 = 22;

/// An array by page, in segments of 2^22 pages: it grows by a segment
/// without copying what it holds or stopping the workers for long, and
/// never holds more than the pages handed out and a segment.
#[derive(Debug, Default)]
pub(super) struct Segmented<T>(pub(super) Vec<FreshZeroed<T>>);

impl<T: bytemuck::Zeroable> Segmented<T> {
    pub(super) fn len(&self) -> usize {
        self.0.len() << SEGMENT_BITS
    }

    pub(super) fn grow_to(&mut self, pages: usize) {
        while self.len() < pages {
            self.0.push(zeroed(1 << SEGMENT_BITS));
        }
    }

    pub(super) fn get(&self, page: usize) -> &T {
        &self.0[page >> SEGMENT_BITS][page & ((1 << SEGMENT_BITS) - 1)]
    }
}

/// Each page's keys ([`crate::cluster::keep_order`]), a fixed number of words a
/// page, stored inverted: memory fresh from the allocator (zero) reads as
/// no value (all ones), so the memory of pages without a row is never
/// touched.
#[derive(Debug, Default)]
pub(super) struct PageKeys {
    pub(super) words: usize,
    pub(super) segments: Vec<FreshZeroed<AtomicU32>>,
}

impl PageKeys {
    pub(super) fn new(words: usize) -> PageKeys {
        assert!(words <= MAX_KEY_WORDS);
        PageKeys {
            words,
            segments: Vec::new(),
        }
    }

    pub(super) fn grow_to(&mut self, pages: usize) {
        if self.words == 0 {
            return;
        }
        while self.segments.len() << SEGMENT_BITS < pages {
            self.segments.push(zeroed(self.words << SEGMENT_BITS));
        }
    }

    pub(super) fn slot(&self, page: Page) -> &[AtomicU32] {
        let page = page as usize;
        let at = (page & ((1 << SEGMENT_BITS) - 1)) * self.words;
        &self.segments[page >> SEGMENT_BITS][at..at + self.words]
    }

    pub(super) fn write(&self, page: Page, words: &[u32]) {
        for (slot, &word) in self.slot(page).iter().zip(words) {
            slot.store(!word, Relaxed);
        }
    }

    /// Sets word `at` of a page's keys.
    pub(super) fn write_word(&self, page: Page, at: usize, word: u32) {
        self.slot(page)[at].store(!word, Relaxed);
    }

    /// A page's keys, padded with zeros.
    pub(super) fn get(&self, page: Page) -> KeyWords {
        let mut keys = [0; MAX_KEY_WORDS];
        if self.words > 0 {
            for (key, slot) in keys.iter_mut().zip(self.slot(page)) {
                *key = !slot.load(Relaxed);
            }
        }
        keys
    }

    /// Whether page `a`'s keys come before page `b`'s (equal keys do not).
    pub(super) fn less(&self, a: Page, b: Page) -> bool {
        if self.words == 0 {
            return false;
        }
        for (x, y) in self.slot(a).iter().zip(self.slot(b)) {
            let (x, y) = (!x.load(Relaxed), !y.load(Relaxed));
            if x != y {
                return x < y;
            }
        }
        false
    }

    pub(super) fn prefetch(&self, page: Page) {
        if self.words > 0 {
            prefetch(&self.slot(page)[0]);
        }
    }
}

/// A slot of the id table: an id and its page plus one (0 while empty), so
/// four slots share a cache line.
pub(super) type Slot = [AtomicU64; 2];

/// The id table: open addressing with linear probing, in parts of equal
/// size (a slot's part is the top bits of its home, and probing wraps
/// within the part), so that the workers first touch the parts at once:
/// one mapping of fresh memory ([`FreshZeroed`]), backed part by part by
/// the workers in parallel, and given back whole once the forest is done.
#[derive(Debug, Default)]
pub(super) struct IdTable {
    pub(super) slots: FreshZeroed<Slot>,
    pub(super) part_bits: u32,
    pub(super) placement: Placement,
}

/// Where an id's probing starts: its *home* slot.
///
/// `match` writes pairs sorted by query id, and page ids are hashes of URLs,
/// spread evenly over their range. Placed in id order, the query side of each
/// row group walks the table from one end to the other: its slots are
/// neighbours, in cache lines and pages the hardware has just fetched, where
/// hashed homes put every id at a random place in a table far larger than the
/// cache. Ids that are not spread evenly over the range (a narrow band, a
/// range the sample missed) would crowd some slots: long probes are caught
/// ([`Arrays::get_or_insert`], [`GraphWriter::add_pairs`]) and the table is
/// rebuilt hashed, as it is when it grows.
#[derive(Clone, Copy, Debug)]
pub(super) enum Placement {
    /// The id's [`mix`] scaled to the table (its top bits, for a power
    /// of two): any ids, spread at random.
    Hashed { slots: usize },
    /// The id's place in its range scaled to the table: ids in the
    /// sampled range `[least, least + span]` (as ordered keys,
    /// [`ordered_key`]) fill all but a [`HEADROOM`] of the slots at each
    /// end, which take, at the same scale, ids a little below or above it
    /// (a sample's least and greatest id are near its range's ends, not at
    /// them). Ids further out share the end slots.
    Ordered {
        least: u64,
        span: u64,
        /// `(slots - 2 * headroom) * 2^64 / (span + 1)`.
        scale: u128,
        headroom: usize,
        last: usize,
    },
}

/// The share of an ordered table's slots kept at each end for ids beyond
/// the sampled range: 1/64.
pub(super) const HEADROOM: usize = 64;

impl Default for Placement {
    fn default() -> Placement {
        Placement::Hashed { slots: 2 }
    }
}

impl Placement {
    /// Hashed homes in a table of `slots`.
    pub(super) fn hashed(slots: usize) -> Placement {
        Placement::Hashed { slots }
    }

    /// Homes in id order for ids in `range`, in a table of `slots`.
    pub(super) fn ordered((least, most): (i64, i64), slots: usize) -> Placement {
        let (least, most) = (ordered_key(least), ordered_key(most.max(least)));
        let span = most - least;
        let headroom = slots / HEADROOM;
        Placement::Ordered {
            least,
            span,
            scale: (((slots - 2 * headroom) as u128) << 64) / (u128::from(span) + 1),
            headroom,
            last: slots - 1,
        }
    }

    pub(super) fn is_ordered(&self) -> bool {
        matches!(self, Placement::Ordered { .. })
    }

    pub(super) fn home(&self, id: i64) -> usize {
        match *self {
            Placement::Hashed { slots } => ((u128::from(mix(id)) * slots as u128) >> 64) as usize,
            Placement::Ordered {
                least,
                span,
                scale,
                headroom,
                last,
            } => {
                // Bounded so that the product fits: ids that far out are at
                // an end slot anyway.
                let reach = i128::from(span) + 1;
                let offset =
                    (i128::from(ordered_key(id)) - i128::from(least)).clamp(-reach, 2 * reach);
                let at = headroom as i128 + ((offset * scale as i128) >> 64);
                at.clamp(0, last as i128) as usize
            }
        }
    }
}

/// An id as an unsigned key in the same order.
pub(super) fn ordered_key(id: i64) -> u64 {
    (id as u64) ^ (1 << 63)
}

impl IdTable {
    /// The parts of the least table of at least `wanted` slots: up to 64
    /// parts of a power of two slots each, 2^16 or more (one part, of at
    /// least 8, for fewer), so a table of more than 2^21 slots is no more
    /// than 1/32 larger than wanted (a smaller one, at most a part of 2^16
    /// larger); `(how many, log2 of the slots each)`.
    pub(super) fn parts_for(wanted: usize) -> (usize, u32) {
        const PART_BITS: u32 = 16;
        const MAX_PARTS: usize = 64;
        if wanted <= 1 << PART_BITS {
            return (1, wanted.next_power_of_two().max(8).trailing_zeros());
        }
        let bits = wanted
            .div_ceil(MAX_PARTS)
            .next_power_of_two()
            .trailing_zeros()
            .max(PART_BITS);
        (wanted.div_ceil(1 << bits), bits)
    }

    /// A table of at least `wanted` slots ([`IdTable::parts_for`]), not
    /// yet touched, its homes placed in id order for ids in `range` if one
    /// is given, else hashed.
    pub(super) fn new(wanted: usize, range: Option<(i64, i64)>) -> IdTable {
        let (parts, part_bits) = IdTable::parts_for(wanted);
        let slots = parts << part_bits;
        IdTable {
            // 4 KiB pages: see `exec::huge_pages` for why. Fresh memory,
            // so the workers back it in parallel (`touch_parts`).
            slots: FreshZeroed::new(slots),
            part_bits,
            placement: match range {
                Some(range) => Placement::ordered(range, slots),
                None => Placement::hashed(slots),
            },
        }
    }

    /// Writes every 4 KiB page of the parts `worker` of `workers` touches,
    /// once and in order. Memory fresh from the system is backed on first
    /// touch; touched at random (a slot is read before it is written) each
    /// page would fault twice, once for the shared zero page and once to
    /// copy it, at random and on whichever worker got there first.
    pub(super) fn touch_parts(&self, worker: usize, workers: usize) {
        let each = 1 << self.part_bits;
        let step = (4096 / std::mem::size_of::<Slot>()).max(1);
        for part in self.slots.chunks(each).skip(worker).step_by(workers) {
            for slot in part.iter().step_by(step) {
                slot[0].store(0, Relaxed);
            }
        }
    }

    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(super) fn home(&self, id: i64) -> usize {
        self.placement.home(id)
    }

    pub(super) fn slot(&self, at: usize) -> &Slot {
        &self.slots[at]
    }

    /// The slot probed after `at`: the next in its part.
    pub(super) fn next(&self, at: usize) -> usize {
        let mask = (1 << self.part_bits) - 1;
        (at & !mask) | ((at + 1) & mask)
    }
}

/// Each page's id.
pub(super) type IdsByPage = Segmented<AtomicI64>;

/// What the workers fill: the id table and the arrays by page. Grown (by
/// one worker, the others waiting) only between chunks, and only if the
/// estimate they were made for ([`SharedGraph::prepare`]) was short.
#[derive(Debug, Default)]
pub(super) struct Arrays {
    pub(super) table: IdTable,
    pub(super) ids: IdsByPage,
    pub(super) nodes: Nodes,
    /// [`USED`], [`IN_CORPUS`] and [`HAS_KEYS`].
    pub(super) flags: Segmented<AtomicU8>,
    pub(super) keys: PageKeys,
}

impl Arrays {
    /// Whether `ids` ids and pages numbered below `pages` fit.
    pub(super) fn has_room(&self, ids: usize, pages: usize) -> bool {
        ids * 4 <= self.table.len() * 3 && pages <= self.ids.len()
    }

    /// Grows the table to at least `slots` slots if it is smaller.
    /// A grown table is hashed: the range its homes were placed by was a
    /// sample's, and the sample was short.
    pub(super) fn grow_table(&mut self, slots: usize) {
        if slots > self.table.len() {
            tracing::debug!(slots, "union-find id table grown");
            self.rebuild_hashed(slots);
        }
    }

    /// Rebuilds the table hashed, at the same size, if its homes are
    /// placed in id order (the ids crowd some slots).
    pub(super) fn spread_by_hash(&mut self) {
        if self.table.placement.is_ordered() {
            tracing::debug!("union-find ids crowd their slots in id order: table rebuilt hashed");
            self.rebuild_hashed(self.table.len());
        }
    }

    /// The table rebuilt with at least `slots` slots and hashed homes. Pages keep
    /// their numbers: only the table maps ids to them.
    pub(super) fn rebuild_hashed(&mut self, slots: usize) {
        let table = IdTable::new(slots, None);
        table.touch_parts(0, 1);
        let old = std::mem::replace(&mut self.table, table);
        for [id, page] in old.slots.iter() {
            let page = page.load(Relaxed);
            if page != 0 {
                let id = id.load(Relaxed) as i64;
                let [key, value] = self.table.slot(self.find_slot(id));
                key.store(id as u64, Relaxed);
                value.store(page, Relaxed);
            }
        }
    }

    /// Numbers `pages` pages in the arrays by page.
    pub(super) fn grow_arrays(&mut self, pages: usize) {
        self.ids.grow_to(pages);
        self.nodes.0.grow_to(pages);
        self.flags.grow_to(pages);
        self.keys.grow_to(pages);
    }

    /// The page of `id`, if it has one (while no worker inserts).
    pub(super) fn page_of(&self, id: i64) -> Option<Page> {
        let [key, page] = self.table.slot(self.find_slot(id));
        match page.load(Relaxed) {
            0 => None,
            _ if key.load(Relaxed) as i64 != id => None,
            page => Some((page - 1) as Page),
        }
    }

    /// The slot holding `id`, or the empty slot where it would go (while no
    /// other worker inserts).
    pub(super) fn find_slot(&self, id: i64) -> usize {
        let mut at = self.table.home(id);
        loop {
            let [key, page] = self.table.slot(at);
            if page.load(Relaxed) == 0 || key.load(Relaxed) as i64 == id {
                return at;
            }
            at = self.table.next(at);
        }
    }

    /// The page of `id`, or a new one from `block` (its slot claimed first,
    /// so two workers meeting a new id agree on its page); counts new pages
    /// in `fresh` and slots probed past the home in `probes`. `None` when
    /// homes are in id order and the probe ran past [`CROWDED_PROBES`]
    /// slots: the table must be rebuilt hashed ([`Arrays::spread_by_hash`]).
    pub(super) fn get_or_insert(
        &self,
        id: i64,
        home: usize,
        block: &mut Block<'_>,
        fresh: &mut usize,
        probes: &mut usize,
    ) -> Option<Page> {
        let mut at = home;
        let mut probed = 0;
        loop {
            let [key, page] = self.table.slot(at);
            match page.load(Acquire) {
                0 => {
                    if page.compare_exchange(0, BUSY, Acquire, Relaxed).is_err() {
                        continue;
                    }
                    let new = block.next(self);
                    key.store(id as u64, Relaxed);
                    self.ids.get(new as usize).store(id, Relaxed);
                    self.nodes.set_parent(new, new);
                    self.flags.get(new as usize).store(USED, Relaxed);
                    page.store(u64::from(new) + 1, Release);
                    *fresh += 1;
                    *probes += probed;
                    return Some(new);
                }
                BUSY => std::hint::spin_loop(),
                found if key.load(Relaxed) as i64 == id => {
                    *probes += probed;
                    return Some((found - 1) as Page);
                }
                _ => {
                    probed += 1;
                    if probed > CROWDED_PROBES && self.table.placement.is_ordered() {
                        return None;
                    }
                    at = self.table.next(at);
                }
            }
        }
    }

    /// Joins the sets of `a` and `b`; returns whether they were apart. The
    /// root of lower priority is linked under the other, by compare-and-swap
    /// on its parent (it may have stopped being a root meanwhile).
    pub(super) fn union(&self, a: Page, b: Page) -> bool {
        loop {
            let (ra, rb) = (self.nodes.find(a), self.nodes.find(b));
            if ra == rb {
                return false;
            }
            let (child, root) = match priority(ra) < priority(rb) {
                true => (ra, rb),
                false => (rb, ra),
            };
            if self.nodes.move_parent(child, child, root) {
                return true;
            }
        }
    }

    pub(super) fn mark_in_corpus(&self, page: Page) {
        let flags = self.flags.get(page as usize);
        // Read first: a star's centre is marked by every pair, and the
        // locked `or` (keys may be written to the same flags at once, from
        // the corpus's rows) is then taken about once a page.
        if flags.load(Relaxed) & IN_CORPUS == 0 {
            flags.fetch_or(IN_CORPUS, Relaxed);
        }
    }
}

/// A page id's bits mixed so that every bit of the result depends on every
/// bit of the id (SplitMix64's finalizer): the top bits index tables and
/// bitmaps. A single multiply (Fibonacci hashing) is not enough: ids with
/// multiplicative structure of their own (`x * A mod p`, as one tool
/// scatters ids) leave most of a table's slots empty and crowd the rest.
pub fn mix(id: i64) -> u64 {
    crate::random::mix(id as u64)
}
