//! Crawl files read from their start, seekable: a local file, or an object
//! read a window at a time by ranged requests.

use std::fmt;
use std::fs::File;
use std::io::Read;

use anyhow::{Context, Result};
use bytes::Bytes;

use super::{block_on, one_line, Fetch, Location};

/// Bytes of an object read per request by an [`InputReader`]: large enough
/// that a request's latency is small beside its transfer.
const WINDOW: u64 = 8 << 20;

/// A file read from its start, seekable: crawl files (WARC, WET, JSONL) are
/// streamed, and a damaged gzip member is skipped by seeking back to just
/// after its start. An object is read a window at a time by ranged
/// requests, the next window fetched while the current one is consumed.
pub(crate) enum InputReader {
    Local(File),
    Remote(Box<ObjectReader>),
}

/// An object as a `Read + Seek`: see [`InputReader`].
pub(crate) struct ObjectReader {
    location: Location,
    size: u64,
    /// Bytes per request ([`WINDOW`]).
    window_size: u64,
    /// The bytes at `window_start..`.
    window: Bytes,
    window_start: u64,
    position: u64,
    /// The next window, on its way.
    ahead: Option<(u64, Fetch)>,
}

impl Location {
    /// The file's bytes, from its start.
    pub(crate) fn reader(&self) -> Result<InputReader> {
        self.reader_by_windows_of(WINDOW)
    }

    pub(super) fn reader_by_windows_of(&self, window_size: u64) -> Result<InputReader> {
        match self {
            Location::Local(path) => File::open(path)
                .map(InputReader::Local)
                .with_context(|| format!("{}: cannot open", path.display())),
            Location::Remote(object) => Ok(InputReader::Remote(Box::new(ObjectReader {
                location: self.clone(),
                size: object.size,
                window_size,
                window: Bytes::new(),
                window_start: 0,
                position: 0,
                ahead: None,
            }))),
        }
    }

    /// The file's size in bytes.
    pub(crate) fn size(&self) -> Result<u64> {
        match self {
            Location::Local(path) => std::fs::metadata(path)
                .map(|m| m.len())
                .with_context(|| format!("{}: cannot open", path.display())),
            Location::Remote(object) => Ok(object.size),
        }
    }
}

impl ObjectReader {
    /// Starts fetching the window at `start` (nothing past the end).
    fn fetch_window(&self, start: u64) -> Option<(u64, Fetch)> {
        let end = (start + self.window_size).min(self.size);
        (start < end)
            .then(|| {
                let range = std::iter::once(start..end).collect();
                self.location.fetch(range, format!("bytes {start}..{end}"))
            })
            .flatten()
            .map(|fetch| (start, fetch))
    }

    /// Makes the window hold `position`, from the fetch ahead if it is
    /// that window's, and starts fetching the one after.
    fn load_window(&mut self) -> std::io::Result<()> {
        let fetch = match self.ahead.take() {
            Some((start, fetch)) if start == self.position => fetch,
            _ => match self.fetch_window(self.position) {
                Some((_, fetch)) => fetch,
                None => return Ok(()),
            },
        };
        let Fetch { what, task, .. } = fetch;
        let url = self.location.to_string();
        let failed = |reason: String| {
            std::io::Error::other(ReadFailed(format!("{url}: cannot read {what} ({reason})")))
        };
        let mut parts = block_on(task)
            .map_err(|e| failed(e.to_string()))?
            .map_err(|e| failed(one_line(&e)))?;
        self.window = parts.pop().unwrap_or_default();
        self.window_start = self.position;
        self.ahead = self.fetch_window(self.window_start + self.window.len() as u64);
        Ok(())
    }
}

impl Read for ObjectReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let window_end = self.window_start + self.window.len() as u64;
        if self.position < self.window_start || self.position >= window_end {
            if self.position >= self.size {
                return Ok(0);
            }
            self.load_window()?;
        }
        let at = (self.position - self.window_start) as usize;
        let available = &self.window[at.min(self.window.len())..];
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.position += n as u64;
        Ok(n)
    }
}

impl std::io::Seek for ObjectReader {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        let target = match to {
            std::io::SeekFrom::Start(n) => Some(n),
            std::io::SeekFrom::Current(d) => self.position.checked_add_signed(d),
            std::io::SeekFrom::End(d) => self.size.checked_add_signed(d),
        };
        self.position = target.ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek before the start")
        })?;
        Ok(self.position)
    }
}

impl Read for InputReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            InputReader::Local(file) => file.read(buf),
            InputReader::Remote(object) => object.read(buf),
        }
    }
}

impl std::io::Seek for InputReader {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        match self {
            InputReader::Local(file) => file.seek(to),
            InputReader::Remote(object) => object.seek(to),
        }
    }
}

/// A failure to read a file's bytes (a store's request that failed for
/// good, a disk's error), as against bytes that fail to decode: a reader
/// that meets one stops, rather than count a bad record and go on.
#[derive(Debug)]
struct ReadFailed(String);

impl fmt::Display for ReadFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ReadFailed {}

/// Whether `error`, met while decoding a file, is a failure to read it
/// ([`ReadFailed`], or the operating system's) rather than bad bytes.
pub(crate) fn is_read_failure(error: &std::io::Error) -> bool {
    error.raw_os_error().is_some() || error.get_ref().is_some_and(|e| e.is::<ReadFailed>())
}
