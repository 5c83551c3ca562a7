//! `qwen3_xml`: Qwen3-Coder.
//!
//! Qwen3-Coder's chat template (`chat_template.jinja` of Qwen/Qwen3-Coder-30B-A3B-Instruct;
//! vLLM's `qwen3_coder` and SGLang's `qwen3_coder` parsers read the same) asks for
//!
//! ```text
//! <tool_call>
//! <function=NAME>
//! <parameter=KEY>
//! VALUE
//! </parameter>
//! </function>
//! </tool_call>
//! ```
//!
//! Values are raw text up to `</parameter>` (one line break after the opening tag and one
//! before the closing tag are the template's, not the value's). They are
//! [`Value::Bare`]: binding types them by the interface, as it types any bare word.

use super::block::{opened, BlockScan, Opens};
use super::scan::{BuildError, Built, Found, Input, Match, Step, MAX_NAME};
use super::Dialect;
use crate::parse::Value;

use super::hermes::{CLOSE, OPEN};
const FUNCTION: &[u8] = b"<function=";
const FUNCTION_END: &[u8] = b"</function>";
const PARAMETER: &[u8] = b"<parameter=";
const PARAMETER_END: &[u8] = b"</parameter>";

pub(super) fn opens(input: &Input<'_>, i: u64) -> Opens {
    match input.marker(i, OPEN) {
        Match::Yes(end) => opened(Qwen3Xml::default(), end),
        Match::Need => Opens::Need,
        Match::No => Opens::No,
    }
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Phase {
    #[default]
    Function,
    /// The function's name, up to `>`.
    Name,
    /// Between parameters: `<parameter=` or `</function>`.
    Params,
    /// A parameter's name, up to `>`.
    Key,
    /// A parameter's value, up to `</parameter>`.
    Value,
    /// `</tool_call>`.
    Close,
}

#[derive(Debug, Default)]
struct Qwen3Xml {
    phase: Phase,
    from: u64,
    name: (u64, u64),
    key: (u64, u64),
    params: Vec<((u64, u64), (u64, u64))>,
}

/// Expects `marker` after blanks at `*pos`: on `Yes` moves past it.
fn expect(input: &Input<'_>, pos: &mut u64, marker: &[u8]) -> Result<bool, Step> {
    let p = input.skip_ws(*pos);
    *pos = p;
    match input.closing(p, marker) {
        Match::Yes(end) => {
            *pos = end;
            Ok(true)
        }
        Match::Need => Err(Step::Need),
        Match::No if p == input.end() => Err(Step::Need),
        Match::No => Ok(false),
    }
}

impl Qwen3Xml {
    /// A name up to `>`, from `self.from`.
    fn name_end(&self, input: &Input<'_>, pos: &mut u64) -> Result<u64, Step> {
        match memchr::memchr(b'>', input.rest(*pos)) {
            Some(k) if *pos + (k as u64) - self.from <= MAX_NAME => {
                let at = *pos + k as u64;
                *pos = at + 1;
                Ok(at)
            }
            None if input.end() - self.from <= MAX_NAME => {
                *pos = input.end();
                Err(Step::Need)
            }
            _ => Err(input.expected(self.from + MAX_NAME, "`>` after a name")),
        }
    }
}

impl BlockScan for Qwen3Xml {
    fn scan(&mut self, input: &Input<'_>, pos: &mut u64, _max_depth: usize) -> Step {
        loop {
            let step = match self.phase {
                Phase::Function => match expect(input, pos, FUNCTION) {
                    Ok(true) => {
                        self.from = *pos;
                        self.phase = Phase::Name;
                        continue;
                    }
                    Ok(false) => return input.expected(*pos, "`<function=`"),
                    Err(step) => step,
                },
                Phase::Name => match self.name_end(input, pos) {
                    Ok(at) => {
                        self.name = (self.from, at);
                        self.phase = Phase::Params;
                        continue;
                    }
                    Err(step) => step,
                },
                Phase::Params => match expect(input, pos, PARAMETER) {
                    Ok(true) => {
                        self.from = *pos;
                        self.phase = Phase::Key;
                        continue;
                    }
                    Ok(false) => match expect(input, pos, FUNCTION_END) {
                        Ok(true) => {
                            self.phase = Phase::Close;
                            continue;
                        }
                        Ok(false) => return input.expected(*pos, "`<parameter=` or `</function>`"),
                        Err(step) => step,
                    },
                    Err(step) => step,
                },
                Phase::Key => match self.name_end(input, pos) {
                    Ok(at) => {
                        self.key = (self.from, at);
                        self.from = *pos;
                        self.phase = Phase::Value;
                        continue;
                    }
                    Err(step) => step,
                },
                Phase::Value => match input.find(*pos, PARAMETER_END) {
                    Found::At(at) => {
                        self.params.push((self.key, (self.from, at)));
                        *pos = at + PARAMETER_END.len() as u64;
                        self.phase = Phase::Params;
                        continue;
                    }
                    Found::Before(safe) => {
                        *pos = safe;
                        Step::Need
                    }
                },
                Phase::Close => match expect(input, pos, CLOSE) {
                    Ok(true) => Step::Done(*pos),
                    Ok(false) => input.expected(*pos, "`</tool_call>`"),
                    Err(step) => step,
                },
            };
            return step;
        }
    }

    fn build(&self, input: &Input<'_>, _start: u64, end: u64) -> Result<Vec<Built>, BuildError> {
        let text = |(a, b): (u64, u64)| String::from_utf8_lossy(input.slice(a, b)).into_owned();
        let named = self
            .params
            .iter()
            .map(|&(key, value)| {
                let raw = text(value);
                let raw = raw.strip_prefix('\n').unwrap_or(&raw);
                let raw = raw.strip_suffix('\n').unwrap_or(raw);
                (text(key).trim().to_owned(), Value::Bare(raw.to_owned()))
            })
            .collect();
        Ok(vec![Built {
            name: text(self.name).trim().to_owned(),
            positional: Vec::new(),
            named,
            end,
        }])
    }

    fn dialect(&self) -> Dialect {
        Dialect::Qwen3Xml
    }

    fn awaits(&self) -> &'static str {
        "`<tool_call>` block (no `</tool_call>`)"
    }
}

#[cfg(test)]
mod tests {
    use super::super::read_at_every_chunking;
    use super::*;

    #[test]
    fn raw_values() {
        let text = "<tool_call>\n<function=get_weather>\n<parameter=city>\nSan Francisco, <CA>\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";
        let (_, calls) = read_at_every_chunking(Dialect::Qwen3Xml, text);
        assert_eq!(calls[0].name, "get_weather");
        assert_eq!(
            calls[0].named[0].1,
            Value::Bare("San Francisco, <CA>".into())
        );
        assert_eq!(calls[0].named[1].1, Value::Bare("3".into()));
    }
}
