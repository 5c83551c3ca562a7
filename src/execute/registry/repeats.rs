//! Ending an answer at the first call that repeats an earlier one
//! ([`ResponseStream::end_at_repeated_call`](super::ResponseStream::end_at_repeated_call)).
//!
//! A small model that cannot stop writes its calls again and again until its token limit
//! (on BFCL `parallel`, 180 of 200 answers of SmolLM2-135M did). Run as written, each of
//! those calls would run once per copy; read up to the first repeat, each runs once.

use super::turn::Job;
use crate::bind::CallKey;
use crate::parse::Span;
use std::collections::HashSet;

/// The most distinct calls remembered: an answer with more is already past any limit a
/// gateway sets, and memory stays bounded whatever the answer holds.
const MAX_REMEMBERED: usize = 1000;

/// The calls an answer has asked for so far, by their [`BoundCall::key`](crate::BoundCall::key).
#[derive(Debug, Default)]
pub(super) struct Repeats {
    seen: HashSet<CallKey>,
    /// The first repeat's span, once there was one: nothing after it is run.
    at: Option<Span>,
}

impl Repeats {
    /// Whether `job` runs: every job before the first bound call that repeats an earlier
    /// one (the same function with the same bound arguments and body, however the call
    /// spelled them), none from it on. A refused call is never a repeat: the model is
    /// told what was wrong each time.
    pub(super) fn admit(&mut self, job: &Job) -> bool {
        if self.at.is_some() {
            return false;
        }
        let Job::Bound { bound, .. } = job else {
            return true;
        };
        let key = bound.key();
        if self.seen.contains(&key) {
            self.at = Some(bound.span);
            return false;
        }
        if self.seen.len() < MAX_REMEMBERED {
            self.seen.insert(key);
        }
        true
    }

    /// Where the answer was ended: the span of the first repeated call.
    pub(super) fn ended_at(&self) -> Option<Span> {
        self.at
    }
}
