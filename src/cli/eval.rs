//! `atfunc eval`: BFCL accuracy of a model behind an OpenAI-compatible endpoint.

use super::Failure;
use atfunc::eval::{chart_svg, load_cases, run_all, EvalOptions, Evaluator, Mode, Report};
use futures::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// Arguments of `atfunc eval`.
#[derive(Debug, clap::Args)]
pub(crate) struct EvalArgs {
    /// The OpenAI-compatible endpoint (`/v1` is added unless the URL ends with it).
    #[arg(long, value_name = "URL")]
    endpoint: String,
    /// BFCL questions: JSON Lines of {"id", "question": [[messages]], "function": [...]}.
    #[arg(long, value_name = "FILE")]
    questions: PathBuf,
    /// BFCL possible answers: JSON Lines of {"id", "ground_truth": [...]}.
    #[arg(long, value_name = "FILE")]
    answers: PathBuf,
    /// Modes to measure, comma-separated: text, repair, grammar, native; a text-based
    /// mode takes prompt variants after a +: +desc (parameter descriptions in the
    /// prompt), +example (the preamble's example from the case's own tools).
    #[arg(
        long,
        value_name = "MODES",
        value_delimiter = ',',
        default_value = "text,repair,grammar,native"
    )]
    mode: Vec<String>,
    /// Only the first N cases.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Requests in flight at once.
    #[arg(long, value_name = "N", default_value_t = 1)]
    concurrency: usize,
    /// The `model` field of each request.
    #[arg(long, value_name = "NAME", default_value = "default")]
    model: String,
    /// The `max_tokens` of each request.
    #[arg(long, value_name = "N", default_value_t = 256)]
    max_tokens: u32,
    /// The longest wait for one answer, in seconds; a case that waits longer fails.
    #[arg(long, value_name = "SECONDS", default_value_t = 120)]
    timeout: u64,
    /// How often `repair` asks the model to fix its calls.
    #[arg(long, value_name = "N", default_value_t = 2)]
    repair_rounds: usize,
    /// Largest answer read, in bytes (as `atfunc serve --max-response-bytes`); a larger
    /// answer fails its case.
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 20)]
    max_response_bytes: usize,
    /// Write the report as JSON: {"modes": {"<mode>": {"cases", "accuracy", "valid", ...}}}.
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,
    /// Draw accuracy and valid answers per mode as an SVG bar chart.
    #[arg(long, value_name = "OUT.svg")]
    chart: Option<PathBuf>,
}

pub(crate) fn run(args: EvalArgs) -> Result<ExitCode, Failure> {
    let modes: Vec<Mode> = args
        .mode
        .iter()
        .map(|m| m.parse::<Mode>().map_err(Failure))
        .collect::<Result<_, _>>()?;
    let mut names: Vec<String> = Vec::new();
    for mode in &modes {
        let name = mode.to_string();
        if names.contains(&name) {
            return Err(Failure(format!("mode '{name}' is given twice")));
        }
        names.push(name);
    }
    let questions = read(&args.questions)?;
    let answers = read(&args.answers)?;
    let mut loaded = load_cases(&questions, &answers);
    for skipped in &loaded.skipped {
        eprintln!(
            "atfunc: {}: case {} skipped: {}",
            args.questions.display(),
            skipped.id,
            skipped.reason
        );
    }
    if let Some(limit) = args.limit {
        loaded.cases.truncate(limit);
    }
    if loaded.cases.is_empty() {
        return Err(Failure(format!(
            "{}: no case to run",
            args.questions.display()
        )));
    }
    let evaluator = Evaluator::new(EvalOptions {
        endpoint: args.endpoint.clone(),
        model: args.model.clone(),
        max_tokens: args.max_tokens,
        timeout: Duration::from_secs(args.timeout.max(1)),
        repair_rounds: args.repair_rounds,
        max_response_bytes: args.max_response_bytes,
    })
    .map_err(Failure)?;
    let total = loaded.cases.len() * modes.len();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure(format!("cannot start the async runtime: {e}")))?;
    let progress = progress_bar(total as u64);
    let (outcomes, interrupted) = runtime.block_on(async {
        let mut stream = Box::pin(run_all(
            Arc::new(evaluator),
            Arc::new(loaded.cases),
            modes,
            args.concurrency,
        ));
        let mut outcomes = Vec::with_capacity(total);
        let ctrl_c = tokio::signal::ctrl_c();
        tokio::pin!(ctrl_c);
        loop {
            tokio::select! {
                next = stream.next() => match next {
                    Some(outcome) => {
                        progress.set_message(outcome.mode.clone());
                        progress.inc(1);
                        outcomes.push(outcome);
                    }
                    None => return (outcomes, false),
                },
                // What was measured is still written; requests in flight are dropped.
                _ = &mut ctrl_c => return (outcomes, true),
            }
        }
    });
    progress.finish_and_clear();
    // Requests still in flight after an interrupt are not waited for.
    runtime.shutdown_background();
    let report = Report::new(&names, outcomes, loaded.skipped, interrupted);
    print!("{}", report.table());
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report.to_json())
            .map_err(|e| Failure(format!("cannot write the report: {e}")))?;
        write(path, &text)?;
    }
    if let Some(path) = &args.chart {
        let title = format!(
            "{} on {}",
            args.model,
            args.questions
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        );
        write(path, &chart_svg(&report, &title).map_err(Failure)?)?;
    }
    Ok(if interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

fn read(path: &Path) -> Result<String, Failure> {
    std::fs::read_to_string(path)
        .map_err(|e| Failure(format!("cannot read {}: {e}", path.display())))
}

fn write(path: &Path, text: &str) -> Result<(), Failure> {
    std::fs::write(path, text).map_err(|e| Failure(format!("cannot write {}: {e}", path.display())))
}

fn progress_bar(total: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40} {pos}/{len} cases  {msg}  {elapsed}/{eta}")
    {
        bar.set_style(style);
    }
    bar
}
