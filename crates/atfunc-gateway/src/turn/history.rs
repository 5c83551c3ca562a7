//! The conversation rewritten into atfunc's text protocol, for an upstream that knows no
//! tools: the prompt in the system message, the assistant's `tool_calls` as call text, and
//! `tool` messages as result blocks in a user message.

use super::built::{escape, Prompt};
use super::request::raw;
use super::tools::ToolSet;
use super::TurnError;
use atfunc::format::{format_results, CallRecord};
use atfunc::interop::ToolCall;
use serde_json::value::RawValue;
use serde_json::{Map, Value as Json};
use std::collections::HashMap;

/// The text of a message's `content`: a string as it is, a list of parts as the text of
/// its text parts joined, anything else empty.
pub(crate) fn content_text(content: Option<&Json>) -> String {
    match content {
        Some(Json::String(text)) => text.clone(),
        Some(Json::Array(parts)) => parts
            .iter()
            .filter_map(|part| match part {
                Json::String(text) => Some(text.as_str()),
                part => part.get("text").and_then(Json::as_str),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The text of the conversation's user messages, one after another: what
/// the gateway's `ground_text` policy holds text arguments to. A message
/// that is not an object with a role is skipped (the rewrite refuses it later with its
/// index).
pub(crate) fn user_text(messages: &[Box<RawValue>]) -> String {
    #[derive(serde::Deserialize)]
    struct User {
        #[serde(default)]
        role: Json,
        #[serde(default)]
        content: Option<Json>,
    }
    messages
        .iter()
        .filter_map(|message| serde_json::from_str::<User>(message.get()).ok())
        .filter(|message| message.role == "user")
        .map(|message| content_text(message.content.as_ref()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Rewrites `messages` (each as JSON text) for the upstream:
/// - an assistant message's `tool_calls` become atfunc call text after its content, one
///   call a line (`@get_weather(city="Paris")`), and the field is removed;
/// - a run of `tool` messages becomes one `user` message of result blocks
///   (`Function call: get_weather(city="Paris")` / `Returned: ...`), each call found by its
///   `tool_call_id`; an id that no call of an assistant message before it has is refused
///   ([`CallIds::check`]);
/// - an assistant message without content (`null`, or none) gets `""` ([`with_content`]);
/// - every other message is passed as it is, as the text it came in: only the messages
///   rewritten are parsed.
pub(crate) fn rewrite_raw(
    messages: Vec<Box<RawValue>>,
    tools: &ToolSet,
) -> Result<Vec<Box<RawValue>>, TurnError> {
    let mut out: Vec<Box<RawValue>> = Vec::with_capacity(messages.len());
    // Call id → the call's text without the `@`, for the result blocks.
    let mut calls: HashMap<String, String> = HashMap::new();
    let mut ids = CallIds::default();
    let mut results: Vec<CallRecord> = Vec::new();
    for (i, message) in messages.into_iter().enumerate() {
        let not_an_object = || TurnError::bad_request(format!("messages[{i}] must be an object"));
        if !message.get().starts_with('{') {
            return Err(not_an_object());
        }
        // A message with a key twice is not read this way: it is parsed as a whole below.
        if let Ok(peek) = serde_json::from_str::<Peek>(message.get()) {
            let role = peek.role.as_deref().unwrap_or("");
            let has_calls = peek
                .tool_calls
                .is_some_and(|calls| calls.get().starts_with('['));
            if role != "tool" && !(role == "assistant" && has_calls) {
                flush_results(&mut results, &mut out);
                let no_content = role == "assistant" && peek.content.is_none();
                out.push(if no_content {
                    with_content(&message).ok_or_else(not_an_object)?
                } else {
                    message
                });
                continue;
            }
        }
        let fields: Map<String, Json> =
            serde_json::from_str(message.get()).map_err(|_| not_an_object())?;
        let role = fields.get("role").and_then(Json::as_str).unwrap_or("");
        let has_calls = matches!(fields.get("tool_calls"), Some(Json::Array(_)));
        if role != "tool" && !(role == "assistant" && has_calls) {
            flush_results(&mut results, &mut out);
            let no_content = role == "assistant" && fields.get("content").is_none_or(Json::is_null);
            out.push(if no_content {
                with_content(&message).ok_or_else(not_an_object)?
            } else {
                message
            });
            continue;
        }
        let role = role.to_owned();
        if role == "tool" {
            let given = fields.get("tool_call_id").and_then(Json::as_str);
            if let Some(id) = given {
                ids.check(i, id)?;
            }
            let id = given.unwrap_or("");
            let call_text = calls.get(id).cloned().unwrap_or_else(|| {
                let name = fields.get("name").and_then(Json::as_str).unwrap_or("tool");
                format!("{}(...)", tools.atfunc_name(name))
            });
            results.push(CallRecord {
                call_text,
                result: Ok(Json::String(content_text(fields.get("content")))),
            });
            continue;
        }
        flush_results(&mut results, &mut out);
        let mut fields = fields;
        let Some(Json::Array(entries)) = fields.remove("tool_calls") else {
            continue;
        };
        let mut text = content_text(fields.get("content"));
        for entry in &entries {
            let call = call_text(entry, tools);
            if let Some(id) = entry.get("id").and_then(Json::as_str) {
                calls.insert(id.to_owned(), call.trim_start_matches('@').to_owned());
                ids.push(id);
            }
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&call);
        }
        fields.insert("content".into(), Json::String(text));
        out.push(raw(&Json::Object(fields)));
    }
    flush_results(&mut results, &mut out);
    Ok(out)
}

/// The history of a request for a model that reads it in its own chat template
/// (`--upstream-dialect`): every message as it came, but that an assistant message without
/// content gets `""` ([`with_content`]), and a `tool` message whose `tool_call_id` no
/// call of an assistant message before it has is refused ([`CallIds::check`]). Only
/// assistant and `tool` messages are parsed, and of them only what this reads.
pub(crate) fn native_history(
    messages: Vec<Box<RawValue>>,
) -> Result<Vec<Box<RawValue>>, TurnError> {
    let mut ids = CallIds::default();
    let mut out = Vec::with_capacity(messages.len());
    for (i, message) in messages.into_iter().enumerate() {
        // What cannot be read this way (not an object, a key twice) goes as it came: the
        // upstream's template is the judge of such a message, as before.
        let Ok(peek) = serde_json::from_str::<Peek>(message.get()) else {
            out.push(message);
            continue;
        };
        match peek.role.as_deref() {
            Some("assistant") => {
                if let Some(calls) = peek.tool_calls {
                    // Entries that are not what OpenAI sends are the template's to judge.
                    let entries: Vec<Json> = serde_json::from_str(calls.get()).unwrap_or_default();
                    for id in entries.iter().filter_map(|e| e.get("id")?.as_str()) {
                        ids.push(id);
                    }
                }
                if peek.content.is_none() {
                    if let Some(with) = with_content(&message) {
                        out.push(with);
                        continue;
                    }
                }
            }
            Some("tool") => {
                if let Some(id) = peek.tool_call_id.as_deref() {
                    ids.check(i, id)?;
                }
            }
            _ => {}
        }
        out.push(message);
    }
    Ok(out)
}

/// `message` (an object) with `"content": ""`: an assistant message whose `content` is
/// `null` or missing, as OpenAI allows beside `tool_calls`. Servers that render the
/// history with a template refuse it (llama-cpp-python answers 500, for `null` and for a
/// missing field alike); `""` means the same to every server. `None` when `message` is not
/// an object.
fn with_content(message: &RawValue) -> Option<Box<RawValue>> {
    let mut fields: Map<String, Json> = serde_json::from_str(message.get()).ok()?;
    fields.insert("content".into(), Json::String(String::new()));
    Some(raw(&Json::Object(fields)))
}

/// The ids of the calls of the assistant messages read so far, to check the `tool`
/// messages after them by.
#[derive(Default)]
struct CallIds {
    /// In the order the calls came; the same id twice is kept once.
    ids: Vec<String>,
    seen: std::collections::HashSet<String>,
}

/// How many of the ids before it a refused `tool` message is shown: the last ones.
const IDS_SHOWN: usize = 10;

/// How many characters of one id an error quotes.
const ID_CHARS_SHOWN: usize = 80;

impl CallIds {
    fn push(&mut self, id: &str) {
        if self.seen.insert(id.to_owned()) {
            self.ids.push(id.to_owned());
        }
    }

    /// Refuses `messages[at]`, a `tool` message answering the call `id`, when no
    /// assistant message before it has a call of that id: the result would be shown to
    /// the model as the answer to another call, or to none. OpenAI refuses it too (a
    /// `tool` message must answer a call of an assistant message before it); a `tool`
    /// message without an id is still read by its `name`, as before.
    fn check(&self, at: usize, id: &str) -> Result<(), TurnError> {
        if self.seen.contains(id) {
            return Ok(());
        }
        let there = if self.ids.is_empty() {
            String::from("no assistant message before it has tool_calls")
        } else {
            let skipped = self.ids.len().saturating_sub(IDS_SHOWN);
            let shown: Vec<String> = self.ids[skipped..].iter().map(|id| quoted(id)).collect();
            let mut there = format!(
                "the calls of the assistant messages before it have the ids {}",
                shown.join(", ")
            );
            if skipped > 0 {
                there.push_str(&format!(" (and {skipped} earlier ones)"));
            }
            there
        };
        Err(TurnError::bad_request(format!(
            "messages[{at}] is a tool result for the call {} (its tool_call_id), and no call \
             of an assistant message before it has that id: {there}. Give each tool message \
             the id of the call it answers, as the assistant message's tool_calls name it",
            quoted(id)
        )))
    }
}

/// `id` as a JSON string, cut at [`ID_CHARS_SHOWN`] characters with `...` after it.
fn quoted(id: &str) -> String {
    let cut: String = id.chars().take(ID_CHARS_SHOWN).collect();
    let shown = Json::String(cut).to_string();
    if id.chars().nth(ID_CHARS_SHOWN).is_some() {
        format!("{shown}...")
    } else {
        shown
    }
}

/// What decides whether a message is rewritten; the rest of it is skipped unread.
#[derive(serde::Deserialize)]
struct Peek<'a> {
    /// Absent, or not a string, is no role.
    #[serde(default, borrow, deserialize_with = "string_or_none")]
    role: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<&'a RawValue>,
    /// `None` when absent or `null`.
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
    /// Absent, or not a string, is no id.
    #[serde(default, borrow, deserialize_with = "string_or_none")]
    tool_call_id: Option<std::borrow::Cow<'a, str>>,
}

fn string_or_none<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<std::borrow::Cow<'de, str>>, D::Error> {
    let value: &'de RawValue = serde::Deserialize::deserialize(deserializer)?;
    Ok(serde_json::from_str(value.get()).ok())
}

/// Puts `prompt` in front of the system message that opens the conversation, or adds a
/// system message holding it in front of the conversation. A system message further on
/// stays where it is: it changes course at that point, and the functions come first.
///
/// Only the first message is parsed, and only when it is a system message. The prompt
/// goes in as it was escaped when it was built ([`Prompt`]): a long tool list's prompt is
/// not escaped again for every request.
pub(crate) fn add_prompt_raw(messages: &mut Vec<Box<RawValue>>, prompt: &Prompt) {
    let system = messages.first().and_then(|first| {
        let peek: Peek = serde_json::from_str(first.get()).ok()?;
        (peek.role.as_deref() == Some("system"))
            .then(|| serde_json::from_str::<Map<String, Json>>(first.get()).ok())
            .flatten()
    });
    let had_system = system.is_some();
    let mut system = system.unwrap_or_default();
    let text = content_text(system.remove("content").as_ref());
    // The message's other fields as they were, `role` first when there is none.
    let mut message = String::from("{");
    if !had_system {
        message.push_str(r#""role":"system","#);
    }
    for (key, value) in &system {
        message.push('"');
        message.push_str(&escape(key));
        message.push_str("\":");
        message.push_str(raw(value).get());
        message.push(',');
    }
    message.push_str(r#""content":""#);
    prompt.write_escaped(&mut message);
    if !text.trim().is_empty() {
        message.push_str(&escape(&format!("\n{text}")));
    }
    message.push_str("\"}");
    // Built from JSON texts alone, so it is JSON; `null` would be a bug shown upstream.
    let message = RawValue::from_string(message).unwrap_or_default();
    if had_system {
        messages[0] = message;
    } else {
        messages.insert(0, message);
    }
}

fn flush_results(results: &mut Vec<CallRecord>, out: &mut Vec<Box<RawValue>>) {
    if results.is_empty() {
        return;
    }
    let text = format_results(results);
    results.clear();
    let mut message = Map::new();
    message.insert("role".into(), Json::String("user".into()));
    message.insert("content".into(), Json::String(text));
    out.push(raw(&Json::Object(message)));
}

/// A `tool_calls` entry as call text, `@name(key=value, ...)`, under the names the model
/// is given for the tool and its parameters. Arguments that are not a JSON object, or
/// whose keys are not identifiers even so (keys the tool does not declare), are written
/// as they came so the model still sees what it asked for.
pub(super) fn call_text(entry: &Json, tools: &ToolSet) -> String {
    let function = entry.get("function");
    let client = function
        .and_then(|f| f.get("name"))
        .and_then(Json::as_str)
        .unwrap_or("tool");
    let name = tools.atfunc_name(client);
    let raw = function.and_then(|f| f.get("arguments"));
    let args = match raw {
        None | Some(Json::Null) => Some(Map::new()),
        Some(Json::Object(args)) => Some(args.clone()),
        Some(Json::String(text)) if text.trim().is_empty() => Some(Map::new()),
        Some(Json::String(text)) => match serde_json::from_str(text) {
            Ok(Json::Object(args)) => Some(args),
            _ => None,
        },
        Some(_) => None,
    };
    let call = args.map(|args| ToolCall {
        id: String::new(),
        name: name.clone(),
        model_name: client.to_owned(),
        args: tools.model_args(client, args),
        body: None,
    });
    match call.map(|call| call.call_text()) {
        Some(Ok(text)) => text,
        _ => {
            let raw = match raw {
                Some(Json::String(text)) => text.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            format!("@{name}({raw})")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `rewrite` on a list given as JSON, its messages parsed back.
    fn rewrite_json(messages: &Json, tools: &ToolSet) -> Vec<Json> {
        let list: Vec<Box<RawValue>> = serde_json::from_str(&messages.to_string()).unwrap();
        rewrite_raw(list, tools)
            .unwrap()
            .iter()
            .map(|m| serde_json::from_str(m.get()).unwrap())
            .collect()
    }

    /// `messages` with the prompt `PROMPT` added, as the gateway adds it to text.
    fn prompted(messages: Vec<Json>) -> Vec<Json> {
        let mut list: Vec<Box<RawValue>> = messages.iter().map(raw).collect();
        add_prompt_raw(&mut list, &Prompt::new("PROMPT".into()));
        list.iter()
            .map(|m| serde_json::from_str(m.get()).unwrap())
            .collect()
    }

    #[test]
    fn messages_that_are_not_rewritten_pass_as_they_came() {
        let tools = ToolSet::from_tools(&json!([])).unwrap();
        let text = r#"[{"role": "user", "content": "caf\u00e9", "x": [1,  2]}, {"role": 7}, {"role": "assistant", "content": "", "tool_calls": null}]"#;
        let list: Vec<Box<RawValue>> = serde_json::from_str(text).unwrap();
        let out = rewrite_raw(list, &tools).unwrap();
        let shown: Vec<&str> = out.iter().map(|m| m.get()).collect();
        assert_eq!(
            shown,
            [
                r#"{"role": "user", "content": "caf\u00e9", "x": [1,  2]}"#,
                r#"{"role": 7}"#,
                r#"{"role": "assistant", "content": "", "tool_calls": null}"#
            ]
        );
        let list: Vec<Box<RawValue>> = serde_json::from_str("[1]").unwrap();
        assert_eq!(
            rewrite_raw(list, &tools).unwrap_err().to_string(),
            "messages[0] must be an object"
        );
    }

    fn list(messages: &Json) -> Vec<Box<RawValue>> {
        serde_json::from_str(&messages.to_string()).unwrap()
    }

    fn parsed(messages: &[Box<RawValue>]) -> Vec<Json> {
        messages
            .iter()
            .map(|m| serde_json::from_str(m.get()).unwrap())
            .collect()
    }

    #[test]
    fn an_assistant_message_without_content_gets_an_empty_one() {
        let tools = ToolSet::from_tools(&json!([{"type": "function", "function": {
            "name": "f", "parameters": {"type": "object", "properties": {}}}}]))
        .unwrap();
        let call = json!([{"id": "c1", "type": "function",
            "function": {"name": "f", "arguments": "{}"}}]);
        let messages = json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": call},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "assistant", "content": null},
            {"role": "assistant", "tool_calls": call},
            {"role": "assistant", "tool_calls": null},
            {"role": "user", "content": null},
        ]);
        // A model's own template reads the history as it came, with "" for no content.
        let native = parsed(&native_history(list(&messages)).unwrap());
        let mut expected = messages.clone();
        for at in [1, 3, 4, 5] {
            expected[at]["content"] = json!("");
        }
        assert_eq!(json!(native), expected);
        // atfunc's rewrite writes every assistant message's content as a string.
        let rewritten = rewrite_json(&messages, &tools);
        let assistant: Vec<&Json> = rewritten
            .iter()
            .filter(|m| m["role"] == "assistant")
            .map(|m| &m["content"])
            .collect();
        assert_eq!(
            assistant,
            [&json!("@f()"), &json!(""), &json!("@f()"), &json!("")]
        );
        // A user message is not the assistant's: it goes as it came.
        assert_eq!(
            rewritten.last(),
            Some(&json!({"role": "user", "content": null}))
        );
    }

    #[test]
    fn a_tool_result_for_a_call_no_assistant_message_made_is_refused_naming_the_ids() {
        let tools = ToolSet::from_tools(&json!([{"type": "function", "function": {
            "name": "f", "parameters": {"type": "object", "properties": {}}}}]))
        .unwrap();
        let call = |id: &str| json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}});
        let messages = json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [call("call_a"), call("call_b")]},
            {"role": "tool", "tool_call_id": "call_a", "content": "1"},
            {"role": "tool", "tool_call_id": "call_x", "content": "2"},
        ]);
        let rewritten = rewrite_raw(list(&messages), &tools)
            .unwrap_err()
            .to_string();
        let native = native_history(list(&messages)).unwrap_err().to_string();
        assert_eq!(rewritten, native);
        assert!(
            native.starts_with("messages[3] is a tool result for the call \"call_x\""),
            "{native}"
        );
        assert!(
            native.contains("have the ids \"call_a\", \"call_b\""),
            "{native}"
        );
        // One sentence, its words one space apart (as a client's log shows it).
        assert!(
            native.contains("and no call of an assistant message before it has that id")
                && !native.contains("  "),
            "{native}"
        );
        // A result before any call.
        let early = json!([
            {"role": "tool", "tool_call_id": "call_a", "content": "1"},
            {"role": "assistant", "content": null, "tool_calls": [call("call_a")]},
        ]);
        for error in [
            rewrite_raw(list(&early), &tools).unwrap_err().to_string(),
            native_history(list(&early)).unwrap_err().to_string(),
        ] {
            assert!(
                error.starts_with("messages[0] is a tool result")
                    && error.contains("no assistant message before it has tool_calls"),
                "{error}"
            );
        }
        // Many ids: the last ones are named, the others counted; a long id is cut.
        let long = "z".repeat(500);
        let mut many: Vec<Json> = (0..15).map(|i| call(&format!("id{i}"))).collect();
        many.push(call(&long));
        let messages = json!([
            {"role": "assistant", "content": "", "tool_calls": many},
            {"role": "tool", "tool_call_id": "nope", "content": "1"},
        ]);
        let error = native_history(list(&messages)).unwrap_err().to_string();
        assert!(error.contains("\"id6\", \"id7\""), "{error}");
        assert!(!error.contains("\"id5\""), "{error}");
        assert!(error.contains("(and 6 earlier ones)"), "{error}");
        assert!(
            error.contains(&format!("\"{}\"...", "z".repeat(80))),
            "{error}"
        );
        assert!(!error.contains(&"z".repeat(81)), "{error}");
    }

    #[test]
    fn tool_results_that_answer_earlier_calls_are_taken() {
        let tools = ToolSet::from_tools(&json!([{"type": "function", "function": {
            "name": "f", "parameters": {"type": "object", "properties": {}}}}]))
        .unwrap();
        let call = |id: &str| json!([{"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}}]);
        // A result for a call two assistant messages back, one after a user message,
        // and one without an id (read by its name) are all taken.
        let messages = json!([
            {"role": "assistant", "content": "", "tool_calls": call("a")},
            {"role": "assistant", "content": "", "tool_calls": call("b")},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "user", "content": "and?"},
            {"role": "tool", "tool_call_id": "b", "content": "2"},
            {"role": "tool", "name": "f", "content": "3"},
        ]);
        assert_eq!(rewrite_raw(list(&messages), &tools).unwrap().len(), 5);
        assert_eq!(native_history(list(&messages)).unwrap().len(), 6);
    }

    #[test]
    fn the_prompt_goes_in_front_of_messages_kept_as_text() {
        let mut messages: Vec<Box<RawValue>> = serde_json::from_str(
            r#"[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]"#,
        )
        .unwrap();
        add_prompt_raw(&mut messages, &Prompt::new("PROMPT".into()));
        assert_eq!(
            messages[0].get(),
            r#"{"role":"system","content":"PROMPT\nBe brief."}"#
        );
        assert_eq!(messages.len(), 2);
        let mut messages: Vec<Box<RawValue>> =
            serde_json::from_str(r#"[{"role": "user", "content": "hi"}]"#).unwrap();
        add_prompt_raw(&mut messages, &Prompt::new("PROMPT".into()));
        assert_eq!(messages[0].get(), r#"{"role":"system","content":"PROMPT"}"#);
        assert_eq!(messages.len(), 2);
    }

    #[test]
    fn calls_become_text_and_results_become_blocks() {
        let tools = ToolSet::from_tools(&json!([{"type": "function", "function": {
            "name": "get-weather", "parameters": {"type": "object",
            "properties": {"city": {"type": "string"}}}}}]))
        .unwrap();
        let messages = json!([
            {"role": "user", "content": "Weather in Paris and Oslo?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "get-weather", "arguments": "{\"city\":\"Paris\"}"}},
                {"id": "b", "type": "function", "function": {"name": "get-weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "21C"},
            {"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "{\"temp\": 4}"}]},
        ]);
        let out = prompted(rewrite_json(&messages, &tools));
        assert_eq!(
            json!(out),
            json!([
                {"role": "system", "content": "PROMPT"},
                {"role": "user", "content": "Weather in Paris and Oslo?"},
                {"role": "assistant", "content": "@get_weather(city=\"Paris\")\n@get_weather(city=\"Oslo\")"},
                {"role": "user", "content": "Function call: get_weather(city=\"Paris\")\nReturned: 21C\n\nFunction call: get_weather(city=\"Oslo\")\nReturned: {\"temp\": 4}\n"},
            ])
        );
    }

    #[test]
    fn calls_use_the_parameter_names_the_model_is_given() {
        let tools = ToolSet::from_tools(&json!([{"type": "function", "function": {
            "name": "search-docs", "parameters": {"type": "object", "properties": {
                "max-results": {"type": "integer"}, "$top": {"type": "integer"},
                "filter": {"type": "object", "properties": {"created-after": {"type": "string"}}}}}}}]))
        .unwrap();
        let messages = json!([
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "search-docs",
                 "arguments": "{\"max-results\": 5, \"$top\": 2, \"filter\": {\"created-after\": \"2024\"}}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "[]"},
        ]);
        let out = rewrite_json(&messages, &tools);
        // Fields inside an object are JSON keys: they keep the client's spelling.
        let call = "search_docs(max_results=5, _top=2, filter={\"created-after\":\"2024\"})";
        assert_eq!(
            json!(out),
            json!([
                {"role": "assistant", "content": format!("@{call}")},
                {"role": "user", "content": format!("Function call: {call}\nReturned: []\n")},
            ])
        );
    }

    #[test]
    fn the_prompt_goes_in_front_of_the_system_message() {
        let messages = prompted(vec![json!({"role": "system", "content": "Be brief."})]);
        assert_eq!(messages[0]["content"], "PROMPT\nBe brief.");
    }

    #[test]
    fn the_prompt_is_escaped_once_and_the_system_message_keeps_its_fields() {
        let mut prompt = Prompt::new("Say \"hi\"\tto caf\u{e9} \\ \u{1}".into());
        prompt.push_str("\nOne \"call\".\n");
        let parts = json!([{"type": "text", "text": "Be \"brief\"."}, {"type": "image_url"}]);
        let mut messages: Vec<Box<RawValue>> = vec![raw(
            &json!({"role": "system", "name": "a\"b", "content": parts}),
        )];
        add_prompt_raw(&mut messages, &prompt);
        let message: Json = serde_json::from_str(messages[0].get()).unwrap();
        assert_eq!(
            message,
            json!({"role": "system", "name": "a\"b",
                "content": "Say \"hi\"\tto caf\u{e9} \\ \u{1}\nOne \"call\".\n\nBe \"brief\"."})
        );
        assert_eq!(
            prompt.to_string(),
            "Say \"hi\"\tto caf\u{e9} \\ \u{1}\nOne \"call\".\n"
        );
    }

    #[test]
    fn a_later_system_message_gets_a_new_one_in_front_of_the_conversation() {
        let messages = prompted(vec![
            json!({"role": "user", "content": "Hi"}),
            json!({"role": "system", "content": "Be brief."}),
        ]);
        assert_eq!(
            json!(messages),
            json!([
                {"role": "system", "content": "PROMPT"},
                {"role": "user", "content": "Hi"},
                {"role": "system", "content": "Be brief."},
            ])
        );
    }
}
