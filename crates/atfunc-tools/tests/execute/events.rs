//! Call events: every call, run or refused, is seen as `start` then `success` or `error`,
//! by a hook on the registry, whether the answer arrives whole or in chunks.

use atfunc::{Interface, Param, ParamType};
use atfunc_tools::{CallEvent, CallEventKind, FnBox, Registry, ToolError};
use serde_json::json;
use std::sync::{Arc, Mutex};

fn watched() -> (Registry, Arc<Mutex<Vec<CallEvent>>>) {
    let registry = Registry::new();
    let tools = FnBox::new("t")
        .function(
            Interface::new("echo")
                .in_domain("t")
                .param(Param::new("text", ParamType::String).required()),
            |args, _| Ok(json!(args.get::<String>("text")?)),
        )
        .function(Interface::new("fail").in_domain("t"), |_, _| {
            Err(ToolError::msg("the disk is full"))
        });
    registry.register(tools).expect("registers");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    registry.on_event(move |event| sink.lock().expect("lock").push(event.clone()));
    (registry, seen)
}

const ANSWER: &str =
    r#"One @T.Echo(text="hi"), then @t.fail(), @t.nope() and @t.echo(txt="x"). Done."#;

/// The events without their durations, which differ from run to run.
type Shape = (
    CallEventKind,
    String,
    String,
    Option<String>,
    Option<String>,
);

fn shape(events: &[CallEvent]) -> Vec<Shape> {
    events
        .iter()
        .map(|e| {
            assert_eq!(
                e.duration_ms.is_some(),
                e.event != CallEventKind::Start,
                "{e:?}"
            );
            (
                e.event,
                e.call_id.clone(),
                e.name.clone(),
                e.function.clone(),
                e.error.clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn every_call_is_seen_run_or_refused() {
    let (registry, seen) = watched();
    registry.execute_response(ANSWER).await;
    let events = shape(&seen.lock().expect("lock"));
    use CallEventKind::*;
    let kinds: Vec<CallEventKind> = events.iter().map(|e| e.0).collect();
    assert_eq!(
        kinds,
        [Start, Success, Start, Error, Start, Error, Start, Error]
    );
    assert_eq!(events[0].2, "T.Echo");
    assert_eq!(events[0].3.as_deref(), Some("t.echo"));
    assert_eq!(events[0].1, events[1].1);
    assert_eq!(events[3].4.as_deref(), Some("the disk is full"));
    assert_eq!(events[3].3.as_deref(), Some("t.fail"));
    // Refused before running: the bind error's text, and no function when the name
    // resolved to none.
    assert_eq!(events[5].3, None);
    assert!(
        events[5]
            .4
            .as_deref()
            .is_some_and(|t| t.starts_with("Unknown function 't.nope'")),
        "{events:?}"
    );
    assert!(
        events[7]
            .4
            .as_deref()
            .is_some_and(|t| t.contains("Unknown parameter 'txt'")),
        "{events:?}"
    );
    // Refused, but the name resolved: the function is named.
    assert_eq!(events[6].3.as_deref(), Some("t.echo"));
    assert_eq!(events[7].3.as_deref(), Some("t.echo"));

    // Fed in 1-byte and 3-byte chunks, the same events.
    for size in [1, 3] {
        let (registry, chunked) = watched();
        let mut stream = registry.stream();
        for chunk in ANSWER.as_bytes().chunks(size) {
            stream.feed(chunk).await;
        }
        stream.finish().await;
        assert_eq!(
            shape(&chunked.lock().expect("lock")),
            events,
            "{size}-byte chunks"
        );
    }
}

#[tokio::test]
async fn direct_calls_are_seen_and_the_hook_can_be_removed() {
    let (registry, seen) = watched();
    registry
        .call("t.echo", json!({"text": "a"}))
        .await
        .expect("runs");
    registry.call("t.echo", json!({})).await.unwrap_err();
    let events = shape(&seen.lock().expect("lock"));
    let kinds: Vec<CallEventKind> = events.iter().map(|e| e.0).collect();
    assert_eq!(
        kinds,
        [
            CallEventKind::Start,
            CallEventKind::Success,
            CallEventKind::Start,
            CallEventKind::Error
        ]
    );
    assert!(events[3]
        .4
        .as_deref()
        .is_some_and(|t| t.contains("Missing required parameter")));
    assert_eq!(events[3].3.as_deref(), Some("t.echo"));
    registry.clear_event_hook();
    registry
        .call("t.echo", json!({"text": "a"}))
        .await
        .expect("runs");
    assert_eq!(seen.lock().expect("lock").len(), 4);
}

#[tokio::test]
async fn a_registry_runs_a_parameters_own_parser() {
    let (registry, _) = watched();
    let err = registry.set_parser("t.ecko", "text", Ok).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Unknown function 't.ecko': did you mean 't.echo'?"
    );
    registry
        .set_parser("t.echo", "text", |value| match value.as_str() {
            Some("") => Err("write some text".to_owned()),
            other => Ok(json!(other.unwrap_or_default().trim())),
        })
        .expect("a parameter");
    assert_eq!(
        registry
            .call("t.echo", json!({"text": " hi "}))
            .await
            .expect("runs"),
        "hi"
    );
    let report = registry.execute_response(r#"@t.echo(text="")"#).await;
    assert!(
        report
            .output
            .contains("Invalid value for parameter 'text' of function 't.echo': write some text"),
        "{}",
        report.output
    );
}

/// A call dropped while it runs (its stream, its future, the task that polled it) ends
/// with `cancelled`: every `start` gets one end, so spans a hook opens are closed.
#[tokio::test]
async fn a_call_dropped_while_running_ends_cancelled() {
    use futures::{FutureExt, StreamExt};
    let (registry, seen) = watched();
    registry
        .register(
            FnBox::new("wait")
                .async_function(Interface::new("forever").in_domain("wait"), |_, _| {
                    std::future::pending::<Result<serde_json::Value, ToolError>>()
                }),
        )
        .expect("registers");
    let kinds = |seen: &Arc<Mutex<Vec<CallEvent>>>| -> Vec<CallEventKind> {
        let events = seen.lock().expect("lock");
        shape(&events).into_iter().map(|e| e.0).collect()
    };
    use CallEventKind::*;
    // A stream fed a chunk, its future polled once and dropped while the tool runs.
    let mut stream = registry.stream();
    assert!(stream.feed_str("@wait.forever() ").now_or_never().is_none());
    assert_eq!(kinds(&seen), [Start, Cancelled]);
    // The outcome stream of `run`, dropped with a call running.
    seen.lock().expect("lock").clear();
    let input = futures::stream::iter([Ok::<_, std::io::Error>("@t.echo(\"a\") @wait.forever()")]);
    let mut outcomes = registry.stream().run(input);
    let first = outcomes
        .next()
        .await
        .expect("an outcome")
        .expect("no input error");
    assert_eq!(first.result, Ok(json!("a")));
    assert!(outcomes.next().now_or_never().is_none());
    drop(outcomes);
    assert_eq!(kinds(&seen), [Start, Success, Start, Cancelled]);
    // A direct call dropped midway.
    seen.lock().expect("lock").clear();
    let call = registry.call("wait.forever", json!({}));
    assert!(call.now_or_never().is_none());
    assert_eq!(kinds(&seen), [Start, Cancelled]);
    let events = seen.lock().expect("lock");
    assert_eq!(events[0].call_id, events[1].call_id);
    assert_eq!(events[1].error, None);
}

/// A tool that waits until its call is cancelled, then finishes its write and says so.
fn careful_writer(
    domain: &str,
    done: Arc<Mutex<Option<tokio::sync::oneshot::Sender<&'static str>>>>,
) -> FnBox {
    FnBox::new(domain).async_function(Interface::new("write").in_domain(domain), move |_, ctx| {
        let done = Arc::clone(&done);
        async move {
            ctx.cancellation().cancelled().await;
            // Stops where stopping is safe: the write is finished, not cut midway.
            if let Some(done) = done.lock().expect("lock").take() {
                let _ = done.send("finished after the cancel");
            }
            Ok(json!("written"))
        }
    })
}

/// A call's context carries a cancellation token: the caller's cancel reaches a running
/// tool, and a call whose stream is dropped sees its own token cancelled; with
/// `finish_started_calls` it runs on to its end instead of being cut off.
#[tokio::test]
async fn a_call_sees_its_cancellation_and_may_finish() {
    use atfunc_tools::{CallContext, CancellationToken};
    use futures::FutureExt;
    // The caller cancels its token while the call runs: the tool sees it and ends.
    let registry = Registry::new();
    let (tx, rx) = tokio::sync::oneshot::channel();
    registry
        .register(careful_writer("w", Arc::new(Mutex::new(Some(tx)))))
        .expect("registers");
    let token = CancellationToken::new();
    let ctx = CallContext::new().with_cancellation(token.clone());
    let running = registry.execute_response_with("@w.write()", &ctx);
    let (report, _) = futures::join!(running, async {
        tokio::task::yield_now().await;
        token.cancel();
    });
    assert_eq!(report.calls[0].result, Ok(json!("written")));
    assert_eq!(rx.await, Ok("finished after the cancel"));

    // A stream dropped while the call runs: by default the call is dropped with it, and
    // what it would have done after the cancel never happens.
    let registry = Registry::new();
    let (tx, _rx) = tokio::sync::oneshot::channel();
    let slot = Arc::new(Mutex::new(Some(tx)));
    registry
        .register(careful_writer("w", Arc::clone(&slot)))
        .expect("registers");
    let mut stream = registry.stream();
    assert!(stream.feed_str("@w.write() ").now_or_never().is_none());
    tokio::task::yield_now().await;
    assert!(
        slot.lock().expect("lock").is_some(),
        "the call was dropped midway"
    );

    // With `finish_started_calls`, the call sees its token cancelled and runs to its end.
    let (tx, rx) = tokio::sync::oneshot::channel();
    registry
        .register(careful_writer("w2", Arc::new(Mutex::new(Some(tx)))))
        .expect("registers");
    let ctx = CallContext::new().finish_started_calls();
    let mut stream = registry.stream_with(&ctx);
    assert!(stream.feed_str("@w2.write() ").now_or_never().is_none());
    drop(stream);
    assert_eq!(rx.await, Ok("finished after the cancel"));
}
