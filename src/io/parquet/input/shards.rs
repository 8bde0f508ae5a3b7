//! Fingerprint shards: their files, the units (row groups or pieces of
//! them) workers read, the `id` and `simhash` columns, and the `sketch`
//! column, read for chosen rows only.

use super::*;
use crate::io::parquet::columns::check_int64;
use crate::io::parquet::{sketch_of_bytes, Sketch, SKETCH_BYTES, SKETCH_COLUMN};
use arrow_array::cast::AsArray;
use arrow_array::FixedSizeBinaryArray;

/// Names of the two columns neardup reads.
#[derive(Clone, Debug)]
pub struct Columns {
    pub(crate) id: String,
    pub(crate) simhash: String,
}

impl Columns {
    /// The columns as the flags that name them, each with its value.
    pub(crate) fn as_flags(&self) -> [(&'static str, String); 2] {
        [
            ("--id-column", self.id.clone()),
            ("--simhash-column", self.simhash.clone()),
        ]
    }
}

impl Default for Columns {
    fn default() -> Self {
        Columns {
            id: "id".into(),
            simhash: "simhash".into(),
        }
    }
}

/// A validated fingerprint shard whose footer has been read once.
#[derive(Clone, Debug)]
pub struct FingerprintFile {
    pub(crate) path: Location,
    metadata: ArrowReaderMetadata,
    id_root: usize,
    simhash_root: usize,
    /// The `sketch` column, if the file has one; its type is checked by
    /// [`Self::check_sketch`].
    sketch_root: Option<usize>,
}

/// One row group of one file, or a piece of one: the unit of work a worker
/// streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Unit {
    pub(crate) file: usize,
    pub(crate) row_group: usize,
    /// The unit's first row within its row group.
    pub(crate) offset: u64,
    pub(crate) rows: u64,
}

/// The most rows a unit of a local file holds: a worker's probe batch.
/// Larger row groups (old pyarrow wrote 64Mi rows to a group, Spark cuts
/// them at 128 MB) are cut into pieces ([`cuts_of`]), so that no worker
/// decodes a whole such group into memory while the others wait.
pub(super) const MAX_UNIT_ROWS: usize = 1 << 20;

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
            check_int64(&shown.to_string(), name, field.data_type())?;
            Ok(index)
        };
        let id_root = root(&columns.id)?;
        let simhash_root = root(&columns.simhash)?;
        let sketch_root = schema.index_of(SKETCH_COLUMN).ok();
        let shard = FingerprintFile {
            path: path.clone(),
            metadata,
            id_root,
            simhash_root,
            sketch_root,
        };
        shard.check_null_statistics(columns)?;
        Ok(shard)
    }

    pub(super) fn check_null_statistics(&self, columns: &Columns) -> Result<()> {
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

    /// Refuses a file without a `sketch` column of sketches, for
    /// `match --verify`.
    pub(crate) fn check_sketch(&self) -> Result<()> {
        let schema = self.metadata.schema();
        let Some(root) = self.sketch_root else {
            bail!(
                "{}: no column `{SKETCH_COLUMN}` (columns: {}): --verify needs shards fingerprinted with a sketch (scheme v7 or later, as the default v12, without --no-sketch)",
                self.path,
                column_list(schema)
            );
        };
        let found = schema.field(root).data_type();
        // A shard rewritten by DuckDB (BLOB) or Spark (BinaryType) holds
        // the same bytes as variable-length binary: read, each value
        // checked to be a sketch's length.
        let binary = matches!(found, DataType::Binary | DataType::LargeBinary);
        if *found != DataType::FixedSizeBinary(SKETCH_BYTES as i32) && !binary {
            bail!(
                "{}: column `{SKETCH_COLUMN}` has type {found}, expected FIXED_LEN_BYTE_ARRAY({SKETCH_BYTES}) or binary values of {SKETCH_BYTES} bytes",
                self.path
            );
        }
        Ok(())
    }

    /// The sketches of `rows` (ascending, distinct, numbered within row
    /// group `rg`), appended to `out` in their order: only the pages
    /// holding them are decoded (a Parquet row selection).
    pub(crate) fn read_sketches(
        &self,
        rg: usize,
        rows: &[u64],
        out: &mut Vec<Sketch>,
    ) -> Result<()> {
        let root = self.sketch_root.expect("checked by check_sketch");
        let shown = &self.path;
        let mut selectors = Vec::new();
        let mut at = 0;
        for run in rows.chunk_by(|a, b| a + 1 == *b) {
            if run[0] > at {
                selectors.push(RowSelector::skip((run[0] - at) as usize));
            }
            selectors.push(RowSelector::select(run.len()));
            at = run[run.len() - 1] + 1;
        }
        let file = open_row_group(&self.path, &self.metadata, rg, &[root])?;
        let mask = ProjectionMask::roots(self.metadata.parquet_schema(), [root]);
        let reader =
            ParquetRecordBatchReaderBuilder::new_with_metadata(file, self.metadata.clone())
                .with_row_groups(vec![rg])
                .with_projection(mask)
                .with_row_selection(RowSelection::from(selectors))
                .with_batch_size(BATCH_ROWS)
                .build()
                .with_context(|| format!("{shown}: cannot read row group {rg}"))?;
        for batch in reader {
            let batch = batch.with_context(|| format!("{shown}: cannot decode row group {rg}"))?;
            let location = || format!("{shown} (row group {rg})");
            let column = non_null_column(&batch, SKETCH_COLUMN, &location)?;
            if let Some(fixed) = column.as_any().downcast_ref::<FixedSizeBinaryArray>() {
                out.extend(fixed.iter().flatten().map(sketch_of_bytes));
                continue;
            }
            let values: Vec<&[u8]> = match column.data_type() {
                DataType::Binary => column.as_binary::<i32>().iter().flatten().collect(),
                _ => column.as_binary::<i64>().iter().flatten().collect(),
            };
            if let Some(bad) = values.iter().find(|v| v.len() != SKETCH_BYTES) {
                bail!(
                    "{}: column `{SKETCH_COLUMN}` holds a value of {} bytes, expected {SKETCH_BYTES}",
                    location(),
                    bad.len()
                );
            }
            out.extend(values.into_iter().map(sketch_of_bytes));
        }
        Ok(())
    }

    /// The fingerprint scheme the file records (`neardup.scheme` in its
    /// key-value metadata); `None` for files made by other tools.
    pub(crate) fn scheme(&self) -> Option<String> {
        let file = self.metadata.metadata().file_metadata();
        file.key_value_metadata()?
            .iter()
            .find(|kv| kv.key == crate::io::parquet::METADATA_KEY)
            .and_then(|kv| kv.value.clone())
    }

    /// Rows in the file.
    pub(crate) fn rows(&self) -> u64 {
        self.metadata.metadata().file_metadata().num_rows().max(0) as u64
    }

    /// Number of row groups.
    pub(crate) fn row_groups(&self) -> usize {
        self.metadata.metadata().num_row_groups()
    }

    /// Rows in row group `rg`.
    pub(crate) fn row_group_rows(&self, rg: usize) -> u64 {
        self.metadata.metadata().row_group(rg).num_rows().max(0) as u64
    }

    /// Starts fetching row group `rg`'s two columns if the file is an
    /// object, for a later [`Self::read_fetched`]: a scan asks for its next
    /// row group before it decodes the current one.
    pub(crate) fn fetch_row_group(&self, rg: usize) -> RowGroupFetch {
        let roots = [self.id_root, self.simhash_root];
        RowGroupFetch {
            row_group: rg,
            piece: None,
            fetch: fetch_row_group(&self.path, &self.metadata, rg, &roots),
        }
    }

    /// [`Self::fetch_row_group`] for a unit of this file: only its rows are
    /// read.
    pub(crate) fn fetch_unit(&self, unit: &Unit) -> RowGroupFetch {
        let (offset, rows) = (unit.offset as usize, unit.rows as usize);
        RowGroupFetch {
            piece: piece_selection(&self.metadata, unit.row_group, offset, rows),
            ..self.fetch_row_group(unit.row_group)
        }
    }

    /// Reads a row group's ids and fingerprints once its fetch
    /// ([`Self::fetch_row_group`], [`Self::fetch_unit`]) has started.
    pub(crate) fn read_fetched(
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
            integer_column(&batch, &columns.id, &location, ids)?;
            integer_column(&batch, &columns.simhash, &location, fingerprints)?;
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

/// Opens every file of `specs` and lists their row groups as units, in path order.
pub(crate) fn open_inputs(
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
pub(crate) fn into_finer_units(
    files: &[FingerprintFile],
    units: &[Unit],
    threads: usize,
) -> Vec<Unit> {
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
