//! What the gateway tells a `tracing` subscriber: nothing is written unless the program
//! installs one (`atfunc serve --log info`).
//!
//! - `info`: a span per request (`request{id=7 method=POST path=/v1/chat/completions}`)
//!   and, when its answer's head is ready, an event with the status and the time taken; a
//!   streamed answer says when its stream ends, and how. Every error answered is an event:
//!   `error` for a 5xx (the upstream failed, the gateway's own fault), `info` for a
//!   request refused (4xx), with the message the client gets.
//! - `debug`: what the turn chose (tools, `tool_choice`, call format, grammar, whether
//!   tool results came before) and each round asked of the upstream, with its time and
//!   how it ended.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use tracing::Instrument;

/// The id of the next request, in the process: ids stay unique when one program runs
/// several gateways.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Runs a request inside its span and says how it was answered.
pub(crate) async fn traced(request: Request, next: Next) -> Response {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let span = tracing::info_span!(
        "request",
        id,
        method = %request.method(),
        path = %request.uri().path()
    );
    let started = Instant::now();
    let response = next.run(request).instrument(span.clone()).await;
    span.in_scope(|| {
        tracing::info!(
            status = response.status().as_u16(),
            ms = elapsed_ms(started),
            "answered"
        );
    });
    response
}

/// Milliseconds since `started`, to a tenth.
pub(crate) fn elapsed_ms(started: Instant) -> f64 {
    (started.elapsed().as_secs_f64() * 10_000.0).round() / 10.0
}

/// `text` on one line: a message of several lines (a call with two problems) would
/// otherwise break the log's one event a line.
pub(crate) fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
