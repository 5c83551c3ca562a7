//! The wording that messages across the crate share, so that each thing is said one way:
//! a JSON value's kind, serde_json's message without its position, a function's qualified
//! name, a size in bytes, and the "did you mean" suggestion for a misspelt name.

use serde_json::Value as Json;
use unicase::UniCase;

/// A size as a limit is given: `1 MiB`, `64 KiB`, `1000 bytes`.
pub fn human_bytes(n: usize) -> String {
    if n >= 1 << 20 && n & ((1 << 20) - 1) == 0 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n & ((1 << 10) - 1) == 0 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// How a JSON value is named in messages: `found a list`, `not a boolean`.
pub fn json_kind(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "an object",
    }
}

/// serde_json's message for `error` without the ` at line L column C` it appends, for a
/// caller that says where (or that there is only one line) in its own way.
///
/// ```
/// let error = serde_json::from_str::<serde_json::Value>("[1").unwrap_err();
/// assert_eq!(atfunc::interface::json_message(&error), "EOF while parsing a list");
/// ```
pub fn json_message(error: &serde_json::Error) -> String {
    let mut full = error.to_string();
    if let Some(cut) = full.rfind(" at line ") {
        full.truncate(cut);
    }
    full
}

/// `toolbox.function`, or `function` alone for a function outside any toolbox.
pub fn qualified(toolbox: &str, function: &str) -> String {
    if toolbox.is_empty() {
        function.to_owned()
    } else {
        format!("{toolbox}.{function}")
    }
}

/// Least [`similarity`] for a known name to be suggested for an unknown one.
pub const CLOSE_ENOUGH: f64 = 0.7;

/// How alike two names are, ignoring case, from 0 to 1 (normalised Damerau-Levenshtein).
///
/// The distance is at least the difference in length, so the score is at most
/// `shorter / longer`; below [`CLOSE_ENOUGH`] it is not computed. That keeps a hostile name
/// of megabytes from costing its length times every known name in time and memory.
pub fn similarity(a: &str, b: &str) -> f64 {
    let (la, lb) = (a.chars().count(), b.chars().count());
    let (short, long) = (la.min(lb), la.max(lb));
    if long == 0 {
        return 1.0;
    }
    if (short as f64) < CLOSE_ENOUGH * long as f64 {
        return 0.0;
    }
    let (a, b) = (fold(a), fold(b));
    strsim::normalized_damerau_levenshtein(&a, &b)
}

/// The name of `known` most like `wanted` (the first of equals), when one is
/// [`CLOSE_ENOUGH`], with its score.
pub fn closest<'a>(
    wanted: &str,
    known: impl IntoIterator<Item = &'a str>,
) -> Option<(f64, &'a str)> {
    known
        .into_iter()
        .map(|name| (similarity(wanted, name), name))
        .filter(|(score, _)| *score >= CLOSE_ENOUGH)
        .fold(None, |best, (score, name)| match best {
            Some((top, _)) if top >= score => best,
            _ => Some((score, name)),
        })
}

/// A name as calls match it: case folded.
pub fn fold(name: &str) -> String {
    UniCase::new(name).to_folded_case()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_ignores_case_and_prefers_the_first_of_equals() {
        let known = ["get_temp", "get_time", "set_temp"];
        assert_eq!(closest("GET_TEMP", known), Some((1.0, "get_temp")));
        assert_eq!(closest("get_tem", known).map(|(_, n)| n), Some("get_temp"));
        assert_eq!(closest("delete_everything", known), None);
    }

    #[test]
    fn a_far_longer_name_is_not_compared() {
        let long = "a".repeat(1 << 20);
        assert_eq!(similarity(&long, "a"), 0.0);
        assert_eq!(closest(&long, ["aaaa"]), None);
    }

    #[test]
    fn json_message_drops_the_position() {
        let error = serde_json::from_str::<Json>("[1").unwrap_err();
        assert_eq!(json_message(&error), "EOF while parsing a list");
    }
}
