//! Phase 3, parse: pull atfunc calls out of raw model output while it streams.
//!
//! [`StreamParser`] is fed chunks of any size and answers with [`Event`]s: text released as
//! soon as it cannot be part of a call, a call started as soon as `@name(` is read, a call
//! complete with its arguments, or a malformed span with the reason. The grammar it follows
//! is `grammar/atfunc.ebnf`.
//!
//! ```
//! use atfunc::{Event, StreamParser};
//! use atfunc::parse::Value;
//!
//! let mut parser = StreamParser::default();
//! let mut events = parser.feed_str("Let me check. @weather.get(\"Par");
//! events.extend(parser.feed_str("is\", unit: \"c\") Done."));
//! events.extend(parser.finish());
//!
//! let calls: Vec<_> = events
//!     .iter()
//!     .filter_map(|e| match e {
//!         Event::Call(call) => Some(call),
//!         _ => None,
//!     })
//!     .collect();
//! assert_eq!(calls[0].name, "weather.get");
//! assert_eq!(calls[0].positional, vec![Value::String("Paris".into())]);
//! assert_eq!(calls[0].named[0].0, "unit");
//! ```
//!
//! # How it works
//!
//! The parser holds back the bytes it cannot yet resolve and runs one engine over them and
//! each new chunk: atfunc's own or, for another [`Dialect`], the dialects' reader. Each
//! engine keeps only its own state between chunks; the held bytes, their offset in the
//! stream, the character count and the limits are the parser's, shared by both. The atfunc
//! engine is a state machine. In text, it looks for the next `@` with `memchr` and releases
//! everything before it. From an `@` on, it holds back only the candidate call: a scanner recognises the call
//! byte by byte, resuming where the last chunk stopped, and once the call is complete the nom
//! grammar reads it once to build the values. So every byte is seen a constant number of
//! times, whatever the chunking, and memory is bounded by [`ParserConfig`].
//!
//! A call is handed out at its `)` unless a `with_body [[ ... ]]` block may follow. That
//! block starts on the line of the `)`, so a line break releases any call; and a parser told
//! which functions take a body ([`ParserConfig::bodies`]) releases a call to any other at
//! its `)`, without waiting for another byte: a stream that pauses there loses no time.
//!
//! Spans carry byte offsets and, counted as the bytes pass (each byte once, never from the
//! start again), the same offsets in characters ([`Span`]).
//!
//! Invalid UTF-8 in text is reported as [`Event::InvalidUtf8`]; inside a call it ends the
//! call as malformed at the first invalid byte, which is then reported as text.
//!
//! One job per file: `stream` is the [`StreamParser`] (the held bytes and the choice of
//! engine), `window` what it lends its engine on each run, `atfunc` the atfunc engine,
//! `scan` and `syntax` the scanner and grammar that engine runs, `prose` its search for `@`,
//! `release` the text an engine lets go, `chars` the character offsets of spans, `dialect`
//! the other model families' formats and their engine.

mod atfunc;
mod chars;
mod dialect;
mod prose;
mod release;
mod scan;
mod stream;
mod syntax;
mod types;
mod window;

pub use dialect::{Dialect, UnknownDialect};
pub use stream::{parse_events, StreamParser};
pub use types::{
    Bodies, Call, Event, FunctionNames, LineColumn, ParseError, ParseErrorKind, ParserConfig, Span,
    Value,
};

pub(crate) use syntax::is_number;
