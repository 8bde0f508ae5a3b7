//! The keep order (`cluster --keep-by`): which page of a cluster is kept,
//! and which are dropped for it.
//!
//! Pages are ordered by a list of keys, each breaking the ties of the one
//! before, and by the smallest id last, so that the order is total and a
//! run gives the same bytes on any number of workers or processes.
//!
//! - `corpus` comes from the pairs (a page seen on a pair's corpus side)
//!   and from the corpus's shards (`--corpus`: a page of tonight's batch
//!   fetched before pairs through tonight's row alone under `match
//!   --self`, so no pair shows it on a corpus side); it can
//!   only be the first key, so that "ranks first" stays one bit that
//!   the processes of a run combine (one of them may be the only one to
//!   have seen the pair that makes a page a corpus page). With
//!   `--corpus`, corpus pages then rank by how long the corpus has held
//!   them: since the first batch that holds them was complete, in two
//!   words before the other keys' ([`held_since`]). Otherwise a
//!   page dropped for a corpus page, kept on a later night (it changed)
//!   and so appended, would meet that page again as a corpus page and win
//!   by the next keys: the drop lists of the two nights would drop both.
//! - Every other key comes from a column of the pages table (`--pages`,
//!   and `--corpus` where its files have the column: the keys a page won
//!   by last night still count when it is only in the corpus),
//!   and is encoded into big-endian 32-bit words: the words of a page
//!   compare, word by word, as the page's keys do. A page without a row,
//!   or with a null, gets all ones, so it sorts after every page with a
//!   value under that key; values are clamped below all ones.
//!
//! Every process reads the same rows for a page, so a page's words are the
//! same wherever it is seen: the words of two pages from different
//! processes compare as the pages' keys do.
//!
//! Without `--keep-by`, the order is
//! `corpus,rel-canonical,canonical-url,earliest` when a pages table is
//! given (without `corpus` for pairs made elsewhere, which have no
//! `self_pair` to tell corpus pages by), else the smallest id alone (or
//! `corpus` first with `--corpus-wins`). A page with several rows in the table keeps its
//! least words, whichever row came first: a corpus row, held since a
//! time, before the night's row of its page. So a corpus page ranks by its
//! corpus rows alike every night, whichever pages a night crawls again
//! (a key only the night's table has, a team's score, ties corpus pages,
//! as ranking by tonight's rows where a night has them would swap two
//! corpus pages on the nights that crawled only one). A page's words are held beside
//! it in the union-find's arrays, so the keys' width is memory per page:
//! they may take at most `MAX_KEY_WORDS` words.
//!
//! The keys read from URLs (`canonical-url`, `rel-canonical`) are
//! [`url_keys`]'s. Whether a canonical link that names another page
//! defers to it depends on every page crawled: a page that neither the
//! pages table nor the corpus holds was never crawled, and cannot be kept
//! instead. So the `rel-canonical` word of such a row waits until every
//! row is read: the workers hash the page each row of the pages table is
//! ([`KeepOrder::list_pages`]) and the page each link names
//! ([`RowKeys::naming`]) as they read; then they read the corpus's URLs
//! again for the pages named that the pages table lacks
//! ([`list_named`]: the corpus has too many rows to hash them
//! all in memory, and a link from a corpus row may name a page read
//! before it), and set the word once the hashes are sorted
//! ([`KeepOrder::named_word`]). Every process reads the whole of both
//! tables, so a page named is crawled or not in every process alike: a
//! page held only in the corpus ranks the same whether or not a night
//! crawled the page naming it. A corpus row's link names a crawled page
//! only if the corpus holds it: a corpus page ranks by its corpus rows,
//! alike every night, and a page crawled tonight alone may be dropped
//! tonight.

mod held_since;
mod url_keys;

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use anyhow::{anyhow, bail, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal128Type, Decimal32Type, Decimal64Type, Float32Type, Float64Type,
    Int16Type, Int32Type, Int64Type, Int8Type, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, TimeUnit};
use serde::{Deserialize, Serialize};

use crate::io::parquet::columns::{is_string, string_values};
/// The column `rel-canonical` reads beside `url`, where a file has it.
pub(crate) use crate::io::parquet::output::CANONICAL_URL;
use crate::io::parquet::pages::PagesTable;
pub(crate) use held_since::{CorpusBatch, CorpusBatches};
pub(crate) use url_keys::{canonical_url_key, page_hash, rel_canonical_key};
use url_keys::{
    NAMES_ANOTHER, NAMES_ELSEWHERE, NAMES_HOME, NAMES_ITSELF, NAMES_NONE, NAMES_OTHER_SITE,
};

/// The most words a page's keys may take: 32 bytes.
pub(crate) const MAX_KEY_WORDS: usize = 8;

/// A page's keys as words, padded with zeros to [`MAX_KEY_WORDS`].
pub(crate) type KeyWords = [u32; MAX_KEY_WORDS];

/// The words of a page without a value under a key.
pub(crate) const NO_VALUE: u32 = u32::MAX;

/// The column a timed key reads.
pub(crate) const FETCH_TIME: &str = "fetch_time";
/// The column `canonical-url` reads, and `drop/` takes its URLs from.
pub(crate) const URL: &str = "url";
/// The column `longest` reads.
pub(crate) const N_CHARS: &str = "n_chars";

/// Why a kept page ranks before the page dropped for it: the place in the
/// order of the first key under which the two differ (`corpus`, only ever
/// first, is 0), or [`KeptBy::ID`] when every key ties and the smaller id
/// was kept. Along priority order, the first difference between two pages
/// is the least of the steps between them: the sweep finds it from a byte
/// a position ([`crate::cluster::drop_policy`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct KeptBy(u8);

impl KeptBy {
    /// The kept page ranks first (a corpus page) and the dropped one not.
    pub(crate) const CORPUS: KeptBy = KeptBy(0);
    /// Every key ties: the smaller id was kept.
    pub(crate) const ID: KeptBy = KeptBy(u8::MAX);

    /// The first key under which pages with words `kept` and `dropped`
    /// ([`KeepOrder::encode`]'s) differ, by `word_keys`
    /// ([`KeepOrder::word_keys`]), or [`Self::ID`].
    pub(crate) fn between(kept: &[u32], dropped: &[u32], word_keys: &[KeptBy]) -> KeptBy {
        let differ = |(w, (a, b)): (usize, (&u32, &u32))| (a != b).then(|| word_keys[w]);
        kept.iter()
            .zip(dropped)
            .take(word_keys.len())
            .enumerate()
            .find_map(differ)
            .unwrap_or(KeptBy::ID)
    }
}

impl Default for KeptBy {
    fn default() -> KeptBy {
        KeptBy::ID
    }
}

/// `drop/`'s `kept_by` strings: the keys' names by place, then `id`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct KeptByNames(Vec<String>);

impl KeptByNames {
    pub(crate) fn name(&self, by: KeptBy) -> &str {
        self.0.get(usize::from(by.0)).map_or(BY_ID, String::as_str)
    }
}

/// `kept_by` of a page kept for its smaller id, every key being tied.
pub(crate) const BY_ID: &str = "id";

/// One key of `--keep-by`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum KeepKey {
    /// Pages already in the corpus first (with `--corpus`, the longest
    /// held first: [`KeepOrder::holding_corpus`]).
    Corpus,
    /// The earliest `fetch_time` first.
    Earliest,
    /// The latest `fetch_time` first.
    Latest,
    /// https before http (before any other scheme), then the page's own URL
    /// before another view of it (a mobile, AMP or print copy, a
    /// directory's index page, a fragment), then no query string, then the
    /// fewest path segments, then the shortest URL.
    CanonicalUrl,
    /// A page whose canonical link names itself or a page never crawled,
    /// then one with none, then one that names a page crawled
    /// ([`rel_canonical_key`], [`KeepOrder::named_word`]).
    RelCanonical,
    /// The most `n_chars` first.
    Longest,
    /// A numeric column of the pages table, ascending or descending.
    Column { name: String, descending: bool },
}

impl KeepKey {
    /// Parses one key as `--keep-by` spells it.
    pub(crate) fn parse(spec: &str) -> Result<KeepKey> {
        Ok(match spec.trim() {
            "corpus" => KeepKey::Corpus,
            "earliest" => KeepKey::Earliest,
            "latest" => KeepKey::Latest,
            "canonical-url" => KeepKey::CanonicalUrl,
            "rel-canonical" => KeepKey::RelCanonical,
            "longest" => KeepKey::Longest,
            other => match other.strip_prefix("column:") {
                Some(rest) => {
                    let (name, direction) = rest.rsplit_once(':').ok_or_else(|| {
                        anyhow!("--keep-by {other}: a column key is column:NAME:asc or column:NAME:desc")
                    })?;
                    let descending = match direction {
                        "asc" => false,
                        "desc" => true,
                        _ => bail!(
                            "--keep-by {other}: the direction must be asc or desc, not `{direction}`"
                        ),
                    };
                    if name.is_empty() {
                        bail!("--keep-by {other}: the column name is empty");
                    }
                    KeepKey::Column {
                        name: name.to_string(),
                        descending,
                    }
                }
                None => bail!(
                    "--keep-by: unknown key `{other}` (keys: corpus, earliest, latest, rel-canonical, canonical-url, longest, column:NAME:asc|desc)"
                ),
            },
        })
    }

    /// The pages table's column the key reads (none for `corpus`).
    pub(crate) fn column(&self) -> Option<&str> {
        match self {
            KeepKey::Corpus => None,
            KeepKey::Earliest | KeepKey::Latest => Some(FETCH_TIME),
            KeepKey::CanonicalUrl | KeepKey::RelCanonical => Some(URL),
            KeepKey::Longest => Some(N_CHARS),
            KeepKey::Column { name, .. } => Some(name),
        }
    }

    /// Words the key takes per page.
    fn words(&self) -> usize {
        match self {
            KeepKey::Corpus => 0,
            KeepKey::CanonicalUrl | KeepKey::RelCanonical | KeepKey::Longest => 1,
            _ => 2,
        }
    }

    /// Whether the greatest value comes first.
    fn descending(&self) -> bool {
        match self {
            KeepKey::Latest | KeepKey::Longest => true,
            KeepKey::Column { descending, .. } => *descending,
            _ => false,
        }
    }
}

impl fmt::Display for KeepKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeepKey::Corpus => f.write_str("corpus"),
            KeepKey::Earliest => f.write_str("earliest"),
            KeepKey::Latest => f.write_str("latest"),
            KeepKey::CanonicalUrl => f.write_str("canonical-url"),
            KeepKey::RelCanonical => f.write_str("rel-canonical"),
            KeepKey::Longest => f.write_str("longest"),
            KeepKey::Column { name, descending } => {
                let direction = if *descending { "desc" } else { "asc" };
                write!(f, "column:{name}:{direction}")
            }
        }
    }
}

/// The keys of `--keep-by`, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeepOrder {
    keys: Vec<KeepKey>,
    /// Whether corpus pages rank among themselves by how long the corpus
    /// has held them ([`Self::holding_corpus`]): [`HELD_WORDS`] words
    /// before the other keys', the `corpus` key's.
    held: bool,
    /// Whether no key was asked for: the default order, whose `corpus` key
    /// pairs made elsewhere, without `--corpus`, may not support
    /// ([`Self::for_pairs`]).
    by_default: bool,
    /// Whether the default's `corpus` key was asked for (`--corpus-wins`):
    /// pairs that cannot support it are then refused, not passed over.
    corpus_required: bool,
}

/// Words of a corpus page's held-since time: the time of the first batch
/// of `--corpus` that holds it ([`held_since`]).
const HELD_WORDS: usize = 2;

impl KeepOrder {
    /// The order of `keys`: `corpus` only first, each key once, and at most
    /// [`MAX_KEY_WORDS`] words in all.
    pub(crate) fn new(keys: Vec<KeepKey>) -> Result<KeepOrder> {
        if keys.iter().skip(1).any(|key| *key == KeepKey::Corpus) {
            bail!("--keep-by: corpus can only be the first key (a page already in the corpus is kept before any other)");
        }
        for (at, key) in keys.iter().enumerate() {
            if keys[..at].contains(key) {
                bail!("--keep-by: {key} is given twice");
            }
        }
        let order = KeepOrder {
            keys,
            held: false,
            by_default: false,
            corpus_required: false,
        };
        order.check_width()?;
        Ok(order)
    }

    /// Refuses keys wider than [`MAX_KEY_WORDS`].
    fn check_width(&self) -> Result<()> {
        if self.words() > MAX_KEY_WORDS {
            let corpus = match self.held {
                true => "8 with --corpus",
                false => "none",
            };
            bail!(
                "--keep-by {self}: the keys take {} bytes a page, more than {} (corpus takes {corpus}, rel-canonical, canonical-url and longest 4, every other key 8)",
                4 * self.words(),
                4 * MAX_KEY_WORDS
            );
        }
        Ok(())
    }

    /// This order for a run given the corpus's shards (`corpus_given`):
    /// with `corpus` first, corpus pages rank among themselves by how long
    /// the corpus has held them, the longest held first ([`held_since`]).
    pub(crate) fn holding_corpus(mut self, corpus_given: bool) -> Result<KeepOrder> {
        self.held = corpus_given && self.corpus_first();
        self.check_width()?;
        Ok(self)
    }

    /// The words of the held-since time, first of a page's: none unless
    /// corpus pages rank by it.
    pub(crate) fn held_words(&self) -> usize {
        if self.held {
            HELD_WORDS
        } else {
            0
        }
    }

    /// The batches of the corpus `table` and the held-since time of each
    /// unit (row group), its batch's ([`held_since`]); none unless corpus
    /// pages rank by it.
    pub(crate) fn held_since(&self, table: Option<&PagesTable>) -> Result<CorpusBatches> {
        match table {
            Some(table) if self.held => held_since::batch_times(table),
            _ => Ok(CorpusBatches::default()),
        }
    }

    /// Parses `--keep-by`'s comma-separated keys.
    pub fn parse(spec: &str) -> Result<KeepOrder> {
        let keys = spec
            .split(',')
            .map(KeepKey::parse)
            .collect::<Result<Vec<_>>>()?;
        KeepOrder::new(keys)
    }

    /// Today's order without a pages table: corpus pages first if
    /// `corpus_wins`, then the smallest id.
    pub fn without_pages(corpus_wins: bool) -> KeepOrder {
        KeepOrder {
            keys: if corpus_wins {
                vec![KeepKey::Corpus]
            } else {
                Vec::new()
            },
            held: false,
            by_default: false,
            corpus_required: false,
        }
    }

    /// The order of `--keep-by` (`spec`), or else the default:
    /// [`Self::default_with_pages`] when a pages table is given, else corpus
    /// pages first when `--corpus` is (it says which pages are the
    /// corpus's), else by id alone. `--corpus-wins` asks for the default's
    /// `corpus` key, so that pairs which cannot support it are refused
    /// rather than it being left out (as a job's `corpus_wins = true`).
    pub(crate) fn resolve(
        spec: Option<&str>,
        corpus_wins: bool,
        has_pages: bool,
        has_corpus: bool,
    ) -> Result<KeepOrder> {
        let default = match has_pages {
            true => KeepOrder::default_with_pages(),
            false => KeepOrder {
                by_default: true,
                ..KeepOrder::without_pages(corpus_wins || has_corpus)
            },
        };
        match (spec, corpus_wins) {
            (Some(_), true) => bail!("--corpus-wins asks for the default order's corpus key: give one or the other of it and --keep-by"),
            (Some(spec), false) => KeepOrder::parse(spec),
            (None, true) => Ok(KeepOrder {
                corpus_required: true,
                ..default
            }),
            (None, false) => Ok(default),
        }
    }

    /// The order when a pages table is given and no keys are: corpus pages
    /// first, then the page its site names canonical, then the most
    /// canonical URL, then the earliest fetched (fetch times rarely tie, so
    /// a key after them would rarely be read).
    pub fn default_with_pages() -> KeepOrder {
        KeepOrder {
            keys: vec![
                KeepKey::Corpus,
                KeepKey::RelCanonical,
                KeepKey::CanonicalUrl,
                KeepKey::Earliest,
            ],
            held: false,
            by_default: true,
            corpus_required: false,
        }
    }

    /// Whether corpus pages come first and the pairs must say which pages
    /// are (their `self_pair`): asked for, not the default's, and without
    /// `--corpus` (`corpus_given`), whose pages are the corpus's.
    pub(crate) fn needs_self_pair(&self, corpus_given: bool) -> bool {
        let asked = !self.by_default || self.corpus_required;
        self.corpus_first() && asked && !corpus_given
    }

    /// This order for pairs that say (`tell_corpus`) or do not say which
    /// pages are the corpus's: without `--corpus` (`corpus_given`) the
    /// default order leaves out its `corpus` key for pairs made elsewhere
    /// (no `self_pair`), as asked keys never are.
    pub(crate) fn for_pairs(mut self, tell_corpus: bool, corpus_given: bool) -> KeepOrder {
        let optional = self.by_default && !self.corpus_required;
        if optional && !tell_corpus && !corpus_given && self.corpus_first() {
            self.keys.remove(0);
        }
        self
    }

    /// Whether no key was asked for (`--corpus-wins` asks for none but the
    /// default's).
    pub(crate) fn is_default(&self) -> bool {
        self.by_default
    }

    /// Whether corpus pages come first.
    pub(crate) fn corpus_first(&self) -> bool {
        self.keys.first() == Some(&KeepKey::Corpus)
    }

    /// Words a page's keys take (0: no key is read from a table).
    pub(crate) fn words(&self) -> usize {
        let held = self.held_words();
        held + self.keys.iter().map(KeepKey::words).sum::<usize>()
    }

    /// Whether a key reads the pages table (`corpus` reads none).
    pub(crate) fn reads_pages(&self) -> bool {
        self.keys.iter().any(|key| key.words() > 0)
    }

    /// The pages table's columns the keys read, each once, in key order.
    pub(crate) fn columns(&self) -> Vec<String> {
        let mut columns: Vec<String> = Vec::new();
        for column in self.keys.iter().filter_map(KeepKey::column) {
            if !columns.iter().any(|c| c == column) {
                columns.push(column.to_string());
            }
        }
        columns
    }

    /// The corpus's columns the keys read: the pages table's, and
    /// `fetch_time` for how long a page has been held
    /// ([`Self::held_since`]).
    pub(crate) fn corpus_columns(&self) -> Vec<String> {
        let mut columns = self.columns();
        if self.held && !columns.iter().any(|c| c == FETCH_TIME) {
            columns.push(FETCH_TIME.to_string());
        }
        columns
    }

    /// The place of `rel-canonical`'s word among a page's words, if it is
    /// a key: a row whose link names another page has it
    /// [`NAMES_ANOTHER`] or [`NAMES_HOME`] until the pages table is read
    /// ([`Self::named_word`]).
    pub(crate) fn rel_canonical_word(&self) -> Option<usize> {
        let held = self.held_words();
        let place = self.keys.iter().position(|k| *k == KeepKey::RelCanonical)?;
        Some(held + self.keys[..place].iter().map(KeepKey::words).sum::<usize>())
    }

    /// `rel-canonical`'s word for a page whose link names another page,
    /// `word` its word as read ([`rel_canonical_key`]), `listed` whether
    /// the page named was crawled
    /// ([`crate::cluster::components::SharedGraph::finish_keys`]). A page of the named page's
    /// site naming one the crawl does not hold is the site's own copy of it
    /// (an AMP view, a URL with a tracking query), and ranks as if it named
    /// itself: else a copy that names nothing, a scraper's, would win over
    /// it. A page of another site naming it (a syndicated copy, a mirror,
    /// or a scraper that kept the link) ranks after the site's own and
    /// before a copy naming nothing.
    pub(crate) fn named_word(word: u32, listed: bool) -> u32 {
        match (word, listed) {
            (NAMES_HOME, true) => NAMES_NONE,
            (_, true) => NAMES_ANOTHER,
            (NAMES_OTHER_SITE, false) => NAMES_ELSEWHERE,
            (_, false) => NAMES_ITSELF,
        }
    }

    /// Appends the hashes ([`page_hash`]) of the pages that the rows of the
    /// pages table's `batch` are, when `rel-canonical` is a key: the pages
    /// its canonical links may name ([`Self::named_word`]).
    pub(crate) fn list_pages(
        &self,
        batch: &RecordBatch,
        location: &str,
        out: &mut RowKeys,
    ) -> Result<()> {
        if !self.keys.contains(&KeepKey::RelCanonical) {
            return Ok(());
        }
        let listed = &mut out.listed;
        page_hashes(batch, location, &mut out.scratch, |hash| listed.push(hash))
    }

    /// The columns the keys read where a file has them: `canonical_url`
    /// for `rel-canonical` (fingerprint shards from before it have none).
    pub(crate) fn optional_columns(&self) -> Vec<&'static str> {
        let reads = self.keys.contains(&KeepKey::RelCanonical);
        reads.then_some(CANONICAL_URL).into_iter().collect()
    }

    /// The key each word of a page's words belongs to: a difference first
    /// found at word `w` is a difference under key `word_keys()[w]`.
    pub(crate) fn word_keys(&self) -> Vec<KeptBy> {
        let held = self.held_words();
        let each =
            |(place, key): (usize, &KeepKey)| std::iter::repeat_n(KeptBy(place as u8), key.words());
        let keys = self.keys.iter().enumerate().flat_map(each);
        std::iter::repeat_n(KeptBy::CORPUS, held)
            .chain(keys)
            .collect()
    }

    /// The keys as `--keep-by` spells them, for `_summary.json`.
    pub(crate) fn names(&self) -> Vec<String> {
        self.keys.iter().map(KeepKey::to_string).collect()
    }

    /// `drop/`'s `kept_by` of each [`KeptBy`]: the keys' names, by place,
    /// and `id`.
    pub(crate) fn kept_by_names(&self) -> KeptByNames {
        KeptByNames(self.names())
    }

    /// Checks that the column `name`, of `data_type` in the pages file
    /// `location`, can be read as every key that reads it.
    pub(crate) fn check_column(
        &self,
        location: &str,
        name: &str,
        data_type: &DataType,
    ) -> Result<()> {
        let held = (self.held && name == FETCH_TIME).then_some(&KeepKey::Corpus);
        let keys = self.keys.iter().filter(|key| key.column() == Some(name));
        for key in keys.chain(held) {
            let fits = match key {
                KeepKey::CanonicalUrl | KeepKey::RelCanonical => is_string(data_type),
                KeepKey::Longest => data_type.is_integer(),
                _ => is_numeric(data_type),
            };
            if !fits {
                let expected = match key {
                    KeepKey::CanonicalUrl | KeepKey::RelCanonical => "a string",
                    KeepKey::Longest => "an integer",
                    _ => "a number, timestamp or date",
                };
                let reads = match key {
                    KeepKey::Corpus => " (how long a corpus page has been held)",
                    _ => "",
                };
                bail!("{location}: column `{name}` has type {data_type}, but --keep-by {key}{reads} needs {expected}");
            }
        }
        Ok(())
    }

    /// Appends the words of every row of the record batch `batch` to
    /// `out.words` ([`Self::words`] a row) and its rows whose canonical
    /// link names another page to `out.naming`, `location` naming the
    /// rows in errors. Only the rows `wanted` are keyed (the others' words
    /// are [`NO_VALUE`]): a pages table holds every page of the night, most
    /// of them in no pair, and keying a URL costs more than reading it. A
    /// key whose column the rows lack (a corpus shard without it) leaves
    /// its words so too. Only the corpus's rows give a held-since time
    /// (`held_since`, their corpus batch's: [`Self::held_since`]).
    pub(crate) fn encode(
        &self,
        batch: &RecordBatch,
        location: &str,
        wanted: impl Fn(usize) -> bool,
        held_since: Option<u64>,
        out: &mut RowKeys,
    ) -> Result<()> {
        let words = self.words();
        let first_row = out.words.len() / words.max(1);
        let start = out.words.len();
        out.words.resize(start + words * batch.num_rows(), NO_VALUE);
        let rows = &mut out.words[start..];
        let mut at = 0;
        if self.held {
            if let Some(since) = held_since {
                let since = two_words(since, false);
                for row in (0..batch.num_rows()).filter(|&row| wanted(row)) {
                    rows[row * words..][..HELD_WORDS].copy_from_slice(&since);
                }
            }
            at = HELD_WORDS;
        }
        for key in &self.keys {
            let Some(name) = key.column() else {
                continue;
            };
            let Some(column) = batch.column_by_name(name) else {
                at += key.words();
                continue;
            };
            match key {
                KeepKey::CanonicalUrl => {
                    let urls = string_values(column, name, location)?;
                    for (row, url) in of_rows(urls, &wanted) {
                        if let Some(url) = url {
                            rows[row * words + at] = canonical_url_key(url);
                        }
                    }
                }
                KeepKey::RelCanonical => {
                    let canonicals = match batch.column_by_name(CANONICAL_URL) {
                        Some(c) => string_values(c, CANONICAL_URL, location)?,
                        None => Box::new(std::iter::repeat_n(None, batch.num_rows())),
                    };
                    let urls = string_values(column, name, location)?.zip(canonicals);
                    for (row, (url, canonical)) in of_rows(urls, &wanted) {
                        let key = rel_canonical_key(url, canonical);
                        rows[row * words + at] = key;
                        if let (NAMES_ANOTHER | NAMES_HOME | NAMES_OTHER_SITE, Some(named)) =
                            (key, canonical)
                        {
                            let hash = page_hash(named, &mut out.scratch);
                            out.naming.push((first_row + row, hash));
                        }
                    }
                }
                KeepKey::Longest => {
                    for (row, count) in of_rows(counts(column, name, location)?, &wanted) {
                        if let Some(count) = count {
                            rows[row * words + at] = NO_VALUE - 1 - count;
                        }
                    }
                }
                _ => {
                    let values = ordered_values(column, name, location)?;
                    for (row, value) in of_rows(values, &wanted) {
                        if let Some(value) = value {
                            let at = row * words + at;
                            rows[at..at + 2].copy_from_slice(&two_words(value, key.descending()));
                        }
                    }
                }
            }
            at += key.words();
        }
        Ok(())
    }
}

/// The keys of rows of a pages table ([`KeepOrder::encode`]).
#[derive(Debug, Default)]
pub(crate) struct RowKeys {
    /// [`KeepOrder::words`] a row.
    pub(crate) words: Vec<u32>,
    /// The rows whose canonical link names another page, with that page's
    /// hash ([`page_hash`]), in row order: their `rel-canonical` word waits
    /// on the whole table ([`KeepOrder::named_word`]).
    pub(crate) naming: Vec<(usize, u64)>,
    /// Hashes of the pages the table's rows are ([`KeepOrder::list_pages`]).
    pub(crate) listed: Vec<u64>,
    scratch: Vec<u8>,
}

impl RowKeys {
    /// Empties the rows' words and names, the pages listed kept.
    pub(crate) fn clear(&mut self) {
        self.words.clear();
        self.naming.clear();
    }
}

/// Puts into `found` the hashes of the pages among `named` that the rows
/// of `batch` are.
pub(crate) fn list_named(
    batch: &RecordBatch,
    location: &str,
    named: &PageSet,
    scratch: &mut Vec<u8>,
    found: &mut Vec<u64>,
) -> Result<()> {
    page_hashes(batch, location, scratch, |hash| {
        if named.contains(hash) {
            found.push(hash);
        }
    })
}

/// Gives `each` the hash ([`page_hash`]) of the page each row of `batch`
/// with a URL is.
fn page_hashes(
    batch: &RecordBatch,
    location: &str,
    scratch: &mut Vec<u8>,
    mut each: impl FnMut(u64),
) -> Result<()> {
    let Some(column) = batch.column_by_name(URL) else {
        return Ok(());
    };
    for url in string_values(column, URL, location)?.flatten() {
        each(page_hash(url, scratch));
    }
    Ok(())
}

/// Hashes of pages ([`page_hash`]), looked up once for each row of the
/// corpus: a bitmap of their top bits, small enough for the cache, turns
/// away most rows before the sorted hashes are searched.
#[derive(Debug, Default)]
pub(crate) struct PageSet {
    hashes: Vec<u64>,
    bits: Vec<u64>,
    shift: u32,
}

impl PageSet {
    /// The set of `hashes`, sorted and without repeats.
    pub(crate) fn of_sorted(hashes: Vec<u64>) -> PageSet {
        // About 16 bits a page: one row in 16 passes the bitmap in vain.
        let bits = (hashes.len() * 16).next_power_of_two().max(64);
        let shift = 64 - bits.trailing_zeros();
        let mut set = PageSet {
            bits: vec![0; bits / 64],
            shift,
            hashes: Vec::new(),
        };
        for &hash in &hashes {
            let bit = set.bit(hash);
            set.bits[bit / 64] |= 1 << (bit % 64);
        }
        set.hashes = hashes;
        set
    }

    fn bit(&self, hash: u64) -> usize {
        (hash >> self.shift) as usize
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    pub(crate) fn contains(&self, hash: u64) -> bool {
        let bit = self.bit(hash);
        self.bits[bit / 64] & (1 << (bit % 64)) != 0 && self.hashes.binary_search(&hash).is_ok()
    }
}

/// An ordered value as two big-endian words, `descending` or not, below
/// [`NO_VALUE`]'s: of the 2^64 values, the greatest two share a word pair
/// (in either direction; an unsigned column's 0 and 1 under `desc` did,
/// where a count meets them).
fn two_words(value: u64, descending: bool) -> [u32; 2] {
    let value = value.min(u64::MAX - 1);
    let value = if descending {
        u64::MAX - 1 - value
    } else {
        value
    };
    [(value >> 32) as u32, value as u32]
}

/// The items of `values` with their rows, of the rows `wanted` alone.
fn of_rows<'a, T>(
    values: impl IntoIterator<Item = T> + 'a,
    wanted: &'a impl Fn(usize) -> bool,
) -> impl Iterator<Item = (usize, T)> + 'a {
    values
        .into_iter()
        .enumerate()
        .filter(move |&(row, _)| wanted(row))
}

impl fmt::Display for KeepOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.names().join(","))
    }
}

fn is_numeric(data_type: &DataType) -> bool {
    data_type.is_integer()
        || matches!(
            data_type,
            DataType::Float32
                | DataType::Float64
                | DataType::Decimal32(..)
                | DataType::Decimal64(..)
                | DataType::Decimal128(..)
                | DataType::Timestamp(..)
                | DataType::Date32
                | DataType::Date64
        )
}

/// An integer column's values as counts of one word (None for nulls), for
/// `longest`: below zero as zero, beyond the word as the most it holds
/// below [`NO_VALUE`] (a page of 4 GiB of text ties with a longer one, and
/// the id decides).
fn counts(column: &ArrayRef, name: &str, location: &str) -> Result<Vec<Option<u32>>> {
    const MOST: u32 = NO_VALUE - 1;
    let data_type = column.data_type();
    if !data_type.is_integer() {
        bail!("{location}: column `{name}` has type {data_type}, expected an integer");
    }
    // [`ordered_values`] gives every integer as a signed one, sign bit
    // flipped.
    let count = |ordered: u64| ((ordered ^ 1 << 63) as i64).clamp(0, i64::from(MOST)) as u32;
    let values = ordered_values(column, name, location)?;
    Ok(values.into_iter().map(|v| v.map(count)).collect())
}

/// 10 to the power of a decimal's `scale` (negative: a multiple of 10).
fn ten_to(scale: i8) -> f64 {
    10f64.powi(i32::from(scale))
}

/// A numeric column's values as unsigned words in the same order (None
/// for nulls and NaN); timestamps and dates in microseconds, whatever
/// their unit; decimals (DuckDB's type for a literal such as `0.95`) as
/// floats, so that files of other scales, or of floats, compare.
fn ordered_values(column: &ArrayRef, name: &str, location: &str) -> Result<Vec<Option<u64>>> {
    fn signed(v: i64) -> u64 {
        (v as u64) ^ (1 << 63)
    }
    fn float(v: f64) -> Option<u64> {
        // -0.0 + 0.0 is +0.0: the two zeros are one value, not two ranks.
        let bits = (v + 0.0).to_bits();
        (!v.is_nan()).then_some(if bits >> 63 == 1 {
            !bits
        } else {
            bits | 1 << 63
        })
    }
    macro_rules! map {
        ($t:ty, $f:expr) => {
            column
                .as_primitive::<$t>()
                .iter()
                .map(|v| v.and_then($f))
                .collect()
        };
    }
    Ok(match column.data_type() {
        DataType::Int8 => map!(Int8Type, |v| Some(signed(v.into()))),
        DataType::Int16 => map!(Int16Type, |v| Some(signed(v.into()))),
        DataType::Int32 => map!(Int32Type, |v| Some(signed(v.into()))),
        DataType::Int64 => map!(Int64Type, |v| Some(signed(v))),
        // Unsigned as signed, so that the two compare (2^63 and more tie).
        DataType::UInt8 => map!(UInt8Type, |v| Some(signed(v.into()))),
        DataType::UInt16 => map!(UInt16Type, |v| Some(signed(v.into()))),
        DataType::UInt32 => map!(UInt32Type, |v| Some(signed(v.into()))),
        DataType::UInt64 => map!(UInt64Type, |v| Some(
            i64::try_from(v).map_or(u64::MAX, signed)
        )),
        DataType::Float32 => map!(Float32Type, |v: f32| float(v.into())),
        DataType::Float64 => map!(Float64Type, float),
        DataType::Decimal32(_, scale) => {
            let unit = ten_to(*scale);
            map!(Decimal32Type, |v: i32| float(f64::from(v) / unit))
        }
        DataType::Decimal64(_, scale) => {
            let unit = ten_to(*scale);
            map!(Decimal64Type, |v: i64| float(v as f64 / unit))
        }
        DataType::Decimal128(_, scale) => {
            let unit = ten_to(*scale);
            map!(Decimal128Type, |v: i128| float(v as f64 / unit))
        }
        DataType::Timestamp(TimeUnit::Second, _) => {
            map!(TimestampSecondType, |v: i64| Some(signed(
                v.saturating_mul(1_000_000)
            )))
        }
        DataType::Timestamp(TimeUnit::Millisecond, _) => {
            map!(TimestampMillisecondType, |v: i64| Some(signed(
                v.saturating_mul(1_000)
            )))
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            map!(TimestampMicrosecondType, |v| Some(signed(v)))
        }
        DataType::Timestamp(TimeUnit::Nanosecond, _) => {
            map!(TimestampNanosecondType, |v: i64| Some(signed(
                v.div_euclid(1_000)
            )))
        }
        DataType::Date32 => {
            map!(Date32Type, |v: i32| Some(signed(
                i64::from(v).saturating_mul(86_400_000_000)
            )))
        }
        DataType::Date64 => map!(Date64Type, |v: i64| Some(signed(v.saturating_mul(1_000)))),
        other => bail!(
            "{location}: column `{name}` has type {other}, expected a number, timestamp or date"
        ),
    })
}

/// What a numeric column's values are, for their order
/// ([`ordered_values`]): values of two kinds have no common order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ValueKind {
    Clock,
    Integer,
    Real,
}

impl ValueKind {
    fn of(data_type: &DataType) -> Option<ValueKind> {
        Some(match data_type {
            DataType::Timestamp(..) | DataType::Date32 | DataType::Date64 => ValueKind::Clock,
            data_type if data_type.is_integer() => ValueKind::Integer,
            data_type if is_numeric(data_type) => ValueKind::Real,
            _ => return None,
        })
    }
}

impl fmt::Display for ValueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ValueKind::Clock => "times or dates",
            ValueKind::Integer => "integers",
            ValueKind::Real => "floating-point or decimal numbers",
        })
    }
}

/// The kind of each key column's values, from the first file that has it:
/// a key compares a column's values across every file of `--pages` and
/// `--corpus`, so a file whose column holds another kind (epoch seconds
/// beside timestamps) is refused rather than ranked out of order.
#[derive(Debug, Default)]
pub(crate) struct ColumnKinds(Mutex<HashMap<String, (ValueKind, String)>>);

impl ColumnKinds {
    /// Records or checks the kind of column `name` of type `data_type` in
    /// `file`.
    pub(crate) fn check(&self, file: &str, name: &str, data_type: &DataType) -> Result<()> {
        let Some(kind) = ValueKind::of(data_type) else {
            return Ok(());
        };
        let mut seen = crate::exec::parallel::lock(&self.0);
        let entry = seen.entry(name.to_string());
        let (first, first_file) = entry.or_insert_with(|| (kind, file.to_string()));
        if *first != kind {
            bail!("{file}: column `{name}` holds {kind} ({data_type}), but in {first_file} it holds {first}: the keys cannot order the two together; write it as one kind in every file");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{
        Decimal128Array, Decimal32Array, Float64Array, Int32Array, Int64Array, StringArray,
        TimestampSecondArray,
    };
    use std::sync::Arc;

    #[test]
    fn keys_parse_as_spelled_and_print_back() {
        let spec = "corpus,earliest,latest,canonical-url,column:q:desc";
        let order = KeepOrder::parse(spec).unwrap();
        assert_eq!(order.to_string(), spec);
        assert!(order.corpus_first());
        assert_eq!(order.words(), 2 + 2 + 1 + 2);
        assert_eq!(order.columns(), vec!["fetch_time", "url", "q"]);
        assert_eq!(
            KeepOrder::default_with_pages().to_string(),
            "corpus,rel-canonical,canonical-url,earliest"
        );
        assert_eq!(
            KeepOrder::default_with_pages().optional_columns(),
            vec![CANONICAL_URL]
        );
    }

    #[test]
    fn a_page_naming_itself_canonical_comes_first_and_one_naming_another_last() {
        let page = "https://news.example/story";
        let key = |canonical| rel_canonical_key(Some(page), canonical);
        assert_eq!(key(Some(page)), NAMES_ITSELF);
        assert_eq!(key(Some("https://news.example/story#top")), NAMES_ITSELF);
        assert_eq!(key(Some("HTTPS://News.Example:443/story")), NAMES_ITSELF);
        assert_eq!(key(None), NAMES_NONE);
        assert_eq!(key(Some("https://news.example/story/")), NAMES_ANOTHER);
        assert_eq!(
            key(Some("https://publisher.example/story")),
            NAMES_OTHER_SITE
        );
        assert_eq!(rel_canonical_key(None, Some(page)), NAMES_ANOTHER);
        assert_eq!(rel_canonical_key(None, None), NAMES_NONE);
        // The same site: a www., mobile or AMP host, a port, a user, case;
        // a relative link. Not a subdomain, nor a suffix of the host.
        for same in [
            "https://www.news.example/a",
            "http://AMP.News.Example:8080/a",
            "https://user@m.news.example/a",
            "/a",
        ] {
            assert_eq!(key(Some(same)), NAMES_ANOTHER, "{same}");
        }
        for other in [
            "https://sport.news.example/a",
            "https://oldnews.example/a",
            "https://amp.example/a",
        ] {
            assert_eq!(key(Some(other)), NAMES_OTHER_SITE, "{other}");
        }
        let www =
            |canonical| rel_canonical_key(Some("https://www.news.example/x"), Some(canonical));
        assert_eq!(www("https://news.example/y"), NAMES_ANOTHER);
        assert_eq!(www("https://www2.news.example/y"), NAMES_OTHER_SITE);
        // A site's home page named from within it is a template's mistake
        // if the home was crawled; one not crawled is named like any other.
        assert_eq!(key(Some("https://news.example/")), NAMES_HOME);
        assert_eq!(key(Some("https://news.example")), NAMES_HOME);
        assert_eq!(key(Some("https://elsewhere.example/#top")), NAMES_HOME);
        for (word, listed, named) in [
            (NAMES_ANOTHER, true, NAMES_ANOTHER),
            (NAMES_ANOTHER, false, NAMES_ITSELF),
            (NAMES_OTHER_SITE, true, NAMES_ANOTHER),
            (NAMES_OTHER_SITE, false, NAMES_ELSEWHERE),
            (NAMES_HOME, true, NAMES_NONE),
            (NAMES_HOME, false, NAMES_ITSELF),
        ] {
            assert_eq!(KeepOrder::named_word(word, listed), named);
        }
        assert_eq!(key(Some("https://news.example/?lang=en")), NAMES_ANOTHER);
        let home = |url, canonical| rel_canonical_key(Some(url), Some(canonical));
        assert_eq!(
            home("https://www.news.example/", "https://news.example/"),
            NAMES_ANOTHER
        );
        assert_eq!(
            home("https://news.example/", "https://news.example"),
            NAMES_ITSELF
        );
        assert_eq!(
            home("https://partner.example/story", "https://news.example/"),
            NAMES_HOME
        );
        // A view of the home page names it rightly.
        for view in [
            "https://news.example/?utm_source=x",
            "https://news.example/index.html",
            "https://news.example/?page=2",
        ] {
            assert_eq!(home(view, "https://news.example/"), NAMES_ANOTHER, "{view}");
        }
        // Through a batch: a file without the column names no canonical.
        let order = KeepOrder::parse("rel-canonical").unwrap();
        let urls: ArrayRef = Arc::new(StringArray::from(vec![Some(page), Some(page), None]));
        let canonicals: ArrayRef = Arc::new(StringArray::from(vec![
            Some(page),
            Some("https://elsewhere.example/story"),
            None,
        ]));
        let with = RecordBatch::try_from_iter([(URL, urls.clone()), (CANONICAL_URL, canonicals)]);
        let mut keys = RowKeys::default();
        order
            .encode(&with.unwrap(), "t", |_| true, None, &mut keys)
            .unwrap();
        assert_eq!(keys.words, vec![NAMES_ITSELF, NAMES_OTHER_SITE, NAMES_NONE]);
        // The second row's word waits on the pages table listing the page.
        let elsewhere = page_hash("https://elsewhere.example/story#top", &mut Vec::new());
        assert_eq!(keys.naming, [(1, elsewhere)]);
        let without = RecordBatch::try_from_iter([(URL, urls)]).unwrap();
        assert_eq!(encoded_words(&order, &without, None), vec![NAMES_NONE; 3]);
    }

    /// The words of every row of `batch`.
    fn encoded_words(order: &KeepOrder, batch: &RecordBatch, since: Option<u64>) -> Vec<u32> {
        let mut keys = RowKeys::default();
        order
            .encode(batch, "t", |_| true, since, &mut keys)
            .unwrap();
        keys.words
    }

    #[test]
    fn bad_keys_are_refused_with_the_key_named() {
        for (spec, said) in [
            ("earliest,nearest", "unknown key `nearest`"),
            ("earliest,corpus", "corpus can only be the first key"),
            ("earliest,earliest", "earliest is given twice"),
            ("column:q", "column:NAME:asc or column:NAME:desc"),
            ("column:q:up", "asc or desc, not `up`"),
            ("column::asc", "column name is empty"),
            (
                "column:a:asc,column:b:asc,column:c:asc,column:d:asc,longest",
                "more than 32",
            ),
        ] {
            let error = KeepOrder::parse(spec).unwrap_err().to_string();
            assert!(error.contains(said), "{spec}: {error}");
        }
    }

    #[test]
    fn corpus_rows_give_the_time_held_first_and_other_rows_none() {
        let keys = KeepOrder::parse("corpus,canonical-url").unwrap();
        assert_eq!(keys.clone().holding_corpus(false).unwrap(), keys);
        assert_eq!(
            KeepOrder::parse("earliest")
                .unwrap()
                .holding_corpus(true)
                .unwrap(),
            KeepOrder::parse("earliest").unwrap(),
            "corpus is not a key: no time held"
        );
        let order = keys.holding_corpus(true).unwrap();
        assert_eq!((order.words(), order.reads_pages()), (3, true));
        assert_eq!(
            order.word_keys(),
            [KeptBy::CORPUS, KeptBy::CORPUS, KeptBy(1)]
        );
        assert_eq!(order.columns(), [URL]);
        assert_eq!(order.corpus_columns(), [URL, FETCH_TIME]);
        assert_eq!(order.to_string(), "corpus,canonical-url");
        let times = Arc::new(TimestampSecondArray::from(vec![Some(300), Some(100), None]));
        let urls = Arc::new(StringArray::from(vec!["https://a/"; 3]));
        let batch = RecordBatch::try_from_iter([
            (FETCH_TIME, times as ArrayRef),
            (URL, urls.clone() as ArrayRef),
        ])
        .unwrap();
        let encoded = |batch: &RecordBatch, since: Option<u64>| {
            let words = encoded_words(&order, batch, since);
            words.chunks(3).map(<[u32]>::to_vec).collect::<Vec<_>>()
        };
        // Every row of a batch is held since its batch, whatever its own
        // time: the next keys decide between them.
        let corpus = encoded(&batch, Some(5 << 32 | 7));
        assert!(corpus.iter().all(|row| row[..2] == [5, 7]), "{corpus:?}");
        assert!(corpus.iter().all(|row| row[2] == corpus[0][2]));
        // A batch complete earlier is held the longer.
        assert!(encoded(&batch, Some(0)).iter().all(|row| row < &corpus[0]));
        // The night's rows are held since no time: after every corpus row.
        let night = encoded(&batch, None);
        assert!(night.iter().all(|row| row[..2] == [NO_VALUE; 2]));
        assert!(corpus.iter().all(|row| row < &night[0]));
        // Held-since words count toward the width.
        let wide = "corpus,column:a:asc,column:b:asc,column:c:asc,longest";
        let error = KeepOrder::parse(wide)
            .unwrap()
            .holding_corpus(true)
            .unwrap_err();
        assert!(
            error.to_string().contains("corpus takes 8 with --corpus"),
            "{error}"
        );
        let error = order
            .check_column("c.parquet", FETCH_TIME, &DataType::Utf8)
            .unwrap_err();
        let said = "c.parquet: column `fetch_time` has type Utf8, but --keep-by corpus (how long a corpus page has been held) needs a number";
        assert!(error.to_string().contains(said), "{error}");
    }

    #[test]
    fn words_compare_as_the_keys_do_and_missing_values_come_last() {
        let order = KeepOrder::parse("earliest,column:q:desc,canonical-url").unwrap();
        let batch = RecordBatch::try_from_iter([
            (
                "fetch_time",
                Arc::new(TimestampSecondArray::from(vec![
                    Some(-5),
                    Some(10),
                    Some(10),
                    Some(10),
                    None,
                ])) as ArrayRef,
            ),
            (
                "q",
                Arc::new(Float64Array::from(vec![
                    Some(0.0),
                    Some(-1.5),
                    Some(2.5),
                    Some(2.5),
                    Some(9.0),
                ])) as ArrayRef,
            ),
            (
                "url",
                Arc::new(StringArray::from(vec![
                    None,
                    Some("https://a/"),
                    Some("http://a/"),
                    Some("https://a/b"),
                    Some("https://a/"),
                ])) as ArrayRef,
            ),
        ])
        .unwrap();
        let words = encoded_words(&order, &batch, None);
        let rows: Vec<&[u32]> = words.chunks(order.words()).collect();
        // Earliest first (a time before 1970 included); then the greatest q;
        // then https, fewer segments; a page with no time last.
        let expected_order = [0, 3, 2, 1, 4];
        let mut sorted: Vec<usize> = (0..5).collect();
        sorted.sort_by_key(|&r| rows[r]);
        assert_eq!(sorted, expected_order);
        assert_eq!(rows[0][4], NO_VALUE, "a null URL has no value");
        assert!(rows[4][..2].iter().all(|&w| w == NO_VALUE));

        // Rows not wanted are not keyed; the wanted ones are keyed as before.
        let mut some = RowKeys::default();
        order
            .encode(&batch, "t", |row| row % 2 == 1, None, &mut some)
            .unwrap();
        let some = some.words.chunks(order.words());
        for (row, (all, wanted)) in rows.iter().zip(some).enumerate() {
            match row % 2 {
                1 => assert_eq!(wanted, *all, "row {row}"),
                _ => assert!(wanted.iter().all(|&w| w == NO_VALUE), "row {row}"),
            }
        }
    }

    /// Integers compare whatever their width and sign, and so do times of
    /// any unit and dates; a column of another kind than its first file's
    /// is refused, naming both files.
    #[test]
    fn values_of_one_kind_compare_across_types_and_other_kinds_are_refused() {
        let first = |column: ArrayRef| ordered_values(&column, "v", "f").unwrap()[0].unwrap();
        let five = first(Arc::new(Int64Array::from(vec![5])));
        assert_eq!(
            first(Arc::new(arrow_array::UInt32Array::from(vec![5]))),
            five
        );
        assert_eq!(
            first(Arc::new(arrow_array::UInt64Array::from(vec![5]))),
            five
        );
        let seconds = first(Arc::new(TimestampSecondArray::from(vec![86_400])));
        assert_eq!(
            first(Arc::new(arrow_array::Date32Array::from(vec![1]))),
            seconds
        );
        let huge = first(Arc::new(arrow_array::UInt64Array::from(vec![u64::MAX])));
        assert_eq!(huge, first(Arc::new(Int64Array::from(vec![i64::MAX]))));

        let kinds = ColumnKinds::default();
        let micros = DataType::Timestamp(TimeUnit::Microsecond, None);
        kinds.check("a.parquet", FETCH_TIME, &micros).unwrap();
        kinds
            .check("b.parquet", FETCH_TIME, &DataType::Date32)
            .unwrap();
        kinds
            .check("a.parquet", N_CHARS, &DataType::UInt32)
            .unwrap();
        kinds.check("b.parquet", N_CHARS, &DataType::Int64).unwrap();
        kinds.check("b.parquet", URL, &DataType::Utf8).unwrap();
        let error = kinds
            .check("c.parquet", FETCH_TIME, &DataType::Int64)
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("c.parquet: column `fetch_time` holds integers (Int64), but in a.parquet it holds times or dates"), "{error}");
        assert!(kinds
            .check("c.parquet", N_CHARS, &DataType::Float64)
            .is_err());
    }

    #[test]
    fn every_numeric_type_orders_as_its_values() {
        for (direction, descending) in [("asc", false), ("desc", true)] {
            let order = KeepOrder::parse(&format!("column:v:{direction}")).unwrap();
            numeric_types_order_as_their_values(&order, descending);
        }
    }

    fn numeric_types_order_as_their_values(order: &KeepOrder, descending: bool) {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(arrow_array::UInt8Array::from(vec![0, 1, 2, 200, u8::MAX])),
            Arc::new(arrow_array::UInt64Array::from(vec![
                0,
                1,
                2,
                1 << 62,
                (1 << 63) - 3,
            ])),
            Arc::new(Int32Array::from(vec![i32::MIN, -1, 0, 7, i32::MAX])),
            Arc::new(Int64Array::from(vec![i64::MIN, -1, 0, 7, i64::MAX])),
            Arc::new(Float64Array::from(vec![
                f64::NEG_INFINITY,
                -1.0,
                0.0,
                7.5,
                f64::INFINITY,
            ])),
            Arc::new(
                Decimal128Array::from(vec![-(10i128.pow(30)), -1, 0, 95, 10i128.pow(30)])
                    .with_precision_and_scale(38, 2)
                    .unwrap(),
            ),
            Arc::new(
                Decimal32Array::from(vec![-999, -1, 0, 95, 999])
                    .with_precision_and_scale(3, 2)
                    .unwrap(),
            ),
        ];
        for column in columns {
            let data_type = column.data_type().clone();
            order.check_column("t", "v", &data_type).unwrap();
            let batch = RecordBatch::try_from_iter([("v", column)]).unwrap();
            let words = encoded_words(order, &batch, None);
            let rows: Vec<&[u32]> = words.chunks(2).collect();
            let in_order = |w: &[&[u32]]| match descending {
                false => w[0] < w[1],
                true => w[0] > w[1],
            };
            assert!(rows.windows(2).all(in_order), "{data_type}: {rows:?}");
            assert!(rows.iter().all(|row| row != &[NO_VALUE, NO_VALUE]));
        }
        let nan = RecordBatch::try_from_iter([(
            "v",
            Arc::new(Float64Array::from(vec![f64::NAN])) as ArrayRef,
        )])
        .unwrap();
        let words = encoded_words(order, &nan, None);
        assert_eq!(words, vec![NO_VALUE, NO_VALUE], "NaN is no value");
    }

    /// Decimals of other scales, and floats, compare by their values: a
    /// pages table written in parts may hold the column in several types.
    #[test]
    fn decimals_of_any_scale_compare_with_each_other_and_with_floats() {
        let order = KeepOrder::parse("column:v:asc").unwrap();
        let words_of = |column: ArrayRef| {
            let batch = RecordBatch::try_from_iter([("v", column)]).unwrap();
            let words = encoded_words(&order, &batch, None);
            (words[0], words[1])
        };
        let decimal = |value: i128, scale: i8| {
            let array = Decimal128Array::from(vec![value]);
            words_of(Arc::new(array.with_precision_and_scale(20, scale).unwrap()))
        };
        let float = |value: f64| words_of(Arc::new(Float64Array::from(vec![value])));
        assert_eq!(decimal(95, 2), decimal(950, 3));
        assert_eq!(decimal(95, 2), float(0.95));
        assert!(decimal(95, 2) < decimal(951, 3));
        assert!(decimal(-5, 1) < float(-0.4));
        assert_eq!(float(-0.0), float(0.0), "the two zeros tie");
        assert_eq!(float(-0.0), decimal(0, 2));
        assert!(float(-f64::MIN_POSITIVE) < float(-0.0));
    }

    #[test]
    fn a_page_set_holds_exactly_its_hashes() {
        let mut state = 7u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state ^ state >> 29
        };
        let mut hashes: Vec<u64> = (0..5_000).map(|_| next()).collect();
        hashes.extend([0, u64::MAX]);
        hashes.sort_unstable();
        let set = PageSet::of_sorted(hashes.clone());
        assert!(hashes.iter().all(|&h| set.contains(h)));
        let others = (0..50_000)
            .map(|_| next())
            .filter(|h| hashes.binary_search(h).is_err());
        assert!(others.take(40_000).all(|h| !set.contains(h)));
        let empty = PageSet::of_sorted(Vec::new());
        assert!(empty.is_empty() && !empty.contains(0));
    }

    #[test]
    fn longest_takes_one_word_the_most_text_first() {
        let order = KeepOrder::parse("longest").unwrap();
        assert_eq!(order.words(), 1);
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(vec![
                Some(9),
                Some(3),
                Some(0),
                Some(-4),
                None,
            ])),
            Arc::new(arrow_array::UInt64Array::from(vec![
                Some(u64::MAX),
                Some(3),
                Some(0),
                Some(0),
                None,
            ])),
        ];
        for column in columns {
            let batch = RecordBatch::try_from_iter([("n_chars", column)]).unwrap();
            let words = encoded_words(&order, &batch, None);
            assert!(words[..3].windows(2).all(|w| w[0] < w[1]), "{words:?}");
            assert_eq!(words[2], words[3], "below zero counts as zero");
            assert!(words[3] < NO_VALUE);
            assert_eq!(words[4], NO_VALUE, "a null comes last");
        }
        let error = order
            .check_column("p.parquet", "n_chars", &DataType::Float64)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("--keep-by longest needs an integer"),
            "{error}"
        );
    }

    #[test]
    fn a_column_of_the_wrong_type_is_named() {
        let order = KeepOrder::parse("column:q:asc,canonical-url").unwrap();
        let error = order
            .check_column("pages.parquet", "q", &DataType::Utf8)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("pages.parquet: column `q` has type Utf8"),
            "{error}"
        );
        assert!(order.check_column("p", "url", &DataType::Int64).is_err());
        assert!(order.check_column("p", "url", &DataType::Utf8View).is_ok());
        assert!(order.check_column("p", "q", &DataType::Int8).is_ok());
    }
}
