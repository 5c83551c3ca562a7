//! Phase 3, parse: pull atfunc calls out of raw model output while it streams.
//!
//! [`StreamParser`] is fed chunks of any size and answers with [`Event`]s: text released as
//! soon as it cannot be part of a call, a call started as soon as `@name(` is read, a call
//! complete with its arguments, or a malformed span with the reason. The grammar it follows
//! is `grammar/atfunc.ebnf`.

mod types;

pub use types::{Call, Event, ParseError, ParseErrorKind, ParserConfig, Span, Value};

/// The streaming parser. See the module docs.
#[derive(Debug)]
pub struct StreamParser {
    config: ParserConfig,
}

impl Default for StreamParser {
    fn default() -> Self {
        StreamParser::new(ParserConfig::default())
    }
}

impl StreamParser {
    /// A parser with the given limits.
    pub fn new(config: ParserConfig) -> StreamParser {
        StreamParser { config }
    }

    /// The limits this parser enforces.
    pub fn config(&self) -> &ParserConfig {
        &self.config
    }

    /// Feeds the next chunk of bytes and appends the events it completes to `out`.
    pub fn feed_into(&mut self, _chunk: &[u8], _out: &mut Vec<Event>) {}

    /// Feeds the next chunk of bytes and returns the events it completes.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Event> {
        let mut out = Vec::new();
        self.feed_into(chunk, &mut out);
        out
    }

    /// Feeds the next chunk of text.
    pub fn feed_str(&mut self, chunk: &str) -> Vec<Event> {
        self.feed(chunk.as_bytes())
    }

    /// Ends the input: flushes held text and reports an unterminated call as malformed.
    pub fn finish_into(&mut self, _out: &mut Vec<Event>) {}

    /// Ends the input and returns the final events.
    pub fn finish(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        self.finish_into(&mut out);
        out
    }
}

/// Parses a whole text at once: the events a [`StreamParser`] gives for it, finished.
pub fn parse_events(text: &str) -> Vec<Event> {
    let mut parser = StreamParser::default();
    let mut events = parser.feed_str(text);
    parser.finish_into(&mut events);
    events
}
