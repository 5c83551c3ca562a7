//! `$ref`s written out in place, within the [`LoadLimits`] of one load.

use super::json::{Json, Map};
use std::collections::HashMap;

/// Limits on what loading may build from a tools file, so a small definition cannot expand
/// into a large one. Every limit is counted while the schema is written out, not after, and
/// passing one is a [`LoadError::Limit`](super::LoadError::Limit) naming the function; nothing is cut silently.
///
/// A `$ref` writes its definition out in place, so definitions that refer to each other
/// several times multiply: ten properties that each refer to the object holding them are
/// 10^k schemas at depth k. A reference back to a definition that is already being written
/// out on the way down (a tree node whose children are nodes) cannot be written out in
/// place at all: it reads as an open value of the definition's type (an object with any
/// fields, say), so recursive schemas stay small and never count against the limits.
///
/// ```
/// use atfunc::LoadError;
/// use atfunc::interface::{LoadLimit, LoadLimits, LoadOptions};
/// use serde_json::json;
///
/// // `A` has ten fields of type `B`, and `B` ten fields of type `C`: 111 schema nodes.
/// let level = |next: &str| {
///     let fields: serde_json::Map<_, _> = (0..10)
///         .map(|i| (format!("f{i}"), json!({"$ref": format!("#/$defs/{next}")})))
///         .collect();
///     json!({"type": "object", "properties": fields})
/// };
/// let tools = json!([{"name": "shop.order", "parameters": {
///     "$defs": {"A": level("B"), "B": level("C"), "C": {"type": "string"}},
///     "properties": {"root": {"$ref": "#/$defs/A"}}}}]);
/// let limits = LoadLimits::default().with_max_ref_nodes(100);
/// match LoadOptions::default().with_limits(limits).load(&tools) {
///     Err(LoadError::Limit { function, limit, value }) => {
///         assert_eq!((function.as_str(), limit, value), ("shop.order", LoadLimit::RefNodes, 100));
///     }
///     other => panic!("{other:?}"),
/// }
/// assert!(LoadOptions::default().load(&tools).is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoadLimits {
    /// Most schema nodes (each object of a parameter's schema) that `$ref`s may write out,
    /// over all the definitions of one load. Default 10,000: a pydantic model of a few
    /// dozen types referred to from a few places writes out a few hundred.
    pub max_ref_nodes: usize,
    /// Most bytes that `$ref`s may write out (keys, and the JSON text of the values copied
    /// with them: descriptions, choices, defaults), over one load. Default 1 MiB.
    pub max_ref_bytes: usize,
    /// Deepest nesting of a parameter's schema, `$ref`s followed: each property, array
    /// `items`, `anyOf`/`oneOf` branch and reference is a level. Default 64.
    pub max_depth: usize,
}

impl LoadLimits {
    /// The same limits with [`max_ref_nodes`](Self::max_ref_nodes) set.
    pub fn with_max_ref_nodes(mut self, max_ref_nodes: usize) -> Self {
        self.max_ref_nodes = max_ref_nodes;
        self
    }

    /// The same limits with [`max_ref_bytes`](Self::max_ref_bytes) set.
    pub fn with_max_ref_bytes(mut self, max_ref_bytes: usize) -> Self {
        self.max_ref_bytes = max_ref_bytes;
        self
    }

    /// The same limits with [`max_depth`](Self::max_depth) set.
    pub fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }
}

impl Default for LoadLimits {
    fn default() -> Self {
        LoadLimits {
            max_ref_nodes: 10_000,
            max_ref_bytes: 1 << 20,
            max_depth: 64,
        }
    }
}

/// Which limit of [`LoadLimits`] a definition went past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadLimit {
    /// [`LoadLimits::max_ref_nodes`].
    RefNodes,
    /// [`LoadLimits::max_ref_bytes`].
    RefBytes,
    /// [`LoadLimits::max_depth`].
    Depth,
}

impl LoadLimit {
    /// The field of [`LoadLimits`] that sets it.
    pub fn field(self) -> &'static str {
        match self {
            LoadLimit::RefNodes => "max_ref_nodes",
            LoadLimit::RefBytes => "max_ref_bytes",
            LoadLimit::Depth => "max_depth",
        }
    }

    /// What passed the limit, for messages.
    pub(super) fn what(self, value: usize) -> String {
        match self {
            LoadLimit::RefNodes => format!("its `$ref`s write out more than {value} schema nodes"),
            LoadLimit::RefBytes => format!("its `$ref`s write out more than {value} bytes"),
            LoadLimit::Depth => format!("its schema nests more than {value} levels deep"),
        }
    }

    pub(super) fn advice(self) -> &'static str {
        match self {
            LoadLimit::RefNodes | LoadLimit::RefBytes => {
                "definitions that each refer to others several times multiply; refer to fewer"
            }
            LoadLimit::Depth => "flatten the schema",
        }
    }
}

impl std::fmt::Display for LoadLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.field())
    }
}

/// What the definitions of one load may still write out through `$ref`s.
pub(super) struct Budget {
    limits: LoadLimits,
    nodes: usize,
    bytes: usize,
}

impl Budget {
    pub(super) fn new(limits: &LoadLimits) -> Budget {
        Budget {
            limits: *limits,
            nodes: limits.max_ref_nodes,
            bytes: limits.max_ref_bytes,
        }
    }

    /// Takes one node of `bytes` bytes from what is left.
    fn take(&mut self, nodes: usize, bytes: usize) -> Result<(), LoadLimit> {
        self.nodes = self.nodes.checked_sub(nodes).ok_or(LoadLimit::RefNodes)?;
        self.bytes = self.bytes.checked_sub(bytes).ok_or(LoadLimit::RefBytes)?;
        Ok(())
    }
}

/// `schema` with its local references (`#/$defs/Name`, `#/definitions/Name`) written out in
/// place; `anyOf`/`oneOf` of one schema (and `null`, how `Optional[T]` is written) read as
/// that schema (made nullable), and `allOf` of one schema as that schema. Sibling keys of a `$ref` (a description, say) win over the
/// referenced schema's. A reference to a definition already being written out on the way
/// down reads as an open value of its type; see [`LoadLimits`].
pub(super) fn resolve_schema(schema: &Json, budget: &mut Budget) -> Result<Json, LoadLimit> {
    let mut defs = HashMap::new();
    for key in ["definitions", "$defs"] {
        if let Some(Json::Object(found)) = schema.get(key) {
            defs.extend(found.iter().map(|(k, v)| (k.as_str(), v)));
        }
    }
    let mut expander = Expander {
        defs,
        budget,
        path: Vec::new(),
    };
    expander.resolve(schema, 0)
}

/// Writes out one function's schema; `path` holds the definitions being written out on
/// the way down to the current node.
struct Expander<'s, 'b> {
    defs: HashMap<&'s str, &'s Json>,
    budget: &'b mut Budget,
    path: Vec<&'s str>,
}

impl<'s> Expander<'s, '_> {
    /// Whether the current node is written out by a `$ref`, and so counts against the
    /// budget (what the file itself holds is bounded by its size).
    fn in_ref(&self) -> bool {
        !self.path.is_empty()
    }

    /// A value copied as it is; counted when a `$ref` writes it.
    fn copy(&mut self, value: &Json) -> Result<Json, LoadLimit> {
        if self.in_ref() {
            self.budget.take(0, json_size(value))?;
        }
        Ok(value.clone())
    }

    fn resolve(&mut self, schema: &'s Json, depth: usize) -> Result<Json, LoadLimit> {
        let Json::Object(map) = schema else {
            return self.copy(schema);
        };
        if depth > self.budget.limits.max_depth {
            return Err(LoadLimit::Depth);
        }
        // An unknown reference reads as "any": the model is shown no structure for it.
        let target = match map.get("$ref") {
            Some(Json::String(target)) => target
                .strip_prefix("#/$defs/")
                .or_else(|| target.strip_prefix("#/definitions/"))
                .and_then(|name| self.defs.get_key_value(name))
                .map(|(name, found)| (*name, *found)),
            _ => None,
        };
        // A reference is replaced by the definition it names, which is counted itself.
        if self.in_ref() && target.is_none() {
            let keys: usize = map.keys().map(String::len).sum();
            self.budget.take(1, keys + 2)?;
        }
        let mut out = Map::new();
        if let Some((name, found)) = target {
            if self.path.contains(&name) {
                let open = open_value(found);
                self.budget
                    .take(1, json_size(&Json::Object(open.clone())))?;
                out.extend(open);
            } else {
                self.path.push(name);
                let expanded = self.resolve(found, depth + 1);
                self.path.pop();
                if let Json::Object(found) = expanded? {
                    out.extend(found);
                }
            }
        }
        // The combinators read as one schema; the others stay as written, and the loader
        // reports them as restrictions it does not enforce.
        let mut merged: Vec<&str> = Vec::new();
        for key in ["anyOf", "oneOf", "allOf"] {
            let Some(Json::Array(branches)) = map.get(key) else {
                continue;
            };
            // `null` beside one schema makes it nullable; all of a schema and `null` is no
            // value at all, so `allOf` has no such reading.
            let is_null =
                |b: &Json| key != "allOf" && b.get("type").and_then(Json::as_str) == Some("null");
            let mut others = branches.iter().filter(|b| !is_null(b));
            if let (Some(only), None) = (others.next(), others.next()) {
                if let Json::Object(branch) = self.resolve(only, depth + 1)? {
                    out.extend(branch);
                }
                if branches.iter().any(is_null) {
                    let ty = out.get("type").cloned();
                    if let Some(Json::String(ty)) = ty {
                        out.insert("type".into(), Json::from(vec![ty, "null".to_owned()]));
                    }
                }
                merged.push(key);
            }
        }
        for (k, v) in map {
            match k.as_str() {
                "$ref" | "$defs" | "definitions" => {}
                key if merged.contains(&key) => {}
                "properties" => {
                    let value = match v.as_object() {
                        Some(props) => {
                            let mut resolved = Map::new();
                            for (name, p) in props {
                                resolved.insert(name.clone(), self.resolve(p, depth + 1)?);
                            }
                            Json::Object(resolved)
                        }
                        None => self.copy(v)?,
                    };
                    out.insert(k.clone(), value);
                }
                "items" => {
                    let value = self.resolve(v, depth + 1)?;
                    out.insert(k.clone(), value);
                }
                _ => {
                    let value = self.copy(v)?;
                    out.insert(k.clone(), value);
                }
            }
        }
        Ok(Json::Object(out))
    }
}

/// What a reference back to a definition on the way down reads as: a value of the
/// definition's type with nothing more declared (an object with any fields, a list of
/// anything), with its description.
fn open_value(definition: &Json) -> Map<String, Json> {
    let mut out = Map::new();
    let Json::Object(map) = definition else {
        return out;
    };
    let ty = match map.get("type") {
        Some(Json::String(ty)) => Some(ty.as_str()),
        _ if map.contains_key("properties") => Some("object"),
        _ if map.contains_key("items") => Some("array"),
        _ => None,
    };
    if let Some(ty) = ty {
        out.insert("type".into(), Json::from(ty));
    }
    if let Some(Json::String(description)) = map.get("description") {
        out.insert("description".into(), Json::from(description.as_str()));
    }
    out
}

/// About the length of `value` as JSON text, without writing it.
fn json_size(value: &Json) -> usize {
    match value {
        Json::Null => 4,
        Json::Bool(_) => 5,
        Json::Number(_) => 8,
        Json::String(s) => s.len() + 2,
        Json::Array(items) => 2 + items.iter().map(|v| json_size(v) + 1).sum::<usize>(),
        Json::Object(map) => {
            2 + map
                .iter()
                .map(|(k, v)| k.len() + 4 + json_size(v))
                .sum::<usize>()
        }
    }
}
