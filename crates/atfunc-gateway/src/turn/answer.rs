//! One client turn with tools, as a state machine without I/O: the upstream's text goes in
//! (whole, or delta by delta), text and tool calls for the client come out, and at the end
//! of each upstream answer it says whether to ask the model again (a repair round).
//!
//! The same machine serves streaming and non-streaming requests, so the deltas of a stream
//! add up to the answer of the same request made without `stream`.
//!
//! The model's text is read in the gateway's upstream dialect: atfunc's `@name(args)`, or
//! another model's own format (`<tool_call>` JSON, a Python list of calls, ...). In another
//! format the model names tools and parameters as the client defined them (binding finds
//! them by those names as well as by the ones atfunc gives them), and repair rounds never
//! show it atfunc's syntax; `tool_calls` the upstream sends itself are passed on as they
//! came, at the end of the answer.

use super::built::Grammar;
use super::constrain::{Grammars, UpstreamKind};
use super::conversation::{EchoCut, Since};
use super::request::Request;
use super::tools::ToolSet;
use atfunc::bind::{bind, CallKey, Repeats};
use atfunc::format::format_results;
use atfunc::format::{
    call_text, repair_note, truncate_text, unreadable_call_error, CallRecord, MissingCall,
    RepairOptions,
};
use atfunc::grammar::Choice;
use atfunc::interop::CallIds;
use atfunc::parse::{Call, Dialect, Event, StreamParser};
use serde_json::{Map, Value as Json};
use std::collections::HashSet;
use std::sync::Arc;

/// What the client is sent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Out {
    /// Text for `content`.
    Text(String),
    /// A tool call: a fresh id, the tool's name as the client wrote it, and the bound
    /// arguments, under the client's parameter names, as a JSON string.
    Call {
        /// `call_...`.
        id: String,
        /// The client's tool name.
        name: String,
        /// The bound, typed arguments, as JSON text.
        arguments: String,
    },
}

/// What follows the end of an upstream answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RoundEnd {
    /// Ask the model again: [`Turn::request`] holds the repair messages, or the first
    /// request again, sampled ([`Turn::resample`]).
    Repair,
    /// The turn is over.
    Done,
}

/// Which answer a round asks for. Every round after the first is quiet: its text is not
/// the client's, its calls are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Round {
    /// The request as the client sent it, prompted.
    First,
    /// The first request again, sampled ([`Turn::resample`]).
    Resample,
    /// The conversation with the last answer and what to fix in it.
    Repair,
    /// The conversation with its results, without the tools, asking for the answer in
    /// words ([`Turn::after_results`]): its text is the client's, its calls are dropped.
    Answer,
}

/// The most refused calls a repair round quotes.
const MAX_QUOTED_CALLS: usize = 20;

/// About the most bytes of refused calls and their errors a repair round quotes.
const MAX_QUOTED_BYTES: usize = 16 << 10;

/// The most characters of one refused call, and of its error, a repair round quotes.
const MAX_QUOTED_CALL_CHARS: usize = 2000;

/// The most calls one turn passes to the client. Each call becomes a `tool_calls` entry
/// tens of times the size of its text (an answer of 600k short calls was 191 MB to the
/// client and 1.4 GB held for a whole answer); calls past this are refused as any other.
pub(crate) const MAX_CALLS: usize = 1000;

/// The most bytes of an answer parsed at once.
const FEED_BYTES: usize = 64 << 10;

/// A call that is not passed to the client, as a repair round quotes it.
#[derive(Debug, Clone)]
struct Refused {
    /// The call as the result block shows it, without the `@`.
    shown: String,
    /// Why, worded for the model.
    error: String,
}

/// Holds back whitespace so that content neither starts nor ends with it and the space
/// around a call that was taken out is not doubled. Only whitespace is ever held.
#[derive(Debug, Default)]
pub(crate) struct Shaper {
    /// Whitespace after the text sent so far, not sent yet.
    pending: String,
    /// Whether any text was sent.
    started: bool,
    /// Whether a call was taken out since the last text.
    after_call: bool,
    /// Whether the next text starts a part of its own (`pending` holds the separator):
    /// its leading whitespace is dropped.
    fresh: bool,
}

impl Shaper {
    pub(crate) fn text(&mut self, text: &str, out: &mut Vec<Out>) {
        let body = text.trim_end();
        let tail = text.get(body.len()..).unwrap_or_default();
        if body.trim_start().is_empty() {
            if self.started && !self.fresh {
                self.pending.push_str(text);
            }
            return;
        }
        let mut piece = String::with_capacity(self.pending.len() + body.len());
        if !self.started {
            piece.push_str(body.trim_start());
        } else {
            let trimmed = body.trim_start();
            if self.after_call {
                // Where calls were taken out, their surroundings shrink to one separator.
                let lead = body.get(..body.len() - trimmed.len()).unwrap_or_default();
                let gap_has_newline = self.pending.contains('\n') || lead.contains('\n');
                if gap_has_newline {
                    piece.push('\n');
                } else if !self.pending.is_empty() || !lead.is_empty() {
                    piece.push(' ');
                }
                piece.push_str(trimmed);
            } else {
                piece.push_str(&self.pending);
                piece.push_str(if self.fresh { trimmed } else { body });
            }
        }
        self.pending = tail.to_owned();
        self.started = true;
        self.after_call = false;
        self.fresh = false;
        push_text(out, piece);
    }

    /// Notes that a call was taken out of the text here.
    pub(crate) fn call(&mut self) {
        self.after_call = true;
    }

    /// Starts a part of its own after `separator`, once text follows.
    pub(crate) fn separate(&mut self, separator: &str) {
        if self.started {
            self.pending = separator.to_owned();
            self.after_call = false;
            self.fresh = true;
        }
    }
}

fn push_text(out: &mut Vec<Out>, text: String) {
    if let Some(Out::Text(last)) = out.last_mut() {
        last.push_str(&text);
    } else {
        out.push(Out::Text(text));
    }
}

/// One client turn with tools.
pub(crate) struct Turn {
    tools: Arc<ToolSet>,
    /// The request for the upstream, `messages` included.
    request: Request,
    choice: Choice,
    single_call: bool,
    repairs_left: usize,
    /// Which answer the round under way asks for: the first, a resample or a repair.
    round: Round,
    parser: StreamParser,
    /// Everything the model wrote this round; the parser's offsets index it.
    round_text: String,
    shaper: Shaper,
    /// The first [`MAX_QUOTED_CALLS`] calls of this round that were not passed on: the
    /// only ones a repair round quotes.
    refused: Vec<Refused>,
    /// How many calls of this round were not passed on, quoted or not.
    refused_count: usize,
    /// Every call of this round that was not passed on, as the model wrote it, trimmed,
    /// one a line: one string, not one per call, for answers of many bad calls.
    refused_text: String,
    /// Whether this round passed a call on.
    round_called: bool,
    /// Calls that could not be repaired, one a line, shown as text when the turn ends.
    unresolved: String,
    calls: usize,
    named_called: bool,
    ids: CallIds,
    /// The grammar repair rounds send (calls only), and the field it goes in.
    repair_grammar: Option<(UpstreamKind, Arc<Grammar>)>,
    /// Whether the model writes its own call format (a dialect other than atfunc): calls
    /// name the client's tools, and messages to it do not teach atfunc's syntax.
    native: bool,
    /// `tool_calls` the upstream sent itself this round, by their index, pieced together
    /// from stream deltas; passed on when the round ends.
    upstream_calls: Vec<UpstreamCall>,
    /// The usage of a request made for this turn before its first answer (`--decide`'s
    /// decision), to count in the turn's.
    counted_usage: Option<Json>,
    /// The odds the answer was weighed at before its grammar was chosen
    /// (`--call-threshold`), shown to the client beside the answer.
    call_odds: Option<f64>,
    /// The calls passed on this round, to end its answer at the first repeat; `None` when
    /// repeats are passed on too ([`Turn::keep_repeated_calls`]).
    repeats: Option<Repeats>,
    /// How many more times the request may be asked again, sampled ([`Turn::resample`]).
    resamples_left: usize,
    /// How many resamples were asked: the next one's seed follows.
    resampled: i64,
    /// The client's `temperature` and `seed` as it sent them, put back for a repair round
    /// after resamples. Resamples come before any repair round, so the request is the
    /// client's until then but for these two fields: nothing else need be kept.
    client_sampling: [Option<Json>; 2],
    /// The calls passed on in the turn's earlier rounds. A repair round or a resample
    /// that writes one of them again (a model asked for its corrected calls often lists
    /// them all) has it dropped: the client has it, and would make it twice. At most
    /// [`MAX_CALLS`] keys, as calls passed on.
    made: HashSet<CallKey>,
    /// The calls passed on this round, added to `made` when it ends: within an answer a
    /// repeat is [`Turn::repeats`]' to judge.
    made_this_round: Vec<CallKey>,
    /// The same for the `tool_calls` the upstream sent itself: their name and arguments
    /// as sent (the arguments as JSON written again, when they are JSON).
    upstream_made: HashSet<(String, String)>,
    upstream_made_this_round: Vec<(String, String)>,
    /// After tool results: the request asking for the answer in words, sent when an
    /// answer gives the client neither a call nor words ([`Turn::after_results`]).
    answer_request: Option<Request>,
    /// After tool results: cuts a copy of the results block out of the answer.
    echo: Option<EchoCut>,
    /// Whether words (not only whitespace) went to the client.
    words: bool,
}

/// The temperature of a resample when the client asked for greedy decoding (a
/// temperature of 0) or named none: as `atfunc eval --sample-temperature`'s default.
pub(crate) const RESAMPLE_TEMPERATURE: f64 = 0.7;

/// A call the upstream sent as a `tool_calls` entry of its own.
#[derive(Debug, Default)]
struct UpstreamCall {
    index: u64,
    id: Option<String>,
    name: String,
    arguments: String,
}

impl std::fmt::Debug for Turn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Turn")
            .field("choice", &self.choice)
            .field("calls", &self.calls)
            .field("repairs_left", &self.repairs_left)
            .finish()
    }
}

impl Turn {
    /// A turn that sends `request` (its `messages` already rewritten and prompted).
    pub(crate) fn new(
        tools: Arc<ToolSet>,
        request: Request,
        choice: Choice,
        single_call: bool,
        repair_rounds: usize,
        dialect: Dialect,
    ) -> Turn {
        let parser = StreamParser::new(tools.parser_config(dialect));
        Turn {
            tools,
            request,
            choice,
            single_call,
            repairs_left: repair_rounds,
            round: Round::First,
            parser,
            round_text: String::new(),
            shaper: Shaper::default(),
            refused: Vec::new(),
            refused_count: 0,
            refused_text: String::new(),
            round_called: false,
            unresolved: String::new(),
            calls: 0,
            named_called: false,
            ids: CallIds::random(),
            repair_grammar: None,
            native: dialect != Dialect::Atfunc,
            upstream_calls: Vec::new(),
            counted_usage: None,
            call_odds: None,
            repeats: Some(Repeats::remembering(MAX_CALLS)),
            client_sampling: [None, None],
            resamples_left: 0,
            resampled: 0,
            made: HashSet::new(),
            made_this_round: Vec::new(),
            upstream_made: HashSet::new(),
            upstream_made_this_round: Vec::new(),
            answer_request: None,
            echo: None,
            words: false,
        }
    }

    /// Sets the turn up for a request that follows tool results (see
    /// [`super::conversation`]): the calls made since the user last spoke (`since`) are
    /// never passed on again, a copy of the results block is cut out of the answer, and an
    /// answer that gives the client neither a call nor words is asked again as `answer`
    /// (the conversation without the tools, asking for the answer in words); with
    /// `at_cap` (the conversation reached its cap of rounds of calls) `answer` is asked
    /// at once.
    pub(crate) fn after_results(&mut self, since: &Since, answer: Request, at_cap: bool) {
        self.made.extend(since.keys(&self.tools));
        if at_cap {
            self.start_answer(answer);
            return;
        }
        self.answer_request = Some(answer);
        self.echo = Some(EchoCut::new(self.native));
    }

    fn start_answer(&mut self, answer: Request) {
        self.request = answer;
        self.round = Round::Answer;
        self.round_text.clear();
        // The parser stays the turn's: a call in the model's format is read (and dropped),
        // not shown as words.
        self.echo = Some(EchoCut::new(self.native));
    }

    /// Asks the turn's request again, sampled, at most `times` times, when an answer's
    /// calls do not bind (or the call `tool_choice` requires is missing), before any
    /// repair round. Under a grammar, a small model's failures are loops that run to the
    /// token limit inside a value; another sample of the same request rarely loops again,
    /// where a repair round asks it to continue from the loop (EVAL.md (j)). Each resample
    /// is the request as the turn began, at the client's temperature (or
    /// [`RESAMPLE_TEMPERATURE`] where the client's is 0 or unset) with a seed of its own
    /// (the client's plus 1, 2, ...; 1, 2, ... when it set none, or a negative one, which
    /// asks llama.cpp for a random seed). Its text is not the client's, as a repair
    /// round's is not; its calls are passed on. Only an answer none of whose calls was
    /// passed on is asked again: a call the client has is never taken back, and a
    /// resample would write it again, so a turn that passed one on repairs instead.
    pub(crate) fn resample(&mut self, times: usize) {
        self.resamples_left = times;
        self.client_sampling = [self.request.get("temperature"), self.request.get("seed")];
    }

    /// Whether a failed answer would be asked again now: a resample is left, and no call
    /// of the turn was passed on (the client has it; a resample would write it again).
    fn resample_ahead(&self) -> bool {
        self.resamples_left > 0 && self.calls == 0
    }

    /// Sets the next resample's `temperature` and `seed`.
    fn sample_again(&mut self) {
        self.resampled += 1;
        let [temperature, seed] = self.client_sampling.clone();
        let temperature = temperature
            .filter(|t| t.as_f64().is_some_and(|t| t > 0.0))
            .unwrap_or_else(|| Json::from(RESAMPLE_TEMPERATURE));
        let base = seed.and_then(|s| s.as_i64()).filter(|s| *s >= 0);
        // Past i64::MAX (which vLLM refuses) the count starts again from 1.
        let seed = base
            .and_then(|b| b.checked_add(self.resampled))
            .unwrap_or(self.resampled);
        self.request
            .with_fields(&["temperature", "seed"], |fields| {
                fields.insert("temperature".into(), temperature);
                fields.insert("seed".into(), Json::from(seed));
            });
    }

    /// Passes on a call that repeats one passed on earlier in the same answer (the same
    /// tool with the same bound arguments), as any other call. By default such a repeat
    /// ends the answer: a small model that cannot stop writes its calls again and again
    /// until its token limit (EVAL.md (h): 180 of 200 answers of BFCL `parallel`), and the
    /// repeat, what follows it and the call the limit cuts short are not read, so no
    /// call is made twice and no repair round is asked for the cut one.
    pub(crate) fn keep_repeated_calls(&mut self, keep: bool) {
        // Bounded like the calls passed on: an answer of many calls holds no more.
        self.repeats = (!keep).then(|| Repeats::remembering(MAX_CALLS));
    }

    /// Counts `usage` (of a request made before the first answer) in the turn's usage.
    pub(crate) fn count_usage(&mut self, usage: Option<Json>) {
        self.counted_usage = usage;
    }

    /// Records the odds that the answer opens with a call, as the gateway weighed them
    /// before choosing its grammar ([`super::call_odds`]).
    pub(crate) fn weighed_at(&mut self, odds: f64) {
        self.call_odds = Some(odds);
    }

    /// The odds [`Turn::weighed_at`] recorded.
    pub(crate) fn call_odds(&self) -> Option<f64> {
        self.call_odds
    }

    /// The usage [`Turn::count_usage`] was given, once.
    pub(crate) fn take_counted_usage(&mut self) -> Option<Json> {
        self.counted_usage.take()
    }

    /// Takes in the `tool_calls` of an upstream answer (a message's, or a stream delta's
    /// pieces): in another model's format the upstream may read calls itself, and those
    /// are passed on as they came, unbound, when the round ends. Ignored for atfunc text,
    /// whose upstream is sent no tools.
    pub(crate) fn take_upstream_calls(&mut self, tool_calls: &Json) {
        let Some(entries) = tool_calls.as_array().filter(|_| self.native) else {
            return;
        };
        for (position, entry) in entries.iter().enumerate() {
            let index = entry
                .get("index")
                .and_then(Json::as_u64)
                .unwrap_or(position as u64);
            let at = match self.upstream_calls.iter().position(|c| c.index == index) {
                Some(at) => at,
                None => {
                    self.upstream_calls.push(UpstreamCall {
                        index,
                        ..UpstreamCall::default()
                    });
                    self.upstream_calls.len() - 1
                }
            };
            let Some(call) = self.upstream_calls.get_mut(at) else {
                continue;
            };
            if let Some(id) = entry.get("id").and_then(Json::as_str) {
                call.id = Some(id.to_owned());
            }
            let function = entry.get("function");
            if let Some(name) = function.and_then(|f| f.get("name")).and_then(Json::as_str) {
                call.name.push_str(name);
            }
            match function.and_then(|f| f.get("arguments")) {
                Some(Json::String(piece)) => call.arguments.push_str(piece),
                Some(Json::Null) | None => {}
                Some(object) => call.arguments.push_str(&object.to_string()),
            }
        }
    }

    /// Passes on the calls the upstream sent itself this round.
    fn flush_upstream_calls(&mut self, out: &mut Vec<Out>) {
        for call in std::mem::take(&mut self.upstream_calls) {
            if call.name.is_empty() {
                continue;
            }
            let arguments = if call.arguments.trim().is_empty() {
                String::from("{}")
            } else {
                call.arguments
            };
            let written = self.tools.atfunc_name(&call.name);
            if let Choice::Function(name) = &self.choice {
                if !written.eq_ignore_ascii_case(name) {
                    let shown = format!("{}({arguments})", call.name);
                    let error = self.only_named_error(name);
                    self.refuse(&shown.clone(), out, || Refused { shown, error });
                    continue;
                }
                self.named_called = true;
            }
            let key = (
                call.name.clone(),
                serde_json::from_str::<Json>(&arguments)
                    .map_or_else(|_| arguments.clone(), |json| json.to_string()),
            );
            if self.upstream_made.contains(&key) {
                // Passed on in an earlier round (see `Turn::made`).
                continue;
            }
            if self.single_call && self.calls > 0 {
                continue;
            }
            if self.calls >= MAX_CALLS {
                let shown = format!("{}({arguments})", call.name);
                self.refuse(&shown.clone(), out, || Refused {
                    shown,
                    error: too_many_calls_error(),
                });
                continue;
            }
            self.calls += 1;
            self.round_called = true;
            self.shaper.after_call = true;
            self.upstream_made_this_round.push(key);
            out.push(Out::Call {
                id: call.id.unwrap_or_else(|| self.ids.next_id()),
                name: call.name,
                arguments,
            });
        }
    }

    /// The error of a call of another tool than the named `tool_choice` asks for.
    fn only_named_error(&self, name: &str) -> String {
        if self.native {
            let client = self.tools.client_name(name);
            format!("This answer must call {client}, and no other function")
        } else {
            format!("This answer must call @{name}, and no other function")
        }
    }

    /// Puts the turn under `grammars` where `kind` reads them: the first answer's in the
    /// request, the repair rounds' (which allow calls only) in theirs, and a failed answer
    /// asked again up to `resamples` times ([`Turn::resample`]).
    pub(crate) fn constrain(&mut self, kind: UpstreamKind, grammars: Grammars, resamples: usize) {
        kind.put_in(&mut self.request, &grammars.first);
        self.resample(resamples);
        self.repair_grammar = grammars.repair.map(|grammar| (kind, grammar));
    }

    /// The request for the next upstream answer.
    pub(crate) fn request(&self) -> &Request {
        &self.request
    }

    /// Whether the round under way is a repair round (its text is dropped, its calls kept).
    pub(crate) fn repairing(&self) -> bool {
        matches!(self.round, Round::Resample | Round::Repair)
    }

    /// `tool_calls` when calls were passed on, else the upstream's reason (`stop` if none).
    pub(crate) fn finish_reason(&self, upstream: Option<&str>) -> String {
        if self.calls > 0 {
            String::from("tool_calls")
        } else {
            upstream.unwrap_or("stop").to_owned()
        }
    }

    /// Feeds the next piece of the model's answer.
    pub(crate) fn feed(&mut self, delta: &str, out: &mut Vec<Out>) {
        // A whole answer comes as one piece: fed at once, its events (600k calls in a
        // 5 MB answer) would all be alive together.
        let mut rest = delta;
        while !rest.is_empty() {
            let mut end = rest.len().min(FEED_BYTES);
            while !rest.is_char_boundary(end) {
                end += 1;
            }
            let (piece, after) = rest.split_at(end);
            rest = after;
            self.round_text.push_str(piece);
            for event in self.parser.feed_str(piece) {
                self.event(event, out);
            }
            if self.answer_over() {
                // Nothing after a repeated call is read (or sent back in a repair round).
                return;
            }
        }
    }

    /// Whether a call that repeats an earlier one ends each answer (unless
    /// [`Turn::keep_repeated_calls`]), so that an answer is best asked for as a stream,
    /// to be dropped there.
    pub(crate) fn ends_at_repeat(&self) -> bool {
        self.repeats.is_some()
    }

    /// Whether this round's answer was ended by a call that repeats an earlier one: the
    /// rest of it is not read, so the upstream's stream may be dropped.
    pub(crate) fn answer_over(&self) -> bool {
        self.repeats.as_ref().is_some_and(Repeats::is_over)
    }

    /// Ends the model's answer. Calls that did not bind, or a call the request's
    /// `tool_choice` needs and did not get, start a repair round while rounds remain.
    pub(crate) fn end_round(&mut self, out: &mut Vec<Out>) -> RoundEnd {
        for event in self.parser.finish() {
            self.event(event, out);
        }
        if matches!(self.round, Round::First | Round::Answer) {
            if let Some(rest) = self.echo.as_mut().map(EchoCut::finish) {
                self.show(&rest, out);
            }
        }
        if let Some(repeats) = &mut self.repeats {
            *repeats = Repeats::remembering(MAX_CALLS);
        }
        self.flush_upstream_calls(out);
        self.made.extend(self.made_this_round.drain(..));
        self.upstream_made
            .extend(self.upstream_made_this_round.drain(..));
        let refused = std::mem::take(&mut self.refused);
        let refused_count = std::mem::take(&mut self.refused_count);
        let refused_text = std::mem::take(&mut self.refused_text);
        let called = std::mem::take(&mut self.round_called);
        if refused_count > 0 || called {
            self.unresolved = refused_text;
        }
        let missing = match &self.choice {
            Choice::Required => self.calls == 0,
            Choice::Function(_) => !self.named_called,
            Choice::Auto | Choice::None => false,
        };
        if refused_count == 0 && !missing {
            // After results, an answer that gave the client nothing (a call made before,
            // dropped; a copy of the results, cut): the answer in words.
            if self.answer_in_words_instead() {
                return RoundEnd::Repair;
            }
            if self.round == Round::Resample {
                // The resample's answer stands in for the failed one: it wrote no call
                // that failed, so none is shown.
                self.unresolved.clear();
            }
            self.give_up(out);
            return RoundEnd::Done;
        }
        if self.resample_ahead() {
            self.resamples_left -= 1;
            self.round = Round::Resample;
            self.round_text.clear();
            self.sample_again();
            return RoundEnd::Repair;
        }
        if self.repairs_left == 0 {
            // After results, calls still wrong are no answer to show: the answer in words.
            if self.answer_in_words_instead() {
                return RoundEnd::Repair;
            }
            self.give_up(out);
            return RoundEnd::Done;
        }
        if self.round == Round::Resample {
            // The repair goes on from the conversation as the client sent it, at its own
            // sampling settings, with the last answer.
            let [temperature, seed] = self.client_sampling.clone();
            self.request
                .with_fields(&["temperature", "seed"], |fields| {
                    fields.clear();
                    if let Some(temperature) = temperature {
                        fields.insert("temperature".into(), temperature);
                    }
                    if let Some(seed) = seed {
                        fields.insert("seed".into(), seed);
                    }
                });
        }
        self.repairs_left -= 1;
        self.round = Round::Repair;
        let answer = std::mem::take(&mut self.round_text);
        let note = self.repair_note(&refused, refused_count, called, missing);
        if !answer.trim().is_empty() {
            self.request.push_message(&message("assistant", answer));
        }
        self.request.push_message(&message("user", note));
        if let Some((kind, grammar)) = &self.repair_grammar {
            kind.put_in(&mut self.request, grammar);
        }
        RoundEnd::Repair
    }

    /// Ends the turn without asking again (no rounds left, or the upstream failed during
    /// a repair): calls that were not repaired are shown as the text they were.
    /// After tool results, when the answer gave the client neither a call nor words (its
    /// calls made before and dropped, a copy of the results cut, or calls that stayed
    /// wrong after the repair rounds): asks for the answer in words instead, once. `false`
    /// when the turn is not after results, gave something, or asked already.
    fn answer_in_words_instead(&mut self) -> bool {
        if self.calls > 0 || self.words || self.round == Round::Answer {
            return false;
        }
        let Some(answer) = self.answer_request.take() else {
            return false;
        };
        self.unresolved.clear();
        self.start_answer(answer);
        true
    }

    pub(crate) fn give_up(&mut self, out: &mut Vec<Out>) {
        let unresolved = std::mem::take(&mut self.unresolved);
        if !unresolved.is_empty() {
            // One line each, as if each were shown after a line break of its own.
            self.shaper.separate("\n");
            self.shaper.text(&unresolved, out);
        }
    }

    /// The repair round's message. It quotes at most [`MAX_QUOTED_CALLS`] refused calls
    /// and about [`MAX_QUOTED_BYTES`] of them, each cut to [`MAX_QUOTED_CALL_CHARS`]: an
    /// answer of 500k bad calls would otherwise go back upstream many times its size.
    /// Calls left out are counted in the message and not made.
    fn repair_note(
        &self,
        refused: &[Refused],
        refused_count: usize,
        called: bool,
        missing: bool,
    ) -> String {
        let mut budget = MAX_QUOTED_BYTES;
        let records: Vec<CallRecord> = refused
            .iter()
            .take(MAX_QUOTED_CALLS)
            .map(|r| CallRecord {
                call_text: truncate_text(&r.shown, MAX_QUOTED_CALL_CHARS).into_owned(),
                result: Err(truncate_text(&r.error, MAX_QUOTED_CALL_CHARS).into_owned()),
            })
            .enumerate()
            .map_while(|(i, record)| {
                let cost = record.call_text.len() + record.result.as_ref().err()?.len();
                // The first is always quoted: it is cut to size already.
                if i > 0 && cost > budget {
                    return None;
                }
                budget = budget.saturating_sub(cost);
                Some(record)
            })
            .collect();
        let missing = match (&self.choice, missing) {
            (_, false) => MissingCall::None,
            (Choice::Function(name), true) => MissingCall::Named(name),
            (_, true) => MissingCall::Any,
        };
        let options = RepairOptions::default()
            .with_others_made(called)
            .with_missing(missing);
        let mut note = if self.native {
            self.native_repair_note(&records, &options)
        } else {
            repair_note(&records, &options)
        };
        let left_out = refused_count.saturating_sub(records.len());
        if left_out > 0 {
            let calls = if left_out == 1 { "call" } else { "calls" };
            note.push_str(&format!(
                "\n\n{left_out} more refused {calls} are not shown here and were not made."
            ));
        }
        note
    }

    /// [`repair_note`] for a model that writes its own call format: the same blocks, and
    /// requests that name no syntax (atfunc's would teach it a second one).
    fn native_repair_note(&self, records: &[CallRecord], options: &RepairOptions) -> String {
        let mut note = String::new();
        if !records.is_empty() {
            note.push_str(&format_results(records));
            note.push_str(
                "\nThese calls were not made. Write them again, corrected, in the same \
                 tool-call format: only these calls, no other text.",
            );
            if options.others_made {
                note.push_str(" Your other calls were made: do not repeat them.");
            }
        }
        let ask = match options.missing {
            MissingCall::None => return note,
            MissingCall::Any => String::from(
                "This answer must call at least one of the tools you were given. Write the \
                 call now, and nothing else.",
            ),
            MissingCall::Named(name) => format!(
                "This answer must call {}. Write the call now, and nothing else.",
                self.tools.client_name(name)
            ),
        };
        if !note.is_empty() {
            note.push_str("\n\n");
        }
        note.push_str(&ask);
        note
    }

    fn event(&mut self, event: Event, out: &mut Vec<Out>) {
        if self.answer_over() {
            return;
        }
        match event {
            Event::Text { text } => self.text(&text, out),
            Event::InvalidUtf8 { bytes, .. } => self.text(&String::from_utf8_lossy(&bytes), out),
            Event::CallStarted { .. } => {}
            Event::Call(call) => self.call(call, out),
            // In a model's own format a malformed event is a call block gone wrong (its
            // opening marker was written); prose never makes one.
            Event::Malformed { error, text, .. } if self.native => {
                let shown = text.trim().to_owned();
                self.refuse(&text, out, || Refused {
                    shown,
                    error: format!("This call could not be read: {error}"),
                });
            }
            Event::Malformed { error, text, .. } => {
                let written = text.strip_prefix('@').unwrap_or(&text);
                let name = written.split('(').next().unwrap_or(written).trim();
                // `@name(` of a tool the model has: a call gone wrong. Anything else is prose.
                if self.tools.catalog.find(name).is_ok() {
                    let shown = written.to_owned();
                    self.refuse(&text, out, || Refused {
                        shown,
                        error: unreadable_call_error(&error),
                    });
                } else {
                    self.text(&text, out);
                }
            }
            // An event of a later release: nothing the answer shows.
            _ => {}
        }
    }

    fn text(&mut self, text: &str, out: &mut Vec<Out>) {
        if !matches!(self.round, Round::First | Round::Answer) {
            return;
        }
        match self.echo.as_mut().map(|echo| echo.push(text)) {
            Some(kept) => self.show(&kept, out),
            None => self.show(text, out),
        }
    }

    fn show(&mut self, text: &str, out: &mut Vec<Out>) {
        if !text.trim().is_empty() {
            self.words = true;
        }
        self.shaper.text(text, out);
    }

    /// The call as the model wrote it, `@` included.
    fn raw_text(&self, call: &Call) -> String {
        usize::try_from(call.span.start)
            .ok()
            .zip(usize::try_from(call.span.end).ok())
            .and_then(|(start, end)| self.round_text.get(start..end))
            .map_or_else(|| format!("@{}", call_text(call)), str::to_owned)
    }

    /// How a repair round quotes a refused call: in atfunc's syntax, or, for a model that
    /// writes its own format, as it wrote it.
    fn shown(&self, call: &Call, raw: &str) -> String {
        if self.native {
            raw.trim().to_owned()
        } else {
            call_text(call)
        }
    }

    fn call(&mut self, call: Call, out: &mut Vec<Out>) {
        if self.round == Round::Answer {
            // The answer in words was asked for: a call is neither made nor shown.
            return;
        }
        let bound = match bind(&call, &self.tools.catalog) {
            Ok(bound) => bound,
            Err(error) => {
                let raw = self.raw_text(&call);
                let shown = self.shown(&call, &raw);
                return self.refuse(&raw, out, || Refused {
                    shown,
                    error: error.to_string(),
                });
            }
        };
        if let Choice::Function(name) = &self.choice {
            if self.tools.written_name(&bound).as_ref() != Some(name) {
                let error = self.only_named_error(name);
                let raw = self.raw_text(&call);
                let shown = self.shown(&call, &raw);
                return self.refuse(&raw, out, || Refused { shown, error });
            }
            self.named_called = true;
        }
        if let Some(repeats) = &mut self.repeats {
            if !repeats.admit(&bound) {
                // The answer, for a repair round, ends before the repeat.
                if let Ok(start) = usize::try_from(call.span.start) {
                    if self.round_text.is_char_boundary(start) {
                        self.round_text.truncate(start);
                    }
                }
                return;
            }
        }
        let key = bound.key();
        if self.made.contains(&key) {
            // Passed on in an earlier round: not again, and no reason to ask again.
            return;
        }
        let arguments = Json::Object(bound.args).to_string();
        if self.single_call && self.calls > 0 {
            // Only one call per answer was asked for: the first one stands.
            return;
        }
        if self.calls >= MAX_CALLS {
            let raw = self.raw_text(&call);
            let shown = self.shown(&call, &raw);
            return self.refuse(&raw, out, || Refused {
                shown,
                error: too_many_calls_error(),
            });
        }
        self.calls += 1;
        self.round_called = true;
        self.shaper.after_call = true;
        self.made_this_round.push(key);
        out.push(Out::Call {
            id: self.ids.next_id(),
            // A bound call carries the client's names: the tool's and its arguments'.
            name: bound.name,
            arguments,
        });
    }

    /// A call written as `raw` is not passed on; `quoted` says how a repair round quotes
    /// it (made only for the calls it quotes).
    fn refuse(&mut self, raw: &str, out: &mut Vec<Out>, quoted: impl FnOnce() -> Refused) {
        if self.round == Round::Answer {
            // Call syntax is not the answer in words, and no call is asked for.
            return;
        }
        if self.repairs_left == 0 && !self.resample_ahead() && self.round == Round::First {
            // No round is left to repair it in: it stays where it was, as text.
            self.text(raw, out);
            return;
        }
        self.refused_count += 1;
        if self.refused.len() < MAX_QUOTED_CALLS {
            self.refused.push(quoted());
        }
        let raw = raw.trim();
        if !raw.is_empty() {
            if !self.refused_text.is_empty() {
                self.refused_text.push('\n');
            }
            self.refused_text.push_str(raw);
        }
    }
}

fn too_many_calls_error() -> String {
    format!(
        "This request already made {MAX_CALLS} calls, the most one request may make; \
         make this call after their results"
    )
}

fn message(role: &str, content: String) -> Json {
    let mut message = Map::new();
    message.insert("role".into(), Json::String(role.into()));
    message.insert("content".into(), Json::String(content));
    Json::Object(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Arc<ToolSet> {
        Arc::new(
            ToolSet::from_tools(&json!([{"type": "function", "function": {
                "name": "get-weather", "parameters": {"type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"]}}}]))
            .unwrap(),
        )
    }

    fn turn(choice: Choice, rounds: usize) -> Turn {
        turn_with(choice, rounds, r#"{"model": "m"}"#)
    }

    fn turn_with(choice: Choice, rounds: usize, body: &str) -> Turn {
        let mut request = Request::parse(body.as_bytes()).unwrap();
        request.push_message(&json!({"role": "user", "content": "hi"}));
        Turn::new(tools(), request, choice, false, rounds, Dialect::Atfunc)
    }

    /// The turn's message `i`, as it goes upstream.
    fn message_of(turn: &Turn, i: usize) -> Json {
        serde_json::from_str(turn.request().messages()[i].get()).unwrap()
    }

    #[test]
    fn a_call_goes_to_the_client_at_its_closing_parenthesis() {
        // A client tool takes no body: nothing after the `)` can change the call, so a
        // stream that pauses there does not hold it back.
        let mut turn = turn(Choice::Auto, 0);
        let mut out = Vec::new();
        turn.feed("Checking. @get_weather(Paris)", &mut out);
        assert!(
            out.iter()
                .any(|o| matches!(o, Out::Call { name, .. } if name == "get-weather")),
            "{out:?}"
        );
    }

    /// Runs a whole answer through in chunks of `size` bytes (at character boundaries).
    fn run(turn: &mut Turn, answer: &str, size: usize) -> (Vec<Out>, RoundEnd) {
        let mut out = Vec::new();
        let chars: Vec<char> = answer.chars().collect();
        for chunk in chars.chunks(size) {
            turn.feed(&chunk.iter().collect::<String>(), &mut out);
        }
        let end = turn.end_round(&mut out);
        (out, end)
    }

    fn shape(out: &[Out]) -> Json {
        let mut text = String::new();
        let mut calls = Vec::new();
        for piece in out {
            match piece {
                Out::Text(t) => text.push_str(t),
                Out::Call {
                    name, arguments, ..
                } => calls.push(json!([name, arguments])),
            }
        }
        json!({"text": text, "calls": calls})
    }

    #[test]
    fn text_and_calls_come_apart_whatever_the_chunks() {
        let answer =
            "  Let me check. @Get_Weather(\"Paris\", days=\"2\") @get_weather(city=Oslo)\n Done.\n";
        for size in [1, 2, 3, 7, answer.len()] {
            let (out, end) = run(&mut turn(Choice::Auto, 1), answer, size);
            assert_eq!(end, RoundEnd::Done);
            assert_eq!(
                shape(&out),
                json!({"text": "Let me check.\nDone.", "calls": [
                    ["get-weather", "{\"city\":\"Paris\",\"days\":2}"],
                    ["get-weather", "{\"city\":\"Oslo\"}"]]}),
                "chunks of {size}"
            );
        }
    }

    #[test]
    fn a_call_that_does_not_bind_is_repaired() {
        let mut turn = turn(Choice::Auto, 1);
        let (out, end) = run(&mut turn, "Checking. @get_weather(days=2)", 3);
        assert_eq!(end, RoundEnd::Repair);
        assert_eq!(shape(&out), json!({"text": "Checking.", "calls": []}));
        assert_eq!(
            message_of(&turn, 1)["content"],
            "Checking. @get_weather(days=2)"
        );
        let note = message_of(&turn, 2)["content"].as_str().unwrap().to_owned();
        assert!(note.starts_with("Function call: get_weather(days=2)\nReturned: Error: Missing required parameter for function 'get_weather': city\n"), "{note}");
        let (out, end) = run(&mut turn, "Sorry! @get_weather(city=\"Paris\", days=2)", 4);
        assert_eq!(end, RoundEnd::Done);
        assert_eq!(
            shape(&out),
            json!({"text": "", "calls": [["get-weather", "{\"city\":\"Paris\",\"days\":2}"]]})
        );
    }

    #[test]
    fn a_repair_round_quotes_a_bounded_number_of_calls() {
        let mut turn = turn(Choice::Auto, 1);
        let answer = "@get_weather(days=2)\n".repeat(5000);
        let (_, end) = run(&mut turn, &answer, answer.len());
        assert_eq!(end, RoundEnd::Repair);
        let note = message_of(&turn, 2)["content"].as_str().unwrap().to_owned();
        assert_eq!(
            note.matches("Function call: ").count(),
            MAX_QUOTED_CALLS,
            "{note}"
        );
        assert!(
            note.ends_with("4980 more refused calls are not shown here and were not made."),
            "{note}"
        );
        assert!(note.len() < MAX_QUOTED_BYTES + 1000, "{}", note.len());

        // One huge call is cut, not quoted whole.
        let mut turn = super::tests::turn(Choice::Auto, 1);
        let huge = format!("@get_weather(days=2, note=\"{}\")", "x".repeat(100_000));
        let (_, end) = run(&mut turn, &huge, huge.len());
        assert_eq!(end, RoundEnd::Repair);
        let note = message_of(&turn, 2)["content"].as_str().unwrap().to_owned();
        assert!(
            note.len() < 2 * MAX_QUOTED_CALL_CHARS + 1000,
            "{}",
            note.len()
        );
    }

    #[test]
    fn a_turn_passes_on_at_most_max_calls() {
        let answer = "@get_weather(Oslo)\n".repeat(MAX_CALLS + 5);
        // The same call again and again: only kept with `keep_repeated_calls`.
        let keeping = |rounds| {
            let mut turn = turn(Choice::Auto, rounds);
            turn.keep_repeated_calls(true);
            turn
        };
        let (out, end) = run(&mut keeping(0), &answer, 4096);
        assert_eq!(end, RoundEnd::Done);
        let calls = out.iter().filter(|o| matches!(o, Out::Call { .. })).count();
        assert_eq!(calls, MAX_CALLS);
        // The rest stay where they were, as the text the model wrote.
        let text = shape(&out)["text"].as_str().unwrap().to_owned();
        assert_eq!(text.matches("@get_weather(Oslo)").count(), 5, "{text}");

        // With a round left, they are refused and the repair round says why.
        let mut repaired = keeping(1);
        let (_, end) = run(&mut repaired, &answer, 4096);
        assert_eq!(end, RoundEnd::Repair);
        let note = message_of(&repaired, 2)["content"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            note.contains(&format!("already made {MAX_CALLS} calls")),
            "{note}"
        );
    }

    /// At the cap, with a repair round that writes every call again (the model asked for
    /// the refused ones lists them all): the client gets the first [`MAX_CALLS`] as
    /// `tool_calls` once, and only the calls past the cap as text, whole or in pieces.
    #[test]
    fn at_the_cap_only_the_calls_past_it_are_text() {
        let answer: String = (0..MAX_CALLS + 5)
            .map(|i| format!("@get_weather(city=\"C{i}\")\n"))
            .collect();
        for size in [3, 4096] {
            let mut turn = turn(Choice::Auto, 1);
            let (mut out, end) = run(&mut turn, &answer, size);
            assert_eq!(end, RoundEnd::Repair);
            let (more, end) = run(&mut turn, &answer, size);
            assert_eq!(end, RoundEnd::Done);
            out.extend(more);
            let calls = out.iter().filter(|o| matches!(o, Out::Call { .. })).count();
            assert_eq!(calls, MAX_CALLS);
            let text = shape(&out)["text"].as_str().unwrap().to_owned();
            let past: String = (MAX_CALLS..MAX_CALLS + 5)
                .map(|i| format!("@get_weather(city=\"C{i}\")\n"))
                .collect();
            assert_eq!(text, past.trim_end(), "{size}");
        }
    }

    /// Under a grammar an answer that does not bind is asked again as the turn began,
    /// sampled, before any repair round: its text is dropped, its calls pass on, and a
    /// repair round after the resamples starts from the client's conversation and
    /// sampling settings.
    #[test]
    fn an_answer_that_does_not_bind_is_resampled_before_a_repair_round() {
        let sampling = |turn: &Turn| {
            let body: Json = serde_json::from_slice(&turn.request().body(None)).unwrap();
            (
                body["temperature"].clone(),
                body["seed"].clone(),
                body["messages"].as_array().unwrap().len(),
            )
        };
        for piece in [1, 3, 4096] {
            let mut turn = turn(Choice::Required, 1);
            turn.resample(2);
            let (out, end) = run(&mut turn, "Checking. @get_weather(city=\"Os", piece);
            assert_eq!(
                (end, shape(&out)["text"].clone()),
                (RoundEnd::Repair, json!("Checking."))
            );
            assert_eq!(sampling(&turn), (json!(0.7), json!(1), 1), "{piece}");
            // The resample's text is not the client's; a refused call asks again.
            let (out, end) = run(&mut turn, "Sure. @get_weather(days=2)", piece);
            assert_eq!(
                (end, shape(&out)),
                (RoundEnd::Repair, json!({"text": "", "calls": []}))
            );
            assert_eq!(sampling(&turn), (json!(0.7), json!(2), 1), "{piece}");
            // No resample left: the repair round, on the client's own request.
            let (_, end) = run(&mut turn, "@get_weather(days=\"x\")", piece);
            assert_eq!(end, RoundEnd::Repair);
            assert_eq!(sampling(&turn), (Json::Null, Json::Null, 3), "{piece}");
            assert_eq!(message_of(&turn, 1)["content"], "@get_weather(days=\"x\")");
            let (out, end) = run(&mut turn, "@get_weather(Oslo)", piece);
            assert_eq!(end, RoundEnd::Done);
            assert_eq!(
                shape(&out)["calls"],
                json!([["get-weather", r#"{"city":"Oslo"}"#]])
            );
        }
        // A resample that binds ends the turn, and shows nothing of the refused call.
        let mut second = turn(Choice::Required, 1);
        second.resample(2);
        let (_, end) = run(&mut second, "@get_weather(city=\"Os", 4096);
        assert_eq!(end, RoundEnd::Repair);
        let (out, end) = run(&mut second, "Here. @get_weather(Oslo)", 4096);
        assert_eq!(end, RoundEnd::Done);
        assert_eq!(
            shape(&out),
            json!({"text": "", "calls": [["get-weather", r#"{"city":"Oslo"}"#]]})
        );
        // The client's temperature is kept, its seed moved on; an answer that binds is
        // never asked again.
        let mut hot = turn_with(
            Choice::Auto,
            0,
            r#"{"model": "m", "temperature": 0.3, "seed": 7}"#,
        );
        hot.resample(1);
        let (_, end) = run(&mut hot, "@get_weather(days=2)", 4096);
        assert_eq!(end, RoundEnd::Repair);
        assert_eq!(sampling(&hot), (json!(0.3), json!(8), 1));
        let (_, end) = run(&mut hot, "@get_weather(days=2)", 4096);
        assert_eq!(end, RoundEnd::Done);
        let mut fine = turn(Choice::Required, 1);
        fine.resample(2);
        assert_eq!(run(&mut fine, "@get_weather(Oslo)", 4096).1, RoundEnd::Done);
    }

    /// A call the client has is never taken back: an answer that passed one on and had
    /// another refused is repaired, not resampled (a resample would write the first call
    /// again). A resample that answers in prose alone under `auto` stands in for the
    /// failed answer, whose refused call is then not shown. A negative seed (random, to
    /// llama.cpp) is replaced by the count.
    #[test]
    fn a_resample_never_repeats_a_call_passed_on_and_may_answer_without_one() {
        for piece in [1, 3, 4096] {
            let mut turn = turn(Choice::Auto, 1);
            turn.resample(3);
            let (out, end) = run(&mut turn, "@get_weather(Oslo) @get_weather(days=2)", piece);
            assert_eq!(end, RoundEnd::Repair);
            assert_eq!(
                shape(&out)["calls"],
                json!([["get-weather", r#"{"city":"Oslo"}"#]])
            );
            // The repair round: the answer and the note, at the client's settings.
            assert_eq!(turn.request().messages().len(), 3, "{piece}");
            assert_eq!(turn.request().get("temperature"), None);

            let mut prose = turn_with(Choice::Auto, 0, r#"{"model": "m", "seed": -1}"#);
            prose.resample(1);
            let (out, end) = run(&mut prose, "Let me see. @get_weather(days=2)", piece);
            assert_eq!(
                (end, shape(&out)["text"].clone()),
                (RoundEnd::Repair, json!("Let me see."))
            );
            assert_eq!(prose.request().get("seed"), Some(json!(1)));
            let (out, end) = run(&mut prose, "It is sunny in Oslo.", piece);
            assert_eq!(
                (end, shape(&out)),
                (RoundEnd::Done, json!({"text": "", "calls": []}))
            );
        }
    }

    /// A model that cannot stop writes its calls again until the token limit cuts one
    /// short. The first repeat ends the answer: its calls are passed on once each, the
    /// text after it and the cut call are not read, and no repair round is asked for.
    /// Another answer (a repair round) starts afresh.
    #[test]
    fn a_repeated_call_ends_the_answer() {
        let looping = "Both cities.\n@get_weather(Oslo)\n@get_weather(Paris, days=2)\n\
                       @GET_WEATHER(\"Oslo\")\n@get_weather(Paris, days=2)\nand on @get_weather(Os";
        for piece in [1, 3, 4096] {
            let (out, end) = run(&mut turn(Choice::Auto, 1), looping, piece);
            assert_eq!(end, RoundEnd::Done, "{piece}");
            let shaped = shape(&out);
            let calls: Vec<&str> = shaped["calls"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c[1].as_str().unwrap())
                .collect();
            assert_eq!(
                calls,
                [r#"{"city":"Oslo"}"#, r#"{"city":"Paris","days":2}"#],
                "{piece}"
            );
            assert_eq!(shaped["text"], "Both cities.", "{piece}");
        }
        // The same call with other arguments is no repeat; kept, repeats pass too.
        let varied = "@get_weather(Oslo)\n@get_weather(Oslo, days=1)\n@get_weather(Oslo, days=2)";
        let (out, _) = run(&mut turn(Choice::Auto, 0), varied, 4096);
        assert_eq!(
            out.iter().filter(|o| matches!(o, Out::Call { .. })).count(),
            3
        );
        let mut keeping = turn(Choice::Auto, 0);
        keeping.keep_repeated_calls(true);
        let (out, _) = run(&mut keeping, "@get_weather(Oslo) @get_weather(Oslo)", 4096);
        assert_eq!(
            out.iter().filter(|o| matches!(o, Out::Call { .. })).count(),
            2
        );
    }

    /// A call that does not bind, then a loop: the repair round quotes the answer up to
    /// the repeat, at every chunking, and the turn says the answer is over as soon as the
    /// repeat is read, so a stream can be dropped there.
    #[test]
    fn a_repair_round_after_a_repeat_sees_the_answer_up_to_it() {
        let looping = "@get_weather(days=2) @get_weather(Oslo) @get_weather(Oslo) @get_weather(Oslo) @get_wea";
        let repeat = looping
            .find("@get_weather(Oslo) @get_weather(Oslo) @")
            .unwrap()
            + 19;
        for piece in [1, 3, 4096] {
            let mut turn = turn(Choice::Auto, 1);
            let mut out = Vec::new();
            let mut fed = 0;
            for chunk in looping.as_bytes().chunks(piece) {
                assert!(!turn.answer_over(), "{piece}");
                turn.feed(std::str::from_utf8(chunk).unwrap(), &mut out);
                fed += chunk.len();
                if turn.answer_over() {
                    break;
                }
            }
            assert!(turn.answer_over() && fed >= repeat + 18, "{piece}");
            assert_eq!(turn.end_round(&mut out), RoundEnd::Repair, "{piece}");
            assert!(!turn.answer_over());
            let answer = message_of(&turn, 1);
            assert_eq!(
                answer["content"], "@get_weather(days=2) @get_weather(Oslo) ",
                "{piece}"
            );
        }
    }

    #[test]
    fn a_round_of_many_bad_calls_keeps_only_what_it_quotes() {
        let mut turn = turn(Choice::Auto, 1);
        let mut out = Vec::new();
        let bad = "@get_weather(days=2)\n".repeat(5000);
        turn.feed(&bad, &mut out);
        assert_eq!(turn.refused.len(), MAX_QUOTED_CALLS);
        assert_eq!(turn.refused_count, 5000);
        assert_eq!(turn.end_round(&mut out), RoundEnd::Repair);
        // The repair fails the same way: every call comes back as text, one a line.
        let (out, end) = run(&mut turn, &bad, 4096);
        assert_eq!(end, RoundEnd::Done);
        assert_eq!(shape(&out)["text"], bad.trim_end());
    }

    #[test]
    fn a_call_that_stays_wrong_is_returned_as_text() {
        let mut turn = turn(Choice::Auto, 1);
        let (mut out, _) = run(&mut turn, "Checking. @get_weather(days=2)", 3);
        let (more, end) = run(&mut turn, "@get_weather(days=3)", 3);
        out.extend(more);
        assert_eq!(end, RoundEnd::Done);
        assert_eq!(
            shape(&out),
            json!({"text": "Checking.\n@get_weather(days=3)", "calls": []})
        );
        assert_eq!(turn.finish_reason(Some("stop")), "stop");

        let mut no_rounds = super::tests::turn(Choice::Auto, 0);
        let (out, end) = run(&mut no_rounds, "Checking @get_weather(days=2) now.", 5);
        assert_eq!(end, RoundEnd::Done);
        assert_eq!(
            shape(&out),
            json!({"text": "Checking @get_weather(days=2) now.", "calls": []})
        );
    }

    #[test]
    fn required_and_named_choices_ask_again_when_there_is_no_call() {
        let mut turn = turn(Choice::Function("get_weather".into()), 2);
        let (_, end) = run(&mut turn, "It is sunny.", 5);
        assert_eq!(end, RoundEnd::Repair);
        let note = message_of(&turn, 2)["content"].as_str().unwrap().to_owned();
        assert!(
            note.starts_with("This answer must call @get_weather."),
            "{note}"
        );
        let (out, end) = run(&mut turn, "@get_weather(Paris)", 5);
        assert_eq!(end, RoundEnd::Done);
        assert_eq!(turn.finish_reason(Some("stop")), "tool_calls");
        assert_eq!(out.len(), 1);
    }

    fn native_turn(dialect: Dialect, choice: Choice, rounds: usize) -> Turn {
        let mut request = Request::parse(br#"{"model": "m"}"#).unwrap();
        request.push_message(&json!({"role": "user", "content": "hi"}));
        Turn::new(tools(), request, choice, false, rounds, dialect)
    }

    #[test]
    fn a_models_own_format_reads_the_same_whatever_the_chunks() {
        let answer = "Sure. <tool_call>{\"name\": \"get-weather\", \"arguments\": \
                      {\"city\": \"Oslo\", \"days\": \"3\"}}</tool_call> Bye.";
        for size in 1..8 {
            let (out, end) = run(
                &mut native_turn(Dialect::Hermes, Choice::Auto, 1),
                answer,
                size,
            );
            assert_eq!(end, RoundEnd::Done);
            assert_eq!(
                shape(&out),
                json!({"text": "Sure. Bye.", "calls": [
                    ["get-weather", "{\"city\":\"Oslo\",\"days\":3}"]]}),
                "chunks of {size}"
            );
        }
    }

    #[test]
    fn an_unreadable_block_in_a_models_own_format_is_repaired() {
        let mut turn = native_turn(Dialect::Hermes, Choice::Auto, 1);
        let (out, end) = run(&mut turn, "Hm. <tool_call>{\"name\": ", 3);
        assert_eq!(end, RoundEnd::Repair);
        assert_eq!(shape(&out), json!({"text": "Hm.", "calls": []}));
        let note = message_of(&turn, 2)["content"].as_str().unwrap().to_owned();
        assert!(
            note.starts_with("Function call: <tool_call>{\"name\":\nReturned: Error: This call could not be read: "),
            "{note}"
        );
        assert!(!note.contains('@'), "{note}");
    }

    #[test]
    fn the_upstreams_own_calls_are_pieced_together_and_passed_on() {
        let mut turn = native_turn(Dialect::Hermes, Choice::Auto, 0);
        let mut out = Vec::new();
        turn.feed("Here.", &mut out);
        turn.take_upstream_calls(&json!([{"index": 0, "id": "call_a", "function":
            {"name": "get-weather", "arguments": "{\"city\": "}}]));
        turn.take_upstream_calls(&json!([{"index": 0, "function": {"arguments": "\"Rome\"}"}}]));
        assert_eq!(turn.end_round(&mut out), RoundEnd::Done);
        assert_eq!(
            out,
            [
                Out::Text("Here.".into()),
                Out::Call {
                    id: "call_a".into(),
                    name: "get-weather".into(),
                    arguments: "{\"city\": \"Rome\"}".into()
                }
            ]
        );
        assert_eq!(turn.finish_reason(Some("stop")), "tool_calls");

        // atfunc text's upstream is sent no tools: it keeps what it did before.
        let mut atfunc = super::tests::turn(Choice::Auto, 0);
        let mut out = Vec::new();
        atfunc.take_upstream_calls(&json!([{"function": {"name": "get-weather"}}]));
        atfunc.end_round(&mut out);
        assert!(out.is_empty(), "{out:?}");
    }

    /// `calls` (JSON objects of arguments) of `get-weather` as `dialect` writes them.
    fn written(dialect: Dialect, calls: &[Json]) -> String {
        let json = |args: &Json| args.to_string();
        let keywords = |args: &Json| {
            let pairs: Vec<String> = args
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            format!("get_weather({})", pairs.join(", "))
        };
        let each = |f: &dyn Fn(&Json) -> String, between: &str| {
            calls.iter().map(f).collect::<Vec<_>>().join(between)
        };
        match dialect {
            Dialect::Atfunc => each(&|a| format!("@{}", keywords(a)), "\n"),
            Dialect::Hermes | Dialect::Auto => each(
                &|a| {
                    format!(
                        "<tool_call>{{\"name\": \"get-weather\", \"arguments\": {}}}</tool_call>",
                        json(a)
                    )
                },
                "\n",
            ),
            Dialect::Llama3 => format!(
                "<|python_tag|>{}",
                each(
                    &|a| format!("{{\"name\": \"get-weather\", \"parameters\": {}}}", json(a)),
                    "; "
                )
            ),
            Dialect::Mistral => format!(
                "[TOOL_CALLS][{}]",
                each(
                    &|a| format!("{{\"name\": \"get-weather\", \"arguments\": {}}}", json(a)),
                    ", "
                )
            ),
            Dialect::Pythonic => format!("[{}]", each(&keywords, ", ")),
            Dialect::Deepseek => format!(
                "<｜tool▁calls▁begin｜>{}<｜tool▁calls▁end｜>",
                each(
                    &|a| {
                        format!(
                            "<｜tool▁call▁begin｜>get-weather<｜tool▁sep｜>{}<｜tool▁call▁end｜>",
                            json(a)
                        )
                    },
                    ""
                )
            ),
            Dialect::Qwen3Xml => each(
                &|a| {
                    let parameters: String = a
                        .as_object()
                        .unwrap()
                        .iter()
                        .map(|(k, v)| match v {
                            Json::String(v) => format!("<parameter={k}>{v}</parameter>"),
                            v => format!("<parameter={k}>{v}</parameter>"),
                        })
                        .collect();
                    format!("<tool_call><function=get-weather>{parameters}</function></tool_call>")
                },
                "\n",
            ),
            Dialect::Harmony => each(
                &|a| {
                    format!(
                        "<|start|>assistant<|channel|>commentary to=functions.get-weather \
                         <|constrain|>json<|message|>{}<|call|>",
                        json(a)
                    )
                },
                "",
            ),
            other => panic!("no answer written in {other}"),
        }
    }

    /// A repair answer that writes again a call the first answer passed on (a model asked
    /// for its corrected calls that lists them all) has it dropped, in atfunc's syntax and
    /// every other format, fed whole and in pieces: the client gets each call once.
    #[test]
    fn a_repair_round_does_not_pass_on_a_call_made_in_an_earlier_round() {
        let (paris, bad, oslo) = (
            json!({"city": "Paris"}),
            json!({"days": 2}),
            json!({"city": "Oslo", "days": 2}),
        );
        let (first, repair) = ([paris.clone(), bad], [paris, oslo]);
        for dialect in Dialect::ALL {
            for size in [1, 3, 7, 4096] {
                let (first, repair) = (written(dialect, &first), written(dialect, &repair));
                let mut turn = native_turn(dialect, Choice::Auto, 1);
                let (mut out, end) = run(&mut turn, &first, size);
                assert_eq!(end, RoundEnd::Repair, "{dialect} {size}: {first}");
                let (more, end) = run(&mut turn, &repair, size);
                assert_eq!(end, RoundEnd::Done, "{dialect} {size}");
                out.extend(more);
                assert_eq!(
                    shape(&out)["calls"],
                    json!([
                        ["get-weather", "{\"city\":\"Paris\"}"],
                        ["get-weather", "{\"city\":\"Oslo\",\"days\":2}"]
                    ]),
                    "{dialect} {size}: {repair}"
                );
            }
        }
    }

    /// The conversation after the results of `get-weather("Paris")`, as the engine
    /// reads it.
    fn paris_results() -> super::super::Since {
        let history: Vec<Box<serde_json::value::RawValue>> = [
            json!({"role": "user", "content": "Weather in Paris?"}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
                "type": "function", "function": {"name": "get-weather",
                "arguments": "{\"city\": \"Paris\"}"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "{\"temp_c\": 21}"}),
        ]
        .iter()
        .map(super::super::request::raw)
        .collect();
        super::super::Since::read(&history, &tools())
    }

    /// A turn after the results of `get-weather("Paris")`, with the request for the
    /// answer in words, asked at once `at_cap`.
    fn after_paris(choice: Choice, at_cap: bool) -> Turn {
        let since = paris_results();
        let choice = since.choice(choice);
        let mut answer = Request::parse(br#"{"model": "m"}"#).unwrap();
        answer.push_message(&json!({"role": "user", "content": since.answer_note()}));
        let mut turn = turn(choice, 1);
        turn.after_results(&since, answer, at_cap);
        turn
    }

    #[test]
    fn after_results_a_call_made_before_is_dropped_and_the_answer_asked_in_words() {
        for answer in [
            "@get_weather(city=\"Paris\")",
            "@get_weather(\"Paris\")\n",
            "Function call: get-weather(city=\"Paris\")\nReturned: {\"temp_c\": 21}",
        ] {
            for size in [1, 3, 7, 4096] {
                // `required` would hold every answer to calls: after results it is `auto`.
                let mut turn = after_paris(Choice::Required, false);
                let (out, end) = run(&mut turn, answer, size);
                assert_eq!(end, RoundEnd::Repair, "{answer:?} {size}");
                assert_eq!(shape(&out), json!({"text": "", "calls": []}));
                assert!(!turn.repairing(), "the answer in words is the client's");
                let last = message_of(&turn, 0);
                assert!(
                    last["content"]
                        .as_str()
                        .unwrap()
                        .contains("\"Weather in Paris?\""),
                    "{last}"
                );
                let (out, end) = run(
                    &mut turn,
                    "It is 21 °C in Paris. @get_weather(\"Rome\")",
                    size,
                );
                assert_eq!(end, RoundEnd::Done);
                assert_eq!(
                    shape(&out),
                    json!({"text": "It is 21 °C in Paris.", "calls": []})
                );
            }
        }
    }

    #[test]
    fn after_results_calls_still_wrong_after_repair_give_way_to_the_answer_in_words() {
        for size in [1, 3, 4096] {
            let mut turn = after_paris(Choice::Auto, false);
            let (out, end) = run(&mut turn, "@get_weather(days=2)", size);
            assert_eq!((end, turn.repairing()), (RoundEnd::Repair, true));
            assert_eq!(shape(&out), json!({"text": "", "calls": []}));
            // The repair's answer is still wrong: not shown, the answer in words is asked.
            let (out, end) = run(&mut turn, "@get_weather(days=3)", size);
            assert_eq!(end, RoundEnd::Repair, "{size}");
            assert!(!turn.repairing(), "the answer in words is the client's");
            assert_eq!(shape(&out), json!({"text": "", "calls": []}));
            let (out, end) = run(&mut turn, "It is 21 °C in Paris.", size);
            assert_eq!(end, RoundEnd::Done);
            assert_eq!(
                shape(&out),
                json!({"text": "It is 21 °C in Paris.", "calls": []})
            );
        }
    }

    #[test]
    fn after_results_words_or_a_new_call_end_the_turn_as_they_are() {
        for size in [1, 3, 4096] {
            let mut turn = after_paris(Choice::Auto, false);
            let (out, end) = run(&mut turn, "It is 21 °C.\nReturned: {\"temp_c\": 21}", size);
            assert_eq!(end, RoundEnd::Done);
            assert_eq!(shape(&out), json!({"text": "It is 21 °C.", "calls": []}));
            let mut turn = after_paris(Choice::Auto, false);
            let (out, end) = run(
                &mut turn,
                "@get_weather(\"Paris\") @get_weather(\"Rome\")",
                size,
            );
            assert_eq!(end, RoundEnd::Done);
            assert_eq!(
                shape(&out),
                json!({"text": "", "calls": [["get-weather", "{\"city\":\"Rome\"}"]]})
            );
        }
    }

    #[test]
    fn at_the_cap_of_rounds_the_answer_is_asked_in_words_at_once() {
        let mut turn = after_paris(Choice::Auto, true);
        assert!(!turn.repairing());
        assert_eq!(message_of(&turn, 0)["role"], "user");
        let (out, end) = run(&mut turn, "@get_weather(\"Rome\") It is 21 °C.", 3);
        assert_eq!(end, RoundEnd::Done);
        assert_eq!(shape(&out), json!({"text": "It is 21 °C.", "calls": []}));
    }

    #[test]
    fn the_answer_in_words_drops_a_call_in_the_models_own_format() {
        let since = paris_results();
        let answer = Request::parse(br#"{"model": "m"}"#).unwrap();
        for size in [1, 3, 4096] {
            let mut turn = native_turn(Dialect::Hermes, Choice::Auto, 1);
            turn.after_results(&since, answer.clone(), true);
            let rome = written(Dialect::Hermes, &[json!({"city": "Rome"})]);
            let (out, end) = run(&mut turn, &format!("It is 21 °C. {rome}"), size);
            assert_eq!(end, RoundEnd::Done);
            assert_eq!(
                shape(&out),
                json!({"text": "It is 21 °C.", "calls": []}),
                "{size}"
            );
        }
    }

    /// The upstream's own `tool_calls` in a repair round are checked the same way.
    #[test]
    fn a_repair_round_does_not_pass_on_an_upstream_call_made_before() {
        let mut turn = native_turn(Dialect::Hermes, Choice::Auto, 1);
        let mut out = Vec::new();
        turn.feed(
            "<tool_call>{\"name\": \"get-weather\", \"arguments\": {}}</tool_call>",
            &mut out,
        );
        turn.take_upstream_calls(&json!([{"index": 0, "function":
            {"name": "get-weather", "arguments": "{\"city\": \"Rome\"}"}}]));
        assert_eq!(turn.end_round(&mut out), RoundEnd::Repair);
        turn.take_upstream_calls(&json!([{"index": 0, "function":
            {"name": "get-weather", "arguments": "{\"city\":\"Rome\"}"}}]));
        turn.feed("<tool_call>{\"name\": \"get-weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>", &mut out);
        assert_eq!(turn.end_round(&mut out), RoundEnd::Done);
        assert_eq!(
            shape(&out)["calls"],
            json!([
                ["get-weather", "{\"city\": \"Rome\"}"],
                ["get-weather", "{\"city\":\"Oslo\"}"]
            ])
        );
    }

    #[test]
    fn prose_with_an_at_sign_is_text() {
        let (out, _) = run(
            &mut turn(Choice::Auto, 1),
            "Mail bob@example.com or @team (soon",
            4,
        );
        assert_eq!(
            shape(&out),
            json!({"text": "Mail bob@example.com or @team (soon", "calls": []})
        );
    }
}
