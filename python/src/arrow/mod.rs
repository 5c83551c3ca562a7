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
//! `parse --jsonl` prints for a record with that completion. Both read the calls in the
//! format `dialect=` names (`--dialect`).

mod input;
mod results;
mod workers;

use crate::records::dialect;
use crate::tools::{self, Batches, Tools};
use arrow_array::{ArrayRef, LargeStringArray, StringArray};
use arrow_schema::{DataType, Field, FieldRef};
use atfunc::batch::{completion_records, Batch, RecordOptions};
use atfunc::parse::Dialect;
use atfunc::Catalog;
use input::Input;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3_arrow::{PyArray, PyChunkedArray};
use results::{result_fields, results_array, Found};
use std::sync::{Arc, OnceLock};
use workers::Workers;

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

/// The batch for `tools` and `dialect`: the one kept with the tools, or one shared by every
/// call without tools, so the cache of the records' own tool sets outlives a call.
fn batch(
    py: Python<'_>,
    tools: Option<&Bound<'_, PyAny>>,
    dialect: Dialect,
) -> PyResult<Arc<Batch>> {
    static NO_TOOLS: OnceLock<Batches> = OnceLock::new();
    Ok(match tools::optional(py, tools)? {
        Some(tools) => tools.get().batches.get(dialect),
        None => NO_TOOLS.get_or_init(|| Batches::new(None)).get(dialect),
    })
}

/// The output line `atfunc parse --jsonl` prints for each line of `lines`.
#[pyfunction]
#[pyo3(signature = (lines, tools = None, *, first_line = 1, threads = None, dialect = "atfunc"))]
pub(crate) fn parse_jsonl(
    py: Python<'_>,
    lines: &Bound<'_, PyAny>,
    tools: Option<&Bound<'_, PyAny>>,
    first_line: u64,
    threads: Option<usize>,
    dialect: &str,
) -> PyResult<Py<PyAny>> {
    let dialect = self::dialect(dialect)?;
    let workers = Workers::new(threads)?;
    let batch = batch(py, tools, dialect)?;
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
#[pyo3(signature = (texts, tools = None, *, threads = None, dialect = "atfunc"))]
pub(crate) fn parse_arrow(
    py: Python<'_>,
    texts: &Bound<'_, PyAny>,
    tools: Option<&Bound<'_, PyAny>>,
    threads: Option<usize>,
    dialect: &str,
) -> PyResult<Py<PyAny>> {
    let dialect = self::dialect(dialect)?;
    let workers = Workers::new(threads)?;
    let catalog = catalog(py, tools)?;
    let input = Input::read(texts)?;
    let lengths = input.lengths();
    let chunks: PyResult<Vec<ArrayRef>> = py.detach(|| {
        let elements = input.elements()?;
        let found: Vec<Option<Found>> = workers.map(&elements, |_, text| {
            text.map(|text| {
                let text = String::from_utf8_lossy(text);
                Found::of(completion_records(
                    &text,
                    &RecordOptions {
                        catalog: catalog.as_deref(),
                        dialect,
                    },
                ))
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
