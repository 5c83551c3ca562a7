//! The registry: the tool boxes a model may call, and running the calls it writes.

mod control;
mod stream;

pub use control::{ControlFunction, CONTROL_DOMAIN};
pub use stream::{Outcomes, ResponseStream, StreamEnd};

use super::confirm::{
    self, ConfirmError, Confirmer, Decision, Held, HeldCall, HeldCalls, HoldLimits,
};
use super::elements::ToolOutput;
use super::events::{CallEvent, CallEventHook, CallWatch};
use super::toolbox::{CallContext, ToolBox, ToolError};
use super::wrappers::call_guarded;
use crate::bind::{bind, ArgParser, BindError, BoundCall, Catalog};
use crate::format::{
    self, apply_filters, result_text, truncate_text, truncate_value, CallRecord, OutputFilter,
    DEFAULT_TRUNCATE_LENGTH,
};
use crate::interface::{validate_toolbox, Interface, ValidationErrors};
use crate::parse::{Bodies, Call, ParserConfig, Span, StreamParser, Value};
use crate::render::{render_prompt, PromptOptions};
use crate::translator::{Atfunc, Translator};
use serde::Serialize;
use serde_json::{Map, Value as Json};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;
use unicase::UniCase;

/// The fewest characters of an error message a result block keeps, whatever the truncate
/// length: an error cut short cannot tell the model how to fix its call.
pub const ERROR_TEXT_FLOOR: usize = 1000;

/// The longest call text shown in a result block, in characters: a call with a huge
/// argument is not echoed back whole.
const CALL_TEXT_LIMIT: usize = 500;

/// Why a registration (or a change to the registry) was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// The box's interfaces are invalid; every problem is listed.
    #[error(transparent)]
    Validation(#[from] ValidationErrors),
    /// The box reported errors made while it was put together
    /// ([`ToolBox::build_errors`]): a typed tool whose arguments make no interface.
    #[error("tool box '{name}' was not built: {}", errors.join("; "))]
    Build {
        /// The box's name.
        name: String,
        /// Every error, in the order it was made.
        errors: Vec<String>,
    },
    /// A box of that name (or, for a case-insensitive translator, of that name in another
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
    #[error(
        "'{name}' is not a control function; they are {}",
        control::names_list()
    )]
    UnknownControlFunction {
        /// The name asked for.
        name: String,
    },
}

/// Call counts since the registry was made or its statistics were reset.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Every call handled, refused ones included (one per result block).
    pub calls: u64,
    /// Calls that ended in an error, refused ones included.
    pub errors: u64,
    /// Calls refused before they reached a box: unknown function, arguments that do not
    /// bind, text that is not a call.
    pub refused: u64,
    /// Calls per tool box (`tools` for the control functions).
    pub toolboxes: BTreeMap<String, u64>,
    /// Calls and errors per function, by qualified name.
    pub functions: BTreeMap<String, FunctionStats>,
}

/// The counts of one function.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct FunctionStats {
    /// Calls that reached it.
    pub calls: u64,
    /// Of those, the ones that ended in an error.
    pub errors: u64,
}

/// A function found by its path.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundFunction {
    /// The box that offers it.
    pub toolbox: String,
    /// Its interface.
    pub interface: Interface,
}

/// One call of a model's answer, executed (or refused), with its result block.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The call's id (`call_1`, ...), as hooks and recordings saw it.
    pub call_id: String,
    /// The qualified name as the interface spells it when the call bound; else the name
    /// as written.
    pub name: String,
    /// The call as parsed; `None` for text that looked like a call but could not be read.
    pub call: Option<Call>,
    /// The bound arguments; `None` when the call did not bind.
    pub args: Option<Map<String, Json>>,
    /// What the call returned (after the output filters, before truncation), or why it
    /// failed: the same [`ToolError`] that [`Registry::call`] returns (a call that does not
    /// bind is [`ToolError::Bind`], text that cannot be read [`ToolError::Unreadable`]).
    pub result: Result<Json, ToolError>,
    /// What the result block shows: the call text and the truncated result.
    pub record: CallRecord,
    /// The result block, as the translator formats it.
    pub block: String,
    /// Where the call stands in the model's answer.
    pub span: Span,
    /// The truncate length in force when the call ran.
    pub truncate_length: usize,
    /// What the call showed the client beside its result, which the block leaves out (see
    /// [`CallContext::add_element`]); empty for most calls.
    pub elements: Vec<Json>,
    /// The id the call waits under when it was held for the user's confirmation instead
    /// of running (its result is then [`held_result`](super::held_result)).
    pub confirmation_id: Option<String>,
}

impl Outcome {
    /// Whether the call ended in an error.
    pub fn is_error(&self) -> bool {
        self.result.is_err()
    }

    /// The outcome as JSON for APIs: `{"name", "args", "result"}` or `{"name", "args",
    /// "error"}`, a result too long for the truncate length in the fitted form of
    /// [`fit_json`](crate::format::fit_json), an error cut as in the block (never below
    /// [`ERROR_TEXT_FLOOR`] characters), then `"elements"` whole, only when the call has
    /// any.
    pub fn to_json(&self) -> Json {
        let mut map = Map::new();
        map.insert("name".into(), Json::String(self.name.clone()));
        map.insert(
            "args".into(),
            self.args.clone().map_or(Json::Null, Json::Object),
        );
        match &self.result {
            Ok(value) => map.insert(
                "result".into(),
                format::fit_json(value, self.truncate_length),
            ),
            // As in the block: an error is not cut below ERROR_TEXT_FLOOR characters.
            Err(error) => map.insert(
                "error".into(),
                Json::String(
                    truncate_text(
                        &error.to_string(),
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

/// What a model may change about how its results come back, kept per conversation.
///
/// A model's `@tools.set_truncate_length(n)` changes the settings of the answer it is
/// writing (and, when the caller carries them on with [`ResponseStream::with_settings`],
/// of its later answers), never the [`Registry`]'s defaults that every other conversation
/// starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The length results are cut at, in characters (at least 1).
    pub truncate_length: usize,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            truncate_length: DEFAULT_TRUNCATE_LENGTH,
        }
    }
}

/// One conversation's settings while its answer runs; calls of one answer may run at once,
/// so the settings are shared between them.
pub(super) struct Conversation {
    truncate: AtomicUsize,
}

impl Conversation {
    fn new(settings: &Settings) -> Conversation {
        Conversation {
            truncate: AtomicUsize::new(settings.truncate_length.max(1)),
        }
    }

    pub(super) fn settings(&self) -> Settings {
        Settings {
            truncate_length: self.truncate_length(),
        }
    }

    pub(super) fn truncate_length(&self) -> usize {
        self.truncate.load(Ordering::Relaxed)
    }

    /// What `tools.set_truncate_length` changes.
    pub(super) fn set_truncate_length(&self, length: usize) {
        self.truncate.store(length.max(1), Ordering::Relaxed);
    }
}

/// How [`Registry::prompt`] writes the prompt.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegistryPrompt {
    /// Draw a separator line under each function.
    pub separator: bool,
    /// List the registered control functions (`tools.*`) among the functions. Off by
    /// default, as in `atfunc render` and the gateway: the control functions are answered
    /// whenever they are registered, and listed only when this is chosen.
    pub control_functions: bool,
}

/// How [`Registry::call_with`] runs a call.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Cut the result at this many characters; `None`, the default: the registry's
    /// [`truncate_length`](Registry::truncate_length).
    pub truncate_length: Option<usize>,
    /// The context the call runs in. An empty `call_id` is replaced by a fresh one.
    pub ctx: CallContext,
}

/// Everything a model's answer asked for, executed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExecutionReport {
    /// The result blocks, in the order the calls appear.
    pub output: String,
    /// How many blocks `output` holds: every call, refused ones included.
    pub call_count: usize,
    /// Each call's outcome, in order.
    pub calls: Vec<Outcome>,
    /// The conversation's settings at the end of the answer: pass them to
    /// [`ResponseStream::with_settings`] to carry a model's changes on to its next answer.
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

/// What needs the user's confirmation ([`Registry::require_confirmation`]).
#[derive(Debug, Clone)]
enum ConfirmRule {
    /// Every function of the box of that name.
    Toolbox(String),
    /// The function of that qualified name, as defined.
    Function(String),
}

/// What a registry can call: a function of a box, or one of its own control functions.
#[derive(Clone)]
enum Target {
    Box(Arc<dyn ToolBox>, String),
    Control(ControlFunction),
}

/// The registry as one answer sees it: the catalog to bind against and where each of its
/// interfaces leads. Taken once per answer so every call of it binds against the same set.
pub(super) struct Snapshot {
    catalog: Catalog,
    /// Registered boxes, then `tools` while a control function is registered.
    toolbox_names: Vec<String>,
    case_sensitive: bool,
    /// Parallel to `catalog.interfaces()`.
    targets: Vec<Target>,
    /// Parallel to `targets`: whether a call needs the user's confirmation.
    confirm: Vec<bool>,
    confirmer: Option<Arc<dyn Confirmer>>,
    filters: Vec<OutputFilter>,
    /// How many calls of one answer run at once.
    pub(super) concurrency: usize,
    timeout: Option<Duration>,
    translator: Arc<dyn Translator>,
}

struct State {
    translator: Arc<dyn Translator>,
    boxes: Vec<Arc<dyn ToolBox>>,
    root: Option<String>,
    /// Enabled control functions, in [`ControlFunction::ALL`] order.
    control: Vec<ControlFunction>,
    filters: Vec<OutputFilter>,
    concurrency: usize,
    timeout: Option<Duration>,
    parser: ParserConfig,
    /// Sees every call's events ([`Registry::on_event`]).
    events: Option<CallEventHook>,
    /// Parameters' own parsers ([`Registry::set_parser`]): function, parameter, parser.
    parsers: Vec<(String, String, ArgParser)>,
    /// What needs the user's confirmation.
    confirm: Vec<ConfirmRule>,
    confirmer: Option<Arc<dyn Confirmer>>,
}

/// The tool manager: registered tool boxes, the control functions, statistics, and the
/// execution of the calls in a model's answer.
///
/// Every method takes `&self`, so one registry can be shared (in an `Arc`) by concurrent
/// conversations; its locks are never held while a tool runs.
///
/// ```
/// use atfunc::execute::{FnBox, Registry};
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
    stats: Mutex<Stats>,
    truncate: AtomicUsize,
    next_id: AtomicU64,
    /// Calls waiting for the user's confirmation.
    held: Mutex<HeldCalls>,
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
    /// An empty registry with the atfunc translator (case-insensitive names), the control
    /// functions registered, results cut at [`DEFAULT_TRUNCATE_LENGTH`] characters, calls
    /// run one after another.
    pub fn new() -> Registry {
        Registry::with_translator(Arc::new(Atfunc))
    }

    /// An empty registry with another translator: its case sensitivity decides how names
    /// match, and it formats the result blocks.
    pub fn with_translator(translator: Arc<dyn Translator>) -> Registry {
        Registry {
            state: RwLock::new(State {
                translator,
                boxes: Vec::new(),
                root: None,
                control: ControlFunction::ALL.to_vec(),
                filters: Vec::new(),
                concurrency: 1,
                timeout: None,
                parser: ParserConfig::default(),
                events: None,
                parsers: Vec::new(),
                confirm: Vec::new(),
                confirmer: None,
            }),
            stats: Mutex::new(Stats::default()),
            truncate: AtomicUsize::new(DEFAULT_TRUNCATE_LENGTH),
            next_id: AtomicU64::new(1),
            held: Mutex::new(HeldCalls::default()),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn same_name(state: &State, a: &str, b: &str) -> bool {
        if state.translator.case_sensitive() {
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
    /// use atfunc::execute::{CallContext, FnBox, Registry};
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
        self.snapshot(ctx).function_names(None).unwrap_or_default()
    }

    /// The qualified names of the functions of the box `toolbox` offered in `ctx`; `None`
    /// for a box that is not registered.
    pub fn toolbox_functions(&self, toolbox: &str, ctx: &CallContext) -> Option<Vec<String>> {
        self.snapshot(ctx).function_names(Some(toolbox))
    }

    /// Every interface offered in `ctx`, control functions included, in registration order.
    pub fn interfaces(&self, ctx: &CallContext) -> Vec<Interface> {
        self.snapshot(ctx).catalog.interfaces().to_vec()
    }

    /// The whole prompt text for the functions offered in `ctx`: the preamble that
    /// teaches the call syntax, then every function (root functions without a prefix).
    /// The control functions are listed only when `options` says so.
    pub fn prompt(&self, ctx: &CallContext, options: &RegistryPrompt) -> String {
        let snapshot = self.snapshot(ctx);
        let render = PromptOptions {
            root: snapshot.catalog.root(),
            separator: options.separator,
        };
        let shown: Vec<Interface> = snapshot
            .catalog
            .interfaces()
            .iter()
            .zip(&snapshot.targets)
            .filter(|(_, target)| {
                options.control_functions || !matches!(target, Target::Control(_))
            })
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
        let snapshot = self.snapshot(ctx);
        let (index, interface) = snapshot.catalog.find(path).ok()?;
        let toolbox = match snapshot.targets.get(index)? {
            Target::Box(b, _) => b.name().to_owned(),
            Target::Control(_) => CONTROL_DOMAIN.to_owned(),
        };
        Some(FoundFunction {
            toolbox,
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
    /// use atfunc::execute::{FnBox, Registry};
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
        let mut catalog = self.snapshot(&CallContext::new()).catalog;
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

    /// Marks a box (by its name) or one function (by its path, as a call writes it) as
    /// needing the user's confirmation: a model's call of it is bound and then, instead of
    /// running, handed to the [`Confirmer`] ([`Registry::set_confirmer`]); with none, it is
    /// held, and the model's result is only
    /// `{"executed": false, "status": "confirmation_required", "confirmation_id": "<uuid>"}`.
    /// Run it with [`Registry::confirm`] or drop it with [`Registry::reject`]; see
    /// [`HoldLimits`] for how long and how many calls wait. A direct [`Registry::call`] is the
    /// host's own and runs at once. The mark stays with the name: a box registered again
    /// under it needs confirmation too.
    ///
    /// ```
    /// use atfunc::execute::{ConfirmError, FnBox, Registry};
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
    /// assert_eq!(report.calls[0].result, Ok(json!({
    ///     "executed": false, "status": "confirmation_required", "confirmation_id": id,
    /// })));
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
                match snapshot.catalog.find(path_or_box) {
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

    fn needs_confirmation(state: &State, toolbox: &str, interface: &Interface) -> bool {
        state.confirm.iter().any(|rule| match rule {
            ConfirmRule::Toolbox(name) => Self::same_name(state, name, toolbox),
            ConfirmRule::Function(name) => *name == interface.original_qualified_name(),
        })
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
        self.held_store().limits = limits;
    }

    /// The limits on held calls.
    pub fn hold_limits(&self) -> HoldLimits {
        self.held_store().limits
    }

    /// The calls waiting for confirmation, oldest first: what to show the user.
    pub fn held_calls(&self) -> Vec<HeldCall> {
        let (expired, waiting) = {
            let mut store = self.held_store();
            (store.expire(), store.list())
        };
        self.expired_events(expired);
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
        let call = &held.call;
        let watch = CallWatch::start(
            self.event_hook(),
            &call.call_id,
            &call.name,
            Some(&call.function),
        );
        // The call's own elements: none of the answer it was held in.
        let ctx = held.ctx.clone().collecting_elements();
        let result = run_in_box(
            &held.tool_box,
            &held.box_function,
            &call.function,
            call.args.clone(),
            &ctx,
            held.timeout,
        )
        .await;
        watch.end(&result);
        self.count_call(held.tool_box.name(), call.function.clone(), result.is_err());
        let limit = self.truncate_length().max(1);
        Ok(ToolOutput {
            value: truncate_value(&result?, limit),
            elements: ctx.take_elements(),
        })
    }

    /// Drops the call held under `id` without running it (the user said no) and returns
    /// it. Its `error` event says it was declined. Errors as [`Registry::confirm`].
    pub fn reject(&self, id: &str) -> Result<HeldCall, ConfirmError> {
        let held = self.take_held(id)?;
        let call = held.call;
        let watch = CallWatch::resume(self.event_hook(), &call.call_id, &call.name, &call.function);
        watch.end::<(), _>(&Err(ToolError::Declined {
            name: call.function.clone(),
        }));
        Ok(call)
    }

    /// Takes the call held under `id` out, without running it or an event: for a caller
    /// that hands it on (the gateway gives it to its client as a `tool_calls` entry).
    #[cfg_attr(not(feature = "serve"), allow(dead_code))]
    pub(crate) fn withdraw(&self, id: &str) -> Result<HeldCall, ConfirmError> {
        self.take_held(id).map(|held| held.call)
    }

    fn take_held(&self, id: &str) -> Result<Held, ConfirmError> {
        let (expired, taken) = {
            let mut store = self.held_store();
            (store.expire(), store.take(id))
        };
        self.expired_events(expired);
        taken
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

    fn parser_config_for(&self, snapshot: &Snapshot) -> ParserConfig {
        let mut config = self.read().parser.clone();
        if config.bodies == Bodies::Any {
            let catalog = &snapshot.catalog;
            config.bodies = Bodies::of(catalog.interfaces(), catalog.root());
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
        self.stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Sets every count back to zero.
    pub fn reset_stats(&self) {
        *self.stats.lock().unwrap_or_else(PoisonError::into_inner) = Stats::default();
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

    fn snapshot(&self, ctx: &CallContext) -> Snapshot {
        let state = self.read();
        let mut interfaces = Vec::new();
        let mut targets = Vec::new();
        let mut confirm = Vec::new();
        for tool_box in &state.boxes {
            for interface in tool_box.interfaces(ctx) {
                confirm.push(Self::needs_confirmation(
                    &state,
                    tool_box.name(),
                    &interface,
                ));
                targets.push(Target::Box(Arc::clone(tool_box), interface.name.clone()));
                interfaces.push(interface);
            }
        }
        for function in &state.control {
            interfaces.push(function.interface());
            targets.push(Target::Control(*function));
            confirm.push(false);
        }
        let mut toolbox_names: Vec<String> =
            state.boxes.iter().map(|b| b.name().to_owned()).collect();
        if !state.control.is_empty() {
            toolbox_names.push(CONTROL_DOMAIN.to_owned());
        }
        let case_sensitive = state.translator.case_sensitive();
        let mut catalog = Catalog::new(interfaces).with_case_sensitive(case_sensitive);
        if let Some(root) = &state.root {
            catalog = catalog.with_root(root.clone());
        }
        for (function, param, parser) in &state.parsers {
            let parser = Arc::clone(parser);
            // A parser whose function is not registered now waits for it to come back.
            let _ = catalog.set_parser(function, param, move |value| parser(value));
        }
        Snapshot {
            catalog,
            toolbox_names,
            case_sensitive,
            targets,
            confirm,
            confirmer: state.confirmer.clone(),
            filters: state.filters.clone(),
            concurrency: state.concurrency,
            timeout: state.timeout,
            translator: Arc::clone(&state.translator),
        }
    }

    /// Calls `hook` with every call's events: `start` when a call begins, then `success` or
    /// `error` (with its duration and, for an error, the text the model is given). Calls
    /// refused before they run (an unknown function, arguments that do not bind, an
    /// unreadable call) get their `start` and `error` too. Replaces an earlier hook. The
    /// hook runs on the task running the call: keep it quick (send to a channel to do more).
    ///
    /// ```
    /// use atfunc::execute::{CallEventKind, Registry};
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
        self.write().events = Some(Arc::new(hook));
    }

    /// Stops calling the event hook.
    pub fn clear_event_hook(&self) {
        self.write().events = None;
    }

    pub(super) fn event_hook(&self) -> Option<CallEventHook> {
        self.read().events.clone()
    }

    pub(super) fn next_call_id(&self) -> String {
        format!("call_{}", self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Calls a function by path with JSON arguments (an object, or `null` for none) and
    /// returns its result cut at the registry's truncate length: a string is cut as text,
    /// another value too long for the limit comes back in the fitted form of
    /// [`fit_json`](crate::format::fit_json). The arguments are checked and converted
    /// against the interface as a call in an answer would be. Output filters do not apply.
    ///
    /// A direct call belongs to no conversation, so `tools.set_truncate_length` is refused
    /// here: set the registry's default with [`Registry::set_truncate_length`].
    pub async fn call(&self, path: &str, args: Json) -> Result<Json, ToolError> {
        self.call_with(path, args, &CallOptions::default()).await
    }

    /// [`Registry::call`] with options: a truncate length, a context. The elements the call
    /// shows the client (see [`CallContext::add_element`]) are added to `options.ctx` when
    /// it collects them ([`CallContext::collecting_elements`]).
    ///
    /// ```
    /// use atfunc::execute::{CallContext, CallOptions, FnBox, Registry};
    /// use atfunc::{json, Interface};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let registry = Registry::new();
    /// registry.register(FnBox::new("ui").function(Interface::new("card").in_domain("ui"), |_, ctx| {
    ///     ctx.add_element(json!({"type": "card", "title": "Hello"}));
    ///     Ok(json!("shown"))
    /// })).unwrap();
    /// let options = CallOptions { ctx: CallContext::new().collecting_elements(), ..CallOptions::default() };
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
                self.count_refusal();
                return Err(ToolError::msg(format!(
                    "Arguments for function '{path}' must be an object of named values, not {other}"
                )));
            }
        };
        let call = Call {
            name: path.to_owned(),
            positional: Vec::new(),
            named,
            body: None,
            span: Span::default(),
        };
        let snapshot = self.snapshot(ctx);
        let call_id = if ctx.call_id.is_empty() {
            self.next_call_id()
        } else {
            ctx.call_id.clone()
        };
        let bound = match bind(&call, &snapshot.catalog) {
            Ok(bound) => bound,
            Err(error) => {
                self.count_refusal();
                let function = snapshot
                    .catalog
                    .find(path)
                    .ok()
                    .map(|(_, interface)| interface.original_qualified_name());
                let watch =
                    CallWatch::start(self.event_hook(), &call_id, path, function.as_deref());
                let error: ToolError = error.into();
                watch.end::<(), _>(&Err(&error));
                return Err(error);
            }
        };
        let watch = CallWatch::start(self.event_hook(), &call_id, path, Some(&bound.name));
        let call_ctx = ctx.for_call(call_id, ctx.body.clone());
        let result = self.dispatch(&snapshot, &bound, &call_ctx, None).await;
        watch.end(&result);
        for element in call_ctx.take_elements() {
            ctx.add_element(element);
        }
        let value = result?;
        let limit = options
            .truncate_length
            .unwrap_or_else(|| self.truncate_length())
            .max(1);
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
    /// it is complete.
    pub fn stream(&self) -> ResponseStream<'_> {
        self.stream_with(&CallContext::new())
    }

    /// [`Registry::stream`] in a context.
    pub fn stream_with(&self, ctx: &CallContext) -> ResponseStream<'_> {
        let snapshot = self.snapshot(ctx);
        let parser = StreamParser::new(self.parser_config_for(&snapshot));
        let conversation = Conversation::new(&self.settings());
        ResponseStream::new(self, parser, snapshot, ctx.clone(), conversation)
    }

    pub(super) fn count_refusal(&self) {
        let mut stats = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
        stats.calls += 1;
        stats.errors += 1;
        stats.refused += 1;
    }

    fn count_call(&self, toolbox: &str, function: String, failed: bool) {
        let mut stats = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
        stats.calls += 1;
        stats.errors += u64::from(failed);
        *stats.toolboxes.entry(toolbox.to_owned()).or_default() += 1;
        let entry = stats.functions.entry(function).or_default();
        entry.calls += 1;
        entry.errors += u64::from(failed);
    }

    /// Runs a bound call. A panic, a timeout or an error becomes an error result.
    pub(super) async fn dispatch(
        &self,
        snapshot: &Snapshot,
        bound: &BoundCall,
        ctx: &CallContext,
        conversation: Option<&Conversation>,
    ) -> Result<Json, ToolError> {
        let Some(target) = snapshot.targets.get(bound.index) else {
            self.count_refusal();
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
                control::run(snapshot, conversation, *function, &bound.args),
            ),
        };
        self.count_call(toolbox, bound.name.clone(), result.is_err());
        result
    }

    /// Runs a bound call that may need the user's confirmation: asks the confirmer, then
    /// runs it, declines it or holds it. Gives the result and, for a held call, the id it
    /// waits under; `watch` gets the call's end (`held` for a held call).
    pub(super) async fn run_confirmed(
        &self,
        snapshot: &Snapshot,
        bound: &BoundCall,
        written: &str,
        ctx: &CallContext,
        conversation: Option<&Conversation>,
        watch: &CallWatch,
    ) -> (Result<Json, ToolError>, Option<String>) {
        let needs = snapshot.confirm.get(bound.index).copied().unwrap_or(false);
        let Some(Target::Box(tool_box, function)) =
            snapshot.targets.get(bound.index).filter(|_| needs)
        else {
            let result = self.dispatch(snapshot, bound, ctx, conversation).await;
            watch.end(&result);
            return (result, None);
        };
        let call = HeldCall {
            confirmation_id: confirm::new_id(),
            call_id: ctx.call_id.clone(),
            name: written.to_owned(),
            function: bound.name.clone(),
            args: bound.args.clone(),
            body: bound.body.clone(),
        };
        let decision = match &snapshot.confirmer {
            Some(confirmer) => confirmer.decide(&call).await,
            None => Decision::Hold,
        };
        let result = match decision {
            Decision::Run => {
                let result = self.dispatch(snapshot, bound, ctx, conversation).await;
                watch.end(&result);
                return (result, None);
            }
            Decision::Decline => Err(ToolError::Declined {
                name: bound.name.clone(),
            }),
            Decision::Hold => {
                let held = Held::new(
                    call,
                    Arc::clone(tool_box),
                    function.clone(),
                    ctx.clone(),
                    snapshot.timeout,
                );
                let stored = {
                    let mut store = self.held_store();
                    let expired = store.expire();
                    let stored = store.insert(held);
                    drop(store);
                    self.expired_events(expired);
                    stored
                };
                match stored {
                    Ok(id) => {
                        self.count_call(tool_box.name(), bound.name.clone(), false);
                        watch.held(&id);
                        return (Ok(confirm::held_result(&id)), Some(id));
                    }
                    Err(function) => Err(ToolError::HoldLimit {
                        name: function,
                        limit: self.hold_limits().max_held,
                    }),
                }
            }
        };
        self.count_call(tool_box.name(), bound.name.clone(), true);
        watch.end(&result);
        (result, None)
    }

    fn held_store(&self) -> std::sync::MutexGuard<'_, HeldCalls> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Each expired call's end, as an `error` event.
    fn expired_events(&self, expired: Vec<Held>) {
        let hook = self.event_hook();
        if hook.is_none() {
            return;
        }
        let after = self.hold_limits().expire_after;
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

    /// Turns a call's result into its outcome: output filters, truncation, the block.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn outcome(
        &self,
        snapshot: &Snapshot,
        call_id: String,
        name: String,
        call: Option<Call>,
        shown_call: String,
        args: Option<Map<String, Json>>,
        result: Result<Json, ToolError>,
        span: Span,
        limit: usize,
    ) -> Outcome {
        let no_args = Map::new();
        let result = match result {
            Ok(value) if !snapshot.filters.is_empty() => {
                let text = result_text(&value).into_owned();
                let params = args.as_ref().unwrap_or(&no_args);
                match apply_filters(&snapshot.filters, &name, params, Cow::Borrowed(&text)) {
                    Cow::Owned(replaced) => Ok(Json::String(replaced)),
                    Cow::Borrowed(_) => Ok(value),
                }
            }
            other => other,
        };
        let shown = match &result {
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
                Err(truncate_text(&error.to_string(), limit.max(ERROR_TEXT_FLOOR)).into_owned())
            }
        };
        let record = CallRecord {
            call_text: truncate_text(&shown_call, CALL_TEXT_LIMIT).into_owned(),
            result: shown,
        };
        let block = snapshot
            .translator
            .format_results(std::slice::from_ref(&record));
        Outcome {
            call_id,
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

/// Runs `function` of `tool_box` within `timeout`; a panic, a timeout or an error becomes
/// an error result.
async fn run_in_box(
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

impl Snapshot {
    /// The interfaces calls bind against.
    pub(super) fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The names of the boxes, `tools` included while a control function is registered.
    pub(super) fn toolbox_names(&self) -> &[String] {
        &self.toolbox_names
    }

    fn same_name(&self, a: &str, b: &str) -> bool {
        if self.case_sensitive {
            a == b
        } else {
            UniCase::new(a) == UniCase::new(b)
        }
    }

    /// The qualified names of every function, or of those of one box; `None` for a box
    /// that is not registered.
    pub(super) fn function_names(&self, toolbox: Option<&str>) -> Option<Vec<String>> {
        if let Some(wanted) = toolbox {
            if !self.toolbox_names.iter().any(|b| self.same_name(b, wanted)) {
                return None;
            }
        }
        let names = self
            .catalog
            .interfaces()
            .iter()
            .zip(&self.targets)
            .filter(|(_, target)| {
                let owner = match target {
                    Target::Box(b, _) => b.name(),
                    Target::Control(_) => CONTROL_DOMAIN,
                };
                toolbox.is_none_or(|wanted| self.same_name(owner, wanted))
            })
            .map(|(interface, _)| interface.qualified_name())
            .collect();
        Some(names)
    }
}
