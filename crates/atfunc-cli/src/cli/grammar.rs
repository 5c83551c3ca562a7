//! `atfunc grammar`: the GBNF grammar of a tools file's functions.

use super::tools::ToolArgs;
use super::Failure;
use atfunc::bind::written_calls;
use atfunc::grammar::{numbers_in, CallForm, Choice};
use atfunc::GrammarOptions;
use std::process::ExitCode;

/// Print a GBNF grammar (root rule `root`) whose language is answers whose calls bind:
/// for llama.cpp's `grammar` field, vLLM's and SGLang's grammar fields.
#[derive(Debug, clap::Args)]
pub(crate) struct GrammarArgs {
    #[command(flatten)]
    tools: ToolArgs,
    /// Which calls an answer holds: auto (prose with calls anywhere), required (at least
    /// one call after a short lead-in), none (no calls), or a function's name (that
    /// function only).
    #[arg(long, value_name = "auto|required|none|NAME", default_value = "auto")]
    choice: Choice,
    /// At most one call (exactly one with required or NAME).
    #[arg(long)]
    single: bool,
    /// The most characters a string may hold, so a model looping inside one must close it
    /// (default: no bound).
    #[arg(long, value_name = "N")]
    max_string_chars: Option<u32>,
    /// The most items a list may hold (default: no bound).
    #[arg(long, value_name = "N")]
    max_list_items: Option<u32>,
    /// Text arguments must be runs of whole words of TEXT (the user's question), within a
    /// sentence: a small model can then neither invent a value nor copy the prompt's
    /// example (default: any text).
    #[arg(long, value_name = "TEXT")]
    grounded_text: Option<String>,
    /// Number arguments must be numbers TEXT writes (the user's question), in its forms
    /// (default: any number).
    #[arg(long, value_name = "TEXT")]
    grounded_numbers: Option<String>,
    /// Leave out calls already written: each call of CALLS (as the model writes them,
    /// `@get_weather(city="Oslo")`; repeatable) is not offered again. A new call must
    /// differ from them in a value the grammar lists (choices, booleans, grounded numbers
    /// and text).
    #[arg(long, value_name = "CALLS")]
    not_again: Vec<String>,
    /// The answer goes on from text that ends with a call: the grammar is a newline and
    /// one more call, or nothing, so a model may end its answer there (with --choice
    /// required or NAME; for asking a model for its next call, with --not-again).
    #[arg(long)]
    continued: bool,
    /// A text argument may also be a bare word (`unit=units`), never one that begins with
    /// `<` or whose first word reads as null (`None=None`); atfunc's syntax only.
    #[arg(long)]
    bare_strings: bool,
    /// The syntax of the calls: atfunc (`@name(args)`), hermes (the `<tool_call>` JSON
    /// blocks Hermes and Qwen 2.5 models are trained on, with the tools' own names), or
    /// hermes-list (the same call objects, all of them one JSON list in a ```json fence, as
    /// `atfunc serve --upstream-dialect hermes --constrain` asks by default).
    #[arg(long, value_enum, default_value = "atfunc")]
    form: Form,
}

/// `--form`: [`CallForm`] as the command line names it.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Form {
    Atfunc,
    Hermes,
    HermesList,
}

pub(crate) fn run(args: GrammarArgs) -> Result<ExitCode, Failure> {
    // The functions `render` lists and `exec` runs with the same options.
    let offered = args.tools.offered(false)?;
    let mut not_again = Vec::new();
    if !args.not_again.is_empty() {
        let catalog = offered.catalog();
        for calls in &args.not_again {
            not_again.extend(
                written_calls(calls, &catalog).map_err(|e| Failure(format!("--not-again: {e}")))?,
            );
        }
    }
    let options = GrammarOptions::default()
        .with_choice(args.choice)
        .with_single(args.single)
        .with_root(offered.root)
        .with_max_string_chars(args.max_string_chars)
        .with_max_list_items(args.max_list_items)
        .with_grounded_numbers(args.grounded_numbers.as_deref().map(numbers_in))
        .with_grounded_text(args.grounded_text)
        .with_not_again(not_again)
        .with_continued(args.continued)
        .with_bare_strings(args.bare_strings)
        .with_form(match args.form {
            Form::Atfunc => CallForm::Atfunc,
            Form::Hermes => CallForm::Hermes,
            Form::HermesList => CallForm::HermesList,
        });
    let text = atfunc::gbnf(&offered.interfaces, &options)
        .map_err(|e| Failure(format!("{}: {e}", offered.source.display())))?;
    super::output::print(&text)?;
    Ok(ExitCode::SUCCESS)
}
