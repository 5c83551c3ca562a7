//! A model's answer executed while it streams in: fed chunk by chunk ([`ResponseStream`]),
//! or read from a byte stream while its calls run ([`Outcomes`]).

use super::outcome::{ExecutionReport, Outcome};
use super::turn::{job, Job, Turn};
use super::view::{Conversation, Settings};
use crate::events::{self, CallEvent, CallEventHook};
use crate::toolbox::CallContext;
use atfunc::bind::Repeats;
use atfunc::parse::{Event, Span, StreamParser};
use futures::future::BoxFuture;
use futures::stream::{FuturesOrdered, FuturesUnordered};
use futures::{Stream, StreamExt};
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// A model's answer being executed while it streams in; made by [`Registry::stream`].
///
/// Each call runs as soon as the parser has read all of it. The functions offered are
/// those of the registry when the stream was made. The stream is the conversation: what
/// a model changes with a control function (its [`Settings`]) lasts for the rest of the
/// answer and no further, unless carried on with [`ResponseStream::with_settings`].
///
/// The stream borrows nothing: it keeps what it needs of the registry (the functions
/// offered, and what it shares with it: statistics, call ids, held calls), so it may
/// outlive the registry's handle, move to another task, or become a response body (with
/// [`ResponseStream::run`], a `Stream + Send + 'static` when its input is).
///
/// [`Registry::stream`]: super::Registry::stream
pub struct ResponseStream {
    turn: Arc<Turn>,
    parser: StreamParser,
    ctx: CallContext,
    conversation: Arc<Conversation>,
    /// Every outcome so far, in call order, and their blocks joined; both stay empty when
    /// `keep` is off.
    calls: Vec<Outcome>,
    output: String,
    /// Whether an outcome given out of call order made `output` out of date: it is joined
    /// again from `calls` when read ([`ResponseStream::output`]).
    output_stale: bool,
    /// How many outcomes there were, kept or not.
    call_count: usize,
    keep: bool,
    /// The registry's event hook and this stream's own.
    events: Option<CallEventHook>,
    /// With [`ResponseStream::end_at_repeated_call`]: the calls asked for so far.
    repeats: Option<Repeats>,
    /// With [`ResponseStream::limit_calls`]: how many more calls may run.
    budget: Option<CallBudget>,
    /// How many calls were started: the next one's [`Outcome::index`].
    started: usize,
    /// With [`ResponseStream::in_completion_order`]: [`Outcomes`] gives each outcome as
    /// soon as its call is done.
    completion_order: bool,
}

/// The calls a request may still make, over all its answers.
#[derive(Debug, Clone, Copy)]
struct CallBudget {
    /// How many calls one request may make.
    limit: usize,
    /// How many of them are left; the first call once none is left ends the answer.
    left: usize,
    /// Where the first call past the limit stood, once one came.
    passed_at: Option<Span>,
}

/// Calls read by [`ResponseStream::read_str`], not run yet.
#[doc(hidden)]
#[derive(Default)]
pub struct ReadCalls(Vec<Job>);

impl ReadCalls {
    /// Whether no call was read.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The end of a [`ResponseStream`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StreamEnd {
    /// The outcomes of the calls completed by the end of the input (an unterminated call,
    /// for instance), not returned by an earlier `feed`.
    pub outcomes: Vec<Outcome>,
    /// The whole answer's report.
    pub report: ExecutionReport,
    /// With [`ResponseStream::end_at_repeated_call`], the span of the call that ended the
    /// answer: neither it nor anything after it ran.
    pub repeated_at: Option<Span>,
}

impl std::fmt::Debug for ResponseStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseStream")
            .field("calls", &self.call_count)
            .finish()
    }
}

impl ResponseStream {
    /// A stream running `turn`'s calls, its events going to `events` (the registry's hook).
    pub(super) fn new(
        turn: Turn,
        parser: StreamParser,
        ctx: CallContext,
        conversation: Conversation,
        events: Option<CallEventHook>,
    ) -> ResponseStream {
        ResponseStream {
            turn: Arc::new(turn),
            parser,
            ctx,
            conversation: Arc::new(conversation),
            calls: Vec::new(),
            output: String::new(),
            output_stale: false,
            call_count: 0,
            keep: true,
            events,
            repeats: None,
            budget: None,
            started: 0,
            completion_order: false,
        }
    }

    /// Makes [`ResponseStream::run`] give each outcome as soon as its call is done, not in
    /// the order the calls appear: with calls running at once
    /// ([`Registry::set_concurrency`](crate::Registry::set_concurrency)), a slow call no
    /// longer holds back the outcomes of quicker calls after it. Each outcome's
    /// [`index`](Outcome::index) says where its call stands; the report at the end
    /// ([`Outcomes::report`]) has the calls and their blocks in call order still.
    pub fn in_completion_order(mut self) -> Self {
        self.completion_order = true;
        self
    }

    /// The next call's index, counted.
    fn next_index(&mut self) -> usize {
        let index = self.started;
        self.started += 1;
        index
    }

    /// Ends the answer at the first call past `limit` calls for the request, `made` of
    /// them made in its earlier answers: that call does not run but is refused
    /// ([`ToolError::CallLimit`](crate::ToolError::CallLimit)), and nothing after
    /// it is read. Every call read counts, refused ones too, since each has an outcome.
    #[doc(hidden)]
    pub fn limit_calls(mut self, limit: usize, made: usize) -> Self {
        self.budget = Some(CallBudget {
            limit,
            left: limit.saturating_sub(made),
            passed_at: None,
        });
        self
    }

    /// With [`ResponseStream::limit_calls`], the span of the first call past the limit,
    /// which ended the answer, once one has.
    #[doc(hidden)]
    pub fn call_limit_passed_at(&self) -> Option<Span> {
        self.budget.and_then(|budget| budget.passed_at)
    }

    /// Whether nothing more of the answer is read: a repeated call or the call limit
    /// ended it.
    fn is_over(&self) -> bool {
        self.repeats.as_ref().is_some_and(Repeats::is_over)
            || self.budget.is_some_and(|budget| budget.passed_at.is_some())
    }

    /// Ends the answer at the first call that repeats an earlier one: the same function
    /// with the same bound arguments (and body), however the call spelled them. Neither
    /// the repeat nor any call after it runs, and [`StreamEnd::repeated_at`] says where it
    /// stood.
    ///
    /// For answers of a model that may loop: a small model that cannot stop writes its
    /// calls again and again until its token limit, and each copy would run (and the last,
    /// cut short, be refused). A call a model means to make twice in one answer is rare;
    /// by default every call runs, as written.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let registry = atfunc_tools::Registry::new();
    /// let answer = "@tools.get_toolboxes() @TOOLS.Get_Toolboxes() @tools.get_toolb";
    /// let mut stream = registry.stream().end_at_repeated_call();
    /// stream.feed_str(answer).await;
    /// let end = stream.finish().await;
    /// assert_eq!(end.report.call_count, 1);
    /// assert_eq!(end.repeated_at.map(|span| span.start), Some(23));
    /// # }
    /// ```
    pub fn end_at_repeated_call(mut self) -> Self {
        self.repeats = Some(Repeats::default());
        self
    }

    /// With [`ResponseStream::end_at_repeated_call`], the span of the call that ended
    /// the answer, once one has.
    pub fn repeated_at(&self) -> Option<Span> {
        self.repeats.as_ref().and_then(Repeats::ended_at)
    }

    /// The jobs of `events` that run: all of them, or with
    /// [`ResponseStream::end_at_repeated_call`] those before the first repeat.
    fn jobs(&mut self, events: Vec<Event>) -> Vec<Job> {
        self.read_events(events, &mut |_| {})
    }

    /// [`ResponseStream::jobs`], showing `seen` each event read: every one up to the end
    /// of the answer, the call that ends it (a repeat, the first past the call limit)
    /// included, and none after it.
    fn read_events(&mut self, events: Vec<Event>, seen: &mut dyn FnMut(&Event)) -> Vec<Job> {
        let mut jobs = Vec::new();
        for event in events {
            if self.is_over() {
                break;
            }
            seen(&event);
            let Some(job) = job(&self.turn.snapshot, event) else {
                continue;
            };
            let runs = match (self.repeats.as_mut(), &job) {
                (None, _) => true,
                (Some(repeats), Job::Bound { bound, .. }) => repeats.admit(bound),
                // A call that did not bind is no repeat: it is read until the answer ends.
                (Some(_), Job::Refused { .. }) => true,
            };
            if !runs {
                continue;
            }
            match self.budget.as_mut() {
                None => jobs.push(job),
                Some(budget) if budget.left == 0 => {
                    budget.passed_at = Some(job.span());
                    jobs.push(job.past_limit(budget.limit));
                }
                Some(budget) => {
                    budget.left -= 1;
                    jobs.push(job);
                }
            }
        }
        jobs
    }

    /// Reads the next chunk of the answer without running its calls: each event read goes
    /// to `seen` (see [`ResponseStream::read_events`]), and the calls completed come back,
    /// to run with [`ResponseStream::run_read`]. For a reader that passes the answer's text
    /// on as it comes, the text before a call before the call runs, with one parse for
    /// both.
    #[doc(hidden)]
    pub fn read_str(&mut self, chunk: &str, seen: &mut dyn FnMut(&Event)) -> ReadCalls {
        let events = self.parser.feed(chunk.as_bytes());
        ReadCalls(self.read_events(events, seen))
    }

    /// [`ResponseStream::read_str`] for the end of the answer.
    #[doc(hidden)]
    pub fn finish_reading(&mut self, seen: &mut dyn FnMut(&Event)) -> ReadCalls {
        let events = self.parser.finish();
        ReadCalls(self.read_events(events, seen))
    }

    /// Runs calls [`ResponseStream::read_str`] read, giving each outcome to `each` as it
    /// comes, in order: a caller that keeps only part of each (its record, its block)
    /// never holds the results of many calls at once.
    #[doc(hidden)]
    pub async fn run_read(&mut self, calls: ReadCalls, each: impl FnMut(Outcome) + Send) {
        self.run_each(calls.0, each).await;
    }

    /// The end of an answer read with [`ResponseStream::finish_reading`] and run.
    #[doc(hidden)]
    pub fn ended(self) -> StreamEnd {
        self.end(Vec::new())
    }

    /// Calls `hook` with the events of this answer's calls (as
    /// [`Registry::on_event`](super::Registry::on_event) describes them), besides the
    /// registry's hook: for a caller that follows one conversation among many sharing a
    /// registry.
    pub fn on_event(mut self, hook: impl Fn(&CallEvent) + Send + Sync + 'static) -> Self {
        self.events = events::both(self.events.take(), Some(Arc::new(hook)));
        self
    }

    /// Gives each outcome once, without keeping it for the final report (which keeps
    /// them by default).
    ///
    /// For a caller that handles each outcome as it comes (prints it, writes it out):
    /// memory then stays flat however many calls the answer holds, and the report at the
    /// end ([`StreamEnd::report`], [`Outcomes::report`]) has the call count and the
    /// settings but no `calls` and an empty `output`; [`ResponseStream::outcomes`] is
    /// empty too.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let registry = atfunc_tools::Registry::new();
    /// let mut stream = registry.stream().forget_outcomes();
    /// for _ in 0..3 {
    ///     let outcomes = stream.feed_str("@nowhere.call()\n").await;
    ///     assert_eq!(outcomes.len(), 1);
    /// }
    /// let end = stream.finish().await;
    /// assert_eq!(end.report.call_count, 3);
    /// assert!(end.report.calls.is_empty());
    /// # }
    /// ```
    pub fn forget_outcomes(mut self) -> Self {
        self.keep = false;
        self
    }

    /// Counts an outcome and, when records are kept, keeps it and its block, in call
    /// order (an outcome given in completion order goes back to its place).
    fn record(&mut self, outcome: &Outcome) {
        self.call_count += 1;
        if !self.keep {
            return;
        }
        let at = self
            .calls
            .partition_point(|kept| kept.index < outcome.index);
        if at < self.calls.len() {
            self.calls.insert(at, outcome.clone());
            // Joined again once, when the report is asked for.
            self.output_stale = true;
            return;
        }
        if self.output_stale {
            self.calls.push(outcome.clone());
            return;
        }
        // Blocks are joined as `format_results` joins them: a blank line between two.
        if !self.output.is_empty() {
            self.output.push('\n');
        }
        self.output.push_str(&outcome.block);
        self.calls.push(outcome.clone());
    }

    /// Continues a conversation: the stream starts with `settings` (those a model set in
    /// an earlier answer, from [`ExecutionReport::settings`]) instead of the registry's.
    pub fn with_settings(self, settings: &Settings) -> Self {
        self.conversation
            .set_truncate_length(settings.truncate_length);
        self
    }

    /// The conversation's settings now.
    pub fn settings(&self) -> Settings {
        self.conversation.settings()
    }

    /// Feeds the next chunk of the answer; runs the calls it completes and returns their
    /// outcomes, in order.
    ///
    /// The calls run before `feed` returns, so while a slow tool runs nothing more of the
    /// answer is read. To read on while tools run, hand the answer's byte stream to
    /// [`ResponseStream::run`] instead.
    pub async fn feed(&mut self, chunk: &[u8]) -> Vec<Outcome> {
        let events = self.parser.feed(chunk);
        self.run_events(events).await
    }

    /// Feeds the next chunk of text.
    pub async fn feed_str(&mut self, chunk: &str) -> Vec<Outcome> {
        self.feed(chunk.as_bytes()).await
    }

    /// The blocks of the outcomes kept, joined in call order.
    fn output(&self) -> String {
        if self.output_stale {
            joined_blocks(&self.calls)
        } else {
            self.output.clone()
        }
    }

    /// The outcomes so far.
    pub fn outcomes(&self) -> &[Outcome] {
        &self.calls
    }

    /// Ends the answer: a call left unterminated gets its error block.
    pub async fn finish(mut self) -> StreamEnd {
        let events = self.parser.finish();
        let outcomes = self.run_events(events).await;
        self.end(outcomes)
    }

    /// The end of the answer, `outcomes` the last calls' (not given by an earlier `feed`).
    fn end(self, outcomes: Vec<Outcome>) -> StreamEnd {
        StreamEnd {
            outcomes,
            repeated_at: self.repeated_at(),
            report: ExecutionReport {
                call_count: self.call_count,
                output: self.output(),
                calls: self.calls,
                settings: self.conversation.settings(),
            },
        }
    }

    async fn run_events(&mut self, events: Vec<Event>) -> Vec<Outcome> {
        let jobs = self.jobs(events);
        self.run_jobs(jobs).await
    }

    async fn run_jobs(&mut self, jobs: Vec<Job>) -> Vec<Outcome> {
        let mut outcomes = Vec::with_capacity(jobs.len());
        self.run_each(jobs, |outcome| outcomes.push(outcome)).await;
        outcomes
    }

    /// Runs `jobs` (up to the concurrency limit at once) and gives each outcome to `each`
    /// as it comes, in order, once it is recorded.
    async fn run_each(&mut self, jobs: Vec<Job>, mut each: impl FnMut(Outcome) + Send) {
        if jobs.is_empty() {
            return;
        }
        let turn = Arc::clone(&self.turn);
        let conversation = Arc::clone(&self.conversation);
        let ctx = self.ctx.clone();
        let hook = self.events.clone();
        let concurrency = turn.snapshot.concurrency;
        let first = self.started;
        self.started += jobs.len();
        // Each run owns what it needs, so outcomes are recorded while later calls run.
        let runs = jobs.into_iter().enumerate().map(move |(n, job)| {
            let (turn, conversation) = (Arc::clone(&turn), Arc::clone(&conversation));
            let (ctx, hook) = (ctx.clone(), hook.clone());
            let call_id = turn.ledger.next_call_id();
            async move {
                let mut outcome = turn.run_job(&conversation, &ctx, call_id, job, hook).await;
                outcome.index = first + n;
                outcome
            }
        });
        let mut outcomes = futures::stream::iter(runs).buffered(concurrency);
        while let Some(outcome) = outcomes.next().await {
            self.record(&outcome);
            each(outcome);
        }
    }
}

impl ResponseStream {
    /// Reads the answer from `input`, a stream of byte chunks (reqwest's `bytes_stream()`,
    /// a channel, a file read in pieces), and gives each call's outcome once it is done:
    /// in the order the calls appear, so an outcome waits for those of the calls before it
    /// (with [`ResponseStream::in_completion_order`], as soon as its call is done).
    ///
    /// Reading and running overlap: while a tool runs, the next chunks are read and parsed,
    /// so a slow tool does not hold up the model's output; reading pauses once 64 calls
    /// wait to start, so input that comes faster than its calls run is not held whole; and
    /// one poll reads at most 64 KiB (or 256 chunks) before it yields to the runtime, so
    /// input that is always ready does not keep the thread from its other tasks. Calls still run one after
    /// another (or up to [`Registry::set_concurrency`](crate::Registry::set_concurrency) at once), as with
    /// [`feed`](ResponseStream::feed). An error of `input` ends the reading: the calls read
    /// before it still run, their outcomes come first, and the error comes last, as an
    /// [`InputError`] that says how many bytes were read; the text after the last complete
    /// call (a call cut short by the error) is not run.
    ///
    /// ```
    /// use atfunc_tools::{FnBox, Registry};
    /// use atfunc::{Interface, Param, ParamType};
    /// use futures::StreamExt;
    /// use serde_json::json;
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let registry = Registry::new();
    ///     registry
    ///         .register(FnBox::new("math").function(
    ///             Interface::new("double").in_domain("math")
    ///                 .param(Param::new("x", ParamType::Number).required()),
    ///             |args, _ctx| Ok(json!(args.get::<f64>("x")? * 2.0)),
    ///         ))
    ///         .unwrap();
    ///
    ///     // The model's answer as it arrives, in pieces that split calls anywhere.
    ///     let chunks = ["Twice 2 is @math.dou", "ble(2) and twice 5 is @math.double(5", ")."];
    ///     let input = futures::stream::iter(chunks.map(Ok::<_, std::io::Error>));
    ///
    ///     let mut outcomes = registry.stream().run(input);
    ///     while let Some(outcome) = outcomes.next().await {
    ///         let outcome = outcome.expect("the input has no errors");
    ///         print!("{}", outcome.block);
    ///     }
    ///     let report = outcomes.report();
    ///     assert_eq!(report.call_count, 2);
    ///     assert_eq!(report.calls[1].result, Ok(json!(10.0)));
    /// }
    /// ```
    pub fn run<S, B, E>(self, input: S) -> Outcomes<S, E>
    where
        S: Stream<Item = Result<B, E>>,
        B: AsRef<[u8]>,
    {
        Outcomes {
            input: Some(Box::pin(input)),
            running: if self.completion_order {
                Running::Unordered(FuturesUnordered::new())
            } else {
                Running::Ordered(FuturesOrdered::new())
            },
            stream: self,
            queued: VecDeque::new(),
            bytes_read: 0,
            failed: None,
            pieces: None,
        }
    }

    /// [`ResponseStream::run`], giving the answer's text too: one parse for a service
    /// that shows the model's words as they come and the calls' outcomes among them (a
    /// server-sent event stream, a chat window).
    ///
    /// The pieces come in the answer's order: a run of text as soon as it is read, each
    /// call's outcome where the call stood, so the text after a call waits for its outcome
    /// (as the text after it waits for a slow tool in a chat). With
    /// [`ResponseStream::in_completion_order`] the text comes as soon as it is read and
    /// each outcome as soon as its call is done, wherever it stood: a call's text before
    /// it still comes first, and [`Outcome::span`] says where the call stood. Text is what
    /// the parser released: the answer without its calls, invalid UTF-8 replaced; text
    /// held back when the input fails (a call cut short) does not come. Everything else
    /// is as with [`ResponseStream::run`]: an input error comes last, after every piece
    /// read before it.
    ///
    /// ```
    /// use atfunc_tools::{FnBox, Piece, Registry};
    /// use atfunc::{Interface, Param, ParamType};
    /// use futures::StreamExt;
    /// use serde_json::json;
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let registry = Registry::new();
    ///     registry
    ///         .register(FnBox::new("math").function(
    ///             Interface::new("double").in_domain("math")
    ///                 .param(Param::new("x", ParamType::Number).required()),
    ///             |args, _ctx| Ok(json!(args.get::<f64>("x")? * 2.0)),
    ///         ))
    ///         .unwrap();
    ///     let chunks = ["Twice 2 is @math.dou", "ble(2), twice 5 is @math.double(5", ")."];
    ///     let input = futures::stream::iter(chunks.map(Ok::<_, std::io::Error>));
    ///
    ///     let mut shown = String::new();
    ///     let mut pieces = registry.stream().run_with_text(input);
    ///     while let Some(piece) = pieces.next().await {
    ///         match piece.expect("the input has no errors") {
    ///             Piece::Text(text) => shown.push_str(&text),
    ///             Piece::Outcome(outcome) => shown.push_str(&format!("[{}]", outcome.result.unwrap())),
    ///             _ => {}
    ///         }
    ///     }
    ///     assert_eq!(shown, "Twice 2 is [4.0], twice 5 is [10.0].");
    /// }
    /// ```
    pub fn run_with_text<S, B, E>(self, input: S) -> Pieces<S, E>
    where
        S: Stream<Item = Result<B, E>>,
        B: AsRef<[u8]>,
    {
        let mut outcomes = self.run(input);
        outcomes.pieces = Some(VecDeque::new());
        Pieces(outcomes)
    }
}

/// A piece of an answer read by [`ResponseStream::run_with_text`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
// An outcome is moved once, to whoever reads the stream, as [`Outcomes`] gives it
// unboxed: a box would cost an allocation per call and buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Piece {
    /// Text of the answer between its calls, as the parser released it (a run may come in
    /// several pieces).
    Text(String),
    /// A call's outcome: it returned, failed, was refused (a call that does not bind, text
    /// that looked like a call and could not be read) or is held.
    Outcome(Outcome),
}

/// What [`Outcomes`] still has to give, in the answer's order, when it gives text too.
#[derive(Debug)]
enum Slot {
    Text(String),
    /// Where a call that runs stood: in call order its outcome's place, which holds back
    /// what follows until it comes.
    Call,
}

/// How much input one poll of [`Outcomes`] reads at most, in bytes and in chunks, before
/// it yields to the runtime: input that is always ready (a file, a pipe, a channel filled
/// ahead) and holds no call would otherwise be read whole in one poll, starving every
/// other task on the thread. 64 KiB is a few milliseconds of parsing.
const POLL_READ_BYTES: usize = 64 * 1024;
const POLL_READ_CHUNKS: usize = 256;

/// The blocks of `calls`, joined as [`ResponseStream::record`] joins them.
fn joined_blocks(calls: &[Outcome]) -> String {
    let blocks: Vec<&str> = calls.iter().map(|call| call.block.as_str()).collect();
    blocks.join("\n")
}

/// Calls read ahead and not started, past which [`Outcomes`] reads no more input until
/// some have started: enough to keep a model's stream parsed while a tool runs, few
/// enough that memory does not grow with the input.
const MAX_QUEUED: usize = 64;

/// The outcomes of an answer read from a byte stream while its calls run; made by
/// [`ResponseStream::run`]. A [`futures::Stream`] of `Result<Outcome, InputError<E>>`, `E`
/// being the error of the input `S`: an error, if the input fails, is the stream's last item, after
/// the outcome of every call read before it.
pub struct Outcomes<S, E> {
    /// `None` once the input has ended or failed (the parser is then finished).
    input: Option<Pin<Box<S>>>,
    stream: ResponseStream,
    /// Calls read but not started: at most `concurrency` run at once.
    queued: VecDeque<Job>,
    running: Running,
    /// The bytes of the input fed to the parser so far.
    bytes_read: usize,
    /// The input's error, given once every call read before it has its outcome.
    failed: Option<InputError<E>>,
    /// With [`ResponseStream::run_with_text`]: what was read and is not given yet, in the
    /// answer's order (in completion order outcomes come as they finish, wherever their
    /// place).
    pieces: Option<VecDeque<Slot>>,
}

/// The calls an [`Outcomes`] runs: their outcomes in call order, or as they finish
/// ([`ResponseStream::in_completion_order`]).
enum Running {
    Ordered(FuturesOrdered<BoxFuture<'static, Outcome>>),
    Unordered(FuturesUnordered<BoxFuture<'static, Outcome>>),
}

impl Running {
    fn len(&self) -> usize {
        match self {
            Running::Ordered(running) => running.len(),
            Running::Unordered(running) => running.len(),
        }
    }

    fn push(&mut self, run: BoxFuture<'static, Outcome>) {
        match self {
            Running::Ordered(running) => running.push_back(run),
            Running::Unordered(running) => running.push(run),
        }
    }

    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Outcome>> {
        match self {
            Running::Ordered(running) => running.poll_next_unpin(cx),
            Running::Unordered(running) => running.poll_next_unpin(cx),
        }
    }
}

/// The error of the input an [`Outcomes`] read, given after the outcome of every call read
/// before it: nothing that completed is lost. `bytes_read` says how far the answer was
/// read; a call that the error cut short did not run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct InputError<E> {
    /// The input's own error.
    pub error: E,
    /// How many bytes of the answer were read before the error.
    pub bytes_read: usize,
}

/// `reading the answer failed after 1234 bytes: <the error>`.
impl<E: std::fmt::Display> std::fmt::Display for InputError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "reading the answer failed after {} bytes: {}",
            self.bytes_read, self.error
        )
    }
}

/// The input's error is in the message; its causes are the source, so a report that walks
/// the chain names each once.
impl<E: std::error::Error + 'static> std::error::Error for InputError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

// Nothing of an `Outcomes` is pinned structurally: the input and the running calls are
// boxed, and the input's error is only moved out, never polled.
impl<S, E> Unpin for Outcomes<S, E> {}

impl<S, E> std::fmt::Debug for Outcomes<S, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outcomes")
            .field("reading", &self.input.is_some())
            .field("queued", &self.queued.len())
            .field("running", &self.running.len())
            .field("done", &self.stream.call_count)
            .finish()
    }
}

impl<S, E> Outcomes<S, E> {
    /// What the answer's calls did so far: every outcome given, the result blocks joined,
    /// the conversation's settings. Complete once the stream has ended.
    pub fn report(&self) -> ExecutionReport {
        ExecutionReport {
            output: self.stream.output(),
            call_count: self.stream.call_count,
            calls: self.stream.calls.clone(),
            settings: self.stream.settings(),
        }
    }

    /// With [`ResponseStream::end_at_repeated_call`], the span of the call that ended
    /// the answer, once one has.
    pub fn repeated_at(&self) -> Option<Span> {
        self.stream.repeated_at()
    }

    fn queue(&mut self, events: Vec<Event>) {
        let Some(pieces) = self.pieces.as_mut() else {
            let jobs = self.stream.jobs(events);
            self.queued.extend(jobs);
            return;
        };
        // What the answer holds, in order: text, and the start of each call read. A call
        // that does not run (after a repeat) has no outcome, so no place.
        let mut read: Vec<Result<String, u64>> = Vec::new();
        let jobs = self.stream.read_events(events, &mut |event| match event {
            Event::Text { text } => read.push(Ok(text.clone())),
            Event::InvalidUtf8 { bytes, .. } => {
                read.push(Ok(String::from_utf8_lossy(bytes).into_owned()));
            }
            Event::Call(call) => read.push(Err(call.span.start)),
            Event::Malformed { span, .. } => read.push(Err(span.start)),
            _ => {}
        });
        let mut runs = jobs.iter().map(|job| job.span().start).peekable();
        for item in read {
            match item {
                // A run of text is one piece as far as it is read; a call ends it.
                Ok(text) => match pieces.back_mut() {
                    Some(Slot::Text(last)) => last.push_str(&text),
                    _ => pieces.push_back(Slot::Text(text)),
                },
                Err(start) if runs.peek() == Some(&start) => {
                    runs.next();
                    pieces.push_back(Slot::Call);
                }
                Err(_) => {}
            }
        }
        self.queued.extend(jobs);
    }

    /// The text at the front of what is to be given, if any. In completion order a call's
    /// place holds nothing back: it only ends the run of text before it.
    fn text_first(&mut self) -> Option<String> {
        let in_call_order = matches!(self.running, Running::Ordered(_));
        let pieces = self.pieces.as_mut()?;
        while !in_call_order && matches!(pieces.front(), Some(Slot::Call)) {
            pieces.pop_front();
        }
        match pieces.front() {
            Some(Slot::Text(_)) => match pieces.pop_front() {
                Some(Slot::Text(text)) => Some(text),
                _ => None,
            },
            _ => None,
        }
    }

    /// Starts queued calls while fewer than the concurrency limit run.
    fn start(&mut self) {
        while self.running.len() < self.stream.turn.snapshot.concurrency {
            let Some(job) = self.queued.pop_front() else {
                return;
            };
            let turn = Arc::clone(&self.stream.turn);
            let conversation = Arc::clone(&self.stream.conversation);
            let ctx = self.stream.ctx.clone();
            let hook = self.stream.events.clone();
            let call_id = turn.ledger.next_call_id();
            let index = self.stream.next_index();
            self.running.push(Box::pin(async move {
                let mut outcome = turn.run_job(&conversation, &ctx, call_id, job, hook).await;
                outcome.index = index;
                outcome
            }));
        }
    }
}

impl<S, B, E> Outcomes<S, E>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    /// The next piece: text (only when made by [`ResponseStream::run_with_text`]) or an
    /// outcome; the input's error last.
    fn poll_piece(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Piece, InputError<E>>>> {
        let this = self;
        // Read all the input that is ready before looking at the calls, so that parsing
        // keeps up with the model while a tool runs; but only so far ahead of them: input
        // that comes faster than its calls run (a file, a pipe) would otherwise be queued
        // whole, a job per call. Nor more than a budget per poll, so that the runtime's
        // other tasks run.
        let (mut bytes, mut chunks) = (0usize, 0usize);
        let mut over_budget = false;
        while let Some(input) = this.input.as_mut() {
            if this.queued.len() >= MAX_QUEUED {
                break;
            }
            if bytes >= POLL_READ_BYTES || chunks >= POLL_READ_CHUNKS {
                over_budget = true;
                break;
            }
            match input.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    let chunk = chunk.as_ref();
                    this.bytes_read += chunk.len();
                    bytes += chunk.len();
                    chunks += 1;
                    let events = this.stream.parser.feed(chunk);
                    this.queue(events);
                }
                Poll::Ready(Some(Err(error))) => {
                    // The parser is not finished: the answer did not end, it was cut, and
                    // a call it cut short is no call. The calls read before it still run.
                    this.input = None;
                    this.failed = Some(InputError {
                        error,
                        bytes_read: this.bytes_read,
                    });
                }
                Poll::Ready(None) => {
                    this.input = None;
                    let events = this.stream.parser.finish();
                    this.queue(events);
                }
                Poll::Pending => break,
            }
        }
        this.start();
        if let Some(text) = this.text_first() {
            return Poll::Ready(Some(Ok(Piece::Text(text))));
        }
        match this.running.poll_next(cx) {
            Poll::Ready(Some(outcome)) => {
                this.stream.record(&outcome);
                // The next queued call starts now, not at the next poll.
                this.start();
                let in_call_order = matches!(this.running, Running::Ordered(_));
                if let (true, Some(pieces)) = (in_call_order, this.pieces.as_mut()) {
                    // This outcome is the place at the front: the text before it went
                    // first. (In completion order places are passed over as text goes.)
                    if let Some(Slot::Call) = pieces.front() {
                        pieces.pop_front();
                    }
                }
                Poll::Ready(Some(Ok(Piece::Outcome(outcome))))
            }
            Poll::Ready(None) if this.input.is_none() && this.queued.is_empty() => {
                Poll::Ready(this.failed.take().map(Err))
            }
            _ => {
                if over_budget {
                    // More input is ready: come back for it after the other tasks.
                    cx.waker().wake_by_ref();
                }
                Poll::Pending
            }
        }
    }
}

impl<S, B, E> Stream for Outcomes<S, E>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    type Item = Result<Outcome, InputError<E>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        // Nothing here is pinned structurally: the input is boxed, the futures are boxed.
        let this = self.get_mut();
        loop {
            return match this.poll_piece(cx) {
                Poll::Ready(Some(Ok(Piece::Outcome(outcome)))) => Poll::Ready(Some(Ok(outcome))),
                // Made by `run`, it keeps no text; were there any, it is passed over.
                Poll::Ready(Some(Ok(Piece::Text(_)))) => continue,
                Poll::Ready(Some(Err(error))) => Poll::Ready(Some(Err(error))),
                Poll::Ready(None) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            };
        }
    }
}

/// The text and outcomes of an answer read from a byte stream while its calls run; made
/// by [`ResponseStream::run_with_text`]. A [`futures::Stream`] of
/// `Result<Piece, InputError<E>>`; as [`Outcomes`] otherwise.
pub struct Pieces<S, E>(Outcomes<S, E>);

impl<S, E> Pieces<S, E> {
    /// What the answer's calls did so far ([`Outcomes::report`]).
    pub fn report(&self) -> ExecutionReport {
        self.0.report()
    }

    /// The span of the call that ended the answer ([`Outcomes::repeated_at`]).
    pub fn repeated_at(&self) -> Option<Span> {
        self.0.repeated_at()
    }
}

impl<S, E> std::fmt::Debug for Pieces<S, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Pieces").field(&self.0).finish()
    }
}

impl<S, B, E> Stream for Pieces<S, E>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    type Item = Result<Piece, InputError<E>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().0.poll_piece(cx)
    }
}
