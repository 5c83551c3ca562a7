//! The values the parse phase hands to its callers.

use serde::Serialize;
use std::fmt;

/// A byte range of the whole input, `start..end`, counted from the first byte ever fed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
pub struct Span {
    /// Offset of the first byte.
    pub start: u64,
    /// Offset one past the last byte.
    pub end: u64,
}

impl Span {
    /// The span `start..end`.
    pub fn new(start: u64, end: u64) -> Span {
        Span { start, end }
    }

    /// How many bytes it covers.
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Whether it covers no bytes.
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

/// An argument value as the model wrote it, before it is bound to a declared type.
///
/// The parser keeps how a value was written (quoted, bare, a number's literal text) because
/// binding needs it: `"007"` stays a string, a bare `Paris` is a string, and `2.0` is a valid
/// integer while `2.5` is not.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Value {
    /// A single- or double-quoted string, escapes resolved.
    String(String),
    /// An unquoted word up to `,` or `)`, surrounding spaces trimmed.
    Bare(String),
    /// A number literal, kept as written (`-1.5`, `2e3`, `+7`).
    Number(String),
    /// `true`/`false`, or Python's `True`/`False`.
    Bool(bool),
    /// `null`, or Python's `None`.
    Null,
    /// A `[...]` literal.
    Array(Vec<Value>),
    /// A `{...}` literal; keys in written order, duplicates kept.
    Object(Vec<(String, Value)>),
}

impl Value {
    /// The value as plain JSON: bare words and strings become strings, number literals
    /// become numbers (a literal JSON cannot hold, such as `+7` or `1e999`, is normalised
    /// or kept as a string).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match self {
            Value::String(s) | Value::Bare(s) => J::String(s.clone()),
            Value::Number(n) => number_to_json(n),
            Value::Bool(b) => J::Bool(*b),
            Value::Null => J::Null,
            Value::Array(items) => J::Array(items.iter().map(Value::to_json).collect()),
            Value::Object(fields) => J::Object(
                fields
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }

    /// A JSON value as if the model had written it: the inverse of [`Value::to_json`], so
    /// one conversion serves written literals, JSON inside strings and arguments given as
    /// JSON (a direct call, an OpenAI tool call).
    pub fn from_json(json: serde_json::Value) -> Value {
        use serde_json::Value as J;
        match json {
            J::Null => Value::Null,
            J::Bool(b) => Value::Bool(b),
            J::Number(n) => Value::Number(n.to_string()),
            J::String(s) => Value::String(s),
            J::Array(items) => Value::Array(items.into_iter().map(Value::from_json).collect()),
            J::Object(fields) => Value::Object(
                fields
                    .into_iter()
                    .map(|(k, v)| (k, Value::from_json(v)))
                    .collect(),
            ),
        }
    }
}

/// A number literal as JSON: an integer when it is one and fits, else a float, else (for
/// a literal no `f64` holds) the literal text.
pub(crate) fn number_to_json(literal: &str) -> serde_json::Value {
    let text = literal.strip_prefix('+').unwrap_or(literal);
    if let Ok(i) = text.parse::<i64>() {
        return serde_json::Value::from(i);
    }
    if let Ok(u) = text.parse::<u64>() {
        return serde_json::Value::from(u);
    }
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() => serde_json::Value::from(f),
        _ => serde_json::Value::String(literal.to_owned()),
    }
}

/// A complete call, as written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Call {
    /// The name as written after `@`: `fn` or `domain.fn` (the domain may contain dots).
    pub name: String,
    /// Positional arguments, in order.
    pub positional: Vec<Value>,
    /// Named arguments (`unit="c"` or `unit: "c"`), in written order.
    pub named: Vec<(String, Value)>,
    /// The raw text between `with_body [[` and `]]`, when the call has a body.
    pub body: Option<String>,
    /// Where the call stands in the input, `@` to the end of `)` or of `]]`.
    pub span: Span,
}

/// What the parser reports, in input order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// Text that is not part of any call.
    Text {
        /// The text.
        text: String,
    },
    /// Bytes that are not valid UTF-8, passed on as they are (they are still text).
    InvalidUtf8 {
        /// The bytes.
        bytes: Vec<u8>,
        /// Where they stand.
        span: Span,
    },
    /// `@name(` was read: a call is under way. Always followed, later, by a
    /// [`Event::Call`] or an [`Event::Malformed`] for the same start.
    CallStarted {
        /// The name as written.
        name: String,
        /// Offset of the `@`.
        start: u64,
    },
    /// A complete call.
    Call(Call),
    /// A span that looked like a call but is not one. Its text is not lost: it is here.
    Malformed {
        /// Where it stands.
        span: Span,
        /// Why it is not a call.
        error: ParseError,
        /// The span's text (invalid UTF-8 replaced).
        text: String,
    },
}

/// Why a call-shaped span is not a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// Something other than what the grammar allows at this point.
    Unexpected {
        /// What would have been accepted.
        expected: String,
        /// What was found (a character, or "end of input").
        found: String,
    },
    /// The input ended inside a call.
    Unterminated {
        /// What was open: "string", "argument list", "body", ...
        what: String,
    },
    /// A positional argument after a named one.
    PositionalAfterNamed,
    /// The call is longer than [`ParserConfig::max_call_len`].
    CallTooLong {
        /// The limit.
        limit: usize,
    },
    /// The `with_body` block is longer than [`ParserConfig::max_body_len`].
    BodyTooLong {
        /// The limit.
        limit: usize,
    },
    /// Values nest deeper than [`ParserConfig::max_depth`].
    TooDeep {
        /// The limit.
        limit: usize,
    },
    /// More arguments than [`ParserConfig::max_args`].
    TooManyArgs {
        /// The limit.
        limit: usize,
    },
}

/// A parse error: its kind and where it was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub struct ParseError {
    /// What went wrong.
    pub kind: ParseErrorKind,
    /// The absolute byte offset where it went wrong.
    pub offset: u64,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ParseErrorKind::Unexpected { expected, found } => {
                write!(f, "expected {expected}, found {found}")
            }
            ParseErrorKind::Unterminated { what } => {
                write!(
                    f,
                    "unterminated {what}: the text ended before it was closed"
                )
            }
            ParseErrorKind::PositionalAfterNamed => f.write_str(
                "a positional argument follows a named one: put positional arguments first",
            ),
            ParseErrorKind::CallTooLong { limit } => {
                write!(f, "call is longer than {limit} bytes")
            }
            ParseErrorKind::BodyTooLong { limit } => {
                write!(f, "with_body block is longer than {limit} bytes")
            }
            ParseErrorKind::TooDeep { limit } => {
                write!(f, "values nest deeper than {limit} levels")
            }
            ParseErrorKind::TooManyArgs { limit } => {
                write!(f, "call has more than {limit} arguments")
            }
        }
    }
}

/// The parser's limits. Past one, the parser reports the span as malformed and resumes
/// after it, so a hostile input costs bounded memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParserConfig {
    /// Longest call, `@` to its end, in bytes (body included). Default 16 MiB.
    pub max_call_len: usize,
    /// Longest `with_body` block in bytes. Default 8 MiB.
    pub max_body_len: usize,
    /// Deepest nesting of `[` and `{` in argument values (and JSON bodies). Default 64;
    /// values above 512 count as 512, since building a value recurses once per level.
    pub max_depth: usize,
    /// Most arguments in one call, positional and named together. Default 256.
    pub max_args: usize,
}

impl Default for ParserConfig {
    fn default() -> Self {
        ParserConfig {
            max_call_len: 16 << 20,
            max_body_len: 8 << 20,
            max_depth: 64,
            max_args: 256,
        }
    }
}
