//! A streamed answer, read up to the end of its first repeated call
//! ([`EvalOptions::stop_at_repeat`](super::EvalOptions::stop_at_repeat)).
//!
//! A small model that cannot stop writes its calls again until its token limit; the
//! evaluator reads an answer only up to the first repeat, as the gateway does. Waiting
//! for the rest costs most of the time of a BFCL `parallel` case on a CPU, and changes
//! nothing that is scored. Read as a stream, the answer is dropped where the repeat ends,
//! which a llama.cpp server takes as the end of the request.

use atfunc::bind::{bind, Catalog, Repeats};
use atfunc::parse::{Event, StreamParser};
use atfunc_gateway::endpoint::{Sse, SseDecoder};
use serde_json::Value as Json;

/// The pieces of one streamed chat completion, fed as they come: its text, where a
/// repeated call ends it, and its token counts.
pub(super) struct RepeatWatch<'a> {
    catalog: &'a Catalog,
    decoder: SseDecoder,
    events: Vec<Sse>,
    parser: StreamParser,
    calls: Vec<Event>,
    repeats: Repeats,
    /// The answer's text so far (up to the repeat, once there was one).
    pub(super) text: String,
    /// The answer's tokens, as the server counted them in its last chunk that did.
    pub(super) counted: Option<(u64, u64)>,
    /// Content pieces received: the answer's tokens for a server that counts none.
    pub(super) pieces: u64,
    /// Whether a repeated call ended the answer.
    pub(super) cut: bool,
    /// Whether the server said the answer is over (`[DONE]`).
    pub(super) done: bool,
}

/// Why a stream cannot be read on.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum StreamFault {
    /// A line of the stream is longer than the limit on the whole answer.
    LineTooLong,
    /// The server sent an error in mid-stream; its data.
    Said(String),
    /// The stream's byte `at` is the first that is not UTF-8 in an event's data.
    NotUtf8 {
        /// Counted from the stream's start.
        at: usize,
    },
}

impl<'a> RepeatWatch<'a> {
    /// A watch over an answer whose calls bind against `catalog`; a line of the stream
    /// may be at most `max_line` bytes.
    pub(super) fn new(catalog: &'a Catalog, max_line: usize) -> RepeatWatch<'a> {
        RepeatWatch {
            catalog,
            decoder: SseDecoder::new(max_line),
            events: Vec::new(),
            parser: StreamParser::default(),
            calls: Vec::new(),
            // An answer read here is bounded in size (`max_response_bytes`).
            repeats: Repeats::remembering(usize::MAX),
            text: String::new(),
            counted: None,
            pieces: 0,
            cut: false,
            done: false,
        }
    }

    /// Whether nothing more is read: the answer repeated a call, or the server ended it.
    pub(super) fn over(&self) -> bool {
        self.cut || self.done
    }

    /// Feeds the next piece of the stream's body.
    pub(super) fn feed(&mut self, piece: &[u8]) -> Result<(), StreamFault> {
        self.decoder
            .feed(piece, &mut self.events)
            .map_err(|_| StreamFault::LineTooLong)?;
        self.read_events()
    }

    /// The stream's body ended: an event not closed by a blank line still counts.
    pub(super) fn finish(&mut self) -> Result<(), StreamFault> {
        self.decoder.finish(&mut self.events);
        self.read_events()
    }

    fn read_events(&mut self) -> Result<(), StreamFault> {
        let events = std::mem::take(&mut self.events);
        for event in events {
            if self.over() {
                break;
            }
            let data = match event {
                Sse::Data(data) => data,
                Sse::Error(data) => return Err(StreamFault::Said(data)),
                Sse::NotUtf8 { at } => return Err(StreamFault::NotUtf8 { at }),
            };
            if data.trim() == "[DONE]" {
                self.done = true;
                break;
            }
            // Keep-alives and chunks of other shapes carry nothing to read.
            let Ok(chunk) = serde_json::from_str::<Json>(&data) else {
                continue;
            };
            if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
                return Err(StreamFault::Said(error.to_string()));
            }
            if let Some(counts) = counts(&chunk) {
                self.counted = Some(counts);
            }
            if let Some(piece) = chunk
                .pointer("/choices/0/delta/content")
                .and_then(Json::as_str)
            {
                self.pieces += 1;
                self.read_piece(piece);
            }
        }
        Ok(())
    }

    /// Adds `piece` to the text, up to the end of a call that repeats an earlier one.
    fn read_piece(&mut self, piece: &str) {
        self.text.push_str(piece);
        self.parser.feed_into(piece.as_bytes(), &mut self.calls);
        for event in self.calls.drain(..) {
            let Event::Call(call) = event else { continue };
            let Ok(bound) = bind(&call, self.catalog) else {
                continue;
            };
            if !self.repeats.admit(&bound) {
                // The text is kept to the end of the repeat: read again whole, it gives
                // the calls the whole answer would have given, the repeat dropped.
                let end = usize::try_from(call.span.end).unwrap_or(usize::MAX);
                if self.text.is_char_boundary(end) {
                    self.text.truncate(end);
                }
                self.cut = true;
                return;
            }
        }
    }
}

/// The prompt and answer tokens a chunk counts so far: its `usage` (sent on the last
/// chunk, or on every chunk by some servers), or llama.cpp's per-token `timings`
/// (`timings_per_token`), where the prompt is the cached part and the part evaluated.
fn counts(chunk: &Json) -> Option<(u64, u64)> {
    let field = |value: &Json, name: &str| value.get(name).and_then(Json::as_u64);
    if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
        return Some((
            field(usage, "prompt_tokens").unwrap_or(0),
            field(usage, "completion_tokens").unwrap_or(0),
        ));
    }
    let timings = chunk.get("timings")?;
    Some((
        field(timings, "cache_n").unwrap_or(0) + field(timings, "prompt_n").unwrap_or(0),
        field(timings, "predicted_n")?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use atfunc::{Interface, Param, ParamType};
    use serde_json::json;

    fn catalog() -> Catalog {
        Catalog::new(vec![
            Interface::new("get_weather").param(Param::new("city", ParamType::String).required())
        ])
    }

    /// A llama.cpp stream of `pieces`, each chunk with its timings, then its usage.
    fn stream(pieces: &[&str]) -> String {
        let mut out = String::from(": keep-alive\n\n");
        for (n, piece) in pieces.iter().enumerate() {
            let chunk = json!({"choices": [{"index": 0, "delta": {"content": piece}}],
                "timings": {"cache_n": 3, "prompt_n": 7, "predicted_n": n + 1}});
            out.push_str(&format!("data: {chunk}\n\n"));
        }
        let end = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]});
        let usage = json!({"choices": [], "usage": {"prompt_tokens": 10,
            "completion_tokens": pieces.len()}});
        out.push_str(&format!("data: {end}\n\ndata: {usage}\n\ndata: [DONE]\n\n"));
        out
    }

    /// What the watch read of `body` fed in pieces of `size` bytes: (text, cut, done,
    /// counts, content pieces).
    fn watched(body: &[u8], size: usize) -> (String, bool, bool, Option<(u64, u64)>, u64) {
        let catalog = catalog();
        let mut watch = RepeatWatch::new(&catalog, 1 << 16);
        for piece in body.chunks(size) {
            watch.feed(piece).unwrap();
            if watch.over() {
                break;
            }
        }
        if !watch.over() {
            watch.finish().unwrap();
        }
        (
            watch.text,
            watch.cut,
            watch.done,
            watch.counted,
            watch.pieces,
        )
    }

    #[test]
    fn a_repeated_call_ends_the_answer_at_every_chunking() {
        let pieces = [
            "Sure. @get",
            "_weather(\"Oslo\")\n@get_weather(",
            "city=\"Paris\")\n@GET_WEATHER(city",
            "=\"Oslo\") and then ",
            "more text @get_weather(\"Rome\")",
        ];
        let body = stream(&pieces);
        let expected = (
            "Sure. @get_weather(\"Oslo\")\n@get_weather(city=\"Paris\")\n@GET_WEATHER(city=\"Oslo\")"
                .to_owned(),
            true,
            false,
            Some((10, 4)),
            4,
        );
        let mut sizes: Vec<usize> = vec![1, 3, body.len()];
        // A fixed spread of other sizes stands in for random ones, the same in every run.
        sizes.extend((0..40).map(|i| 2 + (i * 7919) % 97));
        for size in sizes {
            assert_eq!(watched(body.as_bytes(), size), expected, "pieces of {size}");
        }
    }

    #[test]
    fn an_answer_without_a_repeat_is_read_to_its_end() {
        let pieces = [
            "@get_weather(\"Oslo\") ",
            "@get_weather(\"Oslo\", extra=1)",
            " done",
        ];
        let body = stream(&pieces);
        for size in [1, 3, 5, body.len()] {
            let (text, cut, done, counts, n) = watched(body.as_bytes(), size);
            assert_eq!(text, pieces.concat());
            // A call that does not bind is no repeat: it is read, and refused, later.
            assert!(!cut && done, "pieces of {size}");
            // The usage of the last chunk, not the timings before it.
            assert_eq!((counts, n), (Some((10, 3)), 3));
        }
    }

    #[test]
    fn an_error_in_mid_stream_is_reported() {
        let catalog = catalog();
        let mut watch = RepeatWatch::new(&catalog, 1 << 16);
        let body = "data: {\"choices\":[{\"delta\":{\"content\":\"@get\"}}]}\n\nerror: {\"code\":500,\"message\":\"out of memory\"}\n\n";
        assert_eq!(
            watch.feed(body.as_bytes()),
            Err(StreamFault::Said(
                "{\"code\":500,\"message\":\"out of memory\"}".into()
            ))
        );
        let mut watch = RepeatWatch::new(&catalog, 8);
        assert_eq!(
            watch.feed(b"data: {\"choices\": []}"),
            Err(StreamFault::LineTooLong)
        );
    }

    #[test]
    fn a_server_that_counts_nothing_leaves_the_pieces() {
        let catalog = catalog();
        let mut watch = RepeatWatch::new(&catalog, 1 << 16);
        let body = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\" there\"}}]}";
        watch.feed(body.as_bytes()).unwrap();
        watch.finish().unwrap();
        assert_eq!(
            (watch.text.as_str(), watch.counted, watch.pieces, watch.done),
            ("hi there", None, 2, false)
        );
    }
}
