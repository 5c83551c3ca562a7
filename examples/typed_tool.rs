//! Typed tools: two Rust functions offered to a model.
fn main() {}
