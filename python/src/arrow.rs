//! `parse_jsonl` and `parse_arrow`: many completions at once, Arrow arrays in and out.
//!
//! The contract:
//! 1. The input is a pyarrow array (string, large_string, string_view or the binary
//!    kinds), a `pyarrow.ChunkedArray`, anything else with `__arrow_c_array__` or
//!    `__arrow_c_stream__`, or a list of `str` (and `None`). Arrow input is read in place
//!    through the Arrow C data interface: no element is copied into Python objects.
//! 2. The GIL is released; the elements are worked on by rayon's pool (every core, or
//!    `RAYON_NUM_THREADS`), each on its own, so the output does not depend on the split.
//! 3. The answer has one element per input element, in order, `None` for `None`: an Array
//!    for an Array or a list, a ChunkedArray of the same chunk lengths for a ChunkedArray.
//!
//! `parse_jsonl` gives each line the text `atfunc parse --jsonl` prints for it
//! ([`Batch::process_line`]); a blank line, for which the CLI prints nothing, gives `None`.
//! `parse_arrow` gives each text its calls and errors as structs, the fields of the records
//! `parse --jsonl` prints for a record with that completion.

use crate::tools::{self, Tools};
use arrow_array::builder::{Int64Builder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{GenericBinaryType, GenericStringType};
use arrow_array::{
    Array, ArrayRef, GenericByteArray, LargeStringArray, ListArray, StringArray, StructArray,
};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, FieldRef, Fields};
use atfunc::batch::{completion_records, Batch, Records};
use atfunc::Catalog;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3_arrow::input::AnyArray;
use pyo3_arrow::{PyArray, PyChunkedArray};
use rayon::prelude::*;
use serde_json::Value as Json;
use std::sync::{Arc, OnceLock};

/// The input, as chunks of Arrow arrays.
struct Input {
    chunks: Vec<ArrayRef>,
    /// Whether the answer is a ChunkedArray (the input was one, or a stream).
    chunked: bool,
}

impl Input {
    fn read(input: &Bound<'_, PyAny>) -> PyResult<Input> {
        let arrow = input.hasattr("__arrow_c_array__")? || input.hasattr("__arrow_c_stream__")?;
        if arrow {
            return match input.extract::<AnyArray>()? {
                AnyArray::Array(array) => Ok(Input {
                    chunks: vec![array.into_inner().0],
                    chunked: false,
                }),
                AnyArray::Stream(stream) => Ok(Input {
                    chunks: stream.into_chunked_array()?.into_inner().0,
                    chunked: true,
                }),
            };
        }
        if input.is_instance_of::<pyo3::types::PyString>()
            || input.is_instance_of::<pyo3::types::PyBytes>()
        {
            return Err(PyTypeError::new_err(
                "expected many texts (a pyarrow string array or a list of str), got a single \
                 str or bytes: wrap it in a list",
            ));
        }
        let texts: Vec<Option<String>> = input.extract().map_err(|_| {
            PyTypeError::new_err(
                "expected a pyarrow string array, a pyarrow.ChunkedArray or a list of str",
            )
        })?;
        Ok(Input {
            chunks: vec![Arc::new(StringArray::from(texts))],
            chunked: false,
        })
    }

    /// Every element of every chunk, in order, as bytes (`None` for a null).
    fn elements(&self) -> PyResult<Vec<Option<&[u8]>>> {
        let mut out = Vec::with_capacity(self.chunks.iter().map(|c| c.len()).sum());
        for chunk in &self.chunks {
            let chunk = chunk.as_ref();
            match chunk.data_type() {
                DataType::Utf8 => push_bytes(&mut out, chunk.as_string::<i32>()),
                DataType::LargeUtf8 => push_bytes(&mut out, chunk.as_string::<i64>()),
                DataType::Binary => push_bytes(&mut out, chunk.as_binary::<i32>()),
                DataType::LargeBinary => push_bytes(&mut out, chunk.as_binary::<i64>()),
                DataType::Utf8View => {
                    out.extend(chunk.as_string_view().iter().map(|t| t.map(str::as_bytes)))
                }
                DataType::BinaryView => out.extend(chunk.as_binary_view().iter()),
                other => {
                    return Err(PyTypeError::new_err(format!(
                        "expected an array of strings (string, large_string, string_view or \
                         binary), got {other}"
                    )))
                }
            }
        }
        Ok(out)
    }

    /// Whether the input's offsets are 64-bit (an answer of text keeps them so).
    fn large(&self) -> bool {
        self.chunks
            .iter()
            .any(|c| matches!(c.data_type(), DataType::LargeUtf8 | DataType::LargeBinary))
    }

    fn lengths(&self) -> Vec<usize> {
        self.chunks.iter().map(|c| c.len()).collect()
    }
}

/// Bytes of each element of a string or binary array.
trait Bytes {
    fn bytes(&self, i: usize) -> &[u8];
}

impl<O: arrow_array::OffsetSizeTrait> Bytes for GenericByteArray<GenericStringType<O>> {
    fn bytes(&self, i: usize) -> &[u8] {
        self.value(i).as_bytes()
    }
}

impl<O: arrow_array::OffsetSizeTrait> Bytes for GenericByteArray<GenericBinaryType<O>> {
    fn bytes(&self, i: usize) -> &[u8] {
        self.value(i)
    }
}

fn push_bytes<'a, A: Array + Bytes>(out: &mut Vec<Option<&'a [u8]>>, array: &'a A) {
    out.extend((0..array.len()).map(|i| array.is_valid(i).then(|| array.bytes(i))));
}

/// Cuts `values` back into the input's chunk lengths.
fn split<T>(values: Vec<T>, lengths: &[usize]) -> Vec<Vec<T>> {
    let mut values = values.into_iter();
    lengths
        .iter()
        .map(|&n| values.by_ref().take(n).collect())
        .collect()
}

/// The answer to Python: an Array, or a ChunkedArray of `chunks`.
fn answer(
    py: Python<'_>,
    chunked: bool,
    mut chunks: Vec<ArrayRef>,
    field: FieldRef,
) -> PyResult<Py<PyAny>> {
    if chunked {
        let chunked = PyChunkedArray::try_new(chunks, field)?;
        return Ok(chunked.into_pyarrow(py)?.unbind());
    }
    let array = chunks
        .pop()
        .ok_or_else(|| PyValueError::new_err("no output array"))?;
    Ok(PyArray::new(array, field).to_pyarrow(py)?.unbind())
}

fn catalog(py: Python<'_>, tools: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Arc<Catalog>>> {
    Ok(tools::optional(py, tools)?.map(|t: Py<Tools>| t.get().catalog.clone()))
}

/// The batch for `tools`: the one kept with them, or one shared by every call without
/// tools, so the cache of the records' own tool sets outlives a call.
fn batch(py: Python<'_>, tools: Option<&Bound<'_, PyAny>>) -> PyResult<Arc<Batch>> {
    static NO_TOOLS: OnceLock<Arc<Batch>> = OnceLock::new();
    Ok(match tools::optional(py, tools)? {
        Some(tools) => tools.get().batch.clone(),
        None => NO_TOOLS.get_or_init(|| Arc::new(Batch::new(None))).clone(),
    })
}

/// The output line `atfunc parse --jsonl` prints for each line of `lines`.
#[pyfunction]
#[pyo3(signature = (lines, tools = None, *, first_line = 1))]
pub(crate) fn parse_jsonl(
    py: Python<'_>,
    lines: &Bound<'_, PyAny>,
    tools: Option<&Bound<'_, PyAny>>,
    first_line: u64,
) -> PyResult<Py<PyAny>> {
    let batch = batch(py, tools)?;
    let input = Input::read(lines)?;
    let large = input.large();
    let lengths = input.lengths();
    let result: PyResult<(Vec<ArrayRef>, bool)> = py.detach(|| {
        let elements = input.elements()?;
        let lines: Vec<Option<String>> = elements
            .par_iter()
            .enumerate()
            .map(|(i, line)| {
                line.and_then(|line| batch.process_line(first_line.saturating_add(i as u64), line))
            })
            .collect();
        let total: usize = lines.iter().flatten().map(String::len).sum();
        // Past 2 GiB of text in one array, 32-bit offsets cannot address it.
        let large = large || total > i32::MAX as usize;
        let chunks = split(lines, &lengths)
            .into_iter()
            .map(|chunk| -> ArrayRef {
                if large {
                    Arc::new(LargeStringArray::from(chunk))
                } else {
                    Arc::new(StringArray::from(chunk))
                }
            })
            .collect();
        Ok((chunks, large))
    });
    let (chunks, large) = result?;
    let kind = if large {
        DataType::LargeUtf8
    } else {
        DataType::Utf8
    };
    answer(
        py,
        input.chunked,
        chunks,
        Arc::new(Field::new("line", kind, true)),
    )
}

/// The calls and errors of each text of `texts`, as structs.
#[pyfunction]
#[pyo3(signature = (texts, tools = None))]
pub(crate) fn parse_arrow(
    py: Python<'_>,
    texts: &Bound<'_, PyAny>,
    tools: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let catalog = catalog(py, tools)?;
    let input = Input::read(texts)?;
    let lengths = input.lengths();
    let chunks: PyResult<Vec<ArrayRef>> = py.detach(|| {
        let elements = input.elements()?;
        let found: Vec<Option<Records>> = elements
            .par_iter()
            .map(|text| {
                text.map(|text| {
                    let text = String::from_utf8_lossy(text);
                    completion_records(&text, catalog.as_deref())
                })
            })
            .collect();
        Ok(split(found, &lengths)
            .into_iter()
            .map(|chunk| -> ArrayRef { Arc::new(results_array(&chunk)) })
            .collect())
    });
    answer(
        py,
        input.chunked,
        chunks?,
        Arc::new(Field::new(
            "result",
            DataType::Struct(result_fields()),
            true,
        )),
    )
}

/// `struct<start: int64, end: int64>`: a span in bytes or in characters. Signed, since
/// Spark has no unsigned integers.
fn range_fields() -> Fields {
    Fields::from(vec![
        Field::new("start", DataType::Int64, false),
        Field::new("end", DataType::Int64, false),
    ])
}

/// The fields of a call: the ones of a call record of `atfunc parse`, JSON values as text.
fn call_fields() -> Fields {
    Fields::from(vec![
        Field::new("name", DataType::Utf8, false),
        // Bound calls have `args`; without tools, `positional` and `named` instead.
        Field::new("args", DataType::Utf8, true),
        Field::new("positional", DataType::Utf8, true),
        Field::new("named", DataType::Utf8, true),
        Field::new("body", DataType::Utf8, true),
        Field::new("span", DataType::Struct(range_fields()), false),
        Field::new("chars", DataType::Struct(range_fields()), false),
    ])
}

/// The fields of an error: those of an error record of `atfunc parse`.
fn error_fields() -> Fields {
    Fields::from(vec![
        Field::new("error", DataType::Utf8, false),
        Field::new("span", DataType::Struct(range_fields()), false),
        Field::new("chars", DataType::Struct(range_fields()), false),
        Field::new("raw", DataType::Utf8, false),
    ])
}

fn result_fields() -> Fields {
    let list = |fields| {
        DataType::List(Arc::new(Field::new(
            "item",
            DataType::Struct(fields),
            false,
        )))
    };
    Fields::from(vec![
        Field::new("calls", list(call_fields()), false),
        Field::new("errors", list(error_fields()), false),
    ])
}

/// Start and end columns of a span field.
#[derive(Default)]
struct Ranges {
    start: Int64Builder,
    end: Int64Builder,
}

impl Ranges {
    fn push(&mut self, pair: Option<&Json>) {
        let at = |i: usize| {
            pair.and_then(|p| p.get(i))
                .and_then(Json::as_i64)
                .unwrap_or_default()
        };
        self.start.append_value(at(0));
        self.end.append_value(at(1));
    }

    fn finish(mut self) -> ArrayRef {
        Arc::new(StructArray::new(
            range_fields(),
            vec![Arc::new(self.start.finish()), Arc::new(self.end.finish())],
            None,
        ))
    }
}

/// A JSON value of a record as text; `None` when the record has no such field.
fn json_text(record: &Json, key: &str) -> Option<String> {
    record.get(key).map(Json::to_string)
}

fn str_field<'a>(record: &'a Json, key: &str) -> Option<&'a str> {
    record.get(key).and_then(Json::as_str)
}

#[derive(Default)]
struct Calls {
    name: StringBuilder,
    args: StringBuilder,
    positional: StringBuilder,
    named: StringBuilder,
    body: StringBuilder,
    span: Ranges,
    chars: Ranges,
}

impl Calls {
    fn push(&mut self, record: &Json) {
        self.name
            .append_value(str_field(record, "name").unwrap_or_default());
        self.args.append_option(json_text(record, "args"));
        self.positional
            .append_option(json_text(record, "positional"));
        self.named.append_option(json_text(record, "named"));
        self.body.append_option(str_field(record, "body"));
        self.span.push(record.get("span"));
        self.chars.push(record.get("chars"));
    }

    fn finish(mut self) -> StructArray {
        StructArray::new(
            call_fields(),
            vec![
                Arc::new(self.name.finish()),
                Arc::new(self.args.finish()),
                Arc::new(self.positional.finish()),
                Arc::new(self.named.finish()),
                Arc::new(self.body.finish()),
                self.span.finish(),
                self.chars.finish(),
            ],
            None,
        )
    }
}

#[derive(Default)]
struct Errors {
    error: StringBuilder,
    span: Ranges,
    chars: Ranges,
    raw: StringBuilder,
}

impl Errors {
    fn push(&mut self, record: &Json) {
        self.error
            .append_value(str_field(record, "error").unwrap_or_default());
        self.span.push(record.get("span"));
        self.chars.push(record.get("chars"));
        self.raw
            .append_value(str_field(record, "raw").unwrap_or_default());
    }

    fn finish(mut self) -> StructArray {
        StructArray::new(
            error_fields(),
            vec![
                Arc::new(self.error.finish()),
                self.span.finish(),
                self.chars.finish(),
                Arc::new(self.raw.finish()),
            ],
            None,
        )
    }
}

/// The `struct<calls, errors>` array of one chunk's results (null for a null text).
fn results_array(results: &[Option<Records>]) -> StructArray {
    let mut calls = Calls::default();
    let mut errors = Errors::default();
    let mut call_lengths = Vec::with_capacity(results.len());
    let mut error_lengths = Vec::with_capacity(results.len());
    for found in results {
        let found = found.as_ref();
        let (c, e) = found.map_or((&[][..], &[][..]), |f| (&f.calls[..], &f.errors[..]));
        c.iter().for_each(|record| calls.push(record));
        e.iter().for_each(|record| errors.push(record));
        call_lengths.push(c.len());
        error_lengths.push(e.len());
    }
    let list = |fields: Fields, lengths: Vec<usize>, values: StructArray| -> ArrayRef {
        Arc::new(ListArray::new(
            Arc::new(Field::new("item", DataType::Struct(fields), false)),
            OffsetBuffer::from_lengths(lengths),
            Arc::new(values),
            None,
        ))
    };
    let nulls = NullBuffer::from_iter(results.iter().map(Option::is_some));
    let nulls = (nulls.null_count() > 0).then_some(nulls);
    StructArray::new(
        result_fields(),
        vec![
            list(call_fields(), call_lengths, calls.finish()),
            list(error_fields(), error_lengths, errors.finish()),
        ],
        nulls,
    )
}
