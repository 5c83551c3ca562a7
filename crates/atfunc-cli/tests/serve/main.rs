//! `atfunc serve`, the command: against the official `openai` Python client and a scripted
//! upstream (`gateway.rs`, which runs `pytest tests/gateway`), and against stalled clients
//! (`gateway_hold.rs`); what it finds out about scripted upstreams of each kind
//! (`detect.rs`); executed turns that fail after their calls ran, and that run many
//! calls of big results (`executed.rs`); what `--log` writes (`logged.rs`).
//! `gateway_hold.rs`, `executed.rs` and `logged.rs` start the gateway through `served.rs`.

#[path = "../../../../tests/support/missing.rs"]
mod missing;

mod detect;
mod executed;
mod gateway;
mod gateway_hold;
mod logged;
mod served;
