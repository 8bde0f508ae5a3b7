//! Parquet in and out.

pub mod input;
pub mod output;
pub mod pages;
pub mod schemes;

/// The Parquet key-value metadata key that holds a fingerprint shard's
/// scheme.
pub const METADATA_KEY: &str = "neardup.scheme";
