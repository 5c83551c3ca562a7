//! The gateway: an OpenAI-compatible server that gives tools to a model that has no native
//! function calling (`atfunc serve`).
//!
//! Applications speak OpenAI's chat format with `tools`; the model behind an
//! OpenAI-compatible server (llama.cpp, Ollama, vLLM, LM Studio) only writes text. The
//! gateway stands between them:
//!
//! 1. The request's `tools` are rendered as the atfunc prompt and put in front of the
//!    system message that opens the conversation (or in a new one before it; a system
//!    message further on stays as it is). A tool name that is not an atfunc name is
//!    given one for the model (`get-weather` → `@get_weather`); answers use the client's
//!    name again. So is a parameter name that is not an identifier (`max-results`,
//!    `user.id`, `2fa_code`, `query text` → `max_results`, `user_id`, `_2fa_code`,
//!    `query_text`): other characters become `_`, a leading digit gets a `_` in front, and
//!    a name that would meet another of the same tool ignoring case gets `_2`, `_3`, …
//!    (names that are identifiers already are never changed, so `max-results` beside
//!    `max_results` is `max_results_2`). The fields of object parameters and of array
//!    items are renamed the same way, each object on its own.
//! 2. The history is rewritten into the same protocol: an assistant message's
//!    `tool_calls` become call text after its content, one call a line
//!    (`@get_weather(city="Paris")`, under the names the model is given, at every depth),
//!    and each run of `tool` messages becomes one **user** message of result blocks
//!    (`Function call: …` / `Returned: …`), since the upstream knows no `tool` role.
//!    A `tool` message whose `tool_call_id` no call of an assistant message before it has
//!    is answered 400, naming the id and the ids there are (one without an id is read by
//!    its `name`); an assistant message whose `content` is `null` or missing goes with
//!    `""` (servers that render the history with a template refuse `null`).
//! 3. The request goes upstream without `tools`, `tool_choice` and
//!    `parallel_tool_calls`; everything else (model, sampling, `stream_options`) as sent.
//! 4. The answer is read by the streaming parser and each call bound against the tools
//!    (names ignoring case, arguments typed). The prompt shows a tool's parameters but not
//!    the fields inside them, so inside an object argument a field may be written as the
//!    client spells it as well as by its given name; both bind. The client gets OpenAI's
//!    answer: calls as `tool_calls` (a fresh id each, the client's tool name, the bound
//!    arguments under the client's parameter and field names as a JSON string; fields the
//!    tool does not declare stay as written), the rest as `content` (`null` when only
//!    calls remain), `finish_reason: "tool_calls"` when there are calls. Whitespace at
//!    the ends of the content is dropped, and where calls were taken out their
//!    surroundings shrink to one space (or one line break, when there was one). A
//!    `reasoning_content` the upstream sends (the thinking of models that separate it) is
//!    passed on as it is, never parsed.
//!
//! # Repair rounds
//!
//! A call that does not bind (or cannot be read, or calls another tool than a named
//! `tool_choice` asks for) is not passed on. When the answer ends, the gateway asks the
//! model again, at most `repair_rounds` times: the conversation plus the model's answer
//! plus a user message with each failed call's error block and a request to write only the
//! corrected calls (at most 20 calls and about 16 KiB of them are quoted, each call and
//! error cut at 2000 characters; the message counts the calls left out, which are not
//! made). The calls of a repair answer are passed on like any others; its text is
//! not (the first answer's text was the reply). A call it writes again that an earlier
//! answer of the turn passed on (the same tool with the same bound arguments; for the
//! upstream's own `tool_calls`, the same name and arguments) is dropped: a model asked
//! for its corrected calls often lists them all, and the client would make it twice.
//! The same holds for resamples, and with [`TurnPolicy::keep_repeated_calls`] too, which
//! is about repeats within one answer. `tool_choice: "required"` and a named tool
//! are stated in the prompt and checked the same way: an answer without the call gets a
//! repair round. When no round is left, a failed call is given back as the text the model
//! wrote, at the end of the content (or where it stood, when `repair_rounds` is 0 and no
//! resample is ahead, below), and a required call may be missing.
//!
//! Under a grammar (see [Grammars](self#grammars)) a failed answer is first asked again as
//! the turn began, sampled, at most [`TurnPolicy::resamples`] times (default 3): the same
//! messages and grammar, at the client's temperature or 0.7 where the client asked for 0
//! or named none, with a seed each (the client's plus 1, 2, ...). A small model's answers
//! that do not bind under a grammar are loops inside a value that run to the token limit,
//! and a repair round asks it to go on from the loop; another sample rarely loops again
//! (on BFCL, EVAL.md (j)). A resample is treated like a repair round: its calls are passed
//! on, its text is not; an answer that passed a call on is never resampled (the client
//! has the call, and a resample would write it again), so it goes to a repair round. A
//! resample that answers without a call under `tool_choice: "auto"` ends the turn, and the
//! failed call is not shown. The repair rounds follow when every resample failed too, on
//! the client's own request and settings with the last answer; a call still failed at the
//! end is the last answer's.
//!
//! A call that repeats one passed on earlier in the same answer (the same tool with the
//! same bound arguments) ends the answer: it, the text after it and a call the token
//! limit cut short there are not read, so no call is made twice and no repair round is
//! asked for the cut one. A small model that cannot stop writes its calls again and
//! again (EVAL.md (h)). The upstream is asked for a stream even when the client wants
//! the answer whole (with `stream_options.include_usage`, so that the whole answer
//! still carries the usage), and the stream is dropped at the repeat, so a server that
//! notices its client leave (llama.cpp's does) stops spending tokens on the loop; the
//! usage of an answer dropped there is what the upstream counted before, usually
//! nothing, since servers count at the end. In executed turns the registry runs each
//! call once and the next step's history holds the answer up to the repeat.
//! [`TurnPolicy::keep_repeated_calls`] passes such repeats on instead, and a whole answer
//! is then asked for whole.
//!
//! Streaming (`stream: true`) works the same way: upstream deltas go through the parser as
//! they arrive (the upstream's event lines may end with `\r\n`, `\n` or `\r`); text is sent as `content` deltas as soon as the parser releases it (only a
//! possible call, and trailing whitespace, are held back); each call is sent whole as one
//! `tool_calls` delta once it has bound; repair rounds run after the upstream's stream ends
//! and continue the same client stream. The deltas add up to the non-streaming answer.
//! The upstream's token usage (summed over rounds) comes in a chunk of its own, with no
//! choices, when the client asked for it with `stream_options.include_usage`; otherwise on
//! the last chunk.
//!
//! # Grammars
//!
//! With [`TurnPolicy::constrain`] (`--constrain`), or per request with `"atfunc_constrain":
//! true` where [`TurnPolicy::constrain_per_request`] (`--constrain-per-request`) allows it
//! (otherwise such a request is answered 400 naming the flag; `false` always turns it off
//! for that request), a request with tools also carries the
//! GBNF grammar of its tools ([`atfunc::grammar`]), in the field [`UpstreamOptions::kind`]
//! names: `grammar` for llama.cpp and llama-cpp-python, `structured_outputs.grammar` for
//! vLLM (`guided_grammar` for older versions), `ebnf` for SGLang. `tool_choice` chooses the
//! grammar: `auto` lets prose and calls mix, `required` asks for at least one call, a named
//! tool for calls of it only; `none` sends no grammar. `parallel_tool_calls: false` allows
//! one call. Repair rounds carry the grammar of calls only (`required`, or the named tool).
//! An upstream that ignores the field gets the prompt and the repair rounds as before; when
//! no call of the tools can bind (a required parameter with no value of its type), no
//! grammar is sent. Streaming works the same way. The request sent upstream with its
//! grammar stays within [`GatewayLimits::max_request_bytes`], the limit on what comes in: a
//! grammar that would not fit is answered 413 and nothing is sent.
//!
//! A request's tools are loaded within [`GatewayLimits::load_limits`]: schemas whose `$ref`s
//! would write out more than that are answered 400 naming the function and the limit.
//!
//! # Tool lists kept
//!
//! Agents send the same `tools` with every request of a conversation. The gateway keeps
//! the tool lists it read lately, each under its exact text, with the prompt text and the
//! grammars built from it as they are built: a request whose `tools` are the same bytes
//! (not the same tools written otherwise) uses them after a hash and a comparison of the
//! bytes. What a request gets is what reading its list would give, the warnings about its
//! tools included (written once per gateway, as before); grammars that hold the
//! request's own words ([`TurnPolicy::ground_text`]) are built for each request. At most
//! [`GatewayLimits::tool_cache_lists`] lists (64) and [`GatewayLimits::tool_cache_bytes`]
//! bytes (64 MiB, about 35 lists of 200 tools) are kept, the list used longest ago going
//! first, so a client sending ever-new lists cannot make the gateway grow past them.
//!
//! # Deciding first
//!
//! With [`TurnPolicy::decide`] (`--decide`), a request under a grammar whose `tool_choice` is
//! `auto` (or not given) is decided first, as `atfunc eval --mode decide` measures it: a
//! short request (see below) whose grammar allows exactly one of the tools' names as the
//! prompt lists them, or `none`. For a name, the answer is asked for with the grammar of
//! that tool's calls (one call with `parallel_tool_calls: false`), and repair rounds keep
//! that grammar. For `none`, and for a decision that is neither (an upstream that ignores
//! grammars, or a name cut by [`TurnPolicy::decide_max_tokens`]), the answer is asked for
//! as without `--decide`: under the `auto` grammar, so prose has no stray `@` and a call
//! the model writes after all still binds; deciding first only ever narrows the answer to
//! the function the model chose. The decision request is the answer's request as it would
//! go upstream (the client's fields, the prompted conversation) with one more user
//! message, `Which function answers the last message? Write its name, or none.`
//! ([`DECIDE_QUESTION`](atfunc::grammar::DECIDE_QUESTION)), its grammar in the field of
//! [`UpstreamOptions::kind`], `max_tokens` set to [`TurnPolicy::decide_max_tokens`] (no
//! `max_completion_tokens`), and `stream: false` (no `stream_options`): it is never
//! streamed to the client; the answer after it streams as usual. Its usage counts in the
//! turn's. An upstream error on it is the request's error. `tool_choice` `required`,
//! `none` or a named tool are not decided.
//!
//! # Weighing first
//!
//! With [`TurnPolicy::call_threshold`] (`--call-threshold P`), a request under a grammar
//! whose `tool_choice` is `auto` (or not given) is weighed first, as `atfunc eval
//! --call-threshold P` measures it: the answer's request as it would go upstream, before
//! its grammar (the prompted conversation, or for another format the tools for the
//! model's template), asked for one token (`max_tokens: 1`, no `max_completion_tokens`)
//! with `logprobs: true` and `top_logprobs: 20`, unstreamed. The probability of the
//! alternatives that open a call in the upstream's format (`@` for atfunc; for hermes
//! `<tool_call>`, a fence, `{` or `[`) is the call's odds. At or above `P` the answer is
//! asked for under the `required` grammar (one call with `parallel_tool_calls: false`);
//! below it, under a grammar of prose alone, so the answer has no call. The first token's
//! greedy choice is a worse judge than its odds for a small model that calls for every
//! question, or for none (EVAL.md (ae)). Its usage counts in the turn's. The odds go to
//! the client beside `choices`, `"atfunc": {"call_odds": p}` (streamed, in the chunk with
//! the finish reason), for it to log and calibrate `P` by.
//!
//! The one-token request carries the messages and, of the client's other fields, only
//! those that make the prompt (`model`; `tools` and `tool_choice` for a model's own
//! format; `chat_template`, `chat_template_kwargs`, `add_generation_prompt`,
//! `continue_final_message`): never the client's sampling settings (`stop`, `logit_bias`,
//! `n_predict`, `temperature`, ...), which servers do not apply to the log probabilities
//! they report and some of which would change or break the one token.
//!
//! By default ([`CallThreshold::Default`]) atfunc's syntax is weighed at
//! [`DEFAULT_CALL_THRESHOLD`] (0.03), a model's own format and `--decide` are not. The
//! default takes the weighing where the upstream's model allows it, as a request of the
//! gateway's own finds, once per model: the first time a request names a model, the
//! gateway asks it one token of `Hello` with `logprobs` and `top_logprobs` and nothing of
//! the client's. A model that answers without log probabilities, or refuses them (400,
//! 422 with a message that names them, the model's name aside), is written to stderr once
//! and not weighed again; its answers go under the `auto` grammar. An answer that says
//! nothing of it (404 for a client's unknown model, 401, 429) is not kept. What is
//! learned is kept for at most 64 models. A client's own one-token request never changes
//! what other requests get: refused (4xx), or answered without log probabilities, its
//! answer goes unweighed and leaves it to the answer's own request. With an explicit `P`
//! an upstream error on the weighing, or an answer without log probabilities, is the
//! request's error (502). Either way, log probabilities that are there but cannot be read
//! (`NaN` for a token that opens a call; `-Infinity` is a token that cannot come, and
//! counts nothing) leave that answer unweighed, under the `auto` grammar. An answer of
//! the upstream that is JSON but for Python's words for numbers that are not finite
//! (`NaN`, `Infinity`, `-Infinity`) is read with those words as strings, whole or as a
//! stream's event. `--call-threshold off` never weighs.
//!
//! # Other formats
//!
//! With [`UpstreamOptions::dialect`] (`--upstream-dialect`) other than `atfunc`, the
//! model behind the upstream is one trained for function calling that writes its calls in
//! its own format as plain content, because its server has no tool parser (vLLM without
//! `--tool-call-parser`, a raw llama.cpp, a custom server). Steps 1 to 3 change: the
//! request's `tools` and its history (assistant `tool_calls`, `tool` messages) go upstream
//! as they came, for the model's chat template to show, but that an assistant message
//! whose `content` is `null` or missing gets `""` (llama-cpp-python answers 500 for
//! either) and `tool_call_id`s are checked as in step 2; no atfunc prompt is added;
//! `tool_choice` goes as `"none"` (a server without a tool parser refuses `auto`, and
//! would enforce a named tool with a JSON schema, not in the model's format) and
//! `parallel_tool_calls` is left out. Step 4 reads the answer in that format (`auto`: the
//! format of the first call read in each answer) into the same `tool_calls`, whole or
//! streamed, with the text around calls as `content`. The model names tools and
//! parameters as the client defined them. `tool_choice: "required"`, a named tool and
//! `parallel_tool_calls: false` are checked as for atfunc text (a repair round when a call
//! is missing, the first call kept), but not stated to the model: only its template
//! speaks to it. A call block that cannot be read (its opening marker written, the rest
//! not in the format) is refused like a call that does not bind, and repair messages show
//! each call as the model wrote it and never ask for atfunc's syntax. With `hermes`, a
//! grammar holds the answer to the tools' call objects, all of them one JSON list in a
//! ```` ```json ```` fence ([`CallForm::HermesList`](atfunc::grammar::CallForm::HermesList)),
//! or to `<tool_call>` blocks with [`UpstreamOptions::hermes_blocks`];
//! no grammar is made for other formats: `atfunc_constrain: true` is answered 400. `tool_calls` the upstream
//! sends itself (a server that did read them) are passed on as they came, after the calls
//! read from the text. `atfunc_execute` requests still use atfunc's syntax.
//!
//! # Pass-through
//!
//! A request without `tools` (absent, `null` or empty) is forwarded byte for byte, and a
//! successful answer comes back byte for byte, streamed or not; a stream is passed on
//! event by event, each once it is whole, so that a stream the gateway ends early (the
//! size limit, an upstream failure, the request's time limit) ends with its error event
//! on a line of its own after the last whole event, never inside an unfinished `data:`
//! line. `tool_choice: "none"`
//! rewrites the history (so earlier calls and results still read right), sends no tools and
//! passes the answer through. `GET /v1/models` passes through. `n` above 1 is refused for
//! requests with tools.
//!
//! # Running the calls
//!
//! With a [`Registry`](atfunc_tools::Registry) ([`GatewayOptions::registry`], from `--config`), a request carrying
//! `"atfunc_execute": true` (or every request without `tools`, with
//! [`TurnPolicy::execute_all`]) is answered by the gateway and the model together: the
//! model is shown the registry's functions, the gateway runs the calls of each answer and
//! sends the result blocks back as a user message, until an answer has no calls or
//! [`TurnPolicy::max_steps`] answers were made. The client gets the text of every answer
//! (calls taken out, answers separated by a blank line) as `content`, and an `atfunc`
//! field beside `choices`: `{"steps": N, "calls": [{"name", "args", "result" | "error",
//! "elements"}, ...], "stopped": "max_steps"}` (`elements`, what a tool showed the user and
//! the model never sees, only when it has any; `stopped` only when a limit ended the
//! loop). A streaming request gets the text as deltas and `atfunc` in the last chunk. Such
//! a request may not carry `tools` of its own.
//!
//! One such request runs at most 1000 calls, refused ones included: the first call past
//! them is refused, nothing after it is read, and the turn ends (`"stopped": "max_calls"`).
//! A call's result is dropped once its record and block are written, so a turn holds at
//! most those per call. An error that ends such a request once its turn has begun (an
//! upstream failure in any step, [`GatewayLimits::request_timeout`]), whole or as a
//! stream's error event, carries the records of the calls that ran as
//! `error.atfunc_executed` (`[]` when none did), so that a client that retries does not
//! run them again.
//!
//! Every call's events ([`CallEvent`](atfunc_tools::CallEvent)) reach the client: in a
//! whole answer as `atfunc.events`; in a stream as they happen, in chunks with an empty
//! delta and `"atfunc": {"events": [...]}` beside `choices`.
//!
//! A call of a function that needs the user's confirmation is not run: the turn ends
//! with it as a `tool_calls` entry (the function's name as defined, the bound arguments,
//! `call_` and the confirmation id of its `held` event as the id); the answer's other
//! calls ran as usual, and the gateway keeps nothing of the held one. The client's answer to it, in a later
//! request's history (the assistant's `tool_calls`, then a `tool` message), is rewritten
//! into call text and a result block as in a request with tools.
//!
//! # What the gateway finds out by itself
//!
//! With [`DetectOptions::enabled`] (`atfunc serve` without `--no-detect`),
//! [`Gateway::detect_upstream`] asks the upstream's own routes what kind of server it is
//! and what call format its model's chat template teaches, and chooses from one table
//! where a grammar goes ([`UpstreamOptions::kind`]; none for Ollama), the call format
//! ([`UpstreamOptions::dialect`]) and whether every request goes under a grammar
//! ([`TurnPolicy::constrain`]). A setting marked given ([`GivenSettings`]) keeps its
//! value. When nothing answers in [`DetectOptions::wait_at_start`], the defaults hold and
//! the upstream is asked again in the background; a request reads the policy in effect
//! once, when it starts. `GET /atfunc/policy` shows what was found and chosen, each
//! setting with where it came from. The contract, the table and the route's JSON are in
//! docs/gateway.md, "What the gateway finds out by itself".
//!
//! # Limits and errors
//!
//! - Request bodies above [`GatewayLimits::max_request_bytes`] get 413 (at once when their
//!   declared length says so); a body whose chunked encoding is malformed, or that ends
//!   before it is whole, gets 400. Upstream answers above [`UpstreamOptions::max_response_bytes`]
//!   are cut off with an error, and an answer the gateway reads (one with calls to find)
//!   that is not UTF-8, whole or in any event of its stream, is a 502 (an error event
//!   once the client's stream has started), never read with replacement characters;
//!   `atfunc eval` reads answers with the same routine. A request is held as the
//!   text it came in, field by field and message by message; only the messages rewritten
//!   are parsed, and of `tools` only what the interface loader reads (an 8 MB request of
//!   padded tools peaks the gateway at about 45 MB, not 450).
//! - One request passes on at most 1000 calls: each is a `tool_calls` entry many times
//!   the size of its text. Calls past it are refused as calls that do not bind are, so
//!   when no round is left only they are given back as text, never a call passed on (a
//!   repair answer that writes the passed-on calls again has them dropped, above).
//! - [`UpstreamOptions::timeout`] bounds the wait for the upstream's response head and for
//!   each piece of its body; past it the client gets 504 (or, mid-stream, an error event).
//! - Upstream errors come back with the upstream's status in OpenAI's shape
//!   (`{"error": {"message", "type", "code"}}`), keeping an OpenAI-shaped upstream error as
//!   it was (a numeric `code`, `param` and other fields included). A repair round whose
//!   request fails ends the turn with what was already answered. A 502 for an upstream
//!   that cannot be reached says why, never the upstream's URL (its path or credentials);
//!   `atfunc serve` logs the URL without credentials or query ([`shown_url`]).
//! - An error inside the upstream's stream (a chunk whose `error` is not `null`, an event
//!   of type `error`, or the `error:` field llama.cpp's server writes) ends the client's
//!   stream with an error event. So does an upstream stream that ends with neither
//!   `[DONE]` nor a finish reason: a cut-off answer is not passed off as a whole one.
//! - A client that goes away ends the upstream request.
//! - [`GatewayLimits::request_timeout`] bounds a request as a whole, from its head to its
//!   answer's last byte (all upstream answers, repair rounds and executed steps): past it
//!   the client gets 504, or, once a stream has started, an error event that ends it, and
//!   the upstream request is dropped. An upstream that sends one byte a second is cut
//!   there, not followed for its whole length.
//! - A connection [`serve`] accepts is closed when it stalls: no request for
//!   [`GatewayLimits::idle_timeout`] (before the first one too), or a request head not whole
//!   [`GatewayLimits::header_timeout`] after its first byte, or a client that takes nothing of
//!   its answer for [`GatewayLimits::idle_timeout`] (one that asks for a stream and never reads
//!   it would hold its place among [`GatewayLimits::max_concurrent`] for good). A body not whole
//!   [`GatewayLimits::body_timeout`] after the head gets 408. These run before the key check:
//!   clients that open connections and send nothing cannot use up the file descriptors.
//! - At most [`GatewayLimits::max_concurrent`] requests (64 by default) are handled at once, a
//!   streamed answer holding its place until its last byte; one more gets 503 with
//!   `Retry-After: 1` at once. A request takes its place when its body is whole: a body
//!   on its way holds none, so clients that send a head and one byte of a body and stall
//!   do not keep other requests out until [`GatewayLimits::body_timeout`]. Bodies hold bytes
//!   instead, from when they are read until their answer is over: together at most as
//!   many as `max_concurrent` bodies of [`GatewayLimits::max_request_bytes`]; a piece beyond
//!   that gets the same 503, so a crowd cannot make the gateway hold more request bodies
//!   than that many requests could send.
//!   `GET /health` is not counted.
//! - An answer given before the request's body was read (503, 401, 413 for a declared
//!   length, 400) ends the connection with a lingering close: the rest of the body is read
//!   and thrown away, at most [`GatewayLimits::max_request_bytes`] of it for at most
//!   [`GatewayLimits::linger_timeout`], so the client, still sending, reads the answer instead of
//!   a connection reset (a broken pipe).
//! - With [`GatewayOptions::api_key`], every request but `GET /health` must carry
//!   `Authorization: Bearer <key>`. The upstream gets `Authorization: Bearer
//!   <upstream_key>` when one is set; otherwise, when the gateway has no key of its own, the
//!   client's `Authorization` header is forwarded.

mod body;
mod chat;
mod deadline;
mod decide;
mod detect;
mod error;
mod execute;
mod listen;
mod options;
mod reply;
mod rounds;
mod sse;
mod tool_cache;
mod trace;
mod upstream;
mod warned;
mod weighable;

pub use crate::turn::UpstreamKind;
pub use error::ApiError;
pub use options::{
    CallThreshold, DetectOptions, GatewayLimits, GatewayOptions, GivenSettings, TurnPolicy,
    UpstreamOptions, DEFAULT_CALL_THRESHOLD, DEFAULT_MAX_CONCURRENT,
};
pub use upstream::shown_url;

use atfunc::parse::Dialect;
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use std::future::Future;
use std::sync::Arc;
use upstream::Upstream;

/// The default address: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8089";

/// Options that cannot make a gateway.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SetupError(String);

/// The gateway: its options and its upstream client. Serve it with [`serve`], on
/// connections accepted elsewhere with [`ConnectionServer`], or mount [`Gateway::router`]
/// in an axum application (without the connection time limits and the lingering close).
///
/// ```
/// use atfunc_gateway::serve::{Gateway, GatewayOptions};
/// let gateway = Gateway::new(GatewayOptions::new("http://127.0.0.1:11434")).unwrap();
/// let _router = gateway.router();
/// assert!(Gateway::new(GatewayOptions::new("nowhere")).is_err());
/// ```
#[derive(Debug)]
pub struct Gateway {
    options: GatewayOptions,
    upstream: Upstream,
    /// `Bearer <api_key>`, as clients must send it.
    expected_auth: Option<Vec<u8>>,
    /// What the upstream gets as `Authorization`, when a key is set for it.
    upstream_auth: Option<HeaderValue>,
    /// One permit per request under way (`max_concurrent` in all), taken once its body
    /// is whole.
    slots: Arc<tokio::sync::Semaphore>,
    /// The warnings about clients' tools already written to stderr: clients send the same
    /// tools with every request, and each warning is worth reading once.
    warned: std::sync::Mutex<warned::Warned>,
    /// The bytes the bodies being read may hold together.
    bodies: body::BodyBudget,
    /// Which upstream models return log probabilities, as the gateway's own requests
    /// found: the answers of one that does not go unweighed ([`CallThreshold::Default`]).
    weighable: weighable::Models,
    /// The tool lists read lately, by their text (see [Tool lists kept](self#tool-lists-kept)).
    tools: tool_cache::ToolCache<crate::turn::ToolSet>,
    /// The policy in effect: the options' settings, or what was chosen for the upstream
    /// found (see [`Gateway::detect_upstream`]).
    policy: Arc<detect::PolicyCell>,
}

impl Gateway {
    /// A gateway for `options`. Fails on an upstream URL that is not `http(s)://...`, an
    /// empty key, or `execute_all` without a registry.
    pub fn new(options: GatewayOptions) -> Result<Gateway, SetupError> {
        let upstream = Upstream::new(
            &options.upstream.url,
            options.upstream.timeout,
            options.upstream.max_response_bytes,
        )
        .map_err(SetupError)?;
        if options.api_key.as_deref().is_some_and(str::is_empty) {
            return Err(SetupError("the API key is empty".into()));
        }
        if options.limits.max_concurrent == 0 {
            return Err(SetupError(
                "the most requests at once must be at least 1".into(),
            ));
        }
        for (limit, what) in [
            (options.limits.header_timeout, "header"),
            (options.limits.body_timeout, "body"),
            (options.limits.idle_timeout, "idle"),
            (options.limits.request_timeout, "request"),
        ] {
            if limit.is_zero() {
                return Err(SetupError(format!(
                    "the {what} time limit must be more than zero"
                )));
            }
        }
        if !crate::turn::has_grammar(options.upstream.dialect)
            && (options.policy.constrain || options.policy.constrain_per_request)
        {
            return Err(SetupError(format!(
                "grammars are only made for atfunc's syntax and hermes, and the upstream \
                 dialect is {}: leave out --constrain and --constrain-per-request, or use \
                 --upstream-dialect atfunc or hermes",
                options.upstream.dialect
            )));
        }
        if options.policy.decide && options.upstream.dialect != Dialect::Atfunc {
            return Err(SetupError(format!(
                "deciding first (--decide) asks with atfunc's prompt, and the upstream dialect \
                 is {}: leave out --decide, or use --upstream-dialect atfunc",
                options.upstream.dialect
            )));
        }
        if options.policy.decide
            && !options.policy.constrain
            && !options.policy.constrain_per_request
        {
            return Err(SetupError(
                "deciding first (--decide) asks under a grammar: give --constrain (or \
                 --constrain-per-request) too"
                    .into(),
            ));
        }
        if options.policy.decide && options.policy.decide_max_tokens == 0 {
            return Err(SetupError(
                "the decision's token limit (--decide-max-tokens) must be at least 1".into(),
            ));
        }
        if let Some(threshold) = options.policy.call_threshold.explicit() {
            if let Some(error) = crate::turn::threshold_error(threshold) {
                return Err(SetupError(error));
            }
            if options.policy.decide {
                return Err(SetupError(
                    "weighing first (--call-threshold) and deciding first (--decide) both judge \
                     whether to call: give one of them"
                        .into(),
                ));
            }
            if !options.policy.constrain && !options.policy.constrain_per_request {
                return Err(SetupError(
                    "weighing first (--call-threshold) holds the answer to calls or to prose \
                     with a grammar: give --constrain (or --constrain-per-request) too"
                        .into(),
                ));
            }
        }
        if options.policy.execute_all && options.registry.is_none() {
            return Err(SetupError(
                "running every request's calls needs a config with tool boxes".into(),
            ));
        }
        let upstream_auth =
            match &options.upstream.key {
                Some(key) => Some(HeaderValue::from_str(&format!("Bearer {key}")).map_err(
                    |_| SetupError("the upstream key is not a valid header value".into()),
                )?),
                None => None,
            };
        let expected_auth = options
            .api_key
            .as_ref()
            .map(|key| format!("Bearer {key}").into_bytes());
        let slots = Arc::new(tokio::sync::Semaphore::new(options.limits.max_concurrent));
        let bodies = body::BodyBudget::new(
            options.limits.max_concurrent,
            options.limits.max_request_bytes,
        );
        let tools = tool_cache::ToolCache::new(
            options.limits.tool_cache_lists,
            options.limits.tool_cache_bytes,
        );
        let finding = if options.detect.enabled {
            detect::Finding::Waiting
        } else {
            detect::Finding::Off
        };
        let policy = Arc::new(detect::PolicyCell::new(detect::InEffect::resolve(
            &options, finding,
        )));
        Ok(Gateway {
            policy,
            options,
            upstream,
            expected_auth,
            upstream_auth,
            slots,
            warned: std::sync::Mutex::default(),
            bodies,
            weighable: weighable::Models::default(),
            tools,
        })
    }

    /// Answers one chat completion request in this process, as `POST /v1/chat/completions`
    /// would answer its body, without a socket, a client key or a place among
    /// [`Options::max_concurrent`]: the status and the whole body (a stream's events, for
    /// a request that asks for one). The evaluator puts its cases so, so that its figures
    /// measure the gateway's own code rather than a copy of it.
    #[doc(hidden)]
    pub async fn complete(
        self: &Arc<Self>,
        body: axum::body::Bytes,
    ) -> (axum::http::StatusCode, Result<axum::body::Bytes, String>) {
        let ran = execute::RanCalls::default();
        let response = match chat::handle(Arc::clone(self), HeaderMap::new(), body, ran).await {
            Ok(response) => response,
            Err(error) => error.into_response(),
        };
        let status = response.status();
        // The gateway bounds what it reads of the upstream; its own answer is a few times
        // that at most (a call's JSON beside its text).
        let limit = self.options.upstream.max_response_bytes.saturating_mul(4);
        let body = axum::body::to_bytes(response.into_body(), limit)
            .await
            .map_err(|e| format!("cannot read the gateway's answer: {e}"));
        (status, body)
    }

    /// Writes a request's tool warnings to stderr: each once per gateway, a bounded
    /// number per request and a count of the rest (see the `warned` module).
    pub(crate) fn warn_once(&self, warnings: &[atfunc::interface::Problem]) {
        if warnings.is_empty() {
            return;
        }
        let lines = match self.warned.lock() {
            Ok(mut warned) => warned.admit(warnings.iter().map(|w| w.warning())),
            Err(_) => return,
        };
        for line in lines {
            // Names come from clients: their escape sequences are shown, not obeyed.
            let shown = atfunc::format::escape_lines_for_terminal(&line);
            eprintln!("atfunc serve: warning: a request's tools: {shown}");
        }
    }

    /// What the gateway knows of whether the upstream's `model` (a request's `model`
    /// field) returns log probabilities, asking it the first time (see [`weighable`]):
    /// `None` when its answer said nothing of it. Says so on stderr when a model is
    /// learned not to.
    pub(crate) async fn weighable(
        &self,
        model: Option<&serde_json::value::RawValue>,
        auth: Option<&HeaderValue>,
    ) -> Result<Option<weighable::Known>, ApiError> {
        let key = weighable::model_key(model);
        if let Some(known) = self.weighable.get(key) {
            return Ok(Some(known));
        }
        let body = axum::body::Bytes::from(weighable::probe_body(model));
        let answer = self.upstream.chat_json(body, auth).await;
        let known = weighable::read_probe(answer, key)?;
        if let Some(known) = known {
            let new = self.weighable.learn(key, known);
            if new && known == weighable::Known::Unweighable {
                let model = if key.is_empty() { "(none named)" } else { key };
                let shown = atfunc::format::escape_lines_for_terminal(model);
                eprintln!(
                    "atfunc serve: warning: answers under tool_choice \"auto\" for the model \
                     {shown} are not weighed first (the default, --call-threshold {}), since \
                     the upstream returns no log probabilities for it; they go under the \
                     auto grammar. --call-threshold off stops this check; --call-threshold P \
                     requires the weighing",
                    options::DEFAULT_CALL_THRESHOLD
                );
            }
        }
        Ok(known)
    }

    /// The options in force. The settings detection may choose (the upstream's kind, the
    /// call format, the grammar) are in effect as `GET /atfunc/policy` shows them.
    pub fn options(&self) -> &GatewayOptions {
        &self.options
    }

    /// Finds out what the upstream is, when [`DetectOptions::enabled`], and chooses the
    /// policy from it (see [What the gateway finds out by itself](self#what-the-gateway-finds-out-by-itself)):
    /// returns once the upstream answered or [`DetectOptions::wait_at_start`] passed,
    /// having said on stderr what it found and chose. When nothing answered, the defaults
    /// hold and the upstream is asked again in a task of its own on the current tokio
    /// runtime, until it answers or the gateway is dropped. Call it before serving.
    pub async fn detect_upstream(&self) {
        if !self.options.detect.enabled {
            return;
        }
        let Some(probe) = detect::Probe::new(&self.options, self.upstream_auth.clone()) else {
            return;
        };
        detect::at_start(&self.policy, probe, &self.options).await;
    }

    /// The policy in effect for a request: read once per request.
    pub(crate) fn policy_in_effect(&self) -> Arc<detect::InEffect> {
        self.policy.get()
    }

    /// The routes: `POST /v1/chat/completions`, `GET /v1/models` (also without `/v1`),
    /// `GET /atfunc/policy` (what was found of the upstream and the policy in effect), and
    /// `GET /health`.
    pub fn router(self) -> Router {
        let state = Arc::new(self);
        // A chat completion takes its place itself, once its body is whole (see
        // `chat_completions`); the models have no body to wait for.
        Router::new()
            .route("/v1/models", get(models))
            .route("/models", get(models))
            .route_layer(axum::middleware::from_fn_with_state(
                Arc::clone(&state),
                one_of_max_concurrent,
            ))
            .route("/v1/chat/completions", post(chat_completions))
            .route("/chat/completions", post(chat_completions))
            .route_layer(axum::middleware::from_fn_with_state(
                Arc::clone(&state),
                within_request_timeout,
            ))
            .route("/health", get(|| async { "ok" }))
            .route("/atfunc/policy", get(policy))
            .layer(axum::middleware::from_fn(trace::traced))
            .with_state(state)
    }

    /// Checks the client's key, comparing in time that does not depend on where the two
    /// differ.
    fn authorize(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let Some(expected) = &self.expected_auth else {
            return Ok(());
        };
        let given = headers
            .get(header::AUTHORIZATION)
            .map(HeaderValue::as_bytes)
            .unwrap_or_default();
        let mut diff = u8::from(given.len() != expected.len());
        for (a, b) in given.iter().zip(expected.iter()) {
            diff |= a ^ b;
        }
        if diff == 0 {
            Ok(())
        } else {
            Err(ApiError::unauthorized())
        }
    }

    /// The `Authorization` header for the upstream.
    fn upstream_auth(&self, headers: &HeaderMap) -> Option<HeaderValue> {
        match (&self.upstream_auth, &self.expected_auth) {
            (Some(auth), _) => Some(auth.clone()),
            (None, None) => headers.get(header::AUTHORIZATION).cloned(),
            (None, Some(_)) => None,
        }
    }
}

/// Lets a request in when fewer than `max_concurrent` are under way, else answers 503 at
/// once. The place is held until the answer's body is done (or dropped), not only until
/// its head is sent: a streamed answer is most of a request's life.
async fn one_of_max_concurrent(
    State(gateway): State<Arc<Gateway>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match gateway.take_place() {
        Ok(place) => held((place, None), next.run(request).await),
        Err(busy) => busy.into_response(),
    }
}

impl Gateway {
    /// One of the `max_concurrent` places, or 503.
    fn take_place(&self) -> Result<tokio::sync::OwnedSemaphorePermit, ApiError> {
        Arc::clone(&self.slots)
            .try_acquire_owned()
            .map_err(|_| ApiError::busy(self.options.limits.max_concurrent))
    }
}

/// `response`, holding `place` (and the request body's bytes of the body budget) until
/// its body is done or dropped.
fn held(
    place: (tokio::sync::OwnedSemaphorePermit, Option<body::BodyBytes>),
    response: Response,
) -> Response {
    let (parts, body) = response.into_parts();
    let body = futures::StreamExt::map(body.into_data_stream(), move |chunk| {
        // Owned by the stream: the place is given back when the body is dropped.
        let _held = &place;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

/// Ends a request that passes [`GatewayLimits::request_timeout`]: 504 while its answer has not
/// started, else the answer is cut off there, an event stream with an error event.
async fn within_request_timeout(
    State(gateway): State<Arc<Gateway>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let limit = gateway.options.limits.request_timeout;
    let deadline = tokio::time::Instant::now() + limit;
    // An executed request's calls that ran by the deadline are named in its error.
    let mut request = request;
    let ran = execute::RanCalls::default();
    request.extensions_mut().insert(ran.clone());
    let Ok(response) = tokio::time::timeout_at(deadline, next.run(request)).await else {
        return ran.report(ApiError::request_timeout(limit)).into_response();
    };
    let is_stream = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let last = is_stream.then(|| -> deadline::LastEvent {
        Box::new(move || reply::error_event(&ran.report(ApiError::request_timeout(limit))))
    });
    response.map(|body| Body::new(deadline::Cut::new(body, deadline, last)))
}

/// Checks the key, reads the body whole, then takes one of the `max_concurrent` places: a
/// body on its way holds bytes of the gateway's body budget, not a place (see
/// [`body`]), so clients whose bodies stall cannot keep whole requests out.
async fn chat_completions(
    State(gateway): State<Arc<Gateway>>,
    ran: Option<axum::Extension<execute::RanCalls>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let ran = ran.map(|axum::Extension(ran)| ran).unwrap_or_default();
    let answer = async {
        gateway.authorize(&headers)?;
        let (raw, bytes) = body::read(
            body,
            gateway.options.limits.max_request_bytes,
            gateway.options.limits.body_timeout,
            &gateway.bodies,
        )
        .await?;
        let place = (gateway.take_place()?, Some(bytes));
        let response = match chat::handle(Arc::clone(&gateway), headers, raw, ran).await {
            Ok(response) => response,
            Err(error) => error.into_response(),
        };
        Ok::<_, ApiError>(held(place, response))
    };
    answer.await.unwrap_or_else(IntoResponse::into_response)
}

/// `GET /atfunc/policy`: what the gateway found of its upstream and the policy in effect,
/// each setting with where it came from. Behind the key, as every route but `/health`.
async fn policy(State(gateway): State<Arc<Gateway>>, headers: HeaderMap) -> Response {
    if let Err(error) = gateway.authorize(&headers) {
        return error.into_response();
    }
    axum::Json(gateway.policy_in_effect().json()).into_response()
}

async fn models(State(gateway): State<Arc<Gateway>>, headers: HeaderMap) -> Response {
    if let Err(error) = gateway.authorize(&headers) {
        return error.into_response();
    }
    let auth = gateway.upstream_auth(&headers);
    match gateway.upstream.models(auth.as_ref()).await {
        Ok(response) => chat::relay(gateway, response).await,
        Err(error) => error.into_response(),
    }
}

/// Serves `gateway` on `listener` until `shutdown` completes; requests under way are
/// finished first. Connections are closed when they stall: a request head not whole
/// [`GatewayLimits::header_timeout`] after its first byte, or nothing of a request for
/// [`GatewayLimits::idle_timeout`] (see also [`GatewayLimits::body_timeout`]).
pub async fn serve(
    listener: tokio::net::TcpListener,
    gateway: Gateway,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let server = ConnectionServer::new(gateway);
    listen::serve(listener, server.router, server.limits, shutdown).await
}

/// The gateway, for a program that accepts its connections itself (a Unix socket, a TLS
/// stream, an in-memory pipe): each is served as [`serve`] serves the connections it
/// accepts, with HTTP/1, the time limits of [`GatewayOptions`] and the lingering close after an
/// answer given before the request's body was read.
///
/// ```
/// use atfunc_gateway::serve::{ConnectionServer, Gateway, GatewayOptions};
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let server = ConnectionServer::new(Gateway::new(GatewayOptions::default()).unwrap());
/// let (client, connection) = tokio::io::duplex(1 << 16);
/// tokio::spawn(async move { server.serve_connection(connection, std::future::pending()).await });
/// let (mut from_server, mut to_server) = tokio::io::split(client);
/// to_server
///     .write_all(b"GET /health HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\n\r\n")
///     .await
///     .unwrap();
/// let mut answer = String::new();
/// from_server.read_to_string(&mut answer).await.unwrap();
/// assert!(answer.starts_with("HTTP/1.1 200 OK") && answer.ends_with("ok"));
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct ConnectionServer {
    router: Router,
    limits: listen::Limits,
}

impl ConnectionServer {
    /// Serves `gateway`'s routes ([`Gateway::router`]) with its options' time limits.
    pub fn new(gateway: Gateway) -> ConnectionServer {
        let limits = listen::Limits {
            header: gateway.options.limits.header_timeout,
            idle: gateway.options.limits.idle_timeout,
            linger: gateway.options.limits.linger_timeout,
            linger_bytes: gateway.options.limits.max_request_bytes,
        };
        ConnectionServer {
            router: gateway.router(),
            limits,
        }
    }

    /// Serves one connection until it closes: its client closes it, or a time limit
    /// does. Once `shutdown` completes, the request under way is finished and the
    /// connection closed. Errors are the connection's alone and end it quietly.
    pub async fn serve_connection<S>(&self, connection: S, shutdown: impl Future<Output = ()>)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        listen::connection(connection, self.router.clone(), self.limits, shutdown).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// An upstream that takes connections and never answers: a request to it holds its
    /// place at the gateway until the upstream time limit.
    async fn silent_upstream() -> (String, tokio::task::JoinHandle<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            // Bounded: the test makes two requests at most.
            for _ in 0..4 {
                match listener.accept().await {
                    Ok((socket, _)) => held.push(socket),
                    Err(_) => return,
                }
            }
        });
        (format!("http://{address}"), task)
    }

    #[tokio::test]
    async fn a_request_beyond_max_concurrent_gets_503_at_once() {
        let (upstream, upstream_task) = silent_upstream().await;
        let gateway = Gateway::new({
            let mut options = GatewayOptions::default();
            options.upstream.url = upstream;
            options.upstream.timeout = Duration::from_secs(20);
            options.limits.max_concurrent = 1;
            options
        })
        .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, gateway.router()).await;
        });
        let client = reqwest::Client::new();
        let url = format!("http://{address}/v1/chat/completions");
        let body = r#"{"model": "m", "messages": [{"role": "user", "content": "hi"}]}"#;
        let first = tokio::spawn({
            let request = client
                .post(&url)
                .header("content-type", "application/json")
                .body(body);
            async move { request.send().await }
        });
        // Until the first request holds the only place (bounded wait).
        let mut answered = None;
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let second = tokio::time::timeout(
                Duration::from_secs(2),
                client
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(body)
                    .send(),
            )
            .await
            .expect("a request beyond the limit waited instead of being refused")
            .unwrap();
            if second.status() == axum::http::StatusCode::SERVICE_UNAVAILABLE {
                answered = Some(second);
                break;
            }
        }
        let busy = answered.expect("no request was refused while one was under way");
        assert_eq!(busy.headers()["retry-after"], "1");
        let text = busy.text().await.unwrap();
        assert!(text.contains("\"code\":\"busy\""), "{text}");
        let health = client
            .get(format!("http://{address}/health"))
            .send()
            .await
            .unwrap();
        assert_eq!(health.status(), axum::http::StatusCode::OK);
        first.abort();
        server.abort();
        upstream_task.abort();
    }

    #[test]
    fn max_concurrent_must_be_at_least_one() {
        let error = Gateway::new({
            let mut options = GatewayOptions::default();
            options.limits.max_concurrent = 0;
            options
        })
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "the most requests at once must be at least 1"
        );
    }
}
