//! Arbitrary bytes under an arbitrary chunking: never a panic, the same events as the whole
//! input (text merged), and the events rebuild the input byte for byte. The records
//! `atfunc parse --text` prints (`batch::RecordStream`) are the same on every chunking too.
#![no_main]

use atfunc::batch::{RecordStream, TextRecords};
use atfunc::{Event, ParserConfig, StreamParser};
use libfuzzer_sys::fuzz_target;
use serde_json::Value as Json;

mod common;
use common::{chunks, merge};

fn run(config: &ParserConfig, input: &[u8], sizes: &[u8]) -> Vec<Event> {
    let mut parser = StreamParser::new(config.clone());
    let mut out = Vec::new();
    for chunk in chunks(input, sizes) {
        parser.feed_into(chunk, &mut out);
    }
    parser.finish_into(&mut out);
    merge(out)
}

/// The records of `input` fed in chunks of `sizes`, as `atfunc parse --text` gives them.
fn records(input: &[u8], sizes: &[u8]) -> Vec<Json> {
    let mut stream = RecordStream::new(None).with_text(TextRecords::Included);
    let mut out = Vec::new();
    for chunk in chunks(input, sizes) {
        stream.feed(chunk, &mut out);
    }
    stream.finish(&mut out);
    out
}

fn rebuild(input: &[u8], events: &[Event]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in events {
        match e {
            Event::Text { text } => out.extend_from_slice(text.as_bytes()),
            Event::InvalidUtf8 { bytes, .. } => out.extend_from_slice(bytes),
            Event::CallStarted { .. } => {}
            Event::Call(c) => {
                out.extend_from_slice(&input[c.span.start as usize..c.span.end as usize])
            }
            Event::Malformed { span, .. } => {
                out.extend_from_slice(&input[span.start as usize..span.end as usize])
            }
            other => panic!("an event this target does not know: {other:?}"),
        }
    }
    out
}

fuzz_target!(|data: (Vec<u8>, Vec<u8>, bool)| {
    let (input, sizes, small) = data;
    // Small limits reach every limit path with short inputs.
    let config = if small {
        ParserConfig::default()
            .with_max_call_len(48)
            .with_max_body_len(12)
            .with_max_depth(3)
            .with_max_args(3)
    } else {
        ParserConfig::default()
    };
    let whole = run(&config, &input, &[]);
    assert_eq!(rebuild(&input, &whole), input);
    assert_eq!(run(&config, &input, &sizes), whole);
    assert_eq!(run(&config, &input, &[0]), whole);
    let whole = records(&input, &[]);
    assert_eq!(records(&input, &sizes), whole);
});
