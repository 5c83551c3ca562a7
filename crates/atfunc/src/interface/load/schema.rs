//! The two imported shapes: an OpenAI tool and a bare function definition, both with JSON
//! Schema `parameters`, read as params.

use super::json::json_kind;
use super::json::{Json, Map};
use super::refs::resolve_schema;
use super::sink::{check_function_name, optional_string, returns_text, Sink};
use crate::interface::validate::ValidationErrorKind;
use crate::interface::{Interface, Kind, Param, ParamType};

/// Splits a dotted name at its last dot into domain and function name.
fn split_name(full: &str) -> (Option<String>, String) {
    match full.rsplit_once('.') {
        Some((domain, name)) => (Some(domain.to_owned()), name.to_owned()),
        None => (None, full.to_owned()),
    }
}

/// Shape (b) and (c): a function with JSON Schema `parameters`.
pub(super) fn load_schema_function(
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
                    // A call gives no argument the function does not declare, so the
                    // parameters are closed however the schema says.
                    report_unenforced(&schema, sink, "parameters", true);
                }
                Ok(_) => {}
                Err(limit) => {
                    sink.exceeded = Some(limit);
                    return None;
                }
            }
        }
        Some(other) => sink.repair(
            format!(
                "field 'parameters' must be a JSON Schema object, found {}",
                json_kind(other)
            ),
            "the function is read as taking no parameters",
        ),
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

/// Whether a schema allows `null` (`"type": ["string", "null"]`).
fn is_nullable(def: &Json) -> bool {
    match def.get("type") {
        Some(Json::Array(types)) => types.iter().any(|t| t.as_str() == Some("null")),
        Some(Json::String(t)) => t == "null",
        _ => false,
    }
}

/// The properties of a JSON Schema object as params, with `required` applied.
pub(super) fn schema_object_properties(
    schema: &Map<String, Json>,
    sink: &mut Sink,
    at: &str,
) -> Vec<Param> {
    let required = required_names(schema, sink, at);
    let mut params = Vec::new();
    match schema.get("properties") {
        None | Some(Json::Null) => {}
        Some(Json::Object(props)) => {
            for (name, def) in props {
                let path = format!("{at}.{name}");
                let mut param = schema_param(name, def, sink, &path);
                let listed = required.contains(name);
                // JSON Schema draft 3 marked a property itself `"required": true`; older
                // files still do, and leaving it out would let a call omit the value.
                let flagged = def.get("required") == Some(&Json::Bool(true));
                if flagged && !listed {
                    sink.repair(
                        format!(
                            "'{path}' says \"required\": true; JSON Schema lists required \
                             properties in '{at}.required'"
                        ),
                        "it is read as required",
                    );
                }
                // Strict schemas list every field as required and let the optional ones be
                // null; a call binds `null` as left out, so such a field is optional here.
                param.required = (listed || flagged) && !is_nullable(def);
                params.push(param);
            }
        }
        Some(other) => sink.repair(
            format!(
                "'{at}.properties' must be an object, found {}",
                json_kind(other)
            ),
            "it is left out",
        ),
    }
    // A required key must be one of the properties where the schema lists them: a key
    // listed only under `required` is a typo or a property left out, and taking it as a
    // required value of any type would ask every call for an argument the schema never
    // describes. An object without `properties` is described by its required keys alone
    // (BFCL's files have such nested objects): each is a required key of any type.
    let listed = matches!(schema.get("properties"), Some(Json::Object(_)));
    for name in required {
        if params.iter().any(|p| p.name == name) {
            continue;
        }
        let name = name.as_str();
        if listed {
            sink.repair(
                format!(
                    "'{at}.required' names '{name}', which is not one of its properties: \
                     describe it under '{at}.properties' or drop it from 'required'"
                ),
                "the requirement is left out",
            );
            continue;
        }
        let mut param = Param::new(name, ParamType::Any);
        param.required = true;
        params.push(param);
    }
    params
}

/// The names an object's `required` lists. A single name written as a string (`"required":
/// "amount"`) is read as a list of it, so the requirement holds; a value of another kind, or
/// an entry that is not a name, is left out. Each with a warning: a requirement dropped
/// without a word would let a call leave out what the tool needs. A boolean is draft 3's
/// flag on the object itself, which its parent reads.
fn required_names(schema: &Map<String, Json>, sink: &mut Sink, at: &str) -> Vec<String> {
    match schema.get("required") {
        None | Some(Json::Null) | Some(Json::Bool(_)) => Vec::new(),
        Some(Json::Array(names)) => {
            let mut read = Vec::with_capacity(names.len());
            for name in names {
                match name {
                    Json::String(name) => read.push(name.clone()),
                    other => sink.repair(
                        format!(
                            "'{at}.required' must list property names, found {} among them",
                            json_kind(other)
                        ),
                        "that entry is left out",
                    ),
                }
            }
            read
        }
        Some(Json::String(name)) => {
            sink.repair(
                format!("'{at}.required' must be a list of property names, found a string"),
                &format!("it is read as [{}]", Json::from(name.as_str())),
            );
            vec![name.clone()]
        }
        Some(other) => {
            sink.repair(
                format!(
                    "'{at}.required' must be a list of property names, found {}",
                    json_kind(other)
                ),
                "it is left out",
            );
            Vec::new()
        }
    }
}

/// One JSON Schema property as a param (not yet marked required).
pub(super) fn schema_param(name: &str, def: &Json, sink: &mut Sink, at: &str) -> Param {
    let mut param = Param::new(name, ParamType::Any);
    let Some(map) = def.as_object() else {
        // `true` is the schema that accepts anything.
        if def != &Json::Bool(true) {
            sink.repair(
                format!(
                    "'{at}' must be a JSON Schema object, found {}",
                    json_kind(def)
                ),
                "it is read as any value",
            );
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
            if non_null.len() > 1 {
                sink.unenforced(
                    format!(
                        "'{at}' may be any of the types {}, which atfunc neither shows the \
                         model nor checks",
                        non_null.join(", ")
                    ),
                    "it is read as any value, so the tool must check the type",
                );
            }
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
                sink.repair(
                    format!("'{at}' has unknown type '{name}'{TYPE_HINT}"),
                    "it is read as any",
                );
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
                Some(Json::Array(_)) => {
                    sink.unenforced(
                        format!(
                            "'{at}.items' is a list of schemas, one per position, which \
                             atfunc neither shows the model nor checks"
                        ),
                        "its items are read as any values, so the tool must check them",
                    );
                    None
                }
                _ => None,
            };
            ParamType::Array { items }
        }
        other => other,
    }
}

pub(super) const TYPE_HINT: &str =
    ": use string, number, integer, boolean, object, array or any (aliases: dict, float, double, int, bool, tuple, list)";

/// A schema with only `enum` says its type through its values.
fn infer_from_enum(map: &Map<String, Json>) -> Option<ParamType> {
    let choices: Vec<serde_json::Value> = map
        .get("enum")?
        .as_array()?
        .iter()
        .map(Json::to_serde)
        .collect();
    values_type(&choices)
}

/// The type every one of `values` has: `None` when there are none, when they differ, or
/// when one is `null`, an object or a list. Integer only when every value is a whole
/// number: `[1, 2.5]` must admit 2.5, so it is a number.
pub(super) fn values_type<'a>(
    values: impl IntoIterator<Item = &'a serde_json::Value>,
) -> Option<ParamType> {
    use serde_json::Value;
    let kind = |value: &Value| match value {
        Value::String(_) => Some(ParamType::String),
        Value::Bool(_) => Some(ParamType::Boolean),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(ParamType::Integer),
        Value::Number(_) => Some(ParamType::Number),
        _ => None,
    };
    let mut values = values.into_iter();
    let mut ty = kind(values.next()?)?;
    for value in values {
        ty = match (ty, kind(value)?) {
            (a, b) if a == b => a,
            (ParamType::Integer, ParamType::Number) | (ParamType::Number, ParamType::Integer) => {
                ParamType::Number
            }
            _ => return None,
        };
    }
    Some(ty)
}

/// JSON Schema restrictions a parameter may declare that atfunc does not enforce; each is
/// reported once per parameter, so a tool author knows its checks are the tool's to make.
/// `anyOf`, `oneOf` and `allOf` are here only when the loader could not read them as one
/// schema (see `resolve_schema`): a union of several is read as any value.
const UNENFORCED_KEYWORDS: [&str; 27] = [
    "pattern",
    "minLength",
    "maxLength",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "prefixItems",
    "additionalItems",
    "unevaluatedItems",
    "minProperties",
    "maxProperties",
    "patternProperties",
    "propertyNames",
    "unevaluatedProperties",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "not",
    "anyOf",
    "oneOf",
    "allOf",
];

/// The restrictions of `map` that atfunc does not enforce, in the order of
/// [`UNENFORCED_KEYWORDS`] (then `if`, and `additionalProperties` where it restricts),
/// reported together by [`Sink::unenforced`]. `closed` says whether a call is refused any
/// field `map` does not declare, so that `additionalProperties` holds whatever it says: on
/// an object parameter read as closed (see [`Param::closed`]), and on the parameters
/// themselves, which take no argument the function does not declare.
pub(super) fn report_unenforced(map: &Map<String, Json>, sink: &mut Sink, at: &str, closed: bool) {
    let mut found: Vec<&str> = UNENFORCED_KEYWORDS
        .iter()
        .copied()
        .filter(|key| map.get(key).is_some_and(|v| !v.is_null()))
        .collect();
    // `then` and `else` restrict only through `if`.
    if map.get("if").is_some_and(|v| !v.is_null()) {
        found.push("if");
    }
    match map.get("additionalProperties") {
        None | Some(Json::Null) | Some(Json::Bool(true)) => {}
        Some(_) if closed => {}
        Some(_) => found.push("additionalProperties"),
    }
    if !found.is_empty() {
        sink.unenforced(
            format!(
                "'{at}' declares {}, which atfunc neither shows the model nor checks",
                found.join(", ")
            ),
            "a call that breaks it is not refused, so the tool must check it",
        );
    }
}

/// Reads `enum`/`choices`, `const`, `minimum`/`min`, `maximum`/`max`, `default`, `format`
/// and (on an object with properties) `"additionalProperties": false` onto `param`, and
/// reports what else it declares that atfunc does not enforce.
pub(super) fn fill_constraints(
    param: &mut Param,
    map: &Map<String, Json>,
    sink: &mut Sink,
    at: &str,
) {
    // Only declared fields can be checked one by one: `false` beside no properties would
    // admit `{}` alone, which the call grammar does not know, so it stays a warning.
    let declared = matches!(&param.ty, ParamType::Object { properties } if !properties.is_empty());
    if declared && map.get("additionalProperties") == Some(&Json::Bool(false)) {
        param.closed = true;
    }
    report_unenforced(map, sink, at, param.closed);
    if let Some(choices) = map.get("enum").or_else(|| map.get("choices")) {
        match choices {
            Json::Array(values) if !values.is_empty() => {
                param.choices = Some(values.iter().map(Json::to_serde).collect())
            }
            Json::Array(_) => sink.repair(
                format!("'{at}' has an empty list of choices"),
                "it is left out",
            ),
            other => sink.repair(
                format!(
                    "'{at}.enum' must be a list of values, found {}",
                    json_kind(other)
                ),
                "it is left out",
            ),
        }
    }
    if let Some(value) = map.get("const") {
        // One allowed value is one choice: shown to the model, and checked when a call binds.
        let shown = shown_json(value);
        let value = value.to_serde();
        match &param.choices {
            Some(choices) if !choices.contains(&value) => sink.repair_as(
                ValidationErrorKind::Unsatisfiable,
                format!("'{at}' has a const {shown} that is not one of its choices"),
                "the const is read as its only choice",
            ),
            _ => sink.rewritten(format!(
                "'{at}' declares const {shown}; it is read as its only choice"
            )),
        }
        param.choices = Some(vec![value]);
    }
    for (keys, slot) in [
        (["minimum", "min"], &mut param.min),
        (["maximum", "max"], &mut param.max),
    ] {
        for key in keys {
            match map.get(key) {
                None | Some(Json::Null) => {}
                Some(Json::Number(n)) => *slot = n.as_f64(),
                Some(other) => sink.repair(
                    format!("'{at}.{key}' must be a number, found {}", json_kind(other)),
                    "it is left out",
                ),
            }
        }
    }
    if let (Some(min), Some(max)) = (param.min, param.max) {
        if min > max {
            // No value could be given: the bounds contradict each other, so neither is
            // trusted rather than refusing every call.
            sink.repair_as(
                ValidationErrorKind::Unsatisfiable,
                format!("'{at}' has a minimum {min} above its maximum {max}"),
                "both bounds are left out",
            );
            param.min = None;
            param.max = None;
        }
    }
    if let Some(default) = map.get("default") {
        param.default = Some(default.to_serde());
    }
    match map.get("format") {
        None | Some(Json::Null) => {}
        Some(Json::String(format)) => param.format = Some(format.clone()),
        Some(other) => sink.repair(
            format!(
                "'{at}.format' must be a string such as \"date\" or \"email\", found {}",
                json_kind(other)
            ),
            "it is left out",
        ),
    }
}

/// A value of a definition as JSON text for a message, cut after 80 characters.
fn shown_json(value: &Json) -> String {
    const MAX_SHOWN: usize = 80;
    let text = value.to_string();
    match text.char_indices().nth(MAX_SHOWN) {
        Some((cut, _)) => format!(
            "{}[... {} more bytes]",
            text.get(..cut).unwrap_or_default(),
            text.len() - cut
        ),
        None => text,
    }
}
