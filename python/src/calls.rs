//! How one call of a Python tool runs, and how a run of calls is stopped.
//!
//! The contract, step by step:
//! 1. The registry calls a Python tool as an async function. Its handler (made by
//!    `atfunc/toolbox.py`) gives back a `concurrent.futures.Future` and what starts the
//!    work: a plain function runs in a thread of its own, an async one on an event loop
//!    (the caller's under `run_async`, else the package's own). The future is held
//!    ([`Pending`]) before the work starts, so a call given up at any moment of its start
//!    is cancelled. While a call runs no thread of the registry waits on it, and the
//!    registry can run several at once ([`Registry::set_concurrency`]) and stop one at a
//!    time limit.
//! 2. The future's done-callback wakes the call ([`Done`]); its value is `(True,
//!    json_text)`, `(False, message, traceback)` (any exception the tool raised: the model
//!    reads the message, the traceback goes to the call's record, kept by the run until
//!    then, [`RunControl::traceback`]), or `(None, exception)` for `KeyboardInterrupt`
//!    and `SystemExit`, which are not the tool's answer but the program's: they stop the
//!    whole run ([`RunControl::stop_with`]) and are raised to the caller.
//! 3. A call dropped before its end (its time limit passed, or the run was stopped)
//!    cancels its future ([`Pending`]): an async tool gets `CancelledError` at its next
//!    `await`, one not begun does not begin. A plain function cannot be stopped from
//!    outside its thread: it runs on, and what it returns is dropped.
//! 4. [`drive`] drives a run on the caller's thread and, every [`SIGNAL_POLL`] and at
//!    its end, lets Python handle its signals (Ctrl-C is `KeyboardInterrupt`), so a run
//!    waiting on a hung tool can still be interrupted. Python code of the run (a call's
//!    start, hooks) runs on that thread too, and Ctrl-C may land inside it: where it
//!    would be swallowed (a hook's exception is only reported) it is raised again
//!    ([`swallowed`]), so it reaches the caller wherever it lands.
//!
//! [`Registry::set_concurrency`]: atfunc_tools::Registry::set_concurrency

use crate::convert::json_to_py;
use atfunc_tools::{Args, CallContext, ToolError};
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PySystemExit};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use serde_json::Value as Json;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{oneshot, Notify};

/// How often a run that waits lets Python look at its signals. Ctrl-C is handled within
/// this long; a shorter period costs a GIL round trip each time.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// A Python callable kept for calls made on any thread.
pub(crate) type Callable = Arc<Py<PyAny>>;

/// The text of a Python exception as the model reads it: `TypeName: message` (the name
/// alone when the message is empty; when its `str` raises, the name and what it raised).
pub(crate) fn exception_text(py: Python<'_>, error: &PyErr) -> String {
    let type_name = |error: &PyErr| {
        error
            .get_type(py)
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "Exception".to_owned())
    };
    let name = type_name(error);
    let message = match error.value(py).str() {
        Ok(message) => message.to_string(),
        Err(unreadable) => {
            let text = format!(
                "(its message could not be read: str() raised {})",
                type_name(&unreadable)
            );
            if unreadable.is_instance_of::<PyKeyboardInterrupt>(py) {
                swallowed(py, unreadable);
            }
            text
        }
    };
    if message.is_empty() {
        name
    } else {
        format!("{name}: {message}")
    }
}

/// Disposes of an exception that Python code of a run raised where nobody can raise it
/// (a hook, a call's cancellation): it is reported as unraisable, but a
/// `KeyboardInterrupt`, Ctrl-C landing while that code ran on the caller's thread, is
/// raised again at the run's next look at its signals ([`drive`]), so it is never lost.
pub(crate) fn swallowed(py: Python<'_>, error: PyErr) {
    if !error.is_instance_of::<PyKeyboardInterrupt>(py) {
        error.write_unraisable(py, None);
        return;
    }
    // `_thread.interrupt_main` is Ctrl-C again: the next check of the signals raises it.
    let again = py
        .import("_thread")
        .and_then(|thread| thread.call_method0("interrupt_main"));
    if let Err(error) = again {
        error.write_unraisable(py, None);
    }
}

/// Whether `error` is the program's to handle rather than the model's to read.
fn stops_the_program(py: Python<'_>, error: &PyErr) -> bool {
    error.is_instance_of::<PyKeyboardInterrupt>(py) || error.is_instance_of::<PySystemExit>(py)
}

/// One run of an answer (or of a held call), shared by its calls through the
/// [`CallContext`]: what stops it, and the wake-up of [`drive`] when it is stopped.
#[derive(Default)]
pub(crate) struct RunControl {
    /// The exception that ends the run, raised to the caller (taken once).
    stop: Mutex<Option<PyErr>>,
    /// Set when the caller gave up on the run (`run_async` cancelled).
    cancelled: AtomicBool,
    /// Set when the run is over: a call it held for confirmation, run later by
    /// `confirm`, reports to the registry's control instead.
    closed: AtomicBool,
    wake: Notify,
    /// The traceback of each call of the run whose tool raised, by call id (unique in a
    /// registry), for its record: the model reads only the message.
    tracebacks: Mutex<HashMap<String, String>>,
}

impl RunControl {
    /// Ends the run with `error`, raised to the caller; the first one wins.
    pub(crate) fn stop_with(&self, error: PyErr) {
        let mut stop = self.stop.lock().unwrap_or_else(PoisonError::into_inner);
        if stop.is_none() {
            *stop = Some(error);
        }
        drop(stop);
        self.wake.notify_one();
    }

    /// The traceback of the failed call `call_id`, for its record; `take` removes it (a
    /// control that outlives its runs, `confirm`'s, keeps none it has handed over).
    pub(crate) fn traceback(&self, call_id: &str, take: bool) -> Option<String> {
        let mut kept = self
            .tracebacks
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if take {
            kept.remove(call_id)
        } else {
            kept.get(call_id).cloned()
        }
    }

    /// The run is over: nobody drives it any more.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

    /// The caller gave up: calls under way are cancelled and the run ends.
    pub(crate) fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }

    /// Whether the run is ending: a call not yet started must not start.
    fn ending(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
            || self
                .stop
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_some()
    }

    /// Why the run must end now, if it must.
    fn reason(&self) -> Option<PyErr> {
        if let Some(error) = self
            .stop
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            return Some(error);
        }
        self.cancelled
            .load(Ordering::SeqCst)
            .then(|| PyRuntimeError::new_err("the run was cancelled"))
    }
}

/// A cancel handle for one run, given to `_Registry.run` and the stream by
/// `run_async`: `cancel()` from any thread ends the run and cancels its calls.
#[pyclass(module = "atfunc._atfunc", name = "_Cancel", frozen)]
#[derive(Default)]
pub(crate) struct Cancel {
    pub(crate) control: Arc<RunControl>,
}

#[pymethods]
impl Cancel {
    #[new]
    fn new() -> Cancel {
        Cancel::default()
    }

    /// Ends the run: calls under way are cancelled, the run raises.
    fn cancel(&self) {
        self.control.cancel();
    }
}

/// A toolbox's runtime, which may be dropped anywhere. The last handle of a toolbox can
/// go when Python collects it, and that may happen inside another toolbox's run, where
/// dropping a runtime the ordinary way (waiting for its tasks) panics: it is shut down in
/// the background instead. It runs no task of its own that could be cut short.
pub(crate) struct ToolRuntime(Option<tokio::runtime::Runtime>);

impl ToolRuntime {
    pub(crate) fn new(runtime: tokio::runtime::Runtime) -> ToolRuntime {
        ToolRuntime(Some(runtime))
    }
}

impl std::ops::Deref for ToolRuntime {
    type Target = tokio::runtime::Runtime;

    fn deref(&self) -> &tokio::runtime::Runtime {
        // Taken only by `drop`.
        self.0
            .as_ref()
            .expect("the runtime is there until the toolbox is dropped")
    }
}

impl Drop for ToolRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// Runs `work` to its end on `runtime`, unless `control` stops the run or a signal
/// handler raises (Ctrl-C): then `work` is dropped, which cancels the calls under way,
/// and the exception is returned. A signal that arrives by the end raises too, even
/// when `work` is done: the caller asked to stop. Called with the GIL released.
pub(crate) fn drive<T>(
    runtime: &tokio::runtime::Runtime,
    control: &RunControl,
    work: impl Future<Output = T>,
) -> PyResult<T> {
    runtime.block_on(async {
        let mut work = std::pin::pin!(work);
        loop {
            tokio::select! {
                biased;
                _ = control.wake.notified() => {}
                done = &mut work => {
                    // A call that stopped the program ended its own run: that comes first.
                    return match control.reason() {
                        Some(error) => Err(error),
                        None => Python::attach(|py| py.check_signals()).map(|()| done),
                    };
                }
                _ = tokio::time::sleep(SIGNAL_POLL) => {}
            }
            if let Some(error) = control.reason() {
                return Err(error);
            }
            Python::attach(|py| py.check_signals())?;
        }
    })
}

/// A Python tool as the registry holds it: its handler and its own time limit.
pub(crate) struct PyTool {
    pub(crate) name: String,
    pub(crate) handler: Callable,
    /// The tool's limit; `None`: the toolbox's.
    pub(crate) timeout: Option<Duration>,
    /// The control of runs that have none of their own any more (`confirm` of a held
    /// call): what stops one is raised by the next `confirm`.
    pub(crate) fallback: Arc<RunControl>,
}

/// The done-callback of a call's future: wakes the call waiting on it.
#[pyclass(module = "atfunc._atfunc", name = "_Done", frozen)]
struct Done(Mutex<Option<oneshot::Sender<()>>>);

#[pymethods]
impl Done {
    fn __call__(&self, _future: &Bound<'_, PyAny>) {
        let sender = self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(sender) = sender {
            // The call may have been dropped meanwhile: nobody waits any more.
            let _ = sender.send(());
        }
    }
}

/// A call's future until it is done; dropped earlier, it cancels the future.
struct Pending {
    future: Option<Py<PyAny>>,
}

impl Pending {
    /// The future, done: it is not cancelled any more.
    fn done(mut self) -> Option<Py<PyAny>> {
        self.future.take()
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(future) = self.future.take() {
            Python::attach(|py| {
                if let Err(error) = future.call_method0(py, "cancel") {
                    swallowed(py, error);
                }
            });
        }
    }
}

/// Runs one call of `tool` with the bound `args`, within `limit` (the tool's own, else
/// the toolbox's `default_limit`).
pub(crate) async fn call_tool(
    tool: &PyTool,
    default_limit: Option<Duration>,
    args: Args,
    ctx: CallContext,
) -> Result<Json, ToolError> {
    let control = ctx
        .get::<Arc<RunControl>>()
        .filter(|control| !control.closed.load(Ordering::SeqCst))
        .cloned()
        .unwrap_or_else(|| Arc::clone(&tool.fallback));
    let control = Some(control);
    let call_id = ctx.call_id.clone();
    if control.as_deref().is_some_and(RunControl::ending) {
        return Err(ToolError::msg("not run: the run was stopped"));
    }
    let (sender, receiver) = oneshot::channel();
    // The handler gives the call's future and what starts it; the future is held before
    // anything starts, so that an exception at any step (Ctrl-C lands on this thread)
    // drops `pending`, which cancels it: a call not begun does not begin.
    let prepared = Python::attach(|py| -> PyResult<(Py<PyAny>, Py<PyAny>)> {
        // Ctrl-C that landed in a hook of this call (and was raised again) stops the run
        // before the call starts.
        py.check_signals()?;
        let args = json_to_py(py, &Json::Object(args.into_map()))?;
        tool.handler.call1(py, (args,))?.extract(py)
    });
    let (future, start) = match prepared {
        Ok(prepared) => prepared,
        Err(error) => return Err(failed(error, control.as_deref())),
    };
    let pending = Pending {
        future: Some(future),
    };
    let started = Python::attach(|py| -> PyResult<()> {
        let done = Py::new(py, Done(Mutex::new(Some(sender))))?;
        if let Some(future) = &pending.future {
            future.call_method1(py, "add_done_callback", (done,))?;
        }
        if !start.is_none(py) {
            start.call0(py)?;
        }
        Ok(())
    });
    if let Err(error) = started {
        return Err(failed(error, control.as_deref()));
    }
    let limit = tool.timeout.or(default_limit);
    let woken = match limit {
        Some(limit) => match tokio::time::timeout(limit, receiver).await {
            Ok(woken) => woken,
            // `pending` is dropped on the way out: the call is cancelled.
            Err(_) => {
                return Err(ToolError::Timeout {
                    name: tool.name.clone(),
                    limit,
                })
            }
        },
        None => receiver.await,
    };
    let future = pending.done();
    if woken.is_err() {
        return Err(ToolError::msg("the call ended without an answer"));
    }
    let Some(future) = future else {
        return Err(ToolError::msg("the call ended without an answer"));
    };
    Python::attach(|py| {
        let answer = future
            .call_method0(py, "result")
            .map_err(|error| failed(error, control.as_deref()))?;
        let answer = answer
            .bind(py)
            .cast::<PyTuple>()
            .map_err(|error| ToolError::msg(exception_text(py, &error.into())))?;
        let ok: Option<bool> = answer
            .get_item(0)
            .and_then(|ok| ok.extract())
            .map_err(|error| ToolError::msg(exception_text(py, &error)))?;
        let payload = answer
            .get_item(1)
            .map_err(|error| ToolError::msg(exception_text(py, &error)))?;
        match ok {
            Some(true) => {
                let text: String = payload
                    .extract()
                    .map_err(|error| ToolError::msg(exception_text(py, &error)))?;
                serde_json::from_str(&text)
                    .map_err(|e| ToolError::msg(format!("the tool's result is not JSON: {e}")))
            }
            Some(false) => {
                let traceback = answer.get_item(2).and_then(|t| t.extract::<String>());
                if let (Ok(traceback), Some(control)) = (traceback, &control) {
                    control
                        .tracebacks
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(call_id.clone(), traceback);
                }
                Err(ToolError::msg(
                    payload.extract::<String>().unwrap_or_default(),
                ))
            }
            None => Err(failed(PyErr::from_value(payload), control.as_deref())),
        }
    })
}

/// The tool error for an exception a call raised; `KeyboardInterrupt` and `SystemExit`
/// also stop the run, to be raised to the caller.
fn failed(error: PyErr, control: Option<&RunControl>) -> ToolError {
    Python::attach(|py| {
        let text = exception_text(py, &error);
        if stops_the_program(py, &error) {
            if let Some(control) = control {
                control.stop_with(error);
            }
        }
        ToolError::msg(text)
    })
}
