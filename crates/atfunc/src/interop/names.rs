//! Model-safe tool names and the map back from them.
//!
//! Model APIs accept tool names of 1 to 64 characters of `[a-zA-Z0-9_-]`. A tool's name as
//! defined ([`Interface::original_qualified_name`](crate::Interface::original_qualified_name):
//! `get-weather`, `catalogue.list_products`, `天气.查询`) may hold dots and any letter and be
//! of any length, so it is mapped once, here, and the map is kept to find the tool a
//! model's call names: from the model name to the name an atfunc call writes
//! ([`Interface::qualified_name`](crate::Interface::qualified_name)).

use serde::ser::{Serialize, SerializeMap, Serializer};
use std::collections::HashMap;
use std::fmt;

/// The longest name model APIs accept.
const MAX_MODEL_NAME_LEN: usize = 64;

/// Hex digits of the hash suffix added to a shortened or lossy name.
const HASH_LEN: usize = 8;

/// The model-safe name of a qualified name: 1 to 64 characters of `[a-zA-Z0-9_-]`.
///
/// - `.` becomes `_`: `catalogue.list_products` → `catalogue_list_products`.
/// - ASCII letters, digits, `_` and `-` are kept as they are, case included.
/// - A Latin letter with a diacritic is folded to its base letter (`año` → `ano`,
///   `straße` → `strasse`, `Łódź` → `Lodz`); the Latin-1 Supplement and Latin Extended-A
///   blocks are covered.
/// - Any other character (Greek, Cyrillic, CJK, symbols) becomes `_`, a run of them one
///   `_`, and the name gets a hash suffix: `_` and 8 hex digits of a stable hash of the
///   whole qualified name, so `天气.查询` and `天气.预报` stay distinct.
/// - A name longer than 64 characters is cut to 55 and gets the same suffix, so two long
///   names that share their first 55 characters stay distinct.
///
/// The hash is FNV-1a, the same on every platform and in every version, so a name maps
/// the same way wherever it is rendered. Two different names can still map to one (`a.b_c`
/// and `a_b.c`); [`NameMap`] keeps the first and reports the [`Clash`].
///
/// ```
/// use atfunc::interop::model_name;
/// assert_eq!(model_name("catalogue.list_products"), "catalogue_list_products");
/// assert_eq!(model_name("vehículo.año"), "vehiculo_ano");
/// assert_eq!(model_name("天气.查询"), "____067b62cd");
/// assert_eq!(model_name(&"x".repeat(70)).len(), 64);
/// ```
pub fn model_name(qualified: &str) -> String {
    let mut out = String::with_capacity(qualified.len());
    let mut lossy = false;
    let mut in_replaced_run = false;
    for c in qualified.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
            in_replaced_run = false;
        } else if c == '.' {
            out.push('_');
            in_replaced_run = false;
        } else if let Some(ascii) = fold_latin(c) {
            out.push_str(ascii);
            in_replaced_run = false;
        } else {
            lossy = true;
            if !in_replaced_run {
                out.push('_');
            }
            in_replaced_run = true;
        }
    }
    if out.is_empty() {
        out.push_str("tool");
        lossy = true;
    }
    if lossy || out.len() > MAX_MODEL_NAME_LEN {
        // `out` is ASCII, so any byte index is a character boundary.
        out.truncate(MAX_MODEL_NAME_LEN - HASH_LEN - 1);
        out.push('_');
        out.push_str(&format!("{:08x}", short_hash(qualified)));
    }
    out
}

/// Whether `name` is already acceptable to model APIs as it is.
pub fn is_model_safe(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_MODEL_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// 32 bits of the 64-bit FNV-1a hash of `text`, high and low halves folded together.
fn short_hash(text: &str) -> u32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    // Both halves fit in 32 bits by construction.
    ((hash >> 32) ^ (hash & 0xffff_ffff)) as u32
}

/// The ASCII spelling of a Latin letter with a diacritic (U+00C0 to U+017F), if it is one.
fn fold_latin(c: char) -> Option<&'static str> {
    let code = c as usize;
    let folded = match code {
        0xC0..=0xFF => LATIN_1.get(code - 0xC0),
        0x100..=0x17F => LATIN_EXTENDED_A.get(code - 0x100),
        _ => None,
    };
    folded.copied().filter(|s| !s.is_empty())
}

/// U+00C0 to U+00FF; `""` for the two signs in the block (× and ÷).
const LATIN_1: [&str; 64] = [
    "A", "A", "A", "A", "A", "A", "AE", "C", "E", "E", "E", "E", "I", "I", "I", "I", // C0
    "D", "N", "O", "O", "O", "O", "O", "", "O", "U", "U", "U", "U", "Y", "TH", "ss", // D0
    "a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i", "i", // E0
    "d", "n", "o", "o", "o", "o", "o", "", "o", "u", "u", "u", "u", "y", "th", "y", // F0
];

/// U+0100 to U+017F.
const LATIN_EXTENDED_A: [&str; 128] = [
    "A", "a", "A", "a", "A", "a", "C", "c", "C", "c", "C", "c", "C", "c", "D", "d", // 100
    "D", "d", "E", "e", "E", "e", "E", "e", "E", "e", "E", "e", "G", "g", "G", "g", // 110
    "G", "g", "G", "g", "H", "h", "H", "h", "I", "i", "I", "i", "I", "i", "I", "i", // 120
    "I", "i", "IJ", "ij", "J", "j", "K", "k", "k", "L", "l", "L", "l", "L", "l", "L", // 130
    "l", "L", "l", "N", "n", "N", "n", "N", "n", "n", "N", "n", "O", "o", "O", "o", // 140
    "O", "o", "OE", "oe", "R", "r", "R", "r", "R", "r", "S", "s", "S", "s", "S", "s", // 150
    "S", "s", "T", "t", "T", "t", "T", "t", "U", "u", "U", "u", "U", "u", "U", "u", // 160
    "U", "u", "U", "u", "W", "w", "Y", "y", "Y", "Z", "z", "Z", "z", "Z", "z", "s", // 170
];

/// Two tools whose names map to one model name. One keeps the name (in a [`NameMap`], the
/// first inserted; in a rendering, the one whose name sorts first); the other is left out
/// of what the model sees.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Clash {
    /// The model name both map to.
    pub model_name: String,
    /// The qualified name that keeps it.
    pub kept: String,
    /// The qualified name that was left out.
    pub dropped: String,
}

impl fmt::Display for Clash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.kept == self.dropped {
            write!(
                f,
                "tool '{}' is listed twice; the second is left out",
                self.kept
            )
        } else {
            write!(
                f,
                "tools '{}' and '{}' both map to the model name '{}'; '{}' is left out",
                self.kept, self.dropped, self.model_name, self.dropped
            )
        }
    }
}

/// One tool as the model knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    model_name: String,
    qualified: String,
    /// The argument that carries an api-wrapper's request body, when it has one.
    body_field: Option<String>,
    /// (name as defined, name a call writes) of each parameter where the two differ.
    params: Vec<(String, String)>,
}

/// The map between the names a model sees and the tools they stand for, both ways.
///
/// Built while rendering ([`to_openai_tools`](super::to_openai_tools),
/// [`to_mcp_tools`](super::to_mcp_tools)); a model's call is run only when its name is in
/// the map. Entries keep their insertion order. Serialises as a JSON object from model name
/// to qualified name.
///
/// ```
/// use atfunc::interop::NameMap;
/// let mut names = NameMap::new();
/// assert_eq!(names.insert("catalogue.list_products").unwrap(), "catalogue_list_products");
/// let clash = names.insert("catalogue_list.products").unwrap_err();
/// assert_eq!(clash.kept, "catalogue.list_products");
/// assert_eq!(names.qualified("catalogue_list_products"), Some("catalogue.list_products"));
/// assert_eq!(names.model_name("catalogue.list_products"), Some("catalogue_list_products"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameMap {
    entries: Vec<Entry>,
    /// Model name → index in `entries`.
    by_model: HashMap<String, usize>,
    /// Qualified name → index in `entries`.
    by_qualified: HashMap<String, usize>,
}

impl NameMap {
    /// An empty map.
    pub fn new() -> NameMap {
        NameMap::default()
    }

    /// Maps `qualified` with [`model_name`] and adds it. Returns the model name, or the
    /// clash when that model name (or the qualified name itself) is already taken; the map
    /// is then unchanged.
    pub fn insert(&mut self, qualified: &str) -> Result<&str, Clash> {
        self.insert_entry(qualified, qualified, None, Vec::new())
    }

    /// Adds the tool a call names `qualified`, its model name made of `defined` (its name
    /// as defined, which may not be one a call can write), with the parameters whose
    /// defined names (first) are not the names a call writes (second).
    pub(crate) fn insert_entry(
        &mut self,
        defined: &str,
        qualified: &str,
        body_field: Option<String>,
        params: Vec<(String, String)>,
    ) -> Result<&str, Clash> {
        let model_name = model_name(defined);
        let taken = self
            .by_model
            .get(&model_name)
            .or_else(|| self.by_qualified.get(qualified))
            .or_else(|| self.by_qualified.get(defined));
        if let Some(entry) = taken.and_then(|&index| self.entries.get(index)) {
            return Err(Clash {
                model_name,
                kept: entry.qualified.clone(),
                dropped: qualified.to_owned(),
            });
        }
        let index = self.entries.len();
        self.by_model.insert(model_name.clone(), index);
        self.by_qualified.insert(qualified.to_owned(), index);
        // Bound calls carry the name as defined; it leads to the model name as well.
        self.by_qualified.entry(defined.to_owned()).or_insert(index);
        self.entries.push(Entry {
            model_name,
            qualified: qualified.to_owned(),
            body_field,
            params,
        });
        Ok(self
            .entries
            .last()
            .map(|entry| entry.model_name.as_str())
            .unwrap_or_default())
    }

    /// The qualified name (`catalogue.list_products`) a model name stands for.
    pub fn qualified(&self, model_name: &str) -> Option<&str> {
        self.entry_by_model(model_name)
            .map(|entry| entry.qualified.as_str())
    }

    /// The model name a qualified name was given.
    pub fn model_name(&self, qualified: &str) -> Option<&str> {
        self.by_qualified
            .get(qualified)
            .and_then(|&index| self.entries.get(index))
            .map(|entry| entry.model_name.as_str())
    }

    /// The argument that carries the request body of the api-wrapper a model name stands
    /// for (`body`, see [`to_openai_tools`](super::to_openai_tools)); `None` for a tool
    /// without a body.
    pub fn body_field(&self, model_name: &str) -> Option<&str> {
        self.entry_by_model(model_name)
            .and_then(|entry| entry.body_field.as_deref())
    }

    /// The name a call writes for the argument a model sent as `key` to the tool it calls
    /// `model_name`: the schema shows parameters under their defined names (`max-results`),
    /// call text needs the written one (`max_results`). Other keys are returned as given.
    pub fn written_param<'a>(&'a self, model_name: &str, key: &'a str) -> &'a str {
        self.entry_by_model(model_name)
            .and_then(|entry| entry.params.iter().find(|(defined, _)| defined == key))
            .map_or(key, |(_, written)| written.as_str())
    }

    /// How many tools the map holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the map holds no tool.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `(model name, qualified name)` pairs in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries
            .iter()
            .map(|entry| (entry.model_name.as_str(), entry.qualified.as_str()))
    }

    fn entry_by_model(&self, model_name: &str) -> Option<&Entry> {
        self.by_model
            .get(model_name)
            .and_then(|&index| self.entries.get(index))
    }
}

impl Serialize for NameMap {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.entries.len()))?;
        for (model, qualified) in self.iter() {
            map.serialize_entry(model, qualified)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_fold_the_letters_they_claim() {
        for (c, ascii) in [
            ('À', "A"),
            ('ß', "ss"),
            ('ÿ', "y"),
            ('Ā', "A"),
            ('ı', "i"),
            ('Ł', "L"),
            ('ł', "l"),
            ('Œ', "OE"),
            ('Ş', "S"),
            ('Ÿ', "Y"),
            ('ž', "z"),
            ('ſ', "s"),
        ] {
            assert_eq!(fold_latin(c), Some(ascii), "{c}");
        }
        assert_eq!(fold_latin('×'), None);
        assert_eq!(fold_latin('α'), None);
    }

    #[test]
    fn the_hash_is_stable() {
        // FNV-1a of the empty string is its offset basis.
        assert_eq!(short_hash(""), 0xcbf2_9ce4 ^ 0x8422_2325);
    }
}
