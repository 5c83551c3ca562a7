//! `--constrain`: the grammar of a request's tools, in the field its upstream reads.

use super::built::Grammar;
use super::request::Request;
use super::tools::ToolSet;
use super::TurnError;
use atfunc::grammar::{CallForm, Choice, GrammarError, GrammarLimit, GrammarOptions};
use atfunc::parse::Dialect;
use serde_json::{Map, Value as Json};
use std::sync::Arc;

/// The kind of server upstream, which decides the request field a grammar goes in.
///
/// All of them read GBNF: llama.cpp natively, vLLM and SGLang through xgrammar (or
/// llguidance), whose EBNF dialect takes llama.cpp's notation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum UpstreamKind {
    /// llama.cpp's `llama-server` and llama-cpp-python's server: `"grammar": "..."`.
    #[default]
    LlamaCpp,
    /// vLLM as it is now: `"structured_outputs": {"grammar": "..."}` (it replaced
    /// `guided_grammar`, which vLLM 0.12 removed).
    Vllm,
    /// Older vLLM, before `structured_outputs`: `"guided_grammar": "..."`.
    VllmGuided,
    /// SGLang: `"ebnf": "..."`.
    Sglang,
}

/// Every request field a grammar may go in, of any kind of server.
const GRAMMAR_FIELDS: [&str; 4] = ["grammar", "guided_grammar", "ebnf", "structured_outputs"];

impl UpstreamKind {
    /// [`UpstreamKind::put`] for a request kept as its fields' text: a grammar in a field
    /// of its own goes as the JSON string it was written as once.
    pub(crate) fn put_in(self, request: &mut Request, grammar: &Grammar) {
        let field = match self {
            UpstreamKind::LlamaCpp => "grammar",
            UpstreamKind::VllmGuided => "guided_grammar",
            UpstreamKind::Sglang => "ebnf",
            UpstreamKind::Vllm => {
                let text = grammar.text.clone();
                request.with_fields(&GRAMMAR_FIELDS, |fields| self.put(fields, text));
                return;
            }
        };
        request.insert_raw(field, grammar.sent.clone());
    }

    /// Puts `grammar` in `request` where this kind of server reads it.
    pub(crate) fn put(self, request: &mut Map<String, Json>, grammar: String) {
        match self {
            UpstreamKind::LlamaCpp => {
                request.insert("grammar".into(), Json::String(grammar));
            }
            UpstreamKind::VllmGuided => {
                request.insert("guided_grammar".into(), Json::String(grammar));
            }
            UpstreamKind::Sglang => {
                request.insert("ebnf".into(), Json::String(grammar));
            }
            UpstreamKind::Vllm => {
                let outputs = request
                    .entry("structured_outputs")
                    .or_insert_with(|| Json::Object(Map::new()));
                if !outputs.is_object() {
                    *outputs = Json::Object(Map::new());
                }
                if let Json::Object(outputs) = outputs {
                    outputs.insert("grammar".into(), Json::String(grammar));
                }
            }
        }
    }
}

/// The form of a grammar's calls for a model that writes `dialect` (hermes as a fenced
/// list of calls, or as `<tool_call>` blocks with `hermes_blocks`); `None` when no grammar
/// is made for that dialect.
pub(crate) fn call_form(dialect: Dialect, hermes_blocks: bool) -> Option<CallForm> {
    match dialect {
        Dialect::Atfunc => Some(CallForm::Atfunc),
        Dialect::Hermes if hermes_blocks => Some(CallForm::Hermes),
        Dialect::Hermes => Some(CallForm::HermesList),
        _ => None,
    }
}

/// Whether a grammar is made for the calls of a model that writes `dialect`.
pub(crate) fn has_grammar(dialect: Dialect) -> bool {
    call_form(dialect, false).is_some()
}

/// The grammars of one constrained turn: for the first answer, and for repair answers
/// (which must be calls only).
#[derive(Debug, Clone)]
pub(crate) struct Grammars {
    pub(crate) first: Arc<Grammar>,
    pub(crate) repair: Option<Arc<Grammar>>,
}

/// The grammars for `tools` under the request's `tool_choice` and `parallel_tool_calls`,
/// their text arguments held to runs of `grounding`'s words when it is given, their
/// values bounded ([`GrammarOptions::with_bounded_values`]) when `bounded`, and a text
/// argument allowed as a bare word ([`GrammarOptions::with_bare_strings`]) when `bare`;
/// `None` when no call of the tools can bind (the prompt and the repair rounds are left
/// to do their work). Under [`Choice::None`] the first grammar allows prose alone and
/// there is no repair grammar.
///
/// Each grammar goes upstream inside a request of `request_size` bytes, which together
/// may be at most `max_request_bytes` (the gateway's own limit on what comes in): the
/// grammar is built within what is left, and one that does not fit, as the JSON string it
/// is sent as, is a 413 instead of a request the gateway would itself refuse.
pub(crate) fn grammars(
    tools: &ToolSet,
    (choice, form): (&Choice, CallForm),
    single: bool,
    (grounding, bounded, bare): (Option<&str>, bool, bool),
    request_size: usize,
    max_request_bytes: usize,
) -> Result<Option<Grammars>, TurnError> {
    let interfaces = tools.catalog.interfaces();
    let room = max_request_bytes.saturating_sub(request_size);
    let max_bytes = GrammarOptions::default().max_bytes();
    // Whether the room left under the request limit is what bounds the grammar's bytes.
    let bounded_by_request = room < max_bytes;
    let with = |choice| {
        let options = GrammarOptions::default()
            .with_choice(choice)
            .with_single(single)
            .with_form(form)
            .with_grounded_text(grounding.map(str::to_owned))
            .with_bare_strings(bare)
            .with_max_bytes(max_bytes.min(room));
        if bounded {
            options.with_bounded_values()
        } else {
            options
        }
    };
    let too_large = |error: &GrammarError| match error {
        GrammarError::TooLarge {
            limit: GrammarLimit::Bytes,
            ..
        } if bounded_by_request => Some(TurnError::GrammarTooLarge(format!(
            "it is larger than the {room} bytes left of the gateway's limit on requests \
                 ({max_request_bytes} bytes, --max-request-bytes)"
        ))),
        GrammarError::TooLarge { .. } => Some(TurnError::GrammarTooLarge(error.to_string())),
        _ => None,
    };
    let fits = |grammar: Arc<Grammar>| {
        let sent = grammar.sent_len();
        if sent > room {
            return Err(TurnError::GrammarTooLarge(format!(
                "as a JSON string it is {sent} bytes, more than the {room} bytes left of the \
                 gateway's limit on requests ({max_request_bytes} bytes, --max-request-bytes)"
            )));
        }
        Ok(grammar)
    };
    let (first, repair) = match choice {
        // Prose alone, where the gateway has judged the answer to be no call
        // (`--call-threshold`); a client's `none` is passed through before any grammar.
        Choice::None => (Choice::None, None),
        Choice::Auto => (Choice::Auto, Some(Choice::Required)),
        Choice::Required => (Choice::Required, Some(Choice::Required)),
        named @ Choice::Function(_) => (named.clone(), Some(named.clone())),
    };
    let gbnf = |options: &GrammarOptions| tools.built.grammar(interfaces, options);
    let first = match gbnf(&with(first)) {
        Ok(grammar) => fits(grammar)?,
        Err(error) => match too_large(&error) {
            Some(refused) => return Err(refused),
            None => return Ok(None),
        },
    };
    let repair = match repair.map(|repair| gbnf(&with(repair))) {
        None => None,
        Some(Ok(grammar)) => Some(fits(grammar)?),
        Some(Err(error)) => match too_large(&error) {
            Some(refused) => return Err(refused),
            None => None,
        },
    };
    Ok(Some(Grammars { first, repair }))
}
