//! The `atfunc` command line as a library: [`run`] is what the `atfunc` binary runs, for a
//! program that ships the command inside another one (the Python package's `atfunc`
//! entry point). Its commands, flags and output are documented in docs/cli.md.
#![deny(missing_docs)]

mod cli;

pub use cli::run;
#[doc(hidden)]
pub use cli::serve_options;
