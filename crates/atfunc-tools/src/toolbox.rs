//! The tool-box contract: one object-safe async trait, the context a call runs in, and the
//! errors a call can end with.

use async_trait::async_trait;
use atfunc::bind::{BindError, Body};
use atfunc::interface::Interface;
use atfunc::parse::ParseError;
use serde_json::{Map, Value as Json};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A set of tools a model can call, all under one domain (the box's name).
///
/// The trait is object safe: a registry holds `Arc<dyn ToolBox>`, and wrappers such as
/// [`Hooked`](super::Hooked) or [`Timeout`](super::Timeout) are tool boxes around tool boxes.
///
/// # Why `#[async_trait]`
///
/// An `async fn` written natively in a trait makes the trait unusable as `dyn ToolBox`
/// (its future's type differs per implementation and cannot be named through a vtable),
/// and a registry must hold boxes of many kinds side by side. So the trait's async methods
/// return boxed futures, written for you by the `#[async_trait]` attribute: put it on every
/// `impl ToolBox`, as below. atfunc re-exports it as [`atfunc_tools::async_trait`](crate::async_trait),
/// so it needs no dependency of your own. A `TypedTool` (feature `typed`), which
/// is never used as `dyn`, keeps a native `async fn` and needs no attribute.
///
/// ```
/// use atfunc_tools::{CallContext, Registry, ToolBox, ToolError};
/// use atfunc::serde_json::{json, Map, Value};
/// use atfunc::{Interface, Param, ParamType};
/// use atfunc_tools::async_trait;
/// use std::sync::Arc;
///
/// struct Weather;
///
/// #[async_trait]
/// impl ToolBox for Weather {
///     fn name(&self) -> &str {
///         "weather"
///     }
///
///     fn interfaces(&self, _ctx: &CallContext) -> Vec<Interface> {
///         vec![Interface::new("get_temp").in_domain("weather")
///             .describe("Current temperature of a city")
///             .param(Param::new("location", ParamType::String).required())]
///     }
///
///     async fn call(
///         &self,
///         function: &str,
///         args: Map<String, Value>,
///         _ctx: &CallContext,
///     ) -> Result<Value, ToolError> {
///         match function {
///             "get_temp" => Ok(json!({"location": args.get("location"), "temp": 21})),
///             _ => Err(ToolError::unknown(function)),
///         }
///     }
/// }
///
/// // Boxes of different kinds, side by side behind `dyn ToolBox`.
/// let boxes: Vec<Arc<dyn ToolBox>> = vec![Arc::new(Weather), Arc::new(atfunc_tools::FnBox::new("math"))];
/// let registry = Registry::new();
/// for tool_box in boxes {
///     registry.register_shared(tool_box).unwrap();
/// }
/// assert_eq!(registry.toolboxes(), ["weather", "math", "tools"]);
/// ```
#[async_trait]
pub trait ToolBox: Send + Sync {
    /// The box's name: the domain of its functions (`weather` in `@weather.get_temp`).
    fn name(&self) -> &str;

    /// The functions offered in `ctx`. A box may offer fewer tools in some contexts (see
    /// [`Conditional`](super::Conditional)); a tool not listed here must not be called.
    /// Each interface's `domain` is the box's name.
    fn interfaces(&self, ctx: &CallContext) -> Vec<Interface>;

    /// Runs `function` (its name as the interface spells it, without the domain) with
    /// arguments already bound to its interface.
    async fn call(
        &self,
        function: &str,
        args: Map<String, Json>,
        ctx: &CallContext,
    ) -> Result<Json, ToolError>;

    /// Releases what the box holds open. Called when the conversation ends.
    async fn close(&self) -> Result<(), ToolError> {
        Ok(())
    }

    /// What went wrong while the box was put together, one error each: a builder that
    /// chains (a `TypedBox` of feature `typed`) keeps its errors until here, and
    /// [`Registry::register`](super::Registry::register) refuses a box that reports any.
    /// None by default; a wrapper reports its inner box's.
    fn build_errors(&self) -> Vec<BuildError> {
        Vec::new()
    }
}

/// One error made while a tool box was put together ([`ToolBox::build_errors`]), kept as
/// the error value the box made, so a caller can [`downcast_ref`](BuildError::downcast_ref)
/// it back to its type (a `TypedBox` reports `typed::TypedError`s). A box that has only a
/// message makes one with `From<String>` or `From<&str>`.
///
/// Shared, so that a [`RegisterError`](super::RegisterError) stays `Clone`; two are equal
/// when they are the same error, as [`SourceError`]s are. Its `Display` is the error's.
///
/// ```
/// use atfunc_tools::BuildError;
///
/// let error = BuildError::new(std::io::Error::other("no config"));
/// assert_eq!(error.to_string(), "no config");
/// assert!(error.downcast_ref::<std::io::Error>().is_some());
/// assert_eq!(BuildError::from("no name").to_string(), "no name");
/// ```
#[derive(Debug, Clone)]
pub struct BuildError(Arc<dyn std::error::Error + Send + Sync>);

impl BuildError {
    /// Keeps `error` as it is.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> BuildError {
        BuildError(Arc::new(error))
    }

    /// The error the box made.
    pub fn get(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }

    /// The error as `E`, when it is one.
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.0.downcast_ref::<E>()
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// The error's causes: a `BuildError` stands for the box's error itself, whose `Display`
/// it shows, so a report that walks the chain names that error once.
impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for BuildError {
    fn eq(&self, other: &BuildError) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// A box that has only a message.
impl From<String> for BuildError {
    fn from(message: String) -> BuildError {
        BuildError(Arc::from(Box::<dyn std::error::Error + Send + Sync>::from(
            message,
        )))
    }
}

/// A box that has only a message.
impl From<&str> for BuildError {
    fn from(message: &str) -> BuildError {
        BuildError::from(message.to_owned())
    }
}

#[async_trait]
impl<T: ToolBox + ?Sized> ToolBox for Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn interfaces(&self, ctx: &CallContext) -> Vec<Interface> {
        (**self).interfaces(ctx)
    }

    async fn call(
        &self,
        function: &str,
        args: Map<String, Json>,
        ctx: &CallContext,
    ) -> Result<Json, ToolError> {
        (**self).call(function, args, ctx).await
    }

    async fn close(&self) -> Result<(), ToolError> {
        (**self).close().await
    }

    fn build_errors(&self) -> Vec<BuildError> {
        (**self).build_errors()
    }
}

#[async_trait]
impl<T: ToolBox + ?Sized> ToolBox for Box<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn interfaces(&self, ctx: &CallContext) -> Vec<Interface> {
        (**self).interfaces(ctx)
    }

    async fn call(
        &self,
        function: &str,
        args: Map<String, Json>,
        ctx: &CallContext,
    ) -> Result<Json, ToolError> {
        (**self).call(function, args, ctx).await
    }

    async fn close(&self) -> Result<(), ToolError> {
        (**self).close().await
    }

    fn build_errors(&self) -> Vec<BuildError> {
        (**self).build_errors()
    }
}

/// Typed values attached to a [`CallContext`], one per type: who the user is, which agent
/// speaks, what device is on the other end. Conditions and scopes read them.
#[derive(Clone, Default)]
pub struct Extensions {
    map: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl Extensions {
    /// Attaches `value`, replacing any value of the same type.
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        self.map.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The value of type `T`, if one is attached.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.map
            .get(&TypeId::of::<T>())
            .and_then(|value| value.downcast_ref::<T>())
    }

    /// Whether nothing is attached.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.map.len())
            .finish()
    }
}

/// What a call runs in: its id, the request body of an api-wrapper call, the caller's
/// typed data, and a cancellation token. Cheap to clone. Made with [`CallContext::new`]
/// and its builder methods (the struct is `#[non_exhaustive]`: a field added later breaks
/// no caller).
///
/// # Cancellation
///
/// A host whose client goes away (a closed connection, a stopped request) cancels the
/// context's [`cancellation`](CallContext::cancellation) token; a tool watches it
/// (`ctx.cancellation().cancelled().await`, or `is_cancelled()` between steps) and stops
/// where stopping is safe, as rmcp's tools do. Each call gets a child token of the one it
/// was given, which the registry also cancels when the call's future is dropped before it
/// ends (its stream or its task dropped). By default such a call is dropped with its
/// future, wherever it stood; with [`CallContext::finish_started_calls`], a call that
/// started runs on to its end on a task of its own, its token cancelled so that it can end
/// early where that is safe: a write tool half done is not cut off midway. (Its events
/// still end with `cancelled` when it is dropped: no one waits for its result.)
///
/// ```
/// use atfunc_tools::{CallContext, FnBox, Registry};
/// use atfunc::{json, Interface};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let registry = Registry::new();
/// registry.register(FnBox::new("t").function(Interface::new("check").in_domain("t"), |_, ctx| {
///     Ok(json!(ctx.cancellation().is_cancelled()))
/// })).unwrap();
/// let token = atfunc_tools::CancellationToken::new();
/// let ctx = CallContext::new().with_cancellation(token.clone());
/// token.cancel(); // the client went away
/// let report = registry.execute_response_with("@t.check()", &ctx).await;
/// assert_eq!(report.calls[0].result, Ok(json!(true)));
/// # });
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CallContext {
    /// Identifies one call in hooks, recordings and logs. The registry numbers calls
    /// `call_1`, `call_2`, ...; set your own when the call comes with one.
    pub call_id: String,
    /// The `with_body [[ ... ]]` block of an api-wrapper call.
    pub body: Option<Body>,
    /// Data the caller attached.
    pub extensions: Extensions,
    /// Cancelled when the caller gives up on the call (see the type's doc).
    cancel: CancellationToken,
    /// Whether a started call runs on to its end when its future is dropped.
    finish_started: bool,
}

impl CallContext {
    /// An empty context.
    pub fn new() -> CallContext {
        CallContext::default()
    }

    /// Attaches a typed value (builder style).
    pub fn with<T: Any + Send + Sync>(mut self, value: T) -> CallContext {
        self.extensions.insert(value);
        self
    }

    /// The attached value of type `T`, if any.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.extensions.get::<T>()
    }

    /// The context with `call_id` set (builder style).
    pub fn with_call_id(mut self, call_id: impl Into<String>) -> CallContext {
        self.call_id = call_id.into();
        self
    }

    /// The context under `token`: cancelling it tells the calls run in this context that
    /// their caller gave up (see the type's doc).
    pub fn with_cancellation(mut self, token: CancellationToken) -> CallContext {
        self.cancel = token;
        self
    }

    /// The call's cancellation token: cancelled when the caller gives up on the call, or
    /// when the call's future is dropped before it ends.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Whether the caller gave up on the call.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Lets a call that started run on to its end, on a task of its own, when its future
    /// is dropped (its stream dropped by a client that went away), instead of being
    /// dropped wherever it stood. Its token is cancelled then, so a tool may still end
    /// early where that is safe. Needs a Tokio runtime.
    pub fn finish_started_calls(mut self) -> CallContext {
        self.finish_started = true;
        self
    }

    /// Whether a started call runs on to its end when its future is dropped
    /// ([`CallContext::finish_started_calls`]).
    pub fn finishes_started_calls(&self) -> bool {
        self.finish_started
    }

    /// The same context for one call: `call_id` and `body` set, collecting the call's own
    /// elements (see [`CallContext::add_element`]).
    pub fn for_call(&self, call_id: impl Into<String>, body: Option<Body>) -> CallContext {
        CallContext {
            call_id: call_id.into(),
            body,
            extensions: self.extensions.clone(),
            // The call's own: a call dropped cancels itself, not its siblings.
            cancel: self.cancel.child_token(),
            finish_started: self.finish_started,
        }
        .collecting_elements()
    }
}

/// Why a call produced no result. Every message is written for the model: it says what
/// failed and, where it can, how to call it right.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// No function of that name is offered: the one way an unknown function is reported,
    /// whether the registry's binder notices (a [`BindError::UnknownFunction`] becomes this)
    /// or a box called directly ([`ToolError::unknown`]).
    #[error("Unknown function '{name}'{}", unknown_hint(.closest, .available, *.more))]
    UnknownFunction {
        /// The name as written.
        name: String,
        /// The closest offered name, when one is close.
        closest: Option<String>,
        /// A few offered names, when the registry lists them (empty when `closest` is set,
        /// and for a box's own error).
        available: Vec<String>,
        /// How many offered names `available` leaves out.
        more: usize,
    },
    /// The arguments do not fit the function's interface: the binder's error, or a typed
    /// tool's when its arguments do not deserialise. A refusal the model can fix.
    #[error(transparent)]
    Bind(BindError),
    /// The function exists but may not be called now (hidden by a condition or outside
    /// the allowed scope).
    #[error("Function '{name}' is not available now; do not call it again, use another function")]
    NotAvailable {
        /// The function's name.
        name: String,
    },
    /// The function took longer than its time limit and was stopped.
    #[error(
        "Function '{name}' did not finish within {} and was stopped; try again with a smaller request, or go on without it",
        human_duration(*.limit)
    )]
    Timeout {
        /// The function's name.
        name: String,
        /// The limit it exceeded.
        limit: Duration,
    },
    /// The function crashed.
    #[error(
        "Function '{name}' failed unexpectedly ({message}); the call had no effect you can rely on"
    )]
    Panicked {
        /// The function's name.
        name: String,
        /// The panic message, when it had one.
        message: String,
    },
    /// The function is declared but nothing implements it.
    #[error("function '{name}' has no implementation")]
    NoImplementation {
        /// The function's qualified name.
        name: String,
    },
    /// A replayed call that the recording does not hold.
    #[error("Function '{name}' was not called with these arguments in the recording: {args}")]
    NotRecorded {
        /// The function's name.
        name: String,
        /// The arguments, as compact JSON.
        args: String,
    },
    /// The function needs the user's confirmation and the user declined this call.
    #[error("The user declined this call of '{name}'; it did not run. Do not call it again unless the user asks for it")]
    Declined {
        /// The function's name.
        name: String,
    },
    /// The function needs the user's confirmation and as many calls as may wait for it
    /// wait already; this one was neither run nor held.
    #[error("Function '{name}' needs the user's confirmation, and {limit} calls wait for it already; this call was not run or kept. Wait for the user before calling it again")]
    HoldLimit {
        /// The function's name.
        name: String,
        /// How many calls may wait at once.
        limit: usize,
    },
    /// The function needs the user's confirmation and the call waits for it under
    /// `confirmation_id`: it did not run, so it has no value. The model reads
    /// [`held_result`](crate::held_result), not this message; the host confirms
    /// or rejects it (see [`Registry::confirm`](super::Registry::confirm)).
    #[error("Function '{name}' did not run: it waits for the user's confirmation under the id '{confirmation_id}'")]
    Held {
        /// The function's name.
        name: String,
        /// The id the call waits under.
        confirmation_id: String,
    },
    /// The call was not run: the request had made as many calls as one request may (an
    /// executed turn of the gateway runs at most 1000), so neither this call nor anything
    /// after it in the answer was read.
    #[error("Not run: this request already ran {limit} calls, the most one request may run; neither this call nor the rest of the answer was read")]
    CallLimit {
        /// The function's name (as written, when the call did not bind).
        name: String,
        /// How many calls one request may run.
        limit: usize,
    },
    /// Text in the answer that looked like a call but could not be read as one.
    #[error(
        "This call could not be read: {0}. Write calls as @name(\"text\", 42, name=\"value\")"
    )]
    Unreadable(ParseError),
    /// The tool's own failure, in its own words.
    #[error("{0}")]
    Failed(String),
    /// The tool's own failure as an error value ([`ToolError::from_error`], `?` on an
    /// `std::io::Error`): its `Display` is the error's own message and
    /// [`source`](std::error::Error::source) its causes, as if it were the error itself;
    /// [`ToolError::downcast_ref`] finds the error or a cause by type, and the model reads
    /// the whole chain ([`ToolError::model_message`]).
    #[error(transparent)]
    Error(SourceError),
}

/// A tool's own error, kept whole for [`ToolError::Error`]. Shared, so that a `ToolError`
/// stays `Clone`; two are equal when they are the same error.
#[derive(Debug, Clone)]
pub struct SourceError(Arc<dyn std::error::Error + Send + Sync>);

impl SourceError {
    /// The error the tool gave.
    pub fn get(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

/// The error's own message, as the tool's error writes it; its causes are its
/// [`source`](std::error::Error::source) chain, not part of this text, so that a report
/// that walks the chain (anyhow's `{:#}`, eyre's report) names each once. The model reads
/// the whole chain: see [`ToolError::model_message`].
impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// The error's causes: `SourceError` stands for the tool's error itself, so its source is
/// that error's source ([`SourceError::get`] gives the error).
impl std::error::Error for SourceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for SourceError {
    fn eq(&self, other: &SourceError) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// `?` on an `std::io::Error` in a tool: the error is kept in a [`ToolError::Error`]
/// ([`ToolError::downcast_ref`] gives it back).
impl From<std::io::Error> for ToolError {
    fn from(error: std::io::Error) -> ToolError {
        ToolError::from_error(error)
    }
}

/// `Err("no such user".into())` and `?` on a `Result<_, String>` in a tool.
impl From<String> for ToolError {
    fn from(message: String) -> ToolError {
        ToolError::Failed(message)
    }
}

/// `Err("no such user".into())` in a tool.
impl From<&str> for ToolError {
    fn from(message: &str) -> ToolError {
        ToolError::Failed(message.to_owned())
    }
}

/// `?` on `serde_json::from_value` and `to_value` in a tool: the model reads what did not
/// fit, and the error is kept in a [`ToolError::Error`].
impl From<serde_json::Error> for ToolError {
    fn from(error: serde_json::Error) -> ToolError {
        ToolError::from_error(error)
    }
}

/// A call that does not bind. An unknown function becomes [`ToolError::UnknownFunction`],
/// so that it reads the same whoever noticed it.
impl From<BindError> for ToolError {
    fn from(error: BindError) -> ToolError {
        match error {
            BindError::UnknownFunction {
                name,
                closest,
                available,
                more,
            } => ToolError::UnknownFunction {
                name,
                closest,
                available,
                more,
            },
            other => ToolError::Bind(other),
        }
    }
}

impl ToolError {
    /// A tool's own failure message.
    pub fn msg(message: impl Into<String>) -> ToolError {
        ToolError::Failed(message.into())
    }

    /// A tool's own failure as an error value of any type that boxes into one
    /// (`.map_err(ToolError::from_error)?`): the model reads its message and its causes
    /// ([`ToolError::model_message`]); [`ToolError::downcast_ref`] gives it back.
    ///
    /// ```
    /// use atfunc_tools::ToolError;
    /// let failed = ToolError::from_error(std::fmt::Error);
    /// assert_eq!(failed.to_string(), "an error occurred when formatting an argument");
    /// assert!(failed.downcast_ref::<std::fmt::Error>().is_some());
    /// ```
    pub fn from_error(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> ToolError {
        ToolError::Error(SourceError(Arc::from(error.into())))
    }

    /// The tool's own error ([`ToolError::Error`]) or one of its causes, the outermost
    /// first, when it is an `E`.
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        let ToolError::Error(source) = self else {
            return None;
        };
        let mut error: Option<&(dyn std::error::Error + 'static)> = Some(source.get());
        while let Some(current) = error {
            if let Some(found) = current.downcast_ref::<E>() {
                return Some(found);
            }
            error = current.source();
        }
        None
    }

    /// The text the model reads for this error (in the result block, an outcome's JSON, a
    /// call event): the `Display`, and for a tool's own error ([`ToolError::Error`]) each
    /// cause after it, `: ` between them, as anyhow's `{:#}` writes a chain
    /// (`loading the profile: reading settings.toml: no such file`). The model needs the
    /// cause to act on, and a context's message alone rarely names it. A cause whose
    /// message the text so far already holds (an error that writes its source into its
    /// own message) is not repeated.
    ///
    /// ```
    /// use atfunc_tools::ToolError;
    /// #[derive(Debug)]
    /// struct Outer(std::io::Error);
    /// impl std::fmt::Display for Outer {
    ///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    ///         f.write_str("reading settings.toml")
    ///     }
    /// }
    /// impl std::error::Error for Outer {
    ///     fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
    ///         Some(&self.0)
    ///     }
    /// }
    /// let error = ToolError::from_error(Outer(std::io::Error::other("no such file")));
    /// assert_eq!(error.to_string(), "reading settings.toml");
    /// assert_eq!(error.model_message(), "reading settings.toml: no such file");
    /// ```
    pub fn model_message(&self) -> String {
        let mut text = self.to_string();
        let ToolError::Error(source) = self else {
            return text;
        };
        let mut cause = source.get().source();
        while let Some(error) = cause {
            let message = error.to_string();
            if !message.is_empty() && !text.contains(&message) {
                text.push_str(": ");
                text.push_str(&message);
            }
            cause = error.source();
        }
        text
    }

    /// `function` is not one of the box's tools.
    pub fn unknown(function: impl Into<String>) -> ToolError {
        ToolError::UnknownFunction {
            name: function.into(),
            closest: None,
            available: Vec::new(),
            more: 0,
        }
    }

    /// Whether the model's call was refused because it does not fit what is offered (an
    /// unknown function, arguments that do not bind or deserialise, text that is no
    /// call): a mistake the model can fix by writing the call again, not a failure of the
    /// tool.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            ToolError::UnknownFunction { .. } | ToolError::Bind(_) | ToolError::Unreadable(_)
        )
    }
}

/// The binder's hint when there is one to give; a box's own error has only the name.
fn unknown_hint(closest: &Option<String>, available: &[String], more: usize) -> String {
    if closest.is_none() && available.is_empty() {
        return String::new();
    }
    format!(
        ": {}",
        atfunc::bind::unknown_function_hint(closest, available, more)
    )
}

/// `5s`, `1.5s`, `250ms`: short enough for an error line.
pub(crate) fn human_duration(limit: Duration) -> String {
    let millis = limit.as_millis();
    if millis < 1000 {
        format!("{millis}ms")
    } else if millis.is_multiple_of(1000) {
        format!("{}s", millis / 1000)
    } else {
        format!("{}s", limit.as_secs_f64())
    }
}
