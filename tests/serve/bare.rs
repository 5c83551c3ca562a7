//! `atfunc serve --constrain --bare-strings` against the scripted upstream of `dialect.rs`:
//! the grammar sent upstream lets a text argument be a bare word, its repair grammar too,
//! and a bare word reaches the client as the text it is.
#![cfg(feature = "serve")]

use super::dialect::{joined, request, tools, Setup};
use atfunc::grammar::{grammar, Choice};
use atfunc::serve::GatewayOptions;
use atfunc::{gbnf, GrammarOptions};
use serde_json::{json, Value as Json};

fn options(bare_strings: bool) -> GatewayOptions {
    let mut options = GatewayOptions::default();
    options.policy.constrain = true;
    options.policy.bare_strings = bare_strings;
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
async fn a_text_argument_may_be_a_bare_word() {
    // A first answer whose call does not bind (no city), then a repair answer with the
    // city written bare, as Qwen2.5-Coder-0.5B writes `unit=units`.
    let setup = Setup::with_options(
        options(true),
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

#[tokio::test]
async fn without_the_option_text_is_quoted() {
    let setup = Setup::with_options(options(false), &[json!({"content": "It is sunny."})]).await;
    let (status, _) = setup.whole(&request()).await;
    assert_eq!(status, 200);
    let quoted = GrammarOptions::default();
    assert_eq!(
        setup.requests()[0]["grammar"],
        gbnf(&interfaces(), &quoted).unwrap()
    );
}
