//! Phase 5 of atfunc, execute: tool boxes, the registry, and running calls.
//!
//! The core crate `atfunc` shows a model its tools and reads the calls it writes; this
//! crate runs them.
//!
//! A [`ToolBox`] is a set of tools under one domain, called asynchronously. Boxes compose:
//! [`MultiBox`] merges boxes, and wrappers ([`Hooked`], [`Conditional`], [`Scoped`],
//! [`Timeout`], [`Recording`]) change what happens around a call without adding tools;
//! [`Replay`] answers from a recording. The [`Registry`] holds the boxes, runs the calls a
//! model wrote (whole, or while the answer streams in) and formats their results; calls of
//! functions that need the user's confirmation wait for it ([`Registry::confirm`]). A call
//! may show the client elements (a card, an image) beside the value the model reads:
//! [`CallContext::add_element`], [`ToolOutput`], [`Outcome::elements`].
//!
//! A tool that panics, hangs past its time limit or fails gives an error result the model
//! can read; the registry stays usable and the other calls still run. A caught panic is
//! still reported by the process's panic hook (the default one prints it to standard
//! error) unless [`quiet_tool_panics`] was called.

#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod args;
#[cfg(any(feature = "command", feature = "http"))]
mod binary;
mod boxes;
#[cfg(feature = "command")]
mod command;
mod confirm;
mod elements;
mod events;
#[cfg(feature = "file")]
mod file;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "mcp")]
mod mcp;
mod panics;
mod record;
#[cfg(any(feature = "command", feature = "http"))]
mod redact;
mod registry;
mod toolbox;
mod wrappers;

pub use args::Args;
pub use boxes::{EmptyBox, FnBox, MultiBox};
#[cfg(feature = "command")]
pub use command::{CommandBox, EnvInheritance, DEFAULT_COMMAND_TIMEOUT, DEFAULT_MAX_OUTPUT_BYTES};
pub use confirm::{
    held_result, ConfirmError, Confirmer, Decision, HeldCall, HoldLimits, DEFAULT_HOLD_EXPIRY,
    DEFAULT_MAX_HELD,
};
pub use elements::ToolOutput;
pub use events::{CallEvent, CallEventKind};
#[cfg(feature = "file")]
pub use file::{FileBox, FileBoxError, FileError, FileErrorKind, DEFAULT_MAX_READ_BYTES};
#[cfg(feature = "http")]
pub use http::{
    HttpBox, HttpBoxBuilder, HttpBoxError, DEFAULT_HTTP_TIMEOUT, DEFAULT_MAX_REDIRECTS,
    DEFAULT_MAX_RESPONSE_BYTES,
};
#[cfg(feature = "mcp")]
pub use mcp::{McpBox, McpOptions, DEFAULT_STARTUP_TIMEOUT};
pub use panics::quiet_tool_panics;
pub use record::{RecordedCall, RecordedOutcome, Recording, Replay, ReplayError};
pub use registry::{
    CallOptions, ExecutionReport, FoundFunction, FunctionStats, InputError, Outcome, OutcomeState,
    Outcomes, Piece, Pieces, RegisterError, Registry, RegistryPrompt, ResponseStream, Settings,
    Stats, StreamEnd, CONTROL_DOMAIN, ERROR_TEXT_FLOOR,
};
/// The token of [`CallContext::cancellation`] (tokio-util's, as rmcp's tools get it).
pub use tokio_util::sync::CancellationToken;
pub use toolbox::{BuildError, CallContext, Extensions, SourceError, ToolBox, ToolError};
pub use wrappers::{
    Conditional, Hooked, Scope, Scoped, Timeout, ToolBoxExt, ToolEvent, ToolHandler,
};

pub mod config;
#[cfg(feature = "typed")]
pub mod typed;

// Named in the signatures of tools: `?` and `json!` in a closure, `Map` in `ToolBox::call`,
// `#[async_trait]` on a `ToolBox` impl; re-exported so a tool needs no version of its own.
pub use async_trait::async_trait;
pub use atfunc::{json, serde_json, Map};
/// The JSON Schema derive a typed tool's arguments need (feature `typed`), so that the
/// version is the one this crate reads: `use atfunc_tools::schemars;` and
/// `#[derive(schemars::JsonSchema)]` (see [`typed`]).
#[cfg(feature = "typed")]
pub use schemars;
