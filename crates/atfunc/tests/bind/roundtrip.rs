//! Round trip: a random valid interface and random values of its declared types, written as
//! an atfunc call in random styles, parsed (whole and in random chunks) and bound, give
//! back the same values.

use crate::call_text;

use atfunc::{bind, Call, Catalog, Event, Interface, Param, ParamType, StreamParser};
use call_text::{bare_safe, quoted};
use proptest::prelude::*;
use serde_json::{Map, Value as Json};
use unicase::UniCase;

// ---------------------------------------------------------------- interfaces

/// Identifiers with non-ASCII letters, some with case foldings of their own (`ß`, `Σ`).
fn identifier() -> impl Strategy<Value = String> {
    "[a-zA-Z_éñøßλжΣ][a-zA-Z0-9_éñøßλжΣ]{0,9}"
}

fn scalar_type() -> impl Strategy<Value = ParamType> {
    prop_oneof![
        Just(ParamType::String),
        Just(ParamType::Number),
        Just(ParamType::Integer),
        Just(ParamType::Boolean),
        Just(ParamType::Any),
    ]
}

fn param_type() -> impl Strategy<Value = ParamType> {
    scalar_type().prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            3 => inner.clone(),
            1 => proptest::option::of(inner.clone())
                .prop_map(|items| ParamType::Array { items: items.map(|ty| Box::new(Param::new("", ty))) }),
            1 => params(inner, 4).prop_map(|properties| ParamType::Object { properties }),
        ]
    })
}

/// Up to `max` parameters of types drawn from `ty`, names distinct after case folding
/// (as validation demands).
fn params(ty: impl Strategy<Value = ParamType>, max: usize) -> impl Strategy<Value = Vec<Param>> {
    proptest::collection::vec((identifier(), ty, any::<bool>()), 0..=max).prop_map(|list| {
        let mut seen = std::collections::HashSet::new();
        list.into_iter()
            .filter(|(name, _, _)| seen.insert(UniCase::new(name.as_str()).to_folded_case()))
            .map(|(name, ty, required)| {
                let param = Param::new(name, ty);
                if required {
                    param.required()
                } else {
                    param
                }
            })
            .collect()
    })
}

fn interface() -> impl Strategy<Value = Interface> {
    (
        proptest::option::of(proptest::collection::vec(identifier(), 1..=2)),
        identifier(),
        params(param_type(), 6),
    )
        .prop_map(|(domain, name, params)| {
            let domain = domain.map(|parts| parts.join("."));
            let mut interface = Interface::new(name);
            interface.domain = domain;
            interface.params = params;
            interface
        })
}

// ---------------------------------------------------------------- values

fn any_json() -> impl Strategy<Value = Json> {
    let leaf = prop_oneof![
        any::<String>().prop_map(Json::from),
        (-1_000_000_000i64..1_000_000_000).prop_map(Json::from),
        (-1e9f64..1e9).prop_map(Json::from),
        any::<bool>().prop_map(Json::from),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Json::Array),
            proptest::collection::vec(("[a-z]{1,5}", inner), 0..4)
                .prop_map(|fields| Json::Object(fields.into_iter().collect())),
        ]
    })
}

/// A value of type `ty`, as the bound call should hold it.
fn value(ty: &ParamType) -> BoxedStrategy<Json> {
    match ty {
        ParamType::String => any::<String>().prop_map(Json::from).boxed(),
        ParamType::Number => prop_oneof![
            (-1e12f64..1e12).prop_map(Json::from),
            (-1_000_000i64..1_000_000).prop_map(Json::from),
        ]
        .boxed(),
        ParamType::Integer => (-1_000_000_000_000_000i64..1_000_000_000_000_000)
            .prop_map(Json::from)
            .boxed(),
        ParamType::Boolean => any::<bool>().prop_map(Json::from).boxed(),
        ParamType::Any => any_json().boxed(),
        ParamType::Array { items } => {
            let item = match items {
                Some(item) => value(&item.ty),
                None => any_json().boxed(),
            };
            proptest::collection::vec(item, 0..4)
                .prop_map(Json::Array)
                .boxed()
        }
        ParamType::Object { properties } => given(properties)
            .prop_map(|fields| Json::Object(fields.into_iter().collect()))
            .boxed(),
        // `ParamType` may grow; a new type needs its own strategy here.
        other => unimplemented!("no values generated for {other:?}"),
    }
}

/// Values for the required parameters and a random choice of the optional ones.
fn given(params: &[Param]) -> BoxedStrategy<Vec<(String, Json)>> {
    let per_param: Vec<BoxedStrategy<Option<(String, Json)>>> = params
        .iter()
        .map(|p| {
            let name = p.name.clone();
            let v = value(&p.ty).prop_map(move |v| (name.clone(), v));
            if p.required {
                v.prop_map(Some).boxed()
            } else {
                proptest::option::of(v).boxed()
            }
        })
        .collect();
    per_param
        .prop_map(|list| list.into_iter().flatten().collect())
        .boxed()
}

// ---------------------------------------------------------------- writing

/// Draws writing choices from a random byte string, so proptest can shrink them.
struct Dice<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Dice<'_> {
    fn roll(&mut self, sides: u8) -> u8 {
        let byte = if self.bytes.is_empty() {
            0
        } else {
            self.bytes[self.at % self.bytes.len()]
        };
        self.at += 1;
        byte % sides
    }

    fn space(&mut self) -> &'static str {
        ["", " ", "  ", "\n", "\n  ", "\r\n", "\t"][self.roll(7) as usize]
    }
}

fn string(text: &str, dice: &mut Dice<'_>, bare_ok: bool) -> String {
    match dice.roll(3) {
        0 => quoted(text, '\''),
        1 if bare_ok && bare_safe(text) => text.to_owned(),
        _ => quoted(text, '"'),
    }
}

/// `value` (of declared type `ty`, when known) in one of the ways a model may write it.
fn write_value(value: &Json, ty: Option<&ParamType>, dice: &mut Dice<'_>, top: bool) -> String {
    match (value, ty) {
        (Json::Bool(b), Some(ParamType::Boolean)) => match dice.roll(4) {
            0 => if *b { "True" } else { "False" }.to_owned(),
            1 => string(&b.to_string(), dice, false),
            2 if top => if *b { "TRUE" } else { "false" }.to_owned(),
            _ => b.to_string(),
        },
        (Json::Number(n), Some(ParamType::Integer)) => match dice.roll(4) {
            0 => format!("{n}.0"),
            1 => string(&n.to_string(), dice, false),
            2 if n.as_i64().is_some_and(|i| i >= 0) => format!("+{n}"),
            _ => n.to_string(),
        },
        (Json::Number(n), Some(ParamType::Number)) => {
            let f = n.as_f64().unwrap();
            match dice.roll(4) {
                0 => format!("{f:e}"),
                1 => string(&n.to_string(), dice, false),
                2 if f >= 0.0 => format!("+{n}"),
                _ => n.to_string(),
            }
        }
        (
            Json::Array(_) | Json::Object(_),
            Some(ParamType::Array { .. } | ParamType::Object { .. }),
        ) if dice.roll(4) == 0 => {
            // JSON text inside a string.
            string(&value.to_string(), dice, false)
        }
        (Json::Array(items), ty) => {
            let item_ty = match ty {
                Some(ParamType::Array { items: Some(item) }) => Some(&item.ty),
                Some(ParamType::Any) | None => None,
                Some(_) => None,
            };
            let mut out = String::from("[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(dice.space());
                out.push_str(&write_value(item, item_ty, dice, false));
                out.push_str(dice.space());
            }
            out.push(']');
            out
        }
        (Json::Object(fields), ty) => {
            let properties: &[Param] = match ty {
                Some(ParamType::Object { properties }) => properties,
                _ => &[],
            };
            let mut out = String::from("{");
            for (i, (key, field)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let field_ty = properties.iter().find(|p| &p.name == key).map(|p| &p.ty);
                out.push_str(dice.space());
                out.push_str(&string(key, dice, false));
                out.push_str(dice.space());
                out.push(':');
                out.push_str(dice.space());
                out.push_str(&write_value(field, field_ty, dice, false));
            }
            out.push_str(dice.space());
            out.push('}');
            out
        }
        (Json::String(s), _) => string(s, dice, top),
        (Json::Bool(b), _) => match dice.roll(2) {
            0 => if *b { "True" } else { "False" }.to_owned(),
            _ => b.to_string(),
        },
        (Json::Null, _) => ["null", "None"][dice.roll(2) as usize].to_owned(),
        (Json::Number(n), _) => n.to_string(),
    }
}

/// A name with the case of its letters shuffled (when the catalog ignores case).
fn shuffle_case(name: &str, dice: &mut Dice<'_>) -> String {
    name.chars()
        .map(|c| match dice.roll(3) {
            0 => c.to_uppercase().collect::<String>(),
            1 => c.to_lowercase().collect::<String>(),
            _ => c.to_string(),
        })
        .collect()
}

fn write_call(
    interface: &Interface,
    args: &[(String, Json)],
    dice: &mut Dice<'_>,
    case_sensitive: bool,
) -> String {
    let ty = |name: &str| {
        interface
            .params
            .iter()
            .find(|p| p.name == name)
            .map(|p| &p.ty)
    };
    // The leading run of declared parameters that are all given may go by position.
    let declared_run = interface
        .params
        .iter()
        .take_while(|p| args.iter().any(|(k, _)| *k == p.name))
        .count();
    let positional = dice.roll(declared_run as u8 + 1) as usize;
    let mut parts = Vec::new();
    for p in interface.params.iter().take(positional) {
        let (_, v) = args.iter().find(|(k, _)| *k == p.name).unwrap();
        parts.push(write_value(v, Some(&p.ty), dice, true));
    }
    let mut named: Vec<&(String, Json)> = args
        .iter()
        .filter(|(k, _)| {
            !interface
                .params
                .iter()
                .take(positional)
                .any(|p| &p.name == k)
        })
        .collect();
    // Named arguments in any order.
    for i in (1..named.len()).rev() {
        let j = dice.roll(i as u8 + 1) as usize;
        named.swap(i, j);
    }
    for (k, v) in named {
        let name = if case_sensitive {
            k.clone()
        } else {
            shuffle_case(k, dice)
        };
        let assign = ["=", ":"][dice.roll(2) as usize];
        let (before, after) = (dice.space(), dice.space());
        parts.push(format!(
            "{name}{before}{assign}{after}{}",
            write_value(v, ty(k), dice, true)
        ));
    }
    let name = if case_sensitive {
        interface.qualified_name()
    } else {
        shuffle_case(&interface.qualified_name(), dice)
    };
    let mut text = format!("@{name}({}", dice.space());
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            text.push_str(dice.space());
            text.push(',');
            text.push_str(dice.space());
        }
        text.push_str(part);
    }
    if !parts.is_empty() && dice.roll(3) == 0 {
        text.push(',');
    }
    text.push_str(dice.space());
    text.push(')');
    let before =
        ["", "Sure. ", "Calling it:\n", "```\n", "Result follows `"][dice.roll(5) as usize];
    let after = ["", " Done.", "\n", "\n```", "` now."][dice.roll(5) as usize];
    format!("{before}{text}{after}")
}

// ---------------------------------------------------------------- comparing

fn same(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            x == y || (x - y).abs() <= f64::EPSILON * x.abs().max(y.abs())
        }
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn calls_of(events: Vec<Event>) -> Vec<Call> {
    events
        .into_iter()
        .filter_map(|e| match e {
            Event::Call(c) => Some(c),
            _ => None,
        })
        .collect()
}

/// An interface, the arguments of one call to it, writing dice, chunk sizes, and whether
/// names match exactly.
type Case = (Interface, Vec<(String, Json)>, Vec<u8>, Vec<usize>, bool);

fn case() -> impl Strategy<Value = Case> {
    interface().prop_flat_map(|interface| {
        let args = given(&interface.params);
        (
            Just(interface),
            args,
            proptest::collection::vec(any::<u8>(), 1..64),
            proptest::collection::vec(1usize..32, 1..8),
            proptest::bool::weighted(0.2),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn written_calls_bind_to_the_values_they_were_written_from(
        (interface, args, dice, chunks, case_sensitive) in case()
    ) {
        let mut dice = Dice { bytes: &dice, at: 0 };
        let text = write_call(&interface, &args, &mut dice, case_sensitive);
        let names = if case_sensitive {
            atfunc::bind::NameMatch::ExactCase
        } else {
            atfunc::bind::NameMatch::IgnoreCase
        };
        let catalog = Catalog::new(vec![interface.clone()]).matching(names);

        let calls = calls_of(atfunc::parse_events(&text));
        prop_assert_eq!(calls.len(), 1, "text: {}", text);
        let bound = bind(&calls[0], &catalog);
        prop_assert!(bound.is_ok(), "{} from {}", bound.unwrap_err(), text);
        let bound = bound.unwrap();
        prop_assert_eq!(&bound.name, &interface.qualified_name());
        let want: Map<String, Json> = args.iter().cloned().collect();
        prop_assert!(
            same(&Json::Object(bound.args.clone()), &Json::Object(want.clone())),
            "bound {} instead of {} from {}", Json::Object(bound.args.clone()), Json::Object(want), text
        );
        // Declared order, declared spelling.
        let order: Vec<&String> = interface.params.iter().map(|p| &p.name).filter(|n| bound.args.contains_key(*n)).collect();
        prop_assert_eq!(bound.args.keys().collect::<Vec<_>>(), order);

        // Any chunking finds the same call.
        let mut parser = StreamParser::default();
        let mut events = Vec::new();
        let bytes = text.as_bytes();
        let (mut at, mut i) = (0, 0);
        while at < bytes.len() {
            let end = (at + chunks[i % chunks.len()]).min(bytes.len());
            parser.feed_into(&bytes[at..end], &mut events);
            at = end;
            i += 1;
        }
        parser.finish_into(&mut events);
        prop_assert_eq!(calls_of(events), calls);
    }
}
