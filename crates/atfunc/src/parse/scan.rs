//! The boundary scanner: recognises a call's arguments and body one character at a time,
//! resuming wherever the last chunk stopped.
//!
//! It accepts exactly the language of `grammar/atfunc.ebnf`, so a call it accepts is built by
//! the nom grammar in one pass, and a call it refuses is refused at the first byte that cannot
//! continue it. That byte is where the parser resumes, so no byte is scanned twice.

use super::syntax::{is_ident_char, is_key_start, is_token_char, is_ws};
use super::types::ParseErrorKind;

/// One input character as the scanner sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    /// A complete character and its length in bytes.
    Char(char, usize),
    /// The bytes so far begin a character that the next chunk completes.
    Need,
    /// Not valid UTF-8 here.
    Bad,
}

/// Decodes the character at `data[i..]`. `eof` says no more bytes will come.
#[inline]
pub(crate) fn unit(data: &[u8], i: usize, eof: bool) -> Unit {
    let Some(&b) = data.get(i) else {
        return if eof { Unit::Bad } else { Unit::Need };
    };
    if b < 0x80 {
        return Unit::Char(char::from(b), 1);
    }
    let len = match b {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => return Unit::Bad,
    };
    let avail = data.get(i..).unwrap_or_default();
    let bytes = avail.get(..len).unwrap_or(avail);
    match std::str::from_utf8(bytes) {
        Ok(s) if bytes.len() == len => s.chars().next().map_or(Unit::Bad, |c| Unit::Char(c, len)),
        Ok(_) => Unit::Bad,
        Err(e) if e.error_len().is_none() && !eof => Unit::Need,
        Err(_) => Unit::Bad,
    }
}

/// Whether `bytes` is valid UTF-8 holding neither `quote` nor a backslash: the inside of a
/// string that does not end there and needs no escape handling.
pub(crate) fn plain_string_bytes(bytes: &[u8], quote: u8) -> bool {
    // Short chunks are the streaming case: one branch-free pass over 8-byte words beats
    // two calls into SIMD routines that are tuned for long inputs.
    if bytes.len() <= 64 {
        let mut special = 0;
        let mut rest = bytes;
        while let Some((word, tail)) = rest.split_first_chunk::<8>() {
            special |= special_bytes(u64::from_le_bytes(*word), quote);
            rest = tail;
        }
        if special == 0 && rest.iter().all(|&b| b < 0x80 && b != quote && b != b'\\') {
            return true;
        }
    }
    // Neither byte occurs inside a multi-byte character, so a byte search is exact.
    memchr::memchr2(quote, b'\\', bytes).is_none() && simdutf8::basic::from_utf8(bytes).is_ok()
}

const LOW_BITS: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// Non-zero if `word` holds a non-ASCII byte, `quote` or a backslash.
fn special_bytes(word: u64, quote: u8) -> u64 {
    (word | zero_bytes(word ^ (LOW_BITS * u64::from(quote))) | zero_bytes(word ^ (LOW_BITS * 0x5C)))
        & HIGH_BITS
}

/// Non-zero (in the high bits) exactly when some byte of `x` is zero.
fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(LOW_BITS) & !x & HIGH_BITS
}

/// Where the argument scanner stands. The comments give the position in the grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArgState {
    /// Before an argument or the closing `)`.
    Start,
    /// Reading an identifier that is a key if `=` or `:` follows, else a bare word.
    KeyOrBare,
    /// Whitespace after that identifier; `newline` if it crossed a line.
    KeyBlank { newline: bool },
    /// After `key:`: a key unless `/` follows (`https://...` is a bare word).
    Colon,
    /// After `key =` or `key:`.
    Value,
    /// Inside a top-level bare word, `parens` groups deep (a u64, like the offsets: a call
    /// may be longer than 4 GiB when the limit allows).
    Bare { parens: u64 },
    /// After a complete value: `,` or the closer of the enclosing list.
    After,
    /// Inside a quoted string; `key` if it is an object key.
    Str { quote: u8, escape: bool, key: bool },
    /// Before a value in an array (`close`: `]` may end it) or after `:` in an object.
    NValue { close: bool },
    /// Before a key in an object (`}` may end it).
    NKey,
    /// Inside an unquoted object key.
    NKeyBare,
    /// Before the `:` of an object member.
    NColon,
    /// Inside an unquoted token in an array or object.
    NToken,
}

/// What one character did to the argument scanner.
pub(crate) enum Step {
    /// Consumed; go on.
    Next,
    /// Not consumed: the state changed and the same character must be seen again.
    Again,
    /// Consumed the `)` that ends the call.
    Done,
}

/// Incremental state of a call's argument list.
#[derive(Debug, Clone)]
pub(crate) struct ArgScan {
    pub state: ArgState,
    /// Open `[` and `{`, innermost last; never longer than the depth limit.
    pub stack: Vec<u8>,
    /// Arguments started so far.
    pub count: usize,
    /// Whether a named argument has been seen (positional ones must come first).
    pub named: bool,
    /// Absolute offset where the current argument starts.
    pub arg_start: u64,
}

/// An error at an absolute offset.
pub(crate) type Fail = (ParseErrorKind, u64);

fn unexpected(expected: &str, found: char, at: u64) -> Fail {
    let found = match found {
        '\n' => "a line break".to_owned(),
        '\r' => "a carriage return".to_owned(),
        c => format!("`{c}`"),
    };
    (
        ParseErrorKind::Unexpected {
            expected: expected.to_owned(),
            found,
        },
        at,
    )
}

impl ArgScan {
    pub fn new() -> ArgScan {
        ArgScan {
            state: ArgState::Start,
            stack: Vec::new(),
            count: 0,
            named: false,
            arg_start: 0,
        }
    }

    pub fn reset(&mut self) {
        self.state = ArgState::Start;
        self.stack.clear();
        self.count = 0;
        self.named = false;
        self.arg_start = 0;
    }

    /// How many leading bytes of `bytes` are ASCII characters that [`step`](Self::step)
    /// would consume without changing the state: the runs of a bare word, key or token and
    /// the whitespace between values, skipped in one loop. Strings have their own bulk path.
    // This and the other steps below run per character in the atfunc engine, another module:
    // asked to, the compiler inlines them across codegen units (without it, the parse
    // bench's call-dense input took 4 % more instructions).
    #[inline]
    pub fn plain_run(&self, bytes: &[u8]) -> usize {
        use ArgState::*;
        let run =
            |keep: fn(u8) -> bool| bytes.iter().position(|&b| !keep(b)).unwrap_or(bytes.len());
        match self.state {
            Start | Value | After | NValue { .. } | NKey | NColon => {
                run(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
            }
            KeyBlank { .. } => run(|b| matches!(b, b' ' | b'\t')),
            KeyOrBare => run(|b| b.is_ascii_alphanumeric() || b == b'_'),
            Bare { .. } => run(|b| b < 0x80 && !matches!(b, b'(' | b')' | b',' | b'\r' | b'\n')),
            NToken | NKeyBare => run(|b| b < 0x80 && is_token_char(char::from(b))),
            Colon | Str { .. } => 0,
        }
    }

    /// What is open, for an "unterminated" error.
    pub fn open_construct(&self) -> &'static str {
        match (self.state, self.stack.last()) {
            (ArgState::Str { .. }, _) => "string",
            (_, Some(b'[')) => "array",
            (_, Some(_)) => "object",
            _ => "argument list",
        }
    }

    fn positional(&self, at: u64) -> Result<(), Fail> {
        if self.named {
            Err((ParseErrorKind::PositionalAfterNamed, at))
        } else {
            Ok(())
        }
    }

    fn push(&mut self, open: u8, at: u64, max_depth: usize) -> Result<(), Fail> {
        if self.stack.len() >= max_depth {
            return Err((ParseErrorKind::TooDeep { limit: max_depth }, at));
        }
        self.stack.push(open);
        self.state = if open == b'[' {
            ArgState::NValue { close: true }
        } else {
            ArgState::NKey
        };
        Ok(())
    }

    fn pop(&mut self) {
        self.stack.pop();
        self.state = ArgState::After;
    }

    /// value = dq_string | sq_string | array | object | bare ;  (its first character)
    fn value_start(&mut self, c: char, at: u64, max_depth: usize) -> Result<Step, Fail> {
        match c {
            '"' | '\'' => {
                self.state = ArgState::Str {
                    quote: c as u8,
                    escape: false,
                    key: false,
                }
            }
            '[' => self.push(b'[', at, max_depth)?,
            '{' => self.push(b'{', at, max_depth)?,
            ',' | ')' => return Err(unexpected("a value", c, at)),
            '(' => self.state = ArgState::Bare { parens: 1 },
            _ => self.state = ArgState::Bare { parens: 0 },
        }
        Ok(Step::Next)
    }

    /// Feeds one character at absolute offset `at`.
    #[inline]
    pub fn step(
        &mut self,
        c: char,
        at: u64,
        max_depth: usize,
        max_args: usize,
    ) -> Result<Step, Fail> {
        use ArgState::*;
        match self.state {
            // arg_list = arg , ws , { "," , ws , arg , ws } , [ "," , ws ] ;
            Start => match c {
                _ if is_ws(c) => Ok(Step::Next),
                ')' => Ok(Step::Done),
                ',' => Err(unexpected("an argument or `)`", c, at)),
                _ => {
                    self.count += 1;
                    if self.count > max_args {
                        return Err((ParseErrorKind::TooManyArgs { limit: max_args }, at));
                    }
                    self.arg_start = at;
                    if is_key_start(c) {
                        self.state = KeyOrBare;
                        Ok(Step::Next)
                    } else {
                        self.positional(at)?;
                        self.value_start(c, at, max_depth)
                    }
                }
            },
            // named = key , ws , ( "=" | ":" ) , ws , value ;  or the start of a bare word
            KeyOrBare => match c {
                _ if is_ident_char(c) => Ok(Step::Next),
                '=' => {
                    self.named = true;
                    self.state = Value;
                    Ok(Step::Next)
                }
                ':' => {
                    self.state = Colon;
                    Ok(Step::Next)
                }
                '\r' | '\n' => {
                    self.state = KeyBlank { newline: true };
                    Ok(Step::Next)
                }
                ' ' | '\t' => {
                    self.state = KeyBlank { newline: false };
                    Ok(Step::Next)
                }
                _ => {
                    self.positional(self.arg_start)?;
                    self.state = Bare { parens: 0 };
                    Ok(Step::Again)
                }
            },
            KeyBlank { newline } => match c {
                '=' => {
                    self.named = true;
                    self.state = Value;
                    Ok(Step::Next)
                }
                ':' => {
                    self.state = Colon;
                    Ok(Step::Next)
                }
                '\r' | '\n' => {
                    self.state = KeyBlank { newline: true };
                    Ok(Step::Next)
                }
                ' ' | '\t' => Ok(Step::Next),
                _ => {
                    self.positional(self.arg_start)?;
                    // A bare word does not cross a line: past one, only `,` or `)` may come.
                    self.state = if newline { After } else { Bare { parens: 0 } };
                    Ok(Step::Again)
                }
            },
            Colon => {
                if c == '/' {
                    self.positional(self.arg_start)?;
                    self.state = Bare { parens: 0 };
                } else {
                    self.named = true;
                    self.state = Value;
                }
                Ok(Step::Again)
            }
            Value => {
                if is_ws(c) {
                    Ok(Step::Next)
                } else {
                    self.value_start(c, at, max_depth)
                }
            }
            // bare = bare_first , { bare_char | group } ;
            Bare { parens } => {
                match c {
                    '(' => self.state = Bare { parens: parens + 1 },
                    ')' if parens == 0 => return Ok(Step::Done),
                    ')' => self.state = Bare { parens: parens - 1 },
                    ',' if parens == 0 => self.state = Start,
                    '\r' | '\n' if parens == 0 => self.state = After,
                    '\r' | '\n' => return Err(unexpected("`)`", c, at)),
                    _ => {}
                }
                Ok(Step::Next)
            }
            After => match (c, self.stack.last()) {
                _ if is_ws(c) => Ok(Step::Next),
                (',', None) => {
                    self.state = Start;
                    Ok(Step::Next)
                }
                (')', None) => Ok(Step::Done),
                (_, None) => Err(unexpected("`,` or `)`", c, at)),
                (',', Some(b'[')) => {
                    self.state = NValue { close: true };
                    Ok(Step::Next)
                }
                (',', Some(_)) => {
                    self.state = NKey;
                    Ok(Step::Next)
                }
                (']', Some(b'[')) | ('}', Some(b'{')) => {
                    self.pop();
                    Ok(Step::Next)
                }
                (_, Some(b'[')) => Err(unexpected("`,` or `]`", c, at)),
                (_, Some(_)) => Err(unexpected("`,` or `}`", c, at)),
            },
            // dq_string = '"' , { dq_char | escape } , '"' ;  (and sq_string)
            Str { quote, escape, key } => {
                if escape {
                    self.state = Str {
                        quote,
                        escape: false,
                        key,
                    };
                } else if c == '\\' {
                    self.state = Str {
                        quote,
                        escape: true,
                        key,
                    };
                } else if c == char::from(quote) {
                    self.state = if key { NColon } else { After };
                }
                Ok(Step::Next)
            }
            // nvalue = dq_string | sq_string | array | object | token ;
            NValue { close } => match c {
                _ if is_ws(c) => Ok(Step::Next),
                '"' | '\'' => {
                    self.state = Str {
                        quote: c as u8,
                        escape: false,
                        key: false,
                    };
                    Ok(Step::Next)
                }
                '[' | '{' => {
                    self.push(c as u8, at, max_depth)?;
                    Ok(Step::Next)
                }
                ']' if close => {
                    self.pop();
                    Ok(Step::Next)
                }
                _ if is_token_char(c) => {
                    self.state = NToken;
                    Ok(Step::Next)
                }
                _ => Err(unexpected("a value", c, at)),
            },
            // member = ( dq_string | sq_string | token ) , ws , ":" , ws , nvalue ;
            NKey => match c {
                _ if is_ws(c) => Ok(Step::Next),
                '}' => {
                    self.pop();
                    Ok(Step::Next)
                }
                '"' | '\'' => {
                    self.state = Str {
                        quote: c as u8,
                        escape: false,
                        key: true,
                    };
                    Ok(Step::Next)
                }
                _ if is_token_char(c) => {
                    self.state = NKeyBare;
                    Ok(Step::Next)
                }
                _ => Err(unexpected("a key or `}`", c, at)),
            },
            NKeyBare => match c {
                _ if is_token_char(c) => Ok(Step::Next),
                _ if is_ws(c) => {
                    self.state = NColon;
                    Ok(Step::Next)
                }
                ':' => {
                    self.state = NValue { close: false };
                    Ok(Step::Next)
                }
                _ => Err(unexpected("`:`", c, at)),
            },
            NColon => match c {
                _ if is_ws(c) => Ok(Step::Next),
                ':' => {
                    self.state = NValue { close: false };
                    Ok(Step::Next)
                }
                _ => Err(unexpected("`:`", c, at)),
            },
            // token = token_char , { token_char } ;
            NToken => {
                if is_token_char(c) {
                    Ok(Step::Next)
                } else {
                    self.state = After;
                    Ok(Step::Again)
                }
            }
        }
    }
}

/// What comes after `)`: `gap , "with_body" , ws , "[["`, or not a body at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gap {
    /// Spaces and tabs.
    Blank,
    /// This many bytes of `with_body` matched.
    Keyword(usize),
    /// Whitespace after `with_body`.
    KeywordBlank,
    /// The first `[` of `[[`.
    Bracket,
}

/// The outcome of one byte of the gap.
pub(crate) enum GapStep {
    Next(Gap),
    Body,
    NotBody,
}

pub(crate) const WITH_BODY: &[u8] = b"with_body";

impl Gap {
    /// gap = { " " | "\t" } ;
    /// body = gap , "with_body" , ws , "[[" , body_text , "]]" ;
    ///
    /// A line break in the gap ends the call: a call at the end of a line is complete as
    /// soon as the line is, whatever the next line holds.
    #[inline]
    pub fn step(self, b: u8) -> GapStep {
        use Gap::*;
        match (self, b) {
            (Blank, b' ' | b'\t') => GapStep::Next(self),
            (Blank, b'w') => GapStep::Next(Keyword(1)),
            (Keyword(n), _) if WITH_BODY.get(n) == Some(&b) => {
                if n + 1 == WITH_BODY.len() {
                    GapStep::Next(KeywordBlank)
                } else {
                    GapStep::Next(Keyword(n + 1))
                }
            }
            (KeywordBlank, b' ' | b'\t' | b'\r' | b'\n') => GapStep::Next(KeywordBlank),
            (KeywordBlank, b'[') => GapStep::Next(Bracket),
            (Bracket, b'[') => GapStep::Body,
            _ => GapStep::NotBody,
        }
    }
}

/// Incremental state of a `with_body [[ ... ]]` block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct BodyScan {
    /// Open `[` and `{` outside strings (never above the depth limit).
    pub depth: usize,
    pub in_str: bool,
    pub escape: bool,
    /// The previous character was a `]` at depth 0: one more ends the body.
    pub pending: bool,
}

/// The outcome of one character of a body.
pub(crate) enum BodyStep {
    Next,
    /// The second `]` of the closing `]]`.
    End,
}

impl BodyScan {
    /// How many leading bytes of `bytes` are ASCII characters that only continue the body
    /// text, as [`step`](Self::step) would see them: no bracket, brace, quote or backslash.
    /// Each of them clears `pending`.
    #[inline]
    pub fn plain_run(&self, bytes: &[u8]) -> usize {
        if self.escape {
            return 0;
        }
        let plain: fn(u8) -> bool = if self.in_str {
            |b| b < 0x80 && b != b'"' && b != b'\\'
        } else {
            |b| b < 0x80 && !matches!(b, b'"' | b'\\' | b'[' | b']' | b'{' | b'}')
        };
        bytes.iter().position(|&b| !plain(b)).unwrap_or(bytes.len())
    }

    /// body_text = ? the first "]]" outside a string and outside nested brackets ends it ? ;
    ///
    /// `room` says whether the body may grow by this character (the length limit).
    pub fn step(
        &mut self,
        c: char,
        at: u64,
        max_depth: usize,
        room: impl FnOnce() -> Result<(), Fail>,
    ) -> Result<BodyStep, Fail> {
        if !self.in_str && self.depth == 0 && c == ']' {
            if self.pending {
                return Ok(BodyStep::End);
            }
            self.pending = true;
            return Ok(BodyStep::Next);
        }
        self.pending = false;
        room()?;
        if self.in_str {
            if self.escape {
                self.escape = false;
            } else if c == '\\' {
                self.escape = true;
            } else if c == '"' {
                self.in_str = false;
            }
            return Ok(BodyStep::Next);
        }
        match c {
            '"' => self.in_str = true,
            '[' | '{' => {
                if self.depth >= max_depth {
                    return Err((ParseErrorKind::TooDeep { limit: max_depth }, at));
                }
                self.depth += 1;
            }
            ']' | '}' => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
        Ok(BodyStep::Next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_word_nests_parentheses_past_u32() {
        // Four billion `(` fit in a call when max_call_len is raised; the count must not
        // overflow, and the matching `)` still closes a group rather than the call.
        let deep = u32::MAX.into();
        let mut scan = ArgScan::new();
        scan.state = ArgState::Bare { parens: deep };
        assert!(matches!(scan.step('(', 0, 64, 256), Ok(Step::Next)));
        assert!(matches!(scan.step(')', 1, 64, 256), Ok(Step::Next)));
        assert_eq!(scan.state, ArgState::Bare { parens: deep });
    }
}
