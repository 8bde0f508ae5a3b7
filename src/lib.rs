//! neardup: exact batch near-duplicate detection of 64-bit simhash
//! fingerprints, after Manku, Jain and Das Sarma (WWW 2007), on timely dataflow.
//!
//! Three stages, each a folder, over three shared parts; a stage imports the
//! shared parts and never another stage, and the shared parts import no
//! stage (`tests/it/layout.rs` checks it):
//!
//! - [`fingerprint`]: crawl text ([`fingerprint::crawl`]) to simhash
//!   fingerprints ([`fingerprint::simhash`], [`fingerprint::scheme`]);
//! - [`matching`]: the batch join of the night's fingerprints against the
//!   corpus: [`matching::design`] (blocks and tables), [`matching::tables`],
//!   [`matching::probe`] (the kernel), [`matching::dataflow`];
//! - [`cluster`]: pairs to near-duplicate clusters and the keep/drop list:
//!   [`cluster::components`] (union-find), [`cluster::join`] (across
//!   processes), [`cluster::drop_policy`], [`cluster::keep_order`];
//! - [`io`]: local files and object stores ([`io::storage`]), Parquet in
//!   and out ([`io::parquet`]), the pair record ([`io::pairs`]) and an
//!   output's staging and commit ([`io::staging`], [`io::commit`]);
//! - [`exec`]: one process or several timely processes ([`exec::runtime`]),
//!   threads, sorting, progress and logs;
//! - [`random`]: SplitMix64, the stream the tests and `gen` draw from and
//!   the finaliser that mixes a word's bits;
//! - [`job`] (the nightly workflow), [`report`] (a night as an HTML page),
//!   [`gen`] (synthetic shards) and [`cli`] (the flags) on top.
//!
//! Beside `src/`: `tests/it/` (the integration tests, one binary, a module
//! per surface, with their Python helpers in `tests/`), `benches/` (probe,
//! fingerprint and union-find), `scripts/` (the test command, benchmarks,
//! quality evaluations, sample makers, launchers of several processes), `jobs/` (job
//! specs, Kubernetes and Slurm files) and `data-samples/`.
//!
//! The modules' docs are the design notes, most of them on modules private
//! to the crate: `cargo doc --document-private-items --open`.

// The design notes link to private items, read with them.
#![allow(rustdoc::private_intra_doc_links)]

pub mod cli;
pub mod cluster;
pub mod exec;
pub mod fingerprint;
pub mod gen;
pub mod io;
pub mod job;
pub mod matching;
pub mod random;
pub mod report;
