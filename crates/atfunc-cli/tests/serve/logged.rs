//! `atfunc serve --log`: a line per request with its status and time, the end of each
//! stream, every error answered with its message (a 5xx as an error), and with `debug`
//! what each turn chose and each round asked of the upstream; nothing without the flag
//! or RUST_LOG.
#![cfg(unix)]

use crate::served::{hello_stream, serve_args, Served};
use serde_json::json;
use std::process::Command;
use std::time::Duration;

/// An upstream that streams "Hello." to a request whose body holds `"hello"`, and fails
/// with 500 otherwise.
async fn upstream() -> String {
    use axum::routing::post;
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(|body: String| async move {
            if !body.contains("hello") {
                let error =
                    json!({"error": {"message": "the model crashed", "type": "server_error"}});
                return axum::response::IntoResponse::into_response((
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                    axum::Json(error),
                ));
            }
            hello_stream()
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}")
}

fn serve(upstream: &str, args: &[&str]) -> Served {
    let mut command = Command::new(env!("CARGO_BIN_EXE_atfunc"));
    command
        .args(serve_args(upstream))
        .args(args)
        .env_remove("RUST_LOG");
    Served::spawn(command)
}

/// Posts `body` as it is; the status and the answer's text.
async fn post(served: &Served, body: String) -> (u16, String) {
    let answer = reqwest::Client::new()
        .post(format!("http://{}/v1/chat/completions", served.address))
        .header("content-type", "application/json")
        .body(body)
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .expect("the gateway answers");
    let status = answer.status().as_u16();
    (status, answer.text().await.unwrap_or_default())
}

fn asking(word: &str, stream: bool) -> String {
    json!({"model": "m", "stream": stream,
        "messages": [{"role": "user", "content": word}],
        "tools": [{"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]})
    .to_string()
}

#[tokio::test]
async fn each_request_is_a_line_and_each_error_says_what_the_client_was_told() {
    let upstream = upstream().await;
    let served = serve(&upstream, &["--log", "info"]);
    assert_eq!(post(&served, asking("hello", true)).await.0, 200);
    assert_eq!(post(&served, "{not json".into()).await.0, 400);
    assert_eq!(post(&served, asking("crash", false)).await.0, 500);
    let lines = served
        .stderr_with(&["stream ended", "refused:", "the model crashed"])
        .await;
    let line = |parts: &[&str]| {
        lines
            .iter()
            .find(|line| parts.iter().all(|part| line.contains(part)))
            .unwrap_or_else(|| panic!("no line with {parts:?} in {lines:#?}"))
            .clone()
    };
    line(&[
        "INFO",
        "request{id=",
        "path=/v1/chat/completions",
        "answered status=200",
    ]);
    line(&["INFO", "stream ended", "finish_reason"]);
    line(&[
        "INFO",
        "refused: The request body is not valid JSON",
        "status=400",
    ]);
    line(&["ERROR", "the model crashed", "status=500"]);
    line(&["INFO", "answered status=500"]);
    // `info` does not show the turn's choices.
    assert!(!lines.iter().any(|l| l.contains("DEBUG")), "{lines:#?}");
}

#[tokio::test]
async fn debug_shows_what_the_turn_chose_and_each_round() {
    let upstream = upstream().await;
    let served = serve(&upstream, &["--log", "debug"]);
    assert_eq!(post(&served, asking("hello", false)).await.0, 200);
    let lines = served.stderr_with(&["round ended"]).await;
    for part in [
        "turn tools=1 choice=Auto dialect=Atfunc constrain=false after_results=false",
        "upstream round round=1",
        "how=\"read\"",
        "round ended round=1 next=Some(Done)",
    ] {
        assert!(lines.iter().any(|l| l.contains(part)), "{part}: {lines:#?}");
    }
    // A bare level is the gateway's own: the HTTP libraries' debug lines stay out.
    assert!(
        lines
            .iter()
            .all(|l| !l.contains("DEBUG") || l.contains("atfunc")),
        "{lines:#?}"
    );
}

#[tokio::test]
async fn nothing_is_written_without_the_flag() {
    let upstream = upstream().await;
    let served = serve(&upstream, &[]);
    assert_eq!(post(&served, asking("crash", false)).await.0, 500);
    // With a log the lines are written before the answer is (the tests above); a pause
    // lets the pipe carry any.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let lines = served.stderr_with(&[]).await;
    assert!(lines.is_empty(), "{lines:#?}");
}

#[test]
fn a_filter_that_does_not_read_is_refused_saying_what_to_give() {
    let out = Command::new(env!("CARGO_BIN_EXE_atfunc"))
        .args(serve_args("http://127.0.0.1:9"))
        .args(["--log", "atfunc=["])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--log atfunc=[: not a log filter")
            && stderr.contains("give a level (info, debug)"),
        "{stderr}"
    );
}
