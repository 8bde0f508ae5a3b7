//! Parquet in and out.

pub mod input;
pub mod output;
pub mod pages;
