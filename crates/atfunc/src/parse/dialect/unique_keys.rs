//! JSON read with every key of a call's own objects given once.
//!
//! `serde_json` keeps the last of two equal keys without a word. In a call object that is
//! a way to smuggle a call: `{"name": "file.listfiles", "name": "file.deletefile", …}`
//! passes a check that reads the first `name` (the offered-tool check of an untagged call)
//! and binds the last. A key given twice in the call object or in its arguments is
//! therefore refused, as a config file's is: which of the two the model meant cannot be
//! known. Deeper, inside an argument's value, JSON's own reading holds (the last of equal
//! keys, in the first one's place), as it does for any JSON a tool receives: an argument of
//! free-form JSON may be written so by a grammar, and no check reads it before the binder.
//!
//! The text is read straight into the parser's [`Value`], the tree a call's arguments are
//! handed out in: no `serde_json::Value` is built and then converted (its objects are hash
//! maps, built and dropped for every call).

use crate::json_reader::{self, Objects, Tree};
use crate::parse::Value;
use serde_json::Number;
use std::collections::HashMap;

/// `text` as a JSON value; an object at most `levels` objects deep (arrays do not count)
/// that gives a key twice is an error naming the key. A call object is read with 2 (its
/// own keys and its arguments'), an arguments object alone with 1.
pub(super) fn from_str(text: &str, levels: usize) -> serde_json::Result<Value> {
    json_reader::from_str(text, Unique(levels))
}

impl Tree for Value {
    fn null() -> Value {
        Value::Null
    }

    fn bool(value: bool) -> Value {
        Value::Bool(value)
    }

    fn number(value: Number) -> Value {
        // As serde_json writes the number it read, which is what `Value::from_json` keeps.
        Value::Number(value.to_string())
    }

    fn string(value: String) -> Value {
        Value::String(value)
    }

    fn array(items: Vec<Value>) -> Value {
        Value::Array(items)
    }
}

/// Reads one value, refusing repeated keys in the objects of the first `.0` levels.
#[derive(Clone, Copy)]
struct Unique(usize);

impl Objects for Unique {
    type Tree = Value;
    type Object = Members;

    fn items(self) -> Unique {
        self
    }

    fn member(self, _key: &str) -> Unique {
        Unique(self.0.saturating_sub(1))
    }

    fn start(self) -> Members {
        Members::default()
    }

    fn add(self, object: &mut Members, key: String, value: Value) -> Result<(), String> {
        match object.find(&key) {
            Some(_) if self.0 > 0 => Err(format!(
                "the key `{}` given twice in one object",
                key.escape_debug()
            )),
            // Below the levels checked, the last value wins in the first one's place.
            Some(at) => {
                if let Some(field) = object.fields.get_mut(at) {
                    field.1 = value;
                }
                Ok(())
            }
            None => {
                object.push(key, value);
                Ok(())
            }
        }
    }

    fn finish(self, object: Members) -> Value {
        Value::Object(object.fields)
    }
}

/// Past this many members an object's keys are found through a hash index; below it a
/// scan of a handful of short keys costs less than hashing them.
const INDEXED_FROM: usize = 16;

/// An object's members in written order, found by key: by a scan while there are few,
/// through an index past [`INDEXED_FROM`], so an object of very many keys costs time in
/// proportion to its size, not to its square.
#[derive(Default)]
struct Members {
    fields: Vec<(String, Value)>,
    /// Key → place in `fields`, once the object reaches [`INDEXED_FROM`] members (none
    /// before: most objects are small, and an empty map still takes its hasher's keys).
    index: Option<HashMap<String, usize>>,
}

impl Members {
    fn find(&self, key: &str) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(key).copied(),
            None => self.fields.iter().position(|(k, _)| k == key),
        }
    }

    fn push(&mut self, key: String, value: Value) {
        if self.index.is_none() && self.fields.len() + 1 >= INDEXED_FROM {
            let known = self.fields.iter().enumerate();
            self.index = Some(known.map(|(at, (k, _))| (k.clone(), at)).collect());
        }
        if let Some(index) = &mut self.index {
            index.insert(key.clone(), self.fields.len());
        }
        self.fields.push((key, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_json_and_refuses_a_key_given_twice() {
        let text =
            r#"{"a": [1, -2, 2.5, "x", null, true, {"b": {}}, 1e2, -0.0, 12345678901234567890]}"#;
        let json: serde_json::Value = serde_json::from_str(text).expect("json");
        // As serde_json's own tree converted, which is what the reader read before.
        assert_eq!(from_str(text, 2).expect("json"), Value::from_json(json));
        for text in [
            r#"{"name": "f", "name": "g"}"#,
            r#"{"name": "f", "arguments": {"p": 1, "p": 2}}"#,
            r#"[{"name": "f", "arguments": {"b": 1, "\u0062": 2}}]"#,
        ] {
            let error = from_str(text, 2).expect_err(text).to_string();
            assert!(error.contains("given twice"), "{text}: {error}");
        }
        // Deeper, the last of equal keys, as JSON reads them, in the first one's place.
        let deep = r#"{"name": "f", "arguments": {"p": {"a": 1, "b": 0, "a": 2}}}"#;
        assert_eq!(
            from_str(deep, 2).expect("json").to_json(),
            serde_json::json!({"name": "f", "arguments": {"p": {"a": 2, "b": 0}}})
        );
        let Value::Object(args) = from_str(r#"{"p": {"a": 1, "b": 0, "a": 2}}"#, 1).expect("json")
        else {
            panic!("an object");
        };
        let keys = |value: &Value| match value {
            Value::Object(fields) => fields.iter().map(|(k, _)| k.clone()).collect(),
            _ => Vec::new(),
        };
        assert_eq!(keys(&args[0].1), ["a", "b"]);
        assert!(from_str(r#"{"p": 1, "p": 2}"#, 1).is_err());
        assert!(from_str("{} x", 2).is_err());
        // Numbers keep their precision as serde_json reads them.
        assert_eq!(
            from_str("12345678901234567890", 0).expect("u64"),
            Value::Number("12345678901234567890".into())
        );
    }

    #[test]
    fn an_object_of_many_keys_is_checked_and_kept_in_order_through_its_index() {
        let many: Vec<String> = (0..100).map(|i| format!("\"k{i}\": {i}")).collect();
        let text = format!("{{{}}}", many.join(", "));
        let Value::Object(fields) = from_str(&text, 1).expect("json") else {
            panic!("an object");
        };
        let keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
        let expected: Vec<String> = (0..100).map(|i| format!("k{i}")).collect();
        assert_eq!(keys, expected);
        // A key given again after the index was built: refused at the levels checked,
        // the last value in the first one's place below them.
        let again = format!("{{{}, \"k3\": \"x\"}}", many.join(", "));
        assert!(from_str(&again, 1).is_err());
        let deep = format!("{{\"p\": {again}}}");
        let Value::Object(outer) = from_str(&deep, 1).expect("json") else {
            panic!("an object");
        };
        let Value::Object(inner) = &outer[0].1 else {
            panic!("an object");
        };
        assert_eq!(inner.len(), 100);
        assert_eq!(inner[3], ("k3".to_string(), Value::String("x".into())));
    }
}
