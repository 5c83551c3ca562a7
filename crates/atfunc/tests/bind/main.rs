//! Binding, the third phase: parsed calls checked against the interfaces and turned into
//! arguments, and the tests that go from a model's text through parsing to bound values.
//!
//! - `bind.rs`: name resolution, arguments, conversions, request bodies, every error's text;
//! - `string_formats.rs`: JSON Schema string formats (`date`, `email`, ...) and parameters'
//!   own parsers, checked before a tool runs;
//! - `placeholders.rs`: the prompt's placeholders copied as values are refused, and only
//!   they;
//! - `roundtrip.rs`: random values written as calls come back the same (proptest);
//! - `bfcl.rs`: every expected call of the BFCL ground truth parses and binds;
//! - `grammar.rs`: grammars agree with the parser and the binder, and with llama.cpp's own
//!   grammar engine.

#[path = "../call_text/mod.rs"]
mod call_text;
#[path = "../../../../tests/support/missing.rs"]
mod missing;

mod bfcl;
mod bind;
mod grammar;
mod placeholders;
mod roundtrip;
mod string_formats;
