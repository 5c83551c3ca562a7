//! atfunc's gateway: tool calling for a model behind an OpenAI-compatible endpoint.
//!
//! [`serve`] is the HTTP server (`atfunc serve`): applications send it OpenAI requests
//! with `tools`, it puts the tools in the prompt (or a grammar) upstream, reads the calls
//! from the answer and sends `tool_calls` back. The turn it runs for each request is the
//! engine's; the upstream is reached by its client. See docs/gateway.md for the contract.
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[doc(hidden)]
pub mod endpoint;
pub mod serve;
#[doc(hidden)]
pub mod turn;
