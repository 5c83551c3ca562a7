//! Where a request stands in its conversation, and what the engine does about it: the
//! policy that makes a loop of calls end with an answer in words.
//!
//! A client runs a loop: it sends the conversation, runs the calls of the answer, appends
//! their results and sends it again, until an answer has no calls. A small model left to
//! itself does not end that loop: after the results it writes the same call again, or
//! copies the results block it was sent as its answer. So the engine reads what happened
//! since the user last spoke ([`Since`]) and, for every request that follows results:
//!
//! - a call identical to one made since then (same function, same bound arguments) is
//!   never passed on again ([`Since::keys`] seed the turn's calls made);
//! - `tool_choice` `required` or a named tool becomes `auto` ([`Since::choice`]): the
//!   results are in, and an answer held to calls would never end;
//! - a line of the answer that starts like a results block (`Function call:`,
//!   `Returned:`) is a copy of the results, not an answer: it and what follows are cut
//!   ([`EchoCut`]); so is a line that starts a JSON call object (`{"name": ...`), which a
//!   model taught a JSON call format writes after results instead of words;
//! - an answer left with no call and no words asks once more, for an answer in words
//!   from the results ([`answer_request`], [`Since::answer_note`]);
//! - after [`DEFAULT_CALL_ROUNDS`] rounds of calls the answer is asked for in words
//!   straight away.

use super::history::call_text;
use super::history::content_text;
use super::request::raw;
use super::tools::ToolSet;
use atfunc::bind::{bind, CallKey};
use atfunc::parse::{parse_events, Event};
use serde_json::value::RawValue;
use serde_json::{Map, Value as Json};
use std::collections::HashSet;

/// Rounds of calls (assistant answers with `tool_calls`) after one user message before
/// the gateway asks for the answer in words. The everyday tasks of the conversation
/// benchmark need one to three rounds (look up, convert, then write); a fourth leaves
/// room to correct a call a tool refused.
pub const DEFAULT_CALL_ROUNDS: usize = 4;

/// The most characters of the user's message the request for an answer in words quotes.
const QUESTION_CHARS: usize = 600;

/// What happened since the last user message of a conversation.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Since {
    /// Assistant messages with `tool_calls` since the last user message.
    pub(crate) rounds: usize,
    /// Whether the conversation ends with tool results (a `tool` message after the last
    /// assistant message with calls).
    pub(crate) after_results: bool,
    /// The calls of those messages, as atfunc call text.
    calls: Vec<String>,
    /// The text of the last user message.
    question: String,
}

impl Since {
    /// Reads `messages` as the client sent them (each as JSON text). A message that
    /// cannot be read counts as nothing: the history's own checks refuse it with its
    /// index.
    pub(crate) fn read(messages: &[Box<RawValue>], tools: &ToolSet) -> Since {
        #[derive(serde::Deserialize)]
        struct Message {
            #[serde(default)]
            role: Json,
            #[serde(default)]
            content: Option<Json>,
            #[serde(default)]
            tool_calls: Option<Json>,
        }
        let mut since = Since::default();
        for message in messages {
            let Ok(message) = serde_json::from_str::<Message>(message.get()) else {
                continue;
            };
            match message.role.as_str() {
                Some("user") => {
                    since = Since {
                        question: content_text(message.content.as_ref()),
                        ..Since::default()
                    };
                }
                Some("assistant") => match message.tool_calls {
                    Some(Json::Array(entries)) if !entries.is_empty() => {
                        since.rounds += 1;
                        since.after_results = false;
                        since
                            .calls
                            .extend(entries.iter().map(|entry| call_text(entry, tools)));
                    }
                    _ => since.after_results = false,
                },
                Some("tool") => since.after_results = since.rounds > 0,
                _ => {}
            }
        }
        since
    }

    /// The keys of the calls made since the last user message that bind against
    /// `tools` (a call that does not bind was not made, and cannot be repeated).
    pub(crate) fn keys(&self, tools: &ToolSet) -> HashSet<CallKey> {
        self.calls
            .iter()
            .flat_map(|text| parse_events(text))
            .filter_map(|event| match event {
                Event::Call(call) => bind(&call, &tools.catalog).ok().map(|b| b.key()),
                _ => None,
            })
            .collect()
    }

    /// The choice for this point of the conversation: after results, a choice that
    /// forces a call (`required`, a named tool) becomes `auto`, so the answer may be
    /// words.
    pub(crate) fn choice(&self, asked: atfunc::grammar::Choice) -> atfunc::grammar::Choice {
        use atfunc::grammar::Choice;
        match asked {
            Choice::Required | Choice::Function(_) if self.after_results => Choice::Auto,
            asked => asked,
        }
    }

    /// Whether the answer is asked for in words at once: `cap` rounds of calls were made.
    pub(crate) fn at_cap(&self, cap: usize) -> bool {
        self.after_results && self.rounds >= cap
    }

    /// The request's last message, appended to ask for the answer in words from the
    /// results. It quotes the user's message and ends with the instruction: a quote at the
    /// end is what a small model copies, and without the quote it describes the results
    /// (or the call) instead of answering; "without code or function names" keeps call
    /// syntax out of the answer. Chosen on a handful of conversations of the benchmark's
    /// `dev` set, Qwen2.5-Coder-0.5B.
    pub(crate) fn answer_note(&self) -> String {
        let question = self.question.trim();
        let question = match question.char_indices().nth(QUESTION_CHARS) {
            Some((end, _)) => format!("{}...", &question[..end]),
            None => question.to_owned(),
        };
        format!(
            "Those are the results for my message \"{question}\". Reply to me in plain \
             words, without code or function names."
        )
    }
}

/// `messages` (rewritten for the upstream, without the tools' prompt) with the request
/// for an answer in words: appended to the last message when it is the user's (the
/// results, in atfunc's history), or as a user message of its own.
pub(crate) fn answer_request(mut messages: Vec<Box<RawValue>>, note: &str) -> Vec<Box<RawValue>> {
    let last = messages
        .last()
        .and_then(|m| serde_json::from_str::<Map<String, Json>>(m.get()).ok())
        .filter(|m| m.get("role").and_then(Json::as_str) == Some("user"));
    match last {
        Some(mut fields) => {
            let text = content_text(fields.get("content"));
            let joined = if text.trim().is_empty() {
                note.to_owned()
            } else {
                format!("{}\n\n{note}", text.trim_end())
            };
            fields.insert("content".into(), Json::String(joined));
            if let Some(slot) = messages.last_mut() {
                *slot = raw(&Json::Object(fields));
            }
        }
        None => {
            let mut fields = Map::new();
            fields.insert("role".into(), Json::String("user".into()));
            fields.insert("content".into(), Json::String(note.to_owned()));
            messages.push(raw(&Json::Object(fields)));
        }
    }
    messages
}

/// The labels a results block's lines start with (see [`atfunc::format::format_results`]):
/// an answer line starting with one copies the results.
const RESULT_LABELS: [&str; 2] = ["Function call:", "Returned:"];

/// How a line that starts a JSON call object begins, whitespace left out: after results,
/// a model taught a JSON call format writes the call again, or its result as a call
/// (`{"name": "result", "value": 26.1}`), where an answer in words belongs. Such a line is
/// no call the parser reads (it is not alone, or names no tool), and never words.
const JSON_CALL_STARTS: [&str; 4] = [
    "{\"name\":",
    "[{\"name\":",
    "{\"function\":",
    "[{\"function\":",
];

/// Cuts an answer at the first line that starts like a results block, whatever the
/// pieces it comes in: the start of each line is held until it is known not to.
#[derive(Debug, Default)]
pub(crate) struct EchoCut {
    /// Whether the model writes its own call format: the results reach it through its
    /// chat template, not as a results block, so only JSON call lines are cut.
    native: bool,
    /// The start of the current line, held: whitespace, then at most a label's length.
    held: String,
    /// Whether the current line's start is still undecided.
    deciding: bool,
    /// Whether a copy was found: nothing more passes.
    cut: bool,
    /// Whether anything was read yet (the answer's start is a line start).
    started: bool,
}

impl EchoCut {
    /// A cut for an answer in atfunc's syntax (`native` false), or in a model's own format.
    pub(crate) fn new(native: bool) -> EchoCut {
        EchoCut {
            native,
            ..EchoCut::default()
        }
    }

    /// Passes on what of `text` is known not to copy the results.
    pub(crate) fn push(&mut self, text: &str) -> String {
        let mut out = String::new();
        if !self.started {
            self.started = true;
            self.deciding = true;
        }
        for c in text.chars() {
            if self.cut {
                break;
            }
            if self.deciding {
                self.held.push(c);
                self.decide(&mut out);
            } else {
                out.push(c);
            }
            if c == '\n' && !self.cut {
                // A new line: its start is judged before it passes.
                if self.deciding {
                    out.push_str(&std::mem::take(&mut self.held));
                }
                self.deciding = true;
            }
        }
        out
    }

    /// What is held at the end of the answer: a line start that turned out to be words.
    pub(crate) fn finish(&mut self) -> String {
        self.deciding = false;
        if self.cut {
            return String::new();
        }
        std::mem::take(&mut self.held)
    }

    fn decide(&mut self, out: &mut String) {
        let start = self.held.trim_start();
        let line_ended = self.held.ends_with('\n');
        if start.is_empty() && !line_ended {
            return;
        }
        // JSON may space its tokens as it likes: its starts are compared without spaces.
        let compact: String = start.chars().filter(|c| !c.is_whitespace()).collect();
        let labels: &[&str] = if self.native { &[] } else { &RESULT_LABELS };
        if labels.iter().any(|label| start.starts_with(label))
            || JSON_CALL_STARTS
                .iter()
                .any(|json| compact.starts_with(json))
        {
            self.cut = true;
            self.held.clear();
            return;
        }
        let may_be = labels.iter().any(|label| label.starts_with(start))
            || JSON_CALL_STARTS
                .iter()
                .any(|json| json.starts_with(&compact));
        if may_be && !start.is_empty() && !line_ended {
            return;
        }
        self.deciding = false;
        out.push_str(&std::mem::take(&mut self.held));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use atfunc::grammar::Choice;
    use serde_json::json;

    fn tools() -> ToolSet {
        let tools = json!([{"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
            "required": ["city"]}}}]);
        ToolSet::from_tools(&tools).unwrap()
    }

    fn messages(list: Json) -> Vec<Box<RawValue>> {
        list.as_array().unwrap().iter().map(raw).collect()
    }

    fn weather_call(id: &str, city: &str) -> Json {
        json!({"id": id, "type": "function", "function": {"name": "get_weather",
            "arguments": json!({"city": city}).to_string()}})
    }

    #[test]
    fn the_calls_and_rounds_since_the_last_user_message_are_read() {
        let tools = tools();
        let history = messages(json!([
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": null, "tool_calls": [weather_call("a", "Oslo")]},
            {"role": "tool", "tool_call_id": "a", "content": "4 C"},
            {"role": "assistant", "content": "It is 4 C."},
            {"role": "user", "content": "And in Cairo and Rome?"},
            {"role": "assistant", "content": null, "tool_calls": [weather_call("b", "Cairo")]},
            {"role": "tool", "tool_call_id": "b", "content": "31 C"},
            {"role": "assistant", "content": "", "tool_calls": [weather_call("c", "Rome")]},
            {"role": "tool", "tool_call_id": "c", "content": "20 C"},
        ]));
        let since = Since::read(&history, &tools);
        assert_eq!(since.rounds, 2);
        assert!(since.after_results);
        assert_eq!(since.question, "And in Cairo and Rome?");
        assert_eq!(since.keys(&tools).len(), 2);
        // Oslo was asked before the last user message: asking it again is new.
        let oslo = messages(json!([
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": null, "tool_calls": [weather_call("a", "Oslo")]},
        ]));
        let oslo_keys = Since::read(&oslo, &tools).keys(&tools);
        assert!(since.keys(&tools).is_disjoint(&oslo_keys));
        assert!(!Since::read(&oslo, &tools).after_results);
    }

    #[test]
    fn a_forced_choice_is_auto_after_results_only() {
        let tools = tools();
        let fresh = Since::read(
            &messages(json!([{"role": "user", "content": "hi"}])),
            &tools,
        );
        assert_eq!(fresh.choice(Choice::Required), Choice::Required);
        let after = Since::read(
            &messages(json!([
                {"role": "user", "content": "Weather in Oslo?"},
                {"role": "assistant", "tool_calls": [weather_call("a", "Oslo")]},
                {"role": "tool", "tool_call_id": "a", "content": "4 C"},
            ])),
            &tools,
        );
        assert_eq!(after.choice(Choice::Required), Choice::Auto);
        assert_eq!(
            after.choice(Choice::Function("get_weather".into())),
            Choice::Auto
        );
        assert_eq!(after.choice(Choice::None), Choice::None);
        assert!(after.at_cap(1));
        assert!(!after.at_cap(2));
    }

    #[test]
    fn the_answer_request_quotes_the_user_after_the_results() {
        let asked = answer_request(
            messages(json!([
                {"role": "user", "content": "Weather in Oslo?"},
                {"role": "assistant", "content": "@get_weather(city=\"Oslo\")"},
                {"role": "user", "content": "Function call: get_weather(city=\"Oslo\")\nReturned: 4 C\n"},
            ])),
            "Reply to \"Weather in Oslo?\"",
        );
        assert_eq!(asked.len(), 3);
        let last: Json = serde_json::from_str(asked[2].get()).unwrap();
        assert_eq!(
            last["content"],
            "Function call: get_weather(city=\"Oslo\")\nReturned: 4 C\n\nReply to \"Weather in Oslo?\""
        );
    }

    /// `answer` cut by [`EchoCut`] (for a model's own format with `native`) fed in pieces
    /// of `size` bytes (at char boundaries).
    fn cut(answer: &str, size: usize, native: bool) -> (String, bool) {
        let mut echo = EchoCut::new(native);
        let mut out = String::new();
        let mut rest = answer;
        while !rest.is_empty() {
            let mut end = size.min(rest.len());
            while !rest.is_char_boundary(end) {
                end += 1;
            }
            out.push_str(&echo.push(&rest[..end]));
            rest = &rest[end..];
        }
        out.push_str(&echo.finish());
        (out, echo.cut)
    }

    #[test]
    fn a_copy_of_the_results_is_cut_whatever_the_pieces() {
        let cases = [
            (
                "Function call: get_weather(city=\"Lisbon\")\nReturned: {}",
                "",
                true,
            ),
            (
                "It is 26.1 miles.\nReturned: {\"result\": 26.1}\n```",
                "It is 26.1 miles.\n",
                true,
            ),
            ("  Returned: 4", "", true),
            ("It is 19 °C and sunny.", "It is 19 °C and sunny.", false),
            (
                "Fun fact:\nReturns are free.",
                "Fun fact:\nReturns are free.",
                false,
            ),
            ("Returned", "Returned", false),
            (
                "Function calls are done.\n",
                "Function calls are done.\n",
                false,
            ),
            ("", "", false),
            ("\n\nHello", "\n\nHello", false),
            // A JSON call written again after results, and its result as a call.
            (
                "{\"name\": \"convert_units\", \"arguments\": {\"value\": 42}}\n{\"name\": \"result\", \"value\": 26.1}",
                "",
                true,
            ),
            (
                "42 km is 26.1 miles.\n  { \"name\" : \"convert_units\"}",
                "42 km is 26.1 miles.\n",
                true,
            ),
            ("[{\"function\": {\"name\": \"f\"}}]", "", true),
            // JSON that is no call, and braces in words, are words.
            (
                "{\"temperature\": 19}\nIt is sunny.",
                "{\"temperature\": 19}\nIt is sunny.",
                false,
            ),
            ("{\n\"a\": 1}", "{\n\"a\": 1}", false),
            ("{ names are hard }", "{ names are hard }", false),
            ("{\"na", "{\"na", false),
        ];
        for (answer, kept, was_cut) in cases {
            for size in [1, 2, 3, 7, 1000] {
                assert_eq!(
                    cut(answer, size, false),
                    (kept.to_owned(), was_cut),
                    "{answer:?} in {size}"
                );
            }
        }
    }

    #[test]
    fn in_a_models_own_format_only_json_call_lines_are_cut() {
        for (answer, kept) in [
            (
                "Returned: the parcel came back.",
                "Returned: the parcel came back.",
            ),
            (
                "It is 26.1 miles.\n{\"name\": \"result\"}",
                "It is 26.1 miles.\n",
            ),
        ] {
            for size in [1, 3, 1000] {
                assert_eq!(cut(answer, size, true).0, kept, "{answer:?} in {size}");
            }
        }
    }

    #[test]
    fn the_labels_are_those_of_the_results_block() {
        let block = atfunc::format::format_results(&[atfunc::CallRecord {
            call_text: "f()".into(),
            result: Ok(json!(1)),
        }]);
        let lines: Vec<&str> = block.lines().collect();
        assert!(lines[0].starts_with(RESULT_LABELS[0]), "{block}");
        assert!(lines[1].starts_with(RESULT_LABELS[1]), "{block}");
    }
}
