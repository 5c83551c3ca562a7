//! `atfunc exec` keeps no record per call: its peak memory does not grow with the number of
//! calls, with or without `--json`. Alone in its test binary, so the peak memory of this
//! process's children is that of the runs here.
#![cfg(target_os = "linux")]

use std::io::Write;
use std::process::{Command, Stdio};

/// Calls per run: enough that 1 KB kept per call would show (50 MB), few enough that a
/// debug build finishes in seconds.
const CALLS: usize = 50_000;

/// The peak memory allowed, in MB: the process's own footprint plus room.
const PEAK_MB: i64 = 40;

fn run(json: bool) -> usize {
    let mut args = vec!["exec", "--tools", "examples/demo/tools.json"];
    if json {
        args.push("--json");
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_atfunc"))
        .args(&args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for i in 0..CALLS {
            writeln!(stdin, "Step {i}: @math.calculate_power({i}, 2)").unwrap();
        }
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    if json {
        let report: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(report["call_count"], CALLS);
        assert_eq!(report["calls"].as_array().unwrap().len(), CALLS);
        // Byte for byte what pretty-printing the whole report gives.
        assert_eq!(text, serde_json::to_string_pretty(&report).unwrap() + "\n");
        CALLS
    } else {
        text.matches("Function call: ").count()
    }
}

/// The largest peak resident memory of the children waited for so far, in MB.
fn children_peak_mb() -> i64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a valid, writable rusage for the call.
    let code = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr()) };
    assert_eq!(code, 0);
    // SAFETY: getrusage succeeded and filled it in.
    let usage = unsafe { usage.assume_init() };
    usage.ru_maxrss / 1024
}

#[test]
fn exec_memory_stays_flat_over_many_calls() {
    assert_eq!(run(false), CALLS);
    let plain = children_peak_mb();
    assert!(
        plain < PEAK_MB,
        "exec peaked at {plain} MB over {CALLS} calls"
    );
    assert_eq!(run(true), CALLS);
    let json = children_peak_mb();
    assert!(
        json < PEAK_MB,
        "exec --json peaked at {json} MB over {CALLS} calls"
    );
}
