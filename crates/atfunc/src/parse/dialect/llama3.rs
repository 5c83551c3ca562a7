//! `llama3`: Llama 3.1, 3.2 and 3.3 with JSON tool calls.
//!
//! Meta's Llama 3.1 chat template (`tokenizer_config.json` of
//! Llama-3.1-8B-Instruct; vLLM's `llama3_json` parser reads the same) asks for a call as
//! `{"name": function name, "parameters": dictionary of argument name and its value}`;
//! calls to built-in tools follow `<|python_tag|>`, which models also put before custom
//! calls. Several calls are separated by `;`. `"arguments"` is read like `"parameters"`.
//!
//! A block opens at `<|python_tag|>`, or at a `{` whose first key is `"name"`, and holds one
//! call object; a `;` after it chains the next object, a block of its own whose span starts
//! at the `;`. The chain ends after the last object that no `;` follows.

use super::block::{opened, BlockScan, Opens};
use super::scan::{json_call, json_value, BuildError, Built, Input, Match, Step, ValueScan};
use super::Dialect;
use crate::parse::release::valid_utf8;

pub(super) const PYTHON_TAG: &[u8] = b"<|python_tag|>";

/// Most blanks between `{` and `"name"` at a bare opening, and after an object while
/// waiting to see whether a `;` follows.
const MAX_BLANKS: u64 = 64;

pub(super) fn opens(input: &Input<'_>, i: u64) -> Opens {
    match input.byte(i) {
        Some(b'<') => match input.marker(i, PYTHON_TAG) {
            Match::Yes(end) => opened(Llama3::new(false), end),
            Match::Need => Opens::Need,
            Match::No => Opens::No,
        },
        Some(b'{') => {
            let p = input.skip_ws(i + 1);
            if p - i > MAX_BLANKS {
                return Opens::No;
            }
            match input.marker(p, b"\"name\"") {
                Match::Yes(_) => opened(Llama3::new(true), i),
                Match::Need => Opens::Need,
                Match::No if p == input.end() && !input.eof => Opens::Need,
                Match::No => Opens::No,
            }
        }
        _ => Opens::No,
    }
}

#[derive(Debug)]
struct Llama3 {
    value: ValueScan,
    /// The object read, `start..end`, once it is complete; then the scanner looks for `;`.
    object: Option<(u64, u64)>,
    /// Where the next link of the chain resumes, once a `;` was seen after the object.
    next: Option<u64>,
    /// Whether the chain opened at a bare `{` rather than at `<|python_tag|>`: its calls
    /// have no marker of their own.
    bare: bool,
}

impl Llama3 {
    fn new(bare: bool) -> Llama3 {
        Llama3 {
            // The call object and its arguments are the call's structure.
            value: ValueScan::json(2),
            object: None,
            next: None,
            bare,
        }
    }
}

/// A block is one call object. A `;` after it ends the block there and chains the next
/// object as a block of its own (see [`BlockScan::chained`]): a chain of any length is
/// handed out call by call and never held whole.
impl BlockScan for Llama3 {
    fn scan(&mut self, input: &Input<'_>, pos: &mut u64, max_depth: usize) -> Step {
        let last = match self.object {
            Some((_, end)) => end,
            None => {
                if self.value.start.is_none() {
                    // An object, told at its first byte: deciding later would let the call
                    // limit or a later byte give another reason in another chunking.
                    let p = input.skip_ws(*pos);
                    match input.byte(p) {
                        None => {
                            *pos = p;
                            return Step::Need;
                        }
                        Some(b'{') => {}
                        Some(_) => return input.expected(p, "a JSON object"),
                    }
                }
                match self.value.scan(input, pos, max_depth) {
                    Step::Done(end) => {
                        let start = self.value.start.unwrap_or(end);
                        self.object = Some((start, end));
                        end
                    }
                    other => return other,
                }
            }
        };
        // `*pos` stays at the object's end until a `;` is seen: the block may end there,
        // and the blanks after it, looked at again per chunk, are at most MAX_BLANKS.
        let p = input.skip_ws(*pos);
        if p - last > MAX_BLANKS {
            return Step::Done(last);
        }
        match input.byte(p) {
            Some(b';') => {
                self.next = Some(p + 1);
                Step::Done(last)
            }
            None if !input.eof => Step::Need,
            _ => Step::Done(last),
        }
    }

    fn build(&self, input: &Input<'_>, _start: u64, end: u64) -> Result<Vec<Built>, BuildError> {
        let Some((start, object_end)) = self.object else {
            return Err(("a JSON call object".into(), "none".into()));
        };
        let text = valid_utf8(input.slice(start, object_end)).unwrap_or_default();
        Ok(vec![json_call(
            json_value(text)?,
            &["parameters", "arguments"],
            end,
        )?])
    }

    fn chained(&mut self) -> Option<(Box<dyn BlockScan>, u64)> {
        let from = self.next.take()?;
        Some((Box::new(Llama3::new(self.bare)), from))
    }

    fn untagged(&self) -> bool {
        self.bare
    }

    fn dialect(&self) -> Dialect {
        Dialect::Llama3
    }

    fn awaits(&self) -> &'static str {
        "JSON call object"
    }
}

#[cfg(test)]
mod tests {
    use super::super::read_at_every_chunking;
    use super::*;

    #[test]
    fn tagged_bare_and_semicolon_separated() {
        let text = "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"a\": \";\"}}; {\"name\": \"g\", \"arguments\": {}}";
        let (_, calls) = read_at_every_chunking(Dialect::Llama3, text);
        assert_eq!(
            calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            ["f", "g"]
        );
        let (_, calls) = read_at_every_chunking(
            Dialect::Llama3,
            "{\"name\": \"h\", \"parameters\": {}}; {\"name\": \"i\", \"parameters\": {}}\n",
        );
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].span.end, 31);
        // A bare object has no marker of its own: with prose before or after it, it is
        // text; behind `<|python_tag|>` it is a call wherever it stands.
        for (text, n) in [
            ("{\"name\": \"h\", \"parameters\": {}} done", 0),
            ("So: {\"name\": \"h\", \"parameters\": {}}", 0),
            (
                "So: <|python_tag|>{\"name\": \"h\", \"parameters\": {}} done",
                1,
            ),
        ] {
            let (_, calls) = read_at_every_chunking(Dialect::Llama3, text);
            assert_eq!(calls.len(), n, "{text}");
        }
        let (_, calls) = read_at_every_chunking(Dialect::Llama3, "a {\"x\": 1} b");
        assert!(calls.is_empty());
    }
}
