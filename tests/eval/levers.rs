//! The levers measured on a real model (EVAL.md), checked on the grammar's language and the
//! prompt without one: a guarded string start, and the example call's variants.
#![cfg(feature = "eval")]

use atfunc::eval::{load_cases, prompt, Mode};
use atfunc::grammar::grammar;
use atfunc::grammar::Choice;
use atfunc::{load_interfaces, GrammarOptions};
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
    let guarded = GrammarOptions {
        choice: Choice::Required,
        guard_string_start: true,
        ..GrammarOptions::default()
    };
    let plain = GrammarOptions {
        guard_string_start: false,
        ..guarded.clone()
    };
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

#[test]
fn the_example_variants_rewrite_only_the_example_call() {
    let loaded = load_cases(
        concat!(
            r#"{"id": "simple_0", "question": [[{"role": "user", "content": "Weather in Shanghai?"}]], "#,
            r#""function": [{"name": "get_current_weather", "parameters": {"type": "dict", "properties": {"#,
            r#""location": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "#,
            r#""required": ["location"]}}]}"#,
        ),
        r#"{"id": "simple_0", "ground_truth": [{"get_current_weather": {"location": ["Shanghai"]}}]}"#,
    );
    let case = &loaded.cases[0];
    let mode = |text: &str| text.parse::<Mode>().unwrap();
    let plain = prompt(&case.interfaces, &mode("grammar"));
    assert!(
        plain.contains("\n@get_current_weather(\"Oslo\", unit=\"celsius\")\n"),
        "{plain}"
    );
    let named = prompt(&case.interfaces, &mode("grammar+named"));
    assert!(
        named.contains("\n@get_current_weather(location=\"Oslo\", unit=\"celsius\")\n"),
        "{named}"
    );
    let slot = prompt(&case.interfaces, &mode("grammar+slot"));
    assert!(
        slot.contains("\n@get_current_weather(\"<location>\", unit=\"celsius\")\n"),
        "{slot}"
    );
    let both = prompt(&case.interfaces, &mode("grammar+named+slot"));
    assert!(
        both.contains("\n@get_current_weather(location=\"<location>\", unit=\"celsius\")\n"),
        "{both}"
    );
    // Only the example line changes.
    assert_eq!(plain.lines().count(), both.lines().count());
    assert_eq!(mode("grammar+guard").to_string(), "grammar+guard");
    assert!("native+guard".parse::<Mode>().is_err());
}

/// `+bare` and `+nolead` name grammar options: a text argument as a bare word, and no prose
/// before the call. Both round-trip as mode names and do not apply to `native`.
#[test]
fn the_bare_and_nolead_variants_name_grammar_options() {
    let mode = |text: &str| text.parse::<Mode>().unwrap();
    let both = mode("grammar+bare+nolead");
    assert!(both.bare && both.no_lead);
    assert_eq!(both.to_string(), "grammar+bare+nolead");
    assert!("native+nolead".parse::<Mode>().is_err());
    assert!("native+bare".parse::<Mode>().is_err());
    let required = GrammarOptions {
        choice: Choice::Required,
        ..GrammarOptions::default()
    };
    let with_lead = grammar(&derivative(), &required).unwrap();
    let no_lead = grammar(
        &derivative(),
        &GrammarOptions {
            lead_in: 0,
            ..required.clone()
        },
    )
    .unwrap();
    let call = "@calculus.derivative(function=\"x^2\")";
    for g in [&with_lead, &no_lead] {
        assert!(g.accepts(call));
    }
    let led = format!("The derivative is easy: {call}");
    assert!(with_lead.accepts(&led));
    assert!(!no_lead.accepts(&led), "no prose before the call");
}
