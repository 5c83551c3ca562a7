//! Ending an answer at the first call that repeats an earlier one.
//!
//! A small model that cannot stop writes its calls again and again until its token limit
//! (on BFCL `parallel`, 180 of 200 answers of SmolLM2-135M did). Read as written, each of
//! those calls would run once per copy; read up to the first repeat, each runs once. The
//! gateway, the registry (with
//! [`ResponseStream::end_at_repeated_call`](crate::execute::ResponseStream::end_at_repeated_call))
//! and the evaluator all read answers through [`Repeats`], so they agree on what a repeat is.

use super::{BoundCall, CallKey};
use crate::parse::Span;
use std::collections::HashSet;

/// The most distinct calls [`Repeats::default`] remembers: an answer with more is past
/// any limit the gateway sets on calls, and memory stays bounded whatever it holds.
pub const MAX_REMEMBERED: usize = 1000;

/// The calls an answer has made so far, by their [`BoundCall::key`], and where it was
/// ended, once a call repeated one of them.
///
/// ```
/// use atfunc::bind::Repeats;
/// use atfunc::parse::{parse_events, Event};
/// use atfunc::{bind, Catalog, Interface, Param, ParamType};
///
/// let catalog = Catalog::new(vec![
///     Interface::new("get_weather").param(Param::new("city", ParamType::String).required()),
/// ]);
/// let answer = r#"@get_weather(Oslo) @get_weather(Paris) @GET_WEATHER(city="Oslo")"#;
/// let mut repeats = Repeats::default();
/// let admitted: Vec<bool> = parse_events(answer)
///     .into_iter()
///     .filter_map(|event| match event {
///         Event::Call(call) => Some(repeats.admit(&bind(&call, &catalog).unwrap())),
///         _ => None,
///     })
///     .collect();
/// assert_eq!(admitted, [true, true, false]);
/// assert_eq!(repeats.ended_at().map(|span| span.start), Some(39));
/// ```
#[derive(Debug)]
pub struct Repeats {
    seen: HashSet<CallKey>,
    /// How many keys `seen` may hold.
    limit: usize,
    /// The first repeat's span, once there was one: nothing from it on is read.
    at: Option<Span>,
}

impl Default for Repeats {
    /// Remembers up to [`MAX_REMEMBERED`] distinct calls.
    fn default() -> Repeats {
        Repeats::remembering(MAX_REMEMBERED)
    }
}

impl Repeats {
    /// Remembers up to `limit` distinct calls; a repeat of a call made after them is not
    /// seen. `usize::MAX` for an answer already bounded in size.
    pub fn remembering(limit: usize) -> Repeats {
        Repeats {
            seen: HashSet::new(),
            limit,
            at: None,
        }
    }

    /// Whether `bound` is read: a call is, unless the answer is over or the call repeats
    /// an earlier one (the same [`BoundCall::key`]: the same function with the same bound
    /// arguments and body, however each call spelled them), which ends the answer there.
    pub fn admit(&mut self, bound: &BoundCall) -> bool {
        if self.at.is_some() {
            return false;
        }
        let key = bound.key();
        if self.seen.contains(&key) {
            self.at = Some(bound.span);
            return false;
        }
        if self.seen.len() < self.limit {
            self.seen.insert(key);
        }
        true
    }

    /// Whether a repeat has ended the answer: nothing more of it is read. A call that did
    /// not bind is no repeat, and is read until then.
    pub fn is_over(&self) -> bool {
        self.at.is_some()
    }

    /// Where the answer was ended: the span of the first repeated call.
    pub fn ended_at(&self) -> Option<Span> {
        self.at
    }
}
