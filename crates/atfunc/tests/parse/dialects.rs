//! Other models' tool-call formats (`atfunc::parse::Dialect`): answers rendered from the
//! BFCL ground truth in each dialect and hostile inputs read into exactly the expected calls,
//! with the same events whole and in 1-, 3- and random-byte pieces, the text outside calls
//! kept byte for byte; `auto` picks the right dialect on every answer.

use crate::parse_common::{assert_reproduces, events_in_chunks_config, merge, random_sizes};
use atfunc::parse::Value;
use atfunc::parse::{Dialect, ParseErrorKind, ParserConfig};
use atfunc::{Event, StreamParser};
use proptest::prelude::*;
use serde_json::{json, Map, Value as Json};

const DATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/data/bfcl/possible_answer/"
);

/// A call as the ground truth gives it: a name and JSON arguments in order.
type Expected = (String, Map<String, Json>);

/// Every ground-truth answer: the first accepted value of each argument (an argument whose
/// only accepted value is "" is left out, as BFCL means "optional").
fn answers() -> Vec<Vec<Expected>> {
    let mut out = Vec::new();
    for file in [
        "BFCL_v4_simple_python.json",
        "BFCL_v4_multiple.json",
        "BFCL_v4_parallel.json",
        "BFCL_v4_parallel_multiple.json",
    ] {
        let text = std::fs::read_to_string(format!("{DATA}{file}")).expect("ground truth");
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let case: Json = serde_json::from_str(line).expect("json line");
            let mut calls = Vec::new();
            for call in case["ground_truth"].as_array().expect("ground truth list") {
                for (name, params) in call.as_object().expect("call object") {
                    let mut args = Map::new();
                    for (key, options) in params.as_object().expect("params") {
                        let first = options
                            .as_array()
                            .and_then(|o| o.iter().find(|v| *v != &json!("")))
                            .cloned();
                        if let Some(value) = first {
                            args.insert(key.clone(), value);
                        }
                    }
                    calls.push((name.clone(), args));
                }
            }
            out.push(calls);
        }
    }
    out
}

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

/// One answer in `dialect`, with prose before and after (but for pythonic, whose list has
/// no marker of its own: a call only where the answer is the list). `variant` picks between
/// the forms a dialect has (hermes: one block per call or an array; mistral: array or
/// `[ARGS]`; deepseek: V3 or V3.1).
fn render(dialect: Dialect, calls: &[Expected], variant: usize) -> String {
    let object = |(name, args): &Expected, key: &str| {
        let mut o = Map::new();
        o.insert("name".into(), json!(name));
        o.insert(key.into(), Json::Object(args.clone()));
        Json::Object(o).to_string()
    };
    let block = match dialect {
        Dialect::Hermes if variant % 2 == 1 => {
            let items: Vec<_> = calls.iter().map(|c| object(c, "arguments")).collect();
            format!("<tool_call>\n[{}]\n</tool_call>", items.join(", "))
        }
        Dialect::Hermes => calls
            .iter()
            .map(|c| format!("<tool_call>\n{}\n</tool_call>", object(c, "arguments")))
            .collect::<Vec<_>>()
            .join("\n"),
        Dialect::Llama3 => {
            let items: Vec<_> = calls.iter().map(|c| object(c, "parameters")).collect();
            format!("<|python_tag|>{}", items.join("; "))
        }
        Dialect::Mistral if variant % 2 == 1 => calls
            .iter()
            .map(|(name, args)| format!("[TOOL_CALLS]{name}[ARGS]{}", Json::Object(args.clone())))
            .collect(),
        Dialect::Mistral => {
            let items: Vec<_> = calls.iter().map(|c| object(c, "arguments")).collect();
            format!("[TOOL_CALLS] [{}]", items.join(", "))
        }
        Dialect::Pythonic => {
            let items: Vec<_> = calls
                .iter()
                .map(|(name, args)| {
                    let args: Vec<_> =
                        args.iter().map(|(k, v)| format!("{k}={}", py_literal(v))).collect();
                    format!("{name}({})", args.join(", "))
                })
                .collect();
            format!("[{}]", items.join(", "))
        }
        Dialect::Deepseek => {
            let items: String = calls
                .iter()
                .map(|(name, args)| {
                    let args = Json::Object(args.clone());
                    if variant % 2 == 1 {
                        format!("<｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{args}<｜tool▁call▁end｜>")
                    } else {
                        format!(
                            "<｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{args}\n```<｜tool▁call▁end｜>"
                        )
                    }
                })
                .collect::<Vec<_>>()
                .join("\n");
            format!("<｜tool▁calls▁begin｜>{items}<｜tool▁calls▁end｜>")
        }
        Dialect::Qwen3Xml => calls
            .iter()
            .map(|(name, args)| {
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
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Dialect::Harmony => calls
            .iter()
            .map(|(name, args)| {
                format!(
                    "<|start|>assistant<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{}<|call|>",
                    Json::Object(args.clone())
                )
            })
            .collect(),
        // atfunc's own syntax, one call a line (its values are JSON's).
        Dialect::Atfunc => calls
            .iter()
            .map(|(name, args)| {
                let args: Vec<_> = args.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("@{name}({})", args.join(", "))
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => panic!("no renderer for {other}"),
    };
    if dialect == Dialect::Pythonic {
        return block;
    }
    format!("Let me look that up for you.\n{block}\nThat should do it.")
}

/// Whether a read value is the expected JSON. Raw qwen3_xml values are text: a string
/// matches as it is, anything else as JSON text.
fn same(read: &Value, expected: &Json) -> bool {
    match (read, expected) {
        (Value::Bare(raw), Json::String(s)) => raw == s,
        (Value::Bare(raw), other) => serde_json::from_str::<Json>(raw).ok().as_ref() == Some(other),
        (read, expected) => numbers_equal(&read.to_json(), expected),
    }
}

fn numbers_equal(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => x.as_f64() == y.as_f64(),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| numbers_equal(a, b))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, a), (kb, b))| ka == kb && numbers_equal(a, b))
        }
        (a, b) => a == b,
    }
}

fn config(dialect: Dialect) -> ParserConfig {
    ParserConfig::default().with_dialect(dialect)
}

/// `config` knowing the offered tools by name (`ParserConfig::offering` takes interfaces).
fn with_offered(
    mut config: ParserConfig,
    offered: Option<atfunc::parse::FunctionNames>,
) -> ParserConfig {
    config.offered = offered;
    config
}

/// The events of `text` read as `dialect`, checked to agree whole and in 1-, 3- and
/// random-byte pieces, and to rebuild the input.
fn events_everywhere(dialect: Dialect, text: &str, seeds: u64) -> Vec<Event> {
    let config = config(dialect);
    let input = text.as_bytes();
    let whole = merge(events_in_chunks_config(
        input,
        &config,
        &[input.len().max(1)],
    ));
    assert_reproduces(input, &whole);
    let mut sizes = vec![vec![1], vec![3]];
    sizes.extend((0..seeds).map(|seed| random_sizes(seed, 17)));
    for sizes in sizes {
        let events = merge(events_in_chunks_config(input, &config, &sizes));
        assert_eq!(events, whole, "{dialect} in pieces {sizes:?} of {text:?}");
    }
    whole
}

fn check_calls(dialect: Dialect, events: &[Event], expected: &[Expected], text: &str) {
    let calls: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Call(c) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), expected.len(), "{dialect}: {text}\n{events:?}");
    for (call, (name, args)) in calls.iter().zip(expected) {
        assert_eq!(&call.name, name, "{dialect}: {text}");
        assert!(call.positional.is_empty());
        assert_eq!(call.named.len(), args.len(), "{dialect}: {text}");
        for ((key, value), (k, v)) in call.named.iter().zip(args) {
            assert_eq!(key, k, "{dialect}: {text}");
            assert!(
                same(value, v),
                "{dialect}: {key} read {value:?}, expected {v}\n{text}"
            );
        }
    }
    let prose: String = events
        .iter()
        .filter_map(|e| match e {
            Event::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    if dialect == Dialect::Pythonic {
        assert_eq!(prose, "", "{dialect}: the answer is the list");
        return;
    }
    assert!(
        prose.starts_with("Let me look that up for you.\n")
            && prose.ends_with("\nThat should do it."),
        "{dialect}: text {prose:?}"
    );
}

#[test]
fn ground_truth_answers_in_every_dialect_at_every_chunking() {
    let answers = answers();
    assert!(answers.len() > 900);
    for &dialect in Dialect::others() {
        for (k, calls) in answers.iter().enumerate() {
            let text = render(dialect, calls, k);
            let events = events_everywhere(dialect, &text, 1);
            check_calls(dialect, &events, calls, &text);
        }
    }
}

#[test]
fn auto_picks_the_dialect_of_every_answer() {
    let answers = answers();
    for &dialect in Dialect::others().iter().chain(&[Dialect::Atfunc]) {
        for (k, calls) in answers.iter().enumerate() {
            let text = render(dialect, calls, k);
            let fixed = events_everywhere(dialect, &text, 0);
            let auto = events_everywhere(Dialect::Auto, &text, 0);
            assert_eq!(auto, fixed, "auto on a {dialect} answer: {text}");
        }
    }
}

/// Arguments that broke other parsers: brackets, markers and quotes inside strings,
/// non-ASCII text and names.
fn hostile_args() -> Map<String, Json> {
    let mut args = Map::new();
    args.insert("brace".into(), json!("{ not an object"));
    args.insert("bracket".into(), json!("] [ ) ("));
    args.insert(
        "markers".into(),
        json!("</tool_call><tool_call> [TOOL_CALLS] <|call|> <｜tool▁call▁end｜> </parameter>"),
    );
    args.insert("quotes".into(), json!("it's \"quoted\" \\ back"));
    args.insert("text".into(), json!("Zürich → 東京 🌍"));
    args.insert(
        "nested".into(),
        json!({"a": [1, {"b": "}"}], "c": null, "d": true}),
    );
    args
}

/// [`hostile_args`] as `dialect` can hold them.
fn hostile_args_for(dialect: Dialect) -> Map<String, Json> {
    let mut args = hostile_args();
    if dialect == Dialect::Qwen3Xml {
        // A raw value ends at the first `</parameter>`: the one thing it cannot hold.
        args.insert(
            "markers".into(),
            json!("</tool_call><tool_call> [TOOL_CALLS] <|call|>"),
        );
    }
    args
}

#[test]
fn hostile_strings_in_every_dialect() {
    for &dialect in Dialect::others() {
        let args = hostile_args_for(dialect);
        let calls = vec![
            ("météo.prévision".to_owned(), args.clone()),
            ("uber.ride".to_owned(), args),
        ];
        for variant in 0..2 {
            let text = render(dialect, &calls, variant);
            let events = events_everywhere(dialect, &text, 8);
            check_calls(dialect, &events, &calls, &text);
        }
    }
}

#[test]
fn a_partial_marker_at_the_end_is_text() {
    for (dialect, tail) in [
        (Dialect::Hermes, "<tool_ca"),
        (Dialect::Llama3, "<|python_t"),
        (Dialect::Mistral, "[TOOL_CAL"),
        (Dialect::Pythonic, "[get_weath"),
        (Dialect::Deepseek, "<｜tool▁calls▁be"),
        (Dialect::Qwen3Xml, "<tool_c"),
        (Dialect::Harmony, "<|channel|>commentary to=functions.f"),
    ] {
        for d in [dialect, Dialect::Auto] {
            let text = format!("Done. {tail}");
            let events = events_everywhere(d, &text, 4);
            assert_eq!(events, vec![Event::Text { text }], "{d}");
        }
    }
}

#[test]
fn unterminated_calls_are_malformed_with_their_text() {
    for &dialect in Dialect::others() {
        let calls = vec![("f".to_owned(), hostile_args_for(dialect))];
        let text = render(dialect, &calls, 0);
        let text = text.strip_suffix("\nThat should do it.").unwrap_or(&text);
        // Cut inside the last call, as a token limit would.
        for cut in [text.len() - 3, text.len() * 2 / 3] {
            let Some(cut_text) = text.get(..cut) else {
                continue;
            };
            let events = events_everywhere(dialect, cut_text, 4);
            assert!(
                !events.iter().any(|e| matches!(e, Event::Call(_))),
                "{dialect}: a cut call was read: {cut_text}"
            );
            let Some(Event::Malformed {
                error, text: kept, ..
            }) = events.iter().find(|e| matches!(e, Event::Malformed { .. }))
            else {
                panic!("{dialect}: no malformed event for {cut_text:?}: {events:?}");
            };
            assert!(
                matches!(error.kind, ParseErrorKind::Unterminated { .. }),
                "{dialect}: {error}"
            );
            assert!(cut_text.ends_with(kept.as_str()));
        }
    }
}

#[test]
fn limits_apply_to_dialects() {
    let small = |dialect| {
        config(dialect)
            .with_max_call_len(64)
            .with_max_depth(3)
            .with_max_args(2)
    };
    let long = format!(
        "<tool_call>{{\"name\": \"f\", \"arguments\": {{\"a\": \"{}\"}}}}</tool_call>",
        "x".repeat(100)
    );
    let events = events_in_chunks_config(long.as_bytes(), &small(Dialect::Hermes), &[5]);
    assert!(
        events.iter().any(|e| matches!(e,
        Event::Malformed { error, .. } if error.kind == ParseErrorKind::CallTooLong { limit: 64 }))
    );
    let deep = "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": [[[[[[1]]]]]]}}</tool_call>";
    let events = events_in_chunks_config(deep.as_bytes(), &small(Dialect::Hermes), &[1]);
    assert!(events.iter().any(|e| matches!(e,
        Event::Malformed { error, .. } if error.kind == ParseErrorKind::TooDeep { limit: 3 })));
    // A Python list too deep is refused where the nesting goes too deep; the rest of it
    // is then text after the block, so the list, which has no marker of its own, is text.
    let deep = "[f(a=[[[[1]]]])]";
    let events = merge(events_in_chunks_config(
        deep.as_bytes(),
        &small(Dialect::Pythonic),
        &[1],
    ));
    assert_eq!(
        events,
        [Event::Text {
            text: deep.to_owned()
        }]
    );
    let many = "[TOOL_CALLS]f[ARGS]{\"a\": 1, \"b\": 2, \"c\": 3}";
    let events = events_in_chunks_config(many.as_bytes(), &small(Dialect::Mistral), &[2]);
    assert!(events.iter().any(|e| matches!(e,
        Event::Malformed { error, .. } if error.kind == ParseErrorKind::TooManyArgs { limit: 2 })));
}

#[test]
fn a_hundred_thousand_calls_in_bounded_memory() {
    for &dialect in Dialect::others() {
        let mut args = Map::new();
        args.insert("city".into(), json!("Zürich {]"));
        let one = render(dialect, &[("f".to_owned(), args)], 0);
        let n = 100_000;
        let mut parser = StreamParser::new(config(dialect));
        let mut calls = 0;
        let mut max_held = 0;
        let mut events = Vec::new();
        for _ in 0..n {
            for chunk in one.as_bytes().chunks(61) {
                parser.feed_into(chunk, &mut events);
                max_held = max_held.max(parser.buffered_len());
            }
            calls += events
                .iter()
                .filter(|e| matches!(e, Event::Call(_)))
                .count();
            events.clear();
        }
        parser.finish_into(&mut events);
        calls += events
            .iter()
            .filter(|e| matches!(e, Event::Call(_)))
            .count();
        assert_eq!(calls, n, "{dialect}");
        assert!(
            max_held <= one.len() + 61,
            "{dialect} held {max_held} bytes"
        );
        // Linear: the work is a small multiple of the bytes.
        let bytes = (one.len() * n) as u64;
        assert!(
            parser.scan_steps() <= 3 * bytes,
            "{dialect}: {} steps",
            parser.scan_steps()
        );
    }
}

#[test]
fn one_answer_per_dialect_snapshot() {
    let calls = vec![
        ("weather.get".to_owned(), {
            let mut m = Map::new();
            m.insert("city".into(), json!("Zürich"));
            m.insert("days".into(), json!(3));
            m
        }),
        ("clock.now".to_owned(), Map::new()),
    ];
    for &dialect in Dialect::others() {
        let text = render(dialect, &calls, 1);
        let events = events_everywhere(dialect, &text, 2);
        insta::assert_json_snapshot!(format!("dialect_{dialect}"), events);
    }
}

/// One piece of a generated completion: prose or a call.
#[derive(Debug, Clone)]
enum Piece {
    Prose(String),
    Call(String, Vec<(String, String)>),
}

fn pieces() -> impl Strategy<Value = Vec<Piece>> {
    let prose = "[a-zA-Z0-9 .,!?éü東\n]{1,30}".prop_map(Piece::Prose);
    let key = "[a-z][a-z0-9_]{0,6}";
    let value = "[a-zA-Z0-9 {}\\[\\]()<>/|'\"\\\\,:;=éü東🌍\n]{0,20}";
    let call = (
        "[a-z][a-z0-9_]{0,5}(\\.[a-z][a-z0-9_]{0,5})?",
        prop::collection::vec((key, value), 0..4),
    )
        .prop_map(|(name, mut args)| {
            args.sort();
            args.dedup_by(|a, b| a.0 == b.0);
            Piece::Call(name, args)
        });
    prop::collection::vec(prop_oneof![prose, call], 0..8)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Against the reference a generated completion is built from: its prose is the text,
    /// its calls are the calls, whatever the chunking.
    #[test]
    fn generated_completions_read_back(pieces in pieces(), seed in any::<u64>(), pick in 0usize..7) {
        let dialect = Dialect::others()[pick];
        let mut text = String::new();
        let mut prose = String::new();
        let mut expected = Vec::new();
        let mut last_was_call = false;
        for piece in &pieces {
            match piece {
                Piece::Prose(p) => {
                    text.push_str(p);
                    prose.push_str(p);
                    last_was_call = false;
                }
                Piece::Call(name, args) => {
                    if last_was_call {
                        // Two blocks side by side may be one block (llama3's `;`, a list).
                        text.push_str(" and ");
                        prose.push_str(" and ");
                    }
                    let mut map = Map::new();
                    for (k, v) in args {
                        let v = if dialect == Dialect::Qwen3Xml {
                            v.trim_matches('\n').replace("</parameter>", "")
                        } else {
                            v.clone()
                        };
                        map.insert(k.clone(), json!(v));
                    }
                    let call = (name.clone(), map);
                    let rendered = render(dialect, std::slice::from_ref(&call), 0);
                    let block = rendered
                        .strip_prefix("Let me look that up for you.\n")
                        .and_then(|r| r.strip_suffix("\nThat should do it."))
                        .unwrap_or(&rendered);
                    text.push_str(block);
                    if dialect == Dialect::Harmony {
                        prose.push_str("<|start|>assistant");
                    }
                    expected.push(call);
                    last_was_call = true;
                }
            }
        }
        // A Python list has no marker of its own: with prose anywhere in the answer (the
        // " and " between two calls too), every list is text.
        if dialect == Dialect::Pythonic && !prose.trim().is_empty() {
            expected.clear();
            prose = text.clone();
        }
        let config = config(dialect);
        let sizes = random_sizes(seed, 9);
        let events = merge(events_in_chunks_config(text.as_bytes(), &config, &sizes));
        let whole = merge(events_in_chunks_config(text.as_bytes(), &config, &[text.len().max(1)]));
        prop_assert_eq!(&events, &whole);
        assert_reproduces(text.as_bytes(), &events);
        let read: Vec<_> = events.iter().filter_map(|e| match e {
            Event::Call(c) => Some((c.name.clone(), c.named.clone())),
            _ => None,
        }).collect();
        prop_assert_eq!(read.len(), expected.len(), "{}: {:?}", dialect, text);
        for ((name, named), (ename, eargs)) in read.iter().zip(&expected) {
            prop_assert_eq!(name, ename);
            prop_assert_eq!(named.len(), eargs.len());
            for ((k, v), (ek, ev)) in named.iter().zip(eargs) {
                prop_assert_eq!(k, ek);
                prop_assert!(same(v, ev), "{:?} vs {:?}", v, ev);
            }
        }
        let got: String = events.iter().filter_map(|e| match e {
            Event::Text { text } => Some(text.as_str()),
            _ => None,
        }).collect();
        prop_assert_eq!(got, prose);
    }
}

/// The small limits the dialects fuzz target reads half its inputs with.
fn fuzz_limits() -> ParserConfig {
    config(Dialect::Auto)
        .with_max_call_len(48)
        .with_max_depth(3)
        .with_max_args(3)
}

/// The events of `input` read whole, after checking that they rebuild it and that each of
/// `chunkings` gives the same.
fn same_at_every_chunking(
    input: &[u8],
    config: &ParserConfig,
    chunkings: &[&[usize]],
) -> Vec<Event> {
    let whole = merge(events_in_chunks_config(input, config, &[input.len()]));
    assert_reproduces(input, &whole);
    for sizes in chunkings {
        assert_eq!(
            merge(events_in_chunks_config(input, config, sizes)),
            whole,
            "pieces of {sizes:?}"
        );
    }
    whole
}

/// Found by `fuzz/fuzz_targets/dialects.rs`: a malformed block followed by a stray
/// continuation byte took the byte into its span when it was in the same chunk, and left
/// it out when it came later.
#[test]
fn a_stray_continuation_byte_after_a_malformed_block() {
    let input: &[u8] = b"[\xe5\x90\x90\x90`[AR[f(] ]\x90";
    let config = fuzz_limits();
    let whole = same_at_every_chunking(input, &config, &[&[1], &[2], &[15]]);
    assert!(matches!(whole.last(), Some(Event::InvalidUtf8 { bytes, .. }) if bytes == &[0x90]));
}

/// Found by `fuzz/fuzz_targets/dialects.rs`: a block that broke past the call limit was
/// "too deep" when the whole input came at once and "too long" in pieces (past the limit,
/// the limit is the reason now), and its span's character offsets counted invalid bytes
/// wrongly (a span ends before invalid UTF-8 now, which is then the reason).
#[test]
fn a_failure_past_the_call_limit_is_the_limit() {
    let input: &[u8] = b"[<\xef\xbd\x9ctool[f(calls\xe2\x96\x81begin\xef\xbd\x9c>\xc1AR[f(]](=[f(\xa9\x00,@\x96\x81begio@@@@@@f(";
    same_at_every_chunking(input, &fuzz_limits(), &[&[1], &[3], &[7]]);
    // `auto` reads no list inside a line; the pythonic reader reads the one the answer
    // opens with, which breaks, so that the rest after it makes the whole answer text.
    let input = input.strip_prefix(b"[<\xef\xbd\x9ctool").unwrap_or(input);
    let config = fuzz_limits().with_dialect(Dialect::Pythonic);
    let whole = same_at_every_chunking(input, &config, &[&[1], &[3], &[7]]);
    assert!(!whole
        .iter()
        .any(|e| matches!(e, Event::Malformed { .. } | Event::Call(_))));
}

/// Found by `fuzz/fuzz_targets/dialects.rs`: `<|python_tag|>` followed by an array was
/// refused once the array ended, so the call limit could come first in another chunking.
#[test]
fn a_llama3_block_that_is_no_object_is_refused_at_once() {
    let input: &[u8] = b"\x01\x00]DD\x01.rA\x10<|python_tag|>[TOOL_\xff\xff\xff;CA`\x00\x00|>AR[fxx.x(]to\xfe\xff\xff\xff]\x1a]\xff\xff\xff\xfftool_call>\xff\xb7\xa2\xe1";
    let config = fuzz_limits();
    same_at_every_chunking(input, &config, &[&[1], &[2, 5], &[7]]);
}

/// Found by `fuzz/fuzz_targets/dialects.rs`: `<tool_call>` followed by more than 64 blanks
/// and then `<` was read as hermes when a piece ended inside the blanks and as qwen3_xml
/// when the `<` came in the same piece. The count of blanks alone decides now.
#[test]
fn many_blanks_after_tool_call_decide_the_same_at_any_chunking() {
    let mut input = b"x <tool_call>".to_vec();
    input.extend(std::iter::repeat_n(b'\r', 90));
    input.extend_from_slice(b"<function=f>\n</function>\n</tool_call> y");
    let config = config(Dialect::Auto);
    same_at_every_chunking(&input, &config, &[&[1], &[3], &[40], &[92, 256, 254, 61]]);
}

/// A Llama 3 chain, `{…}; {…}; …`: each call is handed out as soon as its object and the
/// `;` after it are read, long before the chain ends, and only one link is held.
#[test]
fn a_llama3_chain_releases_each_call_when_it_is_complete() {
    let one = "{\"name\": \"f\", \"parameters\": {\"city\": \"Zürich;{\"}}";
    let n = 20_000;
    let text = format!("Sure. <|python_tag|>{}", vec![one; n].join("; "));
    let mut parser = StreamParser::new(config(Dialect::Llama3));
    let mut events = Vec::new();
    let mut calls = 0;
    let mut first_call_at = None;
    let mut max_held = 0;
    let mut fed = 0;
    for chunk in text.as_bytes().chunks(7) {
        parser.feed_into(chunk, &mut events);
        fed += chunk.len();
        max_held = max_held.max(parser.buffered_len());
        let now = events
            .iter()
            .filter(|e| matches!(e, Event::Call(_)))
            .count();
        if now > 0 && first_call_at.is_none() {
            first_call_at = Some(fed);
        }
        calls += now;
        events.clear();
    }
    parser.finish_into(&mut events);
    calls += events
        .iter()
        .filter(|e| matches!(e, Event::Call(_)))
        .count();
    assert_eq!(calls, n);
    let first = first_call_at.expect("a call before the end");
    assert!(first < 100, "the first call came after {first} bytes");
    assert!(max_held <= one.len() + 16, "held {max_held} bytes");
    // The spans of a short chain still cover it, at every chunking.
    let text = format!("x <|python_tag|>{one}; {one};{one} y");
    let events = events_everywhere(Dialect::Llama3, &text, 4);
    let spans: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Call(call) => Some((call.span.start, call.span.end)),
            _ => None,
        })
        .collect();
    assert_eq!(spans.len(), 3);
    assert_eq!(spans[0].1, spans[1].0);
    assert_eq!(spans[1].1, spans[2].0);
}

/// A `;` that no object follows: the calls before it stand, the rest is one error.
#[test]
fn a_llama3_chain_that_breaks_keeps_its_complete_calls() {
    let text = "<|python_tag|>{\"name\": \"f\", \"parameters\": {}}; nothing more";
    let events = events_everywhere(Dialect::Llama3, text, 4);
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::Call(_)))
            .count(),
        1
    );
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Malformed { text, .. } if text == "; ")));
}

/// A block over the call limit is one error in every dialect: the rest of the block, up
/// to where it ends, is text, even where it holds what would read as a call on its own.
/// The block after it is read as usual.
#[test]
fn the_tail_of_a_block_over_the_limit_is_text_in_every_dialect() {
    let pad = "x".repeat(80);
    for (dialect, over, next) in [
        (
            Dialect::Llama3,
            format!("<|python_tag|>{{\"name\": \"f\", \"parameters\": {{\"pad\": \"{pad}\", \"inner\": {{\"name\": \"g\", \"parameters\": {{}}}}}}}}"),
            "<|python_tag|>{\"name\": \"h\", \"parameters\": {}}",
        ),
        (
            Dialect::Mistral,
            format!("[TOOL_CALLS][{{\"name\": \"f\", \"arguments\": {{\"pad\": \"{pad}\", \"inner\": \"[TOOL_CALLS]g[ARGS]{{}}\"}}}}]"),
            "[TOOL_CALLS]h[ARGS]{}",
        ),
        (
            Dialect::Hermes,
            format!("<tool_call>{{\"name\": \"f\", \"arguments\": {{\"pad\": \"{pad}\", \"inner\": \"<tool_call>{{}}</tool_call>\"}}}}</tool_call>"),
            "<tool_call>{\"name\": \"h\", \"arguments\": {}}</tool_call>",
        ),
    ] {
        for d in [dialect, Dialect::Auto] {
            let config = config(d).with_max_call_len(64);
            // Each on its own line, where `auto` reads bare lists and objects.
            let text = format!("a\n{over}\nb\n{next}\nc");
            let whole = same_at_every_chunking(text.as_bytes(), &config, &[&[1], &[3], &[7, 2]]);
            let errors: Vec<_> = whole
                .iter()
                .filter_map(|e| match e {
                    Event::Malformed { error, .. } => Some(error.kind.clone()),
                    _ => None,
                })
                .collect();
            assert_eq!(
                errors,
                [ParseErrorKind::CallTooLong { limit: 64 }],
                "{d}: {text}\n{whole:?}"
            );
            let names: Vec<_> = whole
                .iter()
                .filter_map(|e| match e {
                    Event::Call(call) => Some(call.name.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(names, ["h"], "{d}: {text}\n{whole:?}");
        }
    }
    // Calls without a marker of their own: the block over the limit breaks, its tail is
    // text, and so the answer holds prose and no block of it is a call.
    let over = format!("[f(pad='{pad}', inner=[g(a=1)])]");
    for d in [Dialect::Pythonic, Dialect::Auto] {
        let config = config(d).with_max_call_len(64);
        let text = format!("{over}\n[h()]");
        let whole = same_at_every_chunking(text.as_bytes(), &config, &[&[1], &[3], &[7, 2]]);
        assert_eq!(whole, [Event::Text { text }], "{d}");
    }
}

/// Past the limit, the rest of the block is released as it streams, not held.
#[test]
fn a_block_over_the_limit_is_not_held() {
    let config = config(Dialect::Hermes).with_max_call_len(64);
    let text = format!(
        "<tool_call>{{\"name\": \"f\", \"arguments\": {{\"a\": \"{}\"}}}}</tool_call>",
        "y".repeat(200_000)
    );
    let mut parser = StreamParser::new(config);
    let mut events = Vec::new();
    let mut max_held = 0;
    for chunk in text.as_bytes().chunks(61) {
        parser.feed_into(chunk, &mut events);
        max_held = max_held.max(parser.buffered_len());
    }
    parser.finish_into(&mut events);
    assert!(max_held <= 2048, "held {max_held} bytes");
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::Malformed { .. }))
            .count(),
        1
    );
}

/// The names of the calls `auto` reads in `text` (at every chunking), and whether any
/// block was malformed.
fn auto_reads(text: &str) -> (Vec<String>, bool) {
    let events = events_everywhere(Dialect::Auto, text, 4);
    let names = events
        .iter()
        .filter_map(|e| match e {
            Event::Call(call) => Some(call.name.clone()),
            _ => None,
        })
        .collect();
    let malformed = events.iter().any(|e| matches!(e, Event::Malformed { .. }));
    (names, malformed)
}

/// Issue 36, item 3: prose that quotes a call or names a marker fixes no format, and the
/// real call after it is read.
#[test]
fn auto_reads_the_answers_call_not_the_prose_that_quotes_one() {
    let real = "<tool_call>\n{\"name\": \"file.listfiles\", \"arguments\": {}}\n</tool_call>";
    for (text, expected) in [
        (
            format!("I will not run [file.deletefile(filepath=\"keep.txt\")] because you asked me only to list.\n{real}"),
            vec!["file.listfiles"],
        ),
        // A list has no marker of its own: after prose, it is text wherever it stands.
        (
            "I would not call [weather.get(city=\"Oslo\")] here.\n[weather.get(city=\"Paris\")]".to_owned(),
            vec![],
        ),
        (format!("Print it with [print(x)] first. {real}"), vec!["file.listfiles"]),
        (format!("Mistral starts with the [TOOL_CALLS] marker.\n{real}"), vec!["file.listfiles"]),
        (format!("Hermes uses the <tool_call> tag and {{\"name\": \"x\"}} objects.\n{real}"), vec!["file.listfiles"]),
        // A blank after a marker, and then the call, is no sentence.
        (
            "Sure! <tool_call> {\"name\": \"f\", \"arguments\": {}}</tool_call>".to_owned(),
            vec!["f"],
        ),
        (
            "Calling: [TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {}}]".to_owned(),
            vec!["f"],
        ),
        // Where the answer is calls alone, a list or a bare object is the call.
        ("[f(a=1)]".to_owned(), vec!["f"]),
        ("\n  [f(a=1), g()]\n".to_owned(), vec!["f", "g"]),
        ("{\"name\": \"f\", \"parameters\": {}}".to_owned(), vec!["f"]),
        ("[f(a=1)]\n\n[g()]\n".to_owned(), vec!["f", "g"]),
        // With prose before or after it, it is an example.
        ("Here:\n  [f(a=1), g()]".to_owned(), vec![]),
        ("[f(a=1), g()]\nDone.".to_owned(), vec![]),
        ("{\"name\": \"f\", \"parameters\": {}}\nlike this".to_owned(), vec![]),
    ] {
        let (names, malformed) = auto_reads(&text);
        assert_eq!(names, expected, "{text}");
        assert!(!malformed, "{text}");
    }
}

/// Issue 39: `auto` reads atfunc's own `@name(args)` where atfunc's reader does, and an
/// `@` after a word character (an e-mail address) or without a call after it is text.
#[test]
fn auto_reads_atfunc_calls_where_atfunc_does() {
    for (text, expected) in [
        ("@weather.get(city=\"Paris\")", vec!["weather.get"]),
        ("Checking.\n@f(a=1) and then @g()", vec!["f", "g"]),
        ("Sure, @f(a=[1, 2], b={\"k\": \"v\"}) it is.", vec!["f"]),
        ("Write to user@example.com(today) or bob@f(x).", vec![]),
        ("é@f() and _@g() stay text", vec![]),
        ("Thanks @alice, see @ this and @bob. (done)", vec![]),
        // The first block that gives calls fixes the format: then the other's calls are
        // text, but a marker of its own still opens a block. A list is a call only where
        // the answer is calls alone: `@g()`, text after it, makes it text too.
        ("[f(a=1)]\n@g()", vec![]),
        (
            "@g()\n[f(a=1)]\n{\"name\": \"k\", \"parameters\": {}}",
            vec!["g"],
        ),
        (
            "@g()\n<tool_call>{\"name\": \"h\", \"arguments\": {}}</tool_call>",
            vec!["g", "h"],
        ),
        (
            "<tool_call>{\"name\": \"h\", \"arguments\": {}}</tool_call> @g()",
            vec!["h"],
        ),
    ] {
        let (names, malformed) = auto_reads(text);
        assert_eq!(names, expected, "{text}");
        assert!(!malformed, "{text}");
        // Alone, atfunc's own reader reads the same `@` calls.
        if !text.contains('<') && !text.contains('[') {
            let own = events_everywhere(Dialect::Atfunc, text, 0);
            assert_eq!(own, events_everywhere(Dialect::Auto, text, 0), "{text}");
        }
    }
    // A call the answer ends inside is malformed, as under atfunc.
    let (names, malformed) = auto_reads("Now: @f(a=\"x");
    assert!(names.is_empty() && malformed);
}

/// With the offered tools known, an `@name(` that names none of them is prose under `auto`
/// (a mention), and one that names an offered tool is a call.
#[test]
fn auto_reads_only_offered_atfunc_calls_when_tools_are_offered() {
    let offered: atfunc::parse::FunctionNames = ["weather.get"].into_iter().collect();
    let config = with_offered(config(Dialect::Auto), Some(offered));
    for (text, expected) in [
        ("@weather.get(city=\"Paris\")", vec!["weather.get"]),
        ("@Weather.Get(city=\"Paris\")", vec!["Weather.Get"]),
        (
            "Ask @alice(she knows) first.\n@weather.get(city=\"Oslo\")",
            vec!["weather.get"],
        ),
        ("Not @file.delete(path=\"x\") today.", vec![]),
        ("An unfinished @alice(note", vec![]),
    ] {
        let whole = same_at_every_chunking(text.as_bytes(), &config, &[&[1], &[3], &[7, 2]]);
        assert!(
            !whole.iter().any(|e| matches!(e, Event::Malformed { .. })),
            "{text}: {whole:?}"
        );
        let names: Vec<_> = whole
            .iter()
            .filter_map(|e| match e {
                Event::Call(c) => Some(c.name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(names, expected, "{text}");
    }
}

/// Once a dialect was seen, a Python list or bare object is text, but a block with a marker
/// of its own is still read.
#[test]
fn auto_reads_later_blocks_with_a_marker_of_their_own() {
    let text = "[f(a=1)]\n[g(b=2)]\n<tool_call>{\"name\": \"h\", \"arguments\": {}}</tool_call>\n<|python_tag|>{\"name\": \"i\", \"parameters\": {}}\n[TOOL_CALLS]j[ARGS]{}";
    let (names, malformed) = auto_reads(text);
    assert_eq!(names, ["f", "g", "h", "i", "j"]);
    assert!(!malformed);
    let text = "<tool_call>{\"name\": \"h\", \"arguments\": {}}</tool_call>\n[g(b=2)]\n{\"name\": \"k\", \"parameters\": {}}";
    let (names, _) = auto_reads(text);
    assert_eq!(names, ["h"]);
}

/// Issue 38: Qwen 2.5 under its own template writes the call object without tags. With
/// the offered tools known, hermes and `auto` read one that names an offered tool at the
/// start of the answer or of a line, fenced or not; JSON that prose merely shows is text.
#[test]
fn an_untagged_json_call_naming_an_offered_tool() {
    let call = "{\"name\": \"Weather_1_GetWeather\", \"arguments\": {\"city\": \"Paris\"}}";
    let offered: atfunc::parse::FunctionNames = ["Weather_1_GetWeather"].into_iter().collect();
    let names = |dialect: Dialect, offered: Option<atfunc::parse::FunctionNames>, text: &str| {
        let config = with_offered(config(dialect), offered);
        let whole = same_at_every_chunking(text.as_bytes(), &config, &[&[1], &[3], &[7, 2]]);
        assert!(
            !whole.iter().any(|e| matches!(e, Event::Malformed { .. })),
            "{text}: {whole:?}"
        );
        whole
            .iter()
            .filter_map(|e| match e {
                Event::Call(c) => Some(c.name.clone()),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    for dialect in [Dialect::Hermes, Dialect::Auto] {
        for text in [
            call.to_owned(),
            format!("```json\n{call}\n```"),
            format!("\n  {call}\n\n"),
        ] {
            assert_eq!(
                names(dialect, Some(offered.clone()), &text),
                ["Weather_1_GetWeather"],
                "{dialect}: {text}"
            );
        }
        // The answer is the calls or it is text: prose before or after makes the object
        // an example.
        for text in [
            format!("Let me check.\n\n{call}"),
            format!("{call}\nThat is how you would call it."),
            format!("```json\n{call}\n```\nThat is how you would call it."),
            format!("I would send {call} to it."),
            "An example:\n{\"name\": \"other_tool\", \"arguments\": {}}".to_owned(),
            "{\"name\": \"Weather_1_GetWeather\\u0021\", \"arguments\": {}}".to_owned(),
            "{\"city\": \"Paris\"}".to_owned(),
        ] {
            assert!(
                names(dialect, Some(offered.clone()), &text).is_empty(),
                "{dialect}: {text}"
            );
        }
    }
    // Without the offered tools, hermes reads tagged calls only.
    assert!(names(Dialect::Hermes, None, call).is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// `auto` decides by where a block stands (the line, the blanks around a marker, the
    /// dialect seen, the offered tools, a fence around an untagged call), and every dialect
    /// skips the tail of a block past a small call limit: pieces of markers, calls, fences,
    /// blanks and prose in any order give the
    /// same events at every chunking, and rebuild the input.
    #[test]
    fn auto_decides_the_same_at_every_chunking(
        parts in prop::collection::vec(0usize..25, 0..24),
        seed in any::<u64>(),
        offered in any::<bool>(),
        small in any::<bool>(),
        pick in 0usize..8,
    ) {
        const PARTS: [&str; 25] = [
            "[f(a=1)]", "[TOOL_CALLS]", "<tool_call>", "{\"name\": \"f\", \"parameters\": {}}",
            " ", "\n", "x", "é", "<|python_tag|>", "; ", "</tool_call>", "{", "[", "\t",
            "{\"name\": \"g\", \"arguments\": {\"a\": [1]}}", "[TOOL_CALLS]g[ARGS]{}",
            "@g(a=[1])", "@f(", "@", "a@g()",
            // Markdown fences, which go with an untagged call of `g` they hold.
            "```json\n", "\n```", "```", "```JSON \r\n", "\r\n",
        ];
        let text: String = parts.iter().map(|&k| PARTS[k]).collect();
        // Mostly `auto`; every other dialect too, for the skipped tails.
        let dialect = Dialect::ALL.get(pick + 1).copied().filter(|_| pick < 7).unwrap_or(Dialect::Auto);
        let config = with_offered(config(dialect), offered.then(|| ["g"].into_iter().collect()))
            // A limit that blocks run past, so that their tails are skipped.
            .with_max_call_len(if small { 24 } else { 16 << 20 });
        let sizes = random_sizes(seed, 9);
        same_at_every_chunking(text.as_bytes(), &config, &[&[1], &[3], &sizes]);
    }
}

#[test]
fn nesting_past_the_hard_limit_is_refused_alike_in_every_engine() {
    // A config may ask for any depth; building a value recurses once per level, so every
    // engine (atfunc's and each dialect's reader) stops at the same hard limit of 512.
    let deep = |open: &str, close: &str| format!("{}1{}", open.repeat(600), close.repeat(600));
    let json = deep("[", "]");
    let cases = [
        (Dialect::Atfunc, format!("@f(a={json}) after")),
        (
            Dialect::Hermes,
            format!("<tool_call>{{\"name\": \"f\", \"arguments\": {{\"a\": {json}}}}}</tool_call>"),
        ),
        (Dialect::Pythonic, format!("[f(a={json})]")),
        (
            Dialect::Mistral,
            format!("[TOOL_CALLS]f[ARGS]{{\"a\": {json}}}"),
        ),
    ];
    for (dialect, input) in cases {
        let config = config(dialect).with_max_depth(usize::MAX);
        for sizes in [&[usize::MAX][..], &[1], &[3], &[7, 2, 13]] {
            let events = events_in_chunks_config(input.as_bytes(), &config, sizes);
            let kinds: Vec<_> = events
                .iter()
                .filter_map(|e| match e {
                    Event::Malformed { error, .. } => Some(error.kind.clone()),
                    _ => None,
                })
                .collect();
            // A Python list has no marker of its own: refused where it goes too deep,
            // the rest of it after the span makes the answer prose, and the list text.
            let expected = if dialect == Dialect::Pythonic {
                assert_eq!(
                    merge(events),
                    [Event::Text {
                        text: input.clone()
                    }]
                );
                vec![]
            } else {
                vec![ParseErrorKind::TooDeep { limit: 512 }]
            };
            assert_eq!(kinds, expected, "{dialect} in chunks of {sizes:?}");
        }
    }
}

/// The events of `text` read by `dialect` with `Weather_1_GetWeather` offered, checked the
/// same whole and at 1-, 3- and random-byte chunkings, in short: `T:` text, `C:` a call's
/// name, `M:` a malformed span's text.
fn fenced_reads(dialect: Dialect, text: &str) -> Vec<String> {
    short_reads(&offering_weather(dialect), text)
}

/// `dialect`'s config with the one tool these tests offer, `Weather_1_GetWeather`.
fn offering_weather(dialect: Dialect) -> ParserConfig {
    let offered: atfunc::parse::FunctionNames = ["Weather_1_GetWeather"].into_iter().collect();
    with_offered(config(dialect), Some(offered))
}

/// Each of `cases` (an answer, and its events as [`fenced_reads`] shortens them) read the
/// same by `hermes` and `auto`.
fn assert_fenced_reads(cases: &[(String, Vec<String>)]) {
    for dialect in [Dialect::Hermes, Dialect::Auto] {
        for (text, expected) in cases {
            assert_eq!(
                &fenced_reads(dialect, text),
                expected,
                "{dialect}: {text:?}"
            );
        }
    }
}

/// The spans of the calls `hermes`, with the weather tool offered, reads in `text` fed a
/// byte at a time.
fn call_spans(text: &str) -> Vec<(u64, u64)> {
    let events = merge(events_in_chunks_config(
        text.as_bytes(),
        &offering_weather(Dialect::Hermes),
        &[1],
    ));
    events
        .iter()
        .filter_map(|e| match e {
            Event::Call(c) => Some((c.span.start, c.span.end)),
            _ => None,
        })
        .collect()
}

/// The events of `text` read under `config`, checked and shortened as by [`fenced_reads`].
fn short_reads(config: &ParserConfig, text: &str) -> Vec<String> {
    let sizes = random_sizes(text.len() as u64, 11);
    let whole = same_at_every_chunking(text.as_bytes(), config, &[&[1], &[3], &sizes]);
    whole
        .iter()
        .filter_map(|e| match e {
            Event::Text { text } => Some(format!("T:{text}")),
            Event::Call(c) => Some(format!("C:{}", c.name)),
            Event::Malformed { text, .. } => Some(format!("M:{text}")),
            _ => None,
        })
        .collect()
}

/// Issue 38: Qwen2.5-Coder puts its untagged call in a Markdown ```json fence. The fence
/// lines around a call that is read go with the call (its span covers them), so the text
/// left holds no empty fence; a fence around anything else, or around a call and more,
/// stays text byte for byte.
#[test]
fn a_fence_around_an_untagged_call_goes_with_it() {
    let call = "{\n  \"name\": \"Weather_1_GetWeather\",\n  \"arguments\": {\n    \"city\": \"Paris\"\n  }\n}";
    let other = "{\"name\": \"other_tool\", \"arguments\": {}}";
    let c = "C:Weather_1_GetWeather";
    let t = |s: &str| format!("T:{s}");
    let cases: Vec<(String, Vec<String>)> = vec![
        (format!("```json\n{call}\n```"), vec![c.into()]),
        (format!("```json\n{call}\n```\n"), vec![c.into()]),
        (format!("```\n{call}\n```"), vec![c.into()]),
        // The blanks before an opener were text before it came.
        (
            format!("  ```Json\n{call}\n  ```  \n"),
            vec![t("  "), c.into()],
        ),
        (
            format!("```json\n{call}\n```\n\n```json\n{call}\n```\n"),
            vec![c.into(), t("\n"), c.into()],
        ),
        // More inside the fence than the call: the fence stays text, the calls are read.
        (
            format!("```json\n{call}\n{call}\n```"),
            vec![t("```json\n"), c.into(), t("\n"), c.into(), t("\n```")],
        ),
        (
            format!("```json\n{call}\n\n```"),
            vec![t("```json\n"), c.into(), t("\n\n```")],
        ),
        (format!("```json\n{call}"), vec![t("```json\n"), c.into()]),
        (
            format!("```python\n{call}\n```"),
            vec![t("```python\n"), c.into(), t("\n```")],
        ),
        (
            format!("```json\n\n{call}\n```"),
            vec![t("```json\n\n"), c.into(), t("\n```")],
        ),
        // Prose before or after the calls, inside the fence or out (anything but blanks and
        // fence lines), makes them an example: every byte text.
        {
            let text = format!("```JSON  \r\n  {call}\r\n```\r\nDone.");
            (text.clone(), vec![t(&text)])
        },
        {
            let text = format!("Sure:\n```json\n{call}\n```\n\n```json\n{call}\n```\n");
            (text.clone(), vec![t(&text)])
        },
        {
            let text = format!("```json\n{call}\n``` and done");
            (text.clone(), vec![t(&text)])
        },
        {
            let text = format!("```json\n{call} is it\n```");
            (text.clone(), vec![t(&text)])
        },
        {
            let text = format!("```json\n{call}\n````");
            (text.clone(), vec![t(&text)])
        },
        {
            let text = format!("Here: ```json\n{call}\n```");
            (text.clone(), vec![t(&text)])
        },
        {
            let text = format!("````json\n{call}\n````");
            (text.clone(), vec![t(&text)])
        },
        {
            let text = format!("```json x\n{call}\n```");
            (text.clone(), vec![t(&text)])
        },
        // Fences around no call of an offered tool: every byte text.
        (
            format!("```json\n{other}\n```"),
            vec![t(&format!("```json\n{other}\n```"))],
        ),
        (
            "```json\n{\"city\": \"Paris\"}\n```".into(),
            vec![t("```json\n{\"city\": \"Paris\"}\n```")],
        ),
        ("```json\n```".into(), vec![t("```json\n```")]),
        ("``` ``` ```\n".into(), vec![t("``` ``` ```\n")]),
        ("```json".into(), vec![t("```json")]),
        // A call that breaks: the fence is text, the malformed span the object's.
        (
            "```json\n{\"name\": \"Weather_1_GetWeather\", \"arguments\": {\"city\": }}\n```"
                .into(),
            vec![
                t("```json\n"),
                "M:{\"name\": \"Weather_1_GetWeather\", \"arguments\": {\"city\": }}".into(),
                t("\n```"),
            ],
        ),
        (
            "```json\n{\"name\": \"Weather_1_GetWeather\", \"arguments\": {".into(),
            vec![
                t("```json\n"),
                "M:{\"name\": \"Weather_1_GetWeather\", \"arguments\": {".into(),
            ],
        ),
    ];
    assert_fenced_reads(&cases);
    // The call's span covers the fence, so text and calls still cover the answer.
    let text = format!("```json\n{call}\n```\n");
    assert_eq!(call_spans(&text), vec![(0, text.len() as u64)]);
}

/// A possible fence opener is held only a few bytes (blanks or backticks without end after
/// one are released as they come), the work stays linear on fences that open nothing, and
/// fenced calls one after another are read in bounded memory.
#[test]
fn a_possible_fence_is_held_a_few_bytes() {
    let call =
        "```json\n{\"name\": \"Weather_1_GetWeather\", \"arguments\": {\"city\": \"Oslo\"}}\n```\n";
    for dialect in [Dialect::Hermes, Dialect::Auto] {
        let config = offering_weather(dialect);
        for (input, calls, hold) in [
            (format!("```json{}", " ".repeat(100_000)), 0, 100),
            (format!("```{}", "`".repeat(100_000)), 0, 100),
            (format!("```json\n{}", " ".repeat(100_000)), 0, 100),
            ("```json\n".repeat(20_000), 0, 100),
            ("a `b` c\n```\n{\"x\": 1}\n```\n".repeat(5_000), 0, 100),
            (
                "```json\n{\"name\": \"other\", \"arguments\": {}}\n```\n".repeat(5_000),
                0,
                600,
            ),
            (call.repeat(20_000), 20_000, call.len() + 100),
        ] {
            let mut parser = StreamParser::new(config.clone());
            let mut events = Vec::new();
            let mut max_held = 0;
            for chunk in input.as_bytes().chunks(100) {
                parser.feed_into(chunk, &mut events);
                max_held = max_held.max(parser.buffered_len());
            }
            parser.finish_into(&mut events);
            let read = events
                .iter()
                .filter(|e| matches!(e, Event::Call(_)))
                .count();
            let head = input.get(..20).unwrap_or_default();
            assert_eq!(read, calls, "{dialect}: {head:?}");
            assert!(
                max_held <= hold,
                "{dialect}: {max_held} bytes held, {head:?}"
            );
            assert!(
                parser.scan_steps() <= 3 * input.len() as u64,
                "{dialect}: {} steps for {} bytes, {head:?}",
                parser.scan_steps(),
                input.len()
            );
        }
    }
}

/// Held to a list by a grammar, Qwen2.5-Coder writes its calls as one JSON list in a fence
/// (`[{"name": ...}, {"name": ...}]`): with the offered tools known, `hermes` and `auto`
/// read each element as a call where a bare call object would be read, the fence going with
/// the list. A list whose first element names no offered tool, or that stands inside a
/// sentence, stays text, and so does any other JSON list.
#[test]
fn a_list_of_untagged_calls_is_read_where_a_call_object_is() {
    let one = |city: &str| {
        format!("{{\"name\": \"Weather_1_GetWeather\", \"arguments\": {{\"city\": \"{city}\"}}}}")
    };
    let (oslo, paris) = (one("Oslo"), one("Paris"));
    let other = "{\"name\": \"other_tool\", \"arguments\": {}}";
    let c = "C:Weather_1_GetWeather";
    let t = |s: &str| format!("T:{s}");
    let cases: Vec<(String, Vec<String>)> = vec![
        (format!("[{oslo}, {paris}]"), vec![c.into(), c.into()]),
        (
            format!("[\n  {oslo},\n  {paris}\n]"),
            vec![c.into(), c.into()],
        ),
        (
            format!("```json\n[\n  {oslo},\n  {paris}\n]\n```\n"),
            vec![c.into(), c.into()],
        ),
        // With prose before or after it, the list is an example.
        (
            format!("```json\n[{oslo}]\n```\nDone."),
            vec![t(&format!("```json\n[{oslo}]\n```\nDone."))],
        ),
        (
            format!("Sure:\n[{oslo}]"),
            vec![t(&format!("Sure:\n[{oslo}]"))],
        ),
        // An element that is not a call object breaks the list, whose text is kept.
        (format!("[{oslo}, 3]"), vec![format!("M:[{oslo}, 3]")]),
        // Not a list of offered calls, or inside a sentence: text.
        (
            format!("[{other}, {oslo}]"),
            vec![t(&format!("[{other}, {oslo}]"))],
        ),
        (format!("See [{oslo}]"), vec![t(&format!("See [{oslo}]"))]),
        ("[1, 2]\n[]".into(), vec![t("[1, 2]\n[]")]),
        (
            format!("[{}{oslo}]", " ".repeat(65)),
            vec![t(&format!("[{}{oslo}]", " ".repeat(65)))],
        ),
        ("[".into(), vec![t("[")]),
    ];
    assert_fenced_reads(&cases);
    // Each call's span is its element; the first's starts at the fence, the last's ends
    // past the closing one.
    let text = format!("```json\n[{oslo}, {paris}]\n```");
    let spans = call_spans(&text);
    assert_eq!(spans.len(), 2);
    assert_eq!(spans[0].0, 0);
    assert_eq!(spans[0].1, spans[1].0);
    assert_eq!(spans[1].1, text.len() as u64);
    // `auto` still reads a Python list of calls.
    assert_eq!(
        fenced_reads(Dialect::Auto, "[Weather_1_GetWeather(city=\"Oslo\")]"),
        vec![c.to_string()]
    );
    // Without the offered tools, a bare list is text.
    let plain = short_reads(&config(Dialect::Hermes), &format!("[{oslo}]"));
    assert_eq!(plain, vec![t(&format!("[{oslo}]"))]);
}

/// Issue 56: a call object that gives `name` twice passed the offered-tool check on the
/// first and bound the last. A key given twice anywhere in a call's JSON makes it
/// malformed, in every JSON dialect, tagged or not.
#[test]
fn a_key_given_twice_is_no_call() {
    let twice = r#"{"name": "Weather_1_GetWeather", "name": "file.deletefile", "arguments": {"filepath": "keep.txt"}}"#;
    let args_twice =
        r#"{"name": "Weather_1_GetWeather", "arguments": {"city": "Oslo", "city": "Rome"}}"#;
    for text in [
        twice.to_owned(),
        format!("<tool_call>{twice}</tool_call>"),
        format!("```json\n{twice}\n```"),
        format!("[{twice}]"),
        args_twice.to_owned(),
        format!("<tool_call>{args_twice}</tool_call>"),
    ] {
        for dialect in [Dialect::Hermes, Dialect::Auto] {
            let reads = fenced_reads(dialect, &text);
            assert!(
                !reads.iter().any(|r| r.starts_with("C:")),
                "{dialect}: {text}: {reads:?}"
            );
            assert!(
                reads.iter().any(|r| r.starts_with("M:")),
                "{dialect}: {text}: {reads:?}"
            );
        }
    }
    let events = events_everywhere(
        Dialect::Llama3,
        r#"<|python_tag|>{"name": "f", "parameters": {}, "name": "g"}"#,
        2,
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Malformed { error, .. }
        if error.to_string().contains("`name` given twice"))),
        "{events:?}"
    );
    let events = events_everywhere(
        Dialect::Mistral,
        r#"[TOOL_CALLS]f[ARGS]{"a": 1, "a": 2}"#,
        2,
    );
    assert!(
        !events.iter().any(|e| matches!(e, Event::Call(_))),
        "{events:?}"
    );
}
