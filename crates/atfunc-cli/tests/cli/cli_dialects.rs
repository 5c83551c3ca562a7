//! `--dialect` on `parse`, `parse --jsonl` and `exec`: other models' call formats read as
//! a user runs the commands.

use crate::support;

use serde_json::{json, Value as Json};
use support::atfunc;

const TOOLS: &str = "tests/data/reference_tools.json";

fn lines(args: &[&str], input: &str) -> Vec<Json> {
    let out = atfunc(args, input.as_bytes());
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

const HERMES: &str = "Sure 😀 <tool_call>\n{\"name\": \"weather.get_current_weather\", \"arguments\": {\"location\": \"Zürich {]</tool_call>\"}}\n</tool_call> done";

#[test]
fn parse_reads_a_dialect_at_every_chunk_size() {
    let whole = lines(&["parse", "--text", "--dialect", "hermes"], HERMES);
    for size in ["1", "3", "7"] {
        let args = [
            "parse",
            "--text",
            "--dialect",
            "hermes",
            "--chunk-size",
            size,
        ];
        assert_eq!(lines(&args, HERMES), whole, "chunk size {size}");
    }
    assert_eq!(whole.len(), 3, "{whole:?}");
    assert_eq!(whole[0]["text"], "Sure 😀 ");
    assert_eq!(whole[1]["name"], "weather.get_current_weather");
    assert_eq!(
        whole[1]["named"],
        json!({"location": "Zürich {]</tool_call>"})
    );
    assert_eq!(whole[1]["chars"][0], 7);
    assert_eq!(whole[2]["text"], " done");
    // `auto` finds the same; without the flag the output is as before: all text.
    assert_eq!(
        lines(&["parse", "--text", "--dialect", "auto"], HERMES),
        whole
    );
    let plain = lines(&["parse", "--text"], HERMES);
    assert_eq!(plain, [json!({"text": HERMES})]);
}

#[test]
fn an_unbound_dialect_call_quotes_its_own_text() {
    let input = "<tool_call>{\"name\": \"nope.fn\", \"arguments\": {}}</tool_call>";
    for size in ["1", "5", "8192"] {
        let args = [
            "parse",
            "--tools",
            TOOLS,
            "--dialect",
            "hermes",
            "--chunk-size",
            size,
        ];
        let records = lines(&args, input);
        assert_eq!(records.len(), 1);
        assert_eq!(records[0]["raw"], input);
    }
}

#[test]
fn jsonl_reads_each_completion_with_auto() {
    let records = [
        json!({"id": 1, "completion": "[TOOL_CALLS]weather.get_current_weather[ARGS]{\"location\": \"Oslo\"}"}),
        json!({"id": 2, "completion": "\n[math.calculate_power(base=2, exponent=10)]\n"}),
        json!({"id": 3, "completion": "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>weather.get_current_weather<｜tool▁sep｜>{\"location\": \"Lima\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"}),
        json!({"id": 4, "completion": "<|channel|>commentary to=functions.weather.get_current_weather <|constrain|>json<|message|>{\"location\": \"Rome\"}<|call|>"}),
        json!({"id": 5, "completion": "Checking.\n@weather.get_current_weather(location=\"Paris\")"}),
    ];
    let input: String = records.iter().map(|r| format!("{r}\n")).collect();
    let out = lines(&["parse", "--jsonl", "--dialect", "auto"], &input);
    let names: Vec<_> = out
        .iter()
        .map(|line| line["calls"][0]["name"].clone())
        .collect();
    assert_eq!(
        names,
        [
            json!("weather.get_current_weather"),
            json!("math.calculate_power"),
            json!("weather.get_current_weather"),
            json!("weather.get_current_weather"),
            json!("weather.get_current_weather"),
        ],
        "{out:?}"
    );
    // Without the flag, only the last is an atfunc call.
    let plain = lines(&["parse", "--jsonl"], &input);
    let counts: Vec<_> = plain
        .iter()
        .map(|line| line["calls"].as_array().map(Vec::len))
        .collect();
    assert_eq!(
        counts,
        [Some(0), Some(0), Some(0), Some(0), Some(1)],
        "{plain:?}"
    );
    // An e-mail address is no call under `auto`.
    let mail = json!({"id": 6, "completion": "Write to bob@example.com(today)."});
    let out = lines(
        &["parse", "--jsonl", "--dialect", "auto"],
        &format!("{mail}\n"),
    );
    assert_eq!(out[0]["calls"], json!([]), "{out:?}");
}

#[test]
fn exec_runs_calls_of_a_dialect() {
    let input = "<tool_call>\n{\"name\": \"tools.get_toolboxes\", \"arguments\": {}}\n</tool_call>";
    let out = atfunc(
        &["exec", "--tools", TOOLS, "--json", "--dialect", "hermes"],
        input.as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0));
    let report: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["call_count"], 1);
    assert_eq!(report["calls"][0]["name"], "tools.get_toolboxes");
    assert_eq!(report["calls"][0]["span"], json!([0, input.len()]));
}

#[test]
fn an_unknown_dialect_is_an_error_naming_the_choices() {
    let out = atfunc(&["parse", "--dialect", "gemma"], b"");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown dialect `gemma`") && stderr.contains("qwen3_xml"),
        "{stderr}"
    );
}

/// With tools, `--dialect hermes` and `auto` read an untagged JSON call that names one of
/// them (Qwen 2.5 under its own template), fenced or not; other JSON stays text.
#[test]
fn an_untagged_json_call_naming_a_tool_is_read_with_tools() {
    let call =
        "{\"name\": \"weather.get_current_weather\", \"arguments\": {\"location\": \"Oslo\"}}";
    let input = format!("```json\n{call}\n```\n");
    for dialect in ["hermes", "auto"] {
        for size in ["1", "8192"] {
            let out = lines(
                &[
                    "parse",
                    "--tools",
                    TOOLS,
                    "--dialect",
                    dialect,
                    "--chunk-size",
                    size,
                ],
                &input,
            );
            assert_eq!(out.len(), 1, "{dialect}: {out:?}");
            assert_eq!(out[0]["name"], "weather.get_current_weather");
        }
        // Without tools, hermes reads tagged calls only.
        if dialect == "hermes" {
            assert!(lines(&["parse", "--dialect", dialect], &input).is_empty());
        }
    }
}

/// Issue 56: an answer that shows a call as an example, on a line of its own, outside or
/// inside a ```json fence, runs nothing: a call without a marker of its own (bare JSON, a
/// Python list) counts only where the answer is nothing but calls. Calls behind a marker
/// run wherever they stand.
#[test]
fn an_example_call_in_prose_runs_nothing() {
    let json = r#"{"name": "file.deletefile", "arguments": {"filepath": "keep.txt"}}"#;
    let list = r#"[file.deletefile(filepath="keep.txt")]"#;
    let before = "To delete a file you would write a call like this:\n";
    let after = "\nBut I will not do that, since you only asked for a list.";
    let examples = [
        ("hermes", format!("{before}{json}{after}")),
        ("hermes", format!("{before}```json\n{json}\n```{after}")),
        ("hermes", format!("{json}{after}")),
        ("hermes", format!("```json\n{json}\n```{after}")),
        ("hermes", format!("{before}\n{json}\n")),
        ("hermes", format!("{before}```json\n{json}\n```\n")),
        ("auto", format!("{before}{json}{after}")),
        ("auto", format!("```json\n{json}\n```{after}")),
        ("auto", format!("{before}{list}{after}")),
        ("auto", format!("{list}{after}")),
        ("auto", format!("{before}{list}\n")),
    ];
    let run = |dialect: &str, answer: &str| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("box")).unwrap();
        std::fs::write(dir.path().join("box/keep.txt"), "kept").unwrap();
        let config = dir.path().join("atfunc.json");
        let toolbox = json!({"toolboxes": [{"name": "file", "kind": "file", "root": "box"}]});
        std::fs::write(&config, toolbox.to_string()).unwrap();
        let config = config.to_str().unwrap();
        let out = atfunc(
            &["exec", "--config", config, "--json", "--dialect", dialect],
            answer.as_bytes(),
        );
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let report: Json = serde_json::from_slice(&out.stdout).unwrap();
        (dir.path().join("box/keep.txt").exists(), report)
    };
    for (dialect, answer) in &examples {
        let (kept, report) = run(dialect, answer);
        assert!(kept, "{dialect} deleted the file for {answer:?}: {report}");
        assert_eq!(report["call_count"], 0, "{dialect}: {answer:?}");
    }
    // The same calls as the whole answer run (the file box deletes without asking).
    for (dialect, answer) in [
        ("hermes", format!("```json\n{json}\n```")),
        ("hermes", format!("\n{json}\n")),
        ("auto", format!("{list}\n")),
        (
            "auto",
            format!("To delete it: <tool_call>{json}</tool_call> as asked."),
        ),
    ] {
        let (kept, report) = run(dialect, &answer);
        assert!(!kept, "{dialect} ran nothing for {answer:?}: {report}");
        assert_eq!(report["call_count"], 1, "{dialect}: {answer:?}");
    }
}
