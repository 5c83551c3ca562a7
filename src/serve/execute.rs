//! Executed turns: the gateway runs the model's calls in its registry and asks the model
//! again with the results, until an answer has no calls.

use super::answer::{Out, Prose, Reader};
use super::chat::{
    channel_body, error_event, json_response, request_body, sse_response, ChunkWriter, Meta,
    Rounds, StreamEnd, Usage,
};
use super::history::{add_prompt, content_text};
use super::{ApiError, Gateway};
use crate::execute::{CallContext, ExecutionReport, Outcome, Registry, RegistryPrompt, Settings};
use axum::http::HeaderValue;
use axum::response::Response;
use serde_json::{json, Map, Value as Json};
use std::sync::Arc;

/// What an executed turn did, for the `atfunc` field of the answer.
#[derive(Debug, Default)]
struct Record {
    steps: usize,
    calls: Vec<Json>,
    stopped: bool,
}

impl Record {
    fn to_json(&self) -> Json {
        let mut record = json!({"steps": self.steps, "calls": self.calls});
        if let (true, Json::Object(map)) = (self.stopped, &mut record) {
            map.insert("stopped".into(), json!("max_steps"));
        }
        record
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
    let mut messages = messages.clone();
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
/// though every request shares the registry.
async fn run_answer(registry: &Registry, text: &str, settings: &mut Settings) -> ExecutionReport {
    let mut stream = registry.stream().with_settings(settings);
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
        let report = run_answer(&registry, &text, &mut settings).await;
        record
            .calls
            .extend(report.calls.iter().map(Outcome::to_json));
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
    let mut reply = json!({
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
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
            // A client that leaves while the tools run stops them.
            let report = tokio::select! {
                biased;
                () = tx.closed() => return,
                report = run_answer(&registry, &text, &mut settings) => report,
            };
            record
                .calls
                .extend(report.calls.iter().map(Outcome::to_json));
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
