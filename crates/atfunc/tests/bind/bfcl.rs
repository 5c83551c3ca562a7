//! The BFCL ground truth, end to end: every expected call of four BFCL files, written as
//! atfunc text in several styles, parsed and bound against the entry's own functions, must
//! come back with exactly the expected arguments.
//!
//! The answer files list acceptable values per argument; the first one is written (a `""`
//! among them means the argument may be left out: an optional argument whose first value is
//! `""` is left out). A dict's fields carry lists of acceptable values too, resolved the same
//! way.

use crate::call_text;

use atfunc::parse::Value;
use atfunc::{
    bind, load_interfaces, BoundCall, Call, Catalog, Event, Interface, ParamType, StreamParser,
};
use call_text::{bare_safe, first_answer, may_leave_out, quoted};
use serde_json::Value as Json;

const FILES: [&str; 4] = [
    "BFCL_v4_simple_python.json",
    "BFCL_v4_multiple.json",
    "BFCL_v4_parallel.json",
    "BFCL_v4_parallel_multiple.json",
];

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/bfcl/");

/// Ground-truth calls whose values do not fit their declared types in the BFCL data itself
/// (a Python expression for an array of floats; words for an array of integers), by case
/// id and call position. Binding must refuse them with exactly this message; every other
/// call must bind.
const NOT_BINDABLE: [(&str, usize, &str); 2] = [
    (
        "parallel_multiple_21",
        1,
        "The call of function 'linear_regression_fit' has 2 problems:\n\
         - Invalid value for parameter 'x' of function 'linear_regression_fit': expected array ([...]), \
         got \"data['sales']\"\n\
         - Invalid value for parameter 'y' of function 'linear_regression_fit': expected array ([...]), \
         got \"data['future_sales']\"",
    ),
    (
        "parallel_multiple_94",
        0,
        "Invalid value for parameter 'elements[0]' of function 'sort_list': expected integer, got \"apple\"",
    ),
];

/// Arguments by name, in writing order.
type Args = Vec<(String, Json)>;

/// One expected call: the name as BFCL spells it and the arguments to write, in
/// ground-truth order.
#[derive(Debug, Clone)]
struct Expected {
    name: String,
    args: Args,
}

struct Case {
    id: String,
    catalog: Catalog,
    calls: Vec<Expected>,
}

fn read_lines(path: &str) -> Vec<Json> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{path}: {e}")))
        .collect()
}

fn cases(file: &str) -> Vec<Case> {
    let questions = read_lines(&format!("{DATA}{file}"));
    let answers = read_lines(&format!("{DATA}possible_answer/{file}"));
    assert_eq!(questions.len(), answers.len(), "{file}");
    assert!(!questions.is_empty(), "{file}");
    questions
        .iter()
        .zip(&answers)
        .map(|(q, a)| {
            let id = q["id"].as_str().unwrap().to_owned();
            assert_eq!(a["id"], q["id"]);
            let interfaces =
                load_interfaces(&q["function"]).unwrap_or_else(|e| panic!("{id}: {e}"));
            assert!(!interfaces.is_empty(), "{id}: no functions loaded");
            let calls = a["ground_truth"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|call| call.as_object().unwrap())
                .map(|(name, args)| expected(&interfaces, name, args))
                .collect();
            Case {
                id,
                catalog: Catalog::new(interfaces),
                calls,
            }
        })
        .collect()
}

fn expected(interfaces: &[Interface], name: &str, args: &Json) -> Expected {
    let interface = interfaces
        .iter()
        .find(|i| i.qualified_name() == name)
        .unwrap_or_else(|| panic!("ground truth names unknown function {name}"));
    let mut out = Vec::new();
    for (param, acceptable) in args.as_object().unwrap() {
        let acceptable = acceptable.as_array().unwrap();
        let declared = interface.params.iter().find(|p| &p.name == param);
        let required = declared.is_some_and(|p| p.required);
        // Leave out what may be left out when writing it is not called for (or not
        // possible: two answers name arguments the function does not declare).
        if may_leave_out(acceptable, required, declared.is_some()) {
            continue;
        }
        let value = acceptable
            .iter()
            .find(|v| *v != "")
            .unwrap_or_else(|| panic!("{name}.{param}: no value to write"));
        out.push((param.clone(), first_answer(value)));
    }
    Expected {
        name: name.to_owned(),
        args: out,
    }
}

// ---------------------------------------------------------------- comparing

/// Equality with numbers compared by value (`5` equals `5.0`).
fn same(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => x.as_f64() == y.as_f64(),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn check(case: &Case, expected: &Expected, bound: &BoundCall) -> Result<(), String> {
    if bound.name != expected.name {
        return Err(format!(
            "{}: bound {} instead of {}",
            case.id, bound.name, expected.name
        ));
    }
    let want: serde_json::Map<String, Json> = expected.args.iter().cloned().collect();
    if !same(
        &Json::Object(bound.args.clone()),
        &Json::Object(want.clone()),
    ) {
        return Err(format!(
            "{}: {} args {} instead of {}",
            case.id,
            expected.name,
            Json::Object(bound.args.clone()),
            Json::Object(want)
        ));
    }
    Ok(())
}

/// How one call came out, when it came out as expected.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// Bound with the expected arguments.
    Bound,
    /// Refused with the message [`NOT_BINDABLE`] expects.
    Refused,
}

/// Checks the bind result of the case's call number `n`.
fn judge(
    case: &Case,
    n: usize,
    result: Result<BoundCall, atfunc::BindError>,
) -> Result<Outcome, String> {
    let expected = &case.calls[n];
    let refusal = NOT_BINDABLE
        .iter()
        .find(|(id, at, _)| *id == case.id && *at == n);
    match (result, refusal) {
        (Ok(bound), None) => check(case, expected, &bound).map(|()| Outcome::Bound),
        (Err(e), Some((_, _, message))) if e.to_string() == *message => Ok(Outcome::Refused),
        (Err(e), _) => Err(format!("{}: {} did not bind: {e}", case.id, expected.name)),
        (Ok(bound), Some(_)) => Err(format!(
            "{}: {} bound unexpectedly: {:?}",
            case.id, expected.name, bound.args
        )),
    }
}

/// Tallies outcomes for one file.
#[derive(Default)]
struct Score {
    total: usize,
    bound: usize,
    refused: usize,
    failures: Vec<String>,
}

impl Score {
    fn add(&mut self, outcome: Result<Outcome, String>) {
        self.total += 1;
        match outcome {
            Ok(Outcome::Bound) => self.bound += 1,
            Ok(Outcome::Refused) => self.refused += 1,
            Err(e) => self.failures.push(e),
        }
    }

    fn report(&self, file: &str, what: &str) {
        let good = self.bound + self.refused;
        println!(
            "{file}: {good}/{} {what} as expected ({:.1}%): {} bound, {} refused as the data demands",
            self.total,
            100.0 * good as f64 / self.total.max(1) as f64,
            self.bound,
            self.refused
        );
        assert!(
            self.failures.is_empty(),
            "{file}: {} failures, first ones:\n{}",
            self.failures.len(),
            self.failures
                .iter()
                .take(10)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n\n")
        );
        assert_eq!(good, self.total, "{file}");
        assert!(self.total > 0, "{file}");
    }
}

// ---------------------------------------------------------------- calls built directly

fn to_value(json: &Json) -> Value {
    match json {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => Value::Number(n.to_string()),
        Json::String(s) => Value::String(s.clone()),
        Json::Array(items) => Value::Array(items.iter().map(to_value).collect()),
        Json::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), to_value(v)))
                .collect(),
        ),
    }
}

/// The binder alone, on calls built from the ground truth: named arguments, then
/// positional ones where the declared order allows.
#[test]
fn ground_truth_binds_from_built_calls() {
    for file in FILES {
        let cases = cases(file);
        let mut score = Score::default();
        for case in &cases {
            for (n, expected) in case.calls.iter().enumerate() {
                for positional in [false, true] {
                    let call = built_call(&case.catalog, expected, positional);
                    score.add(judge(case, n, bind(&call, &case.catalog)));
                }
            }
        }
        score.report(file, "built calls bound");
    }
}

fn built_call(catalog: &Catalog, expected: &Expected, positional: bool) -> Call {
    let (_, interface) = catalog.find(&expected.name).unwrap();
    let (lead, rest) = split_positional(interface, expected, positional);
    Call::new(expected.name.clone())
        .with_positional(lead.iter().map(|(_, v)| to_value(v)).collect())
        .with_named(rest.iter().map(|(k, v)| (k.clone(), to_value(v))).collect())
}

/// The arguments in declared order, split into the leading run that can be written by
/// position (when `positional`) and the rest, written by name.
fn split_positional(interface: &Interface, expected: &Expected, positional: bool) -> (Args, Args) {
    let mut ordered: Vec<(usize, (String, Json))> = expected
        .args
        .iter()
        .map(|(k, v)| {
            let at = interface
                .params
                .iter()
                .position(|p| &p.name == k)
                .unwrap_or(usize::MAX);
            (at, (k.clone(), v.clone()))
        })
        .collect();
    if !positional {
        return (Vec::new(), expected.args.clone());
    }
    ordered.sort_by_key(|(at, _)| *at);
    let lead_len = ordered
        .iter()
        .enumerate()
        .take_while(|(i, (at, _))| i == at)
        .count();
    let rest = ordered.split_off(lead_len);
    (
        ordered.into_iter().map(|(_, a)| a).collect(),
        rest.into_iter().map(|(_, a)| a).collect(),
    )
}

// ---------------------------------------------------------------- calls written as text

/// How one rendition writes its calls.
#[derive(Debug, Clone, Copy)]
struct Style {
    /// Leading arguments by position where the declared order allows.
    positional: bool,
    /// `'` or `"` around strings.
    quote: char,
    /// `=` or `:` after a parameter name.
    assign: &'static str,
    /// Unquoted strings where that reads the same.
    bare: bool,
    /// Numbers, booleans, arrays and objects of declared non-string types as quoted text.
    stringly: bool,
    /// Python's `True`/`False` for booleans.
    python: bool,
    /// Between arguments.
    separator: &'static str,
    /// A comma after the last argument.
    trailing_comma: bool,
    /// Function names in upper case.
    shout: bool,
    /// How calls sit in the text.
    layout: Layout,
}

#[derive(Debug, Clone, Copy)]
enum Layout {
    /// Each call in a sentence of its own.
    Prose,
    /// In a fenced code block, one call per line.
    Fence,
    /// In inline backticks, all on one line.
    Backticks,
    /// All calls on one line, separated by prose.
    OneLine,
}

const STYLES: [Style; 6] = [
    Style {
        positional: true,
        quote: '"',
        assign: "=",
        bare: false,
        stringly: false,
        python: false,
        separator: ", ",
        trailing_comma: false,
        shout: false,
        layout: Layout::Prose,
    },
    Style {
        positional: false,
        quote: '\'',
        assign: "=",
        bare: false,
        stringly: false,
        python: true,
        separator: " , ",
        trailing_comma: true,
        shout: false,
        layout: Layout::Fence,
    },
    Style {
        positional: false,
        quote: '"',
        assign: ": ",
        bare: true,
        stringly: false,
        python: false,
        separator: ",\n    ",
        trailing_comma: true,
        shout: true,
        layout: Layout::OneLine,
    },
    Style {
        positional: true,
        quote: '\'',
        assign: " = ",
        bare: false,
        stringly: true,
        python: false,
        separator: ",",
        trailing_comma: false,
        shout: false,
        layout: Layout::Backticks,
    },
    Style {
        positional: true,
        quote: '"',
        assign: ":",
        bare: true,
        stringly: false,
        python: true,
        separator: ",  ",
        trailing_comma: false,
        shout: true,
        layout: Layout::Fence,
    },
    Style {
        positional: false,
        quote: '"',
        assign: "=",
        bare: false,
        stringly: true,
        python: false,
        separator: ", ",
        trailing_comma: false,
        shout: false,
        layout: Layout::Prose,
    },
];

fn literal(value: &Json, style: &Style, top: bool) -> String {
    match value {
        Json::Null => if style.python { "None" } else { "null" }.to_owned(),
        Json::Bool(b) => match (style.python, b) {
            (true, true) => "True".to_owned(),
            (true, false) => "False".to_owned(),
            (false, b) => b.to_string(),
        },
        Json::Number(n) => n.to_string(),
        Json::String(s) if top && style.bare && bare_safe(s) => s.clone(),
        Json::String(s) => quoted(s, style.quote),
        Json::Array(items) => {
            let inner: Vec<String> = items.iter().map(|v| literal(v, style, false)).collect();
            format!("[{}]", inner.join(", "))
        }
        Json::Object(fields) => {
            let inner: Vec<String> = fields
                .iter()
                .map(|(k, v)| format!("{}: {}", quoted(k, style.quote), literal(v, style, false)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
    }
}

fn argument(value: &Json, ty: Option<&ParamType>, style: &Style) -> String {
    let stringly = style.stringly
        && !value.is_string()
        && matches!(
            ty,
            Some(
                ParamType::Number
                    | ParamType::Integer
                    | ParamType::Boolean
                    | ParamType::Object { .. }
                    | ParamType::Array { .. }
            )
        );
    if stringly {
        quoted(&value.to_string(), style.quote)
    } else {
        literal(value, style, true)
    }
}

fn write_call(catalog: &Catalog, expected: &Expected, style: &Style) -> String {
    let (_, interface) = catalog.find(&expected.name).unwrap();
    let ty = |name: &str| {
        interface
            .params
            .iter()
            .find(|p| p.name == name)
            .map(|p| &p.ty)
    };
    let (lead, rest) = split_positional(interface, expected, style.positional);
    let mut args: Vec<String> = lead
        .iter()
        .map(|(k, v)| argument(v, ty(k), style))
        .collect();
    args.extend(
        rest.iter()
            .map(|(k, v)| format!("{k}{}{}", style.assign, argument(v, ty(k), style))),
    );
    let name = if style.shout {
        expected.name.to_uppercase()
    } else {
        expected.name.clone()
    };
    let mut text = format!("@{name}({}", args.join(style.separator));
    if style.trailing_comma && !args.is_empty() {
        text.push(',');
    }
    text.push(')');
    text
}

fn write_text(case: &Case, style: &Style) -> String {
    let calls: Vec<String> = case
        .calls
        .iter()
        .map(|c| write_call(&case.catalog, c, style))
        .collect();
    match style.layout {
        Layout::Prose => calls
            .iter()
            .map(|c| format!("Sure, here is the call: {c}. It should answer that.\n"))
            .collect(),
        Layout::Fence => format!(
            "Calling the tools now:\n```\n{}\n```\nDone.",
            calls.join("\n")
        ),
        Layout::Backticks => {
            calls
                .iter()
                .map(|c| format!("run `{c}` "))
                .collect::<String>()
                + "and wait."
        }
        Layout::OneLine => format!("First {} and that is all.", calls.join(" then ")),
    }
}

fn parsed_calls(text: &str) -> (Vec<Call>, Vec<String>) {
    let mut calls = Vec::new();
    let mut problems = Vec::new();
    for event in atfunc::parse_events(text) {
        match event {
            Event::Call(call) => calls.push(call),
            Event::Malformed { error, text, .. } => {
                problems.push(format!("malformed {text:?}: {error}"))
            }
            _ => {}
        }
    }
    (calls, problems)
}

/// The whole path: ground truth written as atfunc text in six styles, parsed, bound.
#[test]
fn ground_truth_round_trips_through_text() {
    for file in FILES {
        let cases = cases(file);
        let mut score = Score::default();
        for case in &cases {
            for style in &STYLES {
                let text = write_text(case, style);
                let (calls, problems) = parsed_calls(&text);
                if !problems.is_empty() || calls.len() != case.calls.len() {
                    score.total += case.calls.len();
                    score.failures.push(format!(
                        "{} {style:?}: {} calls found for {} expected {problems:?}\n{text}",
                        case.id,
                        calls.len(),
                        case.calls.len()
                    ));
                    continue;
                }
                for (n, call) in calls.iter().enumerate() {
                    score.add(
                        judge(case, n, bind(call, &case.catalog))
                            .map_err(|e| format!("{e}\n{text}")),
                    );
                }
            }
        }
        score.report(file, "calls found and bound");
    }
}

/// The same texts fed in uneven chunks give the same calls.
#[test]
fn ground_truth_text_in_chunks() {
    for file in FILES {
        for (n, case) in cases(file).iter().enumerate() {
            let style = &STYLES[n % STYLES.len()];
            let text = write_text(case, style);
            let (whole, _) = parsed_calls(&text);
            let chunk = 1 + n % 7;
            let mut parser = StreamParser::default();
            let mut events = Vec::new();
            for piece in text.as_bytes().chunks(chunk) {
                parser.feed_into(piece, &mut events);
            }
            parser.finish_into(&mut events);
            let chunked: Vec<Call> = events
                .into_iter()
                .filter_map(|e| match e {
                    Event::Call(c) => Some(c),
                    _ => None,
                })
                .collect();
            assert_eq!(chunked, whole, "{} in {chunk}-byte chunks", case.id);
            assert_eq!(whole.len(), case.calls.len(), "{}", case.id);
        }
    }
}
