//! The gateway's request reading, whatever comes on a connection: request heads, bodies
//! with a declared length or chunked (well-formed or not), and chat requests with tools,
//! which the gateway checks and rewrites (tool names, the history, the prompt, grammars)
//! before it would ask the upstream.
//!
//! Each input is served on an in-memory connection by `atfunc_gateway::serve::ConnectionServer`,
//! the same code `atfunc serve` runs on the connections it accepts; no network is used (the
//! upstream is a closed port on this machine, so a request that gets that far ends in 502
//! or 504). Time is tokio's paused clock, so the time limits that end a connection (idle,
//! body, linger) pass at once instead of holding the fuzzer.
//!
//! Beyond "no panic, no hang, no blow-up" (libFuzzer's `-timeout` and `-rss_limit_mb`),
//! every answer is HTTP, and a chat request sent well-formed and within the limit never
//! gets 413 or is called malformed.
#![no_main]

use arbitrary::Arbitrary;
use atfunc_gateway::serve::{ConnectionServer, Gateway, GatewayOptions};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value as Json};
use std::sync::LazyLock;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The largest request body the gateway under test accepts: small, so that inputs reach
/// the limit.
const MAX_REQUEST_BYTES: usize = 4096;

/// The most of an answer read back.
const MAX_ANSWER_BYTES: u64 = 1 << 20;

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a runtime")
});

static SERVER: LazyLock<ConnectionServer> = LazyLock::new(|| {
    let gateway = Gateway::new({
        let mut options = GatewayOptions::default();
        options.upstream.url = String::from("http://127.0.0.1:1");
        options.upstream.timeout = Duration::from_secs(1);
        options.limits.max_request_bytes = MAX_REQUEST_BYTES;
        options.limits.max_concurrent = 4;
        options
    })
    .expect("a gateway");
    ConnectionServer::new(gateway)
});

const KEYS: [&str; 28] = [
    "model",
    "messages",
    "role",
    "content",
    "tools",
    "type",
    "function",
    "name",
    "description",
    "parameters",
    "properties",
    "required",
    "items",
    "enum",
    "tool_choice",
    "tool_calls",
    "arguments",
    "id",
    "tool_call_id",
    "stream",
    "stream_options",
    "include_usage",
    "parallel_tool_calls",
    "atfunc_execute",
    "atfunc_constrain",
    "n",
    "minimum",
    "default",
];

const WORDS: [&str; 20] = [
    "system",
    "user",
    "assistant",
    "tool",
    "function",
    "object",
    "string",
    "integer",
    "number",
    "boolean",
    "array",
    "null",
    "auto",
    "none",
    "required",
    "get-weather",
    "get_weather",
    "max-results",
    "user.id",
    "@get_weather(city=\"Paris\")",
];

/// A JSON value built from the fuzzer's choices, with the words and keys a chat request
/// holds, so that inputs pass the request's shape checks and go deep.
#[derive(Arbitrary, Debug)]
enum J {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Word(u8),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(K, J)>),
}

#[derive(Arbitrary, Debug)]
enum K {
    Known(u8),
    Other(String),
}

fn key(k: &K) -> String {
    match k {
        K::Known(i) => KEYS[*i as usize % KEYS.len()].to_owned(),
        K::Other(s) => s.clone(),
    }
}

fn build(j: &J, depth: usize) -> Json {
    if depth > 10 {
        return Json::Null;
    }
    match j {
        J::Null => Json::Null,
        J::Bool(b) => Json::Bool(*b),
        J::Int(i) => Json::from(*i),
        J::Float(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        J::Word(w) => Json::from(WORDS[*w as usize % WORDS.len()]),
        J::Str(s) => Json::from(s.as_str()),
        J::Arr(items) => Json::Array(items.iter().map(|i| build(i, depth + 1)).collect()),
        J::Obj(fields) => Json::Object(
            fields
                .iter()
                .map(|(k, v)| (key(k), build(v, depth + 1)))
                .collect(),
        ),
    }
}

/// A chat request: messages and tools in OpenAI's shapes, with fields of any value.
#[derive(Arbitrary, Debug)]
struct Chat {
    messages: Vec<Message>,
    tools: Vec<Tool>,
    /// Other top-level fields: `tool_choice`, `stream`, `atfunc_constrain`, anything.
    fields: Vec<(K, J)>,
}

#[derive(Arbitrary, Debug)]
struct Message {
    role: u8,
    content: J,
    /// Calls of an assistant message: a tool name and arguments (JSON text or not).
    calls: Vec<(u8, String)>,
    fields: Vec<(K, J)>,
}

#[derive(Arbitrary, Debug)]
struct Tool {
    name: u8,
    parameters: J,
    fields: Vec<(K, J)>,
}

fn chat_json(chat: &Chat) -> Json {
    let mut request = Map::new();
    request.insert("model".into(), Json::from("m"));
    let messages = chat
        .messages
        .iter()
        .map(|m| {
            let mut message = Map::new();
            message.insert("role".into(), Json::from(WORDS[m.role as usize % 4]));
            message.insert("content".into(), build(&m.content, 0));
            if !m.calls.is_empty() {
                let calls = m.calls.iter().enumerate().map(|(i, (name, arguments))| {
                    serde_json::json!({"id": format!("call_{i}"), "type": "function",
                        "function": {"name": WORDS[*name as usize % WORDS.len()],
                                     "arguments": arguments}})
                });
                message.insert("tool_calls".into(), Json::Array(calls.collect()));
            }
            for (k, v) in &m.fields {
                message.insert(key(k), build(v, 1));
            }
            Json::Object(message)
        })
        .collect();
    request.insert("messages".into(), Json::Array(messages));
    let tools = chat
        .tools
        .iter()
        .map(|t| {
            let mut function = Map::new();
            function.insert(
                "name".into(),
                Json::from(WORDS[t.name as usize % WORDS.len()]),
            );
            function.insert("parameters".into(), build(&t.parameters, 1));
            for (k, v) in &t.fields {
                function.insert(key(k), build(v, 2));
            }
            serde_json::json!({"type": "function", "function": function})
        })
        .collect();
    request.insert("tools".into(), Json::Array(tools));
    for (k, v) in &chat.fields {
        request.insert(key(k), build(v, 1));
    }
    Json::Object(request)
}

/// How a body is sent.
#[derive(Arbitrary, Debug)]
enum Framing {
    /// With `Content-Length`.
    Length,
    /// Chunked, in pieces of these sizes (the rest in one last chunk).
    Chunked(Vec<u16>),
    /// Chunked, with a size line replaced by these bytes (malformed, most likely).
    BadChunk(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
enum Input {
    /// Any bytes, as they come on a connection; `close` ends the client's side after them.
    Raw { bytes: Vec<u8>, close: bool },
    /// A chat request, framed as chosen, on the chat route; extra header lines as given.
    Chat {
        chat: Chat,
        framing: Framing,
        headers: Vec<(u8, String)>,
        close: bool,
    },
}

const HEADERS: [&str; 6] = [
    "Authorization",
    "Content-Type",
    "Expect",
    "Connection",
    "Accept",
    "X-Anything",
];

/// An HTTP request with `body`, and whether it is well-formed (a bad chunk most likely is
/// not).
fn http_request(body: &[u8], framing: &Framing, headers: &[(u8, String)]) -> (Vec<u8>, bool) {
    let mut head = String::from("POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\n");
    for (name, value) in headers {
        // Header values without line ends, so the request stays one request.
        let value: String = value.chars().filter(|c| !c.is_control()).collect();
        head.push_str(&format!(
            "{}: {value}\r\n",
            HEADERS[*name as usize % HEADERS.len()]
        ));
    }
    let mut bytes;
    let well_formed;
    match framing {
        Framing::Length => {
            head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
            bytes = head.into_bytes();
            bytes.extend_from_slice(body);
            well_formed = true;
        }
        Framing::Chunked(sizes) => {
            head.push_str("Transfer-Encoding: chunked\r\n\r\n");
            bytes = head.into_bytes();
            let mut rest = body;
            for size in sizes {
                if rest.is_empty() {
                    break;
                }
                let (chunk, after) = rest.split_at((*size as usize).clamp(1, rest.len()));
                bytes.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                bytes.extend_from_slice(chunk);
                bytes.extend_from_slice(b"\r\n");
                rest = after;
            }
            if !rest.is_empty() {
                bytes.extend_from_slice(format!("{:x}\r\n", rest.len()).as_bytes());
                bytes.extend_from_slice(rest);
                bytes.extend_from_slice(b"\r\n");
            }
            bytes.extend_from_slice(b"0\r\n\r\n");
            well_formed = true;
        }
        Framing::BadChunk(line) => {
            head.push_str("Transfer-Encoding: chunked\r\n\r\n");
            bytes = head.into_bytes();
            bytes.extend_from_slice(line);
            bytes.extend_from_slice(b"\r\n");
            bytes.extend_from_slice(body);
            bytes.extend_from_slice(b"\r\n0\r\n\r\n");
            well_formed = false;
        }
    }
    (bytes, well_formed)
}

/// Serves `bytes` on a connection of its own; what the gateway sent back.
fn serve(bytes: Vec<u8>, close: bool) -> Vec<u8> {
    let server = SERVER.clone();
    RUNTIME.block_on(async move {
        let (client, connection) = tokio::io::duplex(64 << 10);
        let served = tokio::spawn(async move {
            server
                .serve_connection(connection, std::future::pending())
                .await
        });
        let (from_server, mut to_server) = tokio::io::split(client);
        let send = async move {
            let _ = to_server.write_all(&bytes).await;
            if close {
                let _ = to_server.shutdown().await;
            }
            // Kept open otherwise: the gateway's own time limits end the connection.
            to_server
        };
        let receive = async move {
            let mut answer = Vec::new();
            let _ = from_server
                .take(MAX_ANSWER_BYTES)
                .read_to_end(&mut answer)
                .await;
            answer
        };
        let (to_server, answer) = tokio::join!(send, receive);
        drop(to_server);
        let _ = served.await;
        answer
    })
}

fuzz_target!(|input: Input| {
    match input {
        Input::Raw { bytes, close } => {
            let answer = serve(bytes, close);
            assert!(
                answer.is_empty() || answer.starts_with(b"HTTP/1.1 "),
                "not HTTP: {:?}",
                String::from_utf8_lossy(&answer)
            );
        }
        Input::Chat {
            chat,
            framing,
            headers,
            close,
        } => {
            let body = chat_json(&chat).to_string();
            let (request, well_formed) = http_request(body.as_bytes(), &framing, &headers);
            let answer = serve(request, close);
            let text = String::from_utf8_lossy(&answer);
            assert!(
                answer.is_empty() || text.starts_with("HTTP/1.1 "),
                "not HTTP: {text:?}"
            );
            if well_formed && body.len() <= MAX_REQUEST_BYTES {
                assert!(!text.starts_with("HTTP/1.1 413"), "{text}");
                assert!(!text.contains("chunked encoding is malformed"), "{text}");
            }
        }
    }
});
