//! What a run found and reports: the totals every worker counts as it
//! writes its rows, merged at the commit, and `_summary.json` and the last
//! line made of them.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::cluster::drop_policy::DropPolicy;
use crate::cluster::keep_order::CorpusBatch;
use crate::cluster::options::ClusterOptions;
use crate::exec::progress::human;
use crate::io::commit::Merge;

/// What the workers found, summed over all of them.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct ClusterTotals {
    pub(crate) pairs: u64,
    /// Pairs of a page with itself, passed over.
    pub(crate) same_page_pairs: u64,
    pub(crate) pages: u64,
    pub(crate) clusters: u64,
    pub(crate) dropped: u64,
    pub(crate) largest: u64,
    /// `histogram[b]`: clusters of size in `(2^(b-1), 2^b]`.
    pub(crate) histogram: Vec<u64>,
    /// `(size, representative)` of clusters above `max_cluster_size`.
    pub(crate) oversized: Vec<(u64, i64)>,
}

impl Merge for ClusterTotals {
    fn merge(&mut self, other: Self) {
        self.pairs += other.pairs;
        self.same_page_pairs += other.same_page_pairs;
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

/// Representatives of oversized clusters listed in `_summary.json`.
const LISTED_OVERSIZED: usize = 1000;

/// One bucket of the cluster-size distribution.
#[derive(Debug, Serialize)]
pub(crate) struct SizeBucket {
    pub(crate) min_size: u64,
    pub(crate) max_size: u64,
    pub(crate) clusters: u64,
}

/// A cluster above `--max-cluster-size`.
#[derive(Debug, Serialize)]
pub(crate) struct Oversized {
    pub(crate) cluster_id: i64,
    pub(crate) size: u64,
}

/// What a run learnt of its tables before the dataflow.
#[derive(Debug)]
pub(crate) struct InputsRead {
    /// Rows of the pages table and of the corpus, read by each process.
    pub(crate) pages_rows: u64,
    pub(crate) corpus_rows: u64,
    /// The corpus's batches, the longest held first (none unless corpus
    /// pages rank by how long they have been held).
    pub(crate) corpus_batches: Vec<CorpusBatch>,
    /// Whether `drop/` has `url` and `keep_url`.
    pub(crate) drop_urls: bool,
}

/// What a run did; written to `_summary.json`.
#[derive(Debug, Serialize)]
pub struct ClusterSummary {
    pub(crate) inputs: Vec<String>,
    /// The keys of `--keep-by`, in order (then the smallest id).
    pub(crate) keep_by: Vec<String>,
    /// The pages table, if one was read.
    pub(crate) pages_table: Vec<String>,
    /// Rows of the pages table, read by each process.
    pub(crate) pages_table_rows: u64,
    /// `--corpus` as given, and its rows.
    pub(crate) corpus: Vec<String>,
    pub(crate) corpus_rows: u64,
    /// Its batches, the longest held first, with the times they rank by.
    pub(crate) corpus_batches: Vec<CorpusBatch>,
    /// Whether `drop/` has `url` and `keep_url`.
    pub(crate) drop_urls: bool,
    pub(crate) corpus_wins: bool,
    pub(crate) drop_policy: DropPolicy,
    pub(crate) workers: usize,
    pub(crate) processes: usize,
    pub(crate) parts: usize,
    pub(crate) pairs: u64,
    /// Pairs of a page with itself, passed over.
    pub(crate) same_page_pairs: u64,
    pub(crate) pages: u64,
    pub(crate) clusters: u64,
    pub(crate) dropped: u64,
    pub(crate) largest_cluster: u64,
    pub(crate) size_histogram: Vec<SizeBucket>,
    pub(crate) max_cluster_size: u64,
    pub(crate) oversized_clusters: u64,
    /// The largest oversized clusters (at most 1000), largest first.
    pub(crate) oversized: Vec<Oversized>,
    pub(crate) seconds: f64,
}

impl ClusterSummary {
    /// The summary of a run of `opts` begun at `started` that found
    /// `totals` and `read` its tables; warns of oversized clusters.
    pub(crate) fn of(
        opts: &ClusterOptions,
        totals: &ClusterTotals,
        started: Instant,
        read: &InputsRead,
    ) -> ClusterSummary {
        if totals.same_page_pairs > 0 {
            tracing::warn!(
                "{} pair(s) of a page with itself passed over (a self-join without a.id != b.id writes them)",
                totals.same_page_pairs
            );
        }
        let mut oversized = totals.oversized.clone();
        oversized.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        if let Some(&(largest, _)) = oversized.first() {
            tracing::warn!(
                "{} cluster(s) have more than {} pages (largest {largest}): chains of near-duplicates can join distant pages; their representatives are listed in _summary.json",
                oversized.len(),
                opts.max_cluster_size,
            );
        }
        ClusterSummary {
            inputs: opts.pairs.clone(),
            keep_by: opts.keep_by.names(),
            pages_table: opts.pages.clone(),
            pages_table_rows: read.pages_rows,
            corpus: opts.corpus.clone(),
            corpus_rows: read.corpus_rows,
            corpus_batches: read.corpus_batches.clone(),
            drop_urls: read.drop_urls,
            corpus_wins: opts.keep_by.corpus_first(),
            drop_policy: opts.drop_policy,
            workers: opts.runtime.workers,
            processes: opts.runtime.processes,
            parts: opts.parts,
            pairs: totals.pairs,
            same_page_pairs: totals.same_page_pairs,
            pages: totals.pages,
            clusters: totals.clusters,
            dropped: totals.dropped,
            largest_cluster: totals.largest,
            size_histogram: size_buckets(&totals.histogram),
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

    /// The one line printed at the end of a run.
    pub(crate) fn line(&self, out: &std::path::Path) -> String {
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

/// The non-empty buckets of a histogram counted by [`count_cluster`].
fn size_buckets(histogram: &[u64]) -> Vec<SizeBucket> {
    histogram
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(b, &n)| SizeBucket {
            min_size: if b == 0 { 1 } else { (1u64 << (b - 1)) + 1 },
            max_size: 1u64 << b,
            clusters: n,
        })
        .collect()
}

/// Adds one cluster to the size counts of `totals`.
pub(crate) fn count_cluster(totals: &mut ClusterTotals, size: u64, cluster: i64, max_size: u64) {
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
