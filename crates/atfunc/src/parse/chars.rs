//! Character offsets beside byte offsets. Every span carries both (`"chars"` in records):
//! the byte offsets say where a call lies in the stream, the character offsets where it
//! lies in the text a Python or JavaScript user holds. The count runs once over each byte,
//! as text is released in order, for the atfunc parser and every dialect's reader alike.

use super::prose::Ascii;
use super::Span;

/// How many characters lie before the bytes counted so far.
///
/// The bytes counted are valid UTF-8: every invalid sequence goes out as an
/// [`Event::InvalidUtf8`](super::Event::InvalidUtf8) whose span is counted by
/// [`invalid_span`](Self::invalid_span) (a call or malformed span ends before its first
/// invalid byte), and text is released in order. So counting the bytes that start a
/// character is exact, with no second validation of text already checked.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CharCount {
    /// Characters are counted up to this absolute offset, on a character boundary.
    counted: u64,
    /// How many characters lie before `counted`.
    chars: u64,
}

impl CharCount {
    /// The number of characters before the absolute offset `abs` (a character boundary in
    /// `data`, which starts at the absolute offset `base`); counts on from where the count
    /// stopped when `abs` lies ahead.
    pub(crate) fn before(&mut self, data: &[u8], base: u64, abs: u64) -> u64 {
        if abs == self.counted {
            // The common case of a small feed: nothing new to count.
            self.chars
        } else if abs > self.counted {
            let from = index(base, self.counted);
            let to = index(base, abs);
            self.chars += count_chars(data.get(from..to).unwrap_or_default());
            self.counted = abs;
            self.chars
        } else {
            // Not reached while spans come in order; kept exact all the same.
            let from = index(base, abs.max(base));
            let to = index(base, self.counted);
            self.chars - count_chars(data.get(from..to).unwrap_or_default())
        }
    }

    /// Counts the text released at `start` when the count has reached `start`; else
    /// [`before`](Self::before) counts it when asked.
    pub(crate) fn released(&mut self, start: u64, text: &str) {
        if self.counted == start {
            let bytes = text.as_bytes();
            self.counted += bytes.len() as u64;
            self.chars += count_chars(bytes);
        }
    }

    /// [`released`](Self::released) for text known to be ASCII: one character a byte, so
    /// the bytes are not looked at again.
    pub(crate) fn released_ascii(&mut self, start: u64, text: Ascii<'_>) {
        if self.counted == start {
            let len = text.len() as u64;
            self.counted += len;
            self.chars += len;
        }
    }

    /// The span `start..end` of `data` (which starts at `base`), with its character
    /// offsets. Spans are asked for in input order, so counting resumes where it stopped
    /// and every byte is counted once.
    pub(crate) fn span(&mut self, data: &[u8], base: u64, start: u64, end: u64) -> Span {
        let char_start = self.before(data, base, start);
        let char_end = self.before(data, base, end);
        Span::new(start, end).with_chars(char_start, char_end)
    }

    /// The span of the invalid sequence `start..end`, which counts as one character: the
    /// replacement character `String::from_utf8_lossy` puts in its place.
    pub(crate) fn invalid_span(&mut self, data: &[u8], base: u64, start: u64, end: u64) -> Span {
        let char_start = self.before(data, base, start);
        self.counted = end;
        self.chars += 1;
        Span::new(start, end).with_chars(char_start, self.chars)
    }
}

/// Index in `data` (which starts at `base`) of an absolute offset.
fn index(base: u64, abs: u64) -> usize {
    usize::try_from(abs.saturating_sub(base)).unwrap_or(usize::MAX)
}

/// How many characters the valid UTF-8 `bytes` hold: the bytes that are not continuation
/// bytes (`0b10xx_xxxx`). Every released byte passes here, so the count runs with SIMD
/// (`bytecount` picks AVX2 or SSE2 at run time).
fn count_chars(bytes: &[u8]) -> u64 {
    bytecount::num_chars(bytes) as u64
}
