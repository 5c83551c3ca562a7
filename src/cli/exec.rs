//! `atfunc exec`: parse a model's output, run each call as soon as it is complete.

use super::Failure;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `atfunc exec`.
#[derive(Debug, clap::Args)]
pub(crate) struct ExecArgs {
    /// The tools file whose functions the model may call.
    #[arg(long, value_name = "FILE")]
    tools: PathBuf,
    /// The model output to read (default: standard input).
    file: Option<PathBuf>,
}

pub(crate) fn run(args: ExecArgs) -> Result<ExitCode, Failure> {
    Err(Failure(format!(
        "exec is not available yet ({})",
        args.tools.display()
    )))
}
