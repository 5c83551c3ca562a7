//! A tool that panics: the panic is caught where the call is polled and becomes
//! [`ToolError::Panicked`], so the model reads an error and the registry goes on.
//!
//! Catching a panic does not stop Rust from reporting it first: the process's panic hook
//! runs when the panic starts, before anything can catch it, and the default hook prints
//! `thread '…' panicked at …` (and a backtrace under `RUST_BACKTRACE`) to standard error,
//! once per panicking call. [`quiet_tool_panics`] keeps those of tool calls off the hook;
//! every other panic still reaches it.

use super::toolbox::{CallContext, ToolBox, ToolError};
use atfunc::messages::qualified;
use futures::FutureExt;
use serde_json::{Map, Value as Json};
use std::cell::Cell;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Once;
use std::task::{Context, Poll};

thread_local! {
    /// How many tool calls this thread is polling at this moment (more than one when a
    /// wrapper's call polls the box it wraps).
    static POLLING_TOOLS: Cell<usize> = const { Cell::new(0) };
}

/// Calls `function` on `tool_box`, turning a panic into [`ToolError::Panicked`].
pub(crate) async fn call_guarded(
    tool_box: &(dyn ToolBox + '_),
    function: &str,
    args: Map<String, Json>,
    ctx: &CallContext,
) -> Result<Json, ToolError> {
    let call = InTool(tool_box.call(function, args, ctx));
    match AssertUnwindSafe(call).catch_unwind().await {
        Ok(result) => result,
        Err(payload) => Err(ToolError::Panicked {
            name: qualified(tool_box.name(), function),
            message: panic_message(payload.as_ref()),
        }),
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "no message".to_owned()
    }
}

/// A tool call's future, polled with its thread marked as polling a tool.
struct InTool<F>(F);

impl<F: Future + Unpin> Future for InTool<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let _mark = Mark::set();
        Pin::new(&mut self.0).poll(cx)
    }
}

/// The thread's mark while a tool call is polled; dropped when the poll returns or
/// unwinds, so the count is right again after a panic.
struct Mark;

impl Mark {
    fn set() -> Mark {
        POLLING_TOOLS.with(|count| count.set(count.get() + 1));
        Mark
    }
}

impl Drop for Mark {
    fn drop(&mut self) {
        // After the thread's locals are gone there is nothing left to count.
        let _ = POLLING_TOOLS.try_with(|count| count.set(count.get().saturating_sub(1)));
    }
}

/// Keeps panics caught in tool calls off the panic hook: the default hook would print each
/// one (and a backtrace under `RUST_BACKTRACE`) to standard error although the registry
/// caught it, and the model reads it as an error result anyway. Every other panic, and
/// the panics of threads or tasks a tool starts itself, still go to the hook.
///
/// The hook is process-wide, so this wraps the hook in place when it is first called (the
/// default one, or one set before) and does nothing after; a hook set later with
/// [`std::panic::set_hook`] replaces it. Call it once, early, after setting a hook of
/// your own.
///
/// ```
/// use atfunc_tools::{quiet_tool_panics, FnBox, Registry, ToolError};
/// use atfunc::Interface;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// quiet_tool_panics();
/// let registry = Registry::new();
/// registry.register(FnBox::new("t").function(Interface::new("boom").in_domain("t"), |_, _| {
///     panic!("out of cheese")
/// })).unwrap();
/// // Nothing is printed; the model reads the error.
/// let report = registry.execute_response("@t.boom()").await;
/// assert!(matches!(&report.calls[0].result, Err(ToolError::Panicked { message, .. }) if message == "out of cheese"));
/// # });
/// ```
pub fn quiet_tool_panics() {
    static WRAPPED: Once = Once::new();
    WRAPPED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let in_tool = POLLING_TOOLS.try_with(Cell::get).unwrap_or(0) > 0;
            if !in_tool {
                previous(info);
            }
        }));
    });
}
