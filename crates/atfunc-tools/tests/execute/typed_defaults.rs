//! `TypedBox::apply_defaults`: the defaults an arguments type declares in its schema filled
//! in before the tool's arguments are deserialised, only when asked for.
#![cfg(feature = "typed")]

use atfunc_tools::typed::TypedBox;
use atfunc_tools::{CallContext, Registry, ToolBox};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value as Json};

fn three() -> u32 {
    3
}

fn ten() -> u32 {
    10
}

/// The weather ahead.
#[derive(Debug, Deserialize, JsonSchema)]
struct Forecast {
    /// Where.
    city: String,
    /// How many days; declared in the schema only, so serde reads a left-out one as `None`.
    #[schemars(default = "three")]
    days: Option<u32>,
    /// How many lines at most; declared in the schema only, so serde needs it.
    #[schemars(default = "ten")]
    #[serde(rename = "max-lines")]
    max_lines: u32,
}

fn weather() -> TypedBox {
    TypedBox::new("weather").function("forecast", |args: Forecast| {
        Ok::<_, String>(json!([args.city, args.days, args.max_lines]))
    })
}

fn args(value: Json) -> Map<String, Json> {
    value.as_object().cloned().unwrap_or_default()
}

#[tokio::test]
async fn declared_defaults_are_filled_only_when_asked() {
    let ctx = CallContext::new();
    let oslo = || args(json!({"city": "Oslo"}));

    // By default a left-out parameter stays out: serde sees exactly the model's arguments.
    let plain = weather().call("forecast", oslo(), &ctx).await;
    assert_eq!(
        plain.unwrap_err().to_string(),
        "Invalid arguments for function 'weather.forecast': missing field 'max-lines'"
    );
    let mut with_lines = oslo();
    with_lines.insert("max-lines".into(), json!(4));
    let plain = weather().call("forecast", with_lines, &ctx).await;
    assert_eq!(plain, Ok(json!(["Oslo", null, 4])));

    // Asked for, each left-out parameter gets its declared default.
    let filled = weather()
        .apply_defaults()
        .call("forecast", oslo(), &ctx)
        .await;
    assert_eq!(filled, Ok(json!(["Oslo", 3, 10])));

    // A value the model chose wins.
    let chosen = args(json!({"city": "Oslo", "days": 5, "max-lines": 1}));
    let kept = weather()
        .apply_defaults()
        .call("forecast", chosen, &ctx)
        .await;
    assert_eq!(kept, Ok(json!(["Oslo", 5, 1])));
}

/// Through a registry: the call text leaves both out, the tool gets both defaults.
#[tokio::test]
async fn a_registered_box_fills_defaults_of_a_parsed_call() {
    let registry = Registry::new();
    registry.register(weather().apply_defaults()).unwrap();
    let report = registry
        .execute_response(r#"@weather.forecast("Bergen")"#)
        .await;
    assert_eq!(report.calls[0].result, Ok(json!(["Bergen", 3, 10])));
}
