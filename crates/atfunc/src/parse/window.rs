//! What every engine of the [`StreamParser`](super::StreamParser) reads and updates while it
//! scans: where the bytes it is given lie in the stream, the characters before them, the
//! work done, and the limits. The parser owns one and lends it to its engine on each run.

use super::chars::CharCount;
use super::release::{release_text, Release};
use super::types::{Event, ParserConfig, Span};

/// The engine's view of the stream around the bytes it is given.
///
/// An engine runs over `data`: the bytes the parser held back, then the chunk just fed.
/// Offsets in events and in the engines' state are absolute (from the start of the
/// stream); `base` turns them into indices in `data` and back.
#[derive(Debug)]
pub(super) struct Window {
    /// The limits and the dialect read.
    pub config: ParserConfig,
    /// Absolute offset of `data[0]`, the first byte held.
    pub base: u64,
    /// Character offsets of the bytes released so far (bytes are counted before they are
    /// let go).
    pub chars: CharCount,
    /// Work done, in scanned characters, for the linearity tests. Kept across inputs.
    pub steps: u64,
}

impl Window {
    /// The view of a new stream.
    pub fn new(config: ParserConfig) -> Window {
        Window {
            config,
            base: 0,
            chars: CharCount::default(),
            steps: 0,
        }
    }

    /// Index in `data` of the absolute offset `abs`, which the atfunc engine never asks for
    /// before `base` (the bytes held start at the oldest offset it keeps). One before it
    /// would be a bug: debug builds stop there, release builds get an index past any data,
    /// where `get` finds nothing. A plain subtraction, since it runs for about every
    /// character the engine steps over (clamping cost 1 % of the instructions on the parse
    /// bench's call-dense input).
    #[inline]
    pub fn at(&self, abs: u64) -> usize {
        debug_assert!(abs >= self.base, "offset {abs} before the bytes held");
        abs.wrapping_sub(self.base) as usize
    }

    /// [`at`](Self::at) reading an offset before `base` as `base`, as the dialects' reader
    /// asks for its offsets.
    #[inline]
    pub fn at_clamped(&self, abs: u64) -> usize {
        usize::try_from(abs.saturating_sub(self.base)).unwrap_or(usize::MAX)
    }

    /// The absolute offset of `data[i]`.
    #[inline]
    pub fn abs(&self, i: usize) -> u64 {
        self.base + i as u64
    }

    /// One past the last byte a call starting at `start` may hold.
    #[inline]
    pub fn call_limit(&self, start: u64) -> u64 {
        start.saturating_add(self.config.max_call_len as u64)
    }

    /// The span `start..end` (absolute) of `data`, with its character offsets.
    pub fn span(&mut self, data: &[u8], start: u64, end: u64) -> Span {
        self.chars.span(data, self.base, start, end)
    }

    /// Releases `data[from..to]` as text and invalid-UTF-8 events (see [`release_text`]);
    /// returns the index up to which bytes went out.
    pub fn release(
        &mut self,
        data: &[u8],
        from: usize,
        to: usize,
        out: &mut Vec<Event>,
        last: bool,
    ) -> usize {
        let range = Release {
            data,
            from,
            to,
            base: self.base,
        };
        release_text(range, last, out, &mut self.chars)
    }
}
