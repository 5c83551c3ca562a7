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
