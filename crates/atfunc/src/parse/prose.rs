//! Skipping prose: the next `@` and whether the bytes before it are ASCII, in one pass.
//!
//! Most of what a model writes is prose, and every byte of it is looked at twice: for an
//! `@` that may start a call, and by the release of text (UTF-8 check and character count,
//! which for ASCII are one test of the high bit). `memchr` alone finds `@` fast but stops at
//! every e-mail address, and a second pass then tests the high bits. Here one loop does
//! both and passes over the `@` of an address (after a letter, digit or `_`) without
//! leaving it: AVX2 where the processor has it, else SSE2 (part of every x86-64
//! processor), and eight bytes at a time on other platforms. Once a non-ASCII byte is seen
//! the release checks the text with `simdutf8` anyway, and the rest of the search is
//! `memchr`'s.

/// Where the search stopped.
#[derive(Debug, Clone, Copy)]
pub(super) struct Skim<'a> {
    /// Index (in the bytes searched, which start at `from`) of the first `@` that may start
    /// a call, if there is one: an `@` right after an ASCII letter, digit or `_` is prose
    /// (`bob@example.com`) and is passed over. At index 0 the byte before is not searched:
    /// that `@` is always reported.
    pub at: Option<usize>,
    /// The leading bytes known to be ASCII: up to the `@` (or the end) when no byte before
    /// it is above 0x7F, else up to the first such byte.
    pub ascii: Ascii<'a>,
}

/// Finds the first `@` of `data[from..]` that may start a call and how far the bytes are
/// ASCII before it.
#[inline]
pub(super) fn skim(data: &[u8], from: usize) -> Skim<'_> {
    skim_copying(data, from, None)
}

/// [`skim`], copying the ASCII bytes it passes (those of [`Skim::ascii`]) into `text`
/// (which it empties first) in the same pass: text released from the start of that run
/// is then in a string already, without a second pass over its bytes. `text` gets room
/// for all of `data[from..]`, so the caller keeps this for pieces of bounded size.
#[inline]
pub(super) fn skim_into<'a>(data: &'a [u8], from: usize, text: &mut String) -> Skim<'a> {
    let mut buf = std::mem::take(text).into_bytes();
    buf.clear();
    let skim = skim_copying(data, from, Some(&mut buf));
    debug_assert!(buf.as_slice() == skim.ascii.as_str().as_bytes());
    // SAFETY: `skim_copying` leaves in `buf` exactly the bytes of `skim.ascii`, each below
    // 0x80 (the invariant of `Ascii`), and ASCII is valid UTF-8.
    *text = unsafe { String::from_utf8_unchecked(buf) };
    skim
}

/// [`skim`], and with `copy` (an empty vector) the copy [`skim_into`] makes.
#[inline]
fn skim_copying<'a>(data: &'a [u8], from: usize, copy: Option<&mut Vec<u8>>) -> Skim<'a> {
    let bytes = data.get(from..).unwrap_or_default();
    let (stop, found) = first_at_or_high(bytes, copy);
    let at = match found {
        Some(b'@') => Some(stop),
        Some(_) => memchr::memchr_iter(b'@', bytes.get(stop..).unwrap_or_default())
            .map(|k| stop + k)
            .find(|&k| !after_word(bytes, k)),
        None => None,
    };
    // Every byte before `stop` is below 0x80: `first_at_or_high` stops at the first that
    // is not.
    let start = from.min(data.len());
    let ascii = Ascii {
        data,
        start,
        end: start + stop,
    };
    Skim { at, ascii }
}

/// The bytes `data[start..end]`, seen to be ASCII.
///
/// Only this module makes one, and only from bytes it has tested: the search of [`skim`]
/// or [`Ascii::check`]. So holding one is the proof [`Ascii::as_str`] needs to skip the
/// UTF-8 check (ASCII is valid UTF-8), and the character count may take one character a
/// byte.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ascii<'a> {
    /// Invariant: `start <= end <= data.len()` and every byte of `data[start..end]` is
    /// below 0x80.
    data: &'a [u8],
    start: usize,
    end: usize,
}

impl<'a> Ascii<'a> {
    /// `data[start..end]` if every byte of it is ASCII (and the range lies in `data`).
    /// One pass that ORs the bytes together (the compiler vectorises it).
    pub(super) fn check(data: &'a [u8], start: usize, end: usize) -> Option<Ascii<'a>> {
        // Blocks long enough that folding the vector lanes into one byte, once per block,
        // costs little; short enough that non-ASCII text is given up on early.
        const BLOCK: usize = 1024;
        let bytes = data.get(start..end)?;
        for block in bytes.chunks(BLOCK) {
            if block.iter().fold(0u8, |acc, &b| acc | b) >= 0x80 {
                return None;
            }
        }
        Some(Ascii { data, start, end })
    }

    /// The part `start..end` of these bytes (indices in the same `data`), if it lies
    /// within them.
    pub(super) fn within(self, start: usize, end: usize) -> Option<Ascii<'a>> {
        (self.start <= start && start <= end && end <= self.end).then_some(Ascii {
            data: self.data,
            start,
            end,
        })
    }

    /// These bytes and `next` as one run, if `next` starts where they end in the same
    /// `data`.
    pub(super) fn then(self, next: Ascii<'a>) -> Option<Ascii<'a>> {
        (std::ptr::eq(self.data, next.data) && self.end == next.start).then_some(Ascii {
            data: self.data,
            start: self.start,
            end: next.end,
        })
    }

    /// Where the bytes start in `data`.
    pub(super) fn start(self) -> usize {
        self.start
    }

    /// How many bytes (and characters) they are.
    pub(super) fn len(self) -> usize {
        self.end - self.start
    }

    /// The bytes as text, not checked again.
    pub(super) fn as_str(self) -> &'a str {
        let bytes = self.data.get(self.start..self.end).unwrap_or_default();
        debug_assert!(bytes.is_ascii(), "bytes held as ASCII are not");
        // SAFETY: every byte of `data[start..end]` is below 0x80 (the invariant of the
        // type, which only `skim` and `check` establish, from bytes they tested), and a
        // sequence of ASCII bytes is valid UTF-8.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }
}

/// Whether the `@` at `bytes[k]` is prose: it follows an ASCII identifier character.
#[inline]
fn after_word(bytes: &[u8], k: usize) -> bool {
    k.checked_sub(1)
        .and_then(|before| bytes.get(before))
        .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The index of the first byte that is above 0x7F or an `@` not [`after_word`], and that
/// byte (`None`: neither occurs, the index is the length). With `copy` (an empty vector),
/// the bytes before that index are left in it.
#[inline]
fn first_at_or_high(bytes: &[u8], copy: Option<&mut Vec<u8>>) -> (usize, Option<u8>) {
    let Some(copy) = copy else {
        let (stop, found, _) = search(bytes, None);
        return (stop, found);
    };
    copy.reserve(bytes.len());
    // The vector loop stores the blocks it reads into the room just reserved.
    let room = copy.spare_capacity_mut().as_mut_ptr().cast::<u8>();
    let (stop, found, stored) = search(bytes, Some(room));
    // SAFETY: the vector loop wrote `bytes[..stored]` at the start of the room, which is
    // `bytes.len()` long at least, and `stored <= stop <= bytes.len()`.
    unsafe { copy.set_len(stored) };
    copy.extend_from_slice(bytes.get(stored..stop).unwrap_or_default());
    (stop, found)
}

/// [`first_at_or_high`]'s search: the stop, its byte, and how many of the bytes before
/// it the vector loop stored at `dst` (given, it has room for `bytes.len()` bytes).
#[inline]
fn search(bytes: &[u8], dst: Option<*mut u8>) -> (usize, Option<u8>, usize) {
    #[cfg(target_arch = "x86_64")]
    let (mut i, stored) = match simd::blocks(bytes, dst) {
        (Ok(stop), stored) => return (stop, bytes.get(stop).copied(), stored.min(stop)),
        (Err(blocks_end), stored) => (blocks_end, stored),
    };
    #[cfg(not(target_arch = "x86_64"))]
    let (mut i, stored) = {
        let _ = dst;
        (0, 0)
    };
    loop {
        let rest = bytes.get(i..).unwrap_or_default();
        let k = i + words::first_at_or_high(rest);
        match bytes.get(k) {
            Some(b'@') if after_word(bytes, k) => i = k + 1,
            found => return (k, found.copied(), stored.min(k)),
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8,
        _mm256_or_si256, _mm256_set1_epi8, _mm256_storeu_si256, _mm_cmpeq_epi8, _mm_loadu_si128,
        _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };

    /// The first byte of `bytes` that is above 0x7F or an `@` not after a word
    /// character, looked for in whole 64-byte blocks: `Ok(index)`, or `Err(end)`
    /// when the blocks up to `end` hold none (the bytes after `end`, fewer than 64, are the
    /// caller's). AVX2 where the processor has it (the standard library caches the
    /// answer), else SSE2.
    ///
    /// With `dst` (room for `bytes.len()` bytes), the AVX2 loop also stores each block it
    /// reads there, at the same index: the second value says how many leading bytes are
    /// stored (0 where the SSE2 loop ran: it stores none).
    #[inline]
    pub(super) fn blocks(bytes: &[u8], dst: Option<*mut u8>) -> (Result<usize, usize>, usize) {
        if bytes.len() < 64 {
            return (Err(0), 0);
        }
        if is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2 (checked just above); `dst`, when given, has
            // room for `bytes.len()` bytes (the caller's promise).
            match dst {
                Some(dst) => unsafe { blocks_avx2::<true>(bytes, dst) },
                None => unsafe { blocks_avx2::<false>(bytes, std::ptr::null_mut()) },
            }
        } else {
            (blocks_sse2(bytes), 0)
        }
    }

    // In both loops a lane is marked by the top bit of its byte ORed with the `@` test, and
    // `movemask` gathers the top bits: one mask bit per byte, the lowest the first stop.
    // Every load reads inside `bytes`: 64 bytes from `i` with `i + 64 <= bytes.len()`, and
    // `loadu` needs no alignment.

    /// The loop behind [`blocks`] with AVX2: 128 bytes a round, two blocks tested
    /// together; a round that holds a stop looks at its blocks' masks. (One branch per 128
    /// bytes measured faster than one per 64, and than testing the byte before each `@`
    /// in the vectors, which doubled the work of every block.) Safety: the processor must
    /// have AVX2.
    /// With `COPY`, each 32 bytes read are stored at the same index of `dst` (which must
    /// have room for `bytes.len()` bytes), and the second value is how many leading bytes
    /// were (all those read, a whole round past a stop included); else 0.
    #[target_feature(enable = "avx2")]
    unsafe fn blocks_avx2<const COPY: bool>(
        bytes: &[u8],
        dst: *mut u8,
    ) -> (Result<usize, usize>, usize) {
        let at = _mm256_set1_epi8(b'@' as i8);
        let p = bytes.as_ptr();
        let marks = |k: usize| {
            let v = _mm256_loadu_si256(p.add(k).cast::<__m256i>());
            if COPY {
                // In bounds: `k + 32 <= bytes.len()`, the room's length at least.
                _mm256_storeu_si256(dst.add(k).cast::<__m256i>(), v);
            }
            _mm256_or_si256(v, _mm256_cmpeq_epi8(v, at))
        };
        let stored = |end: usize| if COPY { end } else { 0 };
        let mask = |lo: __m256i, hi: __m256i| {
            u64::from(_mm256_movemask_epi8(lo) as u32)
                | u64::from(_mm256_movemask_epi8(hi) as u32) << 32
        };
        let mut i = 0;
        while i + 128 <= bytes.len() {
            let [a, b, c, d] = [i, i + 32, i + 64, i + 96].map(marks);
            let any = _mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(c, d));
            if _mm256_movemask_epi8(any) != 0 {
                if let Some(stop) = first_stop(bytes, i, mask(a, b)) {
                    return (Ok(stop), stored(i + 128));
                }
                if let Some(stop) = first_stop(bytes, i + 64, mask(c, d)) {
                    return (Ok(stop), stored(i + 128));
                }
            }
            i += 128;
        }
        if i + 64 <= bytes.len() {
            if let Some(stop) = first_stop(bytes, i, mask(marks(i), marks(i + 32))) {
                return (Ok(stop), stored(i + 64));
            }
            i += 64;
        }
        (Err(i), stored(i))
    }

    pub(super) fn blocks_sse2(bytes: &[u8]) -> Result<usize, usize> {
        let mut i = 0;
        // SAFETY: SSE2 is part of the x86-64 baseline; the loads are in bounds (see above).
        unsafe {
            let at = _mm_set1_epi8(b'@' as i8);
            while i + 64 <= bytes.len() {
                let p = bytes.as_ptr().add(i);
                let lanes = [0, 16, 32, 48].map(|k| {
                    let v = _mm_loadu_si128(p.add(k).cast::<__m128i>());
                    _mm_or_si128(v, _mm_cmpeq_epi8(v, at))
                });
                let [a, b, c, d] = lanes;
                let any = _mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d));
                if _mm_movemask_epi8(any) != 0 {
                    let mask = lanes.iter().enumerate().fold(0u64, |mask, (k, &v)| {
                        mask | u64::from(_mm_movemask_epi8(v) as u16) << (16 * k)
                    });
                    if let Some(stop) = first_stop(bytes, i, mask) {
                        return Ok(stop);
                    }
                }
                i += 64;
            }
        }
        Err(i)
    }

    /// The first stop of the block at `start` whose bytes `mask` marks (one bit a byte):
    /// a byte above 0x7F, or an `@` that is not prose.
    #[inline]
    fn first_stop(bytes: &[u8], start: usize, mut mask: u64) -> Option<usize> {
        while mask != 0 {
            let k = start + mask.trailing_zeros() as usize;
            if bytes.get(k) != Some(&b'@') || !super::after_word(bytes, k) {
                return Some(k);
            }
            mask &= mask - 1;
        }
        None
    }
}

/// The search eight bytes at a time, for every platform and for the tail of a block.
mod words {
    const LOW_BITS: u64 = 0x0101_0101_0101_0101;
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

    /// The index of the first byte that is `@` or above 0x7F (the length if there is none).
    #[inline]
    pub(super) fn first_at_or_high(bytes: &[u8]) -> usize {
        let mut i = 0;
        let mut rest = bytes;
        while let Some((word, tail)) = rest.split_first_chunk::<8>() {
            let w = u64::from_le_bytes(*word);
            let x = w ^ (LOW_BITS * u64::from(b'@'));
            // The lowest set high bit marks the first byte that is above 0x7F or equal to
            // `@` (a zero of `x`); bits above it may be false, and are not read.
            let found = (w | (x.wrapping_sub(LOW_BITS) & !x)) & HIGH_BITS;
            if found != 0 {
                return i + (found.trailing_zeros() / 8) as usize;
            }
            i += 8;
            rest = tail;
        }
        i + rest
            .iter()
            .position(|&b| b == b'@' || b >= 0x80)
            .unwrap_or(rest.len())
    }
}

#[cfg(test)]
mod tests {
    use super::{skim, skim_into, words, Ascii};
    use proptest::prelude::*;

    /// What `skim` must say (the `@` and how many bytes are ASCII), written the plain way.
    fn reference(bytes: &[u8]) -> (Option<usize>, usize) {
        let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        let at = (0..bytes.len()).find(|&k| bytes[k] == b'@' && (k == 0 || !word(bytes[k - 1])));
        let end = at.unwrap_or(bytes.len());
        let ascii = bytes[..end].iter().position(|&b| b >= 0x80).unwrap_or(end);
        (at, ascii)
    }

    /// What `skim` says of `bytes` searched whole, checked against what it says of them
    /// as the tail of longer data.
    fn skimmed(bytes: &[u8]) -> (Option<usize>, usize) {
        let s = skim(bytes, 0);
        let mut longer = b"x@".to_vec();
        longer.extend_from_slice(bytes);
        let t = skim(&longer, 2);
        assert_eq!((s.at, s.ascii.len()), (t.at, t.ascii.len()));
        // The search that copies as it goes finds the same, and copies the run.
        for (data, from, plain) in [(bytes, 0, &s), (&longer[..], 2, &t)] {
            let mut copy = String::from("left from before");
            let c = skim_into(data, from, &mut copy);
            assert_eq!(
                (c.at, c.ascii.start(), c.ascii.len()),
                (plain.at, from, plain.ascii.len())
            );
            assert_eq!(copy, plain.ascii.as_str());
        }
        assert_eq!((s.ascii.start(), t.ascii.start()), (0, 2));
        assert!(s.ascii.as_str().is_ascii());
        (s.at, s.ascii.len())
    }

    /// Bytes that are mostly ASCII letters, with `@` and non-ASCII bytes placed anywhere,
    /// long enough to cross several 64-byte blocks.
    fn text() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            prop_oneof![
                20 => b'a'..=b'z',
                2 => Just(b'@'),
                1 => Just(b' '),
                1 => 0x80u8..=0xFF,
                1 => 0u8..0x80,
            ],
            0..400,
        )
    }

    proptest! {
        #[test]
        fn skim_agrees_with_a_byte_loop(bytes in text(), from in 0usize..70) {
            let bytes = bytes.get(from.min(bytes.len())..).unwrap_or_default();
            prop_assert_eq!(skimmed(bytes), reference(bytes));
            let raw = bytes.iter().position(|&b| b == b'@' || b >= 0x80);
            prop_assert_eq!(words::first_at_or_high(bytes), raw.unwrap_or(bytes.len()));
            #[cfg(target_arch = "x86_64")]
            {
                let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
                let expected = (0..bytes.len()).find(|&k| {
                    bytes[k] >= 0x80 || (bytes[k] == b'@' && (k == 0 || !word(bytes[k - 1])))
                });
                let blocks = bytes.len() / 64 * 64;
                let sse2 = match expected {
                    Some(k) if k < blocks => Ok(k),
                    _ => Err(blocks),
                };
                prop_assert_eq!(super::simd::blocks_sse2(bytes), sse2);
            }
        }
    }

    #[test]
    fn ascii_is_made_only_from_ascii_bytes() {
        let data = "plain text, then é and more".as_bytes();
        let accent = data.iter().position(|&b| b >= 0x80).unwrap();
        // Checked: every range without the accent, none with any byte of it.
        let head = Ascii::check(data, 0, accent).unwrap();
        assert_eq!(head.as_str(), "plain text, then ");
        assert!(Ascii::check(data, 0, accent + 1).is_none());
        assert!(Ascii::check(data, accent + 1, data.len()).is_none());
        assert!(Ascii::check(data, 3, 2).is_none());
        assert!(Ascii::check(data, 0, data.len() + 1).is_none());
        let tail = Ascii::check(data, accent + 2, data.len()).unwrap();
        assert_eq!(tail.as_str(), " and more");
        // Parts of a run lie inside it.
        assert_eq!(head.within(6, 10).unwrap().as_str(), "text");
        assert_eq!(head.within(3, 3).unwrap().len(), 0);
        assert!(head.within(6, accent + 1).is_none());
        assert!(head.within(7, 6).is_none());
        // Runs join only where one ends and the next begins, in the same bytes.
        let (a, b) = (
            Ascii::check(data, 0, 6).unwrap(),
            Ascii::check(data, 6, 10).unwrap(),
        );
        assert_eq!(a.then(b).unwrap().as_str(), "plain text");
        assert!(b.then(a).is_none());
        assert!(a.then(tail).is_none());
        let copy = data.to_vec();
        let elsewhere = Ascii::check(&copy, 6, 10).unwrap();
        assert!(a.then(elsewhere).is_none());
        // A search makes one of the bytes it found below 0x80 only.
        let found = skim(data, 2).ascii;
        assert_eq!((found.start(), found.len()), (2, accent - 2));
        assert_eq!(skim(data, data.len() + 5).ascii.len(), 0);
    }

    #[test]
    fn an_at_after_every_byte_value() {
        // Each byte value right before an `@`, at the edges of the lanes and blocks of the
        // vector loops (the first block is sorted out apart from the others).
        for before in 0..=255u8 {
            for k in [1, 31, 32, 63, 64, 65, 95, 96, 127, 128, 129, 190] {
                let mut bytes = vec![b' '; 200];
                bytes[k - 1] = before;
                bytes[k] = b'@';
                assert_eq!(skimmed(&bytes), reference(&bytes), "{before:#x} before {k}");
            }
        }
    }

    #[test]
    fn every_position_of_each_stop_byte() {
        // One `@` or one high byte (or one of each) at every position of 200 bytes, which
        // puts them in every lane of every block and in the tails.
        for len in [0, 1, 7, 8, 9, 63, 64, 65, 127, 128, 200] {
            for i in 0..len {
                for stop in [b'@', 0x80, 0xC3, 0xFF] {
                    let mut bytes = vec![b'x'; len];
                    bytes[i] = stop;
                    assert_eq!(skimmed(&bytes), reference(&bytes), "{len} {i} {stop}");
                    if i + 5 < len {
                        bytes[i + 5] = if stop == b'@' { 0xE2 } else { b'@' };
                        assert_eq!(skimmed(&bytes), reference(&bytes), "{len} {i} {stop} +5");
                    }
                }
            }
            let plain = vec![b'x'; len];
            assert_eq!(skimmed(&plain), reference(&plain));
        }
    }
}
