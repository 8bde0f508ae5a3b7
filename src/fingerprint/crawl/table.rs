//! Parquet tables of documents: a text column, and optional id, url and
//! fetch time columns.
//!
//! The fetch time column (`--time-field`) is a TIMESTAMP of any unit, whose
//! instant is taken as it is (one without a time zone, a wall-clock time,
//! read as UTC), or strings of RFC 3339 date-times. Its documents have no
//! [`super::Span`]: a row is no byte range of the file.

use anyhow::{anyhow, bail, Context, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, TimeUnit};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use super::timestamp::parse_rfc3339;
use super::{url_id, BadRecord, Document, Record, TextFields};
use crate::io::parquet::columns::check_int64;
use crate::io::parquet::input::load_footer;
use crate::io::storage::Location;

/// Reads every row; a row with a null text, with neither an id nor a url, or
/// with a time string that is not RFC 3339, is a bad record whose offset is
/// its row number. A time column that is missing or of another type is an
/// error naming the file, before any row is read.
pub(crate) fn read(
    path: &Location,
    fields: &TextFields,
    sink: &mut dyn FnMut(Record, u64) -> Result<()>,
) -> Result<()> {
    let shown = path;
    let file = path.open()?;
    file.prefetch_footer()?;
    let footer = load_footer(&file, path)?;
    let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, footer);
    let schema = builder.schema().clone();
    let find = |name: &str| schema.index_of(name).ok();
    let text_index = find(&fields.text);
    let id_index = find(&fields.id);
    let url_index = find(&fields.url);
    // Every missing column is named at once: a table of other names needs
    // all three flags, and one line at a time would take three runs.
    let mut missing = Vec::new();
    if text_index.is_none() {
        missing.push(format!("no text column `{}` (--text-field)", fields.text));
    }
    // A column named other than the default was asked for: its absence is
    // a typo, which would give every page a URL hash or no URL.
    let defaults = TextFields::default();
    let typos: Vec<String> = [
        (id_index, &fields.id, &defaults.id, "--id-field"),
        (url_index, &fields.url, &defaults.url, "--url-field"),
    ]
    .into_iter()
    .filter(|(index, name, default, _)| index.is_none() && name != default)
    .map(|(_, name, _, flag)| format!("no column `{name}` ({flag})"))
    .collect();
    if typos.is_empty() && id_index.is_none() && url_index.is_none() {
        missing.push(format!(
            "neither an id column `{}` nor a url column `{}` (--id-field, --url-field)",
            fields.id, fields.url
        ));
    }
    missing.extend(typos);
    let Some(text_index) = text_index.filter(|_| missing.is_empty()) else {
        bail!("{shown}: {}", missing.join("; "));
    };
    for (index, name) in [(Some(text_index), &fields.text), (url_index, &fields.url)] {
        if let Some(i) = index {
            let t = schema.field(i).data_type();
            if !matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) {
                bail!("{shown}: column `{name}` has type {t}, expected a string");
            }
        }
    }
    if let Some(i) = id_index {
        check_int64(&shown.to_string(), &fields.id, schema.field(i).data_type())?;
    }
    let time_index = match &fields.time {
        Some(name) => {
            let i = find(name).ok_or_else(|| anyhow!("{shown}: no time column `{name}`"))?;
            let t = schema.field(i).data_type();
            if !matches!(
                t,
                DataType::Timestamp(_, _)
                    | DataType::Utf8
                    | DataType::LargeUtf8
                    | DataType::Utf8View
            ) {
                bail!(
                    "{shown}: column `{name}` has type {t}, expected a TIMESTAMP or RFC 3339 strings"
                );
            }
            Some(i)
        }
        None => None,
    };
    let mut roots: Vec<usize> = [Some(text_index), id_index, url_index, time_index]
        .into_iter()
        .flatten()
        .collect();
    roots.sort_unstable();
    roots.dedup();
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
        let columns = Columns {
            text,
            ids: id_index.and(column(&fields.id)),
            urls: url_index.and(column(&fields.url)),
            times: fields
                .time
                .as_deref()
                .and_then(|name| Some((name, column(name)?))),
        };
        for i in 0..batch.num_rows() {
            let record = columns
                .document(i)
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

/// The fetch time at row `i` of a time column, in microseconds since the
/// epoch: `Ok(None)` for a null, an error for a string that is not RFC 3339
/// or an instant out of range.
fn time_at(name: &str, array: &ArrayRef, i: usize) -> Result<Option<i64>, String> {
    if array.is_null(i) {
        return Ok(None);
    }
    let out_of_range = || format!("column `{name}`: timestamp out of range");
    let micros = match array.data_type() {
        DataType::Timestamp(TimeUnit::Second, _) => array
            .as_primitive::<TimestampSecondType>()
            .value(i)
            .checked_mul(1_000_000)
            .ok_or_else(out_of_range)?,
        DataType::Timestamp(TimeUnit::Millisecond, _) => array
            .as_primitive::<TimestampMillisecondType>()
            .value(i)
            .checked_mul(1_000)
            .ok_or_else(out_of_range)?,
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            array.as_primitive::<TimestampMicrosecondType>().value(i)
        }
        // Towards the past, as RFC 3339 fractions are cut.
        DataType::Timestamp(TimeUnit::Nanosecond, _) => array
            .as_primitive::<TimestampNanosecondType>()
            .value(i)
            .div_euclid(1_000),
        _ => {
            let text = string_at(array, i).unwrap_or_default();
            parse_rfc3339(text).ok_or_else(|| {
                let cut: String = text.chars().take(80).collect();
                let more = if cut.len() < text.len() { "..." } else { "" };
                format!("column `{name}` is not an RFC 3339 date-time: {cut:?}{more}")
            })?
        }
    };
    Ok(Some(micros))
}

/// The columns of a batch that make documents.
struct Columns<'a> {
    text: ArrayRef,
    ids: Option<ArrayRef>,
    urls: Option<ArrayRef>,
    /// The time column's name and values.
    times: Option<(&'a str, ArrayRef)>,
}

impl Columns<'_> {
    fn document(&self, i: usize) -> Result<Document, String> {
        let text = string_at(&self.text, i).ok_or("null text")?.to_string();
        let url = self
            .urls
            .as_ref()
            .and_then(|u| string_at(u, i))
            .map(str::to_string);
        let id = match (self.ids.as_ref().and_then(|a| id_at(a, i)), &url) {
            (Some(id), _) => id,
            (None, Some(url)) => url_id(url),
            (None, None) => return Err("null id and no url".into()),
        };
        let fetch_time = match &self.times {
            Some((name, times)) => time_at(name, times, i)?,
            None => None,
        };
        Ok(Document {
            id,
            url,
            text,
            html: false,
            charset: None,
            fetch_time,
            span: None,
            header_canonicals: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{
        Int64Array, RecordBatch, StringArray, TimestampNanosecondArray, TimestampSecondArray,
    };
    use std::sync::Arc;

    /// Writes a table of three rows and reads it with `--time-field time`.
    fn read_times(time: ArrayRef) -> Result<Vec<Result<Option<i64>, String>>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docs.parquet");
        let batch = RecordBatch::try_from_iter([
            ("id", Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef),
            ("text", Arc::new(StringArray::from(vec!["a", "b", "c"]))),
            ("time", time),
        ])
        .unwrap();
        let file = std::fs::File::create(&path).unwrap();
        let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let fields = TextFields {
            time: Some("time".into()),
            ..TextFields::default()
        };
        let mut got = Vec::new();
        read(&Location::Local(path), &fields, &mut |record, _| {
            got.push(match record {
                Record::Document(d) => {
                    assert_eq!(d.span, None);
                    Ok(d.fetch_time)
                }
                Record::Bad(b) => Err(b.reason),
                Record::Skipped => panic!("skipped"),
            });
            Ok(())
        })?;
        Ok(got)
    }

    #[test]
    fn time_columns_of_any_unit_and_rfc_3339_strings_give_microseconds() {
        let t = parse_rfc3339("2024-05-01T12:34:56Z").unwrap();
        let nanos = TimestampNanosecondArray::from(vec![Some(t * 1000 + 999), None, Some(-1)]);
        assert_eq!(
            read_times(Arc::new(nanos)).unwrap(),
            [Ok(Some(t)), Ok(None), Ok(Some(-1))]
        );
        // A zone changes how the instant is shown, not the instant.
        let seconds = TimestampSecondArray::from(vec![Some(t / 1_000_000), Some(0), None])
            .with_timezone("+02:00");
        assert_eq!(
            read_times(Arc::new(seconds)).unwrap(),
            [Ok(Some(t)), Ok(Some(0)), Ok(None)]
        );
        let strings = StringArray::from(vec![
            Some("2024-05-01T14:34:56.5+02:00"),
            None,
            Some("May 1st"),
        ]);
        assert_eq!(
            read_times(Arc::new(strings)).unwrap(),
            [
                Ok(Some(t + 500_000)),
                Ok(None),
                Err(r#"column `time` is not an RFC 3339 date-time: "May 1st""#.to_string())
            ]
        );
        let numbers = Arc::new(Int64Array::from(vec![1, 2, 3]));
        let error = read_times(numbers).unwrap_err().to_string();
        assert!(
            error.ends_with("docs.parquet: column `time` has type Int64, expected a TIMESTAMP or RFC 3339 strings"),
            "{error}"
        );
    }
}
