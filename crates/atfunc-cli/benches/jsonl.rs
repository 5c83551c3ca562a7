//! `atfunc parse --jsonl` throughput on a generated file of 100,000 records.
//!
//! Run with `cargo bench -p atfunc-cli --bench jsonl`. It writes the records (realistic
//! completions: prose, a few calls each, some of them wrong) and a tools file to a
//! temporary folder, then measures, in one run:
//!
//! - the library, one thread: `Batch::process_line` over every line in order;
//! - the library on every core: `Batch::process_lines` over batches of 2,048 lines;
//! - the binary end to end: `atfunc parse --jsonl --tools tools.json records.jsonl`, output
//!   to `/dev/null`, best of three; and its peak memory under `/usr/bin/time -v` when that
//!   exists;
//! - the binary on the same records with the tools list inside every record (no `--tools`).
//!
//! Set `ATFUNC_JSONL_BENCH_DIR` to keep the generated files in a folder of your choice.

use atfunc::batch::Batch;
use atfunc::Catalog;
use serde_json::json;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RECORDS: usize = 100_000;
const TOOLS: &str = include_str!("../../../tests/data/reference_tools.json");

/// A small deterministic generator (xorshift), so every run measures the same bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const PROSE: &[&str] = &[
    "Let me look that up for you. ",
    "I'll check the current conditions before answering. ",
    "First I need the numbers, then I can compare them. ",
    "The user wants an account, so I will create one with the details given. ",
    "Based on the previous result, the next step is clear. ",
    "Note: the email bob@example.com is only an example here. ",
    "To be thorough, I will verify this a second way. ",
];
const CITIES: &[&str] = &[
    "Paris",
    "Oslo",
    "San Francisco, CA",
    "Zürich",
    "Tokyo",
    "Lagos",
];

fn call(rng: &mut Rng) -> String {
    match rng.below(20) {
        0..=6 => format!(
            "@weather.get_current_weather(\"{}\", unit=\"{}\")",
            rng.pick(CITIES),
            rng.pick(&["celsius", "fahrenheit"])
        ),
        7..=10 => format!(
            "@Weather.Get_Current_Weather(location: '{}')",
            rng.pick(CITIES)
        ),
        11..=15 => format!(
            "@math.calculate_power({}, exponent={})",
            rng.below(1000),
            rng.below(12)
        ),
        16..=17 => {
            let user = format!("user{}", rng.below(100_000));
            format!(
                "@api.create_user({user}, \"{user}@example.com\") with_body [[{{\"username\": \"{user}\", \"email\": \"{user}@example.com\", \"age\": {}}}]]",
                18 + rng.below(60)
            )
        }
        // Wrong calls, as models write them: a missing argument, an unknown function.
        18 => "@weather.get_current_weather()".to_owned(),
        _ => format!("@wether.get_forecast(\"{}\", days=3)", rng.pick(CITIES)),
    }
}

fn completion(rng: &mut Rng) -> String {
    let mut text = String::new();
    let calls = 1 + rng.below(4);
    for _ in 0..calls {
        for _ in 0..1 + rng.below(4) {
            text.push_str(rng.pick(PROSE));
        }
        if rng.below(5) == 0 {
            text.push_str(&format!("\n```\n{}\n```\n", call(rng)));
        } else {
            text.push_str(&call(rng));
            text.push_str(". ");
        }
    }
    text.push_str(rng.pick(PROSE));
    text
}

fn generate(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf, Vec<String>) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let lines: Vec<String> = (0..RECORDS)
        .map(|i| {
            json!({"id": format!("sample-{i}"), "completion": completion(&mut rng)}).to_string()
        })
        .collect();
    let records = dir.join("records.jsonl");
    let tools = dir.join("tools.json");
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(&records, text).expect("write records");
    std::fs::write(&tools, TOOLS).expect("write tools");
    (records, tools, lines)
}

fn report(what: &str, elapsed: Duration, records: usize, bytes: usize) {
    let seconds = elapsed.as_secs_f64();
    println!(
        "{what:<40} {:>9.0} records/s {:>8.1} MB/s  ({:.3} s)",
        records as f64 / seconds,
        bytes as f64 / 1e6 / seconds,
        seconds
    );
}

fn main() {
    let temp = tempfile::tempdir().expect("temporary folder");
    let dir = std::env::var_os("ATFUNC_JSONL_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| temp.path().to_owned());
    std::fs::create_dir_all(&dir).expect("bench folder");
    let (records, tools, lines) = generate(&dir);
    let bytes = std::fs::metadata(&records).expect("records").len() as usize;
    let calls = lines.iter().map(|l| l.matches('@').count()).sum::<usize>();
    println!(
        "{RECORDS} records, {:.1} MB, about {:.1} `@` per record, {} cores",
        bytes as f64 / 1e6,
        calls as f64 / RECORDS as f64,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );

    let catalog = Catalog::new(atfunc::load_interfaces_str(TOOLS).expect("tools"));
    let batch = Batch::new(Some(catalog));

    let start = Instant::now();
    let mut out = 0usize;
    for (i, line) in lines.iter().enumerate() {
        out += batch
            .process_line(i as u64 + 1, line.as_bytes())
            .map_or(0, |l| l.len());
    }
    report("library, one thread", start.elapsed(), RECORDS, bytes);

    let start = Instant::now();
    let mut out_parallel = 0usize;
    for (n, chunk) in lines.chunks(2048).enumerate() {
        let first = (n * 2048) as u64 + 1;
        out_parallel += batch
            .process_lines(first, chunk)
            .iter()
            .map(String::len)
            .sum::<usize>();
    }
    report("library, every core", start.elapsed(), RECORDS, bytes);
    assert_eq!(out, out_parallel, "the same output either way");

    let binary = env!("CARGO_BIN_EXE_atfunc");
    let run = |command: &mut Command| {
        let status = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .expect("run atfunc");
        assert!(status.status.success(), "atfunc failed");
        String::from_utf8_lossy(&status.stderr).into_owned()
    };
    let mut best = Duration::MAX;
    let mut summary = String::new();
    for _ in 0..3 {
        let start = Instant::now();
        summary = run(Command::new(binary)
            .args(["parse", "--jsonl", "--tools"])
            .arg(&tools)
            .arg(&records));
        best = best.min(start.elapsed());
    }
    report("binary end to end (best of 3)", best, RECORDS, bytes);
    println!("  the last run's own summary: {}", summary.trim_end());

    // The same records, each carrying the tools list itself: the cache loads it once.
    let inline = dir.join("records_with_tools.jsonl");
    let tools_json: serde_json::Value = serde_json::from_str(TOOLS).expect("tools");
    let mut text = String::new();
    for line in &lines {
        let mut record: serde_json::Value = serde_json::from_str(line).expect("record");
        record["tools"] = tools_json.clone();
        text.push_str(&record.to_string());
        text.push('\n');
    }
    std::fs::write(&inline, &text).expect("write records");
    let start = Instant::now();
    run(Command::new(binary).args(["parse", "--jsonl"]).arg(&inline));
    report(
        "binary, tools on every record",
        start.elapsed(),
        RECORDS,
        text.len(),
    );

    if Path::new("/usr/bin/time").exists() {
        let stderr = run(Command::new("/usr/bin/time")
            .arg("-v")
            .arg(binary)
            .args(["parse", "--jsonl", "--tools"])
            .arg(&tools)
            .arg(&records));
        if let Some(line) = stderr
            .lines()
            .find(|l| l.contains("Maximum resident set size"))
        {
            println!("  peak memory: {}", line.trim());
        }
    }
    println!("input: {}", records.display());
}
