//! Speed side by side: `cargo bench --manifest-path benches/peers/Cargo.toml --bench peers`.
//!
//! Per form, about 1 MiB of the BFCL ground-truth answers (rendered as the `agreement`
//! binary renders them, cycled) read by atfunc and by `tool-parser` in 1- and 16-byte
//! pieces (moved to character boundaries) and whole, in one process. Each answer is one
//! stream: atfunc gets a new parser per answer; the peer's parser is `reset` between
//! answers (a new one for `pythonic`, which has no `reset`), so neither pays for building
//! regexes per answer. Whole, the peer runs `parse_complete_with_tools`. `1t` and `16t`
//! are the 1- and 16-byte pieces with no special token cut (`tokens_whole`), as a model's
//! stream gives them: the peer's DeepSeek readers read no call when a marker is cut.

use atfunc_peers::{
    atfunc_calls, atfunc_parser, peer_complete, peer_registry, peer_streamed, streams, Form,
};
use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let registry = peer_registry();
    let mut group = c.benchmark_group("peers");
    group.sample_size(10);
    // The peer takes seconds an iteration at 1-byte pieces: every sample the same count of
    // iterations (one, for those), not criterion's rising counts (55 iterations at least).
    group.sampling_mode(SamplingMode::Flat);
    for form in Form::ALL {
        let input = streams(form, 1 << 20);
        let bytes: usize = input.iter().map(|s| s.text.len()).sum();
        group.throughput(Throughput::Bytes(bytes as u64));
        let name = form.peer();
        for chunk in ["1", "1t", "16", "16t", "whole"] {
            let feeds: Vec<Option<&[usize]>> =
                input.iter().map(|s| s.cuts(chunk).flatten()).collect();
            let id = |side: &str| BenchmarkId::new(format!("{}/{side}", form.label()), chunk);
            group.bench_function(id("atfunc"), |b| {
                b.iter(|| {
                    let mut calls = 0;
                    for (s, cuts) in input.iter().zip(&feeds) {
                        let mut parser = atfunc_parser(form);
                        calls += atfunc_calls(&mut parser, &s.text, *cuts).len();
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
