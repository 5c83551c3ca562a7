//! Tool schemas that expand: `$defs`, `$ref`s (to themselves, to each other, several times
//! over), `properties`, `items` and `anyOf`, built from the fuzzer's bytes, go through
//! loading, validating, rendering and the grammar of every choice (grounded in a question,
//! or not). Nothing may panic, and
//! (run with a low `-rss_limit_mb` and `-timeout`) nothing may take much memory or time:
//! a small schema that expands into a huge interface or grammar is a finding. The grammar is
//! built again with its sample's calls left out (`not_again`), which must not offer them.
#![no_main]

use arbitrary::Arbitrary;
use atfunc::grammar::{grammar, numbers_in, CallForm, Choice, GrammarOptions, WrittenCall};
use atfunc::interface::validate_all;
use atfunc::render::PromptOptions;
use atfunc::{load_interfaces, render_prompt};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Map, Value as Json};

/// Schemas nest at most this deep as built here (`$ref`s may take them deeper).
const MAX_DEPTH: usize = 8;

#[derive(Arbitrary, Debug)]
enum Shape {
    /// `{"$ref": "#/$defs/D<n>"}` (or `#/definitions/`), n among the definitions (or one
    /// past them: a reference to nothing).
    Ref {
        target: u8,
        old_style: bool,
        described: bool,
    },
    /// A scalar type (or none, or `null`).
    Scalar(u8),
    /// An object with these properties, each written `1 + repeat % 12` times under names
    /// of its own (so a few bytes make a definition that refers to another ten times), the
    /// ones listed required.
    Object {
        fields: Vec<(u8, Shape)>,
        repeat: u8,
        required: Vec<u8>,
    },
    /// An array of these.
    Array(Box<Shape>),
    /// `anyOf` of these, maybe with `null` among them.
    AnyOf { branches: Vec<Shape>, null: bool },
    /// `enum` of a few values.
    Enum(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
struct Input {
    defs: Vec<Shape>,
    fields: Vec<(u8, Shape)>,
    repeat: u8,
    required: Vec<u8>,
    /// A second function that refers to the same shapes, to share the load's budget.
    twice: bool,
    single: bool,
    /// A question the grammar's numbers and text are grounded in, when given.
    grounded: Option<String>,
    /// The calls in Hermes' `<tool_call>` blocks instead of atfunc's syntax.
    hermes: bool,
}

fn field_name(n: u8) -> String {
    format!("p{}", n % 16)
}

fn to_json(shape: &Shape, defs: usize, depth: usize) -> Json {
    if depth > MAX_DEPTH {
        return json!({"type": "string"});
    }
    match shape {
        Shape::Ref {
            target,
            old_style,
            described,
        } => {
            let n = usize::from(*target) % (defs + 1);
            let place = if *old_style { "definitions" } else { "$defs" };
            let mut out = json!({"$ref": format!("#/{place}/D{n}")});
            if *described {
                out["description"] = json!("described here");
            }
            out
        }
        Shape::Scalar(kind) => match kind % 7 {
            0 => json!({"type": "string"}),
            1 => json!({"type": "integer", "minimum": 1, "maximum": 9}),
            2 => json!({"type": "number"}),
            3 => json!({"type": "boolean"}),
            4 => json!({"type": ["string", "null"]}),
            5 => json!({"type": "string", "format": "date"}),
            _ => json!({}),
        },
        Shape::Object {
            fields,
            repeat,
            required,
        } => object(fields, *repeat, required, defs, depth),
        Shape::Array(item) => json!({"type": "array", "items": to_json(item, defs, depth + 1)}),
        Shape::AnyOf { branches, null } => {
            let mut list: Vec<Json> = branches
                .iter()
                .map(|b| to_json(b, defs, depth + 1))
                .collect();
            if *null {
                list.push(json!({"type": "null"}));
            }
            json!({"anyOf": list})
        }
        Shape::Enum(values) => {
            let values: Vec<Json> = values.iter().map(|v| json!(format!("v{v}"))).collect();
            json!({"enum": values})
        }
    }
}

fn object(fields: &[(u8, Shape)], repeat: u8, required: &[u8], defs: usize, depth: usize) -> Json {
    let mut properties = Map::new();
    for (name, shape) in fields {
        let value = to_json(shape, defs, depth + 1);
        properties.insert(field_name(*name), value.clone());
        for copy in 0..repeat % 12 {
            properties.insert(format!("{}_{copy}", field_name(*name)), value.clone());
        }
    }
    let required: Vec<Json> = required.iter().map(|n| json!(field_name(*n))).collect();
    json!({"type": "object", "properties": properties, "required": required})
}

fuzz_target!(|input: Input| {
    let count = input.defs.len();
    let mut defs = Map::new();
    for (i, shape) in input.defs.iter().enumerate() {
        defs.insert(format!("D{i}"), to_json(shape, count, 0));
    }
    let mut parameters = object(&input.fields, input.repeat, &input.required, count, 0);
    parameters["$defs"] = Json::Object(defs.clone());
    parameters["definitions"] = Json::Object(defs);
    let mut tools = vec![json!({"type": "function", "function": {
        "name": "fz.first", "parameters": parameters.clone()}})];
    if input.twice {
        tools.push(json!({"name": "fz.second", "parameters": parameters}));
    }
    let Ok(interfaces) = load_interfaces(&Json::Array(tools)) else {
        return;
    };
    let _ = validate_all(&interfaces);
    let _ = render_prompt(&interfaces, &PromptOptions::default());
    let mut choices = vec![Choice::Auto, Choice::Required, Choice::None];
    choices.extend(
        interfaces
            .iter()
            .map(|i| Choice::Function(i.qualified_name())),
    );
    for choice in choices {
        let options = GrammarOptions::default()
            .with_choice(choice)
            .with_single(input.single)
            .with_grounded_numbers(input.grounded.as_deref().map(numbers_in))
            .with_grounded_text(input.grounded.clone())
            .with_form(if input.hermes {
                CallForm::Hermes
            } else {
                CallForm::Atfunc
            });
        if let Ok(g) = grammar(&interfaces, &options) {
            let _ = g.to_gbnf();
            let sample = g.sample(7);
            // The calls left out are read from atfunc's syntax.
            if !input.hermes {
                left_out(&interfaces, &options, &sample);
            }
        }
    }
});

/// The grammar again with the calls of `sample` left out (`not_again`): it is built, or
/// refused for want of a call, and never offers a call it left out.
fn left_out(interfaces: &[atfunc::Interface], options: &GrammarOptions, sample: &str) {
    let catalog = atfunc::Catalog::new(interfaces.to_vec());
    let mut texts = Vec::new();
    // The calls of hostile text read and bound as a grammar leaves them out: an error
    // names a call, never a panic; a success has a call for each one read.
    match atfunc::bind::written_calls(sample, &catalog) {
        Ok(calls) => assert!(!calls.is_empty()),
        Err(why) => assert!(!why.is_empty()),
    }
    let mut not_again = Vec::new();
    for event in atfunc::parse_events(sample) {
        if let atfunc::Event::Call(call) = event {
            if let Ok(bound) = atfunc::bind(&call, &catalog) {
                if bound.body.is_none() {
                    let span = bound.span.start as usize..bound.span.end as usize;
                    texts.extend(sample.get(span).map(str::to_owned));
                    not_again.push(WrittenCall::of_args(bound.name.clone(), &bound.args));
                }
            }
        }
    }
    if not_again.is_empty() {
        return;
    }
    let without = options.clone().with_not_again(not_again);
    if let Ok(g) = grammar(interfaces, &without) {
        let _ = g.to_gbnf();
        let _ = g.sample(3);
        for text in &texts {
            assert!(!g.accepts(text), "a call left out is offered again: {text}");
        }
    }
}
