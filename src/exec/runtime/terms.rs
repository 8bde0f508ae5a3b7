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

    /// The stage these terms are of.
    pub(super) fn stage(&self) -> Option<&str> {
        (self.0.iter())
            .find(|(name, _)| name == "stage")
            .map(|(_, stage)| stage.as_str())
    }

    /// A term as its flag's value is written (a mismatch names it so, not
    /// as Rust spells the value).
    pub(crate) fn with_shown(self, name: &str, value: impl std::fmt::Display) -> Terms {
        self.with_text(name, value.to_string())
    }

    /// [`Self::with_shown`] for each of `terms`.
    pub(crate) fn with_all_shown(
        self,
        terms: impl IntoIterator<Item = (&'static str, String)>,
    ) -> Terms {
        (terms.into_iter()).fold(self, |all, (name, value)| all.with_shown(name, value))
    }

    /// With input files and a size of each (`unit`: rows, bytes): listed
    /// if short, else counted with a hash of the list, so that a mismatch
    /// line says how many files and rows each process has.
    pub(crate) fn with_files(mut self, name: &str, files: &[(String, u64)], unit: &str) -> Terms {
        let listed: Vec<String> = (files.iter())
            .map(|(file, size)| format!("{file} ({size} {unit})"))
            .collect();
        let listed = listed.join(", ");
        let value = match listed.len() > TERM_SHOWN {
            true => format!(
                "{} files of {} {unit} (list {})",
                files.len(),
                files.iter().map(|(_, size)| size).sum::<u64>(),
                hash_of(&listed)
            ),
            false if files.is_empty() => "none".to_string(),
            false => listed,
        };
        self.0.push((name.to_string(), value));
        self
    }

    /// With the digest of the input files' bytes (`digest`, computed only
    /// on several processes: it reads every file's end), under
    /// [`INPUT_TAILS`].
    pub(crate) fn with_input_tails(
        self,
        runtime: &RuntimeOptions,
        digest: impl FnOnce() -> Result<u64>,
    ) -> Result<Terms> {
        Ok(match runtime.processes > 1 {
            true => self.with_text(INPUT_TAILS, format!("{:016x}", digest()?)),
            false => self,
        })
    }

    fn with_text(mut self, name: &str, value: String) -> Terms {
        let value = match value.len() > TERM_SHOWN {
            true => hash_of(&value),
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
        Terms::read(stream).ok()
    }

    /// [`Self::decode`], saying why nothing was read.
    fn read(stream: &mut TcpStream) -> Result<Terms, Unread> {
        let unread = |error: std::io::Error| match error.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => Unread::TimedOut,
            _ => Unread::Closed,
        };
        let mut length = [0u8; 4];
        stream.read_exact(&mut length).map_err(unread)?;
        let length = u32::from_be_bytes(length) as usize;
        if length > MAX_TERMS_BYTES {
            return Err(Unread::Garbled);
        }
        let mut text = vec![0u8; length];
        stream.read_exact(&mut text).map_err(unread)?;
        serde_json::from_slice(&text)
            .map(Terms)
            .map_err(|_| Unread::Garbled)
    }

    /// Where `theirs` first differs from these, in one line, and the name
    /// of the term.
    fn difference(&self, theirs: &Terms) -> Option<(String, String)> {
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
                (ours != theirs).then(|| {
                    let line = format!("{name}: {} there, {} here", shown(&theirs), shown(&ours));
                    (name.to_string(), line)
                })
            })
    }
}

/// A long term's value as sent: `#` and its hash.
fn hash_of(text: &str) -> String {
    format!("#{:016x}", xxhash_rust::xxh3::xxh3_64(text.as_bytes()))
}

/// Why a peer's terms were not read.
enum Unread {
    /// The connection ended first: the peer stopped, or was killed.
    Closed,
    TimedOut,
    /// Bytes that are no terms: another program, or another version.
    Garbled,
}

/// The term of the input files' bytes ([`Terms::with_input_tails`]), after
/// their names and sizes: files that differ there differ in content.
const INPUT_TAILS: &str = "the input files' last 64 KiB";

/// The term of a job's first stage to run, which each process decides from
/// the outputs it sees: processes that differ there see other outputs.
pub(crate) const FIRST_STAGE: &str = "the first stage to run";

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
        let theirs = Terms::read(stream);
        stream.set_read_timeout(None)?;
        if let Some(error) = theirs.as_ref().ok().and_then(|t| t.error_under(FAILED)) {
            bail!("process {me}: process {peer} failed before starting: {error}");
        }
        match theirs.map(|theirs| terms.difference(&theirs)) {
            Err(Unread::Closed) => bail!(
                "process {me}: process {peer} closed its connection before sending its job terms: it stopped (see its log) or was killed"
            ),
            Err(Unread::TimedOut) => bail!(
                "process {me}: process {peer} sent no job terms within {}s: is it running this neardup?",
                timeout.as_secs_f64()
            ),
            Err(Unread::Garbled) => bail!(
                "process {me}: process {peer} sent something other than job terms: is it running this neardup?"
            ),
            Ok(Some((name, _))) if name == INPUT_TAILS => bail!(
                "process {me}: process {peer} reads other bytes under the same input file names and sizes (their last 64 KiB differ): every process must read the same files"
            ),
            Ok(Some((name, difference))) if name == FIRST_STAGE => bail!(
                "process {me}: process {peer} would run other stages of the night ({difference}): it sees other outputs (a _SUCCESS or report on one host only?); every process must see the same outputs"
            ),
            Ok(Some((_, difference))) => bail!(
                "process {me}: process {peer} was started with another job ({difference}); start every process with the same command"
            ),
            Ok(None) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// `agree`'s error when the peer's end of a heartbeat does `peer`.
    fn refusal(peer: impl FnOnce(TcpStream)) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let ours = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        peer(listener.accept().unwrap().0);
        let mut heartbeats = [None, Some(ours)];
        let terms = Terms(vec![("stage".into(), "match".into())]);
        let timeout = Duration::from_millis(200);
        agree(&mut heartbeats, 0, &terms, timeout)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_peer_that_sends_no_terms_is_named_with_why() {
        let closed = refusal(drop);
        assert!(
            closed.contains("process 1 closed its connection before sending"),
            "{closed}"
        );
        let mut kept = None;
        let silent = refusal(|stream| kept = Some(stream));
        assert!(
            silent.contains("process 1 sent no job terms within 0.2s"),
            "{silent}"
        );
        let garbled = refusal(|mut stream| {
            stream.write_all(&[0, 0, 0, 3, b'x', b'y', b'z']).unwrap();
        });
        assert!(
            garbled.contains("process 1 sent something other than job terms"),
            "{garbled}"
        );
    }
}
