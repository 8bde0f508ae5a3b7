//! A page of a process's graph and what every part of the union-find
//! shares about it: its number and label, its flags, the batch sizes of
//! interning, and [`Chunked`], the vector that grows without copying.

use crate::cluster::keep_order::KeyWords;

/// A worker's estimate of its process's distinct pages
/// ([`crate::cluster::page_estimate`]): the likely count, and the linear
/// estimate, which bounds it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageEstimate {
    pub likely: usize,
    pub linear: usize,
}

impl PageEstimate {
    /// Pages known (none: the table and arrays grow as pairs come).
    pub fn exact(pages: usize) -> PageEstimate {
        PageEstimate {
            likely: pages,
            linear: pages,
        }
    }
}

/// A page's dense index in its process's [`super::SharedGraph`].
pub(crate) type Page = u32;

/// A page's label: the lower one is the representative. `later: false`
/// ranks first (a page already in the corpus, when corpus pages come
/// first); then the page's keys ([`crate::cluster::keep_order`]); ties go to the
/// smallest id.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
pub(crate) struct Label {
    pub(crate) later: bool,
    pub(crate) keys: KeyWords,
    pub(crate) id: i64,
}

/// A set's least label as it is compared: whether it ranks first, and its
/// page (its keys are read by page). Pages are counted in id order, so of
/// pages that rank alike with equal keys the first is the least: no ids
/// are compared.
pub(super) type LeastPage = (bool, Page);

/// A set's least label as its root's counts hold it: whether it ranks
/// first, and its slot in the worker's [`super::LeastLabels`].
pub(super) type LeastSlot = (bool, u32);

/// No page: a marker in arrays of pages.
pub(crate) const MISSING: Page = Page::MAX;

/// Pages one process may hold: page numbers are 32 bits, and the router
/// marks joined clusters with the top bit.
pub(crate) const MAX_PROCESS_PAGES: usize = 1 << 31;

/// How many lookups of a batch are in flight at once.
pub(super) const LOOKAHEAD: usize = 16;

/// Ids interned between two checks of the table's room (even: a chunk holds
/// whole pairs).
pub(super) const CHUNK: usize = 4096;

/// Page numbers a worker takes from the shared count at once: at least a
/// chunk's, so a chunk needs at most one new block.
pub(super) const BLOCK: usize = CHUNK;

/// Slots one lookup may probe past its home while homes are in id order
/// ([`super::Placement::Ordered`]) before the table is rebuilt hashed. Crowded
/// homes can fill a part, and probing wraps within it: the limit is what
/// ends such a probe (a table of several parts has parts of 2^16 slots or
/// more; a table of one part is at most 3/4 full). Evenly spread ids in a
/// table at most 3/4 full all but never probe this far.
pub(super) const CROWDED_PROBES: usize = 1 << 10;

/// Slots probed past their homes per id, over a chunk, above which homes in
/// id order are given up for hashed ones. Linear probing at load `a`
/// probes `(1 + 1/(1-a)^2)/2` slots on a miss: in a table 3/4 full (the
/// most it gets before it grows; 77% where the ids in range are, less the
/// headroom) a new id probes 7.5-9 slots past its home on average.
/// Crowded homes probe hundreds.
pub(super) const CROWDED_CHUNK_PROBES: usize = 32;

/// A table slot's page word while another worker fills the slot (an empty
/// slot's is 0, a full one's its page plus one).
pub(super) const BUSY: u64 = u64::MAX;

/// A page's flags: its number is in use (some are handed out in a block
/// and never used), and it is a corpus page.
pub(super) const USED: u8 = 1;
pub(super) const IN_CORPUS: u8 = 2;
/// The page's keys are written (a second row for it is a repeat).
pub(super) const HAS_KEYS: u8 = 4;

/// Marks a root in [`super::Forest::place_by_id`]'s pages as that of a page that ranks
/// first: a process's pages are fewer than 2^31 ([`MAX_PROCESS_PAGES`]).
pub(super) const RANKS_FIRST: Page = 1 << 31;

/// A vector in chunks of 2^[`CHUNK_BITS`] items, each item at the slot
/// its push gave: it grows without copying, and its chunks can be handed
/// on one at a time.
#[derive(Debug)]
pub(crate) struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

/// Items per chunk of a [`Chunked`], as a power of two.
pub(crate) const CHUNK_BITS: u32 = 16;
pub(crate) const CHUNK_MASK: u32 = (1 << CHUNK_BITS) - 1;

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Chunked<T> {
    /// Adds an item; gives its slot.
    pub(crate) fn push(&mut self, item: T) -> u32 {
        push_chunked(&mut self.chunks, 1 << CHUNK_BITS, item);
        self.len += 1;
        (self.len - 1) as u32
    }

    /// Items pushed: the slot the next push gives.
    pub(crate) fn len(&self) -> u32 {
        self.len as u32
    }

    /// A slot's chunk, and its place there.
    fn place(slot: u32) -> (usize, usize) {
        ((slot >> CHUNK_BITS) as usize, (slot & CHUNK_MASK) as usize)
    }

    pub(crate) fn at(&self, slot: u32) -> Option<&T> {
        let (chunk, at) = Self::place(slot);
        self.chunks.get(chunk)?.get(at)
    }

    pub(crate) fn at_mut(&mut self, slot: u32) -> Option<&mut T> {
        let (chunk, at) = Self::place(slot);
        self.chunks.get_mut(chunk)?.get_mut(at)
    }

    /// The item at a slot a push gave.
    pub(crate) fn get(&self, slot: u32) -> T
    where
        T: Copy,
    {
        *self.at(slot).expect("a slot a push gave")
    }

    #[cfg(test)]
    pub(crate) fn chunks(&self) -> &[Vec<T>] {
        &self.chunks
    }

    pub(crate) fn into_chunks(self) -> Vec<Vec<T>> {
        self.chunks
    }
}

/// Appends `item` to the last of `chunks`, or to a new chunk of room for
/// `each` items if that one is full: nothing is ever copied to grow.
pub(super) fn push_chunked<T>(chunks: &mut Vec<Vec<T>>, each: usize, item: T) {
    match chunks.last_mut() {
        Some(last) if last.len() < last.capacity() => last.push(item),
        _ => {
            let mut chunk = Vec::with_capacity(each);
            chunk.push(item);
            chunks.push(chunk);
        }
    }
}
