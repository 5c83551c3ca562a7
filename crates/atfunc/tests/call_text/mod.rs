//! Writing values as atfunc call text, shared by the tests that build calls to parse back.
#![allow(dead_code)]

/// `text` as an atfunc string literal in `quote` (`"` or `'`), escaped so that it reads
/// back as exactly `text`.
pub fn quoted(text: &str, quote: char) -> String {
    if quote == '"' {
        return serde_json::to_string(text).expect("a string serialises");
    }
    let mut out = String::from("'");
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Whether `text` reads back as the same string when written without quotes.
pub fn bare_safe(text: &str) -> bool {
    let mut chars = text.chars();
    matches!(chars.next(), Some(c) if c.is_alphabetic())
        && !text.ends_with(' ')
        && text
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, ' ' | '_' | '-' | '.'))
        && !["true", "false", "null", "none", "nan", "inf", "infinity"]
            .contains(&text.to_lowercase().as_str())
}

/// Whether a BFCL answer list lets a call leave its parameter out when writing it is not
/// called for: `""` is among the answers, the parameter is optional, and either the answer
/// lists `""` first or the function does not declare the parameter (two answers name
/// arguments their function lacks).
pub fn may_leave_out(options: &[serde_json::Value], required: bool, declared: bool) -> bool {
    options.iter().any(|v| v == "")
        && !required
        && (options.first() == Some(&serde_json::Value::from("")) || !declared)
}

/// A BFCL ground-truth value with each dict field's acceptable values reduced to the
/// first that is not `""` (a field whose only answer is `""` is left out).
pub fn first_answer(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value as Json;
    match value {
        Json::Object(fields) => Json::Object(
            fields
                .iter()
                .filter_map(|(k, v)| {
                    let first = match v.as_array() {
                        Some(options) => options.iter().find(|o| *o != "")?,
                        None => v,
                    };
                    Some((k.clone(), first_answer(first)))
                })
                .collect(),
        ),
        Json::Array(items) => Json::Array(items.iter().map(first_answer).collect()),
        other => other.clone(),
    }
}
