//! Columns as the readers check and take them: a file's column list for
//! errors, 64-bit integers (INT64, or UINT64 as some writers give them) and
//! strings (of whichever Arrow type a writer gave), each refused on one
//! line naming the file and column when it is of another type.

use anyhow::{anyhow, bail, Result};
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, UInt64Array};
use arrow_schema::DataType;

/// Appends an INT64 or UINT64 column to `out`, its 64-bit patterns as `T`
/// (`i64` or `u64`), refusing nulls. A byte copy: a loop converting each
/// value was a visible share of a scan's time.
pub(crate) fn integer_column<T: bytemuck::Pod>(
    batch: &RecordBatch,
    name: &str,
    location: &dyn Fn() -> String,
    out: &mut Vec<T>,
) -> Result<()> {
    const { assert!(std::mem::size_of::<T>() == 8, "a 64-bit integer") };
    let column = non_null_column(batch, name, location)?;
    if let Some(values) = column.as_any().downcast_ref::<Int64Array>() {
        out.extend_from_slice(bytemuck::cast_slice(values.values()));
    } else if let Some(values) = column.as_any().downcast_ref::<UInt64Array>() {
        out.extend_from_slice(bytemuck::cast_slice(values.values()));
    } else {
        check_int64(&location(), name, column.data_type())?;
    }
    Ok(())
}

/// Appends a column of page ids to `out`, refusing nulls: INT64 and
/// UINT64 as [`integer_column`] takes them, narrower integers widened by
/// their sign (a join over INTEGER ids, as DuckDB and Spark write it).
pub(crate) fn id_column(
    batch: &RecordBatch,
    name: &str,
    location: &dyn Fn() -> String,
    out: &mut Vec<i64>,
) -> Result<()> {
    use arrow_array::types::{Int16Type, Int32Type, Int8Type, UInt16Type, UInt32Type, UInt8Type};
    let column = non_null_column(batch, name, location)?;
    match column.data_type() {
        DataType::Int8 => widen::<Int8Type>(column, out),
        DataType::Int16 => widen::<Int16Type>(column, out),
        DataType::Int32 => widen::<Int32Type>(column, out),
        DataType::UInt8 => widen::<UInt8Type>(column, out),
        DataType::UInt16 => widen::<UInt16Type>(column, out),
        DataType::UInt32 => widen::<UInt32Type>(column, out),
        _ => return integer_column(batch, name, location, out),
    }
    Ok(())
}

/// Appends a column of integers narrower than 64 bits, of type `T`, to
/// `out` by value.
fn widen<T: arrow_array::ArrowPrimitiveType>(column: &ArrayRef, out: &mut Vec<i64>)
where
    T::Native: Into<i64>,
{
    out.extend(
        column
            .as_primitive::<T>()
            .values()
            .iter()
            .map(|&v| v.into()),
    );
}

/// Refuses column `name` of `file` unless it holds page ids: integers of
/// any width ([`id_column`]).
pub(crate) fn check_id(file: &str, name: &str, data_type: &DataType) -> Result<()> {
    if !data_type.is_integer() {
        bail!("{file}: column `{name}` has type {data_type}, expected an integer (INT64)");
    }
    Ok(())
}

/// A schema's column names, for errors that name what a file has.
pub(crate) fn column_list(schema: &arrow_schema::Schema) -> String {
    schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A batch's column `name`, which must be there without nulls.
pub(crate) fn non_null_column<'b>(
    batch: &'b RecordBatch,
    name: &str,
    location: &dyn Fn() -> String,
) -> Result<&'b ArrayRef> {
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
    Ok(column)
}

/// Refuses column `name` of `file` unless it holds 64-bit integers (ids,
/// fingerprints: INT64, or UINT64 as some writers give them).
pub(crate) fn check_int64(file: &str, name: &str, data_type: &DataType) -> Result<()> {
    if !matches!(data_type, DataType::Int64 | DataType::UInt64) {
        bail!("{file}: column `{name}` has type {data_type}, expected INT64 (or UINT64)");
    }
    Ok(())
}

/// Refuses column `name` of `file` unless it holds strings ([`is_string`]).
pub(crate) fn check_string(file: &str, name: &str, data_type: &DataType) -> Result<()> {
    if !is_string(data_type) {
        bail!("{file}: column `{name}` has type {data_type}, expected a string");
    }
    Ok(())
}

/// Whether a column of this type holds strings as Parquet writers give them
/// (arrow-rs and pyarrow: UTF8, large; DuckDB and Polars: views).
pub(crate) fn is_string(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

/// A string column's values (None for nulls); `name` and `location` say
/// which column in the error for another type.
pub(crate) fn string_values<'a>(
    column: &'a ArrayRef,
    name: &str,
    location: &str,
) -> Result<Box<dyn Iterator<Item = Option<&'a str>> + 'a>> {
    Ok(match column.data_type() {
        DataType::Utf8 => Box::new(column.as_string::<i32>().iter()),
        DataType::LargeUtf8 => Box::new(column.as_string::<i64>().iter()),
        DataType::Utf8View => Box::new(column.as_string_view().iter()),
        other => bail!("{location}: column `{name}` has type {other}, expected a string"),
    })
}
