//! `atfunc serve --constrain --ground-text` against the scripted upstream of `dialect.rs`:
//! the grammar sent upstream holds text arguments to runs of the user's words, its repair
//! grammar too, and nothing changes without the option.
#![cfg(feature = "serve")]

use super::dialect::{joined, request, tools, Setup};
use atfunc::grammar::{grammar, Choice};
use atfunc::serve::GatewayOptions;
use atfunc::{gbnf, GrammarOptions};
use serde_json::{json, Value as Json};

fn options(ground_text: bool) -> GatewayOptions {
    let mut options = GatewayOptions::default();
    options.policy.constrain = true;
    options.policy.ground_text = ground_text;
    options.policy.resamples = 0;
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

#[tokio::test]
async fn text_arguments_are_runs_of_the_users_words() {
    // A first answer whose call does not bind (no city), then a repair answer that does.
    let setup = Setup::with_options(
        options(true),
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
    let sent = setup.requests();
    assert_eq!(sent.len(), 2, "{sent:#?}");
    assert_eq!(
        sent[0]["grammar"],
        gbnf(&interfaces(), &with(Choice::Auto)).unwrap()
    );
    assert_eq!(
        sent[1]["grammar"],
        gbnf(&interfaces(), &with(Choice::Required)).unwrap()
    );
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
async fn without_the_option_text_is_free() {
    let setup = Setup::with_options(options(false), &[json!({"content": "It is sunny."})]).await;
    let (status, _) = setup.whole(&request()).await;
    assert_eq!(status, 200);
    let free = GrammarOptions::default();
    assert_eq!(
        setup.requests()[0]["grammar"],
        gbnf(&interfaces(), &free).unwrap()
    );
}
