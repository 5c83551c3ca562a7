//! The gateway's engine and server, in process: in front of a model that writes its own
//! call format (`dialect.rs`); deciding first under `tool_choice: "auto"` (`decide.rs`),
//! or weighing the first token's odds (`weigh.rs`); text arguments grounded in the user's
//! words (`ground.rs`); a passed-through stream cut short ends with an error event of its
//! own (`pass_through.rs`); tool lists kept as read change nothing that is sent or
//! answered (`tool_cache.rs`). The `atfunc serve` command, against real clients, is tested
//! with the command (atfunc-cli's `crates/atfunc-gateway/tests/serve`).

mod decide;
mod dialect;
mod ground;
mod pass_through;
mod tool_cache;
mod weigh;
