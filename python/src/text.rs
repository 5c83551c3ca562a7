//! Text for the model: the prompt (`render`), the GBNF grammar (`grammar`) and the
//! results of calls (`format_results`, `truncate`, `fit_json`, `call_text`).

use crate::convert::{json_to_py, non_negative};
use crate::tools;
use atfunc::bind::written_calls;
use atfunc::format::{
    call_text_from_args, fit_json as fit, result_text, truncate_text, CallRecord,
};
use atfunc::grammar::{numbers_in, CallForm, Choice};
use atfunc::interop::{ToolFormat, ToolFormatOptions};
use atfunc::render::PromptOptions;
use atfunc::{gbnf, GrammarOptions};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde_json::{Map, Value as Json};

pyo3::create_exception!(
    atfunc,
    GrammarError,
    PyValueError,
    "No grammar can be made: `choice` names no function, or no call can be required."
);

/// The tools as text for a model, exactly as `atfunc render` prints it.
///
/// `format="atfunc"`: the prompt, the preamble that teaches the call syntax with an
/// example call, then every function; `preamble=False` leaves the preamble out
/// (`--no-preamble`), `separator` draws a line under each function, `param_descriptions`
/// adds a line for each described parameter under its function. `"openai"`: an OpenAI
/// `tools` array, `"mcp"`: an MCP `tools/list` result, as JSON text (`json.loads` it); a
/// tool whose name clashes with an earlier one's is left out with a `UserWarning`.
#[pyfunction]
#[pyo3(signature = (tools, *, format = "atfunc", separator = false, preamble = true, param_descriptions = false))]
pub(crate) fn render(
    py: Python<'_>,
    tools: &Bound<'_, PyAny>,
    format: &str,
    separator: bool,
    preamble: bool,
    param_descriptions: bool,
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
        let rendered =
            atfunc::interop::render(&tools.interfaces, format, &ToolFormatOptions::default());
        // The CLI says this on stderr; a tool left out is worth a warning, not an error.
        for clash in &rendered.clashes {
            crate::convert::user_warning(py, &clash.to_string())?;
        }
        let text = serde_json::to_string_pretty(&rendered.tools)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        return Ok(text + "\n");
    }
    let options = PromptOptions::default()
        .with_root(root)
        .with_separator(separator)
        .with_param_descriptions(param_descriptions);
    if !preamble {
        return Ok(atfunc::render::render_functions(
            &tools.interfaces,
            &options,
        ));
    }
    Ok(atfunc::render_prompt(&tools.interfaces, &options))
}

/// The GBNF grammar whose language is the answers whose calls bind to `tools`, as
/// `atfunc grammar` prints it. `choice`: `auto` (prose with calls anywhere), `required`
/// (a short lead-in, then one call or more), `none` (prose without `@`) or the name of the
/// one function allowed. `single`: at most one call. `lead_in`: most characters before the
/// first call when a call is required. `any_depth`: how deep `any` values nest.
/// `max_string_chars`, `max_list_items`: bounds on strings and lists, so that a model
/// looping inside one must close it. `grounded_text`: text arguments must be runs of whole
/// words of this text, within a sentence (`--grounded-text`). `grounded_numbers`: number
/// arguments must be numbers this text writes. `not_again`: call texts (as the model writes
/// calls) left out of the grammar (`--not-again`); `continued`: the answer goes on from a
/// call, so the grammar is a newline and one more call, or nothing (`--continued`).
/// `bare_strings`: a text argument may also be a bare word (`unit=units`), as
/// `atfunc serve --constrain` allows by default (`--bare-strings`; atfunc's form only).
/// `form`: `atfunc` (`@name(args)`), `hermes` (the `<tool_call>` JSON blocks Hermes and
/// Qwen 2.5 models are trained on, under the tools' own names; `--form`) or `hermes-list`
/// (the same call objects as one JSON list in a ```json fence, which `parse` reads with
/// `dialect="hermes"` and the tools). Raises `GrammarError` (for a `choice` that is no
/// function's name, naming the choices and the functions), and `ValueError` for a
/// `not_again` call that does not read or bind, or a `form` that is none of them.
#[pyfunction]
#[pyo3(signature = (
    tools, *, choice = "auto", single = false, lead_in = 100, any_depth = 3,
    max_string_chars = None, max_list_items = None, grounded_text = None,
    grounded_numbers = None, not_again = None, continued = false, bare_strings = false,
    form = "atfunc"
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn grammar(
    py: Python<'_>,
    tools: &Bound<'_, PyAny>,
    choice: &str,
    single: bool,
    lead_in: i64,
    any_depth: i64,
    max_string_chars: Option<i64>,
    max_list_items: Option<i64>,
    grounded_text: Option<String>,
    grounded_numbers: Option<String>,
    not_again: Option<Vec<String>>,
    continued: bool,
    bare_strings: bool,
    form: &str,
) -> PyResult<String> {
    let form = match form {
        "atfunc" => CallForm::Atfunc,
        "hermes" => CallForm::Hermes,
        "hermes-list" => CallForm::HermesList,
        other => {
            return Err(PyValueError::new_err(format!(
                "form must be \"atfunc\", \"hermes\" or \"hermes-list\", not {other:?}"
            )))
        }
    };
    let lead_in: u32 = non_negative("lead_in", lead_in)?;
    let any_depth: usize = non_negative("any_depth", any_depth)?;
    let max_string_chars: Option<u32> = max_string_chars
        .map(|n| non_negative("max_string_chars", n))
        .transpose()?;
    let max_list_items: Option<u32> = max_list_items
        .map(|n| non_negative("max_list_items", n))
        .transpose()?;
    let tools = tools::required(py, tools)?;
    let tools = tools.get();
    let mut left_out = Vec::new();
    for calls in not_again.iter().flatten() {
        left_out.extend(
            written_calls(calls, &tools.catalog)
                .map_err(|e| PyValueError::new_err(format!("not_again: {e}")))?,
        );
    }
    let Ok(choice) = choice.parse::<Choice>();
    let options = GrammarOptions::default()
        .with_choice(choice)
        .with_single(single)
        .with_root(tools.catalog.root().map(str::to_owned))
        .with_lead_in(lead_in)
        .with_any_depth(any_depth)
        .with_max_string_chars(max_string_chars)
        .with_max_list_items(max_list_items)
        .with_grounded_numbers(grounded_numbers.as_deref().map(numbers_in))
        .with_grounded_text(grounded_text)
        .with_not_again(left_out)
        .with_continued(continued)
        .with_bare_strings(bare_strings)
        .with_form(form);
    let interfaces = &tools.interfaces;
    py.detach(|| gbnf(interfaces, &options))
        .map_err(|e| match e {
            // A word that is no choice reads as a function's name; name the choices too, so
            // a misspelt `choice` is not taken for a missing tool.
            atfunc::GrammarError::UnknownFunction { .. } => GrammarError::new_err(format!(
                "choice must be \"auto\", \"required\", \"none\" or a function's name; {e}"
            )),
            _ => GrammarError::new_err(e.to_string()),
        })
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

/// What a record without a result or an error shows: a call that was parsed but not run
/// (or whose result was not given) must not read as one that returned `null`.
const NO_RESULT: &str = "(no result)";

/// The registry's floor for errors (`atfunc_tools::ERROR_TEXT_FLOOR`): a model needs an
/// error whole to correct its call, so a small limit for bulky results does not cut it.
const ERROR_TEXT_FLOOR: usize = 1000;

/// One record of `format_results`: `{"call": text, "result": value}` or
/// `{"call": text, "error": message}`; `{"name", "args"}` (a bound call record of `parse`)
/// may stand for `"call"`, and an error record of `parse` (`{"error", "raw", ...}`) is the
/// failed call its `raw` text shows.
fn call_record(py: Python<'_>, record: &Bound<'_, PyAny>) -> PyResult<CallRecord> {
    let record = record.cast::<PyDict>().map_err(|_| {
        PyTypeError::new_err("each record is a dict: {\"call\": ..., \"result\": ...} or {\"call\": ..., \"error\": ...}")
    })?;
    let call_text = match (record.get_item("call")?, record.get_item("name")?) {
        (Some(text), _) => text.extract::<String>()?,
        (None, Some(name)) => {
            let name: String = name.extract()?;
            let args = match record.get_item("args")? {
                // A call that did not bind has no arguments: it is shown as it was
                // written, as the registry shows it, or by its name.
                Some(args) if args.is_none() => {
                    let written = match record.get_item("raw")? {
                        Some(raw) => Some(raw.extract::<String>()?),
                        None => None,
                    };
                    return finish_record(
                        py,
                        record,
                        written.map_or_else(
                            || format!("{name}(...)"),
                            |raw| raw.strip_prefix('@').unwrap_or(&raw).to_owned(),
                        ),
                    );
                }
                Some(args) => match to_json(py, &args)? {
                    Json::Object(map) => map,
                    _ => return Err(PyTypeError::new_err("\"args\" must be a dict")),
                },
                None => Map::new(),
            };
            call_text_from_args(&name, &args)
        }
        // A span that did not parse or bind: shown as it was written, as the registry shows
        // a call it could not run.
        (None, None) => match record.get_item("raw")? {
            Some(raw) => {
                let raw: String = raw.extract()?;
                raw.strip_prefix('@').unwrap_or(&raw).to_owned()
            }
            None => {
                return Err(PyValueError::new_err(
                    "a record needs \"call\" (the call as text), \"name\" and \"args\" (a call record of parse) or \"raw\" (an error record of parse)",
                ))
            }
        },
    };
    finish_record(py, record, call_text)
}

/// The record of `call_text` with the result or error `record` gives.
fn finish_record(
    py: Python<'_>,
    record: &Bound<'_, PyDict>,
    call_text: String,
) -> PyResult<CallRecord> {
    let result = match (record.get_item("result")?, record.get_item("error")?) {
        (_, Some(error)) if !error.is_none() => Err(error.extract::<String>()?),
        (Some(value), _) => Ok(to_json(py, &value)?),
        (None, _) => Ok(Json::String(NO_RESULT.to_owned())),
    };
    Ok(CallRecord { call_text, result })
}

/// `record` with its result cut to `limit` characters (an error to no fewer than
/// [`ERROR_TEXT_FLOOR`]), as the registry cuts the results it formats.
fn cut_record(record: CallRecord, limit: usize) -> CallRecord {
    let result = match record.result {
        Ok(value) => match truncate_text(&result_text(&value), limit) {
            std::borrow::Cow::Borrowed(_) => Ok(value),
            std::borrow::Cow::Owned(cut) => Ok(Json::String(cut)),
        },
        Err(error) => Err(truncate_text(&error, limit.max(ERROR_TEXT_FLOOR)).into_owned()),
    };
    CallRecord {
        call_text: record.call_text,
        result,
    }
}

/// The results of calls as the model reads them on its next turn, one `Function call:
/// ... / Returned: ...` block per record. A record is `{"call": text, "result": value}` or
/// `{"call": text, "error": message}`; `"name"` and `"args"` (a bound call record of
/// `parse`) may stand for `"call"`, and an error record of `parse` is the failed call its
/// `raw` text shows, returning its `error`. A string result is shown as it is, any other
/// value as compact _JSON; a record with neither `result` nor `error` shows `(no result)`.
///
/// Each result is cut to `limit` characters (the library's default, 5000) as `truncate`
/// cuts it, an error to no fewer than 1000; `limit=None` cuts nothing.
#[pyfunction]
#[pyo3(signature = (records, *, limit = Some(5000)), text_signature = "(records, *, limit=5000)")]
pub(crate) fn format_results(
    py: Python<'_>,
    records: &Bound<'_, PyAny>,
    limit: Option<i64>,
) -> PyResult<String> {
    let limit: Option<usize> = limit.map(|n| non_negative("limit", n)).transpose()?;
    let records = records
        .try_iter()?
        .map(|record| {
            let record = call_record(py, &record?)?;
            Ok(match limit {
                Some(limit) => cut_record(record, limit),
                None => record,
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(atfunc::format_results(&records))
}

// The defaults above are written out so that Python's signature shows them; they are the
// library's.
const _: () = assert!(atfunc::format::DEFAULT_TRUNCATE_LENGTH == 5000);

/// `text` cut to its first `limit` characters, ending with a note of how many more
/// there were; unchanged within the limit.
#[pyfunction]
#[pyo3(signature = (text, limit = 5000))]
pub(crate) fn truncate(text: &Bound<'_, PyString>, limit: i64) -> PyResult<String> {
    let limit = non_negative("limit", limit)?;
    Ok(truncate_text(&text.to_cow()?, limit).into_owned())
}

/// `value` itself when its compact _JSON has at most `limit` characters; otherwise
/// `{"truncated": True, "partial": ..., "hint": ...}` whose compact _JSON has.
#[pyfunction]
#[pyo3(signature = (value, limit = 5000))]
pub(crate) fn fit_json(
    py: Python<'_>,
    value: &Bound<'_, PyAny>,
    limit: i64,
) -> PyResult<Py<PyAny>> {
    let limit = non_negative("limit", limit)?;
    let value = to_json(py, value)?;
    json_to_py(py, &fit(&value, limit))
}

/// A call as the results show it: `weather.get(city="Oslo")`.
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
