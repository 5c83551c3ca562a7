//! The rule tree a grammar is built as: printed as GBNF for an engine, sampled and
//! recognised here so tests can check both directions without one.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write;

/// One expression of a rule.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    /// Exactly this text.
    Text(String),
    /// One character in (or, when `negated`, outside) the inclusive ranges.
    Chars {
        ranges: Vec<(char, char)>,
        negated: bool,
    },
    /// Each in turn.
    Seq(Vec<Node>),
    /// One of them.
    Alt(Vec<Node>),
    /// `min` to `max` (unbounded when `None`) repetitions.
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
    /// The rule with this index.
    Rule(usize),
}

impl Node {
    pub(crate) fn text(text: impl Into<String>) -> Node {
        Node::Text(text.into())
    }

    /// A sequence, flattened: nested sequences spliced in, adjacent texts joined.
    pub(crate) fn seq(items: impl IntoIterator<Item = Node>) -> Node {
        let mut nodes: Vec<Node> = Vec::new();
        for item in items {
            let parts = match item {
                Node::Seq(parts) => parts,
                other => vec![other],
            };
            for part in parts {
                match (nodes.last_mut(), part) {
                    (Some(Node::Text(last)), Node::Text(next)) => last.push_str(&next),
                    (_, part) => nodes.push(part),
                }
            }
        }
        if nodes.len() == 1 {
            if let Some(only) = nodes.pop() {
                return only;
            }
        }
        Node::Seq(nodes)
    }

    pub(crate) fn alt(nodes: impl IntoIterator<Item = Node>) -> Node {
        let mut nodes: Vec<Node> = nodes.into_iter().collect();
        if nodes.len() == 1 {
            if let Some(only) = nodes.pop() {
                return only;
            }
        }
        Node::Alt(nodes)
    }

    pub(crate) fn optional(node: Node) -> Node {
        Node::repeat(node, 0, Some(1))
    }

    pub(crate) fn repeat(node: Node, min: u32, max: Option<u32>) -> Node {
        Node::Repeat {
            node: Box::new(node),
            min,
            max,
        }
    }

    pub(crate) fn chars(ranges: &[(char, char)]) -> Node {
        Node::Chars {
            ranges: ranges.to_vec(),
            negated: false,
        }
    }

    pub(crate) fn not_chars(ranges: &[(char, char)]) -> Node {
        Node::Chars {
            ranges: ranges.to_vec(),
            negated: true,
        }
    }
}

/// A grammar: named rules, the first one `root`.
///
/// Built by [`grammar`](super::grammar); printed with [`Grammar::to_gbnf`]. No rule refers to
/// itself, directly or through others (nesting is unrolled to a fixed depth), so every rule
/// is a finite expression over characters and repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct Grammar {
    rules: Vec<(String, Node)>,
}

/// Which part of a grammar's size went past its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exceeded {
    Rules,
    Bytes,
}

/// Builds the rules of a grammar, each shared rule once, by name.
///
/// Its size is counted as it grows: every rule, and the GBNF bytes of each rule once its
/// body is known. Past either limit it stops building (a rule asked for then is an empty
/// placeholder) and says so in [`exceeded`](Self::exceeded).
#[derive(Debug)]
pub(crate) struct Builder {
    rules: Vec<(String, Node)>,
    by_name: HashMap<String, usize>,
    /// Most rules, and most GBNF bytes, the grammar may have.
    max_rules: usize,
    max_bytes: usize,
    /// GBNF bytes of the rules whose bodies are known.
    bytes: usize,
    exceeded: Option<Exceeded>,
    /// The number the next shared rule's name gets.
    next_shared: usize,
}

impl Default for Builder {
    fn default() -> Builder {
        Builder::new(usize::MAX, usize::MAX)
    }
}

/// The most nodes an expression written in two places may have; a larger one becomes a
/// rule of its own, referred to from both (see [`Builder::share`]).
const SHARE_WEIGHT: usize = 12;

impl Builder {
    /// A builder whose grammar may have at most `max_rules` rules and `max_bytes` bytes of
    /// GBNF.
    pub(crate) fn new(max_rules: usize, max_bytes: usize) -> Builder {
        Builder {
            rules: Vec::new(),
            by_name: HashMap::new(),
            max_rules,
            max_bytes,
            bytes: 0,
            exceeded: None,
            next_shared: 0,
        }
    }

    /// The limit the grammar went past, if it did; then it is incomplete.
    pub(crate) fn exceeded(&self) -> Option<Exceeded> {
        self.exceeded
    }

    /// Takes a slot for a rule named `name`; `None` past the rule limit.
    fn slot(&mut self, name: &str) -> Option<usize> {
        if self.exceeded.is_some() {
            return None;
        }
        if self.rules.len() >= self.max_rules {
            self.exceeded = Some(Exceeded::Rules);
            return None;
        }
        let index = self.rules.len();
        self.rules.push((name.to_owned(), Node::Seq(Vec::new())));
        self.by_name.insert(name.to_owned(), index);
        Some(index)
    }

    /// Puts `body` in the rule at `index`, counting its bytes.
    fn fill(&mut self, index: usize, body: Node) {
        if self.exceeded.is_some() {
            return;
        }
        let name_len = self.rules.get(index).map_or(0, |(name, _)| name.len());
        // `name ::= body\n`
        let len = name_len + 5 + print(&self.rules, &body, false).len();
        self.bytes = self.bytes.saturating_add(len);
        if self.bytes > self.max_bytes {
            self.exceeded = Some(Exceeded::Bytes);
            return;
        }
        if let Some(slot) = self.rules.get_mut(index) {
            slot.1 = body;
        }
    }

    /// A reference to the rule `name`, built by `body` the first time it is asked for.
    ///
    /// `body` may ask for other rules; the slot is taken first so rules print in the order
    /// they are first needed.
    pub(crate) fn rule(&mut self, name: &str, body: impl FnOnce(&mut Builder) -> Node) -> Node {
        if let Some(&index) = self.by_name.get(name) {
            return Node::Rule(index);
        }
        let Some(index) = self.slot(name) else {
            return Node::Seq(Vec::new());
        };
        let node = body(self);
        self.fill(index, node);
        Node::Rule(index)
    }

    /// `node`, to be written in more than one place: as it is when it is small, otherwise
    /// as a reference to a new rule named `prefix-N` that holds it. Without this an
    /// expression written twice at every level of nesting (an array's item, an optional
    /// field that may come first or later) doubles at each level.
    pub(crate) fn share(&mut self, prefix: &str, node: Node) -> Node {
        if !heavier(&node, SHARE_WEIGHT) {
            return node;
        }
        let name = loop {
            let name = format!("{prefix}-{}", self.next_shared);
            self.next_shared += 1;
            if !self.by_name.contains_key(&name) {
                break name;
            }
        };
        self.rule(&name, |_| node)
    }

    /// Takes the slot of a rule whose body is [`define`](Self::define)d later (the root,
    /// which must come first but is known last).
    pub(crate) fn reserve(&mut self, name: &str) -> usize {
        self.slot(name).unwrap_or(0)
    }

    /// Sets the body of a reserved rule.
    pub(crate) fn define(&mut self, index: usize, body: Node) {
        self.fill(index, body);
    }

    /// Whether a rule of that name was built already.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    pub(crate) fn finish(self) -> Grammar {
        Grammar { rules: self.rules }
    }
}

/// Whether `node` has more than `limit` nodes (counting stops there).
fn heavier(node: &Node, limit: usize) -> bool {
    fn count(node: &Node, left: &mut usize) -> bool {
        if *left == 0 {
            return true;
        }
        *left -= 1;
        match node {
            Node::Text(_) | Node::Chars { .. } | Node::Rule(_) => false,
            Node::Seq(items) | Node::Alt(items) => items.iter().any(|item| count(item, left)),
            Node::Repeat { node, .. } => count(node, left),
        }
    }
    let mut left = limit;
    count(node, &mut left)
}

impl Grammar {
    /// The grammar in GBNF, the notation of llama.cpp (also read by xgrammar and
    /// llguidance), one rule per line, `root` first.
    pub fn to_gbnf(&self) -> String {
        let mut out = String::new();
        for (name, node) in &self.rules {
            let _ = writeln!(out, "{name} ::= {}", print(&self.rules, node, false));
        }
        out
    }

    /// How many rules the grammar has.
    #[cfg(test)]
    pub(crate) fn rule_count(&self) -> usize {
        self.rules.len()
    }

    /// Whether `text` is in the grammar's language (an exact recogniser, for tests and
    /// checks; it tracks every position a prefix can reach, so it is polynomial, not fast).
    pub fn accepts(&self, text: &str) -> bool {
        let chars: Vec<char> = text.chars().collect();
        let Some((_, root)) = self.rules.first() else {
            return false;
        };
        let start = BTreeSet::from([0usize]);
        self.matches(root, &chars, &start).contains(&chars.len())
    }

    /// The positions `node` can end at, starting from any of `from`.
    fn matches(&self, node: &Node, chars: &[char], from: &BTreeSet<usize>) -> BTreeSet<usize> {
        match node {
            Node::Text(text) => {
                let want: Vec<char> = text.chars().collect();
                from.iter()
                    .filter(|&&at| chars.get(at..at + want.len()) == Some(&want[..]))
                    .map(|at| at + want.len())
                    .collect()
            }
            Node::Chars { ranges, negated } => from
                .iter()
                .filter(|&&at| {
                    chars
                        .get(at)
                        .is_some_and(|&c| in_ranges(ranges, c) != *negated)
                })
                .map(|at| at + 1)
                .collect(),
            Node::Seq(items) => {
                let mut at = from.clone();
                for item in items {
                    if at.is_empty() {
                        break;
                    }
                    at = self.matches(item, chars, &at);
                }
                at
            }
            Node::Alt(items) => items
                .iter()
                .flat_map(|item| self.matches(item, chars, from))
                .collect(),
            Node::Rule(index) => match self.rules.get(*index) {
                Some((_, body)) => self.matches(body, chars, from),
                None => BTreeSet::new(),
            },
            Node::Repeat { node, min, max } => {
                let mut current = from.clone();
                let mut reached = BTreeSet::new();
                if *min == 0 {
                    reached.extend(current.iter().copied());
                }
                let mut count = 0u32;
                while !current.is_empty() && max.is_none_or(|max| count < max) {
                    current = self.matches(node, chars, &current);
                    count += 1;
                    if count >= *min {
                        // Past the minimum, a position reached before leads nowhere new.
                        current.retain(|at| !reached.contains(at));
                        reached.extend(current.iter().copied());
                    }
                }
                reached
            }
        }
    }

    /// A random text of the grammar's language, from `seed`: every alternative and
    /// repetition count is drawn, unbounded repetitions up to `min + 3` times.
    pub fn sample(&self, seed: u64) -> String {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut out = String::new();
        if let Some((_, root)) = self.rules.first() {
            self.sample_node(root, &mut rng, &mut out);
        }
        out
    }

    fn sample_node(&self, node: &Node, rng: &mut Rng, out: &mut String) {
        match node {
            Node::Text(text) => out.push_str(text),
            Node::Chars { ranges, negated } => out.push(sample_char(ranges, *negated, rng)),
            Node::Seq(items) => {
                for item in items {
                    self.sample_node(item, rng, out);
                }
            }
            Node::Alt(items) => {
                if let Some(item) = items.get(rng.below(items.len())) {
                    self.sample_node(item, rng, out);
                }
            }
            Node::Rule(index) => {
                if let Some((_, body)) = self.rules.get(*index) {
                    self.sample_node(body, rng, out);
                }
            }
            Node::Repeat { node, min, max } => {
                let most = max.unwrap_or(min + 3).min(min + 3);
                let count = *min as usize + rng.below((most - min) as usize + 1);
                for _ in 0..count {
                    self.sample_node(node, rng, out);
                }
            }
        }
    }
}

/// `node` as GBNF, with the names of `rules` for references.
fn print(rules: &[(String, Node)], node: &Node, nested: bool) -> String {
    match node {
        Node::Text(text) => literal(text),
        Node::Chars { ranges, negated } => class(ranges, *negated),
        Node::Rule(index) => rules
            .get(*index)
            .map(|(name, _)| name.clone())
            .unwrap_or_default(),
        Node::Seq(items) if items.is_empty() => String::from("\"\""),
        Node::Seq(items) => {
            let text = items
                .iter()
                .map(|item| print(rules, item, true))
                .collect::<Vec<_>>()
                .join(" ");
            if nested && items.len() > 1 {
                format!("({text})")
            } else {
                text
            }
        }
        Node::Alt(items) => {
            let text = items
                .iter()
                .map(|item| print(rules, item, false))
                .collect::<Vec<_>>()
                .join(" | ");
            if nested {
                format!("({text})")
            } else {
                text
            }
        }
        Node::Repeat { node, min, max } => {
            let inner = print(rules, node, true);
            let inner = match node.as_ref() {
                // A quantifier binds to one item: a sequence needs its own parentheses
                // even where it would not be nested otherwise.
                Node::Seq(items) if items.len() > 1 && !inner.starts_with('(') => {
                    format!("({inner})")
                }
                Node::Repeat { .. } => format!("({inner})"),
                _ => inner,
            };
            let suffix = match (min, max) {
                (0, Some(1)) => String::from("?"),
                (0, None) => String::from("*"),
                (1, None) => String::from("+"),
                (m, None) => format!("{{{m},}}"),
                (m, Some(n)) if m == n => format!("{{{m}}}"),
                (m, Some(n)) => format!("{{{m},{n}}}"),
            };
            format!("{inner}{suffix}")
        }
    }
}

fn in_ranges(ranges: &[(char, char)], c: char) -> bool {
    ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi)
}

/// Characters a negated class is sampled from: ASCII, controls, quotes and backslashes,
/// letters of other scripts, an emoji.
const SAMPLE_POOL: &str = " azAZ09_-.,:;!?()[]{}\"'\\/\n\t\u{1}é€ж😀ß";

fn sample_char(ranges: &[(char, char)], negated: bool, rng: &mut Rng) -> char {
    if negated {
        let pool: Vec<char> = SAMPLE_POOL
            .chars()
            .filter(|&c| !in_ranges(ranges, c))
            .collect();
        return pool.get(rng.below(pool.len())).copied().unwrap_or('x');
    }
    let Some(&(lo, hi)) = ranges.get(rng.below(ranges.len())) else {
        return 'x';
    };
    let span = (hi as u32).saturating_sub(lo as u32) as usize + 1;
    let mut code = lo as u32 + rng.below(span) as u32;
    // Surrogates are not characters; step past them.
    if (0xD800..0xE000).contains(&code) {
        code = 0xE000.min(hi as u32);
    }
    char::from_u32(code).unwrap_or(lo)
}

/// xorshift64: enough randomness to walk a grammar, no dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// A GBNF string literal.
pub(crate) fn literal(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A GBNF character class.
fn class(ranges: &[(char, char)], negated: bool) -> String {
    let mut out = String::from("[");
    if negated {
        out.push('^');
    }
    for &(lo, hi) in ranges {
        class_char(&mut out, lo);
        if hi != lo {
            out.push('-');
            class_char(&mut out, hi);
        }
    }
    out.push(']');
    out
}

fn class_char(out: &mut String, c: char) {
    match c {
        '\\' | ']' | '[' | '"' => {
            out.push('\\');
            out.push(c);
        }
        // llama.cpp knows no `\^` or `\-` escape (it refuses the grammar); a hex escape
        // means the character itself in any position.
        '^' | '-' => {
            let _ = write!(out, "\\x{:02X}", c as u32);
        }
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x20 || c == '\u{7f}' => {
            let _ = write!(out, "\\x{:02X}", c as u32);
        }
        c if (c as u32) > 0xFFFF => {
            let _ = write!(out, "\\U{:08X}", c as u32);
        }
        c if !c.is_ascii() => {
            let _ = write!(out, "\\u{:04X}", c as u32);
        }
        c => out.push(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grammar(root: impl FnOnce(&mut Builder) -> Node) -> Grammar {
        let mut b = Builder::default();
        b.rule("root", root);
        b.finish()
    }

    #[test]
    fn prints_gbnf() {
        let g = grammar(|b| {
            let digit = b.rule("digit", |_| Node::chars(&[('0', '9')]));
            Node::seq([
                Node::text("a\"\\\n"),
                Node::repeat(Node::seq([Node::text(","), digit.clone()]), 0, None),
                Node::optional(Node::alt([Node::text("x"), Node::text("y")])),
                Node::repeat(digit, 2, Some(4)),
                Node::not_chars(&[('@', '@'), ('\u{80}', '\u{10FFFF}')]),
            ])
        });
        assert_eq!(
            g.to_gbnf(),
            "root ::= \"a\\\"\\\\\\n\" (\",\" digit)* (\"x\" | \"y\")? digit{2,4} [^@\\u0080-\\U0010FFFF]\n\
             digit ::= [0-9]\n"
        );
    }

    #[test]
    fn class_signs_print_as_llama_cpp_reads_them() {
        // `^` and `-` as characters of a class: llama.cpp has no escape for them.
        let g = grammar(|_| Node::not_chars(&[('[', '^'), ('-', '-'), (']', ']')]));
        assert_eq!(g.to_gbnf(), "root ::= [^\\[-\\x5E\\x2D\\]]\n");
        assert!(g.accepts("a"));
        for refused in ["[", "\\", "]", "^", "-"] {
            assert!(!g.accepts(refused), "{refused}");
        }
    }

    #[test]
    fn recognises_and_samples() {
        let g = grammar(|_| {
            Node::seq([
                Node::repeat(Node::not_chars(&[('@', '@')]), 0, None),
                Node::text("@"),
                Node::repeat(Node::alt([Node::text("ab"), Node::text("a")]), 1, Some(3)),
            ])
        });
        assert!(g.accepts("hi @aba"));
        assert!(g.accepts("@a"));
        assert!(!g.accepts("@"));
        assert!(!g.accepts("h@i@a"));
        assert!(!g.accepts("@aaaa"));
        for seed in 0..200 {
            let text = g.sample(seed);
            assert!(g.accepts(&text), "{text:?}");
        }
    }
}
