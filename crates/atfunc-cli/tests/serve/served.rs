//! `atfunc serve` run for a test, as the executed-turn, stalled-client, log and detection
//! tests all start it: on a free port, its address read from the first line it writes,
//! the rest of its stderr kept line by line, killed when the test lets it go.
#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running `atfunc serve`; killed when dropped.
pub struct Served {
    pub child: Child,
    /// `host:port` it listens on.
    pub address: String,
    /// The lines it wrote to stderr after the first, as they come.
    lines: Arc<Mutex<Vec<String>>>,
}

/// The arguments that start the gateway in front of `upstream` on a free port, without
/// probing it (a scripted upstream answers what its test asks, and counts it); a test adds
/// its own after them.
pub fn serve_args(upstream: &str) -> [&str; 6] {
    [
        "serve",
        "--upstream",
        upstream,
        "--listen",
        "127.0.0.1:0",
        "--no-detect",
    ]
}

impl Served {
    /// Runs `command` (the `atfunc` binary with [`serve_args`] and more, or a shell that
    /// runs it) and waits until the gateway says where it listens.
    pub fn spawn(mut command: Command) -> Served {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start atfunc serve");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        // The first line says where it listens; a gateway that fails says why instead.
        let line = lines.next().and_then(Result::ok).unwrap_or_default();
        let address = line
            .split("listening on http://")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("atfunc serve did not start: {line}"))
            .to_owned();
        // Keep reading so the gateway never blocks on a full pipe, and keep the lines.
        let kept = Arc::new(Mutex::new(Vec::new()));
        let keeping = Arc::clone(&kept);
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                keeping.lock().unwrap().push(line);
            }
        });
        Served {
            child,
            address,
            lines: kept,
        }
    }

    /// The stderr lines so far, once one holds each of `wanted` (or after 10 s: the
    /// caller's check then says what they lack). Waits without blocking the runtime, whose
    /// scripted upstream may be what the gateway waits for.
    pub async fn stderr_with(&self, wanted: &[&str]) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let lines = self.lines.lock().unwrap().clone();
            let found = |w: &&str| lines.iter().any(|line| line.contains(*w));
            if wanted.iter().all(found) || Instant::now() > deadline {
                return lines;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A scripted upstream's streamed answer: "Hello.", finished, then `[DONE]`.
pub fn hello_stream() -> axum::response::Response {
    let chunk = serde_json::json!({"id": "c", "object": "chat.completion.chunk",
        "created": 1, "model": "m", "choices": [{"index": 0,
        "delta": {"content": "Hello."}, "finish_reason": "stop"}]});
    axum::response::Response::builder()
        .header("content-type", "text/event-stream")
        .body(axum::body::Body::from(format!(
            "data: {chunk}\n\ndata: [DONE]\n\n"
        )))
        .expect("a response of a header and a body")
}
