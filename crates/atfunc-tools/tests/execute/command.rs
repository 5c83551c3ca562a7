//! The command tool box against a real program: `tests/data/tools/weather.py`, run with
//! `python3` (standard library only).
#![cfg(feature = "command")]

use atfunc::{load_interfaces_str, Interface};
use atfunc_tools::{CallContext, CommandBox, EnvInheritance, Registry, ToolBox, ToolError};
use serde_json::{json, Map, Value};
use std::path::PathBuf;
use std::time::Duration;

fn script() -> String {
    format!(
        "{}/../../tests/data/tools/weather.py",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn interface(name: &str, params: Value) -> Interface {
    let definition = json!([{"name": format!("weather.{name}"), "description": "A test tool",
        "parameters": {"type": "object", "properties": params}}]);
    load_interfaces_str(&definition.to_string())
        .unwrap()
        .remove(0)
}

/// A box whose function `name` runs the script in `mode`.
fn tool(name: &str, mode: &str, params: Value) -> CommandBox {
    CommandBox::new("weather").function(interface(name, params), ["python3", &script(), mode])
}

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => panic!("arguments must be an object"),
    }
}

#[tokio::test]
async fn stdout_json_is_the_result_through_the_registry() {
    let registry = Registry::new();
    registry
        .register(tool(
            "get_temp",
            "temp",
            json!({"location": {"type": "string"}, "unit": {"type": "string"}}),
        ))
        .unwrap();
    let report = registry
        .execute_response("Checking. @weather.get_temp(\"Paris\", unit=\"kelvin\")")
        .await;
    assert_eq!(
        report.output,
        "Function call: weather.get_temp(\"Paris\", unit=\"kelvin\")\n\
         Returned: {\"location\":\"Paris\",\"temp\":21,\"unit\":\"kelvin\"}\n"
    );
    assert_eq!(
        report.calls[0].result,
        Ok(json!({"location": "Paris", "temp": 21, "unit": "kelvin"}))
    );
}

#[tokio::test]
async fn stdout_that_is_not_json_is_text() {
    let weather = tool("sky", "text", json!({"location": {"type": "string"}}));
    let result = weather
        .call(
            "sky",
            args(json!({"location": "Oslo"})),
            &CallContext::new(),
        )
        .await;
    assert_eq!(result, Ok(json!("Sunny in Oslo")));
}

#[tokio::test]
async fn a_non_zero_exit_is_an_error_with_the_status_and_stderr() {
    let registry = Registry::new();
    registry
        .register(tool(
            "get_temp",
            "temp",
            json!({"location": {"type": "string"}}),
        ))
        .unwrap();
    let report = registry
        .execute_response("@weather.get_temp(\"Atlantis\") @weather.get_temp(\"Rome\")")
        .await;
    assert_eq!(
        report.calls[0].result.clone().map_err(|e| e.to_string()),
        Err(String::from(
            "Function 'weather.get_temp' failed (exit status 3): no such city: Atlantis"
        ))
    );
    // The registry stays usable and the next call runs.
    assert_eq!(report.calls[1].result.as_ref().unwrap()["location"], "Rome");
}

#[tokio::test]
async fn only_the_end_of_a_long_stderr_is_kept() {
    let noisy = tool("noisy", "noisy", json!({}));
    let error = noisy
        .call("noisy", Map::new(), &CallContext::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("Function 'weather.noisy' failed (exit status 2): …"),
        "{error}"
    );
    assert!(error.ends_with("noise line 4999\nthe end"), "{error}");
    assert!(!error.contains("noise line 1\n"), "{error}");
    assert!(error.len() < 2300, "{} bytes", error.len());
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_program_that_hangs_is_killed_at_the_time_limit() {
    let folder = tempfile::tempdir().unwrap();
    let pidfile = folder.path().join("pid");
    let hang = tool("hang", "hang", json!({"pidfile": {"type": "string"}}))
        .timeout(Duration::from_millis(3000));
    let result = hang
        .call(
            "hang",
            args(json!({"pidfile": pidfile.to_str().unwrap()})),
            &CallContext::new(),
        )
        .await;
    match result {
        Err(ToolError::Timeout { name, limit }) => {
            assert_eq!(name, "weather.hang");
            assert_eq!(limit, Duration::from_millis(3000));
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    let error = ToolError::Timeout {
        name: "weather.hang".into(),
        limit: Duration::from_millis(3000),
    };
    assert!(error.to_string().contains("was stopped"));
    // The program started (it wrote its id) and is gone: killed and reaped.
    let pid = std::fs::read_to_string(&pidfile).expect("the program did not start");
    assert!(
        !PathBuf::from(format!("/proc/{}", pid.trim())).exists(),
        "process {pid} is still there"
    );
}

#[tokio::test]
async fn too_much_output_stops_the_program_and_says_so() {
    let big = tool("big", "big", json!({"bytes": {"type": "integer"}})).max_output_bytes(1000);
    let error = big
        .call(
            "big",
            args(json!({"bytes": 5_000_000})),
            &CallContext::new(),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("Function 'weather.big' wrote more than 1000 bytes of output and was stopped; ask for less. Its output began: xxx"),
        "{error}"
    );
    assert!(error.len() < 600);
    // Under the limit the output is whole.
    let ok = big
        .call("big", args(json!({"bytes": 999})), &CallContext::new())
        .await
        .unwrap();
    assert_eq!(ok.as_str().map(str::len), Some(999));
}

#[tokio::test]
async fn shell_metacharacters_in_arguments_are_data() {
    let folder = tempfile::tempdir().unwrap();
    let echo = tool("echo", "echo", json!({"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}, "d": {"type": "string"}}))
        .current_dir(folder.path());
    let registry = Registry::new();
    registry.register(echo).unwrap();
    let text = r#"@weather.echo(a="; touch pwned", b="$(touch pwned)", c="`touch pwned`", d="x && touch pwned | touch pwned > pwned")"#;
    let report = registry.execute_response(text).await;
    let result = report.calls[0].result.as_ref().unwrap();
    assert_eq!(
        result["stdin"],
        json!({"a": "; touch pwned", "b": "$(touch pwned)", "c": "`touch pwned`",
               "d": "x && touch pwned | touch pwned > pwned"})
    );
    assert_eq!(result["argv"], json!([]));
    assert_eq!(result["function"], "weather.echo");
    assert_eq!(result["call_id"], "call_1");
    assert_eq!(
        PathBuf::from(result["cwd"].as_str().unwrap())
            .canonicalize()
            .unwrap(),
        folder.path().canonicalize().unwrap()
    );
    assert!(!folder.path().join("pwned").exists(), "a shell ran");
    assert_eq!(std::fs::read_dir(folder.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn the_request_body_arrives_under_body() {
    let wrapper = load_interfaces_str(
        r#"[{"domain": "weather", "name": "report", "type": "api-wrapper",
             "description": "File a report", "returns": "object",
             "path_params": {"city": {"type": "string", "isRequired": true, "description": "City"}},
             "request_body": {"text": {"type": "string", "required": true, "description": "Text"}}}]"#,
    )
    .unwrap()
    .remove(0);
    let registry = Registry::new();
    registry
        .register(CommandBox::new("weather").function(wrapper, ["python3", &script(), "echo"]))
        .unwrap();
    let report = registry
        .execute_response(r#"@weather.report("Oslo") with_body [[{"text": "rain"}]]"#)
        .await;
    let result = report.calls[0].result.as_ref().unwrap();
    assert_eq!(
        result["stdin"],
        json!({"city": "Oslo", "body": {"text": "rain"}})
    );
}

#[tokio::test]
async fn the_environment_is_minimal_unless_inherited() {
    let _environment = crate::ENVIRONMENT.lock().await;
    // A HOME the test can compare with, whether or not the machine set one.
    let home = std::env::var("HOME").unwrap_or_else(|_| {
        std::env::set_var("HOME", "/home-for-the-test");
        String::from("/home-for-the-test")
    });
    // A variable only this test sets, standing for the host's secrets.
    std::env::set_var("ATFUNC_TEST_HOST_ONLY", "host-value");
    std::env::set_var("ATFUNC_TEST_PASSED", "passed-value");
    let names = args(json!({"names": ["HOME", "PATH", "TOOL_KEY",
        "ATFUNC_TEST_HOST_ONLY", "ATFUNC_TEST_PASSED"]}));
    let params = json!({"names": {"type": "array"}});
    let minimal = tool("env", "env", params.clone())
        .env("TOOL_KEY", "k1")
        .pass_env("ATFUNC_TEST_PASSED");
    let seen = minimal
        .call("env", names.clone(), &CallContext::new())
        .await
        .unwrap();
    assert_eq!(seen["HOME"], home.as_str());
    assert!(seen["PATH"].is_string());
    assert_eq!(seen["TOOL_KEY"], "k1");
    assert_eq!(seen["ATFUNC_TEST_PASSED"], "passed-value");
    assert_eq!(seen["ATFUNC_TEST_HOST_ONLY"], Value::Null);

    let inherited = tool("env", "env", params)
        .env("TOOL_KEY", "k2")
        .inherit_env(EnvInheritance::All);
    let seen = inherited
        .call("env", names, &CallContext::new())
        .await
        .unwrap();
    assert_eq!(seen["ATFUNC_TEST_HOST_ONLY"], "host-value");
    assert_eq!(seen["TOOL_KEY"], "k2");
}

/// A program that cannot be found is an error for the model, not a crash, and is named
/// without its folder (a path on the host tells the model nothing it may use).
#[tokio::test]
async fn a_missing_program_is_an_error_named_without_its_folder() {
    for program in [
        "atfunc-test-no-such-program",
        "/opt/host-only-folder/atfunc-test-no-such-program",
    ] {
        let missing = CommandBox::new("weather").function(interface("gone", json!({})), [program]);
        let error = missing
            .call("gone", Map::new(), &CallContext::new())
            .await
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "Function 'weather.gone' could not be started (atfunc-test-no-such-program: the program was not found); it is not available now",
            "{program}"
        );
    }
}

/// A box whose function `run` runs `script` with `sh -c`.
fn shell(script: &str) -> CommandBox {
    CommandBox::new("sh").function(interface("run", json!({})), ["sh", "-c", script])
}

const SECRET: &str = "tok-9f8e7d6c5b4a";

#[tokio::test]
async fn a_secret_env_value_in_hex_is_redacted() {
    let lower: String = SECRET.bytes().map(|b| format!("{b:02x}")).collect();
    for (script, tell) in [
        (
            r#"printf '%s' "$TOK" | od -An -tx1 | tr -d ' \n'"#,
            lower.clone(),
        ),
        (
            r#"printf 'KEY=%s' "$TOK" | od -An -tx1 | tr -d ' \n' | tr a-f A-F"#,
            lower.to_uppercase(),
        ),
    ] {
        let tool = shell(script).secret_env("TOK", SECRET);
        let text = tool
            .call("run", Map::new(), &CallContext::new())
            .await
            .expect("runs")
            .to_string();
        assert!(text.contains("[redacted]"), "{script}: {text}");
        assert!(!text.contains(&tell), "{script}: {text}");
    }
}

#[tokio::test]
async fn a_secret_env_value_is_redacted_in_output_and_errors() {
    let cases = [
        // As written, in the output.
        (r#"printf '%s' "$TOK""#, true),
        // In base64, as Basic auth holds it.
        (r#"printf 'user:%s' "$TOK" | base64"#, true),
        // Percent-encoded, one escape per byte.
        (
            r#"printf '%s' "$TOK" | od -An -tx1 | tr -d ' \n' | sed 's/../%&/g'"#,
            true,
        ),
        // In the error text.
        (r#"printf 'bad token %s' "$TOK" >&2; exit 3"#, false),
    ];
    for (script, ok) in cases {
        let tool = shell(script).secret_env("TOK", SECRET);
        let result = tool.call("run", Map::new(), &CallContext::new()).await;
        let text = match (&result, ok) {
            (Ok(value), true) => value.to_string(),
            (Err(error), false) => error.to_string(),
            _ => panic!("{script}: {result:?}"),
        };
        assert!(text.contains("[redacted]"), "{script}: {text}");
        assert!(!text.contains(SECRET), "{script}: {text}");
        assert!(!text.contains("OWY4ZTdkNmM1YjRh"), "{script}: {text}");
    }
    // A plain value is not a secret.
    let plain = shell(r#"printf '%s' "$TOK""#).env("TOK", SECRET);
    let seen = plain
        .call("run", Map::new(), &CallContext::new())
        .await
        .unwrap();
    assert_eq!(seen, SECRET);
}

/// Whether process `pid` is still alive (a zombie counts as gone), on Linux.
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| !stat.contains(") Z "))
        .unwrap_or(false)
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    // The background `sleep` is not the program, only its child.
    let script = format!(
        "sleep 30 & echo $! > '{}'; sleep 30; true",
        pid_file.display()
    );
    let tool = shell(&script).timeout(Duration::from_millis(500));
    let started = std::time::Instant::now();
    let error = tool
        .call("run", Map::new(), &CallContext::new())
        .await
        .unwrap_err();
    assert!(matches!(error, ToolError::Timeout { .. }), "{error}");
    assert!(started.elapsed() < Duration::from_secs(10));
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let pid = pid.trim();
    // Bounded wait for the kernel to finish the kill.
    for _ in 0..50 {
        if !alive(pid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the background process {pid} outlived the time limit");
}

/// Waits (bounded) for the process whose pid is in `pid_file` to be gone.
#[cfg(target_os = "linux")]
fn assert_gone(pid_file: &std::path::Path, what: &str) {
    let mut pid = String::new();
    for _ in 0..100 {
        pid = std::fs::read_to_string(pid_file).unwrap_or_default();
        if !pid.trim().is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = pid.trim();
    assert!(!pid.is_empty(), "{what}: no pid was written");
    for _ in 0..100 {
        if !alive(pid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Not left running after a failed test.
    let _ = std::process::Command::new("kill")
        .args(["-9", pid])
        .status();
    panic!("{what}: the process {pid} outlived the call");
}

/// A grandchild that left the process group with `setsid`, in a new session, whose parent
/// exited: it is no longer in the group, nor below the program by its parent.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_timeout_kills_a_grandchild_that_left_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let script = format!(
        "sh -c 'setsid sh -c \"echo \\$\\$ > {}; exec sleep 30\" < /dev/null > /dev/null 2>&1 &'; sleep 30",
        pid_file.display()
    );
    let tool = shell(&script).timeout(Duration::from_millis(800));
    let error = tool
        .call("run", Map::new(), &CallContext::new())
        .await
        .unwrap_err();
    assert!(matches!(error, ToolError::Timeout { .. }), "{error}");
    assert_gone(&pid_file, "after the time limit");
}

/// The same grandchild, also with an empty environment: while the program runs it stays
/// below the program in the process tree, so the time limit still finds it.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_timeout_kills_a_grandchild_that_emptied_its_environment() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let script = format!(
        "sh -c 'setsid env -i /bin/sh -c \"echo \\$\\$ > {}; exec sleep 30\" < /dev/null > /dev/null 2>&1 &'; sleep 30",
        pid_file.display()
    );
    let tool = shell(&script).timeout(Duration::from_millis(800));
    let error = tool
        .call("run", Map::new(), &CallContext::new())
        .await
        .unwrap_err();
    assert!(matches!(error, ToolError::Timeout { .. }), "{error}");
    assert_gone(&pid_file, "after the time limit");
}

/// A program that starts such a grandchild and exits at once: the call returns, and the
/// grandchild does not outlive it, whether it kept the output open or not.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_program_that_exits_leaves_no_grandchild_behind() {
    for redirect in ["< /dev/null > /dev/null 2>&1", ""] {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        // The program waits for the grandchild to have written its pid, then exits.
        let script = format!(
            "setsid sh -c 'echo $$ > {0}.new && mv {0}.new {0}; exec sleep 30' {redirect} & \
             while [ ! -s {0} ]; do sleep 0.01; done; echo started",
            pid_file.display()
        );
        let tool = shell(&script).timeout(Duration::from_secs(20));
        let seen = tool
            .call("run", Map::new(), &CallContext::new())
            .await
            .unwrap();
        assert_eq!(seen, "started");
        assert_gone(&pid_file, &format!("after a clean end ({redirect:?})"));
    }
}

#[tokio::test]
async fn a_program_that_exits_returns_even_if_a_child_holds_its_output() {
    let tool = shell("echo started; sleep 30 & exit 0").timeout(Duration::from_secs(20));
    let started = std::time::Instant::now();
    let seen = tool
        .call("run", Map::new(), &CallContext::new())
        .await
        .unwrap();
    assert_eq!(seen, "started");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn debug_output_shows_variable_names_not_values() {
    let weather = tool("get_temp", "temp", json!({})).env("API_KEY", "hunter2-secret");
    let debug = format!("{weather:?}");
    assert!(debug.contains("API_KEY"));
    assert!(!debug.contains("hunter2-secret"), "{debug}");
}

/// Output that is not UTF-8 goes to the client as an element, recognised by its first bytes,
/// and the model reads one line; output that holds a secret goes to no one.
#[tokio::test]
async fn binary_output_is_an_element_and_a_line_for_the_model() {
    let registry = Registry::new();
    let png = CommandBox::new("weather").function(
        interface("chart", json!({})),
        ["sh", "-c", r"printf '\211PNG\r\n\032\n\000\000\000\rIHDR'"],
    );
    registry.register(png).unwrap();
    let report = registry.execute_response("@weather.chart()").await;
    let call = &report.calls[0];
    assert_eq!(call.result, Ok(json!("[image: image/png, 16 bytes]")));
    assert_eq!(
        call.elements,
        [json!({"type": "image", "mime_type": "image/png", "data": "iVBORw0KGgoAAAANSUhEUg=="})]
    );
    assert!(!report.output.contains("iVBOR"), "{}", report.output);

    let leaky = shell(r#"printf '\377\376%s' "$TOK""#).secret_env("TOK", SECRET);
    let ctx = CallContext::new().collecting_elements();
    let result = leaky.call("run", Map::new(), &ctx).await;
    assert_eq!(
        result,
        Ok(json!(
            "[resource: application/octet-stream, 18 bytes, withheld: it holds a secret]"
        ))
    );
    assert!(ctx.take_elements().is_empty());

    // UTF-8 text stays the model's, as before.
    let text = shell("printf 'Straße'").call("run", Map::new(), &ctx).await;
    assert_eq!(text, Ok(json!("Straße")));
    assert!(ctx.take_elements().is_empty());
}
