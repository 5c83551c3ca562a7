//! `atfunc serve`, the command: against the official `openai` Python client and a scripted
//! upstream (`gateway.rs`, which runs `pytest tests/gateway`), and against stalled clients
//! (`gateway_hold.rs`); executed turns that fail after their calls ran, and that run many
//! calls of big results (`executed.rs`); both start the gateway through `served.rs`.

#[path = "../../../../tests/support/missing.rs"]
mod missing;

mod executed;
mod gateway;
mod gateway_hold;
mod served;
