//! The OpenAI `tools` array.

use super::schema::input_schema;
use super::{assign_names, Rendered, ToolFormatOptions};
use crate::interface::Interface;
use serde_json::{Map, Value as Json};

/// Renders `interfaces` as an OpenAI `tools` array:
/// `[{"type": "function", "function": {"name", "description", "parameters"}}]`.
///
/// Each name is the [`model_name`](super::model_name) of the qualified name; of two tools
/// with one model name the first is rendered and the other reported in
/// [`Rendered::clashes`]. `parameters` is the [`input_schema`](super::input_schema):
/// control fields are left out, and an api-wrapper's request body is one more object
/// parameter, `body`. A description is written only when there is one.
///
/// Loading the array back with [`load_interfaces`](crate::load_interfaces), and putting the
/// qualified names back from [`Rendered::names`], gives the same interfaces except for
/// what a JSON Schema does not carry:
/// - `returns` and `response_type` (OpenAI's function object has no such fields);
/// - an api-wrapper comes back a function: its path and query parameters as plain
///   parameters, its request body as the `body` parameter;
/// - the control fields, which were never rendered;
/// - a parameter of type `any` whose choices all share one JSON type comes back of that
///   type (a schema with only `enum` says its type through its values);
/// - an array's choices that apply to each element come back on its `items`.
pub fn to_openai_tools(interfaces: &[Interface], options: &ToolFormatOptions) -> Rendered {
    let (kept, names, clashes) = assign_names(interfaces);
    let tools = kept
        .into_iter()
        .map(|(interface, model_name)| {
            let mut function = Map::new();
            function.insert("name".into(), Json::String(model_name));
            if !interface.description.is_empty() {
                function.insert(
                    "description".into(),
                    Json::String(interface.description.clone()),
                );
            }
            function.insert(
                "parameters".into(),
                input_schema(interface, &options.control_fields),
            );
            let mut tool = Map::new();
            tool.insert("type".into(), Json::String("function".into()));
            tool.insert("function".into(), Json::Object(function));
            Json::Object(tool)
        })
        .collect();
    Rendered {
        tools: Json::Array(tools),
        names,
        clashes,
    }
}
