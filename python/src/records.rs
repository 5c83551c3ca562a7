//! `parse` and `StreamParser`: the records `atfunc parse` prints, as Python dicts.
//!
//! Both are the core's [`RecordStream`], the one `atfunc parse` prints from (with the text
//! around calls too, as `--text` prints it, when asked): chunks in, the call and error
//! records they complete out, the same on every chunking. `parse` is one stream fed the
//! whole text, so it equals a `StreamParser` fed the same text in any pieces (the text
//! records once adjacent ones are joined: a `StreamParser` gives text out at every `feed`,
//! [`TextRelease::Early`], unless told `text_release="gap"`).
//!
//! `dialect=` names the call format read (`atfunc parse --dialect`).

use crate::convert::json_to_py;
use crate::tools::{self, Tools};
use atfunc::batch::{RecordStream, TextRecords, TextRelease};
use atfunc::parse::Dialect;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};
use serde_json::Value as Json;
use std::borrow::Cow;

/// Past this many bytes a chunk is parsed with the GIL released: below it, releasing and
/// taking the GIL back costs more than other threads gain.
const DETACH_BYTES: usize = 64 * 1024;

/// `parse` reads its text in pieces of this many bytes and makes each piece's records
/// Python objects before reading on, so the records of a large answer are not held twice
/// (as JSON values and as Python objects): 2M calls in 22 MB took 5.2 GB that way. The
/// records are the same as for the whole text (`PerGap` text records do not depend on
/// the pieces).
const PARSE_PIECE: usize = 64 << 10;

/// The bytes of a `str` (as UTF-8) or of a bytes-like object.
fn chunk_bytes<'a>(chunk: &'a Bound<'_, PyAny>) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(text) = chunk.cast::<PyString>() {
        return Ok(Cow::Owned(text.to_cow()?.as_bytes().to_vec()));
    }
    if let Ok(bytes) = chunk.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(bytes.as_bytes()));
    }
    // bytearray, memoryview and the like.
    chunk.extract::<Vec<u8>>().map(Cow::Owned).map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "expected str or bytes, got {}",
            chunk
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })
}

/// The dialect called `name` (`atfunc parse --dialect NAME`); ValueError listing the names
/// otherwise.
pub(crate) fn dialect(name: &str) -> PyResult<Dialect> {
    name.parse::<Dialect>()
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// `text_release=`: "early" or "gap".
fn text_release(name: &str) -> PyResult<TextRelease> {
    match name {
        "early" => Ok(TextRelease::Early),
        "gap" => Ok(TextRelease::PerGap),
        other => Err(PyValueError::new_err(format!(
            "unknown text_release '{other}': use \"early\" (text out at every feed) or \"gap\" (one record per run of text between calls)"
        ))),
    }
}

/// `with_text=`: whether the text around calls comes as records too.
fn text_records(with_text: bool) -> TextRecords {
    if with_text {
        TextRecords::Included
    } else {
        TextRecords::Omitted
    }
}

fn to_list<'py>(py: Python<'py>, records: &[Json]) -> PyResult<Bound<'py, PyList>> {
    let items = records
        .iter()
        .map(|record| json_to_py(py, record))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

/// Runs `work` with the GIL released when `len` is large enough to be worth it.
fn maybe_detached<T: Send>(py: Python<'_>, len: usize, work: impl FnOnce() -> T + Send) -> T {
    if len >= DETACH_BYTES {
        py.detach(work)
    } else {
        work()
    }
}

/// The record of every call-shaped span of `text`, in order, exactly as the lines
/// `atfunc parse` (with `--tools`, when `tools` is given) prints for it. Bytes may hold
/// invalid UTF-8: it is text, never a call.
///
/// `with_text=True` is `--text`: the text around the calls comes too, as `{"text": ...}`
/// records (adjacent text in one record, cut every 64 KiB) and `{"invalid_utf8": hex,
/// "span", "chars"}` records for bytes that are not UTF-8. `dialect` is `--dialect`: the
/// call format to read (see `_Dialect`).
#[pyfunction]
#[pyo3(signature = (text, tools = None, *, with_text = false, dialect = "atfunc"))]
pub(crate) fn parse<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyAny>,
    tools: Option<&Bound<'py, PyAny>>,
    with_text: bool,
    dialect: &str,
) -> PyResult<Bound<'py, PyList>> {
    let dialect = self::dialect(dialect)?;
    let tools = tools::optional(py, tools)?;
    let catalog = tools.map(|t| t.get().catalog.clone());
    let bytes = chunk_bytes(text)?;
    let mut stream = RecordStream::new(catalog)
        .with_dialect(dialect)
        .with_text(text_records(with_text));
    let list = PyList::empty(py);
    let mut out = Vec::new();
    let mut pieces = bytes.chunks(PARSE_PIECE);
    loop {
        let piece = pieces.next();
        let len = piece.map_or(0, <[u8]>::len);
        maybe_detached(py, len, || match piece {
            Some(piece) => stream.feed(piece, &mut out),
            None => stream.finish(&mut out),
        });
        for record in out.drain(..) {
            list.append(json_to_py(py, &record)?)?;
        }
        if piece.is_none() {
            return Ok(list);
        }
    }
}

/// Parses a completion that arrives in pieces. `feed` and `finish` each return the
/// records that became complete; all of them together equal `parse` of the whole text,
/// however it was split (even inside a character, for bytes). `with_text` and `dialect`
/// as for `parse`.
///
/// With `with_text`, `text_release` says when text goes out. `"early"` (the default):
/// each `feed` returns the text known by then not to be part of a call, so a chat UI
/// shows an answer as it arrives; only what may still start a call (an `@name`, the
/// start of a dialect's marker such as `<tool_call>`, a character cut in two) is held
/// until the next piece tells. The text records then follow the pieces, and joined are
/// the text `parse` gives. `"gap"`: one text record per run of text between calls, given
/// out when the call after it or the end is read, exactly `parse`'s records.
#[pyclass(module = "atfunc", name = "StreamParser")]
pub(crate) struct StreamParser {
    records: RecordStream,
    tools: Option<Py<Tools>>,
}

#[pymethods]
impl StreamParser {
    #[new]
    #[pyo3(signature = (tools = None, *, with_text = false, dialect = "atfunc", text_release = "early"))]
    fn new(
        py: Python<'_>,
        tools: Option<&Bound<'_, PyAny>>,
        with_text: bool,
        dialect: &str,
        text_release: &str,
    ) -> PyResult<StreamParser> {
        let dialect = self::dialect(dialect)?;
        let release = self::text_release(text_release)?;
        let tools = tools::optional(py, tools)?;
        let catalog = tools.as_ref().map(|t| t.get().catalog.clone());
        Ok(StreamParser {
            records: RecordStream::new(catalog)
                .with_dialect(dialect)
                .with_text(text_records(with_text))
                .with_text_release(release),
            tools,
        })
    }

    /// The next piece; returns the records it completed (and, with `with_text`, the
    /// text it released).
    fn feed<'py>(
        &mut self,
        py: Python<'py>,
        chunk: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let bytes = chunk_bytes(chunk)?;
        let records = &mut self.records;
        let out = maybe_detached(py, bytes.len(), || {
            let mut out = Vec::new();
            records.feed(&bytes, &mut out);
            out
        });
        to_list(py, &out)
    }

    /// The end of the completion: returns the last records (a call left open is an
    /// error record). The parser is then ready for the next completion, offsets from 0.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let mut out = Vec::new();
        self.records.finish(&mut out);
        to_list(py, &out)
    }

    /// The tools calls bind against, or None.
    #[getter]
    fn tools(&self, py: Python<'_>) -> Option<Py<Tools>> {
        self.tools.as_ref().map(|t| t.clone_ref(py))
    }
}
