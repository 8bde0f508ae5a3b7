//! Connected components of the pair graph by union-find: one per process,
//! built by all of its workers at once.
//!
//! Label propagation needs one round per hop of a component's longest path,
//! and crawl data has long chains (a page edited a little every day). A
//! union-find does the same work in time linear in the pairs whatever the
//! chains, and its memory is per page, never per pair: McSherry, Isard and
//! Murray's "Scalability! But at what COST?" (HotOS 2015) is the argument.
//!
//! Why one per process rather than one per worker: `match` writes pairs
//! sorted by query id and page ids are hashes of URLs, so the pairs of a
//! small cluster lie in different row groups, read by different workers. With
//! a union-find per worker nearly every cluster of a night spans workers and
//! has to be joined afterwards, at one worker. Instead, the workers of a
//! process intern ids into one table and link one forest (compare-and-swap,
//! as in Jayanti and Tarjan's concurrent union-find), so joins happen only
//! between processes.
//!
//! Once every worker has read its pairs, each worker takes the components
//! whose root falls to it ([`SharedGraph::split`]): the rest of the job sees
//! a worker's share as whole components of its own, disjoint from the other
//! local workers' shares.
//!
//! Ids are interned to dense `u32` pages by an open-addressing table whose
//! lookups are issued a batch at a time, so that their cache misses
//! overlap (interning is most of the time: a page's slot is a random place
//! in a table far larger than the cache). Pages are handed out to workers in
//! blocks, so a worker's new pages cost no shared counter. Roots are linked
//! by a random priority (a hash of the page), which needs no size or rank
//! kept at the root by a second compare-and-swap, and with path halving has
//! the bounds of union by rank in expectation (Goel, Khanna, Larkin and
//! Tarjan, "Disjoint Set Union with Randomized Linking", SODA 2014); each
//! root's size and least label are counted once the forest is
//! done, by the worker the root falls to.
//!
//! **The id table.** An id's *home* slot is its place in the id range of
//! the workers' first row groups, scaled to the table, with 1/64 of the
//! slots spare at each end: `match` writes pairs sorted by query id and
//! ids are URL hashes, spread evenly, so a row group's query ids walk the
//! table through cache lines just fetched, where hashed homes would put
//! each lookup at random in a table far larger than the cache. Ids that
//! crowd their homes (a lookup probing past 1,024 slots, or a chunk of
//! 4,096 ids past 32 an id on average) have the table rebuilt once with
//! hashed homes, pages unchanged. A chunk's homes are placed first, then
//! looked up, each lookup prefetching the home 16 ids ahead. A slot is
//! claimed by compare-and-swap before its page number is given out, so two
//! workers meeting a new id agree on its page. The table is sized before
//! any pair is added, from the largest worker's estimate of the distinct
//! pages ([`crate::cluster::page_estimate`]), at 3/2 of it in parts of a
//! power of two slots, or fewer if the linear estimate is near
//! ([`SharedGraph::prepare`]): a table twice too large costs cache and TLB
//! misses on every lookup, a low estimate one doubling. It is one mapping of
//! fresh memory, each worker first touching its own share, unmapped once
//! the forest is done.
//!
//! **The forest.** The arrays by page (id, node, flags, worker) grow in
//! segments of 2^22 pages, never copied. A page's node is one 8-byte word:
//! its parent while the forest is built; at a root, once counted, the set's
//! size and its least label's slot in a vector of the worker's roots,
//! `(id, page)`. The ids by page are freed once the workers have
//! placed each page with its id in its share, before the shares are
//! sorted. Paths are halved with plain stores: every parent outranks its
//! child, so a halving that read a stale grandparent still points up, and
//! only roots are linked.
//!
//! **Why not fewer reads a pair.** On pairs in random order a pair costs
//! about as much to intern (its two slots) as to link (its two nodes and
//! their parents), and two ideas to cut the reads were modelled outside
//! the job and dropped (issue 73). A page's parent kept in its slot,
//! which interning has just read, linked no faster, and the arrays by page
//! then need the pages numbered again once the forest is done, a random
//! read a page. Skipping the pairs that lie inside a giant component once a
//! sample has found it (Afforest: Sutton, Ben-Nun and Barak, IPDPS 2018)
//! saves little in a list of pairs: a pair's nodes must be read to know it
//! lies inside (the very reads of its finds on a compressed forest), and a
//! random giant component only forms once the pairs in outnumber half its
//! pages.
//!
//! **The shares.** Each worker points the pages of a range at their roots;
//! a page that ranks first marks its root, so the count reads no flag at
//! random. Each component falls to one worker: the few big enough to
//! unbalance the workers (an eighth of the process's pages on two workers)
//! are placed by their work (pages, and pairs under the direct policy) on
//! the least-loaded one, and the rest by a hash of their root, in
//! proportion to the room the big ones leave each worker. Its pairs are
//! routed by a two-byte owner per page. A worker gets its components'
//! pages sorted by id without a sort's second copy ([`IdBuckets`]): the
//! workers count their pages by share and by bucket of ids as they
//! flatten, each share's worker makes room for exactly its pages, the
//! workers write each page at its bucket's next place in its share, and
//! each bucket is sorted in the cache. One pass in id order
//! counts each root's size and representative (the least page by rank and
//! then keys, the first in id order among equals), and keeps whether each page ranks first
//! by its place, for the steps after the split. A giant component (a 10M-page chain, a
//! 1M-leaf star) falls to one worker, which takes the process's threads in
//! proportion to its share of the pages for its sorts, counts and rows:
//! the cores the other workers leave idle.
//!
//! The parts: [`page`] (a page, its label and flags, shared by all),
//! [`writers`] (a worker's handles while the graph is built), [`intern`]
//! (ids to pages), [`forest`] (the union-find) and [`share`] (a worker's
//! share of the components); the graph that ties them is here.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU16, AtomicU32, AtomicU64, AtomicU8, AtomicUsize,
};
use std::sync::{Arc, Barrier, Mutex, RwLock, RwLockReadGuard};

mod forest;
mod intern;
mod page;
mod share;
mod writers;

pub use forest::*;
pub use intern::*;
pub use page::*;
pub use share::*;
pub use writers::*;

#[cfg(test)]
use crate::cluster::keep_order::RowKeys;
use crate::cluster::keep_order::{KeepOrder, KeyWords, PageSet, MAX_KEY_WORDS};
use crate::exec::parallel::in_chunks;
use crate::exec::parallel::lock;
use crate::exec::parallel::prefetch;
use crate::exec::runtime::MAX_WORKERS;

/// Which of the pages `naming` names (sorted by hash) some list of `lists`
/// (each sorted) holds: one pass along each list, read in order rather than
/// searched at random (a night's table lists millions of pages).
fn held_by_any(lists: &[&Vec<u64>], naming: &[(Page, u64)]) -> Vec<bool> {
    let mut held = vec![false; naming.len()];
    for list in lists {
        let mut at = 0;
        for ((_, hash), held) in naming.iter().zip(&mut held) {
            while list.get(at).is_some_and(|listed| listed < hash) {
                at += 1;
            }
            *held |= list.get(at) == Some(hash);
        }
    }
    held
}

/// Keeps `hashes` in `lists`, sorted and without repeats.
fn add_sorted(lists: &RwLock<Vec<Vec<u64>>>, mut hashes: Vec<u64>) {
    if hashes.is_empty() {
        return;
    }
    radsort::sort(&mut hashes[..]);
    hashes.dedup();
    lists
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .push(hashes);
}

/// Sets word `at` of each page in `naming`, whose first row's link names
/// the page of the hash beside it, by whether one of `lists` lists it.
fn name_pages(arrays: &Arrays, lists: &[&Vec<u64>], at: usize, mut naming: Vec<(Page, u64)>) {
    radsort::sort_by_key(&mut naming, |&(_, names)| names);
    let listed = held_by_any(lists, &naming);
    for (&(page, _), listed) in naming.iter().zip(listed) {
        let word = arrays.keys.get(page)[at];
        arrays
            .keys
            .write_word(page, at, KeepOrder::named_word(word, listed));
    }
}

/// The pages and components of one process, built by its `workers` at once
/// ([`SharedGraph::writer`]), then split among them
/// ([`SharedGraph::split`]).
#[derive(Debug)]
pub struct SharedGraph {
    corpus_wins: bool,
    workers: usize,
    /// Words of keys a page ([`crate::cluster::keep_order::KeepOrder::words`]).
    key_words: usize,
    /// Rows of the pages table for pages whose keys were already written.
    repeats: Mutex<Vec<Repeat>>,
    /// Pages whose keys were first written by a row of the pages table
    /// whose canonical link names another page, with that page's hash:
    /// their word waits on every table ([`Self::finish_keys`]).
    naming: Mutex<Vec<(Page, u64)>>,
    /// The same for rows of the corpus.
    corpus_naming: Mutex<Vec<(Page, u64)>>,
    /// The hashes of every page named ([`Self::list_named`]).
    named: RwLock<PageSet>,
    /// Hashes of the pages named that the corpus holds, each worker's
    /// sorted.
    held: RwLock<Vec<Vec<u64>>>,
    /// Rows of the table being read that are pages of the graph, summed
    /// over the workers.
    matched_rows: AtomicUsize,
    /// Whether a worker failed to read its rows of the table being read:
    /// [`Self::matched_rows`] is then short.
    keys_failed: AtomicBool,
    /// Hashes of the pages the pages table lists, each worker's sorted:
    /// whether a canonical link names one of them
    /// ([`crate::cluster::keep_order::KeepOrder::named_word`]).
    listed: RwLock<Vec<Vec<u64>>>,
    barrier: Barrier,
    building: RwLock<Arrays>,
    /// Page numbers handed out (in blocks).
    pages: AtomicUsize,
    /// Ids interned, as workers report them chunk by chunk.
    interned: AtomicUsize,
    /// The workers' largest estimates of the process's pages.
    estimate: AtomicUsize,
    linear: AtomicUsize,
    /// The least and greatest id the workers sampled (the least above the
    /// greatest: none yet).
    least_id: AtomicI64,
    greatest_id: AtomicI64,
    /// The roots of sampled pairs, from every worker's log, for placing
    /// big components ([`Forest::place_big_components`]).
    pair_samples: Mutex<RootCounts>,
    /// The finished forest and the ids by page, while the workers take
    /// their shares.
    done: Mutex<Option<(Arc<Forest>, Arc<IdsByPage>)>>,
    /// The least and greatest id of the process's pages, as
    /// [`crate::exec::sorting::ordered`], for [`IdBuckets`].
    ids_least: AtomicU64,
    ids_most: AtomicU64,
    /// Each worker's pages for each share, by bucket of ids.
    counts_out: Mailbox<Vec<u32>>,
    /// Each share's places for each worker's pages.
    places_out: Mailbox<Places>,
    /// Pairs on their way to the worker their components fall to.
    pairs_out: Mailbox<PairLog>,
}

impl SharedGraph {
    /// An empty graph for a process of `workers` workers; with
    /// `corpus_wins`, corpus pages rank first; each page has `key_words`
    /// words of keys.
    pub fn new(corpus_wins: bool, workers: usize, key_words: usize) -> SharedGraph {
        assert!(workers <= MAX_WORKERS, "more than {MAX_WORKERS} workers");
        SharedGraph {
            corpus_wins,
            workers,
            key_words,
            repeats: Mutex::new(Vec::new()),
            naming: Mutex::new(Vec::new()),
            corpus_naming: Mutex::new(Vec::new()),
            named: RwLock::new(PageSet::default()),
            held: RwLock::new(Vec::new()),
            matched_rows: AtomicUsize::new(0),
            keys_failed: AtomicBool::new(false),
            listed: RwLock::new(Vec::new()),
            barrier: Barrier::new(workers),
            building: RwLock::new(Arrays::default()),
            pages: AtomicUsize::new(0),
            interned: AtomicUsize::new(0),
            estimate: AtomicUsize::new(0),
            linear: AtomicUsize::new(0),
            least_id: AtomicI64::new(i64::MAX),
            greatest_id: AtomicI64::new(i64::MIN),
            pair_samples: Mutex::new(RootCounts::default()),
            done: Mutex::new(None),
            ids_least: AtomicU64::new(u64::MAX),
            ids_most: AtomicU64::new(0),
            counts_out: Mailbox::new(workers),
            places_out: Mailbox::new(workers),
            pairs_out: Mailbox::new(workers),
        }
    }

    /// A worker's handle to add its pairs.
    pub fn writer(&self) -> GraphWriter<'_> {
        GraphWriter {
            graph: self,
            block: Block {
                next: 0,
                end: 0,
                counter: &self.pages,
            },
            ids: Vec::new(),
            homes: Vec::new(),
        }
    }

    /// Page numbers handed out so far (distinct pages, and the unused rest
    /// of each worker's block).
    pub(crate) fn pages(&self) -> usize {
        self.pages.load(Relaxed)
    }

    /// The workers of the process.
    pub(crate) fn workers(&self) -> usize {
        self.workers
    }

    /// Called by each of the process's workers (`worker` its index among
    /// them) before it adds pairs, with its estimate of the process's
    /// pages: sizes the id table and the arrays by page for the largest
    /// estimate, worker 0 allocating the table and every worker first
    /// touching its share of it, rather than one worker growing it by
    /// doubling while the others wait (each doubling rehashes the table). The arrays by page
    /// are written in order of page number, as pages come: their memory is
    /// left to be backed then.
    ///
    /// The table has half again as many slots as the likely pages, so that
    /// an estimate a tenth short still leaves it under 3/4 full, but never
    /// more than the least power of two above a tenth more than the linear
    /// estimate (which counts pages whose pairs lie together right): a
    /// table twice too large costs cache and TLB misses on every lookup,
    /// one too small a doubling.
    ///
    /// `range` is the least and greatest id the worker has seen (in its
    /// first row group, as `pages` is estimated from): with every worker's,
    /// the range the table's homes are placed by, in id order
    /// ([`Placement`]). No range from any worker: homes are hashed.
    pub fn prepare(&self, worker: usize, pages: PageEstimate, range: Option<(i64, i64)>) {
        self.estimate.fetch_max(pages.likely, Relaxed);
        self.linear.fetch_max(pages.linear, Relaxed);
        if let Some((least, most)) = range {
            self.least_id.fetch_min(least, Relaxed);
            self.greatest_id.fetch_max(most, Relaxed);
        }
        self.barrier.wait();
        if worker == 0 {
            let pages = self.estimate.load(Relaxed) + self.margin();
            let linear = self.linear.load(Relaxed) + self.margin();
            let slots = (pages * 3 / 2).min((linear * 11 / 10).next_power_of_two());
            let mut arrays = self.building.write().unwrap_or_else(|e| e.into_inner());
            let (least, most) = (self.least_id.load(Relaxed), self.greatest_id.load(Relaxed));
            let range = (least <= most).then_some((least, most));
            arrays.table = IdTable::new(slots, range);
            arrays.keys = PageKeys::new(self.key_words);
            arrays.grow_arrays(pages);
            tracing::debug!(slots, pages, "union-find prepared");
        }
        self.barrier.wait();
        self.building
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .table
            .touch_parts(worker, self.workers);
        self.barrier.wait();
    }

    /// Ids and page numbers the workers may take beyond what was counted
    /// when one checked for room: a chunk and a block each, twice over.
    fn margin(&self) -> usize {
        2 * self.workers * CHUNK.max(BLOCK)
    }

    /// A read guard on the arrays with room for a chunk of new ids from
    /// every worker, growing them first if needed.
    fn room_for_a_chunk(&self) -> RwLockReadGuard<'_, Arrays> {
        let needed = || {
            let margin = self.margin();
            let ids = self.interned.load(Relaxed) + margin;
            (ids, self.pages.load(Relaxed) + margin)
        };
        loop {
            let (ids, pages) = needed();
            {
                let arrays = self.building.read().unwrap_or_else(|e| e.into_inner());
                if arrays.has_room(ids, pages) {
                    return arrays;
                }
            }
            let mut arrays = self.building.write().unwrap_or_else(|e| e.into_inner());
            // Another worker may have grown them meanwhile.
            let (ids, pages) = needed();
            let slots = arrays.table.len();
            if ids * 4 > slots * 3 {
                arrays.grow_table((ids * 4 / 3 + 1).max(2 * slots));
            }
            arrays.grow_arrays(pages);
        }
    }

    /// Rebuilds the id table hashed if its homes are in id order: the ids
    /// crowd some of its slots. The other workers finish their chunks
    /// first.
    fn spread_by_hash(&self) {
        let mut arrays = self.building.write().unwrap_or_else(|e| e.into_inner());
        arrays.spread_by_hash();
    }

    /// Called by each of the process's workers (`worker` its index among
    /// them) once it has added all its pairs, when pages have keys, once a
    /// table: `fill` writes the keys of the rows it reads (the workers
    /// share the table's row groups) through a [`KeyWriter`]. The words
    /// that wait on every table are set by [`Self::finish_keys`]. Every
    /// worker must call this, even one that failed: the others wait for
    /// it. Gives how many rows of the table, read by all the process's
    /// workers, are pages of the graph, if none of them failed.
    pub(crate) fn write_keys(
        &self,
        worker: usize,
        of_corpus: bool,
        fill: impl FnOnce(&mut KeyWriter<'_>) -> anyhow::Result<()>,
    ) -> anyhow::Result<Option<usize>> {
        // Every worker has added its pairs: the id table is only read now.
        self.barrier.wait();
        if worker == 0 {
            self.matched_rows.store(0, Relaxed);
            self.keys_failed.store(false, Relaxed);
        }
        // Worker 0 has cleared the count of an earlier table.
        self.barrier.wait();
        let result = {
            let arrays = self.building.read().unwrap_or_else(|e| e.into_inner());
            let mut writer = KeyWriter {
                arrays: &arrays,
                words: self.key_words,
                homes: Vec::new(),
                pages: Vec::new(),
                repeats: Vec::new(),
                naming: Vec::new(),
                listed: Vec::new(),
                matched: 0,
            };
            let result = fill(&mut writer);
            tracing::debug!(worker, rows = writer.matched, "keys written");
            self.matched_rows.fetch_add(writer.matched, Relaxed);
            if result.is_err() {
                self.keys_failed.store(true, Relaxed);
            }
            let repeats = writer.repeats.into_iter();
            lock(&self.repeats).extend(repeats.map(|repeat| Repeat {
                of_corpus,
                ..repeat
            }));
            let naming = match of_corpus {
                true => &self.corpus_naming,
                false => &self.naming,
            };
            lock(naming).extend(writer.naming);
            add_sorted(&self.listed, writer.listed);
            result
        };
        self.barrier.wait();
        let failed = self.keys_failed.load(Relaxed);
        result.map(|()| (!failed).then(|| self.matched_rows.load(Relaxed)))
    }

    /// Called by each of the process's workers after [`Self::write_keys`]:
    /// `list(named, found)` puts into `found` the pages among those named
    /// that the corpus holds (it has too many rows to list them all, as
    /// the pages table's are), from the rows this worker reads; not called
    /// with none named. Every worker must call this.
    pub(crate) fn list_named(
        &self,
        worker: usize,
        list: impl FnOnce(&PageSet, &mut Vec<u64>) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        if worker == 0 {
            let mut named: Vec<u64> = Vec::new();
            for naming in [&self.naming, &self.corpus_naming] {
                named.extend(lock(naming).iter().map(|&(_, names)| names));
            }
            named.extend(lock(&self.repeats).iter().filter_map(|repeat| repeat.names));
            radsort::sort(&mut named[..]);
            named.dedup();
            *self.named.write().unwrap_or_else(|e| e.into_inner()) = PageSet::of_sorted(named);
        }
        self.barrier.wait();
        let result = {
            let named = self.named.read().unwrap_or_else(|e| e.into_inner());
            let mut found = Vec::new();
            let result = match named.is_empty() {
                true => Ok(()),
                false => list(&named, &mut found),
            };
            add_sorted(&self.held, found);
            result
        };
        self.barrier.wait();
        result
    }

    /// Called by each of the process's workers once every table's keys
    /// are written: sets word `named_at` of each page whose first row's
    /// canonical link names another page, by whether that page was
    /// crawled, and gives a page with several rows the least keys,
    /// whichever row came first. A page named by a row of the pages table
    /// was crawled if either table holds it; one named by a corpus row, if
    /// the corpus does: whether a night crawled it says nothing a corpus
    /// page may rank by on every night (a page crawled tonight alone may be
    /// dropped tonight). Every worker must call this.
    pub(crate) fn finish_keys(&self, worker: usize, named_at: Option<usize>) {
        self.barrier.wait();
        if worker == 0 {
            let arrays = self.building.read().unwrap_or_else(|e| e.into_inner());
            let listed = self.listed.read().unwrap_or_else(|e| e.into_inner());
            let held = self.held.read().unwrap_or_else(|e| e.into_inner());
            let by_corpus: Vec<&Vec<u64>> = held.iter().collect();
            let by_either: Vec<&Vec<u64>> = listed.iter().chain(held.iter()).collect();
            let lists = |of_corpus: bool| match of_corpus {
                true => &by_corpus[..],
                false => &by_either[..],
            };
            for (naming, of_corpus) in [(&self.naming, false), (&self.corpus_naming, true)] {
                let naming = std::mem::take(&mut *lock(naming));
                if let Some(at) = named_at {
                    name_pages(&arrays, lists(of_corpus), at, naming);
                }
            }
            for mut repeat in std::mem::take(&mut *lock(&self.repeats)) {
                if let (Some(at), Some(names)) = (named_at, repeat.names) {
                    let lists = lists(repeat.of_corpus);
                    let listed = lists.iter().any(|list| list.binary_search(&names).is_ok());
                    repeat.keys[at] = KeepOrder::named_word(repeat.keys[at], listed);
                }
                if repeat.keys < arrays.keys.get(repeat.page) {
                    arrays
                        .keys
                        .write(repeat.page, &repeat.keys[..self.key_words]);
                }
            }
        }
        // The split starts by waiting for every worker.
    }

    /// Called by each of the process's workers, `worker` its index among
    /// them, once it has added all its pairs (`pairs`, under the direct
    /// policy, as page numbers): waits for the others, then gives this
    /// worker's share, the components whose root falls to it, with its
    /// pages `(id, page, root)` sorted by id and the pairs of its
    /// components from every worker's log.
    pub fn split(&self, worker: usize, pairs: Option<PairLog>) -> WorkerShare {
        // Every worker has a log or none (the policy is the job's): under
        // the direct policy, each samples its log's roots once all are in.
        if let Some(log) = &pairs {
            self.barrier.wait();
            let mut counts = RootCounts::default();
            let arrays = self.building.read().unwrap_or_else(|e| e.into_inner());
            pair_sample(&arrays.nodes, log, &mut counts);
            let mut all = lock(&self.pair_samples);
            for (root, n) in counts {
                *all.entry(root).or_default() += n;
            }
        }
        self.barrier.wait();
        if worker == 0 {
            for lists in [&self.listed, &self.held] {
                drop(std::mem::take(
                    &mut *lists.write().unwrap_or_else(|e| e.into_inner()),
                ));
            }
            drop(std::mem::take(
                &mut *self.named.write().unwrap_or_else(|e| e.into_inner()),
            ));
            let mut arrays =
                std::mem::take(&mut *self.building.write().unwrap_or_else(|e| e.into_inner()));
            let ids = std::mem::take(&mut arrays.ids);
            let pages = self.pages().min(ids.len());
            let mut forest = Forest::new(arrays, pages, self.corpus_wins);
            let pair_samples = std::mem::take(&mut *lock(&self.pair_samples));
            forest.place_big_components(self.workers, &pair_samples);
            *lock(&self.done) = Some((Arc::new(forest), Arc::new(ids)));
        }
        self.barrier.wait();
        let (forest, ids) = lock(&self.done)
            .clone()
            .expect("worker 0 has frozen the forest");
        let room = self.place_shares(worker, &forest, &ids);
        drop(ids);
        self.barrier.wait();
        if worker == 0 {
            // Every worker holds the forest now: it goes with the last
            // share. The ids are freed here, before any share is sorted.
            *lock(&self.done) = None;
        }
        let direct = pairs.is_some();
        if let Some(log) = pairs {
            let owner = |a: Page| forest.owner(a);
            let prefetch = |a: Page| prefetch(forest.owners.get(a as usize));
            let logs = log.split_by(self.workers, owner, prefetch);
            self.pairs_out.post(worker, logs);
        }
        let threads = threads_for_share(room.len(), forest.pages, self.workers);
        // SAFETY: every worker has filled its places (`place_by_id` checks)
        // before the barrier above.
        let mut by_id = unsafe { room.into_sorted(threads) };
        let (least, ranks) = forest.count_roots(&mut by_id, threads);
        let direct = direct.then(|| {
            // Every worker has posted its pairs.
            self.barrier.wait();
            DirectShare {
                pairs: PairLog::concat(self.pairs_out.collect(worker)),
            }
        });
        WorkerShare {
            components: Components {
                forest,
                least: Arc::new(least),
            },
            by_id,
            ranks,
            direct,
            threads,
        }
    }

    /// Flattens this worker's range of the forest and writes its pages into
    /// the shares they fall to, every worker at once ([`IdBuckets`]); gives
    /// this worker's share, filled once every worker has passed the next
    /// barrier.
    fn place_shares(&self, worker: usize, forest: &Forest, ids: &IdsByPage) -> ShareRoom {
        let range = share_of(forest.pages, worker, self.workers);
        if let Some((least, most)) = forest.id_span(ids, range.clone()) {
            self.ids_least.fetch_min(least, Relaxed);
            self.ids_most.fetch_max(most, Relaxed);
        }
        self.barrier.wait();
        let (least, most) = (self.ids_least.load(Relaxed), self.ids_most.load(Relaxed));
        let span = (least <= most).then_some((least, most));
        let buckets = IdBuckets::new(span, forest.pages, self.workers);
        let counts = forest.flatten(ids, range.clone(), self.workers, &buckets);
        self.counts_out.post(worker, counts);
        self.barrier.wait();
        let (room, places) = ShareRoom::new(&self.counts_out.collect(worker), buckets.count());
        self.places_out.post(worker, places);
        self.barrier.wait();
        let mut places = self.places_out.collect(worker);
        forest.place_by_id(ids, range, &buckets, &mut places);
        room
    }
}

/// What the workers of a process hand each other, one item from each worker
/// to each: `slots[to][from]`.
#[derive(Debug)]
struct Mailbox<T>(Mutex<Vec<Vec<T>>>);

impl<T: Default> Mailbox<T> {
    fn new(workers: usize) -> Mailbox<T> {
        Mailbox(Mutex::new(
            (0..workers)
                .map(|_| (0..workers).map(|_| T::default()).collect())
                .collect(),
        ))
    }

    /// `from`'s items, by the worker each goes to.
    fn post(&self, from: usize, items: Vec<T>) {
        let mut slots = lock(&self.0);
        for (to, item) in items.into_iter().enumerate() {
            slots[to][from] = item;
        }
    }

    /// The items for `to`, in the senders' order (whatever order they came
    /// in), once every worker has posted.
    fn collect(&self, to: usize) -> Vec<T> {
        let mut slots = lock(&self.0);
        let senders = slots[to].len();
        std::mem::replace(&mut slots[to], (0..senders).map(|_| T::default()).collect())
    }
}

/// A page of `by_id` with its [`RANKS_FIRST`] mark cleared (and kept in
/// `ranks` at `at`, if `ranks` is kept): its root, and its label.
fn take_mark(page: &mut KeyedPage, ranks: &mut [bool], at: usize) -> (Page, Candidate) {
    let (id, page, tag) = page;
    let (first, root) = (*tag & RANKS_FIRST != 0, *tag & !RANKS_FIRST);
    *tag = root;
    if let Some(rank) = ranks.get_mut(at) {
        *rank = first;
    }
    (root, ((first, *page), *id))
}

/// Pages `worker` of `workers` flattens: an even range.
fn share_of(pages: usize, worker: usize, workers: usize) -> std::ops::Range<usize> {
    pages * worker / workers..pages * (worker + 1) / workers
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    /// The shares of `workers` threads that each add every `workers`-th
    /// batch of `pairs` (batches of `batch` pairs) to one graph.
    fn shares(
        pairs: &[(i64, i64, bool)],
        corpus_wins: bool,
        workers: usize,
        batch: usize,
    ) -> Vec<WorkerShare> {
        // No estimate: the table and arrays grow (hashed) as pairs come.
        shares_prepared(pairs, corpus_wins, workers, batch, |_| (0, None))
    }

    /// [`shares`], each worker preparing the graph as a job does: for the
    /// pages it will hold (exactly, so that the table does not grow) and
    /// the range of its first batch's ids (homes in id order).
    fn shares_sized(
        pairs: &[(i64, i64, bool)],
        corpus_wins: bool,
        workers: usize,
        batch: usize,
    ) -> Vec<WorkerShare> {
        let pages = ids_of(pairs).len();
        shares_prepared(pairs, corpus_wins, workers, batch, |w| {
            let first = pairs.chunks(batch).nth(w).unwrap_or_default();
            let ids = first.iter().flat_map(|&(a, b, _)| [a, b]);
            (pages, ids.clone().min().zip(ids.max()))
        })
    }

    fn ids_of(pairs: &[(i64, i64, bool)]) -> std::collections::HashSet<i64> {
        pairs.iter().flat_map(|&(a, b, _)| [a, b]).collect()
    }

    /// [`shares`], worker `w` preparing with `prepared(w)`: `(pages, id
    /// range)`.
    fn shares_prepared(
        pairs: &[(i64, i64, bool)],
        corpus_wins: bool,
        workers: usize,
        batch: usize,
        prepared: impl Fn(usize) -> (usize, Option<(i64, i64)>) + Sync,
    ) -> Vec<WorkerShare> {
        let graph = SharedGraph::new(corpus_wins, workers, 0);
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|w| {
                    let (graph, prepared) = (&graph, &prepared);
                    scope.spawn(move || {
                        let (pages, range) = prepared(w);
                        graph.prepare(w, PageEstimate::exact(pages), range);
                        let mut writer = graph.writer();
                        let mut log = PairLog::default();
                        let mut ends = Vec::new();
                        for (n, chunk) in pairs.chunks(batch).enumerate() {
                            if n % workers == w {
                                writer.add_pairs(chunk.iter().copied(), &mut ends);
                                log.extend(&ends, chunk.iter().map(|_| 1));
                            }
                        }
                        graph.split(w, Some(log))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    #[test]
    fn big_components_are_spread_evenly_over_the_workers() {
        // Eight chains of 20,000 pages, and 5,000 pairs, on four workers:
        // by a hash of the root alone, two chains each is rare (4%).
        let mut pairs: Vec<(i64, i64, bool)> = Vec::new();
        for chain in 0..8i64 {
            let base = chain * 1_000_000;
            pairs.extend((0..20_000).map(|i| (base + i, base + i + 1, false)));
        }
        pairs.extend((0..5_000i64).map(|i| (10_000_000 + 2 * i, 10_000_001 + 2 * i, false)));
        pairs.sort_by_key(|&(a, b, _)| mix(a ^ b));
        let shares = shares(&pairs, false, 4, 1024);
        for (worker, share) in shares.iter().enumerate() {
            let chains: HashSet<Page> = share
                .by_id
                .iter()
                .map(|&(_, _, root)| root)
                .filter(|&root| share.components.component_size(root) > 1000)
                .collect();
            assert_eq!(chains.len(), 2, "worker {worker}");
        }
    }

    #[test]
    fn small_components_fill_the_room_a_big_one_leaves() {
        // A 30,000-page chain (60,000 pages and pairs of work) and 30,000
        // two-page components (90,000) on two workers: an even share is
        // 75,000, so the chain's worker takes a sixth of the small ones
        // (an even hash would give it half).
        let mut pairs: Vec<(i64, i64, bool)> = (0..29_999i64).map(|i| (i, i + 1, false)).collect();
        pairs.extend((0..30_000i64).map(|i| (1_000_000 + 2 * i, 1_000_001 + 2 * i, false)));
        pairs.sort_by_key(|&(a, b, _)| mix(a ^ b));
        let shares = shares(&pairs, false, 2, 1024);
        let small_pages = |share: &WorkerShare| {
            let small = share
                .by_id
                .iter()
                .filter(|&&(_, _, root)| share.components.component_size(root) == 2);
            small.count()
        };
        let chain_worker = shares
            .iter()
            .position(|share| share.by_id.iter().any(|&(id, _, _)| id == 0))
            .unwrap();
        let with_chain = small_pages(&shares[chain_worker]);
        let other = small_pages(&shares[1 - chain_worker]);
        assert_eq!(with_chain + other, 60_000);
        assert!(
            (7_000..13_000).contains(&with_chain),
            "{with_chain} small pages beside the chain"
        );
    }

    /// Every page's `(id, representative, size)` from the shares, by id.
    fn clusters_of(shares: &[WorkerShare]) -> Vec<(i64, i64, u32)> {
        let mut rows: Vec<(i64, i64, u32)> = shares
            .iter()
            .flat_map(|share| {
                let c = &share.components;
                share
                    .by_id
                    .iter()
                    .map(move |&(id, _, root)| (id, c.representative(root), c.component_size(root)))
            })
            .collect();
        rows.sort_unstable();
        rows
    }

    /// The oracle: a sequential union-find over ids, labels by priority.
    fn oracle(pairs: &[(i64, i64, bool)], corpus_wins: bool) -> Vec<(i64, i64, u32)> {
        let corpus: HashSet<i64> = pairs.iter().filter(|p| p.2).map(|p| p.1).collect();
        oracle_by(pairs, |id: i64| {
            (!(corpus_wins && corpus.contains(&id)), id)
        })
    }

    /// [`oracle`] with labels by `label` (its least is the representative).
    fn oracle_by<K: Ord>(
        pairs: &[(i64, i64, bool)],
        label: impl Fn(i64) -> K,
    ) -> Vec<(i64, i64, u32)> {
        use std::collections::BTreeMap;
        let mut parent: HashMap<i64, i64> = HashMap::new();
        fn find(parent: &mut HashMap<i64, i64>, x: i64) -> i64 {
            let mut root = x;
            while let Some(&p) = parent.get(&root).filter(|&&p| p != root) {
                root = p;
            }
            parent.entry(x).or_insert(x);
            let mut at = x;
            while at != root {
                let next = parent[&at];
                parent.insert(at, root);
                at = next;
            }
            root
        }
        for &(a, b, _) in pairs {
            let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
            parent.insert(ra, rb);
        }
        let ids: Vec<i64> = parent.keys().copied().collect();
        let mut sets: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
        for id in ids {
            let root = find(&mut parent, id);
            sets.entry(root).or_default().push(id);
        }
        let mut rows = Vec::new();
        for members in sets.values() {
            let least = *members.iter().min_by_key(|&&id| label(id)).unwrap();
            rows.extend(members.iter().map(|&id| (id, least, members.len() as u32)));
        }
        rows.sort_unstable();
        rows
    }

    #[test]
    fn a_roots_counts_replace_its_parent_and_hold_the_largest_size_and_page() {
        let mut nodes = Nodes::default();
        nodes.0.grow_to(3);
        nodes.set_parent(2, 2);
        assert_eq!(nodes.parent(2), 2);
        assert_eq!(nodes.counts(2), (0, (false, MISSING)), "not counted yet");
        let (most, last) = (
            (MAX_PROCESS_PAGES - 1) as u32,
            (MAX_PROCESS_PAGES - 1) as Page,
        );
        for first in [false, true] {
            nodes.set_counts(2, most, (first, last));
            assert_eq!(nodes.counts(2), (most, (first, last)));
            nodes.set_counts(2, 1, (first, 0));
            assert_eq!(nodes.counts(2), (1, (first, 0)));
        }
        // Neighbours keep their parents.
        nodes.set_parent(1, 0);
        nodes.set_counts(2, most, (true, last));
        assert_eq!(nodes.parent(1), 0);
    }

    #[test]
    fn the_table_has_room_for_the_likely_pages_and_never_exceeds_the_linear_bound() {
        let slots = |likely, linear| {
            let graph = SharedGraph::new(false, 1, 0);
            graph.prepare(0, PageEstimate { likely, linear }, None);
            let slots = graph.building.read().unwrap().table.len();
            (slots, graph.margin())
        };
        // Random order: the likely pages far below the linear bound.
        let (table, margin) = slots(1_000_000, 2_000_000);
        let likely = 1_000_000 + margin;
        assert!(
            table * 3 >= likely * 4 * 11 / 10,
            "{table}: room for a tenth more"
        );
        assert!(table < likely * 2, "{table}: not the bound's power of two");
        // Pages that lie together: the estimates agree, and the table is no
        // larger than the least power of two above a tenth more.
        let (table, margin) = slots(1_400_000, 1_400_000);
        assert!(table <= ((1_400_000 + margin) * 11 / 10).next_power_of_two());
        assert!(
            table * 3 >= (1_400_000 + margin) * 4,
            "{table}: 3/4 full at most"
        );
    }

    #[test]
    fn least_labels_keep_each_slot_across_chunks() {
        let mut least = LeastLabels::default();
        let n = 3 << CHUNK_BITS | 5;
        for slot in 0..n {
            assert_eq!(least.push((-(slot as i64), slot)), slot);
        }
        *least.at_mut(1 << CHUNK_BITS).unwrap() = (7, 9);
        for slot in [0, 1, CHUNK_MASK, 2 << CHUNK_BITS, n - 1] {
            assert_eq!(least.get(slot), (-(slot as i64), slot), "slot {slot}");
        }
        assert_eq!(least.get(1 << CHUNK_BITS), (7, 9));
        assert_eq!(least.at(n), None, "no slot past the last");
    }

    #[test]
    fn the_least_label_in_id_order_is_the_first_that_ranks_first_else_the_first() {
        let later = |page| ((false, page), i64::from(page) * 10);
        let first = |page| ((true, page), i64::from(page) * 10);
        let forest = Forest::default();
        assert_eq!(forest.least_of(later(4), later(9)), later(4));
        assert_eq!(forest.least_of(later(4), first(9)), first(9));
        assert_eq!(forest.least_of(first(4), first(9)), first(4));
        assert_eq!(forest.least_of(first(4), later(9)), first(4));
    }

    fn random_pairs(n: usize, ids: u64, seed: u64) -> Vec<(i64, i64, bool)> {
        let mut state = seed;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            state >> 20
        };
        (0..n)
            .map(|_| {
                let (a, b) = (next() % ids, next() % ids);
                (mix(a as i64) as i64, mix(b as i64) as i64, next() % 3 == 0)
            })
            .collect()
    }

    #[test]
    fn keys_order_representatives_as_the_oracle_does() {
        // Two words of keys from few values (ties go on to the id); every
        // fifth id has no row, every third a second row (the least wins);
        // rows of ids no pair names are no page's. A quarter of the rows
        // name another page by the second word, which waits on the pages
        // listed (half of them, spread over the workers' rows).
        let named = |id: i64, row: u64| {
            let names = mix(id ^ row as i64);
            names.is_multiple_of(4).then_some(names)
        };
        // As read, the second word of a row naming a page: another page of
        // its site, a home page (a template's mistake if it was crawled),
        // or a page of another site; else itself, or none.
        let read_word = |names: u64| 3 + (names >> 4) as u32 % 3;
        let keys_of = |id: i64, row: u64| {
            let second = match named(id, row) {
                Some(names) => KeepOrder::named_word(read_word(names), names.is_multiple_of(8)),
                None => [0, 2][(mix(id) >> 40) as usize % 2],
            };
            [(mix(id) ^ row) as u32 % 3, second]
        };
        for (pairs, ids, corpus_wins) in [(20_000, 30_000, false), (8_000, 2_000, true)] {
            let edges = random_pairs(pairs, ids, 5 + ids);
            let mut rows: Vec<(i64, u64)> = Vec::new();
            for id in ids_of(&edges).into_iter().chain([i64::MIN + 1, 42]) {
                let n = mix(id) % 15;
                if !n.is_multiple_of(5) {
                    rows.push((id, 0));
                }
                if n.is_multiple_of(3) {
                    rows.push((id, 1));
                }
            }
            let least: HashMap<i64, [u32; 2]> =
                rows.iter().fold(HashMap::new(), |mut m, &(id, row)| {
                    let k = keys_of(id, row);
                    let e = m.entry(id).or_insert(k);
                    *e = (*e).min(k);
                    m
                });
            let corpus: HashSet<i64> = edges.iter().filter(|p| p.2).map(|p| p.1).collect();
            let label = |id: i64| {
                let keys = least.get(&id).copied().unwrap_or([u32::MAX; 2]);
                (!(corpus_wins && corpus.contains(&id)), keys, id)
            };
            let expected = oracle_by(&edges, label);
            for workers in [1, 3] {
                let graph = SharedGraph::new(corpus_wins, workers, 2);
                // A chunk's rows as read: a named page's word as a link to
                // another, and half the pages named, listed.
                let written_keys = |chunk: &[(i64, u64)]| {
                    let mut written = RowKeys::default();
                    for (at, &(id, row)) in chunk.iter().enumerate() {
                        let mut words = keys_of(id, row);
                        if let Some(names) = named(id, row) {
                            words[1] = read_word(names);
                            written.naming.push((at, names));
                            if names.is_multiple_of(8) {
                                written.listed.push(names);
                            }
                        }
                        written.words.extend(words);
                    }
                    written
                };
                let shares: Vec<WorkerShare> = std::thread::scope(|scope| {
                    let handles: Vec<_> = (0..workers)
                        .map(|w| {
                            let (graph, edges, rows) = (&graph, &edges, &rows);
                            let written_keys = &written_keys;
                            scope.spawn(move || {
                                graph.prepare(w, PageEstimate::exact(0), None);
                                let mut writer = graph.writer();
                                let mut ends = Vec::new();
                                for (n, chunk) in edges.chunks(500).enumerate() {
                                    if n % workers == w {
                                        writer.add_pairs(chunk.iter().copied(), &mut ends);
                                    }
                                }
                                graph
                                    .write_keys(w, false, |keys| {
                                        let chunks: Vec<_> = rows.chunks(100).collect();
                                        for (n, chunk) in chunks.iter().enumerate() {
                                            if n % workers == w {
                                                let ids: Vec<i64> =
                                                    chunk.iter().map(|r| r.0).collect();
                                                let written = written_keys(chunk);
                                                // Pages another worker's rows name.
                                                let next = chunks[(n + 1) % chunks.len()];
                                                keys.list(&mut written_keys(next).listed);
                                                keys.find(&ids);
                                                keys.write(&written);
                                            }
                                        }
                                        Ok(())
                                    })
                                    .unwrap();
                                graph.finish_keys(w, Some(1));
                                graph.split(w, None)
                            })
                        })
                        .collect();
                    handles.into_iter().map(|h| h.join().unwrap()).collect()
                });
                assert!(
                    clusters_of(&shares) == expected,
                    "{workers} workers, corpus_wins {corpus_wins}"
                );
                for share in &shares {
                    for &(id, page, _) in share.by_id.iter().take(50) {
                        let keys = share.components.keys(page);
                        assert_eq!(&keys[..2], &label(id).1, "the keys of {id}");
                        assert!(keys[2..].iter().all(|&k| k == 0));
                    }
                }
            }
        }
    }

    #[test]
    fn chunked_pushes_fill_each_chunk_before_the_next_and_never_grow_one() {
        let mut chunks: Vec<Vec<u32>> = Vec::new();
        for item in 0..7 {
            push_chunked(&mut chunks, 3, item);
        }
        assert_eq!(chunks, vec![vec![0, 1, 2], vec![3, 4, 5], vec![6]]);
        assert!(chunks.iter().all(|chunk| chunk.capacity() == 3));
    }

    #[test]
    fn shares_of_concurrent_workers_match_a_sequential_union_find() {
        // Sparse and dense graphs, small batches (so the workers interleave
        // and the table grows while they do), 1 to 4 workers.
        for (pairs, ids) in [(20_000, 30_000), (30_000, 2_000), (5_000, 200_000)] {
            let edges = random_pairs(pairs, ids, pairs as u64 ^ ids);
            for corpus_wins in [false, true] {
                let expected = oracle(&edges, corpus_wins);
                for workers in 1..=4 {
                    let found = clusters_of(&shares(&edges, corpus_wins, workers, 97));
                    assert!(
                        found == expected,
                        "{pairs} pairs over {ids} ids, {workers} workers, corpus_wins {corpus_wins}"
                    );
                    let found = clusters_of(&shares_sized(&edges, corpus_wins, workers, 97));
                    assert!(
                        found == expected,
                        "sized: {pairs} pairs over {ids} ids, {workers} workers, corpus_wins {corpus_wins}"
                    );
                }
            }
        }
    }

    #[test]
    fn shares_are_disjoint_whole_components_with_their_own_pairs() {
        let edges = random_pairs(40_000, 50_000, 7);
        let shares = shares(&edges, true, 3, 1000);
        let in_corpus: std::collections::HashSet<i64> =
            edges.iter().filter(|e| e.2).map(|e| e.1).collect();
        let mut owner = std::collections::HashMap::new();
        for (w, share) in shares.iter().enumerate() {
            assert!(share.by_id.is_sorted_by_key(|&(id, ..)| id));
            for &(id, page, _) in &share.by_id {
                assert_eq!(
                    owner.insert(page, (w, id)),
                    None,
                    "page {page} in two shares"
                );
            }
        }
        // Every pair is in the log of the share that holds its ends, once.
        let mut pairs = 0;
        for (w, share) in shares.iter().enumerate() {
            let direct = share.direct.as_ref().unwrap();
            // The ranks kept while counting are the pages' own, by place:
            // a page ranks first if a pair marks it a corpus page.
            assert_eq!(share.ranks.0.len(), share.by_id.len());
            for (at, &(id, ..)) in share.by_id.iter().enumerate() {
                assert_eq!(share.ranks.get(at), in_corpus.contains(&id), "page {id}");
            }
            let log = &direct.pairs;
            for (a, b, _) in log.pairs_in(0..log.len()) {
                assert_eq!(owner[&a].0, w);
                assert_eq!(owner[&b].0, w);
            }
            pairs += log.len();
        }
        assert_eq!(pairs, edges.len());
    }

    #[test]
    fn a_long_chain_is_one_component_with_the_least_id() {
        let pairs: Vec<(i64, i64, bool)> =
            (0..100_000i64).rev().map(|i| (i + 1, i, false)).collect();
        for workers in [1, 2] {
            let found = clusters_of(&shares(&pairs, false, workers, 4096));
            assert_eq!(found.len(), 100_001);
            assert!(found
                .iter()
                .all(|&(_, rep, size)| rep == 0 && size == 100_001));
        }
    }

    #[test]
    fn a_giant_component_counted_on_several_threads_matches_the_oracle() {
        // A chain of scattered ids holding most pages, so that its worker
        // counts its roots on several threads, among small random pairs;
        // corpus pages (marked on some pairs) anywhere.
        let scatter = |i: i64| i.wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as i64);
        let mut pairs: Vec<(i64, i64, bool)> = (0..60_000i64)
            .map(|i| (scatter(i), scatter(i + 1), i % 7 == 3))
            .collect();
        pairs.extend(random_pairs(5_000, 20_000, 11));
        for workers in [2, 4] {
            let shares = shares(&pairs, true, workers, 1024);
            assert!(
                shares.iter().any(|share| share.threads > 1),
                "{workers} workers"
            );
            assert_eq!(
                clusters_of(&shares),
                oracle(&pairs, true),
                "{workers} workers"
            );
        }
    }

    #[test]
    fn corpus_pages_rank_first_even_when_marked_late() {
        // 5 and 3 are corpus pages (3 only by the last pair): 3 wins.
        let pairs = [(1, 5, true), (1, 3, false), (2, 3, true)];
        let found = clusters_of(&shares(&pairs, true, 1, 1));
        assert!(found.iter().all(|&(_, rep, size)| rep == 3 && size == 4));
        let plain = clusters_of(&shares(&[(9, 2, true)], false, 1, 1));
        assert_eq!(plain, vec![(2, 2, 2), (9, 2, 2)]);
    }

    #[test]
    fn self_loops_repeats_and_extreme_ids() {
        let pairs = [
            (1, 2, false),
            (2, 1, false),
            (7, 7, false),
            (7, i64::MIN, false),
            (i64::MAX, -1, false),
            (0, 0, false),
        ];
        for workers in [1, 3] {
            assert_eq!(
                clusters_of(&shares(&pairs, false, workers, 1)),
                oracle(&pairs, false)
            );
        }
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
            let mut arrays = Arrays::default();
            arrays.grow_table(2 * n);
            let mut home = vec![false; arrays.table.len()];
            for i in 0..n as i64 {
                home[arrays.table.home(family(i))] = true;
            }
            // n keys in 2n slots: 1 - e^(-1/2) = 39% of them, at random (a
            // single multiply fills 32% for the third family, 10% at n = 2^20).
            let used = home.iter().filter(|&&h| h).count() as f64 / home.len() as f64;
            assert!(used > 0.36, "{used}");
        }
    }

    #[test]
    fn ids_that_collide_in_their_low_bits_keep_their_pages_through_growth() {
        // The table starts empty and grows many times while two workers add.
        let pairs: Vec<(i64, i64, bool)> = (0..50_000i64)
            .map(|i| (i << 40, (i + 1) << 40, false))
            .chain([(i64::MIN, i64::MAX, false), (0, -1, false)])
            .collect();
        let found = clusters_of(&shares(&pairs, false, 2, 333));
        assert_eq!(found, oracle(&pairs, false));
    }

    #[test]
    fn homes_in_id_order_ascend_with_the_ids_and_spread_even_ones() {
        let slots = 1 << 20;
        for (least, most) in [(i64::MIN, i64::MAX), (0, 12_500_000), (-5, 5), (7, 7)] {
            let placement = Placement::ordered((least, most), slots);
            let ids = [
                i64::MIN,
                least.saturating_sub(1),
                least,
                (i128::from(least) + (i128::from(most) - i128::from(least)) / 2) as i64,
                most,
                most.saturating_add(1),
            ];
            let homes: Vec<usize> = ids.iter().map(|&id| placement.home(id)).collect();
            assert!(homes.windows(2).all(|w| w[0] <= w[1]), "{homes:?}");
            assert!(homes.iter().all(|&h| h < slots), "{homes:?}");
            // Ids in the range keep off the end slots, kept for ids beyond.
            assert!(placement.home(least) >= slots / HEADROOM, "{homes:?}");
            assert!(placement.home(most) < slots - slots / HEADROOM, "{homes:?}");
            // Ids far beyond it share the end slots.
            if most < i64::MAX / 2 {
                assert_eq!(placement.home(i64::MAX), slots - 1);
            }
            if least > i64::MIN / 2 {
                assert_eq!(placement.home(i64::MIN), 0);
            }
        }
        // Ids spread evenly over their range (here hashes, as page ids
        // are) fill about as many slots as random keys: n keys in 2n slots.
        let n = 1 << 18;
        let ids: Vec<i64> = (0..n as i64).map(|i| mix(i) as i64).collect();
        let range = (*ids.iter().min().unwrap(), *ids.iter().max().unwrap());
        let placement = Placement::ordered(range, 2 * n);
        let mut home = vec![false; 2 * n];
        ids.iter().for_each(|&id| home[placement.home(id)] = true);
        let used = home.iter().filter(|&&h| h).count() as f64 / home.len() as f64;
        assert!(used > 0.36, "{used}");
        // Consecutive ids over a range as long as the table less its
        // headroom: one slot each, and a slot each for ids just beyond
        // either end.
        let edge = 2 * n / HEADROOM;
        let inner = (2 * n - 2 * edge) as i64;
        let placement = Placement::ordered((1_000, 1_000 + inner - 1), 2 * n);
        let homes: Vec<usize> = (-(edge as i64) / 2..inner + edge as i64 / 2)
            .map(|i| placement.home(1_000 + i))
            .collect();
        assert!(homes.windows(2).all(|w| w[0] < w[1]));
    }

    /// Adds `pairs` on one worker to a graph prepared for `pages` pages
    /// with homes in id order over `range`; whether the table is still in
    /// id order, and the clusters.
    fn one_worker_with_range(
        pairs: &[(i64, i64, bool)],
        pages: usize,
        range: (i64, i64),
    ) -> (bool, Vec<(i64, i64, u32)>) {
        let graph = SharedGraph::new(false, 1, 0);
        graph.prepare(0, PageEstimate::exact(pages), Some(range));
        let mut writer = graph.writer();
        let mut ends = Vec::new();
        for batch in pairs.chunks(1_000) {
            writer.add_pairs(batch.iter().copied(), &mut ends);
        }
        let ordered = graph.building.read().unwrap().table.placement.is_ordered();
        (ordered, clusters_of(&[graph.split(0, None)]))
    }

    #[test]
    fn ids_spread_over_the_sampled_range_keep_their_homes_in_id_order() {
        // A chain, and pairs of new ids filling the table to 3/4 (the most
        // before it grows, and grown it is hashed), where linear probing
        // is at its longest: neither is taken for crowded homes.
        let chain: Vec<(i64, i64, bool)> = (0..50_000i64)
            .map(|i| (mix(i) as i64, mix(i + 1) as i64, false))
            .collect();
        let fill: Vec<(i64, i64, bool)> = (0..390_000i64)
            .map(|i| (mix(2 * i) as i64, mix(2 * i + 1) as i64, false))
            .collect();
        for (pairs, pages) in [(chain, 100_000), (fill, 786_000)] {
            let (ordered, found) = one_worker_with_range(&pairs, pages, (i64::MIN, i64::MAX));
            assert!(ordered, "even ids must not be taken for crowded ones");
            assert_eq!(found, oracle(&pairs, false));
        }
    }

    #[test]
    fn ids_crowding_their_homes_in_id_order_rebuild_the_table_hashed() {
        // The sample promised ids over 2^40, the pairs come in a band of
        // 100,000 consecutive ids: all of them homed on a few slots.
        let band = 1i64 << 39;
        let pairs: Vec<(i64, i64, bool)> = (0..50_000i64)
            .map(|i| (band + 2 * i, band + 2 * i + 1, i % 3 == 0))
            .collect();
        let (ordered, found) = one_worker_with_range(&pairs, 100_000, (0, 1 << 40));
        assert!(!ordered, "crowded homes must be given up");
        assert_eq!(found, oracle(&pairs, false));
        // Ids beyond the sampled range, on both sides, are homed at its ends.
        let pairs: Vec<(i64, i64, bool)> = (0..50_000i64)
            .map(|i| (-1 - i, 1_000_000 + i, false))
            .chain([(i64::MIN, i64::MAX, false), (500, 501, false)])
            .collect();
        let (ordered, found) = one_worker_with_range(&pairs, 100_004, (0, 1_000));
        assert!(!ordered, "crowded homes must be given up");
        assert_eq!(found, oracle(&pairs, false));
    }

    #[test]
    fn ids_filling_half_the_sampled_range_nearly_full_give_up_their_order() {
        // Random ids in the lower half of the sampled range, as many as
        // 95% of that half's slots: no probe need be very long, but they
        // are long on average.
        let pairs: Vec<(i64, i64, bool)> = (0..31_000i64)
            .map(|i| {
                let id = |x: i64| (mix(x) >> 28) as i64;
                (id(2 * i), id(2 * i + 1), false)
            })
            .collect();
        assert!(ids_of(&pairs).len() > 61_000);
        let (ordered, found) = one_worker_with_range(&pairs, 100_000, (0, 1 << 37));
        assert!(!ordered, "crowded homes must be given up");
        assert_eq!(found, oracle(&pairs, false));
    }

    #[test]
    fn concurrent_workers_crowding_their_homes_agree_on_every_page() {
        // Two to four workers, each sampled a wide range, all adding ids
        // of one narrow band: whichever finds the homes crowded first
        // rebuilds the table while the others finish their chunks.
        let pairs: Vec<(i64, i64, bool)> = (0..60_000i64)
            .map(|i| (i * 7 % 90_001, (i * 13 + 1) % 90_001, i % 2 == 0))
            .collect();
        let expected = oracle(&pairs, true);
        for workers in 2..=4 {
            let found = clusters_of(&shares_prepared(&pairs, true, workers, 500, |_| {
                (100_000, Some((i64::MIN / 2, i64::MAX / 2)))
            }));
            assert!(found == expected, "{workers} workers");
        }
    }
}
