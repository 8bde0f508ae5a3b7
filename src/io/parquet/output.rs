//! Writing Parquet files: the schemas of the files neardup writes, how each
//! column is stored ([`column_layout`]), and the writers, a batch or a row
//! group at a time ([`OpenParquet`], [`ColumnwiseParquet`]). Every file is
//! written under a temporary name and placed by [`crate::io::staging`], so a
//! reader never sees half a file.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Context, Result};
use arrow_array::{
    ArrayRef, BooleanArray, FixedSizeBinaryArray, Int16Array, Int32Array, Int64Array, Int8Array,
    RecordBatch, StringArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory,
};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::metadata::{KeyValue, SortingColumn};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;

use crate::exec::parallel::{in_parallel, lock};
use crate::io::pairs::Pair;
use crate::io::parquet::WIDE_DISTANCE;
use crate::io::staging::{cannot_write, place, prepare_parent, temporary_name};

/// Rows per row group of the files neardup writes.
pub(crate) const ROW_GROUP_ROWS: usize = 1 << 20;
/// Rows a `cluster` part's writer hands Parquet at a time, as soon as its
/// runs let that many through. Every part is handed the same sequence of
/// calls whenever its rows come (full chunks, then the rest), so its pages
/// and bytes are the same for any number of workers; a row group ends at a
/// chunk's end.
pub(crate) const PART_CHUNK_ROWS: usize = 1 << 16;
const _: () = assert!(ROW_GROUP_ROWS.is_multiple_of(PART_CHUNK_ROWS));

/// The column of a `drop/` row that names the key its kept page won by.
pub(crate) const KEPT_BY: &str = "kept_by";

/// The columns of a `drop/` row with the URLs of its page and of the page
/// kept in its place (when the pages table or the corpus has URLs).
pub(crate) const DROP_URL: &str = "url";
pub(crate) const KEEP_URL: &str = "keep_url";

/// The schema of a pairs part; `wide`: verified pairs, with
/// [`WIDE_DISTANCE`] last.
pub(crate) fn pair_schema(wide: bool) -> SchemaRef {
    let mut fields = vec![
        Field::new("query_id", DataType::Int64, false),
        Field::new("corpus_id", DataType::Int64, false),
        Field::new("query_simhash", DataType::Int64, false),
        Field::new("corpus_simhash", DataType::Int64, false),
        Field::new("distance", DataType::Int8, false),
        Field::new("self_pair", DataType::Boolean, false),
    ];
    if wide {
        fields.push(Field::new(WIDE_DISTANCE, DataType::Int16, false));
    }
    Arc::new(Schema::new(fields))
}

/// Writes sorted, de-duplicated pairs as one zstd Parquet file whose footer
/// records the sort order (query_id, corpus_id); with `wide`, verified
/// pairs.
pub fn write_pairs(path: &Path, pairs: &[Pair], wide: bool) -> Result<()> {
    write_pair_slice(path, pairs, PairLayout { raw: false, wide })
}

/// [`write_pairs`] with every column plain and uncompressed: a run of
/// pairs spilled to disk, read back once by the same job.
pub(crate) fn write_pair_run(path: &Path, pairs: &[Pair], wide: bool) -> Result<()> {
    write_pair_slice(path, pairs, PairLayout { raw: true, wide })
}

/// How a pairs file is written: `raw` for a spilled run; `wide` with
/// [`WIDE_DISTANCE`].
#[derive(Clone, Copy)]
struct PairLayout {
    raw: bool,
    wide: bool,
}

/// Pairs in a slice, each row group's columns made straight from it.
fn write_pair_slice(path: &Path, pairs: &[Pair], layout: PairLayout) -> Result<()> {
    let layout = pair_layout(layout);
    let schema = layout.schema.clone();
    write_parquet(path, layout, pairs.len(), |range| {
        pair_batch(&schema, &pairs[range])
    })
}

/// [`write_pairs`] for pairs that come one at a time (a merge of sorted
/// runs): the same row groups, so the same bytes, as the pairs in one slice.
pub(crate) fn write_pair_stream(
    path: &Path,
    mut pairs: impl Iterator<Item = Result<Pair>>,
    wide: bool,
) -> Result<()> {
    let layout = pair_layout(PairLayout { raw: false, wide });
    let mut open = OpenParquet::create(path, &layout)?;
    let mut group = Vec::new();
    loop {
        group.clear();
        for pair in pairs.by_ref().take(layout.group_rows) {
            group.push(pair?);
        }
        if group.is_empty() {
            break;
        }
        open.write_group(&pair_batch(&layout.schema, &group)?)?;
    }
    open.close()
}

/// How a pairs file is laid out.
fn pair_layout(layout: PairLayout) -> FileLayout {
    FileLayout {
        schema: pair_schema(layout.wide),
        zstd_level: OUTPUT_ZSTD_LEVEL,
        sorting: Some(ascending(&[0, 1])),
        key_values: None,
        group_rows: ROW_GROUP_ROWS,
        raw: layout.raw,
    }
}

/// The columns of `rows` as a pairs file of `schema` holds them.
fn pair_batch(schema: &SchemaRef, rows: &[Pair]) -> Result<RecordBatch> {
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|p| p.query_id),
        )),
        Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|p| p.corpus_id),
        )),
        Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|p| p.query_simhash as i64),
        )),
        Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|p| p.corpus_simhash as i64),
        )),
        Arc::new(Int8Array::from_iter_values(
            rows.iter().map(|p| p.distance as i8),
        )),
        Arc::new(BooleanArray::from_iter(
            rows.iter().map(|p| Some(p.self_pair)),
        )),
    ];
    if schema.column_with_name(WIDE_DISTANCE).is_some() {
        let wide = rows
            .iter()
            .map(|p| p.wide_distance.unwrap_or_default() as i16);
        columns.push(Arc::new(Int16Array::from_iter_values(wide)));
    }
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

/// Writes an `id`, `simhash` fingerprint shard (both INT64, the simhash as the
/// bit pattern of the u64), with row groups of `row_group_rows`.
pub fn write_fingerprints(
    path: &Path,
    ids: &[i64],
    fingerprints: &[u64],
    row_group_rows: usize,
) -> Result<()> {
    write_sketched_fingerprints(path, ids, fingerprints, &[], row_group_rows)
}

/// [`write_fingerprints`] with a `sketch` column (as `fingerprint` writes
/// it) when `sketches` are given, one a row.
pub fn write_sketched_fingerprints(
    path: &Path,
    ids: &[i64],
    fingerprints: &[u64],
    sketches: &[super::Sketch],
    row_group_rows: usize,
) -> Result<()> {
    assert_eq!(ids.len(), fingerprints.len());
    let sketched = !sketches.is_empty();
    assert!(!sketched || sketches.len() == ids.len());
    let mut fields = vec![
        Field::new("id", DataType::Int64, false),
        Field::new("simhash", DataType::Int64, false),
    ];
    fields.extend(sketched.then(sketch_field));
    let schema = Arc::new(Schema::new(fields));
    let layout = FileLayout {
        schema: schema.clone(),
        zstd_level: STORED_ZSTD_LEVEL,
        sorting: None,
        key_values: None,
        group_rows: row_group_rows.max(1),
        raw: false,
    };
    write_parquet(path, layout, ids.len(), |range| {
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(
                ids[range.clone()].iter().copied(),
            )),
            Arc::new(Int64Array::from_iter_values(
                fingerprints[range.clone()].iter().map(|&f| f as i64),
            )),
        ];
        if sketched {
            columns.push(sketch_column(&sketches[range])?);
        }
        Ok(RecordBatch::try_new(schema.clone(), columns)?)
    })
}

/// How a column is stored when the default (plain, zstd, no dictionary: most
/// columns are unique per row, so a dictionary only adds a decode step) is
/// wrong for it. Every scan of F decodes the `id` and `simhash` columns, so
/// their layout is chosen for the reader:
/// - simhash bit patterns are random: neither zstd nor a dictionary shrinks
///   them, and skipping the decompression saves every reader time;
/// - a shard's `id` column is delta-encoded: ids assigned in order cost almost
///   nothing, random ids (URL hashes) about as much as plain, and decoding is
///   cheaper than zstd; so are a pair's `query_id` (ascending in a part)
///   and `corpus_id` (ascending within each query), written faster and a
///   little smaller than with zstd;
/// - a page's representative or kept partner is another page's id: zstd
///   hardly shrinks those columns and slows `cluster`'s writing.
///   Delta-encoded, random ids take about as many bytes as plain, and a
///   giant component's rows, which share one representative, a few bits
///   each;
/// - a cluster's size and a pair's distances take few values: a dictionary
///   stores each in a few bits, before zstd, in less time than zstd alone
///   and in fewer bytes; so does a shard's `source`, one value in every row;
/// - so does a drop's `kept_by`, a key's name, without statistics: in rows
///   sorted by id every row group holds every name, so a min and max would
///   skip nothing, and they cost two string comparisons a row, the larger
///   part of writing the column;
/// - a shard's record `offset`s ascend in reading order: delta-encoded, each
///   costs about the bits of a record's length.
fn column_layout(name: &str) -> Option<ColumnLayout> {
    match name {
        // Random bits: nothing to compress.
        "simhash" | "query_simhash" | "corpus_simhash" | super::SKETCH_COLUMN => {
            Some(ColumnLayout::Raw)
        }
        "id" | "query_id" | "corpus_id" | "cluster_id" | "keep_id" | "offset" => {
            Some(ColumnLayout::Delta)
        }
        "cluster_size" | "distance" | WIDE_DISTANCE | "source" => Some(ColumnLayout::FewValues),
        KEPT_BY => Some(ColumnLayout::Names),
        _ => None,
    }
}

/// See [`column_layout`].
enum ColumnLayout {
    /// Plain and uncompressed.
    Raw,
    /// Delta-encoded and uncompressed.
    Delta,
    /// Dictionary-encoded, then compressed as the rest of the file.
    FewValues,
    /// [`ColumnLayout::FewValues`] without statistics.
    Names,
}

/// The zstd level of files read again and again (fingerprint shards, kept
/// for years): the smaller file.
const STORED_ZSTD_LEVEL: i32 = 3;

/// The zstd level of a job's outputs (pairs, `clusters/`, `drop/`), which
/// every worker writes at the end of the job, on its critical path: level 1
/// compresses these columns faster than level 3 and, with the dictionaries
/// above, no larger.
pub(crate) const OUTPUT_ZSTD_LEVEL: i32 = 1;

/// The footer's sort order: ascending by `columns` (indexes), nulls last.
pub(crate) fn ascending(columns: &[i32]) -> Vec<SortingColumn> {
    columns
        .iter()
        .map(|&column_idx| SortingColumn {
            column_idx,
            descending: false,
            nulls_first: false,
        })
        .collect()
}

/// The bytes `[offset, offset + length)` of an input file, which a plain
/// ranged read turns into exactly one record: a gzip member holding one
/// WARC record, a plain WARC record from its `WARC/` line through its
/// closing blank lines, or a JSONL line without its line break.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Span {
    pub(crate) offset: u64,
    pub(crate) length: u64,
}

/// Fingerprinted documents, in the order they were read.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct DocumentRows {
    pub(crate) ids: Vec<i64>,
    pub(crate) urls: Vec<Option<String>>,
    pub(crate) simhashes: Vec<u64>,
    pub(crate) n_features: Vec<u32>,
    pub(crate) n_chars: Vec<u32>,
    /// Microseconds since the Unix epoch, UTC.
    pub(crate) fetch_times: Vec<Option<i64>>,
    /// The `offset` and `length` columns.
    pub(crate) spans: Vec<Option<Span>>,
    /// The `sketch` column; empty for shards without one.
    pub(crate) sketches: Vec<super::Sketch>,
    /// The `canonical_url` column: an HTML page's `rel="canonical"` link.
    pub(crate) canonical_urls: Vec<Option<String>>,
    /// The `main_content` column: whether an HTML page's main content was
    /// found (null where none was looked for).
    pub(crate) main_content: Vec<Option<bool>>,
}

impl DocumentRows {
    /// Moves `other`'s rows after these.
    pub(crate) fn append(&mut self, mut other: DocumentRows) {
        self.ids.append(&mut other.ids);
        self.urls.append(&mut other.urls);
        self.simhashes.append(&mut other.simhashes);
        self.n_features.append(&mut other.n_features);
        self.n_chars.append(&mut other.n_chars);
        self.fetch_times.append(&mut other.fetch_times);
        self.spans.append(&mut other.spans);
        self.sketches.append(&mut other.sketches);
        self.canonical_urls.append(&mut other.canonical_urls);
        self.main_content.append(&mut other.main_content);
    }
}

/// The schema of a fingerprint shard (see [`write_documents`]), with a
/// `sketch` column after `simhash` if `sketch`.
pub(crate) fn document_schema(sketch: bool) -> SchemaRef {
    let sketch = sketch.then(sketch_field);
    let fields = [
        Some(Field::new("id", DataType::Int64, false)),
        Some(Field::new("url", DataType::Utf8, true)),
        Some(Field::new("simhash", DataType::Int64, false)),
        sketch,
        Some(Field::new("n_features", DataType::Int32, false)),
        Some(Field::new("n_chars", DataType::Int32, false)),
        Some(Field::new(
            "fetch_time",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        )),
        Some(Field::new("source", DataType::Utf8, false)),
        Some(Field::new("offset", DataType::Int64, true)),
        Some(Field::new("length", DataType::Int64, true)),
        Some(Field::new(CANONICAL_URL, DataType::Utf8, true)),
        Some(Field::new(MAIN_CONTENT, DataType::Boolean, true)),
    ];
    Arc::new(Schema::new(
        fields.into_iter().flatten().collect::<Vec<_>>(),
    ))
}

/// Writes a fingerprint shard of documents: `id`, `url` (null when unknown),
/// `simhash` (INT64, the bit pattern), `sketch` (if the rows have sketches:
/// FIXED_LEN_BYTE_ARRAY(24), see [`super::Sketch`]), `n_features`, `n_chars`, `fetch_time`
/// (TIMESTAMP in microseconds, UTC; null when unknown), `source` (the input
/// file, in every row), `offset` and `length` (the record's bytes in
/// `source`; null when no range holds it alone), `canonical_url` (an
/// HTML page's canonical link, absolute; else null) and `main_content`
/// (false for an HTML page fingerprinted on all its text because no main
/// content was found; null where none was looked for); the fingerprint
/// scheme goes into the key-value metadata.
///
/// `source` is made into a column a row group at a time, one value
/// repeated, and stored with a dictionary: a few bytes a row group.
pub(crate) fn write_documents(
    path: &Path,
    rows: &DocumentRows,
    scheme: &str,
    source: &str,
) -> Result<()> {
    let sketched = !rows.sketches.is_empty();
    let schema = document_schema(sketched);
    let n = rows.ids.len();
    let key_values = vec![KeyValue::new(
        super::METADATA_KEY.to_string(),
        scheme.to_string(),
    )];
    let layout = FileLayout::fingerprint_shard(schema.clone(), key_values);
    write_parquet(path, layout, n, |range| {
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(rows.ids[range.clone()].to_vec())),
            Arc::new(StringArray::from_iter(
                rows.urls[range.clone()].iter().map(|u| u.as_deref()),
            )),
            Arc::new(Int64Array::from_iter_values(
                rows.simhashes[range.clone()].iter().map(|&f| f as i64),
            )),
        ];
        if sketched {
            columns.push(sketch_column(&rows.sketches[range.clone()])?);
        }
        columns.extend::<[ArrayRef; 8]>([
            Arc::new(Int32Array::from_iter_values(
                rows.n_features[range.clone()].iter().map(|&x| x as i32),
            )),
            Arc::new(Int32Array::from_iter_values(
                rows.n_chars[range.clone()].iter().map(|&x| x as i32),
            )),
            Arc::new(
                TimestampMicrosecondArray::from(rows.fetch_times[range.clone()].to_vec())
                    .with_timezone("UTC"),
            ),
            Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
                source,
                range.len(),
            ))),
            Arc::new(Int64Array::from_iter(
                rows.spans[range.clone()]
                    .iter()
                    .map(|s| s.map(|s| s.offset as i64)),
            )),
            Arc::new(Int64Array::from_iter(
                rows.spans[range.clone()]
                    .iter()
                    .map(|s| s.map(|s| s.length as i64)),
            )),
            Arc::new(StringArray::from_iter(
                rows.canonical_urls[range.clone()]
                    .iter()
                    .map(|u| u.as_deref()),
            )),
            Arc::new(BooleanArray::from(rows.main_content[range].to_vec())),
        ]);
        Ok(RecordBatch::try_new(schema.clone(), columns)?)
    })
}

/// A fingerprint shard's column of canonical links.
pub(crate) const CANONICAL_URL: &str = "canonical_url";
/// A fingerprint shard's column of whether main content was found.
pub(crate) const MAIN_CONTENT: &str = "main_content";

/// The field of a shard's sketches: FIXED_LEN_BYTE_ARRAY(24).
fn sketch_field() -> Field {
    let bytes = DataType::FixedSizeBinary(super::SKETCH_BYTES as i32);
    Field::new(super::SKETCH_COLUMN, bytes, false)
}

/// A `sketch` column of `sketches`.
fn sketch_column(sketches: &[super::Sketch]) -> Result<ArrayRef> {
    let bytes = sketches.iter().map(super::sketch_bytes);
    Ok(Arc::new(FixedSizeBinaryArray::try_from_iter(bytes)?))
}

/// What a Parquet file neardup writes is made of, besides each column's
/// own layout (see [`column_layout`]).
pub(crate) struct FileLayout {
    pub(crate) schema: SchemaRef,
    pub(crate) zstd_level: i32,
    /// The sort order the footer records.
    pub(crate) sorting: Option<Vec<SortingColumn>>,
    pub(crate) key_values: Option<Vec<KeyValue>>,
    pub(crate) group_rows: usize,
    /// Every column plain and uncompressed, and the file kept on this
    /// machine (never uploaded with an output bound for an object store):
    /// a file read back once by this process (a spilled run), where
    /// encoding costs more than it saves.
    pub(crate) raw: bool,
}

impl FileLayout {
    /// A fingerprint shard's: in row groups of [`ROW_GROUP_ROWS`], with
    /// `key_values` (its scheme).
    pub(crate) fn fingerprint_shard(schema: SchemaRef, key_values: Vec<KeyValue>) -> FileLayout {
        FileLayout {
            schema,
            zstd_level: STORED_ZSTD_LEVEL,
            sorting: None,
            key_values: Some(key_values),
            group_rows: ROW_GROUP_ROWS,
            raw: false,
        }
    }

    /// A `cluster` output part's: sorted by its first column (the page's
    /// id), in row groups of [`ROW_GROUP_ROWS`].
    pub(crate) fn cluster_part(schema: SchemaRef, raw: bool) -> FileLayout {
        FileLayout {
            schema,
            zstd_level: OUTPUT_ZSTD_LEVEL,
            sorting: Some(ascending(&[0])),
            key_values: None,
            group_rows: ROW_GROUP_ROWS,
            raw,
        }
    }
}

/// Writes `rows` rows produced batch by batch, one row group per batch of
/// `layout.group_rows`, under a temporary name renamed into place.
fn write_parquet(
    path: &Path,
    layout: FileLayout,
    rows: usize,
    mut batch: impl FnMut(std::ops::Range<usize>) -> Result<RecordBatch>,
) -> Result<()> {
    let mut open = OpenParquet::create(path, &layout)?;
    let mut start = 0;
    while start < rows {
        let end = (start + layout.group_rows).min(rows);
        open.write_group(&batch(start..end)?)?;
        start = end;
    }
    open.close()
}

/// A Parquet file being written under its temporary name.
pub(crate) struct OpenParquet {
    writer: ArrowWriter<File>,
    /// Where it goes once closed (what errors name).
    path: PathBuf,
    tmp: PathBuf,
    pub(crate) schema: SchemaRef,
    /// Renamed into place but never uploaded ([`FileLayout::raw`]).
    local: bool,
}

impl OpenParquet {
    pub(crate) fn create(path: &Path, layout: &FileLayout) -> Result<OpenParquet> {
        let mut props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(layout.zstd_level)?))
            .set_dictionary_enabled(false)
            .set_sorting_columns(layout.sorting.clone())
            .set_key_value_metadata(layout.key_values.clone())
            .set_max_row_group_row_count(Some(layout.group_rows));
        for field in layout.schema.fields() {
            let column = ColumnPath::from(field.name().as_str());
            let layout = match layout.raw {
                true => Some(ColumnLayout::Raw),
                false => column_layout(field.name()),
            };
            props = match layout {
                Some(ColumnLayout::Raw) => props
                    .set_column_encoding(column.clone(), Encoding::PLAIN)
                    .set_column_compression(column, Compression::UNCOMPRESSED),
                Some(ColumnLayout::Delta) => props
                    .set_column_encoding(column.clone(), Encoding::DELTA_BINARY_PACKED)
                    .set_column_compression(column, Compression::UNCOMPRESSED),
                Some(ColumnLayout::FewValues) => props.set_column_dictionary_enabled(column, true),
                Some(ColumnLayout::Names) => props
                    .set_column_dictionary_enabled(column.clone(), true)
                    .set_column_statistics_enabled(column, EnabledStatistics::None),
                None => props,
            };
        }
        let tmp = temporary_name(path);
        prepare_parent(path)?;
        let file = File::create(&tmp).map_err(|e| cannot_write(&tmp, "create", e))?;
        let schema = layout.schema.clone();
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(props.build()))
            .map_err(|error| writing_error(path, error))?;
        Ok(OpenParquet {
            writer,
            path: path.to_path_buf(),
            tmp,
            schema,
            local: layout.raw,
        })
    }

    /// Writes `batch` as one row group.
    pub(crate) fn write_group(&mut self, batch: &RecordBatch) -> Result<()> {
        self.write(batch)?;
        self.writer
            .flush()
            .map_err(|error| writing_error(&self.path, error))
    }

    /// Adds `batch` to the row group being written, which ends once it
    /// holds the layout's rows (or at [`Self::close`]).
    pub(crate) fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.writer
            .write(batch)
            .map_err(|error| writing_error(&self.path, error))
    }

    /// Writes the footer and renames the file into place.
    pub(crate) fn close(self) -> Result<()> {
        self.close_sized().map(|_| ())
    }

    /// [`Self::close`], giving the file's size (once placed, a file bound
    /// for an object store is no longer here to ask).
    pub(crate) fn close_sized(self) -> Result<u64> {
        self.writer
            .close()
            .map_err(|error| writing_error(&self.path, error))?;
        let size = fs::metadata(&self.tmp)
            .map_err(|e| cannot_write(&self.tmp, "read", e))?
            .len();
        place_written(&self.tmp, &self.path, self.local)?;
        Ok(size)
    }

    /// This file written on instead a row group at a time, the columns of
    /// each encoded on several threads.
    pub(crate) fn columnwise(self) -> Result<ColumnwiseParquet> {
        let (writer, groups) = self
            .writer
            .into_serialized_writer()
            .map_err(|error| writing_error(&self.path, error))?;
        Ok(ColumnwiseParquet {
            writer,
            groups,
            written: 0,
            path: self.path,
            tmp: self.tmp,
            schema: self.schema,
            local: self.local,
        })
    }
}

/// A Parquet file being written under its temporary name a row group at a
/// time, each group's columns made and encoded on several threads
/// ([`OpenParquet::columnwise`]): a file too large to wait for on one
/// thread while others are idle, such as a `drop/` part with URLs.
pub(crate) struct ColumnwiseParquet {
    writer: SerializedFileWriter<File>,
    groups: ArrowRowGroupWriterFactory,
    /// Row groups written so far.
    written: usize,
    path: PathBuf,
    tmp: PathBuf,
    schema: SchemaRef,
    local: bool,
}

impl ColumnwiseParquet {
    /// Writes a row group whose column `c` is `column(c)`, each column
    /// made and encoded as a task of its own on up to `threads` threads.
    /// The schema's fields are flat: one Parquet column each.
    pub(crate) fn write_group(
        &mut self,
        threads: usize,
        column: impl Fn(usize) -> Result<ArrayRef> + Sync,
    ) -> Result<()> {
        let failed = |error| writing_error(&self.path, error);
        let writers = self.groups.create_column_writers(self.written);
        let writers: Vec<Mutex<Option<ArrowColumnWriter>>> = writers
            .map_err(failed)?
            .into_iter()
            .map(|w| Mutex::new(Some(w)))
            .collect();
        let fields = self.schema.fields();
        let chunks = in_parallel(fields.len(), threads, |c| -> Result<ArrowColumnChunk> {
            let mut writer = lock(&writers[c]).take().expect("each column is one task");
            let array = column(c)?;
            for leaf in compute_leaves(&fields[c], &array).map_err(failed)? {
                writer.write(&leaf).map_err(failed)?;
            }
            writer.close().map_err(failed)
        });
        let mut group = self.writer.next_row_group().map_err(failed)?;
        for chunk in chunks {
            chunk?.append_to_row_group(&mut group).map_err(failed)?;
        }
        group.close().map_err(failed)?;
        self.written += 1;
        Ok(())
    }

    /// Writes the footer and renames the file into place.
    pub(crate) fn close(self) -> Result<()> {
        self.writer
            .close()
            .map_err(|error| writing_error(&self.path, error))?;
        place_written(&self.tmp, &self.path, self.local)
    }
}

/// Renames a closed file into place, and for an output bound for an
/// object store (unless `local`) uploads it.
fn place_written(tmp: &Path, path: &Path, local: bool) -> Result<()> {
    if local {
        return fs::rename(tmp, path)
            .with_context(|| format!("{}: cannot rename into place", path.display()));
    }
    place(tmp, path)
}

/// A Parquet writer's error as one line naming the file: an I/O failure (a
/// full disk) is the OS error once, where the writer's own error would show
/// it twice and name no file.
fn writing_error(path: &Path, error: ParquetError) -> anyhow::Error {
    match error {
        ParquetError::External(cause) => anyhow!("{}: cannot write: {cause}", path.display()),
        other => anyhow!("{}: cannot write: {other}", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    #[test]
    fn shards_store_simhash_plain_and_ids_delta_encoded() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("shard.parquet");
        let ids: Vec<i64> = (0..5000).collect();
        let fingerprints: Vec<u64> = ids
            .iter()
            .map(|&i| (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        write_fingerprints(&path, &ids, &fingerprints, 2048)?;
        let reader = SerializedFileReader::new(File::open(&path)?)?;
        let groups = reader.metadata().row_groups();
        assert_eq!(groups.len(), 3);
        for group in groups {
            let id = group.column(0);
            let simhash = group.column(1);
            assert_eq!(id.column_path().string(), "id");
            assert!(id.encodings().any(|e| e == Encoding::DELTA_BINARY_PACKED));
            assert!(!id.encodings().any(|e| e == Encoding::RLE_DICTIONARY));
            assert_eq!(simhash.compression(), Compression::UNCOMPRESSED);
            assert!(!simhash.encodings().any(|e| e == Encoding::RLE_DICTIONARY));
        }
        Ok(())
    }

    #[test]
    fn pairs_store_their_ids_delta_encoded_and_fingerprints_plain() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("pairs.parquet");
        let pairs: Vec<Pair> = (0..3000i64)
            .map(|i| Pair {
                query_id: i / 3,
                corpus_id: (i % 3) * 1_000_003 + i,
                query_simhash: (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                corpus_simhash: (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 1,
                distance: 1,
                self_pair: i % 2 == 0,
                wide_distance: None,
            })
            .collect();
        write_pairs(&path, &pairs, false)?;
        let reader = SerializedFileReader::new(File::open(&path)?)?;
        for group in reader.metadata().row_groups() {
            for column in group.columns() {
                let name = column.column_path().string();
                let delta = column
                    .encodings()
                    .any(|e| e == Encoding::DELTA_BINARY_PACKED);
                assert_eq!(delta, name.ends_with("_id"), "{name}");
                if name.ends_with("_id") || name.ends_with("_simhash") {
                    assert_eq!(column.compression(), Compression::UNCOMPRESSED, "{name}");
                }
            }
        }
        Ok(())
    }

    #[test]
    fn a_file_written_columnwise_has_the_bytes_of_one_written_batch_by_batch() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("distance", DataType::Int8, true),
            Field::new("url", DataType::Utf8, true),
            Field::new("keep_url", DataType::Utf8, true),
        ]));
        let layout = FileLayout {
            schema: schema.clone(),
            zstd_level: OUTPUT_ZSTD_LEVEL,
            sorting: Some(ascending(&[0])),
            key_values: None,
            group_rows: 1_000,
            raw: false,
        };
        // Three groups of other sizes, with nulls and strings of all lengths.
        let groups: Vec<RecordBatch> = [1_000i64, 1_000, 17]
            .iter()
            .enumerate()
            .map(|(g, &rows)| {
                let ids = (0..rows).map(|i| g as i64 * 1_000 + i);
                let url =
                    |i: i64, step: i64| (i % step != 0).then(|| "u".repeat((i % 91) as usize));
                let columns: Vec<ArrayRef> = vec![
                    Arc::new(Int64Array::from_iter_values(ids.clone())),
                    Arc::new(Int8Array::from_iter(
                        ids.clone().map(|i| (i % 5 > 0).then_some(i as i8 % 4)),
                    )),
                    Arc::new(StringArray::from_iter(ids.clone().map(|i| url(i, 7)))),
                    Arc::new(StringArray::from_iter(ids.map(|i| url(i * 3, 11)))),
                ];
                RecordBatch::try_new(schema.clone(), columns).unwrap()
            })
            .collect();
        let batchwise = dir.path().join("batchwise.parquet");
        let mut file = OpenParquet::create(&batchwise, &layout)?;
        for group in &groups {
            file.write_group(group)?;
        }
        file.close()?;
        let expected = fs::read(&batchwise)?;
        for threads in [1, 3] {
            let columnwise = dir.path().join(format!("columnwise-{threads}.parquet"));
            let mut file = OpenParquet::create(&columnwise, &layout)?.columnwise()?;
            for group in &groups {
                file.write_group(threads, |c| Ok(group.column(c).clone()))?;
            }
            file.close()?;
            assert!(
                fs::read(&columnwise)? == expected,
                "{threads} threads: other bytes"
            );
        }
        Ok(())
    }
}
