//! The translator: the text protocol between a model and its tools.
//!
//! A [`Translator`] renders interfaces for the prompt, pulls calls out of the model's text,
//! formats results, and says whether names match case-sensitively. [`Atfunc`] is the
//! built-in one; implement the trait to plug in another protocol.
//!
//! A `Registry` (feature `execute`) made `with_translator` asks its translator two things:
//! whether names match case-sensitively, and how results are written for the model. It
//! renders prompts and reads answers itself (with [`render`] and a
//! [`StreamParser`](crate::StreamParser) for the dialect configured), so a translator's
//! [`render`](Translator::render) and [`parse`](Translator::parse) are for callers that hold
//! one directly.

use crate::format::{self, CallRecord};
use crate::interface::Interface;
use crate::parse::{self, Event};
use crate::render::{self, PromptOptions};

/// A text protocol between a model and its tools.
pub trait Translator: Send + Sync {
    /// The translator's name (`atfunc`).
    fn name(&self) -> &str;

    /// Whether function and parameter names must match exactly. Defaults to `true`, as in the
    /// reference library: a translator opts in to forgiving matching.
    fn case_sensitive(&self) -> bool {
        true
    }

    /// Renders one interface as the text the model reads, under the name and with the
    /// separator `options` ask for.
    fn render(&self, interface: &Interface, options: &PromptOptions) -> String;

    /// Pulls the calls (and the text around them) out of a whole model answer.
    fn parse(&self, text: &str) -> Vec<Event>;

    /// Formats executed calls for the model's next turn.
    fn format_results(&self, records: &[CallRecord]) -> String;
}

/// The built-in atfunc translator: `@domain.fn(args)` calls, case-insensitive names.
#[derive(Debug, Clone, Copy, Default)]
pub struct Atfunc;

impl Translator for Atfunc {
    fn name(&self) -> &str {
        "atfunc"
    }

    fn case_sensitive(&self) -> bool {
        false
    }

    fn render(&self, interface: &Interface, options: &PromptOptions) -> String {
        render::render_interface_with(interface, options)
    }

    fn parse(&self, text: &str) -> Vec<Event> {
        parse::parse_events(text)
    }

    fn format_results(&self, records: &[CallRecord]) -> String {
        format::format_results(records)
    }
}
