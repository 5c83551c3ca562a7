//! Hostile tools files and completions: loading, validating, rendering (atfunc, OpenAI and
//! MCP formats, GBNF grammars), binding, the batch record path and reading a config file never panic,
//! whatever the input.
//!
//! The tools come as raw text and as JSON built from the fuzzer's bytes with the field
//! names the loader reads, so the fuzzer reaches deep into the loader instead of stopping
//! at JSON syntax.
#![no_main]

use arbitrary::Arbitrary;
use atfunc::batch::Batch;
use atfunc::bind::NameMatch;
use atfunc::grammar::{gbnf, Choice, GrammarOptions};
use atfunc::interface::validate_all;
use atfunc::interop::{render, ToolFormat, ToolFormatOptions};
use atfunc::{bind, load_interfaces, load_interfaces_str, parse_events, Catalog};
use atfunc::{Event, Interface};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value as Json};

const KEYS: [&str; 39] = [
    "name",
    "pattern",
    "minLength",
    "format",
    "exclusiveMinimum",
    "domain",
    "type",
    "description",
    "params",
    "parameters",
    "properties",
    "required",
    "isRequired",
    "enum",
    "choices",
    "minimum",
    "maximum",
    "min",
    "max",
    "items",
    "default",
    "function",
    "returns",
    "path_params",
    "query_params",
    "request_body",
    "tools",
    "response_type",
    "toolboxes",
    "kind",
    "root",
    "base_url",
    "headers",
    "command",
    "env",
    "path",
    "method",
    "timeout_ms",
    "functions",
];

const WORDS: [&str; 23] = [
    "function",
    "HashMap",
    "True",
    "dontcare",
    "api-wrapper",
    "object",
    "dict",
    "string",
    "integer",
    "int",
    "number",
    "float",
    "boolean",
    "array",
    "tuple",
    "any",
    "weather.get_temp",
    "file",
    "command",
    "http",
    "mcp",
    "http://127.0.0.1:9/x/{id}",
    "/users/{org}",
];

#[derive(Arbitrary, Debug)]
enum J {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Word(u8),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(K, J)>),
}

#[derive(Arbitrary, Debug)]
enum K {
    Known(u8),
    Other(String),
}

fn build(j: &J, depth: usize) -> Json {
    if depth > 12 {
        return Json::Null;
    }
    match j {
        J::Null => Json::Null,
        J::Bool(b) => Json::Bool(*b),
        J::Int(i) => Json::from(*i),
        J::Float(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        J::Word(w) => Json::from(WORDS[*w as usize % WORDS.len()]),
        J::Str(s) => Json::from(s.as_str()),
        J::Arr(items) => Json::Array(items.iter().map(|i| build(i, depth + 1)).collect()),
        J::Obj(fields) => {
            let mut map = Map::new();
            for (k, v) in fields {
                let key = match k {
                    K::Known(i) => KEYS[*i as usize % KEYS.len()].to_owned(),
                    K::Other(s) => s.clone(),
                };
                map.insert(key, build(v, depth + 1));
            }
            Json::Object(map)
        }
    }
}

fn exercise(interfaces: Vec<Interface>, completion: &str) {
    let _ = validate_all(&interfaces);
    for param_descriptions in [false, true] {
        let options =
            atfunc::render::PromptOptions::default().with_param_descriptions(param_descriptions);
        let _ = atfunc::render_prompt(&interfaces, &options);
    }
    for format in [ToolFormat::Openai, ToolFormat::Mcp] {
        let _ = render(&interfaces, format, &ToolFormatOptions::default());
    }
    for case_sensitive in [false, true] {
        let matching = if case_sensitive {
            NameMatch::ExactCase
        } else {
            NameMatch::IgnoreCase
        };
        let catalog = Catalog::new(interfaces.clone()).matching(matching);
        for event in parse_events(completion) {
            if let Event::Call(call) = event {
                let _ = bind(&call, &catalog);
            }
        }
    }
    // Grammars in every choice; a refusal is an error value, never a panic.
    for choice in [Choice::Auto, Choice::Required, Choice::None] {
        for single in [false, true] {
            let options = GrammarOptions::default()
                .with_choice(choice.clone())
                .with_single(single);
            let _ = gbnf(&interfaces, &options);
        }
    }
    // A JSON Lines record whose completion is the fuzzed text, bound to these tools.
    let batch = Batch::new(Some(Catalog::new(interfaces)));
    let record = serde_json::json!({"id": 1, "completion": completion}).to_string();
    let _ = batch.process_line(1, record.as_bytes());
}

fuzz_target!(|data: (J, String, String, Vec<u8>)| {
    let (shape, text, completion, line) = data;
    let json = build(&shape, 0);
    // The same shapes as a config file (read only: building would start processes).
    let _ = atfunc_tools::config::Config::from_text(&json.to_string(), ".");
    let _ = atfunc_tools::config::Config::from_text(&text, ".");
    // Read leniently (every workaround taken) and strictly: both must only ever answer.
    let strict = atfunc::interface::LoadOptions::default()
        .with_strictness(atfunc::interface::Strictness::Strict);
    let _ = strict.load(&json);
    if let Ok(interfaces) = load_interfaces(&json) {
        exercise(interfaces, &completion);
    }
    if let Ok(interfaces) = load_interfaces_str(&text) {
        exercise(interfaces, &completion);
    }
    // Any bytes as a batch line, with tools of its own or none.
    let _ = Batch::new(None).process_line(1, &line);
});
