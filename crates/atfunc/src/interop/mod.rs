//! Interop: the tool formats applications already speak.
//!
//! - [`to_openai_tools`] renders interfaces as an OpenAI `tools` array, [`to_mcp_tools`] as
//!   the result of an MCP `tools/list` request; [`render`] picks one by [`ToolFormat`].
//! - Names are mapped to what model APIs accept ([`model_name`]) and the map back is kept
//!   ([`NameMap`]); of two tools with one model name the one whose name sorts first wins
//!   (whatever the other tools and their order) and the [`Clash`] is reported.
//! - [`ControlFields`] (`dry_run`, `confirm_token`, `idempotency_key` by default) are for
//!   the application, not the model: they are left out of rendered schemas and stripped
//!   from a model's arguments.
//! - The bridge converts between atfunc calls and OpenAI's chat format: a bound call to a
//!   `tool_calls` entry ([`bound_to_tool_call`]), a result to a `tool` message
//!   ([`tool_message`]), and a `tool_calls` entry back to atfunc call text
//!   ([`parse_tool_call`], [`ToolCall::call_text`]).
//!
//! ```
//! use atfunc::interop::{to_openai_tools, ToolFormatOptions};
//! use atfunc::{Interface, Param, ParamType};
//! use serde_json::json;
//!
//! let list = Interface::new("list_products").in_domain("catalogue")
//!     .describe("List the products of a category")
//!     .param(Param::new("category", ParamType::String).required())
//!     .param(Param::new("dry_run", ParamType::Boolean));
//! let rendered = to_openai_tools(&[list], &ToolFormatOptions::default());
//! assert_eq!(rendered.tools, json!([{
//!     "type": "function",
//!     "function": {
//!         "name": "catalogue_list_products",
//!         "description": "List the products of a category",
//!         "parameters": {
//!             "type": "object",
//!             "properties": {"category": {"type": "string"}},
//!             "required": ["category"]
//!         }
//!     }
//! }]));
//! assert_eq!(rendered.names.qualified("catalogue_list_products"), Some("catalogue.list_products"));
//! ```

mod bridge;
mod mcp;
mod names;
mod openai;
mod schema;

pub use bridge::{
    bound_to_tool_call, parse_tool_call, tool_call, tool_call_to_text, tool_message, BridgeError,
    CallIds, ToolCall,
};
pub use mcp::to_mcp_tools;
pub use names::{is_model_safe, model_name, Clash, NameMap};
pub use openai::to_openai_tools;
pub use schema::{input_schema, param_schema};

use crate::interface::Interface;
use serde_json::{Map, Value as Json};
use std::fmt;
use std::str::FromStr;

/// Arguments meant for the application, never for the model: hidden from rendered schemas
/// and stripped from the arguments a model sends. Names match ignoring ASCII case when
/// stripping, so a model cannot slip `Dry_Run` past the list.
///
/// Only top-level parameters are control fields; a field of the same name inside an
/// object parameter or a request body is ordinary data.
///
/// ```
/// use atfunc::interop::ControlFields;
/// use serde_json::json;
///
/// let mut args = json!({"id": 7, "dry_run": true, "Confirm_Token": "x"});
/// let args = args.as_object_mut().unwrap();
/// let removed = ControlFields::default().strip(args);
/// assert_eq!(json!(args), json!({"id": 7}));
/// assert_eq!(json!(removed), json!({"dry_run": true, "Confirm_Token": "x"}));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlFields {
    names: Vec<String>,
}

/// The default control fields.
const DEFAULT_CONTROL_FIELDS: [&str; 3] = ["dry_run", "confirm_token", "idempotency_key"];

/// `dry_run`, `confirm_token` and `idempotency_key`.
impl Default for ControlFields {
    fn default() -> ControlFields {
        ControlFields::new(DEFAULT_CONTROL_FIELDS)
    }
}

impl ControlFields {
    /// These names, and no others.
    pub fn new<I, S>(names: I) -> ControlFields
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ControlFields {
            names: names.into_iter().map(Into::into).collect(),
        }
    }

    /// No control fields: every parameter reaches the model.
    pub fn none() -> ControlFields {
        ControlFields { names: Vec::new() }
    }

    /// The names, as given.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Whether `name` is a control field (ignoring ASCII case).
    pub fn contains(&self, name: &str) -> bool {
        self.names.iter().any(|n| n.eq_ignore_ascii_case(name))
    }

    /// Removes the control fields from `args` and returns them, in their order in `args`.
    pub fn strip(&self, args: &mut Map<String, Json>) -> Map<String, Json> {
        if self.names.is_empty() {
            return Map::new();
        }
        let keys: Vec<String> = args
            .keys()
            .filter(|key| self.contains(key))
            .cloned()
            .collect();
        keys.into_iter()
            .filter_map(|key| {
                let value = crate::ordered::remove_in_order(args, &key)?;
                Some((key, value))
            })
            .collect()
    }
}

/// Removes `fields` from a model's arguments; see [`ControlFields::strip`].
pub fn strip_control_fields(
    args: &mut Map<String, Json>,
    fields: &ControlFields,
) -> Map<String, Json> {
    fields.strip(args)
}

/// How interfaces are rendered for another format.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ToolFormatOptions {
    /// Parameters hidden from the model and stripped from its arguments.
    pub control_fields: ControlFields,
}

impl ToolFormatOptions {
    /// The same options with [`control_fields`](Self::control_fields) set.
    pub fn with_control_fields(mut self, control_fields: ControlFields) -> Self {
        self.control_fields = control_fields;
        self
    }
}

/// Interfaces rendered for a model API.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct Rendered {
    /// The rendered tools: an OpenAI `tools` array, or an MCP `{"tools": [...]}` object.
    pub tools: Json,
    /// The map from each model name to its tool. Only tools in it were rendered.
    pub names: NameMap,
    /// Tools left out because an earlier one took their model name.
    pub clashes: Vec<Clash>,
}

/// A tool format atfunc renders to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolFormat {
    /// An OpenAI `tools` array; see [`to_openai_tools`].
    Openai,
    /// An MCP `tools/list` result; see [`to_mcp_tools`].
    Mcp,
}

impl ToolFormat {
    /// The name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolFormat::Openai => "openai",
            ToolFormat::Mcp => "mcp",
        }
    }
}

impl fmt::Display for ToolFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A format name that is not `openai` or `mcp`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format '{name}': use openai or mcp")]
#[non_exhaustive]
pub struct UnknownFormat {
    /// The name as given.
    pub name: String,
}

impl FromStr for ToolFormat {
    type Err = UnknownFormat;

    fn from_str(name: &str) -> Result<ToolFormat, UnknownFormat> {
        match name.to_ascii_lowercase().as_str() {
            "openai" => Ok(ToolFormat::Openai),
            "mcp" => Ok(ToolFormat::Mcp),
            _ => Err(UnknownFormat {
                name: name.to_owned(),
            }),
        }
    }
}

/// Renders `interfaces` in `format`.
///
/// ```
/// use atfunc::interop::{render, ToolFormat, ToolFormatOptions};
/// let tools = atfunc::load_interfaces_str(
///     r#"[{"name": "weather.get_temp", "parameters": {"type": "object", "properties": {}}}]"#,
/// ).unwrap();
/// let rendered = render(&tools, "mcp".parse().unwrap(), &ToolFormatOptions::default());
/// assert_eq!(rendered.tools["tools"][0]["name"], "weather_get_temp");
/// ```
pub fn render(
    interfaces: &[Interface],
    format: ToolFormat,
    options: &ToolFormatOptions,
) -> Rendered {
    match format {
        ToolFormat::Openai => to_openai_tools(interfaces, options),
        ToolFormat::Mcp => to_mcp_tools(interfaces, options),
    }
}

/// The tools that get a model name, each with it, in order; the rest as clashes.
///
/// Of tools whose names clash, the one whose name a call writes sorts first (byte order;
/// the earlier of two with one name) keeps the model name. The winner is then decided by
/// the clashing tools alone: an order that depends on other tools (a registry lists its
/// tools toolbox by toolbox, and an unrelated tool can move a toolbox up) cannot change it.
pub(crate) fn assign_names(
    interfaces: &[Interface],
) -> (Vec<(&Interface, String)>, NameMap, Vec<Clash>) {
    let entry = |interface: &Interface| {
        let body_field = interface.has_body().then(|| schema::body_field(interface));
        // The name as defined when the API accepts it as it is (`get-weather`), so the
        // application's tools keep their names; the map leads back to the name a call writes.
        let defined = interface.original_qualified_name();
        let renamed: Vec<(String, String)> = interface
            .params
            .iter()
            .filter_map(|p| Some((p.original.clone()?, p.name.clone())))
            .collect();
        (defined, interface.qualified_name(), body_field, renamed)
    };
    // First the winners, tools taken in name order.
    let mut by_name: Vec<(usize, String)> = interfaces
        .iter()
        .map(Interface::qualified_name)
        .enumerate()
        .collect();
    by_name.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
    let mut winners = NameMap::new();
    let mut lost: Vec<Option<Clash>> = vec![None; interfaces.len()];
    for (index, _) in by_name {
        let Some(interface) = interfaces.get(index) else {
            continue;
        };
        let (defined, qualified, body_field, renamed) = entry(interface);
        if let Err(clash) = winners.insert_entry(&defined, &qualified, body_field, renamed) {
            if let Some(slot) = lost.get_mut(index) {
                *slot = Some(clash);
            }
        }
    }
    // Then the map in the tools' own order: the winners do not clash among themselves.
    let mut names = NameMap::new();
    let mut clashes = Vec::new();
    let mut kept = Vec::with_capacity(interfaces.len());
    for (interface, clash) in interfaces.iter().zip(lost) {
        if let Some(clash) = clash {
            clashes.push(clash);
            continue;
        }
        let (defined, qualified, body_field, renamed) = entry(interface);
        match names.insert_entry(&defined, &qualified, body_field, renamed) {
            Ok(model_name) => kept.push((interface, model_name.to_owned())),
            Err(clash) => clashes.push(clash),
        }
    }
    (kept, names, clashes)
}
