//! The call grammar (`grammar/atfunc.ebnf`) as nom parsers, run once over the complete text of
//! a call whose end the boundary scanner has already found.
//!
//! The scanner in `scan.rs` recognises the same language byte by byte; this module builds the
//! values. Every function quotes the rule it implements.

use super::types::Value;
use nom::branch::alt;
use nom::bytes::complete::take_while1;
use nom::character::complete::char;
use nom::combinator::{cut, map, not};
use nom::error::{Error, ErrorKind};
use nom::sequence::{preceded, terminated};
use nom::{IResult, Parser};

type Res<'a, T> = IResult<&'a str, T>;

/// A call as the grammar reads it, before it gets its span and body.
pub(crate) struct ParsedCall {
    pub name: String,
    pub positional: Vec<Value>,
    pub named: Vec<(String, Value)>,
}

/// Parses the text of a call, `@` to `)`. On failure, the byte offset in `text` where the
/// grammar stopped.
pub(crate) fn parse_call(text: &str, max_depth: usize) -> Result<ParsedCall, usize> {
    match call(text, max_depth) {
        Ok(("", parsed)) => Ok(parsed),
        Ok((rest, _)) => Err(text.len() - rest.len()),
        Err(nom::Err::Error(e) | nom::Err::Failure(e)) => Err(text.len() - e.input.len()),
        Err(nom::Err::Incomplete(_)) => Err(text.len()),
    }
}

fn fail<T>(at: &str) -> Res<'_, T> {
    Err(nom::Err::Failure(Error::new(at, ErrorKind::Verify)))
}

/// ident_char = ? Unicode alphabetic or numeric character ? | "_" ;
pub(crate) fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// key_start = ? Unicode alphabetic character ? | "_" ;
pub(crate) fn is_key_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

/// ws = { " " | "\t" | "\r" | "\n" } ;
pub(crate) fn is_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

/// token_char = ? any character except ws, ",", "[", "]", "{", "}", '"', "'", ":", "(", ")" ? ;
pub(crate) fn is_token_char(c: char) -> bool {
    !is_ws(c)
        && !matches!(
            c,
            ',' | '[' | ']' | '{' | '}' | '"' | '\'' | ':' | '(' | ')'
        )
}

fn ws(i: &str) -> Res<'_, &str> {
    let n = i
        .bytes()
        .take_while(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        .count();
    split(i, n)
}

/// `i` split after `n` bytes, as a parser's result. The parsers here only split after
/// whole characters, so the fallback never runs.
fn split(i: &str, n: usize) -> Res<'_, &str> {
    match i.split_at_checked(n) {
        Some((head, rest)) => Ok((rest, head)),
        None => fail(i),
    }
}

/// The length of the run of identifier characters at the start of `i`: ASCII in a byte
/// loop, the rest by character.
fn ident_len(i: &str) -> usize {
    let bytes = i.as_bytes();
    let ascii = bytes
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
        .count();
    match (bytes.get(ascii), i.get(ascii..)) {
        (Some(b), Some(rest)) if !b.is_ascii() => {
            ascii
                + rest
                    .char_indices()
                    .find(|&(_, c)| !is_ident_char(c))
                    .map_or(rest.len(), |(k, _)| k)
        }
        _ => ascii,
    }
}

/// ident = ident_char , { ident_char } ;
fn ident(i: &str) -> Res<'_, &str> {
    match ident_len(i) {
        0 => Err(nom::Err::Error(Error::new(i, ErrorKind::TakeWhile1))),
        n => split(i, n),
    }
}

/// name = ident , { "." , ident } ;
fn name(i: &str) -> Res<'_, &str> {
    let (mut rest, _) = ident(i)?;
    while let Some((after, _)) = rest.strip_prefix('.').and_then(|r| ident(r).ok()) {
        rest = after;
    }
    split(i, i.len() - rest.len())
}

/// key = key_start , { ident_char } ;
fn key(i: &str) -> Res<'_, &str> {
    match i.chars().next() {
        Some(c) if is_key_start(c) => split(i, ident_len(i)),
        _ => Err(nom::Err::Error(Error::new(i, ErrorKind::Satisfy))),
    }
}

/// call = "@" , name , "(" , ws , [ arg_list ] , ")" , [ body ] ;
///
/// The body is found and kept raw by the scanner; this reads `@` to `)`.
fn call(i: &str, max_depth: usize) -> Res<'_, ParsedCall> {
    let (i, (_, name, _)) = (char('@'), name, char('(')).parse(i)?;
    let (i, (positional, named)) = arg_list(i, max_depth)?;
    Ok((
        i,
        ParsedCall {
            name: name.to_owned(),
            positional,
            named,
        },
    ))
}

enum Arg {
    Positional(Value),
    Named(String, Value),
}

/// arg_list = arg , ws , { "," , ws , arg , ws } , [ "," , ws ] ;
///
/// Reads from after `(` to after `)`; all positional arguments come before the named ones.
#[allow(clippy::type_complexity)]
fn arg_list(i: &str, max_depth: usize) -> Res<'_, (Vec<Value>, Vec<(String, Value)>)> {
    let mut positional = Vec::new();
    let mut named = Vec::new();
    let (mut i, _) = ws(i)?;
    loop {
        if let Some(rest) = i.strip_prefix(')') {
            return Ok((rest, (positional, named)));
        }
        let (rest, a) = arg(i, max_depth)?;
        match a {
            Arg::Positional(v) if named.is_empty() => positional.push(v),
            Arg::Positional(_) => return fail(i),
            Arg::Named(k, v) => named.push((k, v)),
        }
        let (rest, _) = ws(rest)?;
        if let Some(rest) = rest.strip_prefix(',') {
            i = ws(rest)?.0;
        } else if let Some(rest) = rest.strip_prefix(')') {
            return Ok((rest, (positional, named)));
        } else {
            return fail(rest);
        }
    }
}

/// arg = named | value ;
/// named = key , ws , separator , ws , value ;
fn arg(i: &str, max_depth: usize) -> Res<'_, Arg> {
    alt((
        map(
            (key, ws, separator, ws, |i| value(i, max_depth)),
            |(k, _, _, _, v)| Arg::Named(k.to_owned(), v),
        ),
        map(|i| value(i, max_depth), Arg::Positional),
    ))
    .parse(i)
}

/// separator = "=" | ":" (* not directly followed by "/" *) ;
fn separator(i: &str) -> Res<'_, char> {
    alt((char('='), terminated(char(':'), not(char('/'))))).parse(i)
}

/// value = dq_string | sq_string | array | object | bare ;
fn value(i: &str, max_depth: usize) -> Res<'_, Value> {
    alt((
        map(dq_string, Value::String),
        map(sq_string, Value::String),
        |i| array(i, 1, max_depth),
        |i| object(i, 1, max_depth),
        bare,
    ))
    .parse(i)
}

/// nvalue = dq_string | sq_string | array | object | token ;
fn nvalue(i: &str, depth: usize, max_depth: usize) -> Res<'_, Value> {
    alt((
        map(dq_string, Value::String),
        map(sq_string, Value::String),
        |i| array(i, depth + 1, max_depth),
        |i| object(i, depth + 1, max_depth),
        map(token, classify),
    ))
    .parse(i)
}

/// array = "[" , ws , [ nvalue , ws , { "," , ws , nvalue , ws } , [ "," , ws ] ] , "]" ;
///
/// `depth` is this array's nesting level; the scanner has already refused anything deeper
/// than `max_depth`, so the recursion is bounded.
fn array(i: &str, depth: usize, max_depth: usize) -> Res<'_, Value> {
    let (i, _) = char('[').parse(i)?;
    if depth > max_depth {
        return fail(i);
    }
    let mut items = Vec::new();
    let (mut i, _) = ws(i)?;
    loop {
        if let Some(rest) = i.strip_prefix(']') {
            return Ok((rest, Value::Array(items)));
        }
        let (rest, v) = cut(|i| nvalue(i, depth, max_depth)).parse(i)?;
        items.push(v);
        let (rest, _) = ws(rest)?;
        if let Some(rest) = rest.strip_prefix(',') {
            i = ws(rest)?.0;
        } else if let Some(rest) = rest.strip_prefix(']') {
            return Ok((rest, Value::Array(items)));
        } else {
            return fail(rest);
        }
    }
}

/// object = "{" , ws , [ member , ws , { "," , ws , member , ws } , [ "," , ws ] ] , "}" ;
fn object(i: &str, depth: usize, max_depth: usize) -> Res<'_, Value> {
    let (i, _) = char('{').parse(i)?;
    if depth > max_depth {
        return fail(i);
    }
    let mut fields = Vec::new();
    let (mut i, _) = ws(i)?;
    loop {
        if let Some(rest) = i.strip_prefix('}') {
            return Ok((rest, Value::Object(fields)));
        }
        let (rest, field) = cut(|i| member(i, depth, max_depth)).parse(i)?;
        fields.push(field);
        let (rest, _) = ws(rest)?;
        if let Some(rest) = rest.strip_prefix(',') {
            i = ws(rest)?.0;
        } else if let Some(rest) = rest.strip_prefix('}') {
            return Ok((rest, Value::Object(fields)));
        } else {
            return fail(rest);
        }
    }
}

/// member = ( dq_string | sq_string | token ) , ws , ":" , ws , nvalue ;
fn member(i: &str, depth: usize, max_depth: usize) -> Res<'_, (String, Value)> {
    let (i, k) = alt((dq_string, sq_string, map(token, str::to_owned))).parse(i)?;
    let (i, _) = (ws, char(':'), ws).parse(i)?;
    let (i, v) = nvalue(i, depth, max_depth)?;
    Ok((i, (k, v)))
}

/// token = token_char , { token_char } ;
fn token(i: &str) -> Res<'_, &str> {
    take_while1(is_token_char).parse(i)
}

/// bare = bare_first , { bare_char | group } ;
/// group = "(" , { group_char | group } , ")" ;
///
/// Groups nest with a counter, not recursion, so `((((...` cannot exhaust the stack.
fn bare(i: &str) -> Res<'_, Value> {
    match i.chars().next() {
        Some(c) if !is_ws(c) && !matches!(c, ',' | ')' | '"' | '\'' | '[' | '{') => {}
        _ => return Err(nom::Err::Error(Error::new(i, ErrorKind::Char))),
    }
    let mut parens = 0usize;
    let mut end = i.len();
    for (at, c) in i.char_indices() {
        match c {
            '(' => parens += 1,
            ')' if parens == 0 => {
                end = at;
                break;
            }
            ')' => parens -= 1,
            ',' if parens == 0 => {
                end = at;
                break;
            }
            '\r' | '\n' if parens == 0 => {
                end = at;
                break;
            }
            '\r' | '\n' => return fail(i.get(at..).unwrap_or_default()),
            _ => {}
        }
    }
    let (word, rest) = i.split_at(end);
    Ok((rest, classify(word.trim_end_matches([' ', '\t']))))
}

/// A bare word or token as a value: a number, a keyword literal, or a string as written.
pub(crate) fn classify(word: &str) -> Value {
    match word {
        "true" | "True" => Value::Bool(true),
        "false" | "False" => Value::Bool(false),
        "null" | "None" => Value::Null,
        _ if is_number(word) => Value::Number(word.to_owned()),
        _ => Value::Bare(word.to_owned()),
    }
}

/// number = [ "+" | "-" ] , ( digits , [ "." , { digit } ] | "." , digits ) ,
///          [ ( "e" | "E" ) , [ "+" | "-" ] , digits ] ;
pub(crate) fn is_number(word: &str) -> bool {
    let b = word.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let int_start = i;
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    let int_digits = i - int_start;
    let mut frac_digits = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let s = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        frac_digits = i - s;
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let s = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == s {
            return false;
        }
    }
    i == b.len()
}

/// dq_string = '"' , { dq_char | escape } , '"' ;
fn dq_string(i: &str) -> Res<'_, String> {
    preceded(char('"'), cut(|i| string_body(i, b'"'))).parse(i)
}

/// sq_string = "'" , { sq_char | escape } , "'" ;
fn sq_string(i: &str) -> Res<'_, String> {
    preceded(char('\''), cut(|i| string_body(i, b'\''))).parse(i)
}

/// The characters of a string after its opening quote, through the closing one.
///
/// escape = "\" , ? any character ? ;
fn string_body(i: &str, quote: u8) -> Res<'_, String> {
    let mut out = String::new();
    let mut rest = i;
    loop {
        let Some(at) = memchr::memchr2(quote, b'\\', rest.as_bytes()) else {
            return fail(rest);
        };
        // `at` is an ASCII byte, so both slices fall on character boundaries.
        let (plain, tail) = rest.split_at(at);
        out.push_str(plain);
        let mut chars = tail.chars();
        if chars.next() != Some('\\') {
            return Ok((chars.as_str(), out));
        }
        rest = escape(chars.as_str(), &mut out);
    }
}

/// Resolves the escape after a backslash into `out`; returns the text after it.
fn escape<'a>(after: &'a str, out: &mut String) -> &'a str {
    let mut chars = after.chars();
    let Some(c) = chars.next() else {
        out.push('\\');
        return after;
    };
    let resolved = match c {
        '"' | '\'' | '\\' | '/' => c,
        'b' => '\u{8}',
        'f' => '\u{c}',
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        'u' => {
            if let Some((ch, rest)) = unicode_escape(chars.as_str()) {
                out.push(ch);
                return rest;
            }
            // Malformed or lone surrogate: kept as written.
            out.push_str("\\u");
            return chars.as_str();
        }
        _ => {
            out.push('\\');
            out.push(c);
            return chars.as_str();
        }
    };
    out.push(resolved);
    chars.as_str()
}

/// `XXXX` after `\u`, joined with a following `\uXXXX` low surrogate when it is a high one.
fn unicode_escape(s: &str) -> Option<(char, &str)> {
    let hi = hex4(s)?;
    let rest = s.get(4..)?;
    match hi {
        0xD800..=0xDBFF => {
            let lo_text = rest.strip_prefix("\\u")?;
            let lo = hex4(lo_text)?;
            if !(0xDC00..=0xDFFF).contains(&lo) {
                return None;
            }
            let c = char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))?;
            Some((c, lo_text.get(4..)?))
        }
        0xDC00..=0xDFFF => None,
        _ => Some((char::from_u32(hi)?, rest)),
    }
}

fn hex4(s: &str) -> Option<u32> {
    let digits = s.get(..4)?;
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> ParsedCall {
        match parse_call(text, 64) {
            Ok(p) => p,
            Err(at) => panic!("{text:?} failed at {at}"),
        }
    }

    #[test]
    fn values() {
        let p = parse(r#"@a.b(1, 'x\'y', "C:\Users", [1, {k: v}], unit: c, n=-2e3)"#);
        assert_eq!(p.name, "a.b");
        assert_eq!(
            p.positional,
            vec![
                Value::Number("1".into()),
                Value::String("x'y".into()),
                Value::String("C:\\Users".into()),
                Value::Array(vec![
                    Value::Number("1".into()),
                    Value::Object(vec![("k".into(), Value::Bare("v".into()))]),
                ]),
            ]
        );
        assert_eq!(p.named[0], ("unit".into(), Value::Bare("c".into())));
        assert_eq!(p.named[1], ("n".into(), Value::Number("-2e3".into())));
    }

    #[test]
    fn unicode_escapes() {
        let p = parse(r#"@a("\uD83D\uDE00 \u00e9 \uD83D x \uZZ")"#);
        assert_eq!(
            p.positional,
            vec![Value::String("😀 é \\uD83D x \\uZZ".into())]
        );
    }

    #[test]
    fn numbers() {
        for n in ["1", "-1.5", "2e3", "+7", ".5", "1.", "1E-3"] {
            assert!(is_number(n), "{n}");
        }
        for n in ["", "+", ".", "e3", "1e", "1x", "--1", "1.2.3"] {
            assert!(!is_number(n), "{n}");
        }
    }

    #[test]
    fn names_and_keys_mixing_ascii_and_other_letters() {
        let p = parse("@café_1.naïve2(ключ_2=1, kéy9 : v, x٣=2)");
        assert_eq!(p.name, "café_1.naïve2");
        let keys: Vec<_> = p.named.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["ключ_2", "kéy9", "x٣"]);
        assert!(parse_call("@a.(1)", 64).is_err());
        assert!(parse_call("@a..b(1)", 64).is_err());
    }

    #[test]
    fn positional_after_named_fails() {
        assert!(parse_call("@a(x=1, 2)", 64).is_err());
    }
}
