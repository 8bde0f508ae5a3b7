//! Copying a fingerprint shard without some of its pages: a night's batch
//! joins the corpus without the pages tonight's clusters dropped.
//!
//! Every column is copied as it is read, with the shard's key-value
//! metadata (its scheme), in the row groups and compression neardup writes
//! fingerprint shards with.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use arrow_array::{BooleanArray, RecordBatch};
use arrow_schema::Schema;
use arrow_select::filter::filter_record_batch;
use parquet::file::metadata::KeyValue;

use super::input::read_footer;
use super::output::{FileLayout, OpenParquet};
use super::pages::read_row_group;
use crate::io::storage::Location;

/// What [`copy_without`] copied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Copied {
    pub(crate) rows: u64,
    pub(crate) left_out: u64,
    /// The file's size.
    pub(crate) bytes: u64,
}

/// Writes the rows of the shard at `source` whose `id` is not in
/// `left_out` to `to` (under a temporary name renamed into place).
pub(crate) fn copy_without(
    source: &Location,
    left_out: &HashSet<i64>,
    to: &Path,
) -> Result<Copied> {
    let metadata = read_footer(source)?;
    let key_values: Vec<KeyValue> = metadata
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .into_iter()
        .flatten()
        // Arrow's own record of the schema is written anew.
        .filter(|kv| kv.key != "ARROW:schema")
        .cloned()
        .collect();
    let schema = Arc::new(Schema::new(metadata.schema().fields().clone()));
    let layout = FileLayout::fingerprint_shard(schema.clone(), key_values);
    let mut out = OpenParquet::create(to, &layout)?;
    let roots: Vec<usize> = (0..schema.fields().len()).collect();
    let mut copied = Copied::default();
    for rg in 0..metadata.metadata().num_row_groups() {
        read_row_group(source, &metadata, rg, &roots, |ids, batch| {
            let keep: BooleanArray = ids.iter().map(|id| Some(!left_out.contains(id))).collect();
            let kept = filter_record_batch(batch, &keep)?;
            copied.rows += kept.num_rows() as u64;
            copied.left_out += (batch.num_rows() - kept.num_rows()) as u64;
            out.write(&RecordBatch::try_new(
                schema.clone(),
                kept.columns().to_vec(),
            )?)
        })?;
    }
    copied.bytes = out.close_sized()?;
    Ok(copied)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::parquet::input::{expand_locations, read_files, FingerprintFile};
    use crate::io::parquet::output::write_sketched_fingerprints;

    #[test]
    fn rows_left_out_are_gone_and_every_other_row_and_column_stays() {
        let dir = tempfile::tempdir().unwrap();
        let ids: Vec<i64> = (0..250).map(|i| i * 7 - 500).collect();
        let fps: Vec<u64> = ids
            .iter()
            .map(|&id| (id as u64).wrapping_mul(0x9E37))
            .collect();
        let sketches: Vec<crate::io::parquet::Sketch> =
            ids.iter().map(|&id| [id as u64; 3]).collect();
        let source = dir.path().join("b.parquet");
        write_sketched_fingerprints(&source, &ids, &fps, &sketches, 100).unwrap();
        let left_out: HashSet<i64> = ids.iter().copied().filter(|id| id % 3 == 0).collect();
        let location = expand_locations(&[source.display().to_string()]).unwrap();
        let to = dir.path().join("part-00000.parquet");
        let copied = copy_without(&location[0], &left_out, &to).unwrap();
        let kept: Vec<usize> = (0..ids.len())
            .filter(|&i| !left_out.contains(&ids[i]))
            .collect();
        assert_eq!(copied.rows, kept.len() as u64);
        assert_eq!(copied.left_out, left_out.len() as u64);
        assert_eq!(copied.bytes, std::fs::metadata(&to).unwrap().len());

        let written = expand_locations(&[to.display().to_string()]).unwrap();
        let file = FingerprintFile::open(&written[0], &Default::default()).unwrap();
        file.check_sketch().unwrap();
        let (mut got_ids, mut got_fps, mut got_sketches) = (Vec::new(), Vec::new(), Vec::new());
        read_files(std::slice::from_ref(&file), &Default::default(), |i, f| {
            got_ids.extend_from_slice(i);
            got_fps.extend_from_slice(f);
            Ok(())
        })
        .unwrap();
        for rg in 0..file.row_groups() {
            let rows: Vec<u64> = (0..file.row_group_rows(rg)).collect();
            file.read_sketches(rg, &rows, &mut got_sketches).unwrap();
        }
        assert_eq!(got_ids, kept.iter().map(|&i| ids[i]).collect::<Vec<_>>());
        assert_eq!(got_fps, kept.iter().map(|&i| fps[i]).collect::<Vec<_>>());
        assert_eq!(
            got_sketches,
            kept.iter().map(|&i| sketches[i]).collect::<Vec<_>>()
        );
    }
}
