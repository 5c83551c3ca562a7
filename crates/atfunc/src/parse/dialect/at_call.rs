//! atfunc's own `@name(args)` as one of the formats [`Dialect::Auto`] reads. The name and
//! the arguments are scanned and read by the same scanner and grammar as the atfunc
//! parser's, so `auto` reads a call exactly as `--dialect atfunc` does; `auto.rs` decides
//! where one may open (not right after a word character: `bob@example.com(` is prose).
//!
//! `with_body` blocks are not read here: under `auto` the call ends at its `)`.

use super::block::{opened, BlockScan, Opens};
use super::scan::{BuildError, Built, Input, Step, MAX_NAME};
use super::Dialect;
use crate::parse::scan::{self as args, ArgScan, Unit};
use crate::parse::syntax;
use crate::parse::{FunctionNames, ParseErrorKind};

/// An atfunc call opens at `i` when `@`, a dotted name and `(` stand there, and, with the
/// offered tools known, the name is one of them (else the `@` is prose, like a mention).
pub(super) fn opens(input: &Input<'_>, i: u64, offered: Option<&FunctionNames>) -> Opens {
    if input.byte(i) != Some(b'@') {
        return Opens::No;
    }
    let data = input.rest(i + 1);
    let mut k = 0;
    let mut dot_last = true;
    loop {
        // The cap does not depend on how the input was cut: a longer name is text.
        if k as u64 > MAX_NAME {
            return Opens::No;
        }
        match args::unit(data, k, input.eof) {
            Unit::Need => return Opens::Need,
            Unit::Char('(', _) if !dot_last => break,
            Unit::Char('.', _) if !dot_last => {
                dot_last = true;
                k += 1;
            }
            Unit::Char(c, n) if syntax::is_ident_char(c) => {
                dot_last = false;
                k += n;
            }
            _ => return Opens::No,
        }
    }
    let name = String::from_utf8_lossy(data.get(..k).unwrap_or_default());
    if offered.is_some_and(|names| !names.contains(&name)) {
        return Opens::No;
    }
    let args = ArgScan::new();
    opened(AtCall { args }, i + 1 + k as u64 + 1)
}

/// The scanner of one atfunc call, after its `(`.
#[derive(Debug)]
struct AtCall {
    args: ArgScan,
}

impl BlockScan for AtCall {
    fn scan(&mut self, input: &Input<'_>, pos: &mut u64, max_depth: usize) -> Step {
        loop {
            let data = input.rest(*pos);
            if data.is_empty() {
                // The reader reports a call the stream ends inside as unterminated.
                return Step::Need;
            }
            let (c, len) = match args::unit(data, 0, input.eof) {
                Unit::Need => return Step::Need,
                Unit::Bad => {
                    let found = format!("byte 0x{:02X}", data.first().copied().unwrap_or(0));
                    let expected = "valid UTF-8".to_owned();
                    return Step::Fail(ParseErrorKind::Unexpected { expected, found }, *pos);
                }
                Unit::Char(c, len) => (c, len as u64),
            };
            // The reader counts the arguments of the call it builds against `max_args`.
            match self.args.step(c, *pos, max_depth, usize::MAX) {
                Ok(args::Step::Next) => *pos += len,
                Ok(args::Step::Again) => {}
                Ok(args::Step::Done) => {
                    *pos += len;
                    return Step::Done(*pos);
                }
                Err((kind, at)) => return Step::Fail(kind, at),
            }
        }
    }

    fn build(&self, input: &Input<'_>, start: u64, end: u64) -> Result<Vec<Built>, BuildError> {
        let text = std::str::from_utf8(input.slice(start, end))
            .map_err(|_| ("valid UTF-8".to_owned(), "invalid bytes".to_owned()))?;
        // The scanner accepts exactly the grammar's language, so this fails only on a bug.
        let call = syntax::parse_call(text, usize::MAX).map_err(|at| {
            (
                "a call".to_owned(),
                format!("text the grammar does not accept at byte {at}"),
            )
        })?;
        Ok(vec![Built {
            name: call.name,
            positional: call.positional,
            named: call.named,
            end,
        }])
    }

    fn dialect(&self) -> Dialect {
        Dialect::Atfunc
    }

    fn awaits(&self) -> &'static str {
        "`)`"
    }
}
