//! What the processes of a run agree on before any work ([`Terms`]: the
//! stage, its settings and its input files), sent over each heartbeat
//! connection; a process that failed before starting sends its error in
//! their place ([`FAILED`]).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{bail, Result};

use super::RuntimeOptions;

/// What every process of a run must be started with alike: the stage,
/// its settings and its input files. Processes that differ would each do
/// their share of a different job, and the output would look complete.
/// Each process sends its terms to every peer before the dataflow starts,
/// and stops with one line naming the first that differs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Terms(Vec<(String, String)>);

/// A term's value longer than this is sent as its hash.
const TERM_SHOWN: usize = 100;

/// More bytes of terms than this come from no neardup.
const MAX_TERMS_BYTES: usize = 1 << 20;

impl Terms {
    /// The terms of `stage` run on `workers` threads a process.
    pub(crate) fn new(stage: &str, runtime: &RuntimeOptions) -> Terms {
        Terms(vec![
            ("stage".to_string(), stage.to_string()),
            ("--workers".to_string(), runtime.workers.to_string()),
        ])
    }

    pub(crate) fn with(self, name: &str, value: impl std::fmt::Debug) -> Terms {
        self.with_text(name, format!("{value:?}"))
    }

    /// A term as its flag's value is written (a mismatch names it so, not
    /// as Rust spells the value).
    pub(crate) fn with_shown(self, name: &str, value: impl std::fmt::Display) -> Terms {
        self.with_text(name, value.to_string())
    }

    fn with_text(mut self, name: &str, value: String) -> Terms {
        let value = match value.len() > TERM_SHOWN {
            true => format!("#{:016x}", xxhash_rust::xxh3::xxh3_64(value.as_bytes())),
            false => value,
        };
        self.0.push((name.to_string(), value));
        self
    }

    /// Terms that carry `error` under `name` in place of a job's: a
    /// process that failed before starting ([`FAILED`]), or a step of
    /// process 0 that failed.
    pub(super) fn error(name: &str, error: &anyhow::Error) -> Terms {
        Terms(vec![(name.to_string(), format!("{error:#}"))])
    }

    /// The error these terms carry under `name`, if they do.
    pub(super) fn error_under(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, error)| error.as_str())
    }

    pub(super) fn encode(&self) -> Vec<u8> {
        let text = serde_json::to_vec(&self.0).unwrap_or_default();
        let mut bytes = (text.len() as u32).to_be_bytes().to_vec();
        bytes.extend(text);
        bytes
    }

    pub(super) fn decode(stream: &mut TcpStream) -> Option<Terms> {
        let mut length = [0u8; 4];
        stream.read_exact(&mut length).ok()?;
        let length = u32::from_be_bytes(length) as usize;
        if length > MAX_TERMS_BYTES {
            return None;
        }
        let mut text = vec![0u8; length];
        stream.read_exact(&mut text).ok()?;
        serde_json::from_slice(&text).ok().map(Terms)
    }

    /// Where `theirs` first differs from these, in one line.
    fn difference(&self, theirs: &Terms) -> Option<String> {
        let find = |terms: &Terms, name: &str| {
            terms
                .0
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        let names = self.0.iter().chain(&theirs.0).map(|(n, _)| n.as_str());
        names
            .map(|name| (name, find(self, name), find(theirs, name)))
            .find_map(|(name, ours, theirs)| {
                let shown = |v: &Option<String>| match v {
                    None => "none".to_string(),
                    Some(v) if v.starts_with('#') => "other files or values".to_string(),
                    Some(v) => v.clone(),
                };
                (ours != theirs)
                    .then(|| format!("{name}: {} there, {} here", shown(&theirs), shown(&ours)))
            })
    }
}

/// The term that stands for all others when a process failed before its
/// stage could start; its value is the error.
pub(super) const FAILED: &str = "failed before starting";

/// Sends this process's terms to every peer, then reads theirs (each within
/// `timeout`: a peer sends its terms once all of its own peers connected):
/// one line naming the first peer and term that differ, or a peer that sent
/// none.
pub(super) fn agree(
    heartbeats: &mut [Option<TcpStream>],
    me: usize,
    terms: &Terms,
    timeout: Duration,
) -> Result<()> {
    let bytes = terms.encode();
    for stream in heartbeats.iter_mut().flatten() {
        let _ = stream.write_all(&bytes);
    }
    for (peer, stream) in heartbeats.iter_mut().enumerate() {
        let Some(stream) = stream else { continue };
        stream.set_read_timeout(Some(timeout))?;
        let theirs = Terms::decode(stream);
        stream.set_read_timeout(None)?;
        if let Some(error) = theirs.as_ref().and_then(|t| t.error_under(FAILED)) {
            bail!("process {me}: process {peer} failed before starting: {error}");
        }
        match theirs.map(|theirs| terms.difference(&theirs)) {
            None => bail!("process {me}: process {peer} sent no job terms: is it running this neardup?"),
            Some(Some(difference)) => bail!(
                "process {me}: process {peer} was started with another job ({difference}); start every process with the same command"
            ),
            Some(None) => {}
        }
    }
    Ok(())
}
