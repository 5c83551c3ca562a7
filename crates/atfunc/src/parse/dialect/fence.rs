//! A Markdown code fence around an untagged JSON call.
//!
//! Qwen2.5-Coder under its own template writes its call as a bare JSON object inside a
//! ```` ```json ```` fence. Once the call is read, the fence lines left in the text would be
//! an empty fence in the answer's content, so they go with the call:
//!
//! - The opener is a line of three backticks, an optional info string `json` (any case)
//!   and blanks, at the start of the answer or of a line (blanks before it). The next line
//!   must open an untagged call (the dialect's rule: a `{"name": …` naming an offered tool,
//!   or a list `[{"name": …` of such calls).
//! - The closer is a line break, blanks and three backticks right after the call object.
//!   When only blanks follow it on its line, its line break goes too; any other text after
//!   it stays text.
//! - Anything else after the call object (more JSON, prose, a blank line, a fourth
//!   backtick) leaves the fence as it was: the opener and whatever follows the call are
//!   text, and the call is read as it would be without the fence. A call that breaks
//!   leaves the opener as text too; the malformed span is the object's.
//!
//! The opener is held only while it can still be one: its blanks are bounded, so at most a
//! few dozen bytes wait before the call object's own look-ahead (which an unfenced
//! untagged call has too).
//!
//! A block that opens here is the fence and the call together, so the call's span covers
//! the fence when the fence goes with it, and the call limit counts the fence too.

use super::block::{opened, BlockScan, Opens};
use super::scan::{BuildError, Built, Input, Match, Step};
use super::Dialect;

/// The position of a `Match::Yes`; a `No` or `More` ends the calling function with it.
macro_rules! yes {
    ($step:expr) => {
        match $step {
            Match::Yes(p) => p,
            other => return other,
        }
    };
}

const FENCE: &[u8] = b"```";

/// The info string read on an opener, in any case.
const INFO: &[u8] = b"json";

/// Most blanks looked through in one place of a fence line (an indent, the blanks after
/// the info string or after the closer): enough for any Markdown, and what bounds the hold.
const MAX_FENCE_BLANKS: u64 = 16;

/// Whether a fence opener at `i` opens a block: its line (nothing but blanks before it on
/// its line, `line_text` false), then `call` opening an untagged call on the next line.
pub(super) fn opens(
    input: &Input<'_>,
    i: u64,
    line_text: bool,
    call: impl Fn(&Input<'_>, u64) -> Opens,
) -> Opens {
    if line_text {
        return Opens::No;
    }
    let brace = match opener(input, i) {
        Match::Yes(brace) => brace,
        Match::No => return Opens::No,
        Match::Need => return Opens::Need,
    };
    match call(input, brace) {
        Opens::Yes { block, from } => opened(
            Fenced {
                inner: block,
                call_start: brace,
                value_end: None,
            },
            from,
        ),
        other => other,
    }
}

/// ```` ```json ```` (or ```` ``` ````), blanks, a line break and the next line's indent at
/// `i`: the offset of the `{` (or a list's `[`) after them.
fn opener(input: &Input<'_>, i: u64) -> Match {
    let p = yes!(input.marker(i, FENCE));
    let p = yes!(info(input, p));
    let p = yes!(blanks(input, p));
    let p = yes!(line_break(input, p));
    let p = yes!(blanks(input, p));
    match input.byte(p) {
        Some(b'{' | b'[') => Match::Yes(p),
        Some(_) => Match::No,
        None if input.eof => Match::No,
        None => Match::Need,
    }
}

/// After the backticks at `p`: past `json` in any case, or `p` itself when no `json` stands
/// there (whatever does is then checked as the end of the line).
fn info(input: &Input<'_>, p: u64) -> Match {
    let rest = input.rest(p);
    let n = rest.len().min(INFO.len());
    let prefix = rest.get(..n).unwrap_or_default();
    let same = prefix.eq_ignore_ascii_case(INFO.get(..n).unwrap_or_default());
    match (same, n == INFO.len()) {
        (true, true) => Match::Yes(p + INFO.len() as u64),
        (true, false) if !input.eof => Match::Need,
        _ => Match::Yes(p),
    }
}

/// Past the spaces and tabs at `p`; `No` past [`MAX_FENCE_BLANKS`] of them, whatever
/// follows, so that the answer does not depend on where the input was cut.
fn blanks(input: &Input<'_>, p: u64) -> Match {
    let n = input
        .rest(p)
        .iter()
        .take(MAX_FENCE_BLANKS as usize + 1)
        .take_while(|b| matches!(b, b' ' | b'\t'))
        .count() as u64;
    if n > MAX_FENCE_BLANKS {
        Match::No
    } else if input.byte(p + n).is_none() && !input.eof {
        Match::Need
    } else {
        Match::Yes(p + n)
    }
}

/// Past a `\n` or `\r\n` at `p`.
fn line_break(input: &Input<'_>, p: u64) -> Match {
    match input.byte(p) {
        Some(b'\n') => Match::Yes(p + 1),
        Some(b'\r') => match input.byte(p + 1) {
            Some(b'\n') => Match::Yes(p + 2),
            None if !input.eof => Match::Need,
            _ => Match::No,
        },
        None if !input.eof => Match::Need,
        _ => Match::No,
    }
}

/// The closer right after the call object ending at `p`: where the block ends with it.
fn closer(input: &Input<'_>, p: u64) -> Match {
    let p = yes!(blanks(input, p));
    let p = yes!(line_break(input, p));
    let p = yes!(blanks(input, p));
    let fence_end = yes!(input.marker(p, FENCE));
    match input.byte(fence_end) {
        // A longer run of backticks closes no three-backtick fence the way a model means.
        Some(b'`') => return Match::No,
        None if !input.eof => return Match::Need,
        None => return Match::Yes(fence_end),
        Some(_) => {}
    }
    // Only blanks to the end of the line: the line goes whole. Text after the closer stays.
    let after = match blanks(input, fence_end) {
        Match::Yes(after) => after,
        Match::Need => return Match::Need,
        Match::No => return Match::Yes(fence_end),
    };
    match line_break(input, after) {
        Match::Yes(end) => Match::Yes(end),
        Match::Need => Match::Need,
        Match::No if input.byte(after).is_none() => Match::Yes(after),
        Match::No => Match::Yes(fence_end),
    }
}

/// A fence opener, the untagged call after it, and (if it follows) the closer.
#[derive(Debug)]
struct Fenced {
    /// The untagged call's scanner, from its `{` on.
    inner: Box<dyn BlockScan>,
    /// Where the call object starts: the end of the opener line and its indent.
    call_start: u64,
    /// The call object's end, once read; then the scanner looks for the closer. The block
    /// ends past it only with the closer.
    value_end: Option<u64>,
}

impl BlockScan for Fenced {
    fn scan(&mut self, input: &Input<'_>, pos: &mut u64, max_depth: usize) -> Step {
        let value_end = match self.value_end {
            Some(end) => end,
            None => match self.inner.scan(input, pos, max_depth) {
                Step::Done(end) => {
                    self.value_end = Some(end);
                    end
                }
                other => return other,
            },
        };
        // `*pos` stays at the object's end until the closer is decided: the bytes looked
        // at again per chunk are a few bounded blanks and the backticks.
        *pos = value_end;
        match closer(input, value_end) {
            Match::Yes(end) => {
                *pos = end;
                Step::Done(end)
            }
            Match::No => Step::Done(value_end),
            Match::Need => Step::Need,
        }
    }

    fn build(&self, input: &Input<'_>, _start: u64, end: u64) -> Result<Vec<Built>, BuildError> {
        let value_end = self.value_end.unwrap_or(end);
        self.inner.build(input, self.call_start, value_end)
    }

    fn dialect(&self) -> Dialect {
        self.inner.dialect()
    }

    fn awaits(&self) -> &'static str {
        self.inner.awaits()
    }

    fn lead(&self) -> Option<u64> {
        Some(self.call_start)
    }

    fn call_end(&self) -> Option<u64> {
        self.value_end
    }

    fn chained(&mut self) -> Option<(Box<dyn BlockScan>, u64)> {
        self.inner.chained()
    }

    fn untagged(&self) -> bool {
        self.inner.untagged()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(data: &[u8], eof: bool) -> Input<'_> {
        Input { data, base: 0, eof }
    }

    /// Every prefix of a fence line waits for more bytes; the end of the stream decides.
    #[test]
    fn every_prefix_of_a_fence_line_waits() {
        let opening = b"```JsOn \t\r\n  {";
        for n in 0..opening.len() {
            let prefix = opening.get(..n).unwrap_or_default();
            assert_eq!(opener(&held(prefix, false), 0), Match::Need, "{n}");
            assert_eq!(opener(&held(prefix, true), 0), Match::No, "{n}");
        }
        assert_eq!(opener(&held(opening, false), 0), Match::Yes(13));
        let closing = b" \r\n  ```  \r\n";
        for n in 0..closing.len() {
            let prefix = closing.get(..n).unwrap_or_default();
            assert_eq!(closer(&held(prefix, false), 0), Match::Need, "{n}");
        }
        assert_eq!(closer(&held(closing, false), 0), Match::Yes(12));
        // At the end of the stream, the backticks close the fence with the blanks after them.
        assert_eq!(closer(&held(b"\n```  ", true), 0), Match::Yes(6));
        // Text after the backticks stays text; a fourth backtick is no closer.
        assert_eq!(closer(&held(b"\n``` ok", false), 0), Match::Yes(4));
        assert_eq!(closer(&held(b"\n````", false), 0), Match::No);
    }

    /// Past the bounded blanks, a line is no fence, however it goes on.
    #[test]
    fn too_many_blanks_decide_at_once() {
        let line = [b"```json".as_slice(), &[b' '; 17]].concat();
        assert_eq!(opener(&held(&line, false), 0), Match::No);
        let line = [b"```json\n".as_slice(), &[b' '; 17]].concat();
        assert_eq!(opener(&held(&line, false), 0), Match::No);
    }
}
