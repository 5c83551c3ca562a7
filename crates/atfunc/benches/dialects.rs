//! Dialect throughput: `cargo bench -p atfunc --bench dialects`.
//!
//! For each dialect, about 1 MB of answers (prose, then one to three calls in the dialect's
//! format) runs through the stream parser in 1- and 16-byte chunks and whole, next to a
//! `memchr` pass over the same bytes (counting the dialect's first marker byte) in the same
//! run. Prose with no marker of any dialect (group `prose`) runs through `auto` and through
//! the atfunc parser beside `memchr` over the same bytes, and the ratios are printed.

use atfunc::parse::{Dialect, ParserConfig};
use atfunc::{Event, StreamParser};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

const PROSE: &str = "The forecast for the coming week looks mild, with light winds from the west \
and a chance of rain on Thursday afternoon. If you need the exact figures, write to \
support@example.com or check the dashboard; the numbers refresh every ten minutes. ";

const PROSE_SCRIPTS: &str = "Le temps à Zürich reste doux cette semaine 😀, avec un peu de pluie \
jeudi. 東京の天気は晴れ、気温は二十度前後です。 Погода в Москве: облачно, ветер слабый. \
Write to support@example.com for the figures. ";

/// One call in `dialect`: name, then JSON arguments.
fn call(dialect: Dialect, name: &str, args: &str, py: &str) -> String {
    match dialect {
        Dialect::Hermes => {
            format!("<tool_call>\n{{\"name\": \"{name}\", \"arguments\": {args}}}\n</tool_call>")
        }
        Dialect::Llama3 => format!("<|python_tag|>{{\"name\": \"{name}\", \"parameters\": {args}}}"),
        Dialect::Mistral => format!("[TOOL_CALLS]{name}[ARGS]{args}"),
        Dialect::Pythonic => format!("[{name}({py})]"),
        Dialect::Deepseek => format!(
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{args}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        ),
        Dialect::Qwen3Xml => format!(
            "<tool_call>\n<function={name}>\n<parameter=location>\nParis, France\n</parameter>\n<parameter=unit>\ncelsius\n</parameter>\n</function>\n</tool_call>"
        ),
        Dialect::Harmony => format!(
            "<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{args}<|call|>"
        ),
        _ => String::new(),
    }
}

/// About `len` bytes of answers in `dialect`.
fn answers(dialect: Dialect, len: usize) -> Vec<u8> {
    let args = r#"{"location": "Paris, France", "unit": "celsius", "days": [1, 2, 3]}"#;
    let py = "location='Paris, France', unit='celsius', days=[1, 2, 3]";
    let mut out = String::with_capacity(len + 1024);
    while out.len() < len {
        out.push_str("Let me check the weather for you. ");
        out.push_str(&call(dialect, "weather.get_current_weather", args, py));
        out.push('\n');
    }
    out.into_bytes()
}

fn prose(len: usize) -> Vec<u8> {
    PROSE.repeat(len / PROSE.len() + 1).into_bytes()
}

/// About `len` bytes of prose in several scripts, with no marker of any dialect.
fn prose_scripts(len: usize) -> Vec<u8> {
    PROSE_SCRIPTS
        .repeat(len / PROSE_SCRIPTS.len() + 1)
        .into_bytes()
}

fn parse(config: &ParserConfig, input: &[u8], chunk: usize) -> usize {
    let mut parser = StreamParser::new(config.clone());
    let mut events = Vec::new();
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
    let size = 1 << 20;
    let dialects = Dialect::others().iter().copied();
    let mut group = c.benchmark_group("dialects");
    group.sample_size(10);
    for dialect in dialects {
        let input = answers(dialect, size);
        let config = ParserConfig::default().with_dialect(dialect);
        group.throughput(Throughput::Bytes(input.len() as u64));
        for (label, chunk) in [("1", 1), ("16", 16), ("whole", input.len())] {
            group.bench_with_input(
                BenchmarkId::new(format!("{dialect}/{label}"), input.len()),
                &input,
                |b, input| b.iter(|| black_box(parse(&config, input, chunk))),
            );
        }
        let first = input.first().copied().unwrap_or(b'<');
        let marker = if dialect == Dialect::Mistral || dialect == Dialect::Pythonic {
            b'['
        } else {
            first.max(b'<')
        };
        group.bench_with_input(
            BenchmarkId::new(format!("{dialect}/memchr"), input.len()),
            &input,
            |b, input| b.iter(|| black_box(memchr::memchr_iter(marker, input).count())),
        );
    }
    group.finish();
    prose_group(c, size);
}

/// Prose with no call: the atfunc parser and `auto` (4096-byte pieces) beside a `memchr`
/// pass over the same bytes, counting `@` (what the atfunc parser looks for) and `<` (a
/// byte the prose does not hold: one uninterrupted pass). ASCII prose, and prose in
/// several scripts. Criterion times each; the ratio to `memchr` is then measured again
/// with the two interleaved, so that a change in the machine's load hits both alike.
fn prose_group(c: &mut Criterion, size: usize) {
    let mut group = c.benchmark_group("prose");
    group.sample_size(10);
    for (label, text) in [("ascii", prose(size)), ("scripts", prose_scripts(size))] {
        group.throughput(Throughput::Bytes(text.len() as u64));
        for dialect in [Dialect::Atfunc, Dialect::Auto] {
            let config = ParserConfig::default().with_dialect(dialect);
            group.bench_with_input(
                BenchmarkId::new(format!("{label}/{dialect}"), text.len()),
                &text,
                |b, text| b.iter(|| black_box(parse(&config, text, 4096))),
            );
        }
        for byte in [b'@', b'<'] {
            group.bench_with_input(
                BenchmarkId::new(format!("{label}/memchr {}", byte as char), text.len()),
                &text,
                |b, text| b.iter(|| black_box(memchr::memchr_iter(byte, text).count())),
            );
        }
    }
    group.finish();
    for (label, text) in [("ascii", prose(size)), ("scripts", prose_scripts(size))] {
        let atfunc = ParserConfig::default();
        let auto = ParserConfig::default().with_dialect(Dialect::Auto);
        let parser = median_time(|| parse(&atfunc, &text, 4096), || memchr_at(&text));
        let both = median_time(|| parse(&auto, &text, 4096), || parse(&atfunc, &text, 4096));
        let plain = median_time(
            || parse(&atfunc, &text, 4096),
            || memchr::memchr_iter(b'<', &text).count(),
        );
        println!(
            "prose/{label}: atfunc parser {:.2}x the time of memchr `@`, {:.2}x of memchr `<`; auto {:.2}x the atfunc parser",
            parser, plain, both
        );
    }
}

/// The `memchr` baseline: every `@` of the text counted.
fn memchr_at(text: &[u8]) -> usize {
    memchr::memchr_iter(b'@', text).count()
}

/// The median time of `a` over the median time of `b`, the two run in turn (201 runs each).
fn median_time(mut a: impl FnMut() -> usize, mut b: impl FnMut() -> usize) -> f64 {
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..201 {
        let start = std::time::Instant::now();
        black_box(a());
        ta.push(start.elapsed());
        let start = std::time::Instant::now();
        black_box(b());
        tb.push(start.elapsed());
    }
    ta.sort();
    tb.sort();
    let median =
        |t: &[std::time::Duration]| t.get(t.len() / 2).map_or(f64::NAN, |d| d.as_secs_f64());
    median(&ta) / median(&tb)
}

criterion_group!(benches, bench);
criterion_main!(benches);
