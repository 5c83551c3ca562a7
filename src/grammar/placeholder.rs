//! Text that is not a parameter's own placeholder.
//!
//! The prompt's example writes a text parameter as its quoted placeholder
//! (`layout="<layout>"`), and the binder refuses exactly that value
//! ([`BindError::Placeholder`](crate::BindError::Placeholder)): a model that copies it has
//! not given a value. A grammar that offered it would let a model write a call that can
//! never bind, through every resample (Qwen2.5-Coder-0.5B did, in 3 of 40 `simple_java`
//! answers), so each named text parameter gets a string rule without that one value.
//!
//! The rule is the complement of one word, built as the word's prefixes: a string either
//! stops inside the word, leaves it at some character, or goes on past its end. A JSON
//! escape that means one of the word's characters (`\u003c` for `<`) counts as that
//! character, because the parser resolves it before the binder compares.

use super::tree::{Builder, Node};
use super::values::Values;

/// The longest placeholder (in characters, `<` and `>` included) kept out; a longer
/// parameter name gets the plain string, so that a hostile schema's name cannot nest the
/// rule thousands deep. A model copies short names; 128 covers every BFCL parameter.
const MAX_WORD: usize = 128;

/// What a string's character may never be written as: it ends the string, starts an
/// escape, or is a control character.
const PLAIN_STOP: [(char, char); 3] = [('"', '"'), ('\\', '\\'), ('\u{0}', '\u{1f}')];

/// The one-letter escapes and the characters they mean.
const SHORT_ESCAPES: [(char, char); 8] = [
    ('"', '"'),
    ('\\', '\\'),
    ('/', '/'),
    ('b', '\u{8}'),
    ('f', '\u{c}'),
    ('n', '\n'),
    ('r', '\r'),
    ('t', '\t'),
];

impl Values {
    /// A JSON string of any text but `"<name>"`; the plain [`Values::string`] when `name`
    /// is empty (an array's items have no placeholder) or the word is longer than the
    /// strings the grammar allows anyway.
    pub(crate) fn text_for(&self, b: &mut Builder, name: &str) -> Node {
        let word: Vec<char> = std::iter::once('<')
            .chain(name.chars())
            .chain(std::iter::once('>'))
            .collect();
        let unwritable = self
            .max_string_chars
            .is_some_and(|max| (max as usize) < word.len());
        if name.is_empty() || unwritable || word.len() > MAX_WORD {
            return self.string(b);
        }
        let rule = format!("string-not-{}", rule_safe(name));
        b.rule(&rule, |b| {
            let hex = b.rule("hex", |_| {
                Node::chars(&[('0', '9'), ('a', 'f'), ('A', 'F')])
            });
            let char = b.rule("string-char", |_| any_char(&hex));
            let body = self.except(b, &word, &char, &hex);
            Node::seq([Node::text("\""), body, Node::text("\"")])
        })
    }

    /// The text of a string that is not `word`, with at most `max` characters. Built from
    /// the word's end back to its start: the part after `word[..at]` either stops there,
    /// leaves the word with a character other than `word[at]`, or writes `word[at]` and
    /// goes on the same way.
    fn except(&self, b: &mut Builder, word: &[char], char: &Node, hex: &Node) -> Node {
        let max = self.max_string_chars;
        let left = |at: usize| max.map(|max| max.saturating_sub(at as u32));
        // Past the whole word, at least one more character makes it another text.
        let mut rest = match left(word.len()) {
            Some(0) => None,
            more => Some(Node::repeat(char.clone(), 1, more)),
        };
        for (at, &next) in word.iter().enumerate().rev() {
            let first = at == 0 && self.guard_string_start;
            // Rules per character, shared by every name that has it: the escapes that do
            // or do not mean it are the bulk of the text, and with no bound on the
            // length a rule can hold the free rest too, leaving a few bytes per level.
            let code = u32::from(next);
            let guard = if first { "-first" } else { "" };
            let leave = match max {
                None => b.rule(&format!("ne-{code:x}{guard}"), |b| {
                    let other = other_than(b, next, first, hex);
                    Node::seq([other, Node::repeat(char.clone(), 0, None)])
                }),
                Some(_) => {
                    let other = b.rule(&format!("ne1-{code:x}{guard}"), |b| {
                        other_than(b, next, first, hex)
                    });
                    Node::seq([other, Node::repeat(char.clone(), 0, left(at + 1))])
                }
            };
            let same = b.rule(&format!("eq-{code:x}"), |_| same_as(next));
            let mut ways = vec![leave];
            if let Some(rest) = rest {
                ways.push(Node::seq([same, rest]));
            }
            rest = Some(Node::optional(Node::alt(ways)));
        }
        rest.unwrap_or(Node::Seq(Vec::new()))
    }
}

/// Any character of a JSON string, as written.
fn any_char(hex: &Node) -> Node {
    Node::alt([Node::not_chars(&PLAIN_STOP), escape_other_than(None, hex)])
}

/// `c` as a string writes it: itself (when it may stand unescaped), its one-letter escape,
/// or `\u` and its four hex digits in either case.
fn same_as(c: char) -> Node {
    let mut ways = Vec::new();
    if !PLAIN_STOP.iter().any(|&(lo, hi)| (lo..=hi).contains(&c)) {
        ways.push(Node::text(c.to_string()));
    }
    if let Some(letter) = short_escape(c) {
        ways.push(Node::text(format!("\\{letter}")));
    }
    if let Some(digits) = code_digits(c) {
        let mut seq = vec![Node::text("\\u")];
        seq.extend(digits.iter().map(|&d| Node::chars(&either_case(d))));
        ways.push(Node::seq(seq));
    }
    Node::alt(ways)
}

/// A string's character that does not mean `c`; not `,` or `)` either when `first`
/// (the guard on a string's first character).
fn other_than(b: &mut Builder, c: char, first: bool, hex: &Node) -> Node {
    let mut stop = PLAIN_STOP.to_vec();
    stop.push((c, c));
    if first {
        stop.extend([(',', ','), (')', ')')]);
    }
    let escape = match code_digits(c).is_some() || short_escape(c).is_some() {
        true => escape_other_than(Some(c), hex),
        // No escape means `c`: every escape is another character.
        false => b.rule("string-escape", |_| escape_other_than(None, hex)),
    };
    Node::alt([Node::not_chars(&stop), escape])
}

/// The letter of `c`'s one-letter escape, if it has one.
fn short_escape(c: char) -> Option<char> {
    SHORT_ESCAPES
        .iter()
        .find(|&&(_, meant)| meant == c)
        .map(|&(letter, _)| letter)
}

/// An escape (one-letter or `\u` without the surrogates), any but those meaning `c`.
fn escape_other_than(c: Option<char>, hex: &Node) -> Node {
    let letters: Vec<(char, char)> = SHORT_ESCAPES
        .iter()
        .filter(|&&(_, meant)| Some(meant) != c)
        .map(|&(letter, _)| (letter, letter))
        .collect();
    // Four hex digits, D800 to DFFF left out: the first digit not `d`, or `d` and a
    // second digit of 0 to 7.
    let not_d = vec![('0', '9'), ('a', 'c'), ('A', 'C'), ('e', 'f'), ('E', 'F')];
    let low = vec![('0', '7')];
    let hex_ranges = vec![('0', '9'), ('a', 'f'), ('A', 'F')];
    let high: Vec<Vec<(char, char)>> = vec![
        not_d,
        hex_ranges.clone(),
        hex_ranges.clone(),
        hex_ranges.clone(),
    ];
    let surrogate_free = vec![either_case('d'), low, hex_ranges.clone(), hex_ranges];
    let digits = c.and_then(code_digits);
    let codes = match digits {
        None => Node::alt([
            Node::seq([Node::chars(&high[0]), Node::repeat(hex.clone(), 3, Some(3))]),
            Node::seq([
                Node::chars(&surrogate_free[0]),
                Node::chars(&surrogate_free[1]),
                Node::repeat(hex.clone(), 2, Some(2)),
            ]),
        ]),
        Some(digits) => {
            // The code of `c` lies in exactly one of the two shapes; the other stays whole.
            let target: Vec<Vec<(char, char)>> = digits.iter().map(|&d| either_case(d)).collect();
            let (keep, cut) = if digits[0] == 'd' {
                (&high, &surrogate_free)
            } else {
                (&surrogate_free, &high)
            };
            Node::alt([
                Node::seq(keep.iter().map(|ranges| Node::chars(ranges))),
                sequence_other_than(cut, &target),
            ])
        }
    };
    Node::seq([
        Node::text("\\"),
        Node::alt([Node::chars(&letters), Node::seq([Node::text("u"), codes])]),
    ])
}

/// Sequences of one character from each of `classes`, any but `target` (each of whose
/// classes lies inside the class at its place): equal up to some place, different there,
/// anything after.
fn sequence_other_than(classes: &[Vec<(char, char)>], target: &[Vec<(char, char)>]) -> Node {
    let mut ways = Vec::new();
    for at in 0..classes.len() {
        let differing = minus(&classes[at], &target[at]);
        if differing.is_empty() {
            continue;
        }
        let mut seq: Vec<Node> = target[..at].iter().map(|r| Node::chars(r)).collect();
        seq.push(Node::chars(&differing));
        seq.extend(classes[at + 1..].iter().map(|r| Node::chars(r)));
        ways.push(Node::seq(seq));
    }
    Node::alt(ways)
}

/// The four lowercase hex digits of `c`'s code, when `\u` can write it alone (below
/// U+10000; a surrogate pair is never offered).
fn code_digits(c: char) -> Option<[char; 4]> {
    let code = u32::from(c);
    if code > 0xFFFF {
        return None;
    }
    let hex = format!("{code:04x}");
    let mut digits = ['0'; 4];
    for (slot, digit) in digits.iter_mut().zip(hex.chars()) {
        *slot = digit;
    }
    Some(digits)
}

/// A hex digit in both cases.
fn either_case(d: char) -> Vec<(char, char)> {
    let upper = d.to_ascii_uppercase();
    if upper == d {
        vec![(d, d)]
    } else {
        vec![(d, d), (upper, upper)]
    }
}

/// The characters of `ranges` not in `cut`.
fn minus(ranges: &[(char, char)], cut: &[(char, char)]) -> Vec<(char, char)> {
    let mut out = Vec::new();
    for &(lo, hi) in ranges {
        let mut pieces = vec![(u32::from(lo), u32::from(hi))];
        for &(clo, chi) in cut {
            let (clo, chi) = (u32::from(clo), u32::from(chi));
            pieces = pieces
                .into_iter()
                .flat_map(|(lo, hi)| {
                    let mut kept = Vec::new();
                    if lo < clo {
                        kept.push((lo, hi.min(clo - 1)));
                    }
                    if hi > chi {
                        kept.push((lo.max(chi + 1), hi));
                    }
                    kept.into_iter().filter(|(lo, hi)| lo <= hi)
                })
                .collect();
        }
        out.extend(
            pieces
                .into_iter()
                .filter_map(|(lo, hi)| Some((char::from_u32(lo)?, char::from_u32(hi)?))),
        );
    }
    out
}

/// `name` as part of a rule name, one to one: ASCII letters and digits as they are, every
/// other character as its hex code between dashes, so two names never share a rule.
fn rule_safe(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else {
            out.push_str(&format!("-{:x}-", u32::from(c)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn values(guard: bool, max: Option<u32>) -> Values {
        Values {
            any_depth: 1,
            guard_string_start: guard,
            bare_strings: false,
            max_string_chars: max,
            max_list_items: None,
            grounded_numbers: None,
            grounded_text: None,
        }
    }

    fn accepts(name: &str, guard: bool, max: Option<u32>) -> impl Fn(&str) -> bool {
        let mut b = Builder::default();
        let v = values(guard, max);
        let root = b.reserve("root");
        let node = v.text_for(&mut b, name);
        b.define(root, node);
        let g = b.finish();
        move |text: &str| g.accepts(text)
    }

    /// What the rule should accept: a JSON string (of at most `max` characters, an escape
    /// counting as one; its first not `,` or `)` under the guard) whose text is not
    /// `<name>`.
    fn expected(name: &str, guard: bool, max: Option<u32>, written: &str) -> bool {
        let Ok(text) = serde_json::from_str::<String>(written) else {
            return false;
        };
        let inner = &written[1..written.len() - 1];
        let first_plain = inner.chars().next();
        let chars = text.chars().count() as u32;
        !(guard && matches!(first_plain, Some(',' | ')')))
            && max.is_none_or(|max| chars <= max)
            && text != format!("<{name}>")
    }

    #[test]
    fn leaves_out_the_placeholder_in_every_spelling() {
        let ok = accepts("layout", true, None);
        for no in [
            r#""<layout>""#,
            r#""\u003clayout>""#,
            r#""\u003Clayout\u003E""#,
            r#""<\u006cayout>""#,
        ] {
            assert!(!ok(no), "{no}");
        }
        for yes in [
            r#""""#,
            r#""<""#,
            r#""<layout""#,
            r#""<layout>s""#,
            r#""<Layout>""#,
            r#""x<layout>""#,
            r#""\u003clayou>""#,
            r#""grid""#,
        ] {
            assert!(ok(yes), "{yes}");
        }
    }

    #[test]
    fn names_with_escaped_or_wide_characters() {
        let ok = accepts("a/b", false, None);
        assert!(!ok(r#""<a/b>""#));
        assert!(!ok(r#""<a\/b>""#));
        assert!(ok(r#""<a\\b>""#));
        let ok = accepts("한", false, None);
        assert!(!ok("\"<한>\""));
        assert!(!ok(r#""<\uD55C>""#));
        assert!(ok(r#""<\uD55D>""#));
        let ok = accepts("😀", false, None);
        assert!(!ok("\"<😀>\""));
        assert!(ok("\"<😀😀>\""));
    }

    #[test]
    fn a_bound_as_long_as_the_placeholder() {
        let ok = accepts("ab", true, Some(4));
        assert!(!ok(r#""<ab>""#));
        assert!(ok(r#""<ab)""#));
        assert!(!ok(r#""<ab>c""#));
        let ok = accepts("ab", true, Some(5));
        assert!(ok(r#""<ab>c""#));
    }

    #[test]
    fn a_name_past_the_limit_gets_the_plain_string() {
        let long = "n".repeat(MAX_WORD);
        let ok = accepts(&long, true, None);
        assert!(ok(&format!("\"<{long}>\"")));
    }

    fn spelled() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            prop::sample::select(vec!["<", ">", "a", "b", "/", ",", ")", "한", "😀", "A"])
                .prop_map(str::to_owned),
            prop::sample::select(vec![
                r"\u003c", r"\u003C", r"\u003e", r"\u0061", r"\u0041", r"\/", r"\\", r"\n",
                r"\uD55C", r"\ud55c", r#"\""#, r"\u002c",
            ])
            .prop_map(str::to_owned),
        ];
        prop::collection::vec(piece, 0..7).prop_map(|pieces| format!("\"{}\"", pieces.concat()))
    }

    proptest! {
        #[test]
        fn agrees_with_serde_on_the_text(
            name in prop::sample::select(vec!["a", "ab", "a/b", "한", "A", "😀"]),
            written in spelled(),
            guard in any::<bool>(),
            max in prop::option::of(0u32..8),
        ) {
            let ok = accepts(name, guard, max);
            prop_assert_eq!(ok(&written), expected(name, guard, max, &written), "{}", written);
            let placeholder = format!("\"<{name}>\"");
            prop_assert!(!ok(&placeholder));
        }
    }
}
