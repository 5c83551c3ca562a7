//! `pythonic`: a Python list of calls, `[get_weather(city='Paris'), get_time()]`.
//!
//! Meta's Llama 3.2 and Llama 4 chat templates (the "pythonic" tool format of their
//! `tokenizer_config.json`; vLLM's and SGLang's `pythonic` parsers read the same) ask for
//! `[func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)]`.
//! Values are Python literals: strings in single or double quotes (triple quotes too),
//! numbers, `True`, `False`, `None`, lists, tuples and dicts, nested. Names are as the tools
//! define them, dots and non-ASCII letters included (`uber.ride`, `météo`).
//!
//! A block opens at a `[` followed by a name and `(`; it ends at the matching `]`.

use super::block::{opened, BlockScan, Opens};
use super::scan::{BuildError, Built, Input, Step, ValueScan};
use super::Dialect;
use crate::parse::Value;

/// Longest name (and blanks) between `[` and `(` at an opening.
const MAX_HEAD: u64 = 256;

pub(super) fn opens(input: &Input<'_>, i: u64) -> Opens {
    if input.byte(i) != Some(b'[') {
        return Opens::No;
    }
    let head = input.rest(i + 1);
    let head = head.get(..MAX_HEAD as usize).unwrap_or(head);
    // A character cut off at the end of what is held may still complete a name.
    let (text, cut) = match std::str::from_utf8(head) {
        Ok(s) => (s, false),
        Err(e) => (
            std::str::from_utf8(head.get(..e.valid_up_to()).unwrap_or_default()).unwrap_or(""),
            e.error_len().is_none(),
        ),
    };
    let text_trim = text.trim_start_matches([' ', '\t', '\r', '\n']);
    let name_len = name_prefix(text_trim);
    let after = text_trim
        .get(name_len..)
        .unwrap_or("")
        .trim_start_matches([' ', '\t']);
    if name_len > 0 && after.starts_with('(') {
        return opened(Pythonic::default(), i);
    }
    // Undecided while everything held so far could still be `[ name (`.
    let consumed = text.len() == head.len() || cut;
    let undecided = (after.is_empty() || (after == "." && name_len > 0))
        && consumed
        && !input.eof
        && (head.len() as u64) < MAX_HEAD;
    if undecided {
        Opens::Need
    } else {
        Opens::No
    }
}

/// The length of the dotted name at the start of `text`: identifier characters and dots,
/// not starting or ending with a dot.
fn name_prefix(text: &str) -> usize {
    let mut len = 0;
    let mut last_dot = true;
    for (i, c) in text.char_indices() {
        if c.is_alphanumeric() || c == '_' {
            last_dot = false;
            len = i + c.len_utf8();
        } else if c == '.' && !last_dot {
            last_dot = true;
        } else {
            break;
        }
    }
    len
}

#[derive(Debug)]
struct Pythonic {
    value: ValueScan,
    value_end: Option<u64>,
}

impl Default for Pythonic {
    fn default() -> Self {
        Pythonic {
            value: ValueScan::python(),
            value_end: None,
        }
    }
}

impl BlockScan for Pythonic {
    fn scan(&mut self, input: &Input<'_>, pos: &mut u64, max_depth: usize) -> Step {
        let step = self.value.scan(input, pos, max_depth);
        if let Step::Done(end) = step {
            self.value_end = Some(end);
        }
        step
    }

    fn build(&self, input: &Input<'_>, start: u64, end: u64) -> Result<Vec<Built>, BuildError> {
        let text = std::str::from_utf8(input.slice(start, end)).unwrap_or_default();
        let mut reader = Literal { text, at: 0 };
        let calls = reader.call_list()?;
        Ok(calls
            .into_iter()
            .enumerate()
            .map(|(k, (name, positional, named))| Built {
                name,
                positional,
                named,
                end: self.value.item_ends.get(k).copied().unwrap_or(end),
            })
            .collect())
    }

    fn dialect(&self) -> Dialect {
        Dialect::Pythonic
    }

    fn awaits(&self) -> &'static str {
        "Python list of calls (no closing `]`)"
    }

    fn untagged(&self) -> bool {
        true
    }
}

type PyCall = (String, Vec<Value>, Vec<(String, Value)>);

/// A reader of Python literals over a complete list of calls. Its recursion is bounded:
/// the scanner has refused anything nested deeper than the limit.
struct Literal<'a> {
    text: &'a str,
    at: usize,
}

impl Literal<'_> {
    fn rest(&self) -> &str {
        self.text.get(self.at..).unwrap_or("")
    }

    fn ws(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start().len();
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.at += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn fail<T>(&self, expected: &str) -> Result<T, BuildError> {
        let found = match self.peek() {
            Some(c) => format!("`{c}` at byte {}", self.at),
            None => "end of input".to_owned(),
        };
        Err((expected.to_owned(), found))
    }

    /// call_list = "[" , call , { "," , call } , [ "," ] , "]" ;
    fn call_list(&mut self) -> Result<Vec<PyCall>, BuildError> {
        self.ws();
        if !self.eat('[') {
            return self.fail("`[`");
        }
        let mut calls = Vec::new();
        loop {
            self.ws();
            if self.eat(']') {
                break;
            }
            calls.push(self.call()?);
            self.ws();
            if self.eat(',') {
                continue;
            }
            self.ws();
            if self.eat(']') {
                break;
            }
            return self.fail("`,` or `]`");
        }
        self.ws();
        if self.at < self.text.len() {
            return self.fail("the end of the list");
        }
        Ok(calls)
    }

    /// call = name , "(" , [ arg , { "," , arg } , [ "," ] ] , ")" ;
    fn call(&mut self) -> Result<PyCall, BuildError> {
        let len = name_prefix(self.rest());
        if len == 0 {
            return self.fail("a function name");
        }
        let name = self.rest().get(..len).unwrap_or("").to_owned();
        self.at += len;
        self.ws();
        if !self.eat('(') {
            return self.fail("`(`");
        }
        let (mut positional, mut named) = (Vec::new(), Vec::new());
        loop {
            self.ws();
            if self.eat(')') {
                break;
            }
            // arg = key , "=" , value | value ;
            let key_len = name_prefix(self.rest());
            let save = self.at;
            let mut is_named = false;
            if key_len > 0 {
                let key = self.rest().get(..key_len).unwrap_or("").to_owned();
                self.at += key_len;
                self.ws();
                if self.rest().starts_with('=') && !self.rest().starts_with("==") {
                    self.at += 1;
                    self.ws();
                    named.push((key, self.value()?));
                    is_named = true;
                } else {
                    self.at = save;
                }
            }
            if !is_named {
                if !named.is_empty() {
                    return self.fail("a keyword argument (`name=value`)");
                }
                positional.push(self.value()?);
            }
            self.ws();
            if self.eat(',') {
                continue;
            }
            if self.eat(')') {
                break;
            }
            return self.fail("`,` or `)`");
        }
        Ok((name, positional, named))
    }

    /// value = string | number | "True" | "False" | "None" | list | tuple | dict ;
    fn value(&mut self) -> Result<Value, BuildError> {
        self.ws();
        match self.peek() {
            Some('\'' | '"') => self.string().map(Value::String),
            Some('[') => self.items('[', ']').map(Value::Array),
            Some('(') => self.items('(', ')').map(Value::Array),
            Some('{') => self.dict(),
            Some(c) if c.is_ascii_digit() || matches!(c, '-' | '+' | '.') => self.number(),
            Some(_) => {
                let len = name_prefix(self.rest());
                let word = self.rest().get(..len).unwrap_or("");
                let value = match word {
                    "True" | "true" => Value::Bool(true),
                    "False" | "false" => Value::Bool(false),
                    "None" | "null" => Value::Null,
                    _ => return self.fail("a Python literal"),
                };
                self.at += len;
                Ok(value)
            }
            None => self.fail("a value"),
        }
    }

    fn items(&mut self, open: char, close: char) -> Result<Vec<Value>, BuildError> {
        self.eat(open);
        let mut items = Vec::new();
        loop {
            self.ws();
            if self.eat(close) {
                return Ok(items);
            }
            items.push(self.value()?);
            self.ws();
            if self.eat(',') {
                continue;
            }
            if self.eat(close) {
                return Ok(items);
            }
            return self.fail(&format!("`,` or `{close}`"));
        }
    }

    fn dict(&mut self) -> Result<Value, BuildError> {
        self.eat('{');
        let mut fields = Vec::new();
        loop {
            self.ws();
            if self.eat('}') {
                return Ok(Value::Object(fields));
            }
            let key = match self.value()? {
                Value::String(s) | Value::Number(s) => s,
                Value::Bool(b) => if b { "True" } else { "False" }.to_owned(),
                Value::Null => "None".to_owned(),
                _ => return self.fail("a string key"),
            };
            self.ws();
            if !self.eat(':') {
                return self.fail("`:`");
            }
            fields.push((key, self.value()?));
            self.ws();
            if self.eat(',') {
                continue;
            }
            if self.eat('}') {
                return Ok(Value::Object(fields));
            }
            return self.fail("`,` or `}`");
        }
    }

    fn number(&mut self) -> Result<Value, BuildError> {
        let rest = self.rest();
        let len = rest
            .find(|c: char| !(c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E' | '_')))
            .unwrap_or(rest.len());
        let literal = rest.get(..len).unwrap_or("").replace('_', "");
        if literal.parse::<f64>().is_err() {
            return self.fail("a number");
        }
        self.at += len;
        Ok(Value::Number(literal))
    }

    /// A Python string in single, double or triple quotes, escapes resolved.
    fn string(&mut self) -> Result<String, BuildError> {
        let Some(q) = self.peek() else {
            return self.fail("a string");
        };
        let triple: String = std::iter::repeat_n(q, 3).collect();
        let close_len = if self.rest().starts_with(&triple) {
            3
        } else {
            1
        };
        self.at += close_len;
        let mut out = String::new();
        loop {
            let rest = self.rest();
            let Some(c) = rest.chars().next() else {
                return self.fail("a closing quote");
            };
            if c == q && (close_len == 1 || rest.starts_with(&triple)) {
                self.at += close_len;
                return Ok(out);
            }
            self.at += c.len_utf8();
            if c != '\\' {
                out.push(c);
                continue;
            }
            let Some(e) = self.peek() else {
                return self.fail("an escape");
            };
            self.at += e.len_utf8();
            match e {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                '\n' => {}
                'x' | 'u' | 'U' => {
                    let n = match e {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    let hex = self.rest().get(..n).unwrap_or("");
                    match u32::from_str_radix(hex, 16).ok().and_then(char::from_u32) {
                        Some(ch) if hex.len() == n => {
                            out.push(ch);
                            self.at += n;
                        }
                        _ => return self.fail("a hexadecimal escape"),
                    }
                }
                '\\' | '\'' | '"' => out.push(e),
                other => {
                    out.push('\\');
                    out.push(other);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<PyCall>, BuildError> {
        Literal { text, at: 0 }.call_list()
    }

    #[test]
    fn python_literals() {
        let calls = read(
            "[uber.ride(loc='Berkeley, CA', ok=True, n=None, xs=[1, (2, 3)], d={'a': -1.5}), météo()]",
        )
        .expect("read");
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].0, "uber.ride");
        assert_eq!(
            calls[0].2[0],
            ("loc".into(), Value::String("Berkeley, CA".into()))
        );
        assert_eq!(calls[0].2[1].1, Value::Bool(true));
        assert_eq!(calls[0].2[2].1, Value::Null);
        assert_eq!(calls[1].0, "météo");
        assert!(read("[f(a=1) g()]").is_err());
    }
}

#[cfg(test)]
mod stream_tests {
    use super::super::read_at_every_chunking;
    use super::*;

    #[test]
    fn streamed_list_with_non_ascii() {
        let text = " \n[météo.get(ville='Zürich', jours=[1, 2], q=\"a)]\"), f()]\n";
        let (_, calls) = read_at_every_chunking(Dialect::Pythonic, text);
        assert_eq!(
            calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            ["météo.get", "f"]
        );
        assert_eq!(calls[0].named[2].1, Value::String("a)]".into()));
        // The list has no marker of its own: in prose, it is text.
        for text in [
            "Voilà [météo.get(ville='Zürich')] fin",
            "Voilà [météo.get(ville='Zürich')]",
            "[météo.get(ville='Zürich')] fin",
        ] {
            let (_, calls) = read_at_every_chunking(Dialect::Pythonic, text);
            assert!(calls.is_empty(), "{text}");
        }
        let (_, calls) = read_at_every_chunking(Dialect::Pythonic, "see [link](x) and [1, 2]");
        assert!(calls.is_empty());
    }
}
