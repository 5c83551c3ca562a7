//! Parser throughput: `cargo bench -p atfunc --bench parse`.
//!
//! Each input runs through the stream parser whole and in 1-, 16- and 4096-byte chunks, next
//! to three baselines over the same bytes in the same run: a `memchr` count of `@` (the cost
//! of touching every byte once), a naive regex extractor, and `copy`: the input cut at each
//! `@` into owned strings that are kept until the end, as the parser's text events are (the
//! least a parser that hands out owned text must do, allocator included).

use atfunc::{Event, StreamParser};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

const CALLS: [&str; 4] = [
    r#"@weather.get_current_weather(location="Paris, France", unit: "celsius")"#,
    "@math.sum_of_multiples(lower_limit=1, upper_limit=1000, multiples=[3, 5])",
    "@api.create_user(\"bob\", \"bob@example.com\") with_body [[ {\"name\": \"Bob\", \"tags\": [\"a\", \"b\"]} ]]",
    "@search(New York restaurants, limit: 5)",
];

const PROSE: &str = "The forecast for the coming week looks mild, with light winds from the west \
and a chance of rain on Thursday afternoon. If you need the exact figures, write to \
support@example.com or check the dashboard; the numbers refresh every ten minutes. ";

/// About `len` bytes of prose with `calls` calls spread evenly through it.
fn prose_heavy(len: usize, calls: usize) -> Vec<u8> {
    let per_gap = len / calls;
    let mut out = String::with_capacity(len + 1024);
    for i in 0..calls {
        let start = out.len();
        while out.len() - start < per_gap.saturating_sub(80) {
            out.push_str(PROSE);
        }
        out.truncate(start + per_gap.saturating_sub(80).min(out.len() - start));
        out.push_str(" Let me check. ");
        out.push_str(CALLS[i % CALLS.len()]);
        out.push('\n');
    }
    out.into_bytes()
}

/// Calls back to back, about `len` bytes.
fn call_dense(len: usize) -> Vec<u8> {
    let mut out = String::with_capacity(len + 256);
    let mut i = 0;
    while out.len() < len {
        out.push_str(CALLS[i % CALLS.len()]);
        out.push(' ');
        i += 1;
    }
    out.into_bytes()
}

/// One call whose string argument is `len` bytes.
fn big_argument(len: usize) -> Vec<u8> {
    let mut out = b"Saving now: @files.write(path=\"notes.txt\", text=\"".to_vec();
    out.extend(std::iter::repeat_n(b'x', len));
    out.extend_from_slice(b"\") done.");
    out
}

/// The `copy` baseline: every piece between two `@` as an owned string, all kept.
fn copy_out(input: &[u8]) -> usize {
    let mut pieces: Vec<String> = Vec::new();
    let mut start = 0;
    for at in memchr::memchr_iter(b'@', input).chain([input.len()]) {
        if let Some(s) = input
            .get(start..at)
            .and_then(|b| std::str::from_utf8(b).ok())
        {
            pieces.push(s.to_owned());
        }
        start = at;
    }
    pieces.len()
}

fn parse(input: &[u8], chunk: usize) -> usize {
    let mut parser = StreamParser::default();
    let mut events: Vec<Event> = Vec::new();
    let mut calls = 0;
    for piece in input.chunks(chunk) {
        parser.feed_into(piece, &mut events);
        calls += events
            .iter()
            .filter(|e| matches!(e, Event::Call(_)))
            .count();
        events.clear();
    }
    parser.finish_into(&mut events);
    calls
        + events
            .iter()
            .filter(|e| matches!(e, Event::Call(_)))
            .count()
}

fn bench(c: &mut Criterion) {
    let regex = regex::bytes::Regex::new(r"@[\w.]+\([^)]*\)").expect("valid regex");
    let inputs = [
        ("prose_1mb", prose_heavy(1 << 20, 2000)),
        ("prose_8mb", prose_heavy(8 << 20, 16000)),
        ("call_dense_1mb", call_dense(1 << 20)),
        ("big_argument_5mb", big_argument(5 << 20)),
    ];
    for (name, input) in &inputs {
        let mut group = c.benchmark_group(*name);
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.sample_size(10);
        for (label, chunk) in [("whole", input.len()), ("4096", 4096), ("16", 16), ("1", 1)] {
            if chunk == 1 && input.len() > 2 << 20 {
                // One-byte chunks of the big inputs add minutes and nothing new.
                continue;
            }
            group.bench_with_input(BenchmarkId::new("atfunc", label), input, |b, input| {
                b.iter(|| parse(black_box(input), chunk))
            });
        }
        group.bench_with_input(BenchmarkId::new("memchr", "whole"), input, |b, input| {
            b.iter(|| memchr::memchr_iter(b'@', black_box(input)).count())
        });
        group.bench_with_input(BenchmarkId::new("regex", "whole"), input, |b, input| {
            b.iter(|| regex.find_iter(black_box(input)).count())
        });
        group.bench_with_input(BenchmarkId::new("copy", "whole"), input, |b, input| {
            b.iter(|| copy_out(black_box(input)))
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
