//! The answers in OpenAI's format: the chunks of a streamed answer ([`ChunkWriter`]), the
//! tool calls in them, the id, time and model ([`Meta`]), the usage added up over rounds
//! ([`Usage`]), and the response bodies that carry them. The whole-answer path
//! (`chat`) and the executed path (`execute`) both write through this module.

use super::sse;
use super::ApiError;
use crate::turn::Out;
use crate::turn::Request;
use axum::body::{Body, Bytes};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value as Json};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

/// Writes chunks of a streamed answer.
pub(crate) struct ChunkWriter {
    pub(crate) meta: Meta,
    /// Whether the first chunk (the one with the role) was written.
    pub(crate) started: bool,
    /// The index of the next tool call.
    next_call: usize,
}

impl ChunkWriter {
    pub(crate) fn new(meta: Meta) -> ChunkWriter {
        ChunkWriter {
            meta,
            started: false,
            next_call: 0,
        }
    }

    /// A chunk with `delta`; the first one also says the role.
    pub(crate) fn delta(&mut self, mut delta: Json) -> Bytes {
        if !self.started {
            self.started = true;
            if let Json::Object(map) = &mut delta {
                map.insert("role".into(), json!("assistant"));
            }
        }
        self.chunk(json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": null}]))
    }

    /// A chunk with an empty delta and `fields` beside `choices` (`atfunc` with the
    /// events of an executed turn): OpenAI's clients keep fields they do not know, and a
    /// client that adds up deltas finds nothing to add.
    pub(crate) fn fields(&mut self, fields: Map<String, Json>) -> Bytes {
        let mut delta = Map::new();
        if !self.started {
            self.started = true;
            delta.insert("role".into(), json!("assistant"));
        }
        let mut chunk = self
            .frame(json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": null}]));
        if let Json::Object(map) = &mut chunk {
            map.extend(fields);
        }
        sse::event(&chunk)
    }

    /// The chunks for `pieces`: text as `content`, each call as one `tool_calls` entry.
    pub(crate) fn pieces(&mut self, pieces: Vec<Out>) -> Vec<Bytes> {
        let mut chunks = Vec::with_capacity(pieces.len());
        for piece in pieces {
            let delta = match piece {
                Out::Text(text) => json!({"content": text}),
                Out::Call {
                    id,
                    name,
                    arguments,
                } => {
                    let index = self.next_call;
                    self.next_call += 1;
                    json!({"tool_calls": [tool_call_json(Some(index), id, name, arguments)]})
                }
            };
            chunks.push(self.delta(delta));
        }
        chunks
    }

    /// The events that end the stream of `request`: the last chunk (with `extra` beside
    /// `choices`), the usage, and `[DONE]`. The usage has a chunk of its own, with no
    /// choices, only when the client asked for it (`stream_options.include_usage`), as
    /// OpenAI sends it; otherwise it goes on the last chunk, as llama.cpp's server puts it,
    /// so that every chunk the client did not ask for has a choice.
    pub(crate) fn end(
        &mut self,
        request: &Request,
        reason: &str,
        extra: Map<String, Json>,
        usage: Usage,
    ) -> Vec<Bytes> {
        let asked = request
            .get("stream_options")
            .and_then(|options| options.get("include_usage").cloned())
            == Some(Json::Bool(true));
        self.end_with(asked, reason, extra, usage)
    }

    /// [`ChunkWriter::end`] for a request that `asked` for the usage chunk, or not.
    fn end_with(
        &mut self,
        asked: bool,
        reason: &str,
        mut extra: Map<String, Json>,
        usage: Usage,
    ) -> Vec<Bytes> {
        let usage = usage.into_json();
        let mut end = Vec::with_capacity(3);
        match usage {
            Some(usage) if asked => {
                end.push(self.finish_with(reason, extra));
                end.push(self.usage(usage));
            }
            Some(usage) => {
                extra.insert("usage".into(), usage);
                end.push(self.finish_with(reason, extra));
            }
            None => end.push(self.finish_with(reason, extra)),
        }
        end.push(sse::done());
        end
    }

    /// The usage chunk, after the last one, as OpenAI sends it with `include_usage`.
    fn usage(&self, usage: Json) -> Bytes {
        let mut chunk = self.frame(json!([]));
        if let Json::Object(map) = &mut chunk {
            map.insert("usage".into(), usage);
        }
        sse::event(&chunk)
    }

    /// The last chunk with fields beside `choices` (`atfunc` for an executed turn).
    fn finish_with(&mut self, reason: &str, extra: Map<String, Json>) -> Bytes {
        let mut delta = Map::new();
        if !self.started {
            self.started = true;
            delta.insert("role".into(), json!("assistant"));
        }
        let mut chunk = self.frame(
            json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": reason}]),
        );
        if let Json::Object(map) = &mut chunk {
            map.extend(extra);
        }
        sse::event(&chunk)
    }

    fn chunk(&self, choices: Json) -> Bytes {
        sse::event(&self.frame(choices))
    }

    fn frame(&self, choices: Json) -> Json {
        json!({
            "id": self.meta.id,
            "object": "chat.completion.chunk",
            "created": self.meta.created,
            "model": self.meta.model,
            "choices": choices,
        })
    }
}

/// `{"id", "type": "function", "function": {"name", "arguments"}}`, with `index` in a
/// stream.
pub(crate) fn tool_call_json(
    index: Option<usize>,
    id: String,
    name: String,
    arguments: String,
) -> Json {
    let mut call =
        json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}});
    if let (Some(index), Json::Object(map)) = (index, &mut call) {
        map.insert("index".into(), json!(index));
    }
    call
}

/// The id, time and model of an answer: the upstream's when it gave them.
#[derive(Debug, Clone)]
pub(crate) struct Meta {
    pub(crate) id: String,
    pub(crate) created: u64,
    pub(crate) model: Json,
}

impl Meta {
    /// Metadata for an answer of `model` (the request's, if it named one).
    pub(crate) fn for_model(model: Option<Json>) -> Meta {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let suffix = atfunc::interop::CallIds::random().next_id();
        Meta {
            id: format!("chatcmpl-{}", suffix.trim_start_matches("call_")),
            created: now.as_secs(),
            model: model.unwrap_or(Json::Null),
        }
    }

    pub(crate) fn update(&mut self, answer: &Json) {
        if let Some(id) = answer.get("id").and_then(Json::as_str) {
            self.id = id.to_owned();
        }
        if let Some(created) = answer.get("created").and_then(Json::as_u64) {
            self.created = created;
        }
        if let Some(model) = answer.get("model").filter(|m| m.is_string()) {
            self.model = model.clone();
        }
    }
}

/// Token counts added up over the upstream answers of a turn.
#[derive(Debug, Default)]
pub(crate) struct Usage {
    total: Option<Map<String, Json>>,
}

impl Usage {
    pub(crate) fn add(&mut self, usage: Option<&Json>) {
        let Some(Json::Object(usage)) = usage else {
            return;
        };
        let Some(total) = &mut self.total else {
            self.total = Some(usage.clone());
            return;
        };
        for key in ["prompt_tokens", "completion_tokens", "total_tokens"] {
            if let (Some(a), Some(b)) = (
                total.get(key).and_then(Json::as_u64),
                usage.get(key).and_then(Json::as_u64),
            ) {
                total.insert(key.into(), json!(a + b));
            }
        }
    }

    pub(crate) fn into_json(self) -> Option<Json> {
        self.total.map(Json::Object)
    }
}

/// The `chat.completion` of an answer sent whole: the text of `pieces` as `content`
/// (`null` when there are calls and no text), `reasoning` when the upstream gave one, the
/// calls as `tool_calls`; `extra` fields after `choices` (the `atfunc` record of an
/// executed turn), then the usage.
pub(crate) fn whole_answer(
    meta: &Meta,
    pieces: Vec<Out>,
    reasoning: Option<Json>,
    finish_reason: &str,
    extra: Map<String, Json>,
    usage: Usage,
) -> Response {
    let mut text = String::new();
    let mut calls = Vec::new();
    for piece in pieces {
        match piece {
            Out::Text(t) => text.push_str(&t),
            Out::Call {
                id,
                name,
                arguments,
            } => calls.push(tool_call_json(None, id, name, arguments)),
        }
    }
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    let content = if text.is_empty() && !calls.is_empty() {
        Json::Null
    } else {
        Json::String(text)
    };
    message.insert("content".into(), content);
    if let Some(reasoning) = reasoning.filter(|r| !r.is_null()) {
        message.insert("reasoning_content".into(), reasoning);
    }
    if !calls.is_empty() {
        message.insert("tool_calls".into(), Json::Array(calls));
    }
    let mut reply = json!({
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason}],
    });
    if let Json::Object(map) = &mut reply {
        map.extend(extra);
        if let Some(usage) = usage.into_json() {
            map.insert("usage".into(), usage);
        }
    }
    json_response(&reply)
}

pub(crate) fn json_response(value: &Json) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

pub(crate) fn sse_response(body: Body) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// An error inside a stream, as OpenAI's stream carries one.
pub(crate) fn error_event(error: &ApiError) -> Bytes {
    error.trace();
    sse::event(&error.to_json())
}

/// The sending end of a response body fed by a task.
pub(crate) struct Tx(mpsc::Sender<Result<Bytes, std::io::Error>>);

impl Tx {
    /// Sends a piece; `false` once the client has gone.
    pub(crate) async fn send(&self, bytes: Bytes) -> bool {
        self.0.send(Ok(bytes)).await.is_ok()
    }

    /// Sends `chunks` as one piece (none when there are none): what is ready at once
    /// leaves at once, in one write to the client's socket rather than one each, which
    /// with `TCP_NODELAY` would each be a packet of its own. `false` once the client has
    /// gone.
    pub(crate) async fn send_all(&self, chunks: Vec<Bytes>) -> bool {
        match chunks.len() {
            0 => true,
            1 => {
                self.send(chunks.into_iter().next().unwrap_or_default())
                    .await
            }
            _ => self.send(Bytes::from(chunks.concat())).await,
        }
    }

    /// Completes when the client has gone (the body was dropped).
    pub(crate) async fn closed(&self) {
        self.0.closed().await;
    }
}

/// A response body and the sender that feeds it. When the client goes away the body is
/// dropped, [`Tx::closed`] completes, and the task drops its upstream request with it.
pub(crate) fn channel_body() -> (Tx, Body) {
    let (tx, rx) = mpsc::channel(16);
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    (Tx(tx), Body::from_stream(stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn chunks_sent_together_are_one_piece_of_the_body() {
        let (tx, body) = channel_body();
        assert!(tx.send_all(vec![Bytes::from("a"), Bytes::from("bc")]).await);
        assert!(tx.send_all(Vec::new()).await);
        assert!(tx.send_all(vec![Bytes::from("d")]).await);
        drop(tx);
        let pieces: Vec<Bytes> = futures::StreamExt::collect::<Vec<_>>(body.into_data_stream())
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(pieces, [Bytes::from("abc"), Bytes::from("d")]);
    }
}
