//! The `fingerprint` dataflow on timely: every file is read by one worker,
//! and its documents are fingerprinted by all of them, so that one large
//! WARC (a Common Crawl file is about 1 GB) keeps every core busy.
//!
//! ```text
//!   read (file i's worker, by a reader thread: batches of documents)
//!     --to the worker with the fewest in flight--> fingerprint (every worker)
//!     --back to the file's worker--> write shard i once all its rows are in
//!     --> commit (see [`crate::io::commit`])
//! ```
//!
//! A batch's timestamp is its file's index, so a file's shard is written as
//! soon as the frontier passes it, its rows put back in reading order: the
//! shard is the same, byte for byte, for any number of workers, whichever
//! worker fingerprinted each batch. Reading is throttled: a worker keeps at
//! most a few batches per peer in flight, so memory holds a few megabytes of
//! text per worker however fast the reader.
//!
//! A batch holds about 256 kB of text (or 1,024 documents), and a reading
//! worker keeps at most 8 batches per worker in flight (16 to 128 in all).
//! A worker slowed (by the machine, by long pages, or the reading worker
//! by its reading and writing) is simply dealt fewer batches.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};

use crate::io::storage::Location;
use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::operator::source;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::Capability;
use timely::dataflow::{Scope, Stream};
use timely::scheduling::{Activator, SyncActivator};

use crate::exec::runtime::Failure;
use crate::fingerprint::crawl::html;
use crate::fingerprint::crawl::http::HttpBodies;
use crate::fingerprint::crawl::{read_file, BadRecord, Document, Format, Record, TextFields};
use crate::fingerprint::progress::TextCounters;
use crate::fingerprint::scheme::Scheme;
use crate::fingerprint::simhash::{fingerprint_page, fingerprint_with};
use crate::fingerprint::summary::FileResults;
use crate::io::commit::WorkerOutcome;
use crate::io::parquet::output::DocumentRows;

/// A batch is sent on once its text reaches this many bytes...
const BATCH_BYTES: usize = 1 << 18;
/// ...or it holds this many documents.
const BATCH_DOCUMENTS: usize = 1024;

/// An input file: its index (its shard's number), path, format and size.
pub(crate) type InputFile = (usize, Location, Format, u64);

/// Consecutive documents of one file: the `seq`-th batch read from it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct DocumentBatch {
    pub(crate) file: u32,
    pub(crate) seq: u32,
    /// The worker it is sent to ([`InFlight::deal`]).
    pub(crate) to: u32,
    pub(crate) documents: Vec<Document>,
}

/// The rows of one [`DocumentBatch`], in its order.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct RowBatch {
    pub(crate) file: u32,
    pub(crate) seq: u32,
    /// The worker that fingerprinted it: its batch's [`DocumentBatch::to`].
    pub(crate) by: u32,
    pub(crate) rows: DocumentRows,
    pub(crate) counts: PageCounts,
}

/// Counts of a batch's documents, or a file's.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub(crate) struct PageCounts {
    pub(crate) html_pages: u64,
    /// HTML pages whose main content was empty.
    pub(crate) fallbacks: u64,
    /// Documents with nothing to fingerprint (no text, or none the
    /// features read), left out: every one would get fingerprint 0, and
    /// empty pages of different sites would pair as copies.
    pub(crate) empty: u64,
}

impl PageCounts {
    fn add(&mut self, other: PageCounts) {
        self.html_pages += other.html_pages;
        self.fallbacks += other.fallbacks;
        self.empty += other.empty;
    }
}

/// What reading a file found besides its documents.
#[derive(Debug, Default)]
pub(crate) struct FileRead {
    pub(crate) bad: Vec<BadRecord>,
    pub(crate) skipped: u64,
    /// HTML pages decoded from another encoding than UTF-8, by its name.
    pub(crate) charsets: BTreeMap<String, u64>,
    /// Of those, pages that declared no encoding: it was guessed.
    pub(crate) charset_guesses: u64,
    /// Batches its documents were sent in.
    pub(crate) batches: u32,
    /// Bytes of its documents as read, uncompressed and decoded (an HTML
    /// page's markup included).
    pub(crate) document_bytes: u64,
}

impl FileRead {
    fn count_charset(&mut self, document: &Document) {
        if let Some(charset) = document.charset {
            *self.charsets.entry(charset.name().to_string()).or_default() += 1;
            self.charset_guesses += u64::from(charset.guessed);
        }
    }
}

/// What the reader thread hands the dataflow.
enum Reading {
    Batch(u32, Vec<Document>),
    /// A file read to its end, or the error that stopped it.
    Done(u32, Result<FileRead>),
}

/// Files read to their end on a worker, for its shard writer.
pub(crate) type FilesRead = Rc<RefCell<BTreeMap<u32, FileRead>>>;

/// Batches a reading worker has in flight to each worker. A new batch goes
/// to the worker with the fewest, so one that falls behind (its core slowed
/// by the VM, a batch of long pages, or the reading and writing the reading
/// worker does besides) is sent less. Dealt in turn, the reading worker
/// would be busy all the time and the others would wait on it.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    batches: Vec<usize>,
    /// Where the search for the fewest starts: after the last worker dealt
    /// to, so that workers with as few take turns.
    next: usize,
}

impl InFlight {
    pub(crate) fn new(peers: usize) -> InFlight {
        InFlight {
            batches: vec![0; peers.max(1)],
            next: 0,
        }
    }

    /// Batches in flight to every worker.
    pub(crate) fn total(&self) -> usize {
        self.batches.iter().sum()
    }

    /// The worker the next batch goes to, counted as in flight there.
    pub(crate) fn deal(&mut self) -> usize {
        let peers = self.batches.len();
        let to = (self.next..self.next + peers)
            .map(|p| p % peers)
            .min_by_key(|&p| self.batches[p])
            .unwrap_or(0);
        self.batches[to] += 1;
        self.next = (to + 1) % peers;
        to
    }

    /// A batch back from worker `by`.
    pub(crate) fn returned(&mut self, by: usize) {
        if let Some(n) = self.batches.get_mut(by) {
            *n = n.saturating_sub(1);
        }
    }
}

/// What the operators of one worker share.
pub(crate) struct ReadState {
    pub(crate) report: Rc<RefCell<WorkerOutcome<FileResults>>>,
    pub(crate) failure: Arc<Failure>,
    pub(crate) read: FilesRead,
    /// Batches sent and not yet back as rows.
    pub(crate) in_flight: Rc<RefCell<InFlight>>,
    /// Wakes the reading operator when rows come back.
    pub(crate) wake_reader: Rc<RefCell<Option<Activator>>>,
}

/// Reads this worker's `files` (in order) on a thread of its own and gives
/// their documents in batches, each at its file's index as timestamp; no
/// more than `window` batches are in flight at once.
pub(crate) fn read_documents<'scope>(
    scope: Scope<'scope, u64>,
    files: Vec<InputFile>,
    fields: TextFields,
    http: HttpBodies,
    counters: Arc<TextCounters>,
    window: usize,
    state: &ReadState,
) -> Stream<'scope, u64, Vec<DocumentBatch>> {
    let (report, failure) = (state.report.clone(), state.failure.clone());
    let (read, in_flight, wake) = (
        state.read.clone(),
        state.in_flight.clone(),
        state.wake_reader.clone(),
    );
    source::<_, CapacityContainerBuilder<Vec<DocumentBatch>>, _, _>(
        scope,
        "ReadDocuments",
        move |capability, info| {
            *wake.borrow_mut() = Some(scope.activator_for(info.address.clone()));
            let activator = scope.worker().sync_activator_for(info.address.to_vec());
            let mut capability = first_capability(capability, &files);
            let mut reading = capability
                .is_some()
                .then(|| spawn_reader(files.clone(), fields, http, counters, activator));
            let next_file =
                move |done: u32| files.iter().find(|f| f.0 > done as usize).map(|f| f.0);
            let mut seq = 0u32;
            move |output| {
                let Some(receiver) = reading.as_ref() else {
                    return;
                };
                let stop = |reading: &mut Option<Receiver<Reading>>, cap: &mut Option<_>| {
                    *reading = None;
                    *cap = None;
                };
                if failure.happened() {
                    return stop(&mut reading, &mut capability);
                }
                while in_flight.borrow().total() < window {
                    let Some(held) = capability.as_mut() else {
                        return stop(&mut reading, &mut capability);
                    };
                    match receiver.try_recv() {
                        Ok(Reading::Batch(file, documents)) => {
                            let to = in_flight.borrow_mut().deal() as u32;
                            output.session(held).give(DocumentBatch {
                                file,
                                seq,
                                to,
                                documents,
                            });
                            seq += 1;
                        }
                        Ok(Reading::Done(file, Ok(mut done))) => {
                            done.batches = seq;
                            seq = 0;
                            read.borrow_mut().insert(file, done);
                            match next_file(file) {
                                Some(next) => held.downgrade(&(next as u64)),
                                None => return stop(&mut reading, &mut capability),
                            }
                        }
                        Ok(Reading::Done(_, Err(error))) => {
                            report.borrow_mut().fail(error, &failure);
                            return stop(&mut reading, &mut capability);
                        }
                        Err(TryRecvError::Empty) => return,
                        Err(TryRecvError::Disconnected) => {
                            let error =
                                anyhow!("the reader thread stopped before the end of its files");
                            report.borrow_mut().fail(error, &failure);
                            return stop(&mut reading, &mut capability);
                        }
                    }
                }
            }
        },
    )
}

/// The source's capability, moved to its first file (none if it has none).
fn first_capability(capability: Capability<u64>, files: &[InputFile]) -> Option<Capability<u64>> {
    let first = files.first()?.0 as u64;
    let mut capability = capability;
    capability.downgrade(&first);
    Some(capability)
}

/// Starts the thread that reads `files` in order into batches; it stops
/// when the dataflow drops the receiver.
fn spawn_reader(
    files: Vec<InputFile>,
    fields: TextFields,
    http: HttpBodies,
    counters: Arc<TextCounters>,
    activator: SyncActivator,
) -> Receiver<Reading> {
    // The reading worker forwards batches only between batches of its own
    // to fingerprint, so the reader keeps up to 8 (2 MiB of text) ready: with
    // fewer, the cores idle while many small pages are read.
    let (sender, receiver) = sync_channel(8);
    std::thread::Builder::new()
        .name("neardup:read".into())
        .spawn(move || {
            for (index, path, format, bytes) in files {
                let file = index as u32;
                let give =
                    &mut |documents| send(&sender, &activator, Reading::Batch(file, documents));
                let outcome =
                    read_into_batches(&path, format, bytes, &fields, http, &counters, give);
                let failed = outcome.is_err();
                if send(&sender, &activator, Reading::Done(file, outcome)).is_err() || failed {
                    return;
                }
            }
        })
        .map(|_| ())
        .unwrap_or_else(|error| tracing::error!("cannot start a reader thread: {error}"));
    receiver
}

fn send(sender: &SyncSender<Reading>, activator: &SyncActivator, reading: Reading) -> Result<()> {
    sender
        .send(reading)
        .map_err(|_| anyhow!("the job stopped reading"))?;
    activator
        .activate()
        .map_err(|_| anyhow!("the job stopped reading"))
}

/// The most bad records of a file logged one by one; `_summary.json`
/// counts them all.
const LOGGED_BAD_RECORDS: usize = 10;

/// A file's bad records as warnings: none until one of its records reads
/// (a file none of whose do is one line at the commit, see
/// [`crate::fingerprint::summary::refuse_unreadable`], not thousands), then
/// the first [`LOGGED_BAD_RECORDS`], and a line saying the rest are not.
#[derive(Default)]
struct BadRecordWarnings {
    readable: bool,
    logged: usize,
}

impl BadRecordWarnings {
    /// A record of the file read: the bad ones before it are logged.
    fn file_is_readable(&mut self, path: &Location, bad: &[BadRecord]) {
        if !self.readable {
            self.readable = true;
            for record in bad {
                self.log(path, record);
            }
        }
    }

    /// `bad`'s last record is new.
    fn bad_record(&mut self, path: &Location, bad: &[BadRecord]) {
        if let (true, Some(record)) = (self.readable, bad.last()) {
            self.log(path, record);
        }
    }

    fn log(&mut self, path: &Location, record: &BadRecord) {
        if self.logged < LOGGED_BAD_RECORDS {
            tracing::warn!(
                "{}: bad record at offset {}: {}",
                path,
                record.offset,
                record.reason
            );
        } else if self.logged == LOGGED_BAD_RECORDS {
            tracing::warn!("{path}: more bad records, not logged; _summary.json counts them");
        }
        self.logged += 1;
    }
}

/// Reads one file, giving its documents in batches to `give`.
fn read_into_batches(
    path: &Location,
    format: Format,
    bytes: u64,
    fields: &TextFields,
    http: HttpBodies,
    counters: &TextCounters,
    give: &mut dyn FnMut(Vec<Document>) -> Result<()>,
) -> Result<FileRead> {
    let mut found = FileRead::default();
    let (mut batch, mut batch_bytes) = (Vec::new(), 0);
    let mut reported = 0u64;
    let mut warnings = BadRecordWarnings::default();
    read_file(path, format, fields, http, &mut |record, position| {
        if !matches!(record, Record::Bad(_)) {
            warnings.file_is_readable(path, &found.bad);
        }
        match record {
            Record::Document(document) => {
                found.count_charset(&document);
                found.document_bytes += document.text.len() as u64;
                batch_bytes += document.text.len();
                batch.push(document);
                if batch_bytes >= BATCH_BYTES || batch.len() >= BATCH_DOCUMENTS {
                    give(std::mem::take(&mut batch))?;
                    batch_bytes = 0;
                }
            }
            Record::Bad(record) => {
                found.bad.push(record);
                warnings.bad_record(path, &found.bad);
            }
            Record::Skipped => found.skipped += 1,
        }
        let position = position.min(bytes);
        if position > reported {
            counters
                .bytes
                .fetch_add(position - reported, Ordering::Relaxed);
            reported = position;
        }
        Ok(())
    })?;
    if !batch.is_empty() {
        give(batch)?;
    }
    counters
        .bytes
        .fetch_add(bytes - reported, Ordering::Relaxed);
    Ok(found)
}

/// Fingerprints every batch on the worker it was dealt to, and sends the
/// rows back to the file's worker.
///
/// One batch per activation: the reader's worker also feeds the others and
/// takes their rows back (its source and shard writer), and they run only
/// between this operator's activations. Fingerprinting all its queued
/// batches at once, it would leave the other workers idle, waiting for
/// more.
pub(crate) fn fingerprint_batches<'scope>(
    batches: Stream<'scope, u64, Vec<DocumentBatch>>,
    scheme: Scheme,
    counters: Arc<TextCounters>,
) -> Stream<'scope, u64, Vec<RowBatch>> {
    let scope = batches.scope();
    batches.unary::<CapacityContainerBuilder<Vec<RowBatch>>, _, _, _>(
        Exchange::new(|b: &DocumentBatch| u64::from(b.to)),
        "Fingerprint",
        move |_capability, info| {
            let activator = scope.activator_for(info.address);
            let mut queue: VecDeque<(Capability<u64>, DocumentBatch)> = VecDeque::new();
            move |input, output| {
                input.for_each(|time, data| {
                    if let Some(capability) = time.retain_least(0) {
                        queue.extend(data.drain(..).map(|batch| (capability.clone(), batch)));
                    }
                });
                if let Some((capability, batch)) = queue.pop_front() {
                    let rows = fingerprint_batch(batch, &scheme);
                    counters
                        .documents
                        .fetch_add(rows.rows.ids.len() as u64, Ordering::Relaxed);
                    output.session(&capability).give(rows);
                }
                if !queue.is_empty() {
                    activator.activate();
                }
            }
        },
    )
}

/// The rows of a batch's documents, HTML pages by the text `scheme` chooses.
fn fingerprint_batch(batch: DocumentBatch, scheme: &Scheme) -> RowBatch {
    let mut rows = DocumentRows::default();
    let mut counts = PageCounts::default();
    for mut document in batch.documents {
        scheme.target_uri.apply(&mut document);
        let (f, canonical, main_content) = match document.html {
            true => {
                let page = html::page_text(&document.text, scheme.html);
                counts.html_pages += 1;
                counts.fallbacks += u64::from(page.fell_back);
                let main_content = match scheme.html {
                    html::PageText::Main(_) => Some(!page.fell_back),
                    html::PageText::All => None,
                };
                let canonical = html::canonical_of(
                    &page.canonicals,
                    &document.header_canonicals,
                    page.base.as_deref(),
                    document.url.as_deref(),
                );
                let f =
                    fingerprint_page(&page.text, &page.headings, &scheme.simhash, scheme.sketch);
                (f, canonical, main_content)
            }
            false => (
                fingerprint_with(&document.text, &scheme.simhash, scheme.sketch),
                None,
                None,
            ),
        };
        if f.n_features == 0 {
            counts.empty += 1;
            continue;
        }
        rows.canonical_urls.push(canonical);
        rows.main_content.push(main_content);
        rows.sketches.extend(f.sketch);
        rows.ids.push(document.id);
        rows.urls.push(document.url);
        rows.simhashes.push(f.simhash);
        rows.n_features.push(f.n_features);
        rows.n_chars.push(f.n_chars);
        rows.fetch_times.push(document.fetch_time);
        rows.spans.push(document.span);
    }
    RowBatch {
        file: batch.file,
        seq: batch.seq,
        by: batch.to,
        rows,
        counts,
    }
}

/// A file whose rows are all in: its shard is written by `write`, which
/// adds the file's result to the worker's report.
pub(crate) type WriteShard = Box<dyn FnMut(u32, FileRead, Vec<RowBatch>) -> Result<()>>;

/// At each file's worker: gathers the file's rows and, once the frontier
/// has passed the file, calls `write` with them in reading order; once all
/// files are written, sends the worker's report on.
pub(crate) fn write_shards<'scope>(
    rows: Stream<'scope, u64, Vec<RowBatch>>,
    peers: usize,
    state: &ReadState,
    mut write: WriteShard,
) -> Stream<'scope, u64, Vec<WorkerOutcome<FileResults>>> {
    let (report, failure, read) = (
        state.report.clone(),
        state.failure.clone(),
        state.read.clone(),
    );
    let (in_flight, wake) = (state.in_flight.clone(), state.wake_reader.clone());
    rows.unary_frontier::<CapacityContainerBuilder<Vec<WorkerOutcome<FileResults>>>, _, _, _>(
        Exchange::new(move |b: &RowBatch| u64::from(b.file) % peers as u64),
        "WriteShards",
        move |capability, _info| {
            let mut capability = Some(capability);
            let mut pending: BTreeMap<u32, Vec<RowBatch>> = BTreeMap::new();
            move |(input, frontier), output| {
                let mut back = false;
                input.for_each(|_time, data| {
                    for batch in data.drain(..) {
                        back = true;
                        in_flight.borrow_mut().returned(batch.by as usize);
                        pending.entry(batch.file).or_default().push(batch);
                    }
                });
                if back {
                    if let Some(wake) = wake.borrow().as_ref() {
                        wake.activate();
                    }
                }
                loop {
                    let next = read.borrow().keys().next().copied();
                    let Some(file) = next.filter(|&f| !frontier.less_equal(&u64::from(f))) else {
                        break;
                    };
                    let found = read.borrow_mut().remove(&file).unwrap_or_default();
                    let batches = pending.remove(&file).unwrap_or_default();
                    let failed = report.borrow().error.is_some() || failure.happened();
                    if !failed {
                        if let Err(error) = write(file, found, batches) {
                            report.borrow_mut().fail(error, &failure);
                        }
                    }
                }
                if frontier.is_empty() {
                    if let Some(capability) = capability.take() {
                        output.session(&capability).give(report.borrow().clone());
                    }
                }
            }
        },
    )
}

/// A file's rows in reading order, checking that every batch came back.
pub(crate) fn in_reading_order(
    found: &FileRead,
    mut batches: Vec<RowBatch>,
) -> Result<(DocumentRows, PageCounts)> {
    batches.sort_unstable_by_key(|b| b.seq);
    let complete = batches.len() == found.batches as usize
        && batches.iter().enumerate().all(|(i, b)| b.seq as usize == i);
    if !complete {
        bail!(
            "{} of {} batches of rows came back (internal error)",
            batches.len(),
            found.batches
        );
    }
    let mut rows = DocumentRows::default();
    let mut counts = PageCounts::default();
    for batch in batches {
        rows.append(batch.rows);
        counts.add(batch.counts);
    }
    Ok((rows, counts))
}

#[cfg(test)]
mod tests {
    use super::InFlight;

    #[test]
    fn batches_go_to_the_worker_with_fewest_in_flight_in_turn_on_ties() {
        let mut in_flight = InFlight::new(3);
        let dealt: Vec<usize> = (0..6).map(|_| in_flight.deal()).collect();
        assert_eq!(dealt, vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(in_flight.total(), 6);
        // Worker 1 returns both of its batches, worker 2 one: worker 0,
        // slower, gets none until the others have as many in flight.
        in_flight.returned(1);
        in_flight.returned(1);
        in_flight.returned(2);
        let dealt: Vec<usize> = (0..4).map(|_| in_flight.deal()).collect();
        assert_eq!(dealt, vec![1, 2, 1, 2]);
        assert_eq!(in_flight.deal(), 0);
        assert_eq!(in_flight.total(), 8);
        // A batch from no such worker, or one not in flight, counts nothing.
        in_flight.returned(7);
        let mut empty = InFlight::new(2);
        empty.returned(0);
        assert_eq!((in_flight.total(), empty.total()), (8, 0));
    }
}
