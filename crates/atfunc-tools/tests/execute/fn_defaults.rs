//! `FnBox::apply_defaults`: declared defaults filled in before a closure runs, only when
//! asked for.

use atfunc::interface::{Interface, Param, ParamType};
use atfunc_tools::{CallContext, FnBox, ToolBox};
use serde_json::{json, Map};

fn echo_box() -> FnBox {
    FnBox::new("w").function(
        Interface::new("forecast")
            .param(Param::new("city", ParamType::String).required())
            .param(Param::new("days", ParamType::Integer).default_value(3)),
        |args, _ctx| Ok(json!(args.into_map())),
    )
}

fn city_only() -> Map<String, serde_json::Value> {
    let mut args = Map::new();
    args.insert("city".into(), json!("Oslo"));
    args
}

#[tokio::test]
async fn defaults_are_filled_only_when_asked() {
    let ctx = CallContext::new();
    let plain = echo_box().call("forecast", city_only(), &ctx).await;
    assert_eq!(plain, Ok(json!({"city": "Oslo"})));
    let filled = echo_box()
        .apply_defaults()
        .call("forecast", city_only(), &ctx)
        .await;
    assert_eq!(filled, Ok(json!({"city": "Oslo", "days": 3})));
    let mut chosen = city_only();
    chosen.insert("days".into(), json!(5));
    let kept = echo_box()
        .apply_defaults()
        .call("forecast", chosen, &ctx)
        .await;
    assert_eq!(kept, Ok(json!({"city": "Oslo", "days": 5})));
}
