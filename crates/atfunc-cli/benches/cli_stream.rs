//! The CLI streaming a large completion from stdin: throughput and peak memory.
//!
//! `cargo bench -p atfunc-cli --bench cli_stream` generates 64 MB of prose with calls (and
//! 8 MB for comparison), pipes it into `atfunc parse --tools` and `atfunc parse --text`,
//! and reports MB/s and the child's peak resident memory (from `getrusage`). Peak memory
//! must stay under 32 MB whatever the input length: the parser holds only an unresolved
//! candidate call, and the CLI never reads the whole input first.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

const PROSE: &str = "The forecast for the coming week looks mild, with light winds from the \
west and a chance of rain on Thursday. Write to support@example.com for the figures. ";

const CALLS: [&str; 4] = [
    "@weather.get_current_weather(\"Oslo\", unit=\"celsius\")",
    "@math.calculate_power(2, 10)",
    "@weather.get_current_weather(unit=\"celsius\")",
    "@nope.x(1)",
];

/// Writes about `len` bytes to `out`: prose of varying length, then a call, line after
/// line. Generated as it is written, so the bench process itself stays small.
fn write_completion(out: &mut impl Write, len: usize) -> std::io::Result<()> {
    let mut written = 0usize;
    let mut line = String::new();
    let mut i = 0usize;
    while written < len {
        line.clear();
        for _ in 0..(1 + i % 6) {
            line.push_str(PROSE);
        }
        line.push_str(CALLS[i % CALLS.len()]);
        line.push('\n');
        out.write_all(line.as_bytes())?;
        written += line.len();
        i += 1;
    }
    Ok(())
}

/// Peak resident memory of the largest child waited for so far, in bytes.
fn children_peak_rss() -> u64 {
    // SAFETY: getrusage only writes into the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    assert_eq!(rc, 0, "getrusage failed");
    // Linux reports kilobytes.
    u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024
}

/// Runs `atfunc ARGS` on a generated input of `len` bytes: seconds taken and output lines.
fn run(args: &[&str], len: usize) -> (f64, usize) {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_atfunc"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run atfunc");
    let stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        let mut pipe = std::io::BufWriter::with_capacity(64 * 1024, stdin);
        // A closed pipe means atfunc stopped early; its exit status says why.
        let _ = write_completion(&mut pipe, len).and_then(|()| pipe.flush());
    });
    // Count the output as it comes instead of keeping it: a large parent would be copied
    // into the next child's footprint at its fork.
    let mut stdout = child.stdout.take().expect("stdout");
    let mut lines = 0usize;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match stdout.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => lines += buf[..n].iter().filter(|&&b| b == b'\n').count(),
            Err(e) => panic!("reading atfunc's output: {e}"),
        }
    }
    let status = child.wait().expect("wait");
    writer.join().expect("writer");
    assert!(status.success(), "atfunc failed");
    (started.elapsed().as_secs_f64(), lines)
}

fn main() {
    // RUSAGE_CHILDREN keeps the maximum over all children waited for, so each row shows the
    // peak so far; the rows run from the smallest input up. The input is generated while it
    // is piped, so the forked child never starts as a copy of a large parent.
    println!("| input | command | MB/s | records | peak RSS (MB) |");
    println!("|---|---|---|---|---|");
    for mb in [8usize, 64] {
        let len = mb << 20;
        for (label, args) in [
            (
                "parse --tools",
                &["parse", "--tools", "examples/demo/tools.json"][..],
            ),
            (
                "parse --text --tools",
                &["parse", "--text", "--tools", "examples/demo/tools.json"][..],
            ),
        ] {
            let (secs, lines) = run(args, len);
            let peak = children_peak_rss();
            let mbps = len as f64 / secs / 1e6;
            println!(
                "| {mb} MB | `{label}` | {mbps:.0} | {lines} | {:.1} |",
                peak as f64 / (1 << 20) as f64
            );
            assert!(
                peak < 32 << 20,
                "peak memory {peak} bytes is over the 32 MB target"
            );
        }
    }
}
