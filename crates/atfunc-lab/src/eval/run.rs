//! Putting one case to the endpoint in one mode, and reading the answer.

use super::case::Case;
use super::mode::{prompt, Mode, Strategy, Variant};
use super::repeat_watch::{RepeatWatch, StreamFault};
use super::score::{score, ScoredCall};
use atfunc::bind::{bind, BoundCall, Catalog, Repeats};
use atfunc::format::{call_text, unreadable_call_error, CallRecord};
use atfunc::grammar::{
    decision_gbnf, decision_names, read_decision, Choice, ToolDecision, DECIDE_QUESTION,
    NO_FUNCTION,
};
use atfunc::interop::{
    parse_tool_call, to_openai_tools, ControlFields, NameMap, Rendered, ToolFormatOptions,
};
use atfunc::parse::{parse_events, Dialect, Event, ParserConfig, StreamParser};
use atfunc_gateway::endpoint::{
    is_event_stream, AnswerError, Endpoint, EndpointError, EndpointSetupError, Route, TimeLimit,
};
use atfunc_gateway::serve::{CallThreshold, Gateway};
use serde_json::{json, Map, Value as Json};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

mod gateway;
mod next;

pub(crate) use gateway::Policy;

/// Where and how the evaluator asks.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// The endpoint's base URL; `/v1` is added unless it ends with it.
    pub endpoint: String,
    /// The `model` field of each request (some servers need it, llama.cpp ignores it).
    pub model: String,
    /// The `max_tokens` of each request.
    pub max_tokens: u32,
    /// The longest wait for one answer; a case that waits longer fails with a timeout.
    pub timeout: Duration,
    /// How many repair rounds the gateway's modes may ask (all of them but `text`, which
    /// measures the prompt alone): `atfunc serve --repair-rounds`. Default 1, the
    /// gateway's.
    pub repair_rounds: usize,
    /// Largest answer read, in bytes, as the gateway's option of the same name: a larger
    /// answer fails its case, saying so. Default 16 MiB.
    pub max_response_bytes: usize,
    /// The `max_tokens` of `decide`'s first request, which writes one function's name or
    /// `none`. A name cut by it fails its case, saying so. Default 32 (BFCL's longest
    /// names take about half of that).
    pub decide_max_tokens: u32,
    /// In the modes under `tool_choice: "auto"` with a grammar (`auto`, `dialect-auto`),
    /// weigh first as the gateway does: its `--call-threshold`
    /// ([`TurnPolicy::call_threshold`](atfunc_gateway::serve::TurnPolicy::call_threshold)). An
    /// explicit one is a probability above 0 and at most 1 ([`Evaluator::new`] refuses
    /// any other). Each weighed case records its odds ([`CaseOutcome::call_odds`]).
    /// Default: the gateway's, which weighs mode `auto` (atfunc's syntax) at
    /// [`DEFAULT_CALL_THRESHOLD`](atfunc_gateway::serve::DEFAULT_CALL_THRESHOLD) and not
    /// `dialect-auto`.
    pub call_threshold: CallThreshold,
    /// The call format `dialect` mode reads the answers' content in: a model's own
    /// (`hermes`, `pythonic`, ...), or `auto` (the format of the first call read in each
    /// answer). Default `auto`.
    pub dialect: Dialect,
    /// In `dialect-grammar`, hold the answers to `<tool_call>` blocks instead of one fenced
    /// list of calls ([`UpstreamOptions::hermes_blocks`](atfunc_gateway::serve::UpstreamOptions::hermes_blocks)).
    pub hermes_blocks: bool,
    /// Answers asked per request of the text-based modes: the first greedy, the others
    /// sampled at `sample_temperature` (each with its own seed). Among the answers whose
    /// calls all bind, the calls most of them agree on win (the same names and arguments,
    /// in order), a tie going to the earlier answer; with no such answer, the first
    /// answer stands. Every answer's tokens count. Default 1 (greedy only).
    pub samples: u32,
    /// The temperature of the samples after the first. Default 0.7.
    pub sample_temperature: f64,
    /// In the modes that send a grammar (`grammar`, `auto`, `lazy`, `decide`), answers
    /// asked again when the one chosen does not bind: a call that does not bind, or no
    /// call where the request requires one (`grammar`, `decide` once it chose a
    /// function). Each is sampled at `sample_temperature` with a seed of its own, and the
    /// first whose calls all bind is taken; when none does, the last stands. Every
    /// answer's tokens count. Under a grammar a small model's answers that do not bind
    /// are loops inside a value, and another sample rarely loops again (EVAL.md (j)); as
    /// `atfunc serve --constrain` does, by default. The prompt-only modes are never asked
    /// again, so that they measure the prompt alone. Default 3.
    pub resamples: u32,
    /// Fields added to every request as they are (and to `lazy`'s `/completion`): a
    /// server's own sampling settings, such as llama.cpp's `dry_multiplier` or
    /// `repeat_penalty`. A field the evaluator writes itself (`model`, `messages`, ...) is refused
    /// by [`Evaluator::new`]. Default none.
    pub request_fields: BTreeMap<String, Json>,
    /// Read every call of an answer. By default an answer of the text-based modes is read
    /// as the gateway reads it: up to the first call that repeats an earlier one (the
    /// variant `+once`, for every mode), since a small model that cannot stop writes its
    /// calls again until its token limit (EVAL.md (h)). Default false.
    pub keep_repeated_calls: bool,
    /// Count the tokens of answers dropped at a repeated call from llama.cpp's per-token
    /// `timings` (the request asks for them with `timings_per_token`, a field other
    /// servers may refuse). The gateway's modes always ask each answer as a stream and
    /// drop it where its first repeated call ends (unless `keep_repeated_calls`), which
    /// stops a llama.cpp server's generation; without this, a dropped answer counts only
    /// what its stream carried as `usage`. The experiments outside the gateway (`+next`,
    /// `--samples` above 1) stream and drop their answers only with it, counting one
    /// answer token per piece of content where a server sends neither. Ignored by
    /// `native` and `lazy`. Default false.
    pub stop_at_repeat: bool,
}

/// The request fields the evaluator writes itself, which
/// [`EvalOptions::request_fields`] may not set: the modes differ in them, or the report
/// records them under their own options.
pub const OWN_FIELDS: &[&str] = &[
    "model",
    "messages",
    "max_tokens",
    "n_predict",
    "temperature",
    "seed",
    "stream",
    "prompt",
    "grammar",
    "grammar_lazy",
    "grammar_triggers",
    "preserved_tokens",
    "tools",
    "tool_choice",
];

impl EvalOptions {
    /// Why these options cannot make a run, if they cannot: a request field the
    /// evaluator writes itself, or a call threshold that is not a probability above 0.
    pub fn check(&self) -> Result<(), String> {
        if let Some(own) = self
            .request_fields
            .keys()
            .find(|name| OWN_FIELDS.contains(&name.as_str()))
        {
            return Err(format!(
                "the request field '{own}' is the evaluator's own: set it with its option \
                 (--model, --max-tokens, --samples, --sample-temperature) or by the mode; \
                 extra fields may be any but {}",
                OWN_FIELDS.join(", ")
            ));
        }
        if let Some(error) = self
            .call_threshold
            .explicit()
            .and_then(atfunc_gateway::turn::threshold_error)
        {
            return Err(error);
        }
        Ok(())
    }
}

impl Default for EvalOptions {
    fn default() -> EvalOptions {
        EvalOptions {
            endpoint: String::from("http://127.0.0.1:8080"),
            model: String::from("default"),
            max_tokens: 256,
            timeout: Duration::from_secs(120),
            repair_rounds: 1,
            max_response_bytes: atfunc_gateway::endpoint::DEFAULT_MAX_RESPONSE_BYTES,
            decide_max_tokens: 32,
            call_threshold: CallThreshold::Default,
            dialect: Dialect::Auto,
            hermes_blocks: false,
            samples: 1,
            sample_temperature: 0.7,
            resamples: 3,
            request_fields: BTreeMap::new(),
            keep_repeated_calls: false,
            stop_at_repeat: false,
        }
    }
}

/// How one case came out in one mode.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct CaseOutcome {
    /// The mode, as written on the command line (`text+desc`).
    pub mode: String,
    /// The case's id.
    pub id: String,
    /// The case's BFCL category.
    pub category: String,
    /// Whether the calls match the possible answer (BFCL's AST rules); for an
    /// `irrelevance` case, whether the answer has no call.
    pub correct: bool,
    /// Whether the answer has at least one call and every call binds.
    pub valid: bool,
    /// Whether the answer has no call at all (none that binds, none that does not).
    #[serde(default)]
    pub no_call: bool,
    /// Time from the first request to the last answer, repair rounds included.
    pub latency_ms: u64,
    /// Prompt tokens over every request, as the endpoint counted them.
    pub prompt_tokens: u64,
    /// Completion tokens over every request.
    pub completion_tokens: u64,
    /// The calls that bound, as `{"name", "args"}`.
    pub calls: Vec<Json>,
    /// The model's last answer text: for the gateway's modes, the content of the gateway's
    /// answer (its calls are taken out, and are in `calls`); for `native`, the endpoint's
    /// content.
    pub answer: String,
    /// Whether a request failed (an endpoint error or a timeout).
    pub endpoint_failed: bool,
    /// Why the case failed, when it did: the endpoint's error, a call that did not bind,
    /// or the scorer's mismatch.
    pub error: Option<String>,
    /// The odds that the answer opens with a call, when the gateway weighed it first
    /// ([`EvalOptions::call_threshold`]): the answer was held to calls at or above the
    /// threshold, to prose below it. A run at a threshold near 0 records them for every
    /// case, and `crates/atfunc-lab/reports/call_odds.py --reports` reads the score at any other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_odds: Option<f64>,
}

/// An OpenAI-compatible endpoint, asked one case at a time.
#[derive(Debug, Clone)]
pub struct Evaluator {
    /// Its time limit bounds each request as a whole.
    endpoint: Endpoint,
    options: EvalOptions,
    /// The gateway of each mode that is a gateway policy, made at its first case.
    gateways: Arc<Mutex<HashMap<Mode, Arc<Gateway>>>>,
}

/// One answer of the endpoint.
struct Answer {
    text: String,
    tool_calls: Vec<Json>,
    prompt_tokens: u64,
    completion_tokens: u64,
}

/// The calls read out of one answer text.
#[derive(Default)]
struct Read {
    bound: Vec<BoundCall>,
    /// The calls the gateway passed on, bound by it.
    passed: Vec<ScoredCall>,
    refused: Vec<CallRecord>,
    /// Where the last call read ends, when the reading stopped at a repeat of it or of
    /// an earlier one (the answer went on).
    repeat_after: Option<usize>,
}

impl Evaluator {
    /// An evaluator for `options.endpoint`, once [`EvalOptions::check`] finds nothing
    /// to refuse.
    pub fn new(options: EvalOptions) -> Result<Evaluator, String> {
        options.check()?;
        let endpoint = Endpoint::new(
            &options.endpoint,
            TimeLimit::Whole(options.timeout),
            options.max_response_bytes,
        )
        .map_err(|error| match error {
            EndpointSetupError::NotUrl(_) | EndpointSetupError::NotHttp => format!(
                "the endpoint must be an http(s) URL, found '{}'",
                options.endpoint
            ),
            EndpointSetupError::Client(e) => format!("cannot set up the HTTP client: {e}"),
        })?;
        Ok(Evaluator {
            endpoint,
            options,
            gateways: Arc::default(),
        })
    }

    /// How to start `atfunc serve`, and the `tool_choice` its clients send, to answer as
    /// `mode` does: `atfunc serve --constrain, tool_choice "required"` for `grammar`.
    /// Every mode but `native`, `lazy` and `+next` (and any mode with
    /// [`EvalOptions::samples`] above 1) is a policy of the gateway, and is put through
    /// the gateway's own code: its figures are the gateway's. `None` for the others.
    pub fn serve_flags(&self, mode: &Mode) -> Option<String> {
        Policy::of(mode, &self.options).map(|policy| policy.serve_flags())
    }

    /// Puts `case` to the endpoint in `mode` and scores the answer. Never fails: an
    /// endpoint error or timeout is a failed case with its message.
    pub async fn run(&self, case: &Case, mode: &Mode) -> CaseOutcome {
        let started = Instant::now();
        let mut outcome = CaseOutcome {
            mode: mode.to_string(),
            id: case.id.clone(),
            category: case.category.clone(),
            correct: false,
            valid: false,
            no_call: false,
            latency_ms: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            calls: Vec::new(),
            answer: String::new(),
            endpoint_failed: false,
            error: None,
            call_odds: None,
        };
        let result = match (Policy::of(mode, &self.options), mode.strategy) {
            (Some(policy), _) => {
                self.through_gateway(case, mode, &policy, &mut outcome)
                    .await
            }
            (None, Strategy::Native) => self.native(case, &mut outcome).await,
            (None, _) => self.text(case, mode, &mut outcome).await,
        };
        outcome.latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match result {
            Err(error) => {
                outcome.endpoint_failed = true;
                outcome.error = Some(error);
            }
            Ok(read) => {
                let mut calls = read.passed;
                calls.extend(read.bound.into_iter().map(|c| ScoredCall {
                    name: c.name,
                    args: c.args,
                }));
                outcome.valid = !calls.is_empty() && read.refused.is_empty();
                outcome.no_call = calls.is_empty() && read.refused.is_empty();
                outcome.calls = calls
                    .iter()
                    .map(|c| json!({"name": c.name, "args": c.args}))
                    .collect();
                if case.wants_no_call() {
                    // No function fits the question: any call, bound or not, is wrong.
                    outcome.correct = outcome.no_call;
                    if !outcome.no_call {
                        outcome.error = Some(String::from(
                            "the answer calls a function, none fits the question",
                        ));
                    }
                } else if let Some(refused) = read.refused.first() {
                    let why = refused.result.as_ref().err().cloned().unwrap_or_default();
                    outcome.error = Some(format!("{}: {why}", refused.call_text));
                } else if calls.is_empty() {
                    outcome.error = Some(String::from("the answer has no call"));
                } else {
                    match score(&case.category, &case.functions, &case.ground_truth, &calls) {
                        Ok(()) => outcome.correct = true,
                        Err(mismatch) => outcome.error = Some(mismatch.to_string()),
                    }
                }
            }
        }
        outcome
    }

    /// The modes that are not gateway policies ([`Policy::of`]): `lazy`, `+next`, and any
    /// mode asked `--samples` times. The atfunc prompt and the mode's grammar, sent by the
    /// evaluator itself; one answer (voted among the samples, resampled as the gateway
    /// resamples), parsed and bound. Repair rounds are the gateway's: a mode that asks
    /// for them is refused here.
    async fn text(
        &self,
        case: &Case,
        mode: &Mode,
        outcome: &mut CaseOutcome,
    ) -> Result<Read, String> {
        let catalog = Catalog::new(case.interfaces.clone());
        let messages = with_system(&case.messages, &prompt(&case.interfaces, mode));
        let mut request = self.request();
        match mode.strategy {
            Strategy::Grammar => {
                request.insert(
                    "grammar".into(),
                    Json::String(grammar(case, Choice::Required, mode)?),
                );
            }
            Strategy::Auto => {
                request.insert(
                    "grammar".into(),
                    Json::String(grammar(case, Choice::Auto, mode)?),
                );
            }
            Strategy::Lazy => {
                // Prose is free until the trigger; from the `@` on, the text must match the
                // grammar, which (as under `Required`) starts with the call. llama-server's
                // chat route sets these fields from its own template (a lazy grammar only
                // for its native tool calls), so they go to `/completion` ([`ask_lazy`]).
                request.insert(
                    "grammar".into(),
                    Json::String(grammar(case, Choice::Required, mode)?),
                );
                request.insert("grammar_lazy".into(), Json::Bool(true));
                // llama.cpp's trigger types are numbered: 1 is a word. A word that is one
                // token must also be a preserved token.
                request.insert(
                    "grammar_triggers".into(),
                    json!([{"type": 1, "value": "@"}]),
                );
                request.insert("preserved_tokens".into(), json!(["@"]));
            }
            Strategy::Decide => {
                let Some(name) = self.decide(case, &messages, outcome).await? else {
                    // `none`: the answer is the decision, without a call.
                    return Ok(Read::default());
                };
                request.insert(
                    "grammar".into(),
                    Json::String(grammar(case, Choice::Function(name), mode)?),
                );
            }
            Strategy::DialectGrammar | Strategy::DialectAuto => {
                return Err(format!(
                    "mode '{mode}' is measured through the gateway's code, which \
                     answers once: leave out --samples",
                ))
            }
            Strategy::Text | Strategy::Repair | Strategy::Native | Strategy::Dialect => {}
        }
        // The grammar of `grammar` and of `decide`'s second step requires a call; in the
        // other modes an answer without one may be the answer.
        let call_required = matches!(mode.strategy, Strategy::Grammar | Strategy::Decide);
        // Only answers made under a grammar are asked again: the prompt-only modes
        // measure the prompt alone.
        let resamples = if request.contains_key("grammar") {
            self.options.resamples
        } else {
            0
        };
        if mode.strategy == Strategy::Repair {
            return Err(String::from(
                "repair rounds are the gateway's, and --samples above 1 is not a gateway \
                 policy: run `repair` with --samples 1",
            ));
        }
        request.insert("messages".into(), Json::Array(messages.clone()));
        let (mut answer, mut read) = self
            .ask_voted(
                &request,
                mode,
                &catalog,
                (call_required, resamples),
                outcome,
            )
            .await?;
        if mode.has(Variant::Next) && request.contains_key("grammar") {
            self.next_calls(
                case,
                mode,
                (&messages, &catalog),
                &mut answer.text,
                &mut read,
                outcome,
            )
            .await?;
        }
        outcome.answer = answer.text;
        read.repeat_after = None;
        Ok(read)
    }

    /// One request of a text-based mode, asked [`EvalOptions::samples`] times (the first
    /// greedy, the rest sampled), and the answer whose calls win the vote, read; when it
    /// does not bind (a call refused, or none where `call_required`), asked again up to
    /// `resamples` times.
    async fn ask_voted(
        &self,
        request: &Map<String, Json>,
        mode: &Mode,
        catalog: &Catalog,
        (call_required, resamples): (bool, u32),
        outcome: &mut CaseOutcome,
    ) -> Result<(Answer, Read), String> {
        let samples = self.options.samples.max(1);
        let mut answers: Vec<(Answer, Read)> = Vec::new();
        for sample in 0..samples {
            answers.push(
                self.ask_sample(request, mode, catalog, sample, outcome)
                    .await?,
            );
        }
        let keys: Vec<Option<String>> = answers.iter().map(|(_, read)| vote_key(read)).collect();
        let mut chosen = answers.swap_remove(vote(&keys));
        // The seeds go on from the vote's, so that no answer is asked twice alike.
        for sample in samples..samples.saturating_add(resamples) {
            if !needs_another(&chosen.1, call_required) {
                break;
            }
            chosen = self
                .ask_sample(request, mode, catalog, sample, outcome)
                .await?;
        }
        Ok(chosen)
    }

    /// Answer `sample` of a request, read: the first (0) greedy, the others at the
    /// sample temperature with the sample's number as their seed.
    async fn ask_sample(
        &self,
        request: &Map<String, Json>,
        mode: &Mode,
        catalog: &Catalog,
        sample: u32,
        outcome: &mut CaseOutcome,
    ) -> Result<(Answer, Read), String> {
        let mut request = request.clone();
        if sample > 0 {
            request.insert(
                "temperature".into(),
                Json::from(self.options.sample_temperature),
            );
            request.insert("seed".into(), Json::from(sample));
        }
        let once = !self.options.keep_repeated_calls;
        let answer = if mode.strategy == Strategy::Lazy {
            self.ask_lazy(&request, outcome).await?
        } else if once && self.options.stop_at_repeat {
            self.ask_until_repeat(&request, catalog, outcome).await?
        } else {
            self.ask(&request, outcome).await?
        };
        let read = read_text(&answer.text, catalog, once);
        Ok((answer, read))
    }

    /// `decide`, its first step: `messages` (the case's, with the atfunc prompt) and
    /// [`DECIDE_QUESTION`] after them, answered under a grammar that allows exactly one
    /// function's name as the prompt shows it, or [`NO_FUNCTION`]. The name chosen, or
    /// `None` for no call; the usage is added to `outcome`.
    async fn decide(
        &self,
        case: &Case,
        messages: &[Json],
        outcome: &mut CaseOutcome,
    ) -> Result<Option<String>, String> {
        let names = decision_names(&case.interfaces);
        let mut asked = messages.to_vec();
        asked.push(json!({"role": "user", "content": DECIDE_QUESTION}));
        let mut request = self.request();
        request.insert(
            "max_tokens".into(),
            Json::from(self.options.decide_max_tokens),
        );
        request.insert("messages".into(), Json::Array(asked));
        request.insert("grammar".into(), Json::String(decision_gbnf(&names)));
        let answer = self.ask(&request, outcome).await?;
        outcome.answer = answer.text.clone();
        match read_decision(&answer.text, &names) {
            ToolDecision::Function(name) => Ok(Some(name)),
            ToolDecision::NoFunction => Ok(None),
            ToolDecision::Unreadable => Err(format!(
                "the decision '{}' is neither a function's name nor '{NO_FUNCTION}': a name \
                 cut at the decision's limit of {} tokens? Raise --decide-max-tokens",
                excerpt(answer.text.trim()),
                self.options.decide_max_tokens
            )),
        }
    }

    /// A mode that is a gateway policy: the case put to the policy's gateway, in this
    /// process, as a client would put it to `atfunc serve`. Bounded as a whole by the
    /// evaluator's time limit once for each request the policy may make.
    async fn through_gateway(
        &self,
        case: &Case,
        mode: &Mode,
        policy: &Policy,
        outcome: &mut CaseOutcome,
    ) -> Result<Read, String> {
        let gateway = {
            let mut gateways = self.gateways.lock().unwrap_or_else(PoisonError::into_inner);
            match gateways.get(mode) {
                Some(gateway) => Arc::clone(gateway),
                None => {
                    let gateway = policy.gateway()?;
                    gateways.insert(*mode, Arc::clone(&gateway));
                    gateway
                }
            }
        };
        let options = &policy.options;
        let requests = 2 + options
            .policy
            .resamples
            .saturating_add(options.policy.repair_rounds);
        let limit = self
            .options
            .timeout
            .saturating_mul(u32::try_from(requests).unwrap_or(u32::MAX));
        let asked = gateway::ask(&gateway, case, policy, self.request(), outcome);
        match tokio::time::timeout(limit, asked).await {
            Ok(read) => read,
            Err(_) => Err(timed_out(limit)),
        }
    }

    /// `native`: the tools as an OpenAI `tools` array; each `tool_calls` entry is read
    /// back, written as call text and bound like any other call.
    async fn native(&self, case: &Case, outcome: &mut CaseOutcome) -> Result<Read, String> {
        let (request, rendered, options) = self.tools_request(case, "auto");
        let answer = self.ask(&request, outcome).await?;
        outcome.answer = answer.text.clone();
        let catalog = Catalog::new(case.interfaces.clone());
        Ok(read_tool_calls(
            &answer.tool_calls,
            &rendered.names,
            &options,
            &catalog,
        ))
    }

    /// The request of `native` and `dialect`: the case's messages as they are, its tools
    /// as an OpenAI `tools` array (without the control functions) and `tool_choice`; with
    /// the tools as rendered (their names) and the options they were rendered with.
    fn tools_request(
        &self,
        case: &Case,
        tool_choice: &str,
    ) -> (Map<String, Json>, Rendered, ToolFormatOptions) {
        let options = ToolFormatOptions::default().with_control_fields(ControlFields::none());
        let rendered = to_openai_tools(&case.interfaces, &options);
        let mut request = self.request();
        request.insert("messages".into(), Json::Array(case.messages.clone()));
        request.insert("tools".into(), rendered.tools.clone());
        request.insert("tool_choice".into(), Json::from(tool_choice));
        (request, rendered, options)
    }

    /// The fields every request carries.
    fn request(&self) -> Map<String, Json> {
        let mut request = Map::new();
        request.insert("model".into(), Json::from(self.options.model.clone()));
        request.insert("max_tokens".into(), Json::from(self.options.max_tokens));
        // Greedy decoding: the same question gets the same answer in every run.
        request.insert("temperature".into(), Json::from(0));
        request.insert("stream".into(), Json::Bool(false));
        for (name, value) in &self.options.request_fields {
            request.insert(name.clone(), value.clone());
        }
        request
    }

    /// One chat request; the usage is added to `outcome`.
    async fn ask(
        &self,
        request: &Map<String, Json>,
        outcome: &mut CaseOutcome,
    ) -> Result<Answer, String> {
        let (answer, body) = self.post(Route::ChatCompletions, request).await?;
        Ok(counted(answer_of(&answer, &body)?, outcome))
    }

    /// One chat request, streamed and read up to the end of its first repeated call
    /// ([`EvalOptions::stop_at_repeat`]); the usage is added to `outcome`. A server that
    /// answers a streamed request whole is read whole.
    async fn ask_until_repeat(
        &self,
        request: &Map<String, Json>,
        catalog: &Catalog,
        outcome: &mut CaseOutcome,
    ) -> Result<Answer, String> {
        let timeout = self.options.timeout;
        let mut request = request.clone();
        request.insert("stream".into(), Json::Bool(true));
        // llama.cpp's server counts the tokens on every chunk with it, so that an answer
        // dropped early still has its counts; other servers ignore it.
        request.insert("timings_per_token".into(), Json::Bool(true));
        // The OpenAI way to the counts of an answer read to its end.
        request.insert("stream_options".into(), json!({"include_usage": true}));
        let body =
            serde_json::to_vec(&request).map_err(|e| format!("cannot write the request: {e}"))?;
        let sent = self
            .endpoint
            .post(Route::ChatCompletions, body, None)
            .await
            .map_err(|e| failure(e, timeout))?;
        let mut response = self
            .endpoint
            .check(sent)
            .await
            .map_err(|e| failure(e, timeout))?;
        if !is_event_stream(&response) {
            let text = self
                .endpoint
                .read_text(&mut response)
                .await
                .map_err(|e| answer_error(e, timeout))?;
            let json: Json = serde_json::from_str(&text).map_err(|error| {
                failure(
                    EndpointError::NotJson {
                        error,
                        text: text.clone(),
                    },
                    timeout,
                )
            })?;
            return Ok(counted(answer_of(&json, &text)?, outcome));
        }
        let limit = self.options.max_response_bytes;
        let too_large = || answer_error(AnswerError::TooLarge { limit }, timeout);
        let mut watch = RepeatWatch::new(catalog, limit);
        let mut received = 0usize;
        while !watch.over() {
            let piece = self
                .endpoint
                .next_piece(&mut response)
                .await
                .map_err(|e| answer_error(e, timeout))?;
            let fed = match piece {
                Some(piece) => {
                    received = received.saturating_add(piece.len());
                    if received > limit {
                        return Err(too_large());
                    }
                    watch.feed(&piece)
                }
                None => {
                    let end = watch.finish();
                    if end.is_ok() && !watch.over() {
                        return Err("endpoint closed the stream before the answer was complete \
                                    (no [DONE])"
                            .into());
                    }
                    end
                }
            };
            fed.map_err(|fault| match fault {
                StreamFault::LineTooLong => too_large(),
                StreamFault::NotUtf8 { at } => answer_error(AnswerError::NotUtf8 { at }, timeout),
                StreamFault::Said(data) => {
                    format!("endpoint failed in mid-answer: {}", excerpt(&data))
                }
            })?;
        }
        // Dropping the response closes the connection: the server stops writing.
        drop(response);
        let (prompt_tokens, completion_tokens) = watch.counted.unwrap_or((0, watch.pieces));
        let answer = Answer {
            text: watch.text,
            tool_calls: Vec::new(),
            prompt_tokens,
            completion_tokens,
        };
        Ok(counted(answer, outcome))
    }
}

/// `answer`, its tokens added to the case's.
fn counted(answer: Answer, outcome: &mut CaseOutcome) -> Answer {
    outcome.prompt_tokens += answer.prompt_tokens;
    outcome.completion_tokens += answer.completion_tokens;
    answer
}

/// The answer of a chat completion that came whole.
fn answer_of(answer: &Json, body: &str) -> Result<Answer, String> {
    let message = answer.pointer("/choices/0/message").ok_or_else(|| {
        format!(
            "endpoint answer has no choices[0].message: {}",
            excerpt(body)
        )
    })?;
    let usage = |field: &str| {
        answer
            .pointer(&format!("/usage/{field}"))
            .and_then(Json::as_u64)
            .unwrap_or(0)
    };
    let answer = Answer {
        text: message
            .get("content")
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_owned(),
        tool_calls: message
            .get("tool_calls")
            .and_then(Json::as_array)
            .cloned()
            .unwrap_or_default(),
        prompt_tokens: usage("prompt_tokens"),
        completion_tokens: usage("completion_tokens"),
    };
    Ok(answer)
}

impl Evaluator {
    /// `lazy`: the chat request's messages put through the server's own template
    /// (llama-server's `/apply-template`), then its `/completion` with the grammar fields of
    /// `request` and the same limits; the usage is added to `outcome`.
    async fn ask_lazy(
        &self,
        request: &Map<String, Json>,
        outcome: &mut CaseOutcome,
    ) -> Result<Answer, String> {
        let messages = request.get("messages").cloned().unwrap_or(Json::Null);
        let prompt = self.templated(messages).await?;
        let fields = [
            "temperature",
            "seed",
            "grammar",
            "grammar_lazy",
            "grammar_triggers",
            "preserved_tokens",
        ]
        .into_iter()
        .filter_map(|field| Some((field, request.get(field)?.clone())));
        self.complete(prompt, fields, outcome).await
    }

    /// llama-server's `/completion` of `prompt` with the evaluator's limits and request
    /// fields, then `fields`; the usage is added to `outcome`.
    async fn complete(
        &self,
        prompt: String,
        fields: impl IntoIterator<Item = (&'static str, Json)>,
        outcome: &mut CaseOutcome,
    ) -> Result<Answer, String> {
        let mut completion = Map::new();
        completion.insert("prompt".into(), Json::from(prompt));
        completion.insert("n_predict".into(), Json::from(self.options.max_tokens));
        for (name, value) in &self.options.request_fields {
            completion.insert(name.clone(), value.clone());
        }
        for (field, value) in fields {
            completion.insert(field.into(), value);
        }
        let (answer, body) = self.post(Route::Completion, &completion).await?;
        let text = answer
            .get("content")
            .and_then(Json::as_str)
            .ok_or_else(|| format!("/completion answered no content: {}", excerpt(&body)))?;
        let count = |field: &str| answer.get(field).and_then(Json::as_u64).unwrap_or(0);
        let answer = Answer {
            text: text.to_owned(),
            tool_calls: Vec::new(),
            prompt_tokens: count("tokens_evaluated"),
            completion_tokens: count("tokens_predicted"),
        };
        Ok(counted(answer, outcome))
    }

    /// `messages` put through the server's own chat template (llama-server's
    /// `/apply-template`): the prompt its chat route would send, up to the assistant's turn.
    async fn templated(&self, messages: Json) -> Result<String, String> {
        let mut apply = Map::new();
        apply.insert("messages".into(), messages);
        let (templated, body) = self.post(Route::ApplyTemplate, &apply).await?;
        templated
            .get("prompt")
            .and_then(Json::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("/apply-template answered no prompt: {}", excerpt(&body)))
    }

    /// One POST of `body` to `route`: its answer as JSON, and as text (for messages).
    async fn post(&self, route: Route, body: &Map<String, Json>) -> Result<(Json, String), String> {
        let body =
            serde_json::to_vec(body).map_err(|e| format!("cannot write the request: {e}"))?;
        match self.endpoint.post_json(route, body, None).await {
            Ok(answer) => Ok((answer.json, answer.text)),
            Err(error) => Err(failure(error, self.options.timeout)),
        }
    }
}

/// The reason a case fails whose request failed.
fn failure(error: EndpointError, timeout: Duration) -> String {
    match error {
        EndpointError::Unreachable(error) => describe(&error, timeout),
        EndpointError::TimedOut(after) => timed_out(after),
        EndpointError::Answer(error) => answer_error(error, timeout),
        EndpointError::Status { status, body } => {
            let body = match body {
                Ok(body) => body,
                Err(error) => return answer_error(error, timeout),
            };
            // An error's text is only quoted: bytes that are not UTF-8 are shown replaced.
            let body = String::from_utf8_lossy(&body);
            let message = serde_json::from_str::<Json>(&body)
                .ok()
                .and_then(|j| {
                    j.pointer("/error/message")
                        .and_then(Json::as_str)
                        .map(str::to_owned)
                })
                .unwrap_or_else(|| excerpt(&body));
            format!("endpoint answered {status}: {message}")
        }
        EndpointError::NotJson { error, text } => format!(
            "endpoint answered with invalid JSON ({error}): {}",
            excerpt(&text)
        ),
    }
}

/// What an answer votes for: its bound calls (names and arguments, in order), or nothing
/// when it has no call or a call that does not bind.
fn vote_key(read: &Read) -> Option<String> {
    if read.bound.is_empty() || !read.refused.is_empty() {
        return None;
    }
    let calls: Vec<Json> = read.bound.iter().map(|c| json!([c.name, c.args])).collect();
    Some(Json::Array(calls).to_string())
}

/// Whether an answer is asked again under [`EvalOptions::resamples`]: one of its calls
/// does not bind, or it has none where the request required one.
fn needs_another(read: &Read, call_required: bool) -> bool {
    !read.refused.is_empty() || (call_required && read.bound.is_empty())
}

/// The index of the answer whose key most answers share, the earliest among equals; the
/// first answer when none has a key.
fn vote(keys: &[Option<String>]) -> usize {
    let mut best = (0, 0);
    for (i, key) in keys.iter().enumerate() {
        let Some(key) = key else { continue };
        let count = keys.iter().filter(|k| k.as_ref() == Some(key)).count();
        if count > best.1 {
            best = (i, count);
        }
    }
    best.0
}

/// The reason a case fails whose answer could not be read.
fn answer_error(error: AnswerError, timeout: Duration) -> String {
    match error {
        AnswerError::Failed(error) => describe(&error, timeout),
        AnswerError::TooLarge { .. } => format!(
            "endpoint answer {} (raise --max-response-bytes to read it)",
            error.what()
        ),
        _ => format!("endpoint answer {}", error.what()),
    }
}

/// The grammar of a case's tools under `choice`; one call at most outside the `parallel`
/// categories, as a client that wants one call says with `parallel_tool_calls: false`
/// (without it a small model repeats its call until the token limit).
fn grammar(case: &Case, choice: Choice, mode: &Mode) -> Result<String, String> {
    atfunc::grammar::gbnf(&case.interfaces, &grammar_options(case, choice, mode))
        .map_err(|e| format!("no grammar: {e}"))
}

/// The options of [`grammar`].
fn grammar_options(case: &Case, choice: Choice, mode: &Mode) -> atfunc::grammar::GrammarOptions {
    let base = atfunc::grammar::GrammarOptions::default()
        .with_choice(choice)
        .with_single(!case.category.contains("parallel"));
    // What the user wrote: the text the grounded variants take values from.
    mode.grammar_options(base, || {
        case.messages
            .iter()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| m["content"].as_str())
            .collect::<Vec<&str>>()
            .join("\n")
    })
}

/// The case's messages with `prompt` as the system message: in front of the one that
/// opens the conversation, or in a new one before it.
fn with_system(messages: &[Json], prompt: &str) -> Vec<Json> {
    let mut out = messages.to_vec();
    match out.first_mut() {
        Some(first) if first.get("role").and_then(Json::as_str) == Some("system") => {
            let own = first
                .get("content")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_owned();
            first["content"] = Json::String(format!("{prompt}\n{own}"));
        }
        _ => out.insert(0, json!({"role": "system", "content": prompt})),
    }
    out
}

/// The calls of an answer: those that bind, and those that do not (with the error the
/// model would be shown). Prose that merely contains `@` is not a call.
///
/// With `once` (the default, and the variant `+once` under
/// [`EvalOptions::keep_repeated_calls`]) the answer ends before the first call that repeats an
/// earlier one, as the gateway reads it: a call that binds with the same
/// [`BoundCall::key`] (the same function with the same bound arguments and body, however
/// each was written) as an earlier one. A small model that cannot stop writes its calls
/// again and again until its token limit, and the repeat, the rest, and the call the
/// limit cut short among it are not read. A call that does not bind is no repeat.
fn read_text(text: &str, catalog: &Catalog, once: bool) -> Read {
    let mut read = Read::default();
    // An answer read here is already bounded in size (`max_response_bytes`).
    let mut repeats = Repeats::remembering(usize::MAX);
    let mut read_to = 0;
    for event in parse_events(text) {
        match event {
            Event::Call(call) => match bind(&call, catalog) {
                Ok(bound) if once && !repeats.admit(&bound) => {
                    read.repeat_after = Some(read_to);
                    break;
                }
                Ok(bound) => {
                    read_to = usize::try_from(bound.span.end).unwrap_or(usize::MAX);
                    read.bound.push(bound);
                }
                Err(error) => read.refused.push(CallRecord {
                    call_text: call_text(&call),
                    result: Err(error.to_string()),
                }),
            },
            Event::Malformed { error, text, .. } => {
                let written = text.strip_prefix('@').unwrap_or(&text);
                let name = written.split('(').next().unwrap_or(written).trim();
                // `@name(` of a known function is a call gone wrong; anything else is prose.
                if catalog.find(name).is_ok() {
                    read.refused.push(CallRecord {
                        call_text: written.to_owned(),
                        result: Err(unreadable_call_error(&error)),
                    });
                }
            }
            _ => {}
        }
    }
    read
}

/// The calls of `tool_calls` entries: each read under its model name ([`NameMap`]),
/// written as call text and bound like a call the model wrote.
fn read_tool_calls(
    entries: &[Json],
    names: &NameMap,
    options: &ToolFormatOptions,
    catalog: &Catalog,
) -> Read {
    let mut read = Read::default();
    for entry in entries {
        let shown = entry
            .pointer("/function/name")
            .and_then(Json::as_str)
            .unwrap_or("?")
            .to_owned();
        let text = match parse_tool_call(entry, names, options)
            .map_err(|e| e.to_string())
            .and_then(|call| call.call_text().map_err(|e| e.to_string()))
        {
            Ok(text) => text,
            Err(error) => {
                read.refused.push(CallRecord {
                    call_text: shown,
                    result: Err(error),
                });
                continue;
            }
        };
        let one = read_text(&text, catalog, false);
        read.bound.extend(one.bound);
        read.refused.extend(one.refused);
    }
    read
}

/// The calls of an answer written in a model's own format (`dialect`), as the gateway
/// reads them: a call names a tool as the model was shown it (its model name, or its name
/// as defined), and its arguments by the names the tool's schema gives them. A call block
/// that cannot be read (its opening marker written, the rest not in the format) is a
/// call gone wrong, never prose. A refused call is quoted as the model wrote it.
fn read_dialect(text: &str, dialect: Dialect, names: &NameMap, catalog: &Catalog) -> Read {
    let mut parser = StreamParser::new(
        ParserConfig::default()
            .with_bodies(catalog.bodies())
            .with_dialect(dialect)
            // As the gateway reads it: bare JSON naming an offered tool is a call too.
            .offering(catalog.interfaces(), catalog.root()),
    );
    let mut events = parser.feed_str(text);
    parser.finish_into(&mut events);
    let mut read = Read::default();
    for event in events {
        match event {
            Event::Call(mut call) => {
                let written = usize::try_from(call.span.start)
                    .ok()
                    .zip(usize::try_from(call.span.end).ok())
                    .and_then(|(start, end)| text.get(start..end))
                    .map_or_else(|| call_text(&call), |raw| raw.trim().to_owned());
                if let Some(qualified) = names.qualified(&call.name) {
                    let model_name = std::mem::replace(&mut call.name, qualified.to_owned());
                    for (key, _) in &mut call.named {
                        *key = names.written_param(&model_name, key).to_owned();
                    }
                }
                match bind(&call, catalog) {
                    Ok(bound) => read.bound.push(bound),
                    Err(error) => read.refused.push(CallRecord {
                        call_text: written,
                        result: Err(error.to_string()),
                    }),
                }
            }
            Event::Malformed { error, text, .. } => read.refused.push(CallRecord {
                call_text: text.trim().to_owned(),
                result: Err(format!("This call could not be read: {error}")),
            }),
            _ => {}
        }
    }
    read
}

fn describe(error: &reqwest::Error, timeout: Duration) -> String {
    if error.is_timeout() {
        timed_out(timeout)
    } else if error.is_connect() {
        format!("cannot reach the endpoint: {error}")
    } else {
        format!("endpoint request failed: {error}")
    }
}

fn timed_out(after: Duration) -> String {
    format!("endpoint timed out after {} s", after.as_secs())
}

/// The start of a body, for an error message.
fn excerpt(body: &str) -> String {
    let cut: String = body.chars().take(200).collect();
    if cut.len() < body.len() {
        format!("{cut}...")
    } else {
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use atfunc::{Interface, Param, ParamType};

    /// Read up to a repeat, as the gateway reads: calls compared once bound, so two
    /// spellings of one request are a repeat, and a call that does not bind never is.
    #[test]
    fn an_answer_is_read_up_to_the_first_call_that_binds_as_an_earlier_one_did() {
        let catalog = Catalog::new(vec![Interface::new("sqrt")
            .in_domain("calc")
            .param(Param::new("x", ParamType::Integer).required())]);
        let answer = r#"@calc.sqrt(x="a") @calc.sqrt(x="a") @calc.sqrt(2) @calc.sqrt(3) @CALC.SQRT(x=2) @calc.sqrt(4)"#;
        let once = read_text(answer, &catalog, true);
        assert_eq!(once.refused.len(), 2);
        let args: Vec<_> = once.bound.iter().map(|b| b.args["x"].clone()).collect();
        assert_eq!(args, [2, 3]);
        let all = read_text(answer, &catalog, false);
        assert_eq!((all.refused.len(), all.bound.len()), (2, 4));
    }

    #[test]
    fn the_vote_takes_the_calls_most_answers_share_and_the_earliest_of_equals() {
        let k = |s: &str| Some(s.to_owned());
        // The greedy answer (first) is outvoted by two samples that agree.
        assert_eq!(vote(&[k("a"), k("b"), None, k("b")]), 1);
        // A tie goes to the earlier answer.
        assert_eq!(vote(&[k("a"), k("b")]), 0);
        assert_eq!(vote(&[None, k("b"), k("a"), k("a"), k("b")]), 1);
        // Answers without calls that bind do not vote; with none left the first stands.
        assert_eq!(vote(&[None, None, k("c")]), 2);
        assert_eq!(vote(&[None, None]), 0);
        assert_eq!(vote(&[]), 0);
    }

    #[test]
    fn an_endpoint_that_is_not_an_http_url_is_refused_at_once() {
        // The last two have no valid host: they were once taken, and every case failed.
        for endpoint in [
            "ftp://x",
            "localhost:8080",
            "http://",
            "http://exa mple:8080",
            "http://:8080",
        ] {
            let error = Evaluator::new(EvalOptions {
                endpoint: endpoint.to_owned(),
                ..EvalOptions::default()
            })
            .unwrap_err();
            assert_eq!(
                error,
                format!("the endpoint must be an http(s) URL, found '{endpoint}'")
            );
        }
    }

    #[test]
    fn a_call_threshold_outside_0_to_1_is_refused_at_once() {
        // Once taken, and every weighed case failed with the gateway's setup error.
        let error = Evaluator::new(EvalOptions {
            call_threshold: CallThreshold::At(2.0),
            ..EvalOptions::default()
        })
        .unwrap_err();
        assert!(error.contains("above 0 and at most 1, not 2"), "{error}");
    }

    #[test]
    fn a_failed_request_is_put_in_the_evaluators_words() {
        let timeout = Duration::from_secs(3);
        assert_eq!(
            failure(EndpointError::TimedOut(timeout), timeout),
            "endpoint timed out after 3 s"
        );
        let status = |body: &[u8]| EndpointError::Status {
            status: reqwest::StatusCode::BAD_REQUEST,
            body: Ok(body.to_vec()),
        };
        assert_eq!(
            failure(
                status(br#"{"error": {"message": "no such model"}}"#),
                timeout
            ),
            "endpoint answered 400 Bad Request: no such model"
        );
        assert_eq!(
            failure(status(b"plain \xff text"), timeout),
            "endpoint answered 400 Bad Request: plain \u{fffd} text"
        );
        let too_large = EndpointError::Status {
            status: reqwest::StatusCode::BAD_REQUEST,
            body: Err(AnswerError::TooLarge { limit: 8 }),
        };
        assert_eq!(
            failure(too_large, timeout),
            "endpoint answer is larger than 8 bytes (raise --max-response-bytes to read it)"
        );
    }
}
