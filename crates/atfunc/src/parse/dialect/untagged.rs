//! Calls without a marker of their own count only where the answer is nothing but calls.
//!
//! A bare JSON call object (`{"name": …}`, Qwen 2.5 under its own template, Llama 3's
//! JSON calls) or a Python list of calls (`[f(x=1)]`) carries nothing that says "this is
//! a call": the same text is how a model shows an example in an explanation
//! ("you would write `{"name": "file.delete", …}`, but I will not"). So such a block is a
//! call only where the answer is made of calls alone, as the formats' own servers read
//! them (vLLM's `llama3_json` and `pythonic` parsers take the whole output or nothing):
//! the text outside calls is blank, but for Markdown fence lines (```` ```json ```` and
//! ```` ``` ````) on lines of their own, around the calls. Calls behind a marker
//! (`<tool_call>`, `<|python_tag|>`, `[TOOL_CALLS]`, …) are read wherever they stand and
//! count as calls here.
//!
//! Whether other text follows is known only later, so the reader holds an untagged block's
//! events, and every event after them, until the answer ends (they go out as they are) or
//! prose shows (the untagged blocks go out as their text, the rest as it was). Text before
//! an untagged block is known at its opening: once the answer holds prose, no untagged
//! block opens at all, so its bytes are read as text would be (a marker inside its strings
//! is then a marker).
//!
//! What is held is bounded: the blocks held and the text between them (blanks and fence
//! lines) together go up to [`ParserConfig::max_call_len`](crate::parse::ParserConfig::max_call_len);
//! past it the untagged blocks are text, as if prose had shown.

use super::Dialect;
use crate::parse::Event;

/// The text outside calls seen so far, one byte at a time: where the next byte stands on
/// its line, and whether anything but blanks and fence lines was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// At the start of the answer or of a line, blanks at most before.
    LineStart,
    /// Blanks after a call on its line.
    AfterCall,
    /// `n` backticks (1 or 2) at the start of a line.
    Ticks(u8),
    /// Three backticks, then the info string's characters (`json`).
    Info,
    /// Blanks after a fence line's backticks or info string.
    InfoBlanks,
    /// Anything else: the answer holds prose. Never left.
    Prose,
}

impl Shape {
    fn step(self, byte: u8) -> Shape {
        let blank = matches!(byte, b' ' | b'\t' | b'\r');
        match (self, byte) {
            (Shape::Prose, _) => Shape::Prose,
            (_, b'\n') if self != Shape::Ticks(1) && self != Shape::Ticks(2) => Shape::LineStart,
            (Shape::LineStart, _) if blank => Shape::LineStart,
            (Shape::LineStart, b'`') => Shape::Ticks(1),
            (Shape::AfterCall, _) if blank => Shape::AfterCall,
            (Shape::Ticks(n), b'`') if n < 2 => Shape::Ticks(n + 1),
            (Shape::Ticks(_), b'`') => Shape::Info,
            (Shape::Info, _)
                if byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'+') =>
            {
                Shape::Info
            }
            (Shape::Info | Shape::InfoBlanks, _) if blank => Shape::InfoBlanks,
            _ => Shape::Prose,
        }
    }
}

/// One thing held: an event as it is, or an untagged block's events with its text.
#[derive(Debug)]
enum Held {
    Event(Event),
    Untagged { events: Vec<Event>, text: String },
}

/// The shape of the answer's text outside calls and the events held behind an untagged
/// block (see the module doc). Owned by the reader, which feeds it every byte of text it
/// releases and every block it completes.
#[derive(Debug)]
pub(super) struct Untagged {
    shape: Shape,
    /// Text before this offset has been taken into `shape`, or was a block's. Absolute.
    pub shaped: u64,
    /// Since the first untagged block not yet decided, in order; empty when nothing waits.
    held: Vec<Held>,
    /// Bytes of `held`: its texts and its blocks' spans.
    held_len: u64,
    /// Whether the first dialect seen (`auto`) was chosen by a held block: when the block
    /// turns out to be text, what was seen is `fallback`: the first block with a marker
    /// read after it, if any.
    pub chose: bool,
    pub fallback: Option<Dialect>,
}

impl Untagged {
    pub(super) fn new() -> Untagged {
        Untagged {
            shape: Shape::LineStart,
            shaped: 0,
            held: Vec::new(),
            held_len: 0,
            chose: false,
            fallback: None,
        }
    }

    /// Whether the answer holds prose: no untagged block opens any more.
    pub(super) fn prose(&self) -> bool {
        self.shape == Shape::Prose
    }

    /// Whether events are held behind an untagged block.
    pub(super) fn holding(&self) -> bool {
        !self.held.is_empty()
    }

    /// Takes text bytes (at `shaped` and on) into the shape. Returns whether this made the
    /// answer prose while events were held: the caller then lets them go as text.
    pub(super) fn text(&mut self, bytes: &[u8]) -> bool {
        self.shaped += bytes.len() as u64;
        if self.shape == Shape::Prose {
            return false;
        }
        for &b in bytes {
            self.shape = self.shape.step(b);
            if self.shape == Shape::Prose {
                return self.holding();
            }
        }
        false
    }

    /// A block (untagged or not) ended at `end`: the text after it starts there, on the
    /// block's last line.
    pub(super) fn block_ended(&mut self, end: u64) {
        self.shaped = end;
        if self.shape != Shape::Prose {
            self.shape = Shape::AfterCall;
        }
    }

    /// Holds events that follow a held block (text, or a marker block's events).
    /// `len` is how many bytes of the input they stand for. Returns whether the hold
    /// went over `limit`: the caller then lets them go as text.
    pub(super) fn hold(
        &mut self,
        events: impl IntoIterator<Item = Event>,
        len: u64,
        limit: u64,
    ) -> bool {
        self.held.extend(events.into_iter().map(Held::Event));
        self.grow(len, limit)
    }

    /// Holds an untagged block's events, with its text for when it turns out to be text.
    pub(super) fn hold_untagged(&mut self, events: Vec<Event>, text: String, limit: u64) -> bool {
        let len = text.len() as u64;
        self.held.push(Held::Untagged { events, text });
        self.grow(len, limit)
    }

    fn grow(&mut self, len: u64, limit: u64) -> bool {
        self.held_len = self.held_len.saturating_add(len);
        if self.held_len > limit {
            self.shape = Shape::Prose;
            return true;
        }
        false
    }

    /// Lets the held events go: as they are when the answer stayed calls only, or with
    /// each untagged block as its text once it holds prose. Adjacent texts are joined.
    pub(super) fn release(&mut self, out: &mut Vec<Event>) {
        let as_text = self.shape == Shape::Prose;
        self.held_len = 0;
        if !as_text {
            self.chose = false;
            self.fallback = None;
        }
        for held in self.held.drain(..) {
            let event = match held {
                Held::Untagged { events, .. } if !as_text => {
                    out.extend(events);
                    continue;
                }
                Held::Untagged { text, .. } => Event::Text { text },
                Held::Event(event) => event,
            };
            match (event, out.last_mut()) {
                (Event::Text { text }, Some(Event::Text { text: last })) if as_text => {
                    last.push_str(&text)
                }
                (event, _) => out.push(event),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(text: &str) -> Shape {
        text.bytes().fold(Shape::LineStart, Shape::step)
    }

    #[test]
    fn blanks_and_fence_lines_are_no_prose() {
        for text in [
            "",
            " \n\t\r\n",
            "```json\n",
            "  ```JSON  \r\n",
            "```\n\n```",
            "```",
        ] {
            assert_ne!(shape(text), Shape::Prose, "{text:?}");
        }
        for text in [
            "a",
            "Sure:\n",
            "``json\n",
            "````\n",
            "```json x\n",
            "```\n.",
            "`\n",
        ] {
            assert_eq!(shape(text), Shape::Prose, "{text:?}");
        }
    }

    #[test]
    fn after_a_call_only_blanks_stay_on_its_line() {
        let mut s = Shape::AfterCall;
        for b in *b" \t\n```\n" {
            s = s.step(b);
        }
        assert_eq!(s, Shape::LineStart);
        assert_eq!(Shape::AfterCall.step(b'`'), Shape::Prose);
        assert_eq!(Shape::AfterCall.step(b';'), Shape::Prose);
    }

    #[test]
    fn held_blocks_go_out_as_text_once_prose_shows() {
        let mut u = Untagged::new();
        let call = Event::CallStarted {
            name: "f".into(),
            start: 0,
        };
        assert!(!u.hold_untagged(vec![call.clone()], "{\"name\": \"f\"}".into(), 100));
        u.block_ended(13);
        assert!(!u.hold([Event::Text { text: "\n".into() }], 1, 100));
        assert!(!u.text(b"\n"));
        assert!(u.text(b"but"));
        let mut out = Vec::new();
        u.release(&mut out);
        assert_eq!(
            out,
            [Event::Text {
                text: "{\"name\": \"f\"}\n".into()
            }]
        );
        // Calls only: the events as they were.
        let mut u = Untagged::new();
        u.hold_untagged(vec![call.clone()], "x".into(), 100);
        let mut out = Vec::new();
        u.release(&mut out);
        assert_eq!(out, [call]);
    }

    #[test]
    fn over_the_limit_is_prose() {
        let mut u = Untagged::new();
        assert!(!u.hold_untagged(Vec::new(), "abc".into(), 5));
        assert!(u.hold([], 3, 5));
        assert!(u.prose());
    }
}
