//! Where input files live: on a local (or shared) file system, or as objects
//! in S3, Google Cloud Storage, Azure Blob Storage or behind HTTP(S), read
//! through the Apache Arrow project's `object_store`.
//!
//! A remote Parquet file is read the way its layout invites: the footer
//! first, then, per row group, only the byte ranges of the column chunks
//! the reader projects, fetched together before decoding
//! ([`Location::fetch`], which a scan starts for its next row group while
//! it decodes the current one). `object_store` retries transient failures with
//! exponential backoff. Its calls are async; neardup's workers are plain
//! threads, so each call blocks on one shared tokio runtime.
//!
//! Credentials and endpoints come from each cloud's usual environment
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`,
//! `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`; `GOOGLE_APPLICATION_CREDENTIALS`;
//! `AZURE_STORAGE_*`), as `object_store`'s builders read it.
//!
//! How reads go: a Parquet file's footer comes from one request for its
//! last 64 KiB (16 files' footers asked for at once, so thousands of shards
//! do not wait for theirs one after another); WARC, WET and JSONL objects
//! are streamed 8 MiB at a time by ranged requests, the next window on its
//! way while the current one is parsed, and a damaged gzip member is
//! skipped by seeking back as on disk. HTTP(S) URLs are files only: HTTP
//! cannot list. An output bound for a store is written into a local staging
//! directory and each file uploaded under its final name once complete (a
//! multipart upload above 16 MiB); see [`crate::io::staging`].

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{Cursor, Read};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use futures::TryStreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::http::HttpBuilder;
use object_store::path::Path as ObjectPath;
use object_store::{
    coalesce_ranges, MultipartUpload, ObjectStore, ObjectStoreExt, OBJECT_STORE_COALESCE_DEFAULT,
};
use parquet::errors::ParquetError;
use parquet::file::reader::{ChunkReader, Length};
use url::Url;

use crate::exec::parallel::lock;

/// URL schemes read through `object_store`.
const REMOTE_SCHEMES: &[&str] = &[
    "s3", "s3a", "gs", "az", "abfs", "abfss", "azure", "adl", "http", "https",
];

/// Whether `spec` names an object by URL (`s3://bucket/key`, ...) rather
/// than a local path.
pub(crate) fn is_url(spec: &str) -> bool {
    spec.split_once("://")
        .is_some_and(|(scheme, _)| REMOTE_SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()))
}

/// An input file: a local path, or an object with its size.
#[derive(Clone, Debug)]
pub enum Location {
    Local(PathBuf),
    Remote(RemoteObject),
}

/// An object of a store, as listed (its size known, so reading its footer
/// takes no extra request).
#[derive(Clone)]
pub struct RemoteObject {
    store: Arc<dyn ObjectStore>,
    url: Url,
    path: ObjectPath,
    size: u64,
}

impl fmt::Debug for RemoteObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.url)
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Local(path) => write!(f, "{}", path.display()),
            Location::Remote(object) => write!(f, "{}", object.url),
        }
    }
}

impl Location {
    /// The local path, if the file is local.
    pub(crate) fn as_local(&self) -> Option<&Path> {
        match self {
            Location::Local(path) => Some(path),
            Location::Remote(_) => None,
        }
    }

    /// Opens the file for Parquet's readers.
    pub(crate) fn open(&self) -> Result<Source> {
        match self {
            Location::Local(path) => {
                let file =
                    File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
                Ok(Source::Local(file))
            }
            Location::Remote(object) => Ok(Source::Remote(RemoteSource {
                object: object.clone(),
                fetched: Mutex::new(Vec::new()),
            })),
        }
    }
}

/// How many objects are opened (their footers read) at once.
const CONCURRENT_OPENS: usize = 16;

/// `open` applied to every location, results in their order; the first
/// error in that order wins. Objects are opened up to [`CONCURRENT_OPENS`]
/// at a time: a store's first byte takes tens of milliseconds, and a corpus
/// of thousands of shards would otherwise wait minutes for its footers one
/// after another. Local files are opened in turn (the page cache answers).
pub(crate) fn open_all<T: Send>(
    locations: &[Location],
    open: impl Fn(&Location) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let remote = locations.iter().filter(|l| l.as_local().is_none()).count();
    let threads = remote.min(CONCURRENT_OPENS);
    if threads <= 1 {
        return locations.iter().map(&open).collect();
    }
    // After a failure the tasks not yet started are skipped (`None`): the
    // first error in order is among those that ran.
    let failed = std::sync::atomic::AtomicBool::new(false);
    let opened = crate::exec::parallel::in_parallel(locations.len(), threads, |at| {
        use std::sync::atomic::Ordering::Relaxed;
        if failed.load(Relaxed) {
            return None;
        }
        let result = open(&locations[at]);
        failed.fetch_or(result.is_err(), Relaxed);
        Some(result)
    });
    opened.into_iter().flatten().collect()
}

/// Expands URLs and local specs (files, directories, globs) into files, in
/// order; see [`crate::io::parquet::input::expand_paths_with`] for the local
/// rules, which objects follow too: a prefix is a directory (its objects
/// below it whose names end in one of `extensions`, skipping names that
/// start with `_` or `.` at any level), and a glob is matched against the
/// keys listed under its literal prefix.
pub(crate) fn expand_remote(spec: &str, extensions: &[&str]) -> Result<Vec<Location>> {
    let (url, store, key) = object_of(spec)?;
    let object = |path: ObjectPath, size: u64| {
        let mut object_url = url.clone();
        object_url.set_path(&format!("/{path}"));
        Location::Remote(RemoteObject {
            store: store.clone(),
            url: object_url,
            path,
            size,
        })
    };
    let http = matches!(url.scheme(), "http" | "https");
    if let Some((literal, _)) = split_glob(spec) {
        if http {
            bail!("{spec}: an HTTP server cannot be listed: name each file");
        }
        let prefix_url = Url::parse(literal).with_context(|| format!("{spec}: not a valid URL"))?;
        let prefix = ObjectPath::from_url_path(prefix_url.path())
            .with_context(|| format!("{spec}: not a valid object path"))?;
        let pattern = glob::Pattern::new(url.path().trim_start_matches('/'))
            .with_context(|| format!("{spec}: invalid glob pattern"))?;
        let mut found = Vec::new();
        for meta in list(&store, &prefix, spec)? {
            if glob_takes(&pattern, meta.location.as_ref(), extensions) {
                found.push(object(meta.location, meta.size));
            }
        }
        if found.is_empty() {
            bail!("{spec}: no objects match this pattern");
        }
        return Ok(found);
    }
    match block_on(store.head(&key)) {
        Ok(meta) => return Ok(vec![object(meta.location, meta.size)]),
        Err(object_store::Error::NotFound { .. }) => {}
        Err(error) => bail!("{spec}: {}", one_line(&error)),
    }
    if http {
        bail!("{spec}: no such object");
    }
    let mut found = Vec::new();
    for meta in list(&store, &key, spec)? {
        let below = meta
            .location
            .as_ref()
            .get(key.as_ref().len()..)
            .unwrap_or("");
        let below = below.split('/');
        let skipped = below.clone().any(|part| part.starts_with(['_', '.']));
        let name = meta.location.filename().unwrap_or("");
        if !skipped && extensions.iter().any(|e| has_extension(name, e)) {
            found.push(object(meta.location, meta.size));
        }
    }
    if found.is_empty() {
        bail!(
            "{spec}: no such object, and no .{} objects under it",
            extensions.join(" or .")
        );
    }
    Ok(found)
}

/// A glob's literal part (the path up to the `/` before its first `*`, `?`
/// or `[`) and its pattern below that; None for a spec without one.
pub(crate) fn split_glob(spec: &str) -> Option<(&str, &str)> {
    let at = spec.find(['*', '?', '['])?;
    let literal = spec[..at].rfind('/').map_or("", |slash| &spec[..slash]);
    Some((literal, spec[literal.len()..].trim_start_matches('/')))
}

/// Whether a glob takes the object `key`, as a local glob takes files: the
/// pattern matches the key (a `*` stays within one part of it) and its name
/// does not start with `_` or `.`; or the pattern matches a prefix of the
/// key, a directory, which gives the objects below it whose names end in
/// one of `extensions`, skipping parts that start with `_` or `.`.
fn glob_takes(pattern: &glob::Pattern, key: &str, extensions: &[&str]) -> bool {
    let options = glob::MatchOptions {
        require_literal_separator: true,
        ..glob::MatchOptions::new()
    };
    let hidden = |part: &str| part.starts_with(['_', '.']);
    let parts: Vec<&str> = key.split('/').collect();
    let name = parts.last().copied().unwrap_or("");
    if pattern.matches_with(key, options) {
        return !hidden(name);
    }
    let has_extension = extensions.iter().any(|e| has_extension(name, e));
    (1..parts.len()).any(|depth| {
        let (above, below) = parts.split_at(depth);
        pattern.matches_with(&above.join("/"), options)
            && !hidden(above[depth - 1])
            && !below.iter().any(|part| hidden(part))
            && has_extension
    })
}

/// The URL, store and key of the object (or prefix) `spec` names.
fn object_of(spec: &str) -> Result<(Url, Arc<dyn ObjectStore>, ObjectPath)> {
    let (url, key) = parse_object_url(spec)?;
    let store = store_for(&url)?;
    Ok((url, store, key))
}

/// The URL and key `spec` names. A `#` or a `%` in an object store's URL
/// is refused: the URL would end at the one and decode the other, so the
/// key read, written or deleted would not be the one shown.
fn parse_object_url(spec: &str) -> Result<(Url, ObjectPath)> {
    let url = Url::parse(spec).with_context(|| format!("{spec}: not a valid URL"))?;
    if !matches!(url.scheme(), "http" | "https") {
        if spec.contains('#') {
            bail!("{spec}: an object key here cannot hold `#` (the URL would end at it)");
        }
        if spec.contains('%') {
            bail!("{spec}: an object key here cannot hold `%` (the URL would decode it)");
        }
    }
    let key = ObjectPath::from_url_path(url.path())
        .with_context(|| format!("{spec}: not a valid object path"))?;
    Ok((url, key))
}

/// The object or prefix an object URL names, spelled one way, so that two
/// URLs of one place compare equal: the scheme's aliases (`s3a`, `azure`,
/// `adl`) and case, the bucket's case, and `.`, `..` and `//` in the key.
/// None for a URL that names no object.
pub(crate) fn object_place(spec: &str) -> Option<String> {
    let (url, key) = parse_object_url(spec).ok()?;
    let scheme = match url.scheme() {
        "s3a" => "s3",
        "azure" | "adl" => "az",
        scheme => scheme,
    };
    Some(format!(
        "{scheme}://{}/{key}",
        url.authority().to_ascii_lowercase()
    ))
}

/// The whole of a small file (a `_summary.json`), local or an object.
pub(crate) fn read_whole(spec: &str) -> Result<Bytes> {
    if !is_url(spec) {
        return std::fs::read(spec)
            .map(Bytes::from)
            .with_context(|| format!("{spec}: cannot read"));
    }
    let (_, store, key) = object_of(spec)?;
    block_on(async { store.get(&key).await?.bytes().await })
        .map_err(|error| anyhow::anyhow!("{spec}: cannot read ({})", one_line(&error)))
}

/// The directories right below a local directory, or the prefixes right
/// below an object-store prefix, sorted.
pub(crate) fn subdirectories(spec: &str) -> Result<Vec<String>> {
    let mut found: Vec<String> = if is_url(spec) {
        let (_, store, key) = object_of(spec)?;
        let listed = block_on(store.list_with_delimiter(Some(&key)))
            .map_err(|error| anyhow::anyhow!("{spec}: cannot list ({})", one_line(&error)))?;
        let base = spec.trim_end_matches('/');
        listed
            .common_prefixes
            .iter()
            .filter_map(|prefix| prefix.filename().map(|name| format!("{base}/{name}")))
            .collect()
    } else {
        std::fs::read_dir(spec)
            .with_context(|| format!("{spec}: cannot read the directory"))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.is_dir())
            .map(|path| path.display().to_string())
            .collect()
    };
    found.sort();
    Ok(found)
}

/// Every object under `prefix`, sorted by key.
fn list(
    store: &Arc<dyn ObjectStore>,
    prefix: &ObjectPath,
    spec: &str,
) -> Result<Vec<object_store::ObjectMeta>> {
    let mut listed: Vec<object_store::ObjectMeta> =
        block_on(store.list(Some(prefix)).try_collect())
            .map_err(|error| anyhow::anyhow!("{spec}: cannot list ({})", one_line(&error)))?;
    listed.sort_by(|a, b| a.location.cmp(&b.location));
    Ok(listed)
}

/// An `object_store` error on one line: its messages nest the HTTP
/// client's, which may hold line breaks.
fn one_line(error: &object_store::Error) -> String {
    error
        .to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The runtime every `object_store` call runs on.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("neardup:io")
            .enable_all()
            .build()
            .expect("cannot start the I/O runtime")
    })
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    runtime().block_on(future)
}

/// The store for a URL's scheme and bucket (or host), made once and
/// shared: its client keeps connections open across files.
fn store_for(url: &Url) -> Result<Arc<dyn ObjectStore>> {
    static STORES: OnceLock<Mutex<HashMap<String, Arc<dyn ObjectStore>>>> = OnceLock::new();
    let root = format!("{}://{}", url.scheme(), url.authority());
    let mut stores = lock(STORES.get_or_init(Default::default));
    if let Some(store) = stores.get(&root) {
        return Ok(store.clone());
    }
    let built: object_store::Result<Arc<dyn ObjectStore>> = match url.scheme() {
        "s3" | "s3a" => AmazonS3Builder::from_env()
            .with_url(url.as_str())
            .build()
            .map(|s| Arc::new(s) as _),
        "gs" => GoogleCloudStorageBuilder::from_env()
            .with_url(url.as_str())
            .build()
            .map(|s| Arc::new(s) as _),
        // A plain-HTTP URL is the user's explicit choice of transport.
        "http" | "https" => HttpBuilder::new()
            .with_url(root.as_str())
            .with_client_options(
                object_store::ClientOptions::new().with_allow_http(url.scheme() == "http"),
            )
            .build()
            .map(|s| Arc::new(s) as _),
        _ => MicrosoftAzureBuilder::from_env()
            .with_url(url.as_str())
            .build()
            .map(|s| Arc::new(s) as _),
    };
    let store = built.map_err(|e| anyhow::anyhow!("{root}: cannot set up ({})", one_line(&e)))?;
    stores.insert(root, store.clone());
    Ok(store)
}

/// Marker written last into a complete output, a directory or a prefix.
pub(crate) const SUCCESS: &str = "_SUCCESS";

/// Whether a file name ends in `.` and `extension` (which may itself hold
/// dots, as `warc.gz`).
pub(crate) fn has_extension(name: &str, extension: &str) -> bool {
    name.strip_suffix(extension)
        .is_some_and(|stem| stem.ends_with('.'))
}

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
    /// The prefix a URL names.
    pub(crate) fn parse(spec: &str) -> Result<OutputPrefix> {
        let (url, prefix) = parse_object_url(spec)?;
        if matches!(url.scheme(), "http" | "https") {
            bail!("{spec}: HTTP URLs are read-only: write to a file system or an object store");
        }
        if prefix.as_ref().is_empty() {
            bail!("{spec}: name a prefix inside the bucket, not the bucket itself");
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

    /// Whether any object is under the prefix.
    pub(crate) fn exists(&self) -> Result<bool> {
        let mut listing = self.store.list(Some(&self.prefix));
        match block_on(listing.try_next()) {
            Ok(first) => Ok(first.is_some()),
            Err(e) => bail!("{}: cannot list ({})", self.url, one_line(&e)),
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

    /// Deletes every object under the prefix, `_SUCCESS` first, so that no
    /// reader takes a half-deleted output for a complete one.
    pub(crate) fn delete_all(&self) -> Result<()> {
        let failed = |e: object_store::Error| {
            anyhow::anyhow!("{}: cannot delete ({})", self.url, one_line(&e))
        };
        self.delete(SUCCESS)?;
        let listed: Vec<object_store::ObjectMeta> =
            block_on(self.store.list(Some(&self.prefix)).try_collect()).map_err(failed)?;
        for meta in listed {
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
/// conditional put (`If-None-Match: *`) makes two runs' creations exclusive.
#[derive(Clone)]
pub(crate) struct ExclusiveObject {
    store: Arc<dyn ObjectStore>,
    url: String,
    key: ObjectPath,
}

impl fmt::Display for ExclusiveObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url)
    }
}

impl ExclusiveObject {
    /// The object `spec` names (a URL).
    pub(crate) fn parse(spec: &str) -> Result<ExclusiveObject> {
        let (url, key) = parse_object_url(spec)?;
        Ok(ExclusiveObject {
            store: store_for(&url)?,
            url: spec.to_string(),
            key,
        })
    }

    /// Creates the object holding `bytes`; false if it exists.
    pub(crate) fn create(&self, bytes: &[u8]) -> Result<bool> {
        let options = object_store::PutOptions {
            mode: object_store::PutMode::Create,
            ..Default::default()
        };
        let payload = Bytes::copy_from_slice(bytes).into();
        match block_on(self.store.put_opts(&self.key, payload, options)) {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
            Err(e) => bail!("{}: cannot create ({})", self.url, one_line(&e)),
        }
    }

    /// The object's text; empty if it is gone.
    pub(crate) fn read(&self) -> String {
        let got = block_on(async { self.store.get(&self.key).await?.bytes().await });
        got.map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// Deletes the object, if it is there.
    pub(crate) fn delete(&self) {
        let _ = block_on(self.store.delete(&self.key));
    }
}

/// Bytes per part of a multipart upload (S3 needs at least 5 MiB but the
/// last).
const UPLOAD_PART: u64 = 16 << 20;

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

    fn reader_by_windows_of(&self, window_size: u64) -> Result<InputReader> {
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

/// A file's bytes for Parquet's readers.
pub(crate) enum Source {
    Local(File),
    Remote(RemoteSource),
}

/// A remote object's bytes: ranges fetched ahead ([`Source::prefetch`])
/// are served from memory; anything else is one ranged request.
pub(crate) struct RemoteSource {
    object: RemoteObject,
    fetched: Mutex<Vec<(u64, Bytes)>>,
}

/// Bytes fetched from a file's end before its footer is parsed: enough
/// for the footer of most shards, in one request.
const FOOTER_GUESS: u64 = 64 * 1024;

impl Source {
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
    what: String,
    task: tokio::task::JoinHandle<object_store::Result<Vec<Bytes>>>,
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

/// A failure to read a file's bytes (a store's request that failed for
/// good, a disk's error), as against bytes that fail to decode: a reader
/// that meets one stops, rather than count a bad record and go on.
#[derive(Debug)]
pub(crate) struct ReadFailed(String);

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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn objects_are_opened_at_once_in_order_and_the_first_error_in_order_wins() {
        let objects: Vec<Location> = (0..40u8).map(|n| in_memory(&[n; 3])).collect();
        // Each open waits until another is under way, so a one-at-a-time
        // opener would wait out every timeout.
        let in_flight = std::sync::atomic::AtomicUsize::new(0);
        let most = std::sync::atomic::AtomicUsize::new(0);
        let first_bytes = |location: &Location| -> Result<u8> {
            use std::sync::atomic::Ordering::SeqCst;
            let now = in_flight.fetch_add(1, SeqCst) + 1;
            most.fetch_max(now, SeqCst);
            let waited = std::time::Instant::now();
            while in_flight.load(SeqCst) < 2 && waited.elapsed().as_millis() < 200 {
                std::thread::yield_now();
            }
            let mut first = [0u8];
            location.reader()?.read_exact(&mut first)?;
            in_flight.fetch_sub(1, SeqCst);
            Ok(first[0])
        };
        let opened = open_all(&objects, first_bytes).unwrap();
        assert_eq!(opened, (0..40u8).collect::<Vec<_>>());
        assert!(most.load(std::sync::atomic::Ordering::SeqCst) > 1);

        // Failures at 7 and 30: whatever ran first, the error is 7's.
        let failing = |location: &Location| -> Result<u8> {
            let mut first = [0u8];
            location.reader()?.read_exact(&mut first)?;
            match first[0] {
                7 | 30 => bail!("object {} failed", first[0]),
                n => Ok(n),
            }
        };
        let error = open_all(&objects, failing).unwrap_err();
        assert_eq!(error.to_string(), "object 7 failed");
    }

    /// An object of `bytes` in an in-memory store.
    fn in_memory(bytes: &[u8]) -> Location {
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let path = ObjectPath::from("x/y.warc");
        block_on(store.put(&path, bytes.to_vec().into())).unwrap();
        Location::Remote(RemoteObject {
            store,
            url: Url::parse("memory:///x/y.warc").unwrap(),
            path,
            size: bytes.len() as u64,
        })
    }

    #[test]
    fn an_object_reads_and_seeks_by_windows_as_a_file_does() {
        use std::io::{Seek, SeekFrom};
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        let object = in_memory(&bytes);
        for window in [1, 7, 64, 999, 1000, 5000] {
            let mut reader = object.reader_by_windows_of(window).unwrap();
            let mut expected = Cursor::new(&bytes);
            // Reads of odd sizes across windows, seeks back and forward,
            // and past the end.
            let steps: [(SeekFrom, usize); 6] = [
                (SeekFrom::Start(0), 333),
                (SeekFrom::Current(-100), 50),
                (SeekFrom::Start(990), 40),
                (SeekFrom::Start(3), 1000),
                (SeekFrom::End(-1), 5),
                (SeekFrom::Start(2000), 5),
            ];
            for (to, want) in steps {
                assert_eq!(reader.seek(to).unwrap(), expected.seek(to).unwrap());
                let (mut got, mut wanted) = (vec![0; want], vec![0; want]);
                let n = read_fully(&mut reader, &mut got);
                let m = read_fully(&mut expected, &mut wanted);
                assert_eq!(got[..n], wanted[..m], "window {window}, {to:?}");
            }
        }
    }

    fn read_fully(reader: &mut impl Read, buf: &mut [u8]) -> usize {
        let mut n = 0;
        while n < buf.len() {
            match reader.read(&mut buf[n..]).unwrap() {
                0 => break,
                k => n += k,
            }
        }
        n
    }

    #[test]
    fn a_glob_takes_keys_and_the_objects_below_prefixes_it_matches_as_local_globs_do() {
        let pattern = glob::Pattern::new("nights/*/fp").unwrap();
        let takes = |key| glob_takes(&pattern, key, &["parquet"]);
        assert!(takes("nights/a/fp/part-0.parquet"));
        assert!(takes("nights/a/fp/sub/part-1.parquet"));
        assert!(!takes("nights/a/fp/_SUCCESS"));
        assert!(!takes("nights/a/fp/_tmp/part-0.parquet"));
        assert!(
            !takes("nights/a/b/fp/part-0.parquet"),
            "a * stays within one part"
        );
        let files = glob::Pattern::new("pairs/*").unwrap();
        assert!(glob_takes(&files, "pairs/part-0.parquet", &["parquet"]));
        assert!(!glob_takes(&files, "pairs/_SUCCESS", &["parquet"]));
        assert!(!glob_takes(&files, "pairs/.staging", &["parquet"]));
        assert!(
            glob_takes(&files, "pairs/x/part-0.parquet", &["parquet"]),
            "a matched prefix is a directory"
        );
    }

    #[test]
    fn urls_are_told_from_paths() {
        for url in [
            "s3://b/k",
            "gs://b/k",
            "az://c/k",
            "abfss://c@a/k",
            "https://h/f.parquet",
            "S3://b/k",
        ] {
            assert!(is_url(url), "{url}");
        }
        for path in [
            "/data/x.parquet",
            "data/s3://x",
            "file.parquet",
            "ftp://h/f",
            "C:/x",
        ] {
            assert!(!is_url(path), "{path}");
        }
    }
}
