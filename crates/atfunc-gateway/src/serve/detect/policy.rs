//! The policy chosen for what was found: the tables, and the settings in effect with where
//! each came from.

use super::identify::{Found, ServerKind, TemplateCalls};
use crate::serve::options::GatewayOptions;
use crate::serve::UpstreamKind;
use atfunc::parse::Dialect;
use serde_json::{json, Value as Json};

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
        let interrupts = found.is_some_and(|found| found.server == ServerKind::LlamaCppPython);
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
        // llama-cpp-python's server answers one request at a time, and by default drops
        // the one it is answering when another comes (`interrupts`): two clients of the
        // gateway at once get an empty answer each in turn (seen in the conversation
        // benchmark's runs).
        if interrupts && policy.warning.is_none() {
            policy.warning = Some(format!(
                "{server} stops the answer it is writing when another request comes (its \
                 --interrupt_requests, on by default), so clients at once get cut, empty \
                 answers: start it with --interrupt_requests False"
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::detect::identify::{Found, ServerKind, TemplateCalls};
    use serde_json::Value as Json;

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
        let stated = TurnChoice {
            dialect: Dialect::Atfunc,
            constrain: false,
        };
        assert_eq!(DEFAULTS, stated);
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
    fn llama_cpp_pythons_server_is_said_to_cut_answers_of_clients_at_once() {
        let options = GatewayOptions::default();
        let python = InEffect::resolve(
            &options,
            Finding::Found(found(ServerKind::LlamaCppPython, None)),
        );
        let lines = python.lines().join("\n");
        assert!(lines.contains("--interrupt_requests False"), "{lines}");
        let server = InEffect::resolve(
            &options,
            Finding::Found(found(ServerKind::LlamaServer, None)),
        );
        assert!(!server.lines().join("\n").contains("warning"));
    }

    #[test]
    fn a_call_format_the_flags_do_not_allow_is_told_apart() {
        // A row of the table that chooses another format must still fit the flags given
        // with it, as `Gateway::new` checks those.
        let mut options = GatewayOptions::default();
        assert_eq!(misfit(Dialect::Hermes, true, &options), None);
        assert!(misfit(Dialect::Pythonic, true, &options).is_some());
        assert_eq!(misfit(Dialect::Pythonic, false, &options), None);
        options.policy.decide = true;
        assert!(misfit(Dialect::Hermes, false, &options).is_some());
        assert_eq!(misfit(Dialect::Atfunc, true, &options), None);
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
