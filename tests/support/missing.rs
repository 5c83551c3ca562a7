//! What a test does when a tool it runs against is not installed.
//!
//! On a developer's machine the test says what is missing and returns, so `cargo test`
//! works without every tool. Under CI (the environment variable `CI` is set, as `.ci/run`
//! sets it) a missing tool fails the test instead: a green run must have run every test.

/// Reports that `what` is missing and how to install it; returns normally (the caller then
/// returns: the test is skipped) unless `CI` is set, where it panics with the same message.
#[track_caller]
pub fn missing(test: &str, what: &str, install: &str) {
    let message = format!("{test}: {what} ({install})");
    if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
        panic!("{message}; CI is set, so a missing tool fails the test instead of skipping it");
    }
    println!("SKIPPED {message}");
}
