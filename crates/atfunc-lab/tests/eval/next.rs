//! The variant `+next` against a scripted llama-server: an answer that repeats its first
//! call is continued from where that call ends, one call per `/completion` under a grammar
//! that leaves the calls written out, until none is left to make; an answer that ended on
//! its own, and a mode without the variant, are not continued.

use crate::scripted;
use atfunc_lab::eval::{load_cases, CaseOutcome, EvalOptions, Evaluator, Mode};
use serde_json::{json, Value as Json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A `parallel` case asking for three calls, of a function whose parameter has three
/// choices (values the grammar lists, so that it can leave out those written).
fn case(question: &str) -> atfunc_lab::eval::Case {
    let questions = json!({"id": "parallel_0",
        "question": [[{"role": "user", "content": question}]],
        "function": [{"name": "weather", "parameters": {"type": "dict",
            "properties": {"city": {"type": "string", "enum": ["Oslo", "Paris", "Rome"]}},
            "required": ["city"]}}]});
    let answers = json!({"id": "parallel_0", "ground_truth": [
        {"weather": {"city": ["Oslo"]}}, {"weather": {"city": ["Paris"]}},
        {"weather": {"city": ["Rome"]}}]});
    let mut loaded = load_cases(&questions.to_string(), &answers.to_string());
    assert!(loaded.skipped.is_empty(), "{:?}", loaded.skipped);
    loaded.cases.remove(0)
}

/// The chat route answers "Weather in Oslo, Paris and Rome?" with its first call and then
/// that call again, and "Only Oslo." with one call that ends the answer. `/completion`
/// continues the prompt it is given: after the first call, the call for Paris; after that,
/// the call for Rome, written as the grammar must let it (on a line of its own), or, when
/// the question says "end after Paris", nothing. Every `/completion` request is kept.
fn server(completions: Arc<Mutex<Vec<Json>>>) -> String {
    let app = axum::Router::new()
        .route(
            "/v1/chat/completions",
            axum::routing::post(|axum::Json(request): axum::Json<Json>| async move {
                let question = request["messages"][1]["content"]
                    .as_str()
                    .unwrap_or_default();
                let text = if question.starts_with("Only") {
                    "@weather(city=\"Oslo\")"
                } else if question.starts_with("Play") {
                    "@play(artist=\"Taylor Swift\")\n@play(artist=\"Swift\")\n\
                     @play(artist=\"Taylor Swift\")"
                } else {
                    "@weather(city=\"Oslo\")\n@weather(city=\"Oslo\")\n@weather(city=\"Oslo\")"
                };
                axum::Json(scripted::says(text, 100, 30))
            }),
        )
        .route(
            "/apply-template",
            axum::routing::post(|axum::Json(request): axum::Json<Json>| async move {
                let contents: Vec<&str> = request["messages"]
                    .as_array()
                    .map(|m| m.iter().filter_map(|m| m["content"].as_str()).collect())
                    .unwrap_or_default();
                axum::Json(json!({"prompt": format!("{}\n<assistant>\n", contents.join("\n"))}))
            }),
        )
        .route(
            "/completion",
            axum::routing::post(move |axum::Json(request): axum::Json<Json>| {
                completions.lock().unwrap().push(request.clone());
                async move {
                    let prompt = request["prompt"].as_str().unwrap_or_default();
                    let content =
                        if prompt.contains("end after Paris") && prompt.ends_with("\"Paris\")") {
                            // The model ends its answer: the grammar allows nothing.
                            ""
                        } else if prompt.ends_with("<assistant>\n@weather(city=\"Oslo\")") {
                            "\n@weather(city=\"Paris\")"
                        } else if prompt.ends_with("@weather(city=\"Paris\")") {
                            "\n@weather(city=\"Rome\")"
                        } else {
                            "unexpected prompt"
                        };
                    axum::Json(json!({"content": content, "tokens_evaluated": 7,
                        "tokens_predicted": 5}))
                }
            }),
        );
    scripted::serve_on_thread(app)
}

async fn run(endpoint: String, mode: &str, question: &str) -> CaseOutcome {
    run_case(endpoint, mode, &case(question)).await
}

async fn run_case(endpoint: String, mode: &str, case: &atfunc_lab::eval::Case) -> CaseOutcome {
    let evaluator = Evaluator::new(EvalOptions {
        endpoint,
        resamples: 0,
        timeout: Duration::from_secs(60),
        ..EvalOptions::default()
    })
    .unwrap();
    evaluator.run(case, &mode.parse::<Mode>().unwrap()).await
}

#[tokio::test]
async fn a_repeated_call_is_followed_by_the_next_new_one_until_none_is_left() {
    let completions = Arc::new(Mutex::new(Vec::new()));
    let endpoint = server(completions.clone());
    let outcome = run(endpoint, "grammar+next", "Weather in Oslo, Paris and Rome?").await;
    assert!(outcome.correct, "{outcome:?}");
    assert_eq!(outcome.calls.len(), 3, "{outcome:?}");
    assert_eq!(
        outcome.answer,
        "@weather(city=\"Oslo\")\n@weather(city=\"Paris\")\n@weather(city=\"Rome\")"
    );
    // The chat answer's tokens, and each continuation's.
    assert_eq!(
        (outcome.prompt_tokens, outcome.completion_tokens),
        (100 + 2 * 7, 30 + 2 * 5)
    );
    // Two continuations: with the three cities written, no call is left to ask for.
    let completions = completions.lock().unwrap();
    assert_eq!(completions.len(), 2);
    for (asked, left_out) in completions
        .iter()
        .zip([&["Oslo"][..], &["Oslo", "Paris"][..]])
    {
        assert_eq!(asked["temperature"], 0);
        let grammar = asked["grammar"].as_str().unwrap();
        // The grammar offers the choices but those already written.
        for city in ["Oslo", "Paris", "Rome"] {
            let offered = grammar.contains(city);
            assert_eq!(offered, !left_out.contains(&city), "{city}: {grammar}");
        }
    }
}

#[tokio::test]
async fn the_model_may_end_its_answer_instead_of_a_next_call() {
    let completions = Arc::new(Mutex::new(Vec::new()));
    let endpoint = server(completions.clone());
    let question = "Weather in Oslo, Paris and Rome? (end after Paris)";
    let outcome = run(endpoint, "grammar+next", question).await;
    assert_eq!(
        outcome.answer, "@weather(city=\"Oslo\")\n@weather(city=\"Paris\")",
        "{outcome:?}"
    );
    assert_eq!(outcome.calls.len(), 2);
    assert_eq!(completions.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn an_answer_that_ended_on_its_own_or_a_mode_without_next_is_not_continued() {
    let completions = Arc::new(Mutex::new(Vec::new()));
    let endpoint = server(completions.clone());
    let ended = run(endpoint.clone(), "grammar+next", "Only Oslo.").await;
    assert_eq!(ended.calls.len(), 1, "{ended:?}");
    let without = run(endpoint, "grammar", "Weather in Oslo, Paris and Rome?").await;
    assert_eq!(without.calls.len(), 1, "{without:?}");
    assert!(!without.correct);
    assert!(completions.lock().unwrap().is_empty());
}

/// An answer whose second call is a fragment of its first (a near-repeat) is read up to it,
/// and not continued, though a repeat follows.
#[tokio::test]
async fn an_answer_is_read_up_to_its_first_near_repeat_and_not_continued() {
    let completions = Arc::new(Mutex::new(Vec::new()));
    let endpoint = server(completions.clone());
    let questions = json!({"id": "parallel_1",
        "question": [[{"role": "user", "content": "Play Taylor Swift and Maroon 5."}]],
        "function": [{"name": "play", "parameters": {"type": "dict",
            "properties": {"artist": {"type": "string"}}, "required": ["artist"]}}]});
    let answers = json!({"id": "parallel_1", "ground_truth": [
        {"play": {"artist": ["Taylor Swift"]}}, {"play": {"artist": ["Maroon 5"]}}]});
    let case = load_cases(&questions.to_string(), &answers.to_string())
        .cases
        .remove(0);
    let outcome = run_case(endpoint, "grammar+spans+next", &case).await;
    assert_eq!(
        outcome.answer, "@play(artist=\"Taylor Swift\")",
        "{outcome:?}"
    );
    assert_eq!(outcome.calls.len(), 1);
    assert!(completions.lock().unwrap().is_empty());
}
