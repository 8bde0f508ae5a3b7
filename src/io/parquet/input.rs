//! Reading fingerprint shards: path expansion, schema checks, and row-group
//! units streamed one at a time.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{anyhow, bail, Context, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{
    Array, ArrayRef, ArrowPrimitiveType, BooleanArray, Int64Array, RecordBatch, UInt64Array,
};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
};
use parquet::arrow::ProjectionMask;

use crate::exec::parallel::lock;
use crate::io::storage::{expand_remote, is_url, open_all, Fetch, Location, Source};

/// Rows decoded per batch when streaming a row group: bounds the memory of a
/// unit in flight whatever the size of the shard's row groups. Small enough
/// (512 KB per column) that the allocator reuses the decoder's buffers
/// instead of mapping and zeroing fresh memory for each batch.
const BATCH_ROWS: usize = 1 << 16;

/// Names of the two columns neardup reads.
#[derive(Clone, Debug)]
pub struct Columns {
    pub id: String,
    pub simhash: String,
}

impl Default for Columns {
    fn default() -> Self {
        Columns {
            id: "id".into(),
            simhash: "simhash".into(),
        }
    }
}

/// Expands local files, directories (every `*.parquet` below, skipping `_`
/// and `.` entries as Spark and Hadoop do) and glob patterns into a sorted
/// list of files.
pub fn expand_paths(specs: &[String]) -> Result<Vec<PathBuf>> {
    expand_paths_with(specs, &["parquet"])
}

/// Like [`expand_paths`] for Parquet files that may also be objects
/// (`s3://`, `gs://`, `az://`, `http(s)://`; see [`crate::io::storage`]):
/// in the order of `specs`, each spec's files sorted.
pub fn expand_locations(specs: &[String]) -> Result<Vec<Location>> {
    expand_locations_with(specs, &["parquet"])
}

/// Like [`expand_locations`], taking from directories and prefixes the
/// files whose names end in `.` and one of `extensions`.
pub fn expand_locations_with(specs: &[String], extensions: &[&str]) -> Result<Vec<Location>> {
    let mut files = Vec::new();
    for spec in specs {
        match is_url(spec) {
            true => files.extend(expand_remote(spec, extensions)?),
            false => files.extend(
                expand_paths_with(std::slice::from_ref(spec), extensions)?
                    .into_iter()
                    .map(Location::Local),
            ),
        }
    }
    Ok(files)
}

/// Like [`expand_paths`], taking from directories the files whose names end
/// in `.` and one of `extensions`. Local only: an object URL is refused.
pub fn expand_paths_with(specs: &[String], extensions: &[&str]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for spec in specs {
        if is_url(spec) {
            bail!("{spec}: only local files can be read here, not objects");
        }
        let path = Path::new(spec);
        if path.is_dir() {
            let before = files.len();
            collect_files(path, extensions, &mut files)?;
            if files.len() == before {
                bail!(
                    "{spec}: directory contains no .{} files",
                    extensions.join(" or .")
                );
            }
        } else if path.is_file() {
            files.push(path.to_path_buf());
        } else if spec.contains(['*', '?', '[']) {
            let before = files.len();
            for entry in
                glob::glob(spec).with_context(|| format!("{spec}: invalid glob pattern"))?
            {
                let entry = entry.with_context(|| format!("{spec}: cannot read a match"))?;
                if entry.is_file() {
                    files.push(entry);
                }
            }
            if files.len() == before {
                bail!("{spec}: no files match this pattern");
            }
        } else {
            bail!("{spec}: no such file or directory");
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

/// Whether a file name ends in `.` and `extension` (which may itself hold
/// dots, as `warc.gz`).
pub fn has_extension(name: &str, extension: &str) -> bool {
    name.strip_suffix(extension)
        .is_some_and(|stem| stem.ends_with('.'))
}

fn collect_files(dir: &Path, extensions: &[&str], out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("{}: cannot list directory", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("{}: cannot list directory", dir.display()))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('_') || name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, extensions, out)?;
        } else if extensions.iter().any(|e| has_extension(&name, e)) {
            out.push(path);
        }
    }
    Ok(())
}

/// A validated fingerprint shard whose footer has been read once.
#[derive(Clone, Debug)]
pub struct FingerprintFile {
    pub path: Location,
    metadata: ArrowReaderMetadata,
    id_root: usize,
    simhash_root: usize,
}

/// One row group of one file, or a piece of one: the unit of work a worker
/// streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unit {
    pub file: usize,
    pub row_group: usize,
    /// The unit's first row within its row group.
    pub offset: u64,
    pub rows: u64,
}

/// The most rows a unit of a local file holds: a worker's probe batch.
/// Larger row groups (old pyarrow wrote 64Mi rows to a group, Spark cuts
/// them at 128 MB) are cut into pieces ([`cuts_of`]), so that no worker
/// decodes a whole such group into memory while the others wait.
const MAX_UNIT_ROWS: usize = 1 << 20;

impl FingerprintFile {
    /// Reads the footer and checks that both columns exist with an integer
    /// 64-bit type and, where statistics say so, hold no nulls.
    pub fn open(path: &Location, columns: &Columns) -> Result<FingerprintFile> {
        let shown = path;
        let metadata = read_footer(path)?;
        let schema = metadata.schema();
        let root = |name: &str| -> Result<usize> {
            let (index, field) = schema.column_with_name(name).ok_or_else(|| {
                anyhow!(
                    "{shown}: no column `{name}` (columns: {})",
                    column_list(schema)
                )
            })?;
            match field.data_type() {
                DataType::Int64 | DataType::UInt64 => Ok(index),
                other => {
                    bail!("{shown}: column `{name}` has type {other}, expected INT64 (or UINT64)")
                }
            }
        };
        let id_root = root(&columns.id)?;
        let simhash_root = root(&columns.simhash)?;
        let shard = FingerprintFile {
            path: path.clone(),
            metadata,
            id_root,
            simhash_root,
        };
        shard.check_null_statistics(columns)?;
        Ok(shard)
    }

    fn check_null_statistics(&self, columns: &Columns) -> Result<()> {
        let parquet = self.metadata.metadata();
        let schema = parquet.file_metadata().schema_descr();
        for (rg_index, rg) in parquet.row_groups().iter().enumerate() {
            for (root, name) in [
                (self.id_root, &columns.id),
                (self.simhash_root, &columns.simhash),
            ] {
                let leaf =
                    (0..schema.num_columns()).find(|&c| schema.get_column_root_idx(c) == root);
                let nulls = leaf
                    .and_then(|c| rg.column(c).statistics())
                    .and_then(|s| s.null_count_opt());
                if let Some(n) = nulls.filter(|&n| n > 0) {
                    bail!(
                        "{}: column `{name}` has {n} null values (row group {rg_index})",
                        self.path
                    );
                }
            }
        }
        Ok(())
    }

    /// The fingerprint scheme the file records (`neardup.scheme` in its
    /// key-value metadata); `None` for files made by other tools.
    pub fn scheme(&self) -> Option<String> {
        let file = self.metadata.metadata().file_metadata();
        file.key_value_metadata()?
            .iter()
            .find(|kv| kv.key == super::METADATA_KEY)
            .and_then(|kv| kv.value.clone())
    }

    /// Rows in the file.
    pub fn rows(&self) -> u64 {
        self.metadata.metadata().file_metadata().num_rows().max(0) as u64
    }

    /// Number of row groups.
    pub fn row_groups(&self) -> usize {
        self.metadata.metadata().num_row_groups()
    }

    /// Rows in row group `rg`.
    pub fn row_group_rows(&self, rg: usize) -> u64 {
        self.metadata.metadata().row_group(rg).num_rows().max(0) as u64
    }

    /// Starts fetching row group `rg`'s two columns if the file is an
    /// object, for a later [`Self::read_fetched`]: a scan asks for its next
    /// row group before it decodes the current one.
    pub fn fetch_row_group(&self, rg: usize) -> RowGroupFetch {
        let roots = [self.id_root, self.simhash_root];
        RowGroupFetch {
            row_group: rg,
            piece: None,
            fetch: fetch_row_group(&self.path, &self.metadata, rg, &roots),
        }
    }

    /// [`Self::fetch_row_group`] for a unit of this file: only its rows are
    /// read.
    pub fn fetch_unit(&self, unit: &Unit) -> RowGroupFetch {
        let (offset, rows) = (unit.offset as usize, unit.rows as usize);
        RowGroupFetch {
            piece: piece_selection(&self.metadata, unit.row_group, offset, rows),
            ..self.fetch_row_group(unit.row_group)
        }
    }

    /// Appends the ids and fingerprints of row group `rg` to `ids` and
    /// `fingerprints`, decoding at most [`BATCH_ROWS`] rows at a time.
    pub fn read_row_group(
        &self,
        rg: usize,
        columns: &Columns,
        ids: &mut Vec<i64>,
        fingerprints: &mut Vec<u64>,
    ) -> Result<()> {
        self.read_fetched(self.fetch_row_group(rg), columns, ids, fingerprints)
    }

    /// [`Self::read_row_group`] for a row group whose fetch has started.
    pub fn read_fetched(
        &self,
        fetched: RowGroupFetch,
        columns: &Columns,
        ids: &mut Vec<i64>,
        fingerprints: &mut Vec<u64>,
    ) -> Result<()> {
        let (shown, rg) = (&self.path, fetched.row_group);
        let roots = [self.id_root, self.simhash_root];
        let file = self.path.open()?;
        if let Some(fetch) = fetched.fetch {
            file.receive(fetch)?;
        }
        let mask = ProjectionMask::roots(self.metadata.parquet_schema(), roots);
        let mut builder =
            ParquetRecordBatchReaderBuilder::new_with_metadata(file, self.metadata.clone())
                .with_row_groups(vec![rg])
                .with_projection(mask)
                .with_batch_size(BATCH_ROWS);
        let mut wanted = self.row_group_rows(rg) as usize;
        if let Some(piece) = fetched.piece {
            wanted = piece.row_count();
            builder = builder.with_row_selection(piece);
        }
        let reader = builder
            .build()
            .with_context(|| format!("{shown}: cannot read row group {rg}"))?;
        ids.reserve(wanted);
        fingerprints.reserve(wanted);
        for batch in reader {
            let batch = batch.with_context(|| format!("{shown}: cannot decode row group {rg}"))?;
            let location = || format!("{shown} (row group {rg})");
            integer_column(&batch, &columns.id, &location, ids, |v| v)?;
            integer_column(&batch, &columns.simhash, &location, fingerprints, |v| {
                v as u64
            })?;
        }
        Ok(())
    }
}

/// Reads every row of `files`, one row group at a time and in order, the
/// next row group's bytes (from an object store) on their way while the
/// current one is decoded and handed to `each`.
pub fn read_files(
    files: &[FingerprintFile],
    columns: &Columns,
    mut each: impl FnMut(&[i64], &[u64]) -> Result<()>,
) -> Result<()> {
    let mut groups = files
        .iter()
        .flat_map(|file| (0..file.row_groups()).map(move |rg| (file, rg)));
    let mut ahead = groups
        .next()
        .map(|(file, rg)| (file, file.fetch_row_group(rg)));
    let (mut ids, mut fingerprints) = (Vec::new(), Vec::new());
    while let Some((file, fetched)) = ahead.take() {
        ahead = groups
            .next()
            .map(|(file, rg)| (file, file.fetch_row_group(rg)));
        ids.clear();
        fingerprints.clear();
        file.read_fetched(fetched, columns, &mut ids, &mut fingerprints)?;
        each(&ids, &fingerprints)?;
    }
    Ok(())
}

/// Appends an INT64 or UINT64 column to `out` as `T`, refusing nulls.
pub(crate) fn integer_column<T>(
    batch: &RecordBatch,
    name: &str,
    location: &dyn Fn() -> String,
    out: &mut Vec<T>,
    from_i64: impl Fn(i64) -> T,
) -> Result<()> {
    let column = non_null_column(batch, name, location)?;
    if let Some(values) = column.as_any().downcast_ref::<Int64Array>() {
        out.extend(values.values().iter().map(|&v| from_i64(v)));
    } else if let Some(values) = column.as_any().downcast_ref::<UInt64Array>() {
        out.extend(values.values().iter().map(|&v| from_i64(v as i64)));
    } else {
        bail!(
            "{}: column `{name}` has type {}, expected INT64 (or UINT64)",
            location(),
            column.data_type()
        );
    }
    Ok(())
}

pub(crate) fn column_list(schema: &arrow_schema::Schema) -> String {
    schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Opens every file of `specs` and lists their row groups as units, in path order.
pub fn open_inputs(
    specs: &[String],
    columns: &Columns,
) -> Result<(Vec<FingerprintFile>, Vec<Unit>)> {
    let files = open_all(&expand_locations(specs)?, |p| {
        FingerprintFile::open(p, columns)
    })?;
    let units = files
        .iter()
        .enumerate()
        .flat_map(|(file, shard)| {
            (0..shard.row_groups()).flat_map(move |row_group| {
                let rows = shard.row_group_rows(row_group) as usize;
                cuts_of(&shard.path, rows, MAX_UNIT_ROWS)
                    .into_iter()
                    .map(move |(offset, rows)| Unit {
                        file,
                        row_group,
                        offset: offset as u64,
                        rows: rows as u64,
                    })
            })
        })
        .filter(|u| u.rows > 0)
        .collect();
    Ok((files, units))
}

/// `units` cut so that `threads` threads share their reading evenly, as
/// [`into_pieces`] cuts pair units: B is often one file of one row group.
pub fn into_finer_units(files: &[FingerprintFile], units: &[Unit], threads: usize) -> Vec<Unit> {
    let total: u64 = units.iter().map(|unit| unit.rows).sum();
    let most = piece_rows(usize::try_from(total).unwrap_or(usize::MAX), threads);
    let cut = |unit: Unit| {
        let cuts = cuts_of(&files[unit.file].path, unit.rows as usize, most);
        cuts.into_iter().map(move |(offset, rows)| Unit {
            offset: unit.offset + offset as u64,
            rows: rows as u64,
            ..unit
        })
    };
    units.iter().copied().flat_map(cut).collect()
}

/// One row of a pair file, as `cluster` needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairRow {
    pub query: i64,
    pub corpus: i64,
    /// The corpus side is a page already in the corpus: the pair is not a
    /// `--self` pair. False when the file has no `self_pair` column.
    pub corpus_in_corpus: bool,
    /// Bits the fingerprints differ in; 0 when the file has no `distance`
    /// column and it was not asked for.
    pub distance: u8,
}

/// Which optional columns `cluster` needs from pair files.
#[derive(Clone, Copy, Debug, Default)]
pub struct PairNeeds {
    /// `self_pair`, to tell corpus pages from new ones (`--corpus-wins`).
    pub self_pair: bool,
    /// `distance`, to drop a page for its nearest kept partner.
    pub distance: bool,
}

/// A row group of a pair file, or a piece of one ([`into_pieces`]), and
/// which optional columns the file has.
#[derive(Clone, Debug)]
pub struct PairUnit {
    pub path: Location,
    metadata: ArrowReaderMetadata,
    pub row_group: usize,
    /// The first row of the piece within its row group.
    pub offset: usize,
    /// Rows in the piece (the whole row group's, as its footer says, until
    /// it is cut).
    pub rows: usize,
    has_self_pair: bool,
    has_distance: bool,
}

/// The fewest rows a piece of a row group is cut to: below this, setting up
/// a reader and skipping to the piece would cost more than the balance is
/// worth.
const MIN_PIECE_ROWS: usize = 1 << 16;

/// The pair units cut so that `workers` (every worker of every process)
/// share the reading evenly: row groups of local files larger than a
/// quarter of a worker's share of all rows (and than [`MIN_PIECE_ROWS`])
/// become pieces of about that size ([`cuts_of`]). A writer that makes
/// few, large row groups (a 1M-pair file from pyarrow is one, Spark cuts
/// them at 128 MB) would otherwise leave all but a few workers nothing to
/// read.
pub fn into_pieces(units: Vec<PairUnit>, workers: usize) -> Vec<PairUnit> {
    let total: usize = units.iter().map(|unit| unit.rows).sum();
    let most = piece_rows(total, workers);
    units
        .into_iter()
        .flat_map(|unit| {
            let cuts = cuts_of(&unit.path, unit.rows, most);
            cuts.into_iter().map(move |(offset, rows)| PairUnit {
                offset: unit.offset + offset,
                rows,
                ..unit.clone()
            })
        })
        .collect()
}

/// The most rows a piece may hold for `workers` sharing `total` rows (no
/// limit for one worker).
fn piece_rows(total: usize, workers: usize) -> usize {
    match workers {
        0 | 1 => usize::MAX,
        _ => total.div_ceil(4 * workers).max(MIN_PIECE_ROWS),
    }
}

/// A row group of `rows` rows of the file at `path`, cut as [`cuts`] cuts
/// it if the file is local. An object's row groups stay whole: each piece
/// would fetch the whole row group.
fn cuts_of(path: &Location, rows: usize, most: usize) -> Vec<(usize, usize)> {
    match path.as_local() {
        Some(_) => cuts(rows, most),
        None => vec![(0, rows)],
    }
}

/// `rows` cut into pieces `(offset, rows)` of at most `most` rows and of
/// sizes within one of each other.
fn cuts(rows: usize, most: usize) -> Vec<(usize, usize)> {
    let pieces = rows.div_ceil(most.max(1)).max(1);
    (0..pieces)
        .map(|p| {
            (
                rows * p / pieces,
                rows * (p + 1) / pieces - rows * p / pieces,
            )
        })
        .collect()
}

/// The row groups of pair files (files, directories or globs), in path
/// order. `neardup match` output has every column; pairs made elsewhere (a
/// Spark or DuckDB join) need only `query_id` and `corpus_id`, plus what
/// `needs` asks for.
pub fn open_pair_inputs(specs: &[String], needs: PairNeeds) -> Result<Vec<PairUnit>> {
    let files = open_all(&expand_locations(specs)?, |path| {
        pair_file_units(path, needs)
    })?;
    Ok(files.into_iter().flatten().collect())
}

/// The row groups of one pair file, once its columns are checked.
fn pair_file_units(path: &Location, needs: PairNeeds) -> Result<Vec<PairUnit>> {
    let shown = path;
    let metadata = read_footer(path)?;
    let schema = metadata.schema();
    let type_of = |name: &str| schema.field_with_name(name).ok().map(|f| f.data_type());
    for name in ["query_id", "corpus_id"] {
        match type_of(name) {
            Some(DataType::Int64 | DataType::UInt64) => {}
            Some(other) => bail!(
                "{shown}: column `{name}` has type {other}, expected INT64 (is this `neardup match` output?)"
            ),
            None => bail!(
                "{shown}: no column `{name}` (columns: {}; is this `neardup match` output?)",
                column_list(schema)
            ),
        }
    }
    let has_self_pair = match type_of("self_pair") {
        Some(DataType::Boolean) => true,
        Some(other) => bail!("{shown}: column `self_pair` has type {other}, expected BOOLEAN"),
        None if needs.self_pair => bail!(
            "{shown}: no column `self_pair`, so corpus pages cannot be told from new ones: --keep-by corpus (or --corpus-wins) needs `neardup match` output; leave the corpus key out"
        ),
        None => false,
    };
    let has_distance = match type_of("distance") {
        Some(t) if t.is_integer() => true,
        Some(other) => bail!("{shown}: column `distance` has type {other}, expected an integer"),
        None if needs.distance => bail!(
            "{shown}: no column `distance`, which --drop-policy direct needs to drop a page for its nearest kept partner; add it or use --drop-policy component"
        ),
        None => false,
    };
    Ok((0..metadata.metadata().num_row_groups())
        .map(|row_group| PairUnit {
            path: path.clone(),
            metadata: metadata.clone(),
            row_group,
            offset: 0,
            rows: row_group_rows(&metadata, row_group),
            has_self_pair,
            has_distance,
        })
        .collect())
}

/// A reader of a pair file's row group, one batch of rows at a time.
struct PairBatches {
    unit: PairUnit,
    reader: ParquetRecordBatchReader,
    queries: Vec<i64>,
    corpus: Vec<i64>,
    distances: Vec<u8>,
}

impl PairBatches {
    /// Opens `unit`'s row group for the rows `selection` picks (all of
    /// them if `None`).
    fn open(unit: &PairUnit, selection: Option<RowSelection>) -> Result<PairBatches> {
        let (shown, rg) = (&unit.path, unit.row_group);
        let roots: Vec<usize> = ["query_id", "corpus_id", "self_pair", "distance"]
            .iter()
            .filter_map(|name| unit.metadata.schema().index_of(name).ok())
            .collect();
        let file = open_row_group(&unit.path, &unit.metadata, rg, &roots)?;
        let builder =
            ParquetRecordBatchReaderBuilder::new_with_metadata(file, unit.metadata.clone());
        let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
        let mut builder = builder
            .with_row_groups(vec![rg])
            .with_projection(mask)
            .with_batch_size(BATCH_ROWS);
        if let Some(selection) = selection {
            builder = builder.with_row_selection(selection);
        }
        let reader = builder
            .build()
            .with_context(|| format!("{shown}: cannot read row group {rg}"))?;
        Ok(PairBatches {
            unit: unit.clone(),
            reader,
            queries: Vec::new(),
            corpus: Vec::new(),
            distances: Vec::new(),
        })
    }

    /// Appends the next batch's rows to `out`; false once there are none.
    fn next_into(&mut self, out: &mut Vec<PairRow>) -> Result<bool> {
        let (shown, rg) = (&self.unit.path, self.unit.row_group);
        let Some(batch) = self.reader.next() else {
            return Ok(false);
        };
        let batch = batch.with_context(|| format!("{shown}: cannot decode row group {rg}"))?;
        let location = || format!("{shown} (row group {rg})");
        let (queries, corpus, distances) =
            (&mut self.queries, &mut self.corpus, &mut self.distances);
        queries.clear();
        corpus.clear();
        distances.clear();
        integer_column(&batch, "query_id", &location, queries, |v| v)?;
        integer_column(&batch, "corpus_id", &location, corpus, |v| v)?;
        let flags = match self.unit.has_self_pair {
            true => Some(
                batch
                    .column_by_name("self_pair")
                    .and_then(|c| c.as_any().downcast_ref::<BooleanArray>())
                    .filter(|c| c.null_count() == 0)
                    .ok_or_else(|| anyhow!("{}: column `self_pair` has null values", location()))?,
            ),
            false => None,
        };
        if self.unit.has_distance {
            distance_column(&batch, &location, distances)?;
        }
        out.extend((0..batch.num_rows()).map(|r| PairRow {
            query: queries[r],
            corpus: corpus[r],
            corpus_in_corpus: flags.is_some_and(|f| !f.value(r)),
            distance: distances.get(r).copied().unwrap_or(0),
        }));
        Ok(true)
    }
}

/// The pieces of one row group that a process reads, read by a single reader
/// that the process's workers take batches from in turn. DuckDB writes each
/// column of a row group as one page: a piece read on its own decompresses
/// that whole page and decodes every row before its own, so pieces read apart
/// would decompress the row group once each. Which worker gets which rows
/// does not matter to `cluster`: only the set of pairs a process reads.
pub struct SharedRowGroup {
    /// The row group, whole.
    unit: PairUnit,
    /// The rows of the process's pieces (`None`: all of them).
    selection: Option<RowSelection>,
    /// How many rows that is.
    rows: usize,
    reader: Mutex<SharedReader>,
}

enum SharedReader {
    NotOpen,
    /// The reader, and how many of its rows are left.
    Open(Box<PairBatches>, usize),
    Done,
}

impl SharedRowGroup {
    /// One shared row group for each row group that `pieces` come from, in
    /// order of first appearance, and for each piece the index of its own.
    pub fn of_pieces(pieces: &[PairUnit]) -> (Vec<SharedRowGroup>, Vec<usize>) {
        let mut index: HashMap<(String, usize), usize> = HashMap::new();
        let mut ranges: Vec<(PairUnit, Vec<(usize, usize)>)> = Vec::new();
        let group_of = pieces
            .iter()
            .map(|piece| {
                let key = (piece.path.to_string(), piece.row_group);
                let g = *index.entry(key).or_insert_with(|| {
                    ranges.push((piece.clone(), Vec::new()));
                    ranges.len() - 1
                });
                ranges[g].1.push((piece.offset, piece.rows));
                g
            })
            .collect();
        let groups = ranges
            .into_iter()
            .map(|(piece, ranges)| {
                let whole = row_group_rows(&piece.metadata, piece.row_group);
                SharedRowGroup {
                    rows: ranges.iter().map(|&(_, rows)| rows).sum(),
                    selection: selection_of(ranges, whole),
                    unit: PairUnit {
                        offset: 0,
                        rows: whole,
                        ..piece
                    },
                    reader: Mutex::new(SharedReader::NotOpen),
                }
            })
            .collect();
        (groups, group_of)
    }

    /// Appends whole batches of the row group's rows to `out` until it
    /// holds `rows` more, or the rows run out (other workers may have taken
    /// them). The first to ask opens the reader; after an error the others
    /// find no rows, and the error ends the job.
    pub fn take(&self, rows: usize, out: &mut Vec<PairRow>) -> Result<()> {
        let goal = out.len() + rows;
        while out.len() < goal {
            let mut reader = lock(&self.reader);
            if let SharedReader::NotOpen = *reader {
                *reader = match PairBatches::open(&self.unit, self.selection.clone()) {
                    Ok(batches) => SharedReader::Open(Box::new(batches), self.rows),
                    Err(error) => {
                        *reader = SharedReader::Done;
                        return Err(error);
                    }
                };
            }
            let SharedReader::Open(batches, left) = &mut *reader else {
                break;
            };
            let before = out.len();
            let more = batches.next_into(out);
            *left = left.saturating_sub(out.len() - before);
            match more {
                Ok(true) if *left > 0 => {}
                // Every row is taken: the reader and its decoded pages are
                // freed now, not when the job ends.
                Ok(_) => *reader = SharedReader::Done,
                Err(error) => {
                    *reader = SharedReader::Done;
                    return Err(error);
                }
            }
        }
        Ok(())
    }

    /// The row group's file.
    pub fn path(&self) -> &Location {
        &self.unit.path
    }
}

/// The selection of the rows `ranges` (`(offset, rows)`, disjoint) of a
/// row group of `whole` rows; `None` if they cover it.
fn selection_of(mut ranges: Vec<(usize, usize)>, whole: usize) -> Option<RowSelection> {
    ranges.sort_unstable();
    let mut selectors = Vec::new();
    let mut at = 0;
    for (offset, rows) in ranges {
        if offset > at {
            selectors.push(RowSelector::skip(offset - at));
        }
        if rows > 0 {
            selectors.push(RowSelector::select(rows));
        }
        at = offset + rows;
    }
    let covered = selectors.iter().all(|s| !s.skip) && at == whole;
    (!covered).then(|| RowSelection::from(selectors))
}

/// Reads and parses a Parquet file's footer (for an object: its last bytes,
/// in one request for most files).
pub(crate) fn read_footer(path: &Location) -> Result<ArrowReaderMetadata> {
    let source = path.open()?;
    source.prefetch_footer()?;
    ArrowReaderMetadata::load(&source, ArrowReaderOptions::new())
        .map_err(|e| anyhow!("{path}: not a readable Parquet file ({e})"))
}

/// A row group of a fingerprint file whose bytes (for an object) are on
/// their way.
pub struct RowGroupFetch {
    row_group: usize,
    /// The rows of a piece of the row group; `None`: all of it.
    piece: Option<RowSelection>,
    fetch: Option<Fetch>,
}

impl RowGroupFetch {
    /// Whether the rows come from an object store, their bytes fetched
    /// ahead, rather than from a local file read when decoded.
    pub fn is_remote(&self) -> bool {
        self.fetch.is_some()
    }
}

/// The rows `offset..offset + rows` of row group `rg`, or `None` if they are
/// all of it.
fn piece_selection(
    metadata: &ArrowReaderMetadata,
    rg: usize,
    offset: usize,
    rows: usize,
) -> Option<RowSelection> {
    selection_of(vec![(offset, rows)], row_group_rows(metadata, rg))
}

/// How many rows row group `rg` has, as its footer says.
fn row_group_rows(metadata: &ArrowReaderMetadata, rg: usize) -> usize {
    usize::try_from(metadata.metadata().row_group(rg).num_rows()).unwrap_or(0)
}

/// Starts fetching row group `rg`'s column chunks under `roots`, together,
/// if the file is an object: nothing else of the file is read.
fn fetch_row_group(
    path: &Location,
    metadata: &ArrowReaderMetadata,
    rg: usize,
    roots: &[usize],
) -> Option<Fetch> {
    path.as_local().is_none().then_some(())?;
    let schema = metadata.parquet_schema();
    let group = metadata.metadata().row_group(rg);
    let ranges: Vec<std::ops::Range<u64>> = (0..schema.num_columns())
        .filter(|&c| roots.contains(&schema.get_column_root_idx(c)))
        .map(|c| {
            let (start, length) = group.column(c).byte_range();
            start..start + length
        })
        .collect();
    path.fetch(ranges, format!("row group {rg}"))
}

/// Opens a file to read row group `rg`'s columns under `roots`, their
/// column chunks fetched first if the file is an object.
pub(crate) fn open_row_group(
    path: &Location,
    metadata: &ArrowReaderMetadata,
    rg: usize,
    roots: &[usize],
) -> Result<Source> {
    let source = path.open()?;
    if let Some(fetch) = fetch_row_group(path, metadata, rg, roots) {
        source.receive(fetch)?;
    }
    Ok(source)
}

/// A batch's column `name`, which must be there without nulls.
fn non_null_column<'b>(
    batch: &'b RecordBatch,
    name: &str,
    location: &dyn Fn() -> String,
) -> Result<&'b ArrayRef> {
    let column = batch
        .column_by_name(name)
        .ok_or_else(|| anyhow!("{}: no column `{name}`", location()))?;
    if column.null_count() > 0 {
        bail!(
            "{}: column `{name}` has {} null values",
            location(),
            column.null_count()
        );
    }
    Ok(column)
}

/// The `distance` column, of whatever integer type the writer chose (INT8
/// from `match`, INT32 from Spark, BIGINT from DuckDB), checked to be a
/// distance between 64-bit fingerprints.
fn distance_column(
    batch: &RecordBatch,
    location: &dyn Fn() -> String,
    out: &mut Vec<u8>,
) -> Result<()> {
    let column = non_null_column(batch, "distance", location)?;
    let wide: Vec<i128> = match column.data_type() {
        DataType::Int8 => values::<Int8Type>(column),
        DataType::Int16 => values::<Int16Type>(column),
        DataType::Int32 => values::<Int32Type>(column),
        DataType::Int64 => values::<Int64Type>(column),
        DataType::UInt8 => values::<UInt8Type>(column),
        DataType::UInt16 => values::<UInt16Type>(column),
        DataType::UInt32 => values::<UInt32Type>(column),
        DataType::UInt64 => values::<UInt64Type>(column),
        other => bail!(
            "{}: column `distance` has type {other}, expected an integer",
            location()
        ),
    };
    for value in wide {
        if !(0..=64).contains(&value) {
            bail!(
                "{}: column `distance` holds {value}, not a distance between 64-bit fingerprints",
                location()
            );
        }
        out.push(value as u8);
    }
    Ok(())
}

fn values<T: ArrowPrimitiveType>(column: &ArrayRef) -> Vec<i128>
where
    T::Native: Into<i128>,
{
    column
        .as_primitive::<T>()
        .values()
        .iter()
        .map(|&v| v.into())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::pairs::Pair;

    #[test]
    fn cuts_cover_the_rows_in_order_in_near_equal_pieces() {
        for (rows, most) in [
            (0, 5),
            (1, 5),
            (10, 5),
            (11, 5),
            (1_000_000, 125_000),
            (7, 100),
        ] {
            let pieces = cuts(rows, most);
            let mut next = 0;
            for &(offset, len) in &pieces {
                assert_eq!(offset, next, "{rows} rows, at most {most}");
                assert!(len <= most, "{rows} rows: a piece of {len} > {most}");
                next += len;
            }
            assert_eq!(next, rows);
            let sizes: Vec<usize> = pieces.iter().map(|&(_, len)| len).collect();
            let (least, largest) = (sizes.iter().min(), sizes.iter().max());
            assert!(largest.unwrap() - least.unwrap() <= 1, "{sizes:?}");
        }
    }

    #[test]
    fn one_worker_reads_whole_row_groups_and_more_share_large_ones() {
        assert_eq!(piece_rows(10_000_000, 1), usize::MAX);
        assert_eq!(piece_rows(10_000_000, 2), 1_250_000);
        assert_eq!(piece_rows(1_000_000, 2), 125_000);
        assert_eq!(piece_rows(100_000, 4), MIN_PIECE_ROWS);
    }

    #[test]
    fn a_large_row_group_of_fingerprints_is_read_in_units_of_a_probe_batch() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shard.parquet");
        // One row group of 2.5 probe batches, one small one after it.
        let n = MAX_UNIT_ROWS * 5 / 2 + 1_000;
        let ids: Vec<i64> = (0..n as i64).map(|i| i * 7 - 3).collect();
        let fingerprints: Vec<u64> = (0..n as u64).map(|i| i.wrapping_mul(0x9E37_79B9)).collect();
        let group = MAX_UNIT_ROWS * 5 / 2;
        crate::io::parquet::output::write_fingerprints(&path, &ids, &fingerprints, group).unwrap();
        let columns = Columns::default();
        let (files, units) = open_inputs(&[path.display().to_string()], &columns).unwrap();
        let shape: Vec<(usize, u64, u64)> = units
            .iter()
            .map(|u| (u.row_group, u.offset, u.rows))
            .collect();
        let third = (group / 3) as u64;
        assert_eq!(
            shape,
            [
                (0, 0, third),
                (0, third, third),
                (0, 2 * third, group as u64 - 2 * third),
                (1, 0, 1_000)
            ]
        );
        let (mut got_ids, mut got_fingerprints) = (Vec::new(), Vec::new());
        for unit in &units {
            let file = &files[unit.file];
            file.read_fetched(
                file.fetch_unit(unit),
                &columns,
                &mut got_ids,
                &mut got_fingerprints,
            )
            .unwrap();
        }
        assert!(got_ids == ids, "every row once, in order");
        assert!(got_fingerprints == fingerprints);
        // Cut finer for 4 threads (B's reading): pieces of at most a
        // quarter of a thread's share, still every row once, in order.
        let pieces = into_finer_units(&files, &units, 4);
        let most = piece_rows(n, 4) as u64;
        assert!(pieces.len() > units.len());
        assert!(pieces.iter().all(|p| p.rows <= most && p.rows > 0));
        let (mut got_ids, mut got_fingerprints) = (Vec::new(), Vec::new());
        for piece in &pieces {
            let file = &files[piece.file];
            let fetched = file.fetch_unit(piece);
            file.read_fetched(fetched, &columns, &mut got_ids, &mut got_fingerprints)
                .unwrap();
        }
        assert!(got_ids == ids, "every row once, in order, in pieces");
        assert!(got_fingerprints == fingerprints);
    }

    /// Pairs whose every column tells its row apart.
    fn pairs(n: i64) -> Vec<Pair> {
        (0..n)
            .map(|i| Pair {
                query_id: i,
                corpus_id: -3 * i - 1,
                query_simhash: 0,
                corpus_simhash: 0,
                distance: (i % 4) as u8,
                self_pair: i % 3 == 0,
            })
            .collect()
    }

    /// A pair file of `n` pairs (one row group) in `dir`, opened as units.
    fn one_row_group_of(dir: &Path, n: i64) -> Vec<PairUnit> {
        let path = dir.join("pairs.parquet");
        crate::io::parquet::output::write_pairs(&path, &pairs(n)).unwrap();
        let needs = PairNeeds {
            self_pair: true,
            distance: true,
        };
        open_pair_inputs(&[path.display().to_string()], needs).unwrap()
    }

    /// The rows of each unit (a row group or a piece of one), read on its
    /// own, in turn.
    fn rows_of(units: &[PairUnit]) -> Vec<(i64, i64, bool, u8)> {
        let mut out = Vec::new();
        for unit in units {
            let piece = piece_selection(&unit.metadata, unit.row_group, unit.offset, unit.rows);
            let mut batches = PairBatches::open(unit, piece).unwrap();
            while batches.next_into(&mut out).unwrap() {}
        }
        out.iter()
            .map(|r| (r.query, r.corpus, r.corpus_in_corpus, r.distance))
            .collect()
    }

    #[test]
    fn a_shared_row_group_gives_its_pieces_rows_once_among_workers_and_then_closes() {
        let dir = tempfile::tempdir().unwrap();
        let pieces = into_pieces(one_row_group_of(dir.path(), 250_000), 2);
        assert_eq!(pieces.len(), 4);
        // A process given the first and third pieces, as the balance
        // between processes may place them.
        let mine = vec![pieces[2].clone(), pieces[0].clone()];
        let mut expected = rows_of(&mine);
        let (groups, group_of) = SharedRowGroup::of_pieces(&mine);
        assert_eq!((groups.len(), group_of), (1, vec![0, 0]));
        let group = &groups[0];
        // Two workers take a piece's worth each, in turns, until the rows
        // run out: every row comes once, whoever takes it.
        let taken: Vec<Vec<PairRow>> = std::thread::scope(|scope| {
            let takers: Vec<_> = (0..2)
                .map(|_| {
                    scope.spawn(|| {
                        let mut rows = Vec::new();
                        for _ in 0..3 {
                            group.take(mine[0].rows / 2, &mut rows).unwrap();
                        }
                        rows
                    })
                })
                .collect();
            takers.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let key = |r: &PairRow| (r.query, r.corpus, r.corpus_in_corpus, r.distance);
        let mut got: Vec<_> = taken.iter().flatten().map(key).collect();
        got.sort_unstable();
        expected.sort_unstable();
        assert_eq!(got, expected);
        assert!(matches!(*lock(&group.reader), SharedReader::Done));
        let mut more = Vec::new();
        group.take(10, &mut more).unwrap();
        assert!(more.is_empty());
    }

    #[test]
    fn a_selection_skips_the_gaps_between_ranges_and_is_none_for_the_whole() {
        assert!(selection_of(vec![(5, 5), (0, 5)], 10).is_none());
        assert!(selection_of(vec![], 0).is_none());
        let picked = |ranges, whole| -> Vec<(bool, usize)> {
            let selection: Vec<RowSelector> = selection_of(ranges, whole).unwrap().into();
            selection.iter().map(|s| (s.skip, s.row_count)).collect()
        };
        assert_eq!(picked(vec![(0, 5)], 10), [(false, 5)]);
        assert_eq!(
            picked(vec![(7, 3), (2, 3)], 10),
            [(true, 2), (false, 3), (true, 2), (false, 3)]
        );
    }

    #[test]
    fn pieces_of_a_row_group_read_its_rows_once_in_order() {
        let dir = tempfile::tempdir().unwrap();
        // More rows than a batch, so that pieces start and end mid-batch.
        let whole = one_row_group_of(dir.path(), 200_003);
        assert_eq!(whole.len(), 1, "one row group");
        let expected = rows_of(&whole);
        assert_eq!(expected.len(), 200_003);
        assert_eq!(expected[3], (3, -10, false, 3));
        let pieces = into_pieces(whole.clone(), 2);
        assert_eq!(pieces.len(), 4, "pieces of at least {MIN_PIECE_ROWS} rows");
        assert_eq!(rows_of(&pieces), expected);
        for most in [1, 999, 65_537] {
            let small: Vec<PairUnit> = cuts(whole[0].rows, most)
                .into_iter()
                .map(|(offset, rows)| PairUnit {
                    offset,
                    rows,
                    ..whole[0].clone()
                })
                .collect();
            if most > 1 {
                assert_eq!(rows_of(&small), expected, "pieces of {most}");
            } else {
                // Single rows: check a stretch that crosses a batch.
                let stretch = &small[BATCH_ROWS - 2..BATCH_ROWS + 2];
                assert_eq!(rows_of(stretch), expected[BATCH_ROWS - 2..BATCH_ROWS + 2]);
            }
        }
    }
}
