//! `atfunc grammar`: the GBNF grammar of a tools file's functions.

use super::Failure;
use atfunc::{Choice, GrammarOptions};
use std::path::PathBuf;
use std::process::ExitCode;

/// Print a GBNF grammar (root rule `root`) whose language is answers whose calls bind:
/// for llama.cpp's `grammar` field, vLLM's and SGLang's grammar fields.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["tools", "config"])))]
pub(crate) struct GrammarArgs {
    /// The tools file (JSON: atfunc interfaces, an OpenAI tools array, or JSON Schema functions).
    #[arg(long, value_name = "FILE")]
    tools: Option<PathBuf>,
    /// A config file: the grammar of every function `exec --config FILE` can run. Its root
    /// toolbox is the default for --root.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Which calls an answer holds: auto (prose with calls anywhere), required (at least
    /// one call after a short lead-in), none (no calls), or a function's name (that
    /// function only).
    #[arg(long, value_name = "auto|required|none|NAME", default_value = "auto")]
    choice: String,
    /// At most one call (exactly one with required or NAME).
    #[arg(long)]
    single: bool,
    /// The toolbox whose functions are called without their prefix.
    #[arg(long, value_name = "TOOLBOX")]
    root: Option<String>,
}

/// `auto`, `required` and `none` are the choices; any other word names a function.
pub(crate) fn parse_choice(text: &str) -> Choice {
    match text {
        "auto" => Choice::Auto,
        "required" => Choice::Required,
        "none" => Choice::None,
        name => Choice::Function(name.to_owned()),
    }
}

pub(crate) fn run(args: GrammarArgs) -> Result<ExitCode, Failure> {
    let (path, interfaces, config_root) = super::render_source(args.tools, args.config)?;
    let options = GrammarOptions {
        choice: parse_choice(&args.choice),
        single: args.single,
        root: args.root.or(config_root),
        ..GrammarOptions::default()
    };
    let text = atfunc::gbnf(&interfaces, &options)
        .map_err(|e| Failure(format!("{}: {e}", path.display())))?;
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}
