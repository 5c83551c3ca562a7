use atfunc::parse::{LineColumn, ParseErrorKind, Span};
use atfunc::{Event, ParseError, StreamParser};

/// The errors of `text`, fed whole, by 1, 3 and 7 bytes: the same each way.
fn errors(text: &str) -> Vec<ParseError> {
    let mut runs = Vec::new();
    for piece in [text.len().max(1), 1, 3, 7] {
        let mut parser = StreamParser::default();
        let mut events = Vec::new();
        for chunk in text.as_bytes().chunks(piece) {
            events.extend(parser.feed(chunk));
        }
        events.extend(parser.finish());
        let errors: Vec<ParseError> = events
            .into_iter()
            .filter_map(|event| match event {
                Event::Malformed { error, .. } => Some(error),
                _ => None,
            })
            .collect();
        runs.push(errors);
    }
    for run in &runs[1..] {
        assert_eq!(run, &runs[0], "{text:?}");
    }
    runs.swap_remove(0)
}

#[test]
fn a_parse_error_says_where_it_is() {
    let text = "Voilà:\n  @weather.get(city=\"Zürich\" days=2)\nthen @f(x=[1, 2";
    let found = errors(text);
    assert_eq!(found.len(), 2, "{found:?}");

    // The missing comma: reading stops at `days`, on line 2.
    let comma = &found[0];
    let at = text.find("days").expect("in the text") as u64;
    let chars = text[..at as usize].chars().count() as u64;
    assert_eq!(comma.span, Span::new(at, at).with_chars(chars, chars));
    assert_eq!(
        comma.line_column(text),
        LineColumn {
            line: 2,
            column: 30
        }
    );

    // The list left open: the text ends on line 3, after `2`.
    let open = &found[1];
    assert!(
        matches!(open.kind, ParseErrorKind::Unterminated { .. }),
        "{open:?}"
    );
    assert_eq!(open.span.start, text.len() as u64);
    assert!(open.span.is_empty());
    assert_eq!(
        open.line_column(text),
        LineColumn {
            line: 3,
            column: 16
        }
    );
    assert_eq!(open.line_column(text).to_string(), "line 3, column 16");
}

#[test]
fn line_and_column_are_counted_in_characters_and_clamped() {
    let text = "é\nab";
    assert_eq!(
        Span::new(0, 0).line_column(text),
        LineColumn { line: 1, column: 1 }
    );
    assert_eq!(
        Span::new(2, 2).line_column(text),
        LineColumn { line: 1, column: 2 }
    );
    assert_eq!(
        Span::new(3, 3).line_column(text),
        LineColumn { line: 2, column: 1 }
    );
    // Inside `é`: that character.
    assert_eq!(
        Span::new(1, 1).line_column(text),
        LineColumn { line: 1, column: 1 }
    );
    // Past the end: the end.
    assert_eq!(
        Span::new(99, 99).line_column(text),
        LineColumn { line: 2, column: 3 }
    );
}

/// The JSON form of a malformed event is what it was: the kind and the byte offset.
#[test]
fn the_json_form_keeps_the_offset() {
    let found = errors("@f(\"a\" b)");
    let json = serde_json::to_value(&found[0]).expect("serialises");
    assert_eq!(json["offset"], 7);
    assert_eq!(json.as_object().map(|o| o.len()), Some(2), "{json}");
}
