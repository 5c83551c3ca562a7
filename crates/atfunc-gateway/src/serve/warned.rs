//! Which warnings about clients' tools the gateway writes to stderr.
//!
//! Clients send the same tools with every request, so each warning is written once, the
//! first time a request brings it. One request may bring thousands (a large tool list
//! with a restriction atfunc does not enforce in every schema): it gets at most
//! [`MAX_WRITTEN_PER_REQUEST`] lines of its own and one more saying how many it held back,
//! so it neither floods the log nor spends what later requests need to be heard. Those
//! held back are not remembered, so a later request that brings them again is told.

use std::collections::HashSet;

/// Most warnings written for one request; the rest are counted in one line.
pub(crate) const MAX_WRITTEN_PER_REQUEST: usize = 100;

/// Most warnings remembered as written. Past it the memory starts over, so a client
/// sending ever-new tools cannot grow the gateway's memory, and a warning written long ago
/// may be written once more.
pub(crate) const MAX_REMEMBERED: usize = 10_000;

/// The warnings written so far.
#[derive(Debug, Default)]
pub(crate) struct Warned {
    /// Invariant: at most [`MAX_REMEMBERED`] entries.
    written: HashSet<String>,
}

impl Warned {
    /// The lines to write for one request's `warnings`: each one not written before, at
    /// most [`MAX_WRITTEN_PER_REQUEST`] of them, then `N more warnings not shown` when it
    /// held some back. Those returned count as written from now on.
    pub(crate) fn admit(&mut self, warnings: impl IntoIterator<Item = String>) -> Vec<String> {
        let mut lines = Vec::new();
        let mut held_back: HashSet<String> = HashSet::new();
        for warning in warnings {
            if self.written.contains(&warning) || held_back.contains(&warning) {
                continue;
            }
            if lines.len() >= MAX_WRITTEN_PER_REQUEST {
                held_back.insert(warning);
                continue;
            }
            if self.written.len() >= MAX_REMEMBERED {
                self.written.clear();
            }
            self.written.insert(warning.clone());
            lines.push(warning);
        }
        if !held_back.is_empty() {
            lines.push(format!("{} more warnings not shown", held_back.len()));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(prefix: &str, count: usize) -> Vec<String> {
        (0..count).map(|i| format!("{prefix} {i}")).collect()
    }

    #[test]
    fn one_request_with_many_warnings_leaves_later_requests_heard() {
        let mut warned = Warned::default();
        let first = warned.admit(numbered("flood", 12_000));
        assert_eq!(first.len(), MAX_WRITTEN_PER_REQUEST + 1);
        assert_eq!(first.first().map(String::as_str), Some("flood 0"));
        assert_eq!(
            first.last().map(String::as_str),
            Some("11900 more warnings not shown")
        );
        // Another client's problem is still written, once.
        assert_eq!(warned.admit(numbered("later", 1)), ["later 0"]);
        assert!(warned.admit(numbered("later", 1)).is_empty());
    }

    #[test]
    fn a_warning_is_written_once_and_one_held_back_is_told_later() {
        let mut warned = Warned::default();
        let mut warnings = numbered("w", MAX_WRITTEN_PER_REQUEST + 2);
        // Repeated within the request: counted once.
        warnings.push(format!("w {}", MAX_WRITTEN_PER_REQUEST + 1));
        let first = warned.admit(warnings.clone());
        assert_eq!(
            first.last().map(String::as_str),
            Some("2 more warnings not shown")
        );
        let second = warned.admit(warnings);
        let wanted: Vec<String> =
            numbered("w", MAX_WRITTEN_PER_REQUEST + 2).split_off(MAX_WRITTEN_PER_REQUEST);
        assert_eq!(second, wanted);
    }

    #[test]
    fn memory_stays_bounded_and_new_warnings_are_still_written() {
        let mut warned = Warned::default();
        for request in 0..(MAX_REMEMBERED / MAX_WRITTEN_PER_REQUEST + 5) {
            let lines = warned.admit(numbered(&format!("r{request}"), MAX_WRITTEN_PER_REQUEST));
            assert_eq!(lines.len(), MAX_WRITTEN_PER_REQUEST);
            assert!(warned.written.len() <= MAX_REMEMBERED);
        }
        assert_eq!(warned.admit(numbered("new", 1)), ["new 0"]);
    }
}
