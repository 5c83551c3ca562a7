//! Every mode of `atfunc-lab eval` that is a policy of the gateway runs the gateway's own
//! code: for the same answers of a scripted upstream, `atfunc-lab eval --mode M` makes
//! exactly the requests that `atfunc serve`, with the flags the evaluator names for M, makes
//! for a client that sends the case as an OpenAI request. Resamples, repair rounds, the
//! decision and a model's own format included.

use crate::scripted;
use atfunc::interop::{to_openai_tools, ControlFields, ToolFormatOptions};
use atfunc_lab::eval::{load_cases, Case, EvalOptions, Evaluator, Mode};
use serde_json::{json, Value as Json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

fn case(id: &str) -> Case {
    let questions = json!({"id": id,
        "question": [[{"role": "user", "content": "What is the square root of 2?"}]],
        "function": [{"name": "calc.sqrt", "description": "Square root.",
            "parameters": {"type": "dict",
                "properties": {"x": {"type": "float", "description": "The number."}},
                "required": ["x"]}}]});
    let answers = json!({"id": id, "ground_truth": [{"calc.sqrt": {"x": [2.0]}}]});
    let mut loaded = load_cases(&questions.to_string(), &answers.to_string());
    assert!(loaded.skipped.is_empty(), "{:?}", loaded.skipped);
    loaded.cases.remove(0)
}

/// An upstream that answers `answers` in order, whole, and keeps every request.
async fn upstream(answers: &[&str], seen: Arc<Mutex<Vec<Json>>>) -> String {
    let answers: VecDeque<String> = answers.iter().map(|a| (*a).to_owned()).collect();
    let answers = Arc::new(Mutex::new(answers));
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |axum::Json(request): axum::Json<Json>| {
            let (seen, answers) = (seen.clone(), answers.clone());
            async move {
                seen.lock().unwrap().push(request);
                let text = answers.lock().unwrap().pop_front().unwrap_or_default();
                axum::Json(scripted::says(&text, 10, 5))
            }
        }),
    );
    scripted::serve(app).await
}

/// What `atfunc serve --upstream URL` with `flags` serves, listening on a port of its own:
/// the gateway built from the options the command line makes of those flags.
struct Served {
    url: String,
}

impl Served {
    async fn start(upstream: &str, flags: &[&str]) -> Served {
        let args = ["--upstream", upstream]
            .into_iter()
            .chain(flags.iter().copied());
        let options = atfunc_cli::serve_options(args)
            .unwrap_or_else(|e| panic!("atfunc serve {flags:?}: {e}"));
        let gateway = atfunc_gateway::serve::Gateway::new(options).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(atfunc_gateway::serve::serve(
            listener,
            gateway,
            std::future::pending(),
        ));
        Served { url }
    }
}

/// What a client of the gateway sends for `case`: the case's messages, its functions as
/// tools (under OpenAI's names for a model's own format), `tool_choice`, one call per
/// answer, and the evaluator's own fields.
fn client_request(case: &Case, tool_choice: &str, openai_names: bool) -> Json {
    let tools = if openai_names {
        let options = ToolFormatOptions::default().with_control_fields(ControlFields::none());
        to_openai_tools(&case.interfaces, &options).tools
    } else {
        Json::Array(
            case.functions
                .iter()
                .map(|f| json!({"type": "function", "function": f}))
                .collect(),
        )
    };
    json!({"model": "default", "max_tokens": 256, "temperature": 0, "stream": false,
        "messages": case.messages, "tools": tools, "tool_choice": tool_choice,
        "parallel_tool_calls": false})
}

/// The requests each side makes for `answers`: the evaluator's in `mode`, and the
/// gateway's started with the flags the evaluator names for it.
async fn both(mode: &str, answers: &[&str]) -> (Vec<Json>, Vec<Json>, bool) {
    let case = case("simple_0");
    let mode: Mode = mode.parse().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let evaluator = Evaluator::new(EvalOptions {
        endpoint: upstream(answers, seen.clone()).await,
        ..EvalOptions::default()
    })
    .unwrap();
    let outcome = evaluator.run(&case, &mode).await;
    assert!(!outcome.endpoint_failed, "{outcome:?}");
    let evaluated = seen.lock().unwrap().clone();

    let flags = evaluator.serve_flags(&mode).expect("a gateway policy");
    let (command, choice) = flags.split_once(", tool_choice ").unwrap();
    let flags: Vec<&str> = command
        .strip_prefix("atfunc serve")
        .unwrap()
        .split_whitespace()
        .collect();
    let tool_choice: String = serde_json::from_str(choice).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let served = Served::start(&upstream(answers, seen.clone()).await, &flags).await;
    let openai_names = flags.contains(&"--upstream-dialect");
    let request = client_request(&case, &tool_choice, openai_names);
    let answer = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", served.url))
        .json(&request)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
    let gateway = seen.lock().unwrap().clone();
    (evaluated, gateway, outcome.correct)
}

#[tokio::test]
async fn grammar_makes_the_requests_serve_constrain_makes() {
    // The first answer and three resamples fail (a call that does not bind, one cut
    // short, none where one is required); the repair round's call binds.
    let answers = [
        "@calc.sqrt(y=2)",
        "@calc.sqrt(z=2)",
        "@calc.sqrt(",
        "It is about 1.41.",
        "@calc.sqrt(x=2)",
    ];
    let (evaluated, gateway, correct) = both("grammar", &answers).await;
    assert_eq!(evaluated.len(), 5, "{evaluated:#?}");
    assert_eq!(evaluated, gateway);
    assert!(correct);
    // Resamples are sampled with seeds of their own; the repair round asks with the
    // client's settings, the refused answer and what to fix.
    assert_eq!(evaluated[1]["seed"], 1);
    assert_eq!(evaluated[3]["seed"], 3);
    assert!(evaluated[4].get("seed").is_none());
    assert!(evaluated[0]["grammar"].is_string());
}

#[tokio::test]
async fn decide_makes_the_requests_serve_constrain_decide_makes() {
    let answers = ["calc.sqrt", "@calc.sqrt(x=2)"];
    let (evaluated, gateway, correct) = both("decide+spans+desc", &answers).await;
    assert_eq!(evaluated.len(), 2, "{evaluated:#?}");
    assert_eq!(evaluated, gateway);
    assert!(correct);
}

#[tokio::test]
async fn repair_and_text_make_the_requests_serve_makes() {
    let answers = ["@calc.sqrt(y=2)", "@calc.sqrt(x=2)"];
    let (evaluated, gateway, correct) = both("repair", &answers).await;
    assert_eq!(evaluated.len(), 2, "{evaluated:#?}");
    assert_eq!(evaluated, gateway);
    assert!(correct);
    // `text` measures the prompt alone: no repair round.
    let (evaluated, gateway, correct) = both("text", &answers).await;
    assert_eq!(evaluated.len(), 1, "{evaluated:#?}");
    assert_eq!(evaluated, gateway);
    assert!(!correct);
}

#[tokio::test]
async fn dialect_makes_the_requests_serve_upstream_dialect_makes() {
    let answers = [
        "<tool_call>{\"name\": \"calc_sqrt\", \"arguments\": {\"y\": 2}}</tool_call>",
        "<tool_call>{\"name\": \"calc_sqrt\", \"arguments\": {\"x\": 2}}</tool_call>",
    ];
    let (evaluated, gateway, correct) = both("dialect", &answers).await;
    assert_eq!(evaluated.len(), 2, "{evaluated:#?}");
    assert_eq!(evaluated, gateway);
    assert!(correct);
}
