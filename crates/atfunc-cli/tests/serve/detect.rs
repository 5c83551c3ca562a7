//! `atfunc serve` finds out what its upstream is: scripted upstreams on loopback that answer
//! as llama-server, llama-cpp-python, Ollama and vLLM do, one that is still loading at
//! first, and flags that win over what was found. What was chosen is read at
//! `GET /atfunc/policy`, and for vLLM also in the grammar field a request sends upstream.
//! Every wait is bounded.
#![cfg(unix)]

use crate::served::{hello_stream, Served};
use axum::routing::{get, post};
use serde_json::{json, Value as Json};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The lines of Qwen2.5's chat template that write a call.
const HERMES_TEMPLATE: &str = "{%- for tool_call in message.tool_calls %}\
    {{- '\\n<tool_call>\\n{\"name\": \"' }}{{- tool_call.name }}{%- endfor %}";

/// What a scripted upstream saw: each request's method, path and body.
type Seen = Arc<Mutex<Vec<(String, String, String)>>>;

/// Serves `app` on a port of its own, recording every request in the returned list.
async fn upstream(app: axum::Router) -> (String, Seen) {
    let seen: Seen = Arc::default();
    let recorded = Arc::clone(&seen);
    let app = app.layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| {
            let recorded = Arc::clone(&recorded);
            async move {
                let (parts, body) = request.into_parts();
                let bytes = axum::body::to_bytes(body, 1 << 20)
                    .await
                    .unwrap_or_default();
                recorded.lock().unwrap().push((
                    parts.method.to_string(),
                    parts.uri.path().to_owned(),
                    String::from_utf8_lossy(&bytes).into_owned(),
                ));
                let request =
                    axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes));
                next.run(request).await
            }
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{address}"), seen)
}

fn models(owned_by: &'static str) -> axum::routing::MethodRouter {
    get(move || async move {
        axum::Json(json!({"object": "list", "data": [
            {"id": "the-model", "object": "model", "created": 1, "owned_by": owned_by}
        ]}))
    })
}

/// Answers every chat completion with "Hello.", as a stream when asked for one.
fn chat() -> axum::routing::MethodRouter {
    post(|axum::Json(asked): axum::Json<Json>| async move {
        if asked["stream"] != true {
            return axum::response::IntoResponse::into_response(axum::Json(json!({
                "id": "c", "object": "chat.completion", "created": 1, "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello."},
                    "finish_reason": "stop"}]})));
        }
        hello_stream()
    })
}

fn llama_server() -> axum::Router {
    axum::Router::new()
        .route(
            "/props",
            get(|| async {
                axum::Json(json!({
                    "default_generation_settings": {"n_ctx": 4096, "params": {}},
                    "total_slots": 1,
                    "model_path": "/models/qwen2.5-coder-0.5b-instruct.gguf",
                    "chat_template": HERMES_TEMPLATE,
                    "build_info": "b6000-abcdef",
                }))
            }),
        )
        .route("/v1/models", models("llamacpp"))
        .route("/v1/chat/completions", chat())
}

fn llama_cpp_python() -> axum::Router {
    axum::Router::new()
        .route("/v1/models", models("me"))
        .route("/v1/chat/completions", chat())
}

fn ollama() -> axum::Router {
    axum::Router::new()
        .route(
            "/api/version",
            get(|| async { axum::Json(json!({"version": "0.5.7"})) }),
        )
        .route(
            "/api/show",
            post(|axum::Json(asked): axum::Json<Json>| async move {
                assert_eq!(asked["model"], "the-model");
                axum::Json(json!({
                    "modelfile": "FROM qwen2.5",
                    "template": "{{- if .ToolCalls }}<tool_call>\n{{ range .ToolCalls }}{{ end }}</tool_call>{{ end }}",
                    "details": {"family": "qwen2"},
                }))
            }),
        )
        .route("/v1/models", models("library"))
        .route("/v1/chat/completions", chat())
}

fn vllm(version: &'static str) -> axum::Router {
    axum::Router::new()
        .route(
            "/version",
            get(move || async move { axum::Json(json!({"version": version})) }),
        )
        .route("/v1/models", models("vllm"))
        .route("/v1/chat/completions", chat())
}

/// `atfunc serve` in front of `upstream` with `args`, asking it what it is (no
/// `--no-detect`, unlike `serve_args`).
fn start(upstream: &str, args: &[&str]) -> Served {
    start_with(upstream, args, &[])
}

fn start_with(upstream: &str, args: &[&str], env: &[(&str, &str)]) -> Served {
    let mut command = Command::new(env!("CARGO_BIN_EXE_atfunc"));
    command
        .args(["serve", "--upstream", upstream, "--listen", "127.0.0.1:0"])
        .args(args)
        .envs(env.iter().copied());
    Served::spawn(command)
}

impl Served {
    /// `GET /atfunc/policy` (with `key` as the bearer, when given): its status and JSON.
    async fn policy_with(&self, key: Option<&str>) -> (u16, Json) {
        let mut request =
            reqwest::Client::new().get(format!("http://{}/atfunc/policy", self.address));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        let answer = request
            .timeout(Duration::from_secs(20))
            .send()
            .await
            .expect("the gateway answers");
        let status = answer.status().as_u16();
        (status, answer.json().await.unwrap_or(Json::Null))
    }

    async fn policy(&self) -> Json {
        let (status, policy) = self.policy_with(None).await;
        assert_eq!(status, 200, "{policy}");
        policy
    }

    /// What the gateway wrote to stderr after the line that says where it listens, once
    /// it holds `wanted` (or after 10 s: the caller's check then says what it lacks).
    async fn said(&self, wanted: &str) -> String {
        self.stderr_with(&[wanted]).await.join("\n")
    }

    /// A request with one tool, whole: its status.
    async fn ask_with_tools(&self) -> u16 {
        let body = json!({"model": "m", "messages": [{"role": "user", "content": "Weather?"}],
            "tools": [{"type": "function", "function": {"name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]});
        reqwest::Client::new()
            .post(format!("http://{}/v1/chat/completions", self.address))
            .json(&body)
            .timeout(Duration::from_secs(20))
            .send()
            .await
            .expect("the gateway answers")
            .status()
            .as_u16()
    }
}

fn setting(policy: &Json, name: &str) -> (Json, String) {
    let setting = &policy["policy"][name];
    (
        setting["value"].clone(),
        setting["from"].as_str().unwrap_or_default().to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_server_is_found_by_its_props_and_its_template_read() {
    let (url, _) = upstream(llama_server()).await;
    let served = start(&url, &[]);
    let policy = served.policy().await;
    assert_eq!(policy["upstream"]["state"], "found", "{policy}");
    assert_eq!(policy["upstream"]["server"], "llama-server");
    assert_eq!(policy["upstream"]["by"], "GET /props answered");
    assert_eq!(policy["upstream"]["version"], "b6000-abcdef");
    assert_eq!(policy["upstream"]["template_calls"], "hermes");
    assert_eq!(policy["upstream"]["grammar_field"], "grammar");
    assert_eq!(
        setting(&policy, "upstream_kind"),
        (json!("llama-cpp"), "detected".into())
    );
    assert_eq!(
        setting(&policy, "dialect"),
        (json!("atfunc"), "detected".into())
    );
    assert_eq!(
        setting(&policy, "constrain"),
        (json!(false), "detected".into())
    );
    assert_eq!(
        setting(&policy, "hermes_blocks"),
        (json!(false), "default".into())
    );
    let said = served.said("policy:").await;
    assert!(
        said.contains("upstream: llama.cpp's llama-server b6000-abcdef (GET /props answered)"),
        "{said}"
    );
    assert!(said.contains("hermes <tool_call>"), "{said}");
    assert!(
        said.contains("policy: upstream kind llama-cpp (detected"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_cpp_python_is_found_by_who_owns_its_models() {
    let (url, _) = upstream(llama_cpp_python()).await;
    let served = start(&url, &[]);
    let policy = served.policy().await;
    assert_eq!(policy["upstream"]["server"], "llama-cpp-python", "{policy}");
    assert_eq!(policy["upstream"]["template_calls"], Json::Null);
    assert_eq!(policy["upstream"]["grammar_field"], "grammar");
    assert_eq!(
        setting(&policy, "upstream_kind"),
        (json!("llama-cpp"), "detected".into())
    );
    // No template was read: the call format is the default's.
    assert_eq!(
        setting(&policy, "dialect"),
        (json!("atfunc"), "default".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ollama_is_found_its_models_template_read_and_no_grammar_sent() {
    let (url, seen) = upstream(ollama()).await;
    let served = start(&url, &[]);
    let policy = served.policy().await;
    assert_eq!(policy["upstream"]["server"], "ollama", "{policy}");
    assert_eq!(policy["upstream"]["version"], "0.5.7");
    assert_eq!(policy["upstream"]["model"], "the-model");
    assert_eq!(policy["upstream"]["template_calls"], "hermes");
    assert_eq!(policy["upstream"]["grammar_field"], Json::Null);
    assert_eq!(
        setting(&policy, "constrain"),
        (json!(false), "detected".into())
    );
    let shown = seen
        .lock()
        .unwrap()
        .iter()
        .any(|(method, path, _)| method == "POST" && path == "/api/show");
    assert!(shown, "the model's template was not asked for");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_is_found_and_its_grammars_go_where_it_reads_them() {
    let (url, seen) = upstream(vllm("0.11.0")).await;
    let served = start(&url, &["--constrain"]);
    let policy = served.policy().await;
    assert_eq!(policy["upstream"]["server"], "vllm", "{policy}");
    assert_eq!(policy["upstream"]["grammar_field"], "structured_outputs");
    assert_eq!(
        setting(&policy, "upstream_kind"),
        (json!("vllm"), "detected".into())
    );
    assert_eq!(setting(&policy, "constrain"), (json!(true), "flag".into()));
    assert_eq!(served.ask_with_tools().await, 200);
    let sent = seen
        .lock()
        .unwrap()
        .iter()
        .rev()
        .find(|(_, path, _)| path == "/v1/chat/completions")
        .map(|(_, _, body)| serde_json::from_str::<Json>(body).unwrap())
        .expect("a request went upstream");
    assert!(sent["structured_outputs"]["grammar"].is_string(), "{sent}");
    assert!(sent.get("grammar").is_none(), "{sent}");

    // Older vLLM reads `guided_grammar`.
    let (url, _) = upstream(vllm("0.9.2")).await;
    let older = start(&url, &[]).policy().await;
    assert_eq!(
        setting(&older, "upstream_kind"),
        (json!("vllm-guided"), "detected".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flags_win_over_what_was_found() {
    let (url, seen) = upstream(vllm("0.11.0")).await;
    let flags = [
        "--upstream-kind",
        "sglang",
        "--upstream-dialect",
        "hermes",
        "--no-constrain",
    ];
    let served = start(&url, &flags);
    let policy = served.policy().await;
    assert_eq!(policy["upstream"]["server"], "vllm", "{policy}");
    assert_eq!(
        setting(&policy, "upstream_kind"),
        (json!("sglang"), "flag".into())
    );
    assert_eq!(
        setting(&policy, "dialect"),
        (json!("hermes"), "flag".into())
    );
    assert_eq!(setting(&policy, "constrain"), (json!(false), "flag".into()));

    // --no-detect asks nothing: the flags and the defaults alone.
    seen.lock().unwrap().clear();
    let plain = start(&url, &["--no-detect"]);
    let policy = plain.policy().await;
    assert_eq!(policy["upstream"]["state"], "off", "{policy}");
    assert_eq!(
        setting(&policy, "upstream_kind"),
        (json!("llama-cpp"), "default".into())
    );
    assert_eq!(*seen.lock().unwrap(), vec![]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_route_needs_the_key() {
    let (url, _) = upstream(llama_cpp_python()).await;
    let key = [("ATFUNC_DETECT_KEY", "k3y")];
    let served = start_with(&url, &["--api-key-env", "ATFUNC_DETECT_KEY"], &key);
    let (status, _) = served.policy_with(None).await;
    assert_eq!(status, 401);
    let (status, policy) = served.policy_with(Some("k3y")).await;
    assert_eq!(status, 200, "{policy}");
    assert_eq!(policy["upstream"]["server"], "llama-cpp-python");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_answers_late_is_found_in_the_background() {
    let up = Arc::new(AtomicBool::new(false));
    let loading = {
        let up = Arc::clone(&up);
        llama_server().layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let up = up.load(Ordering::SeqCst);
                async move {
                    if up {
                        return next.run(request).await;
                    }
                    // llama-server's answer to every route while it loads its model.
                    axum::response::IntoResponse::into_response((
                        axum::http::StatusCode::SERVICE_UNAVAILABLE,
                        axum::Json(json!({"error": {"code": 503, "message": "Loading model"}})),
                    ))
                }
            },
        ))
    };
    let (url, _) = upstream(loading).await;
    let served = start(&url, &["--detect-wait", "0.5"]);
    let policy = served.policy().await;
    assert_eq!(policy["upstream"]["state"], "waiting", "{policy}");
    assert_eq!(
        setting(&policy, "upstream_kind"),
        (json!("llama-cpp"), "default".into())
    );
    let said = served.said("nothing answered yet").await;
    assert!(said.contains("nothing answered yet"), "{said}");
    up.store(true, Ordering::SeqCst);
    // The background probes wait 1 s, then 2 s, 4 s, ...: found within a few of them.
    let deadline = Instant::now() + Duration::from_secs(30);
    let policy = loop {
        let policy = served.policy().await;
        if policy["upstream"]["state"] == "found" || Instant::now() > deadline {
            break policy;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(policy["upstream"]["server"], "llama-server", "{policy}");
    assert_eq!(
        setting(&policy, "upstream_kind"),
        (json!("llama-cpp"), "detected".into())
    );
    let said = served.said("the upstream answered now").await;
    assert!(said.contains("the upstream answered now"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_signal_while_the_upstream_is_awaited_ends_the_command_cleanly() {
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut served = start(
        &format!("http://127.0.0.1:{port}"),
        &["--detect-wait", "60"],
    );
    // The address is written just before the wait begins; the signal comes well inside it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pid = i32::try_from(served.child.id()).unwrap();
    // SAFETY: `kill` with a child's own pid and a signal number has no memory effects.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = served.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "atfunc serve did not stop");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status:?}");
}
