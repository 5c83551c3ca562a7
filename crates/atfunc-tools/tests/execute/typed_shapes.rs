//! Typed tools whose arguments hold shapes the interface has no word for: enums mixing unit
//! variants and variants with data, untagged and adjacently tagged enums, tuples. Each is
//! shown as the closest type with its forms written out, a model's call of each form binds
//! and deserialises back into the Rust value, and a wrong form is refused naming the forms.
#![cfg(feature = "typed")]

use atfunc::render::{render_interface_with, PromptOptions};
use atfunc::ParamType;
use atfunc_tools::typed::{interface_of, TypedBox};
use atfunc_tools::{CallContext, Registry, ToolBox};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value as Json};

/// A mark on the canvas.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
enum Mark {
    /// A circle.
    Circle {
        /// Its radius.
        r: f64,
    },
    /// A square, by its side.
    Square(f64),
    /// A label at a size.
    Text(String, u8),
    /// A point.
    Dot,
}

/// A size: exact, a range or a name.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(untagged)]
enum Size {
    Exact(f64),
    Range { min: f64, max: f64 },
    Named(String),
}

/// One step of the pen.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(tag = "t", content = "c")]
enum Step {
    Move { dx: i64, dy: i64 },
    Turn(f64),
    Stop,
}

/// Place a mark.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Place {
    /// What to draw.
    mark: Mark,
    /// How big.
    size: Size,
    /// The pen's steps.
    steps: Vec<Step>,
    /// Where: x, then y.
    at: (f64, f64),
    /// A caption and its weight.
    caption: Option<(String, u8)>,
}

fn canvas() -> TypedBox {
    TypedBox::new("canvas").function("place", |args: Place| Ok::<_, String>(format!("{args:?}")))
}

#[test]
fn each_shape_renders_as_its_closest_type_with_its_forms() {
    let place = interface_of::<Place>("canvas.place").unwrap();
    let options = PromptOptions::default().with_param_descriptions(true);
    insta::assert_snapshot!("shapes_interface", render_interface_with(&place, &options));
    let ty = |name: &str| &place.params.iter().find(|p| p.name == name).unwrap().ty;
    // A tuple of one item type is a list of it.
    let ParamType::Array { items: Some(item) } = ty("at") else {
        panic!("not a list of numbers: {:?}", ty("at"));
    };
    assert_eq!(item.ty, ParamType::Number);
    assert_eq!(ty("caption"), &ParamType::Array { items: None });
    assert_eq!(ty("mark"), &ParamType::Any);
    assert_eq!(ty("size"), &ParamType::Any);
}

/// Render → a model's call text → bind → serde, one call per form.
#[tokio::test]
async fn a_call_of_each_form_binds_and_deserialises_into_the_rust_value() {
    let registry = Registry::new();
    registry.register(canvas()).unwrap();
    let cases = [
        (
            r#"@canvas.place(mark="Dot", size=2.5, steps=[{"t": "Stop"}], at=[1, 2])"#,
            Place {
                mark: Mark::Dot,
                size: Size::Exact(2.5),
                steps: vec![Step::Stop],
                at: (1.0, 2.0),
                caption: None,
            },
        ),
        (
            r#"@canvas.place(mark={"Circle": {"r": 1.5}}, size={"min": 1, "max": 2},
                 steps=[{"t": "Move", "c": {"dx": 1, "dy": -1}}, {"t": "Turn", "c": 90}],
                 at=[0.5, 0], caption=["big", 3])"#,
            Place {
                mark: Mark::Circle { r: 1.5 },
                size: Size::Range { min: 1.0, max: 2.0 },
                steps: vec![Step::Move { dx: 1, dy: -1 }, Step::Turn(90.0)],
                at: (0.5, 0.0),
                caption: Some(("big".into(), 3)),
            },
        ),
        (
            r#"@canvas.place(mark={"Square": 2}, size="large", steps=[], at=[0, 0])"#,
            Place {
                mark: Mark::Square(2.0),
                size: Size::Named("large".into()),
                steps: vec![],
                at: (0.0, 0.0),
                caption: None,
            },
        ),
        (
            r#"@canvas.place(mark={"Text": ["hi", 12]}, size=1, steps=[], at=[3, 4])"#,
            Place {
                mark: Mark::Text("hi".into(), 12),
                size: Size::Exact(1.0),
                steps: vec![],
                at: (3.0, 4.0),
                caption: None,
            },
        ),
    ];
    for (text, expected) in cases {
        let report = registry.execute_response(text).await;
        assert_eq!(report.calls.len(), 1, "{text}");
        assert_eq!(
            report.calls[0].result,
            Ok(json!(format!("{expected:?}"))),
            "{text}"
        );
    }
}

/// A value of the wrong form is the model's mistake, and the message lists the forms.
#[tokio::test]
async fn a_wrong_form_is_refused_with_the_forms_it_takes() {
    let tools = canvas().build().unwrap();
    let ctx = CallContext::new();
    let base = json!({"mark": "Dot", "size": 1, "steps": [], "at": [0, 0]});
    let with = |key: &str, value: Json| {
        let mut args = base.as_object().unwrap().clone();
        args.insert(key.into(), value);
        args
    };
    let cases = [
        (
            with("size", json!([1])),
            "argument 'size': data did not match any variant of untagged enum Size. \
             One of: number | { <*min{number}>, <*max{number}> } | string",
        ),
        (
            with("at", json!([1])),
            "argument 'at': invalid length 1, expected a tuple of size 2. \
             Exactly 2 items, in this order: [number, number]",
        ),
        (
            with("mark", json!("Circle")),
            "argument 'mark.Circle': invalid type: unit variant, expected struct variant. \
             One of: { *Circle: { <*r{number}> } } | { <*Square{number}> } | \
             { *Text: [string, integer] } | \"Dot\"",
        ),
        (
            with("steps", json!([{"t": "Stop"}, {"t": "Turn"}])),
            "argument 'steps[1]': missing field 'c'. One of: \
             { <*t{\"Move\"}>, *c: { <*dx{integer}>, <*dy{integer}> } } | \
             { <*t{\"Turn\"}>, <*c{number}> } | { <*t{\"Stop\"}> }",
        ),
    ];
    for (args, expected) in cases {
        let error = tools.call("place", args.clone(), &ctx).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("Invalid arguments for function 'canvas.place': {expected}"),
            "{args:?}"
        );
    }
}
