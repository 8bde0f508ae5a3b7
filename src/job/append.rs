//! The append stage: tonight's fingerprint shards (B) join the corpus as a
//! batch of their own, committed as any output is, with `_SUCCESS` last, so
//! that tomorrow's match reads the whole batch or none of it (directory
//! inputs skip hidden and `_` entries).
//!
//! The pages tonight's clusters dropped are left out: they are not pages
//! the crawl keeps. In the corpus, such a page would be a corpus page
//! tomorrow, ranked by its next keys against the page it was dropped for:
//! it could win, and that page be dropped in turn, so that acting on both
//! nights' drop lists drops both; and a later copy of it would be dropped
//! for a page already deleted. The shards are rewritten without those
//! rows, every column and the scheme kept; a night without drops (or a job
//! without `[cluster]`) copies them byte for byte.

use std::collections::HashSet;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use crate::io::parquet::input::expand_locations;
use crate::io::parquet::pages::PagesTable;
use crate::io::parquet::rewrite::copy_without;
use crate::io::staging::{copy_into_place, part_name, write_atomically, Staging};
use crate::io::storage::{is_url, SOURCES};

/// Copies B's shards (`queries`) into `batch`, a new directory or prefix
/// of `corpus`, without the pages of the `drop/` output `drops` (if the
/// job clusters); gives the stage's line.
pub(super) fn append_batch(
    queries: &[String],
    drops: Option<&Path>,
    corpus: &Path,
    batch: &Path,
) -> Result<String> {
    let files = expand_locations(queries)?;
    let left_out = match drops {
        Some(drops) => dropped_ids(drops)?,
        None => HashSet::new(),
    };
    if !is_url(&corpus.to_string_lossy()) {
        fs::create_dir_all(corpus)
            .with_context(|| format!("{}: cannot create", corpus.display()))?;
    }
    let staging = Staging::create(batch, true)?;
    let (mut bytes, mut rows_left_out) = (0, 0);
    for (i, file) in files.iter().enumerate() {
        let to = staging.dir().join(part_name(i));
        if left_out.is_empty() {
            bytes += copy_into_place(file, &to)?;
            continue;
        }
        let copied = copy_without(file, &left_out, &to)?;
        bytes += copied.bytes;
        rows_left_out += copied.left_out;
    }
    let manifest: Vec<String> = files.iter().map(|f| f.to_string()).collect();
    write_atomically(
        &staging.dir().join(SOURCES),
        &serde_json::to_vec_pretty(&manifest)?,
    )?;
    staging.commit()?;
    Ok(format!(
        "appended {} shard(s), {bytes} bytes, {rows_left_out} dropped row(s) left out -> {}",
        files.len(),
        batch.display()
    ))
}

/// The ids of a `drop/` output's pages.
fn dropped_ids(drops: &Path) -> Result<HashSet<i64>> {
    let spec = drops.display().to_string();
    let none = |_: &str, _: &str, _: &arrow_schema::DataType| Ok(());
    let table = PagesTable::open("drop/", &[spec], (&[], ""), none, &[], none)?;
    let mut ids = HashSet::new();
    for unit in 0..table.units() {
        table.read_unit_columns(unit, &[], |batch_ids, _, _| {
            ids.extend(batch_ids);
            Ok(())
        })?;
    }
    Ok(ids)
}
