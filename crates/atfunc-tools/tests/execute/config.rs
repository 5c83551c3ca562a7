//! The config file: reading, every problem at once, building a registry, and `--config`.
#![cfg(all(feature = "command", feature = "http"))]

use atfunc_tools::config::{Config, ConfigError};
use serde_json::json;

const EXAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/config/atfunc.json"
);
const COMPLETION: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/config/completion.txt"
);

/// What the example completion gives, through the library and through `atfunc exec`.
/// What `exec` prints for the example config's completion.
const EXAMPLE_OUTPUT: &str = include_str!("../../../../examples/config/exec-output.txt");

fn problems(text: &str) -> Vec<String> {
    match Config::from_text(text, ".") {
        Err(ConfigError::Invalid { problems, .. }) => problems,
        other => panic!("expected problems, got {other:?}"),
    }
}

#[tokio::test]
async fn the_example_runs_end_to_end() {
    let config = Config::from_path(EXAMPLE).unwrap();
    assert_eq!(config.root(), Some("weather"));
    assert_eq!(config.toolbox_names(), ["file", "weather"]);
    let registry = config.build().await.unwrap();
    assert_eq!(registry.toolboxes(), ["file", "weather", "tools"]);
    assert_eq!(registry.root().as_deref(), Some("weather"));
    let report = registry
        .execute_response(&std::fs::read_to_string(COMPLETION).unwrap())
        .await;
    assert_eq!(report.output, EXAMPLE_OUTPUT);
    assert_eq!(report.call_count, 4);
}

#[test]
fn every_problem_is_listed_with_its_toolbox_and_field() {
    let text = json!({
        "root": "nowhere",
        "extra": 1,
        "toolboxes": [
            {"name": "file", "kind": "file"},
            {"name": "weather", "kind": "command", "timeout_ms": 0,
             "functions": [
                {"name": "get_temp", "description": "t", "parameters": {"type": "object"}},
                {"name": "other.get_rain", "description": "r", "parameters": {"type": "object"},
                 "command": ["python3", "rain.py"]},
                {"name": "get_wind", "description": "w", "parameters": {"type": "object"},
                 "command": []},
                "not an interface"]},
            {"name": "api", "kind": "http", "base_url": "ftp://x",
             "headers": {"Authorization": {"env": ""}, "X-Ok": "yes"},
             "functions": [
                {"name": "get_user", "description": "u", "method": "FETCH",
                 "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
                 "path": "/users/{id}"}]},
            {"name": "Weather", "kind": "mcp", "command": "npx server", "envs": {}},
            {"name": "tools", "kind": "file", "root": "."},
            {"name": "x", "kind": "ftp"},
            {"kind": "file", "root": "."},
            42
        ]
    });
    assert_eq!(
        problems(&text.to_string()),
        [
            "field 'extra' is not known here; the fields are root, toolboxes",
            "toolbox 'file' (#1): missing required field 'root'",
            "toolbox 'weather' (#2): field 'timeout_ms' must be at least 1, found 0",
            "toolbox 'weather' (#2): function 'other.get_rain': its domain 'other' is not the toolbox's name 'weather'; leave the domain out",
            "toolbox 'weather' (#2): function #4: must be an object (an interface), found a string",
            "toolbox 'weather' (#2): function 'get_temp': missing required field 'command'",
            "toolbox 'weather' (#2): function 'get_wind': field 'command' must name a program: it is an empty list",
            "toolbox 'api' (#3): field 'headers.Authorization' must be a string or {\"env\": \"VARIABLE\"}, and 'env' must name an environment variable",
            "toolbox 'api' (#3): field 'base_url' must be an http(s) URL, found \"ftp://x\"",
            "toolbox 'api' (#3): function 'get_user': field 'method' must be GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS, found \"FETCH\"",
            "toolbox 'api' (#3): function 'get_user': field 'path': the placeholder {id} names an optional parameter; path parameters must be required",
            "toolbox 'Weather' (#4): field 'envs' is not known here (did you mean 'env'?); the fields are name, kind, timeout_ms, confirm, command, env",
            "toolbox 'Weather' (#4): field 'command' must be a list of strings (the program, then its arguments), found a string",
            "toolbox 'x' (#6): field 'kind' must be file, command, http or mcp, found \"ftp\"",
            "toolbox #7: missing required field 'name'",
            "toolbox #8: must be an object with 'name' and 'kind', found a number",
            "toolbox 'tools' (#5): field 'name': 'tools' is the control functions' domain; choose another name",
            "field 'root': no toolbox is named 'nowhere'; it must be one of the toolboxes' names",
        ]
    );
}

#[test]
fn a_missing_base_url_does_not_hide_the_endpoint_problems() {
    let text = json!({"toolboxes": [{"name": "api", "kind": "http", "functions": [
        {"name": "get_user", "description": "u", "method": "FETCH", "path": "users",
         "parameters": {"type": "object", "properties": {}}}]}]});
    assert_eq!(
        problems(&text.to_string()),
        [
            "toolbox 'api' (#1): missing required field 'base_url'",
            "toolbox 'api' (#1): function 'get_user': field 'method' must be GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS, found \"FETCH\"",
            "toolbox 'api' (#1): function 'get_user': field 'path' must start with '/', found \"users\"",
        ]
    );
}

#[test]
fn duplicate_names_clash_ignoring_case() {
    let text = r#"{"toolboxes": [
        {"name": "files", "kind": "file", "root": "."},
        {"name": "Files", "kind": "file", "root": "."}]}"#;
    assert_eq!(
        problems(text),
        ["toolbox 'Files' (#2): field 'name': 'Files' is taken by toolbox #1; names must differ (ignoring case)"]
    );
}

/// JSON keeps the last of two equal keys without a word, so `"root": "./box", "root": "/"`
/// would widen the sandbox to `/`: a duplicate key anywhere in a config is a problem,
/// named with its path, beside the config's other problems.
#[test]
fn duplicate_keys_are_problems_named_with_their_path() {
    let text = r#"{"root": "files", "toolboxes": [
        {"name": "files", "kind": "file", "root": "./box", "root": "/"},
        {"name": "api", "kind": "http", "base_url": "http://127.0.0.1:9",
         "headers": {"X-Key": "a", "X-\u004bey": "b"},
         "functions": [{"name": "ping", "path": "/ping", "timeout": 5,
                        "parameters": {"type": "object", "type": "string"}}]}],
        "root": "api"}"#;
    assert_eq!(
        problems(text),
        [
            "key 'root' is given twice in toolboxes[0] (JSON keeps only the last); give each key once",
            "key 'X-Key' is given twice in toolboxes[1].headers (JSON keeps only the last); give each key once",
            "key 'type' is given twice in toolboxes[1].functions[0].parameters (JSON keeps only the last); give each key once",
            "key 'root' is given twice at the top level (JSON keeps only the last); give each key once",
            "toolbox 'api' (#2): function 'ping': field 'timeout' is not known here ('timeout_ms' is a field of the toolbox); the fields are type, name, description, parameters, returns, strict, method, path, confirm",
        ]
    );
    // Keys that are not names are quoted in the path, control characters escaped.
    let odd = r#"{"toolboxes": [], "x y": {"\u001b]0;t\u0007": {"k": 1, "k": 2}}}"#;
    assert_eq!(
        problems(odd)[0],
        r#"key 'k' is given twice in ["x y"]["\u001b]0;t\u0007"] (JSON keeps only the last); give each key once"#
    );
}

/// A name that clashes twice (with the control domain and with an earlier toolbox) is
/// reported twice and leaves the other toolboxes alone.
#[tokio::test]
async fn a_name_clashing_twice_leaves_the_others_checked() {
    let folder = tempfile::tempdir().unwrap();
    std::fs::create_dir(folder.path().join("box")).unwrap();
    let path = folder.path().join("atfunc.json");
    std::fs::write(
        &path,
        r#"{"root": "docs", "toolboxes": [
            {"name": "tools", "kind": "file", "root": "box"},
            {"name": "TOOLS", "kind": "file", "root": "box"},
            {"name": "docs", "kind": "file", "root": "box"},
            {"name": "gone", "kind": "file", "root": "missing"}]}"#,
    )
    .unwrap();
    let error = Config::check_file(&path).await.unwrap_err();
    let problems = error.problems();
    assert_eq!(problems.len(), 4, "{problems:?}");
    assert!(
        problems[3].starts_with("toolbox 'gone' (#4): field 'root': "),
        "{problems:?}"
    );
}

#[test]
fn interface_problems_name_the_function() {
    // `get-temp` is fine: a call writes it `get_temp`.
    let text = r#"{"toolboxes": [{"name": "w", "kind": "command", "functions": [
        {"name": "get-temp", "description": "x", "parameters": {"type": "object"}, "command": ["x"]},
        {"name": "f", "type": "function", "description": "x", "returns": "string",
         "params": {"a": {"type": "strange", "isRequired": true, "description": "a"}},
         "command": ["x"]}]}]}"#;
    assert_eq!(
        problems(text),
        [
            "toolbox 'w' (#1): function 'f': parameter 'a' has unknown type 'strange': use string, number, integer, boolean, object, array or any (aliases: dict, float, double, int, bool, tuple, list)",
        ]
    );
}

#[test]
fn json_syntax_errors_give_line_and_column() {
    let error = Config::from_text("{\n  \"toolboxes\": [,]\n}", ".").unwrap_err();
    assert_eq!(
        error.to_string(),
        "config:2:17: not valid JSON: expected value"
    );
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("broken.json");
    std::fs::write(&path, "{\"toolboxes\": }").unwrap();
    match Config::from_path(&path).unwrap_err() {
        ConfigError::Syntax { line, column, .. } => assert_eq!((line, column), (1, 15)),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        Config::from_path(folder.path().join("missing.json")),
        Err(ConfigError::Read { .. })
    ));
}

#[tokio::test]
async fn a_missing_environment_variable_is_named_at_build() {
    let text = r#"{"toolboxes": [
        {"name": "api", "kind": "http", "base_url": "http://127.0.0.1:1",
         "headers": {"Authorization": {"env": "ATFUNC_TEST_SURELY_UNSET_1", "prefix": "Bearer "}},
         "functions": []},
        {"name": "w", "kind": "command", "env": {"KEY": {"env": "ATFUNC_TEST_SURELY_UNSET_2"}},
         "functions": []},
        {"name": "file", "kind": "file", "root": "no-such-folder"}]}"#;
    let folder = tempfile::tempdir().unwrap();
    let config = Config::from_text(text, folder.path()).unwrap();
    let error = config.build().await.unwrap_err();
    let problems = error.problems();
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert_eq!(
        problems[0],
        "toolbox 'api' (#1): field 'headers.Authorization' reads the environment variable ATFUNC_TEST_SURELY_UNSET_1, which is not set"
    );
    assert_eq!(
        problems[1],
        "toolbox 'w' (#2): field 'env.KEY' reads the environment variable ATFUNC_TEST_SURELY_UNSET_2, which is not set"
    );
    assert!(
        problems[2].starts_with("toolbox 'file' (#3): field 'root': "),
        "{}",
        problems[2]
    );
}

#[tokio::test]
async fn relative_paths_start_at_the_config_folder() {
    let folder = tempfile::tempdir().unwrap();
    let tools = folder.path().join("tools");
    std::fs::create_dir_all(tools.join("data")).unwrap();
    std::fs::write(tools.join("data/a.txt"), "from the data folder").unwrap();
    std::fs::write(
        tools.join("hello.py"),
        "import json, os, sys\nargs = json.load(sys.stdin)\nprint(json.dumps({'hi': args['who'], 'cwd': os.path.basename(os.getcwd())}))\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let script = tools.join("run.sh");
        std::fs::write(&script, "#!/bin/sh\nexec python3 hello.py\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let config = json!({"toolboxes": [
        {"name": "data", "kind": "file", "root": "data"},
        {"name": "greet", "kind": "command", "functions": [
            {"name": "hello", "description": "Greets",
             "parameters": {"type": "object", "properties": {"who": {"type": "string"}}},
             "command": ["./run.sh"]}]}]});
    let path = tools.join("atfunc.json");
    std::fs::write(&path, config.to_string()).unwrap();
    // The test runs from the crate's folder, not the config's.
    assert_ne!(std::env::current_dir().unwrap(), tools);
    let registry = Config::from_path(&path).unwrap().build().await.unwrap();
    let report = registry
        .execute_response("@data.readfile(\"a.txt\") @greet.hello(who=\"Ann\")")
        .await;
    assert_eq!(report.calls[0].result, Ok(json!("from the data folder")));
    assert_eq!(
        report.calls[1].result,
        Ok(json!({"hi": "Ann", "cwd": "tools"}))
    );
}

#[tokio::test]
async fn command_environment_is_minimal_and_secrets_are_redacted() {
    let _environment = crate::ENVIRONMENT.lock().await;
    std::env::set_var("ATFUNC_TEST_CONFIG_HOST", "host-only");
    std::env::set_var("ATFUNC_TEST_CONFIG_PASS", "passed");
    std::env::set_var("ATFUNC_TEST_CONFIG_TOKEN", "cfg-secret-77aa");
    let function = |name: &str, script: &str| {
        json!({"name": name, "description": "x", "parameters": {"type": "object"},
               "command": ["sh", "-c", script]})
    };
    let printenv =
        "printf '%s|%s|%s' \"$ATFUNC_TEST_CONFIG_HOST\" \"$ATFUNC_TEST_CONFIG_PASS\" \"$TOK\"";
    let config = json!({"toolboxes": [
        {"name": "minimal", "kind": "command", "pass_env": ["ATFUNC_TEST_CONFIG_PASS"],
         "env": {"TOK": {"env": "ATFUNC_TEST_CONFIG_TOKEN"}},
         "functions": [function("show", printenv)]},
        {"name": "all", "kind": "command", "inherit_env": true,
         "functions": [function("show", printenv)]}]});
    let registry = Config::from_text(&config.to_string(), ".")
        .unwrap()
        .build()
        .await
        .unwrap();
    let report = registry
        .execute_response("@minimal.show() @all.show()")
        .await;
    assert_eq!(report.calls[0].result, Ok(json!("|passed|[redacted]")));
    assert_eq!(report.calls[1].result, Ok(json!("host-only|passed|")));
    assert_eq!(
        problems(r#"{"toolboxes": [{"name": "w", "kind": "command", "pass_env": "X", "functions": []}]}"#),
        ["toolbox 'w' (#1): field 'pass_env' must be a list of environment variable names, such as [\"LANG\"]"]
    );
}

#[cfg(feature = "mcp")]
#[tokio::test]
async fn an_mcp_server_that_cannot_start_is_a_config_error() {
    let text = r#"{"toolboxes": [{"name": "everything", "kind": "mcp",
        "command": ["atfunc-test-no-such-server"]}]}"#;
    let error = Config::from_text(text, ".")
        .unwrap()
        .build()
        .await
        .unwrap_err();
    assert_eq!(error.problems().len(), 1);
    assert!(
        error.problems()[0]
            .starts_with("toolbox 'everything' (#1): the MCP server could not be started: "),
        "{error}"
    );
}

#[test]
fn debug_output_holds_no_values() {
    let text = r#"{"toolboxes": [{"name": "api", "kind": "http", "base_url": "http://127.0.0.1:1",
        "headers": {"X-Api-Key": "literal-key-value", "Authorization": {"env": "SOME_TOKEN"}},
        "functions": []}]}"#;
    let debug = format!("{:?}", Config::from_text(text, ".").unwrap());
    assert!(debug.contains("(\"api\", \"http\")"), "{debug}");
    assert!(!debug.contains("literal-key-value"), "{debug}");
    assert!(!debug.contains("SOME_TOKEN"), "{debug}");
}

#[test]
fn unknown_fields_are_problems_with_the_closest_known_name() {
    let text = r#"{"roots": "w", "toolboxes": [{"name": "w", "kind": "command", "timout_ms": 5,
        "functions": [{"name": "f", "descripton": "x", "parameters": {"type": "object"},
                       "command": ["x"]},
                      {"name": "g", "type": "function", "description": "x", "returns": "x",
                       "params": {}, "comand": ["x"]}]}]}"#;
    assert_eq!(
        problems(text),
        [
            "field 'roots' is not known here (did you mean 'root'?); the fields are root, toolboxes",
            "toolbox 'w' (#1): field 'timout_ms' is not known here (did you mean 'timeout_ms'?); the fields are name, kind, timeout_ms, confirm, functions, env, pass_env, inherit_env, cwd, max_output_bytes, uid, gid",
            "toolbox 'w' (#1): function 'f': field 'descripton' is not known here (did you mean 'description'?); the fields are type, name, description, parameters, returns, strict, command, confirm",
            "toolbox 'w' (#1): function 'g': field 'comand' is not known here (did you mean 'command'?); the fields are domain, name, type, description, params, path_params, query_params, request_body, returns, response_type, command, confirm",
            "toolbox 'w' (#1): function 'g': missing required field 'command'",
        ]
    );
}

#[tokio::test]
async fn listing_needs_no_secret_and_running_does() {
    let text = r#"{"toolboxes": [{"name": "api", "kind": "http", "base_url": "http://127.0.0.1:9",
        "headers": {"Authorization": {"env": "ATFUNC_TEST_NEVER_SET", "prefix": "Bearer "}},
        "functions": [{"name": "ping", "parameters": {"type": "object"}, "path": "/ping"}]}]}"#;
    let config = Config::from_text(text, ".").unwrap();
    let listed = config.build_for_listing().await.unwrap();
    assert_eq!(
        listed.toolbox_functions("api", &atfunc_tools::CallContext::new()),
        Some(vec!["api.ping".to_owned()])
    );
    let error = config.build().await.unwrap_err().to_string();
    assert!(
        error.contains("reads the environment variable ATFUNC_TEST_NEVER_SET, which is not set"),
        "{error}"
    );
    // Checking needs no secret either: the variable is a warning.
    assert_eq!(
        config.check().await.unwrap(),
        ["toolbox 'api' (#1): field 'headers.Authorization' reads the environment variable ATFUNC_TEST_NEVER_SET, which is not set"]
    );
}

#[tokio::test]
async fn confirm_on_a_toolbox_or_a_function_holds_their_calls() {
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("a.txt"), "kept").unwrap();
    let text = json!({"toolboxes": [
        {"name": "file", "kind": "file", "root": ".", "confirm": true},
        {"name": "shell", "kind": "command", "functions": [
            {"name": "echo", "parameters": {"type": "object",
                "properties": {"text": {"type": "string"}}}, "command": ["cat"]},
            {"name": "wipe", "parameters": {"type": "object"}, "command": ["false"],
             "confirm": true}]}]});
    let config = Config::from_text(&text.to_string(), folder.path()).unwrap();
    let registry = config.build().await.unwrap();
    let report = registry
        .execute_response(r#"@file.deletefile("a.txt") @shell.wipe() @shell.echo(text="hi")"#)
        .await;
    let held: Vec<bool> = report
        .calls
        .iter()
        .map(|o| o.confirmation_id.is_some())
        .collect();
    assert_eq!(held, [true, true, false]);
    assert_eq!(report.calls[2].result, Ok(json!({"text": "hi"})));
    assert!(folder.path().join("a.txt").exists());
    let id = report.calls[0].confirmation_id.clone().unwrap();
    registry.confirm(&id).await.unwrap();
    assert!(!folder.path().join("a.txt").exists());
}

#[test]
fn confirm_must_be_true_false_or_names_and_typos_are_named() {
    let text = r#"{"toolboxes": [
        {"name": "f", "kind": "file", "root": ".", "confirm": "yes"},
        {"name": "m", "kind": "mcp", "command": ["x"], "confrim": true},
        {"name": "c", "kind": "command", "functions": [
            {"name": "g", "parameters": {"type": "object"}, "command": ["x"], "confirm": 1}]}]}"#;
    assert_eq!(
        problems(text),
        [
            "toolbox 'f' (#1): field 'confirm' must be true, false or a list of the toolbox's function names, found a string",
            "toolbox 'm' (#2): field 'confrim' is not known here (did you mean 'confirm'?); the fields are name, kind, timeout_ms, confirm, command, env",
            "toolbox 'c' (#3): function 'g': field 'confirm' must be true or false, found a number",
        ]
    );
}

#[tokio::test]
async fn a_toolbox_may_list_the_functions_that_need_confirmation() {
    let function =
        |name: &str| json!({"name": name, "parameters": {"type": "object"}, "command": ["cat"]});
    let config = |listed: serde_json::Value| {
        let text = json!({"toolboxes": [{"name": "shell", "kind": "command",
            "confirm": listed, "functions": [function("wipe"), function("list")]}]});
        Config::from_text(&text.to_string(), ".").unwrap()
    };
    let registry = config(json!(["Wipe"])).build().await.unwrap();
    let report = registry
        .execute_response("@shell.wipe() @shell.list()")
        .await;
    assert!(report.calls[0].confirmation_id.is_some());
    assert_eq!(report.calls[1].result, Ok(json!({})));
    // Names are checked against the functions once the box is built (an MCP server's
    // tools are known only then).
    let error = config(json!(["wipe", "shred"])).build().await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "config: toolbox 'shell' (#1): field 'confirm': 'shred' is not one of its functions; they are wipe, list"
    );
    let wrong = json!({"toolboxes": [{"name": "shell", "kind": "command",
        "confirm": ["wipe", 3], "functions": [function("wipe")]}]});
    assert_eq!(
        problems(&wrong.to_string()),
        ["toolbox 'shell' (#1): field 'confirm' must list function names, found a number"]
    );
}

/// A boolean whose choices spell booleans as text (`["True", "False"]`) is a boolean: the
/// model's `force=false` reaches the program as `false`, not as the text `"False"`, which a
/// program reads as true (and skips its backup). Reading it so is a warning of `check`, and
/// a problem of a strict check.
#[tokio::test]
async fn a_boolean_with_text_choices_reaches_the_program_as_a_boolean() {
    let text = json!({"toolboxes": [{"name": "disk", "kind": "command", "functions": [
        {"name": "wipe", "parameters": {"type": "object",
            "properties": {"force": {"type": "boolean", "enum": ["True", "False"]}}},
         "command": ["cat"]}]}]});
    let config = Config::from_text(&text.to_string(), ".").unwrap();
    let warning = "toolbox 'disk' (#1): function 'wipe': Parameter 'force' is boolean but none of \
                   its choices (\"True\", \"False\") is a boolean; it is read as boolean with the \
                   choices true, false";
    assert_eq!(config.warnings(), [warning]);
    assert_eq!(config.check().await.unwrap(), [warning]);
    let registry = config.build().await.unwrap();
    let report = registry
        .execute_response(r#"@disk.wipe(force=false) @disk.wipe(force="False")"#)
        .await;
    for call in &report.calls {
        assert_eq!(call.result, Ok(json!({"force": false})));
    }

    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("atfunc.json");
    std::fs::write(&path, text.to_string()).unwrap();
    let (_, warnings) = Config::check_file(&path).await.unwrap();
    assert_eq!(warnings, [warning]);
    let strict = Config::check_file_with(&path, atfunc::interface::Strictness::Strict)
        .await
        .unwrap_err();
    assert_eq!(
        strict.problems(),
        ["toolbox 'disk' (#1): function 'wipe': Parameter 'force' is boolean but none of its choices (\"True\", \"False\") is a boolean"]
    );
}

/// A config's functions are read as a tools file is: what atfunc does not enforce is a
/// warning of `check`, and a problem of a strict check, naming the toolbox and function.
#[tokio::test]
async fn restrictions_of_a_config_function_are_warnings_and_strict_problems() {
    let text = json!({"toolboxes": [{"name": "shop", "kind": "command", "functions": [
        {"name": "pay", "parameters": {"type": "object", "required": "amount",
            "properties": {"amount": {"type": "number", "not": {"const": 0}},
                           "currency": {"const": "EUR"}}},
         "command": ["cat"]}]}]});
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("atfunc.json");
    std::fs::write(&path, text.to_string()).unwrap();
    let (_, warnings) = Config::check_file(&path).await.unwrap();
    assert_eq!(
        warnings,
        [
            "toolbox 'shop' (#1): function 'pay': 'parameters.required' must be a list of property names, found a string; it is read as [\"amount\"]",
            "toolbox 'shop' (#1): function 'pay': 'parameters.amount' declares not, which atfunc neither shows the model nor checks; a call that breaks it is not refused, so the tool must check it",
            "toolbox 'shop' (#1): function 'pay': 'parameters.currency' declares const \"EUR\"; it is read as its only choice",
        ]
    );
    let strict = Config::check_file_with(&path, atfunc::interface::Strictness::Strict)
        .await
        .unwrap_err();
    assert_eq!(
        strict.problems(),
        [
            "toolbox 'shop' (#1): function 'pay': 'parameters.required' must be a list of property names, found a string",
            "toolbox 'shop' (#1): function 'pay': 'parameters.amount' declares not, which atfunc neither shows the model nor checks",
        ]
    );
    // Enforced as read: the amount is required, the currency its one choice.
    let registry = Config::from_path(&path).unwrap().build().await.unwrap();
    let report = registry
        .execute_response(r#"@shop.pay(currency="USD")"#)
        .await;
    let output = &report.output;
    assert!(
        output.contains("Missing required parameter for function 'shop.pay': amount"),
        "{output}"
    );
    assert!(output.contains("expected one of \"EUR\""), "{output}");
}
