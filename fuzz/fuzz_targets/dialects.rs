//! Every dialect (and `auto`) on arbitrary bytes under an arbitrary chunking: never a panic,
//! the same events as the whole input (text merged), and the events rebuild the input byte
//! for byte, each call or malformed span announced by its call-started event.
#![no_main]

use atfunc::parse::{Dialect, FunctionNames};
use atfunc::{Event, ParserConfig, StreamParser};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

mod common;
use common::{chunks, merge};

/// `ATFUNC_FUZZ_DIALECT=hermes` (any name `--dialect` takes) pins the dialect, so that each
/// one can be given a run of its own; unset, the input's first byte picks one.
fn pinned() -> Option<Dialect> {
    static PINNED: OnceLock<Option<Dialect>> = OnceLock::new();
    *PINNED.get_or_init(|| {
        let name = std::env::var("ATFUNC_FUZZ_DIALECT").ok()?;
        match name.parse() {
            Ok(dialect) => Some(dialect),
            Err(error) => panic!("ATFUNC_FUZZ_DIALECT: {error}"),
        }
    })
}

fn run(config: &ParserConfig, input: &[u8], sizes: &[u8]) -> Vec<Event> {
    let mut parser = StreamParser::new(config.clone());
    let mut out = Vec::new();
    for chunk in chunks(input, sizes) {
        parser.feed_into(chunk, &mut out);
    }
    parser.finish_into(&mut out);
    merge(out)
}

fn rebuild(input: &[u8], events: &[Event]) {
    let mut rebuilt: Vec<u8> = Vec::with_capacity(input.len());
    let mut open = None;
    for event in events {
        match event {
            Event::Text { text } => rebuilt.extend_from_slice(text.as_bytes()),
            Event::InvalidUtf8 { bytes, span } => {
                assert_eq!(span.start, rebuilt.len() as u64);
                rebuilt.extend_from_slice(bytes);
            }
            Event::CallStarted { start, .. } => {
                assert_eq!(*start, rebuilt.len() as u64);
                assert!(open.replace(*start).is_none());
            }
            Event::Call(call) => {
                assert_eq!(open.take(), Some(call.span.start));
                let bytes = &input[call.span.start as usize..call.span.end as usize];
                rebuilt.extend_from_slice(bytes);
            }
            Event::Malformed { span, text, .. } => {
                assert_eq!(open.take(), Some(span.start));
                let bytes = &input[span.start as usize..span.end as usize];
                assert_eq!(text, &String::from_utf8_lossy(bytes));
                rebuilt.extend_from_slice(bytes);
            }
            other => panic!("an event this target does not know: {other:?}"),
        }
    }
    assert!(open.is_none());
    assert_eq!(rebuilt, input);
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Some((&n_sizes, rest)) = rest.split_first() else {
        return;
    };
    let n_sizes = (n_sizes as usize % 8).min(rest.len());
    let (sizes, input) = rest.split_at(n_sizes);
    // Every dialect but atfunc (the other fuzz targets cover it), auto included.
    let dialects = &Dialect::ALL[1..];
    let dialect = pinned().unwrap_or(dialects[pick as usize % dialects.len()]);
    let mut config = if pick as usize / dialects.len() % 2 == 1 {
        ParserConfig::default()
            .with_max_call_len(48)
            .with_max_depth(3)
            .with_max_args(3)
    } else {
        ParserConfig::default()
    }
    .with_dialect(dialect);
    // Known tools let hermes and auto read bare JSON calls that name one.
    if pick as usize / dialects.len() / 2 % 2 == 1 {
        let mut offered = FunctionNames::new();
        for name in ["f", "get_weather", "a.b"] {
            offered.insert(name);
        }
        config.offered = Some(offered);
    }
    let whole = run(&config, input, &[]);
    rebuild(input, &whole);
    assert_eq!(run(&config, input, sizes), whole);
    assert_eq!(run(&config, input, &[0]), whole);
});
