//! The evaluator: how well a model behind an OpenAI-compatible endpoint calls functions,
//! measured on BFCL cases (feature `eval`).
//!
//! ```
//! use atfunc_lab::eval::{load_cases, score, Mode, ScoredCall, Strategy};
//! use serde_json::json;
//!
//! let loaded = load_cases(
//!     concat!(
//!         r#"{"id": "simple_0", "question": [[{"role": "user", "content": "Square root of 2?"}]], "#,
//!         r#""function": [{"name": "math.sqrt", "parameters": {"type": "dict", "#,
//!         r#""properties": {"x": {"type": "float"}}, "required": ["x"]}}]}"#,
//!     ),
//!     r#"{"id": "simple_0", "ground_truth": [{"math.sqrt": {"x": [2.0]}}]}"#,
//! );
//! let case = &loaded.cases[0];
//! // The prompt `text` mode sends as the system message:
//! let prompt = atfunc_lab::eval::prompt(&case.interfaces, &Mode::new(Strategy::Text));
//! assert!(prompt.contains("@math.sqrt( <*x{number}> )"));
//! // An answer `@math.sqrt(2)`, bound, scores as BFCL scores it:
//! let call = ScoredCall { name: "math.sqrt".into(), args: json!({"x": 2}).as_object().unwrap().clone() };
//! assert!(score(&case.category, &case.functions, &case.ground_truth, &[call]).is_ok());
//! ```
//!
//! # Contract
//!
//! The evaluator is a client of the phases, like the gateway. For each case (a BFCL
//! question with its functions and its possible answer, see [`load_cases`]) and each
//! [`Mode`]:
//!
//! 1. `text`: the atfunc prompt of the case's functions ([`prompt`], the same text
//!    [`render_prompt`](atfunc::render_prompt) gives, with the options of the mode's
//!    [`Variant`]s) goes in front of the case's messages as the system message; the answer
//!    is parsed and each call bound against the functions.
//! 2. `repair`: as `text`; calls that do not bind, or an answer without a call, are sent
//!    back with the gateway's own repair message ([`repair_note`](atfunc::format::repair_note)),
//!    at most [`EvalOptions::repair_rounds`] times. Calls that bound are kept across rounds.
//! 3. `grammar`: as `text`, and the request carries the GBNF grammar of the case's
//!    functions in its `grammar` field (llama.cpp's and llama-cpp-python's name for it),
//!    with at least one call required, and exactly one outside BFCL's `parallel`
//!    categories (as `parallel_tool_calls: false` asks the gateway).
//! 4. `auto`: as `grammar`, with the grammar the gateway's `--constrain` sends under
//!    `tool_choice: "auto"`: prose without `@`, calls that bind, or no call.
//! 5. `lazy`: as `grammar`, sent lazily (llama.cpp's `grammar_lazy` with the trigger word
//!    `@`): prose is free until the model writes `@`, then only calls that bind.
//! 6. `decide`: `tool_choice: "auto"` in two steps. First a short request (at most
//!    [`EvalOptions::decide_max_tokens`]): the messages of `text` and
//!    [`DECIDE_QUESTION`](atfunc::grammar::DECIDE_QUESTION) after them, with a grammar that
//!    allows exactly one function's name as the prompt shows it, or
//!    [`NO_FUNCTION`](atfunc::grammar::NO_FUNCTION). For a name, the `grammar` request
//!    follows with the grammar of that one function (the mode's variants apply to it as to `grammar`); for
//!    `none` the answer has no call. Both requests' tokens count.
//! 7. `native`: the functions go as an OpenAI `tools` array with `tool_choice: "auto"`;
//!    each `tool_calls` entry is read back under its atfunc name and bound like a call
//!    the model wrote.
//! 8. `dialect`: the request `atfunc serve --upstream-dialect` sends to a server whose
//!    model writes its own call format as plain content (no tool parser): the functions
//!    as an OpenAI `tools` array for the server's chat template, the case's messages
//!    without an atfunc prompt, `tool_choice: "none"`. The answer's content is read in
//!    [`EvalOptions::dialect`] (`hermes`, `pythonic`, ..., or `auto`), each call bound
//!    under the name the model was shown; a call block that cannot be read counts as a
//!    call that does not bind. The report names the dialect ([`RunSettings::dialect`]).
//! 9. `dialect-grammar`: as `dialect`, held to the grammar of the tools' calls in the
//!    model's own format (`hermes` only), at least one call required, as `atfunc serve
//!    --upstream-dialect hermes --constrain` answers `tool_choice: "required"`.
//! 10. `dialect-auto`: as `dialect-grammar` under `tool_choice: "auto"`: the grammar
//!     also allows prose without a call, as the same gateway answers an agent.
//!
//! Every request is greedy (`temperature` 0), limited to [`EvalOptions::max_tokens`] and
//! [`EvalOptions::timeout`], and non-streamed, unless [`EvalOptions::stop_at_repeat`]
//! streams the answers of the text-based modes to drop each where its first repeated call
//! ends. Its answer is read as the
//! gateway reads an upstream's: at most [`EvalOptions::max_response_bytes`], and as UTF-8;
//! an answer over the limit or not UTF-8 fails its case with that reason (the gateway
//! answers 502 for it), and is never scored from replacement characters. An [`CaseOutcome`] is **valid**
//! when the answer has at least one call and every call binds, **correct** when it is
//! valid and its bound calls pass BFCL's AST rules ([`score`]); in BFCL's `irrelevance`
//! categories, whose functions cannot answer the question, correct when the answer has no
//! call at all. An endpoint error or a
//! timeout makes the case a failed one with its message; it never stops the run.
//! [`Report`] sums outcomes per mode and per category: cases, accuracy, valid, latency
//! p50/p95, tokens and the share of answers without a call, as a table, Markdown, JSON, or
//! an SVG chart ([`chart_svg`]). `atfunc eval --json FILE` continues an earlier run from its
//! JSON report when both were measured with the same [`RunSettings`].

mod case;
mod chart;
mod literal;
mod mode;
mod repeat_watch;
mod report;
mod run;
mod score;

pub use case::{load_cases, Case, LoadedCases, Skipped};
pub use chart::chart_svg;
pub use mode::{prompt, Mode, Strategy, Variant};
pub use report::{ModeReport, Report, RunSettings, Summary, BFCL_SIMPLE};
pub use run::{CaseOutcome, EvalOptions, Evaluator};
pub use score::{score, Mismatch, ScoredCall};

// Continuing an earlier run from its JSON report: the plumbing of `atfunc eval --json`.
#[doc(hidden)]
pub use report::{resume, Resumed};

use futures::stream::{self, Stream, StreamExt};
use std::collections::HashSet;
use std::sync::Arc;

/// Every case in every mode, at most `concurrency` requests at a time: the outcomes
/// arrive as they are ready (a caller that stops reading keeps what it has). Cases run
/// mode after mode, so an interrupted run has whole modes first.
pub fn run_all(
    evaluator: Arc<Evaluator>,
    cases: Arc<Vec<Case>>,
    modes: Vec<Mode>,
    concurrency: usize,
) -> impl Stream<Item = CaseOutcome> {
    run_remaining(evaluator, cases, modes, concurrency, &HashSet::new())
}

/// As [`run_all`], leaving out the `(mode, case id)` pairs in `answered` (the outcomes
/// of an earlier run that this one continues, see `resume`): `atfunc eval --json`'s.
#[doc(hidden)]
pub fn run_remaining(
    evaluator: Arc<Evaluator>,
    cases: Arc<Vec<Case>>,
    modes: Vec<Mode>,
    concurrency: usize,
    answered: &HashSet<(String, String)>,
) -> impl Stream<Item = CaseOutcome> {
    let jobs: Vec<(Mode, usize)> = modes
        .iter()
        .flat_map(|mode| {
            let name = mode.to_string();
            let cases = &cases;
            (0..cases.len())
                .filter(move |&i| !answered.contains(&(name.clone(), cases[i].id.clone())))
                .map(move |i| (*mode, i))
        })
        .collect();
    stream::iter(jobs)
        .map(move |(mode, i)| {
            let evaluator = Arc::clone(&evaluator);
            let cases = Arc::clone(&cases);
            async move { evaluator.run(&cases[i], &mode).await }
        })
        .buffer_unordered(concurrency.max(1))
}
