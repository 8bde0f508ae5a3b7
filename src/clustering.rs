//! The `cluster` command as a library call: pairs in, clusters and the
//! keep/drop list out.
//!
//! Each worker streams its share of the pairs' row groups into a union-find;
//! worker 0 merges the workers' components (see [`crate::dataflow::components`]);
//! pages go to the worker owning their cluster's part (a hash of the
//! representative, so a cluster is never split and its size is counted where
//! it is written), and so do the pairs under `--drop-policy direct`; that
//! worker writes `clusters/` and `drop/` parts sorted by id, and worker 0
//! commits once every worker has reported.

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::Input;

use crate::cluster::{self, ClusterOptions};
use crate::dataflow::commit::{
    await_outcome, commit_staging, gather_and_commit, lock, report_when_done, FinalStage, Merge,
    OutcomeSlot, Report,
};
use crate::dataflow::components::{
    merge_at_worker_zero, route_pairs, Addressed, LocalPage, Placement, Reread, Routed, WorkerGraph,
};
use crate::dataflow::Failure;
use crate::drop_policy::{direct_drops, DropPolicy, WeightedPair};
use crate::parquet_io::input::{open_pair_inputs, read_pair_rows, PairNeeds, PairUnit};
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
    /// How pages are chosen for `drop/`.
    pub drop_policy: DropPolicy,
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
            drop_policy: DropPolicy::default(),
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
    pub drop_policy: DropPolicy,
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
    let direct = opts.drop_policy == DropPolicy::Direct;
    let needs = PairNeeds {
        self_pair: opts.corpus_wins,
        distance: direct,
    };
    let units = open_pair_inputs(&opts.pairs, needs)?;
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
            let mine: Vec<PairUnit> = units.iter().skip(me).step_by(peers).cloned().collect();
            let placement = Placement {
                parts: opts.parts,
                peers,
            };
            let state = Rc::new(RefCell::new(Report::<ClusterTotals>::new(me)));
            let graph = Rc::new(RefCell::new(WorkerGraph::new(opts.corpus_wins)));
            let mut input = worker.dataflow::<u64, _, _>(|scope| {
                let (input, local) = scope.new_input::<Vec<LocalPage>>();
                let assigned = merge_at_worker_zero(local, graph.clone(), me, placement, direct);
                let reread = direct.then(|| reread_pairs(mine.clone()));
                let fail = {
                    let (state, failure) = (state.clone(), failure.clone());
                    move |error| state.borrow_mut().fail(error, &failure)
                };
                let routed = route_pairs(assigned, graph.clone(), reread, fail);
                let writer = PartWriter {
                    dir: dir.clone(),
                    placement,
                    policy: opts.drop_policy,
                    max_size: opts.max_cluster_size,
                    worker: me,
                    members: Vec::new(),
                    pairs: Vec::new(),
                };
                let reports = report_when_done(
                    routed,
                    Exchange::new(|(target, _): &Addressed| *target as u64),
                    "WriteClusters",
                    state.clone(),
                    failure.clone(),
                    writer,
                );
                gather_and_commit(reports, me, peers, commit.clone(), outcome.clone());
                input
            });
            let local_started = Instant::now();
            let mut rows = Vec::new();
            for unit in &mine {
                rows.clear();
                if let Err(error) = read_pair_rows(unit, &mut rows) {
                    state.borrow_mut().fail(error, &failure);
                    break;
                }
                state.borrow_mut().body.pairs += rows.len() as u64;
                let components = &mut graph.borrow_mut().components;
                for row in &rows {
                    components.add_pair(row.query, row.corpus, row.corpus_in_corpus);
                }
            }
            tracing::info!(
                worker = me,
                pages = graph.borrow().components.len(),
                seconds = local_started.elapsed().as_secs_f64(),
                "local union-find done"
            );
            if me != 0 {
                for page in graph.borrow_mut().local_pages(me as u32) {
                    input.send(page);
                }
                if !direct {
                    // Only the direct policy looks its pairs up again.
                    *graph.borrow_mut() = WorkerGraph::new(opts.corpus_wins);
                }
            }
            drop(input);
            while worker.step_or_park(None) {}
        })?
    };
    let totals = await_outcome(guards, &failure, &outcome)?;
    if let Some(summary) = lock(&written).take() {
        return Ok(summary);
    }
    Ok(summarize(opts, &totals, started))
}

/// Reads `units` again for the direct policy's second pass, a row group at
/// a time, so pairs are never all held by the reader.
fn reread_pairs(units: Vec<PairUnit>) -> Reread {
    Box::new(move |each| {
        let mut rows = Vec::new();
        for unit in &units {
            rows.clear();
            read_pair_rows(unit, &mut rows)?;
            each(&rows);
        }
        Ok(())
    })
}

/// A page as its writer gets it: `(id, cluster, cluster size, ranks first)`.
type Member = (i64, i64, u32, bool);

/// A worker's parts: the members (and pairs) routed to it, written when all
/// have come.
struct PartWriter {
    dir: PathBuf,
    placement: Placement,
    policy: DropPolicy,
    max_size: u64,
    worker: usize,
    members: Vec<Member>,
    pairs: Vec<WeightedPair>,
}

impl FinalStage<Addressed, ClusterTotals> for PartWriter {
    fn absorb(&mut self, updates: &mut Vec<Addressed>) {
        for (_, routed) in updates.drain(..) {
            match routed {
                Routed::Member {
                    id,
                    cluster,
                    size,
                    first,
                } => self.members.push((id, cluster, size, first)),
                Routed::Pair(a, b, distance) => self.pairs.push((a, b, distance)),
                Routed::Owner { .. } => {}
            }
        }
    }

    /// Writes every part this worker owns (empty ones too) and counts what
    /// they hold into `totals`.
    fn finish(&mut self, totals: &mut ClusterTotals) -> Result<()> {
        let started = Instant::now();
        let mut members = std::mem::take(&mut self.members);
        members.sort_unstable();
        let drops = self.drops(&members)?;
        let parts = self.placement.parts;
        let mut clusters: Vec<Vec<(i64, i64, u64)>> = vec![Vec::new(); parts];
        let mut dropped: Vec<Vec<(i64, i64, Option<u8>)>> = vec![Vec::new(); parts];
        let mut next_drop = drops.iter().peekable();
        for &(id, cluster, size, _) in &members {
            let part = self.placement.part(cluster);
            clusters[part].push((id, cluster, size as u64));
            if let Some(&&drop) = next_drop.peek().filter(|d| d.0 == id) {
                dropped[part].push(drop);
                next_drop.next();
            }
            if id == cluster {
                count_cluster(totals, size as u64, cluster, self.max_size);
            }
        }
        if let Some(drop) = next_drop.next() {
            bail!(
                "dropped page {} is not a member here (internal error)",
                drop.0
            );
        }
        for p in (self.worker..parts).step_by(self.placement.peers) {
            write_clusters(&self.dir.join("clusters").join(part_name(p)), &clusters[p])?;
            write_drops(&self.dir.join("drop").join(part_name(p)), &dropped[p])?;
            totals.pages += clusters[p].len() as u64;
            totals.dropped += dropped[p].len() as u64;
        }
        tracing::info!(
            worker = self.worker,
            pages = members.len(),
            seconds = started.elapsed().as_secs_f64(),
            "parts written"
        );
        Ok(())
    }
}

impl PartWriter {
    /// The drop rows of this worker's clusters, sorted by id (as `members` is).
    fn drops(&mut self, members: &[Member]) -> Result<Vec<(i64, i64, Option<u8>)>> {
        match self.policy {
            DropPolicy::Component => Ok(members
                .iter()
                .filter(|m| m.0 != m.1)
                .map(|&(id, cluster, _, _)| (id, cluster, None))
                .collect()),
            DropPolicy::Direct => {
                let pages: Vec<(bool, i64)> = members.iter().map(|m| (m.3, m.0)).collect();
                let pairs = std::mem::take(&mut self.pairs);
                Ok(direct_drops(&pages, &pairs)?
                    .into_iter()
                    .map(|(id, keep, distance)| (id, keep, Some(distance)))
                    .collect())
            }
        }
    }
}

/// Adds one cluster to the size counts of `totals`.
fn count_cluster(totals: &mut ClusterTotals, size: u64, cluster: i64, max_size: u64) {
    totals.clusters += 1;
    totals.largest = totals.largest.max(size);
    let bucket = (64 - (size.max(1) - 1).leading_zeros()) as usize;
    if totals.histogram.len() <= bucket {
        totals.histogram.resize(bucket + 1, 0);
    }
    totals.histogram[bucket] += 1;
    if size > max_size {
        totals.oversized.push((size, cluster));
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
        drop_policy: opts.drop_policy,
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
