//! The gateway, `atfunc serve`: against the official `openai` Python client and a scripted
//! upstream (`gateway.rs`, which runs `pytest tests/gateway`), and against stalled clients
//! (`gateway_hold.rs`); in front of a model that writes its own call format (`dialect.rs`);
//! deciding first under `tool_choice: "auto"` (`decide.rs`), or weighing the first token's
//! odds (`weigh.rs`); text arguments grounded in the
//! user's words (`ground.rs`); a passed-through stream cut short ends with an error event
//! of its own (`pass_through.rs`);
//! and one limit and one behaviour for an endpoint's answer in the
//! gateway and the evaluator (`endpoint_answers.rs`); executed turns that fail after their
//! calls ran, and that run many calls of big results (`executed.rs`).

#[cfg(feature = "cli")]
#[path = "../support/missing.rs"]
mod missing;

mod decide;
mod dialect;
mod endpoint_answers;
mod executed;
mod gateway;
mod gateway_hold;
mod ground;
mod pass_through;
mod weigh;
