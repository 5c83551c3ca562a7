//! `hermes`: Hermes 2 Pro / Hermes 3 and Qwen 2.5 / Qwen 3.
//!
//! Their chat templates (NousResearch's Hermes-2-Pro and Qwen2.5-Instruct
//! `tokenizer_config.json`, the same as vLLM's and SGLang's `hermes` / `qwen25` tool
//! parsers) ask for each call as
//!
//! ```text
//! <tool_call>
//! {"name": <function-name>, "arguments": <args-json-object>}
//! </tool_call>
//! ```
//!
//! one block per call. Some models put a JSON array of such objects in one block; each
//! element is a call. `"parameters"` is read like `"arguments"`, and arguments given as a
//! string holding a JSON object are read too.
//!
//! Qwen 2.5 under its own template (not the one with the tool-call tags) writes the call
//! object alone, `{"name": ..., "arguments": {...}}`, sometimes inside a Markdown ```json
//! fence. When the parser knows the offered tools ([`ParserConfig::offered`]), such an
//! object is a call where it stands at the start of a line, names one of them (as
//! llama.cpp's generic trigger `{"name": "<tool>"` reads it) and the answer holds nothing
//! but calls (`untagged.rs`); any other JSON, and JSON in prose, stays text. So is a JSON list of call objects whose first element names one
//! (`[{"name": ...}, {"name": ...}]`, each element a call, as in a block): the layout the
//! model keeps to for several calls when a grammar opens its answer with a list. A fence
//! right around such a call or list goes with it (`fence.rs`).
//!
//! [`ParserConfig::offered`]: crate::parse::ParserConfig::offered

use super::block::{opened, BlockScan, Opens};
use super::scan::{
    json_call, json_value, BuildError, Built, Input, Match, Step, ValueScan, MAX_NAME,
};
use super::Dialect;
use crate::parse::release::valid_utf8;
use crate::parse::{FunctionNames, Value};

pub(super) const OPEN: &[u8] = b"<tool_call>";
pub(super) const CLOSE: &[u8] = b"</tool_call>";

pub(super) fn opens(input: &Input<'_>, i: u64) -> Opens {
    match input.marker(i, OPEN) {
        Match::Yes(end) => {
            let block = Hermes {
                // An array, its call objects and their arguments are the call's structure.
                value: ValueScan::json_list(3),
                value_end: None,
            };
            opened(block, end)
        }
        Match::Need => Opens::Need,
        Match::No => Opens::No,
    }
}

/// The name a bare JSON object at an offset opens with.
pub(super) enum BareName {
    Yes(String),
    No,
    Need,
}

/// Most blanks between `{` and `"name"`, and around the `:` after it.
const MAX_BARE_BLANKS: u64 = 64;

/// The name of a bare call object, `{"name": "NAME"`, at `i`: its first key must be
/// `"name"` and its value a plain string.
pub(super) fn bare_name(input: &Input<'_>, i: u64) -> BareName {
    let undecided = |p: u64| {
        if p >= input.end() && !input.eof {
            BareName::Need
        } else {
            BareName::No
        }
    };
    if input.byte(i) != Some(b'{') {
        return BareName::No;
    }
    let p = input.skip_ws(i + 1);
    if p - i > MAX_BARE_BLANKS {
        return BareName::No;
    }
    let after_key = match input.marker(p, b"\"name\"") {
        Match::Yes(end) => end,
        Match::Need => return BareName::Need,
        Match::No => return undecided(p),
    };
    let q = input.skip_ws(after_key);
    if q - after_key > MAX_BARE_BLANKS {
        return BareName::No;
    }
    match input.byte(q) {
        Some(b':') => {}
        _ => return undecided(q),
    }
    let r = input.skip_ws(q + 1);
    if r - q > MAX_BARE_BLANKS {
        return BareName::No;
    }
    match input.byte(r) {
        Some(b'"') => {}
        _ => return undecided(r),
    }
    let rest = input.rest(r + 1);
    let rest = rest.get(..MAX_NAME as usize + 1).unwrap_or(rest);
    match memchr::memchr2(b'"', b'\\', rest) {
        Some(k) if rest.get(k) == Some(&b'"') => match rest.get(..k).map(std::str::from_utf8) {
            Some(Ok(name)) => BareName::Yes(name.to_owned()),
            _ => BareName::No,
        },
        // A name with escapes is no tool's.
        Some(_) => BareName::No,
        None if rest.len() as u64 > MAX_NAME => BareName::No,
        None => undecided(input.end()),
    }
}

/// A call object without tags opens at `i` when it names one of `offered`; so does a JSON
/// array whose first element is such an object, each element a call as in a block (the
/// layout a model writes for several calls in a fence: `[{"name": ...}, {"name": ...}]`).
pub(super) fn opens_untagged(input: &Input<'_>, i: u64, offered: &FunctionNames) -> Opens {
    let list = input.byte(i) == Some(b'[');
    let first = if list {
        let p = input.skip_ws(i + 1);
        if p - (i + 1) > MAX_BARE_BLANKS {
            return Opens::No;
        }
        if p >= input.end() {
            return if input.eof { Opens::No } else { Opens::Need };
        }
        p
    } else {
        i
    };
    match bare_name(input, first) {
        BareName::Yes(name) if offered.contains(&name) => opened(
            Untagged {
                // A list's brackets are structure too: its calls and their arguments.
                value: if list {
                    ValueScan::json_list(3)
                } else {
                    ValueScan::json(2)
                },
            },
            i,
        ),
        BareName::Yes(_) | BareName::No => Opens::No,
        BareName::Need => Opens::Need,
    }
}

/// A call object without tags, or a list of them: the block is the JSON value.
#[derive(Debug)]
struct Untagged {
    value: ValueScan,
}

impl BlockScan for Untagged {
    fn scan(&mut self, input: &Input<'_>, pos: &mut u64, max_depth: usize) -> Step {
        self.value.scan(input, pos, max_depth)
    }

    fn build(&self, input: &Input<'_>, start: u64, end: u64) -> Result<Vec<Built>, BuildError> {
        let text = valid_utf8(input.slice(start, end)).unwrap_or_default();
        calls(json_value(text)?, &self.value.item_ends, end)
    }

    fn dialect(&self) -> Dialect {
        Dialect::Hermes
    }

    fn awaits(&self) -> &'static str {
        "JSON call object"
    }

    fn untagged(&self) -> bool {
        true
    }
}

/// The calls of a block's value: each element of a list (ending at its `item_ends`), or
/// the one object (ending at `end`).
fn calls(value: Value, item_ends: &[u64], end: u64) -> Result<Vec<Built>, BuildError> {
    match value {
        Value::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(k, item)| {
                let item_end = item_ends.get(k).copied().unwrap_or(end);
                json_call(item, &["arguments", "parameters"], item_end)
            })
            .collect(),
        object => Ok(vec![json_call(object, &["arguments", "parameters"], end)?]),
    }
}

#[derive(Debug)]
struct Hermes {
    value: ValueScan,
    /// The value's end, once read; then the scanner looks for `</tool_call>`.
    value_end: Option<u64>,
}

impl BlockScan for Hermes {
    fn scan(&mut self, input: &Input<'_>, pos: &mut u64, max_depth: usize) -> Step {
        if self.value_end.is_none() {
            match self.value.scan(input, pos, max_depth) {
                Step::Done(end) => self.value_end = Some(end),
                other => return other,
            }
        }
        let p = input.skip_ws(*pos);
        *pos = p;
        match input.closing(p, CLOSE) {
            Match::Yes(end) => Step::Done(end),
            Match::Need => Step::Need,
            Match::No if p == input.end() => Step::Need,
            Match::No => input.expected(p, "`</tool_call>`"),
        }
    }

    fn build(&self, input: &Input<'_>, _start: u64, end: u64) -> Result<Vec<Built>, BuildError> {
        let (Some(start), Some(value_end)) = (self.value.start, self.value_end) else {
            return Err(("a JSON value".into(), "none".into()));
        };
        let text = valid_utf8(input.slice(start, value_end)).unwrap_or_default();
        calls(json_value(text)?, &self.value.item_ends, end)
    }

    fn dialect(&self) -> Dialect {
        Dialect::Hermes
    }

    fn awaits(&self) -> &'static str {
        "`<tool_call>` block (no `</tool_call>`)"
    }
}

#[cfg(test)]
mod tests {
    use super::super::read_at_every_chunking;
    use super::*;
    use crate::parse::{Event, Value};

    #[test]
    fn strings_holding_markers_and_brackets() {
        let text = "a<tool_call>\n{\"name\": \"f\", \"arguments\": {\"s\": \"}]</tool_call>\\\"{\"}}\n</tool_call>b";
        let (events, calls) = read_at_every_chunking(Dialect::Hermes, text);
        assert_eq!(calls.len(), 1);
        assert_eq!(
            calls[0].named[0].1,
            Value::String("}]</tool_call>\"{".into())
        );
        assert_eq!(calls[0].span.start, 1);
        assert_eq!(calls[0].span.end, text.len() as u64 - 1);
        assert!(matches!(events.last(), Some(Event::Text { text }) if text == "b"));
    }

    #[test]
    fn an_array_is_several_calls_and_an_unterminated_block_is_malformed() {
        let text = "<tool_call>[{\"name\": \"f\", \"arguments\": {}}, {\"name\": \"g\", \"arguments\": {\"x\": 1}}]</tool_call>";
        let (_, calls) = read_at_every_chunking(Dialect::Hermes, text);
        assert_eq!(
            calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            ["f", "g"]
        );
        assert_eq!(calls[0].span.end, calls[1].span.start);
        let (events, calls) =
            read_at_every_chunking(Dialect::Hermes, "x<tool_call>{\"name\": \"f\"}");
        assert!(calls.is_empty());
        assert!(
            matches!(&events[2], Event::Malformed { text, .. } if text.starts_with("<tool_call>"))
        );
    }
}
