//! What is built from a request's tools (the prompt's text, the grammars), kept with the
//! tools: agents send the same tool list with every request of a conversation, and a tool
//! set the gateway keeps ([`ToolSet`](super::ToolSet), shared through the gateway's cache
//! of tool lists) then builds each once.
//!
//! Everything kept is what the same call would build again: the prompt for the same
//! `param_descriptions`, a grammar for options equal in every field. Grammars whose
//! options hold a request's own text (grounded arguments) or a bound taken from the
//! request's size are built for that request alone and not kept, so what is kept stays
//! a handful of texts per tool set ([`MAX_GRAMMARS`]).

use atfunc::grammar::{gbnf, GrammarError, GrammarOptions};
use atfunc::interface::Interface;
use atfunc::parse::{Dialect, ParserConfig};
use atfunc::render::{render_prompt, PromptOptions};
use atfunc::Catalog;
use serde_json::value::RawValue;
use std::sync::{Arc, Mutex, OnceLock};

/// Most grammars kept for one tool set: the first and repair grammars of `auto`,
/// `required` and a few named tools. Past it a grammar is built each time it is asked for.
pub(crate) const MAX_GRAMMARS: usize = 8;

/// A grammar, and the JSON string it is sent as: written once, however many requests
/// send it.
#[derive(Debug)]
pub(crate) struct Grammar {
    pub(crate) text: String,
    /// `text` as a JSON string.
    pub(crate) sent: Box<RawValue>,
}

impl Grammar {
    pub(crate) fn new(text: String) -> Grammar {
        // A string always serializes, to valid JSON.
        let sent = serde_json::to_string(&text)
            .ok()
            .and_then(|json| RawValue::from_string(json).ok())
            .unwrap_or_default();
        Grammar { text, sent }
    }

    /// The bytes of the JSON string it is sent as.
    pub(crate) fn sent_len(&self) -> usize {
        self.sent.get().len()
    }
}

/// A grammar built, or why none could be.
type Outcome = Result<Arc<Grammar>, GrammarError>;

/// Text for a system message, kept also as the inside of the JSON string it is sent as.
///
/// A prompt kept for a tool list is sent with every request of a conversation; escaped
/// once, it is copied into each request rather than escaped again (for 200 tools, 50 KB).
/// JSON escapes each character alone, so the escaped text of two texts joined is their
/// escaped texts joined.
#[derive(Debug, Clone, Default)]
pub(crate) struct Prompt {
    /// Shared with the tool set that keeps it: cloning a prompt costs no copy.
    kept: Arc<Escaped>,
    /// What one answer adds (a call it must make, one call at most), as text and escaped.
    added: Escaped,
}

#[derive(Debug, Clone, Default)]
struct Escaped {
    text: String,
    json: String,
}

impl Escaped {
    fn new(text: String) -> Escaped {
        let json = escape(&text);
        Escaped { text, json }
    }
}

/// `text` as it stands between the quotes of a JSON string.
pub(crate) fn escape(text: &str) -> String {
    // A string always serializes; the result is quoted.
    let quoted = serde_json::to_string(text).unwrap_or_default();
    quoted
        .get(1..quoted.len().saturating_sub(1))
        .unwrap_or_default()
        .to_owned()
}

impl Prompt {
    /// A prompt of `text`, escaped now.
    pub(crate) fn new(text: String) -> Prompt {
        Prompt {
            kept: Arc::new(Escaped::new(text)),
            added: Escaped::default(),
        }
    }

    /// Appends `text` to this answer's prompt.
    pub(crate) fn push_str(&mut self, text: &str) {
        self.added.text.push_str(text);
        self.added.json.push_str(&escape(text));
    }

    /// Appends the text as it stands between the quotes of a JSON string.
    pub(crate) fn write_escaped(&self, out: &mut String) {
        out.push_str(&self.kept.json);
        out.push_str(&self.added.json);
    }

    /// The bytes kept for the tool set.
    fn held_bytes(&self) -> usize {
        self.kept.text.len() + self.kept.json.len()
    }
}

impl std::fmt::Display for Prompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.kept.text)?;
        f.write_str(&self.added.text)
    }
}

/// The prompt and grammars built so far for one tool set.
#[derive(Debug, Default)]
pub(crate) struct Built {
    /// The tools rendered ([`render_prompt`]), with the `param_descriptions` they were
    /// rendered for.
    prompt: OnceLock<(bool, Prompt)>,
    /// The parser's configuration for answers to these tools (which calls take a body,
    /// the names offered), but for the call format.
    parser: OnceLock<ParserConfig>,
    /// Grammars by the options they were built with; at most [`MAX_GRAMMARS`].
    grammars: Mutex<Vec<(GrammarOptions, Outcome)>>,
}

impl Built {
    /// `interfaces` rendered as the prompt lists them, each described parameter under
    /// its function with `param_descriptions`.
    pub(crate) fn prompt(&self, interfaces: &[Interface], param_descriptions: bool) -> Prompt {
        let render = || {
            let options = PromptOptions::default().with_param_descriptions(param_descriptions);
            Prompt::new(render_prompt(interfaces, &options))
        };
        let (kept_for, prompt) = self.prompt.get_or_init(|| (param_descriptions, render()));
        if *kept_for == param_descriptions {
            prompt.clone()
        } else {
            render()
        }
    }

    /// The parser's configuration for answers to `catalog`'s tools written in `dialect`.
    pub(crate) fn parser_config(&self, catalog: &Catalog, dialect: Dialect) -> ParserConfig {
        let base = self.parser.get_or_init(|| {
            // Only a call that may take a body waits past its `)`; client tools never do.
            ParserConfig::default()
                .with_bodies(catalog.bodies())
                // A model's own format may write a call as bare JSON naming a tool.
                .offering(catalog.interfaces(), catalog.root())
        });
        base.clone().with_dialect(dialect)
    }

    /// The grammar of `interfaces` under `options` ([`gbnf`]).
    pub(crate) fn grammar(&self, interfaces: &[Interface], options: &GrammarOptions) -> Outcome {
        let build = || gbnf(interfaces, options).map(|text| Arc::new(Grammar::new(text)));
        if !keeps(options) {
            return build();
        }
        if let Some(kept) = self.kept_grammar(options) {
            return kept;
        }
        // Built outside the lock: other requests of the same tools go on meanwhile; two
        // building the same grammar at once both keep the first.
        let built = build();
        if let Ok(mut grammars) = self.grammars.lock() {
            let known = grammars.iter().any(|(kept, _)| kept == options);
            if !known && grammars.len() < MAX_GRAMMARS {
                grammars.push((options.clone(), built.clone()));
            }
        }
        built
    }

    fn kept_grammar(&self, options: &GrammarOptions) -> Option<Outcome> {
        let grammars = self.grammars.lock().ok()?;
        grammars
            .iter()
            .find(|(kept, _)| kept == options)
            .map(|(_, grammar)| grammar.clone())
    }

    /// The bytes of the texts kept: the prompt and the grammars.
    pub(crate) fn held_bytes(&self) -> usize {
        let prompt = self
            .prompt
            .get()
            .map_or(0, |(_, prompt)| prompt.held_bytes());
        let grammars = self.grammars.lock().map_or(0, |grammars| {
            grammars
                .iter()
                .filter_map(|(_, grammar)| grammar.as_ref().ok())
                .map(|grammar| grammar.text.len() + grammar.sent_len())
                .sum()
        });
        prompt + grammars
    }
}

/// Whether a grammar built under `options` is kept: not when it holds a request's own
/// text (its arguments grounded in the user's words), nor when its size bound was taken
/// from what is left of the request limit (it differs from request to request).
fn keeps(options: &GrammarOptions) -> bool {
    options.grounded_text().is_none()
        && options.grounded_numbers().is_none()
        && options.max_bytes() == GrammarOptions::default().max_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use atfunc::grammar::Choice;
    use serde_json::json;

    fn interfaces(count: usize) -> Vec<Interface> {
        let tools: Vec<serde_json::Value> = (0..count)
            .map(|i| {
                json!({"type": "function", "function": {"name": format!("tool_{i}"),
                    "description": "Does a thing.", "parameters": {"type": "object",
                    "properties": {"q": {"type": "string", "description": "what"}},
                    "required": ["q"]}}})
            })
            .collect();
        atfunc::load_interfaces(&json!(tools)).unwrap()
    }

    #[test]
    fn a_prompt_kept_is_the_prompt_rendered() {
        let interfaces = interfaces(3);
        let built = Built::default();
        for descriptions in [true, false, true] {
            let options = PromptOptions::default().with_param_descriptions(descriptions);
            let fresh = render_prompt(&interfaces, &options);
            assert_eq!(built.prompt(&interfaces, descriptions).to_string(), fresh);
        }
        assert!(built.held_bytes() > 0);
    }

    #[test]
    fn a_grammar_kept_is_the_grammar_built_and_a_request_bound_one_is_not_kept() {
        let interfaces = interfaces(3);
        let built = Built::default();
        let auto = GrammarOptions::default().with_choice(Choice::Auto);
        let required = GrammarOptions::default().with_choice(Choice::Required);
        for options in [&auto, &required, &auto] {
            let fresh = gbnf(&interfaces, options).unwrap();
            let kept = built.grammar(&interfaces, options).unwrap();
            assert_eq!(kept.text, fresh);
            assert_eq!(kept.sent.get(), serde_json::to_string(&fresh).unwrap());
        }
        assert_eq!(built.grammars.lock().unwrap().len(), 2);
        let grounded = auto.clone().with_grounded_text(Some("in Paris".into()));
        let bounded = auto.clone().with_max_bytes(1 << 20);
        for options in [&grounded, &bounded] {
            let fresh = gbnf(&interfaces, options).unwrap();
            assert_eq!(built.grammar(&interfaces, options).unwrap().text, fresh);
        }
        assert_eq!(built.grammars.lock().unwrap().len(), 2);
        // An error is the builder's, kept or not.
        let missing = GrammarOptions::default().with_choice(Choice::Function("nope".into()));
        let fresh = gbnf(&interfaces, &missing).unwrap_err();
        assert_eq!(built.grammar(&interfaces, &missing).unwrap_err(), fresh);
        assert_eq!(built.grammar(&interfaces, &missing).unwrap_err(), fresh);
    }

    #[test]
    fn at_most_max_grammars_are_kept() {
        let interfaces = interfaces(MAX_GRAMMARS + 2);
        let built = Built::default();
        for i in 0..MAX_GRAMMARS + 2 {
            let options =
                GrammarOptions::default().with_choice(Choice::Function(format!("tool_{i}")));
            let fresh = gbnf(&interfaces, &options).unwrap();
            assert_eq!(built.grammar(&interfaces, &options).unwrap().text, fresh);
        }
        assert_eq!(built.grammars.lock().unwrap().len(), MAX_GRAMMARS);
    }
}
