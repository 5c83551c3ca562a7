//! The `atfunc` binary on a live stream: what it prints while its input is still open.

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// How long a test waits for output that should come at once; generous for a loaded machine.
const PATIENCE: Duration = Duration::from_secs(20);

/// `atfunc ARGS` with its input left open, and its output arriving on a channel.
struct Live {
    child: Child,
    input: Option<ChildStdin>,
    output: Receiver<Vec<u8>>,
    seen: Vec<u8>,
}

impl Live {
    fn start(args: &[&str]) -> Live {
        let mut child = Command::new(env!("CARGO_BIN_EXE_atfunc"))
            .args(args)
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run atfunc");
        let input = child.stdin.take();
        let mut stdout = child.stdout.take().expect("stdout");
        let (tx, output) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Live {
            child,
            input,
            output,
            seen: Vec::new(),
        }
    }

    /// Writes `text` and leaves the input open.
    fn write(&mut self, text: &str) {
        let input = self.input.as_mut().expect("input open");
        input.write_all(text.as_bytes()).unwrap();
        input.flush().unwrap();
    }

    /// Waits until the output holds `wanted`; fails the test after [`PATIENCE`].
    fn expect(&mut self, wanted: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let text = String::from_utf8_lossy(&self.seen).into_owned();
            if text.contains(wanted) {
                return text;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(bytes) => self.seen.extend_from_slice(&bytes),
                Err(_) => panic!("no {wanted:?} while the input stays open; got {text:?}"),
            }
        }
    }

    /// Checks that nothing is printed for `time`.
    fn quiet_for(&mut self, time: Duration) {
        if let Ok(bytes) = self.output.recv_timeout(time) {
            panic!("printed {:?} too early", String::from_utf8_lossy(&bytes));
        }
    }

    /// Closes the input and waits for the exit; returns the whole output.
    fn end(mut self) -> String {
        drop(self.input.take());
        let status = self.child.wait().expect("wait for atfunc");
        assert!(status.success(), "{status}");
        while let Ok(bytes) = self.output.recv_timeout(PATIENCE) {
            self.seen.extend_from_slice(&bytes);
        }
        String::from_utf8_lossy(&self.seen).into_owned()
    }
}

#[test]
fn exec_runs_a_call_before_the_stream_goes_on() {
    let mut live = Live::start(&["exec", "--tools", "examples/demo/tools.json"]);
    // No line break, no next byte: the call is complete and takes no body.
    live.write("Let me see. @tools.get_toolboxes()");
    live.expect("Returned: [\"weather\"");
    // The next call comes with its line break; both are out before the input ends.
    live.write(" and @tools.get_functions(toolbox=\"weather\")\n");
    let text = live.expect("Returned: [\"weather.get_current_weather\"]");
    assert_eq!(text.matches("Function call:").count(), 2, "{text}");
    let text = live.end();
    assert_eq!(text.matches("Function call:").count(), 2, "{text}");
}

#[test]
fn exec_waits_only_for_a_body_a_function_can_take() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.json");
    std::fs::write(
        &path,
        r#"[{"domain": "api", "name": "create_user", "type": "api-wrapper", "returns": "object",
             "description": "Create a user", "path_params": {}, "query_params": {},
             "request_body": {"name": {"type": "string", "required": true,
                                       "description": "Name"}}}]"#,
    )
    .unwrap();
    let mut live = Live::start(&["exec", "--tools", path.to_str().unwrap()]);
    // `with_body` may still follow on this line: nothing runs yet.
    live.write("@api.create_user()");
    live.quiet_for(Duration::from_millis(300));
    live.write(" with_body [[{\"name\": \"ann\"}]]");
    let text = live.expect("Returned: Error: function 'api.create_user' has no implementation");
    assert!(
        text.starts_with("Function call: api.create_user() with_body [["),
        "{text}"
    );
    live.end();
}

#[test]
fn parse_prints_a_call_before_the_stream_goes_on() {
    let tools = "tests/data/reference_tools.json";
    let mut live = Live::start(&["parse", "--tools", tools]);
    live.write("Checking: @weather.get_current_weather(\"Oslo\")");
    let text = live.expect("\n");
    let record: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(record["args"], serde_json::json!({"location": "Oslo"}));
    live.end();
    // Without tools any call may take a body: a line break releases it.
    let mut live = Live::start(&["parse"]);
    live.write("@a(1)\n");
    let text = live.expect("\n");
    assert!(text.starts_with("{\"name\":\"a\""), "{text}");
    live.end();
}

/// How many `read` system calls the process `pid` has made so far (Linux).
#[cfg(target_os = "linux")]
fn reads_made(pid: u32) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).expect("read /proc/PID/io");
    io.lines()
        .find_map(|line| line.strip_prefix("syscr:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("syscr in /proc/PID/io")
}

#[cfg(target_os = "linux")]
#[test]
fn parse_reads_in_blocks_whatever_the_chunk_size() {
    // A chunk size of one byte once meant one `read` per byte of input.
    let mut live = Live::start(&["parse", "--chunk-size", "1"]);
    let prose = "Some prose that goes on and on. ".repeat(8 * 1024);
    live.write(&prose);
    live.write("@done()\n");
    live.expect("\"name\":\"done\"");
    // Everything is read and parsed; the process waits on its open input now.
    let reads = reads_made(live.child.id());
    assert!(reads < 1_000, "{reads} reads for {} bytes", prose.len() + 8);
    let text = live.end();
    assert_eq!(text.lines().count(), 1, "{text}");
}
