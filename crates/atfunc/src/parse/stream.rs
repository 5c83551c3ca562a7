//! The [`StreamParser`]: the bytes held back between chunks, and the engine that reads them
//! (atfunc's own, or the reader of another dialect). [`parse_events`] for a whole text.

use super::atfunc;
use super::dialect::{self, Dialect};
use super::types::{Event, ParserConfig};
use super::window::Window;

/// The streaming parser. See the module docs.
///
/// Feed it with [`feed_into`](Self::feed_into) (or [`feed`](Self::feed),
/// [`feed_str`](Self::feed_str)) and end with [`finish_into`](Self::finish_into); the events
/// are the same for every way of cutting the input into chunks, once adjacent
/// [`Event::Text`] events are joined. After `finish`, the parser starts over: the next byte
/// fed is offset 0 of a new input.
#[derive(Debug)]
pub struct StreamParser {
    /// Bytes fed but not yet released: an unresolved candidate call from its opening on,
    /// the held whitespace after a `)`, or the start of a character split across chunks.
    /// Never longer than the call limit plus the last chunk. `window.base` is the absolute
    /// offset of its first byte.
    held: Vec<u8>,
    /// Where `held` lies in the stream, the characters and work counted, and the limits:
    /// lent to the engine on each run.
    window: Window,
    /// The reader of the dialect configured, with the state it keeps between chunks.
    engine: Engine,
}

/// The reader a parser runs: each keeps only its own state, and reads the bytes the parser
/// hands it through the parser's [`Window`].
#[derive(Debug)]
enum Engine {
    /// `@name(args)` calls ([`Dialect::Atfunc`]).
    Atfunc(atfunc::Reader),
    /// Every other dialect, `auto` included (boxed: it is the larger, and the less common).
    Dialect(Box<dialect::Reader>),
}

impl Engine {
    fn new(config: &ParserConfig) -> Engine {
        match config.dialect {
            Dialect::Atfunc => Engine::Atfunc(atfunc::Reader::new()),
            _ => Engine::Dialect(Box::new(dialect::Reader::new(config))),
        }
    }

    /// Scans `data` (the held bytes and the chunk, or the chunk alone), appends the events
    /// it completes and returns how many of its leading bytes are done with (never held
    /// again).
    fn run(&mut self, window: &mut Window, data: &[u8], out: &mut Vec<Event>, eof: bool) -> usize {
        match self {
            Engine::Atfunc(reader) => reader.run(window, data, out, eof),
            Engine::Dialect(reader) => reader.run(window, data, out, eof),
        }
    }
}

impl Default for StreamParser {
    fn default() -> Self {
        StreamParser::new(ParserConfig::default())
    }
}

impl StreamParser {
    /// A parser with the given limits.
    pub fn new(config: ParserConfig) -> StreamParser {
        StreamParser {
            held: Vec::new(),
            engine: Engine::new(&config),
            window: Window::new(config),
        }
    }

    /// The limits this parser enforces.
    pub fn config(&self) -> &ParserConfig {
        &self.window.config
    }

    /// How many characters the scanner has stepped over since the parser was made: a measure
    /// of work for tests that check it stays linear in the input.
    #[doc(hidden)]
    pub fn scan_steps(&self) -> u64 {
        self.window.steps
    }

    /// How many bytes the parser holds back right now (an unresolved candidate call, the
    /// whitespace after a `)`, or a split character); bounded by the limits.
    #[doc(hidden)]
    pub fn buffered_len(&self) -> usize {
        self.held.len()
    }

    /// Feeds the next chunk of bytes and appends the events it completes to `out`.
    pub fn feed_into(&mut self, chunk: &[u8], out: &mut Vec<Event>) {
        if let Engine::Atfunc(reader) = &mut self.engine {
            if reader.extends_string(&mut self.window, &mut self.held, chunk) {
                return;
            }
        }
        self.feed_held(chunk, out);
    }

    /// Scans the held bytes with `chunk` and keeps what is unresolved. With nothing held
    /// the chunk is scanned where it lies and only its unresolved tail is copied. Kept out
    /// of line so that the fast path of [`feed_into`](Self::feed_into) stays small.
    #[inline(never)]
    fn feed_held(&mut self, chunk: &[u8], out: &mut Vec<Event>) {
        let mut held = std::mem::take(&mut self.held);
        let window = &mut self.window;
        let keep = if held.is_empty() {
            let keep = self.engine.run(window, chunk, out, false);
            window.chars.before(chunk, window.base, window.abs(keep));
            held.extend_from_slice(chunk.get(keep..).unwrap_or_default());
            keep
        } else {
            held.extend_from_slice(chunk);
            let keep = self.engine.run(window, &held, out, false);
            window.chars.before(&held, window.base, window.abs(keep));
            held.drain(..keep.min(held.len()));
            keep
        };
        self.held = held;
        self.window.base += keep as u64;
    }

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
    pub fn finish_into(&mut self, out: &mut Vec<Event>) {
        let held = std::mem::take(&mut self.held);
        self.engine.run(&mut self.window, &held, out, true);
        // A new input: only the count of work goes on.
        let steps = self.window.steps;
        let config = self.window.config.clone();
        self.engine = Engine::new(&config);
        self.window = Window::new(config);
        self.window.steps = steps;
    }

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
