use atfunc::grammar::GrammarError;
use atfunc::interface::{LoadError, ValidationError};
use atfunc::interop::BridgeError;
use atfunc::{BindError, ParseError};
use std::mem::size_of;

/// clippy's `result_large_err` threshold: an error larger than this makes every `Result`
/// that carries it as large, and is boxed instead.
const LARGE: usize = 128;

#[test]
fn errors_keep_results_small() {
    let sizes = [
        ("BindError", size_of::<BindError>()),
        ("LoadError", size_of::<LoadError>()),
        ("GrammarError", size_of::<GrammarError>()),
        ("ParseError", size_of::<ParseError>()),
        ("BridgeError", size_of::<BridgeError>()),
        ("ValidationError", size_of::<ValidationError>()),
    ];
    for (name, size) in sizes {
        println!("{name}: {size} bytes");
        assert!(size < LARGE, "{name} is {size} bytes");
    }
}
