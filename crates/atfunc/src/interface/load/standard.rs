//! Shape (a), the atfunc standard format, checked strictly.

use super::json::json_kind;
use super::json::{Json, Map};
use super::schema::{fill_constraints, schema_object_properties, schema_param, TYPE_HINT};
use super::sink::{check_function_name, returns_text, Sink};
use crate::interface::validate::ValidationErrorKind;
use crate::interface::{Interface, Kind, Location, Param, ParamType};

/// Shape (a): the atfunc standard format, checked as the reference checks it.
pub(super) fn load_standard(
    index: usize,
    map: &Map<String, Json>,
    sink: &mut Sink,
) -> Option<Interface> {
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
