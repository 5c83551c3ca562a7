//! atfunc's dialect readers beside the `tool-parser` crate (SGLang's model gateway), on the
//! same answers: the correctness binary (`agreement`) and the criterion bench (`peers`)
//! share what is here.
//!
//! The answers are the BFCL ground truth (the main crate's `tests/data/bfcl`) written in each
//! format both crates read, with a sentence of prose before and after, the way the main
//! crate's `crates/atfunc/tests/parse/dialects.rs` renders them. Each [`Form`] is one way of writing
//! calls: atfunc reads it with one [`Dialect`], `tool-parser` with one of its named parsers.
//!
//! How each side is run:
//! - atfunc: a fresh [`StreamParser`] per answer, the answer fed in the given pieces, then
//!   `finish`; every `Event::Call` is a call.
//! - `tool-parser`, whole: `parse_complete_with_tools` (its non-streaming entry point), on a
//!   fresh parser from its registry.
//! - `tool-parser`, streamed: `parse_incremental` once per piece on a fresh parser, then
//!   `get_unstreamed_tool_args` at the end of the stream, as its gateway does. Its stream
//!   gives, per `tool_index`, the name once and the arguments as JSON text in deltas: a call
//!   is the first name given for an index with all the deltas for that index joined in
//!   order, read as JSON (no delta at all is `{}`). An index with deltas but no name, or
//!   with joined text that is not JSON, counts as a wrong call.
//!
//! The peer's API is async (`async_trait`) but never waits on anything: [`block_on`] polls
//! each future with a no-op waker, so no runtime's cost is in the figures.
//!
//! Its API takes `&str`, so a piece never ends inside a character: [`pieces`] moves each
//! cut to the next character boundary, and atfunc gets the very same pieces. (atfunc's own
//! tests also cut inside characters; that is not compared here.)

use atfunc::parse::{Dialect, ParserConfig, Value};
use atfunc::{Call, Event, StreamParser};
use serde_json::{json, Map, Value as Json};
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use tool_parser::factory::ParserRegistry;
use tool_parser::{ParserFactory, ToolParser};

/// The tool definitions a request would carry, as the peer takes them.
pub type Tools = Vec<openai_protocol::common::Tool>;

/// A call as the ground truth gives it: a name and JSON arguments.
pub type Expected = (String, Map<String, Json>);

/// One ground-truth answer: its calls and the tools its question offered.
pub struct Answer {
    pub calls: Vec<Expected>,
    pub tools: Tools,
}

/// A way of writing calls that both crates read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `<tool_call>\n{"name", "arguments"}\n</tool_call>`, one block per call.
    Hermes,
    /// One `<tool_call>` block holding a JSON array of calls.
    HermesArray,
    /// `<|python_tag|>` then `{"name", "parameters"}` objects joined by `; `.
    Llama3,
    /// `[TOOL_CALLS] [{"name", "arguments"}, ...]`.
    MistralArray,
    /// `[TOOL_CALLS]name[ARGS]{...}` per call.
    MistralArgs,
    /// `[name(key=literal, ...), ...]`.
    Pythonic,
    /// DeepSeek V3: `function<｜tool▁sep｜>name` and a fenced JSON block per call.
    DeepseekV3,
    /// DeepSeek V3.1: `name<｜tool▁sep｜>{...}` per call.
    DeepseekV31,
    /// Qwen3-Coder's `<function=name><parameter=key>raw</parameter></function>`.
    Qwen3Xml,
}

impl Form {
    /// Every form, in the order the tables show them.
    pub const ALL: [Form; 9] = [
        Form::Hermes,
        Form::HermesArray,
        Form::Llama3,
        Form::MistralArray,
        Form::MistralArgs,
        Form::Pythonic,
        Form::DeepseekV3,
        Form::DeepseekV31,
        Form::Qwen3Xml,
    ];

    /// The name in the tables.
    pub fn label(self) -> &'static str {
        match self {
            Form::Hermes => "hermes",
            Form::HermesArray => "hermes, array",
            Form::Llama3 => "llama3",
            Form::MistralArray => "mistral, array",
            Form::MistralArgs => "mistral, `[ARGS]`",
            Form::Pythonic => "pythonic",
            Form::DeepseekV3 => "deepseek V3",
            Form::DeepseekV31 => "deepseek V3.1",
            Form::Qwen3Xml => "qwen3_xml",
        }
    }

    /// The atfunc dialect that reads it.
    pub fn dialect(self) -> Dialect {
        match self {
            Form::Hermes | Form::HermesArray => Dialect::Hermes,
            Form::Llama3 => Dialect::Llama3,
            Form::MistralArray | Form::MistralArgs => Dialect::Mistral,
            Form::Pythonic => Dialect::Pythonic,
            Form::DeepseekV3 | Form::DeepseekV31 => Dialect::Deepseek,
            Form::Qwen3Xml => Dialect::Qwen3Xml,
        }
    }

    /// The name of the `tool-parser` parser that reads it (its registry's name).
    pub fn peer(self) -> &'static str {
        match self {
            Form::Hermes | Form::HermesArray => "qwen",
            Form::Llama3 => "llama",
            Form::MistralArray | Form::MistralArgs => "mistral",
            Form::Pythonic => "pythonic",
            Form::DeepseekV3 => "deepseek",
            Form::DeepseekV31 => "deepseek31",
            Form::Qwen3Xml => "qwen_xml",
        }
    }

    /// The form's markers that are one special token in the model's vocabulary, so a real
    /// stream never cuts them.
    pub fn special_tokens(self) -> &'static [&'static str] {
        match self {
            Form::Hermes | Form::HermesArray | Form::Qwen3Xml => &["<tool_call>", "</tool_call>"],
            Form::Llama3 => &["<|python_tag|>"],
            Form::MistralArray | Form::MistralArgs => &["[TOOL_CALLS]", "[ARGS]"],
            Form::Pythonic => &[],
            Form::DeepseekV3 | Form::DeepseekV31 => &[
                "<｜tool▁calls▁begin｜>",
                "<｜tool▁calls▁end｜>",
                "<｜tool▁call▁begin｜>",
                "<｜tool▁call▁end｜>",
                "<｜tool▁sep｜>",
            ],
        }
    }

    /// One answer in this form, with prose before and after.
    pub fn render(self, calls: &[Expected]) -> String {
        let object = |(name, args): &Expected, key: &str| {
            let mut o = Map::new();
            o.insert("name".into(), json!(name));
            o.insert(key.into(), Json::Object(args.clone()));
            Json::Object(o).to_string()
        };
        let joined = |each: &dyn Fn(&Expected) -> String, sep: &str| {
            calls.iter().map(each).collect::<Vec<_>>().join(sep)
        };
        let block = match self {
            Form::Hermes => joined(
                &|c| format!("<tool_call>\n{}\n</tool_call>", object(c, "arguments")),
                "\n",
            ),
            Form::HermesArray => format!(
                "<tool_call>\n[{}]\n</tool_call>",
                joined(&|c| object(c, "arguments"), ", ")
            ),
            Form::Llama3 => format!(
                "<|python_tag|>{}",
                joined(&|c| object(c, "parameters"), "; ")
            ),
            Form::MistralArray => format!(
                "[TOOL_CALLS] [{}]",
                joined(&|c| object(c, "arguments"), ", ")
            ),
            Form::MistralArgs => joined(
                &|(name, args)| format!("[TOOL_CALLS]{name}[ARGS]{}", Json::Object(args.clone())),
                "",
            ),
            Form::Pythonic => format!(
                "[{}]",
                joined(
                    &|(name, args)| {
                        let args: Vec<_> = args
                            .iter()
                            .map(|(k, v)| format!("{k}={}", py_literal(v)))
                            .collect();
                        format!("{name}({})", args.join(", "))
                    },
                    ", "
                )
            ),
            Form::DeepseekV3 | Form::DeepseekV31 => {
                let items = joined(
                    &|(name, args)| {
                        let args = Json::Object(args.clone());
                        if self == Form::DeepseekV31 {
                            format!("<｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{args}<｜tool▁call▁end｜>")
                        } else {
                            format!(
                                "<｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{args}\n```<｜tool▁call▁end｜>"
                            )
                        }
                    },
                    "\n",
                );
                format!("<｜tool▁calls▁begin｜>{items}<｜tool▁calls▁end｜>")
            }
            Form::Qwen3Xml => joined(
                &|(name, args)| {
                    let params: String = args
                        .iter()
                        .map(|(k, v)| {
                            let raw = match v {
                                Json::String(s) => s.clone(),
                                other => other.to_string(),
                            };
                            format!("<parameter={k}>\n{raw}\n</parameter>\n")
                        })
                        .collect();
                    format!("<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>")
                },
                "\n",
            ),
        };
        format!("Let me look that up for you.\n{block}\nThat should do it.")
    }
}

/// A JSON value as a Python literal.
fn py_literal(value: &Json) -> String {
    match value {
        Json::Null => "None".into(),
        Json::Bool(true) => "True".into(),
        Json::Bool(false) => "False".into(),
        Json::Number(n) => n.to_string(),
        Json::String(s) => {
            let escaped = s
                .replace('\\', "\\\\")
                .replace('\'', "\\'")
                .replace('\n', "\\n");
            format!("'{escaped}'")
        }
        Json::Array(items) => {
            let items: Vec<_> = items.iter().map(py_literal).collect();
            format!("[{}]", items.join(", "))
        }
        Json::Object(fields) => {
            let fields: Vec<_> = fields
                .iter()
                .map(|(k, v)| format!("{}: {}", py_literal(&json!(k)), py_literal(v)))
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
    }
}

/// The BFCL files whose ground truth is a list of calls.
const FILES: [&str; 4] = [
    "BFCL_v4_simple_python.json",
    "BFCL_v4_multiple.json",
    "BFCL_v4_parallel.json",
    "BFCL_v4_parallel_multiple.json",
];

/// Every ground-truth answer with the tools of its question. An argument takes its first
/// accepted value; one whose only accepted value is "" is left out (BFCL's "optional").
pub fn answers() -> Result<Vec<Answer>, String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/bfcl/");
    let read = |path: String| std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"));
    let lines = |text: &str| -> Result<Vec<Json>, String> {
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).map_err(|e| e.to_string()))
            .collect()
    };
    let mut out = Vec::new();
    for file in FILES {
        let questions = lines(&read(format!("{dir}{file}"))?)?;
        let truths = lines(&read(format!("{dir}possible_answer/{file}"))?)?;
        for truth in truths {
            let id = &truth["id"];
            let question = questions
                .iter()
                .find(|q| &q["id"] == id)
                .ok_or_else(|| format!("{file}: no question {id}"))?;
            let mut calls = Vec::new();
            for call in truth["ground_truth"].as_array().into_iter().flatten() {
                for (name, params) in call.as_object().into_iter().flatten() {
                    let mut args = Map::new();
                    for (key, options) in params.as_object().into_iter().flatten() {
                        let first = options
                            .as_array()
                            .and_then(|o| o.iter().find(|v| *v != &json!("")));
                        if let Some(value) = first {
                            args.insert(key.clone(), value.clone());
                        }
                    }
                    calls.push((name.clone(), args));
                }
            }
            let tools = question["function"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| {
                    let mut f = f.clone();
                    f["parameters"] = openai_schema(&f["parameters"]);
                    serde_json::from_value(json!({"type": "function", "function": f}))
                        .map_err(|e| format!("{file} {id}: tool: {e}"))
                })
                .collect::<Result<_, _>>()?;
            out.push(Answer { calls, tools });
        }
    }
    Ok(out)
}

/// A BFCL parameter schema with its Python type names as JSON Schema's (`dict` → `object`,
/// `float` → `number`, `tuple` → `array`; `any` has no type), as BFCL's own OpenAI runs
/// send them: the peer's `qwen_xml` reader types raw values by the declared schema.
fn openai_schema(schema: &Json) -> Json {
    match schema {
        Json::Object(fields) => {
            let mut out = Map::new();
            for (key, value) in fields {
                let value = match (key.as_str(), value.as_str()) {
                    ("type", Some("dict")) => json!("object"),
                    ("type", Some("float")) => json!("number"),
                    ("type", Some("tuple")) => json!("array"),
                    ("type", Some("any")) => continue,
                    ("properties", _) => match value {
                        Json::Object(props) => Json::Object(
                            props
                                .iter()
                                .map(|(k, v)| (k.clone(), openai_schema(v)))
                                .collect(),
                        ),
                        other => other.clone(),
                    },
                    _ => openai_schema(value),
                };
                out.insert(key.clone(), value);
            }
            Json::Object(out)
        }
        Json::Array(items) => Json::Array(items.iter().map(openai_schema).collect()),
        other => other.clone(),
    }
}

/// One stream of the speed input: the text, its cuts at 1 and 16 bytes (and at each with no
/// special token cut, as a model's token stream gives them), the request's tools.
pub struct Stream {
    pub text: String,
    pub by_1: Vec<usize>,
    pub by_1_tokens: Vec<usize>,
    pub by_16: Vec<usize>,
    pub by_16_tokens: Vec<usize>,
    pub tools: Tools,
}

impl Stream {
    /// The cuts of a feed by its name in the tables: `Some(None)` for `whole`, `None` for a
    /// name that is no feed.
    pub fn cuts(&self, feed: &str) -> Option<Option<&[usize]>> {
        match feed {
            "1" => Some(Some(&self.by_1)),
            "1t" => Some(Some(&self.by_1_tokens)),
            "16" => Some(Some(&self.by_16)),
            "16t" => Some(Some(&self.by_16_tokens)),
            "whole" => Some(None),
            _ => None,
        }
    }
}

/// About `len` bytes of answers in `form`, the ground truth cycled: the input of the speed
/// comparison.
pub fn streams(form: Form, len: usize) -> Vec<Stream> {
    let answers = answers().expect("BFCL data");
    let mut out = Vec::new();
    let mut total = 0;
    for answer in answers.iter().cycle() {
        if total >= len {
            break;
        }
        let text = form.render(&answer.calls);
        total += text.len();
        let by_1 = cuts(&text, &[1]);
        let by_16 = cuts(&text, &[16]);
        out.push(Stream {
            by_1_tokens: tokens_whole(&text, &by_1, form.special_tokens()),
            by_1,
            by_16_tokens: tokens_whole(&text, &by_16, form.special_tokens()),
            by_16,
            text,
            tools: answer.tools.clone(),
        });
    }
    out
}

/// The end offsets of `text` cut in pieces of the given byte sizes (cycled), each cut moved
/// forward to the next character boundary.
pub fn cuts(text: &str, sizes: &[usize]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut k = 0;
    while at < text.len() {
        let mut end = (at + sizes[k % sizes.len()].max(1)).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(end);
        at = end;
        k += 1;
    }
    out
}

/// `cuts` with every cut that falls inside one of `tokens` in `text` moved to the token's
/// end: the pieces a tokenizer could give, where a special token comes in one piece.
pub fn tokens_whole(text: &str, cuts: &[usize], tokens: &[&str]) -> Vec<usize> {
    let spans: Vec<(usize, usize)> = tokens
        .iter()
        .flat_map(|t| text.match_indices(t).map(|(at, t)| (at, at + t.len())))
        .collect();
    let mut out: Vec<usize> = Vec::with_capacity(cuts.len());
    for &cut in cuts {
        let cut = spans
            .iter()
            .find(|&&(start, end)| start < cut && cut < end)
            .map_or(cut, |&(_, end)| end);
        if out.last().is_none_or(|&last| cut > last) {
            out.push(cut);
        }
    }
    out
}

/// `text` in pieces that end at `cuts`.
pub fn pieces<'a>(text: &'a str, cuts: &'a [usize]) -> impl Iterator<Item = &'a str> + 'a {
    let mut start = 0;
    cuts.iter().map(move |&end| {
        let piece = &text[start..end];
        start = end;
        piece
    })
}

/// 64 piece sizes of 1 to 4 bytes from `seed` (xorshift, as the main crate's tests do).
pub fn random_sizes(seed: u64) -> Vec<usize> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
        | 1;
    (0..64)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            1 + (x % 4) as usize
        })
        .collect()
}

/// The calls atfunc reads from `text`, fed in the pieces `cuts` gives (`None`: whole).
///
/// The events of each feed are taken as they come, as a consumer of a stream takes them
/// (and as the peer's results are taken per piece): the calls are kept, the rest dropped,
/// so the figures hold no vector of every event of the answer.
pub fn atfunc_calls(parser: &mut StreamParser, text: &str, cuts: Option<&[usize]>) -> Vec<Call> {
    let mut events = Vec::new();
    let mut calls = Vec::new();
    let mut take = |events: &mut Vec<Event>| {
        calls.extend(events.drain(..).filter_map(|e| match e {
            Event::Call(c) => Some(c),
            _ => None,
        }));
    };
    match cuts {
        Some(cuts) => {
            for piece in pieces(text, cuts) {
                parser.feed_into(piece.as_bytes(), &mut events);
                take(&mut events);
            }
        }
        None => parser.feed_into(text.as_bytes(), &mut events),
    }
    parser.finish_into(&mut events);
    take(&mut events);
    calls
}

/// A fresh atfunc stream parser for `form`.
pub fn atfunc_parser(form: Form) -> StreamParser {
    StreamParser::new(ParserConfig::default().with_dialect(form.dialect()))
}

/// A call as the peer gave it: name and arguments (`None` when its text is not JSON).
pub type PeerCall = (Option<String>, Option<Json>);

/// The peer's registry of parsers by name.
pub fn peer_registry() -> ParserRegistry {
    ParserFactory::new().registry().clone()
}

/// What the peer's `parse_complete_with_tools` reads from `text`.
pub fn peer_complete(parser: &dyn ToolParser, text: &str, tools: &Tools) -> Vec<PeerCall> {
    match block_on(parser.parse_complete_with_tools(text, tools)) {
        Ok((_, calls)) => calls
            .into_iter()
            .map(|c| {
                let args = serde_json::from_str(&c.function.arguments).ok();
                (Some(c.function.name), args)
            })
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// What the peer's `parse_incremental` gives for `text` in the pieces `cuts` gives,
/// assembled into calls as the crate doc says.
pub fn peer_streamed(
    parser: &mut dyn ToolParser,
    text: &str,
    cuts: &[usize],
    tools: &Tools,
) -> Vec<PeerCall> {
    let mut calls: Vec<(Option<String>, String)> = Vec::new();
    let mut take = |items: Vec<tool_parser::types::ToolCallItem>| {
        for item in items {
            if calls.len() <= item.tool_index {
                calls.resize(item.tool_index + 1, (None, String::new()));
            }
            let call = &mut calls[item.tool_index];
            if call.0.is_none() {
                call.0 = item.name;
            }
            call.1.push_str(&item.parameters);
        }
    };
    for piece in pieces(text, cuts) {
        if let Ok(result) = block_on(parser.parse_incremental(piece, tools)) {
            take(result.calls);
        }
    }
    if let Some(rest) = parser.get_unstreamed_tool_args() {
        take(rest);
    }
    calls
        .into_iter()
        .map(|(name, args)| {
            let args = if args.trim().is_empty() {
                Some(json!({}))
            } else {
                serde_json::from_str(&args).ok()
            };
            (name, args)
        })
        .collect()
}

/// Runs a future that never waits to its end, polling it with a no-op waker.
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut context = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut context) {
            return out;
        }
    }
}

/// Whether atfunc read exactly the expected calls. A raw `qwen3_xml` value is text: a
/// string matches as it is, anything else as JSON text.
pub fn atfunc_matches(read: &[Call], expected: &[Expected]) -> bool {
    read.len() == expected.len()
        && read.iter().zip(expected).all(|(call, (name, args))| {
            &call.name == name
                && call.positional.is_empty()
                && call.body.is_none()
                && call.named.len() == args.len()
                && call.named.iter().all(|(key, value)| {
                    args.get(key).is_some_and(|want| match (value, want) {
                        (Value::Bare(raw), Json::String(s)) => raw == s,
                        (Value::Bare(raw), other) => {
                            serde_json::from_str::<Json>(raw).is_ok_and(|v| json_equal(&v, other))
                        }
                        (value, want) => json_equal(&value.to_json(), want),
                    })
                })
        })
}

/// Whether the peer gave exactly the expected calls.
pub fn peer_matches(read: &[PeerCall], expected: &[Expected]) -> bool {
    read.len() == expected.len()
        && read.iter().zip(expected).all(|((name, args), (n, want))| {
            name.as_deref() == Some(n.as_str())
                && args
                    .as_ref()
                    .is_some_and(|a| json_equal(a, &Json::Object(want.clone())))
        })
}

/// JSON equality with numbers compared as `f64` (`2.0` is `2`) and object keys in any order.
pub fn json_equal(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => x.as_f64() == y.as_f64(),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, a)| y.get(k).is_some_and(|b| json_equal(a, b)))
        }
        (a, b) => a == b,
    }
}
