//! Calls already written, as a grammar leaves them out
//! ([`GrammarOptions::with_not_again`](crate::GrammarOptions::with_not_again)): read from call text
//! and bound, so that each value is the one the binder reads (`days="2"` is `2`), spelled as
//! the grammar writes it.

use super::{bind, BindError, BoundCall, Catalog};
use crate::grammar::WrittenCall;
use crate::parse::{parse_events, Event, ParseError};

/// Why [`written_calls`] could not read its text: each says which call and why, in words
/// a person who wrote the calls can act on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum WrittenCallsError {
    /// A call does not bind against the catalog.
    #[error("{call}: {error}")]
    Unbound {
        /// The call as written.
        call: String,
        /// Why it does not bind (boxed: a bind error is large, and this is rare).
        error: Box<BindError>,
    },
    /// A call does not parse.
    #[error("{call}: {error}")]
    Malformed {
        /// The call's text as far as it was read.
        call: String,
        /// Why it does not parse.
        error: ParseError,
    },
    /// The text holds no call.
    #[error(
        "no call in {text:?}: write calls as the model does, @name(\"text\", 42, name=\"value\")"
    )]
    NoCall {
        /// The text given.
        text: String,
    },
}

impl BoundCall {
    /// The call as a grammar's [`WrittenCall`]: its function as the grammar names it, and
    /// its bound arguments.
    pub fn written(&self, catalog: &Catalog) -> WrittenCall {
        let function = catalog
            .get(self.index)
            .map_or_else(|| self.name.clone(), |i| i.qualified_name());
        WrittenCall::of_args(function, &self.args)
    }
}

/// Every call of `text` (`@get_weather(city="Oslo") @get_time(UTC)`), bound against
/// `catalog`, as [`WrittenCall`]s; the text around the calls is not read. A call that does
/// not parse or bind is an error that names it and says why, and so is text without a
/// call.
///
/// ```
/// use atfunc::bind::{written_calls, Catalog};
/// use atfunc::grammar::{grammar, Choice};
/// use atfunc::{GrammarOptions, Interface, Param, ParamType};
///
/// let light = Interface::new("set_light")
///     .param(Param::new("room", ParamType::String).choices(["hall", "kitchen"]).required());
/// let catalog = Catalog::new(vec![light.clone()]);
/// let not_again = written_calls("Done: @set_light(hall)", &catalog).unwrap();
/// let options = GrammarOptions::default().with_choice(Choice::Required).with_not_again(not_again);
/// let grammar = grammar(&[light], &options).unwrap();
/// assert!(grammar.accepts("@set_light(room=\"kitchen\")"));
/// assert!(!grammar.accepts("@set_light(room=\"hall\")"));
///
/// let error = written_calls("@set_light(cellar)", &catalog).unwrap_err();
/// assert!(error.to_string().starts_with("@set_light(cellar): "), "{error}");
/// ```
pub fn written_calls(text: &str, catalog: &Catalog) -> Result<Vec<WrittenCall>, WrittenCallsError> {
    let mut calls = Vec::new();
    for event in parse_events(text) {
        match event {
            Event::Call(call) => {
                let shown = span_text(text, call.span.start, call.span.end);
                let bound = bind(&call, catalog).map_err(|error| WrittenCallsError::Unbound {
                    call: shown.to_owned(),
                    error: Box::new(error),
                })?;
                calls.push(bound.written(catalog));
            }
            Event::Malformed { text, error, .. } => {
                return Err(WrittenCallsError::Malformed {
                    call: text.trim().to_owned(),
                    error,
                });
            }
            _ => {}
        }
    }
    if calls.is_empty() {
        return Err(WrittenCallsError::NoCall {
            text: text.to_owned(),
        });
    }
    Ok(calls)
}

fn span_text(text: &str, start: u64, end: u64) -> &str {
    let start = usize::try_from(start).unwrap_or(usize::MAX);
    let end = usize::try_from(end).unwrap_or(usize::MAX);
    text.get(start..end).unwrap_or(text).trim()
}
