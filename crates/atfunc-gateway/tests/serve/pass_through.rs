//! A stream passed through (a request without tools) and cut short by the gateway: at
//! the size limit, or because the upstream failed, the error event that ends it starts on
//! a line of its own after a whole event, so an SSE client reads every event, the error
//! last. The upstream sends its events in pieces cut anywhere, in each line-end style.

use atfunc_gateway::serve::{Gateway, GatewayOptions};
use serde_json::{json, Value as Json};
use std::time::Duration;

/// A stream of `count` content events, each line ended with `end`.
fn events(count: usize, end: &str) -> String {
    (0..count)
        .map(|i| {
            let chunk = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {"content": format!("piece {i} ")},
                "finish_reason": null}]});
            format!("data: {chunk}{end}{end}")
        })
        .collect()
}

/// An upstream that answers every chat completion with `stream`, in pieces of `piece`
/// bytes a millisecond apart, then, with `fail`, breaks off.
async fn upstream(stream: String, piece: usize, fail: bool) -> String {
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move || {
            let stream = stream.clone();
            async move {
                let pieces: Vec<Result<Vec<u8>, std::io::Error>> = stream
                    .into_bytes()
                    .chunks(piece)
                    .map(|p| Ok(p.to_vec()))
                    .chain(fail.then(|| Err(std::io::Error::other("gone"))))
                    .collect();
                let body = futures::StreamExt::then(futures::stream::iter(pieces), |p| async {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    p
                });
                (
                    [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
                    axum::body::Body::from_stream(body),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}")
}

/// The client's stream for a request without tools through a gateway of `options` in
/// front of `upstream`.
async fn passed_through(upstream: String, options: GatewayOptions) -> String {
    let gateway = Gateway::new({
        let mut options = options;
        options.upstream.url = upstream;
        options
    })
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, gateway.router()).await });
    let body = reqwest::Client::new()
        .post(format!("http://{address}/v1/chat/completions"))
        .json(&json!({"model": "m", "stream": true,
            "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    server.abort();
    body
}

/// The data of each event of `stream`, read as an SSE client reads it (any line end).
fn event_data(stream: &str) -> Vec<String> {
    let mut events = Vec::new();
    let mut data: Option<String> = None;
    let lines = stream.replace("\r\n", "\n").replace('\r', "\n");
    for line in lines.split('\n') {
        if line.is_empty() {
            events.extend(data.take());
        } else if let Some(value) = line.strip_prefix("data:") {
            let value = value.strip_prefix(' ').unwrap_or(value);
            match &mut data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => data = Some(value.to_owned()),
            }
        }
    }
    events.extend(data);
    events
}

/// Every event is a whole chunk of JSON, and the last is the error `message` names.
fn ends_with_error(stream: &str, message: &str) {
    let events = event_data(stream);
    let (last, before) = events.split_last().expect("some event");
    for data in before {
        let chunk: Json = serde_json::from_str(data)
            .unwrap_or_else(|e| panic!("an event is not whole ({e}): {data:?} in {stream:?}"));
        assert!(chunk.get("choices").is_some(), "{data}");
    }
    let last: Json = serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("the last event is not whole ({e}): {last:?}"));
    let said = last["error"]["message"].as_str().unwrap_or_default();
    assert!(said.contains(message), "{last}");
}

#[tokio::test]
async fn a_stream_cut_at_the_size_limit_ends_with_an_error_event_of_its_own() {
    for end in ["\n", "\r\n", "\r"] {
        let stream = events(6, end);
        let event = stream.len() / 6;
        // The limit falls inside the fifth event, whatever the pieces.
        let limit = 4 * event + event / 2;
        for piece in [1, 3, 7, 64] {
            let upstream = upstream(stream.clone(), piece, false).await;
            let options = {
                let mut options = GatewayOptions::default();
                options.upstream.max_response_bytes = limit;
                options
            };
            let answer = passed_through(upstream, options).await;
            ends_with_error(&answer, &format!("larger than {limit} bytes"));
            let whole = event_data(&answer).len() - 1;
            assert!(whole <= 4, "{whole} events passed on: {answer:?}");
        }
    }
}

#[tokio::test]
async fn a_stream_the_upstream_breaks_off_ends_with_an_error_event_of_its_own() {
    let stream = events(3, "\n");
    // Cut inside the third event.
    let cut = stream.len() - 10;
    let upstream = upstream(stream[..cut].to_owned(), 5, true).await;
    let answer = passed_through(upstream, GatewayOptions::default()).await;
    ends_with_error(&answer, "The upstream server");
}
