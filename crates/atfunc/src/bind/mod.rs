//! Phase 4, bind: match a parsed [`Call`] to its [`Interface`] and type its arguments.
//!
//! # Names
//!
//! A [`Catalog`] indexes its interfaces once by qualified name. By default names match
//! after Unicode case folding (`@Weather.GET_TEMP` finds `weather.get_temp`); under
//! [`NameMatch::ExactCase`] they match exactly. `@fn(...)` finds a
//! root function (one without a domain) or, failing that, `fn` in the catalog's root domain
//! ([`Catalog::with_root`]); `@domain.fn(...)` finds `fn` in `domain`, which may itself
//! contain dots (`@a.b.fn` is `fn` in `a.b`). Writing the root domain out (`@root.fn`) works
//! too.
//!
//! # Arguments
//!
//! Positional arguments fill the parameters in declared order (for an api-wrapper: its path
//! parameters, then its query parameters); named ones match parameter names, ignoring case
//! under a case-insensitive catalog. [`BoundCall::args`] holds the given parameters in
//! declared order, keyed by their declared spelling.
//!
//! An optional parameter the call leaves out is left out of `args`: declared defaults are
//! *not* filled in, so the tool sees exactly what the model chose and applies its own
//! defaults. A `null` (or `None`) argument counts as left out: for a required parameter that
//! is a [`BindError::MissingParameters`].
//!
//! # One JSON object for all arguments
//!
//! Models used to JSON tool calls write `@chat.send({"channel": "ops", "text": "hi"})`.
//! When the first argument is an object literal and the function's first parameter does
//! not take one (it is not of type object or any, or there is none):
//!
//! - if the object is the only argument and is empty or has a key that names a parameter
//!   (or a request body field of an api-wrapper), its fields are the call's named
//!   arguments: the call binds as `@chat.send(channel="ops", text="hi")` would, with the
//!   same errors for any other key, a key given twice or a required parameter left out;
//!   `{}` gives no arguments;
//! - if every key names a parameter but other arguments follow, the call is refused with
//!   the call written out as name=value ([`BindError::ObjectArguments`]);
//! - otherwise the object is an ordinary first argument (and fails as one).
//!
//! A parameter of type object or any takes the object as written, as before.
//!
//! # Types
//!
//! Each value is converted to its declared type:
//!
//! | declared | accepted |
//! |---|---|
//! | string | a string or bare word; a number literal, as written (`007` stays `"007"`); `true`/`false` |
//! | number | a number literal; a string or bare word holding one (`"2"`) |
//! | integer | as number, when whole: `2`, `2.0`, `"2"`, `2e3`; not `2.5` |
//! | boolean | `true`/`false`/`True`/`False`; a string or bare word `true` or `false` in any case. Not `yes`, `1` or `on`: a model that writes those is told the rule instead of guessed at |
//! | object | an object literal, or a string holding a JSON object; declared properties are converted recursively and renamed to their declared spelling, undeclared ones kept as written |
//! | array | an array literal, or a string holding a JSON array; items converted recursively when their type is declared |
//! | any | the value as JSON |
//!
//! After conversion, a string whose parameter declares a checked JSON Schema `format`
//! ([`StringFormat`](crate::interface::StringFormat): `date`, `date-time`, `time`, `email`, `uri`, `uuid`, `ipv4`,
//! `ipv6`) must be one ([`BindError::InvalidFormat`], saying what is wrong: `February 2026
//! has 28 days`); then the parameter's own parser runs, if it has one
//! ([`Catalog::set_parser`]); then enum choices are checked (numbers compare by value, strings exactly,
//! with the case-insensitive match suggested in the error), then `min`/`max` on numbers.
//! On an array, choices that are not lists themselves apply to each element
//! (`metrics=["view"]` for `{"type": "array", "enum": ["view", "click"]}`; see
//! [`Param::element_choices`]), as do the choices of its `items`.
//! Inside objects, a required property left out or `null` is reported like a missing
//! parameter, by its path (`options.limit`).
//!
//! # Request bodies
//!
//! The `with_body [[ ... ]]` block of an api-wrapper call becomes [`BoundCall::body`]: its
//! raw text, and its JSON when it parses. An api-wrapper with required body fields needs a
//! body; when the body is a JSON object, its keys must include every required field (keys
//! match exactly: they go to an HTTP API as written). A body that is not JSON is passed on
//! unchecked. A body on a function that declares no body fields is an error.
//!
//! # Errors
//!
//! Each [`BindError`] message says what failed and how to write the call correctly; the
//! variant docs list every message form.
//!
//! ```
//! use atfunc::{bind, Call, Catalog, Interface, Param, ParamType};
//! use atfunc::parse::{Span, Value};
//!
//! let get_temp = Interface::new("get_temp").in_domain("weather")
//!     .param(Param::new("location", ParamType::String).required())
//!     .param(Param::new("days", ParamType::Integer));
//! let catalog = Catalog::new(vec![get_temp]);
//!
//! let call = Call::new("Weather.Get_Temp")
//!     .with_positional(vec![Value::Bare("Paris".into())])
//!     .with_named(vec![("DAYS".into(), Value::String("3".into()))])
//!     .with_span(Span::new(0, 40));
//! let bound = bind(&call, &catalog).unwrap();
//! assert_eq!(bound.name, "weather.get_temp");
//! assert_eq!(serde_json::Value::Object(bound.args), serde_json::json!({"location": "Paris", "days": 3}));
//!
//! let call = call.with_positional(vec![]).with_named(vec![]);
//! assert_eq!(
//!     bind(&call, &catalog).unwrap_err().to_string(),
//!     "Missing required parameter for function 'weather.get_temp': location",
//! );
//! ```

mod coerce;
mod error;
mod repeats;
mod string_format;
mod written;

pub use error::unknown_function_hint;
pub use error::{BindError, BindErrorKind};
pub use repeats::{Repeats, MAX_REMEMBERED};
pub use written::{written_calls, WrittenCallsError};

use crate::interface::{Interface, Param, ParamType};
use crate::messages::{self, fold, similarity};
use crate::parse::{Call, Span, Value};
use coerce::{coerce_param_with, find_param, shorten_str, shown_value, Ctx, Path};
use serde_json::{Map, Value as Json};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use unicase::UniCase;

/// How many known names an unknown-function error lists when none is close.
const LISTED_FUNCTIONS: usize = 5;

/// The interfaces calls bind against, with the name-matching rule in use ([`NameMatch`]).
///
/// Names are indexed once, so finding a function costs a hash lookup, not a scan. When two
/// interfaces share a name (or, ignoring case, a folded name), the first registered wins;
/// validation reports such pairs before they get here.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    interfaces: Vec<Interface>,
    case_sensitive: bool,
    root: Option<String>,
    /// Qualified name (case-folded unless `case_sensitive`) → index in `interfaces`.
    index: HashMap<String, usize>,
    /// Parallel to `interfaces`: whether an unknown-function error may name the function
    /// ([`Catalog::push_unlisted`] adds one it never names).
    listed: Vec<bool>,
    parsers: Parsers,
}

/// A parameter's own parser: takes the value converted to the declared type and returns the
/// value the tool gets (a date string as a normalised date, a path checked against a root),
/// or a message for the model saying what is wrong. See [`Catalog::set_parser`].
pub type ArgParser = Arc<dyn Fn(Json) -> Result<Json, String> + Send + Sync>;

/// (interface index, parameter name as declared) → its parser.
#[derive(Clone, Default)]
struct Parsers(HashMap<(usize, String), ArgParser>);

impl fmt::Debug for Parsers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

/// How the names in a call (functions and parameters) are matched against a catalog's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NameMatch {
    /// Names may differ in case (`Clock.Now` finds `clock.now`), as atfunc's syntax
    /// promises. The default.
    #[default]
    IgnoreCase,
    /// Names must be written exactly, as in the reference library.
    ExactCase,
}

impl Catalog {
    /// A catalog of `interfaces`. Names match ignoring case, as atfunc's syntax promises;
    /// [`matching`](Catalog::matching) with [`NameMatch::ExactCase`] makes
    /// them exact.
    pub fn new(interfaces: Vec<Interface>) -> Catalog {
        let mut catalog = Catalog {
            interfaces: Vec::with_capacity(interfaces.len()),
            case_sensitive: false,
            root: None,
            index: HashMap::with_capacity(interfaces.len()),
            listed: Vec::with_capacity(interfaces.len()),
            parsers: Parsers::default(),
        };
        for interface in interfaces {
            catalog.push(interface);
        }
        catalog
    }

    /// How function and parameter names are matched: ignoring case (the default) or
    /// exactly.
    ///
    /// ```
    /// use atfunc::bind::NameMatch;
    /// use atfunc::{Catalog, Interface};
    /// let tools = vec![Interface::new("now").in_domain("clock")];
    /// assert!(Catalog::new(tools.clone()).find("Clock.Now").is_ok());
    /// let exact = Catalog::new(tools).matching(NameMatch::ExactCase);
    /// assert!(exact.case_sensitive());
    /// assert!(exact.find("Clock.Now").is_err());
    /// assert!(exact.find("clock.now").is_ok());
    /// ```
    pub fn matching(self, names: NameMatch) -> Catalog {
        self.set_case_sensitive(names == NameMatch::ExactCase)
    }

    fn set_case_sensitive(mut self, case_sensitive: bool) -> Catalog {
        if self.case_sensitive != case_sensitive {
            self.case_sensitive = case_sensitive;
            // The index keys are folded or not by this rule: build them again. Interfaces
            // keep their positions, so the parsers keyed by position stay attached.
            self.index.clear();
            for index in 0..self.interfaces.len() {
                self.index_names(index);
            }
        }
        self
    }

    /// Makes the functions of `domain` callable without their prefix.
    pub fn with_root(mut self, domain: impl Into<String>) -> Catalog {
        self.root = Some(domain.into());
        self
    }

    /// Adds an interface and returns its index. A name already taken keeps resolving to the
    /// earlier interface.
    pub fn push(&mut self, interface: Interface) -> usize {
        let index = self.interfaces.len();
        self.interfaces.push(interface);
        self.listed.push(true);
        self.index_names(index);
        index
    }

    /// Adds an interface that calls bind to like any other, but that an unknown-function
    /// error never names: neither as the closest name nor among the names it lists. For a
    /// host's own functions that the model is not shown (a registry's `tools.*`), so that
    /// a model offered four tools is never pointed to a fifth.
    ///
    /// ```
    /// use atfunc::{Catalog, Interface};
    ///
    /// let mut catalog = Catalog::new(vec![Interface::new("now").in_domain("clock")]);
    /// catalog.push_unlisted(Interface::new("get_toolboxes").in_domain("tools"));
    /// assert!(catalog.find("tools.get_toolboxes").is_ok());
    /// assert_eq!(
    ///     catalog.find("tools.get_toolbox").unwrap_err().to_string(),
    ///     "Unknown function 'tools.get_toolbox': available functions are 'clock.now'",
    /// );
    /// ```
    pub fn push_unlisted(&mut self, interface: Interface) -> usize {
        let index = self.push(interface);
        if let Some(listed) = self.listed.get_mut(index) {
            *listed = false;
        }
        index
    }

    /// Indexes the names a call reaches the interface at `index` by. A name already taken
    /// keeps resolving to the earlier interface.
    fn index_names(&mut self, index: usize) {
        let Some(interface) = self.interfaces.get(index) else {
            return;
        };
        let mut keys = vec![self.key(&interface.qualified_name()).into_owned()];
        // Bound calls carry the name as defined (`get-weather`); it finds the tool too.
        if interface.original.is_some() {
            keys.push(self.key(&interface.original_qualified_name()).into_owned());
        }
        for key in keys {
            self.index.entry(key).or_insert(index);
        }
    }

    /// The interfaces an unknown-function error may name, in registration order.
    fn listed(&self) -> impl Iterator<Item = &Interface> {
        self.interfaces
            .iter()
            .zip(&self.listed)
            .filter_map(|(interface, listed)| listed.then_some(interface))
    }

    /// Gives a top-level parameter its own parser, run when a call binds: after the value is
    /// converted to the declared type and its `format` checked, before its choices and
    /// bounds (which then apply to what the parser returns). The parser's `Err` message is
    /// the model's, as a [`BindError::Refused`] naming the parameter, so word it as what to
    /// write instead. A second parser for the same parameter replaces the first.
    ///
    /// `function` and `param` are found as a call finds them; an unknown one is the
    /// [`BindError`] a call naming it would get.
    ///
    /// ```
    /// use atfunc::{bind, parse_events, Catalog, Event, Interface, Param, ParamType};
    /// use serde_json::{json, Value};
    ///
    /// let read = Interface::new("read").in_domain("files")
    ///     .param(Param::new("path", ParamType::String).required());
    /// let mut catalog = Catalog::new(vec![read]);
    /// catalog.set_parser("files.read", "path", |value: Value| {
    ///     let path = value.as_str().unwrap_or_default();
    ///     if path.split('/').any(|part| part == "..") {
    ///         return Err(format!("{path} leaves the project folder: give a path inside it"));
    ///     }
    ///     Ok(json!(path.trim_start_matches("./")))
    /// }).unwrap();
    ///
    /// let call = |text: &str| match parse_events(text).into_iter().find(|e| matches!(e, Event::Call(_))) {
    ///     Some(Event::Call(call)) => call,
    ///     other => panic!("{other:?}"),
    /// };
    /// let bound = bind(&call(r#"@files.read("./notes.txt")"#), &catalog).unwrap();
    /// assert_eq!(bound.args["path"], "notes.txt");
    /// assert_eq!(
    ///     bind(&call(r#"@files.read("../etc/passwd")"#), &catalog).unwrap_err().to_string(),
    ///     "Invalid value for parameter 'path' of function 'files.read': \
    ///      ../etc/passwd leaves the project folder: give a path inside it",
    /// );
    /// ```
    pub fn set_parser(
        &mut self,
        function: &str,
        param: &str,
        parser: impl Fn(Json) -> Result<Json, String> + Send + Sync + 'static,
    ) -> Result<(), BindError> {
        let (index, interface) = self.find(function)?;
        let params = &interface.params;
        let Some(found) =
            find_param(params, param, self.case_sensitive).and_then(|i| params.get(i))
        else {
            return Err(BindError::UnknownParameter {
                function: interface.qualified_name(),
                param: shorten_str(param),
                closest: closest_param(params, param),
                valid: params.iter().map(|p| p.name.clone()).collect(),
            });
        };
        let key = (index, found.name.clone());
        self.parsers.0.insert(key, Arc::new(parser));
        Ok(())
    }

    /// The root domain, if one is set.
    pub fn root(&self) -> Option<&str> {
        self.root.as_deref()
    }

    /// Which calls may have a body: those of the functions that take one
    /// ([`Interface::has_body`]), under every name a call reaches them by (the qualified
    /// name, and the bare name in the root domain), as [`ParserConfig::bodies`] wants them.
    ///
    /// ```
    /// use atfunc::{Catalog, Interface, Param, ParamType};
    /// use atfunc::interface::Kind;
    ///
    /// let mut create_user = Interface::new("create_user").in_domain("api");
    /// create_user.kind = Kind::ApiWrapper;
    /// create_user.request_body = vec![Param::new("email", ParamType::String).required()];
    /// let get_weather = Interface::new("get_weather");
    /// let catalog = Catalog::new(vec![create_user, get_weather]).with_root("api");
    ///
    /// let bodies = catalog.bodies();
    /// assert!(bodies.allows("api.create_user") && bodies.allows("CREATE_USER"));
    /// assert!(!bodies.allows("get_weather"));
    /// ```
    ///
    /// [`ParserConfig::bodies`]: crate::ParserConfig::bodies
    pub fn bodies(&self) -> crate::parse::Bodies {
        crate::parse::Bodies::of(&self.interfaces, self.root())
    }

    /// Whether names must match exactly.
    pub fn case_sensitive(&self) -> bool {
        self.case_sensitive
    }

    /// Every interface, in registration order.
    pub fn interfaces(&self) -> &[Interface] {
        &self.interfaces
    }

    /// The interface at `index`.
    pub fn get(&self, index: usize) -> Option<&Interface> {
        self.interfaces.get(index)
    }

    /// How many interfaces the catalog holds.
    pub fn len(&self) -> usize {
        self.interfaces.len()
    }

    /// Whether the catalog holds no interface.
    pub fn is_empty(&self) -> bool {
        self.interfaces.is_empty()
    }

    /// Finds the interface a call names (`fn`, `domain.fn`, `root.fn`), with its index.
    ///
    /// ```
    /// use atfunc::{Catalog, Interface};
    ///
    /// let catalog = Catalog::new(vec![Interface::new("get_temp").in_domain("weather")])
    ///     .with_root("weather");
    /// assert_eq!(catalog.find("GET_TEMP").unwrap().0, 0);
    /// assert_eq!(
    ///     catalog.find("weather.get_tmp").unwrap_err().to_string(),
    ///     "Unknown function 'weather.get_tmp': did you mean 'weather.get_temp'?",
    /// );
    /// ```
    pub fn find(&self, name: &str) -> Result<(usize, &Interface), BindError> {
        let mut found = self.lookup(name);
        if found.is_none() && !name.contains('.') {
            if let Some(root) = &self.root {
                found = self.lookup(&format!("{root}.{name}"));
            }
        }
        match found.and_then(|i| Some((i, self.interfaces.get(i)?))) {
            Some(hit) => Ok(hit),
            None => Err(self.unknown_function(name)),
        }
    }

    fn lookup(&self, qualified: &str) -> Option<usize> {
        self.index.get(self.key(qualified).as_ref()).copied()
    }

    fn key<'a>(&self, name: &'a str) -> Cow<'a, str> {
        if self.case_sensitive {
            Cow::Borrowed(name)
        } else {
            Cow::Owned(UniCase::new(name).to_folded_case())
        }
    }

    fn unknown_function(&self, name: &str) -> BindError {
        let closest = self.closest_function(name);
        let (available, more) = if closest.is_some() {
            (Vec::new(), 0)
        } else {
            let available: Vec<String> = self
                .listed()
                .take(LISTED_FUNCTIONS)
                .map(Interface::qualified_name)
                .collect();
            let more = self.listed().count() - available.len();
            (available, more)
        };
        BindError::UnknownFunction {
            // The name is quoted back to the model; a hostile one may be megabytes long.
            name: shorten_str(name),
            closest,
            available,
            more,
        }
    }

    /// The known name the model most likely meant: one with the same function name in
    /// another domain, else the most similar qualified name, if similar enough.
    fn closest_function(&self, name: &str) -> Option<String> {
        let wanted = fold(name);
        let wanted_fn = wanted.rsplit('.').next().unwrap_or(&wanted);
        let mut best: Option<(f64, &Interface)> = None;
        for interface in self.listed() {
            let qualified = fold(&interface.qualified_name());
            let short = fold(&interface.name);
            let score = if short == wanted_fn {
                // Same function, wrong or missing domain: the likeliest slip of all.
                2.0
            } else {
                similarity(&wanted, &qualified).max(similarity(wanted_fn, &short))
            };
            if score >= messages::CLOSE_ENOUGH && best.is_none_or(|(top, _)| score > top) {
                best = Some((score, interface));
            }
        }
        best.map(|(_, interface)| interface.qualified_name())
    }
}

/// The request body of a bound api-wrapper call.
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    /// The text between `with_body [[` and `]]`, as written.
    pub raw: String,
    /// The body as JSON, when it parses as JSON.
    pub json: Option<Json>,
}

/// A call bound to its interface: the arguments typed as declared.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BoundCall {
    /// Index of the interface in the [`Catalog`].
    pub index: usize,
    /// The qualified name as the definition spells it (`weather.get_temp`, `get-weather`;
    /// see [`Interface::original_qualified_name`]).
    pub name: String,
    /// Arguments keyed by parameter name as the definition spells it (`max-results`, though
    /// the call wrote `max_results`), in declared order. Optional parameters the call left
    /// out are absent (no defaults are filled in).
    pub args: Map<String, Json>,
    /// The request body, for an api-wrapper call with a `with_body` block.
    pub body: Option<Body>,
    /// Where the call stands in the input.
    pub span: Span,
}

impl BoundCall {
    /// The call as a key: two calls with equal keys ask for the same thing, the same
    /// function with the same bound arguments and the same body, however each was written
    /// (`@f(Oslo)` and `@F(city="Oslo")` are one request). [`Repeats`] ends an answer at the
    /// first call whose key an earlier call of it had.
    ///
    /// ```
    /// use atfunc::parse::{parse_events, Event};
    /// use atfunc::{bind, Catalog, Interface, Param, ParamType};
    ///
    /// let catalog = Catalog::new(vec![
    ///     Interface::new("get_weather").param(Param::new("city", ParamType::String).required()),
    /// ]);
    /// let answer = r#"@get_weather(Oslo) @GET_WEATHER(city="Oslo") @get_weather(Paris)"#;
    /// let keys: Vec<_> = parse_events(answer)
    ///     .into_iter()
    ///     .filter_map(|event| match event {
    ///         Event::Call(call) => Some(bind(&call, &catalog).unwrap().key()),
    ///         _ => None,
    ///     })
    ///     .collect();
    /// assert_eq!(keys[0], keys[1]);
    /// assert_ne!(keys[0], keys[2]);
    /// ```
    pub fn key(&self) -> CallKey {
        CallKey {
            index: self.index,
            args: Json::Object(self.args.clone()).to_string(),
            body: self.body.as_ref().map(|body| body.raw.clone()),
        }
    }
}

/// What makes two bound calls the same request ([`BoundCall::key`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallKey {
    /// The function's index in the catalog.
    index: usize,
    /// The bound arguments as JSON text (in declared order, so equal maps give equal text).
    args: String,
    /// The body as written.
    body: Option<String>,
}

/// Binds `call` against `catalog`: finds its interface, assigns and converts its arguments
/// and checks its body. See the [module docs](self) for the rules.
///
/// Every problem of a call is reported at once, as `atfunc check` reports every problem
/// of a file: one error alone as itself, several as [`BindError::Several`]. Only an
/// unknown function and an object of arguments beside other arguments stop the checks
/// early, since nothing after them can be matched to a parameter.
pub fn bind(call: &Call, catalog: &Catalog) -> Result<BoundCall, BindError> {
    let (index, interface) = catalog.find(&call.name)?;
    let function = interface.qualified_name();
    let params = &interface.params;
    let mut problems = Vec::new();
    let slots = assign(
        call,
        interface,
        &function,
        catalog.case_sensitive,
        &mut problems,
    )?;

    let missing: Vec<String> = params
        .iter()
        .zip(&slots)
        .filter(|(p, v)| p.required && matches!(v, None | Some(Value::Null)))
        .map(|(p, _)| p.name.clone())
        .collect();
    if !missing.is_empty() {
        problems.push(BindError::MissingParameters {
            function: function.clone(),
            params: missing,
        });
    }

    let ctx = Ctx {
        function: &function,
        case_sensitive: catalog.case_sensitive,
    };
    let mut args = Map::new();
    for (param, slot) in params.iter().zip(slots) {
        match slot {
            None | Some(Value::Null) => {}
            Some(value) => {
                let parser = match catalog.parsers.0.is_empty() {
                    true => None,
                    false => catalog.parsers.0.get(&(index, param.name.clone())),
                };
                let path = Path::Param(&param.name);
                match coerce_param_with(value, param, &path, &ctx, parser) {
                    // The tool gets its argument under the name its definition spells.
                    Ok(json) => {
                        args.insert(param.original_name().to_owned(), json);
                    }
                    Err(error) => problems.push(error),
                }
            }
        }
    }

    let body = match bind_body(call, interface, &function) {
        Ok(body) => body,
        Err(error) => {
            problems.push(error);
            None
        }
    };
    if let Some(error) = BindError::from_problems(&function, problems) {
        return Err(error);
    }
    Ok(BoundCall {
        index,
        name: interface.original_qualified_name(),
        args,
        body,
        span: call.span,
    })
}

/// The value given for each parameter, by position or by name. Arguments that fit no
/// parameter, or one already given, go to `problems`; an object of arguments beside other
/// arguments is the one error that stops binding here.
fn assign<'c>(
    call: &'c Call,
    interface: &Interface,
    function: &str,
    case_sensitive: bool,
    problems: &mut Vec<BindError>,
) -> Result<Vec<Option<&'c Value>>, BindError> {
    let params = &interface.params;
    let (positional, named) = arguments(call, interface, function, case_sensitive)?;
    let names = || params.iter().map(|p| p.name.clone()).collect::<Vec<_>>();
    if positional.len() > params.len() {
        problems.push(BindError::TooManyArguments {
            function: function.to_owned(),
            given: positional.len(),
            params: names(),
        });
    }
    let mut slots: Vec<Option<&Value>> = vec![None; params.len()];
    for (slot, value) in slots.iter_mut().zip(positional) {
        *slot = Some(value);
    }
    for (name, value) in named {
        let Some(i) = find_param(params, name, case_sensitive) else {
            if let Some(field) = body_field(interface, name, case_sensitive) {
                problems.push(BindError::BodyFieldAsArgument {
                    function: function.to_owned(),
                    field: field.name.clone(),
                });
                continue;
            }
            problems.push(BindError::UnknownParameter {
                function: function.to_owned(),
                param: shorten_str(name),
                closest: closest_param(params, name),
                valid: names(),
            });
            continue;
        };
        match (slots.get_mut(i), params.get(i)) {
            (Some(slot @ None), _) => *slot = Some(value),
            (_, Some(param)) => problems.push(BindError::DuplicateParameter {
                function: function.to_owned(),
                param: param.name.clone(),
            }),
            (_, None) => {}
        }
    }
    Ok(slots)
}

/// Positional and named arguments.
type Arguments<'c> = (&'c [Value], &'c [(String, Value)]);

/// The call's arguments as written, or, for a call whose only argument is one JSON object
/// standing for all of them, none and the object's fields (see the module docs, "One JSON
/// object for all arguments").
fn arguments<'c>(
    call: &'c Call,
    interface: &Interface,
    function: &str,
    case_sensitive: bool,
) -> Result<Arguments<'c>, BindError> {
    let params = &interface.params;
    let as_written = (call.positional.as_slice(), call.named.as_slice());
    let Some(Value::Object(fields)) = call.positional.first() else {
        return Ok(as_written);
    };
    // A first parameter that takes an object (or anything) takes this one, as written.
    if params
        .first()
        .is_some_and(|p| matches!(p.ty, ParamType::Object { .. } | ParamType::Any))
    {
        return Ok(as_written);
    }
    let is_param = |key: &str| find_param(params, key, case_sensitive).is_some();
    if call.positional.len() == 1 && call.named.is_empty() {
        // An object none of whose keys names an argument is more likely a wrong value for
        // the first parameter (`{"sku": ...}` for a list of items) than arguments: it
        // stays one, and its error names the type expected.
        let names_one = fields.is_empty()
            || fields.iter().any(|(key, _)| {
                is_param(key) || body_field(interface, key, case_sensitive).is_some()
            });
        return Ok(if names_one {
            (&[], fields.as_slice())
        } else {
            as_written
        });
    }
    // Beside other arguments, an object of parameters is a mix-up the model should untangle;
    // one of other keys is simply a wrong first argument.
    if fields.is_empty() || !fields.iter().all(|(key, _)| is_param(key)) {
        return Ok(as_written);
    }
    Err(object_with_more_arguments(call, fields, params, function))
}

/// The request body field of an api-wrapper called `name`, for a model that wrote it as an
/// argument.
fn body_field<'i>(interface: &'i Interface, name: &str, case_sensitive: bool) -> Option<&'i Param> {
    if !interface.has_body() {
        return None;
    }
    let i = find_param(&interface.request_body, name, case_sensitive)?;
    interface.request_body.get(i)
}

/// How many keys and arguments an [`BindError::ObjectArguments`] message writes out.
const LISTED_ARGUMENTS: usize = 10;

fn object_with_more_arguments(
    call: &Call,
    fields: &[(String, Value)],
    params: &[Param],
    function: &str,
) -> BindError {
    // The call as it should have been written: the object's fields, then the other
    // positional arguments under the names of the parameters they fill, then the named ones.
    let rest = call
        .positional
        .iter()
        .enumerate()
        .skip(1)
        .filter_map(|(i, value)| Some((params.get(i)?.name.as_str(), value)));
    let named = call
        .named
        .iter()
        .map(|(name, value)| (name.as_str(), value));
    let all: Vec<(&str, &Value)> = fields
        .iter()
        .map(|(key, value)| (key.as_str(), value))
        .chain(rest)
        .chain(named)
        .collect();
    let mut example: Vec<String> = all
        .iter()
        .take(LISTED_ARGUMENTS)
        .map(|(name, value)| format!("{}={}", shorten_str(name), shown_value(value)))
        .collect();
    if all.len() > LISTED_ARGUMENTS {
        example.push("...".to_owned());
    }
    let mut keys: Vec<String> = fields
        .iter()
        .take(LISTED_ARGUMENTS)
        .map(|(key, _)| shorten_str(key))
        .collect();
    if fields.len() > LISTED_ARGUMENTS {
        keys.push(format!("{} more", fields.len() - LISTED_ARGUMENTS));
    }
    BindError::ObjectArguments {
        function: function.to_owned(),
        keys,
        others: call.positional.len() - 1 + call.named.len(),
        example: format!("@{function}({})", example.join(", ")),
    }
}

fn closest_param(params: &[Param], name: &str) -> Option<String> {
    messages::closest(name, params.iter().map(|p| p.name.as_str())).map(|(_, name)| name.to_owned())
}

fn bind_body(
    call: &Call,
    interface: &Interface,
    function: &str,
) -> Result<Option<Body>, BindError> {
    let required = || {
        interface
            .request_body
            .iter()
            .filter(|f| f.required)
            .map(|f| f.name.clone())
            .collect::<Vec<_>>()
    };
    let Some(raw) = &call.body else {
        let fields = required();
        if fields.is_empty() {
            return Ok(None);
        }
        return Err(BindError::MissingBody {
            function: function.to_owned(),
            fields,
        });
    };
    if !interface.has_body() {
        return Err(BindError::UnexpectedBody {
            function: function.to_owned(),
        });
    }
    if raw.trim().is_empty() {
        let fields = required();
        if !fields.is_empty() {
            return Err(BindError::MissingBody {
                function: function.to_owned(),
                fields,
            });
        }
    }
    let json = serde_json::from_str::<Json>(raw).ok();
    match &json {
        Some(Json::Object(map)) => {
            let missing: Vec<String> = interface
                .request_body
                .iter()
                .filter(|f| f.required && matches!(map.get(&f.name), None | Some(Json::Null)))
                .map(|f| f.name.clone())
                .collect();
            if !missing.is_empty() {
                return Err(BindError::MissingBodyFields {
                    function: function.to_owned(),
                    fields: missing,
                });
            }
        }
        Some(_) => {
            return Err(BindError::InvalidBody {
                function: function.to_owned(),
                got: shorten_str(raw.trim()),
            })
        }
        None => {}
    }
    Ok(Some(Body {
        raw: raw.clone(),
        json,
    }))
}
