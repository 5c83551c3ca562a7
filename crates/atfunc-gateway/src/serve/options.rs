//! The gateway's options: its upstream, its limits, its policy for a turn, and the keys
//! and tool boxes beside them. Every field has the default `atfunc serve` gives it; the
//! structs may gain fields in any release, so they are built from their defaults and
//! set field by field:
//!
//! ```
//! use atfunc_gateway::serve::GatewayOptions;
//! let mut options = GatewayOptions::new("http://127.0.0.1:11434");
//! options.policy.constrain = true;
//! options.limits.max_concurrent = 8;
//! assert_eq!(options.upstream.url, "http://127.0.0.1:11434");
//! ```

use super::UpstreamKind;
use atfunc::interface::LoadLimits;
use atfunc::parse::Dialect;
use atfunc_tools::Registry;
use std::sync::Arc;
use std::time::Duration;

/// How many requests a gateway handles at once unless told otherwise.
pub const DEFAULT_MAX_CONCURRENT: usize = 64;

/// The upstream server: where it is, how long the gateway waits for it, how much of its
/// answer it reads, and what kind of server and model it is.
#[derive(Clone)]
#[non_exhaustive]
pub struct UpstreamOptions {
    /// The upstream's base URL: `http://127.0.0.1:11434` (a `/v1` at the end is fine).
    pub url: String,
    /// Longest wait for the upstream's response head and for each piece of its body.
    /// Default 300 s: a non-streaming answer of a slow model comes in one piece.
    pub timeout: Duration,
    /// The key sent to the upstream as `Authorization: Bearer <key>`.
    pub key: Option<String>,
    /// Largest upstream answer read. Default 16 MiB.
    pub max_response_bytes: usize,
    /// The kind of upstream, which decides the field a grammar goes in. Default llama.cpp;
    /// with [`DetectOptions::enabled`], the kind found unless [`GivenSettings::kind`].
    pub kind: UpstreamKind,
    /// The call format the upstream's model writes in its plain content. Default
    /// [`Dialect::Atfunc`]: the gateway prompts the model with atfunc's syntax. Any other
    /// (`hermes`, `pythonic`, ..., or `auto`) is for a model that writes its own format
    /// behind a server that does not read it (vLLM without a tool parser, a raw
    /// llama.cpp): the request's `tools` go upstream as they came and the answer is read
    /// in that format (see [Other formats](super#other-formats)). Grammars are only made for
    /// atfunc's syntax and `hermes`: [`Gateway::new`](super::Gateway::new) refuses
    /// [`TurnPolicy::constrain`] and [`TurnPolicy::constrain_per_request`] with another
    /// dialect. With [`DetectOptions::enabled`], the table's choice for the template found
    /// unless [`GivenSettings::dialect`].
    pub dialect: Dialect,
    /// Under `hermes` with a grammar, hold the answer to `<tool_call>` blocks, one per
    /// call ([`CallForm::Hermes`](atfunc::grammar::CallForm::Hermes)), instead of the
    /// default, one JSON list of all the calls in a ```` ```json ```` fence
    /// ([`CallForm::HermesList`](atfunc::grammar::CallForm::HermesList)), which
    /// Qwen2.5-Coder-0.5B answers better in (EVAL.md (ad)). A model trained to write the
    /// tags may do better held to them.
    pub hermes_blocks: bool,
}

impl Default for UpstreamOptions {
    fn default() -> UpstreamOptions {
        UpstreamOptions {
            url: String::from("http://127.0.0.1:8080"),
            timeout: Duration::from_secs(300),
            key: None,
            max_response_bytes: crate::endpoint::DEFAULT_MAX_RESPONSE_BYTES,
            kind: UpstreamKind::LlamaCpp,
            dialect: super::detect::DEFAULTS.dialect,
            hermes_blocks: false,
        }
    }
}

/// What the gateway takes in from its clients, and how long it waits for them.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GatewayLimits {
    /// Largest request body accepted. Default 8 MiB.
    pub max_request_bytes: usize,
    /// Most requests handled at once (at least 1); one more is answered 503 at once. A
    /// request is counted once its body is whole; bodies (being read, or of requests
    /// under way) hold at most this many times [`GatewayLimits::max_request_bytes`] together.
    /// Default 64.
    pub max_concurrent: usize,
    /// Longest time a request's head may take to arrive, from its first byte. Default
    /// 10 s. Applies to connections [`serve`](super::serve) accepts and [`ConnectionServer`](super::ConnectionServer) serves.
    pub header_timeout: Duration,
    /// Longest time a request's body may take to arrive, once its head is in; past it
    /// the client gets 408. Default 30 s (8 MiB at 280 kB/s).
    pub body_timeout: Duration,
    /// Longest time a connection may wait for its next request (or its first one), and
    /// the longest a client may take nothing of its answer while some is waiting for it.
    /// Default 10 s. Applies to connections [`serve`](super::serve) accepts and [`ConnectionServer`](super::ConnectionServer)
    /// serves.
    pub idle_timeout: Duration,
    /// Longest time one request may take from its head to its answer's last byte: the
    /// upstream's answers, repair rounds and executed steps together. Past it the client
    /// gets 504, or an error event that ends the stream. Default 10 minutes.
    pub request_timeout: Duration,
    /// Longest time the rest of a request's body is read, and thrown away, after an answer
    /// given before the body was read (503, 401, 413, 400), so that the client reads the
    /// answer instead of a connection reset; at most [`GatewayLimits::max_request_bytes`] are
    /// read. Zero closes at once. Default 5 s. Applies to connections [`serve`](super::serve) accepts
    /// and [`ConnectionServer`](super::ConnectionServer) serves.
    pub linger_timeout: Duration,
    /// Limits on how far a request's tool schemas may expand when they are loaded (`$ref`s
    /// written out in place); past one the request is answered 400 naming it.
    pub load_limits: LoadLimits,
    /// Most tool lists kept as read, so that a request sending a list again (agents send
    /// the same one with every request of a conversation) does not read it, render its
    /// prompt or build its grammars again (see [Tool lists kept](super#tool-lists-kept)).
    /// 0 keeps none. Default 64.
    pub tool_cache_lists: usize,
    /// Most bytes the tool lists kept may hold together, counted as twelve times each
    /// list's text (the text and its interfaces, as measured) plus the prompt and grammars
    /// built from it; the list used longest ago goes first. Default 64 MiB: about 35 lists
    /// of 200 tools (130 KB of JSON each), or all 64 lists of up to 100.
    pub tool_cache_bytes: usize,
}

impl Default for GatewayLimits {
    fn default() -> GatewayLimits {
        GatewayLimits {
            max_request_bytes: 8 << 20,
            max_concurrent: DEFAULT_MAX_CONCURRENT,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(600),
            linger_timeout: Duration::from_secs(5),
            load_limits: LoadLimits::default(),
            tool_cache_lists: 64,
            tool_cache_bytes: 64 << 20,
        }
    }
}

/// How the gateway answers a request: with a grammar or not, deciding first or not, how
/// often it asks again, and how it runs calls itself.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TurnPolicy {
    /// How many times a turn may ask the model again. Default 1.
    pub repair_rounds: usize,
    /// Under a grammar, how many times an answer whose calls do not bind (or that lacks
    /// the call `tool_choice` requires) is asked again as the turn began, sampled, before
    /// any repair round: a small model's failures under a grammar are loops inside a
    /// value that run to the token limit, and another sample rarely loops again (EVAL.md
    /// (j)). A resample's text is dropped and its calls passed on, as a repair round's.
    /// Default 3; 0 goes straight to the repair rounds. Without a grammar it does nothing.
    pub resamples: usize,
    /// Send every request with tools upstream with the grammar of its tools (a request's
    /// `"atfunc_constrain": false` turns it off for itself). Default off; with
    /// [`DetectOptions::enabled`], the table's choice for the upstream found unless
    /// [`GivenSettings::constrain`].
    pub constrain: bool,
    /// Let a request turn the grammar on for itself with `"atfunc_constrain": true` when
    /// [`TurnPolicy::constrain`] is off; without it such a request is answered 400. Building
    /// a grammar is work the server pays for, so the server decides. Default off.
    pub constrain_per_request: bool,
    /// With a grammar on for a request ([`TurnPolicy::constrain`], or its
    /// `"atfunc_constrain": true`) and `tool_choice: "auto"` (or none given), decide first:
    /// one short request whose grammar allows only one of the tools' names or `none`,
    /// then, for a name, the answer under the grammar of that tool's calls (see
    /// [Deciding first](super#deciding-first)). Needs [`TurnPolicy::constrain`] or
    /// [`TurnPolicy::constrain_per_request`]. Default off: on SmolLM2-135M it ties with the
    /// `auto` grammar by the mean of right calls and right abstentions (EVAL.md (v)), and
    /// costs a second request.
    pub decide: bool,
    /// The `max_tokens` of the decision request. A name cut by it is not a name: the
    /// answer follows as without a decision. Default 32 (BFCL's longest names take about
    /// half of it).
    pub decide_max_tokens: u32,
    /// With a grammar on for a request and `tool_choice: "auto"` (or none given), weigh
    /// first: one token asked with its likeliest alternatives, and the answer held to
    /// calls when the alternatives that open a call (`@`, or the model's own format's
    /// openers) hold at least a threshold, to prose without a call when they hold less
    /// (see [Weighing first](super#weighing-first)). Default
    /// [`CallThreshold::Default`]: in atfunc's syntax at
    /// [`DEFAULT_CALL_THRESHOLD`] where the upstream returns log probabilities.
    pub call_threshold: CallThreshold,
    /// Pass on a call that repeats one passed on earlier in the same answer (the same tool
    /// with the same arguments). Default off: such a repeat ends the answer, since a small
    /// model that cannot stop writes its calls again until its token limit (EVAL.md (h));
    /// a client whose tools mean to be called twice alike in one answer turns it on. A
    /// repair answer's call that an earlier answer of the turn passed on is dropped either
    /// way (see [Repair rounds](super#repair-rounds)).
    pub keep_repeated_calls: bool,
    /// Under a grammar, hold every text argument of a call to a run of whole words of the
    /// conversation's user messages, within one sentence
    /// ([`GrammarOptions::with_grounded_text`](atfunc::GrammarOptions::with_grounded_text)). A small
    /// model then cannot copy the prompt's example or invent a value (EVAL.md (l)); nor
    /// can it write text the user did not (a file's new content, a translation), so it
    /// suits tools whose text arguments name what the user named. Default off.
    pub ground_text: bool,
    /// List each described parameter under its function in the prompt
    /// ([`PromptOptions::param_descriptions`](atfunc::render::PromptOptions::param_descriptions)):
    /// which value goes where, for more prompt tokens (16 % more on BFCL `simple_python`).
    /// Default on: Qwen2.5-Coder-0.5B got 71 of the first 100 `simple_python` cases right
    /// with them and 55 without; SmolLM2-135M 149 of all 400 against 141 (EVAL.md (w)).
    pub param_descriptions: bool,
    /// Under a grammar, bound every string to 256 characters and every list to 32 items
    /// ([`GrammarOptions::with_bounded_values`](atfunc::GrammarOptions::with_bounded_values)),
    /// so that a model looping inside a value still closes its call before its token
    /// limit. Default off: a tool may take long text.
    pub bound_values: bool,
    /// Under a grammar, let a text argument be a bare word (`unit=units`) as well as a
    /// quoted string ([`GrammarOptions::with_bare_strings`](atfunc::GrammarOptions::with_bare_strings)).
    /// A model that writes the value unquoted is otherwise made to open a quote it did not
    /// mean, and the engine takes the likeliest token that starts with one, a quote merged
    /// with some other word (`"testing` for `units`). Atfunc's own syntax only; a model's own
    /// format is JSON. Default on: Qwen2.5-Coder-0.5B got 244 of 380 BFCL cases right with
    /// it and 239 without (240 in its own format), SmolLM2-135M 264 of 908 against 266, and
    /// both gain on BFCL's Simple (EVAL.md (y)).
    pub bare_strings: bool,
    /// Run the calls of every request without `tools` (needs `registry`).
    pub execute_all: bool,
    /// Most model answers in one executed turn. Default 8.
    pub max_steps: usize,
    /// Rounds of calls after a user message before the answer is asked for in words,
    /// without the tools (see the conversation policy in docs/gateway.md). Default
    /// [`DEFAULT_CALL_ROUNDS`](crate::turn::DEFAULT_CALL_ROUNDS).
    pub call_rounds: usize,
}

impl Default for TurnPolicy {
    fn default() -> TurnPolicy {
        TurnPolicy {
            repair_rounds: 1,
            resamples: 3,
            constrain: super::detect::DEFAULTS.constrain,
            constrain_per_request: false,
            decide: false,
            decide_max_tokens: 32,
            call_threshold: CallThreshold::Default,
            keep_repeated_calls: false,
            ground_text: false,
            param_descriptions: true,
            bound_values: false,
            bare_strings: true,
            execute_all: false,
            max_steps: 8,
            call_rounds: crate::turn::DEFAULT_CALL_ROUNDS,
        }
    }
}

/// The threshold the gateway weighs a first token at by default, in atfunc's syntax.
/// Chosen on BFCL cases apart from those reported as the threshold whose worse model does
/// best: SmolLM2-135M and Qwen2.5-Coder-0.5B both score 56.4 % there by the mean of
/// `simple_python` right and `irrelevance` without a call, where never calling scores 50 %.
/// On the reported cases it beats the `auto` grammar alone for both (57.0 % against
/// 49.6 %, 52.5 % against 49.0 %; EVAL.md (ag)). Each model's own best threshold is
/// better still and they differ tenfold (0.015, 0.15), so a client that knows its model
/// gives its own ([`CallThreshold::At`]).
pub const DEFAULT_CALL_THRESHOLD: f64 = 0.03;

/// When an answer under `tool_choice: "auto"` is weighed first
/// ([`TurnPolicy::call_threshold`], `atfunc serve --call-threshold P|off`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub enum CallThreshold {
    /// Weigh at [`DEFAULT_CALL_THRESHOLD`] in atfunc's syntax, and not in a model's own
    /// format (its openers carry other odds: Qwen's best threshold in its own format is
    /// 0.75) nor with [`TurnPolicy::decide`], which judges instead. Whether a model
    /// returns log probabilities is learned once per model, by a request of the
    /// gateway's own ([Weighing first](super#weighing-first)): a model that does not is
    /// not asked again, its answers go unweighed, under the `auto` grammar, and stderr
    /// says so once.
    #[default]
    Default,
    /// Never weigh: the `auto` grammar alone judges whether to call.
    Off,
    /// Weigh at this probability (above 0, at most 1) in any syntax. The upstream must
    /// return log probabilities: an answer without them is the request's error (502).
    At(f64),
}

impl CallThreshold {
    /// The threshold an answer in `dialect` is weighed at, and whether weighing is
    /// required (an explicit threshold) rather than taken where the upstream allows it;
    /// `None` when it is not weighed. `deciding`: [`TurnPolicy::decide`] is on.
    #[doc(hidden)]
    pub fn in_dialect(self, dialect: Dialect, deciding: bool) -> Option<(f64, bool)> {
        match self {
            CallThreshold::Default if dialect == Dialect::Atfunc && !deciding => {
                Some((DEFAULT_CALL_THRESHOLD, false))
            }
            CallThreshold::Default | CallThreshold::Off => None,
            CallThreshold::At(threshold) => Some((threshold, true)),
        }
    }

    /// The explicit threshold, if one is set.
    pub fn explicit(self) -> Option<f64> {
        match self {
            CallThreshold::At(threshold) => Some(threshold),
            _ => None,
        }
    }
}

impl std::str::FromStr for CallThreshold {
    type Err = String;

    /// `off`, or a probability above 0 and at most 1.
    fn from_str(text: &str) -> Result<CallThreshold, String> {
        if text.trim().eq_ignore_ascii_case("off") {
            return Ok(CallThreshold::Off);
        }
        let threshold: f64 = text.trim().parse().map_err(|_| {
            format!("give a probability above 0 and at most 1, or off; not '{text}'")
        })?;
        match crate::turn::threshold_error(threshold) {
            Some(error) => Err(error),
            None => Ok(CallThreshold::At(threshold)),
        }
    }
}

impl std::fmt::Debug for UpstreamOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is a secret: say only whether it is set.
        f.debug_struct("UpstreamOptions")
            .field("url", &self.url)
            .field("timeout", &self.timeout)
            .field("key", &self.key.as_ref().map(|_| "[set]"))
            .field("max_response_bytes", &self.max_response_bytes)
            .field("kind", &self.kind)
            .field("dialect", &self.dialect)
            .finish()
    }
}

/// How the gateway runs: its upstream, its limits, its policy for a turn, the key its
/// clients must send, and the tool boxes it runs calls in.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct GatewayOptions {
    /// The upstream server.
    pub upstream: UpstreamOptions,
    /// What the gateway takes in, and how long it waits.
    pub limits: GatewayLimits,
    /// How a request is answered.
    pub policy: TurnPolicy,
    /// The key clients must send as `Authorization: Bearer <key>`; `None` lets anyone in.
    pub api_key: Option<String>,
    /// The tool boxes that `atfunc_execute` requests run calls in.
    pub registry: Option<Arc<Registry>>,
    /// Finding out what the upstream is, and choosing the policy from it.
    pub detect: DetectOptions,
}

/// Finding out what the upstream is ([`Gateway::detect_upstream`](super::Gateway::detect_upstream)):
/// the kind of server, and so the field a grammar goes in, and the call format its model's
/// template teaches; the policy is chosen from them where it was not given (see
/// [What the gateway finds out by itself](super#what-the-gateway-finds-out-by-itself)).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DetectOptions {
    /// Probe the upstream. Default off for a gateway a program makes, whose options are
    /// what it set; `atfunc serve` turns it on (`--no-detect` leaves it off).
    pub enabled: bool,
    /// The settings given by hand, which what is found never changes.
    pub given: GivenSettings,
    /// How long [`Gateway::detect_upstream`](super::Gateway::detect_upstream) waits for
    /// the upstream to answer before the gateway starts with the defaults (and goes on
    /// asking in the background). Default 5 s: a server started at the same time is
    /// often still loading its model.
    pub wait_at_start: Duration,
    /// The time limit of each probe. Default 2 s.
    pub probe_timeout: Duration,
}

impl Default for DetectOptions {
    fn default() -> DetectOptions {
        DetectOptions {
            enabled: false,
            given: GivenSettings::default(),
            wait_at_start: Duration::from_secs(5),
            probe_timeout: Duration::from_secs(2),
        }
    }
}

/// Which of the settings detection may choose were given by hand (a flag of
/// `atfunc serve`): each given one keeps the options' value whatever is found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct GivenSettings {
    /// [`UpstreamOptions::kind`] (`--upstream-kind`).
    pub kind: bool,
    /// [`UpstreamOptions::dialect`] (`--upstream-dialect`).
    pub dialect: bool,
    /// [`TurnPolicy::constrain`] (`--constrain`, `--no-constrain`).
    pub constrain: bool,
    /// [`UpstreamOptions::hermes_blocks`] (`--hermes-blocks`).
    pub hermes_blocks: bool,
}

impl GatewayOptions {
    /// The defaults, in front of the upstream at `url` (`http://127.0.0.1:11434`, a `/v1`
    /// at the end is fine).
    pub fn new(url: impl Into<String>) -> GatewayOptions {
        let mut options = GatewayOptions::default();
        options.upstream.url = url.into();
        options
    }
}

impl std::fmt::Debug for GatewayOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The keys are secrets: say only whether they are set.
        f.debug_struct("GatewayOptions")
            .field("upstream", &self.upstream)
            .field("limits", &self.limits)
            .field("policy", &self.policy)
            .field("api_key", &self.api_key.as_ref().map(|_| "[set]"))
            .field("registry", &self.registry.is_some())
            .field("detect", &self.detect)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_threshold_is_read_from_the_command_line() {
        assert_eq!("off".parse(), Ok(CallThreshold::Off));
        assert_eq!(" OFF ".parse(), Ok(CallThreshold::Off));
        assert_eq!("0.25".parse(), Ok(CallThreshold::At(0.25)));
        assert_eq!("1".parse(), Ok(CallThreshold::At(1.0)));
        for bad in ["0", "1.5", "-0.1", "NaN"] {
            let error = bad.parse::<CallThreshold>().unwrap_err();
            assert!(error.contains("above 0 and at most 1"), "{bad}: {error}");
        }
        let error = "often".parse::<CallThreshold>().unwrap_err();
        assert!(
            error.contains("or off") && error.contains("'often'"),
            "{error}"
        );
    }

    #[test]
    fn the_default_weighs_atfunc_syntax_alone_and_not_a_decision() {
        let default = CallThreshold::Default;
        assert_eq!(
            default.in_dialect(Dialect::Atfunc, false),
            Some((DEFAULT_CALL_THRESHOLD, false))
        );
        assert_eq!(default.in_dialect(Dialect::Hermes, false), None);
        assert_eq!(default.in_dialect(Dialect::Atfunc, true), None);
        assert_eq!(CallThreshold::Off.in_dialect(Dialect::Atfunc, false), None);
        let given = CallThreshold::At(0.75);
        assert_eq!(given.in_dialect(Dialect::Hermes, false), Some((0.75, true)));
        assert_eq!(TurnPolicy::default().call_threshold, default);
    }
}
