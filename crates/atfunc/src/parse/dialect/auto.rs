//! Which dialect opens a block at a candidate byte: for a fixed dialect its own markers, for
//! [`Dialect::Auto`] every dialect's, in an order where no marker is mistaken for another
//! (`[TOOL_CALLS]` is tried before a Python list, `<tool_call>` picks hermes or qwen3_xml
//! by the first byte after it).
//!
//! `auto` guesses, so it reads a block only where it stands as the answer's call, the way
//! each format's own server reads it:
//!
//! - A marker that says it is a call (`<tool_call>`, `<|python_tag|>`, `[TOOL_CALLS]`,
//!   DeepSeek's `<｜tool▁calls▁begin｜>`, a harmony header addressed `to=functions.`) opens a
//!   block anywhere, also after another dialect was seen, except inside a sentence: after a
//!   blank that follows text on its line, and before blanks and a word or the end ("the
//!   [TOOL_CALLS] marker"; `Sure! <tool_call> {"name": …` is a call).
//! - A Python list `[f(…)]` or a bare JSON object `{"name": …}` is a call only at the start
//!   of a line (blanks before it) where the answer holds nothing but calls (`untagged.rs`),
//!   and only while no other dialect was seen: `I will not run [file.delete(path="x")]
//!   because…` is text, and so is a list on a line of its own after or before prose.
//!
//! - When the offered tools are known ([`ParserConfig::offered`]), a bare JSON object is a
//!   call only when it names one of them (and then also after another dialect was seen),
//!   and so is a JSON list of call objects whose first names one (`[{"name": …}, …]`,
//!   each element a call, as hermes reads a list in its block). A Markdown fence right
//!   around either goes with it, as for hermes (`fence.rs`).
//!
//! - atfunc's own `@name(args)` is a call where atfunc's reader reads one: anywhere but
//!   right after a letter, digit or `_` (`bob@example.com(` is prose), and only while no
//!   other dialect was seen. When the offered tools are known, an `@name(` naming none of
//!   them is prose (a mention), whatever follows.
//!
//! The first dialect whose block gave calls is the one seen.
//!
//! [`ParserConfig::offered`]: crate::parse::ParserConfig::offered

use super::block::Opens;
use super::scan::{Input, Match};
use super::{
    at_call, deepseek, fence, harmony, hermes, llama3, mistral, pythonic, qwen3_xml, Dialect,
};
use crate::parse::FunctionNames;

/// The bytes an opening marker of `dialect` (`None`: of any dialect) starts with.
pub(super) fn first_bytes(dialect: Option<Dialect>) -> &'static [u8] {
    match dialect {
        Some(Dialect::Mistral | Dialect::Pythonic) => b"[",
        Some(Dialect::Llama3) => b"<{",
        Some(Dialect::Hermes | Dialect::Qwen3Xml | Dialect::Deepseek | Dialect::Harmony) => b"<",
        Some(Dialect::Atfunc) => b"",
        None | Some(Dialect::Auto) => b"<[{@",
    }
}

/// Whether a block of `dialect` (`None`: of any dialect) opens at `i`.
pub(super) fn opens(dialect: Option<Dialect>, input: &Input<'_>, i: u64) -> Opens {
    match dialect {
        Some(Dialect::Hermes) => hermes::opens(input, i),
        Some(Dialect::Qwen3Xml) => qwen3_xml::opens(input, i),
        Some(Dialect::Llama3) => llama3::opens(input, i),
        Some(Dialect::Mistral) => mistral::opens(input, i),
        Some(Dialect::Pythonic) => pythonic::opens(input, i),
        Some(Dialect::Deepseek) => deepseek::opens(input, i),
        Some(Dialect::Harmony) => harmony::opens(input, i),
        Some(Dialect::Atfunc) => Opens::No,
        None | Some(Dialect::Auto) => any(input, i, |_| true),
    }
}

/// Where a candidate byte stands, for [`guess`]: what `auto` saw before it.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Context<'a> {
    /// The offered tools' names, when known: a bare JSON object is then a call only when
    /// it names one, whatever was seen before.
    pub offered: Option<&'a FunctionNames>,
    /// The dialect whose block gave calls first, if any.
    pub seen: Option<Dialect>,
    /// Whether its line has text (anything but blanks) before the candidate.
    pub line_text: bool,
    /// Whether the byte right before the candidate is a space or a tab.
    pub after_blank: bool,
    /// Whether the character right before the candidate is a word character (a letter, a
    /// digit or `_`): an `@` there is prose, as in `bob@example.com`.
    pub after_word: bool,
    /// Whether the answer holds prose before the candidate: no untagged block opens
    /// (`untagged.rs`).
    pub prose: bool,
}

/// The block [`Dialect::Auto`] opens at `i`, by the rules of the module doc.
pub(super) fn guess(ctx: Context<'_>, input: &Input<'_>, i: u64) -> Opens {
    if input.byte(i) == Some(b'@') {
        // Where atfunc's own reader reads a call, and only while no other format was seen.
        if ctx.after_word || ctx.seen.is_some_and(|seen| seen != Dialect::Atfunc) {
            return Opens::No;
        }
        return at_call::opens(input, i, ctx.offered);
    }
    // An untagged block only where the answer holds no prose, and only at a line's start.
    let no_untagged = ctx.line_text || ctx.prose;
    if let (Some(offered), Some(b'`')) = (ctx.offered, input.byte(i)) {
        return fence::opens(input, i, no_untagged, |input, at| {
            untagged_as_llama3(input, at, offered)
        });
    }
    if let (Some(offered), Some(b'{')) = (ctx.offered, input.byte(i)) {
        if no_untagged {
            return Opens::No;
        }
        return untagged_as_llama3(input, i, offered);
    }
    // A list of untagged call objects, the first naming an offered tool, as a bare object;
    // any other list (`[f(x)]`, `[TOOL_CALLS]`) goes on below.
    if let (Some(offered), Some(b'[')) = (ctx.offered, input.byte(i)) {
        if !no_untagged {
            match hermes::opens_untagged(input, i, offered) {
                Opens::No => {}
                other => return other,
            }
        }
    }
    let opened = any(input, i, |d| match d {
        Dialect::Pythonic | Dialect::Llama3 if is_bare(input, i) => {
            !no_untagged && ctx.seen.is_none_or(|seen| seen == d)
        }
        _ => true,
    });
    let Opens::Yes { block, from } = opened else {
        return opened;
    };
    if ctx.line_text && ctx.after_blank && block.dialect() != Dialect::Harmony {
        // Inside a sentence: a blank on both sides, and a word (or the end) after them,
        // make the marker a word of the prose; `<tool_call> {` is still a call.
        let mut p = from;
        loop {
            match input.byte(p) {
                Some(b' ' | b'\t') if p - from < MAX_BLANKS_IN_SENTENCE => p += 1,
                Some(b) if p > from && (b.is_ascii_alphanumeric() || b >= 0x80) => {
                    return Opens::No
                }
                Some(b' ' | b'\t') => return Opens::No,
                Some(_) => break,
                None if !input.eof => return Opens::Need,
                None => return Opens::No,
            }
        }
    }
    Opens::Yes { block, from }
}

/// The blanks after a marker inside a sentence looked through for the word after them.
const MAX_BLANKS_IN_SENTENCE: u64 = 16;

/// A JSON call object without tags at `i`, for hermes with the offered tools known: only
/// at the start of a line, and only when it names an offered tool.
pub(super) fn untagged(
    input: &Input<'_>,
    i: u64,
    offered: &FunctionNames,
    line_text: bool,
) -> Opens {
    if line_text {
        return Opens::No;
    }
    hermes::opens_untagged(input, i, offered)
}

/// A fence opener at `i` around a JSON call object without tags, for hermes with the
/// offered tools known: the fence goes with the call (see `fence.rs`).
pub(super) fn fenced_untagged(
    input: &Input<'_>,
    i: u64,
    offered: &FunctionNames,
    line_text: bool,
) -> Opens {
    fence::opens(input, i, line_text, |input, at| {
        hermes::opens_untagged(input, at, offered)
    })
}

/// `auto`'s untagged call at `i` (its line already checked): one naming an offered tool,
/// read as a Llama 3 object so that a `;` chains the next.
/// A list of them is read as hermes reads one (each element a call).
fn untagged_as_llama3(input: &Input<'_>, i: u64, offered: &FunctionNames) -> Opens {
    match hermes::opens_untagged(input, i, offered) {
        Opens::Yes { .. } if input.byte(i) == Some(b'{') => llama3::opens(input, i),
        other => other,
    }
}

/// Whether the candidate at `i` is a bare opening (a Python list's `[` or a JSON object's
/// `{`) rather than a marker.
pub(super) fn is_bare(input: &Input<'_>, i: u64) -> bool {
    match input.byte(i) {
        Some(b'{') => true,
        Some(b'[') => !matches!(input.marker(i, mistral::OPEN), Match::Yes(_) | Match::Need),
        _ => false,
    }
}

/// The first dialect whose block opens at `i` and that `allowed` lets open. `Need` as soon
/// as one of them needs more bytes: deciding early could pick the wrong one.
fn any(input: &Input<'_>, i: u64, allowed: impl Fn(Dialect) -> bool) -> Opens {
    let tries: [fn(&Input<'_>, u64) -> Opens; 6] = match input.byte(i) {
        Some(b'<') => [
            tool_call,
            deepseek::opens,
            harmony::opens,
            llama3::opens,
            no,
            no,
        ],
        Some(b'[') => [mistral::opens, pythonic::opens, no, no, no, no],
        Some(b'{') => [llama3::opens, no, no, no, no, no],
        _ => return Opens::No,
    };
    let mut need = false;
    for open in tries {
        match open(input, i) {
            Opens::No => {}
            Opens::Yes { ref block, .. } if !allowed(block.dialect()) => {}
            Opens::Need => need = true,
            yes @ Opens::Yes { .. } if !need => return yes,
            Opens::Yes { .. } => return Opens::Need,
        }
    }
    if need {
        Opens::Need
    } else {
        Opens::No
    }
}

fn no(_: &Input<'_>, _: u64) -> Opens {
    Opens::No
}

/// `<tool_call>` opens hermes' JSON or qwen3_xml's `<function=`: the first byte after the
/// marker and its blanks tells which.
fn tool_call(input: &Input<'_>, i: u64) -> Opens {
    let Match::Yes(end) = input.marker(i, hermes::OPEN) else {
        return match input.marker(i, hermes::OPEN) {
            Match::Need => Opens::Need,
            _ => Opens::No,
        };
    };
    let p = input.skip_ws(end);
    // More blanks than a template writes decide for hermes by their count alone, whether
    // or not the byte after them has come yet: the choice must not depend on where the
    // input was cut.
    if p - end > MAX_BLANKS_AFTER_TOOL_CALL {
        return hermes::opens(input, i);
    }
    match input.byte(p) {
        Some(b'<') => qwen3_xml::opens(input, i),
        Some(_) => hermes::opens(input, i),
        None if input.eof => hermes::opens(input, i),
        None => Opens::Need,
    }
}

/// The blanks after `<tool_call>` looked through for qwen3_xml's `<function=` (its template
/// writes one newline).
const MAX_BLANKS_AFTER_TOOL_CALL: u64 = 64;

#[cfg(test)]
mod tests {
    use super::super::read_at_every_chunking;
    use super::*;

    #[test]
    fn picks_the_first_marker() {
        for (text, name) in [
            (
                "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>",
                "f",
            ),
            ("<tool_call>\n<function=g>\n</function>\n</tool_call>", "g"),
            ("[TOOL_CALLS]h[ARGS]{}", "h"),
            ("[i(a=1)]", "i"),
            ("<|python_tag|>{\"name\": \"j\", \"parameters\": {}}", "j"),
        ] {
            let (_, calls) = read_at_every_chunking(Dialect::Auto, text);
            assert_eq!(calls.len(), 1, "{text}");
            assert_eq!(calls[0].name, name);
        }
        // Once hermes is chosen, a Python list is text.
        let text = "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call> [g(a=1)]";
        let (_, calls) = read_at_every_chunking(Dialect::Auto, text);
        assert_eq!(calls.len(), 1);
    }
}
