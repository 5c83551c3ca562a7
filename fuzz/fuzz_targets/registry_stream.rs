//! A model's answer run by the registry while it streams: arbitrary bytes under an
//! arbitrary chunking never panic, give the same outcomes as the whole answer, and, when
//! the stream ends at a repeated call, run nothing from that call on.
#![no_main]

use atfunc_tools::{FnBox, Registry};
use atfunc::{Interface, Param, ParamType};
use libfuzzer_sys::fuzz_target;
use serde_json::json;
use std::sync::OnceLock;

mod common;
use common::chunks;

/// Two plain functions and the registry's control functions.
fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let registry = Registry::new();
        let tools = FnBox::new("t")
            .function(
                Interface::new("echo")
                    .in_domain("t")
                    .param(Param::new("x", ParamType::String).required()),
                |args, _| Ok(json!(args.value("x"))),
            )
            .function(
                Interface::new("add")
                    .in_domain("t")
                    .param(Param::new("a", ParamType::Integer).required())
                    .param(Param::new("b", ParamType::Integer)),
                |args, _| {
                    Ok(json!(args
                        .opt::<i64>("a")?
                        .unwrap_or(0)
                        .wrapping_add(args.opt::<i64>("b")?.unwrap_or(0))))
                },
            );
        registry.register(tools).expect("the tools are valid");
        registry
    })
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime")
    })
}

/// Each outcome as (span, block), and where the answer was ended, for `input` fed in
/// chunks of `sizes` (each byte `s` a chunk of `s + 1` bytes, cycled; none: whole).
fn run(input: &[u8], sizes: &[u8], once: bool) -> (Vec<(u64, u64, String)>, Option<u64>) {
    runtime().block_on(async {
        let mut stream = registry().stream();
        if once {
            stream = stream.end_at_repeated_call();
        }
        for chunk in chunks(input, sizes) {
            stream.feed(chunk).await;
        }
        let end = stream.finish().await;
        let outcomes = end
            .report
            .calls
            .iter()
            .map(|o| (o.span.start, o.span.end, o.block.clone()))
            .collect();
        (outcomes, end.repeated_at.map(|span| span.start))
    })
}

fuzz_target!(|data: (Vec<u8>, Vec<u8>, bool)| {
    let (input, sizes, once) = data;
    let whole = run(&input, &[], once);
    assert_eq!(run(&input, &sizes, once), whole);
    if let Some(at) = whole.1 {
        assert!(once);
        assert!(whole.0.iter().all(|(_, end, _)| *end <= at), "{whole:?}");
        // Read whole, the same answer runs every call up to the repeat alike, and more.
        let all = run(&input, &[], false);
        assert!(all.0.len() > whole.0.len());
        assert_eq!(all.0[..whole.0.len()], whole.0[..]);
    }
});
