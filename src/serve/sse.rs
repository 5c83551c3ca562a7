//! Server-sent events: writing the client's stream (reading the upstream's is
//! [`crate::endpoint::SseDecoder`]'s).

use axum::body::Bytes;
use serde_json::Value as Json;

/// One event carrying `json`: `data: {...}\n\n`.
pub(crate) fn event(json: &Json) -> Bytes {
    Bytes::from(format!("data: {json}\n\n"))
}

/// The event that ends a chat completion stream.
pub(crate) fn done() -> Bytes {
    Bytes::from_static(b"data: [DONE]\n\n")
}
