//! `harmony`: gpt-oss.
//!
//! OpenAI's harmony response format (the `openai-harmony` crate's guide; vLLM's
//! `openai` tool parser reads the same) addresses a function call to its recipient in the
//! message header:
//!
//! ```text
//! <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{"arg": 1}<|call|>
//! ```
//!
//! A header is read from `<|channel|>` to `<|message|>`; one with a `to=functions.`
//! recipient opens a call, any other (`analysis`, `final`) is text. The call ends at
//! `<|call|>`; a stream that ends without it (a token limit can cut the arguments at a
//! point where they still parse) is an unterminated block, never a call, as in every
//! dialect. A server that stops at `<|call|>` must pass it on.

use super::block::{opened, BlockScan, Opens};
use super::scan::{json_args, BuildError, Built, Input, Match, Step, ValueScan};
use super::Dialect;
use crate::parse::release::valid_utf8;

pub(super) const OPEN: &[u8] = b"<|channel|>";
const MESSAGE: &[u8] = b"<|message|>";
const CALL: &[u8] = b"<|call|>";
const RECIPIENT: &[u8] = b"to=functions.";
/// Longest header from `<|channel|>` to `<|message|>`.
const MAX_HEADER: u64 = 512;

pub(super) fn opens(input: &Input<'_>, i: u64) -> Opens {
    match input.marker(i, OPEN) {
        Match::Yes(_) => {}
        Match::Need => return Opens::Need,
        Match::No => return Opens::No,
    }
    let header = input.rest(i);
    let header = header.get(..MAX_HEADER as usize).unwrap_or(header);
    let Some(k) = memchr::memmem::find(header, MESSAGE) else {
        let bounded = header.len() as u64 >= MAX_HEADER;
        return if input.eof || bounded {
            Opens::No
        } else {
            Opens::Need
        };
    };
    let head = header.get(..k).unwrap_or_default();
    let Some(r) = memchr::memmem::find(head, RECIPIENT) else {
        return Opens::No;
    };
    let name_start = r + RECIPIENT.len();
    let name_len = head
        .get(name_start..)
        .unwrap_or_default()
        .iter()
        .take_while(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'<'))
        .count();
    if name_len == 0 {
        return Opens::No;
    }
    let at = |n: usize| i + n as u64;
    let block = Harmony {
        name: (at(name_start), at(name_start + name_len)),
        value: ValueScan::json(1),
        value_end: None,
    };
    opened(block, at(k + MESSAGE.len()))
}

#[derive(Debug)]
struct Harmony {
    name: (u64, u64),
    value: ValueScan,
    value_end: Option<u64>,
}

impl BlockScan for Harmony {
    fn scan(&mut self, input: &Input<'_>, pos: &mut u64, max_depth: usize) -> Step {
        if self.value_end.is_none() {
            let step = self.value.scan(input, pos, max_depth);
            if let Step::Done(end) = step {
                self.value_end = Some(end);
                return self.scan(input, pos, max_depth);
            }
            return step;
        }
        // Blanks are passed once: a long run of them is not looked at again per chunk.
        let p = input.skip_ws(*pos);
        *pos = p;
        match input.closing(p, CALL) {
            Match::Yes(end) => Step::Done(end),
            Match::Need => Step::Need,
            // Without `<|call|>`, even at the end of the stream, the message may have been
            // cut short: unterminated, as for every dialect.
            Match::No if p == input.end() => Step::Need,
            Match::No => input.expected(p, "`<|call|>`"),
        }
    }

    fn build(&self, input: &Input<'_>, _start: u64, end: u64) -> Result<Vec<Built>, BuildError> {
        let (Some(start), Some(value_end)) = (self.value.start, self.value_end) else {
            return Err(("JSON arguments".into(), "none".into()));
        };
        let args = valid_utf8(input.slice(start, value_end)).unwrap_or_default();
        Ok(vec![Built {
            name: String::from_utf8_lossy(input.slice(self.name.0, self.name.1)).into_owned(),
            positional: Vec::new(),
            named: json_args(args)?,
            end,
        }])
    }

    fn dialect(&self) -> Dialect {
        Dialect::Harmony
    }

    fn awaits(&self) -> &'static str {
        "harmony call (no `<|call|>`)"
    }
}

#[cfg(test)]
mod tests {
    use super::super::read_at_every_chunking;
    use super::*;

    #[test]
    fn commentary_to_a_function() {
        let text = "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"<|call|>\"}<|call|>";
        let (events, calls) = read_at_every_chunking(Dialect::Harmony, text);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "get_weather");
        assert!(
            matches!(&events[0], crate::parse::Event::Text { text } if text.starts_with("<|channel|>analysis"))
        );
    }

    #[test]
    fn without_call_at_the_end_of_input_is_unterminated() {
        for tail in ["", "\n", "<|ca"] {
            let text = format!("<|channel|>commentary to=functions.f <|constrain|>json<|message|>{{\"a\": 1}}{tail}");
            let (events, calls) = read_at_every_chunking(Dialect::Harmony, &text);
            assert!(calls.is_empty(), "{text}");
            assert!(
                events
                    .iter()
                    .any(|e| matches!(e, crate::parse::Event::Malformed { error, .. }
                    if matches!(error.kind, crate::parse::ParseErrorKind::Unterminated { .. }))),
                "{text}: {events:?}"
            );
        }
    }
}
