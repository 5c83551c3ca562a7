//! What a command box's program cannot reach: the environment atfunc started with (where a
//! host's unrelated secrets live), and, run as another user, the environment of any
//! process of atfunc's user.
#![cfg(target_os = "linux")]

use crate::missing;

use atfunc::{Interface, Map};
use atfunc_tools::{CallContext, CommandBox, ToolBox};
use std::process::Command;

const HOST_SECRET: &str = "wJalrXUtnFEMI-host-secret-K7MDENG";

/// A config whose one function prints what it can read of its parent's environment.
const PEEK: &str = r#"{"toolboxes": [{"name": "peek", "kind": "command", "functions": [
  {"name": "parent", "parameters": {"type": "object"},
   "command": ["sh", "-c", "cat /proc/$PPID/environ 2>&1 | tr '\\000' '\\n'; echo read-done"]}]}]}"#;

/// `atfunc exec` started with an unrelated secret in its environment: the program it runs
/// reads `/proc/$PPID/environ` (atfunc's) and gets nothing. atfunc is non-dumpable; a
/// program of the same user lacks CAP_SYS_PTRACE, and one run as root has it taken away.
#[test]
fn a_program_cannot_read_the_environment_atfunc_started_with() {
    let dir = tempfile::tempdir().expect("a folder");
    std::fs::write(dir.path().join("atfunc.json"), PEEK).expect("config");
    std::fs::write(dir.path().join("answer.txt"), "@peek.parent()\n").expect("answer");
    let out = Command::new(env!("CARGO_BIN_EXE_atfunc"))
        .args(["exec", "--config", "atfunc.json", "answer.txt"])
        .current_dir(dir.path())
        .env("AWS_SECRET_ACCESS_KEY", HOST_SECRET)
        .output()
        .expect("run atfunc");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    // The program ran (its last line is there) and read nothing of atfunc's environment.
    assert!(stdout.contains("read-done"), "{stdout}");
    assert!(stdout.contains("Permission denied"), "{stdout}");
    assert!(!stdout.contains(HOST_SECRET), "{stdout}");
    assert!(!stdout.contains("AWS_SECRET_ACCESS_KEY"), "{stdout}");
}

fn is_root() -> bool {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() == 0 }
}

/// Run as another user, a program can read no environment of atfunc's user: not atfunc's
/// own, not that of the process that started atfunc (here the test), which is dumpable.
#[tokio::test]
async fn run_as_another_user_reads_no_environment_of_atfunc_s_user() {
    if !is_root() {
        missing::missing(
            "run_as",
            "switching users needs the test to run as root",
            "run the tests as root, as CI does",
        );
        return;
    }
    let peek = CommandBox::new("peek")
        .function(
            Interface::new("parent").in_domain("peek"),
            [
                "sh",
                "-c",
                "id -u; id -g; id -G; cat /proc/$PPID/environ 2>&1 | tr '\\000' '\\n'; echo read-done",
            ],
        )
        .current_dir("/")
        .run_as(65534, 65534);
    let seen = peek
        .call("parent", Map::new(), &CallContext::new())
        .await
        .expect("runs");
    let text = seen.as_str().unwrap_or_default().to_owned();
    let lines: Vec<&str> = text.lines().collect();
    // The user, the group, and no supplementary group of root's.
    assert_eq!(
        lines.get(..3),
        Some(&["65534", "65534", "65534"][..]),
        "{text}"
    );
    assert!(text.contains("Permission denied"), "{text}");
    assert!(text.ends_with("read-done"), "{text}");
    assert!(!text.contains("PATH="), "{text}");
}

#[test]
fn uid_and_gid_go_together_in_a_config() {
    let dir = tempfile::tempdir().expect("a folder");
    let config = |fields: &str| {
        format!(
            r#"{{"toolboxes": [{{"name": "tool", "kind": "command", {fields}
                "functions": [{{"name": "run", "parameters": {{"type": "object"}}, "command": ["true"]}}]}}]}}"#
        )
    };
    let check = |fields: &str| {
        std::fs::write(dir.path().join("atfunc.json"), config(fields)).expect("config");
        let out = Command::new(env!("CARGO_BIN_EXE_atfunc"))
            .args(["check", "--config", "atfunc.json"])
            .current_dir(dir.path())
            .output()
            .expect("run atfunc");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    assert_eq!(check(r#""uid": 65534, "gid": 65534,"#).0, Some(0));
    let (code, text) = check(r#""uid": 65534,"#);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("field 'uid' needs 'gid' beside it"), "{text}");
    let (code, text) = check(r#""uid": 4294967296, "gid": 1,"#);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("field 'uid' must be a user or group id"),
        "{text}"
    );
}
