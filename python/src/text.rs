//! Text for the model: the prompt (`render`), the GBNF grammar (`grammar`) and the
//! results of calls (`format_results`, `truncate`, `fit_json`, `call_text`).

use crate::convert::json_to_py;
use crate::tools;
use atfunc::format::{call_text_from_args, fit_json as fit, truncate_text, CallRecord};
use atfunc::grammar::Choice;
use atfunc::interop::{Options, ToolFormat};
use atfunc::render::PromptOptions;
use atfunc::{gbnf, GrammarOptions};
use pyo3::exceptions::{PyTypeError, PyUserWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde_json::{Map, Value as Json};

pyo3::create_exception!(
    atfunc,
    GrammarError,
    PyValueError,
    "No grammar can be made for these tools and options (an unknown function, or no call that can bind)."
);

/// The tools as text for a model, as `atfunc render` prints it: the prompt (`format`
/// "atfunc"; `preamble=False` is `--no-preamble`), or an OpenAI `tools` array or an MCP
/// `tools/list` result as JSON text ("openai", "mcp").
#[pyfunction]
#[pyo3(signature = (tools, *, format = "atfunc", separator = false, preamble = true))]
pub(crate) fn render(
    py: Python<'_>,
    tools: &Bound<'_, PyAny>,
    format: &str,
    separator: bool,
    preamble: bool,
) -> PyResult<String> {
    let tools = tools::required(py, tools)?;
    let tools = tools.get();
    let root = tools.catalog.root();
    if format != "atfunc" {
        let format = format.parse::<ToolFormat>().map_err(|_| {
            PyValueError::new_err(format!(
                "unknown format '{format}': use atfunc, openai or mcp"
            ))
        })?;
        let rendered = atfunc::interop::render(&tools.interfaces, format, &Options::default());
        // The CLI says this on stderr; a tool left out is worth a warning, not an error.
        for clash in &rendered.clashes {
            PyErr::warn(
                py,
                &py.get_type::<PyUserWarning>(),
                &std::ffi::CString::new(clash.to_string()).unwrap_or_default(),
                1,
            )?;
        }
        let text = serde_json::to_string_pretty(&rendered.tools)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        return Ok(text + "\n");
    }
    let options = PromptOptions { root, separator };
    if !preamble {
        return Ok(atfunc::render::render_functions(
            &tools.interfaces,
            &options,
        ));
    }
    Ok(atfunc::render_prompt(&tools.interfaces, &options))
}

/// The GBNF grammar of answers whose calls bind to `tools`.
#[pyfunction]
#[pyo3(signature = (tools, *, choice = "auto", single = false, lead_in = 100, any_depth = 3))]
pub(crate) fn grammar(
    py: Python<'_>,
    tools: &Bound<'_, PyAny>,
    choice: &str,
    single: bool,
    lead_in: u32,
    any_depth: usize,
) -> PyResult<String> {
    let tools = tools::required(py, tools)?;
    let tools = tools.get();
    let Ok(choice) = choice.parse::<Choice>();
    let options = GrammarOptions {
        choice,
        single,
        root: tools.catalog.root().map(str::to_owned),
        lead_in,
        any_depth,
        ..GrammarOptions::default()
    };
    let interfaces = &tools.interfaces;
    py.detach(|| gbnf(interfaces, &options))
        .map_err(|e| GrammarError::new_err(e.to_string()))
}

/// A Python value as JSON, through Python's own `json` module (so a value that
/// `json.dumps` refuses is refused here too, with its message).
fn to_json(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Json> {
    let text: String = py
        .import("json")?
        .call_method1("dumps", (value,))?
        .extract()?;
    serde_json::from_str(&text).map_err(|e| PyValueError::new_err(format!("not JSON: {e}")))
}

/// One record of `format_results`: `{"call": text, "result": value}` or
/// `{"call": text, "error": message}`; `{"name", "args"}` (a bound call record of `parse`)
/// may stand for `"call"`.
fn call_record(py: Python<'_>, record: &Bound<'_, PyAny>) -> PyResult<CallRecord> {
    let record = record.cast::<PyDict>().map_err(|_| {
        PyTypeError::new_err("each record is a dict: {\"call\": ..., \"result\": ...} or {\"call\": ..., \"error\": ...}")
    })?;
    let call_text = match record.get_item("call")? {
        Some(text) => text.extract::<String>()?,
        None => {
            let name = record.get_item("name")?.ok_or_else(|| {
                PyValueError::new_err(
                    "a record needs \"call\" (the call as text) or \"name\" and \"args\"",
                )
            })?;
            let name: String = name.extract()?;
            let args = match record.get_item("args")? {
                Some(args) => match to_json(py, &args)? {
                    Json::Object(map) => map,
                    _ => return Err(PyTypeError::new_err("\"args\" must be a dict")),
                },
                None => Map::new(),
            };
            call_text_from_args(&name, &args)
        }
    };
    let result = match (record.get_item("result")?, record.get_item("error")?) {
        (_, Some(error)) if !error.is_none() => Err(error.extract::<String>()?),
        (Some(value), _) => Ok(to_json(py, &value)?),
        (None, _) => Ok(Json::Null),
    };
    Ok(CallRecord { call_text, result })
}

/// The results of calls as the model reads them on its next turn.
#[pyfunction]
pub(crate) fn format_results(py: Python<'_>, records: &Bound<'_, PyAny>) -> PyResult<String> {
    let records = records
        .try_iter()?
        .map(|record| call_record(py, &record?))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(atfunc::format_results(&records))
}

// The defaults above are written out so that Python's signature shows them; they are the
// library's.
const _: () = assert!(atfunc::format::DEFAULT_TRUNCATE_LENGTH == 5000);

/// `text` cut to its first `limit` characters, saying how many it cut.
#[pyfunction]
#[pyo3(signature = (text, limit = 5000))]
pub(crate) fn truncate(text: &Bound<'_, PyString>, limit: usize) -> PyResult<String> {
    Ok(truncate_text(&text.to_cow()?, limit).into_owned())
}

/// `value` itself when its compact JSON has at most `limit` characters, else a
/// `{"truncated": true, "partial": ..., "hint": ...}` that has.
#[pyfunction]
#[pyo3(signature = (value, limit = 5000))]
pub(crate) fn fit_json(
    py: Python<'_>,
    value: &Bound<'_, PyAny>,
    limit: usize,
) -> PyResult<Py<PyAny>> {
    let value = to_json(py, value)?;
    json_to_py(py, &fit(&value, limit))
}

/// A call as text, as results show it: `weather.get(city="Oslo")`.
#[pyfunction]
#[pyo3(signature = (name, args = None))]
pub(crate) fn call_text(
    py: Python<'_>,
    name: &str,
    args: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    let args = match args {
        None => Map::new(),
        Some(args) => match to_json(py, args)? {
            Json::Object(map) => map,
            _ => return Err(PyTypeError::new_err("args must be a dict")),
        },
    };
    Ok(call_text_from_args(name, &args))
}
