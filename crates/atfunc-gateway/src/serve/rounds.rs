//! Reading the upstream's answers, and the one loop over a turn's rounds.
//!
//! An upstream answer, a stream or a whole JSON body, is read through the turn's
//! [`Reader`] by [`read_answer`], and what the reader releases goes to a [`Sink`]: the
//! client's stream ([`ToClient`], piece by piece as it comes) or the parts of an answer
//! sent whole ([`Collect`]). A reader that has read all it will (a repeated call ended
//! the answer) ends the reading there, and the caller drops the upstream's stream, which
//! stops a server that notices its client leave. [`drive`] runs the rounds of every turn,
//! whole or streamed: a tool turn ([`Turn`]: a resample or a repair round asks again) and
//! an executed turn (`execute`: the results of its calls ask again).

use super::reply::{
    channel_body, error_event, sse_response, whole_answer, ChunkWriter, Meta, Tx, Usage,
};
use super::trace;
use super::upstream::{Response as UpstreamResponse, Upstream};
use super::{ApiError, Gateway};
use crate::endpoint::is_event_stream;
use crate::endpoint::{Sse, SseDecoder};
use crate::turn::content_text;
use crate::turn::Request;
use crate::turn::{Out, RoundEnd, Turn};
use axum::body::Bytes;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::{json, Map, Value as Json};
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;

/// Where the pieces of one upstream answer go as they are read.
pub(crate) trait Sink: Send {
    /// Completes once nobody waits for the answer any more.
    fn gone(&self) -> impl Future<Output = ()> + Send;
    /// The answer's id, time and model, to be set from the upstream's first chunk; `None`
    /// once they can no longer change (the client has its first chunk).
    fn meta(&mut self) -> Option<&mut Meta>;
    /// A piece of the model's reasoning, which comes after `out` (what the reader released
    /// before it).
    fn reasoning(&mut self, out: &mut Vec<Out>, reasoning: &Json);
    /// Passes on what the reader released; `false` when nobody is there any more.
    fn release(&mut self, out: Vec<Out>) -> impl Future<Output = bool> + Send;
    /// Passes on the events of an executed turn's calls, as they happen; `false` when
    /// nobody is there any more.
    fn events(&mut self, events: Vec<Json>) -> impl Future<Output = bool> + Send;
    /// The body of `request` for the next upstream answer, which `reader` will read.
    fn body(&self, request: &Request, reader: &impl Reader) -> Bytes;
}

/// What reads an upstream answer as it streams in.
pub(crate) trait Reader: Send {
    /// Feeds the next piece of the answer: what it releases goes to `out`, or, for a
    /// reader that must pass text on before it goes on (an executed turn, before a call
    /// runs), to `sink` itself. `false` when nobody is there any more.
    fn feed(
        &mut self,
        delta: &str,
        out: &mut Vec<Out>,
        sink: &mut impl Sink,
    ) -> impl Future<Output = bool> + Send;
    /// Takes in the `tool_calls` (or a stream delta's pieces of them) the upstream sent
    /// beside the text. Dropped unless the reader passes them on.
    fn upstream_calls(&mut self, _tool_calls: &Json) {}
    /// Whether the answer under way is not the client's (a repair round): its text is
    /// dropped and its finish reason ignored.
    fn quiet(&self) -> bool;
    /// Whether the reader has read all it will of the answer under way: the upstream's
    /// stream is then dropped, which stops a server that notices its client leave (as
    /// llama.cpp's does) from spending more tokens on it.
    fn answer_over(&self) -> bool;
    /// Whether a call that repeats an earlier one ends each answer, so that an answer is
    /// best asked for as a stream, to be dropped there.
    fn ends_at_repeat(&self) -> bool;
}

/// A turn of several rounds, as [`drive`] runs it.
pub(crate) trait Rounds: Reader {
    /// The request for the next upstream answer.
    fn request(&self) -> &Request;
    /// The usage of requests made for the turn before its first answer.
    fn take_counted_usage(&mut self) -> Option<Json>;
    /// Ends the answer under way: whether to ask again. What it releases goes to `out`, or
    /// to `sink` before the turn goes on (see [`Reader::feed`]); `None` when nobody is
    /// there any more.
    fn end_round(
        &mut self,
        out: &mut Vec<Out>,
        sink: &mut impl Sink,
    ) -> impl Future<Output = Option<RoundEnd>> + Send;
    /// Ends the turn after a quiet round failed upstream.
    fn give_up(&mut self, out: &mut Vec<Out>);
    /// The answer's finish reason, given the upstream's last one.
    fn finish_reason(&self, upstream: Option<&str>) -> String;
    /// Fields of the gateway's own beside the answer's `choices`; `events` are the calls'
    /// events of an answer sent whole.
    fn extra(&mut self, _events: Option<Vec<Json>>) -> Map<String, Json> {
        Map::new()
    }
    /// `error`, which ends the turn, with what the client must know of the turn so far
    /// (the calls an executed turn ran).
    fn report(&self, error: ApiError) -> ApiError {
        error
    }
}

impl Reader for Turn {
    async fn feed(&mut self, delta: &str, out: &mut Vec<Out>, _sink: &mut impl Sink) -> bool {
        Turn::feed(self, delta, out);
        true
    }

    fn upstream_calls(&mut self, tool_calls: &Json) {
        self.take_upstream_calls(tool_calls);
    }

    fn quiet(&self) -> bool {
        self.repairing()
    }

    fn answer_over(&self) -> bool {
        Turn::answer_over(self)
    }

    /// Unless [`Turn::keep_repeated_calls`].
    fn ends_at_repeat(&self) -> bool {
        Turn::ends_at_repeat(self)
    }
}

impl Rounds for Turn {
    fn request(&self) -> &Request {
        Turn::request(self)
    }

    fn take_counted_usage(&mut self) -> Option<Json> {
        Turn::take_counted_usage(self)
    }

    async fn end_round(&mut self, out: &mut Vec<Out>, _sink: &mut impl Sink) -> Option<RoundEnd> {
        Some(Turn::end_round(self, out))
    }

    fn give_up(&mut self, out: &mut Vec<Out>) {
        Turn::give_up(self, out);
    }

    fn finish_reason(&self, upstream: Option<&str>) -> String {
        Turn::finish_reason(self, upstream)
    }

    /// `"atfunc": {"call_odds": p}` when the answer was weighed first
    /// (`--call-threshold`): the odds that held it to calls or to prose, which a client
    /// calibrating the threshold needs.
    fn extra(&mut self, _events: Option<Vec<Json>>) -> Map<String, Json> {
        let mut extra = Map::new();
        if let Some(odds) = self.call_odds() {
            extra.insert("atfunc".into(), json!({ "call_odds": odds }));
        }
        extra
    }
}

/// Answers a turn as the client asked: a stream (`"stream": true`), or whole.
pub(crate) async fn answer(
    gateway: Arc<Gateway>,
    auth: Option<HeaderValue>,
    turn: impl Rounds + 'static,
) -> Result<Response, ApiError> {
    if turn.request().get("stream") == Some(Json::Bool(true)) {
        streamed(gateway, auth, turn).await
    } else {
        whole(gateway, auth, turn).await
    }
}

/// A turn answered whole. When a repeated call ends an answer, the upstream is still
/// asked for a stream: read up to the repeat and dropped there, it stops a model that
/// writes its calls again and again, where a whole answer would run to the token limit
/// first. The usage asked for with it covers the rounds the upstream finished; a round
/// dropped at a repeat counts only what the upstream counted before (or llama.cpp's
/// per-token timings, when it sent them).
async fn whole(
    gateway: Arc<Gateway>,
    auth: Option<HeaderValue>,
    mut turn: impl Rounds,
) -> Result<Response, ApiError> {
    let mut answer = Collect::new(Meta::for_model(turn.request().get("model")));
    let mut usage = Usage::default();
    let mut finish = None;
    // A whole answer's client that leaves drops this handler: never `Ok(false)` here.
    drive(
        &gateway,
        auth.as_ref(),
        &mut turn,
        &mut answer,
        None,
        (&mut usage, &mut finish),
    )
    .await
    .map_err(|error| turn.report(error))?;
    let extra = turn.extra(Some(std::mem::take(&mut answer.events)));
    let finish_reason = turn.finish_reason(finish.as_deref());
    Ok(whole_answer(
        &answer.meta,
        answer.out,
        answer.reasoning,
        &finish_reason,
        extra,
        usage,
    ))
}

/// A turn streamed: the first upstream request is made before the client's stream
/// starts, so its failure is still an HTTP error.
async fn streamed(
    gateway: Arc<Gateway>,
    auth: Option<HeaderValue>,
    mut turn: impl Rounds + 'static,
) -> Result<Response, ApiError> {
    let body = Bytes::from(turn.request().body(Some(true)));
    let response = gateway
        .upstream
        .chat_checked(body, auth.as_ref())
        .await
        .map_err(|error| turn.report(error))?;
    let (tx, body) = channel_body();
    let streaming = async move {
        let mut writer = ChunkWriter::new(Meta::for_model(turn.request().get("model")));
        let mut usage = Usage::default();
        let mut finish = None;
        let mut sink = ToClient::new(&tx, &mut writer);
        let ended = drive(
            &gateway,
            auth.as_ref(),
            &mut turn,
            &mut sink,
            Some(response),
            (&mut usage, &mut finish),
        )
        .await;
        match ended {
            Ok(true) => {
                let extra = turn.extra(None);
                let reason = turn.finish_reason(finish.as_deref());
                tx.send_all(writer.end(turn.request(), &reason, extra, usage))
                    .await;
                tracing::info!(finish_reason = reason, "stream ended");
            }
            Ok(false) => tracing::info!("stream ended: the client went away"),
            Err(error) => {
                tx.send(error_event(&turn.report(error))).await;
            }
        }
    };
    // The stream goes on after the handler has returned, in the request's span.
    tokio::spawn(streaming.instrument(tracing::Span::current()));
    Ok(sse_response(body))
}

/// The client's stream: each piece becomes a chunk, sent as it is released.
pub(crate) struct ToClient<'a> {
    tx: &'a Tx,
    writer: &'a mut ChunkWriter,
    /// Chunks written and not sent yet (the pieces before a piece of reasoning).
    pending: Vec<Bytes>,
}

impl<'a> ToClient<'a> {
    pub(crate) fn new(tx: &'a Tx, writer: &'a mut ChunkWriter) -> ToClient<'a> {
        ToClient {
            tx,
            writer,
            pending: Vec::new(),
        }
    }
}

impl Sink for ToClient<'_> {
    fn gone(&self) -> impl Future<Output = ()> + Send {
        self.tx.closed()
    }

    fn meta(&mut self) -> Option<&mut Meta> {
        (!self.writer.started).then_some(&mut self.writer.meta)
    }

    fn reasoning(&mut self, out: &mut Vec<Out>, reasoning: &Json) {
        // Pieces before it are sent first, so the order is kept.
        let before = self.writer.pieces(std::mem::take(out));
        self.pending.extend(before);
        self.pending
            .push(self.writer.delta(json!({"reasoning_content": reasoning})));
    }

    async fn release(&mut self, out: Vec<Out>) -> bool {
        let mut chunks = std::mem::take(&mut self.pending);
        chunks.extend(self.writer.pieces(out));
        self.tx.send_all(chunks).await
    }

    /// One chunk, `"atfunc": {"events": [...]}` beside its choices.
    async fn events(&mut self, events: Vec<Json>) -> bool {
        if !self.release(Vec::new()).await {
            return false;
        }
        let mut fields = Map::new();
        fields.insert("atfunc".into(), json!({ "events": events }));
        let chunk = self.writer.fields(fields);
        self.tx.send(chunk).await
    }

    fn body(&self, request: &Request, _reader: &impl Reader) -> Bytes {
        Bytes::from(request.body(Some(true)))
    }
}

/// The parts of an answer sent whole, gathered over its rounds.
pub(crate) struct Collect {
    /// What the turn released, in order.
    pub(crate) out: Vec<Out>,
    pub(crate) meta: Meta,
    /// Whether `meta` was set from an upstream answer (the first one sets it).
    met: bool,
    /// The model's reasoning: a whole answer's as it came, a stream's pieces joined.
    pub(crate) reasoning: Option<Json>,
    /// The events of an executed turn's calls, in order.
    pub(crate) events: Vec<Json>,
}

impl Collect {
    pub(crate) fn new(meta: Meta) -> Collect {
        Collect {
            out: Vec::new(),
            meta,
            met: false,
            reasoning: None,
            events: Vec::new(),
        }
    }
}

impl Sink for Collect {
    fn gone(&self) -> impl Future<Output = ()> + Send {
        // A client that leaves an answer sent whole drops the request's handler, and this
        // reading with it.
        std::future::pending()
    }

    fn meta(&mut self) -> Option<&mut Meta> {
        if self.met {
            return None;
        }
        self.met = true;
        Some(&mut self.meta)
    }

    fn reasoning(&mut self, out: &mut Vec<Out>, reasoning: &Json) {
        self.out.append(out);
        match (&mut self.reasoning, reasoning) {
            (Some(Json::String(so_far)), Json::String(piece)) => so_far.push_str(piece),
            _ => self.reasoning = Some(reasoning.clone()),
        }
    }

    async fn release(&mut self, mut out: Vec<Out>) -> bool {
        self.out.append(&mut out);
        true
    }

    async fn events(&mut self, mut events: Vec<Json>) -> bool {
        self.events.append(&mut events);
        true
    }

    fn body(&self, request: &Request, reader: &impl Reader) -> Bytes {
        whole_answer_body(request, reader)
    }
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

/// Runs the rounds of a turn, whole or streamed: asks the upstream (`first`, when the
/// caller asked already), reads each answer through `turn` into `sink`, and asks again
/// while the turn says so. A failure of a round that is the client's (the first, or any
/// of an executed turn) is the caller's to answer: an HTTP error, or an error event once
/// the client's stream has begun. A failure of a quiet round (a resample or a repair,
/// whose answer is not the client's) ends the turn with what it has. `Ok(false)` when
/// the client left.
pub(crate) async fn drive(
    gateway: &Gateway,
    auth: Option<&HeaderValue>,
    turn: &mut impl Rounds,
    sink: &mut impl Sink,
    mut first: Option<UpstreamResponse>,
    (usage, finish): (&mut Usage, &mut Option<String>),
) -> Result<bool, ApiError> {
    usage.add(turn.take_counted_usage().as_ref());
    for round in 1u64.. {
        let started = Instant::now();
        let response = match first.take() {
            Some(response) => Ok(response),
            None => {
                let body = sink.body(turn.request(), &*turn);
                gateway.upstream.chat_checked(body, auth).await
            }
        };
        let read = match response {
            Ok(mut response) => {
                read_answer(&gateway.upstream, turn, &mut response, sink, usage, finish).await
                // The response is dropped here: an upstream still writing (past a
                // repeated call) is stopped now, not after the client's answer is sent.
            }
            Err(error) => StreamEnd::Failed(error),
        };
        let how = match &read {
            StreamEnd::Done => "read",
            StreamEnd::Gone => "client gone",
            StreamEnd::Failed(_) => "upstream failed",
        };
        tracing::debug!(
            round,
            ms = trace::elapsed_ms(started),
            how,
            "upstream round"
        );
        match read {
            StreamEnd::Done => {}
            StreamEnd::Gone => return Ok(false),
            StreamEnd::Failed(error) if !turn.quiet() => return Err(error),
            StreamEnd::Failed(_) => {
                let mut out = Vec::new();
                turn.give_up(&mut out);
                return Ok(sink.release(out).await);
            }
        }
        let mut out = Vec::new();
        let end = turn.end_round(&mut out, sink).await;
        tracing::debug!(round, next = ?end, "round ended");
        if end.is_none() || !sink.release(out).await {
            return Ok(false);
        }
        if end == Some(RoundEnd::Done) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The body of `request` for an answer the client wants whole: a stream, its usage asked
/// for, when `reader` ends answers at a repeated call (so that the upstream can be
/// stopped there); otherwise a whole answer.
pub(crate) fn whole_answer_body(request: &Request, reader: &impl Reader) -> Bytes {
    Bytes::from(if reader.ends_at_repeat() {
        request.counted_stream_body()
    } else {
        request.body(Some(false))
    })
}

/// Reads one upstream answer through `turn`: a stream event by event, up to its end or
/// to where the reader has read all it will, or a whole JSON answer (a server that
/// answers a streamed request whole, or a request that asked for no stream). What the
/// reader releases goes to `sink`; the answer's token counts are added to `usage`, and its
/// finish reason, unless the reader is quiet, set in `finish`.
pub(crate) async fn read_answer(
    upstream: &Upstream,
    turn: &mut impl Reader,
    response: &mut UpstreamResponse,
    sink: &mut impl Sink,
    usage: &mut Usage,
    finish: &mut Option<String>,
) -> StreamEnd {
    if !is_event_stream(response) {
        return read_whole(upstream, turn, response, sink, usage, finish).await;
    }
    let mut decoder = SseDecoder::new(upstream.max_response_bytes());
    let mut answer_usage = None;
    let mut timed_usage = None;
    let mut received = 0usize;
    let mut datas = Vec::new();
    // Whether the upstream said the answer is over (`[DONE]` or a finish reason): a
    // body that ends before either was cut off, and must not pass for a whole answer.
    let mut said_end = false;
    loop {
        let chunk = tokio::select! {
            biased;
            () = sink.gone() => return StreamEnd::Gone,
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
                if received > upstream.max_response_bytes() {
                    return StreamEnd::Failed(upstream.too_large());
                }
                if decoder.feed(&chunk, &mut datas).is_err() {
                    return StreamEnd::Failed(upstream.too_large());
                }
                false
            }
        };
        let mut out = Vec::new();
        let mut done = ended;
        for event in datas.drain(..) {
            let data = match event {
                Sse::Data(data) => data,
                Sse::Error(data) => return StreamEnd::Failed(event_error(&data)),
                Sse::NotUtf8 { at } => return StreamEnd::Failed(upstream.not_utf8(at)),
            };
            if data.trim() == "[DONE]" {
                said_end = true;
                done = true;
                break;
            }
            // Leniently: a chunk a Python server wrote with a `-Infinity` log probability
            // still carries its text.
            let Ok(event) = crate::endpoint::parse_lenient(&data) else {
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
            if let Some(meta) = sink.meta() {
                meta.update(&event);
            }
            // The usage so far, when a server sends it on every chunk: the last one
            // counts, once.
            if let Some(counts @ Json::Object(_)) = event.get("usage") {
                answer_usage = Some(counts.clone());
            } else if let Some(counts) = timings_usage(&event) {
                // llama.cpp's per-token timings (asked with `timings_per_token`): the
                // counts of a stream dropped before its usage came.
                timed_usage = Some(counts);
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
                        sink.reasoning(&mut out, reasoning);
                    }
                }
            }
            if let Some(text) = delta.and_then(|d| d.get("content")).and_then(Json::as_str) {
                if !turn.feed(text, &mut out, sink).await {
                    return StreamEnd::Gone;
                }
            }
            if let Some(calls) = delta.and_then(|d| d.get("tool_calls")) {
                turn.upstream_calls(calls);
            }
        }
        if !sink.release(out).await {
            return StreamEnd::Gone;
        }
        if turn.answer_over() {
            // The rest would not be read: the caller drops the upstream's stream,
            // which stops it. Its usage, sent last, is not known.
            usage.add(answer_usage.as_ref().or(timed_usage.as_ref()));
            return StreamEnd::Done;
        }
        if done {
            if !said_end {
                return StreamEnd::Failed(ApiError::bad_gateway(
                    "The upstream server closed the stream before the answer was complete",
                ));
            }
            usage.add(answer_usage.as_ref().or(timed_usage.as_ref()));
            return StreamEnd::Done;
        }
    }
}

/// The usage a llama.cpp stream chunk's `timings` give, when it has them: the prompt is
/// the cached part and the part evaluated.
fn timings_usage(chunk: &Json) -> Option<Json> {
    let timings = chunk.get("timings")?;
    let count = |field: &str| timings.get(field).and_then(Json::as_u64);
    let prompt = count("cache_n").unwrap_or(0) + count("prompt_n").unwrap_or(0);
    let completion = count("predicted_n")?;
    Some(json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }))
}

/// A whole JSON answer: its text read as one delta.
async fn read_whole(
    upstream: &Upstream,
    turn: &mut impl Reader,
    response: &mut UpstreamResponse,
    sink: &mut impl Sink,
    usage: &mut Usage,
    finish: &mut Option<String>,
) -> StreamEnd {
    let body = tokio::select! {
        biased;
        () = sink.gone() => return StreamEnd::Gone,
        body = upstream.read_text(response) => body,
    };
    let answer: Json = match body.map(|body| crate::endpoint::parse_lenient(&body)) {
        Ok(Ok(answer)) => answer,
        Ok(Err(error)) => {
            return StreamEnd::Failed(ApiError::bad_gateway(format!(
                "The upstream server's answer is neither a stream nor JSON ({error})"
            )))
        }
        Err(error) => return StreamEnd::Failed(error),
    };
    if let Some(meta) = sink.meta() {
        meta.update(&answer);
    }
    usage.add(answer.get("usage"));
    let choice = answer.pointer("/choices/0");
    let message = choice.and_then(|c| c.get("message"));
    let mut out = Vec::new();
    if !turn.quiet() {
        if let Some(reason) = choice
            .and_then(|c| c.get("finish_reason"))
            .and_then(Json::as_str)
        {
            *finish = Some(reason.to_owned());
        }
        if let Some(reasoning) = message
            .and_then(|m| m.get("reasoning_content"))
            .filter(|r| !r.is_null() && r.as_str() != Some(""))
        {
            sink.reasoning(&mut out, reasoning);
        }
    }
    let content = content_text(message.and_then(|m| m.get("content")));
    if !turn.feed(&content, &mut out, sink).await {
        return StreamEnd::Gone;
    }
    if let Some(calls) = message.and_then(|m| m.get("tool_calls")) {
        turn.upstream_calls(calls);
    }
    if sink.release(out).await {
        StreamEnd::Done
    } else {
        StreamEnd::Gone
    }
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
