//! Writing `cluster`'s parts: the rows of `clusters/` and `drop/`, merged
//! from sorted runs, to Parquet files sorted by id (and `drop/` again with
//! its pages' URLs), through the Parquet writer of [`crate::io::parquet::output`].
//! [`PartWriter`] is the dataflow's last stage: the parts one worker writes,
//! each from the runs of every worker that may give it rows.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Result};
use arrow_array::{ArrayRef, Int16Array, Int64Array, Int8Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};

use crate::cluster::drop_evidence::{EvidenceSources, PlainPart};
use crate::cluster::drop_policy::{distances_of, Grounds};
use crate::cluster::keep_order::KeptByNames;
use crate::cluster::part_runs::{
    owner_run, router_run, DropRow, MemberRow, Row, RowKind, Rows, RunMerge, RunSlice,
};
use crate::cluster::summary::ClusterTotals;
use crate::io::commit::FinalStage;
use crate::io::parquet::output::{FileLayout, OpenParquet, KEPT_BY, PART_CHUNK_ROWS};
use crate::io::parquet::WIDE_DISTANCE;
use crate::io::staging::part_name;

/// A row of a `cluster` output part: an id, another page's id and a
/// third column, gathered column by column as rows come (each column's
/// buffer then becomes its Arrow array without a copy), a key named by
/// `names`.
pub(crate) trait PartRow: Row + Copy {
    type Third;
    fn fields() -> Vec<Field>;
    fn split(self) -> (i64, i64, Self::Third);
    fn columns(
        ids: Vec<i64>,
        others: Vec<i64>,
        thirds: Vec<Self::Third>,
        names: &KeptByNames,
    ) -> Vec<ArrayRef>;
}

/// `clusters/`: `id`, `cluster_id` (the representative), `cluster_size`.
impl PartRow for MemberRow {
    type Third = i64;

    fn fields() -> Vec<Field> {
        ["id", "cluster_id", "cluster_size"]
            .map(|name| Field::new(name, DataType::Int64, false))
            .to_vec()
    }

    fn split(self) -> (i64, i64, i64) {
        (self.0, self.1, i64::from(self.2))
    }

    fn columns(
        ids: Vec<i64>,
        clusters: Vec<i64>,
        sizes: Vec<i64>,
        _: &KeptByNames,
    ) -> Vec<ArrayRef> {
        vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(Int64Array::from(clusters)),
            Arc::new(Int64Array::from(sizes)),
        ]
    }
}

/// `drop/`: `id` to drop, `keep_id` the page kept in its place,
/// `distance` between the two when they are a pair (null under
/// `--drop-policy component`, where they may only be chained),
/// `wide_distance` when the pairs are `match --verify`'s (else null), and
/// `kept_by`, the first key of `--keep-by` that ranks the kept page first
/// (`id` if none does).
impl PartRow for DropRow {
    type Third = Grounds;

    fn fields() -> Vec<Field> {
        vec![
            Field::new("id", DataType::Int64, false),
            Field::new("keep_id", DataType::Int64, false),
            Field::new("distance", DataType::Int8, true),
            Field::new(WIDE_DISTANCE, DataType::Int16, true),
            Field::new(KEPT_BY, DataType::Utf8, false),
        ]
    }

    fn split(self) -> (i64, i64, Grounds) {
        self
    }

    fn columns(
        ids: Vec<i64>,
        keeps: Vec<i64>,
        grounds: Vec<Grounds>,
        names: &KeptByNames,
    ) -> Vec<ArrayRef> {
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(Int64Array::from(keeps)),
        ];
        columns.extend(grounds_columns(&grounds, names));
        columns
    }
}

/// The `distance`, `wide_distance` and `kept_by` columns of drops on
/// `grounds`.
fn grounds_columns(grounds: &[Grounds], names: &KeptByNames) -> [ArrayRef; 3] {
    let pairs = || grounds.iter().map(|g| g.near.map(distances_of));
    let distances: Int8Array = pairs().map(|d| d.map(|(d, _)| d as i8)).collect();
    let wide: Int16Array = pairs()
        .map(|d| d.and_then(|(_, w)| w).map(|w| w as i16))
        .collect();
    let kept_by = grounds.iter().map(|g| names.name(g.kept_by));
    let kept_by = StringArray::from_iter_values(kept_by);
    [Arc::new(distances), Arc::new(wide), Arc::new(kept_by)]
}

/// The columns of a chunk of a part's rows.
struct ChunkColumns<T: PartRow> {
    ids: Vec<i64>,
    others: Vec<i64>,
    thirds: Vec<T::Third>,
}

impl<T: PartRow> ChunkColumns<T> {
    fn with_capacity(rows: usize) -> ChunkColumns<T> {
        ChunkColumns {
            ids: Vec::with_capacity(rows),
            others: Vec::with_capacity(rows),
            thirds: Vec::with_capacity(rows),
        }
    }

    fn push(&mut self, row: T) {
        let (id, other, third) = row.split();
        self.ids.push(id);
        self.others.push(other);
        self.thirds.push(third);
    }
}

/// A `cluster` output part written as its runs come: the rows a
/// [`RunMerge`] can give are handed to Parquet [`PART_CHUNK_ROWS`] at a
/// time (the same calls, so the same bytes, whenever the rows come),
/// checked to be in strictly increasing id order, to a temporary name
/// renamed into place by [`Self::finish`].
pub(crate) struct SortedPart<T: PartRow> {
    path: PathBuf,
    /// Plain, uncompressed and never uploaded: a part read again by the
    /// job ([`Self::new_local`]).
    local: bool,
    open: Option<OpenParquet>,
    last: Option<i64>,
    written: u64,
    /// `kept_by`'s names (for `drop/`).
    names: Arc<KeptByNames>,
    row: std::marker::PhantomData<T>,
}

impl<T: PartRow> SortedPart<T> {
    /// A part the job reads again before the output is placed (plain,
    /// uncompressed, never uploaded to an object store).
    pub(crate) fn new_local(path: PathBuf, names: Arc<KeptByNames>) -> SortedPart<T> {
        SortedPart {
            local: true,
            ..SortedPart::new(path, names)
        }
    }

    pub(crate) fn new(path: PathBuf, names: Arc<KeptByNames>) -> SortedPart<T> {
        SortedPart {
            path,
            local: false,
            open: None,
            last: None,
            written: 0,
            names,
            row: std::marker::PhantomData,
        }
    }

    /// Writes every full chunk of rows `merge` can give now; the rest wait
    /// in `merge`'s slices. A worker whose runs end early (all of a giant
    /// cluster's rows come from one router) so encodes its parts while the
    /// rows come, not after, and each slice is freed once written.
    pub(crate) fn write_from(&mut self, merge: &mut RunMerge<T>) -> Result<()> {
        while merge.mergeable() >= PART_CHUNK_ROWS {
            self.write_chunk(merge, PART_CHUNK_ROWS)?;
        }
        Ok(())
    }

    /// Writes the rest once every run has ended, and places the file;
    /// gives the rows written.
    pub(crate) fn finish(mut self, merge: &mut RunMerge<T>) -> Result<u64> {
        if let Some(run) = merge.unfinished() {
            bail!(
                "{}: producer {run} never ended its rows (internal error)",
                self.path.display()
            );
        }
        // Every run has ended: the full chunks, then the rest.
        self.write_from(merge)?;
        let rest = merge.mergeable();
        if rest > 0 {
            self.write_chunk(merge, rest)?;
        }
        let open = match self.open.take() {
            Some(open) => open,
            None => self.open_file()?,
        };
        open.close()?;
        Ok(self.written)
    }

    /// Merges the next `rows` rows into columns and hands them to Parquet,
    /// after checking their order.
    fn write_chunk(&mut self, merge: &mut RunMerge<T>, rows: usize) -> Result<()> {
        let mut chunk = ChunkColumns::<T>::with_capacity(rows);
        merge.merge_ready(rows, |row| chunk.push(row));
        let mut previous = self.last;
        for &id in &chunk.ids {
            if previous.is_some_and(|last| id <= last) {
                bail!(
                    "{}: id {id} out of order or repeated (internal error)",
                    self.path.display()
                );
            }
            previous = Some(id);
        }
        self.last = previous;
        if self.open.is_none() {
            self.open = Some(self.open_file()?);
        }
        let open = self.open.as_mut().expect("opened just above");
        let given = chunk.ids.len();
        let columns = T::columns(chunk.ids, chunk.others, chunk.thirds, &self.names);
        let batch = RecordBatch::try_new(open.schema.clone(), columns)?;
        open.write(&batch)?;
        self.written += given as u64;
        Ok(())
    }

    fn open_file(&self) -> Result<OpenParquet> {
        let layout = FileLayout::cluster_part(Arc::new(Schema::new(T::fields())), self.local);
        OpenParquet::create(&self.path, &layout)
    }
}

/// The worker that writes part `part`'s file of `kind`: `clusters/` part
/// `p` falls to worker `p % peers` and `drop/` part `p` to the worker half
/// the workers further on, so that the two files of a part are written at
/// once (with the default single part, by two workers instead of one) and
/// with as many parts as workers each writes one file of each kind.
pub(crate) fn writer_of(part: usize, kind: RowKind, peers: usize) -> usize {
    match kind {
        RowKind::Members => part % peers,
        RowKind::Drops => (part + peers / 2) % peers,
    }
}

/// The `clusters/` and `drop/` parts one worker writes, each from the runs
/// of every producer that may give it rows, written as they come.
pub(crate) struct PartWriter {
    worker: usize,
    members: Vec<Option<StreamedPart<MemberRow>>>,
    drops: Vec<Option<StreamedPart<DropRow>>>,
    /// Where `drop/`'s URLs are read from, if anywhere.
    evidence: Option<Arc<EvidenceSources>>,
    /// Time spent writing, while the rows came and after.
    writing: std::time::Duration,
}

/// A part being written: its runs' merge and its file.
struct StreamedPart<T: PartRow> {
    merge: RunMerge<T>,
    file: SortedPart<T>,
    /// Where the part goes once placed.
    path: PathBuf,
}

impl<T: PartRow> StreamedPart<T> {
    /// A part written to `path`, or with `local` to a plain file beside it
    /// read again before it is placed ([`crate::cluster::drop_evidence`]).
    fn new(
        path: PathBuf,
        producers: &[u32],
        local: bool,
        names: &Arc<KeptByNames>,
    ) -> StreamedPart<T> {
        let merge = RunMerge::new(producers.iter().copied());
        let file = match local {
            true => SortedPart::new_local(local_name(&path), names.clone()),
            false => SortedPart::new(path.clone(), names.clone()),
        };
        StreamedPart { merge, file, path }
    }

    /// Takes in a slice of producer `run` and writes what it lets through.
    fn add(&mut self, run: u32, seq: u32, rows: Vec<T>, last: bool) -> Result<()> {
        self.merge.add(run, seq, rows, last)?;
        self.file.write_from(&mut self.merge)
    }

    /// Parts `0..parts` of folder `folder` of `dir`, those that `ours`
    /// keeps being written here.
    fn all(
        dir: &Path,
        folder: &str,
        parts: usize,
        ours: impl Fn(usize) -> bool,
        producers: &[u32],
        local: bool,
        names: &Arc<KeptByNames>,
    ) -> Vec<Option<StreamedPart<T>>> {
        (0..parts)
            .map(|p| {
                let path = dir.join(folder).join(part_name(p));
                ours(p).then(|| StreamedPart::new(path, producers, local, names))
            })
            .collect()
    }

    /// The part `p` of `parts`, if this worker writes it.
    fn of(parts: &mut [Option<StreamedPart<T>>], p: usize) -> Result<&mut StreamedPart<T>> {
        match parts.get_mut(p) {
            Some(Some(part)) => Ok(part),
            _ => bail!("rows of part {p} came to a worker that does not write it (internal error)"),
        }
    }

    fn finish(self) -> Result<u64> {
        let StreamedPart {
            mut merge, file, ..
        } = self;
        file.finish(&mut merge)
    }
}

/// The plain file a part is first written to when it is read again before
/// it is placed: a hidden name beside it, never uploaded.
fn local_name(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{}.plain", name.unwrap_or_default()))
}

impl PartWriter {
    /// The writer of worker `worker` of `peers` in `processes` processes,
    /// over `parts` parts in `dir`, naming `kept_by` by `names`. Every
    /// worker's router gives rows to
    /// every part; the owners of joined clusters give drops, and only on
    /// several processes (on one, no cluster is joined). A merge waits for
    /// the end of every run it expects, and the owners' come after all the
    /// routing: expected where they give nothing, they would hold every
    /// row until then.
    pub(crate) fn new(
        dir: &Path,
        worker: usize,
        peers: usize,
        processes: usize,
        parts: usize,
        names: KeptByNames,
        evidence: Option<Arc<EvidenceSources>>,
    ) -> PartWriter {
        let names = Arc::new(names);
        let routers: Vec<u32> = (0..peers as u32).map(router_run).collect();
        let owners = (0..peers as u32).map(owner_run).filter(|_| processes > 1);
        let droppers: Vec<u32> = routers.iter().copied().chain(owners).collect();
        let ours = |kind| move |p: usize| writer_of(p, kind, peers) == worker;
        let local = evidence.is_some();
        PartWriter {
            worker,
            members: StreamedPart::all(
                dir,
                "clusters",
                parts,
                ours(RowKind::Members),
                &routers,
                false,
                &names,
            ),
            drops: StreamedPart::all(
                dir,
                "drop",
                parts,
                ours(RowKind::Drops),
                &droppers,
                local,
                &names,
            ),
            evidence,
            writing: std::time::Duration::ZERO,
        }
    }
}

impl FinalStage<RunSlice, ClusterTotals> for PartWriter {
    fn absorb(&mut self, slices: &mut Vec<RunSlice>) -> Result<()> {
        let started = Instant::now();
        for slice in slices.drain(..) {
            let RunSlice {
                part,
                run,
                seq,
                last,
                rows,
            } = slice;
            let p = part as usize;
            match rows {
                Rows::Members(rows) => {
                    StreamedPart::of(&mut self.members, p)?.add(run, seq, rows, last)?
                }
                Rows::Drops(rows) => {
                    StreamedPart::of(&mut self.drops, p)?.add(run, seq, rows, last)?
                }
            }
        }
        self.writing += started.elapsed();
        Ok(())
    }

    /// Writes what is left of this worker's parts (empty ones included, so
    /// the output always has all `--parts` files of each kind) and places
    /// them.
    fn finish(&mut self, totals: &mut ClusterTotals) -> Result<()> {
        let started = Instant::now();
        for part in std::mem::take(&mut self.members).into_iter().flatten() {
            totals.pages += part.finish()?;
        }
        let mut plain = Vec::new();
        for part in std::mem::take(&mut self.drops).into_iter().flatten() {
            let path = part.path.clone();
            totals.dropped += part.finish()?;
            let written = local_name(&path);
            plain.push(PlainPart {
                written,
                part: path,
            });
        }
        if let Some(sources) = &self.evidence {
            sources.hand_over(plain)?;
        }
        tracing::info!(
            worker = self.worker,
            seconds = (self.writing + started.elapsed()).as_secs_f64(),
            after_routing = started.elapsed().as_secs_f64(),
            rss_mib = ?crate::exec::logging::resident_mib(),
            "parts written"
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::components::Closeness;
    use crate::cluster::drop_policy::closeness;
    use crate::cluster::keep_order::KeptBy;
    use crate::io::parquet::output::ROW_GROUP_ROWS;
    use parquet::basic::{Compression, Encoding};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use std::fs::File;

    /// The grounds of a drop `near` its keeper, kept for its smaller id.
    fn grounds(near: Option<Closeness>) -> Grounds {
        Grounds {
            near,
            kept_by: KeptBy::ID,
        }
    }

    /// Writes `rows` as a part through a merge of one run, ended or not.
    fn write_part<T: PartRow>(path: &Path, rows: Vec<T>, ended: bool) -> Result<u64> {
        let mut merge = RunMerge::new([0]);
        merge.add(0, 0, rows, ended)?;
        let mut part = SortedPart::new(path.to_path_buf(), Arc::default());
        part.write_from(&mut merge)?;
        part.finish(&mut merge)
    }

    /// Writes `rows` (sorted by id) as a part whose runs are dealt the rows
    /// round robin by `runs` and sent in slices of the sizes `cuts` cycles
    /// through, each slice taken in (and the part written from) in turn.
    fn write_part_in_slices(path: &Path, rows: &[DropRow], runs: usize, cuts: &[usize]) -> Vec<u8> {
        let dealt: Vec<Vec<DropRow>> = (0..runs)
            .map(|r| rows.iter().copied().skip(r).step_by(runs).collect())
            .collect();
        let mut merge = RunMerge::new(0..runs as u32);
        let mut part = SortedPart::new(path.to_path_buf(), Arc::default());
        let (mut starts, mut seqs) = (vec![0; runs], vec![0u32; runs]);
        let mut turn = 0;
        while (0..runs).any(|r| seqs[r] == 0 || starts[r] < dealt[r].len()) {
            let run = turn % runs;
            let cut = cuts[turn % cuts.len()];
            turn += 1;
            let start = starts[run];
            if seqs[run] > 0 && start == dealt[run].len() {
                continue;
            }
            let end = (start + cut).min(dealt[run].len());
            let last = end == dealt[run].len();
            merge
                .add(run as u32, seqs[run], dealt[run][start..end].to_vec(), last)
                .unwrap();
            (starts[run], seqs[run]) = (end, seqs[run] + 1);
            part.write_from(&mut merge).unwrap();
        }
        part.finish(&mut merge).unwrap();
        std::fs::read(path).unwrap()
    }

    #[test]
    fn a_part_has_the_same_bytes_however_its_rows_come() {
        // More rows than a row group, not a whole number of chunks, with a
        // nullable column (whose pages Parquet cuts where each call starts):
        // one run in one slice, one run in uneven slices, three runs.
        let rows: Vec<DropRow> = (0..(ROW_GROUP_ROWS + PART_CHUNK_ROWS + 4_321) as i64)
            .map(|i| {
                let near = (i % 7 != 0)
                    .then(|| closeness((i % 4) as u8, (i % 3 > 0).then_some((i % 3) as u16 - 1)));
                let kept_by = [KeptBy::CORPUS, KeptBy::ID][usize::from(i % 5 == 0)];
                (3 * i, i / 5, Grounds { near, kept_by })
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let whole = write_part_in_slices(&dir.path().join("a.parquet"), &rows, 1, &[usize::MAX]);
        for (name, runs, cuts) in [
            ("uneven", 1, &[1, 65_535, 70_001, 37][..]),
            ("three runs", 3, &[40_000, 3, 100_000][..]),
        ] {
            let bytes = write_part_in_slices(&dir.path().join("b.parquet"), &rows, runs, cuts);
            assert!(bytes == whole, "{name}: other bytes");
        }
        let reader =
            SerializedFileReader::new(File::open(dir.path().join("a.parquet")).unwrap()).unwrap();
        let groups: Vec<i64> = reader
            .metadata()
            .row_groups()
            .iter()
            .map(|g| g.num_rows())
            .collect();
        assert_eq!(
            groups,
            [ROW_GROUP_ROWS as i64, (PART_CHUNK_ROWS + 4_321) as i64]
        );
    }

    #[test]
    fn a_part_out_of_id_order_or_unended_is_refused_and_never_left_in_place() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let sorted = dir.path().join("sorted.parquet");
        write_part(&sorted, vec![(1, 1, 2), (2, 1, 2), (7, 7, 1)], true)?;
        let reader = SerializedFileReader::new(File::open(&sorted)?)?;
        assert_eq!(reader.metadata().file_metadata().num_rows(), 3);
        // An empty part is a file with no rows.
        let empty = dir.path().join("empty.parquet");
        assert_eq!(write_part::<DropRow>(&empty, Vec::new(), true)?, 0);
        let reader = SerializedFileReader::new(File::open(&empty)?)?;
        assert_eq!(reader.metadata().file_metadata().num_rows(), 0);
        for (name, rows, ended, message) in [
            (
                "backwards",
                vec![(5, 5, grounds(None)), (4, 5, grounds(Some(1)))],
                true,
                "out of order or repeated",
            ),
            (
                "repeated",
                vec![(5, 6, grounds(Some(1))), (5, 6, grounds(Some(1)))],
                true,
                "out of order or repeated",
            ),
            ("unended", vec![(1, 2, grounds(None))], false, "never ended"),
        ] {
            let path = dir.path().join(format!("{name}.parquet"));
            let error = write_part(&path, rows, ended).unwrap_err();
            assert!(format!("{error:#}").contains(message), "{error:#}");
            assert!(
                !path.exists(),
                "{name}: a refused part must not be in place"
            );
        }
        Ok(())
    }

    #[test]
    fn few_valued_columns_are_dictionary_encoded_and_other_pages_ids_delta_encoded_kept_by_without_statistics(
    ) -> Result<()> {
        let dir = tempfile::tempdir()?;
        let clusters = dir.path().join("clusters.parquet");
        let rows = (0..10_000i64).map(|id| (id, id - id % 3, 3)).collect();
        assert_eq!(write_part(&clusters, rows, true)?, 10_000);
        let drops = dir.path().join("drop.parquet");
        let rows = (0..10_000i64).map(|id| {
            let near = Some(closeness(3, Some(id as u16 % 23)));
            (id, id + 1, grounds(near))
        });
        write_part(&drops, rows.collect(), true)?;
        let few_valued = [
            (&clusters, 2, 1),
            (&drops, 2, 1),
            (&drops, 3, 1),
            (&drops, 4, 1),
        ];
        for (path, few, many) in few_valued {
            let reader = SerializedFileReader::new(File::open(path)?)?;
            for group in reader.metadata().row_groups() {
                let dictionary = |column: usize| {
                    let chunk = group.column(column);
                    chunk.encodings().any(|e| e == Encoding::RLE_DICTIONARY)
                };
                assert!(dictionary(few), "{}", group.column(few).column_path());
                assert!(!dictionary(many), "{}", group.column(many).column_path());
                assert!(!dictionary(0));
                // Another page's id (`cluster_id`, `keep_id`): delta-encoded
                // and uncompressed; the few-valued column is compressed.
                assert!(group
                    .column(many)
                    .encodings()
                    .any(|e| e == Encoding::DELTA_BINARY_PACKED));
                assert_eq!(group.column(many).compression(), Compression::UNCOMPRESSED);
                assert!(matches!(
                    group.column(few).compression(),
                    Compression::ZSTD(_)
                ));
                // `kept_by`'s min and max would skip nothing.
                let kept_by = path == &drops && few == 4;
                let stats = group.column(few).statistics();
                assert_eq!(
                    stats.is_none(),
                    kept_by,
                    "{}",
                    group.column(few).column_path()
                );
            }
        }
        Ok(())
    }

    #[test]
    fn every_file_has_one_writer_and_a_parts_two_files_are_written_apart() {
        for peers in 1..=6 {
            for parts in 1..=9 {
                let mut files = vec![0usize; peers];
                for p in 0..parts {
                    let members = writer_of(p, RowKind::Members, peers);
                    let drops = writer_of(p, RowKind::Drops, peers);
                    assert!(members < peers && drops < peers);
                    assert_eq!(members == drops, peers == 1, "{peers} {parts} {p}");
                    files[members] += 1;
                    files[drops] += 1;
                }
                // Files spread evenly: with as many parts as workers, one
                // of each kind a worker.
                let (most, least) = (files.iter().max(), files.iter().min());
                assert!(
                    most.unwrap() - least.unwrap() <= 2,
                    "{peers} {parts} {files:?}"
                );
                if parts == peers {
                    assert!(files.iter().all(|&n| n == 2), "{peers} {files:?}");
                }
            }
        }
    }

    #[test]
    fn the_last_worker_to_hand_over_gives_every_part_its_urls() -> Result<()> {
        use crate::cluster::drop_evidence::{EvidenceSources, PlainPart};
        use crate::cluster::keep_order::URL;
        use crate::io::parquet::columns::check_string;
        use crate::io::parquet::pages::PagesTable;
        use arrow_array::cast::AsArray;
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        use parquet::arrow::ArrowWriter;

        let dir = tempfile::tempdir()?;
        // URLs for pages 1 to 4; page 9 has none.
        let table = dir.path().join("pages.parquet");
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new(URL, DataType::Utf8, true),
        ]));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![3, 1, 4, 2])),
            Arc::new(StringArray::from(vec!["u3", "u1", "u4", "u2"])),
        ];
        let mut writer = ArrowWriter::try_new(File::create(&table)?, schema.clone(), None)?;
        writer.write(&RecordBatch::try_new(schema, columns)?)?;
        writer.close()?;
        let table = table.to_string_lossy().into_owned();
        let pages = PagesTable::open(
            "--pages",
            &[table],
            (&[], ""),
            |_, _, _| Ok(()),
            &[URL],
            check_string,
        )?;
        let sources = EvidenceSources::of(&Some(Arc::new(pages)), None, 2).unwrap();
        let plain_part = |name: &str, rows: Vec<DropRow>| -> Result<PlainPart> {
            let part = dir.path().join(name);
            let written = local_name(&part);
            let mut merge = RunMerge::new([0]);
            merge.add(0, 0, rows, true)?;
            let mut plain = SortedPart::new_local(written.clone(), Arc::default());
            plain.write_from(&mut merge)?;
            plain.finish(&mut merge)?;
            Ok(PlainPart { written, part })
        };
        // Two workers' parts: drops 2 and 9 (for 1 and 3), and 4 (for 1).
        let a = plain_part(
            "a.parquet",
            vec![(2, 1, grounds(None)), (9, 3, grounds(None))],
        )?;
        let b = plain_part("b.parquet", vec![(4, 1, grounds(None))])?;
        let (a_part, a_plain) = (a.part.clone(), a.written.clone());
        sources.hand_over(vec![a])?;
        assert!(
            a_plain.exists() && !a_part.exists(),
            "the first worker's part waits for the last worker's"
        );
        let parts = [(b.part.clone(), b.written.clone()), (a_part, a_plain)];
        sources.hand_over(vec![b])?;
        let expected = [
            (vec![4], vec![Some("u4")], vec![Some("u1")]),
            (
                vec![2, 9],
                vec![Some("u2"), None],
                vec![Some("u1"), Some("u3")],
            ),
        ];
        for ((part, plain), (ids, urls, keep_urls)) in parts.iter().zip(expected) {
            assert!(
                !plain.exists(),
                "{}: the plain part is removed",
                plain.display()
            );
            let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(part)?)?.build()?;
            let batches = reader.collect::<Result<Vec<_>, _>>()?;
            let [batch] = &batches[..] else {
                panic!("{}: {} batches", part.display(), batches.len());
            };
            let strings = |name: &str| -> Vec<Option<String>> {
                let column = batch.column_by_name(name).unwrap().as_string::<i32>();
                column.iter().map(|s| s.map(str::to_string)).collect()
            };
            let owned = |v: Vec<Option<&str>>| -> Vec<Option<String>> {
                v.into_iter().map(|s| s.map(str::to_string)).collect()
            };
            let id = batch
                .column(0)
                .as_primitive::<arrow_array::types::Int64Type>();
            assert_eq!(id.values().to_vec(), ids);
            assert_eq!(strings("url"), owned(urls), "{}", part.display());
            assert_eq!(strings("keep_url"), owned(keep_urls), "{}", part.display());
        }
        Ok(())
    }
}
