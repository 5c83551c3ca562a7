//! Other models' tool-call formats ("dialects"), read into the same [`Event`]s as the atfunc
//! syntax.
//!
//! Models trained for function calling write their calls in the format their chat template
//! teaches them. Each dialect here is one such format, and its reader gives the same
//! [`Call`] (name, arguments, span) the atfunc parser gives, so binding, records and
//! execution need not know which format a model wrote.
//!
//! ```
//! use atfunc::parse::{Dialect, ParserConfig};
//! use atfunc::{Event, StreamParser};
//! use atfunc::parse::Value;
//!
//! let config = ParserConfig::default().with_dialect(Dialect::Hermes);
//! let mut parser = StreamParser::new(config);
//! let mut events = parser.feed_str("Checking.<tool_call>{\"name\": \"weather.get\", \"argu");
//! events.extend(parser.feed_str("ments\": {\"city\": \"Paris\"}}</tool_call>"));
//! events.extend(parser.finish());
//!
//! let call = events.iter().find_map(|e| match e {
//!     Event::Call(call) => Some(call),
//!     _ => None,
//! });
//! let call = call.expect("one call");
//! assert_eq!(call.name, "weather.get");
//! assert_eq!(call.named, vec![("city".to_owned(), Value::String("Paris".into()))]);
//! ```
//!
//! # How it works
//!
//! One reader (`reader.rs`) runs every dialect. In text it looks for the first byte a
//! dialect's opening marker can start with (`memchr`) and releases everything before it.
//! At a candidate it asks the dialect whether a call opens there: yes, no, or "need more
//! bytes" (a marker split across chunks is held, and at the end of the stream it is text).
//! Inside a call, the dialect's scanner steps through its grammar, resuming where the last
//! chunk stopped; JSON and Python values are skipped by one incremental value scanner that
//! knows strings, escapes and nesting, so `{`, `]` or a closing marker inside a string
//! argument changes nothing. Once the call block is complete, its pieces are read once
//! (`serde_json` for JSON, a small reader for Python literals) into calls. The limits of
//! [`ParserConfig`] hold: a block longer than `max_call_len`, values nested deeper than
//! `max_depth` or a call with more than `max_args` arguments is reported malformed, with its
//! text. Past the call limit the block's scanner runs on only to find where the block ends;
//! the bytes up to there are text, released as they come and never read as calls, so a
//! block over the limit is one error in every dialect.
//!
//! A block that the stream ends inside is an [`Event::Malformed`] with
//! [`ParseErrorKind::Unterminated`](super::ParseErrorKind::Unterminated), never a call. A
//! block holding several calls (a JSON array, a Python list) gives one call per element;
//! their spans cut the block in order, the first from its opening marker, the last to its
//! closing one, so text and call spans together cover the input. Llama 3's `;`-separated
//! objects are a chain of blocks, one per call, each handed out once it and the `;` after it
//! are read: a chain is never held whole, and the call limit applies to each call.
//!
//! A block without a marker of its own (a bare JSON call object, a Python list of calls)
//! is a call only where the answer holds nothing but calls (`untagged.rs`): its events are
//! held until the answer ends, or released as text once prose shows.
//!
//! [`Dialect::Auto`] decides per block, by where it stands (`auto.rs` gives the rules): a
//! marker that names its format is read wherever it is not a word of a sentence; a Python
//! list or bare JSON object only where the answer is calls alone, an atfunc
//! `@name(` where atfunc's own reader reads one (not after a word character), and these
//! only until calls of another format were read (until
//! [`StreamParser::finish`](super::StreamParser::finish)).
//! With the offered tools known, a Markdown fence right around an untagged call is one
//! block with it (`fence.rs`): the fence goes with the call when the call is read, and is
//! given back as text otherwise.
//! Text before a block is released as it comes, as for any dialect.

mod at_call;
mod auto;
mod block;
mod deepseek;
mod fence;
mod harmony;
mod hermes;
mod llama3;
mod mistral;
mod pythonic;
mod qwen3_xml;
mod reader;
mod scan;
mod unique_keys;
mod untagged;

pub(crate) use reader::Reader;

#[allow(unused_imports)]
use super::{Call, Event, ParserConfig};
use std::fmt;
use std::str::FromStr;

/// The tool-call format a [`StreamParser`](super::StreamParser) reads.
///
/// | dialect | models | a call |
/// |---|---|---|
/// | `atfunc` | any, prompted with atfunc's interface | `@weather.get(city="Paris")` |
/// | `hermes` | Hermes 2/3, Qwen 2.5/3 | `<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>` |
/// | `llama3` | Llama 3.1–3.3 | `<\|python_tag\|>{"name": "f", "parameters": {"a": 1}}` |
/// | `mistral` | Mistral, Mixtral, Nemo | `[TOOL_CALLS][{"name": "f", "arguments": {"a": 1}}]` or `[TOOL_CALLS]f[ARGS]{"a": 1}` |
/// | `pythonic` | Llama 3.2/4, many fine-tunes | `[f(a=1), g(b='x')]` |
/// | `deepseek` | DeepSeek V3, V3.1 | `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{"a": 1}<｜tool▁call▁end｜><｜tool▁calls▁end｜>` |
/// | `qwen3_xml` | Qwen3-Coder | `<tool_call><function=f><parameter=a>1</parameter></function></tool_call>` |
/// | `harmony` | gpt-oss | `<\|channel\|>commentary to=functions.f <\|constrain\|>json<\|message\|>{"a": 1}<\|call\|>` |
/// | `auto` | any of the above | by each block's marker and where it stands |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Dialect {
    /// atfunc's own syntax, `@name(args)` (the default).
    #[default]
    Atfunc,
    /// `<tool_call>` + JSON `{"name", "arguments"}` (or an array of them) + `</tool_call>`.
    Hermes,
    /// Optional `<|python_tag|>`, then JSON `{"name", "parameters"}` objects separated by `;`.
    Llama3,
    /// `[TOOL_CALLS]` + a JSON array, or `[TOOL_CALLS]name[ARGS]{...}`.
    Mistral,
    /// A Python list of calls with keyword arguments and Python literals.
    Pythonic,
    /// DeepSeek V3's and V3.1's `<｜tool▁calls▁begin｜>` blocks.
    Deepseek,
    /// Qwen3-Coder's `<function=NAME><parameter=K>V</parameter></function>`; raw values.
    Qwen3Xml,
    /// gpt-oss's harmony messages addressed `to=functions.NAME`.
    Harmony,
    /// Any of the others, `atfunc` included: each block by its marker and where it stands.
    Auto,
}

impl Dialect {
    /// Every dialect, `Atfunc` first and `Auto` last.
    pub const ALL: [Dialect; 9] = [
        Dialect::Atfunc,
        Dialect::Hermes,
        Dialect::Llama3,
        Dialect::Mistral,
        Dialect::Pythonic,
        Dialect::Deepseek,
        Dialect::Qwen3Xml,
        Dialect::Harmony,
        Dialect::Auto,
    ];

    /// The other models' formats: every dialect but `Atfunc` and `Auto`.
    pub fn others() -> &'static [Dialect] {
        &Dialect::ALL[1..Dialect::ALL.len() - 1]
    }

    /// The name the command line and the config use: `hermes`, `qwen3_xml`, `auto`, ...
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Atfunc => "atfunc",
            Dialect::Hermes => "hermes",
            Dialect::Llama3 => "llama3",
            Dialect::Mistral => "mistral",
            Dialect::Pythonic => "pythonic",
            Dialect::Deepseek => "deepseek",
            Dialect::Qwen3Xml => "qwen3_xml",
            Dialect::Harmony => "harmony",
            Dialect::Auto => "auto",
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A dialect name that is none of [`Dialect::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown dialect `{name}`: expected one of atfunc, hermes, llama3, mistral, pythonic, deepseek, qwen3_xml, harmony, auto")]
#[non_exhaustive]
pub struct UnknownDialect {
    /// The name as given.
    pub name: String,
}

impl FromStr for Dialect {
    type Err = UnknownDialect;

    fn from_str(s: &str) -> Result<Dialect, UnknownDialect> {
        let wanted = s.trim().to_ascii_lowercase().replace('-', "_");
        Dialect::ALL
            .into_iter()
            .find(|d| d.name() == wanted)
            .ok_or_else(|| UnknownDialect { name: s.to_owned() })
    }
}

/// Test support: the events of `text` read as `dialect`, checked to be the same fed whole
/// and in pieces of 1 to 7 bytes, and the calls among them.
#[cfg(test)]
pub(super) fn read_at_every_chunking(dialect: Dialect, text: &str) -> (Vec<Event>, Vec<Call>) {
    use super::StreamParser;
    let config = ParserConfig::default().with_dialect(dialect);
    let run = |piece: usize| {
        let mut parser = StreamParser::new(config.clone());
        let mut events = Vec::new();
        for chunk in text.as_bytes().chunks(piece.max(1)) {
            parser.feed_into(chunk, &mut events);
        }
        parser.finish_into(&mut events);
        join_text(events)
    };
    let whole = run(text.len());
    for piece in 1..8 {
        assert_eq!(
            run(piece),
            whole,
            "{dialect} in {piece}-byte pieces: {text:?}"
        );
    }
    let calls = whole
        .iter()
        .filter_map(|e| match e {
            Event::Call(call) => Some(call.clone()),
            _ => None,
        })
        .collect();
    (whole, calls)
}

#[cfg(test)]
fn join_text(events: Vec<Event>) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::new();
    for event in events {
        if let (Event::Text { text }, Some(Event::Text { text: last })) = (&event, out.last_mut()) {
            last.push_str(text);
            continue;
        }
        out.push(event);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in Dialect::ALL {
            assert_eq!(d.name().parse::<Dialect>(), Ok(d));
            assert_eq!(d.to_string(), d.name());
        }
        assert_eq!("Qwen3-XML".parse::<Dialect>(), Ok(Dialect::Qwen3Xml));
        assert!("gemma".parse::<Dialect>().is_err());
    }
}
