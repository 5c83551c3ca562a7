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

mod c_data;
mod input;
mod results;
mod workers;

use crate::convert::non_negative;
use crate::records::dialect;
use crate::tools::{self, Batches, Tools};
use arrow_array::{ArrayRef, LargeStringArray, StringArray};
use arrow_schema::{DataType, Field, FieldRef, Fields};
use atfunc::batch::{completion_records, Batch, RecordOptions};
use atfunc::parse::Dialect;
use atfunc::Catalog;
use input::Input;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use results::{result_fields, results_array, Args, Found};
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
    pyarrow: &Bound<'_, PyModule>,
    chunked: bool,
    chunks: Vec<ArrayRef>,
    field: FieldRef,
) -> PyResult<Py<PyAny>> {
    c_data::export(pyarrow, chunked, chunks, field)
}

/// The batch for `tools` and `dialect`: the one kept with the tools, or one shared by every
/// call without tools, so the cache of the records' own tool sets outlives a call.
fn batch(tools: Option<&Py<Tools>>, dialect: Dialect) -> Arc<Batch> {
    static NO_TOOLS: OnceLock<Batches> = OnceLock::new();
    match tools {
        Some(tools) => tools.get().batches.get(dialect),
        None => NO_TOOLS.get_or_init(|| Batches::new(None)).get(dialect),
    }
}

/// For each input line of `atfunc parse --jsonl` (a record `{"id", "completion",
/// "tools"}`), exactly the output line it prints (without the newline): `{"id", "calls",
/// "errors"}`, or `{"id", "line", "error"}` for a line that is not a record. `tools` are
/// the `--tools`; a record's own `tools` win over them. `dialect` is `--dialect`: the call
/// format the completions are written in (see `_Dialect`).
///
/// One element out per element in, in order. A blank line (empty or only whitespace), for
/// which the CLI prints nothing, gives None, and so does None. `first_line` is the line
/// number of the first element, for the `line` of error lines (each element counts as
/// one line, blank or None). An element is one line: one holding a newline is read as
/// one record, where the CLI would read two lines.
///
/// `lines`: a pyarrow string, large_string, string_view or binary array (read in place,
/// not copied), a ChunkedArray (the answer is one, with the same chunks) or a list of str.
/// The answer is a `large_string` array when the input is, or past 2 GiB of output.
///
/// Runs with the GIL released. `threads`: None spreads the work over every core (rayon's
/// pool; `RAYON_NUM_THREADS` sets its size), 1 keeps it in the calling thread (for an
/// engine such as Ray or Spark that already runs one task per core), N uses a pool of N
/// threads kept for later calls.
#[pyfunction]
#[pyo3(signature = (lines, tools = None, *, first_line = 1, threads = None, dialect = "atfunc"))]
pub(crate) fn parse_jsonl(
    py: Python<'_>,
    lines: &Bound<'_, PyAny>,
    tools: Option<&Bound<'_, PyAny>>,
    first_line: i64,
    threads: Option<i64>,
    dialect: &str,
) -> PyResult<Py<PyAny>> {
    // Before any work: without pyarrow there is no answer to give.
    let pyarrow = c_data::pyarrow(py, "parse_jsonl")?;
    let first_line: u64 = non_negative("first_line", first_line)?;
    let dialect = self::dialect(dialect)?;
    let workers = Workers::new(threads)?;
    let batch = batch(tools::optional(py, tools)?.as_ref(), dialect);
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
        &pyarrow,
        input.chunked,
        chunks,
        Arc::new(Field::new("line", kind, true)),
    )
}

/// The calls and errors of each text, as `atfunc parse --jsonl` finds them in a record
/// with that completion, one struct per text (None for None):
///
/// ```text
/// struct<
///   calls: list<struct<name: string, args: string, positional: string, named: string,
///                      body: string, span: struct<start: int64, end: int64>,
///                      chars: struct<start: int64, end: int64>>>,
///   errors: list<struct<error: string, span: ..., chars: ..., raw: string>>>
/// ```
///
/// `args` (bound calls, with tools), `positional` and `named` (without) are _JSON text;
/// the other pair is null. `body` is the raw text between `with_body [[` and `]]`.
/// Input, `threads` and `dialect` as for `parse_jsonl`; binary input with invalid UTF-8 is
/// read with it replaced.
///
/// `row_tools`: each text's own tool set as _JSON text (the `tools` of a `parse --jsonl`
/// record), one per text, None for `tools`; a pyarrow string array or a list. The struct
/// then has a third field, `tools_error: string`: why the text's own set did not load
/// (its `calls` and `errors` are then empty), or null. Each distinct set is loaded once.
///
/// `args="struct"` (tools needed): `args` is a struct with one nullable field per
/// parameter of the tools (of every set, in order of first appearance): `string`,
/// `int64`, `double` or `bool` as the parameter's type says, _JSON text for objects,
/// lists, `any` and a parameter whose types differ between functions or sets.
#[pyfunction]
#[pyo3(signature = (texts, tools = None, *, row_tools = None, args = "json", threads = None, dialect = "atfunc"))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn parse_arrow(
    py: Python<'_>,
    texts: &Bound<'_, PyAny>,
    tools: Option<&Bound<'_, PyAny>>,
    row_tools: Option<&Bound<'_, PyAny>>,
    args: &str,
    threads: Option<i64>,
    dialect: &str,
) -> PyResult<Py<PyAny>> {
    // Before any work: without pyarrow there is no answer to give.
    let pyarrow = c_data::pyarrow(py, "parse_arrow")?;
    let dialect = self::dialect(dialect)?;
    let args_as_struct = match args {
        "json" => false,
        "struct" => true,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown args '{other}': use \"json\" (JSON text, the default) or \"struct\" (a struct typed from the tools' parameters)"
            )))
        }
    };
    let workers = Workers::new(threads)?;
    let default_tools = tools::optional(py, tools)?;
    if args_as_struct && default_tools.is_none() && row_tools.is_none() {
        return Err(PyValueError::new_err(
            "args=\"struct\" needs tools (tools= or row_tools=): calls are bound to them, and the struct's fields are their parameters",
        ));
    }
    // The texts' own tool sets are loaded (once per distinct set) by the batch kept with
    // the tools, as `parse_jsonl` loads a record's own `tools`.
    let batch = batch(default_tools.as_ref(), dialect);
    let catalog = default_tools.as_ref().map(|t| t.get().catalog.clone());
    let input = Input::read(texts)?;
    let own = row_tools.map(Input::read).transpose()?;
    let lengths = input.lengths();
    // The answer's fields are known only once the texts were read (`args` as a struct).
    let (chunks, fields) = py.detach(|| -> PyResult<(Vec<ArrayRef>, Fields)> {
        let elements = input.elements()?;
        let own = own.as_ref().map(Input::elements).transpose()?;
        if let Some(own) = &own {
            if own.len() != elements.len() {
                return Err(PyValueError::new_err(format!(
                    "row_tools has {} element(s) and texts {}: give one tool set (or None) per text",
                    own.len(),
                    elements.len()
                )));
            }
        }
        let found: Vec<Option<(Found, Option<Arc<Catalog>>)>> = workers.map(&elements, |i, text| {
            let text = text?;
            let own = own.as_ref().and_then(|own| own.get(i).copied().flatten());
            let loaded = match own {
                Some(raw) => match batch.tools_for(&String::from_utf8_lossy(raw)) {
                    Ok(loaded) => Some(loaded),
                    Err(error) => return Some((Found::tools_error(error.to_string()), None)),
                },
                None => None,
            };
            let text = String::from_utf8_lossy(text);
            let records = completion_records(
                &text,
                &match loaded.as_deref().or(catalog.as_deref()) {
                    Some(catalog) => RecordOptions::bound(catalog),
                    None => RecordOptions::default(),
                }
                .in_dialect(dialect),
            );
            Some((Found::of(records, args_as_struct), loaded))
        });
        let (found, sets): (Vec<Option<Found>>, Vec<Option<Arc<Catalog>>>) = found
            .into_iter()
            .map(|row| match row {
                Some((found, set)) => (Some(found), set),
                None => (None, None),
            })
            .unzip();
        let shape = if args_as_struct {
            let mut seen: Vec<&Arc<Catalog>> = Vec::new();
            for set in sets.iter().flatten() {
                if !seen.iter().any(|s| Arc::ptr_eq(s, set)) {
                    seen.push(set);
                }
            }
            let interfaces = catalog
                .iter()
                .chain(seen.iter().copied())
                .flat_map(|c| c.interfaces());
            Args::of(interfaces, &found)
        } else {
            Args::Json
        };
        let with_tools_error = own.is_some();
        let fields = result_fields(&shape, with_tools_error);
        let chunks = split(found, &lengths)
            .into_iter()
            .map(|chunk| -> ArrayRef {
                Arc::new(results_array(&chunk, &shape, with_tools_error))
            })
            .collect();
        Ok((chunks, fields))
    })?;
    answer(
        &pyarrow,
        input.chunked,
        chunks,
        Arc::new(Field::new("result", DataType::Struct(fields), true)),
    )
}
