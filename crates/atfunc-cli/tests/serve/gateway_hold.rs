//! The gateway holds against stalled clients: `atfunc serve` with 256 file descriptors,
//! 300 connections that send nothing, half a request head, or a head and one byte of the
//! body are each closed after the time limit, and a normal request then gets its answer;
//! bodies that stall hold no place meanwhile. Every loop is bounded in count and time.
#![cfg(unix)]

use crate::served::{serve_args, Served};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

/// Stalled connections of each kind; with three kinds, more than the gateway's 256 file
/// descriptors.
const STALLED_PER_KIND: usize = 100;

/// How long the test waits for all stalled connections to be closed.
const CLOSE_WITHIN: Duration = Duration::from_secs(30);

impl Served {
    /// `atfunc serve` in front of `upstream`, with at most 256 open files, as a shell's
    /// `ulimit -n 256` leaves it.
    fn limited(upstream: &str, args: &[&str]) -> Served {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(r#"ulimit -n 256 && exec "$0" "$@""#)
            .arg(env!("CARGO_BIN_EXE_atfunc"))
            .args(serve_args(upstream))
            .args(args);
        Served::spawn(command)
    }
}

/// 48 MB of stream events at once: more than the sockets between a client that reads
/// nothing and the gateway hold.
fn flood() -> axum::response::Response {
    let event = axum::body::Bytes::from(format!(
        "data: {}\n\n",
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": "x".repeat(65000)}}]})
    ));
    let pieces = futures::stream::iter(
        std::iter::repeat_n(event, 48 << 20 >> 16).map(Ok::<_, std::convert::Infallible>),
    );
    axum::response::Response::builder()
        .header("content-type", "text/event-stream")
        .body(axum::body::Body::from_stream(pieces))
        .unwrap()
}

/// An upstream that answers every chat completion with "Hello.", at once or, when the
/// request says "slow", after a second ("hold": five seconds); one that says "flood" gets
/// [`flood`].
async fn upstream() -> String {
    use axum::routing::post;
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(|body: String| async move {
            if body.contains("slow") {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            if body.contains("hold") {
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
            if body.contains("flood") {
                return flood();
            }
            axum::response::IntoResponse::into_response(axum::Json(serde_json::json!({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello."},
                             "finish_reason": "stop"}]
            })))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}")
}

const HEAD: &str = "POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n";

/// Opens a connection and sends `first`, then nothing more.
fn stall(address: &str, first: &[u8]) -> (TcpStream, Instant) {
    let mut socket = TcpStream::connect(address).expect("connect");
    if !first.is_empty() {
        socket.write_all(first).expect("send");
    }
    (socket, Instant::now())
}

/// Waits (until `deadline`) for the gateway to close `socket`; how long after `since`.
fn closed_after(socket: &mut TcpStream, since: Instant, deadline: Instant) -> Option<Duration> {
    let mut buffer = [0u8; 4096];
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        socket
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .ok()?;
        match socket.read(&mut buffer) {
            Ok(0) => return Some(since.elapsed()),
            // An answer (408, 503) before the close.
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return Some(since.elapsed())
            }
            Err(_) => return None,
        }
    }
}

async fn chat(address: &str) -> reqwest::Response {
    ask(address, "hi").await
}

async fn ask(address: &str, question: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("http://{address}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(format!(
            r#"{{"model": "m", "messages": [{{"role": "user", "content": "{question}"}}]}}"#
        ))
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("the gateway answers")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_connections_are_closed_and_the_gateway_serves_again() {
    let upstream = upstream().await;
    let limit = Duration::from_secs(1);
    let served = Served::limited(
        &upstream,
        &[
            "--header-timeout",
            "1",
            "--body-timeout",
            "1",
            "--idle-timeout",
            "1",
        ],
    );
    let address = served.address.clone();
    let kinds: [&[u8]; 3] = [b"", b"POST /v1/chat/completions HTTP/1.1\r\nHost:", b""];
    let mut stalled = tokio::task::spawn_blocking(move || {
        let head_and_one_byte = format!("{HEAD}{{");
        let mut stalled = Vec::with_capacity(3 * STALLED_PER_KIND);
        for i in 0..3 * STALLED_PER_KIND {
            let first = match i % 3 {
                2 => head_and_one_byte.as_bytes(),
                kind => kinds[kind],
            };
            stalled.push(stall(&address, first));
        }
        stalled
    })
    .await
    .unwrap();
    let address = served.address.clone();
    let closed = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + CLOSE_WITHIN;
        stalled
            .iter_mut()
            .map(|(socket, since)| closed_after(socket, *since, deadline))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    let open = closed.iter().filter(|c| c.is_none()).count();
    assert_eq!(open, 0, "{open} stalled connections were never closed");
    // None is closed before its limit: the limits are what closes them.
    let earliest = closed.iter().flatten().min().copied().unwrap();
    assert!(earliest >= limit.mul_f64(0.9), "closed after {earliest:?}");

    let answer = chat(&address).await;
    assert_eq!(answer.status(), 200);
    let text = answer.text().await.unwrap();
    assert!(text.contains("Hello."), "{text}");
}

#[tokio::test]
async fn a_kept_alive_connection_is_closed_when_idle_and_a_slow_body_gets_408() {
    let upstream = upstream().await;
    let served = Served::limited(
        &upstream,
        &["--idle-timeout", "0.5", "--body-timeout", "0.5"],
    );
    let address = served.address.clone();
    tokio::task::spawn_blocking(move || {
        let body = r#"{"model": "m", "messages": [{"role": "user", "content": "hi"}]}"#;
        let request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let (mut socket, _) = stall(&address, request.as_bytes());
        socket
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut answer = Vec::new();
        let mut buffer = [0u8; 4096];
        // Until the answer's end, then the close, which comes after the idle limit.
        let mut answered = None;
        for _ in 0..1000 {
            match socket.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => {
                    answer.extend_from_slice(&buffer[..n]);
                    if answered.is_none() && String::from_utf8_lossy(&answer).contains("Hello.") {
                        answered = Some(Instant::now());
                    }
                }
                Err(e) => panic!("the idle connection was not closed: {e}"),
            }
        }
        let answered = answered.expect("answered");
        let idle = answered.elapsed();
        assert!(
            idle >= Duration::from_millis(400) && idle < Duration::from_secs(5),
            "closed {idle:?} after the answer"
        );

        // A head, then a body that never comes whole: 408, then the close.
        let (mut socket, _) = stall(&address, format!("{HEAD}{{").as_bytes());
        socket
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut answer = String::new();
        let _ = socket.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("did not arrive within 0.5s"), "{answer}");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn on_sigterm_the_request_under_way_is_answered_and_idle_connections_do_not_wait() {
    let upstream = upstream().await;
    let mut served = Served::limited(&upstream, &["--idle-timeout", "60"]);
    let address = served.address.clone();
    let idle = TcpStream::connect(&address).unwrap();
    let under_way = tokio::spawn(async move { ask(&address, "slow").await });
    // Until the request has reached the upstream (which then takes a second).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stopped = Instant::now();
    let pid = served.child.id().to_string();
    let kill = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(kill.success());
    let answer = under_way.await.unwrap();
    assert_eq!(answer.status(), 200);
    assert!(answer.text().await.unwrap().contains("Hello."));
    let mut exited = None;
    for _ in 0..100 {
        if let Some(status) = served.child.try_wait().unwrap() {
            exited = Some(status);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let status = exited.expect("the gateway did not exit within 5 s of SIGTERM");
    assert!(status.success(), "{status}");
    // Not held for the idle connection's 60 s.
    assert!(stopped.elapsed() < Duration::from_secs(5));
    drop(idle);
}

#[tokio::test]
async fn a_client_that_reads_nothing_of_its_stream_does_not_hold_its_place() {
    let upstream = upstream().await;
    let served = Served::limited(
        &upstream,
        &[
            "--max-concurrent",
            "1",
            "--idle-timeout",
            "1",
            "--max-response-bytes",
            "67108864",
        ],
    );
    let body =
        r#"{"model": "m", "stream": true, "messages": [{"role": "user", "content": "flood"}]}"#;
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    // Asks for the stream, then reads none of it.
    let (stalled, _) = stall(&served.address, request.as_bytes());
    let mut refused = 0;
    let mut answered = None;
    for _ in 0..75 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let answer = chat(&served.address).await;
        if answer.status() == 200 {
            answered = Some(answer.text().await.unwrap());
            break;
        }
        assert_eq!(answer.status(), 503);
        refused += 1;
    }
    let answered = answered.expect("the client that reads nothing held the only place for 15 s");
    assert!(answered.contains("Hello."), "{answered}");
    // The place was held at first: the limit is what freed it.
    assert!(refused >= 2, "refused {refused} times");
    drop(stalled);
}

/// An upstream that answers "Hello." and keeps the size of the largest request it got.
async fn measuring_upstream() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use axum::routing::post;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let largest = std::sync::Arc::new(AtomicUsize::new(0));
    let seen = largest.clone();
    let app = axum::Router::new()
        .route(
            "/v1/chat/completions",
            post(|body: axum::body::Bytes| async move {
                seen.fetch_max(body.len(), Ordering::SeqCst);
                axum::Json(serde_json::json!({
                    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello."},
                                 "finish_reason": "stop"}]
                }))
            }),
        )
        .layer(axum::extract::DefaultBodyLimit::max(256 << 20));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{address}"), largest)
}

/// A request with `tools` (and whatever else `extra` holds), its status and its text.
async fn with_tools(
    address: &str,
    tools: serde_json::Value,
    extra: serde_json::Value,
) -> (u16, String) {
    let mut body = serde_json::json!({"model": "m", "tools": tools,
        "messages": [{"role": "user", "content": "hi"}]});
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    let answer = reqwest::Client::new()
        .post(format!("http://{address}/v1/chat/completions"))
        .json(&body)
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .expect("the gateway answers");
    let status = answer.status().as_u16();
    (status, answer.text().await.unwrap_or_default())
}

fn tool(name: &str, parameters: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"type": "function", "function": {"name": name, "parameters": parameters}})
}

/// The issue's shape: ten properties that each refer to the object holding them.
fn self_referring() -> serde_json::Value {
    let props: serde_json::Map<String, serde_json::Value> = (0..10)
        .map(|i| (format!("p{i}"), serde_json::json!({"$ref": "#/$defs/D"})))
        .collect();
    serde_json::json!([tool(
        "bomb",
        serde_json::json!({"type": "object",
        "$defs": {"D": {"type": "object", "properties": props}},
        "properties": {"root": {"$ref": "#/$defs/D"}}})
    )])
}

/// Ten levels of definitions, each referring ten times to the next: 10^10 written out.
fn fanning_out() -> serde_json::Value {
    let mut defs = serde_json::Map::new();
    for level in 0..10 {
        let props: serde_json::Map<String, serde_json::Value> = (0..10)
            .map(|i| {
                let next = format!("#/$defs/L{}", level + 1);
                (format!("p{i}"), serde_json::json!({"$ref": next}))
            })
            .collect();
        defs.insert(
            format!("L{level}"),
            serde_json::json!({"type": "object", "properties": props}),
        );
    }
    defs.insert("L10".into(), serde_json::json!({"type": "string"}));
    serde_json::json!([tool(
        "fan",
        serde_json::json!({"type": "object", "$defs": defs,
        "properties": {"root": {"$ref": "#/$defs/L0"}}})
    )])
}

/// 1,000 references to one 27 KB definition: a 31 KB request.
fn copying() -> serde_json::Value {
    let big: Vec<String> = (0..3000).map(|i| format!("c{i:05}")).collect();
    let mut defs = serde_json::Map::new();
    for (name, next) in [("A", "B"), ("B", "C"), ("C", "Big")] {
        let props: serde_json::Map<String, serde_json::Value> = (0..10)
            .map(|i| {
                let target = format!("#/$defs/{next}");
                (format!("p{i}"), serde_json::json!({"$ref": target}))
            })
            .collect();
        defs.insert(
            name.into(),
            serde_json::json!({"type": "object", "properties": props}),
        );
    }
    defs.insert(
        "Big".into(),
        serde_json::json!({"type": "string", "enum": big}),
    );
    serde_json::json!([tool(
        "copies",
        serde_json::json!({"type": "object", "$defs": defs,
        "properties": {"root": {"$ref": "#/$defs/A"}}})
    )])
}

/// One object of 2,000 optional fields: 60 KB of tools.
fn flat() -> serde_json::Value {
    let props: serde_json::Map<String, serde_json::Value> = (0..2000)
        .map(|i| {
            (
                format!("field_{i:04}"),
                serde_json::json!({"type": "string"}),
            )
        })
        .collect();
    serde_json::json!([tool(
        "flat",
        serde_json::json!({"type": "object", "properties": props})
    )])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemas_that_expand_are_refused_and_the_gateway_serves_again() {
    let (upstream, largest) = measuring_upstream().await;
    let served = Served::limited(&upstream, &[]);
    let address = served.address.clone();

    // Turning grammars on is the server's decision.
    let (status, text) = with_tools(
        &address,
        self_referring(),
        serde_json::json!({"atfunc_constrain": true}),
    )
    .await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("--constrain-per-request"), "{text}");
    // Recursion reads as an open object where it recurs: the shape is small.
    let (status, text) = with_tools(&address, self_referring(), serde_json::json!({})).await;
    assert_eq!(status, 200, "{text}");

    // References that multiply, or copy a large definition, are refused naming the limit.
    let (status, text) = with_tools(&address, fanning_out(), serde_json::json!({})).await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("function 'fan'"), "{text}");
    assert!(text.contains("max_ref_nodes"), "{text}");
    let (status, text) = with_tools(&address, copying(), serde_json::json!({})).await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("max_ref_bytes"), "{text}");

    let answer = chat(&address).await;
    assert_eq!(answer.status(), 200);
    assert!(largest.load(std::sync::atomic::Ordering::SeqCst) < 1 << 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grammar_sent_upstream_stays_within_the_request_limit() {
    let (upstream, largest) = measuring_upstream().await;
    let served = Served::limited(
        &upstream,
        &["--constrain-per-request", "--max-request-bytes", "400000"],
    );
    let address = served.address.clone();
    let constrain = serde_json::json!({"atfunc_constrain": true});

    // 2,000 optional fields: 51.5 MB of grammar once; now a grammar that grows with the
    // fields and fits.
    let (status, text) = with_tools(&address, flat(), constrain.clone()).await;
    assert_eq!(status, 200, "{text}");
    let sent = largest.load(std::sync::atomic::Ordering::SeqCst);
    assert!((100_000..=400_000).contains(&sent), "{sent} bytes upstream");

    // 6,000 fields do not fit in what is left of 400,000 bytes: 413, nothing sent.
    let before = largest.load(std::sync::atomic::Ordering::SeqCst);
    let props: serde_json::Map<String, serde_json::Value> = (0..6000)
        .map(|i| (format!("f{i}"), serde_json::json!({"type": "integer"})))
        .collect();
    let wide = serde_json::json!([tool(
        "wide",
        serde_json::json!({"type": "object", "properties": props})
    )]);
    let (status, text) = with_tools(&address, wide.clone(), constrain.clone()).await;
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("--max-request-bytes"), "{text}");
    assert_eq!(largest.load(std::sync::atomic::Ordering::SeqCst), before);
    // Without a grammar the same tools go through.
    let (status, text) = with_tools(&address, wide, serde_json::json!({})).await;
    assert_eq!(status, 200, "{text}");

    // A recursive schema with the grammar: small, answered.
    let (status, text) = with_tools(&address, self_referring(), constrain).await;
    assert_eq!(status, 200, "{text}");
    assert!(largest.load(std::sync::atomic::Ordering::SeqCst) <= 400_000);
    let answer = chat(&address).await;
    assert_eq!(answer.status(), 200);
}

/// Sends `request` on a connection of its own and reads the answer to its end.
fn exchange(address: &str, request: &[u8]) -> String {
    let mut socket = TcpStream::connect(address).expect("connect");
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    socket.write_all(request).expect("send");
    let mut answer = Vec::new();
    let _ = socket.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

const CHUNKED: &str = "POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";

#[tokio::test]
async fn a_malformed_chunked_body_gets_400_and_only_a_body_over_the_limit_413() {
    let upstream = upstream().await;
    let served = Served::limited(&upstream, &["--max-request-bytes", "1000"]);
    let address = served.address.clone();
    tokio::task::spawn_blocking(move || {
        let (first, second) = (
            r#"{"model": "m", "messages": "#,
            r#"[{"role": "user", "content": "hi"}]}"#,
        );
        let whole = format!(
            "{CHUNKED}{:x}\r\n{first}\r\n{:x}\r\n{second}\r\n0\r\n\r\n",
            first.len(),
            second.len()
        );
        let answer = exchange(&address, whole.as_bytes());
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains("Hello."), "{answer}");

        let body = format!("{first}{second}");
        for malformed in [
            // A size line that is not hexadecimal.
            format!("{CHUNKED}zz\r\n{body}\r\n0\r\n\r\n"),
            // A chunk longer than its size says.
            format!("{CHUNKED}2\r\n{body}\r\n0\r\n\r\n"),
            // A size that overflows.
            format!("{CHUNKED}fffffffffffffffffff\r\n{body}\r\n0\r\n\r\n"),
        ] {
            let answer = exchange(&address, malformed.as_bytes());
            assert!(
                answer.starts_with("HTTP/1.1 400"),
                "{malformed:?}: {answer}"
            );
            assert!(
                answer.contains("The request body's chunked encoding is malformed"),
                "{malformed:?}: {answer}"
            );
        }

        // Well-formed chunks that add up to more than the limit.
        let piece = "x".repeat(600);
        let large = format!("{CHUNKED}258\r\n{piece}\r\n258\r\n{piece}\r\n0\r\n\r\n");
        let answer = exchange(&address, large.as_bytes());
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
        assert!(answer.contains("larger than 1000 bytes"), "{answer}");
    })
    .await
    .unwrap();
}

/// How the client of [`post_large`] fared: the answer's first line, or what failed.
fn post_large(address: &str, body: &[u8]) -> String {
    let mut socket = match TcpStream::connect(address) {
        Ok(socket) => socket,
        Err(e) => return format!("connect failed: {e}"),
    };
    let _ = socket.set_read_timeout(Some(Duration::from_secs(30)));
    let _ = socket.set_write_timeout(Some(Duration::from_secs(30)));
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    if let Err(e) = socket.write_all(head.as_bytes()) {
        return format!("sending the head failed: {e}");
    }
    if let Err(e) = socket.write_all(body) {
        return format!("sending the body failed: {e}");
    }
    let mut answer = Vec::new();
    if let Err(e) = socket.read_to_end(&mut answer) {
        return format!("reading the answer failed: {e}");
    }
    let answer = String::from_utf8_lossy(&answer);
    answer.lines().next().unwrap_or("(nothing)").to_owned()
}

/// Beyond `--max-concurrent`, a request is answered 503: once its body is whole, or
/// before, when the bodies being read hold all the bytes `--max-concurrent` requests may;
/// a client still sending its 8 MB reads that answer rather than a reset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_requests_beyond_max_concurrent_each_read_their_503() {
    let upstream = upstream().await;
    let served = Served::limited(&upstream, &["--max-concurrent", "1"]);
    let address = served.address.clone();
    // Holds the only place for five seconds.
    let holder = tokio::spawn(async move { ask(&address, "hold").await });
    let mut held = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if chat(&served.address).await.status() == 503 {
            held = true;
            break;
        }
    }
    assert!(held, "the first request never held the only place");

    let mut body =
        br#"{"model": "m", "messages": [{"role": "user", "content": "hi"}], "pad": ""#.to_vec();
    body.resize(8_000_000 - 2, b'x');
    body.extend_from_slice(b"\"}");
    let body = std::sync::Arc::new(body);
    let address = served.address.clone();
    let answers = tokio::task::spawn_blocking(move || {
        let clients: Vec<_> = (0..40)
            .map(|_| {
                let (address, body) = (address.clone(), std::sync::Arc::clone(&body));
                std::thread::spawn(move || post_large(&address, &body))
            })
            .collect();
        clients
            .into_iter()
            .map(|client| client.join().expect("client thread"))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    let refused = answers
        .iter()
        .filter(|a| a.starts_with("HTTP/1.1 503"))
        .count();
    assert_eq!(refused, 40, "{answers:#?}");

    let held = holder.await.unwrap();
    assert_eq!(held.status(), 200);
    let answer = chat(&served.address).await;
    assert_eq!(answer.status(), 200);
    assert!(answer.text().await.unwrap().contains("Hello."));
}

/// Requests whose bodies stall (a head and one byte of a body, as many as
/// `--max-concurrent` and a few more) hold no place: a body takes one when it is whole, so
/// a normal request is answered at once, not 503 until the body time limit frees them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_bodies_do_not_take_the_places_of_whole_requests() {
    let upstream = upstream().await;
    let served = Served::limited(&upstream, &["--body-timeout", "30"]);
    let address = served.address.clone();
    let stalled = tokio::task::spawn_blocking(move || {
        (0..70)
            .map(|_| stall(&address, format!("{HEAD}{{").as_bytes()).0)
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    // Until the gateway has read every head (bounded; the bodies then stall for 30 s).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let answer = chat(&served.address).await;
    assert_eq!(
        answer.status(),
        200,
        "a request behind stalled bodies was refused"
    );
    assert!(answer.text().await.unwrap().contains("Hello."));
    drop(stalled);
}
