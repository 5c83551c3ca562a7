//! The reader every dialect runs in: text, candidate markers, call blocks, events.

use super::block::{BlockScan, Opens};
use super::scan::{Built, Input, Step};
use super::untagged::Untagged;
use super::{auto, Dialect};
use crate::parse::release::valid_utf8;
use crate::parse::window::Window;
use crate::parse::{Call, Event, ParseError, ParseErrorKind, ParserConfig};

/// Bytes held behind a scanner that runs past the call limit. A dialect's scanner looks
/// back at most a name's length ([`MAX_NAME`](super::scan::MAX_NAME)) from where it
/// resumes; the rest is released.
const SKIP_HOLD: u64 = 1024;

/// The reader of every dialect but atfunc: the engine of a
/// [`StreamParser`](crate::parse::StreamParser) configured with one, with the state it keeps
/// between chunks. The parser holds the bytes and lends its [`Window`] on each run.
#[derive(Debug)]
pub(crate) struct Reader {
    /// The dialect asked for (`Auto` included).
    asked: Dialect,
    /// The dialect read: `asked`, or for `Auto` the first one whose block gave calls
    /// (`None` before).
    chosen: Option<Dialect>,
    /// Whether hermes reads call objects without tags (the offered tools are known).
    untagged: bool,
    /// For `Auto`: where the text passed so far leaves the next byte (see `auto::Context`).
    line_text: bool,
    after_blank: bool,
    /// For `Auto`: the last bytes passed (up to a character's four), for whether an `@`
    /// follows a word character; kept here since the bytes themselves may be released.
    tail: [u8; 4],
    tail_len: usize,
    /// For `Auto`: the bytes before this offset are taken into `line_text` and `after_blank`.
    /// Never behind the bytes held.
    passed: u64,
    /// The next byte to scan; bytes before it are not scanned again (a candidate marker,
    /// bounded in length, is the exception: it is looked at again when it was cut off).
    /// Every offset here is absolute.
    pos: u64,
    /// In text, the first byte not yet released.
    text_start: u64,
    /// The opening marker of the block under way.
    cand: u64,
    /// The block under way, if any.
    block: Option<Box<dyn BlockScan>>,
    /// The block under way went over the call limit and was reported malformed up to it;
    /// its scanner runs on only to find where the block ends, and the bytes it passes are
    /// text from `text_start` on (never read as calls, never held). So a block over the
    /// limit is one error in every dialect, whatever its tail holds.
    skipping: bool,
    /// For the dialects with calls that have no marker of their own (`auto`; hermes with
    /// the offered tools known; llama3's bare objects; pythonic): the shape of the text
    /// around calls, and the events held behind an untagged block (see `untagged.rs`).
    untagged_calls: Option<Untagged>,
}

impl Reader {
    /// The reader of `config.dialect` at the start of a stream.
    pub(crate) fn new(config: &ParserConfig) -> Reader {
        let asked = config.dialect;
        Reader {
            asked,
            chosen: (asked != Dialect::Auto).then_some(asked),
            untagged: asked == Dialect::Hermes && config.offered.is_some(),
            line_text: false,
            after_blank: false,
            tail: [0; 4],
            tail_len: 0,
            passed: 0,
            pos: 0,
            text_start: 0,
            cand: 0,
            block: None,
            skipping: false,
            untagged_calls: match asked {
                Dialect::Auto | Dialect::Llama3 | Dialect::Pythonic => Some(Untagged::new()),
                Dialect::Hermes if config.offered.is_some() => Some(Untagged::new()),
                _ => None,
            },
        }
    }

    fn auto(&self) -> bool {
        self.asked == Dialect::Auto
    }

    /// Releases `data[from..to]` as text (see [`Window::release`]), taking it into the
    /// answer's shape, and holding it behind an untagged block while one waits.
    fn release(
        &mut self,
        w: &mut Window,
        data: &[u8],
        from: usize,
        to: usize,
        out: &mut Vec<Event>,
        last: bool,
    ) -> usize {
        let mark = out.len();
        let released = w.release(data, from, to, out, last);
        let Some(u) = self.untagged_calls.as_mut() else {
            return released;
        };
        let start = w.at_clamped(u.shaped).max(from);
        let prose = u.text(data.get(start..released).unwrap_or_default());
        if u.holding() {
            let events: Vec<Event> = out.drain(mark..).collect();
            let limit = w.config.max_call_len as u64;
            let over = u.hold(events, released.saturating_sub(from) as u64, limit);
            if prose || over {
                self.let_go(out);
            }
        }
        released
    }

    /// Takes the text before `to` into the answer's shape, before a decision at `to`.
    fn shape_to(&mut self, w: &Window, data: &[u8], to: u64, out: &mut Vec<Event>) {
        let Some(u) = self.untagged_calls.as_mut() else {
            return;
        };
        if to <= u.shaped {
            return;
        }
        let bytes = data
            .get(w.at_clamped(u.shaped)..w.at_clamped(to).min(data.len()))
            .unwrap_or_default();
        if u.text(bytes) {
            self.let_go(out);
        }
    }

    /// A block's events (its calls, or its malformed span) and its text, ending at `end`:
    /// out at once, or held while the answer may still turn out to hold prose (see
    /// `untagged.rs`). `untagged`: the block has no marker of its own; `chose`: the block
    /// chose the dialect `auto` reads.
    #[allow(clippy::too_many_arguments)]
    fn emit_block(
        &mut self,
        w: &Window,
        events: Vec<Event>,
        text: &str,
        end: u64,
        untagged: bool,
        chose: bool,
        out: &mut Vec<Event>,
    ) {
        let Some(u) = self.untagged_calls.as_mut() else {
            out.extend(events);
            return;
        };
        u.block_ended(end);
        let limit = w.config.max_call_len as u64;
        let over = if untagged {
            u.chose |= chose;
            // Copied only here: a block's text is kept only while it may turn out to be text.
            u.hold_untagged(events, text.to_owned(), limit)
        } else if u.holding() {
            // A block with a marker is a call whatever the held ones turn out to be: should
            // they be text, the dialect `auto` saw first is this one's.
            if u.chose && u.fallback.is_none() {
                u.fallback = self.block.as_ref().map(|b| b.dialect());
            }
            u.hold(events, text.len() as u64, limit)
        } else {
            out.extend(events);
            false
        };
        if over {
            self.let_go(out);
        }
    }

    /// The answer holds prose: what was held goes out with its untagged blocks as text,
    /// and a dialect chosen by them was not seen after all.
    fn let_go(&mut self, out: &mut Vec<Event>) {
        let Some(u) = self.untagged_calls.as_mut() else {
            return;
        };
        u.release(out);
        if std::mem::take(&mut u.chose) {
            self.chosen = u.fallback.take();
        }
    }

    /// Takes the bytes from `passed` to `to` into the line state `auto` decides by.
    fn pass_to(&mut self, w: &mut Window, data: &[u8], to: u64) {
        if !(self.auto() || self.untagged) || to <= self.passed {
            return;
        }
        let bytes = data
            .get(w.at_clamped(self.passed)..w.at_clamped(to).min(data.len()))
            .unwrap_or_default();
        self.passed = to;
        self.keep_tail(bytes);
        let line = match memchr::memrchr(b'\n', bytes) {
            Some(k) => {
                self.line_text = false;
                self.after_blank = false;
                bytes.get(k + 1..).unwrap_or_default()
            }
            None => bytes,
        };
        if let Some(&last) = line.last() {
            let blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\r');
            self.line_text = self.line_text || !line.iter().all(blank);
            self.after_blank = matches!(last, b' ' | b'\t');
        }
    }

    /// Keeps the last four bytes passed, `bytes` being the latest.
    fn keep_tail(&mut self, bytes: &[u8]) {
        let mut joined = [0u8; 8];
        let old = self.tail.get(..self.tail_len).unwrap_or_default();
        let new = bytes
            .get(bytes.len().saturating_sub(4)..)
            .unwrap_or_default();
        let n = old.len() + new.len();
        if let Some(slot) = joined.get_mut(..old.len()) {
            slot.copy_from_slice(old);
        }
        if let Some(slot) = joined.get_mut(old.len()..n) {
            slot.copy_from_slice(new);
        }
        let last = joined.get(n.saturating_sub(4)..n).unwrap_or_default();
        self.tail_len = last.len();
        if let Some(slot) = self.tail.get_mut(..last.len()) {
            slot.copy_from_slice(last);
        }
    }

    /// Whether the bytes passed end with a word character.
    fn after_word(&self) -> bool {
        crate::parse::atfunc::last_char_is_ident(self.tail.get(..self.tail_len).unwrap_or_default())
    }

    /// Scans `data` (which starts at `base`) as far as it goes; returns how many leading
    /// bytes are released.
    pub(crate) fn run(
        &mut self,
        w: &mut Window,
        data: &[u8],
        out: &mut Vec<Event>,
        eof: bool,
    ) -> usize {
        loop {
            let switched = if self.block.is_some() {
                self.scan_block(w, data, out, eof)
            } else {
                self.text(w, data, out, eof)
            };
            if !switched {
                break;
            }
        }
        if eof {
            // The answer ended: what was held goes out, as calls if only calls stood in it.
            if let Some(u) = self.untagged_calls.as_mut() {
                u.release(out);
            }
        }
        let keep = if self.block.is_some() && !self.skipping {
            self.cand
        } else {
            self.text_start
        };
        w.at_clamped(keep).min(data.len())
    }

    /// Text: release everything before the next opening marker. Returns whether a block
    /// opened.
    fn text(&mut self, w: &mut Window, data: &[u8], out: &mut Vec<Event>, eof: bool) -> bool {
        // `auto` looks for every dialect's markers to the end: some open after another
        // dialect was seen.
        // With the offered tools known, a backtick may open a fence around an untagged call.
        let first: &[u8] = if self.untagged {
            b"<{[`"
        } else if self.auto() && w.config.offered.is_some() {
            b"<[{@`"
        } else {
            auto::first_bytes(if self.auto() { None } else { self.chosen })
        };
        // For `auto`: the index in `data` of the next of the first three bytes at or after
        // the last search (`None`: none up to the end), once searched. An `@` before it that
        // opens nothing (an e-mail address) moves `pos` on, and the search resumes before
        // this, which it does not need to look for again.
        let mut next_three: Option<Option<usize>> = None;
        loop {
            let from = w.at_clamped(self.pos);
            let rest = data.get(from..).unwrap_or_default();
            let hit = match first {
                [a] => memchr::memchr(*a, rest),
                [a, b] => memchr::memchr2(*a, *b, rest),
                [a, b, c] => memchr::memchr3(*a, *b, *c, rest),
                // `auto`'s bytes past the third (`@`, and a fence's backtick) are looked for
                // only before the first of the others.
                [a, b, c, more @ ..] => {
                    let next = match next_three {
                        Some(next) if next.is_none_or(|at| at >= from) => next,
                        _ => memchr::memchr3(*a, *b, *c, rest).map(|k| from + k),
                    };
                    next_three = Some(next);
                    let hit = next.map(|at| at - from);
                    let before = rest.get(..hit.unwrap_or(rest.len())).unwrap_or_default();
                    match more {
                        [d] => memchr::memchr(*d, before),
                        [d, e, ..] => memchr::memchr2(*d, *e, before),
                        [] => None,
                    }
                    .or(hit)
                }
                [] => None,
            };
            let Some(k) = hit else {
                w.steps += rest.len() as u64;
                self.pos = w.abs(data.len());
                self.pass_to(w, data, self.pos);
                let start = w.at_clamped(self.text_start);
                let released = self.release(w, data, start, data.len(), out, eof);
                self.text_start = w.abs(released);
                return false;
            };
            w.steps += k as u64 + 1;
            let i = w.abs(from + k);
            let input = Input {
                data,
                base: w.base,
                eof,
            };
            // Whether the answer holds prose decides whether an untagged block may open
            // here: the text before the candidate is taken into account first.
            self.shape_to(w, data, i, out);
            let prose = self.untagged_calls.as_ref().is_some_and(|u| u.prose());
            let opens = if self.auto() {
                self.pass_to(w, data, i);
                let ctx = auto::Context {
                    offered: w.config.offered.as_ref(),
                    seen: self.chosen,
                    line_text: self.line_text,
                    after_blank: self.after_blank,
                    after_word: self.after_word(),
                    prose,
                };
                auto::guess(ctx, &input, i)
            } else if self.untagged && matches!(input.byte(i), Some(b'{' | b'[' | b'`')) {
                self.pass_to(w, data, i);
                // Only at the start of a line, and only while the answer holds no prose.
                let line_text = self.line_text || prose;
                match &w.config.offered {
                    Some(offered) if input.byte(i) == Some(b'`') => {
                        auto::fenced_untagged(&input, i, offered, line_text)
                    }
                    Some(offered) => auto::untagged(&input, i, offered, line_text),
                    None => Opens::No,
                }
            } else if prose && auto::is_bare(&input, i) {
                // Llama 3's bare object or a Python list after prose: text.
                Opens::No
            } else {
                auto::opens(self.chosen, &input, i)
            };
            match opens {
                Opens::No => self.pos = i + 1,
                Opens::Need => {
                    let start = w.at_clamped(self.text_start);
                    let released = self.release(w, data, start, from + k, out, true);
                    self.text_start = w.abs(released);
                    self.pos = i;
                    return false;
                }
                Opens::Yes { block, from: next } => {
                    let start = w.at_clamped(self.text_start);
                    self.release(w, data, start, from + k, out, true);
                    self.block = Some(block);
                    self.cand = i;
                    w.steps += next - i;
                    self.pos = next;
                    return true;
                }
            }
        }
    }

    /// Inside a block. Returns whether it ended (as calls or as a malformed span).
    fn scan_block(&mut self, w: &mut Window, data: &[u8], out: &mut Vec<Event>, eof: bool) -> bool {
        let max_depth = w.config.depth_limit();
        let input = Input {
            data,
            base: w.base,
            eof,
        };
        let Some(block) = self.block.as_mut() else {
            return false;
        };
        let mut pos = self.pos;
        let step = block.scan(&input, &mut pos, max_depth);
        w.steps += pos.saturating_sub(self.pos);
        self.pos = pos.max(self.pos);
        let limit = w.call_limit(self.cand);
        if self.skipping {
            return self.skip(w, data, out, step, eof);
        }
        match step {
            Step::Need if self.pos > limit => return self.over_limit(w, data, out, step, eof),
            Step::Need if eof => {
                // Asked only here: a call through the box on every feed costs a 1-byte feed.
                let what = self.block.as_ref().map_or("", |b| b.awaits()).to_owned();
                self.malformed(
                    w,
                    data,
                    out,
                    input.end(),
                    ParseErrorKind::Unterminated { what },
                );
            }
            Step::Need => return false,
            // What was found is told whole: a character cut off waits for its next bytes,
            // and the scanner, which stopped at it, looks at it again.
            Step::Fail(_, at) if input.cut_char(at) => return false,
            // Past the limit, the limit is the reason, whichever chunk the failure came in.
            Step::Fail(_, at) if at >= limit => return self.over_limit(w, data, out, step, eof),
            Step::Fail(kind, at) => self.malformed(w, data, out, at, kind),
            Step::Done(end) if end > limit => return self.over_limit(w, data, out, step, eof),
            Step::Done(end) => self.complete(w, data, out, end, eof),
        }
        true
    }

    /// The block under way went over the call limit: it is malformed up to the limit, and
    /// the scanner runs on to its end (see `skipping`). `step` is what the scanner answered.
    fn over_limit(
        &mut self,
        w: &mut Window,
        data: &[u8],
        out: &mut Vec<Event>,
        step: Step,
        eof: bool,
    ) -> bool {
        let limit = w.call_limit(self.cand);
        let kind = ParseErrorKind::CallTooLong {
            limit: w.config.max_call_len,
        };
        self.give_back_lead(w, data, out);
        let scanned = self.pos;
        let block = self.block.take();
        let untagged = block.as_ref().is_some_and(|b| b.untagged());
        self.malformed_block(w, data, out, limit, kind, untagged);
        // `malformed` left `text_start` where the span ends; the scanner resumes where it was.
        self.block = block;
        self.pos = scanned.max(self.text_start);
        self.skipping = true;
        self.skip(w, data, out, step, eof)
    }

    /// What the scanner of a block past the limit answered: where the block ends, or that
    /// it goes on (its bytes so far are text). Returns whether the block ended.
    fn skip(
        &mut self,
        w: &mut Window,
        data: &[u8],
        out: &mut Vec<Event>,
        step: Step,
        eof: bool,
    ) -> bool {
        let input = Input {
            data,
            base: w.base,
            eof,
        };
        match step {
            Step::Need if !eof => {
                let upto = self.pos.saturating_sub(SKIP_HOLD).max(self.text_start);
                self.pass_to(w, data, upto);
                let start = w.at_clamped(self.text_start);
                let released = self.release(w, data, start, w.at_clamped(upto), out, false);
                self.text_start = w.abs(released);
                return false;
            }
            Step::Fail(_, at) if input.cut_char(at) => return false,
            // The bytes up to the end of the input or up to where the block broke are text,
            // released by the text mode, which reads on from there.
            Step::Need => {
                self.block = None;
                self.pos = input.end();
            }
            Step::Fail(_, at) => {
                self.block = None;
                self.pos = at.max(self.text_start);
            }
            Step::Done(end) => {
                let end = end.max(self.text_start);
                self.pass_to(w, data, end);
                let start = w.at_clamped(self.text_start);
                let released = self.release(w, data, start, w.at_clamped(end), out, true);
                self.text_start = w.abs(released);
                self.pos = end;
                // The next link of a chain is a call of its own.
                match self.block.take().and_then(|mut block| block.chained()) {
                    Some((next, from)) => {
                        self.block = Some(next);
                        self.cand = end;
                        self.pos = from;
                    }
                    None => self.block = None,
                }
            }
        }
        self.skipping = false;
        true
    }

    /// The lead-in of the block under way (see [`BlockScan::lead`]) is text: it is released
    /// and the block starts after it. Once given back, `cand` is past it and this does
    /// nothing.
    fn give_back_lead(&mut self, w: &mut Window, data: &[u8], out: &mut Vec<Event>) {
        let Some(start) = self.block.as_ref().and_then(|b| b.lead()) else {
            return;
        };
        if start <= self.cand {
            return;
        }
        // The lead-in is a fence line, ASCII: released whole.
        let from = w.at_clamped(self.cand);
        self.release(
            w,
            data,
            from,
            w.at_clamped(start).min(data.len()),
            out,
            true,
        );
        self.pass_to(w, data, start);
        self.cand = start;
    }

    /// The block `cand..end` is complete: hand out its calls.
    fn complete(&mut self, w: &mut Window, data: &[u8], out: &mut Vec<Event>, end: u64, eof: bool) {
        // A block with a lead-in that ends with its call has no closing part: the lead-in
        // is text. When the calls fail, the span is the call's (`malformed` gives the
        // lead-in back), and what followed it is text.
        let call_end = self.block.as_ref().and_then(|b| b.call_end());
        if call_end.is_some_and(|e| e >= end) {
            self.give_back_lead(w, data, out);
        }
        let fail_at = call_end.map_or(end, |e| e.min(end));
        let bytes = data
            .get(w.at_clamped(self.cand)..w.at_clamped(end))
            .unwrap_or_default();
        // Checked with SIMD: blocks are whole calls, and some dialects' markers are not ASCII.
        let block_text = match valid_utf8(bytes) {
            Ok(text) => text,
            Err(stop) => {
                let valid = stop.valid.len();
                // Invalid UTF-8 is never part of a call: the block ends before it.
                let at = self.cand + valid as u64;
                let kind = ParseErrorKind::Unexpected {
                    expected: "valid UTF-8".to_owned(),
                    found: format!(
                        "byte 0x{:02X}",
                        bytes.get(valid).copied().unwrap_or_default()
                    ),
                };
                self.malformed(w, data, out, at, kind);
                return;
            }
        };
        let input = Input {
            data,
            base: w.base,
            eof,
        };
        let built = match self.block.as_ref() {
            Some(block) => block.build(&input, self.cand, end),
            None => return,
        };
        let calls = match built {
            Ok(calls) if calls.is_empty() => Err(("a call".to_owned(), "none".to_owned())),
            other => other,
        };
        let max_args = w.config.max_args;
        let too_many = |calls: &Vec<Built>| {
            calls
                .iter()
                .any(|c| c.positional.len() + c.named.len() > max_args)
        };
        if calls.as_ref().is_ok_and(too_many) {
            let kind = ParseErrorKind::TooManyArgs { limit: max_args };
            self.malformed(w, data, out, fail_at, kind);
            return;
        }
        match calls {
            Ok(calls) => {
                let n = calls.len();
                let mut start = self.cand;
                let mut events = Vec::with_capacity(2 * n);
                for (k, built) in calls.into_iter().enumerate() {
                    let stop = if k + 1 == n {
                        end
                    } else {
                        built.end.clamp(start, end)
                    };
                    events.push(Event::CallStarted {
                        name: built.name.clone(),
                        start,
                    });
                    let span = w.span(data, start, stop);
                    events.push(Event::Call(Call {
                        name: built.name,
                        positional: built.positional,
                        named: built.named,
                        body: None,
                        span,
                    }));
                    start = stop;
                }
                let chose = self.chosen.is_none();
                if chose {
                    self.chosen = self.block.as_ref().map(|b| b.dialect());
                }
                let untagged = self.block.as_ref().is_some_and(|b| b.untagged());
                self.emit_block(w, events, block_text, end, untagged, chose, out);
                self.pass_to(w, data, end);
                self.text_start = end;
                self.pos = end;
                // The next link of a chain opens where this one ends, so that the chain's
                // spans still cover it.
                match self.block.take().and_then(|mut block| block.chained()) {
                    Some((next, from)) => {
                        w.steps += from.saturating_sub(end);
                        self.block = Some(next);
                        self.cand = end;
                        self.pos = from;
                    }
                    None => self.block = None,
                }
            }
            Err((expected, found)) => {
                self.malformed(
                    w,
                    data,
                    out,
                    fail_at,
                    ParseErrorKind::Unexpected { expected, found },
                );
            }
        }
    }

    /// Reports `cand..at` as malformed and resumes in text at `at`.
    fn malformed(
        &mut self,
        w: &mut Window,
        data: &[u8],
        out: &mut Vec<Event>,
        at: u64,
        kind: ParseErrorKind,
    ) {
        let untagged = self.block.as_ref().is_some_and(|b| b.untagged());
        self.malformed_block(w, data, out, at, kind, untagged);
    }

    /// [`malformed`](Self::malformed) for a block that was `untagged` (or not), whether or
    /// not it is still under way.
    fn malformed_block(
        &mut self,
        w: &mut Window,
        data: &[u8],
        out: &mut Vec<Event>,
        at: u64,
        kind: ParseErrorKind,
        untagged: bool,
    ) {
        self.give_back_lead(w, data, out);
        // Invalid UTF-8 is never part of a call: a span holding some ends before it, with
        // that as the reason (as in the atfunc parser).
        let mut kind = kind;
        let mut at = at;
        let held = data
            .get(w.at_clamped(self.cand)..w.at_clamped(at).min(data.len()))
            .unwrap_or_default();
        if let Err(e) = std::str::from_utf8(held) {
            if e.error_len().is_some() && e.valid_up_to() > 0 {
                let bad = held.get(e.valid_up_to()).copied().unwrap_or_default();
                at = self.cand + e.valid_up_to() as u64;
                kind = ParseErrorKind::Unexpected {
                    expected: "valid UTF-8".to_owned(),
                    found: format!("byte 0x{bad:02X}"),
                };
            }
        }
        // Past the opening byte at least, so that the same marker is not read again.
        let mut at = at.max(self.cand + 1);
        // Inside a valid character (a limit can fall there), back to its first byte, so
        // that the text after the span is whole characters. Only the bytes up to `at` are
        // looked at: what follows may not have arrived, and must not change the span.
        let i = w.at_clamped(at);
        if data.get(i).is_some_and(|b| b & 0xC0 == 0x80) {
            for back in 1..=3usize {
                let Some(&lead) = i.checked_sub(back).and_then(|j| data.get(j)) else {
                    break;
                };
                if lead & 0xC0 != 0x80 {
                    let len = match lead {
                        0xF0.. => 4,
                        0xE0.. => 3,
                        0xC0.. => 2,
                        _ => 1,
                    };
                    if len > back && at - back as u64 > self.cand {
                        at -= back as u64;
                    }
                    break;
                }
            }
        }
        let span_bytes = data
            .get(w.at_clamped(self.cand)..w.at_clamped(at))
            .unwrap_or_default();
        let text = String::from_utf8_lossy(span_bytes).into_owned();
        let span = w.span(data, self.cand, at);
        // Every malformed span answers a started call, as in the atfunc parser; a block
        // that broke may not have a readable name, so none is given.
        let events = vec![
            Event::CallStarted {
                name: String::new(),
                start: self.cand,
            },
            Event::Malformed {
                span,
                error: ParseError::new(kind, span.end_point()),
                text: text.clone(),
            },
        ];
        self.emit_block(w, events, &text, at, untagged, false, out);
        self.pass_to(w, data, at);
        self.block = None;
        self.text_start = at;
        self.pos = at;
    }
}
