//! Typed tools: ids from type names, interfaces from argument structs, results and failures
//! as every other tool's, and the errors for arguments that do not fit.
#![cfg(feature = "typed")]

use atfunc::interface::validate_toolbox;
use atfunc::interop::{to_openai_tools, ToolFormatOptions};
use atfunc::ParamType;
use atfunc_tools::typed::{interface_of, tool_id, TypedBox, TypedError, TypedTool};
use atfunc_tools::{BuildError, RegisterError, Registry, ToolBoxExt};
use atfunc_tools::{CallContext, ToolBox, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value as Json};

fn args(value: Json) -> Map<String, Json> {
    value.as_object().unwrap().clone()
}

#[test]
fn ids_from_type_names() {
    let cases = [
        ("SendEmailTool", "send_email"),
        ("HTTPFetchTool", "http_fetch"),
        ("WeatherTool", "weather"),
        ("GetURLTool", "get_url"),
        ("XMLHttpRequestTool", "xml_http_request"),
        ("Base64EncodeTool", "base64_encode"),
        ("HTTP2FetchTool", "http2_fetch"),
        ("OAuth2LoginTool", "o_auth2_login"),
        ("IOError", "io_error"),
        ("ABC", "abc"),
        ("Tool", "tool"),
        ("ToolboxTool", "toolbox"),
        ("Tools", "tools"),
        ("already_snake", "already_snake"),
        ("Mixed_CaseTool", "mixed_case"),
        ("my_crate::tools::SearchTool", "search"),
        ("my_crate::Wrapper<my_crate::Inner>", "wrapper"),
        ("ÜberTool", "über"),
    ];
    for (type_name, id) in cases {
        assert_eq!(tool_id(type_name), id, "{type_name}");
    }
}

/// Send an email to one recipient.
///
/// The message is queued; it leaves within a minute.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct SendEmail {
    /// The recipient's address.
    to: String,
    /// The subject line.
    subject: String,
    /// How urgent the message is.
    #[serde(default)]
    priority: Priority,
    /// Addresses that get a copy.
    cc: Option<Vec<String>>,
    /// Files to attach.
    #[serde(default)]
    attachments: Vec<Attachment>,
    /// How often to retry a failed delivery.
    retries: Option<u8>,
    /// Where the reply goes, when not to the sender.
    reply_to: Option<Mailbox>,
}

/// How urgent a message is.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Priority {
    /// Whenever convenient.
    Low,
    /// The usual.
    #[default]
    Normal,
    /// Now.
    High,
}

/// A file to attach.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Attachment {
    /// The file's name.
    name: String,
    /// Its size in kilobytes.
    size_kb: u32,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Mailbox {
    /// The display name.
    name: String,
    address: String,
}

#[test]
fn an_interface_from_a_struct_with_doc_comments() {
    let interface = interface_of::<SendEmail>("mail.send_email").unwrap();
    insta::assert_json_snapshot!("send_email_interface", interface);
    assert_eq!(
        interface.description,
        "Send an email to one recipient.\n\nThe message is queued; it leaves within a minute."
    );
    validate_toolbox("mail", std::slice::from_ref(&interface)).unwrap();
    // The same interface as OpenAI would see it.
    let rendered = to_openai_tools(&[interface], &ToolFormatOptions::default());
    insta::assert_json_snapshot!("send_email_openai", rendered.tools);

    let other = interface_of::<SendEmail>("send")
        .unwrap()
        .describe("Send mail");
    assert_eq!(other.qualified_name(), "send");
    assert_eq!(other.description, "Send mail");
}

#[test]
fn arguments_that_are_not_a_struct_are_refused() {
    let error = interface_of::<String>("t.f").unwrap_err();
    assert!(matches!(error, TypedError::NotAnObject { .. }));
    assert_eq!(
        error.to_string(),
        r#"the arguments of 't.f' must be a struct with named fields; their JSON Schema is {"type":"string"}"#
    );
    let error = interface_of::<SendEmail>("t.").unwrap_err();
    assert!(matches!(error, TypedError::Interface { .. }), "{error}");
}

/// Halve an even number.
#[derive(Deserialize, JsonSchema)]
struct Halve {
    /// The number.
    n: i64,
}

#[tokio::test]
async fn a_typed_failure_is_an_error_outcome_like_any_tool_s() {
    let registry = Registry::new();
    let tools = TypedBox::new("math").function("halve", |args: Halve| {
        if args.n % 2 == 0 {
            Ok(args.n / 2)
        } else {
            Err(format!("{} is odd", args.n))
        }
    });
    registry.register(tools).unwrap();
    let report = registry
        .execute_response("@math.halve(4) @math.halve(3)")
        .await;
    assert_eq!(report.calls[0].result, Ok(json!(2)));
    assert!(report.calls[1].is_error());
    assert_eq!(
        report.calls[1].result,
        Err(ToolError::Failed("3 is odd".into()))
    );
    assert_eq!(
        report.output,
        "Function call: math.halve(4)\nReturned: 2\n\nFunction call: math.halve(3)\nReturned: Error: 3 is odd\n"
    );
    let stats = registry.stats();
    assert_eq!((stats.calls, stats.errors, stats.refused), (2, 1, 0));
    assert_eq!(stats.functions["math.halve"].errors, 1);
}

/// Divide one number by another.
#[derive(Deserialize, JsonSchema)]
struct Divide {
    /// What is divided.
    dividend: f64,
    /// What it is divided by.
    divisor: f64,
}

#[derive(Serialize)]
struct Quotient {
    value: f64,
}

/// Wait a moment, then echo the text.
#[derive(Deserialize, JsonSchema)]
struct Echo {
    text: String,
}

fn math_box() -> TypedBox {
    TypedBox::new("math")
        .function("divide", |args: Divide| {
            if args.divisor == 0.0 {
                Err("cannot divide by zero: pass a divisor other than 0")
            } else {
                Ok(Quotient {
                    value: args.dividend / args.divisor,
                })
            }
        })
        .async_function("echo", |args: Echo| async move {
            tokio::task::yield_now().await;
            Ok::<_, std::convert::Infallible>(args.text)
        })
        .function("now", |_: ()| Ok::<_, String>("12:00"))
        .build()
        .unwrap()
}

#[tokio::test]
async fn sync_and_async_functions_answer_with_values_or_errors() {
    let tools = math_box();
    let ctx = CallContext::new();
    let names: Vec<String> = tools
        .interfaces(&ctx)
        .iter()
        .map(|i| i.qualified_name())
        .collect();
    assert_eq!(names, ["math.divide", "math.echo", "math.now"]);
    validate_toolbox("math", &tools.interfaces(&ctx)).unwrap();
    assert_eq!(tools.interfaces(&ctx)[2].params, []);

    let ok = tools
        .call("divide", args(json!({"dividend": 7, "divisor": 2})), &ctx)
        .await;
    assert_eq!(ok.unwrap(), json!({"value": 3.5}));
    let failed = tools
        .call("divide", args(json!({"dividend": 7, "divisor": 0})), &ctx)
        .await;
    assert_eq!(
        failed,
        Err(ToolError::Failed(
            "cannot divide by zero: pass a divisor other than 0".into()
        ))
    );
    let echoed = tools.call("echo", args(json!({"text": "hi"})), &ctx).await;
    assert_eq!(echoed.unwrap(), json!("hi"));
    let now = tools.call("now", Map::new(), &ctx).await;
    assert_eq!(now.unwrap(), json!("12:00"));

    let unknown = tools.call("multiply", Map::new(), &ctx).await.unwrap_err();
    assert_eq!(unknown, ToolError::unknown("multiply"));
}

#[test]
fn two_functions_of_one_name_are_refused() {
    let error = math_box()
        .function("Divide", |args: Divide| {
            Ok::<_, String>(args.dividend * args.divisor)
        })
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool box 'math' already has a function 'Divide'"
    );
}

/// A user's record.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Register {
    /// Login name.
    name: String,
    /// Age in years.
    age: u8,
    /// How urgent.
    priority: Option<Priority>,
    /// Contact.
    mailbox: Option<Mailbox>,
    /// Files.
    #[serde(default)]
    attachments: Vec<Attachment>,
    /// Whether to notify.
    notify: Option<bool>,
}

#[tokio::test]
async fn bad_arguments_name_the_argument_and_the_type_it_needs() {
    let tools = TypedBox::new("users")
        .function("register", |args: Register| Ok::<_, String>(args.name))
        .build()
        .unwrap();
    let ctx = CallContext::new();
    let cases = [
        json!({"name": 5, "age": 30}),
        json!({"name": "ada", "age": 2.5}),
        json!({"name": "ada", "age": 300}),
        json!({"name": "ada", "age": -1}),
        json!({"name": "ada", "age": "30"}),
        json!({"name": "ada", "age": 30, "priority": "urgent"}),
        json!({"name": "ada", "age": 30, "mailbox": {"name": "Ada", "address": ["a@b.c"]}}),
        json!({"name": "ada", "age": 30, "attachments": [{"name": "a", "size_kb": 1}, {"name": "b", "size_kb": "big"}]}),
        json!({"name": "ada", "age": 30, "attachments": "none"}),
        json!({"name": "ada", "age": 30, "notify": "yes"}),
        json!({"name": "ada"}),
        json!({"name": "ada", "age": 30, "nickname": "A"}),
        json!({"name": "ada", "age": 30, "mailbox": {"name": "Ada"}}),
    ];
    let mut messages = Vec::new();
    for case in cases {
        let error = tools
            .call("register", args(case.clone()), &ctx)
            .await
            .unwrap_err();
        messages.push(format!("{case}\n    {error}"));
    }
    insta::assert_snapshot!("bad_arguments", messages.join("\n"));

    let ok = tools
        .call(
            "register",
            args(json!({"name": "ada", "age": 36, "priority": "high", "mailbox": null})),
            &ctx,
        )
        .await;
    assert_eq!(ok.unwrap(), json!("ada"));
}

/// Look up a word.
#[derive(Deserialize, JsonSchema)]
struct Lookup {
    /// The word.
    word: String,
}

/// Who is asking.
struct User(&'static str);

struct DictionaryLookupTool {
    words: Vec<(&'static str, &'static str)>,
}

impl TypedTool for DictionaryLookupTool {
    type Args = Lookup;
    type Output = String;
    type Error = String;

    async fn call(&self, args: Lookup, ctx: &CallContext) -> Result<String, String> {
        let user = ctx.get::<User>().map_or("someone", |u| u.0);
        self.words
            .iter()
            .find(|(word, _)| *word == args.word)
            .map(|(_, meaning)| format!("{meaning} (asked by {user})"))
            .ok_or_else(|| format!("'{}' is not in the dictionary", args.word))
    }
}

struct HTTPFetchTool;

impl TypedTool for HTTPFetchTool {
    type Args = Lookup;
    type Output = ();
    type Error = String;

    fn id(&self) -> String {
        "fetch".into()
    }

    fn description(&self) -> Option<String> {
        Some("Fetch nothing".into())
    }

    async fn call(&self, _args: Lookup, _ctx: &CallContext) -> Result<(), String> {
        Ok(())
    }
}

#[tokio::test]
async fn typed_tools_take_their_id_from_their_type_and_see_the_context() {
    let tool = DictionaryLookupTool {
        words: vec![("atfunc", "function calling as text")],
    };
    assert_eq!(tool.id(), "dictionary_lookup");
    let tools = TypedBox::new("words")
        .tool(tool)
        .tool(HTTPFetchTool)
        .build()
        .unwrap();
    let ctx = CallContext::new().with(User("ada"));
    let interfaces = tools.interfaces(&ctx);
    assert_eq!(interfaces[0].qualified_name(), "words.dictionary_lookup");
    assert_eq!(interfaces[0].description, "Look up a word.");
    assert_eq!(interfaces[0].params[0].ty, ParamType::String);
    assert_eq!(interfaces[1].qualified_name(), "words.fetch");
    assert_eq!(interfaces[1].description, "Fetch nothing");

    let found = tools
        .call("dictionary_lookup", args(json!({"word": "atfunc"})), &ctx)
        .await;
    assert_eq!(
        found.unwrap(),
        json!("function calling as text (asked by ada)")
    );
    let missing = tools
        .call("dictionary_lookup", args(json!({"word": "x"})), &ctx)
        .await;
    assert_eq!(
        missing,
        Err(ToolError::Failed("'x' is not in the dictionary".into()))
    );
    let fetched = tools.call("fetch", args(json!({"word": "x"})), &ctx).await;
    assert_eq!(fetched.unwrap(), json!(null));
    let bad = tools
        .call("dictionary_lookup", args(json!({"word": 1})), &ctx)
        .await;
    assert_eq!(
        bad.unwrap_err().to_string(),
        "Invalid arguments for function 'words.dictionary_lookup': argument 'word' must be a string, found 1"
    );
}

/// Where to show a chart.
#[derive(Deserialize, JsonSchema)]
struct Chart {
    /// The chart's title.
    title: String,
}

/// A typed tool that shows the user a chart through its context.
struct ChartTool;

impl TypedTool for ChartTool {
    type Args = Chart;
    type Output = String;
    type Error = String;

    async fn call(&self, args: Chart, ctx: &CallContext) -> Result<String, String> {
        ctx.add_element(ToolOutput::image_element("image/svg+xml", "PHN2Zy8+"));
        Ok(format!(
            "The chart '{}' is on the user's screen.",
            args.title
        ))
    }
}

#[tokio::test]
async fn typed_tools_return_elements_beside_their_value() {
    let tools = TypedBox::new("ui")
        .tool(ChartTool)
        .function("card", |args: Chart| {
            let card = json!({"type": "card", "title": args.title});
            Ok::<_, String>(ToolOutput::new(json!({"shown": true})).with_element(card))
        })
        .async_function("note", |args: Chart| async move {
            Ok::<_, String>(
                ToolOutput::new(json!(args.title)).with_element(json!({"type": "note"})),
            )
        })
        .function("plain", |args: Chart| Ok::<_, String>(args.title));
    let registry = Registry::new();
    registry.register(tools).unwrap();
    let report = registry
        .execute_response(r#"@ui.chart("Sales") @ui.card("Oslo") @ui.note("n") @ui.plain("p")"#)
        .await;
    let results: Vec<_> = report.calls.iter().map(|c| c.result.clone()).collect();
    assert_eq!(
        results,
        [
            Ok(json!("The chart 'Sales' is on the user's screen.")),
            Ok(json!({"shown": true})),
            Ok(json!("n")),
            Ok(json!("p")),
        ]
    );
    let elements: Vec<&[Json]> = report.calls.iter().map(|c| c.elements.as_slice()).collect();
    assert_eq!(
        elements[0],
        [json!({"type": "image", "mime_type": "image/svg+xml", "data": "PHN2Zy8+"})]
    );
    assert_eq!(elements[1], [json!({"type": "card", "title": "Oslo"})]);
    assert_eq!(elements[2], [json!({"type": "note"})]);
    assert!(elements[3].is_empty());
    assert_eq!(
        report.output,
        "Function call: ui.chart(\"Sales\")\nReturned: The chart 'Sales' is on the user's screen.\n\n\
         Function call: ui.card(\"Oslo\")\nReturned: {\"shown\":true}\n\n\
         Function call: ui.note(\"n\")\nReturned: n\n\n\
         Function call: ui.plain(\"p\")\nReturned: p\n"
    );
}

/// Two tools that cannot be added: arguments that are no struct, and a name taken (ignoring
/// case, as calls match names).
fn box_with_two_problems() -> TypedBox {
    TypedBox::new("math")
        .function("halve", |args: Halve| Ok::<_, String>(args.n / 2))
        .function("shout", |text: String| Ok::<_, String>(text.to_uppercase()))
        .async_function(
            "Halve",
            |args: Halve| async move { Ok::<_, String>(args.n) },
        )
}

#[test]
fn typed_builders_chain_and_registration_lists_every_problem() {
    let error = Registry::new()
        .register(box_with_two_problems())
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool box 'math' was not built: \
         the arguments of 'math.shout' must be a struct with named fields; their JSON Schema is {\"type\":\"string\"}; \
         tool box 'math' already has a function 'Halve'"
    );
    // A wrapper reports its inner box's problems: the box is refused all the same.
    let wrapped = box_with_two_problems().with_timeout(std::time::Duration::from_secs(1));
    assert!(matches!(
        Registry::new().register(wrapped),
        Err(RegisterError::Build { errors, .. }) if errors.len() == 2
    ));
    // `build` reports the first, for a box used without a registry.
    assert!(matches!(
        box_with_two_problems().build(),
        Err(TypedError::NotAnObject { name, .. }) if name == "math.shout"
    ));
    // The tools that could be added are there meanwhile.
    let names: Vec<String> = box_with_two_problems()
        .interfaces(&CallContext::new())
        .into_iter()
        .map(|i| i.name)
        .collect();
    assert_eq!(names, ["halve"]);
}

#[test]
fn registration_errors_keep_their_type() {
    let error = Registry::new()
        .register(box_with_two_problems())
        .unwrap_err();
    let RegisterError::Build { name, errors } = &error else {
        panic!("not a build error: {error}");
    };
    assert_eq!(name, "math");
    assert!(matches!(
        errors[0].downcast_ref::<TypedError>(),
        Some(TypedError::NotAnObject { name, .. }) if name == "math.shout"
    ));
    assert!(matches!(
        errors[1].downcast_ref::<TypedError>(),
        Some(TypedError::Duplicate { box_name, name }) if box_name == "math" && name == "Halve"
    ));
    // The message is each error's, as before.
    assert_eq!(
        errors[1].to_string(),
        "tool box 'math' already has a function 'Halve'"
    );
    // A box that has only a message still reports one.
    assert_eq!(BuildError::from("no name").to_string(), "no name");
    assert!(BuildError::from("no name")
        .downcast_ref::<TypedError>()
        .is_none());
}

/// A shape to draw.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
enum Shape {
    /// A circle.
    Circle {
        /// Its radius.
        r: f64,
    },
    /// A square, by its side.
    Square(f64),
    /// A point.
    Dot,
}

/// Some of one thing.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Item {
    /// How many.
    qty: u32,
}

/// Stock a shelf.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Stock {
    /// The shelf's label.
    shape: Shape,
    /// The items on each shelf.
    shelves: std::collections::BTreeMap<String, Vec<Item>>,
}

#[tokio::test]
async fn a_bad_nested_value_is_named_by_its_path() {
    let tools = TypedBox::new("store")
        .function("stock", |_: Stock| Ok::<_, String>(()))
        .build()
        .unwrap();
    let ctx = CallContext::new();
    let cases = [
        (
            json!({"shape": {"Circle": {"r": "x"}}, "shelves": {}}),
            r#"argument 'shape.Circle.r': invalid type: string "x", expected f64"#,
        ),
        (
            json!({"shape": "Dot", "shelves": {"top": [{"qty": 1}, {"qty": 2}, {"qty": "x"}]}}),
            r#"argument 'shelves.top[2].qty': invalid type: string "x", expected u32"#,
        ),
        (
            json!({"shape": "Dot", "shelves": {"top": [{"qty": 1, "size": 2}]}}),
            "argument 'shelves.top[0]': unknown field 'size', expected 'qty'",
        ),
    ];
    for (case, expected) in cases {
        let error = tools
            .call("stock", args(case.clone()), &ctx)
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("Invalid arguments for function 'store.stock': {expected}"),
            "{case}"
        );
    }
}

/// A shape, tagged inside.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[allow(dead_code)]
enum Tagged {
    /// A circle.
    Circle {
        /// Its radius.
        r: f64,
    },
    /// A rectangle.
    Rect {
        /// Its width.
        w: f64,
        /// Its height.
        h: f64,
    },
}

/// A shape, tag and content side by side.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "t", content = "c")]
#[allow(dead_code)]
enum Adjacent {
    Circle { r: f64 },
    Square(f64),
}

/// A shape, tagged outside, every variant with fields.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
enum External {
    /// A circle.
    Circle { r: f64 },
    /// A square.
    Square { side: f64 },
}

/// A number or a circle.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum Untagged {
    Number(f64),
    Circle { r: f64 },
}

/// Draw shapes.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Draw {
    /// Variants with and without data.
    shape: Shape,
    /// Internally tagged.
    tagged: Tagged,
    /// Adjacently tagged.
    adjacent: Adjacent,
    /// Externally tagged.
    external: External,
    /// Untagged.
    untagged: Untagged,
    /// Counts by name.
    counts: std::collections::HashMap<String, u32>,
    /// Items by name.
    items: std::collections::BTreeMap<String, Item>,
}

/// An enum whose variants all carry fields is one object of every variant's fields (a tag is
/// a choice of the variants); a map is an object; variants with and without data, or of
/// different JSON types, are of any type. serde checks the rest when the call runs.
#[tokio::test]
async fn enums_with_data_and_maps_render_as_precisely_as_the_interface_allows() {
    let draw = interface_of::<Draw>("paint.draw").unwrap();
    assert_eq!(
        atfunc::render::render_interface(&draw),
        "@paint.draw( <*shape{any}>, <*tagged{object}>, <*adjacent{object}>, <*external{object}>, \
         <*untagged{any}>, <*counts{object}>, <*items{object}> )\n\
         Description: Draw shapes.\n\
         tagged: { <*kind{\"circle\"|\"rect\"}>, <r{number}>, <w{number}>, <h{number}> }\n\
         adjacent: { <*t{\"Circle\"|\"Square\"}>, <*c{any}> }\n\
         external: { Circle: { <*r{number}> }, Square: { <*side{number}> } }\n"
    );
    let external = draw.params.iter().find(|p| p.name == "external").unwrap();
    let ParamType::Object { properties } = &external.ty else {
        panic!("not an object: {external:?}");
    };
    // A variant's doc comment describes the field that names it.
    assert_eq!(properties[0].description, "A circle.");

    // The merged object is checked as far as it goes; serde does the rest.
    let tools = TypedBox::new("paint")
        .function("draw", |args: Draw| {
            Ok::<_, String>(format!("{:?}", args.tagged))
        })
        .build()
        .unwrap();
    let ctx = CallContext::new();
    let call = |tagged: Json| {
        args(json!({
            "shape": "Dot", "tagged": tagged, "adjacent": {"t": "Square", "c": 2.0},
            "external": {"Square": {"side": 1.0}}, "untagged": 1.0,
            "counts": {"a": 1}, "items": {"b": {"qty": 2}},
        }))
    };
    let drawn = tools
        .call("draw", call(json!({"kind": "circle", "r": 1.5})), &ctx)
        .await;
    assert_eq!(drawn.unwrap(), json!("Circle { r: 1.5 }"));
    let errors = [
        (
            json!({"kind": "oval"}),
            "argument 'tagged.kind' must be one of \"circle\", \"rect\", found \"oval\"",
        ),
        (
            json!({"kind": "circle", "r": "x"}),
            "argument 'tagged.r' must be a number, found \"x\"",
        ),
        (
            json!({"kind": "rect", "w": 1.0}),
            "argument 'tagged': missing field 'h'. One of: { <*kind{\"circle\"}>, <*r{number}> } \
             | { <*kind{\"rect\"}>, <*w{number}>, <*h{number}> }",
        ),
    ];
    for (tagged, expected) in errors {
        let error = tools
            .call("draw", call(tagged.clone()), &ctx)
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("Invalid arguments for function 'paint.draw': {expected}"),
            "{tagged}"
        );
    }
}

/// A typed tool's error stays an error value: an `anyhow` chain is shown whole, outermost
/// first, as `{:#}` shows it (not only its outermost context), to the model; the error's
/// `Display` is its own message and `source()` reaches the error the tool started from; an
/// `io::Error` is kept the same way.
#[tokio::test]
async fn typed_errors_keep_their_source_and_their_context_chain() {
    use std::error::Error as _;
    let tools = TypedBox::new("files")
        .function("load", |_: Halve| -> anyhow::Result<i64> {
            let missing = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
            Err(anyhow::Error::new(missing)
                .context("reading settings.toml")
                .context("loading the profile"))
        })
        .function("lock", |_: Halve| -> Result<i64, std::io::Error> {
            Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "the lock file is read-only",
            ))
        });
    let ctx = CallContext::new();
    let load = tools.call("load", args(json!({"n": 1})), &ctx).await;
    let error = load.expect_err("fails");
    assert_eq!(error.to_string(), "loading the profile");
    assert_eq!(
        error.model_message(),
        "loading the profile: reading settings.toml: no such file"
    );
    let mut chain = error.source();
    let mut found_io = false;
    while let Some(cause) = chain {
        found_io |= cause.downcast_ref::<std::io::Error>().is_some();
        chain = cause.source();
    }
    assert!(found_io, "the io::Error is in the chain of {error:?}");
    assert!(error.downcast_ref::<std::io::Error>().is_some());

    let lock = tools.call("lock", args(json!({"n": 1})), &ctx).await;
    let error = lock.expect_err("fails");
    assert_eq!(error.to_string(), "the lock file is read-only");
    let io = error.downcast_ref::<std::io::Error>();
    assert_eq!(
        io.map(std::io::Error::kind),
        Some(std::io::ErrorKind::PermissionDenied)
    );
    // The model reads the whole chain too.
    let registry = Registry::new();
    registry.register(tools).unwrap();
    let report = registry.execute_response("@files.load(1)").await;
    assert_eq!(
        report.output,
        "Function call: files.load(1)\nReturned: Error: loading the profile: reading settings.toml: no such file\n"
    );
}

/// `?` on a `serde_json::Error` in a closure keeps the error whole.
#[tokio::test]
async fn a_serde_json_error_in_a_tool_keeps_its_source() {
    let tools = atfunc_tools::FnBox::new("parse").function(
        atfunc::Interface::new("number").in_domain("parse"),
        |_, _| {
            let n: i64 = serde_json::from_str("not json")?;
            Ok(json!(n))
        },
    );
    let error = tools
        .call("number", Map::new(), &CallContext::new())
        .await
        .expect_err("fails");
    assert!(error.to_string().starts_with("expected ident"), "{error}");
    assert!(error.downcast_ref::<serde_json::Error>().is_some());
}

/// A shape the model picks by name.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Figure {
    /// A circle.
    Circle {
        /// Its radius.
        r: f64,
    },
    /// A square.
    Square {
        /// Its side.
        side: f64,
    },
}

/// Draw a shape.
#[derive(Deserialize, JsonSchema)]
struct Sketch {
    /// What to draw.
    shape: Figure,
}

/// Arguments that the model got wrong (a missing field, an unknown variant) are refusals it
/// can fix, as the binder's are: `ToolError::Bind`, counted as refused, not as the tool's
/// failure.
#[tokio::test]
async fn the_model_s_bad_arguments_are_refusals_not_tool_failures() {
    let tools = TypedBox::new("pen")
        .function("draw", |sketch: Sketch| {
            let area = match sketch.shape {
                Figure::Circle { r } => std::f64::consts::PI * r * r,
                Figure::Square { side } => side * side,
            };
            Ok::<_, String>(area)
        })
        .function("halve", |args: Halve| Ok::<_, String>(args.n / 2));
    let registry = Registry::new();
    registry.register(tools).unwrap();
    let report = registry
        .execute_response(
            r#"@pen.draw(shape={"circle": {}}) @pen.draw(shape={"hexagon": {"side": 1}}) @pen.halve(4)"#,
        )
        .await;
    for refused in &report.calls[..2] {
        assert!(
            matches!(refused.result, Err(ToolError::Bind(_))),
            "{:?}",
            refused.result
        );
    }
    // The binder already knows the variant's fields; serde alone knows its names.
    assert!(
        report.calls[0].block.contains("shape.circle.r"),
        "{}",
        report.output
    );
    assert!(
        report.calls[1].block.contains("unknown variant 'hexagon'"),
        "{}",
        report.output
    );
    assert_eq!(report.calls[2].result, Ok(json!(2)));
    let stats = registry.stats();
    assert_eq!((stats.calls, stats.errors, stats.refused), (3, 2, 2));
    assert_eq!(stats.functions.get("pen.draw").map_or(0, |f| f.errors), 0);
}

/// A function that does not exist is `ToolError::UnknownFunction` whoever notices: the
/// registry's binder, or a box called directly.
#[tokio::test]
async fn unknown_functions_are_reported_one_way() {
    let tools = TypedBox::new("math").function("halve", |args: Halve| Ok::<_, String>(args.n / 2));
    let direct = tools
        .call("double", Map::new(), &CallContext::new())
        .await
        .expect_err("unknown");
    assert!(
        matches!(direct, ToolError::UnknownFunction { .. }),
        "{direct:?}"
    );
    let registry = Registry::new();
    registry.register(tools).unwrap();
    let report = registry.execute_response("@math.halv(4)").await;
    match &report.calls[0].result {
        Err(ToolError::UnknownFunction { name, closest, .. }) => {
            assert_eq!(name, "math.halv");
            assert_eq!(closest.as_deref(), Some("math.halve"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        report.output,
        "Function call: math.halv(4)\nReturned: Error: Unknown function 'math.halv': did you mean 'math.halve'?\n"
    );
    let missing = registry.call("math.double", json!({})).await;
    assert!(
        matches!(missing, Err(ToolError::UnknownFunction { .. })),
        "{missing:?}"
    );
}

/// A typed function's name is any `impl Into<String>`, as a box's name is: a `String`
/// made at run time goes in without a borrow.
#[tokio::test]
async fn a_typed_function_s_name_may_be_an_owned_string() {
    let name = format!("half_{}", 2);
    let tools = TypedBox::new(String::from("nums"))
        .function(name.clone(), |h: Halve| Ok::<_, String>(h.n / 2))
        .async_function(format!("{name}_later"), |h: Halve| async move {
            Ok::<_, String>(h.n / 2)
        });
    let registry = Registry::new();
    registry.register(tools).unwrap();
    let report = registry
        .execute_response("@nums.half_2(8) @nums.half_2_later(6)")
        .await;
    assert_eq!(report.calls[0].result, Ok(json!(4)));
    assert_eq!(report.calls[1].result, Ok(json!(3)));
}
