//! The end of a job, on one process or many: every worker hands in one
//! report when its work is done; worker 0 merges them and commits the output
//! (or refuses to, if any worker failed); then every worker learns the
//! outcome. A process returns only once it knows the outcome, so no process
//! of a cluster exits 0 before `_SUCCESS` is in place, and a later stage can
//! read this one's output on any of them.
//!
//! ```text
//!   report (every worker) --exchange to worker 0--> commit --exchange to each worker--> outcome
//! ```

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::Stream;
use timely::ExchangeData;

/// What a worker did, or the error that stopped it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report<R> {
    /// Global index of the worker.
    pub worker: usize,
    pub body: R,
    pub error: Option<String>,
}

/// A per-worker report that adds up over workers.
pub trait Merge: ExchangeData + Clone + Default {
    fn merge(&mut self, other: Self);
}

/// The job's outcome: the merged reports once committed, or why not.
pub type Outcome<R> = Result<R, String>;

/// Worker 0's commit step: publishes the output given the merged reports.
pub type Commit<R> = Arc<dyn Fn(&R) -> anyhow::Result<()> + Send + Sync>;

/// Where a process's workers leave the outcome for its main thread.
pub struct OutcomeSlot<R>(Mutex<Option<Outcome<R>>>);

impl<R> Default for OutcomeSlot<R> {
    fn default() -> Self {
        OutcomeSlot(Mutex::new(None))
    }
}

impl<R> OutcomeSlot<R> {
    fn set(&self, outcome: Outcome<R>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(outcome);
    }

    /// The outcome, once every worker has finished.
    pub fn take(&self) -> Option<Outcome<R>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// Gathers `reports` (one per worker) at worker 0, which calls `commit`
/// unless a worker failed, and leaves the outcome in every process's `slot`.
/// `commit` is needed only on the process of worker 0.
pub fn gather_and_commit<'scope, R: Merge>(
    reports: Stream<'scope, u64, Vec<Report<R>>>,
    worker: usize,
    peers: usize,
    commit: Option<Commit<R>>,
    slot: Arc<OutcomeSlot<R>>,
) {
    let decided = reports
        .unary_frontier::<CapacityContainerBuilder<Vec<(usize, Outcome<R>)>>, _, _, _>(
            Exchange::new(|_: &Report<R>| 0),
            "Commit",
            move |capability, _info| {
                let mut capability = Some(capability);
                let mut gathered: Vec<Report<R>> = Vec::new();
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
        Exchange::new(|(target, _): &(usize, Outcome<R>)| *target as u64),
        "Outcome",
        move |(input, _frontier)| {
            input.for_each(|_time, data| {
                for (_, outcome) in data.drain(..) {
                    slot.set(outcome);
                }
            });
        },
    );
}

/// Merges the reports and commits, unless a worker failed or is missing.
fn decide<R: Merge>(
    mut reports: Vec<Report<R>>,
    peers: usize,
    commit: Option<&Commit<R>>,
) -> Outcome<R> {
    reports.sort_by_key(|r| r.worker);
    if let Some(failed) = reports.iter().find(|r| r.error.is_some()) {
        return Err(failed.error.clone().unwrap_or_default());
    }
    if reports.len() != peers {
        return Err(format!(
            "only {} of {peers} workers reported; the output is not committed",
            reports.len()
        ));
    }
    let mut total = R::default();
    for report in reports {
        total.merge(report.body);
    }
    match commit {
        Some(commit) => commit(&total).map_err(|e| format!("{e:#}"))?,
        None => return Err("worker 0 has nothing to commit with".to_string()),
    }
    Ok(total)
}
