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
//! 3. A call takes the GIL only to start its Python function, which runs in a thread or
//!    on an event loop while the registry waits on its future ([`calls`]): calls of one
//!    answer run at once up to the registry's concurrency, each within its time limit. A
//!    raised exception is a tool error the model reads (`ValueError: ...`), never a
//!    traceback (that is in the call's record, `traceback`, and in Python's log);
//!    `KeyboardInterrupt` and `SystemExit` stop the run and reach the caller.
//! 4. [`NativeRegistry::run`] and [`NativeStream`] run a model's answer with the GIL
//!    released and give each call as the record `ExecutionReport::to_json` holds for it,
//!    plus its `call_id` (and `confirmation_id`, for a held call), and the result blocks
//!    for the model's next turn; a text parser beside the registry's ([`answer`]) gives
//!    the answer's text among the calls' records.

use crate::answer::{self, AnswerText};
use crate::calls::{
    self, call_tool, exception_text, swallowed, Callable, Cancel, PyTool, RunControl,
};
use crate::convert::{count_at_least, json_to_py};
use crate::tools::Tools;
use atfunc::interop::{self, ToolFormat, ToolFormatOptions};
use atfunc::parse::ParserConfig;
use atfunc::{Event, Interface, StreamParser};
use atfunc_tools::async_trait;
use atfunc_tools::{
    CallContext, Confirmer, Decision, FnBox, HeldCall, Outcome, Registry, ResponseStream, StreamEnd,
};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::{json, Map, Value as Json};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// The crate's registry holding Python functions, and the runtime that drives its calls:
/// the native half of `atfunc.Toolbox` (use that). Each tool's handler gives a call's
/// `concurrent.futures.Future` of `(True, json_text)` or `(False, message[, traceback])`,
/// and what starts the call (None: the future is done).
#[pyclass(module = "atfunc._atfunc", name = "_Registry", frozen)]
pub(crate) struct NativeRegistry {
    registry: Arc<Registry>,
    runtime: Arc<calls::ToolRuntime>,
    /// The boxes `set_tools` registered, to take out when the tools change.
    boxes: Mutex<Vec<String>>,
    /// The interfaces offered now, for the OpenAI names.
    interfaces: Mutex<Arc<Vec<Interface>>>,
    /// Whether a call that repeats an earlier one of the same answer runs too; by
    /// default it ends the answer, as in the gateway.
    keep_repeated_calls: bool,
    /// The time limit of a call of a tool without one of its own; `None`: no limit.
    timeout: Arc<Mutex<Option<Duration>>>,
    /// The control `confirm` runs a held call under: the run that held it is over.
    confirming: Arc<RunControl>,
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

/// A JSON value as Python's `json.dumps` writes it, read back by serde_json.
fn py_to_json(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Json> {
    let text: String = py
        .import("json")?
        .call_method1("dumps", (value,))?
        .extract()?;
    serde_json::from_str(&text).map_err(|e| PyValueError::new_err(format!("not JSON: {e}")))
}

/// The record of one call: `{"call_id", "name", "args", "result" | "error" | "state", "span",
/// "chars", "call"}` as
/// [`ExecutionReport::to_json`](atfunc_tools::ExecutionReport::to_json) writes it (a call
/// held for confirmation: `"state": "held"` and its `confirmation_id`), and `traceback` for
/// a call whose tool raised (from the run's `control`; `take`: it is not asked for again).
fn outcome_record(outcome: &Outcome, control: &RunControl, take: bool) -> Json {
    let mut record = Map::new();
    record.insert("call_id".into(), Json::String(outcome.call_id.clone()));
    if let Json::Object(map) = outcome.to_json() {
        record.extend(map);
    }
    let span = outcome.span;
    record.insert("span".into(), json!([span.start, span.end]));
    record.insert("chars".into(), json!([span.char_start, span.char_end]));
    if let Some(traceback) = control.traceback(&outcome.call_id, take) {
        record.insert("traceback".into(), Json::String(traceback));
    }
    // The call as its result block shows it (as written, cut if very long), so
    // `format_results` shows it the same, and a call that did not bind, which has no
    // arguments to write it from, is shown at all.
    record.insert(
        "call".into(),
        Json::String(outcome.record.call_text.clone()),
    );
    Json::Object(record)
}

/// A turn as Python gets it: `{"results": [...], "text": ..., "role": "user", "records":
/// [...]}`. The results go back in a user message, as the gateway sends them to a model
/// without native tool calls; `records` is the answer as text and call records in order.
fn turn_json(end: &StreamEnd, records: Vec<Json>, control: &RunControl) -> Json {
    let report = &end.report;
    json!({
        "results": report
            .calls
            .iter()
            .map(|outcome| outcome_record(outcome, control, false))
            .collect::<Vec<_>>(),
        "text": report.output,
        "role": "user",
        // Python indexes strings by character.
        "repeated_at": end.repeated_at.map(|span| span.char_start),
        "records": records,
    })
}

/// A tool of one domain's box: its interface and how it runs.
type DomainTool = (Interface, Arc<PyTool>);

/// A time limit given in seconds.
fn seconds(limit: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(limit)
        .ok()
        .filter(|limit| !limit.is_zero())
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "a timeout is a positive number of seconds (or None), got {limit}"
            ))
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
            // A confirmer that fails runs nothing.
            answer
                .and_then(|answer| decision(answer.bind(py)))
                .unwrap_or_else(|e| {
                    swallowed(py, e);
                    Decision::Decline
                })
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
    /// Runs `work` with the GIL released until it ends or `control` stops it.
    fn block_on<T: Send>(
        &self,
        py: Python<'_>,
        control: &RunControl,
        work: impl std::future::Future<Output = T> + Send,
    ) -> PyResult<T> {
        not_nested()?;
        let runtime = &self.runtime;
        py.detach(|| calls::drive(runtime, control, work))
    }

    /// A stream for one answer, ended at its first repeated call unless repeats are kept;
    /// its calls see `control`.
    fn response_stream(&self, control: &Arc<RunControl>, keep_repeated: bool) -> ResponseStream {
        let ctx = CallContext::new().with(Arc::clone(control));
        let stream = self.registry.stream_with(&ctx);
        if keep_repeated {
            stream
        } else {
            stream.end_at_repeated_call()
        }
    }

    /// A stream for one answer with the text parser beside it; `keep_repeated`: whether
    /// a call repeating an earlier one runs too (None: as the toolbox says).
    fn native_stream(
        &self,
        with_text: bool,
        cancel: Option<&Cancel>,
        keep_repeated: Option<bool>,
    ) -> NativeStream {
        let control = cancel.map(|c| Arc::clone(&c.control)).unwrap_or_default();
        let keep_repeated = keep_repeated.unwrap_or(self.keep_repeated_calls);
        let stream = self.response_stream(&control, keep_repeated);
        let text = AnswerText::new(self.registry.parser_config());
        NativeStream {
            state: Mutex::new(Some((stream, text))),
            runtime: Arc::clone(&self.runtime),
            control,
            with_text,
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
        interop::render(
            &interfaces,
            ToolFormat::Openai,
            &ToolFormatOptions::default(),
        )
        .names
    }
}

#[pymethods]
impl NativeRegistry {
    /// `truncate_length` (None: 5000) and `max_calls` (None: 1000) are checked here, so
    /// that one out of range is a `ValueError` naming it.
    #[new]
    #[pyo3(signature = (truncate_length = None, keep_repeated_calls = false, max_calls = None))]
    fn new(
        truncate_length: Option<&Bound<'_, PyAny>>,
        keep_repeated_calls: bool,
        max_calls: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<NativeRegistry> {
        let truncate_length = truncate_length
            .map(|n| count_at_least("truncate_length", n, 1))
            .transpose()?
            .unwrap_or(5000);
        let max_calls = max_calls
            .map(|n| count_at_least("max_calls", n, 0))
            .transpose()?
            .unwrap_or(1000);
        let registry = Registry::new();
        // The model is offered the Python functions only, not `tools.*`.
        registry.unregister_control_functions();
        registry.set_truncate_length(truncate_length);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(runtime_error)?;
        Ok(NativeRegistry {
            registry: Arc::new(registry),
            runtime: Arc::new(calls::ToolRuntime::new(runtime)),
            boxes: Mutex::new(Vec::new()),
            interfaces: Mutex::new(Arc::new(Vec::new())),
            keep_repeated_calls,
            timeout: Arc::new(Mutex::new(None)),
            confirming: Arc::default(),
            max_calls,
        })
    }

    /// Offers `tools` from now on, each answered by `handlers[qualified name]`, a pair
    /// `(handler, timeout)`: the handler gives a call's `concurrent.futures.Future` and
    /// what starts it, the timeout (seconds, or None: the toolbox's) bounds it. When the
    /// registry refuses them, the tools offered before stay.
    fn set_tools(&self, tools: &Tools, handlers: &Bound<'_, PyDict>) -> PyResult<()> {
        // One box per domain, in the order the domains first appear.
        let mut groups: Vec<(String, Vec<DomainTool>)> = Vec::new();
        for interface in tools.interfaces.iter() {
            let name = interface.qualified_name();
            let entry = handlers.get_item(&name)?.ok_or_else(|| {
                PyValueError::new_err(format!("no Python function for the tool '{name}'"))
            })?;
            let (handler, timeout): (Bound<'_, PyAny>, Option<f64>) = entry.extract()?;
            let handler: Callable = Arc::new(handler.unbind());
            let tool = PyTool {
                name: name.clone(),
                handler,
                timeout: timeout.map(seconds).transpose()?,
                fallback: Arc::clone(&self.confirming),
            };
            let tool = (interface.clone(), Arc::new(tool));
            let domain = interface.domain.clone().unwrap_or_default();
            match groups.iter_mut().find(|(d, _)| *d == domain) {
                Some((_, group)) => group.push(tool),
                None => groups.push((domain, vec![tool])),
            }
        }
        let boxes = groups.into_iter().map(|(domain, group)| {
            let tool_box = group.into_iter().fold(
                FnBox::new(domain.clone()),
                |tool_box, (interface, tool)| {
                    let default_limit = Arc::clone(&self.timeout);
                    tool_box.async_function(interface, move |args, ctx| {
                        let tool = Arc::clone(&tool);
                        let limit = *default_limit.lock().unwrap_or_else(PoisonError::into_inner);
                        async move { call_tool(&tool, limit, args, ctx).await }
                    })
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
    /// repeats are kept, and at most `max_calls` of them); the turn as a dict. `cancel`
    /// ends it from another thread; `keep_repeated_calls` (None: the toolbox's) whether a
    /// repeated call runs too.
    #[pyo3(signature = (answer, cancel = None, keep_repeated_calls = None))]
    fn run(
        &self,
        py: Python<'_>,
        answer: String,
        cancel: Option<&Cancel>,
        keep_repeated_calls: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
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
        let stream = self.native_stream(false, cancel, keep_repeated_calls);
        stream.feed(py, answer)?;
        let turn = stream.finish(py)?;
        if let Ok(fields) = turn.bind(py).cast::<PyDict>() {
            fields.set_item("stopped_at", stopped_at)?;
        }
        Ok(turn)
    }

    /// A stream fed the answer as it arrives; `with_text`: `feed` gives the text around
    /// the calls too. `cancel` ends it from another thread.
    #[pyo3(signature = (with_text = false, cancel = None))]
    fn stream(&self, with_text: bool, cancel: Option<&Cancel>) -> NativeStream {
        self.native_stream(with_text, cancel, None)
    }

    /// The time limit of a call, in seconds, for tools without one of their own.
    #[getter]
    fn timeout(&self) -> Option<f64> {
        self.timeout
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map(|limit| limit.as_secs_f64())
    }

    #[setter]
    fn set_timeout(&self, limit: Option<f64>) -> PyResult<()> {
        let limit = limit.map(seconds).transpose()?;
        *self.timeout.lock().unwrap_or_else(PoisonError::into_inner) = limit;
        Ok(())
    }

    /// How many calls of one answer run at once.
    fn set_concurrency(&self, n: &Bound<'_, PyAny>) -> PyResult<()> {
        let n = count_at_least("max_concurrency", n, 1)?;
        self.registry.set_concurrency(n);
        Ok(())
    }

    /// Results longer than this many characters are cut.
    #[getter]
    fn truncate_length(&self) -> usize {
        self.registry.truncate_length()
    }

    #[setter]
    fn set_truncate_length(&self, length: &Bound<'_, PyAny>) -> PyResult<()> {
        let length = count_at_least("truncate_length", length, 1)?;
        self.registry.set_truncate_length(length);
        Ok(())
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
        let outcome = self.block_on(py, &self.confirming, async move {
            registry.confirm_outcome(&id).await
        })?;
        let outcome = outcome.map_err(|e| PyValueError::new_err(e.to_string()))?;
        let mut record = outcome_record(&outcome, &self.confirming, true);
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
                    swallowed(py, error);
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
                    parsed.map_err(|e| {
                        let text = exception_text(py, &e);
                        // The model reads what the parser said, but Ctrl-C is the caller's.
                        if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
                            swallowed(py, e);
                        }
                        text
                    })
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
                    swallowed(py, error);
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
        let options = ToolFormatOptions::default();
        let lines = entries
            .iter()
            .map(|entry| interop::tool_call_to_text(entry, &names, &options))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(lines.join("\n"))
    }

    /// The records of a turn (JSON text of a list) as OpenAI messages: an assistant
    /// message with `content` (the answer's text around its calls, None when blank) and
    /// their `tool_calls`, then one `tool` message per call. A call that did not bind is
    /// there too, under the name it was written with (no arguments: they did not bind),
    /// with its error: the model reads why it failed, as in atfunc's own result text.
    #[pyo3(signature = (records, content = None))]
    fn openai_messages(
        &self,
        py: Python<'_>,
        records: &str,
        content: Option<String>,
    ) -> PyResult<Py<PyAny>> {
        let records: Vec<Json> = serde_json::from_str(records)
            .map_err(|e| PyValueError::new_err(format!("records are not a JSON list: {e}")))?;
        let names = self.names();
        let mut calls = Vec::new();
        let mut results = Vec::new();
        for record in &records {
            let Some(name) = record.get("name").and_then(Json::as_str) else {
                // Text around the calls, or something that is no call.
                continue;
            };
            let id = record
                .get("call_id")
                .and_then(Json::as_str)
                .unwrap_or_default();
            let error = record.get("error").and_then(Json::as_str);
            match (record.get("args"), names.model_name(name)) {
                (Some(Json::Object(args)), Some(model_name)) => {
                    calls.push(interop::tool_call(id, model_name, args));
                    let result = match (error, record.get("result")) {
                        (Some(error), _) => Err(error.to_owned()),
                        (None, Some(value)) => Ok(value.clone()),
                        (None, None) => Ok(Json::Null),
                    };
                    results.push(interop::tool_message(id, &result));
                }
                _ => {
                    calls.push(interop::tool_call(id, &written_name(name), &Map::new()));
                    let error = error.unwrap_or("the call did not bind to any tool");
                    let error = match record.get("call").and_then(Json::as_str) {
                        Some(call) => format!("{error} (the call as written: {call})"),
                        None => error.to_owned(),
                    };
                    results.push(interop::tool_message(id, &Err::<Json, _>(error)));
                }
            }
        }
        let content = content.filter(|text| !text.trim().is_empty());
        let mut messages = Vec::with_capacity(results.len() + 1);
        if !calls.is_empty() {
            messages.push(json!({"role": "assistant", "content": content, "tool_calls": calls}));
        } else if let Some(content) = content {
            messages.push(json!({"role": "assistant", "content": content}));
        }
        messages.extend(results);
        json_to_py(py, &Json::Array(messages))
    }
}

/// The name of a call that did not bind as a `tool_calls` entry may carry it: OpenAI
/// allows letters, digits, `_` and `-`, at most 64 of them.
fn written_name(name: &str) -> String {
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() {
        "unreadable_call".to_owned()
    } else {
        name
    }
}

/// An answer fed as it streams: each call runs as soon as it is complete.
#[pyclass(module = "atfunc._atfunc", name = "_Stream", frozen)]
pub(crate) struct NativeStream {
    /// The registry's stream and the text parser beside it; `None` once finished (or
    /// stopped).
    state: Mutex<Option<(ResponseStream, AnswerText)>>,
    runtime: Arc<calls::ToolRuntime>,
    control: Arc<RunControl>,
    /// Whether `feed` gives the text around the calls too.
    with_text: bool,
}

impl NativeStream {
    /// The records `feed` gives: the calls' records, with the text among them when asked.
    fn records(
        &self,
        text: &mut AnswerText,
        piece: Option<&str>,
        outcomes: &[Outcome],
        stop: Option<u64>,
    ) -> Vec<Json> {
        let records = outcomes
            .iter()
            .map(|outcome| outcome_record(outcome, &self.control, false))
            .collect::<Vec<_>>();
        let starts = answer::starts(outcomes);
        let merged = match piece {
            Some(piece) => text.feed(piece, records.clone(), starts, stop),
            None => text.finish(records.clone(), starts, stop),
        };
        if self.with_text {
            merged
        } else {
            records
        }
    }
}

#[pymethods]
impl NativeStream {
    /// The next piece of the answer; the records of the calls it completed (and the text
    /// around them, `with_text`).
    fn feed(&self, py: Python<'_>, chunk: String) -> PyResult<Py<PyAny>> {
        not_nested()?;
        let runtime = &self.runtime;
        let control = &self.control;
        let records = py.detach(|| {
            let mut guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            let Some((stream, text)) = guard.as_mut() else {
                return Err(runtime_error("this stream is finished"));
            };
            match calls::drive(runtime, control, stream.feed_str(&chunk)) {
                Ok(outcomes) => {
                    let stop = stream.repeated_at().map(|span| span.start);
                    Ok(self.records(text, Some(&chunk), &outcomes, stop))
                }
                Err(error) => {
                    // Stopped halfway through a piece: nothing more can be read after it.
                    *guard = None;
                    control.close();
                    Err(error)
                }
            }
        })?;
        json_to_py(py, &Json::Array(records))
    }

    /// The end of the answer: the turn, every call of the answer in it, and in `records`
    /// every record the stream gave (with the text), those of the end last.
    fn finish(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        not_nested()?;
        let runtime = &self.runtime;
        let control = &self.control;
        let turn = py.detach(|| {
            let taken = self
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            let Some((stream, mut text)) = taken else {
                return Err(runtime_error("this stream is finished"));
            };
            let end = calls::drive(runtime, control, stream.finish());
            control.close();
            let end = end?;
            let stop = end.repeated_at.map(|span| span.start);
            self.records(&mut text, None, &end.outcomes, stop);
            Ok(turn_json(&end, text.into_records(), control))
        })?;
        json_to_py(py, &turn)
    }
}
