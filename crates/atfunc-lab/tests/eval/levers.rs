//! The levers measured on a real model (EVAL.md), checked on the grammar's language and the
//! prompt without one: a guarded string start, parameter descriptions, no lead-in, bounds,
//! and values grounded in the question (its numbers, runs of its words).

use atfunc::grammar::grammar;
use atfunc::grammar::Choice;
use atfunc::{load_interfaces, GrammarOptions};
use atfunc_lab::eval::{load_cases, prompt, Mode, Variant};
use serde_json::json;

fn derivative() -> Vec<atfunc::Interface> {
    load_interfaces(
        &json!([{"name": "calculus.derivative", "parameters": {"type": "dict",
        "properties": {"function": {"type": "string"}, "x": {"type": "integer"}},
        "required": ["function"]}}]),
    )
    .unwrap()
}

/// The four answers of the first 68 `simple_python` cases that did not bind all opened
/// their string with the token `",` and ran on inside it: with the guard the grammar has
/// no such string, and every other string is still there.
#[test]
fn a_guarded_string_does_not_open_with_a_comma_or_a_parenthesis() {
    let guarded = GrammarOptions::default()
        .with_choice(Choice::Required)
        .with_guard_string_start(true);
    let plain = guarded.clone().with_guard_string_start(false);
    let with = grammar(&derivative(), &guarded).unwrap();
    let without = grammar(&derivative(), &plain).unwrap();
    for bad in [
        r#"@calculus.derivative(function=", f(x) = 2x^2 + 3x")"#,
        r#"@calculus.derivative(function=")")"#,
        r#"@calculus.derivative(function=",x^2,interval")"#,
    ] {
        assert!(without.accepts(bad), "the plain grammar takes {bad}");
        assert!(!with.accepts(bad), "the guarded grammar refuses {bad}");
    }
    for ok in [
        r#"@calculus.derivative(function="2x^2 + 3x")"#,
        r#"@calculus.derivative(function="")"#,
        r#"@calculus.derivative(function="x, then y)")"#,
        r#"@calculus.derivative(function="\u002c")"#,
        r#"@calculus.derivative(function="\"quoted\"", x=1)"#,
        r#"@calculus.derivative(function="./notes.txt")"#,
        r#"@calculus.derivative(function=".5")"#,
    ] {
        assert!(with.accepts(ok), "the guarded grammar takes {ok}");
        assert!(without.accepts(ok), "the plain grammar takes {ok}");
    }
}

/// `+desc` is the renderer's own option: the prompt is `render_prompt`'s with the
/// parameters' descriptions, and nothing else changes.
#[test]
fn the_desc_variant_is_the_renderers_param_descriptions() {
    let tools = load_interfaces(&json!([{"name": "get_current_weather", "parameters": {
        "type": "object", "properties": {"location": {"type": "string",
        "description": "The city and state, e.g. San Francisco, CA"}}, "required": ["location"]}}]))
    .unwrap();
    let mode = "grammar+desc".parse::<Mode>().unwrap();
    assert!(mode.has(Variant::Desc));
    let with = prompt(&tools, &mode);
    let options = atfunc::render::PromptOptions::default().with_param_descriptions(true);
    assert_eq!(with, atfunc::render_prompt(&tools, &options));
    assert!(with.contains("The city and state"), "{with}");
    let plain = prompt(&tools, &"grammar".parse::<Mode>().unwrap());
    assert_eq!(plain, atfunc::render_prompt(&tools, &Default::default()));
    assert!(!plain.contains("The city and state"), "{plain}");
}

/// `lead_in` 0 (measured in EVAL.md (f) as the former `+nolead`): no prose before the call.
#[test]
fn no_lead_in_asks_for_the_call_at_once() {
    let required = GrammarOptions::default().with_choice(Choice::Required);
    let with_lead = grammar(&derivative(), &required).unwrap();
    let no_lead = grammar(&derivative(), &required.clone().with_lead_in(0)).unwrap();
    let call = "@calculus.derivative(function=\"x^2\")";
    for g in [&with_lead, &no_lead] {
        assert!(g.accepts(call));
    }
    let led = format!("The derivative is easy: {call}");
    assert!(with_lead.accepts(&led));
    assert!(!no_lead.accepts(&led), "no prose before the call");
}

/// `+bound`: strings of at most 256 characters, lists and free objects of at most 32
/// entries, so that the loops that ran SmolLM2's answers to the token limit
/// (`"carbon_gas_carbon_dioxide_gas_..."`, `["chicken", "chicken", ...]`) must close.
/// Up to the bound the language is the unbounded grammar's.
#[test]
fn the_bound_variant_bounds_strings_lists_and_free_objects() {
    let bound = "grammar+bound".parse::<Mode>().unwrap();
    assert!(bound.has(Variant::Bound));
    assert_eq!(bound.to_string(), "grammar+bound");
    assert!("native+bound".parse::<Mode>().is_err());
    let options = bound.grammar_options(GrammarOptions::default(), || unreachable!());
    assert_eq!(
        options,
        GrammarOptions::default()
            .with_max_string_chars(Some(256))
            .with_max_list_items(Some(32))
    );
    let tools = load_interfaces(&json!([{"name": "pick", "parameters": {"type": "object",
        "properties": {"text": {"type": "string"}, "items": {"type": "array",
        "items": {"type": "string"}}, "extra": {"type": "object"}},
        "required": ["text"]}}]))
    .unwrap();
    let free = GrammarOptions::default()
        .with_choice(Choice::Required)
        .with_guard_string_start(false);
    for guard in [false, true] {
        let bounded = free
            .clone()
            .with_guard_string_start(guard)
            .with_max_string_chars(Some(4))
            .with_max_list_items(Some(2));
        let (with, without) = (
            grammar(&tools, &bounded).unwrap(),
            grammar(&tools, &free).unwrap(),
        );
        for ok in [
            r#"@pick(text="")"#,
            r#"@pick(text="abcd")"#,
            r#"@pick(text="a\"cd")"#,
            r#"@pick(text="ab", items=["abcd", "x"])"#,
            r#"@pick(text="ab", extra={"k": ["a", "b"], "l": 1})"#,
        ] {
            assert!(
                with.accepts(ok),
                "guard {guard}: the bounded grammar takes {ok}"
            );
            assert!(without.accepts(ok), "the free grammar takes {ok}");
        }
        for long in [
            r#"@pick(text="abcde")"#,
            r#"@pick(text="ab", items=["a", "b", "c"])"#,
            r#"@pick(text="ab", items=["abcde"])"#,
            r#"@pick(text="ab", extra={"k": 1, "l": 2, "m": 3})"#,
            r#"@pick(text="ab", extra={"k": ["a", "b", "c"]})"#,
        ] {
            assert!(
                !with.accepts(long),
                "guard {guard}: the bounded grammar refuses {long}"
            );
            assert!(without.accepts(long), "the free grammar takes {long}");
        }
    }
}

/// Grounded numbers (measured in EVAL.md (g3) as the former `+grounded`): a number
/// parameter takes only the numbers the question writes (that fit its type and bounds);
/// one that none fits keeps every number.
#[test]
fn grounded_numbers_are_the_questions_own() {
    let tools = load_interfaces(&json!([{"name": "area", "parameters": {"type": "object",
        "properties": {"base": {"type": "integer"}, "height": {"type": "number"},
        "scale": {"type": "integer", "minimum": 100}, "tags": {"type": "array",
        "items": {"type": "integer"}}}, "required": ["base", "height"]}}]))
    .unwrap();
    let question =
        "A triangle with a base of 10 units and a height of 2.5 units; -3 and 1,200 too.";
    let options = GrammarOptions::default()
        .with_choice(Choice::Required)
        .with_grounded_numbers(Some(atfunc::grammar::numbers_in(question)));
    let g = grammar(&tools, &options).unwrap();
    for ok in [
        "@area(base=10, height=2.5)",
        "@area(base=-3, height=10)",
        "@area(base=1200, height=1200, scale=1200)",
        // `scale` (at least 100) takes 1200 only; `tags` items, the question's integers.
        "@area(base=10, height=2.5, tags=[10, -3])",
    ] {
        assert!(g.accepts(ok), "{ok}");
    }
    for bad in [
        "@area(base=1, height=1)",
        "@area(base=2.5, height=2.5)",
        "@area(base=10, height=5)",
        "@area(base=10, height=2.5, scale=100)",
        "@area(base=10, height=2.5, tags=[1])",
    ] {
        assert!(!g.accepts(bad), "{bad}");
    }
    // When no number of the question fits, the parameter keeps the full number grammar.
    let none = options
        .clone()
        .with_grounded_numbers(Some(atfunc::grammar::numbers_in("no numbers")));
    assert!(grammar(&tools, &none)
        .unwrap()
        .accepts("@area(base=1, height=1)"));
}

/// `+spans`: the grammar sent with each request holds the text arguments to runs of the
/// user's words, and the answer is scored as any other.
#[tokio::test]
async fn the_spans_variant_grounds_text_in_the_users_words() {
    use atfunc_lab::eval::{EvalOptions, Evaluator};
    use std::sync::{Arc, Mutex};
    let mode = "grammar+spans".parse::<Mode>().unwrap();
    assert!(mode.has(Variant::Spans) && mode.to_string() == "grammar+spans");
    assert!("native+spans".parse::<Mode>().is_err());

    let question = "Plan a trip to New York. Stay 3 days.";
    let questions = json!({"id": "simple_0", "question": [[{"role": "user", "content": question}]],
        "function": [{"name": "trip.plan", "parameters": {"type": "dict", "properties": {
            "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}]});
    let answers = json!({"id": "simple_0", "ground_truth": [{"trip.plan": {"city": ["New York"], "days": [3]}}]});
    let mut loaded = load_cases(&questions.to_string(), &answers.to_string());
    let case = loaded.cases.remove(0);

    let seen = Arc::new(Mutex::new(Vec::<serde_json::Value>::new()));
    let kept = seen.clone();
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |axum::Json(request): axum::Json<serde_json::Value>| {
            let kept = kept.clone();
            async move {
                kept.lock().unwrap().push(request);
                axum::Json(crate::scripted::says(
                    r#"@trip.plan(city="New York", days=3)"#,
                    100,
                    10,
                ))
            }
        }),
    );
    let evaluator = Evaluator::new(EvalOptions {
        endpoint: crate::scripted::serve(app).await,
        ..EvalOptions::default()
    })
    .unwrap();
    let outcome = evaluator.run(&case, &mode).await;
    assert!(outcome.correct && outcome.valid, "{outcome:?}");

    let requests = seen.lock().unwrap().clone();
    let sent = requests[0]["grammar"].as_str().unwrap();
    let options = GrammarOptions::default()
        .with_choice(Choice::Required)
        .with_single(true)
        .with_grounded_text(Some(question.to_owned()));
    assert_eq!(sent, atfunc::gbnf(&case.interfaces, &options).unwrap());
    let g = grammar(&case.interfaces, &options).unwrap();
    assert!(g.accepts(r#"@trip.plan(city="New York", days=3)"#));
    assert!(g.accepts(r#"@trip.plan(city="Stay")"#));
    assert!(!g.accepts(r#"@trip.plan(city="Oslo")"#));
    assert!(!g.accepts(r#"@trip.plan(city="New York. Stay")"#));
}
