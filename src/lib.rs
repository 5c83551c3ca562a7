//! atfunc gives function calling to language models that have none.
//!
//! The work runs in phases, one module each:
//!
//! 1. [`interface`]: what a tool is; loaded from JSON and validated.
//! 2. [`render`]: interfaces as prompt text (`@weather.get_current_weather( <*location>, <unit> )`).
//! 3. [`parse`]: calls pulled out of model output while it streams.
//! 4. [`bind`](mod@bind): calls matched to interfaces, arguments typed and checked.
#![cfg_attr(
    feature = "execute",
    doc = "5. [`execute`] (feature `execute`): calls run in tool boxes."
)]
#![cfg_attr(
    not(feature = "execute"),
    doc = "5. `execute` (feature `execute`): calls run in tool boxes."
)]
//! 6. [`format`](mod@format): results as text for the model's next turn.
//!
//! Beside render, [`grammar`](mod@grammar) writes the same interfaces as a GBNF grammar
//! that constrains an inference engine to answers whose calls bind.
//!
//! The crate root re-exports the names each phase is first used by (the functions and types
//! in the example below, `Registry` and `ToolBox` with the feature `execute`,
//! [`format_results`], [`gbnf`], and each phase's error type); the rest of a phase, its
//! options and smaller types, is in its module: `atfunc::interface::LoadLimits`,
//! `atfunc::parse::Value`, `atfunc::render::PromptOptions`, `atfunc::execute::FileBox`.
//!
#![cfg_attr(
    feature = "typed",
    doc = "Beside the phases, [`interop`] speaks the tool formats of OpenAI and MCP, and [`typed`]"
)]
#![cfg_attr(
    not(feature = "typed"),
    doc = "Beside the phases, [`interop`] speaks the tool formats of OpenAI and MCP, and `typed`"
)]
//! (feature `typed`) turns Rust functions into tools.
//!
//! ```
//! use atfunc::{bind, load_interfaces_str, parse_events, Catalog, Event};
//! use atfunc::render::render_interface;
//!
//! let tools = load_interfaces_str(r#"[{"type": "function", "function": {
//!     "name": "weather.get_temp",
//!     "description": "Current temperature",
//!     "parameters": {"type": "object",
//!                    "properties": {"location": {"type": "string"}, "days": {"type": "integer"}},
//!                    "required": ["location"]}}}]"#).unwrap();
//! assert_eq!(
//!     render_interface(&tools[0]),
//!     "@weather.get_temp( <*location>, <days{integer}> )\nDescription: Current temperature\n"
//! );
//!
//! let catalog = Catalog::new(tools);
//! for event in parse_events("Sure: @Weather.Get_Temp('Oslo', days=\"2\") then we'll see.") {
//!     if let Event::Call(call) = event {
//!         let bound = bind(&call, &catalog).unwrap();
//!         assert_eq!(bound.name, "weather.get_temp");
//!         assert_eq!(bound.args["days"], 2);
//!     }
//! }
//! ```
#![cfg_attr(
    feature = "typed",
    doc = concat!(
        "\n# Using the library\n\n",
        "Tools written in Rust (a closure in a [`FnBox`](execute::FnBox), a typed function in a ",
        "[`TypedBox`](typed::TypedBox)), a [`Registry`](execute::Registry), and a model's answer ",
        "read from a byte stream while its calls run ([`ResponseStream::run`](execute::ResponseStream::run)); ",
        "`examples/library.rs`, as the README shows it:\n\n```\n",
        include_str!("../examples/library.rs"),
        "```\n"
    )
)]
#![deny(missing_docs)]
// On docs.rs (every feature on, `--cfg docsrs`) each item gets a badge naming the feature
// it needs; `doc_cfg` is nightly-only, so stable builds never see it.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod batch;
pub mod bind;
pub mod format;
pub mod grammar;
pub mod interface;
pub mod interop;
pub mod parse;
pub mod render;
pub mod translator;

mod messages;

#[cfg(feature = "execute")]
pub mod config;
#[cfg(any(feature = "serve", feature = "eval"))]
mod endpoint;
#[cfg(feature = "eval")]
pub mod eval;
#[cfg(feature = "execute")]
pub mod execute;
#[cfg(feature = "serve")]
pub mod serve;
#[cfg(feature = "serve")]
mod turn;
#[cfg(feature = "typed")]
pub mod typed;

// The root holds what a user of each phase reaches for first; everything else is in its
// phase's module (`atfunc::interface::LoadLimits`, `atfunc::parse::Value`, ...).
pub use bind::{bind, BindError, BoundCall, Catalog};
pub use format::{format_results, CallRecord};
pub use grammar::{gbnf, GrammarError, GrammarOptions};
pub use interface::{load_interfaces, load_interfaces_str, Interface, LoadError, Param, ParamType};
pub use parse::{parse_events, Call, Event, ParseError, ParserConfig, StreamParser};
pub use render::render_prompt;

// Named in the signatures of tools: `?` and `json!` in a closure, `Map` in `ToolBox::call`,
// `#[async_trait]` on a `ToolBox` impl; re-exported so a tool needs no version of its own.
#[cfg(feature = "execute")]
pub use async_trait::async_trait;
pub use serde_json::{self, json, Map};

#[cfg(feature = "execute")]
pub use execute::{FnBox, Registry, ToolBox, ToolError};
