//! Speed side by side: `cargo bench --manifest-path benches/peers/Cargo.toml --bench peers`.
//!
//! Per form, about 1 MiB of the BFCL ground-truth answers (rendered as the `agreement`
//! binary renders them, cycled) read by atfunc and by `tool-parser` in 1- and 16-byte
//! pieces (moved to character boundaries) and whole, in one process. Each answer is one
//! stream: atfunc gets a new parser per answer; the peer's parser is `reset` between
//! answers (a new one for `pythonic`, which has no `reset`), so neither pays for building
//! regexes per answer. Whole, the peer runs `parse_complete_with_tools`. `16t` is the
//! 16-byte pieces with no special token cut (`tokens_whole`), as a model's stream gives
//! them: the peer's DeepSeek readers read no call when a marker is cut.

use atfunc_peers::{
    answers, atfunc_calls, atfunc_parser, cuts, peer_complete, peer_registry, peer_streamed,
    tokens_whole, Form, Tools,
};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

/// One stream of the input: the text, its cuts at 1 and 16 bytes (and at 16 with no special
/// token cut), the request's tools.
struct Stream {
    text: String,
    by_1: Vec<usize>,
    by_16: Vec<usize>,
    by_16_tokens: Vec<usize>,
    tools: Tools,
}

/// About `len` bytes of answers in `form`.
fn streams(form: Form, len: usize) -> Vec<Stream> {
    let answers = answers().expect("BFCL data");
    let mut out = Vec::new();
    let mut total = 0;
    for answer in answers.iter().cycle() {
        if total >= len {
            break;
        }
        let text = form.render(&answer.calls);
        total += text.len();
        let by_16 = cuts(&text, &[16]);
        out.push(Stream {
            by_1: cuts(&text, &[1]),
            by_16_tokens: tokens_whole(&text, &by_16, form.special_tokens()),
            by_16,
            text,
            tools: answer.tools.clone(),
        });
    }
    out
}

fn bench(c: &mut Criterion) {
    let registry = peer_registry();
    let mut group = c.benchmark_group("peers");
    group.sample_size(10);
    for form in Form::ALL {
        let input = streams(form, 1 << 20);
        let bytes: usize = input.iter().map(|s| s.text.len()).sum();
        group.throughput(Throughput::Bytes(bytes as u64));
        let name = form.peer();
        for chunk in ["1", "16", "16t", "whole"] {
            let feed = |s: &'_ Stream| -> Option<Vec<usize>> {
                match chunk {
                    "1" => Some(s.by_1.clone()),
                    "16" => Some(s.by_16.clone()),
                    "16t" => Some(s.by_16_tokens.clone()),
                    _ => None,
                }
            };
            let feeds: Vec<Option<Vec<usize>>> = input.iter().map(feed).collect();
            let id = |side: &str| BenchmarkId::new(format!("{}/{side}", form.label()), chunk);
            group.bench_function(id("atfunc"), |b| {
                b.iter(|| {
                    let mut calls = 0;
                    for (s, cuts) in input.iter().zip(&feeds) {
                        let mut parser = atfunc_parser(form);
                        calls += atfunc_calls(&mut parser, &s.text, cuts.as_deref()).len();
                    }
                    black_box(calls)
                })
            });
            group.bench_function(id("tool-parser"), |b| {
                let mut parser = registry.create_parser(name).expect("peer parser");
                b.iter(|| {
                    let mut calls = 0;
                    for (s, cuts) in input.iter().zip(&feeds) {
                        calls += match cuts {
                            None => peer_complete(parser.as_ref(), &s.text, &s.tools).len(),
                            Some(cuts) => {
                                if name == "pythonic" {
                                    parser = registry.create_parser(name).expect("peer parser");
                                } else {
                                    parser.reset();
                                }
                                peer_streamed(parser.as_mut(), &s.text, cuts, &s.tools).len()
                            }
                        };
                    }
                    black_box(calls)
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
