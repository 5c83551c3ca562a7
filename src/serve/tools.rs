//! A request's `tools` as atfunc interfaces, with the way back to the client's names.
//!
//! Tool names and parameter names the model could not write (`get-weather`,
//! `max-results`, `user.id`, `2fa_code`) are given identifiers for the model; calls bind
//! against the renamed interfaces, and their arguments go back to the client under its own
//! names, at every depth (fields of object parameters and of array items included).

use super::ApiError;
use crate::bind::Catalog;
use crate::interface::{is_identifier, is_identifier_char, load_interfaces};
use crate::parse::{Call, Value};
use crate::render::{render_prompt, PromptOptions};
use serde_json::{Map, Value as Json};
use std::collections::{HashMap, HashSet};
use unicase::UniCase;

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
    /// Qualified atfunc name → the parameter names given to the model, for the tools where
    /// some differ from the client's.
    params: HashMap<String, Names>,
}

impl ToolSet {
    /// Reads an OpenAI `tools` array. A name that is not an atfunc name (`get-weather`,
    /// `2fa_check`) is given one (`get_weather`, `_2fa_check`); two names that would meet
    /// (ignoring case, as binding does) are kept apart with a suffix (`_2`). Parameter
    /// names are given identifiers the same way (see [`field_names`]).
    pub(crate) fn from_tools(tools: &Json) -> Result<ToolSet, ApiError> {
        let Json::Array(entries) = tools else {
            return Err(ApiError::bad_request("'tools' must be a list"));
        };
        let mut renamed = Vec::with_capacity(entries.len());
        let mut client_names = HashMap::with_capacity(entries.len());
        let mut atfunc_names = HashMap::with_capacity(entries.len());
        let mut taken = HashSet::with_capacity(entries.len());
        let mut params = HashMap::new();
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
            if let Some(Json::Object(schema)) = function.get_mut("parameters") {
                let names = rename_schema(schema);
                if !names.is_empty() {
                    params.insert(name.clone(), names);
                }
            }
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
            params,
        })
    }

    /// A bound call's arguments (keyed by the names the model was given) under the
    /// client's parameter names, for the tool with this qualified atfunc name.
    pub(crate) fn client_args(
        &self,
        qualified: &str,
        args: Map<String, Json>,
    ) -> Map<String, Json> {
        match self.params.get(qualified) {
            Some(names) => names.object(args, Toward::Client),
            None => args,
        }
    }

    /// `call` with the keys inside its object arguments put under the names the model was
    /// given (see [`Names::written_value`]); `None` when the tool it names has no such
    /// names to put right.
    pub(crate) fn written_call(&self, call: &Call) -> Option<Call> {
        let (_, interface) = self.catalog.find(&call.name).ok()?;
        let names = self.params.get(&interface.qualified_name())?;
        if names.fields.iter().all(|field| field.inner.is_empty()) {
            return None;
        }
        let mut call = call.clone();
        // Arguments go to parameters as the binder assigns them: in order, or by name
        // (exact, then ignoring case).
        for (value, param) in call.positional.iter_mut().zip(&interface.params) {
            if let Some(inner) = names.inner(&param.name) {
                inner.written_value(value);
            }
        }
        for (name, value) in &mut call.named {
            let wanted = UniCase::new(name.as_str());
            let param = interface
                .params
                .iter()
                .find(|p| p.name == *name)
                .or_else(|| {
                    interface
                        .params
                        .iter()
                        .find(|p| UniCase::new(p.name.as_str()) == wanted)
                });
            if let Some(inner) = param.and_then(|p| names.inner(&p.name)) {
                inner.written_value(value);
            }
        }
        Some(call)
    }

    /// A call's arguments from the history (keyed by the client's parameter names) under
    /// the names the model is given, for the tool the client calls `client`. Keys the tool
    /// does not declare stay as they are.
    pub(crate) fn model_args(&self, client: &str, args: Map<String, Json>) -> Map<String, Json> {
        let names = self
            .atfunc_names
            .get(client)
            .and_then(|qualified| self.params.get(qualified));
        match names {
            Some(names) => names.object(args, Toward::Model),
            None => args,
        }
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

/// A tool name as an atfunc name: each dot-separated part made an identifier.
pub(crate) fn atfunc_name(client: &str) -> String {
    client
        .split('.')
        .map(identifier)
        .collect::<Vec<_>>()
        .join(".")
}

/// `name` made an identifier: characters that cannot be in one become `_`, and a name
/// that does not start with a letter or `_` gets a `_` in front.
fn identifier(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| if is_identifier_char(c) { c } else { '_' })
        .collect();
    if !out.starts_with(|c: char| c.is_alphabetic() || c == '_') {
        out.insert(0, '_');
    }
    out
}

/// The names the model is given for the fields of one object, in the same order.
///
/// A name that is already an identifier is kept as it is, so a tool whose names are all
/// fine is shown exactly as the client wrote it. Any other name is made one
/// ([`identifier`]: `max-results` → `max_results`, `2fa_code` → `_2fa_code`); when that
/// meets another name of the object ignoring case, as binding matches names, it gets
/// `_2`, `_3`, ... (`max-results` beside `max_results` is `max_results_2`).
fn field_names(client: &[String]) -> Vec<String> {
    let fold = |name: &str| UniCase::new(name).to_folded_case();
    let mut taken: HashSet<String> = client
        .iter()
        .filter(|name| is_identifier(name))
        .map(|name| fold(name))
        .collect();
    client
        .iter()
        .map(|name| {
            if is_identifier(name) {
                return name.clone();
            }
            let base = identifier(name);
            let mut candidate = base.clone();
            let mut n = 1;
            while !taken.insert(fold(&candidate)) {
                n += 1;
                candidate = format!("{base}_{n}");
            }
            candidate
        })
        .collect()
}

/// Renames, in place, the fields of a JSON Schema object to the names the model is given:
/// the keys of `properties` and the entries of `required`, then the same inside each
/// property's schema and inside `items`. Returns the renamings, for mapping values back.
fn rename_schema(schema: &mut Map<String, Json>) -> Names {
    let mut client: Vec<String> = match schema.get("properties") {
        Some(Json::Object(properties)) => properties.keys().cloned().collect(),
        _ => Vec::new(),
    };
    let declared = client.len();
    // A required name without a property is still a parameter (see the interface loader).
    if let Some(Json::Array(required)) = schema.get("required") {
        for name in required.iter().filter_map(Json::as_str) {
            if !client.iter().any(|c| c == name) {
                client.push(name.to_owned());
            }
        }
    }
    let atfunc = field_names(&client);
    let mut names = Names::default();
    if let Some(Json::Object(properties)) = schema.get_mut("properties") {
        let old = std::mem::take(properties);
        for ((client, mut property), atfunc) in old.into_iter().zip(&atfunc) {
            let inner = match &mut property {
                Json::Object(property) => rename_schema(property),
                _ => Names::default(),
            };
            properties.insert(atfunc.clone(), property);
            names.push(client, atfunc.clone(), inner);
        }
    }
    for (client, atfunc) in client.iter().zip(&atfunc).skip(declared) {
        names.push(client.clone(), atfunc.clone(), Names::default());
    }
    if let Some(Json::Array(required)) = schema.get_mut("required") {
        for entry in required {
            if let Json::String(name) = entry {
                if let Some(field) = names.by_client.get(name).and_then(|&i| names.fields.get(i)) {
                    *name = field.atfunc.clone();
                }
            }
        }
    }
    if let Some(Json::Object(items)) = schema.get_mut("items") {
        names.set_items(rename_schema(items));
    }
    names
}

/// Which way a value's field names are translated.
#[derive(Debug, Clone, Copy)]
enum Toward {
    /// From the names the model was given to the client's.
    Client,
    /// From the client's names to the model's.
    Model,
}

/// The names of one schema's fields, the client's and the model's, with the same inside
/// each field and inside an array's items. Kept only where some name differs.
#[derive(Debug, Default)]
struct Names {
    /// Every field of the object, in declared order.
    fields: Vec<Field>,
    /// The model's name → index in `fields`.
    by_atfunc: HashMap<String, usize>,
    /// The client's name → index in `fields`.
    by_client: HashMap<String, usize>,
    /// The names inside an array's items, when some differ.
    items: Option<Box<Names>>,
    /// Whether some name differs, here or deeper.
    changed: bool,
}

/// One field of an object: both its names, and the names inside its own schema.
#[derive(Debug)]
struct Field {
    atfunc: String,
    client: String,
    inner: Names,
}

impl Names {
    fn is_empty(&self) -> bool {
        !self.changed
    }

    fn push(&mut self, client: String, atfunc: String, inner: Names) {
        self.changed |= client != atfunc || inner.changed;
        let index = self.fields.len();
        self.by_atfunc.insert(atfunc.clone(), index);
        self.by_client.insert(client.clone(), index);
        // Names that are all the same deeper down need no keeping.
        let inner = if inner.changed {
            inner
        } else {
            Names::default()
        };
        self.fields.push(Field {
            atfunc,
            client,
            inner,
        });
    }

    fn set_items(&mut self, items: Names) {
        if items.changed {
            self.changed = true;
            self.items = Some(Box::new(items));
        }
    }

    /// The names inside the field the model calls `atfunc`.
    fn inner(&self, atfunc: &str) -> Option<&Names> {
        let field = self
            .by_atfunc
            .get(atfunc)
            .and_then(|&i| self.fields.get(i))?;
        Some(&field.inner).filter(|inner| inner.changed)
    }

    /// An object's fields under the other names, in the same order. Keys that are not
    /// declared stay as they are; should one equal a translated name, the declared field
    /// wins (bound arguments list declared fields before undeclared ones).
    fn object(&self, fields: Map<String, Json>, toward: Toward) -> Map<String, Json> {
        if !self.changed {
            return fields;
        }
        let index = match toward {
            Toward::Client => &self.by_atfunc,
            Toward::Model => &self.by_client,
        };
        let mut out = Map::with_capacity(fields.len());
        for (key, value) in fields {
            match index.get(&key).and_then(|&i| self.fields.get(i)) {
                Some(field) => {
                    let name = match toward {
                        Toward::Client => &field.client,
                        Toward::Model => &field.atfunc,
                    };
                    out.insert(name.clone(), field.inner.value(value, toward));
                }
                None => {
                    out.entry(key).or_insert(value);
                }
            }
        }
        out
    }

    fn value(&self, value: Json, toward: Toward) -> Json {
        match (value, &self.items) {
            (Json::Object(fields), _) => Json::Object(self.object(fields, toward)),
            (Json::Array(elements), Some(items)) => Json::Array(
                elements
                    .into_iter()
                    .map(|element| items.value(element, toward))
                    .collect(),
            ),
            (other, _) => other,
        }
    }

    /// Puts the keys of a written value, at every depth, under the model's names. The
    /// prompt shows a tool's parameters but not the fields inside them, so a model may
    /// write a field as the client's definition spells it (`{"created-after": ...}`) as
    /// well as by the name it would be given (`{"created_after": ...}`); both bind.
    fn written_value(&self, value: &mut Value) {
        if !self.changed {
            return;
        }
        match value {
            Value::Object(fields) => {
                for (key, value) in fields {
                    let Some(field) = self.written_field(key) else {
                        continue;
                    };
                    if *key != field.atfunc {
                        key.clone_from(&field.atfunc);
                    }
                    field.inner.written_value(value);
                }
            }
            Value::Array(elements) => {
                if let Some(items) = &self.items {
                    for element in elements {
                        items.written_value(element);
                    }
                }
            }
            // Binding reads an object or array given as JSON text, so its keys count too.
            Value::String(text) | Value::Bare(text) => {
                let Ok(json @ (Json::Object(_) | Json::Array(_))) =
                    serde_json::from_str::<Json>(text)
                else {
                    return;
                };
                let renamed = self.value(json.clone(), Toward::Model);
                if renamed != json {
                    *text = renamed.to_string();
                }
            }
            Value::Number(_) | Value::Bool(_) | Value::Null => {}
        }
    }

    /// The field a key written by the model stands for: the one the binder would match
    /// (exact model name, then ignoring case), else one whose client name it is.
    fn written_field(&self, key: &str) -> Option<&Field> {
        let exact = self.by_atfunc.get(key).or_else(|| self.by_client.get(key));
        if let Some(field) = exact.and_then(|&i| self.fields.get(i)) {
            return Some(field);
        }
        let key = UniCase::new(key);
        self.fields
            .iter()
            .find(|field| UniCase::new(field.atfunc.as_str()) == key)
            .or_else(|| {
                self.fields
                    .iter()
                    .find(|field| UniCase::new(field.client.as_str()) == key)
            })
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

    /// A tool whose parameter names are not identifiers, at the top and nested.
    fn search_tool() -> Json {
        json!({"type": "function", "function": {"name": "search", "parameters": {
            "type": "object",
            "properties": {
                "query text": {"type": "string"},
                "max-results": {"type": "integer"},
                "max_results": {"type": "integer"},
                "2fa_code": {"type": "string"},
                "user.id": {"type": "object", "properties": {
                    "org-id": {"type": "integer"}, "name": {"type": "string"}},
                    "required": ["org-id"]},
                "tags": {"type": "array", "items": {"type": "object", "properties": {
                    "tag-name": {"type": "string"}}}},
                "MAX_RESULTS_2": {"type": "boolean"}},
            "required": ["query text", "x-trace"]}}})
    }

    #[test]
    fn field_names_become_identifiers_apart_ignoring_case() {
        let client: Vec<String> = ["a-b", "a_b", "A_B_2", "", "2x", "é-ü", "Foo", "foo"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            field_names(&client),
            ["a_b_3", "a_b", "A_B_2", "_", "_2x", "é_ü", "Foo", "foo"]
        );
    }

    #[test]
    fn parameter_names_become_identifiers_and_map_back() {
        let tools = ToolSet::from_tools(&json!([search_tool()])).unwrap();
        let [search] = tools.catalog.interfaces() else {
            panic!("one tool")
        };
        let names: Vec<&str> = search.params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "query_text",
                "max_results_3",
                "max_results",
                "_2fa_code",
                "user_id",
                "tags",
                "MAX_RESULTS_2",
                "x_trace"
            ]
        );
        let required: Vec<&str> = search
            .params
            .iter()
            .filter(|p| p.required)
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(required, ["query_text", "x_trace"]);
        let prompt = tools.prompt(&Choice::Auto, false);
        assert!(prompt.contains("@search( <*query_text>"), "{prompt}");

        let bound = json!({"query_text": "q", "max_results_3": 5, "max_results": 3,
            "_2fa_code": "0042", "user_id": {"org_id": 7, "name": "ann", "extra": 1},
            "tags": [{"tag_name": "a"}, {"tag_name": "b"}], "MAX_RESULTS_2": true,
            "x_trace": "t"});
        let Json::Object(bound) = bound else {
            unreachable!()
        };
        let client = json!({"query text": "q", "max-results": 5, "max_results": 3,
            "2fa_code": "0042", "user.id": {"org-id": 7, "name": "ann", "extra": 1},
            "tags": [{"tag-name": "a"}, {"tag-name": "b"}], "MAX_RESULTS_2": true,
            "x-trace": "t"});
        let back = Json::Object(tools.client_args("search", bound.clone()));
        assert_eq!(back, client);
        // Key order is kept too: it is what the client reads.
        assert_eq!(back.to_string(), client.to_string());
        let Json::Object(client) = client else {
            unreachable!()
        };
        assert_eq!(tools.model_args("search", client), bound);
    }

    /// The one call in `text`, bound as the gateway binds it, arguments as the client
    /// gets them.
    fn bind_as_client(tools: &ToolSet, text: &str) -> Result<Json, String> {
        let calls: Vec<Call> = crate::parse::parse_events(text)
            .into_iter()
            .filter_map(|event| match event {
                crate::parse::Event::Call(call) => Some(call),
                _ => None,
            })
            .collect();
        let [call] = calls.as_slice() else {
            panic!("one call in {text}: {calls:?}")
        };
        let written = tools.written_call(call);
        let bound = crate::bind::bind(written.as_ref().unwrap_or(call), &tools.catalog)
            .map_err(|e| e.to_string())?;
        Ok(Json::Object(tools.client_args(&bound.name, bound.args)))
    }

    #[test]
    fn fields_inside_arguments_bind_under_either_name() {
        let tools = ToolSet::from_tools(&json!([search_tool()])).unwrap();
        let expected = json!({"query text": "q", "max-results": 5, "max_results": 3,
            "user.id": {"org-id": 7, "name": "ann"}, "tags": [{"tag-name": "a"}], "x-trace": "t"});
        for text in [
            // The names the model is given, at every depth.
            r#"@search("q", 5, max_results=3, user_id={"org_id": "7", "name": "ann"}, tags=[{"tag_name": "a"}], x_trace=t)"#,
            // The client's names inside objects, where the prompt does not show them.
            r#"@search(query_text="q", max_results_3=5, max_results="3", USER_ID={"org-id": 7, "NAME": "ann"}, tags=[{"Tag-Name": "a"}], X_TRACE="t")"#,
            // Objects given as JSON text.
            r#"@search("q", 5, 3, user_id='{"org-id": 7, "name": "ann"}', tags='[{"tag-name": "a"}]', x_trace=t)"#,
        ] {
            assert_eq!(bind_as_client(&tools, text), Ok(expected.clone()), "{text}");
        }
        assert_eq!(
            bind_as_client(
                &tools,
                r#"@search("q", x_trace=t, user_id={"name": "ann"})"#
            ),
            Err("Missing required parameter for function 'search': user_id.org_id".into())
        );
        assert_eq!(
            bind_as_client(
                &tools,
                r#"@search("q", x_trace=1, tags=[{"tag_name": "a", "tag-name": "b"}])"#
            ),
            Ok(json!({"query text": "q", "tags": [{"tag-name": "b"}], "x-trace": 1}))
        );
    }

    #[test]
    fn tools_with_identifier_names_are_left_alone() {
        let tools = ToolSet::from_tools(&json!([tool("get-weather")])).unwrap();
        assert!(tools.params.is_empty());
        let args = Map::from_iter([("q".to_owned(), json!("x"))]);
        assert_eq!(tools.client_args("get_weather", args.clone()), args);
        assert_eq!(tools.model_args("get-weather", args.clone()), args);
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
