//! `atfunc exec`: parse a model's output, run each call as soon as it is complete, print
//! the result blocks for the model's next turn.

use super::{tools, Failure};
use atfunc::config::Config;
use atfunc::execute::{CallContext, FileBox, FnBox, Registry, CONTROL_DOMAIN};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `atfunc exec`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["tools", "config"])))]
pub(crate) struct ExecArgs {
    /// The tools file whose functions the model may call. A function it declares has no
    /// implementation here: a call to it answers with an error saying so.
    #[arg(long, value_name = "FILE")]
    tools: Option<PathBuf>,
    /// A config file of tool boxes that run: folders, commands, HTTP APIs, MCP servers.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Give the model the file box (`file.readfile`, `file.listfiles`, ...) rooted at DIR.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
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

pub(crate) fn run(args: ExecArgs) -> Result<ExitCode, Failure> {
    let runtime = runtime()?;
    let registry = build_registry(&args, &runtime)?;
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

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure(format!("cannot start the async runtime: {e}")))
}

/// The registry a config file builds (MCP servers start on `runtime`, which must then run
/// every call).
fn config_registry(
    path: &Path,
    runtime: &tokio::runtime::Runtime,
) -> Result<(Registry, Option<String>), Failure> {
    let config = Config::from_path(path).map_err(|e| Failure(e.to_string()))?;
    let registry = runtime
        .block_on(config.build())
        .map_err(|e| Failure(e.to_string()))?;
    Ok((registry, config.root().map(str::to_owned)))
}

/// What `render --config` shows and `parse --config` binds against: the interfaces of a
/// config's boxes (the control functions included only when `with_control` is set, as
/// `render` leaves them out), and the root box. Started servers are closed again.
pub(crate) fn config_interfaces(
    path: &Path,
    with_control: bool,
) -> Result<(Vec<atfunc::Interface>, Option<String>), Failure> {
    let runtime = runtime()?;
    let (registry, root) = config_registry(path, &runtime)?;
    let interfaces = registry
        .interfaces(&CallContext::new())
        .into_iter()
        .filter(|i| with_control || i.domain.as_deref() != Some(CONTROL_DOMAIN))
        .collect();
    if let Err(e) = runtime.block_on(registry.close()) {
        eprintln!("atfunc: closing the tool boxes: {e}");
    }
    Ok((interfaces, root))
}

/// The registry `exec` runs calls in: the config's boxes, or one box per domain of the
/// tools file (declared functions without an implementation); the control functions; and
/// the file box when `--root` is given.
fn build_registry(args: &ExecArgs, runtime: &tokio::runtime::Runtime) -> Result<Registry, Failure> {
    if let Some(path) = &args.config {
        let (registry, _) = config_registry(path, runtime)?;
        return finish_registry(registry, args, path);
    }
    let Some(tools_path) = &args.tools else {
        return Err(Failure(String::from("give --tools FILE or --config FILE")));
    };
    let interfaces = tools::load_valid(tools_path)?;
    let registry = Registry::new();
    // One box per domain, in the order domains first appear; root functions go in the
    // box named "" (functions without a domain).
    let mut boxes: Vec<(String, FnBox)> = Vec::new();
    for interface in interfaces {
        let domain = interface.domain.clone().unwrap_or_default();
        let index = match boxes.iter().position(|(name, _)| *name == domain) {
            Some(index) => index,
            None => {
                boxes.push((domain.clone(), FnBox::new(domain)));
                boxes.len() - 1
            }
        };
        if let Some((name, tool_box)) = boxes.get_mut(index) {
            let declared = std::mem::replace(tool_box, FnBox::new(name.clone()));
            *tool_box = declared.declare(interface);
        }
    }
    for (name, tool_box) in boxes {
        registry.register(tool_box).map_err(|e| {
            Failure(format!(
                "{}: cannot register toolbox '{name}': {e}",
                tools_path.display()
            ))
        })?;
    }
    finish_registry(registry, args, tools_path)
}

/// Adds what the flags ask for to a registry: the file box, the truncate length, the
/// time limit.
fn finish_registry(
    registry: Registry,
    args: &ExecArgs,
    source: &Path,
) -> Result<Registry, Failure> {
    if let Some(root) = &args.root {
        let files = FileBox::open(root).map_err(|e| Failure(format!("--root: {e}")))?;
        registry.register(files).map_err(|e| {
            Failure(format!(
                "--root: cannot add the file box: {e} ({} already has a toolbox named 'file')",
                source.display()
            ))
        })?;
    }
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
    Ok(registry)
}
