//! JSON Schema `format` from loading to binding, and parameters' own parsers: a value that
//! is not of its format is refused before the tool runs, in words the model can act on,
//! whether the answer arrives whole or in chunks.

use atfunc::interface::StringFormat;
use atfunc::render::render_interface;
use atfunc::{bind, load_interfaces_str, BindError, Catalog, Event, StreamParser};
use serde_json::{json, Value as Json};

const TOOLS: &str = r#"[{"type": "function", "function": {
    "name": "book",
    "description": "Books a room.",
    "parameters": {"type": "object", "properties": {
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "starts": {"type": "string", "format": "time"},
        "email": {"type": "string", "format": "email"},
        "link": {"type": "string", "format": "uri"},
        "id": {"type": "string", "format": "uuid"},
        "v4": {"type": "string", "format": "ipv4"},
        "v6": {"type": "string", "format": "ipv6"},
        "secret": {"type": "string", "format": "password"},
        "size": {"type": "string", "enum": ["S", "M", "L"]},
        "guests": {"type": "array", "items": {"type": "string", "format": "email"}},
        "room": {"type": "object", "properties": {"free_from": {"type": "string", "format": "date"}}}
    }, "required": ["day"]}}}]"#;

fn catalog() -> Catalog {
    Catalog::new(load_interfaces_str(TOOLS).expect("tools load"))
}

/// Parses `text` fed in chunks of `size` bytes (whole when 0) and binds its one call.
fn bind_text(text: &str, size: usize, catalog: &Catalog) -> Result<Json, BindError> {
    let mut parser = StreamParser::default();
    let mut events = Vec::new();
    if size == 0 {
        events.extend(parser.feed_str(text));
    } else {
        for chunk in text.as_bytes().chunks(size) {
            events.extend(parser.feed(chunk));
        }
    }
    parser.finish_into(&mut events);
    let calls: Vec<_> = events
        .into_iter()
        .filter_map(|e| match e {
            Event::Call(call) => Some(call),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 1, "one call in {text:?}");
    bind(&calls[0], catalog).map(|bound| Json::Object(bound.args))
}

/// Binds `text` whole, in 1-byte and in 3-byte chunks; all three must agree.
fn bind_all_ways(text: &str, catalog: &Catalog) -> Result<Json, String> {
    let whole = bind_text(text, 0, catalog).map_err(|e| e.to_string());
    for size in [1, 3] {
        let chunked = bind_text(text, size, catalog).map_err(|e| e.to_string());
        assert_eq!(chunked, whole, "{text:?} in {size}-byte chunks");
    }
    whole
}

fn refused(text: &str) -> String {
    match bind_all_ways(text, &catalog()) {
        Ok(args) => panic!("{text:?} bound as {args}"),
        Err(message) => message,
    }
}

#[test]
fn the_loader_keeps_format() {
    let tools = load_interfaces_str(TOOLS).expect("tools load");
    let formats: Vec<(&str, Option<&str>)> = tools[0]
        .params
        .iter()
        .map(|p| (p.name.as_str(), p.format.as_deref()))
        .collect();
    assert_eq!(formats[0], ("day", Some("date")));
    assert_eq!(formats[8], ("secret", Some("password")));
    assert_eq!(tools[0].params[8].known_format(), None);
    assert_eq!(
        tools[0].params[1].known_format(),
        Some(StringFormat::DateTime)
    );

    // A format that is not a string is left out, with a warning; a strict load refuses it.
    let odd = r#"[{"name": "f", "parameters": {"type": "object", "properties": {"d": {"type": "string", "format": 7}}}}]"#;
    let limits = atfunc::interface::LoadLimits::default();
    let loaded = atfunc::interface::LoadOptions::default()
        .with_limits(limits)
        .load_str(odd)
        .unwrap();
    assert_eq!(loaded.interfaces[0].params[0].format, None);
    assert_eq!(
        loaded.warnings[0].message,
        "'parameters.d.format' must be a string such as \"date\" or \"email\", found a number; it is left out"
    );
    let err = atfunc::interface::LoadOptions::default()
        .with_limits(limits)
        .with_strictness(atfunc::interface::Strictness::Strict)
        .load_str(odd)
        .unwrap_err();
    assert!(
        err.to_string().contains(".format' must be a string"),
        "{err}"
    );
}

#[test]
fn valid_values_bind_unchanged() {
    let text = r#"@book(day="2024-02-29", at="2026-03-01T09:00:00+01:00", starts="09:30:00",
        email="ada@example.com", link="https://example.com/rooms?id=4", id="123e4567-e89b-12d3-a456-426614174000",
        v4="192.0.2.1", v6="2001:db8::1", secret="not checked", size="M",
        guests=["bo@example.org", "cy@example.net"], room={"free_from": "2026-03-01"})"#;
    let args = bind_all_ways(text, &catalog()).expect("binds");
    assert_eq!(args["day"], "2024-02-29");
    assert_eq!(args["guests"], json!(["bo@example.org", "cy@example.net"]));
}

#[test]
fn each_format_refuses_in_words_the_model_can_act_on() {
    let f = "Invalid value for parameter";
    let cases = [
        (
            r#"@book(day="2026-02-30")"#,
            format!(
                r#"{f} 'day' of function 'book': "2026-02-30" is not a date: February 2026 has 28 days"#
            ),
        ),
        (
            r#"@book(day="next friday")"#,
            format!(
                r#"{f} 'day' of function 'book': "next friday" is not a date: write it as YYYY-MM-DD, as in 2026-02-28"#
            ),
        ),
        (
            r#"@book(day="2026-03-01", at="2026-03-01T09:00:00")"#,
            format!(
                r#"{f} 'at' of function 'book': "2026-03-01T09:00:00" is not a date and time: it has no time zone offset: end it with Z for UTC or with one like +01:00"#
            ),
        ),
        (
            r#"@book(day="2026-03-01", starts="25:00:00")"#,
            format!(
                r#"{f} 'starts' of function 'book': "25:00:00" is not a time: hours run from 00 to 23"#
            ),
        ),
        (
            r#"@book(day="2026-03-01", email="ada at example.com")"#,
            format!(
                r#"{f} 'email' of function 'book': "ada at example.com" is not an email address: it has no @: write it as name@domain, as in ada@example.com"#
            ),
        ),
        (
            r#"@book(day="2026-03-01", link="example.com/rooms")"#,
            format!(
                r#"{f} 'link' of function 'book': "example.com/rooms" is not a URI: it has no scheme: write an absolute URI, as in https://example.com/path"#
            ),
        ),
        (
            r#"@book(day="2026-03-01", id="1234")"#,
            format!(
                r#"{f} 'id' of function 'book': "1234" is not a UUID: write it as 32 hex digits in groups of 8-4-4-4-12, as in 123e4567-e89b-12d3-a456-426614174000"#
            ),
        ),
        (
            r#"@book(day="2026-03-01", v4="300.1.1.1")"#,
            format!(
                r#"{f} 'v4' of function 'book': "300.1.1.1" is not an IPv4 address: write it as four numbers from 0 to 255 separated by dots, as in 192.0.2.1"#
            ),
        ),
        (
            r#"@book(day="2026-03-01", v6="2001:db8:::1")"#,
            format!(
                r#"{f} 'v6' of function 'book': "2001:db8:::1" is not an IPv6 address: write it as eight groups of up to four hex digits separated by colons, :: standing for a run of zero groups, as in 2001:db8::1"#
            ),
        ),
        (
            r#"@book(day="2026-03-01", guests=["bo@example.org", "cy"])"#,
            format!(
                r#"{f} 'guests[1]' of function 'book': "cy" is not an email address: it has no @: write it as name@domain, as in ada@example.com"#
            ),
        ),
        (
            r#"@book(day="2026-03-01", room={"free_from": "2026-04-31"})"#,
            format!(
                r#"{f} 'room.free_from' of function 'book': "2026-04-31" is not a date: April 2026 has 30 days"#
            ),
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(refused(text), expected, "{text}");
    }
}

#[test]
fn the_format_is_checked_after_coercion() {
    // A bare number written for a date-formatted string is the string as written, and is
    // then refused as a date, not as a type.
    assert!(refused("@book(day=20260301)").contains(r#""20260301" is not a date"#));
    // Positional arguments are checked the same way.
    let args = bind_all_ways(r#"@book("2026-03-01")"#, &catalog()).expect("binds");
    assert_eq!(args["day"], "2026-03-01");
    assert!(refused(r#"@book("2026-02-29")"#).ends_with("February 2026 has 28 days"));
}

#[test]
fn the_prompt_shows_checked_formats() {
    let tools = load_interfaces_str(TOOLS).expect("tools load");
    let text = render_interface(&tools[0]);
    assert!(text.contains("<*day{date}>"), "{text}");
    assert!(text.contains("<at{date-time}>"), "{text}");
    assert!(text.contains("<guests{array of email}>"), "{text}");
    // An unchecked format is not promised.
    assert!(text.contains("<secret>"), "{text}");
}

#[test]
fn a_parser_runs_after_the_format_and_before_the_choices() {
    let mut catalog = catalog();
    // Sizes written in words are the model's habit; the tool takes letters.
    catalog
        .set_parser("book", "size", |value| match value.as_str() {
            Some("small") => Ok(json!("S")),
            Some("medium") => Ok(json!("M")),
            Some("large") => Ok(json!("L")),
            Some(other) if other.len() == 1 => Ok(json!(other.to_uppercase())),
            _ => Err("write a size as S, M or L".to_owned()),
        })
        .expect("size is a parameter");
    catalog
        .set_parser("book", "day", |value| {
            // Runs only on dates: the format check comes first.
            let text = value.as_str().unwrap_or_default();
            assert_eq!(text.len(), 10, "{text}");
            Ok(json!({"year": text[..4].parse::<u32>().unwrap_or(0)}))
        })
        .expect("day is a parameter");
    let args = bind_all_ways(r#"@book(day="2026-03-01", size="medium")"#, &catalog).expect("binds");
    assert_eq!(args["size"], "M");
    assert_eq!(args["day"], json!({"year": 2026}));
    assert_eq!(
        bind_all_ways(r#"@book(day="2026-03-01", size="m")"#, &catalog).expect("binds")["size"],
        "M"
    );
    assert_eq!(
        bind_all_ways(r#"@book(day="2026-03-01", size="huge")"#, &catalog).unwrap_err(),
        "Invalid value for parameter 'size' of function 'book': write a size as S, M or L"
    );
    // What the parser returns still meets the choices.
    assert_eq!(
        bind_all_ways(r#"@book(day="2026-03-01", size="x")"#, &catalog).unwrap_err(),
        r#"Invalid value for parameter 'size' of function 'book': expected one of "S", "M", "L", got "X""#
    );
    assert!(bind_all_ways(r#"@book(day="2026-02-30")"#, &catalog)
        .unwrap_err()
        .contains("February 2026 has 28 days"));
}

#[test]
fn a_parser_for_an_unknown_function_or_parameter_is_refused() {
    let mut catalog = catalog();
    let err = catalog.set_parser("bok", "day", Ok).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Unknown function 'bok': did you mean 'book'?"
    );
    let err = catalog.set_parser("book", "dayy", Ok).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("Unknown parameter 'dayy' for function 'book': did you mean 'day'?"),
        "{err}"
    );
    // Found as a call finds it: ignoring case.
    catalog
        .set_parser("BOOK", "Day", |_| Err("no".into()))
        .expect("found");
    assert!(bind_all_ways(r#"@book(day="2026-03-01")"#, &catalog)
        .unwrap_err()
        .ends_with(": no"));
}

/// The grammar writes checked formats out where they are regular, and agrees with the
/// binder on them: every sample binds, and a value is in the language exactly when it binds.
#[test]
fn the_grammar_offers_exactly_the_values_that_bind() {
    use atfunc::grammar::grammar;
    use atfunc::GrammarOptions;

    let tools = load_interfaces_str(
        r#"[{"name": "f", "parameters": {"type": "object", "properties": {
            "x": {"type": "string", "format": "date"}}, "required": ["x"]}},
            {"name": "g", "parameters": {"type": "object", "properties": {
            "t": {"type": "string", "format": "time"}, "w": {"type": "string", "format": "date-time"},
            "u": {"type": "string", "format": "uuid"}, "i": {"type": "string", "format": "ipv4"},
            "e": {"type": "string", "format": "email"}}}}]"#,
    )
    .expect("tools load");
    let catalog = Catalog::new(tools.clone());
    let g = grammar(&tools, &GrammarOptions::default()).expect("grammar");
    for seed in 0..300 {
        let text = g.sample(seed);
        for event in atfunc::parse_events(&text) {
            if let Event::Call(call) = event {
                if let Err(e) = bind(&call, &catalog) {
                    // email is left to the binder (see the grammar docs).
                    assert!(
                        e.to_string().contains("is not an email address"),
                        "{e}\n{text}"
                    );
                }
            }
        }
    }
    let mut days = Vec::new();
    for year in ["0000", "1900", "2000", "2024", "2026", "2100"] {
        for month in 0..=13 {
            for day in 0..=32 {
                days.push(format!("{year}-{month:02}-{day:02}"));
            }
        }
    }
    let mut times: Vec<String> = [
        "00:00:00",
        "23:59:60",
        "24:00:00",
        "12:60:00",
        "12:00:61",
        "12:00:00.5",
        "12:00:00.",
        "12:00:00Z",
        "12:00:00+23:59",
        "12:00:00+24:00",
    ]
    .map(String::from)
    .to_vec();
    times.push("1:00:00".into());
    for (param, values) in [("x", &days), ("t", &times)] {
        let name = if param == "x" { "f" } else { "g" };
        for value in values {
            let text = format!("@{name}({param}=\"{value}\")");
            let binds = bind_text(&text, 0, &catalog).is_ok();
            assert_eq!(g.accepts(&text), binds, "{text}");
        }
    }
    for (text, binds) in [
        (r#"@g(i="192.168.0.255")"#, true),
        (r#"@g(i="192.168.0.256")"#, false),
        (r#"@g(i="192.168.00.1")"#, false),
        (r#"@g(u="123e4567-e89b-12d3-a456-426614174000")"#, true),
        (r#"@g(w="2024-02-29T23:59:59.9-01:30")"#, true),
        (r#"@g(w="2023-02-29T23:59:59Z")"#, false),
    ] {
        assert_eq!(bind_text(text, 0, &catalog).is_ok(), binds, "{text}");
        assert_eq!(g.accepts(text), binds, "{text}");
    }
}
