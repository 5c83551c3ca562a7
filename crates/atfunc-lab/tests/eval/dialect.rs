//! The `dialect` mode against a scripted endpoint whose model writes its own call format,
//! through the gateway's `--upstream-dialect`: the request it sends (the tools in `tools`,
//! no atfunc prompt, `tool_choice: "none"`),
//! answers in hermes, pythonic and auto-detected formats scored right and wrong, a call
//! that does not bind, a call block that cannot be read, an answer without a call, and
//! the report and its continuation naming the dialect.

use crate::scripted;
use crate::support;

use atfunc::interop::{to_openai_tools, ControlFields, ToolFormatOptions};
use atfunc::parse::Dialect;
use atfunc_lab::eval::{load_cases, Case, CaseOutcome, EvalOptions, Evaluator, Mode};
use serde_json::{json, Value as Json};
use std::sync::{Arc, Mutex};

/// The scripted model answers with its question's text, so each case's question is the
/// answer under test. Every request is kept.
async fn endpoint(seen: Arc<Mutex<Vec<Json>>>) -> String {
    scripted::serve(router(seen)).await
}

/// The scripted endpoint's routes: each request is kept in `seen`.
fn router(seen: Arc<Mutex<Vec<Json>>>) -> axum::Router {
    axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |axum::Json(request): axum::Json<Json>| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(request.clone());
                axum::Json(scripted::says(&question(&request), 50, 7))
            }
        }),
    )
}

/// The text of the last user message of `request`, which the scripted model answers.
fn question(request: &Json) -> String {
    request["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

const FUNCTIONS: &str = r#"[
    {"name": "calc.sqrt", "description": "Square root.", "parameters": {"type": "dict",
        "properties": {"x": {"type": "float", "description": "The number."}}, "required": ["x"]}},
    {"name": "calc.cbrt", "parameters": {"type": "dict",
        "properties": {"x": {"type": "float"}}, "required": ["x"]}}
]"#;

/// A case of `id` (its category from the id) whose model answers `answer`; the possible
/// answer is `calc.sqrt(x=2)`, and in `parallel` also `calc.cbrt(x=8)`.
fn case(id: &str, answer: &str) -> Case {
    let functions: Json = serde_json::from_str(FUNCTIONS).unwrap();
    let questions = json!({"id": id, "question": [[{"role": "user", "content": answer}]],
        "function": functions});
    let truth = if id.starts_with("parallel") {
        json!([{"calc.sqrt": {"x": [2.0]}}, {"calc.cbrt": {"x": [8.0]}}])
    } else {
        json!([{"calc.sqrt": {"x": [2.0]}}])
    };
    let answers = json!({"id": id, "ground_truth": truth});
    let mut loaded = load_cases(&questions.to_string(), &answers.to_string());
    assert!(loaded.skipped.is_empty(), "{:?}", loaded.skipped);
    loaded.cases.remove(0)
}

/// `case` asked in mode `dialect`, read as `dialect`: its outcome and the requests sent.
async fn run(case: &Case, dialect: Dialect) -> (CaseOutcome, Vec<Json>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let evaluator = Evaluator::new(EvalOptions {
        endpoint: endpoint(seen.clone()).await,
        dialect,
        ..EvalOptions::default()
    })
    .unwrap();
    let outcome = evaluator
        .run(case, &"dialect".parse::<Mode>().unwrap())
        .await;
    let requests = seen.lock().unwrap().clone();
    (outcome, requests)
}

const HERMES: &str =
    "<tool_call>\n{\"name\": \"calc_sqrt\", \"arguments\": {\"x\": 2}}\n</tool_call>";

/// Weighed first (`--call-threshold`), a case records the odds its answer was held by:
/// the scripted first token opens a call with probability 0.8 (`<tool_call>` and `{`
/// count, prose does not), above the threshold, so the call is made; a mode that is not
/// weighed records none.
#[tokio::test]
async fn a_weighed_case_records_its_call_odds() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let first_token = |top: &[(&str, f64)]| {
        let top: Vec<Json> = top
            .iter()
            .map(|(token, p)| json!({"token": token, "logprob": p.ln()}))
            .collect();
        let mut answer = scripted::says("<tool_call>", 40, 1);
        answer["choices"][0]["logprobs"] = json!({"content": [{"top_logprobs": top}]});
        answer
    };
    let weighed = first_token(&[("<tool_call>", 0.6), ("{", 0.2), ("I", 0.2)]);
    let kept = seen.clone();
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |axum::Json(request): axum::Json<Json>| {
            let (weighed, seen) = (weighed.clone(), kept.clone());
            async move {
                if request["logprobs"] == true {
                    return axum::Json(weighed);
                }
                seen.lock().unwrap().push(request.clone());
                axum::Json(scripted::says(&question(&request), 50, 7))
            }
        }),
    );
    let evaluator = Evaluator::new(EvalOptions {
        endpoint: scripted::serve(app).await,
        dialect: Dialect::Hermes,
        call_threshold: atfunc_gateway::serve::CallThreshold::At(0.5),
        ..EvalOptions::default()
    })
    .unwrap();
    let case = case("simple_0", HERMES);
    let outcome = evaluator
        .run(&case, &"dialect-auto".parse::<Mode>().unwrap())
        .await;
    assert!(outcome.correct, "{outcome:?}");
    let odds = outcome.call_odds.unwrap_or_default();
    assert!((odds - 0.8).abs() < 1e-9, "{outcome:?}");
    // After the first token, one answer, held to the `required` grammar.
    let answered = seen.lock().unwrap().clone();
    assert_eq!(answered.len(), 1, "{answered:#?}");
    assert!(answered[0]["grammar"].is_string(), "{answered:#?}");
    let plain = evaluator
        .run(&case, &"dialect".parse::<Mode>().unwrap())
        .await;
    assert!(plain.correct && plain.call_odds.is_none(), "{plain:?}");
}

#[tokio::test]
async fn the_request_carries_the_tools_for_the_template_and_no_atfunc_prompt() {
    let case = case("simple_0", HERMES);
    let (outcome, requests) = run(&case, Dialect::Hermes).await;
    assert_eq!(requests.len(), 1, "{requests:#?}");
    let request = &requests[0];
    // The case's messages as they are: no system message with the atfunc prompt.
    assert_eq!(
        request["messages"],
        json!([{"role": "user", "content": HERMES}])
    );
    let rendered = to_openai_tools(
        &case.interfaces,
        &ToolFormatOptions::default().with_control_fields(ControlFields::none()),
    );
    assert_eq!(request["tools"], rendered.tools);
    assert_eq!(request["tools"][0]["function"]["name"], "calc_sqrt");
    // A server without a tool parser refuses `auto`; the gateway sends `none` too.
    assert_eq!(request["tool_choice"], "none");
    assert_eq!(request["temperature"], 0);
    assert_eq!(request["max_tokens"], 256);
    // Asked as a stream with its usage, to be dropped at a repeated call; the scripted
    // server answers whole, which is read whole.
    assert_eq!(request["stream"], true);
    assert_eq!(request["stream_options"], json!({"include_usage": true}));
    for field in ["grammar", "parallel_tool_calls", "grammar_lazy"] {
        assert!(request.get(field).is_none(), "{field}: {request}");
    }
    assert!(
        outcome.correct && outcome.valid && !outcome.no_call,
        "{outcome:?}"
    );
    assert_eq!(
        outcome.calls,
        vec![json!({"name": "calc.sqrt", "args": {"x": 2}})]
    );
    assert_eq!(outcome.mode, "dialect");
    // The gateway's content: the call is taken out of it.
    assert_eq!(outcome.answer, "");
    assert_eq!((outcome.prompt_tokens, outcome.completion_tokens), (50, 7));
}

#[tokio::test]
async fn hermes_answers_are_scored_right_and_wrong() {
    let wrong_value = "<tool_call>{\"name\": \"calc_sqrt\", \"arguments\": {\"x\": 3}}</tool_call>";
    let (outcome, _) = run(&case("simple_1", wrong_value), Dialect::Hermes).await;
    assert!(outcome.valid && !outcome.correct, "{outcome:?}");
    assert!(outcome.error.is_some());

    let other_function =
        "Let me see. <tool_call>{\"name\": \"calc_cbrt\", \"arguments\": {\"x\": 2}}</tool_call>";
    let (outcome, _) = run(&case("simple_2", other_function), Dialect::Hermes).await;
    assert!(outcome.valid && !outcome.correct, "{outcome:?}");
    assert_eq!(
        outcome.calls,
        vec![json!({"name": "calc.cbrt", "args": {"x": 2}})]
    );

    // Two calls in one answer, in a parallel case: both bound, both scored.
    let two = concat!(
        "<tool_call>{\"name\": \"calc_cbrt\", \"arguments\": {\"x\": 8}}</tool_call>\n",
        "<tool_call>{\"name\": \"calc_sqrt\", \"arguments\": {\"x\": 2.0}}</tool_call>"
    );
    let (outcome, _) = run(&case("parallel_0", two), Dialect::Hermes).await;
    assert!(outcome.correct && outcome.valid, "{outcome:?}");
    assert_eq!(outcome.calls.len(), 2);
}

/// The model is shown the tools under their OpenAI names, which the gateway's client
/// defined: a call binds by that name; a name the client never defined (the case's own
/// `calc.sqrt`) is refused, and stays refused when the repair round does not fix it.
#[tokio::test]
async fn pythonic_answers_bind_by_the_name_the_client_defined() {
    let (outcome, _) = run(&case("simple_0", "[calc_sqrt(x=2)]"), Dialect::Pythonic).await;
    assert!(outcome.correct && outcome.valid, "{outcome:?}");
    let (outcome, requests) = run(&case("simple_0", "[calc.sqrt(x=2.0)]"), Dialect::Pythonic).await;
    assert!(!outcome.valid && !outcome.no_call, "{outcome:?}");
    assert_eq!(requests.len(), 2, "a repair round: {requests:#?}");
    let (outcome, _) = run(&case("simple_0", "[calc_sqrt(x=4)]"), Dialect::Pythonic).await;
    assert!(outcome.valid && !outcome.correct, "{outcome:?}");
}

#[tokio::test]
async fn auto_reads_each_answer_in_the_format_it_opens_with() {
    let answers = [
        HERMES,
        "[calc_sqrt(x=2)]",
        "<|python_tag|>{\"name\": \"calc_sqrt\", \"parameters\": {\"x\": 2}}",
        "[TOOL_CALLS][{\"name\": \"calc_sqrt\", \"arguments\": {\"x\": 2}}]",
        "<tool_call>\n<function=calc_sqrt>\n<parameter=x>\n2\n</parameter>\n</function>\n</tool_call>",
    ];
    for answer in answers {
        let (outcome, _) = run(&case("simple_0", answer), Dialect::Auto).await;
        assert!(
            outcome.correct && outcome.valid && !outcome.no_call,
            "{answer}: {outcome:?}"
        );
        assert_eq!(
            outcome.calls,
            vec![json!({"name": "calc.sqrt", "args": {"x": 2}})],
            "{answer}"
        );
    }
}

#[tokio::test]
async fn a_call_that_does_not_bind_is_an_invalid_answer() {
    // An argument the function does not have, and a function the case does not have.
    for (answer, says) in [
        (
            "<tool_call>{\"name\": \"calc_sqrt\", \"arguments\": {\"y\": 2}}</tool_call>",
            "calc.sqrt",
        ),
        (
            "<tool_call>{\"name\": \"calc_log\", \"arguments\": {\"x\": 2}}</tool_call>",
            "calc_log",
        ),
    ] {
        let (outcome, _) = run(&case("simple_0", answer), Dialect::Hermes).await;
        assert!(
            !outcome.valid && !outcome.correct && !outcome.no_call,
            "{outcome:?}"
        );
        assert!(outcome.calls.is_empty());
        let error = outcome.error.unwrap_or_default();
        // Quoted as the model wrote it, with the binder's reason.
        assert!(error.starts_with("<tool_call>"), "{error}");
        assert!(error.contains(says), "{error}");
    }

    // A call block opened and never closed is a call gone wrong, not prose.
    let cut = "<tool_call>{\"name\": \"calc_sqrt\", \"argu";
    let (outcome, _) = run(&case("simple_0", cut), Dialect::Hermes).await;
    assert!(!outcome.valid && !outcome.no_call, "{outcome:?}");
    let error = outcome.error.unwrap_or_default();
    assert!(error.contains("This call could not be read"), "{error}");
}

#[tokio::test]
async fn an_answer_without_a_call_is_scored_as_no_call() {
    let prose = "The square root of 2 is about 1.414.";
    let (outcome, _) = run(&case("simple_0", prose), Dialect::Auto).await;
    assert!(outcome.no_call && !outcome.valid && !outcome.correct);
    assert_eq!(outcome.error.as_deref(), Some("the answer has no call"));
    // Where no function fits the question, that is the right answer.
    let (outcome, _) = run(&case("irrelevance_0", prose), Dialect::Auto).await;
    assert!(outcome.no_call && outcome.correct, "{outcome:?}");
    // A call in another format than the one read is not seen.
    let (outcome, _) = run(&case("simple_0", HERMES), Dialect::Pythonic).await;
    assert!(outcome.no_call && !outcome.correct, "{outcome:?}");
}

/// `atfunc eval --mode dialect`: the report names the dialect, and a run that reads
/// another dialect does not continue it.
#[test]
fn the_report_names_the_dialect_and_another_dialect_does_not_continue_it() {
    let dir = tempfile::tempdir().unwrap();
    let questions = dir.path().join("questions.json");
    let answers = dir.path().join("answers.json");
    let report = dir.path().join("report.json");
    let table = dir.path().join("table.md");
    let chart = dir.path().join("chart.svg");
    let functions: Json = serde_json::from_str(FUNCTIONS).unwrap();
    let lines: Vec<String> = [
        HERMES,
        "[calc_sqrt(x=2)]",
        "<tool_call>{\"name\": \"calc_sqrt\", \"arguments\": {\"x\": 3}}</tool_call>",
    ]
    .iter()
    .enumerate()
    .map(|(i, answer)| {
        json!({"id": format!("simple_{i}"), "question": [[{"role": "user", "content": answer}]],
            "function": functions})
        .to_string()
    })
    .collect();
    std::fs::write(&questions, lines.join("\n")).unwrap();
    let truth: Vec<String> = (0..3)
        .map(|i| {
            json!({"id": format!("simple_{i}"), "ground_truth": [{"calc.sqrt": {"x": [2.0]}}]})
                .to_string()
        })
        .collect();
    std::fs::write(&answers, truth.join("\n")).unwrap();
    let endpoint = scripted::serve_on_thread(router(Arc::new(Mutex::new(Vec::new()))));
    let p = |path: &std::path::Path| path.to_str().unwrap().to_owned();
    let eval = |extra: &[&str]| {
        let mut args = vec![
            "eval".to_owned(),
            "--endpoint".to_owned(),
            endpoint.clone(),
            "--questions".to_owned(),
            p(&questions),
            "--answers".to_owned(),
            p(&answers),
            "--json".to_owned(),
            p(&report),
            "--markdown".to_owned(),
            p(&table),
        ];
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        support::atfunc(&args, b"")
    };
    let read_report =
        || -> Json { serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap() };

    let chart_path = p(&chart);
    let first = eval(&[
        "--mode",
        "dialect",
        "--dialect",
        "hermes",
        "--chart",
        &chart_path,
    ]);
    assert!(first.status.success(), "{}", support::stderr(&first));
    let stdout = support::stdout(&first);
    assert!(stdout.contains("dialect (hermes)"), "{stdout}");
    let written = read_report();
    assert_eq!(written["settings"]["dialect"], "hermes");
    // The hermes answers: one right, one wrong value; the pythonic one is no call.
    assert_eq!(written["modes"]["dialect"]["cases"], 3);
    assert_eq!(written["modes"]["dialect"]["correct"], 1);
    assert_eq!(written["modes"]["dialect"]["valid_answers"], 2);
    assert_eq!(written["modes"]["dialect"]["no_call_answers"], 1);
    let markdown = std::fs::read_to_string(&table).unwrap();
    assert!(markdown.contains("| dialect (hermes) |"), "{markdown}");
    let svg = std::fs::read_to_string(&chart).unwrap();
    assert!(svg.contains("dialect (hermes)"), "{svg}");

    // Another dialect would mix two readings in one mode: refused, the report untouched.
    let before = std::fs::read_to_string(&report).unwrap();
    let other = eval(&["--mode", "dialect", "--dialect", "pythonic"]);
    let stderr = support::stderr(&other);
    assert_eq!(other.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "its mode 'dialect' read the answers as hermes, and this run reads them as pythonic"
        ),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&report).unwrap(), before);

    // A run of another mode continues it, and the dialect stays named.
    let text = eval(&["--mode", "text"]);
    assert!(text.status.success(), "{}", support::stderr(&text));
    let written = read_report();
    assert_eq!(written["settings"]["dialect"], "hermes");
    assert_eq!(written["modes"]["dialect"]["cases"], 3);
    assert_eq!(written["modes"]["text"]["cases"], 3);

    // atfunc's own syntax is not a model's own format.
    let atfunc = eval(&["--mode", "dialect", "--dialect", "atfunc"]);
    let stderr = support::stderr(&atfunc);
    assert_eq!(atfunc.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--dialect is atfunc"), "{stderr}");

    // The threshold weighs modes under "auto" with a grammar, and is a probability.
    for (args, expected) in [
        (
            &["--mode", "grammar", "--call-threshold", "0.5"][..],
            "none is asked",
        ),
        (
            &[
                "--mode",
                "dialect-auto",
                "--dialect",
                "hermes",
                "--call-threshold",
                "1.5",
            ][..],
            "above 0 and at most 1",
        ),
    ] {
        let refused = eval(args);
        let stderr = support::stderr(&refused);
        assert_eq!(refused.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
    }

    // Only hermes has a grammar of its own format, under either tool choice.
    for mode in ["dialect-grammar", "dialect-auto"] {
        let held = eval(&["--mode", mode, "--dialect", "pythonic"]);
        let stderr = support::stderr(&held);
        assert_eq!(held.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("mode '{mode}' holds answers to a grammar"))
                && stderr.contains("give --dialect hermes"),
            "{stderr}"
        );
    }
}
