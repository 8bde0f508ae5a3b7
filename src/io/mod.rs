//! The shared input and output of every stage: where files live, Parquet
//! in and out, the pair record, and the commit of an output directory.

pub(crate) mod commit;
pub mod pairs;
pub mod parquet;
pub mod storage;
