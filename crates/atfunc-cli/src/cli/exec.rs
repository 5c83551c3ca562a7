//! `atfunc exec`: parse a model's output, run each call as soon as it is complete, print
//! the result blocks for the model's next turn.

use super::confirm::{self, ConfirmMode};
use super::output::write_failure;
use super::tools::{runtime, ToolArgs};
use super::Failure;
use atfunc::parse::{Dialect, Span};
use atfunc_tools::{ExecutionReport, Outcome, Registry};
use futures::StreamExt;
use std::io::{IsTerminal, Read, Seek, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `atfunc exec`.
#[derive(Debug, clap::Args)]
pub(crate) struct ExecArgs {
    #[command(flatten)]
    tools: ToolArgs,
    /// Cut each result after N characters (default 5000), saying what was cut.
    #[arg(long, value_name = "N")]
    truncate: Option<usize>,
    /// Stop a call after this many seconds (default: no limit).
    #[arg(long, value_name = "SECONDS")]
    timeout: Option<f64>,
    /// Print one JSON report instead of the result blocks (written as the calls finish).
    #[arg(long)]
    json: bool,
    /// Write each call's events (start, success, error) to FILE as JSON Lines; `-` is
    /// standard error.
    #[arg(long, value_name = "FILE")]
    events: Option<PathBuf>,
    /// Calls of functions that need confirmation (a config's "confirm": true): ask shows
    /// each on the terminal and waits for y or n (without a terminal, or with the model's
    /// answer read from it: no); yes runs them;
    /// no runs none, and each result says it waits for confirmation.
    #[arg(long, value_enum, default_value_t = ConfirmMode::Ask)]
    confirm: ConfirmMode,
    /// The call format to read: atfunc, hermes, llama3, mistral, pythonic, deepseek,
    /// qwen3_xml, harmony, or auto (any of them: the first call read fixes the format; a
    /// call in a sentence is prose).
    #[arg(long, value_name = "NAME", default_value_t = Dialect::Atfunc)]
    dialect: Dialect,
    /// Run a call that repeats an earlier one (the same function, the same arguments).
    /// Without it the first repeat ends the answer, as in `atfunc serve`: neither it nor
    /// anything after it runs (a small model may write its calls again and again).
    #[arg(long)]
    keep_repeated_calls: bool,
    /// The model output to read (default: standard input).
    file: Option<PathBuf>,
}

/// Bytes read from the input at a time; calls run as soon as they are complete whatever
/// the size.
const CHUNK: usize = 8192;

pub(crate) fn run(args: ExecArgs) -> Result<ExitCode, Failure> {
    keep_environment_private();
    let runtime = runtime()?;
    let registry = args.tools.registry(&runtime, false)?;
    limit(&registry, &args)?;
    if args.dialect != Dialect::Atfunc {
        registry.set_parser_config(registry.parser_config().with_dialect(args.dialect));
    }
    if let Some(path) = &args.events {
        watch(&registry, path)?;
    }
    let answer_on_terminal = match &args.file {
        None => std::io::stdin().is_terminal(),
        Some(path) => confirm::is_controlling_terminal(path),
    };
    let waiting = confirm::set_up(&registry, args.confirm, answer_on_terminal);
    let input = super::open_input(args.file.as_deref())?;
    let stdout = std::io::stdout();
    // On a terminal, what tools and the model wrote is shown with its control and
    // invisible characters as escapes, so it cannot drive the terminal; into a file or a
    // pipe it goes byte for byte.
    let escape = stdout.is_terminal();
    let mut out = stdout.lock();
    runtime.block_on(async {
        let chunks = read_in_background(input);
        let chunks = futures::stream::unfold(chunks, |mut chunks| async move {
            let chunk = chunks.recv().await?;
            Some((chunk, chunks))
        });
        // Each outcome is written out as it comes, so none is kept: memory stays flat
        // however many calls the input holds.
        let mut stream = registry.stream().forget_outcomes();
        if !args.keep_repeated_calls {
            stream = stream.end_at_repeated_call();
        }
        let mut printed = 0usize;
        let mut held = 0usize;
        let mut report = match args.json {
            true => Some(JsonReport::start(&mut out, escape)?),
            false => None,
        };
        // One outcome at a time, each written as its call finishes: a later call in the
        // same chunk may wait for a person's answer, who should see what ran before it.
        let mut outcomes = stream.run(chunks);
        while let Some(outcome) = outcomes.next().await {
            let outcome = outcome.map_err(|e| Failure(format!("cannot read input: {e}")))?;
            let outcome = std::slice::from_ref(&outcome);
            held += count_held(outcome);
            match report.as_mut() {
                Some(report) => report.add(&mut out, outcome)?,
                None => print_blocks(&mut out, outcome, &mut printed, escape)?,
            }
            out.flush().map_err(write_failure)?;
        }
        let call_count = outcomes.report().call_count;
        if let Some(at) = outcomes.repeated_at() {
            eprintln!(
                "atfunc: the call at byte {} (character {}) repeats an earlier one: it and \
                 what follows did not run (--keep-repeated-calls runs every call)",
                at.start, at.char_start
            );
        }
        if let Some(report) = report {
            report.finish(&mut out, call_count, outcomes.repeated_at())?;
        } else if call_count == 0 {
            eprintln!("atfunc: no calls found in the input");
        }
        out.flush().map_err(write_failure)?;
        if held > 0 {
            let calls = if held == 1 {
                "call waits"
            } else {
                "calls wait"
            };
            eprintln!("atfunc: {held} {calls} for confirmation and did not run ({waiting})");
        }
        // Boxes may hold processes or connections; give them the chance to shut down.
        if let Err(e) = registry.close().await {
            super::output::note(&format!("closing the tool boxes: {e}"));
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// Makes this process non-dumpable (Linux), before any tool runs: its memory and the
/// environment it started with (`/proc/<pid>/environ`, where a host's unrelated secrets
/// live) can then be read only with CAP_SYS_PTRACE, which a program of the same user
/// lacks, and which a command box takes from a program run as root. Debuggers cannot
/// attach to it either, and it leaves no core dump.
pub(crate) fn keep_environment_private() {
    #[cfg(target_os = "linux")]
    {
        // Where the system refuses, atfunc still runs, as before.
        let _ =
            rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    }
}

fn count_held(outcomes: &[Outcome]) -> usize {
    outcomes
        .iter()
        .filter(|o| o.confirmation_id.is_some())
        .count()
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

/// `--json`: the report `{"output": ..., "call_count": N, "calls": [...]}` written as the
/// calls finish, byte for byte as `serde_json::to_writer_pretty` would write
/// [`ExecutionReport::to_json`]. The output's blocks go straight to the output; the calls,
/// which come after it, wait in a temporary file rather than in memory.
struct JsonReport {
    calls: Spool,
    count: usize,
    /// Whether strings are written with their control and invisible characters as JSON
    /// escapes (output on a terminal): the same JSON value, safe to show.
    escape: bool,
}

impl JsonReport {
    fn start(out: &mut impl Write, escape: bool) -> Result<JsonReport, Failure> {
        out.write_all(b"{\n  \"output\": \"")
            .map_err(write_failure)?;
        Ok(JsonReport {
            calls: Spool::create()?,
            count: 0,
            escape,
        })
    }

    fn add(&mut self, out: &mut impl Write, outcomes: &[Outcome]) -> Result<(), Failure> {
        for outcome in outcomes {
            if self.count > 0 {
                out.write_all(b"\\n").map_err(write_failure)?;
                self.calls.file.write_all(b",\n").map_err(spool_failure)?;
            }
            let block = serde_json::to_string(&outcome.block).map_err(json_failure)?;
            let block = shown_json(&block, self.escape);
            // The block as JSON string content: without its quotes.
            let inner = block
                .get(1..block.len().saturating_sub(1))
                .unwrap_or_default();
            out.write_all(inner.as_bytes()).map_err(write_failure)?;
            let pretty = serde_json::to_string_pretty(&call_json(outcome)).map_err(json_failure)?;
            let pretty = shown_json(&pretty, self.escape);
            // Pretty JSON escapes line breaks inside strings, so every line is a line of
            // the structure: indented to sit in "calls".
            for (i, line) in pretty.lines().enumerate() {
                if i > 0 {
                    self.calls.file.write_all(b"\n").map_err(spool_failure)?;
                }
                self.calls.file.write_all(b"    ").map_err(spool_failure)?;
                self.calls
                    .file
                    .write_all(line.as_bytes())
                    .map_err(spool_failure)?;
            }
            self.count += 1;
        }
        Ok(())
    }

    /// Ends the report; `repeated_at`, the call that ended the answer, is written as
    /// `"repeated_at": {"span": [start, end], "chars": [start, end]}` when there was one.
    fn finish(
        mut self,
        out: &mut impl Write,
        call_count: usize,
        repeated_at: Option<Span>,
    ) -> Result<(), Failure> {
        write!(out, "\",\n  \"call_count\": {call_count},").map_err(write_failure)?;
        if let Some(at) = repeated_at {
            write!(
                out,
                "\n  \"repeated_at\": {{\"span\": [{}, {}], \"chars\": [{}, {}]}},",
                at.start, at.end, at.char_start, at.char_end
            )
            .map_err(write_failure)?;
        }
        out.write_all(b"\n  \"calls\": [").map_err(write_failure)?;
        if self.count > 0 {
            out.write_all(b"\n").map_err(write_failure)?;
            self.calls
                .file
                .rewind()
                .and_then(|()| std::io::copy(&mut self.calls.file, out))
                .map_err(spool_failure)?;
            out.write_all(b"\n  ").map_err(write_failure)?;
        }
        out.write_all(b"]\n}\n").map_err(write_failure)
    }
}

/// JSON text as written: with its strings' control and invisible characters as JSON
/// escapes when `escape` is set.
fn shown_json(json: &str, escape: bool) -> std::borrow::Cow<'_, str> {
    if escape {
        atfunc::format::escape_json_for_terminal(json)
    } else {
        std::borrow::Cow::Borrowed(json)
    }
}

/// One call as the report's `calls` holds it.
fn call_json(outcome: &Outcome) -> serde_json::Value {
    let mut report = ExecutionReport::default();
    report.call_count = 1;
    report.calls = vec![outcome.clone()];
    match report.to_json() {
        serde_json::Value::Object(mut map) => match map.remove("calls") {
            Some(serde_json::Value::Array(mut calls)) if !calls.is_empty() => calls.remove(0),
            _ => serde_json::Value::Null,
        },
        _ => serde_json::Value::Null,
    }
}

/// A temporary file, removed when dropped.
struct Spool {
    file: std::fs::File,
    path: PathBuf,
}

impl Spool {
    fn create() -> Result<Spool, Failure> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!("atfunc-exec-{}-{nanos}.json", std::process::id());
        let path = std::env::temp_dir().join(name);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| Failure(format!("cannot create a temporary file for --json: {e}")))?;
        Ok(Spool { file, path })
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn spool_failure(e: std::io::Error) -> Failure {
    Failure(format!("cannot write the temporary file for --json: {e}"))
}

fn json_failure(e: serde_json::Error) -> Failure {
    Failure(format!("cannot write output: {e}"))
}

/// Prints result blocks as the report's output has them: a blank line between two. With
/// `escape` (output on a terminal), control and invisible characters other than line
/// breaks and tabs are written as escapes (`\u{001b}`).
fn print_blocks(
    out: &mut impl Write,
    outcomes: &[atfunc_tools::Outcome],
    printed: &mut usize,
    escape: bool,
) -> Result<(), Failure> {
    for outcome in outcomes {
        if *printed > 0 {
            out.write_all(b"\n").map_err(write_failure)?;
        }
        let block = match escape {
            true => atfunc::format::escape_lines_for_terminal(&outcome.block),
            false => std::borrow::Cow::Borrowed(outcome.block.as_str()),
        };
        out.write_all(block.as_bytes()).map_err(write_failure)?;
        *printed += 1;
    }
    Ok(())
}

/// Writes every call event to `path` (`-`: standard error) as one JSON object a line, each
/// flushed as it happens so a reader can follow along.
fn watch(registry: &Registry, path: &std::path::Path) -> Result<(), Failure> {
    let to_stderr = path.as_os_str() == "-";
    // Events on a terminal: their strings' control characters as JSON escapes.
    let escape = to_stderr && std::io::stderr().is_terminal();
    let sink: Box<dyn Write + Send> = if to_stderr {
        Box::new(std::io::stderr())
    } else {
        Box::new(
            std::fs::File::create(path)
                .map_err(|e| Failure(format!("cannot write events to {}: {e}", path.display())))?,
        )
    };
    let sink = std::sync::Mutex::new(sink);
    registry.on_event(move |event| {
        let Ok(line) = serde_json::to_string(event) else {
            return;
        };
        let line = shown_json(&line, escape);
        let mut sink = sink
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // An events file that cannot be written must not stop the calls.
        let _ = writeln!(sink, "{line}").and_then(|()| sink.flush());
    });
    Ok(())
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
