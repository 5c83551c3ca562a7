//! The `atfunc` command line: `render`, `grammar`, `check`, `parse`, `exec` and `serve`.
//! (`eval`, the evaluator, is the lab's: `cargo run -p atfunc-lab -- eval`.)
//!
//! Exit codes: 0 when the work was done (errors inside a model's text are data, not
//! failures); 1 when `check` found problems; 2 when an input or tools file cannot be read
//! or is invalid.

mod confirm;
mod exec;
mod grammar;
mod jsonl;
mod output;
mod parse;
mod serve;
mod tools;

use atfunc::interface::Strictness;
use atfunc::interop::{ControlFields, ToolFormat};
use clap::{Parser, Subcommand};
pub use serve::serve_options;
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
    /// Print the prompt text: the call syntax, then every function `exec` would run with
    /// the same options (the control functions `tools.*` left out).
    Render {
        #[command(flatten)]
        tools: tools::ToolArgs,
        /// Draw a separator line under each function.
        #[arg(long)]
        separator: bool,
        /// Under each function, one line per described parameter with its description
        /// (`Parameters:`, `- name: ...`): which value goes where, for more prompt tokens.
        #[arg(long)]
        param_descriptions: bool,
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
    /// Validate a tools file or a config file and list every problem (exit 1 if any),
    /// then every warning: what the other commands and the gateway work around to read the
    /// tools' definitions, and how, and the restrictions they declare that atfunc does not
    /// enforce.
    Check {
        #[command(flatten)]
        tools: tools::ToolArgs,
        /// Refuse what the tools' definitions (a tools file's, or a config's functions)
        /// contradict and the restrictions atfunc does not enforce, instead of working
        /// around them: each such warning is a problem (exit 1), for authors who want their
        /// definitions clean.
        #[arg(long)]
        strict: bool,
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

/// Runs the command line on `args` (the program's name first, as `std::env::args_os`
/// gives them) and returns the exit code. Help, the version and a usage error are printed
/// here, as the binary prints them.
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
        }
    };
    let result = match cli.command {
        Command::Render {
            tools,
            separator,
            param_descriptions,
            no_preamble,
            format,
            with_names,
            control_fields,
        } => match tools.offered(false) {
            Err(failure) => Err(failure),
            Ok(offered) => match format {
                RenderFormat::Atfunc => render(
                    &offered.interfaces,
                    atfunc::render::PromptOptions::default()
                        .with_root(offered.root.as_deref())
                        .with_separator(separator)
                        .with_param_descriptions(param_descriptions),
                    no_preamble,
                ),
                RenderFormat::Openai => render_api(
                    &offered.source,
                    &offered.interfaces,
                    ToolFormat::Openai,
                    with_names,
                    control_fields,
                ),
                RenderFormat::Mcp => render_api(
                    &offered.source,
                    &offered.interfaces,
                    ToolFormat::Mcp,
                    with_names,
                    control_fields,
                ),
            },
        },
        Command::Grammar(args) => grammar::run(args),
        Command::Check { tools, strict } => check(&tools, strict),
        Command::Parse(args) => parse::run(args),
        Command::Exec(args) => exec::run(args),
        Command::Serve(args) => serve::run(args),
    };
    match result {
        Ok(code) => code,
        // The one place a failure is printed: names in it are made visible there.
        Err(failure) => {
            output::note(&failure.to_string());
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

fn render(
    interfaces: &[atfunc::Interface],
    options: atfunc::render::PromptOptions,
    no_preamble: bool,
) -> Result<ExitCode, Failure> {
    let text = if no_preamble {
        atfunc::render::render_functions(interfaces, &options)
    } else {
        atfunc::render_prompt(interfaces, &options)
    };
    output::print(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `render --format openai|mcp`: the tools as a model API wants them.
fn render_api(
    path: &std::path::Path,
    interfaces: &[atfunc::Interface],
    format: ToolFormat,
    with_names: bool,
    control_fields: Option<Vec<String>>,
) -> Result<ExitCode, Failure> {
    let mut options = atfunc::interop::ToolFormatOptions::default();
    if let Some(names) = control_fields {
        options.control_fields =
            ControlFields::new(names.into_iter().filter(|n| !n.trim().is_empty()));
    }
    let rendered = atfunc::interop::render(interfaces, format, &options);
    for clash in &rendered.clashes {
        output::note(&format!("{}: {clash}", path.display()));
    }
    let json = if with_names {
        serde_json::to_value(&rendered).map_err(|e| Failure(e.to_string()))?
    } else {
        rendered.tools
    };
    let text = serde_json::to_string_pretty(&json).map_err(|e| Failure(e.to_string()))?;
    output::print(&format!("{text}\n"))?;
    Ok(ExitCode::SUCCESS)
}

/// `check`: every problem of the tools file or the config file (exit 1 if any), else what
/// it declares. A config is checked as `exec` would build it; no MCP server is started.
fn check(args: &tools::ToolArgs, strict: bool) -> Result<ExitCode, Failure> {
    let path = args.source()?;
    let strictness = if strict {
        Strictness::Strict
    } else {
        Strictness::Lenient
    };
    // What `check` prints on standard output, written at once by the one writer.
    let mut shown = String::new();
    let mut problems = match (&args.config, &args.tools) {
        (Some(config), _) => check_config(config, strictness, &mut shown)?,
        (None, Some(tools)) => check_tools(tools, &args.limits.limits(), strictness, &mut shown)?,
        (None, None) => Vec::new(),
    };
    if let Some(dir) = &args.files {
        if let Err(e) = atfunc_tools::FileBox::open(dir) {
            problems.push(format!("--files: {e}"));
        }
    }
    for problem in &problems {
        shown.push_str(&format!("{}: {problem}\n", path.display()));
    }
    output::print(&output::visible(&shown))?;
    if problems.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    output::note(&format!(
        "{}: {} problem(s) found",
        path.display(),
        problems.len()
    ));
    Ok(ExitCode::from(1))
}

/// A tools file's problems; none, and its functions printed, when it is valid.
fn check_tools(
    path: &std::path::Path,
    limits: &atfunc::interface::LoadLimits,
    strictness: Strictness,
    shown: &mut String,
) -> Result<Vec<String>, Failure> {
    let problems = match tools::load(path, limits, strictness)? {
        Ok(loaded) => {
            let interfaces = loaded.interfaces;
            let domains: std::collections::BTreeSet<_> =
                interfaces.iter().map(|i| i.domain.clone()).collect();
            shown.push_str(&format!(
                "{}: ok, {} function(s) in {} toolbox(es)\n",
                path.display(),
                interfaces.len(),
                domains.len()
            ));
            for interface in &interfaces {
                let written = interface.qualified_name();
                let defined = interface.original_qualified_name();
                if written == defined {
                    shown.push_str(&format!("  {written}\n"));
                } else {
                    shown.push_str(&format!("  {written} (defined as {defined})\n"));
                }
            }
            // Warnings after the functions, one per line, each saying how it was read:
            // the list `--strict` would refuse.
            for warning in &loaded.warnings {
                shown.push_str(&format!(
                    "{}: warning: {}\n",
                    path.display(),
                    warning.warning()
                ));
            }
            if !loaded.warnings.is_empty() {
                output::note(&format!(
                    "{}: {} warning(s)",
                    path.display(),
                    loaded.warnings.len()
                ));
            }
            return Ok(Vec::new());
        }
        Err(problems) => problems,
    };
    Ok(problems.iter().map(ToString::to_string).collect())
}

/// A config file's problems, all of them (unknown fields included), as `exec` would
/// refuse it ([`Config::check_file_with`](atfunc_tools::config::Config::check_file_with):
/// nothing is started), its functions' definitions read with `strictness`; none, and its
/// toolboxes printed, when it is valid, with a warning for what reading the definitions
/// worked around and for each environment variable it reads that is not set here.
fn check_config(
    path: &std::path::Path,
    strictness: Strictness,
    shown: &mut String,
) -> Result<Vec<String>, Failure> {
    let runtime = tools::runtime()?;
    let checked = runtime.block_on(atfunc_tools::config::Config::check_file_with(
        path, strictness,
    ));
    match checked {
        Ok((config, warnings)) => {
            let names = config.toolbox_names();
            shown.push_str(&format!(
                "{}: ok, {} toolbox(es)\n",
                path.display(),
                names.len()
            ));
            for name in names {
                shown.push_str(&format!("  {name}\n"));
            }
            // A secret this machine lacks is no fault of the config; `exec` refuses it.
            for warning in &warnings {
                shown.push_str(&format!("{}: warning: {warning}\n", path.display()));
            }
            if !warnings.is_empty() {
                output::note(&format!(
                    "{}: {} warning(s)",
                    path.display(),
                    warnings.len()
                ));
            }
            Ok(Vec::new())
        }
        Err(error) if !error.problems().is_empty() => Ok(error.problems().to_vec()),
        Err(error) => Err(Failure(error.to_string())),
    }
}
