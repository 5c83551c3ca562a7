//! Which dialect opens a block at a candidate byte: for a fixed dialect its own markers, for
//! [`Dialect::Auto`] every dialect's, in an order where no marker is mistaken for another
//! (`[TOOL_CALLS]` is tried before a Python list, `<tool_call>` picks hermes or qwen3_xml
//! by the first byte after it).

use super::block::Opens;
use super::scan::{Input, Match};
use super::{deepseek, harmony, hermes, llama3, mistral, pythonic, qwen3_xml, Dialect};

/// The bytes an opening marker of `dialect` (`None`: of any dialect) starts with.
pub(super) fn first_bytes(dialect: Option<Dialect>) -> &'static [u8] {
    match dialect {
        Some(Dialect::Mistral | Dialect::Pythonic) => b"[",
        Some(Dialect::Llama3) => b"<{",
        Some(Dialect::Hermes | Dialect::Qwen3Xml | Dialect::Deepseek | Dialect::Harmony) => b"<",
        Some(Dialect::Atfunc) => b"",
        None | Some(Dialect::Auto) => b"<[{",
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
        None | Some(Dialect::Auto) => any(input, i),
    }
}

/// The first dialect whose block opens at `i`. `Need` as soon as one of them needs more
/// bytes: deciding early could pick the wrong one.
fn any(input: &Input<'_>, i: u64) -> Opens {
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
