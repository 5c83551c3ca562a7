//! `POST /v1/chat/completions`: pass-through, tool turns (whole and streamed), and the
//! answers in OpenAI's format.

use super::answer::{Out, Reader, RoundEnd, Turn};
use super::body;
use super::history::{add_prompt_raw, content_text, rewrite_raw};
use super::request::{Request, RequestError};
use super::sse::{self, Sse, SseDecoder};
use super::tools::{read_tools, Choice, ToolSet};
use super::upstream::{self, Response as UpstreamResponse};
use super::{constrain, execute, ApiError, Gateway};
use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value as Json};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

/// Fields of a request that are for the gateway, not the upstream.
const TOOL_FIELDS: [&str; 5] = [
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "atfunc_execute",
    "atfunc_constrain",
];

pub(crate) async fn handle(
    gateway: Arc<Gateway>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    gateway.authorize(&headers)?;
    let raw = body::read(
        body,
        gateway.options.max_request_bytes,
        gateway.options.body_timeout,
    )
    .await?;
    let mut request = Request::parse(&raw).map_err(|error| match error {
        RequestError::Json(e) => {
            ApiError::bad_request(format!("The request body is not valid JSON: {e}"))
        }
        RequestError::NotAnObject => {
            ApiError::bad_request("The request body must be a JSON object")
        }
    })?;
    let auth = gateway.upstream_auth(&headers);
    // Only what the interface loader reads of the tools is kept.
    let tools = match request.raw("tools").map(|text| read_tools(text.get())) {
        None => None,
        Some(tools) => match tools? {
            Json::Null => None,
            Json::Array(list) if list.is_empty() => None,
            tools => Some(tools),
        },
    };
    let execute = match request.get("atfunc_execute") {
        Some(Json::Bool(flag)) => flag,
        None | Some(Json::Null) => gateway.options.execute_all && tools.is_none(),
        Some(_) => {
            return Err(ApiError::bad_request(
                "'atfunc_execute' must be true or false",
            ))
        }
    };
    let constrain = match request.get("atfunc_constrain") {
        Some(Json::Bool(true))
            if !gateway.options.constrain && !gateway.options.constrain_per_request =>
        {
            return Err(ApiError::bad_request(
                "This gateway does not let a request turn on grammars with \
                 'atfunc_constrain': start it with --constrain-per-request (or --constrain, \
                 for every request)",
            ))
        }
        Some(Json::Bool(flag)) => flag,
        None | Some(Json::Null) => gateway.options.constrain,
        Some(_) => {
            return Err(ApiError::bad_request(
                "'atfunc_constrain' must be true or false",
            ))
        }
    };
    if execute {
        let Some(registry) = gateway.options.registry.clone() else {
            return Err(ApiError::bad_request(
                "This gateway runs no calls: start it with --config to use atfunc_execute",
            ));
        };
        if tools.is_some() {
            return Err(ApiError::bad_request(
                "A request with atfunc_execute uses the gateway's functions: send no 'tools'",
            ));
        }
        for field in TOOL_FIELDS {
            request.remove(field);
        }
        drop(raw);
        let request = request.into_map().map_err(|_| {
            ApiError::internal(
                "The request could not be read again after its fields were taken out",
            )
        })?;
        return execute::handle(gateway, auth, request, registry).await;
    }
    let Some(tools) = tools else {
        if request.contains("atfunc_execute") || request.contains("atfunc_constrain") {
            request.remove("atfunc_execute");
            request.remove("atfunc_constrain");
            drop(raw);
            let body = Bytes::from(request.body(None));
            return pass_through(gateway, body, auth).await;
        }
        drop(request);
        return pass_through(gateway, raw, auth).await;
    };
    // From here on the request is held as its fields' text; the body is not needed.
    drop(raw);
    let tool_set = ToolSet::from_tools_with(&tools, &gateway.options.load_limits)?;
    // The tools' JSON is not needed once they are loaded: a shadowed binding would keep it
    // alive (several times the size of its text) until the answer is sent.
    drop(tools);
    let tools = Arc::new(tool_set);
    let choice = tools.choice(request.get("tool_choice").as_ref())?;
    let single_call = request.get("parallel_tool_calls") == Some(Json::Bool(false));
    let not_a_list = || ApiError::bad_request("'messages' must be a list");
    let messages = request.take_messages().ok_or_else(not_a_list)?;
    let messages: Vec<Box<RawValue>> =
        serde_json::from_str(messages.get()).map_err(|_| not_a_list())?;
    let messages = rewrite_raw(messages, &tools)?;
    for field in TOOL_FIELDS {
        request.remove(field);
    }
    if choice == Choice::None {
        request.set_messages(messages);
        let body = Bytes::from(request.body(None));
        return pass_through(gateway, body, auth).await;
    }
    if request
        .get("n")
        .and_then(|n| n.as_u64())
        .is_some_and(|n| n > 1)
    {
        return Err(ApiError::bad_request(
            "'n' above 1 is not supported with tools",
        ));
    }
    let mut messages = messages;
    add_prompt_raw(&mut messages, &tools.prompt(&choice, single_call));
    request.set_messages(messages);
    let grammars = if constrain {
        constrain::grammars(
            &tools,
            &choice,
            single_call,
            request.size(),
            gateway.options.max_request_bytes,
        )?
    } else {
        None
    };
    let kind = gateway.options.upstream_kind;
    if let Some(grammars) = &grammars {
        kind.put_in(&mut request, grammars.first.clone());
    }
    let stream = request.get("stream") == Some(Json::Bool(true));
    let mut turn = Turn::new(
        tools,
        request,
        choice,
        single_call,
        gateway.options.repair_rounds,
    );
    if let Some(repair) = grammars.and_then(|g| g.repair) {
        turn.constrain_repairs(kind, repair);
    }
    if stream {
        stream_turn(gateway, auth, turn).await
    } else {
        whole_turn(gateway, auth, turn).await
    }
}

async fn pass_through(
    gateway: Arc<Gateway>,
    body: Bytes,
    auth: Option<HeaderValue>,
) -> Result<Response, ApiError> {
    let response = gateway.upstream.chat(body, auth.as_ref()).await?;
    Ok(relay(gateway, response).await)
}

/// The upstream's answer as it is: an error status as OpenAI's error JSON, a stream piece
/// by piece, anything else whole.
pub(crate) async fn relay(gateway: Arc<Gateway>, mut response: UpstreamResponse) -> Response {
    let status = response.status();
    if upstream::is_error(status) {
        return match gateway.upstream.check(response).await {
            Ok(_) => ApiError::from_upstream(status, b"").into_response(),
            Err(error) => error.into_response(),
        };
    }
    let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
    if !is_event_stream(&response) {
        let body = match gateway.upstream.read_body(&mut response).await {
            Ok(body) => body,
            Err(error) => return error.into_response(),
        };
        let mut reply = (status, body).into_response();
        if let Some(content_type) = content_type {
            reply
                .headers_mut()
                .insert(header::CONTENT_TYPE, content_type);
        }
        return reply;
    }
    let (tx, body) = channel_body();
    tokio::spawn(async move {
        let mut sent = 0usize;
        loop {
            let chunk = tokio::select! {
                biased;
                () = tx.closed() => return,
                chunk = gateway.upstream.next_chunk(&mut response) => chunk,
            };
            match chunk {
                Ok(Some(chunk)) => {
                    sent += chunk.len();
                    if sent > gateway.upstream.max_response_bytes {
                        tx.send(error_event(&gateway.upstream.too_large())).await;
                        return;
                    }
                    if !tx.send(chunk).await {
                        return;
                    }
                }
                Ok(None) => return,
                Err(error) => {
                    tx.send(error_event(&error)).await;
                    return;
                }
            }
        }
    });
    let mut reply = (status, body).into_response();
    if let Some(content_type) = content_type {
        reply
            .headers_mut()
            .insert(header::CONTENT_TYPE, content_type);
    }
    reply
}

/// The error an upstream's `error` event carries: an error object (inside `error` or not)
/// keeps its message, type and code; anything else is the message.
fn event_error(data: &str) -> ApiError {
    let body = match serde_json::from_str::<Json>(data) {
        Ok(Json::Object(fields)) if fields.contains_key("error") => Json::Object(fields),
        Ok(error @ Json::Object(_)) => json!({ "error": error }),
        _ if data.trim().is_empty() => json!({"error": "The upstream server sent an error event"}),
        _ => json!({ "error": data.trim() }),
    };
    ApiError::from_upstream(StatusCode::BAD_GATEWAY, body.to_string().as_bytes())
}

fn is_event_stream(response: &UpstreamResponse) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// A tool turn answered whole.
async fn whole_turn(
    gateway: Arc<Gateway>,
    auth: Option<HeaderValue>,
    mut turn: Turn,
) -> Result<Response, ApiError> {
    let mut out = Vec::new();
    let mut meta: Option<Meta> = None;
    let mut usage = Usage::default();
    let mut finish = None;
    let mut reasoning = None;
    loop {
        let body = Bytes::from(turn.request().body(Some(false)));
        let answer = match gateway.upstream.chat_json(body, auth.as_ref()).await {
            Ok(answer) => answer,
            Err(error) if meta.is_none() => return Err(error),
            Err(_) => {
                turn.give_up(&mut out);
                break;
            }
        };
        if meta.is_none() {
            let mut first = Meta::for_model(turn.request().get("model"));
            first.update(&answer);
            meta = Some(first);
        }
        usage.add(answer.get("usage"));
        let choice = answer.pointer("/choices/0");
        let message = choice.and_then(|c| c.get("message"));
        if !turn.repairing() {
            finish = choice
                .and_then(|c| c.get("finish_reason"))
                .and_then(Json::as_str)
                .map(str::to_owned);
            reasoning = message.and_then(|m| m.get("reasoning_content")).cloned();
        }
        let content = content_text(message.and_then(|m| m.get("content")));
        turn.feed(&content, &mut out);
        if turn.end_round(&mut out) == RoundEnd::Done {
            break;
        }
    }
    let meta = meta.unwrap_or_else(|| Meta::for_model(turn.request().get("model")));
    let mut text = String::new();
    let mut calls = Vec::new();
    for piece in out {
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
    let finish_reason = turn.finish_reason(finish.as_deref());
    let mut reply = json!({
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason}],
    });
    if let (Some(usage), Json::Object(map)) = (usage.into_json(), &mut reply) {
        map.insert("usage".into(), usage);
    }
    Ok(json_response(&reply))
}

/// A tool turn streamed: the first upstream request is made before the client's stream
/// starts, so its failure is still an HTTP error.
async fn stream_turn(
    gateway: Arc<Gateway>,
    auth: Option<HeaderValue>,
    turn: Turn,
) -> Result<Response, ApiError> {
    let body = Bytes::from(turn.request().body(Some(true)));
    let response = gateway.upstream.chat(body, auth.as_ref()).await?;
    let response = gateway.upstream.check(response).await?;
    let (tx, body) = channel_body();
    tokio::spawn(async move {
        let mut writer = ChunkWriter::new(Meta::for_model(turn.request().get("model")));
        let mut rounds = Rounds {
            gateway: &gateway,
            auth: auth.as_ref(),
            tx: &tx,
        };
        rounds.run(turn, response, &mut writer).await;
    });
    Ok(sse_response(body))
}

/// The rounds of a streamed turn.
pub(crate) struct Rounds<'a> {
    pub(crate) gateway: &'a Gateway,
    pub(crate) auth: Option<&'a HeaderValue>,
    pub(crate) tx: &'a Tx,
}

/// How an upstream stream ended.
pub(crate) enum StreamEnd {
    /// `[DONE]` or the end of the body.
    Done,
    /// The client went away; nothing more is sent.
    Gone,
    /// The upstream failed; the error.
    Failed(ApiError),
}

impl Rounds<'_> {
    async fn run(
        &mut self,
        mut turn: Turn,
        mut response: UpstreamResponse,
        writer: &mut ChunkWriter,
    ) {
        let mut usage = Usage::default();
        let mut finish = None;
        loop {
            match self
                .read(&mut turn, &mut response, writer, &mut usage, &mut finish)
                .await
            {
                StreamEnd::Gone => return,
                StreamEnd::Failed(error) if !turn.repairing() => {
                    self.tx.send(error_event(&error)).await;
                    return;
                }
                StreamEnd::Failed(_) => {
                    let mut out = Vec::new();
                    turn.give_up(&mut out);
                    if !self.send(writer.pieces(out)).await {
                        return;
                    }
                    break;
                }
                StreamEnd::Done => {}
            }
            let mut out = Vec::new();
            let end = turn.end_round(&mut out);
            if !self.send(writer.pieces(out)).await {
                return;
            }
            if end == RoundEnd::Done {
                break;
            }
            let body = Bytes::from(turn.request().body(Some(true)));
            let next = match self.gateway.upstream.chat(body, self.auth).await {
                Ok(next) => self.gateway.upstream.check(next).await,
                Err(error) => Err(error),
            };
            match next {
                Ok(next) => response = next,
                Err(_) => {
                    let mut out = Vec::new();
                    turn.give_up(&mut out);
                    if !self.send(writer.pieces(out)).await {
                        return;
                    }
                    break;
                }
            }
        }
        let finish_reason = turn.finish_reason(finish.as_deref());
        let include_usage = turn
            .request()
            .get("stream_options")
            .and_then(|options| options.get("include_usage").cloned())
            == Some(Json::Bool(true));
        let end = writer.end_with(include_usage, &finish_reason, Map::new(), usage);
        self.send(end).await;
    }

    /// Reads one upstream stream through `turn`, sending what it releases.
    pub(crate) async fn read(
        &mut self,
        turn: &mut impl Reader,
        response: &mut UpstreamResponse,
        writer: &mut ChunkWriter,
        usage: &mut Usage,
        finish: &mut Option<String>,
    ) -> StreamEnd {
        let upstream = &self.gateway.upstream;
        if !is_event_stream(response) {
            return self.read_whole(turn, response, writer, usage, finish).await;
        }
        let mut decoder = SseDecoder::new(upstream.max_response_bytes);
        let mut answer_usage = None;
        let mut received = 0usize;
        let mut datas = Vec::new();
        // Whether the upstream said the answer is over (`[DONE]` or a finish reason): a
        // body that ends before either was cut off, and must not pass for a whole answer.
        let mut said_end = false;
        loop {
            let chunk = tokio::select! {
                biased;
                () = self.tx.closed() => return StreamEnd::Gone,
                chunk = upstream.next_chunk(response) => chunk,
            };
            let ended = match chunk {
                Err(error) => return StreamEnd::Failed(error),
                Ok(None) => {
                    decoder.finish(&mut datas);
                    true
                }
                Ok(Some(chunk)) => {
                    received += chunk.len();
                    if received > upstream.max_response_bytes {
                        return StreamEnd::Failed(upstream.too_large());
                    }
                    if decoder.feed(&chunk, &mut datas).is_err() {
                        return StreamEnd::Failed(upstream.too_large());
                    }
                    false
                }
            };
            let mut out = Vec::new();
            let mut extra = Vec::new();
            let mut done = ended;
            for event in datas.drain(..) {
                let data = match event {
                    Sse::Data(data) => data,
                    Sse::Error(data) => return StreamEnd::Failed(event_error(&data)),
                };
                if data.trim() == "[DONE]" {
                    said_end = true;
                    done = true;
                    break;
                }
                let Ok(event) = serde_json::from_str::<Json>(&data) else {
                    continue;
                };
                // `"error": null` beside a chunk's fields says there is none.
                if let Some(error) = event.get("error").filter(|e| !e.is_null()) {
                    let body = json!({"error": error}).to_string();
                    return StreamEnd::Failed(ApiError::from_upstream(
                        StatusCode::BAD_GATEWAY,
                        body.as_bytes(),
                    ));
                }
                if !writer.started {
                    writer.meta.update(&event);
                }
                // The usage so far, when a server sends it on every chunk: the last one
                // counts, once.
                if let Some(counts @ Json::Object(_)) = event.get("usage") {
                    answer_usage = Some(counts.clone());
                }
                let choice = event.pointer("/choices/0");
                let delta = choice.and_then(|c| c.get("delta"));
                if choice
                    .and_then(|c| c.get("finish_reason"))
                    .is_some_and(Json::is_string)
                {
                    said_end = true;
                }
                if !turn.quiet() {
                    if let Some(reason) = choice
                        .and_then(|c| c.get("finish_reason"))
                        .and_then(Json::as_str)
                    {
                        *finish = Some(reason.to_owned());
                    }
                    if let Some(reasoning) = delta.and_then(|d| d.get("reasoning_content")) {
                        if reasoning.as_str().is_some_and(|r| !r.is_empty()) {
                            // Pieces before it are sent first, so the order is kept.
                            extra.extend(writer.pieces(std::mem::take(&mut out)));
                            extra.push(writer.delta(json!({"reasoning_content": reasoning})));
                        }
                    }
                }
                if let Some(text) = delta.and_then(|d| d.get("content")).and_then(Json::as_str) {
                    turn.feed(text, &mut out);
                }
            }
            extra.extend(writer.pieces(out));
            if !self.send(extra).await {
                return StreamEnd::Gone;
            }
            if done {
                if !said_end {
                    return StreamEnd::Failed(ApiError::bad_gateway(
                        "The upstream server closed the stream before the answer was complete",
                    ));
                }
                usage.add(answer_usage.as_ref());
                return StreamEnd::Done;
            }
        }
    }

    /// A server that answers a streamed request whole: its answer read as one delta.
    async fn read_whole(
        &mut self,
        turn: &mut impl Reader,
        response: &mut UpstreamResponse,
        writer: &mut ChunkWriter,
        usage: &mut Usage,
        finish: &mut Option<String>,
    ) -> StreamEnd {
        let upstream = &self.gateway.upstream;
        let body = tokio::select! {
            biased;
            () = self.tx.closed() => return StreamEnd::Gone,
            body = upstream.read_body(response) => body,
        };
        let answer: Json = match body.map(|body| serde_json::from_slice(&body)) {
            Ok(Ok(answer)) => answer,
            Ok(Err(error)) => {
                return StreamEnd::Failed(ApiError::bad_gateway(format!(
                    "The upstream server's answer is neither a stream nor JSON ({error})"
                )))
            }
            Err(error) => return StreamEnd::Failed(error),
        };
        if !writer.started {
            writer.meta.update(&answer);
        }
        usage.add(answer.get("usage"));
        let choice = answer.pointer("/choices/0");
        if !turn.quiet() {
            if let Some(reason) = choice
                .and_then(|c| c.get("finish_reason"))
                .and_then(Json::as_str)
            {
                *finish = Some(reason.to_owned());
            }
        }
        let content = content_text(
            choice
                .and_then(|c| c.get("message"))
                .and_then(|m| m.get("content")),
        );
        let mut out = Vec::new();
        turn.feed(&content, &mut out);
        if self.send(writer.pieces(out)).await {
            StreamEnd::Done
        } else {
            StreamEnd::Gone
        }
    }

    pub(crate) async fn send(&self, events: Vec<Bytes>) -> bool {
        for event in events {
            if !self.tx.send(event).await {
                return false;
            }
        }
        true
    }
}

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
        request: &Map<String, Json>,
        reason: &str,
        extra: Map<String, Json>,
        usage: Usage,
    ) -> Vec<Bytes> {
        let asked = request
            .get("stream_options")
            .and_then(|options| options.get("include_usage"))
            == Some(&Json::Bool(true));
        self.end_with(asked, reason, extra, usage)
    }

    /// [`ChunkWriter::end`] for a request that `asked` for the usage chunk, or not.
    pub(crate) fn end_with(
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
    pub(crate) fn new(request: &Map<String, Json>) -> Meta {
        Meta::for_model(request.get("model").cloned())
    }

    /// Metadata for an answer of `model` (the request's, if it named one).
    pub(crate) fn for_model(model: Option<Json>) -> Meta {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let suffix = crate::interop::CallIds::random().next_id();
        Meta {
            id: format!("chatcmpl-{}", suffix.trim_start_matches("call_")),
            created: now.as_secs(),
            model: model.unwrap_or(Json::Null),
        }
    }

    pub(crate) fn from_answer(answer: &Json, request: &Map<String, Json>) -> Meta {
        let mut meta = Meta::new(request);
        meta.update(answer);
        meta
    }

    fn update(&mut self, answer: &Json) {
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

/// The request for the upstream, with `stream` set.
pub(crate) fn request_body(request: &Map<String, Json>, stream: bool) -> Bytes {
    let mut request = request.clone();
    request.insert("stream".into(), Json::Bool(stream));
    if !stream {
        request.remove("stream_options");
    }
    Bytes::from(Json::Object(request).to_string())
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
    sse::event(&error.to_json())
}

/// The sending end of a response body fed by a task.
pub(crate) struct Tx(mpsc::Sender<Result<Bytes, std::io::Error>>);

impl Tx {
    /// Sends a piece; `false` once the client has gone.
    pub(crate) async fn send(&self, bytes: Bytes) -> bool {
        self.0.send(Ok(bytes)).await.is_ok()
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
