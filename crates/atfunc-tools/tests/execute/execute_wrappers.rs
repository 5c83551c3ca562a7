//! Wrappers around tool boxes: hooks, conditions, scopes, timeouts, recording and replay.

use atfunc::{Interface, Param, ParamType};
use atfunc_tools::{
    CallContext, FnBox, RecordedCall, RecordedOutcome, Registry, RegistryPrompt, Replay, Scope,
    ToolBox, ToolBoxExt, ToolError, ToolEvent, ToolHandler,
};
use serde_json::{json, Map, Value};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn tool(name: &str) -> Interface {
    Interface::new(name)
        .in_domain("t")
        .describe("A test tool")
        .param(Param::new("x", ParamType::Integer).describe("A number"))
}

/// A box whose calls are counted, so a test can tell whether anything really ran.
fn counted(calls: &Arc<AtomicUsize>) -> FnBox {
    let (a, b, c) = (Arc::clone(calls), Arc::clone(calls), Arc::clone(calls));
    FnBox::new("t")
        .function(tool("double"), move |args, _| {
            a.fetch_add(1, Ordering::SeqCst);
            Ok(json!(args.opt::<i64>("x")?.unwrap_or(0) * 2))
        })
        .function(tool("fail"), move |_, _| {
            b.fetch_add(1, Ordering::SeqCst);
            Err(ToolError::msg("x must be positive"))
        })
        .async_function(tool("slow"), move |_, _| {
            let c = Arc::clone(&c);
            async move {
                c.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(2)).await;
                Ok(json!("slept"))
            }
        })
}

fn args(x: i64) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("x".into(), json!(x));
    map
}

#[derive(Default)]
struct Log(Mutex<Vec<String>>);

impl ToolHandler for Log {
    fn on_start(&self, event: &ToolEvent<'_>) {
        self.0.lock().unwrap().push(format!(
            "start {} {}.{} {}",
            event.call_id,
            event.toolbox,
            event.function,
            Value::Object(event.args.clone())
        ));
    }

    fn on_success(&self, event: &ToolEvent<'_>, result: &Value, elapsed: Duration) {
        self.0.lock().unwrap().push(format!(
            "success {} {result} {}s",
            event.call_id,
            elapsed.as_secs()
        ));
    }

    fn on_error(&self, event: &ToolEvent<'_>, error: &ToolError, elapsed: Duration) {
        self.0.lock().unwrap().push(format!(
            "error {} {error} {}s",
            event.call_id,
            elapsed.as_secs()
        ));
    }
}

#[tokio::test(start_paused = true)]
async fn hooks_see_start_success_and_error_with_ids_and_durations() {
    let calls = Arc::new(AtomicUsize::new(0));
    let log = Arc::new(Log::default());
    let panicking = FnBox::new("p").function(
        Interface::new("boom").in_domain("p").describe("Panics"),
        |_, _| panic!("kaboom"),
    );
    let registry = Registry::new();
    registry
        .register(counted(&calls).hooked(Arc::clone(&log)))
        .unwrap();
    registry
        .register(panicking.hooked(Arc::clone(&log)))
        .unwrap();
    let report = registry
        .execute_response("@t.double(4) @t.fail() @t.slow() @p.boom() @t.double(1)")
        .await;
    assert_eq!(report.call_count, 5);
    assert_eq!(
        *log.0.lock().unwrap(),
        [
            "start call_1 t.double {\"x\":4}",
            "success call_1 8 0s",
            "start call_2 t.fail {}",
            "error call_2 x must be positive 0s",
            "start call_3 t.slow {}",
            "success call_3 \"slept\" 2s",
            "start call_4 p.boom {}",
            "error call_4 Function 'p.boom' failed unexpectedly (kaboom); the call had no effect you can rely on 0s",
            "start call_5 t.double {\"x\":1}",
            "success call_5 2 0s",
        ]
    );
}

struct Admin;

#[tokio::test]
async fn conditions_hide_tools_from_the_prompt_and_from_calls() {
    let calls = Arc::new(AtomicUsize::new(0));
    let guarded = counted(&calls)
        .conditional(|interface, ctx| interface.name != "fail" || ctx.get::<Admin>().is_some());
    let registry = Registry::new();
    registry.register(guarded).unwrap();

    let user = CallContext::new();
    let admin = CallContext::new().with(Admin);
    assert!(!registry
        .prompt(&user, &RegistryPrompt::default())
        .contains("@t.fail("));
    assert!(registry
        .prompt(&admin, &RegistryPrompt::default())
        .contains("@t.fail("));
    assert_eq!(registry.toolbox_functions("t", &user).unwrap().len(), 2);

    let refused = registry.execute_response_with("@t.fail()", &user).await;
    assert!(refused.calls[0]
        .result
        .as_ref()
        .unwrap_err()
        .to_string()
        .starts_with("Unknown function 't.fail'"));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let allowed = registry.execute_response_with("@t.fail()", &admin).await;
    assert_eq!(
        allowed.calls[0].result,
        Err(ToolError::Failed("x must be positive".to_owned()))
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // The box itself refuses too, whoever calls it.
    let direct = counted(&calls).conditional(|i, _| i.name != "fail");
    assert_eq!(
        direct.call("fail", Map::new(), &user).await,
        Err(ToolError::NotAvailable {
            name: "t.fail".into()
        })
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_hidden_tool_is_refused_in_any_case_of_its_name() {
    // The closure box matches names ignoring case, so the condition must too.
    let calls = Arc::new(AtomicUsize::new(0));
    let direct = counted(&calls).conditional(|i, _| i.name != "fail");
    for name in ["FAIL", "Fail"] {
        assert_eq!(
            direct.call(name, Map::new(), &CallContext::new()).await,
            Err(ToolError::NotAvailable {
                name: "t.fail".into()
            }),
            "{name}"
        );
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(
        direct.call("DOUBLE", args(2), &CallContext::new()).await,
        Ok(json!(4))
    );
}

#[tokio::test]
async fn scoping_refuses_a_tool_disabled_after_the_model_saw_it() {
    let calls = Arc::new(AtomicUsize::new(0));
    let scope = Scope::all();
    let registry = Registry::new();
    registry
        .register(counted(&calls).scoped(scope.clone()))
        .unwrap();

    // The answer starts while `double` is offered...
    let mut stream = registry.stream();
    let first = stream.feed_str("@t.double(1) and ").await;
    assert_eq!(first[0].result, Ok(json!(2)));
    // ...then it is disabled mid-conversation: the call the model still writes is refused.
    scope.disable("DOUBLE");
    stream.feed_str("@t.double(2) then").await;
    let end = stream.finish().await;
    insta::assert_snapshot!(end.report.output, @"
    Function call: t.double(1)
    Returned: 2

    Function call: t.double(2)
    Returned: Error: Function 't.double' is not available now; do not call it again, use another function
    ");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(!registry
        .prompt(&CallContext::new(), &RegistryPrompt::default())
        .contains("@t.double("));

    scope.enable("double");
    scope.allow_only(["fail"]);
    assert!(!scope.allows("double"));
    assert!(scope.allows("FAIL"));
    let report = registry.execute_response("@t.double(3)").await;
    assert!(report.calls[0].is_error());
    scope.allow_all();
    let report = registry.execute_response("@t.double(3)").await;
    assert_eq!(report.calls[0].result, Ok(json!(6)));
    assert!(Scope::only(["a"]).allows("A"));
}

#[tokio::test(start_paused = true)]
async fn the_timeout_wrapper_stops_a_slow_call_and_says_the_limit() {
    let calls = Arc::new(AtomicUsize::new(0));
    let limited = counted(&calls).with_timeout(Duration::from_millis(1500));
    assert_eq!(
        limited
            .call("slow", Map::new(), &CallContext::new())
            .await
            .unwrap_err()
            .to_string(),
        "Function 't.slow' did not finish within 1.5s and was stopped; try again with a smaller request, or go on without it"
    );
    assert_eq!(
        limited.call("double", args(5), &CallContext::new()).await,
        Ok(json!(10))
    );
    let roomy = counted(&calls).with_timeout(Duration::from_secs(3));
    assert_eq!(
        roomy.call("slow", Map::new(), &CallContext::new()).await,
        Ok(json!("slept"))
    );
}

/// A writer whose bytes a test can read afterwards.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn replay_answers_from_a_recording_without_calling_anything() {
    let calls = Arc::new(AtomicUsize::new(0));
    let sink = Shared::default();
    let answer = "@t.double(2) @t.fail() @t.double(3) @t.double(2)";

    let live = Registry::new();
    live.register(atfunc_tools::Recording::new(counted(&calls), sink.clone()))
        .unwrap();
    let recorded = live.execute_response(answer).await;
    assert_eq!(calls.load(Ordering::SeqCst), 4);

    let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(
        lines[0],
        r#"{"call_id":"call_1","toolbox":"t","function":"double","args":{"x":2},"result":4}"#
    );
    assert_eq!(
        lines[1],
        r#"{"call_id":"call_2","toolbox":"t","function":"fail","args":{},"error":"x must be positive"}"#
    );

    let interfaces = counted(&calls).interfaces(&CallContext::new());
    let replay = Replay::from_jsonl("t", interfaces, text.as_bytes()).unwrap();
    let offline = Registry::new();
    offline.register(replay).unwrap();
    calls.store(0, Ordering::SeqCst);
    let replayed = offline.execute_response(answer).await;
    assert_eq!(calls.load(Ordering::SeqCst), 0, "replay ran a real tool");
    assert_eq!(replayed.output, recorded.output);

    // Answers are used up in order, the last one answering again; unrecorded calls fail.
    let again = offline.execute_response("@t.double(2) @t.double(9)").await;
    assert_eq!(again.calls[0].result, Ok(json!(4)));
    insta::assert_snapshot!(again.calls[1].block, @r#"
    Function call: t.double(9)
    Returned: Error: Function 't.double' was not called with these arguments in the recording: {"x":9}
    "#);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn replay_reads_records_and_reports_bad_lines() {
    let record = RecordedCall {
        call_id: "c".into(),
        toolbox: "t".into(),
        function: "double".into(),
        args: args(1),
        outcome: RecordedOutcome::Result(Value::Null),
        elements: Vec::new(),
    };
    let line = serde_json::to_string(&record).unwrap();
    assert_eq!(serde_json::from_str::<RecordedCall>(&line).unwrap(), record);
    let other_box = RecordedCall {
        toolbox: "u".into(),
        ..record.clone()
    };
    let replay = Replay::new("t", vec![tool("double")], vec![other_box]);
    assert!(matches!(
        replay.call("double", args(1), &CallContext::new()).await,
        Err(ToolError::NotRecorded { .. })
    ));
    let error = Replay::from_jsonl("t", Vec::new(), format!("{line}\n\nnot json\n").as_bytes())
        .unwrap_err();
    assert!(
        error.to_string().starts_with("line 3 of the recording"),
        "{error}"
    );
}

#[tokio::test]
async fn recording_survives_a_panicking_tool_and_a_failing_sink() {
    struct Broken;
    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk full"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let panicking = FnBox::new("p").function(
        Interface::new("boom").in_domain("p").describe("Panics"),
        |_, _| panic!("kaboom"),
    );
    let recording = atfunc_tools::Recording::new(panicking, Broken);
    let result = recording
        .call("boom", Map::new(), &CallContext::new())
        .await;
    assert!(matches!(result, Err(ToolError::Panicked { .. })));
    assert_eq!(recording.write_errors(), 1);
}

#[tokio::test]
async fn wrappers_stack_and_share() {
    let calls = Arc::new(AtomicUsize::new(0));
    let log = Arc::new(Log::default());
    let scope = Scope::all();
    let stacked = counted(&calls)
        .with_timeout(Duration::from_secs(10))
        .scoped(scope.clone())
        .hooked(Arc::clone(&log))
        .shared();
    assert_eq!(stacked.name(), "t");
    scope.disable("fail");
    let ctx = CallContext::new().for_call("outer", None);
    assert!(stacked.call("fail", Map::new(), &ctx).await.is_err());
    assert_eq!(stacked.call("double", args(2), &ctx).await, Ok(json!(4)));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(log.0.lock().unwrap()[0], "start outer t.fail {}");
    stacked.close().await.unwrap();
}

#[tokio::test]
async fn a_disabled_tool_is_refused_under_any_spelling_its_box_answers() {
    // The closure box matches names with Unicode case folding, where `STRASSE` is `straße`.
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let scope = Scope::all();
    let scoped = FnBox::new("t")
        .function(tool("straße"), move |_, _| {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(json!("ran"))
        })
        .scoped(scope.clone());
    scope.disable("straße");
    for name in ["straße", "STRASSE", "Strasse"] {
        assert_eq!(
            scoped.call(name, Map::new(), &CallContext::new()).await,
            Err(ToolError::NotAvailable {
                name: "t.straße".into()
            }),
            "{name}"
        );
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_recording_keeps_the_elements_and_a_replay_shows_them_again() {
    let showing = FnBox::new("t").function(tool("show"), |_args, ctx| {
        ctx.add_element(json!({"type": "card", "title": "live"}));
        Ok(json!("shown"))
    });
    let sink = Shared::default();
    let live = Registry::new();
    live.register(atfunc_tools::Recording::new(showing, sink.clone()))
        .unwrap();
    let recorded = live.execute_response("@t.show()").await;
    assert_eq!(
        recorded.calls[0].elements,
        [json!({"type": "card", "title": "live"})]
    );
    let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
    assert_eq!(
        text.trim_end(),
        r#"{"call_id":"call_1","toolbox":"t","function":"show","args":{},"result":"shown","elements":[{"type":"card","title":"live"}]}"#
    );

    let offline = Registry::new();
    let replay = Replay::from_jsonl("t", vec![tool("show")], text.as_bytes()).unwrap();
    offline.register(replay).unwrap();
    let replayed = offline.execute_response("@t.show()").await;
    assert_eq!(replayed.calls[0].elements, recorded.calls[0].elements);
    assert_eq!(replayed.output, recorded.output);
}
