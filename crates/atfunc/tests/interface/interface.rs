//! Loading interfaces in every shape, and every validation rule with its exact message.

use atfunc::interface::{
    validate_all, validate_toolbox, Kind, LoadLimit, LoadLimits, LoadOptions, Location, Strictness,
};
use atfunc::{load_interfaces, load_interfaces_str, Interface, LoadError, Param, ParamType};
use serde_json::json;

/// Every problem a strict reading finds (`atfunc check --strict`).
fn problems(json: serde_json::Value) -> Vec<String> {
    match LoadOptions::default()
        .with_strictness(Strictness::Strict)
        .load(&json)
    {
        Err(LoadError::Invalid(problems)) => problems.iter().map(ToString::to_string).collect(),
        other => panic!("expected problems, got {other:?}"),
    }
}

fn standard() -> serde_json::Value {
    json!({
        "domain": "weather",
        "name": "get_temp",
        "type": "function",
        "description": "Current temperature",
        "params": {"location": {"type": "string", "isRequired": true, "description": "City"}},
        "returns": "object"
    })
}

#[test]
fn loads_the_standard_format() {
    let tools = load_interfaces(&json!([standard()])).unwrap();
    let t = &tools[0];
    assert_eq!(t.domain.as_deref(), Some("weather"));
    assert_eq!(t.qualified_name(), "weather.get_temp");
    assert_eq!(t.kind, Kind::Function);
    assert_eq!(t.returns.as_deref(), Some("object"));
    assert_eq!(t.params.len(), 1);
    assert!(t.params[0].required);
    assert_eq!(t.params[0].description, "City");
}

#[test]
fn api_wrapper_params_are_path_then_query_and_body_accepts_both_spellings() {
    let tools =
        load_interfaces_str(include_str!("../../../../tests/data/reference_tools.json")).unwrap();
    let api = tools.iter().find(|t| t.kind == Kind::ApiWrapper).unwrap();
    let names: Vec<_> = api
        .params
        .iter()
        .map(|p| (p.name.as_str(), p.location))
        .collect();
    assert_eq!(
        names,
        [("username", Location::Path), ("email", Location::Query)]
    );
    let body: Vec<_> = api
        .request_body
        .iter()
        .map(|p| (p.name.as_str(), p.required))
        .collect();
    assert_eq!(body, [("username", true), ("email", true), ("age", false)]);
    assert!(api.has_body());
}

#[test]
fn loads_openai_tools_and_splits_dotted_names_at_the_last_dot() {
    let tools = load_interfaces(&json!([
        {"type": "function", "function": {
            "name": "sports.basketball.get_score",
            "description": "Score",
            "parameters": {"type": "object",
                "properties": {
                    "team": {"type": "string", "description": "Team"},
                    "season": {"type": ["integer", "null"], "minimum": 1946, "maximum": 2030},
                    "kind": {"enum": ["regular", "playoff"]}
                },
                "required": ["team"]}}},
        {"type": "function", "function": {"name": "ping"}}
    ]))
    .unwrap();
    assert_eq!(tools[0].domain.as_deref(), Some("sports.basketball"));
    assert_eq!(tools[0].name, "get_score");
    let season = &tools[0].params[1];
    assert_eq!(season.ty, ParamType::Integer);
    assert_eq!((season.min, season.max), (Some(1946.0), Some(2030.0)));
    assert!(!season.required);
    assert_eq!(tools[0].params[2].ty, ParamType::String);
    assert_eq!(
        tools[0].params[2].choices,
        Some(vec![json!("regular"), json!("playoff")])
    );
    assert_eq!(tools[1].domain, None);
    assert_eq!(tools[1].qualified_name(), "ping");
    assert!(tools[1].params.is_empty());
}

#[test]
fn loads_bare_schema_functions_with_aliases() {
    let tools = load_interfaces(&json!([{
        "name": "math_toolkit.sum_of_multiples",
        "description": "Sum",
        "parameters": {"type": "dict", "properties": {
            "a": {"type": "float"}, "b": {"type": "int"}, "c": {"type": "bool"},
            "d": {"type": "tuple", "items": {"type": "double"}}, "e": {"type": "any"},
            "año_vehiculo": {"type": "integer", "description": "Año"},
            "f": {"type": "dict", "properties": {"x": {"type": "string"}}, "required": ["x"]}
        }, "required": ["a"]}
    }]))
    .unwrap();
    let t = &tools[0];
    assert_eq!(t.domain.as_deref(), Some("math_toolkit"));
    let types: Vec<&str> = t.params.iter().map(|p| p.ty.name()).collect();
    assert_eq!(
        types,
        ["number", "integer", "boolean", "array", "any", "integer", "object"]
    );
    match &t.params[3].ty {
        ParamType::Array { items: Some(items) } => assert_eq!(items.ty, ParamType::Number),
        other => panic!("{other:?}"),
    }
    match &t.params[6].ty {
        ParamType::Object { properties } => {
            assert_eq!(properties[0].name, "x");
            assert!(properties[0].required);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(t.params[5].name, "año_vehiculo");
}

#[test]
fn a_type_read_from_enum_values_admits_every_value() {
    let tools = load_interfaces(&json!([{"name": "f", "parameters": {"type": "object",
    "properties": {
        "mixed": {"enum": [1, 2.5]},
        "whole": {"enum": [1, 2]},
        "flags": {"enum": [true]}
    }}}]))
    .unwrap();
    let types: Vec<&str> = tools[0].params.iter().map(|p| p.ty.name()).collect();
    assert_eq!(types, ["number", "integer", "boolean"]);
    // Every declared choice binds.
    let catalog = atfunc::Catalog::new(tools);
    let call = atfunc::parse_events("@f(mixed=2.5)")
        .into_iter()
        .find_map(|e| match e {
            atfunc::Event::Call(call) => Some(call),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        atfunc::bind(&call, &catalog).unwrap().args["mixed"],
        json!(2.5)
    );
}

#[test]
fn accepts_a_wrapping_object_and_a_single_definition() {
    assert_eq!(
        load_interfaces(&json!({"tools": [standard()]}))
            .unwrap()
            .len(),
        1
    );
    assert_eq!(load_interfaces(&standard()).unwrap().len(), 1);
    match load_interfaces(&json!(42)) {
        Err(e @ LoadError::NotAList { found: "a number" }) => assert_eq!(
            e.to_string(),
            "expected a list of tool definitions, found a number"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn invalid_json_reports_line_and_column() {
    let err = load_interfaces_str("[\n  {\"name\": }\n]").unwrap_err();
    assert_eq!(
        err.to_string(),
        "not valid JSON: expected value at line 2 column 12"
    );
}

// ---- validation rules, each with its exact message ----

#[test]
fn domain_must_match_the_toolbox() {
    let wrong = Interface::new("get_temp").in_domain("wrong");
    assert_eq!(
        validate_toolbox("weather", &[wrong]).unwrap_err().to_string(),
        "Validation failed for function 'get_temp' in toolbox 'weather': Interface domain 'wrong' does not match toolbox name 'weather'"
    );
    let rootless = Interface::new("get_temp");
    assert_eq!(
        validate_toolbox("weather", std::slice::from_ref(&rootless)).unwrap_err().to_string(),
        "Validation failed for function 'get_temp' in toolbox 'weather': Interface has no domain; it must be the toolbox name 'weather'"
    );
    assert!(validate_toolbox("", &[rootless]).is_ok());
}

#[test]
fn required_fields_must_be_present() {
    let mut def = standard();
    let map = def.as_object_mut().unwrap();
    for key in ["description", "returns", "type", "params"] {
        map.remove(key);
    }
    assert_eq!(
        problems(json!([def])),
        [
            "Validation failed for function 'get_temp' in toolbox 'weather': Missing required field 'type'",
            "Validation failed for function 'get_temp' in toolbox 'weather': Missing required field 'description'",
            "Validation failed for function 'get_temp' in toolbox 'weather': Missing required field 'returns'",
            "Validation failed for function 'get_temp' in toolbox 'weather': Missing required field 'params'",
        ]
    );
    let mut no_domain = standard();
    no_domain.as_object_mut().unwrap().remove("domain");
    assert_eq!(
        problems(json!([no_domain])),
        ["Validation failed for function 'get_temp': Missing required field 'domain'"]
    );
    assert_eq!(
        problems(json!([{"type": "function"}])),
        ["Validation failed for function '#1': Missing required field 'name'"]
    );
}

#[test]
fn type_must_be_function_or_api_wrapper() {
    let mut def = standard();
    def["type"] = json!("func");
    assert_eq!(
        problems(json!([def])),
        ["Validation failed for function 'get_temp' in toolbox 'weather': Field 'type' must be 'function' or 'api-wrapper', found 'func'"]
    );
}

#[test]
fn each_standard_param_needs_type_is_required_and_description() {
    let mut def = standard();
    def["params"] = json!({"location": {}, "unit": {"type": "strng", "isRequired": "yes", "description": "Unit"}});
    assert_eq!(
        problems(json!([def])),
        [
            "Validation failed for function 'get_temp' in toolbox 'weather': Parameter 'location' is missing 'type'",
            "Validation failed for function 'get_temp' in toolbox 'weather': Parameter 'location' is missing 'isRequired'",
            "Validation failed for function 'get_temp' in toolbox 'weather': Parameter 'location' is missing 'description'",
            "Validation failed for function 'get_temp' in toolbox 'weather': Parameter 'unit' has unknown type 'strng': use string, number, integer, boolean, object, array or any (aliases: dict, float, double, int, bool, tuple, list)",
            "Validation failed for function 'get_temp' in toolbox 'weather': Parameter 'unit' field 'isRequired' must be true or false, found a string",
        ]
    );
}

#[test]
fn api_wrapper_param_sections_are_checked() {
    let def = json!({
        "domain": "api", "name": "get_user", "type": "api-wrapper",
        "description": "Get a user", "returns": "object",
        "path_params": ["user_id"],
        "query_params": {"verbose": {"type": "boolean", "description": "More"}}
    });
    assert_eq!(
        problems(json!([def])),
        [
            "Validation failed for function 'get_user' in toolbox 'api': Field 'path_params' must be an object mapping parameter names to definitions, found a list",
            "Validation failed for function 'get_user' in toolbox 'api': Parameter 'verbose' is missing 'isRequired'",
        ]
    );
}

#[test]
fn names_differing_only_in_case_are_refused() {
    let a = Interface::new("get_temp").in_domain("weather");
    let b = Interface::new("Get_Temp").in_domain("weather");
    assert_eq!(
        validate_toolbox("weather", &[a.clone(), b]).unwrap_err().to_string(),
        "Validation failed for function 'Get_Temp' in toolbox 'weather': Function name 'Get_Temp' differs only in case from 'get_temp'; names are matched ignoring case"
    );
    assert_eq!(
        validate_toolbox("weather", &[a.clone(), a]).unwrap_err().to_string(),
        "Validation failed for function 'get_temp' in toolbox 'weather': Function 'get_temp' is defined twice"
    );
    let mut def = standard();
    def["params"] = json!({
        "City": {"type": "string", "isRequired": true, "description": "x"},
        "city": {"type": "string", "isRequired": true, "description": "y"}
    });
    assert_eq!(
        problems(json!([def])),
        ["Validation failed for function 'get_temp' in toolbox 'weather': Parameter 'city' differs only in case from another ('City'); calls match parameter names ignoring case"]
    );
}

#[test]
fn names_the_binder_folds_together_are_refused() {
    // Calls find functions and parameters after Unicode case folding, where `ß` is `ss`,
    // `ﬃ` is `ffi` and a final `ς` is `σ`: names equal under that rule are ambiguous even
    // when their lowercase forms differ.
    for (first, second) in [("maß", "MASS"), ("oﬃce", "office"), ("λόγος", "ΛΌΓΟΣ")] {
        let a = Interface::new(first).in_domain("w");
        let b = Interface::new(second).in_domain("w");
        let catalog = atfunc::Catalog::new(vec![a.clone(), b.clone()]);
        // Both names resolve to the first function, so validation must refuse the pair.
        assert_eq!(catalog.find(&format!("w.{second}")).unwrap().0, 0);
        assert_eq!(
            validate_toolbox("w", &[a, b]).unwrap_err().to_string(),
            format!("Validation failed for function '{second}' in toolbox 'w': Function name '{second}' differs only in case from '{first}'; names are matched ignoring case")
        );
    }
    let mut def = standard();
    def["params"] = json!({
        "straße": {"type": "string", "isRequired": true, "description": "x"},
        "STRASSE": {"type": "string", "isRequired": true, "description": "y"}
    });
    assert_eq!(
        problems(json!([def])),
        ["Validation failed for function 'get_temp' in toolbox 'weather': Parameter 'STRASSE' differs only in case from another ('straße'); calls match parameter names ignoring case"]
    );
}

#[test]
fn names_must_be_identifiers() {
    let bad = Interface::new("get-temp")
        .in_domain("weather")
        .param(Param::new("max temp", ParamType::Number));
    assert_eq!(
        validate_toolbox("weather", &[bad]).unwrap_err().to_string(),
        "Validation failed for function 'get-temp' in toolbox 'weather': Function name 'get-temp' is not an identifier: use letters, digits and '_', not starting with a digit\n\
         Validation failed for function 'get-temp' in toolbox 'weather': Parameter name 'max temp' is not an identifier: use letters, digits and '_', not starting with a digit"
    );
}

#[test]
fn names_that_are_not_identifiers_are_written_as_identifiers_and_kept() {
    let tools = load_interfaces(&json!([
        {"name": "get-weather", "parameters": {"type": "object", "properties": {
            "max-results": {"type": "integer"}, "Content-Type": {"type": "string"},
            "$filter": {"type": "string"}, "headers": {"type": "object", "properties": {
                "X-Trace": {"type": "string"}}}}, "required": ["Content-Type"]}},
        {"name": "my-api.9lives", "parameters": {"type": "object", "properties": {}}},
        {"domain": "std-api", "name": "get user", "type": "function", "description": "x",
         "returns": "object", "params": {"user-id": {"type": "string", "isRequired": true,
         "description": "x"}}},
    ]))
    .unwrap();
    validate_all(&tools).unwrap();
    let names: Vec<(String, String)> = tools
        .iter()
        .map(|t| (t.qualified_name(), t.original_qualified_name()))
        .collect();
    assert_eq!(
        names,
        [
            ("get_weather".into(), "get-weather".into()),
            ("my_api._9lives".into(), "my-api.9lives".into()),
            ("std_api.get_user".into(), "std-api.get user".into()),
        ]
    );
    let params: Vec<(&str, &str, bool)> = tools[0]
        .params
        .iter()
        .map(|p| (p.name.as_str(), p.original_name(), p.required))
        .collect();
    assert_eq!(
        params,
        [
            ("max_results", "max-results", false),
            ("Content_Type", "Content-Type", true),
            ("_filter", "$filter", false),
            ("headers", "headers", false),
        ]
    );
    // Fields inside an object are JSON keys: they keep their spelling.
    let ParamType::Object { properties } = &tools[0].params[3].ty else {
        panic!("an object")
    };
    assert_eq!(properties[0].name, "X-Trace");
    assert_eq!(tools[2].params[0].original_name(), "user-id");
}

#[test]
fn names_written_alike_are_refused_naming_both() {
    assert_eq!(
        problems(json!([{"name": "search", "parameters": {"type": "object", "properties": {
            "max-results": {"type": "integer"}, "max_results": {"type": "integer"}}}}])),
        ["Validation failed for function 'search': Parameters 'max-results' and 'max_results' would both be written 'max_results' in a call; rename one"]
    );
    let tools = json!([
        {"name": "get-weather", "parameters": {"type": "object"}},
        {"name": "get_weather", "parameters": {"type": "object"}},
    ]);
    let unchecked = LoadOptions::default().with_validation(false);
    let tools = unchecked.load(&tools).unwrap().interfaces;
    assert_eq!(
        validate_all(&tools).unwrap_err().to_string(),
        "Validation failed for function 'get_weather': Functions 'get-weather' and 'get_weather' would both be called as 'get_weather'; rename one"
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    let mut bad = standard();
    bad["type"] = json!("x");
    bad.as_object_mut().unwrap().remove("returns");
    let list = problems(
        json!([bad, {"name": "ok", "parameters": {"type": "object", "properties": {"n": 3}}}]),
    );
    assert_eq!(list.len(), 3, "{list:#?}");
    assert_eq!(list[2], "Validation failed for function 'ok': 'parameters.n' must be a JSON Schema object, found a number");
}

/// An object that lists no properties is described by its required keys (BFCL's files);
/// a required key missing from listed properties is refused (see
/// `a_required_key_without_a_property_is_refused`).
#[test]
fn required_keys_of_an_object_without_properties_become_required_untyped_fields() {
    let tools = load_interfaces(&json!([{"name": "f", "parameters": {"type": "object",
        "properties": {"p": {"type": "dict", "required": ["adults"]}}, "required": ["p"]}}]))
    .unwrap();
    let names: Vec<_> = tools[0]
        .params
        .iter()
        .map(|p| (p.name.as_str(), p.ty.name(), p.required))
        .collect();
    assert_eq!(names, [("p", "object", true)]);
    match &tools[0].params[0].ty {
        ParamType::Object { properties } => {
            assert_eq!(
                (properties[0].name.as_str(), properties[0].required),
                ("adults", true)
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn validate_all_checks_each_domain() {
    let tools = vec![
        Interface::new("f").in_domain("a"),
        Interface::new("F").in_domain("a"),
        Interface::new("f").in_domain("b"),
        Interface::new("f"),
    ];
    let errors = validate_all(&tools).unwrap_err();
    assert_eq!(errors.0.len(), 1);
    assert_eq!(errors.0[0].toolbox, "a");
}

// ---- the BFCL definitions ----

const BFCL_FILES: [&str; 4] = [
    "BFCL_v4_simple_python.json",
    "BFCL_v4_multiple.json",
    "BFCL_v4_parallel.json",
    "BFCL_v4_parallel_multiple.json",
];

#[test]
fn every_bfcl_function_loads_validates_and_renders() {
    let mut count = 0;
    for file in BFCL_FILES {
        let path = format!(
            "{}/../../tests/data/bfcl/{file}",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let entry: serde_json::Value = serde_json::from_str(line).unwrap();
            let tools = load_interfaces(&entry["function"])
                .unwrap_or_else(|e| panic!("{}: {e}", entry["id"]));
            validate_all(&tools).unwrap_or_else(|e| panic!("{}: {e}", entry["id"]));
            for tool in &tools {
                let text = atfunc::render::render_interface(tool);
                assert!(text.starts_with(&format!("@{}(", tool.qualified_name())));
                for param in &tool.params {
                    assert!(text.contains(&param.name), "{text}");
                }
                count += 1;
            }
        }
    }
    assert_eq!(count, 1677);
}

#[test]
fn toolboxes_differing_only_in_case_are_refused() {
    let tools = vec![
        Interface::new("get_temp").in_domain("weather"),
        Interface::new("forecast").in_domain("Weather"),
    ];
    assert_eq!(
        validate_all(&tools).unwrap_err().to_string(),
        "Validation failed for function 'forecast' in toolbox 'Weather': Toolbox name 'Weather' differs only in case from 'weather'; names are matched ignoring case"
    );
}

#[test]
fn schemas_generated_from_types_are_written_out_in_place() {
    // What pydantic writes for a tool whose argument holds a nested model and an optional
    // field, in OpenAI's strict mode: `$defs` with `$ref`s, every field required, and the
    // optional one nullable.
    let tools = load_interfaces(&json!([{"type": "function", "function": {
        "name": "shop.order",
        "parameters": {
            "type": "object",
            "$defs": {
                "Item": {"type": "object", "description": "One line of the order",
                         "properties": {"sku": {"type": "string"},
                                        "qty": {"type": "integer", "minimum": 1}},
                         "required": ["sku", "qty"]},
                "Size": {"enum": ["s", "m", "l"], "type": "string"}
            },
            "properties": {
                "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
                "size": {"$ref": "#/$defs/Size", "description": "Shirt size"},
                "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null},
                "gift": {"anyOf": [{"$ref": "#/definitions/Gift"}, {"type": "null"}]},
                "loop": {"$ref": "#/$defs/Loop"}
            },
            "definitions": {"Gift": {"type": "object", "properties": {"to": {"type": "string"}}}},
            "required": ["items", "size", "note", "gift", "loop"],
            "additionalProperties": false
        },
        "strict": true
    }}]))
    .unwrap();
    let params = &tools[0].params;
    let summary: Vec<_> = params
        .iter()
        .map(|p| (p.name.as_str(), p.ty.name(), p.required))
        .collect();
    assert_eq!(
        summary,
        [
            ("items", "array", true),
            ("size", "string", true),
            ("note", "string", false),
            ("gift", "object", false),
            ("loop", "any", true),
        ]
    );
    match &params[0].ty {
        ParamType::Array { items: Some(item) } => match &item.ty {
            ParamType::Object { properties } => {
                assert_eq!(item.description, "One line of the order");
                assert_eq!(properties[1].name, "qty");
                assert_eq!(properties[1].min, Some(1.0));
                assert!(properties[1].required);
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    assert_eq!(params[1].description, "Shirt size");
    assert_eq!(
        params[1].choices,
        Some(vec![json!("s"), json!("m"), json!("l")])
    );
    match &params[3].ty {
        ParamType::Object { properties } => assert_eq!(properties[0].name, "to"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_schema_that_refers_to_itself_reads_as_an_open_value_where_it_recurs() {
    let tools = load_interfaces(&json!([{"name": "tree.walk", "parameters": {
        "type": "object",
        "$defs": {"Node": {"type": "object", "description": "A node", "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}},
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "required": ["root"]}}]))
    .unwrap();
    // Written out once; where it refers back to itself it is an object with any fields.
    let ParamType::Object { properties } = &tools[0].params[0].ty else {
        panic!("{:?}", tools[0].params[0]);
    };
    let ParamType::Array { items: Some(child) } = &properties[1].ty else {
        panic!("{:?}", properties[1]);
    };
    assert_eq!(child.ty, ParamType::Object { properties: vec![] });
    assert_eq!(child.description, "A node");
}

fn count(param: &Param) -> usize {
    1 + match &param.ty {
        ParamType::Object { properties } => properties.iter().map(count).sum(),
        ParamType::Array { items: Some(item) } => count(item),
        _ => 0,
    }
}

/// The parameters of `tools`, JSON Schema functions whose `$defs` are `defs`, whose one
/// property `root` refers to the definition `root`.
fn with_defs(
    name: &str,
    defs: serde_json::Map<String, serde_json::Value>,
    root: &str,
) -> serde_json::Value {
    json!([{"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "$defs": defs,
        "properties": {"root": {"$ref": format!("#/$defs/{root}")}}}}}])
}

#[test]
fn an_object_whose_fields_all_refer_to_itself_stays_small() {
    // The shape that took the gateway to 2.9 GB: ten properties that each refer to the
    // object holding them. It is recursion, so each reference back reads as an open object.
    let props: serde_json::Map<String, serde_json::Value> = (0..10)
        .map(|i| (format!("p{i}"), json!({"$ref": "#/$defs/D"})))
        .collect();
    let mut defs = serde_json::Map::new();
    defs.insert("D".into(), json!({"type": "object", "properties": props}));
    let tools = load_interfaces(&with_defs("bomb", defs, "D")).unwrap();
    assert_eq!(count(&tools[0].params[0]), 11);
}

#[test]
fn references_that_fan_out_are_refused_naming_the_limit() {
    // Ten levels, each definition pointing ten times at the next: written out in full it
    // would be 10^10 schemas. Loading stops at the budget and says which function.
    let mut defs = serde_json::Map::new();
    for level in 0..10 {
        let next = json!({"$ref": format!("#/$defs/L{}", level + 1)});
        let props: serde_json::Map<String, serde_json::Value> =
            (0..10).map(|i| (format!("p{i}"), next.clone())).collect();
        defs.insert(
            format!("L{level}"),
            json!({"type": "object", "properties": props}),
        );
    }
    defs.insert("L10".into(), json!({"type": "string"}));
    let tools = with_defs("box.bomb", defs, "L0");
    match load_interfaces(&tools) {
        Err(LoadError::Limit {
            function,
            limit,
            value,
        }) => {
            assert_eq!(function, "box.bomb");
            assert_eq!(limit, LoadLimit::RefNodes);
            assert_eq!(value, LoadLimits::default().max_ref_nodes);
        }
        other => panic!("{other:?}"),
    }
    let message = load_interfaces(&tools).unwrap_err().to_string();
    assert!(message.contains("function 'box.bomb'"), "{message}");
    assert!(message.contains("10000 schema nodes"), "{message}");
    assert!(message.contains("max_ref_nodes"), "{message}");
    // The limit is a setting: three levels (1 + 10 + 100 + 1000 nodes) fit in a larger one.
    let mut small = serde_json::Map::new();
    for level in 0..3 {
        let next = json!({"$ref": format!("#/$defs/L{}", level + 1)});
        let props: serde_json::Map<String, serde_json::Value> =
            (0..10).map(|i| (format!("p{i}"), next.clone())).collect();
        small.insert(
            format!("L{level}"),
            json!({"type": "object", "properties": props}),
        );
    }
    small.insert("L3".into(), json!({"type": "string"}));
    let small = with_defs("box.small", small, "L0");
    let tight = LoadLimits::default().with_max_ref_nodes(1000);
    assert!(matches!(
        LoadOptions::default()
            .with_limits(tight)
            .load(&small)
            .map(|l| l.interfaces),
        Err(LoadError::Limit {
            limit: LoadLimit::RefNodes,
            value: 1000,
            ..
        })
    ));
    let tools = load_interfaces(&small).unwrap();
    assert_eq!(count(&tools[0].params[0]), 1111);
}

#[test]
fn references_that_copy_a_large_definition_are_counted_by_size() {
    // 1,000 references (three levels of ten) to one 27 KB definition: few expansions,
    // 27 MB written out. The bytes they write out are what counts.
    let big = json!({"type": "string", "enum": (0..3000).map(|i| format!("c{i:05}")).collect::<Vec<_>>()});
    let mut defs = serde_json::Map::new();
    for (name, next) in [("A", "B"), ("B", "C"), ("C", "Big")] {
        let props: serde_json::Map<String, serde_json::Value> = (0..10)
            .map(|i| (format!("p{i}"), json!({"$ref": format!("#/$defs/{next}")})))
            .collect();
        defs.insert(name.into(), json!({"type": "object", "properties": props}));
    }
    defs.insert("Big".into(), big);
    let tools = with_defs("copies", defs, "A");
    assert!(tools.to_string().len() < 40_000);
    match load_interfaces(&tools) {
        Err(LoadError::Limit {
            function, limit, ..
        }) => assert_eq!((function.as_str(), limit), ("copies", LoadLimit::RefBytes)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_chain_of_references_deeper_than_the_limit_is_refused() {
    // 100 definitions, each an object whose one field is the next: not recursion, just deep.
    let mut defs = serde_json::Map::new();
    for level in 0..100 {
        defs.insert(
            format!("L{level}"),
            json!({"type": "object", "properties": {"next": {"$ref": format!("#/$defs/L{}", level + 1)}}}),
        );
    }
    defs.insert("L100".into(), json!({"type": "string"}));
    let tools = with_defs("deep", defs, "L0");
    match load_interfaces(&tools) {
        Err(LoadError::Limit { limit, value, .. }) => {
            assert_eq!((limit, value), (LoadLimit::Depth, 64));
        }
        other => panic!("{other:?}"),
    }
    let deeper = LoadLimits::default().with_max_depth(300);
    let loaded = LoadOptions::default()
        .with_limits(deeper)
        .load(&tools)
        .map(|l| l.interfaces)
        .unwrap();
    assert_eq!(count(&loaded[0].params[0]), 101);
}

/// A parameter no call could satisfy is refused when it is registered: bounds the wrong
/// way round, choices not of its type (nested ones too, named by their path).
#[test]
fn unsatisfiable_parameters_are_refused_at_validation() {
    let tool = Interface::new("pick")
        .in_domain("t")
        .param(
            Param::new("n", ParamType::Integer)
                .min(10.0)
                .max(1.0)
                .choices(["a"]),
        )
        .param(Param::new(
            "filter",
            ParamType::Object {
                properties: vec![Param::new("level", ParamType::Boolean).choices([1, 2])],
            },
        ));
    let errors: Vec<String> = validate_toolbox("t", &[tool])
        .unwrap_err()
        .0
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errors,
        [
            "Validation failed for function 'pick' in toolbox 't': Parameter 'n': its minimum 10 is greater than its maximum 1; no value is allowed",
            "Validation failed for function 'pick' in toolbox 't': Parameter 'n' is integer but none of its choices (\"a\") is an integer",
            "Validation failed for function 'pick' in toolbox 't': Parameter 'filter.level' is boolean but none of its choices (1, 2) is a boolean",
        ]
    );
    // Whole numbers written with a fraction, `null` (a nullable enum), and choices of
    // which some fit, are fine.
    let fine = Interface::new("pick").in_domain("t").param(
        Param::new("n", ParamType::Integer)
            .min(1.0)
            .max(1.0)
            .choices([json!(1.0), json!(null), json!("many")]),
    );
    assert!(validate_toolbox("t", &[fine]).is_ok());
}

/// A strict loader refuses the same, naming the function, instead of leaving it to the
/// grammar.
#[test]
fn an_integer_with_string_choices_is_refused_by_a_strict_load() {
    let problems = problems(json!([{"name": "pick", "parameters": {"type": "object",
        "properties": {"n": {"type": "integer", "enum": ["1", "2"]},
                       "r": {"type": "number", "minimum": 5, "maximum": 0}}}}]));
    assert_eq!(
        problems,
        [
            "Validation failed for function 'pick': 'parameters.r' has a minimum 5 above its maximum 0",
            "Validation failed for function 'pick': Parameter 'n' is integer but none of its choices (\"1\", \"2\") is an integer",
        ]
    );
}

/// A required key that names none of the listed properties is refused, naming the
/// function and the key, whether the object is open or closed: no call could be told what
/// to give for it. Where an object lists no properties at all, its required keys are its
/// only description (BFCL's files have such objects) and stay required keys of any type.
#[test]
fn a_required_key_without_a_property_is_refused_by_a_strict_load() {
    let open = json!([{"name": "f", "parameters": {"type": "object",
        "properties": {"x": {"type": "string"}}, "required": ["x", "y"]}}]);
    assert_eq!(
        problems(open),
        ["Validation failed for function 'f': 'parameters.required' names 'y', which is not one of its properties: describe it under 'parameters.properties' or drop it from 'required'"]
    );
    let closed = json!([{"name": "w.f", "parameters": {"type": "object",
        "properties": {"o": {"type": "object", "properties": {"a": {"type": "integer"}},
            "required": ["b"], "additionalProperties": false}}}}]);
    assert_eq!(
        problems(closed),
        ["Validation failed for function 'f' in toolbox 'w': 'parameters.o.required' names 'b', which is not one of its properties: describe it under 'parameters.o.properties' or drop it from 'required'"]
    );
    let described_by_keys = json!([{"name": "f", "parameters": {"type": "object",
        "properties": {"population": {"type": "dict", "required": ["adults", "children"]}},
        "required": ["population"]}}]);
    let tools = load_interfaces(&described_by_keys).unwrap();
    let ParamType::Object { properties } = &tools[0].params[0].ty else {
        panic!("{:?}", tools[0].params[0].ty)
    };
    let keys: Vec<(&str, bool, &ParamType)> = properties
        .iter()
        .map(|p| (p.name.as_str(), p.required, &p.ty))
        .collect();
    assert_eq!(
        keys,
        [
            ("adults", true, &ParamType::Any),
            ("children", true, &ParamType::Any)
        ]
    );
}

/// Each problem says what kind it is, for a program that sorts them.
#[test]
fn problems_carry_their_kind() {
    use atfunc::interface::ValidationErrorKind as K;
    let tools = [
        Interface::new("2fast").in_domain("t"),
        Interface::new("now").in_domain("other"),
        Interface::new("n")
            .in_domain("t")
            .param(Param::new("x", ParamType::Integer).min(2.0).max(1.0)),
        Interface::new("N").in_domain("t"),
    ];
    let kinds: Vec<K> = validate_toolbox("t", &tools)
        .unwrap_err()
        .0
        .iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(kinds, [K::Name, K::Domain, K::Unsatisfiable, K::Clash]);
    let loaded = LoadOptions::default()
        .with_strictness(Strictness::Strict)
        .load(&json!([{"name": "f", "parameters": {"type": "object",
        "properties": {"a": {"type": "strin"}, "b": {"type": "integer", "enum": ["x"]}}}}]));
    let Err(LoadError::Invalid(problems)) = loaded else {
        panic!("{loaded:?}")
    };
    let kinds: Vec<K> = problems.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [K::Definition, K::Unsatisfiable]);
}

/// Real tool files (BFCL's live sets among them) declare booleans and integers whose choices
/// are strings, with a default among them. Read leniently, as OpenAI accepts them: the
/// choices are kept, the type is the choices' own, every choice binds, and each workaround
/// is one warning, which a strict load refuses instead. A boolean's choices that spell
/// booleans are read as those booleans: the tool declared a boolean, and `"False"` would
/// reach it as a value that reads as true.
#[test]
fn a_boolean_with_string_choices_is_read_as_those_choices_with_a_warning() {
    let tools = json!([{"name": "Hotels_2_SearchHouse", "parameters": {"type": "object",
        "properties": {
            "where_to": {"type": "string"},
            "has_laundry_service": {"type": "boolean", "enum": ["True", "False", "dontcare"],
                                    "default": "dontcare"},
            "number_of_adults": {"type": "integer", "enum": ["1", "2", "dontcare"],
                                 "default": "dontcare"}},
        "required": ["where_to"]}}]);
    let loaded = LoadOptions::default().load(&tools).unwrap();
    let params = &loaded.interfaces[0].params;
    assert_eq!(params[1].ty, ParamType::Any);
    assert_eq!(
        params[1].choices,
        Some(vec![json!(true), json!(false), json!("dontcare")])
    );
    assert_eq!(params[2].ty, ParamType::String);
    let warnings: Vec<String> = loaded.warnings.iter().map(|w| w.warning()).collect();
    assert_eq!(
        warnings,
        [
            "function 'Hotels_2_SearchHouse': Parameter 'has_laundry_service' is boolean but none of its choices (\"True\", \"False\", \"dontcare\") is a boolean; it is read as any with the choices true, false, \"dontcare\"",
            "function 'Hotels_2_SearchHouse': Parameter 'number_of_adults' is integer but none of its choices (\"1\", \"2\", \"dontcare\") is an integer; it is read as string with those choices",
        ]
    );
    let catalog = atfunc::Catalog::new(loaded.interfaces);
    for (text, laundry) in [
        (
            r#"@Hotels_2_SearchHouse("Oslo", has_laundry_service="dontcare")"#,
            json!("dontcare"),
        ),
        (
            r#"@Hotels_2_SearchHouse("Oslo", has_laundry_service=True)"#,
            json!(true),
        ),
        (
            r#"@Hotels_2_SearchHouse("Oslo", has_laundry_service=false)"#,
            json!(false),
        ),
        (
            r#"@Hotels_2_SearchHouse("Oslo", has_laundry_service="False")"#,
            json!(false),
        ),
    ] {
        assert_eq!(
            first_bound(text, &catalog)["has_laundry_service"],
            laundry,
            "{text}"
        );
    }
    assert_eq!(problems(tools).len(), 2);
}

/// A boolean whose choices only spell booleans is a boolean: `force=false` reaches the tool
/// as `false`, never as the text `"False"`, which a tool reads as true.
#[test]
fn a_boolean_whose_choices_spell_booleans_stays_a_boolean() {
    let tools = json!([{"name": "disk.wipe", "parameters": {"type": "object",
        "properties": {"force": {"type": "boolean", "enum": ["True", "False", "true"]}}}}]);
    let loaded = LoadOptions::default().load(&tools).unwrap();
    let force = &loaded.interfaces[0].params[0];
    assert_eq!(force.ty, ParamType::Boolean);
    assert_eq!(force.choices, Some(vec![json!(true), json!(false)]));
    assert_eq!(
        loaded.warnings[0].message,
        "Parameter 'force' is boolean but none of its choices (\"True\", \"False\", \"true\") is a boolean; it is read as boolean with the choices true, false"
    );
    let catalog = atfunc::Catalog::new(loaded.interfaces);
    for (text, force) in [
        ("@disk.wipe(force=false)", false),
        ("@disk.wipe(force=False)", false),
        (r#"@disk.wipe(force="False")"#, false),
        ("@disk.wipe(force=true)", true),
    ] {
        assert_eq!(first_bound(text, &catalog)["force"], json!(force), "{text}");
    }
    assert_eq!(problems(tools).len(), 1);
}

/// The arguments of the first call in `text`, bound.
fn first_bound(text: &str, catalog: &atfunc::Catalog) -> serde_json::Value {
    let call = atfunc::parse_events(text)
        .into_iter()
        .find_map(|event| match event {
            atfunc::Event::Call(call) => Some(call),
            _ => None,
        })
        .unwrap();
    match atfunc::bind(&call, catalog) {
        Ok(bound) => serde_json::Value::Object(bound.args),
        Err(e) => panic!("{text}: {e}"),
    }
}

/// Every contradiction read leniently is worked around and said once; nothing is refused.
/// A strict load lists the same contradictions as problems, without the workaround.
#[test]
fn contradictions_are_worked_around_leniently_and_refused_strictly() {
    let tools = json!([
        {"name": "f", "description": 7, "parameters": {"type": "object",
            "properties": {
                "r": {"type": "number", "minimum": 5, "maximum": 1},
                "e": {"type": "string", "enum": []},
                "m": {"type": "HashMap"},
                "l": {"type": "ArrayList", "items": {"type": "char"}},
                "u": {"type": "strange"},
                "s": "string",
                "d": {"type": "integer", "minimum": 1, "default": 0}},
            "required": ["r", "gone"]}},
        {"name": "f", "description": 7, "parameters": {"type": "object"}},
    ]);
    let loaded = LoadOptions::default().load(&tools).unwrap();
    assert_eq!(loaded.interfaces.len(), 1, "the second 'f' is left out");
    let f = &loaded.interfaces[0];
    let ty = |name: &str| {
        f.params
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.ty.name())
    };
    assert_eq!(
        [ty("m"), ty("l"), ty("u"), ty("s")],
        [Some("object"), Some("array"), Some("any"), Some("any")]
    );
    let r = f.params.iter().find(|p| p.name == "r").unwrap();
    assert_eq!((r.min, r.max, r.required), (None, None, true));
    assert!(f.params.iter().all(|p| p.name != "gone"));
    let warnings: Vec<String> = loaded.warnings.iter().map(|w| w.message.clone()).collect();
    let expected = [
        "field 'description' must be a string, found a number; it is left out",
        "'parameters.e' has an empty list of choices; it is left out",
        "'parameters.r' has a minimum 5 above its maximum 1; both bounds are left out",
        "'parameters.s' must be a JSON Schema object, found a string; it is read as any value",
        "'parameters.u' has unknown type 'strange': use string, number, integer, boolean, object, array or any (aliases: dict, float, double, int, bool, tuple, list); it is read as any",
        "'parameters.required' names 'gone', which is not one of its properties: describe it under 'parameters.properties' or drop it from 'required'; the requirement is left out",
        "Parameter 'd': its default 0 is below its minimum 1; it is kept as declared (binding does not fill it in)",
        "field 'description' must be a string, found a number; it is left out",
        "Function is defined twice, differently; the first definition is used and the second left out",
    ];
    let mut sorted = warnings.clone();
    sorted.sort();
    let mut wanted: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    wanted.sort();
    assert_eq!(sorted, wanted);
    let strict = problems(tools);
    assert_eq!(strict.len(), 8, "{strict:#?}");
    assert!(strict
        .iter()
        .all(|p| !p.contains("left out") && !p.contains("read as")));
}

/// JSON Schema restrictions atfunc does not enforce are said as warnings; a strict load
/// refuses them, since a call that breaks one would reach the tool.
#[test]
fn restrictions_atfunc_does_not_check_are_reported() {
    let tools = json!([{"name": "f", "parameters": {"type": "object", "properties": {
        "code": {"type": "string", "pattern": "^[A-Z]{3}$", "maxLength": 3},
        "tags": {"type": "array", "minItems": 1}}}}]);
    let loaded = LoadOptions::default().load(&tools).unwrap();
    let warnings: Vec<&str> = loaded.warnings.iter().map(|w| w.message.as_str()).collect();
    assert_eq!(
        warnings,
        [
            "'parameters.code' declares pattern, maxLength, which atfunc neither shows the model nor checks; a call that breaks it is not refused, so the tool must check it",
            "'parameters.tags' declares minItems, which atfunc neither shows the model nor checks; a call that breaks it is not refused, so the tool must check it",
        ]
    );
    assert_eq!(
        problems(tools),
        [
            "Validation failed for function 'f': 'parameters.code' declares pattern, maxLength, which atfunc neither shows the model nor checks",
            "Validation failed for function 'f': 'parameters.tags' declares minItems, which atfunc neither shows the model nor checks",
        ]
    );
}

/// The warnings of a lenient load, as messages, and the problems of a strict one.
fn warnings_and_problems(tools: &serde_json::Value) -> (Vec<String>, Vec<String>) {
    let loaded = LoadOptions::default().load(tools).unwrap();
    let warnings = loaded.warnings.iter().map(|w| w.message.clone()).collect();
    let strict = match LoadOptions::default()
        .with_strictness(Strictness::Strict)
        .load(tools)
    {
        Err(LoadError::Invalid(found)) => found.iter().map(|p| p.message.clone()).collect(),
        Ok(_) => Vec::new(),
        Err(other) => panic!("{other}"),
    };
    (warnings, strict)
}

/// Restrictions that were dropped without a word, even by a strict load: each is a
/// warning now, and a problem when read strictly.
#[test]
fn no_restriction_is_dropped_without_a_word() {
    let tools = json!([{"name": "pay", "parameters": {"type": "object",
        "anyOf": [{"required": ["iban"]}, {"required": ["card"]}],
        "properties": {
            "iban": {"type": "string"},
            "card": {"type": "string", "not": {"pattern": "^4"}},
            "amount": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "string", "maxLength": 9}]},
            "ref": {"type": ["string", "integer"]},
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
            "meta": {"type": "object", "additionalProperties": {"type": "string"}},
            "when": {"type": "string", "if": {"minLength": 1}, "then": {"format": "date"}}}}}]);
    let (warnings, strict) = warnings_and_problems(&tools);
    let consequence = "; a call that breaks it is not refused, so the tool must check it";
    assert_eq!(
        warnings,
        [
            "'parameters.card' declares not, which atfunc neither shows the model nor checks".to_owned() + consequence,
            "'parameters.amount' declares anyOf, which atfunc neither shows the model nor checks".to_owned() + consequence,
            "'parameters.ref' may be any of the types string, integer, which atfunc neither shows the model nor checks; it is read as any value, so the tool must check the type".to_owned(),
            "'parameters.pair.items' is a list of schemas, one per position, which atfunc neither shows the model nor checks; its items are read as any values, so the tool must check them".to_owned(),
            "'parameters.meta' declares additionalProperties, which atfunc neither shows the model nor checks".to_owned() + consequence,
            "'parameters.when' declares if, which atfunc neither shows the model nor checks".to_owned() + consequence,
            "'parameters' declares anyOf, which atfunc neither shows the model nor checks".to_owned() + consequence,
        ]
    );
    assert_eq!(strict.len(), warnings.len(), "{strict:#?}");
    assert!(strict
        .iter()
        .all(|p| !p.contains("not refused") && !p.contains("read as")));
}

/// What can be enforced is: `const` as the only choice, a `required` written as one name,
/// draft 3's `"required": true` on a property, `"additionalProperties": false` on an
/// object with properties, and `anyOf`/`allOf` of one schema as that schema.
#[test]
fn restrictions_that_can_be_enforced_are_enforced() {
    let tools = json!([{"name": "pay", "parameters": {"type": "object",
        "required": "amount",
        "properties": {
            "amount": {"type": "number"},
            "currency": {"type": "string", "const": "EUR"},
            "memo": {"type": "string", "required": true},
            "payee": {"type": "object", "additionalProperties": false,
                      "properties": {"iban": {"type": "string"}}},
            "fee": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 5}, {"type": "null"}]},
            "tip": {"allOf": [{"type": "integer", "maximum": 10}], "description": "Tip"}}}}]);
    let (warnings, strict) = warnings_and_problems(&tools);
    assert_eq!(
        warnings,
        [
            "'parameters.required' must be a list of property names, found a string; it is read as [\"amount\"]",
            "'parameters.currency' declares const \"EUR\"; it is read as its only choice",
            "'parameters.memo' says \"required\": true; JSON Schema lists required properties in 'parameters.required'; it is read as required",
        ]
    );
    // The const loses nothing: only what contradicts JSON Schema is refused strictly.
    assert_eq!(
        strict,
        [
            "'parameters.required' must be a list of property names, found a string",
            "'parameters.memo' says \"required\": true; JSON Schema lists required properties in 'parameters.required'",
        ]
    );
    let loaded = LoadOptions::default().load(&tools).unwrap();
    let pay = &loaded.interfaces[0];
    let param = |name: &str| pay.params.iter().find(|p| p.name == name).unwrap();
    assert!(param("amount").required && param("memo").required);
    assert_eq!(param("currency").choices, Some(vec![json!("EUR")]));
    assert!(param("payee").closed);
    assert_eq!((param("fee").min, param("fee").max), (Some(0.0), Some(5.0)));
    assert_eq!(
        (param("tip").ty.name(), param("tip").max),
        ("integer", Some(10.0))
    );
    let catalog = atfunc::Catalog::new(loaded.interfaces.clone());
    let bind_text = |text: &str| {
        let call = atfunc::parse_events(text)
            .into_iter()
            .find_map(|event| match event {
                atfunc::Event::Call(call) => Some(call),
                _ => None,
            })
            .unwrap();
        atfunc::bind(&call, &catalog).map_err(|e| e.to_string())
    };
    assert!(bind_text(
        r#"@pay(amount=5, memo="rent", currency="EUR", payee={"iban": "X"}, tip=3)"#
    )
    .is_ok());
    for (text, error) in [
        (r#"@pay(memo="rent")"#, "Missing required parameter for function 'pay': amount"),
        (r#"@pay(amount=5)"#, "Missing required parameter for function 'pay': memo"),
        (
            r#"@pay(amount=5, memo="rent", currency="USD")"#,
            "expected one of \"EUR\", got \"USD\"",
        ),
        (
            r#"@pay(amount=5, memo="rent", payee={"iban": "X", "ibna": "Y"})"#,
            "Unknown parameter 'payee.ibna' for function 'pay': did you mean 'payee.iban'? Valid parameters are payee.iban",
        ),
        (r#"@pay(amount=5, memo="rent", fee=9)"#, "expected a number from 0 to 5, got 9"),
        (r#"@pay(amount=5, memo="rent", tip=11)"#, "of at most 10, got 11"),
    ] {
        let refused = bind_text(text).unwrap_err();
        assert!(refused.contains(error), "{text}: {refused}");
    }
    // The schema written back says the object is closed, and reads back the same.
    let exported = atfunc::interop::param_schema(param("payee"));
    assert_eq!(exported["additionalProperties"], json!(false));
}
