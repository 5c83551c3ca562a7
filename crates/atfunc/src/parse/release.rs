//! Releasing text: bytes that cannot be part of a call go out as text and invalid-UTF-8
//! events, the same way for the atfunc parser and every dialect's reader.

use super::chars::CharCount;
use super::prose::Ascii;
use super::types::Event;

/// Where valid UTF-8 stops: the valid text before the stop, and the length of the invalid
/// sequence there (`None`: a character cut off by the end), as [`std::str::Utf8Error`]
/// tells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Utf8Stop<'a> {
    pub valid: &'a str,
    pub error_len: Option<usize>,
}

/// `bytes` as a string if they are valid UTF-8; else where that stops. Every byte of text
/// passes here, so the check runs with SIMD (`simdutf8`) and once over the bytes in the
/// common cases: valid text, and valid text whose last character the next piece of the
/// stream completes. Elsewhere `compat` finds the stop, and the standard library gives the
/// length of the invalid sequence from the few bytes there.
pub(crate) fn valid_utf8(bytes: &[u8]) -> Result<&str, Utf8Stop<'_>> {
    let (head, tail) = bytes.split_at(bytes.len() - cut_character(bytes));
    if let Ok(valid) = simdutf8::basic::from_utf8(head) {
        if tail.is_empty() {
            return Ok(valid);
        }
        // The tail is a lead byte and fewer continuation bytes than it announces, with no
        // whole character in it: the standard library says whether it can still become one.
        if let Err(e) = std::str::from_utf8(tail) {
            if e.valid_up_to() == 0 {
                let error_len = e.error_len();
                return Err(Utf8Stop { valid, error_len });
            }
        }
    }
    let stop = match simdutf8::compat::from_utf8(bytes) {
        Ok(s) => return Ok(s),
        Err(e) => e.valid_up_to(),
    };
    let (valid, rest) = bytes.split_at(stop.min(bytes.len()));
    // `compat` has checked the valid part; it is made a `&str` by the SIMD check again
    // (not the standard library's, about a byte a nanosecond on non-ASCII text), and the
    // standard library reads only the few bytes at the stop.
    match (simdutf8::basic::from_utf8(valid), std::str::from_utf8(rest)) {
        (Ok(valid), Err(e)) if e.valid_up_to() == 0 => Err(Utf8Stop {
            valid,
            error_len: e.error_len(),
        }),
        // Not reached (`compat` stops where the standard library does); the standard
        // library's answer for the whole, should it ever be.
        _ => std::str::from_utf8(bytes).map_err(|e| {
            let (valid, _) = bytes.split_at(e.valid_up_to());
            Utf8Stop {
                valid: std::str::from_utf8(valid).unwrap_or_default(),
                error_len: e.error_len(),
            }
        }),
    }
}

/// How many bytes at the end of `bytes` are the start of a character cut off there: a lead
/// byte followed by fewer continuation bytes than it announces (0 if there is none).
fn cut_character(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let Some(&b) = bytes.get(bytes.len() - back) else {
            return 0;
        };
        if b & 0xC0 == 0x80 {
            continue; // a continuation byte: its lead byte lies further back
        }
        let needs = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => return 0,
        };
        return if needs > back { back } else { 0 };
    }
    0
}

/// A range of text to release: `data[from..to]`, where `data` starts at the absolute offset
/// `base`.
pub(super) struct Release<'a> {
    pub data: &'a [u8],
    pub from: usize,
    pub to: usize,
    pub base: u64,
}

/// Releases bytes known to be ASCII (the atfunc parser learns it while it looks for `@`)
/// as one text event, without looking at them again; `base` is the absolute offset of the
/// data they lie in. Returns the index up to which bytes went out: their end.
pub(super) fn release_ascii(
    text: Ascii<'_>,
    base: u64,
    out: &mut Vec<Event>,
    chars: &mut CharCount,
) -> usize {
    let end = text.start() + text.len();
    if text.len() > 0 {
        chars.released_ascii(base + text.start() as u64, text);
        out.push(Event::Text {
            text: text.as_str().to_owned(),
        });
    }
    end
}

/// [`release_ascii`] for bytes already copied into `copy` (the same bytes: the search that
/// found them ASCII copied them as it went), which becomes the event's text.
pub(super) fn release_ascii_copied(
    text: Ascii<'_>,
    copy: String,
    base: u64,
    out: &mut Vec<Event>,
    chars: &mut CharCount,
) -> usize {
    debug_assert_eq!(copy, text.as_str(), "a copy of other bytes");
    let end = text.start() + text.len();
    if text.len() > 0 {
        chars.released_ascii(base + text.start() as u64, text);
        out.push(Event::Text { text: copy });
    }
    end
}

/// Releases a range as text and invalid-UTF-8 events, the same for the atfunc parser and
/// every dialect's reader. Unless `last`, a character cut off at the range's end is held
/// back. The characters released are counted in `chars` as they go out (the bytes were
/// just looked at), and an invalid run counts as one. Returns the index up to which bytes
/// went out.
pub(super) fn release_text(
    range: Release<'_>,
    last: bool,
    out: &mut Vec<Event>,
    chars: &mut CharCount,
) -> usize {
    let Release {
        data,
        from,
        to,
        base,
    } = range;
    let mut i = from;
    while i < to {
        let bytes = data.get(i..to).unwrap_or_default();
        let start = base + i as u64;
        // Prose is mostly ASCII, and for ASCII one pass is both the UTF-8 check and the
        // character count (one character a byte).
        if let Some(text) = Ascii::check(data, i, to) {
            i = release_ascii(text, base, out, chars);
            continue;
        }
        match valid_utf8(bytes) {
            Ok(s) => {
                chars.released(start, s);
                out.push(Event::Text { text: s.to_owned() });
                i = to;
            }
            Err(Utf8Stop { valid, error_len }) => {
                if !valid.is_empty() {
                    out.push(Event::Text {
                        text: valid.to_owned(),
                    });
                }
                let bad_start = i + valid.len();
                let bad_len = match error_len {
                    Some(n) => n,
                    None if last => to - bad_start,
                    None => return bad_start,
                };
                let bad = data
                    .get(bad_start..bad_start + bad_len)
                    .unwrap_or_default()
                    .to_vec();
                let start = base + bad_start as u64;
                let span = chars.invalid_span(data, base, start, start + bad_len as u64);
                out.push(Event::InvalidUtf8 { span, bytes: bad });
                i = bad_start + bad_len;
            }
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::{valid_utf8, Utf8Stop};

    /// The standard library's answer, in `valid_utf8`'s terms.
    fn std_answer(bytes: &[u8]) -> Result<&str, Utf8Stop<'_>> {
        std::str::from_utf8(bytes).map_err(|e| Utf8Stop {
            valid: std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap(),
            error_len: e.error_len(),
        })
    }

    #[test]
    fn valid_utf8_answers_as_the_standard_library() {
        // Every one- and two-byte sequence of bytes that matter to UTF-8, and three-byte
        // sequences of lead and continuation bytes, after text long enough for the SIMD
        // paths (ASCII and not) and before more of it, or at the very end.
        let bytes: Vec<u8> = vec![
            b'a', 0x7F, 0x80, 0x8F, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xED,
            0xEE, 0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xFF,
        ];
        let mut middles: Vec<Vec<u8>> = Vec::new();
        for &a in &bytes {
            middles.push(vec![a]);
            for &b in &bytes {
                middles.push(vec![a, b]);
                for &c in &[0x80u8, 0xBF, b'a'] {
                    middles.push(vec![a, b, c]);
                }
            }
        }
        middles.push("€😀".as_bytes().to_vec());
        let prefixes = [
            "",
            "plain ascii text, long enough for a vector or two: 0123456789abcdefghijklmnop",
            "Zürich 東京 😀 and more text in several scripts, long enough: 0123456789",
        ];
        for prefix in prefixes {
            for middle in &middles {
                for suffix in [
                    "",
                    " and then some ascii text after it, again long enough....",
                    "日本語",
                ] {
                    let mut text = prefix.as_bytes().to_vec();
                    text.extend_from_slice(middle);
                    text.extend_from_slice(suffix.as_bytes());
                    assert_eq!(valid_utf8(&text), std_answer(&text), "{text:?}");
                }
            }
        }
    }
}
