//! `atfunc-lab`: the lab's command line, `atfunc-lab eval ...` (what `atfunc eval` was).

mod cli;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// atfunc's lab: measurements that are not part of the library.
#[derive(Debug, Parser)]
#[command(name = "atfunc-lab", version, about, long_about = None)]
struct Lab {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Measure how well a model behind an OpenAI-compatible endpoint calls functions, on
    /// BFCL questions: accuracy per mode (text, repair, grammar, native).
    Eval(cli::EvalArgs),
}

/// A failure that ends the command with exit code 2, printed as `atfunc-lab: <message>`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Failure(pub String);

/// Writes `atfunc-lab: <message>` to standard error, its control characters written out.
pub(crate) fn note(message: &str) {
    use std::io::Write;
    let line = format!(
        "atfunc-lab: {}\n",
        atfunc::format::escape_lines_for_terminal(message)
    );
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

fn main() -> ExitCode {
    let lab = Lab::parse();
    let result = match lab.command {
        Command::Eval(args) => cli::run(args),
    };
    match result {
        Ok(code) => code,
        Err(failure) => {
            note(&failure.to_string());
            ExitCode::from(2)
        }
    }
}
