//! The end-to-end tests, one binary: each module a surface of neardup
//! (a command, a reader, a remote store, a guarantee). One binary links the
//! library once, where a binary per file linked it once each.

mod common;

mod cli;
mod cluster;
mod duckdb;
mod exactness;
mod explain;
mod fingerprint;
mod fuzz;
mod job;
mod layout;
mod object_store;
mod processes;
mod quality;
mod report;
mod spark;
