//! The gateway, `atfunc serve`: against the official `openai` Python client and a scripted
//! upstream (`gateway.rs`, which runs `pytest tests/gateway`), and against stalled clients
//! (`gateway_hold.rs`).

#[cfg(feature = "cli")]
#[path = "../support/missing.rs"]
mod missing;

mod gateway;
mod gateway_hold;
