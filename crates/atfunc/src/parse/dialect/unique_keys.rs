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

use crate::json_reader::{self, Objects};
use serde_json::map::Entry;
use serde_json::{Map, Value};

/// `text` as a JSON value; an object at most `levels` objects deep (arrays do not count)
/// that gives a key twice is an error naming the key. A call object is read with 2 (its
/// own keys and its arguments'), an arguments object alone with 1.
pub(super) fn from_str(text: &str, levels: usize) -> serde_json::Result<Value> {
    json_reader::from_str(text, Unique(levels))
}

/// Reads one value, refusing repeated keys in the objects of the first `.0` levels.
#[derive(Clone, Copy)]
struct Unique(usize);

impl Objects for Unique {
    type Tree = Value;
    type Object = Map<String, Value>;

    fn items(self) -> Unique {
        self
    }

    fn member(self, _key: &str) -> Unique {
        Unique(self.0.saturating_sub(1))
    }

    fn start(self) -> Map<String, Value> {
        Map::new()
    }

    fn add(self, object: &mut Map<String, Value>, key: String, value: Value) -> Result<(), String> {
        // One hash of the key for both the test and the insertion.
        match object.entry(key) {
            Entry::Occupied(given) if self.0 > 0 => Err(format!(
                "the key `{}` given twice in one object",
                given.key().escape_debug()
            )),
            // Below the levels checked, the last value wins in the first one's place,
            // as `insert` has it.
            Entry::Occupied(mut given) => {
                given.insert(value);
                Ok(())
            }
            Entry::Vacant(slot) => {
                slot.insert(value);
                Ok(())
            }
        }
    }

    fn finish(self, object: Map<String, Value>) -> Value {
        Value::Object(object)
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
