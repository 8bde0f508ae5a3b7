//! Reading fingerprint shards: path expansion, schema checks, and row-group
//! units streamed one at a time.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use arrow_array::{Array, BooleanArray, Int64Array, RecordBatch, UInt64Array};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;

/// Rows decoded per batch when streaming a row group: bounds the memory of a
/// unit in flight whatever the size of the shard's row groups. Small enough
/// (512 KB per column) that the allocator reuses the decoder's buffers: at
/// 1M rows each batch mapped and zeroed fresh memory, and page faults were
/// 10% of a scan (279K faults against 165K for 40M rows).
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

/// Expands files, directories (every `*.parquet` below, skipping `_` and `.`
/// entries as Spark and Hadoop do) and glob patterns into a sorted list of files.
pub fn expand_paths(specs: &[String]) -> Result<Vec<PathBuf>> {
    expand_paths_with(specs, &["parquet"])
}

/// Like [`expand_paths`], taking from directories the files whose names end
/// in `.` and one of `extensions`.
pub fn expand_paths_with(specs: &[String], extensions: &[&str]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for spec in specs {
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
    pub path: PathBuf,
    metadata: ArrowReaderMetadata,
    id_root: usize,
    simhash_root: usize,
}

/// One row group of one file: the unit of work a worker streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unit {
    pub file: usize,
    pub row_group: usize,
    pub rows: u64,
}

impl FingerprintFile {
    /// Reads the footer and checks that both columns exist with an integer
    /// 64-bit type and, where statistics say so, hold no nulls.
    pub fn open(path: &Path, columns: &Columns) -> Result<FingerprintFile> {
        let shown = path.display();
        let file = File::open(path).with_context(|| format!("{shown}: cannot open"))?;
        let metadata = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
            .map_err(|e| anyhow!("{shown}: not a readable Parquet file ({e})"))?;
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
            path: path.to_path_buf(),
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
                        self.path.display()
                    );
                }
            }
        }
        Ok(())
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

    /// Appends the ids and fingerprints of row group `rg` to `ids` and
    /// `fingerprints`, decoding at most [`BATCH_ROWS`] rows at a time.
    pub fn read_row_group(
        &self,
        rg: usize,
        columns: &Columns,
        ids: &mut Vec<i64>,
        fingerprints: &mut Vec<u64>,
    ) -> Result<()> {
        let shown = self.path.display();
        let file = File::open(&self.path).with_context(|| format!("{shown}: cannot open"))?;
        let mask = ProjectionMask::roots(
            self.metadata.parquet_schema(),
            [self.id_root, self.simhash_root],
        );
        let reader =
            ParquetRecordBatchReaderBuilder::new_with_metadata(file, self.metadata.clone())
                .with_row_groups(vec![rg])
                .with_projection(mask)
                .with_batch_size(BATCH_ROWS)
                .build()
                .with_context(|| format!("{shown}: cannot read row group {rg}"))?;
        let wanted = self.row_group_rows(rg) as usize;
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

    /// Reads every row of the file, one row group at a time.
    pub fn read_all(
        &self,
        columns: &Columns,
        mut each: impl FnMut(&[i64], &[u64]) -> Result<()>,
    ) -> Result<()> {
        let (mut ids, mut fingerprints) = (Vec::new(), Vec::new());
        for rg in 0..self.row_groups() {
            ids.clear();
            fingerprints.clear();
            self.read_row_group(rg, columns, &mut ids, &mut fingerprints)?;
            each(&ids, &fingerprints)?;
        }
        Ok(())
    }
}

/// Appends an INT64 or UINT64 column to `out` as `T`, refusing nulls.
fn integer_column<T>(
    batch: &RecordBatch,
    name: &str,
    location: &dyn Fn() -> String,
    out: &mut Vec<T>,
    from_i64: impl Fn(i64) -> T,
) -> Result<()> {
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

fn column_list(schema: &arrow_schema::Schema) -> String {
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
    let files: Vec<FingerprintFile> = expand_paths(specs)?
        .iter()
        .map(|p| FingerprintFile::open(p, columns))
        .collect::<Result<_>>()?;
    let units = files
        .iter()
        .enumerate()
        .flat_map(|(file, shard)| {
            (0..shard.row_groups()).map(move |row_group| Unit {
                file,
                row_group,
                rows: shard.row_group_rows(row_group),
            })
        })
        .filter(|u| u.rows > 0)
        .collect();
    Ok((files, units))
}

/// An edge of the pair graph, one row of `match` output:
/// `(query_id, corpus_id, self_pair)`.
pub type PairEdge = (i64, i64, bool);

/// The row groups of `match` outputs (files, directories or globs), as
/// `(file, row group)` units in path order, each file checked to have the
/// pair columns.
pub fn open_pair_inputs(specs: &[String]) -> Result<Vec<(PathBuf, usize)>> {
    let mut units = Vec::new();
    for path in expand_paths(specs)? {
        let shown = path.display();
        let file = File::open(&path).with_context(|| format!("{shown}: cannot open"))?;
        let metadata = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
            .map_err(|e| anyhow!("{shown}: not a readable Parquet file ({e})"))?;
        let schema = metadata.schema();
        for (name, expected) in [
            ("query_id", DataType::Int64),
            ("corpus_id", DataType::Int64),
            ("self_pair", DataType::Boolean),
        ] {
            match schema.field_with_name(name) {
                Ok(field) if *field.data_type() == expected => {}
                Ok(field) => bail!(
                    "{shown}: column `{name}` has type {}, expected {expected} (is this `neardup match` output?)",
                    field.data_type()
                ),
                Err(_) => bail!(
                    "{shown}: no column `{name}` (columns: {}; is this `neardup match` output?)",
                    column_list(schema)
                ),
            }
        }
        let groups = metadata.metadata().num_row_groups();
        units.extend((0..groups).map(|rg| (path.clone(), rg)));
    }
    Ok(units)
}

/// Appends the edges of row group `rg` of a `match` output file to `out`.
pub fn read_pair_edges(path: &Path, rg: usize, out: &mut Vec<PairEdge>) -> Result<()> {
    let shown = path.display();
    let file = File::open(path).with_context(|| format!("{shown}: cannot open"))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| anyhow!("{shown}: not a readable Parquet file ({e})"))?;
    let schema = builder.parquet_schema();
    let roots: Vec<usize> = ["query_id", "corpus_id", "self_pair"]
        .iter()
        .filter_map(|name| builder.schema().index_of(name).ok())
        .collect();
    let mask = ProjectionMask::roots(schema, roots);
    let reader = builder
        .with_row_groups(vec![rg])
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()
        .with_context(|| format!("{shown}: cannot read row group {rg}"))?;
    for batch in reader {
        let batch = batch.with_context(|| format!("{shown}: cannot decode row group {rg}"))?;
        let location = || format!("{shown} (row group {rg})");
        let (mut queries, mut corpus) = (Vec::new(), Vec::new());
        integer_column(&batch, "query_id", &location, &mut queries, |v| v)?;
        integer_column(&batch, "corpus_id", &location, &mut corpus, |v| v)?;
        let flags = batch
            .column_by_name("self_pair")
            .and_then(|c| c.as_any().downcast_ref::<BooleanArray>())
            .filter(|c| c.null_count() == 0)
            .ok_or_else(|| anyhow!("{}: column `self_pair` is missing or has nulls", location()))?;
        out.extend((0..batch.num_rows()).map(|r| (queries[r], corpus[r], flags.value(r))));
    }
    Ok(())
}
