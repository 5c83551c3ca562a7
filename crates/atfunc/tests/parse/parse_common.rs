//! Shared by the parser tests: run one input through every chunking and check the invariants.
#![allow(dead_code)]

use atfunc::parse::Span;
use atfunc::{Event, ParserConfig, StreamParser};

/// Adjacent text events joined: the form in which every chunking must agree.
pub fn merge(events: Vec<Event>) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::with_capacity(events.len());
    for e in events {
        if let (Some(Event::Text { text: prev }), Event::Text { text }) = (out.last_mut(), &e) {
            prev.push_str(text);
            continue;
        }
        out.push(e);
    }
    out
}

/// The events for `input` fed in chunks of the given sizes (cycled), finished.
pub fn events_in_chunks(input: &[u8], sizes: &[usize]) -> Vec<Event> {
    events_in_chunks_with(StreamParser::default(), input, sizes)
}

/// [`events_in_chunks`] with a parser made from `config`.
pub fn events_in_chunks_config(input: &[u8], config: &ParserConfig, sizes: &[usize]) -> Vec<Event> {
    events_in_chunks_with(StreamParser::new(config.clone()), input, sizes)
}

/// [`events_in_chunks`] with a given parser.
pub fn events_in_chunks_with(
    mut parser: StreamParser,
    input: &[u8],
    sizes: &[usize],
) -> Vec<Event> {
    let mut out = Vec::new();
    let mut rest = input;
    let mut k = 0;
    while !rest.is_empty() {
        let n = sizes[k % sizes.len()].clamp(1, rest.len());
        k += 1;
        let (chunk, tail) = rest.split_at(n);
        parser.feed_into(chunk, &mut out);
        rest = tail;
    }
    parser.finish_into(&mut out);
    out
}

/// Chunk sizes from a small deterministic generator, so failures replay.
pub fn random_sizes(seed: u64, max: usize) -> Vec<usize> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
        | 1;
    (0..64)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            1 + (x % max as u64) as usize
        })
        .collect()
}

/// For every byte offset of `input`, the number of characters before it in the text
/// `String::from_utf8_lossy` makes of it (one per valid character, one per invalid
/// sequence); an offset inside a character or sequence gets the count at its start.
pub fn char_offsets(input: &[u8]) -> Vec<u64> {
    let mut table = Vec::with_capacity(input.len() + 1);
    let mut chars = 0u64;
    for chunk in input.utf8_chunks() {
        for c in chunk.valid().chars() {
            table.extend(std::iter::repeat_n(chars, c.len_utf8()));
            chars += 1;
        }
        if !chunk.invalid().is_empty() {
            table.extend(std::iter::repeat_n(chars, chunk.invalid().len()));
            chars += 1;
        }
    }
    table.push(chars);
    table
}

/// Checks a span's character offsets against the reference table of [`char_offsets`].
pub fn assert_chars(table: &[u64], span: &Span) {
    assert_eq!(
        (span.char_start, span.char_end),
        (table[span.start as usize], table[span.end as usize]),
        "character offsets of {span:?}"
    );
}

/// Checks that the text, invalid bytes and call/malformed spans rebuild `input` exactly,
/// in order and without gaps, that every call-started event is answered, and that every
/// span's character offsets are right.
pub fn assert_reproduces(input: &[u8], events: &[Event]) {
    let table = char_offsets(input);
    for e in events {
        match e {
            Event::InvalidUtf8 { span, .. } | Event::Malformed { span, .. } => {
                assert_chars(&table, span)
            }
            Event::Call(call) => assert_chars(&table, &call.span),
            _ => {}
        }
    }
    let mut rebuilt = Vec::with_capacity(input.len());
    let mut open: Option<u64> = None;
    for e in events {
        match e {
            Event::Text { text } => rebuilt.extend_from_slice(text.as_bytes()),
            Event::InvalidUtf8 { bytes, span } => {
                assert_eq!(
                    span.start,
                    rebuilt.len() as u64,
                    "invalid bytes out of place"
                );
                assert_eq!(span.len(), bytes.len() as u64);
                rebuilt.extend_from_slice(bytes);
            }
            Event::CallStarted { start, .. } => {
                assert_eq!(*start, rebuilt.len() as u64, "call started out of place");
                assert!(open.is_none(), "two calls open at once");
                open = Some(*start);
            }
            Event::Call(call) => {
                assert_eq!(open.take(), Some(call.span.start), "call without its start");
                assert_eq!(call.span.start, rebuilt.len() as u64, "call out of place");
                rebuilt.extend_from_slice(&input[call.span.start as usize..call.span.end as usize]);
            }
            Event::Malformed { span, text, .. } => {
                assert_eq!(open.take(), Some(span.start), "malformed without its start");
                assert_eq!(span.start, rebuilt.len() as u64, "malformed out of place");
                let bytes = &input[span.start as usize..span.end as usize];
                assert_eq!(text, &String::from_utf8_lossy(bytes));
                rebuilt.extend_from_slice(bytes);
            }
            other => panic!("an event this check does not know: {other:?}"),
        }
    }
    assert!(open.is_none(), "a call started but never ended");
    assert!(rebuilt == input, "events do not reproduce the input");
}

/// Runs `input` whole, in 1- and 3-byte chunks and in random chunks; all must give the same
/// events (text merged), and those events must reproduce the input. Returns them.
pub fn check_bytes(input: &[u8]) -> Vec<Event> {
    check_bytes_with(input, true)
}

/// As [`check_bytes`]; `one_byte` can skip the 1-byte run for inputs where it is too slow
/// in a debug build (the 3-byte run still splits every character and token).
pub fn check_bytes_with(input: &[u8], one_byte: bool) -> Vec<Event> {
    check_bytes_config(input, &ParserConfig::default(), one_byte)
}

/// [`check_bytes_with`] under the given parser options.
pub fn check_bytes_config(input: &[u8], config: &ParserConfig, one_byte: bool) -> Vec<Event> {
    let whole = merge(events_in_chunks_config(input, config, &[usize::MAX]));
    assert_reproduces(input, &whole);
    let mut runs: Vec<(String, Vec<usize>)> = vec![("3-byte".into(), vec![3])];
    if one_byte {
        runs.push(("1-byte".into(), vec![1]));
    }
    for seed in 0..4 {
        runs.push((format!("random seed {seed}"), random_sizes(seed, 17)));
    }
    runs.push(("random large".into(), random_sizes(99, 5000)));
    for (label, sizes) in runs {
        let events = merge(events_in_chunks_config(input, config, &sizes));
        assert_eq!(events, whole, "{label} chunks differ from the whole input");
    }
    whole
}

/// [`check_bytes`] for text.
pub fn check(input: &str) -> Vec<Event> {
    check_bytes(input.as_bytes())
}

/// Only the complete calls.
pub fn calls(events: &[Event]) -> Vec<&atfunc::Call> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Call(c) => Some(c),
            _ => None,
        })
        .collect()
}
