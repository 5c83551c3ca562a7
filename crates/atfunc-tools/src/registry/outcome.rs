//! A call's outcome: its result as the host reads it ([`Outcome`]) and as the model reads
//! it (the result block), and the report of a whole answer ([`ExecutionReport`]).
//!
//! Every call that ends (runs, fails, is refused or is held) becomes an outcome the same
//! way: the output filters see its result, the result is cut at the truncate length in
//! force (an error never below [`ERROR_TEXT_FLOOR`] characters), and
//! [`format_results`](atfunc::format::format_results) writes the block.

use super::view::Settings;
use crate::confirm::held_result;
use crate::toolbox::ToolError;
use atfunc::format::{self, apply_filters, result_text, truncate_text, CallRecord, OutputFilter};
use atfunc::parse::{Call, Span};
use serde_json::{Map, Value as Json};
use std::borrow::Cow;

/// The fewest characters of an error message a result block keeps, whatever the truncate
/// length: an error cut short cannot tell the model how to fix its call.
pub const ERROR_TEXT_FLOOR: usize = 1000;

/// The longest call text shown in a result block, in characters: a call with a huge
/// argument is not echoed back whole.
const CALL_TEXT_LIMIT: usize = 500;

/// One call of a model's answer, executed (or refused, or held), with its result block.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Outcome {
    /// The call's id (`call_1`, ...), as hooks and recordings saw it.
    pub call_id: String,
    /// Where the call stands among the calls of its answer, from 0, refused ones counted:
    /// outcomes given in the order calls finish
    /// ([`ResponseStream::in_completion_order`](super::ResponseStream::in_completion_order))
    /// are put back in order by it. 0 for a call outside an answer (a direct call, a held
    /// call confirmed).
    pub index: usize,
    /// The qualified name as the interface spells it when the call bound; else the name
    /// as written.
    pub name: String,
    /// The call as parsed; `None` for text that looked like a call but could not be read.
    pub call: Option<Call>,
    /// The bound arguments; `None` when the call did not bind.
    pub args: Option<Map<String, Json>>,
    /// What the call returned (after the output filters, before truncation), or why it
    /// has no value: the same [`ToolError`] that [`Registry::call`](super::Registry::call)
    /// returns (a call that does not bind is [`ToolError::Bind`], text that cannot be read
    /// [`ToolError::Unreadable`]). A call held for confirmation did not run, so it has no
    /// value either: its result is [`ToolError::Held`], and the model reads
    /// [`held_result`](crate::held_result) in its block (see [`Outcome::state`]).
    pub result: Result<Json, ToolError>,
    /// What the result block shows: the call text and the truncated result.
    pub record: CallRecord,
    /// The result block, as [`format_results`](atfunc::format::format_results) writes it.
    pub block: String,
    /// Where the call stands in the model's answer.
    pub span: Span,
    /// The truncate length in force when the call ran.
    pub truncate_length: usize,
    /// What the call showed the client beside its result, which the block leaves out (see
    /// [`CallContext::add_element`](crate::CallContext::add_element)); empty for
    /// most calls.
    pub elements: Vec<Json>,
    /// The id the call waits under when it was held for the user's confirmation instead
    /// of running; `None` for every other call.
    pub confirmation_id: Option<String>,
}

/// Where a call stands once its outcome is given: see [`Outcome::state`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutcomeState<'a> {
    /// The call ran and its tool returned a value (the only state with an `Ok` result).
    Returned,
    /// The call was refused (an unknown function, arguments that do not bind, an
    /// unreadable call, a declined call) or its tool failed.
    Failed,
    /// The call did not run: it waits for the user's confirmation under this id (see
    /// [`Registry::confirm_outcome`](super::Registry::confirm_outcome)). The model reads
    /// only that it waits.
    Held {
        /// The id to confirm or reject it by.
        confirmation_id: &'a str,
    },
}

impl Outcome {
    /// Whether the call has no value: it failed, was refused, or is held for the user's
    /// confirmation and did not run. [`Outcome::state`] tells the three apart; only
    /// [`OutcomeState::Returned`] is a call that ran and gave a value.
    pub fn is_error(&self) -> bool {
        self.result.is_err()
    }

    /// Whether the call failed or was refused: an error that is not a held call.
    pub fn is_failed(&self) -> bool {
        self.state() == OutcomeState::Failed
    }

    /// Whether the call waits for the user's confirmation instead of having run.
    pub fn is_held(&self) -> bool {
        self.confirmation_id.is_some()
    }

    /// Whether the call returned, failed or is held.
    ///
    /// ```
    /// use atfunc_tools::{FnBox, OutcomeState, Registry};
    /// use atfunc::{json, Interface};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let registry = Registry::new();
    /// registry.register(FnBox::new("files").function(
    ///     Interface::new("delete").in_domain("files"), |_, _| Ok(json!("deleted")),
    /// )).unwrap();
    /// registry.require_confirmation("files.delete").unwrap();
    /// let report = registry.execute_response("@files.delete() @files.move()").await;
    /// assert!(matches!(report.calls[0].state(), OutcomeState::Held { .. }));
    /// // A held call did not run: it has no value and does not look done.
    /// assert!(report.calls[0].result.is_err() && report.calls[0].is_error());
    /// assert_eq!(report.calls[1].state(), OutcomeState::Failed);
    /// # });
    /// ```
    pub fn state(&self) -> OutcomeState<'_> {
        match (&self.confirmation_id, &self.result) {
            (Some(id), _)
            | (
                None,
                Err(ToolError::Held {
                    confirmation_id: id,
                    ..
                }),
            ) => OutcomeState::Held {
                confirmation_id: id,
            },
            (None, Ok(_)) => OutcomeState::Returned,
            (None, Err(_)) => OutcomeState::Failed,
        }
    }

    /// The outcome as JSON for APIs: `{"name", "args", "result"}` for a call that
    /// returned, `{"name", "args", "error"}` for one that failed or was refused, a result
    /// too long for the truncate length in the fitted form of
    /// [`fit_json`](atfunc::format::fit_json), an error cut as in the block (never below
    /// [`ERROR_TEXT_FLOOR`] characters), then `"elements"` whole, only when the call has
    /// any. A held call did not run and has neither: it is `{"name", "args", "state":
    /// "held", "confirmation_id"}`, the state at the top level as [`Outcome::state`] gives
    /// it, so that no reader takes it for a success (the model reads
    /// [`held_result`](crate::held_result) in its block).
    ///
    /// ```
    /// use atfunc_tools::{FnBox, Registry};
    /// use atfunc::{json, Interface};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let registry = Registry::new();
    /// registry.register(FnBox::new("files").function(
    ///     Interface::new("delete").in_domain("files"), |_, _| Ok(json!("deleted")),
    /// )).unwrap();
    /// registry.require_confirmation("files.delete").unwrap();
    /// let report = registry.execute_response("@files.delete()").await;
    /// let id = report.calls[0].confirmation_id.clone().unwrap();
    /// assert_eq!(report.calls[0].to_json(), json!({
    ///     "name": "files.delete", "args": {}, "state": "held", "confirmation_id": id,
    /// }));
    /// # });
    /// ```
    pub fn to_json(&self) -> Json {
        let mut map = Map::new();
        map.insert("name".into(), Json::String(self.name.clone()));
        map.insert(
            "args".into(),
            self.args.clone().map_or(Json::Null, Json::Object),
        );
        match (self.state(), &self.result) {
            (OutcomeState::Held { confirmation_id }, _) => {
                map.insert("state".into(), Json::String("held".into()));
                let id = Json::String(confirmation_id.to_owned());
                map.insert("confirmation_id".into(), id)
            }
            (_, Ok(value)) => map.insert(
                "result".into(),
                format::fit_json(value, self.truncate_length),
            ),
            // As in the block: an error is not cut below ERROR_TEXT_FLOOR characters.
            (_, Err(error)) => map.insert(
                "error".into(),
                Json::String(
                    truncate_text(
                        &error.model_message(),
                        self.truncate_length.max(ERROR_TEXT_FLOOR),
                    )
                    .into_owned(),
                ),
            ),
        };
        // Left out when empty, so the JSON of a call without elements is what it always was.
        if !self.elements.is_empty() {
            map.insert("elements".into(), Json::Array(self.elements.clone()));
        }
        Json::Object(map)
    }
}

/// Everything a model's answer asked for, executed.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ExecutionReport {
    /// The result blocks, in the order the calls appear.
    pub output: String,
    /// How many blocks `output` holds: every call, refused ones included.
    pub call_count: usize,
    /// Each call's outcome, in order.
    pub calls: Vec<Outcome>,
    /// The conversation's settings at the end of the answer: pass them to
    /// [`ResponseStream::with_settings`](super::ResponseStream::with_settings) to carry a
    /// model's changes on to its next answer.
    pub settings: Settings,
}

impl ExecutionReport {
    /// The report as JSON: `{"output": ..., "call_count": N, "calls": [...]}`, each call
    /// as [`Outcome::to_json`] gives it plus where it stands in the answer: `"span"` in
    /// bytes and `"chars"` in characters (see [`Span`]).
    pub fn to_json(&self) -> Json {
        let calls = self.calls.iter().map(|outcome| {
            let mut json = outcome.to_json();
            if let Json::Object(map) = &mut json {
                let span = outcome.span;
                map.insert("span".into(), serde_json::json!([span.start, span.end]));
                let chars = serde_json::json!([span.char_start, span.char_end]);
                map.insert("chars".into(), chars);
            }
            json
        });
        serde_json::json!({
            "output": self.output,
            "call_count": self.call_count,
            "calls": calls.collect::<Vec<_>>(),
        })
    }
}

/// A call that has its result (or its refusal), before the filters, the cut and the block.
pub(super) struct Finished {
    pub(super) call_id: String,
    /// As [`Outcome::name`].
    pub(super) name: String,
    pub(super) call: Option<Call>,
    /// The call as its block shows it, before a long one is cut.
    pub(super) call_text: String,
    pub(super) args: Option<Map<String, Json>>,
    pub(super) result: Result<Json, ToolError>,
    pub(super) span: Span,
}

/// How results become blocks: the registry's output filters.
#[derive(Clone)]
pub(super) struct BlockFormat {
    pub(super) filters: Vec<OutputFilter>,
}

impl BlockFormat {
    /// The outcome of `finished`, its result cut at `limit` characters; no elements, not
    /// held.
    pub(super) fn outcome(&self, finished: Finished, limit: usize) -> Outcome {
        let Finished {
            call_id,
            name,
            call,
            call_text,
            args,
            result,
            span,
        } = finished;
        let no_args = Map::new();
        let result = match result {
            Ok(value) if !self.filters.is_empty() => {
                let text = result_text(&value).into_owned();
                let params = args.as_ref().unwrap_or(&no_args);
                match apply_filters(&self.filters, &name, params, Cow::Borrowed(&text)) {
                    Cow::Owned(replaced) => Ok(Json::String(replaced)),
                    Cow::Borrowed(_) => Ok(value),
                }
            }
            other => other,
        };
        let shown = match &result {
            // The model reads that the call waits, as a value: never an error it would
            // try to fix by calling again.
            Err(ToolError::Held {
                confirmation_id, ..
            }) => Ok(held_result(confirmation_id)),
            Ok(value) => {
                let text = result_text(value);
                match truncate_text(&text, limit) {
                    Cow::Borrowed(_) => Ok(value.clone()),
                    Cow::Owned(cut) => Ok(Json::String(cut)),
                }
            }
            // The model needs an error whole to correct its call, so a small limit set for
            // bulky results does not cut errors below ERROR_TEXT_FLOOR characters.
            Err(error) => {
                let text = error.model_message();
                Err(truncate_text(&text, limit.max(ERROR_TEXT_FLOOR)).into_owned())
            }
        };
        let record = CallRecord {
            call_text: truncate_text(&call_text, CALL_TEXT_LIMIT).into_owned(),
            result: shown,
        };
        let block = format::format_results(std::slice::from_ref(&record));
        Outcome {
            call_id,
            index: 0,
            name,
            call,
            args,
            result,
            record,
            block,
            span,
            truncate_length: limit,
            elements: Vec::new(),
            confirmation_id: None,
        }
    }
}
