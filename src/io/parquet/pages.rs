//! Reading a table of page attributes (`cluster --pages`): any Parquet
//! files with an INT64 (or UINT64) `id` and the columns asked for, such as
//! fingerprint shards (`fetch_time`, `url`, `n_chars`) or a team's own
//! table of quality scores. Only those columns are read, a row group at a
//! time, so a corpus of billions of rows may be named.

use std::collections::HashSet;

use anyhow::{anyhow, bail, Context, Result};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;

use super::columns::{check_id, column_list, id_column};
use super::input::{expand_locations, not_seen, open_row_group, read_footer};
use crate::io::storage::{open_all, Location};

/// Rows decoded per batch: a batch's strings (URLs) stay a few megabytes.
const BATCH_ROWS: usize = 1 << 15;

/// The id column of a pages table.
pub(crate) const ID: &str = "id";

/// The files of a pages table, checked, and their row groups.
#[derive(Debug)]
pub(crate) struct PagesTable {
    /// The paths as given.
    specs: Vec<String>,
    files: Vec<PagesFile>,
    /// `(file, row group)`, in path order.
    units: Vec<(usize, usize)>,
    /// Whether some file has each optional column asked for.
    has_optional: Vec<bool>,
}

#[derive(Debug)]
struct PagesFile {
    path: Location,
    /// Which of the paths given named the file.
    spec: usize,
    metadata: ArrowReaderMetadata,
    /// The root columns read: the id, the required columns, and those
    /// optional ones the file has.
    roots: Vec<usize>,
}

impl PagesTable {
    /// Opens the files of `specs` (given with `flag`, which errors name),
    /// each of which must have `id` and every column of `required` (which
    /// `required_by` reads, as an error says), each checked by
    /// `check(file, column, type)`; the columns of `optional`
    /// are read where a file has them, checked by `optional_check` (a
    /// column of another type is refused, not passed over unsaid).
    pub(crate) fn open(
        flag: &str,
        specs: &[String],
        (required, required_by): (&[String], &str),
        check: impl Fn(&str, &str, &DataType) -> Result<()> + Sync,
        optional: &[&str],
        optional_check: impl Fn(&str, &str, &DataType) -> Result<()> + Sync,
    ) -> Result<PagesTable> {
        let mut locations = Vec::new();
        let mut spec_of = Vec::new();
        let mut seen = HashSet::new();
        for (at, spec) in specs.iter().enumerate() {
            let found = not_seen(
                spec,
                expand_locations(std::slice::from_ref(spec))?,
                &mut seen,
            );
            spec_of.extend(std::iter::repeat_n(at, found.len()));
            locations.extend(found);
        }
        if locations.is_empty() {
            bail!("{flag} {}: no Parquet files found", specs.join(" "));
        }
        let mut files = open_all(&locations, |path| {
            let required = (required, required_by);
            PagesFile::open(flag, path, required, &check, optional, &optional_check)
        })?;
        for (file, spec) in files.iter_mut().zip(spec_of) {
            file.spec = spec;
        }
        let has_optional = optional
            .iter()
            .map(|name| files.iter().any(|file| file.has(name)))
            .collect();
        let units = files
            .iter()
            .enumerate()
            .flat_map(|(f, file)| {
                (0..file.metadata.metadata().num_row_groups()).map(move |rg| (f, rg))
            })
            .collect();
        Ok(PagesTable {
            specs: specs.to_vec(),
            files,
            units,
            has_optional,
        })
    }

    /// Row groups in all: the units workers take in turn.
    pub(crate) fn units(&self) -> usize {
        self.units.len()
    }

    /// The files, in path order.
    pub(crate) fn files(&self) -> impl Iterator<Item = &Location> {
        self.files.iter().map(|file| &file.path)
    }

    /// Rows in all.
    pub(crate) fn rows(&self) -> u64 {
        let rows = |file: &PagesFile| file.metadata.metadata().file_metadata().num_rows();
        self.files.iter().map(|file| rows(file).max(0) as u64).sum()
    }

    /// Whether some file has optional column `at` (by its place in
    /// `optional`).
    pub(crate) fn has_optional(&self, at: usize) -> bool {
        self.has_optional.get(at).copied().unwrap_or(false)
    }

    /// The file unit `unit` is a row group of.
    pub(crate) fn unit_path(&self, unit: usize) -> &Location {
        &self.files[self.units[unit].0].path
    }

    /// The path given that named unit `unit`'s file.
    pub(crate) fn unit_spec(&self, unit: usize) -> &str {
        &self.specs[self.files[self.units[unit].0].spec]
    }

    /// The directory (or prefix) of unit `unit`'s file, as given.
    pub(crate) fn unit_directory(&self, unit: usize) -> String {
        let path = self.unit_path(unit).to_string();
        match path.rsplit_once('/') {
            Some((directory, _)) => directory.to_string(),
            None => String::new(),
        }
    }

    /// The greatest value of column `name` in unit `unit` by its row
    /// group's statistics, as a one-row array of the column's type: null
    /// where the statistics give none. `None` if the file was not opened
    /// with the column.
    pub(crate) fn unit_statistics_max(&self, unit: usize, name: &str) -> Result<Option<ArrayRef>> {
        let (f, rg) = self.units[unit];
        let file = &self.files[f];
        if !file.has(name) {
            return Ok(None);
        }
        let metadata = file.metadata.metadata();
        let converter = StatisticsConverter::try_new(
            name,
            file.metadata.schema(),
            file.metadata.parquet_schema(),
        )
        .with_context(|| format!("{}: column `{name}`", file.path))?;
        let maxes = converter
            .row_group_maxes(std::iter::once(metadata.row_group(rg)))
            .with_context(|| format!("{}: statistics of column `{name}`", file.path))?;
        Ok(Some(maxes))
    }

    /// The value of `key` in the footer's key-value metadata of unit
    /// `unit`'s file (a fingerprint shard's scheme, for one).
    pub(crate) fn unit_metadata(&self, unit: usize, key: &str) -> Option<String> {
        let file = &self.files[self.units[unit].0];
        let pairs = file
            .metadata
            .metadata()
            .file_metadata()
            .key_value_metadata()?;
        pairs.iter().find(|pair| pair.key == key)?.value.clone()
    }

    /// Reads unit `unit`'s id and `columns` (those of them the file was
    /// opened with), a batch at a time: `each(ids, batch, location)`.
    pub(crate) fn read_unit_columns(
        &self,
        unit: usize,
        columns: &[&str],
        each: impl FnMut(&[i64], &RecordBatch, &str) -> Result<()>,
    ) -> Result<()> {
        let file = &self.files[self.units[unit].0];
        let schema = file.metadata.schema();
        let roots: Vec<usize> = std::iter::once(ID)
            .chain(columns.iter().copied())
            .filter_map(|name| schema.index_of(name).ok())
            .filter(|root| file.roots.contains(root))
            .collect();
        self.read_roots(unit, &roots, each)
    }

    fn read_roots(
        &self,
        unit: usize,
        roots: &[usize],
        mut each: impl FnMut(&[i64], &RecordBatch, &str) -> Result<()>,
    ) -> Result<()> {
        let (f, rg) = self.units[unit];
        let file = &self.files[f];
        let location = format!("{} (row group {rg})", file.path);
        read_row_group(&file.path, &file.metadata, rg, roots, |ids, batch| {
            each(ids, batch, &location)
        })
    }
}

/// Reads the `roots` columns of row group `rg` of the file at `path`, a
/// batch at a time: `each(ids, batch)`, the ids read from its `id` column.
pub(crate) fn read_row_group(
    path: &Location,
    metadata: &ArrowReaderMetadata,
    rg: usize,
    roots: &[usize],
    mut each: impl FnMut(&[i64], &RecordBatch) -> Result<()>,
) -> Result<()> {
    let source = open_row_group(path, metadata, rg, roots)?;
    let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(source, metadata.clone());
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots.iter().copied());
    let reader = builder
        .with_row_groups(vec![rg])
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()
        .with_context(|| format!("{path}: cannot read row group {rg}"))?;
    let location = || format!("{path} (row group {rg})");
    let mut ids = Vec::with_capacity(BATCH_ROWS);
    for batch in reader {
        let batch = batch.with_context(|| format!("{path}: cannot decode row group {rg}"))?;
        ids.clear();
        id_column(&batch, ID, &location, &mut ids)?;
        each(&ids, &batch)?;
    }
    Ok(())
}

impl PagesFile {
    fn open(
        flag: &str,
        path: &Location,
        (required, required_by): (&[String], &str),
        check: &impl Fn(&str, &str, &DataType) -> Result<()>,
        optional: &[&str],
        optional_check: &impl Fn(&str, &str, &DataType) -> Result<()>,
    ) -> Result<PagesFile> {
        let metadata = read_footer(path)?;
        let schema = metadata.schema();
        let shown = path.to_string();
        let missing = |name: &str, reader: &str| {
            anyhow!(
                "{shown}: no column `{name}` (columns: {}), which {reader}",
                column_list(schema)
            )
        };
        let id_reader = format!("{flag} must have");
        let (id_root, id) = (schema.column_with_name(ID)).ok_or_else(|| missing(ID, &id_reader))?;
        check_id(&shown, ID, id.data_type())?;
        let mut roots = vec![id_root];
        for name in required {
            let (root, field) =
                (schema.column_with_name(name)).ok_or_else(|| missing(name, required_by))?;
            check(&shown, name, field.data_type())?;
            roots.push(root);
        }
        for name in optional {
            if let Some((root, field)) = schema.column_with_name(name) {
                optional_check(&shown, name, field.data_type())?;
                roots.push(root);
            }
        }
        roots.sort_unstable();
        roots.dedup();
        Ok(PagesFile {
            path: path.clone(),
            spec: 0,
            metadata,
            roots,
        })
    }

    fn has(&self, name: &str) -> bool {
        let schema = self.metadata.schema();
        schema
            .index_of(name)
            .is_ok_and(|index| self.roots.contains(&index))
    }
}
