//! The ways a case is put to the model, and the prompt each one sends.

use crate::bind::{bind, Catalog};
use crate::interface::{Interface, ParamType};
use crate::parse::{parse_events, Event};
use crate::render::{render_prompt, PromptOptions};
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
}

impl Strategy {
    /// Whether the atfunc prompt (and so the prompt variants) is sent.
    fn prompted(self) -> bool {
        !matches!(self, Strategy::Native | Strategy::Dialect)
    }
}

/// A strategy and the prompt variants it runs with: `text`, `repair+desc`,
/// `grammar+desc+example`. Variants change the atfunc prompt, so `native` and `dialect`
/// take none.
///
/// ```
/// use atfunc::eval::{Mode, Strategy};
/// let mode: Mode = "text+desc".parse().unwrap();
/// assert_eq!(mode.strategy, Strategy::Text);
/// assert!(mode.descriptions && !mode.example);
/// assert_eq!(mode.to_string(), "text+desc");
/// assert!("native+desc".parse::<Mode>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mode {
    /// How the model is asked.
    pub strategy: Strategy,
    /// Variant `desc`: each parameter's description in the prompt, on a line under its
    /// function (the default prompt leaves them out).
    pub descriptions: bool,
    /// Variant `example`: the preamble's example call is a call of the case's own first
    /// function instead of the fixed one.
    pub example: bool,
    /// Variant `named`: the preamble's example call gives every argument by name, as the
    /// grammar has the model write them.
    pub named: bool,
    /// Variant `slot`: the preamble's example call shows each free text value as a slot,
    /// `"<name>"`, instead of a plausible value (`"Oslo"`) a model may copy.
    pub slot: bool,
    /// Variant `guard`: the grammar's strings may not begin with `,` or `)`
    /// ([`GrammarOptions::guard_string_start`](crate::GrammarOptions::guard_string_start)).
    pub guard: bool,
    /// Variant `bare`: the grammar also takes a text value as a bare word, `city=Oslo`
    /// ([`GrammarOptions::bare_strings`](crate::grammar::GrammarOptions::bare_strings)).
    pub bare: bool,
    /// Variant `nolead`: the grammar asks for the call at once, without the short lead-in
    /// of prose it allows by default ([`GrammarOptions::lead_in`](crate::grammar::GrammarOptions::lead_in) 0).
    pub no_lead: bool,
    /// Variant `bound`: the grammar bounds strings to 256 characters (`BOUND_STRING_CHARS`) and
    /// lists to 32 items (`BOUND_LIST_ITEMS`)
    /// ([`GrammarOptions::max_string_chars`](crate::grammar::GrammarOptions::max_string_chars)),
    /// so a value that loops must close before the token limit.
    pub bound: bool,
    /// Variant `abstract`: the preamble's example call is [`ABSTRACT_EXAMPLE`], a call of no
    /// listed function whose values no question asks for, instead of a call of one of the
    /// case's functions with placeholder values (which a model may copy: `1` for a number).
    pub abstract_example: bool,
    /// Variant `grounded`: the grammar's numbers are those the case's user messages write
    /// ([`GrammarOptions::grounded_numbers`](crate::grammar::GrammarOptions::grounded_numbers)).
    pub grounded: bool,
    /// Variant `spans`: a text argument's value is a run of words of the case's user
    /// messages ([`GrammarOptions::grounded_text`](crate::grammar::GrammarOptions::grounded_text)).
    pub spans: bool,
    /// Variant `several`: the preamble's rules gain [`SEVERAL_RULE`], which asks for one
    /// call per thing the question asks about (a small model in BFCL `parallel` writes
    /// one call, or the same call again and again).
    pub several: bool,
    /// Variant `shot`: the preamble ends with [`SHOT_EXAMPLE`], a question and the call
    /// that answers it, whose values are whole phrases of the question (`"Paris, France"`,
    /// not `"Paris"`): a small model often takes part of the phrase it should.
    pub shot: bool,
    /// Variant `once`: an answer is read up to the first call that repeats an earlier one
    /// (the same function with the same arguments); the repeat and what follows are
    /// dropped. The request is unchanged. Every mode reads so by default; the variant
    /// keeps it for one mode of a run that reads every call
    /// ([`EvalOptions::keep_repeated_calls`](super::EvalOptions::keep_repeated_calls)).
    pub once: bool,
    /// Variant `next`: an answer whose reading stopped at a repeated call is continued,
    /// one call at a time, under a grammar that allows one call that leaves out the calls
    /// it wrote ([`GrammarOptions::not_again`](crate::grammar::GrammarOptions::not_again))
    /// or the end, until the model ends, no new call can be made, a call is a near-repeat
    /// (a fragment of a text value an earlier call gave the same parameter, or only values
    /// earlier calls gave: the answer is read up to the first such call, continued or
    /// not), or 8 calls are read. A
    /// small model asked for several calls writes its first and then repeats it; asked for
    /// its next one with that one left out, it writes its next best. Needs llama-server's
    /// `/apply-template` and `/completion`.
    pub next: bool,
}

/// The most characters of a string under the variant `bound`: more than twice the longest
/// string of BFCL's answers, and few enough tokens to leave room for the call to close
/// within the evaluator's default 256.
pub const BOUND_STRING_CHARS: u32 = 256;

/// The most items of a list under the variant `bound`.
pub const BOUND_LIST_ITEMS: u32 = 32;

/// The rule the variant `several` adds to the preamble, before its rule on writing calls.
pub const SEVERAL_RULE: &str = "- A question about several things (places, numbers, people, \
     items) needs one call for each, one per line, each with its own values.";

/// The worked example the variant `shot` adds to the preamble: a function no case has,
/// so the grammar never lets a model call it, and values it cannot copy under `+spans`.
pub const SHOT_EXAMPLE: &str = "Example: asked \"How far is it from Paris, France to the \
     Berlin central station, in km?\", write @distance(\"Paris, France\", \
     \"Berlin central station\", unit=\"km\"): each value is the whole phrase the \
     question gives for it.";

/// The example call of the variant `abstract`.
pub const ABSTRACT_EXAMPLE: &str = r#"@function_name("text value", number_argument=2)"#;

impl Mode {
    /// A mode without variants.
    pub fn new(strategy: Strategy) -> Mode {
        Mode {
            strategy,
            descriptions: false,
            example: false,
            named: false,
            slot: false,
            guard: false,
            bare: false,
            no_lead: false,
            bound: false,
            abstract_example: false,
            grounded: false,
            spans: false,
            several: false,
            shot: false,
            once: false,
            next: false,
        }
    }
}

impl Mode {
    /// Each variant's name as modes write it, and its flag: the one list Display, FromStr
    /// and the check that a strategy takes variants read.
    fn variants_mut(&mut self) -> [(&'static str, &mut bool); 15] {
        [
            ("desc", &mut self.descriptions),
            ("example", &mut self.example),
            ("named", &mut self.named),
            ("slot", &mut self.slot),
            ("guard", &mut self.guard),
            ("bare", &mut self.bare),
            ("nolead", &mut self.no_lead),
            ("bound", &mut self.bound),
            ("abstract", &mut self.abstract_example),
            ("grounded", &mut self.grounded),
            ("spans", &mut self.spans),
            ("several", &mut self.several),
            ("shot", &mut self.shot),
            ("once", &mut self.once),
            ("next", &mut self.next),
        ]
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.strategy {
            Strategy::Text => "text",
            Strategy::Repair => "repair",
            Strategy::Grammar => "grammar",
            Strategy::Auto => "auto",
            Strategy::Lazy => "lazy",
            Strategy::Decide => "decide",
            Strategy::Native => "native",
            Strategy::Dialect => "dialect",
        })?;
        // A copy, to read the flags through the one list of them.
        let mut copy = *self;
        for (name, on) in copy.variants_mut() {
            if *on {
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
        let strategy = match parts.next().unwrap_or_default() {
            "text" => Strategy::Text,
            "repair" => Strategy::Repair,
            "grammar" => Strategy::Grammar,
            "auto" => Strategy::Auto,
            "lazy" => Strategy::Lazy,
            "decide" => Strategy::Decide,
            "native" => Strategy::Native,
            "dialect" => Strategy::Dialect,
            other => {
                return Err(format!(
                    "unknown mode '{other}': use text, repair, grammar, auto, lazy, decide, \
                     native or dialect, optionally with +desc and +example"
                ))
            }
        };
        let mut mode = Mode::new(strategy);
        for variant in parts {
            let mut variants = mode.variants_mut();
            let Some((_, on)) = variants.iter_mut().find(|(name, _)| *name == variant) else {
                let names: Vec<String> = variants
                    .iter()
                    .map(|(name, _)| format!("+{name}"))
                    .collect();
                let names = names.join(", ");
                let names = match names.rsplit_once(", ") {
                    Some((head, last)) => format!("{head} or {last}"),
                    None => names,
                };
                return Err(format!(
                    "unknown variant '{variant}' in mode '{text}': use {names}"
                ));
            };
            **on = true;
        }
        if !strategy.prompted() && mode.variants_mut().iter().any(|(_, on)| **on) {
            return Err(format!(
                "mode '{text}': {strategy} sends the tools as JSON Schema, the prompt \
                 variants do not apply",
                strategy = Mode::new(strategy)
            ));
        }
        Ok(mode)
    }
}

/// The system prompt of a text-based mode: the atfunc prompt for `interfaces`, with the
/// mode's variants applied.
pub fn prompt(interfaces: &[Interface], mode: &Mode) -> String {
    let options = PromptOptions {
        param_descriptions: mode.descriptions,
        ..PromptOptions::default()
    };
    let mut prompt = render_prompt(interfaces, &options);
    if mode.example {
        if let Some(example) = interfaces.first().map(example_call) {
            // The preamble's example is its first line that starts a call.
            let fixed = prompt
                .lines()
                .find(|line| line.starts_with('@'))
                .map(str::to_owned);
            if let Some(fixed) = fixed {
                prompt = prompt.replacen(&fixed, &example, 1);
            }
        }
    }
    if mode.named || mode.slot {
        prompt = rewrite_example(&prompt, interfaces, mode.named, mode.slot);
    }
    if mode.abstract_example {
        if let Some(line) = prompt.lines().find(|line| line.starts_with('@')) {
            prompt = prompt.replacen(line, ABSTRACT_EXAMPLE, 1);
        }
    }
    if mode.several {
        // Before the last rule, which says how calls are written and when to stop.
        if let Some(at) = prompt.find("\n- Write calls as plain text") {
            prompt.insert_str(at + 1, &format!("{SEVERAL_RULE}\n"));
        }
    }
    if mode.shot {
        // After the rules, before the list of functions.
        if let Some(at) = prompt.find("\nFunctions:\n") {
            prompt.insert_str(at, &format!("{SHOT_EXAMPLE}\n"));
        }
    }
    prompt
}

/// The prompt with its example call (its first line that starts a call) written again:
/// every argument by name (`named`), free text values as `"<name>"` slots (`slot`). An
/// example that does not bind, or has a body, stays as it is.
fn rewrite_example(prompt: &str, interfaces: &[Interface], named: bool, slot: bool) -> String {
    let Some(line) = prompt.lines().find(|line| line.starts_with('@')) else {
        return prompt.to_owned();
    };
    if line.contains("with_body") {
        return prompt.to_owned();
    }
    let catalog = Catalog::new(interfaces.to_vec());
    let Some(call) = parse_events(line)
        .into_iter()
        .find_map(|event| match event {
            Event::Call(call) => Some(call),
            _ => None,
        })
    else {
        return prompt.to_owned();
    };
    let Ok(bound) = bind(&call, &catalog) else {
        return prompt.to_owned();
    };
    let Some(interface) = interfaces.get(bound.index) else {
        return prompt.to_owned();
    };
    let Some((shown, written)) = line[1..].split_once('(') else {
        return prompt.to_owned();
    };
    let positional = written
        .split(", ")
        .take_while(|arg| !arg.contains('='))
        .count();
    let args: Vec<String> = bound
        .args
        .iter()
        .enumerate()
        .map(|(i, (name, value))| {
            let param = interface.params.iter().find(|p| &p.name == name);
            let free_text = param.is_some_and(|p| {
                p.ty == ParamType::String && p.choices.is_none() && p.known_format().is_none()
            });
            let value = if slot && free_text && value.is_string() {
                format!("\"<{name}>\"")
            } else {
                value.to_string()
            };
            if named || i >= positional {
                format!("{name}={value}")
            } else {
                value
            }
        })
        .collect();
    let example = format!("@{shown}({})", args.join(", "));
    prompt.replacen(line, &example, 1)
}

/// A call of `interface` with a made-up value for each required parameter (the first
/// positional, the rest by name), or for its first parameter when none is required.
fn example_call(interface: &Interface) -> String {
    let mut params: Vec<_> = interface.params.iter().filter(|p| p.required).collect();
    if params.is_empty() {
        params.extend(interface.params.first());
    }
    let args: Vec<String> = params
        .iter()
        .enumerate()
        .map(|(i, param)| {
            let value = param
                .default
                .clone()
                .filter(|d| !d.is_null())
                .or_else(|| param.choices.as_ref().and_then(|c| c.first().cloned()))
                .unwrap_or_else(|| match &param.ty {
                    ParamType::Integer => serde_json::json!(param.min.unwrap_or(2.0) as i64),
                    ParamType::Number => serde_json::json!(param.min.unwrap_or(1.5)),
                    ParamType::Boolean => serde_json::json!(true),
                    ParamType::Array { .. } => serde_json::json!([]),
                    ParamType::Object { .. } => serde_json::json!({}),
                    ParamType::String | ParamType::Any => serde_json::json!("text"),
                });
            if i == 0 {
                value.to_string()
            } else {
                format!("{}={value}", param.name)
            }
        })
        .collect();
    format!("@{}({})", interface.qualified_name(), args.join(", "))
}
