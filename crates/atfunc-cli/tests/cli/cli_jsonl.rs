//! `atfunc parse --jsonl`: batch post-processing, run as a user runs it.

use crate::support;

use support::atfunc;

use serde_json::{json, Value as Json};

const TOOLS: &str = "tests/data/reference_tools.json";

/// Runs `atfunc parse --jsonl [args]` on `records` (one per line) and returns the output
/// lines, parsed; fails the test unless the command succeeded.
fn jsonl(args: &[&str], records: &[Json]) -> (Vec<Json>, String) {
    let input: String = records.iter().map(|r| format!("{r}\n")).collect();
    jsonl_text(args, &input)
}

fn jsonl_text(args: &[&str], input: &str) -> (Vec<Json>, String) {
    let mut all = vec!["parse", "--jsonl"];
    all.extend_from_slice(args);
    let out = atfunc(&all, input.as_bytes());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let lines = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (lines, stderr)
}

fn ids(lines: &[Json]) -> Vec<Json> {
    lines.iter().map(|line| line["id"].clone()).collect()
}

#[test]
fn order_is_kept_across_many_records_of_mixed_sizes() {
    // Every seventh record carries a long prose and many calls, so records finish out of
    // order on the worker threads; the output must not.
    let records: Vec<Json> = (0..5000usize)
        .map(|i| {
            let calls = if i.is_multiple_of(7) { 40 } else { i % 3 };
            let mut completion = String::new();
            if i.is_multiple_of(7) {
                completion.push_str(&"Let me think about this carefully. ".repeat(600));
            }
            for k in 0..calls {
                completion.push_str(&format!(
                    "Step {k}: @math.calculate_power({i}, exponent={k}) then "
                ));
            }
            json!({"id": i, "completion": completion})
        })
        .collect();
    let (lines, _) = jsonl(&["--tools", TOOLS], &records);
    assert_eq!(lines.len(), 5000);
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(line["id"], json!(i), "line {i}");
        let expected = if i.is_multiple_of(7) { 40 } else { i % 3 };
        let calls = line["calls"].as_array().unwrap();
        assert_eq!(calls.len(), expected, "record {i}");
        for (k, call) in calls.iter().enumerate() {
            assert_eq!(
                call["args"],
                json!({"base": i, "exponent": k}),
                "record {i}"
            );
        }
        assert_eq!(line["errors"], json!([]));
    }
}

#[test]
fn a_records_own_tools_win_over_the_tools_file() {
    let own = json!([{"type": "function", "function": {
        "name": "shop.find",
        "parameters": {"type": "object",
                       "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                       "required": ["query"]}}}]);
    let text = "@shop.find('socks', limit=\"3\") and @weather.get_current_weather(Oslo)";
    let records = [
        json!({"id": "own", "completion": text, "tools": own}),
        json!({"id": "file", "completion": text}),
        json!({"id": "own again", "completion": text, "tools": own}),
    ];
    let (lines, _) = jsonl(&["--tools", TOOLS], &records);
    assert_eq!(
        ids(&lines),
        [json!("own"), json!("file"), json!("own again")]
    );

    for line in [&lines[0], &lines[2]] {
        assert_eq!(
            line["calls"],
            json!([{"name": "shop.find", "args": {"query": "socks", "limit": 3},
                    "body": null, "span": [0, 30], "chars": [0, 30]}])
        );
        let errors = line["errors"].as_array().unwrap();
        assert_eq!(errors.len(), 1);
        assert!(errors[0]["error"]
            .as_str()
            .unwrap()
            .starts_with("Unknown function 'weather.get_current_weather'"));
    }

    assert_eq!(
        lines[1]["calls"],
        json!([{"name": "weather.get_current_weather", "args": {"location": "Oslo"},
                "body": null, "span": [35, 69], "chars": [35, 69]}])
    );
    assert_eq!(lines[1]["errors"].as_array().unwrap().len(), 1);

    // Without --tools, a record without tools gets its calls as written.
    let (lines, _) = jsonl(&[], &records[1..2]);
    assert_eq!(
        lines[0]["calls"][0],
        json!({"name": "shop.find", "positional": ["socks"], "named": {"limit": "3"},
               "body": null, "span": [0, 30], "chars": [0, 30]})
    );
}

#[test]
fn tools_in_any_loadable_shape_and_invalid_tools_are_an_error_line() {
    let atfunc_shape = json!([{"domain": "shop", "name": "find", "type": "function",
        "description": "Find products", "returns": "array",
        "params": {"query": {"type": "string", "isRequired": true, "description": "Words"}}}]);
    let schema_shape = json!({"functions": [{"name": "shop.find", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}]});
    let records = [
        json!({"id": 1, "completion": "@shop.find(hat)", "tools": atfunc_shape}),
        json!({"id": 2, "completion": "@shop.find(hat)", "tools": schema_shape}),
        json!({"id": 3, "completion": "@shop.find(hat)", "tools": [{"name": "bad name!"}]}),
        json!({"id": 4, "completion": "@shop.find(hat)", "tools": 5}),
    ];
    let (lines, _) = jsonl(&[], &records);
    for line in &lines[..2] {
        assert_eq!(line["calls"][0]["args"], json!({"query": "hat"}), "{line}");
    }
    for (line, number) in lines[2..].iter().zip([3, 4]) {
        assert_eq!(line["line"], json!(number), "{line}");
        assert!(
            line["error"]
                .as_str()
                .unwrap()
                .starts_with("invalid \"tools\": "),
            "{line}"
        );
        assert!(line.get("calls").is_none());
    }
    assert_eq!(ids(&lines[2..]), [json!(3), json!(4)]);
}

#[test]
fn a_bad_line_is_an_error_line_and_the_rest_go_on() {
    let input = concat!(
        "{\"id\": 1, \"completion\": \"@math.calculate_power(2, 3)\"}\n",
        "{\"id\": 2, \"completion\": \"@math.calculate_power(2\n",
        "not json at all\n",
        "\n",
        "[1, 2]\n",
        "{\"id\": 6, \"completion\": \"fine, no calls\"}\r\n",
        "{\"id\": 7, \"completion\": \"@math.calculate_power(5, 1)\"}",
    );
    let (lines, stderr) = jsonl_text(&["--tools", TOOLS], input);
    // The blank line gives no output but still counts for the line numbers.
    assert_eq!(lines.len(), 6, "{lines:?}");
    assert_eq!(
        lines[0]["calls"][0]["args"],
        json!({"base": 2, "exponent": 3})
    );
    for (line, number) in lines[1..4].iter().zip([2, 3, 5]) {
        assert_eq!(line["id"], Json::Null);
        assert_eq!(line["line"], json!(number));
        let error = line["error"].as_str().unwrap();
        assert!(!error.is_empty());
        assert!(line.get("calls").is_none());
    }
    assert!(lines[1]["error"]
        .as_str()
        .unwrap()
        .starts_with("not valid JSON: "));
    assert_eq!(
        lines[4],
        json!({"id": 6, "calls": [], "errors": []}),
        "a CRLF line ending is not part of the record"
    );
    assert_eq!(
        lines[5]["calls"][0]["args"],
        json!({"base": 5, "exponent": 1})
    );
    assert!(stderr.starts_with("6 records, "), "{stderr}");
}

#[test]
fn a_record_without_a_completion_says_so_with_its_id() {
    let records = [
        json!({"id": "a", "text": "@math.calculate_power(1, 2)"}),
        json!({"id": {"run": 3, "sample": 1}, "completion": 42}),
        json!({"completion": null}),
        json!({"id": "d", "completion": "@math.calculate_power(1, 2)"}),
    ];
    let (lines, _) = jsonl(&["--tools", TOOLS], &records);
    assert_eq!(
        lines[0],
        json!({"id": "a", "line": 1, "error": "missing \"completion\""})
    );
    assert_eq!(
        lines[1],
        json!({"id": {"run": 3, "sample": 1}, "line": 2,
               "error": "\"completion\" must be a string, found a number"})
    );
    assert_eq!(
        lines[2],
        json!({"id": null, "line": 3, "error": "missing \"completion\""})
    );
    assert_eq!(lines[3]["id"], json!("d"));
    assert_eq!(lines[3]["calls"].as_array().unwrap().len(), 1);
}

/// The records `atfunc parse [args]` prints for `completion`, split into calls and errors.
fn parse_records(args: &[&str], completion: &str) -> (Vec<Json>, Vec<Json>) {
    let mut all = vec!["parse"];
    all.extend_from_slice(args);
    let out = atfunc(&all, completion.as_bytes());
    assert_eq!(out.status.code(), Some(0));
    let records: Vec<Json> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    records
        .into_iter()
        .partition(|record| record.get("error").is_none())
}

#[test]
fn calls_and_errors_are_the_objects_parse_prints() {
    let long = "x".repeat(300);
    let completions = [
        "Sure: @weather.get_current_weather(\"Paris\", unit: 'celsius') and @math.calculate_power(2, exponent=\"10\",)".to_owned(),
        "@weather.get_current_weather() is missing its location; @wether.get_current_weather(Oslo)".to_owned(),
        "@api.create_user(ann, \"ann@example.com\") with_body [[{\"username\": \"ann\", \"email\": \"ann@example.com\", \"note\": \"]]\"}]]".to_owned(),
        format!("```\n@app.route('/')\n```\nthen @math.calculate_power(\"{long}\", 2) and @math.calculate_power(1, \"unterminated"),
        "prose only, bob@example.com, no calls".to_owned(),
        "multi-byte: @weather.get_current_weather(\"Zürich 😀\") @weather.get_current_weather(\"ünïcödé\", bogus=1)".to_owned(),
    ];
    let records: Vec<Json> = completions
        .iter()
        .enumerate()
        .map(|(i, c)| json!({"id": i, "completion": c}))
        .collect();
    for args in [&["--tools", TOOLS][..], &[][..]] {
        let (lines, _) = jsonl(args, &records);
        assert_eq!(lines.len(), completions.len());
        for (line, completion) in lines.iter().zip(&completions) {
            let (calls, errors) = parse_records(args, completion);
            assert_eq!(line["calls"], Json::Array(calls), "{args:?} {completion}");
            assert_eq!(line["errors"], Json::Array(errors), "{args:?} {completion}");
        }
    }
    // The corpus above exercises both kinds of record.
    let (lines, _) = jsonl(&["--tools", TOOLS], &records);
    let count =
        |key: &str| -> usize { lines.iter().map(|l| l[key].as_array().unwrap().len()).sum() };
    assert!(count("calls") >= 4 && count("errors") >= 5);
}

#[test]
fn the_summary_line_counts_records_and_rates() {
    let records: Vec<Json> = (0..250)
        .map(|i| json!({"id": i, "completion": format!("@math.calculate_power({i}, 2)")}))
        .collect();
    let (lines, stderr) = jsonl(&["--tools", TOOLS], &records);
    assert_eq!(lines.len(), 250);
    // stderr is a pipe here: the summary and nothing else (no progress bar).
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let line = stderr.trim_end();
    let parts: Vec<&str> = line.split(", ").collect();
    assert_eq!(parts.len(), 3, "{line}");
    assert_eq!(parts[0], "250 records");
    let rate = parts[1].strip_suffix(" records/s").unwrap();
    assert!(rate.parse::<f64>().unwrap() > 0.0, "{line}");
    let mb = parts[2].strip_suffix(" MB/s").unwrap();
    assert!(mb.parse::<f64>().unwrap() >= 0.0, "{line}");

    let (_, stderr) = jsonl_text(&[], "");
    assert!(stderr.starts_with("0 records, "), "{stderr}");
}

#[test]
fn reads_a_file_and_fails_on_what_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("records.jsonl");
    std::fs::write(
        &path,
        "{\"id\": 1, \"completion\": \"@math.calculate_power(3, 3)\"}\n",
    )
    .unwrap();
    let (lines, _) = jsonl(&["--tools", TOOLS, path.to_str().unwrap()], &[]);
    assert_eq!(
        lines[0]["calls"][0]["args"],
        json!({"base": 3, "exponent": 3})
    );

    let out = atfunc(&["parse", "--jsonl", "no/such/records.jsonl"], b"");
    assert_eq!(out.status.code(), Some(2));
    let out = atfunc(&["parse", "--jsonl", "--tools", "no/such/tools.json"], b"");
    assert_eq!(out.status.code(), Some(2));
    let out = atfunc(&["parse", "--jsonl", "--text"], b"");
    assert_eq!(
        out.status.code(),
        Some(2),
        "--text has no meaning with --jsonl"
    );
}

#[test]
fn a_config_file_is_the_default_tool_set_too() {
    let config = "examples/config/atfunc.json";
    let completion = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/config/completion.txt"
    ))
    .unwrap();
    let (lines, _) = jsonl(
        &["--config", config],
        &[json!({"id": "c", "completion": completion})],
    );
    let (calls, errors) = parse_records(&["--config", config], &completion);
    assert!(!calls.is_empty());
    assert_eq!(lines[0]["calls"], Json::Array(calls));
    assert_eq!(lines[0]["errors"], Json::Array(errors));
}

#[test]
fn records_give_character_offsets_beside_byte_offsets() {
    // What a Python user slices the completion with: `chars`, not `span`.
    let text = "Grüße 😀! @shop.find('Größe 42') then @nope(";
    let records = [json!({"id": 1, "completion": text})];
    let (lines, _) = jsonl(&[], &records);
    let call = &lines[0]["calls"][0];
    let error = &lines[0]["errors"][0];
    assert_eq!(call["span"], json!([14, 38]));
    assert_eq!(call["chars"], json!([9, 31]));
    assert_eq!(error["span"], json!([44, 50]));
    assert_eq!(error["chars"], json!([37, 43]));
    let chars: Vec<char> = text.chars().collect();
    for record in [call, error] {
        let (s, e) = (
            record["chars"][0].as_u64().unwrap(),
            record["chars"][1].as_u64().unwrap(),
        );
        let sliced: String = chars[s as usize..e as usize].iter().collect();
        let (s, e) = (
            record["span"][0].as_u64().unwrap(),
            record["span"][1].as_u64().unwrap(),
        );
        assert_eq!(sliced, text[s as usize..e as usize]);
    }
}

#[test]
fn lines_of_every_size_come_out_in_order_byte_for_byte() {
    // Every 37th record has 2,000 calls: about 250 KB of output, sent to the writer in
    // pieces while it is due and held while records before it are still being parsed;
    // blank and bad lines and calls that do not bind among them.
    let lines: Vec<String> = (0..3000usize)
        .map(|i| match i % 37 {
            3 => String::new(),
            4 => "not a record".to_owned(),
            k => {
                let calls = if k == 5 { 2000 } else { i % 4 };
                let completion: String = (0..calls)
                    .map(|c| match c % 3 {
                        0 => format!("@math.calculate_power({i}, exponent={c}) é "),
                        1 => format!("@weather.get_current_weather(\"Zürich {c}\")\n"),
                        _ => format!("@wether.get_forecast(\"Oslo\", days={c}) 😀 "),
                    })
                    .collect();
                json!({"id": i, "completion": completion}).to_string()
            }
        })
        .collect();
    let input: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let out = atfunc(&["parse", "--jsonl", "--tools", TOOLS], input.as_bytes());
    assert_eq!(out.status.code(), Some(0));

    let tools =
        std::fs::read_to_string(format!("{}/../../{TOOLS}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let catalog = atfunc::Catalog::new(atfunc::load_interfaces_str(&tools).unwrap());
    let batch = atfunc::batch::Batch::new(Some(catalog));
    let expected: String = lines
        .iter()
        .enumerate()
        .filter_map(|(i, line)| batch.process_line(i as u64 + 1, line.as_bytes()))
        .map(|line| line + "\n")
        .collect();
    assert!(expected.len() > 5_000_000, "{} bytes", expected.len());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), expected.lines().count());
    assert!(
        stdout == expected,
        "the output differs from the library's lines"
    );
}

/// Calls in the record of the memory test: enough that the 1.8 KB a call cost when a
/// record's calls were all held (180 MB) shows, few enough for a debug build.
const MANY_CALLS: usize = 100_000;

/// The high-water mark of a running process's resident memory (`VmHWM`), in KB; `None`
/// once it has exited.
#[cfg(target_os = "linux")]
fn high_water_kb(pid: libc::pid_t) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The peak memory allowed, in MB: the process's own footprint, the 0.5 MB record read
/// and decoded, its 9.6 MB of output, and room.
const MANY_CALLS_PEAK_MB: i64 = 64;

#[cfg(target_os = "linux")]
#[test]
fn a_record_of_many_calls_is_written_as_it_is_parsed() {
    use std::io::{Read, Write};
    use std::process::{Command, Stdio};

    let completion = "@a(1)".repeat(MANY_CALLS);
    let input = format!("{}\n", json!({"id": "many", "completion": completion}));
    let mut child = Command::new(env!("CARGO_BIN_EXE_atfunc"))
        .args(["parse", "--jsonl"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()).unwrap());
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        stdout.read_to_end(&mut out).unwrap();
        out
    });
    // This child's own peak, whatever else the tests run meanwhile: the high-water mark of
    // its memory (VmHWM), read while it runs. Not `wait4`'s `ru_maxrss`: a spawned child
    // inherits the high-water mark of the process it was started from at its exec, so
    // that figure was this test binary's own peak whenever other tests had made it larger
    // (150 MB seen under load, for a child that peaks at 22 MB).
    let pid = child.id() as libc::pid_t;
    let mut peak_kb = 0u64;
    loop {
        if let Some(kb) = high_water_kb(pid) {
            peak_kb = peak_kb.max(kb);
        }
        // Waited for without being reaped: its pid stays its own while it is read above.
        let mut info = std::mem::MaybeUninit::<libc::siginfo_t>::zeroed();
        // SAFETY: `info` is valid and writable; the child is ours and not waited for
        // elsewhere.
        let waited = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                info.as_mut_ptr(),
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        assert_eq!(waited, 0, "waitid: {}", std::io::Error::last_os_error());
        // SAFETY: waitid succeeded and filled it in (zeroed when the child still runs).
        if unsafe { info.assume_init().si_pid() } == pid {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    let peak_mb = (peak_kb / 1024) as i64;
    writer.join().unwrap();
    let out = reader.join().unwrap();

    let line: Json = serde_json::from_slice(&out).unwrap();
    let calls = line["calls"].as_array().unwrap();
    assert_eq!(calls.len(), MANY_CALLS);
    let end = 5 * MANY_CALLS;
    assert_eq!(calls[MANY_CALLS - 1]["span"], json!([end - 5, end]));
    assert_eq!(line["errors"], json!([]));
    assert!(
        peak_mb < MANY_CALLS_PEAK_MB,
        "peak {peak_mb} MB for {} MB of output",
        out.len() >> 20
    );
}
