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
//! `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`, implied by an `http://` endpoint,
//! and the AWS profile files; `GOOGLE_APPLICATION_CREDENTIALS`;
//! `AZURE_STORAGE_*`), as `object_store`'s builders and [`settings`] read it.
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
//!
//! Here: naming, listing and opening files, and the stores; in [`output`],
//! writing to a store; in [`reader`], crawl files as a stream; in
//! [`source`], Parquet files' bytes.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use futures::TryStreamExt;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::http::HttpBuilder;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};
use url::Url;

use crate::exec::parallel::lock;

mod output;
mod reader;
mod settings;
mod source;

pub(crate) use output::{stop_uploads, ExclusiveObject, OutputPrefix};
pub(crate) use reader::{is_read_failure, InputReader};
pub(crate) use source::{Fetch, RemoteSource, Source};

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

/// One digest of every file's last 64 KiB ([`Source::tail_digest`]), in
/// order: what the processes of a run compare, besides names and sizes,
/// to know they read the same files.
pub(crate) fn tails_digest<'a>(files: impl IntoIterator<Item = &'a Location>) -> Result<u64> {
    let files: Vec<Location> = files.into_iter().cloned().collect();
    let digests = open_all(&files, |file| {
        (file.open()?.tail_digest()).with_context(|| format!("{file}: cannot read its end"))
    })?;
    let bytes: Vec<u8> = digests.iter().flat_map(|d| d.to_le_bytes()).collect();
    Ok(xxhash_rust::xxh3::xxh3_64(&bytes))
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
        // The key's pattern as written: a URL would take a `?` for a query.
        let written = spec.split_once("://").map_or(spec, |(_, rest)| rest);
        let written = written.split_once('/').map_or("", |(_, key)| key);
        let pattern = glob::Pattern::new(written.trim_start_matches('/'))
            .with_context(|| format!("{spec}: invalid glob pattern"))?;
        let mut found = Vec::new();
        for meta in list(&store, &prefix, spec)? {
            if glob_takes(&pattern, meta.location.as_ref(), extensions) {
                found.push(object(meta.location, meta.size));
            }
        }
        if found.is_empty() {
            bail!(NoFiles(format!("{spec}: no objects match this pattern")));
        }
        return Ok(found);
    }
    // An empty object of the prefix's own name is most often a folder's
    // marker (ADLS Gen2 keeps one per directory, some S3 tools make them):
    // the objects under it are the input, and the object only if none are.
    // A role allowed to read only `prefix/*` may not read the name itself:
    // then the objects under it are the input, and the refusal is said if
    // there are none.
    let (mut marker, mut denied) = (None, None);
    match block_on(store.head(&key)) {
        Ok(meta) if http => return Ok(vec![object(meta.location, meta.size)]),
        Ok(meta) if meta.size == 0 => marker = Some(meta),
        Ok(meta) => {
            refuse_unfinished_parent(&store, &meta.location, spec)?;
            return Ok(vec![object(meta.location, meta.size)]);
        }
        Err(object_store::Error::NotFound { .. }) => {}
        Err(error @ object_store::Error::PermissionDenied { .. }) if !http => denied = Some(error),
        Err(error) => bail!("{spec}: {}", one_line(&error)),
    }
    if http {
        bail!(NoFiles(format!("{spec}: no such object")));
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
    if let (true, Some(meta)) = (found.is_empty(), marker) {
        refuse_unfinished_parent(&store, &meta.location, spec)?;
        return Ok(vec![object(meta.location, meta.size)]);
    }
    if let (true, Some(error)) = (found.is_empty(), denied) {
        bail!("{spec}: {}", one_line(&error));
    }
    if found.is_empty() {
        bail!(NoFiles(format!(
            "{spec}: no such object, and no .{} objects under it",
            extensions.join(" or .")
        )));
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

/// Whether a glob takes the object `key`, as a local glob takes files,
/// unless its wildcard reached a hidden part ([`reaches_hidden`]): the
/// pattern matches the key (a `*` stays within one part of it); or the
/// pattern matches a prefix of the key, a directory, which gives the
/// objects below it whose names end in one of `extensions`.
fn glob_takes(pattern: &glob::Pattern, key: &str, extensions: &[&str]) -> bool {
    if reaches_hidden(pattern.as_str(), key) {
        return false;
    }
    let options = glob::MatchOptions {
        require_literal_separator: true,
        ..glob::MatchOptions::new()
    };
    if pattern.matches_with(key, options) {
        return true;
    }
    let parts: Vec<&str> = key.split('/').collect();
    let name = parts.last().copied().unwrap_or("");
    extensions.iter().any(|e| has_extension(name, e))
        && (1..parts.len()).any(|depth| pattern.matches_with(&parts[..depth].join("/"), options))
}

/// Whether a glob's wildcard reached a hidden part of `path`: a part that
/// starts with `_` or `.` (a killed run's staging directory, Spark's
/// `_temporary`) which no part of the pattern names, that is, matches
/// without a leading wildcard. Depths are not compared: the glob library
/// drops a leading `./`, and `**` spans several parts.
pub(crate) fn reaches_hidden(pattern: &str, path: &str) -> bool {
    let named: Vec<glob::Pattern> = (pattern.split('/'))
        .filter(|part| !part.starts_with(['*', '?']))
        .filter_map(|part| glob::Pattern::new(part).ok())
        .collect();
    (path.split('/'))
        .filter(|part| part.starts_with(['_', '.']) && !matches!(*part, "." | ".."))
        .any(|part| !named.iter().any(|given| given.matches(part)))
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
    let authority = url.authority().to_ascii_lowercase();
    let (scheme, bucket) = match url.scheme() {
        "s3a" => ("s3", authority.as_str()),
        // `abfs(s)://container@account.dfs.core.windows.net/key` names the
        // container before the `@`.
        "azure" | "adl" | "abfs" | "abfss" => {
            let container = authority
                .split_once('@')
                .map_or(authority.as_str(), |c| c.0);
            ("az", container)
        }
        scheme => (scheme, authority.as_str()),
    };
    Some(format!("{scheme}://{bucket}/{key}"))
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

/// The first `bytes` bytes of a file (fewer if it is shorter), local or an
/// object; None if there is no such file.
pub(crate) fn read_head(spec: &str, bytes: u64) -> Result<Option<Bytes>> {
    if !is_url(spec) {
        let file = match File::open(spec) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            opened => opened.with_context(|| format!("{spec}: cannot open"))?,
        };
        let mut head = Vec::new();
        file.take(bytes)
            .read_to_end(&mut head)
            .with_context(|| format!("{spec}: cannot read"))?;
        return Ok(Some(head.into()));
    }
    let (_, store, key) = object_of(spec)?;
    let head = block_on(async {
        let size = store.head(&key).await?.size;
        store.get_range(&key, 0..size.min(bytes)).await
    });
    match head {
        Ok(head) => Ok(Some(head)),
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        Err(error) => bail!("{spec}: cannot read ({})", one_line(&error)),
    }
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
    refuse_unfinished(&listed, spec)?;
    Ok(listed)
}

/// Refuses a listing that holds a neardup output without `_SUCCESS` (see
/// [`unfinished_output`]), named by its URL.
fn refuse_unfinished(listed: &[object_store::ObjectMeta], spec: &str) -> Result<()> {
    let mut by_dir: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for meta in listed {
        if let Some((dir, name)) = meta.location.as_ref().rsplit_once('/') {
            by_dir.entry(dir).or_default().push(name);
        }
    }
    let unfinished = (by_dir.into_iter()).find(|(_, names)| is_unfinished(names.iter().copied()));
    let Some((dir, _)) = unfinished else {
        return Ok(());
    };
    let root = Url::parse(spec).map_or(String::new(), |url| {
        format!("{}://{}", url.scheme(), url.authority())
    });
    bail!(unfinished_output(&format!("{root}/{dir}")))
}

/// Whether the directory or prefix `dir` holds `_SUCCESS`: an output
/// committed as a whole (neardup's, Spark's).
pub(crate) fn is_committed(dir: &str) -> Result<bool> {
    if !is_url(dir) {
        return Ok(Path::new(dir).join(SUCCESS).is_file());
    }
    let (url, prefix) = parse_object_url(dir)?;
    let store = store_for(&url)?;
    match block_on(store.head(&prefix.join(SUCCESS))) {
        Ok(_) => Ok(true),
        Err(object_store::Error::NotFound { .. }) => Ok(false),
        Err(error) => bail!("{dir}/{SUCCESS}: {}", one_line(&error)),
    }
}

/// Refuses an object named alone in a neardup output without `_SUCCESS`,
/// as a listing of its prefix is refused.
fn refuse_unfinished_parent(
    store: &Arc<dyn ObjectStore>,
    object: &ObjectPath,
    spec: &str,
) -> Result<()> {
    let parts: Vec<_> = object.parts().collect();
    let Some((_, dir)) = parts.split_last() else {
        return Ok(());
    };
    let dir = ObjectPath::from_iter(dir.iter().cloned());
    let exists = |name: &str| match block_on(store.head(&dir.clone().join(name))) {
        Ok(_) => Ok(true),
        Err(object_store::Error::NotFound { .. }) => Ok(false),
        Err(error) => Err(anyhow::anyhow!("{spec}: {}", one_line(&error))),
    };
    let mut present = Vec::new();
    for name in OUTPUT_MARKERS.into_iter().chain([SUCCESS]) {
        if exists(name)? {
            present.push(name);
        }
    }
    if is_unfinished(present.into_iter()) {
        let shown = spec.rsplit_once('/').map_or(spec, |(dir, _)| dir);
        bail!(unfinished_output(shown));
    }
    Ok(())
}

/// A stage's summary, written into its output just before `_SUCCESS`.
pub(crate) const SUMMARY: &str = "_summary.json";

/// The refusal of an input directory `dir` that holds a summary but no
/// `_SUCCESS`: a neardup output whose stage failed, or is being written
/// again, so its parts may be a mix or a part.
pub(crate) fn unfinished_output(dir: &str) -> String {
    format!("{dir}: a neardup output without {SUCCESS}: the stage writing it did not finish; run it again")
}

/// An `object_store` error on one line: its messages nest the HTTP
/// client's, which may hold line breaks.
fn one_line(error: &object_store::Error) -> String {
    let text = error
        .to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    with_credentials_hint(without_xml_body(&text))
}

/// `text` led by what to set when it is the instance metadata endpoint's
/// failure: S3 asks it for a role's keys only when the environment and
/// the profile files give none, so on a laptop it means no credentials,
/// and the endpoint's address alone would not say so.
fn with_credentials_hint(text: String) -> String {
    let asked_metadata = ["/latest/api/token", "/latest/meta-data/"]
        .iter()
        .any(|path| text.contains(path));
    if !asked_metadata {
        return text;
    }
    format!(
        "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE \
         (~/.aws/credentials); without them a pod's or instance's role is asked for, and \
         the instance metadata endpoint failed ({text})"
    )
}

/// `text` with a store's XML error body (S3's, Azure's) cut to its code and
/// message: the request and host ids, the XML declaration and its tags say
/// nothing to the reader of one line.
fn without_xml_body(text: &str) -> String {
    let Some(start) = text.find("<?xml").or_else(|| text.find("<Error>")) else {
        return text.to_string();
    };
    let end = text
        .rfind("</Error>")
        .map_or(text.len(), |at| at + "</Error>".len());
    let body = &text[start..end];
    let element = |name: &str| {
        let open = format!("<{name}>");
        let from = body.find(&open)? + open.len();
        let to = body[from..].find(&format!("</{name}>"))? + from;
        Some(body[from..to].to_string())
    };
    let message = element("Message").map(|m| match m.find(" RequestId:") {
        // Azure's message goes on with the request's id and time.
        Some(at) => m[..at].to_string(),
        None => m,
    });
    let said = match (element("Code"), message) {
        (Some(code), Some(message)) => format!("{code}: {message}"),
        (Some(code), None) => code,
        (None, Some(message)) => message,
        (None, None) => return text.to_string(),
    };
    format!("{}{said}{}", &text[..start], &text[end..])
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
        "s3" | "s3a" => settings::s3_from_env()?
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
        _ => settings::azure_from_env()?
            .with_url(url.as_str())
            .build()
            .map(|s| Arc::new(s) as _),
    };
    let store = built.map_err(|e| {
        let hint = setup_hint(url.scheme());
        anyhow::anyhow!("{root}: cannot set up ({}){hint}", one_line(&e))
    })?;
    stores.insert(root, store.clone());
    Ok(store)
}

/// Where a store of `scheme` takes its account and credentials from, for
/// the line of a store that could not be set up.
fn setup_hint(scheme: &str) -> &'static str {
    match scheme {
        "s3" | "s3a" => "; S3 reads AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION and AWS_ENDPOINT_URL, or the AWS profile files",
        "gs" => "; Google Cloud Storage reads GOOGLE_APPLICATION_CREDENTIALS",
        "http" | "https" => "",
        _ => "; Azure reads AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY, or AZURE_STORAGE_CONNECTION_STRING, for URLs az://CONTAINER/PATH or abfss://CONTAINER@ACCOUNT.dfs.core.windows.net/PATH",
    }
}

/// An input that names no file (yet): an empty directory or prefix, a
/// glob matching nothing, a path not there. A job's own corpus is
/// allowed to be so before its first append.
#[derive(Debug)]
pub(crate) struct NoFiles(pub(crate) String);

impl std::fmt::Display for NoFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NoFiles {}

/// Marker written last into a complete output, a directory or a prefix.
pub(crate) const SUCCESS: &str = "_SUCCESS";

/// An append stage's list of the shards its corpus batch copies.
pub(crate) const SOURCES: &str = "_sources.json";

/// Marker written first into an output in an object store, where parts
/// go under their final names as they are done, and removed once
/// `_SUCCESS` is in: parts beside it are a run's that is still writing
/// or was killed.
pub(crate) const UNFINISHED: &str = "_UNFINISHED";

/// The lock of a run writing an output in an object store, inside its
/// prefix: a role allowed to write only `out/*` can take it. It is not
/// part of the output: a prefix holding only a lock does not exist.
pub(crate) const LOCK: &str = "_neardup-lock";

/// Files only a neardup output holds: a directory or prefix with one of
/// them and without `_SUCCESS` is an output whose stage did not finish.
pub(crate) const OUTPUT_MARKERS: [&str; 3] = [SUMMARY, SOURCES, UNFINISHED];

/// Whether a directory or prefix holding a file of each of `names` is a
/// neardup output whose stage did not finish.
pub(crate) fn is_unfinished<'a>(names: impl Iterator<Item = &'a str>) -> bool {
    let (mut marked, mut succeeded) = (false, false);
    for name in names {
        marked |= OUTPUT_MARKERS.contains(&name);
        succeeded |= name == SUCCESS;
    }
    marked && !succeeded
}

/// Whether a file name ends in `.` and `extension` (which may itself hold
/// dots, as `warc.gz`).
pub(crate) fn has_extension(name: &str, extension: &str) -> bool {
    name.strip_suffix(extension)
        .is_some_and(|stem| stem.ends_with('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_endpoints_failure_says_credentials_are_missing() {
        let imds =
            "Generic S3 error: Error performing PUT http://169.254.169.254/latest/api/token \
                    in 1ms - Server returned non-2xx status code: 403 Forbidden";
        let told = with_credentials_hint(imds.to_string());
        assert!(
            told.starts_with("no AWS credentials: set AWS_ACCESS_KEY_ID"),
            "{told}"
        );
        assert!(told.ends_with(&format!("({imds})")), "{told}");
        let other = "Generic S3 error: Error performing GET http://s3.local/b/k - 403 Forbidden";
        assert_eq!(with_credentials_hint(other.to_string()), other);
    }

    #[test]
    fn a_stores_xml_error_body_is_cut_to_its_code_and_message() {
        let s3 = "cannot list (Server returned non-2xx status code: 404 Not Found: <?xml version=\"1.0\" encoding=\"utf-8\"?> <Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message><BucketName>b</BucketName><RequestId>nt8X</RequestId><HostId>9Gjj=</HostId></Error>)";
        assert_eq!(
            without_xml_body(s3),
            "cannot list (Server returned non-2xx status code: 404 Not Found: NoSuchBucket: The specified bucket does not exist)"
        );
        let azure = "404 Not Found: <?xml version=\"1.0\" encoding=\"utf-8\"?> <Error> <Code>ContainerNotFound</Code> <Message>The specified container does not exist. RequestId:5f2a Time:2026-12-06T03:40:00.000Z</Message> </Error>";
        assert_eq!(
            without_xml_body(azure),
            "404 Not Found: ContainerNotFound: The specified container does not exist."
        );
        let plain = "connection refused";
        assert_eq!(without_xml_body(plain), plain);
    }
    use std::io::{Cursor, Read};

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
            !takes("nights/.a.neardup-staging/fp/part-0.parquet"),
            "a * takes no hidden part"
        );
        for (pattern, path) in [
            ("./d/_y/*.parquet", "d/_y/p.parquet"),
            ("d/**/.x/*.parquet", "d/.x/p.parquet"),
            ("d//_y/*.parquet", "d/_y/p.parquet"),
            ("d/[_]y/*.parquet", "d/_y/p.parquet"),
            ("../d/*", "../d/p.parquet"),
        ] {
            assert!(!reaches_hidden(pattern, path), "{pattern} names {path}");
        }
        for (pattern, path) in [
            ("./*/*.parquet", "n2/.n2.neardup-staging/p.parquet"),
            ("./*/*.parquet", ".n2.neardup-staging/p.parquet"),
            ("d/**/*.parquet", "d/a/_temporary/p.parquet"),
        ] {
            assert!(reaches_hidden(pattern, path), "{pattern} reaches {path}");
        }
        let hidden = glob::Pattern::new("nights/.a*/fp").unwrap();
        assert!(
            glob_takes(&hidden, "nights/.a/fp/part-0.parquet", &["parquet"]),
            "a hidden part the pattern names"
        );
        assert!(
            glob_takes(&files, "pairs/x/part-0.parquet", &["parquet"]),
            "a matched prefix is a directory"
        );
    }

    #[test]
    fn one_place_has_one_spelling_whatever_the_url_s_alias() {
        let place = |spec| object_place(spec).unwrap();
        assert_eq!(place("s3a://Crawl/in/./fp/"), place("s3://crawl/in/fp"));
        assert_eq!(place("S3://crawl/in/x/../fp"), "s3://crawl/in/fp");
        for azure in [
            "azure://crawl/in/fp",
            "adl://crawl/in/fp",
            "abfs://crawl/in/fp",
            "abfss://crawl@account.dfs.core.windows.net/in/fp",
        ] {
            assert_eq!(place(azure), "az://crawl/in/fp", "{azure}");
        }
        assert_ne!(place("s3://crawl/in/fp"), place("gs://crawl/in/fp"));
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
