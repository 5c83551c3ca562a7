//! Answers dropped at their first repeated call, against scripted endpoints: a model that
//! writes its call again and again is dropped where the first repeat ends (and the
//! endpoint stops being read), the calls read are those of the whole answer, and with
//! `EvalOptions::stop_at_repeat` the tokens are the last counts the stream carried
//! (llama.cpp's per-token timings); a server that answers a streamed request whole is
//! read whole.

use crate::scripted;
use atfunc_lab::eval::{load_cases, CaseOutcome, EvalOptions, Evaluator, Mode};
use serde_json::{json, Value as Json};
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Pieces the looping model writes at most: far more than any read needs.
const LOOP_PIECES: usize = 2000;

fn case() -> atfunc_lab::eval::Case {
    let questions = json!({"id": "parallel_0",
        "question": [[{"role": "user", "content": "Square roots of 2 and 3?"}]],
        "function": [{"name": "calc.sqrt", "parameters": {"type": "dict",
            "properties": {"x": {"type": "float"}}, "required": ["x"]}}]});
    let answers = json!({"id": "parallel_0",
        "ground_truth": [{"calc.sqrt": {"x": [2.0]}}, {"calc.sqrt": {"x": [3.0]}}]});
    let mut loaded = load_cases(&questions.to_string(), &answers.to_string());
    assert!(loaded.skipped.is_empty(), "{:?}", loaded.skipped);
    loaded.cases.remove(0)
}

/// The pieces of the looping answer: two calls, then the first again, forever; each call
/// cut across two pieces.
fn piece(n: usize) -> &'static str {
    ["Sure. @calc.sq", "rt(2)\n", "@calc.sqrt(x=3", ")\n"][n % 4]
}

/// A llama.cpp-like server that streams the looping answer slowly, one piece per chunk
/// with its token counts; `sent` counts the chunks it wrote, `requests` keeps each request.
async fn looping(sent: Arc<AtomicUsize>, requests: Arc<Mutex<Vec<Json>>>) -> String {
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |axum::Json(request): axum::Json<Json>| {
            let sent = sent.clone();
            requests.lock().unwrap().push(request);
            async move {
                let chunks = futures::stream::unfold(0usize, move |n| {
                    let sent = sent.clone();
                    async move {
                        if n == LOOP_PIECES {
                            return None;
                        }
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        sent.fetch_add(1, Ordering::SeqCst);
                        let chunk = json!({"choices": [{"index": 0,
                            "delta": {"content": piece(n)}}],
                            "timings": {"cache_n": 40, "prompt_n": 2, "predicted_n": 3 * (n + 1)}});
                        Some((
                            Ok::<_, Infallible>(format!("data: {chunk}\n\n").into_bytes()),
                            n + 1,
                        ))
                    }
                });
                axum::response::Response::builder()
                    .header("content-type", "text/event-stream")
                    .body(axum::body::Body::from_stream(chunks))
                    .unwrap()
            }
        }),
    );
    scripted::serve(app).await
}

async fn run(endpoint: String, stop_at_repeat: bool, mode: &str) -> CaseOutcome {
    let evaluator = Evaluator::new(EvalOptions {
        endpoint,
        stop_at_repeat,
        resamples: 0,
        timeout: Duration::from_secs(60),
        ..EvalOptions::default()
    })
    .unwrap();
    evaluator.run(&case(), &mode.parse::<Mode>().unwrap()).await
}

#[tokio::test]
async fn a_looping_answer_is_dropped_at_its_first_repeat() {
    let sent = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let endpoint = looping(sent.clone(), requests.clone()).await;
    let outcome = run(endpoint, true, "grammar").await;
    assert!(outcome.correct, "{outcome:?}");
    assert_eq!(outcome.calls.len(), 2, "{outcome:?}");
    // The gateway's content ends before the repeat, its calls taken out; the counts are
    // the timings of the last chunk read.
    assert_eq!(outcome.answer, "Sure.\nSure.");
    assert_eq!((outcome.prompt_tokens, outcome.completion_tokens), (42, 18));
    let request = requests.lock().unwrap()[0].clone();
    assert_eq!(request["stream"], true);
    assert_eq!(request["timings_per_token"], true);
    // The server stops being read: a few chunks in flight at most, not the whole loop.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let written = sent.load(Ordering::SeqCst);
    assert!(written < 100, "{written} chunks written");
}

#[tokio::test]
async fn a_whole_answer_to_a_streamed_request_is_read_whole() {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |axum::Json(request): axum::Json<Json>| {
            seen.lock().unwrap().push(request);
            async {
                axum::Json(scripted::says(
                    "@calc.sqrt(2)\n@calc.sqrt(3)\n@calc.sqrt(2)\n@calc.sqrt(5)",
                    30,
                    20,
                ))
            }
        }),
    );
    let endpoint = scripted::serve(app).await;
    let stopped = run(endpoint.clone(), true, "text").await;
    let whole = run(endpoint, false, "text").await;
    // Read up to the repeat either way; the usage is the answer's own.
    assert!(stopped.correct && whole.correct, "{stopped:?}");
    assert_eq!(stopped.calls, whole.calls);
    assert_eq!((stopped.prompt_tokens, stopped.completion_tokens), (30, 20));
    assert_eq!((whole.prompt_tokens, whole.completion_tokens), (30, 20));
    // The gateway asks for a stream either way, to drop it at a repeat; the timings only
    // when they are to be counted.
    let requests = requests.lock().unwrap();
    assert_eq!(requests[0]["stream"], true);
    assert_eq!(requests[0]["timings_per_token"], true);
    assert_eq!(requests[1]["stream"], true);
    assert!(requests[1].get("timings_per_token").is_none());
}
