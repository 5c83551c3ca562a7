//! Executed turns: the gateway runs the model's calls in its registry and asks the model
//! again with the results, until an answer has no calls, or has a call that needs the
//! user's confirmation: that call is not run but handed to the client as a `tool_calls`
//! entry, and the turn ends there.

use super::answer::{Out, Prose, Reader};
use super::history::{add_prompt, content_text, rewrite};
use super::reply::{
    channel_body, error_event, json_response, request_body, sse_response, tool_call_json,
    ChunkWriter, Meta, Usage,
};
use super::rounds::{Rounds, StreamEnd};
use super::tools::ToolSet;
use super::{ApiError, Gateway};
use crate::bind::Catalog;
use crate::execute::{CallContext, CallEvent, ExecutionReport, Registry, RegistryPrompt, Settings};
use axum::http::HeaderValue;
use axum::response::Response;
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
    mut request: Map<String, Json>,
    registry: Arc<Registry>,
) -> Result<Response, ApiError> {
    let Some(Json::Array(messages)) = request.get("messages") else {
        return Err(ApiError::bad_request("'messages' must be a list"));
    };
    // A history that answers held calls (an assistant's `tool_calls`, `tool` messages)
    // reads as call text and result blocks, as in a request with tools.
    let interfaces = registry.interfaces(&CallContext::new());
    let mut catalog = Catalog::new(interfaces);
    if let Some(root) = registry.root() {
        catalog = catalog.with_root(root);
    }
    let mut messages = rewrite(
        &Json::Array(messages.clone()),
        &ToolSet::from_catalog(catalog),
    )?;
    add_prompt(
        &mut messages,
        &registry.prompt(&CallContext::new(), &RegistryPrompt::default()),
    );
    request.insert("messages".into(), Json::Array(messages));
    if request.get("stream") == Some(&Json::Bool(true)) {
        streamed(gateway, auth, request, registry).await
    } else {
        whole(gateway, auth, request, registry).await
    }
}

/// Runs the calls of one answer in the request's own conversation: what the model set in
/// an earlier step (its truncate length) holds in this one, and never in another request,
/// though every request shares the registry. Each call event goes to `events` as JSON.
async fn run_answer(
    registry: &Registry,
    text: &str,
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
    stream.feed_str(text).await;
    let report = stream.finish().await.report;
    settings.clone_from(&report.settings);
    report
}

/// Adds an answer and its result blocks to the conversation.
fn push_step(request: &mut Map<String, Json>, answer: String, results: String) {
    if let Some(Json::Array(messages)) = request.get_mut("messages") {
        messages.push(json!({"role": "assistant", "content": answer}));
        messages.push(json!({"role": "user", "content": results}));
    }
}

async fn whole(
    gateway: Arc<Gateway>,
    auth: Option<HeaderValue>,
    mut request: Map<String, Json>,
    registry: Arc<Registry>,
) -> Result<Response, ApiError> {
    let mut prose = Prose::new(registry.parser_config());
    let mut settings = registry.settings();
    let mut out = Vec::new();
    let mut record = Record::default();
    let mut meta = None;
    let mut usage = Usage::default();
    let events = Arc::new(Mutex::new(Vec::new()));
    let mut held;
    let finish = loop {
        let body = request_body(&request, false);
        let answer = gateway.upstream.chat_json(body, auth.as_ref()).await?;
        if meta.is_none() {
            meta = Some(Meta::from_answer(&answer, &request));
        }
        usage.add(answer.get("usage"));
        record.steps += 1;
        let choice = answer.pointer("/choices/0");
        let text = content_text(
            choice
                .and_then(|c| c.get("message"))
                .and_then(|m| m.get("content")),
        );
        let finish = choice
            .and_then(|c| c.get("finish_reason"))
            .and_then(Json::as_str)
            .unwrap_or("stop")
            .to_owned();
        prose.feed(&text, &mut out);
        let text = prose.end_answer(&mut out);
        let sink = Arc::clone(&events);
        let report = run_answer(&registry, &text, &mut settings, move |event| {
            sink.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(event);
        })
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
    let meta = meta.unwrap_or_else(|| Meta::new(&request));
    let text: String = out
        .into_iter()
        .filter_map(|piece| match piece {
            Out::Text(text) => Some(text),
            Out::Call { .. } => None,
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": text});
    let calls: Vec<Json> = held
        .into_iter()
        .filter_map(|piece| match piece {
            Out::Call {
                id,
                name,
                arguments,
            } => Some(tool_call_json(None, id, name, arguments)),
            Out::Text(_) => None,
        })
        .collect();
    if let (false, Json::Object(map)) = (calls.is_empty(), &mut message) {
        if text.is_empty() {
            map.insert("content".into(), Json::Null);
        }
        map.insert("tool_calls".into(), Json::Array(calls));
    }
    record.events = Some(std::mem::take(
        &mut *events.lock().unwrap_or_else(PoisonError::into_inner),
    ));
    let mut reply = json!({
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "choices": [{"index": 0, "message": message,
                     "logprobs": null, "finish_reason": finish}],
        "atfunc": record.to_json(),
    });
    if let (Some(usage), Json::Object(map)) = (usage.into_json(), &mut reply) {
        map.insert("usage".into(), usage);
    }
    Ok(json_response(&reply))
}

async fn streamed(
    gateway: Arc<Gateway>,
    auth: Option<HeaderValue>,
    mut request: Map<String, Json>,
    registry: Arc<Registry>,
) -> Result<Response, ApiError> {
    let response = gateway
        .upstream
        .chat(request_body(&request, true), auth.as_ref())
        .await?;
    let mut response = gateway.upstream.check(response).await?;
    let (tx, body) = channel_body();
    tokio::spawn(async move {
        let mut writer = ChunkWriter::new(Meta::new(&request));
        let mut rounds = Rounds {
            gateway: &gateway,
            auth: auth.as_ref(),
            tx: &tx,
        };
        let mut prose = Prose::new(registry.parser_config());
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
            let text = prose.end_answer(&mut out);
            if !rounds.send(writer.pieces(out)).await {
                return;
            }
            // Each call's events go to the client as they happen (unbounded: a sender
            // that could wait would hold up the call; they are few per call).
            let (events_tx, mut events) = mpsc::unbounded_channel();
            let report = {
                let running = run_answer(&registry, &text, &mut settings, move |event| {
                    let _ = events_tx.send(event);
                });
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
            let next = match gateway
                .upstream
                .chat(request_body(&request, true), auth.as_ref())
                .await
            {
                Ok(next) => gateway.upstream.check(next).await,
                Err(error) => Err(error),
            };
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
