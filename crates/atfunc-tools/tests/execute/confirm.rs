//! Calls held for the user's confirmation: what the model is told, confirming, rejecting,
//! expiry, the bound on waiting calls, confirmers, and the events, whether the answer
//! arrives whole or in chunks.

use atfunc::format::truncate_text;
use atfunc::{format_results, CallRecord, Interface, Param, ParamType};
use atfunc_tools::async_trait;
use atfunc_tools::{
    held_result, CallEvent, CallEventKind, ConfirmError, Confirmer, Decision, FnBox, HeldCall,
    HoldLimits, Outcome, OutcomeState, RegisterError, Registry, ToolError,
};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A registry with `files.delete` (counts its runs), `files.list` and `notes.add`.
fn registry() -> (Registry, Arc<AtomicUsize>) {
    let registry = Registry::new();
    let deleted = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&deleted);
    let files = FnBox::new("files")
        .function(
            Interface::new("delete")
                .in_domain("files")
                .param(Param::new("path", ParamType::String).required()),
            move |args, _| {
                count.fetch_add(1, Ordering::SeqCst);
                Ok(json!(format!("deleted {}", args.get::<String>("path")?)))
            },
        )
        .function(Interface::new("list").in_domain("files"), |_, _| {
            Ok(json!(["a.txt"]))
        });
    registry.register(files).expect("registers");
    registry
        .register(
            FnBox::new("notes").function(
                Interface::new("add")
                    .in_domain("notes")
                    .param(Param::new("text", ParamType::String).required()),
                |args, _| Ok(json!(args.get::<String>("text")?.len())),
            ),
        )
        .expect("registers");
    (registry, deleted)
}

fn held_id(outcome: &Outcome) -> String {
    outcome.confirmation_id.clone().expect("held")
}

const ANSWER: &str =
    r#"Clean up: @files.list() then @Files.Delete("secret plans.txt") and @notes.add("done")."#;

#[tokio::test]
async fn a_held_call_does_not_run_and_the_model_sees_only_its_status_and_id() {
    let (registry, deleted) = registry();
    registry
        .require_confirmation("files.delete")
        .expect("a function");
    let report = registry.execute_response(ANSWER).await;
    assert_eq!(deleted.load(Ordering::SeqCst), 0);
    let [list, delete, add] = &report.calls[..] else {
        panic!("{report:?}")
    };
    assert_eq!(list.confirmation_id, None);
    assert_eq!(add.result, Ok(json!(4)));
    let id = held_id(delete);
    assert!(matches!(
        &delete.result,
        Err(ToolError::Held { name, confirmation_id }) if name == "files.delete" && *confirmation_id == id
    ));
    assert_eq!(
        delete.to_json(),
        json!({"name": "files.delete", "args": {"path": "secret plans.txt"}, "state": "held", "confirmation_id": id})
    );
    // Never the arguments: the block shows the call as written and the status alone.
    let returned = delete.block.lines().nth(1).expect("a Returned line");
    assert_eq!(
        returned,
        format!(
            r#"Returned: {{"executed":false,"status":"confirmation_required","confirmation_id":"{id}"}}"#
        )
    );
    assert!(!returned.contains("secret"));
    // The host sees the call to show the user.
    let held = registry.held_calls();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].confirmation_id, id);
    assert_eq!(held[0].function, "files.delete");
    assert_eq!(held[0].name, "Files.Delete");
    assert_eq!(held[0].args["path"], "secret plans.txt");

    assert_eq!(
        registry.confirm(&id).await,
        Ok(json!("deleted secret plans.txt"))
    );
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
    assert!(registry.held_calls().is_empty());
    let again = registry.confirm(&id).await.unwrap_err();
    assert_eq!(again, ConfirmError::Unknown { id: id.clone() });
    assert_eq!(
        again.to_string(),
        format!("no call waits for confirmation under the id '{id}' (it was confirmed or rejected already, or never held)")
    );
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_same_in_chunks_of_every_size() {
    let (whole_registry, _) = registry();
    whole_registry.require_confirmation("files").expect("a box");
    let whole = whole_registry.execute_response(ANSWER).await;
    let masked = |calls: &[Outcome]| -> Vec<(String, Result<Value, String>, bool)> {
        calls
            .iter()
            .map(|o| {
                let result = match &o.result {
                    Err(ToolError::Held { .. }) => {
                        let mut value = o.to_json();
                        value["confirmation_id"] = json!("ID");
                        Ok(value)
                    }
                    Ok(value) => Ok(value.clone()),
                    Err(e) => Err(e.to_string()),
                };
                (o.name.clone(), result, o.confirmation_id.is_some())
            })
            .collect()
    };
    let expected = masked(&whole.calls);
    // The whole box needs confirmation: both of its calls are held.
    let held: Vec<bool> = expected.iter().map(|c| c.2).collect();
    assert_eq!(held, [true, true, false]);
    for size in [1, 3, 7] {
        let (registry, _) = registry();
        registry.require_confirmation("FILES").expect("a box");
        let mut stream = registry.stream();
        for chunk in ANSWER.as_bytes().chunks(size) {
            stream.feed(chunk).await;
        }
        let report = stream.finish().await.report;
        assert_eq!(masked(&report.calls), expected, "{size}-byte chunks");
        assert_eq!(registry.held_calls().len(), 2);
    }
}

#[tokio::test]
async fn rejected_calls_are_dropped_and_unknown_names_refused() {
    let (registry, deleted) = registry();
    let missing = registry.require_confirmation("files.shred").unwrap_err();
    assert_eq!(
        missing,
        RegisterError::NotFound {
            name: "files.shred".into()
        }
    );
    assert_eq!(
        missing.to_string(),
        "no toolbox or function named 'files.shred' is registered"
    );
    // The control functions never wait.
    assert!(registry
        .require_confirmation("tools.get_functions")
        .is_err());
    registry.require_confirmation("files.delete").expect("ok");
    let report = registry
        .execute_response(r#"@files.delete("a") @files.delete("b")"#)
        .await;
    let (a, b) = (held_id(&report.calls[0]), held_id(&report.calls[1]));
    assert_ne!(a, b);
    let dropped = registry.reject(&a).expect("held");
    assert_eq!(dropped.args["path"], "a");
    assert!(matches!(
        registry.confirm(&a).await,
        Err(ConfirmError::Unknown { .. })
    ));
    assert!(matches!(
        registry.reject(&a),
        Err(ConfirmError::Unknown { .. })
    ));
    assert_eq!(registry.confirm(&b).await, Ok(json!("deleted b")));
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn held_calls_expire_and_are_bounded() {
    let (registry, deleted) = registry();
    registry.require_confirmation("files.delete").expect("ok");
    registry.set_hold_limits(
        HoldLimits::default()
            .with_expire_after(Duration::from_millis(100))
            .with_max_held(2),
    );
    let report = registry
        .execute_response(r#"@files.delete("a") @files.delete("b") @files.delete("c")"#)
        .await;
    // The third is neither run nor kept: the two waiting stay as they were.
    let third = &report.calls[2];
    assert_eq!(third.confirmation_id, None);
    assert_eq!(
        third.result,
        Err(ToolError::HoldLimit {
            name: "files.delete".into(),
            limit: 2
        })
    );
    assert_eq!(
        third.block.lines().nth(1),
        Some("Returned: Error: Function 'files.delete' needs the user's confirmation, and 2 calls wait for it already; this call was not run or kept. Wait for the user before calling it again")
    );
    assert_eq!(registry.held_calls().len(), 2);
    let first = held_id(&report.calls[0]);
    tokio::time::sleep(Duration::from_millis(150)).await;
    let expired = registry.confirm(&first).await.unwrap_err();
    assert!(
        matches!(expired, ConfirmError::Expired { .. }),
        "{expired:?}"
    );
    assert_eq!(
        expired.to_string(),
        format!("the call of 'files.delete' held under '{first}' expired after 100ms without being confirmed; it did not run")
    );
    assert!(registry.held_calls().is_empty());
    assert_eq!(deleted.load(Ordering::SeqCst), 0);
    // Room again.
    let report = registry.execute_response(r#"@files.delete("d")"#).await;
    assert!(report.calls[0].confirmation_id.is_some());
}

/// Declines paths that start with a dot, runs the others, and notes what it saw.
struct Policy(Mutex<Vec<HeldCall>>);

#[async_trait]
impl Confirmer for Policy {
    async fn decide(&self, call: &HeldCall) -> Decision {
        self.0.lock().expect("lock").push(call.clone());
        let path = call.args["path"].as_str().unwrap_or_default();
        if path.starts_with('.') {
            Decision::Decline
        } else {
            Decision::Run
        }
    }
}

#[tokio::test]
async fn a_confirmer_decides_as_calls_come() {
    let (registry, deleted) = registry();
    registry.require_confirmation("files.delete").expect("ok");
    let policy = Arc::new(Policy(Mutex::new(Vec::new())));
    registry.set_confirmer(Arc::clone(&policy));
    let report = registry
        .execute_response(r#"@files.delete("a.txt") @files.delete(".env")"#)
        .await;
    assert_eq!(report.calls[0].result, Ok(json!("deleted a.txt")));
    assert_eq!(
        report.calls[1].result,
        Err(ToolError::Declined {
            name: "files.delete".into()
        })
    );
    assert_eq!(
        report.calls[1].block.lines().nth(1),
        Some("Returned: Error: The user declined this call of 'files.delete'; it did not run. Do not call it again unless the user asks for it")
    );
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
    assert!(registry.held_calls().is_empty());
    {
        let seen = policy.0.lock().expect("lock");
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[1].call_id, report.calls[1].call_id);
    }

    // A fixed decision is a confirmer too; clearing it holds again.
    registry.set_confirmer(Decision::Run);
    let report = registry.execute_response(r#"@files.delete(".x")"#).await;
    assert_eq!(report.calls[0].result, Ok(json!("deleted .x")));
    registry.clear_confirmer();
    let report = registry.execute_response(r#"@files.delete(".x")"#).await;
    assert!(report.calls[0].confirmation_id.is_some());
}

fn kinds(events: &[CallEvent]) -> Vec<CallEventKind> {
    events.iter().map(|e| e.event).collect()
}

#[tokio::test]
async fn events_say_held_then_the_confirmed_run() {
    let (registry, _) = registry();
    registry.require_confirmation("files.delete").expect("ok");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    registry.on_event(move |event| sink.lock().expect("lock").push(event.clone()));
    let report = registry
        .execute_response(r#"@files.delete("a") @files.delete("b")"#)
        .await;
    let (a, b) = (held_id(&report.calls[0]), held_id(&report.calls[1]));
    use CallEventKind::*;
    {
        let events = seen.lock().expect("lock");
        assert_eq!(kinds(&events), [Start, Held, Start, Held]);
        assert_eq!(events[1].confirmation_id.as_deref(), Some(a.as_str()));
        assert_eq!(events[1].function.as_deref(), Some("files.delete"));
        assert!(events[1].duration_ms.is_some());
        let line = serde_json::to_value(&events[1]).expect("json");
        assert_eq!(line["event"], "held");
        assert_eq!(line["confirmation_id"], a.as_str());
    }
    registry.confirm(&a).await.expect("runs");
    registry.reject(&b).expect("held");
    let events = seen.lock().expect("lock");
    assert_eq!(
        kinds(&events),
        [Start, Held, Start, Held, Start, Success, Error]
    );
    // The run and the rejection carry the calls' first ids.
    assert_eq!(events[4].call_id, events[0].call_id);
    assert_eq!(events[5].call_id, events[0].call_id);
    assert_eq!(events[6].call_id, events[2].call_id);
    assert!(events[6]
        .error
        .as_deref()
        .is_some_and(|e| e.starts_with("The user declined")));
}

#[tokio::test]
async fn a_stream_has_events_of_its_own() {
    let (registry, _) = registry();
    let global = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&global);
    registry.on_event(move |event| sink.lock().expect("lock").push(event.clone()));
    let own = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&own);
    let mut stream = registry
        .stream()
        .on_event(move |event: &CallEvent| sink.lock().expect("lock").push(event.clone()));
    stream.feed_str("@files.list()").await;
    stream.finish().await;
    // Another answer is not this stream's.
    registry.execute_response("@files.list()").await;
    assert_eq!(own.lock().expect("lock").len(), 2);
    assert_eq!(global.lock().expect("lock").len(), 4);
}

/// A call confirmed later shows the client what it would have shown had it run at once.
#[tokio::test]
async fn a_confirmed_call_gives_its_elements_beside_its_value() {
    let registry = Registry::new();
    registry
        .register(
            FnBox::new("ui").function(Interface::new("publish").in_domain("ui"), |_, ctx| {
                ctx.add_element(json!({"type": "card", "title": "Published"}));
                Ok(json!("published"))
            }),
        )
        .expect("registers");
    registry.require_confirmation("ui").expect("a box");
    let report = registry
        .execute_response("@ui.publish() @ui.publish()")
        .await;
    // Held, nothing ran: nothing shown.
    assert!(report.calls.iter().all(|call| call.elements.is_empty()));
    let first = held_id(&report.calls[0]);
    let output = registry.confirm_output(&first).await.expect("runs");
    assert_eq!(output.value, json!("published"));
    assert_eq!(
        output.elements,
        [json!({"type": "card", "title": "Published"})]
    );
    // `confirm` gives the value alone.
    let second = held_id(&report.calls[1]);
    assert_eq!(registry.confirm(&second).await, Ok(json!("published")));
}

#[tokio::test]
async fn a_held_call_has_a_state_of_its_own() {
    let (registry, _) = registry();
    registry.require_confirmation("files.delete").expect("ok");
    let report = registry
        .execute_response(r#"@files.list() @Files.Delete("secret plans.txt") @notes.add()"#)
        .await;
    let [list, delete, add] = &report.calls[..] else {
        panic!("{report:?}")
    };
    let id = held_id(delete);
    assert_eq!(list.state(), OutcomeState::Returned);
    assert_eq!(
        delete.state(),
        OutcomeState::Held {
            confirmation_id: &id
        }
    );
    assert_eq!(add.state(), OutcomeState::Failed);
    assert!(delete.is_held() && !list.is_held() && !add.is_held());
    // Held has no value and is no failure; what the model reads is what it always was.
    assert!(delete.is_error() && !delete.is_failed() && add.is_failed());
    assert!(matches!(delete.result, Err(ToolError::Held { .. })));
    assert!(delete.block.contains(&held_result(&id).to_string()));
}

/// A held call did not run, so no natural check may read it as done: its `result` is no
/// value, `is_error()` is true, and the README's `if outcome.is_error() {"failed"} else
/// {"done"}` does not say "done", and its JSON (`exec --json`, Python) has no `result`
/// either but the state at the top level. What the model reads stays the status object.
#[tokio::test]
async fn a_held_call_does_not_look_done() {
    let (registry, deleted) = registry();
    registry.require_confirmation("files.delete").expect("ok");
    let report = registry
        .execute_response(r#"@Files.Delete("secret plans.txt")"#)
        .await;
    assert_eq!(deleted.load(Ordering::SeqCst), 0);
    let delete = &report.calls[0];
    let id = held_id(delete);
    assert!(delete.result.is_err(), "{:?}", delete.result);
    assert!(
        matches!(&delete.result, Err(ToolError::Held { confirmation_id, .. }) if *confirmation_id == id)
    );
    assert!(delete.is_error());
    let status = if delete.is_error() { "failed" } else { "done" };
    assert_ne!(status, "done");
    assert!(matches!(delete.state(), OutcomeState::Held { .. }));
    // Its JSON says it waits, at the top level, and holds no result to take for a value.
    let json = delete.to_json();
    assert_eq!(json["state"], "held");
    assert_eq!(json["confirmation_id"], id.as_str());
    assert!(json.get("result").is_none() && json.get("error").is_none());
    assert_eq!(
        delete.block,
        format!(
            "Function call: Files.Delete(\"secret plans.txt\")\nReturned: {}\n",
            held_result(&id)
        )
    );
    assert_eq!(report.output, delete.block);
}

#[tokio::test]
async fn a_confirmed_call_gives_the_block_for_the_model_s_next_turn() {
    let (registry, deleted) = registry();
    registry.require_confirmation("files.delete").expect("ok");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    registry.on_event(move |event| sink.lock().expect("lock").push(event.event));
    // The answer cuts its own results at 12 characters before the call is held.
    let answer = r#"@tools.set_truncate_length(12) then @Files.Delete("secret plans.txt")"#;
    let report = registry.execute_response(answer).await;
    let held_outcome = &report.calls[1];
    let id = held_id(held_outcome);
    // The host can show the user the call as the model wrote it.
    let held = registry.held_calls();
    assert_eq!(held[0].call_text, r#"Files.Delete("secret plans.txt")"#);

    let confirmed = registry.confirm_outcome(&id).await.expect("runs");
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
    assert_eq!(confirmed.state(), OutcomeState::Returned);
    assert_eq!(confirmed.result, Ok(json!("deleted secret plans.txt")));
    // The block is the one the call would have had had it run in its answer: the same
    // call text as the held block, the result cut at that answer's length.
    let shown = truncate_text("deleted secret plans.txt", 12).into_owned();
    let expected = format_results(&[CallRecord {
        call_text: r#"Files.Delete("secret plans.txt")"#.into(),
        result: Ok(json!(shown)),
    }]);
    assert_eq!(confirmed.block, expected);
    assert!(confirmed
        .block
        .starts_with("Function call: Files.Delete(\"secret plans.txt\")\nReturned: deleted secr"));
    assert_eq!(
        held_outcome.block.lines().next(),
        confirmed.block.lines().next()
    );
    assert_eq!(confirmed.truncate_length, 12);
    assert_eq!(confirmed.call_id, held_outcome.call_id);
    assert_eq!(confirmed.span, held_outcome.span);
    assert_eq!(confirmed.name, "files.delete");
    assert_eq!(confirmed.confirmation_id, None);
    assert_eq!(
        *seen.lock().expect("lock"),
        [
            CallEventKind::Start,
            CallEventKind::Success,
            CallEventKind::Start,
            CallEventKind::Held,
            CallEventKind::Start,
            CallEventKind::Success
        ]
    );
    // Counted when held and again when it ran.
    assert_eq!(registry.stats().functions["files.delete"].calls, 2);
    // Nothing waits under the id any more.
    assert_eq!(
        registry.confirm_outcome(&id).await.unwrap_err(),
        ConfirmError::Unknown { id }
    );
}

#[tokio::test]
async fn a_confirmed_call_that_fails_gives_its_error_block() {
    let registry = Registry::new();
    registry
        .register(
            FnBox::new("mail").function(Interface::new("send").in_domain("mail"), |_, _| {
                Err("the mail server is down".into())
            }),
        )
        .expect("registers");
    registry.require_confirmation("mail").expect("a box");
    let report = registry.execute_response("@mail.send()").await;
    let confirmed = registry
        .confirm_outcome(&held_id(&report.calls[0]))
        .await
        .expect("it ran, and failed");
    assert_eq!(confirmed.state(), OutcomeState::Failed);
    assert_eq!(
        confirmed.block,
        "Function call: mail.send()\nReturned: Error: the mail server is down\n"
    );
}

/// `crates/atfunc-tools/examples/confirm.rs`, which the README points to, runs here.
#[path = "../../examples/confirm.rs"]
#[allow(dead_code)] // its `main`, which the example binary runs
mod confirm_example;

#[tokio::test]
async fn the_confirm_example_confirms_a_held_call_and_formats_its_result() {
    let next_turn = confirm_example::run().await.expect("runs");
    let held_id = next_turn
        .split("\"confirmation_id\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a held call");
    assert_eq!(
        next_turn,
        format!(
            "Function call: files.list()\nReturned: [\"draft.txt\",\"notes.txt\"]\n\n\
             Function call: Files.Delete(\"draft.txt\")\n\
             Returned: {{\"executed\":false,\"status\":\"confirmation_required\",\"confirmation_id\":\"{held_id}\"}}\n\n\
             Function call: Files.Delete(\"draft.txt\")\nReturned: deleted draft.txt\n"
        )
    );
}

/// A direct call of a function that needs confirmation is held as a call in an answer
/// is (a host routing native `tool_calls` through `Registry::call` keeps the hold on
/// writes); `call_unconfirmed` says that it skips the question, and runs at once.
#[tokio::test]
async fn a_direct_call_is_held_unless_it_says_it_is_unconfirmed() {
    let (registry, deleted) = registry();
    registry.require_confirmation("files.delete").expect("ok");
    let args = json!({"path": "plans.txt"});
    let held = registry.call("files.delete", args.clone()).await;
    let Err(ToolError::Held {
        confirmation_id, ..
    }) = held
    else {
        panic!("not held: {held:?}")
    };
    assert_eq!(deleted.load(Ordering::SeqCst), 0);
    assert_eq!(registry.held_calls()[0].args["path"], "plans.txt");
    assert!(registry.confirm(&confirmation_id).await.is_ok());
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
    assert!(registry
        .call_unconfirmed("files.delete", args)
        .await
        .is_ok());
    assert_eq!(deleted.load(Ordering::SeqCst), 2);
    assert!(registry.held_calls().is_empty());
}
