//! [`TypedBox`]: typed functions and [`TypedTool`]s as a tool box, their arguments
//! checked against the interface and deserialised, their results made into JSON.

use super::schema::{typed_interface, Notes};
use super::{TypedError, TypedTool};
use crate::{BuildError, CallContext, ToolBox, ToolError, ToolOutput};
use atfunc::bind::BindError;
use atfunc::interface::{Interface, Param, ParamType};
use atfunc::messages::{json_kind, qualified};
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value as Json};
use std::fmt;
use std::future::Future;
use std::sync::Arc;

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
/// The builder methods chain as [`FnBox`](crate::FnBox)'s do: a tool that cannot
/// be added (its arguments make no interface, its name is taken) is kept as a problem, not
/// returned at that step, and [`Registry::register`](crate::Registry::register)
/// refuses the box, listing every problem ([`RegisterError::Build`]). [`build`](TypedBox::build)
/// reports them without a registry, for a box used on its own.
///
/// ```
/// use atfunc_tools::{RegisterError, Registry};
/// use atfunc_tools::typed::{TypedBox, TypedError};
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
/// [`RegisterError::Build`]: crate::RegisterError::Build
pub struct TypedBox {
    name: String,
    entries: Vec<Entry>,
    /// Tools that could not be added, in the order they were asked for.
    problems: Vec<TypedError>,
    /// Whether declared defaults are filled in before arguments are deserialised. Off by
    /// default so a tool sees exactly the arguments the model chose, as an `FnBox`'s does.
    fill_defaults: bool,
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
            .field("fill_defaults", &self.fill_defaults)
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
            fill_defaults: false,
        }
    }

    /// Opts in to filling declared defaults, as
    /// [`FnBox::apply_defaults`](crate::FnBox::apply_defaults) does: before the
    /// arguments of any of the box's tools are deserialised, every parameter the model left
    /// out whose schema declares a `default` gets it (`#[serde(default)]` and
    /// `#[serde(default = "path")]` declare one where the field's type is `Serialize`, and
    /// so does `#[schemars(default = "path")]`). A value the model gave, `null` included,
    /// is kept. Without it (the default) serde sees exactly what the model chose, and only
    /// serde's own defaults apply: a default declared to schemars alone is then shown in the
    /// schema but not applied.
    ///
    /// Top-level parameters only: a field inside an object parameter is left to serde.
    ///
    /// ```
    /// use atfunc_tools::{CallContext, ToolBox};
    /// use atfunc_tools::typed::TypedBox;
    /// use serde_json::json;
    ///
    /// fn three() -> u32 {
    ///     3
    /// }
    ///
    /// /// The weather ahead.
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Forecast {
    ///     city: String,
    ///     #[schemars(default = "three")]
    ///     days: Option<u32>,
    /// }
    ///
    /// let tools = TypedBox::new("weather")
    ///     .function("forecast", |args: Forecast| Ok::<_, String>(args.days))
    ///     .apply_defaults();
    /// let args = json!({"city": "Oslo"}).as_object().unwrap().clone();
    /// let days = futures::executor::block_on(tools.call("forecast", args, &CallContext::new()));
    /// assert_eq!(days.unwrap(), json!(3));
    /// ```
    pub fn apply_defaults(mut self) -> TypedBox {
        self.fill_defaults = true;
        self
    }

    /// The box, or the first tool that could not be added. [`Registry::register`]
    /// makes the same check (listing every problem), so a box headed for a registry
    /// needs no `build`.
    ///
    /// [`Registry::register`]: crate::Registry::register
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

    /// The interface of function `name` of this box and its notes, or `None` with the
    /// problem kept for registration to report.
    fn interface_or_problem<A: JsonSchema>(&mut self, name: &str) -> Option<(Interface, Notes)> {
        match typed_interface::<A>(&self.qualified(name)) {
            Ok(found) => Some(found),
            Err(problem) => {
                self.problems.push(problem);
                None
            }
        }
    }

    /// Adds a [`TypedTool`] under its [`id`](TypedTool::id), described by
    /// [`TypedTool::description`] or else the doc comment of its arguments type.
    pub fn tool<T: TypedTool>(mut self, tool: T) -> TypedBox {
        let Some((interface, notes)) = self.interface_or_problem::<T::Args>(&tool.id()) else {
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
            let parsed = deserialize::<T::Args>(args, &function, &params, &notes);
            let function = function.clone();
            Box::pin(async move { envelope(tool.call(parsed?, ctx).await, &function, ctx) })
        });
        self.push(interface, run)
    }

    /// Adds a plain function `name`, described by the doc comment of its arguments type.
    pub fn function<A, T, E, F>(mut self, name: impl Into<String>, function: F) -> TypedBox
    where
        A: DeserializeOwned + JsonSchema + 'static,
        T: IntoToolOutput + 'static,
        E: Into<Box<dyn std::error::Error + Send + Sync>> + 'static,
        F: Fn(A) -> Result<T, E> + Send + Sync + 'static,
    {
        let Some((interface, notes)) = self.interface_or_problem::<A>(&name.into()) else {
            return self;
        };
        let qualified = interface.qualified_name();
        let params = interface.params.clone();
        let run: Run = Box::new(move |args, ctx| {
            let result = deserialize::<A>(args, &qualified, &params, &notes)
                .and_then(|args| envelope(function(args), &qualified, ctx));
            Box::pin(futures::future::ready(result))
        });
        self.push(interface, run)
    }

    /// Adds an async function `name`, described by the doc comment of its arguments type.
    pub fn async_function<A, T, E, F, Fut>(
        mut self,
        name: impl Into<String>,
        function: F,
    ) -> TypedBox
    where
        A: DeserializeOwned + JsonSchema + 'static,
        T: IntoToolOutput + 'static,
        E: Into<Box<dyn std::error::Error + Send + Sync>> + 'static,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
    {
        let Some((interface, notes)) = self.interface_or_problem::<A>(&name.into()) else {
            return self;
        };
        let qualified = interface.qualified_name();
        let params = interface.params.clone();
        let run: Run =
            Box::new(
                move |args, ctx| match deserialize::<A>(args, &qualified, &params, &notes) {
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
        let mut args = args;
        if self.fill_defaults {
            for param in &entry.interface.params {
                if let Some(default) = &param.default {
                    // Arguments reach the box under the names serde reads.
                    args.entry(param.original_name().to_owned())
                        .or_insert_with(|| default.clone());
                }
            }
        }
        (entry.run)(args, ctx).await
    }
}

/// What a typed tool may return: any `Serialize` value, sent as its JSON, or a
/// [`ToolOutput`], whose value the model reads and whose elements go to the client.
///
/// ```
/// use atfunc_tools::{FnBox, Registry, ToolOutput};
/// use atfunc_tools::typed::TypedBox;
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
fn envelope<T: IntoToolOutput, E: Into<Box<dyn std::error::Error + Send + Sync>> + 'static>(
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
        // The same failure path as every other tool: an error result, counted as one. The
        // error stays a value, so its source chain is kept and shown.
        Err(error) => Err(tool_failure(error)),
    }
}

/// A typed tool's error as the model reads it. A message (`String`, `&str`) has no source
/// to keep and stays [`ToolError::Failed`], as a closure's would; any other error is kept
/// whole ([`ToolError::Error`]), its causes shown.
fn tool_failure<E: Into<Box<dyn std::error::Error + Send + Sync>> + 'static>(
    error: E,
) -> ToolError {
    use std::any::TypeId;
    let message = TypeId::of::<E>() == TypeId::of::<String>()
        || TypeId::of::<E>() == TypeId::of::<&'static str>();
    let boxed: Box<dyn std::error::Error + Send + Sync> = error.into();
    if message {
        ToolError::Failed(boxed.to_string())
    } else {
        ToolError::from_error(boxed)
    }
}

/// Deserialises the arguments; on failure, names the argument and the type it needs.
fn deserialize<A: DeserializeOwned>(
    args: Map<String, Json>,
    function: &str,
    params: &[Param],
    notes: &Notes,
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
            .unwrap_or_else(|| serde_problem(&error, notes));
        ToolError::Bind(BindError::InvalidArguments {
            function: function.to_owned(),
            problem,
        })
    })
}

/// serde's message, after the path of the value it is about when that is not the whole
/// arguments object: a value the interface does not describe (the fields of an enum's
/// variant, a map's values) fails in serde alone, whose message names no field. An unknown
/// field is named by the message; the path is that of the object holding it. A value the
/// interface shows less precisely than serde reads it (a union, a tuple) is followed by
/// its note, the forms it takes: serde's own message names a Rust type, not what to write.
fn serde_problem(error: &serde_path_to_error::Error<serde_json::Error>, notes: &Notes) -> String {
    use serde_path_to_error::Segment;
    let message = error.inner().to_string().replace('`', "'");
    let mut segments: Vec<&Segment> = error.path().iter().collect();
    if message.starts_with("unknown field") {
        segments.pop();
    }
    let mut path = String::new();
    // The path of the value a note may be about: a wrong variant of an enum fails at the
    // variant (`mark.Circle`), and the note is the enum's.
    let mut noted = String::new();
    for segment in segments {
        noted.clone_from(&path);
        if !path.is_empty() && !matches!(segment, Segment::Seq { .. }) {
            path.push('.');
        }
        path.push_str(&segment.to_string());
        if !matches!(segment, Segment::Enum { .. }) {
            noted.clone_from(&path);
        }
    }
    let note = notes
        .iter()
        .find(|(pattern, _)| path_matches(pattern, &noted))
        .map(|(_, note)| note);
    match (path.is_empty(), note) {
        (true, _) => message,
        (false, None) => format!("argument '{path}': {message}"),
        (false, Some(note)) => format!("argument '{path}': {message}. {note}"),
    }
}

/// Whether a path of [`Notes`] (where `[]` stands for any index) names `path`
/// (`items[2].shape`).
fn path_matches(pattern: &str, path: &str) -> bool {
    let mut pieces = pattern.split("[]");
    let Some(rest) = pieces.next().and_then(|first| path.strip_prefix(first)) else {
        return false;
    };
    let mut rest = rest;
    for piece in pieces {
        let Some(index) = rest.strip_prefix('[') else {
            return false;
        };
        let Some(end) = index.find(']') else {
            return false;
        };
        let digits = &index[..end];
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return false;
        }
        match index[end + 1..].strip_prefix(piece) {
            Some(after) => rest = after,
            None => return false,
        }
    }
    rest.is_empty()
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
    use super::path_matches;

    #[test]
    fn a_note_s_path_matches_any_index_where_it_has_brackets() {
        assert!(path_matches("steps[]", "steps[12]"));
        assert!(path_matches("a[].b[1]", "a[0].b[1]"));
        assert!(path_matches("at", "at"));
        assert!(!path_matches("at", "at[0]"));
        assert!(!path_matches("steps[]", "steps[]"));
        assert!(!path_matches("steps[]", "steps[x]"));
        assert!(!path_matches("a[].b", "a[0].c"));
    }
}
