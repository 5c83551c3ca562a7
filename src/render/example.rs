//! The example call of the preamble, taken from the tools themselves.
//!
//! A fixed example names a function that may not exist, and a model may call it. So the
//! example is a call of one of the listed functions, with placeholder values chosen to bind:
//!
//! 1. **Which function.** The first, in listed order, of those that read best as an
//!    example: its parameter names can be written as `name=value`; it needs no request
//!    body; its first parameter is a required string (written positionally, the commonest
//!    shape); its call shows two arguments (one by position, one by name) rather than one
//!    or many; it has fewer required parameters.
//! 2. **Which arguments.** The first parameter by position when it is required; every other
//!    required parameter by name; when that makes fewer than two, one optional parameter by
//!    name too (one with choices first). A required body gets a `with_body` block of its
//!    required fields.
//! 3. **Which values.** The first declared choice that fits the type and bounds; a number
//!    within the bounds (the lower one when given, else 1); `true`; a list of one element;
//!    an object of its required fields; a string that suits the name (`"Oslo"` for a
//!    location, `"ann@example.com"` for an email) or else `"example"`.

use super::{call_name, PromptOptions};
use crate::interface::{is_identifier, Interface, Param, ParamType};
use serde_json::{Map, Value as Json};

/// How deep placeholder values nest; deeper objects and lists are left empty.
const MAX_DEPTH: usize = 4;

/// Strings that suit a parameter whose name contains one of the words, in lookup order.
/// Anything else gets [`DEFAULT_WORD`].
const WORDS: &[(&[&str], &str)] = &[
    (&["email", "mail"], "ann@example.com"),
    (
        &["url", "uri", "link", "website", "endpoint"],
        "https://example.com",
    ),
    (
        &["path", "file", "filename", "folder", "directory", "dir"],
        "notes.txt",
    ),
    (&["date"], "2025-05-01"),
    (
        &[
            "city",
            "location",
            "place",
            "address",
            "destination",
            "origin",
            "country",
            "region",
        ],
        "Oslo",
    ),
    // Not "name": most names name things (a recipe, a team, a file), not people.
    (
        &[
            "user", "username", "author", "artist", "person", "owner", "customer",
        ],
        "Ann",
    ),
];

/// The string of a parameter no word of [`WORDS`] suits.
const DEFAULT_WORD: &str = "example";

/// A call of `interface` that binds, written as a model should write it, domain included;
/// [`example_call_with`] writes it under the name the prompt lists it by.
///
/// ```
/// use atfunc::render::example_call;
/// use atfunc::{Interface, Param, ParamType};
///
/// let weather = Interface::new("get_current_weather")
///     .in_domain("weather")
///     .param(Param::new("location", ParamType::String).required())
///     .param(Param::new("unit", ParamType::String).choices(["celsius", "fahrenheit"]));
/// assert_eq!(
///     example_call(&weather),
///     r#"@weather.get_current_weather("Oslo", unit="celsius")"#
/// );
/// ```
pub fn example_call(interface: &Interface) -> String {
    example_call_with(interface, &PromptOptions::default())
}

/// A call of `interface` that binds, under the name the prompt lists it by: without the
/// domain for the functions of [`PromptOptions::root`] (the separator plays no part).
///
/// ```
/// use atfunc::render::{example_call_with, PromptOptions};
/// use atfunc::{Interface, Param, ParamType};
///
/// let sqrt = Interface::new("sqrt")
///     .in_domain("math")
///     .param(Param::new("x", ParamType::Number).required());
/// let options = PromptOptions::default().with_root(Some("math"));
/// assert_eq!(example_call_with(&sqrt, &options), "@sqrt(1)");
/// ```
pub fn example_call_with(interface: &Interface, options: &PromptOptions) -> String {
    let mut out = format!("@{}(", call_name(interface, options.root));
    let args: Vec<String> = arguments(interface)
        .into_iter()
        .map(|(param, by_name)| {
            let value = write(&placeholder(param, 0));
            if by_name {
                format!("{}={value}", param.name)
            } else {
                value
            }
        })
        .collect();
    out.push_str(&args.join(", "));
    out.push(')');
    if needs_body(interface) {
        let fields: Map<String, Json> = interface
            .request_body
            .iter()
            .filter(|field| field.required)
            .map(|field| (field.name.clone(), placeholder(field, 0)))
            .collect();
        out.push_str(" with_body [[ ");
        out.push_str(&write(&Json::Object(fields)));
        out.push_str(" ]]");
    }
    out
}

/// The interface whose call makes the best example (see the module docs), if any.
pub(super) fn pick(interfaces: &[Interface]) -> Option<&Interface> {
    interfaces
        .iter()
        .enumerate()
        .min_by_key(|(index, interface)| {
            let args = arguments(interface);
            let writable = args
                .iter()
                .all(|(param, by_name)| !by_name || is_identifier(&param.name));
            let first_is_required_string = interface
                .params
                .first()
                .is_some_and(|p| p.required && p.ty == ParamType::String);
            let required = interface.params.iter().filter(|p| p.required).count();
            (
                !writable,
                needs_body(interface),
                !first_is_required_string,
                args.len().abs_diff(2),
                required,
                *index,
            )
        })
        .map(|(_, interface)| interface)
}

/// Whether a call must carry a body: an api-wrapper with a required body field.
fn needs_body(interface: &Interface) -> bool {
    interface.has_body() && interface.request_body.iter().any(|field| field.required)
}

/// The parameters the example gives, each with whether it is written by name.
fn arguments(interface: &Interface) -> Vec<(&Param, bool)> {
    let params = &interface.params;
    let mut args: Vec<(&Param, bool)> = params
        .iter()
        .enumerate()
        .filter(|(_, param)| param.required)
        .map(|(i, param)| (param, i > 0))
        .collect();
    if args.len() < 2 {
        let optional = || params.iter().filter(|param| !param.required);
        let shown = optional()
            .find(|param| param.choices.is_some())
            .or_else(|| optional().next());
        args.extend(shown.map(|param| (param, true)));
    }
    args
}

/// A value of `param`'s type that binds to it.
fn placeholder(param: &Param, depth: usize) -> Json {
    // Per-element choices of a list are not of the list's type: they never fit here, and
    // the element below takes one.
    if let Some(choice) = param.choices.iter().flatten().find(|c| fits(c, param)) {
        return choice.clone();
    }
    match &param.ty {
        // A declared format is checked at bind time, so the example must be one.
        ParamType::String | ParamType::Any => match param.known_format() {
            Some(format) => Json::String(format.example().to_owned()),
            None => Json::String(word(&param.name).to_owned()),
        },
        ParamType::Integer => {
            let low = param.min.map(f64::ceil);
            let high = param.max.map(f64::floor);
            number(low.unwrap_or_else(|| high.map_or(1.0, |high| high.min(1.0))))
        }
        ParamType::Number => number(
            param
                .min
                .unwrap_or_else(|| param.max.map_or(1.0, |high| high.min(1.0))),
        ),
        ParamType::Boolean => Json::Bool(true),
        ParamType::Array { .. } if depth >= MAX_DEPTH => Json::Array(Vec::new()),
        ParamType::Array { .. } => {
            let element = match param.element() {
                Some(mut element) => {
                    // The element is named after its list, for a word that suits it.
                    element.name.clone_from(&param.name);
                    placeholder(&element, depth + 1)
                }
                None => Json::String(DEFAULT_WORD.to_owned()),
            };
            Json::Array(vec![element])
        }
        ParamType::Object { .. } if depth >= MAX_DEPTH => Json::Object(Map::new()),
        ParamType::Object { properties } => Json::Object(
            properties
                .iter()
                .filter(|field| field.required)
                .map(|field| (field.name.clone(), placeholder(field, depth + 1)))
                .collect(),
        ),
    }
}

/// Whether a declared choice binds to `param`: of its type and within its bounds.
fn fits(choice: &Json, param: &Param) -> bool {
    let within =
        |n: f64| param.min.is_none_or(|min| n >= min) && param.max.is_none_or(|max| n <= max);
    match (&param.ty, choice) {
        (ParamType::Any, _) => true,
        (ParamType::String, Json::String(_)) => true,
        (ParamType::Boolean, Json::Bool(_)) => true,
        (ParamType::Number, Json::Number(n)) => n.as_f64().is_some_and(within),
        (ParamType::Integer, Json::Number(n)) => {
            n.as_f64().is_some_and(|n| n.fract() == 0.0 && within(n))
        }
        (ParamType::Object { .. }, Json::Object(_)) => true,
        (ParamType::Array { .. }, Json::Array(_)) => true,
        _ => false,
    }
}

/// A string that suits a parameter called `name`: a word of it looked up in [`WORDS`].
fn word(name: &str) -> &'static str {
    let words = words(name);
    // A plural names a list of the singular (`cities`, `emails`).
    let known = |keys: &[&str], w: &str| {
        keys.contains(&w) || w.strip_suffix('s').is_some_and(|one| keys.contains(&one))
    };
    WORDS
        .iter()
        .find(|(keys, _)| words.iter().any(|w| known(keys, w)))
        .map_or(DEFAULT_WORD, |(_, value)| value)
}

/// The lower-case words of a name: split at `_`, `-`, spaces and lower-to-upper case
/// changes (`userEmail` is `user`, `email`).
fn words(name: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        let boundary = !c.is_alphanumeric() || (c.is_uppercase() && previous_lower);
        if boundary && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        if c.is_alphanumeric() {
            current.extend(c.to_lowercase());
        }
        previous_lower = c.is_lowercase();
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// A number as a model would write it: `1`, not `1.0`.
fn number(value: f64) -> Json {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        Json::from(value as i64)
    } else {
        serde_json::Number::from_f64(value).map_or(Json::from(0), Json::Number)
    }
}

/// A value as call text, with a space after each `,` and `:` as a person writes JSON.
fn write(value: &Json) -> String {
    match value {
        Json::Array(items) => {
            let items: Vec<String> = items.iter().map(write).collect();
            format!("[{}]", items.join(", "))
        }
        Json::Object(fields) => {
            let fields: Vec<String> = fields
                .iter()
                .map(|(key, value)| format!("{}: {}", Json::String(key.clone()), write(value)))
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
        other => other.to_string(),
    }
}
