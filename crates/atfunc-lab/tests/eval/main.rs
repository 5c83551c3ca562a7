//! The evaluator, `atfunc-lab eval`: BFCL scoring and every mode against a scripted endpoint
//! (`eval.rs`), BFCL's Java and JavaScript categories and its Simple figure (`java_js.rs`), the `decide` mode (`decide.rs`), the `dialect` mode (`dialect.rs`), continuing a run, `irrelevance` and the auto and lazy grammar modes
//! (`resume.rs`), answers dropped at their first repeated call (`stop.rs`), answers continued past a repeat (`next.rs`), the levers measured on a real model (`levers.rs`), and against two real small models served by llama-cpp-python: SmolLM2-135M in every mode
//! (`eval_model.rs`) and Qwen2.5-Coder-0.5B-Instruct, with a call format of its own, through the
//! grammar and its own format (`eval_qwen.rs`), which share their server and checks (`real_model.rs`); run one alone with
//! `cargo test -p atfunc-lab --test eval eval_model` (or `eval_qwen`).

#[path = "../../../atfunc/tests/call_text/mod.rs"]
mod call_text;
#[path = "../../../../tests/support/missing.rs"]
mod missing;
#[path = "../../../../tests/support/mod.rs"]
mod support;

mod api;
mod decide;
mod dialect;
mod endpoint_answers;
mod eval;
mod eval_model;
mod eval_qwen;
mod gateway_policy;
mod java_js;
mod levers;
mod next;
mod real_model;
mod resume;
mod scripted;
mod stop;
