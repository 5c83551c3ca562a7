//! A request's `tools` as atfunc interfaces.
//!
//! Tool names and parameter names the model could not write (`get-weather`,
//! `max-results`, `user.id`, `2fa_code`) are shown to the model as the identifiers the
//! loader gives them; calls bind against those, and bound calls carry the client's own
//! names again. Fields inside object arguments are JSON keys and keep the client's
//! spelling throughout.

use super::built::{Built, Prompt};
use super::TurnError;
use atfunc::bind::{BoundCall, Catalog};
use atfunc::grammar::Choice;
use atfunc::interface::{dotted_identifier, Interface, LoadLimits, LoadOptions, Problem};
use atfunc::parse::{Dialect, ParserConfig};
use serde_json::{Map, Value as Json};
use std::collections::HashSet;

/// The keys of a tool definition and its schemas that the interface loader reads
/// ([`load_interfaces`](atfunc::load_interfaces)); any other is skipped while the tools are read, so a definition
/// padded with data the loader never looks at (4 MB of numbers under `examples`) costs
/// nothing to hold. A test checks that loading gives the same interfaces either way.
const READ_KEYS: [&str; 32] = [
    "type",
    "function",
    "functions",
    "tools",
    "name",
    "description",
    "parameters",
    "params",
    "returns",
    "response_type",
    "request_body",
    "query_params",
    "path_params",
    "location",
    "domain",
    "items",
    "properties",
    "required",
    "isRequired",
    "enum",
    "choices",
    "default",
    "format",
    "minimum",
    "maximum",
    "min",
    "max",
    "$ref",
    "$defs",
    "definitions",
    "anyOf",
    "oneOf",
];

/// Keys whose value is data, kept whole (an enum of objects keeps their fields).
const DATA_KEYS: [&str; 3] = ["enum", "choices", "default"];

/// Keys whose value maps names (of parameters, of shared schemas) to schemas: every name
/// is kept.
const NAME_KEYS: [&str; 3] = ["properties", "$defs", "definitions"];

/// Reads a request's `tools` text, keeping only what the loader reads.
pub(crate) fn read_tools(text: &str) -> Result<Json, TurnError> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    serde::de::DeserializeSeed::deserialize(Pruned::Schema, &mut deserializer)
        .map_err(|e| TurnError::bad_request(format!("invalid tools: {e}")))
}

/// How a value is read: as a schema (unknown keys skipped), or as an object of names to
/// schemas.
#[derive(Debug, Clone, Copy)]
enum Pruned {
    Schema,
    Names,
}

impl<'de> serde::de::DeserializeSeed<'de> for Pruned {
    type Value = Json;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Pruned {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut access: A) -> Result<Json, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            let value = match self {
                Pruned::Names => access.next_value_seed(Pruned::Schema)?,
                Pruned::Schema if DATA_KEYS.contains(&key.as_str()) => access.next_value()?,
                Pruned::Schema if NAME_KEYS.contains(&key.as_str()) => {
                    access.next_value_seed(Pruned::Names)?
                }
                Pruned::Schema if READ_KEYS.contains(&key.as_str()) => {
                    access.next_value_seed(Pruned::Schema)?
                }
                Pruned::Schema => {
                    access.next_value::<serde::de::IgnoredAny>()?;
                    continue;
                }
            };
            map.insert(key, value);
        }
        Ok(Json::Object(map))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut access: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = access.next_element_seed(Pruned::Schema)? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Json::Null, Json::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
}

/// The client's tools as the model sees them.
///
/// Names the model could not write (`get-weather`, `max-results`) are given identifiers by
/// the loader, as everywhere in atfunc (see [`identifier`](atfunc::interface::identifier));
/// bound calls come back under the client's names, so nothing here maps them back.
#[derive(Debug)]
pub(crate) struct ToolSet {
    /// The interfaces calls bind against; names match ignoring case.
    pub(crate) catalog: Catalog,
    /// What was worked around to read the tools (see [`atfunc::interface::LoadOptions`]).
    pub(crate) warnings: Vec<Problem>,
    /// The prompt's text and the grammars built so far from the tools.
    pub(crate) built: Built,
}

impl ToolSet {
    /// Reads an OpenAI `tools` array. Two tools, or two parameters of one tool, whose
    /// names a call would write alike are refused, naming both.
    #[cfg(test)]
    pub(crate) fn from_tools(tools: &Json) -> Result<ToolSet, TurnError> {
        ToolSet::from_tools_with(tools, &LoadLimits::default())
    }

    /// [`ToolSet::from_tools`] with the schemas loaded within `limits`.
    pub(crate) fn from_tools_with(tools: &Json, limits: &LoadLimits) -> Result<ToolSet, TurnError> {
        let Json::Array(entries) = tools else {
            return Err(TurnError::bad_request("'tools' must be a list"));
        };
        let mut seen = HashSet::with_capacity(entries.len());
        for (i, entry) in entries.iter().enumerate() {
            let kind = entry
                .get("type")
                .and_then(Json::as_str)
                .unwrap_or("function");
            if kind != "function" {
                return Err(TurnError::bad_request(format!(
                    "tools[{i}]: only tools of type 'function' are supported, not '{kind}'"
                )));
            }
            let Some(function) = entry.get("function").and_then(Json::as_object) else {
                return Err(TurnError::bad_request(format!(
                    "tools[{i}]: missing the 'function' object"
                )));
            };
            let Some(client) = function.get("name").and_then(Json::as_str) else {
                return Err(TurnError::bad_request(format!(
                    "tools[{i}]: missing 'function.name'"
                )));
            };
            if !seen.insert(client) {
                return Err(TurnError::bad_request(format!(
                    "tools[{i}]: the tool name '{client}' is used twice"
                )));
            }
        }
        let invalid =
            |e: &dyn std::fmt::Display| TurnError::bad_request(format!("invalid tools: {e}"));
        let loaded = LoadOptions::default()
            .with_limits(*limits)
            .load(tools)
            .map_err(|e| invalid(&e))?;
        Ok(ToolSet {
            catalog: Catalog::new(loaded.interfaces),
            warnings: loaded.warnings,
            built: Built::default(),
        })
    }

    /// The functions of a registry (the gateway's own, for executed requests), for reading
    /// a history that holds calls of them.
    pub(crate) fn from_catalog(catalog: Catalog) -> ToolSet {
        ToolSet {
            catalog,
            warnings: Vec::new(),
            built: Built::default(),
        }
    }

    /// The tool the client calls `client`, by its name exactly as the client wrote it.
    fn by_client_name(&self, client: &str) -> Option<&Interface> {
        self.catalog
            .interfaces()
            .iter()
            .find(|interface| interface.original_qualified_name() == client)
    }

    /// A call's arguments from the history (keyed by the client's parameter names) under
    /// the names the model is given, for the tool the client calls `client`. Keys the tool
    /// does not declare stay as they are.
    pub(crate) fn model_args(&self, client: &str, args: Map<String, Json>) -> Map<String, Json> {
        match self.by_client_name(client) {
            Some(interface) => interface.written_args(args),
            None => args,
        }
    }

    /// The name a call writes for the client's name; a tool the request does not list
    /// (an old call in the history) gets the name it would have had.
    pub(crate) fn atfunc_name(&self, client: &str) -> String {
        self.by_client_name(client).map_or_else(
            || dotted_identifier(client).into_owned(),
            Interface::qualified_name,
        )
    }

    /// The name a call writes for the tool a bound call went to (`Choice::Function` holds it).
    pub(crate) fn written_name(&self, bound: &BoundCall) -> Option<String> {
        self.catalog.get(bound.index).map(Interface::qualified_name)
    }

    /// The client's name of the tool calls write as `written` (as `Choice::Function` holds
    /// it); `written` itself when no tool has that name.
    pub(crate) fn client_name(&self, written: &str) -> String {
        self.catalog
            .interfaces()
            .iter()
            .find(|interface| interface.qualified_name() == written)
            .map_or_else(|| written.to_owned(), Interface::original_qualified_name)
    }

    /// Reads `tool_choice` (absent or `null` is `auto`).
    pub(crate) fn choice(&self, choice: Option<&Json>) -> Result<Choice, TurnError> {
        let named = |name: &str| match self.by_client_name(name) {
            Some(interface) => Ok(Choice::Function(interface.qualified_name())),
            None => Err(TurnError::bad_request(format!(
                "tool_choice names '{name}', which is not one of the tools"
            ))),
        };
        match choice {
            None | Some(Json::Null) => Ok(Choice::Auto),
            Some(Json::String(word)) => match word.parse() {
                Ok(Choice::Function(other)) => Err(TurnError::bad_request(format!(
                    "tool_choice must be 'auto', 'none', 'required' or a function, not '{other}'"
                ))),
                Ok(choice) => Ok(choice),
            },
            Some(Json::Object(map)) => {
                let name = map
                    .get("function")
                    .and_then(|f| f.get("name"))
                    .and_then(Json::as_str);
                match name {
                    Some(name) => named(name),
                    None => Err(TurnError::bad_request(
                        "tool_choice must name a function: {\"type\": \"function\", \"function\": {\"name\": ...}}",
                    )),
                }
            }
            Some(_) => Err(TurnError::bad_request(
                "tool_choice must be a string or an object",
            )),
        }
    }

    /// The system prompt: the atfunc preamble and every tool (each described parameter
    /// under its function with `param_descriptions`), then what `choice` and
    /// `single_call` ask of this answer.
    pub(crate) fn prompt(
        &self,
        choice: &Choice,
        single_call: bool,
        param_descriptions: bool,
    ) -> Prompt {
        let mut prompt = self
            .built
            .prompt(self.catalog.interfaces(), param_descriptions);
        match choice {
            Choice::Required => {
                prompt.push_str("\nIn this answer you must call at least one of these functions.\n")
            }
            Choice::Function(name) => {
                prompt.push_str(&format!("\nIn this answer you must call @{name}.\n"));
            }
            Choice::Auto | Choice::None => {}
        }
        if single_call {
            prompt.push_str("\nCall at most one function per answer.\n");
        }
        prompt
    }

    /// The parser's configuration for an answer to these tools written in `dialect`.
    pub(crate) fn parser_config(&self, dialect: Dialect) -> ParserConfig {
        self.built.parser_config(&self.catalog, dialect)
    }
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
        let tools = ToolSet::from_tools(&json!([tool("get-weather"), tool("lookup")])).unwrap();
        let names: Vec<String> = tools
            .catalog
            .interfaces()
            .iter()
            .map(|i| i.qualified_name())
            .collect();
        assert_eq!(names, ["get_weather", "lookup"]);
        assert_eq!(tools.atfunc_name("get-weather"), "get_weather");
        // A tool no longer listed, from an old call in the history.
        assert_eq!(tools.atfunc_name("2fa.check-code"), "_2fa.check_code");
    }

    #[test]
    fn tools_written_alike_are_refused_naming_both() {
        let error = ToolSet::from_tools(&json!([tool("get-weather"), tool("get_weather")]))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("'get-weather' and 'get_weather' would both be called as 'get_weather'"),
            "{error}"
        );
        let same_param = json!([{"type": "function", "function": {"name": "search",
            "parameters": {"type": "object", "properties": {
                "max-results": {"type": "integer"}, "max_results": {"type": "integer"}}}}}]);
        let error = ToolSet::from_tools(&same_param).unwrap_err().to_string();
        assert!(
            error.contains(
                "arameters 'max-results' and 'max_results' would both be written 'max_results'"
            ),
            "{error}"
        );
    }

    /// A tool whose parameter names are not identifiers, at the top and nested.
    fn search_tool() -> Json {
        json!({"type": "function", "function": {"name": "search", "parameters": {
            "type": "object",
            "properties": {
                "query text": {"type": "string"},
                "max-results": {"type": "integer"},
                "2fa_code": {"type": "string"},
                "user.id": {"type": "object", "properties": {
                    "org-id": {"type": "integer"}, "name": {"type": "string"}},
                    "required": ["org-id"]},
                "x-trace": {}},
            "required": ["query text", "x-trace"]}}})
    }

    /// The one call in `text`, bound as the gateway binds it.
    fn bind_one(tools: &ToolSet, text: &str) -> Result<(String, Json), String> {
        let calls: Vec<atfunc::parse::Call> = atfunc::parse::parse_events(text)
            .into_iter()
            .filter_map(|event| match event {
                atfunc::parse::Event::Call(call) => Some(call),
                _ => None,
            })
            .collect();
        let [call] = calls.as_slice() else {
            panic!("one call in {text}: {calls:?}")
        };
        let bound = atfunc::bind::bind(call, &tools.catalog).map_err(|e| e.to_string())?;
        Ok((bound.name, Json::Object(bound.args)))
    }

    #[test]
    fn parameters_are_written_as_identifiers_and_bound_under_the_clients_names() {
        let tools = ToolSet::from_tools(&json!([search_tool()])).unwrap();
        let prompt = tools.prompt(&Choice::Auto, false, false).to_string();
        assert!(
            prompt.contains("@search( <*query_text>, <max_results{integer}>, <_2fa_code>, <user_id{object}>, <*x_trace{any}> )"),
            "{prompt}"
        );
        let client = json!({"query text": "q", "max-results": 5, "2fa_code": "0042",
            "user.id": {"org-id": 7, "name": "ann"}, "x-trace": "t"});
        let bound = bind_one(
            &tools,
            r#"@search("q", MAX_RESULTS="5", _2fa_code="0042", user_id={"org-id": 7, "name": "ann"}, x_trace="t")"#,
        );
        assert_eq!(bound, Ok(("search".to_owned(), client.clone())));
        // Key order is kept too: it is what the client reads.
        assert_eq!(bound.unwrap().1.to_string(), client.to_string());
        let Json::Object(client) = client else {
            unreachable!()
        };
        let written = tools.model_args("search", client);
        let keys: Vec<&str> = written.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "query_text",
                "max_results",
                "_2fa_code",
                "user_id",
                "x_trace"
            ]
        );
        assert_eq!(
            bind_one(
                &tools,
                r#"@search("q", x_trace=t, user_id={"name": "ann"})"#
            ),
            Err("Missing required parameter for function 'search': user_id.org-id".into())
        );
    }

    /// Tool lists of every shape the tests hold: BFCL's, and schemas with `$defs`, `$ref`,
    /// `anyOf`, enums of objects, defaults and formats.
    fn tool_lists() -> Vec<Json> {
        let mut lists = Vec::new();
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/bfcl");
        for name in [
            "BFCL_v4_multiple.json",
            "BFCL_v4_parallel.json",
            "BFCL_v4_parallel_multiple.json",
            "BFCL_v4_simple_python.json",
        ] {
            let text = std::fs::read_to_string(dir.join(name)).unwrap();
            for line in text.lines() {
                let case: Json = serde_json::from_str(line).unwrap();
                lists.push(case["function"].clone());
            }
        }
        lists.push(json!([search_tool(), {"type": "function", "function": {
            "name": "plan", "description": "Plans.", "strict": true, "x-extra": [1, 2, 3],
            "parameters": {"type": "object", "additionalProperties": false,
                "$defs": {"Day": {"type": "string", "enum": ["mon", "tue"], "title": "Day"}},
                "properties": {
                    "day": {"$ref": "#/$defs/Day", "examples": ["mon"]},
                    "when": {"type": "string", "format": "date-time", "default": "2024-01-01T00:00:00Z"},
                    "mode": {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 9}, {"type": "null"}]},
                    "pick": {"enum": [{"a": 1, "examples": 2}, "b"]},
                    "tags": {"type": "array", "items": {"type": "string", "description": "a tag"}},
                    "examples": {"type": "integer", "description": "a parameter named like a keyword"}},
                "required": ["day"]}}}]));
        lists
    }

    #[test]
    fn tools_read_without_unknown_keys_load_the_same_interfaces() {
        for list in tool_lists() {
            let full = atfunc::load_interfaces(&list);
            let read = read_tools(&list.to_string()).unwrap();
            assert_eq!(
                atfunc::load_interfaces(&read).map_err(|e| e.to_string()),
                full.map_err(|e| e.to_string()),
                "{list}"
            );
        }
        // What the loader never reads is not kept.
        let read = read_tools(
            r#"[{"type": "function", "x": [1, 2], "function": {"name": "f",
            "parameters": {"type": "object", "properties": {"n": {"type": "integer",
            "examples": [7, 7, 7]}}}}}]"#,
        )
        .unwrap();
        assert_eq!(
            read,
            json!([{"type": "function", "function": {"name": "f", "parameters": {
                "type": "object", "properties": {"n": {"type": "integer"}}}}}])
        );
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
            Choice::Function("lookup_user".into())
        );
        assert!(tools
            .choice(Some(
                &json!({"type": "function", "function": {"name": "other"}})
            ))
            .is_err());
        let prompt = tools
            .prompt(&Choice::Function("lookup_user".into()), true, false)
            .to_string();
        assert!(prompt.contains("@lookup_user( <q> )"), "{prompt}");
        assert!(prompt.ends_with(
            "In this answer you must call @lookup_user.\n\nCall at most one function per answer.\n"
        ));
    }
}
