//! What the scripted endpoints of these tests share: an OpenAI chat answer, and serving a
//! router on a free loopback port.

use serde_json::{json, Value as Json};

/// A chat completion whose one choice is `message`, with the usage given.
pub fn completion(message: Json, prompt_tokens: u64, completion_tokens: u64) -> Json {
    json!({
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
    })
}

/// A chat completion whose assistant message says `text`.
pub fn says(text: &str, prompt_tokens: u64, completion_tokens: u64) -> Json {
    completion(
        json!({"role": "assistant", "content": text}),
        prompt_tokens,
        completion_tokens,
    )
}

/// Serves `app` on a free loopback port from the running runtime; its base URL.
pub async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}")
}

/// Serves `app` on a free loopback port from a thread of its own, for a test without a
/// runtime; its base URL.
pub fn serve_on_thread(app: axum::Router) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    format!("http://{}", rx.recv().unwrap())
}
