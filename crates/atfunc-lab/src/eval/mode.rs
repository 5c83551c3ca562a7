//! The ways a case is put to the model: a [`Strategy`] and the library options it runs with.
//!
//! A mode is written `strategy+variant+...` (`grammar+desc+spans`). Each variant names one
//! option of the library, measured in EVAL.md to gain on BFCL: a prompt variant is a
//! [`PromptOptions`] field that [`render_prompt`] honours, a grammar variant a
//! [`GrammarOptions`] field, and `next` a way of reading the answer. [`VARIANTS`] is the
//! one list of them: parsing, display and the options are read from it.

use atfunc::grammar::GrammarOptions;
use atfunc::interface::Interface;
use atfunc::render::{render_prompt, PromptOptions};
use std::fmt;
use std::str::FromStr;

/// How the model is asked to call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// The atfunc prompt as the system message; the answer parsed and bound, no repair.
    Text,
    /// As `Text`, and calls that do not bind (or an answer without a call) are sent back
    /// with the gateway's repair message.
    Repair,
    /// As `Text`, with the GBNF grammar of the case's tools in the request's `grammar`
    /// field (at least one call required).
    Grammar,
    /// `tool_choice: "auto"` as the gateway's `--constrain` sends it: the grammar allows
    /// prose without `@` and calls that bind, or no call at all.
    Auto,
    /// `tool_choice: "auto"` with a lazy grammar: free prose until the model writes `@`,
    /// then only calls that bind (llama.cpp's `grammar_lazy` with an `@` trigger).
    Lazy,
    /// `tool_choice: "auto"` decided first: one short request whose grammar allows only a
    /// function's name or `none`; then, for a name, the `Grammar` request with that one
    /// function's grammar, and for `none`, no call.
    Decide,
    /// The endpoint's own function calling: the tools in `tools`, its `tool_calls` scored.
    Native,
    /// A model that writes its own call format as plain content (a server without a tool
    /// parser): the tools in `tools` for its chat template, no atfunc prompt, and the
    /// answer's content read in [`EvalOptions::dialect`](super::EvalOptions::dialect), as
    /// `atfunc serve --upstream-dialect` reads it.
    Dialect,
    /// As `Dialect`, under the grammar of the tools' calls in the model's own format (at
    /// least one call required), as `atfunc serve --upstream-dialect hermes --constrain`
    /// answers: what the model's template taught it, and only calls that bind. Only for a
    /// format with a grammar ([`CallForm`](atfunc::grammar::CallForm)): `hermes`.
    DialectGrammar,
    /// As `DialectGrammar` under `tool_choice: "auto"`, as the gateway answers an agent's
    /// request: the grammar allows prose without a call, or the calls in the model's own
    /// format (for `hermes`, prose without a backtick, then at most one fenced list).
    DialectAuto,
}

impl Strategy {
    /// Whether the answers are read in the model's own call format
    /// ([`EvalOptions::dialect`](super::EvalOptions::dialect)) rather than atfunc's syntax.
    pub fn reads_own_format(self) -> bool {
        matches!(
            self,
            Strategy::Dialect | Strategy::DialectGrammar | Strategy::DialectAuto
        )
    }

    /// Whether the gateway may weigh the answer first (`--call-threshold`): the modes
    /// under `tool_choice: "auto"` with a grammar, and no decision.
    pub fn weighable(self) -> bool {
        matches!(self, Strategy::Auto | Strategy::DialectAuto)
    }

    /// Whether the answers are held to a grammar of the model's own call format.
    pub fn holds_own_format(self) -> bool {
        matches!(self, Strategy::DialectGrammar | Strategy::DialectAuto)
    }

    /// Whether the atfunc prompt (and so the variants) is sent.
    fn prompted(self) -> bool {
        !matches!(
            self,
            Strategy::Native | Strategy::Dialect | Strategy::DialectGrammar | Strategy::DialectAuto
        )
    }

    /// The strategy as a mode names it.
    fn name(self) -> &'static str {
        match self {
            Strategy::Text => "text",
            Strategy::Repair => "repair",
            Strategy::Grammar => "grammar",
            Strategy::Auto => "auto",
            Strategy::Lazy => "lazy",
            Strategy::Decide => "decide",
            Strategy::Native => "native",
            Strategy::Dialect => "dialect",
            Strategy::DialectGrammar => "dialect-grammar",
            Strategy::DialectAuto => "dialect-auto",
        }
    }
}

/// An option a text-based mode runs with, beyond its strategy's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Variant {
    /// `desc`: each parameter's description in the prompt, on a line under its function
    /// ([`PromptOptions::param_descriptions`]). EVAL.md (p): 163 right of 400
    /// `simple_python` against 156, for 16 % more prompt tokens.
    Desc,
    /// `bound`: the grammar's strings hold at most 256 characters and its lists (and
    /// objects of free keys) at most 32 entries ([`GrammarOptions::with_max_string_chars`],
    /// [`GrammarOptions::with_max_list_items`]), so that a value that loops must close before
    /// the evaluator's default 256 tokens: 256 characters is more than twice BFCL's
    /// longest string. EVAL.md (g1), (h): every looping string it reached was closed.
    Bound,
    /// `spans`: a text argument's value is a run of words of the case's user messages
    /// ([`GrammarOptions::with_grounded_text`]). EVAL.md (l): +4.5 points on `simple_python`
    /// and on `multiple`.
    Spans,
    /// `bare`: a text argument may also be a bare word (`unit=units`,
    /// [`GrammarOptions::with_bare_strings`]): a model that writes values unquoted is not made
    /// to open a quote, where the engine would take the likeliest token that starts with
    /// one (`"testing` for `units`, Qwen2.5-Coder-0.5B).
    Bare,
    /// `next`: an answer whose reading stopped at a repeated call is continued, one call
    /// at a time, under a grammar that leaves out the calls it wrote
    /// ([`GrammarOptions::with_not_again`], [`GrammarOptions::with_continued`]) or allows the end,
    /// until the model ends, no new call can be made, a call is a near-repeat (a fragment
    /// of a text value an earlier call gave the same parameter, or only values earlier
    /// calls gave: the answer is read up to the first such call, continued or not), or 8
    /// calls are read (more than any BFCL `parallel` answer holds). Needs llama-server's
    /// `/apply-template` and `/completion`. EVAL.md (r): 24 right of 200 `parallel`
    /// against 17.
    Next,
}

/// Every variant with its name, in the order a mode's name lists them: the order of the
/// committed reports (`grammar+desc+spans`, `grammar+spans+next`), so that they resume.
const VARIANTS: [(Variant, &str); 5] = [
    (Variant::Desc, "desc"),
    (Variant::Bound, "bound"),
    (Variant::Spans, "spans"),
    (Variant::Bare, "bare"),
    (Variant::Next, "next"),
];

/// Variants older builds took, and why they are gone: a report that names one is still
/// read, and asking for one says why it cannot be run.
const REMOVED: [(&str, &str); 11] = [
    ("guard", "its grammar is every mode's default (EVAL.md (e))"),
    (
        "once",
        "every mode reads an answer up to its first repeated call, and \
         --keep-repeated-calls reads every call (EVAL.md (h), (i))",
    ),
    ("example", "it measured no gain (EVAL.md, Prompt variants)"),
    ("named", "it measured no gain (EVAL.md (c), (f))"),
    ("slot", "it measured no gain (EVAL.md (b))"),
    ("nolead", "it measured no gain (EVAL.md (f))"),
    ("abstract", "it measured no gain (EVAL.md (g2), (n))"),
    ("grounded", "it measured no gain (EVAL.md (g3))"),
    ("several", "it measured no gain (EVAL.md (m))"),
    ("shot", "it measured no gain (EVAL.md (p))"),
    ("pos", "it measured a loss (EVAL.md (x))"),
];

/// A strategy and the variants it runs with: `text`, `repair+desc`, `grammar+desc+spans`.
/// Variants change the atfunc prompt, its grammar or its reading, so `native` and
/// `dialect` take none.
///
/// ```
/// use atfunc_lab::eval::{Mode, Strategy, Variant};
/// let mode: Mode = "grammar+spans+desc".parse().unwrap();
/// assert_eq!(mode.strategy, Strategy::Grammar);
/// assert!(mode.has(Variant::Desc) && mode.has(Variant::Spans) && !mode.has(Variant::Next));
/// assert_eq!(mode.to_string(), "grammar+desc+spans");
/// assert_eq!(Mode::new(Strategy::Text).with(Variant::Desc).to_string(), "text+desc");
/// assert!("native+desc".parse::<Mode>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mode {
    /// How the model is asked.
    pub strategy: Strategy,
    /// The variants on, one bit each by their place in [`VARIANTS`].
    variants: u8,
}

impl Mode {
    /// A mode without variants.
    pub fn new(strategy: Strategy) -> Mode {
        Mode {
            strategy,
            variants: 0,
        }
    }

    /// This mode with `variant` on as well.
    pub fn with(mut self, variant: Variant) -> Mode {
        self.variants |= bit(variant);
        self
    }

    /// Whether `variant` is on.
    pub fn has(&self, variant: Variant) -> bool {
        self.variants & bit(variant) != 0
    }

    /// The options the prompt is rendered with.
    pub fn prompt_options(&self) -> PromptOptions<'static> {
        PromptOptions::default().with_param_descriptions(self.has(Variant::Desc))
    }

    /// `base` with the mode's grammar variants applied; `said` (what the case's user
    /// wrote) is read only for the variants that ground values in it.
    pub fn grammar_options(
        &self,
        base: GrammarOptions,
        said: impl FnOnce() -> String,
    ) -> GrammarOptions {
        let mut options = base;
        if self.has(Variant::Bound) {
            options = options.with_bounded_values();
        }
        if self.has(Variant::Spans) {
            options = options.with_grounded_text(Some(said()));
        }
        if self.has(Variant::Bare) {
            options = options.with_bare_strings(true);
        }
        options
    }
}

/// The bit of `variant` in [`Mode::variants`].
fn bit(variant: Variant) -> u8 {
    let at = VARIANTS
        .iter()
        .position(|(v, _)| *v == variant)
        .unwrap_or_default();
    1 << at
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.strategy.name())?;
        for (variant, name) in VARIANTS {
            if self.has(variant) {
                write!(f, "+{name}")?;
            }
        }
        Ok(())
    }
}

impl FromStr for Mode {
    type Err = String;

    fn from_str(text: &str) -> Result<Mode, String> {
        let mut parts = text.trim().split('+');
        let strategies = [
            Strategy::Text,
            Strategy::Repair,
            Strategy::Grammar,
            Strategy::Auto,
            Strategy::Lazy,
            Strategy::Decide,
            Strategy::Native,
            Strategy::Dialect,
            Strategy::DialectGrammar,
            Strategy::DialectAuto,
        ];
        let first = parts.next().unwrap_or_default();
        let Some(strategy) = strategies.into_iter().find(|s| s.name() == first) else {
            return Err(format!(
                "unknown mode '{first}': use text, repair, grammar, auto, lazy, decide, \
                 native, dialect, dialect-grammar or dialect-auto, optionally with {}",
                variant_names()
            ));
        };
        let mut mode = Mode::new(strategy);
        for part in parts {
            if let Some((variant, _)) = VARIANTS.iter().find(|(_, name)| *name == part) {
                mode = mode.with(*variant);
            } else if let Some((_, why)) = REMOVED.iter().find(|(name, _)| *name == part) {
                return Err(format!(
                    "mode '{text}': the variant '+{part}' was removed: {why}; a mode takes {}",
                    variant_names()
                ));
            } else {
                return Err(format!(
                    "unknown variant '{part}' in mode '{text}': use {}",
                    variant_names()
                ));
            }
        }
        if !strategy.prompted() && mode.variants != 0 {
            return Err(format!(
                "mode '{text}': {} sends the tools as JSON Schema, the variants do not apply",
                strategy.name()
            ));
        }
        Ok(mode)
    }
}

/// The variants as a message lists them: `+desc, +bound, +spans, +bare or +next`.
fn variant_names() -> String {
    let names: Vec<String> = VARIANTS
        .iter()
        .map(|(_, name)| format!("+{name}"))
        .collect();
    match names.split_last() {
        Some((last, head)) if !head.is_empty() => format!("{} or {last}", head.join(", ")),
        _ => names.join(", "),
    }
}

/// The system prompt of a text-based mode: the atfunc prompt for `interfaces`, rendered
/// with the mode's options.
pub fn prompt(interfaces: &[Interface], mode: &Mode) -> String {
    render_prompt(interfaces, &mode.prompt_options())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kept_mode_string_reads_back_as_written() {
        for written in [
            "text",
            "grammar+bound",
            "grammar+spans",
            "grammar+desc",
            "grammar+desc+spans",
            "grammar+spans+next",
            "decide+desc+bound+spans+next",
            "grammar+desc+bare",
            "decide+desc+bound+spans+bare+next",
            "native",
            "dialect",
            "dialect-grammar",
            "dialect-auto",
        ] {
            let mode: Mode = written.parse().unwrap();
            assert_eq!(mode.to_string(), written);
        }
    }

    #[test]
    fn a_removed_variant_says_it_was_removed() {
        for (name, _) in REMOVED {
            let error = format!("grammar+{name}").parse::<Mode>().unwrap_err();
            assert!(error.contains("was removed"), "{error}");
            assert!(
                error.contains("+desc, +bound, +spans, +bare or +next"),
                "{error}"
            );
        }
        let error = "grammar+nope".parse::<Mode>().unwrap_err();
        assert!(error.starts_with("unknown variant 'nope'"), "{error}");
    }
}
