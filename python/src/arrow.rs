//! `parse_jsonl` and `parse_arrow`: many completions at once, Arrow arrays in and out.
//!
//! The contract:
//! 1. The input is a pyarrow array (string, large_string, string_view or the binary
//!    kinds), a `pyarrow.ChunkedArray`, anything else with `__arrow_c_array__` or
//!    `__arrow_c_stream__`, or a list of `str` (and `None`). Arrow input is read in place
//!    through the Arrow C data interface: no element is copied into Python objects.
//! 2. The GIL is released; the elements are worked on by rayon's pool (every core, or
//!    `RAYON_NUM_THREADS`; `threads=` picks another, see [`Workers`]), each on its own, so
//!    the output does not depend on how the work or the input was split.
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
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

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

/// Where the elements are worked on: `threads=None` is rayon's global pool (every core,
/// or `RAYON_NUM_THREADS`), 1 the calling thread alone, N a pool of N threads kept for the
/// next call. An engine that runs one task per core (Ray, Spark) wants 1, so that its
/// workers do not each spread over every core.
enum Workers {
    Global,
    Caller,
    Pool(Arc<rayon::ThreadPool>),
}

impl Workers {
    fn new(threads: Option<usize>) -> PyResult<Workers> {
        static POOLS: Mutex<Vec<(usize, Arc<rayon::ThreadPool>)>> = Mutex::new(Vec::new());
        match threads {
            None => Ok(Workers::Global),
            Some(0) => Err(PyValueError::new_err(
                "threads must be at least 1 (None: every core)",
            )),
            Some(1) => Ok(Workers::Caller),
            Some(n) => {
                // A pool holds no state a panic could break; a poisoned lock is still good.
                let mut pools = POOLS.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some((_, pool)) = pools.iter().find(|(size, _)| *size == n) {
                    return Ok(Workers::Pool(pool.clone()));
                }
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .thread_name(|i| format!("atfunc-{i}"))
                    .build()
                    .map_err(|e| PyValueError::new_err(format!("cannot start {n} threads: {e}")))?;
                let pool = Arc::new(pool);
                pools.push((n, pool.clone()));
                Ok(Workers::Pool(pool))
            }
        }
    }

    /// `work(i, element)` for every element, in order.
    fn map<T: Send>(
        &self,
        elements: &[Option<&[u8]>],
        work: impl Fn(usize, Option<&[u8]>) -> T + Sync + Send,
    ) -> Vec<T> {
        let parallel = || {
            elements
                .par_iter()
                .enumerate()
                .map(|(i, element)| work(i, *element))
                .collect()
        };
        match self {
            Workers::Global => parallel(),
            Workers::Pool(pool) => pool.install(parallel),
            Workers::Caller => elements
                .iter()
                .enumerate()
                .map(|(i, element)| work(i, *element))
                .collect(),
        }
    }
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
#[pyo3(signature = (lines, tools = None, *, first_line = 1, threads = None))]
pub(crate) fn parse_jsonl(
    py: Python<'_>,
    lines: &Bound<'_, PyAny>,
    tools: Option<&Bound<'_, PyAny>>,
    first_line: u64,
    threads: Option<usize>,
) -> PyResult<Py<PyAny>> {
    let workers = Workers::new(threads)?;
    let batch = batch(py, tools)?;
    let input = Input::read(lines)?;
    let large = input.large();
    let lengths = input.lengths();
    let result: PyResult<(Vec<ArrayRef>, bool)> = py.detach(|| {
        let elements = input.elements()?;
        let lines = workers.map(&elements, |i, line| {
            line.and_then(|line| batch.process_line(first_line.saturating_add(i as u64), line))
        });
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
#[pyo3(signature = (texts, tools = None, *, threads = None))]
pub(crate) fn parse_arrow(
    py: Python<'_>,
    texts: &Bound<'_, PyAny>,
    tools: Option<&Bound<'_, PyAny>>,
    threads: Option<usize>,
) -> PyResult<Py<PyAny>> {
    let workers = Workers::new(threads)?;
    let catalog = catalog(py, tools)?;
    let input = Input::read(texts)?;
    let lengths = input.lengths();
    let chunks: PyResult<Vec<ArrayRef>> = py.detach(|| {
        let elements = input.elements()?;
        let found: Vec<Option<Found>> = workers.map(&elements, |_, text| {
            text.map(|text| {
                let text = String::from_utf8_lossy(text);
                Found::of(completion_records(&text, catalog.as_deref()))
            })
        });
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

/// One text's calls and errors, their JSON already written as text: made in parallel, so
/// that building the arrays after is only copying.
#[derive(Default)]
struct Found {
    calls: Vec<CallRow>,
    errors: Vec<ErrorRow>,
}

struct CallRow {
    name: String,
    args: Option<String>,
    positional: Option<String>,
    named: Option<String>,
    body: Option<String>,
    span: [i64; 2],
    chars: [i64; 2],
}

struct ErrorRow {
    error: String,
    span: [i64; 2],
    chars: [i64; 2],
    raw: String,
}

impl Found {
    fn of(records: Records) -> Found {
        Found {
            calls: records.calls.into_iter().map(CallRow::of).collect(),
            errors: records.errors.into_iter().map(ErrorRow::of).collect(),
        }
    }
}

/// Takes field `key` out of a record.
fn take(record: &mut Json, key: &str) -> Option<Json> {
    record.as_object_mut().and_then(|map| map.shift_remove(key))
}

/// A string field; a record's strings are never anything else.
fn take_string(record: &mut Json, key: &str) -> Option<String> {
    match take(record, key) {
        Some(Json::String(text)) => Some(text),
        _ => None,
    }
}

/// A `[start, end]` field.
fn take_range(record: &mut Json, key: &str) -> [i64; 2] {
    let pair = take(record, key);
    let at = |i: usize| {
        pair.as_ref()
            .and_then(|p| p.get(i))
            .and_then(Json::as_i64)
            .unwrap_or_default()
    };
    [at(0), at(1)]
}

impl CallRow {
    fn of(mut record: Json) -> CallRow {
        let mut json = |key| take(&mut record, key).map(|value| value.to_string());
        let (args, positional, named) = (json("args"), json("positional"), json("named"));
        CallRow {
            name: take_string(&mut record, "name").unwrap_or_default(),
            args,
            positional,
            named,
            body: take_string(&mut record, "body"),
            span: take_range(&mut record, "span"),
            chars: take_range(&mut record, "chars"),
        }
    }
}

impl ErrorRow {
    fn of(mut record: Json) -> ErrorRow {
        ErrorRow {
            error: take_string(&mut record, "error").unwrap_or_default(),
            span: take_range(&mut record, "span"),
            chars: take_range(&mut record, "chars"),
            raw: take_string(&mut record, "raw").unwrap_or_default(),
        }
    }
}

/// Start and end columns of a span field.
#[derive(Default)]
struct Ranges {
    start: Int64Builder,
    end: Int64Builder,
}

impl Ranges {
    fn push(&mut self, [start, end]: [i64; 2]) {
        self.start.append_value(start);
        self.end.append_value(end);
    }

    fn finish(mut self) -> ArrayRef {
        Arc::new(StructArray::new(
            range_fields(),
            vec![Arc::new(self.start.finish()), Arc::new(self.end.finish())],
            None,
        ))
    }
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
    fn push(&mut self, row: &CallRow) {
        self.name.append_value(&row.name);
        self.args.append_option(row.args.as_deref());
        self.positional.append_option(row.positional.as_deref());
        self.named.append_option(row.named.as_deref());
        self.body.append_option(row.body.as_deref());
        self.span.push(row.span);
        self.chars.push(row.chars);
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
    fn push(&mut self, row: &ErrorRow) {
        self.error.append_value(&row.error);
        self.span.push(row.span);
        self.chars.push(row.chars);
        self.raw.append_value(&row.raw);
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
fn results_array(results: &[Option<Found>]) -> StructArray {
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
