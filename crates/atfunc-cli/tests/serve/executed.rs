//! Executed turns end to end: `atfunc serve --config --execute` in front of a scripted
//! upstream. A failure after a call ran tells the client what ran (`error.atfunc_executed`),
//! whole, streamed and at the request's time limit; and a turn of many big results keeps
//! the gateway's memory flat. Every loop is bounded in count and time.
#![cfg(unix)]

use crate::served::{serve_args, Served};
use serde_json::{json, Value as Json};
use std::collections::VecDeque;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the scripted upstream does for one request.
#[derive(Clone)]
enum Answer {
    /// A stream of `text`, ended with a finish reason and `[DONE]`.
    Stream(String),
    /// A stream of `text` whose connection closes before the answer is over.
    Cut(String),
    /// `500` with an OpenAI-shaped error.
    Fail,
    /// A stream of "Done." after `after`.
    Late(Duration),
}

/// An upstream that answers each chat completion with the next of its answers (the last
/// one again once they run out), and keeps how many it was asked.
struct Upstream {
    url: String,
    asked: Arc<Mutex<usize>>,
}

fn chunk(text: &str, finish: Option<&str>) -> String {
    let chunk = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
        "model": "m", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]});
    format!("data: {chunk}\n\n")
}

fn stream(events: Vec<String>) -> axum::response::Response {
    let pieces = futures::stream::iter(
        events
            .into_iter()
            .map(|event| Ok::<_, std::convert::Infallible>(axum::body::Bytes::from(event))),
    );
    axum::response::Response::builder()
        .header("content-type", "text/event-stream")
        .body(axum::body::Body::from_stream(pieces))
        .unwrap()
}

async fn upstream(answers: Vec<Answer>) -> Upstream {
    use axum::routing::post;
    let answers = Arc::new(Mutex::new(VecDeque::from(answers)));
    let asked = Arc::new(Mutex::new(0usize));
    let counted = Arc::clone(&asked);
    let app = axum::Router::new()
        .route(
            "/v1/chat/completions",
            post(move |_body: axum::body::Bytes| {
                let answers = Arc::clone(&answers);
                let counted = Arc::clone(&counted);
                async move {
                    *counted.lock().unwrap() += 1;
                    let answer = {
                        let mut answers = answers.lock().unwrap();
                        if answers.len() > 1 {
                            answers.pop_front().unwrap()
                        } else {
                            answers.front().cloned().unwrap()
                        }
                    };
                    match answer {
                        Answer::Stream(text) => stream(vec![
                            chunk(&text, None),
                            chunk("", Some("stop")),
                            "data: [DONE]\n\n".into(),
                        ]),
                        Answer::Cut(text) => stream(vec![chunk(&text, None)]),
                        Answer::Fail => axum::response::IntoResponse::into_response((
                            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                            axum::Json(json!({"error": {"message": "the model crashed",
                                "type": "server_error", "code": null}})),
                        )),
                        Answer::Late(after) => {
                            tokio::time::sleep(after).await;
                            stream(vec![
                                chunk("Done.", Some("stop")),
                                "data: [DONE]\n\n".into(),
                            ])
                        }
                    }
                }
            }),
        )
        .layer(axum::extract::DefaultBodyLimit::max(256 << 20));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    Upstream {
        url: format!("http://{address}"),
        asked,
    }
}

impl Served {
    /// `atfunc serve --execute` with a file box rooted at `root`.
    fn executing(upstream: &str, root: &Path, args: &[&str]) -> Served {
        let config = root.with_extension("json");
        let boxes = json!({"toolboxes": [{"name": "file", "kind": "file", "root": root}]});
        std::fs::write(&config, boxes.to_string()).unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_atfunc"));
        command
            .args(serve_args(upstream))
            .arg("--config")
            .arg(&config)
            .arg("--execute")
            .args(args);
        Served::spawn(command)
    }

    /// The gateway's peak resident memory so far, in MB.
    #[cfg(target_os = "linux")]
    fn peak_mb(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status
            .lines()
            .find(|line| line.starts_with("VmHWM:"))
            .unwrap();
        let kb: u64 = line
            .split_whitespace()
            .nth(1)
            .and_then(|kb| kb.parse().ok())
            .unwrap();
        kb / 1024
    }

    /// Asks for an executed answer, whole or streamed: its status and its body.
    async fn ask(&self, stream: bool) -> (u16, String) {
        let body = json!({"model": "m", "stream": stream,
            "messages": [{"role": "user", "content": "Note 'one' in log.txt."}]});
        let answer = reqwest::Client::new()
            .post(format!("http://{}/v1/chat/completions", self.address))
            .json(&body)
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .expect("the gateway answers");
        let status = answer.status().as_u16();
        (status, answer.text().await.unwrap_or_default())
    }
}

/// A fresh folder for a file box.
fn folder(name: &str) -> std::path::PathBuf {
    let root = std::env::temp_dir().join(format!("atfunc-executed-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    root
}

/// The error object of an answer: the body of a whole one, the error event of a stream.
fn error_of(stream: bool, body: &str) -> Json {
    let json = if stream {
        body.lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str::<Json>(data).ok())
            .find(|event| event.get("error").is_some())
            .unwrap_or_else(|| panic!("no error event in {body}"))
    } else {
        serde_json::from_str(body).unwrap_or_else(|_| panic!("not JSON: {body}"))
    };
    json["error"].clone()
}

/// The `atfunc` record of an answer: the whole one's, or a stream's last.
#[cfg(target_os = "linux")]
fn record_of(stream: bool, body: &str) -> Json {
    let answer = if stream {
        body.lines()
            .rev()
            .filter_map(|line| line.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str::<Json>(data).ok())
            .find(|chunk| chunk.pointer("/atfunc/calls").is_some())
            .unwrap_or_default()
    } else {
        serde_json::from_str(body).unwrap_or_default()
    };
    answer["atfunc"].clone()
}

const WRITE: &str = r#"Noting it. @file.writefile("log.txt", "one")"#;

/// Checks that `error` reports the call [`WRITE`] makes, and only it, as the answer's
/// `atfunc.calls` would.
fn assert_reports_the_write(error: &Json) {
    let ran = error["atfunc_executed"].as_array();
    let ran = ran.unwrap_or_else(|| panic!("no atfunc_executed in {error}"));
    assert_eq!(ran.len(), 1, "{error}");
    assert_eq!(ran[0]["name"], "file.writefile", "{error}");
    assert_eq!(
        ran[0]["args"],
        json!({"filepath": "log.txt", "content": "one"}),
        "{error}"
    );
    assert!(
        ran[0]["result"]
            .as_str()
            .is_some_and(|r| r.starts_with("Wrote 3 bytes")),
        "{error}"
    );
}

/// The brief's case: the upstream's stream ends before the answer is over, after a call
/// of it ran. The client learns that it ran, so that its retry does not run it again.
#[tokio::test]
async fn a_stream_cut_after_a_call_ran_reports_the_call() {
    for stream in [false, true] {
        let root = folder(&format!("cut-{stream}"));
        let upstream = upstream(vec![Answer::Cut(WRITE.into())]).await;
        let served = Served::executing(&upstream.url, &root, &[]);
        let (status, body) = served.ask(stream).await;
        assert_eq!(
            std::fs::read_to_string(root.join("log.txt")).unwrap(),
            "one"
        );
        assert_eq!(status, if stream { 200 } else { 502 }, "{body}");
        let error = error_of(stream, &body);
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("closed the stream"),
            "{error}"
        );
        assert_reports_the_write(&error);
    }
}

/// The next round's request fails: the calls of the rounds before are reported, and the
/// upstream's own error object is kept.
#[tokio::test]
async fn an_upstream_error_after_a_round_of_calls_reports_them() {
    for stream in [false, true] {
        let root = folder(&format!("fail-{stream}"));
        let upstream = upstream(vec![Answer::Stream(WRITE.into()), Answer::Fail]).await;
        let served = Served::executing(&upstream.url, &root, &[]);
        let (status, body) = served.ask(stream).await;
        assert_eq!(status, if stream { 200 } else { 500 }, "{body}");
        let error = error_of(stream, &body);
        assert_eq!(error["message"], "the model crashed", "{error}");
        assert_reports_the_write(&error);
        assert_eq!(*upstream.asked.lock().unwrap(), 2);
    }
}

/// An error before any call ran says so with an empty list: a retry runs nothing twice.
#[tokio::test]
async fn an_error_before_any_call_reports_an_empty_list() {
    for stream in [false, true] {
        let root = folder(&format!("none-{stream}"));
        let upstream = upstream(vec![Answer::Cut("Let me see".into())]).await;
        let served = Served::executing(&upstream.url, &root, &[]);
        let (_, body) = served.ask(stream).await;
        let error = error_of(stream, &body);
        assert_eq!(error["atfunc_executed"], json!([]), "{error}");
    }
}

/// The request's time limit ends the turn while the model is asked again: the 504 (or the
/// stream's last event) still reports the call that ran before.
#[tokio::test]
async fn the_request_time_limit_reports_the_calls_that_ran() {
    for stream in [false, true] {
        let root = folder(&format!("late-{stream}"));
        let late = Answer::Late(Duration::from_secs(10));
        let upstream = upstream(vec![Answer::Stream(WRITE.into()), late]).await;
        let served = Served::executing(&upstream.url, &root, &["--request-timeout", "1"]);
        let (status, body) = served.ask(stream).await;
        assert_eq!(status, if stream { 200 } else { 504 }, "{body}");
        let error = error_of(stream, &body);
        assert_eq!(error["code"], "request_timeout", "{error}");
        assert_reports_the_write(&error);
    }
}

/// Calls in the answer that reads the big file: each a different name for it (hard
/// links), since a repeated call would end the answer.
#[cfg(target_os = "linux")]
const BIG_READS: usize = 300;

/// The peak allowed, in MB: a debug gateway's own footprint and the turn's records (each
/// result cut to 5,000 characters) with room to spare; 1 MB kept per call is 300 MB.
#[cfg(target_os = "linux")]
const BIG_READS_PEAK_MB: u64 = 120;

/// An executed turn of 300 calls that each read a 1 MB file: each result is released
/// once its record and block are written, so the gateway's peak does not grow with them.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_turn_of_many_big_results_keeps_memory_flat() {
    let root = folder("big");
    let big = root.join("big.txt");
    let line = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ ........\n";
    std::fs::write(&big, line.repeat(1_000_000 / line.len())).unwrap();
    let mut answer = String::from("Reading them all.\n");
    for i in 0..BIG_READS {
        std::fs::hard_link(&big, root.join(format!("copy{i}.txt"))).unwrap();
        answer.push_str(&format!("@file.readfile(\"copy{i}.txt\")\n"));
    }
    let done = Answer::Stream("Done.".into());
    let answers = vec![
        Answer::Stream(answer.clone()),
        done.clone(),
        Answer::Stream(answer),
        done,
    ];
    let upstream = upstream(answers).await;
    let served = Served::executing(&upstream.url, &root, &[]);
    for stream in [false, true] {
        let (status, body) = served.ask(stream).await;
        assert_eq!(status, 200, "{}", &body[..body.len().min(2000)]);
        let calls = record_of(stream, &body)["calls"].clone();
        let calls = calls.as_array().expect("the calls");
        assert_eq!(calls.len(), BIG_READS, "streamed: {stream}");
        assert_eq!(calls[0]["result"]["truncated"], true, "streamed: {stream}");
    }
    let peak = served.peak_mb();
    assert!(
        peak < BIG_READS_PEAK_MB,
        "the gateway peaked at {peak} MB over {BIG_READS} results of 1 MB"
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// With `--log info`, each call the gateway runs is a line: one that returned, and one
/// whose tool failed as a warning with the error the model reads.
#[tokio::test]
async fn each_call_run_is_logged_and_a_failed_one_is_a_warning() {
    let root = folder("logged");
    let answers = vec![
        Answer::Stream(format!("{WRITE}\n@file.readfile(filepath=\"missing.txt\")")),
        Answer::Stream("Done.".into()),
    ];
    let upstream = upstream(answers).await;
    let served = Served::executing(&upstream.url, &root, &["--log", "info"]);
    let (status, body) = served.ask(false).await;
    assert_eq!(status, 200, "{body}");
    let lines = served.stderr_with(&["call returned", "call failed"]).await;
    let has = |parts: &[&str]| lines.iter().any(|l| parts.iter().all(|p| l.contains(p)));
    assert!(
        has(&["INFO", "call returned", "call=file.writefile"]),
        "{lines:#?}"
    );
    assert!(
        has(&["WARN", "call failed", "call=file.readfile", "missing.txt"]),
        "{lines:#?}"
    );
}
