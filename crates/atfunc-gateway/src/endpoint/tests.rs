use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const LIMIT: Duration = Duration::from_secs(5);

/// A server that answers every request with `reply` (a whole HTTP response) and closes
/// the connection; each request it read is sent on the channel.
async fn answering(reply: &'static [u8]) -> (String, tokio::sync::mpsc::Receiver<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let request = read_request(&mut socket).await;
            let _ = tx.send(request).await;
            let _ = socket.write_all(reply).await;
            let _ = socket.shutdown().await;
        }
    });
    (format!("http://{address}"), rx)
}

/// One request: its head, and as many bytes of body as its `content-length` says.
async fn read_request(socket: &mut tokio::net::TcpStream) -> String {
    let mut request = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let read = socket.read(&mut buffer).await.unwrap_or(0);
        if read == 0 {
            break;
        }
        request.extend_from_slice(&buffer[..read]);
        let text = String::from_utf8_lossy(&request).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if body.len() >= length {
                break;
            }
        }
    }
    String::from_utf8_lossy(&request).into_owned()
}

/// A port nothing listens on: bound, then closed.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn endpoint(base: &str, max_response_bytes: usize) -> Endpoint {
    Endpoint::new(base, TimeLimit::EachWait(LIMIT), max_response_bytes).unwrap()
}

#[test]
fn v1_is_added_once_and_the_root_has_none() {
    for base in [
        "http://127.0.0.1:8080",
        "http://127.0.0.1:8080/",
        "http://127.0.0.1:8080/v1",
        "http://127.0.0.1:8080/v1/",
    ] {
        let endpoint = endpoint(base, 1);
        let url = |route| endpoint.url(route);
        assert_eq!(
            url(Route::ChatCompletions),
            "http://127.0.0.1:8080/v1/chat/completions",
            "{base}"
        );
        assert_eq!(url(Route::Models), "http://127.0.0.1:8080/v1/models");
        assert_eq!(
            url(Route::ApplyTemplate),
            "http://127.0.0.1:8080/apply-template"
        );
        assert_eq!(url(Route::Completion), "http://127.0.0.1:8080/completion");
        assert_eq!(url(Route::Own("/props")), "http://127.0.0.1:8080/props");
    }
    // A path in front is kept; the base's text is used as given.
    let endpoint = endpoint("https://llm.example/team/v1", 1);
    assert_eq!(
        endpoint.url(Route::ChatCompletions),
        "https://llm.example/team/v1/chat/completions"
    );
    assert_eq!(
        endpoint.url(Route::Completion),
        "https://llm.example/team/completion"
    );
}

#[test]
fn a_base_that_is_not_an_http_url_is_refused() {
    for (base, whole) in [
        ("ftp://x", TimeLimit::EachWait(LIMIT)),
        ("file:///v1", TimeLimit::Whole(LIMIT)),
    ] {
        let error = Endpoint::new(base, whole, 1).unwrap_err();
        assert!(
            matches!(error, EndpointSetupError::NotHttp),
            "{base}: {error:?}"
        );
    }
    for base in ["nowhere", "http://", "127.0.0.1:8080", ""] {
        let error = Endpoint::new(base, TimeLimit::Whole(LIMIT), 1).unwrap_err();
        assert!(
            matches!(error, EndpointSetupError::NotUrl(_)),
            "{base}: {error:?}"
        );
    }
}

#[tokio::test]
async fn an_unreachable_port_is_unreachable_under_either_limit() {
    let base = format!("http://127.0.0.1:{}", closed_port());
    for limit in [TimeLimit::EachWait(LIMIT), TimeLimit::Whole(LIMIT)] {
        let endpoint = Endpoint::new(&base, limit, 1024).unwrap();
        let error = endpoint.get(Route::Models, None).await.unwrap_err();
        match error {
            EndpointError::Unreachable(error) => assert!(error.is_connect(), "{error}"),
            other => panic!("{limit:?}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_request_carries_its_body_type_and_key() {
    let (base, mut requests) =
        answering(b"HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\n{\"ok\": [1]}").await;
    let endpoint = endpoint(&base, 1024);
    let key = HeaderValue::from_static("Bearer k-1");
    let answer = endpoint
        .post_json(Route::Completion, r#"{"prompt":"hi"}"#, Some(&key))
        .await
        .unwrap();
    assert_eq!(answer.json, serde_json::json!({"ok": [1]}));
    assert_eq!(answer.text, "{\"ok\": [1]}");
    let request = requests.recv().await.unwrap();
    assert!(
        request.starts_with("POST /completion HTTP/1.1\r\n"),
        "{request}"
    );
    let head = request.to_ascii_lowercase();
    assert!(
        head.contains("\r\ncontent-type: application/json\r\n"),
        "{request}"
    );
    assert!(
        head.contains("\r\nauthorization: bearer k-1\r\n"),
        "{request}"
    );
    assert!(
        request.ends_with("\r\n\r\n{\"prompt\":\"hi\"}"),
        "{request}"
    );
}

#[tokio::test]
async fn an_error_status_comes_with_its_body() {
    let (base, _requests) = answering(
        b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 20\r\n\r\n{\"error\": \"loading\"}",
    )
    .await;
    let error = endpoint(&base, 1024)
        .post_json(Route::ChatCompletions, "{}", None)
        .await
        .unwrap_err();
    match error {
        EndpointError::Status { status, body } => {
            assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(body.unwrap(), b"{\"error\": \"loading\"}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let (base, mut requests) = answering(
        b"HTTP/1.1 307 Temporary Redirect\r\nlocation: /elsewhere\r\ncontent-length: 0\r\n\r\n",
    )
    .await;
    let endpoint = endpoint(&base, 1024);
    let key = HeaderValue::from_static("Bearer k-1");
    let error = endpoint
        .post_json(Route::ChatCompletions, "{}", Some(&key))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, EndpointError::Status { status, .. } if status.as_u16() == 307),
        "{error:?}"
    );
    requests.recv().await.unwrap();
    assert!(requests.try_recv().is_err(), "a second request was made");
}

#[tokio::test]
async fn an_answer_over_the_size_limit_is_refused() {
    // Declared larger than the limit, and larger without declaring it (chunked).
    for reply in [
        &b"HTTP/1.1 200 OK\r\ncontent-length: 12\r\n\r\n{\"a\": \"bcd\"}"[..],
        &b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n6\r\n{\"a\": \r\n6\r\n\"bcd\"}\r\n0\r\n\r\n"[..],
    ] {
        let reply: &'static [u8] = reply;
        let (base, _requests) = answering(reply).await;
        let error = endpoint(&base, 8)
            .post_json(Route::ChatCompletions, "{}", None)
            .await
            .unwrap_err();
        assert!(
            matches!(error, EndpointError::Answer(AnswerError::TooLarge { limit: 8 })),
            "{error:?}"
        );
    }
    // An error status keeps its status when its body is over the limit.
    let (base, _requests) = answering(
        b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 12\r\n\r\n{\"a\": \"bcd\"}",
    )
    .await;
    let error = endpoint(&base, 8)
        .post_json(Route::ChatCompletions, "{}", None)
        .await
        .unwrap_err();
    match error {
        EndpointError::Status { status, body } => {
            assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
            assert!(matches!(body, Err(AnswerError::TooLarge { limit: 8 })));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_answer_that_is_not_json_says_so_with_its_text() {
    let (base, _requests) = answering(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello").await;
    let error = endpoint(&base, 1024)
        .post_json(Route::ChatCompletions, "{}", None)
        .await
        .unwrap_err();
    match error {
        EndpointError::NotJson { text, .. } => assert_eq!(text, "hello"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_silent_server_times_out_under_either_limit() {
    // Takes connections and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let mut held = Vec::new();
        for _ in 0..2 {
            if let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
            }
        }
        std::future::pending::<()>().await;
    });
    let short = Duration::from_millis(200);
    for limit in [TimeLimit::EachWait(short), TimeLimit::Whole(short)] {
        let endpoint = Endpoint::new(&base, limit, 1024).unwrap();
        let error = endpoint
            .post(Route::ChatCompletions, "{}", None)
            .await
            .unwrap_err();
        assert!(
            matches!(error, EndpointError::TimedOut(after) if after == short),
            "{limit:?}: {error:?}"
        );
    }
    server.abort();
}

/// A server that reads each request and closes the connection without a word for the
/// first `silent` of them, then answers `reply`; each request it read is counted.
async fn closing_first(
    silent: usize,
    reply: &'static [u8],
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let seen = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            read_request(&mut socket).await;
            if counted.fetch_add(1, Ordering::SeqCst) >= silent {
                let _ = socket.write_all(reply).await;
            }
            let _ = socket.shutdown().await;
        }
    });
    (format!("http://{address}"), seen)
}

#[tokio::test]
async fn a_connection_that_breaks_before_the_answer_is_tried_once_more() {
    use std::sync::atomic::Ordering;
    let reply = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";
    let (base, seen) = closing_first(1, reply).await;
    let answer = endpoint(&base, 1024)
        .post_json(Route::ChatCompletions, "{}", None)
        .await
        .unwrap();
    assert_eq!(answer.json, serde_json::json!({}));
    assert_eq!(seen.load(Ordering::SeqCst), 2);

    // Once more only: a server that never answers is unreachable after the second try.
    let (base, seen) = closing_first(usize::MAX, reply).await;
    let error = endpoint(&base, 1024)
        .post(Route::ChatCompletions, "{}", None)
        .await
        .unwrap_err();
    assert!(matches!(error, EndpointError::Unreachable(_)), "{error:?}");
    assert_eq!(seen.load(Ordering::SeqCst), 2);
}
