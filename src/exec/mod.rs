//! How the work runs: one process or several timely processes, the
//! liveness of its processes and the scheduler that launched them; threads,
//! sorting, progress and logs; the allocator's settings and arrays on huge
//! pages; dataflow steps that need all of their input.

pub(crate) mod after_all;
pub mod allocator;
pub(crate) mod huge_pages;
pub(crate) mod liveness;
pub mod logging;
pub(crate) mod parallel;
pub(crate) mod progress;
pub mod runtime;
pub(crate) mod scheduler;
pub(crate) mod sorting;
