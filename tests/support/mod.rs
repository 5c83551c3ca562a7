//! Running the command from tests, as a user runs it: the `atfunc` binary in atfunc-cli's
//! tests, the lab's `atfunc-lab` in the lab's (whose `eval` was `atfunc eval`).
#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// The binary of the crate whose tests include this file.
const BINARY: Option<&str> = match option_env!("CARGO_BIN_EXE_atfunc") {
    Some(path) => Some(path),
    None => option_env!("CARGO_BIN_EXE_atfunc-lab"),
};

/// Runs `atfunc ARGS` (or `atfunc-lab ARGS`) in the workspace root with `stdin` piped in
/// (written from a thread, so a large input cannot deadlock against a full output pipe).
pub fn atfunc(args: &[&str], stdin: &[u8]) -> Output {
    let binary = BINARY.expect("included by the tests of a crate with the atfunc binary");
    let mut child = Command::new(binary)
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run atfunc");
    let mut input = child.stdin.take().expect("stdin");
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // atfunc may exit before reading everything (bad flags); that is the test's subject.
        let _ = input.write_all(&data);
    });
    let output = child.wait_with_output().expect("wait for atfunc");
    writer.join().expect("stdin writer");
    output
}

/// The command's standard output as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

/// The command's standard error as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("stderr is UTF-8")
}
