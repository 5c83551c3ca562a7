use atfunc::interface::{LoadError, LoadOptions};
use atfunc::{bind, parse_events, Catalog, Event};

/// A definition's properties are its parameters in the order they are written, which is
/// the order positional arguments bind in, whatever serde_json's features are (the core
/// leaves its `preserve_order` off: a sorted map would bind `@f(1, 2, 3)` as `alpha=1`).
#[test]
fn loaded_text_keeps_the_written_order_of_properties() {
    let text = r#"[{"name": "f", "parameters": {"type": "object", "properties": {
        "zeta": {"type": "integer"},
        "alpha": {"type": "object", "properties": {"y": {"type": "string"}, "x": {"type": "string"}}},
        "mid": {"type": "integer", "default": 7}}}}]"#;
    let loaded = LoadOptions::default().load_str(text).expect("loads");
    let params = &loaded.interfaces[0].params;
    let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["zeta", "alpha", "mid"]);
    let atfunc::ParamType::Object { properties } = &params[1].ty else {
        panic!("{:?}", params[1].ty)
    };
    let fields: Vec<&str> = properties.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(fields, ["y", "x"]);

    let catalog = Catalog::new(loaded.interfaces);
    let Some(Event::Call(call)) = parse_events("@f(1, {\"y\": \"a\", \"x\": \"b\"}, 3)").pop()
    else {
        panic!("a call")
    };
    let bound = bind(&call, &catalog).expect("binds");
    assert_eq!(bound.args["zeta"], 1);
    assert_eq!(bound.args["mid"], 3);
}

/// The default checks the set as a whole, as the old `load_valid_interfaces` did; the
/// old unchecked `load_interfaces` is `with_validation(false)`.
#[test]
fn the_set_is_checked_unless_asked_not_to() {
    let text = r#"[{"name": "get-temp", "parameters": {"type": "object"}},
                   {"name": "get_temp", "parameters": {"type": "object"}}]"#;
    let Err(LoadError::Invalid(problems)) = LoadOptions::default().load_str(text) else {
        panic!("two tools a call writes alike")
    };
    assert_eq!(problems.len(), 1, "{problems:?}");
    let unchecked = LoadOptions::default()
        .with_validation(false)
        .load_str(text)
        .expect("each definition reads");
    assert_eq!(unchecked.interfaces.len(), 2);

    // A function defined twice is kept once, with a warning; unchecked, twice.
    let twice = r#"[{"name": "ping", "parameters": {"type": "object"}},
                    {"name": "ping", "parameters": {"type": "object"}}]"#;
    let loaded = LoadOptions::default().load_str(twice).expect("loads");
    assert_eq!((loaded.interfaces.len(), loaded.warnings.len()), (1, 1));
    let unchecked = LoadOptions::default()
        .with_validation(false)
        .load_str(twice)
        .expect("loads");
    assert_eq!(unchecked.interfaces.len(), 2);
    assert_eq!(
        atfunc::load_interfaces_str(text).map_err(|e| e.to_string()),
        LoadOptions::default()
            .load_str(text)
            .map(|loaded| loaded.interfaces)
            .map_err(|e| e.to_string())
    );
}
