//! `atfunc eval`: BFCL accuracy of a model behind an OpenAI-compatible endpoint.

use crate::Failure;
use atfunc::parse::Dialect;
use atfunc_gateway::serve::{CallThreshold, DEFAULT_CALL_THRESHOLD};
use atfunc_lab::eval::{
    chart_svg, load_cases, resume, run_remaining, CaseOutcome, EvalOptions, Evaluator, Mode,
    Report, Resumed, RunSettings, Strategy,
};
use futures::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::{BTreeMap, HashSet};
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
    /// Give it again (or comma-separated) for several files.
    #[arg(long, value_name = "FILE", required = true, value_delimiter = ',')]
    questions: Vec<PathBuf>,
    /// BFCL possible answers: JSON Lines of {"id", "ground_truth": [...]}, matched to
    /// the questions by id. Give it again (or comma-separated) for several files. An
    /// `irrelevance` question needs none.
    #[arg(long, value_name = "FILE", value_delimiter = ',')]
    answers: Vec<PathBuf>,
    /// Modes to measure, comma-separated: text, repair, grammar, auto (grammar under
    /// tool_choice "auto"), lazy (a lazy grammar that starts at `@`, llama-server only),
    /// decide (a constrained choice of one function or none, then that function's
    /// grammar), native, dialect (the tools in `tools`, the answer's content read in the
    /// model's own call format, see --dialect), dialect-grammar (as dialect, held to the
    /// grammar of that format's calls; hermes only), dialect-auto (as dialect-grammar under
    /// tool_choice "auto": prose, or calls held to that grammar); a text-based mode takes variants after a
    /// +: +desc (parameter descriptions in the prompt), +bound (strings and lists bounded
    /// in the grammar), +spans (text values taken from the question's words), +bare (a
    /// text value may be a bare word in the grammar), +next (an
    /// answer that repeats a call asked for its next one; llama-server only).
    #[arg(
        long,
        value_name = "MODES",
        value_delimiter = ',',
        default_value = "text,repair,grammar,native"
    )]
    mode: Vec<String>,
    /// Only the first N cases of each questions file.
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
    /// The `max_tokens` of `decide`'s first request (one function's name, or none).
    #[arg(long, value_name = "N", default_value_t = 32)]
    decide_max_tokens: u32,
    /// In modes auto and dialect-auto, weigh first, as `atfunc serve --call-threshold P`:
    /// one token asked with its log probabilities, and the answer held to calls when the
    /// tokens that open one hold at least P, to prose when they hold less. Needs an
    /// endpoint that returns log probabilities. Without it, as the gateway: mode auto is
    /// weighed at 0.03 where the endpoint returns them, dialect-auto is not; off weighs
    /// neither. Recorded in the report's settings
    #[arg(long, value_name = "P|off")]
    call_threshold: Option<CallThreshold>,
    /// The call format the modes `dialect`, `dialect-grammar` and `dialect-auto` read: hermes, llama3, mistral, pythonic, deepseek,
    /// qwen3_xml, harmony, or auto (any of them, atfunc's included: the first call read
    /// fixes the format of each answer; another format's marker in a sentence is prose, an
    /// @ after a word character is never a call).
    #[arg(long, value_name = "NAME|auto", default_value = "auto")]
    dialect: Dialect,
    /// In modes dialect-grammar and dialect-auto, hold the answers to `<tool_call>` blocks, one per call,
    /// instead of one JSON list of calls in a ```json fence (as `atfunc serve
    /// --hermes-blocks`). Recorded in the report's settings
    #[arg(long)]
    hermes_blocks: bool,
    /// Answers asked per request: the first greedy, the others sampled at
    /// --sample-temperature; the calls most answers agree on (among answers whose calls all
    /// bind) are scored, ties going to the earlier answer. Every answer's tokens count.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    samples: u32,
    /// The temperature of the samples after the first (with --samples above 1).
    #[arg(long, value_name = "T", default_value_t = 0.7)]
    sample_temperature: f64,
    /// In the grammar modes (grammar, auto, lazy, decide), ask again, sampled at
    /// --sample-temperature, when the answer does not bind (a call that does not bind, or
    /// no call where the mode requires one), at most N times, as `atfunc serve --constrain`
    /// does; the first answer that binds is scored. Every answer's tokens count. Recorded
    /// in the report's settings (0 in reports written before it was kept).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=64))]
    resamples: u32,
    /// A field added to every request, NAME=JSON (repeatable): a server's own sampling
    /// settings, such as llama.cpp's `--request-field dry_multiplier=0.8`. The value is
    /// JSON (a string in quotes). Recorded in the report's settings: a run with other
    /// fields does not continue it.
    #[arg(long = "request-field", value_name = "NAME=JSON", value_parser = request_field)]
    request_fields: Vec<(String, serde_json::Value)>,
    /// Read every call of an answer. Without it an answer is read as `atfunc serve` reads
    /// it, up to the first call that repeats an earlier one (a small model may loop).
    /// Recorded in the report's settings; reports written before this reading was the
    /// default read every call, and are continued with this flag.
    #[arg(long)]
    keep_repeated_calls: bool,
    /// Stream each answer and stop reading it where its first repeated call ends, as
    /// `atfunc serve` does: the same calls are read, in less time and fewer answer tokens
    /// when a model repeats itself. The tokens of an answer cut short are counted from
    /// llama.cpp's per-token timings. Not a setting of the report: a run with it may
    /// continue one without. No effect with --keep-repeated-calls, in native or lazy.
    #[arg(long)]
    stop_at_repeat: bool,
    /// How many repair rounds the gateway's modes may ask (all but `text` and the
    /// experiments outside the gateway), as `atfunc serve --repair-rounds`.
    #[arg(long, value_name = "N", default_value_t = 1)]
    repair_rounds: usize,
    /// Largest answer read, in bytes (as `atfunc serve --max-response-bytes`); a larger
    /// answer fails its case.
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 20)]
    max_response_bytes: usize,
    /// Write the report as JSON: {"modes": {"<mode>": {"cases", "accuracy", "valid", ...}}},
    /// rewritten after every case. When OUT holds the report of an earlier run with the
    /// same settings, the run continues it: cases answered there are not asked again.
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,
    /// Write the report as a Markdown table (modes by categories).
    #[arg(long, value_name = "OUT.md")]
    markdown: Option<PathBuf>,
    /// A note on the server and its chat template, recorded with each mode of this run in
    /// the report (for instance "llama-server b1234, --chat-template chatml").
    #[arg(long, value_name = "TEXT")]
    server_note: Option<String>,
    /// Draw accuracy and valid answers per mode as an SVG bar chart.
    #[arg(long, value_name = "OUT.svg")]
    chart: Option<PathBuf>,
}

/// `NAME=JSON` of `--request-field`.
fn request_field(text: &str) -> Result<(String, serde_json::Value), String> {
    let (name, value) = text
        .split_once('=')
        .filter(|(name, _)| !name.trim().is_empty())
        .ok_or_else(|| format!("'{text}': write NAME=JSON, as dry_multiplier=0.8"))?;
    let value = serde_json::from_str(value).map_err(|e| {
        format!(
            "'{text}': the value is not JSON ({e}); a string goes in quotes, as \
             {name}='\"text\"'"
        )
    })?;
    Ok((name.trim().to_owned(), value))
}

pub(crate) fn run(args: EvalArgs) -> Result<ExitCode, Failure> {
    if !(0.0..=2.0).contains(&args.sample_temperature) {
        return Err(Failure(format!(
            "--sample-temperature {}: give a temperature from 0 to 2",
            args.sample_temperature
        )));
    }
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
    let reads_dialect = modes.iter().any(|m| m.strategy.reads_own_format());
    let held_to_dialect = modes.iter().find(|m| m.strategy.holds_own_format());
    if let Some(mode) = held_to_dialect.filter(|_| args.dialect != Dialect::Hermes) {
        return Err(Failure(format!(
            "mode '{mode}' holds answers to a grammar of the model's own format, \
             which atfunc makes for hermes only, and --dialect is {}: give --dialect hermes, \
             or measure mode dialect",
            args.dialect
        )));
    }
    if reads_dialect && args.dialect == Dialect::Atfunc {
        return Err(Failure(String::from(
            "modes 'dialect', 'dialect-grammar' and 'dialect-auto' read a model's own call \
             format, and --dialect is atfunc: give \
             the model's format (or auto), or measure atfunc's syntax with mode text",
        )));
    }
    let mut request_fields = BTreeMap::new();
    for (name, value) in &args.request_fields {
        if request_fields.insert(name.clone(), value.clone()).is_some() {
            return Err(Failure(format!("--request-field {name} is given twice")));
        }
    }
    let options = EvalOptions {
        endpoint: args.endpoint.clone(),
        model: args.model.clone(),
        max_tokens: args.max_tokens,
        timeout: Duration::from_secs(args.timeout.max(1)),
        repair_rounds: args.repair_rounds,
        max_response_bytes: args.max_response_bytes,
        decide_max_tokens: args.decide_max_tokens,
        call_threshold: args.call_threshold.unwrap_or_default(),
        dialect: args.dialect,
        hermes_blocks: args.hermes_blocks,
        samples: args.samples,
        sample_temperature: args.sample_temperature,
        resamples: args.resamples,
        request_fields,
        keep_repeated_calls: args.keep_repeated_calls,
        stop_at_repeat: args.stop_at_repeat,
    };
    // Checked before any case is read or any report continued.
    options.check().map_err(Failure)?;
    let explicit = args.call_threshold.and_then(CallThreshold::explicit);
    if explicit.is_some() && !modes.iter().any(|m| m.strategy.weighable()) {
        return Err(Failure(String::from(
            "--call-threshold weighs the answers of modes auto and dialect-auto, and none is \
             asked: add one to --mode, or leave out --call-threshold",
        )));
    }
    let mut loaded = atfunc_lab::eval::LoadedCases::default();
    let mut available: BTreeMap<String, usize> = BTreeMap::new();
    let mut answers = String::new();
    for path in &args.answers {
        answers.push_str(&read(path)?);
        answers.push('\n');
    }
    for path in &args.questions {
        let mut one = load_cases(&read(path)?, &answers);
        for skipped in &one.skipped {
            // A case's id and reason come from the questions file: shown, not obeyed.
            crate::note(&format!(
                "{}: case {} skipped: {}",
                path.display(),
                skipped.id,
                skipped.reason
            ));
        }
        for case in &one.cases {
            *available.entry(case.category.clone()).or_default() += 1;
        }
        if let Some(limit) = args.limit {
            one.cases.truncate(limit);
        }
        loaded.cases.append(&mut one.cases);
        loaded.skipped.append(&mut one.skipped);
    }
    if loaded.cases.is_empty() {
        let files: Vec<String> = args
            .questions
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        return Err(Failure(format!("{}: no case to run", files.join(", "))));
    }
    let settings = RunSettings {
        model: args.model.clone(),
        max_tokens: args.max_tokens,
        repair_rounds: args.repair_rounds,
        dialect: reads_dialect.then(|| args.dialect.to_string()),
        hermes_layout: held_to_dialect
            .is_some()
            .then(|| String::from(if args.hermes_blocks { "blocks" } else { "list" })),
        decide_max_tokens: args.decide_max_tokens,
        call_threshold: explicit,
        default_call_threshold: (args.call_threshold.is_none()
            && modes.iter().any(|m| m.strategy == Strategy::Auto))
        .then_some(DEFAULT_CALL_THRESHOLD),
        samples: args.samples,
        sample_temperature: args.sample_temperature,
        resamples: args.resamples,
        request_fields: options.request_fields.clone(),
        keep_repeated_calls: args.keep_repeated_calls,
    };
    let servers: BTreeMap<String, String> = match &args.server_note {
        Some(note) => names.iter().map(|m| (m.clone(), note.clone())).collect(),
        None => BTreeMap::new(),
    };
    let resumed = match &args.json {
        Some(path) if path.exists() => {
            let text = read(path)?;
            resume(&text, &settings, &servers).map_err(|why| {
                Failure(format!(
                    "{}: cannot continue the run it holds: {why}. To start over, remove it or \
                     give another --json path",
                    path.display()
                ))
            })?
        }
        _ => Resumed::default(),
    };
    let answered = resumed.answered();
    let evaluator = Evaluator::new(options).map_err(Failure)?;
    // The report covers this run's modes, then those only the earlier run measured.
    let mut all_modes = names.clone();
    for mode in &resumed.modes {
        if !all_modes.contains(mode) {
            all_modes.push(mode.clone());
        }
    }
    let mut all_servers = resumed.servers.clone();
    all_servers.extend(servers);
    let mut all_available = resumed.available.clone();
    for (category, count) in available {
        let entry = all_available.entry(category).or_default();
        *entry = (*entry).max(count);
    }
    // A mode of an earlier run that no longer reads (a removed variant) names none.
    let gateway_flags: BTreeMap<String, String> = all_modes
        .iter()
        .filter_map(|mode| {
            let flags = evaluator.serve_flags(&mode.parse().ok()?)?;
            Some((mode.clone(), flags))
        })
        .collect();
    let report_of = |new: &[CaseOutcome], interrupted: bool| {
        let fresh: HashSet<(&str, &str)> = new
            .iter()
            .map(|o| (o.mode.as_str(), o.id.as_str()))
            .collect();
        let outcomes: Vec<CaseOutcome> = resumed
            .outcomes
            .iter()
            .filter(|o| !fresh.contains(&(o.mode.as_str(), o.id.as_str())))
            .chain(new)
            .cloned()
            .collect();
        let mut report = Report::new(&all_modes, outcomes, loaded.skipped.clone(), interrupted);
        // An earlier run's dialect stays named while its outcomes are in the report.
        report.settings = Some(RunSettings {
            dialect: settings.dialect.clone().or_else(|| resumed.dialect.clone()),
            ..settings.clone()
        });
        report.servers = all_servers.clone();
        report.available = all_available.clone();
        report.gateway = gateway_flags.clone();
        report
    };
    let total: usize = modes
        .iter()
        .map(|mode| {
            let name = mode.to_string();
            loaded
                .cases
                .iter()
                .filter(|c| !answered.contains(&(name.clone(), c.id.clone())))
                .count()
        })
        .sum();
    if !resumed.outcomes.is_empty() {
        eprintln!(
            "atfunc: continuing {}: {} answer(s) kept, {total} case(s) to ask",
            args.json
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            resumed.outcomes.len()
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure(format!("cannot start the async runtime: {e}")))?;
    let progress = progress_bar(total as u64);
    let cases = Arc::new(loaded.cases.clone());
    let (outcomes, interrupted, written) = runtime.block_on(async {
        let mut stream = Box::pin(run_remaining(
            Arc::new(evaluator),
            cases,
            modes,
            args.concurrency,
            &answered,
        ));
        let mut outcomes = Vec::with_capacity(total);
        let ctrl_c = tokio::signal::ctrl_c();
        tokio::pin!(ctrl_c);
        // Written after every case, so an interrupted run loses only the cases in flight.
        let mut written: Result<(), Failure> = Ok(());
        loop {
            tokio::select! {
                next = stream.next() => match next {
                    Some(outcome) => {
                        progress.set_message(outcome.mode.clone());
                        progress.inc(1);
                        outcomes.push(outcome);
                        if let (Some(path), Ok(())) = (&args.json, &written) {
                            written = write_json(path, &report_of(&outcomes, true));
                        }
                    }
                    None => return (outcomes, false, written),
                },
                // What was measured is still written; requests in flight are dropped.
                _ = &mut ctrl_c => return (outcomes, true, written),
            }
        }
    });
    progress.finish_and_clear();
    // Requests still in flight after an interrupt are not waited for.
    runtime.shutdown_background();
    written?;
    let report = report_of(&outcomes, interrupted);
    print!("{}", report.table());
    if let Some(path) = &args.json {
        write_json(path, &report)?;
    }
    if let Some(path) = &args.markdown {
        write(path, &report.markdown())?;
    }
    if let Some(path) = &args.chart {
        let files: Vec<String> = args
            .questions
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        let title = format!("{} on {}", args.model, files.join(", "));
        write(path, &chart_svg(&report, &title).map_err(Failure)?)?;
    }
    Ok(if interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// Writes the report as JSON through a file beside `path`, renamed over it: a reader (or
/// a run that continues it) never sees half a report.
fn write_json(path: &Path, report: &Report) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(&report.to_json())
        .map_err(|e| Failure(format!("cannot write the report: {e}")))?;
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    write(&partial, &text)?;
    std::fs::rename(&partial, path)
        .map_err(|e| Failure(format!("cannot write {}: {e}", path.display())))
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
