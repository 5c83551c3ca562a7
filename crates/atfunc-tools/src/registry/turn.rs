//! One answer's turn: its calls resolved to their boxes, run (or held for confirmation),
//! and turned into outcomes.
//!
//! A turn holds no registry. It runs against a [`Snapshot`], the registry as the answer
//! found it when it started, and writes to a [`Ledger`], what the registry and all its
//! answers share while calls run (the statistics, the call ids, the held calls). A stream
//! keeps both, so it lives as long as its caller wants, apart from the registry.
//!
//! For each call of the answer, in order:
//!
//! 1. [`job`]: a parsed call is bound against the snapshot's catalog; a call that does not
//!    bind, or text that could not be read as a call, is refused.
//! 2. [`Turn::run_job`]: a refused call is counted and gets its error; a bound one that
//!    needs confirmation goes to the confirmer and runs, is declined or is held; any other
//!    runs in its box (or is answered by a control function) within the time limit, a
//!    panic caught.
//! 3. Its result becomes an [`Outcome`] with its block ([`BlockFormat`]).

use super::control::{self, ControlFunction, CONTROL_DOMAIN};
use super::outcome::{BlockFormat, Finished, Outcome};
use super::stats::Tally;
use super::view::{Conversation, View};
use crate::confirm::{self, ConfirmError, Confirmer, Decision, Held, HeldCall, HeldCalls};
use crate::events::{CallEventHook, CallWatch};
use crate::panics::call_guarded;
use crate::toolbox::{CallContext, ToolBox, ToolError};
use atfunc::bind::{bind, BoundCall};
use atfunc::format::call_text;
use atfunc::parse::{Call, Event, ParseError, Span};
use serde_json::{Map, Value as Json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Duration;

/// What a registry can call: a function of a box, or one of its own control functions.
#[derive(Clone)]
pub(super) enum Target {
    /// The box, and the function as the box names it.
    Box(Arc<dyn ToolBox>, String),
    Control(ControlFunction),
}

/// The registry as one answer sees it: the functions offered and where each leads, and
/// how calls run. Taken once per answer so every call of it binds against the same set.
pub(super) struct Snapshot {
    pub(super) view: View,
    /// Parallel to the view's catalog.
    pub(super) targets: Vec<Target>,
    /// Parallel to `targets`: whether a call needs the user's confirmation.
    pub(super) confirm: Vec<bool>,
    pub(super) confirmer: Option<Arc<dyn Confirmer>>,
    pub(super) format: BlockFormat,
    /// How many calls of one answer run at once.
    pub(super) concurrency: usize,
    pub(super) timeout: Option<Duration>,
}

/// What the registry and every answer run from it share and change while calls run.
#[derive(Default)]
pub(super) struct Ledger {
    pub(super) stats: Tally,
    /// The number of the next `call_N` id.
    next_id: AtomicU64,
    /// Calls waiting for the user's confirmation.
    held: Mutex<HeldCalls>,
    /// The registry's event hook ([`Registry::on_event`](super::Registry::on_event)).
    events: RwLock<Option<CallEventHook>>,
}

impl Ledger {
    pub(super) fn next_call_id(&self) -> String {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        format!("call_{n}")
    }

    pub(super) fn event_hook(&self) -> Option<CallEventHook> {
        self.events
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(super) fn set_event_hook(&self, hook: Option<CallEventHook>) {
        *self.events.write().unwrap_or_else(PoisonError::into_inner) = hook;
    }

    pub(super) fn held(&self) -> MutexGuard<'_, HeldCalls> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Each expired call's end, as an `error` event.
    pub(super) fn expired_events(&self, expired: Vec<Held>) {
        let hook = self.event_hook();
        if hook.is_none() || expired.is_empty() {
            return;
        }
        let after = self.held().limits.expire_after;
        for held in expired {
            let call = held.call;
            let watch = CallWatch::resume(hook.clone(), &call.call_id, &call.name, &call.function);
            watch.end::<(), _>(&Err(ConfirmError::Expired {
                id: call.confirmation_id,
                function: call.function.clone(),
                after,
            }));
        }
    }
}

/// One call-shaped span of an answer, ready to run or already refused.
pub(super) enum Job {
    Bound {
        call: Call,
        bound: BoundCall,
    },
    Refused {
        name: String,
        /// The function the name resolved to, as defined, when it did.
        function: Option<String>,
        call: Option<Call>,
        shown: String,
        error: ToolError,
        span: Span,
    },
}

impl Job {
    /// Where the call stands in the answer.
    pub(super) fn span(&self) -> Span {
        match self {
            Job::Bound { bound, .. } => bound.span,
            Job::Refused { span, .. } => *span,
        }
    }

    /// The job refused because the request made `limit` calls already: it does not run,
    /// and the model and the client read why.
    pub(super) fn past_limit(self, limit: usize) -> Job {
        match self {
            Job::Bound { call, bound } => Job::Refused {
                error: ToolError::CallLimit {
                    name: bound.name.clone(),
                    limit,
                },
                name: call.name.clone(),
                function: Some(bound.name),
                shown: call_text(&call),
                span: bound.span,
                call: Some(call),
            },
            Job::Refused {
                name,
                function,
                call,
                shown,
                span,
                ..
            } => Job::Refused {
                error: ToolError::CallLimit {
                    name: name.clone(),
                    limit,
                },
                name,
                function,
                call,
                shown,
                span,
            },
        }
    }
}

/// What an event of the parser asks to run: a call, bound or refused; nothing for text.
pub(super) fn job(snapshot: &Snapshot, event: Event) -> Option<Job> {
    let catalog = snapshot.view.catalog();
    match event {
        Event::Call(call) => Some(match bind(&call, catalog) {
            Ok(bound) => Job::Bound { call, bound },
            Err(error) => Job::Refused {
                name: call.name.clone(),
                function: catalog
                    .find(&call.name)
                    .ok()
                    .map(|(_, interface)| interface.original_qualified_name()),
                shown: call_text(&call),
                error: ToolError::from(error),
                span: call.span,
                call: Some(call),
            },
        }),
        Event::Malformed { span, error, text } => Some(malformed_job(span, &error, &text)),
        _ => None,
    }
}

fn malformed_job(span: Span, error: &ParseError, text: &str) -> Job {
    let written = text.strip_prefix('@').unwrap_or(text);
    let name = written
        .split('(')
        .next()
        .unwrap_or(written)
        .trim()
        .to_owned();
    Job::Refused {
        name,
        function: None,
        call: None,
        shown: written.to_owned(),
        error: ToolError::Unreadable(error.clone()),
        span,
    }
}

/// The calls of one answer (or one direct call) being run: the registry as they found it,
/// and what they share with it.
pub(super) struct Turn {
    pub(super) snapshot: Snapshot,
    pub(super) ledger: Arc<Ledger>,
}

impl Turn {
    /// Runs one job of an answer in `conversation`, under `call_id`, and gives its outcome.
    pub(super) async fn run_job(
        &self,
        conversation: &Conversation,
        ctx: &CallContext,
        call_id: String,
        job: Job,
        hook: Option<CallEventHook>,
    ) -> Outcome {
        // The limit in force when the call starts: a call that changes it affects the
        // calls after it, not its own result.
        let limit = conversation.truncate_length();
        match job {
            Job::Bound { call, bound } => {
                let call_ctx = ctx.for_call(call_id.clone(), bound.body.clone());
                let watch = CallWatch::start(hook, &call_id, &call.name, Some(&bound.name));
                let (result, held) = self
                    .run_confirmed(&call, &bound, &call_ctx, Some(conversation), &watch, limit)
                    .await;
                let finished = Finished {
                    call_id,
                    name: bound.name,
                    call_text: call_text(&call),
                    call: Some(call),
                    args: Some(bound.args),
                    result,
                    span: bound.span,
                };
                let mut outcome = self.snapshot.format.outcome(finished, limit);
                outcome.elements = call_ctx.take_elements();
                outcome.confirmation_id = held;
                outcome
            }
            Job::Refused {
                name,
                function,
                call,
                shown,
                error,
                span,
            } => {
                self.ledger.stats.refusal();
                let watch = CallWatch::start(hook, &call_id, &name, function.as_deref());
                watch.end::<(), _>(&Err(&error));
                let finished = Finished {
                    call_id,
                    name,
                    call,
                    call_text: shown,
                    args: None,
                    result: Err(error),
                    span,
                };
                self.snapshot.format.outcome(finished, limit)
            }
        }
    }

    /// Runs a bound call. A panic, a timeout or an error becomes an error result.
    /// `conversation` is the answer's, for the control functions; a direct call has none.
    pub(super) async fn dispatch(
        &self,
        bound: &BoundCall,
        ctx: &CallContext,
        conversation: Option<&Conversation>,
    ) -> Result<Json, ToolError> {
        let snapshot = &self.snapshot;
        let Some(target) = snapshot.targets.get(bound.index) else {
            self.ledger.stats.refusal();
            return Err(ToolError::unknown(bound.name.clone()));
        };
        let (toolbox, result) = match target {
            Target::Box(tool_box, function) => {
                let args = bound.args.clone();
                let result =
                    run_in_box(tool_box, function, &bound.name, args, ctx, snapshot.timeout).await;
                (tool_box.name(), result)
            }
            Target::Control(function) => (
                CONTROL_DOMAIN,
                control::run(&snapshot.view, conversation, *function, &bound.args),
            ),
        };
        // Arguments the box could not take (a typed tool's that do not deserialise) are the
        // model's mistake, counted as the binder's refusals are, not as the tool's failure.
        match &result {
            Err(error) if error.is_refusal() => self.ledger.stats.refusal(),
            _ => self
                .ledger
                .stats
                .call(toolbox, bound.name.clone(), result.is_err()),
        }
        result
    }

    /// Runs a bound call that may need the user's confirmation: asks the confirmer, then
    /// runs it, declines it or holds it. Gives the result and, for a held call, the id it
    /// waits under; `watch` gets the call's end (`held` for a held call). `limit` is the
    /// truncate length of the answer, which a held call keeps for its outcome when
    /// confirmed.
    pub(super) async fn run_confirmed(
        &self,
        call: &Call,
        bound: &BoundCall,
        ctx: &CallContext,
        conversation: Option<&Conversation>,
        watch: &CallWatch,
        limit: usize,
    ) -> (Result<Json, ToolError>, Option<String>) {
        let snapshot = &self.snapshot;
        let needs = snapshot.confirm.get(bound.index).copied().unwrap_or(false);
        let Some(Target::Box(tool_box, function)) =
            snapshot.targets.get(bound.index).filter(|_| needs)
        else {
            let result = self.dispatch(bound, ctx, conversation).await;
            watch.end(&result);
            return (result, None);
        };
        let held_call = HeldCall {
            confirmation_id: confirm::new_id(),
            call_id: ctx.call_id.clone(),
            name: call.name.clone(),
            function: bound.name.clone(),
            args: bound.args.clone(),
            body: bound.body.clone(),
            call_text: call_text(call),
        };
        let decision = match &snapshot.confirmer {
            Some(confirmer) => confirmer.decide(&held_call).await,
            None => Decision::Hold,
        };
        let result = match decision {
            Decision::Run => {
                let result = self.dispatch(bound, ctx, conversation).await;
                watch.end(&result);
                return (result, None);
            }
            Decision::Decline => Err(ToolError::Declined {
                name: bound.name.clone(),
            }),
            Decision::Hold => {
                let held = Held {
                    call: held_call,
                    parsed: call.clone(),
                    limit,
                    tool_box: Arc::clone(tool_box),
                    box_function: function.clone(),
                    ctx: ctx.clone(),
                    timeout: snapshot.timeout,
                };
                let (stored, max_held) = {
                    let mut store = self.ledger.held();
                    let expired = store.expire();
                    let stored = store.insert(held);
                    let max_held = store.limits.max_held;
                    drop(store);
                    self.ledger.expired_events(expired);
                    (stored, max_held)
                };
                match stored {
                    Ok(id) => {
                        self.ledger
                            .stats
                            .call(tool_box.name(), bound.name.clone(), false);
                        watch.held(&id);
                        let held = ToolError::Held {
                            name: bound.name.clone(),
                            confirmation_id: id.clone(),
                        };
                        return (Err(held), Some(id));
                    }
                    Err(function) => Err(ToolError::HoldLimit {
                        name: function,
                        limit: max_held,
                    }),
                }
            }
        };
        self.ledger
            .stats
            .call(tool_box.name(), bound.name.clone(), true);
        watch.end(&result);
        (result, None)
    }
}

/// Runs `function` of `tool_box` within `timeout`; a panic, a timeout or an error becomes
/// an error result. Dropped before the call ends, it cancels the call's token; with
/// [`CallContext::finish_started_calls`] the call runs on to its end on a task of its own.
pub(super) async fn run_in_box(
    tool_box: &Arc<dyn ToolBox>,
    function: &str,
    name: &str,
    args: Map<String, Json>,
    ctx: &CallContext,
    timeout: Option<Duration>,
) -> Result<Json, ToolError> {
    // Cancels the call's token if this future is dropped before the call ends; disarmed
    // once it has.
    let dropped = ctx.cancellation().clone().drop_guard();
    let result = if ctx.finishes_started_calls() {
        let (tool_box, function) = (Arc::clone(tool_box), function.to_owned());
        let (owned_name, ctx) = (name.to_owned(), ctx.clone());
        let task = tokio::spawn(async move {
            within(&tool_box, &function, &owned_name, args, &ctx, timeout).await
        });
        match task.await {
            Ok(result) => result,
            // The call's panic is caught inside the task; this is the runtime shutting down.
            Err(error) => Err(ToolError::Panicked {
                name: name.to_owned(),
                message: error.to_string(),
            }),
        }
    } else {
        within(tool_box, function, name, args, ctx, timeout).await
    };
    dropped.disarm();
    result
}

/// The call of [`run_in_box`], within its time limit.
async fn within(
    tool_box: &Arc<dyn ToolBox>,
    function: &str,
    name: &str,
    args: Map<String, Json>,
    ctx: &CallContext,
    timeout: Option<Duration>,
) -> Result<Json, ToolError> {
    let running = call_guarded(tool_box.as_ref(), function, args, ctx);
    match timeout {
        Some(limit) => tokio::time::timeout(limit, running)
            .await
            .unwrap_or_else(|_| {
                Err(ToolError::Timeout {
                    name: name.to_owned(),
                    limit,
                })
            }),
        None => running.await,
    }
}
