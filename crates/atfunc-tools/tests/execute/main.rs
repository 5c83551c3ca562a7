//! Running calls and formatting their results, the last phases: the registry and the tool
//! boxes it runs calls in, and the text the model reads back.
//!
//! - `registry.rs`: registration, lookup, running answers whole and streamed, control
//!   functions, statistics, the errors the model reads;
//! - `execute_wrappers.rs`, `confirm.rs`, `events.rs`: wrappers around boxes, calls held
//!   for confirmation, call events;
//! - `example_call.rs`: the prompt's example call, refused before any tool box runs it;
//! - `filebox.rs`, `command.rs`, `http.rs`, `mcp.rs`, `typed.rs`: one tool box each, the
//!   last four against a real program, server or type;
//! - `config.rs`: the config file and the registry built from it;
//! - `format_results.rs`: result blocks, call text, truncation, JSON that fits a limit;
//! - `library.rs`: the crate as a Rust user meets it (docs.rs, features, the library
//!   example `docs/library.md` shows).
//!
//! Snapshots are in `snapshots/`, named `execute__<module>__<name>.snap`.

#[cfg(feature = "mcp")]
#[path = "../../../../tests/support/missing.rs"]
mod missing;
#[path = "../../../../tests/support/pages.rs"]
mod pages;

/// Held by each test here that changes this process's environment (`std::env::set_var`),
/// from the change until its children have inherited it. The tests of one binary run on
/// parallel threads: std's own lock keeps each read and write sound, and this one keeps two
/// such tests from running at once, so the environment a child inherits holds no other
/// test's changes in the making.
#[cfg(feature = "command")]
static ENVIRONMENT: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

mod command;
mod config;
mod confirm;
mod events;
mod example_call;
mod execute_wrappers;
mod filebox;
mod fn_defaults;
mod format_results;
mod http;
mod library;
mod mcp;
mod registry;
mod typed;
mod typed_defaults;
mod typed_shapes;
