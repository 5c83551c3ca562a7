//! Conversion of written values to the declared types, and the checks that follow it.

use super::{ArgParser, BindError};
use crate::interface::{identifier, Param, ParamType};
use crate::messages;
use crate::parse::{is_number, Value};
use serde_json::{Map, Number, Value as Json};
use std::fmt;
use unicase::UniCase;

/// Longest rendering of a value inside an error message, in bytes.
const MAX_SHOWN: usize = 80;

/// Most enum choices listed in an error message.
const MAX_CHOICES: usize = 20;

/// What every conversion needs to know about the call it serves.
pub(super) struct Ctx<'a> {
    /// The function's qualified name, for messages.
    pub function: &'a str,
    /// Whether object fields match declared properties exactly.
    pub case_sensitive: bool,
}

/// Where a value stands inside an argument: rendered (`points[1].x`) only for messages,
/// so walking a large value allocates nothing for paths.
#[derive(Clone, Copy)]
pub(super) enum Path<'a> {
    /// A top-level parameter.
    Param(&'a str),
    /// A field of an object.
    Field(&'a Path<'a>, &'a str),
    /// An element of an array.
    Index(&'a Path<'a>, usize),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Param(name) => f.write_str(name),
            Path::Field(parent, name) => write!(f, "{parent}.{name}"),
            Path::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

/// Converts `value` to `param`'s declared type, then checks its choices and bounds.
/// The choices of an array parameter apply to each element unless they are lists
/// themselves ([`Param::element_choices`]).
///
/// `value` must not be `null` unless the type is [`ParamType::Any`] or the value sits in an
/// array: callers treat a `null` parameter or field as absent.
pub(super) fn coerce_param(
    value: &Value,
    param: &Param,
    path: &Path<'_>,
    ctx: &Ctx<'_>,
) -> Result<Json, BindError> {
    coerce_param_with(value, param, path, ctx, None)
}

/// [`coerce_param`], with the parameter's own parser run on the converted value (after its
/// `format` is checked, before its choices and bounds, which then apply to what the parser
/// returns).
pub(super) fn coerce_param_with(
    value: &Value,
    param: &Param,
    path: &Path<'_>,
    ctx: &Ctx<'_>,
    parser: Option<&ArgParser>,
) -> Result<Json, BindError> {
    if let Value::String(text) = value {
        // The prompt shows each parameter as a placeholder (`<*location>`,
        // `<days{integer}>`), and its example call writes a text parameter's quoted
        // (`"<location>"`): text that is one of this parameter's is copied from the prompt,
        // not a value. A declared choice that happens to read so is still a value; an
        // array's items have no name, and no placeholder.
        let declared = || {
            param
                .choices
                .iter()
                .flatten()
                .any(|choice| choice.as_str() == Some(text.as_str()))
        };
        if is_placeholder_of(text, param) && !declared() {
            return Err(BindError::Placeholder {
                function: ctx.function.to_owned(),
                param: path.to_string(),
                written: shorten(format!("\"{text}\"")),
            });
        }
    }
    let mut json = coerce(value, &param.ty, param.closed, path, ctx)?;
    match (value, &json) {
        // A string whose choices spell a boolean their own way (`"True"`, declared so by
        // its definition): the model's `True` means that choice.
        (Value::Bool(_), Json::String(text)) => {
            if let Some(choice) = param.choices.iter().flatten().find(|choice| {
                choice
                    .as_str()
                    .is_some_and(|spelled| spelled.eq_ignore_ascii_case(text))
            }) {
                json = choice.clone();
            }
        }
        // Choices that hold a boolean beside text (`true`, `false`, `"dontcare"`, read so
        // from a boolean whose choices were text): the text `"False"` means the boolean.
        (_, Json::String(text)) => {
            let choices = || param.choices.iter().flatten();
            if let Some(spelled) = boolean(text).map(Json::Bool) {
                if !choices().any(|choice| *choice == json) && choices().any(|c| *c == spelled) {
                    json = spelled;
                }
            }
        }
        _ => {}
    }
    if let (Some(format), Json::String(text)) = (param.known_format(), &json) {
        if let Err(reason) = super::string_format::check(format, text) {
            return Err(BindError::InvalidFormat {
                function: ctx.function.to_owned(),
                param: path.to_string(),
                format,
                got: shorten(json.to_string()),
                reason,
            });
        }
    }
    if let Some(parser) = parser {
        json = parser(json).map_err(|message| BindError::Refused {
            function: ctx.function.to_owned(),
            param: path.to_string(),
            message,
        })?;
    }
    match (param.element_choices(), &json) {
        (Some(choices), Json::Array(elements)) => {
            for (i, element) in elements.iter().enumerate() {
                check_choices(element, choices, &Path::Index(path, i), ctx)?;
            }
        }
        _ => {
            if let Some(choices) = param.choices.as_deref() {
                check_choices(&json, choices, path, ctx)?;
            }
        }
    }
    check_range(&json, param, path, ctx)?;
    Ok(json)
}

/// `value` as `ty`; `closed` says whether an object takes no fields beyond those declared
/// ([`Param::closed`]).
fn coerce(
    value: &Value,
    ty: &ParamType,
    closed: bool,
    path: &Path<'_>,
    ctx: &Ctx<'_>,
) -> Result<Json, BindError> {
    if let Value::Bare(word) = value {
        if is_placeholder(word) {
            return Err(BindError::Placeholder {
                function: ctx.function.to_owned(),
                param: path.to_string(),
                written: shorten(word.clone()),
            });
        }
    }
    let converted = match ty {
        ParamType::Any => Some(value.to_json()),
        ParamType::String => match value {
            Value::String(s) | Value::Bare(s) => Some(Json::String(s.clone())),
            // The literal as written, so `007` and `1.50` survive.
            Value::Number(n) => Some(Json::String(n.clone())),
            Value::Bool(b) => Some(Json::String(b.to_string())),
            _ => None,
        },
        ParamType::Number => match value {
            Value::Number(n) => number(n),
            Value::String(s) | Value::Bare(s) => number_text(s).and_then(number),
            _ => None,
        },
        ParamType::Integer => match value {
            Value::Number(n) => integer(n),
            Value::String(s) | Value::Bare(s) => number_text(s).and_then(integer),
            _ => None,
        },
        ParamType::Boolean => match value {
            Value::Bool(b) => Some(Json::Bool(*b)),
            Value::String(s) | Value::Bare(s) => boolean(s).map(Json::Bool),
            _ => None,
        },
        ParamType::Object { properties } => match value {
            Value::Object(fields) => return object(fields, properties, closed, path, ctx),
            Value::String(s) | Value::Bare(s) => match json_text(s) {
                Some(parsed @ Value::Object(_)) => return coerce(&parsed, ty, closed, path, ctx),
                _ => None,
            },
            _ => None,
        },
        ParamType::Array { items } => match value {
            Value::Array(elements) => return array(elements, items.as_deref(), path, ctx),
            Value::String(s) | Value::Bare(s) => match json_text(s) {
                Some(parsed @ Value::Array(_)) => return coerce(&parsed, ty, closed, path, ctx),
                _ => None,
            },
            _ => None,
        },
    };
    converted.ok_or_else(|| BindError::InvalidValue {
        function: ctx.function.to_owned(),
        param: path.to_string(),
        expected: expected(ty).to_owned(),
        got: shown_value(value),
    })
}

/// Whether `text` is a placeholder the prompt could show for `param`: `<` and `>` around
/// its name, with the `*` of a required parameter or a `{...}` of its type and
/// restrictions or both (`<*to>`, `<to{string}>`), the name in any case and spelled as
/// the definition spells it (`max-results`), as a call writes it (`max_results`) or, for a
/// field, as a call may write its key. Blanks around it are no part of a value, and
/// neither are more of the example call's arguments after it (`<layout> unit=<unit>`): a
/// model that copied the example wrote those (Qwen2.5-Coder-0.5B did, EVAL.md (x)).
/// Nothing else is one: `<html><body>` for `html`, `<T> void sort(List<T> list)` for `T`.
fn is_placeholder_of(text: &str, param: &Param) -> bool {
    let text = text.trim();
    let Some(end) = placeholder_end(text, param) else {
        return false;
    };
    copied_arguments(text.get(end..).unwrap_or_default())
}

/// Where the placeholder of `param` that `text` begins with ends (the byte after its `>`).
fn placeholder_end(text: &str, param: &Param) -> Option<usize> {
    if param.name.is_empty() {
        return None;
    }
    let inner = text.strip_prefix('<')?;
    let inner = inner.strip_prefix('*').unwrap_or(inner);
    let offset = text.len() - inner.len();
    // The name runs to the braces of the annotation, or to the `>`.
    let name_end = inner.find(['{', '>'])?;
    let name = UniCase::new(inner.get(..name_end)?);
    let field = identifier(&param.name);
    let spellings = [
        Some(param.name.as_str()),
        param.original.as_deref(),
        Some(field.as_ref()),
    ];
    if !spellings
        .into_iter()
        .flatten()
        .any(|s| UniCase::new(s) == name)
    {
        return None;
    }
    let rest = inner.get(name_end..)?;
    if let Some(after) = rest.strip_prefix('>') {
        return Some(text.len() - after.len());
    }
    // An annotation ends at the `}>` that ends the placeholder; it may hold `<` and `>`
    // itself (`{integer <=10}`).
    let close = rest.find("}>")?;
    Some(offset + name_end + close + 2)
}

/// Whether `rest`, after a placeholder, is only more arguments of the example call, each a
/// name given a placeholder (`, unit=<unit>`, ` unit="<unit>"`): what a model writes that
/// copies the example past the value.
fn copied_arguments(rest: &str) -> bool {
    let mut rest = rest.trim_start();
    while !rest.is_empty() {
        rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
        let name_end = rest.find(|c: char| !is_name_char(c)).unwrap_or(rest.len());
        let (name, after) = rest.split_at(name_end);
        let Some(value) = after.strip_prefix('=').filter(|_| !name.is_empty()) else {
            return false;
        };
        let (quote, value) = match value.strip_prefix('"') {
            Some(inner) => ("\"", inner),
            None => ("", value),
        };
        let Some(inner) = value.strip_prefix('<') else {
            return false;
        };
        let Some(close) = inner.find('>') else {
            return false;
        };
        let Some(after) = inner.get(close + 1..).and_then(|a| a.strip_prefix(quote)) else {
            return false;
        };
        rest = after.trim_start();
    }
    true
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether a bare word is a placeholder such as `<days>` or `<*days{integer}>`: the example
/// call writes the value of a parameter that is not text so. No value a call writes
/// unquoted begins with `<`, so every such word is one, whatever it names.
fn is_placeholder(word: &str) -> bool {
    word.len() > 2 && word.starts_with('<') && word.ends_with('>')
}

/// The declared type as the model should write it.
fn expected(ty: &ParamType) -> &'static str {
    match ty {
        ParamType::Boolean => "boolean (true or false)",
        ParamType::Object { .. } => "object ({...})",
        ParamType::Array { .. } => "array ([...])",
        other => other.name(),
    }
}

fn object(
    fields: &[(String, Value)],
    properties: &[Param],
    closed: bool,
    path: &Path<'_>,
    ctx: &Ctx<'_>,
) -> Result<Json, BindError> {
    // Declared properties first, in declared order, under their declared spelling; then
    // undeclared fields as written (objects often allow more than they declare).
    let mut given: Vec<Option<&Value>> = vec![None; properties.len()];
    let mut extra = Map::new();
    for (key, value) in fields {
        match find_param(properties, key, ctx.case_sensitive) {
            Some(i) => {
                if let Some(slot) = given.get_mut(i) {
                    // Later duplicates win, as in JSON.
                    *slot = Some(value);
                }
            }
            None => {
                extra.insert(key.clone(), value.to_json());
            }
        }
    }
    if closed {
        // The definition allows no other field (`"additionalProperties": false`): the
        // first one given is named, with the fields there are.
        if let Some(key) = extra.keys().next() {
            let fields = || properties.iter().map(|p| p.name.as_str());
            return Err(BindError::UnknownParameter {
                function: ctx.function.to_owned(),
                param: shorten_str(&Path::Field(path, key).to_string()),
                closest: messages::closest(key, fields())
                    .map(|(_, name)| Path::Field(path, name).to_string()),
                valid: fields()
                    .map(|name| Path::Field(path, name).to_string())
                    .collect(),
            });
        }
    }
    let missing: Vec<String> = properties
        .iter()
        .zip(&given)
        .filter(|(p, v)| p.required && matches!(v, None | Some(Value::Null)))
        .map(|(p, _)| Path::Field(path, &p.name).to_string())
        .collect();
    if !missing.is_empty() {
        return Err(BindError::MissingParameters {
            function: ctx.function.to_owned(),
            params: missing,
        });
    }
    let mut out = Map::new();
    for (property, value) in properties.iter().zip(given) {
        match value {
            None | Some(Value::Null) => {}
            Some(value) => {
                let field = Path::Field(path, &property.name);
                out.insert(
                    property.name.clone(),
                    coerce_param(value, property, &field, ctx)?,
                );
            }
        }
    }
    for (key, value) in extra {
        out.entry(key).or_insert(value);
    }
    Ok(Json::Object(out))
}

fn array(
    elements: &[Value],
    items: Option<&Param>,
    path: &Path<'_>,
    ctx: &Ctx<'_>,
) -> Result<Json, BindError> {
    let mut out = Vec::with_capacity(elements.len());
    for (i, element) in elements.iter().enumerate() {
        out.push(match (items, element) {
            (Some(item), Value::Null) if item.ty != ParamType::Any => {
                return Err(BindError::InvalidValue {
                    function: ctx.function.to_owned(),
                    param: Path::Index(path, i).to_string(),
                    expected: expected(&item.ty).to_owned(),
                    got: "null".to_owned(),
                })
            }
            (Some(item), element) => coerce_param(element, item, &Path::Index(path, i), ctx)?,
            (None, element) => element.to_json(),
        });
    }
    Ok(Json::Array(out))
}

/// The index of the parameter called `name`: exact spelling first, then (unless
/// `case_sensitive`) ignoring case.
pub(super) fn find_param(params: &[Param], name: &str, case_sensitive: bool) -> Option<usize> {
    // A key as the definition spells it (`max-results`, from JSON arguments) finds its
    // parameter as well as the name a call writes.
    let exact = |p: &Param| p.name == name || p.original.as_deref() == Some(name);
    let same = |a: &str, b: &str| {
        if case_sensitive {
            a == b
        } else {
            UniCase::new(a) == UniCase::new(b)
        }
    };
    params
        .iter()
        .position(exact)
        .or_else(|| params.iter().position(|p| same(&p.name, name)))
        // A field inside an object keeps its JSON key (`created-after`), but a model may
        // write it as it would write a parameter of that name (`created_after`).
        .or_else(|| params.iter().position(|p| same(&identifier(&p.name), name)))
}

/// The text of a string that reads as a number, trimmed: a number literal as the grammar
/// writes one, so `inf`, `NaN` and `0x10` (which Rust's float parser would take in part)
/// stay strings, and so does `+-7` (which a `+` stripped before parsing would make -7).
fn number_text(text: &str) -> Option<&str> {
    let text = text.trim();
    is_number(text).then_some(text)
}

/// A number literal as a JSON number: an integer when it is written as one and fits, else
/// a float. `None` for text that is not a finite number.
fn number(literal: &str) -> Option<Json> {
    let text = literal.strip_prefix('+').unwrap_or(literal);
    if let Ok(i) = text.parse::<i64>() {
        return Some(Json::from(i));
    }
    if let Ok(u) = text.parse::<u64>() {
        return Some(Json::from(u));
    }
    let f = text.parse::<f64>().ok().filter(|f| f.is_finite())?;
    Number::from_f64(f).map(Json::Number)
}

/// A number literal as a JSON integer: `2`, `2.0` and `2e3` are whole, `2.5` is not.
///
/// Wholeness and the value are read from the literal's digits, not from the float it
/// rounds to: `2.0000000000000001` and `1e-400` are not whole, and `9007199254740993.0`
/// keeps its last digit.
fn integer(literal: &str) -> Option<Json> {
    let rounded = number(literal)?;
    if matches!(&rounded, Json::Number(n) if n.is_i64() || n.is_u64()) {
        return Some(rounded);
    }
    let (negative, digits, exponent) = decimal(literal);
    if digits.is_empty() {
        return Some(Json::from(0));
    }
    let zeros = usize::try_from(exponent).ok()?;
    // Past 20 digits no JSON integer type holds the value.
    if digits.len().saturating_add(zeros) <= 20 {
        let sign = if negative { "-" } else { "" };
        let text = format!("{sign}{digits}{}", "0".repeat(zeros));
        if let Ok(i) = text.parse::<i64>() {
            return Some(Json::from(i));
        }
        if let Ok(u) = text.parse::<u64>() {
            return Some(Json::from(u));
        }
    }
    // Whole, but beyond every JSON integer type: the whole float it rounds to.
    Some(rounded)
}

/// A number literal as its sign, its significant digits (no leading or trailing zeros;
/// none for zero) and the power of ten they are multiplied by: `-12.50e3` is
/// `(true, "125", 2)`.
fn decimal(literal: &str) -> (bool, String, i64) {
    let (negative, unsigned) = match literal.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, literal.strip_prefix('+').unwrap_or(literal)),
    };
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => {
            // An exponent beyond i64 only makes the value more extreme: saturate.
            let saturated = if exponent.starts_with('-') {
                i64::MIN / 2
            } else {
                i64::MAX / 2
            };
            (mantissa, exponent.parse::<i64>().unwrap_or(saturated))
        }
        None => (unsigned, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all = [int, frac].concat();
    let significant = all.trim_start_matches('0');
    let kept = significant.trim_end_matches('0');
    let shift = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    let exponent = exponent
        .saturating_sub(shift(frac.len()))
        .saturating_add(shift(significant.len() - kept.len()));
    (negative, kept.to_owned(), exponent)
}

/// `true` or `false` in any case. Nothing else (`yes`, `1`, `on`) is taken for a boolean:
/// guessing would hide a misunderstanding the error message can correct.
fn boolean(text: &str) -> Option<bool> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("true") {
        Some(true)
    } else if text.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// A string that holds JSON text, as a value (models often quote an object or an array).
fn json_text(text: &str) -> Option<Value> {
    serde_json::from_str::<Json>(text)
        .ok()
        .map(Value::from_json)
}

fn check_choices(
    json: &Json,
    choices: &[Json],
    path: &Path<'_>,
    ctx: &Ctx<'_>,
) -> Result<(), BindError> {
    if choices.is_empty() || choices.iter().any(|choice| same_value(json, choice)) {
        return Ok(());
    }
    let suggestion = match json {
        Json::String(s) => choices
            .iter()
            .find(|c| matches!(c, Json::String(c) if UniCase::new(c.as_str()) == UniCase::new(s.as_str())))
            .map(|c| c.to_string()),
        _ => None,
    };
    let mut listed: Vec<String> = choices
        .iter()
        .take(MAX_CHOICES)
        .map(|c| shorten(c.to_string()))
        .collect();
    if choices.len() > MAX_CHOICES {
        listed.push(format!("and {} more", choices.len() - MAX_CHOICES));
    }
    Err(BindError::InvalidChoice {
        function: ctx.function.to_owned(),
        param: path.to_string(),
        choices: listed,
        got: shorten(json.to_string()),
        suggestion,
    })
}

/// Equality where numbers compare by value (`2` equals `2.0`); two integers compare
/// exactly, since large ones round to the same float.
fn same_value(a: &Json, b: &Json) -> bool {
    let exact = |n: &Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => match (exact(x), exact(y)) {
            (Some(i), Some(j)) => i == j,
            _ => x == y || x.as_f64() == y.as_f64(),
        },
        _ => a == b,
    }
}

fn check_range(
    json: &Json,
    param: &Param,
    path: &Path<'_>,
    ctx: &Ctx<'_>,
) -> Result<(), BindError> {
    if param.min.is_none() && param.max.is_none() {
        return Ok(());
    }
    let Some(n) = json.as_f64() else {
        return Ok(());
    };
    let below = param.min.is_some_and(|min| n < min);
    let above = param.max.is_some_and(|max| n > max);
    if below || above {
        return Err(BindError::OutOfRange {
            function: ctx.function.to_owned(),
            param: path.to_string(),
            min: param.min,
            max: param.max,
            got: shorten(json.to_string()),
        });
    }
    Ok(())
}

/// A value as the model wrote it, for an error message.
pub(super) fn shown_value(value: &Value) -> String {
    match value {
        Value::String(s) | Value::Bare(s) => {
            // Quote only what is shown: the value may be megabytes long.
            let cut = floor_boundary(s, MAX_SHOWN);
            let mut out = Json::String(s.get(..cut).unwrap_or_default().to_owned()).to_string();
            if cut < s.len() {
                out.push_str(&format!("[... {} more bytes]", s.len() - cut));
            }
            out
        }
        Value::Number(n) => shorten(n.clone()),
        other => shorten(other.to_json().to_string()),
    }
}

/// The largest character boundary of `text` not after `max`.
fn floor_boundary(text: &str, max: usize) -> usize {
    if text.len() <= max {
        return text.len();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}

/// Cuts `text` after [`MAX_SHOWN`] bytes, on a character boundary, saying what it cut.
pub(super) fn shorten(text: String) -> String {
    if text.len() <= MAX_SHOWN {
        return text;
    }
    shorten_str(&text)
}

/// [`shorten`] for borrowed text, copying only what is shown.
pub(super) fn shorten_str(text: &str) -> String {
    let cut = floor_boundary(text, MAX_SHOWN);
    let mut out = text.get(..cut).unwrap_or_default().to_owned();
    if cut < text.len() {
        out.push_str(&format!("[... {} more bytes]", text.len() - cut));
    }
    out
}
