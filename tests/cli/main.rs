//! The `atfunc` binary, run as a user runs it (`support/mod.rs` runs it).
//!
//! - `cli.rs`: every subcommand and its errors;
//! - `cli_confirm.rs`: `exec --confirm` on a pseudo-terminal;
//! - `cli_dialects.rs`: `--dialect`, other models' call formats;
//! - `cli_jsonl.rs`: `parse --jsonl`, batch post-processing;
//! - `cli_stream.rs`: what it prints while its input is still open.
//!
//! `tests/exec_memory.rs` measures the peak memory of `atfunc exec` through the children of
//! its own process, so it stays a binary of its own.

#[cfg(feature = "cli")]
#[path = "../support/missing.rs"]
mod missing;
#[cfg(feature = "cli")]
#[path = "../support/pages.rs"]
mod pages;
#[cfg(feature = "cli")]
#[path = "../support/mod.rs"]
mod support;

mod cli;
mod cli_confirm;
mod cli_dialects;
mod cli_jsonl;
mod cli_stream;
