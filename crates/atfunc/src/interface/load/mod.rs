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
//! # Lenient by default
//!
//! Tools arrive from clients and data files written for servers that accept them as they
//! are (OpenAI's API among them), so a definition that can be read is read: what contradicts
//! itself or JSON Schema is worked around, and each workaround is a warning in
//! [`Loaded::warnings`] saying what was done. A boolean whose `enum` is `["True", "False"]`
//! is read as a boolean, one whose `enum` is `["True", "False", "dontcare"]` as `true`,
//! `false` or `"dontcare"`; a `required` written as one name is read as a list of it; bounds
//! the wrong way round, an empty `enum`, a `required` key that is not a property and a
//! description that is not a string are left out; an unknown type is read as any; a
//! function defined twice keeps its first definition. A restriction atfunc does not enforce
//! (`pattern`, `not`, a union of schemas in `anyOf`, ...) is a warning too, and `const` is
//! read as the only choice, with a warning saying so. Only what cannot be read at all is an
//! error: text that is not JSON, a definition that is not an object or has no name, two
//! names a call writes alike. [`Strictness::Strict`] turns every warning into a problem
//! but the one about `const`, which loses nothing, for authors who want their definitions
//! clean (`atfunc check --strict`).

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
    default_problems, defined_name, unfit_choices, validate_all, ValidationError,
    ValidationErrorKind, ValidationErrors,
};
use super::{names, Interface, Param, ParamType};
use crate::messages::{json_kind, qualified};
use refs::Budget;
use schema::{load_schema_function, values_type};
use serde_json::Value as Json;
use sink::Sink;
use standard::load_standard;
use std::collections::HashMap;

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

/// What a loader does with a definition it can read but that contradicts itself or JSON
/// Schema (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Strictness {
    /// Work around it and list what was done in [`Loaded::warnings`].
    #[default]
    Lenient,
    /// Refuse it: each workaround is a problem of [`LoadError::Invalid`].
    Strict,
}

/// Interfaces loaded, with what was worked around to read them.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Loaded {
    /// The interfaces, in definition order.
    pub interfaces: Vec<Interface>,
    /// What the definitions contradict and how it was read instead, what they declare
    /// that atfunc does not enforce (`pattern`, `maxLength`, ...), and what it enforces in
    /// another form (`const` as the only choice), in definition order. With
    /// [`Strictness::Strict`] only the last remain: the others are problems.
    pub warnings: Vec<Problem>,
}

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
///
/// Definitions are read leniently; [`load_tools`] also returns what was worked around.
pub fn load_interfaces_with(json: &Json, limits: &LoadLimits) -> Result<Vec<Interface>, LoadError> {
    load_entries(json, limits, Strictness::Lenient).map(|loaded| loaded.interfaces)
}

fn load_entries(
    json: &Json,
    limits: &LoadLimits,
    strictness: Strictness,
) -> Result<Loaded, LoadError> {
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
    let mut warnings = Vec::new();
    let mut interfaces = Vec::with_capacity(entries.len());
    let mut budget = Budget::new(limits);
    for (index, entry) in entries.into_iter().enumerate() {
        let mut sink = Sink {
            problems: &mut problems,
            warnings: &mut warnings,
            strictness,
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
        if let Some(mut interface) = loaded {
            // What no call could satisfy is settled here, not when a grammar or a call
            // first meets it.
            for param in interface
                .params
                .iter_mut()
                .chain(interface.request_body.iter_mut())
            {
                let path = param.name.clone();
                settle_choices(param, &path, &mut sink);
                default_problems(param, &path, &mut |message| {
                    sink.repair(
                        message,
                        "it is kept as declared (binding does not fill it in)",
                    )
                });
            }
            interfaces.push(interface);
        }
    }
    if problems.is_empty() {
        Ok(Loaded {
            interfaces,
            warnings,
        })
    } else {
        Err(LoadError::Invalid(problems))
    }
}

/// A parameter typed `boolean` or `integer` whose choices are all strings (`["True",
/// "False", "dontcare"]`, as real tool files have them) could never be called with: read
/// leniently, it takes the type its choices share (any when they differ), so each choice
/// binds. A boolean's choices that spell `true` or `false` are read as those booleans
/// first: the tool declared a boolean, and the text `"False"` would reach it as a value
/// that reads as true. So `["True", "False"]` stays a boolean, and `["True", "False",
/// "dontcare"]` takes `true`, `false` or `"dontcare"`. Fields and items are settled too.
fn settle_choices(param: &mut Param, path: &str, sink: &mut Sink) {
    if let Some(message) = unfit_choices(param, path) {
        let declared = param.choices.take().unwrap_or_default();
        let mut choices: Vec<Json> = Vec::with_capacity(declared.len());
        for choice in &declared {
            let choice = match param.ty {
                ParamType::Boolean => boolean_choice(choice),
                _ => choice.clone(),
            };
            // `"True"` and `"true"` are one choice once read.
            if !choices.contains(&choice) {
                choices.push(choice);
            }
        }
        let ty = choices_type(&choices);
        let workaround = if choices == declared {
            format!("it is read as {} with those choices", ty.name())
        } else {
            let listed: Vec<String> = choices.iter().map(Json::to_string).collect();
            format!(
                "it is read as {} with the choices {}",
                ty.name(),
                listed.join(", ")
            )
        };
        sink.repair_as(ValidationErrorKind::Unsatisfiable, message, &workaround);
        param.ty = ty;
        param.choices = Some(choices);
    }
    match &mut param.ty {
        ParamType::Object { properties } => {
            for field in properties {
                let at = format!("{path}.{}", field.name);
                settle_choices(field, &at, sink);
            }
        }
        ParamType::Array { items: Some(item) } => settle_choices(item, &format!("{path}[]"), sink),
        _ => {}
    }
}

/// A choice of a boolean as the boolean it spells (`"True"`, `"false"`, in any case), or
/// as it is.
fn boolean_choice(choice: &Json) -> Json {
    let spelled = choice.as_str().map(str::trim);
    match spelled {
        Some(text) if text.eq_ignore_ascii_case("true") => Json::Bool(true),
        Some(text) if text.eq_ignore_ascii_case("false") => Json::Bool(false),
        _ => choice.clone(),
    }
}

/// The type every non-null choice has, or any.
fn choices_type(choices: &[Json]) -> ParamType {
    values_type(choices.iter().filter(|c| !c.is_null())).unwrap_or(ParamType::Any)
}

/// Loads interfaces and validates them as one set ([`validate_all`]): what every reader of
/// a tools file wants before it renders a prompt or binds a call. Every problem, of loading
/// or of validation, is in [`LoadError::Invalid`]; the other errors stop at the first.
/// Definitions are read leniently; [`load_tools`] also returns what was worked around.
///
/// The default [`LoadLimits`] apply; see [`load_valid_interfaces_with`].
///
/// ```
/// use atfunc::interface::{load_valid_interfaces, LoadError};
/// let tools = serde_json::json!([
///     {"name": "get-temp", "parameters": {"type": "object"}},
///     {"name": "get_temp", "parameters": {"type": "object"}},
/// ]);
/// let Err(LoadError::Invalid(problems)) = load_valid_interfaces(&tools)
/// else { panic!("two tools a call writes alike") };
/// assert_eq!(problems.len(), 1);
/// ```
pub fn load_valid_interfaces(json: &Json) -> Result<Vec<Interface>, LoadError> {
    load_valid_interfaces_with(json, &LoadLimits::default())
}

/// [`load_valid_interfaces`] within `limits`.
pub fn load_valid_interfaces_with(
    json: &Json,
    limits: &LoadLimits,
) -> Result<Vec<Interface>, LoadError> {
    load_tools(json, limits, Strictness::Lenient).map(|loaded| loaded.interfaces)
}

/// [`load_valid_interfaces`] from JSON text, within the default [`LoadLimits`].
///
/// ```
/// let tools = atfunc::interface::load_valid_interfaces_str(
///     r#"[{"name": "get_temp", "parameters": {"type": "object"}}]"#,
/// ).unwrap();
/// assert_eq!(tools[0].name, "get_temp");
/// ```
pub fn load_valid_interfaces_str(text: &str) -> Result<Vec<Interface>, LoadError> {
    load_valid_interfaces_str_with(text, &LoadLimits::default())
}

/// [`load_valid_interfaces_str`] within `limits`.
pub fn load_valid_interfaces_str_with(
    text: &str,
    limits: &LoadLimits,
) -> Result<Vec<Interface>, LoadError> {
    load_valid_interfaces_with(&serde_json::from_str(text)?, limits)
}

/// Loads interfaces, validates them as one set, and says what was worked around to read
/// them: what `atfunc check` lists. With [`Strictness::Lenient`] each workaround is a
/// warning and only what cannot be read is an error; with [`Strictness::Strict`] each is a
/// problem of [`LoadError::Invalid`].
///
/// ```
/// use atfunc::interface::{load_tools, LoadError, LoadLimits, Strictness};
/// use atfunc::ParamType;
/// use serde_json::json;
/// let tools = json!([{"name": "search_house", "parameters": {
///     "type": "object",
///     "properties": {"has_laundry": {"type": "boolean",
///                                    "enum": ["True", "False", "dontcare"],
///                                    "default": "dontcare"}}}}]);
/// let limits = LoadLimits::default();
/// let loaded = load_tools(&tools, &limits, Strictness::Lenient).unwrap();
/// let has_laundry = &loaded.interfaces[0].params[0];
/// // A boolean stays a boolean: `false` reaches the tool as `false`, not as "False".
/// assert_eq!(has_laundry.ty, ParamType::Any);
/// assert_eq!(has_laundry.choices, Some(vec![json!(true), json!(false), json!("dontcare")]));
/// assert_eq!(loaded.warnings.len(), 1);
/// let strict = load_tools(&tools, &limits, Strictness::Strict);
/// assert!(matches!(strict, Err(LoadError::Invalid(problems)) if problems.len() == 1));
/// ```
pub fn load_tools(
    json: &Json,
    limits: &LoadLimits,
    strictness: Strictness,
) -> Result<Loaded, LoadError> {
    let mut loaded = load_entries(json, limits, strictness)?;
    if strictness == Strictness::Lenient {
        drop_repeated(&mut loaded);
    }
    match validate_all(&loaded.interfaces) {
        Ok(()) => Ok(loaded),
        Err(ValidationErrors(problems)) => Err(LoadError::Invalid(problems)),
    }
}

/// [`load_tools`] from JSON text.
pub fn load_tools_str(
    text: &str,
    limits: &LoadLimits,
    strictness: Strictness,
) -> Result<Loaded, LoadError> {
    load_tools(&serde_json::from_str(text)?, limits, strictness)
}

/// A function defined twice under one spelling keeps its first definition: tool lists put
/// together from several sources repeat one, and a call could reach only one of them anyway.
/// Two spellings a call writes alike (`get-temp`, `get_temp`) are two tools that need
/// different names, so [`validate_all`] refuses them, as it refuses names that differ only
/// in case.
fn drop_repeated(loaded: &mut Loaded) {
    let mut first: HashMap<(Option<String>, String), usize> = HashMap::new();
    let mut kept: Vec<Interface> = Vec::with_capacity(loaded.interfaces.len());
    for interface in std::mem::take(&mut loaded.interfaces) {
        let key = (interface.domain.clone(), interface.name.clone());
        let Some(earlier) = first.get(&key).and_then(|&i| kept.get(i)) else {
            first.insert(key, kept.len());
            kept.push(interface);
            continue;
        };
        if defined_name(earlier) != defined_name(&interface) {
            kept.push(interface);
            continue;
        }
        let message = if *earlier == interface {
            "Function is defined twice; the second definition is left out"
        } else {
            "Function is defined twice, differently; the first definition is used and the second left out"
        };
        loaded.warnings.push(ValidationError {
            function: defined_name(&interface).to_owned(),
            toolbox: interface.domain.clone().unwrap_or_default(),
            kind: ValidationErrorKind::Clash,
            message: message.to_owned(),
        });
    }
    loaded.interfaces = kept;
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
