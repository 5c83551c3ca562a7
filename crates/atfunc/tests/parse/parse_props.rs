//! Property tests of the stream parser's invariants, and a tiny reference it must agree with.

use crate::parse_common;

use atfunc::parse::Bodies;
use atfunc::parse::Value;
use atfunc::{Call, Event, ParserConfig, StreamParser};
use parse_common::{assert_reproduces, calls, events_in_chunks, events_in_chunks_config, merge};
use proptest::prelude::*;
use serde_json::Value as J;

// ------------------------------------------------------------------ the reference

/// A call as the reference sees it: name, positional and named values as JSON, span.
type RefCall = (String, Vec<J>, Vec<(String, J)>, (u64, u64));

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn skip_ws(text: &str, i: usize) -> usize {
    i + text[i..].len() - text[i..].trim_start_matches([' ', '\t', '\r', '\n']).len()
}

/// `key =` at the start of `s`: the key and the length through `=`.
fn key_prefix(s: &str) -> Option<(String, usize)> {
    let first = s.chars().next()?;
    if !(first.is_alphabetic() || first == '_') {
        return None;
    }
    let len = s.find(|c: char| !is_ident(c)).unwrap_or(s.len());
    let after = skip_ws(s, len);
    s[after..]
        .starts_with('=')
        .then(|| (s[..len].to_owned(), after + 1))
}

/// The JSON value at `text[start..]` and where it ends. serde_json's stream reader wants a
/// delimiter it knows after a number or literal, so those are cut at `,`, `)` or space first.
fn json_at(text: &str, start: usize) -> Option<(J, usize)> {
    let rest = &text[start..];
    if rest.starts_with(['[', '{', '"']) {
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<J>();
        let value = values.next()?.ok()?;
        return Some((value, start + values.byte_offset()));
    }
    let len = rest
        .find([',', ')', ' ', '\t', '\r', '\n'])
        .unwrap_or(rest.len());
    Some((serde_json::from_str(&rest[..len]).ok()?, start + len))
}

/// The calls in a whole text whose arguments are all JSON values (optionally `key=`), found
/// the plain way: every `@` not after an identifier character, a dotted name, `(`, then JSON
/// values read by serde_json. `None` when a call-shaped span is not of that form.
fn reference(text: &str) -> Option<Vec<RefCall>> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(k) = text[i..].find('@') {
        let at = i + k;
        i = at + 1;
        if text[..at].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let name_len = text[i..]
            .find(|c: char| !(is_ident(c) || c == '.'))
            .unwrap_or(text.len() - i);
        let name = &text[i..i + name_len];
        if !text[i + name_len..].starts_with('(') || name.split('.').any(str::is_empty) {
            continue;
        }
        let (mut positional, mut named) = (Vec::new(), Vec::new());
        let mut j = i + name_len + 1;
        loop {
            j = skip_ws(text, j);
            if text[j..].starts_with(')') {
                j += 1;
                break;
            }
            let (key, start) = match key_prefix(&text[j..]) {
                Some((key, len)) => (Some(key), skip_ws(text, j + len)),
                None => (None, j),
            };
            let (value, end) = json_at(text, start)?;
            match key {
                Some(key) => named.push((key, value)),
                None if named.is_empty() => positional.push(value),
                None => return None,
            }
            j = skip_ws(text, end);
            if text[j..].starts_with(',') {
                j += 1;
            } else if text[j..].starts_with(')') {
                j += 1;
                break;
            } else {
                return None;
            }
        }
        out.push((name.to_owned(), positional, named, (at as u64, j as u64)));
        i = j;
    }
    Some(out)
}

fn as_ref_call(call: &Call) -> RefCall {
    (
        call.name.clone(),
        call.positional.iter().map(Value::to_json).collect(),
        call.named
            .iter()
            .map(|(k, v)| (k.clone(), v.to_json()))
            .collect(),
        (call.span.start, call.span.end),
    )
}

// ------------------------------------------------------------------ generators

fn name() -> impl Strategy<Value = String> {
    "[A-Za-z_ñ日][A-Za-z0-9_é]{0,6}(\\.[A-Za-z_][A-Za-z0-9_]{0,6}){0,2}"
}

fn key() -> impl Strategy<Value = String> {
    "[a-zA-Z_ß][a-zA-Z0-9_]{0,8}"
}

fn json() -> impl Strategy<Value = J> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(J::from),
        prop::sample::select(vec![0.5, -2.25, 1024.125, 1e300]).prop_map(J::from),
        any::<bool>().prop_map(J::Bool),
        Just(J::Null),
        any::<String>().prop_map(J::String),
        "[\\]\\[)(,\"'@ ]{0,6}".prop_map(J::String),
    ];
    leaf.prop_recursive(4, 24, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(J::Array),
            prop::collection::vec((any::<String>(), inner), 0..5)
                .prop_map(|fields| J::Object(fields.into_iter().collect())),
        ]
    })
}

fn ws() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["", " ", "  ", "\n", "\r\n  ", "\t"])
}

/// A call whose arguments are JSON values, as text the reference can read too.
fn json_call() -> impl Strategy<Value = String> {
    (
        name(),
        prop::collection::vec((json(), ws()), 0..4),
        prop::collection::vec((key(), json(), ws()), 0..3),
        any::<bool>(),
    )
        .prop_map(|(name, positional, named, trailing)| {
            let mut args: Vec<String> = positional
                .iter()
                .map(|(v, w)| format!("{w}{v}{w}"))
                .collect();
            args.extend(named.iter().map(|(k, v, w)| format!("{w}{k}{w}={w}{v}")));
            let mut text = format!("@{name}({}", args.join(","));
            if trailing && !args.is_empty() {
                text.push(',');
            }
            text.push(')');
            text
        })
}

/// Prose that cannot turn into or out of a call next to a call.
fn safe_prose() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            " Hello, ",
            " bob@example.com ",
            " @john said ",
            " @ ",
            " x@y.z(1) ",
            " café ",
            " 日本語 ",
            "\n",
            "\n```\n",
            " (see) ",
            " a, b) ",
            " 😀 ",
            " \"quoted\" ",
            " ]] ",
        ]),
        0..4,
    )
    .prop_map(|parts| format!(" {}", parts.concat()))
}

/// Inputs built from calls, broken calls, prose and arbitrary bytes.
fn messy_input() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        json_call().prop_map(String::into_bytes),
        (json_call(), any::<prop::sample::Index>()).prop_map(|(c, cut)| {
            let b = c.into_bytes();
            b[..cut.index(b.len() + 1)].to_vec()
        }),
        (json_call(), "[ \n]{0,2}", json())
            .prop_map(|(c, gap, body)| { format!("{c}{gap}with_body [[{body}]]").into_bytes() }),
        safe_prose().prop_map(String::into_bytes),
        prop::sample::select(vec![
            "@",
            "@a",
            "@a(",
            "(",
            ")",
            "\"",
            "'",
            "\\",
            "[[",
            "]]",
            "with_body",
            "with_bo",
            "\r",
            "é",
            "\u{1F600}",
            "@a.b(x=",
            "[",
            "{",
            "@f(k: v,",
            "a@",
            "@a() with_body [[1]]",
            "@A.b(2)\n",
            "@f(3) ",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        prop::collection::vec(any::<u8>(), 0..6),
        prop::sample::select(vec![&b"\xff"[..], b"\xe2\x82", b"\xf0\x9f\x98", b"\xc3"])
            .prop_map(<[u8]>::to_vec),
    ];
    prop::collection::vec(piece, 0..8).prop_map(|pieces| pieces.concat())
}

/// Which calls may have a body: any, none, or those of a few names the inputs use.
fn parser_config() -> impl Strategy<Value = ParserConfig> {
    prop_oneof![
        Just(Bodies::Any),
        Just(Bodies::None),
        Just(Bodies::only(["a", "a.B"])),
        Just(Bodies::only(["f", "x.y"])),
    ]
    .prop_map(|bodies| ParserConfig::default().with_bodies(bodies))
}

fn chunk_sizes() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..20, 1..10)
}

// ------------------------------------------------------------------ properties

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// (1) Any chunking gives the events of the whole input, whichever calls may have a
    /// body; (2) they rebuild the input, with every span's character offsets right.
    #[test]
    fn chunking_does_not_matter(
        input in messy_input(),
        sizes in chunk_sizes(),
        config in parser_config(),
    ) {
        let whole = merge(events_in_chunks_config(&input, &config, &[usize::MAX]));
        assert_reproduces(&input, &whole);
        let chunked = merge(events_in_chunks_config(&input, &config, &sizes));
        prop_assert_eq!(chunked, whole);
        let ones = merge(events_in_chunks_config(&input, &config, &[1]));
        assert_reproduces(&input, &ones);
        for call in calls(&ones) {
            prop_assert!(call.body.is_none() || config.bodies.allows(&call.name));
        }
    }

    /// (3) No strict prefix of a call yields a call event, however it is chunked.
    #[test]
    fn no_prefix_of_a_call_is_a_call(
        call in json_call(),
        body in proptest::option::of(json()),
        cut in any::<prop::sample::Index>(),
        sizes in chunk_sizes(),
    ) {
        let text = match body {
            Some(body) => format!("{call} with_body [[{body}]]"),
            None => call,
        };
        let prefix = &text.as_bytes()[..cut.index(text.len())];
        let mut parser = StreamParser::default();
        let mut out = Vec::new();
        let mut rest = prefix;
        let mut k = 0;
        while !rest.is_empty() {
            let n = sizes[k % sizes.len()].min(rest.len());
            k += 1;
            parser.feed_into(&rest[..n], &mut out);
            rest = &rest[n..];
        }
        prop_assert!(calls(&out).is_empty(), "{:?} gave {:?}", String::from_utf8_lossy(prefix), out);
        let malformed = out.iter().any(|e| matches!(e, Event::Malformed { .. }));
        prop_assert!(!malformed, "{:?}", out);
    }

    /// (4) On well-formed inputs, the parser finds what the reference finds.
    #[test]
    fn agrees_with_the_reference(
        parts in prop::collection::vec((safe_prose(), json_call()), 0..6),
        tail in safe_prose(),
    ) {
        let mut text: String = parts.iter().map(|(p, c)| format!("{p}{c}")).collect();
        text.push_str(&tail);
        let expected = reference(&text).expect("the generator writes well-formed calls");
        let events = merge(events_in_chunks(text.as_bytes(), &[usize::MAX]));
        let malformed = events.iter().any(|e| matches!(e, Event::Malformed { .. }));
        prop_assert!(!malformed, "{:?}", events);
        let got: Vec<RefCall> = calls(&events).into_iter().map(as_ref_call).collect();
        prop_assert_eq!(got, expected);
    }
}

// ------------------------------------------------------------------ plain tests

/// httparse style: walk every prefix of a few calls; none may yield a call event.
#[test]
fn every_prefix_of_a_call_is_partial() {
    let cases = [
        r#"@weather.get("Paris", unit: 'c')"#,
        "@api.create_user(\"bob\", \"b@x.io\")  with_body [[ {\"bio\": \"]] [[\", \"n\": [[1],[2]]} ]]",
        "@a(x=[1, {k: v, \"q\": [true, None]}], y = -2e3,\r\n)",
        "@日本.語(\"😀\", k='é')",
        "@calc(sqrt(2), (1+2)*3)",
    ];
    for text in cases {
        let bytes = text.as_bytes();
        // The whole text, finished, is one call.
        let events = merge(events_in_chunks(bytes, &[usize::MAX]));
        assert_eq!(calls(&events).len(), 1, "{text}");
        for k in 0..bytes.len() {
            let mut parser = StreamParser::default();
            let out = parser.feed(&bytes[..k]);
            assert!(
                !out.iter()
                    .any(|e| matches!(e, Event::Call(_) | Event::Malformed { .. })),
                "prefix {:?} gave {out:?}",
                String::from_utf8_lossy(&bytes[..k])
            );
        }
    }
}

#[test]
fn reference_reads_what_it_should() {
    let calls = reference(r#"hi @a.b(1, "x", k = [2]) bob@x.y(3) @c()"#).unwrap();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].0, "a.b");
    assert_eq!(calls[0].2[0].0, "k");
    assert_eq!(calls[1].3, (36, 40));
    assert!(reference("@a(1 2)").is_none());
}
