//! The `decide` mode against a scripted endpoint: its two requests (the decision, then the
//! chosen function's grammar), `none` as an answer without a call, a chosen function that
//! the second grammar forces, and a decision cut short.
#![cfg(feature = "eval")]

use crate::scripted;
use atfunc::eval::{load_cases, prompt, CaseOutcome, EvalOptions, Evaluator, Mode};
use atfunc::grammar::{grammar, Choice, DECIDE_QUESTION};
use atfunc::{gbnf, GrammarOptions};
use serde_json::{json, Value as Json};
use std::sync::{Arc, Mutex};

/// Two functions; the question names what the scripted model decides (`pick NAME`).
fn case(id: &str, question: &str) -> atfunc::eval::Case {
    let number = json!({"type": "float"});
    let questions = json!({"id": id, "question": [[{"role": "user", "content": question}]],
        "function": [
            {"name": "calc.sqrt", "parameters": {"type": "dict",
                "properties": {"x": number}, "required": ["x"]}},
            {"name": "calc.cbrt", "parameters": {"type": "dict",
                "properties": {"x": number, "label": {"type": "string"}}, "required": ["x"]}}]});
    let answers = json!({"id": id, "ground_truth": [{"calc.cbrt": {"x": [8.0]}}]});
    let (questions, answers) = (questions.to_string(), answers.to_string());
    let mut loaded = load_cases(&questions, &answers);
    assert!(loaded.skipped.is_empty(), "{:?}", loaded.skipped);
    loaded.cases.remove(0)
}

/// The scripted model: asked [`DECIDE_QUESTION`], it writes what follows `pick ` in the
/// question; asked anything else, a call of `calc.cbrt`. Every request is kept.
async fn endpoint(seen: Arc<Mutex<Vec<Json>>>) -> String {
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |axum::Json(request): axum::Json<Json>| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(request.clone());
                let messages = request["messages"].as_array().cloned().unwrap_or_default();
                let last = messages.last().cloned().unwrap_or_default();
                let text = if last["content"] == DECIDE_QUESTION {
                    let question = messages
                        .iter()
                        .find(|m| m["role"] == "user")
                        .and_then(|m| m["content"].as_str())
                        .unwrap_or_default();
                    question.trim_start_matches("pick ").to_owned()
                } else {
                    String::from("@calc.cbrt(x=8)")
                };
                axum::Json(scripted::says(&text, 100, 10))
            }
        }),
    );
    scripted::serve(app).await
}

/// `case` put to the scripted endpoint in `mode`: its outcome and the requests it sent.
async fn run(case: &atfunc::eval::Case, mode: &str) -> (CaseOutcome, Vec<Json>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let evaluator = Evaluator::new(EvalOptions {
        endpoint: endpoint(seen.clone()).await,
        decide_max_tokens: 24,
        ..EvalOptions::default()
    })
    .unwrap();
    let outcome = evaluator.run(case, &mode.parse::<Mode>().unwrap()).await;
    let requests = seen.lock().unwrap().clone();
    (outcome, requests)
}

#[tokio::test]
async fn a_chosen_function_is_called_under_its_own_grammar() {
    let case = case("simple_0", "pick calc.cbrt");
    let (outcome, requests) = run(&case, "decide").await;
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let system = prompt(&case.interfaces, &"decide".parse().unwrap());
    let conversation = json!([
        {"role": "system", "content": system},
        {"role": "user", "content": "pick calc.cbrt"}
    ]);

    // The decision: the conversation and the question, a short answer, a name or none.
    let decision = &requests[0];
    let mut asked = conversation.as_array().unwrap().clone();
    asked.push(json!({"role": "user", "content": DECIDE_QUESTION}));
    assert_eq!(decision["messages"], Json::Array(asked));
    assert_eq!(decision["max_tokens"], 24);
    assert_eq!(decision["temperature"], 0);
    assert_eq!(
        decision["grammar"],
        "root ::= \"calc.sqrt\" | \"calc.cbrt\" | \"none\"\n"
    );

    // The answer: the `grammar` request, with the grammar of the chosen function only.
    let answer = &requests[1];
    assert_eq!(answer["messages"], conversation);
    assert_eq!(answer["max_tokens"], 256);
    let only = GrammarOptions::default()
        .with_choice(Choice::Function("calc.cbrt".into()))
        .with_single(true);
    assert_eq!(
        answer["grammar"].as_str(),
        Some(gbnf(&case.interfaces, &only).unwrap().as_str())
    );
    let forced = grammar(&case.interfaces, &only).unwrap();
    assert!(forced.accepts("@calc.cbrt(x=8)"));
    assert!(!forced.accepts("@calc.sqrt(x=8)"));
    assert!(!forced.accepts("The cube root of 8 is 2."));

    assert!(
        outcome.correct && outcome.valid && !outcome.no_call,
        "{outcome:?}"
    );
    assert_eq!(
        outcome.calls,
        vec![json!({"name": "calc.cbrt", "args": {"x": 8}})]
    );
    assert_eq!(outcome.answer, "@calc.cbrt(x=8)");
    // Both steps' tokens count.
    assert_eq!(
        (outcome.prompt_tokens, outcome.completion_tokens),
        (200, 20)
    );
}

#[tokio::test]
async fn none_is_an_answer_without_a_call() {
    for (id, wants) in [("irrelevance_0", true), ("simple_0", false)] {
        let case = case(id, "pick none");
        let (outcome, requests) = run(&case, "decide").await;
        assert_eq!(requests.len(), 1, "no second request: {requests:#?}");
        assert!(outcome.no_call && !outcome.valid, "{outcome:?}");
        assert!(outcome.calls.is_empty());
        assert_eq!(outcome.answer, "none");
        // Right exactly where no function fits the question.
        assert_eq!(outcome.correct, wants, "{id}");
        assert!(!outcome.endpoint_failed);
        assert_eq!(
            (outcome.prompt_tokens, outcome.completion_tokens),
            (100, 10)
        );
    }
}

#[tokio::test]
async fn the_second_step_keeps_the_modes_variants() {
    let case = case("simple_0", "pick calc.cbrt");
    let (outcome, requests) = run(&case, "decide+bare+named").await;
    assert_eq!(requests.len(), 2);
    let mode: Mode = "decide+bare+named".parse().unwrap();
    let system = prompt(&case.interfaces, &mode);
    assert_eq!(requests[0]["messages"][0]["content"], system);
    assert_eq!(requests[1]["messages"][0]["content"], system);
    let bare = GrammarOptions::default()
        .with_choice(Choice::Function("calc.cbrt".into()))
        .with_single(true)
        .with_bare_strings(true);
    assert_eq!(
        requests[1]["grammar"].as_str(),
        Some(gbnf(&case.interfaces, &bare).unwrap().as_str())
    );
    assert!(outcome.correct, "{outcome:?}");
    assert_eq!(outcome.mode, "decide+named+bare");
}

#[tokio::test]
async fn a_decision_cut_short_fails_its_case_naming_the_limit() {
    let case = case("simple_0", "pick calc.cb");
    let (outcome, requests) = run(&case, "decide").await;
    assert_eq!(requests.len(), 1);
    assert!(!outcome.correct && !outcome.no_call, "{outcome:?}");
    assert_eq!(
        outcome.error.as_deref(),
        Some(
            "the decision 'calc.cb' is neither a function's name nor 'none': a name cut at \
             the decision's limit of 24 tokens? Raise --decide-max-tokens"
        )
    );
}
