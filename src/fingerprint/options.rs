//! The options of `neardup fingerprint`, which every step of the run reads.

use std::path::PathBuf;

use crate::exec::runtime::RuntimeOptions;
use crate::fingerprint::crawl::{Format, TextFields};
use crate::fingerprint::scheme::Scheme;

/// Options of `neardup fingerprint`.
#[derive(Clone, Debug)]
pub(crate) struct FingerprintOptions {
    pub(crate) inputs: Vec<String>,
    pub(crate) out: PathBuf,
    /// The input format; `None` tells it from each file's name.
    pub(crate) format: Option<Format>,
    pub(crate) fields: TextFields,
    /// How documents are fingerprinted, HTML pages' text chosen included.
    pub(crate) scheme: Scheme,
    pub(crate) runtime: RuntimeOptions,
    pub(crate) overwrite: bool,
    pub(crate) progress: bool,
}

impl FingerprintOptions {
    /// Options with the CLI's defaults, on one worker of one process (the
    /// CLI's workers default to every core).
    pub(crate) fn new(inputs: Vec<String>, out: PathBuf) -> FingerprintOptions {
        FingerprintOptions {
            inputs,
            out,
            format: None,
            fields: TextFields::default(),
            scheme: Scheme::default(),
            runtime: RuntimeOptions::default(),
            overwrite: false,
            progress: false,
        }
    }
}
