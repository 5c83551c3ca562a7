//! Server-sent events: reading a streamed answer (the gateway's upstream, the evaluator's
//! endpoint) from chunks cut anywhere.

/// What one server-sent event carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sse {
    /// The data of an ordinary event.
    Data(String),
    /// The data of an event of type `error`, or the value of an `error:` field: llama.cpp's
    /// server writes a failure in mid-stream as `error: {...}`, then `[DONE]`. Its data is
    /// only quoted, so bytes that are not UTF-8 are shown replaced.
    Error(String),
    /// An ordinary event whose data is not UTF-8: the answer cannot be read, and is not
    /// read with replacement characters (the text would not be the model's).
    NotUtf8 {
        /// Where the first byte that is not UTF-8 is, counted from the stream's start.
        at: usize,
    },
}

/// Reads the `data` of server-sent events from chunks cut anywhere.
///
/// Only `data:` fields, and the two ways of saying an event is an error, matter to chat
/// completions; comments (`:`), other `event:` types, `id:` and `retry:` lines are skipped.
/// Several `data:` lines of one event are joined with `\n`, as the format says. Lines may end with `\r\n`, `\n` or a lone `\r` (the format allows all
/// three, and one stream may mix them); a `\r\n` cut between two chunks is one line end.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes of the line being read; never holds a `\r` or a `\n`.
    line: Vec<u8>,
    /// Whether the last chunk ended right after a `\r` that ended a line: a `\n` at the
    /// start of the next chunk is the rest of that line end, not a blank line.
    after_cr: bool,
    /// The data of the event being read, when a `data:` line was seen.
    data: Option<String>,
    /// Whether the event being read is an error (`event: error`, or an `error:` field).
    is_error: bool,
    /// Longest line accepted.
    max_line: usize,
    /// How many bytes were fed before the chunk being read.
    fed: usize,
    /// Where the line being read starts, counted from the stream's start.
    line_at: usize,
    /// Where the first byte that is not UTF-8 of the event being read's data is, if any.
    not_utf8: Option<usize>,
}

/// A line longer than the limit: the stream is not usable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineTooLong(pub usize);

impl SseDecoder {
    /// A decoder that refuses lines over `max_line` bytes.
    pub fn new(max_line: usize) -> SseDecoder {
        SseDecoder {
            max_line,
            ..SseDecoder::default()
        }
    }

    /// Feeds a chunk; appends each event it completes to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<Sse>) -> Result<(), LineTooLong> {
        let base = self.fed;
        self.fed = self.fed.saturating_add(chunk.len());
        let mut rest = chunk;
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            rest = rest.strip_prefix(b"\n").unwrap_or(rest);
            self.line_at = base + (chunk.len() - rest.len());
        }
        while let Some(at) = memchr::memchr2(b'\r', b'\n', rest) {
            let (head, tail) = rest.split_at(at);
            self.line.extend_from_slice(head);
            rest = match tail {
                [b'\r', b'\n', after @ ..] => after,
                // The `\n` of a `\r\n` may come with the next chunk.
                [b'\r'] => {
                    self.after_cr = true;
                    &[]
                }
                [_, after @ ..] => after,
                [] => &[],
            };
            let line = std::mem::take(&mut self.line);
            self.end_line(&line, out);
            self.line_at = base + (chunk.len() - rest.len());
        }
        self.line.extend_from_slice(rest);
        if self.line.len() > self.max_line {
            return Err(LineTooLong(self.max_line));
        }
        Ok(())
    }

    /// Ends the stream: an event not closed by a blank line still counts.
    pub fn finish(&mut self, out: &mut Vec<Sse>) {
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() {
            self.end_line(&line, out);
        }
        self.dispatch(out);
    }

    /// Ends the event being read.
    fn dispatch(&mut self, out: &mut Vec<Sse>) {
        let is_error = std::mem::take(&mut self.is_error);
        let not_utf8 = self.not_utf8.take();
        if let Some(data) = self.data.take() {
            out.push(match (is_error, not_utf8) {
                (true, _) => Sse::Error(data),
                (false, Some(at)) => Sse::NotUtf8 { at },
                (false, None) => Sse::Data(data),
            });
        }
    }

    fn end_line(&mut self, line: &[u8], out: &mut Vec<Sse>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if let Some(kind) = line.strip_prefix(b"event:") {
            let kind = kind.strip_prefix(b" ").unwrap_or(kind);
            self.is_error = kind == b"error";
            return;
        }
        let value = if let Some(value) = line.strip_prefix(b"data:") {
            value
        } else if let Some(value) = line.strip_prefix(b"error:") {
            self.is_error = true;
            value
        } else {
            return;
        };
        let value = value.strip_prefix(b" ").unwrap_or(value);
        if self.not_utf8.is_none() {
            if let Err(error) = std::str::from_utf8(value) {
                let in_line = line.len() - value.len() + error.valid_up_to();
                self.not_utf8 = Some(self.line_at.saturating_add(in_line));
            }
        }
        // Replaced only for an error's data, which is quoted; an ordinary event's is
        // dispatched as `NotUtf8`.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Events as text: an ordinary event's data, an error's with `error: ` in front.
    fn shown(events: Vec<Sse>) -> Vec<String> {
        events
            .into_iter()
            .map(|event| match event {
                Sse::Data(data) => data,
                Sse::Error(data) => format!("error: {data}"),
                Sse::NotUtf8 { at } => format!("not UTF-8 from {at}"),
            })
            .collect()
    }

    /// An event whose data is not UTF-8 says where, counted from the stream's start,
    /// however the stream is cut and whatever its line ends; the next event is read.
    #[test]
    fn data_that_is_not_utf8_says_where() {
        for end in ["\n", "\r\n", "\r"] {
            let input = format!(
                "data: a{end}{end}: note{end}data: b{end}data: cX{end}{end}data: d{end}{end}"
            )
            .into_bytes();
            let at = input.iter().position(|b| *b == b'X').unwrap();
            let mut input = input;
            input[at] = 0xff;
            let expected = [
                "a".to_owned(),
                format!("not UTF-8 from {at}"),
                "d".to_owned(),
            ];
            for size in 1..=input.len() {
                assert_eq!(
                    decode_in_chunks(&input, size),
                    expected,
                    "{end:?} chunks of {size}"
                );
            }
        }
        // An error's data is only quoted: replaced, and still an error.
        assert_eq!(
            decode_in_chunks(b"event: error\ndata: bad \xff\n\n", 3),
            ["error: bad \u{fffd}"]
        );
    }

    fn decode_in_chunks(input: &[u8], size: usize) -> Vec<String> {
        let mut decoder = SseDecoder::new(1 << 20);
        let mut out = Vec::new();
        for chunk in input.chunks(size) {
            decoder.feed(chunk, &mut out).unwrap();
        }
        decoder.finish(&mut out);
        shown(out)
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

    fn decode_pieces(pieces: &[&[u8]]) -> Vec<String> {
        let mut decoder = SseDecoder::new(1 << 20);
        let mut out = Vec::new();
        for piece in pieces {
            decoder.feed(piece, &mut out).unwrap();
        }
        decoder.finish(&mut out);
        shown(out)
    }

    /// The same events in each line-end style, and all three mixed.
    const STREAMS: [&[u8]; 4] = [
        b"data: a\r\rdata: b\rdata: c\r\r: note\rdata: [DONE]\r\r",
        b"data: a\r\n\r\ndata: b\r\ndata: c\r\n\r\n: note\r\ndata: [DONE]\r\n\r\n",
        b"data: a\n\ndata: b\ndata: c\n\n: note\ndata: [DONE]\n\n",
        b"data: a\r\n\rdata: b\ndata: c\r\r\n: note\ndata: [DONE]\r\n\r",
    ];

    #[test]
    fn every_line_end_style_gives_the_same_events_wherever_the_stream_is_cut() {
        for stream in STREAMS {
            let shown = String::from_utf8_lossy(stream);
            assert_eq!(
                decode_pieces(&[stream]),
                ["a", "b\nc", "[DONE]"],
                "{shown:?}"
            );
            for i in 0..=stream.len() {
                let (head, tail) = stream.split_at(i);
                assert_eq!(
                    decode_pieces(&[head, tail]),
                    ["a", "b\nc", "[DONE]"],
                    "{shown:?} cut at {i}"
                );
                for j in i..=stream.len() {
                    let (middle, last) = tail.split_at(j - i);
                    assert_eq!(
                        decode_pieces(&[head, middle, last]),
                        ["a", "b\nc", "[DONE]"],
                        "{shown:?} cut at {i} and {j}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_crlf_cut_in_two_is_one_line_end() {
        // Read as two line ends, the `\n` would be a blank line that ends the event early.
        assert_eq!(
            decode_pieces(&[b"data: a\r", b"\ndata: b\r\n\r\n"]),
            ["a\nb"]
        );
        assert_eq!(
            decode_pieces(&[b"data: a\r", b"", b"\ndata: b\n\n"]),
            ["a\nb"]
        );
        // A lone `\r` then a `\r` in the next chunk: a line end, then a blank line.
        assert_eq!(decode_pieces(&[b"data: a\r", b"\rdata: b\r\r"]), ["a", "b"]);
    }

    #[test]
    fn error_events_and_error_fields_are_errors() {
        let input = b"data: a\n\nerror: {\"code\": 500}\n\nevent: error\ndata: b\ndata: c\n\nevent: message\ndata: d\n\nevent: error\n\ndata: e\n\n";
        let expected = [
            "a",
            "error: {\"code\": 500}",
            "error: b\nc",
            "d",
            // The type of an event without data does not carry over to the next one.
            "e",
        ];
        for size in 1..8 {
            assert_eq!(decode_in_chunks(input, size), expected, "chunks of {size}");
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
