//! Server-sent events: writing the client's stream (reading the upstream's is
//! [`crate::endpoint::SseDecoder`]'s).

use axum::body::Bytes;
use serde_json::Value as Json;

/// One event carrying `json`: `data: {...}\n\n`.
pub(crate) fn event(json: &Json) -> Bytes {
    Bytes::from(format!("data: {json}\n\n"))
}

/// The event that ends a chat completion stream.
pub(crate) fn done() -> Bytes {
    Bytes::from_static(b"data: [DONE]\n\n")
}

/// Holds back the end of a stream passed through until its event is whole, so that what
/// was passed on always ends where an event ends. A stream cut short by the gateway (at
/// the size limit, at an upstream failure, at the request's deadline) then ends with an
/// error event on a line of its own, not inside a `data:` line the upstream left
/// unfinished, where an SSE client could read neither. The bytes passed on are the
/// upstream's, in order; only their pieces differ.
///
/// An event ends at a blank line; lines end with `\r\n`, `\n` or a lone `\r`, as the
/// format allows (see [`crate::endpoint::SseDecoder`], which reads them the same way).
#[derive(Debug)]
pub(crate) struct WholeEvents {
    /// The bytes after the last whole event: its own line ends say nothing of the lines
    /// before them, which `line_empty` and `after_cr` keep.
    held: Vec<u8>,
    /// Whether nothing came since the last line end (or the stream's start).
    line_empty: bool,
    /// Whether the last byte was a `\r` that ended a line: a `\n` right after it is the
    /// rest of that line end, not a blank line.
    after_cr: bool,
}

impl Default for WholeEvents {
    fn default() -> WholeEvents {
        WholeEvents {
            held: Vec::new(),
            line_empty: true,
            after_cr: false,
        }
    }
}

impl WholeEvents {
    /// Takes in the next piece of the stream; the whole events it completes, if any.
    pub(crate) fn push(&mut self, piece: &[u8]) -> Option<Bytes> {
        // Where the last whole event ends in `piece`.
        let mut whole = None;
        let mut at = 0;
        while let Some(found) = memchr::memchr2(b'\r', b'\n', &piece[at..]) {
            let end = at + found;
            if end > at {
                self.line_empty = false;
                self.after_cr = false;
            }
            let byte = piece[end];
            if byte == b'\n' && self.after_cr {
                // The `\n` of a `\r\n`: the line already ended.
                self.after_cr = false;
            } else {
                if self.line_empty {
                    whole = Some(end + 1);
                }
                self.line_empty = true;
                self.after_cr = byte == b'\r';
            }
            at = end + 1;
        }
        if at < piece.len() {
            self.line_empty = false;
            self.after_cr = false;
        }
        let Some(whole) = whole else {
            self.held.extend_from_slice(piece);
            return None;
        };
        let (done, rest) = piece.split_at(whole);
        let mut out = std::mem::take(&mut self.held);
        out.extend_from_slice(done);
        self.held.extend_from_slice(rest);
        Some(Bytes::from(out))
    }

    /// The stream ended as its upstream ended it: what is held goes as it is.
    pub(crate) fn finish(self) -> Option<Bytes> {
        (!self.held.is_empty()).then(|| Bytes::from(self.held))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `stream` cut into pieces of `sizes` (over and over) gives: the pieces passed
    /// on, the last the end's.
    fn passed_on(stream: &[u8], sizes: &[usize]) -> Vec<Vec<u8>> {
        let mut whole = WholeEvents::default();
        let mut out = Vec::new();
        let mut at = 0;
        for size in sizes.iter().cycle() {
            if at >= stream.len() {
                break;
            }
            let end = (at + size).min(stream.len());
            out.extend(whole.push(&stream[at..end]).map(|b| b.to_vec()));
            at = end;
        }
        out.extend(whole.finish().map(|b| b.to_vec()));
        out
    }

    /// Every piece passed on but the end's ends a whole event, the pieces add up to the
    /// stream, and where they end is the same however the stream is cut (whole, in 1-,
    /// 3- and random-byte pieces), in each line-end style and with them mixed.
    #[test]
    fn pieces_end_where_events_end_however_the_stream_is_cut() {
        let streams: [&[u8]; 5] = [
            b"data: a\n\n: note\ndata: b\ndata: c\n\ndata: [DONE]\n\n",
            b"data: a\r\n\r\ndata: b\r\ndata: c\r\n\r\ndata: [DONE]\r\n\r\n",
            b"data: a\r\rdata: b\rdata: c\r\rdata: [DONE]\r\r",
            b"data: a\r\n\rdata: b\ndata: c\r\r\n: note\n\ndata: [DONE]\r\n\r",
            b"data: a\n\ndata: cut short",
        ];
        let mut seed = 7u64;
        let mut random = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % 9 + 1
        };
        let random_sizes: Vec<usize> = (0..64).map(|_| random()).collect();
        for stream in streams {
            let shown = String::from_utf8_lossy(stream);
            let ends = |pieces: &[Vec<u8>]| {
                assert_eq!(pieces.concat(), stream, "{shown:?}");
                pieces
                    .iter()
                    .scan(0, |at, piece| {
                        *at += piece.len();
                        Some(*at)
                    })
                    .collect::<Vec<_>>()
            };
            let whole = passed_on(stream, &[stream.len()]);
            assert!(whole.len() <= 2, "{shown:?}");
            let mut expected = std::collections::BTreeSet::new();
            for sizes in [&[1][..], &[3], &random_sizes] {
                let pieces = passed_on(stream, sizes);
                let at = ends(&pieces);
                // The event ends do not depend on the cuts; byte 1 pieces find them all.
                if sizes == [1] {
                    expected.extend(at.iter().copied());
                }
                for end in &at {
                    assert!(expected.contains(end), "{shown:?} {sizes:?}: {end}");
                }
            }
            // Each end found is after a blank line, or the stream's end.
            for end in expected {
                let before = String::from_utf8_lossy(&stream[..end]);
                assert!(
                    end == stream.len()
                        || before.ends_with("\n\n")
                        || before.ends_with("\r\r")
                        || before.ends_with("\r\n\r\n")
                        || before.ends_with("\r\n\r")
                        || before.ends_with("\r\r\n")
                        || before.ends_with("\n\r\n")
                        || before.ends_with("\r\n\n"),
                    "{shown:?} cut at {end}"
                );
            }
        }
        // A stream cut short inside an event holds it back until its end.
        let mut whole = WholeEvents::default();
        assert_eq!(
            whole.push(b"data: a\n\ndata: b"),
            Some(Bytes::from_static(b"data: a\n\n"))
        );
        assert_eq!(whole.push(b"c\n"), None);
        assert_eq!(whole.push(b"\n"), Some(Bytes::from_static(b"data: bc\n\n")));
        assert_eq!(whole.finish(), None);
    }
}
