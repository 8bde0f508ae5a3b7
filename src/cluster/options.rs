//! The options of `neardup cluster`, which every step of the run reads.

use std::path::PathBuf;

use anyhow::{bail, Result};

use crate::cluster::drop_policy::DropPolicy;
use crate::cluster::keep_order::KeepOrder;
use crate::exec::runtime::RuntimeOptions;

/// Options of `neardup cluster`.
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    /// `match` outputs: directories, files or globs.
    pub(crate) pairs: Vec<String>,
    pub(crate) out: PathBuf,
    /// Which page of a cluster is kept ([`crate::cluster::keep_order`]).
    pub keep_by: KeepOrder,
    /// The pages table the keys are read from (`--pages`): files,
    /// directories or globs; none for an order by corpus and id alone.
    pub pages: Vec<String>,
    /// The corpus's shards (`--corpus`): its pages are corpus pages,
    /// ranked by how long it has held them
    /// ([`crate::cluster::keep_order::KeepOrder::held_since`]) and keyed by
    /// its rows too; `drop/`'s URLs come from it for the pages the pages
    /// table lacks.
    pub corpus: Vec<String>,
    /// How pages are chosen for `drop/`.
    pub drop_policy: DropPolicy,
    /// Warn about clusters with more pages than this.
    pub(crate) max_cluster_size: u64,
    pub parts: usize,
    pub runtime: RuntimeOptions,
    pub overwrite: bool,
    /// A progress bar on a terminal.
    pub(crate) progress: bool,
}

impl ClusterOptions {
    /// Options with the CLI's defaults, on one worker of one process (the
    /// CLI's workers default to every core).
    pub fn new(pairs: Vec<String>, out: PathBuf) -> ClusterOptions {
        ClusterOptions {
            pairs,
            out,
            keep_by: KeepOrder::default(),
            pages: Vec::new(),
            corpus: Vec::new(),
            drop_policy: DropPolicy::default(),
            max_cluster_size: 1000,
            parts: 1,
            runtime: RuntimeOptions::default(),
            overwrite: false,
            progress: false,
        }
    }

    /// Refuses options no run could take, before anything is read (a
    /// job's, before its first stage runs).
    pub(crate) fn validate(&self) -> Result<()> {
        self.runtime.validate()?;
        if self.parts == 0 {
            bail!("--parts must be at least 1");
        }
        if self.max_cluster_size == 0 {
            bail!("--max-cluster-size must be at least 1 (every cluster has a page)");
        }
        // The corpus key's words count toward the keys' width.
        let corpus_given = !self.corpus.is_empty();
        self.keep_by.clone().holding_corpus(corpus_given).map(drop)
    }

    /// These options with the keep order of a run given the corpus or not
    /// ([`KeepOrder::holding_corpus`]), on pairs that tell corpus pages or
    /// not (`tell_corpus`: a pair file has `self_pair`; [`KeepOrder::for_pairs`]).
    pub(crate) fn holding_corpus(&self, tell_corpus: bool) -> Result<ClusterOptions> {
        let corpus_given = !self.corpus.is_empty();
        let keep_by = (self.keep_by.clone().for_pairs(tell_corpus, corpus_given))
            .holding_corpus(corpus_given)?;
        Ok(ClusterOptions {
            keep_by,
            ..self.clone()
        })
    }
}
