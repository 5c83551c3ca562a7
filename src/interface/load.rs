//! Loading interfaces from JSON in the shapes people already have.
//!
//! Three shapes are recognised per entry, so one file may even mix them:
//! - the atfunc standard format (`domain`, `name`, `type`, `description`, `params`, `returns`);
//! - an OpenAI tool (`{"type": "function", "function": {name, description, parameters}}`);
//! - a bare function definition with JSON Schema `parameters` (as in BFCL).
//!
//! The standard format is checked strictly, as the reference library does at registration;
//! the two imported shapes get sensible defaults (a missing description is fine there).

use super::validate::ValidationError;
use super::{names, Interface, Kind, Location, Param, ParamType};
use serde_json::{Map, Value as Json};

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
    load_interfaces(&serde_json::from_str(text)?)
}

/// Loads interfaces from a parsed JSON value: a list of definitions (or an object holding
/// one under `tools` or `functions`, or a single definition). Every problem in every
/// definition is reported at once.
pub fn load_interfaces(json: &Json) -> Result<Vec<Interface>, LoadError> {
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
    for (index, entry) in entries.into_iter().enumerate() {
        let mut sink = Sink {
            problems: &mut problems,
            function: String::new(),
            toolbox: String::new(),
        };
        if let Some(interface) = load_entry(index, entry, &mut sink) {
            interfaces.push(interface);
        }
    }
    if problems.is_empty() {
        Ok(interfaces)
    } else {
        Err(LoadError::Invalid(problems))
    }
}

/// Collects problems for the definition being read, labelled with its function and toolbox.
struct Sink<'a> {
    problems: &'a mut Vec<Problem>,
    function: String,
    toolbox: String,
}

impl Sink<'_> {
    fn report(&mut self, message: impl Into<String>) {
        self.problems.push(ValidationError {
            function: self.function.clone(),
            toolbox: self.toolbox.clone(),
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
        sink.report(problem);
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
            if let Json::Object(schema) = resolve_schema(schema) {
                params = schema_object_properties(&schema, sink, "parameters");
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

/// How deep `$ref`s are followed; a schema that refers to itself stops here as "any".
const MAX_REF_DEPTH: usize = 16;

/// How many `$ref`s one function's parameters may expand in all: definitions that each
/// refer to several others would otherwise grow exponentially (a hostile tools file, or a
/// client's tools sent to the gateway). Past it, a reference reads as "any".
const MAX_REF_EXPANSIONS: usize = 1000;

/// `schema` with its local references (`#/$defs/Name`, `#/definitions/Name`) written out in
/// place, and `anyOf`/`oneOf` of one schema and `null` (how `Optional[T]` is written) read
/// as that schema made nullable. Sibling keys of a `$ref` (a description, say) win over the
/// referenced schema's.
fn resolve_schema(schema: &Json) -> Json {
    let mut defs = Map::new();
    for key in ["definitions", "$defs"] {
        if let Some(Json::Object(found)) = schema.get(key) {
            defs.extend(found.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    let mut budget = MAX_REF_EXPANSIONS;
    resolve_in(schema, &defs, 0, &mut budget)
}

fn resolve_in(schema: &Json, defs: &Map<String, Json>, depth: usize, budget: &mut usize) -> Json {
    let Json::Object(map) = schema else {
        return schema.clone();
    };
    if depth > MAX_REF_DEPTH {
        return Json::Object(Map::new());
    }
    let mut out = Map::new();
    if let Some(Json::String(target)) = map.get("$ref") {
        let name = target
            .strip_prefix("#/$defs/")
            .or_else(|| target.strip_prefix("#/definitions/"));
        if let Some(found) = name.and_then(|n| defs.get(n)) {
            if *budget > 0 {
                *budget -= 1;
                if let Json::Object(found) = resolve_in(found, defs, depth + 1, budget) {
                    out.extend(found);
                }
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
            if let Json::Object(branch) = resolve_in(only, defs, depth + 1, budget) {
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
                let props = v.as_object().map(|props| {
                    props
                        .iter()
                        .map(|(name, p)| (name.clone(), resolve_in(p, defs, depth + 1, budget)))
                        .collect::<Map<_, _>>()
                });
                out.insert(k.clone(), props.map_or_else(|| v.clone(), Json::Object));
            }
            "items" => {
                out.insert(k.clone(), resolve_in(v, defs, depth + 1, budget));
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Json::Object(out)
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
    // (BFCL does); such a key is still required, of any type.
    for name in required {
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
            sink.report(format!(
                "parameter '{}' {what} ('{}'); calls match parameter names ignoring case",
                p.name, q.name
            ));
        }
    }
}

/// Any name will do (the loader gives it an identifier a call can write; see
/// [`names`]), as long as neither it nor a dotted part of it is empty.
fn check_function_name(full: &str, sink: &mut Sink) {
    if full.split('.').any(|part| part.trim().is_empty()) {
        sink.report(format!(
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

/// How a JSON value is named in messages.
pub(crate) fn json_kind(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "an object",
    }
}
