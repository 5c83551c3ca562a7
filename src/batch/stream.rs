//! The records `atfunc parse` prints, for a stream of chunks: one implementation that the
//! CLI and the Python package share, so their records agree on every chunking.

use super::{add_span, call_record, malformed_record, parser_config, CallHead, RecordOptions};
use crate::parse::{Dialect, Span};
use crate::{Catalog, Event, StreamParser};
use serde_json::{json, Value as Json};
use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::Arc;

/// A text record is cut at this many bytes, so memory stays bounded on endless prose and
/// the cut points do not depend on how the input was chunked.
pub const TEXT_RECORD_LIMIT: usize = 64 * 1024;

/// Chunks of a completion in, the records `atfunc parse` prints out: a call record for
/// each call (bound against the catalog when there is one), an error record for each
/// malformed span, and with [`with_text`](Self::with_text) the text around them as
/// `{"text": ...}` records (adjacent text merged, cut at [`TEXT_RECORD_LIMIT`] bytes) and
/// bytes that are not UTF-8 as `{"invalid_utf8": hex, "span", "chars"}`.
///
/// The records of all the chunks together equal those of the whole text fed at once,
/// however it was split.
///
/// ```
/// use atfunc::batch::RecordStream;
///
/// let mut stream = RecordStream::new(None).with_text(true);
/// let mut records = Vec::new();
/// for chunk in ["Sure: @a.b(1, ", "x=2) done"] {
///     stream.feed(chunk.as_bytes(), &mut records);
/// }
/// stream.finish(&mut records);
/// assert_eq!(records[0]["text"], "Sure: ");
/// assert_eq!(records[1]["name"], "a.b");
/// assert_eq!(records[2]["text"], " done");
/// ```
pub struct RecordStream {
    parser: StreamParser,
    catalog: Option<Arc<Catalog>>,
    head: CallHead,
    /// Reused between chunks; empty between calls to `feed`.
    events: Vec<Event>,
    /// The text around calls, when it is wanted.
    prose: Option<Prose>,
    /// For a dialect other than atfunc, whose calls do not start with `@name(` as
    /// [`CallHead`] expects: the bytes the parser may still hand out (those it holds and
    /// the last chunk), from this absolute offset, for the `raw` field of error records.
    recent: Option<(u64, Vec<u8>)>,
}

impl RecordStream {
    /// A stream whose calls bind against `catalog`, or stay unbound without one.
    pub fn new(catalog: Option<Arc<Catalog>>) -> RecordStream {
        RecordStream {
            parser: StreamParser::new(parser_config(&RecordOptions {
                catalog: catalog.as_deref(),
                ..RecordOptions::default()
            })),
            catalog,
            head: CallHead::default(),
            events: Vec::new(),
            prose: None,
            recent: None,
        }
    }

    /// Reads calls written in `dialect` (default [`Dialect::Atfunc`]; `atfunc parse
    /// --dialect`).
    pub fn with_dialect(mut self, dialect: Dialect) -> RecordStream {
        let config = parser_config(&RecordOptions {
            catalog: self.catalog.as_deref(),
            dialect,
        });
        self.parser = StreamParser::new(config);
        self.recent = (dialect != Dialect::Atfunc).then(|| (0, Vec::new()));
        self
    }

    /// Whether the text around calls is given as records too (`atfunc parse --text`).
    pub fn with_text(mut self, with_text: bool) -> RecordStream {
        self.prose = with_text.then(Prose::default);
        self
    }

    /// Feeds `chunk`; appends the records it completes to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<Json>) {
        self.head.see(chunk);
        if let Some((_, recent)) = &mut self.recent {
            recent.extend_from_slice(chunk);
        }
        self.parser.feed_into(chunk, &mut self.events);
        self.drain(chunk, out);
        // Everything before the bytes the parser holds has been handed out.
        let held = self.parser.buffered_len();
        if let Some((base, recent)) = &mut self.recent {
            let drop = recent.len().saturating_sub(held);
            recent.drain(..drop);
            *base += drop as u64;
        }
    }

    /// Ends the stream and appends the last records to `out`; the stream can start again.
    pub fn finish(&mut self, out: &mut Vec<Json>) {
        self.parser.finish_into(&mut self.events);
        self.drain(&[], out);
        if let Some(prose) = &mut self.prose {
            prose.flush(out);
        }
        self.head = CallHead::default();
        if let Some(recent) = &mut self.recent {
            *recent = (0, Vec::new());
        }
    }

    fn drain(&mut self, chunk: &[u8], out: &mut Vec<Json>) {
        for event in self.events.drain(..) {
            match event {
                Event::CallStarted { name, start } => self.head.start(start, &name, chunk),
                Event::Text { text } => {
                    if let Some(prose) = &mut self.prose {
                        prose.text(&text, out);
                    }
                }
                Event::InvalidUtf8 { bytes, span } => {
                    if let Some(prose) = &mut self.prose {
                        prose.invalid(&bytes, span, out);
                    }
                }
                Event::Call(call) => {
                    if let Some(prose) = &mut self.prose {
                        prose.flush(out);
                    }
                    let head = &self.head;
                    let recent = &self.recent;
                    let options = RecordOptions {
                        catalog: self.catalog.as_deref(),
                        ..RecordOptions::default()
                    };
                    let record = call_record(&call, &options, || match recent {
                        Some((base, bytes)) => {
                            let from = usize::try_from(call.span.start.saturating_sub(*base));
                            let to = usize::try_from(call.span.end.saturating_sub(*base));
                            let text = match (from, to) {
                                (Ok(from), Ok(to)) => bytes.get(from..to).unwrap_or_default(),
                                _ => &[],
                            };
                            String::from_utf8_lossy(text)
                        }
                        None => Cow::Owned(head.raw(call.span.len())),
                    });
                    out.push(record.into_json());
                    self.head.stop();
                }
                Event::Malformed { span, error, text } => {
                    if let Some(prose) = &mut self.prose {
                        prose.flush(out);
                    }
                    out.push(malformed_record(span, &error, &text));
                    self.head.stop();
                }
            }
        }
    }
}

/// Text and invalid bytes not given out yet; only one of them is held at a time, so the
/// records keep text order.
#[derive(Default)]
struct Prose {
    text: String,
    invalid: Vec<u8>,
    /// Where `invalid` stands; `Some` exactly while it holds bytes.
    invalid_span: Option<Span>,
}

impl Prose {
    /// Text that is not part of a call.
    fn text(&mut self, text: &str, out: &mut Vec<Json>) {
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

    /// Bytes that are not UTF-8, at `span`; adjacent runs merge into one record.
    fn invalid(&mut self, bytes: &[u8], span: Span, out: &mut Vec<Json>) {
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
    fn flush(&mut self, out: &mut Vec<Json>) {
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
            add_span(&mut record, span);
            out.push(record);
        }
    }
}
