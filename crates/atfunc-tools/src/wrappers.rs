//! Wrappers: tool boxes around tool boxes that change what happens around a call
//! without adding tools.

use super::panics::call_guarded;
use super::toolbox::{BuildError, CallContext, ToolBox, ToolError};
use async_trait::async_trait;
use atfunc::interface::Interface;
use atfunc::messages::qualified;
use serde_json::{Map, Value as Json};
use std::collections::BTreeSet;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;
use tokio::time::Instant;
use unicase::UniCase;

/// Builder-style wrapping for every tool box: `weather.with_timeout(limit).hooked(log)`.
pub trait ToolBoxExt: ToolBox + Sized + 'static {
    /// Notifies `handler` on start, success and error of every call.
    fn hooked(self, handler: impl ToolHandler + 'static) -> Hooked<Self> {
        Hooked::new(self, handler)
    }

    /// Offers (and allows) only the tools for which `condition` holds in the call's context.
    fn conditional<C>(self, condition: C) -> Conditional<Self>
    where
        C: Fn(&Interface, &CallContext) -> bool + Send + Sync + 'static,
    {
        Conditional::new(self, condition)
    }

    /// Allows only the tools `scope` allows, checked at every call.
    fn scoped(self, scope: Scope) -> Scoped<Self> {
        Scoped::new(self, scope)
    }

    /// Stops any call that takes longer than `limit`.
    fn with_timeout(self, limit: Duration) -> Timeout<Self> {
        Timeout::new(self, limit)
    }

    /// The box as a shareable trait object.
    fn shared(self) -> Arc<dyn ToolBox> {
        Arc::new(self)
    }
}

impl<T: ToolBox + Sized + 'static> ToolBoxExt for T {}

/// One call, as a [`ToolHandler`] sees it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ToolEvent<'a> {
    /// The call's id (see [`CallContext::call_id`]).
    pub call_id: &'a str,
    /// The box that runs it.
    pub toolbox: &'a str,
    /// The function, as the box names it.
    pub function: &'a str,
    /// The arguments it was called with.
    pub args: &'a Map<String, Json>,
}

/// Observes calls: how tool activity reaches a user interface or a log. Every method has
/// an empty default.
pub trait ToolHandler: Send + Sync {
    /// A call starts.
    fn on_start(&self, _event: &ToolEvent<'_>) {}
    /// A call returned `result` after `elapsed`.
    fn on_success(&self, _event: &ToolEvent<'_>, _result: &Json, _elapsed: Duration) {}
    /// A call failed (or panicked) after `elapsed`.
    fn on_error(&self, _event: &ToolEvent<'_>, _error: &ToolError, _elapsed: Duration) {}
}

/// A shared handler, so one log can watch several boxes.
impl<T: ToolHandler + ?Sized> ToolHandler for Arc<T> {
    fn on_start(&self, event: &ToolEvent<'_>) {
        (**self).on_start(event);
    }

    fn on_success(&self, event: &ToolEvent<'_>, result: &Json, elapsed: Duration) {
        (**self).on_success(event, result, elapsed);
    }

    fn on_error(&self, event: &ToolEvent<'_>, error: &ToolError, elapsed: Duration) {
        (**self).on_error(event, error, elapsed);
    }
}

/// Notifies a [`ToolHandler`] on start, success and error of every call to the inner box.
/// A panic in the inner box is reported as an error and returned as one.
pub struct Hooked<B> {
    inner: B,
    handler: Arc<dyn ToolHandler>,
}

impl<B: ToolBox> Hooked<B> {
    /// Wraps `inner`.
    pub fn new(inner: B, handler: impl ToolHandler + 'static) -> Hooked<B> {
        Hooked {
            inner,
            handler: Arc::new(handler),
        }
    }

    /// The wrapped box.
    pub fn inner(&self) -> &B {
        &self.inner
    }
}

#[async_trait]
impl<B: ToolBox> ToolBox for Hooked<B> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn interfaces(&self, ctx: &CallContext) -> Vec<Interface> {
        self.inner.interfaces(ctx)
    }

    async fn call(
        &self,
        function: &str,
        args: Map<String, Json>,
        ctx: &CallContext,
    ) -> Result<Json, ToolError> {
        let seen = args.clone();
        let event = ToolEvent {
            call_id: &ctx.call_id,
            toolbox: self.inner.name(),
            function,
            args: &seen,
        };
        self.handler.on_start(&event);
        let started = Instant::now();
        let result = call_guarded(&self.inner, function, args, ctx).await;
        let elapsed = started.elapsed();
        match &result {
            Ok(value) => self.handler.on_success(&event, value, elapsed),
            Err(error) => self.handler.on_error(&event, error, elapsed),
        }
        result
    }

    async fn close(&self) -> Result<(), ToolError> {
        self.inner.close().await
    }

    fn build_errors(&self) -> Vec<BuildError> {
        self.inner.build_errors()
    }
}

/// The tool a call of `function` reaches: boxes may answer a name in another case
/// (`FnBox` and `McpBox` do, with Unicode case folding), so a wrapper that refuses tools
/// checks the tool such a name reaches, not the name as written.
fn reached<'a>(interfaces: &'a [Interface], function: &str) -> Option<&'a Interface> {
    interfaces.iter().find(|i| i.name == function).or_else(|| {
        interfaces
            .iter()
            .find(|i| UniCase::new(i.name.as_str()) == UniCase::new(function))
    })
}

type Condition = Arc<dyn Fn(&Interface, &CallContext) -> bool + Send + Sync>;

/// Offers a tool only when a condition holds in the call's context: a hidden tool is
/// neither listed (so it is not rendered) nor callable.
///
/// ```
/// use atfunc_tools::{CallContext, EmptyBox, ToolBox, ToolBoxExt};
///
/// struct Admin;
/// let tools = EmptyBox::new("admin").conditional(|_, ctx| ctx.get::<Admin>().is_some());
/// assert!(tools.interfaces(&CallContext::new()).is_empty());
/// ```
pub struct Conditional<B> {
    inner: B,
    condition: Condition,
}

impl<B: ToolBox> Conditional<B> {
    /// Wraps `inner`; `condition` sees each interface and the context.
    pub fn new<C>(inner: B, condition: C) -> Conditional<B>
    where
        C: Fn(&Interface, &CallContext) -> bool + Send + Sync + 'static,
    {
        Conditional {
            inner,
            condition: Arc::new(condition),
        }
    }
}

#[async_trait]
impl<B: ToolBox> ToolBox for Conditional<B> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn interfaces(&self, ctx: &CallContext) -> Vec<Interface> {
        self.inner
            .interfaces(ctx)
            .into_iter()
            .filter(|i| (self.condition)(i, ctx))
            .collect()
    }

    async fn call(
        &self,
        function: &str,
        args: Map<String, Json>,
        ctx: &CallContext,
    ) -> Result<Json, ToolError> {
        let all = self.inner.interfaces(ctx);
        match reached(&all, function) {
            Some(interface) if (self.condition)(interface, ctx) => {
                self.inner.call(function, args, ctx).await
            }
            Some(interface) => Err(ToolError::NotAvailable {
                name: qualified(self.inner.name(), &interface.name),
            }),
            None => self.inner.call(function, args, ctx).await,
        }
    }

    async fn close(&self) -> Result<(), ToolError> {
        self.inner.close().await
    }

    fn build_errors(&self) -> Vec<BuildError> {
        self.inner.build_errors()
    }
}

#[derive(Debug, Default)]
struct ScopeState {
    /// `None`: every tool not disabled.
    allowed: Option<BTreeSet<String>>,
    disabled: BTreeSet<String>,
}

/// Which tools may run, shared and changeable while a conversation goes on. Names are the
/// functions' names inside their box (`get_temp`), matched ignoring case.
///
/// Cloning gives another handle on the same scope.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    state: Arc<RwLock<ScopeState>>,
}

impl Scope {
    /// A scope that allows every tool.
    pub fn all() -> Scope {
        Scope::default()
    }

    /// A scope that allows only `names`.
    pub fn only<I, S>(names: I) -> Scope
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let scope = Scope::default();
        scope.allow_only(names);
        scope
    }

    /// From now on, allows only `names` (those disabled stay disabled).
    pub fn allow_only<I, S>(&self, names: I)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let set = names
            .into_iter()
            .map(|n| n.as_ref().to_lowercase())
            .collect();
        self.write(|state| state.allowed = Some(set));
    }

    /// From now on, allows every tool not disabled.
    pub fn allow_all(&self) {
        self.write(|state| state.allowed = None);
    }

    /// Refuses `name` from now on, even if the model saw it offered earlier.
    pub fn disable(&self, name: &str) {
        self.write(|state| {
            state.disabled.insert(name.to_lowercase());
        });
    }

    /// Lifts a [`Scope::disable`].
    pub fn enable(&self, name: &str) {
        self.write(|state| {
            state.disabled.remove(&name.to_lowercase());
        });
    }

    /// Whether `name` may run now.
    pub fn allows(&self, name: &str) -> bool {
        let key = name.to_lowercase();
        let state = self.state.read().unwrap_or_else(PoisonError::into_inner);
        !state.disabled.contains(&key) && state.allowed.as_ref().is_none_or(|a| a.contains(&key))
    }

    fn write(&self, change: impl FnOnce(&mut ScopeState)) {
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        change(&mut state);
    }
}

/// Enforces a [`Scope`] at dispatch: a tool outside it is refused when called, whatever
/// the model was shown before. Tools outside the scope are also left out of the listing,
/// so new prompts stop offering them.
pub struct Scoped<B> {
    inner: B,
    scope: Scope,
}

impl<B: ToolBox> Scoped<B> {
    /// Wraps `inner`.
    pub fn new(inner: B, scope: Scope) -> Scoped<B> {
        Scoped { inner, scope }
    }

    /// The scope handle, to change it later.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }
}

#[async_trait]
impl<B: ToolBox> ToolBox for Scoped<B> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn interfaces(&self, ctx: &CallContext) -> Vec<Interface> {
        self.inner
            .interfaces(ctx)
            .into_iter()
            .filter(|i| self.scope.allows(&i.name))
            .collect()
    }

    async fn call(
        &self,
        function: &str,
        args: Map<String, Json>,
        ctx: &CallContext,
    ) -> Result<Json, ToolError> {
        let all = self.inner.interfaces(ctx);
        let tool = reached(&all, function).map_or(function, |i| i.name.as_str());
        if !self.scope.allows(function) || !self.scope.allows(tool) {
            return Err(ToolError::NotAvailable {
                name: qualified(self.inner.name(), tool),
            });
        }
        self.inner.call(function, args, ctx).await
    }

    async fn close(&self) -> Result<(), ToolError> {
        self.inner.close().await
    }

    fn build_errors(&self) -> Vec<BuildError> {
        self.inner.build_errors()
    }
}

/// Stops a call to the inner box that takes longer than a limit; the call ends with
/// [`ToolError::Timeout`], which tells the model the limit.
pub struct Timeout<B> {
    inner: B,
    limit: Duration,
}

impl<B: ToolBox> Timeout<B> {
    /// Wraps `inner`.
    pub fn new(inner: B, limit: Duration) -> Timeout<B> {
        Timeout { inner, limit }
    }
}

#[async_trait]
impl<B: ToolBox> ToolBox for Timeout<B> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn interfaces(&self, ctx: &CallContext) -> Vec<Interface> {
        self.inner.interfaces(ctx)
    }

    async fn call(
        &self,
        function: &str,
        args: Map<String, Json>,
        ctx: &CallContext,
    ) -> Result<Json, ToolError> {
        match tokio::time::timeout(self.limit, self.inner.call(function, args, ctx)).await {
            Ok(result) => result,
            Err(_) => Err(ToolError::Timeout {
                name: qualified(self.inner.name(), function),
                limit: self.limit,
            }),
        }
    }

    async fn close(&self) -> Result<(), ToolError> {
        self.inner.close().await
    }

    fn build_errors(&self) -> Vec<BuildError> {
        self.inner.build_errors()
    }
}
