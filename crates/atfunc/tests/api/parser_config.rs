use atfunc::parse::Dialect;
use atfunc::{Event, Interface, ParserConfig, StreamParser};

/// Calls read from `text` under `config`, fed whole, by 1 and by 3 bytes: the same count
/// each way, or the test fails.
fn calls(config: &ParserConfig, text: &str) -> usize {
    let mut counts = Vec::new();
    for piece in [text.len().max(1), 1, 3] {
        let mut parser = StreamParser::new(config.clone());
        let mut events = Vec::new();
        for chunk in text.as_bytes().chunks(piece) {
            events.extend(parser.feed(chunk));
        }
        events.extend(parser.finish());
        counts.push(
            events
                .iter()
                .filter(|e| matches!(e, Event::Call(_)))
                .count(),
        );
    }
    assert!(counts.windows(2).all(|w| w[0] == w[1]), "{counts:?}");
    counts[0]
}

/// `offering` before `with_dialect` used to be dropped: the names were only kept when the
/// dialect was already one that reads them.
#[test]
fn offering_and_dialect_may_come_in_either_order() {
    let tools = [Interface::new("get_weather")];
    let text = r#"{"name": "get_weather", "arguments": {"city": "Oslo"}}"#;
    for dialect in [Dialect::Hermes, Dialect::Auto] {
        let before = ParserConfig::default()
            .with_dialect(dialect)
            .offering(&tools, None);
        let after = ParserConfig::default()
            .offering(&tools, None)
            .with_dialect(dialect);
        assert_eq!(before, after, "{dialect}");
        assert_eq!(calls(&after, text), 1, "{dialect}");
    }
}
