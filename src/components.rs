//! Connected components of the pair graph by union-find.
//!
//! Label propagation needs one round per hop of a component's longest path,
//! and crawl data has long chains (a page edited a little every day). A
//! union-find does the same work in time linear in the pairs whatever the
//! chains, and its memory is per page, never per pair: McSherry, Isard and
//! Murray's "Scalability! But at what COST?" (HotOS 2015) is the argument.
//!
//! Page ids are interned to dense `u32` indexes; the forest uses union by
//! size and path halving. Every root also keeps the page with the least
//! label of its set, updated at every union and whenever a page turns out to
//! be a corpus page, so the representative policy costs nothing extra.

use rustc_hash::FxHashMap;

/// A page's dense index in one [`Components`].
pub type Page = u32;

/// A page's label: the lower one is the representative. Rank 0 is a page
/// already in the corpus (with `corpus_wins`), 1 a new page; ties go to the
/// smallest id.
pub type Label = (u8, i64);

/// The pages seen so far and the components that join them.
#[derive(Debug, Default)]
pub struct Components {
    corpus_wins: bool,
    index: FxHashMap<i64, Page>,
    ids: Vec<i64>,
    parent: Vec<Page>,
    /// Pages in the set; meaningful at roots.
    size: Vec<u32>,
    /// The page of least label in the set; meaningful at roots.
    least: Vec<Page>,
    in_corpus: Vec<bool>,
}

impl Components {
    /// Empty components; with `corpus_wins`, corpus pages rank first.
    pub fn new(corpus_wins: bool) -> Components {
        Components {
            corpus_wins,
            ..Components::default()
        }
    }

    /// Number of distinct pages.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The dense index of page `id`, added as a set of its own if new.
    pub fn page(&mut self, id: i64) -> Page {
        let next = self.ids.len() as Page;
        let page = *self.index.entry(id).or_insert(next);
        if page == next {
            assert!(next < Page::MAX, "more than 2^32 - 1 pages in one process");
            self.ids.push(id);
            self.parent.push(page);
            self.size.push(1);
            self.least.push(page);
            self.in_corpus.push(false);
        }
        page
    }

    /// The dense index of `id`, if the page was seen.
    pub fn get(&self, id: i64) -> Option<Page> {
        self.index.get(&id).copied()
    }

    /// The id of a page.
    pub fn id(&self, page: Page) -> i64 {
        self.ids[page as usize]
    }

    /// Whether the page was seen as the corpus side of a non-self pair.
    pub fn in_corpus(&self, page: Page) -> bool {
        self.in_corpus[page as usize]
    }

    /// The page's label under the representative policy.
    pub fn label(&self, page: Page) -> Label {
        let rank = u8::from(!(self.corpus_wins && self.in_corpus(page)));
        (rank, self.id(page))
    }

    /// Adds one pair: joins the two pages, and marks the corpus side as a
    /// corpus page when the pair says so. Returns whether two components
    /// were joined.
    pub fn add_pair(&mut self, query: i64, corpus: i64, corpus_in_corpus: bool) -> bool {
        let (q, c) = (self.page(query), self.page(corpus));
        if corpus_in_corpus {
            self.mark_in_corpus(c);
        }
        self.union(q, c)
    }

    /// Records that `page` is already in the corpus; its label may now be
    /// the least of its set.
    pub fn mark_in_corpus(&mut self, page: Page) {
        if self.in_corpus[page as usize] {
            return;
        }
        self.in_corpus[page as usize] = true;
        let root = self.find(page);
        self.least[root as usize] = self.lesser(self.least[root as usize], page);
    }

    /// The root of the page's set, halving the path on the way.
    pub fn find(&mut self, mut page: Page) -> Page {
        loop {
            let parent = self.parent[page as usize];
            if parent == page {
                return page;
            }
            let grand = self.parent[parent as usize];
            self.parent[page as usize] = grand;
            page = grand;
        }
    }

    /// Joins the sets of `a` and `b`; returns whether they were apart.
    pub fn union(&mut self, a: Page, b: Page) -> bool {
        let (mut ra, mut rb) = (self.find(a), self.find(b));
        if ra == rb {
            return false;
        }
        if self.size[ra as usize] < self.size[rb as usize] {
            std::mem::swap(&mut ra, &mut rb);
        }
        self.parent[rb as usize] = ra;
        self.size[ra as usize] += self.size[rb as usize];
        self.least[ra as usize] = self.lesser(self.least[ra as usize], self.least[rb as usize]);
        true
    }

    /// The set's representative: its page of least label.
    pub fn representative(&mut self, page: Page) -> Page {
        let root = self.find(page);
        self.least[root as usize]
    }

    /// Pages in the page's set.
    pub fn component_size(&mut self, page: Page) -> u32 {
        let root = self.find(page);
        self.size[root as usize]
    }

    fn lesser(&self, a: Page, b: Page) -> Page {
        if self.label(b) < self.label(a) {
            b
        } else {
            a
        }
    }

    /// Heap bytes held per page, for the README's memory figure.
    pub fn bytes_per_page() -> usize {
        // ids, parent, size, least, in_corpus, and a hash-map slot of key,
        // value and control byte.
        8 + 4 + 4 + 4 + 1 + (8 + 4 + 1)
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
        let rep = c.representative(last);
        assert_eq!(c.id(rep), 0);
    }

    #[test]
    fn corpus_pages_rank_first_even_when_marked_late() {
        let mut c = Components::new(true);
        c.add_pair(1, 5, true);
        c.add_pair(1, 3, false);
        let one = c.get(1).unwrap();
        let rep = c.representative(one);
        assert_eq!(c.id(rep), 5);
        // A later pair shows 3 is a corpus page too: the least corpus id wins.
        c.add_pair(2, 3, true);
        let rep = c.representative(one);
        assert_eq!(c.id(rep), 3);
        assert_eq!(c.component_size(one), 4);
        let mut plain = Components::new(false);
        plain.add_pair(9, 2, true);
        let nine = plain.get(9).unwrap();
        let rep = plain.representative(nine);
        assert_eq!(plain.id(rep), 2);
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
        let rep = c.representative(min);
        assert_eq!(c.id(rep), i64::MIN);
    }
}
