//! The `cluster` dataflow on timely: each worker reads its share of the
//! pairs into its process's union-find and takes its share of the
//! components before the dataflow's first step; the dataflow then joins the
//! processes' components, chooses each cluster's drops and writes the parts.
//!
//! ```text
//!   read pairs, split the union-find (every worker: its row groups, before stepping)
//!     --bitmap chunks--> pages seen by several workers --> shared pages --> joined components
//!     --> route pages: whole clusters' rows here, joined clusters' pages to their owner (direct)
//!     --> the owners' rows --runs by part--> write parts --> commit (worker 0)
//! ```
//!
//! The steps are [`crate::cluster::join`]'s, [`crate::cluster::local_clusters`]'s,
//! [`crate::cluster::cluster_owner`]'s and [`crate::cluster::part_writer`]'s.
//! A worker's share of the components is handed to the dataflow's operators
//! through [`ShareCells`], filled once it is split.

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::core::OkErr;
use timely::dataflow::operators::{Concat, Input};
use timely::dataflow::Stream;
use timely::worker::Worker;

use crate::cluster::cluster_owner::ClusterOwner;
use crate::cluster::components::{
    Components, DirectShare, KeyedPage, PairLog, RanksByPlace, SharedGraph, WorkerShare,
};
use crate::cluster::drop_evidence::EvidenceSources;
use crate::cluster::drop_policy::DropPolicy;
use crate::cluster::join::{
    after_joins, find_shared, join_components, seen_twice, shared_sightings, sightings,
    FilterChunk, JoinedClusters, SharedFilter, SharedPages,
};
use crate::cluster::local_clusters::{Routed, Router, RouterInput};
use crate::cluster::options::ClusterOptions;
use crate::cluster::part_runs::{owner_run, RunSlice};
use crate::cluster::part_writer::{writer_of, PartWriter};
use crate::cluster::read_pairs::{add_pairs, list_named_rows, write_keys, KeyRows, ProcessUnits};
use crate::cluster::summary::ClusterTotals;
use crate::cluster::OPTIONAL_CANONICAL_URL;
use crate::exec::logging::resident_mib;
use crate::exec::parallel::Tickets;
use crate::exec::progress::StepCounters;
use crate::exec::runtime::{self, Failure, Terms};
use crate::io::commit::{await_outcome, gather_and_commit, report_when_done, Commit};
use crate::io::commit::{Merge, OutcomeSlot, WorkerOutcome};
use crate::io::parquet::pages::PagesTable;

/// What every worker of a process reads.
pub(crate) struct Job {
    pub(crate) opts: ClusterOptions,
    /// This process's share of the pairs' row groups.
    pub(crate) units: ProcessUnits,
    /// Pairs in every process's share, which sizes the bitmap of shared pages.
    pub(crate) total_pairs: u64,
    /// Where the parts are written.
    pub(crate) dir: PathBuf,
    /// The process's union-find, built by all of its workers at once.
    pub(crate) graph: SharedGraph,
    /// The pages table of `--pages`, and its units to read, a ticket each.
    pub(crate) pages: Option<Arc<PagesTable>>,
    pub(crate) page_units: Tickets,
    /// The corpus of `--corpus`, whose pages rank as the corpus's and
    /// whose rows are keyed too, and its units to read.
    pub(crate) corpus: Option<Arc<PagesTable>>,
    pub(crate) corpus_units: Tickets,
    /// The corpus's units again, for the URLs of pages named
    /// ([`SharedGraph::list_named`]).
    pub(crate) corpus_list_units: Tickets,
    /// The held-since time of each of the corpus's units
    /// ([`crate::cluster::keep_order::KeepOrder::held_since`]).
    pub(crate) corpus_held_since: Vec<u64>,
    /// Where `drop/`'s keys and URLs come from, if it needs them.
    pub(crate) drop_evidence: Option<Arc<EvidenceSources>>,
    /// Pairs read and the step reached, for the progress bar.
    pub(crate) counters: Arc<StepCounters>,
}

/// The steps the progress bar names, in order, and where each begins.
pub(crate) const STEPS: &[&str] = &[
    "reading pairs",
    "reading the pages' keys",
    "splitting components",
    "joining components",
    "choosing drops, writing parts",
];
const READING_KEYS: usize = 1;
const SPLITTING: usize = 2;
const JOINING: usize = 3;
const WRITING: usize = 4;

/// Runs the dataflow on this process's workers, joined to the run's other
/// processes, and waits until worker 0 has committed (with `commit`, given on
/// process 0 only) or refused to. Returns the job's totals.
pub(crate) fn run(
    job: Arc<Job>,
    terms: &Terms,
    commit: Option<Commit<ClusterTotals>>,
) -> Result<ClusterTotals> {
    let failure = Arc::new(Failure::default());
    let outcome = Arc::new(OutcomeSlot::default());
    let guards = {
        let (failure, outcome) = (failure.clone(), outcome.clone());
        let runtime = job.opts.runtime.clone();
        runtime::execute(&runtime, terms, move |worker| {
            let ends = Ends {
                state: Rc::new(RefCell::new(WorkerOutcome::<ClusterTotals>::new(
                    worker.index(),
                ))),
                failure: failure.clone(),
                outcome: outcome.clone(),
                commit: commit.clone(),
            };
            run_worker(worker, &job, ends)
        })?
    };
    await_outcome(guards, &failure, &outcome)
}

/// Where a worker's totals, failure and outcome go.
struct Ends {
    state: Rc<RefCell<WorkerOutcome<ClusterTotals>>>,
    failure: Arc<Failure>,
    outcome: Arc<OutcomeSlot<ClusterTotals>>,
    commit: Option<Commit<ClusterTotals>>,
}

/// A worker's share of its process's components, filled once the
/// union-find is split and taken by the operators that need it.
#[derive(Clone, Default)]
struct ShareCells {
    components: Rc<RefCell<Components>>,
    /// The share's pages `(id, page, root)`, sorted by id.
    by_id: Rc<RefCell<Vec<KeyedPage>>>,
    ranks: Rc<RefCell<RanksByPlace>>,
    direct: Rc<RefCell<Option<DirectShare>>>,
    threads: Rc<Cell<usize>>,
    /// The pages this worker shares with others, found by the join.
    shared: Rc<RefCell<SharedPages>>,
}

impl ShareCells {
    fn fill(&self, share: WorkerShare) {
        *self.components.borrow_mut() = share.components;
        *self.by_id.borrow_mut() = share.by_id;
        *self.ranks.borrow_mut() = share.ranks;
        *self.direct.borrow_mut() = share.direct;
        self.threads.set(share.threads);
    }
}

/// One worker: builds the dataflow, reads and splits its pairs, sends the
/// bitmap of its pages, and steps until the job is done.
fn run_worker(worker: &mut Worker, job: &Arc<Job>, ends: Ends) {
    let (me, peers) = (worker.index(), worker.peers());
    let filter = SharedFilter::new(job.total_pairs, peers, job.opts.runtime.processes);
    let cells = ShareCells::default();
    let mut input = worker.dataflow::<u64, _, _>(|scope| {
        let (input, bitmaps) = scope.new_input::<Vec<FilterChunk>>();
        let sighted = {
            let cells = cells.clone();
            shared_sightings(seen_twice(bitmaps, peers), filter, peers, {
                move |twice, pages, give| {
                    let (by_id, ranks) = (cells.by_id.borrow(), cells.ranks.borrow());
                    let end = pages.end.min(by_id.len());
                    let start = pages.start.min(end);
                    let passing = filter.passing(twice, &by_id[start..end]);
                    let ranked = passing.map(|(at, page)| (page, ranks.get(start + at)));
                    sightings(ranked, me as u32).for_each(give);
                    end < by_id.len()
                }
            })
        };
        let resolved = join_components(
            find_shared(sighted, peers),
            cells.components.clone(),
            cells.shared.clone(),
            job.opts.keep_by.words(),
        );
        let routed = route_pages(resolved, &cells, job, me, peers, &ends.state);
        let (to_owners, decided) = routed.ok_err(Routed::split);
        let owner = ClusterOwner {
            run: owner_run(me as u32),
            parts: job.opts.parts,
            word_keys: job.opts.keep_by.word_keys(),
            state: ends.state.clone(),
            failure: ends.failure.clone(),
        };
        let rows = owner.rows(to_owners).concat(decided);
        write_parts(rows, job, me, peers, &ends);
        input
    });
    let share = read_and_split(job, me, &ends);
    job.counters.reach(JOINING);
    for chunk in filter.chunks(&share.by_id, peers) {
        input.send(chunk);
    }
    cells.fill(share);
    drop(input);
    while worker.step_or_park(None) {}
}

/// Reads this worker's pairs (and the keys of their pages) into the
/// process's union-find and takes its share of the components. Every local
/// worker comes to the split, even after a failure: the others wait for it.
fn read_and_split(job: &Job, me: usize, ends: &Ends) -> WorkerShare {
    let started = Instant::now();
    let opts = &job.opts;
    let local = me % opts.runtime.workers;
    let mut pairs = (opts.drop_policy == DropPolicy::Direct).then(PairLog::default);
    let read = &job.counters.rows;
    if let Err(error) = add_pairs(&job.graph, local, &job.units, &mut pairs, &ends.state, read) {
        ends.state.borrow_mut().fail(error, &ends.failure);
    }
    log_step(
        me,
        job.graph.pages(),
        started,
        "pairs read into the process's union-find",
    );
    read_keys(job, me, ends, started);
    job.counters.reach(SPLITTING);
    let share = job.graph.split(local, pairs);
    let step = "components split among the process's workers";
    log_step(me, share.by_id.len(), started, step);
    share
}

/// A table whose rows key pages ([`write_keys`]).
struct KeyTable<'a> {
    table: Option<&'a PagesTable>,
    units: &'a Tickets,
    rows: KeyRows,
    /// The held-since time of each unit (the corpus's).
    held_since: &'a [u64],
}

/// Reads the keys of the pages of this worker's share of each table's
/// rows into the process's union-find, then the corpus's URLs where a
/// canonical link names a page the pages table does not list, and sets
/// the words that wait on every table. Every local worker comes here,
/// even after a failure.
fn read_keys(job: &Job, me: usize, ends: &Ends, started: Instant) {
    let opts = &job.opts;
    let local = me % opts.runtime.workers;
    let keep = &opts.keep_by;
    let keyed = keep.words() > 0;
    let pages = KeyTable {
        table: job.pages.as_deref().filter(|_| keep.reads_pages()),
        units: &job.page_units,
        rows: KeyRows::Pages,
        held_since: &[],
    };
    let corpus = KeyTable {
        table: job
            .corpus
            .as_deref()
            .filter(|_| keyed || keep.corpus_first()),
        units: &job.corpus_units,
        rows: KeyRows::Corpus,
        held_since: &job.corpus_held_since,
    };
    // A canonical link names another page only in a file with the column.
    let mut both = [&job.pages, &job.corpus].into_iter().flatten();
    let named = keep.rel_canonical_word().is_some()
        && both.any(|table| table.has_optional(OPTIONAL_CANONICAL_URL));
    let fail = |error| ends.state.borrow_mut().fail(error, &ends.failure);
    for key_table in [&pages, &corpus] {
        let Some(table) = key_table.table else {
            continue;
        };
        job.counters.reach(READING_KEYS);
        let (units, rows, held_since) = (key_table.units, key_table.rows, key_table.held_since);
        let of_corpus = rows == KeyRows::Corpus;
        let written = job.graph.write_keys(local, of_corpus, |writer| {
            let lists_pages = named && rows == KeyRows::Pages;
            write_keys(table, keep, units, rows, held_since, lists_pages, writer)
        });
        match written {
            Err(error) => fail(error),
            Ok(Some(0)) if local == 0 && rows == KeyRows::Pages && job.graph.pages() > 0 => {
                warn_of_no_page_rows(&opts.pages)
            }
            Ok(_) => {}
        }
        log_step(me, job.graph.pages(), started, "keys of pages read");
    }
    if let Some(table) = corpus.table.filter(|_| named) {
        let listed = job.graph.list_named(local, |named, found| {
            list_named_rows(table, &job.corpus_list_units, named, found)
        });
        if let Err(error) = listed {
            fail(error);
        }
        log_step(me, job.graph.pages(), started, "corpus pages named listed");
    }
    job.graph.finish_keys(local, keep.rel_canonical_word());
}

/// Warns that no row of `--pages` is a page of the pairs: its keys then
/// rank every page alike (a table of another night, say).
fn warn_of_no_page_rows(pages: &[String]) {
    tracing::warn!(
        "--pages {}: no row's id is a page of the pairs, so no key read from it ranks any page (is it the table of these pairs' night?)",
        pages.join(" ")
    );
}

/// Logs the end of a worker's step begun at `started`: its pages, time
/// and the process's resident memory.
fn log_step(worker: usize, pages: usize, started: Instant, step: &str) {
    let seconds = started.elapsed().as_secs_f64();
    tracing::info!(worker, pages, seconds, rss_mib = ?resident_mib(), "{step}");
}

/// Once the joined components' clusters are known: this worker's rows of
/// whole clusters (`Err`), and the pages of joined clusters addressed to
/// their owners (`Ok`), a slice at a time.
fn route_pages<'scope>(
    resolved: JoinedClusters<'scope>,
    cells: &ShareCells,
    job: &Job,
    me: usize,
    peers: usize,
    state: &Rc<RefCell<WorkerOutcome<ClusterTotals>>>,
) -> Stream<'scope, u64, Vec<Routed>> {
    let (cells, state, counters) = (cells.clone(), state.clone(), job.counters.clone());
    let opts = &job.opts;
    let (policy, max_size, parts) = (opts.drop_policy, opts.max_cluster_size, opts.parts);
    let word_keys: Arc<[_]> = opts.keep_by.word_keys().into();
    let start = move |joined| {
        counters.reach(WRITING);
        let started = Instant::now();
        let components = std::mem::take(&mut *cells.components.borrow_mut());
        let pages = components.len();
        let mut router = Router::new(RouterInput {
            worker: me as u32,
            components,
            by_id: std::mem::take(&mut *cells.by_id.borrow_mut()),
            ranks: std::mem::take(&mut *cells.ranks.borrow_mut()),
            joined,
            shared: std::mem::take(&mut *cells.shared.borrow_mut()),
            direct: cells.direct.borrow_mut().take(),
            threads: cells.threads.get(),
            policy,
            word_keys,
            parts,
            peers,
            max_size,
        });
        move |give: &mut dyn FnMut(Routed)| {
            if router.next_slice(give) {
                return true;
            }
            state
                .borrow_mut()
                .body
                .merge(std::mem::take(&mut router.totals));
            let seconds = started.elapsed().as_secs_f64();
            tracing::info!(worker = me, pages, seconds, rss_mib = ?resident_mib(), "pages routed");
            false
        }
    };
    match resolved {
        JoinedClusters::Keyless(resolved) => after_joins(resolved, "RoutePages", start),
        JoinedClusters::Keyed(resolved) => after_joins(resolved, "RoutePages", start),
    }
}

/// Sends the rows' runs to the workers that write their parts, and reports
/// to worker 0 once every part is written, which commits.
fn write_parts(
    rows: Stream<'_, u64, Vec<RunSlice>>,
    job: &Job,
    me: usize,
    peers: usize,
    ends: &Ends,
) {
    let opts = &job.opts;
    let evidence = job.drop_evidence.clone();
    let writer = PartWriter::new(
        &job.dir,
        me,
        peers,
        opts.runtime.processes,
        opts.parts,
        opts.keep_by.kept_by_names(),
        evidence,
    );
    let to_writer = Exchange::new(move |slice: &RunSlice| {
        writer_of(slice.part as usize, slice.rows.kind(), peers) as u64
    });
    let (state, failure) = (ends.state.clone(), ends.failure.clone());
    let reports = report_when_done(rows, to_writer, "WriteParts", state, failure, writer);
    let (commit, outcome) = (ends.commit.clone(), ends.outcome.clone());
    gather_and_commit(reports, me, peers, commit, outcome);
}
