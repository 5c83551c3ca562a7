//! The prompt's example call never runs as written, whatever the tool box: a small model
//! copies its example, values and all, so the example carries placeholders that the binder
//! refuses before any tool is reached. The MCP box's case is in `mcp.rs`, beside its
//! servers.

use atfunc::{BindError, Interface, Param, ParamType};
use atfunc_tools::{CallContext, FnBox, Registry, RegistryPrompt, ToolError};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The example line of the registry's prompt.
pub(crate) fn example_of(registry: &Registry) -> String {
    let prompt = registry.prompt(&CallContext::new(), &RegistryPrompt::default());
    let (_, rest) = prompt
        .split_once("for example:\n")
        .unwrap_or_else(|| panic!("the prompt has no example:\n{prompt}"));
    rest.lines().next().unwrap_or_default().to_owned()
}

/// Runs the registry's own example as a model's answer: its one call must be refused for
/// its placeholders alone, so no tool ran.
pub(crate) async fn assert_example_is_refused(registry: &Registry) -> String {
    let example = example_of(registry);
    let report = registry.execute_response(&example).await;
    assert_eq!(report.calls.len(), 1, "{example}: {}", report.output);
    let outcome = &report.calls[0];
    match &outcome.result {
        Err(ToolError::Bind(refused)) => {
            for problem in refused.problems() {
                assert!(
                    matches!(problem, BindError::Placeholder { .. }),
                    "{example}: {problem}"
                );
            }
        }
        other => panic!("{example} was not refused for its placeholders: {other:?}"),
    }
    assert!(
        report.output.contains("is a placeholder"),
        "{}",
        report.output
    );
    example
}

#[tokio::test]
async fn a_function_box_example_never_runs() {
    // The weakest case: one text parameter, which takes any word.
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let tools = FnBox::new("mail").function(
        Interface::new("send")
            .in_domain("mail")
            .param(Param::new("to", ParamType::String).required())
            .param(Param::new("body", ParamType::String)),
        move |_args, _ctx| {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok(json!("sent"))
        },
    );
    let registry = Registry::new();
    registry.register(tools).unwrap();
    let example = assert_example_is_refused(&registry).await;
    assert_eq!(example, r#"@mail.send("<to>", body="<body>")"#);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // The same call with values runs: the refusal is the placeholders', not the shape's.
    let report = registry
        .execute_response(r#"@mail.send("ann@example.com", body="hi")"#)
        .await;
    assert!(!report.calls[0].is_error(), "{}", report.output);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[cfg(feature = "file")]
#[tokio::test]
async fn a_file_box_example_never_runs() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("keep.txt"), "kept").unwrap();
    let registry = Registry::new();
    registry
        .register(atfunc_tools::FileBox::open(tmp.path()).unwrap())
        .unwrap();
    assert_example_is_refused(&registry).await;
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("keep.txt")).unwrap(),
        "kept"
    );
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
}

#[cfg(feature = "command")]
#[tokio::test]
async fn a_command_box_example_never_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let mark = tmp.path().join("ran");
    let script = format!("touch '{}'", mark.display());
    let interface = atfunc::load_interfaces_str(
        &json!([{"name": "shell.note", "parameters": {"type": "object",
            "properties": {"text": {"type": "string"}}, "required": ["text"]}}])
        .to_string(),
    )
    .unwrap()
    .remove(0);
    let registry = Registry::new();
    registry
        .register(
            atfunc_tools::CommandBox::new("shell")
                .function(interface, ["sh", "-c", script.as_str()]),
        )
        .unwrap();
    assert_example_is_refused(&registry).await;
    assert!(!mark.exists(), "the command ran");
}

#[cfg(feature = "http")]
#[tokio::test]
async fn an_http_box_example_never_runs() {
    // Nothing listens on the base URL: a request would fail as the tool's failure, not as
    // a refusal, so a refusal shows that none was made.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let interface = atfunc::load_interfaces_str(
        &json!([{"name": "api.create_user", "parameters": {"type": "object",
            "properties": {"username": {"type": "string"}, "email": {"type": "string"}},
            "required": ["username", "email"]}}])
        .to_string(),
    )
    .unwrap()
    .remove(0);
    let api = atfunc_tools::HttpBox::builder("api", base)
        .endpoint(interface, "POST", "/users")
        .build()
        .unwrap();
    let registry = Registry::new();
    registry.register(api).unwrap();
    assert_example_is_refused(&registry).await;
}

#[cfg(feature = "typed")]
#[tokio::test]
async fn a_typed_box_example_never_runs() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Lookup {
        /// The word to look up.
        word: String,
        /// How many senses to give.
        limit: Option<u32>,
    }
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let tools =
        atfunc_tools::typed::TypedBox::new("dictionary").function("lookup", move |args: Lookup| {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(format!("{} ({:?})", args.word, args.limit))
        });
    let registry = Registry::new();
    registry.register(tools).unwrap();
    assert_example_is_refused(&registry).await;
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_multi_box_example_never_runs() {
    let inner = FnBox::new("clock").function(
        Interface::new("in_zone")
            .in_domain("clock")
            .param(Param::new("zone", ParamType::String).required()),
        |_args, _ctx| Ok(json!("12:00")),
    );
    let tools = atfunc_tools::MultiBox::new("kit").with(inner);
    let registry = Registry::new();
    registry.register(tools).unwrap();
    assert_example_is_refused(&registry).await;
}

#[tokio::test]
async fn a_function_without_arguments_is_never_the_example() {
    // `@clock.now()` would run as written, so a function that takes a value is shown
    // instead, even one that reads worse as an example (four numbers, none of them text).
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let now = move |_args: atfunc_tools::Args, _ctx: CallContext| {
        counted.fetch_add(1, Ordering::SeqCst);
        Ok(json!("12:00"))
    };
    let mut span = Interface::new("span").in_domain("clock");
    for name in ["from_h", "from_m", "to_h", "to_m"] {
        span = span.param(Param::new(name, ParamType::Integer).required());
    }
    let tools = FnBox::new("clock")
        .function(Interface::new("now").in_domain("clock"), now.clone())
        .function(span, |_args, _ctx| Ok(json!(0)));
    let registry = Registry::new();
    registry.register(tools).unwrap();
    let example = assert_example_is_refused(&registry).await;
    assert!(example.starts_with("@clock.span("), "{example}");

    // When no function takes a value, the example calls a made-up one, named as no listed
    // function is (a box named "domain" lists `domain.function_name`), refused as unknown.
    let cases: [(&str, &[&str], &str); 2] = [
        ("clock", &["now"], "@domain.function_name"),
        (
            "domain",
            &["now", "function_name", "Function_Name2"],
            "@domain.function_name3",
        ),
    ];
    for (box_name, listed, name) in cases {
        let mut tools = FnBox::new(box_name);
        for function in listed {
            tools = tools.function(Interface::new(*function), now.clone());
        }
        let registry = Registry::new();
        registry.register(tools).unwrap();
        let example = example_of(&registry);
        assert_eq!(example, format!(r#"{name}("<text>", number=<number>)"#));
        let report = registry.execute_response(&example).await;
        assert!(
            matches!(
                report.calls[0].result,
                Err(ToolError::UnknownFunction { .. })
            ),
            "{example}: {}",
            report.output
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}
