//! Executed turns: the gateway runs the model's calls in its registry and asks the model
//! again with the results, until an answer has no calls, or has a call that needs the
//! user's confirmation: that call is not run but handed to the client as a `tool_calls`
//! entry, and the turn ends there.

use super::rounds::{answer, Reader, Rounds, Sink};
use super::trace;
use super::{ApiError, Gateway};
use crate::turn::Request;
use crate::turn::ToolSet;
use crate::turn::{add_prompt_raw, rewrite_raw, Prompt};
use crate::turn::{Out, RoundEnd, Shaper, MAX_CALLS};
use atfunc::parse::Event;
use atfunc_tools::{
    CallContext, CallEvent, Outcome, OutcomeState, Registry, RegistryPrompt, ResponseStream,
    Settings,
};
use axum::http::HeaderValue;
use axum::response::Response;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value as Json};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::mpsc;

/// The records of the calls an executed request ran, as the answer's `atfunc.calls` gives
/// them, shared with whatever answers the request's error: the request's time limit drops
/// its handler, and its 504 must still say what ran, so that a client that retries does
/// not run it again. `None` until the request turns out to be an executed one.
#[derive(Debug, Clone, Default)]
pub(crate) struct RanCalls(Arc<Mutex<Option<Vec<Json>>>>);

impl RanCalls {
    fn lock(&self) -> MutexGuard<'_, Option<Vec<Json>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The request is an executed one: its errors report what ran, if only nothing.
    fn start(&self) {
        self.lock().get_or_insert_with(Vec::new);
    }

    fn push(&self, record: Json) {
        self.lock().get_or_insert_with(Vec::new).push(record);
    }

    /// The records so far.
    fn records(&self) -> Vec<Json> {
        self.lock().clone().unwrap_or_default()
    }

    /// `error` with the records of the calls that ran (`error.atfunc_executed`), when the
    /// request is an executed one.
    pub(crate) fn report(&self, error: ApiError) -> ApiError {
        match &*self.lock() {
            Some(records) => error.with_executed(records.clone()),
            None => error,
        }
    }
}

/// What an executed turn did, for the `atfunc` field of the answer.
#[derive(Debug, Default)]
struct Record {
    steps: usize,
    /// How many calls were read, whether they ran, were refused or held.
    count: usize,
    /// The calls that ran (or were refused), as records.
    calls: RanCalls,
    /// Why the turn ended before an answer without calls: `max_steps`, `max_calls`.
    stopped: Option<&'static str>,
    /// Every call event, for an answer sent whole (a stream sends them as they happen).
    events: Option<Vec<Json>>,
}

impl Record {
    fn to_json(&self) -> Json {
        let mut record = json!({"steps": self.steps, "calls": self.calls.records()});
        if let Json::Object(map) = &mut record {
            if let Some(stopped) = self.stopped {
                map.insert("stopped".into(), json!(stopped));
            }
            if let Some(events) = &self.events {
                map.insert("events".into(), Json::Array(events.clone()));
            }
        }
        record
    }

    /// Keeps the record of a call that ran (or was refused), or hands back a held one,
    /// taken out of the registry: the client decides about it.
    fn add(&mut self, registry: &Registry, outcome: &Outcome) -> Option<Out> {
        self.count += 1;
        let Some(id) = &outcome.confirmation_id else {
            self.calls.push(outcome.to_json());
            return None;
        };
        // The gateway holds nothing for later: the client has the call now.
        let _ = registry.withdraw(id);
        let args = outcome.args.clone().unwrap_or_default();
        Some(Out::Call {
            id: format!("call_{id}"),
            name: outcome.name.clone(),
            arguments: Json::Object(args).to_string(),
        })
    }
}

/// Answers an executed request; `ran` gets the records of its calls as they run.
pub(crate) async fn handle(
    gateway: Arc<Gateway>,
    auth: Option<HeaderValue>,
    mut request: Request,
    registry: Arc<Registry>,
    ran: RanCalls,
) -> Result<Response, ApiError> {
    ran.start();
    let not_a_list = || ApiError::bad_request("'messages' must be a list");
    let messages = request.take_messages().ok_or_else(not_a_list)?;
    let messages: Vec<Box<RawValue>> =
        serde_json::from_str(messages.get()).map_err(|_| not_a_list())?;
    // A history that answers held calls (an assistant's `tool_calls`, `tool` messages)
    // reads as call text and result blocks, as in a request with tools; the other
    // messages pass as the text they came in.
    let mut messages = rewrite_raw(messages, &history_tools(&registry))?;
    let mut shown = RegistryPrompt::default();
    if gateway.options.policy.param_descriptions {
        shown = shown.with_param_descriptions();
    }
    let prompt = Prompt::new(registry.prompt(&CallContext::new(), &shown));
    add_prompt_raw(&mut messages, &prompt);
    request.set_messages(messages);
    let turn = Executed::new(&gateway, request, registry, ran);
    answer(gateway, auth, turn).await
}

/// The registry's functions for reading a history: the catalog its calls bind against,
/// with its root and its case setting.
fn history_tools(registry: &Registry) -> ToolSet {
    ToolSet::from_catalog(registry.catalog(&CallContext::new()))
}

/// What an executed turn keeps of its calls' outcomes.
#[derive(Debug, Default)]
struct Kept {
    record: Record,
    /// The result blocks of the answer under way, joined, for the next answer's history.
    output: String,
    /// The calls of the answer under way held for the user's confirmation.
    held_calls: Vec<Out>,
}

impl Kept {
    /// Takes in the outcome of a call of the answer under way: its record, its block for
    /// the next answer's history, or, held, the call for the client. The outcome, whose
    /// result may be large, is dropped here.
    fn take(&mut self, registry: &Registry, outcome: Outcome) {
        trace_outcome(&outcome);
        if let Some(held) = self.record.add(registry, &outcome) {
            self.held_calls.push(held);
            return;
        }
        // Blocks are joined as `format_results` joins them: a blank line between two.
        if !self.output.is_empty() {
            self.output.push('\n');
        }
        self.output.push_str(&outcome.block);
    }
}

/// Tells a `tracing` subscriber how a call the gateway ran ended: a tool that failed, or
/// a call refused, is a warning with the error the model reads.
fn trace_outcome(outcome: &Outcome) {
    let (call, id) = (outcome.name.as_str(), outcome.call_id.as_str());
    match (&outcome.result, outcome.state()) {
        (_, OutcomeState::Held { confirmation_id }) => {
            tracing::info!(call = %call, id = %id, confirmation_id = %confirmation_id, "call held for confirmation");
        }
        (Err(error), _) => {
            let error = trace::one_line(&error.to_string());
            tracing::warn!(call = %call, id = %id, "call failed: {error}");
        }
        (Ok(_), _) => tracing::info!(call = %call, id = %id, "call returned"),
    }
}

/// An executed turn: each answer is read once, by the registry's stream, whose calls run
/// as soon as each is complete (while the model may still be writing) and whose text goes
/// to the client as it comes, the calls taken out. An answer with calls is followed by
/// another, asked with their results, until an answer has none, a call is held, or
/// [`Options::max_steps`](super::TurnPolicy::max_steps) answers were read.
///
/// The answers run in the request's own conversation: what the model set in an earlier
/// answer (its truncate length) holds in the next, and never in another request, though
/// every request shares the registry. Unless the gateway keeps repeated calls
/// ([`Options::keep_repeated_calls`](super::TurnPolicy::keep_repeated_calls)), a call that
/// repeats an earlier one ends its answer, as in a tool turn: neither it nor anything
/// after it is read or run, and the next answer's history holds the answer up to there.
///
/// A request runs at most [`MAX_CALLS`] calls over all its answers, as a tool turn passes
/// on at most as many: the first call past them is refused, nothing after it is read, and
/// the turn ends there (`"stopped": "max_calls"`). Each call's result is dropped once its
/// record and its block are written (both cut at the truncate length), so what the turn
/// holds grows with the calls by at most that much each, never by a whole result.
struct Executed {
    registry: Arc<Registry>,
    /// The request for the next answer.
    request: Request,
    keep_repeated_calls: bool,
    max_steps: usize,
    /// The answer under way, made at its first piece.
    stream: Option<ResponseStream>,
    /// What the model set in the answers so far.
    settings: Settings,
    shaper: Shaper,
    /// The answer under way, as the model wrote it, for the next answer's history.
    answer: String,
    kept: Kept,
    /// The calls' events, sent by the registry's hook from wherever a call runs.
    events_tx: mpsc::UnboundedSender<Json>,
    events: mpsc::UnboundedReceiver<Json>,
    /// Whether a call was held: the turn ends with it as a `tool_calls` entry.
    held: bool,
}

impl Executed {
    fn new(
        gateway: &Gateway,
        request: Request,
        registry: Arc<Registry>,
        ran: RanCalls,
    ) -> Executed {
        let options = &gateway.options;
        let mut turn = Executed::with(
            request,
            registry,
            options.policy.keep_repeated_calls,
            options.policy.max_steps,
        );
        turn.kept.record.calls = ran;
        turn
    }

    fn with(
        request: Request,
        registry: Arc<Registry>,
        keep_repeated_calls: bool,
        max_steps: usize,
    ) -> Executed {
        let (events_tx, events) = mpsc::unbounded_channel();
        Executed {
            settings: registry.settings(),
            registry,
            request,
            keep_repeated_calls,
            max_steps,
            stream: None,
            shaper: Shaper::default(),
            answer: String::new(),
            kept: Kept::default(),
            events_tx,
            events,
            held: false,
        }
    }

    /// The stream of the answer under way.
    fn stream(&mut self) -> &mut ResponseStream {
        let Executed {
            stream,
            registry,
            settings,
            events_tx,
            keep_repeated_calls,
            kept,
            ..
        } = self;
        stream.get_or_insert_with(|| {
            let events = events_tx.clone();
            // Each outcome is taken in as it comes (`Kept::take`), not kept whole for
            // the answer's report.
            let stream = registry
                .stream()
                .with_settings(settings)
                .forget_outcomes()
                .limit_calls(MAX_CALLS, kept.record.count)
                .on_event(move |event: &CallEvent| {
                    if let Ok(event) = serde_json::to_value(event) {
                        // Unbounded: a sender that could wait would hold up the call; they
                        // are few per call.
                        let _ = events.send(event);
                    }
                });
            if *keep_repeated_calls {
                stream
            } else {
                stream.end_at_repeated_call()
            }
        })
    }

    /// Reads `chunk` of the answer (the end of it when `None`), releasing its text to `out`;
    /// its calls run once that text is passed on, their events going to `sink` as they
    /// happen. `false` when nobody is there any more.
    async fn read(
        &mut self,
        chunk: Option<&str>,
        out: &mut Vec<Out>,
        sink: &mut impl Sink,
    ) -> bool {
        self.stream();
        let Executed {
            stream: Some(stream),
            shaper,
            events,
            kept,
            registry,
            ..
        } = self
        else {
            return true;
        };
        let mut seen = |event: &Event| match event {
            Event::Text { text } => shaper.text(text, out),
            Event::InvalidUtf8 { bytes, .. } => shaper.text(&String::from_utf8_lossy(bytes), out),
            Event::CallStarted { .. } => {}
            // The registry runs (or refuses) it; it is not the client's text.
            Event::Call(_) | Event::Malformed { .. } => shaper.call(),
            _ => {}
        };
        let calls = match chunk {
            Some(chunk) => stream.read_str(chunk, &mut seen),
            None => stream.finish_reading(&mut seen),
        };
        if calls.is_empty() {
            return true;
        }
        // The text before the calls goes first.
        if !sink.release(std::mem::take(out)).await {
            return false;
        }
        let running = stream.run_read(calls, |outcome| kept.take(registry, outcome));
        tokio::pin!(running);
        loop {
            tokio::select! {
                biased;
                // A client that leaves while the tools run stops them.
                () = sink.gone() => return false,
                Some(event) = events.recv() => {
                    if !sink.events(waiting(event, events)).await {
                        return false;
                    }
                }
                () = &mut running => break,
            }
        }
        // Events sent while the last call ended.
        if let Ok(event) = events.try_recv() {
            if !sink.events(waiting(event, events)).await {
                return false;
            }
        }
        true
    }
}

/// `first` and every other event already waiting.
fn waiting(first: Json, more: &mut mpsc::UnboundedReceiver<Json>) -> Vec<Json> {
    let mut events = vec![first];
    while let Ok(event) = more.try_recv() {
        events.push(event);
    }
    events
}

impl Reader for Executed {
    async fn feed(&mut self, delta: &str, out: &mut Vec<Out>, sink: &mut impl Sink) -> bool {
        if self.answer_over() {
            return true;
        }
        self.answer.push_str(delta);
        self.read(Some(delta), out, sink).await
    }

    fn quiet(&self) -> bool {
        false
    }

    /// A repeated call, or the first call past [`MAX_CALLS`], ended the answer.
    fn answer_over(&self) -> bool {
        self.stream.as_ref().is_some_and(|stream| {
            stream.repeated_at().is_some() || stream.call_limit_passed_at().is_some()
        })
    }

    fn ends_at_repeat(&self) -> bool {
        !self.keep_repeated_calls
    }
}

impl Rounds for Executed {
    fn request(&self) -> &Request {
        &self.request
    }

    fn take_counted_usage(&mut self) -> Option<Json> {
        None
    }

    async fn end_round(&mut self, out: &mut Vec<Out>, sink: &mut impl Sink) -> Option<RoundEnd> {
        if !self.answer_over() && !self.read(None, out, sink).await {
            return None;
        }
        // `read` made the stream, even for an answer of no text.
        let stream = self.stream.take()?;
        let past_limit = stream.call_limit_passed_at().is_some();
        let end = stream.ended();
        self.kept.record.steps += 1;
        self.shaper.separate("\n\n");
        let mut answer = std::mem::take(&mut self.answer);
        let output = std::mem::take(&mut self.kept.output);
        if let Some(at) = end.repeated_at {
            let cut = usize::try_from(at.start).unwrap_or(answer.len());
            if answer.is_char_boundary(cut) {
                answer.truncate(cut);
                answer.truncate(answer.trim_end().len());
            }
        }
        self.settings.clone_from(&end.report.settings);
        if !self.kept.held_calls.is_empty() {
            self.held = true;
            out.append(&mut self.kept.held_calls);
            return Some(RoundEnd::Done);
        }
        if end.report.call_count == 0 {
            return Some(RoundEnd::Done);
        }
        if past_limit {
            // No call of a next answer could run.
            self.kept.record.stopped = Some("max_calls");
            return Some(RoundEnd::Done);
        }
        if self.kept.record.steps >= self.max_steps {
            self.kept.record.stopped = Some("max_steps");
            return Some(RoundEnd::Done);
        }
        self.request
            .push_message(&json!({"role": "assistant", "content": answer}));
        self.request
            .push_message(&json!({"role": "user", "content": output}));
        Some(RoundEnd::Repair)
    }

    /// Never called: every answer of an executed turn is the client's, so a failed one is
    /// the caller's to answer.
    fn give_up(&mut self, _out: &mut Vec<Out>) {}

    /// `tool_calls` when a call was held, else the upstream's reason (`stop` if none).
    fn finish_reason(&self, upstream: Option<&str>) -> String {
        if self.held {
            String::from("tool_calls")
        } else {
            upstream.unwrap_or("stop").to_owned()
        }
    }

    /// What the turn did, as `"atfunc": {"steps", "calls", "stopped", "events"}`: the
    /// events for an answer sent whole (a stream sends them as they happen).
    fn extra(&mut self, events: Option<Vec<Json>>) -> Map<String, Json> {
        self.kept.record.events = events;
        let mut extra = Map::new();
        extra.insert("atfunc".into(), self.kept.record.to_json());
        extra
    }

    /// The calls that ran, as `error.atfunc_executed`.
    fn report(&self, error: ApiError) -> ApiError {
        self.kept.record.calls.report(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::reply::Meta;
    use crate::serve::rounds::Collect;
    use atfunc::bind::NameMatch;
    use atfunc::Interface;
    use atfunc_tools::FnBox;

    #[test]
    fn the_history_is_read_with_the_registrys_case_setting_and_root() {
        let registry = Registry::with_name_match(NameMatch::ExactCase);
        registry
            .register(FnBox::new("clock").declare(Interface::new("now").in_domain("clock")))
            .unwrap();
        registry.set_root("clock").unwrap();
        let tools = history_tools(&registry);
        assert!(tools.catalog.case_sensitive());
        assert_eq!(tools.catalog.root(), Some("clock"));
        assert!(!history_tools(&Registry::new()).catalog.case_sensitive());
    }

    fn adder() -> Arc<Registry> {
        let registry = Registry::new();
        registry
            .register(
                FnBox::new("calc").function(
                    Interface::new("add")
                        .in_domain("calc")
                        .param(atfunc::Param::new("a", atfunc::ParamType::Number).required())
                        .param(atfunc::Param::new("b", atfunc::ParamType::Number).required()),
                    |args, _ctx| Ok(json!(args.get::<f64>("a")? + args.get::<f64>("b")?)),
                ),
            )
            .unwrap();
        Arc::new(registry)
    }

    /// Reads `answers` through an executed turn, each fed in pieces of `size` bytes: the
    /// text the client gets, the calls run, and the last request's messages.
    async fn executed(answers: &[&str], size: usize) -> (Json, Vec<Json>, Vec<Json>) {
        let (text, record, messages) = executed_turn(answers, size).await;
        let calls = record["calls"].as_array().cloned().unwrap_or_default();
        (text, calls, messages)
    }

    /// [`executed`], with the turn's whole record (`atfunc`).
    async fn executed_turn(answers: &[&str], size: usize) -> (Json, Json, Vec<Json>) {
        let request = Request::parse(br#"{"model": "m", "messages": []}"#).unwrap();
        let mut turn = Executed::with(request, adder(), false, 8);
        let mut sink = Collect::new(Meta::for_model(None));
        for answer in answers {
            let mut out = Vec::new();
            for piece in answer.as_bytes().chunks(size) {
                let piece = std::str::from_utf8(piece).unwrap();
                assert!(turn.feed(piece, &mut out, &mut sink).await);
                if turn.answer_over() {
                    break;
                }
            }
            let end = turn.end_round(&mut out, &mut sink).await;
            assert!(sink.release(out).await);
            if end == Some(RoundEnd::Done) {
                break;
            }
        }
        let text: String = sink
            .out
            .iter()
            .filter_map(|out| match out {
                Out::Text(text) => Some(text.as_str()),
                Out::Call { .. } => None,
            })
            .collect();
        let messages = turn
            .request
            .messages()
            .iter()
            .map(|m| serde_json::from_str(m.get()).unwrap())
            .collect();
        let record = turn.extra(None).remove("atfunc").unwrap_or_default();
        (Json::String(text), record, messages)
    }

    /// Every chunking gives the same text, calls and history: an answer read up to its
    /// first repeated call (bound, so `@calc.add(a=1, b=2)` repeats `@calc.add(1, 2)`),
    /// nothing after it read, run or shown, and the next answer read afresh.
    #[tokio::test]
    async fn an_executed_answer_reads_alike_at_every_chunking() {
        let answers = [
            "Adding. @calc.add(1, 2) and @calc.add(2, 2)\n@calc.add(a=1, b=2) more text @calc.add(",
            "So 3 and 4. @calc.add(1, 2)",
            "Done.",
        ];
        let whole = executed(&answers, usize::MAX).await;
        assert_eq!(whole.0, "Adding. and\n\nSo 3 and 4.\n\nDone.");
        let results: Vec<&Json> = whole.1.iter().map(|c| &c["result"]).collect();
        assert_eq!(results, [&json!(3.0), &json!(4.0), &json!(3.0)]);
        assert_eq!(
            whole.2[0],
            json!({"role": "assistant", "content": "Adding. @calc.add(1, 2) and @calc.add(2, 2)"})
        );
        for size in [1, 3, 7] {
            assert_eq!(
                executed(&answers, size).await,
                whole,
                "pieces of {size} bytes"
            );
        }
    }

    /// An executed request runs at most 1000 calls, as a tool turn passes on at most 1000:
    /// the first call past them is not run, the answer is read no further, and the turn
    /// ends there, saying why, rather than asking the model again.
    #[tokio::test]
    async fn an_executed_request_runs_at_most_max_calls() {
        let first: String = (0..600).map(|i| format!("@calc.add({i}, 1)\n")).collect();
        let second: String = (600..1005)
            .map(|i| format!("@calc.add({i}, 1)\n"))
            .collect();
        let answers = [first.as_str(), second.as_str(), "Done."];
        let (text, record, messages) = executed_turn(&answers, usize::MAX).await;
        assert_eq!(record["steps"], 2);
        assert_eq!(record["stopped"], "max_calls");
        let calls = record["calls"].as_array().unwrap();
        assert_eq!(calls.len(), MAX_CALLS + 1);
        assert_eq!(calls[MAX_CALLS - 1]["result"], json!(1000.0));
        let refused = &calls[MAX_CALLS];
        assert_eq!(refused["name"], "calc.add");
        let error = refused["error"].as_str().unwrap();
        assert!(error.contains("already ran 1000 calls"), "{error}");
        assert!(error.starts_with("Not run"), "{error}");
        // Not asked again: the history holds the first answer's round only.
        assert_eq!(messages.len(), 2);
        assert_eq!(text, "");
    }
}
