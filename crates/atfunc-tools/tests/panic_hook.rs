//! A tool's panic and the process's panic hook. In a file of its own: the hook is the
//! whole process's, and other tests' panics would reach it.

use atfunc::{json, Interface};
use atfunc_tools::{quiet_tool_panics, FnBox, Registry, ToolError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn panicking() -> FnBox {
    FnBox::new("t")
        .function(Interface::new("boom").in_domain("t"), |_, _| panic!("boom"))
        .async_function(Interface::new("later").in_domain("t"), |_, _| async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            panic!("later");
            #[allow(unreachable_code)]
            Ok(json!(null))
        })
}

fn panicked(result: &Result<serde_json::Value, ToolError>) -> Option<&str> {
    match result {
        Err(ToolError::Panicked { message, .. }) => Some(message),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caught_tool_panics_stay_off_the_hook_once_asked() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map_or_else(|| "?".to_owned(), |s| (*s).to_owned());
        sink.lock().unwrap_or_else(|e| e.into_inner()).push(message);
    }));
    let seen = move || seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let registry = Registry::new();
    registry.set_concurrency(2);
    registry.register(panicking()).unwrap();
    let answer = "@t.boom() @t.later()";

    // By default the hook hears of every panic, caught or not.
    let report = registry.execute_response(answer).await;
    assert_eq!(panicked(&report.calls[0].result), Some("boom"));
    assert_eq!(panicked(&report.calls[1].result), Some("later"));
    assert_eq!(seen(), ["boom", "later"]);

    quiet_tool_panics();
    quiet_tool_panics(); // a second call changes nothing
    let report = registry.execute_response(answer).await;
    let direct = registry.call("t.boom", json!({})).await;
    // The model and the caller still read the panics as errors.
    assert_eq!(panicked(&report.calls[0].result), Some("boom"));
    assert_eq!(panicked(&report.calls[1].result), Some("later"));
    assert_eq!(panicked(&direct), Some("boom"));
    // The hook did not hear of them, and still hears of any other panic.
    assert_eq!(seen(), ["boom", "later"]);
    let elsewhere = std::panic::catch_unwind(|| panic!("elsewhere"));
    assert!(elsewhere.is_err());
    assert_eq!(seen(), ["boom", "later", "elsewhere"]);
    let _ = std::panic::take_hook();
}
