//! `--constrain`: the grammar of a request's tools, in the field its upstream reads.

use super::request::Request;
use super::tools::{Choice, ToolSet};
use crate::grammar::{gbnf, Choice as GrammarChoice, GrammarOptions};
use serde_json::{Map, Value as Json};

/// The kind of server upstream, which decides the request field a grammar goes in.
///
/// All of them read GBNF: llama.cpp natively, vLLM and SGLang through xgrammar (or
/// llguidance), whose EBNF dialect takes llama.cpp's notation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
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
    /// [`UpstreamKind::put`] for a request kept as its fields' text.
    pub(crate) fn put_in(self, request: &mut Request, grammar: String) {
        request.with_fields(&GRAMMAR_FIELDS, |fields| self.put(fields, grammar));
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

/// The grammars of one constrained turn: for the first answer, and for repair answers
/// (which must be calls only).
#[derive(Debug, Clone)]
pub(crate) struct Grammars {
    pub(crate) first: String,
    pub(crate) repair: Option<String>,
}

/// The grammars for `tools` under the request's `tool_choice` and `parallel_tool_calls`;
/// `None` for `tool_choice: "none"`, or when no call of the tools can bind (the prompt
/// and the repair rounds are left to do their work).
pub(crate) fn grammars(tools: &ToolSet, choice: &Choice, single: bool) -> Option<Grammars> {
    let interfaces = tools.catalog.interfaces();
    let with = |choice| GrammarOptions {
        choice,
        single,
        ..GrammarOptions::default()
    };
    let (first, repair) = match choice {
        Choice::None => return None,
        Choice::Auto => (GrammarChoice::Auto, GrammarChoice::Required),
        Choice::Required => (GrammarChoice::Required, GrammarChoice::Required),
        Choice::Named(name) => (
            GrammarChoice::Function(name.clone()),
            GrammarChoice::Function(name.clone()),
        ),
    };
    let first = gbnf(interfaces, &with(first)).ok()?;
    let repair = gbnf(interfaces, &with(repair)).ok();
    Some(Grammars { first, repair })
}
