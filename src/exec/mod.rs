//! How the work runs: one process or a timely cluster of them, the
//! liveness of its processes and the scheduler that launched them; threads,
//! sorting, progress and logs.

pub mod liveness;
pub mod logging;
pub mod parallel;
pub mod progress;
pub mod runtime;
pub mod scheduler;
pub mod sorting;
