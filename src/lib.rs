//! neardup: exact batch near-duplicate detection of 64-bit simhash
//! fingerprints, after Manku, Jain and Das Sarma (WWW 2007), on timely dataflow.
//!
//! - [`design`]: how the 64 bits are split into blocks and tables;
//! - [`tables`]: B's distinct fingerprints and the tables built over them;
//! - [`probe`]: the kernel that streams corpus fingerprints past the tables;
//! - [`dataflow`]: the timely job that scans F and reduces pairs into parts;
//! - [`runtime`]: one process or a timely cluster of them, the
//!   [`liveness`] of its processes, and the [`scheduler`] that launched them;
//! - [`components`], [`drop_policy`], [`clustering`]: near-duplicate clusters
//!   by union-find, and the keep/drop list;
//! - [`parquet_io`]: reading shards and writing results atomically, from
//!   local files or object stores ([`storage`]);
//! - [`matching`], [`gen`], [`fingerprinting`]: the commands as library calls;
//! - [`job`]: job specs and the nightly workflow; [`cli`]: the flags.

pub mod cli;
pub mod cluster_owner;
pub mod clustering;
pub mod components;
pub mod crawl;
pub mod dataflow;
pub mod design;
pub mod drop_policy;
pub mod drop_urls;
pub mod fingerprinting;
pub mod gen;
pub mod job;
pub mod keep_order;
pub mod liveness;
pub mod local_clusters;
pub mod logging;
pub mod matching;
pub mod pair_runs;
pub mod pairs;
pub mod parallel;
pub mod parquet_io;
pub mod part_runs;
pub mod probe;
pub mod progress;
pub mod runtime;
pub mod scheduler;
pub mod scheme;
pub mod simhash;
pub mod sorting;
pub mod storage;
pub mod tables;
