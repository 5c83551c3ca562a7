//! Running calls: one call made directly by the host ([`Registry::call`]), a model's
//! whole answer ([`Registry::execute_response`]), or an answer as it streams in
//! ([`Registry::stream`]). Each takes a [`Snapshot`](super::turn::Snapshot) of the
//! registry and runs as a [`Turn`].

use super::outcome::ExecutionReport;
use super::registration::Registry;
use super::stream::ResponseStream;
use super::turn::Turn;
use super::view::Conversation;
use crate::events::CallWatch;
use crate::toolbox::{CallContext, ToolError};
use atfunc::bind::bind;
use atfunc::format::truncate_value;
use atfunc::parse::{Call, StreamParser, Value};
use serde_json::Value as Json;
use std::sync::Arc;

/// How [`Registry::call_with`] runs a call.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Cut the result at this many characters; `None`, the default: the registry's
    /// [`truncate_length`](Registry::truncate_length).
    pub truncate_length: Option<usize>,
    /// The context the call runs in. An empty `call_id` is replaced by a fresh one.
    pub ctx: CallContext,
    /// Runs a call that needs the user's confirmation at once, without asking: for a host
    /// that asked the user itself. `false`, the default: such a call is asked about or
    /// held, as in an answer ([`Registry::require_confirmation`]).
    pub unconfirmed: bool,
}

impl CallOptions {
    /// The same options with [`truncate_length`](Self::truncate_length) set.
    pub fn with_truncate_length(mut self, truncate_length: Option<usize>) -> Self {
        self.truncate_length = truncate_length;
        self
    }

    /// The same options with [`ctx`](Self::ctx) set.
    pub fn with_ctx(mut self, ctx: CallContext) -> Self {
        self.ctx = ctx;
        self
    }

    /// The same options with [`unconfirmed`](Self::unconfirmed) set.
    pub fn unconfirmed(mut self) -> Self {
        self.unconfirmed = true;
        self
    }
}

impl Registry {
    /// Calls a function by path with JSON arguments (an object, or `null` for none) and
    /// returns its result cut at the registry's truncate length: a string is cut as text,
    /// another value too long for the limit comes back in the fitted form of
    /// [`fit_json`](atfunc::format::fit_json). The arguments are checked and converted
    /// against the interface as a call in an answer would be. Output filters do not apply.
    ///
    /// A function that needs the user's confirmation ([`Registry::require_confirmation`])
    /// is asked about or held as in an answer: a host that routes a model's native
    /// `tool_calls` through here keeps the hold on writes. A held call returns
    /// [`ToolError::Held`] with the id to [`confirm`](Registry::confirm) it by;
    /// [`Registry::call_unconfirmed`] runs it at once.
    ///
    /// A direct call belongs to no conversation, so `tools.set_truncate_length` is refused
    /// here: set the registry's default with [`Registry::set_truncate_length`].
    pub async fn call(&self, path: &str, args: Json) -> Result<Json, ToolError> {
        self.call_with(path, args, &CallOptions::default()).await
    }

    /// [`Registry::call`] without confirmation: a function that needs the user's
    /// confirmation runs at once. For a host that asked the user itself.
    pub async fn call_unconfirmed(&self, path: &str, args: Json) -> Result<Json, ToolError> {
        self.call_with(path, args, &CallOptions::default().unconfirmed())
            .await
    }

    /// [`Registry::call`] with options: a truncate length, a context. The elements the call
    /// shows the client (see [`CallContext::add_element`]) are added to `options.ctx` when
    /// it collects them ([`CallContext::collecting_elements`]).
    ///
    /// ```
    /// use atfunc_tools::{CallContext, CallOptions, FnBox, Registry};
    /// use atfunc::{json, Interface};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let registry = Registry::new();
    /// registry.register(FnBox::new("ui").function(Interface::new("card").in_domain("ui"), |_, ctx| {
    ///     ctx.add_element(json!({"type": "card", "title": "Hello"}));
    ///     Ok(json!("shown"))
    /// })).unwrap();
    /// let options = CallOptions::default().with_ctx(CallContext::new().collecting_elements());
    /// assert_eq!(registry.call_with("ui.card", json!({}), &options).await, Ok(json!("shown")));
    /// assert_eq!(options.ctx.take_elements(), [json!({"type": "card", "title": "Hello"})]);
    /// # });
    /// ```
    pub async fn call_with(
        &self,
        path: &str,
        args: Json,
        options: &CallOptions,
    ) -> Result<Json, ToolError> {
        let ctx = &options.ctx;
        let named = match args {
            Json::Object(map) => map
                .into_iter()
                .map(|(k, v)| (k, Value::from_json(v)))
                .collect(),
            Json::Null => Vec::new(),
            other => {
                self.ledger.stats.refusal();
                return Err(ToolError::msg(format!(
                    "Arguments for function '{path}' must be an object of named values, not {other}"
                )));
            }
        };
        let call = Call::new(path).with_named(named);
        let turn = Turn {
            snapshot: self.snapshot(ctx),
            ledger: Arc::clone(&self.ledger),
        };
        let call_id = if ctx.call_id.is_empty() {
            self.ledger.next_call_id()
        } else {
            ctx.call_id.clone()
        };
        let catalog = turn.snapshot.view.catalog();
        let bound = match bind(&call, catalog) {
            Ok(bound) => bound,
            Err(error) => {
                self.ledger.stats.refusal();
                let function = catalog
                    .find(path)
                    .ok()
                    .map(|(_, interface)| interface.original_qualified_name());
                let watch = CallWatch::start(
                    self.ledger.event_hook(),
                    &call_id,
                    path,
                    function.as_deref(),
                );
                let error: ToolError = error.into();
                watch.end::<(), _>(&Err(&error));
                return Err(error);
            }
        };
        let watch = CallWatch::start(self.ledger.event_hook(), &call_id, path, Some(&bound.name));
        let call_ctx = ctx.for_call(call_id, ctx.body.clone());
        let limit = options
            .truncate_length
            .unwrap_or_else(|| self.truncate_length())
            .max(1);
        let result = if options.unconfirmed {
            let result = turn.dispatch(&bound, &call_ctx, None).await;
            watch.end(&result);
            result
        } else {
            turn.run_confirmed(&call, &bound, &call_ctx, None, &watch, limit)
                .await
                .0
        };
        for element in call_ctx.take_elements() {
            ctx.add_element(element);
        }
        let value = result?;
        Ok(truncate_value(&value, limit))
    }

    /// Parses a model's whole answer, runs its calls in order of appearance, and formats
    /// their results.
    pub async fn execute_response(&self, text: &str) -> ExecutionReport {
        self.execute_response_with(text, &CallContext::new()).await
    }

    /// [`Registry::execute_response`] in a context.
    pub async fn execute_response_with(&self, text: &str, ctx: &CallContext) -> ExecutionReport {
        let mut stream = self.stream_with(ctx);
        stream.feed_str(text).await;
        stream.finish().await.report
    }

    /// A stream that is fed a model's answer as it arrives and runs each call as soon as
    /// it is complete. It borrows nothing of the registry (see [`ResponseStream`]): from an
    /// `Arc<Registry>`, [`ResponseStream::run`] gives a `Stream + Send + 'static` for an
    /// SSE response or a task of its own.
    ///
    /// ```
    /// use atfunc_tools::Registry;
    /// use futures::StreamExt;
    /// use std::sync::Arc;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let registry = Arc::new(Registry::new());
    /// let input = futures::stream::iter([Ok::<_, std::io::Error>("@tools.get_toolboxes()")]);
    /// let outcomes = registry.stream().run(input);
    /// drop(registry);
    /// let forwarded = tokio::spawn(outcomes.map(|o| o.map(|o| o.block)).collect::<Vec<_>>());
    /// let blocks = forwarded.await.unwrap();
    /// assert_eq!(blocks[0].as_deref().unwrap(), "Function call: tools.get_toolboxes()\nReturned: [\"tools\"]\n");
    /// # });
    /// ```
    pub fn stream(&self) -> ResponseStream {
        self.stream_with(&CallContext::new())
    }

    /// [`Registry::stream`] in a context.
    pub fn stream_with(&self, ctx: &CallContext) -> ResponseStream {
        let snapshot = self.snapshot(ctx);
        let parser = StreamParser::new(self.parser_config_for(&snapshot));
        let conversation = Conversation::new(&self.settings());
        let turn = Turn {
            snapshot,
            ledger: Arc::clone(&self.ledger),
        };
        let events = self.ledger.event_hook();
        ResponseStream::new(turn, parser, ctx.clone(), conversation, events)
    }
}
