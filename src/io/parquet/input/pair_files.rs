//! Pair files: `query_id`, `corpus_id` and, when `cluster` needs them,
//! `distance` (and `wide_distance`, from `match --verify`) and
//! `self_pair`, in units cut for the workers.

use super::*;
use crate::io::parquet::WIDE_BITS;
use crate::io::parquet::WIDE_DISTANCE;

/// One row of a pair file, as `cluster` needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PairRow {
    pub(crate) query: i64,
    pub(crate) corpus: i64,
    /// The corpus side is a page already in the corpus: the pair is not a
    /// `--self` pair. False when the file has no `self_pair` column.
    pub(crate) corpus_in_corpus: bool,
    /// Bits the fingerprints differ in; 0 when the file has no `distance`
    /// column and it was not asked for.
    pub(crate) distance: u8,
    /// Bits apart over fingerprints and sketches, when the file has
    /// `wide_distance` and distances were asked for.
    pub(crate) wide_distance: Option<u16>,
}

/// Which optional columns `cluster` needs from pair files.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PairNeeds {
    /// `self_pair`, to tell corpus pages from new ones (`--corpus-wins`).
    pub(crate) self_pair: bool,
    /// `distance`, to drop a page for its nearest kept partner.
    pub(crate) distance: bool,
}

/// A row group of a pair file, or a piece of one ([`into_pieces`]), and
/// which optional columns the file has.
#[derive(Clone, Debug)]
pub(crate) struct PairUnit {
    pub(crate) path: Location,
    pub(super) metadata: ArrowReaderMetadata,
    pub(crate) row_group: usize,
    /// The first row of the piece within its row group.
    pub(crate) offset: usize,
    /// Rows in the piece (the whole row group's, as its footer says, until
    /// it is cut).
    pub(crate) rows: usize,
    pub(crate) has_self_pair: bool,
    pub(super) has_distance: bool,
    /// Read only with `distance`.
    pub(super) has_wide_distance: bool,
}

/// The fewest rows a piece of a row group is cut to: below this, setting up
/// a reader and skipping to the piece would cost more than the balance is
/// worth.
pub(super) const MIN_PIECE_ROWS: usize = 1 << 16;

/// The pair units cut so that `workers` (every worker of every process)
/// share the reading evenly: row groups of local files larger than a
/// quarter of a worker's share of all rows (and than [`MIN_PIECE_ROWS`])
/// become pieces of about that size ([`cuts_of`]). A writer that makes
/// few, large row groups (a 1M-pair file from pyarrow is one, Spark cuts
/// them at 128 MB) would otherwise leave all but a few workers nothing to
/// read.
pub(crate) fn into_pieces(units: Vec<PairUnit>, workers: usize) -> Vec<PairUnit> {
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
pub(super) fn piece_rows(total: usize, workers: usize) -> usize {
    match workers {
        0 | 1 => usize::MAX,
        _ => total.div_ceil(4 * workers).max(MIN_PIECE_ROWS),
    }
}

/// A row group of `rows` rows of the file at `path`, cut as [`cuts`] cuts
/// it if the file is local. An object's row groups stay whole: each piece
/// would fetch the whole row group.
pub(super) fn cuts_of(path: &Location, rows: usize, most: usize) -> Vec<(usize, usize)> {
    match path.as_local() {
        Some(_) => cuts(rows, most),
        None => vec![(0, rows)],
    }
}

/// `rows` cut into pieces `(offset, rows)` of at most `most` rows and of
/// sizes within one of each other.
pub(super) fn cuts(rows: usize, most: usize) -> Vec<(usize, usize)> {
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
pub(crate) fn open_pair_inputs(specs: &[String], needs: PairNeeds) -> Result<Vec<PairUnit>> {
    let files = open_all(&expand_locations(specs)?, |path| {
        pair_file_units(path, needs)
    })?;
    let units: Vec<PairUnit> = files.into_iter().flatten().collect();
    if needs.distance {
        check_one_mode(&units)?;
    }
    Ok(units)
}

/// Refuses pair files of which some were verified (`wide_distance`) and
/// some not: their partners could not be compared by nearness.
fn check_one_mode(units: &[PairUnit]) -> Result<()> {
    let with = units.iter().find(|unit| unit.has_wide_distance);
    let without = units.iter().find(|unit| !unit.has_wide_distance);
    if let (Some(with), Some(without)) = (with, without) {
        bail!(
            "{}: no column `{WIDE_DISTANCE}`, which {} has (from match --verify): cluster the pairs of one mode at a time, or use --drop-policy component",
            without.path,
            with.path
        );
    }
    Ok(())
}

/// The row groups of one pair file, once its columns are checked.
pub(super) fn pair_file_units(path: &Location, needs: PairNeeds) -> Result<Vec<PairUnit>> {
    let shown = path;
    let metadata = read_footer(path)?;
    let schema = metadata.schema();
    let type_of = |name: &str| schema.field_with_name(name).ok().map(|f| f.data_type());
    for name in ["query_id", "corpus_id"] {
        match type_of(name) {
            Some(t) if t.is_integer() => {}
            Some(other) => bail!(
                "{shown}: column `{name}` has type {other}, expected an integer (INT64; is this `neardup match` output?)"
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
            "{shown}: no column `self_pair`, so corpus pages cannot be told from new ones: --keep-by corpus (or --corpus-wins) needs `neardup match` output or --corpus (whose pages are the corpus's); else leave the corpus key out"
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
    let has_wide_distance = match type_of(WIDE_DISTANCE) {
        Some(t) if t.is_integer() => needs.distance,
        Some(other) => {
            bail!("{shown}: column `{WIDE_DISTANCE}` has type {other}, expected an integer")
        }
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
            has_wide_distance,
        })
        .collect())
}

/// A reader of a pair file's row group, one batch of rows at a time.
pub(super) struct PairBatches {
    pub(super) unit: PairUnit,
    pub(super) reader: ParquetRecordBatchReader,
    pub(super) queries: Vec<i64>,
    pub(super) corpus: Vec<i64>,
    pub(super) distances: Vec<u16>,
    pub(super) wide_distances: Vec<u16>,
}

impl PairBatches {
    /// Opens `unit`'s row group for the rows `selection` picks (all of
    /// them if `None`).
    pub(super) fn open(unit: &PairUnit, selection: Option<RowSelection>) -> Result<PairBatches> {
        let (shown, rg) = (&unit.path, unit.row_group);
        let wide = unit.has_wide_distance.then_some(WIDE_DISTANCE);
        let roots: Vec<usize> = ["query_id", "corpus_id", "self_pair", "distance"]
            .into_iter()
            .chain(wide)
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
            wide_distances: Vec::new(),
        })
    }

    /// Appends the next batch's rows to `out`; false once there are none.
    pub(super) fn next_into(&mut self, out: &mut Vec<PairRow>) -> Result<bool> {
        let (shown, rg) = (&self.unit.path, self.unit.row_group);
        let Some(batch) = self.reader.next() else {
            return Ok(false);
        };
        let batch = batch.with_context(|| format!("{shown}: cannot decode row group {rg}"))?;
        let location = || format!("{shown} (row group {rg})");
        let (queries, corpus) = (&mut self.queries, &mut self.corpus);
        let (distances, wide) = (&mut self.distances, &mut self.wide_distances);
        queries.clear();
        corpus.clear();
        distances.clear();
        wide.clear();
        id_column(&batch, "query_id", &location, queries)?;
        id_column(&batch, "corpus_id", &location, corpus)?;
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
            distance_column(&batch, "distance", 64, &location, distances)?;
        }
        if self.unit.has_wide_distance {
            distance_column(&batch, WIDE_DISTANCE, WIDE_BITS.into(), &location, wide)?;
        }
        out.extend((0..batch.num_rows()).map(|r| PairRow {
            query: queries[r],
            corpus: corpus[r],
            corpus_in_corpus: flags.is_some_and(|f| !f.value(r)),
            distance: distances.get(r).map_or(0, |&d| d as u8),
            wide_distance: wide.get(r).copied(),
        }));
        Ok(true)
    }
}

/// Column `name` (`distance`, or `wide_distance`), of whatever integer type
/// the writer chose (INT8 from `match`, INT32 from Spark, BIGINT from
/// DuckDB), checked to be a distance between fingerprints of `bits` bits.
pub(super) fn distance_column(
    batch: &RecordBatch,
    name: &str,
    bits: i128,
    location: &dyn Fn() -> String,
    out: &mut Vec<u16>,
) -> Result<()> {
    let column = non_null_column(batch, name, location)?;
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
            "{}: column `{name}` has type {other}, expected an integer",
            location()
        ),
    };
    for value in wide {
        if !(0..=bits).contains(&value) {
            bail!(
                "{}: column `{name}` holds {value}, not a distance between {bits}-bit fingerprints",
                location()
            );
        }
        out.push(value as u16);
    }
    Ok(())
}
