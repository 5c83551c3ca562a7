//! The `atfunc` binary, run as a user runs it (`support/mod.rs` runs it).
//!
//! - `cli.rs`: every subcommand and its errors;
//! - `cli_confirm.rs`: `exec --confirm` on a pseudo-terminal;
//! - `cli_dialects.rs`: `--dialect`, other models' call formats;
//! - `cli_jsonl.rs`: `parse --jsonl`, batch post-processing;
//! - `cli_stream.rs`: what it prints while its input is still open;
//! - `command_isolation.rs`: what a command box's program cannot read of `atfunc exec`;
//! - `config_commands.rs`: `exec`, `render` and `parse` on a config file;
//! - `exec_http.rs`: `exec --config` with an http tool box against a real server.
//!
//! `crates/atfunc-cli/tests/exec_memory.rs` measures the peak memory of `atfunc exec` through the children of
//! its own process, so it stays a binary of its own.

#[path = "../../../../tests/support/missing.rs"]
mod missing;
#[path = "../../../../tests/support/pages.rs"]
mod pages;
#[path = "../../../../tests/support/mod.rs"]
mod support;

mod cli;
mod cli_confirm;
mod cli_dialects;
mod cli_jsonl;
mod cli_stream;
mod command_isolation;
mod config_commands;
mod exec_http;
