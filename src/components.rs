//! Connected components of the pair graph by union-find.
//!
//! Label propagation needs one round per hop of a component's longest path,
//! and crawl data has long chains (a page edited a little every day). A
//! union-find does the same work in time linear in the pairs whatever the
//! chains, and its memory is per page, never per pair: McSherry, Isard and
//! Murray's "Scalability! But at what COST?" (HotOS 2015) is the argument.
//!
//! Page ids are interned to dense `u32` indexes by an open-addressing table
//! whose lookups are issued a batch at a time, so that their cache misses
//! overlap (interning is most of the time: a page's slot is a random place
//! in a table far larger than the cache). The forest uses union by size and
//! path halving. Every root also keeps the least label of its set, updated
//! at every union and whenever a page turns out to be a corpus page, so the
//! representative policy costs nothing extra; a node holds all of that in
//! 16 bytes, so a union touches one cache line per root.

use crate::tables::prefetch;

/// A page's dense index in one [`Components`].
pub type Page = u32;

/// A page's label: the lower one is the representative. `false` ranks first:
/// a page already in the corpus (with `corpus_wins`); ties go to the
/// smallest id.
pub type Label = (bool, i64);

/// How many lookups of a batch are in flight at once.
const LOOKAHEAD: usize = 16;

/// Ids interned between two checks of the table's load.
const RESERVE_CHUNK: usize = 4096;

/// A forest node: the parent, and at a root the set's size and least label.
#[derive(Clone, Copy, Debug)]
struct Node {
    parent: Page,
    /// The set's size, with [`LEAST_RANKS_FIRST`] set when the least label
    /// ranks first.
    size_and_rank: u32,
    least: i64,
}

const LEAST_RANKS_FIRST: u32 = 1 << 31;

impl Node {
    fn size(&self) -> u32 {
        self.size_and_rank & !LEAST_RANKS_FIRST
    }

    fn least(&self) -> Label {
        (self.size_and_rank & LEAST_RANKS_FIRST == 0, self.least)
    }

    fn set_least(&mut self, (later, id): Label) {
        self.least = id;
        self.size_and_rank = self.size() | if later { 0 } else { LEAST_RANKS_FIRST };
    }
}

/// The pages seen so far and the components that join them.
#[derive(Debug)]
pub struct Components {
    corpus_wins: bool,
    index: IdTable,
    ids: Vec<i64>,
    nodes: Vec<Node>,
    in_corpus: Vec<bool>,
    /// A batch's ids, kept for the next batch.
    batch_ids: Vec<i64>,
}

impl Components {
    /// Empty components; with `corpus_wins`, corpus pages rank first.
    pub fn new(corpus_wins: bool) -> Components {
        Components {
            corpus_wins,
            index: IdTable::default(),
            ids: Vec::new(),
            nodes: Vec::new(),
            in_corpus: Vec::new(),
            batch_ids: Vec::new(),
        }
    }

    /// Number of distinct pages.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Makes room for `pages` pages in all, at once rather than by doubling
    /// (each doubling of the index touches a new table and rehashes it).
    pub fn reserve(&mut self, pages: usize) {
        let more = pages.saturating_sub(self.len());
        self.index.reserve(more);
        self.ids.reserve(more);
        self.nodes.reserve(more);
        self.in_corpus.reserve(more);
    }

    /// The dense index of page `id`, added as a set of its own if new.
    pub fn page(&mut self, id: i64) -> Page {
        self.index.reserve(1);
        let page = self.index.get_or_insert(id, self.ids.len() as Page);
        self.push_if_new(id, page);
        page
    }

    /// The dense indexes of `ids`, in order, into `pages` (cleared first);
    /// new pages are added as sets of their own. Faster than [`Self::page`]
    /// per id: the table's cache misses overlap.
    pub fn pages(&mut self, ids: &[i64], pages: &mut Vec<Page>) {
        pages.clear();
        for (chunk, start) in ids.chunks(RESERVE_CHUNK).zip((0..).step_by(RESERVE_CHUNK)) {
            // Room for a chunk at a time: reserving for all of a large batch
            // would size the table for ids that are mostly seen already.
            self.index.reserve(chunk.len());
            for (at, &id) in chunk.iter().enumerate() {
                if let Some(&ahead) = ids.get(start + at + LOOKAHEAD) {
                    self.index.prefetch(ahead);
                }
                let page = self.index.get_or_insert(id, self.ids.len() as Page);
                self.push_if_new(id, page);
                pages.push(page);
            }
        }
    }

    fn push_if_new(&mut self, id: i64, page: Page) {
        if page as usize == self.ids.len() {
            assert!(
                page < LEAST_RANKS_FIRST,
                "more than 2^31 pages in one process"
            );
            self.ids.push(id);
            self.nodes.push(Node {
                parent: page,
                size_and_rank: 1,
                least: id,
            });
            self.in_corpus.push(false);
        }
    }

    /// The dense index of `id`, if the page was seen (and the index was not
    /// forgotten).
    pub fn get(&self, id: i64) -> Option<Page> {
        self.index.get(id)
    }

    /// Frees the id-to-page index once no more lookups by id will come.
    pub fn forget_index(&mut self) {
        self.index = IdTable::default();
        self.batch_ids = Vec::new();
    }

    /// The id of a page.
    pub fn id(&self, page: Page) -> i64 {
        self.ids[page as usize]
    }

    /// Whether the page was seen as the corpus side of a non-self pair.
    pub fn in_corpus(&self, page: Page) -> bool {
        self.in_corpus[page as usize]
    }

    /// Whether the page ranks first under the representative policy.
    pub fn ranks_first(&self, page: Page) -> bool {
        self.corpus_wins && self.in_corpus(page)
    }

    /// Adds a batch of pairs: `(query, corpus, corpus side is in the
    /// corpus)`, leaving their pages in `ends` (two per pair). Returns how
    /// many joined two components.
    pub fn add_pairs(
        &mut self,
        pairs: impl ExactSizeIterator<Item = (i64, i64, bool)> + Clone,
        ends: &mut Vec<Page>,
    ) -> usize {
        let mut ids = std::mem::take(&mut self.batch_ids);
        ids.clear();
        ids.extend(pairs.clone().flat_map(|(q, c, _)| [q, c]));
        self.pages(&ids, ends);
        self.batch_ids = ids;
        let mut joined = 0;
        for (pair, (_, _, corpus_in_corpus)) in ends.chunks_exact(2).zip(pairs) {
            if corpus_in_corpus {
                self.mark_in_corpus(pair[1]);
            }
            joined += usize::from(self.union(pair[0], pair[1]));
        }
        joined
    }

    /// Adds one pair; returns whether it joined two components.
    pub fn add_pair(&mut self, query: i64, corpus: i64, corpus_in_corpus: bool) -> bool {
        let mut ends = Vec::with_capacity(2);
        self.add_pairs([(query, corpus, corpus_in_corpus)].into_iter(), &mut ends) == 1
    }

    /// Records that `page` is already in the corpus; its label may now be
    /// the least of its set.
    pub fn mark_in_corpus(&mut self, page: Page) {
        if self.in_corpus[page as usize] {
            return;
        }
        self.in_corpus[page as usize] = true;
        if self.corpus_wins {
            let root = self.find(page) as usize;
            let least = self.nodes[root].least().min((false, self.id(page)));
            self.nodes[root].set_least(least);
        }
    }

    /// The root of the page's set, halving the path on the way.
    pub fn find(&mut self, mut page: Page) -> Page {
        loop {
            let parent = self.nodes[page as usize].parent;
            if parent == page {
                return page;
            }
            let grand = self.nodes[parent as usize].parent;
            self.nodes[page as usize].parent = grand;
            page = grand;
        }
    }

    /// Asks the CPU to fetch a page's node (at a root: its set's size and
    /// least label) into cache ahead of its use.
    pub fn prefetch_node(&self, page: Page) {
        if let Some(node) = self.nodes.get(page as usize) {
            prefetch(node);
        }
    }

    /// Asks the CPU to fetch a page's corpus flag ahead of
    /// [`Self::ranks_first`].
    pub fn prefetch_corpus_flag(&self, page: Page) {
        if let Some(flag) = self.in_corpus.get(page as usize) {
            prefetch(flag);
        }
    }

    /// Joins the sets of `a` and `b`; returns whether they were apart.
    pub fn union(&mut self, a: Page, b: Page) -> bool {
        let (mut ra, mut rb) = (self.find(a), self.find(b));
        if ra == rb {
            return false;
        }
        let (na, nb) = (self.nodes[ra as usize], self.nodes[rb as usize]);
        if na.size() < nb.size() {
            std::mem::swap(&mut ra, &mut rb);
        }
        let least = na.least().min(nb.least());
        self.nodes[rb as usize].parent = ra;
        let root = &mut self.nodes[ra as usize];
        root.size_and_rank = na.size() + nb.size();
        root.set_least(least);
        true
    }

    /// The least label of the page's set: its representative's.
    pub fn least(&mut self, page: Page) -> Label {
        let root = self.find(page);
        self.nodes[root as usize].least()
    }

    /// The id of the set's representative.
    pub fn representative(&mut self, page: Page) -> i64 {
        self.least(page).1
    }

    /// Pages in the page's set.
    pub fn component_size(&mut self, page: Page) -> u32 {
        let root = self.find(page);
        self.nodes[root as usize].size()
    }

    /// Heap bytes held per page, for the README's memory figure: the id,
    /// the node, the corpus flag, and the index's slots (16 bytes each, 1.33
    /// to 2.67 of them per page).
    pub fn bytes_per_page() -> (usize, usize) {
        let fixed = 8 + std::mem::size_of::<Node>() + 1;
        (fixed + 16 * 4 / 3, fixed + 16 * 8 / 3)
    }
}

/// A page id's bits mixed so that every bit of the result depends on every
/// bit of the id (SplitMix64's finalizer): the top bits index tables and
/// bitmaps. A single multiply (Fibonacci hashing) is not enough: ids with
/// multiplicative structure of their own (`x * A mod p`, as one tool
/// scatters ids) left 84% of a table's slots empty and up to 7 ids on one,
/// and the lookups four times slower.
pub fn mix(id: i64) -> u64 {
    let mut z = id as u64;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Ids to pages: open addressing with linear probing, a slot being the id
/// and its page (one cache line holds four slots), grown to twice the size
/// once three quarters are full. Simpler and, with batched prefetches,
/// faster here than a general hash map: keys are never removed.
#[derive(Debug, Default)]
pub(crate) struct IdTable {
    slots: Vec<(i64, Page)>,
    len: usize,
    shift: u32,
}

const EMPTY: Page = Page::MAX;

/// No page: a marker in arrays of pages.
pub const MISSING: Page = EMPTY;

impl IdTable {
    fn capacity_for(ids: usize) -> usize {
        (ids * 4 / 3 + 1).next_power_of_two().max(8)
    }

    fn slot_of(&self, id: i64) -> usize {
        (mix(id) >> self.shift) as usize
    }

    fn prefetch(&self, id: i64) {
        prefetch(&self.slots[self.slot_of(id)]);
    }

    /// Grows the table so that `more` inserts keep it at most 3/4 full.
    pub(crate) fn reserve(&mut self, more: usize) {
        let needed = self.len + more;
        if needed * 4 <= self.slots.len() * 3 {
            return;
        }
        let capacity = Self::capacity_for(needed);
        let old = std::mem::replace(&mut self.slots, vec![(0, EMPTY); capacity]);
        self.shift = 64 - capacity.trailing_zeros();
        for (id, page) in old {
            if page != EMPTY {
                let slot = self.find_slot(id);
                self.slots[slot] = (id, page);
            }
        }
    }

    /// The slot holding `id`, or the empty slot where it would go.
    fn find_slot(&self, id: i64) -> usize {
        let mask = self.slots.len() - 1;
        let mut slot = self.slot_of(id);
        loop {
            let (key, page) = self.slots[slot];
            if page == EMPTY || key == id {
                return slot;
            }
            slot = (slot + 1) & mask;
        }
    }

    /// The page of `id`, inserting `next` for it if absent. The caller has
    /// reserved room.
    pub(crate) fn get_or_insert(&mut self, id: i64, next: Page) -> Page {
        let slot = self.find_slot(id);
        if self.slots[slot].1 == EMPTY {
            self.slots[slot] = (id, next);
            self.len += 1;
        }
        self.slots[slot].1
    }

    fn get(&self, id: i64) -> Option<Page> {
        if self.slots.is_empty() {
            return None;
        }
        let page = self.slots[self.find_slot(id)].1;
        (page != EMPTY).then_some(page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_chain_is_one_component_with_the_least_id() {
        let mut c = Components::new(false);
        for i in (0..100_000i64).rev() {
            c.add_pair(i + 1, i, false);
        }
        let last = c.get(100_000).unwrap();
        assert_eq!(c.component_size(last), 100_001);
        assert_eq!(c.representative(last), 0);
    }

    #[test]
    fn corpus_pages_rank_first_even_when_marked_late() {
        let mut c = Components::new(true);
        c.add_pair(1, 5, true);
        c.add_pair(1, 3, false);
        let one = c.get(1).unwrap();
        assert_eq!(c.representative(one), 5);
        // A later pair shows 3 is a corpus page too: the least corpus id wins.
        c.add_pair(2, 3, true);
        assert_eq!(c.representative(one), 3);
        assert_eq!(c.least(one), (false, 3));
        assert_eq!(c.component_size(one), 4);
        let mut plain = Components::new(false);
        plain.add_pair(9, 2, true);
        let nine = plain.get(9).unwrap();
        assert_eq!(plain.representative(nine), 2);
        assert_eq!(plain.least(nine), (true, 2));
    }

    #[test]
    fn union_reports_only_joins() {
        let mut c = Components::new(false);
        assert!(c.add_pair(1, 2, false));
        assert!(!c.add_pair(2, 1, false));
        assert!(!c.add_pair(7, 7, false));
        assert!(c.add_pair(7, i64::MIN, false));
        assert_eq!(c.len(), 4);
        let min = c.get(i64::MIN).unwrap();
        assert_eq!(c.representative(min), i64::MIN);
        assert_eq!(c.get(3), None);
    }

    #[test]
    fn ids_with_structure_spread_over_the_table() {
        // Sequential, shifted, and multiplied by a constant modulo a prime
        // (the ids that left 84% of the slots empty under a single
        // multiply): each fills about as many slots as random keys would.
        let n = 1 << 18;
        let families: [&dyn Fn(i64) -> i64; 3] = [&|i| i, &|i| i << 40, &|i| {
            ((i as i128 * 2_862_933_555_777_941_757) % 9_223_372_036_854_775_783) as i64
        }];
        for family in families {
            let mut table = IdTable::default();
            table.reserve(n);
            let mut home = vec![false; table.slots.len()];
            for i in 0..n as i64 {
                home[table.slot_of(family(i))] = true;
            }
            // n keys in 2n slots: 1 - e^(-1/2) = 39% of them, at random (a
            // single multiply fills 32% for the third family, 10% at n = 2^20).
            let used = home.iter().filter(|&&h| h).count() as f64 / home.len() as f64;
            assert!(used > 0.36, "{used}");
        }
    }

    #[test]
    fn the_index_finds_every_id_through_growth() {
        let mut c = Components::new(false);
        // Ids that collide in their low bits, and both extremes.
        let ids: Vec<i64> = (0..50_000i64)
            .map(|i| i << 40)
            .chain([i64::MIN, i64::MAX, 0, -1])
            .collect();
        let mut pages = Vec::new();
        c.pages(&ids, &mut pages);
        assert_eq!(c.len(), 50_003);
        for (&id, &page) in ids.iter().zip(&pages) {
            assert_eq!(c.get(id), Some(page));
            assert_eq!(c.id(page), id);
        }
        let mut again = Vec::new();
        c.pages(&ids, &mut again);
        assert_eq!(pages, again);
    }
}
