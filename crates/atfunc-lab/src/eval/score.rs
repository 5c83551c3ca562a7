//! Scoring by the rules of BFCL's AST checker, on calls that bound.
//!
//! A model's calls are compared with a case's possible answers, each a list of acceptable
//! values per parameter:
//! - the number of calls must equal the number of expected calls;
//! - each call names the expected function; every required parameter is there; every
//!   parameter given is declared and appears in the possible answer;
//! - each value has the declared type (an integer where a float is declared is fine; a
//!   value of the possible answer's own type is fine too), and is among the acceptable
//!   values: strings compared after [`normalise`], lists item by item, dicts field by
//!   field (a field may be absent only where `""` is among its values);
//! - an optional parameter may be left out only where `""` is among its values;
//! - in the Java and JavaScript categories (`simple_java`, `simple_javascript`) every
//!   value must be a string, which is read as a literal of the declared type first
//!   (`"5L"` as a `long`, `"[1, 2]"` as an `array`, by BFCL's own reading, see
//!   `literal.rs`); a string that does not read stays a string, and the checks above
//!   apply to what was read, without Python's int-to-float widening;
//! - in the `parallel` categories the calls may come in any order (each expected call
//!   takes the first unmatched call that fits it); in `multiple` the one call is checked
//!   against the function the answer names.

use super::literal::{self, Language};
use serde_json::{Map, Value as Json};

/// Why a case's calls do not match its possible answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Mismatch {
    /// Not as many calls as expected.
    #[error("expected {expected} call(s), got {got}")]
    Count {
        /// Calls expected.
        expected: usize,
        /// Calls made.
        got: usize,
    },
    /// The call names another function.
    #[error("expected a call of {expected}, got {got}")]
    Name {
        /// The expected function.
        expected: String,
        /// The function called.
        got: String,
    },
    /// A required parameter was left out.
    #[error("{function}: required parameter '{param}' missing")]
    Missing {
        /// The function.
        function: String,
        /// The parameter.
        param: String,
    },
    /// An optional parameter was left out where the answer wants a value.
    #[error("{function}: parameter '{param}' left out, the answer wants a value")]
    MissingOptional {
        /// The function.
        function: String,
        /// The parameter.
        param: String,
    },
    /// A parameter that is not declared, or that the answer does not list.
    #[error("{function}: unexpected parameter '{param}'")]
    Unexpected {
        /// The function.
        function: String,
        /// The parameter.
        param: String,
    },
    /// A value of the wrong type.
    #[error("{function}: parameter '{param}' should be of type {expected}, got {got}")]
    Type {
        /// The function.
        function: String,
        /// The parameter.
        param: String,
        /// The declared type.
        expected: String,
        /// The value, as JSON text.
        got: String,
    },
    /// A value that is not among the acceptable ones.
    #[error("{function}: parameter '{param}' is {got}, expected one of {expected}")]
    Value {
        /// The function.
        function: String,
        /// The parameter.
        param: String,
        /// The value, as JSON text.
        got: String,
        /// The acceptable values, as JSON text.
        expected: String,
    },
    /// No call fits this expected call (parallel categories).
    #[error("no call matches the expected call of {expected} ({reason})")]
    Unmatched {
        /// The expected function.
        expected: String,
        /// Why the last candidate failed.
        reason: Box<Mismatch>,
    },
    /// The answer file names a function the case does not declare.
    #[error("the answer names {0}, which the case does not declare")]
    UnknownExpected(String),
}

/// A call to score: the function's name as the case declares it, and its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredCall {
    /// The qualified name (`math.factorial`).
    pub name: String,
    /// The arguments by parameter name.
    pub args: Map<String, Json>,
}

/// Scores `calls` against `ground_truth` (the answer file's list of `{name: {param:
/// [values]}}` objects), with `functions` the case's definitions as BFCL writes them and
/// `category` the case's category (its id without the number).
///
/// ```
/// use atfunc_lab::eval::{score, ScoredCall};
/// use serde_json::json;
///
/// let functions = json!([{"name": "math.sqrt", "parameters": {"type": "dict",
///     "properties": {"x": {"type": "float"}, "digits": {"type": "integer"}},
///     "required": ["x"]}}]);
/// let truth = json!([{"math.sqrt": {"x": [2.0], "digits": ["", 3]}}]);
/// let call = |args: serde_json::Value| ScoredCall {
///     name: "math.sqrt".into(), args: args.as_object().unwrap().clone() };
/// let functions = functions.as_array().unwrap();
/// let truth = truth.as_array().unwrap();
/// assert!(score("simple", functions, truth, &[call(json!({"x": 2}))]).is_ok());
/// assert!(score("simple", functions, truth, &[call(json!({"x": 2, "digits": 3}))]).is_ok());
/// assert!(score("simple", functions, truth, &[call(json!({"x": 2, "digits": 4}))]).is_err());
/// ```
pub fn score(
    category: &str,
    functions: &[Json],
    ground_truth: &[Json],
    calls: &[ScoredCall],
) -> Result<(), Mismatch> {
    if calls.len() != ground_truth.len() {
        return Err(Mismatch::Count {
            expected: ground_truth.len(),
            got: calls.len(),
        });
    }
    let language = Language::of(category);
    if category.contains("parallel") {
        let mut taken = vec![false; calls.len()];
        for expected in ground_truth {
            let (name, _) = single_entry(expected)?;
            let mut last = None;
            let mut found = false;
            for (i, call) in calls.iter().enumerate() {
                if taken[i] {
                    continue;
                }
                match check_call(language, functions, expected, call) {
                    Ok(()) => {
                        taken[i] = true;
                        found = true;
                        break;
                    }
                    Err(error) => last = Some(error),
                }
            }
            if !found {
                return Err(Mismatch::Unmatched {
                    expected: name.to_owned(),
                    reason: Box::new(last.unwrap_or(Mismatch::Count {
                        expected: ground_truth.len(),
                        got: calls.len(),
                    })),
                });
            }
        }
        return Ok(());
    }
    // `simple` and `multiple`: one call, checked against the function the answer names.
    match (ground_truth.first(), calls.first()) {
        (Some(expected), Some(call)) => check_call(language, functions, expected, call),
        _ => Ok(()),
    }
}

/// The one `name: {params}` entry of an expected call.
fn single_entry(expected: &Json) -> Result<(&str, &Map<String, Json>), Mismatch> {
    expected
        .as_object()
        .and_then(|o| o.iter().next())
        .and_then(|(name, params)| Some((name.as_str(), params.as_object()?)))
        .ok_or_else(|| Mismatch::UnknownExpected(expected.to_string()))
}

/// One call against one expected call (BFCL's simple function check).
fn check_call(
    language: Language,
    functions: &[Json],
    expected: &Json,
    call: &ScoredCall,
) -> Result<(), Mismatch> {
    let (name, answers) = single_entry(expected)?;
    let declared = functions
        .iter()
        .find(|f| f.get("name").and_then(Json::as_str) == Some(name))
        .ok_or_else(|| Mismatch::UnknownExpected(name.to_owned()))?;
    if call.name != name {
        return Err(Mismatch::Name {
            expected: name.to_owned(),
            got: call.name.clone(),
        });
    }
    let empty = Map::new();
    let properties = declared
        .pointer("/parameters/properties")
        .and_then(Json::as_object)
        .unwrap_or(&empty);
    let required = declared
        .pointer("/parameters/required")
        .and_then(Json::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let function = || name.to_owned();
    for param in required.iter().filter_map(Json::as_str) {
        if !call.args.contains_key(param) {
            return Err(Mismatch::Missing {
                function: function(),
                param: param.to_owned(),
            });
        }
    }
    for (param, value) in &call.args {
        let (Some(schema), Some(acceptable)) = (
            properties.get(param),
            answers.get(param).and_then(Json::as_array),
        ) else {
            return Err(Mismatch::Unexpected {
                function: function(),
                param: param.clone(),
            });
        };
        check_param(language, schema, value, acceptable).map_err(|failure| match failure {
            Failure::Type(expected) => Mismatch::Type {
                function: function(),
                param: param.clone(),
                expected,
                got: value.to_string(),
            },
            Failure::Value => Mismatch::Value {
                function: function(),
                param: param.clone(),
                got: value.to_string(),
                expected: Json::Array(acceptable.clone()).to_string(),
            },
        })?;
    }
    for (param, acceptable) in answers {
        let omittable = acceptable
            .as_array()
            .is_some_and(|values| values.iter().any(|v| v == ""));
        if !call.args.contains_key(param) && !omittable {
            return Err(Mismatch::MissingOptional {
                function: function(),
                param: param.clone(),
            });
        }
    }
    Ok(())
}

enum Failure {
    Type(String),
    Value,
}

/// The Python type BFCL maps a declared type onto.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Str,
    Int,
    Float,
    Bool,
    List,
    Dict,
    Other,
}

fn declared_kind(ty: &str) -> Kind {
    match ty {
        "string" | "any" => Kind::Str,
        "integer" => Kind::Int,
        "float" => Kind::Float,
        "boolean" => Kind::Bool,
        "array" | "tuple" => Kind::List,
        "dict" => Kind::Dict,
        _ => Kind::Other,
    }
}

/// The Python type BFCL reads a Java type as (`None`: a type BFCL does not know).
fn java_kind(ty: &str) -> Option<Kind> {
    Some(match ty {
        "byte" | "short" | "integer" | "long" => Kind::Int,
        "float" | "double" => Kind::Float,
        "boolean" => Kind::Bool,
        "char" | "String" | "any" => Kind::Str,
        "Array" | "ArrayList" | "Queue" | "Stack" => Kind::List,
        "HashMap" | "Hashtable" => Kind::Dict,
        "Set" => Kind::Other,
        _ => return None,
    })
}

/// The Python type BFCL reads a JavaScript type as (`None`: a type BFCL does not know).
fn javascript_kind(ty: &str) -> Option<Kind> {
    Some(match ty {
        "String" | "any" => Kind::Str,
        "integer" | "Bigint" => Kind::Int,
        "float" => Kind::Float,
        "Boolean" => Kind::Bool,
        "dict" => Kind::Dict,
        "array" => Kind::List,
        _ => return None,
    })
}

fn value_kind(value: &Json) -> Kind {
    match value {
        Json::String(_) => Kind::Str,
        Json::Number(n) if n.is_i64() || n.is_u64() => Kind::Int,
        Json::Number(_) => Kind::Float,
        Json::Bool(_) => Kind::Bool,
        Json::Array(_) => Kind::List,
        Json::Object(_) => Kind::Dict,
        Json::Null => Kind::Other,
    }
}

/// The kind of the first acceptable value that is not `""`.
fn answer_kind(acceptable: &[Json]) -> Option<Kind> {
    acceptable.iter().find(|v| *v != "").map(value_kind)
}

/// BFCL's type check: the declared type, one level into arrays, or the possible answer's
/// own type (which BFCL reads as "a variable was written"). `Ok(true)` for the latter. A
/// list of the declared type whose items fit no acceptable list is wrong, even where the
/// answer is a list too.
fn type_check(
    value: &Json,
    acceptable: &[Json],
    expected: Kind,
    nested: Option<Kind>,
) -> Result<bool, ()> {
    let variable = answer_kind(acceptable).is_some_and(|kind| kind != expected);
    if value_kind(value) == expected {
        let Some(nested) = nested else {
            return Ok(variable);
        };
        let items = value.as_array().map(Vec::as_slice).unwrap_or_default();
        for answer in acceptable {
            let fits = match answer.as_array() {
                Some(answer_items) => items
                    .iter()
                    .all(|item| type_check(item, answer_items, nested, None).is_ok()),
                None => true,
            };
            if fits {
                return Ok(variable);
            }
        }
        // BFCL marks the value wrong here, and its check for a variable's name that
        // follows keeps it wrong.
        return Err(());
    }
    if answer_kind(acceptable).is_some_and(|kind| kind == value_kind(value)) {
        return Ok(true);
    }
    Err(())
}

fn check_param(
    language: Language,
    schema: &Json,
    value: &Json,
    acceptable: &[Json],
) -> Result<(), Failure> {
    let ty = schema.get("type").and_then(Json::as_str).unwrap_or("any");
    let item_type = schema.pointer("/items/type").and_then(Json::as_str);
    let (expected, nested, value) = match language {
        Language::Python => {
            let expected = declared_kind(ty);
            let nested = match expected {
                Kind::List => item_type.map(declared_kind),
                _ => None,
            };
            // Python turns an int into a float where a float is declared.
            let value = match (expected, value) {
                (Kind::Float, Json::Number(n)) if n.is_i64() || n.is_u64() => n
                    .as_f64()
                    .and_then(serde_json::Number::from_f64)
                    .map_or_else(|| value.clone(), Json::Number),
                _ => value.clone(),
            };
            (expected, nested, value)
        }
        Language::Java | Language::JavaScript => {
            let kind = |ty: &str| match language {
                Language::Java => java_kind(ty),
                _ => javascript_kind(ty),
            };
            let type_error = || Failure::Type(ty.to_owned());
            let expected = kind(ty).ok_or_else(type_error)?;
            // Every value is a literal in a string; anything else is the wrong type.
            let text = value
                .as_str()
                .ok_or_else(|| Failure::Type(String::from("String")))?;
            // Only arrays have an item type (BFCL's `Array`, `ArrayList`, `array`).
            let nested_name = if matches!(ty, "Array" | "ArrayList" | "array") {
                Some(item_type.ok_or_else(type_error)?)
            } else {
                None
            };
            let nested = match nested_name {
                Some(name) => Some(kind(name).ok_or_else(type_error)?),
                None => None,
            };
            let value = match language {
                Language::Java => literal::java(text, ty, nested_name),
                _ => literal::javascript(text, ty, nested_name),
            }
            .map_err(|literal::Unsupported| type_error())?;
            (expected, nested, value)
        }
    };
    let variable = type_check(&value, acceptable, expected, nested)
        .map_err(|()| Failure::Type(ty.to_owned()))?;
    let fits = if variable {
        acceptable.iter().any(|a| same(&value, a))
    } else {
        match (expected, nested) {
            (Kind::Dict, _) => dict_fits(&value, acceptable),
            (Kind::List, Some(Kind::Dict)) => list_of_dicts_fits(&value, acceptable),
            (Kind::Str, _) => value.as_str().is_some_and(|text| {
                let text = normalise(text);
                acceptable
                    .iter()
                    .any(|a| a.as_str().is_some_and(|a| normalise(a) == text))
            }),
            (Kind::List, _) => {
                let value = normalised(&value);
                acceptable.iter().any(|a| same(&value, &normalised(a)))
            }
            _ => acceptable.iter().any(|a| same(&value, a)),
        }
    };
    if fits {
        Ok(())
    } else {
        Err(Failure::Value)
    }
}

/// BFCL's string normalisation: spaces and `,./-_*^` removed, lower case, `'` as `"`, so
/// "April 1, 2024" and "april 1 2024" compare equal.
pub(crate) fn normalise(text: &str) -> String {
    text.chars()
        .filter(|c| !matches!(c, ' ' | ',' | '.' | '/' | '-' | '_' | '*' | '^'))
        .flat_map(char::to_lowercase)
        .map(|c| if c == '\'' { '"' } else { c })
        .collect()
}

/// A list with its string items normalised (one level, as BFCL does).
fn normalised(value: &Json) -> Json {
    match value {
        Json::Array(items) => Json::Array(
            items
                .iter()
                .map(|item| match item {
                    Json::String(s) => Json::String(normalise(s)),
                    other => other.clone(),
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// BFCL's dict check: some acceptable dict has every field the value has, each value
/// among the field's acceptable values (strings normalised), and every field the value
/// lacks may be left out.
fn dict_fits(value: &Json, acceptable: &[Json]) -> bool {
    let Some(fields) = value.as_object() else {
        return false;
    };
    acceptable.iter().filter(|a| *a != "").any(|answer| {
        let Some(answer) = answer.as_object() else {
            return false;
        };
        let given_fit = fields.iter().all(|(key, item)| {
            let Some(options) = answer.get(key).and_then(field_options) else {
                return false;
            };
            let item = match item {
                Json::String(s) => Json::String(normalise(s)),
                other => other.clone(),
            };
            options.iter().any(|option| {
                let option = match option {
                    Json::String(s) => Json::String(normalise(s)),
                    other => other.clone(),
                };
                same(&item, &option)
            })
        });
        let absent_fit = answer.iter().all(|(key, options)| {
            fields.contains_key(key)
                || match options {
                    Json::Array(options) => options.iter().any(|o| o == ""),
                    // Python finds "" in every string.
                    Json::String(_) => true,
                    _ => false,
                }
        });
        given_fit && absent_fit
    })
}

/// A dict field's acceptable values. A possible answer that gives a bare string instead
/// of a list (BFCL's `simple_java_64` does) offers, as BFCL reads it, each of the
/// string's characters.
fn field_options(options: &Json) -> Option<Vec<Json>> {
    match options {
        Json::Array(options) => Some(options.clone()),
        Json::String(text) => Some(text.chars().map(|c| Json::String(c.into())).collect()),
        _ => None,
    }
}

/// BFCL's list-of-dicts check: as many dicts as an acceptable list, each fitting the
/// dict at its position.
fn list_of_dicts_fits(value: &Json, acceptable: &[Json]) -> bool {
    let Some(items) = value.as_array() else {
        return false;
    };
    acceptable.iter().any(|answer| {
        answer.as_array().is_some_and(|answer| {
            answer.len() == items.len()
                && items
                    .iter()
                    .zip(answer)
                    .all(|(item, dict)| dict_fits(item, std::slice::from_ref(dict)))
        })
    })
}

/// Equality as Python's `==` on JSON values: numbers by value (`5 == 5.0`).
fn same(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => x.as_f64() == y.as_f64(),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn normalise_drops_what_bfcl_ignores() {
        assert_eq!(super::normalise("New York, NY"), "newyorkny");
        assert_eq!(super::normalise("it's"), "it\"s");
    }
}
