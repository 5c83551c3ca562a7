//! The bridge to OpenAI's chat format: atfunc calls as `tool_calls` entries, results as
//! `tool` messages, and `tool_calls` entries back as atfunc call text.

use super::{NameMap, ToolFormatOptions};
use crate::bind::BoundCall;
use crate::interface::is_identifier;
use crate::messages::json_kind;
use serde_json::{json, Map, Value as Json};
use std::collections::hash_map::RandomState;
use std::fmt::{self, Write};
use std::hash::BuildHasher;
use std::time::{SystemTime, UNIX_EPOCH};

/// Why a call could not cross the bridge. Messages name the tool and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BridgeError {
    /// The JSON is not a `tool_calls` entry.
    #[error("not an OpenAI tool call: {reason}")]
    NotAToolCall {
        /// What is missing or of the wrong type.
        reason: String,
    },
    /// The model called a name that is not in the [`NameMap`]: a tool it was not shown.
    #[error("the model called '{name}', which is not one of the tools it was given")]
    UnknownTool {
        /// The name as the model sent it.
        name: String,
    },
    /// `function.arguments` is not a JSON object (or a string holding one).
    #[error("the arguments of '{name}' are not a JSON object: {message}")]
    BadArguments {
        /// The qualified name of the tool.
        name: String,
        /// What was found instead.
        message: String,
    },
    /// An argument name that atfunc call text cannot hold.
    #[error("argument '{key}' of '{name}' is not an identifier (letters, digits and '_', not starting with a digit), so it cannot be written as atfunc call text")]
    ArgumentName {
        /// The qualified name of the tool.
        name: String,
        /// The argument name.
        key: String,
    },
    /// A bound call whose tool has no model name: it was not rendered, or lost a clash.
    #[error("'{name}' was not given to the model, so it has no model name")]
    NotRendered {
        /// The qualified name.
        name: String,
    },
    /// A request body given as text that contains `]]`, which would end the
    /// `with_body [[ ... ]]` block early.
    #[error(
        "the request body of '{name}' is text containing ']]', which would end its with_body block"
    )]
    BodyText {
        /// The qualified name of the tool.
        name: String,
    },
}

/// Makes the ids of `tool_calls` entries: `call_` and a suffix.
///
/// [`CallIds::random`] (the default) gives 22 random letters and digits, as unique as
/// OpenAI's own; [`CallIds::sequential`] gives `call_1`, `call_2`, ... for tests and
/// reproducible transcripts; [`CallIds::from_fn`] takes any generator.
///
/// ```
/// use atfunc::interop::CallIds;
/// let mut ids = CallIds::sequential();
/// assert_eq!(ids.next_id(), "call_1");
/// assert_eq!(ids.next_id(), "call_2");
/// let id = CallIds::random().next_id();
/// assert!(id.starts_with("call_") && id.len() == 27);
/// ```
pub struct CallIds {
    source: Source,
}

enum Source {
    Random { state: RandomState, count: u64 },
    Sequential { next: u64 },
    Custom(Box<dyn FnMut() -> String + Send>),
}

impl CallIds {
    /// Random ids. Each generator is seeded anew, so two never repeat each other.
    pub fn random() -> CallIds {
        CallIds {
            source: Source::Random {
                state: RandomState::new(),
                count: 0,
            },
        }
    }

    /// `call_1`, `call_2`, ...
    pub fn sequential() -> CallIds {
        CallIds {
            source: Source::Sequential { next: 1 },
        }
    }

    /// Ids from `generate`, used as they are.
    pub fn from_fn(generate: impl FnMut() -> String + Send + 'static) -> CallIds {
        CallIds {
            source: Source::Custom(Box::new(generate)),
        }
    }

    /// The next id.
    pub fn next_id(&mut self) -> String {
        match &mut self.source {
            Source::Random { state, count } => {
                *count += 1;
                let nanos = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or_default();
                let mut id = String::from("call_");
                for half in 0..2u8 {
                    push_base62(&mut id, state.hash_one((half, *count, nanos)));
                }
                id
            }
            Source::Sequential { next } => {
                let id = format!("call_{next}");
                *next += 1;
                id
            }
            Source::Custom(generate) => generate(),
        }
    }
}

impl Default for CallIds {
    fn default() -> CallIds {
        CallIds::random()
    }
}

impl fmt::Debug for CallIds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.source {
            Source::Random { .. } => "random",
            Source::Sequential { .. } => "sequential",
            Source::Custom(_) => "custom",
        };
        f.debug_tuple("CallIds").field(&kind).finish()
    }
}

/// Appends 11 base-62 digits of `value` (62^11 > 2^64, so every value has its own).
fn push_base62(out: &mut String, mut value: u64) {
    const DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    for _ in 0..11 {
        // `value % 62` is below 62, so the index is in range.
        let digit = DIGITS.get((value % 62) as usize).copied().unwrap_or(b'0');
        out.push(char::from(digit));
        value /= 62;
    }
}

/// A `tool_calls` entry: `{"id", "type": "function", "function": {"name", "arguments"}}`,
/// with the arguments as a JSON string, as OpenAI sends them.
///
/// ```
/// use atfunc::interop::tool_call;
/// use serde_json::json;
///
/// let args = json!({"city": "Paris"});
/// assert_eq!(
///     tool_call("call_1", "weather_get_temp", args.as_object().unwrap()),
///     json!({"id": "call_1", "type": "function", "function": {
///         "name": "weather_get_temp", "arguments": "{\"city\":\"Paris\"}"}}),
/// );
/// ```
pub fn tool_call(id: impl Into<String>, model_name: &str, args: &Map<String, Json>) -> Json {
    json!({
        "id": id.into(),
        "type": "function",
        "function": {
            "name": model_name,
            "arguments": Json::Object(args.clone()).to_string(),
        }
    })
}

/// A bound atfunc call as a `tool_calls` entry: its model name from `names`, a new id from
/// `ids`, its arguments, and an api-wrapper's request body under the body argument (`body`;
/// its JSON when it parsed, else its text).
///
/// ```
/// use atfunc::interop::{bound_to_tool_call, to_openai_tools, CallIds, ToolFormatOptions};
/// use atfunc::{bind, Catalog, Interface, Param, ParamType};
///
/// let temp = Interface::new("get_temp").in_domain("weather")
///     .param(Param::new("city", ParamType::String).required());
/// let rendered = to_openai_tools(&[temp.clone()], &ToolFormatOptions::default());
/// let catalog = Catalog::new(vec![temp]);
///
/// let text = r#"@weather.get_temp("Paris")"#;
/// let call = atfunc::parse_events(text).into_iter().find_map(|event| match event {
///     atfunc::Event::Call(call) => Some(call),
///     _ => None,
/// }).unwrap();
/// let bound = bind(&call, &catalog).unwrap();
/// let entry = bound_to_tool_call(&bound, &rendered.names, &mut CallIds::sequential()).unwrap();
/// assert_eq!(entry["function"]["name"], "weather_get_temp");
/// assert_eq!(entry["function"]["arguments"], r#"{"city":"Paris"}"#);
/// ```
pub fn bound_to_tool_call(
    call: &BoundCall,
    names: &NameMap,
    ids: &mut CallIds,
) -> Result<Json, BridgeError> {
    let model_name = names
        .model_name(&call.name)
        .ok_or_else(|| BridgeError::NotRendered {
            name: call.name.clone(),
        })?;
    let mut args = call.args.clone();
    if let Some(body) = &call.body {
        let field = names.body_field(model_name).unwrap_or("body");
        let value = body
            .json
            .clone()
            .unwrap_or_else(|| Json::String(body.raw.clone()));
        args.insert(field.to_owned(), value);
    }
    Ok(tool_call(ids.next_id(), model_name, &args))
}

/// A result as a `tool` message: `{"role": "tool", "tool_call_id", "content"}`. A string
/// result is the content as it is, any other value its compact JSON, an error
/// `Error: ` and its message.
///
/// ```
/// use atfunc::interop::tool_message;
/// use serde_json::json;
///
/// let ok: Result<_, String> = Ok(json!({"temp": 21}));
/// assert_eq!(tool_message("call_1", &ok)["content"], r#"{"temp":21}"#);
/// let failed: Result<serde_json::Value, _> = Err("city not found");
/// assert_eq!(tool_message("call_1", &failed)["content"], "Error: city not found");
/// ```
pub fn tool_message<E: fmt::Display>(tool_call_id: &str, result: &Result<Json, E>) -> Json {
    let content = match result {
        Ok(Json::String(text)) => text.clone(),
        Ok(value) => value.to_string(),
        Err(error) => format!("Error: {error}"),
    };
    json!({"role": "tool", "tool_call_id": tool_call_id, "content": content})
}

/// A model's `tool_calls` entry in atfunc terms.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The entry's id (empty when it had none).
    pub id: String,
    /// The qualified name of the tool (`catalogue.list_products`).
    pub name: String,
    /// The name the model used (`catalogue_list_products`).
    pub model_name: String,
    /// The arguments, control fields and request body taken out, in the model's order.
    pub args: Map<String, Json>,
    /// An api-wrapper's request body, when the model sent one.
    pub body: Option<Json>,
}

impl ToolCall {
    /// The call as atfunc call text: `@domain.fn(key=value, ...)`, each value written as
    /// compact JSON (which the atfunc grammar reads as the same value), a request body as
    /// ` with_body [[...]]` (a JSON value compact, a string as its text).
    ///
    /// ```
    /// use atfunc::interop::ToolCall;
    /// use serde_json::{json, Map};
    ///
    /// let call = ToolCall {
    ///     id: "call_1".into(),
    ///     name: "weather.get_temp".into(),
    ///     model_name: "weather_get_temp".into(),
    ///     args: json!({"city": "Paris", "days": 3}).as_object().unwrap().clone(),
    ///     body: None,
    /// };
    /// assert_eq!(call.call_text().unwrap(), r#"@weather.get_temp(city="Paris", days=3)"#);
    /// ```
    pub fn call_text(&self) -> Result<String, BridgeError> {
        let mut out = String::with_capacity(self.name.len() + 16);
        out.push('@');
        out.push_str(&self.name);
        out.push('(');
        for (i, (key, value)) in self.args.iter().enumerate() {
            if !is_identifier(key) {
                return Err(BridgeError::ArgumentName {
                    name: self.name.clone(),
                    key: key.clone(),
                });
            }
            if i > 0 {
                out.push_str(", ");
            }
            let _ = write!(out, "{key}={value}");
        }
        out.push(')');
        match &self.body {
            None => {}
            Some(Json::String(text)) if text.contains("]]") => {
                return Err(BridgeError::BodyText {
                    name: self.name.clone(),
                })
            }
            Some(Json::String(text)) => {
                let _ = write!(out, " with_body [[{text}]]");
            }
            Some(value) => {
                let _ = write!(out, " with_body [[{value}]]");
            }
        }
        Ok(out)
    }
}

/// Reads a model's `tool_calls` entry: the tool from its model name (only a name in
/// `names` is accepted), the arguments from `function.arguments` (a JSON string, as OpenAI
/// sends it, or an object; empty or absent means none), control fields stripped, and an
/// api-wrapper's request body taken out of its body argument.
///
/// ```
/// use atfunc::interop::{parse_tool_call, to_openai_tools, ToolFormatOptions};
/// use atfunc::{Interface, Param, ParamType};
/// use serde_json::json;
///
/// let temp = Interface::new("get_temp").in_domain("weather")
///     .param(Param::new("city", ParamType::String).required());
/// let rendered = to_openai_tools(&[temp], &ToolFormatOptions::default());
/// let entry = json!({"id": "call_9", "type": "function", "function": {
///     "name": "weather_get_temp", "arguments": "{\"city\": \"Paris\", \"dry_run\": true}"}});
/// let call = parse_tool_call(&entry, &rendered.names, &ToolFormatOptions::default()).unwrap();
/// assert_eq!(call.name, "weather.get_temp");
/// assert_eq!(json!(call.args), json!({"city": "Paris"}));
/// ```
pub fn parse_tool_call(
    entry: &Json,
    names: &NameMap,
    options: &ToolFormatOptions,
) -> Result<ToolCall, BridgeError> {
    let not_a_call = |reason: &str| BridgeError::NotAToolCall {
        reason: reason.to_owned(),
    };
    let entry = entry
        .as_object()
        .ok_or_else(|| not_a_call("expected a JSON object"))?;
    let id = match entry.get("id") {
        None | Some(Json::Null) => String::new(),
        Some(Json::String(id)) => id.clone(),
        Some(_) => return Err(not_a_call("'id' must be a string")),
    };
    let function = entry
        .get("function")
        .and_then(Json::as_object)
        .ok_or_else(|| not_a_call("missing the 'function' object"))?;
    let model_name = function
        .get("name")
        .and_then(Json::as_str)
        .ok_or_else(|| not_a_call("missing 'function.name'"))?;
    let name = names
        .qualified(model_name)
        .ok_or_else(|| BridgeError::UnknownTool {
            name: model_name.to_owned(),
        })?
        .to_owned();
    let bad = |message: String| BridgeError::BadArguments {
        name: name.clone(),
        message,
    };
    let mut args = match function.get("arguments") {
        None | Some(Json::Null) => Map::new(),
        Some(Json::Object(args)) => args.clone(),
        Some(Json::String(text)) if text.trim().is_empty() => Map::new(),
        Some(Json::String(text)) => match serde_json::from_str::<Json>(text) {
            Ok(Json::Object(args)) => args,
            Ok(other) => return Err(bad(format!("found {}", json_kind(&other)))),
            Err(error) => return Err(bad(format!("invalid JSON ({error})"))),
        },
        Some(other) => return Err(bad(format!("found {}", json_kind(other)))),
    };
    options.control_fields.strip(&mut args);
    let body = names
        .body_field(model_name)
        .and_then(|field| crate::ordered::remove_in_order(&mut args, field));
    let args = args
        .into_iter()
        .map(|(key, value)| (names.written_param(model_name, &key).to_owned(), value))
        .collect();
    Ok(ToolCall {
        id,
        name,
        model_name: model_name.to_owned(),
        args,
        body,
    })
}

/// A model's `tool_calls` entry as atfunc call text: [`parse_tool_call`], then
/// [`ToolCall::call_text`]. For rewriting a chat history into atfunc text.
pub fn tool_call_to_text(
    entry: &Json,
    names: &NameMap,
    options: &ToolFormatOptions,
) -> Result<String, BridgeError> {
    parse_tool_call(entry, names, options)?.call_text()
}
