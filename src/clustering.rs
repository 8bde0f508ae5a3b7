//! The `cluster` command as a library call: `match` pairs in, clusters and
//! the keep/drop list out.
//!
//! Each worker reads its share of the pairs' row groups into a
//! differential-dataflow collection; [`representatives`] labels every page
//! with its cluster's representative; pages go to the worker owning their
//! cluster's part (a hash of the representative, so a cluster is never split
//! and its size is counted where it is written), which writes `clusters/` and
//! `drop/` parts sorted by id; worker 0 commits once every worker has reported.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use differential_dataflow::input::Input;
use serde::{Deserialize, Serialize};
use timely::dataflow::channels::pact::Exchange;

use crate::cluster::{self, ClusterOptions};
use crate::dataflow::commit::{
    await_outcome, commit_staging, gather_and_commit, lock, report_when_done, FinalStage, Merge,
    OutcomeSlot, Report,
};
use crate::dataflow::components::{representatives, Member};
use crate::dataflow::Failure;
use crate::parquet_io::input::{open_pair_inputs, read_pair_edges, PairEdge};
use crate::parquet_io::output::{part_name, write_clusters, write_drops, Staging};
use crate::progress::human;

/// Representatives of oversized clusters listed in `_summary.json`.
const LISTED_OVERSIZED: usize = 1000;

/// Options of `neardup cluster`.
#[derive(Clone, Debug)]
pub struct ClusterJobOptions {
    /// `match` outputs: directories, files or globs.
    pub pairs: Vec<String>,
    pub out: PathBuf,
    /// Keep a page already in the corpus before a new one.
    pub corpus_wins: bool,
    /// Warn about clusters with more pages than this.
    pub max_cluster_size: u64,
    pub parts: usize,
    pub cluster: ClusterOptions,
    pub overwrite: bool,
}

impl ClusterJobOptions {
    /// Options with the CLI's defaults.
    pub fn new(pairs: Vec<String>, out: PathBuf) -> ClusterJobOptions {
        ClusterJobOptions {
            pairs,
            out,
            corpus_wins: false,
            max_cluster_size: 1000,
            parts: 1,
            cluster: ClusterOptions::default(),
            overwrite: false,
        }
    }
}

/// What the workers found, summed over all of them.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ClusterTotals {
    pub pairs: u64,
    pub pages: u64,
    pub clusters: u64,
    pub dropped: u64,
    pub largest: u64,
    /// `histogram[b]`: clusters of size in `(2^(b-1), 2^b]`.
    pub histogram: Vec<u64>,
    /// `(size, representative)` of clusters above `max_cluster_size`.
    pub oversized: Vec<(u64, i64)>,
}

impl Merge for ClusterTotals {
    fn merge(&mut self, other: Self) {
        self.pairs += other.pairs;
        self.pages += other.pages;
        self.clusters += other.clusters;
        self.dropped += other.dropped;
        self.largest = self.largest.max(other.largest);
        if self.histogram.len() < other.histogram.len() {
            self.histogram.resize(other.histogram.len(), 0);
        }
        for (b, n) in other.histogram.into_iter().enumerate() {
            self.histogram[b] += n;
        }
        self.oversized.extend(other.oversized);
    }
}

/// One bucket of the cluster-size distribution.
#[derive(Debug, Serialize)]
pub struct SizeBucket {
    pub min_size: u64,
    pub max_size: u64,
    pub clusters: u64,
}

/// A cluster above `--max-cluster-size`.
#[derive(Debug, Serialize)]
pub struct Oversized {
    pub cluster_id: i64,
    pub size: u64,
}

/// What a run did; written to `_summary.json`.
#[derive(Debug, Serialize)]
pub struct ClusterSummary {
    pub inputs: Vec<String>,
    pub corpus_wins: bool,
    pub workers: usize,
    pub processes: usize,
    pub parts: usize,
    pub pairs: u64,
    pub pages: u64,
    pub clusters: u64,
    pub dropped: u64,
    pub largest_cluster: u64,
    pub size_histogram: Vec<SizeBucket>,
    pub max_cluster_size: u64,
    pub oversized_clusters: u64,
    /// The largest oversized clusters (at most 1000), largest first.
    pub oversized: Vec<Oversized>,
    pub seconds: f64,
}

impl ClusterSummary {
    /// The one line printed at the end of a run.
    pub fn line(&self, out: &std::path::Path) -> String {
        format!(
            "clustered {} pages from {} pairs into {} clusters (largest {}, {} above {}) in {:.2}s: {} to drop -> {}",
            human(self.pages as f64),
            human(self.pairs as f64),
            self.clusters,
            self.largest_cluster,
            self.oversized_clusters,
            self.max_cluster_size,
            self.seconds,
            self.dropped,
            out.display()
        )
    }
}

/// Runs `cluster` end to end; on a cluster every process calls this.
pub fn run_cluster(opts: &ClusterJobOptions) -> Result<ClusterSummary> {
    let started = Instant::now();
    opts.cluster.validate()?;
    if opts.parts == 0 {
        bail!("--parts must be at least 1");
    }
    let units = open_pair_inputs(&opts.pairs)?;
    let staging = match opts.cluster.is_leader() {
        true => {
            let staging = Staging::create(&opts.out, opts.overwrite)?;
            cluster::remove_on_abort(staging.dir());
            for sub in ["clusters", "drop"] {
                let dir = staging.dir().join(sub);
                std::fs::create_dir(&dir)
                    .with_context(|| format!("{}: cannot create", dir.display()))?;
            }
            Some(staging)
        }
        false => None,
    };
    let (commit, written) = {
        let opts = opts.clone();
        commit_staging(staging, move |totals: &ClusterTotals| {
            summarize(&opts, totals, started)
        })
    };
    let dir = Staging::dir_for(&opts.out)?;
    let failure = Arc::new(Failure::default());
    let outcome = Arc::new(OutcomeSlot::default());
    let job = Arc::new((units, opts.clone(), dir));
    let guards = {
        let (failure, outcome) = (failure.clone(), outcome.clone());
        cluster::execute(&opts.cluster, move |worker| {
            let (me, peers) = (worker.index(), worker.peers());
            let (units, opts, dir) = &*job;
            let state = Rc::new(RefCell::new(Report::<ClusterTotals>::new(me)));
            let (writer_state, failure_here) = (state.clone(), failure.clone());
            let (commit, outcome) = (commit.clone(), outcome.clone());
            let (parts, max_size, dir) = (opts.parts, opts.max_cluster_size, dir.clone());
            let corpus_wins = opts.corpus_wins;
            let mut input = worker.dataflow::<u64, _, _>(move |scope| {
                let (input, pairs) = scope.new_collection::<PairEdge, isize>();
                let members = representatives(pairs, corpus_wins);
                let writer = PartWriter::new(dir, parts, max_size, me, peers);
                let route = Exchange::new(move |(member, _time, _diff): &(Member, u64, isize)| {
                    (part_of((member.1).1, parts) % peers) as u64
                });
                let reports = report_when_done(
                    members.inner,
                    route,
                    "WriteClusters",
                    writer_state,
                    failure_here,
                    writer,
                );
                gather_and_commit(reports, me, peers, commit, outcome);
                input
            });
            let mut edges = Vec::new();
            for (path, rg) in units.iter().skip(me).step_by(peers) {
                edges.clear();
                if let Err(error) = read_pair_edges(path, *rg, &mut edges) {
                    state.borrow_mut().fail(error, &failure);
                    break;
                }
                state.borrow_mut().body.pairs += edges.len() as u64;
                for &edge in &edges {
                    input.insert(edge);
                }
            }
            input.close();
            while worker.step_or_park(None) {}
        })?
    };
    let totals = await_outcome(guards, &failure, &outcome)?;
    if let Some(summary) = lock(&written).take() {
        return Ok(summary);
    }
    Ok(summarize(opts, &totals, started))
}

/// The part a cluster's rows go to: a hash of its representative's id, so
/// parts do not depend on the number of workers.
fn part_of(id: i64, parts: usize) -> usize {
    (xxhash_rust::xxh3::xxh3_64(&id.to_le_bytes()) % parts as u64) as usize
}

/// A worker's parts: the members routed to it, written when all have come.
struct PartWriter {
    dir: PathBuf,
    parts: usize,
    max_size: u64,
    worker: usize,
    peers: usize,
    /// Accumulated updates: the final collection is what has a count of 1.
    members: HashMap<Member, isize>,
}

impl PartWriter {
    fn new(dir: PathBuf, parts: usize, max_size: u64, worker: usize, peers: usize) -> PartWriter {
        PartWriter {
            dir,
            parts,
            max_size,
            worker,
            peers,
            members: HashMap::new(),
        }
    }
}

impl FinalStage<(Member, u64, isize), ClusterTotals> for PartWriter {
    fn absorb(&mut self, updates: &mut Vec<(Member, u64, isize)>) {
        for (member, _time, diff) in updates.drain(..) {
            *self.members.entry(member).or_default() += diff;
        }
    }

    /// Writes every part this worker owns (empty ones too) and counts what
    /// they hold into `totals`.
    fn finish(&mut self, totals: &mut ClusterTotals) -> Result<()> {
        let mut by_part: Vec<Vec<(i64, i64, u64)>> = vec![Vec::new(); self.parts];
        let mut sizes: HashMap<i64, u64> = HashMap::new();
        let mut pages = Vec::with_capacity(self.members.len());
        for ((id, (_rank, rep)), count) in self.members.drain() {
            if !(0..=1).contains(&count) {
                bail!("page {id}: cluster membership counted {count} times (internal error)");
            }
            if count == 1 {
                *sizes.entry(rep).or_default() += 1;
                pages.push((id, rep));
            }
        }
        for (id, rep) in pages {
            by_part[part_of(rep, self.parts)].push((id, rep, sizes[&rep]));
        }
        for p in (self.worker..self.parts).step_by(self.peers) {
            let mut rows = std::mem::take(&mut by_part[p]);
            rows.sort_unstable();
            let drops: Vec<(i64, i64)> = rows
                .iter()
                .filter(|(id, rep, _)| id != rep)
                .map(|&(id, rep, _)| (id, rep))
                .collect();
            write_clusters(&self.dir.join("clusters").join(part_name(p)), &rows)?;
            write_drops(&self.dir.join("drop").join(part_name(p)), &drops)?;
            totals.pages += rows.len() as u64;
            totals.dropped += drops.len() as u64;
            for &(id, rep, size) in &rows {
                if id != rep {
                    continue;
                }
                totals.clusters += 1;
                totals.largest = totals.largest.max(size);
                let bucket = (64 - (size.max(1) - 1).leading_zeros()) as usize;
                if totals.histogram.len() <= bucket {
                    totals.histogram.resize(bucket + 1, 0);
                }
                totals.histogram[bucket] += 1;
                if size > self.max_size {
                    totals.oversized.push((size, rep));
                }
            }
        }
        Ok(())
    }
}

fn summarize(opts: &ClusterJobOptions, totals: &ClusterTotals, started: Instant) -> ClusterSummary {
    let mut oversized = totals.oversized.clone();
    oversized.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let size_histogram = totals
        .histogram
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(b, &n)| SizeBucket {
            min_size: if b == 0 { 1 } else { (1u64 << (b - 1)) + 1 },
            max_size: 1u64 << b,
            clusters: n,
        })
        .collect();
    if !oversized.is_empty() {
        tracing::warn!(
            "{} cluster(s) have more than {} pages (largest {}): chains of near-duplicates can join distant pages; their representatives are listed in _summary.json",
            oversized.len(),
            opts.max_cluster_size,
            oversized[0].0
        );
    }
    ClusterSummary {
        inputs: opts.pairs.clone(),
        corpus_wins: opts.corpus_wins,
        workers: opts.cluster.workers,
        processes: opts.cluster.processes,
        parts: opts.parts,
        pairs: totals.pairs,
        pages: totals.pages,
        clusters: totals.clusters,
        dropped: totals.dropped,
        largest_cluster: totals.largest,
        size_histogram,
        max_cluster_size: opts.max_cluster_size,
        oversized_clusters: oversized.len() as u64,
        oversized: oversized
            .into_iter()
            .take(LISTED_OVERSIZED)
            .map(|(size, cluster_id)| Oversized { cluster_id, size })
            .collect(),
        seconds: started.elapsed().as_secs_f64(),
    }
}
