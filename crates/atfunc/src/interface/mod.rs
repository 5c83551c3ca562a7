//! Phase 1, the interface: what a tool is, as the model will be told and as calls bind to it.
//!
//! [`Interface`] is the one model every other phase reads. It is built by [`LoadOptions`]
//! (or its one-line forms [`load_interfaces`] and [`load_interfaces_str`]) from JSON in any
//! of the three shapes people already have (the atfunc standard format, an OpenAI `tools`
//! array, bare JSON Schema function definitions) and checked by [`validate_toolbox`].

mod load;
mod names;
mod string_format;
mod validate;

pub use crate::messages::json_message;
pub use load::{
    load_interfaces, load_interfaces_str, LoadError, LoadLimit, LoadLimits, LoadOptions, Loaded,
    Problem, Strictness,
};
pub use names::{dotted_identifier, identifier};
pub use string_format::StringFormat;
pub use validate::{
    validate_all, validate_toolbox, ValidationError, ValidationErrorKind, ValidationErrors,
};

use serde::Serialize;
use serde_json::{Map, Value as Json};
use std::fmt;

/// What kind of thing an interface describes, as in the standard format's `type` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A plain function: `@domain.fn(args)`.
    Function,
    /// A wrapper around an HTTP endpoint: path and query parameters are the call's
    /// arguments, and a `with_body [[ ... ]]` block carries the request body.
    ApiWrapper,
}

impl Kind {
    /// The spelling used in the standard format.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Function => "function",
            Kind::ApiWrapper => "api-wrapper",
        }
    }
}

/// Where an api-wrapper sends a parameter. Plain functions use [`Location::Param`] throughout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Location {
    /// An ordinary function parameter.
    Param,
    /// Substituted into the api-wrapper's URL path.
    Path,
    /// Sent in the api-wrapper's query string.
    Query,
    /// A field of the api-wrapper's request body.
    Body,
}

/// The declared type of a parameter, after the aliases found in the wild are resolved
/// (`dict` → object, `float`/`double` → number, `int` → integer, `bool`, `tuple` → array).
/// More types may come: a `match` outside the crate needs a `_` arm.
///
/// ```compile_fail,E0004
/// use atfunc::ParamType;
/// fn json_kind(ty: &ParamType) -> &'static str {
///     match ty {
///         ParamType::String => "string",
///         ParamType::Number | ParamType::Integer => "number",
///         ParamType::Boolean => "boolean",
///         ParamType::Array { .. } => "array",
///         ParamType::Object { .. } => "object",
///         ParamType::Any => "any",
///     }
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ParamType {
    /// Text. The default when a definition names no type.
    String,
    /// Any JSON number.
    Number,
    /// A whole number.
    Integer,
    /// `true` or `false`.
    Boolean,
    /// A JSON object; `properties` is empty when the definition gives none.
    Object {
        /// The declared fields, in declared order.
        properties: Vec<Param>,
    },
    /// A JSON array; `items` is `None` when the definition does not say.
    Array {
        /// The schema of each element.
        items: Option<Box<Param>>,
    },
    /// Anything at all (`any`, or a schema without a usable type).
    Any,
}

impl ParamType {
    /// The canonical name shown to the model in a `{type}` suffix.
    pub fn name(&self) -> &'static str {
        match self {
            ParamType::String => "string",
            ParamType::Number => "number",
            ParamType::Integer => "integer",
            ParamType::Boolean => "boolean",
            ParamType::Object { .. } => "object",
            ParamType::Array { .. } => "array",
            ParamType::Any => "any",
        }
    }

    /// Resolves a declared type name, aliases included, ignoring case (Java's `HashMap`,
    /// `ArrayList` and `char`, which BFCL's Java functions declare, among them). `None` for
    /// a name atfunc does not know.
    pub fn from_name(name: &str) -> Option<ParamType> {
        let lower = name.trim().to_ascii_lowercase();
        Some(match lower.as_str() {
            "string" | "str" | "text" | "char" | "character" => ParamType::String,
            "number" | "float" | "double" | "decimal" => ParamType::Number,
            "integer" | "int" | "long" => ParamType::Integer,
            "boolean" | "bool" => ParamType::Boolean,
            "object" | "dict" | "map" | "hashmap" => ParamType::Object {
                properties: Vec::new(),
            },
            "array" | "list" | "tuple" | "arraylist" | "set" => ParamType::Array { items: None },
            "any" => ParamType::Any,
            _ => return None,
        })
    }
}

impl fmt::Display for ParamType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One parameter of an interface (or one field of an object, or an array's items).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Param {
    /// The name a call writes: as the definition spells it, or, for a parameter whose
    /// name is not an identifier, the identifier made of it (`max-results` →
    /// `max_results`, see [`identifier`]). Empty for an array's `items`. Fields inside an
    /// object are written as JSON keys and keep their spelling.
    pub name: String,
    /// The name as the definition spells it, when it is not [`Param::name`]: arguments go
    /// back to the tool under it (see [`Param::original_name`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original: Option<String>,
    /// The declared type.
    #[serde(flatten)]
    pub ty: ParamType,
    /// Whether a call must give it.
    pub required: bool,
    /// What it means; may be empty for imported JSON Schema definitions.
    pub description: String,
    /// The allowed values (`enum` or `choices`), when restricted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub choices: Option<Vec<serde_json::Value>>,
    /// The smallest allowed number (`min`, `minimum`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// The largest allowed number (`max`, `maximum`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// The default the definition declares, if any: kept in exported schemas and shown
    /// in request-body examples. Binding does not fill it in: a call that leaves the
    /// parameter out binds without it, and the tool applies its default (a closure in an
    /// `FnBox` or a `TypedBox` built with `apply_defaults()` gets it filled in).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_json::Value>,
    /// JSON Schema's `format` (`date`, `email`, `uuid`, ...), as declared. The formats in
    /// [`StringFormat`] are checked when a call binds; others are kept and not checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// For an object: whether it takes no fields beyond its declared properties (JSON
    /// Schema's `"additionalProperties": false`). A call that gives another field is then
    /// refused; an open object (the default) passes undeclared fields on as written.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub closed: bool,
    /// Where an api-wrapper sends it.
    pub location: Location,
}

impl Param {
    /// A plain optional string parameter with no description: the starting point for
    /// builders and tests.
    pub fn new(name: impl Into<String>, ty: ParamType) -> Param {
        Param {
            name: name.into(),
            original: None,
            ty,
            required: false,
            description: String::new(),
            choices: None,
            min: None,
            max: None,
            default: None,
            format: None,
            closed: false,
            location: Location::Param,
        }
    }

    /// Marks the parameter required.
    pub fn required(mut self) -> Param {
        self.required = true;
        self
    }

    /// Sets the description.
    pub fn describe(mut self, description: impl Into<String>) -> Param {
        self.description = description.into();
        self
    }

    /// Limits the value to `choices` (JSON Schema's `enum`).
    ///
    /// ```
    /// use atfunc::{Param, ParamType};
    /// use serde_json::json;
    ///
    /// let unit = Param::new("unit", ParamType::String).choices(["celsius", "fahrenheit"]);
    /// assert_eq!(unit.choices, Some(vec![json!("celsius"), json!("fahrenheit")]));
    /// let days = Param::new("days", ParamType::Integer).min(1.0).max(16.0).default_value(3);
    /// assert_eq!((days.min, days.max, days.default), (Some(1.0), Some(16.0), Some(json!(3))));
    /// ```
    pub fn choices<T: Into<serde_json::Value>>(
        mut self,
        choices: impl IntoIterator<Item = T>,
    ) -> Param {
        self.choices = Some(choices.into_iter().map(Into::into).collect());
        self
    }

    /// The smallest value allowed (JSON Schema's `minimum`).
    pub fn min(mut self, min: f64) -> Param {
        self.min = Some(min);
        self
    }

    /// The largest value allowed (JSON Schema's `maximum`).
    pub fn max(mut self, max: f64) -> Param {
        self.max = Some(max);
        self
    }

    /// Declares the value's JSON Schema `format`, kept as written in the
    /// [`format`](Param#structfield.format) field and read as a [`StringFormat`] by
    /// [`Param::known_format`].
    ///
    /// ```
    /// use atfunc::interface::{Param, ParamType, StringFormat};
    ///
    /// let day = Param::new("day", ParamType::String).format("date");
    /// assert_eq!(day.known_format(), Some(StringFormat::Date));
    /// ```
    pub fn format(mut self, format: impl Into<String>) -> Param {
        self.format = Some(format.into());
        self
    }

    /// The declared format, when it is one atfunc checks.
    pub fn known_format(&self) -> Option<StringFormat> {
        self.format.as_deref().and_then(StringFormat::from_name)
    }

    /// Declares the tool's default for the parameter. It is not applied at binding: a
    /// call that leaves the parameter out binds without it (the key is absent; a box's
    /// `Args::opt` reads `None`), and the tool applies its
    /// default. Exported schemas carry it, and request-body examples show it.
    ///
    /// Choices, bounds and a default at work: the prompt shows the choices and bounds, and
    /// a call binds within them or is refused saying what to write.
    ///
    /// ```
    /// use atfunc::{bind, parse_events, Catalog, Event, Interface, Param, ParamType};
    /// use atfunc::render::render_interface;
    ///
    /// let forecast = Interface::new("forecast")
    ///     .in_domain("weather")
    ///     .param(Param::new("city", ParamType::String).required())
    ///     .param(Param::new("days", ParamType::Integer).min(1.0).max(16.0).default_value(3))
    ///     .param(Param::new("unit", ParamType::String).choices(["celsius", "fahrenheit"]));
    /// assert_eq!(
    ///     render_interface(&forecast),
    ///     "@weather.forecast( <*city>, <days{integer 1..16}>, <unit{\"celsius\"|\"fahrenheit\"}> )\n"
    /// );
    ///
    /// let catalog = Catalog::new(vec![forecast]);
    /// let bind_text = |text: &str| match parse_events(text).into_iter().find_map(|e| match e {
    ///     Event::Call(call) => Some(call),
    ///     _ => None,
    /// }) {
    ///     Some(call) => bind(&call, &catalog).map_err(|e| e.to_string()),
    ///     None => Err("no call".to_owned()),
    /// };
    /// // Left out, `days` stays out of the arguments: the default is the tool's to apply.
    /// let bound = bind_text(r#"@weather.forecast("Oslo", unit="celsius")"#).unwrap();
    /// assert_eq!(bound.args.get("days"), None);
    /// assert_eq!(catalog.interfaces()[0].params[1].default, Some(3.into()));
    /// assert!(bind_text(r#"@weather.forecast("Oslo", days=30)"#).unwrap_err().contains("16"));
    /// assert!(bind_text(r#"@weather.forecast("Oslo", unit="kelvin")"#).unwrap_err().contains("celsius"));
    /// ```
    pub fn default_value(mut self, value: impl Into<serde_json::Value>) -> Param {
        self.default = Some(value.into());
        self
    }

    /// The choices each element of an array parameter must be among, when its own `enum`
    /// is meant per element.
    ///
    /// JSON Schema puts `enum` on the value itself, so `{"type": "array", "enum": ["view",
    /// "click"]}` would admit no list at all; tool files in the wild write it that way
    /// meaning "a list of these". A list of choices none of which is itself a list can only
    /// mean that, so it applies to each element. Choices that are lists keep their JSON
    /// Schema meaning (the whole value is one of them), and so does every non-array type.
    ///
    /// ```
    /// use atfunc::{Param, ParamType};
    /// use serde_json::json;
    ///
    /// let mut metrics = Param::new("metrics", ParamType::Array { items: None });
    /// metrics.choices = Some(vec![json!("view"), json!("click")]);
    /// assert_eq!(metrics.element_choices(), Some(&[json!("view"), json!("click")][..]));
    ///
    /// metrics.choices = Some(vec![json!(["view"]), json!(["view", "click"])]);
    /// assert_eq!(metrics.element_choices(), None);
    /// ```
    pub fn element_choices(&self) -> Option<&[serde_json::Value]> {
        let choices = self.choices.as_deref()?;
        let per_element = matches!(self.ty, ParamType::Array { .. })
            && !choices.iter().any(serde_json::Value::is_array);
        per_element.then_some(choices)
    }

    /// What each element of an array parameter must be: its `items` (`any` when they are not
    /// declared), restricted further by the array's own per-element choices
    /// ([`element_choices`](Param::element_choices)): both apply, so the element's choices
    /// are those in both lists. `None` for a parameter that is not an array.
    ///
    /// Rendering and the JSON Schema export read this, so a model sees the choices where
    /// they apply; binding checks both lists as they are, which comes to the same.
    pub fn element(&self) -> Option<Param> {
        let ParamType::Array { items } = &self.ty else {
            return None;
        };
        let mut element = match items {
            Some(item) => (**item).clone(),
            None => Param::new("", ParamType::Any),
        };
        if let Some(choices) = self.element_choices() {
            element.choices = Some(match &element.choices {
                Some(own) => own
                    .iter()
                    .filter(|c| choices.contains(c))
                    .cloned()
                    .collect(),
                None => choices.to_vec(),
            });
        }
        Some(element)
    }

    /// The name as the definition spells it: the key the tool gets the argument under.
    ///
    /// ```
    /// let tools = atfunc::load_interfaces_str(r#"[{"name": "search", "parameters": {
    ///     "type": "object", "properties": {"max-results": {"type": "integer"}}}}]"#).unwrap();
    /// let param = &tools[0].params[0];
    /// assert_eq!((param.name.as_str(), param.original_name()), ("max_results", "max-results"));
    /// ```
    pub fn original_name(&self) -> &str {
        self.original.as_deref().unwrap_or(&self.name)
    }
}

/// The spelling of an interface's names in its definition, where it is not what a call
/// writes. `None` for a part that is written as defined.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Original {
    /// The domain as defined (`my-api`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// The function name as defined (`get-weather`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A tool's interface: everything the model is told and everything a call binds against.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Interface {
    /// The tool box the function belongs to (`weather` in `@weather.get_temp`); `None` for a
    /// root function called as `@name(...)`. May itself contain dots.
    pub domain: Option<String>,
    /// The function's name as a call writes it: as the definition spells it, or the
    /// identifier made of it when it is not one (`get-weather` → `get_weather`).
    pub name: String,
    /// The domain and name as the definition spells them, when either is not what a call
    /// writes; see [`Interface::original_qualified_name`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original: Option<Original>,
    /// `function` or `api-wrapper`.
    pub kind: Kind,
    /// What the function does.
    pub description: String,
    /// The call's parameters in declared order. For an api-wrapper: its path parameters,
    /// then its query parameters.
    pub params: Vec<Param>,
    /// An api-wrapper's request body fields, carried by the `with_body [[ ... ]]` block.
    pub request_body: Vec<Param>,
    /// What the function returns (`string`, `object`, ...), when declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub returns: Option<String>,
    /// An api-wrapper's response media type, when declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_type: Option<String>,
}

impl Interface {
    /// A root function (called as `@name(...)`) with no parameters and no description;
    /// [`in_domain`](Interface::in_domain) puts it in a tool box.
    ///
    /// ```
    /// use atfunc::Interface;
    /// assert_eq!(Interface::new("now").qualified_name(), "now");
    /// assert_eq!(Interface::new("now").in_domain("clock").qualified_name(), "clock.now");
    /// ```
    pub fn new(name: impl Into<String>) -> Interface {
        Interface {
            domain: None,
            name: name.into(),
            original: None,
            kind: Kind::Function,
            description: String::new(),
            params: Vec::new(),
            request_body: Vec::new(),
            returns: None,
            response_type: None,
        }
    }

    /// Puts the function in the tool box `domain`: it is called as `@domain.name(...)`.
    pub fn in_domain(mut self, domain: impl Into<String>) -> Interface {
        self.domain = Some(domain.into());
        self
    }

    /// The name a call uses: `domain.name`, or `name` for a root function.
    pub fn qualified_name(&self) -> String {
        match &self.domain {
            Some(domain) => format!("{domain}.{}", self.name),
            None => self.name.clone(),
        }
    }

    /// The qualified name as the definition spells it (`get-weather`, `my-api.list`): the
    /// name results, bound calls and `tool_calls` carry. [`Interface::qualified_name`] is
    /// the name a call writes.
    ///
    /// ```
    /// let tools = atfunc::load_interfaces_str(
    ///     r#"[{"name": "get-weather", "parameters": {"type": "object"}}]"#).unwrap();
    /// assert_eq!(tools[0].qualified_name(), "get_weather");
    /// assert_eq!(tools[0].original_qualified_name(), "get-weather");
    /// ```
    pub fn original_qualified_name(&self) -> String {
        let Some(original) = &self.original else {
            return self.qualified_name();
        };
        let name = original.name.as_deref().unwrap_or(&self.name);
        match (original.domain.as_deref(), self.domain.as_deref()) {
            (Some(domain), _) | (None, Some(domain)) => format!("{domain}.{name}"),
            (None, None) => name.to_owned(),
        }
    }

    /// Arguments keyed by the names the definition spells (a `tool_calls` entry's, say),
    /// put under the names a call writes; keys that are no parameter's stay.
    pub fn written_args(&self, args: Map<String, Json>) -> Map<String, Json> {
        if self.params.iter().all(|p| p.original.is_none()) {
            return args;
        }
        args.into_iter()
            .map(
                |(key, value)| match self.params.iter().find(|p| p.original_name() == key) {
                    Some(param) => (param.name.clone(), value),
                    None => (key, value),
                },
            )
            .collect()
    }

    /// Whether calls carry a `with_body [[ ... ]]` block.
    pub fn has_body(&self) -> bool {
        self.kind == Kind::ApiWrapper && !self.request_body.is_empty()
    }

    /// Adds a parameter (builder style).
    pub fn param(mut self, param: Param) -> Interface {
        self.params.push(param);
        self
    }

    /// Sets the description (builder style).
    pub fn describe(mut self, description: impl Into<String>) -> Interface {
        self.description = description.into();
        self
    }
}

/// Whether `name` is an identifier: Unicode letters, digits and `_`, not starting with a
/// digit. Parameter and function names must be identifiers so a model can write them.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(is_identifier_char)
}

/// One character of an identifier (see [`is_identifier`]).
pub(crate) fn is_identifier_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}
