//! Loading interfaces from JSON in the shapes people already have.
//!
//! Three shapes are recognised per entry, so one file may even mix them:
//! - the atfunc standard format (`domain`, `name`, `type`, `description`, `params`, `returns`);
//! - an OpenAI tool (`{"type": "function", "function": {name, description, parameters}}`);
//! - a bare function definition with JSON Schema `parameters` (as in BFCL).
//!
//! The standard format is checked strictly, as the reference library does at registration;
//! the two imported shapes get sensible defaults (a missing description is fine there).

use super::validate::{
    choice_problems, validate_all, ValidationError, ValidationErrorKind, ValidationErrors,
};
use super::{names, Interface, Kind, Location, Param, ParamType};
use crate::messages::{json_kind, qualified};
use serde_json::{Map, Value as Json};
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

/// Collects problems for the definition being read, labelled with its function and toolbox.
struct Sink<'a> {
    problems: &'a mut Vec<Problem>,
    function: String,
    toolbox: String,
    /// What `$ref`s may still write out in this load.
    budget: &'a mut Budget,
    /// The limit this definition went past, if it did.
    exceeded: Option<LoadLimit>,
}

impl Sink<'_> {
    fn report(&mut self, message: impl Into<String>) {
        self.report_as(ValidationErrorKind::Definition, message);
    }

    fn report_as(&mut self, kind: ValidationErrorKind, message: impl Into<String>) {
        self.problems.push(ValidationError {
            function: self.function.clone(),
            toolbox: self.toolbox.clone(),
            kind,
            message: message.into(),
        });
    }
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

/// Splits a dotted name at its last dot into domain and function name.
fn split_name(full: &str) -> (Option<String>, String) {
    match full.rsplit_once('.') {
        Some((domain, name)) => (Some(domain.to_owned()), name.to_owned()),
        None => (None, full.to_owned()),
    }
}

/// Shape (b) and (c): a function with JSON Schema `parameters`.
fn load_schema_function(
    index: usize,
    map: &Map<String, Json>,
    sink: &mut Sink,
) -> Option<Interface> {
    let full = match map.get("name") {
        Some(Json::String(name)) => name.clone(),
        _ => {
            sink.function = format!("#{}", index + 1);
            sink.report("missing required field 'name'");
            return None;
        }
    };
    let (domain, name) = split_name(&full);
    sink.function = name.clone();
    sink.toolbox = domain.clone().unwrap_or_default();
    check_function_name(&full, sink);
    let description = optional_string(map, "description", sink).unwrap_or_default();
    let mut params = Vec::new();
    match map.get("parameters") {
        None | Some(Json::Null) => {}
        Some(schema @ Json::Object(_)) => {
            // Schemas generated from types (pydantic, schemars) name shared parts in
            // `$defs` and point at them; the model is shown them written out in place.
            match resolve_schema(schema, sink.budget) {
                Ok(Json::Object(schema)) => {
                    params = schema_object_properties(&schema, sink, "parameters");
                }
                Ok(_) => {}
                Err(limit) => {
                    sink.exceeded = Some(limit);
                    return None;
                }
            }
        }
        Some(other) => sink.report(format!(
            "field 'parameters' must be a JSON Schema object, found {}",
            json_kind(other)
        )),
    }
    Some(Interface {
        domain,
        name,
        original: None,
        kind: Kind::Function,
        description,
        params,
        request_body: Vec::new(),
        returns: map.get("returns").and_then(returns_text),
        response_type: None,
    })
}

/// Limits on what loading may build from a tools file, so a small definition cannot expand
/// into a large one. Every limit is counted while the schema is written out, not after, and
/// passing one is a [`LoadError::Limit`] naming the function; nothing is cut silently.
///
/// A `$ref` writes its definition out in place, so definitions that refer to each other
/// several times multiply: ten properties that each refer to the object holding them are
/// 10^k schemas at depth k. A reference back to a definition that is already being written
/// out on the way down (a tree node whose children are nodes) cannot be written out in
/// place at all: it reads as an open value of the definition's type (an object with any
/// fields, say), so recursive schemas stay small and never count against the limits.
///
/// ```
/// use atfunc::LoadError;
/// use atfunc::interface::{load_interfaces_with, LoadLimit, LoadLimits};
/// use serde_json::json;
///
/// // `A` has ten fields of type `B`, and `B` ten fields of type `C`: 111 schema nodes.
/// let level = |next: &str| {
///     let fields: serde_json::Map<_, _> = (0..10)
///         .map(|i| (format!("f{i}"), json!({"$ref": format!("#/$defs/{next}")})))
///         .collect();
///     json!({"type": "object", "properties": fields})
/// };
/// let tools = json!([{"name": "shop.order", "parameters": {
///     "$defs": {"A": level("B"), "B": level("C"), "C": {"type": "string"}},
///     "properties": {"root": {"$ref": "#/$defs/A"}}}}]);
/// let limits = LoadLimits { max_ref_nodes: 100, ..LoadLimits::default() };
/// match load_interfaces_with(&tools, &limits) {
///     Err(LoadError::Limit { function, limit, value }) => {
///         assert_eq!((function.as_str(), limit, value), ("shop.order", LoadLimit::RefNodes, 100));
///     }
///     other => panic!("{other:?}"),
/// }
/// assert!(load_interfaces_with(&tools, &LoadLimits::default()).is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadLimits {
    /// Most schema nodes (each object of a parameter's schema) that `$ref`s may write out,
    /// over all the definitions of one load. Default 10,000: a pydantic model of a few
    /// dozen types referred to from a few places writes out a few hundred.
    pub max_ref_nodes: usize,
    /// Most bytes that `$ref`s may write out (keys, and the JSON text of the values copied
    /// with them: descriptions, choices, defaults), over one load. Default 1 MiB.
    pub max_ref_bytes: usize,
    /// Deepest nesting of a parameter's schema, `$ref`s followed: each property, array
    /// `items`, `anyOf`/`oneOf` branch and reference is a level. Default 64.
    pub max_depth: usize,
}

impl Default for LoadLimits {
    fn default() -> Self {
        LoadLimits {
            max_ref_nodes: 10_000,
            max_ref_bytes: 1 << 20,
            max_depth: 64,
        }
    }
}

/// Which limit of [`LoadLimits`] a definition went past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadLimit {
    /// [`LoadLimits::max_ref_nodes`].
    RefNodes,
    /// [`LoadLimits::max_ref_bytes`].
    RefBytes,
    /// [`LoadLimits::max_depth`].
    Depth,
}

impl LoadLimit {
    /// The field of [`LoadLimits`] that sets it.
    pub fn field(self) -> &'static str {
        match self {
            LoadLimit::RefNodes => "max_ref_nodes",
            LoadLimit::RefBytes => "max_ref_bytes",
            LoadLimit::Depth => "max_depth",
        }
    }

    /// What passed the limit, for messages.
    fn what(self, value: usize) -> String {
        match self {
            LoadLimit::RefNodes => format!("its `$ref`s write out more than {value} schema nodes"),
            LoadLimit::RefBytes => format!("its `$ref`s write out more than {value} bytes"),
            LoadLimit::Depth => format!("its schema nests more than {value} levels deep"),
        }
    }

    fn advice(self) -> &'static str {
        match self {
            LoadLimit::RefNodes | LoadLimit::RefBytes => {
                "definitions that each refer to others several times multiply; refer to fewer"
            }
            LoadLimit::Depth => "flatten the schema",
        }
    }
}

impl std::fmt::Display for LoadLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.field())
    }
}

/// What the definitions of one load may still write out through `$ref`s.
struct Budget {
    limits: LoadLimits,
    nodes: usize,
    bytes: usize,
}

impl Budget {
    fn new(limits: &LoadLimits) -> Budget {
        Budget {
            limits: *limits,
            nodes: limits.max_ref_nodes,
            bytes: limits.max_ref_bytes,
        }
    }

    /// Takes one node of `bytes` bytes from what is left.
    fn take(&mut self, nodes: usize, bytes: usize) -> Result<(), LoadLimit> {
        self.nodes = self.nodes.checked_sub(nodes).ok_or(LoadLimit::RefNodes)?;
        self.bytes = self.bytes.checked_sub(bytes).ok_or(LoadLimit::RefBytes)?;
        Ok(())
    }
}

/// `schema` with its local references (`#/$defs/Name`, `#/definitions/Name`) written out in
/// place, and `anyOf`/`oneOf` of one schema and `null` (how `Optional[T]` is written) read
/// as that schema made nullable. Sibling keys of a `$ref` (a description, say) win over the
/// referenced schema's. A reference to a definition already being written out on the way
/// down reads as an open value of its type; see [`LoadLimits`].
fn resolve_schema(schema: &Json, budget: &mut Budget) -> Result<Json, LoadLimit> {
    let mut defs = HashMap::new();
    for key in ["definitions", "$defs"] {
        if let Some(Json::Object(found)) = schema.get(key) {
            defs.extend(found.iter().map(|(k, v)| (k.as_str(), v)));
        }
    }
    let mut expander = Expander {
        defs,
        budget,
        path: Vec::new(),
    };
    expander.resolve(schema, 0)
}

/// Writes out one function's schema; `path` holds the definitions being written out on
/// the way down to the current node.
struct Expander<'s, 'b> {
    defs: HashMap<&'s str, &'s Json>,
    budget: &'b mut Budget,
    path: Vec<&'s str>,
}

impl<'s> Expander<'s, '_> {
    /// Whether the current node is written out by a `$ref`, and so counts against the
    /// budget (what the file itself holds is bounded by its size).
    fn in_ref(&self) -> bool {
        !self.path.is_empty()
    }

    /// A value copied as it is; counted when a `$ref` writes it.
    fn copy(&mut self, value: &Json) -> Result<Json, LoadLimit> {
        if self.in_ref() {
            self.budget.take(0, json_size(value))?;
        }
        Ok(value.clone())
    }

    fn resolve(&mut self, schema: &'s Json, depth: usize) -> Result<Json, LoadLimit> {
        let Json::Object(map) = schema else {
            return self.copy(schema);
        };
        if depth > self.budget.limits.max_depth {
            return Err(LoadLimit::Depth);
        }
        // An unknown reference reads as "any": the model is shown no structure for it.
        let target = match map.get("$ref") {
            Some(Json::String(target)) => target
                .strip_prefix("#/$defs/")
                .or_else(|| target.strip_prefix("#/definitions/"))
                .and_then(|name| self.defs.get_key_value(name))
                .map(|(name, found)| (*name, *found)),
            _ => None,
        };
        // A reference is replaced by the definition it names, which is counted itself.
        if self.in_ref() && target.is_none() {
            let keys: usize = map.keys().map(String::len).sum();
            self.budget.take(1, keys + 2)?;
        }
        let mut out = Map::new();
        if let Some((name, found)) = target {
            if self.path.contains(&name) {
                let open = open_value(found);
                self.budget
                    .take(1, json_size(&Json::Object(open.clone())))?;
                out.extend(open);
            } else {
                self.path.push(name);
                let expanded = self.resolve(found, depth + 1);
                self.path.pop();
                if let Json::Object(found) = expanded? {
                    out.extend(found);
                }
            }
        }
        for key in ["anyOf", "oneOf"] {
            let Some(Json::Array(branches)) = map.get(key) else {
                continue;
            };
            let is_null = |b: &Json| b.get("type").and_then(Json::as_str) == Some("null");
            let mut others = branches.iter().filter(|b| !is_null(b));
            if let (Some(only), None) = (others.next(), others.next()) {
                if let Json::Object(branch) = self.resolve(only, depth + 1)? {
                    out.extend(branch);
                }
                if branches.iter().any(is_null) {
                    let ty = out.get("type").cloned();
                    if let Some(Json::String(ty)) = ty {
                        out.insert("type".into(), Json::from(vec![ty, "null".to_owned()]));
                    }
                }
            }
        }
        for (k, v) in map {
            match k.as_str() {
                "$ref" | "$defs" | "definitions" => {}
                "anyOf" | "oneOf" if out.contains_key("type") => {}
                "properties" => {
                    let value = match v.as_object() {
                        Some(props) => {
                            let mut resolved = Map::new();
                            for (name, p) in props {
                                resolved.insert(name.clone(), self.resolve(p, depth + 1)?);
                            }
                            Json::Object(resolved)
                        }
                        None => self.copy(v)?,
                    };
                    out.insert(k.clone(), value);
                }
                "items" => {
                    let value = self.resolve(v, depth + 1)?;
                    out.insert(k.clone(), value);
                }
                _ => {
                    let value = self.copy(v)?;
                    out.insert(k.clone(), value);
                }
            }
        }
        Ok(Json::Object(out))
    }
}

/// What a reference back to a definition on the way down reads as: a value of the
/// definition's type with nothing more declared (an object with any fields, a list of
/// anything), with its description.
fn open_value(definition: &Json) -> Map<String, Json> {
    let mut out = Map::new();
    let Json::Object(map) = definition else {
        return out;
    };
    let ty = match map.get("type") {
        Some(Json::String(ty)) => Some(ty.as_str()),
        _ if map.contains_key("properties") => Some("object"),
        _ if map.contains_key("items") => Some("array"),
        _ => None,
    };
    if let Some(ty) = ty {
        out.insert("type".into(), Json::from(ty));
    }
    if let Some(Json::String(description)) = map.get("description") {
        out.insert("description".into(), Json::from(description.as_str()));
    }
    out
}

/// About the length of `value` as JSON text, without writing it.
fn json_size(value: &Json) -> usize {
    match value {
        Json::Null => 4,
        Json::Bool(_) => 5,
        Json::Number(_) => 8,
        Json::String(s) => s.len() + 2,
        Json::Array(items) => 2 + items.iter().map(|v| json_size(v) + 1).sum::<usize>(),
        Json::Object(map) => {
            2 + map
                .iter()
                .map(|(k, v)| k.len() + 4 + json_size(v))
                .sum::<usize>()
        }
    }
}

/// Whether a schema allows `null` (`"type": ["string", "null"]`).
fn is_nullable(def: &Json) -> bool {
    match def.get("type") {
        Some(Json::Array(types)) => types.iter().any(|t| t == "null"),
        Some(Json::String(t)) => t == "null",
        _ => false,
    }
}

/// The properties of a JSON Schema object as params, with `required` applied.
fn schema_object_properties(schema: &Map<String, Json>, sink: &mut Sink, at: &str) -> Vec<Param> {
    let required: Vec<&str> = match schema.get("required") {
        Some(Json::Array(names)) => names.iter().filter_map(Json::as_str).collect(),
        _ => Vec::new(),
    };
    let mut params = Vec::new();
    match schema.get("properties") {
        None | Some(Json::Null) => {}
        Some(Json::Object(props)) => {
            for (name, def) in props {
                let path = format!("{at}.{name}");
                let mut param = schema_param(name, def, sink, &path);
                // Strict schemas list every field as required and let the optional ones be
                // null; a call binds `null` as left out, so such a field is optional here.
                param.required = required.contains(&name.as_str()) && !is_nullable(def);
                params.push(param);
            }
        }
        Some(other) => sink.report(format!(
            "'{at}.properties' must be an object, found {}",
            json_kind(other)
        )),
    }
    // Schemas in the wild list required keys of an open object without describing them
    // (BFCL does); such a key is still required, of any type. A closed object (its
    // `properties` given and `additionalProperties: false`) can hold no such key, so no
    // call could satisfy it: that is a mistake in the schema.
    let closed = matches!(schema.get("properties"), Some(Json::Object(_)))
        && schema.get("additionalProperties") == Some(&Json::Bool(false));
    for name in required {
        if closed && !params.iter().any(|p| p.name == name) {
            sink.report(format!(
                "'{at}.required' names '{name}', which is not one of its properties and \
                 'additionalProperties' is false: describe it under 'properties' or drop it"
            ));
            continue;
        }
        if !params.iter().any(|p| p.name == name) {
            let mut param = Param::new(name, ParamType::Any);
            param.required = true;
            params.push(param);
        }
    }
    params
}

/// One JSON Schema property as a param (not yet marked required).
fn schema_param(name: &str, def: &Json, sink: &mut Sink, at: &str) -> Param {
    let mut param = Param::new(name, ParamType::Any);
    let Some(map) = def.as_object() else {
        // `true` is the schema that accepts anything.
        if def != &Json::Bool(true) {
            sink.report(format!(
                "'{at}' must be a JSON Schema object, found {}",
                json_kind(def)
            ));
        }
        return param;
    };
    param.description = optional_string(map, "description", sink).unwrap_or_default();
    param.ty = schema_type(map, sink, at);
    fill_constraints(&mut param, map, sink, at);
    param
}

/// The type of a JSON Schema, resolving aliases and nested properties/items.
fn schema_type(map: &Map<String, Json>, sink: &mut Sink, at: &str) -> ParamType {
    let declared = match map.get("type") {
        Some(Json::String(name)) => Some(name.as_str()),
        // ["string", "null"]: a nullable type is that type.
        Some(Json::Array(names)) => {
            let non_null: Vec<&str> = names
                .iter()
                .filter_map(Json::as_str)
                .filter(|n| *n != "null")
                .collect();
            if non_null.len() == 1 {
                non_null.first().copied()
            } else {
                None
            }
        }
        _ => None,
    };
    let base = match declared {
        Some(name) => match ParamType::from_name(name) {
            Some(ty) => ty,
            None => {
                sink.report(format!("'{at}' has unknown type '{name}'{}", TYPE_HINT));
                ParamType::Any
            }
        },
        None if map.contains_key("properties") => ParamType::Object {
            properties: Vec::new(),
        },
        None if map.contains_key("items") => ParamType::Array { items: None },
        None => infer_from_enum(map).unwrap_or(ParamType::Any),
    };
    match base {
        ParamType::Object { .. } => ParamType::Object {
            properties: schema_object_properties(map, sink, at),
        },
        ParamType::Array { .. } => {
            let items = match map.get("items") {
                Some(Json::Object(item)) => {
                    let path = format!("{at}.items");
                    let mut param = schema_param("", &Json::Object(item.clone()), sink, &path);
                    param.required = true;
                    Some(Box::new(param))
                }
                _ => None,
            };
            ParamType::Array { items }
        }
        other => other,
    }
}

const TYPE_HINT: &str =
    ": use string, number, integer, boolean, object, array or any (aliases: dict, float, double, int, bool, tuple, list)";

/// A schema with only `enum` says its type through its values.
fn infer_from_enum(map: &Map<String, Json>) -> Option<ParamType> {
    let values = map.get("enum")?.as_array()?;
    let first = values.first()?;
    let whole = |v: &Json| matches!(v, Json::Number(n) if n.is_i64() || n.is_u64());
    let ty = match first {
        Json::String(_) => ParamType::String,
        Json::Bool(_) => ParamType::Boolean,
        // Integer only when every choice is one: `[1, 2.5]` must admit 2.5.
        Json::Number(_) if values.iter().all(whole) => ParamType::Integer,
        Json::Number(_) => ParamType::Number,
        _ => return None,
    };
    values
        .iter()
        .all(|v| std::mem::discriminant(v) == std::mem::discriminant(first))
        .then_some(ty)
}

/// Reads `enum`/`choices`, `minimum`/`min`, `maximum`/`max`, `default` and `format` onto
/// `param`.
fn fill_constraints(param: &mut Param, map: &Map<String, Json>, sink: &mut Sink, at: &str) {
    if let Some(choices) = map.get("enum").or_else(|| map.get("choices")) {
        match choices {
            Json::Array(values) if !values.is_empty() => param.choices = Some(values.clone()),
            Json::Array(_) => sink.report(format!("'{at}' has an empty list of choices")),
            other => sink.report(format!(
                "'{at}.enum' must be a list of values, found {}",
                json_kind(other)
            )),
        }
    }
    for (keys, slot) in [
        (["minimum", "min"], &mut param.min),
        (["maximum", "max"], &mut param.max),
    ] {
        for key in keys {
            match map.get(key) {
                None | Some(Json::Null) => {}
                Some(Json::Number(n)) => *slot = n.as_f64(),
                Some(other) => sink.report(format!(
                    "'{at}.{key}' must be a number, found {}",
                    json_kind(other)
                )),
            }
        }
    }
    if let (Some(min), Some(max)) = (param.min, param.max) {
        if min > max {
            sink.report(format!(
                "'{at}' has a minimum {min} above its maximum {max}"
            ));
        }
    }
    if let Some(default) = map.get("default") {
        param.default = Some(default.clone());
    }
    match map.get("format") {
        None | Some(Json::Null) => {}
        Some(Json::String(format)) => param.format = Some(format.clone()),
        Some(other) => sink.report(format!(
            "'{at}.format' must be a string such as \"date\" or \"email\", found {}",
            json_kind(other)
        )),
    }
}

/// Shape (a): the atfunc standard format, checked as the reference checks it.
fn load_standard(index: usize, map: &Map<String, Json>, sink: &mut Sink) -> Option<Interface> {
    let name = match map.get("name") {
        Some(Json::String(name)) => name.clone(),
        Some(other) => {
            sink.function = format!("#{}", index + 1);
            sink.report(format!(
                "field 'name' must be a string, found {}",
                json_kind(other)
            ));
            return None;
        }
        None => {
            sink.function = format!("#{}", index + 1);
            sink.report("missing required field 'name'");
            return None;
        }
    };
    sink.function = name.clone();
    let domain = match map.get("domain") {
        Some(Json::String(domain)) => Some(domain.clone()),
        Some(other) => {
            sink.report(format!(
                "field 'domain' must be a string, found {}",
                json_kind(other)
            ));
            None
        }
        None => {
            sink.report("missing required field 'domain'");
            None
        }
    };
    sink.toolbox = domain.clone().unwrap_or_default();
    check_function_name(&name, sink);
    if let Some(domain) = &domain {
        if domain.trim().is_empty() {
            sink.report("field 'domain' is empty: give the toolbox's name");
        }
    }
    let kind = match map.get("type") {
        Some(Json::String(t)) if t == "function" => Kind::Function,
        Some(Json::String(t)) if t == "api-wrapper" => Kind::ApiWrapper,
        Some(Json::String(t)) => {
            sink.report(format!(
                "field 'type' must be 'function' or 'api-wrapper', found '{t}'"
            ));
            Kind::Function
        }
        Some(other) => {
            sink.report(format!(
                "field 'type' must be 'function' or 'api-wrapper', found {}",
                json_kind(other)
            ));
            Kind::Function
        }
        None => {
            sink.report("missing required field 'type'");
            Kind::Function
        }
    };
    let description = match map.get("description") {
        Some(Json::String(d)) => d.clone(),
        Some(other) => {
            sink.report(format!(
                "field 'description' must be a string, found {}",
                json_kind(other)
            ));
            String::new()
        }
        None => {
            sink.report("missing required field 'description'");
            String::new()
        }
    };
    let returns = match map.get("returns") {
        Some(value) => returns_text(value),
        None => {
            sink.report("missing required field 'returns'");
            None
        }
    };
    let mut params = Vec::new();
    let mut request_body = Vec::new();
    match kind {
        Kind::Function => {
            match map.get("params") {
                Some(value) => params = standard_params(value, "params", Location::Param, sink),
                None => sink.report("missing required field 'params'"),
            }
            for key in ["path_params", "query_params", "request_body"] {
                if map.contains_key(key) {
                    sink.report(format!(
                        "field '{key}' belongs to an api-wrapper, but type is 'function'"
                    ));
                }
            }
        }
        Kind::ApiWrapper => {
            if let Some(value) = map.get("params") {
                // Some wrappers declare ordinary params too; they come first.
                params = standard_params(value, "params", Location::Param, sink);
            }
            for (key, location) in [
                ("path_params", Location::Path),
                ("query_params", Location::Query),
            ] {
                if let Some(value) = map.get(key) {
                    params.extend(standard_params(value, key, location, sink));
                }
            }
            if let Some(value) = map.get("request_body") {
                request_body = standard_params(value, "request_body", Location::Body, sink);
            }
        }
    }
    check_duplicate_params(&params, sink);
    check_duplicate_params(&request_body, sink);
    let response_type = match map.get("response_type") {
        Some(Json::String(t)) => Some(t.clone()),
        _ => None,
    };
    Some(Interface {
        domain,
        name,
        original: None,
        kind,
        description,
        params,
        request_body,
        returns,
        response_type,
    })
}

/// A standard-format `params` map (`{name: {type, isRequired, description}}`).
fn standard_params(value: &Json, field: &str, location: Location, sink: &mut Sink) -> Vec<Param> {
    let map = match value {
        Json::Object(map) => map,
        Json::Null => return Vec::new(),
        other => {
            sink.report(format!(
                "field '{field}' must be an object mapping parameter names to definitions, found {}",
                json_kind(other)
            ));
            return Vec::new();
        }
    };
    let mut params = Vec::with_capacity(map.len());
    for (name, def) in map {
        let Some(def) = def.as_object() else {
            sink.report(format!(
                "parameter '{name}' in '{field}' must be an object with type, isRequired and description, found {}",
                json_kind(def)
            ));
            continue;
        };
        let at = format!("{field}.{name}");
        let mut param = Param::new(name, ParamType::String);
        param.location = location;
        match def.get("type") {
            Some(Json::String(t)) => match ParamType::from_name(t) {
                Some(ty) => param.ty = ty,
                None => sink.report(format!(
                    "parameter '{name}' has unknown type '{t}'{TYPE_HINT}"
                )),
            },
            Some(other) => sink.report(format!(
                "parameter '{name}' field 'type' must be a string, found {}",
                json_kind(other)
            )),
            None => sink.report(format!("parameter '{name}' is missing 'type'")),
        }
        // The reference spells it `isRequired`; request bodies (and older files) say `required`.
        let flag = def.get("isRequired").or_else(|| def.get("required"));
        match flag {
            Some(Json::Bool(b)) => param.required = *b,
            Some(other) => sink.report(format!(
                "parameter '{name}' field 'isRequired' must be true or false, found {}",
                json_kind(other)
            )),
            None => sink.report(format!("parameter '{name}' is missing 'isRequired'")),
        }
        match def.get("description") {
            Some(Json::String(d)) => param.description = d.clone(),
            Some(other) => sink.report(format!(
                "parameter '{name}' field 'description' must be a string, found {}",
                json_kind(other)
            )),
            None => sink.report(format!("parameter '{name}' is missing 'description'")),
        }
        // Nested structure: accept JSON Schema `properties`/`items` inside a standard param.
        match &mut param.ty {
            ParamType::Object { properties } if def.contains_key("properties") => {
                *properties = schema_object_properties(def, sink, &at);
            }
            ParamType::Array { items } => {
                if let Some(Json::Object(item)) = def.get("items") {
                    let mut p = schema_param(
                        "",
                        &Json::Object(item.clone()),
                        sink,
                        &format!("{at}.items"),
                    );
                    p.required = true;
                    *items = Some(Box::new(p));
                }
            }
            _ => {}
        }
        fill_constraints(&mut param, def, sink, &at);
        params.push(param);
    }
    params
}

/// Calls match parameter names ignoring case, so two that differ only in case are ambiguous.
fn check_duplicate_params(params: &[Param], sink: &mut Sink) {
    // The same folding the binder matches names with: `straße` and `STRASSE` are one name.
    let folded: Vec<String> = params
        .iter()
        .map(|p| unicase::UniCase::new(p.name.as_str()).to_folded_case())
        .collect();
    for (i, (p, key)) in params.iter().zip(&folded).enumerate() {
        let mut earlier = params.iter().zip(&folded).take(i);
        if let Some((q, _)) = earlier.find(|(_, k)| *k == key) {
            let what = if q.name == p.name {
                "is declared twice"
            } else {
                "differs only in case from another"
            };
            sink.report_as(
                ValidationErrorKind::Clash,
                format!(
                    "parameter '{}' {what} ('{}'); calls match parameter names ignoring case",
                    p.name, q.name
                ),
            );
        }
    }
}

/// Any name will do (the loader gives it an identifier a call can write; see
/// [`names`]), as long as neither it nor a dotted part of it is empty.
fn check_function_name(full: &str, sink: &mut Sink) {
    if full.split('.').any(|part| part.trim().is_empty()) {
        sink.report_as(ValidationErrorKind::Name, format!(
            "function name '{full}' is empty or has an empty part: give a name (a domain and a name joined by '.')"
        ));
    }
}

fn optional_string(map: &Map<String, Json>, key: &str, sink: &mut Sink) -> Option<String> {
    match map.get(key) {
        None | Some(Json::Null) => None,
        Some(Json::String(s)) => Some(s.clone()),
        Some(other) => {
            sink.report(format!(
                "field '{key}' must be a string, found {}",
                json_kind(other)
            ));
            None
        }
    }
}

/// `returns` may be a type name or a small schema; keep a short text either way.
fn returns_text(value: &Json) -> Option<String> {
    match value {
        Json::String(s) => Some(s.clone()),
        Json::Null => None,
        Json::Object(map) => match map.get("type") {
            Some(Json::String(t)) => Some(t.clone()),
            _ => Some(value.to_string()),
        },
        other => Some(other.to_string()),
    }
}
