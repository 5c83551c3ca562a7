//! Interfaces as JSON Schema, the language of every other tool format.
//!
//! The schema is the one `load_interfaces` reads back: what it writes loads to the same
//! parameters (see `to_openai_tools` for the few things a schema cannot carry).

use super::ControlFields;
use crate::interface::{Interface, Param, ParamType};
use serde_json::{json, Map, Value as Json};

/// The name of the argument that carries an api-wrapper's request body: `body`, or
/// `request_body` when the wrapper already has a parameter called `body`.
pub(crate) fn body_field(interface: &Interface) -> String {
    let taken = |name: &str| {
        interface.params.iter().any(|p| {
            p.name.eq_ignore_ascii_case(name) || p.original_name().eq_ignore_ascii_case(name)
        })
    };
    ["body", "request_body", "with_body"]
        .into_iter()
        .find(|name| !taken(name))
        .unwrap_or("body_")
        .to_owned()
}

/// The JSON Schema object of an interface's arguments, as OpenAI's `parameters` and MCP's
/// `inputSchema` take it: `{"type": "object", "properties": {...}, "required": [...]}`.
///
/// Control fields are left out. An api-wrapper's request body becomes one more object
/// parameter (named `body`, or `request_body` if `body` is taken), required when any of
/// its fields is, after the path and query parameters.
///
/// ```
/// use atfunc::interop::{input_schema, ControlFields};
/// use atfunc::{Interface, Param, ParamType};
/// use serde_json::json;
///
/// let f = Interface::new("f")
///     .param(Param::new("n", ParamType::Integer).required().describe("How many"));
/// assert_eq!(input_schema(&f, &ControlFields::default()), json!({
///     "type": "object",
///     "properties": {"n": {"type": "integer", "description": "How many"}},
///     "required": ["n"],
/// }));
/// ```
pub fn input_schema(interface: &Interface, control_fields: &ControlFields) -> Json {
    let params: Vec<&Param> = interface
        .params
        .iter()
        .filter(|p| {
            !control_fields.contains(&p.name) && !control_fields.contains(p.original_name())
        })
        .collect();
    let mut schema = object_schema(&params);
    if interface.has_body() {
        let body: Vec<&Param> = interface.request_body.iter().collect();
        let mut body_schema = object_schema(&body);
        if let Json::Object(map) = &mut body_schema {
            // Put the description first, as a person would write it.
            let mut described = Map::new();
            described.insert("type".into(), json!("object"));
            described.insert(
                "description".into(),
                json!("The request body, a JSON object"),
            );
            crate::ordered::remove_in_order(map, "type");
            described.append(map);
            body_schema = Json::Object(described);
        }
        let required = interface.request_body.iter().any(|p| p.required);
        let name = body_field(interface);
        if let Json::Object(map) = &mut schema {
            if let Some(Json::Object(properties)) = map.get_mut("properties") {
                properties.insert(name.clone(), body_schema);
            }
            if required {
                match map.get_mut("required") {
                    Some(Json::Array(names)) => names.push(json!(name)),
                    _ => {
                        map.insert("required".into(), json!([name]));
                    }
                }
            }
        }
    }
    schema
}

/// `{"type": "object", "properties": ..., "required": ...}` for `params`; `required` only
/// when some parameter is.
fn object_schema(params: &[&Param]) -> Json {
    let mut map = Map::new();
    map.insert("type".into(), json!("object"));
    let properties: Map<String, Json> = params
        .iter()
        // JSON Schema takes any key: the names as defined (`max-results`) go out.
        .map(|p| (p.original_name().to_owned(), param_schema(p)))
        .collect();
    map.insert("properties".into(), Json::Object(properties));
    let required: Vec<Json> = params
        .iter()
        .filter(|p| p.required)
        .map(|p| json!(p.original_name()))
        .collect();
    if !required.is_empty() {
        map.insert("required".into(), Json::Array(required));
    }
    Json::Object(map)
}

/// The JSON Schema of one parameter: `type` (absent for `any`), `description` (when not
/// empty), `enum`, `minimum`, `maximum`, `default`, and for an object its `properties`,
/// `required` and (when it is closed) `"additionalProperties": false`, for an array its
/// `items`. An array's choices that apply to each element
/// ([`Param::element_choices`]) are written as the `enum` of its `items`.
///
/// ```
/// use atfunc::interop::param_schema;
/// use atfunc::{Param, ParamType};
/// use serde_json::json;
///
/// let mut days = Param::new("days", ParamType::Integer);
/// days.min = Some(1.0);
/// days.max = Some(16.0);
/// assert_eq!(param_schema(&days), json!({"type": "integer", "minimum": 1, "maximum": 16}));
/// ```
pub fn param_schema(param: &Param) -> Json {
    let mut map = Map::new();
    if param.ty != ParamType::Any {
        map.insert("type".into(), json!(param.ty.name()));
    }
    if !param.description.is_empty() {
        map.insert("description".into(), json!(param.description));
    }
    // Per-element choices of an array go into its `items`, where JSON Schema wants them:
    // on the array itself they would admit no list at all.
    let per_element = param.element_choices().is_some();
    if let Some(choices) = param.choices.as_ref().filter(|_| !per_element) {
        map.insert("enum".into(), Json::Array(choices.clone()));
    }
    if let Some(min) = param.min {
        map.insert("minimum".into(), number(min));
    }
    if let Some(max) = param.max {
        map.insert("maximum".into(), number(max));
    }
    if let Some(default) = &param.default {
        map.insert("default".into(), default.clone());
    }
    if let Some(format) = &param.format {
        map.insert("format".into(), json!(format));
    }
    match &param.ty {
        ParamType::Object { properties } => {
            let properties: Vec<&Param> = properties.iter().collect();
            if let Json::Object(object) = object_schema(&properties) {
                map.extend(object.into_iter().filter(|(key, _)| key != "type"));
            }
            if param.closed {
                map.insert("additionalProperties".into(), json!(false));
            }
        }
        ParamType::Array { items: Some(items) } if !per_element => {
            map.insert("items".into(), param_schema(items));
        }
        ParamType::Array { .. } => {
            if let Some(element) = param.element().filter(|_| per_element) {
                map.insert("items".into(), param_schema(&element));
            }
        }
        _ => {}
    }
    Json::Object(map)
}

/// A bound as JSON: whole numbers without a fraction (`1`, not `1.0`).
fn number(value: f64) -> Json {
    // Past 2^53 an f64 is not an exact integer any more; keep it a float there.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    if value.fract() == 0.0 && value.abs() <= EXACT {
        json!(value as i64)
    } else {
        json!(value)
    }
}
