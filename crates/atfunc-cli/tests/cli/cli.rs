//! The `atfunc` binary, run as a user runs it.

use crate::missing;

use crate::pages;
use crate::support;

use support::{atfunc, stderr, stdout};

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

const TOOLS: &str = "tests/data/reference_tools.json";

#[test]
fn render_prints_the_prompt() {
    let out = atfunc(&["render", "--tools", "examples/demo/tools.json"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("You can call the functions listed below."));
    assert!(text.contains(
        "@weather.get_current_weather( <*location>, <unit{\"celsius\"|\"fahrenheit\"}> )\n"
    ));
    // The README and docs/interfaces.md show this output; keep them in step.
    assert!(
        pages::text().contains(text.trim_end()),
        "the documentation's prompt text is stale"
    );
}

#[test]
fn render_adds_parameter_descriptions_when_asked() {
    let args = ["render", "--tools", "examples/demo/tools.json"];
    let plain = stdout(&atfunc(&args, b""));
    let out = atfunc(&[&args[..], &["--param-descriptions"]].concat(), b"");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(
        "Description: Get current weather information for a location\n\
         Parameters:\n- location: City name\n- unit: Temperature unit\n"
    ));
    assert!(!plain.contains("Parameters:"));
    // Only lines are added: the rest of the prompt is the plain one.
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| *l != "Parameters:" && !l.starts_with("- ") || plain.contains(l))
        .collect();
    assert_eq!(kept.join("\n"), plain.trim_end());
}

#[test]
fn grammar_prints_gbnf() {
    let args = [
        "grammar",
        "--tools",
        "examples/demo/tools.json",
        "--choice",
        "required",
        "--single",
    ];
    let out = atfunc(&args, b"");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("root ::= lead-in call\n"), "{text}");
    // docs/grammars.md shows this output; keep the two in step.
    assert!(
        pages::text().contains(text.trim_end()),
        "the documentation's grammar is stale"
    );

    let out = atfunc(
        &[
            "grammar",
            "--tools",
            "examples/demo/tools.json",
            "--root-toolbox",
            "math",
        ],
        b"",
    );
    assert!(stdout(&out).contains("\"@calculate_power(base=\""));

    // The weather function's grammar with `extra` options; it must be printed.
    let weather = |extra: &[&str]| {
        let base = [
            "grammar",
            "--tools",
            "examples/demo/tools.json",
            "--choice",
            "weather.get_current_weather",
        ];
        let out = atfunc(&[&base[..], extra].concat(), b"");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout(&out)
    };

    // --form hermes: the model's own blocks, under the tools' own names.
    let text = weather(&["--form", "hermes"]);
    assert!(
        text.contains(
            r#""<tool_call>\n{\"name\": \"weather.get_current_weather\", \"arguments\": {\"location\": ""#
        ),
        "{text}"
    );
    assert!(!text.contains('@'), "{text}");

    // --bare-strings: the location may be a bare word too; not in Hermes' JSON.
    let text = weather(&["--bare-strings"]);
    assert!(text.contains("(location=\" (string | bare)"), "{text}");
    assert!(!weather(&[]).contains("bare"));
    assert!(!weather(&["--bare-strings", "--form", "hermes"]).contains("bare"));

    // --grounded-text: the location is a run of the question's words.
    let text = weather(&["--grounded-text", "Weather in Oslo?"]);
    assert!(text.contains("span-2 ::= \"Oslo\"\n"), "{text}");
    assert!(text.contains("(location=\" span"), "{text}");

    let out = atfunc(
        &[
            "grammar",
            "--tools",
            "examples/demo/tools.json",
            "--choice",
            "nope",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out).trim_end(),
        "atfunc: examples/demo/tools.json: Unknown function 'nope' for the grammar: the \
         functions are weather.get_current_weather, math.calculate_power"
    );
}

/// `--continued` and `--not-again`: the next call of an answer that wrote some, or the
/// end; a call left out is not offered, and one that does not read is refused, named.
#[test]
fn grammar_leaves_out_calls_already_written() {
    let grammar = |extra: &[&str]| {
        let mut args = vec![
            "grammar",
            "--tools",
            "examples/demo/tools.json",
            "--choice",
            "weather.get_current_weather",
            "--grounded-text",
            "Oslo",
        ];
        args.extend_from_slice(extra);
        atfunc(&args, b"")
    };
    let out = grammar(&["--continued"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("root ::= (\"\\n\" call)?\n"),
        "{}",
        stdout(&out)
    );
    // Every call the question's words allow, left out (two in one argument, one in
    // another, spelled otherwise): none is left to offer.
    let out = grammar(&[
        "--not-again",
        "@weather.get_current_weather(\"Oslo\") @weather.get_current_weather(\"Oslo\", \"celsius\")",
        "--not-again",
        "@Weather.Get_Current_Weather(location=\"Oslo\", unit=\"fahrenheit\")",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out).trim_end(),
        "atfunc: examples/demo/tools.json: No call can be required: every call of \
         'weather.get_current_weather' that can bind is one of the calls left out \
         (not_again), or differs from one only in a value the grammar cannot list (a free \
         number or text)"
    );
    // One left out: the calls with a unit differ from it in a value the grammar lists.
    let out = grammar(&["--not-again", "@weather.get_current_weather(\"Oslo\")"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("celsius") && text.contains("fahrenheit"),
        "{text}"
    );
    for (calls, error) in [
        (
            "@weather.get_current_weather(town=\"Oslo\")",
            "atfunc: --not-again: @weather.get_current_weather(town=\"Oslo\"): The call of \
             function 'weather.get_current_weather' has 2 problems:\n- Unknown parameter \
             'town' for function 'weather.get_current_weather': valid parameters are location, \
             unit\n- Missing required parameter for function 'weather.get_current_weather': \
             location",
        ),
        (
            "Oslo",
            "atfunc: --not-again: no call in \"Oslo\": write calls as the model does, \
             @name(\"text\", 42, name=\"value\")",
        ),
    ] {
        let out = grammar(&["--not-again", calls]);
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(stderr(&out).trim_end(), error);
    }
}

#[test]
fn render_without_preamble_and_with_root() {
    let out = atfunc(
        &[
            "render",
            "--tools",
            TOOLS,
            "--no-preamble",
            "--root-toolbox",
            "weather",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).starts_with("@get_current_weather( <*location>, <unit> )\n"));
}

#[test]
fn a_tools_file_that_is_not_json_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.json");
    std::fs::write(&path, "[\n  {\"name\": }\n]").unwrap();
    for command in ["render", "check", "parse"] {
        let out = atfunc(&[command, "--tools", path.to_str().unwrap()], b"");
        assert_eq!(out.status.code(), Some(2), "{command}");
        assert_eq!(
            stderr(&out),
            format!(
                "atfunc: {}:2:12: not valid JSON: expected value\n",
                path.display()
            )
        );
        assert!(stdout(&out).is_empty());
    }
}

#[test]
fn check_lists_every_problem() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.json");
    std::fs::write(
        &path,
        r#"[{"domain": "w", "name": "get_x", "type": "fn", "description": "x", "returns": "string", "params": {}},
            {"domain": "w", "name": "Get_X", "type": "function", "description": "x", "returns": "string", "params": {}}]"#,
    )
    .unwrap();
    let out = atfunc(&["check", "--tools", path.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(1));
    let p = path.display();
    assert_eq!(
        stdout(&out),
        format!(
            "{p}: Validation failed for function 'get_x' in toolbox 'w': Field 'type' must be 'function' or 'api-wrapper', found 'fn'\n"
        )
    );
    assert_eq!(stderr(&out), format!("atfunc: {p}: 1 problem(s) found\n"));

    let ok = atfunc(&["check", "--tools", TOOLS], b"");
    assert_eq!(ok.status.code(), Some(0));
    assert!(stdout(&ok).contains("ok, 3 function(s) in 3 toolbox(es)"));
}

/// Every restriction atfunc does not enforce, in a tools file and in a config's functions:
/// `check` lists it as a warning (and passes), `check --strict` as a problem (and fails),
/// and the other commands say it on stderr.
#[test]
fn check_warns_of_every_unenforced_restriction_and_check_strict_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let function = r#"{"name": "pay", "parameters": {"type": "object",
        "properties": {"amount": {"type": "number", "not": {"const": 0}}}}}"#;
    let tools = dir.path().join("tools.json");
    std::fs::write(&tools, format!("[{function}]")).unwrap();
    let config = dir.path().join("atfunc.json");
    let command = function.replacen('{', r#"{"command": ["cat"], "#, 1);
    std::fs::write(
        &config,
        format!(
            r#"{{"toolboxes": [{{"name": "shop", "kind": "command", "functions": [{command}]}}]}}"#
        ),
    )
    .unwrap();
    let problem =
        "'parameters.amount' declares not, which atfunc neither shows the model nor checks";
    let consequence = "a call that breaks it is not refused, so the tool must check it";
    let (t, c) = (tools.display(), config.display());
    let check = |args: &[&str]| atfunc(args, b"");

    let out = check(&["check", "--tools", tools.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(
        stdout(&out),
        format!("{t}: ok, 1 function(s) in 1 toolbox(es)\n  pay\n{t}: warning: function 'pay': {problem}; {consequence}\n")
    );
    let out = check(&["check", "--strict", "--tools", tools.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(
        stdout(&out),
        format!("{t}: Validation failed for function 'pay': {problem}\n")
    );

    let out = check(&["check", "--config", config.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(
        stdout(&out),
        format!("{c}: ok, 1 toolbox(es)\n  shop\n{c}: warning: toolbox 'shop' (#1): function 'pay': {problem}; {consequence}\n")
    );
    assert_eq!(stderr(&out), format!("atfunc: {c}: 1 warning(s)\n"));
    let out = check(&["check", "--strict", "--config", config.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(
        stdout(&out),
        format!("{c}: toolbox 'shop' (#1): function 'pay': {problem}\n")
    );
    let out = atfunc(
        &["exec", "--config", config.to_str().unwrap()],
        b"@shop.pay(amount=0)",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "atfunc: warning: {c}: toolbox 'shop' (#1): function 'pay': {problem}; {consequence}\n"
        )),
        "{}",
        stderr(&out)
    );
}

/// A required key that is none of the listed properties: `check` names the function and
/// the key, and `render` refuses the file instead of showing an untyped argument.
/// A required key that names no property is worked around by every command (the
/// requirement left out, said once on stderr; `check` lists it as a warning) and refused by
/// `check --strict`.
#[test]
fn a_required_key_without_a_property_is_a_warning_and_refused_by_check_strict() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.json");
    std::fs::write(
        &path,
        r#"[{"name": "a.f", "parameters": {"type": "object",
            "properties": {"x": {"type": "string"}}, "required": ["y"]}}]"#,
    )
    .unwrap();
    let problem = "'parameters.required' names 'y', which is not one of its properties: describe it under 'parameters.properties' or drop it from 'required'";
    let p = path.display();
    let out = atfunc(
        &["check", "--strict", "--tools", path.to_str().unwrap()],
        b"",
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stdout(&out),
        format!("{p}: Validation failed for function 'f' in toolbox 'a': {problem}\n")
    );
    let out = atfunc(&["check", "--tools", path.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out),
        format!(
            "{p}: ok, 1 function(s) in 1 toolbox(es)\n  a.f\n\
             {p}: warning: function 'f' in toolbox 'a': {problem}; the requirement is left out\n"
        )
    );
    assert_eq!(stderr(&out), format!("atfunc: {p}: 1 warning(s)\n"));
    let out = atfunc(&["render", "--tools", path.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stderr(&out),
        format!("atfunc: warning: {p}: function 'f' in toolbox 'a': {problem}; the requirement is left out\n")
    );
    assert!(stdout(&out).contains("@a.f( <x> )"), "{}", stdout(&out));
}

/// BFCL's real tool sets declare booleans whose choices are strings; `parse` reads them and
/// binds each choice, where it once refused the whole file.
#[test]
fn a_boolean_with_string_choices_binds_each_choice_through_parse() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.json");
    std::fs::write(
        &path,
        r#"[{"name": "Restaurants_2_FindRestaurants", "parameters": {"type": "object",
            "properties": {"has_seating_outdoors": {"type": "boolean",
                "enum": ["True", "False", "dontcare"], "default": "dontcare"}}}}]"#,
    )
    .unwrap();
    let out = atfunc(
        &["parse", "--tools", path.to_str().unwrap()],
        b"@Restaurants_2_FindRestaurants(has_seating_outdoors=\"dontcare\")",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(r#""args":{"has_seating_outdoors":"dontcare"}"#),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        stderr(&out).lines().count(),
        1,
        "one warning: {}",
        stderr(&out)
    );
}

#[test]
fn missing_files_exit_2() {
    let out = atfunc(&["render", "--tools", "no/such/file.json"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).starts_with("atfunc: cannot read tools file no/such/file.json: "));
    let out = atfunc(&["parse", "no/such/input.txt"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).starts_with("atfunc: cannot read input no/such/input.txt: "));
}

const COMPLETION: &str = "Sure. @weather.get_current_weather(\"Oslo\", unit=\"celsius\") and \
@weather.get_current_weather(unit=\"celsius\")\nthen `@app.route('/')` and bob@example.com \
@MATH.Calculate_Power(2, \"10\") done \u{e9}\u{1F600}";

#[test]
fn parse_binds_calls_and_reports_errors_as_data() {
    let out = atfunc(&["parse", "--tools", TOOLS], COMPLETION.as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{lines:#?}");
    assert_eq!(lines[0]["name"], "weather.get_current_weather");
    assert_eq!(
        lines[0]["args"],
        serde_json::json!({"location": "Oslo", "unit": "celsius"})
    );
    assert_eq!(lines[0]["body"], serde_json::Value::Null);
    assert_eq!(
        lines[1]["error"],
        "Missing required parameter for function 'weather.get_current_weather': location"
    );
    assert_eq!(
        lines[1]["raw"],
        "@weather.get_current_weather(unit=\"celsius\")"
    );
    assert!(lines[2]["error"].as_str().unwrap().contains("app.route"));
    assert_eq!(lines[2]["raw"], "@app.route('/')");
    assert_eq!(lines[3]["name"], "math.calculate_power");
    assert_eq!(
        lines[3]["args"],
        serde_json::json!({"base": 2, "exponent": 10})
    );
    // Spans are byte offsets into the input.
    for line in lines.iter().filter(|l| l.get("name").is_some()) {
        let start = line["span"][0].as_u64().unwrap() as usize;
        assert_eq!(&COMPLETION[start..start + 1], "@");
    }
}

#[test]
fn parse_output_is_the_same_for_every_chunk_size() {
    let mut input = COMPLETION.repeat(3).into_bytes();
    input.extend_from_slice(b" tail \xff\xfe @weather.get_current_weather(\"unterminated");
    for tools in [None, Some(TOOLS)] {
        let run = |size: &str| {
            let mut args = vec!["parse", "--text", "--chunk-size", size];
            if let Some(t) = tools {
                args.extend(["--tools", t]);
            }
            let out = atfunc(&args, &input);
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            stdout(&out)
        };
        let whole = run("1000000");
        assert!(whole.contains("\"invalid_utf8\":\"fffe\""), "{whole}");
        assert!(
            whole.lines().last().unwrap().contains("unterminated"),
            "{whole}"
        );
        for size in ["1", "3", "7", "64", "8192"] {
            assert_eq!(run(size), whole, "chunk size {size}");
        }
        // Text and calls together give back the whole input.
        if tools.is_none() {
            let mut rebuilt = Vec::new();
            for line in whole.lines() {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                if let Some(t) = v.get("text") {
                    rebuilt.extend_from_slice(t.as_str().unwrap().as_bytes());
                } else if v.get("invalid_utf8").is_some() || v.get("span").is_some() {
                    let s = v["span"][0].as_u64().unwrap() as usize;
                    let e = v["span"][1].as_u64().unwrap() as usize;
                    rebuilt.extend_from_slice(&input[s..e]);
                }
            }
            assert_eq!(rebuilt, input);
        }
    }
}

#[test]
fn parse_without_tools_reports_calls_as_written() {
    let out = atfunc(
        &["parse"],
        b"@a.b(1, 'x', k: true) with_body [[ {\"q\": [[1]]} ]] ok",
    );
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"name": "a.b", "positional": [1, "x"], "named": {"k": true},
                           "body": " {\"q\": [[1]]} ", "span": [0, 50], "chars": [0, 50]})
    );
}

#[test]
fn parse_and_exec_give_character_offsets_beside_byte_offsets() {
    // An invalid byte counts as one character, as a replacement character would.
    let mut bytes = "Grüße 😀 ".as_bytes().to_vec();
    bytes.push(0xff);
    bytes.extend_from_slice("! @tools.get_toolboxes() und @a.b(\"é\"".as_bytes());
    let records = |args: &[&str]| -> Vec<serde_json::Value> {
        let out = atfunc(args, &bytes);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout(&out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let whole = records(&["parse", "--text"]);
    for size in ["1", "2", "5"] {
        assert_eq!(records(&["parse", "--text", "--chunk-size", size]), whole);
    }
    let spans: Vec<_> = whole
        .iter()
        .filter(|r| r.get("span").is_some())
        .map(|r| (r["span"].clone(), r["chars"].clone()))
        .collect();
    assert_eq!(
        spans,
        [
            (serde_json::json!([13, 14]), serde_json::json!([8, 9])),
            (serde_json::json!([16, 38]), serde_json::json!([11, 33])),
            (serde_json::json!([43, 52]), serde_json::json!([38, 46])),
        ]
    );
    let out = atfunc(&["exec", "--tools", TOOLS, "--json"], &bytes);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["calls"][0]["span"], serde_json::json!([16, 38]));
    assert_eq!(report["calls"][0]["chars"], serde_json::json!([11, 33]));
    assert_eq!(report["calls"][1]["chars"], serde_json::json!([38, 46]));
}

const DEMO: [&str; 5] = [
    "exec",
    "--tools",
    "examples/demo/tools.json",
    "--files",
    "examples/demo/files",
];

#[test]
fn exec_runs_the_demo_and_prints_the_blocks() {
    let mut args = DEMO.to_vec();
    args.push("examples/demo/completion.txt");
    let out = atfunc(&args, b"");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Declared functions without an implementation answer so (the README's first command
    // runs the same answer with implementations: readme_first_command_runs_every_demo_call).
    insta::assert_snapshot!("exec_demo", stdout(&out));
}

/// The README's first command runs the demo: its `exec` part, taken from the README itself,
/// runs every call the demo answer makes (the case-insensitive weather call included), and
/// the documentation (docs/running-calls.md) shows exactly what it prints.
#[test]
fn readme_first_command_runs_every_demo_call() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let first = readme
        .lines()
        .find(|l| l.starts_with("cargo run") && l.contains(" exec "))
        .expect("the README opens with a command running the demo");
    let exec = first
        .rsplit("cargo run -q -p atfunc-cli -- ")
        .next()
        .unwrap();
    let args: Vec<&str> = exec.split_whitespace().collect();
    assert_eq!(args[0], "exec", "{first}");
    let out = atfunc(&args, b"");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let printed = stdout(&out);
    assert!(!printed.contains("has no implementation"), "{printed}");
    assert!(
        printed.contains("Function call: Weather.Get_Current_Weather(\"Oslo\", unit=\"celsius\")\nReturned: {\"location\":\"Oslo\""),
        "{printed}"
    );
    assert!(
        pages::text().contains(printed.trim_end()),
        "the documentation's exec output is stale:\n{printed}"
    );
}

#[test]
fn exec_json_report_matches_the_blocks() {
    let completion = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/demo/completion.txt"
    ))
    .unwrap();
    let text = atfunc(&DEMO, &completion);
    let mut args = DEMO.to_vec();
    args.push("--json");
    let json = atfunc(&args, &completion);
    assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["output"].as_str().unwrap(), stdout(&text));
    assert_eq!(report["call_count"], 5);
    let calls = report["calls"].as_array().unwrap();
    assert_eq!(calls[0]["name"], "file.listfiles");
    assert_eq!(calls[0]["result"], serde_json::json!(["notes.txt"]));
    assert_eq!(calls[4]["name"], "weather.get_current_weather");
    assert_eq!(
        calls[4]["args"],
        serde_json::json!({"location": "Oslo", "unit": "celsius"})
    );
    assert_eq!(
        calls[4]["error"],
        "function 'weather.get_current_weather' has no implementation"
    );
}

/// A model that writes its calls again: the first repeat (however spelled) ends the
/// answer, said on stderr and in the JSON report; `--keep-repeated-calls` runs them all.
#[test]
fn exec_ends_an_answer_at_a_repeated_call_unless_told_to_keep_them() {
    let looping = "Süß: @tools.get_toolboxes() @TOOLS.Get_Toolboxes() @tools.get_toolboxes(";
    let mut args = DEMO.to_vec();
    args.push("--json");
    let out = atfunc(&args, looping.as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["call_count"], 1);
    let at = looping.find("@TOOLS").unwrap();
    let chars = looping[..at].chars().count();
    assert_eq!(report["repeated_at"]["span"][0], at);
    assert_eq!(report["repeated_at"]["chars"][0], chars);
    assert!(
        stderr(&out).contains(&format!(
            "the call at byte {at} (character {chars}) repeats an earlier one"
        )),
        "{}",
        stderr(&out)
    );
    args.push("--keep-repeated-calls");
    let out = atfunc(&args, looping.as_bytes());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["call_count"], 3);
    assert!(report.get("repeated_at").is_none());
    assert!(!stderr(&out).contains("repeats"));
}

#[test]
fn exec_truncates_and_refuses_escapes() {
    let out = atfunc(
        &[
            "exec",
            "--tools",
            "examples/demo/tools.json",
            "--files",
            "examples/demo/files",
            "--truncate",
            "8",
        ],
        "@file.readfile(\"notes.txt\")\n@file.readfile(\"../tools.json\")".as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with(
            "Function call: file.readfile(\"notes.txt\")\nReturned: Packing … [truncated 38 more characters]\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("Function call: file.readfile(\"../tools.json\")\nReturned: Error: "),
        "{text}"
    );
    assert!(!text.contains("\"domain\""), "{text}");
}

#[test]
fn exec_without_calls_says_so_and_bad_flags_exit_2() {
    let out = atfunc(
        &["exec", "--tools", TOOLS],
        b"no calls here, bob@example.com",
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).is_empty());
    assert_eq!(stderr(&out), "atfunc: no calls found in the input\n");
    let out = atfunc(&["exec", "--tools", TOOLS, "--truncate", "0"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "atfunc: --truncate must be at least 1 character\n"
    );
    let out = atfunc(&["exec", "--tools", TOOLS, "--files", "no/such/dir"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("atfunc: --files: "),
        "{}",
        stderr(&out)
    );
}

#[test]
fn exec_output_is_the_same_however_the_input_arrives() {
    // A pipe delivers the input in pieces; the blocks must not depend on them.
    let completion = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/demo/completion.txt"
    ))
    .unwrap();
    let whole = atfunc(&DEMO, &completion);
    let mut child = Command::new(env!("CARGO_BIN_EXE_atfunc"))
        .args(DEMO)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    for piece in completion.chunks(5) {
        input.write_all(piece).unwrap();
        input.flush().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    drop(input);
    let out = child.wait_with_output().unwrap();
    assert_eq!(stdout(&out), stdout(&whole));
}

/// Of two tools with one model name, the winner is decided by the two alone: a tool of
/// another toolbox listed first (which puts its toolbox, and so a clashing tool, earlier)
/// does not change it.
#[test]
fn a_name_clash_is_won_whatever_the_other_tools() {
    let dir = tempfile::tempdir().unwrap();
    let tool = |name: &str| format!(r#"{{"name": "{name}", "parameters": {{"type": "object"}}}}"#);
    let lists = [
        vec![tool("a.b_c"), tool("a_b.c")],
        vec![tool("a_b.other"), tool("a.b_c"), tool("a_b.c")],
        vec![tool("a_b.c"), tool("a.b_c")],
    ];
    for (i, list) in lists.iter().enumerate() {
        let path = dir.path().join(format!("tools-{i}.json"));
        std::fs::write(&path, format!("[{}]", list.join(","))).unwrap();
        let out = atfunc(
            &[
                "render",
                "--tools",
                path.to_str().unwrap(),
                "--format",
                "openai",
                "--with-names",
            ],
            b"",
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let rendered: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(rendered["names"]["a_b_c"], "a.b_c", "{list:?}");
        assert_eq!(rendered["clashes"][0]["dropped"], "a_b.c", "{list:?}");
    }
}

#[test]
fn render_for_model_apis() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.json");
    std::fs::write(
        &path,
        r#"[{"name": "shop.list", "parameters": {"type": "object", "properties": {
                "q": {"type": "string"}, "dry_run": {"type": "boolean"}}}},
            {"name": "shop_list", "parameters": {"type": "object", "properties": {}}}]"#,
    )
    .unwrap();
    let file = path.to_str().unwrap();
    let out = atfunc(&["render", "--tools", file, "--format", "openai"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let tools: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        tools.as_array().unwrap().len(),
        1,
        "the clashing second tool is left out"
    );
    assert_eq!(tools[0]["function"]["name"], "shop_list");
    assert_eq!(
        tools[0]["function"]["parameters"]["properties"],
        serde_json::json!({"q": {"type": "string"}}),
        "dry_run is a control field, hidden from the model"
    );
    let err = stderr(&out);
    assert!(err.starts_with(&format!("atfunc: {file}: ")), "{err}");
    assert!(err.contains("shop_list"), "{err}");

    let out = atfunc(
        &[
            "render",
            "--tools",
            file,
            "--format",
            "mcp",
            "--with-names",
            "--control-fields",
            "",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rendered: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        rendered["names"],
        serde_json::json!({"shop_list": "shop.list"})
    );
    let tool = &rendered["tools"]["tools"][0];
    assert_eq!(tool["name"], "shop_list");
    assert!(tool["inputSchema"]["properties"]["dry_run"].is_object());
    assert_eq!(rendered["clashes"].as_array().unwrap().len(), 1);

    let out = atfunc(&["render", "--tools", file, "--format", "yaml"], b"");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn readme_parse_example_is_true() {
    let input = "Checking: @weather.get_current_weather(\"Oslo\", unit=\"celsius\")\n\
                 and @weather.get_current_weather(unit=\"celsius\")";
    let out = atfunc(
        &["parse", "--tools", "examples/demo/tools.json"],
        input.as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0));
    // The README and docs/cli.md show this example; keep them in step.
    let pages = pages::text();
    assert!(
        pages.contains(input),
        "the documentation's parse input is stale"
    );
    assert!(
        pages.contains(stdout(&out).trim_end()),
        "the documentation's parse output is stale"
    );
}

#[test]
fn parse_error_raw_is_the_same_for_big_chunks_and_long_names() {
    // The call starts well inside a large chunk, and a second one has a name longer than
    // any look-back window: `raw` must still quote each from its `@`.
    let mut input = " ".repeat(20_000);
    input.push_str("@weather.get_current_weather(unit=\"celsius\")");
    input.push_str(&" ".repeat(20_000));
    let long_name = "g".repeat(9_000);
    input.push_str(&format!("@{long_name}(1)\n"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("completion.txt");
    std::fs::write(&path, &input).unwrap();
    let run = |size: &str| {
        let args = [
            "parse",
            "--tools",
            TOOLS,
            "--chunk-size",
            size,
            path.to_str().unwrap(),
        ];
        let out = atfunc(&args, b"");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout(&out)
    };
    let small = run("1");
    let lines: Vec<serde_json::Value> = small
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{small}");
    assert_eq!(
        lines[0]["raw"],
        "@weather.get_current_weather(unit=\"celsius\")"
    );
    assert_eq!(lines[1]["raw"], format!("@{}", &long_name[..199]));
    for size in ["7", "8192", "65536", "1000000"] {
        assert_eq!(run(size), small, "chunk size {size}");
    }
}

/// Plain OpenAI tools: names without a dot (root functions), names that are not
/// identifiers (`get-weather`, `max-days`, `Content-Type`, `$filter`).
const NOT_IDENTIFIERS: &str = "tests/data/tools/not_identifiers.json";

#[test]
fn exec_runs_root_functions_of_a_plain_openai_file() {
    let out = atfunc(
        &["exec", "--tools", NOT_IDENTIFIERS, "--json"],
        b"@get_time(zone=\"UTC\")\n",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let call = &report["calls"][0];
    assert_eq!(call["name"], "get_time");
    assert_eq!(call["args"], serde_json::json!({"zone": "UTC"}));
    assert_eq!(call["error"], "function 'get_time' has no implementation");
}

#[test]
fn names_that_are_not_identifiers_work_in_every_command() {
    let check = atfunc(&["check", "--tools", NOT_IDENTIFIERS], b"");
    assert_eq!(check.status.code(), Some(0), "{}", stdout(&check));
    assert!(stdout(&check).contains("  get_weather (defined as get-weather)\n"));

    let render = atfunc(
        &["render", "--tools", NOT_IDENTIFIERS, "--no-preamble"],
        b"",
    );
    assert_eq!(render.status.code(), Some(0), "{}", stderr(&render));
    assert!(stdout(&render).starts_with(
        "@get_weather( <*city>, <max_days{integer}>, <Content_Type{\"json\"|\"text\"}>, <_filter> )\n"
    ));

    // OpenAI and MCP take `get-weather` and any property name as they are.
    let openai = atfunc(
        &["render", "--tools", NOT_IDENTIFIERS, "--format", "openai"],
        b"",
    );
    let tools: serde_json::Value = serde_json::from_str(&stdout(&openai)).unwrap();
    assert_eq!(tools[0]["function"]["name"], "get-weather");
    let keys: Vec<&String> = tools[0]["function"]["parameters"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["city", "max-days", "Content-Type", "$filter"]);
    let mcp = atfunc(
        &["render", "--tools", NOT_IDENTIFIERS, "--format", "mcp"],
        b"",
    );
    let tools: serde_json::Value = serde_json::from_str(&stdout(&mcp)).unwrap();
    assert_eq!(tools["tools"][0]["name"], "get-weather");

    // Everything handed back carries the names as defined, argument keys included.
    let answer = b"@get_weather(\"Paris\", max_days=2, content_type=\"json\", _filter=\"x\")";
    let expected = serde_json::json!({"name": "get-weather", "args": {"city": "Paris",
        "max-days": 2, "Content-Type": "json", "$filter": "x"}});
    let parse = atfunc(&["parse", "--tools", NOT_IDENTIFIERS], answer);
    assert_eq!(parse.status.code(), Some(0), "{}", stderr(&parse));
    let record: serde_json::Value = serde_json::from_str(stdout(&parse).trim()).unwrap();
    assert_eq!(record["name"], expected["name"]);
    assert_eq!(record["args"], expected["args"]);

    let line = serde_json::json!({"id": 1, "completion": String::from_utf8_lossy(answer)});
    let jsonl = atfunc(
        &["parse", "--jsonl", "--tools", NOT_IDENTIFIERS],
        format!("{line}\n").as_bytes(),
    );
    assert_eq!(jsonl.status.code(), Some(0), "{}", stderr(&jsonl));
    let record: serde_json::Value = serde_json::from_str(stdout(&jsonl).trim()).unwrap();
    assert_eq!(record["calls"][0]["name"], "get-weather");
    assert_eq!(record["calls"][0]["args"], expected["args"]);

    let exec = atfunc(&["exec", "--tools", NOT_IDENTIFIERS, "--json"], answer);
    assert_eq!(exec.status.code(), Some(0), "{}", stderr(&exec));
    let report: serde_json::Value = serde_json::from_str(&stdout(&exec)).unwrap();
    assert_eq!(report["calls"][0]["name"], "get-weather");
    assert_eq!(report["calls"][0]["args"], expected["args"]);
}

#[test]
fn names_written_alike_are_a_problem_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.json");
    std::fs::write(
        &path,
        r#"[{"name": "search", "parameters": {"type": "object", "properties": {
            "max-results": {"type": "integer"}, "max_results": {"type": "integer"}}}}]"#,
    )
    .unwrap();
    let out = atfunc(&["check", "--tools", path.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("Parameters 'max-results' and 'max_results' would both be written 'max_results' in a call; rename one"),
        "{}",
        stdout(&out)
    );
}

/// The functions each command offers with the same options, one per line.
fn offered(command: &str, options: &[&str]) -> Vec<String> {
    let mut args = vec![command];
    args.extend_from_slice(options);
    if command == "render" {
        args.push("--no-preamble");
    }
    let input: &[u8] = if command == "exec" {
        b"@tools.get_functions()"
    } else {
        b""
    };
    let out = atfunc(&args, input);
    assert_eq!(out.status.code(), Some(0), "{command}: {}", stderr(&out));
    let text = stdout(&out);
    match command {
        "render" => text
            .lines()
            .filter_map(|line| line.strip_prefix('@'))
            .map(|line| line.split('(').next().unwrap_or(line).to_owned())
            .collect(),
        _ => {
            let list = text
                .lines()
                .nth(1)
                .unwrap()
                .trim_start_matches("Returned: ");
            let names: Vec<String> = serde_json::from_str(list).unwrap();
            names
                .into_iter()
                .filter(|name| !name.starts_with("tools."))
                .collect()
        }
    }
}

#[test]
fn the_prompt_lists_exactly_what_exec_runs() {
    let options = [
        "--tools",
        "examples/demo/tools.json",
        "--files",
        "examples/demo/files",
    ];
    let listed = offered("render", &options);
    assert!(listed.contains(&"file.readfile".to_owned()), "{listed:?}");
    assert_eq!(listed, offered("exec", &options));
    let grammar = atfunc(
        &["grammar", options[0], options[1], options[2], options[3]],
        b"",
    );
    assert!(
        stdout(&grammar).contains("@file.readfile("),
        "{}",
        stderr(&grammar)
    );
    let parse = atfunc(
        &["parse", options[0], options[1], options[2], options[3]],
        b"@file.readfile(\"notes.txt\")",
    );
    assert!(
        stdout(&parse).starts_with(r#"{"name":"file.readfile","args":{"filepath":"notes.txt"}"#)
    );
}

#[test]
fn the_old_root_spellings_are_refused() {
    // `render --root BOX` named the root toolbox, `exec --root DIR` the file box's folder;
    // both were removed before 0.1 for `--root-toolbox` and `--files`.
    let render = atfunc(
        &[
            "render",
            "--tools",
            TOOLS,
            "--no-preamble",
            "--root",
            "weather",
        ],
        b"",
    );
    assert_eq!(render.status.code(), Some(2), "{}", stdout(&render));
    assert!(stderr(&render).contains("--root"), "{}", stderr(&render));
    let mut args = DEMO.to_vec();
    args[3] = "--root";
    let exec = atfunc(&args, b"@file.listfiles()");
    assert_eq!(exec.status.code(), Some(2), "{}", stdout(&exec));
    assert!(stdout(&exec).is_empty());
}

#[test]
fn check_validates_a_config_and_lists_every_problem() {
    let ok = atfunc(&["check", "--config", "examples/config/atfunc.json"], b"");
    assert_eq!(ok.status.code(), Some(0), "{}", stdout(&ok));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("atfunc.json");
    std::fs::write(
        &path,
        r#"{"toolboxes": [{"name": "w", "kind": "command", "timout_ms": 5, "functions": [
            {"name": "get_temp", "timeout_ms": 3, "parameters": {"type": "object"},
             "command": ["echo"]}]}]}"#,
    )
    .unwrap();
    let out = atfunc(&["check", "--config", path.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(1));
    let at = format!("{}: toolbox 'w' (#1)", path.display());
    assert_eq!(
        stdout(&out),
        format!(
            "{at}: field 'timout_ms' is not known here (did you mean 'timeout_ms'?); the fields are name, kind, timeout_ms, confirm, functions, env, pass_env, inherit_env, cwd, max_output_bytes, uid, gid\n\
             {at}: function 'get_temp': field 'timeout_ms' is not known here ('timeout_ms' is a field of the toolbox); the fields are type, name, description, parameters, returns, strict, command, confirm\n"
        )
    );
}

/// `check --config` refuses what `exec --config` refuses, with the same message: a
/// `confirm` list naming a function the box does not have, a file box's folder that does
/// not exist.
#[test]
fn check_refuses_a_config_exec_refuses_with_the_same_message() {
    let dir = tempfile::tempdir().unwrap();
    let function = r#"{"name": "wipe", "parameters": {"type": "object"}, "command": ["true"]}"#;
    let configs = [
        format!(
            r#"{{"toolboxes": [{{"name": "shell", "kind": "command", "confirm": ["wipe", "shred"],
                "functions": [{function}]}}]}}"#
        ),
        String::from(
            r#"{"toolboxes": [{"name": "files", "kind": "file", "root": "no-such-folder"}]}"#,
        ),
    ];
    for (i, text) in configs.iter().enumerate() {
        let path = dir.path().join(format!("atfunc-{i}.json"));
        std::fs::write(&path, text).unwrap();
        let config = path.to_str().unwrap();
        let exec = atfunc(&["exec", "--config", config], b"@shell.wipe()");
        assert_eq!(exec.status.code(), Some(2), "{text}: {}", stdout(&exec));
        let refused = stderr(&exec);
        let refused = refused
            .strip_prefix("atfunc: ")
            .unwrap_or_else(|| panic!("{text}: {refused}"));
        let check = atfunc(&["check", "--config", config], b"");
        assert_eq!(check.status.code(), Some(1), "{text}: {}", stdout(&check));
        assert_eq!(stdout(&check), refused, "{text}");
        let expected = [
            "field 'confirm': 'shred' is not one of its functions; they are wipe",
            "field 'root'",
        ];
        assert!(refused.contains(expected[i]), "{refused}");
    }
}

/// A problem of one kind does not hide another: a field of the wrong type (even the name
/// or the kind) leaves the entry's other fields checked, and the checks of building the
/// config (folders, `confirm` lists) run on the toolboxes that read well.
#[test]
fn check_lists_every_problem_of_a_config_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("atfunc.json");
    std::fs::write(
        &path,
        r#"{"root": "files", "toolboxes": [
            {"name": "files", "kind": "file", "root": 5},
            {"name": 7, "kind": "command",
             "functions": [{"name": "f", "parameters": {"type": "object"}, "command": "ls"}]},
            {"name": "sh", "kind": 5, "timout_ms": 1},
            {"name": "docs", "kind": "file", "root": "no-such-folder"},
            {"name": "shell", "kind": "command", "confirm": ["wipe"],
             "functions": [{"name": "f", "parameters": {"type": "object"}, "command": ["true"]}]}]}"#,
    )
    .unwrap();
    let out = atfunc(&["check", "--config", path.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let file = path.display();
    let folder = dir.path().join("no-such-folder");
    assert_eq!(
        stdout(&out),
        format!(
            "{file}: toolbox 'files' (#1): field 'root' must be a string, found a number\n\
             {file}: toolbox #2: field 'name' must be a string, found a number\n\
             {file}: toolbox #2: function 'f': field 'command' must be a list of strings (the program, then its arguments), found a string\n\
             {file}: toolbox 'sh' (#3): field 'kind' must be a string, found a number\n\
             {file}: toolbox 'sh' (#3): field 'timout_ms' is not known here (did you mean 'timeout_ms'?); the fields are name, kind, timeout_ms, confirm, root, max_read_bytes, functions, env, pass_env, inherit_env, cwd, max_output_bytes, uid, gid, base_url, headers, max_response_bytes, max_redirects, command\n\
             {file}: toolbox 'docs' (#4): field 'root': the root folder {} does not exist\n\
             {file}: toolbox 'shell' (#5): field 'confirm': 'wipe' is not one of its functions; they are f\n",
            folder.display()
        )
    );
}

/// A tool's or toolbox's name comes from a file: a message quoting it shows its escape
/// sequences (a new window title, a cleared screen) written out, never sends them.
#[test]
fn messages_show_the_escape_sequences_of_names() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("box")).unwrap();
    let name = "x\u{1b}]0;title\u{7}\u{1b}[2Jy";
    let shown = "x\\u{001b}]0;title\\u{0007}\\u{001b}[2Jy";
    let config = dir.path().join("atfunc.json");
    let toolbox = serde_json::json!({"toolboxes": [{"name": name, "kind": "file", "root": "box"}]});
    std::fs::write(&config, toolbox.to_string()).unwrap();
    let tools = dir.path().join("tools.json");
    let function = serde_json::json!([{"type": "function", "function": {
        "name": name, "description": "d", "parameters": {"type": "object", "properties": {}}}}]);
    std::fs::write(&tools, function.to_string()).unwrap();
    let config = config.to_str().unwrap();
    for command in ["check", "render", "parse", "exec"] {
        let out = atfunc(&[command, "--config", config], b"@x.y()");
        let seen = format!("{}{}", stdout(&out), stderr(&out));
        assert!(!seen.contains(['\u{1b}', '\u{7}']), "{command}: {seen:?}");
        assert!(
            seen.contains(&format!("toolbox '{shown}' (#1)")),
            "{command}: {seen:?}"
        );
    }
    let out = atfunc(&["check", "--tools", tools.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).ends_with(&format!("(defined as {shown})\n")),
        "{:?}",
        stdout(&out)
    );
}

/// Output into a pipe whose reader has gone (`| head`) ends every command the same way:
/// a message and exit code 2, never a panic.
#[test]
fn a_closed_pipe_is_a_failure_not_a_panic() {
    let tools = "examples/demo/tools.json";
    for args in [
        &["render", "--tools", tools][..],
        &["render", "--tools", tools, "--format", "openai"],
        &["grammar", "--tools", tools],
        &["check", "--tools", tools],
        &["check", "--config", "examples/config/atfunc.json"],
        &["parse", "examples/demo/completion.txt"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        // Closed before atfunc starts: its first write fails, whatever the timing.
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_atfunc"))
            .args(args)
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let args = args.join(" ");
        assert_eq!(out.status.code(), Some(2), "{args}: {}", stderr(&out));
        assert!(
            stderr(&out).starts_with("atfunc: cannot write output: "),
            "{args}: {}",
            stderr(&out)
        );
    }
}

/// A config is checked in CI and on a laptop without the production secrets: `check`
/// passes with a warning naming the variable, `exec` still refuses to start without it.
#[test]
fn check_warns_of_an_unset_secret_and_exec_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("atfunc.json");
    std::fs::write(
        &path,
        r#"{"toolboxes": [
            {"name": "shell", "kind": "command", "env": {"TOKEN": {"env": "ATFUNC_TEST_UNSET_TOKEN"}},
             "functions": [{"name": "wipe", "parameters": {"type": "object"}, "command": ["true"]}]},
            {"name": "api", "kind": "http", "base_url": "http://127.0.0.1:9",
             "headers": {"Authorization": {"env": "ATFUNC_TEST_UNSET_KEY", "prefix": "Bearer "}},
             "functions": [{"name": "ping", "parameters": {"type": "object"}, "path": "/ping"}]}]}"#,
    )
    .unwrap();
    let config = path.to_str().unwrap();
    let check = atfunc(&["check", "--config", config], b"");
    assert_eq!(check.status.code(), Some(0), "{}", stdout(&check));
    let file = path.display();
    assert_eq!(
        stdout(&check),
        format!(
            "{file}: ok, 2 toolbox(es)\n  shell\n  api\n\
             {file}: warning: toolbox 'shell' (#1): field 'env.TOKEN' reads the environment variable ATFUNC_TEST_UNSET_TOKEN, which is not set\n\
             {file}: warning: toolbox 'api' (#2): field 'headers.Authorization' reads the environment variable ATFUNC_TEST_UNSET_KEY, which is not set\n"
        )
    );
    let exec = atfunc(&["exec", "--config", config], b"@shell.wipe()");
    assert_eq!(exec.status.code(), Some(2), "{}", stdout(&exec));
    assert!(
        stderr(&exec).contains(
            "field 'env.TOKEN' reads the environment variable ATFUNC_TEST_UNSET_TOKEN, which is not set"
        ),
        "{}",
        stderr(&exec)
    );
    // A problem beside the unset variable still fails the check.
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("http://127.0.0.1:9", "ftp://x")).unwrap();
    let check = atfunc(&["check", "--config", config], b"");
    assert_eq!(check.status.code(), Some(1), "{}", stdout(&check));
    assert!(
        !stdout(&check).contains("ATFUNC_TEST_UNSET"),
        "{}",
        stdout(&check)
    );
}

#[test]
fn listing_a_config_needs_no_secret_and_running_it_does() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("atfunc.json");
    std::fs::write(
        &path,
        r#"{"toolboxes": [{"name": "api", "kind": "http", "base_url": "http://127.0.0.1:9",
            "headers": {"Authorization": {"env": "ATFUNC_TEST_UNSET_TOKEN", "prefix": "Bearer "}},
            "functions": [{"name": "ping", "parameters": {"type": "object"}, "path": "/ping"}]}]}"#,
    )
    .unwrap();
    let config = path.to_str().unwrap();
    let render = atfunc(&["render", "--config", config, "--no-preamble"], b"");
    assert_eq!(render.status.code(), Some(0), "{}", stderr(&render));
    assert_eq!(stdout(&render), "@api.ping()\n");
    let parse = atfunc(&["parse", "--config", config], b"@api.ping()");
    assert_eq!(parse.status.code(), Some(0), "{}", stderr(&parse));
    let exec = atfunc(&["exec", "--config", config], b"@api.ping()");
    assert_eq!(exec.status.code(), Some(2));
    assert!(
        stderr(&exec).contains("field 'headers.Authorization' reads the environment variable ATFUNC_TEST_UNSET_TOKEN, which is not set"),
        "{}",
        stderr(&exec)
    );
}

#[test]
fn exec_writes_call_events_as_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("events.jsonl");
    let mut args = DEMO.to_vec();
    args.extend([
        "--events",
        file.to_str().unwrap(),
        "examples/demo/completion.txt",
    ]);
    let out = atfunc(&args, b"");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&file).unwrap();
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    // Each call: its start, then its end, with the same id; calls run in order.
    assert_eq!(events.len() % 2, 0, "{text}");
    for pair in events.chunks(2) {
        let (start, end) = (&pair[0], &pair[1]);
        assert_eq!(start["event"], "start", "{text}");
        assert_eq!(start["call_id"], end["call_id"], "{text}");
        assert_eq!(start["name"], end["name"], "{text}");
        assert!(start.get("duration_ms").is_none(), "{text}");
        assert!(end["duration_ms"].is_u64(), "{text}");
        match end["event"].as_str() {
            Some("success") => assert!(end.get("error").is_none(), "{text}"),
            Some("error") => assert!(end["error"].is_string(), "{text}"),
            other => panic!("{other:?} in {text}"),
        }
    }
    let names: Vec<&str> = events
        .iter()
        .step_by(2)
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(names.first(), Some(&"file.listfiles"), "{text}");
    // The name as written, and the function it resolved to.
    let last = &events[events.len() - 2];
    assert_eq!(last["name"], "Weather.Get_Current_Weather", "{text}");
    assert_eq!(last["function"], "weather.get_current_weather", "{text}");
    // The call without its city is refused before it runs, and still observed, with the
    // function its name resolved to.
    let refused = events
        .iter()
        .find(|e| {
            e["event"] == "error"
                && e["error"]
                    .as_str()
                    .is_some_and(|t| t.contains("Missing required"))
        })
        .unwrap_or_else(|| panic!("no refusal in {text}"));
    assert_eq!(refused["function"], "weather.get_current_weather", "{text}");

    // `-` is standard error, and the blocks on standard output do not change.
    let mut args = DEMO.to_vec();
    args.extend(["--events", "-", "examples/demo/completion.txt"]);
    let with = atfunc(&args, b"");
    assert_eq!(
        stderr(&with).lines().count(),
        events.len(),
        "{}",
        stderr(&with)
    );
    let mut args = DEMO.to_vec();
    args.push("examples/demo/completion.txt");
    assert_eq!(stdout(&with), stdout(&atfunc(&args, b"")));
}

/// `exec --json` gives each call its `elements` (what the tool showed the user, never in the
/// blocks) and leaves the list out of a call without any. The elements come from the
/// reference MCP server's annotated content (`npm ci --prefix tests/mcp`).
#[test]
fn exec_json_carries_the_elements_of_each_call() {
    if Command::new("node").arg("--version").output().is_err() {
        missing::missing(
            "exec_json_carries_the_elements_of_each_call",
            "`node` is not installed",
            "install Node.js 20 or later and npm, then `npm ci --prefix tests/mcp`",
        );
        return;
    }
    let package = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp/node_modules/@modelcontextprotocol/server-everything");
    let manifest = std::fs::read_to_string(package.join("package.json"))
        .expect("server-everything is installed: run `npm ci --prefix tests/mcp` first");
    let manifest: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let bin = match &manifest["bin"] {
        serde_json::Value::Object(bins) => bins.values().next().unwrap().as_str().unwrap(),
        other => other.as_str().unwrap(),
    };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tools.json");
    let server = package.join(bin).display().to_string();
    let text = serde_json::json!({"toolboxes": [{"name": "everything", "kind": "mcp",
        "command": ["node", server, "stdio"]}]});
    std::fs::write(&config, text.to_string()).unwrap();
    let answer = concat!(
        "@everything.get_annotated_message(messageType=\"success\", includeImage=true)\n",
        "@everything.get_annotated_message(messageType=\"debug\")\n",
    );
    let config = config.to_str().unwrap();
    let blocks = atfunc(&["exec", "--config", config], answer.as_bytes());
    assert_eq!(blocks.status.code(), Some(0), "{}", stderr(&blocks));
    let json = atfunc(&["exec", "--config", config, "--json"], answer.as_bytes());
    assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["output"].as_str().unwrap(), stdout(&blocks));

    let calls = report["calls"].as_array().unwrap();
    let elements = calls[0]["elements"].as_array().expect("an elements list");
    assert_eq!(
        elements[0],
        serde_json::json!({"type": "text", "text": "Operation completed successfully"})
    );
    assert_eq!(elements[1]["type"], "image");
    assert_eq!(elements[1]["mime_type"], "image/png");
    let image = elements[1]["data"].as_str().unwrap();
    // The model reads what was shown, never the image or the text meant for the user.
    let output = stdout(&blocks);
    assert!(
        !output.contains(image) && !output.contains("Operation completed"),
        "{output}"
    );
    assert!(output.contains("[image: image/png, "), "{output}");
    // A call with nothing for the user has no list at all.
    assert!(calls[1].get("elements").is_none(), "{}", calls[1]);
    assert!(calls[1]["result"].as_str().unwrap().starts_with("Debug: "));
}

/// Ten levels of definitions, each referring ten times to the next (10^10 schemas written
/// out), as a tools file's one function named `name`.
fn fanning_out_tools(name: &str) -> serde_json::Value {
    let mut defs = serde_json::Map::new();
    for level in 0..10 {
        let props: serde_json::Map<String, serde_json::Value> = (0..10)
            .map(|i| {
                let next = format!("#/$defs/L{}", level + 1);
                (format!("p{i}"), serde_json::json!({"$ref": next}))
            })
            .collect();
        defs.insert(
            format!("L{level}"),
            serde_json::json!({"type": "object", "properties": props}),
        );
    }
    defs.insert("L10".into(), serde_json::json!({"type": "string"}));
    serde_json::json!([{"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "$defs": defs, "properties": {"root": {"$ref": "#/$defs/L0"}}}}}])
}

#[test]
fn tools_whose_references_multiply_are_refused_naming_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.json");
    std::fs::write(&path, fanning_out_tools("box.bomb").to_string()).unwrap();
    let file = path.to_str().unwrap();
    for command in ["grammar", "render", "check"] {
        let out = atfunc(&[command, "--tools", file], b"");
        assert_eq!(out.status.code(), Some(2), "{command}: {}", stderr(&out));
        let message = stderr(&out);
        assert!(
            message.contains("function 'box.bomb': its `$ref`s write out more than 10000 schema nodes (limit max_ref_nodes)"),
            "{command}: {message}"
        );
    }
    // The limit is a flag.
    let out = atfunc(&["render", "--tools", file, "--max-ref-nodes", "10"], b"");
    assert!(
        stderr(&out).contains("more than 10 schema nodes"),
        "{}",
        stderr(&out)
    );

    // Records that carry such tools get an error line each; the others are parsed.
    let mut records = String::new();
    for i in 0..4 {
        let record = serde_json::json!({"id": i, "completion": "@f()",
            "tools": fanning_out_tools(&format!("bomb_{i}"))});
        records.push_str(&format!("{record}\n"));
    }
    records.push_str("{\"id\": 9, \"completion\": \"@f(x=1)\"}\n");
    let out = atfunc(&["parse", "--jsonl"], records.as_bytes());
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    for (i, line) in lines.iter().take(4).enumerate() {
        assert!(
            line.contains(&format!("function 'bomb_{i}'")) && line.contains("max_ref_nodes"),
            "{line}"
        );
    }
    assert!(lines[4].contains("\"calls\""), "{}", lines[4]);
}

#[test]
fn a_grammar_of_many_optional_fields_is_printed_small() {
    // 2,000 optional fields (60 KB of tools) were 52 MB of grammar.
    let props: serde_json::Map<String, serde_json::Value> = (0..2000)
        .map(|i| {
            (
                format!("field_{i:04}"),
                serde_json::json!({"type": "string"}),
            )
        })
        .collect();
    let tools = serde_json::json!([{"name": "flat", "parameters": {"type": "object", "properties": props}}]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flat.json");
    std::fs::write(&path, tools.to_string()).unwrap();
    let out = atfunc(&["grammar", "--tools", path.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let size = out.stdout.len();
    assert!(size < 400_000, "{size} bytes");
}
