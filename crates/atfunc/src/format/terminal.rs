//! Text written by tools and models, made safe to show on a terminal.
//!
//! A terminal obeys what it is sent: `ESC[8m` hides the text after it, a carriage return
//! lets a line overwrite the one the user is reading, a right-to-left override shows
//! `txt.exe` as `exe.txt`, and a tag character or a Hangul filler shows nothing at all.
//! Text a model wrote, or a tool returned, must not be able to do any of that where a
//! person reads it, so every such character is written as an escape (`\u{001b}`) instead.
//!
//! One list, [`is_invisible`], names the characters that hide or reorder text without
//! being control characters; the file box's error messages and `atfunc exec`'s questions
//! and printed results use the same one.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` hides or reorders the text around it, or separates lines, without being a
/// control character (those are [`char::is_control`]):
///
/// - bidirectional marks, embeddings, overrides and isolates (U+061C, U+200E, U+200F,
///   U+202A–U+202E, U+2066–U+2069) and the deprecated format characters U+206A–U+206F;
/// - zero-width and invisible characters (U+200B–U+200D, U+2060–U+2064, U+FEFF, the soft
///   hyphen U+00AD, the combining grapheme joiner U+034F, the Mongolian variation
///   selectors and vowel separator U+180B–U+180F, the Khmer inherent vowels U+17B4 and
///   U+17B5, the interlinear annotation marks U+FFF9–U+FFFB);
/// - the Hangul fillers, which show as blank (U+115F, U+1160, U+3164, U+FFA0);
/// - variation selectors (U+FE00–U+FE0F, U+E0100–U+E01EF) and tag characters
///   (U+E0000–U+E007F), which can carry a hidden message after a visible one;
/// - the line and paragraph separators U+2028 and U+2029.
///
/// ```
/// use atfunc::format::is_invisible;
///
/// assert!(is_invisible('\u{202e}'));
/// assert!(is_invisible('\u{e0041}'));
/// assert!(!is_invisible('é'));
/// ```
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{17B4}'
            | '\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{E0000}'..='\u{E007F}'
            | '\u{E0100}'..='\u{E01EF}'
    )
}

/// `text` with every control character and every [`is_invisible`] character written as
/// `\u{XXXX}` (at least four hex digits), line breaks and tabs included: for text that
/// must stay on one line, such as a call shown in a question. Text without any comes back
/// borrowed.
///
/// ```
/// use atfunc::format::escape_for_terminal;
///
/// assert_eq!(escape_for_terminal("a\u{1b}[8mb\n"), "a\\u{001b}[8mb\\u{000a}");
/// assert_eq!(escape_for_terminal("Straße"), "Straße");
/// ```
pub fn escape_for_terminal(text: &str) -> Cow<'_, str> {
    escape_with(text, |_, _| false)
}

/// Like [`escape_for_terminal`], but line feeds, tabs and a carriage return right before
/// a line feed stay as they are: for a result shown as lines of text, such as the blocks
/// `atfunc exec` prints.
///
/// ```
/// use atfunc::format::escape_lines_for_terminal;
///
/// assert_eq!(
///     escape_lines_for_terminal("Run it?\r\n\tok\rfake\u{1b}[8m"),
///     "Run it?\r\n\tok\\u{000d}fake\\u{001b}[8m"
/// );
/// ```
pub fn escape_lines_for_terminal(text: &str) -> Cow<'_, str> {
    escape_with(text, |c, next| {
        c == '\n' || c == '\t' || (c == '\r' && next == Some('\n'))
    })
}

/// JSON text (as `serde_json` writes it) with every control and [`is_invisible`]
/// character inside its strings written as a JSON escape (`\u001b`, a surrogate pair above
/// U+FFFF): the same JSON value, safe to show. Line feeds, tabs and carriage returns are
/// left alone: outside strings they are the layout, and inside strings `serde_json`
/// already escapes them.
///
/// ```
/// use atfunc::format::escape_json_for_terminal;
///
/// let json = serde_json::to_string("a\u{9b}b\u{e0041}").unwrap();
/// let safe = escape_json_for_terminal(&json);
/// assert_eq!(safe, r#""a\u009bb\udb40\udc41""#);
/// assert_eq!(serde_json::from_str::<String>(&safe).unwrap(), "a\u{9b}b\u{e0041}");
/// ```
pub fn escape_json_for_terminal(json: &str) -> Cow<'_, str> {
    let kept = |c: char| c == '\n' || c == '\t' || c == '\r';
    if !json.chars().any(|c| needs_escape(c) && !kept(c)) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if needs_escape(c) && !kept(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c.is_control() || is_invisible(c)
}

/// Escapes every character that [`needs_escape`] unless `keep(c, next)` says otherwise.
fn escape_with(text: &str, keep: impl Fn(char, Option<char>) -> bool) -> Cow<'_, str> {
    let mut chars = text.chars().peekable();
    let mut out: Option<String> = None;
    let mut at = 0;
    while let Some(c) = chars.next() {
        let escape = needs_escape(c) && !keep(c, chars.peek().copied());
        if escape {
            let out = out.get_or_insert_with(|| {
                let mut start = String::with_capacity(text.len() + 16);
                start.push_str(text.get(..at).unwrap_or_default());
                start
            });
            let _ = write!(out, "\\u{{{:04x}}}", u32::from(c));
        } else if let Some(out) = out.as_mut() {
            out.push(c);
        }
        at += c.len_utf8();
    }
    match out {
        Some(out) => Cow::Owned(out),
        None => Cow::Borrowed(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every range the list promises, at both ends.
    #[test]
    fn the_list_covers_every_promised_range() {
        let promised = [
            ('\u{00AD}', '\u{00AD}'),
            ('\u{034F}', '\u{034F}'),
            ('\u{061C}', '\u{061C}'),
            ('\u{115F}', '\u{1160}'),
            ('\u{180B}', '\u{180F}'),
            ('\u{200B}', '\u{200F}'),
            ('\u{2028}', '\u{202E}'),
            ('\u{2060}', '\u{2064}'),
            ('\u{2066}', '\u{206F}'),
            ('\u{3164}', '\u{3164}'),
            ('\u{FE00}', '\u{FE0F}'),
            ('\u{FEFF}', '\u{FEFF}'),
            ('\u{FFA0}', '\u{FFA0}'),
            ('\u{E0000}', '\u{E007F}'),
            ('\u{E0100}', '\u{E01EF}'),
        ];
        for (first, last) in promised {
            for c in first..=last {
                assert!(is_invisible(c), "U+{:04X}", u32::from(c));
            }
        }
        for c in ['a', 'é', 'ß', '😀', '中', ' ', '\u{2070}', '\u{FE10}'] {
            assert!(!is_invisible(c), "U+{:04X}", u32::from(c));
        }
    }

    #[test]
    fn controls_and_invisible_characters_are_escaped() {
        assert_eq!(
            escape_for_terminal("a\u{202e}txt.exe\u{7f}\u{85}\u{200b}b\u{2066}\u{e0041}"),
            "a\\u{202e}txt.exe\\u{007f}\\u{0085}\\u{200b}b\\u{2066}\\u{e0041}"
        );
        assert!(matches!(
            escape_for_terminal("Straße 😀"),
            Cow::Borrowed("Straße 😀")
        ));
    }

    #[test]
    fn lines_keep_their_breaks_and_tabs() {
        assert_eq!(
            escape_lines_for_terminal("one\r\ntwo\tthree\rfour\u{1b}]0;title\u{7}"),
            "one\r\ntwo\tthree\\u{000d}four\\u{001b}]0;title\\u{0007}"
        );
        assert_eq!(escape_lines_for_terminal("end\r"), "end\\u{000d}");
    }

    #[test]
    fn json_stays_the_same_value() {
        let value =
            serde_json::json!({"a": "x\u{1b}[8m\u{9b}\u{202e}\u{e0041}\n", "b": [1, "\u{7f}"]});
        let pretty = serde_json::to_string_pretty(&value).unwrap_or_default();
        let safe = escape_json_for_terminal(&pretty);
        assert!(
            !safe.chars().any(|c| needs_escape(c) && c != '\n'),
            "{safe}"
        );
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap_or_default();
        assert_eq!(back, value);
    }
}
