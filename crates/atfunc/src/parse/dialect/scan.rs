//! The pieces every dialect shares: a view of the held bytes with a marker matcher, one
//! incremental scanner for JSON and Python values, and the step a dialect's scanner returns.

use super::unique_keys;
use crate::parse::{ParseErrorKind, Value};

/// Longest name a dialect's scanner reads between two markers (a function's, a parameter's,
/// a type's), and the longest looked at in a JSON object that may be a call: past it, the
/// block is malformed or the object is text.
pub(super) const MAX_NAME: u64 = 256;

/// The bytes held, starting at absolute offset `base`, and whether the stream has ended.
pub(super) struct Input<'a> {
    pub data: &'a [u8],
    pub base: u64,
    pub eof: bool,
}

/// Whether a marker stands at an offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Match {
    /// It does; the offset one past it.
    Yes(u64),
    /// It does not.
    No,
    /// The bytes held end inside what could still be the marker.
    Need,
}

/// Where a marker searched for in raw text stands.
pub(super) enum Found {
    /// At this offset.
    At(u64),
    /// Not in the bytes held; no occurrence can start before this offset.
    Before(u64),
}

impl Input<'_> {
    /// One past the last byte held.
    pub fn end(&self) -> u64 {
        self.base + self.data.len() as u64
    }

    /// The bytes from `pos` on.
    pub fn rest(&self, pos: u64) -> &[u8] {
        let i = usize::try_from(pos.saturating_sub(self.base)).unwrap_or(usize::MAX);
        self.data.get(i..).unwrap_or_default()
    }

    /// The bytes of `from..to`.
    pub fn slice(&self, from: u64, to: u64) -> &[u8] {
        let rest = self.rest(from);
        rest.get(..usize::try_from(to.saturating_sub(from)).unwrap_or(usize::MAX))
            .unwrap_or(rest)
    }

    pub fn byte(&self, pos: u64) -> Option<u8> {
        self.rest(pos).first().copied()
    }

    /// Whether `marker` stands at `pos`. A prefix of it cut off by the end of the held bytes
    /// is `Need` until the stream ends, and then `No`: a partial marker is text.
    pub fn marker(&self, pos: u64, marker: &[u8]) -> Match {
        let rest = self.rest(pos);
        let n = rest.len().min(marker.len());
        if rest.get(..n) != marker.get(..n) {
            Match::No
        } else if n == marker.len() {
            Match::Yes(pos + n as u64)
        } else if self.eof {
            Match::No
        } else {
            Match::Need
        }
    }

    /// Like [`marker`](Self::marker), for a marker that closes something open: a prefix of
    /// it cut off by the end of the stream is `Need` too, so the block is reported
    /// unterminated rather than wrong.
    pub fn closing(&self, pos: u64, marker: &[u8]) -> Match {
        let rest = self.rest(pos);
        match self.marker(pos, marker) {
            Match::No if !rest.is_empty() && marker.starts_with(rest) => Match::Need,
            other => other,
        }
    }

    /// Whether the character starting at `pos` is cut off by the end of the bytes held.
    pub fn cut_char(&self, pos: u64) -> bool {
        let rest = self.rest(pos);
        let need = match rest.first() {
            Some(b) if *b >= 0xF0 => 4,
            Some(b) if *b >= 0xE0 => 3,
            Some(b) if *b >= 0xC0 => 2,
            _ => 1,
        };
        rest.len() < need && !self.eof && !rest.is_empty()
    }

    /// The first offset at or after `pos` that is not JSON whitespace (or the end).
    pub fn skip_ws(&self, pos: u64) -> u64 {
        let n = self
            .rest(pos)
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
            .count();
        pos + n as u64
    }

    /// The first `marker` at or after `pos`. When there is none yet, every byte before the
    /// returned offset is known not to start one, so a search resumes there and scans no
    /// byte more than `marker.len()` times.
    pub fn find(&self, pos: u64, marker: &[u8]) -> Found {
        let rest = self.rest(pos);
        match memchr::memmem::find(rest, marker) {
            Some(i) => Found::At(pos + i as u64),
            None => {
                let safe = rest.len().saturating_sub(marker.len().saturating_sub(1));
                Found::Before(pos + safe as u64)
            }
        }
    }

    /// What stands at `pos`, for an error message.
    pub fn found(&self, pos: u64) -> String {
        let rest = self.rest(pos);
        if rest.is_empty() {
            return "end of input".to_owned();
        }
        let len = match rest.first() {
            Some(b) if *b >= 0xF0 => 4,
            Some(b) if *b >= 0xE0 => 3,
            Some(b) if *b >= 0xC0 => 2,
            _ => 1,
        };
        match std::str::from_utf8(rest.get(..len).unwrap_or(rest)) {
            Ok(s) => format!("`{s}`"),
            Err(_) => format!("byte 0x{:02X}", rest.first().copied().unwrap_or_default()),
        }
    }

    /// An "expected …, found …" error at `pos`.
    pub fn expected(&self, pos: u64, what: &str) -> Step {
        Step::Fail(
            ParseErrorKind::Unexpected {
                expected: what.to_owned(),
                found: self.found(pos),
            },
            pos,
        )
    }
}

/// What a dialect's scanner answers.
#[derive(Debug)]
pub(super) enum Step {
    /// The bytes held end before the block does; `pos` says where to resume.
    Need,
    /// The block ends at this offset.
    Done(u64),
    /// Not a well-formed block: why, and the offset where it went wrong.
    Fail(ParseErrorKind, u64),
}

/// One call read from a block, before it gets its span.
#[derive(Debug)]
pub(super) struct Built {
    pub name: String,
    pub positional: Vec<Value>,
    pub named: Vec<(String, Value)>,
    /// Where this call's part of the block ends (the last call's is the block's end).
    pub end: u64,
}

/// Why a complete block holds no valid call: what was expected, what was found.
pub(super) type BuildError = (String, String);

/// Scans one JSON value (or, with `python`, one Python literal) that opens with a bracket,
/// byte by byte across chunks. It tracks only strings, escapes and nesting: that is enough
/// to find the value's end, and the value is read properly once it is complete.
#[derive(Debug, Clone, Default)]
pub(super) struct ValueScan {
    python: bool,
    /// Levels of the call's own structure around the argument values (`[`, `{"name", …,
    /// "arguments": {`, `f(`), which do not count against `max_depth`.
    allowance: usize,
    /// Open brackets; 0 before the value starts.
    depth: usize,
    /// The quote of the string being read, 0 outside strings.
    quote: u8,
    escape: bool,
    /// The offset of the opening bracket, once seen.
    pub start: Option<u64>,
    /// Whether the value is a list of calls, whose ends `item_ends` records.
    items: bool,
    /// One past each element that closed a bracket back to depth 1, in order: the ends of
    /// the calls of a list of calls (left empty for other values: no allocation per call).
    pub item_ends: Vec<u64>,
}

impl ValueScan {
    /// A JSON value whose outer `allowance` levels are the call's structure.
    pub fn json(allowance: usize) -> ValueScan {
        ValueScan {
            allowance,
            ..ValueScan::default()
        }
    }

    /// A JSON list of calls, whose outer `allowance` levels are the call's structure; the
    /// end of each call is recorded in `item_ends`.
    pub fn json_list(allowance: usize) -> ValueScan {
        ValueScan {
            allowance,
            items: true,
            ..ValueScan::default()
        }
    }

    /// A Python list of calls: the list and each call's parentheses are structure.
    pub fn python() -> ValueScan {
        ValueScan {
            python: true,
            items: true,
            allowance: 2,
            ..ValueScan::default()
        }
    }

    /// Scans from `*pos`; on `Done(end)` the value is `start..end`.
    pub fn scan(&mut self, input: &Input<'_>, pos: &mut u64, max_depth: usize) -> Step {
        if self.start.is_none() {
            let p = input.skip_ws(*pos);
            *pos = p;
            match input.byte(p) {
                None => return Step::Need,
                Some(b'{' | b'[') => self.start = Some(p),
                Some(_) => return input.expected(p, "`{` or `[`"),
            }
        }
        let rest = input.rest(*pos);
        let mut i = 0;
        while i < rest.len() {
            if self.quote != 0 {
                if self.escape {
                    self.escape = false;
                    i += 1;
                    continue;
                }
                let tail = rest.get(i..).unwrap_or_default();
                match memchr::memchr2(self.quote, b'\\', tail) {
                    None => i = rest.len(),
                    Some(k) => {
                        if tail.get(k) == Some(&b'\\') {
                            self.escape = true;
                        } else {
                            self.quote = 0;
                        }
                        i += k + 1;
                    }
                }
                continue;
            }
            let b = rest.get(i).copied().unwrap_or_default();
            let at = *pos + i as u64;
            match b {
                b'"' => self.quote = b,
                b'\'' if self.python => self.quote = b,
                b'{' | b'[' | b'(' => {
                    self.depth += 1;
                    if self.depth > max_depth.saturating_add(self.allowance) {
                        *pos = at;
                        return Step::Fail(ParseErrorKind::TooDeep { limit: max_depth }, at);
                    }
                }
                b'}' | b']' | b')' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 1 {
                        if self.items {
                            self.item_ends.push(at + 1);
                        }
                    } else if self.depth == 0 {
                        *pos = at + 1;
                        return Step::Done(at + 1);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        *pos += rest.len() as u64;
        Step::Need
    }
}

/// The name and arguments of one JSON call object, `{"name": ..., "<args key>": {...}}`;
/// the arguments may also be a string holding a JSON object, as OpenAI's wire format has
/// them.
pub(super) fn json_call(value: Value, args_keys: &[&str], end: u64) -> Result<Built, BuildError> {
    let Value::Object(mut fields) = value else {
        return Err(("a call object".into(), kind_of(&value).into()));
    };
    // The reader refused a key given twice in a call object, so each key is found once.
    let mut take = |key: &str| {
        let at = fields.iter().position(|(k, _)| k == key)?;
        Some(fields.swap_remove(at).1)
    };
    let name = match take("name") {
        Some(Value::String(name)) => name,
        Some(other) => return Err(("a string `name`".into(), kind_of(&other).into())),
        None => return Err(("a `name` field".into(), "none".into())),
    };
    let args = args_keys.iter().find_map(|key| take(key));
    let named = match args {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(text)) => match unique_keys::from_str(&text, 1) {
            Ok(Value::Object(args)) => args,
            _ => return Err(("arguments as a JSON object".into(), "a string".into())),
        },
        Some(Value::Object(args)) => args,
        Some(other) => return Err(("arguments as a JSON object".into(), kind_of(&other).into())),
    };
    Ok(Built {
        name,
        positional: Vec::new(),
        named,
        end,
    })
}

/// Parses a JSON object of arguments, in written order.
pub(super) fn json_args(text: &str) -> Result<Vec<(String, Value)>, BuildError> {
    match unique_keys::from_str(text, 1) {
        Ok(Value::Object(args)) => Ok(args),
        Ok(other) => Err(("arguments as a JSON object".into(), kind_of(&other).into())),
        Err(e) => Err(("valid JSON arguments".into(), e.to_string())),
    }
}

/// Parses a JSON value, its error as a build error.
pub(super) fn json_value(text: &str) -> Result<Value, BuildError> {
    unique_keys::from_str(text, 2).map_err(|e| ("valid JSON".into(), e.to_string()))
}

/// What a JSON value read is, for an error.
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) | Value::Bare(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_in_pieces(text: &str, piece: usize) -> Option<u64> {
        let bytes = text.as_bytes();
        let mut scan = ValueScan::json(0);
        let mut pos = 0;
        let mut held = 0;
        while held < bytes.len() {
            held = (held + piece).min(bytes.len());
            let input = Input {
                data: bytes.get(..held).unwrap_or_default(),
                base: 0,
                eof: false,
            };
            if let Step::Done(end) = scan.scan(&input, &mut pos, 64) {
                return Some(end);
            }
        }
        None
    }

    #[test]
    fn value_end_ignores_brackets_and_quotes_in_strings() {
        let text = r#"{"a": "}]\"{", "b": [1, {"c": "\\"}]} tail"#;
        for piece in 1..8 {
            assert_eq!(scan_in_pieces(text, piece), Some(text.len() as u64 - 5));
        }
    }

    #[test]
    fn item_ends_kept_only_for_a_list_of_calls() {
        let text = br#"{"a": [1, 2], "b": {"c": 3}} tail"#;
        let input = Input {
            data: text,
            base: 0,
            eof: false,
        };
        // Arguments: nested values close back to depth 1, and nothing is recorded (no
        // allocation per call).
        let mut args = ValueScan::json(1);
        assert!(matches!(args.scan(&input, &mut 0, 64), Step::Done(_)));
        assert!(args.item_ends.is_empty());
        assert_eq!(args.item_ends.capacity(), 0);
        // A list of calls: each call's end.
        let text = br#"[{"name": "f"}, {"name": "g"}]"#;
        let input = Input {
            data: text,
            base: 0,
            eof: false,
        };
        let mut list = ValueScan::json_list(3);
        assert!(matches!(list.scan(&input, &mut 0, 64), Step::Done(_)));
        assert_eq!(list.item_ends, vec![14, 29]);
    }

    #[test]
    fn markers_split_and_at_the_end() {
        let held = Input {
            data: b"ab</to",
            base: 10,
            eof: false,
        };
        assert_eq!(held.marker(12, b"</tool_call>"), Match::Need);
        let ended = Input {
            data: b"ab</to",
            base: 10,
            eof: true,
        };
        assert_eq!(ended.marker(12, b"</tool_call>"), Match::No);
        assert!(matches!(held.find(10, b"</tool_call>"), Found::Before(10)));
    }
}
