//! Python functions as tools: the native half of `atfunc.Toolbox`.
//!
//! The contract, step by step:
//! 1. Python (`atfunc/toolbox.py`) reads each function's signature, type hints and
//!    docstring and writes its interface as a tool definition; `Tools` loads and validates
//!    the definitions with the crate's loader, so a bad one raises its `ToolsError`.
//! 2. [`NativeRegistry::set_tools`] puts the loaded interfaces into the crate's own
//!    [`Registry`], one [`FnBox`] per domain (a function without one is a root function),
//!    each function answered by a Python callable. So binding, case-insensitive names,
//!    coercion, bounds, parsers, confirmation, events, output filters and truncation are
//!    the registry's, as for any Rust tool.
//! 3. A call takes the GIL only to call its Python function, which answers
//!    `(True, json_text)` or `(False, message)`: a raised exception is a tool error the
//!    model reads (`ValueError: ...`), never a traceback.
//! 4. [`NativeRegistry::run`] and [`NativeStream`] run a model's answer with the GIL
//!    released and give each call as the record `ExecutionReport::to_json` holds for it,
//!    plus its `call_id` (and `confirmation_id`, for a held call), and the result blocks
//!    for the model's next turn.

use crate::convert::json_to_py;
use crate::tools::Tools;
use atfunc::async_trait;
use atfunc::execute::{
    Args, Confirmer, Decision, FnBox, HeldCall, Outcome, Registry, ResponseStream, StreamEnd,
    ToolError,
};
use atfunc::interop::{self, Options, ToolFormat};
use atfunc::parse::ParserConfig;
use atfunc::{Event, Interface, StreamParser};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::{json, Map, Value as Json};
use std::sync::{Arc, Mutex, PoisonError};

/// The crate's registry holding Python functions, and the runtime that drives its calls:
/// the native half of `atfunc.Toolbox` (use that). Each Python function is called with the
/// GIL taken and answers `(True, json_text)` or `(False, message)`.
#[pyclass(module = "atfunc._atfunc", name = "_Registry", frozen)]
pub(crate) struct NativeRegistry {
    registry: Arc<Registry>,
    runtime: Arc<tokio::runtime::Runtime>,
    /// The boxes `set_tools` registered, to take out when the tools change.
    boxes: Mutex<Vec<String>>,
    /// The interfaces offered now, for the OpenAI names.
    interfaces: Mutex<Arc<Vec<Interface>>>,
    /// Whether a call that repeats an earlier one of the same answer runs too; by
    /// default it ends the answer, as in the gateway.
    keep_repeated_calls: bool,
    /// The most calls `run` runs of one answer; the answer ends before the next. 1000 by
    /// default, the gateway's bound: each call's outcome is held for the turn, and an
    /// answer of 200k calls held 1.2 GB.
    max_calls: usize,
}

/// The pieces an answer is read in to find where its calls start.
const SCAN_PIECE: usize = 64 << 10;

/// Where the first call past `max_calls` in `answer` starts (a byte offset), read as the
/// registry reads it; None when there are no more calls than that. Each piece's events
/// are dropped as they are counted, so the count holds no call.
fn past_max_calls(config: ParserConfig, answer: &str, max_calls: usize) -> Option<usize> {
    let mut parser = StreamParser::new(config);
    let mut events = Vec::new();
    let mut started = 0usize;
    let mut pieces = answer.as_bytes().chunks(SCAN_PIECE);
    loop {
        let piece = pieces.next();
        match piece {
            Some(piece) => parser.feed_into(piece, &mut events),
            None => parser.finish_into(&mut events),
        }
        for event in events.drain(..) {
            if let Event::CallStarted { start, .. } = event {
                started += 1;
                if started > max_calls {
                    return usize::try_from(start).ok();
                }
            }
        }
        piece?;
    }
}

/// A Python callable kept for calls made on any thread.
type Callable = Arc<Py<PyAny>>;

/// The text of a Python exception as the model reads it: `TypeName: message`.
fn exception_text(py: Python<'_>, error: &PyErr) -> String {
    let name = error
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".to_owned());
    let message = error
        .value(py)
        .str()
        .map(|s| s.to_string())
        .unwrap_or_default();
    if message.is_empty() {
        name
    } else {
        format!("{name}: {message}")
    }
}

/// Calls a tool's Python function with the bound arguments. The function (the wrapper
/// `toolbox.py` makes) answers `(True, json_text)` or `(False, message)`.
fn call_tool(function: &Callable, args: Args) -> Result<Json, ToolError> {
    Python::attach(|py| {
        let args = json_to_py(py, &Json::Object(args.into_map()))
            .map_err(|e| ToolError::msg(exception_text(py, &e)))?;
        let answer = function
            .call1(py, (args,))
            .map_err(|e| ToolError::msg(exception_text(py, &e)))?;
        let (ok, text): (bool, String) = answer
            .extract(py)
            .map_err(|e| ToolError::msg(exception_text(py, &e)))?;
        if !ok {
            return Err(ToolError::msg(text));
        }
        serde_json::from_str(&text)
            .map_err(|e| ToolError::msg(format!("the tool's result is not JSON: {e}")))
    })
}

/// A JSON value as Python's `json.dumps` writes it, read back by serde_json.
fn py_to_json(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Json> {
    let text: String = py
        .import("json")?
        .call_method1("dumps", (value,))?
        .extract()?;
    serde_json::from_str(&text).map_err(|e| PyValueError::new_err(format!("not JSON: {e}")))
}

/// The record of one call: `{"call_id", "name", "args", "result" | "error", "span",
/// "chars"}` as [`ExecutionReport::to_json`](atfunc::execute::ExecutionReport::to_json) writes it, and `confirmation_id` for a call
/// held for confirmation.
fn outcome_record(outcome: &Outcome) -> Json {
    let mut record = Map::new();
    record.insert("call_id".into(), Json::String(outcome.call_id.clone()));
    if let Json::Object(map) = outcome.to_json() {
        record.extend(map);
    }
    let span = outcome.span;
    record.insert("span".into(), json!([span.start, span.end]));
    record.insert("chars".into(), json!([span.char_start, span.char_end]));
    if let Some(id) = &outcome.confirmation_id {
        record.insert("confirmation_id".into(), Json::String(id.clone()));
    }
    Json::Object(record)
}

/// A turn as Python gets it: `{"results": [...], "text": ..., "role": "user"}`. The
/// results go back in a user message, as the gateway sends them to a model without
/// native tool calls.
/// The turn as `Turn`'s fields; `stopped_at`: where `run` ended an answer of too many calls,
/// in characters.
fn turn_json(end: &StreamEnd, stopped_at: Option<usize>) -> Json {
    let report = &end.report;
    json!({
        "results": report.calls.iter().map(outcome_record).collect::<Vec<_>>(),
        "text": report.output,
        "role": "user",
        // Python indexes strings by character.
        "repeated_at": end.repeated_at.map(|span| span.char_start),
        "stopped_at": stopped_at,
    })
}

fn runtime_error(error: impl std::fmt::Display) -> PyErr {
    PyRuntimeError::new_err(error.to_string())
}

/// Refuses to run an answer from inside a tool of a running one: the runtime that runs
/// the outer answer cannot be entered again from its own thread.
fn not_nested() -> PyResult<()> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(runtime_error(
            "a Toolbox cannot run an answer from inside one of its tools: return the result and run the next answer after this one",
        ));
    }
    Ok(())
}

/// A confirmer that asks a Python callable: it gets the held call as a dict and answers
/// `"run"`, `"decline"` or `"hold"` (or a bool: run or decline).
struct PyConfirmer(Callable);

#[async_trait]
impl Confirmer for PyConfirmer {
    async fn decide(&self, call: &HeldCall) -> Decision {
        let asked = json!({
            "confirmation_id": call.confirmation_id,
            "call_id": call.call_id,
            "name": call.function,
            "args": call.args,
            "call": call.call_text,
        });
        Python::attach(|py| {
            let answer = json_to_py(py, &asked).and_then(|asked| self.0.call1(py, (asked,)));
            match answer {
                Ok(answer) => decision(answer.bind(py)).unwrap_or_else(|e| {
                    e.write_unraisable(py, None);
                    Decision::Decline
                }),
                // A confirmer that fails runs nothing.
                Err(e) => {
                    e.write_unraisable(py, None);
                    Decision::Decline
                }
            }
        })
    }
}

/// A decision named by `value`: `"run"`, `"decline"`, `"hold"`, or a bool.
fn decision(value: &Bound<'_, PyAny>) -> PyResult<Decision> {
    if let Ok(run) = value.extract::<bool>() {
        return Ok(if run {
            Decision::Run
        } else {
            Decision::Decline
        });
    }
    match value.extract::<String>()?.as_str() {
        "run" => Ok(Decision::Run),
        "decline" => Ok(Decision::Decline),
        "hold" => Ok(Decision::Hold),
        other => Err(PyValueError::new_err(format!(
            "unknown confirmation decision {other:?}: use \"run\", \"decline\" or \"hold\" (or True/False)"
        ))),
    }
}

impl NativeRegistry {
    fn block_on<T: Send>(
        &self,
        py: Python<'_>,
        work: impl std::future::Future<Output = T> + Send,
    ) -> PyResult<T> {
        not_nested()?;
        let runtime = &self.runtime;
        Ok(py.detach(|| runtime.block_on(work)))
    }

    /// A stream for one answer, ended at its first repeated call unless repeats are kept.
    fn response_stream(&self) -> ResponseStream {
        let stream = self.registry.stream();
        if self.keep_repeated_calls {
            stream
        } else {
            stream.end_at_repeated_call()
        }
    }

    /// The names of the functions as an OpenAI `tools` array gives them.
    fn names(&self) -> interop::NameMap {
        let interfaces = Arc::clone(
            &self
                .interfaces
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        interop::render(&interfaces, ToolFormat::Openai, &Options::default()).names
    }
}

#[pymethods]
impl NativeRegistry {
    #[new]
    #[pyo3(signature = (truncate_length = 5000, keep_repeated_calls = false, max_calls = 1000))]
    fn new(
        truncate_length: usize,
        keep_repeated_calls: bool,
        max_calls: usize,
    ) -> PyResult<NativeRegistry> {
        let registry = Registry::new();
        // The model is offered the Python functions only, not `tools.*`.
        registry.unregister_control_functions();
        registry.set_truncate_length(truncate_length.max(1));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(runtime_error)?;
        Ok(NativeRegistry {
            registry: Arc::new(registry),
            runtime: Arc::new(runtime),
            boxes: Mutex::new(Vec::new()),
            interfaces: Mutex::new(Arc::new(Vec::new())),
            keep_repeated_calls,
            max_calls,
        })
    }

    /// Offers `tools` from now on, each answered by `handlers[qualified name]`. When the
    /// registry refuses them, the tools offered before stay.
    fn set_tools(&self, tools: &Tools, handlers: &Bound<'_, PyDict>) -> PyResult<()> {
        // One box per domain, in the order the domains first appear.
        let mut groups: Vec<(String, Vec<(Interface, Callable)>)> = Vec::new();
        for interface in tools.interfaces.iter() {
            let name = interface.qualified_name();
            let handler = handlers.get_item(&name)?.ok_or_else(|| {
                PyValueError::new_err(format!("no Python function for the tool '{name}'"))
            })?;
            let tool = (interface.clone(), Arc::new(handler.unbind()));
            let domain = interface.domain.clone().unwrap_or_default();
            match groups.iter_mut().find(|(d, _)| *d == domain) {
                Some((_, group)) => group.push(tool),
                None => groups.push((domain, vec![tool])),
            }
        }
        let boxes = groups.into_iter().map(|(domain, group)| {
            let tool_box = group.into_iter().fold(
                FnBox::new(domain.clone()),
                |tool_box, (interface, handler)| {
                    tool_box.function(interface, move |args, _ctx| call_tool(&handler, args))
                },
            );
            (domain, tool_box)
        });
        let mut registered = self.boxes.lock().unwrap_or_else(PoisonError::into_inner);
        let before: Vec<_> = registered
            .drain(..)
            .filter_map(|name| self.registry.unregister(&name))
            .collect();
        for (name, tool_box) in boxes {
            if let Err(error) = self.registry.register(tool_box) {
                for name in registered.drain(..) {
                    self.registry.unregister(&name);
                }
                for tool_box in before {
                    registered.push(tool_box.name().to_owned());
                    // They were registered together a moment ago.
                    let _ = self.registry.register_shared(tool_box);
                }
                return Err(PyValueError::new_err(error.to_string()));
            }
            registered.push(name);
        }
        *self
            .interfaces
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Arc::clone(&tools.interfaces);
        Ok(())
    }

    /// Runs the calls of a model's whole answer (up to the first repeated call, unless
    /// repeats are kept, and at most `max_calls` of them); the turn as a dict.
    fn run(&self, py: Python<'_>, answer: String) -> PyResult<Py<PyAny>> {
        let mut answer = answer;
        let config = self.registry.parser_config();
        let max_calls = self.max_calls;
        let cut = py.detach(|| past_max_calls(config, &answer, max_calls));
        // The answer ends where the call past the bound starts: it and what follows are
        // not read, as after a repeated call.
        let stopped_at = match cut {
            Some(at) if answer.is_char_boundary(at) => {
                let chars = answer.get(..at).map_or(0, |s| s.chars().count());
                answer.truncate(at);
                Some(chars)
            }
            _ => None,
        };
        let mut stream = self.response_stream();
        let end = self.block_on(py, async move {
            stream.feed_str(&answer).await;
            stream.finish().await
        })?;
        json_to_py(py, &turn_json(&end, stopped_at))
    }

    /// A stream fed the answer as it arrives.
    fn stream(&self) -> NativeStream {
        NativeStream {
            stream: Mutex::new(Some(self.response_stream())),
            runtime: Arc::clone(&self.runtime),
        }
    }

    /// Results longer than this many characters are cut.
    #[getter]
    fn truncate_length(&self) -> usize {
        self.registry.truncate_length()
    }

    #[setter]
    fn set_truncate_length(&self, length: usize) {
        self.registry.set_truncate_length(length.max(1));
    }

    /// Calls of `path` (a function, or a whole domain) wait for confirmation.
    fn require_confirmation(&self, path: &str) -> PyResult<()> {
        self.registry
            .require_confirmation(path)
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// Who decides on calls that need confirmation: `None` (they are held), a decision
    /// (`"run"`, `"decline"`, `"hold"`, a bool) or a callable answering one.
    fn set_confirmer(&self, confirmer: &Bound<'_, PyAny>) -> PyResult<()> {
        if confirmer.is_none() {
            self.registry.clear_confirmer();
        } else if confirmer.is_callable() {
            self.registry
                .set_confirmer(PyConfirmer(Arc::new(confirmer.clone().unbind())));
        } else {
            self.registry.set_confirmer(decision(confirmer)?);
        }
        Ok(())
    }

    /// Runs the held call `id`; its record.
    fn confirm(&self, py: Python<'_>, id: String) -> PyResult<Py<PyAny>> {
        let registry = Arc::clone(&self.registry);
        let outcome = self.block_on(py, async move { registry.confirm_outcome(&id).await })?;
        let outcome = outcome.map_err(|e| PyValueError::new_err(e.to_string()))?;
        let mut record = outcome_record(&outcome);
        if let Json::Object(map) = &mut record {
            map.insert("text".into(), Json::String(outcome.block.clone()));
        }
        json_to_py(py, &record)
    }

    /// Drops the held call `id` without running it.
    fn reject(&self, id: &str) -> PyResult<()> {
        self.registry
            .reject(id)
            .map(|_| ())
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// The calls waiting for confirmation.
    fn held(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let held = self
            .registry
            .held_calls()
            .into_iter()
            .map(|call| {
                json!({
                    "confirmation_id": call.confirmation_id,
                    "call_id": call.call_id,
                    "name": call.function,
                    "args": call.args,
                    "call": call.call_text,
                })
            })
            .collect();
        json_to_py(py, &Json::Array(held))
    }

    /// `callback(event)` for each call's start and end.
    fn on_event(&self, callback: &Bound<'_, PyAny>) {
        if callback.is_none() {
            self.registry.clear_event_hook();
            return;
        }
        let callback: Callable = Arc::new(callback.clone().unbind());
        self.registry.on_event(move |event| {
            let event = serde_json::to_value(event).unwrap_or(Json::Null);
            Python::attach(|py| {
                let called = json_to_py(py, &event).and_then(|e| callback.call1(py, (e,)));
                if let Err(error) = called {
                    error.write_unraisable(py, None);
                }
            });
        });
    }

    /// `parser(value)` turns the argument `param` of `function` into its value before the
    /// call; it raises to refuse it (the model reads the message).
    fn set_parser(&self, function: &str, param: &str, parser: &Bound<'_, PyAny>) -> PyResult<()> {
        let parser: Callable = Arc::new(parser.clone().unbind());
        self.registry
            .set_parser(function, param, move |value| {
                Python::attach(|py| {
                    let parsed = json_to_py(py, &value)
                        .and_then(|value| parser.call1(py, (value,)))
                        .and_then(|parsed| py_to_json(py, parsed.bind(py)));
                    parsed.map_err(|e| exception_text(py, &e))
                })
            })
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// `filter(name, args, text)` may replace a call's result text (a str) or keep it
    /// (None).
    fn add_output_filter(&self, filter: &Bound<'_, PyAny>) {
        let filter: Callable = Arc::new(filter.clone().unbind());
        self.registry.add_output_filter(move |name, args, text| {
            Python::attach(|py| {
                let called = json_to_py(py, &Json::Object(args.clone()))
                    .and_then(|args| filter.call1(py, (name, args, text)))
                    .and_then(|out| out.extract::<Option<String>>(py));
                called.unwrap_or_else(|error| {
                    error.write_unraisable(py, None);
                    None
                })
            })
        });
    }

    /// OpenAI `tool_calls` entries (JSON text of a list) as atfunc call text, one call a
    /// line, for `run`.
    fn tool_calls_text(&self, tool_calls: &str) -> PyResult<String> {
        let entries: Vec<Json> = serde_json::from_str(tool_calls)
            .map_err(|e| PyValueError::new_err(format!("tool_calls are not a JSON list: {e}")))?;
        let names = self.names();
        let options = Options::default();
        let lines = entries
            .iter()
            .map(|entry| interop::tool_call_to_text(entry, &names, &options))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(lines.join("\n"))
    }

    /// The records of a turn (JSON text of a list) as OpenAI messages: an assistant
    /// message with their `tool_calls`, then one `tool` message per call that bound.
    fn openai_messages(&self, py: Python<'_>, records: &str) -> PyResult<Py<PyAny>> {
        let records: Vec<Json> = serde_json::from_str(records)
            .map_err(|e| PyValueError::new_err(format!("records are not a JSON list: {e}")))?;
        let names = self.names();
        let mut calls = Vec::new();
        let mut results = Vec::new();
        for record in &records {
            let (Some(name), Some(Json::Object(args))) = (
                record.get("name").and_then(Json::as_str),
                record.get("args"),
            ) else {
                // A call that did not bind has no tool to name.
                continue;
            };
            let Some(model_name) = names.model_name(name) else {
                continue;
            };
            let id = record
                .get("call_id")
                .and_then(Json::as_str)
                .unwrap_or_default();
            calls.push(interop::tool_call(id, model_name, args));
            let result = match (record.get("error"), record.get("result")) {
                (Some(Json::String(error)), _) => Err(error.clone()),
                (_, Some(value)) => Ok(value.clone()),
                (_, None) => Ok(Json::Null),
            };
            results.push(interop::tool_message(id, &result));
        }
        let mut messages = Vec::with_capacity(results.len() + 1);
        if !calls.is_empty() {
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": calls}));
        }
        messages.extend(results);
        json_to_py(py, &Json::Array(messages))
    }
}

/// An answer fed as it streams: each call runs as soon as it is complete.
#[pyclass(module = "atfunc._atfunc", name = "_Stream", frozen)]
pub(crate) struct NativeStream {
    /// `None` once finished.
    stream: Mutex<Option<ResponseStream>>,
    runtime: Arc<tokio::runtime::Runtime>,
}

#[pymethods]
impl NativeStream {
    /// The next piece of the answer; the records of the calls it completed.
    fn feed(&self, py: Python<'_>, chunk: String) -> PyResult<Py<PyAny>> {
        not_nested()?;
        let runtime = &self.runtime;
        let stream = &self.stream;
        let outcomes = py.detach(|| {
            let mut guard = stream.lock().unwrap_or_else(PoisonError::into_inner);
            guard
                .as_mut()
                .map(|stream| runtime.block_on(stream.feed_str(&chunk)))
        });
        let outcomes = outcomes.ok_or_else(|| runtime_error("this stream is finished"))?;
        json_to_py(
            py,
            &Json::Array(outcomes.iter().map(outcome_record).collect()),
        )
    }

    /// The end of the answer: the turn, every call of the answer in it.
    fn finish(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        not_nested()?;
        let runtime = &self.runtime;
        let stream = &self.stream;
        let end = py.detach(|| {
            let taken = stream.lock().unwrap_or_else(PoisonError::into_inner).take();
            taken.map(|stream| runtime.block_on(stream.finish()))
        });
        let end = end.ok_or_else(|| runtime_error("this stream is finished"))?;
        json_to_py(py, &turn_json(&end, None))
    }
}
