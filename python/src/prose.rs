//! The text around calls, as `atfunc parse --text` prints it: `{"text": ...}` records of
//! adjacent text merged, and `{"invalid_utf8": hex, "span", "chars"}` records of bytes that
//! are not UTF-8, so that the records do not depend on how the input was chunked.

use atfunc::batch;
use atfunc::Span;
use serde_json::{json, Value as Json};
use std::fmt::Write as _;

/// A text record is cut at this many bytes (the CLI's limit: memory stays bounded on
/// endless prose and the cuts do not depend on the chunking). The tests compare with it.
const TEXT_RECORD_LIMIT: usize = 64 * 1024;

/// Text and invalid bytes not given out yet; only one of them is held at a time.
#[derive(Default)]
pub(crate) struct Prose {
    text: String,
    invalid: Vec<u8>,
    /// Where `invalid` stands; `Some` exactly while it holds bytes.
    invalid_span: Option<Span>,
}

impl Prose {
    /// Text that is not part of a call.
    pub(crate) fn text(&mut self, text: &str, out: &mut Vec<Json>) {
        self.flush_invalid(out);
        self.text.push_str(text);
        while self.text.len() >= TEXT_RECORD_LIMIT {
            let mut at = TEXT_RECORD_LIMIT;
            while !self.text.is_char_boundary(at) {
                at -= 1;
            }
            let rest = self.text.split_off(at);
            let full = std::mem::replace(&mut self.text, rest);
            out.push(json!({ "text": full }));
        }
    }

    /// Bytes that are not UTF-8, at `span`.
    pub(crate) fn invalid(&mut self, bytes: &[u8], span: Span, out: &mut Vec<Json>) {
        self.flush_text(out);
        match &mut self.invalid_span {
            Some(held) if held.end == span.start => {
                *held = Span::new(held.start, span.end).with_chars(held.char_start, span.char_end);
            }
            _ => {
                self.flush_invalid(out);
                self.invalid_span = Some(span);
            }
        }
        self.invalid.extend_from_slice(bytes);
        if self.invalid.len() >= TEXT_RECORD_LIMIT {
            self.flush_invalid(out);
        }
    }

    /// Gives out everything held: before a call's record, and at the end.
    pub(crate) fn flush(&mut self, out: &mut Vec<Json>) {
        self.flush_invalid(out);
        self.flush_text(out);
    }

    fn flush_text(&mut self, out: &mut Vec<Json>) {
        if !self.text.is_empty() {
            out.push(json!({ "text": std::mem::take(&mut self.text) }));
        }
    }

    fn flush_invalid(&mut self, out: &mut Vec<Json>) {
        if let Some(span) = self.invalid_span.take() {
            let mut hex = String::with_capacity(self.invalid.len() * 2);
            for byte in self.invalid.drain(..) {
                let _ = write!(hex, "{byte:02x}");
            }
            let mut record = json!({ "invalid_utf8": hex });
            batch::add_span(&mut record, span);
            out.push(record);
        }
    }
}
