//! One serde visitor for the core's own readings of JSON text.
//!
//! serde_json's `Value` reads every object one way: keys in the order its `preserve_order`
//! feature says, the last of two equal keys kept without a word. Two readings in the core
//! need objects read their own way: the loader's tree keeps the written order whatever
//! serde_json's features are (`interface/load/json.rs`), and a call object refuses a key
//! given twice (`parse/dialect/unique_keys.rs`). Scalars and arrays read the same in both,
//! so the visitor is written once here; a reading says only how it builds an object
//! ([`Objects`]) and what value tree it builds ([`Tree`]).

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Number;
use std::fmt;

/// A JSON value tree the reader builds, bottom up.
pub(crate) trait Tree: Sized {
    /// `null`.
    fn null() -> Self;
    /// `true` or `false`.
    fn bool(value: bool) -> Self;
    /// A number as serde_json holds it.
    fn number(value: Number) -> Self;
    /// A string.
    fn string(value: String) -> Self;
    /// An array of items already read.
    fn array(items: Vec<Self>) -> Self;
}

/// How one reading reads an object: where it reads each member's value, and how it
/// gathers the members. `Copy`, as a seed is passed down at every level.
pub(crate) trait Objects: Copy {
    /// The value tree.
    type Tree: Tree;
    /// An object being read.
    type Object;

    /// The reading for the items of an array read by this one.
    fn items(self) -> Self;
    /// The reading for the value of an object's member `key`.
    fn member(self, key: &str) -> Self;
    /// An empty object.
    fn start(self) -> Self::Object;
    /// Adds a member; `Err(message)` refuses the whole value at once (serde_json then
    /// says where in the text).
    fn add(self, object: &mut Self::Object, key: String, value: Self::Tree) -> Result<(), String>;
    /// The object, all its members read.
    fn finish(self, object: Self::Object) -> Self::Tree;
}

/// Reads one value of `text`, and nothing after it, as `reading` reads it.
pub(crate) fn from_str<O: Objects>(text: &str, reading: O) -> serde_json::Result<O::Tree> {
    let mut reader = serde_json::Deserializer::from_str(text);
    let value = Reader(reading).deserialize(&mut reader)?;
    reader.end()?;
    Ok(value)
}

/// The seed and visitor of a reading.
#[derive(Clone, Copy)]
pub(crate) struct Reader<O>(pub(crate) O);

impl<'de, O: Objects> DeserializeSeed<'de> for Reader<O> {
    type Value = O::Tree;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<O::Tree, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, O: Objects> Visitor<'de> for Reader<O> {
    type Value = O::Tree;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<O::Tree, E> {
        Ok(O::Tree::bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<O::Tree, E> {
        Ok(O::Tree::number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<O::Tree, E> {
        Ok(O::Tree::number(n.into()))
    }

    fn visit_f64<E>(self, n: f64) -> Result<O::Tree, E> {
        // JSON text holds no NaN or infinity; `from_f64` turns them into null as serde_json does.
        Ok(Number::from_f64(n).map_or_else(O::Tree::null, O::Tree::number))
    }

    fn visit_str<E>(self, s: &str) -> Result<O::Tree, E> {
        Ok(O::Tree::string(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<O::Tree, E> {
        Ok(O::Tree::string(s))
    }

    fn visit_unit<E>(self) -> Result<O::Tree, E> {
        Ok(O::Tree::null())
    }

    fn visit_none<E>(self) -> Result<O::Tree, E> {
        Ok(O::Tree::null())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<O::Tree, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<O::Tree, A::Error> {
        let mut out = Vec::with_capacity(items.size_hint().unwrap_or(0).min(4096));
        let item = Reader(self.0.items());
        while let Some(value) = items.next_element_seed(item)? {
            out.push(value);
        }
        Ok(O::Tree::array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<O::Tree, A::Error> {
        let mut object = self.0.start();
        while let Some(key) = members.next_key::<String>()? {
            let value = members.next_value_seed(Reader(self.0.member(&key)))?;
            self.0
                .add(&mut object, key, value)
                .map_err(serde::de::Error::custom)?;
        }
        Ok(self.0.finish(object))
    }
}

/// serde_json's own tree, for a reading that hands its value on as a `serde_json::Value`.
impl Tree for serde_json::Value {
    fn null() -> Self {
        serde_json::Value::Null
    }

    fn bool(value: bool) -> Self {
        serde_json::Value::Bool(value)
    }

    fn number(value: Number) -> Self {
        serde_json::Value::Number(value)
    }

    fn string(value: String) -> Self {
        serde_json::Value::String(value)
    }

    fn array(items: Vec<Self>) -> Self {
        serde_json::Value::Array(items)
    }
}
