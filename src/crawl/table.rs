//! Parquet tables of documents: a text column, and optional id and url columns.

use anyhow::{anyhow, bail, Context, Result};
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use super::{url_id, BadRecord, Document, Record, TextFields};
use crate::storage::Location;

/// Reads every row; a row with a null text, or with neither an id nor a url,
/// is a bad record whose offset is its row number.
pub fn read(
    path: &Location,
    fields: &TextFields,
    sink: &mut dyn FnMut(Record, u64) -> Result<()>,
) -> Result<()> {
    let shown = path;
    let file = path.open()?;
    file.prefetch_footer()?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| anyhow!("{shown}: not a readable Parquet file ({e})"))?;
    let schema = builder.schema().clone();
    let find = |name: &str| schema.index_of(name).ok();
    let text_index =
        find(&fields.text).ok_or_else(|| anyhow!("{shown}: no text column `{}`", fields.text))?;
    let id_index = find(&fields.id);
    let url_index = find(&fields.url);
    if id_index.is_none() && url_index.is_none() {
        bail!(
            "{shown}: neither an id column `{}` nor a url column `{}`",
            fields.id,
            fields.url
        );
    }
    for (index, name) in [(Some(text_index), &fields.text), (url_index, &fields.url)] {
        if let Some(i) = index {
            let t = schema.field(i).data_type();
            if !matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) {
                bail!("{shown}: column `{name}` has type {t}, expected a string");
            }
        }
    }
    if let Some(i) = id_index {
        let t = schema.field(i).data_type();
        if !matches!(t, DataType::Int64 | DataType::UInt64) {
            bail!(
                "{shown}: column `{}` has type {t}, expected INT64 (or UINT64)",
                fields.id
            );
        }
    }
    let mut roots: Vec<usize> = [Some(text_index), id_index, url_index]
        .into_iter()
        .flatten()
        .collect();
    roots.sort_unstable();
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(8192)
        .build()
        .with_context(|| format!("{shown}: cannot read"))?;
    let mut row = 0u64;
    for batch in reader {
        let batch = batch.with_context(|| format!("{shown}: cannot read row {row}"))?;
        let column = |name: &str| batch.column_by_name(name).cloned();
        let text = column(&fields.text).context("text column missing from batch")?;
        let ids = id_index.and(column(&fields.id));
        let urls = url_index.and(column(&fields.url));
        for i in 0..batch.num_rows() {
            let record = document(&text, ids.as_ref(), urls.as_ref(), i)
                .map(Record::Document)
                .unwrap_or_else(|reason| {
                    Record::Bad(BadRecord {
                        offset: row,
                        reason,
                    })
                });
            row += 1;
            sink(record, row)?;
        }
    }
    Ok(())
}

fn string_at(array: &ArrayRef, i: usize) -> Option<&str> {
    if array.is_null(i) {
        return None;
    }
    match array.data_type() {
        DataType::Utf8 => Some(array.as_string::<i32>().value(i)),
        DataType::LargeUtf8 => Some(array.as_string::<i64>().value(i)),
        DataType::Utf8View => Some(array.as_string_view().value(i)),
        _ => None,
    }
}

fn id_at(array: &ArrayRef, i: usize) -> Option<i64> {
    if array.is_null(i) {
        return None;
    }
    match array.data_type() {
        DataType::Int64 => Some(
            array
                .as_primitive::<arrow_array::types::Int64Type>()
                .value(i),
        ),
        DataType::UInt64 => Some(
            array
                .as_primitive::<arrow_array::types::UInt64Type>()
                .value(i) as i64,
        ),
        _ => None,
    }
}

fn document(
    text: &ArrayRef,
    ids: Option<&ArrayRef>,
    urls: Option<&ArrayRef>,
    i: usize,
) -> Result<Document, String> {
    let text = string_at(text, i).ok_or("null text")?.to_string();
    let url = urls.and_then(|u| string_at(u, i)).map(str::to_string);
    let id = match (ids.and_then(|a| id_at(a, i)), &url) {
        (Some(id), _) => id,
        (None, Some(url)) => url_id(url),
        (None, None) => return Err("null id and no url".into()),
    };
    Ok(Document {
        id,
        url,
        text,
        html: false,
        charset: None,
    })
}
