//! The atfunc engine of the [`StreamParser`](super::StreamParser): a state machine over the
//! scanners of `scan`, which finds `@name(args)` calls (and their `with_body` blocks) in the
//! bytes it is given and hands each complete one to the grammar of `syntax` once.

use super::prose::{self, Ascii};
use super::release::{release_ascii, release_ascii_copied, valid_utf8};
use super::scan::{self, ArgScan, BodyScan, BodyStep, Gap, GapStep, Step, Unit};
use super::syntax;
use super::types::{Bodies, Call, Event, ParseError, ParseErrorKind};
use super::window::Window;
use std::ops::Range;

/// The most bytes from `)` to the `[[` of a `with_body` block; past it, `)` ended the call.
const MAX_GAP: u64 = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Plain text; `text_start..pos` is scanned but not yet released.
    Text,
    /// After an `@`: reading a name.
    Name,
    /// After `@name(`: scanning the arguments.
    Args,
    /// After the `)` of a call that may have a body: deciding whether `with_body [[`
    /// follows on the same line.
    AfterClose,
    /// Inside `[[ ... ]]`.
    Body,
}

/// The state of the atfunc engine between two runs. Every offset is absolute; the bytes
/// held start at the candidate's `@` in every mode but text, and at `text_start` in text.
#[derive(Debug)]
pub(super) struct Reader {
    mode: Mode,
    /// The next byte to scan; bytes before it are never scanned again.
    pos: u64,
    /// In text mode, the first byte not yet released.
    text_start: u64,
    /// The `@` of the current candidate.
    cand: u64,
    /// The `(` after the name.
    name_end: u64,
    /// One past the `)`.
    close_end: u64,
    /// The first byte after `[[`.
    body_start: u64,
    /// Whether the last name character read was a dot (or none was read yet).
    dot_last: bool,
    args: ArgScan,
    gap: Gap,
    body: BodyScan,
    /// Whether the byte before `text_start` ends an identifier character (then an `@` right
    /// there is prose, as in `bob@example.com`).
    prev_ident: bool,
    /// A copy made while searching (see `Copied`) that no text took (the text was not
    /// ASCII): its room serves the next search, so prose that is not ASCII pays no
    /// allocation for it. At most [`COPY_MAX`] bytes of room.
    spare: String,
}

impl Reader {
    /// The engine at the start of a stream.
    pub(super) fn new() -> Reader {
        Reader {
            mode: Mode::Text,
            pos: 0,
            text_start: 0,
            cand: 0,
            name_end: 0,
            close_end: 0,
            body_start: 0,
            dot_last: true,
            args: ArgScan::new(),
            gap: Gap::Blank,
            body: BodyScan::default(),
            prev_ident: false,
            spare: String::new(),
        }
    }

    /// The common case of a long call: inside a string, every byte held is scanned and the
    /// chunk holds no quote, no backslash and only whole characters. Then the chunk is
    /// plain string content, and scanning it would only move `pos`: append it to `held`
    /// and return true. Anything else (including the call limit falling inside the chunk)
    /// is left to the scanner.
    #[inline]
    pub(super) fn extends_string(
        &mut self,
        w: &mut Window,
        held: &mut Vec<u8>,
        chunk: &[u8],
    ) -> bool {
        let scan::ArgState::Str {
            quote,
            escape: false,
            ..
        } = self.args.state
        else {
            return false;
        };
        // `held` starts at the candidate's `@` in every mode but text.
        let held_end = w.abs(held.len());
        let len = chunk.len() as u64;
        if self.mode != Mode::Args
            || held.is_empty()
            || self.pos != held_end
            || self.pos + len > w.call_limit(self.cand)
            || !scan::plain_string_bytes(chunk, quote)
        {
            return false;
        }
        held.extend_from_slice(chunk);
        self.pos += len;
        w.steps += len;
        true
    }

    /// Scans `data` (starting at absolute offset `w.base`) as far as it goes and returns
    /// how many leading bytes are released and need not be kept.
    pub(super) fn run(
        &mut self,
        w: &mut Window,
        data: &[u8],
        out: &mut Vec<Event>,
        eof: bool,
    ) -> usize {
        loop {
            let switched = match self.mode {
                Mode::Text => self.text(w, data, out, eof),
                Mode::Name => self.name(w, data, out, eof),
                Mode::Args => self.scan_args(w, data, out, eof),
                Mode::AfterClose => self.after_close(w, data, out, eof),
                Mode::Body => self.scan_body(w, data, out, eof),
            };
            if !switched {
                break;
            }
        }
        let keep = match self.mode {
            Mode::Text => self.text_start,
            _ => self.cand,
        };
        w.at(keep)
    }

    /// Text: release everything up to the next `@` that may start a call. Returns whether
    /// the mode changed (else all of `data` is consumed).
    fn text(&mut self, w: &mut Window, data: &[u8], out: &mut Vec<Event>, eof: bool) -> bool {
        // The bytes seen to be ASCII while looking for `@`, as one run that ends at `pos`:
        // text released from inside it goes out without another look at its bytes.
        let mut seen: Option<Ascii<'_>> = None;
        // The first search, when it starts where the text to release does, copies the run
        // as it goes: that text is then released with no pass of its own (see `Copied`).
        let mut copied: Option<Copied> = None;
        loop {
            let from = w.at(self.pos);
            let rest = data.len().saturating_sub(from);
            let skim = if seen.is_none()
                && w.at(self.text_start) == from
                && (COPY_MIN..=COPY_MAX).contains(&rest)
            {
                let mut text = std::mem::take(&mut self.spare);
                let skim = prose::skim_into(data, from, &mut text);
                copied = Some(Copied { start: from, text });
                skim
            } else {
                prose::skim(data, from)
            };
            seen = extend(seen, skim.ascii);
            let Some(k) = skim.at else {
                w.steps += data.len().saturating_sub(from) as u64;
                self.pos = w.abs(data.len());
                let start = w.at(self.text_start);
                let released = self.emit_text(w, data, start..data.len(), out, eof, seen, copied);
                self.text_start = w.abs(released);
                return false;
            };
            w.steps += k as u64 + 1;
            let at = from + k;
            let start = w.at(self.text_start);
            let prev_ident = if at > start {
                last_char_is_ident(data.get(start..at).unwrap_or_default())
            } else {
                self.prev_ident
            };
            if prev_ident {
                self.pos = w.abs(at) + 1;
                // The `@` is ASCII too: the run goes on past it.
                if let Some(at_sign) = Ascii::check(data, at, at + 1) {
                    seen = extend(seen, at_sign);
                }
                continue;
            }
            self.emit_text(w, data, start..at, out, true, seen, copied);
            self.cand = w.abs(at);
            self.pos = self.cand + 1;
            self.dot_last = true;
            self.mode = Mode::Name;
            return true;
        }
    }

    /// The candidate is text after all: go back to text mode at its `@`.
    fn not_a_call(&mut self) -> bool {
        self.mode = Mode::Text;
        self.text_start = self.cand;
        true
    }

    /// name = ident , { "." , ident } ;  then "(".
    fn name(&mut self, w: &mut Window, data: &[u8], out: &mut Vec<Event>, eof: bool) -> bool {
        loop {
            let i = w.at(self.pos);
            if i >= data.len() {
                return if eof { self.not_a_call() } else { false };
            }
            if self.pos - self.cand >= w.config.max_call_len as u64 {
                return self.not_a_call();
            }
            // ASCII identifier characters in one loop, up to the call limit.
            let room = w.config.max_call_len as u64 - (self.pos - self.cand);
            let run = data
                .get(i..)
                .unwrap_or_default()
                .iter()
                .take(usize::try_from(room).unwrap_or(usize::MAX))
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                .count();
            if run > 0 {
                self.dot_last = false;
                self.pos += run as u64;
                w.steps += run as u64;
                continue;
            }
            w.steps += 1;
            match scan::unit(data, i, eof) {
                Unit::Need => return false,
                Unit::Char('(', _) if !self.dot_last => {
                    self.name_end = self.pos;
                    self.pos += 1;
                    let name = lossy(data, w.at(self.cand) + 1, i);
                    out.push(Event::CallStarted {
                        name,
                        start: self.cand,
                    });
                    self.args.reset();
                    self.mode = Mode::Args;
                    return true;
                }
                Unit::Char('.', _) if !self.dot_last => {
                    self.dot_last = true;
                    self.pos += 1;
                }
                Unit::Char(c, n) if syntax::is_ident_char(c) => {
                    self.dot_last = false;
                    self.pos += n as u64;
                }
                _ => return self.not_a_call(),
            }
        }
    }

    /// The arguments, `(` to `)`.
    fn scan_args(&mut self, w: &mut Window, data: &[u8], out: &mut Vec<Event>, eof: bool) -> bool {
        let limit = w.call_limit(self.cand);
        let max_depth = w.config.depth_limit();
        let max_args = w.config.max_args;
        loop {
            let i = w.at(self.pos);
            if i >= data.len() {
                if !eof {
                    return false;
                }
                let what = self.args.open_construct().to_owned();
                let end = w.abs(data.len());
                self.malformed(w, data, out, end, ParseErrorKind::Unterminated { what });
                return true;
            }
            // Runs that leave the scanner's state as it is (string content, a bare word,
            // whitespace) are skipped in bulk, up to the call limit.
            let end = data.len().min(w.at(limit.max(self.pos)));
            let hay = data.get(i..end).unwrap_or_default();
            let skip = if let scan::ArgState::Str {
                quote,
                escape: false,
                ..
            } = self.args.state
            {
                // Long strings are the common case of long calls: validate them as UTF-8
                // once.
                let k = memchr::memchr2(quote, b'\\', hay).unwrap_or(hay.len());
                let plain = hay.get(..k).unwrap_or_default();
                match valid_utf8(plain) {
                    Ok(_) => k,
                    Err(stop) => stop.valid.len(),
                }
            } else {
                self.args.plain_run(hay)
            };
            if skip > 0 {
                w.steps += skip as u64;
                self.pos += skip as u64;
                continue;
            }
            let (c, len) = match scan::unit(data, i, eof) {
                Unit::Need => return false,
                Unit::Bad => {
                    self.invalid_in_call(w, data, out, i);
                    return true;
                }
                Unit::Char(c, len) => (c, len as u64),
            };
            if self.pos + len > limit {
                let at = self.pos;
                let kind = ParseErrorKind::CallTooLong {
                    limit: w.config.max_call_len,
                };
                self.malformed(w, data, out, at, kind);
                return true;
            }
            w.steps += 1;
            match self.args.step(c, self.pos, max_depth, max_args) {
                Ok(Step::Next) => self.pos += len,
                Ok(Step::Again) => {}
                Ok(Step::Done) => {
                    self.pos += len;
                    self.close_end = self.pos;
                    if self.may_have_body(w, data) {
                        self.gap = Gap::Blank;
                        self.mode = Mode::AfterClose;
                    } else {
                        // Nothing that follows can belong to this call: out with it now,
                        // not when the next bytes arrive.
                        self.complete(w, data, out, None);
                    }
                    return true;
                }
                Err((kind, at)) => {
                    self.malformed(w, data, out, at, kind);
                    return true;
                }
            }
        }
    }

    /// Whether the call whose `)` was just read may have a `with_body` block, by its name.
    fn may_have_body(&self, w: &Window, data: &[u8]) -> bool {
        match &w.config.bodies {
            Bodies::Any => true,
            Bodies::None => false,
            bodies => {
                let name = data
                    .get(w.at(self.cand) + 1..w.at(self.name_end))
                    .unwrap_or_default();
                // A name is whole characters; were it not, holding the call is the safe side.
                std::str::from_utf8(name).map_or(true, |name| bodies.allows(name))
            }
        }
    }

    /// After `)`: hold the gap until it is clear whether `with_body [[` follows.
    fn after_close(
        &mut self,
        w: &mut Window,
        data: &[u8],
        out: &mut Vec<Event>,
        eof: bool,
    ) -> bool {
        loop {
            let i = w.at(self.pos);
            let Some(&b) = data.get(i) else {
                if eof {
                    self.complete(w, data, out, None);
                    return true;
                }
                return false;
            };
            w.steps += 1;
            let step = if self.pos - self.close_end >= MAX_GAP {
                GapStep::NotBody
            } else {
                self.gap.step(b)
            };
            match step {
                GapStep::Next(gap) => {
                    self.gap = gap;
                    self.pos += 1;
                }
                GapStep::Body => {
                    self.pos += 1;
                    self.body_start = self.pos;
                    self.body = BodyScan::default();
                    self.mode = Mode::Body;
                    return true;
                }
                GapStep::NotBody => {
                    self.complete(w, data, out, None);
                    return true;
                }
            }
        }
    }

    /// body_text , "]]"
    fn scan_body(&mut self, w: &mut Window, data: &[u8], out: &mut Vec<Event>, eof: bool) -> bool {
        let limit = w.call_limit(self.cand);
        let body_limit = self.body_start.saturating_add(w.config.max_body_len as u64);
        let max_body_len = w.config.max_body_len;
        let max_depth = w.config.depth_limit();
        loop {
            let i = w.at(self.pos);
            if i >= data.len() {
                if !eof {
                    return false;
                }
                let end = w.abs(data.len());
                let what = "body".to_owned();
                self.malformed(w, data, out, end, ParseErrorKind::Unterminated { what });
                return true;
            }
            // Plain body text in one loop, up to both limits.
            let end = data.len().min(w.at(limit.min(body_limit).max(self.pos)));
            let skip = self.body.plain_run(data.get(i..end).unwrap_or_default());
            if skip > 0 {
                self.body.pending = false;
                w.steps += skip as u64;
                self.pos += skip as u64;
                continue;
            }
            let (c, len) = match scan::unit(data, i, eof) {
                Unit::Need => return false,
                Unit::Bad => {
                    self.invalid_in_call(w, data, out, i);
                    return true;
                }
                Unit::Char(c, len) => (c, len as u64),
            };
            let pos = self.pos;
            if pos + len > limit {
                let kind = ParseErrorKind::CallTooLong {
                    limit: w.config.max_call_len,
                };
                self.malformed(w, data, out, pos, kind);
                return true;
            }
            w.steps += 1;
            let room = || {
                if pos + len > body_limit {
                    Err((
                        ParseErrorKind::BodyTooLong {
                            limit: max_body_len,
                        },
                        pos,
                    ))
                } else {
                    Ok(())
                }
            };
            match self.body.step(c, pos, max_depth, room) {
                Ok(BodyStep::Next) => self.pos += len,
                Ok(BodyStep::End) => {
                    self.pos += len;
                    // `pos - 1` is the first `]` of the closing pair.
                    let body = (self.body_start, pos - 1);
                    self.complete(w, data, out, Some(body));
                    return true;
                }
                Err((kind, at)) => {
                    self.malformed(w, data, out, at, kind);
                    return true;
                }
            }
        }
    }

    /// Emits the finished call (`cand..close_end`, plus the body if any) and goes back to
    /// text right after it.
    fn complete(
        &mut self,
        w: &mut Window,
        data: &[u8],
        out: &mut Vec<Event>,
        body: Option<(u64, u64)>,
    ) {
        let end = if body.is_some() {
            self.pos
        } else {
            self.close_end
        };
        let text = data
            .get(w.at(self.cand)..w.at(self.close_end))
            .unwrap_or_default();
        let parsed = std::str::from_utf8(text)
            .map_err(|e| e.valid_up_to())
            .and_then(|s| syntax::parse_call(s, w.config.depth_limit()));
        match parsed {
            Ok(p) => {
                let body = body.map(|(a, b)| lossy(data, w.at(a), w.at(b)));
                let span = w.span(data, self.cand, end);
                out.push(Event::Call(Call {
                    name: p.name,
                    positional: p.positional,
                    named: p.named,
                    body,
                    span,
                }));
                self.mode = Mode::Text;
                self.text_start = end;
                self.pos = end;
                self.prev_ident = false;
            }
            Err(offset) => {
                // The scanner accepts exactly the grammar's language; reaching this is a bug,
                // reported as a malformed span rather than a panic.
                debug_assert!(
                    false,
                    "grammar refused a scanned call: {text:?} at {offset}"
                );
                let at = (self.cand + offset as u64).max(self.name_end + 1);
                let kind = ParseErrorKind::Unexpected {
                    expected: "a call".to_owned(),
                    found: "text the grammar does not accept".to_owned(),
                };
                self.malformed(w, data, out, at, kind);
            }
        }
    }

    /// Ends the candidate as malformed at the invalid byte `data[i]` (at `self.pos`): invalid
    /// UTF-8 is never part of a call.
    fn invalid_in_call(&mut self, w: &mut Window, data: &[u8], out: &mut Vec<Event>, i: usize) {
        let at = self.pos;
        let byte = data.get(i).copied().unwrap_or_default();
        self.malformed(
            w,
            data,
            out,
            at,
            ParseErrorKind::Unexpected {
                expected: "valid UTF-8".to_owned(),
                found: format!("byte 0x{byte:02X}"),
            },
        );
    }

    /// Reports `cand..at` as malformed and resumes scanning text at `at`.
    fn malformed(
        &mut self,
        w: &mut Window,
        data: &[u8],
        out: &mut Vec<Event>,
        at: u64,
        kind: ParseErrorKind,
    ) {
        let (start, end) = (w.at(self.cand), w.at(at));
        let span_bytes = data.get(start..end).unwrap_or_default();
        let span = w.span(data, self.cand, at);
        out.push(Event::Malformed {
            span,
            error: ParseError::new(kind, span.end_point()),
            text: String::from_utf8_lossy(span_bytes).into_owned(),
        });
        self.prev_ident = last_char_is_ident(span_bytes);
        self.mode = Mode::Text;
        self.text_start = at;
        self.pos = at;
    }

    /// Releases `data[from..to]` as text and invalid-UTF-8 events; without another look at
    /// the bytes when they lie in `seen`, bytes seen to be ASCII, and without copying them
    /// again when `copied` holds them.
    #[allow(clippy::too_many_arguments)]
    fn emit_text(
        &mut self,
        w: &mut Window,
        data: &[u8],
        Range {
            start: from,
            end: to,
        }: Range<usize>,
        out: &mut Vec<Event>,
        last: bool,
        seen: Option<Ascii<'_>>,
        copied: Option<Copied>,
    ) -> usize {
        let ascii = seen
            .filter(|_| from < to)
            .and_then(|run| run.within(from, to));
        let fits = copied
            .as_ref()
            .is_some_and(|c| c.start == from && to.saturating_sub(from) <= c.text.len());
        let i = match (ascii, copied) {
            (Some(text), Some(copy)) if fits => {
                let mut copy = copy.text;
                copy.truncate(text.len());
                // The room was the whole rest of the piece: what the text does not use
                // goes back when that is most of it.
                if copy.capacity() > 2 * copy.len() + 64 {
                    copy.shrink_to_fit();
                }
                release_ascii_copied(text, copy, w.base, out, &mut w.chars)
            }
            (ascii, copy) => {
                if let Some(copy) = copy {
                    self.spare = copy.text;
                }
                match ascii {
                    Some(text) => release_ascii(text, w.base, out, &mut w.chars),
                    None => w.release(data, from, to, out, last),
                }
            }
        };
        if i > from {
            self.prev_ident = last_char_is_ident(data.get(from..i).unwrap_or_default());
        }
        i
    }
}

/// Pieces of at most this many bytes from where text starts are copied while they are
/// searched: the copy gets room for the whole rest of the piece before the search knows
/// where the text ends, so a bigger piece (a whole answer at once) is searched, then
/// copied.
const COPY_MAX: usize = 16 * 1024;

/// ... and of at least this many: shorter ones are not searched with vectors, and a copy
/// made ahead would be an allocation for nothing when the first byte starts a call.
const COPY_MIN: usize = 64;

/// The ASCII bytes a search passed, copied as it went: `text` is `data[start..]` up to
/// the search's stop (a prefix of the run it returned).
#[derive(Debug)]
struct Copied {
    start: usize,
    text: String,
}

/// The run of ASCII bytes `seen` continued by `next`, when `next` starts where it ends;
/// else `next` alone (a run that stops short of the scan covers no text still held).
fn extend<'a>(seen: Option<Ascii<'a>>, next: Ascii<'a>) -> Option<Ascii<'a>> {
    Some(seen.and_then(|run| run.then(next)).unwrap_or(next))
}

/// `data[from..to]` as a string, invalid UTF-8 replaced.
fn lossy(data: &[u8], from: usize, to: usize) -> String {
    let bytes = data.get(from..to).unwrap_or_default();
    // Names and bodies are almost always valid: checking first skips the slower lossy path.
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// Whether `bytes` ends with a whole identifier character.
#[inline]
pub(super) fn last_char_is_ident(bytes: &[u8]) -> bool {
    match bytes.last() {
        None => false,
        Some(&last) if last < 0x80 => last.is_ascii_alphanumeric() || last == b'_',
        Some(_) => last_non_ascii_is_ident(bytes),
    }
}

/// [`last_char_is_ident`] for text that does not end in ASCII, kept out of line: the
/// function is asked at every `@` and every release of text.
#[inline(never)]
fn last_non_ascii_is_ident(bytes: &[u8]) -> bool {
    if bytes.is_empty() {
        return false;
    }
    // Walk back to the lead byte of the last character (at most 4 bytes).
    let mut start = bytes.len() - 1;
    while start > 0
        && bytes.len() - start < 4
        && (bytes.get(start).copied().unwrap_or(0) & 0xC0) == 0x80
    {
        start -= 1;
    }
    match std::str::from_utf8(bytes.get(start..).unwrap_or_default()) {
        Ok(s) => {
            let mut chars = s.chars();
            matches!((chars.next(), chars.next()), (Some(c), None) if syntax::is_ident_char(c))
        }
        Err(_) => false,
    }
}
