//! `mistral`: Mistral 7B v0.3, Mixtral 8x22B, Nemo, Small and Large.
//!
//! Mistral's tokenizers (`mistral-common`; vLLM's `mistral` tool parser) open tool calls
//! with the `[TOOL_CALLS]` token. Up to tokenizer v3 it is followed by a JSON array,
//! `[TOOL_CALLS] [{"name": "f", "arguments": {...}}, ...]`; from v11 on each call is
//! `[TOOL_CALLS]name[ARGS]{...}`, one marker per call.

use super::block::{opened, BlockScan, Opens};
use super::scan::{
    json_args, json_call, json_value, BuildError, Built, Input, Match, Step, ValueScan, MAX_NAME,
};
use super::Dialect;
use crate::parse::release::valid_utf8;
use crate::parse::Value;

pub(super) const OPEN: &[u8] = b"[TOOL_CALLS]";
const ARGS: &[u8] = b"[ARGS]";

pub(super) fn opens(input: &Input<'_>, i: u64) -> Opens {
    match input.marker(i, OPEN) {
        Match::Yes(end) => opened(Mistral::default(), end),
        Match::Need => Opens::Need,
        Match::No => Opens::No,
    }
}

#[derive(Debug, Default)]
struct Mistral {
    /// The name, `start..end`, in the `name[ARGS]` form; its start once known.
    name: Option<(u64, Option<u64>)>,
    /// Whether the block is a JSON array (the older form).
    array: bool,
    value: ValueScan,
    value_end: Option<u64>,
}

impl BlockScan for Mistral {
    fn scan(&mut self, input: &Input<'_>, pos: &mut u64, max_depth: usize) -> Step {
        if self.name.is_none() && !self.array {
            let p = input.skip_ws(*pos);
            *pos = p;
            match input.byte(p) {
                None => return Step::Need,
                Some(b'[') => match input.marker(p, ARGS) {
                    Match::Need => return Step::Need,
                    Match::Yes(_) => return input.expected(p, "a function name or `[`"),
                    Match::No => {
                        self.array = true;
                        self.value = ValueScan::json_list(3);
                    }
                },
                Some(_) => {
                    self.name = Some((p, None));
                    self.value = ValueScan::json(1);
                }
            }
        }
        if let Some((start, None)) = self.name {
            // Name characters: letters and digits of any script, `_`, `.`, `-`.
            let rest = input.rest(*pos);
            // A name is short: look no further than its limit (and never through the rest of
            // a large input once per call).
            let rest = rest.get(..MAX_NAME as usize + 4).unwrap_or(rest);
            let (valid, cut) = match valid_utf8(rest) {
                Ok(s) => (s, false),
                Err(stop) => (stop.valid, stop.error_len.is_none()),
            };
            let run = valid
                .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '-')))
                .unwrap_or(valid.len());
            *pos += run as u64;
            if *pos - start > MAX_NAME {
                return input.expected(start + MAX_NAME, "`[ARGS]` after a function name");
            }
            if run == rest.len() || (run == valid.len() && cut) {
                return Step::Need;
            }
            match input.closing(*pos, ARGS) {
                Match::Yes(end) if *pos > start => {
                    self.name = Some((start, Some(*pos)));
                    *pos = end;
                }
                Match::Need => return Step::Need,
                _ => return input.expected(*pos, "`[ARGS]` after a function name"),
            }
        }
        let step = self.value.scan(input, pos, max_depth);
        if let Step::Done(end) = step {
            self.value_end = Some(end);
        }
        step
    }

    fn build(&self, input: &Input<'_>, _start: u64, end: u64) -> Result<Vec<Built>, BuildError> {
        let (Some(start), Some(value_end)) = (self.value.start, self.value_end) else {
            return Err(("a JSON value".into(), "none".into()));
        };
        let text = valid_utf8(input.slice(start, value_end)).unwrap_or_default();
        if let Some((name_start, Some(name_end))) = self.name {
            let name = String::from_utf8_lossy(input.slice(name_start, name_end)).into_owned();
            return Ok(vec![Built {
                name,
                positional: Vec::new(),
                named: json_args(text)?,
                end,
            }]);
        }
        match json_value(text)? {
            Value::Array(items) => items
                .into_iter()
                .enumerate()
                .map(|(k, item)| {
                    let item_end = self.value.item_ends.get(k).copied().unwrap_or(end);
                    json_call(item, &["arguments", "parameters"], item_end)
                })
                .collect(),
            _ => Err(("a JSON array of calls".into(), "an object".into())),
        }
    }

    fn dialect(&self) -> Dialect {
        Dialect::Mistral
    }

    fn awaits(&self) -> &'static str {
        "`[TOOL_CALLS]` call"
    }
}

#[cfg(test)]
mod tests {
    use super::super::read_at_every_chunking;
    use super::*;

    #[test]
    fn both_forms() {
        let text = "[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {\"q\": \"[TOOL_CALLS]]\"}}, {\"name\": \"g\", \"arguments\": {}}]";
        let (_, calls) = read_at_every_chunking(Dialect::Mistral, text);
        assert_eq!(
            calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            ["f", "g"]
        );
        let text =
            "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]uber.ride[ARGS]{}";
        let (_, calls) = read_at_every_chunking(Dialect::Mistral, text);
        assert_eq!(
            calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            ["get_weather", "uber.ride"]
        );
    }
}
