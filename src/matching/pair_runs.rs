//! A reducer's pairs, held in memory up to a budget and spilled to local
//! disk as sorted runs beyond it.
//!
//! A night's pairs are usually few, but one query fingerprint that is hot in
//! the corpus (a boilerplate page, an empty one) pairs with millions of rows,
//! and a corpus read as several listings holds a pair once per sighting until
//! the de-duplication. So a worker holds at most `--pair-memory-mib` of
//! pairs: past it, its largest part's pairs are sorted, de-duplicated and
//! written as a run (the output's columns, plain and uncompressed, under
//! `_spill-WORKER/` in the job's staging directory, never uploaded), and each
//! part is written at the end as one merge of its runs and the pairs still
//! held. The merge gives the rows a sort of all of them would, so the
//! output's bytes do not depend on the budget.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int16Type, Int64Type, Int8Type};
use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};

use crate::io::pairs::{sort_and_dedup, Pair};
use crate::io::parquet::output::{write_pair_run, write_pair_stream, write_pairs};

/// Default budget of pairs a worker holds in memory, in MiB.
pub(crate) const DEFAULT_PAIR_MEMORY_MIB: u64 = 64;

/// Rows a run's reader decodes at a time.
const READ_BATCH_ROWS: usize = 1 << 16;

/// One worker's pairs by output part.
pub(crate) struct PairRuns {
    /// Where runs go (created at the first spill).
    dir: PathBuf,
    /// Pairs held before the largest part is spilled.
    budget: usize,
    held: usize,
    parts: Vec<Vec<Pair>>,
    runs: Vec<Vec<PathBuf>>,
    /// Pairs taken to runs (before each run's de-duplication).
    spilled: u64,
    /// Verified pairs: their files have `wide_distance`.
    wide: bool,
}

impl PairRuns {
    /// Room for `parts` parts, holding at most `budget_bytes` of pairs in
    /// memory, spilling under `dir`; `wide` for verified pairs.
    pub(crate) fn new(dir: PathBuf, parts: usize, budget_bytes: u64, wide: bool) -> PairRuns {
        let budget = (budget_bytes / std::mem::size_of::<Pair>() as u64).max(1) as usize;
        PairRuns {
            dir,
            budget,
            held: 0,
            parts: (0..parts).map(|_| Vec::new()).collect(),
            runs: (0..parts).map(|_| Vec::new()).collect(),
            spilled: 0,
            wide,
        }
    }

    /// Adds a pair of part `part`, spilling the largest part's pairs first
    /// if the budget is full.
    pub(crate) fn push(&mut self, part: usize, pair: Pair) -> Result<()> {
        if self.held >= self.budget {
            self.spill_largest()?;
        }
        self.parts[part].push(pair);
        self.held += 1;
        Ok(())
    }

    /// Sorts and de-duplicates the largest part's pairs into a run on disk.
    /// Its buffer keeps its memory (within the budget) for the pairs to come.
    fn spill_largest(&mut self) -> Result<()> {
        let Some(part) = (0..self.parts.len()).max_by_key(|&p| self.parts[p].len()) else {
            return Ok(());
        };
        let pairs = &mut self.parts[part];
        self.held -= pairs.len();
        self.spilled += pairs.len() as u64;
        sort_and_dedup(pairs);
        fs::create_dir_all(&self.dir)
            .with_context(|| format!("{}: cannot create spill directory", self.dir.display()))?;
        let path = self.dir.join(format!(
            "part-{part:05}-run-{:05}.parquet",
            self.runs[part].len()
        ));
        write_pair_run(&path, pairs, self.wide)?;
        tracing::info!(part, pairs = pairs.len(), run = %path.display(), "pairs spilled to disk");
        pairs.clear();
        self.runs[part].push(path);
        Ok(())
    }

    /// Writes part `part` to `path`: its runs and the pairs still held,
    /// merged in order without repeats; removes its runs. Gives the pairs
    /// written.
    pub(crate) fn write_part(&mut self, part: usize, path: &Path) -> Result<u64> {
        let mut held = std::mem::take(&mut self.parts[part]);
        self.held -= held.len();
        sort_and_dedup(&mut held);
        let runs = std::mem::take(&mut self.runs[part]);
        if runs.is_empty() {
            write_pairs(path, &held, self.wide)?;
            return Ok(held.len() as u64);
        }
        let mut sources = vec![Source::Held(held.into_iter())];
        for run in &runs {
            sources.push(Source::Run(RunReader::open(run)?));
        }
        let mut merged = Merge::new(sources)?;
        let mut written = 0;
        write_pair_stream(
            path,
            std::iter::from_fn(|| merged.next().transpose()).inspect(|_| written += 1),
            self.wide,
        )?;
        for run in &runs {
            fs::remove_file(run).with_context(|| format!("{}: cannot remove", run.display()))?;
        }
        Ok(written)
    }

    /// Pairs taken to runs so far (before each run's de-duplication).
    pub(crate) fn spilled(&self) -> u64 {
        self.spilled
    }

    /// Removes the spill directory, if any run was written.
    pub(crate) fn remove_spills(&self) -> Result<()> {
        if self.dir.exists() {
            fs::remove_dir_all(&self.dir)
                .with_context(|| format!("{}: cannot remove", self.dir.display()))?;
        }
        Ok(())
    }
}

/// Where a merge takes pairs from, each source in order.
enum Source {
    Held(std::vec::IntoIter<Pair>),
    Run(RunReader),
}

impl Source {
    fn next(&mut self) -> Result<Option<Pair>> {
        match self {
            Source::Held(pairs) => Ok(pairs.next()),
            Source::Run(run) => run.next(),
        }
    }
}

/// The pairs of sorted sources in order, each once.
struct Merge {
    sources: Vec<Source>,
    heads: BinaryHeap<Reverse<(Pair, usize)>>,
    last: Option<Pair>,
}

impl Merge {
    fn new(mut sources: Vec<Source>) -> Result<Merge> {
        let mut heads = BinaryHeap::with_capacity(sources.len());
        for (s, source) in sources.iter_mut().enumerate() {
            if let Some(pair) = source.next()? {
                heads.push(Reverse((pair, s)));
            }
        }
        Ok(Merge {
            sources,
            heads,
            last: None,
        })
    }

    fn next(&mut self) -> Result<Option<Pair>> {
        while let Some(Reverse((pair, s))) = self.heads.pop() {
            if let Some(next) = self.sources[s].next()? {
                self.heads.push(Reverse((next, s)));
            }
            if self.last != Some(pair) {
                self.last = Some(pair);
                return Ok(Some(pair));
            }
        }
        Ok(None)
    }
}

/// A run's pairs, decoded a batch at a time.
struct RunReader {
    path: PathBuf,
    reader: ParquetRecordBatchReader,
    batch: std::vec::IntoIter<Pair>,
}

impl RunReader {
    fn open(path: &Path) -> Result<RunReader> {
        let file = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .and_then(|builder| builder.with_batch_size(READ_BATCH_ROWS).build())
            .with_context(|| format!("{}: cannot read spilled pairs", path.display()))?;
        Ok(RunReader {
            path: path.to_path_buf(),
            reader,
            batch: Vec::new().into_iter(),
        })
    }

    fn next(&mut self) -> Result<Option<Pair>> {
        loop {
            if let Some(pair) = self.batch.next() {
                return Ok(Some(pair));
            }
            match self.reader.next() {
                None => return Ok(None),
                Some(batch) => {
                    let batch = batch.with_context(|| {
                        format!("{}: cannot read spilled pairs", self.path.display())
                    })?;
                    self.batch = pairs_of(&batch).into_iter();
                }
            }
        }
    }
}

/// The pairs of a batch of a pairs file as [`write_pairs`] writes it.
fn pairs_of(batch: &RecordBatch) -> Vec<Pair> {
    let int64 = |c: usize| batch.column(c).as_primitive::<Int64Type>();
    let (queries, corpus) = (int64(0), int64(1));
    let (query_simhashes, corpus_simhashes) = (int64(2), int64(3));
    let distances = batch.column(4).as_primitive::<Int8Type>();
    let self_pairs = batch.column(5).as_boolean();
    let wide = (batch.num_columns() > 6).then(|| batch.column(6).as_primitive::<Int16Type>());
    (0..batch.num_rows())
        .map(|i| Pair {
            query_id: queries.value(i),
            corpus_id: corpus.value(i),
            query_simhash: query_simhashes.value(i) as u64,
            corpus_simhash: corpus_simhashes.value(i) as u64,
            distance: distances.value(i) as u8,
            self_pair: self_pairs.value(i),
            wide_distance: wide.map(|w| w.value(i) as u16),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::SplitMix64;

    /// With `wide`, verified pairs, of wide distances that tell repeats
    /// of a pair apart.
    fn random_pairs(n: usize, seed: u64, wide: bool) -> Vec<Pair> {
        let mut rng = SplitMix64::new(seed);
        (0..n)
            .map(|_| {
                let query_simhash = rng.next_u64();
                Pair {
                    query_id: rng.below(50) as i64 - 25,
                    corpus_id: rng.below(40) as i64,
                    query_simhash,
                    corpus_simhash: query_simhash ^ 1,
                    distance: 1,
                    self_pair: rng.below(2) == 0,
                    wide_distance: wide.then(|| rng.below(3) as u16),
                }
            })
            .collect()
    }

    #[test]
    fn spilled_parts_are_written_as_one_sort_of_all_their_pairs() {
        for wide in [false, true] {
            spilled_parts_sort_as_one(wide);
        }
    }

    fn spilled_parts_sort_as_one(wide: bool) {
        // Repeats across runs (50 x 40 ids, 20,000 pairs), three parts.
        let pairs = random_pairs(20_000, 7, wide);
        let part_of = |pair: &Pair| (pair.query_id.rem_euclid(3)) as usize;
        let dir = tempfile::tempdir().unwrap();
        for (budget_pairs, name) in [(usize::MAX / 64, "held"), (700, "spilled")] {
            let spill = dir.path().join(format!("_spill-{name}"));
            let bytes = (budget_pairs * std::mem::size_of::<Pair>()) as u64;
            let mut runs = PairRuns::new(spill.clone(), 3, bytes, wide);
            for &pair in &pairs {
                runs.push(part_of(&pair), pair).unwrap();
            }
            if name == "spilled" {
                assert!(runs.runs.iter().all(|r| r.len() > 2), "{:?}", runs.runs);
            }
            for part in 0..3 {
                let path = dir.path().join(format!("{name}-{part}.parquet"));
                let written = runs.write_part(part, &path).unwrap();
                let mut expected: Vec<Pair> = pairs
                    .iter()
                    .copied()
                    .filter(|p| part_of(p) == part)
                    .collect();
                sort_and_dedup(&mut expected);
                assert_eq!(written, expected.len() as u64);
                let mut read = RunReader::open(&path).unwrap();
                let mut got = Vec::new();
                while let Some(pair) = read.next().unwrap() {
                    got.push(pair);
                }
                assert_eq!(got, expected, "{name}, part {part}, wide {wide}");
            }
            runs.remove_spills().unwrap();
            assert!(!spill.exists());
        }
        for part in 0..3 {
            let held = fs::read(dir.path().join(format!("held-{part}.parquet"))).unwrap();
            let spilled = fs::read(dir.path().join(format!("spilled-{part}.parquet"))).unwrap();
            assert!(held == spilled, "part {part}: the budget changed the bytes");
        }
    }
}
