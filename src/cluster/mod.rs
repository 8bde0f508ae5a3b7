//! The `cluster` command as a library call: pairs in, clusters and the
//! keep/drop list out.
//!
//! The workers of a process stream their shares of the pairs' row groups
//! into one union-find ([`crate::cluster::components`]) and split its components
//! among themselves; the components of different processes are joined
//! where they share pages (see [`crate::cluster::join`]). A cluster
//! one worker holds whole is counted and its drops chosen there
//! ([`crate::cluster::local_clusters`]); the
//! pages (and under `--drop-policy direct` the pairs) of a joined cluster
//! go to its owner, a hash of the representative, which does the same
//! ([`crate::cluster::cluster_owner`]). The rows go to their part's writer as runs sorted
//! by id (see [`crate::cluster::part_runs`]), merged as `clusters/` and `drop/` are
//! written; worker 0 commits once every worker has reported.
//!
//! How the pairs are read into the union-find is in
//! [`crate::cluster::read_pairs`]; the totals and `_summary.json` in
//! [`crate::cluster::summary`].
//!
//! `cluster` (and `run`) set mimalloc's purge delay to 250 ms instead of
//! 1 s (`main.rs`): each step frees buffers of one size as the next
//! allocates others, and held for a second they count twice in the peak.

pub(crate) mod cluster_owner;
pub mod components;
pub mod drop_policy;
pub(crate) mod drop_urls;
pub(crate) mod join;
pub mod keep_order;
pub(crate) mod local_clusters;
pub(crate) mod page_estimate;
pub(crate) mod part_runs;
pub(crate) mod part_writer;
pub(crate) mod read_pairs;
pub(crate) mod summary;

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::core::OkErr;
use timely::dataflow::operators::{Concat, Input};

use crate::cluster::cluster_owner::ClusterOwner;
use crate::cluster::components::{Components, PairLog, SharedGraph};
use crate::cluster::drop_policy::DropPolicy;
use crate::cluster::drop_urls::attach_urls;
use crate::cluster::join::{
    after_joins, find_shared, join_components, seen_twice, shared_sightings, sightings,
    FilterChunk, SharedFilter, SharedPages,
};
use crate::cluster::keep_order::{KeepOrder, URL};
use crate::cluster::local_clusters::{Routed, Router, RouterInput};
use crate::cluster::part_runs::{
    owner_run, router_run, DropRow, MemberRow, RowKind, Rows, RunMerge, RunSlice,
};
use crate::cluster::part_writer::{PartRow, SortedPart};
use crate::cluster::read_pairs::{add_pairs, write_keys, ProcessUnits};
use crate::cluster::summary::{ClusterSummary, ClusterTotals, Oversized, SizeBucket};
use crate::exec::parallel::lock;
use crate::exec::parallel::Tickets;
use crate::exec::runtime::Failure;
use crate::exec::runtime::{self, RuntimeOptions};
use crate::io::commit::{
    await_outcome, commit_staging, gather_and_commit, report_when_done, FinalStage, Merge,
    OutcomeSlot, Report,
};
use crate::io::parquet::input::{into_pieces, open_pair_inputs, PairNeeds};
use crate::io::parquet::output::{part_name, Staging};
use crate::io::parquet::pages::{is_string, PagesTable};

/// Representatives of oversized clusters listed in `_summary.json`.
const LISTED_OVERSIZED: usize = 1000;

/// Options of `neardup cluster`.
#[derive(Clone, Debug)]
pub struct ClusterJobOptions {
    /// `match` outputs: directories, files or globs.
    pub(crate) pairs: Vec<String>,
    pub(crate) out: PathBuf,
    /// Which page of a cluster is kept ([`crate::cluster::keep_order`]).
    pub keep_by: KeepOrder,
    /// The pages table the keys are read from (`--pages`): files,
    /// directories or globs; none for an order by corpus and id alone.
    pub pages: Vec<String>,
    /// How pages are chosen for `drop/`.
    pub drop_policy: DropPolicy,
    /// Warn about clusters with more pages than this.
    pub(crate) max_cluster_size: u64,
    pub parts: usize,
    pub runtime: RuntimeOptions,
    pub overwrite: bool,
}

impl ClusterJobOptions {
    /// Options with the CLI's defaults.
    pub fn new(pairs: Vec<String>, out: PathBuf) -> ClusterJobOptions {
        ClusterJobOptions {
            pairs,
            out,
            keep_by: KeepOrder::default(),
            pages: Vec::new(),
            drop_policy: DropPolicy::default(),
            max_cluster_size: 1000,
            parts: 1,
            runtime: RuntimeOptions::default(),
            overwrite: false,
        }
    }
}

/// Runs `cluster` end to end; on a cluster every process calls this.
pub fn run_cluster(opts: &ClusterJobOptions) -> Result<ClusterSummary> {
    let started = Instant::now();
    opts.runtime.validate()?;
    if opts.parts == 0 {
        bail!("--parts must be at least 1");
    }
    let direct = opts.drop_policy == DropPolicy::Direct;
    let keep = &opts.keep_by;
    let needs = PairNeeds {
        self_pair: keep.corpus_first(),
        distance: direct,
    };
    let peers = opts.runtime.workers * opts.runtime.processes;
    let pages = open_pages(opts)?.map(Arc::new);
    let units = into_pieces(open_pair_inputs(&opts.pairs, needs)?, peers);
    let staging = match opts.runtime.is_leader() {
        true => {
            let staging = Staging::create(&opts.out, opts.overwrite)?;
            staging.remove_on_abort();
            for sub in ["clusters", "drop"] {
                let dir = staging.dir().join(sub);
                std::fs::create_dir(&dir)
                    .with_context(|| format!("{}: cannot create", dir.display()))?;
            }
            Some(staging)
        }
        false => None,
    };
    let pages_rows = pages.as_ref().map_or(0, |table| table.rows());
    let drop_urls = pages.as_ref().is_some_and(|table| table.has_optional(0));
    let (commit, written) = {
        let opts = opts.clone();
        commit_staging(staging, move |totals: &ClusterTotals| {
            summarize(&opts, totals, started, pages_rows, drop_urls)
        })
    };
    let dir = Staging::dir_for(&opts.out)?;
    let failure = Arc::new(Failure::default());
    let outcome = Arc::new(OutcomeSlot::default());
    let total_pairs: u64 = units.iter().map(|unit| unit.rows as u64).sum();
    let process_units = ProcessUnits::of(units, &opts.runtime);
    let process_graph = SharedGraph::new(keep.corpus_first(), opts.runtime.workers, keep.words());
    let page_units = Tickets::new(pages.as_ref().map_or(0, |table| table.units()));
    let job = Arc::new((
        process_units,
        opts.clone(),
        dir,
        process_graph,
        (pages, page_units),
    ));
    let guards = {
        let (failure, outcome) = (failure.clone(), outcome.clone());
        runtime::execute(&opts.runtime, move |worker| {
            let (me, peers) = (worker.index(), worker.peers());
            let (units, opts, dir, process_graph, (pages, page_units)) = &*job;
            let filter = SharedFilter::new(total_pairs, peers, opts.runtime.processes);
            let parts = opts.parts;
            let state = Rc::new(RefCell::new(Report::<ClusterTotals>::new(me)));
            let graph = Rc::new(RefCell::new(Components::default()));
            let direct_share = Rc::new(RefCell::new(None));
            let threads = Rc::new(std::cell::Cell::new(1));
            let by_id = Rc::new(RefCell::new(Vec::new()));
            let mut input = worker.dataflow::<u64, _, _>(|scope| {
                let (input, bitmaps) = scope.new_input::<Vec<FilterChunk>>();
                let twice = seen_twice(bitmaps, peers);
                let sighted = {
                    let (graph, by_id) = (graph.clone(), by_id.clone());
                    shared_sightings(twice, filter, peers, move |twice, pages, give| {
                        let (components, by_id) = (graph.borrow(), by_id.borrow());
                        let end = pages.end.min(by_id.len());
                        let slice = &by_id[pages.start.min(end)..end];
                        let passing = filter.passing(twice, slice);
                        sightings(&components, passing, me as u32).for_each(give);
                        end < by_id.len()
                    })
                };
                let joins = find_shared(sighted, peers);
                let shared = Rc::new(RefCell::new(SharedPages::default()));
                let resolved =
                    join_components(joins, graph.clone(), shared.clone(), opts.keep_by.words());
                let routed = {
                    let (graph, direct_share, state) =
                        (graph.clone(), direct_share.clone(), state.clone());
                    let (by_id, threads) = (by_id.clone(), threads.clone());
                    let shared = shared.clone();
                    let (policy, max_size) = (opts.drop_policy, opts.max_cluster_size);
                    after_joins(resolved, "RoutePages", move |joined| {
                        let started = Instant::now();
                        let components = std::mem::take(&mut *graph.borrow_mut());
                        let pages = components.len();
                        let mut router = Router::new(RouterInput {
                            worker: me as u32,
                            components,
                            by_id: std::mem::take(&mut *by_id.borrow_mut()),
                            joined,
                            shared: std::mem::take(&mut *shared.borrow_mut()),
                            direct: direct_share.borrow_mut().take(),
                            threads: threads.get(),
                            policy,
                            parts,
                            peers,
                            max_size,
                        });
                        move |give: &mut dyn FnMut(Routed)| {
                            if router.next_slice(give) {
                                return true;
                            }
                            let totals = std::mem::take(&mut router.totals);
                            state.borrow_mut().body.merge(totals);
                            tracing::info!(
                                worker = me,
                                pages,
                                seconds = started.elapsed().as_secs_f64(),
                                rss_mib = ?crate::exec::logging::resident_mib(),
                                "pages routed"
                            );
                            false
                        }
                    })
                };
                let (to_owners, decided) = routed.ok_err(|routed: Routed| routed);
                let owner = ClusterOwner {
                    run: owner_run(me as u32),
                    parts,
                    state: state.clone(),
                    failure: failure.clone(),
                };
                let rows = owner.rows(to_owners).concat(decided);
                let processes = opts.runtime.processes;
                let urls_from = pages.clone().filter(|_| drop_urls);
                let writer = PartWriter::new(dir, me, peers, processes, parts, urls_from);
                let reports = report_when_done(
                    rows,
                    Exchange::new(move |slice: &RunSlice| {
                        writer_of(slice.part as usize, slice.rows.kind(), peers) as u64
                    }),
                    "WriteParts",
                    state.clone(),
                    failure.clone(),
                    writer,
                );
                gather_and_commit(reports, me, peers, commit.clone(), outcome.clone());
                input
            });
            let local_started = Instant::now();
            let mut pairs = direct.then(PairLog::default);
            let local = me % opts.runtime.workers;
            if let Err(error) = add_pairs(process_graph, local, units, &mut pairs, &state) {
                state.borrow_mut().fail(error, &failure);
            }
            tracing::info!(
                worker = me,
                pages = process_graph.pages(),
                seconds = local_started.elapsed().as_secs_f64(),
                rss_mib = ?crate::exec::logging::resident_mib(),
                "pairs read into the process's union-find"
            );
            if let Some(table) = pages.as_ref().filter(|_| opts.keep_by.words() > 0) {
                let keep = &opts.keep_by;
                let written = process_graph
                    .write_keys(local, |writer| write_keys(table, keep, page_units, writer));
                if let Err(error) = written {
                    state.borrow_mut().fail(error, &failure);
                }
                tracing::info!(
                    worker = me,
                    seconds = local_started.elapsed().as_secs_f64(),
                    rss_mib = ?crate::exec::logging::resident_mib(),
                    "keys of pages read"
                );
            }
            // Every local worker comes here, even after a failure: the
            // others wait for it.
            let share = process_graph.split(local, pairs);
            tracing::info!(
                worker = me,
                pages = share.by_id.len(),
                seconds = local_started.elapsed().as_secs_f64(),
                rss_mib = ?crate::exec::logging::resident_mib(),
                "components split among the process's workers"
            );
            for chunk in filter.chunks(&share.by_id, peers) {
                input.send(chunk);
            }
            *graph.borrow_mut() = share.components;
            *by_id.borrow_mut() = share.by_id;
            *direct_share.borrow_mut() = share.direct;
            threads.set(share.threads);
            drop(input);
            while worker.step_or_park(None) {}
        })?
    };
    let totals = await_outcome(guards, &failure, &outcome)?;
    if let Some(summary) = lock(&written).take() {
        return Ok(summary);
    }
    Ok(summarize(opts, &totals, started, pages_rows, drop_urls))
}

/// Opens the pages table of `--pages`, with the columns the keys need and
/// `url` where it has one; checks that the keys and the table go together.
fn open_pages(opts: &ClusterJobOptions) -> Result<Option<PagesTable>> {
    let keep = &opts.keep_by;
    if opts.pages.is_empty() {
        if keep.words() > 0 {
            bail!("--keep-by {keep} reads the pages table: give it with --pages");
        }
        return Ok(None);
    }
    let check = |file: &str, column: &str, data_type: &arrow_schema::DataType| {
        keep.check_column(file, column, data_type)
    };
    let table = PagesTable::open(&opts.pages, &keep.columns(), check, &[URL], is_string)?;
    Ok(Some(table))
}

/// The worker that writes part `part`'s file of `kind`: `clusters/` part
/// `p` falls to worker `p % peers` and `drop/` part `p` to the worker half
/// the workers further on, so that the two files of a part are written at
/// once (with the default single part, by two workers instead of one) and
/// with as many parts as workers each writes one file of each kind.
fn writer_of(part: usize, kind: RowKind, peers: usize) -> usize {
    match kind {
        RowKind::Members => part % peers,
        RowKind::Drops => (part + peers / 2) % peers,
    }
}

/// The `clusters/` and `drop/` parts one worker writes, each from the runs
/// of every producer that may give it rows, written as they come.
struct PartWriter {
    worker: usize,
    members: Vec<Option<StreamedPart<MemberRow>>>,
    drops: Vec<Option<StreamedPart<DropRow>>>,
    /// The pages table `drop/`'s URLs are read from, if it has them.
    urls_from: Option<Arc<PagesTable>>,
    /// Threads that read it: the process's workers, idle once routed.
    threads: usize,
    /// Time spent writing, while the rows came and after.
    writing: std::time::Duration,
}

/// A part being written: its runs' merge and its file.
struct StreamedPart<T: PartRow> {
    merge: RunMerge<T>,
    file: SortedPart<T>,
    /// Where the part goes once placed.
    path: PathBuf,
}

impl<T: PartRow> StreamedPart<T> {
    /// A part written to `path`, or with `local` to a plain file beside it
    /// read again before it is placed ([`crate::cluster::drop_urls`]).
    fn new(path: PathBuf, producers: &[u32], local: bool) -> StreamedPart<T> {
        let merge = RunMerge::new(producers.iter().copied());
        let file = match local {
            true => SortedPart::new_local(local_name(&path)),
            false => SortedPart::new(path.clone()),
        };
        StreamedPart { merge, file, path }
    }

    /// Takes in a slice of producer `run` and writes what it lets through.
    fn add(&mut self, run: u32, seq: u32, rows: Vec<T>, last: bool) -> Result<()> {
        self.merge.add(run, seq, rows, last)?;
        self.file.write_from(&mut self.merge)
    }

    /// Parts `0..parts` of folder `folder` of `dir`, those that `ours`
    /// keeps being written here.
    fn all(
        dir: &Path,
        folder: &str,
        parts: usize,
        ours: impl Fn(usize) -> bool,
        producers: &[u32],
        local: bool,
    ) -> Vec<Option<StreamedPart<T>>> {
        (0..parts)
            .map(|p| {
                let path = dir.join(folder).join(part_name(p));
                ours(p).then(|| StreamedPart::new(path, producers, local))
            })
            .collect()
    }

    /// The part `p` of `parts`, if this worker writes it.
    fn of(parts: &mut [Option<StreamedPart<T>>], p: usize) -> Result<&mut StreamedPart<T>> {
        match parts.get_mut(p) {
            Some(Some(part)) => Ok(part),
            _ => bail!("rows of part {p} came to a worker that does not write it (internal error)"),
        }
    }

    fn finish(self) -> Result<u64> {
        let StreamedPart {
            mut merge, file, ..
        } = self;
        file.finish(&mut merge)
    }
}

/// The plain file a part is first written to when it is read again before
/// it is placed: a hidden name beside it, never uploaded.
fn local_name(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{}.plain", name.unwrap_or_default()))
}

impl PartWriter {
    /// The writer of worker `worker` of `peers` in `processes` processes,
    /// over `parts` parts in `dir`. Every worker's router gives rows to
    /// every part; the owners of joined clusters give drops, and only on
    /// several processes (on one, no cluster is joined). A merge waits for
    /// the end of every run it expects, and the owners' come after all the
    /// routing: expected where they give nothing, they would hold every
    /// row until then.
    fn new(
        dir: &Path,
        worker: usize,
        peers: usize,
        processes: usize,
        parts: usize,
        urls_from: Option<Arc<PagesTable>>,
    ) -> PartWriter {
        let routers: Vec<u32> = (0..peers as u32).map(router_run).collect();
        let owners = (0..peers as u32).map(owner_run).filter(|_| processes > 1);
        let droppers: Vec<u32> = routers.iter().copied().chain(owners).collect();
        let ours = |kind| move |p: usize| writer_of(p, kind, peers) == worker;
        let local = urls_from.is_some();
        PartWriter {
            worker,
            members: StreamedPart::all(
                dir,
                "clusters",
                parts,
                ours(RowKind::Members),
                &routers,
                false,
            ),
            drops: StreamedPart::all(dir, "drop", parts, ours(RowKind::Drops), &droppers, local),
            urls_from,
            threads: peers / processes,
            writing: std::time::Duration::ZERO,
        }
    }
}

impl FinalStage<RunSlice, ClusterTotals> for PartWriter {
    fn absorb(&mut self, slices: &mut Vec<RunSlice>) -> Result<()> {
        let started = Instant::now();
        for slice in slices.drain(..) {
            let RunSlice {
                part,
                run,
                seq,
                last,
                rows,
            } = slice;
            let p = part as usize;
            match rows {
                Rows::Members(rows) => {
                    StreamedPart::of(&mut self.members, p)?.add(run, seq, rows, last)?
                }
                Rows::Drops(rows) => {
                    StreamedPart::of(&mut self.drops, p)?.add(run, seq, rows, last)?
                }
            }
        }
        self.writing += started.elapsed();
        Ok(())
    }

    /// Writes what is left of this worker's parts (empty ones included, so
    /// the output always has all `--parts` files of each kind) and places
    /// them.
    fn finish(&mut self, totals: &mut ClusterTotals) -> Result<()> {
        let started = Instant::now();
        for part in std::mem::take(&mut self.members).into_iter().flatten() {
            totals.pages += part.finish()?;
        }
        for part in std::mem::take(&mut self.drops).into_iter().flatten() {
            let path = part.path.clone();
            totals.dropped += part.finish()?;
            if let Some(table) = &self.urls_from {
                attach_urls(&local_name(&path), &path, table, self.threads)?;
            }
        }
        tracing::info!(
            worker = self.worker,
            seconds = (self.writing + started.elapsed()).as_secs_f64(),
            after_routing = started.elapsed().as_secs_f64(),
            rss_mib = ?crate::exec::logging::resident_mib(),
            "parts written"
        );
        Ok(())
    }
}

fn summarize(
    opts: &ClusterJobOptions,
    totals: &ClusterTotals,
    started: Instant,
    pages_rows: u64,
    drop_urls: bool,
) -> ClusterSummary {
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
        keep_by: opts.keep_by.names(),
        pages_table: opts.pages.clone(),
        pages_table_rows: pages_rows,
        drop_urls,
        corpus_wins: opts.keep_by.corpus_first(),
        drop_policy: opts.drop_policy,
        workers: opts.runtime.workers,
        processes: opts.runtime.processes,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_has_one_writer_and_a_parts_two_files_are_written_apart() {
        for peers in 1..=6 {
            for parts in 1..=9 {
                let mut files = vec![0usize; peers];
                for p in 0..parts {
                    let members = writer_of(p, RowKind::Members, peers);
                    let drops = writer_of(p, RowKind::Drops, peers);
                    assert!(members < peers && drops < peers);
                    assert_eq!(members == drops, peers == 1, "{peers} {parts} {p}");
                    files[members] += 1;
                    files[drops] += 1;
                }
                // Files spread evenly: with as many parts as workers, one
                // of each kind a worker.
                let (most, least) = (files.iter().max(), files.iter().min());
                assert!(
                    most.unwrap() - least.unwrap() <= 2,
                    "{peers} {parts} {files:?}"
                );
                if parts == peers {
                    assert!(files.iter().all(|&n| n == 2), "{peers} {files:?}");
                }
            }
        }
    }
}
