//! Reading an answer whose numbers JSON cannot hold: `NaN`, `Infinity` and `-Infinity`.
//!
//! Python's `json.dumps` writes a float that is not finite as those bare words, and servers
//! written in Python send them so (a log probability of `-Infinity` for a token that cannot
//! come, as llama-cpp-python's answers may hold). They are not JSON, and serde_json refuses
//! the whole answer for one of them. An answer that fails to parse only for them is read
//! with each written as a string instead (`"-Infinity"`), so nothing is lost: a reader that
//! wants a number finds a string where it looked for one, and can tell which of the three
//! it was ([`crate::turn::call_odds`] reads a `"-Infinity"` log probability as a token that
//! cannot come, and is not sure of the others).

use serde_json::Value as Json;

/// The words rewritten, longest first: `-Infinity` is matched before `Infinity`.
const WORDS: [&str; 3] = ["-Infinity", "Infinity", "NaN"];

/// `text` parsed as JSON; when it is not JSON, parsed again with the bare words of
/// [`WORDS`] outside strings written as strings ([`quote_non_finite`]). The error is the
/// first parse's when the second fails too, or when there was nothing to rewrite.
pub(crate) fn parse_lenient(text: &str) -> Result<Json, serde_json::Error> {
    let error = match serde_json::from_str(text) {
        Ok(json) => return Ok(json),
        Err(error) => error,
    };
    quote_non_finite(text)
        .and_then(|quoted| serde_json::from_str(&quoted).ok())
        .ok_or(error)
}

/// `text` with each of [`WORDS`] that stands outside a string, as a whole word, written
/// as a JSON string; `None` when there is none. Text inside strings (keys included) is
/// never changed: only the bytes between strings are read, and there JSON allows no
/// word but `true`, `false` and `null`, so a rewritten word was never valid JSON.
pub(crate) fn quote_non_finite(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out: Option<Vec<u8>> = None;
    // Invariant: `bytes[..copied]` is in `out` (rewritten), and `copied <= at`.
    let mut copied = 0;
    let mut at = 0;
    let mut in_string = false;
    while at < bytes.len() {
        let byte = bytes[at];
        if in_string {
            match byte {
                // The escaped byte is skipped with it: `\"` does not end the string.
                b'\\' => at += 2,
                b'"' => {
                    in_string = false;
                    at += 1;
                }
                _ => at += 1,
            }
            continue;
        }
        if byte == b'"' {
            in_string = true;
            at += 1;
            continue;
        }
        let word = WORDS.iter().find(|word| {
            bytes[at..].starts_with(word.as_bytes())
                && !bytes.get(at + word.len()).is_some_and(|b| is_word_byte(*b))
                && !at
                    .checked_sub(1)
                    .and_then(|before| bytes.get(before))
                    .is_some_and(|b| is_word_byte(*b) || *b == b'-' || *b == b'.')
        });
        match word {
            Some(word) => {
                let out = out.get_or_insert_with(|| Vec::with_capacity(bytes.len() + 16));
                out.extend_from_slice(&bytes[copied..at]);
                out.push(b'"');
                out.extend_from_slice(word.as_bytes());
                out.push(b'"');
                at += word.len();
                copied = at;
            }
            None => at += 1,
        }
    }
    let mut out = out?;
    out.extend_from_slice(bytes.get(copied..).unwrap_or_default());
    // Only ASCII words were put in, at ASCII bytes of the text: still UTF-8.
    String::from_utf8(out).ok()
}

/// A byte that would make a longer word or number of a matched one (`NaNx`, `1NaN`).
fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn bare_words_become_strings() {
        let text = r#"{"a": -Infinity, "b": [NaN, Infinity,-Infinity], "c": {"d":NaN}}"#;
        assert_eq!(
            quote_non_finite(text).as_deref(),
            Some(r#"{"a": "-Infinity", "b": ["NaN", "Infinity","-Infinity"], "c": {"d":"NaN"}}"#)
        );
        assert_eq!(
            parse_lenient(text).unwrap(),
            json!({"a": "-Infinity", "b": ["NaN", "Infinity", "-Infinity"], "c": {"d": "NaN"}})
        );
    }

    #[test]
    fn words_inside_strings_and_keys_are_left_alone() {
        let text = r#"{"NaN": "-Infinity and NaN", "q\"NaN": "\\", "x": NaN, "Infinity": "é NaN"}"#;
        assert_eq!(
            quote_non_finite(text).as_deref(),
            Some(
                r#"{"NaN": "-Infinity and NaN", "q\"NaN": "\\", "x": "NaN", "Infinity": "é NaN"}"#
            )
        );
    }

    #[test]
    fn parts_of_other_words_and_numbers_are_left_alone() {
        for text in [
            "[NaNa]",
            "[xNaN]",
            "[1NaN]",
            "[--Infinity]",
            "[Infinity_]",
            "[1.NaN]",
        ] {
            assert_eq!(quote_non_finite(text), None, "{text}");
            assert!(parse_lenient(text).is_err(), "{text}");
        }
    }

    #[test]
    fn valid_json_is_parsed_as_it_is_and_other_errors_stay() {
        assert_eq!(
            parse_lenient(r#"{"a": "NaN"}"#).unwrap(),
            json!({"a": "NaN"})
        );
        let error = parse_lenient(r#"{"a": NaN, "b": }"#).unwrap_err();
        // The first parse's error: where the text first stops being JSON.
        assert_eq!(error.column(), 7, "{error}");
        assert!(parse_lenient("not json").is_err());
    }

    proptest! {
        /// JSON serde_json writes (strings of any text, keys too) is never changed.
        #[test]
        fn json_is_never_rewritten(
            keys in proptest::collection::vec(".{0,12}", 0..6),
            values in proptest::collection::vec(".{0,12}", 0..6),
            numbers in proptest::collection::vec(any::<f64>(), 0..4),
        ) {
            let mut object = serde_json::Map::new();
            for (key, value) in keys.iter().zip(&values) {
                object.insert(key.clone(), Json::String(value.clone()));
            }
            object.insert("numbers".into(), json!(numbers));
            let text = Json::Object(object).to_string();
            prop_assert_eq!(quote_non_finite(&text), None);
        }

        /// Python's floats, however many are not finite, are read: the finite ones as
        /// numbers, the others as their words.
        #[test]
        fn pythons_floats_are_read(numbers in proptest::collection::vec(
            prop_oneof![any::<f64>(), Just(f64::NAN), Just(f64::INFINITY),
                Just(f64::NEG_INFINITY)], 0..8)) {
            let written: Vec<String> = numbers.iter().map(|n| python_float(*n)).collect();
            let text = format!("{{\"x\": [{}], \"s\": \"NaN\"}}", written.join(", "));
            let read = parse_lenient(&text).unwrap();
            for (number, value) in numbers.iter().zip(read["x"].as_array().unwrap()) {
                match python_float(*number).as_str() {
                    word @ ("NaN" | "Infinity" | "-Infinity") => prop_assert_eq!(value, word),
                    _ => prop_assert!(value.is_number(), "{value}"),
                }
            }
            prop_assert_eq!(&read["s"], "NaN");
        }
    }

    /// A float as Python's `json.dumps` writes it.
    fn python_float(number: f64) -> String {
        if number.is_nan() {
            "NaN".into()
        } else if number == f64::INFINITY {
            "Infinity".into()
        } else if number == f64::NEG_INFINITY {
            "-Infinity".into()
        } else {
            format!("{number:?}")
        }
    }
}
