//! The prompt's placeholders copied as values: each spelling the prompt could show for a
//! parameter is refused, and nothing else is.

use atfunc::{bind, load_interfaces, parse_events, BindError, Catalog, Event};
use serde_json::{json, Value as Json};

/// Binds the one call of `text` against `catalog`.
fn bound(text: &str, catalog: &Catalog) -> Result<Json, BindError> {
    let call = parse_events(text)
        .into_iter()
        .find_map(|event| match event {
            Event::Call(call) => Some(call),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no call in {text}"));
    bind(&call, catalog).map(|bound| Json::Object(bound.args))
}

fn is_placeholder(result: &Result<Json, BindError>) -> bool {
    match result {
        Err(error) => error
            .problems()
            .iter()
            .any(|problem| matches!(problem, BindError::Placeholder { .. })),
        Ok(_) => false,
    }
}

/// Text parameters named like the markup and code they take.
fn markup() -> Catalog {
    let properties: serde_json::Map<String, Json> =
        ["html", "body", "xml", "p", "code", "svg", "template", "T"]
            .into_iter()
            .map(|name| (name.to_owned(), json!({"type": "string"})))
            .collect();
    Catalog::new(
        load_interfaces(&json!([{"name": "page.render", "parameters": {
            "type": "object", "properties": properties}}]))
        .unwrap(),
    )
}

#[test]
fn text_that_holds_a_placeholder_is_a_value() {
    let catalog = markup();
    for (name, value) in [
        ("html", "<html><body>hi</body></html>"),
        ("body", "<body>text</body>"),
        ("xml", "<xml><a/></xml>"),
        ("p", "<p>One paragraph.</p>"),
        ("code", "<code>x</code>"),
        ("svg", "<svg><rect/></svg>"),
        ("template", "<template><slot/></template>"),
        ("T", "<T> void sort(List<T> list)"),
        ("html", "<html> lang=en"),
    ] {
        let text = format!("@page.render({name}={})", json!(value));
        assert_eq!(
            bound(&text, &catalog).map(|args| args[name].clone()),
            Ok(json!(value)),
            "{text}"
        );
    }
}

/// A mail tool whose parameter names are not all identifiers, with a field inside an
/// object, as a client (or the gateway's client) defines them.
fn mail() -> Catalog {
    Catalog::new(
        load_interfaces(
            &json!([{"name": "mail.send", "parameters": {"type": "object",
            "properties": {
                "to": {"type": "string"},
                "max-results": {"type": "string"},
                "filter": {"type": "object", "properties": {"created-after": {"type": "string"}}},
                "unit": {"type": "string", "enum": ["<unit>", "c"]}},
            "required": ["to"]}}]),
        )
        .unwrap(),
    )
}

#[test]
fn every_spelling_the_prompt_could_show_is_a_placeholder() {
    let catalog = mail();
    for args in [
        r#"to="<to>""#,
        r#"to="<*to>""#,
        r#"to="<to{string}>""#,
        r#"to="<*to{string}>""#,
        r#"to="<To>""#,
        r#"to="<TO>""#,
        r#"to=" <to> ""#,
        r#"to="<to> unit=<unit>""#,
        r#"to="<to>, unit=\"<unit>\"""#,
        // The client's spelling, which the gateway's model may see in a native schema.
        r#"to="a", max_results="<max-results>""#,
        r#"to="a", max_results="<*max_results{string}>""#,
        r#"to="a", max_results="<Max-Results>""#,
        r#"to="a", filter={"created-after": "<created-after>"}"#,
        r#"to="a", filter={"created-after": "<created_after>"}"#,
        r#"to="a", filter={"created-after": "<created-after{string}>"}"#,
    ] {
        let text = format!("@mail.send({args})");
        let result = bound(&text, &catalog);
        assert!(is_placeholder(&result), "{text}: {result:?}");
    }
}

#[test]
fn another_parameters_placeholder_or_a_declared_choice_is_a_value() {
    let catalog = mail();
    for args in [
        r#"to="<max-results>""#,
        r#"to="<tos>""#,
        r#"to="x <to>""#,
        r#"to="<to> and more""#,
        r#"to="<to{string}""#,
        r#"to="<>""#,
        r#"to="a", unit="<unit>""#,
        r#"to="a", filter={"created-after": "<to>"}"#,
    ] {
        let text = format!("@mail.send({args})");
        let result = bound(&text, &catalog);
        assert!(result.is_ok(), "{text}: {result:?}");
    }
}
