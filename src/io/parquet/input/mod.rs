//! Reading Parquet inputs: paths and globs ([`paths`]), fingerprint shards
//! ([`shards`]) and pair files ([`pair_files`]); here, what they share:
//! footers, row-group fetches (local or from an object store), pieces of a
//! row group, and column checks.
//!
//! A column pyarrow wrote from a `DictionaryArray` carries its dictionary
//! type in the file's Arrow schema, and arrow-rs would decode it as one
//! (`Dictionary(Int32, Int64)` for an id). Every footer is read with that
//! type replaced by its value type ([`as_read`]), so the
//! decoder unpacks such a column into plain values, and each check and
//! reader sees the INT64, string or timestamp it accepts.
//!
//! Spark writes timestamps as INT96 by default (a Julian day and the
//! nanoseconds of that day), which arrow-rs decodes as nanoseconds since
//! 1970 in an i64: silently wrong before 1677-09-21 and after 2262-04-11,
//! where Spark's `0001-01-01` and `9999-12-31` placeholders lie. They are
//! read as microseconds instead, Spark's own precision, exact for any year.

mod pair_files;
mod paths;
mod shards;

pub(crate) use pair_files::*;
pub use paths::*;
pub use shards::*;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, bail, Context, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, BooleanArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
};
use parquet::arrow::ProjectionMask;
use parquet::basic::Type as PhysicalType;

use crate::exec::parallel::lock;
use crate::io::parquet::columns::{column_list, id_column, integer_column, non_null_column};
use crate::io::storage::{expand_remote, has_extension, is_url, open_all, Fetch, Location, Source};

/// Rows decoded per batch when streaming a row group: bounds the memory of a
/// unit in flight whatever the size of the shard's row groups. Small enough
/// (512 KB per column) that the allocator reuses the decoder's buffers
/// instead of mapping and zeroing fresh memory for each batch.
const BATCH_ROWS: usize = 1 << 16;

/// The pieces of one row group that a process reads, read by a single reader
/// that the process's workers take batches from in turn. DuckDB writes each
/// column of a row group as one page: a piece read on its own decompresses
/// that whole page and decodes every row before its own, so pieces read apart
/// would decompress the row group once each. Which worker gets which rows
/// does not matter to `cluster`: only the set of pairs a process reads.
pub(crate) struct SharedRowGroup {
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
    pub(crate) fn of_pieces(pieces: &[PairUnit]) -> (Vec<SharedRowGroup>, Vec<usize>) {
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
    pub(crate) fn take(&self, rows: usize, out: &mut Vec<PairRow>) -> Result<()> {
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
    pub(crate) fn path(&self) -> &Location {
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
    load_footer(&source, path)
}

/// Parses the footer of `source`, the file at `path` (its footer
/// prefetched), its columns typed as they are read ([`as_read`]).
pub(crate) fn load_footer(source: &Source, path: &Location) -> Result<ArrowReaderMetadata> {
    ArrowReaderMetadata::load(source, ArrowReaderOptions::new())
        .and_then(as_read)
        .map_err(|e| anyhow!("{path}: not a readable Parquet file ({e})"))
}

/// `metadata` with each top-level dictionary column typed as its values,
/// and each INT96 timestamp as microseconds: given as the schema to read,
/// it makes the decoder unpack the dictionary and convert the INT96
/// without overflow (see the module doc). Unchanged if there is neither.
fn as_read(metadata: ArrowReaderMetadata) -> parquet::errors::Result<ArrowReaderMetadata> {
    let int96: Vec<&str> = (metadata.metadata().file_metadata().schema_descr().columns())
        .iter()
        .filter(|column| column.physical_type() == PhysicalType::INT96)
        .filter(|column| column.path().parts().len() == 1)
        .map(|column| column.name())
        .collect();
    let read_as = |field: &Field| match field.data_type() {
        DataType::Dictionary(_, value) => Some(*value.clone()),
        DataType::Timestamp(TimeUnit::Nanosecond, zone)
            if int96.contains(&field.name().as_str()) =>
        {
            Some(DataType::Timestamp(TimeUnit::Microsecond, zone.clone()))
        }
        _ => None,
    };
    let schema = metadata.schema();
    if !schema.fields().iter().any(|field| read_as(field).is_some()) {
        return Ok(metadata);
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|field| match read_as(field) {
            Some(data_type) => field.as_ref().clone().with_data_type(data_type),
            None => field.as_ref().clone(),
        })
        .collect();
    let schema = Schema::new_with_metadata(fields, schema.metadata().clone());
    let options = ArrowReaderOptions::new().with_schema(Arc::new(schema));
    ArrowReaderMetadata::try_new(metadata.metadata().clone(), options)
}

/// A row group of a fingerprint file whose bytes (for an object) are on
/// their way.
pub(crate) struct RowGroupFetch {
    row_group: usize,
    /// The rows of a piece of the row group; `None`: all of it.
    piece: Option<RowSelection>,
    fetch: Option<Fetch>,
}

impl RowGroupFetch {
    /// Whether the rows come from an object store, their bytes fetched
    /// ahead, rather than from a local file read when decoded.
    pub(crate) fn is_remote(&self) -> bool {
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

/// Reads the columns `columns` of every file of `files` in order, a batch
/// at a time: `each(batch, file)`. A file without one of them is an error
/// naming the file and the column. For readers of whole outputs (the
/// report), which want a few columns of every row and no units.
pub(crate) fn read_columns(
    files: &[Location],
    columns: &[&str],
    mut each: impl FnMut(&RecordBatch, &Location) -> Result<()>,
) -> Result<()> {
    for file in files {
        let source = file.open()?;
        source.prefetch_footer()?;
        let footer = load_footer(&source, file)?;
        let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(source, footer);
        let schema = builder.schema().clone();
        let roots = columns
            .iter()
            .map(|name| {
                schema.index_of(name).map_err(|_| {
                    anyhow!(
                        "{file}: no column `{name}` (it has {})",
                        column_list(&schema)
                    )
                })
            })
            .collect::<Result<Vec<usize>>>()?;
        let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
        let reader = builder
            .with_projection(mask)
            .with_batch_size(BATCH_ROWS)
            .build()
            .with_context(|| format!("{file}: cannot read"))?;
        for batch in reader {
            let batch = batch.with_context(|| format!("{file}: cannot decode"))?;
            each(&batch, file)?;
        }
    }
    Ok(())
}

/// Rows in all of `files`, as their footers say.
pub(crate) fn count_rows(files: &[Location]) -> Result<u64> {
    let mut rows = 0;
    for file in files {
        let footer = read_footer(file)?;
        rows += footer.metadata().file_metadata().num_rows().max(0) as u64;
    }
    Ok(rows)
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
                wide_distance: None,
            })
            .collect()
    }

    /// A pair file of `n` pairs (one row group) in `dir`, opened as units.
    fn one_row_group_of(dir: &Path, n: i64) -> Vec<PairUnit> {
        let path = dir.join("pairs.parquet");
        crate::io::parquet::output::write_pairs(&path, &pairs(n), false).unwrap();
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
