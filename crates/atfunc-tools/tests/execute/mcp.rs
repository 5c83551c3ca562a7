//! The MCP tool box against the reference servers from npm, pinned in `tests/mcp/package.json`
//! and installed with `npm ci --prefix tests/mcp` (CI does it before the tests).
#![cfg(feature = "mcp")]

use crate::missing;

use atfunc::render::render_interface;
use atfunc_tools::CallContext;
use atfunc_tools::{McpBox, McpOptions, Registry, ToolBox};
use serde_json::{json, Map, Value as Json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const INSTALL_HINT: &str = "run `npm ci --prefix tests/mcp` from the crate root first";

fn modules() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/node_modules")
}

/// Whether the servers can run. Only a missing `node` skips a test; missing packages fail it.
fn servers_ready(test: &str) -> bool {
    if Command::new("node").arg("--version").output().is_err() {
        missing::missing(
            test,
            "`node` is not installed, so the reference MCP servers cannot run",
            "install Node.js 20 or later and npm, then `npm ci --prefix tests/mcp`",
        );
        return false;
    }
    assert!(
        modules().join("@modelcontextprotocol").is_dir(),
        "the reference MCP servers are not installed: {INSTALL_HINT}"
    );
    true
}

/// `node <the package's bin> args...`, the bin read from the package's own package.json.
fn server_command(package: &str, args: &[&str]) -> Vec<String> {
    let root = modules().join("@modelcontextprotocol").join(package);
    let manifest = std::fs::read_to_string(root.join("package.json"))
        .unwrap_or_else(|error| panic!("{package} is not installed ({error}): {INSTALL_HINT}"));
    let manifest: Json = serde_json::from_str(&manifest).expect("package.json is JSON");
    let bin = match &manifest["bin"] {
        Json::String(path) => path.clone(),
        Json::Object(bins) => bins
            .values()
            .next()
            .and_then(Json::as_str)
            .expect("a bin entry")
            .to_owned(),
        other => panic!("{package} has no bin: {other}"),
    };
    let mut command = vec!["node".to_owned(), root.join(bin).display().to_string()];
    command.extend(args.iter().map(|arg| arg.to_string()));
    command
}

async fn everything() -> McpBox {
    McpBox::spawn(
        "everything",
        &server_command("server-everything", &["stdio"]),
        &BTreeMap::new(),
    )
    .await
    .expect("server-everything starts")
}

async fn filesystem(root: &Path) -> McpBox {
    let root = root.display().to_string();
    McpBox::spawn(
        "fs",
        &server_command("server-filesystem", &[&root]),
        &BTreeMap::new(),
    )
    .await
    .expect("server-filesystem starts")
}

fn rendered(tool_box: &dyn ToolBox) -> String {
    tool_box
        .interfaces(&CallContext::new())
        .iter()
        .map(render_interface)
        .collect::<Vec<_>>()
        .join("\n")
}

fn process_alive(pid: u32) -> bool {
    // A zombie has exited; only its entry in the process table is left.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

async fn wait_until_gone(pid: u32) -> bool {
    for _ in 0..200 {
        if !process_alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn everything_tools_become_interfaces() {
    if !servers_ready("everything_tools_become_interfaces") {
        return;
    }
    let server = everything().await;
    let interfaces = server.interfaces(&CallContext::new());
    assert_eq!(interfaces.len(), 13, "{}", rendered(&server));
    assert!(interfaces
        .iter()
        .all(|i| i.domain.as_deref() == Some("everything")));
    // Names with '-' are written with '_' and map back to the server's spelling.
    assert_eq!(server.server_tool_name("get_sum"), Some("get-sum"));
    assert_eq!(server.server_tool_name("echo"), Some("echo"));
    assert_eq!(server.server_tool_name("get-sum"), None);
    insta::assert_snapshot!("everything_interfaces", rendered(&server));
    server.close().await.expect("closes");
}

#[tokio::test]
async fn everything_calls_from_text() {
    if !servers_ready("everything_calls_from_text") {
        return;
    }
    let registry = Registry::new();
    registry.register(everything().await).expect("registers");
    let report = registry
        .execute_response(concat!(
            "Let me check. @everything.echo(message=\"hi\")\n",
            "@everything.get_sum(a=2, b=3.5)\n",
            "@Everything.Get_Resource_Reference(resourceType=\"Text\", resourceId=-1)\n",
        ))
        .await;
    assert_eq!(report.call_count, 3);
    let results: Vec<_> = report
        .calls
        .iter()
        .map(|c| c.result.clone().map_err(|e| e.to_string()))
        .collect();
    assert_eq!(results[0], Ok(json!("Echo: hi")));
    assert_eq!(results[1], Ok(json!("The sum of 2 and 3.5 is 5.5.")));
    // The call is written `get_sum`; what comes back names the tool as the server does.
    assert_eq!(report.calls[1].name, "everything.get-sum");
    let refused = results[2].clone().expect_err("a negative id is refused");
    assert!(refused.contains("Invalid resourceId"), "{refused}");
    insta::assert_snapshot!("everything_calls", report.output);
    registry.close().await.expect("closes");
}

/// The prompt's example call of a real server's tools is refused for its placeholders, so
/// a model that copies it reaches no server.
#[tokio::test]
async fn an_mcp_box_example_never_runs() {
    if !servers_ready("an_mcp_box_example_never_runs") {
        return;
    }
    let tmp = tempfile::tempdir().expect("a temporary folder");
    std::fs::write(tmp.path().join("keep.txt"), "kept").expect("writes");
    let registry = Registry::new();
    registry.register(everything().await).expect("registers");
    registry
        .register(filesystem(tmp.path()).await)
        .expect("registers");
    crate::example_call::assert_example_is_refused(&registry).await;
    assert_eq!(std::fs::read_dir(tmp.path()).expect("lists").count(), 1);
    registry.close().await.expect("closes");
}

/// server-everything's `get-annotated-message` gives content for each audience: an error for
/// both, a success for the user, debug details for the model, an image for the user.
#[tokio::test]
async fn annotated_content_goes_to_its_audience() {
    if !servers_ready("annotated_content_goes_to_its_audience") {
        return;
    }
    let registry = Registry::new();
    registry.register(everything().await).expect("registers");
    let report = registry
        .execute_response(concat!(
            "@everything.get_annotated_message(messageType=\"error\")\n",
            "@everything.get_annotated_message(messageType=\"success\")\n",
            "@everything.get_annotated_message(messageType=\"debug\")\n",
            "@everything.get_annotated_message(messageType=\"debug\", includeImage=true)\n",
            "@everything.echo(message=\"no audience\")\n",
        ))
        .await;
    let values: Vec<Json> = report
        .calls
        .iter()
        .map(|call| call.result.clone().expect("succeeds"))
        .collect();
    let elements: Vec<&[Json]> = report.calls.iter().map(|c| c.elements.as_slice()).collect();

    // For the user and the model: in both.
    assert_eq!(values[0], json!("Error: Operation failed"));
    assert_eq!(
        elements[0],
        [json!({"type": "text", "text": "Error: Operation failed"})]
    );
    // For the user alone: an element, and the model reads only that the user saw it.
    assert_eq!(values[1], json!("[shown to the user: text]"));
    assert_eq!(
        elements[1],
        [json!({"type": "text", "text": "Operation completed successfully"})]
    );
    // For the model alone: no element.
    assert_eq!(
        values[2],
        json!("Debug: Cache hit ratio 0.95, latency 150ms")
    );
    assert!(elements[2].is_empty());
    // The user's image goes whole to the client; the model reads what it is.
    let described =
        regex::Regex::new(r"^Debug: .*\n\[image: image/png, \d+ bytes\]$").expect("regex");
    assert!(
        described.is_match(values[3].as_str().expect("text")),
        "{}",
        values[3]
    );
    let [image] = elements[3] else {
        panic!("one element: {:?}", elements[3]);
    };
    assert_eq!(image["type"], "image");
    assert_eq!(image["mime_type"], "image/png");
    let data = image["data"].as_str().expect("base64 data");
    assert!(data.len() > 100, "{data}");
    assert!(!report.output.contains(data));
    // No audience: both.
    assert_eq!(values[4], json!("Echo: no audience"));
    assert_eq!(
        elements[4],
        [json!({"type": "text", "text": "Echo: no audience"})]
    );

    // The blocks show the model's values only, and the JSON of a call carries its elements.
    assert!(!report.output.contains("Operation completed successfully"));
    let calls = report.to_json()["calls"].clone();
    assert_eq!(calls[1]["elements"], json!(elements[1]));
    assert!(calls[2].get("elements").is_none(), "{}", calls[2]);
    insta::assert_snapshot!("everything_annotated", report.output);
    registry.close().await.expect("closes");
}

#[tokio::test]
async fn everything_other_content_and_env() {
    if !servers_ready("everything_other_content_and_env") {
        return;
    }
    let env = BTreeMap::from([("ATFUNC_MCP_PROBE".to_owned(), "set-by-test".to_owned())]);
    let server = McpBox::spawn(
        "everything",
        &server_command("server-everything", &["stdio"]),
        &env,
    )
    .await
    .expect("starts");
    let ctx = CallContext::new();
    let image = server
        .call("get_tiny_image", Map::new(), &ctx)
        .await
        .expect("an image");
    let image = image.as_str().expect("text");
    assert!(
        regex::Regex::new(r"\[image: image/png, \d+ bytes\]")
            .expect("regex")
            .is_match(image),
        "{image}"
    );
    let args = Map::from_iter([
        ("resourceType".to_owned(), json!("Text")),
        ("resourceId".to_owned(), json!(1)),
    ]);
    let resource = server
        .call("get_resource_reference", args, &ctx)
        .await
        .expect("resource 1 exists");
    assert!(
        resource.as_str().is_some_and(|text| text
            .contains("[resource: demo://resource/dynamic/text/1, text/plain]\nResource 1: ")),
        "{resource}"
    );
    let vars = server.call("get_env", Map::new(), &ctx).await.expect("env");
    assert!(
        vars.as_str()
            .is_some_and(|text| text.contains("ATFUNC_MCP_PROBE") && text.contains("set-by-test")),
        "{vars}"
    );
    assert!(server.call("no_such_tool", Map::new(), &ctx).await.is_err());
    server.close().await.expect("closes");
}

#[tokio::test]
async fn filesystem_reads_writes_and_refuses_outside() {
    if !servers_ready("filesystem_reads_writes_and_refuses_outside") {
        return;
    }
    let outside = tempfile::tempdir().expect("temp dir");
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "outside").expect("write");
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::write(root.join("notes.txt"), "first line\nsecond line\n").expect("write");
    let server = filesystem(&root).await;
    assert_eq!(server.interfaces(&CallContext::new()).len(), 14);
    assert!(
        server.stderr_tail().contains("running on stdio"),
        "the server's stderr is captured: {:?}",
        server.stderr_tail()
    );
    let registry = Registry::new();
    registry.register(server).expect("registers");

    let root_text = root.display().to_string();
    let call = |text: String| {
        let registry = &registry;
        async move { registry.execute_response(&text).await }
    };
    let listed = call(format!("@fs.list_directory(path={root_text:?})")).await;
    assert_eq!(
        listed.calls[0].result,
        Ok(json!("[FILE] notes.txt")),
        "{}",
        listed.output
    );
    let read = call(format!(
        "@fs.read_text_file(path={:?})",
        root.join("notes.txt")
    ))
    .await;
    assert_eq!(read.calls[0].result, Ok(json!("first line\nsecond line\n")));
    let written = call(format!(
        "@fs.write_file(path={:?}, content=\"made by a call\")",
        root.join("new.txt")
    ))
    .await;
    assert!(!written.calls[0].is_error(), "{}", written.output);
    assert_eq!(
        std::fs::read_to_string(root.join("new.txt")).expect("written"),
        "made by a call"
    );

    for attempt in [
        format!("@fs.read_text_file(path={secret:?})"),
        format!(
            "@fs.read_text_file(path={:?})",
            root.join("../")
                .join(outside.path().file_name().expect("name"))
                .join("secret.txt")
        ),
        format!("@fs.write_file(path={secret:?}, content=\"overwritten\")"),
    ] {
        let refused = call(attempt.clone()).await;
        let error = refused.calls[0]
            .result
            .clone()
            .expect_err(&attempt)
            .to_string();
        assert!(error.contains("Access denied"), "{attempt}: {error}");
    }
    assert_eq!(std::fs::read_to_string(&secret).expect("read"), "outside");
    registry.close().await.expect("closes");
}

#[tokio::test]
async fn close_ends_the_server() {
    if !servers_ready("close_ends_the_server") {
        return;
    }
    let server = everything().await;
    let pid = server.pid().expect("a pid");
    assert!(process_alive(pid));
    server.close().await.expect("closes");
    assert!(
        !process_alive(pid),
        "the server process {pid} is still running"
    );
    let after = server
        .call(
            "echo",
            Map::from_iter([("message".into(), json!("hi"))]),
            &CallContext::new(),
        )
        .await
        .expect_err("closed");
    assert!(after.to_string().contains("shut down"), "{after}");
    // Closing twice is fine.
    server.close().await.expect("closes again");
}

#[tokio::test]
async fn drop_kills_the_server() {
    if !servers_ready("drop_kills_the_server") {
        return;
    }
    let server = everything().await;
    let pid = server.pid().expect("a pid");
    drop(server);
    assert!(
        wait_until_gone(pid).await,
        "the server process {pid} outlived its box"
    );
}

#[tokio::test]
async fn bad_commands_fail_clearly() {
    if !servers_ready("bad_commands_fail_clearly") {
        return;
    }
    let env = BTreeMap::new();
    let missing = ["atfunc-no-such-mcp-server".to_owned(), "--stdio".to_owned()];
    let error = McpBox::spawn("ghost", &missing, &env)
        .await
        .expect_err("no such program")
        .to_string();
    assert!(
        error.contains("'ghost'") && error.contains("`atfunc-no-such-mcp-server --stdio`"),
        "{error}"
    );

    let error = McpBox::spawn("empty", &[], &env)
        .await
        .expect_err("empty")
        .to_string();
    assert!(error.contains("empty"), "{error}");

    let dies = [
        "node",
        "-e",
        "console.error('no config found'); process.exit(3)",
    ]
    .map(String::from);
    let error = McpBox::spawn("dies", &dies, &env)
        .await
        .expect_err("exits at once")
        .to_string();
    assert!(
        error.contains("failed to start") && error.contains("no config found"),
        "{error}"
    );
    assert!(error.contains("`node -e "), "{error}");

    let silent = ["node", "-e", "setInterval(() => {}, 1000)"].map(String::from);
    let mut options = McpOptions::default();
    options.startup_timeout = Duration::from_millis(1500);
    let error = McpBox::spawn_with("silent", &silent, &env, &options)
        .await
        .expect_err("never answers")
        .to_string();
    assert!(error.contains("did not answer within 1.5s"), "{error}");
}

#[test]
fn a_box_outliving_its_runtime_drops_quietly() {
    if !servers_ready("a_box_outliving_its_runtime_drops_quietly") {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let server = runtime.block_on(everything());
    let pid = server.pid().expect("a pid");
    drop(runtime);
    drop(server);
    let gone = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        !process_alive(pid)
    });
    assert!(
        gone,
        "the server process {pid} outlived its runtime and box"
    );
}

#[tokio::test]
async fn a_config_time_limit_stops_a_slow_server_tool_and_the_box_stays_usable() {
    if !servers_ready("a_config_time_limit_stops_a_slow_server_tool_and_the_box_stays_usable") {
        return;
    }
    let config = json!({"toolboxes": [{"name": "everything", "kind": "mcp", "timeout_ms": 300,
        "command": server_command("server-everything", &["stdio"])}]});
    let registry = atfunc_tools::config::Config::from_text(&config.to_string(), ".")
        .unwrap()
        .build()
        .await
        .unwrap();
    let report = registry
        .execute_response(
            "@everything.trigger_long_running_operation(duration=20, steps=2)\n\
             @everything.echo(message=\"still here\")",
        )
        .await;
    assert_eq!(report.call_count, 2);
    let slow = report.calls[0].result.as_ref().unwrap_err().to_string();
    assert!(slow.contains("did not finish within 300ms"), "{slow}");
    assert_eq!(
        report.calls[1].result.as_ref().unwrap(),
        &json!("Echo: still here")
    );
    registry.close().await.unwrap();
}
