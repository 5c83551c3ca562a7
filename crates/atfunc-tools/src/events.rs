//! Observation of every call: a `start` event when a call begins, then `success` or
//! `error` when it ends, for calls that run and for calls refused before they run (an
//! unknown function, arguments that do not bind, an unreadable call). A call held for the
//! user's confirmation ends its first part with `held`; confirmed later, it has a `start`
//! and a `success` or `error` of its own, under the same `call_id`. A call whose future is
//! dropped while it runs (a client that went away, a stream dropped midway) ends with
//! `cancelled`: every `start` gets exactly one end, so a hook that opens a span on `start`
//! closes it.

use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// What happened to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CallEventKind {
    /// The call is about to run, or about to be refused.
    Start,
    /// The tool returned a value.
    Success,
    /// The call was refused or the tool failed; `error` says why.
    Error,
    /// The call was not run: it waits for the user's confirmation under
    /// `confirmation_id` (see [`Registry::confirm`](super::Registry::confirm)).
    Held,
    /// The call was dropped before it ended (its stream or future was dropped while the
    /// tool ran): what the tool did is unknown.
    Cancelled,
}

/// One event of a call, as [`Registry::on_event`](super::Registry::on_event) hooks and
/// `atfunc exec --events` (one JSON object a line) see it. Fields that are `None` are left
/// out of its JSON:
///
/// ```json
/// {"event":"error","call_id":"call_1","name":"wether.get","duration_ms":0,"error":"Unknown function 'wether.get'"}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CallEvent {
    /// `start`, `success`, `error`, `held` or `cancelled`.
    pub event: CallEventKind,
    /// The call's id, the same in its `start` and its end.
    pub call_id: String,
    /// The name as the model wrote it (`Weather.Get_Temp`).
    pub name: String,
    /// The function it resolved to, as defined (`weather.get_temp`); absent for a call
    /// refused before it was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// Milliseconds from `start`, on `success`, `error`, `held` and `cancelled`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Why the call failed, on `error`: the text the model is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The id the call waits under, on `held`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation_id: Option<String>,
}

/// A hook that sees every call event; see [`Registry::on_event`](super::Registry::on_event).
pub(crate) type CallEventHook = Arc<dyn Fn(&CallEvent) + Send + Sync>;

/// Emits the events of one call to a hook, if there is one. Dropped before the call's end
/// was emitted, it emits `cancelled`.
pub(super) struct CallWatch {
    hook: Option<CallEventHook>,
    call_id: String,
    name: String,
    function: Option<String>,
    started: Instant,
    /// Whether the call's end (`success`, `error`, `held`) was emitted.
    ended: AtomicBool,
}

impl CallWatch {
    /// Emits `start`.
    pub(super) fn start(
        hook: Option<CallEventHook>,
        call_id: &str,
        name: &str,
        function: Option<&str>,
    ) -> CallWatch {
        let watch = CallWatch {
            hook,
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            function: function.map(str::to_owned),
            started: Instant::now(),
            ended: AtomicBool::new(false),
        };
        watch.emit(CallEventKind::Start, None, None, None);
        watch
    }

    /// Watches the rest of a call that started earlier (a held call confirmed or dropped)
    /// without a second `start`.
    pub(super) fn resume(
        hook: Option<CallEventHook>,
        call_id: &str,
        name: &str,
        function: &str,
    ) -> CallWatch {
        CallWatch {
            hook,
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            function: Some(function.to_owned()),
            started: Instant::now(),
            ended: AtomicBool::new(false),
        }
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Emits `success`, or `error` with `error`'s text.
    pub(super) fn end<T, E: EventText>(&self, result: &Result<T, E>) {
        if self.ended.swap(true, Ordering::Relaxed) {
            return;
        }
        let ms = self.elapsed_ms();
        match result {
            Ok(_) => self.emit(CallEventKind::Success, Some(ms), None, None),
            Err(error) => self.emit(
                CallEventKind::Error,
                Some(ms),
                Some(error.event_text()),
                None,
            ),
        }
    }

    /// Emits `held`: the call waits under `confirmation_id`.
    pub(super) fn held(&self, confirmation_id: &str) {
        if self.ended.swap(true, Ordering::Relaxed) {
            return;
        }
        let ms = self.elapsed_ms();
        let id = Some(confirmation_id.to_owned());
        self.emit(CallEventKind::Held, Some(ms), None, id);
    }

    fn emit(
        &self,
        event: CallEventKind,
        duration_ms: Option<u64>,
        error: Option<String>,
        confirmation_id: Option<String>,
    ) {
        let Some(hook) = &self.hook else {
            return;
        };
        hook(&CallEvent {
            event,
            call_id: self.call_id.clone(),
            name: self.name.clone(),
            function: self.function.clone(),
            duration_ms,
            error,
            confirmation_id,
        });
    }
}

impl Drop for CallWatch {
    fn drop(&mut self) {
        if !*self.ended.get_mut() {
            let ms = self.elapsed_ms();
            self.emit(CallEventKind::Cancelled, Some(ms), None, None);
        }
    }
}

/// An error as an `error` event gives it: the text the model is given.
pub(super) trait EventText {
    fn event_text(&self) -> String;
}

impl EventText for crate::ToolError {
    fn event_text(&self) -> String {
        self.model_message()
    }
}

impl EventText for crate::confirm::ConfirmError {
    fn event_text(&self) -> String {
        self.to_string()
    }
}

impl<E: EventText + ?Sized> EventText for &E {
    fn event_text(&self) -> String {
        (**self).event_text()
    }
}

/// One hook that calls `first`, then `second`.
pub(super) fn both(
    first: Option<CallEventHook>,
    second: Option<CallEventHook>,
) -> Option<CallEventHook> {
    match (first, second) {
        (Some(first), Some(second)) => Some(Arc::new(move |event: &CallEvent| {
            first(event);
            second(event);
        })),
        (first, second) => first.or(second),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_s_json_leaves_out_what_it_lacks() {
        let event = CallEvent {
            event: CallEventKind::Error,
            call_id: "call_1".into(),
            name: "wether.get".into(),
            function: None,
            duration_ms: Some(0),
            error: Some("Unknown function 'wether.get'".into()),
            confirmation_id: None,
        };
        assert_eq!(
            serde_json::to_string(&event).unwrap_or_default(),
            r#"{"event":"error","call_id":"call_1","name":"wether.get","duration_ms":0,"error":"Unknown function 'wether.get'"}"#,
        );
    }
}
