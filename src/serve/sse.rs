//! Server-sent events: reading the upstream's stream, writing the client's.

use axum::body::Bytes;
use serde_json::Value as Json;

/// Reads the `data` of server-sent events from chunks cut anywhere.
///
/// Only `data:` fields matter to chat completions; comments (`:`), `event:`, `id:` and
/// `retry:` lines are skipped. Several `data:` lines of one event are joined with `\n`, as
/// the format says.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    /// Bytes of the line being read; never holds a `\n`.
    line: Vec<u8>,
    /// The data of the event being read, when a `data:` line was seen.
    data: Option<String>,
    /// Longest line accepted.
    max_line: usize,
}

/// A line longer than the limit: the stream is not usable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LineTooLong(pub usize);

impl SseDecoder {
    /// A decoder that refuses lines over `max_line` bytes.
    pub(crate) fn new(max_line: usize) -> SseDecoder {
        SseDecoder {
            max_line,
            ..SseDecoder::default()
        }
    }

    /// Feeds a chunk; appends the data of each event it completes to `out`.
    pub(crate) fn feed(&mut self, chunk: &[u8], out: &mut Vec<String>) -> Result<(), LineTooLong> {
        let mut rest = chunk;
        while let Some(at) = memchr::memchr(b'\n', rest) {
            let (head, tail) = rest.split_at(at);
            self.line.extend_from_slice(head);
            rest = tail.get(1..).unwrap_or_default();
            let line = std::mem::take(&mut self.line);
            self.end_line(&line, out);
        }
        self.line.extend_from_slice(rest);
        if self.line.len() > self.max_line {
            return Err(LineTooLong(self.max_line));
        }
        Ok(())
    }

    /// Ends the stream: an event not closed by a blank line still counts.
    pub(crate) fn finish(&mut self, out: &mut Vec<String>) {
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() {
            self.end_line(&line, out);
        }
        if let Some(data) = self.data.take() {
            out.push(data);
        }
    }

    fn end_line(&mut self, line: &[u8], out: &mut Vec<String>) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            if let Some(data) = self.data.take() {
                out.push(data);
            }
            return;
        }
        let Some(value) = line.strip_prefix(b"data:") else {
            return;
        };
        let value = value.strip_prefix(b" ").unwrap_or(value);
        let value = String::from_utf8_lossy(value);
        match &mut self.data {
            Some(data) => {
                data.push('\n');
                data.push_str(&value);
            }
            None => self.data = Some(value.into_owned()),
        }
    }
}

/// One event carrying `json`: `data: {...}\n\n`.
pub(crate) fn event(json: &Json) -> Bytes {
    Bytes::from(format!("data: {json}\n\n"))
}

/// The event that ends a chat completion stream.
pub(crate) fn done() -> Bytes {
    Bytes::from_static(b"data: [DONE]\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_chunks(input: &[u8], size: usize) -> Vec<String> {
        let mut decoder = SseDecoder::new(1 << 20);
        let mut out = Vec::new();
        for chunk in input.chunks(size) {
            decoder.feed(chunk, &mut out).unwrap();
        }
        decoder.finish(&mut out);
        out
    }

    #[test]
    fn events_are_the_same_however_the_stream_is_cut() {
        let input = b": keep-alive\r\n\r\ndata: {\"a\":1}\r\n\r\nevent: x\ndata: one\ndata:two\n\ndata: [DONE]";
        let whole = decode_in_chunks(input, input.len());
        assert_eq!(whole, ["{\"a\":1}", "one\ntwo", "[DONE]"]);
        for size in 1..8 {
            assert_eq!(decode_in_chunks(input, size), whole, "chunks of {size}");
        }
    }

    #[test]
    fn a_line_over_the_limit_is_refused() {
        let mut decoder = SseDecoder::new(16);
        let mut out = Vec::new();
        assert_eq!(decoder.feed(b"data: 12345", &mut out), Ok(()));
        assert_eq!(decoder.feed(b"6789012", &mut out), Err(LineTooLong(16)));
    }
}
