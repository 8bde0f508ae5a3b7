//! Parquet in and out.

pub mod input;
pub mod output;
pub(crate) mod pages;
pub(crate) mod schemes;

/// The Parquet key-value metadata key that holds a fingerprint shard's
/// scheme.
pub(crate) const METADATA_KEY: &str = "neardup.scheme";
