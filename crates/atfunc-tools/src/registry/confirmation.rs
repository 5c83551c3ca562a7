//! Confirmation, the registry's side: marking what needs the user's confirmation,
//! deciding as calls come ([`Confirmer`]), and the calls held for it, which the host lists,
//! runs or drops. (What a held call is, and the bounds on them, are in
//! [`confirm`](crate::confirm).)
//!
//! A held call is confirmed in one of three ways, by what the host needs back:
//!
//! | method | gives |
//! |---|---|
//! | [`Registry::confirm`] | the value, cut as [`Registry::call`] cuts it |
//! | [`Registry::confirm_output`] | the value and the elements for the client |
//! | [`Registry::confirm_outcome`] | an [`Outcome`], with the block for the model's next turn |

use super::outcome::{BlockFormat, Finished, Outcome};
use super::registration::{ConfirmRule, RegisterError, Registry};
use super::turn::{run_in_box, Target};
use crate::confirm::{ConfirmError, Confirmer, Held, HeldCall, HoldLimits};
use crate::elements::ToolOutput;
use crate::events::CallWatch;
use crate::toolbox::{CallContext, ToolError};
use atfunc::format::truncate_value;
use serde_json::Value as Json;
use std::sync::Arc;

impl Registry {
    /// Marks a box (by its name) or one function (by its path, as a call writes it) as
    /// needing the user's confirmation: a model's call of it is bound and then, instead of
    /// running, handed to the [`Confirmer`] ([`Registry::set_confirmer`]); with none, it is
    /// held, and the model's result is only
    /// `{"executed": false, "status": "confirmation_required", "confirmation_id": "<uuid>"}`.
    /// Run it with [`Registry::confirm`] or drop it with [`Registry::reject`]; see
    /// [`HoldLimits`] for how long and how many calls wait. A direct [`Registry::call`] is
    /// asked about or held the same way; [`Registry::call_unconfirmed`] runs at once. The mark stays with the name: a box registered again
    /// under it needs confirmation too.
    ///
    /// ```
    /// use atfunc_tools::{ConfirmError, FnBox, Registry};
    /// use atfunc::{json, Interface, Param, ParamType};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let registry = Registry::new();
    /// registry.register(FnBox::new("files").function(
    ///     Interface::new("delete").in_domain("files")
    ///         .param(Param::new("path", ParamType::String).required()),
    ///     |args, _| Ok(json!(format!("deleted {}", args.get::<String>("path")?))),
    /// )).unwrap();
    /// registry.require_confirmation("files.delete").unwrap();
    ///
    /// let report = registry.execute_response(r#"@files.delete("notes.txt")"#).await;
    /// let id = report.calls[0].confirmation_id.clone().unwrap();
    /// // It did not run: no value, and the model reads only that it waits.
    /// assert!(report.calls[0].is_error() && !report.calls[0].is_failed());
    /// assert_eq!(report.calls[0].to_json()["state"], "held");
    /// assert!(report.calls[0].block.contains(r#""status":"confirmation_required""#));
    /// assert_eq!(registry.held_calls()[0].args["path"], "notes.txt");
    ///
    /// // The user said yes.
    /// assert_eq!(registry.confirm(&id).await, Ok(json!("deleted notes.txt")));
    /// assert!(matches!(registry.confirm(&id).await, Err(ConfirmError::Unknown { .. })));
    /// # });
    /// ```
    pub fn require_confirmation(&self, path_or_box: &str) -> Result<(), RegisterError> {
        let rule = {
            let state = self.read();
            state
                .boxes
                .iter()
                .find(|b| Self::same_name(&state, b.name(), path_or_box))
                .map(|b| ConfirmRule::Toolbox(b.name().to_owned()))
        };
        let rule = match rule {
            Some(rule) => rule,
            None => {
                let snapshot = self.snapshot(&CallContext::new());
                match snapshot.view.catalog().find(path_or_box) {
                    Ok((index, interface))
                        if matches!(snapshot.targets.get(index), Some(Target::Box(..))) =>
                    {
                        ConfirmRule::Function(interface.original_qualified_name())
                    }
                    _ => {
                        return Err(RegisterError::NotFound {
                            name: path_or_box.to_owned(),
                        })
                    }
                }
            }
        };
        self.write().confirm.push(rule);
        Ok(())
    }

    /// Decides what happens to calls that need confirmation as they come (ask the user,
    /// apply a policy; `Decision::Run` runs them all), instead of holding them. Replaces
    /// an earlier confirmer.
    pub fn set_confirmer(&self, confirmer: impl Confirmer + 'static) {
        self.write().confirmer = Some(Arc::new(confirmer));
    }

    /// Holds calls that need confirmation again (the default).
    pub fn clear_confirmer(&self) {
        self.write().confirmer = None;
    }

    /// How long held calls wait and how many may wait at once.
    pub fn set_hold_limits(&self, limits: HoldLimits) {
        self.ledger.held().limits = limits;
    }

    /// The limits on held calls.
    pub fn hold_limits(&self) -> HoldLimits {
        self.ledger.held().limits
    }

    /// The calls waiting for confirmation, oldest first: what to show the user.
    pub fn held_calls(&self) -> Vec<HeldCall> {
        let (expired, waiting) = {
            let mut store = self.ledger.held();
            (store.expire(), store.list())
        };
        self.ledger.expired_events(expired);
        waiting
    }

    /// Runs the call held under `id` (the user said yes) and returns its result, cut as
    /// [`Registry::call`] cuts it. Its events (`start`, then `success` or `error`) carry
    /// the call's first `call_id`. An id no call waits under is
    /// [`ConfirmError::Unknown`], a call that waited too long [`ConfirmError::Expired`];
    /// a call that runs and fails is [`ConfirmError::Failed`].
    pub async fn confirm(&self, id: &str) -> Result<Json, ConfirmError> {
        self.confirm_output(id).await.map(|output| output.value)
    }

    /// [`Registry::confirm`], with the elements the call shows the client beside its value
    /// (see [`CallContext::add_element`]).
    pub async fn confirm_output(&self, id: &str) -> Result<ToolOutput, ConfirmError> {
        let held = self.take_held(id)?;
        // The call's own elements: none of the answer it was held in.
        let ctx = held.ctx.clone().collecting_elements();
        let result = self.run_held(&held, &ctx).await;
        let limit = self.truncate_length().max(1);
        Ok(ToolOutput {
            value: truncate_value(&result?, limit),
            elements: ctx.take_elements(),
        })
    }

    /// Runs the call held under `id`, as [`Registry::confirm`] does, and gives its outcome
    /// as a call of the answer it was held in would have had it: its result after the
    /// output filters, cut at that answer's truncate length, and its block, which shows
    /// the call as the model wrote it ([`HeldCall::call_text`]), for the model's next turn.
    /// A call that runs and fails is an outcome too, its error in the block; `Err` means
    /// nothing ran: [`ConfirmError::Unknown`] or [`ConfirmError::Expired`].
    ///
    /// ```
    /// use atfunc_tools::{FnBox, OutcomeState, Registry};
    /// use atfunc::{json, Interface, Param, ParamType};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let registry = Registry::new();
    /// registry.register(FnBox::new("files").function(
    ///     Interface::new("delete").in_domain("files")
    ///         .param(Param::new("path", ParamType::String).required()),
    ///     |args, _| Ok(json!(format!("deleted {}", args.get::<String>("path")?))),
    /// )).unwrap();
    /// registry.require_confirmation("files.delete").unwrap();
    ///
    /// let report = registry.execute_response(r#"@Files.Delete("notes.txt")"#).await;
    /// let OutcomeState::Held { confirmation_id } = report.calls[0].state() else { panic!() };
    /// assert_eq!(registry.held_calls()[0].call_text, r#"Files.Delete("notes.txt")"#);
    ///
    /// // The user said yes; the model reads what the call returned on its next turn.
    /// let confirmed = registry.confirm_outcome(confirmation_id).await.unwrap();
    /// assert_eq!(confirmed.state(), OutcomeState::Returned);
    /// assert_eq!(confirmed.block, "Function call: Files.Delete(\"notes.txt\")\nReturned: deleted notes.txt\n");
    /// # });
    /// ```
    pub async fn confirm_outcome(&self, id: &str) -> Result<Outcome, ConfirmError> {
        let held = self.take_held(id)?;
        let ctx = held.ctx.clone().collecting_elements();
        let result = self.run_held(&held, &ctx).await;
        let format = {
            let state = self.read();
            BlockFormat {
                filters: state.filters.clone(),
            }
        };
        let Held {
            call,
            parsed,
            limit,
            ..
        } = held;
        let finished = Finished {
            call_id: call.call_id,
            name: call.function,
            call_text: call.call_text,
            args: Some(call.args),
            result,
            span: parsed.span,
            call: Some(parsed),
        };
        let mut outcome = format.outcome(finished, limit);
        outcome.elements = ctx.take_elements();
        Ok(outcome)
    }

    /// Runs a held call in `ctx`, with its events (a `start` of its own, under its first
    /// `call_id`) and its count.
    async fn run_held(&self, held: &Held, ctx: &CallContext) -> Result<Json, ToolError> {
        let call = &held.call;
        let watch = CallWatch::start(
            self.ledger.event_hook(),
            &call.call_id,
            &call.name,
            Some(&call.function),
        );
        let result = run_in_box(
            &held.tool_box,
            &held.box_function,
            &call.function,
            call.args.clone(),
            ctx,
            held.timeout,
        )
        .await;
        watch.end(&result);
        self.ledger
            .stats
            .call(held.tool_box.name(), call.function.clone(), result.is_err());
        result
    }

    /// Drops the call held under `id` without running it (the user said no) and returns
    /// it. Its `error` event says it was declined. Errors as [`Registry::confirm`].
    pub fn reject(&self, id: &str) -> Result<HeldCall, ConfirmError> {
        let held = self.take_held(id)?;
        let call = held.call;
        let watch = CallWatch::resume(
            self.ledger.event_hook(),
            &call.call_id,
            &call.name,
            &call.function,
        );
        watch.end::<(), _>(&Err(ToolError::Declined {
            name: call.function.clone(),
        }));
        Ok(call)
    }

    /// Takes the call held under `id` out, without running it or an event: for a caller
    /// that hands it on (the gateway gives it to its client as a `tool_calls` entry).
    #[doc(hidden)]
    pub fn withdraw(&self, id: &str) -> Result<HeldCall, ConfirmError> {
        self.take_held(id).map(|held| held.call)
    }

    fn take_held(&self, id: &str) -> Result<Held, ConfirmError> {
        let (expired, taken) = {
            let mut store = self.ledger.held();
            (store.expire(), store.take(id))
        };
        self.ledger.expired_events(expired);
        taken
    }
}
