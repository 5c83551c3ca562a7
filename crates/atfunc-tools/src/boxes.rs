//! Building blocks: a box from closures, an empty box, and a box of boxes.

use super::args::Args;
use super::toolbox::{BuildError, CallContext, ToolBox, ToolError};
use async_trait::async_trait;
use atfunc::interface::Interface;
use futures::future::BoxFuture;
use serde_json::{Map, Value as Json};
use std::future::Future;
use std::sync::Arc;
use unicase::UniCase;

type Handler =
    Arc<dyn Fn(Args, CallContext) -> BoxFuture<'static, Result<Json, ToolError>> + Send + Sync>;

/// A tool box made of closures, each with its interface.
///
/// Every closure, synchronous or async, takes the same two things: the call's [`Args`]
/// (read them as Rust types with [`Args::get`] and [`Args::opt`]) and its [`CallContext`].
///
/// ```
/// use atfunc_tools::{CallContext, FnBox, ToolBox};
/// use atfunc::{Interface, Param, ParamType};
/// use serde_json::{json, Map};
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let math = FnBox::new("math").function(
///         Interface::new("scale").in_domain("math")
///             .describe("A number times a factor")
///             .param(Param::new("x", ParamType::Number).required())
///             .param(Param::new("factor", ParamType::Number)),
///         |args, _ctx| {
///             let x: f64 = args.get("x")?;
///             let factor = args.opt::<f64>("factor")?.unwrap_or(2.0);
///             Ok(json!(x * factor))
///         },
///     );
///     let mut args = Map::new();
///     args.insert("x".into(), json!(21));
///     // `factor` is optional and left out: no panic, the default applies.
///     assert_eq!(math.call("scale", args, &CallContext::new()).await, Ok(json!(42.0)));
/// }
/// ```
///
/// A synchronous closure runs on the caller's task: keep it short, or use
/// [`FnBox::async_function`] with `tokio::task::spawn_blocking` for heavy work (a
/// [`Timeout`](super::Timeout) cannot stop a closure that never yields).
#[derive(Clone)]
pub struct FnBox {
    name: String,
    tools: Vec<(Interface, Option<Handler>)>,
    // Off by default so a tool sees exactly the arguments the model chose.
    fill_defaults: bool,
}

impl std::fmt::Debug for FnBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnBox")
            .field("name", &self.name)
            .field(
                "functions",
                &self.tools.iter().map(|(i, _)| &i.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl FnBox {
    /// An empty box named `name`; add functions with the builder methods.
    pub fn new(name: impl Into<String>) -> FnBox {
        FnBox {
            name: name.into(),
            tools: Vec::new(),
            fill_defaults: false,
        }
    }

    /// Opts in to filling declared defaults: before a closure runs, every parameter the
    /// model left out that has a [`Param::default_value`](atfunc::interface::Param::default_value)
    /// is added to its arguments with that value, so the closure need not repeat the
    /// default. Without it (the default) a closure sees exactly what the model chose.
    pub fn apply_defaults(mut self) -> FnBox {
        self.fill_defaults = true;
        self
    }

    fn push(mut self, mut interface: Interface, handler: Option<Handler>) -> FnBox {
        // A box named "" holds root functions, which have no domain at all.
        if interface.domain.is_none() && !self.name.is_empty() {
            interface.domain = Some(self.name.clone());
        }
        self.tools.push((interface, handler));
        self
    }

    /// Adds a function answered by a synchronous closure. An interface without a domain
    /// gets the box's name as its domain.
    pub fn function<F>(self, interface: Interface, f: F) -> FnBox
    where
        F: Fn(Args, CallContext) -> Result<Json, ToolError> + Send + Sync + 'static,
    {
        let f = Arc::new(f);
        let handler: Handler = Arc::new(move |args, ctx| {
            let f = Arc::clone(&f);
            // Called inside the future so that a panic surfaces where the caller polls,
            // which is where the registry catches it.
            Box::pin(async move { f(args, ctx) })
        });
        self.push(interface, Some(handler))
    }

    /// Adds a function answered by an async closure. An interface without a domain gets
    /// the box's name as its domain.
    pub fn async_function<F, Fut>(self, interface: Interface, f: F) -> FnBox
    where
        F: Fn(Args, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Json, ToolError>> + Send + 'static,
    {
        let handler: Handler = Arc::new(move |args, ctx| Box::pin(f(args, ctx)));
        self.push(interface, Some(handler))
    }

    /// Declares a function with no implementation: it is offered and binds, and a call
    /// answers `function 'x.y' has no implementation`.
    pub fn declare(self, interface: Interface) -> FnBox {
        self.push(interface, None)
    }

    fn find(&self, function: &str) -> Option<&(Interface, Option<Handler>)> {
        self.tools
            .iter()
            .find(|(i, _)| i.name == function)
            .or_else(|| {
                self.tools
                    .iter()
                    .find(|(i, _)| UniCase::new(i.name.as_str()) == UniCase::new(function))
            })
    }
}

#[async_trait]
impl ToolBox for FnBox {
    fn name(&self) -> &str {
        &self.name
    }

    fn interfaces(&self, _ctx: &CallContext) -> Vec<Interface> {
        self.tools.iter().map(|(i, _)| i.clone()).collect()
    }

    async fn call(
        &self,
        function: &str,
        args: Map<String, Json>,
        ctx: &CallContext,
    ) -> Result<Json, ToolError> {
        match self.find(function) {
            Some((interface, Some(handler))) => {
                let mut args = args;
                if self.fill_defaults {
                    for param in &interface.params {
                        if let Some(default) = &param.default {
                            args.entry(param.name.clone())
                                .or_insert_with(|| default.clone());
                        }
                    }
                }
                handler(Args::new(interface.qualified_name(), args), ctx.clone()).await
            }
            Some((interface, None)) => Err(ToolError::NoImplementation {
                name: interface.qualified_name(),
            }),
            None => Err(unknown_in(
                function,
                self.tools.iter().map(|(i, _)| i.name.as_str()),
            )),
        }
    }
}

/// An unknown-function error naming the closest of `known`, when one is close.
pub(crate) fn unknown_in<'a>(function: &str, known: impl Iterator<Item = &'a str>) -> ToolError {
    let closest = atfunc::messages::closest(function, known).map(|(_, name)| name.to_owned());
    ToolError::UnknownFunction {
        name: function.to_owned(),
        closest,
        available: Vec::new(),
        more: 0,
    }
}

/// A box with no tools: the stand-in when a model should not call anything.
#[derive(Debug, Clone)]
pub struct EmptyBox {
    name: String,
}

impl EmptyBox {
    /// An empty box named `name`.
    pub fn new(name: impl Into<String>) -> EmptyBox {
        EmptyBox { name: name.into() }
    }
}

#[async_trait]
impl ToolBox for EmptyBox {
    fn name(&self) -> &str {
        &self.name
    }

    fn interfaces(&self, _ctx: &CallContext) -> Vec<Interface> {
        Vec::new()
    }

    async fn call(
        &self,
        function: &str,
        _args: Map<String, Json>,
        _ctx: &CallContext,
    ) -> Result<Json, ToolError> {
        Err(ToolError::unknown(function))
    }
}

/// Several named boxes offered as one.
///
/// Every function is offered under the multi box's name. By default a function keeps its
/// own name (`all.get_temp`), so two children must not offer the same name (registration
/// reports it). With [`MultiBox::flat_names`] each is offered as `{box}_{tool}`
/// (`all.weather_get_temp`, or `@weather_get_temp` when the multi box is the root), for
/// APIs that forbid dots and for children whose names clash; a call is routed back to the
/// owning child by that prefix. Closing the multi box closes every child.
#[derive(Clone)]
pub struct MultiBox {
    name: String,
    children: Vec<Arc<dyn ToolBox>>,
    flat: bool,
}

impl std::fmt::Debug for MultiBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiBox")
            .field("name", &self.name)
            .field(
                "children",
                &self.children.iter().map(|c| c.name()).collect::<Vec<_>>(),
            )
            .field("flat", &self.flat)
            .finish()
    }
}

impl MultiBox {
    /// An empty multi box named `name`.
    pub fn new(name: impl Into<String>) -> MultiBox {
        MultiBox {
            name: name.into(),
            children: Vec::new(),
            flat: false,
        }
    }

    /// Adds a child box (builder style).
    pub fn with(mut self, child: impl ToolBox + 'static) -> MultiBox {
        self.children.push(Arc::new(child));
        self
    }

    /// Adds a shared child box (builder style).
    pub fn with_shared(mut self, child: Arc<dyn ToolBox>) -> MultiBox {
        self.children.push(child);
        self
    }

    /// Offers each function as `{box}_{tool}` instead of merging the children's functions
    /// under their own names (builder style).
    pub fn flat_names(mut self) -> MultiBox {
        self.flat = true;
        self
    }

    /// The child boxes, in the order they were added.
    pub fn children(&self) -> &[Arc<dyn ToolBox>] {
        &self.children
    }

    /// The child that answers `function`, and the function's name inside it.
    fn route<'f>(
        &self,
        function: &'f str,
        ctx: &CallContext,
    ) -> Option<(&Arc<dyn ToolBox>, &'f str)> {
        let offers = |child: &Arc<dyn ToolBox>, name: &str| {
            child.interfaces(ctx).iter().any(|i| i.name == name)
        };
        if !self.flat {
            return self
                .children
                .iter()
                .find(|child| offers(child, function))
                .map(|child| (child, function));
        }
        // Child names may themselves contain `_` (`a` and `a_b`), so a prefix alone is
        // ambiguous; the child that actually offers the rest wins.
        let mut fallback = None;
        for child in &self.children {
            let Some(rest) = function
                .strip_prefix(child.name())
                .and_then(|rest| rest.strip_prefix('_'))
            else {
                continue;
            };
            if offers(child, rest) {
                return Some((child, rest));
            }
            fallback.get_or_insert((child, rest));
        }
        fallback
    }
}

#[async_trait]
impl ToolBox for MultiBox {
    fn name(&self) -> &str {
        &self.name
    }

    fn interfaces(&self, ctx: &CallContext) -> Vec<Interface> {
        let mut out = Vec::new();
        for child in &self.children {
            for mut interface in child.interfaces(ctx) {
                if self.flat {
                    interface.name = format!("{}_{}", child.name(), interface.name);
                }
                interface.domain = Some(self.name.clone());
                out.push(interface);
            }
        }
        out
    }

    async fn call(
        &self,
        function: &str,
        args: Map<String, Json>,
        ctx: &CallContext,
    ) -> Result<Json, ToolError> {
        match self.route(function, ctx) {
            Some((child, inner)) => child.call(inner, args, ctx).await,
            None => {
                let names: Vec<String> = self.interfaces(ctx).into_iter().map(|i| i.name).collect();
                Err(unknown_in(function, names.iter().map(String::as_str)))
            }
        }
    }

    async fn close(&self) -> Result<(), ToolError> {
        let mut first_error = None;
        for child in &self.children {
            if let Err(error) = child.close().await {
                first_error.get_or_insert(error);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn build_errors(&self) -> Vec<BuildError> {
        self.children
            .iter()
            .flat_map(|child| child.build_errors())
            .collect()
    }
}
