//! Java and JavaScript argument values as BFCL reads them.
//!
//! BFCL shows every parameter of its `simple_java` and `simple_javascript` functions as a
//! string "in string representation" and reads the string back by the parameter's declared
//! type: `"5L"` as the `long` 5, `"new int[]{1, 2}"` as the list `[1, 2]`, `"{a: 1}"` as a
//! dict. A string that does not have the declared type's shape stays a string, and then
//! fails the type check (or counts as a variable's name where the possible answer is one).
//!
//! The rules here follow BFCL's converters closely, including where they are loose or
//! strict in ways a Java or JavaScript reader would not be, because the score must be the
//! one BFCL gives:
//! - a Java `String` item of an array keeps its quotes (`new String[]{"a"}` reads as
//!   `["\"a\""]`), while an `ArrayList<String>` item loses its first and last character;
//! - a Java `char` is never converted (its quotes stay);
//! - collections are split at every comma, even one inside a quoted string;
//! - a JavaScript object reads only up to its first `}`.
//!
//! Digits are ASCII digits (`\d` in BFCL's patterns also matches other scripts' digits).

use serde_json::{Map, Number, Value as Json};

/// The language a BFCL category's functions are written in: BFCL's own test on the
/// category's name (`javascript` in it, else `java` in it, else Python).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Language {
    Python,
    Java,
    JavaScript,
}

impl Language {
    pub(crate) fn of(category: &str) -> Language {
        if category.contains("javascript") {
            Language::JavaScript
        } else if category.contains("java") {
            Language::Java
        } else {
            Language::Python
        }
    }
}

/// A value that does not convert: its type is not one BFCL converts (BFCL stops with an
/// error there; the case counts as wrong here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unsupported;

/// Reads `text` as BFCL reads a Java argument of type `ty` (with `nested` the item type of
/// an `Array` or `ArrayList`).
pub(crate) fn java(text: &str, ty: &str, nested: Option<&str>) -> Result<Json, Unsupported> {
    let string = || Json::String(text.to_owned());
    Ok(match ty {
        "byte" | "short" | "integer" => match dollar(text) {
            t if is_int(t) => int(t).unwrap_or_else(string),
            _ => string(),
        },
        "float" => match dollar(text).strip_suffix(['f', 'F']) {
            Some(t) if decimal_len(t, true) == Some(t.len()) => float(t).unwrap_or_else(string),
            _ => string(),
        },
        "double" => match dollar(text) {
            t if decimal_len(t, true) == Some(t.len()) => float(t).unwrap_or_else(string),
            _ => string(),
        },
        "long" => match dollar(text).strip_suffix(['l', 'L']) {
            Some(t) if is_int(t) => int(t).unwrap_or_else(string),
            _ => string(),
        },
        "boolean" => match text {
            "true" => Json::Bool(true),
            "false" => Json::Bool(false),
            _ => string(),
        },
        // BFCL's pattern for a char literal cannot match, so a char stays as written.
        "char" | "String" | "any" => string(),
        "ArrayList" => java_arraylist(text, nested)?,
        "Array" => java_array(text, nested)?,
        "HashMap" => java_hashmap(text),
        _ => return Err(Unsupported),
    })
}

/// Reads `text` as BFCL reads a JavaScript argument of type `ty` (with `nested` the item
/// type of an `array`).
pub(crate) fn javascript(text: &str, ty: &str, nested: Option<&str>) -> Result<Json, Unsupported> {
    let string = || Json::String(text.to_owned());
    Ok(match ty {
        "String" => match unquote(text) {
            Some(inner) => Json::String(inner.to_owned()),
            None => string(),
        },
        "integer" => match dollar(text) {
            t if is_int(t) => int(t).unwrap_or_else(string),
            _ => string(),
        },
        "float" => match dollar(text) {
            t if decimal_len(t, false) == Some(t.len()) => float(t).unwrap_or_else(string),
            _ => string(),
        },
        "Bigint" => match dollar(text).strip_suffix('n') {
            Some(t) if is_int(t) => int(t).unwrap_or_else(string),
            _ => string(),
        },
        "Boolean" => match text {
            "true" => Json::Bool(true),
            "false" => Json::Bool(false),
            _ => string(),
        },
        "dict" => js_dict(text),
        "array" => js_array(text, nested),
        "any" => string(),
        _ => return Err(Unsupported),
    })
}

// ---------------------------------------------------------------------------------------
// Scalars

/// A pattern's `$` also matches before one final newline.
fn dollar(text: &str) -> &str {
    text.strip_suffix('\n').unwrap_or(text)
}

fn ascii_digits(text: &str) -> usize {
    text.bytes().take_while(u8::is_ascii_digit).count()
}

/// `-?\d+`, the whole text.
fn is_int(text: &str) -> bool {
    let body = text.strip_prefix('-').unwrap_or(text);
    !body.is_empty() && ascii_digits(body) == body.len()
}

/// How much of `text` `-?\d+(\.\d+)?` (with `([eE][+-]?\d+)?` after it when `exponent`)
/// matches from its start, or `None`.
fn decimal_len(text: &str, exponent: bool) -> Option<usize> {
    let sign = usize::from(text.starts_with('-'));
    let whole = ascii_digits(&text[sign..]);
    if whole == 0 {
        return None;
    }
    let mut end = sign + whole;
    if let Some(rest) = text[end..].strip_prefix('.') {
        let frac = ascii_digits(rest);
        if frac > 0 {
            end += 1 + frac;
        }
    }
    if exponent {
        if let Some(rest) = text[end..].strip_prefix(['e', 'E']) {
            let sign = usize::from(rest.starts_with(['+', '-']));
            let digits = ascii_digits(&rest[sign..]);
            if digits > 0 {
                end += 1 + sign + digits;
            }
        }
    }
    Some(end)
}

/// Python's `int(text)`: surrounding whitespace, a sign, digits with single underscores
/// between them. `None` where Python would raise (or the number does not fit 64 bits).
fn int(text: &str) -> Option<Json> {
    let t = text.trim();
    let (negative, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if body.is_empty()
        || body.starts_with('_')
        || body.ends_with('_')
        || body.contains("__")
        || !body.bytes().all(|b| b.is_ascii_digit() || b == b'_')
    {
        return None;
    }
    let digits: String = body.chars().filter(|c| *c != '_').collect();
    if negative {
        format!("-{digits}").parse::<i64>().ok().map(Json::from)
    } else {
        digits.parse::<u64>().ok().map(Json::from)
    }
}

/// Python's `float(text)`, as a JSON number (`None` where Python would raise, or for an
/// infinity or NaN, which JSON cannot hold).
fn float(text: &str) -> Option<Json> {
    let t = text.trim();
    let t = if t.contains('_') {
        // Underscores only between digits, as Python allows them.
        let bytes = t.as_bytes();
        let ok = bytes.iter().enumerate().all(|(i, b)| {
            *b != b'_'
                || (i > 0
                    && bytes[i - 1].is_ascii_digit()
                    && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        });
        if !ok {
            return None;
        }
        t.replace('_', "")
    } else {
        t.to_owned()
    };
    let value: f64 = t.parse().ok()?;
    Number::from_f64(value).map(Json::Number)
}

/// Python's `int(text)`, else `float(text)`, else the text.
fn number_or_text(text: &str) -> Json {
    int(text)
        .or_else(|| float(text))
        .unwrap_or_else(|| Json::String(text.to_owned()))
}

/// Python's `text[1:-1]`.
fn inner(text: &str) -> &str {
    let mut chars = text.chars();
    chars.next();
    chars.next_back();
    chars.as_str()
}

/// The text between a pair of `"` or of `'` around it (a lone quote is a pair, as in
/// BFCL's check), or `None`.
fn unquote(text: &str) -> Option<&str> {
    let quoted = |q: char| text.starts_with(q) && text.ends_with(q);
    (quoted('"') || quoted('\'')).then(|| inner(text))
}

/// Python's `str.strip(chars)`.
fn strip_chars<'a>(text: &'a str, chars: &[char]) -> &'a str {
    text.trim_matches(|c| chars.contains(&c))
}

// ---------------------------------------------------------------------------------------
// Java collections

/// A Java value read without its type: `true`/`false`, a `"…"` string, a `long` or
/// `float` literal, else a number or the text.
fn java_value(text: &str) -> Json {
    match text {
        "true" => return Json::Bool(true),
        "false" => return Json::Bool(false),
        _ => {}
    }
    if text.starts_with('"') && text.ends_with('"') {
        return Json::String(inner(text).to_owned());
    }
    let t = dollar(text);
    if let Some(body) = t.strip_suffix(['l', 'L']) {
        if is_int(body) {
            if let Some(n) = int(body) {
                return n;
            }
        }
    }
    if let Some(body) = t.strip_suffix(['f', 'F']) {
        if decimal_len(body, true) == Some(body.len()) {
            if let Some(n) = float(body) {
                return n;
            }
        }
    }
    number_or_text(text)
}

/// A collection item of type `nested` (or untyped).
fn java_item(text: &str, nested: Option<&str>) -> Result<Json, Unsupported> {
    match nested {
        Some(ty) => java(text, ty, None),
        None => Ok(java_value(text)),
    }
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Where `new\s+<word>` ends when it starts at `at`.
fn after_new(s: &str, at: usize, word: &str) -> Option<usize> {
    let rest = s[at..].strip_prefix("new")?;
    let spaces = rest.len() - rest.trim_start().len();
    if spaces == 0 {
        return None;
    }
    let end = at + 3 + spaces;
    s[end..].starts_with(word).then_some(end + word.len())
}

/// Where `<\w*>` ends when it starts at `at`.
fn after_word_generic(s: &str, at: usize) -> Option<usize> {
    let rest = s[at..].strip_prefix('<')?;
    let word: usize = rest
        .chars()
        .take_while(|c| is_word(*c))
        .map(char::len_utf8)
        .sum();
    rest[word..].starts_with('>').then_some(at + 1 + word + 1)
}

fn skip_space(s: &str, at: usize) -> usize {
    at + (s[at..].len() - s[at..].trim_start().len())
}

/// The first `close` at or after `from` with no newline before it (a lazy `.*?` then
/// `close`, without DOTALL).
fn lazy_to(s: &str, from: usize, close: &str) -> Option<usize> {
    let found = s[from..].find(close)? + from;
    (!s[from..found].contains('\n')).then_some(found)
}

/// Each start of `new` in `s`, in order (a regex search tries each in turn).
fn news(s: &str) -> impl Iterator<Item = usize> + '_ {
    s.match_indices("new").map(|(i, _)| i)
}

/// `new ArrayList<>(Arrays.asList(a, b))`, `new ArrayList<>() {{ add(a); add(b); }}` or
/// `new ArrayList<>()`, found anywhere in the text; else the text.
fn java_arraylist(s: &str, nested: Option<&str>) -> Result<Json, Unsupported> {
    let item = |text: &str| -> Result<Json, Unsupported> {
        let text = text.trim();
        match nested {
            Some("char" | "String") => Ok(Json::String(inner(text).to_owned())),
            _ => java_item(text, nested),
        }
    };
    // `new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)`
    for at in news(s) {
        let Some(end) = after_new(s, at, "ArrayList").and_then(|e| after_word_generic(s, e)) else {
            continue;
        };
        let Some(body) = s[end..].strip_prefix("(Arrays.asList(").map(|_| end + 15) else {
            continue;
        };
        // `.+?`: at least one character, then the first `))`.
        let Some(first) = s[body..].chars().next().filter(|c| *c != '\n') else {
            continue;
        };
        let Some(close) = lazy_to(s, body + first.len_utf8(), "))") else {
            continue;
        };
        return s[body..close]
            .split(',')
            .map(item)
            .collect::<Result<_, _>>()
            .map(Json::Array);
    }
    // `new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}`, any character in the body.
    for at in news(s) {
        let Some(end) = after_new(s, at, "ArrayList").and_then(|e| after_word_generic(s, e)) else {
            continue;
        };
        let Some(open) = s[end..].strip_prefix("()").map(|_| skip_space(s, end + 2)) else {
            continue;
        };
        if !s[open..].starts_with("{{") {
            continue;
        }
        let Some(body) = arraylist_block(s, open + 2) else {
            continue;
        };
        let mut items = Vec::new();
        // `add\((.+?)\)` over the block, without DOTALL.
        let mut from = 0;
        while let Some(found) = body[from..].find("add(") {
            let start = from + found + 4;
            let arg = body[start..]
                .chars()
                .next()
                .filter(|c| *c != '\n')
                .and_then(|c| lazy_to(body, start + c.len_utf8(), ")"));
            match arg {
                Some(close) => {
                    items.push(item(&body[start..close])?);
                    from = close + 1;
                }
                None => from = from + found + 1,
            }
        }
        return Ok(Json::Array(items));
    }
    // `new\s+ArrayList<\w*>\(\)`
    for at in news(s) {
        if after_new(s, at, "ArrayList")
            .and_then(|e| after_word_generic(s, e))
            .is_some_and(|e| s[e..].starts_with("()"))
        {
            return Ok(Json::Array(Vec::new()));
        }
    }
    Ok(Json::String(s.to_owned()))
}

/// The group of `\s*(.+?)\s*\}\}` from `at` (DOTALL): the shortest non-empty body after
/// the spaces that is followed by spaces and `}}`; fewer leading spaces where that is the
/// only way to a body.
fn arraylist_block(s: &str, at: usize) -> Option<&str> {
    let spaced = skip_space(s, at);
    let try_from = |start: usize| -> Option<&str> {
        let first = s[start..].chars().next()?;
        let mut from = start + first.len_utf8();
        loop {
            let rest = &s[from..];
            if rest.trim_start().starts_with("}}") {
                return Some(&s[start..from]);
            }
            from += rest.chars().next()?.len_utf8();
        }
    };
    // The greedy `\s*` gives back spaces one at a time until the body fits.
    let mut start = spaced;
    loop {
        if let Some(body) = try_from(start) {
            return Some(body);
        }
        if start == at {
            return None;
        }
        start -= s[at..start].chars().next_back().map_or(1, char::len_utf8);
    }
}

/// `new T[]{a, b}` found anywhere in the text; else the text.
fn java_array(s: &str, nested: Option<&str>) -> Result<Json, Unsupported> {
    // `new\s+\w+\[\]\s*\{(.*?)\}`
    for at in news(s) {
        let Some(word) = after_new(s, at, "") else {
            continue;
        };
        let len: usize = s[word..]
            .chars()
            .take_while(|c| is_word(*c))
            .map(char::len_utf8)
            .sum();
        if len == 0 || !s[word + len..].starts_with("[]") {
            continue;
        }
        let open = skip_space(s, word + len + 2);
        if !s[open..].starts_with('{') {
            continue;
        }
        let Some(close) = lazy_to(s, open + 1, "}") else {
            continue;
        };
        return s[open + 1..close]
            .split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(|x| java_item(x, nested))
            .collect::<Result<_, _>>()
            .map(Json::Array);
    }
    Ok(Json::String(s.to_owned()))
}

/// `new HashMap<K, V>() {{ put("k", v); }}` or `new HashMap<>()` found anywhere in the
/// text; else the text. Keys must be `"…"` strings; values are read without a type.
fn java_hashmap(s: &str) -> Json {
    // `new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}`, any character anywhere.
    for at in news(s) {
        let Some(generic) = after_new(s, at, "HashMap<") else {
            continue;
        };
        // The lazy `<.*?>` tries each `>` in turn.
        for (gt, _) in s[generic..].match_indices('>') {
            let after = skip_space(s, generic + gt + 1);
            if !s[after..].starts_with("()") {
                continue;
            }
            let brace = skip_space(s, after + 2);
            if !s[brace..].starts_with('{') {
                continue;
            }
            let mut start = skip_space(s, brace + 1);
            if s[start..].starts_with('{') {
                start = skip_space(s, start + 1);
            }
            // The body ends where only spaces stand before the next `}`.
            let Some(close) = s[start..].find('}').map(|i| start + i) else {
                continue;
            };
            let body = s[start..close].trim_end();
            return Json::Object(java_puts(body));
        }
    }
    for at in news(s) {
        let Some(generic) = after_new(s, at, "HashMap<") else {
            continue;
        };
        // `new\s+HashMap<.*?>\s*\(\)` (the `.*?` without DOTALL).
        let found = s[generic..].match_indices('>').any(|(gt, _)| {
            !s[generic..generic + gt].contains('\n')
                && s[skip_space(s, generic + gt + 1)..].starts_with("()")
        });
        if found {
            return Json::Object(Map::new());
        }
    }
    Json::String(s.to_owned())
}

/// `put\(\"(.*?)\",\s*(.*?)\)` over a map's body, without DOTALL.
fn java_puts(body: &str) -> Map<String, Json> {
    let mut map = Map::new();
    let mut from = 0;
    while let Some(found) = body[from..].find("put(\"") {
        let key_start = from + found + 5;
        let mut matched = None;
        // The lazy key tries each `",` in turn until a value with its `)` follows.
        for (i, _) in body[key_start..].match_indices("\",") {
            let key_end = key_start + i;
            if body[key_start..key_end].contains('\n') {
                break;
            }
            let value_start = skip_space(body, key_end + 2);
            if let Some(close) = lazy_to(body, value_start, ")") {
                matched = Some((key_end, value_start, close));
                break;
            }
        }
        match matched {
            Some((key_end, value_start, close)) => {
                let value = java_value(body[value_start..close].trim());
                map.insert(body[key_start..key_end].to_owned(), value);
                from = close + 1;
            }
            None => from = from + found + 1,
        }
    }
    map
}

// ---------------------------------------------------------------------------------------
// JavaScript collections

/// A JavaScript value read without its type.
fn js_value(text: &str) -> Json {
    let text = text.trim();
    match text {
        "true" => Json::Bool(true),
        "false" => Json::Bool(false),
        _ => match unquote(text) {
            Some(inner) => Json::String(inner.to_owned()),
            None => number_or_text(text),
        },
    }
}

/// An array: `[[a, b], [c]]` (items read without a type), `[a, b]` or `new Array(a, b)`
/// at the start of the text; else the text. An item that does not convert leaves the whole
/// value as text.
fn js_array(code: &str, nested: Option<&str>) -> Json {
    let s = code.trim();
    if let Some(end) = js_array_2d(s) {
        let whole = &s[..end];
        let mut rows = Vec::new();
        // `\[(.*?)\]` over the match, without DOTALL.
        let mut from = 0;
        while let Some(found) = whole[from..].find('[') {
            let open = from + found;
            match lazy_to(whole, open + 1, "]") {
                Some(close) => {
                    let mut row = whole[open + 1..close].trim();
                    if rows.is_empty() {
                        row = row.strip_prefix('[').unwrap_or(row);
                    }
                    rows.push(Json::Array(row.split(',').map(js_value).collect()));
                    from = close + 1;
                }
                None => from = open + 1,
            }
        }
        return Json::Array(rows);
    }
    // `\[(.*?)\]|\bnew\s+Array\((.*?)\)`, matched at the start.
    let items = if s.starts_with('[') {
        lazy_to(s, 1, "]").map(|close| &s[1..close])
    } else {
        None
    };
    let items = items.or_else(|| {
        let open = after_new(s, 0, "Array(")?;
        lazy_to(s, open, ")").map(|close| &s[open..close])
    });
    let Some(items) = items else {
        return Json::String(s.to_owned());
    };
    let items = items.trim();
    if items.is_empty() {
        return Json::Array(Vec::new());
    }
    let read: Result<Vec<Json>, Unsupported> = items
        .split(',')
        .map(|item| match nested {
            Some(ty) => javascript(item.trim(), ty, None),
            None => Ok(js_value(item)),
        })
        .collect();
    // BFCL falls back to the text when an item's type is not one it converts.
    read.map_or_else(|_| Json::String(s.to_owned()), Json::Array)
}

/// Where `\[\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\]` or
/// `\bnew\s+Array\(\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\)` ends when matched at the start.
fn js_array_2d(s: &str) -> Option<usize> {
    // The text starts with `[` or with `n`, so at most one alternative can match.
    if s.starts_with('[') {
        rows_from(s, 1, ']')
    } else {
        rows_from(s, after_new(s, 0, "Array(")?, ')')
    }
}

/// `\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*<close>` from `at`, with backtracking over which `]`
/// ends each row; remembered per position so that it stays quadratic.
fn rows_from(s: &str, at: usize, close: char) -> Option<usize> {
    let mut memo = std::collections::HashMap::new();
    let start = skip_space(s, at);
    if !s[start..].starts_with('[') {
        return None;
    }
    row_ends(s, start + 1)
        .into_iter()
        .find_map(|end| more_rows(s, skip_space(s, end + 1), close, &mut memo))
}

/// The `]` that can end a row whose text starts at `from`, in lazy order.
fn row_ends(s: &str, from: usize) -> Vec<usize> {
    let line = s[from..].find('\n').map_or(s.len(), |n| from + n);
    s[from..line]
        .match_indices(']')
        .map(|(i, _)| from + i)
        .collect()
}

fn more_rows(
    s: &str,
    at: usize,
    close: char,
    memo: &mut std::collections::HashMap<usize, Option<usize>>,
) -> Option<usize> {
    if let Some(known) = memo.get(&at) {
        return *known;
    }
    let mut found = None;
    if s[at..].starts_with(',') {
        let open = skip_space(s, at + 1);
        if s[open..].starts_with('[') {
            found = row_ends(s, open + 1)
                .into_iter()
                .find_map(|end| more_rows(s, skip_space(s, end + 1), close, memo));
        }
    }
    if found.is_none() && s[at..].starts_with(close) {
        found = Some(at + close.len_utf8());
    }
    memo.insert(at, found);
    found
}

/// An object: `{}`, or `{k: v, ...}` up to its first `}` at the start of the text; else
/// the text. Keys lose spaces and quotes; `[…]` and `{…}` values are read as collections,
/// others without their quotes and without a type.
fn js_dict(code: &str) -> Json {
    let s = code.trim();
    if s == "{}" {
        return Json::Object(Map::new());
    }
    let Some(content) = s
        .strip_prefix('{')
        .and_then(|_| lazy_to(s, 1, "}"))
        .map(|close| &s[1..close])
    else {
        return Json::String(s.to_owned());
    };
    let mut map = Map::new();
    for (key, value) in js_pairs(content) {
        let key = strip_chars(key.trim(), &['\'', '"']);
        let value = value.trim();
        let read = if value.starts_with('[') && value.ends_with(']') {
            js_array(value, None)
        } else if value.starts_with('{') && value.ends_with('}') {
            js_dict(value)
        } else {
            js_value(strip_chars(value, &['\'', '"']))
        };
        map.insert(key.to_owned(), read);
    }
    Json::Object(map)
}

/// `([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)` over an object's content (which has no
/// newline): a key up to the next `:`, a value up to the first comma that another key
/// follows, or to the end.
fn js_pairs(content: &str) -> Vec<(&str, &str)> {
    // Whether `[^,]+:` matches at `q`: a `:` after `q` before any comma from `q` on.
    let key_follows = |q: usize| -> bool {
        let rest = &content[q..];
        let Some(first) = rest.chars().next() else {
            return false;
        };
        if first == ',' {
            return false;
        }
        let after = &rest[first.len_utf8()..];
        let colon = after.find(':');
        let comma = after.find(',');
        matches!((colon, comma), (Some(c), Some(m)) if c < m)
            || (colon.is_some() && comma.is_none())
    };
    let mut pairs = Vec::new();
    let mut at = 0;
    while at < content.len() {
        let Some(colon) = content[at..].find(':').map(|i| at + i) else {
            break;
        };
        if colon == at {
            at += 1;
            continue;
        }
        let key = &content[at..colon];
        let value_start = skip_space(content, colon + 1);
        let mut end = None;
        for (i, _) in content[value_start..].match_indices(',') {
            let comma = value_start + i;
            let spaced = skip_space(content, comma + 1);
            // The greedy `\s*` gives spaces back until the look-ahead holds.
            let mut q = spaced;
            let next = loop {
                if key_follows(q) {
                    break Some(q);
                }
                if q == comma + 1 {
                    break None;
                }
                q -= content[comma + 1..q]
                    .chars()
                    .next_back()
                    .map_or(1, char::len_utf8);
            };
            if let Some(next) = next {
                end = Some((comma, next));
                break;
            }
        }
        let (value_end, next) = end.unwrap_or((content.len(), content.len()));
        pairs.push((key, &content[value_start..value_end]));
        at = next;
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::{java, javascript, Language};
    use serde_json::json;

    #[test]
    fn language_from_category() {
        assert_eq!(Language::of("simple_java"), Language::Java);
        assert_eq!(Language::of("simple_javascript"), Language::JavaScript);
        assert_eq!(Language::of("simple_python"), Language::Python);
        assert_eq!(Language::of("live_simple"), Language::Python);
    }

    #[test]
    fn java_scalars() {
        let j = |text: &str, ty: &str| java(text, ty, None).unwrap();
        assert_eq!(j("42", "integer"), json!(42));
        assert_eq!(j("-7", "short"), json!(-7));
        assert_eq!(j("42L", "long"), json!(42));
        assert_eq!(j("42", "long"), json!("42"));
        assert_eq!(j("3.5f", "float"), json!(3.5));
        assert_eq!(j("3e3F", "float"), json!(3000.0));
        assert_eq!(j("3.5", "float"), json!("3.5"));
        assert_eq!(j("0.5", "double"), json!(0.5));
        assert_eq!(j("1.5e-2", "double"), json!(0.015));
        assert_eq!(j("true", "boolean"), json!(true));
        assert_eq!(j("True", "boolean"), json!("True"));
        assert_eq!(j("'a'", "char"), json!("'a'"));
        assert_eq!(j("123", "any"), json!("123"));
        assert_eq!(j("12\n", "integer"), json!(12));
        assert!(java("x", "Set", None).is_err());
    }

    #[test]
    fn java_collections() {
        let j = |text: &str, ty: &str, nested: Option<&str>| java(text, ty, nested).unwrap();
        assert_eq!(
            j("new int[]{1, 2, 3}", "Array", Some("integer")),
            json!([1, 2, 3])
        );
        assert_eq!(j("new int[] { }", "Array", Some("integer")), json!([]));
        // A String item of an array keeps its quotes, as in BFCL.
        assert_eq!(
            j(r#"new String[]{"a", "b"}"#, "Array", Some("String")),
            json!([r#""a""#, r#""b""#])
        );
        assert_eq!(
            j("new long[]{1L, 2, 3L}", "Array", Some("long")),
            json!([1, "2", 3])
        );
        assert_eq!(
            j(
                r#"new ArrayList<>(Arrays.asList("a", "b"))"#,
                "ArrayList",
                Some("String")
            ),
            json!(["a", "b"])
        );
        assert_eq!(
            j(
                "new ArrayList<Long>(Arrays.asList(101L, 202L))",
                "ArrayList",
                Some("long")
            ),
            json!([101, 202])
        );
        assert_eq!(
            j(
                "new ArrayList<Character>() {{ add('a'); add('b'); }}",
                "ArrayList",
                Some("char")
            ),
            json!(["a", "b"])
        );
        assert_eq!(
            j("new ArrayList<>()", "ArrayList", Some("integer")),
            json!([])
        );
        assert_eq!(j("[1, 2]", "ArrayList", Some("integer")), json!("[1, 2]"));
        assert_eq!(
            j(
                r#"new HashMap<String, Object>() {{ put("a", 1); put("b", "x"); put("c", true); }}"#,
                "HashMap",
                None
            ),
            json!({"a": 1, "b": "x", "c": true})
        );
        assert_eq!(
            j(
                r#"new HashMap<String, List<String>>() { { put("k", 5L); } }"#,
                "HashMap",
                None
            ),
            json!({"k": 5})
        );
        assert_eq!(j("new HashMap<>() {{}}", "HashMap", None), json!({}));
        assert_eq!(j("new HashMap<>()", "HashMap", None), json!({}));
        assert_eq!(j("userProfile", "HashMap", None), json!("userProfile"));
    }

    #[test]
    fn javascript_values() {
        let j = |text: &str, ty: &str, nested: Option<&str>| javascript(text, ty, nested).unwrap();
        assert_eq!(j("'abc'", "String", None), json!("abc"));
        assert_eq!(j("abc", "String", None), json!("abc"));
        assert_eq!(j("60", "float", None), json!(60.0));
        assert_eq!(j("1e3", "float", None), json!("1e3"));
        assert_eq!(j("123n", "Bigint", None), json!(123));
        assert_eq!(j("false", "Boolean", None), json!(false));
        assert_eq!(
            j("[1, 'two', true]", "array", None),
            json!([1, "two", true])
        );
        assert_eq!(
            j("new Array(4, 5)", "array", Some("integer")),
            json!([4, 5])
        );
        assert_eq!(
            j(r#"["a", "b"]"#, "array", Some("String")),
            json!(["a", "b"])
        );
        assert_eq!(j("[60, 30]", "array", Some("float")), json!([60.0, 30.0]));
        assert_eq!(
            j(" [ [ 1, 2 ], [ 3,   4], [5, 6]]", "array", Some("array")),
            json!([[1, 2], [3, 4], [5, 6]])
        );
        assert_eq!(
            j("new Array([1, 2], [3, 4])", "array", None),
            json!([[1, 2], [3, 4]])
        );
        assert_eq!(j("[]", "array", None), json!([]));
        // An item type BFCL does not convert leaves the text.
        assert_eq!(j("[1, 2]", "array", Some("object")), json!("[1, 2]"));
        assert_eq!(j("{}", "dict", None), json!({}));
        assert_eq!(
            j(
                "{'key1': 123, 'key2': 'value', 'key3': false}",
                "dict",
                None
            ),
            json!({"key1": 123, "key2": "value", "key3": false})
        );
        assert_eq!(
            j(
                r#"{"initialState": initialStateObject, "reducers": reducersMap, "middlewares": ["loggerMiddleware"], "enhancers": ["applyMiddleware", "myMiddleWare"]}"#,
                "dict",
                None
            ),
            json!({"initialState": "initialStateObject", "reducers": "reducersMap",
                   "middlewares": ["loggerMiddleware"], "enhancers": ["applyMiddleware", "myMiddleWare"]})
        );
        assert_eq!(
            j("{a: 'x, y', b: 2}", "dict", None),
            json!({"a": "x, y", "b": 2})
        );
        assert_eq!(j("responseData", "dict", None), json!("responseData"));
    }
}
