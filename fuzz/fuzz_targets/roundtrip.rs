//! Render a call from arbitrary values, parse it, get the same values back.
#![no_main]

use arbitrary::Arbitrary;
use atfunc::parse::Value;
use atfunc::{parse_events, Event};
use libfuzzer_sys::fuzz_target;

/// A value to render; the parser must read back exactly [`Gen::value`].
#[derive(Debug, Arbitrary)]
enum Gen {
    Double(String),
    Single(String),
    Int(i64),
    Float(u16, u8),
    Bool(bool, bool),
    Null(bool),
    Word(u32),
    Array(Vec<Gen>),
    Object(Vec<(String, Gen)>),
}

impl Gen {
    /// The text of the value, and the value it stands for.
    fn render(&self, depth: usize) -> (String, Value) {
        match self {
            Gen::Double(s) => (
                serde_json::to_string(s).unwrap_or_default(),
                Value::String(s.clone()),
            ),
            Gen::Single(s) => {
                let body = s.replace('\\', "\\\\").replace('\'', "\\'");
                (format!("'{body}'"), Value::String(s.clone()))
            }
            Gen::Int(i) => (i.to_string(), Value::Number(i.to_string())),
            Gen::Float(a, b) => {
                let text = format!("{a}.{b}e-{}", b % 10);
                (text.clone(), Value::Number(text))
            }
            Gen::Bool(b, python) => {
                let text = match (b, python) {
                    (true, false) => "true",
                    (true, true) => "True",
                    (false, false) => "false",
                    (false, true) => "False",
                };
                (text.to_owned(), Value::Bool(*b))
            }
            Gen::Null(python) => (
                (if *python { "None" } else { "null" }).to_owned(),
                Value::Null,
            ),
            Gen::Word(n) => {
                let word = format!("w{n}_x");
                (word.clone(), Value::Bare(word))
            }
            Gen::Array(items) if depth < 8 => {
                let (texts, values): (Vec<_>, Vec<_>) =
                    items.iter().map(|g| g.render(depth + 1)).unzip();
                (format!("[{}]", texts.join(", ")), Value::Array(values))
            }
            Gen::Object(fields) if depth < 8 => {
                let (texts, values): (Vec<_>, Vec<_>) = fields
                    .iter()
                    .map(|(k, g)| {
                        let (t, v) = g.render(depth + 1);
                        let key = serde_json::to_string(k).unwrap_or_default();
                        (format!("{key}: {t}"), (k.clone(), v))
                    })
                    .unzip();
                (format!("{{{}}}", texts.join(", ")), Value::Object(values))
            }
            Gen::Array(_) | Gen::Object(_) => ("null".to_owned(), Value::Null),
        }
    }
}

fuzz_target!(|data: (Vec<Gen>, Vec<(u16, Gen)>, Option<String>)| {
    let (positional, named, body) = data;
    let (mut args, mut want_pos) = (Vec::new(), Vec::new());
    for g in positional.iter().take(100) {
        let (t, v) = g.render(1);
        args.push(t);
        want_pos.push(v);
    }
    let mut want_named = Vec::new();
    for (k, g) in named.iter().take(100) {
        let (t, v) = g.render(1);
        let key = format!("k{k}");
        args.push(format!("{key}={t}"));
        want_named.push((key, v));
    }
    let body_json =
        body.map(|b| serde_json::to_string(&serde_json::json!({ "text": b })).unwrap_or_default());
    let mut text = format!("Now @tool.run({})", args.join(", "));
    if let Some(b) = &body_json {
        text.push_str(&format!(" with_body [[{b}]]"));
    }
    text.push_str(" and done.");
    let calls: Vec<_> = parse_events(&text)
        .into_iter()
        .filter_map(|e| match e {
            Event::Call(c) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 1, "{text}");
    assert_eq!(calls[0].positional, want_pos);
    assert_eq!(calls[0].named, want_named);
    assert_eq!(calls[0].body, body_json);
});
