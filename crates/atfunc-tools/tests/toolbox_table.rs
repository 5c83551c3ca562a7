//! The table shared with the Python package's tests (`tests/data/toolbox/cases.json`):
//! Rust tools run by the registry give these outcomes, and `atfunc.Toolbox` gives the same
//! for the same tools written in Python (`python/tests/test_toolbox.py`).

use atfunc_tools::{Args, FnBox, Registry, ToolError};
use serde_json::{json, Map, Value as Json};
use std::sync::{Arc, Mutex};

fn table() -> Json {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/toolbox/cases.json"
    );
    let text = std::fs::read_to_string(path).expect("the table");
    serde_json::from_str(&text).expect("the table is JSON")
}

/// A tool's definition from its `args`, as `Toolbox.add_tool(args=...)` writes it.
fn definition(tool: &Json) -> Json {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, spec) in tool["args"].as_object().expect("args") {
        let mut spec = spec.as_object().expect("a parameter").clone();
        if spec.remove("required") == Some(Json::Bool(true)) {
            required.push(json!(name));
        }
        properties.insert(name.clone(), Json::Object(spec));
    }
    json!({
        "name": tool["name"],
        "description": tool["description"],
        "parameters": {"type": "object", "properties": properties, "required": required},
    })
}

/// What a tool of the table does, named by its `behaviour`.
fn behave(behaviour: &str, args: &Args) -> Result<Json, ToolError> {
    let text = |name: &str| args.get::<String>(name);
    match behaviour {
        "add" => Ok(json!(args.get::<i64>("a")? + args.get::<i64>("b")?)),
        "shout" => Ok(json!(text("text")?.to_uppercase())),
        "repeat" => Ok(json!(text("word")?.repeat(args.get::<usize>("times")?))),
        "fail" => Err(ToolError::msg(format!("ValueError: {}", text("reason")?))),
        "echo" => Ok(Json::Object(args.as_map().clone())),
        other => panic!("unknown behaviour {other}"),
    }
}

fn registry(table: &Json) -> Registry {
    let registry = Registry::new();
    registry.unregister_control_functions();
    let tools = table["tools"].as_array().expect("tools");
    let definitions: Vec<Json> = tools.iter().map(definition).collect();
    let interfaces =
        atfunc::load_interfaces_str(&Json::Array(definitions).to_string()).expect("valid tools");
    let mut boxes: Vec<FnBox> = Vec::new();
    for (interface, tool) in interfaces.into_iter().zip(tools) {
        let domain = interface.domain.clone().unwrap_or_default();
        let behaviour = tool["behaviour"].as_str().expect("behaviour").to_owned();
        let position = boxes.iter().position(|b| {
            use atfunc_tools::ToolBox;
            b.name() == domain
        });
        let tool_box = match position {
            Some(i) => boxes.remove(i),
            None => FnBox::new(domain),
        };
        boxes.push(tool_box.function(interface, move |args, _| behave(&behaviour, &args)));
    }
    for tool_box in boxes {
        registry.register(tool_box).expect("registered");
    }
    for pair in table["parsers"].as_array().expect("parsers") {
        let (function, param) = (pair[0].as_str().unwrap(), pair[1].as_str().unwrap());
        registry
            .set_parser(function, param, |value| {
                Ok(json!(value.as_str().unwrap_or_default().to_uppercase()))
            })
            .expect("a parser");
    }
    for name in table["confirm"].as_array().expect("confirm") {
        registry
            .require_confirmation(name.as_str().unwrap())
            .expect("confirmation");
    }
    registry
}

/// `text` with each held call's id replaced by `<id>`.
fn hide_ids(text: &str, ids: &[String]) -> String {
    ids.iter().fold(text.to_owned(), |text, id| {
        text.replace(id.as_str(), "<id>")
    })
}

#[tokio::test]
async fn rust_tools_give_the_outcomes_of_the_table() {
    let table = table();
    let cases = table["cases"].as_array().expect("cases");
    assert!(!cases.is_empty());
    for case in cases {
        let registry = registry(&table);
        if let Some(length) = case["truncate_length"].as_u64() {
            registry.set_truncate_length(length as usize);
        }
        let events = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&events);
        registry.on_event(move |event| {
            let kind = serde_json::to_value(event.event).unwrap();
            let function = event.function.clone().unwrap_or_default();
            seen.lock()
                .unwrap()
                .push(format!("{} {function}", kind.as_str().unwrap()));
        });
        let answer = case["answer"].as_str().expect("answer");
        let report = registry.execute_response(answer).await;
        let ids: Vec<String> = report
            .calls
            .iter()
            .filter_map(|call| call.confirmation_id.clone())
            .collect();
        let records: Vec<Json> = report
            .calls
            .iter()
            .map(|call| {
                let record = hide_ids(&call.to_json().to_string(), &ids);
                serde_json::from_str(&record).unwrap()
            })
            .collect();
        let name = &case["name"];
        assert_eq!(Json::Array(records), case["records"], "{name}");
        assert_eq!(hide_ids(&report.output, &ids), case["text"], "{name}");
        assert_eq!(json!(*events.lock().unwrap()), case["events"], "{name}");
    }
}
