//! The `decide` mode against a scripted endpoint, through the gateway's `--decide`: its two
//! requests (the decision, then the chosen function's grammar), `none` or a decision cut
//! short leaving the `auto` grammar, and a chosen function that the second grammar forces.

use crate::scripted;
use atfunc::grammar::{grammar, Choice, DECIDE_QUESTION};
use atfunc::{gbnf, GrammarOptions};
use atfunc_lab::eval::{load_cases, prompt, CaseOutcome, EvalOptions, Evaluator, Mode};
use serde_json::{json, Value as Json};
use std::sync::{Arc, Mutex};

/// Two functions; the question names what the scripted model decides (`pick NAME`).
fn case(id: &str, question: &str) -> atfunc_lab::eval::Case {
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
/// question; asked anything else, a call of `calc.cbrt`, or prose when it decided `none`.
/// Every request is kept.
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
                } else if messages.iter().any(|m| m["content"] == "pick none") {
                    String::from("No function fits.")
                } else {
                    String::from("@calc.cbrt(x=8)")
                };
                axum::Json(scripted::says(&text, 100, 10))
            }
        }),
    );
    scripted::serve(app).await
}

/// The system prompt the gateway sends for `case` in `mode`: the atfunc prompt, and one
/// call per answer (the evaluator asks for one outside BFCL's parallel categories).
fn system(case: &atfunc_lab::eval::Case, mode: &str) -> String {
    let prompt = prompt(&case.interfaces, &mode.parse().unwrap());
    format!("{prompt}\nCall at most one function per answer.\n")
}

/// `case` put to the scripted endpoint in `mode`: its outcome and the requests it sent.
async fn run(case: &atfunc_lab::eval::Case, mode: &str) -> (CaseOutcome, Vec<Json>) {
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
    let conversation = json!([
        {"role": "system", "content": system(&case, "decide")},
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
    // The gateway's content: the call is taken out of it.
    assert_eq!(outcome.answer, "");
    // Both steps' tokens count.
    assert_eq!(
        (outcome.prompt_tokens, outcome.completion_tokens),
        (200, 20)
    );
}

/// Asserts that `request` carries the `auto` grammar of `case`'s tools, one call at most.
fn assert_auto_grammar(case: &atfunc_lab::eval::Case, request: &Json) {
    let auto = GrammarOptions::default()
        .with_choice(Choice::Auto)
        .with_single(true);
    assert_eq!(
        request["grammar"].as_str(),
        Some(gbnf(&case.interfaces, &auto).unwrap().as_str())
    );
}

/// `none` leaves the answer to the `auto` grammar, which allows prose: the model that
/// decided it writes no call here.
#[tokio::test]
async fn none_leaves_the_answer_to_the_auto_grammar() {
    for (id, wants) in [("irrelevance_0", true), ("simple_0", false)] {
        let case = case(id, "pick none");
        let (outcome, requests) = run(&case, "decide").await;
        assert_eq!(requests.len(), 2, "{requests:#?}");
        assert_auto_grammar(&case, &requests[1]);
        assert!(outcome.no_call && !outcome.valid, "{outcome:?}");
        assert!(outcome.calls.is_empty());
        assert_eq!(outcome.answer, "No function fits.");
        // Right exactly where no function fits the question.
        assert_eq!(outcome.correct, wants, "{id}");
        assert!(!outcome.endpoint_failed);
        // Both requests' tokens count.
        assert_eq!(
            (outcome.prompt_tokens, outcome.completion_tokens),
            (200, 20)
        );
    }
}

#[tokio::test]
async fn the_second_step_keeps_the_modes_variants() {
    let case = case("simple_0", "pick calc.cbrt");
    let (outcome, requests) = run(&case, "decide+bound+desc").await;
    assert_eq!(requests.len(), 2);
    let system = system(&case, "decide+bound+desc");
    assert_eq!(requests[0]["messages"][0]["content"], system);
    assert_eq!(requests[1]["messages"][0]["content"], system);
    let bound = GrammarOptions::default()
        .with_choice(Choice::Function("calc.cbrt".into()))
        .with_single(true)
        .with_bounded_values();
    assert_eq!(
        requests[1]["grammar"].as_str(),
        Some(gbnf(&case.interfaces, &bound).unwrap().as_str())
    );
    assert!(outcome.correct, "{outcome:?}");
    assert_eq!(outcome.mode, "decide+desc+bound");
}

/// A decision that names no function (cut at its token limit) is no decision: the answer
/// follows under the `auto` grammar, as without one.
#[tokio::test]
async fn a_decision_cut_short_leaves_the_auto_grammar() {
    let case = case("simple_0", "pick calc.cb");
    let (outcome, requests) = run(&case, "decide").await;
    assert_eq!(requests.len(), 2);
    assert_auto_grammar(&case, &requests[1]);
    assert!(outcome.correct, "{outcome:?}");
}
