//! The MCP `tools/list` result.

use super::schema::input_schema;
use super::{assign_names, Rendered, ToolFormatOptions};
use crate::interface::Interface;
use serde_json::{Map, Value as Json};

/// Renders `interfaces` as the result of an MCP `tools/list` request:
/// `{"tools": [{"name", "description", "inputSchema"}]}`.
///
/// Names, clashes, control fields and request bodies are handled as in
/// [`to_openai_tools`](super::to_openai_tools); `inputSchema` is the same schema as
/// OpenAI's `parameters`.
///
/// ```
/// use atfunc::interop::{to_mcp_tools, ToolFormatOptions};
/// use atfunc::{Interface, Param, ParamType};
/// use serde_json::json;
///
/// let temp = Interface::new("get_temp").in_domain("weather")
///     .describe("Current temperature")
///     .param(Param::new("city", ParamType::String).required());
/// assert_eq!(to_mcp_tools(&[temp], &ToolFormatOptions::default()).tools, json!({"tools": [{
///     "name": "weather_get_temp",
///     "description": "Current temperature",
///     "inputSchema": {
///         "type": "object",
///         "properties": {"city": {"type": "string"}},
///         "required": ["city"]
///     }
/// }]}));
/// ```
pub fn to_mcp_tools(interfaces: &[Interface], options: &ToolFormatOptions) -> Rendered {
    let (kept, names, clashes) = assign_names(interfaces);
    let tools: Vec<Json> = kept
        .into_iter()
        .map(|(interface, model_name)| {
            let mut tool = Map::new();
            tool.insert("name".into(), Json::String(model_name));
            if !interface.description.is_empty() {
                tool.insert(
                    "description".into(),
                    Json::String(interface.description.clone()),
                );
            }
            tool.insert(
                "inputSchema".into(),
                input_schema(interface, &options.control_fields),
            );
            Json::Object(tool)
        })
        .collect();
    let mut result = Map::new();
    result.insert("tools".into(), Json::Array(tools));
    Rendered {
        tools: Json::Object(result),
        names,
        clashes,
    }
}
