//! The end of a job, on one process or many: every worker hands in one
//! report when its work is done; worker 0 merges them and commits the output
//! (or refuses to, if any worker failed); then every worker learns the
//! outcome. A process returns only once it knows the outcome, so no process
//! of a run exits 0 before `_SUCCESS` is in place, and a later stage can
//! read this one's output on any of them; when the commit itself fails, the
//! other processes say that process 0's commit failed, and why.
//!
//! ```text
//!   report (every worker) --exchange to worker 0--> commit --exchange to each worker--> outcome
//! ```

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Context, Result};
use serde::{Deserialize, Serialize};
use timely::communication::WorkerGuards;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, ParallelizationContract};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::Stream;
use timely::ExchangeData;

use crate::exec::parallel::lock;
use crate::exec::runtime::Failure;
use crate::io::staging::Staging;

/// What a worker did, or the error that stopped it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct WorkerOutcome<R> {
    /// Global index of the worker.
    pub(crate) worker: usize,
    pub(crate) body: R,
    pub(crate) error: Option<String>,
}

impl<R> WorkerOutcome<R> {
    /// A worker's empty report.
    pub(crate) fn new(worker: usize) -> WorkerOutcome<R>
    where
        R: Default,
    {
        WorkerOutcome {
            worker,
            body: R::default(),
            error: None,
        }
    }

    /// Records the worker's first error, in its report and for its process.
    pub(crate) fn fail(&mut self, error: anyhow::Error, failure: &Failure) {
        self.error.get_or_insert_with(|| format!("{error:#}"));
        failure.record(error);
    }
}

/// A per-worker report that adds up over workers.
pub(crate) trait Merge: ExchangeData + Clone + Default {
    fn merge(&mut self, other: Self);
}

/// The job's outcome: the merged reports once committed, or why not.
pub(crate) type Outcome<R> = Result<R, String>;

/// Why worker 0 did not commit, as it tells every worker: a process other
/// than process 0 says that it was process 0's commit that failed.
#[derive(Clone, Debug, Serialize, Deserialize)]
enum Refused {
    /// A worker failed or is missing.
    Workers(String),
    /// The commit itself failed.
    Commit(String),
}

impl Refused {
    /// The line of a process that commits (`commits`: process 0) or not.
    fn message(self, commits: bool) -> String {
        match self {
            Refused::Commit(error) if !commits => format!("process 0's commit failed: {error}"),
            Refused::Commit(error) | Refused::Workers(error) => error,
        }
    }
}

/// Worker 0's commit step: publishes the output given the merged reports.
pub(crate) type Commit<R> = Arc<dyn Fn(&R) -> anyhow::Result<()> + Send + Sync>;

/// Where a process's workers leave the outcome for its main thread.
pub(crate) struct OutcomeSlot<R>(Mutex<Option<Outcome<R>>>);

impl<R> Default for OutcomeSlot<R> {
    fn default() -> Self {
        OutcomeSlot(Mutex::new(None))
    }
}

impl<R> OutcomeSlot<R> {
    fn set(&self, outcome: Outcome<R>) {
        *lock(&self.0) = Some(outcome);
    }

    /// The outcome, once every worker has finished.
    pub(crate) fn take(&self) -> Option<Outcome<R>> {
        lock(&self.0).take()
    }
}

/// The summary worker 0 committed, for its process to return.
pub(crate) type Written<S> = Arc<Mutex<Option<S>>>;

/// Worker 0's commit step over `staging` (process 0 only, so `None`
/// elsewhere): writes `summarize(merged reports)` as `_summary.json`, moves
/// the directory into place, writes `_SUCCESS`, and keeps the summary. A
/// run whose reports `summarize` refuses is not committed.
pub(crate) fn commit_staging<R, S>(
    staging: Option<Staging>,
    summarize: impl Fn(&R) -> Result<S> + Send + Sync + 'static,
) -> (Option<Commit<R>>, Written<S>)
where
    R: 'static,
    S: Serialize + Send + 'static,
{
    let written: Written<S> = Arc::default();
    let commit = staging.map(|staging| {
        let staging = Mutex::new(Some(staging));
        let keep = written.clone();
        let commit: Commit<R> = Arc::new(move |merged: &R| {
            let summary = summarize(merged)?;
            let staging = lock(&staging)
                .take()
                .context("the output was already committed")?;
            staging.commit_with_summary(&summary)?;
            *lock(&keep) = Some(summary);
            Ok(())
        });
        commit
    });
    (commit, written)
}

/// Waits for this process's workers and returns the job's outcome: the
/// first error of a local worker, a local worker's panic, or else what
/// worker 0 decided for everyone.
pub(crate) fn await_outcome<T: Send + 'static, R>(
    guards: WorkerGuards<T>,
    failure: &Failure,
    outcome: &OutcomeSlot<R>,
) -> Result<R> {
    let joined = guards.join();
    if let Some(error) = failure.take() {
        return Err(error);
    }
    if let Some(panic) = joined.into_iter().find_map(|r| r.err()) {
        return Err(anyhow!("a worker failed: {panic}"));
    }
    match outcome.take() {
        Some(Ok(merged)) => Ok(merged),
        Some(Err(error)) => Err(anyhow!(error)),
        None => Err(anyhow!("the job ended without an outcome from worker 0")),
    }
}

/// What a job's last operator does on a worker: take in its share of the
/// data, then write it out once the data is complete.
pub(crate) trait FinalStage<D, R> {
    /// Takes in a batch of the data (and may write what it can already).
    fn absorb(&mut self, data: &mut Vec<D>) -> Result<()>;
    /// Writes what was absorbed, adding what it wrote to `totals`.
    fn finish(&mut self, totals: &mut R) -> Result<()>;
}

/// The last operator of a job on every worker: hands `input` to `stage`
/// and, once the input is complete, finishes it once (unless the worker
/// already failed) and sends the worker's report on, to
/// [`gather_and_commit`].
pub(crate) fn report_when_done<'scope, D, R, P>(
    input: Stream<'scope, u64, Vec<D>>,
    pact: P,
    name: &str,
    state: Rc<RefCell<WorkerOutcome<R>>>,
    failure: Arc<Failure>,
    mut stage: impl FinalStage<D, R> + 'static,
) -> Stream<'scope, u64, Vec<WorkerOutcome<R>>>
where
    D: 'static,
    R: Merge,
    P: ParallelizationContract<u64, Vec<D>>,
{
    input.unary_frontier::<CapacityContainerBuilder<Vec<WorkerOutcome<R>>>, _, _, _>(
        pact,
        name,
        move |capability, _info| {
            let mut capability = Some(capability);
            move |(input, frontier), output| {
                input.for_each(|_time, data| {
                    let mut report = state.borrow_mut();
                    if report.error.is_some() || failure.happened() {
                        data.clear();
                    } else if let Err(error) = stage.absorb(data) {
                        report.fail(error, &failure);
                    }
                });
                if !frontier.is_empty() {
                    return;
                }
                let Some(capability) = capability.take() else {
                    return;
                };
                let mut report = state.borrow_mut();
                if report.error.is_none() && !failure.happened() {
                    if let Err(error) = stage.finish(&mut report.body) {
                        report.fail(error, &failure);
                    }
                }
                output.session(&capability).give(report.clone());
            }
        },
    )
}

/// Gathers `reports` (one per worker) at worker 0, which calls `commit`
/// unless a worker failed, and leaves the outcome in every process's `slot`.
/// `commit` is needed only on the process of worker 0.
pub(crate) fn gather_and_commit<'scope, R: Merge>(
    reports: Stream<'scope, u64, Vec<WorkerOutcome<R>>>,
    worker: usize,
    peers: usize,
    commit: Option<Commit<R>>,
    slot: Arc<OutcomeSlot<R>>,
) {
    let commits_here = commit.is_some();
    let decided = reports
        .unary_frontier::<CapacityContainerBuilder<Vec<(usize, Result<R, Refused>)>>, _, _, _>(
            Exchange::new(|_: &WorkerOutcome<R>| 0),
            "Commit",
            move |capability, _info| {
                let mut capability = Some(capability);
                let mut gathered: Vec<WorkerOutcome<R>> = Vec::new();
                move |(input, frontier), output| {
                    input.for_each(|_time, data| gathered.append(data));
                    if !frontier.is_empty() {
                        return;
                    }
                    let Some(capability) = capability.take() else {
                        return;
                    };
                    if worker == 0 {
                        let outcome = decide(std::mem::take(&mut gathered), peers, commit.as_ref());
                        let mut session = output.session(&capability);
                        for target in 0..peers {
                            session.give((target, outcome.clone()));
                        }
                    }
                }
            },
        );
    decided.sink(
        Exchange::new(|(target, _): &(usize, Result<R, Refused>)| *target as u64),
        "Outcome",
        move |(input, _frontier)| {
            input.for_each(|_time, data| {
                for (_, outcome) in data.drain(..) {
                    slot.set(outcome.map_err(|refused| refused.message(commits_here)));
                }
            });
        },
    );
}

/// Merges the reports and commits, unless a worker failed or is missing.
fn decide<R: Merge>(
    mut reports: Vec<WorkerOutcome<R>>,
    peers: usize,
    commit: Option<&Commit<R>>,
) -> Result<R, Refused> {
    reports.sort_by_key(|r| r.worker);
    if let Some(failed) = reports.iter().find(|r| r.error.is_some()) {
        return Err(Refused::Workers(failed.error.clone().unwrap_or_default()));
    }
    if reports.len() != peers {
        return Err(Refused::Workers(format!(
            "only {} of {peers} workers reported; the output is not committed",
            reports.len()
        )));
    }
    let mut total = R::default();
    for report in reports {
        total.merge(report.body);
    }
    match commit {
        Some(commit) => commit(&total).map_err(|e| Refused::Commit(format!("{e:#}")))?,
        None => {
            return Err(Refused::Workers(
                "worker 0 has nothing to commit with".to_string(),
            ))
        }
    }
    Ok(total)
}
