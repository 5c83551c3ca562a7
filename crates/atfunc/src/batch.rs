//! Post-processing completions in bulk: JSON Lines records in, one JSON line per record out.
//!
//! Each input line is a record `{"id": ..., "completion": "...", "tools": [...]}`; its output
//! line is `{"id": ..., "calls": [...], "errors": [...]}`, where the call and error objects
//! are the ones `atfunc parse` prints for the same text ([`completion_records`] gives them
//! for one text, [`RecordStream`] as a text streams in). A line that cannot be processed (not JSON, no `completion`,
//! invalid `tools`) becomes `{"id": ..., "line": N, "error": "..."}` and the others go on.
//! [`Batch::write_line`] writes an output line as the completion's calls are found, so a
//! record of a million calls costs the bytes of its output, never its calls held at once.
//!
//! `tools` may be any shape [`crate::load_interfaces`] accepts. A record's
//! own `tools` wins over the default tool set given to [`Batch::new`]; with neither, calls
//! are reported unbound (`positional` and `named`). Tool sets are loaded once per distinct
//! text and kept in a small cache, so a tools list repeated on every line costs one load.
//!
#![cfg_attr(
    feature = "batch",
    doc = "With the `batch` feature, [`Batch::process_lines`] spreads a slice of lines over every"
)]
#![cfg_attr(
    not(feature = "batch"),
    doc = "With the `batch` feature, `Batch::process_lines` spreads a slice of lines over every"
)]
//! core and returns the output lines in input order.
//!
//! ```
//! use atfunc::batch::Batch;
//!
//! let batch = Batch::new(None);
//! let line = br#"{"id": 7, "completion": "Sure: @weather.get('Oslo', unit=\"c\")", "tools": [
//!     {"name": "weather.get", "parameters": {"type": "object",
//!      "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}}]}"#;
//! let out = batch.process_line(1, line).unwrap();
//! assert_eq!(
//!     out,
//!     r#"{"id":7,"calls":[{"name":"weather.get","args":{"city":"Oslo","unit":"c"},"body":null,"span":[6,36],"chars":[6,36]}],"errors":[]}"#
//! );
//!
//! let bad = batch.process_line(2, b"{\"id\": 8}").unwrap();
//! assert_eq!(bad, r#"{"id":8,"line":2,"error":"missing \"completion\""}"#);
//! ```

use crate::interface::{LoadLimit, LoadLimits, LoadOptions, Problem};
use crate::messages::{json_kind, json_message};
use crate::parse::{Bodies, Dialect, Span};
use crate::{bind, Call, Catalog, Event};
use crate::{LoadError, ParseError, ParserConfig, StreamParser};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Value as Json};
use std::borrow::Cow;
use std::collections::HashMap;
use std::convert::Infallible;
use std::hash::{Hash, Hasher};
use std::io::{self, Write};
use std::sync::{Arc, Mutex, PoisonError};

mod stream;
pub use stream::{RecordStream, TextRecords, TextRelease};

/// How many bytes of a span an error record quotes in its `raw` field.
pub(crate) const RAW_LIMIT: usize = 200;

/// How many distinct tool sets [`Batch`] keeps loaded. Past it, the least recently used
/// goes; a long input that cycles through more sets than this reloads them, nothing worse.
pub(crate) const TOOL_CACHE_CAPACITY: usize = 64;

/// Why a record's `tools` could not be loaded: the batch phase's error. Its message is
/// the one the record's error line gives (`invalid "tools": ...`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolsError {
    /// The text is not JSON, or JSON of another shape than a tool list (what was
    /// expected, and at which column: a record is one line).
    #[error("invalid \"tools\": {message}")]
    Unreadable {
        /// What was expected and where.
        message: String,
    },
    /// Some definitions are invalid; every problem is listed.
    #[error("invalid \"tools\": {}", join_problems(.problems))]
    Invalid {
        /// The problems, in definition order.
        problems: Vec<Problem>,
    },
    /// A definition's schema, written out, went past a limit of the batch's
    /// [`LoadLimits`] ([`Batch::with_load_limits`]).
    #[error("invalid \"tools\": {}", LoadError::Limit { function: function.clone(), limit: *limit, value: *value })]
    Limit {
        /// The function whose definition went past it, as its definition names it.
        function: String,
        /// Which limit.
        limit: LoadLimit,
        /// The limit's value.
        value: usize,
    },
}

/// The problems on one line, `; `-separated: a record's error is one line.
fn join_problems(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// What a call-shaped span became, as the JSON object `atfunc parse` prints for it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Record {
    /// `{"name", "args", "body", "span", "chars"}` for a bound call, or
    /// `{"name", "positional", "named", "body", "span", "chars"}` when there are no tools.
    /// `span` is in bytes, `chars` the same range in characters (see [`Span`]).
    Call(Json),
    /// `{"error", "span", "chars", "raw"}`: the span looked like a call but did not parse or
    /// bind.
    Error(Json),
}

impl Record {
    /// The JSON object, whichever kind it is.
    pub(crate) fn into_json(self) -> Json {
        match self {
            Record::Call(json) | Record::Error(json) => json,
        }
    }
}

/// How call records are made, for [`completion_records`].
///
/// ```
/// use atfunc::batch::{completion_records, RecordOptions};
/// use atfunc::{Catalog, Interface};
/// let catalog = Catalog::new(vec![Interface::new("now").in_domain("clock")]);
/// let found = completion_records("@clock.now()", &RecordOptions::bound(&catalog));
/// assert_eq!(found.calls[0]["name"], "clock.now");
/// assert_eq!(found.calls[0]["args"], serde_json::json!({}));
/// ```
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct RecordOptions<'c> {
    /// The functions calls bind against, and whose calls alone may have a body; `None`
    /// (the default): calls are recorded as written (`positional` and `named`), and any
    /// may have a body.
    pub catalog: Option<&'c Catalog>,
    /// The call format the completions are written in (default [`Dialect::Atfunc`];
    /// `atfunc parse --dialect`).
    pub dialect: Dialect,
}

impl<'c> RecordOptions<'c> {
    /// Records of calls bound against `catalog`.
    pub fn bound(catalog: &'c Catalog) -> RecordOptions<'c> {
        RecordOptions {
            catalog: Some(catalog),
            dialect: Dialect::Atfunc,
        }
    }

    /// The same, for completions whose calls are written in `dialect`.
    pub fn in_dialect(self, dialect: Dialect) -> RecordOptions<'c> {
        RecordOptions { dialect, ..self }
    }
}

/// The record of a complete call: bound against `options.catalog` when there is one, as
/// written otherwise. `raw` gives the call's text (or at least its first [`RAW_LIMIT`] bytes); it
/// is asked for only when the call does not bind, and cut to [`RAW_LIMIT`] bytes.
pub(crate) fn call_record<'r>(
    call: &Call,
    options: &RecordOptions<'_>,
    raw: impl FnOnce() -> Cow<'r, str>,
) -> Record {
    let span = json!([call.span.start, call.span.end]);
    let chars = json!([call.span.char_start, call.span.char_end]);
    match options.catalog {
        None => Record::Call(json!({
            "name": call.name,
            "positional": call.positional.iter().map(crate::parse::Value::to_json).collect::<Vec<_>>(),
            "named": call.named.iter().map(|(k, v)| (k.clone(), v.to_json())).collect::<serde_json::Map<_, _>>(),
            "body": call.body,
            "span": span,
            "chars": chars,
        })),
        Some(catalog) => match bind(call, catalog) {
            Ok(bound) => Record::Call(json!({
                "name": bound.name,
                "args": bound.args,
                "body": call.body,
                "span": span,
                "chars": chars,
            })),
            Err(error) => Record::Error(json!({
                "error": error.to_string(),
                "span": span,
                "chars": chars,
                "raw": cut(&raw(), RAW_LIMIT),
            })),
        },
    }
}

/// The error record of a span that looked like a call but is not one; `text` is the span's
/// text, cut to [`RAW_LIMIT`] bytes.
pub(crate) fn malformed_record(span: Span, error: &ParseError, text: &str) -> Json {
    json!({
        "error": error.to_string(),
        "span": [span.start, span.end],
        "chars": [span.char_start, span.char_end],
        "raw": cut(text, RAW_LIMIT),
    })
}

/// Adds `"span": [start, end]` (bytes) and `"chars": [start, end]` (characters) to a JSON
/// object.
pub(crate) fn add_span(record: &mut Json, span: Span) {
    if let Json::Object(map) = record {
        map.insert("span".into(), json!([span.start, span.end]));
        map.insert("chars".into(), json!([span.char_start, span.char_end]));
    }
}

/// The parser options for reading calls to `options.catalog`'s functions: only those that
/// take a body may have one, so every other call is complete at its `)`. With no catalog
/// any call may have one.
pub(crate) fn parser_config(options: &RecordOptions<'_>) -> ParserConfig {
    let bodies = match options.catalog {
        Some(catalog) => catalog.bodies(),
        None => Bodies::Any,
    };
    let config = ParserConfig {
        bodies,
        ..ParserConfig::default()
    }
    .with_dialect(options.dialect);
    // With tools, hermes and `auto` read an untagged JSON call that names one of them.
    match options.catalog {
        Some(catalog) => config.offering(catalog.interfaces(), catalog.root()),
        None => config,
    }
}

/// The first bytes of the call under way in a stream, for the `raw` field of its error
/// record, without keeping the whole call (it may be megabytes long). `atfunc parse` and
/// the Python `StreamParser` use it, so their records agree on every chunking.
///
/// Show it every chunk before the parser reads it ([`see`](Self::see)), then tell it of
/// the events that chunk gave: [`start`](Self::start) on [`Event::CallStarted`],
/// [`raw`](Self::raw) and [`stop`](Self::stop) on the call or malformed span that ends it.
///
#[derive(Debug, Default)]
pub(crate) struct CallHead {
    /// Absolute offset of the first byte of the chunk last seen.
    chunk_start: u64,
    /// Length of the chunk last seen.
    chunk_len: usize,
    /// At most [`RAW_LIMIT`] bytes from the `@` of the current call, once started.
    capture: Option<Vec<u8>>,
}

impl CallHead {
    /// The next chunk, before the parser reads it.
    pub(crate) fn see(&mut self, chunk: &[u8]) {
        if let Some(capture) = &mut self.capture {
            let room = RAW_LIMIT.saturating_sub(capture.len());
            capture.extend_from_slice(chunk.get(..room.min(chunk.len())).unwrap_or_default());
        }
        self.chunk_start += self.chunk_len as u64;
        self.chunk_len = chunk.len();
    }

    /// A call started at `start`; `chunk` is the chunk last seen, whose feeding read its `(`.
    pub(crate) fn start(&mut self, start: u64, name: &str, chunk: &[u8]) {
        // From `@` to `(` a call is exactly `@name(` (a name is identifier characters and
        // dots, so it is reported as written), however far back its `@` lies; what follows
        // the `(` is in this chunk.
        let mut head = format!("@{name}(").into_bytes();
        let after = start.saturating_add(head.len() as u64);
        let rest = after
            .checked_sub(self.chunk_start)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| chunk.get(i..))
            .unwrap_or_default();
        let room = RAW_LIMIT.saturating_sub(head.len());
        head.extend_from_slice(rest.get(..room.min(rest.len())).unwrap_or_default());
        head.truncate(RAW_LIMIT);
        self.capture = Some(head);
    }

    /// The call under way ended (a call or a malformed span).
    pub(crate) fn stop(&mut self) {
        self.capture = None;
    }

    /// The first bytes of the call under way, at most `span_len` of them (invalid UTF-8
    /// replaced).
    pub(crate) fn raw(&self, span_len: u64) -> String {
        let bytes = self.capture.as_deref().unwrap_or_default();
        let len = usize::try_from(span_len)
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        String::from_utf8_lossy(bytes.get(..len).unwrap_or_default()).into_owned()
    }
}

/// The calls and the errors found in one complete text, each in text order.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Records {
    /// Call records: `{"name", "args", "body", "span", "chars"}` for a bound call, or
    /// `{"name", "positional", "named", "body", "span", "chars"}` when there are no tools.
    /// `span` is in bytes, `chars` the same range in characters.
    pub calls: Vec<Json>,
    /// Error records, `{"error", "span", "chars", "raw"}`: spans that looked like calls but
    /// did not parse or bind; `raw` is the span's text, cut to 200 bytes.
    pub errors: Vec<Json>,
}

/// Parses a whole completion and builds the record of every call-shaped span in it.
///
/// ```
/// use atfunc::batch::{completion_records, RecordOptions};
/// let found = completion_records("@a.b(1) and @c.d(", &RecordOptions::default());
/// assert_eq!(found.calls[0]["positional"], serde_json::json!([1]));
/// assert_eq!(found.errors[0]["raw"], "@c.d(");
/// ```
pub fn completion_records(completion: &str, options: &RecordOptions<'_>) -> Records {
    let mut records = Records::default();
    let visited: Result<(), Infallible> = each_record(completion, options, |record| {
        match record {
            Record::Call(json) => records.calls.push(json),
            Record::Error(json) => records.errors.push(json),
        }
        Ok(())
    });
    match visited {
        Ok(()) => records,
    }
}

/// A completion is parsed this many bytes at a time (cut at a character boundary), and
/// each piece's records are handed on before the next is read: a record of a million
/// calls took 1.8 GB when all its events, then all its records, were held at once. The
/// records do not depend on the pieces (the parser gives the same events on every
/// chunking).
const COMPLETION_PIECE: usize = 64 << 10;

/// Calls `visit` with the record of every call-shaped span of `completion`, in text order,
/// each as soon as its piece of the text is parsed; stops at the first error `visit`
/// returns.
fn each_record<E>(
    completion: &str,
    options: &RecordOptions<'_>,
    visit: impl FnMut(Record) -> Result<(), E>,
) -> Result<(), E> {
    each_record_in_pieces(completion, options, COMPLETION_PIECE, visit)
}

/// [`each_record`], parsing `piece` bytes at a time (more to end at a character boundary).
fn each_record_in_pieces<E>(
    completion: &str,
    options: &RecordOptions<'_>,
    piece: usize,
    mut visit: impl FnMut(Record) -> Result<(), E>,
) -> Result<(), E> {
    let mut parser = StreamParser::new(parser_config(options));
    // Reused from piece to piece; empty between them.
    let mut events = Vec::new();
    let mut rest = completion;
    let size = piece.max(1);
    loop {
        let piece = if rest.is_empty() {
            parser.finish_into(&mut events);
            ""
        } else {
            let mut at = size.min(rest.len());
            while !rest.is_char_boundary(at) {
                at += 1;
            }
            let (piece, tail) = rest.split_at(at);
            parser.feed_into(piece.as_bytes(), &mut events);
            rest = tail;
            piece
        };
        for event in events.drain(..) {
            match event {
                Event::Call(call) => {
                    let raw = || {
                        let text = usize::try_from(call.span.start)
                            .ok()
                            .zip(usize::try_from(call.span.end).ok())
                            .and_then(|(start, end)| completion.get(start..end));
                        Cow::Borrowed(text.unwrap_or_default())
                    };
                    visit(call_record(&call, options, raw))?;
                }
                Event::Malformed { span, error, text } => {
                    visit(Record::Error(malformed_record(span, &error, &text)))?;
                }
                _ => {}
            }
        }
        if piece.is_empty() {
            return Ok(());
        }
    }
}

/// At most `limit` bytes of `text`, cut at a character boundary.
fn cut(text: &str, limit: usize) -> &str {
    let mut at = limit.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    text.get(..at).unwrap_or_default()
}

/// Turns input lines into output lines: parses each record's completion and binds its calls
/// to the record's tools or the default ones. Shared by many threads: `&self` is enough.
#[derive(Debug)]
pub struct Batch {
    tools: Option<Arc<Catalog>>,
    cache: Mutex<ToolCache>,
    /// The limits records' own `tools` are loaded within.
    limits: LoadLimits,
    /// The call format completions are read in.
    dialect: Dialect,
}

/// One input line as read; `tools` stays raw text so a repeated list is hashed, not parsed.
#[derive(Deserialize)]
#[serde(expecting = "a record {\"id\": ..., \"completion\": \"...\", \"tools\": [...]}")]
struct Input<'a> {
    #[serde(default)]
    id: Json,
    #[serde(default)]
    completion: Option<Json>,
    #[serde(borrow, default)]
    tools: Option<&'a RawValue>,
}

#[derive(Serialize)]
struct Failed<'a> {
    id: &'a Json,
    line: u64,
    error: String,
}

impl Batch {
    /// A batch whose records without `tools` bind to `tools` (or stay unbound if `None`).
    pub fn new(tools: Option<Catalog>) -> Batch {
        Batch {
            tools: tools.map(Arc::new),
            cache: Mutex::new(ToolCache::default()),
            limits: LoadLimits::default(),
            dialect: Dialect::Atfunc,
        }
    }

    /// Reads completions' calls written in `dialect` (default atfunc).
    pub fn with_dialect(mut self, dialect: Dialect) -> Batch {
        self.dialect = dialect;
        self
    }

    /// Loads records' own `tools` within `limits` (default: [`LoadLimits::default`]); a
    /// record whose tools go past one becomes an error line naming the limit.
    pub fn with_load_limits(mut self, limits: LoadLimits) -> Batch {
        self.limits = limits;
        self
    }

    /// The output line (no newline) for input line number `number` (1-based, for error
    /// lines), or `None` for a blank line.
    pub fn process_line(&self, number: u64, line: &[u8]) -> Option<String> {
        let mut out = Vec::with_capacity(128);
        match self.write_line(number, line, &mut out) {
            Ok(true) => {}
            // Writing to a `Vec` cannot fail.
            Ok(false) | Err(_) => return None,
        }
        // serde_json writes UTF-8 only; a lossy conversion would change nothing.
        Some(
            String::from_utf8(out)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        )
    }

    /// Writes the output line of input line number `number` (1-based, for error lines) to
    /// `out`, without its newline: the bytes [`process_line`](Self::process_line) gives.
    /// Returns `false`, having written nothing, for a blank line.
    ///
    /// Each call's record is written as soon as its piece of the completion is parsed, so
    /// a record of a million calls never holds them all: what stays in memory is the
    /// record's error records (as bytes: they follow all of its calls in the line) and
    /// whatever `out` keeps. An error from `out` stops the line where it is.
    ///
    /// ```
    /// use atfunc::batch::Batch;
    /// let mut out = Vec::new();
    /// let line = br#"{"id": 1, "completion": "@a.b(1) @c("}"#;
    /// assert!(Batch::new(None).write_line(1, line, &mut out).unwrap());
    /// assert!(out.starts_with(br#"{"id":1,"calls":[{"name":"a.b","positional":[1],"#));
    /// assert!(out.ends_with(br#""raw":"@c("}]}"#));
    /// ```
    pub fn write_line<W: Write + ?Sized>(
        &self,
        number: u64,
        line: &[u8],
        out: &mut W,
    ) -> io::Result<bool> {
        let line = line.trim_ascii();
        if line.is_empty() {
            return Ok(false);
        }
        // serde would take `[id, completion]` for a record too; only an object is one.
        if line.first() != Some(&b'{') {
            let error = match serde_json::from_slice::<Json>(line) {
                Ok(other) => format!("a record is a JSON object, found {}", json_kind(&other)),
                Err(error) => json_error(&error),
            };
            write_failed(out, &Json::Null, number, error)?;
            return Ok(true);
        }
        match serde_json::from_slice::<Input<'_>>(line) {
            Err(error) => write_failed(out, &Json::Null, number, json_error(&error))?,
            Ok(input) => {
                if let Err(error) = self.write_record(&input, out)? {
                    write_failed(out, &input.id, number, error)?;
                }
            }
        }
        Ok(true)
    }

    /// Writes `{"id", "calls", "errors"}` for a record; `Ok(Err(message))`, having written
    /// nothing, when the record cannot be processed (the message of its error line).
    fn write_record<W: Write + ?Sized>(
        &self,
        input: &Input<'_>,
        out: &mut W,
    ) -> io::Result<Result<(), String>> {
        let completion = match &input.completion {
            Some(Json::String(text)) => text,
            None | Some(Json::Null) => return Ok(Err("missing \"completion\"".to_owned())),
            Some(other) => {
                return Ok(Err(format!(
                    "\"completion\" must be a string, found {}",
                    json_kind(other)
                )))
            }
        };
        let own;
        let catalog = match input.tools {
            Some(raw) => match self.tools_for(raw.get()) {
                Ok(loaded) => {
                    own = loaded;
                    Some(&*own)
                }
                Err(error) => return Ok(Err(error.to_string())),
            },
            None => self.tools.as_deref(),
        };
        let options = RecordOptions {
            catalog,
            dialect: self.dialect,
        };
        // The bytes serde_json gives for the object `{"id", "calls", "errors"}`, written as
        // the records come: each call at once, the errors once the last call is out.
        out.write_all(b"{\"id\":")?;
        serde_json::to_writer(&mut *out, &input.id)?;
        out.write_all(b",\"calls\":[")?;
        let mut calls = 0usize;
        let mut errors = Vec::new();
        each_record(completion, &options, |record| -> io::Result<()> {
            match record {
                Record::Call(json) => {
                    if calls > 0 {
                        out.write_all(b",")?;
                    }
                    calls += 1;
                    serde_json::to_writer(&mut *out, &json)?;
                }
                Record::Error(json) => {
                    if !errors.is_empty() {
                        errors.push(b',');
                    }
                    serde_json::to_writer(&mut errors, &json)?;
                }
            }
            Ok(())
        })?;
        out.write_all(b"],\"errors\":[")?;
        out.write_all(&errors)?;
        out.write_all(b"]}")?;
        Ok(Ok(()))
    }

    /// The catalog for a tool set given as JSON text (a record's raw `tools`), from the
    /// cache when the same text was seen before; the error displays as the message an
    /// error line gives for it (`invalid "tools": ...`).
    ///
    /// ```
    /// use atfunc::batch::{Batch, ToolsError};
    ///
    /// let batch = Batch::new(None);
    /// assert!(batch.tools_for(r#"[{"name": "now", "parameters": {"type": "object"}}]"#).is_ok());
    /// let error = batch.tools_for("[{").unwrap_err();
    /// assert!(matches!(error, ToolsError::Unreadable { .. }));
    /// assert!(error.to_string().starts_with("invalid \"tools\": "), "{error}");
    /// ```
    pub fn tools_for(&self, raw: &str) -> Result<Arc<Catalog>, ToolsError> {
        let key = {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            raw.hash(&mut hasher);
            hasher.finish()
        };
        if let Some(hit) = self.lock().get(key, raw) {
            return hit;
        }
        // Loaded outside the lock: other threads go on meanwhile. Two threads may load the
        // same new set at once; both results are equal and one of them is kept.
        let loaded = load_tools(raw, &self.limits);
        self.lock().insert(key, raw, loaded.clone());
        loaded
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ToolCache> {
        // The cache holds no invariant a panicking thread could break halfway.
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The output lines for `lines`, numbered from `first_number`, in input order (blank
    /// lines give none), computed on every core of rayon's global pool.
    #[cfg(feature = "batch")]
    pub fn process_lines<L: AsRef<[u8]> + Sync>(
        &self,
        first_number: u64,
        lines: &[L],
    ) -> Vec<String> {
        use rayon::prelude::*;
        lines
            .par_iter()
            .enumerate()
            .filter_map(|(i, line)| self.process_line(first_number + i as u64, line.as_ref()))
            .collect()
    }
}

/// Writes the error line `{"id", "line", "error"}` of a line that is not a record.
fn write_failed<W: Write + ?Sized>(
    out: &mut W,
    id: &Json,
    line: u64,
    error: String,
) -> io::Result<()> {
    serde_json::to_writer(out, &Failed { id, line, error }).map_err(io::Error::from)
}

fn load_tools(raw: &str, limits: &LoadLimits) -> Result<Arc<Catalog>, ToolsError> {
    // Read from the text, so that each definition's parameters keep their written order
    // whatever serde_json's features are.
    match LoadOptions::default().with_limits(*limits).load_str(raw) {
        Ok(loaded) => Ok(Arc::new(Catalog::new(loaded.interfaces))),
        Err(LoadError::Invalid(problems)) => Err(ToolsError::Invalid { problems }),
        Err(LoadError::Json(e)) => Err(ToolsError::Unreadable {
            message: json_error(&e),
        }),
        Err(LoadError::Limit {
            function,
            limit,
            value,
        }) => Err(ToolsError::Limit {
            function,
            limit,
            value,
        }),
        // `NotAList`, and whatever kind a later loader adds: its message says what to fix.
        Err(other) => Err(ToolsError::Unreadable {
            message: other.to_string(),
        }),
    }
}

/// `not valid JSON: expected value at column 12`: a record is one line, so no line number.
fn json_error(error: &serde_json::Error) -> String {
    let message = json_message(error);
    match error.classify() {
        serde_json::error::Category::Data => message,
        _ => format!("not valid JSON: {message} at column {}", error.column()),
    }
}

type Loaded = Result<Arc<Catalog>, ToolsError>;

/// Tool sets by hash of their raw text, least recently used out first.
#[derive(Debug, Default)]
struct ToolCache {
    entries: HashMap<u64, CacheEntry>,
    /// Ticks once per lookup; an entry's `used` is the tick of its last hit.
    clock: u64,
}

#[derive(Debug)]
struct CacheEntry {
    /// Compared on a hit, so a hash collision is a miss, never the wrong tools.
    raw: Box<str>,
    loaded: Loaded,
    used: u64,
}

impl ToolCache {
    fn get(&mut self, key: u64, raw: &str) -> Option<Loaded> {
        self.clock += 1;
        let entry = self.entries.get_mut(&key)?;
        if &*entry.raw != raw {
            return None;
        }
        entry.used = self.clock;
        Some(entry.loaded.clone())
    }

    fn insert(&mut self, key: u64, raw: &str, loaded: Loaded) {
        if self.entries.len() >= TOOL_CACHE_CAPACITY && !self.entries.contains_key(&key) {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, entry)| entry.used)
                .map(|(key, _)| *key);
            if let Some(oldest) = oldest {
                self.entries.remove(&oldest);
            }
        }
        self.entries.insert(
            key,
            CacheEntry {
                raw: raw.into(),
                loaded,
                used: self.clock,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_head_keeps_a_call_s_first_bytes_across_chunks() {
        let mut parser = StreamParser::default();
        let mut head = CallHead::default();
        let mut raw = None;
        for chunk in ["say @a.b(1, ", "2)!"] {
            head.see(chunk.as_bytes());
            for event in parser.feed(chunk.as_bytes()) {
                match event {
                    Event::CallStarted { name, start } => {
                        head.start(start, &name, chunk.as_bytes())
                    }
                    Event::Call(call) => raw = Some(head.raw(call.span.len())),
                    _ => {}
                }
            }
        }
        assert_eq!(raw.as_deref(), Some("@a.b(1, 2)"));
    }

    const TOOLS: &str = r#"[{"name": "a.b", "parameters": {"type": "object",
        "properties": {"x": {"type": "integer"}}, "required": ["x"]}}]"#;

    #[test]
    fn a_repeated_tool_set_is_loaded_once_and_the_cache_stays_bounded() {
        let batch = Batch::new(None);
        for _ in 0..3 {
            let loaded = batch.tools_for(TOOLS);
            assert!(loaded.is_ok());
        }
        assert_eq!(batch.lock().entries.len(), 1);
        let first = batch.tools_for(TOOLS).ok();
        let second = batch.tools_for(TOOLS).ok();
        assert!(matches!((first, second), (Some(a), Some(b)) if Arc::ptr_eq(&a, &b)));

        for i in 0..TOOL_CACHE_CAPACITY + 10 {
            let tools = TOOLS.replace("a.b", &format!("a.b{i}"));
            assert!(batch.tools_for(&tools).is_ok());
        }
        assert_eq!(batch.lock().entries.len(), TOOL_CACHE_CAPACITY);
    }

    #[test]
    fn a_hash_collision_is_a_miss() {
        let mut cache = ToolCache::default();
        let error = ToolsError::Unreadable {
            message: "first".to_owned(),
        };
        cache.insert(1, "[]", Err(error));
        assert!(cache.get(1, "[ ]").is_none());
        assert!(cache.get(1, "[]").is_some());
    }

    #[test]
    fn invalid_tools_are_an_error_and_cached_too() {
        let batch = Batch::new(None);
        let Err(error) = batch.tools_for(r#"[{"name": "a b"}]"#) else {
            panic!("an invalid name loaded");
        };
        assert!(
            matches!(&error, ToolsError::Invalid { problems } if !problems.is_empty()),
            "{error:?}"
        );
        assert!(
            error.to_string().starts_with("invalid \"tools\": "),
            "{error}"
        );
        assert_eq!(batch.lock().entries.len(), 1);
    }

    /// Each kind of bad `tools` is its own variant, and its message is the line's error.
    #[test]
    fn each_kind_of_bad_tools_is_told_apart() {
        let batch = Batch::new(None);
        let kind = |raw: &str| batch.tools_for(raw).err();
        assert!(
            matches!(kind("[{"), Some(ToolsError::Unreadable { message }) if message.starts_with("not valid JSON: ")),
        );
        assert!(matches!(kind("7"), Some(ToolsError::Unreadable { .. })));
        assert_eq!(
            kind("7").map(|e| e.to_string()),
            Some(
                "invalid \"tools\": expected a list of tool definitions, found a number".to_owned()
            )
        );
        let deep = r##"[{"name": "f", "parameters": {"$defs": {"a": {"type": "object", "properties": {"x": {"$ref": "#/$defs/b"}, "y": {"$ref": "#/$defs/b"}}}, "b": {"type": "object", "properties": {"x": {"$ref": "#/$defs/c"}, "y": {"$ref": "#/$defs/c"}}}, "c": {"type": "string"}}, "type": "object", "properties": {"p": {"$ref": "#/$defs/a"}}}}]"##;
        let small = Batch::new(None).with_load_limits(LoadLimits::default().with_max_ref_nodes(3));
        let error = small.tools_for(deep).err();
        assert!(
            matches!(&error, Some(ToolsError::Limit { function, limit: LoadLimit::RefNodes, .. }) if function == "f"),
            "{error:?}"
        );
    }

    #[test]
    fn cut_never_splits_a_character() {
        assert_eq!(cut("aé", 2), "a");
        assert_eq!(cut("abc", 10), "abc");
    }

    /// The records of `completion` as they were found before it was parsed in pieces: the
    /// whole completion's events at once.
    fn records_of_the_whole(completion: &str, options: &RecordOptions) -> Vec<Record> {
        let mut parser = StreamParser::new(parser_config(options));
        let mut events = parser.feed_str(completion);
        parser.finish_into(&mut events);
        let mut records = Vec::new();
        for event in events {
            match event {
                Event::Call(call) => {
                    let raw = || {
                        let (start, end) = (call.span.start as usize, call.span.end as usize);
                        Cow::Borrowed(&completion[start..end])
                    };
                    records.push(call_record(&call, options, raw));
                }
                Event::Malformed { span, error, text } => {
                    records.push(Record::Error(malformed_record(span, &error, &text)));
                }
                _ => {}
            }
        }
        records
    }

    /// The output line as it was made before lines were written as they are parsed: one
    /// JSON tree of the whole completion's records, serialised.
    fn line_of_the_whole_tree(id: &Json, completion: &str, options: &RecordOptions) -> String {
        let (mut calls, mut errors) = (Vec::new(), Vec::new());
        for record in records_of_the_whole(completion, options) {
            match record {
                Record::Call(json) => calls.push(json),
                Record::Error(json) => errors.push(json),
            }
        }
        // The fields in the order the line writes them, whatever serde_json's features.
        #[derive(Serialize)]
        struct Line<'a> {
            id: &'a Json,
            calls: Vec<Json>,
            errors: Vec<Json>,
        }
        serde_json::to_string(&Line { id, calls, errors }).unwrap()
    }

    /// Calls, calls that do not bind (`x` is an integer in [`TOOLS`]) and cut-off calls,
    /// with characters of 2 and 4 bytes, each in the dialect it is written in.
    const CALLS: [(&str, Dialect); 6] = [
        ("@a.b(x=1)", Dialect::Atfunc),
        ("@a.b(x='Zürich 😀')", Dialect::Atfunc),
        ("@c.d(1) with_body [[{\"k\": \"é\"}]]", Dialect::Atfunc),
        ("@a.b(x=2", Dialect::Atfunc),
        (
            "<tool_call>\n{\"name\": \"a.b\", \"arguments\": {\"x\": \"😀\"}}\n</tool_call>",
            Dialect::Hermes,
        ),
        ("[a.b(x=1), a.b(y=2)]", Dialect::Pythonic),
    ];

    /// Prose with `call` three times in it, the last one at the end.
    fn completion_with(prefix: &str, call: &str) -> String {
        let mut completion = prefix.to_owned();
        for k in 0..3 {
            completion.push_str(call);
            completion.push_str(&" 😀 mail@example.org ".repeat(2 - k));
        }
        completion
    }

    #[test]
    fn a_completion_gives_the_same_records_in_pieces_of_every_size() {
        let batch = Batch::new(None);
        let catalog = batch.tools_for(TOOLS).unwrap();
        for (call, dialect) in CALLS {
            // A Python list has no marker of its own: a call only where it is the answer.
            let completion = if dialect == Dialect::Pythonic {
                call.to_owned()
            } else {
                completion_with("Sure, ü: ", call)
            };
            for catalog in [None, Some(&*catalog)] {
                let options = RecordOptions { catalog, dialect };
                let whole = records_of_the_whole(&completion, &options);
                assert!(!whole.is_empty(), "{call:?}");
                for size in (1..=40).chain([64, COMPLETION_PIECE]) {
                    let mut pieces = Vec::new();
                    let visited: Result<(), Infallible> =
                        each_record_in_pieces(&completion, &options, size, |record| {
                            pieces.push(record);
                            Ok(())
                        });
                    assert!(visited.is_ok());
                    assert_eq!(pieces, whole, "{call:?} in pieces of {size}");
                }
            }
        }
    }

    #[test]
    fn a_line_written_as_it_is_parsed_is_the_whole_trees_line_byte_for_byte() {
        let batch = Batch::new(None);
        let catalog = batch.tools_for(TOOLS).unwrap();
        for (call, dialect) in CALLS {
            // Short, and long enough that calls stand across the first pieces' boundary
            // (with a character of 2 bytes cut by it, or not).
            let long = "ü".repeat((COMPLETION_PIECE - 5) / 2);
            for prefix in ["", "Sure: ", &long, &format!("{long}x")] {
                let completion = completion_with(prefix, call);
                let id = json!({"n": prefix.len()});
                let line = json!({"id": id, "completion": completion}).to_string();
                for catalog in [None, Some(&*catalog)] {
                    let batch = Batch::new(catalog.cloned()).with_dialect(dialect);
                    let options = RecordOptions { catalog, dialect };
                    assert_eq!(
                        batch.process_line(1, line.as_bytes()).unwrap(),
                        line_of_the_whole_tree(&id, &completion, &options),
                        "{call:?} after {} bytes, tools: {}",
                        prefix.len(),
                        catalog.is_some()
                    );
                }
            }
        }
    }

    #[test]
    fn an_error_from_the_writer_stops_the_line() {
        struct Full(usize);
        impl Write for Full {
            fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
                self.0 += bytes.len();
                if self.0 > 100 {
                    return Err(io::Error::other("full"));
                }
                Ok(bytes.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let line = json!({"id": 1, "completion": "@a.b(1) ".repeat(1000)}).to_string();
        let mut out = Full(0);
        let error = Batch::new(None).write_line(1, line.as_bytes(), &mut out);
        assert_eq!(error.map_err(|e| e.to_string()), Err("full".to_owned()));
        assert!(out.0 < 1000, "{} bytes were offered", out.0);
    }
}
