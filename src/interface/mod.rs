//! Phase 1, the interface: what a tool is, as the model will be told and as calls bind to it.
//!
//! [`Interface`] is the one model every other phase reads. It is built by [`load_interfaces`] from JSON
//! in any of the three shapes people already have (the atfunc standard format, an OpenAI
//! `tools` array, bare JSON Schema function definitions) and checked by [`validate_toolbox`].

mod load;
mod validate;

pub(crate) use load::json_kind;
pub use load::{load_interfaces, load_interfaces_str, LoadError, Problem};
pub use validate::{validate_all, validate_toolbox, ValidationError, ValidationErrors};

use serde::Serialize;
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
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
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

    /// Resolves a declared type name, aliases included, ignoring case. `None` for a name
    /// atfunc does not know.
    pub fn from_name(name: &str) -> Option<ParamType> {
        let lower = name.trim().to_ascii_lowercase();
        Some(match lower.as_str() {
            "string" | "str" | "text" => ParamType::String,
            "number" | "float" | "double" | "decimal" => ParamType::Number,
            "integer" | "int" | "long" => ParamType::Integer,
            "boolean" | "bool" => ParamType::Boolean,
            "object" | "dict" | "map" => ParamType::Object {
                properties: Vec::new(),
            },
            "array" | "list" | "tuple" => ParamType::Array { items: None },
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
pub struct Param {
    /// The name exactly as the definition spells it (empty for an array's `items`).
    pub name: String,
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
    /// The value used when a call leaves it out, if the definition gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_json::Value>,
    /// Where an api-wrapper sends it.
    pub location: Location,
}

impl Param {
    /// A plain optional string parameter with no description: the starting point for
    /// builders and tests.
    pub fn new(name: impl Into<String>, ty: ParamType) -> Param {
        Param {
            name: name.into(),
            ty,
            required: false,
            description: String::new(),
            choices: None,
            min: None,
            max: None,
            default: None,
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
}

/// A tool's interface: everything the model is told and everything a call binds against.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interface {
    /// The tool box the function belongs to (`weather` in `@weather.get_temp`); `None` for a
    /// root function called as `@name(...)`. May itself contain dots.
    pub domain: Option<String>,
    /// The function's name, exactly as the definition spells it.
    pub name: String,
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
    /// A plain function with no parameters and no description.
    pub fn function(domain: Option<&str>, name: impl Into<String>) -> Interface {
        Interface {
            domain: domain.map(str::to_owned),
            name: name.into(),
            kind: Kind::Function,
            description: String::new(),
            params: Vec::new(),
            request_body: Vec::new(),
            returns: None,
            response_type: None,
        }
    }

    /// The name a call uses: `domain.name`, or `name` for a root function.
    pub fn qualified_name(&self) -> String {
        match &self.domain {
            Some(domain) => format!("{domain}.{}", self.name),
            None => self.name.clone(),
        }
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
pub fn is_identifier_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}
