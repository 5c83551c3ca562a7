//! `atfunc eval` continuing a run from its JSON report, scoring `irrelevance`, the lazy and
//! auto grammar modes, the server note and the Markdown table, against a scripted endpoint
//! that counts the questions it is asked.

use crate::support;

use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const QUESTIONS: &str = r#"{"id": "simple_0", "question": [[{"role": "user", "content": "q-good"}]], "function": [{"name": "calc.sqrt", "parameters": {"type": "dict", "properties": {"x": {"type": "float"}}, "required": ["x"]}}]}
{"id": "simple_1", "question": [[{"role": "user", "content": "q-flaky"}]], "function": [{"name": "calc.sqrt", "parameters": {"type": "dict", "properties": {"x": {"type": "float"}}, "required": ["x"]}}]}
{"id": "simple_2", "question": [[{"role": "user", "content": "q-good"}]], "function": [{"name": "calc.sqrt", "parameters": {"type": "dict", "properties": {"x": {"type": "float"}}, "required": ["x"]}}]}
"#;

const ANSWERS: &str = r#"{"id": "simple_0", "ground_truth": [{"calc.sqrt": {"x": [2.0]}}]}
{"id": "simple_1", "ground_truth": [{"calc.sqrt": {"x": [2.0]}}]}
{"id": "simple_2", "ground_truth": [{"calc.sqrt": {"x": [2.0]}}]}
"#;

/// Two irrelevance questions (no possible answers) and a live id.
const IRRELEVANT: &str = r#"{"id": "irrelevance_0", "question": [[{"role": "user", "content": "q-chat"}]], "function": [{"name": "calc.sqrt", "parameters": {"type": "dict", "properties": {"x": {"type": "float"}}, "required": ["x"]}}]}
{"id": "irrelevance_1", "question": [[{"role": "user", "content": "q-good"}]], "function": [{"name": "calc.sqrt", "parameters": {"type": "dict", "properties": {"x": {"type": "float"}}, "required": ["x"]}}]}
{"id": "live_simple_3-2-1", "question": [[{"role": "user", "content": "q-good"}]], "function": [{"name": "calc.sqrt", "parameters": {"type": "dict", "properties": {"x": {"type": "float"}}, "required": ["x"]}}]}
"#;

const LIVE_ANSWERS: &str =
    r#"{"id": "live_simple_3-2-1", "ground_truth": [{"calc.sqrt": {"x": [2.0]}}]}"#;

#[derive(Default)]
struct Counts {
    asked: AtomicUsize,
    flaky: AtomicUsize,
}

/// `q-vote` answers greedily with a wrong value and sampled with the right one;
/// `q-good` answers with the right call, `q-chat` with prose, `q-flaky` with a 503 the
/// first time and the right call after. A chat request that asks for a lazy grammar is
/// answered in prose: llama-server's chat route drops those fields.
async fn scripted(
    axum::extract::State(counts): axum::extract::State<Arc<Counts>>,
    axum::Json(request): axum::Json<Json>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    counts.asked.fetch_add(1, Ordering::SeqCst);
    let question = request["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    let lazy = request.get("grammar_lazy").is_some();
    if question == "q-flaky" && counts.flaky.fetch_add(1, Ordering::SeqCst) == 0 {
        let error = json!({"error": {"message": "busy"}});
        return (
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(error),
        )
            .into_response();
    }
    let sampled = request.get("seed").is_some() && request["temperature"] == json!(0.7);
    let text = match question.as_str() {
        "q-chat" => "I cannot answer that with these tools.",
        // The same call again, in another case, then a call the token limit cut short.
        "q-repeat" => "@calc.sqrt(x=2)\n@CALC.SQRT(x=2)\n@calc.sqrt(x=",
        // Two different calls: no repeat.
        "q-two" => "@calc.sqrt(x=2)\n@calc.sqrt(x=3)\n@calc.sqrt(x=3)",
        // Loops inside a string unless a request field (a sampler setting) breaks it.
        "q-loop" if request["dry_multiplier"] != json!(0.8) => "@calc.sqrt(x=\"2, 2, 2, 2",
        "q-loop" if request["dry_sequence_breakers"] != json!(["\n"]) => "@calc.sqrt(x=1)",
        // Greedy, a wrong value; sampled (with a seed, at --sample-temperature), the right
        // one, except for seed 3, which writes a call that does not bind.
        "q-vote" if !sampled => "@calc.sqrt(x=3)",
        "q-vote" if request["seed"] == json!(3) => "@calc.sqrt(y=2)",
        // Greedy, a call the token limit cut; seed 1 a call that does not bind, seed 2 no
        // call, and every later seed the right call.
        "q-runaway" if !sampled => "@calc.sqrt(x=\"2, 2, 2, 2",
        "q-runaway" if request["seed"] == json!(1) => "@calc.sqrt(y=2)",
        "q-runaway" if request["seed"] == json!(2) => "The root is 1.41.",
        _ if lazy => "no grammar",
        _ => "@calc.sqrt(x=2)",
    };
    axum::Json(crate::scripted::says(text, 100, 10)).into_response()
}

/// llama-server's `/apply-template`: the messages' contents, one per line.
async fn apply_template(axum::Json(request): axum::Json<Json>) -> axum::Json<Json> {
    let prompt: Vec<&str> = request["messages"]
        .as_array()
        .map(|m| m.iter().filter_map(|m| m["content"].as_str()).collect())
        .unwrap_or_default();
    axum::Json(json!({"prompt": prompt.join("\n")}))
}

/// llama-server's `/completion`: as [`scripted`], for a request that carries the lazy
/// grammar's fields (otherwise the answer is prose).
async fn completion(
    axum::extract::State(counts): axum::extract::State<Arc<Counts>>,
    axum::Json(request): axum::Json<Json>,
) -> axum::Json<Json> {
    counts.asked.fetch_add(1, Ordering::SeqCst);
    let prompt = request["prompt"].as_str().unwrap_or_default();
    let lazy = request["grammar_lazy"] == json!(true)
        && request["grammar_triggers"] == json!([{"type": 1, "value": "@"}])
        && request["preserved_tokens"] == json!(["@"])
        && request["grammar"].as_str().is_some()
        && request["n_predict"] == json!(256);
    let content = if prompt.ends_with("q-chat") || !lazy || request["dry_multiplier"] == json!(1) {
        "I cannot answer that with these tools."
    } else {
        "Here: @calc.sqrt(x=2)"
    };
    axum::Json(json!({"content": content, "tokens_evaluated": 90, "tokens_predicted": 9}))
}

fn scripted_endpoint() -> (String, Arc<Counts>) {
    let counts = Arc::new(Counts::default());
    let state = Arc::clone(&counts);
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(scripted))
        .route("/apply-template", axum::routing::post(apply_template))
        .route("/completion", axum::routing::post(completion))
        .with_state(state);
    (crate::scripted::serve_on_thread(app), counts)
}

fn path(p: &Path) -> String {
    p.to_str().unwrap().to_owned()
}

struct Files {
    _dir: tempfile::TempDir,
    questions: PathBuf,
    answers: PathBuf,
    report: PathBuf,
    table: PathBuf,
}

fn files() -> Files {
    let dir = tempfile::tempdir().unwrap();
    let questions = dir.path().join("questions.json");
    let answers = dir.path().join("answers.json");
    std::fs::write(&questions, QUESTIONS).unwrap();
    std::fs::write(&answers, ANSWERS).unwrap();
    Files {
        questions,
        answers,
        report: dir.path().join("report.json"),
        table: dir.path().join("table.md"),
        _dir: dir,
    }
}

fn eval(endpoint: &str, files: &Files, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "eval".to_owned(),
        "--endpoint".to_owned(),
        endpoint.to_owned(),
        "--questions".to_owned(),
        path(&files.questions),
        "--answers".to_owned(),
        path(&files.answers),
        "--json".to_owned(),
        path(&files.report),
        "--markdown".to_owned(),
        path(&files.table),
    ];
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    support::atfunc(&args, b"")
}

/// Makes the questions file hold the first case only, asking `question`.
fn ask_only(files: &Files, question: &str) {
    let first = QUESTIONS.lines().next().unwrap();
    std::fs::write(&files.questions, first.replace("q-good", question)).unwrap();
}

fn report(files: &Files) -> Json {
    serde_json::from_str(&std::fs::read_to_string(&files.report).unwrap()).unwrap()
}

#[test]
fn a_run_continues_from_its_report_and_asks_only_what_is_missing() {
    let (endpoint, counts) = scripted_endpoint();
    let files = files();
    let note = ["--server-note", "scripted, plain ChatML"];

    // First run: two of three cases; the second fails (503).
    let first = eval(
        &endpoint,
        &files,
        &[&["--mode", "grammar", "--limit", "2"][..], &note[..]].concat(),
    );
    assert!(first.status.success(), "{}", support::stderr(&first));
    assert_eq!(counts.asked.load(Ordering::SeqCst), 2);
    let written = report(&files);
    assert_eq!(written["modes"]["grammar"]["cases"], 2);
    assert_eq!(written["modes"]["grammar"]["failed_requests"], 1);
    assert_eq!(written["servers"]["grammar"], "scripted, plain ChatML");
    assert_eq!(written["settings"]["max_tokens"], 256);
    assert_eq!(written["available"]["simple"], 3);
    let table = std::fs::read_to_string(&files.table).unwrap();
    assert!(
        table.contains("| grammar | scripted, plain ChatML |"),
        "{table}"
    );
    assert!(
        table.contains("50.0 % (50.0 % valid), 2 of 3, 1 failed"),
        "{table}"
    );

    // Second run, all cases: only the failed one and the third are asked.
    let second = eval(
        &endpoint,
        &files,
        &[&["--mode", "grammar"][..], &note[..]].concat(),
    );
    let stderr = support::stderr(&second);
    assert!(second.status.success(), "{stderr}");
    assert!(
        stderr.contains("1 answer(s) kept, 2 case(s) to ask"),
        "{stderr}"
    );
    assert_eq!(counts.asked.load(Ordering::SeqCst), 4);
    let written = report(&files);
    assert_eq!(written["modes"]["grammar"]["cases"], 3);
    assert_eq!(written["modes"]["grammar"]["accuracy"], 1.0);
    assert_eq!(written["interrupted"], false);
    assert_eq!(written["outcomes"].as_array().unwrap().len(), 3);
    assert!(support::stdout(&second).contains("grammar: measured on scripted, plain ChatML"));

    // A third run of the same settings has nothing left to ask.
    let third = eval(
        &endpoint,
        &files,
        &[&["--mode", "grammar"][..], &note[..]].concat(),
    );
    assert!(third.status.success(), "{}", support::stderr(&third));
    assert_eq!(counts.asked.load(Ordering::SeqCst), 4);

    // Another mode joins the same report; the earlier mode stays in it.
    let fourth = eval(
        &endpoint,
        &files,
        &["--mode", "text", "--server-note", "other"],
    );
    assert!(fourth.status.success(), "{}", support::stderr(&fourth));
    assert_eq!(counts.asked.load(Ordering::SeqCst), 7);
    let written = report(&files);
    assert_eq!(written["modes"]["grammar"]["cases"], 3);
    assert_eq!(written["modes"]["text"]["cases"], 3);
    assert_eq!(written["servers"]["text"], "other");
    assert_eq!(written["servers"]["grammar"], "scripted, plain ChatML");
}

/// A report holding a mode whose variant was removed (`grammar+guard`, written by an
/// older build) still continues: its rows are kept as they are, the other modes are
/// asked, and asking for the removed variant says why it cannot run.
#[test]
fn a_report_naming_a_removed_variant_still_continues() {
    let (endpoint, counts) = scripted_endpoint();
    let files = files();
    let first = eval(&endpoint, &files, &["--mode", "grammar", "--limit", "2"]);
    assert!(first.status.success(), "{}", support::stderr(&first));
    // The report as an older build wrote it with a second mode, `grammar+guard`.
    let mut old = report(&files);
    let mut outcomes = old["outcomes"].as_array().unwrap().clone();
    for outcome in old["outcomes"].as_array().unwrap() {
        let mut guarded = outcome.clone();
        guarded["mode"] = json!("grammar+guard");
        outcomes.push(guarded);
    }
    old["outcomes"] = Json::Array(outcomes);
    old["modes"]["grammar+guard"] = old["modes"]["grammar"].clone();
    std::fs::write(&files.report, old.to_string()).unwrap();
    let asked = counts.asked.load(Ordering::SeqCst);

    let removed = eval(&endpoint, &files, &["--mode", "grammar+guard"]);
    let stderr = support::stderr(&removed);
    assert_eq!(removed.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the variant '+guard' was removed: its grammar is every mode's default"),
        "{stderr}"
    );
    assert_eq!(counts.asked.load(Ordering::SeqCst), asked);

    // The failed case and the third are asked; the old mode's rows count as kept.
    let kept = eval(&endpoint, &files, &["--mode", "grammar"]);
    let stderr = support::stderr(&kept);
    assert!(kept.status.success(), "{stderr}");
    assert!(
        stderr.contains("2 answer(s) kept, 2 case(s) to ask"),
        "{stderr}"
    );
    assert_eq!(counts.asked.load(Ordering::SeqCst), asked + 2);
    let written = report(&files);
    assert_eq!(written["modes"]["grammar"]["cases"], 3);
    // Its answered case stays (a failed request is never kept: it is for a run to ask).
    let outcomes = written["outcomes"].as_array().unwrap();
    let guarded: Vec<&Json> = outcomes
        .iter()
        .filter(|o| o["mode"] == "grammar+guard")
        .collect();
    assert_eq!(guarded.len(), 1, "{written}");
    assert_eq!(guarded[0]["id"], "simple_0");
    assert_eq!(written["modes"]["grammar+guard"]["cases"], 1);
}

#[test]
fn a_run_with_other_settings_is_refused_and_says_how_to_start_over() {
    let (endpoint, counts) = scripted_endpoint();
    let files = files();
    let first = eval(
        &endpoint,
        &files,
        &["--mode", "grammar", "--server-note", "a"],
    );
    assert!(first.status.success(), "{}", support::stderr(&first));
    let asked = counts.asked.load(Ordering::SeqCst);
    let before = std::fs::read_to_string(&files.report).unwrap();

    let other_tokens = eval(
        &endpoint,
        &files,
        &[
            "--mode",
            "grammar",
            "--server-note",
            "a",
            "--max-tokens",
            "64",
        ],
    );
    let stderr = support::stderr(&other_tokens);
    assert_eq!(other_tokens.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot continue the run it holds"),
        "{stderr}"
    );
    assert!(stderr.contains("max_tokens 256"), "{stderr}");
    assert!(
        stderr.contains("now model 'default', max_tokens 64"),
        "{stderr}"
    );
    assert!(
        stderr.contains("To start over, remove it or give another --json path"),
        "{stderr}"
    );

    let other_server = eval(
        &endpoint,
        &files,
        &["--mode", "grammar", "--server-note", "b"],
    );
    let stderr = support::stderr(&other_server);
    assert_eq!(other_server.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("mode 'grammar' was measured on another server (note 'a', now 'b')"),
        "{stderr}"
    );

    std::fs::write(&files.report, "not a report").unwrap();
    let garbage = eval(&endpoint, &files, &["--mode", "grammar"]);
    let stderr = support::stderr(&garbage);
    assert_eq!(garbage.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("it is not a report of atfunc eval"),
        "{stderr}"
    );

    // Nothing was asked, and the refused runs left the report as it was.
    assert_eq!(counts.asked.load(Ordering::SeqCst), asked);
    std::fs::write(&files.report, &before).unwrap();
    assert_eq!(std::fs::read_to_string(&files.report).unwrap(), before);
}

#[test]
fn irrelevance_scores_answers_without_a_call_and_live_ids_share_a_category() {
    let (endpoint, _) = scripted_endpoint();
    let files = files();
    std::fs::write(&files.questions, IRRELEVANT).unwrap();
    std::fs::write(&files.answers, LIVE_ANSWERS).unwrap();
    let output = eval(&endpoint, &files, &["--mode", "auto,lazy"]);
    let stdout = support::stdout(&output);
    assert!(output.status.success(), "{}", support::stderr(&output));
    assert!(stdout.contains("no call"), "{stdout}");
    let written = report(&files);
    for mode in ["auto", "lazy"] {
        let categories = &written["modes"][mode]["categories"];
        // irrelevance_0 answered in prose (right), irrelevance_1 with a call (wrong).
        assert_eq!(categories["irrelevance"]["cases"], 2, "{mode}");
        assert_eq!(categories["irrelevance"]["accuracy"], 0.5, "{mode}");
        assert_eq!(categories["irrelevance"]["no_call"], 0.5, "{mode}");
        // The lazy request went to /completion with llama.cpp's fields, so its call is right.
        assert_eq!(categories["live_simple"]["cases"], 1, "{mode}");
        assert_eq!(categories["live_simple"]["accuracy"], 1.0, "{mode}");
    }
    let outcome = written["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["mode"] == "lazy" && o["id"] == "irrelevance_1")
        .cloned()
        .unwrap();
    assert_eq!(
        outcome["error"],
        "the answer calls a function, none fits the question"
    );
    let table = std::fs::read_to_string(&files.table).unwrap();
    assert!(table.contains("| irrelevance |"), "{table}");
    assert!(table.contains("50.0 % no call"), "{table}");
}

/// `--samples N`: the first answer greedy, the others sampled with a seed each; the calls
/// most answers that bind agree on are scored, and every answer's tokens count. The
/// settings record it, so a run with another count is not continued.
#[test]
fn samples_vote_among_answers_that_bind() {
    let (endpoint, counts) = scripted_endpoint();
    let files = files();
    ask_only(&files, "q-vote");
    let greedy = eval(&endpoint, &files, &["--mode", "grammar"]);
    assert!(greedy.status.success(), "{}", support::stderr(&greedy));
    assert_eq!(report(&files)["modes"]["grammar"]["correct"], 0);
    assert_eq!(report(&files)["settings"]["samples"], 1);
    std::fs::remove_file(&files.report).unwrap();

    // Three answers: x=3 (greedy), x=2, x=2.
    counts.asked.store(0, Ordering::SeqCst);
    let three = eval(&endpoint, &files, &["--mode", "grammar", "--samples", "3"]);
    assert!(three.status.success(), "{}", support::stderr(&three));
    assert_eq!(counts.asked.load(Ordering::SeqCst), 3);
    let written = report(&files);
    assert_eq!(written["modes"]["grammar"]["correct"], 1, "{written}");
    assert_eq!(written["outcomes"][0]["completion_tokens"], 30);
    assert_eq!(written["settings"]["samples"], 3);
    std::fs::remove_file(&files.report).unwrap();

    // Two answers: x=3 and x=2 tie, the earlier (greedy) wins. Four: seed 3 does not
    // bind and does not vote, x=2 wins two to one.
    for (samples, correct) in [("2", 0), ("4", 1)] {
        let run = eval(
            &endpoint,
            &files,
            &["--mode", "grammar", "--samples", samples],
        );
        assert!(run.status.success(), "{}", support::stderr(&run));
        assert_eq!(
            report(&files)["modes"]["grammar"]["correct"],
            correct,
            "--samples {samples}"
        );
        if samples == "4" {
            break;
        }
        std::fs::remove_file(&files.report).unwrap();
    }
    let other = eval(&endpoint, &files, &["--mode", "grammar", "--samples", "2"]);
    let stderr = support::stderr(&other);
    assert_eq!(other.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("samples 4"), "{stderr}");
    assert!(
        stderr.contains(
            "now model 'default', max_tokens 256, repair_rounds 1, decide_max_tokens 32, samples 2"
        ),
        "{stderr}"
    );

    let hot = eval(
        &endpoint,
        &files,
        &["--mode", "grammar", "--sample-temperature", "3"],
    );
    let stderr = support::stderr(&hot);
    assert_eq!(hot.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--sample-temperature 3: give a temperature from 0 to 2"),
        "{stderr}"
    );
}

/// `--resamples N`: an answer that does not bind is asked again, sampled with seeds that
/// go on from the vote's, until one binds or N more were asked; an answer without a call
/// counts as not binding only where the mode requires a call. Every answer's tokens
/// count, and the settings record N.
#[test]
fn resamples_ask_again_until_an_answer_binds() {
    let (endpoint, counts) = scripted_endpoint();
    let files = files();
    ask_only(&files, "q-runaway");
    for (resamples, asked, valid) in [("0", 1, 0), ("2", 3, 0), ("3", 4, 1), ("9", 4, 1)] {
        counts.asked.store(0, Ordering::SeqCst);
        // Without repair rounds after them, as the gateway asks them: resamples alone.
        let run = eval(
            &endpoint,
            &files,
            &[
                "--mode",
                "grammar",
                "--resamples",
                resamples,
                "--repair-rounds",
                "0",
            ],
        );
        assert!(run.status.success(), "{}", support::stderr(&run));
        assert_eq!(
            counts.asked.load(Ordering::SeqCst),
            asked,
            "--resamples {resamples}"
        );
        let written = report(&files);
        assert_eq!(
            written["modes"]["grammar"]["valid_answers"], valid,
            "{written}"
        );
        assert_eq!(written["modes"]["grammar"]["correct"], valid, "{written}");
        assert_eq!(written["outcomes"][0]["completion_tokens"], 10 * asked);
        assert_eq!(
            written["settings"]["resamples"],
            resamples.parse::<u32>().unwrap()
        );
        std::fs::remove_file(&files.report).unwrap();
    }
    // The vote comes first: with --samples 2 seed 1 votes, and the resample is seed 2
    // (no call, which `grammar` refuses), then seed 3.
    counts.asked.store(0, Ordering::SeqCst);
    let voted = eval(
        &endpoint,
        &files,
        &["--mode", "grammar", "--samples", "2", "--resamples", "2"],
    );
    assert!(voted.status.success(), "{}", support::stderr(&voted));
    assert_eq!(counts.asked.load(Ordering::SeqCst), 4);
    assert_eq!(report(&files)["modes"]["grammar"]["correct"], 1);
    std::fs::remove_file(&files.report).unwrap();

    // `text` measures the prompt alone: never asked again. In `auto` an answer without a
    // call may be the answer: not asked again either.
    counts.asked.store(0, Ordering::SeqCst);
    let text = eval(&endpoint, &files, &["--mode", "text", "--resamples", "3"]);
    assert!(text.status.success(), "{}", support::stderr(&text));
    assert_eq!(counts.asked.load(Ordering::SeqCst), 1);
    assert_eq!(report(&files)["modes"]["text"]["valid_answers"], 0);
    std::fs::remove_file(&files.report).unwrap();
    ask_only(&files, "q-chat");
    counts.asked.store(0, Ordering::SeqCst);
    let unweighed = ["--mode", "auto", "--call-threshold", "off"];
    let text = eval(
        &endpoint,
        &files,
        &[&unweighed[..], &["--resamples", "3"]].concat(),
    );
    assert!(text.status.success(), "{}", support::stderr(&text));
    assert_eq!(counts.asked.load(Ordering::SeqCst), 1);
    // A report of another count is not continued, and the message says which.
    let other = eval(
        &endpoint,
        &files,
        &[&unweighed[..], &["--resamples", "1"]].concat(),
    );
    let stderr = support::stderr(&other);
    assert_eq!(other.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("resamples 3"), "{stderr}");
    std::fs::remove_file(&files.report).unwrap();

    // As the gateway, `auto` weighs first by default: this endpoint returns no log
    // probabilities, so the one-token request is asked once and the answer goes
    // unweighed. The report records the default, and a run without it does not continue
    // the report.
    counts.asked.store(0, Ordering::SeqCst);
    let weighed = eval(&endpoint, &files, &["--mode", "auto", "--resamples", "3"]);
    assert!(weighed.status.success(), "{}", support::stderr(&weighed));
    assert_eq!(counts.asked.load(Ordering::SeqCst), 2);
    let written = report(&files);
    assert_eq!(
        written["settings"]["default_call_threshold"], 0.03,
        "{written}"
    );
    assert!(
        written["outcomes"][0].get("call_odds").is_none(),
        "{written}"
    );
    let other = eval(
        &endpoint,
        &files,
        &[&unweighed[..], &["--resamples", "3"]].concat(),
    );
    let stderr = support::stderr(&other);
    assert_eq!(other.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("weighed at 0.03 by default"), "{stderr}");
}

/// A report written before `decide_max_tokens`, `samples` and `sample_temperature` were
/// kept continues under their defaults. One written before answers were read up to a
/// repeated call read every call, and one written before `resamples` was kept asked no
/// answer again: it continues with `--keep-repeated-calls --resamples 0`, and is refused
/// without them, saying so.
#[test]
fn a_report_without_the_newer_settings_continues_under_their_defaults() {
    let (endpoint, counts) = scripted_endpoint();
    let files = files();
    let first = eval(&endpoint, &files, &["--mode", "grammar", "--limit", "1"]);
    assert!(first.status.success(), "{}", support::stderr(&first));
    let mut old = report(&files);
    let settings = old["settings"].as_object_mut().unwrap();
    for newer in [
        "decide_max_tokens",
        "samples",
        "sample_temperature",
        "resamples",
        "keep_repeated_calls",
    ] {
        assert!(settings.remove(newer).is_some(), "{newer}");
    }
    std::fs::write(&files.report, old.to_string()).unwrap();
    let asked = counts.asked.load(Ordering::SeqCst);
    let refused = eval(&endpoint, &files, &["--mode", "grammar"]);
    let stderr = support::stderr(&refused);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("resamples 0, every call read (--keep-repeated-calls); now")
            && stderr.contains("resamples 3, read up to a repeated call)"),
        "{stderr}"
    );
    assert_eq!(counts.asked.load(Ordering::SeqCst), asked);
    let second = eval(
        &endpoint,
        &files,
        &[
            "--mode",
            "grammar",
            "--keep-repeated-calls",
            "--resamples",
            "0",
        ],
    );
    assert!(second.status.success(), "{}", support::stderr(&second));
    assert_eq!(report(&files)["modes"]["grammar"]["cases"], 3);
    // The two cases left, one request each (simple_1's is a 503: a failed case).
    assert_eq!(counts.asked.load(Ordering::SeqCst) - asked, 2);
}

/// `--request-field NAME=JSON`: each field goes into every request as it is (the chat
/// route's and `lazy`'s `/completion`), the report's settings record them, and a run with
/// other fields does not continue it. A field the evaluator writes itself, a value that
/// is not JSON and a field given twice are refused, saying what to write.
#[test]
fn request_fields_reach_every_request_and_are_recorded() {
    let (endpoint, _counts) = scripted_endpoint();
    let files = files();
    ask_only(&files, "q-loop");
    let plain = eval(&endpoint, &files, &["--mode", "grammar"]);
    assert!(plain.status.success(), "{}", support::stderr(&plain));
    assert_eq!(report(&files)["modes"]["grammar"]["valid_answers"], 0);
    assert!(report(&files)["settings"].get("request_fields").is_none());
    std::fs::remove_file(&files.report).unwrap();

    let dry = [
        "--mode",
        "grammar",
        "--request-field",
        "dry_multiplier=0.8",
        "--request-field",
        r#"dry_sequence_breakers=["\n"]"#,
    ];
    let run = eval(&endpoint, &files, &dry);
    assert!(run.status.success(), "{}", support::stderr(&run));
    let written = report(&files);
    assert_eq!(written["modes"]["grammar"]["correct"], 1, "{written}");
    assert_eq!(
        written["settings"]["request_fields"],
        json!({"dry_multiplier": 0.8, "dry_sequence_breakers": ["\n"]})
    );
    let other = eval(
        &endpoint,
        &files,
        &["--mode", "grammar", "--request-field", "dry_multiplier=0.8"],
    );
    let stderr = support::stderr(&other);
    assert_eq!(other.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(r#"dry_multiplier 0.8, dry_sequence_breakers ["\n"]; now"#),
        "{stderr}"
    );
    std::fs::remove_file(&files.report).unwrap();

    // `lazy` sends them to `/completion` too: the scripted server answers prose there
    // when it sees dry_multiplier 1.
    let lazy = eval(
        &endpoint,
        &files,
        &["--mode", "lazy", "--request-field", "dry_multiplier=1"],
    );
    assert!(lazy.status.success(), "{}", support::stderr(&lazy));
    assert_eq!(report(&files)["modes"]["lazy"]["no_call"], 1.0);
    std::fs::remove_file(&files.report).unwrap();

    for (field, says) in [
        (
            "temperature=0.5",
            "the request field 'temperature' is the evaluator's own",
        ),
        (
            "stop=END",
            "the value is not JSON (expected value at line 1 column 1); a string goes in quotes",
        ),
        ("=1", "'=1': write NAME=JSON, as dry_multiplier=0.8"),
    ] {
        let refused = eval(
            &endpoint,
            &files,
            &["--mode", "grammar", "--request-field", field],
        );
        let stderr = support::stderr(&refused);
        assert_eq!(refused.status.code(), Some(2), "{field}: {stderr}");
        assert!(stderr.contains(says), "{field}: {stderr}");
    }
    let twice = eval(
        &endpoint,
        &files,
        &[
            "--mode",
            "grammar",
            "--request-field",
            "top_k=1",
            "--request-field",
            "top_k=2",
        ],
    );
    let stderr = support::stderr(&twice);
    assert_eq!(twice.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--request-field top_k is given twice"),
        "{stderr}"
    );
}

/// By default an answer is read up to the first call that repeats an earlier one (names
/// compared case folded), so a model that writes its call again until the token limit is
/// scored on what came before; different calls are all read. `--keep-repeated-calls`
/// reads every call.
#[test]
fn answers_are_read_up_to_the_first_repeated_call() {
    let (endpoint, _counts) = scripted_endpoint();
    let files = files();
    let first = QUESTIONS.lines().next().unwrap();
    let questions = [
        first.replace("q-good", "q-repeat"),
        // Several calls are the answer only in a parallel category: elsewhere the client
        // asks for one (`parallel_tool_calls: false`), and the first stands.
        first
            .replace("q-good", "q-two")
            .replace("simple_0", "parallel_1"),
    ]
    .join("\n");
    std::fs::write(&files.questions, questions).unwrap();
    let parallel = r#"{"id": "parallel_1", "ground_truth": [{"calc.sqrt": {"x": [2.0]}}]}"#;
    std::fs::write(&files.answers, format!("{ANSWERS}{parallel}\n")).unwrap();
    let outcome = |report: &Json, id: &str| {
        report["outcomes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["mode"] == "grammar" && o["id"] == id)
            .cloned()
            .unwrap()
    };
    let by_default = eval(&endpoint, &files, &["--mode", "grammar"]);
    assert!(
        by_default.status.success(),
        "{}",
        support::stderr(&by_default)
    );
    let once = report(&files);
    assert_eq!(once["settings"]["keep_repeated_calls"], false);
    std::fs::remove_file(&files.report).unwrap();
    let run = eval(
        &endpoint,
        &files,
        &["--mode", "grammar", "--keep-repeated-calls"],
    );
    assert!(run.status.success(), "{}", support::stderr(&run));
    let whole = report(&files);
    assert_eq!(whole["settings"]["keep_repeated_calls"], true);
    // Read whole, the repeat is a second call and the cut one does not bind.
    assert_eq!(outcome(&whole, "simple_0")["valid"], false, "{whole}");
    let repeat = outcome(&once, "simple_0");
    assert_eq!(repeat["correct"], true, "{repeat}");
    assert_eq!(
        repeat["calls"],
        json!([{"name": "calc.sqrt", "args": {"x": 2}}])
    );
    // x=2 then x=3 differ; the second x=3 repeats and ends the answer there.
    let two = outcome(&once, "parallel_1");
    assert_eq!(two["valid"], true, "{two}");
    assert_eq!(two["calls"].as_array().unwrap().len(), 2, "{two}");
    assert_eq!(
        outcome(&whole, "parallel_1")["calls"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
}
