//! The union-find forest once every pair is in, and a worker's view of
//! its share of the components ([`Components`]).

use super::*;
use crate::exec::sorting::ordered;

/// The forest: by page, one word, touched as the page came. While the
/// forest is built and flattened it holds the page's parent; once every
/// page points at its root, a root's word holds its set's counts instead
/// ([`COUNTED`]): its size and its least label's slot in the worker's
/// [`LeastLabels`]. Eight bytes a page: with the least label's id beside
/// them a node would take sixteen, the largest array by page.
#[derive(Debug, Default)]
pub(super) struct Nodes(pub(super) Segmented<AtomicU64>);

/// In a node's word: the word holds its root's counts, not a parent. Then
/// the low [`PAGE_BITS`] bits are the least label's slot, the next
/// [`PAGE_BITS`] the set's size (at most [`MAX_PROCESS_PAGES`] - 1), and
/// [`LEAST_RANKS_FIRST`] is set if that label ranks first.
pub(super) const COUNTED: u64 = 1 << 63;
pub(super) const LEAST_RANKS_FIRST: u64 = 1 << 62;
pub(super) const PAGE_BITS: u32 = MAX_PROCESS_PAGES.trailing_zeros();
pub(super) const PAGE_MASK: u64 = (1 << PAGE_BITS) - 1;

impl Nodes {
    pub(super) fn parent(&self, page: Page) -> Page {
        self.0.get(page as usize).load(Relaxed) as Page
    }

    pub(super) fn set_parent(&self, page: Page, parent: Page) {
        self.0.get(page as usize).store(u64::from(parent), Relaxed);
    }

    /// Moves the page's parent from `from` to `to` unless another worker
    /// moved it first; whether it did.
    pub(super) fn move_parent(&self, page: Page, from: Page, to: Page) -> bool {
        self.0
            .get(page as usize)
            .compare_exchange(u64::from(from), u64::from(to), AcqRel, Relaxed)
            .is_ok()
    }

    /// The root of the page's set, halving the path on the way, while
    /// workers link sets. Every parent has a higher priority than its child
    /// (links go that way, and a halving skips to a parent's parent), and
    /// only a root is ever linked: so a plain store of a grandparent, even
    /// one read before another worker's halving moved the page higher,
    /// keeps the page in its set and makes no cycle. No locked instruction,
    /// which would stop the cache misses around it from overlapping.
    pub(super) fn find(&self, mut page: Page) -> Page {
        loop {
            let up = self.parent(page);
            if up == page {
                return page;
            }
            let grand = self.parent(up);
            if grand != up {
                self.set_parent(page, grand);
            }
            page = grand;
        }
    }

    /// The root of the page's set, writing nothing: once the forest is
    /// done, the workers point their pages at their roots at once, and a
    /// halving's stale grandparent could overwrite a root just written.
    pub(super) fn root_of(&self, mut page: Page) -> Page {
        loop {
            let up = self.parent(page);
            if up == page {
                return page;
            }
            page = up;
        }
    }

    /// A root's size and least label's rank and slot (none yet: size 0).
    pub(super) fn counts(&self, root: Page) -> (u32, LeastSlot) {
        let word = self.0.get(root as usize).load(Relaxed);
        if word & COUNTED == 0 {
            return (0, (false, MISSING));
        }
        let size = ((word >> PAGE_BITS) & PAGE_MASK) as u32;
        let least = (word & LEAST_RANKS_FIRST != 0, (word & PAGE_MASK) as Page);
        (size, least)
    }

    /// Writes a root's counts over its parent (itself): only once no
    /// worker reads parents any more.
    pub(super) fn set_counts(&self, root: Page, size: u32, (first, least): LeastSlot) {
        let rank = if first { LEAST_RANKS_FIRST } else { 0 };
        let word = COUNTED | rank | u64::from(size) << PAGE_BITS | u64::from(least);
        self.0.get(root as usize).store(word, Relaxed);
    }

    pub(super) fn prefetch(&self, page: Page) {
        prefetch(self.0.get(page as usize));
    }
}

/// Every how many pages one is sampled to find the big components.
const SIZE_SAMPLE: usize = 64;

/// Sampled pages or pairs by root.
pub(super) type RootCounts = std::collections::HashMap<Page, usize>;

/// The roots of every [`SIZE_SAMPLE`]-th pair's first end in `log`, once
/// every pair is in (nothing is written).
pub(super) fn pair_sample(nodes: &Nodes, log: &PairLog, counts: &mut RootCounts) {
    for page in log.first_ends().step_by(SIZE_SAMPLE) {
        *counts.entry(nodes.root_of(page)).or_default() += 1;
    }
}

/// Sampled pages a component needs to be placed by size: fewer than
/// 64 x 16 pages never unbalance the workers enough to matter.
const MIN_BIG_SAMPLES: usize = 16;

/// A root's priority when two are linked: a random order, whatever the
/// order pages came in. A root is the page of highest priority in its set,
/// so the worker a set falls to (a hash of its root, [`Forest::flatten`])
/// must not be told by the same bits: this hash is of the page's
/// complement.
pub(super) fn priority(page: Page) -> u64 {
    mix(i64::from(!page))
}

/// A worker's least label of each of its roots, `(id, page)`, at the slot
/// the root's counts name ([`Nodes::counts`]): the ids by page are freed
/// once the pages are flattened, and a share has fewer roots than pages.
/// In chunks, so that it takes only the memory its roots fill.
pub(super) type LeastLabels = Chunked<(i64, Page)>;

/// A page's label as the counts compare it: its rank and page (its keys
/// are read by page), and its id.
pub(super) type Candidate = (LeastPage, i64);

/// The forest once every pair is in: read-only but for the flattening of
/// paths and each root's counts, which only the worker the root falls to
/// writes.
#[derive(Debug, Default)]
pub(super) struct Forest {
    pub(super) corpus_wins: bool,
    /// Page numbers handed out (those without [`USED`] are not pages).
    pub(super) pages: usize,
    pub(super) nodes: Nodes,
    pub(super) flags: Segmented<AtomicU8>,
    pub(super) keys: PageKeys,
    /// The worker of the process each page's component falls to: two bytes
    /// a page, read at random as pairs are sent where they belong (their
    /// roots' nodes would be eight).
    pub(super) owners: Segmented<AtomicU16>,
    /// Components big enough to unbalance the workers, by root, and the
    /// worker each is placed on ([`Self::place_big_components`]).
    pub(super) big_owners: Vec<(Page, usize)>,
    /// Where the other components fall once the big ones are placed: the
    /// components whose root's 32-bit hash is below `hash_cuts[w]` and at
    /// least the cut before it go to worker `w` (the last cut is 2^32).
    /// Empty: an even share each.
    pub(super) hash_cuts: Vec<u64>,
}

impl Forest {
    /// The forest of `arrays`, less their id table and their ids by page
    /// (which the split is given, and frees once the pages are placed).
    pub(super) fn new(arrays: Arrays, pages: usize, corpus_wins: bool) -> Forest {
        let Arrays {
            nodes, flags, keys, ..
        } = arrays;
        let mut owners = Segmented::default();
        owners.grow_to(pages);
        Forest {
            corpus_wins,
            pages,
            nodes,
            flags,
            keys,
            owners,
            big_owners: Vec::new(),
            hash_cuts: Vec::new(),
        }
    }

    /// Places the components big enough to unbalance `workers` workers,
    /// largest first, each on the worker with the least work so far;
    /// every other component falls to a worker by a hash of its root. By
    /// the hash alone, two giant components of a crawl (a random graph of
    /// millions of pages, a long chain) often fall to one worker, which then
    /// does most of the process's work after the union-find. A component's
    /// work is its pages and, under the direct policy, its pairs (the sweep
    /// costs about as much a pair as the rows a page): a random component
    /// has two pairs a page where a chain has one. Both are estimated from
    /// the roots of every [`SIZE_SAMPLE`]-th page and `pair_samples`
    /// (roots of every [`SIZE_SAMPLE`]-th pair's first end,
    /// [`pair_sample`]), read before any path is flattened (nothing is
    /// written).
    pub(super) fn place_big_components(&mut self, workers: usize, pair_samples: &RootCounts) {
        if workers < 2 {
            return;
        }
        let mut sampled = RootCounts::default();
        let mut used = 0;
        for page in (0..self.pages).step_by(SIZE_SAMPLE) {
            if self.flags.get(page).load(Relaxed) & USED != 0 {
                used += 1;
                *sampled.entry(self.nodes.root_of(page as Page)).or_default() += 1;
            }
        }
        let least = (used / (4 * workers)).max(MIN_BIG_SAMPLES);
        let work = |root: &Page, pages: usize| pages + pair_samples.get(root).copied().unwrap_or(0);
        let mut big: Vec<(usize, Page)> = sampled
            .iter()
            .filter(|&(_, &n)| n >= least)
            .map(|(root, &n)| (work(root, n), *root))
            .collect();
        big.sort_unstable_by(|a, b| b.cmp(a));
        let all = used + pair_samples.values().sum::<usize>();
        let rest = all - big.iter().map(|&(n, _)| n).sum::<usize>();
        let mut load = vec![0; workers];
        for (n, root) in big {
            let worker = (0..workers).min_by_key(|&w| load[w]).unwrap_or(0);
            load[worker] += n;
            self.big_owners.push((root, worker));
        }
        // The rest fill each worker up to an even share, as far as they go.
        let even = all / workers;
        let room: Vec<u64> = load
            .iter()
            .map(|&l| even.saturating_sub(l) as u64)
            .collect();
        let room_sum: u64 = room.iter().sum();
        if rest > 0 && room_sum > 0 {
            let mut below = 0;
            self.hash_cuts = room
                .iter()
                .map(|&r| {
                    below += r;
                    ((u128::from(below) << 32) / u128::from(room_sum)) as u64
                })
                .collect();
        }
    }

    /// The worker a component falls to, by its root: a big one's where it
    /// was placed, any other's by a hash of its root, in proportion to the
    /// room the big ones leave each worker ([`Self::hash_cuts`]).
    fn owner_of_root(&self, root: Page, workers: usize) -> usize {
        if let Some(&(_, worker)) = self.big_owners.iter().find(|&&(big, _)| big == root) {
            return worker;
        }
        let hash = mix(i64::from(root)) >> 32;
        match self.hash_cuts.is_empty() {
            true => ((hash * workers as u64) >> 32) as usize,
            false => self
                .hash_cuts
                .iter()
                .take_while(|&&cut| cut <= hash)
                .count(),
        }
    }

    /// The least of two labels of a set, `earlier` from a page before
    /// `later` in id order: the later one only if it ranks first and the
    /// earlier does not, or they rank alike and its keys come first.
    pub(super) fn least_of(&self, earlier: Candidate, later: Candidate) -> Candidate {
        let ((earlier_first, earlier_page), (later_first, later_page)) = (earlier.0, later.0);
        let before = match (later_first, earlier_first) {
            (true, false) => true,
            (false, true) => false,
            _ => self.keys.less(later_page, earlier_page),
        };
        if before {
            later
        } else {
            earlier
        }
    }

    /// The least and greatest id of the pages of `range`, as [`ordered`]
    /// (none: no page).
    pub(super) fn id_span(
        &self,
        ids: &IdsByPage,
        range: std::ops::Range<usize>,
    ) -> Option<(u64, u64)> {
        range
            .filter(|&page| self.flags.get(page).load(Relaxed) & USED != 0)
            .map(|page| ordered(ids.get(page).load(Relaxed)))
            .fold(None, |span, id| match span {
                None => Some((id, id)),
                Some((least, most)) => Some((least.min(id), most.max(id))),
            })
    }

    /// Points every page of `range` at its root and notes the worker its
    /// component falls to (of `workers`); gives how many of the pages fall
    /// to each worker, by bucket of their ids ([`IdBuckets`]), for
    /// [`Self::place_by_id`].
    pub(super) fn flatten(
        &self,
        ids: &IdsByPage,
        range: std::ops::Range<usize>,
        workers: usize,
        buckets: &IdBuckets,
    ) -> Vec<Vec<u32>> {
        let mut counts = vec![vec![0u32; buckets.count()]; workers];
        let end = range.end;
        for page in range {
            if page + LOOKAHEAD < end {
                // A page's parent is anywhere in memory.
                self.nodes
                    .prefetch(self.nodes.parent((page + LOOKAHEAD) as Page));
            }
            if self.flags.get(page).load(Relaxed) & USED != 0 {
                let root = self.nodes.root_of(page as Page);
                self.nodes.set_parent(page as Page, root);
                let owner = self.owner_of_root(root, workers);
                self.owners.get(page).store(owner as u16, Relaxed);
                counts[owner][buckets.of(ids.get(page).load(Relaxed))] += 1;
            }
        }
        counts
    }

    /// Writes every page of `range`, flattened, as `(id, page, root)` at
    /// its place in the share of the worker its component falls to
    /// (`places`, by worker), the root marked [`RANKS_FIRST`] if the page
    /// ranks first (its flags are read here in page order, where
    /// [`Self::count_roots`] would read them at random). Every array read
    /// is read in page order.
    pub(super) fn place_by_id(
        &self,
        ids: &IdsByPage,
        range: std::ops::Range<usize>,
        buckets: &IdBuckets,
        places: &mut [Places],
    ) {
        for page in range {
            let flags = self.flags.get(page).load(Relaxed);
            if flags & USED != 0 {
                let root = self.nodes.parent(page as Page);
                let first = self.corpus_wins && flags & IN_CORPUS != 0;
                let tag = root | if first { RANKS_FIRST } else { 0 };
                let id = ids.get(page).load(Relaxed);
                places[self.owner(page as Page)].put(buckets.of(id), (id, page as Page, tag));
            }
        }
        for places in places {
            places.check_filled();
        }
    }

    /// The worker of the process a page's component falls to.
    pub(super) fn owner(&self, page: Page) -> usize {
        usize::from(self.owners.get(page as usize).load(Relaxed))
    }

    /// Counts the size and least label of every root of `by_id` (pages of
    /// whole components, by id: a root's first page is its least id), and
    /// clears the [`RANKS_FIRST`] marks of [`Self::place_by_id`]. Gives
    /// the roots' least labels and those marks by place in `by_id` (none
    /// unless corpus pages come first). On `threads` threads (a
    /// giant component's share, see
    /// [`threads_for_share`]), each counting a range of `by_id` into runs
    /// of one root, which are then added up: a giant component's pages are
    /// one run a thread. On one thread, counting a giant component would
    /// leave the other cores idle.
    pub(super) fn count_roots(
        &self,
        by_id: &mut [KeyedPage],
        threads: usize,
    ) -> (LeastLabels, RanksByPlace) {
        let keep_ranks = self.corpus_wins;
        let mut ranks = vec![false; if keep_ranks { by_id.len() } else { 0 }];
        let mut least = LeastLabels::default();
        if threads <= 1 {
            for at in 0..by_id.len() {
                if let Some(&(_, _, tag)) = by_id.get(at + LOOKAHEAD) {
                    self.nodes.prefetch(tag & !RANKS_FIRST);
                }
                if let Some(&(_, page, _)) = by_id.get(at + LOOKAHEAD) {
                    self.keys.prefetch(page);
                }
                let (root, label) = take_mark(&mut by_id[at], &mut ranks, at);
                self.add_to_root(&mut least, root, 1, label);
            }
            return (least, RanksByPlace(ranks));
        }
        let each = by_id.len().div_ceil(threads).max(1);
        let mut ranges: Vec<(&mut [KeyedPage], &mut [bool])> = match keep_ranks {
            true => by_id.chunks_mut(each).zip(ranks.chunks_mut(each)).collect(),
            false => by_id
                .chunks_mut(each)
                .map(|pages| (pages, &mut [][..]))
                .collect(),
        };
        let runs = in_chunks(&mut ranges, 1, |_, range| {
            let (pages, ranks) = &mut range[0];
            let mut runs: Vec<(Page, u32, Candidate)> = Vec::new();
            for at in 0..pages.len() {
                let (root, label) = take_mark(&mut pages[at], ranks, at);
                match runs.last_mut() {
                    Some((last, size, least)) if *last == root => {
                        *size += 1;
                        *least = self.least_of(*least, label);
                    }
                    _ => runs.push((root, 1, label)),
                }
            }
            runs
        });
        // In chunk order: each root's runs are added in id order.
        let runs: Vec<(Page, u32, Candidate)> = runs.into_iter().flatten().collect();
        for (at, &(root, size, label)) in runs.iter().enumerate() {
            if let Some(&(ahead, ..)) = runs.get(at + LOOKAHEAD) {
                self.nodes.prefetch(ahead);
            }
            self.add_to_root(&mut least, root, size, label);
        }
        (least, RanksByPlace(ranks))
    }

    /// Adds `size` pages whose least label is `label` to `root`'s counts
    /// (none yet if its size is 0; then its label takes the next slot of
    /// `least`); pages are added in id order.
    pub(super) fn add_to_root(
        &self,
        least: &mut LeastLabels,
        root: Page,
        size: u32,
        label @ ((first, page), id): Candidate,
    ) {
        let (counted, (held_first, slot)) = self.nodes.counts(root);
        if counted == 0 {
            let slot = least.push((id, page));
            self.nodes.set_counts(root, size, (first, slot));
            return;
        }
        let held_label = least.at_mut(slot).expect("a counted root's slot");
        let held = ((held_first, held_label.1), held_label.0);
        let ((kept_first, kept_page), kept_id) = self.least_of(held, label);
        *held_label = (kept_id, kept_page);
        self.nodes
            .set_counts(root, counted + size, (kept_first, slot));
    }
}

/// One worker's share of its process's graph, from [`SharedGraph::split`].
#[derive(Debug, Default)]
pub struct WorkerShare {
    pub(crate) components: Components,
    /// The share's pages `(id, page, root)`, sorted by id.
    pub by_id: Vec<KeyedPage>,
    /// Whether each of them ranks first.
    pub(crate) ranks: RanksByPlace,
    /// What the direct policy needs, under it.
    pub(crate) direct: Option<DirectShare>,
    /// Threads its work may use (see [`threads_for_share`]).
    pub(crate) threads: usize,
}

/// The components of one worker's share: what the rest of the job asks of
/// pages (numbered in the process) and of roots (of this share only).
#[derive(Clone, Debug, Default)]
pub(crate) struct Components {
    pub(super) forest: Arc<Forest>,
    /// The least labels of the share's roots ([`Forest::count_roots`]).
    pub(super) least: Arc<LeastLabels>,
}

impl Components {
    /// Page numbers of the process: arrays by page are this long.
    pub(crate) fn len(&self) -> usize {
        self.forest.pages
    }

    /// The least label of a root's set: its representative's.
    pub(crate) fn least(&self, root: Page) -> Label {
        let (_, (first, slot)) = self.forest.nodes.counts(root);
        let (id, page) = self.least.get(slot);
        Label {
            later: !first,
            keys: self.forest.keys.get(page),
            id,
        }
    }

    /// The id of a root's representative.
    pub(crate) fn representative(&self, root: Page) -> i64 {
        let (_, (_, slot)) = self.forest.nodes.counts(root);
        self.least.get(slot).0
    }

    /// Whether a root's representative ranks first (a corpus page).
    pub(crate) fn representative_ranks_first(&self, root: Page) -> bool {
        self.forest.nodes.counts(root).1 .0
    }

    /// Words of keys a page has (0: pages are ordered by id alone).
    pub(crate) fn key_words(&self) -> usize {
        self.forest.keys.words
    }

    /// A page's keys ([`crate::cluster::keep_order`]), padded with zeros.
    pub(crate) fn keys(&self, page: Page) -> KeyWords {
        self.forest.keys.get(page)
    }

    /// Asks the CPU to fetch a page's keys ahead of their use.
    pub(crate) fn prefetch_keys(&self, page: Page) {
        self.forest.keys.prefetch(page);
    }

    /// Pages in a root's set.
    pub(crate) fn component_size(&self, root: Page) -> u32 {
        self.forest.nodes.counts(root).0
    }

    /// Asks the CPU to fetch a root's size and least label's slot ahead of
    /// their use.
    pub(crate) fn prefetch_node(&self, root: Page) {
        self.forest.nodes.prefetch(root);
    }

    /// Asks the CPU to fetch the id of a root's representative ahead of its
    /// use: the root's node is read, so it should be fetched first
    /// ([`Self::prefetch_node`]).
    pub(crate) fn prefetch_representative(&self, root: Page) {
        let (_, (_, slot)) = self.forest.nodes.counts(root);
        if let Some(label) = self.least.at(slot) {
            prefetch(label);
        }
    }
}
