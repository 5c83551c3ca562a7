//! The http tool box against a real server: axum, started by each test on 127.0.0.1.
#![cfg(feature = "http")]

use atfunc::{load_interfaces_str, Interface};
use atfunc_tools::{CallContext, HttpBox, Registry, ToolBox, ToolError};
use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{any, get};
use axum::Router;
use serde_json::{json, Map, Value};
use std::time::Duration;

/// The credential the server expects; it must never come back to the model.
const TOKEN: &str = "s3cr3t-t0ken-8f2a61";

async fn echo(
    route: &'static str,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let auth_ok = headers
        .get(header::AUTHORIZATION)
        .is_some_and(|v| v.as_bytes() == format!("Bearer {TOKEN}").as_bytes());
    let shown: Map<String, Value> = headers
        .iter()
        .filter(|(name, _)| *name != header::AUTHORIZATION)
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                Value::String(String::from_utf8_lossy(value.as_bytes()).into_owned()),
            )
        })
        .collect();
    axum::Json(json!({
        "route": route,
        "method": method.as_str(),
        "path": uri.path(),
        "query": uri.query(),
        "auth_ok": auth_ok,
        "headers": shown,
        "body": String::from_utf8_lossy(&body),
    }))
    .into_response()
}

/// Every character as a JSON `\u` escape, as some encoders write characters they deem unsafe.
fn json_escaped(text: &str) -> String {
    text.chars()
        .map(|c| format!("\\u{:04x}", u32::from(c)))
        .collect()
}

/// A server that echoes the credential in JSON escapes: not the secret's text, but the
/// secret once the JSON is read.
fn escaped_echo(status: StatusCode, headers: &HeaderMap) -> Response {
    let sent = headers
        .get(header::AUTHORIZATION)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    let body = format!("{{\"you_sent\": \"{}\"}}", json_escaped(&sent));
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Base64 with padding, in the standard or the URL-safe alphabet.
fn base64(bytes: &[u8], url_safe: bool) -> String {
    let alphabet: &[u8] = if url_safe {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    } else {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    };
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .chain(std::iter::repeat(&0))
            .take(3)
            .fold(0u32, |n, b| n << 8 | u32::from(*b));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(alphabet[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The credential echoed back in one of the spellings a backend might use.
fn encoded_echo(how: &str, sent: &str) -> String {
    let token = sent.strip_prefix("Bearer ").unwrap_or(sent);
    match how {
        "basic" => format!(
            "Authorization: Basic {}",
            base64(format!("bob:{token}").as_bytes(), false)
        ),
        "base64url" => format!("token={}", base64(format!("x{token}").as_bytes(), true)),
        "percent" => format!(
            "/callback?t={}",
            token
                .bytes()
                .map(|b| format!("%{b:02X}"))
                .collect::<String>()
        ),
        "ndjson" => format!("{{\"n\": 1}}\n{{\"sent\": \"{}\"}}\n", json_escaped(token)),
        "trailing" => format!("{{\"ok\": true}} then \"{}\"", json_escaped(sent)),
        // Basic auth whose password ends it, at each of the three alignments.
        "end0" | "end1" | "end2" => {
            let user = &"ab"[..usize::from(how.as_bytes()[3] - b'0')];
            base64(format!("{user}{token}").as_bytes(), false)
        }
        "hex" => format!(
            "sha-input={}",
            token
                .bytes()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        ),
        "HEX" => format!(
            "KEY {}",
            token
                .bytes()
                .map(|b| format!("{b:02X}"))
                .collect::<String>()
        ),
        _ => String::from("unknown"),
    }
}

fn app() -> Router {
    Router::new()
        .route(
            "/users/{org}",
            any(|m: Method, u: Uri, h: HeaderMap, b: Bytes| echo("users", m, u, h, b)),
        )
        .route(
            "/echo/{*rest}",
            any(|m: Method, u: Uri, h: HeaderMap, b: Bytes| echo("echo", m, u, h, b)),
        )
        .route(
            "/admin",
            any(|m: Method, u: Uri, h: HeaderMap, b: Bytes| echo("admin", m, u, h, b)),
        )
        .route(
            "/leak",
            get(|h: HeaderMap| async move {
                let sent = h
                    .get(header::AUTHORIZATION)
                    .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
                axum::Json(json!({"you_sent": sent}))
            }),
        )
        .route(
            "/fail",
            get(|| async {
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "database exploded at row 7",
                )
            }),
        )
        .route(
            "/hang",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                "late"
            }),
        )
        .route("/big", get(|| async { "x".repeat(10 * 1024 * 1024) }))
        .route(
            "/big-stream",
            get(|| async {
                let chunks =
                    (0..160).map(|_| Ok::<_, std::io::Error>(Bytes::from(vec![b'y'; 64 * 1024])));
                Body::from_stream(futures::stream::iter(chunks))
            }),
        )
        .route("/loop", get(|| async { Redirect::temporary("/loop") }))
        .route(
            "/away",
            get(|| async { Redirect::temporary("http://127.0.0.1:9/elsewhere") }),
        )
        .route(
            "/home",
            get(|| async { Redirect::temporary("/echo/arrived") }),
        )
        .route(
            "/leak-escaped",
            get(|h: HeaderMap| async move { escaped_echo(StatusCode::OK, &h) }),
        )
        .route(
            "/leak-escaped-error",
            get(|h: HeaderMap| async move { escaped_echo(StatusCode::FORBIDDEN, &h) }),
        )
        .route("/api/out", get(|| async { Redirect::temporary("/admin") }))
        .route(
            "/api/sibling",
            get(|| async { Redirect::temporary("/apix") }),
        )
        .route(
            "/api/in",
            get(|| async { Redirect::temporary("/api/there") }),
        )
        .route(
            "/api/there",
            any(|m: Method, u: Uri, h: HeaderMap, b: Bytes| echo("there", m, u, h, b)),
        )
        .route(
            "/leak-encoded/{how}",
            get(
                |axum::extract::Path(how): axum::extract::Path<String>, h: HeaderMap| async move {
                    let sent = h
                        .get(header::AUTHORIZATION)
                        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                        .unwrap_or_default();
                    encoded_echo(&how, &sent)
                },
            ),
        )
        .route("/empty", get(|| async { StatusCode::NO_CONTENT }))
        .route("/text", get(|| async { "plain words" }))
        .route(
            "/chart.png",
            get(|| async { ([(header::CONTENT_TYPE, "image/png")], PNG_BYTES.to_vec()) }),
        )
        .route("/blob", get(|| async { vec![0u8, 159, 146, 150, 255] }))
        .route(
            "/leaky.png",
            get(|h: HeaderMap| async move {
                let mut bytes = PNG_BYTES.to_vec();
                bytes.extend_from_slice(h.get(header::AUTHORIZATION).unwrap().as_bytes());
                ([(header::CONTENT_TYPE, "IMAGE/PNG; q=1")], bytes)
            }),
        )
}

/// The start of a PNG file: not UTF-8.
const PNG_BYTES: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

/// Starts the server; its base URL.
async fn serve() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app()).await.unwrap();
    });
    format!("http://{address}")
}

const INTERFACES: &str = r#"[
  {"domain": "api", "name": "get_user", "type": "api-wrapper", "description": "A user",
   "returns": "object",
   "path_params": {"org": {"type": "string", "isRequired": true, "description": "Organisation"}},
   "query_params": {"q": {"type": "string", "isRequired": false, "description": "Filter"},
                    "limit": {"type": "integer", "isRequired": false, "description": "Page size"},
                    "tags": {"type": "array", "isRequired": false, "description": "Tags"}}},
  {"domain": "api", "name": "create_user", "type": "api-wrapper", "description": "Create a user",
   "returns": "object",
   "path_params": {"org": {"type": "string", "isRequired": true, "description": "Organisation"}},
   "request_body": {"name": {"type": "string", "required": true, "description": "Name"}}},
  {"name": "api.post_fields", "description": "Plain parameters sent as a JSON body",
   "parameters": {"type": "object", "properties": {"a": {"type": "string"}, "n": {"type": "integer"}}}},
  {"name": "api.search", "description": "Plain parameters sent as a query",
   "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}},
  {"name": "api.fail", "description": "x", "parameters": {"type": "object", "properties": {}}},
  {"name": "api.hang", "description": "x", "parameters": {"type": "object", "properties": {}}},
  {"name": "api.big", "description": "x", "parameters": {"type": "object", "properties": {}}},
  {"name": "api.big_stream", "description": "x", "parameters": {"type": "object", "properties": {}}},
  {"name": "api.loop_forever", "description": "x", "parameters": {"type": "object", "properties": {}}},
  {"name": "api.away", "description": "x", "parameters": {"type": "object", "properties": {}}},
  {"name": "api.home", "description": "x", "parameters": {"type": "object", "properties": {}}},
  {"name": "api.empty", "description": "x", "parameters": {"type": "object", "properties": {}}},
  {"name": "api.text", "description": "x", "parameters": {"type": "object", "properties": {}}},
  {"name": "api.leak", "description": "x", "parameters": {"type": "object", "properties": {}}}
]"#;

const ROUTES: &[(&str, &str, &str)] = &[
    ("get_user", "GET", "/users/{org}"),
    ("create_user", "POST", "/users/{org}"),
    ("post_fields", "POST", "/echo/fields"),
    ("search", "GET", "/echo/search"),
    ("fail", "GET", "/fail"),
    ("hang", "GET", "/hang"),
    ("big", "GET", "/big"),
    ("big_stream", "GET", "/big-stream"),
    ("loop_forever", "GET", "/loop"),
    ("away", "GET", "/away"),
    ("home", "GET", "/home"),
    ("empty", "GET", "/empty"),
    ("text", "GET", "/text"),
    ("leak", "GET", "/leak"),
];

fn api(base: &str) -> HttpBox {
    let mut builder = HttpBox::builder("api", base)
        .secret_header("Authorization", format!("Bearer {TOKEN}"))
        .header("X-Client", "atfunc-tests")
        .timeout(Duration::from_secs(2));
    for interface in load_interfaces_str(INTERFACES).unwrap() {
        let (_, method, path) = ROUTES
            .iter()
            .find(|(name, _, _)| *name == interface.name)
            .unwrap();
        builder = builder.endpoint(interface, *method, *path);
    }
    builder.build().unwrap()
}

async fn registry() -> Registry {
    let registry = Registry::new();
    registry.register(api(&serve().await)).unwrap();
    registry
}

async fn call(api: &HttpBox, function: &str, args: Value) -> Result<Value, ToolError> {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    api.call(function, args, &CallContext::new()).await
}

#[tokio::test]
async fn path_and_query_parameters_reach_the_server() {
    let registry = registry().await;
    let report = registry
        .execute_response(r#"@api.get_user("acme", q="a b&admin=1", limit=5, tags=["x", "y"])"#)
        .await;
    let result = report.calls[0].result.as_ref().unwrap();
    assert_eq!(result["route"], "users");
    assert_eq!(result["method"], "GET");
    assert_eq!(result["path"], "/users/acme");
    assert_eq!(result["query"], "q=a+b%26admin%3D1&limit=5&tags=x&tags=y");
    assert_eq!(result["auth_ok"], true);
    assert_eq!(result["headers"]["x-client"], "atfunc-tests");
    assert!(result["headers"]["user-agent"]
        .as_str()
        .unwrap()
        .starts_with("atfunc/"));
}

#[tokio::test]
async fn the_with_body_block_is_the_json_body() {
    let registry = registry().await;
    let report = registry
        .execute_response(r#"Creating. @api.create_user("acme") with_body [[{"name": "Ann"}]]"#)
        .await;
    let result = report.calls[0].result.as_ref().unwrap();
    assert_eq!(result["method"], "POST");
    assert_eq!(result["path"], "/users/acme");
    assert_eq!(result["headers"]["content-type"], "application/json");
    assert_eq!(
        serde_json::from_str::<Value>(result["body"].as_str().unwrap()).unwrap(),
        json!({"name": "Ann"})
    );
}

#[tokio::test]
async fn plain_parameters_form_the_body_of_a_post_and_the_query_of_a_get() {
    let api = api(&serve().await);
    let posted = call(&api, "post_fields", json!({"a": "x", "n": 2}))
        .await
        .unwrap();
    assert_eq!(posted["query"], Value::Null);
    assert_eq!(
        serde_json::from_str::<Value>(posted["body"].as_str().unwrap()).unwrap(),
        json!({"a": "x", "n": 2})
    );
    let searched = call(&api, "search", json!({"q": "rust"})).await.unwrap();
    assert_eq!(searched["query"], "q=rust");
    assert_eq!(searched["body"], "");
}

#[tokio::test]
async fn path_values_cannot_reach_another_route() {
    let api = api(&serve().await);
    for (org, path) in [
        ("../admin", "/users/..%2Fadmin"),
        ("a/../../admin", "/users/a%2F..%2F..%2Fadmin"),
        ("a%2F..%2Fadmin", "/users/a%252F..%252Fadmin"),
        ("x?admin=1#top", "/users/x%3Fadmin%3D1%23top"),
        ("...", "/users/..."),
        ("é ü", "/users/%C3%A9%20%C3%BC"),
    ] {
        let result = call(&api, "get_user", json!({"org": org})).await.unwrap();
        assert_eq!(result["route"], "users", "{org}");
        assert_eq!(result["path"], path, "{org}");
        assert_eq!(result["query"], Value::Null, "{org}");
    }
    for org in ["..", ".", ""] {
        let error = call(&api, "get_user", json!({"org": org}))
            .await
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("Function 'api.get_user' "), "{error}");
    }
}

#[tokio::test]
async fn an_http_error_is_an_error_with_the_status_and_an_excerpt() {
    let registry = registry().await;
    let report = registry.execute_response("@api.fail() @api.text()").await;
    assert_eq!(
        report.calls[0].result.clone().map_err(|e| e.to_string()),
        Err(String::from(
            "Function 'api.fail' failed: HTTP 500 Internal Server Error from GET /fail: database exploded at row 7"
        ))
    );
    assert_eq!(report.calls[1].result, Ok(json!("plain words")));
}

#[tokio::test]
async fn a_server_that_hangs_times_out() {
    let api = HttpBox::builder("api", serve().await)
        .endpoint(
            load_interfaces_str(INTERFACES).unwrap().remove(5),
            "GET",
            "/hang",
        )
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    match call(&api, "hang", json!({})).await {
        Err(ToolError::Timeout { name, limit }) => {
            assert_eq!(name, "api.hang");
            assert_eq!(limit, Duration::from_millis(300));
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
}

#[tokio::test]
async fn a_response_over_the_cap_is_refused() {
    let api = api(&serve().await);
    for function in ["big", "big_stream"] {
        let error = call(&api, function, json!({}))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("got an answer larger than 1 MiB (HTTP 200 from GET /big"),
            "{error}"
        );
    }
}

#[tokio::test]
async fn redirects_are_bounded_and_stay_on_the_origin() {
    let api = api(&serve().await);
    let error = call(&api, "loop_forever", json!({}))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("the server redirected more than 5 times"),
        "{error}"
    );
    let error = call(&api, "away", json!({})).await.unwrap_err().to_string();
    assert!(error.contains("redirected to another site"), "{error}");
    let home = call(&api, "home", json!({})).await.unwrap();
    assert_eq!(home["path"], "/echo/arrived");
    assert_eq!(home["auth_ok"], true);
}

#[tokio::test]
async fn redirects_stay_under_the_base_path() {
    let interfaces = load_interfaces_str(
        r#"[{"name": "api.out", "description": "x", "parameters": {"type": "object", "properties": {}}},
            {"name": "api.sibling", "description": "x", "parameters": {"type": "object", "properties": {}}},
            {"name": "api.inside", "description": "x", "parameters": {"type": "object", "properties": {}}}]"#,
    )
    .unwrap();
    let api = HttpBox::builder("api", format!("{}/api", serve().await))
        .secret_header("Authorization", format!("Bearer {TOKEN}"))
        .endpoint(interfaces[0].clone(), "GET", "/out")
        .endpoint(interfaces[1].clone(), "GET", "/sibling")
        .endpoint(interfaces[2].clone(), "GET", "/in")
        .build()
        .unwrap();
    for function in ["out", "sibling"] {
        let error = call(&api, function, json!({}))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("redirected outside the API's base path"),
            "{function}: {error}"
        );
    }
    let inside = call(&api, "inside", json!({})).await.unwrap();
    assert_eq!(inside["path"], "/api/there");
    assert_eq!(inside["auth_ok"], true);
}

#[tokio::test]
async fn a_secret_echoed_in_other_encodings_is_blanked() {
    let kinds = ["basic", "base64url", "percent", "ndjson", "trailing"];
    let mut builder = HttpBox::builder("api", serve().await)
        .secret_header("Authorization", format!("Bearer {TOKEN}"));
    for kind in kinds {
        let interface = load_interfaces_str(&format!(
            r#"[{{"name": "api.{kind}", "description": "x", "parameters": {{"type": "object", "properties": {{}}}}}}]"#
        ))
        .unwrap()
        .remove(0);
        builder = builder.endpoint(interface, "GET", format!("/leak-encoded/{kind}"));
    }
    let api = builder.build().unwrap();
    // The middle of each encoding: what would give the secret away.
    let basic = base64(format!("bob:{TOKEN}").as_bytes(), false);
    let url = base64(format!("x{TOKEN}").as_bytes(), true);
    let tells = [
        TOKEN.to_owned(),
        basic[8..basic.len() - 4].to_owned(),
        url[4..url.len() - 4].to_owned(),
        json_escaped(&TOKEN[2..TOKEN.len() - 2]),
        TOKEN[2..TOKEN.len() - 2]
            .bytes()
            .map(|b| format!("%{b:02X}"))
            .collect(),
    ];
    for kind in kinds {
        let seen = call(&api, kind, json!({})).await.unwrap().to_string();
        assert!(seen.contains("[redacted]"), "{kind}: {seen}");
        for tell in &tells {
            assert!(!seen.contains(tell.as_str()), "{kind} leaks {tell}: {seen}");
        }
    }
}

/// The last group of base64 that ends with the secret holds only the secret's bytes
/// (`dWU=` is "ue"): it is blanked too.
#[tokio::test]
async fn a_secret_ending_base64_keeps_none_of_its_bytes() {
    let kinds = ["end0", "end1", "end2"];
    let mut builder = HttpBox::builder("api", serve().await)
        .secret_header("Authorization", format!("Bearer {TOKEN}"));
    for kind in kinds {
        let interface = load_interfaces_str(&format!(
            r#"[{{"name": "api.{kind}", "description": "x", "parameters": {{"type": "object", "properties": {{}}}}}}]"#
        ))
        .unwrap()
        .remove(0);
        builder = builder.endpoint(interface, "GET", format!("/leak-encoded/{kind}"));
    }
    let api = builder.build().unwrap();
    for kind in kinds {
        let seen = call(&api, kind, json!({})).await.unwrap();
        let seen = seen.as_str().unwrap_or_default();
        assert!(seen.ends_with("[redacted]"), "{kind}: {seen}");
    }
}

#[tokio::test]
async fn a_secret_echoed_in_hex_is_blanked() {
    let mut builder = HttpBox::builder("api", serve().await)
        .secret_header("Authorization", format!("Bearer {TOKEN}"));
    for kind in ["hex", "HEX"] {
        let interface = load_interfaces_str(&format!(
            r#"[{{"name": "api.{kind}", "description": "x", "parameters": {{"type": "object", "properties": {{}}}}}}]"#
        ))
        .unwrap()
        .remove(0);
        builder = builder.endpoint(interface, "GET", format!("/leak-encoded/{kind}"));
    }
    let api = builder.build().unwrap();
    let middle = &TOKEN.as_bytes()[2..TOKEN.len() - 2];
    for (kind, tell) in [
        (
            "hex",
            middle
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>(),
        ),
        (
            "HEX",
            middle
                .iter()
                .map(|b| format!("{b:02X}"))
                .collect::<String>(),
        ),
    ] {
        let seen = call(&api, kind, json!({})).await.unwrap().to_string();
        assert!(seen.contains("[redacted]"), "{kind}: {seen}");
        assert!(!seen.contains(&tell), "{kind} leaks {tell}: {seen}");
    }
}

#[tokio::test]
async fn an_empty_answer_says_its_status() {
    let api = api(&serve().await);
    assert_eq!(
        call(&api, "empty", json!({})).await,
        Ok(json!("HTTP 204 No Content"))
    );
}

#[tokio::test]
async fn the_secret_header_never_comes_back() {
    let base = serve().await;
    let api = api(&base);
    assert!(!format!("{api:?}").contains(TOKEN));
    // A server that echoes the credential: the echo is blanked.
    let leaked = call(&api, "leak", json!({})).await.unwrap();
    assert_eq!(leaked, json!({"you_sent": "[redacted]"}));
    let registry = Registry::new();
    registry.register(api).unwrap();
    let report = registry
        .execute_response(
            "@api.get_user(\"acme\") @api.fail() @api.leak() @api.big() @api.loop_forever() @api.away() @api.nothing()",
        )
        .await;
    let everything = format!(
        "{}\n{}\n{:?}\n{registry:?}",
        report.output,
        report.to_json(),
        report.calls
    );
    assert!(!everything.contains(TOKEN), "{everything}");
    // The server did receive it.
    assert_eq!(report.calls[0].result.as_ref().unwrap()["auth_ok"], true);
}

#[tokio::test]
async fn a_secret_echoed_in_json_escapes_is_blanked_too() {
    let interfaces = load_interfaces_str(
        r#"[{"name": "api.leak_escaped", "description": "x", "parameters": {"type": "object", "properties": {}}},
            {"name": "api.leak_escaped_error", "description": "x", "parameters": {"type": "object", "properties": {}}}]"#,
    )
    .unwrap();
    let api = HttpBox::builder("api", serve().await)
        .secret_header("Authorization", format!("Bearer {TOKEN}"))
        .endpoint(interfaces[0].clone(), "GET", "/leak-escaped")
        .endpoint(interfaces[1].clone(), "GET", "/leak-escaped-error")
        .build()
        .unwrap();
    let leaked = call(&api, "leak_escaped", json!({})).await.unwrap();
    assert_eq!(leaked, json!({"you_sent": "[redacted]"}));
    let error = call(&api, "leak_escaped_error", json!({}))
        .await
        .unwrap_err()
        .to_string();
    assert!(!error.contains(TOKEN), "{error}");
    assert!(!error.contains(&json_escaped(TOKEN)), "{error}");
    assert!(
        error.starts_with("Function 'api.leak_escaped_error' failed: HTTP 403 Forbidden"),
        "{error}"
    );
    assert!(error.contains("[redacted]"), "{error}");
}

#[tokio::test]
async fn a_server_that_is_down_is_an_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let api = api(&base);
    let error = call(&api, "text", json!({})).await.unwrap_err().to_string();
    assert_eq!(
        error,
        "Function 'api.text' could not reach the API (GET /text): the connection failed; the API may be down"
    );
}

#[test]
fn building_reports_every_problem_without_header_values() {
    let interfaces = load_interfaces_str(INTERFACES).unwrap();
    let error = HttpBox::builder("api", "ftp://x")
        .secret_header("Authorization", "Bearer line\nbreak-secret")
        .endpoint(interfaces[0].clone(), "FETCH", "/users/{org}")
        .endpoint(interfaces[1].clone(), "POST", "/users/{org_id}")
        .endpoint(interfaces[2].clone(), "POST", "echo")
        .build()
        .unwrap_err();
    assert_eq!(
        error.problems,
        [
            "field 'base_url' must be an http(s) URL, found \"ftp://x\"",
            "field 'headers': the value of 'Authorization' is not a valid header value (control characters or a line break?)",
            "function 'get_user': field 'method' must be GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS, found \"FETCH\"",
            "function 'create_user': field 'path': the placeholder {org_id} names no parameter of the function",
            "function 'create_user': path parameter 'org' has no {org} placeholder in field 'path'",
            "function 'post_fields': field 'path' must start with '/', found \"echo\"",
        ]
    );
    assert!(!error.to_string().contains("break-secret"));
}

#[tokio::test]
async fn names_that_are_not_identifiers_reach_the_server_as_defined() {
    let interfaces = load_interfaces_str(
        r#"[{"name": "api.get-user", "parameters": {"type": "object", "properties": {
            "org-id": {"type": "string"}, "max-results": {"type": "integer"},
            "$filter": {"type": "string"}}, "required": ["org-id"]}}]"#,
    )
    .unwrap();
    let mut builder = HttpBox::builder("api", serve().await)
        .secret_header("Authorization", format!("Bearer {TOKEN}"));
    for interface in interfaces {
        builder = builder.endpoint(interface, "GET", "/users/{org-id}");
    }
    let registry = Registry::new();
    registry.register(builder.build().unwrap()).unwrap();
    let report = registry
        .execute_response(r#"@api.get_user("acme", max_results=5, _filter="a")"#)
        .await;
    let outcome = &report.calls[0];
    assert_eq!(outcome.name, "api.get-user");
    let result = outcome.result.as_ref().unwrap();
    assert_eq!(result["path"], "/users/acme");
    assert_eq!(result["query"], "max-results=5&%24filter=a");
}

/// A binary answer goes whole to the client as an element, and the model reads one line.
#[tokio::test]
async fn a_binary_answer_is_an_element_and_a_line_for_the_model() {
    let base = serve().await;
    let plain = |name: &str| Interface::new(name).in_domain("files").describe("A file");
    let files = HttpBox::builder("files", &base)
        .secret_header("Authorization", format!("Bearer {TOKEN}"))
        .endpoint(plain("chart"), "GET", "/chart.png")
        .endpoint(plain("blob"), "GET", "/blob")
        .endpoint(plain("leaky"), "GET", "/leaky.png")
        .endpoint(plain("text"), "GET", "/text")
        .build()
        .unwrap();
    let registry = Registry::new();
    registry.register(files).unwrap();
    let report = registry
        .execute_response("@files.chart() @files.blob() @files.leaky() @files.text()")
        .await;
    let results: Vec<Value> = report
        .calls
        .iter()
        .map(|c| c.result.clone().unwrap())
        .collect();
    assert_eq!(results[0], json!("[image: image/png, 16 bytes]"));
    assert_eq!(
        report.calls[0].elements,
        [json!({"type": "image", "mime_type": "image/png", "data": "iVBORw0KGgoAAAANSUhEUg=="})]
    );
    // Bytes that are not UTF-8, of no declared type: a resource, named by where it came from.
    assert_eq!(
        results[1],
        json!("[resource: application/octet-stream, 5 bytes]")
    );
    assert_eq!(
        report.calls[1].elements,
        [json!({"type": "resource", "uri": format!("{base}/blob"),
                "mime_type": "application/octet-stream", "data": "AJ+Slv8="})]
    );
    // An answer that echoes a secret goes to no one.
    assert_eq!(
        results[2],
        json!("[image: image/png, 42 bytes, withheld: it holds a secret]")
    );
    assert!(report.calls[2].elements.is_empty());
    // Text stays the model's, and nothing else.
    assert_eq!(results[3], json!("plain words"));
    assert!(report.calls[3].elements.is_empty());
    assert!(!report.output.contains("iVBOR"), "{}", report.output);
}
