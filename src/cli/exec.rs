//! `atfunc exec`: parse a model's output, run each call as soon as it is complete, print
//! the result blocks for the model's next turn.

use super::tools::{runtime, ToolArgs};
use super::Failure;
use atfunc::execute::Registry;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `atfunc exec`.
#[derive(Debug, clap::Args)]
pub(crate) struct ExecArgs {
    #[command(flatten)]
    tools: ToolArgs,
    /// The file box's folder: the old spelling of --files.
    #[arg(
        long = "root",
        value_name = "DIR",
        hide = true,
        conflicts_with = "files"
    )]
    old_root: Option<PathBuf>,
    /// Cut each result after N characters (default 5000), saying what was cut.
    #[arg(long, value_name = "N")]
    truncate: Option<usize>,
    /// Stop a call after this many seconds (default: no limit).
    #[arg(long, value_name = "SECONDS")]
    timeout: Option<f64>,
    /// Print one JSON report at the end instead of the result blocks as they come.
    #[arg(long)]
    json: bool,
    /// The model output to read (default: standard input).
    file: Option<PathBuf>,
}

/// Bytes read from the input at a time; calls run as soon as they are complete whatever
/// the size.
const CHUNK: usize = 8192;

pub(crate) fn run(mut args: ExecArgs) -> Result<ExitCode, Failure> {
    if let Some(dir) = args.old_root.take() {
        args.tools.files = Some(dir);
    }
    let runtime = runtime()?;
    let registry = args.tools.registry(&runtime, false)?;
    limit(&registry, &args)?;
    let input = super::open_input(args.file.as_deref())?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    runtime.block_on(async {
        let mut chunks = read_in_background(input);
        let mut stream = registry.stream();
        let mut printed = 0usize;
        while let Some(chunk) = chunks.recv().await {
            let chunk = chunk.map_err(|e| Failure(format!("cannot read input: {e}")))?;
            let outcomes = stream.feed(&chunk).await;
            if !args.json {
                print_blocks(&mut out, &outcomes, &mut printed)?;
                out.flush().map_err(write_failure)?;
            }
        }
        let end = stream.finish().await;
        if args.json {
            serde_json::to_writer_pretty(&mut out, &end.report.to_json())
                .map_err(|e| Failure(format!("cannot write output: {e}")))?;
            out.write_all(b"\n").map_err(write_failure)?;
        } else {
            print_blocks(&mut out, &end.outcomes, &mut printed)?;
            if end.report.call_count == 0 {
                eprintln!("atfunc: no calls found in the input");
            }
        }
        out.flush().map_err(write_failure)?;
        // Boxes may hold processes or connections; give them the chance to shut down.
        if let Err(e) = registry.close().await {
            eprintln!("atfunc: closing the tool boxes: {e}");
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// Reads the input on a thread of its own and hands it over in chunks. Waiting for the
/// model's next bytes then never blocks the runtime, so tool boxes' background work (an MCP
/// server's message loop, say) goes on meanwhile; the channel holds at most four chunks.
fn read_in_background(
    mut input: Box<dyn Read + Send>,
) -> tokio::sync::mpsc::Receiver<std::io::Result<Vec<u8>>> {
    let (sender, receiver) = tokio::sync::mpsc::channel(4);
    std::thread::spawn(move || loop {
        let mut buf = vec![0u8; CHUNK];
        let chunk = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                buf.truncate(n);
                Ok(buf)
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => Err(e),
        };
        let failed = chunk.is_err();
        // A closed channel means exec stopped early; nothing is left to read for.
        if sender.blocking_send(chunk).is_err() || failed {
            break;
        }
    });
    receiver
}

/// Prints result blocks as the report's output has them: a blank line between two.
fn print_blocks(
    out: &mut impl Write,
    outcomes: &[atfunc::execute::Outcome],
    printed: &mut usize,
) -> Result<(), Failure> {
    for outcome in outcomes {
        if *printed > 0 {
            out.write_all(b"\n").map_err(write_failure)?;
        }
        out.write_all(outcome.block.as_bytes())
            .map_err(write_failure)?;
        *printed += 1;
    }
    Ok(())
}

fn write_failure(e: std::io::Error) -> Failure {
    Failure(format!("cannot write output: {e}"))
}

/// Sets what the flags ask for on the registry: the truncate length, the time limit.
fn limit(registry: &Registry, args: &ExecArgs) -> Result<(), Failure> {
    if let Some(length) = args.truncate {
        if length == 0 {
            return Err(Failure(String::from(
                "--truncate must be at least 1 character",
            )));
        }
        registry.set_truncate_length(length);
    }
    if let Some(seconds) = args.timeout {
        let limit = Duration::try_from_secs_f64(seconds)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                Failure(format!(
                    "--timeout must be a positive number of seconds, got {seconds}"
                ))
            })?;
        registry.set_call_timeout(Some(limit));
    }
    Ok(())
}
