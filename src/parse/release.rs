//! Releasing text: bytes that cannot be part of a call go out as text and invalid-UTF-8
//! events, the same way for the atfunc parser and every dialect's reader.

use super::chars::CharCount;
use super::types::{Event, Span};

/// A reader that holds back the bytes it cannot yet resolve (a call still open, a split
/// character) and scans each chunk together with them: the atfunc parser and every
/// dialect's reader. [`feed_held`](HeldTail::feed_held) is their one feed step.
pub(super) trait HeldTail {
    /// The bytes held, the absolute offset of their first byte, and the character count.
    fn held(&mut self) -> (&mut Vec<u8>, &mut u64, &mut CharCount);

    /// Scans `data` (the held bytes and the chunk, or the chunk alone), appends the events
    /// it completes and returns how many of its bytes are done with (never held again).
    fn run(&mut self, data: &[u8], out: &mut Vec<Event>, eof: bool) -> usize;

    /// Scans the held bytes with `chunk` and keeps what is unresolved. With nothing held
    /// the chunk is scanned where it lies and only its unresolved tail is copied.
    fn feed_held(&mut self, chunk: &[u8], out: &mut Vec<Event>) {
        let mut buf = std::mem::take(self.held().0);
        let keep = if buf.is_empty() {
            let keep = self.run(chunk, out, false);
            let (_, base, chars) = self.held();
            chars.before(chunk, *base, *base + keep as u64);
            buf.extend_from_slice(chunk.get(keep..).unwrap_or_default());
            keep
        } else {
            buf.extend_from_slice(chunk);
            let keep = self.run(&buf, out, false);
            let (_, base, chars) = self.held();
            chars.before(&buf, *base, *base + keep as u64);
            buf.drain(..keep.min(buf.len()));
            keep
        };
        let (held, base, _) = self.held();
        *held = buf;
        *base += keep as u64;
    }
}

/// Releases `data[from..to]` (`data` starts at the absolute offset `base`) as text and
/// invalid-UTF-8 events, the same for the atfunc parser and every dialect's reader. Unless
/// `last`, a character cut off at `to` is held back. `invalid(start, end)` gives the span
/// of an invalid run (absolute offsets; the caller counts it as one character). Returns the
/// index up to which bytes went out.
pub(super) fn release_text(
    data: &[u8],
    from: usize,
    to: usize,
    base: u64,
    last: bool,
    out: &mut Vec<Event>,
    mut invalid: impl FnMut(u64, u64) -> Span,
) -> usize {
    let mut i = from;
    while i < to {
        let bytes = data.get(i..to).unwrap_or_default();
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                out.push(Event::Text { text: s.to_owned() });
                i = to;
            }
            Err(e) => {
                let valid = e.valid_up_to();
                if let Some(s) = bytes
                    .get(..valid)
                    .and_then(|v| std::str::from_utf8(v).ok())
                    .filter(|s| !s.is_empty())
                {
                    out.push(Event::Text { text: s.to_owned() });
                }
                let bad_start = i + valid;
                let bad_len = match e.error_len() {
                    Some(n) => n,
                    None if last => to - bad_start,
                    None => return bad_start,
                };
                let bad = data
                    .get(bad_start..bad_start + bad_len)
                    .unwrap_or_default()
                    .to_vec();
                let start = base + bad_start as u64;
                let span = invalid(start, start + bad_len as u64);
                out.push(Event::InvalidUtf8 { span, bytes: bad });
                i = bad_start + bad_len;
            }
        }
    }
    i
}
