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

mod json;
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
use crate::messages::qualified;
use json::{json_kind, Json};
use refs::Budget;
use schema::{load_schema_function, values_type};
use serde_json::Value;
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
    /// The JSON is not a list of tool definitions, nor an object holding one or being one.
    #[error("expected a list of tool definitions, found {found}")]
    NotAList {
        /// What was found instead: `a number`, `a string`, `null`, ...
        found: &'static str,
    },
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

/// How to load tool definitions: the [`LoadLimits`], the [`Strictness`], and whether the
/// set is checked as a whole. `LoadOptions::default()` is what a reader of a tools file
/// wants: the default limits, read leniently (each workaround a warning of [`Loaded`]),
/// a function defined twice kept once, and the set checked by [`validate_all`] (two
/// names a call writes alike, names that differ only in case).
///
/// ```
/// use atfunc::interface::{LoadError, LoadLimits, LoadOptions, Strictness};
/// use atfunc::ParamType;
/// use serde_json::json;
///
/// let tools = json!([{"name": "search_house", "parameters": {
///     "type": "object",
///     "properties": {"has_laundry": {"type": "boolean",
///                                    "enum": ["True", "False", "dontcare"],
///                                    "default": "dontcare"}}}}]);
/// let loaded = LoadOptions::default().load(&tools).unwrap();
/// let has_laundry = &loaded.interfaces[0].params[0];
/// // A boolean stays a boolean: `false` reaches the tool as `false`, not as "False".
/// assert_eq!(has_laundry.ty, ParamType::Any);
/// assert_eq!(has_laundry.choices, Some(vec![json!(true), json!(false), json!("dontcare")]));
/// assert_eq!(loaded.warnings.len(), 1);
///
/// // Read strictly, what was worked around is a problem.
/// let strict = LoadOptions::default().with_strictness(Strictness::Strict).load(&tools);
/// assert!(matches!(strict, Err(LoadError::Invalid(problems)) if problems.len() == 1));
///
/// // From text, within tighter limits.
/// let options = LoadOptions::default().with_limits(LoadLimits::default().with_max_depth(8));
/// let loaded = options.load_str(r#"[{"name": "ping", "parameters": {"type": "object"}}]"#);
/// assert_eq!(loaded.unwrap().interfaces[0].name, "ping");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadOptions {
    limits: LoadLimits,
    strictness: Strictness,
    validate: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            limits: LoadLimits::default(),
            strictness: Strictness::Lenient,
            validate: true,
        }
    }
}

impl LoadOptions {
    /// The same options within `limits`: a definition whose schema, written out, goes
    /// past one is a [`LoadError::Limit`] naming the function.
    pub fn with_limits(mut self, limits: LoadLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The same options reading definitions with `strictness`.
    pub fn with_strictness(mut self, strictness: Strictness) -> Self {
        self.strictness = strictness;
        self
    }

    /// The same options, with the set checked as a whole ([`validate_all`]) or not. Not
    /// checked, each definition is still read and checked on its own, and a function
    /// defined twice is kept twice: for a program that checks the set itself, in a
    /// toolbox of its own ([`validate_toolbox`](super::validate_toolbox)). Default true.
    pub fn with_validation(mut self, validate: bool) -> Self {
        self.validate = validate;
        self
    }

    /// The limits.
    pub fn limits(&self) -> &LoadLimits {
        &self.limits
    }

    /// The strictness.
    pub fn strictness(&self) -> Strictness {
        self.strictness
    }

    /// Loads interfaces from a parsed JSON value: a list of definitions (or an object
    /// holding one under `tools` or `functions`, or a single definition). Every problem,
    /// of every definition and of the set, is in [`LoadError::Invalid`]; the other errors
    /// stop at the first.
    ///
    /// A definition's properties are its parameters in the order the value holds them,
    /// and positional arguments bind in that order. A `serde_json::Value` keeps the
    /// written order of its objects only with serde_json's `preserve_order` feature (which
    /// atfunc's own `preserve_order` feature turns on); without it, the properties come
    /// sorted by name. To keep the written order either way, load the text:
    /// [`LoadOptions::load_str`].
    pub fn load(&self, json: &serde_json::Value) -> Result<Loaded, LoadError> {
        self.load_ordered(&Json::from_serde(json))
    }

    /// [`LoadOptions::load`] from JSON text; text that is not JSON is a [`LoadError::Json`]
    /// with its line and column. The text is read with every object in its written order,
    /// whatever serde_json's features are.
    pub fn load_str(&self, text: &str) -> Result<Loaded, LoadError> {
        self.load_ordered(&serde_json::from_str(text)?)
    }

    fn load_ordered(&self, json: &Json) -> Result<Loaded, LoadError> {
        let mut loaded = load_entries(json, &self.limits, self.strictness)?;
        if !self.validate {
            return Ok(loaded);
        }
        if self.strictness == Strictness::Lenient {
            drop_repeated(&mut loaded);
        }
        match validate_all(&loaded.interfaces) {
            Ok(()) => Ok(loaded),
            Err(ValidationErrors(problems)) => Err(LoadError::Invalid(problems)),
        }
    }
}

/// Loads interfaces from JSON text with the default [`LoadOptions`], the warnings left
/// out: `LoadOptions::default().load_str(text)`, for a program that wants only the
/// interfaces.
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
    LoadOptions::default()
        .load_str(text)
        .map(|loaded| loaded.interfaces)
}

/// Loads interfaces from a parsed JSON value with the default [`LoadOptions`], the
/// warnings left out: `LoadOptions::default().load(json)`.
///
/// ```
/// use atfunc::{load_interfaces, LoadError};
/// let tools = serde_json::json!([
///     {"name": "get-temp", "parameters": {"type": "object"}},
///     {"name": "get_temp", "parameters": {"type": "object"}},
/// ]);
/// let Err(LoadError::Invalid(problems)) = load_interfaces(&tools)
/// else { panic!("two tools a call writes alike") };
/// assert_eq!(problems.len(), 1);
/// ```
pub fn load_interfaces(json: &serde_json::Value) -> Result<Vec<Interface>, LoadError> {
    LoadOptions::default()
        .load(json)
        .map(|loaded| loaded.interfaces)
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
            return Err(LoadError::NotAList {
                found: json_kind(other),
            })
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
        let mut choices: Vec<Value> = Vec::with_capacity(declared.len());
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
            let listed: Vec<String> = choices.iter().map(Value::to_string).collect();
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
fn boolean_choice(choice: &Value) -> Value {
    let spelled = choice.as_str().map(str::trim);
    match spelled {
        Some(text) if text.eq_ignore_ascii_case("true") => Value::Bool(true),
        Some(text) if text.eq_ignore_ascii_case("false") => Value::Bool(false),
        _ => choice.clone(),
    }
}

/// The type every non-null choice has, or any.
fn choices_type(choices: &[Value]) -> ParamType {
    values_type(choices.iter().filter(|c| !c.is_null())).unwrap_or(ParamType::Any)
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
