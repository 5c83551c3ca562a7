//! `atfunc exec --config` with an http tool box, against a real server on 127.0.0.1.

use axum::http::{header, HeaderMap, Uri};
use axum::routing::get;
use serde_json::{json, Value};

/// The credential the server expects; it must never come back to the model.
const TOKEN: &str = "s3cr3t-t0ken-8f2a61";

/// A server with two routes: `/users/{org}` says whether the credential came and which
/// path was asked, `/leak` sends the credential back.
async fn server() -> String {
    let app = axum::Router::new()
        .route(
            "/users/{org}",
            get(|uri: Uri, headers: HeaderMap| async move {
                let auth_ok = headers
                    .get(header::AUTHORIZATION)
                    .is_some_and(|v| v.as_bytes() == format!("Bearer {TOKEN}").as_bytes());
                axum::Json(json!({"auth_ok": auth_ok, "path": uri.path()}))
            }),
        )
        .route(
            "/leak",
            get(|headers: HeaderMap| async move {
                let sent = headers
                    .get(header::AUTHORIZATION)
                    .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
                axum::Json(json!({"you_sent": sent}))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    format!("http://{address}")
}

/// `atfunc exec --config`: the token comes from the environment, the server sees it, the
/// output never shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_with_a_config_reaches_the_server() {
    let base = server().await;
    let folder = tempfile::tempdir().unwrap();
    let config = json!({
    "toolboxes": [{
        "name": "api", "kind": "http", "base_url": base,
        "headers": {"Authorization": {"env": "ATFUNC_TEST_TOKEN", "prefix": "Bearer "}},
        "functions": [
            {"name": "get_user", "description": "A user",
             "parameters": {"type": "object", "properties": {"org": {"type": "string"}},
                            "required": ["org"]},
             "path": "/users/{org}"},
            {"name": "leak", "description": "Echoes the credential", "path": "/leak",
             "parameters": {"type": "object", "properties": {}}}
        ]}]});
    let config_path = folder.path().join("atfunc.json");
    std::fs::write(&config_path, config.to_string()).unwrap();
    let answer = folder.path().join("answer.txt");
    std::fs::write(&answer, "@api.get_user(\"acme\")\n@api.leak()\n").unwrap();
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_atfunc"))
            .args(["exec", "--json", "--config"])
            .arg(&config_path)
            .arg(&answer)
            .env("ATFUNC_TEST_TOKEN", TOKEN)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!stdout.contains(TOKEN), "{stdout}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["call_count"], 2);
    assert_eq!(report["calls"][0]["result"]["auth_ok"], true);
    assert_eq!(report["calls"][0]["result"]["path"], "/users/acme");
    assert_eq!(
        report["calls"][1]["result"],
        json!({"you_sent": "[redacted]"})
    );
}
