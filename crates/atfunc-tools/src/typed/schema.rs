//! A Rust type's JSON Schema, made into an [`Interface`]: schemars writes the schema, and
//! the shapes it writes that the interface model has no word for are simplified first.

use super::TypedError;
use atfunc::interface::{load_interfaces, Interface};
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Map, Value as Json};
use std::sync::Arc;

/// The interface of a function whose arguments are `A`: `A`'s JSON Schema, as
/// [`load_interfaces`] reads it, under `name` as a call writes it (`mail.send_email`; a name
/// without a dot is a root function). The description is `A`'s doc comment; give another
/// with [`Interface::describe`].
///
/// The schema is generated with every subschema inlined; `Option<T>` (a nullable type or an
/// `anyOf` with `null`) is `T`, and an enum whose variants carry doc comments (a `oneOf` of
/// constants) is a string with choices. A recursive type keeps a reference there, which
/// becomes a parameter of type `any`.
///
/// An atfunc interface has no union, no tuple and no map type, so some Rust types are shown
/// as the closest type it has, with the forms serde reads written out in a last line of
/// the parameter's description (shown under `Parameters:` with
/// [`PromptOptions::param_descriptions`](atfunc::render::PromptOptions::param_descriptions)).
/// serde still checks the whole value when the call runs; a value of the wrong form is
/// refused naming its path, serde's reason and these forms.
///
/// - An enum whose variants all carry fields, in any serde tagging, is one `object` with
///   every variant's fields. A field is required only where every variant requires it; a
///   tag (`#[serde(tag = "kind")]`) is a choice of the variants' names; a field the
///   variants type differently is `any`. The description's line says which fields go with
///   which variant (`One of: { <*kind{"circle"}>, <*r{number}> } | ...`). With external
///   tagging each variant is a field named after it, described by its doc comment.
/// - An enum with variants of different JSON types (unit variants beside variants with
///   fields, `#[serde(untagged)]` of a number and a struct) is of their common type (a
///   number for integers and numbers), else `any`; the line lists each variant's form
///   (`One of: number | { <*min{number}>, <*max{number}> } | string`).
/// - A tuple is an `array`, of its items' type when they share one; the line gives the
///   count and the order (`Exactly 2 items, in this order: [string, integer]`).
/// - A `HashMap` or `BTreeMap` is an `object` without fields. Lost: the type of its values.
///
/// ```
/// use atfunc_tools::typed::interface_of;
///
/// /// Send an email.
/// #[derive(schemars::JsonSchema)]
/// struct Send {
///     /// Who gets it.
///     to: String,
/// }
///
/// let send = interface_of::<Send>("mail.send").unwrap();
/// assert_eq!((send.domain.as_deref(), send.name.as_str()), (Some("mail"), "send"));
/// assert_eq!(send.description, "Send an email.");
/// assert_eq!(interface_of::<Send>("send").unwrap().domain, None);
/// ```
pub fn interface_of<A: JsonSchema>(name: &str) -> Result<Interface, TypedError> {
    typed_interface::<A>(name).map(|(interface, _)| interface)
}

/// Where the interface says less than serde reads: a parameter's path (`shape`,
/// `points[]`, `pair[1]`, `[]` standing for any index) and the forms it takes, in the
/// notation of the prompt. The same text ends the parameter's description.
pub(super) type Notes = Vec<(String, String)>;

/// [`interface_of`], with the [`Notes`] of the parameters it shows less precisely.
pub(super) fn typed_interface<A: JsonSchema>(name: &str) -> Result<(Interface, Notes), TypedError> {
    let qualified = name.to_owned();
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<A>()
        .to_value();
    let mut notes = Notes::new();
    simplify(&mut schema, "", &mut notes);
    let Json::Object(mut schema) = schema else {
        return Err(TypedError::NotAnObject {
            name: qualified,
            schema: schema.to_string(),
        });
    };
    // The root title is the type's name, which says nothing the function's name does not.
    schema.shift_remove("title");
    let doc = match schema.shift_remove("description") {
        Some(Json::String(doc)) => doc,
        _ => String::new(),
    };
    match schema.get("type").and_then(Json::as_str) {
        Some("object") => {}
        // `()`: a function without arguments.
        Some("null") => {
            schema = Map::new();
            schema.insert("type".into(), json!("object"));
        }
        _ => {
            return Err(TypedError::NotAnObject {
                name: qualified,
                schema: Json::Object(schema).to_string(),
            })
        }
    }
    let definition = json!([{
        "name": qualified,
        "description": doc,
        "parameters": schema,
    }]);
    let mut interfaces = load_interfaces(&definition).map_err(|source| TypedError::Interface {
        name: qualified.clone(),
        source: Arc::new(source),
    })?;
    let interface = interfaces.pop().ok_or_else(|| TypedError::NotAnObject {
        name: qualified,
        schema: definition.to_string(),
    })?;
    Ok((interface, notes))
}

/// Rewrites what schemars writes into what [`load_interfaces`] reads, in place; `path` is
/// the parameter's, as [`Notes`] write it. A shape the interface has no word for (a union of
/// different JSON types, a tuple) becomes the closest type it has, and the forms serde
/// reads are written out in a note.
fn simplify(schema: &mut Json, path: &str, notes: &mut Notes) {
    let Json::Object(map) = schema else {
        return;
    };
    let mut note = None;
    // `Option<Struct>` is `anyOf: [{...}, {"type": "null"}]`: the struct, nullable. The
    // struct may be a union itself (`Option` of an untagged enum), read on the next round;
    // each round takes one union away, and a type nests as many as it has `Option`s.
    let rounds = ["anyOf", "oneOf"]
        .into_iter()
        .cycle()
        .take(2 * MAX_DESCRIBE_DEPTH);
    for key in rounds {
        let Some(Json::Array(branches)) = map.get(key) else {
            continue;
        };
        let non_null: Vec<&Json> = branches.iter().filter(|b| !is_null_schema(b)).collect();
        if let [only] = non_null.as_slice() {
            let only = (*only).clone();
            map.shift_remove(key);
            if let Json::Object(inner) = only {
                for (k, v) in inner {
                    // The outer description (the field's doc comment) wins.
                    map.entry(k).or_insert(v);
                }
            }
        } else if let Some(choices) = constants(&non_null) {
            map.shift_remove(key);
            if let Some(first) = choices.first() {
                map.entry("type").or_insert(json!(json_type(first)));
            }
            map.insert("enum".into(), Json::Array(choices));
        } else if let Some(merged) = merged_objects(&non_null) {
            // The merged object loses which fields go together; the note keeps it.
            note = Some(one_of(&non_null));
            map.shift_remove(key);
            for (k, v) in merged {
                map.entry(k).or_insert(v);
            }
        } else {
            // Unit variants beside variants with data, an untagged enum of a number and a
            // struct: one JSON type where the branches share it, else any.
            note = Some(one_of(&non_null));
            let common = common_type(&non_null);
            map.shift_remove(key);
            if let Some(ty) = common {
                map.entry("type").or_insert(json!(ty));
            }
        }
    }
    // A tuple: an array, of its items' type where they share one; serde checks the length.
    if let Some(Json::Array(mut items)) = map.shift_remove("prefixItems") {
        note = Some(format!(
            "Exactly {} items, in this order: {}",
            items.len(),
            tuple(&items)
        ));
        for (i, item) in items.iter_mut().enumerate() {
            simplify(item, &format!("{path}[{i}]"), notes);
        }
        map.shift_remove("minItems");
        map.shift_remove("maxItems");
        map.entry("type").or_insert(json!("array"));
        if let Some(first) = items.first().filter(|f| items.iter().all(|i| i == *f)) {
            map.insert("items".into(), first.clone());
        }
    }
    if let Some(value) = map.shift_remove("const") {
        map.entry("type").or_insert(json!(json_type(&value)));
        map.insert("enum".into(), json!([value]));
    }
    if let Some(Json::Object(properties)) = map.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            let inner = match path {
                "" => name.clone(),
                _ => format!("{path}.{name}"),
            };
            simplify(property, &inner, notes);
        }
    }
    if let Some(items) = map.get_mut("items") {
        let inner = format!("{path}[]");
        simplify(items, &inner, notes);
        // The prompt shows the descriptions of parameters, not of their items: a list of
        // unions says its items' forms itself.
        if note.is_none() {
            note = notes
                .iter()
                .find(|(at, _)| *at == inner)
                .map(|(_, item)| format!("Each item: {item}"));
        }
    }
    if let Some(note) = note {
        let description = match map.get("description").and_then(Json::as_str) {
            Some(doc) if !doc.trim().is_empty() => format!("{}\n{note}", doc.trim_end()),
            _ => note.clone(),
        };
        map.insert("description".into(), json!(description));
        notes.push((path.to_owned(), note));
    }
}

/// The note of a union: `One of: "Dot" | { *Circle: { <*r{number}> } }`.
fn one_of(branches: &[&Json]) -> String {
    let forms: Vec<String> = branches.iter().map(|b| describe(b)).collect();
    format!("One of: {}", forms.join(" | "))
}

/// A tuple's items in order: `[number, string]`.
fn tuple(items: &[Json]) -> String {
    let items: Vec<String> = items.iter().map(describe).collect();
    format!("[{}]", items.join(", "))
}

/// How deep [`describe`] writes nested shapes; deeper ones read `any`. A recursive type
/// keeps a reference, which reads `any` too, so this bounds only what a deep type costs.
const MAX_DESCRIBE_DEPTH: usize = 6;

/// A schema as schemars writes it, in the notation the prompt uses for parameters: a
/// constant as JSON, choices joined by `|`, an object's fields as `<*name{type}>`, a
/// tuple as `[a, b]`, a union as `a | b`.
fn describe(schema: &Json) -> String {
    describe_at(schema, 0)
}

fn describe_at(schema: &Json, depth: usize) -> String {
    let Json::Object(map) = schema else {
        return "any".into();
    };
    if depth > MAX_DESCRIBE_DEPTH {
        return "any".into();
    }
    if let Some(value) = map.get("const") {
        return value.to_string();
    }
    if let Some(Json::Array(values)) = map.get("enum") {
        let values: Vec<String> = values.iter().map(Json::to_string).collect();
        return values.join("|");
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Json::Array(branches)) = map.get(key) {
            let forms: Vec<String> = branches
                .iter()
                .filter(|b| !is_null_schema(b))
                .map(|b| describe_at(b, depth + 1))
                .collect();
            return forms.join(" | ");
        }
    }
    if let Some(Json::Array(items)) = map.get("prefixItems") {
        let items: Vec<String> = items.iter().map(|i| describe_at(i, depth + 1)).collect();
        return format!("[{}]", items.join(", "));
    }
    let ty = match map.get("type") {
        Some(Json::String(ty)) => ty.as_str(),
        // `Option<u32>` is `["integer", "null"]`.
        Some(Json::Array(types)) => types
            .iter()
            .filter_map(Json::as_str)
            .find(|t| *t != "null")
            .unwrap_or("any"),
        _ => "any",
    };
    match (ty, map.get("properties"), map.get("items")) {
        ("object", Some(Json::Object(properties)), _) if !properties.is_empty() => {
            let fields: Vec<String> = properties
                .iter()
                .map(|(name, field)| {
                    let star = if requires(schema, name) { "*" } else { "" };
                    let form = describe_at(field, depth + 1);
                    if form.starts_with(['{', '[']) || form.contains(" | ") {
                        format!("{star}{name}: {form}")
                    } else if form == "string" {
                        format!("<{star}{name}>")
                    } else {
                        format!("<{star}{name}{{{form}}}>")
                    }
                })
                .collect();
            format!("{{ {} }}", fields.join(", "))
        }
        ("array", _, Some(items)) => {
            let form = describe_at(items, depth + 1);
            if form.starts_with('{') {
                format!("[ {form} ]")
            } else {
                format!("array of {form}")
            }
        }
        (ty, _, _) => ty.to_owned(),
    }
}

/// The JSON type every branch has (a number where integers and numbers mix), if one.
fn common_type(branches: &[&Json]) -> Option<&'static str> {
    let types: Vec<&'static str> = branches
        .iter()
        .map(|b| branch_type(b))
        .collect::<Option<_>>()?;
    let first = *types.first()?;
    if types.iter().all(|t| *t == first) {
        Some(first)
    } else if types.iter().all(|t| matches!(*t, "integer" | "number")) {
        Some("number")
    } else {
        None
    }
}

/// A branch's JSON type: its `type`, or that of its constant.
fn branch_type(branch: &Json) -> Option<&'static str> {
    if let Some(value) = branch.get("const") {
        return Some(json_type(value));
    }
    match branch.get("type").and_then(Json::as_str)? {
        "string" => Some("string"),
        "number" => Some("number"),
        "integer" => Some("integer"),
        "boolean" => Some("boolean"),
        "object" => Some("object"),
        "array" => Some("array"),
        _ => None,
    }
}

/// Branches that are each an object (an enum whose variants carry fields, in any of serde's
/// taggings) as one object: every variant's fields, each required only where every variant
/// requires it. A field in several variants keeps its schema where they agree, and a tag
/// (one constant per variant) becomes a choice of them; where they disagree it is of any
/// type. Which fields go together is lost: serde checks that when the call runs.
fn merged_objects(branches: &[&Json]) -> Option<Map<String, Json>> {
    if branches.len() < 2 || !branches.iter().all(|b| is_object_schema(b)) {
        return None;
    }
    let mut fields: Vec<(String, Vec<Json>)> = Vec::new();
    for branch in branches {
        let Some(Json::Object(properties)) = branch.get("properties") else {
            continue;
        };
        // A variant with one field (serde's external tagging: `{"Circle": {...}}`) lends
        // the field its doc comment.
        let lent = branch.get("description").filter(|_| properties.len() == 1);
        for (name, schema) in properties {
            let mut schema = schema.clone();
            if let (Some(description), Json::Object(map)) = (lent, &mut schema) {
                map.entry("description").or_insert(description.clone());
            }
            match fields.iter_mut().find(|(known, _)| known == name) {
                Some((_, schemas)) => schemas.push(schema),
                None => fields.push((name.clone(), vec![schema])),
            }
        }
    }
    let required: Vec<Json> = fields
        .iter()
        .map(|(name, _)| name)
        .filter(|name| branches.iter().all(|b| requires(b, name)))
        .map(|name| json!(name))
        .collect();
    let properties: Map<String, Json> = fields
        .into_iter()
        .map(|(name, schemas)| (name, merged_field(schemas)))
        .collect();
    let mut merged = Map::new();
    merged.insert("type".into(), json!("object"));
    merged.insert("properties".into(), Json::Object(properties));
    if !required.is_empty() {
        merged.insert("required".into(), Json::Array(required));
    }
    Some(merged)
}

/// One field of several variants: its schema where they agree, a choice of their constants
/// for a tag, else any type with the first description.
fn merged_field(schemas: Vec<Json>) -> Json {
    if let Some(first) = schemas.first().filter(|f| schemas.iter().all(|s| s == *f)) {
        return first.clone();
    }
    let refs: Vec<&Json> = schemas.iter().collect();
    if let Some(choices) = constants(&refs) {
        let mut choices_unique: Vec<Json> = Vec::new();
        for choice in choices {
            if !choices_unique.contains(&choice) {
                choices_unique.push(choice);
            }
        }
        let ty = choices_unique.first().map(json_type).unwrap_or("string");
        return json!({"type": ty, "enum": choices_unique});
    }
    match schemas.iter().find_map(|s| s.get("description")) {
        Some(description) => json!({"description": description}),
        None => json!({}),
    }
}

fn requires(branch: &Json, name: &str) -> bool {
    match branch.get("required") {
        Some(Json::Array(names)) => names.iter().any(|n| n.as_str() == Some(name)),
        _ => false,
    }
}

fn is_object_schema(schema: &Json) -> bool {
    schema.get("type").and_then(Json::as_str) == Some("object")
}

fn is_null_schema(schema: &Json) -> bool {
    schema.get("type").and_then(Json::as_str) == Some("null")
}

/// The values of branches that are each one constant (`{"const": x}` or `{"enum": [x]}`)
/// of one JSON type: an enum whose variants have doc comments.
fn constants(branches: &[&Json]) -> Option<Vec<Json>> {
    let values: Vec<Json> = branches
        .iter()
        .map(|branch| match (branch.get("const"), branch.get("enum")) {
            (Some(value), _) => Some(value.clone()),
            (None, Some(Json::Array(values))) if values.len() == 1 => values.first().cloned(),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let first = values.first()?;
    values
        .iter()
        .all(|v| json_type(v) == json_type(first))
        .then_some(values)
}

fn json_type(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simplify_merges_a_nullable_branch_under_the_outer_description() {
        let mut schema = json!({"description": "outer", "anyOf": [
            {"type": "object", "description": "inner", "properties": {"a": {"const": 1}}},
            {"type": "null"}
        ]});
        simplify(&mut schema, "", &mut Notes::new());
        assert_eq!(
            schema,
            json!({"description": "outer", "type": "object",
                   "properties": {"a": {"type": "integer", "enum": [1]}}})
        );
    }
}

#[cfg(test)]
mod union_tests {
    use super::*;
    use atfunc::interface::ParamType;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(untagged)]
    #[allow(dead_code)]
    enum Amount {
        Whole(u32),
        Part(f64),
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(untagged)]
    #[allow(dead_code)]
    enum Size {
        Exact(f64),
        Named(String),
    }

    /// Hold.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Hold {
        amount: Amount,
        size: Option<Size>,
    }

    #[test]
    fn integers_and_numbers_are_numbers_and_an_optional_union_keeps_its_forms() {
        let (hold, notes) = typed_interface::<Hold>("hold").unwrap();
        assert_eq!(hold.params[0].ty, ParamType::Number);
        assert_eq!(hold.params[1].ty, ParamType::Any);
        assert!(!hold.params[1].required);
        assert_eq!(
            notes,
            vec![
                ("amount".to_owned(), "One of: integer | number".to_owned()),
                ("size".to_owned(), "One of: number | string".to_owned()),
            ]
        );
    }
}
