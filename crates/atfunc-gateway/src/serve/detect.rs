//! What the gateway finds out about its upstream by itself: the kind of server (and so the
//! field a grammar goes in) and the call format its model's chat template teaches, and the
//! policy it chooses from them. The contract is docs/gateway.md, "What the gateway finds
//! out by itself"; here it is in three steps, only the first of which does I/O:
//!
//! 1. [`Probe::run`] asks the upstream's own routes at once (`GET /props`, `/v1/models`,
//!    `/api/version`, `/version`, `/get_model_info`), each within a short time limit and
//!    a bounded body, and keeps what each answered as a [`Reply`]. Nothing is an error:
//!    a refused connection, a time limit, an HTML 404 or JSON of another shape each only
//!    say "not this kind".
//! 2. [`identify`] reads the replies into what was [`Found`] (`None`: nothing answered,
//!    or only "503, still loading"), and [`template_calls`] reads a chat template.
//! 3. [`choose`] looks the finding up in the tables ([`GRAMMAR_FIELDS`], [`BY_TEMPLATE`]);
//!    [`InEffect::resolve`] puts a setting given by hand above what was chosen, and what
//!    was chosen above the defaults.
//!
//! The policy in effect is one [`InEffect`] behind an `Arc`, swapped whole under a lock
//! ([`PolicyCell`]): a request reads it once, so one request never mixes two policies.

use super::options::GatewayOptions;
use super::UpstreamKind;
use crate::endpoint::{Endpoint, Route, TimeLimit};
use atfunc::parse::Dialect;
use axum::http::HeaderValue;
use serde_json::{json, Value as Json};
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

/// Most bytes read of one probe's answer: a chat template is a few KB, a server's
/// properties some more; anything far larger is not an answer worth reading.
const MAX_PROBE_BYTES: usize = 1 << 20;

/// The wait between two probes while the start waits for the upstream.
const RETRY_AT_START: Duration = Duration::from_millis(500);

/// The first wait between two probes in the background, doubled after each that found
/// nothing, up to [`MOST_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);

/// The longest wait between two background probes: an upstream that comes up late is
/// found within this long of answering.
const MOST_BACKOFF: Duration = Duration::from_secs(30);

/// The kind of server the upstream was found to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServerKind {
    /// llama.cpp's `llama-server`.
    LlamaServer,
    /// llama-cpp-python's server (`python -m llama_cpp.server`).
    LlamaCppPython,
    /// Ollama.
    Ollama,
    /// vLLM; `guided` for a version before `structured_outputs` (0.10.2).
    Vllm {
        /// Takes `guided_grammar`, not `structured_outputs`.
        guided: bool,
    },
    /// SGLang.
    Sglang,
    /// A server that answered, as none of the others.
    Unknown,
}

impl ServerKind {
    /// The name the route gives it.
    fn id(self) -> &'static str {
        match self {
            ServerKind::LlamaServer => "llama-server",
            ServerKind::LlamaCppPython => "llama-cpp-python",
            ServerKind::Ollama => "ollama",
            ServerKind::Vllm { .. } => "vllm",
            ServerKind::Sglang => "sglang",
            ServerKind::Unknown => "unknown",
        }
    }

    /// The name a person reads.
    fn described(self) -> &'static str {
        match self {
            ServerKind::LlamaServer => "llama.cpp's llama-server",
            ServerKind::LlamaCppPython => "llama-cpp-python's server",
            ServerKind::Ollama => "Ollama",
            ServerKind::Vllm { guided: false } => "vLLM",
            ServerKind::Vllm { guided: true } => "vLLM before 0.10.2",
            ServerKind::Sglang => "SGLang",
            ServerKind::Unknown => "a server of no kind known",
        }
    }
}

/// The call format a chat template teaches its model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TemplateCalls {
    /// Hermes' `<tool_call>` blocks (Qwen2.5, Hermes).
    Hermes,
    /// None that the gateway knows: the template shows no calls, or calls in a format not
    /// read here.
    NoneKnown,
}

impl TemplateCalls {
    fn id(self) -> &'static str {
        match self {
            TemplateCalls::Hermes => "hermes",
            TemplateCalls::NoneKnown => "none known",
        }
    }
}

/// The call format `template` (a chat template's text, Jinja or Ollama's Go template)
/// teaches its model. A template that writes the calls of an assistant message, or asks
/// for them, spells out their markers: `<tool_call>` is Hermes' (and Qwen2.5's, which
/// took it).
pub(crate) fn template_calls(template: &str) -> TemplateCalls {
    if template.contains("<tool_call>") {
        TemplateCalls::Hermes
    } else {
        TemplateCalls::NoneKnown
    }
}

/// What the probes found the upstream to be.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Found {
    pub(crate) server: ServerKind,
    /// Which answer said so (`GET /props answered`).
    pub(crate) by: String,
    /// The server's version or build, when it said.
    pub(crate) version: Option<String>,
    /// The model it serves (its path or id; the first listed when it serves several).
    pub(crate) model: Option<String>,
    /// The call format of the model's chat template; `None` when no template was read
    /// (a server that does not show it).
    pub(crate) template: Option<TemplateCalls>,
}

/// What one probe got.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) enum Reply {
    /// No answer: the connection failed or the time limit passed.
    #[default]
    Nothing,
    /// An answer with a status that is not a success.
    Status(u16),
    /// A success whose body is not JSON (or could not be read whole).
    NotJson,
    /// A success in JSON.
    Json(Json),
}

impl Reply {
    /// Whether the server answered as one that is up: "503" is llama-server's answer
    /// while it loads its model.
    fn answered(&self) -> bool {
        !matches!(self, Reply::Nothing | Reply::Status(503))
    }

    /// The answer's field `name`, when the answer is a JSON object that has it.
    fn field(&self, name: &str) -> Option<&Json> {
        match self {
            Reply::Json(Json::Object(object)) => object.get(name),
            _ => None,
        }
    }

    fn text(&self, name: &str) -> Option<String> {
        self.field(name)
            .and_then(Json::as_str)
            .map(ToOwned::to_owned)
    }
}

/// The probes' replies, one per route asked.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Replies {
    /// `GET /props` (llama-server).
    pub(crate) props: Reply,
    /// `GET /v1/models` (every OpenAI-compatible server).
    pub(crate) models: Reply,
    /// `GET /api/version` (Ollama).
    pub(crate) ollama_version: Reply,
    /// `GET /version` (vLLM).
    pub(crate) version: Reply,
    /// `GET /get_model_info` (SGLang).
    pub(crate) model_info: Reply,
}

/// The first model `GET /v1/models` lists: its `id` and `owned_by`.
fn first_model(models: &Reply) -> (Option<String>, Option<String>) {
    let first = models
        .field("data")
        .and_then(Json::as_array)
        .and_then(|list| list.first());
    let text = |name: &str| {
        first
            .and_then(|model| model.get(name))
            .and_then(Json::as_str)
            .map(ToOwned::to_owned)
    };
    (text("id"), text("owned_by"))
}

/// Whether a vLLM `version` (`0.10.1.1`, `0.9.2rc1`, `0.6.3.post1`) is before 0.10.2,
/// which took `structured_outputs`; a version that cannot be read is taken as recent.
fn vllm_is_guided(version: &str) -> bool {
    let mut numbers = version.split('.').map(|part| {
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u64>().ok()
    });
    let mut next = || numbers.next().flatten();
    match (next(), next(), next()) {
        (Some(major), Some(minor), patch) => (major, minor, patch.unwrap_or(0)) < (0, 10, 2),
        _ => false,
    }
}

/// What `replies` say the upstream is; `None` when nothing answered as a server that is
/// up. The server's own routes are believed before `owned_by` in `/v1/models`, and an
/// answer of any other shape is a server of no kind known.
pub(crate) fn identify(replies: &Replies) -> Option<Found> {
    let all = [
        &replies.props,
        &replies.models,
        &replies.ollama_version,
        &replies.version,
        &replies.model_info,
    ];
    if !all.iter().any(|reply| reply.answered()) {
        return None;
    }
    let (model_id, owned_by) = first_model(&replies.models);
    let found = |server, by: &str| Found {
        server,
        by: by.to_owned(),
        version: None,
        model: model_id.clone(),
        template: None,
    };
    let props = &replies.props;
    if ["chat_template", "build_info", "default_generation_settings"]
        .iter()
        .any(|name| props.field(name).is_some())
    {
        return Some(Found {
            version: props.text("build_info"),
            model: props.text("model_path").or_else(|| model_id.clone()),
            template: props.text("chat_template").map(|t| template_calls(&t)),
            ..found(ServerKind::LlamaServer, "GET /props answered")
        });
    }
    if let Some(path) = replies.model_info.text("model_path") {
        return Some(Found {
            model: Some(path),
            ..found(ServerKind::Sglang, "GET /get_model_info answered")
        });
    }
    if let Some(version) = replies.ollama_version.text("version") {
        return Some(Found {
            version: Some(version),
            ..found(ServerKind::Ollama, "GET /api/version answered")
        });
    }
    let by_owner = match owned_by.as_deref() {
        Some("vllm") => {
            let version = replies.version.text("version");
            let guided = version.as_deref().is_some_and(vllm_is_guided);
            return Some(Found {
                version,
                ..found(
                    ServerKind::Vllm { guided },
                    "GET /v1/models answered with owned_by \"vllm\"",
                )
            });
        }
        Some("me") => ServerKind::LlamaCppPython,
        Some("llamacpp") => ServerKind::LlamaServer,
        Some("sglang") => ServerKind::Sglang,
        Some("library" | "ollama") => ServerKind::Ollama,
        _ => {
            let refused = all
                .iter()
                .any(|reply| matches!(reply, Reply::Status(401 | 403)));
            let by = if refused {
                "it answered, as no kind known; it refused a probe without a key (give \
                 --upstream-key-env)"
            } else {
                "it answered, as no kind known"
            };
            return Some(found(ServerKind::Unknown, by));
        }
    };
    let by = format!(
        "GET /v1/models answered with owned_by \"{}\"",
        owned_by.unwrap_or_default()
    );
    Some(found(by_owner, &by))
}

/// Where each kind of server takes a grammar: the field ([`UpstreamKind`]), or `None`
/// when it takes none (Ollama has no request field for one).
pub(crate) const GRAMMAR_FIELDS: [(ServerKind, Option<UpstreamKind>); 6] = [
    (ServerKind::LlamaServer, Some(UpstreamKind::LlamaCpp)),
    (ServerKind::LlamaCppPython, Some(UpstreamKind::LlamaCpp)),
    (ServerKind::Vllm { guided: false }, Some(UpstreamKind::Vllm)),
    (
        ServerKind::Vllm { guided: true },
        Some(UpstreamKind::VllmGuided),
    ),
    (ServerKind::Sglang, Some(UpstreamKind::Sglang)),
    (ServerKind::Ollama, None),
];

/// The call format the gateway has the model write and whether every request with
/// tools goes under a grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TurnChoice {
    pub(crate) dialect: Dialect,
    pub(crate) constrain: bool,
}

/// The defaults: atfunc's syntax, no grammar unless a request asks. The one statement of
/// them; the options' defaults are these.
pub(crate) const DEFAULTS: TurnChoice = TurnChoice {
    dialect: Dialect::Atfunc,
    constrain: false,
};

/// The choice for each call format a model's template teaches. Every row is
/// [`DEFAULTS`] until a measurement of the models behind such templates says otherwise
/// (EVAL.md): a row is where that measurement changes the policy.
pub(crate) const BY_TEMPLATE: [(TemplateCalls, TurnChoice); 2] = [
    (TemplateCalls::Hermes, DEFAULTS),
    (TemplateCalls::NoneKnown, DEFAULTS),
];

/// Where a grammar goes, as chosen for a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GrammarField {
    /// In this field.
    In(UpstreamKind),
    /// The server takes no grammar.
    None,
    /// Not known for this server: the default's.
    Unknown,
}

/// What the tables choose for `found`: where grammars go, and the turn's call format and
/// grammar (`None`: no template was read, the defaults hold).
pub(crate) fn choose(found: &Found) -> (GrammarField, Option<TurnChoice>) {
    let field = GRAMMAR_FIELDS
        .iter()
        .find(|(server, _)| *server == found.server)
        .map_or(GrammarField::Unknown, |(_, field)| match field {
            Some(kind) => GrammarField::In(*kind),
            None => GrammarField::None,
        });
    let turn = found.template.and_then(|calls| {
        BY_TEMPLATE
            .iter()
            .find(|(row, _)| *row == calls)
            .map(|(_, choice)| *choice)
    });
    (field, turn)
}

/// Where a setting in effect came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// Given by hand: a flag of `atfunc serve`, or an option its program marked given.
    Flag,
    /// Chosen from what the probes found.
    Detected,
    /// The default: nothing given, nothing found that decides it.
    Default,
}

impl Source {
    fn id(self) -> &'static str {
        match self {
            Source::Flag => "flag",
            Source::Detected => "detected",
            Source::Default => "default",
        }
    }
}

/// A setting in effect: its value, where it came from and why.
#[derive(Debug, Clone)]
pub(crate) struct Setting<T> {
    pub(crate) value: T,
    pub(crate) from: Source,
    why: String,
}

/// What the gateway knows of its upstream.
#[derive(Debug, Clone)]
pub(crate) enum Finding {
    /// Not probed (`--no-detect`).
    Off,
    /// Nothing answered yet: probed again in the background.
    Waiting,
    /// The probes found this.
    Found(Found),
}

/// The policy in effect: the settings the probes may choose, each with its source.
#[derive(Debug, Clone)]
pub(crate) struct InEffect {
    pub(crate) kind: Setting<UpstreamKind>,
    /// Whether the upstream takes a grammar at all.
    pub(crate) takes_grammar: bool,
    pub(crate) dialect: Setting<Dialect>,
    pub(crate) constrain: Setting<bool>,
    pub(crate) hermes_blocks: Setting<bool>,
    pub(crate) finding: Finding,
    /// A warning about the settings together, when there is one.
    warning: Option<String>,
}

/// The command line's name of a kind.
fn kind_id(kind: UpstreamKind) -> &'static str {
    match kind {
        UpstreamKind::LlamaCpp => "llama-cpp",
        UpstreamKind::Vllm => "vllm",
        UpstreamKind::VllmGuided => "vllm-guided",
        UpstreamKind::Sglang => "sglang",
    }
}

/// The request field a kind's grammar goes in.
fn field_name(kind: UpstreamKind) -> &'static str {
    match kind {
        UpstreamKind::LlamaCpp => "grammar",
        UpstreamKind::Vllm => "structured_outputs",
        UpstreamKind::VllmGuided => "guided_grammar",
        UpstreamKind::Sglang => "ebnf",
    }
}

impl InEffect {
    /// The policy for `options` and what is known of the upstream: a setting given by
    /// hand wins, then what the tables chose for the finding, then the options' value
    /// (the default).
    pub(crate) fn resolve(options: &GatewayOptions, finding: Finding) -> InEffect {
        let given = options.detect.given;
        let found = match &finding {
            Finding::Found(found) => Some(found),
            _ => None,
        };
        let (field, turn) = found.map_or((GrammarField::Unknown, None), choose);
        let default_why = match &finding {
            Finding::Off => "not probed",
            Finding::Waiting => "until the upstream answers",
            Finding::Found(_) => "nothing found decides it",
        };
        let server = found.map_or("", |found| found.server.described());
        let kind = pick(
            given.kind,
            "--upstream-kind",
            match field {
                GrammarField::In(kind) => Some((
                    kind,
                    format!("{server} takes a grammar in `{}`", field_name(kind)),
                )),
                _ => None,
            },
            options.upstream.kind,
            default_why,
        );
        let template = found.and_then(|found| found.template);
        let from_table = |what: &str| {
            template.map(|calls| {
                format!(
                    "the table's {what} for a model whose template writes calls as {}",
                    calls.id()
                )
            })
        };
        let dialect = pick(
            given.dialect,
            "--upstream-dialect",
            turn.zip(from_table("call format"))
                .map(|(turn, why)| (turn.dialect, why)),
            options.upstream.dialect,
            default_why,
        );
        let no_grammar = field == GrammarField::None;
        let constrain = pick(
            given.constrain,
            "--constrain or --no-constrain",
            if no_grammar {
                Some((false, format!("{server} takes no grammar")))
            } else {
                turn.zip(from_table("grammar setting"))
                    .map(|(turn, why)| (turn.constrain, why))
            },
            options.policy.constrain,
            default_why,
        );
        let hermes_blocks = pick(
            given.hermes_blocks,
            "--hermes-blocks",
            None,
            options.upstream.hermes_blocks,
            default_why,
        );
        let mut policy = InEffect {
            kind,
            takes_grammar: !no_grammar,
            dialect,
            constrain,
            hermes_blocks,
            finding,
            warning: None,
        };
        // A call format chosen for a template must fit the settings given with it, as
        // `Gateway::new` checks the ones given: otherwise the options' own holds.
        if let Some(why) = misfit(policy.dialect.value, policy.constrain.value, options) {
            if policy.dialect.from == Source::Detected {
                policy.warning = Some(format!(
                    "the call format {} chosen for the template is not taken: {why}",
                    policy.dialect.value
                ));
                policy.dialect = Setting {
                    value: options.upstream.dialect,
                    from: Source::Default,
                    why: "the one chosen does not fit the flags".into(),
                };
            }
        }
        if no_grammar && (policy.constrain.value || options.policy.constrain_per_request) {
            policy.warning = Some(format!(
                "{server} takes no grammar: requests under one are answered without it \
                 holding them"
            ));
        }
        policy
    }

    /// The lines that say what was found and chosen, for stderr and the route.
    pub(crate) fn lines(&self) -> Vec<String> {
        let mut lines = vec![self.upstream_line()];
        let setting = |name: &str, value: String, from: Source, why: &str| {
            format!("{name} {value} ({}: {why})", from.id())
        };
        let on_off = |on: bool| String::from(if on { "on" } else { "off" });
        lines.push(format!(
            "policy: {}; {}; {}; {}",
            setting(
                "upstream kind",
                kind_id(self.kind.value).into(),
                self.kind.from,
                &self.kind.why
            ),
            setting(
                "call format",
                self.dialect.value.to_string(),
                self.dialect.from,
                &self.dialect.why
            ),
            setting(
                "grammar",
                on_off(self.constrain.value),
                self.constrain.from,
                &self.constrain.why
            ),
            setting(
                "hermes blocks",
                on_off(self.hermes_blocks.value),
                self.hermes_blocks.from,
                &self.hermes_blocks.why
            ),
        ));
        if let Some(warning) = &self.warning {
            lines.push(format!("warning: {warning}"));
        }
        lines
    }

    fn upstream_line(&self) -> String {
        let found = match &self.finding {
            Finding::Off => return "upstream: not probed (--no-detect)".into(),
            Finding::Waiting => {
                return "upstream: nothing answered yet; the defaults hold, and the \
                        upstream is asked again in the background"
                    .into()
            }
            Finding::Found(found) => found,
        };
        let mut line = format!("upstream: {}", found.server.described());
        if let Some(version) = &found.version {
            line.push_str(&format!(" {version}"));
        }
        line.push_str(&format!(" ({})", found.by));
        if let Some(model) = &found.model {
            line.push_str(&format!(", model {model}"));
        }
        match found.template {
            Some(TemplateCalls::Hermes) => {
                line.push_str("; its template writes calls as hermes <tool_call> blocks")
            }
            Some(TemplateCalls::NoneKnown) => {
                line.push_str("; its template writes calls in no format known")
            }
            None => line.push_str("; its template was not shown"),
        }
        if self.takes_grammar {
            line.push_str(&format!(
                "; grammars go in `{}`",
                field_name(self.kind.value)
            ));
        } else {
            line.push_str("; it takes no grammar");
        }
        // Names come from the upstream: their escape sequences are shown, not obeyed.
        atfunc::format::escape_lines_for_terminal(&line).into_owned()
    }

    /// The route's answer (`GET /atfunc/policy`).
    pub(crate) fn json(&self) -> Json {
        let setting = |value: Json, from: Source, why: &str| json!({"value": value, "from": from.id(), "why": why});
        let (state, found) = match &self.finding {
            Finding::Off => ("off", None),
            Finding::Waiting => ("waiting", None),
            Finding::Found(found) => ("found", Some(found)),
        };
        let upstream = json!({
            "state": state,
            "server": found.map(|f| f.server.id()),
            "described": found.map(|f| f.server.described()),
            "by": found.map(|f| f.by.as_str()),
            "version": found.and_then(|f| f.version.as_deref()),
            "model": found.and_then(|f| f.model.as_deref()),
            "template_calls": found.and_then(|f| f.template).map(TemplateCalls::id),
            "grammar_field": self.takes_grammar.then(|| field_name(self.kind.value)),
        });
        json!({
            "object": "atfunc.policy",
            "upstream": upstream,
            "policy": {
                "upstream_kind": setting(kind_id(self.kind.value).into(), self.kind.from, &self.kind.why),
                "dialect": setting(self.dialect.value.to_string().into(), self.dialect.from, &self.dialect.why),
                "constrain": setting(self.constrain.value.into(), self.constrain.from, &self.constrain.why),
                "hermes_blocks": setting(self.hermes_blocks.value.into(), self.hermes_blocks.from, &self.hermes_blocks.why),
            },
            "lines": self.lines(),
        })
    }
}

/// A setting: `default` when `given` (by hand, with the flag `what`), else `chosen` (by
/// detection, with why), else `default` as the default (with `default_why`).
fn pick<T>(
    given: bool,
    what: &str,
    chosen: Option<(T, String)>,
    default: T,
    default_why: &str,
) -> Setting<T> {
    match (given, chosen) {
        (true, _) => Setting {
            value: default,
            from: Source::Flag,
            why: what.to_owned(),
        },
        (false, Some((value, why))) => Setting {
            value,
            from: Source::Detected,
            why,
        },
        (false, None) => Setting {
            value: default,
            from: Source::Default,
            why: default_why.to_owned(),
        },
    }
}

/// Why `dialect` with `constrain` does not fit the rest of `options`, as `Gateway::new`
/// refuses such options; `None` when it fits.
fn misfit(dialect: Dialect, constrain: bool, options: &GatewayOptions) -> Option<&'static str> {
    let grammar = constrain || options.policy.constrain_per_request;
    if grammar && !crate::turn::has_grammar(dialect) {
        return Some("grammars are only made for atfunc's syntax and hermes");
    }
    if options.policy.decide && dialect != Dialect::Atfunc {
        return Some("deciding first (--decide) asks in atfunc's syntax");
    }
    None
}

/// The policy in effect, swapped whole when the upstream is found late.
#[derive(Debug)]
pub(crate) struct PolicyCell(RwLock<Arc<InEffect>>);

impl PolicyCell {
    pub(crate) fn new(policy: InEffect) -> PolicyCell {
        PolicyCell(RwLock::new(Arc::new(policy)))
    }

    /// The policy in effect now; a request reads it once.
    pub(crate) fn get(&self) -> Arc<InEffect> {
        // A poisoned lock still holds a whole policy: it is only ever swapped.
        Arc::clone(&self.0.read().unwrap_or_else(|e| e.into_inner()))
    }

    fn set(&self, policy: InEffect) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(policy);
    }
}

/// The probes of one upstream: its address, with a short time limit and a small bound on
/// each answer, and the key it gets.
#[derive(Debug, Clone)]
pub(crate) struct Probe {
    endpoint: Endpoint,
    auth: Option<HeaderValue>,
}

impl Probe {
    /// The probes of `options`' upstream; `None` when its URL cannot be asked (which
    /// `Gateway::new` refuses before).
    pub(crate) fn new(options: &GatewayOptions, auth: Option<HeaderValue>) -> Option<Probe> {
        let limit = TimeLimit::Whole(options.detect.probe_timeout);
        let endpoint = Endpoint::new(&options.upstream.url, limit, MAX_PROBE_BYTES).ok()?;
        Some(Probe { endpoint, auth })
    }

    /// One reply: a `GET` of `route`, or a `POST` of `body`.
    async fn ask(&self, route: Route, body: Option<String>) -> Reply {
        let auth = self.auth.as_ref();
        let sent = match body {
            Some(body) => self.endpoint.post(route, body, auth).await,
            None => self.endpoint.get(route, auth).await,
        };
        let Ok(mut response) = sent else {
            return Reply::Nothing;
        };
        let status = response.status();
        if !status.is_success() {
            return Reply::Status(status.as_u16());
        }
        match self.endpoint.read_text(&mut response).await {
            Ok(text) => serde_json::from_str(&text).map_or(Reply::NotJson, Reply::Json),
            Err(_) => Reply::NotJson,
        }
    }

    /// Asks every route at once and reads what they say; `None` when nothing answered.
    /// For Ollama, whose routes do not show a template, the first model listed is asked
    /// for its own (`POST /api/show`).
    pub(crate) async fn run(&self) -> Option<Found> {
        let (props, models, ollama_version, version, model_info) = tokio::join!(
            self.ask(Route::Own("/props"), None),
            self.ask(Route::Models, None),
            self.ask(Route::Own("/api/version"), None),
            self.ask(Route::Own("/version"), None),
            self.ask(Route::Own("/get_model_info"), None),
        );
        let replies = Replies {
            props,
            models,
            ollama_version,
            version,
            model_info,
        };
        let mut found = identify(&replies)?;
        if found.server == ServerKind::Ollama {
            if let Some(model) = &found.model {
                let body = json!({"model": model}).to_string();
                let shown = self.ask(Route::Own("/api/show"), Some(body)).await;
                found.template = shown.text("template").map(|t| template_calls(&t));
            }
        }
        Some(found)
    }
}

/// Finds the upstream at start, within `options.detect.wait_at_start`, and sets the policy
/// in `cell`; when nothing answers by then, the defaults stay and the upstream is asked
/// again in the background, waiting longer each time, until it answers (or the gateway,
/// which holds `cell`, is gone). Writes what it found and chose to stderr, each time.
pub(crate) async fn at_start(cell: &Arc<PolicyCell>, probe: Probe, options: &GatewayOptions) {
    let deadline = tokio::time::Instant::now() + options.detect.wait_at_start;
    loop {
        match tokio::time::timeout_at(deadline, probe.run()).await {
            Ok(Some(found)) => {
                let policy = InEffect::resolve(options, Finding::Found(found));
                say(&policy, "");
                cell.set(policy);
                return;
            }
            Ok(None) if tokio::time::Instant::now() + RETRY_AT_START < deadline => {
                tokio::time::sleep(RETRY_AT_START).await;
            }
            Ok(None) | Err(_) => break,
        }
    }
    let policy = InEffect::resolve(options, Finding::Waiting);
    say(&policy, "");
    cell.set(policy);
    let cell = Arc::downgrade(cell);
    let options = options.clone();
    tokio::spawn(async move { in_background(cell, probe, options).await });
}

/// Asks the upstream again and again, waiting longer each time, until it answers; then
/// sets the policy for what it found.
async fn in_background(cell: Weak<PolicyCell>, probe: Probe, options: GatewayOptions) {
    let mut wait = FIRST_BACKOFF;
    loop {
        tokio::time::sleep(wait).await;
        if cell.strong_count() == 0 {
            return;
        }
        if let Some(found) = probe.run().await {
            let Some(cell) = cell.upgrade() else {
                return;
            };
            let policy = InEffect::resolve(&options, Finding::Found(found));
            say(&policy, "now answered; for the requests from now on: ");
            cell.set(policy);
            return;
        }
        wait = (wait * 2).min(MOST_BACKOFF);
    }
}

fn say(policy: &InEffect, lead: &str) {
    for (i, line) in policy.lines().iter().enumerate() {
        let lead = if i == 0 { lead } else { "" };
        eprintln!("atfunc serve: {lead}{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// From the chat template of Qwen2.5-Coder-0.5B-Instruct (its GGUF's
    /// `tokenizer.chat_template`): the lines that ask for calls and write them.
    const QWEN25_TEMPLATE: &str = r#"{{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
        {%- for tool_call in message.tool_calls %}
            {{- '\n<tool_call>\n{"name": "' }}"#;

    /// The whole chat template of SmolLM2-135M-Instruct (its GGUF's): no tools, no calls.
    const SMOLLM2_TEMPLATE: &str = "{% for message in messages %}{% if loop.first and \
        messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI \
        assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' \
        + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if \
        add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

    #[test]
    fn a_template_that_writes_tool_call_tags_teaches_hermes() {
        assert_eq!(template_calls(QWEN25_TEMPLATE), TemplateCalls::Hermes);
        assert_eq!(template_calls(SMOLLM2_TEMPLATE), TemplateCalls::NoneKnown);
        assert_eq!(template_calls(""), TemplateCalls::NoneKnown);
    }

    fn props(template: &str) -> Reply {
        Reply::Json(json!({
            "default_generation_settings": {"n_ctx": 4096},
            "total_slots": 1,
            "model_path": "/models/qwen.gguf",
            "chat_template": template,
            "build_info": "b6000-abc",
        }))
    }

    fn models(owned_by: &str) -> Reply {
        Reply::Json(json!({"object": "list", "data": [
            {"id": "m-1", "object": "model", "owned_by": owned_by, "extra": [1, 2]}
        ]}))
    }

    #[test]
    fn each_kind_of_server_is_told_by_its_own_answers() {
        let llama = identify(&Replies {
            props: props(QWEN25_TEMPLATE),
            models: models("llamacpp"),
            ..Replies::default()
        })
        .unwrap();
        assert_eq!(llama.server, ServerKind::LlamaServer);
        assert_eq!(llama.by, "GET /props answered");
        assert_eq!(llama.template, Some(TemplateCalls::Hermes));
        assert_eq!(llama.version.as_deref(), Some("b6000-abc"));
        assert_eq!(llama.model.as_deref(), Some("/models/qwen.gguf"));

        let python = identify(&Replies {
            props: Reply::Status(404),
            models: models("me"),
            ..Replies::default()
        })
        .unwrap();
        assert_eq!(python.server, ServerKind::LlamaCppPython);
        assert_eq!(python.template, None);

        let ollama = identify(&Replies {
            props: Reply::NotJson,
            models: models("library"),
            ollama_version: Reply::Json(json!({"version": "0.5.7"})),
            ..Replies::default()
        })
        .unwrap();
        assert_eq!(ollama.server, ServerKind::Ollama);
        assert_eq!(ollama.version.as_deref(), Some("0.5.7"));
        assert_eq!(ollama.model.as_deref(), Some("m-1"));

        let vllm = |version: &str| {
            identify(&Replies {
                models: models("vllm"),
                version: Reply::Json(json!({"version": version})),
                ..Replies::default()
            })
            .unwrap()
            .server
        };
        assert_eq!(vllm("0.11.0"), ServerKind::Vllm { guided: false });
        assert_eq!(vllm("0.10.2"), ServerKind::Vllm { guided: false });
        assert_eq!(vllm("0.10.1.1"), ServerKind::Vllm { guided: true });
        assert_eq!(vllm("0.9.2rc1"), ServerKind::Vllm { guided: true });
        assert_eq!(vllm("dev"), ServerKind::Vllm { guided: false });

        let sglang = identify(&Replies {
            model_info: Reply::Json(
                json!({"model_path": "Qwen/Qwen2.5-7B", "is_generation": true}),
            ),
            models: models("sglang"),
            ..Replies::default()
        })
        .unwrap();
        assert_eq!(sglang.server, ServerKind::Sglang);
        assert_eq!(sglang.model.as_deref(), Some("Qwen/Qwen2.5-7B"));
    }

    #[test]
    fn answers_of_other_shapes_are_a_server_of_no_kind_known() {
        let other = identify(&Replies {
            props: Reply::Json(json!(["not", "an", "object"])),
            models: Reply::Json(json!({"data": "nothing listed"})),
            version: Reply::Status(404),
            ..Replies::default()
        })
        .unwrap();
        assert_eq!(other.server, ServerKind::Unknown);
        let locked = identify(&Replies {
            models: Reply::Status(401),
            ..Replies::default()
        })
        .unwrap();
        assert!(locked.by.contains("--upstream-key-env"), "{}", locked.by);
    }

    #[test]
    fn nothing_or_only_loading_is_not_an_answer() {
        assert_eq!(identify(&Replies::default()), None);
        let loading = Replies {
            props: Reply::Status(503),
            models: Reply::Status(503),
            ..Replies::default()
        };
        assert_eq!(identify(&loading), None);
    }

    fn found(server: ServerKind, template: Option<TemplateCalls>) -> Found {
        Found {
            server,
            by: "test".into(),
            version: None,
            model: None,
            template,
        }
    }

    #[test]
    fn the_table_puts_grammars_where_each_server_reads_them() {
        let field = |server| choose(&found(server, None)).0;
        assert_eq!(
            field(ServerKind::LlamaServer),
            GrammarField::In(UpstreamKind::LlamaCpp)
        );
        assert_eq!(
            field(ServerKind::LlamaCppPython),
            GrammarField::In(UpstreamKind::LlamaCpp)
        );
        assert_eq!(
            field(ServerKind::Vllm { guided: false }),
            GrammarField::In(UpstreamKind::Vllm)
        );
        assert_eq!(
            field(ServerKind::Vllm { guided: true }),
            GrammarField::In(UpstreamKind::VllmGuided)
        );
        assert_eq!(
            field(ServerKind::Sglang),
            GrammarField::In(UpstreamKind::Sglang)
        );
        assert_eq!(field(ServerKind::Ollama), GrammarField::None);
        assert_eq!(field(ServerKind::Unknown), GrammarField::Unknown);
    }

    #[test]
    fn the_table_keeps_the_defaults_for_every_template_until_measured() {
        for calls in [TemplateCalls::Hermes, TemplateCalls::NoneKnown] {
            let (_, turn) = choose(&found(ServerKind::LlamaServer, Some(calls)));
            assert_eq!(turn, Some(DEFAULTS), "{calls:?}");
        }
        assert_eq!(choose(&found(ServerKind::LlamaServer, None)).1, None);
        assert_eq!(DEFAULTS.dialect, Dialect::Atfunc);
        assert!(!DEFAULTS.constrain);
        // The options' defaults are the table's.
        let options = GatewayOptions::default();
        assert_eq!(options.upstream.dialect, DEFAULTS.dialect);
        assert_eq!(options.policy.constrain, DEFAULTS.constrain);
    }

    #[test]
    fn a_setting_given_wins_over_what_was_found() {
        let mut options = GatewayOptions::default();
        let vllm = Finding::Found(found(
            ServerKind::Vllm { guided: false },
            Some(TemplateCalls::Hermes),
        ));
        let chosen = InEffect::resolve(&options, vllm.clone());
        assert_eq!(chosen.kind.value, UpstreamKind::Vllm);
        assert_eq!(chosen.kind.from, Source::Detected);
        assert_eq!(chosen.dialect.from, Source::Detected);
        assert_eq!(chosen.hermes_blocks.from, Source::Default);
        options.upstream.kind = UpstreamKind::Sglang;
        options.detect.given.kind = true;
        let given = InEffect::resolve(&options, vllm);
        assert_eq!(given.kind.value, UpstreamKind::Sglang);
        assert_eq!(given.kind.from, Source::Flag);
        let waiting = InEffect::resolve(&options, Finding::Waiting);
        assert_eq!(waiting.dialect.from, Source::Default);
        assert_eq!(waiting.dialect.why, "until the upstream answers");
    }

    #[test]
    fn a_server_without_grammars_turns_them_off_and_says_so_when_asked_for() {
        let ollama = || Finding::Found(found(ServerKind::Ollama, None));
        let mut options = GatewayOptions::default();
        let chosen = InEffect::resolve(&options, ollama());
        assert!(!chosen.takes_grammar);
        assert!(!chosen.constrain.value);
        assert_eq!(chosen.constrain.from, Source::Detected);
        assert_eq!(chosen.json()["upstream"]["grammar_field"], Json::Null);
        options.policy.constrain = true;
        options.detect.given.constrain = true;
        let given = InEffect::resolve(&options, ollama());
        assert!(given.constrain.value);
        let lines = given.lines().join("\n");
        assert!(lines.contains("Ollama takes no grammar"), "{lines}");
    }

    #[test]
    fn the_route_names_each_setting_its_source() {
        let policy = InEffect::resolve(
            &GatewayOptions::default(),
            Finding::Found(found(ServerKind::LlamaServer, Some(TemplateCalls::Hermes))),
        );
        let answer = policy.json();
        assert_eq!(answer["upstream"]["state"], "found");
        assert_eq!(answer["upstream"]["server"], "llama-server");
        assert_eq!(answer["upstream"]["template_calls"], "hermes");
        assert_eq!(answer["upstream"]["grammar_field"], "grammar");
        assert_eq!(answer["policy"]["upstream_kind"]["value"], "llama-cpp");
        assert_eq!(answer["policy"]["upstream_kind"]["from"], "detected");
        assert_eq!(answer["policy"]["dialect"]["value"], "atfunc");
        assert_eq!(answer["policy"]["constrain"]["value"], false);
        assert_eq!(answer["policy"]["hermes_blocks"]["from"], "default");
        let off = InEffect::resolve(&GatewayOptions::default(), Finding::Off).json();
        assert_eq!(off["upstream"]["state"], "off");
        assert_eq!(off["upstream"]["server"], Json::Null);
    }
}
