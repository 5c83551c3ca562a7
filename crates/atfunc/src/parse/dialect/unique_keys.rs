//! JSON read with every key of a call's own objects given once.
//!
//! `serde_json` keeps the last of two equal keys without a word. In a call object that is
//! a way to smuggle a call: `{"name": "file.listfiles", "name": "file.deletefile", …}`
//! passes a check that reads the first `name` (the offered-tool check of an untagged call)
//! and binds the last. A key given twice in the call object or in its arguments is
//! therefore refused, as a config file's is: which of the two the model meant cannot be
//! known. Deeper, inside an argument's value, JSON's own reading holds (the last of equal
//! keys), as it does for any JSON a tool receives: an argument of free-form JSON may be
//! written so by a grammar, and no check reads it before the binder.

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Value};
use std::fmt;

/// `text` as a JSON value; an object at most `levels` objects deep (arrays do not count)
/// that gives a key twice is an error naming the key. A call object is read with 2 (its
/// own keys and its arguments'), an arguments object alone with 1.
pub(super) fn from_str(text: &str, levels: usize) -> serde_json::Result<Value> {
    let mut reader = serde_json::Deserializer::from_str(text);
    let value = Unique(levels).deserialize(&mut reader)?;
    reader.end()?;
    Ok(value)
}

/// Reads one value, refusing repeated keys in the objects of the first `.0` levels.
#[derive(Clone, Copy)]
struct Unique(usize);

impl<'de> DeserializeSeed<'de> for Unique {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Unique {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        // JSON text holds no NaN or infinity; `from_f64` turns them into null as serde_json does.
        Ok(serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(items.size_hint().unwrap_or(0).min(64));
        while let Some(item) = items.next_element_seed(self)? {
            out.push(item);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut fields: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        let below = Unique(self.0.saturating_sub(1));
        while let Some(key) = fields.next_key::<String>()? {
            let value = fields.next_value_seed(below)?;
            // One hash of the key for both the test and the insertion.
            match out.entry(key) {
                Entry::Occupied(given) if self.0 > 0 => {
                    return Err(serde::de::Error::custom(format_args!(
                        "the key `{}` given twice in one object",
                        given.key().escape_debug()
                    )));
                }
                // Below the levels checked, the last value wins in the first one's place,
                // as `insert` has it.
                Entry::Occupied(mut given) => {
                    given.insert(value);
                }
                Entry::Vacant(slot) => {
                    slot.insert(value);
                }
            }
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_json_and_refuses_a_key_given_twice() {
        let value =
            from_str(r#"{"a": [1, -2, 2.5, "x", null, true, {"b": {}}]}"#, 2).expect("json");
        assert_eq!(
            value,
            serde_json::json!({"a": [1, -2, 2.5, "x", null, true, {"b": {}}]})
        );
        for text in [
            r#"{"name": "f", "name": "g"}"#,
            r#"{"name": "f", "arguments": {"p": 1, "p": 2}}"#,
            r#"[{"name": "f", "arguments": {"b": 1, "\u0062": 2}}]"#,
        ] {
            let error = from_str(text, 2).expect_err(text).to_string();
            assert!(error.contains("given twice"), "{text}: {error}");
        }
        // Deeper, the last of equal keys, as JSON reads them.
        let deep = r#"{"name": "f", "arguments": {"p": {"a": 1, "a": 2}}}"#;
        assert_eq!(from_str(deep, 2).expect("json")["arguments"]["p"]["a"], 2);
        assert!(from_str(r#"{"p": {"a": 1, "a": 2}}"#, 1).is_ok());
        // ... in the first one's place.
        let moved = from_str(r#"{"p": {"a": 1, "b": 0, "a": 2}}"#, 1).expect("json");
        let p = moved["p"].as_object().expect("object");
        assert_eq!(p.len(), 2);
        assert_eq!(p.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(p["a"], 2);
        assert!(from_str(r#"{"p": 1, "p": 2}"#, 1).is_err());
        assert!(from_str("{} x", 2).is_err());
        // Numbers keep their precision as serde_json reads them.
        assert_eq!(
            from_str("12345678901234567890", 0).expect("u64"),
            serde_json::json!(12345678901234567890u64)
        );
    }
}
