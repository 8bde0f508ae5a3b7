//! A file's bytes for Parquet's readers: a local file, or an object whose
//! footer and column chunks are fetched ahead in as few requests as can be.

use std::fs::File;
use std::io::{Cursor, Read};
use std::ops::Range;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{coalesce_ranges, ObjectStore, ObjectStoreExt, OBJECT_STORE_COALESCE_DEFAULT};
use parquet::errors::ParquetError;
use parquet::file::reader::{ChunkReader, Length};

use super::{block_on, one_line, runtime, Location, RemoteObject};
use crate::exec::parallel::lock;

/// A file's bytes for Parquet's readers.
pub(crate) enum Source {
    Local(File),
    Remote(RemoteSource),
}

/// A remote object's bytes: ranges fetched ahead ([`Source::prefetch`])
/// are served from memory; anything else is one ranged request.
pub(crate) struct RemoteSource {
    pub(super) object: RemoteObject,
    pub(super) fetched: Mutex<Vec<(u64, Bytes)>>,
}

/// Bytes fetched from a file's end before its footer is parsed: enough
/// for the footer of most shards, in one request.
const FOOTER_GUESS: u64 = 64 * 1024;

impl Source {
    /// xxh3 of the file's last [`FOOTER_GUESS`] bytes (all of a smaller
    /// file): a Parquet file's footer and the data written just before it,
    /// which tell apart two files of one name and size but other rows
    /// without reading them whole (for an object, one request).
    pub(crate) fn tail_digest(&self) -> Result<u64> {
        let size = self.len();
        let start = size.saturating_sub(FOOTER_GUESS);
        let tail = self.get_bytes(start, (size - start) as usize)?;
        Ok(xxhash_rust::xxh3::xxh3_64(&tail))
    }

    /// Fetches the end of a remote file, where its footer is.
    pub(crate) fn prefetch_footer(&self) -> Result<()> {
        let size = self.len();
        let tail = size.saturating_sub(FOOTER_GUESS)..size;
        self.prefetch(std::slice::from_ref(&tail), "its footer")
    }

    /// Fetches `ranges` of a remote object at once, so that decoding them
    /// makes no request; `what` they are names them in an error.
    pub(crate) fn prefetch(&self, ranges: &[Range<u64>], what: &str) -> Result<()> {
        let Source::Remote(remote) = self else {
            return Ok(());
        };
        let location = Location::Remote(remote.object.clone());
        match location.fetch(ranges.to_vec(), what.to_string()) {
            Some(pending) => self.receive(pending),
            None => Ok(()),
        }
    }

    /// Waits for a [`Location::fetch`] of this file and keeps its bytes.
    pub(crate) fn receive(&self, pending: Fetch) -> Result<()> {
        let Source::Remote(remote) = self else {
            return Ok(());
        };
        let Fetch { ranges, what, task } = pending;
        let url = &remote.object.url;
        let parts = block_on(task)
            .map_err(|e| anyhow::anyhow!("{url}: cannot read {what} ({e})"))?
            .map_err(|e| anyhow::anyhow!("{url}: cannot read {what} ({})", one_line(&e)))?;
        let mut fetched = lock(&remote.fetched);
        fetched.extend(ranges.iter().map(|r| r.start).zip(parts));
        Ok(())
    }
}

/// Byte ranges of an object on their way, fetched by the I/O runtime while
/// the caller does other work.
pub(crate) struct Fetch {
    ranges: Vec<Range<u64>>,
    pub(super) what: String,
    pub(super) task: tokio::task::JoinHandle<object_store::Result<Vec<Bytes>>>,
}

impl Location {
    /// Starts fetching `ranges` of an object in the background, in as few
    /// requests as `object_store` can merge them into; `None` for a local
    /// file (the kernel reads ahead for those). `what` names them in an
    /// error.
    pub(crate) fn fetch(&self, ranges: Vec<Range<u64>>, what: String) -> Option<Fetch> {
        let Location::Remote(object) = self else {
            return None;
        };
        let (store, path, wanted) = (object.store.clone(), object.path.clone(), ranges.clone());
        let task = runtime().spawn(async move {
            let whole = |range: Range<u64>| whole_range(store.clone(), path.clone(), range);
            coalesce_ranges(&wanted, whole, OBJECT_STORE_COALESCE_DEFAULT).await
        });
        Some(Fetch { ranges, what, task })
    }
}

/// The bytes of `range` of the object at `path`, all of them: an object
/// cut since it was listed gives fewer, which is an error here (cut into
/// ranges, they would panic in `object_store`).
async fn whole_range(
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    range: Range<u64>,
) -> object_store::Result<Bytes> {
    let wanted = range.end - range.start;
    let bytes = store.get_range(&path, range).await?;
    if bytes.len() as u64 != wanted {
        return Err(object_store::Error::Generic {
            store: "neardup",
            source: format!(
                "got {} of {wanted} bytes: the object changed since it was listed",
                bytes.len()
            )
            .into(),
        });
    }
    Ok(bytes)
}

impl RemoteSource {
    /// `length` bytes at `start`: from a prefetched range holding them,
    /// else fetched now.
    fn bytes(&self, start: u64, length: u64) -> parquet::errors::Result<Bytes> {
        let end = start + length;
        for (at, bytes) in lock(&self.fetched).iter() {
            if *at <= start && end <= at + bytes.len() as u64 {
                return Ok(bytes.slice((start - at) as usize..(end - at) as usize));
            }
        }
        let object = &self.object;
        block_on(object.store.get_range(&object.path, start..end)).map_err(|e| {
            ParquetError::General(format!("{}: cannot read ({})", object.url, one_line(&e)))
        })
    }

    /// The prefetched bytes from `start` to the end of their range, if
    /// `start` is in one: where a page header is read from.
    fn rest_of_range(&self, start: u64) -> Option<Bytes> {
        lock(&self.fetched).iter().find_map(|(at, bytes)| {
            let end = at + bytes.len() as u64;
            (*at <= start && start < end).then(|| bytes.slice((start - at) as usize..))
        })
    }
}

impl Length for Source {
    fn len(&self) -> u64 {
        match self {
            Source::Local(file) => file.len(),
            Source::Remote(remote) => remote.object.size,
        }
    }
}

/// A sequential reader over a [`Source`].
pub(crate) enum SourceRead {
    Local(<File as ChunkReader>::T),
    Remote(Cursor<Bytes>),
}

impl Read for SourceRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            SourceRead::Local(read) => read.read(buf),
            SourceRead::Remote(read) => read.read(buf),
        }
    }
}

impl ChunkReader for Source {
    type T = SourceRead;

    fn get_read(&self, start: u64) -> parquet::errors::Result<SourceRead> {
        match self {
            Source::Local(file) => file.get_read(start).map(SourceRead::Local),
            Source::Remote(remote) => {
                let rest = match remote.rest_of_range(start) {
                    Some(rest) => rest,
                    None => remote.bytes(start, remote.object.size.saturating_sub(start))?,
                };
                Ok(SourceRead::Remote(Cursor::new(rest)))
            }
        }
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        match self {
            Source::Local(file) => file.get_bytes(start, length),
            Source::Remote(remote) => remote.bytes(start, length as u64),
        }
    }
}
