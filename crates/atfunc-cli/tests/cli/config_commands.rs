//! The commands on a config file: `exec`, `render` and `parse` run and show what the config
//! defines, and a config with problems fails with every one of them.

use serde_json::json;

/// What `exec` prints for the example config's completion.
const EXAMPLE_OUTPUT: &str = include_str!("../../../../examples/config/exec-output.txt");

use std::process::{Command, Output};

fn atfunc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_atfunc"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[test]
fn exec_runs_the_example() {
    let out = atfunc(&[
        "exec",
        "--config",
        "examples/config/atfunc.json",
        "examples/config/completion.txt",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), EXAMPLE_OUTPUT);
}

#[test]
fn render_shows_what_exec_can_run() {
    let out = atfunc(&[
        "render",
        "--config",
        "examples/config/atfunc.json",
        "--no-preamble",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.contains("@file.readfile( <*filepath> )"), "{shown}");
    // The root box is called without its prefix.
    assert!(
        shown.contains("@get_temp( <*location>, <unit{\"celsius\"|\"fahrenheit\"}> )"),
        "{shown}"
    );
    assert!(!shown.contains("@tools."), "{shown}");
    let out = atfunc(&[
        "render",
        "--config",
        "examples/config/atfunc.json",
        "--format",
        "openai",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let tools: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(tools.as_array().unwrap().len(), 7);
}

#[test]
fn parse_binds_against_the_config() {
    let folder = tempfile::tempdir().unwrap();
    let answer = folder.path().join("answer.txt");
    std::fs::write(&answer, "@get_temp(\"Oslo\") @tools.get_toolboxes()").unwrap();
    let out = atfunc(&[
        "parse",
        "--config",
        "examples/config/atfunc.json",
        answer.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["name"], "weather.get_temp");
    assert_eq!(lines[0]["args"], json!({"location": "Oslo"}));
    assert_eq!(lines[1]["name"], "tools.get_toolboxes");
}

#[test]
fn exactly_one_of_tools_and_config() {
    let both = atfunc(&[
        "exec",
        "--tools",
        "examples/demo/tools.json",
        "--config",
        "examples/config/atfunc.json",
    ]);
    assert_eq!(both.status.code(), Some(2));
    assert!(text(&both.stderr).contains("cannot be used with"));
    let neither = atfunc(&["render"]);
    assert_eq!(neither.status.code(), Some(2));
    assert!(text(&neither.stderr).contains("give --tools FILE or --config FILE"));
}

#[test]
fn a_bad_config_fails_with_every_problem() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("bad.json");
    std::fs::write(
        &path,
        r#"{"toolboxes": [{"name": "api", "kind": "http", "base_url": "ftp://x", "functions": []},
                          {"name": "f", "kind": "file"}]}"#,
    )
    .unwrap();
    let out = atfunc(&["exec", "--config", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let shown = path.display().to_string();
    assert_eq!(
        text(&out.stderr),
        format!(
            "atfunc: {shown}: toolbox 'api' (#1): field 'base_url' must be an http(s) URL, found \"ftp://x\"\n\
             {shown}: toolbox 'f' (#2): missing required field 'root'\n"
        )
    );
}
