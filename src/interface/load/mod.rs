//! Loading interfaces from JSON in the shapes people already have.
//!
//! Three shapes are recognised per entry, so one file may even mix them:
//! - the atfunc standard format (`domain`, `name`, `type`, `description`, `params`, `returns`);
//! - an OpenAI tool (`{"type": "function", "function": {name, description, parameters}}`);
//! - a bare function definition with JSON Schema `parameters` (as in BFCL).
//!
//! The standard format is checked strictly, as the reference library does at registration;
//! the two imported shapes get sensible defaults (a missing description is fine there).

//!
//! One job per file: `schema` reads the JSON Schema shapes, `refs` writes out their `$ref`s
//! within [`LoadLimits`], `standard` reads the standard format, and `sink` holds what every
//! reader shares (the problems found so far and the fields every shape has).

mod refs;
mod schema;
mod sink;
mod standard;

pub use refs::{LoadLimit, LoadLimits};

use super::validate::{
    choice_problems, validate_all, ValidationError, ValidationErrorKind, ValidationErrors,
};
use super::{names, Interface};
use crate::messages::{json_kind, qualified};
use refs::Budget;
use schema::load_schema_function;
use serde_json::Value as Json;
use sink::Sink;
use standard::load_standard;

/// Why a tools file could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The text is not JSON. Display gives line, column and what was expected.
    #[error("not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The JSON is not a list of tool definitions.
    #[error("{0}")]
    Shape(String),
    /// Some definitions are invalid; every problem is listed.
    #[error("{}", join_lines(.0))]
    Invalid(Vec<Problem>),
    /// A definition's schema, written out, went past a limit of [`LoadLimits`]; loading
    /// stopped there.
    #[error("function '{function}': {} (limit {limit}); {}", limit.what(*value), limit.advice())]
    Limit {
        /// The function whose definition went past it, as its definition names it.
        function: String,
        /// Which limit.
        limit: LoadLimit,
        /// The limit's value.
        value: usize,
    },
}

/// One problem found in a definition: the function, the toolbox and what is wrong.
pub type Problem = ValidationError;

fn join_lines(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Loads interfaces from JSON text. See [`load_interfaces`].
///
/// ```
/// let tools = atfunc::load_interfaces_str(r#"[{"type": "function", "function": {
///     "name": "weather.get_temp",
///     "parameters": {"type": "object",
///                    "properties": {"location": {"type": "string"}},
///                    "required": ["location"]}}}]"#).unwrap();
/// assert_eq!(tools[0].qualified_name(), "weather.get_temp");
/// assert!(tools[0].params[0].required);
/// ```
pub fn load_interfaces_str(text: &str) -> Result<Vec<Interface>, LoadError> {
    load_interfaces_str_with(text, &LoadLimits::default())
}

/// [`load_interfaces_str`] within `limits`.
pub fn load_interfaces_str_with(
    text: &str,
    limits: &LoadLimits,
) -> Result<Vec<Interface>, LoadError> {
    load_interfaces_with(&serde_json::from_str(text)?, limits)
}

/// Loads interfaces from a parsed JSON value: a list of definitions (or an object holding
/// one under `tools` or `functions`, or a single definition). Every problem in every
/// definition is reported at once. The default [`LoadLimits`] apply; see
/// [`load_interfaces_with`].
pub fn load_interfaces(json: &Json) -> Result<Vec<Interface>, LoadError> {
    load_interfaces_with(json, &LoadLimits::default())
}

/// [`load_interfaces`] within `limits`: a definition whose schema, written out, goes past
/// one is a [`LoadError::Limit`] naming the function.
pub fn load_interfaces_with(json: &Json, limits: &LoadLimits) -> Result<Vec<Interface>, LoadError> {
    let entries: Vec<&Json> = match json {
        Json::Array(items) => items.iter().collect(),
        Json::Object(map) => match map.get("tools").or_else(|| map.get("functions")) {
            Some(Json::Array(items)) => items.iter().collect(),
            _ => vec![json],
        },
        other => {
            return Err(LoadError::Shape(format!(
                "expected a list of tool definitions, found {}",
                json_kind(other)
            )))
        }
    };
    let mut problems = Vec::new();
    let mut interfaces = Vec::with_capacity(entries.len());
    let mut budget = Budget::new(limits);
    for (index, entry) in entries.into_iter().enumerate() {
        let mut sink = Sink {
            problems: &mut problems,
            function: String::new(),
            toolbox: String::new(),
            budget: &mut budget,
            exceeded: None,
        };
        let loaded = load_entry(index, entry, &mut sink);
        if let Some(limit) = sink.exceeded {
            let function = qualified(&sink.toolbox, &sink.function);
            let value = match limit {
                LoadLimit::RefNodes => limits.max_ref_nodes,
                LoadLimit::RefBytes => limits.max_ref_bytes,
                LoadLimit::Depth => limits.max_depth,
            };
            return Err(LoadError::Limit {
                function,
                limit,
                value,
            });
        }
        if let Some(interface) = loaded {
            // What no call could satisfy is refused here, not when a grammar or a call
            // first meets it.
            for param in interface.params.iter().chain(&interface.request_body) {
                choice_problems(param, &param.name, &mut |message| {
                    sink.report_as(ValidationErrorKind::Unsatisfiable, message)
                });
            }
            interfaces.push(interface);
        }
    }
    if problems.is_empty() {
        Ok(interfaces)
    } else {
        Err(LoadError::Invalid(problems))
    }
}

/// Loads interfaces and validates them as one set ([`validate_all`]): what every reader of
/// a tools file wants before it renders a prompt or binds a call. Every problem, of loading
/// or of validation, is in [`LoadError::Invalid`]; the other errors stop at the first.
///
/// ```
/// use atfunc::interface::{load_valid_interfaces, LoadError, LoadLimits};
/// let tools = serde_json::json!([
///     {"name": "get-temp", "parameters": {"type": "object"}},
///     {"name": "get_temp", "parameters": {"type": "object"}},
/// ]);
/// let Err(LoadError::Invalid(problems)) = load_valid_interfaces(&tools, &LoadLimits::default())
/// else { panic!("two tools a call writes alike") };
/// assert_eq!(problems.len(), 1);
/// ```
pub fn load_valid_interfaces(
    json: &Json,
    limits: &LoadLimits,
) -> Result<Vec<Interface>, LoadError> {
    let interfaces = load_interfaces_with(json, limits)?;
    match validate_all(&interfaces) {
        Ok(()) => Ok(interfaces),
        Err(ValidationErrors(problems)) => Err(LoadError::Invalid(problems)),
    }
}

/// [`load_valid_interfaces`] from JSON text.
pub fn load_valid_interfaces_str(
    text: &str,
    limits: &LoadLimits,
) -> Result<Vec<Interface>, LoadError> {
    load_valid_interfaces(&serde_json::from_str(text)?, limits)
}

fn load_entry(index: usize, entry: &Json, sink: &mut Sink) -> Option<Interface> {
    let Some(map) = entry.as_object() else {
        sink.function = format!("#{}", index + 1);
        sink.report(format!(
            "a tool definition must be a JSON object, found {}",
            json_kind(entry)
        ));
        return None;
    };
    // An OpenAI tool wraps the definition; its `type` is always "function".
    let mut interface = if let Some(Json::Object(function)) = map.get("function") {
        load_schema_function(index, function, sink)
    } else if map.contains_key("parameters") && !map.contains_key("params") {
        load_schema_function(index, map, sink)
    } else {
        load_standard(index, map, sink)
    }?;
    for problem in names::name_interface(&mut interface) {
        sink.report_as(ValidationErrorKind::Clash, problem);
    }
    Some(interface)
}
