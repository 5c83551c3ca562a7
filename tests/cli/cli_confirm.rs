//! `atfunc exec --confirm ask|yes|no` over a config whose function needs confirmation:
//! asked on a pseudo-terminal, run, left held, and `ask` without a terminal.
#![cfg(all(feature = "cli", unix))]

use crate::missing;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const CONFIG: &str = r#"{"toolboxes": [{"name": "shell", "kind": "command", "functions": [
  {"name": "echo", "parameters": {"type": "object",
     "properties": {"text": {"type": "string"}}}, "command": ["cat"], "confirm": true},
  {"name": "free", "parameters": {"type": "object"}, "command": ["cat"]}]}]}"#;

/// A right-to-left override in the first call's argument, which a terminal would obey.
const ANSWER: &str =
    "First @shell.echo(text=\"a\u{202e}b\"), then @shell.free() and @shell.echo(text=\"two\").\n";

fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a folder");
    std::fs::write(dir.path().join("atfunc.json"), CONFIG).expect("config");
    std::fs::write(dir.path().join("answer.txt"), ANSWER).expect("answer");
    dir
}

/// `atfunc exec` in `dir` in a session of its own: it has no controlling terminal.
fn exec_without_terminal(dir: &Path, mode: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_atfunc"));
    command
        .args(["exec", "--config", "atfunc.json", "answer.txt"])
        .current_dir(dir)
        .stdin(Stdio::null());
    if let Some(mode) = mode {
        command.args(["--confirm", mode]);
    }
    // SAFETY: setsid is async-signal-safe and touches no memory of this process.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    command.output().expect("run atfunc")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8")
}

/// The Returned lines, with confirmation ids replaced by ID.
fn returned(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|line| line.strip_prefix("Returned: "))
        .map(|line| match line.find("\"confirmation_id\":\"") {
            Some(at) => {
                let start = at + "\"confirmation_id\":\"".len();
                let id = &line[start..start + 36];
                assert_eq!(id.len(), 36, "{line}");
                line.replace(id, "ID")
            }
            None => line.to_owned(),
        })
        .collect()
}

const HELD: &str = r#"{"executed":false,"status":"confirmation_required","confirmation_id":"ID"}"#;

#[test]
fn yes_runs_every_call() {
    let dir = folder();
    let out = exec_without_terminal(dir.path(), Some("yes"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        returned(&text(&out.stdout)),
        ["{\"text\":\"a\u{202e}b\"}", "{}", "{\"text\":\"two\"}"]
    );
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn no_leaves_the_calls_held_and_says_so() {
    let dir = folder();
    let out = exec_without_terminal(dir.path(), Some("no"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(returned(&text(&out.stdout)), [HELD, "{}", HELD]);
    assert_eq!(
        text(&out.stderr),
        "atfunc: 2 calls wait for confirmation and did not run (--confirm no)\n"
    );
}

#[test]
fn ask_without_a_terminal_is_no() {
    let dir = folder();
    let out = exec_without_terminal(dir.path(), None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(returned(&text(&out.stdout)), [HELD, "{}", HELD]);
    assert_eq!(
        text(&out.stderr),
        "atfunc: 2 calls wait for confirmation and did not run (there is no terminal to ask on)\n"
    );
}

/// Runs `atfunc exec` on a pseudo-terminal (Python's pty module), answers each question
/// with the next of `answers`, and prints what the terminal showed. With `typed` instead
/// of `file`, the model's answer is typed on the terminal rather than read from its file.
const ON_A_TERMINAL: &str = r#"
import os, pty, signal, sys
binary, source, answers = sys.argv[1], sys.argv[2], sys.argv[3:]
pid, fd = pty.fork()
if pid == 0:
    files = ["answer.txt"] if source == "file" else []
    os.execv(binary, [binary, "exec", "--config", "atfunc.json", *files])
# A run that waits for ever (a question nobody answers) is ended, and the test fails.
signal.signal(signal.SIGALRM, lambda *_: os.kill(pid, signal.SIGKILL))
signal.alarm(30)
if source == "typed":
    # The answer, then end of input (^D at the start of a line).
    os.write(fd, open("answer.txt", "rb").read() + b"\x04")
seen = b""
def read():
    global seen
    try:
        data = os.read(fd, 4096)
    except OSError:
        return False
    seen += data
    return bool(data)
for asked, answer in enumerate(answers):
    # Waits for the next question, then answers it.
    while seen.count(b"[y/N] ") == asked and read():
        pass
    os.write(fd, answer.encode() + b"\n")
while read():
    pass
os.waitpid(pid, 0)
sys.stdout.write(seen.decode())
"#;

#[test]
fn ask_shows_each_call_on_the_terminal_and_waits_for_y_or_n() {
    if !has_python() {
        return;
    }
    let dir = folder();
    let out = Command::new("python3")
        .args([
            "-c",
            ON_A_TERMINAL,
            env!("CARGO_BIN_EXE_atfunc"),
            "file",
            "y",
            "n",
        ])
        .current_dir(dir.path())
        .output()
        .expect("run python3");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout).replace("\r\n", "\n");
    // The question shows the function and its arguments, the override escaped.
    assert!(
        shown.contains(
            "atfunc: the model calls shell.echo(text=\"a\\u{202e}b\")\nRun it? [y/N] y\n"
        ),
        "{shown}"
    );
    assert!(
        shown.contains("atfunc: the model calls shell.echo(text=\"two\")\nRun it? [y/N] n\n"),
        "{shown}"
    );
    assert_eq!(
        returned(&shown),
        [
            "{\"text\":\"a\u{202e}b\"}",
            "{}",
            "Error: The user declined this call of 'shell.echo'; it did not run. Do not call it again unless the user asks for it",
        ]
    );
    assert!(!shown.contains("wait for confirmation"), "{shown}");
}

fn has_python() -> bool {
    let python = Command::new("python3").arg("--version").output();
    let found = python.is_ok_and(|o| o.status.success());
    if !found {
        missing::missing(
            "terminal confirmation",
            "`python3` is needed for a pseudo-terminal",
            "install Python 3",
        );
    }
    found
}

#[test]
fn ask_does_not_ask_on_the_terminal_the_answer_is_typed_on() {
    if !has_python() {
        return;
    }
    let dir = folder();
    let out = Command::new("python3")
        .args(["-c", ON_A_TERMINAL, env!("CARGO_BIN_EXE_atfunc"), "typed"])
        .current_dir(dir.path())
        .output()
        .expect("run python3");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout).replace("\r\n", "\n");
    assert!(!shown.contains("Run it?"), "{shown}");
    assert_eq!(returned(&shown), [HELD, "{}", HELD], "{shown}");
    assert!(
        shown.contains("atfunc: 2 calls wait for confirmation and did not run (the model's answer is read from the terminal, so it cannot ask there too)"),
        "{shown}"
    );
}
