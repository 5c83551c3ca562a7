//! One limit and one behaviour for an endpoint's answer, in the gateway and in the
//! evaluator: the same answer that is not UTF-8, or is over `max_response_bytes`, is a 502
//! for the gateway's client and a failed case, with the same reason, for the evaluator;
//! neither reads it with replacement characters.

use atfunc_gateway::serve::{Gateway, GatewayOptions};
use atfunc_lab::eval::{load_cases, EvalOptions, Evaluator, Mode, Strategy};
use serde_json::json;

/// A chat completion whose content is a right call followed by a byte that is not UTF-8:
/// read with replacement characters, the call binds and the case scores.
const NOT_UTF8: &[u8] = b"{\"choices\": [{\"index\": 0, \"message\": {\"role\": \"assistant\", \"content\": \"@calc.sqrt(x=2) \xff\"}, \"finish_reason\": \"stop\"}]}";

/// The same answer as a stream: a right call, then, in a later event, a byte that is not
/// UTF-8 (in mid-stream, after the call was read).
const NOT_UTF8_STREAM: &[u8] = b"data: {\"choices\": [{\"index\": 0, \"delta\": {\"role\": \"assistant\", \"content\": \"@calc.sqrt(x=2)\"}, \"finish_reason\": null}]}\n\n\
data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \" \xff\"}, \"finish_reason\": null}]}\n\n\
data: {\"choices\": [{\"index\": 0, \"delta\": {}, \"finish_reason\": \"stop\"}]}\n\n\
data: [DONE]\n\n";

/// An endpoint that answers every chat completion with `body`.
async fn endpoint(body: &'static [u8]) -> String {
    endpoint_of(body, "application/json").await
}

/// An endpoint that answers every chat completion with `body` as `content_type`.
async fn endpoint_of(body: &'static [u8], content_type: &'static str) -> String {
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move || async move {
            ([(axum::http::header::CONTENT_TYPE, content_type)], body)
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}")
}

/// What the gateway answers a request with tools when `upstream` answers: status, message.
async fn through_gateway(upstream: &str, max_response_bytes: usize) -> (u16, String) {
    let (status, body) = asked_through_gateway(upstream, max_response_bytes, false).await;
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    let message = body["error"]["message"].as_str().unwrap_or_default();
    (status, message.to_owned())
}

/// What the gateway answers a request with tools, streamed or not, when `upstream`
/// answers: status, body.
async fn asked_through_gateway(
    upstream: &str,
    max_response_bytes: usize,
    stream: bool,
) -> (u16, String) {
    let gateway = Gateway::new({
        let mut options = GatewayOptions::default();
        options.upstream.url = upstream.to_owned();
        options.upstream.max_response_bytes = max_response_bytes;
        options
    })
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, gateway.router()).await });
    let request = json!({
        "model": "m",
        "messages": [{"role": "user", "content": "Square root of 2?"}],
        "tools": [{"type": "function", "function": {"name": "calc.sqrt",
            "parameters": {"type": "object", "properties": {"x": {"type": "number"}}}}}],
        "stream": stream
    });
    let answer = reqwest::Client::new()
        .post(format!("http://{address}/v1/chat/completions"))
        .json(&request)
        .send()
        .await
        .unwrap();
    let status = answer.status().as_u16();
    let body = answer.text().await.unwrap();
    server.abort();
    (status, body)
}

/// How the evaluator scores its one case when `endpoint` answers.
async fn through_eval(endpoint: &str, max_response_bytes: usize) -> atfunc_lab::eval::CaseOutcome {
    let loaded = load_cases(
        r#"{"id": "simple_0", "question": [[{"role": "user", "content": "Square root of 2?"}]], "function": [{"name": "calc.sqrt", "parameters": {"type": "dict", "properties": {"x": {"type": "float"}}, "required": ["x"]}}]}"#,
        r#"{"id": "simple_0", "ground_truth": [{"calc.sqrt": {"x": [2.0]}}]}"#,
    );
    let evaluator = Evaluator::new(EvalOptions {
        endpoint: endpoint.to_owned(),
        max_response_bytes,
        ..EvalOptions::default()
    })
    .unwrap();
    evaluator
        .run(&loaded.cases[0], &Mode::new(Strategy::Text))
        .await
}

#[tokio::test]
async fn an_answer_that_is_not_utf8_is_refused_by_both() {
    let upstream = endpoint(NOT_UTF8).await;
    let at = NOT_UTF8.iter().position(|b| *b == 0xff).unwrap();
    let (status, message) = through_gateway(&upstream, 1 << 20).await;
    assert_eq!(status, 502, "{message}");
    assert_eq!(
        message,
        format!("The upstream server's answer is not valid UTF-8 (from byte {at} on)")
    );
    let outcome = through_eval(&upstream, 1 << 20).await;
    assert!(!outcome.correct && outcome.endpoint_failed, "{outcome:?}");
    // The evaluator asks through the gateway: its error is the gateway's answer.
    assert_eq!(
        outcome.error,
        Some(format!("the gateway answered 502 Bad Gateway: {message}"))
    );
}

/// A stream that is not UTF-8 in mid-answer, read for calls: a 502 for a client that
/// wants the answer whole, an error event for one that streams, never a call passed on
/// with replacement characters after it; the evaluator that stops at repeats fails the
/// case with the same reason.
#[tokio::test]
async fn a_stream_that_is_not_utf8_in_mid_answer_is_refused_by_both() {
    let upstream = endpoint_of(NOT_UTF8_STREAM, "text/event-stream").await;
    let at = NOT_UTF8_STREAM.iter().position(|b| *b == 0xff).unwrap();
    let reason = format!("not valid UTF-8 (from byte {at} on)");
    let (status, body) = asked_through_gateway(&upstream, 1 << 20, false).await;
    assert_eq!(status, 502, "{body}");
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body["error"]["message"],
        format!("The upstream server's answer is {reason}")
    );
    let (status, body) = asked_through_gateway(&upstream, 1 << 20, true).await;
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains('\u{fffd}'), "{body}");
    let last = body
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("data: "))
        .unwrap();
    let last: serde_json::Value = serde_json::from_str(last).unwrap();
    assert_eq!(
        last["error"]["message"],
        format!("The upstream server's answer is {reason}"),
        "{body}"
    );

    let loaded = load_cases(
        r#"{"id": "parallel_0", "question": [[{"role": "user", "content": "Square root of 2?"}]], "function": [{"name": "calc.sqrt", "parameters": {"type": "dict", "properties": {"x": {"type": "float"}}, "required": ["x"]}}]}"#,
        r#"{"id": "parallel_0", "ground_truth": [{"calc.sqrt": {"x": [2.0]}}]}"#,
    );
    let evaluator = Evaluator::new(EvalOptions {
        endpoint: upstream.clone(),
        stop_at_repeat: true,
        ..EvalOptions::default()
    })
    .unwrap();
    let outcome = evaluator
        .run(&loaded.cases[0], &Mode::new(Strategy::Text))
        .await;
    assert!(!outcome.correct && outcome.endpoint_failed, "{outcome:?}");
    assert_eq!(
        outcome.error,
        Some(format!(
            "the gateway answered 502 Bad Gateway: The upstream server's answer is {reason}"
        ))
    );
}

#[tokio::test]
async fn an_answer_over_the_limit_is_refused_by_both() {
    let upstream = endpoint(NOT_UTF8).await;
    let limit = NOT_UTF8.len() - 1;
    let (status, message) = through_gateway(&upstream, limit).await;
    assert_eq!(status, 502, "{message}");
    assert_eq!(
        message,
        format!("The upstream server's answer is larger than {limit} bytes")
    );
    let outcome = through_eval(&upstream, limit).await;
    assert!(outcome.endpoint_failed, "{outcome:?}");
    assert_eq!(
        outcome.error,
        Some(format!("the gateway answered 502 Bad Gateway: {message}"))
    );
}
