//! Writing to an object store: an output prefix committed without rename,
//! `_SUCCESS` last; the uploads in flight, which a stopping run waits for;
//! and an object created only if absent, a run's lock.

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{MultipartUpload, ObjectStore, ObjectStoreExt};

use super::{block_on, object_of, one_line, parse_object_url, store_for, LOCK, SUCCESS};
use crate::exec::parallel::lock;

/// An output prefix in an object store (`s3://bucket/nights/pairs`).
/// Object stores have no atomic rename, so an output there is committed
/// the way Hadoop and Spark commit theirs: every file is written under its
/// final name, `_SUCCESS` last, once every part is durable; readers trust
/// only a prefix with `_SUCCESS`.
#[derive(Clone)]
pub(crate) struct OutputPrefix {
    store: Arc<dyn ObjectStore>,
    url: String,
    prefix: ObjectPath,
}

impl fmt::Debug for OutputPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.url)
    }
}

impl OutputPrefix {
    /// The prefix a URL names, an output's: inside a bucket.
    pub(crate) fn parse(spec: &str) -> Result<OutputPrefix> {
        let prefix = OutputPrefix::parse_dir(spec)?;
        if prefix.prefix.as_ref().is_empty() {
            bail!("{spec}: name a prefix inside the bucket, not the bucket itself");
        }
        Ok(prefix)
    }

    /// The prefix a file's URL lies in, which may be its bucket's root
    /// (`s3://bucket/report.html`).
    pub(crate) fn parse_dir(spec: &str) -> Result<OutputPrefix> {
        let (url, prefix) = parse_object_url(spec)?;
        if spec.contains('?') {
            bail!("{spec}: an output's key cannot hold `?` (the URL would end at it)");
        }
        if matches!(url.scheme(), "http" | "https") {
            bail!("{spec}: HTTP URLs are read-only: write to a file system or an object store");
        }
        Ok(OutputPrefix {
            store: store_for(&url)?,
            url: spec.trim_end_matches('/').to_string(),
            prefix,
        })
    }

    fn child(&self, relative: &str) -> ObjectPath {
        relative
            .split('/')
            .filter(|part| !part.is_empty())
            .fold(self.prefix.clone(), |path, part| path.join(part))
    }

    /// A prefix in a fresh in-memory store, for tests.
    #[cfg(test)]
    pub(crate) fn in_memory(url: &str) -> OutputPrefix {
        OutputPrefix {
            store: Arc::new(object_store::memory::InMemory::new()),
            url: url.to_string(),
            prefix: ObjectPath::from("out"),
        }
    }

    /// Whether an object has the prefix's own name (`.../report.html`):
    /// an output there would lie beside it, not replace it. An empty one is
    /// a folder's marker (see [`super::expand_remote`]), not a file. A role
    /// allowed only `out/*` may not read `out` itself: then it is taken
    /// for none (the run can write its prefix, as its lock showed).
    pub(crate) fn is_object(&self) -> Result<bool> {
        match block_on(self.store.head(&self.prefix)) {
            Ok(meta) => Ok(meta.size > 0),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(object_store::Error::PermissionDenied { .. }) => {
                tracing::debug!(prefix = %self.url, "not allowed to read the prefix's own name");
                Ok(false)
            }
            Err(e) => bail!("{}: {}", self.url, one_line(&e)),
        }
    }

    /// Whether any object is under the prefix but a run's [`LOCK`].
    pub(crate) fn exists(&self) -> Result<bool> {
        let lock = self.child(LOCK);
        let mut listing = self.store.list(Some(&self.prefix));
        loop {
            match block_on(listing.try_next()) {
                Ok(Some(meta)) if meta.location == lock => continue,
                Ok(first) => return Ok(first.is_some()),
                Err(e) => bail!("{}: cannot list ({})", self.url, one_line(&e)),
            }
        }
    }

    /// Whether the object `relative` (e.g. `_SUCCESS`) is under the prefix.
    pub(crate) fn has(&self, relative: &str) -> Result<bool> {
        match block_on(self.store.head(&self.child(relative))) {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => bail!("{}/{relative}: {}", self.url, one_line(&e)),
        }
    }

    /// Deletes the object `relative`, if it is there.
    pub(crate) fn delete(&self, relative: &str) -> Result<()> {
        match block_on(self.store.delete(&self.child(relative))) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => bail!("{}/{relative}: cannot delete ({})", self.url, one_line(&e)),
        }
    }

    /// The first object under the prefix whose name (its last part) is not
    /// `ours`, if any.
    pub(crate) fn first_foreign(&self, ours: impl Fn(&str) -> bool) -> Result<Option<String>> {
        let listed: Vec<object_store::ObjectMeta> =
            block_on(self.store.list(Some(&self.prefix)).try_collect())
                .map_err(|e| anyhow::anyhow!("{}: cannot list ({})", self.url, one_line(&e)))?;
        let foreign = listed
            .into_iter()
            .find(|meta| !ours(meta.location.filename().unwrap_or_default()));
        Ok(foreign.map(|meta| meta.location.to_string()))
    }

    /// Deletes every object under the prefix, `_SUCCESS` first, so that no
    /// reader takes a half-deleted output for a complete one; a run's
    /// [`LOCK`] is its holder's to remove.
    pub(crate) fn delete_all(&self) -> Result<()> {
        let failed = |e: object_store::Error| {
            anyhow::anyhow!("{}: cannot delete ({})", self.url, one_line(&e))
        };
        self.delete(SUCCESS)?;
        let listed: Vec<object_store::ObjectMeta> =
            block_on(self.store.list(Some(&self.prefix)).try_collect()).map_err(failed)?;
        let lock = self.child(LOCK);
        for meta in listed.into_iter().filter(|meta| meta.location != lock) {
            match block_on(self.store.delete(&meta.location)) {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(failed(e)),
            }
        }
        Ok(())
    }

    /// Uploads `bytes` as the object `relative`.
    pub(crate) fn put(&self, relative: &str, bytes: Bytes) -> Result<()> {
        let shown = format!("{}/{relative}", self.url);
        let _in_flight = start_upload(&shown)?;
        block_on(self.store.put(&self.child(relative), bytes.into()))
            .map(|_| ())
            .map_err(|e| anyhow::anyhow!("{shown}: cannot write ({})", one_line(&e)))
    }

    /// Uploads the local file `path` as the object `relative`, in parts
    /// for a large file.
    pub(crate) fn upload(&self, path: &Path, relative: &str) -> Result<()> {
        let shown = format!("{}/{relative}", self.url);
        let mut file =
            File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        if size <= UPLOAD_PART {
            let mut bytes = Vec::with_capacity(size as usize);
            file.read_to_end(&mut bytes)
                .with_context(|| format!("{}: cannot read", path.display()))?;
            return self.put(relative, bytes.into());
        }
        let failed =
            |e: object_store::Error| anyhow::anyhow!("{shown}: cannot write ({})", one_line(&e));
        let mut upload = {
            let _in_flight = start_upload(&shown)?;
            block_on(self.store.put_multipart(&self.child(relative))).map_err(failed)?
        };
        // A part at a time, so that a run stopping waits for one part, not
        // the file; an upload left unfinished never becomes an object.
        loop {
            let mut part = Vec::with_capacity(UPLOAD_PART as usize);
            (&mut file)
                .take(UPLOAD_PART)
                .read_to_end(&mut part)
                .with_context(|| format!("{}: cannot read", path.display()))?;
            if part.is_empty() {
                break;
            }
            let sent = start_upload(&shown)
                .and_then(|_in_flight| block_on(upload.put_part(part.into())).map_err(failed));
            if let Err(e) = sent {
                let _ = block_on(upload.abort());
                return Err(e);
            }
        }
        let _in_flight = start_upload(&shown)?;
        block_on(upload.complete()).map(|_| ()).map_err(failed)
    }
}

/// The uploads in flight, and whether the run is stopping: a run stopped at
/// once (a signal, a lost peer) waits for those in flight before deleting
/// its output's objects, else one landing after the deletes is left behind.
struct UploadGate {
    /// Whether the run is stopping, and the uploads in flight.
    state: Mutex<(bool, usize)>,
    landed: Condvar,
}

static UPLOADS: UploadGate = UploadGate::new();

/// The longest a stopping run waits for the uploads in flight.
const UPLOADS_WAIT: Duration = Duration::from_secs(60);

/// An upload in flight, counted until dropped.
struct InFlight<'a>(&'a UploadGate);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        lock(&self.0.state).1 -= 1;
        self.0.landed.notify_all();
    }
}

impl UploadGate {
    const fn new() -> UploadGate {
        UploadGate {
            state: Mutex::new((false, 0)),
            landed: Condvar::new(),
        }
    }

    /// Counts an upload of `shown` in flight; refused once stopping.
    fn enter(&self, shown: &str) -> Result<InFlight<'_>> {
        let mut state = lock(&self.state);
        if state.0 {
            bail!("{shown}: not written: the run is stopping");
        }
        state.1 += 1;
        Ok(InFlight(self))
    }

    /// Starts no more uploads, and waits (`wait` at most) for those in
    /// flight to land.
    fn close(&self, wait: Duration) {
        let deadline = Instant::now() + wait;
        let mut state = lock(&self.state);
        state.0 = true;
        while state.1 > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            state = self
                .landed
                .wait_timeout(state, left)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
    }
}

/// Counts an upload of `shown` in flight in the process's gate.
fn start_upload(shown: &str) -> Result<InFlight<'static>> {
    UPLOADS.enter(shown)
}

/// Starts no more uploads, and waits (a minute at most) for those in
/// flight to land, so that the objects deleted next are all there are.
pub(crate) fn stop_uploads() {
    UPLOADS.close(UPLOADS_WAIT);
}

/// A small object created only if absent (a run's lock): the store's
/// conditional put (`If-None-Match: *`) makes two runs' creations
/// exclusive, and its `If-Match` on the version read makes two runs'
/// takeovers of a stale one exclusive too.
#[derive(Clone)]
pub(crate) struct ExclusiveObject {
    store: Arc<dyn ObjectStore>,
    url: String,
    key: ObjectPath,
}

/// An [`ExclusiveObject`]'s text, with the version it was read at.
pub(crate) struct Seen {
    pub(crate) text: String,
    version: object_store::UpdateVersion,
}

impl fmt::Display for ExclusiveObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url)
    }
}

impl ExclusiveObject {
    /// The object `spec` names (a URL).
    pub(crate) fn parse(spec: &str) -> Result<ExclusiveObject> {
        let (_, store, key) = object_of(spec)?;
        Ok(ExclusiveObject {
            store,
            url: spec.to_string(),
            key,
        })
    }

    /// An object in a fresh in-memory store, for tests.
    #[cfg(test)]
    pub(crate) fn in_memory(url: &str) -> ExclusiveObject {
        ExclusiveObject {
            store: Arc::new(object_store::memory::InMemory::new()),
            url: url.to_string(),
            key: ObjectPath::from("lock"),
        }
    }

    /// Creates the object holding `bytes`; false if it exists.
    pub(crate) fn create(&self, bytes: &[u8]) -> Result<bool> {
        self.put(object_store::PutMode::Create, bytes)
    }

    /// Replaces the object by one holding `bytes` if it is still as `seen`;
    /// false if another run replaced or deleted it since.
    pub(crate) fn replace(&self, seen: Seen, bytes: &[u8]) -> Result<bool> {
        self.put(object_store::PutMode::Update(seen.version), bytes)
    }

    fn put(&self, mode: object_store::PutMode, bytes: &[u8]) -> Result<bool> {
        // Gone since it was read: an update's race lost. A create's is no
        // race: the bucket or container is missing.
        let lost_if_gone = matches!(mode, object_store::PutMode::Update(_));
        let options = object_store::PutOptions {
            mode,
            ..Default::default()
        };
        let payload = Bytes::copy_from_slice(bytes).into();
        match block_on(self.store.put_opts(&self.key, payload, options)) {
            Ok(_) => Ok(true),
            Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. },
            ) => Ok(false),
            Err(object_store::Error::NotFound { .. }) if lost_if_gone => Ok(false),
            Err(e) => bail!("{}: cannot write ({})", self.url, one_line(&e)),
        }
    }

    /// The object's text and version; None if it is gone (or unreadable).
    pub(crate) fn read(&self) -> Option<Seen> {
        block_on(async {
            let got = self.store.get(&self.key).await?;
            let version = object_store::UpdateVersion {
                e_tag: got.meta.e_tag.clone(),
                version: got.meta.version.clone(),
            };
            let text = String::from_utf8_lossy(&got.bytes().await?).into_owned();
            Ok::<_, object_store::Error>(Seen { text, version })
        })
        .ok()
    }

    /// Deletes the object, if it is there; a failure is only warned of (a
    /// lock left behind names itself to the next run).
    pub(crate) fn delete(&self) {
        match block_on(self.store.delete(&self.key)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => tracing::warn!("{}: cannot delete ({})", self.url, one_line(&e)),
        }
    }
}

/// Bytes per part of a multipart upload (S3 needs at least 5 MiB but the
/// last).
const UPLOAD_PART: u64 = 16 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_lock_is_no_part_of_its_output() {
        let prefix = OutputPrefix::in_memory("memory:///out");
        prefix.put(LOCK, Bytes::from_static(b"host 1")).unwrap();
        assert!(!prefix.exists().unwrap(), "a prefix holding only a lock");
        prefix
            .put("part-0.parquet", Bytes::from_static(b"x"))
            .unwrap();
        prefix.put(SUCCESS, Bytes::new()).unwrap();
        assert!(prefix.exists().unwrap());
        prefix.delete_all().unwrap();
        assert!(!prefix.has("part-0.parquet").unwrap());
        assert!(!prefix.has(SUCCESS).unwrap());
        assert!(prefix.has(LOCK).unwrap(), "its holder removes it");
        assert!(!prefix.exists().unwrap());
    }

    #[test]
    fn a_stopping_run_waits_for_the_uploads_in_flight_and_starts_none() {
        let gate: &'static UploadGate = Box::leak(Box::new(UploadGate::new()));
        let landed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (entered, wait_for_entry) = std::sync::mpsc::channel();
        let upload = {
            let landed = landed.clone();
            std::thread::spawn(move || {
                let _in_flight = gate.enter("s3://b/out/part-0").unwrap();
                entered.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(200));
                landed.store(true, std::sync::atomic::Ordering::SeqCst);
            })
        };
        wait_for_entry.recv().unwrap();
        gate.close(Duration::from_secs(60));
        assert!(landed.load(std::sync::atomic::Ordering::SeqCst));
        let refused = gate.enter("s3://b/out/_SUCCESS").err().unwrap();
        assert!(refused.to_string().contains("the run is stopping"));
        upload.join().unwrap();
    }
}
