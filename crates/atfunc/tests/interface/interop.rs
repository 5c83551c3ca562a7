//! The OpenAI and MCP formats: names, control fields, rendering, the round trip through
//! `load_interfaces`, and the bridge to OpenAI's chat format.

use atfunc::interface::{Kind, Location};
use atfunc::interop::{
    bound_to_tool_call, is_model_safe, model_name, parse_tool_call, render, strip_control_fields,
    to_mcp_tools, to_openai_tools, tool_call, tool_call_to_text, tool_message, BridgeError,
    CallIds, ControlFields, NameMap, ToolFormat, ToolFormatOptions,
};
use atfunc::{
    bind, load_interfaces, parse_events, BoundCall, Catalog, Event, Interface, Param, ParamType,
};
use serde_json::{json, Map, Value as Json};
use std::collections::HashSet;

fn reference_tools() -> Vec<Interface> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/reference_tools.json"
    );
    let text = std::fs::read_to_string(path).unwrap();
    atfunc::load_interfaces_str(&text).unwrap()
}

const BFCL_FILES: [&str; 4] = [
    "BFCL_v4_simple_python.json",
    "BFCL_v4_multiple.json",
    "BFCL_v4_parallel.json",
    "BFCL_v4_parallel_multiple.json",
];

/// Every BFCL entry as `(id, its function list)`.
fn bfcl_entries(file: &str) -> Vec<(String, Json)> {
    let path = format!(
        "{}/../../tests/data/bfcl/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let entry: Json = serde_json::from_str(line).unwrap();
            (
                entry["id"].as_str().unwrap().to_owned(),
                entry["function"].clone(),
            )
        })
        .collect()
}

fn args(value: Json) -> Map<String, Json> {
    value.as_object().unwrap().clone()
}

/// Parses `text` (one call) and binds it against `catalog`.
fn bind_text(text: &str, catalog: &Catalog) -> BoundCall {
    let call = parse_events(text)
        .into_iter()
        .find_map(|event| match event {
            Event::Call(call) => Some(call),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no call in {text}"));
    bind(&call, catalog).unwrap_or_else(|e| panic!("{text}: {e}"))
}

// ---- names ----

#[test]
fn model_names() {
    let cases: &[(&str, &str)] = &[
        ("catalogue.list_products", "catalogue_list_products"),
        ("get_weather", "get_weather"),
        ("Weather.GetTemp", "Weather_GetTemp"),
        ("a.b.c", "a_b_c"),
        ("kebab-case.fn", "kebab-case_fn"),
        ("vehículo.año_vehiculo", "vehiculo_ano_vehiculo"),
        ("straße.größe", "strasse_grosse"),
        ("Łódź.ŻÓŁW", "Lodz_ZOLW"),
        ("Æsir.œuvre", "AEsir_oeuvre"),
        // Not foldable: replaced, and a hash keeps the name distinct.
        ("天气.查询", "____067b62cd"),
        ("天气.预报", "____68c2a6dd"),
        ("météo.прогноз", "meteo___2ca36992"),
        ("", "tool_4fd0bfc1"),
    ];
    for (qualified, expected) in cases {
        assert_eq!(model_name(qualified), *expected, "{qualified}");
        assert!(is_model_safe(expected), "{expected}");
    }
}

#[test]
fn long_names_are_cut_with_a_hash_that_keeps_them_apart() {
    let exactly_64 = format!("d.{}", "f".repeat(62));
    assert_eq!(model_name(&exactly_64), format!("d_{}", "f".repeat(62)));

    let long_a = format!("inventory.{}_alpha", "x".repeat(60));
    let long_b = format!("inventory.{}_omega", "x".repeat(60));
    let (a, b) = (model_name(&long_a), model_name(&long_b));
    assert_eq!(a.len(), 64);
    assert_eq!(b.len(), 64);
    assert_ne!(a, b);
    assert!(a.starts_with("inventory_xxxx"), "{a}");
    assert_eq!(a.as_bytes()[55], b'_');
    assert!(is_model_safe(&a) && is_model_safe(&b));
    // Stable: the same name maps the same way every time.
    assert_eq!(model_name(&long_a), a);
    // A long name of multi-byte letters is cut on its ASCII form, never inside a letter.
    let wide = "é".repeat(100);
    assert_eq!(model_name(&wide).len(), 64);
}

/// The winner of a clash is decided by the clashing tools alone: whichever comes first, and
/// whatever comes before them, the name that sorts first keeps the model name.
#[test]
fn a_clash_is_won_by_the_name_that_sorts_first_in_any_order() {
    let one = Interface::new("b_c").in_domain("a");
    let other = Interface::new("c").in_domain("a_b");
    let unrelated = Interface::new("other").in_domain("a_b");
    for tools in [
        vec![one.clone(), other.clone()],
        vec![other.clone(), one.clone()],
        vec![unrelated.clone(), other.clone(), one.clone()],
    ] {
        let rendered = to_openai_tools(&tools, &ToolFormatOptions::default());
        assert_eq!(rendered.names.qualified("a_b_c"), Some("a.b_c"));
        assert_eq!(rendered.clashes.len(), 1);
        assert_eq!(rendered.clashes[0].kept, "a.b_c");
        assert_eq!(rendered.clashes[0].dropped, "a_b.c");
        // The tools keep their order.
        let listed: Vec<&str> = rendered
            .tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        let expected: Vec<&str> = tools
            .iter()
            .filter(|t| t.name != "c")
            .map(|t| {
                if t.name == "b_c" {
                    "a_b_c"
                } else {
                    "a_b_other"
                }
            })
            .collect();
        assert_eq!(listed, expected);
    }
}

#[test]
fn of_two_tools_with_one_model_name_the_first_wins() {
    let tools = vec![
        Interface::new("b_c").in_domain("a").describe("first"),
        Interface::new("c").in_domain("a_b").describe("second"),
        Interface::new("y").in_domain("x"),
        Interface::new("b_c").in_domain("a").describe("again"),
    ];
    let rendered = to_openai_tools(&tools, &ToolFormatOptions::default());
    let listed: Vec<&str> = rendered
        .tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["a_b_c", "x_y"]);
    assert_eq!(rendered.tools[0]["function"]["description"], "first");
    let messages: Vec<String> = rendered.clashes.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            "tools 'a.b_c' and 'a_b.c' both map to the model name 'a_b_c'; 'a_b.c' is left out",
            "tool 'a.b_c' is listed twice; the second is left out",
        ]
    );
    assert_eq!(rendered.clashes[0].kept, "a.b_c");
    assert_eq!(rendered.clashes[0].dropped, "a_b.c");
    assert_eq!(rendered.names.len(), 2);
    assert_eq!(rendered.names.qualified("a_b_c"), Some("a.b_c"));
    assert_eq!(rendered.names.model_name("a_b.c"), None);
    // The MCP rendering takes the same decisions.
    let mcp = to_mcp_tools(&tools, &ToolFormatOptions::default());
    assert_eq!(mcp.names, rendered.names);
    assert_eq!(mcp.clashes, rendered.clashes);
}

#[test]
fn the_name_map_goes_both_ways_and_serialises_as_an_object() {
    let mut names = NameMap::new();
    assert!(names.is_empty());
    assert_eq!(
        names.insert("catalogue.list_products").unwrap(),
        "catalogue_list_products"
    );
    assert_eq!(names.insert("vehículo.año").unwrap(), "vehiculo_ano");
    let clash = names.insert("vehiculo.ano").unwrap_err();
    assert_eq!(clash.model_name, "vehiculo_ano");
    assert_eq!(clash.kept, "vehículo.año");
    assert_eq!(names.qualified("vehiculo_ano"), Some("vehículo.año"));
    assert_eq!(names.model_name("vehículo.año"), Some("vehiculo_ano"));
    assert_eq!(names.qualified("vehiculo.ano"), None);
    assert_eq!(names.body_field("vehiculo_ano"), None);
    assert_eq!(
        serde_json::to_value(&names).unwrap(),
        json!({"catalogue_list_products": "catalogue.list_products", "vehiculo_ano": "vehículo.año"})
    );
    let pairs: Vec<_> = names.iter().collect();
    assert_eq!(
        pairs[0],
        ("catalogue_list_products", "catalogue.list_products")
    );
}

// ---- control fields ----

fn transfer() -> Interface {
    Interface::new("transfer")
        .in_domain("bank")
        .describe("Move money between accounts")
        .param(Param::new("amount", ParamType::Number).required())
        .param(Param::new("dry_run", ParamType::Boolean).required())
        .param(Param::new("confirm_token", ParamType::String))
        .param(Param::new("idempotency_key", ParamType::String).required())
        .param(Param::new("trace", ParamType::Boolean))
}

#[test]
fn control_fields_are_hidden_from_the_model() {
    let rendered = to_openai_tools(&[transfer()], &ToolFormatOptions::default());
    assert_eq!(
        rendered.tools[0]["function"]["parameters"],
        json!({
            "type": "object",
            "properties": {"amount": {"type": "number"}, "trace": {"type": "boolean"}},
            "required": ["amount"],
        })
    );
    let mcp = to_mcp_tools(&[transfer()], &ToolFormatOptions::default());
    assert_eq!(
        mcp.tools["tools"][0]["inputSchema"],
        rendered.tools[0]["function"]["parameters"]
    );

    let custom = ToolFormatOptions::default().with_control_fields(ControlFields::new(["trace"]));
    let rendered = to_openai_tools(&[transfer()], &custom);
    let properties = rendered.tools[0]["function"]["parameters"]["properties"]
        .as_object()
        .unwrap();
    let shown: Vec<&str> = properties.keys().map(String::as_str).collect();
    assert_eq!(
        shown,
        ["amount", "dry_run", "confirm_token", "idempotency_key"]
    );

    let none = ToolFormatOptions::default().with_control_fields(ControlFields::none());
    let rendered = to_openai_tools(&[transfer()], &none);
    assert_eq!(
        rendered.tools[0]["function"]["parameters"]["required"],
        json!(["amount", "dry_run", "idempotency_key"])
    );
}

#[test]
fn control_fields_are_stripped_from_the_models_arguments() {
    let mut model_args = args(json!({
        "amount": 5, "DRY_RUN": false, "trace": true, "idempotency_key": "k", "confirm_token": null
    }));
    let removed = strip_control_fields(&mut model_args, &ControlFields::default());
    assert_eq!(json!(model_args), json!({"amount": 5, "trace": true}));
    assert_eq!(
        json!(removed),
        json!({"DRY_RUN": false, "idempotency_key": "k", "confirm_token": null})
    );
    // Nested fields of the same name are data, not control.
    let mut nested = args(json!({"options": {"dry_run": true}}));
    assert!(ControlFields::default().strip(&mut nested).is_empty());
    assert_eq!(json!(nested), json!({"options": {"dry_run": true}}));

    let rendered = to_openai_tools(&[transfer()], &ToolFormatOptions::default());
    let entry = tool_call(
        "call_1",
        "bank_transfer",
        &args(json!({"amount": 5, "dry_run": false, "confirm_token": "yes"})),
    );
    let call = parse_tool_call(&entry, &rendered.names, &ToolFormatOptions::default()).unwrap();
    assert_eq!(json!(call.args), json!({"amount": 5}));
    assert_eq!(call.call_text().unwrap(), "@bank.transfer(amount=5)");
}

// ---- rendering ----

#[test]
fn reference_tools_as_openai() {
    let rendered = to_openai_tools(&reference_tools(), &ToolFormatOptions::default());
    assert!(rendered.clashes.is_empty());
    insta::assert_json_snapshot!("reference_openai", rendered.tools);
    assert_eq!(rendered.names.body_field("api_create_user"), Some("body"));
}

#[test]
fn reference_tools_as_mcp() {
    let rendered = to_mcp_tools(&reference_tools(), &ToolFormatOptions::default());
    insta::assert_json_snapshot!("reference_mcp", rendered.tools);
    // The same schemas as OpenAI's parameters, and `render` picks the format by name.
    let openai = render(
        &reference_tools(),
        ToolFormat::Openai,
        &ToolFormatOptions::default(),
    );
    for (mcp, openai) in rendered.tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .zip(openai.tools.as_array().unwrap())
    {
        assert_eq!(mcp["inputSchema"], openai["function"]["parameters"]);
        assert_eq!(mcp["name"], openai["function"]["name"]);
    }
    assert_eq!("MCP".parse::<ToolFormat>().unwrap(), ToolFormat::Mcp);
    assert_eq!(
        "yaml".parse::<ToolFormat>().unwrap_err().to_string(),
        "unknown format 'yaml': use openai or mcp"
    );
}

#[test]
fn a_request_body_under_a_taken_name_moves_aside() {
    let mut wrapper = reference_tools().remove(2);
    let mut body_param = Param::new("body", ParamType::String);
    body_param.location = Location::Query;
    wrapper.params.push(body_param);
    let rendered = to_openai_tools(&[wrapper], &ToolFormatOptions::default());
    let parameters = &rendered.tools[0]["function"]["parameters"];
    assert_eq!(parameters["properties"]["body"]["type"], "string");
    assert_eq!(parameters["properties"]["request_body"]["type"], "object");
    assert_eq!(
        rendered.names.body_field("api_create_user"),
        Some("request_body")
    );
}

/// A sample of BFCL: the first four entries of the `multiple` file.
fn bfcl_sample() -> Vec<Interface> {
    bfcl_entries("BFCL_v4_multiple.json")
        .into_iter()
        .take(4)
        .flat_map(|(id, functions)| {
            load_interfaces(&functions).unwrap_or_else(|e| panic!("{id}: {e}"))
        })
        .collect()
}

#[test]
fn bfcl_sample_as_openai_and_mcp() {
    let tools = bfcl_sample();
    let openai = to_openai_tools(&tools, &ToolFormatOptions::default());
    assert!(openai.clashes.is_empty());
    insta::assert_json_snapshot!("bfcl_openai", openai.tools);
    let mcp = to_mcp_tools(&tools, &ToolFormatOptions::default());
    insta::assert_json_snapshot!("bfcl_mcp", mcp.tools);
}

// ---- the round trip through load_interfaces ----

/// `interface` as it comes back from its OpenAI rendering: what a JSON Schema does not
/// carry is gone (see `to_openai_tools`).
fn expected_back(interface: &Interface, body_field: Option<&str>) -> Interface {
    let mut expected = interface.clone();
    expected.returns = None;
    expected.response_type = None;
    expected.kind = Kind::Function;
    for param in &mut expected.params {
        param.location = Location::Param;
    }
    if let Some(field) = body_field {
        let mut body = Param::new(
            field,
            ParamType::Object {
                properties: std::mem::take(&mut expected.request_body),
            },
        );
        body.description = "The request body, a JSON object".into();
        body.required = interface.request_body.iter().any(|p| p.required);
        if let ParamType::Object { properties } = &mut body.ty {
            for p in properties {
                p.location = Location::Param;
            }
        }
        expected.params.push(body);
    }
    expected.request_body.clear();
    expected
}

/// Loads an OpenAI rendering back and puts the qualified names back from the map.
fn load_back(tools: &Json, names: &NameMap) -> Vec<Interface> {
    let mut back = load_interfaces(tools).unwrap();
    for interface in &mut back {
        let qualified = names.qualified(&interface.name).unwrap().to_owned();
        match qualified.rsplit_once('.') {
            Some((domain, name)) => {
                interface.domain = Some(domain.to_owned());
                interface.name = name.to_owned();
            }
            None => interface.name = qualified,
        }
    }
    back
}

#[test]
fn every_bfcl_function_loads_back_from_its_openai_rendering() {
    let mut count = 0;
    for file in BFCL_FILES {
        for (id, functions) in bfcl_entries(file) {
            let tools = load_interfaces(&functions).unwrap_or_else(|e| panic!("{id}: {e}"));
            let rendered = to_openai_tools(&tools, &ToolFormatOptions::default());
            assert!(rendered.clashes.is_empty(), "{id}: {:?}", rendered.clashes);
            let back = load_back(&rendered.tools, &rendered.names);
            assert_eq!(back.len(), tools.len(), "{id}");
            for (original, back) in tools.iter().zip(&back) {
                assert_eq!(back, &expected_back(original, None), "{id}");
                assert!(is_model_safe(
                    rendered
                        .names
                        .model_name(&original.qualified_name())
                        .unwrap()
                ));
                count += 1;
            }
        }
    }
    assert_eq!(count, 1677);
}

#[test]
fn reference_tools_load_back_from_their_openai_rendering() {
    let tools = reference_tools();
    let rendered = to_openai_tools(&tools, &ToolFormatOptions::default());
    let back = load_back(&rendered.tools, &rendered.names);
    for (original, back) in tools.iter().zip(&back) {
        let model = rendered
            .names
            .model_name(&original.qualified_name())
            .unwrap();
        assert_eq!(
            back,
            &expected_back(original, rendered.names.body_field(model))
        );
    }
}

#[test]
fn nested_objects_arrays_choices_bounds_and_defaults_survive_the_round_trip() {
    let tools = atfunc::load_interfaces_str(
        r#"[{"name": "shop.search", "description": "Search", "parameters": {"type": "object",
            "properties": {
              "query": {"type": "string", "description": "Words"},
              "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
              "ratio": {"type": "number", "minimum": 0.5},
              "sort": {"type": "string", "enum": ["price", "name"]},
              "filters": {"type": "object", "description": "Narrowing",
                "properties": {"brand": {"type": "string"}, "tags": {"type": "array",
                  "items": {"type": "string", "enum": ["new", "sale"]}}},
                "required": ["brand"]},
              "anything": {"description": "Free form"},
              "pairs": {"type": "tuple", "items": {"type": "array", "items": {"type": "float"}}},
              "extra": {}
            },
            "required": ["query", "extra"]}}]"#,
    )
    .unwrap();
    let rendered = to_openai_tools(&tools, &ToolFormatOptions::default());
    insta::assert_json_snapshot!("nested_openai", rendered.tools);
    let back = load_back(&rendered.tools, &rendered.names);
    assert_eq!(back[0], expected_back(&tools[0], None));
}

// ---- the bridge ----

#[test]
fn bound_calls_become_tool_calls() {
    let tools = reference_tools();
    let rendered = to_openai_tools(&tools, &ToolFormatOptions::default());
    let catalog = Catalog::new(tools);
    let mut ids = CallIds::sequential();

    let bound = bind_text(
        r#"@weather.get_current_weather("Paris", unit=celsius)"#,
        &catalog,
    );
    let entry = bound_to_tool_call(&bound, &rendered.names, &mut ids).unwrap();
    assert_eq!(
        entry,
        json!({"id": "call_1", "type": "function", "function": {
            "name": "weather_get_current_weather",
            "arguments": r#"{"location":"Paris","unit":"celsius"}"#
        }})
    );

    let bound = bind_text(
        r#"@api.create_user("ada", "ada@example.org") with_body [[{"username": "ada", "email": "ada@example.org", "age": 36}]]"#,
        &catalog,
    );
    let entry = bound_to_tool_call(&bound, &rendered.names, &mut ids).unwrap();
    assert_eq!(entry["id"], "call_2");
    assert_eq!(entry["function"]["name"], "api_create_user");
    let sent: Json =
        serde_json::from_str(entry["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(
        sent,
        json!({"username": "ada", "email": "ada@example.org",
               "body": {"username": "ada", "email": "ada@example.org", "age": 36}})
    );

    // A call to a tool the model was not given has no model name.
    let hidden = to_openai_tools(&[], &ToolFormatOptions::default());
    assert_eq!(
        bound_to_tool_call(&bound, &hidden.names, &mut ids)
            .unwrap_err()
            .to_string(),
        "'api.create_user' was not given to the model, so it has no model name"
    );
}

#[test]
fn results_become_tool_messages() {
    let text: Result<Json, String> = Ok(json!("It is 21°C in \"Paris\""));
    assert_eq!(
        tool_message("call_1", &text),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "It is 21°C in \"Paris\""})
    );
    let value: Result<Json, String> = Ok(json!({"temp": 21, "tags": ["a", "b"]}));
    assert_eq!(
        tool_message("call_2", &value)["content"],
        r#"{"temp":21,"tags":["a","b"]}"#
    );
    let number: Result<Json, String> = Ok(json!(2.5));
    assert_eq!(tool_message("call_3", &number)["content"], "2.5");
    let failed: Result<Json, String> = Err("Unknown function 'x.y'".into());
    assert_eq!(
        tool_message("call_4", &failed)["content"],
        "Error: Unknown function 'x.y'"
    );
}

#[test]
fn tool_calls_become_atfunc_text_that_binds_to_the_same_arguments() {
    let tools = reference_tools();
    let rendered = to_openai_tools(&tools, &ToolFormatOptions::default());
    let catalog = Catalog::new(tools);
    let options = ToolFormatOptions::default();

    let cases = [
        (
            "weather_get_current_weather",
            json!({"location": "São Paulo, \"SP\"\nBrazil", "unit": "celsius"}),
            r#"@weather.get_current_weather(location="São Paulo, \"SP\"\nBrazil", unit="celsius")"#,
        ),
        (
            "math_calculate_power",
            json!({"base": 2.5, "exponent": -3}),
            "@math.calculate_power(base=2.5, exponent=-3)",
        ),
        (
            "api_create_user",
            json!({"username": "ada", "email": "a@b.c", "body": {"username": "ada", "email": "a@b.c", "tags": [[1, 2]], "note": "]]"}}),
            r#"@api.create_user(username="ada", email="a@b.c") with_body [[{"username":"ada","email":"a@b.c","tags":[[1,2]],"note":"]]"}]]"#,
        ),
    ];
    for (model_name, arguments, expected) in cases {
        let entry = tool_call("call_7", model_name, &args(arguments.clone()));
        let text = tool_call_to_text(&entry, &rendered.names, &options).unwrap();
        assert_eq!(text, expected);
        // Parsed and bound, the text gives back what the model sent.
        let bound = bind_text(&text, &catalog);
        let mut sent = args(arguments);
        let body = sent.remove("body");
        assert_eq!(bound.args, sent, "{text}");
        assert_eq!(bound.body.and_then(|b| b.json), body, "{text}");
    }

    // And both ways: atfunc → OpenAI → atfunc.
    let bound = bind_text(r#"@math.calculate_power(base="3", exponent=2)"#, &catalog);
    let entry = bound_to_tool_call(&bound, &rendered.names, &mut CallIds::sequential()).unwrap();
    let call = parse_tool_call(&entry, &rendered.names, &options).unwrap();
    assert_eq!(call.id, "call_1");
    assert_eq!(call.name, "math.calculate_power");
    assert_eq!(call.model_name, "math_calculate_power");
    assert_eq!(
        bind_text(&call.call_text().unwrap(), &catalog).args,
        bound.args
    );
}

#[test]
fn tool_call_arguments_in_every_shape_openai_sends() {
    let rendered = to_openai_tools(&reference_tools(), &ToolFormatOptions::default());
    let options = ToolFormatOptions::default();
    let with = |arguments: Json| {
        json!({"id": "c", "type": "function",
               "function": {"name": "math_calculate_power", "arguments": arguments}})
    };
    for (arguments, text) in [
        (json!(""), "@math.calculate_power()"),
        (json!(null), "@math.calculate_power()"),
        (json!({"base": 1}), "@math.calculate_power(base=1)"),
        (json!(" {\"base\": 1} "), "@math.calculate_power(base=1)"),
    ] {
        assert_eq!(
            tool_call_to_text(&with(arguments), &rendered.names, &options).unwrap(),
            text
        );
    }
    let messages: Vec<String> = [
        with(json!("[1, 2]")),
        with(json!("{\"base\": ")),
        with(json!(7)),
        with(json!({"base value": 1})),
        json!({"id": "c", "function": {"name": "weather_get_temp", "arguments": "{}"}}),
        json!({"id": "c", "type": "function"}),
        json!("call"),
    ]
    .iter()
    .map(|entry| {
        tool_call_to_text(entry, &rendered.names, &options)
            .unwrap_err()
            .to_string()
    })
    .collect();
    insta::assert_debug_snapshot!("tool_call_errors", messages);

    let body_text = body_call("api.create_user", json!("a ]] b"));
    assert!(matches!(
        body_text.call_text(),
        Err(BridgeError::BodyText { .. })
    ));
    let body_text = body_call("api.create_user", json!("<user name=\"ada\"/>"));
    assert_eq!(
        body_text.call_text().unwrap(),
        r#"@api.create_user() with_body [[<user name="ada"/>]]"#
    );
}

/// A `ToolCall` that carries only a body.
fn body_call(name: &str, body: Json) -> atfunc::interop::ToolCall {
    atfunc::interop::ToolCall {
        id: String::new(),
        name: name.into(),
        model_name: String::new(),
        args: Map::new(),
        body: Some(body),
    }
}

#[test]
fn call_ids() {
    let mut random = CallIds::random();
    let ids: HashSet<String> = (0..1000).map(|_| random.next_id()).collect();
    assert_eq!(ids.len(), 1000);
    for id in &ids {
        assert_eq!(id.len(), 27);
        assert!(id.starts_with("call_"));
        assert!(id[5..].bytes().all(|b| b.is_ascii_alphanumeric()), "{id}");
    }
    // Two generators do not repeat each other.
    assert_ne!(CallIds::random().next_id(), CallIds::random().next_id());

    let mut n = 100;
    let mut custom = CallIds::from_fn(move || {
        n += 1;
        format!("tc-{n}")
    });
    assert_eq!(custom.next_id(), "tc-101");
    assert_eq!(custom.next_id(), "tc-102");
}

#[test]
fn tools_keep_their_names_as_defined_and_calls_come_back_as_call_text() {
    let tools = atfunc::load_interfaces_str(
        r#"[{"name": "get-weather", "parameters": {"type": "object", "properties": {
            "max-days": {"type": "integer"}, "city": {"type": "string"}}}}]"#,
    )
    .unwrap();
    let rendered = to_openai_tools(&tools, &ToolFormatOptions::default());
    assert_eq!(rendered.tools[0]["function"]["name"], "get-weather");
    assert_eq!(rendered.names.qualified("get-weather"), Some("get_weather"));
    let entry = json!({"id": "c1", "type": "function", "function": {"name": "get-weather",
        "arguments": "{\"city\": \"Oslo\", \"max-days\": 2}"}});
    assert_eq!(
        tool_call_to_text(&entry, &rendered.names, &ToolFormatOptions::default()).unwrap(),
        r#"@get_weather(city="Oslo", max_days=2)"#
    );
}
