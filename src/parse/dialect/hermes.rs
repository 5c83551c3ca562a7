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

use super::block::{opened, BlockScan, Opens};
use super::scan::{json_call, json_value, BuildError, Built, Input, Match, Step, ValueScan};
use super::Dialect;

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
        let text = std::str::from_utf8(input.slice(start, value_end)).unwrap_or_default();
        match json_value(text)? {
            serde_json::Value::Array(items) => items
                .into_iter()
                .enumerate()
                .map(|(k, item)| {
                    let item_end = self.value.item_ends.get(k).copied().unwrap_or(end);
                    json_call(item, &["arguments", "parameters"], item_end)
                })
                .collect(),
            object => Ok(vec![json_call(object, &["arguments", "parameters"], end)?]),
        }
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
