//! `deepseek`: DeepSeek V3 and V3.1.
//!
//! DeepSeek-V3's chat template (`tokenizer_config.json` of deepseek-ai/DeepSeek-V3) writes
//! a call as
//!
//! ```text
//! <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
//! ```json
//! {"arg": "value"}
//! ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//! ```
//!
//! and DeepSeek-V3.1's drops the `function` type and the fence:
//! `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{"arg": "value"}<｜tool▁call▁end｜>` (llama.cpp's
//! and vLLM's `deepseek_v3` / `deepseek_v31` parsers read the same). The bars are U+FF5C
//! and the low lines U+2581. Several calls follow each other inside one
//! `<｜tool▁calls▁begin｜>` block. The closing `<｜tool▁calls▁end｜>` may be cut off with the
//! end-of-sentence token: a stream that ends after a complete call ends the block.

use super::block::{opened, BlockScan, Opens};
use super::scan::{json_args, BuildError, Built, Found, Input, Match, Step, ValueScan, MAX_NAME};
use super::Dialect;
use crate::parse::release::valid_utf8;

pub(super) const OPEN: &[u8] = "<｜tool▁calls▁begin｜>".as_bytes();
const CLOSE: &[u8] = "<｜tool▁calls▁end｜>".as_bytes();
const CALL_BEGIN: &[u8] = "<｜tool▁call▁begin｜>".as_bytes();
const CALL_END: &[u8] = "<｜tool▁call▁end｜>".as_bytes();
const SEP: &[u8] = "<｜tool▁sep｜>".as_bytes();

pub(super) fn opens(input: &Input<'_>, i: u64) -> Opens {
    match input.marker(i, OPEN) {
        Match::Yes(end) => opened(Deepseek::default(), end),
        Match::Need => Opens::Need,
        Match::No => Opens::No,
    }
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Between calls: `<｜tool▁call▁begin｜>` or `<｜tool▁calls▁end｜>`.
    #[default]
    Between,
    /// Before `<｜tool▁sep｜>`: the name (V3.1) or `function` (V3).
    Head,
    /// V3: the name, up to the line break.
    Name,
    /// V3: the opening fence.
    Fence,
    Args,
    /// V3: the closing fence.
    FenceEnd,
    /// `<｜tool▁call▁end｜>`.
    CallEnd,
}

#[derive(Debug, Clone, Copy, Default)]
struct Piece {
    name: (u64, u64),
    args: (u64, u64),
    end: u64,
}

#[derive(Debug, Default)]
struct Deepseek {
    phase: Phase,
    /// Where the current name (or head) starts.
    from: u64,
    current: Piece,
    calls: Vec<Piece>,
    value: ValueScan,
}

impl BlockScan for Deepseek {
    fn scan(&mut self, input: &Input<'_>, pos: &mut u64, max_depth: usize) -> Step {
        loop {
            match self.phase {
                Phase::Between => {
                    // `*pos` stays at the last call's end until a marker is seen: the block
                    // may end there, and the blanks, looked at again per chunk, are bounded.
                    let p = input.skip_ws(*pos);
                    if p - *pos > MAX_NAME {
                        let what = "`<｜tool▁call▁begin｜>` or `<｜tool▁calls▁end｜>`";
                        return input.expected(*pos + MAX_NAME, what);
                    }
                    match input.closing(p, CLOSE) {
                        Match::Yes(end) => return Step::Done(end),
                        Match::Need => return Step::Need,
                        Match::No => {}
                    }
                    match input.closing(p, CALL_BEGIN) {
                        Match::Yes(end) => {
                            *pos = end;
                            self.from = end;
                            self.phase = Phase::Head;
                        }
                        _ if p == input.end() && input.eof && !self.calls.is_empty() => {
                            return Step::Done(self.calls.last().map_or(p, |c| c.end));
                        }
                        Match::Need => return Step::Need,
                        Match::No if p == input.end() => return Step::Need,
                        Match::No => {
                            return input
                                .expected(p, "`<｜tool▁call▁begin｜>` or `<｜tool▁calls▁end｜>`")
                        }
                    }
                }
                Phase::Head => match input.find(*pos, SEP) {
                    Found::At(at) if at - self.from <= MAX_NAME => {
                        let head = input.slice(self.from, at);
                        *pos = at + SEP.len() as u64;
                        if head.trim_ascii() == b"function" {
                            self.from = *pos;
                            self.phase = Phase::Name;
                        } else {
                            self.current.name = (self.from, at);
                            self.value = ValueScan::json(1);
                            self.phase = Phase::Args;
                        }
                    }
                    Found::Before(safe) if safe - self.from <= MAX_NAME => {
                        *pos = safe;
                        return Step::Need;
                    }
                    _ => {
                        return input
                            .expected(self.from + MAX_NAME, "`<｜tool▁sep｜>` after a name")
                    }
                },
                Phase::Name => match memchr::memchr(b'\n', input.rest(*pos)) {
                    Some(k) if *pos + k as u64 - self.from <= MAX_NAME => {
                        let at = *pos + k as u64;
                        self.current.name = (self.from, at);
                        *pos = at + 1;
                        self.phase = Phase::Fence;
                    }
                    None if input.end() - self.from <= MAX_NAME => {
                        *pos = input.end();
                        return Step::Need;
                    }
                    _ => {
                        return input.expected(self.from + MAX_NAME, "a line break after the name")
                    }
                },
                Phase::Fence => {
                    let p = input.skip_ws(*pos);
                    *pos = p;
                    match input.closing(p, b"```json") {
                        Match::Yes(end) => *pos = end,
                        Match::Need => return Step::Need,
                        Match::No if p == input.end() => return Step::Need,
                        Match::No => {}
                    }
                    self.value = ValueScan::json(1);
                    self.phase = Phase::Args;
                }
                Phase::Args => match self.value.scan(input, pos, max_depth) {
                    Step::Done(end) => {
                        self.current.args = (self.value.start.unwrap_or(end), end);
                        // V3's closing fence; V3.1 has none, and `FenceEnd` passes over it.
                        self.phase = Phase::FenceEnd;
                    }
                    other => return other,
                },
                Phase::FenceEnd => {
                    let p = input.skip_ws(*pos);
                    *pos = p;
                    match input.closing(p, b"```") {
                        Match::Yes(end) => *pos = end,
                        Match::Need => return Step::Need,
                        Match::No if p == input.end() => return Step::Need,
                        Match::No => {}
                    }
                    self.phase = Phase::CallEnd;
                }
                Phase::CallEnd => {
                    let p = input.skip_ws(*pos);
                    *pos = p;
                    match input.closing(p, CALL_END) {
                        Match::Yes(end) => {
                            *pos = end;
                            self.current.end = end;
                            self.calls.push(self.current);
                            self.current = Piece::default();
                            self.phase = Phase::Between;
                        }
                        Match::Need => return Step::Need,
                        Match::No if p == input.end() => return Step::Need,
                        Match::No => return input.expected(p, "`<｜tool▁call▁end｜>`"),
                    }
                }
            }
        }
    }

    fn build(&self, input: &Input<'_>, _start: u64, _end: u64) -> Result<Vec<Built>, BuildError> {
        self.calls
            .iter()
            .map(|piece| {
                let name = String::from_utf8_lossy(input.slice(piece.name.0, piece.name.1));
                let args = valid_utf8(input.slice(piece.args.0, piece.args.1)).unwrap_or_default();
                Ok(Built {
                    name: name.trim().to_owned(),
                    positional: Vec::new(),
                    named: json_args(args)?,
                    end: piece.end,
                })
            })
            .collect()
    }

    fn dialect(&self) -> Dialect {
        Dialect::Deepseek
    }

    fn awaits(&self) -> &'static str {
        "`<｜tool▁calls▁begin｜>` block"
    }
}

#[cfg(test)]
mod tests {
    use super::super::read_at_every_chunking;
    use super::*;

    #[test]
    fn v3_and_v3_1() {
        let v3 = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Tokyo\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
        let (_, calls) = read_at_every_chunking(Dialect::Deepseek, v3);
        assert_eq!(
            calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            ["get_weather", "f"]
        );
        let v31 = "ok<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"<｜tool▁call▁end｜>\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
        let (_, calls) = read_at_every_chunking(Dialect::Deepseek, v31);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].span.start, 2);
    }
}
