//! atfunc gives function calling to language models that have none.
//!
//! The work runs in phases, one module each:
//!
//! 1. [`interface`]: what a tool is; loaded from JSON and validated.
//! 2. [`render`]: interfaces as prompt text (`@weather.get_current_weather( <*location>, <unit> )`).
//! 3. [`parse`]: calls pulled out of model output while it streams.
//! 4. [`bind`]: calls matched to interfaces, arguments typed and checked.
//! 5. `execute` (feature `execute`): calls run in tool boxes.
//! 6. [`format`]: results as text for the model's next turn.
#![deny(missing_docs)]

pub mod bind;
pub mod format;
pub mod interface;
pub mod interop;
pub mod parse;
pub mod render;
pub mod translator;

#[cfg(feature = "execute")]
pub mod execute;
#[cfg(feature = "typed")]
pub mod typed;

pub use bind::{bind, BindError, Body, BoundCall, Catalog};
pub use format::{format_results, CallRecord};
pub use interface::{
    load_interfaces, load_interfaces_str, validate_all, validate_toolbox, Interface, Kind,
    LoadError, Location, Param, ParamType, ValidationError, ValidationErrors,
};
pub use interop::{to_mcp_tools, to_openai_tools, NameMap, Rendered};
pub use parse::{parse_events, Call, Event, ParseError, ParserConfig, Span, StreamParser, Value};
pub use render::{render_interface, render_prompt, PromptOptions};
pub use translator::{Atfunc, Translator};
