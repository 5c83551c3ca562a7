//! The evaluator, `atfunc eval`: BFCL scoring and every mode against a scripted endpoint
//! (`eval.rs`), BFCL's Java and JavaScript categories and its Simple figure (`java_js.rs`), the `decide` mode (`decide.rs`), the `dialect` mode (`dialect.rs`), continuing a run, `irrelevance` and the auto and lazy grammar modes
//! (`resume.rs`), answers dropped at their first repeated call (`stop.rs`), answers continued past a repeat (`next.rs`), the levers measured on a real model (`levers.rs`), and against a real small model served by llama-cpp-python (`eval_model.rs`;
//! run it alone with `cargo test --all-features --test eval eval_model`).

#[cfg(feature = "eval")]
#[path = "../call_text/mod.rs"]
mod call_text;
#[cfg(feature = "cli")]
#[path = "../support/missing.rs"]
mod missing;
#[cfg(feature = "eval")]
#[path = "../support/mod.rs"]
mod support;

mod decide;
mod dialect;
mod eval;
mod eval_model;
mod gateway_policy;
mod java_js;
mod levers;
mod next;
mod resume;
#[cfg(feature = "eval")]
mod scripted;
mod stop;
