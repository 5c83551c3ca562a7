//! The evaluator: BFCL scoring on hand-made cases and on the ground truth itself, and
//! `atfunc eval` against a scripted endpoint (every mode, a repair, an endpoint error, a
//! timeout, a case that does not load).

use crate::call_text;
use crate::support;

use atfunc::interop::ToolCall;
use atfunc::{bind, parse_events, Catalog, Event};
use atfunc_lab::eval::{load_cases, score, Case, Mismatch, ScoredCall};
use call_text::{first_answer, may_leave_out};
use serde_json::{json, Map, Value as Json};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/bfcl/");

fn call(name: &str, args: Json) -> ScoredCall {
    ScoredCall {
        name: name.into(),
        args: args.as_object().cloned().unwrap_or_default(),
    }
}

fn check(
    category: &str,
    functions: Json,
    truth: Json,
    calls: &[ScoredCall],
) -> Result<(), Mismatch> {
    score(
        category,
        functions.as_array().unwrap(),
        truth.as_array().unwrap(),
        calls,
    )
}

fn weather() -> Json {
    json!([{"name": "weather.get", "parameters": {"type": "dict", "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "ratio": {"type": "float"},
        "units": {"type": "array", "items": {"type": "string"}},
        "filters": {"type": "dict", "properties": {"kind": {"type": "string"}, "max": {"type": "integer"}}},
        "legs": {"type": "array", "items": {"type": "dict"}},
        "metric": {"type": "boolean"}},
        "required": ["city"]}},
      {"name": "weather.alerts", "parameters": {"type": "dict", "properties": {
        "city": {"type": "string"}}, "required": ["city"]}}])
}

#[test]
fn strings_compare_after_bfcl_normalisation() {
    let truth = json!([{"weather.get": {"city": ["New York, NY"]}}]);
    for city in ["new york ny", "New_York,NY", "NEW-YORK NY.", "newyork/ny"] {
        assert_eq!(
            check(
                "simple",
                weather(),
                truth.clone(),
                &[call("weather.get", json!({"city": city}))]
            ),
            Ok(()),
            "{city}"
        );
    }
    let wrong = check(
        "simple",
        weather(),
        truth,
        &[call("weather.get", json!({"city": "Boston"}))],
    );
    assert!(matches!(wrong, Err(Mismatch::Value { .. })), "{wrong:?}");
}

#[test]
fn optional_parameters_may_be_left_out_only_where_the_answer_allows() {
    let truth = json!([{"weather.get": {"city": ["Oslo"], "days": ["", 3], "metric": [true]}}]);
    // `metric` has no "" among its answers: leaving it out fails.
    let left_out = check(
        "simple",
        weather(),
        truth.clone(),
        &[call("weather.get", json!({"city": "Oslo"}))],
    );
    assert!(
        matches!(left_out, Err(Mismatch::MissingOptional { ref param, .. }) if param == "metric"),
        "{left_out:?}"
    );
    let ok = check(
        "simple",
        weather(),
        truth.clone(),
        &[call("weather.get", json!({"city": "Oslo", "metric": true}))],
    );
    assert_eq!(ok, Ok(()));
    let with_days = json!({"city": "Oslo", "metric": true, "days": 3});
    assert_eq!(
        check(
            "simple",
            weather(),
            truth.clone(),
            &[call("weather.get", with_days)]
        ),
        Ok(())
    );
    let bad_days = json!({"city": "Oslo", "metric": true, "days": 4});
    assert!(check(
        "simple",
        weather(),
        truth.clone(),
        &[call("weather.get", bad_days)]
    )
    .is_err());
    // A parameter the answer does not list is unexpected, even if declared.
    let extra = json!({"city": "Oslo", "metric": true, "ratio": 0.5});
    let unexpected = check("simple", weather(), truth, &[call("weather.get", extra)]);
    assert!(matches!(unexpected, Err(Mismatch::Unexpected { ref param, .. }) if param == "ratio"));
}

#[test]
fn required_parameters_names_and_counts() {
    let truth = json!([{"weather.get": {"city": ["Oslo"]}}]);
    let missing = check(
        "simple",
        weather(),
        truth.clone(),
        &[call("weather.get", json!({}))],
    );
    assert!(
        matches!(missing, Err(Mismatch::Missing { .. })),
        "{missing:?}"
    );
    let name = check(
        "multiple",
        weather(),
        truth.clone(),
        &[call("weather.alerts", json!({"city": "Oslo"}))],
    );
    assert!(matches!(name, Err(Mismatch::Name { .. })), "{name:?}");
    let two = [
        call("weather.get", json!({"city": "Oslo"})),
        call("weather.get", json!({"city": "Oslo"})),
    ];
    assert_eq!(
        check("simple", weather(), truth.clone(), &two),
        Err(Mismatch::Count {
            expected: 1,
            got: 2
        })
    );
    assert_eq!(
        check("simple", weather(), truth, &[]),
        Err(Mismatch::Count {
            expected: 1,
            got: 0
        })
    );
}

#[test]
fn numbers_types_lists_and_dicts() {
    // An integer where a float is declared is fine; a float where an integer is, is not.
    let truth = json!([{"weather.get": {"city": ["Oslo"], "ratio": [2.0], "days": [2]}}]);
    let ints = json!({"city": "Oslo", "ratio": 2, "days": 2});
    assert_eq!(
        check(
            "simple",
            weather(),
            truth.clone(),
            &[call("weather.get", ints)]
        ),
        Ok(())
    );
    let float_days = json!({"city": "Oslo", "ratio": 2.0, "days": 2.5});
    let typed = check(
        "simple",
        weather(),
        truth,
        &[call("weather.get", float_days)],
    );
    assert!(matches!(typed, Err(Mismatch::Type { .. })), "{typed:?}");
    // A string where the answer itself holds a string (BFCL's "variable") is compared as is.
    let variable = json!([{"weather.get": {"city": ["Oslo"], "days": ["n_days"]}}]);
    assert_eq!(
        check(
            "simple",
            weather(),
            variable,
            &[call(
                "weather.get",
                json!({"city": "Oslo", "days": "n_days"})
            )]
        ),
        Ok(())
    );
    // Lists: item by item, strings normalised, order matters.
    let truth = json!([{"weather.get": {"city": ["Oslo"], "units": [["Celsius", "km/h"]]}}]);
    let same = json!({"city": "Oslo", "units": ["celsius", "KM H"]});
    assert_eq!(
        check(
            "simple",
            weather(),
            truth.clone(),
            &[call("weather.get", same)]
        ),
        Ok(())
    );
    let swapped = json!({"city": "Oslo", "units": ["km/h", "Celsius"]});
    assert!(check("simple", weather(), truth, &[call("weather.get", swapped)]).is_err());
    // Dicts: each given field among its answers; a field left out only where "" is allowed.
    let truth = json!([{"weather.get": {"city": ["Oslo"],
        "filters": [{"kind": ["Rain", "snow"], "max": ["", 5]}]}}]);
    for filters in [json!({"kind": "rain"}), json!({"kind": "Snow", "max": 5})] {
        let args = json!({"city": "Oslo", "filters": filters});
        assert_eq!(
            check(
                "simple",
                weather(),
                truth.clone(),
                &[call("weather.get", args)]
            ),
            Ok(()),
            "{filters}"
        );
    }
    for filters in [
        json!({"max": 5}),
        json!({"kind": "rain", "max": 6}),
        json!({"kind": "rain", "extra": 1}),
    ] {
        let args = json!({"city": "Oslo", "filters": filters});
        assert!(
            check(
                "simple",
                weather(),
                truth.clone(),
                &[call("weather.get", args)]
            )
            .is_err(),
            "{filters}"
        );
    }
    // Lists of dicts: same length, each dict at its position.
    let truth = json!([{"weather.get": {"city": ["Oslo"],
        "legs": [[{"from": ["Oslo"]}, {"from": ["Bergen"]}]]}}]);
    let legs = json!({"city": "Oslo", "legs": [{"from": "oslo"}, {"from": "bergen"}]});
    assert_eq!(
        check(
            "simple",
            weather(),
            truth.clone(),
            &[call("weather.get", legs)]
        ),
        Ok(())
    );
    let short = json!({"city": "Oslo", "legs": [{"from": "oslo"}]});
    assert!(check("simple", weather(), truth, &[call("weather.get", short)]).is_err());
}

#[test]
fn parallel_calls_match_in_any_order() {
    let truth = json!([{"weather.get": {"city": ["Oslo"]}}, {"weather.get": {"city": ["Paris"]}},
                       {"weather.alerts": {"city": ["Rome"]}}]);
    let calls = [
        call("weather.alerts", json!({"city": "Rome"})),
        call("weather.get", json!({"city": "Paris"})),
        call("weather.get", json!({"city": "Oslo"})),
    ];
    assert_eq!(
        check("parallel_multiple", weather(), truth.clone(), &calls),
        Ok(())
    );
    // The same calls in a non-parallel category: the first call is compared with the first answer.
    assert!(check(
        "multiple",
        weather(),
        json!([truth[0].clone()]),
        &calls[..1]
    )
    .is_err());
    // One call cannot stand for two expected calls.
    let twice = [
        call("weather.get", json!({"city": "Oslo"})),
        call("weather.get", json!({"city": "Oslo"})),
        call("weather.alerts", json!({"city": "Rome"})),
    ];
    let unmatched = check("parallel_multiple", weather(), truth, &twice);
    assert!(
        matches!(unmatched, Err(Mismatch::Unmatched { .. })),
        "{unmatched:?}"
    );
}

// ------------------------------------------------------------ the ground truth itself

/// Ground-truth calls the BFCL data itself makes unbindable (see `NOT_BINDABLE` in
/// crates/atfunc/tests/bind/bfcl.rs): their values do not fit their declared types.
const NOT_BINDABLE: [&str; 2] = ["parallel_multiple_21", "parallel_multiple_94"];

/// The first acceptable value (dict fields too); `None` where the answer allows leaving
/// an optional parameter out and says so first, or allows leaving out a parameter the
/// function does not declare (two answers name one).
fn first_value(acceptable: &Json, required: bool, declared: bool) -> Option<Json> {
    let options = acceptable.as_array()?;
    if may_leave_out(options, required, declared) {
        return None;
    }
    options.iter().find(|v| *v != "").map(first_answer)
}

/// The case's ground truth written as atfunc call text, parsed and bound; `Err` with the
/// first bind error.
fn ground_truth_calls(case: &Case) -> Result<Vec<ScoredCall>, String> {
    let catalog = Catalog::new(case.interfaces.clone());
    let mut text = String::new();
    for expected in &case.ground_truth {
        for (name, params) in expected.as_object().unwrap() {
            let mut args = Map::new();
            let interface = case
                .interfaces
                .iter()
                .find(|i| &i.qualified_name() == name)
                .unwrap();
            for (param, acceptable) in params.as_object().unwrap() {
                let declared = interface.params.iter().find(|p| &p.name == param);
                let required = declared.is_some_and(|p| p.required);
                if let Some(value) = first_value(acceptable, required, declared.is_some()) {
                    args.insert(param.clone(), value);
                }
            }
            let call = ToolCall {
                id: String::new(),
                name: name.clone(),
                model_name: name.clone(),
                args,
                body: None,
            };
            text.push_str(&call.call_text().unwrap());
            text.push('\n');
        }
    }
    let mut calls = Vec::new();
    for event in parse_events(&text) {
        match event {
            Event::Call(call) => {
                let bound = bind(&call, &catalog).map_err(|e| e.to_string())?;
                calls.push(ScoredCall {
                    name: bound.name,
                    args: bound.args,
                });
            }
            Event::Malformed { error, .. } => return Err(error.to_string()),
            _ => {}
        }
    }
    Ok(calls)
}

#[test]
fn the_ground_truth_scores_full_marks() {
    let mut scored = 0;
    for file in [
        "BFCL_v4_simple_python.json",
        "BFCL_v4_multiple.json",
        "BFCL_v4_parallel.json",
        "BFCL_v4_parallel_multiple.json",
    ] {
        let questions = std::fs::read_to_string(format!("{DATA}{file}")).unwrap();
        let answers = std::fs::read_to_string(format!("{DATA}possible_answer/{file}")).unwrap();
        let loaded = load_cases(&questions, &answers);
        assert!(loaded.skipped.is_empty(), "{file}: {:?}", loaded.skipped);
        assert_eq!(
            loaded.cases.len(),
            questions.lines().filter(|l| !l.trim().is_empty()).count()
        );
        for case in &loaded.cases {
            match ground_truth_calls(case) {
                Err(error) => assert!(
                    NOT_BINDABLE.contains(&case.id.as_str()),
                    "{}: {error}",
                    case.id
                ),
                Ok(calls) => {
                    assert!(
                        !NOT_BINDABLE.contains(&case.id.as_str()),
                        "{} bound",
                        case.id
                    );
                    let result = score(&case.category, &case.functions, &case.ground_truth, &calls);
                    assert_eq!(result, Ok(()), "{}: {calls:?}", case.id);
                    scored += 1;
                }
            }
        }
    }
    assert_eq!(scored, 400 + 200 + 200 + 200 - NOT_BINDABLE.len());
}

// ------------------------------------------------------------ against a scripted endpoint

/// Five cases and a line that does not load. What the scripted endpoint answers depends
/// on the question (see [`scripted`]).
const QUESTIONS: &str = r#"{"id": "simple_0", "question": [[{"role": "user", "content": "q-good"}]], "function": [{"name": "calc.sqrt", "description": "Square root", "parameters": {"type": "dict", "properties": {"x": {"type": "float", "description": "the number"}}, "required": ["x"]}}]}
{"id": "simple_1", "question": [[{"role": "user", "content": "q-fix"}]], "function": [{"name": "calc.sqrt", "parameters": {"type": "dict", "properties": {"x": {"type": "float"}}, "required": ["x"]}}]}
{"id": "simple_2", "question": [[{"role": "user", "content": "q-wrong"}]], "function": [{"name": "calc.sqrt", "parameters": {"type": "dict", "properties": {"x": {"type": "float"}}, "required": ["x"]}}]}
{"id": "simple_3", "question": [[{"role": "user", "content": "q-error"}]], "function": [{"name": "calc.sqrt", "parameters": {"type": "dict", "properties": {"x": {"type": "float"}}, "required": ["x"]}}]}
{"id": "simple_4", "question": [[{"role": "user", "content": "q-slow"}]], "function": [{"name": "calc.sqrt", "parameters": {"type": "dict", "properties": {"x": {"type": "float"}}, "required": ["x"]}}]}
{"id": "simple_5", "question": "not a list", "function": []}
"#;

const ANSWERS: &str = r#"{"id": "simple_0", "ground_truth": [{"calc.sqrt": {"x": [2.0]}}]}
{"id": "simple_1", "ground_truth": [{"calc.sqrt": {"x": [2.0]}}]}
{"id": "simple_2", "ground_truth": [{"calc.sqrt": {"x": [2.0]}}]}
{"id": "simple_3", "ground_truth": [{"calc.sqrt": {"x": [2.0]}}]}
{"id": "simple_4", "ground_truth": [{"calc.sqrt": {"x": [2.0]}}]}
{"id": "simple_5", "ground_truth": [{"calc.sqrt": {"x": [2.0]}}]}
"#;

/// The scripted model: `q-good` answers right, `q-fix` wrongly until shown a repair note,
/// `q-wrong` with a valid but wrong call, `q-error` with a 500, `q-slow` after the
/// client's timeout. With `tools` it answers through `tool_calls`.
async fn scripted(axum::Json(request): axum::Json<Json>) -> axum::response::Response {
    use axum::response::IntoResponse;
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let question = messages
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    let repairing = messages.iter().any(|m| {
        m["role"] == "user"
            && m["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("Function call:"))
    });
    let native = request.get("tools").is_some();
    let grammar = request.get("grammar").and_then(Json::as_str).is_some();
    let text = match question.as_str() {
        "q-error" => {
            let error = json!({"error": {"message": "model overloaded", "type": "server_error"}});
            return (
                axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                axum::Json(error),
            )
                .into_response();
        }
        "q-slow" => {
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            "@calc.sqrt(2)"
        }
        "q-fix" if !repairing && !grammar => "Sure: @calc.sqrt(y=2)",
        "q-wrong" => "@calc.sqrt(3)",
        _ => "Here: @calc.sqrt(x=2)",
    };
    let message = if native {
        let x = if question == "q-wrong" { 3 } else { 2 };
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "calc_sqrt", "arguments": json!({"x": x}).to_string()}}]})
    } else {
        json!({"role": "assistant", "content": text})
    };
    axum::Json(crate::scripted::completion(message, 100, 10)).into_response()
}

/// Starts the scripted endpoint on a free loopback port; returns its base URL.
fn scripted_endpoint() -> String {
    crate::scripted::serve_on_thread(
        axum::Router::new().route("/v1/chat/completions", axum::routing::post(scripted)),
    )
}

#[test]
fn eval_scores_every_mode_against_a_scripted_endpoint() {
    let endpoint = scripted_endpoint();
    let dir = tempfile::tempdir().unwrap();
    let questions = dir.path().join("questions.json");
    let answers = dir.path().join("answers.json");
    let report = dir.path().join("report.json");
    let chart = dir.path().join("chart.svg");
    std::fs::write(&questions, QUESTIONS).unwrap();
    std::fs::write(&answers, ANSWERS).unwrap();
    let path = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    let output = support::atfunc(
        &[
            "eval",
            "--endpoint",
            &endpoint,
            "--questions",
            &path(&questions),
            "--answers",
            &path(&answers),
            "--mode",
            "text,repair,native,text+desc",
            "--timeout",
            "1",
            "--concurrency",
            "3",
            "--json",
            &path(&report),
            "--chart",
            &path(&chart),
        ],
        b"",
    );
    let stderr = support::stderr(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("case simple_5 skipped: \"question\" must be a list of turns"),
        "{stderr}"
    );
    let table = support::stdout(&output);
    assert!(table.starts_with("mode "), "{table}");
    assert!(table.contains("1 case(s) skipped"), "{table}");

    let report: Json = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let mode = |name: &str| report["modes"][name].clone();
    // text: q-good right; q-fix refused; q-wrong valid but wrong; two failed requests.
    assert_eq!(mode("text")["cases"], 5);
    assert_eq!(mode("text")["accuracy"], 0.2);
    assert_eq!(mode("text")["valid"], 0.4);
    assert_eq!(mode("text")["failed_requests"], 2);
    assert_eq!(
        mode("text")["tokens"]["prompt"],
        60.0,
        "two of five failed: 3 x 100 / 5"
    );
    // repair: q-fix fixed in the second round.
    assert_eq!(mode("repair")["accuracy"], 0.4);
    assert_eq!(mode("repair")["valid"], 0.6);
    assert_eq!(mode("native")["accuracy"], 0.4);
    assert_eq!(mode("native")["valid"], 0.6);
    assert_eq!(mode("text+desc")["accuracy"], 0.2);
    assert_eq!(mode("text")["categories"]["simple"]["cases"], 5);
    assert!(
        mode("text")["latency_ms"]["p95"].as_u64().unwrap() >= 1000,
        "the timed-out case waited"
    );
    let outcomes = report["outcomes"].as_array().unwrap();
    let outcome = |mode: &str, id: &str| {
        outcomes
            .iter()
            .find(|o| o["mode"] == mode && o["id"] == id)
            .cloned()
            .unwrap()
    };
    assert_eq!(
        outcome("text", "simple_3")["error"],
        "the gateway answered 500 Internal Server Error: model overloaded"
    );
    assert_eq!(
        outcome("text", "simple_4")["error"],
        "the gateway answered 504 Gateway Timeout: The upstream server did not answer within 1s"
    );
    assert_eq!(
        outcome("text", "simple_1")["error"],
        "calc.sqrt(y=2): The call of function 'calc.sqrt' has 2 problems:\n\
         - Unknown parameter 'y' for function 'calc.sqrt': valid parameters are x\n\
         - Missing required parameter for function 'calc.sqrt': x"
    );
    assert_eq!(
        outcome("text", "simple_2")["error"],
        "calc.sqrt: parameter 'x' is 3, expected one of [2.0]"
    );
    assert_eq!(report["skipped"][0]["id"], "simple_5");
    assert_eq!(report["interrupted"], false);
    let svg = std::fs::read_to_string(&chart).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("text+desc") && svg.contains("accuracy"),
        "{svg}"
    );
}

#[test]
fn eval_refuses_unknown_modes_and_missing_files() {
    let output = support::atfunc(
        &[
            "eval",
            "--endpoint",
            "http://127.0.0.1:9",
            "--questions",
            "tests/data/bfcl/BFCL_v4_multiple.json",
            "--answers",
            "tests/data/bfcl/possible_answer/BFCL_v4_multiple.json",
            "--mode",
            "text,guess",
        ],
        b"",
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        support::stderr(&output).contains("unknown mode 'guess'"),
        "{}",
        support::stderr(&output)
    );
    let output = support::atfunc(
        &[
            "eval",
            "--endpoint",
            "http://127.0.0.1:9",
            "--questions",
            "nope.json",
            "--answers",
            "nope.json",
        ],
        b"",
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        support::stderr(&output).contains("cannot read nope.json"),
        "{}",
        support::stderr(&output)
    );
}
