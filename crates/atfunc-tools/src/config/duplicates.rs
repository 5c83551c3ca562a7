//! Keys given twice in one object of a config's text.
//!
//! A JSON reader keeps the last of two equal keys without a word, and `serde_json` does
//! too: `"root": "./box", "root": "/"` would silently widen a file box to `/`. The parsed
//! value has already lost the first key, so this pass walks the text itself, with serde's
//! visitor (the same tokenizer, so keys compare after their escapes are decoded, as the
//! parsed value compares them), and names each duplicate with its path.

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::collections::HashSet;
use std::fmt;

/// One problem per key given twice (or more) in one object, in the order of the text.
/// Text that is not JSON gives none: its syntax error is reported elsewhere.
pub(super) fn duplicate_keys(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut reader = serde_json::Deserializer::from_str(text);
    let walk = Walk {
        path: String::new(),
        found: &mut found,
    };
    // An error here is a syntax error, which the parse that follows reports.
    let _ = walk.deserialize(&mut reader);
    found
}

/// Visits a value at `path` (`toolboxes[0].headers`; empty at the top), recording
/// duplicate keys in its objects and those below.
struct Walk<'a> {
    path: String,
    found: &'a mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        let mut index = 0usize;
        loop {
            let item = Walk {
                path: format!("{}[{index}]", self.path),
                found: &mut *self.found,
            };
            if items.next_element_seed(item)?.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = join(&self.path, &key);
            if seen.contains(&key) {
                let place = if self.path.is_empty() {
                    String::from("at the top level")
                } else {
                    format!("in {}", self.path)
                };
                self.found.push(format!(
                    "key '{}' is given twice {place} (JSON keeps only the last); give each key once",
                    escaped(&key)
                ));
            } else {
                seen.insert(key);
            }
            let value = Walk {
                path,
                found: &mut *self.found,
            };
            map.next_value_seed(value)?;
        }
        Ok(())
    }
}

/// `parent.key` for a key that is a name, `parent["key"]` (JSON-quoted, so a control
/// character is shown escaped) for any other.
fn join(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (plain, parent.is_empty()) {
        (true, true) => key.to_owned(),
        (true, false) => format!("{parent}.{key}"),
        (false, _) => format!("{parent}[{}]", serde_json::Value::from(key)),
    }
}

/// A key as JSON writes it inside quotes: control characters escaped, never raw.
fn escaped(key: &str) -> String {
    let quoted = serde_json::Value::from(key).to_string();
    quoted
        .strip_prefix('"')
        .and_then(|inner| inner.strip_suffix('"'))
        .map_or_else(|| quoted.clone(), str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_keys_after_escapes_are_found_in_every_object() {
        let text = r#"{"a": [{"b": 1, "\u0062": 2}], "a": {"c": {"d": 1, "d": [1, 1]}}}"#;
        assert_eq!(
            duplicate_keys(text),
            [
                "key 'b' is given twice in a[0] (JSON keeps only the last); give each key once",
                "key 'a' is given twice at the top level (JSON keeps only the last); give each key once",
                "key 'd' is given twice in a.c (JSON keeps only the last); give each key once",
            ]
        );
    }

    #[test]
    fn distinct_keys_and_broken_text_give_none() {
        for text in [
            r#"{"a": 1, "A": 2, "b": {"a": 1}}"#,
            "[1, 2]",
            "{\"a\": 1, ",
            "",
        ] {
            assert_eq!(duplicate_keys(text), Vec::<String>::new(), "{text}");
        }
    }
}
