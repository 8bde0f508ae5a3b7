//! A worker's handles on its process's graph while it is built: the pairs
//! it adds ([`GraphWriter`]), interned a chunk at a time, and the keys of
//! the pages table's rows ([`KeyWriter`]).

use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;

use super::*;
use crate::cluster::keep_order::{KeyWords, RowKeys, MAX_KEY_WORDS};
use crate::exec::parallel::prefetch;

/// A worker's current block of page numbers.
#[derive(Debug)]
pub(super) struct Block<'a> {
    pub(super) next: usize,
    pub(super) end: usize,
    /// The process's count of page numbers handed out.
    pub(super) counter: &'a AtomicUsize,
}

impl Block<'_> {
    pub(super) fn next(&mut self, arrays: &Arrays) -> Page {
        if self.next == self.end {
            self.next = self.counter.fetch_add(BLOCK, Relaxed);
            self.end = self.next + BLOCK;
            assert!(
                self.end <= arrays.ids.len(),
                "a block of pages beyond the arrays"
            );
        }
        self.next += 1;
        (self.next - 1) as Page
    }
}

/// One worker's handle to write keys of pages ([`SharedGraph::write_keys`]).
pub(crate) struct KeyWriter<'a> {
    pub(super) arrays: &'a Arrays,
    pub(super) words: usize,
    pub(super) homes: Vec<usize>,
    /// A batch's pages ([`MISSING`]: a row of no page).
    pub(super) pages: Vec<Page>,
    pub(super) repeats: Vec<Repeat>,
    /// Pages whose keys were first written by a row whose canonical link
    /// names another page, with that page's hash
    /// ([`crate::cluster::keep_order::RowKeys::naming`]).
    pub(super) naming: Vec<(Page, u64)>,
    /// Hashes of the pages the pages table's rows are.
    pub(super) listed: Vec<u64>,
    /// Rows whose id is a page of the graph.
    pub(super) matched: usize,
}

impl KeyWriter<'_> {
    /// Looks up the pages of the rows `ids`, to be written by
    /// [`Self::write`]: how many rows are pages of the graph
    /// ([`Self::is_page`] says which).
    pub(crate) fn find(&mut self, ids: &[i64]) -> usize {
        let arrays = self.arrays;
        // A row's slot, then its page's flags and keys, are random places
        // in arrays far larger than the cache: the batch's pages are looked
        // up first, each slot fetched ahead, then written, each page ahead.
        self.homes.clear();
        self.homes
            .extend(ids.iter().map(|&id| arrays.table.home(id)));
        self.pages.clear();
        for (at, &id) in ids.iter().enumerate() {
            if let Some(&ahead) = self.homes.get(at + LOOKAHEAD) {
                prefetch(arrays.table.slot(ahead));
            }
            self.pages.push(arrays.page_of(id).unwrap_or(MISSING));
        }
        let found = self.pages.iter().filter(|&&page| page != MISSING).count();
        self.matched += found;
        found
    }

    /// Whether row `row` of the rows last found is a page of the graph.
    pub(crate) fn is_page(&self, row: usize) -> bool {
        self.pages[row] != MISSING
    }

    /// Marks the pages of the rows last found ([`Self::find`]) as pages of
    /// the corpus: the rows are the corpus's own.
    pub(crate) fn mark_in_corpus(&self) {
        for &page in self.pages.iter().filter(|&&page| page != MISSING) {
            self.arrays.mark_in_corpus(page);
        }
    }

    /// Adds the hashes of pages the pages table lists
    /// ([`crate::cluster::keep_order::KeepOrder::list_pages`]).
    pub(crate) fn list(&mut self, hashes: &mut Vec<u64>) {
        self.listed.append(hashes);
    }

    /// Writes the keys of the rows last found ([`Self::find`]) that are
    /// pages of the graph; `keys.words` holds [`Self::words`] a row.
    pub(crate) fn write(&mut self, keys: &RowKeys) {
        debug_assert_eq!(keys.words.len(), self.pages.len() * self.words);
        let arrays = self.arrays;
        let pages = &self.pages;
        let rows = keys.words.chunks_exact(self.words.max(1));
        let mut naming = keys.naming.iter().peekable();
        for (at, (&page, row)) in pages.iter().zip(rows).enumerate() {
            let names = naming
                .next_if(|&&(row, _)| row == at)
                .map(|&(_, hash)| hash);
            if let Some(&ahead) = pages.get(at + LOOKAHEAD).filter(|&&p| p != MISSING) {
                prefetch(arrays.flags.get(ahead as usize));
                arrays.keys.prefetch(ahead);
            }
            if page == MISSING {
                continue;
            }
            let flags = arrays.flags.get(page as usize).fetch_or(HAS_KEYS, Relaxed);
            if flags & HAS_KEYS == 0 {
                arrays.keys.write(page, row);
                self.naming.extend(names.map(|hash| (page, hash)));
            } else {
                let mut keys = [0; MAX_KEY_WORDS];
                keys[..row.len()].copy_from_slice(row);
                self.repeats.push(Repeat {
                    page,
                    keys,
                    names,
                    of_corpus: false,
                });
            }
        }
    }
}

/// A row of the pages table for a page whose keys were already written:
/// the least keys are kept, whichever came first.
#[derive(Debug)]
pub(crate) struct Repeat {
    pub(super) page: Page,
    pub(super) keys: KeyWords,
    /// The hash of the page its canonical link names, if another.
    pub(super) names: Option<u64>,
    /// Whether the row is the corpus's.
    pub(super) of_corpus: bool,
}

/// One worker's handle on a [`SharedGraph`] being built.
#[derive(Debug)]
pub struct GraphWriter<'a> {
    pub(super) graph: &'a SharedGraph,
    pub(super) block: Block<'a>,
    /// A batch's ids, kept for the next batch.
    pub(super) ids: Vec<i64>,
    /// A chunk's homes, kept for the next chunk.
    pub(super) homes: Vec<usize>,
}

impl GraphWriter<'_> {
    /// Adds a batch of pairs: `(query, corpus, corpus side is in the
    /// corpus)`, leaving their pages in `ends` (two per pair). Returns how
    /// many joined two components.
    pub fn add_pairs(
        &mut self,
        pairs: impl Iterator<Item = (i64, i64, bool)> + Clone,
        ends: &mut Vec<Page>,
    ) -> usize {
        let mut ids = std::mem::take(&mut self.ids);
        ids.clear();
        ids.extend(pairs.clone().flat_map(|(q, c, _)| [q, c]));
        ends.clear();
        let mut joined = 0;
        let mut in_corpus = pairs.map(|(_, _, in_corpus)| in_corpus);
        for chunk in ids.chunks(CHUNK) {
            let start = ends.len();
            let (arrays, crowded) = loop {
                let arrays = self.graph.room_for_a_chunk();
                match self.intern(&arrays, chunk, ends) {
                    Some(probes) => break (arrays, probes > CROWDED_CHUNK_PROBES * chunk.len()),
                    None => {
                        // Interned again once the table is hashed: the ids
                        // interned so far keep their pages.
                        ends.truncate(start);
                        drop(arrays);
                        self.graph.spread_by_hash();
                    }
                }
            };
            let pages = &ends[start..];
            for (at, pair) in pages.chunks_exact(2).enumerate() {
                if let Some(ahead) = pages.get(2 * (at + LOOKAHEAD)..2 * (at + LOOKAHEAD) + 2) {
                    arrays.nodes.prefetch(ahead[0]);
                    arrays.nodes.prefetch(ahead[1]);
                    // Read by `mark_in_corpus`, at random as the nodes are.
                    prefetch(arrays.flags.get(ahead[1] as usize));
                }
                // Halfway there, their nodes have come: their parents are
                // the next misses of the finds.
                let near = 2 * (at + LOOKAHEAD / 2);
                if let Some(ahead) = pages.get(near..near + 2) {
                    arrays.nodes.prefetch(arrays.nodes.parent(ahead[0]));
                    arrays.nodes.prefetch(arrays.nodes.parent(ahead[1]));
                }
                if in_corpus.next().unwrap_or(false) {
                    arrays.mark_in_corpus(pair[1]);
                }
                joined += usize::from(arrays.union(pair[0], pair[1]));
            }
            if crowded && arrays.table.placement.is_ordered() {
                drop(arrays);
                self.graph.spread_by_hash();
            }
        }
        self.ids = ids;
        joined
    }

    /// Appends the pages of a chunk's ids to `ends`; gives the slots probed
    /// past their homes, or `None` if homes in id order crowd (the ids
    /// before are interned, and counted).
    ///
    /// The chunk's homes are placed first, in a loop of their own; the
    /// lookups then prefetch a home already placed. Placing each home twice
    /// inside the loop of cache misses (once to prefetch it, once to probe
    /// it) is slower, however far ahead the prefetch.
    fn intern(&mut self, arrays: &Arrays, chunk: &[i64], ends: &mut Vec<Page>) -> Option<usize> {
        let (mut fresh, mut probes) = (0, 0);
        let mut crowded = false;
        let mut homes = std::mem::take(&mut self.homes);
        homes.clear();
        homes.extend(chunk.iter().map(|&id| arrays.table.home(id)));
        for (at, (&id, &home)) in chunk.iter().zip(&homes).enumerate() {
            if let Some(&ahead) = homes.get(at + LOOKAHEAD) {
                prefetch(arrays.table.slot(ahead));
            }
            match arrays.get_or_insert(id, home, &mut self.block, &mut fresh, &mut probes) {
                Some(page) => ends.push(page),
                None => {
                    crowded = true;
                    break;
                }
            }
        }
        self.homes = homes;
        self.graph.interned.fetch_add(fresh, Relaxed);
        (!crowded).then_some(probes)
    }
}
