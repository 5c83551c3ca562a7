//! The grammar's options for values, against the scripted upstream of `dialect.rs`:
//! `atfunc serve --constrain --ground-text` holds text arguments to runs of the user's
//! words; by default they may be bare words, and `--no-bare-strings` keeps them quoted;
//! the repair grammar too, and nothing else changes without an option.

use super::dialect::{joined, request, tools, Setup};
use atfunc::grammar::{grammar, Choice};
use atfunc::{gbnf, GrammarOptions};
use atfunc_gateway::serve::{CallThreshold, GatewayOptions, TurnPolicy};
use serde_json::{json, Value as Json};

/// The gateway under a grammar, no resamples, not weighing first (the grammars of `auto`
/// themselves are checked), with `set` applied to its policy.
fn options(set: impl FnOnce(&mut TurnPolicy)) -> GatewayOptions {
    let mut options = GatewayOptions::default();
    options.policy.constrain = true;
    options.policy.call_threshold = CallThreshold::Off;
    options.policy.resamples = 0;
    set(&mut options.policy);
    options
}

/// The interfaces of [`tools`], as the gateway loads them.
fn interfaces() -> Vec<atfunc::Interface> {
    let functions: Vec<Json> = tools()
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"].clone())
        .collect();
    atfunc::load_interfaces(&Json::Array(functions)).unwrap()
}

/// The requests `setup` got were an answer and one repair, under the grammars `with` makes
/// for `auto` and then `required`.
fn first_and_repair_grammars(setup: &Setup, with: impl Fn(Choice) -> GrammarOptions) {
    let sent = setup.requests();
    assert_eq!(sent.len(), 2, "{sent:#?}");
    for (request, choice) in sent.iter().zip([Choice::Auto, Choice::Required]) {
        let expected = gbnf(&interfaces(), &with(choice)).unwrap();
        assert_eq!(request["grammar"], expected);
    }
}

#[tokio::test]
async fn text_arguments_are_runs_of_the_users_words() {
    // A first answer whose call does not bind (no city), then a repair answer that does.
    let setup = Setup::with_options(
        options(|policy| {
            policy.ground_text = true;
            policy.bare_strings = false;
        }),
        &[
            json!({"content": "@get_weather(max_days=2)"}),
            json!({"content": "@get_weather(city=\"Paris\")"}),
        ],
    )
    .await;
    let mut asked = request();
    // A second user message counts as well; the system message does not.
    asked["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "user", "content": [{"type": "text", "text": "Also Bergen."}]}));
    let (status, whole) = setup.whole(&asked).await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(
        joined(&whole)["calls"],
        json!([{"name": "get-weather", "arguments": "{\"city\":\"Paris\"}"}])
    );

    let said = "Weather in Paris and Oslo?\nAlso Bergen.";
    let with = |choice| {
        GrammarOptions::default()
            .with_choice(choice)
            .with_grounded_text(Some(said.to_owned()))
    };
    first_and_repair_grammars(&setup, with);
    let first = grammar(&interfaces(), &with(Choice::Auto)).unwrap();
    for ok in [
        r#"@get_weather(city="Paris")"#,
        r#"@local_time(city="Bergen")"#,
    ] {
        assert!(first.accepts(ok), "{ok}");
    }
    for bad in [
        r#"@get_weather(city="Oslo?")"#,
        r#"@local_time(city="You are terse")"#,
    ] {
        assert!(!first.accepts(bad), "{bad}");
    }
}

#[tokio::test]
async fn by_default_text_is_free_and_may_be_bare() {
    let setup = Setup::with_options(options(|_| {}), &[json!({"content": "It is sunny."})]).await;
    let (status, _) = setup.whole(&request()).await;
    assert_eq!(status, 200);
    let free = GrammarOptions::default().with_bare_strings(true);
    assert_eq!(
        setup.requests()[0]["grammar"],
        gbnf(&interfaces(), &free).unwrap()
    );
}

#[tokio::test]
async fn without_bare_strings_text_is_quoted() {
    let setup = Setup::with_options(
        options(|policy| policy.bare_strings = false),
        &[
            json!({"content": "@get_weather(max_days=2)"}),
            json!({"content": "@get_weather(city=\"Oslo\")"}),
        ],
    )
    .await;
    let (status, whole) = setup.whole(&request()).await;
    assert_eq!(status, 200, "{whole}");
    let with = |choice| GrammarOptions::default().with_choice(choice);
    first_and_repair_grammars(&setup, with);
    let repair = grammar(&interfaces(), &with(Choice::Required)).unwrap();
    assert!(repair.accepts(r#"@get_weather(city="Oslo")"#));
    assert!(!repair.accepts("@get_weather(city=Oslo)"));
}

#[tokio::test]
async fn a_text_argument_may_be_a_bare_word() {
    // A first answer whose call does not bind (no city), then a repair answer with the
    // city written bare, as Qwen2.5-Coder-0.5B writes `unit=units`: the default.
    let setup = Setup::with_options(
        options(|_| {}),
        &[
            json!({"content": "@get_weather(max_days=2)"}),
            json!({"content": "@get_weather(city=New York)"}),
        ],
    )
    .await;
    let (status, whole) = setup.whole(&request()).await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(
        joined(&whole)["calls"],
        json!([{"name": "get-weather", "arguments": "{\"city\":\"New York\"}"}])
    );
    let with = |choice| {
        GrammarOptions::default()
            .with_choice(choice)
            .with_bare_strings(true)
    };
    first_and_repair_grammars(&setup, with);
    let repair = grammar(&interfaces(), &with(Choice::Required)).unwrap();
    for ok in [
        "@get_weather(city=New York)",
        r#"@get_weather(city="New York")"#,
    ] {
        assert!(repair.accepts(ok), "{ok}");
    }
    // Not a bare placeholder, nor a word that would read as null.
    for bad in ["@get_weather(city=<city>)", "@get_weather(city=null)"] {
        assert!(!repair.accepts(bad), "{bad}");
    }
}
