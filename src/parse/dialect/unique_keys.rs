//! JSON read with every key of an object given once.
//!
//! `serde_json` keeps the last of two equal keys without a word. In a call object that is
//! a way to smuggle a call: `{"name": "file.listfiles", "name": "file.deletefile", …}`
//! passes a check that reads the first `name` (the offered-tool check of an untagged call)
//! and binds the last. A key given twice anywhere in a call is therefore refused, as a
//! config file's is: which of the two the model meant cannot be known.

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// `text` as a JSON value; an object that gives a key twice is an error naming the key.
pub(super) fn from_str(text: &str) -> serde_json::Result<Value> {
    let mut reader = serde_json::Deserializer::from_str(text);
    let value = Unique.deserialize(&mut reader)?;
    reader.end()?;
    Ok(value)
}

/// Reads one value, refusing repeated keys in its objects and those below.
struct Unique;

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
        while let Some(item) = items.next_element_seed(Unique)? {
            out.push(item);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut fields: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = fields.next_key::<String>()? {
            let value = fields.next_value_seed(Unique)?;
            if out.contains_key(&key) {
                return Err(serde::de::Error::custom(format_args!(
                    "the key `{}` given twice in one object",
                    key.escape_debug()
                )));
            }
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_json_and_refuses_a_key_given_twice() {
        let value = from_str(r#"{"a": [1, -2, 2.5, "x", null, true, {"b": {}}]}"#).expect("json");
        assert_eq!(
            value,
            serde_json::json!({"a": [1, -2, 2.5, "x", null, true, {"b": {}}]})
        );
        for text in [
            r#"{"name": "f", "name": "g"}"#,
            r#"{"name": "f", "arguments": {"p": 1, "p": 2}}"#,
            r#"[{"a": {"b": 1, "\u0062": 2}}]"#,
        ] {
            let error = from_str(text).expect_err(text).to_string();
            assert!(error.contains("given twice"), "{text}: {error}");
        }
        assert!(from_str("{} x").is_err());
        // Numbers keep their precision as serde_json reads them.
        assert_eq!(
            from_str("12345678901234567890").expect("u64"),
            serde_json::json!(12345678901234567890u64)
        );
    }
}
