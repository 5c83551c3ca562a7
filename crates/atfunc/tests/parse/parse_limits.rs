//! Large and hostile inputs: limits, bounded memory, and work linear in the input.

use crate::parse_common;

use atfunc::parse::ParseErrorKind;
use atfunc::parse::Value;
use atfunc::{Event, ParserConfig, StreamParser};
use parse_common::{
    assert_reproduces, calls, check, check_bytes_with, events_in_chunks_with, merge,
};

fn kinds(events: &[Event]) -> Vec<&ParseErrorKind> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Malformed { error, .. } => Some(&error.kind),
            _ => None,
        })
        .collect()
}

#[test]
fn hundred_thousand_open_brackets() {
    let input = format!("@a({}) after", "[".repeat(100_000));
    let events = check(&input);
    let limit = ParserConfig::default().max_depth;
    assert_eq!(kinds(&events), vec![&ParseErrorKind::TooDeep { limit }]);
    // The malformed span stops at the first bracket too deep; the rest is text.
    match &events[1] {
        Event::Malformed { span, .. } => assert_eq!(span.len(), 3 + limit as u64),
        other => panic!("{other:?}"),
    }
}

#[test]
fn hundred_thousand_open_brackets_in_a_body_and_in_parentheses() {
    let input = format!("@a() with_body [[{}]]", "[".repeat(100_000));
    let events = check(&input);
    let limit = ParserConfig::default().max_depth;
    assert_eq!(kinds(&events), vec![&ParseErrorKind::TooDeep { limit }]);

    // Groups in bare words nest with a counter: deep, never a stack overflow.
    let input = format!("@a(x{}{}) @b()", "(".repeat(100_000), ")".repeat(100_000));
    let events = check(&input);
    assert_eq!(calls(&events).len(), 2);
}

#[test]
fn five_megabyte_string_argument() {
    let big = "x".repeat(5 << 20);
    let input = format!("Saving: @files.write(\"{big}\", mode=\"w\") done");
    // Whole, 3-byte and random chunks here; the 1-byte run follows with counts only.
    let events = check_bytes_with(input.as_bytes(), false);
    let c = calls(&events);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].positional, vec![Value::String(big.clone())]);

    let mut parser = StreamParser::default();
    let mut out = Vec::new();
    for b in input.as_bytes().chunks(1) {
        parser.feed_into(b, &mut out);
    }
    parser.finish_into(&mut out);
    assert_eq!(merge(out), events);
}

#[test]
fn hundred_thousand_calls() {
    let input = "@f(1) ".repeat(100_000);
    let events = check(&input);
    assert_eq!(calls(&events).len(), 100_000);
    assert!(calls(&events)
        .iter()
        .all(|c| c.name == "f" && c.positional == vec![Value::Number("1".into())]));
}

fn small_limits() -> ParserConfig {
    ParserConfig::default()
        .with_max_call_len(64)
        .with_max_body_len(16)
        .with_max_depth(3)
        .with_max_args(4)
}

fn check_small(input: &str) -> Vec<Event> {
    let whole = merge(events_in_chunks_with(
        StreamParser::new(small_limits()),
        input.as_bytes(),
        &[usize::MAX],
    ));
    assert_reproduces(input.as_bytes(), &whole);
    for sizes in [vec![1], vec![3], vec![7, 1, 2]] {
        let chunked = merge(events_in_chunks_with(
            StreamParser::new(small_limits()),
            input.as_bytes(),
            &sizes,
        ));
        assert_eq!(chunked, whole, "chunks {sizes:?}");
    }
    whole
}

#[test]
fn limits_give_malformed_then_parsing_resumes() {
    let long = format!("@a(\"{}\") @ok(1)", "y".repeat(100));
    let events = check_small(&long);
    assert_eq!(
        kinds(&events),
        vec![&ParseErrorKind::CallTooLong { limit: 64 }]
    );
    assert_eq!(calls(&events).len(), 1);

    let body = "@a() with_body [[ 0123456789abcdefghij ]] @ok(1)";
    let events = check_small(body);
    assert_eq!(
        kinds(&events),
        vec![&ParseErrorKind::BodyTooLong { limit: 16 }]
    );
    assert_eq!(calls(&events)[0].name, "ok");

    let exact = "@a() with_body [[0123456789abcdef]]";
    assert_eq!(
        calls(&check_small(exact))[0].body.as_deref(),
        Some("0123456789abcdef")
    );

    let args = "@a(1, 2, 3, 4) @b(1, 2, 3, 4, 5) @ok()";
    let events = check_small(args);
    assert_eq!(
        kinds(&events),
        vec![&ParseErrorKind::TooManyArgs { limit: 4 }]
    );
    assert_eq!(calls(&events).len(), 2);

    let deep = "@a([[[1]]]) @b([[[[1]]]]) @ok()";
    let events = check_small(deep);
    assert_eq!(kinds(&events), vec![&ParseErrorKind::TooDeep { limit: 3 }]);
    assert_eq!(calls(&events).len(), 2);
}

#[test]
fn memory_stays_bounded_by_the_call_limit() {
    let config = ParserConfig::default().with_max_call_len(1000);
    let mut parser = StreamParser::new(config);
    let mut out = Vec::new();
    let mut most = 0;
    // An endless string argument, then an endless body, then prose without calls.
    let inputs: [&[u8]; 3] = [b"@a(\"", b"\") with_body [[", b"]]"];
    for start in inputs {
        parser.feed_into(start, &mut out);
        for _ in 0..10_000 {
            parser.feed_into(b"0123456789", &mut out);
            most = most.max(parser.buffered_len());
        }
    }
    parser.finish_into(&mut out);
    assert!(most <= 1000 + 10, "held {most} bytes");
}

/// Scanner steps for `input` fed in `chunk`-byte pieces.
fn steps(input: &[u8], chunk: usize) -> u64 {
    let mut parser = StreamParser::default();
    let mut out = Vec::new();
    for c in input.chunks(chunk) {
        parser.feed_into(c, &mut out);
    }
    parser.finish_into(&mut out);
    parser.scan_steps()
}

#[test]
fn work_is_linear_in_the_input() {
    let n = 20_000;
    let adversarial: Vec<(&str, String)> = vec![
        ("open calls", "@a(".repeat(n)),
        ("failing calls", "@a(1 ".repeat(n)),
        (
            "nested candidates",
            format!("{}{}", "@a(x ".repeat(n), ")".repeat(n)),
        ),
        ("names", "@a.b.c.d".repeat(n)),
        ("quotes", "@a(\"@b('".repeat(n)),
        ("keys", "@a(k k k k k k k k k ".repeat(n / 4)),
        ("bodies", "@a() with_body [[ ".repeat(n)),
        ("gaps", "@a()            \n      with_bod".repeat(n / 4)),
        ("at signs", "@".repeat(n * 4)),
        ("email-like", "a@a@a@a(".repeat(n)),
        (
            "calls",
            "@f(1, x=[2, {k: 'v'}]) with_body [[ [1] ]]".repeat(n / 8),
        ),
    ];
    for (label, input) in adversarial {
        for chunk in [1, 7, usize::MAX] {
            let s = steps(input.as_bytes(), chunk.min(input.len()));
            let bound = 3 * input.len() as u64;
            assert!(
                s <= bound,
                "{label}: {s} steps for {} bytes in {chunk}-byte chunks",
                input.len()
            );
        }
    }
}
