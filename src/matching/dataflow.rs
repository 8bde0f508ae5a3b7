//! The `match` dataflow on timely: scan units of F past B's tables, exchange
//! pairs to their reducer by query-id range, and write each part sorted.
//!
//! ```text
//!   scan (every worker: its share of the units) --exchange by part--> reduce (sort, dedup, write)
//!     --> commit (see [`commit`])
//! ```
//!
//! Units are placed among processes statically, balanced by rows
//! ([`process_units`]), and a process's workers take its units one at a time
//! as each finishes the last, so a worker the VM slows (or a slow disk) holds
//! no other up. Part `p` goes to worker `p % peers`, where workers are
//! numbered across all processes of the run. Each part is sorted before it
//! is written, so the output bytes depend neither on which worker scanned a
//! unit nor on how many workers or processes there are.
//!
//! A unit is a row group of an F file, placed largest first within its
//! side, each to the process with the fewest rows so far (every process
//! computes the same placement). A unit of an object is claimed one ahead,
//! so that its bytes arrive while the one before is probed; a local file's
//! only when the worker is ready for it. A local row group larger than a
//! probe batch (1M rows) is cut into pieces of at most a batch, each read by
//! a Parquet row selection: old pyarrow wrote 64Mi rows to a group and Spark
//! cuts at 128 MB, and such a group read whole would be one worker's while
//! the others wait. An object's row groups are not cut: each piece would
//! fetch all of it. A worker gathers its units' rows into 1M-row batches for
//! the kernel ([`crate::matching::probe`]).
//!
//! With `--self`, a corpus row whose id B holds is the older version of a
//! page fetched again: its matches are passed over before they are
//! expanded ([`Job::superseded`], a lookup a match, not a row), and
//! B's own row pairs in its place in the self-join.
//!
//! A reducer sorts, de-duplicates and writes its parts, holding at most
//! `--pair-memory-mib` of pairs and spilling the rest as sorted runs
//! ([`crate::matching::pair_runs`]), then reports to worker 0, which commits.

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::operator::source;

use crate::exec::runtime::Failure;
use crate::exec::runtime::{execute, RuntimeOptions, Terms};
use crate::io::commit::{
    await_outcome, gather_and_commit, report_when_done, Commit, FinalStage, Merge, OutcomeSlot,
    WorkerOutcome,
};

use crate::exec::parallel::{share_of_process, Tickets};
use crate::io::pairs::{Pair, Parts};
use crate::io::parquet::input::{Columns, FingerprintFile, RowGroupFetch, Unit};
use crate::io::parquet::wide_distance;
use crate::io::staging::part_name;
use crate::matching::pair_runs::PairRuns;
use crate::matching::probe::{probe, Match, Scratch};
use crate::matching::progress::ScanCounters;
use crate::matching::tables::Index;
use crate::matching::verify::{BatchUnit, CandidateSketches, Verification};

/// Where a unit's rows come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// A shard of F: every query within k pairs with it.
    Corpus,
    /// A shard of B (`--self`): pairs only with smaller query ids.
    Queries,
}

/// A row group to scan, and which side it belongs to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ScanUnit {
    pub(crate) side: Side,
    pub(crate) unit: Unit,
}

/// The units (indexes of `units`) this process scans, in the order its
/// workers take them: placed among processes by rows
/// ([`share_of_process`]), a side's units together (a probe batch holds one
/// side's rows), largest first within a side, so the last units taken are
/// the shortest.
pub(crate) fn process_units(units: &[ScanUnit], processes: usize, process: usize) -> Vec<usize> {
    let rows: Vec<u64> = units.iter().map(|unit| unit.unit.rows).collect();
    let mut mine = share_of_process(&rows, processes, process);
    mine.sort_by_key(|&u| units[u].side != Side::Corpus);
    mine
}

/// Everything the workers of one process share, read-only.
pub(crate) struct Job {
    pub(crate) index: Index,
    pub(crate) parts: Parts,
    pub(crate) corpus_files: Vec<FingerprintFile>,
    pub(crate) query_files: Vec<FingerprintFile>,
    pub(crate) units: Vec<ScanUnit>,
    /// This process's units ([`process_units`]), in the order taken...
    pub(crate) mine: Vec<usize>,
    /// ...by whichever worker of the process asks next.
    pub(crate) tickets: Tickets,
    pub(crate) columns: Columns,
    /// Directory the parts are written to (the staging directory).
    pub(crate) out_dir: PathBuf,
    /// Bytes of pairs a worker holds before spilling sorted runs
    /// ([`PairRuns`]).
    pub(crate) pair_memory: u64,
    /// `--verify`'s threshold and B's sketches.
    pub(crate) verify: Option<Verification>,
    /// With `--self` and a corpus, B's ids: a corpus row of one of them is
    /// an older version of a page B holds, and pairs through B's row only.
    pub(crate) superseded: Option<IdSet>,
}

/// A set of ids, asked once a match: a bitmap of about a byte an id,
/// hashed, answers most of them from the caches, and only its hits
/// search the sorted ids, each a walk of cache misses.
pub(crate) struct IdSet {
    sorted: Vec<i64>,
    bits: Vec<u64>,
    shift: u32,
}

impl IdSet {
    /// The set of `sorted`, distinct ids in ascending order.
    pub(crate) fn new(sorted: Vec<i64>) -> IdSet {
        let bits_log2 = (sorted.len().max(64) * 8)
            .next_power_of_two()
            .trailing_zeros();
        let mut set = IdSet {
            bits: vec![0; 1 << (bits_log2 - 6)],
            shift: 64 - bits_log2,
            sorted,
        };
        for at in 0..set.sorted.len() {
            let bit = set.bit(set.sorted[at]);
            set.bits[bit >> 6] |= 1 << (bit & 63);
        }
        set
    }

    fn bit(&self, id: i64) -> usize {
        ((id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    pub(crate) fn contains(&self, id: i64) -> bool {
        let bit = self.bit(id);
        self.bits[bit >> 6] & (1 << (bit & 63)) != 0 && self.sorted.binary_search(&id).is_ok()
    }
}

impl Job {
    /// The file a unit of `side` is a row group of.
    fn file(&self, side: Side, unit: Unit) -> &FingerprintFile {
        &self.files(side)[unit.file]
    }

    /// The files of `side`.
    fn files(&self, side: Side) -> &[FingerprintFile] {
        match side {
            Side::Corpus => &self.corpus_files,
            Side::Queries => &self.query_files,
        }
    }
}

/// What the whole job scanned and wrote, summed over every worker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MatchTotals {
    pub(crate) corpus_rows: u64,
    pub(crate) self_rows: u64,
    pub(crate) pairs: u64,
    /// Pairs written to runs on disk beyond the workers' memory budget.
    pub(crate) pairs_spilled: u64,
    /// Pairs within k before `--verify` (sightings: before the
    /// de-duplication); 0 without it.
    pub(crate) candidates: u64,
}

impl Merge for MatchTotals {
    fn merge(&mut self, other: Self) {
        self.corpus_rows += other.corpus_rows;
        self.self_rows += other.self_rows;
        self.pairs += other.pairs;
        self.pairs_spilled += other.pairs_spilled;
        self.candidates += other.candidates;
    }
}

/// Runs the dataflow on this process's workers, joined to the other
/// processes of the run, and waits until worker 0 has committed (with `commit`, given on
/// process 0 only) or refused to. Returns the job's totals.
pub(crate) fn run(
    job: Arc<Job>,
    runtime: &RuntimeOptions,
    terms: &Terms,
    counters: Arc<ScanCounters>,
    commit: Option<Commit<MatchTotals>>,
) -> Result<MatchTotals> {
    let failure = Arc::new(Failure::default());
    let outcome = Arc::new(OutcomeSlot::default());
    let guards = {
        let (failure, outcome) = (failure.clone(), outcome.clone());
        execute(runtime, terms, move |worker| {
            let index = worker.index();
            let peers = worker.peers();
            let (job, counters, failure) = (job.clone(), counters.clone(), failure.clone());
            let (commit, outcome) = (commit.clone(), outcome.clone());
            let state = Rc::new(RefCell::new(WorkerOutcome::<MatchTotals>::new(index)));
            worker.dataflow::<u64, _, _>(move |scope| {
                let scan_job = job.clone();
                let scan_counters = counters.clone();
                let scan_failure = failure.clone();
                let scan_state = state.clone();
                let pairs = source::<_, CapacityContainerBuilder<Vec<Pair>>, _, _>(
                    scope,
                    "Scan",
                    move |cap, info| {
                        let activator = scope.activator_for(info.address);
                        let mut cap = Some(cap);
                        let mut scanner = Scanner::new(scan_job, scan_state.clone());
                        move |output| {
                            let Some(time) = cap.as_ref() else { return };
                            let outcome = {
                                let mut session = output.session(time);
                                scanner.next_unit(&scan_counters, &mut |pair| session.give(pair))
                            };
                            match outcome {
                                Ok(true) => activator.activate(),
                                Ok(false) => cap = None,
                                Err(error) => {
                                    scan_state.borrow_mut().fail(error, &scan_failure);
                                    cap = None;
                                }
                            }
                        }
                    },
                );
                let route_job = job.clone();
                let route = Exchange::new(move |pair: &Pair| {
                    (route_job.parts.part_of(pair.query_id) % peers) as u64
                });
                let reducer = Reducer::new(job, index, peers, counters);
                let reports = report_when_done(pairs, route, "Reduce", state, failure, reducer);
                gather_and_commit(reports, index, peers, commit, outcome);
            });
            while worker.step_or_park(None) {}
        })?
    };
    await_outcome(guards, &failure, &outcome)
}

/// Corpus rows probed together. The probe kernel partitions each batch so
/// that a partition's visits stay within a cache-sized slice of every table;
/// the larger the batch, the more visits share one load of a slice, but the
/// more of the batch and its scratch copy (20 bytes a row per worker) falls
/// out of the last-level cache between passes. 1M rows is as fast end to
/// end as larger batches, in less peak memory (`scripts/bench.sh`).
const PROBE_BATCH_ROWS: usize = 1 << 20;

/// Fault-injection hook for the multi-process tests: a pause after every unit, so a
/// test can kill a process while the others are still scanning.
const UNIT_DELAY_ENV: &str = "NEARDUP_TEST_UNIT_DELAY_MS";

fn unit_delay() -> Option<std::time::Duration> {
    let ms: u64 = std::env::var(UNIT_DELAY_ENV).ok()?.parse().ok()?;
    Some(std::time::Duration::from_millis(ms))
}

/// A worker's scan state: the rows read but not yet probed, the unit
/// claimed next, and reusable buffers.
struct Scanner {
    job: Arc<Job>,
    state: Rc<RefCell<WorkerOutcome<MatchTotals>>>,
    delay: Option<std::time::Duration>,
    batch: Batch,
    /// The unit (an index of the job's) claimed next, its fetch started.
    ahead: Option<(usize, RowGroupFetch)>,
    scratch: Scratch,
    matches: Vec<Match>,
    /// The candidate rows' sketches, under `--verify`.
    sketches: CandidateSketches,
}

/// Rows of one side, gathered from consecutive units until a probe batch is full.
#[derive(Default)]
struct Batch {
    side: Option<Side>,
    ids: Vec<i64>,
    fingerprints: Vec<u64>,
    /// The units the rows came from, in order.
    units: Vec<BatchUnit>,
}

impl Scanner {
    fn new(job: Arc<Job>, state: Rc<RefCell<WorkerOutcome<MatchTotals>>>) -> Scanner {
        Scanner {
            job,
            state,
            delay: unit_delay(),
            batch: Batch::default(),
            ahead: None,
            scratch: Scratch::default(),
            matches: Vec::new(),
            sketches: CandidateSketches::default(),
        }
    }

    /// Takes the process's next unit, if any is left, and starts its fetch.
    fn claim(&self) -> Option<(usize, RowGroupFetch)> {
        let at = self.job.mine[self.job.tickets.take()?];
        let ScanUnit { side, unit } = self.job.units[at];
        Some((at, self.job.file(side, unit).fetch_unit(&unit)))
    }

    /// Reads the process's next unit into the batch, probing the batch when
    /// it is full, when the side changes, or once no unit is left, and hands
    /// every pair found to `emit`. Returns whether there may be units left.
    fn next_unit(&mut self, counters: &ScanCounters, emit: &mut dyn FnMut(Pair)) -> Result<bool> {
        let Some((at, fetched)) = self.ahead.take().or_else(|| self.claim()) else {
            self.probe_batch(counters, emit)?;
            return Ok(false);
        };
        let ScanUnit { side, unit } = self.job.units[at];
        if self.batch.side != Some(side) {
            self.probe_batch(counters, emit)?;
            self.batch.side = Some(side);
        }
        // An object's next unit is claimed now, so that its bytes come
        // while this one is decoded and probed; a local file's only when
        // this one is done, so that no worker holds a unit another, idle,
        // could take.
        if fetched.is_remote() {
            self.ahead = self.claim();
        }
        let job = self.job.clone();
        let start = self.batch.ids.len() as u32;
        self.batch.units.push(BatchUnit { unit, start });
        job.file(side, unit).read_fetched(
            fetched,
            &job.columns,
            &mut self.batch.ids,
            &mut self.batch.fingerprints,
        )?;
        counters.units_done.fetch_add(1, Ordering::Relaxed);
        // Its own target, so that a test can wait for a process to be
        // mid-scan (`RUST_LOG=neardup::unit_read=debug`) and see nothing else.
        tracing::debug!(target: "neardup::unit_read", file = unit.file, row_group = unit.row_group, "unit read");
        if let Some(delay) = self.delay {
            std::thread::sleep(delay);
        }
        if self.batch.ids.len() >= PROBE_BATCH_ROWS {
            self.probe_batch(counters, emit)?;
        }
        Ok(true)
    }

    /// Probes the gathered rows and empties the batch.
    fn probe_batch(&mut self, counters: &ScanCounters, emit: &mut dyn FnMut(Pair)) -> Result<()> {
        let Some(side) = self.batch.side else {
            return Ok(());
        };
        if self.batch.ids.is_empty() {
            return Ok(());
        }
        let job = self.job.clone();
        let index = &job.index;
        self.matches.clear();
        probe(
            index,
            &self.batch.fingerprints,
            &mut self.scratch,
            &mut self.matches,
        );
        if let Some(b) = job.superseded.as_ref().filter(|_| side == Side::Corpus) {
            let ids = &self.batch.ids;
            self.matches.retain(|m| !b.contains(ids[m.row as usize]));
        }
        if job.verify.is_some() && side == Side::Corpus {
            let rows = self.matches.iter().map(|m| m.row).collect();
            self.sketches
                .read(rows, &self.batch.units, job.files(side))?;
        }
        let (ids, fingerprints) = (&self.batch.ids, &self.batch.fingerprints);
        let (mut found, mut candidates) = (0, 0);
        for m in &self.matches {
            let corpus_id = ids[m.row as usize];
            let corpus_simhash = fingerprints[m.row as usize];
            let query_simhash = index.queries.fingerprint(m.group);
            let first_row = index.queries.first_row(m.group);
            for (j, &query_id) in index.queries.ids(m.group).iter().enumerate() {
                let keep = match side {
                    Side::Corpus => query_id != corpus_id,
                    Side::Queries => query_id < corpus_id,
                };
                if !keep {
                    continue;
                }
                let wide_distance = match &job.verify {
                    None => None,
                    Some(verify) => {
                        candidates += 1;
                        let corpus_sketch = match side {
                            Side::Corpus => self.sketches.get(m.row),
                            Side::Queries => verify.queries.get(corpus_id, corpus_simhash),
                        };
                        let query_sketch = verify.queries.of_row(first_row + j);
                        let simhashes = (query_simhash, corpus_simhash);
                        let wide = wide_distance(simhashes, (query_sketch, corpus_sketch));
                        if wide > verify.threshold {
                            continue;
                        }
                        Some(wide as u16)
                    }
                };
                emit(Pair {
                    query_id,
                    corpus_id,
                    query_simhash,
                    corpus_simhash,
                    distance: m.distance,
                    self_pair: side == Side::Queries,
                    wide_distance,
                });
                found += 1;
            }
        }
        let rows_counter = match side {
            Side::Corpus => &counters.corpus_rows,
            Side::Queries => &counters.self_rows,
        };
        rows_counter.fetch_add(ids.len() as u64, Ordering::Relaxed);
        let totals = &mut self.state.borrow_mut().body;
        match side {
            Side::Corpus => totals.corpus_rows += ids.len() as u64,
            Side::Queries => totals.self_rows += ids.len() as u64,
        }
        totals.candidates += candidates;
        counters.pairs_found.fetch_add(found, Ordering::Relaxed);
        self.batch.ids.clear();
        self.batch.fingerprints.clear();
        self.batch.units.clear();
        Ok(())
    }
}

/// A worker's share of the output: the parts `p` with `p % peers == worker`.
struct Reducer {
    job: Arc<Job>,
    worker: usize,
    peers: usize,
    counters: Arc<ScanCounters>,
    pairs: PairRuns,
}

impl Reducer {
    fn new(job: Arc<Job>, worker: usize, peers: usize, counters: Arc<ScanCounters>) -> Reducer {
        let spill_dir = job.out_dir.join(format!("_spill-{worker}"));
        let wide = job.verify.is_some();
        let pairs = PairRuns::new(spill_dir, job.parts.len(), job.pair_memory, wide);
        Reducer {
            job,
            worker,
            peers,
            counters,
            pairs,
        }
    }
}

impl FinalStage<Pair, MatchTotals> for Reducer {
    fn absorb(&mut self, pairs: &mut Vec<Pair>) -> Result<()> {
        for pair in pairs.drain(..) {
            self.pairs
                .push(self.job.parts.part_of(pair.query_id), pair)?;
        }
        Ok(())
    }

    /// Sorts, de-duplicates and writes every part this worker owns, empty
    /// ones included, so the output always has all `--parts` files.
    fn finish(&mut self, totals: &mut MatchTotals) -> Result<()> {
        for p in (self.worker..self.job.parts.len()).step_by(self.peers) {
            let written = self
                .pairs
                .write_part(p, &self.job.out_dir.join(part_name(p)))?;
            totals.pairs += written;
            self.counters
                .pairs_written
                .fetch_add(written, Ordering::Relaxed);
        }
        totals.pairs_spilled += self.pairs.spilled();
        self.pairs.remove_spills()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_set_holds_its_ids_and_no_other() {
        let mut rng = crate::random::SplitMix64::new(5);
        let hashed: Vec<i64> = (0..5_000).map(|_| rng.next_u64() as i64).collect();
        let counted: Vec<i64> = (-300..3_000).collect();
        for ids in [hashed, counted, vec![], vec![i64::MIN, 0, i64::MAX]] {
            let mut sorted = ids.clone();
            sorted.sort_unstable();
            sorted.dedup();
            let set = IdSet::new(sorted);
            assert!(ids.iter().all(|&id| set.contains(id)));
            let others = (0..20_000)
                .map(|_| rng.next_u64() as i64)
                .chain(3_000..6_000);
            for id in others.filter(|id| !ids.contains(id)) {
                assert!(!set.contains(id), "{id}");
            }
        }
    }

    fn unit(side: Side, file: usize, row_group: usize, rows: u64) -> ScanUnit {
        let unit = Unit {
            file,
            row_group,
            offset: 0,
            rows,
        };
        ScanUnit { side, unit }
    }

    fn rows_of(units: &[ScanUnit], mine: &[usize]) -> u64 {
        mine.iter().map(|&u| units[u].unit.rows).sum()
    }

    #[test]
    fn shards_with_short_last_row_groups_split_evenly_among_processes() {
        // 16 shards of 3.75M rows in row groups of 1M: round robin gave one
        // worker every short row group (32M rows against 28M).
        let units: Vec<ScanUnit> = (0..16)
            .flat_map(|f| [1_000_000, 1_000_000, 1_000_000, 750_000].map(|r| (f, r)))
            .enumerate()
            .map(|(i, (f, rows))| unit(Side::Corpus, f, i % 4, rows))
            .collect();
        for processes in [1, 2, 4] {
            for process in 0..processes {
                let mine = process_units(&units, processes, process);
                assert_eq!(rows_of(&units, &mine), 60_000_000 / processes as u64);
            }
        }
    }

    #[test]
    fn a_process_takes_its_corpus_units_first_each_side_largest_first() {
        let mut rng = crate::random::SplitMix64::new(4);
        let units: Vec<ScanUnit> = (0..40)
            .map(|i| {
                let side = if i % 3 == 0 {
                    Side::Queries
                } else {
                    Side::Corpus
                };
                unit(side, i, 0, 1 + rng.below(1_000_000))
            })
            .collect();
        for processes in [1, 2, 3] {
            let mut all = Vec::new();
            for process in 0..processes {
                let mine = process_units(&units, processes, process);
                let sides: Vec<Side> = mine.iter().map(|&u| units[u].side).collect();
                let corpus = sides.iter().take_while(|&&s| s == Side::Corpus).count();
                assert!(sides[corpus..].iter().all(|&s| s == Side::Queries));
                for side in [&mine[..corpus], &mine[corpus..]] {
                    let rows: Vec<u64> = side.iter().map(|&u| units[u].unit.rows).collect();
                    assert!(rows.windows(2).all(|w| w[0] >= w[1]), "{rows:?}");
                }
                all.extend(mine);
            }
            all.sort_unstable();
            assert_eq!(all, (0..units.len()).collect::<Vec<_>>(), "{processes}");
        }
    }
}
