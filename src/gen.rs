//! `neardup gen`: deterministic synthetic fingerprint shards with
//! near-duplicates planted at known distances.
//!
//! Layout of the output directory:
//! - `queries/part-00000.parquet`: B, ids `0..queries`;
//! - `corpus/part-NNNNN.parquet`: F in `shards` files, ids `queries..`;
//! - `planted.parquet`: every planted pair with its exact distance, in the
//!   same schema and order as `match` output;
//! - `_SUCCESS`.
//!
//! Random fingerprints almost never fall within a small k of each other by
//! chance (for k = 3, about 2.4e-15 per pair), so the planted pairs are,
//! up to a handful, the whole answer of a match over the data.

use std::path::PathBuf;

use anyhow::{bail, Result};

use crate::io::pairs::{sort_and_dedup, Pair};
use crate::io::parquet::output::{write_pairs, write_sketched_fingerprints};
use crate::io::parquet::Sketch;
use crate::io::staging::{part_name, Staging};
use crate::random::SplitMix64;

/// Options of `neardup gen`.
#[derive(Clone, Debug)]
pub(crate) struct GenOptions {
    pub(crate) out: PathBuf,
    pub(crate) queries: u64,
    pub(crate) corpus: u64,
    pub(crate) shards: usize,
    pub(crate) seed: u64,
    /// Fraction of corpus rows that are copies of a query with a few bits flipped.
    pub(crate) plant_rate: f64,
    /// Fraction of queries that are copies of an earlier query.
    pub(crate) self_rate: f64,
    /// Planted distances are drawn uniformly from `0..=max_distance`.
    pub(crate) max_distance: u32,
    pub(crate) row_group_rows: usize,
    /// Write sketches too: random, a planted row's its query's with up to
    /// [`MAX_SKETCH_FLIPS`] bits flipped.
    pub(crate) sketch: bool,
    pub(crate) overwrite: bool,
}

/// The most sketch bits a planted row's sketch differs in from its query's.
const MAX_SKETCH_FLIPS: u64 = 32;

/// What was generated.
#[derive(Debug)]
pub(crate) struct GenSummary {
    pub(crate) planted: usize,
}

/// A random sketch.
fn random_sketch(rng: &mut SplitMix64) -> Sketch {
    std::array::from_fn(|_| rng.next_u64())
}

/// `sketch` with up to `most` random bits flipped.
fn near_sketch(rng: &mut SplitMix64, mut sketch: Sketch, most: u64) -> Sketch {
    for _ in 0..rng.below(most + 1) {
        let bit = rng.below(64 * sketch.len() as u64) as usize;
        sketch[bit / 64] ^= 1 << (bit % 64);
    }
    sketch
}

/// The most rows `gen` makes in memory at once: the queries, or a corpus
/// shard.
const MAX_ROWS_IN_MEMORY: u64 = 1 << 32;

/// The most corpus rows and shards (so that a shard's first row, corpus
/// rows times its index, fits in a `u64`).
const MAX_CORPUS: u64 = 1 << 40;
const MAX_SHARDS: usize = 1 << 20;

/// Writes the synthetic data set.
pub(crate) fn generate(opts: &GenOptions) -> Result<GenSummary> {
    check_options(opts)?;
    let staging = Staging::create(&opts.out, opts.overwrite)?;
    let dir = staging.dir();
    std::fs::create_dir(dir.join("queries"))?;
    std::fs::create_dir(dir.join("corpus"))?;

    let mut rng = SplitMix64::new(opts.seed);
    let mut planted = Vec::new();
    let mut query_fps = Vec::with_capacity(opts.queries as usize);
    let mut query_sketches = Vec::new();
    for i in 0..opts.queries {
        let f = if i > 0 && rng.chance(opts.self_rate) {
            let j = rng.below(i);
            let d = rng.below(opts.max_distance as u64 + 1) as u32;
            let f = rng.flip_bits(query_fps[j as usize], d);
            if opts.sketch {
                let near = near_sketch(&mut rng, query_sketches[j as usize], MAX_SKETCH_FLIPS);
                query_sketches.push(near);
            }
            planted.push(Pair {
                query_id: j as i64,
                corpus_id: i as i64,
                query_simhash: query_fps[j as usize],
                corpus_simhash: f,
                distance: d as u8,
                self_pair: true,
                wide_distance: None,
            });
            f
        } else {
            if opts.sketch {
                query_sketches.push(random_sketch(&mut rng));
            }
            rng.next_u64()
        };
        query_fps.push(f);
    }
    let query_ids: Vec<i64> = (0..opts.queries as i64).collect();
    write_sketched_fingerprints(
        &dir.join("queries").join(part_name(0)),
        &query_ids,
        &query_fps,
        &query_sketches,
        opts.row_group_rows,
    )?;
    tracing::info!(rows = opts.queries, "queries written");

    let shard_results: Vec<Result<Vec<Pair>>> = std::thread::scope(|scope| {
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let queries = (&query_fps[..], &query_sketches[..]);
                scope.spawn(move || -> Result<Vec<Pair>> {
                    let mut planted = Vec::new();
                    for shard in (t..opts.shards).step_by(threads) {
                        planted.extend(write_corpus_shard(opts, shard, queries, dir)?);
                        tracing::info!(shard, "corpus shard written");
                    }
                    Ok(planted)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| bail!("a generator thread panicked"))
            })
            .collect()
    });
    for result in shard_results {
        planted.extend(result?);
    }
    sort_and_dedup(&mut planted);
    write_pairs(&dir.join("planted.parquet"), &planted, false)?;
    tracing::info!(pairs = planted.len(), "planted pairs written");
    staging.commit()?;
    Ok(GenSummary {
        planted: planted.len(),
    })
}

/// Refuses a flag out of its range, naming it and its value, before
/// anything is written.
fn check_options(opts: &GenOptions) -> Result<()> {
    if opts.shards == 0 {
        bail!("--shards must be at least 1");
    }
    if opts.row_group_rows == 0 {
        bail!("--row-group-rows must be at least 1");
    }
    // The queries, and each corpus shard, are made in memory.
    if opts.queries > MAX_ROWS_IN_MEMORY {
        bail!(
            "--queries {} is out of range: gen makes the queries in memory, at most {MAX_ROWS_IN_MEMORY}",
            opts.queries
        );
    }
    if opts.corpus > MAX_CORPUS || opts.shards > MAX_SHARDS {
        bail!(
            "--corpus {} over --shards {} is out of range: at most {MAX_CORPUS} rows in at most {MAX_SHARDS} shards",
            opts.corpus,
            opts.shards
        );
    }
    if opts.corpus.div_ceil(opts.shards as u64) > MAX_ROWS_IN_MEMORY {
        bail!(
            "--corpus {} over --shards {} makes shards of more than {MAX_ROWS_IN_MEMORY} rows, each made in memory: give more shards",
            opts.corpus,
            opts.shards
        );
    }
    for (flag, rate) in [
        ("--plant-rate", opts.plant_rate),
        ("--self-rate", opts.self_rate),
    ] {
        // Also false for NaN, which `chance` would treat as 0.
        if !(0.0..=1.0).contains(&rate) {
            bail!("{flag} {rate} is out of range: a rate must be between 0 and 1");
        }
    }
    if opts.max_distance > 64 {
        bail!(
            "--max-distance {} is out of range: it must be at most 64",
            opts.max_distance
        );
    }
    Ok(())
}

/// Generates and writes one corpus shard from its own seeded stream, so the
/// data does not depend on the number of threads.
fn write_corpus_shard(
    opts: &GenOptions,
    shard: usize,
    (query_fps, query_sketches): (&[u64], &[Sketch]),
    dir: &std::path::Path,
) -> Result<Vec<Pair>> {
    let first = opts.corpus * shard as u64 / opts.shards as u64;
    let end = opts.corpus * (shard as u64 + 1) / opts.shards as u64;
    let mut rng =
        SplitMix64::new(opts.seed ^ (shard as u64 + 1).wrapping_mul(0xa076_1d64_78bd_642f));
    let mut planted = Vec::new();
    let mut ids = Vec::with_capacity((end - first) as usize);
    let mut fps = Vec::with_capacity((end - first) as usize);
    let mut sketches = Vec::new();
    for row in first..end {
        let id = (opts.queries + row) as i64;
        let f = if !query_fps.is_empty() && rng.chance(opts.plant_rate) {
            let q = rng.below(query_fps.len() as u64) as usize;
            let d = rng.below(opts.max_distance as u64 + 1) as u32;
            let f = rng.flip_bits(query_fps[q], d);
            if opts.sketch {
                sketches.push(near_sketch(&mut rng, query_sketches[q], MAX_SKETCH_FLIPS));
            }
            planted.push(Pair {
                query_id: q as i64,
                corpus_id: id,
                query_simhash: query_fps[q],
                corpus_simhash: f,
                distance: d as u8,
                self_pair: false,
                wide_distance: None,
            });
            f
        } else {
            if opts.sketch {
                sketches.push(random_sketch(&mut rng));
            }
            rng.next_u64()
        };
        ids.push(id);
        fps.push(f);
    }
    write_sketched_fingerprints(
        &dir.join("corpus").join(part_name(shard)),
        &ids,
        &fps,
        &sketches,
        opts.row_group_rows,
    )?;
    Ok(planted)
}
