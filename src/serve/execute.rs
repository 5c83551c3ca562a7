//! Executed turns: the gateway runs the model's calls in its registry and asks the model
//! again with the results, until an answer has no calls, or has a call that needs the
//! user's confirmation: that call is not run but handed to the client as a `tool_calls`
//! entry, and the turn ends there.

use super::answer::{Out, Prose};
use super::history::{add_prompt_raw, rewrite_raw};
use super::reply::{
    channel_body, error_event, sse_response, whole_answer, ChunkWriter, Meta, Usage,
};
use super::request::Request;
use super::rounds::{read_answer, whole_answer_body, Collect, Rounds, StreamEnd};
use super::tools::ToolSet;
use super::{ApiError, Gateway};
use crate::execute::{CallContext, CallEvent, ExecutionReport, Registry, RegistryPrompt, Settings};
use axum::body::Bytes;
use axum::http::HeaderValue;
use axum::response::Response;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value as Json};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::mpsc;

/// What an executed turn did, for the `atfunc` field of the answer.
#[derive(Debug, Default)]
struct Record {
    steps: usize,
    calls: Vec<Json>,
    stopped: bool,
    /// Every call event, for an answer sent whole (a stream sends them as they happen).
    events: Option<Vec<Json>>,
}

impl Record {
    fn to_json(&self) -> Json {
        let mut record = json!({"steps": self.steps, "calls": self.calls});
        if let Json::Object(map) = &mut record {
            if self.stopped {
                map.insert("stopped".into(), json!("max_steps"));
            }
            if let Some(events) = &self.events {
                map.insert("events".into(), Json::Array(events.clone()));
            }
        }
        record
    }

    /// Keeps the calls that ran and hands back the held ones, taken out of the registry:
    /// the client decides about them.
    fn add(&mut self, registry: &Registry, report: &ExecutionReport) -> Vec<Out> {
        let mut held = Vec::new();
        for outcome in &report.calls {
            let Some(id) = &outcome.confirmation_id else {
                self.calls.push(outcome.to_json());
                continue;
            };
            // The gateway holds nothing for later: the client has the call now.
            let _ = registry.withdraw(id);
            let args = outcome.args.clone().unwrap_or_default();
            held.push(Out::Call {
                id: format!("call_{id}"),
                name: outcome.name.clone(),
                arguments: Json::Object(args).to_string(),
            });
        }
        held
    }
}

pub(crate) async fn handle(
    gateway: Arc<Gateway>,
    auth: Option<HeaderValue>,
    mut request: Request,
    registry: Arc<Registry>,
) -> Result<Response, ApiError> {
    let not_a_list = || ApiError::bad_request("'messages' must be a list");
    let messages = request.take_messages().ok_or_else(not_a_list)?;
    let messages: Vec<Box<RawValue>> =
        serde_json::from_str(messages.get()).map_err(|_| not_a_list())?;
    // A history that answers held calls (an assistant's `tool_calls`, `tool` messages)
    // reads as call text and result blocks, as in a request with tools; the other
    // messages pass as the text they came in.
    let mut messages = rewrite_raw(messages, &history_tools(&registry))?;
    let mut shown = RegistryPrompt::default();
    if gateway.options.param_descriptions {
        shown = shown.with_param_descriptions();
    }
    add_prompt_raw(&mut messages, &registry.prompt(&CallContext::new(), &shown));
    request.set_messages(messages);
    if request.get("stream") == Some(Json::Bool(true)) {
        streamed(gateway, auth, request, registry).await
    } else {
        whole(gateway, auth, request, registry).await
    }
}

/// The registry's functions for reading a history: the catalog its calls bind against,
/// with its root and its case setting.
fn history_tools(registry: &Registry) -> ToolSet {
    ToolSet::from_catalog(registry.catalog(&CallContext::new()))
}

/// Runs the calls of one answer in the request's own conversation: what the model set in
/// an earlier step (its truncate length) holds in this one, and never in another request,
/// though every request shares the registry. Each call event goes to `events` as JSON.
///
/// Unless the gateway keeps repeated calls ([`GatewayOptions::keep_repeated_calls`]), a call
/// that repeats an earlier one ends the answer, as in a tool turn: `text` is cut before
/// it, so the next step's history holds the answer up to there.
///
/// [`GatewayOptions::keep_repeated_calls`]: super::GatewayOptions::keep_repeated_calls
async fn run_answer(
    gateway: &Gateway,
    registry: &Registry,
    text: &mut String,
    settings: &mut Settings,
    events: impl Fn(Json) + Send + Sync + 'static,
) -> ExecutionReport {
    let mut stream =
        registry
            .stream()
            .with_settings(settings)
            .on_event(move |event: &CallEvent| {
                if let Ok(event) = serde_json::to_value(event) {
                    events(event);
                }
            });
    if !gateway.options.keep_repeated_calls {
        stream = stream.end_at_repeated_call();
    }
    stream.feed_str(text).await;
    let end = stream.finish().await;
    if let Some(at) = end.repeated_at {
        let cut = usize::try_from(at.start).unwrap_or(text.len());
        if text.is_char_boundary(cut) {
            text.truncate(cut);
            text.truncate(text.trim_end().len());
        }
    }
    settings.clone_from(&end.report.settings);
    end.report
}

/// Adds an answer and its result blocks to the conversation.
fn push_step(request: &mut Request, answer: String, results: String) {
    request.push_message(&json!({"role": "assistant", "content": answer}));
    request.push_message(&json!({"role": "user", "content": results}));
}

/// The reader of an executed turn's answers: unless the gateway keeps repeated calls, an
/// answer ends at its first repeat.
fn prose(gateway: &Gateway, registry: &Registry) -> Prose {
    let mut prose = Prose::new(registry.parser_config());
    if !gateway.options.keep_repeated_calls {
        prose.end_at_repeats(registry.catalog(&CallContext::new()));
    }
    prose
}

/// An executed turn answered whole. As in a tool turn answered whole, each answer is
/// asked for as a stream (its usage included) where a repeated call ends it, so that a
/// model writing its calls again and again is stopped at the repeat.
async fn whole(
    gateway: Arc<Gateway>,
    auth: Option<HeaderValue>,
    mut request: Request,
    registry: Arc<Registry>,
) -> Result<Response, ApiError> {
    let mut prose = prose(&gateway, &registry);
    let mut settings = registry.settings();
    let mut answer = Collect::new(Meta::for_model(request.get("model")));
    let mut record = Record::default();
    let mut usage = Usage::default();
    let events = Arc::new(Mutex::new(Vec::new()));
    let mut held;
    let finish = loop {
        let body = whole_answer_body(&request, &prose);
        let mut response = gateway.upstream.chat_checked(body, auth.as_ref()).await?;
        let mut finish = None;
        let read = read_answer(
            &gateway.upstream,
            &mut prose,
            &mut response,
            &mut answer,
            &mut usage,
            &mut finish,
        )
        .await;
        // An upstream still writing (past a repeated call) is stopped now.
        drop(response);
        // `Gone` is never seen: a whole answer's client that leaves drops this handler.
        if let StreamEnd::Failed(error) = read {
            return Err(error);
        }
        record.steps += 1;
        let finish = finish.unwrap_or_else(|| String::from("stop"));
        let mut text = prose.end_answer(&mut answer.out);
        let sink = Arc::clone(&events);
        let report = run_answer(
            &gateway,
            &registry,
            &mut text,
            &mut settings,
            move |event| {
                sink.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(event);
            },
        )
        .await;
        held = record.add(&registry, &report);
        if !held.is_empty() {
            break String::from("tool_calls");
        }
        if report.call_count == 0 {
            break finish;
        }
        if record.steps >= gateway.options.max_steps {
            record.stopped = true;
            break finish;
        }
        push_step(&mut request, text, report.output);
    };
    record.events = Some(std::mem::take(
        &mut *events.lock().unwrap_or_else(PoisonError::into_inner),
    ));
    let mut extra = Map::new();
    extra.insert("atfunc".into(), record.to_json());
    answer.out.append(&mut held);
    Ok(whole_answer(
        &answer.meta,
        answer.out,
        answer.reasoning,
        &finish,
        extra,
        usage,
    ))
}

async fn streamed(
    gateway: Arc<Gateway>,
    auth: Option<HeaderValue>,
    mut request: Request,
    registry: Arc<Registry>,
) -> Result<Response, ApiError> {
    let mut response = gateway
        .upstream
        .chat_checked(Bytes::from(request.body(Some(true))), auth.as_ref())
        .await?;
    let (tx, body) = channel_body();
    tokio::spawn(async move {
        let mut writer = ChunkWriter::new(Meta::for_model(request.get("model")));
        let mut rounds = Rounds {
            gateway: &gateway,
            auth: auth.as_ref(),
            tx: &tx,
        };
        let mut prose = prose(&gateway, &registry);
        let mut settings = registry.settings();
        let mut record = Record::default();
        let mut usage = Usage::default();
        let mut finish = None;
        loop {
            match rounds
                .read(
                    &mut prose,
                    &mut response,
                    &mut writer,
                    &mut usage,
                    &mut finish,
                )
                .await
            {
                StreamEnd::Done => {}
                StreamEnd::Gone => return,
                StreamEnd::Failed(error) => {
                    tx.send(error_event(&error)).await;
                    return;
                }
            }
            record.steps += 1;
            let mut out = Vec::new();
            let mut text = prose.end_answer(&mut out);
            if !rounds.send(writer.pieces(out)).await {
                return;
            }
            // Each call's events go to the client as they happen (unbounded: a sender
            // that could wait would hold up the call; they are few per call).
            let (events_tx, mut events) = mpsc::unbounded_channel();
            let report = {
                let running = run_answer(
                    &gateway,
                    &registry,
                    &mut text,
                    &mut settings,
                    move |event| {
                        let _ = events_tx.send(event);
                    },
                );
                tokio::pin!(running);
                loop {
                    // A client that leaves while the tools run stops them.
                    tokio::select! {
                        biased;
                        () = tx.closed() => return,
                        Some(event) = events.recv() => {
                            let chunk = events_chunk(&mut writer, event, &mut events);
                            if !rounds.send(vec![chunk]).await {
                                return;
                            }
                        }
                        report = &mut running => break report,
                    }
                }
            };
            // Events sent while the last call ended.
            if let Ok(event) = events.try_recv() {
                let chunk = events_chunk(&mut writer, event, &mut events);
                if !rounds.send(vec![chunk]).await {
                    return;
                }
            }
            let held = record.add(&registry, &report);
            if !held.is_empty() {
                if !rounds.send(writer.pieces(held)).await {
                    return;
                }
                finish = Some(String::from("tool_calls"));
                break;
            }
            if report.call_count == 0 {
                break;
            }
            if record.steps >= gateway.options.max_steps {
                record.stopped = true;
                break;
            }
            push_step(&mut request, text, report.output);
            let next = gateway
                .upstream
                .chat_checked(Bytes::from(request.body(Some(true))), auth.as_ref())
                .await;
            match next {
                Ok(next) => response = next,
                Err(error) => {
                    tx.send(error_event(&error)).await;
                    return;
                }
            }
        }
        let mut extra = Map::new();
        extra.insert("atfunc".into(), record.to_json());
        let reason = finish.unwrap_or_else(|| String::from("stop"));
        let end = writer.end(&request, &reason, extra, usage);
        rounds.send(end).await;
    });
    Ok(sse_response(body))
}

/// One chunk with `first` and every other event already waiting, as
/// `"atfunc": {"events": [...]}`.
fn events_chunk(
    writer: &mut ChunkWriter,
    first: Json,
    more: &mut mpsc::UnboundedReceiver<Json>,
) -> axum::body::Bytes {
    let mut events = vec![first];
    while let Ok(event) = more.try_recv() {
        events.push(event);
    }
    let mut fields = Map::new();
    fields.insert("atfunc".into(), json!({ "events": events }));
    writer.fields(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execute::FnBox;
    use crate::format::CallRecord;
    use crate::parse::Event;
    use crate::render::PromptOptions;
    use crate::translator::{Atfunc, Translator};
    use crate::Interface;

    /// The atfunc protocol with names matched exactly.
    struct Exact;

    impl Translator for Exact {
        fn name(&self) -> &str {
            "exact"
        }

        fn render(&self, interface: &Interface, options: &PromptOptions) -> String {
            Atfunc.render(interface, options)
        }

        fn parse(&self, text: &str) -> Vec<Event> {
            Atfunc.parse(text)
        }

        fn format_results(&self, records: &[CallRecord]) -> String {
            Atfunc.format_results(records)
        }
    }

    #[test]
    fn the_history_is_read_with_the_registrys_case_setting_and_root() {
        let registry = Registry::with_translator(Arc::new(Exact));
        registry
            .register(FnBox::new("clock").declare(Interface::new("now").in_domain("clock")))
            .unwrap();
        registry.set_root("clock").unwrap();
        let tools = history_tools(&registry);
        assert!(tools.catalog.case_sensitive());
        assert_eq!(tools.catalog.root(), Some("clock"));
        assert!(!history_tools(&Registry::new()).catalog.case_sensitive());
    }
}
