//! The `atfunc` command line: `render`, `grammar`, `check`, `parse`, `exec` and `serve`.
//!
//! Exit codes: 0 when the work was done (errors inside a model's text are data, not
//! failures); 1 when `check` found problems; 2 when an input or tools file cannot be read
//! or is invalid.

mod exec;
mod grammar;
mod jsonl;
mod parse;
mod serve;
mod tools;

use atfunc::interop::{ControlFields, Format};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Function calling for language models that have none.
#[derive(Debug, Parser)]
#[command(name = "atfunc", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The output of `atfunc render`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum RenderFormat {
    /// The atfunc prompt text.
    Atfunc,
    /// An OpenAI `tools` array.
    Openai,
    /// An MCP `tools/list` result.
    Mcp,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the prompt text: the call syntax, then every function of a tools file.
    #[command(group(clap::ArgGroup::new("source").required(true).args(["tools", "config"])))]
    Render {
        /// The tools file (JSON: atfunc interfaces, an OpenAI tools array, or JSON Schema functions).
        #[arg(long, value_name = "FILE")]
        tools: Option<PathBuf>,
        /// A config file: print every function `exec --config FILE` can run (its MCP servers
        /// are started to list their tools; the control functions are left out). Its root
        /// toolbox is the default for --root.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Draw a separator line under each function.
        #[arg(long)]
        separator: bool,
        /// The toolbox whose functions are called without their prefix.
        #[arg(long, value_name = "TOOLBOX")]
        root: Option<String>,
        /// Print only the functions, without the preamble that teaches the syntax.
        #[arg(long)]
        no_preamble: bool,
        /// What to print: the atfunc prompt text, an OpenAI `tools` array, or an MCP
        /// `tools/list` result. For openai and mcp, a name clash is reported on stderr.
        #[arg(long, value_enum, default_value_t = RenderFormat::Atfunc)]
        format: RenderFormat,
        /// With --format openai or mcp: print {"tools", "names", "clashes"}, the map from each
        /// model-safe name back to the tool included.
        #[arg(long)]
        with_names: bool,
        /// Parameters hidden from the model (comma-separated; default dry_run,
        /// confirm_token, idempotency_key; an empty value hides none).
        #[arg(long, value_name = "NAMES", value_delimiter = ',')]
        control_fields: Option<Vec<String>>,
    },
    /// Print a GBNF grammar whose language is answers whose calls bind (for an inference
    /// engine's grammar field).
    Grammar(grammar::GrammarArgs),
    /// Validate a tools file and list every problem (exit 1 if any).
    Check {
        /// The tools file.
        #[arg(long, value_name = "FILE")]
        tools: PathBuf,
    },
    /// Pull calls out of a model's output as JSON Lines, while it streams.
    Parse(parse::ParseArgs),
    /// Parse a model's output, run each call as soon as it is complete, print the results.
    Exec(exec::ExecArgs),
    /// Serve an OpenAI-compatible API that gives tools to a model without native tool
    /// calling: requests with `tools` go to the upstream as atfunc text, answers come back
    /// with `tool_calls`.
    Serve(serve::ServeArgs),
}

/// Runs the command line and returns the process exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Render {
            tools,
            config,
            separator,
            root,
            no_preamble,
            format,
            with_names,
            control_fields,
        } => match render_source(tools, config) {
            Err(failure) => Err(failure),
            Ok((path, interfaces, config_root)) => {
                let root = root.or(config_root);
                match format {
                    RenderFormat::Atfunc => {
                        render(&interfaces, separator, root.as_deref(), no_preamble)
                    }
                    RenderFormat::Openai => render_api(
                        &path,
                        &interfaces,
                        Format::Openai,
                        with_names,
                        control_fields,
                    ),
                    RenderFormat::Mcp => {
                        render_api(&path, &interfaces, Format::Mcp, with_names, control_fields)
                    }
                }
            }
        },
        Command::Grammar(args) => grammar::run(args),
        Command::Check { tools } => check(&tools),
        Command::Parse(args) => parse::run(args),
        Command::Exec(args) => exec::run(args),
        Command::Serve(args) => serve::run(args),
    };
    match result {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("atfunc: {failure}");
            ExitCode::from(2)
        }
    }
}

/// The model output to read: FILE, or standard input when none is given.
pub(crate) fn open_input(
    file: Option<&std::path::Path>,
) -> Result<Box<dyn std::io::Read + Send>, Failure> {
    Ok(match file {
        Some(path) => Box::new(
            std::fs::File::open(path)
                .map_err(|e| Failure(format!("cannot read input {}: {e}", path.display())))?,
        ),
        // Unlocked: the handle may be read from another thread (`exec` does).
        None => Box::new(std::io::stdin()),
    })
}

/// A failure that ends the command with exit code 2, printed as `atfunc: <message>`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Failure(pub String);

/// The file `render` reads, its interfaces, and (for a config) its root toolbox.
type RenderSource = (PathBuf, Vec<atfunc::Interface>, Option<String>);

fn render_source(tools: Option<PathBuf>, config: Option<PathBuf>) -> Result<RenderSource, Failure> {
    match (tools, config) {
        (_, Some(config)) => {
            let (interfaces, root) = exec::config_interfaces(&config, false)?;
            Ok((config, interfaces, root))
        }
        (Some(tools), None) => {
            let interfaces = tools::load_valid(&tools)?;
            Ok((tools, interfaces, None))
        }
        (None, None) => Err(Failure(String::from("give --tools FILE or --config FILE"))),
    }
}

fn render(
    interfaces: &[atfunc::Interface],
    separator: bool,
    root: Option<&str>,
    no_preamble: bool,
) -> Result<ExitCode, Failure> {
    let options = atfunc::PromptOptions { root, separator };
    let text = if no_preamble {
        interfaces
            .iter()
            .map(|i| atfunc::render::render_interface_as(i, root, separator))
            .collect::<Vec<_>>()
            .join(if separator { "" } else { "\n" })
    } else {
        atfunc::render_prompt(interfaces, &options)
    };
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// `render --format openai|mcp`: the tools as a model API wants them.
fn render_api(
    path: &std::path::Path,
    interfaces: &[atfunc::Interface],
    format: Format,
    with_names: bool,
    control_fields: Option<Vec<String>>,
) -> Result<ExitCode, Failure> {
    let mut options = atfunc::interop::Options::default();
    if let Some(names) = control_fields {
        options.control_fields =
            ControlFields::new(names.into_iter().filter(|n| !n.trim().is_empty()));
    }
    let rendered = atfunc::interop::render(interfaces, format, &options);
    for clash in &rendered.clashes {
        eprintln!("atfunc: {}: {clash}", path.display());
    }
    let json = if with_names {
        serde_json::to_value(&rendered).map_err(|e| Failure(e.to_string()))?
    } else {
        rendered.tools
    };
    let text = serde_json::to_string_pretty(&json).map_err(|e| Failure(e.to_string()))?;
    println!("{text}");
    Ok(ExitCode::SUCCESS)
}

fn check(path: &std::path::Path) -> Result<ExitCode, Failure> {
    let problems = match tools::load(path)? {
        Ok(interfaces) => match atfunc::validate_all(&interfaces) {
            Ok(()) => {
                let domains: std::collections::BTreeSet<_> =
                    interfaces.iter().map(|i| i.domain.clone()).collect();
                println!(
                    "{}: ok, {} function(s) in {} toolbox(es)",
                    path.display(),
                    interfaces.len(),
                    domains.len()
                );
                for interface in &interfaces {
                    let written = interface.qualified_name();
                    let defined = interface.original_qualified_name();
                    if written == defined {
                        println!("  {written}");
                    } else {
                        println!("  {written} (defined as {defined})");
                    }
                }
                return Ok(ExitCode::SUCCESS);
            }
            Err(errors) => errors.0,
        },
        Err(problems) => problems,
    };
    for problem in &problems {
        println!("{}: {problem}", path.display());
    }
    eprintln!(
        "atfunc: {}: {} problem(s) found",
        path.display(),
        problems.len()
    );
    Ok(ExitCode::from(1))
}
