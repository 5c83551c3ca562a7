//! Tool lists kept as read: a gateway that keeps them sends upstream and answers exactly
//! what one that keeps none does, for a list sent again, a list one byte apart, and the
//! grammars of `auto`, `required` and a named tool, in atfunc's syntax and in hermes.

use super::dialect::{joined, request, Setup};
use atfunc::parse::Dialect;
use atfunc_gateway::serve::{CallThreshold, GatewayOptions};
use serde_json::{json, Value as Json};

/// The gateway's options, under a grammar or not, keeping at most `lists` tool lists.
fn options(dialect: Dialect, constrain: bool, lists: usize) -> GatewayOptions {
    let mut options = GatewayOptions::default();
    options.upstream.dialect = dialect;
    options.policy.constrain = constrain;
    options.policy.call_threshold = CallThreshold::Off;
    options.policy.resamples = 0;
    options.policy.repair_rounds = 0;
    options.limits.tool_cache_lists = lists;
    options
}

/// The requests a conversation makes: the same list again and again, under each
/// `tool_choice`, then the list with one byte changed, then the first list once more.
fn requests() -> Vec<Json> {
    let mut asked = Vec::new();
    for choice in [
        json!("auto"),
        json!("auto"),
        json!("required"),
        json!({"type": "function", "function": {"name": "local_time"}}),
        json!("auto"),
    ] {
        let mut request = request();
        request["tool_choice"] = choice;
        asked.push(request);
    }
    let mut changed = request();
    changed["tools"][0]["function"]["description"] = json!("The weather in a city!");
    asked.push(changed);
    asked.push(request());
    asked
}

/// What the upstream was sent and what the client was answered, for each of [`requests`],
/// whole and streamed.
async fn exchanges(options: GatewayOptions, answer: &str) -> Vec<(Json, Json)> {
    let message = json!({"content": answer});
    let setup = Setup::with_options(options, &[]).await;
    let mut seen = Vec::new();
    for request in requests() {
        setup.script(std::slice::from_ref(&message));
        let (status, whole) = setup.whole(&request).await;
        assert_eq!(status, 200, "{whole}");
        let [sent] = <[Json; 1]>::try_from(setup.requests()).unwrap();
        seen.push((sent, joined(&whole)));
        setup.script(std::slice::from_ref(&message));
        let (streamed, _) = setup.streamed(&request).await;
        let [sent] = <[Json; 1]>::try_from(setup.requests()).unwrap();
        seen.push((sent, streamed));
    }
    seen
}

async fn kept_lists_change_nothing(dialect: Dialect, answer: &str) {
    for constrain in [false, true] {
        let kept = exchanges(options(dialect, constrain, 64), answer).await;
        let read = exchanges(options(dialect, constrain, 0), answer).await;
        assert_eq!(kept.len(), read.len());
        for (i, (kept, read)) in kept.iter().zip(&read).enumerate() {
            assert_eq!(kept, read, "{dialect}, constrain {constrain}, exchange {i}");
        }
        // The list one byte apart was read as itself: its prompt (or, in hermes, its
        // tools) went upstream changed, and the first list's again after it.
        let shown = |at: usize| kept[at].0.to_string();
        assert!(
            shown(10).contains("The weather in a city!"),
            "{}",
            shown(10)
        );
        assert!(
            !shown(12).contains("The weather in a city!"),
            "{}",
            shown(12)
        );
        assert_eq!(shown(0), shown(2));
        if constrain {
            let grammar = |at: usize| kept[at].0["grammar"].clone();
            assert!(grammar(0).is_string(), "{}", shown(0));
            assert_eq!(grammar(0), grammar(8));
            assert_ne!(grammar(0), grammar(4), "auto and required differ");
        }
    }
}

#[tokio::test]
async fn a_list_kept_sends_and_answers_what_a_list_read_does() {
    kept_lists_change_nothing(Dialect::Atfunc, "It is @get_weather(city=\"Paris\") now.").await;
}

#[tokio::test]
async fn a_list_kept_sends_and_answers_what_a_list_read_does_in_hermes() {
    let answer = "<tool_call>\n{\"name\": \"get-weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    kept_lists_change_nothing(Dialect::Hermes, answer).await;
}
