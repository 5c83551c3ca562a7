//! Inputs that fuzzing or review found interesting, replayed through every chunking.
//! A fuzz crash lands here as a new case before it is fixed.

use crate::parse_common;

use atfunc::parse::{Bodies, ParseErrorKind};
use atfunc::parse::{Span, Value};
use atfunc::{Event, ParserConfig, StreamParser};
use parse_common::{
    assert_reproduces, calls, check, check_bytes, check_bytes_config, events_in_chunks_with, merge,
};

fn malformed_kinds(events: &[Event]) -> Vec<ParseErrorKind> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Malformed { error, .. } => Some(error.kind.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn key_with_line_break_before_equals() {
    let events = check("@a(k\n= 1, j\n:\n2)");
    let c = calls(&events);
    assert_eq!(c[0].named.len(), 2);
}

#[test]
fn backslash_at_the_very_end() {
    let events = check("@a(\"\\");
    assert_eq!(
        malformed_kinds(&events),
        vec![ParseErrorKind::Unterminated {
            what: "string".into()
        }]
    );
}

#[test]
fn split_character_at_the_end_of_a_string() {
    // The input ends inside a character inside a string: malformed up to it, then the
    // stray bytes as invalid UTF-8.
    let events = check_bytes(b"@a('\xe2\x82");
    assert!(
        matches!(events.last(), Some(Event::InvalidUtf8 { bytes, .. }) if bytes == b"\xe2\x82")
    );
}

#[test]
fn character_straddling_the_call_limit() {
    let config = ParserConfig::default().with_max_call_len(8);
    let input = "@a(\"xxé\") @b()".as_bytes();
    let whole = merge(events_in_chunks_with(
        StreamParser::new(config.clone()),
        input,
        &[usize::MAX],
    ));
    assert_reproduces(input, &whole);
    for sizes in [vec![1], vec![2], vec![3]] {
        let chunked = merge(events_in_chunks_with(
            StreamParser::new(config.clone()),
            input,
            &sizes,
        ));
        assert_eq!(chunked, whole);
    }
    assert_eq!(
        malformed_kinds(&whole),
        vec![ParseErrorKind::CallTooLong { limit: 8 }]
    );
    assert_eq!(calls(&whole)[0].name, "b");
}

#[test]
fn gap_held_at_the_end_is_released() {
    for input in [
        "@a() \r",
        "@a() with_bo",
        "@a() with_body ",
        "@a() with_body [",
    ] {
        let events = check(input);
        assert_eq!(calls(&events).len(), 1, "{input:?}");
        assert_eq!(calls(&events)[0].body, None);
    }
}

#[test]
fn bodies_at_their_edges() {
    let events = check("@a()\twith_body[[]] @b() with_body [[]]]] @c() with_body\n[[ x ] y ]]");
    let c = calls(&events);
    assert_eq!(c[0].body.as_deref(), Some(""));
    assert_eq!(c[1].body.as_deref(), Some(""));
    assert_eq!(c[2].body.as_deref(), Some(" x ] y "));
    assert!(
        matches!(&events[events.len() - 1], Event::Call(c) if c.name == "c"),
        "{events:?}"
    );
}

#[test]
fn at_sign_right_after_a_call_or_malformed_span() {
    let events = check("@a()@b() @c(1, \"x\" 2x@d() y@e()");
    let names: Vec<_> = calls(&events).iter().map(|c| c.name.clone()).collect();
    // The malformed `@c(...` stops at `2`; `2x@d` and `y@e` are then prose.
    assert_eq!(names, ["a", "b"]);
    assert_eq!(malformed_kinds(&events).len(), 1);
}

#[test]
fn deep_parentheses_in_a_bare_word_need_no_stack() {
    let input = format!("@a({}x{})", "(".repeat(50_000), ")".repeat(50_000));
    let events = check(&input);
    assert!(matches!(&calls(&events)[0].positional[0], Value::Bare(w) if w.len() == 100_001));
}

#[test]
fn line_break_inside_a_group_of_a_bare_word() {
    let events = check("@a(f(x\n)) ok");
    assert_eq!(malformed_kinds(&events).len(), 1);
}

#[test]
fn invalid_bytes_in_a_name_and_a_body() {
    let events = check_bytes(b"@a\xff(1) @b() with_body [[\xc3]] @c()");
    assert_eq!(calls(&events).len(), 1);
    assert_eq!(calls(&events)[0].name, "c");
}

#[test]
fn long_strings_in_chunks_of_every_size() {
    // A chunk of plain string content is appended without scanning; these strings put
    // quotes, escapes, multi-byte and invalid characters, and the call limit, at every
    // position relative to chunks of 1 to 70 bytes and to the 8-byte words checked.
    let unit = "plain words and more é \\\" \\\\ 'single' \u{1F600} tail ";
    let body = unit.repeat(12);
    let sq_body = body.replace('\'', "\\'");
    let mut inputs: Vec<Vec<u8>> = vec![
        format!("@w(text=\"{body}\", q='{sq_body}') after").into_bytes(),
        format!("@w(\"{body}").into_bytes(),
    ];
    let mut broken = format!("@w(\"{body}").into_bytes();
    broken.extend_from_slice(b"\xe2\x82 \xff\") @ok()");
    inputs.push(broken);
    let limits = [ParserConfig::default(), {
        ParserConfig::default().with_max_call_len(301)
    }];
    for input in &inputs {
        for config in &limits {
            same_in_chunks_of_every_size(input, config);
        }
    }
    let events = check_bytes(inputs.first().map(Vec::as_slice).unwrap_or_default());
    let expected = body.replace("\\\"", "\"").replace("\\\\", "\\");
    assert_eq!(
        calls(&events)[0].named[0].1,
        Value::String(expected.clone())
    );
    assert_eq!(calls(&events)[0].named[1].1, Value::String(expected));
}

/// `input` gives the same events whole and in chunks of 1 to 70, 100 and 1000 bytes.
fn same_in_chunks_of_every_size(input: &[u8], config: &ParserConfig) -> Vec<Event> {
    let whole = merge(events_in_chunks_with(
        StreamParser::new(config.clone()),
        input,
        &[usize::MAX],
    ));
    assert_reproduces(input, &whole);
    for size in (1..=70).chain([100, 1000]) {
        let chunked = merge(events_in_chunks_with(
            StreamParser::new(config.clone()),
            input,
            &[size],
        ));
        assert_eq!(chunked, whole, "chunks of {size}, {config:?}");
    }
    whole
}

#[test]
fn long_names_and_bodies_in_chunks_of_every_size() {
    // Identifier characters, and body text outside brackets and strings, are skipped in
    // runs; the runs must stop at every character that matters and at both limits.
    let name = "very_long.name_with_digits_0123456789".repeat(3);
    let text = "plain body text ] not the end {\"k\": \"]] \\\" x\"} [1, [2]] é ";
    let input = format!("@{name}(1) with_body [[{}]] after @ok()", text.repeat(6));
    let events = same_in_chunks_of_every_size(input.as_bytes(), &ParserConfig::default());
    let c = calls(&events);
    assert_eq!(c.len(), 2);
    assert_eq!(c[0].name, name);
    assert_eq!(c[0].body.as_deref(), Some(text.repeat(6).as_str()));
    // The body starts right after `[[`; the limits cut it at exactly these offsets (a call
    // limit inside the gap before `[[` takes effect at the first body character).
    let body_start = input.find("[[").map_or(0, |i| i as u64 + 2);
    for (call, body, offset) in [
        (usize::MAX, 3, body_start + 3),
        (usize::MAX, 100, body_start + 100),
        (120, usize::MAX, body_start),
        (200, usize::MAX, 200),
        (300, 250, 300),
    ] {
        let config = ParserConfig::default()
            .with_max_call_len(call)
            .with_max_body_len(body);
        let events = same_in_chunks_of_every_size(input.as_bytes(), &config);
        let offsets: Vec<u64> = events
            .iter()
            .filter_map(|e| match e {
                Event::Malformed { error, .. } => Some(error.span.start),
                _ => None,
            })
            .collect();
        assert_eq!(offsets, [offset], "{config:?}");
    }
}

/// Whether feeding exactly `input` (no more bytes, no `finish`) hands out a call, however
/// it is split in two.
fn released(config: &ParserConfig, input: &str) -> bool {
    (0..input.len()).all(|k| {
        let mut parser = StreamParser::new(config.clone());
        let mut out = parser.feed(&input.as_bytes()[..k]);
        out.extend(parser.feed(&input.as_bytes()[k..]));
        !calls(&out).is_empty()
    })
}

#[test]
fn a_call_without_a_body_is_out_at_its_closing_parenthesis() {
    // A stream that pauses right after `)` must not hold the call until the next bytes.
    let told = ParserConfig::default().with_bodies(Bodies::only(["api.create_user"]));
    let none = ParserConfig::default().with_bodies(Bodies::None);
    for config in [&told, &none] {
        assert!(
            released(config, "Checking: @weather.get(\"Oslo\")"),
            "{config:?}"
        );
        assert!(released(config, "@Weather.Get(Oslo) "), "{config:?}");
    }
    // A function that takes a body waits: `with_body` may follow on this line.
    assert!(!released(&told, "@API.create_user(\"ann\")"));
    assert!(!released(&told, "@api.create_user(\"ann\") "));
    assert!(!released(
        &ParserConfig::default(),
        "@weather.get(\"Oslo\")"
    ));
    // Its body, when it comes, is still read.
    let events = check_bytes_config(b"@api.create_user(1) with_body [[{}]]", &told, true);
    assert_eq!(calls(&events)[0].body.as_deref(), Some("{}"));
    let events = check_bytes_config(b"@weather.get(1) with_body [[{}]]", &told, true);
    assert_eq!(calls(&events)[0].body, None);
}

#[test]
fn a_line_break_after_the_closing_parenthesis_ends_any_call() {
    let config = ParserConfig::default();
    for input in [
        "@api.create_user(\"ann\")\n",
        "@api.create_user(\"ann\")\r",
        "@api.create_user(\"ann\") \t\r\n",
        "@a(1)\n\nwith_body [[x]]",
    ] {
        assert!(released(&config, input), "{input:?}");
    }
    // What follows the line is text, even `with_body`.
    let events = check("@a(1)\nwith_body [[x]]");
    assert_eq!(calls(&events)[0].body, None);
    assert!(matches!(&events[2], Event::Text { text } if text == "\nwith_body [[x]]"));
    // The line of `with_body` may still break before `[[`.
    let events = check("@a(1) with_body\n[[x]]");
    assert_eq!(calls(&events)[0].body.as_deref(), Some("x"));
}

#[test]
fn spans_count_characters_as_well_as_bytes() {
    // The offsets a Python user slices a str with: characters, not bytes.
    let input = "Für 😀: @weather.get(\"Zürich\") and \u{e9}@x @b(\"日本\")";
    let events = check(input);
    let c = calls(&events);
    let chars: Vec<char> = input.chars().collect();
    for call in &c {
        let (s, e) = (call.span.char_start as usize, call.span.char_end as usize);
        let text: String = chars[s..e].iter().collect();
        assert_eq!(
            text,
            input[call.span.start as usize..call.span.end as usize]
        );
    }
    assert_eq!((c[0].span.start, c[0].span.end), (11, 34));
    assert_eq!((c[0].span.char_start, c[0].span.char_end), (7, 29));
    // Invalid bytes count one character per replacement character, as Python's
    // `decode(errors="replace")` gives them.
    let events = check_bytes(b"\xe2\x82 \xff\xfe @a(1) \xf0\x9f\x98\x80 @b(2)");
    let c = calls(&events);
    assert_eq!((c[0].span.char_start, c[0].span.char_end), (5, 10));
    assert_eq!((c[1].span.char_start, c[1].span.char_end), (13, 18));
}

#[test]
fn character_offsets_go_on_across_inputs_in_chunks() {
    // Counting resumes where it stopped: a megabyte of multi-byte prose (counted eight
    // bytes at a time in batches, so whole and in chunks of every alignment), then a
    // call; and after `finish`, the next input counts from zero again.
    let prose = "né 日本 😀 ".repeat(70_001);
    let input = format!("{prose}@a(\"é\")");
    let mut parser = StreamParser::default();
    for size in [7, 4096, 65_536, usize::MAX] {
        let mut events = Vec::new();
        for chunk in input.as_bytes().chunks(size.min(input.len())) {
            parser.feed_into(chunk, &mut events);
        }
        parser.finish_into(&mut events);
        let call = calls(&events)[0].clone();
        assert_eq!(call.span.start, prose.len() as u64);
        assert_eq!(call.span.char_start, prose.chars().count() as u64, "{size}");
        assert_eq!(call.span.char_end - call.span.char_start, 7);
    }
    let events = parser.feed_str("é @b()");
    let events = [events, parser.finish()].concat();
    assert_eq!(calls(&events)[0].span, Span::new(3, 7).with_chars(2, 6));
}
