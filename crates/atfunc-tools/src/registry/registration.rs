//! Registration and lookup: the [`Registry`] itself, the tool boxes and control functions
//! it holds, how it is set up, and what it offers (the functions, their prompt, a function
//! by its path). Running calls, confirmation and statistics are in the files beside this
//! one; each answer runs against a [`Snapshot`] taken here.

use super::control::{names_list, ControlFunction, CONTROL_DOMAIN};
use super::outcome::BlockFormat;
use super::stats::Stats;
use super::turn::{Ledger, Snapshot, Target};
use super::view::{Settings, View};
use crate::confirm::Confirmer;
use crate::events::CallEvent;
use crate::toolbox::{BuildError, CallContext, ToolBox, ToolError};
use atfunc::bind::{ArgParser, BindError, Catalog, NameMatch};
use atfunc::format::{OutputFilter, DEFAULT_TRUNCATE_LENGTH};
use atfunc::interface::{validate_toolbox, Interface, ValidationErrors};
use atfunc::parse::{Bodies, ParserConfig};
use atfunc::render::{render_prompt, PromptOptions};
use serde_json::{Map, Value as Json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;
use unicase::UniCase;

/// Why a registration (or a change to the registry) was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// The box's interfaces are invalid; every problem is listed.
    #[error(transparent)]
    Validation(#[from] ValidationErrors),
    /// The box reported errors made while it was put together
    /// ([`ToolBox::build_errors`]): a typed tool whose arguments make no interface.
    #[error("tool box '{name}' was not built: {}", joined(errors))]
    Build {
        /// The box's name.
        name: String,
        /// Every error, in the order it was made; each keeps its type (a `TypedBox`'s are
        /// `typed::TypedError`s, see [`BuildError::downcast_ref`]).
        errors: Vec<BuildError>,
    },
    /// A box of that name (or, when names match ignoring case, of that name in another
    /// case) is registered already.
    #[error("a toolbox named '{name}' is registered already")]
    NameTaken {
        /// The name asked for.
        name: String,
    },
    /// The name is the control functions' domain, `tools`, while they are registered.
    #[error(
        "the name '{name}' is reserved for the control functions (@tools.get_functions(), ...); give the toolbox another name, or unregister the control functions first"
    )]
    Reserved {
        /// The name asked for.
        name: String,
    },
    /// No box of that name is registered.
    #[error("no toolbox named '{name}' is registered")]
    UnknownToolbox {
        /// The name asked for.
        name: String,
    },
    /// Neither a registered box nor a function of one.
    #[error("no toolbox or function named '{name}' is registered")]
    NotFound {
        /// The name asked for.
        name: String,
    },
    /// Not one of the control functions.
    #[error("'{name}' is not a control function; they are {}", names_list())]
    UnknownControlFunction {
        /// The name asked for.
        name: String,
    },
}

/// The errors' messages, `; ` between them.
fn joined(errors: &[BuildError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// A function found by its path.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundFunction {
    /// The box that offers it.
    pub toolbox: String,
    /// Its interface.
    pub interface: Interface,
}

/// How [`Registry::prompt`] writes the prompt: by default every function without a
/// separator line, the control functions left out.
///
/// ```
/// use atfunc_tools::{CallContext, Registry, RegistryPrompt};
///
/// let registry = Registry::new();
/// let options = RegistryPrompt::default().with_separators().with_control_functions();
/// let prompt = registry.prompt(&CallContext::new(), &options);
/// assert!(prompt.contains("@tools.get_toolboxes()"));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegistryPrompt {
    separators: bool,
    control_functions: bool,
    param_descriptions: bool,
}

impl RegistryPrompt {
    /// Draws a separator line under each function.
    pub fn with_separators(mut self) -> Self {
        self.separators = true;
        self
    }

    /// Lists the registered control functions (`tools.*`) among the functions. They are
    /// left out by default, as in `atfunc render` and the gateway: the control functions
    /// are answered whenever they are registered, and listed only when this is chosen (or
    /// when [`Registry::set_control_functions_listed`] lists them in every prompt).
    pub fn with_control_functions(mut self) -> Self {
        self.control_functions = true;
        self
    }

    /// Lists each described parameter under its function
    /// ([`PromptOptions::param_descriptions`]).
    pub fn with_param_descriptions(mut self) -> Self {
        self.param_descriptions = true;
        self
    }
}

/// What needs the user's confirmation ([`Registry::require_confirmation`]).
#[derive(Debug, Clone)]
pub(super) enum ConfirmRule {
    /// Every function of the box of that name.
    Toolbox(String),
    /// The function of that qualified name, as defined.
    Function(String),
}

pub(super) struct State {
    /// How function and box names match.
    names: NameMatch,
    pub(super) boxes: Vec<Arc<dyn ToolBox>>,
    root: Option<String>,
    /// Enabled control functions, in [`ControlFunction::ALL`] order.
    control: Vec<ControlFunction>,
    /// Whether the control functions are shown to the model: listed in every prompt and
    /// named by unknown-function errors ([`Registry::set_control_functions_listed`]).
    control_listed: bool,
    pub(super) filters: Vec<OutputFilter>,
    concurrency: usize,
    timeout: Option<Duration>,
    parser: ParserConfig,
    /// Parameters' own parsers ([`Registry::set_parser`]): function, parameter, parser.
    parsers: Vec<(String, String, ArgParser)>,
    /// What needs the user's confirmation.
    pub(super) confirm: Vec<ConfirmRule>,
    pub(super) confirmer: Option<Arc<dyn Confirmer>>,
}

/// The tool manager: registered tool boxes, the control functions, statistics, and the
/// execution of the calls in a model's answer.
///
/// Every method takes `&self`, so one registry can be shared (in an `Arc`) by concurrent
/// conversations; its locks are never held while a tool runs.
///
/// ```
/// use atfunc_tools::{FnBox, Registry};
/// use atfunc::{Interface, Param, ParamType};
/// use serde_json::json;
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let registry = Registry::new();
///     registry.register(FnBox::new("weather").function(
///         Interface::new("get_temp").in_domain("weather")
///             .describe("Current temperature of a city")
///             .param(Param::new("location", ParamType::String).required().describe("City")),
///         |_args, _ctx| Ok(json!({"temp": 21})),
///     )).unwrap();
///
///     let report = registry.execute_response(r#"Let me check. @weather.get_temp("Paris")"#).await;
///     assert_eq!(report.output, "Function call: weather.get_temp(\"Paris\")\nReturned: {\"temp\":21}\n");
/// }
/// ```
pub struct Registry {
    state: RwLock<State>,
    truncate: AtomicUsize,
    /// What the registry shares with every stream made from it: statistics, call ids, held
    /// calls, the event hook.
    pub(super) ledger: Arc<Ledger>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("toolboxes", &self.toolboxes())
            .field("root", &self.root())
            .field("truncate_length", &self.truncate_length())
            .finish()
    }
}

impl Registry {
    /// An empty registry with names matched ignoring case (`@Weather.Get_Temp` finds
    /// `weather.get_temp`), the control functions registered, results cut at
    /// [`DEFAULT_TRUNCATE_LENGTH`] characters, calls run one after another.
    pub fn new() -> Registry {
        Registry::with_name_match(NameMatch::IgnoreCase)
    }

    /// An empty registry whose function and box names match as `names` says:
    /// [`NameMatch::ExactCase`] for names written exactly, as in the reference library.
    pub fn with_name_match(names: NameMatch) -> Registry {
        Registry {
            state: RwLock::new(State {
                names,
                boxes: Vec::new(),
                root: None,
                control: ControlFunction::ALL.to_vec(),
                control_listed: false,
                filters: Vec::new(),
                concurrency: 1,
                timeout: None,
                parser: ParserConfig::default(),
                parsers: Vec::new(),
                confirm: Vec::new(),
                confirmer: None,
            }),
            truncate: AtomicUsize::new(DEFAULT_TRUNCATE_LENGTH),
            ledger: Arc::new(Ledger::default()),
        }
    }

    pub(super) fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn same_name(state: &State, a: &str, b: &str) -> bool {
        if state.names == NameMatch::ExactCase {
            a == b
        } else {
            UniCase::new(a) == UniCase::new(b)
        }
    }

    /// Registers a tool box, after validating its interfaces (as offered in an empty
    /// context). Every problem is reported at once.
    pub fn register(&self, tool_box: impl ToolBox + 'static) -> Result<(), RegisterError> {
        self.register_shared(Arc::new(tool_box))
    }

    /// Registers a shared tool box; see [`Registry::register`].
    pub fn register_shared(&self, tool_box: Arc<dyn ToolBox>) -> Result<(), RegisterError> {
        let name = tool_box.name().to_owned();
        let errors = tool_box.build_errors();
        if !errors.is_empty() {
            return Err(RegisterError::Build { name, errors });
        }
        validate_toolbox(&name, &tool_box.interfaces(&CallContext::new()))?;
        let mut state = self.write();
        if !state.control.is_empty() && Self::same_name(&state, &name, CONTROL_DOMAIN) {
            return Err(RegisterError::Reserved { name });
        }
        if state
            .boxes
            .iter()
            .any(|b| Self::same_name(&state, b.name(), &name))
        {
            return Err(RegisterError::NameTaken { name });
        }
        state.boxes.push(tool_box);
        Ok(())
    }

    /// Removes a tool box and hands it back (it is not closed). Clears the root if it was
    /// the root.
    pub fn unregister(&self, name: &str) -> Option<Arc<dyn ToolBox>> {
        let mut state = self.write();
        let position = state
            .boxes
            .iter()
            .position(|b| Self::same_name(&state, b.name(), name))?;
        let removed = state.boxes.remove(position);
        if state
            .root
            .as_deref()
            .is_some_and(|root| Self::same_name(&state, root, removed.name()))
        {
            state.root = None;
        }
        Some(removed)
    }

    /// Makes the functions of the box `name` callable without a prefix (`@get_temp(...)`).
    pub fn set_root(&self, name: &str) -> Result<(), RegisterError> {
        let mut state = self.write();
        let found = state
            .boxes
            .iter()
            .find(|b| Self::same_name(&state, b.name(), name))
            .map(|b| b.name().to_owned());
        match found {
            Some(name) => {
                state.root = Some(name);
                Ok(())
            }
            None => Err(RegisterError::UnknownToolbox {
                name: name.to_owned(),
            }),
        }
    }

    /// No root box from now on.
    pub fn clear_root(&self) {
        self.write().root = None;
    }

    /// The root box's name.
    pub fn root(&self) -> Option<String> {
        self.read().root.clone()
    }

    /// The registered boxes' names, in registration order; `tools` last while any control
    /// function is registered.
    pub fn toolboxes(&self) -> Vec<String> {
        let state = self.read();
        let mut names: Vec<String> = state.boxes.iter().map(|b| b.name().to_owned()).collect();
        if !state.control.is_empty() {
            names.push(CONTROL_DOMAIN.to_owned());
        }
        names
    }

    /// The qualified names of every function offered in `ctx`, control functions included,
    /// in registration order.
    ///
    /// ```
    /// use atfunc_tools::{CallContext, FnBox, Registry};
    /// use atfunc::Interface;
    ///
    /// let registry = Registry::new();
    /// registry.register(FnBox::new("clock").declare(Interface::new("now"))).unwrap();
    /// let ctx = CallContext::new();
    /// assert!(registry.functions(&ctx).contains(&"clock.now".to_owned()));
    /// assert_eq!(registry.toolbox_functions("Clock", &ctx), Some(vec!["clock.now".to_owned()]));
    /// assert_eq!(registry.toolbox_functions("calendar", &ctx), None);
    /// ```
    pub fn functions(&self, ctx: &CallContext) -> Vec<String> {
        self.snapshot(ctx)
            .view
            .function_names(None)
            .unwrap_or_default()
    }

    /// The qualified names of the functions of the box `toolbox` offered in `ctx`; `None`
    /// for a box that is not registered.
    pub fn toolbox_functions(&self, toolbox: &str, ctx: &CallContext) -> Option<Vec<String>> {
        self.snapshot(ctx).view.function_names(Some(toolbox))
    }

    /// Every interface offered in `ctx`, control functions included, in registration order.
    pub fn interfaces(&self, ctx: &CallContext) -> Vec<Interface> {
        self.snapshot(ctx).view.catalog().interfaces().to_vec()
    }

    /// The catalog calls bind against in `ctx`: every interface offered, control
    /// functions included, with the registry's root and case setting.
    #[doc(hidden)]
    pub fn catalog(&self, ctx: &CallContext) -> Catalog {
        self.snapshot(ctx).view.catalog().clone()
    }

    /// The whole prompt text for the functions offered in `ctx`: the preamble that
    /// teaches the call syntax, then every function (root functions without a prefix).
    /// The control functions are listed only when `options` says so, or when
    /// [`Registry::set_control_functions_listed`] lists them.
    pub fn prompt(&self, ctx: &CallContext, options: &RegistryPrompt) -> String {
        let control_listed = options.control_functions || self.read().control_listed;
        let snapshot = self.snapshot(ctx);
        let catalog = snapshot.view.catalog();
        let render = PromptOptions::default()
            .with_root(catalog.root())
            .with_separator(options.separators)
            .with_param_descriptions(options.param_descriptions);
        let shown: Vec<Interface> = catalog
            .interfaces()
            .iter()
            .zip(&snapshot.targets)
            .filter(|(_, target)| control_listed || !matches!(target, Target::Control(_)))
            .map(|(interface, _)| interface.clone())
            .collect();
        render_prompt(&shown, &render)
    }

    /// Finds a function by path (`fn` for the root box, or `box.fn`), as offered in an
    /// empty context; case-insensitive under atfunc.
    pub fn find(&self, path: &str) -> Option<FoundFunction> {
        self.find_with(path, &CallContext::new())
    }

    /// [`Registry::find`] as offered in `ctx`.
    pub fn find_with(&self, path: &str, ctx: &CallContext) -> Option<FoundFunction> {
        let view = self.snapshot(ctx).view;
        let (index, interface) = view.catalog().find(path).ok()?;
        Some(FoundFunction {
            toolbox: view.owner(index)?.to_owned(),
            interface: interface.clone(),
        })
    }

    /// The length results are cut at, in characters, when a conversation starts.
    pub fn truncate_length(&self) -> usize {
        self.truncate.load(Ordering::Relaxed)
    }

    /// Cuts results at `length` characters (at least 1) in conversations started from now
    /// on. A model's `@tools.set_truncate_length(n)` changes only its own conversation.
    pub fn set_truncate_length(&self, length: usize) {
        self.truncate.store(length.max(1), Ordering::Relaxed);
    }

    /// Adds an output filter; filters run in the order they were added, before
    /// truncation, on the results of calls in a model's answer.
    pub fn add_output_filter<F>(&self, filter: F)
    where
        F: Fn(&str, &Map<String, Json>, &str) -> Option<String> + Send + Sync + 'static,
    {
        self.write().filters.push(Arc::new(filter));
    }

    /// Removes every output filter.
    pub fn clear_output_filters(&self) {
        self.write().filters.clear();
    }

    /// Runs up to `n` calls of one answer at once (1, the default: one after another).
    /// Results are reported in the order the calls appear either way. Use it only when the
    /// calls of an answer do not depend on each other.
    pub fn set_concurrency(&self, n: usize) {
        self.write().concurrency = n.max(1);
    }

    /// Gives a parameter of a registered function its own parser, run when a call binds:
    /// see [`Catalog::set_parser`] for what it gets, returns and when it runs. An unknown
    /// function or parameter is the [`BindError`] a call naming it would get. The parser
    /// stays with the name: it applies while a function of that name is registered.
    ///
    /// ```
    /// use atfunc_tools::{FnBox, Registry};
    /// use atfunc::{json, Interface, Param, ParamType};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let registry = Registry::new();
    /// registry.register(FnBox::new("shop").function(
    ///     Interface::new("order").in_domain("shop")
    ///         .param(Param::new("size", ParamType::String).choices(["S", "M", "L"])),
    ///     |args, _| Ok(json!(args.get::<String>("size")?)),
    /// )).unwrap();
    /// registry.set_parser("shop.order", "size", |value| {
    ///     Ok(json!(value.as_str().unwrap_or_default().to_uppercase()))
    /// }).unwrap();
    /// assert_eq!(registry.call("shop.order", json!({"size": "m"})).await.unwrap(), json!("M"));
    /// # });
    /// ```
    pub fn set_parser(
        &self,
        function: &str,
        param: &str,
        parser: impl Fn(Json) -> Result<Json, String> + Send + Sync + 'static,
    ) -> Result<(), BindError> {
        let parser: ArgParser = Arc::new(parser);
        // Checked against what is registered now, as a call would be.
        let mut catalog = self.snapshot(&CallContext::new()).view.catalog().clone();
        let check = Arc::clone(&parser);
        catalog.set_parser(function, param, move |value| check(value))?;
        let mut state = self.write();
        state
            .parsers
            .retain(|(f, p, _)| (f.as_str(), p.as_str()) != (function, param));
        state
            .parsers
            .push((function.to_owned(), param.to_owned(), parser));
        Ok(())
    }

    pub(super) fn needs_confirmation(state: &State, toolbox: &str, interface: &Interface) -> bool {
        state.confirm.iter().any(|rule| match rule {
            ConfirmRule::Toolbox(name) => Self::same_name(state, name, toolbox),
            ConfirmRule::Function(name) => *name == interface.original_qualified_name(),
        })
    }

    /// Stops any call that takes longer than `limit` (`None`, the default: no limit).
    pub fn set_call_timeout(&self, limit: Option<Duration>) {
        self.write().timeout = limit;
    }

    /// The parser limits and options used on answers. Left at [`Bodies::Any`], `bodies` is
    /// narrowed for each answer to the functions registered then that take a body, so a
    /// call to any other is run as soon as its `)` is read; set it to choose otherwise.
    pub fn set_parser_config(&self, config: ParserConfig) {
        self.write().parser = config;
    }

    /// The parser options a stream made now would use (see
    /// [`set_parser_config`](Self::set_parser_config)): for a reader that must split an
    /// answer into text and calls exactly as the registry does.
    pub fn parser_config(&self) -> ParserConfig {
        self.parser_config_for(&self.snapshot(&CallContext::new()))
    }

    pub(super) fn parser_config_for(&self, snapshot: &Snapshot) -> ParserConfig {
        let mut config = self.read().parser.clone();
        let catalog = snapshot.view.catalog();
        if config.bodies == Bodies::Any {
            config.bodies = catalog.bodies();
        }
        // Another model's format may write a call as bare JSON naming a tool.
        if config.offered.is_none() {
            config = config.offering(catalog.interfaces(), catalog.root());
        }
        config
    }

    /// Registers every control function (the default).
    pub fn register_control_functions(&self) -> Result<(), RegisterError> {
        for function in ControlFunction::ALL {
            self.register_control_function(function.name())?;
        }
        Ok(())
    }

    /// Whether the model is shown the registered control functions: when `true`, they are
    /// listed in every [`Registry::prompt`] and an unknown-function error may name them
    /// (`did you mean 'tools.get_functions'?`, or among the available functions). Default
    /// `false`: a model offered four tools is told of those four. Listed or not, they are
    /// answered while registered.
    ///
    /// ```
    /// use atfunc::Interface;
    /// use atfunc_tools::{CallContext, FnBox, Registry, RegistryPrompt};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let registry = Registry::new();
    /// registry.register(FnBox::new("clock").declare(Interface::new("now"))).unwrap();
    /// let error = |report: atfunc_tools::ExecutionReport| report.calls[0].result.clone().unwrap_err().to_string();
    /// let unknown = error(registry.execute_response("@clock.later()").await);
    /// assert!(unknown.ends_with("available functions are 'clock.now'"), "{unknown}");
    ///
    /// registry.set_control_functions_listed(true);
    /// let unknown = error(registry.execute_response("@clock.later()").await);
    /// assert!(unknown.contains("'clock.now', 'tools.get_toolboxes'"), "{unknown}");
    /// let prompt = registry.prompt(&CallContext::new(), &RegistryPrompt::default());
    /// assert!(prompt.contains("@tools.get_functions("));
    /// # });
    /// ```
    pub fn set_control_functions_listed(&self, listed: bool) {
        self.write().control_listed = listed;
    }

    /// Removes every control function.
    pub fn unregister_control_functions(&self) {
        self.write().control.clear();
    }

    /// Registers one control function, by name (`get_toolboxes` or
    /// `tools.get_toolboxes`).
    pub fn register_control_function(&self, name: &str) -> Result<(), RegisterError> {
        let function = ControlFunction::from_name(name).ok_or_else(|| {
            RegisterError::UnknownControlFunction {
                name: name.to_owned(),
            }
        })?;
        let mut state = self.write();
        if state
            .boxes
            .iter()
            .any(|b| Self::same_name(&state, b.name(), CONTROL_DOMAIN))
        {
            return Err(RegisterError::NameTaken {
                name: CONTROL_DOMAIN.to_owned(),
            });
        }
        if !state.control.contains(&function) {
            state.control.push(function);
            state.control.sort();
        }
        Ok(())
    }

    /// Removes one control function, by name. Whether it was registered.
    pub fn unregister_control_function(&self, name: &str) -> bool {
        let Some(function) = ControlFunction::from_name(name) else {
            return false;
        };
        let mut state = self.write();
        let before = state.control.len();
        state.control.retain(|f| *f != function);
        state.control.len() != before
    }

    /// The statistics so far.
    pub fn stats(&self) -> Stats {
        self.ledger.stats.get()
    }

    /// Sets every count back to zero.
    pub fn reset_stats(&self) {
        self.ledger.stats.reset();
    }

    /// Closes every registered box (they stay registered). Every box is closed even when
    /// one fails; the first failure is returned.
    pub async fn close(&self) -> Result<(), ToolError> {
        let boxes = self.read().boxes.clone();
        let mut first_error = None;
        for tool_box in boxes {
            if let Err(error) = tool_box.close().await {
                first_error.get_or_insert(error);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The settings a conversation starts with.
    pub fn settings(&self) -> Settings {
        Settings {
            truncate_length: self.truncate_length(),
        }
    }

    pub(super) fn snapshot(&self, ctx: &CallContext) -> Snapshot {
        let state = self.read();
        let mut interfaces = Vec::new();
        let mut targets = Vec::new();
        let mut owners = Vec::new();
        let mut confirm = Vec::new();
        for (owner, tool_box) in state.boxes.iter().enumerate() {
            for interface in tool_box.interfaces(ctx) {
                owners.push(owner);
                confirm.push(Self::needs_confirmation(
                    &state,
                    tool_box.name(),
                    &interface,
                ));
                targets.push(Target::Box(Arc::clone(tool_box), interface.name.clone()));
                interfaces.push(interface);
            }
        }
        let mut catalog = Catalog::new(interfaces).matching(state.names);
        for function in &state.control {
            // `tools`, named after the boxes.
            owners.push(state.boxes.len());
            // Callable either way; named to the model only when the user lists them.
            if state.control_listed {
                catalog.push(function.interface());
            } else {
                catalog.push_unlisted(function.interface());
            }
            targets.push(Target::Control(*function));
            confirm.push(false);
        }
        let mut toolbox_names: Vec<String> =
            state.boxes.iter().map(|b| b.name().to_owned()).collect();
        if !state.control.is_empty() {
            toolbox_names.push(CONTROL_DOMAIN.to_owned());
        }
        if let Some(root) = &state.root {
            catalog = catalog.with_root(root.clone());
        }
        for (function, param, parser) in &state.parsers {
            let parser = Arc::clone(parser);
            // A parser whose function is not registered now waits for it to come back.
            let _ = catalog.set_parser(function, param, move |value| parser(value));
        }
        Snapshot {
            view: View::new(catalog, toolbox_names, owners),
            targets,
            confirm,
            confirmer: state.confirmer.clone(),
            format: BlockFormat {
                filters: state.filters.clone(),
            },
            concurrency: state.concurrency,
            timeout: state.timeout,
        }
    }

    /// Calls `hook` with every call's events: `start` when a call begins, then `success` or
    /// `error` (with its duration and, for an error, the text the model is given). Calls
    /// refused before they run (an unknown function, arguments that do not bind, an
    /// unreadable call) get their `start` and `error` too. Replaces an earlier hook. The
    /// hook runs on the task running the call: keep it quick (send to a channel to do more).
    ///
    /// ```
    /// use atfunc_tools::{CallEventKind, Registry};
    /// use std::sync::{Arc, Mutex};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let registry = Registry::new();
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let sink = Arc::clone(&seen);
    /// registry.on_event(move |event| sink.lock().unwrap().push(event.clone()));
    /// registry.execute_response("@nothing.here()").await;
    /// let seen = seen.lock().unwrap();
    /// let kinds: Vec<CallEventKind> = seen.iter().map(|e| e.event).collect();
    /// assert_eq!(kinds, [CallEventKind::Start, CallEventKind::Error]);
    /// assert_eq!(seen[1].name, "nothing.here");
    /// # });
    /// ```
    pub fn on_event(&self, hook: impl Fn(&CallEvent) + Send + Sync + 'static) {
        self.ledger.set_event_hook(Some(Arc::new(hook)));
    }

    /// Stops calling the event hook.
    pub fn clear_event_hook(&self) {
        self.ledger.set_event_hook(None);
    }
}
