//! Snapshots of the rendered interface text: the reference's examples, the whole prompt,
//! and a sample of BFCL functions.

use atfunc::render::render_interface;
use atfunc::render::{render_interface_with, PromptOptions};
use atfunc::{load_interfaces, load_interfaces_str, render_prompt, Interface};
use atfunc::{Param, ParamType};
use serde_json::json;

fn reference_tools() -> Vec<Interface> {
    load_interfaces_str(include_str!("../../../../tests/data/reference_tools.json")).unwrap()
}

#[test]
fn reference_examples_render_exactly_as_the_reference() {
    let tools = reference_tools();
    assert_eq!(
        render_interface(&tools[0]),
        "@weather.get_current_weather( <*location>, <unit> )\n\
         Description: Get current weather information for a location\n"
    );
    assert_eq!(
        render_interface(&tools[1]),
        "@math.calculate_power( <*base{number}>, <*exponent{number}> )\n\
         Description: Calculate base raised to the power of exponent\n"
    );
    insta::assert_snapshot!("reference_api_wrapper", render_interface(&tools[2]));
}

#[test]
fn separator_follows_each_function() {
    let tools = reference_tools();
    insta::assert_snapshot!(
        "reference_with_separator",
        render_interface_with(&tools[0], &PromptOptions::default().with_separator(true))
    );
}

#[test]
fn parameter_descriptions_follow_each_function_when_asked() {
    let tools = load_interfaces(&json!([{
        "name": "triangle_area",
        "description": "The area of a triangle.",
        "parameters": {"type": "object", "properties": {
            "base": {"type": "number", "description": "The length of the base,\n in cm."},
            "height": {"type": "number", "description": "  "},
            "corner": {"type": "object", "description": "A corner.",
                "properties": {"x": {"type": "number"}}}},
            "required": ["base"]}
    }]))
    .unwrap();
    let described = PromptOptions::default()
        .with_param_descriptions(true)
        .with_separator(true);
    // After the object shapes, before the separator; one line each, blank ones left out.
    insta::assert_snapshot!(
        "parameter_descriptions",
        render_interface_with(&tools[0], &described)
    );
    // Off by default, as the reference renders a function.
    assert!(!render_prompt(&tools, &PromptOptions::default()).contains("Parameters:"));
    // A function without a described parameter gets no empty block.
    let bare = Interface::new("ping").param(Param::new("host", ParamType::String));
    assert_eq!(
        render_interface_with(&bare, &described),
        render_interface_with(&bare, &PromptOptions::default().with_separator(true))
    );
}

#[test]
fn root_functions_render_without_a_domain() {
    let tools = reference_tools();
    assert!(render_interface_with(
        &tools[0],
        &PromptOptions::default()
            .with_root(Some("weather"))
            .with_separator(false)
    )
    .starts_with("@get_current_weather( <*location>, <unit> )\n"));
    assert!(render_interface_with(
        &tools[1],
        &PromptOptions::default()
            .with_root(Some("weather"))
            .with_separator(false)
    )
    .starts_with("@math."));
    let root = Interface::new("ping").describe("Check the service");
    assert_eq!(
        render_interface(&root),
        "@ping()\nDescription: Check the service\n"
    );
}

#[test]
fn choices_and_bounds_reach_the_model() {
    let mut unit = Param::new("unit", ParamType::String);
    unit.choices = Some(vec![json!("celsius"), json!("fahrenheit")]);
    let mut days = Param::new("days", ParamType::Integer).required();
    days.min = Some(1.0);
    days.max = Some(16.0);
    let mut level = Param::new("level", ParamType::Integer);
    level.choices = Some(vec![json!(1), json!(2), json!(3)]);
    let mut ratio = Param::new("ratio", ParamType::Number);
    ratio.min = Some(0.5);
    let mut count = Param::new("count", ParamType::Integer);
    count.max = Some(10.0);
    let tool = Interface::new("forecast")
        .in_domain("weather")
        .describe("Daily forecast")
        .param(Param::new("location", ParamType::String).required())
        .param(unit)
        .param(days)
        .param(level)
        .param(ratio)
        .param(count);
    assert_eq!(
        render_interface(&tool),
        "@weather.forecast( <*location>, <unit{\"celsius\"|\"fahrenheit\"}>, <*days{integer 1..16}>, \
         <level{integer: 1|2|3}>, <ratio{number >=0.5}>, <count{integer <=10}> )\n\
         Description: Daily forecast\n"
    );
}

#[test]
fn multi_line_descriptions_stay_on_one_line() {
    let tool = Interface::new("b")
        .in_domain("a")
        .describe("First line.\n  Second line.");
    assert_eq!(
        render_interface(&tool),
        "@a.b()\nDescription: First line. Second line.\n"
    );
}

#[test]
fn whole_prompt() {
    insta::assert_snapshot!(
        "prompt_reference",
        render_prompt(&reference_tools(), &PromptOptions::default())
    );
}

#[test]
fn bfcl_sample() {
    let mut out = String::new();
    for file in ["BFCL_v4_simple_python.json", "BFCL_v4_multiple.json"] {
        let path = format!(
            "{}/../../tests/data/bfcl/{file}",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap();
        // Every 40th entry: a spread of shapes without a huge snapshot.
        for line in text.lines().step_by(40) {
            let entry: serde_json::Value = serde_json::from_str(line).unwrap();
            out.push_str(&format!("# {}\n", entry["id"].as_str().unwrap()));
            for tool in load_interfaces(&entry["function"]).unwrap() {
                out.push_str(&render_interface(&tool));
            }
            out.push('\n');
        }
    }
    insta::assert_snapshot!("bfcl_sample", out);
}

#[test]
fn fields_of_structured_parameters_follow_the_description() {
    let tools = load_interfaces(
        &json!([{"name": "shop.order", "description": "Place an order",
        "parameters": {"type": "object", "properties": {
            "items": {"type": "array", "items": {"type": "object",
                "properties": {"sku": {"type": "string"},
                               "qty": {"type": "integer", "minimum": 1},
                               "gift": {"type": "object", "properties": {"to": {"type": "string"}},
                                        "required": ["to"]}},
                "required": ["sku", "qty"]}},
            "tags": {"type": "array", "items": {"type": "string"}},
            "rush": {"type": "boolean"}},
        "required": ["items"]}}]),
    )
    .unwrap();
    assert_eq!(
        render_interface(&tools[0]),
        "@shop.order( <*items{array}>, <tags{array}>, <rush{boolean}> )\n\
         Description: Place an order\n\
         items: [ { <*sku>, <*qty{integer >=1}>, gift: { <*to> } } ]\n"
    );
}

/// `enum` on an array parameter restricts each element: the model reads it so, and the
/// OpenAI and MCP schemas carry it on `items`, where JSON Schema means that.
#[test]
fn choices_of_array_elements() {
    let tools = load_interfaces(&json!([{"name": "stats.report", "parameters": {
        "type": "object", "properties": {
            "metrics": {"type": "array", "items": {"type": "string"}, "enum": ["view", "click"]},
            "tags": {"type": "array", "enum": ["a", "b"]},
            "levels": {"type": "array", "items": {"type": "integer", "enum": [1, 2, 3]}},
            "days": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 7}},
            "pairs": {"type": "array", "enum": [["a", "b"], ["c"]]},
            "names": {"type": "array", "items": {"type": "string"}}},
        "required": ["metrics"]}}]))
    .unwrap();
    assert_eq!(
        render_interface(&tools[0]),
        "@stats.report( <*metrics{array of \"view\"|\"click\"}>, <tags{array of \"a\"|\"b\"}>, \
         <levels{array of integer: 1|2|3}>, <days{array of integer 1..7}>, \
         <pairs{array: [\"a\",\"b\"]|[\"c\"]}>, <names{array}> )\n"
    );

    let openai = atfunc::interop::to_openai_tools(&tools, &Default::default()).tools;
    let properties = &openai[0]["function"]["parameters"]["properties"];
    assert_eq!(
        properties["metrics"],
        json!({"type": "array", "items": {"type": "string", "enum": ["view", "click"]}})
    );
    assert_eq!(
        properties["tags"],
        json!({"type": "array", "items": {"enum": ["a", "b"]}})
    );
    assert_eq!(
        properties["pairs"],
        json!({"type": "array", "enum": [["a", "b"], ["c"]]})
    );
    let mcp = atfunc::interop::to_mcp_tools(&tools, &Default::default()).tools;
    assert_eq!(
        mcp["tools"][0]["inputSchema"]["properties"]["metrics"],
        properties["metrics"]
    );
    // What goes out loads back with the choices on the elements.
    let back = load_interfaces(&openai).unwrap();
    let params = |tool: &Interface| {
        let text = render_interface(tool);
        text.split_once('(').map(|(_, rest)| rest.to_owned())
    };
    assert_eq!(params(&back[0]), params(&tools[0]));
}

// ---------------------------------------------------------------- the preamble's example

/// The one call in `text`, which must be nothing but that call.
fn sole_call(text: &str) -> Result<atfunc::Call, String> {
    let mut calls = Vec::new();
    for event in atfunc::parse_events(text) {
        match event {
            atfunc::Event::Call(call) => calls.push(call),
            atfunc::Event::CallStarted { .. } => {}
            other => return Err(format!("{text}: {other:?}")),
        }
    }
    match calls.as_slice() {
        [call] if call.span.start == 0 && call.span.end == text.len() as u64 => Ok(call.clone()),
        _ => Err(format!("{text}: {} calls", calls.len())),
    }
}

fn example_line(prompt: &str) -> Option<&str> {
    let (_, rest) = prompt.split_once("for example:\n")?;
    rest.lines().next()
}

#[test]
fn the_example_calls_a_listed_function() {
    let tools = load_interfaces_str(include_str!("../../../../examples/demo/tools.json")).unwrap();
    // The weather function reads best: a required text parameter, then one by name (one
    // with choices, so the first choice shows).
    assert_eq!(
        example_line(&render_prompt(&tools, &PromptOptions::default())),
        Some(r#"@weather.get_current_weather("<location>", unit="<unit>")"#)
    );
    let power = &tools[1..2];
    assert_eq!(
        example_line(&render_prompt(power, &PromptOptions::default())),
        Some("@math.calculate_power(<base>, exponent=<exponent>)")
    );
    // Called as the listing names it: without the domain of the root toolbox.
    let root = PromptOptions::default().with_root(Some("weather"));
    assert_eq!(
        example_line(&render_prompt(&tools, &root)),
        Some(r#"@get_current_weather("<location>", unit="<unit>")"#)
    );
    // An api-wrapper with a required body shows one.
    assert_eq!(
        atfunc::render::example_call(&reference_tools()[2]),
        r#"@api.create_user("<username>", email="<email>") with_body [[ {"username": "<username>", "email": "<email>"} ]]"#
    );
    // A function without arguments is never the example (its call would run as written);
    // when none takes one, a made-up function is, named as nothing listed is.
    let plain =
        |names: &[&str]| -> Vec<Interface> { names.iter().map(|n| Interface::new(*n)).collect() };
    let mut with_pi = plain(&["pi"]);
    with_pi.extend_from_slice(power);
    assert_eq!(
        example_line(&render_prompt(&with_pi, &PromptOptions::default())),
        Some("@math.calculate_power(<base>, exponent=<exponent>)")
    );
    assert_eq!(
        example_line(&render_prompt(
            &plain(&["pi", "FUNCTION_NAME"]),
            &PromptOptions::default()
        )),
        Some(r#"@function_name2("<text>", number=<number>)"#)
    );
    let none = render_prompt(&[], &PromptOptions::default());
    assert!(
        none.starts_with("You can call the functions listed below. To call one, write @, its name and its arguments in parentheses.\nRules:\n"),
        "{none}"
    );
}

/// Every problem of a refused call is a placeholder, of the function the example names.
fn refused_for_placeholders(
    example: &str,
    catalog: &atfunc::Catalog,
    function: &str,
) -> Result<(), String> {
    let call = sole_call(example)?;
    match atfunc::bind(&call, catalog) {
        Ok(_) => Err(format!("{example}: binds, so it would run as written")),
        Err(refused) => {
            for problem in refused.problems() {
                match problem {
                    atfunc::BindError::Placeholder {
                        function: named, ..
                    } if named == function => {}
                    other => return Err(format!("{example}: {other}")),
                }
            }
            Ok(())
        }
    }
}

#[test]
fn example_values_are_placeholders_that_never_bind() {
    let tools = load_interfaces(&json!([{"name": "shop.order", "parameters": {
        "type": "object", "properties": {
            "customer_email": {"type": "string"},
            "quantity": {"type": "integer", "minimum": 2.5, "maximum": 9},
            "discount": {"type": "number", "maximum": 0.25},
            "size": {"type": "string", "enum": [1, "XL", "L"]},
            "metrics": {"type": "array", "items": {"type": "string"}, "enum": ["view", "click"]},
            "items": {"type": "array", "items": {"type": "object",
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1},
                               "note": {"type": "string"}},
                "required": ["sku", "qty"]}},
            "gift": {"type": "boolean"},
            "anything": {},
            "destinationCities": {"type": "array", "items": {"type": "string"}}},
        "required": ["customer_email", "quantity", "discount", "size", "metrics", "items",
                     "gift", "anything", "destinationCities"]}}]))
    .unwrap();
    let example = atfunc::render::example_call(&tools[0]);
    assert_eq!(
        example,
        "@shop.order(\"<customer_email>\", quantity=<quantity>, discount=<discount>, size=\"<size>\", \
         metrics=<metrics>, items=<items>, gift=<gift>, anything=<anything>, \
         destinationCities=<destinationCities>)"
    );
    let catalog = atfunc::Catalog::new(tools);
    refused_for_placeholders(&example, &catalog, "shop.order").unwrap();
    let refused = atfunc::bind(&sole_call(&example).unwrap(), &catalog).unwrap_err();
    assert_eq!(refused.problems().len(), 9, "{refused}");
    // The message says what to write instead.
    let one = sole_call("@shop.order(<customer_email>)").unwrap();
    let refused = atfunc::bind(&one, &catalog).unwrap_err();
    let messages: Vec<String> = refused.problems().iter().map(|p| p.to_string()).collect();
    assert_eq!(
        messages[1],
        "Invalid value for parameter 'customer_email' of function 'shop.order': <customer_email> \
         is a placeholder; write the value itself, text in double quotes"
    );
    // A quoted "<b>" is text like any other.
    let tag = load_interfaces(
        &json!([{"name": "html.wrap", "parameters": {"type": "object",
        "properties": {"tag": {"type": "string"}}, "required": ["tag"]}}]),
    )
    .unwrap();
    let catalog = atfunc::Catalog::new(tag);
    let quoted = sole_call(r#"@html.wrap("<b>")"#).unwrap();
    atfunc::bind(&quoted, &catalog).unwrap();
    // ... but the quoted placeholder of the parameter itself is the example copied.
    let copied = sole_call(r#"@html.wrap("<tag>")"#).unwrap();
    assert_eq!(
        atfunc::bind(&copied, &catalog).unwrap_err().to_string(),
        "Invalid value for parameter 'tag' of function 'html.wrap': \"<tag>\" is a \
         placeholder; write the value itself, text in double quotes"
    );
}

/// The example of every BFCL function parses as one call of that function and is refused
/// for its placeholders alone, and each prompt's example is one of them.
#[test]
fn no_bfcl_example_runs_as_written() {
    let mut functions = 0;
    let mut failures = Vec::new();
    for file in [
        "BFCL_v4_simple_python.json",
        "BFCL_v4_multiple.json",
        "BFCL_v4_parallel.json",
        "BFCL_v4_parallel_multiple.json",
    ] {
        let path = format!(
            "{}/../../tests/data/bfcl/{file}",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let entry: serde_json::Value = serde_json::from_str(line).unwrap();
            let tools = load_interfaces(&entry["function"]).unwrap();
            let catalog = atfunc::Catalog::new(tools.clone());
            let mut examples = Vec::new();
            for tool in &tools {
                functions += 1;
                let example = atfunc::render::example_call(tool);
                if let Err(e) = refused_for_placeholders(&example, &catalog, &tool.qualified_name())
                {
                    failures.push(format!("{}: {e}", entry["id"]));
                }
                examples.push(example);
            }
            let prompt = render_prompt(&tools, &PromptOptions::default());
            let shown = example_line(&prompt).unwrap_or_default();
            assert!(
                examples.iter().any(|e| e == shown),
                "{}: {shown}",
                entry["id"]
            );
        }
    }
    assert!(functions > 1000, "{functions} functions");
    assert!(
        failures.is_empty(),
        "{} of {functions}:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn bfcl_examples() {
    let mut out = String::new();
    for file in ["BFCL_v4_simple_python.json", "BFCL_v4_multiple.json"] {
        let path = format!(
            "{}/../../tests/data/bfcl/{file}",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap();
        // Every 40th entry, as in the rendering sample: the prompt's example first.
        for line in text.lines().step_by(40) {
            let entry: serde_json::Value = serde_json::from_str(line).unwrap();
            let tools = load_interfaces(&entry["function"]).unwrap();
            let prompt = render_prompt(&tools, &PromptOptions::default());
            out.push_str(&format!(
                "# {}: {}\n",
                entry["id"].as_str().unwrap(),
                example_line(&prompt).unwrap()
            ));
            for tool in &tools {
                out.push_str(&atfunc::render::example_call(tool));
                out.push('\n');
            }
            out.push('\n');
        }
    }
    insta::assert_snapshot!("bfcl_examples", out);
}

#[test]
fn a_body_field_with_element_choices_is_a_list_in_the_skeleton() {
    let mut metrics = Param::new("metrics", ParamType::Array { items: None }).required();
    metrics.choices = Some(vec![json!("view"), json!("click")]);
    metrics.location = atfunc::interface::Location::Body;
    let mut report = Interface::new("report").in_domain("api");
    report.kind = atfunc::interface::Kind::ApiWrapper;
    report.request_body = vec![metrics];
    assert_eq!(
        render_interface(&report),
        "@api.report() with_body [[\n{\n  \"metrics\": []\n}\n]]\n\
         Body: <*metrics{array of \"view\"|\"click\"}>\n"
    );
    assert_eq!(
        atfunc::render::example_call(&report),
        r#"@api.report() with_body [[ {"metrics": <metrics>} ]]"#
    );
}
