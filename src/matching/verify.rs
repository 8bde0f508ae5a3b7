//! `match --verify`: the exact 64-bit search at a larger k finds the
//! candidates, and more bits decide. Each pair's *wide distance* counts the
//! bits apart over the fingerprints and the sketches together (256 bits,
//! see [`crate::io::parquet::Sketch`]); a pair is kept when it is at most
//! the threshold.
//!
//! Sixty-four bits cannot tell Jaccard 0.9 from 0.75: the bits apart grow
//! too little between them, so a k that finds the first lets in the second.
//! Four times the bits estimate the angle between two pages' feature
//! vectors with half the spread, which is what the threshold acts on.
//!
//! B's sketches are read whole with B (24 bytes a row). F's are read for
//! candidate rows only: after a probe batch, the rows with a candidate are
//! read again from their row groups by a Parquet row selection on the
//! `sketch` column, so the scan of F reads its two columns as before (from
//! an object store, a row group's sketch chunk is fetched only if it has a
//! candidate).
//!
//! The recommended k and threshold were chosen on real English, Chinese and
//! HTML sets (`scripts/eval_*.py --frontier`, README "Figures"). No one
//! threshold met every quality goal: HTML's templated pages want a lower
//! one than Chinese text's near-duplicates need. So the threshold follows
//! the shards: text's unless some shard records an HTML mode, or a shard's
//! scheme is unknown (precision first: a drop list deletes pages).

use anyhow::{bail, Result};

use crate::io::parquet::input::{FingerprintFile, Unit};
use crate::io::parquet::schemes::records_html;
use crate::io::parquet::Sketch;
use crate::matching::tables::QueryRows;

/// The k `--verify` searches at unless `-k` is given.
pub const RECOMMENDED_K: u32 = 6;

/// The wide distance `--verify` keeps on shards of text (WET, JSONL)
/// unless `--verify-threshold` is given.
pub const TEXT_THRESHOLD: u32 = 28;

/// The same on shards of HTML pages, or of an unknown scheme.
pub const HTML_THRESHOLD: u32 = 20;

/// `--verify`'s threshold on the wide distance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threshold {
    /// `--verify-threshold T`.
    Given(u32),
    /// The one recommended for the shards matched ([`Threshold::resolve`]).
    Recommended,
}

impl Threshold {
    /// The threshold for shards of `schemes` (one per file, `None` for a
    /// file that records none), and why, for the log.
    pub(crate) fn resolve<'a>(
        self,
        mut schemes: impl Iterator<Item = Option<&'a str>>,
    ) -> (u32, &'static str) {
        let Threshold::Given(t) = self else {
            return match schemes.find(|scheme| scheme.is_none_or(records_html)) {
                None => (TEXT_THRESHOLD, "every shard records a text scheme"),
                Some(Some(_)) => (HTML_THRESHOLD, "a shard records an HTML mode"),
                Some(None) => (HTML_THRESHOLD, "a shard records no scheme"),
            };
        };
        (t, "given")
    }
}

/// The k and the `--verify` threshold of a match: `--verify`'s
/// recommended ones where not given, and k = 3 without it.
pub(crate) fn k_and_threshold(
    k: Option<u32>,
    verify: bool,
    threshold: Option<u32>,
) -> (u32, Option<Threshold>) {
    match verify {
        true => (
            k.unwrap_or(RECOMMENDED_K),
            Some(threshold.map_or(Threshold::Recommended, Threshold::Given)),
        ),
        false => (k.unwrap_or(3), None),
    }
}

/// What `--verify` needs at every worker: the threshold and B's sketches.
pub(crate) struct Verification {
    pub(crate) threshold: u32,
    pub(crate) queries: QuerySketches,
}

/// A row of B's `(simhash, id)` and its sketch.
type KeyedSketch = ((u64, i64), Sketch);

/// B's sketches in the order of [`crate::matching::tables::QuerySet`]'s
/// rows (by simhash, then id, repeats dropped), so that a pair's query
/// row gives its sketch at once: a binary search for each candidate
/// missed the cache at most of its steps.
#[derive(Default)]
pub(crate) struct QuerySketches {
    keys: Vec<(u64, i64)>,
    sketches: Vec<Sketch>,
}

impl QuerySketches {
    /// The sketches of B's rows, read with them.
    pub(crate) fn of_rows(pieces: &[QueryRows]) -> QuerySketches {
        let mut rows: Vec<KeyedSketch> = pieces
            .iter()
            .flat_map(|piece| {
                let keys = piece
                    .fingerprints
                    .iter()
                    .copied()
                    .zip(piece.ids.iter().copied());
                keys.zip(piece.sketches.iter().copied())
            })
            .collect();
        // Stable: a row repeated in B keeps its first sketch.
        rows.sort_by_key(|&(key, _)| key);
        rows.dedup_by_key(|&mut (key, _)| key);
        let (keys, sketches) = rows.into_iter().unzip();
        QuerySketches { keys, sketches }
    }

    /// Rows of B, repeats dropped.
    pub(crate) fn rows(&self) -> usize {
        self.keys.len()
    }

    /// The sketch of the `QuerySet`'s row `row`.
    pub(crate) fn of_row(&self, row: usize) -> &Sketch {
        &self.sketches[row]
    }

    /// The sketch of B's row `(id, simhash)`, searched for: for a row of B
    /// met as a row of F (`--self`).
    pub(crate) fn get(&self, id: i64, simhash: u64) -> &Sketch {
        let at = self.keys.binary_search(&(simhash, id));
        &self.sketches[at.expect("every row of B has its sketch read")]
    }
}

/// The sketches of a probe batch's candidate rows.
#[derive(Default)]
pub(crate) struct CandidateSketches {
    /// Batch rows, ascending...
    rows: Vec<u32>,
    /// ...and their sketches.
    sketches: Vec<Sketch>,
}

/// Where a probe batch's rows come from: a unit of a file, from a row of
/// the batch on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BatchUnit {
    pub(crate) unit: Unit,
    /// The batch row that holds the unit's first row.
    pub(crate) start: u32,
}

impl CandidateSketches {
    /// Reads the sketches of `rows` (batch rows, in any order, repeats
    /// allowed) from the units the batch was read from.
    pub(crate) fn read(
        &mut self,
        mut rows: Vec<u32>,
        units: &[BatchUnit],
        files: &[FingerprintFile],
    ) -> Result<()> {
        rows.sort_unstable();
        rows.dedup();
        self.sketches.clear();
        let mut group_rows = Vec::new();
        for (i, unit) in units.iter().enumerate() {
            let end = units.get(i + 1).map_or(u32::MAX, |next| next.start);
            let from = rows.partition_point(|&r| r < unit.start);
            let to = rows.partition_point(|&r| r < end);
            if from == to {
                continue;
            }
            group_rows.clear();
            let first = unit.unit.offset;
            group_rows.extend(
                rows[from..to]
                    .iter()
                    .map(|&r| first + u64::from(r - unit.start)),
            );
            let file = &files[unit.unit.file];
            let before = self.sketches.len();
            file.read_sketches(unit.unit.row_group, &group_rows, &mut self.sketches)?;
            if self.sketches.len() - before != group_rows.len() {
                bail!(
                    "{}: row group {} gave {} sketches for {} rows",
                    file.path,
                    unit.unit.row_group,
                    self.sketches.len() - before,
                    group_rows.len()
                );
            }
        }
        self.rows = rows;
        Ok(())
    }

    /// The sketch of batch row `row`, one of those read.
    pub(crate) fn get(&self, row: u32) -> &Sketch {
        let at = self.rows.binary_search(&row);
        &self.sketches[at.expect("the candidate rows' sketches are read")]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "v7 features=words weights=tf stopwords=drop sketch=simhash192/1";
    const HTML: &str =
        "v7 features=words weights=tf stopwords=drop sketch=simhash192/1 html=main/3";

    fn recommended(schemes: &[Option<&str>]) -> u32 {
        Threshold::Recommended.resolve(schemes.iter().copied()).0
    }

    #[test]
    fn the_recommended_threshold_is_texts_only_when_every_shard_is_known_text() {
        assert_eq!(recommended(&[Some(TEXT), Some(TEXT)]), TEXT_THRESHOLD);
        assert_eq!(recommended(&[Some(HTML), Some(HTML)]), HTML_THRESHOLD);
        assert_eq!(recommended(&[Some(TEXT), Some(HTML)]), HTML_THRESHOLD);
        assert_eq!(recommended(&[Some(TEXT), None]), HTML_THRESHOLD);
        let (_, why) = Threshold::Recommended.resolve([Some(TEXT), None].into_iter());
        assert!(why.contains("no scheme"), "{why}");
        assert_ne!(TEXT_THRESHOLD, HTML_THRESHOLD);
    }

    #[test]
    fn a_given_threshold_is_kept_whatever_the_shards() {
        for schemes in [&[Some(TEXT)][..], &[Some(HTML)], &[None]] {
            let given = Threshold::Given(7).resolve(schemes.iter().copied()).0;
            assert_eq!(given, 7);
        }
    }
}
