//! Typed tools (feature `typed`): Rust functions whose arguments are a struct.
//!
//! The arguments struct derives `serde::Deserialize` and `schemars::JsonSchema`; its JSON
//! Schema becomes the tool's [`Interface`] through [`load_interfaces`], the same path every
//! imported JSON Schema takes, so a typed tool is described to the model exactly as the same
//! schema in a tools file would be. Doc comments become descriptions: the struct's for the
//! function, each field's for its parameter.
//!
//! # What the model gets back
//!
//! A tool returns `Result<T, E>` with `T: Serialize` and `E: Display`, and fails the way
//! every other tool does:
//!
//! - `Ok(value)` → the value as JSON, as a [`FnBox`](crate::execute::FnBox) closure's
//!   would be. A [`ToolOutput`] is the model's value and elements for the client beside it
//!   (a card, an image; see [`CallContext::add_element`]): the model reads the value alone.
//! - `Err(error)` → [`ToolError::Failed`] with the error's `Display`: the result block reads
//!   `Returned: Error: ...`, [`Outcome::is_error`](crate::execute::Outcome::is_error) is
//!   true and the registry's statistics count it.
//!
//! Arguments that do not deserialise are an error too; the message names the argument by
//! its path (`mailbox.address`, `items[2].qty`, `shape.Circle.r` inside an enum's variant)
//! and the type it needs.
//!
//! # Ids from type names
//!
//! A [`TypedTool`]'s function name defaults to its type's name without a `Tool` suffix, in
//! snake case, acronyms kept whole: `SendEmailTool` → `send_email`, `HTTPFetchTool` →
//! `http_fetch` (see [`tool_id`]).
//!
//! ```
//! use atfunc::execute::{CallContext, ToolBox};
//! use atfunc::typed::TypedBox;
//! use serde_json::json;
//!
//! /// Add two numbers.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add {
//!     /// The first number.
//!     a: f64,
//!     /// The second number.
//!     b: f64,
//! }
//!
//! let tools = TypedBox::new("math")
//!     .function("add", |args: Add| Ok::<_, String>(args.a + args.b))
//!     .build()
//!     .unwrap();
//! let add = &tools.interfaces(&CallContext::new())[0];
//! assert_eq!(add.description, "Add two numbers.");
//! assert_eq!(add.params[0].description, "The first number.");
//!
//! let args = json!({"a": 2, "b": 0.5}).as_object().unwrap().clone();
//! let result = futures::executor::block_on(tools.call("add", args, &CallContext::new()));
//! assert_eq!(result.unwrap(), json!(2.5));
//! ```

use crate::execute::{BuildError, CallContext, ToolBox, ToolError, ToolOutput};
use crate::interface::{load_interfaces, Interface, LoadError, Param, ParamType};
use crate::messages::{json_kind, qualified};
use futures::future::BoxFuture;
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value as Json};
use std::fmt;
use std::future::Future;
use std::sync::Arc;

/// A tool written as a Rust type: its arguments struct, what it returns, and how it runs.
///
/// ```
/// use atfunc::execute::CallContext;
/// use atfunc::typed::TypedTool;
///
/// /// Fetch a web page.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Fetch {
///     /// The page's address.
///     url: String,
/// }
///
/// struct HTTPFetchTool;
///
/// impl TypedTool for HTTPFetchTool {
///     type Args = Fetch;
///     type Output = String;
///     type Error = String;
///
///     async fn call(&self, args: Fetch, _ctx: &CallContext) -> Result<String, String> {
///         Err(format!("no network here to fetch {}", args.url))
///     }
/// }
///
/// assert_eq!(HTTPFetchTool.id(), "http_fetch");
/// ```
pub trait TypedTool: Send + Sync + 'static {
    /// The arguments, deserialised from the model's call; their schema is the interface.
    type Args: DeserializeOwned + JsonSchema + Send;
    /// What a successful call returns: a value sent as its JSON, or a [`ToolOutput`].
    type Output: IntoToolOutput;
    /// Why a call failed; becomes [`ToolError::Failed`] with its `Display`.
    type Error: fmt::Display;

    /// The function's name: by default [`tool_id`] of the type's name.
    fn id(&self) -> String {
        tool_id(std::any::type_name::<Self>())
    }

    /// What the function does. `None` (the default) takes the doc comment of
    /// [`Args`](TypedTool::Args).
    fn description(&self) -> Option<String> {
        None
    }

    /// Runs the tool.
    fn call(
        &self,
        args: Self::Args,
        ctx: &CallContext,
    ) -> impl Future<Output = Result<Self::Output, Self::Error>> + Send;
}

/// A tool id from a type name: the last path segment without generics, without a `Tool`
/// suffix, in snake case. A run of capitals is one word (`HTTPFetch` → `http_fetch`), the
/// last capital before a lower-case letter starting the next one (`XMLHttpRequest` →
/// `xml_http_request`); digits stay with what they follow (`Base64Encode` →
/// `base64_encode`).
///
/// ```
/// use atfunc::typed::tool_id;
/// assert_eq!(tool_id("SendEmailTool"), "send_email");
/// assert_eq!(tool_id("HTTPFetchTool"), "http_fetch");
/// assert_eq!(tool_id("my_crate::tools::GetURLTool<u8>"), "get_url");
/// ```
pub fn tool_id(type_name: &str) -> String {
    let base = type_name.split('<').next().unwrap_or(type_name);
    let base = base.rsplit("::").next().unwrap_or(base);
    let base = match base.strip_suffix("Tool") {
        Some(rest) if !rest.is_empty() => rest,
        _ => base,
    };
    let chars: Vec<char> = base.chars().collect();
    let mut out = String::with_capacity(base.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev = i.checked_sub(1).and_then(|p| chars.get(p)).copied();
            let next = chars.get(i + 1).copied();
            let starts_word = match prev {
                None | Some('_') => false,
                Some(p) if p.is_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_uppercase() => next.is_some_and(char::is_lowercase),
                Some(_) => false,
            };
            if starts_word {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Why a typed tool could not be registered.
///
/// [`Registry::register`](crate::execute::Registry::register) reports each as a
/// [`BuildError`] of [`RegisterError::Build`](crate::execute::RegisterError::Build);
/// [`BuildError::downcast_ref`] gives it back.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TypedError {
    /// The arguments type is not a struct with named fields (or `()`).
    #[error("the arguments of '{name}' must be a struct with named fields; their JSON Schema is {schema}")]
    NotAnObject {
        /// The function's qualified name.
        name: String,
        /// The schema that was generated.
        schema: String,
    },
    /// The schema does not make a valid interface (a name that is not an identifier, a
    /// type atfunc does not know).
    #[error("the interface of '{name}' is invalid: {source}")]
    Interface {
        /// The function's qualified name.
        name: String,
        /// Every problem found; shared, so that a `TypedError` is `Clone`.
        #[source]
        source: Arc<LoadError>,
    },
    /// The box already has a function of that name (ignoring case: calls match names
    /// ignoring case).
    #[error("tool box '{box_name}' already has a function '{name}'")]
    Duplicate {
        /// The box's name.
        box_name: String,
        /// The function's name.
        name: String,
    },
}

/// The interface of a function whose arguments are `A`: `A`'s JSON Schema, as
/// [`load_interfaces`] reads it, under `name` as a call writes it (`mail.send_email`; a name
/// without a dot is a root function). The description is `A`'s doc comment; give another
/// with [`Interface::describe`].
///
/// The schema is generated with every subschema inlined; `Option<T>` (a nullable type or an
/// `anyOf` with `null`) is `T`, and an enum whose variants carry doc comments (a `oneOf` of
/// constants) is a string with choices. A recursive type keeps a reference there, which
/// becomes a parameter of type `any`.
///
/// An atfunc interface has no union and no map type, so some Rust types are shown less
/// precisely than serde reads them (serde still checks the whole value when the call runs,
/// and a bad value is named by its path):
///
/// - An enum whose variants all carry fields, in any serde tagging, is one `object` with
///   every variant's fields. A field is required only where every variant requires it; a
///   tag (`#[serde(tag = "kind")]`) is a choice of the variants' names; a field the
///   variants type differently is `any`. Lost: which fields go with which variant. With
///   external tagging each variant is a field named after it, described by its doc comment.
/// - An enum with variants of different JSON types (unit variants beside variants with
///   fields, `#[serde(untagged)]` of a number and a struct) is `any`.
/// - A `HashMap` or `BTreeMap` is an `object` without fields. Lost: the type of its values.
///
/// ```
/// use atfunc::typed::interface_of;
///
/// /// Send an email.
/// #[derive(schemars::JsonSchema)]
/// struct Send {
///     /// Who gets it.
///     to: String,
/// }
///
/// let send = interface_of::<Send>("mail.send").unwrap();
/// assert_eq!((send.domain.as_deref(), send.name.as_str()), (Some("mail"), "send"));
/// assert_eq!(send.description, "Send an email.");
/// assert_eq!(interface_of::<Send>("send").unwrap().domain, None);
/// ```
pub fn interface_of<A: JsonSchema>(name: &str) -> Result<Interface, TypedError> {
    let qualified = name.to_owned();
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<A>()
        .to_value();
    simplify(&mut schema);
    let Json::Object(mut schema) = schema else {
        return Err(TypedError::NotAnObject {
            name: qualified,
            schema: schema.to_string(),
        });
    };
    // The root title is the type's name, which says nothing the function's name does not.
    schema.shift_remove("title");
    let doc = match schema.shift_remove("description") {
        Some(Json::String(doc)) => doc,
        _ => String::new(),
    };
    match schema.get("type").and_then(Json::as_str) {
        Some("object") => {}
        // `()`: a function without arguments.
        Some("null") => {
            schema = Map::new();
            schema.insert("type".into(), json!("object"));
        }
        _ => {
            return Err(TypedError::NotAnObject {
                name: qualified,
                schema: Json::Object(schema).to_string(),
            })
        }
    }
    let definition = json!([{
        "name": qualified,
        "description": doc,
        "parameters": schema,
    }]);
    let mut interfaces = load_interfaces(&definition).map_err(|source| TypedError::Interface {
        name: qualified.clone(),
        source: Arc::new(source),
    })?;
    interfaces.pop().ok_or_else(|| TypedError::NotAnObject {
        name: qualified,
        schema: definition.to_string(),
    })
}

/// Rewrites what schemars writes into what [`load_interfaces`] reads, in place.
fn simplify(schema: &mut Json) {
    let Json::Object(map) = schema else {
        return;
    };
    // `Option<Struct>` is `anyOf: [{...}, {"type": "null"}]`: the struct, nullable.
    for key in ["anyOf", "oneOf"] {
        let Some(Json::Array(branches)) = map.get(key) else {
            continue;
        };
        let non_null: Vec<&Json> = branches.iter().filter(|b| !is_null_schema(b)).collect();
        if let [only] = non_null.as_slice() {
            let only = (*only).clone();
            map.shift_remove(key);
            if let Json::Object(inner) = only {
                for (k, v) in inner {
                    // The outer description (the field's doc comment) wins.
                    map.entry(k).or_insert(v);
                }
            }
        } else if let Some(choices) = constants(&non_null) {
            map.shift_remove(key);
            if let Some(first) = choices.first() {
                map.entry("type").or_insert(json!(json_type(first)));
            }
            map.insert("enum".into(), Json::Array(choices));
        } else if let Some(merged) = merged_objects(&non_null) {
            map.shift_remove(key);
            for (k, v) in merged {
                map.entry(k).or_insert(v);
            }
        }
    }
    if let Some(value) = map.shift_remove("const") {
        map.entry("type").or_insert(json!(json_type(&value)));
        map.insert("enum".into(), json!([value]));
    }
    if let Some(Json::Object(properties)) = map.get_mut("properties") {
        properties.values_mut().for_each(simplify);
    }
    if let Some(items) = map.get_mut("items") {
        simplify(items);
    }
}

/// Branches that are each an object (an enum whose variants carry fields, in any of serde's
/// taggings) as one object: every variant's fields, each required only where every variant
/// requires it. A field in several variants keeps its schema where they agree, and a tag
/// (one constant per variant) becomes a choice of them; where they disagree it is of any
/// type. Which fields go together is lost: serde checks that when the call runs.
fn merged_objects(branches: &[&Json]) -> Option<Map<String, Json>> {
    if branches.len() < 2 || !branches.iter().all(|b| is_object_schema(b)) {
        return None;
    }
    let mut fields: Vec<(String, Vec<Json>)> = Vec::new();
    for branch in branches {
        let Some(Json::Object(properties)) = branch.get("properties") else {
            continue;
        };
        // A variant with one field (serde's external tagging: `{"Circle": {...}}`) lends
        // the field its doc comment.
        let lent = branch.get("description").filter(|_| properties.len() == 1);
        for (name, schema) in properties {
            let mut schema = schema.clone();
            if let (Some(description), Json::Object(map)) = (lent, &mut schema) {
                map.entry("description").or_insert(description.clone());
            }
            match fields.iter_mut().find(|(known, _)| known == name) {
                Some((_, schemas)) => schemas.push(schema),
                None => fields.push((name.clone(), vec![schema])),
            }
        }
    }
    let required: Vec<Json> = fields
        .iter()
        .map(|(name, _)| name)
        .filter(|name| branches.iter().all(|b| requires(b, name)))
        .map(|name| json!(name))
        .collect();
    let properties: Map<String, Json> = fields
        .into_iter()
        .map(|(name, schemas)| (name, merged_field(schemas)))
        .collect();
    let mut merged = Map::new();
    merged.insert("type".into(), json!("object"));
    merged.insert("properties".into(), Json::Object(properties));
    if !required.is_empty() {
        merged.insert("required".into(), Json::Array(required));
    }
    Some(merged)
}

/// One field of several variants: its schema where they agree, a choice of their constants
/// for a tag, else any type with the first description.
fn merged_field(schemas: Vec<Json>) -> Json {
    if let Some(first) = schemas.first().filter(|f| schemas.iter().all(|s| s == *f)) {
        return first.clone();
    }
    let refs: Vec<&Json> = schemas.iter().collect();
    if let Some(choices) = constants(&refs) {
        let mut choices_unique: Vec<Json> = Vec::new();
        for choice in choices {
            if !choices_unique.contains(&choice) {
                choices_unique.push(choice);
            }
        }
        let ty = choices_unique.first().map(json_type).unwrap_or("string");
        return json!({"type": ty, "enum": choices_unique});
    }
    match schemas.iter().find_map(|s| s.get("description")) {
        Some(description) => json!({"description": description}),
        None => json!({}),
    }
}

fn requires(branch: &Json, name: &str) -> bool {
    match branch.get("required") {
        Some(Json::Array(names)) => names.iter().any(|n| n.as_str() == Some(name)),
        _ => false,
    }
}

fn is_object_schema(schema: &Json) -> bool {
    schema.get("type").and_then(Json::as_str) == Some("object")
}

fn is_null_schema(schema: &Json) -> bool {
    schema.get("type").and_then(Json::as_str) == Some("null")
}

/// The values of branches that are each one constant (`{"const": x}` or `{"enum": [x]}`)
/// of one JSON type: an enum whose variants have doc comments.
fn constants(branches: &[&Json]) -> Option<Vec<Json>> {
    let values: Vec<Json> = branches
        .iter()
        .map(|branch| match (branch.get("const"), branch.get("enum")) {
            (Some(value), _) => Some(value.clone()),
            (None, Some(Json::Array(values))) if values.len() == 1 => values.first().cloned(),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let first = values.first()?;
    values
        .iter()
        .all(|v| json_type(v) == json_type(first))
        .then_some(values)
}

fn json_type(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

type Run = Box<
    dyn for<'a> Fn(Map<String, Json>, &'a CallContext) -> BoxFuture<'a, Result<Json, ToolError>>
        + Send
        + Sync,
>;

struct Entry {
    interface: Interface,
    run: Run,
}

/// A tool box of typed tools under one domain.
///
/// Add tools with [`tool`](TypedBox::tool) (a [`TypedTool`]), [`function`](TypedBox::function)
/// (a plain function or closure) or [`async_function`](TypedBox::async_function). A plain
/// function runs on the caller's task: give work that blocks for long to `async_function`
/// and `tokio::task::spawn_blocking`.
///
/// # Errors at registration
///
/// The builder methods chain as [`FnBox`](crate::execute::FnBox)'s do: a tool that cannot
/// be added (its arguments make no interface, its name is taken) is kept as a problem, not
/// returned at that step, and [`Registry::register`](crate::execute::Registry::register)
/// refuses the box, listing every problem ([`RegisterError::Build`]). [`build`](TypedBox::build)
/// reports them without a registry, for a box used on its own.
///
/// ```
/// use atfunc::execute::{RegisterError, Registry};
/// use atfunc::typed::{TypedBox, TypedError};
///
/// /// Halve a number.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Halve {
///     x: f64,
/// }
///
/// // A `String` is no arguments struct: the second tool cannot be added.
/// let tools = || {
///     TypedBox::new("math")
///         .function("halve", |args: Halve| Ok::<_, String>(args.x / 2.0))
///         .function("shout", |text: String| Ok::<_, String>(text.to_uppercase()))
/// };
/// assert!(matches!(tools().build(), Err(TypedError::NotAnObject { name, .. }) if name == "math.shout"));
///
/// let error = Registry::new().register(tools()).unwrap_err();
/// assert!(matches!(error, RegisterError::Build { .. }));
/// assert!(error.to_string().starts_with(
///     "tool box 'math' was not built: the arguments of 'math.shout' must be a struct"
/// ));
/// ```
///
/// [`RegisterError::Build`]: crate::execute::RegisterError::Build
pub struct TypedBox {
    name: String,
    entries: Vec<Entry>,
    /// Tools that could not be added, in the order they were asked for.
    problems: Vec<TypedError>,
}

impl fmt::Debug for TypedBox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let functions: Vec<&str> = self
            .entries
            .iter()
            .map(|e| e.interface.name.as_str())
            .collect();
        f.debug_struct("TypedBox")
            .field("name", &self.name)
            .field("functions", &functions)
            .field("problems", &self.problems)
            .finish()
    }
}

impl TypedBox {
    /// An empty box; `name` is the domain of its functions.
    pub fn new(name: impl Into<String>) -> TypedBox {
        TypedBox {
            name: name.into(),
            entries: Vec::new(),
            problems: Vec::new(),
        }
    }

    /// The box, or the first tool that could not be added. [`Registry::register`]
    /// makes the same check (listing every problem), so a box headed for a registry
    /// needs no `build`.
    ///
    /// [`Registry::register`]: crate::execute::Registry::register
    pub fn build(mut self) -> Result<TypedBox, TypedError> {
        if self.problems.is_empty() {
            Ok(self)
        } else {
            Err(self.problems.swap_remove(0))
        }
    }

    /// The function `name` of this box, as a call writes it.
    fn qualified(&self, name: &str) -> String {
        qualified(&self.name, name)
    }

    /// The interface of function `name` of this box, or `None` with the problem kept for
    /// registration to report.
    fn interface_or_problem<A: JsonSchema>(&mut self, name: &str) -> Option<Interface> {
        match interface_of::<A>(&self.qualified(name)) {
            Ok(interface) => Some(interface),
            Err(problem) => {
                self.problems.push(problem);
                None
            }
        }
    }

    /// Adds a [`TypedTool`] under its [`id`](TypedTool::id), described by
    /// [`TypedTool::description`] or else the doc comment of its arguments type.
    pub fn tool<T: TypedTool>(mut self, tool: T) -> TypedBox {
        let Some(interface) = self.interface_or_problem::<T::Args>(&tool.id()) else {
            return self;
        };
        let interface = match tool.description() {
            Some(description) => interface.describe(description),
            None => interface,
        };
        let tool = Arc::new(tool);
        let function = interface.qualified_name();
        let params = interface.params.clone();
        let run: Run = Box::new(move |args, ctx| {
            let tool = Arc::clone(&tool);
            let parsed = deserialize::<T::Args>(args, &function, &params);
            let function = function.clone();
            Box::pin(async move { envelope(tool.call(parsed?, ctx).await, &function, ctx) })
        });
        self.push(interface, run)
    }

    /// Adds a plain function `name`, described by the doc comment of its arguments type.
    pub fn function<A, T, E, F>(mut self, name: &str, function: F) -> TypedBox
    where
        A: DeserializeOwned + JsonSchema + 'static,
        T: IntoToolOutput + 'static,
        E: fmt::Display + 'static,
        F: Fn(A) -> Result<T, E> + Send + Sync + 'static,
    {
        let Some(interface) = self.interface_or_problem::<A>(name) else {
            return self;
        };
        let qualified = interface.qualified_name();
        let params = interface.params.clone();
        let run: Run = Box::new(move |args, ctx| {
            let result = deserialize::<A>(args, &qualified, &params)
                .and_then(|args| envelope(function(args), &qualified, ctx));
            Box::pin(futures::future::ready(result))
        });
        self.push(interface, run)
    }

    /// Adds an async function `name`, described by the doc comment of its arguments type.
    pub fn async_function<A, T, E, F, Fut>(mut self, name: &str, function: F) -> TypedBox
    where
        A: DeserializeOwned + JsonSchema + 'static,
        T: IntoToolOutput + 'static,
        E: fmt::Display + 'static,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
    {
        let Some(interface) = self.interface_or_problem::<A>(name) else {
            return self;
        };
        let qualified = interface.qualified_name();
        let params = interface.params.clone();
        let run: Run =
            Box::new(
                move |args, ctx| match deserialize::<A>(args, &qualified, &params) {
                    Ok(args) => {
                        let future = function(args);
                        let qualified = qualified.clone();
                        Box::pin(async move { envelope(future.await, &qualified, ctx) })
                    }
                    Err(error) => Box::pin(futures::future::ready(Err(error))),
                },
            );
        self.push(interface, run)
    }

    fn push(mut self, interface: Interface, run: Run) -> TypedBox {
        let taken = self
            .entries
            .iter()
            .any(|e| e.interface.name.to_lowercase() == interface.name.to_lowercase());
        if taken {
            self.problems.push(TypedError::Duplicate {
                box_name: self.name.clone(),
                name: interface.name,
            });
        } else {
            self.entries.push(Entry { interface, run });
        }
        self
    }
}

#[async_trait::async_trait]
impl ToolBox for TypedBox {
    fn name(&self) -> &str {
        &self.name
    }

    fn interfaces(&self, _ctx: &CallContext) -> Vec<Interface> {
        self.entries.iter().map(|e| e.interface.clone()).collect()
    }

    fn build_errors(&self) -> Vec<BuildError> {
        self.problems.iter().cloned().map(BuildError::new).collect()
    }

    async fn call(
        &self,
        function: &str,
        args: Map<String, Json>,
        ctx: &CallContext,
    ) -> Result<Json, ToolError> {
        let entry = self
            .entries
            .iter()
            .find(|e| e.interface.name == function)
            .ok_or_else(|| ToolError::unknown(function))?;
        (entry.run)(args, ctx).await
    }
}

/// What a typed tool may return: any `Serialize` value, sent as its JSON, or a
/// [`ToolOutput`], whose value the model reads and whose elements go to the client.
///
/// ```
/// use atfunc::execute::{FnBox, Registry, ToolOutput};
/// use atfunc::typed::TypedBox;
/// use atfunc::json;
///
/// /// Show a city's weather to the user.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Show {
///     city: String,
/// }
///
/// let tools = TypedBox::new("weather")
///     .function("show", |args: Show| {
///         let card = json!({"type": "card", "title": args.city, "body": "21 °C, sunny"});
///         Ok::<_, String>(ToolOutput::new(json!("The card is on the user's screen.")).with_element(card))
///     });
/// let registry = Registry::new();
/// registry.register(tools).unwrap();
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let report = registry.execute_response(r#"@weather.show("Oslo")"#).await;
/// assert_eq!(report.calls[0].result, Ok(json!("The card is on the user's screen.")));
/// assert_eq!(report.calls[0].elements[0]["title"], "Oslo");
/// # });
/// ```
pub trait IntoToolOutput {
    /// The value and elements, or why the value is not JSON.
    fn into_tool_output(self) -> Result<ToolOutput, serde_json::Error>;
}

impl<T: Serialize> IntoToolOutput for T {
    fn into_tool_output(self) -> Result<ToolOutput, serde_json::Error> {
        serde_json::to_value(&self).map(ToolOutput::new)
    }
}

impl IntoToolOutput for ToolOutput {
    fn into_tool_output(self) -> Result<ToolOutput, serde_json::Error> {
        Ok(self)
    }
}

/// The tool's outcome as the model sees it, its elements added to the call; see the module
/// docs.
fn envelope<T: IntoToolOutput, E: fmt::Display>(
    outcome: Result<T, E>,
    function: &str,
    ctx: &CallContext,
) -> Result<Json, ToolError> {
    match outcome {
        Ok(value) => match value.into_tool_output() {
            Ok(output) => Ok(ctx.add_output(output)),
            Err(error) => Err(ToolError::msg(format!(
                "Function '{function}' returned a result that is not JSON ({error}); the call may have had its effect"
            ))),
        },
        // The same failure path as every other tool: an error result, counted as one.
        Err(error) => Err(ToolError::Failed(error.to_string())),
    }
}

/// Deserialises the arguments; on failure, names the argument and the type it needs.
fn deserialize<A: DeserializeOwned>(
    args: Map<String, Json>,
    function: &str,
    params: &[Param],
) -> Result<A, ToolError> {
    // `()` and unit structs deserialise from null, not from an empty object.
    let value = if args.is_empty() && params.is_empty() {
        match serde_json::from_value::<A>(Json::Null) {
            Ok(unit) => return Ok(unit),
            Err(_) => Json::Object(args),
        }
    } else {
        Json::Object(args)
    };
    serde_path_to_error::deserialize::<_, A>(&value).map_err(|error| {
        let problem = value
            .as_object()
            .and_then(|args| mismatch(args, params, ""))
            .unwrap_or_else(|| serde_problem(&error));
        ToolError::msg(format!(
            "Invalid arguments for function '{function}': {problem}"
        ))
    })
}

/// serde's message, after the path of the value it is about when that is not the whole
/// arguments object: a value the interface does not describe (the fields of an enum's
/// variant, a map's values) fails in serde alone, whose message names no field. An unknown
/// field is named by the message; the path is that of the object holding it.
fn serde_problem(error: &serde_path_to_error::Error<serde_json::Error>) -> String {
    use serde_path_to_error::Segment;
    let message = error.inner().to_string().replace('`', "'");
    let mut segments: Vec<&Segment> = error.path().iter().collect();
    if message.starts_with("unknown field") {
        segments.pop();
    }
    let mut path = String::new();
    for segment in segments {
        if !path.is_empty() && !matches!(segment, Segment::Seq { .. }) {
            path.push('.');
        }
        path.push_str(&segment.to_string());
    }
    if path.is_empty() {
        message
    } else {
        format!("argument '{path}': {message}")
    }
}

/// The first argument that is missing though required, or whose JSON does not fit its
/// declared type, choices or bounds: "argument 'path' must be ..., found ...".
fn mismatch(args: &Map<String, Json>, params: &[Param], prefix: &str) -> Option<String> {
    params.iter().find_map(|param| {
        let path = format!("{prefix}{}", param.name);
        match args.get(&param.name) {
            None | Some(Json::Null) if param.required => {
                Some(format!("missing required argument '{path}'"))
            }
            None => None,
            Some(value) => check(value, param, &path),
        }
    })
}

fn check(value: &Json, param: &Param, path: &str) -> Option<String> {
    if value.is_null() {
        // Null stands for "not given"; `mismatch` reports a required one.
        return None;
    }
    let fits = match (&param.ty, value) {
        (ParamType::String, Json::String(_))
        | (ParamType::Boolean, Json::Bool(_))
        | (ParamType::Number, Json::Number(_))
        | (ParamType::Any, _) => true,
        (ParamType::Integer, Json::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        (ParamType::Object { properties }, Json::Object(fields)) => {
            return mismatch(fields, properties, &format!("{path}."));
        }
        (ParamType::Array { items }, Json::Array(values)) => {
            let item = items.as_deref()?;
            return values
                .iter()
                .enumerate()
                .find_map(|(i, v)| check(v, item, &format!("{path}[{i}]")));
        }
        _ => false,
    };
    let found = shown(value);
    if !fits {
        let article = match param.ty {
            ParamType::Integer | ParamType::Object { .. } | ParamType::Array { .. } => "an",
            _ => "a",
        };
        return Some(format!(
            "argument '{path}' must be {article} {}, found {found}",
            param.ty
        ));
    }
    if let Some(choices) = &param.choices {
        if !choices.contains(value) {
            let listed: Vec<String> = choices.iter().map(Json::to_string).collect();
            return Some(format!(
                "argument '{path}' must be one of {}, found {found}",
                listed.join(", ")
            ));
        }
    }
    let number = value.as_f64()?;
    if let Some(min) = param.min.filter(|min| number < *min) {
        return Some(format!(
            "argument '{path}' must be at least {min}, found {found}"
        ));
    }
    if let Some(max) = param.max.filter(|max| number > *max) {
        return Some(format!(
            "argument '{path}' must be at most {max}, found {found}"
        ));
    }
    None
}

/// A value as quoted in an error: short, and named by kind when long.
fn shown(value: &Json) -> String {
    let text = value.to_string();
    if text.chars().count() <= 40 {
        return text;
    }
    match value {
        Json::String(_) => "a long string".into(),
        Json::Array(_) | Json::Object(_) => json_kind(value).into(),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simplify_merges_a_nullable_branch_under_the_outer_description() {
        let mut schema = json!({"description": "outer", "anyOf": [
            {"type": "object", "description": "inner", "properties": {"a": {"const": 1}}},
            {"type": "null"}
        ]});
        simplify(&mut schema);
        assert_eq!(
            schema,
            json!({"description": "outer", "type": "object",
                   "properties": {"a": {"type": "integer", "enum": [1]}}})
        );
    }
}
