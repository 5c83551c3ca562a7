//! The values the parse phase hands to its callers.

use super::Dialect;
use crate::interface::Interface;
use serde::Serialize;
use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

/// Where something stands in the whole input, counted from the first byte ever fed.
///
/// `start..end` are **byte** offsets: slice the input's bytes (or a Rust `&str`) with them.
/// `char_start..char_end` is the same range in **characters** (Unicode scalar values), for
/// languages whose strings index by character (Python's `text[char_start:char_end]`). A run
/// of bytes that is not valid UTF-8 counts as one character per replacement character that
/// [`String::from_utf8_lossy`] (or Python's `decode(errors="replace")`) puts in its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
pub struct Span {
    /// Byte offset of the first byte.
    pub start: u64,
    /// Byte offset one past the last byte.
    pub end: u64,
    /// Character offset of the first character.
    pub char_start: u64,
    /// Character offset one past the last character.
    pub char_end: u64,
}

impl Span {
    /// The span `start..end` of a text whose characters are single bytes (ASCII): the
    /// character offsets equal the byte offsets. The parser gives its spans both, counted;
    /// see [`Span::with_chars`] to set them.
    pub fn new(start: u64, end: u64) -> Span {
        Span {
            start,
            end,
            char_start: start,
            char_end: end,
        }
    }

    /// The same byte range, `char_start..char_end` in characters.
    pub fn with_chars(self, char_start: u64, char_end: u64) -> Span {
        Span {
            char_start,
            char_end,
            ..self
        }
    }

    /// How many bytes it covers.
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Whether it covers no bytes.
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// The empty span at this one's end.
    pub(crate) fn end_point(self) -> Span {
        Span {
            start: self.end,
            char_start: self.char_end,
            ..self
        }
    }
}

/// An argument value as the model wrote it, before it is bound to a declared type.
///
/// The parser keeps how a value was written (quoted, bare, a number's literal text) because
/// binding needs it: `"007"` stays a string, a bare `Paris` is a string, and `2.0` is a valid
/// integer while `2.5` is not.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
#[non_exhaustive]
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
#[non_exhaustive]
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

impl Call {
    /// A call of `name` with no arguments, no body and an empty span at 0: for a call made
    /// other than by parsing (a test, a call read from another format), completed with the
    /// `with_` methods.
    ///
    /// ```
    /// use atfunc::parse::{Call, Value};
    /// let call = Call::new("math.sqrt").with_positional(vec![Value::Number("2".into())]);
    /// assert_eq!(call.positional.len(), 1);
    /// ```
    pub fn new(name: impl Into<String>) -> Call {
        Call {
            name: name.into(),
            positional: Vec::new(),
            named: Vec::new(),
            body: None,
            span: Span::default(),
        }
    }

    /// The same call with these positional arguments.
    pub fn with_positional(mut self, positional: Vec<Value>) -> Call {
        self.positional = positional;
        self
    }

    /// The same call with these named arguments, in written order.
    pub fn with_named(mut self, named: Vec<(String, Value)>) -> Call {
        self.named = named;
        self
    }

    /// The same call with this body.
    pub fn with_body(mut self, body: Option<String>) -> Call {
        self.body = body;
        self
    }

    /// The same call at this span.
    pub fn with_span(mut self, span: Span) -> Call {
        self.span = span;
        self
    }
}

/// What the parser reports, in input order. More kinds of event may come (a `match`
/// needs a `_` arm).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
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
///
/// The parser never looks back at text it has released, so it counts no lines: the error
/// holds the point where reading stopped as a [`Span`] (byte and character offsets from
/// the first byte fed), and [`ParseError::line_column`] finds the line and column in the
/// text when asked, as a reader that kept the text wants them for a message.
///
/// ```
/// use atfunc::{parse_events, Event};
///
/// let text = "Checking.\n@weather.get(city=\"Oslo\" days=2)\nDone.";
/// let error = parse_events(text)
///     .into_iter()
///     .find_map(|event| match event {
///         Event::Malformed { error, .. } => Some(error),
///         _ => None,
///     })
///     .unwrap();
/// // `days` needs a comma before it: reading stopped at its `d`, line 2, column 26.
/// assert_eq!(&text[error.span.start as usize..][..4], "days");
/// let at = error.line_column(text);
/// assert_eq!((at.line, at.column), (2, 26));
/// assert_eq!(format!("{at}: {error}"), "line 2, column 26: expected `,` or `)`, found `d`");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub struct ParseError {
    /// What went wrong.
    pub kind: ParseErrorKind,
    /// Where it went wrong: an empty span at the byte (and character) where reading
    /// stopped, counted from the first byte fed.
    pub span: Span,
}

impl ParseError {
    /// An error of `kind` at the point `at` (an empty span; a longer one is cut to its
    /// start).
    pub(crate) fn new(kind: ParseErrorKind, at: Span) -> ParseError {
        ParseError {
            kind,
            span: Span {
                end: at.start,
                char_end: at.char_start,
                ..at
            },
        }
    }

    /// The line and column where it went wrong in `text`, the whole input the parser was
    /// fed (from its first byte). Counted when asked, so the parser pays nothing for it.
    pub fn line_column(&self, text: &str) -> LineColumn {
        self.span.line_column(text)
    }
}

/// A position in a text as a person finds it: both 1-based, the column counted in
/// characters. Displayed as `line 2, column 26`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LineColumn {
    /// The line, 1 for the first; lines end at `\n`.
    pub line: u64,
    /// The character in the line, 1 for the first.
    pub column: u64,
}

impl fmt::Display for LineColumn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

impl Span {
    /// The line and column of the span's start in `text`, the whole input from the first
    /// byte fed. A start past the end of `text` counts to its end; one inside a character
    /// stands at that character.
    ///
    /// ```
    /// use atfunc::parse::Span;
    /// // The end of line 2: after `c`, `d` and `é` (of two bytes), column 4.
    /// let at = Span::new(7, 7).line_column("ab\ncdé\nfg");
    /// assert_eq!((at.line, at.column), (2, 4));
    /// ```
    pub fn line_column(&self, text: &str) -> LineColumn {
        let bytes = text.as_bytes();
        let end = usize::try_from(self.start).map_or(bytes.len(), |start| start.min(bytes.len()));
        let before = bytes.get(..end).unwrap_or(bytes);
        let line_start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
        let in_line = before.get(line_start..).unwrap_or_default();
        // Each character that starts before the point is a column; a point inside one
        // stands at the character it is inside, which has started.
        let started = bytecount::num_chars(in_line) as u64;
        let inside = !text.is_char_boundary(end);
        LineColumn {
            line: 1 + bytecount::count(before, b'\n') as u64,
            column: if inside { started } else { started + 1 },
        }
    }
}

/// The JSON form keeps the shape events have always had: the kind and the byte offset.
impl Serialize for ParseError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = serializer.serialize_struct("ParseError", 2)?;
        out.serialize_field("kind", &self.kind)?;
        out.serialize_field("offset", &self.span.start)?;
        out.end()
    }
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

/// Which calls may carry a `with_body [[ ... ]]` block.
///
/// After a call's `)` the parser must know whether a body may follow before it can hand the
/// call out. Under [`Bodies::Any`] it waits for the next byte that is not a space or a tab:
/// a line break (a body starts on the line of its `)`) or anything but `with_body` releases
/// the call, so a call at the end of a line waits for the line break. Told which functions
/// take a body, it releases every other call at its `)`, with nothing more read.
///
/// ```
/// use atfunc::parse::{Bodies, ParserConfig};
/// use atfunc::{Event, StreamParser};
///
/// let config = ParserConfig::default().with_bodies(Bodies::only(["api.create_user"]));
/// let mut parser = StreamParser::new(config);
/// // `weather.get` takes no body: it is out as soon as its `)` is read.
/// let events = parser.feed_str("@weather.get(\"Oslo\")");
/// assert!(matches!(events.last(), Some(Event::Call(call)) if call.name == "weather.get"));
/// // `API.Create_User` (names compare ignoring case) may have one: it waits.
/// let events = parser.feed_str(" @API.Create_User(\"ann\")");
/// assert!(!events.iter().any(|e| matches!(e, Event::Call(_))));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Bodies {
    /// Any call may have one (the default, for a parser that knows no functions).
    #[default]
    Any,
    /// No call has one: every call ends at its `)`.
    None,
    /// Only calls to these functions, by the name written after `@`.
    Only(FunctionNames),
}

impl Bodies {
    /// Only calls to `names` (compared ignoring case) may have a body.
    pub fn only<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> Bodies {
        Bodies::Only(names.into_iter().collect())
    }

    /// The functions of `interfaces` that take a body ([`Interface::has_body`]), under
    /// every name a call reaches them by, as binding finds them: the qualified name, and
    /// for a function of the `root` domain the bare name too. Outside the crate this is
    /// [`Catalog::bodies`](crate::Catalog::bodies).
    pub(crate) fn of(interfaces: &[Interface], root: Option<&str>) -> Bodies {
        Bodies::Only(FunctionNames::callable(
            interfaces.iter().filter(|i| i.has_body()),
            root,
        ))
    }

    /// Whether a call to `name`, as written, may have a body.
    pub fn allows(&self, name: &str) -> bool {
        match self {
            Bodies::Any => true,
            Bodies::None => false,
            Bodies::Only(names) => names.contains(name),
        }
    }
}

/// A set of function names that match ignoring case (after Unicode case folding, as
/// binding matches them by default).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FunctionNames {
    /// Folded names, shared: a parser is configured per answer, and a gateway or batch
    /// gives every answer the same set of its tools' names.
    folded: Arc<HashSet<String>>,
}

impl FunctionNames {
    /// The names calls to `interfaces` may be written with: each qualified name, the name
    /// as the definition spells it (`get-weather`, which another model's format writes as
    /// it was offered), and the plain name of those in the `root` toolbox.
    pub(crate) fn callable<'a>(
        interfaces: impl IntoIterator<Item = &'a Interface>,
        root: Option<&str>,
    ) -> FunctionNames {
        let mut names = FunctionNames::new();
        for interface in interfaces {
            names.insert(&interface.qualified_name());
            names.insert(&interface.original_qualified_name());
            let in_root = match (&interface.domain, root) {
                (Some(domain), Some(root)) => fold(domain) == fold(root),
                _ => false,
            };
            if in_root {
                names.insert(&interface.name);
            }
        }
        names
    }

    /// An empty set.
    pub fn new() -> FunctionNames {
        FunctionNames::default()
    }

    /// Adds a name.
    pub fn insert(&mut self, name: &str) {
        Arc::make_mut(&mut self.folded).insert(fold(name));
    }

    /// Whether the set holds `name`, ignoring case.
    pub fn contains(&self, name: &str) -> bool {
        !self.folded.is_empty() && self.folded.contains(&fold(name))
    }

    /// How many names it holds.
    pub fn len(&self) -> usize {
        self.folded.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.folded.is_empty()
    }
}

impl<S: AsRef<str>> FromIterator<S> for FunctionNames {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> FunctionNames {
        let mut names = FunctionNames::new();
        for name in iter {
            names.insert(name.as_ref());
        }
        names
    }
}

fn fold(name: &str) -> String {
    unicase::UniCase::new(name).to_folded_case()
}

/// The parser's limits and options. Past a limit, the parser reports the span as malformed
/// and resumes after it, so a hostile input costs bounded memory.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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
    /// Which calls may have a `with_body` block; the others are released at their `)`.
    /// Default [`Bodies::Any`]; [`Catalog::bodies`](crate::Catalog::bodies) gives the set of a catalog.
    pub bodies: Bodies,
    /// The tool-call format to read. Default [`Dialect::Atfunc`]; the other dialects read
    /// other models' native formats into the same events, under the same limits.
    pub dialect: Dialect,
    /// The names of the tools the model was offered, when known. With them, `hermes` and
    /// `auto` read a JSON call written without `<tool_call>` tags, `{"name": NAME,
    /// "arguments": {...}}` at the start of a line where the answer holds nothing but
    /// calls (Qwen 2.5's own template gets such answers), when NAME is one of these
    /// (ignoring case); `auto` then reads a bare JSON object only when it names one. A Markdown ```` ```json ```` fence right
    /// around such a call goes with it (its span covers the fence), so the text holds no
    /// empty fence. Default `None`: no untagged calls.
    pub offered: Option<FunctionNames>,
}

/// Nesting beyond this is refused whatever [`ParserConfig::max_depth`] says: building a value
/// recurses once per level, in the atfunc grammar and in every dialect's readers alike.
const HARD_MAX_DEPTH: usize = 512;

impl ParserConfig {
    /// The nesting limit every engine enforces: [`ParserConfig::max_depth`], at most
    /// [`HARD_MAX_DEPTH`].
    pub(crate) fn depth_limit(&self) -> usize {
        self.max_depth.min(HARD_MAX_DEPTH)
    }

    /// The same config with [`max_call_len`](Self::max_call_len) set.
    pub fn with_max_call_len(mut self, max_call_len: usize) -> Self {
        self.max_call_len = max_call_len;
        self
    }

    /// The same config with [`max_body_len`](Self::max_body_len) set.
    pub fn with_max_body_len(mut self, max_body_len: usize) -> Self {
        self.max_body_len = max_body_len;
        self
    }

    /// The same config with [`max_depth`](Self::max_depth) set.
    pub fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }

    /// The same config with [`max_args`](Self::max_args) set.
    pub fn with_max_args(mut self, max_args: usize) -> Self {
        self.max_args = max_args;
        self
    }

    /// The same config with [`bodies`](Self::bodies) set.
    pub fn with_bodies(mut self, bodies: Bodies) -> Self {
        self.bodies = bodies;
        self
    }

    /// The same config, reading `dialect`.
    ///
    /// ```
    /// use atfunc::parse::{Dialect, ParserConfig};
    ///
    /// let config = ParserConfig::default().with_dialect(Dialect::Auto);
    /// assert_eq!(config.dialect, Dialect::Auto);
    /// ```
    pub fn with_dialect(self, dialect: Dialect) -> ParserConfig {
        ParserConfig { dialect, ..self }
    }

    /// The same config, knowing the tools the model was offered ([`ParserConfig::offered`]).
    /// Only the dialects that read untagged calls (hermes, auto) look at the names; the
    /// others carry them unread. The order of the builder calls does not matter: the names
    /// are kept whatever the dialect is when this is called, so a later
    /// [`ParserConfig::with_dialect`] finds them.
    ///
    /// The names are the ones a gateway reading this model would accept: each function's
    /// qualified name, the name as its definition spells it, and the plain name of those in
    /// the `root` toolbox (as [`Catalog::root`](crate::Catalog::root) gives it).
    ///
    /// ```
    /// use atfunc::parse::Dialect;
    /// use atfunc::{Event, Interface, ParserConfig, StreamParser};
    ///
    /// let tools = [Interface::new("get_weather")];
    /// // Either order: the dialect may be chosen before or after the tools are given.
    /// let config = ParserConfig::default()
    ///     .offering(&tools, None)
    ///     .with_dialect(Dialect::Hermes);
    /// let calls = |text: &str| {
    ///     let mut parser = StreamParser::new(config.clone());
    ///     let mut events = parser.feed_str(text);
    ///     events.extend(parser.finish());
    ///     events.iter().filter(|e| matches!(e, Event::Call(_))).count()
    /// };
    /// // A bare call object naming an offered tool is a call; one naming another is prose.
    /// assert_eq!(calls(r#"{"name": "get_weather", "arguments": {}}"#), 1);
    /// assert_eq!(calls(r#"{"name": "other", "arguments": {}}"#), 0);
    /// ```
    pub fn offering<'a>(
        self,
        interfaces: impl IntoIterator<Item = &'a Interface>,
        root: Option<&str>,
    ) -> ParserConfig {
        ParserConfig {
            offered: Some(FunctionNames::callable(interfaces, root)),
            ..self
        }
    }
}

impl Default for ParserConfig {
    fn default() -> Self {
        ParserConfig {
            max_call_len: 16 << 20,
            max_body_len: 8 << 20,
            max_depth: 64,
            max_args: 256,
            bodies: Bodies::Any,
            dialect: Dialect::Atfunc,
            offered: None,
        }
    }
}
