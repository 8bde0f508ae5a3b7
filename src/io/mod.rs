//! The shared input and output of every stage: where files live, Parquet
//! in and out, the pair record, and an output directory: staged, then
//! committed.

pub(crate) mod commit;
pub mod pairs;
pub mod parquet;
pub(crate) mod staging;
pub mod storage;
