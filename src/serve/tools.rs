//! A request's `tools` as atfunc interfaces, with the way back to the client's names.

use super::ApiError;
use crate::bind::Catalog;
use crate::interface::{is_identifier_char, load_interfaces};
use crate::render::{render_prompt, PromptOptions};
use serde_json::{Map, Value as Json};
use std::collections::{HashMap, HashSet};

/// What the request's `tool_choice` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Choice {
    /// `"auto"` or absent: the model decides.
    Auto,
    /// `"none"`: no tools this turn.
    None,
    /// `"required"`: at least one call.
    Required,
    /// `{"type": "function", "function": {"name": ...}}`: a call to this tool (qualified
    /// atfunc name), and to no other.
    Named(String),
}

/// The client's tools as the model sees them.
#[derive(Debug)]
pub(crate) struct ToolSet {
    /// The interfaces calls bind against; names match ignoring case.
    pub(crate) catalog: Catalog,
    /// Qualified atfunc name → the tool's name as the client wrote it.
    client_names: HashMap<String, String>,
    /// The client's name → qualified atfunc name.
    atfunc_names: HashMap<String, String>,
}

impl ToolSet {
    /// Reads an OpenAI `tools` array. A name that is not an atfunc name (`get-weather`,
    /// `2fa_check`) is given one (`get_weather`, `_2fa_check`); two names that would meet
    /// (ignoring case, as binding does) are kept apart with a suffix (`_2`).
    pub(crate) fn from_tools(tools: &Json) -> Result<ToolSet, ApiError> {
        let Json::Array(entries) = tools else {
            return Err(ApiError::bad_request("'tools' must be a list"));
        };
        let mut renamed = Vec::with_capacity(entries.len());
        let mut client_names = HashMap::with_capacity(entries.len());
        let mut atfunc_names = HashMap::with_capacity(entries.len());
        let mut taken = HashSet::with_capacity(entries.len());
        for (i, entry) in entries.iter().enumerate() {
            let kind = entry
                .get("type")
                .and_then(Json::as_str)
                .unwrap_or("function");
            if kind != "function" {
                return Err(ApiError::bad_request(format!(
                    "tools[{i}]: only tools of type 'function' are supported, not '{kind}'"
                )));
            }
            let Some(function) = entry.get("function").and_then(Json::as_object) else {
                return Err(ApiError::bad_request(format!(
                    "tools[{i}]: missing the 'function' object"
                )));
            };
            let Some(client) = function.get("name").and_then(Json::as_str) else {
                return Err(ApiError::bad_request(format!(
                    "tools[{i}]: missing 'function.name'"
                )));
            };
            if atfunc_names.contains_key(client) {
                return Err(ApiError::bad_request(format!(
                    "tools[{i}]: the tool name '{client}' is used twice"
                )));
            }
            let base = atfunc_name(client);
            let mut name = base.clone();
            let mut n = 1;
            while !taken.insert(name.to_lowercase()) {
                n += 1;
                name = format!("{base}_{n}");
            }
            let mut function = function.clone();
            function.insert("name".into(), Json::String(name.clone()));
            let mut tool = Map::new();
            tool.insert("type".into(), Json::String("function".into()));
            tool.insert("function".into(), Json::Object(function));
            renamed.push(Json::Object(tool));
            client_names.insert(name.clone(), client.to_owned());
            atfunc_names.insert(client.to_owned(), name);
        }
        let interfaces = load_interfaces(&Json::Array(renamed))
            .map_err(|e| ApiError::bad_request(format!("invalid tools: {e}")))?;
        Ok(ToolSet {
            catalog: Catalog::new(interfaces, false),
            client_names,
            atfunc_names,
        })
    }

    /// The client's name for a qualified atfunc name.
    pub(crate) fn client_name<'a>(&'a self, qualified: &'a str) -> &'a str {
        self.client_names
            .get(qualified)
            .map_or(qualified, String::as_str)
    }

    /// The qualified atfunc name for the client's name; a tool the request does not list
    /// (an old call in the history) gets the name it would have had.
    pub(crate) fn atfunc_name(&self, client: &str) -> String {
        self.atfunc_names
            .get(client)
            .cloned()
            .unwrap_or_else(|| atfunc_name(client))
    }

    /// Reads `tool_choice` (absent or `null` is `auto`).
    pub(crate) fn choice(&self, choice: Option<&Json>) -> Result<Choice, ApiError> {
        let named = |name: &str| match self.atfunc_names.get(name) {
            Some(qualified) => Ok(Choice::Named(qualified.clone())),
            None => Err(ApiError::bad_request(format!(
                "tool_choice names '{name}', which is not one of the tools"
            ))),
        };
        match choice {
            None | Some(Json::Null) => Ok(Choice::Auto),
            Some(Json::String(word)) => match word.as_str() {
                "auto" => Ok(Choice::Auto),
                "none" => Ok(Choice::None),
                "required" => Ok(Choice::Required),
                other => Err(ApiError::bad_request(format!(
                    "tool_choice must be 'auto', 'none', 'required' or a function, not '{other}'"
                ))),
            },
            Some(Json::Object(map)) => {
                let name = map
                    .get("function")
                    .and_then(|f| f.get("name"))
                    .and_then(Json::as_str);
                match name {
                    Some(name) => named(name),
                    None => Err(ApiError::bad_request(
                        "tool_choice must name a function: {\"type\": \"function\", \"function\": {\"name\": ...}}",
                    )),
                }
            }
            Some(_) => Err(ApiError::bad_request(
                "tool_choice must be a string or an object",
            )),
        }
    }

    /// The system prompt: the atfunc preamble and every tool, then what `choice` and
    /// `single_call` ask of this answer.
    pub(crate) fn prompt(&self, choice: &Choice, single_call: bool) -> String {
        let mut prompt = render_prompt(self.catalog.interfaces(), &PromptOptions::default());
        match choice {
            Choice::Required => {
                prompt.push_str("\nIn this answer you must call at least one of these functions.\n")
            }
            Choice::Named(name) => {
                prompt.push_str(&format!("\nIn this answer you must call @{name}.\n"));
            }
            Choice::Auto | Choice::None => {}
        }
        if single_call {
            prompt.push_str("\nCall at most one function per answer.\n");
        }
        prompt
    }
}

/// A tool name as an atfunc name: each dot-separated part made an identifier (characters
/// that cannot be in one become `_`; a part starting with a digit gets a `_` in front).
pub(crate) fn atfunc_name(client: &str) -> String {
    client
        .split('.')
        .map(|part| {
            let mut out: String = part
                .chars()
                .map(|c| if is_identifier_char(c) { c } else { '_' })
                .collect();
            if !out.starts_with(|c: char| c.is_alphabetic() || c == '_') {
                out.insert(0, '_');
            }
            out
        })
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str) -> Json {
        json!({"type": "function", "function": {"name": name, "parameters": {
            "type": "object", "properties": {"q": {"type": "string"}}}}})
    }

    #[test]
    fn names_become_identifiers_and_map_back() {
        assert_eq!(atfunc_name("get-weather"), "get_weather");
        assert_eq!(atfunc_name("2fa"), "_2fa");
        assert_eq!(atfunc_name("weather.get"), "weather.get");
        assert_eq!(atfunc_name(""), "_");
        let tools =
            ToolSet::from_tools(&json!([tool("get-weather"), tool("get_weather")])).unwrap();
        let names: Vec<String> = tools
            .catalog
            .interfaces()
            .iter()
            .map(|i| i.qualified_name())
            .collect();
        assert_eq!(names, ["get_weather", "get_weather_2"]);
        assert_eq!(tools.client_name("get_weather"), "get-weather");
        assert_eq!(tools.client_name("get_weather_2"), "get_weather");
        assert_eq!(tools.atfunc_name("get-weather"), "get_weather");
    }

    #[test]
    fn choices() {
        let tools = ToolSet::from_tools(&json!([tool("lookup-user")])).unwrap();
        assert_eq!(tools.choice(None).unwrap(), Choice::Auto);
        assert_eq!(
            tools.choice(Some(&json!("required"))).unwrap(),
            Choice::Required
        );
        assert_eq!(
            tools
                .choice(Some(
                    &json!({"type": "function", "function": {"name": "lookup-user"}})
                ))
                .unwrap(),
            Choice::Named("lookup_user".into())
        );
        assert!(tools
            .choice(Some(
                &json!({"type": "function", "function": {"name": "other"}})
            ))
            .is_err());
        let prompt = tools.prompt(&Choice::Named("lookup_user".into()), true);
        assert!(prompt.contains("@lookup_user( <q> )"), "{prompt}");
        assert!(prompt.ends_with(
            "In this answer you must call @lookup_user.\n\nCall at most one function per answer.\n"
        ));
    }
}
