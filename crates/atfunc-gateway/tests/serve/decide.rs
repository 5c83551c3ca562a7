//! `atfunc serve --constrain --decide` against the scripted upstream of `dialect.rs`: a
//! decision of a tool's name leads to a call of that tool under its own grammar, `none`
//! to text under the `auto` grammar, a decision that names no tool falls back to the
//! answer without a decision, the decision request's body is the one the module doc
//! describes, and it is never streamed.

use super::dialect::{joined, request, Setup};
use atfunc::grammar::{decision_gbnf, DECIDE_QUESTION};
use atfunc_gateway::serve::{CallThreshold, Gateway, GatewayOptions};
use serde_json::{json, Value as Json};

fn deciding() -> GatewayOptions {
    let mut options = GatewayOptions::default();
    options.policy.constrain = true;
    options.policy.decide = true;
    options
}

fn answer(content: &str, prompt_tokens: u64, completion_tokens: u64) -> Json {
    json!({"content": content, "usage": {"prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens}})
}

/// The grammar a gateway with `--constrain` and without `--decide` sends upstream for
/// `request` first.
async fn grammar_without_deciding(request: &Json) -> Json {
    let setup = Setup::with_options(
        {
            let mut options = GatewayOptions::default();
            options.policy.constrain = true;
            // The `auto` grammar itself, not a weighing's choice of one.
            options.policy.call_threshold = CallThreshold::Off;
            options.policy.repair_rounds = 0;
            options.policy.resamples = 0;
            options
        },
        &[json!({"content": "It is sunny."})],
    )
    .await;
    let (status, _) = setup.whole(request).await;
    assert_eq!(status, 200);
    setup.requests()[0]["grammar"].clone()
}

fn named(mut request: Json, tool: &str) -> Json {
    request["tool_choice"] = json!({"type": "function", "function": {"name": tool}});
    request
}

#[tokio::test]
async fn a_decided_name_leads_to_a_call_of_that_tool_under_its_grammar() {
    let setup = Setup::with_options(
        deciding(),
        &[
            answer("get_weather", 300, 3),
            answer("@get_weather(city=\"Paris\")", 310, 9),
        ],
    )
    .await;
    let mut asked = request();
    asked["max_tokens"] = json!(200);
    asked["max_completion_tokens"] = json!(200);
    let (status, whole) = setup.whole(&asked).await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(
        joined(&whole),
        json!({"content": null, "calls": [
            {"name": "get-weather", "arguments": "{\"city\":\"Paris\"}"}]})
    );
    assert_eq!(whole["choices"][0]["finish_reason"], "tool_calls");
    // Both requests' tokens count.
    assert_eq!(
        whole["usage"],
        json!({"prompt_tokens": 610, "completion_tokens": 12, "total_tokens": 622})
    );

    let sent = setup.requests();
    assert_eq!(sent.len(), 2, "{sent:#?}");
    let (decision, answer) = (&sent[0], &sent[1]);
    // The decision: the answer's request, the question after the prompted conversation,
    // the names' grammar, a short limit, not streamed.
    let mut messages = answer["messages"].as_array().unwrap().clone();
    assert!(messages[0]["content"]
        .as_str()
        .unwrap()
        .contains("@get_weather("));
    messages.push(json!({"role": "user", "content": DECIDE_QUESTION}));
    assert_eq!(decision["messages"], Json::Array(messages));
    assert_eq!(
        decision["grammar"],
        decision_gbnf(&["get_weather".to_owned(), "local_time".to_owned()])
    );
    assert_eq!(
        decision["grammar"],
        "root ::= \"get_weather\" | \"local_time\" | \"none\"\n"
    );
    assert_eq!(decision["max_tokens"], 32);
    assert_eq!(decision["stream"], false);
    assert_eq!(decision["model"], "m");
    for field in [
        "max_completion_tokens",
        "tools",
        "tool_choice",
        "stream_options",
    ] {
        assert!(decision.get(field).is_none(), "{field}: {decision}");
    }
    // The answer: the client's limits, the grammar of the chosen tool's calls, which is
    // the grammar the gateway sends when the client names that tool.
    assert_eq!(answer["max_tokens"], 200);
    assert_eq!(answer["max_completion_tokens"], 200);
    assert_eq!(
        answer["grammar"],
        grammar_without_deciding(&named(request(), "get-weather")).await
    );
    assert_ne!(
        answer["grammar"],
        grammar_without_deciding(&request()).await
    );
}

#[tokio::test]
async fn the_decision_is_not_streamed_and_the_answer_is() {
    let setup = Setup::with_options(
        deciding(),
        &[
            answer("local_time", 300, 3),
            json!({"content": "Let me look. @local_time(city=\"Oslo\")"}),
        ],
    )
    .await;
    let mut asked = request();
    asked["stream_options"] = json!({"include_usage": true});
    let (streamed, finish) = setup.streamed(&asked).await;
    assert_eq!(
        streamed,
        json!({"content": "Let me look.", "calls": [
            {"name": "local_time", "arguments": "{\"city\":\"Oslo\"}"}]})
    );
    assert_eq!(finish, "tool_calls");
    let sent = setup.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0]["stream"], false);
    assert!(sent[0].get("stream_options").is_none(), "{}", sent[0]);
    assert_eq!(sent[1]["stream"], true);
    assert_eq!(sent[1]["stream_options"], json!({"include_usage": true}));
}

#[tokio::test]
async fn none_leads_to_text_under_the_auto_grammar() {
    let setup = Setup::with_options(
        deciding(),
        &[
            answer("none", 300, 2),
            json!({"content": "Hello! How can I help?"}),
        ],
    )
    .await;
    let (status, whole) = setup.whole(&request()).await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(
        joined(&whole),
        json!({"content": "Hello! How can I help?", "calls": []})
    );
    assert_eq!(whole["choices"][0]["finish_reason"], "stop");
    let sent = setup.requests();
    assert_eq!(sent.len(), 2);
    // The answer is the one `--constrain` asks for without a decision.
    assert_eq!(
        sent[1]["grammar"],
        grammar_without_deciding(&request()).await
    );
    assert_eq!(
        sent[1]["messages"],
        sent[0]["messages"]
            .as_array()
            .map(|m| { Json::Array(m[..m.len() - 1].to_vec()) })
            .unwrap()
    );
}

#[tokio::test]
async fn a_decision_that_names_no_tool_falls_back_to_the_answer_without_one() {
    // An upstream that ignores the grammar, and a name cut by the token limit.
    for decided in ["The weather one, I think.", "get_wea"] {
        let setup = Setup::with_options(
            deciding(),
            &[
                answer(decided, 300, 5),
                json!({"content": "@get_weather(city=\"Paris\")"}),
            ],
        )
        .await;
        let (status, whole) = setup.whole(&request()).await;
        assert_eq!(status, 200, "{whole}");
        // Under the `auto` grammar a call still binds.
        assert_eq!(
            joined(&whole)["calls"],
            json!([{"name": "get-weather", "arguments": "{\"city\":\"Paris\"}"}]),
            "{decided}"
        );
        let sent = setup.requests();
        assert_eq!(sent.len(), 2);
        assert_eq!(
            sent[1]["grammar"],
            grammar_without_deciding(&request()).await
        );
    }
}

#[tokio::test]
async fn only_auto_is_decided_and_only_under_a_grammar() {
    // `required` (and a named tool) say already that a call comes: no decision.
    let mut required = request();
    required["tool_choice"] = json!("required");
    let setup = Setup::with_options(
        deciding(),
        &[json!({"content": "@local_time(city=\"Oslo\")"})],
    )
    .await;
    let (status, _) = setup.whole(&required).await;
    assert_eq!(status, 200);
    assert_eq!(setup.requests().len(), 1);

    // A request that turns the grammar off is not decided either.
    let mut off = request();
    off["atfunc_constrain"] = json!(false);
    setup.script(&[json!({"content": "Hi."})]);
    let (status, _) = setup.whole(&off).await;
    assert_eq!(status, 200);
    let sent = setup.requests();
    assert_eq!(sent.len(), 1);
    assert!(sent[0].get("grammar").is_none());

    let error = Gateway::new({
        let mut options = GatewayOptions::default();
        options.policy.decide = true;
        options
    })
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "deciding first (--decide) asks under a grammar: give --constrain (or \
         --constrain-per-request) too"
    );
    let error = Gateway::new({
        let mut options = deciding();
        options.policy.decide_max_tokens = 0;
        options
    })
    .unwrap_err();
    assert!(error.to_string().contains("--decide-max-tokens"), "{error}");
}
