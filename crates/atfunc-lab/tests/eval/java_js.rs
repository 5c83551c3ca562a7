//! BFCL's `simple_java` and `simple_javascript`: the functions as BFCL presents them (every
//! parameter a string holding a literal), and answers scored by BFCL's rules for the two
//! languages, on real cases of the files.

use crate::support;
use atfunc::interface::ParamType;
use atfunc_lab::eval::{load_cases, score, Case, Mismatch, ScoredCall, BFCL_SIMPLE};
use serde_json::{json, Value as Json};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/bfcl/");

fn cases(file: &str) -> Vec<Case> {
    let questions = std::fs::read_to_string(format!("{DATA}{file}")).unwrap();
    let answers = std::fs::read_to_string(format!("{DATA}possible_answer/{file}")).unwrap();
    let loaded = load_cases(&questions, &answers);
    assert!(loaded.skipped.is_empty(), "{:?}", loaded.skipped);
    loaded.cases
}

fn case(id: &str) -> Case {
    let file = if id.contains("javascript") {
        "BFCL_v4_simple_javascript.json"
    } else {
        "BFCL_v4_simple_java.json"
    };
    cases(file).into_iter().find(|c| c.id == id).unwrap()
}

/// Scores one call of the case's function with `args`.
fn check(case: &Case, args: Json) -> Result<(), Mismatch> {
    let name = case.functions[0]["name"].as_str().unwrap();
    let call = ScoredCall {
        name: name.into(),
        args: args.as_object().unwrap().clone(),
    };
    score(&case.category, &case.functions, &case.ground_truth, &[call])
}

#[test]
fn every_case_loads_with_string_parameters_only() {
    for (file, count, hint) in [
        ("BFCL_v4_simple_java.json", 100, "Java 8 SDK syntax."),
        ("BFCL_v4_simple_javascript.json", 50, "JavaScript syntax."),
    ] {
        let cases = cases(file);
        assert_eq!(cases.len(), count, "{file}");
        for case in &cases {
            for interface in &case.interfaces {
                assert!(interface.description.ends_with(hint), "{}", case.id);
                for param in &interface.params {
                    assert_eq!(param.ty, ParamType::String, "{} {}", case.id, param.name);
                    assert!(
                        param.description.contains("in string representation."),
                        "{} {}",
                        case.id,
                        param.name
                    );
                }
            }
        }
    }
}

#[test]
fn parameters_are_described_as_bfcl_describes_them() {
    let java = case("simple_java_22");
    let ids = &java.interfaces[0].params[0];
    assert!(ids.description.ends_with(
        "Product ID is Long type This is Java ArrayList type parameter in string representation. \
         The list elements are of type long; they are not in string representation."
    ));
    let js = case("simple_javascript_23");
    let options = js.interfaces[0]
        .params
        .iter()
        .find(|p| p.name == "options")
        .unwrap();
    assert!(options.description.contains(
        "This is JavaScript dict type parameter in string representation. The dictionary \
         entries have the following schema; they are not in string representation. \
         {\"issuer\": {\"type\": \"\", \"description\": \"The entity that issued the token.\"}, "
    ));
    // The scorer still reads the types the file declares.
    assert_eq!(
        js.functions[0]["parameters"]["properties"]["options"]["type"],
        "dict"
    );
}

#[test]
fn java_right_answer_wrong_type_wrong_value() {
    let case = case("simple_java_1");
    let args = |use_short: Json, params: &str| json!({"object": "Customers", "useShortName": use_short, "params": params});
    let map =
        r#"new HashMap<String, Object>() {{ put("limit", 50); put("schemaFilter", "public"); }}"#;
    assert_eq!(check(&case, args(json!("true"), map)), Ok(()));
    // A JSON boolean is not a Java literal in a string.
    assert!(matches!(
        check(&case, args(json!(true), map)),
        Err(Mismatch::Type { .. })
    ));
    // Not a Java boolean: it stays a string, the wrong type.
    assert!(matches!(
        check(&case, args(json!("yes"), map)),
        Err(Mismatch::Type { .. })
    ));
    // "50" is a string in the map, where the answer wants the number 50.
    let quoted =
        r#"new HashMap<String, Object>() {{ put("limit", "50"); put("schemaFilter", "public"); }}"#;
    assert!(matches!(
        check(&case, args(json!("true"), quoted)),
        Err(Mismatch::Value { .. })
    ));

    let ids = case_ids("new ArrayList<Long>(Arrays.asList(101L, 202L, 303L))");
    assert_eq!(ids, Ok(()));
    // Without the `L`, a long stays a string item: the wrong type.
    assert!(matches!(
        case_ids("new ArrayList<Long>(Arrays.asList(101, 202, 303))"),
        Err(Mismatch::Type { .. })
    ));
    assert!(matches!(
        case_ids("new ArrayList<Long>(Arrays.asList(101L, 202L))"),
        Err(Mismatch::Value { .. })
    ));
}

fn case_ids(ids: &str) -> Result<(), Mismatch> {
    check(
        &case("simple_java_22"),
        json!({"ids": ids, "newStatus": "2"}),
    )
}

#[test]
fn a_java_string_array_keeps_its_quotes_as_in_bfcl() {
    let case = case("simple_java_90");
    // BFCL reads `new String[]{"-v", "-p"}` as the items `"-v"` and `"-p"` with their
    // quotes, which match no answer; only unquoted items do.
    let args = |array: &str| json!({"args": array, "out": "System.out"});
    assert!(matches!(
        check(&case, args(r#"new String[]{"-v", "-p"}"#)),
        Err(Mismatch::Value { .. })
    ));
    assert_eq!(check(&case, args("new String[]{-v, -p}")), Ok(()));
}

#[test]
fn javascript_right_answer_wrong_type_wrong_value() {
    let case = case("simple_javascript_3");
    let args = |coordinates: Json| json!({"action": "'submit'", "formId": "\"loginForm\"", "coordinates": coordinates});
    assert_eq!(check(&case, args(json!("[60, 30]"))), Ok(()));
    assert_eq!(check(&case, args(json!("new Array(60.0, 30.0)"))), Ok(()));
    // A JSON array is not a JavaScript literal in a string.
    assert!(matches!(
        check(&case, args(json!([60, 30]))),
        Err(Mismatch::Type { .. })
    ));
    assert!(matches!(
        check(&case, args(json!("[60, 'x']"))),
        Err(Mismatch::Type { .. })
    ));
    assert!(matches!(
        check(&case, args(json!("[30, 60]"))),
        Err(Mismatch::Value { .. })
    ));

    let case = case_js_23();
    let options =
        |text: &str| json!({"username": "'johndoe'", "validity": "3600", "options": text});
    assert_eq!(
        check(
            &case,
            options("{issuer: 'myapp.net', role: 'admin', algorithm: 'HS256'}")
        ),
        Ok(())
    );
    assert!(matches!(
        check(
            &case,
            options("{issuer: 'myapp.net', role: 'user', algorithm: 'HS256'}")
        ),
        Err(Mismatch::Value { .. })
    ));
    assert!(matches!(
        check(
            &case,
            json!({"username": "'johndoe'", "validity": "3600.5", "options": "{}"})
        ),
        Err(Mismatch::Type { .. })
    ));
}

fn case_js_23() -> Case {
    case("simple_javascript_23")
}

// ------------------------------------------------------------ against a scripted endpoint

/// The line of `file` (questions or possible answers) with this id.
fn line(file: &str, id: &str) -> String {
    let text = std::fs::read_to_string(format!("{DATA}{file}")).unwrap();
    let needle = format!("\"id\": \"{id}\"");
    text.lines()
        .find(|l| l.contains(&needle))
        .unwrap()
        .to_owned()
}

/// The scripted model answers through `tool_calls`, with the arguments of the question
/// (found by a word of it), but only where the tools are shown as BFCL shows them: a Java
/// or JavaScript parameter as a `string` in string representation.
async fn scripted(axum::Json(request): axum::Json<Json>) -> axum::response::Response {
    use axum::response::IntoResponse;
    let question = request["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    // `native` gets the tools; the gateway's modes get the atfunc prompt as the system
    // message.
    let tool = &request["tools"][0]["function"];
    if tool.is_null() {
        let system = request["messages"][0]["content"]
            .as_str()
            .unwrap_or_default();
        // Every parameter is text (no `{type}`), and the description says the syntax.
        let text = if system.contains("Java 8 SDK syntax.") && system.contains("<*useShortName>") {
            r#"@SQLCompletionAnalyzer.makeProposalsFromObject(object="Customers", useShortName="true", params="new HashMap<>() {{ put(\"limit\", 50); put(\"schemaFilter\", \"public\"); }}")"#
        } else {
            "no call"
        };
        let message = json!({"role": "assistant", "content": text});
        return axum::Json(crate::scripted::completion(message, 100, 10)).into_response();
    }
    let shown_as_strings = tool["parameters"]["properties"]
        .as_object()
        .unwrap()
        .values()
        .all(|p| {
            p["type"] == "string"
                && p["description"]
                    .as_str()
                    .is_some_and(|d| d.contains("in string representation."))
        });
    let args = if question.contains("triangle") {
        json!({"base": 10, "height": 5})
    } else if !shown_as_strings {
        json!({})
    } else if question.contains("SQL completion") {
        json!({"object": "Customers", "useShortName": "true",
               "params": r#"new HashMap<String, Object>() {{ put("limit", 50); put("schemaFilter", "public"); }}"#})
    } else if question.contains("product IDs") {
        // A long without its `L` stays a string: wrong, as BFCL scores it.
        json!({"ids": "new ArrayList<Long>(Arrays.asList(101, 202, 303))", "newStatus": "2"})
    } else {
        json!({"action": "'submit'", "formId": "'loginForm'", "coordinates": "[60, 30]"})
    };
    let message = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
        "type": "function", "function": {"name": tool["name"], "arguments": args.to_string()}}]});
    axum::Json(crate::scripted::completion(message, 100, 10)).into_response()
}

/// `atfunc eval` against `endpoint` on the questions and answers written to these files,
/// with the mode and outputs in `rest`; it must succeed.
fn run_eval(endpoint: &str, questions: &std::path::Path, answers: &std::path::Path, rest: &[&str]) {
    let (questions, answers) = (questions.to_str().unwrap(), answers.to_str().unwrap());
    let mut args = vec![
        "eval",
        "--endpoint",
        endpoint,
        "--questions",
        questions,
        "--answers",
        answers,
    ];
    args.extend_from_slice(rest);
    let output = support::atfunc(&args, b"");
    assert!(output.status.success(), "{}", support::stderr(&output));
}

#[test]
fn eval_reports_bfcl_simple_over_the_three_languages() {
    let endpoint = crate::scripted::serve_on_thread(
        axum::Router::new().route("/v1/chat/completions", axum::routing::post(scripted)),
    );
    let ids = [
        ("BFCL_v4_simple_python.json", "simple_python_0"),
        ("BFCL_v4_simple_java.json", "simple_java_1"),
        ("BFCL_v4_simple_java.json", "simple_java_22"),
        ("BFCL_v4_simple_javascript.json", "simple_javascript_3"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let questions = dir.path().join("questions.json");
    let answers = dir.path().join("answers.json");
    let report = dir.path().join("report.json");
    let markdown = dir.path().join("report.md");
    let joined = |prefix: &str| -> String {
        ids.iter()
            .map(|(file, id)| line(&format!("{prefix}{file}"), id) + "\n")
            .collect()
    };
    std::fs::write(&questions, joined("")).unwrap();
    std::fs::write(&answers, joined("possible_answer/")).unwrap();
    let path = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    run_eval(
        &endpoint,
        &questions,
        &answers,
        &[
            "--mode",
            "native",
            "--json",
            &path(&report),
            "--markdown",
            &path(&markdown),
        ],
    );
    let report: Json = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let native = &report["modes"]["native"];
    assert_eq!(native["categories"]["simple_python"]["accuracy"], 1.0);
    assert_eq!(native["categories"]["simple_java"]["accuracy"], 0.5);
    assert_eq!(native["categories"]["simple_javascript"]["accuracy"], 1.0);
    // (100 + 50 + 100) / 3, where the pooled share would be 3 of 4.
    let simple = native["bfcl_simple"].as_f64().unwrap();
    assert!((simple - 2.5 / 3.0).abs() < 1e-12, "{simple}");
    let markdown = std::fs::read_to_string(&markdown).unwrap();
    assert!(markdown.contains(BFCL_SIMPLE), "{markdown}");
    assert!(markdown.contains("| 83.3 % |"), "{markdown}");
}

#[test]
fn the_gateway_modes_show_the_functions_as_bfcl_does() {
    let endpoint = crate::scripted::serve_on_thread(
        axum::Router::new().route("/v1/chat/completions", axum::routing::post(scripted)),
    );
    let dir = tempfile::tempdir().unwrap();
    let questions = dir.path().join("questions.json");
    let answers = dir.path().join("answers.json");
    let report = dir.path().join("report.json");
    let file = "BFCL_v4_simple_java.json";
    std::fs::write(&questions, line(file, "simple_java_1")).unwrap();
    std::fs::write(
        &answers,
        line(&format!("possible_answer/{file}"), "simple_java_1"),
    )
    .unwrap();
    let path = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    run_eval(
        &endpoint,
        &questions,
        &answers,
        &["--mode", "text", "--json", &path(&report)],
    );
    let report: Json = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(
        report["modes"]["text"]["accuracy"], 1.0,
        "{:#}",
        report["outcomes"]
    );
}

#[test]
fn a_dict_field_answered_by_a_bare_string_reads_as_its_characters() {
    // simple_java_64's answer gives the field `format` as "epoch_millis", not a list of
    // acceptable values; BFCL then looks the value up among the string's characters, and
    // may leave the field out.
    let case = case("simple_java_64");
    let args = |meta: &str| {
        json!({"name": "timestamp", "factory": "dateFactory", "script": "dateScript",
               "meta": meta, "onScriptError": "FAIL"})
    };
    let map = |value: &str| format!(r#"new HashMap<>() {{{{ put("format", "{value}"); }}}}"#);
    assert_eq!(check(&case, args(&map("e"))), Ok(()));
    assert_eq!(check(&case, args("new HashMap<>()")), Ok(()));
    assert!(matches!(
        check(&case, args(&map("epoch_millis"))),
        Err(Mismatch::Value { .. })
    ));
}
