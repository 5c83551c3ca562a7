//! What the real-model tests share (`eval_model.rs`, `eval_qwen.rs`): a llama-cpp-python
//! server on a free loopback port, an evaluation of BFCL's simple cases against it, and the
//! sanity checks every mode's figures pass whatever the model scores.

use crate::support;

use serde_json::Value as Json;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/bfcl/");

/// The server, stopped when the test ends however it ends, and its log (standard output
/// and error), read back when it dies so that a failure says why.
pub(crate) struct Server(Child, tempfile::NamedTempFile);

impl Server {
    /// Panics, saying how the server ended and with the last lines of its log, if it has
    /// exited; returns when it still runs.
    pub(crate) fn assert_alive(&mut self, doing: &str) {
        let Ok(Some(status)) = self.0.try_wait() else {
            return;
        };
        use std::os::unix::process::ExitStatusExt;
        let how = match status.signal() {
            // SIGILL is what a llama.cpp built with -march=native gets on a machine whose
            // CPU advertises instructions the virtual machine does not allow.
            Some(4) => String::from("killed by signal 4 (SIGILL: an instruction this CPU cannot run; build llama.cpp without -march=native, as tests/run.sh does)"),
            Some(signal) => format!("killed by signal {signal}"),
            None => format!("exited with {status}"),
        };
        let log = std::fs::read_to_string(self.1.path()).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        panic!(
            "the llama-cpp-python server died {doing}: {how}; the last lines of its log:\n{}",
            tail.join("\n")
        );
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| String::from("python3"))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts the server and waits until it lists its model: with llama-cpp-python's
/// `chat_format` named, or with the GGUF's own chat template when none is.
pub(crate) fn start(model: &str, chat_format: Option<&str>) -> (Server, String) {
    let port = free_port();
    let log = tempfile::NamedTempFile::new().expect("a log file");
    let child = Command::new(python())
        .args(["-m", "llama_cpp.server", "--model", model])
        .args(
            chat_format
                .map(|format| ["--chat_format", format])
                .into_iter()
                .flatten(),
        )
        .args([
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--n_ctx",
            "4096",
            "--n_threads",
            "2",
        ])
        .stdout(Stdio::from(log.reopen().expect("reopen the log")))
        .stderr(Stdio::from(log.reopen().expect("reopen the log")))
        .spawn()
        .expect("python3 starts");
    let mut server = Server(child, log);
    let base = format!("127.0.0.1:{port}");
    let started = Instant::now();
    loop {
        server.assert_alive("while starting");
        if models_listed(&base) {
            return (server, format!("http://{base}"));
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the server did not answer in 120 s"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Whether `GET /v1/models` answers 200 (a plain HTTP/1.0 request, no client needed).
fn models_listed(base: &str) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(base) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    if stream
        .write_all(b"GET /v1/models HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200")
}

/// Runs `atfunc-lab eval` on the first two of BFCL's simple cases against `endpoint` in
/// `modes`, answers cut at `max_tokens`, with `more` arguments; writes the report into
/// `dir`. Returns the report and the printed table, having checked that the server lived
/// and the run succeeded.
pub(crate) fn eval_simple(
    server: &mut Server,
    endpoint: &str,
    dir: &Path,
    max_tokens: &str,
    modes: &str,
    more: &[&str],
) -> (Json, String) {
    let report = dir.join("report.json");
    let questions = format!("{DATA}BFCL_v4_simple_python.json");
    let answers = format!("{DATA}possible_answer/BFCL_v4_simple_python.json");
    let mut args = vec![
        "eval",
        "--endpoint",
        endpoint,
        "--questions",
        &questions,
        "--answers",
        &answers,
        "--limit",
        "2",
        "--max-tokens",
        max_tokens,
        // A loaded two-core machine can take minutes for one answer; a slow answer is
        // not what these tests are about.
        "--timeout",
        "900",
        "--mode",
        modes,
        "--json",
        report.to_str().unwrap(),
    ];
    args.extend_from_slice(more);
    let output = support::atfunc(&args, b"");
    server.assert_alive("during the evaluation");
    assert!(output.status.success(), "{}", support::stderr(&output));
    let table = support::stdout(&output);
    let report: Json = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    (report, table)
}

/// What holds of `mode`'s figures whatever the model scores: both cases asked, none
/// failed, shares between 0 and 1 and accuracy within validity, latencies measured and
/// ordered, and a line of the table.
pub(crate) fn assert_figures_sane(report: &Json, table: &str, mode: &str) {
    let figures = &report["modes"][mode];
    assert_eq!(figures["cases"], 2, "{mode}: {table}");
    assert_eq!(figures["failed_requests"], 0, "{mode}: {report:#}");
    for share in ["accuracy", "valid"] {
        let x = figures[share].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&x), "{mode} {share} {x}");
    }
    assert!(
        figures["accuracy"].as_f64() <= figures["valid"].as_f64(),
        "{mode}: a correct answer is valid"
    );
    let latency = &figures["latency_ms"];
    assert!(
        latency["p50"].as_u64() <= latency["p95"].as_u64(),
        "{mode}: {latency}"
    );
    assert!(latency["p50"].as_u64().unwrap() > 0, "{mode}: {latency}");
    assert!(table.lines().any(|l| l.starts_with(mode)), "{table}");
}
