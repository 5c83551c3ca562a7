//! atfunc gives function calling to language models that have none.
//!
//! This crate is the core: what a program needs to show a model its tools and to read the
//! calls it writes, with no async runtime. The work runs in phases, one module each:
//!
//! 1. [`interface`]: what a tool is; loaded from JSON and validated.
//! 2. [`render`]: interfaces as prompt text (`@weather.get_current_weather( <*location>, <unit> )`).
//! 3. [`parse`]: calls pulled out of model output while it streams.
//! 4. [`bind`](mod@bind): calls matched to interfaces, arguments typed and checked.
//! 5. execute: calls run in tool boxes, in the crate `atfunc-tools`.
//! 6. [`format`](mod@format): results as text for the model's next turn.
//!
//! Beside render, [`grammar`](mod@grammar) writes the same interfaces as a GBNF grammar
//! that constrains an inference engine to answers whose calls bind. Beside the phases,
//! [`interop`] speaks the tool formats of OpenAI and MCP, and [`batch`] reads many
//! completions at once (`atfunc parse --jsonl`).
//!
//! The crate root re-exports the names each phase is first used by (the functions and types
//! in the example below, [`format_results`], [`gbnf`], and each phase's error type); the
//! rest of a phase, its options and smaller types, is in its module:
//! `atfunc::interface::LoadLimits`, `atfunc::parse::Value`, `atfunc::render::PromptOptions`.
//!
//! The rest of atfunc builds on this crate: `atfunc-tools` runs calls in tool boxes (Rust
//! functions, programs, HTTP APIs, MCP servers), `atfunc-gateway` gives tool calling to a
//! model behind an OpenAI-compatible endpoint, and `atfunc-cli` is the `atfunc` command.
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

// The wording messages share across atfunc's crates, so that each thing is said one way.
// Public for those crates only: not part of the API, and free to change in any release.
mod json_reader;
#[doc(hidden)]
pub mod messages;
mod ordered;

// The root holds what a user of each phase reaches for first; everything else is in its
// phase's module (`atfunc::interface::LoadLimits`, `atfunc::parse::Value`, ...).
pub use bind::{bind, BindError, BoundCall, Catalog};
pub use format::{format_results, CallRecord};
pub use grammar::{gbnf, GrammarError, GrammarOptions};
pub use interface::{load_interfaces, load_interfaces_str, Interface, LoadError, Param, ParamType};
pub use parse::{parse_events, Call, Event, ParseError, ParserConfig, StreamParser};
pub use render::render_prompt;

// The JSON types calls and results are made of, re-exported so that a user needs no
// version of serde_json of its own.
pub use serde_json::{self, json, Map};
