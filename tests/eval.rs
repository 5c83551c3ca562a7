//! The evaluator: BFCL scoring on hand-made cases and on the ground truth itself, and
//! `atfunc eval` against a scripted endpoint (every mode, a repair, an endpoint error, a
//! timeout, a case that does not load).
#![cfg(feature = "eval")]

mod support;

use atfunc::eval::{load_cases, score, Case, Mismatch, ScoredCall};
use atfunc::interop::ToolCall;
use atfunc::{bind, parse_events, Catalog, Event};
use serde_json::{json, Map, Value as Json};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/bfcl/");

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
/// tests/bfcl.rs): their values do not fit their declared types.
const NOT_BINDABLE: [&str; 2] = ["parallel_multiple_21", "parallel_multiple_94"];

/// The first acceptable value (dict fields too); `None` where the answer allows leaving
/// an optional parameter out and says so first, or allows leaving out a parameter the
/// function does not declare (two answers name one).
fn first_value(acceptable: &Json, required: bool, declared: bool) -> Option<Json> {
    let options = acceptable.as_array()?;
    let omittable = options.iter().any(|v| v == "");
    if omittable && !required && (options.first() == Some(&json!("")) || !declared) {
        return None;
    }
    options.iter().find(|v| *v != "").map(resolve)
}

fn resolve(value: &Json) -> Json {
    match value {
        Json::Object(fields) => Json::Object(
            fields
                .iter()
                .filter_map(|(k, v)| {
                    let first = match v.as_array() {
                        Some(options) => options.iter().find(|o| *o != "")?,
                        None => v,
                    };
                    Some((k.clone(), resolve(first)))
                })
                .collect(),
        ),
        Json::Array(items) => Json::Array(items.iter().map(resolve).collect()),
        other => other.clone(),
    }
}

/// The case's ground truth written as atfunc call text, parsed and bound; `Err` with the
/// first bind error.
fn ground_truth_calls(case: &Case) -> Result<Vec<ScoredCall>, String> {
    let catalog = Catalog::new(case.interfaces.clone(), false);
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
            text.push_str("\n");
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
