//! Probe kernel throughput, with no I/O in the timed part:
//! `cargo bench --bench probe -- [queries] [corpus] [k] [blocks] [batch rows]`
//! (defaults 1048576, 20000000, 3, planned, 1048576 as in `match`).
//!
//! The fingerprints are uniform random, or, with `NEARDUP_BENCH_DATA=DIR`,
//! read from a `neardup gen` directory (all of `DIR/queries`, the first
//! `corpus` rows of `DIR/corpus`), whose planted near-duplicates make the
//! kernel do the work of real matches as well. `NEARDUP_KERNEL=avx2` (or
//! `avx512`, `portable`) forces a kernel, as `match --kernel` does.

use std::time::Instant;

use anyhow::Result;
use clap::ValueEnum;
use neardup::io::parquet::input::{expand_locations, read_files, Columns, FingerprintFile};
use neardup::matching::design::{plan, DEFAULT_TABLE_MEMORY};
use neardup::matching::kernel::Kernel;
use neardup::matching::probe::{probe, Scratch};
use neardup::matching::tables::{Index, QuerySet};

/// Up to `limit` `(fingerprint, id)` rows of the Parquet files at `path`.
fn read_rows(path: String, limit: usize) -> Result<Vec<(u64, i64)>> {
    let columns = Columns::default();
    let mut rows = Vec::new();
    for file in expand_locations(&[path])? {
        let file = [FingerprintFile::open(&file, &columns)?];
        read_files(&file, &columns, |ids, fingerprints| {
            rows.extend(fingerprints.iter().copied().zip(ids.iter().copied()));
            Ok(())
        })?;
        if rows.len() >= limit {
            break;
        }
    }
    rows.truncate(limit);
    Ok(rows)
}

fn main() -> Result<()> {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let queries = args.first().copied().unwrap_or(1 << 20);
    let corpus = args.get(1).copied().unwrap_or(20_000_000);
    let k = args.get(2).copied().unwrap_or(3) as u32;
    let mut state = 0x1234_5678u64;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let data = std::env::var("NEARDUP_BENCH_DATA").ok();
    let rows: Vec<(u64, i64)> = match &data {
        Some(dir) => read_rows(format!("{dir}/queries"), usize::MAX)?,
        None => (0..queries as i64).map(|i| (next(), i)).collect(),
    };
    let set = QuerySet::from_rows(rows);
    let forced = args.get(3).map(|&m| m as u32);
    let kernel = match std::env::var("NEARDUP_KERNEL") {
        Ok(name) => Some(Kernel::from_str(&name, true).map_err(anyhow::Error::msg)?),
        Err(_) => None,
    };
    let (kernel, _) = Kernel::choose(kernel)?;
    let design = plan(
        set.groups() as u64,
        k,
        DEFAULT_TABLE_MEMORY,
        forced,
        kernel.probe_cost(),
    )
    .design;
    println!("design: {} (kernel: {})", design.describe(), kernel.runs());
    let started = Instant::now();
    let index = Index::build(design, set, 2).probed_by(kernel);
    println!("build: {:.2}s", started.elapsed().as_secs_f64());
    let fps: Vec<u64> = match &data {
        Some(dir) => read_rows(format!("{dir}/corpus"), corpus as usize)?
            .into_iter()
            .map(|(fingerprint, _)| fingerprint)
            .collect(),
        None => (0..corpus).map(|_| next()).collect(),
    };
    let corpus = fps.len();
    let chunk_rows = args.get(4).copied().unwrap_or(1 << 20) as usize;
    let mut scratch = Scratch::default();
    // The best of three runs: this machine is a shared VM whose timings vary.
    let mut best = f64::INFINITY;
    let mut matches = 0;
    for _ in 0..3 {
        let mut out = Vec::new();
        let started = Instant::now();
        for chunk in fps.chunks(chunk_rows) {
            probe(&index, chunk, &mut scratch, &mut out);
        }
        best = best.min(started.elapsed().as_secs_f64());
        matches = out.len();
    }
    println!(
        "probe: {corpus} fingerprints in {best:.2}s (best of 3) = {:.1}M/s on one core ({:.1} ns each), {matches} matches",
        corpus as f64 / best / 1e6,
        best * 1e9 / corpus as f64,
    );
    Ok(())
}
