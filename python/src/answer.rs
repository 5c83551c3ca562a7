//! The text of a model's answer around its calls, for the toolbox's turns and streams.
//!
//! The contract: a second parser, with the registry's own parser settings, reads the same
//! pieces of the answer as the registry's stream, so it finds the same calls at the same
//! pieces. Its text events (the answer outside its calls) are placed among the records of
//! the calls the registry ran by their byte offsets, so one stream gives both, in the
//! order the answer has them, with no second parser on the Python side. Text from the
//! call that repeated an earlier one on (where the registry stopped) is not given: that
//! part of the answer is dropped from the history too.

use atfunc::parse::{Event, ParserConfig, StreamParser};
use atfunc_tools::Outcome;
use serde_json::{json, Value as Json};

/// The text parser beside a registry stream, and the records given so far.
pub(crate) struct AnswerText {
    parser: StreamParser,
    /// Where the next text event begins, in bytes of the answer: the end of what the
    /// parser gave last (a text, or a call's span).
    offset: u64,
    /// Every record given so far, text and calls, in order: the answer as records.
    given: Vec<Json>,
}

impl AnswerText {
    pub(crate) fn new(config: ParserConfig) -> AnswerText {
        AnswerText {
            parser: StreamParser::new(config),
            offset: 0,
            given: Vec::new(),
        }
    }

    /// Every record given so far, in the answer's order.
    pub(crate) fn into_records(self) -> Vec<Json> {
        self.given
    }

    /// The next piece of the answer: its records (`{"text": ...}` and the records of the
    /// calls the registry ran for it, `outcomes`), in the answer's order. `stop`: the byte
    /// where the registry stopped at a repeated call, if it did.
    pub(crate) fn feed(
        &mut self,
        chunk: &str,
        outcomes: Vec<Json>,
        starts: Vec<u64>,
        stop: Option<u64>,
    ) -> Vec<Json> {
        let events = self.parser.feed_str(chunk);
        self.merge(events, outcomes, starts, stop)
    }

    /// The end of the answer, as [`AnswerText::feed`].
    pub(crate) fn finish(
        &mut self,
        outcomes: Vec<Json>,
        starts: Vec<u64>,
        stop: Option<u64>,
    ) -> Vec<Json> {
        let events = self.parser.finish();
        self.merge(events, outcomes, starts, stop)
    }

    fn merge(
        &mut self,
        events: Vec<Event>,
        outcomes: Vec<Json>,
        starts: Vec<u64>,
        stop: Option<u64>,
    ) -> Vec<Json> {
        let mut texts: Vec<(u64, String)> = Vec::new();
        for event in events {
            match event {
                Event::Text { text } => {
                    let start = self.offset;
                    self.offset += text.len() as u64;
                    if stop.is_none_or(|stop| start < stop) {
                        texts.push((start, text));
                    }
                }
                Event::Call(call) => self.offset = call.span.end,
                Event::Malformed { span, .. } | Event::InvalidUtf8 { span, .. } => {
                    self.offset = span.end
                }
                _ => {}
            }
        }
        let mut records = Vec::with_capacity(texts.len() + outcomes.len());
        let mut calls = starts.into_iter().zip(outcomes).peekable();
        for (start, text) in texts {
            while let Some((_, record)) = calls.next_if(|(call_start, _)| *call_start < start) {
                records.push(record);
            }
            records.push(json!({ "text": text }));
        }
        records.extend(calls.map(|(_, record)| record));
        self.given.extend(records.iter().cloned());
        records
    }
}

/// Where each outcome's call begins, in bytes, for [`AnswerText::feed`].
pub(crate) fn starts(outcomes: &[Outcome]) -> Vec<u64> {
    outcomes.iter().map(|outcome| outcome.span.start).collect()
}
