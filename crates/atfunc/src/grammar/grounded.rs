//! What a conversation writes, for grammars whose values must be taken from it: its
//! numbers ([`GrammarOptions::with_grounded_numbers`](super::GrammarOptions::with_grounded_numbers))
//! and runs of its words ([`GrammarOptions::with_grounded_text`](super::GrammarOptions::with_grounded_text)).

use super::tree::{Builder, Node};

/// The numbers written in `text`, in order of first appearance, each once, as the grammar
/// offers them: `213,000` as `213000`, `1.5`, `-4`, `1e-9`; a number that is not finite
/// as an `f64` is left out.
///
/// ```
/// use atfunc::grammar::numbers_in;
/// assert_eq!(
///     numbers_in("A base of 10 units, height 2.5, 1,200 m, -4 degrees, 1e-9 C and 10 again."),
///     ["10", "2.5", "1200", "-4", "1e-9"]
/// );
/// assert!(numbers_in("no digits here").is_empty());
/// ```
pub fn numbers_in(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        // A minus sign counts when it stands alone before the digits (`-4`, not `a-4`).
        let negative =
            i > 0 && bytes[i - 1] == b'-' && (i < 2 || !bytes[i - 2].is_ascii_alphanumeric());
        let mut number = String::new();
        if negative {
            number.push('-');
        }
        let mut j = i;
        let digits = |j: &mut usize, into: &mut String| {
            while *j < bytes.len() && bytes[*j].is_ascii_digit() {
                into.push(char::from(bytes[*j]));
                *j += 1;
            }
        };
        digits(&mut j, &mut number);
        // Thousands: a comma followed by exactly three digits.
        while j + 3 < bytes.len()
            && bytes[j] == b','
            && bytes[j + 1..]
                .iter()
                .take(3)
                .filter(|b| b.is_ascii_digit())
                .count()
                == 3
            && bytes.get(j + 4).is_none_or(|b| !b.is_ascii_digit())
        {
            number.extend(bytes[j + 1..j + 4].iter().map(|&b| char::from(b)));
            j += 4;
        }
        if j + 1 < bytes.len() && bytes[j] == b'.' && bytes[j + 1].is_ascii_digit() {
            number.push('.');
            j += 1;
            digits(&mut j, &mut number);
        }
        if j + 1 < bytes.len() && matches!(bytes[j], b'e' | b'E') {
            let sign = matches!(bytes[j + 1], b'-' | b'+');
            let first = j + 1 + usize::from(sign);
            if bytes.get(first).is_some_and(u8::is_ascii_digit) {
                number.push('e');
                if sign {
                    number.push(char::from(bytes[j + 1]));
                }
                j = first;
                digits(&mut j, &mut number);
            }
        }
        i = j;
        // JSON writes no leading zeros: `007` is offered as `7`.
        let sign = usize::from(negative);
        let zeros = number[sign..].bytes().take_while(|&b| b == b'0').count();
        let keep = number[sign + zeros..]
            .bytes()
            .next()
            .is_none_or(|b| !b.is_ascii_digit());
        let zeros = zeros - usize::from(keep && zeros > 0);
        number.replace_range(sign..sign + zeros, "");
        let finite = number.parse::<f64>().is_ok_and(f64::is_finite);
        if finite && !out.contains(&number) {
            out.push(number);
        }
    }
    out
}

/// The most words of a text that values are grounded in: the last ones, what was said
/// most recently.
pub const MAX_GROUNDING_WORDS: usize = 4096;

/// The strings made of whole words of `text`: `"` + a run of consecutive words of one
/// sentence, with what stands between them, + `"`, written with JSON escapes; `None` when
/// `text` has no word.
///
/// A word is a run of letters and digits, so `C:/data/cars.csv` and `2022/AL2562` are runs
/// of several words and their separators. A run does not cross a line break or the end of
/// a sentence (`.`, `?` or `!` followed by white space): a value is rarely longer, and an
/// unbounded run would let a model copy the question out to its token limit.
///
/// Each word is a rule that ends there or goes on to the next word of its sentence, so the
/// grammar grows with the length of `text` (one rule per word), and an engine following it
/// keeps one path for each place in `text` that the value written so far can start at.
/// Only the last [`MAX_GROUNDING_WORDS`] words count, so a long conversation keeps its
/// grammar within [`GrammarOptions::with_max_rules`](super::GrammarOptions::with_max_rules).
pub(crate) fn text_spans(b: &mut Builder, text: &str) -> Option<Node> {
    if b.has("span") {
        return Some(b.rule("span", |_| Node::Seq(Vec::new())));
    }
    let (words, gaps) = counted_words(text);
    if words.is_empty() {
        return None;
    }
    // Built from the last word back, so each rule's successor exists when it is written.
    let mut starts: Vec<Node> = vec![Node::Seq(Vec::new()); words.len()];
    let mut next: Option<Node> = None;
    for k in (0..words.len()).rev() {
        let word = Node::text(json_text(words[k]));
        let gap = gaps.get(k).copied().filter(|gap| !ends_sentence(gap));
        let body = match (gap, next.take()) {
            (Some(gap), Some(following)) => Node::seq([
                word,
                Node::optional(Node::seq([Node::text(json_text(gap)), following])),
            ]),
            _ => word,
        };
        let rule = b.rule(&format!("span-{k}"), |_| body);
        starts[k] = rule.clone();
        next = Some(rule);
    }
    Some(b.rule("span", |_| {
        Node::seq([Node::text("\""), Node::alt(starts), Node::text("\"")])
    }))
}

/// Every value [`text_spans`] allows, each as its JSON text (quotes included), in order of
/// where it starts and then of length; `None` when there are more than `most` (a long
/// question has tens of thousands of runs, too many to list), or no words.
pub(crate) fn span_values(text: &str, most: usize) -> Option<Vec<String>> {
    let (words, gaps) = counted_words(text);
    if words.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    for start in 0..words.len() {
        let mut value = String::from("\"");
        for (k, word) in words.iter().enumerate().skip(start) {
            if k > start {
                // A run goes on only through a gap that does not end the sentence.
                match gaps.get(k - 1) {
                    Some(gap) if !ends_sentence(gap) => value.push_str(&json_text(gap)),
                    _ => break,
                }
            }
            value.push_str(&json_text(word));
            if out.len() == most {
                return None;
            }
            out.push(format!("{value}\""));
        }
    }
    Some(out)
}

/// Whether `text` has a word, so that [`text_spans`] makes a grammar of it.
pub(crate) fn has_words(text: &str) -> bool {
    text.chars().any(char::is_alphanumeric)
}

/// Whether `value` is one of the runs [`text_spans`] allows for `text`: its words and what
/// stands between them are those of consecutive words of `text`, within one sentence of
/// its last [`MAX_GROUNDING_WORDS`] words, and it begins and ends with a word.
pub(crate) fn is_span(text: &str, value: &str) -> bool {
    let (words, gaps) = counted_words(text);
    let (value_words, value_gaps) = words_and_gaps(value);
    let bare = value.starts_with(char::is_alphanumeric) && value.ends_with(char::is_alphanumeric);
    if value_words.is_empty() || !bare || value_words.len() > words.len() {
        return false;
    }
    (0..=words.len() - value_words.len()).any(|start| {
        value_words
            .iter()
            .enumerate()
            .all(|(k, word)| words[start + k] == *word)
            && value_gaps.iter().enumerate().all(|(k, gap)| {
                gaps.get(start + k)
                    .is_some_and(|own| own == gap && !ends_sentence(own))
            })
    })
}

/// The words of `text` that count for grounding, its last [`MAX_GROUNDING_WORDS`], and the
/// gaps between them, as [`words_and_gaps`] gives them.
fn counted_words(text: &str) -> (Vec<&str>, Vec<&str>) {
    let (mut words, mut gaps) = words_and_gaps(text);
    let dropped = words.len().saturating_sub(MAX_GROUNDING_WORDS);
    words.drain(..dropped);
    gaps.drain(..dropped.min(gaps.len()));
    (words, gaps)
}

/// The words of `text` (runs of letters and digits) and, for each but the last, the text
/// between it and the next.
fn words_and_gaps(text: &str) -> (Vec<&str>, Vec<&str>) {
    let mut words = Vec::new();
    let mut gaps = Vec::new();
    let mut word_start: Option<usize> = None;
    let mut gap_start: Option<usize> = None;
    for (at, c) in text.char_indices() {
        match (c.is_alphanumeric(), word_start) {
            (true, None) => {
                if let Some(from) = gap_start.take() {
                    gaps.push(&text[from..at]);
                }
                word_start = Some(at);
            }
            (false, Some(from)) => {
                words.push(&text[from..at]);
                word_start = None;
                gap_start = Some(at);
            }
            _ => {}
        }
    }
    if let Some(from) = word_start {
        words.push(&text[from..]);
    }
    (words, gaps)
}

/// Whether the text between two words ends a sentence or a line.
fn ends_sentence(gap: &str) -> bool {
    gap.contains('\n')
        || gap.char_indices().any(|(at, c)| {
            matches!(c, '.' | '?' | '!') && gap[at + 1..].starts_with(char::is_whitespace)
        })
}

/// `text` as it stands inside a JSON string (escapes, without the quotes).
fn json_text(text: &str) -> String {
    let quoted = serde_json::Value::from(text).to_string();
    quoted
        .strip_prefix('"')
        .and_then(|inner| inner.strip_suffix('"'))
        .unwrap_or(&quoted)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_as_written_and_kept_once() {
        assert_eq!(numbers_in("5 5.0 5"), ["5", "5.0"]);
        assert_eq!(numbers_in("x-1 and -2, (3)"), ["1", "-2", "3"]);
        assert_eq!(numbers_in("1,2,3"), ["1", "2", "3"]);
        assert_eq!(numbers_in("12,3456"), ["12", "3456"]);
        assert_eq!(numbers_in("v1.2.3"), ["1.2", "3"]);
        assert_eq!(numbers_in("3e 4E+2 9e999"), ["3", "4e+2"]);
        assert_eq!(numbers_in("end 7."), ["7"]);
        assert_eq!(numbers_in("007 0.5 -00 000.25"), ["7", "0.5", "-0", "0.25"]);
        // As the grammar offers them to an integer parameter: whole numbers only.
        let tools = crate::load_interfaces(&serde_json::json!([{"name": "f", "parameters":
            {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}]))
        .unwrap();
        let options = super::super::GrammarOptions {
            choice: super::super::Choice::Required,
            grounded_numbers: Some(numbers_in("-12 1.0 1e3")),
            ..super::super::GrammarOptions::default()
        };
        let grammar = super::super::grammar(&tools, &options).unwrap();
        assert!(grammar.accepts("@f(n=-12)"));
        assert!(!grammar.accepts("@f(n=1.0)") && !grammar.accepts("@f(n=1e3)"));
    }

    /// The grammar of one function whose text parameter is grounded in `said`.
    fn grounded_in(said: &str) -> super::super::Grammar {
        // From text, so that the parameters keep this order whatever serde_json's features.
        let tools = crate::load_interfaces_str(
            r#"[{"name": "f", "parameters": {"type": "object", "properties": {
                "s": {"type": "string"},
                "unit": {"type": "string", "enum": ["km", "mi"]},
                "day": {"type": "string", "format": "date"},
                "tags": {"type": "array", "items": {"type": "string"}}},
             "required": ["s"]}}]"#,
        )
        .unwrap();
        let options = super::super::GrammarOptions {
            choice: super::super::Choice::Required,
            grounded_text: Some(said.to_owned()),
            ..super::super::GrammarOptions::default()
        };
        super::super::grammar(&tools, &options).unwrap()
    }

    #[test]
    fn text_values_are_runs_of_whole_words_within_a_sentence() {
        let g = grounded_in(
            "Book a flight to New York, then read C:/data/cars.csv. Is it \"fast\"?\nYes",
        );
        for value in [
            "\"New York\"",
            "\"New\"",
            "\"York, then read C\"",
            "\"C:/data/cars.csv\"",
            "\"data/cars\"",
            "\"Is it \\\"fast\"",
            "\"Yes\"",
        ] {
            assert!(g.accepts(&format!("@f(s={value})")), "{value}");
        }
        for value in [
            "\"Oslo\"",
            "\"\"",
            "\"ew York\"",
            "\"New Yor\"",
            "\".csv\"",
            "\"New York,\"",
            "\"cars.csv. Is\"",
            "\"fast\\\"?\nYes\"",
            "\"York New\"",
        ] {
            assert!(!g.accepts(&format!("@f(s={value})")), "{value}");
        }
        // Lists of text are grounded item by item; choices and formats keep their own.
        assert!(
            g.accepts(r#"@f(s="flight", unit="mi", day="2024-02-29", tags=["New York", "Yes"])"#)
        );
        assert!(!g.accepts(r#"@f(s="flight", tags=["Paris"])"#));
    }

    #[test]
    fn only_the_last_words_of_a_long_text_count() {
        let said = format!("{}Oslo", "word ".repeat(2 * MAX_GROUNDING_WORDS));
        let g = grounded_in(&said);
        assert!(
            g.rule_count() < MAX_GROUNDING_WORDS + 50,
            "{}",
            g.rule_count()
        );
        assert!(g.accepts(r#"@f(s="word word Oslo")"#));
    }

    #[test]
    fn text_without_words_leaves_strings_free() {
        let g = grounded_in(" ... ?! ");
        assert!(g.accepts(r#"@f(s="anything at all")"#));
    }
}
