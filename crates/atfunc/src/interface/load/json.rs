//! JSON as the loader reads it: every object keeps its keys in the order they were written.
//!
//! A definition's `properties` are its parameters in declared order, and that order is
//! what positional arguments bind by and what the prompt lists, so it cannot depend on how
//! serde_json is built. serde_json keeps an object's order only with its `preserve_order`
//! feature, and a Cargo feature is on for every crate of a program once one crate turns it
//! on; so the loader reads its own tree instead, the same API in the small: text is read
//! straight into it, and a `serde_json::Value` is copied into it in the order it has.
//! Values that leave the loader (a default, the choices) become `serde_json::Value` again.

use crate::json_reader::{Objects, Reader, Tree};
use serde::de::{Deserialize, DeserializeSeed, Deserializer};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Number;
use std::collections::HashMap;
use std::fmt;

/// A JSON value whose objects keep their written order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Json>),
    Object(Map<String, Json>),
}

/// An object's entries in written order, each key once. Generic in name only, so that the
/// loader's signatures read as serde_json's do; every key is a `String`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Map<K, V> {
    entries: Vec<(K, V)>,
}

impl<K, V> Default for Map<K, V> {
    fn default() -> Self {
        Map {
            entries: Vec::new(),
        }
    }
}

impl Map<String, Json> {
    pub(crate) fn new() -> Self {
        Map::default()
    }

    /// Entries as read, each key kept once, at its first place, with its last value (as
    /// serde_json keeps a key given twice). Linear, so a hostile object of many keys
    /// costs no more than its size.
    fn from_entries(mut entries: Vec<(String, Json)>) -> Self {
        if entries.len() > 1 {
            let mut first: HashMap<&str, usize> = HashMap::with_capacity(entries.len());
            let mut repeated = Vec::new();
            for (i, (key, _)) in entries.iter().enumerate() {
                if let Some(&at) = first.get(key.as_str()) {
                    repeated.push((at, i));
                } else {
                    first.insert(key, i);
                }
            }
            if !repeated.is_empty() {
                let mut later = vec![false; entries.len()];
                for &(at, i) in &repeated {
                    entries.swap(at, i);
                    later[i] = true;
                }
                let mut index = 0;
                entries.retain(|_| {
                    let keep = !later[index];
                    index += 1;
                    keep
                });
            }
        }
        Map { entries }
    }

    pub(crate) fn get(&self, key: &str) -> Option<&Json> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, value)| value)
    }

    pub(crate) fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Sets `key` to `value`: in its place when it is there, else at the end.
    pub(crate) fn insert(&mut self, key: String, value: Json) -> Option<Json> {
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some((_, old)) => Some(std::mem::replace(old, value)),
            None => {
                self.entries.push((key, value));
                None
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &Json)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    pub(crate) fn keys(&self) -> impl Iterator<Item = &String> {
        self.entries.iter().map(|(k, _)| k)
    }
}

impl Extend<(String, Json)> for Map<String, Json> {
    fn extend<I: IntoIterator<Item = (String, Json)>>(&mut self, iter: I) {
        for (key, value) in iter {
            self.insert(key, value);
        }
    }
}

impl FromIterator<(String, Json)> for Map<String, Json> {
    fn from_iter<I: IntoIterator<Item = (String, Json)>>(iter: I) -> Self {
        Map::from_entries(iter.into_iter().collect())
    }
}

impl IntoIterator for Map<String, Json> {
    type Item = (String, Json);
    type IntoIter = std::vec::IntoIter<(String, Json)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<'a> IntoIterator for &'a Map<String, Json> {
    type Item = (&'a String, &'a Json);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, Json)>,
        fn(&'a (String, Json)) -> (&'a String, &'a Json),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(k, v)| (k, v))
    }
}

impl Json {
    /// The member `key` of an object; `None` for anything else.
    pub(crate) fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(map) => map.get(key),
            _ => None,
        }
    }

    pub(crate) fn as_object(&self) -> Option<&Map<String, Json>> {
        match self {
            Json::Object(map) => Some(map),
            _ => None,
        }
    }

    pub(crate) fn as_array(&self) -> Option<&Vec<Json>> {
        match self {
            Json::Array(items) => Some(items),
            _ => None,
        }
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    pub(crate) fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    /// The value as serde_json holds it, for what leaves the loader. Its objects keep
    /// this order where serde_json keeps any (its `preserve_order` feature).
    pub(crate) fn to_serde(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match self {
            Json::Null => J::Null,
            Json::Bool(b) => J::Bool(*b),
            Json::Number(n) => J::Number(n.clone()),
            Json::String(s) => J::String(s.clone()),
            Json::Array(items) => J::Array(items.iter().map(Json::to_serde).collect()),
            Json::Object(map) => {
                J::Object(map.iter().map(|(k, v)| (k.clone(), v.to_serde())).collect())
            }
        }
    }

    /// The value from serde_json's, in the order its objects have.
    pub(crate) fn from_serde(value: &serde_json::Value) -> Json {
        use serde_json::Value as J;
        match value {
            J::Null => Json::Null,
            J::Bool(b) => Json::Bool(*b),
            J::Number(n) => Json::Number(n.clone()),
            J::String(s) => Json::String(s.clone()),
            J::Array(items) => Json::Array(items.iter().map(Json::from_serde).collect()),
            J::Object(map) => Json::Object(Map {
                entries: map
                    .iter()
                    .map(|(k, v)| (k.clone(), Json::from_serde(v)))
                    .collect(),
            }),
        }
    }
}

/// What a value is, for messages (`found a number`): as [`crate::messages::json_kind`] says
/// it of a serde_json value.
pub(crate) fn json_kind(value: &Json) -> &'static str {
    match value {
        Json::Null => crate::messages::json_kind(&serde_json::Value::Null),
        Json::Bool(b) => crate::messages::json_kind(&serde_json::Value::Bool(*b)),
        Json::Number(n) => crate::messages::json_kind(&serde_json::Value::Number(n.clone())),
        Json::String(_) => crate::messages::json_kind(&serde_json::Value::String(String::new())),
        Json::Array(_) => crate::messages::json_kind(&serde_json::Value::Array(Vec::new())),
        Json::Object(_) => {
            crate::messages::json_kind(&serde_json::Value::Object(serde_json::Map::new()))
        }
    }
}

impl From<&str> for Json {
    fn from(text: &str) -> Json {
        Json::String(text.to_owned())
    }
}

impl From<String> for Json {
    fn from(text: String) -> Json {
        Json::String(text)
    }
}

impl From<Vec<String>> for Json {
    fn from(items: Vec<String>) -> Json {
        Json::Array(items.into_iter().map(Json::String).collect())
    }
}

/// JSON text, compact, objects in their order.
impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => serializer.serialize_unit(),
            Json::Bool(b) => serializer.serialize_bool(*b),
            Json::Number(n) => n.serialize(serializer),
            Json::String(s) => serializer.serialize_str(s),
            Json::Array(items) => items.serialize(serializer),
            Json::Object(map) => {
                let mut out = serializer.serialize_map(Some(map.len()))?;
                for (key, value) in map {
                    out.serialize_entry(key, value)?;
                }
                out.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        Reader(Ordered).deserialize(deserializer)
    }
}

/// The loader's reading: objects in written order, a key given twice kept once (see
/// [`Map::from_entries`]).
#[derive(Clone, Copy)]
struct Ordered;

impl Objects for Ordered {
    type Tree = Json;
    type Object = Vec<(String, Json)>;

    fn items(self) -> Ordered {
        self
    }

    fn member(self, _key: &str) -> Ordered {
        self
    }

    fn start(self) -> Vec<(String, Json)> {
        Vec::new()
    }

    fn add(self, object: &mut Vec<(String, Json)>, key: String, value: Json) -> Result<(), String> {
        object.push((key, value));
        Ok(())
    }

    fn finish(self, object: Vec<(String, Json)>) -> Json {
        Json::Object(Map::from_entries(object))
    }
}

impl Tree for Json {
    fn null() -> Json {
        Json::Null
    }

    fn bool(value: bool) -> Json {
        Json::Bool(value)
    }

    fn number(value: Number) -> Json {
        Json::Number(value)
    }

    fn string(value: String) -> Json {
        Json::String(value)
    }

    fn array(items: Vec<Json>) -> Json {
        Json::Array(items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_keep_their_written_order() {
        let text = r#"{"zeta": 1, "alpha": {"y": [true, null], "x": "s"}, "mid": -2.5}"#;
        let json: Json = serde_json::from_str(text).expect("JSON");
        let keys: Vec<&String> = json.as_object().expect("an object").keys().collect();
        assert_eq!(keys, ["zeta", "alpha", "mid"]);
        assert_eq!(
            json.to_string(),
            r#"{"zeta":1,"alpha":{"y":[true,null],"x":"s"},"mid":-2.5}"#
        );
        assert_eq!(
            Json::from_serde(&json.to_serde()).to_serde(),
            json.to_serde()
        );
    }

    #[test]
    fn a_key_given_twice_keeps_its_first_place_and_last_value() {
        let json: Json =
            serde_json::from_str(r#"{"a": 1, "b": 2, "a": 3, "c": 4, "b": 5}"#).expect("JSON");
        assert_eq!(json.to_string(), r#"{"a":3,"b":5,"c":4}"#);
        let single: Json = serde_json::from_str(r#"{"a": 1, "a": 2, "a": 3}"#).expect("JSON");
        assert_eq!(single.to_string(), r#"{"a":3}"#);
    }
}
