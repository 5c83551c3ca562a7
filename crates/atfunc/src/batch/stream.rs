//! The records `atfunc parse` prints, for a stream of chunks: one implementation that the
//! CLI and the Python package share, so their records agree on every chunking.
//!
//! The contract:
//! 1. Call and error records are the same on every chunking, in text order, each given out
//!    by the `feed` (or `finish`) that completes its span.
//! 2. Text records (with [`RecordStream::with_text`]) never hold a byte of a call's or an
//!    error's span: the parser releases text only once no call can start in it, and a
//!    marker that is still being read (`@name`, `<tool_call`, `[TOOL_CALLS`, ...) stays
//!    held.
//! 3. When text goes out is the [`TextRelease`]: [`PerGap`](TextRelease::PerGap) gives one
//!    record per run of text between calls, the same on every chunking (`atfunc parse
//!    --text`); [`Early`](TextRelease::Early) gives out at the end of every `feed` the text
//!    released so far, for a reader that shows an answer as it comes. Either way the text
//!    records, joined, are the same text on every chunking.

use super::{add_span, call_record, malformed_record, parser_config, CallHead, RecordOptions};
use crate::parse::{Dialect, Span};
use crate::{Catalog, Event, StreamParser};
use serde_json::{json, Value as Json};
use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::Arc;

/// A text record is cut at this many bytes, so memory stays bounded on endless prose and
/// the cut points do not depend on how the input was chunked.
pub(crate) const TEXT_RECORD_LIMIT: usize = 64 * 1024;

/// When [`RecordStream`] gives out the text around calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TextRelease {
    /// One record per run of text between calls (cut every 64 KiB),
    /// given out once the call after it, or the end, is read; the records are the same
    /// however the input was chunked. The default; what `atfunc parse --text` prints.
    #[default]
    PerGap,
    /// At the end of every [`feed`](RecordStream::feed), the text known by then not to
    /// be part of a call, so an answer without calls shows as it arrives. The cut points
    /// follow the chunks; the text, joined, is the same as with `PerGap`.
    Early,
}

/// Whether a [`RecordStream`] gives the text around calls as records too
/// (`atfunc parse --text`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TextRecords {
    /// Only call and error records (the default).
    #[default]
    Omitted,
    /// The text around calls as `{"text": ...}` records, and bytes that are not UTF-8 as
    /// `{"invalid_utf8": ...}` records.
    Included,
}

/// Chunks of a completion in, the records `atfunc parse` prints out: a call record for
/// each call (bound against the catalog when there is one), an error record for each
/// malformed span, and with [`with_text`](Self::with_text) the text around them as
/// `{"text": ...}` records (adjacent text merged, cut at 64 KiB) and
/// bytes that are not UTF-8 as `{"invalid_utf8": hex, "span", "chars"}`.
///
/// The records of all the chunks together equal those of the whole text fed at once,
/// however it was split.
///
/// ```
/// use atfunc::batch::{RecordStream, TextRecords};
///
/// let mut stream = RecordStream::new(None).with_text(TextRecords::Included);
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
    /// When `prose` gives its text out.
    release: TextRelease,
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
            release: TextRelease::PerGap,
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

    /// Whether the text around calls is given as records too (`atfunc parse --text`);
    /// [`TextRecords::Omitted`] by default.
    pub fn with_text(mut self, text: TextRecords) -> RecordStream {
        self.prose = (text == TextRecords::Included).then(Prose::default);
        self
    }

    /// When the text records go out (default [`TextRelease::PerGap`]); no effect without
    /// [`with_text`](Self::with_text).
    ///
    /// ```
    /// use atfunc::batch::{RecordStream, TextRecords, TextRelease};
    ///
    /// let mut stream = RecordStream::new(None)
    ///     .with_text(TextRecords::Included)
    ///     .with_text_release(TextRelease::Early);
    /// let mut records = Vec::new();
    /// stream.feed(b"Hello, ", &mut records);
    /// assert_eq!(records, [serde_json::json!({"text": "Hello, "})]);
    /// // An `@` may start a call: it is held until that is known.
    /// stream.feed(b"mail me @", &mut records);
    /// assert_eq!(records[1]["text"], "mail me ");
    /// stream.feed(b" home", &mut records);
    /// assert_eq!(records[2]["text"], "@ home");
    /// ```
    pub fn with_text_release(mut self, release: TextRelease) -> RecordStream {
        self.release = release;
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
        if self.release == TextRelease::Early {
            if let Some(prose) = &mut self.prose {
                // Invalid bytes stay held: they show nothing, and held they merge into one
                // record as with `PerGap`.
                prose.flush_text(out);
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One call in each dialect, calling `a.b` with `x=1` (`auto`: hermes's).
    fn call(dialect: Dialect) -> &'static str {
        match dialect {
            Dialect::Hermes | Dialect::Auto => "<tool_call>\n{\"name\": \"a.b\", \"arguments\": {\"x\": 1}}\n</tool_call>",
            Dialect::Llama3 => "<|python_tag|>{\"name\": \"a.b\", \"parameters\": {\"x\": 1}}",
            Dialect::Mistral => "[TOOL_CALLS]a.b[ARGS]{\"x\": 1}",
            Dialect::Pythonic => "[a.b(x=1)]",
            Dialect::Deepseek => "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>a.b<｜tool▁sep｜>{\"x\": 1}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            Dialect::Qwen3Xml => "<tool_call>\n<function=a.b>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>",
            Dialect::Harmony => "<|channel|>commentary to=functions.a.b <|constrain|>json<|message|>{\"x\": 1}<|call|>",
            _ => "@a.b(x=1)",
        }
    }

    /// Pieces an answer is made of: prose, the dialect's call, the call cut short (an error
    /// or text), the start of a marker, bytes that are not UTF-8.
    fn pieces(dialect: Dialect) -> Vec<Vec<u8>> {
        let call = call(dialect).as_bytes();
        let mut pieces: Vec<Vec<u8>> = [
            "Sure. ",
            "bob@example.org ",
            "é😀 ",
            "\n",
            "[",
            "<",
            "{",
            "x]",
            "<|",
            "@a.",
            "[TOOL_CALLS",
            "<tool_",
            "(1)",
            "<｜tool",
        ]
        .iter()
        .map(|p| p.as_bytes().to_vec())
        .collect();
        pieces.push(call.to_vec());
        pieces.push(call.to_vec());
        pieces.push(call.get(..call.len() / 2).unwrap_or_default().to_vec());
        pieces.push(b"\xff\xfe".to_vec());
        pieces.push("😀".as_bytes().get(..2).unwrap_or_default().to_vec());
        pieces
    }

    fn stream(dialect: Dialect, release: TextRelease) -> RecordStream {
        RecordStream::new(None)
            .with_dialect(dialect)
            .with_text(TextRecords::Included)
            .with_text_release(release)
    }

    /// The records of `input` fed in pieces of `sizes` (cycled), and how many records each
    /// feed had given out by its end.
    fn records_in_chunks(
        mut stream: RecordStream,
        input: &[u8],
        sizes: &[usize],
    ) -> (Vec<Json>, Vec<usize>) {
        let mut out = Vec::new();
        let mut after_feed = Vec::new();
        let mut rest = input;
        let mut k = 0;
        while !rest.is_empty() {
            let n = sizes
                .get(k % sizes.len())
                .copied()
                .unwrap_or(1)
                .clamp(1, rest.len());
            k += 1;
            let (chunk, tail) = rest.split_at(n);
            stream.feed(chunk, &mut out);
            after_feed.push(out.len());
            rest = tail;
        }
        stream.finish(&mut out);
        (out, after_feed)
    }

    /// Adjacent text records joined into one.
    fn merged(records: Vec<Json>) -> Vec<Json> {
        let mut out: Vec<Json> = Vec::new();
        for record in records {
            if let (Some(text), Some(last)) = (record["text"].as_str(), out.last_mut()) {
                if let Some(held) = last["text"].as_str() {
                    let joined = format!("{held}{text}");
                    *last = json!({ "text": joined });
                    continue;
                }
            }
            out.push(record);
        }
        out
    }

    /// `input` read as `dialect` fed whole, in 1-, 3-byte pieces and in `random` pieces:
    /// `PerGap` gives the same records every time; `Early` the same once adjacent text is
    /// joined, so no byte of a call or an error ever went out as text.
    fn check_every_chunking(dialect: Dialect, input: &[u8], random: &[usize]) {
        let whole = records_in_chunks(
            stream(dialect, TextRelease::PerGap),
            input,
            &[input.len().max(1)],
        )
        .0;
        let expected = merged(whole.clone());
        for sizes in [&[input.len().max(1)][..], &[1], &[3], random] {
            let (gap, _) = records_in_chunks(stream(dialect, TextRelease::PerGap), input, sizes);
            assert_eq!(
                gap, whole,
                "{dialect} per gap, pieces {sizes:?} of {input:?}"
            );
            let (early, _) = records_in_chunks(stream(dialect, TextRelease::Early), input, sizes);
            assert_eq!(
                merged(early),
                expected,
                "{dialect} early, pieces {sizes:?} of {input:?}"
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn early_text_is_the_whole_texts_text_at_every_chunking(
            dialect in prop::sample::select(Dialect::ALL.to_vec()),
            picks in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
            sizes in prop::collection::vec(1usize..9, 1..16),
        ) {
            let pieces = pieces(dialect);
            let input: Vec<u8> = picks.iter().flat_map(|i| i.get(&pieces).clone()).collect();
            check_every_chunking(dialect, &input, &sizes);
        }
    }

    #[test]
    fn every_dialects_answer_gives_the_same_text_at_every_chunking() {
        for dialect in Dialect::ALL {
            let input = format!(
                "Let me look. <tool [x] {} done é {}",
                call(dialect),
                call(dialect)
            );
            check_every_chunking(dialect, input.as_bytes(), &[2, 5, 1, 7]);
        }
    }

    #[test]
    fn text_without_calls_goes_out_at_each_feed() {
        let answer = "The capital of Norway is Oslo; it lies at the end of a fjord. Blåbær!";
        for dialect in Dialect::ALL {
            let (records, after_feed) =
                records_in_chunks(stream(dialect, TextRelease::Early), answer.as_bytes(), &[3]);
            assert_eq!(
                merged(records.clone()),
                [json!({ "text": answer })],
                "{dialect}"
            );
            // Every feed but one that ends inside `å` or `æ` gave out text.
            let quiet = after_feed.windows(2).filter(|w| w[0] == w[1]).count();
            assert!(quiet <= 2, "{dialect}: {after_feed:?}");
            assert!(after_feed.first().is_some_and(|&n| n == 1), "{dialect}");
            // With `PerGap` nothing goes out before the end.
            let (_, after_feed) = records_in_chunks(
                stream(dialect, TextRelease::PerGap),
                answer.as_bytes(),
                &[3],
            );
            assert!(
                after_feed.iter().all(|&n| n == 0),
                "{dialect}: {after_feed:?}"
            );
        }
    }

    #[test]
    fn a_marker_is_held_while_it_may_start_a_call() {
        // A Python list has no marker: after prose it is text, released as it comes.
        let mut list = stream(Dialect::Pythonic, TextRelease::Early);
        let mut out = Vec::new();
        list.feed(b"Hi there [a.b(x=1)] bye", &mut out);
        list.finish(&mut out);
        assert_eq!(merged(out), [json!({ "text": "Hi there [a.b(x=1)] bye" })]);
        for dialect in Dialect::ALL {
            if dialect == Dialect::Pythonic {
                continue;
            }
            let call = call(dialect);
            // The bytes of the call up to its first ASCII letter or digit after the opening
            // punctuation: always the start of the opening marker.
            let marker_len = call
                .char_indices()
                .skip(1)
                .find(|(_, c)| c.is_ascii_alphanumeric())
                .map_or(1, |(i, _)| i + 1);
            let (marker, rest) = call.split_at(marker_len);
            let mut stream = stream(dialect, TextRelease::Early);
            let mut out = Vec::new();
            for byte in format!("Hi there {marker}").bytes() {
                stream.feed(&[byte], &mut out);
            }
            assert_eq!(
                merged(out.clone()),
                [json!({ "text": "Hi there " })],
                "{dialect}"
            );
            stream.feed(rest.as_bytes(), &mut out);
            stream.feed(b" bye", &mut out);
            stream.finish(&mut out);
            let out = merged(out);
            assert_eq!(out.len(), 3, "{dialect}: {out:?}");
            assert_eq!(out[1]["name"], "a.b", "{dialect}: {out:?}");
            assert_eq!(out[2]["text"], " bye", "{dialect}: {out:?}");
        }
    }

    #[test]
    fn invalid_bytes_merge_across_feeds_as_with_per_gap() {
        let mut stream = stream(Dialect::Atfunc, TextRelease::Early);
        let mut out = Vec::new();
        for chunk in [&b"ok "[..], b"\xff", b"\xfe", b" fine"] {
            stream.feed(chunk, &mut out);
        }
        stream.finish(&mut out);
        assert_eq!(out.len(), 3, "{out:?}");
        assert_eq!(out[1]["invalid_utf8"], "fffe");
    }
}
