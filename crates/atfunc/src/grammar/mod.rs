//! Grammars: interfaces as a GBNF grammar whose language is answers whose calls bind.
//!
//! A grammar is another rendering of the interfaces: where [`render`](crate::render) tells
//! a model how to write calls, a grammar makes an inference engine (llama.cpp, or xgrammar
//! and llguidance behind vLLM and SGLang) let it write nothing else.
//!
//! ```
//! use atfunc::{gbnf, GrammarOptions, Interface, Param, ParamType};
//! use atfunc::grammar::Choice;
//!
//! let weather = Interface::new("get_temp").in_domain("weather")
//!     .param(Param::new("location", ParamType::String).required())
//!     .param(Param::new("days", ParamType::Integer));
//! let options = GrammarOptions::default().with_choice(Choice::Required);
//! let text = gbnf(&[weather.clone()], &options).unwrap();
//! assert!(text.starts_with("root ::= "));
//!
//! let grammar = atfunc::grammar::grammar(&[weather], &options).unwrap();
//! assert!(grammar.accepts("Sure. @weather.get_temp(location=\"Oslo\", days=3)"));
//! assert!(!grammar.accepts("@weather.get_temp(days=3)")); // location is required
//! ```
//!
//! # The contract
//!
//! 1. **Functions.** Each interface is called under the name the prompt shows: without its
//!    domain when the domain is [`GrammarOptions::with_root`], with it otherwise. Of two
//!    interfaces with one name (ignoring case) the first is kept, as the binder keeps it. A
//!    function none of whose calls can bind (a required parameter whose choices all have
//!    the wrong type, bounds no number meets) is left out.
//! 2. **Arguments.** Named, `name=value`, in declared order, separated by `", "`; required
//!    parameters always, optional ones optional. Positional arguments, other spacing and
//!    other quoting also parse, but a grammar that offers one spelling leaves a model
//!    fewer ways to go wrong.
//! 3. **Values**, each as JSON writes it, which the parser reads as the same value:
//!    strings in double quotes with JSON's escapes, not beginning with `,` or `)` (a
//!    model that merges its opening quote with `,` or `)` runs on inside the string;
//!    EVAL.md (e)); integers and numbers in JSON's syntax
//!    with bounded digits (18 for an integer, so it fits an `i64`; a number's exponent has
//!    two, so it is finite); `true`/`false`; declared choices as alternatives (only those
//!    of a type the binder can match; an array's choices per element, as the binder reads
//!    them); `min`/`max` exactly for integers, and for numbers
//!    as whole numbers in range plus non-negative fractions below the maximum; arrays of
//!    their item type; objects with their declared fields in declared order, the required
//!    ones present; `any` (and objects or arrays with nothing declared) as JSON nesting at
//!    most [`GrammarOptions::with_any_depth`] levels. `null` only stands where it binds: inside
//!    `any`, never for a parameter or field (there it would mean "left out").
//! 4. **Bodies.** A function with a request body takes `" with_body [["`, the body as a
//!    JSON object following its fields, and `"]]"`; optional when no field is required.
//! 5. **The answer**, by [`Choice`]:
//!    - `Auto`: prose without `@`, with calls anywhere between; a call directly after a
//!      letter or digit is left out (`bob@x(...)` is prose to the parser), so every `@`
//!      the model writes starts a call that binds.
//!    - `Required`: an optional short lead-in (at most [`GrammarOptions::with_lead_in`]
//!      characters on one line, ending in a space or a newline), then one or more calls,
//!      one per line, then the end.
//!    - `Function(name)`: as `Required`, with that function only.
//!    - `None`: prose without `@`.
//!
//!    With [`GrammarOptions::with_single`], at most one call (`Auto`) or exactly one (the
//!    others).
//!    With [`GrammarOptions::with_continued`], `Required` and `Function` are a newline and one
//!    call, or nothing: the rest of an answer given back to the model.
//! 6. **Bounds.** No rule refers to itself: nesting is unrolled to fixed depths, so an
//!    engine's work per character is bounded, and no value nests deeper than the parser's
//!    default limit. Strings and prose are unbounded in length: the engine's token limit
//!    ends them.
//! 7. **Size.** The grammar grows with the size of the interfaces, not faster: an
//!    expression that would be written in two places (an array's item, an optional field
//!    that may come first or after another, the rest of a field list) is a rule of its own
//!    when it is not small. Its rules and GBNF bytes are counted while it is built; past
//!    [`GrammarOptions::with_max_rules`] or [`GrammarOptions::with_max_bytes`] building stops with
//!    [`GrammarError::TooLarge`].
//!
//! Limits: text right after a call that begins with `with_body [[` is read by the parser
//! as that call's body; the grammar does not forbid it in `Auto` prose.
//!
//! One value is offered that the binder refuses, on purpose: text that is its parameter's
//! placeholder from the prompt (`"<layout>"` for `layout`, alone or followed by more of the
//! example's arguments; [`BindError::Placeholder`](crate::BindError::Placeholder)). A model
//! that writes it is copying the example, and has decided to by the time it opens the
//! quote; a grammar without that text only made it write a near copy (`"<controller> "`,
//! in 16 of 40 `simple_java` answers of Qwen2.5-Coder-0.5B, EVAL.md (x)), which the binder
//! refuses as well. Refused, the copy is asked again (the gateway's resamples and repair
//! rounds).

mod decide;
mod exclude;
mod grounded;
mod tree;
mod values;

pub use decide::{
    decision_gbnf, decision_names, read_decision, ToolDecision, DECIDE_QUESTION, NO_FUNCTION,
};
pub use grounded::{numbers_in, MAX_GROUNDING_WORDS};
/// `text` as a GBNF string literal, for grammars written outside this module.
pub(crate) use tree::literal as gbnf_literal;
pub use tree::Grammar;

use crate::interface::Interface;
use serde_json::Value as Json;
use tree::{Builder, Exceeded, Node};
use unicase::UniCase;
use values::{separated, Slot, Values};

/// Which calls an answer holds, as OpenAI's `tool_choice` says it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Choice {
    /// Prose, with calls anywhere in it (or none).
    #[default]
    Auto,
    /// At least one call, after an optional short lead-in.
    Required,
    /// No calls: prose without `@`.
    None,
    /// Calls of this function only (its name as the prompt shows it, or qualified; case
    /// ignored).
    Function(String),
}

/// `auto`, `required` and `none` are the choices; any other word names a function, as
/// [`Choice::Function`]. The gateway reads `tool_choice` with it too, and refuses a word
/// that names no tool.
///
/// ```
/// use atfunc::grammar::Choice;
/// assert_eq!("required".parse(), Ok(Choice::Required));
/// assert_eq!("weather.get_temp".parse(), Ok(Choice::Function("weather.get_temp".into())));
/// ```
impl std::str::FromStr for Choice {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Choice, Self::Err> {
        Ok(match text {
            "auto" => Choice::Auto,
            "required" => Choice::Required,
            "none" => Choice::None,
            name => Choice::Function(name.to_owned()),
        })
    }
}

/// The syntax a grammar's calls are written in: atfunc's own, or the call format a model
/// was trained on, for a gateway that reads it (`atfunc serve --upstream-dialect`).
///
/// ```
/// use atfunc::grammar::{grammar, CallForm, Choice, GrammarOptions};
/// use atfunc::{Interface, Param, ParamType};
///
/// let weather = Interface::new("get_temp")
///     .param(Param::new("city", ParamType::String).required())
///     .param(Param::new("days", ParamType::Integer));
/// let options = GrammarOptions::default()
///     .with_choice(Choice::Required)
///     .with_form(CallForm::Hermes);
/// let g = grammar(&[weather], &options).unwrap();
/// assert!(g.accepts("<tool_call>\n{\"name\": \"get_temp\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"));
/// assert!(!g.accepts("<tool_call>\n{\"name\": \"get_temp\", \"arguments\": {}}\n</tool_call>"));
/// assert!(!g.accepts("@get_temp(city=\"Oslo\")"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CallForm {
    /// `@name(arg=value, ...)`, as the contract above describes.
    #[default]
    Atfunc,
    /// The Hermes / Qwen 2.5 format, each call a block of its own:
    /// `<tool_call>\n{"name": "<name>", "arguments": {...}}\n</tool_call>`, the arguments
    /// an object whose members follow the values' rules (item 3), in declared order. Names
    /// are the tools' own ([`Interface::original_qualified_name`],
    /// [`Param::original_name`](crate::interface::Param::original_name)), as the model's
    /// template shows them.
    /// `Required` and `Function`: the blocks alone, one per line, no lead-in; `Auto`:
    /// prose without `<`, with blocks between. A function that takes a request body is
    /// called without it, and left out when a body field is required: the format has no
    /// place for one.
    Hermes,
    /// The same call objects without tags, all of an answer's calls one JSON list in a
    /// Markdown fence, each on a line of its own:
    /// `` ```json\n[\n  {"name": ..., "arguments": {...}},\n  {...}\n]\n``` ``. The `hermes`
    /// reader reads it when it knows the offered tools. Qwen2.5-Coder, free, writes its call
    /// object in such a fence, and it stops after one; held to the list it keeps writing
    /// calls where several are asked (EVAL.md (ad)). `Required` and `Function`: the fenced
    /// list alone; `Auto`: the fenced list alone, or prose without a backtick (the reader
    /// takes a list without tags for calls only where the answer is nothing but calls).
    ///
    /// ```
    /// use atfunc::grammar::{grammar, CallForm, Choice, GrammarOptions};
    /// use atfunc::{Interface, Param, ParamType};
    ///
    /// let weather = Interface::new("get_temp")
    ///     .param(Param::new("city", ParamType::String).required());
    /// let options = GrammarOptions::default()
    ///     .with_choice(Choice::Required)
    ///     .with_form(CallForm::HermesList);
    /// let g = grammar(&[weather], &options).unwrap();
    /// let call = |city: &str| format!("{{\"name\": \"get_temp\", \"arguments\": {{\"city\": \"{city}\"}}}}");
    /// assert!(g.accepts(&format!("```json\n[\n  {}\n]\n```", call("Oslo"))));
    /// assert!(g.accepts(&format!("```json\n[\n  {},\n  {}\n]\n```", call("Oslo"), call("Rome"))));
    /// assert!(!g.accepts(&call("Oslo")));
    ///
    /// // Under `Auto`, the list or prose: a list beside prose would be read as an example.
    /// let options = GrammarOptions::default().with_choice(Choice::Auto).with_form(CallForm::HermesList);
    /// let g = grammar(&[Interface::new("get_temp")], &options).unwrap();
    /// let list = "```json\n[\n  {\"name\": \"get_temp\", \"arguments\": {}}\n]\n```";
    /// assert!(g.accepts(list));
    /// assert!(g.accepts("It is sunny today."));
    /// assert!(!g.accepts(&format!("Sure:\n{list}")));
    /// ```
    HermesList,
}

impl CallForm {
    /// Whether calls are JSON objects with the tools' own names (Hermes, in either layout).
    fn json(self) -> bool {
        matches!(self, CallForm::Hermes | CallForm::HermesList)
    }
}

/// Options for [`grammar`] and [`gbnf`]: start from `GrammarOptions::default()` and set
/// what differs with the `with_` methods (new options may come in any release).
///
/// ```
/// use atfunc::grammar::{Choice, GrammarOptions};
/// let options = GrammarOptions::default().with_choice(Choice::Required).with_single(true);
/// assert_eq!(options, GrammarOptions::default().with_single(true).with_choice(Choice::Required));
/// ```
///
/// A struct literal does not compile outside the crate, so that a new option is not a
/// breaking change:
///
/// ```compile_fail,E0639
/// let options = atfunc::GrammarOptions { single: true, ..Default::default() };
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GrammarOptions {
    /// Which calls an answer holds.
    choice: Choice,
    /// At most one call (with `Required` or `Function`: exactly one).
    single: bool,
    /// The toolbox whose functions are called without their prefix, as in
    /// [`PromptOptions::root`](crate::render::PromptOptions::root).
    root: Option<String>,
    /// The most characters of prose before the first call under `Required` and `Function`.
    /// Default 100.
    lead_in: u32,
    /// How deep `any` values nest (objects and arrays inside each other). Default 3.
    any_depth: usize,
    /// A string's first character is not `,` or `)`. A model that meant a bare value
    /// (`x=abc`) and is made to open a string tends to write the quote as a token that
    /// merges it with what usually follows a closing quote (`",`, `")`), and then goes on
    /// as if the string were closed, inside it, until its token limit. Such a value can
    /// still be written with an escape (`"\u002c..."`). Default true (measured in
    /// EVAL.md: it ended every such runaway string of SmolLM2-135M).
    guard_string_start: bool,
    /// A text parameter may also be written as a bare word (`city=Oslo`), as the call
    /// syntax allows: up to the `,` or `)` that ends the argument, on one line, with no
    /// quote, bracket or parenthesis. A model that writes its values unquoted (its own
    /// spelling, see EVAL.md) need not open a string it did not mean to; a value with a
    /// comma or a parenthesis still needs quotes, and so does one that begins with `<` (a
    /// copied placeholder) or whose first word reads as null (`None=None`). Default false
    /// here; the gateway's grammar (`atfunc serve --constrain`) turns it on, measured on
    /// two models in EVAL.md (y).
    bare_strings: bool,
    /// The most characters a string may hold (an escape counts as one), keys and strings
    /// inside `any` values included. A small model that falls into a loop inside a string
    /// (`"carbon_gas_carbon_dioxide_gas_..."`) runs to its token limit and its call never
    /// closes; with a bound it must close the string and can still finish the call. Default
    /// `None` (no bound): a tool may take long text. Mind the cost: llama.cpp writes a
    /// bounded repetition out as that many nested rules.
    max_string_chars: Option<u32>,
    /// The most items a list may hold, and entries an object of free keys, for the same
    /// reason (`["chicken", "chicken", ...]`). An object's declared fields are bounded by
    /// their number already. Default `None` (no bound).
    max_list_items: Option<u32>,
    /// The numbers a number or integer parameter may take, when given: those of the
    /// conversation ([`numbers_in`] of its text), each as written, the ones that fit the
    /// parameter's type and bounds. A small model copies a number from its prompt's example
    /// or invents one; held to the question's numbers it can only choose among them. A
    /// parameter none of them fits keeps the full number grammar; choices and `any` values
    /// are not affected. A value the question does not write (a sum, `0.05` for `5 %`)
    /// cannot be written, so this suits answers that take their numbers from the question.
    /// Default `None`.
    grounded_numbers: Option<Vec<String>>,
    /// The text a text parameter's value is taken from, when given: the value must be a run
    /// of whole consecutive words of it (a word is a run of letters and digits), with what
    /// stands between them, within one sentence. Most values a question gives a tool are
    /// written in it (a city, a file name, a case number); a small model held to them
    /// cannot copy its prompt's example, invent a value, or open a string with a stray
    /// `.`. A value the text does not write (`"USD"` for "dollars", a date reformatted)
    /// cannot be written either, so this suits tools whose text comes from the user's
    /// words. Parameters with choices or a checked format, and `any` values, keep their
    /// own grammar. Only the text's last [`MAX_GROUNDING_WORDS`] words count. Default
    /// `None`.
    grounded_text: Option<String>,
    /// Calls the answer may not write: a call of one of these functions whose every
    /// argument has the value given here (as JSON text, as [`WrittenCall`] holds it), and
    /// which leaves out the same optional ones, is not in the grammar. The evaluator's
    /// `+next` asks a model for its next call with the calls it wrote left out, after it
    /// began to repeat them. A new call must differ in a parameter whose values the grammar
    /// lists (declared choices, booleans, [`grounded_numbers`](Self::with_grounded_numbers),
    /// runs of [`grounded_text`](Self::with_grounded_text)): to differ only in a free number or
    /// text is not offered, so that the grammar stays exact. A function whose calls are all
    /// left out is left out. A request body is not compared. Default empty.
    not_again: Vec<WrittenCall>,
    /// The answer goes on from text that ends with a call (what the model wrote so far,
    /// given back at the end of its prompt): with `Required` or `Function`, the grammar is
    /// a newline and one more call, or nothing, so that the model may end its answer where
    /// it stands; `lead_in` and `single` do not apply. With [`not_again`](Self::with_not_again),
    /// a model's next call, if it has one. Default false.
    continued: bool,
    /// The syntax calls are written in. Default [`CallForm::Atfunc`].
    form: CallForm,
    /// Most rules the grammar may have; past it the grammar is refused
    /// ([`GrammarError::TooLarge`]). Default 20,000.
    max_rules: usize,
    /// Most bytes of GBNF the grammar may have; past it the grammar is refused. Default
    /// 4 MiB, half of the gateway's default request limit (the gateway lowers it to fit
    /// its own `--max-request-bytes`).
    max_bytes: usize,
}

impl GrammarOptions {
    /// Which calls an answer holds.
    pub fn with_choice(mut self, choice: Choice) -> Self {
        self.choice = choice;
        self
    }

    /// At most one call (with `Required` or `Function`: exactly one).
    pub fn with_single(mut self, single: bool) -> Self {
        self.single = single;
        self
    }

    /// The toolbox whose functions are called without their prefix, as in
    /// [`PromptOptions::root`](crate::render::PromptOptions::root).
    pub fn with_root(mut self, root: Option<String>) -> Self {
        self.root = root;
        self
    }

    /// The most characters of prose before the first call under `Required` and `Function`.
    /// Default 100.
    pub fn with_lead_in(mut self, lead_in: u32) -> Self {
        self.lead_in = lead_in;
        self
    }

    /// How deep `any` values nest (objects and arrays inside each other). Default 3.
    pub fn with_any_depth(mut self, any_depth: usize) -> Self {
        self.any_depth = any_depth;
        self
    }

    /// A string's first character is not `,` or `)`. A model that meant a bare value
    /// (`x=abc`) and is made to open a string tends to write the quote as a token that
    /// merges it with what usually follows a closing quote (`",`, `")`), and then goes on
    /// as if the string were closed, inside it, until its token limit. Such a value can
    /// still be written with an escape (`"\u002c..."`). Default true (measured in
    /// EVAL.md: it ended every such runaway string of SmolLM2-135M).
    //
    // The lab's lever: the evaluator turns it off to measure what it is worth (EVAL.md
    // (e)); nothing else has a reason to, so it is left out of the documentation.
    #[doc(hidden)]
    pub fn with_guard_string_start(mut self, guard_string_start: bool) -> Self {
        self.guard_string_start = guard_string_start;
        self
    }

    /// A text parameter may also be written as a bare word (`city=Oslo`), as the call
    /// syntax allows: up to the `,` or `)` that ends the argument, on one line, with no
    /// quote, bracket or parenthesis. A model that writes its values unquoted (its own
    /// spelling, see EVAL.md) need not open a string it did not mean to; a value with a
    /// comma or a parenthesis still needs quotes, and so does one that begins with `<` (a
    /// copied placeholder) or whose first word reads as null (`None=None`). Default false
    /// here; the gateway's grammar (`atfunc serve --constrain`) turns it on, measured on
    /// two models in EVAL.md (y).
    pub fn with_bare_strings(mut self, bare_strings: bool) -> Self {
        self.bare_strings = bare_strings;
        self
    }

    /// The most characters a string may hold (an escape counts as one), keys and strings
    /// inside `any` values included. A small model that falls into a loop inside a string
    /// (`"carbon_gas_carbon_dioxide_gas_..."`) runs to its token limit and its call never
    /// closes; with a bound it must close the string and can still finish the call. Default
    /// `None` (no bound): a tool may take long text. Mind the cost: llama.cpp writes a
    /// bounded repetition out as that many nested rules.
    pub fn with_max_string_chars(mut self, max_string_chars: Option<u32>) -> Self {
        self.max_string_chars = max_string_chars;
        self
    }

    /// The most items a list may hold, and entries an object of free keys, for the same
    /// reason (`["chicken", "chicken", ...]`). An object's declared fields are bounded by
    /// their number already. Default `None` (no bound).
    pub fn with_max_list_items(mut self, max_list_items: Option<u32>) -> Self {
        self.max_list_items = max_list_items;
        self
    }

    /// The numbers a number or integer parameter may take, when given: those of the
    /// conversation ([`numbers_in`] of its text), each as written, the ones that fit the
    /// parameter's type and bounds. A small model copies a number from its prompt's example
    /// or invents one; held to the question's numbers it can only choose among them. A
    /// parameter none of them fits keeps the full number grammar; choices and `any` values
    /// are not affected. A value the question does not write (a sum, `0.05` for `5 %`)
    /// cannot be written, so this suits answers that take their numbers from the question.
    /// Default `None`.
    pub fn with_grounded_numbers(mut self, grounded_numbers: Option<Vec<String>>) -> Self {
        self.grounded_numbers = grounded_numbers;
        self
    }

    /// The text a text parameter's value is taken from, when given: the value must be a run
    /// of whole consecutive words of it (a word is a run of letters and digits), with what
    /// stands between them, within one sentence. Most values a question gives a tool are
    /// written in it (a city, a file name, a case number); a small model held to them
    /// cannot copy its prompt's example, invent a value, or open a string with a stray
    /// `.`. A value the text does not write (`"USD"` for "dollars", a date reformatted)
    /// cannot be written either, so this suits tools whose text comes from the user's
    /// words. Parameters with choices or a checked format, and `any` values, keep their
    /// own grammar. Only the text's last [`MAX_GROUNDING_WORDS`] words count. Default
    /// `None`.
    pub fn with_grounded_text(mut self, grounded_text: Option<String>) -> Self {
        self.grounded_text = grounded_text;
        self
    }

    /// Calls the answer may not write: a call of one of these functions whose every
    /// argument has the value given here (as JSON text, as [`WrittenCall`] holds it), and
    /// which leaves out the same optional ones, is not in the grammar. The evaluator's
    /// `+next` asks a model for its next call with the calls it wrote left out, after it
    /// began to repeat them. A new call must differ in a parameter whose values the grammar
    /// lists (declared choices, booleans, [`grounded_numbers`](Self::with_grounded_numbers),
    /// runs of [`grounded_text`](Self::with_grounded_text)): to differ only in a free number or
    /// text is not offered, so that the grammar stays exact. A function whose calls are all
    /// left out is left out. A request body is not compared. Default empty.
    pub fn with_not_again(mut self, not_again: Vec<WrittenCall>) -> Self {
        self.not_again = not_again;
        self
    }

    /// The answer goes on from text that ends with a call (what the model wrote so far,
    /// given back at the end of its prompt): with `Required` or `Function`, the grammar is
    /// a newline and one more call, or nothing, so that the model may end its answer where
    /// it stands; `lead_in` and `single` do not apply. With [`not_again`](Self::with_not_again),
    /// a model's next call, if it has one. Default false.
    pub fn with_continued(mut self, continued: bool) -> Self {
        self.continued = continued;
        self
    }

    /// The syntax calls are written in. Default [`CallForm::Atfunc`].
    pub fn with_form(mut self, form: CallForm) -> Self {
        self.form = form;
        self
    }

    /// Most rules the grammar may have; past it the grammar is refused
    /// ([`GrammarError::TooLarge`]). Default 20,000.
    pub fn with_max_rules(mut self, max_rules: usize) -> Self {
        self.max_rules = max_rules;
        self
    }

    /// Most bytes of GBNF the grammar may have; past it the grammar is refused. Default
    /// 4 MiB, half of the gateway's default request limit (the gateway lowers it to fit
    /// its own `--max-request-bytes`).
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }
}

impl GrammarOptions {
    /// Which calls an answer holds ([`GrammarOptions::with_choice`]).
    pub fn choice(&self) -> &Choice {
        &self.choice
    }

    /// Whether an answer holds at most one call ([`GrammarOptions::with_single`]).
    pub fn single(&self) -> bool {
        self.single
    }

    /// The syntax calls are written in ([`GrammarOptions::with_form`]).
    pub fn form(&self) -> CallForm {
        self.form
    }

    /// The most rules the grammar may have ([`GrammarOptions::with_max_rules`]).
    pub fn max_rules(&self) -> usize {
        self.max_rules
    }

    /// The most bytes of GBNF the grammar may have ([`GrammarOptions::with_max_bytes`]):
    /// what a caller with a budget of its own compares it with.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// The user's text that text arguments are held to, if any
    /// ([`GrammarOptions::with_grounded_text`]): a grammar built with it is the request's
    /// own.
    pub fn grounded_text(&self) -> Option<&str> {
        self.grounded_text.as_deref()
    }

    /// The numbers that number arguments are held to, if any
    /// ([`GrammarOptions::with_grounded_numbers`]).
    pub fn grounded_numbers(&self) -> Option<&[String]> {
        self.grounded_numbers.as_deref()
    }
}

impl Default for GrammarOptions {
    fn default() -> Self {
        GrammarOptions {
            choice: Choice::Auto,
            single: false,
            root: None,
            lead_in: 100,
            any_depth: 3,
            guard_string_start: true,
            bare_strings: false,
            max_string_chars: None,
            max_list_items: None,
            grounded_numbers: None,
            grounded_text: None,
            not_again: Vec::new(),
            continued: false,
            form: CallForm::Atfunc,
            max_rules: 20_000,
            max_bytes: 4 << 20,
        }
    }
}

impl GrammarOptions {
    /// These options with every string bounded to 256 characters and every list to 32
    /// items ([`GrammarOptions::with_max_string_chars`], [`GrammarOptions::with_max_list_items`]):
    /// more than twice the longest string of BFCL's answers, and few enough tokens that a
    /// model looping inside a value still closes its call within a 256-token answer
    /// (EVAL.md (g1), (h)). `atfunc serve --bound-values` and `atfunc eval`'s `+bound`.
    ///
    /// ```
    /// let options = atfunc::GrammarOptions::default().with_bounded_values();
    /// let bounded = atfunc::GrammarOptions::default()
    ///     .with_max_string_chars(Some(256))
    ///     .with_max_list_items(Some(32));
    /// assert_eq!(options, bounded);
    /// ```
    pub fn with_bounded_values(mut self) -> Self {
        self.max_string_chars = Some(256);
        self.max_list_items = Some(32);
        self
    }
}

/// A call as [`GrammarOptions::with_not_again`] holds it: the function (as the prompt shows it,
/// or qualified; case ignored) and each argument given, by parameter name, as JSON text
/// (`"\"Oslo\""`, `3`, `true`).
///
/// ```
/// use atfunc::grammar::{grammar, Choice, GrammarOptions, WrittenCall};
/// use atfunc::{Interface, Param, ParamType};
///
/// let weather = Interface::new("get_temp")
///     .param(Param::new("city", ParamType::String).required())
///     .param(Param::new("unit", ParamType::String).choices(["C", "F"]));
/// let oslo = WrittenCall::new("get_temp").arg("city", "\"Oslo\"").arg("unit", "\"C\"");
/// let options = GrammarOptions::default()
///     .with_choice(Choice::Required)
///     .with_grounded_text(Some("Weather in Oslo and Paris, in C.".into()))
///     .with_not_again(vec![oslo]);
/// let g = grammar(&[weather], &options).unwrap();
/// assert!(!g.accepts(r#"@get_temp(city="Oslo", unit="C")"#));
/// assert!(g.accepts(r#"@get_temp(city="Oslo")"#));
/// assert!(g.accepts(r#"@get_temp(city="Paris", unit="C")"#));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WrittenCall {
    /// The function called.
    pub function: String,
    /// The arguments given: parameter name and value as JSON text.
    pub args: Vec<(String, String)>,
}

impl WrittenCall {
    /// A call of `function` without arguments.
    pub fn new(function: impl Into<String>) -> WrittenCall {
        WrittenCall {
            function: function.into(),
            args: Vec::new(),
        }
    }

    /// A call of `function` with `args` as a binder reads them (a bound call's arguments):
    /// each value as JSON text, spelled as the grammar writes it (`[1, 2]`, `{"a": 1}`).
    pub fn of_args(
        function: impl Into<String>,
        args: &serde_json::Map<String, serde_json::Value>,
    ) -> WrittenCall {
        WrittenCall {
            function: function.into(),
            args: args
                .iter()
                .map(|(name, value)| (name.clone(), values::written(value)))
                .collect(),
        }
    }

    /// The call, with `name` given `value` (JSON text).
    pub fn arg(mut self, name: impl Into<String>, value: impl Into<String>) -> WrittenCall {
        self.args.push((name.into(), value.into()));
        self
    }
}

/// Why no grammar can be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GrammarError {
    /// `Choice::Function` names no function of the interfaces.
    #[error("Unknown function '{name}' for the grammar: the functions are {}", .available.join(", "))]
    UnknownFunction {
        /// The name asked for.
        name: String,
        /// The names the functions are called by.
        available: Vec<String>,
    },
    /// `Required` or `Function` asks for a call, but no call of the functions can bind.
    #[error("No call can be required: {}", no_callable(*.reason, .function.as_deref()))]
    NoCallable {
        /// Why none can.
        reason: NoCallable,
        /// The function `Choice::Function` asked for, as the prompt shows it.
        function: Option<String>,
    },
    /// The grammar grew past [`GrammarOptions::with_max_rules`] or [`GrammarOptions::with_max_bytes`]
    /// while it was built; building stopped there.
    #[error("The grammar of these functions is larger than {value} {} (GrammarOptions::{}): offer fewer functions or fields, or raise the limit", limit.counts(), limit.option())]
    TooLarge {
        /// Which limit.
        limit: GrammarLimit,
        /// The limit's value.
        value: usize,
    },
}

/// A limit of a grammar's size ([`GrammarError::TooLarge`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GrammarLimit {
    /// [`GrammarOptions::with_max_rules`].
    Rules,
    /// [`GrammarOptions::with_max_bytes`].
    Bytes,
}

impl GrammarLimit {
    /// What it counts: `rules` or `bytes`.
    pub fn counts(self) -> &'static str {
        match self {
            GrammarLimit::Rules => "rules",
            GrammarLimit::Bytes => "bytes",
        }
    }

    /// The option that sets it: `with_max_rules` or `with_max_bytes`.
    pub fn option(self) -> &'static str {
        match self {
            GrammarLimit::Rules => "with_max_rules",
            GrammarLimit::Bytes => "with_max_bytes",
        }
    }
}

/// Why no call can be required ([`GrammarError::NoCallable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NoCallable {
    /// There are no functions (or none is selected).
    NoFunctions,
    /// Every call that can bind is one of the calls left out
    /// ([`GrammarOptions::with_not_again`]), or differs from one only in a value the
    /// grammar cannot list (a free number or text).
    LeftOut,
    /// No call can bind: a required parameter has no value of its declared type (its
    /// choices and bounds leave none).
    CannotBind,
}

/// The reason of [`GrammarError::NoCallable`], with the function asked for.
fn no_callable(reason: NoCallable, function: Option<&str>) -> String {
    let of = function.map(|f| format!(" of '{f}'")).unwrap_or_default();
    match reason {
        NoCallable::NoFunctions => String::from("there are no functions"),
        NoCallable::LeftOut => format!(
            "every call{of} that can bind is one of the calls left out (not_again), or \
             differs from one only in a value the grammar cannot list (a free number or text)"
        ),
        NoCallable::CannotBind if function.is_some() => format!(
            "no call{of} can bind: a required parameter has no value of its declared type \
             (check its choices and bounds)"
        ),
        NoCallable::CannotBind => String::from(
            "no function has a call that can bind (check required parameters' choices and bounds)",
        ),
    }
}

/// The grammar of `interfaces` as GBNF text, rule `root` first (see the module docs).
///
/// ```
/// use atfunc::{gbnf, GrammarOptions, Interface};
/// let ping = Interface::new("ping");
/// let text = gbnf(&[ping], &GrammarOptions::default()).unwrap();
/// assert!(text.contains("\"@ping()\""));
/// ```
pub fn gbnf(interfaces: &[Interface], options: &GrammarOptions) -> Result<String, GrammarError> {
    grammar(interfaces, options).map(|g| g.to_gbnf())
}

/// The grammar of `interfaces` as a rule tree, to print ([`Grammar::to_gbnf`]), sample
/// ([`Grammar::sample`]) or check text against ([`Grammar::accepts`]).
pub fn grammar(
    interfaces: &[Interface],
    options: &GrammarOptions,
) -> Result<Grammar, GrammarError> {
    let functions = callable_names(interfaces, options.root.as_deref());
    let selected: Vec<(&Interface, String)> = match &options.choice {
        Choice::Function(wanted) => {
            let wanted_key = fold(wanted);
            let hit = functions.iter().find(|(interface, shown)| {
                fold(shown) == wanted_key || fold(&interface.qualified_name()) == wanted_key
            });
            match hit {
                Some(hit) => vec![hit.clone()],
                None => {
                    return Err(GrammarError::UnknownFunction {
                        name: wanted.clone(),
                        available: functions.iter().map(|(_, shown)| shown.clone()).collect(),
                    })
                }
            }
        }
        Choice::None => Vec::new(),
        Choice::Auto | Choice::Required => functions,
    };

    let mut b = Builder::new(options.max_rules, options.max_bytes);
    let root = b.reserve("root");
    let values = Values {
        any_depth: options.any_depth,
        guard_string_start: options.guard_string_start,
        // A bare word is atfunc's syntax, not JSON's.
        bare_strings: options.bare_strings && options.form == CallForm::Atfunc,
        max_string_chars: options.max_string_chars,
        max_list_items: options.max_list_items,
        grounded_numbers: options.grounded_numbers.clone(),
        grounded_text: options.grounded_text.clone(),
    };
    let mut calls = Vec::new();
    for (index, (interface, shown)) in selected.iter().enumerate() {
        let left_out: Vec<&WrittenCall> = options
            .not_again
            .iter()
            .filter(|written| {
                let key = fold(&written.function);
                key == fold(shown) || key == fold(&interface.qualified_name())
            })
            .collect();
        let function = (*interface, shown.as_str());
        if let Some(call) = call(&mut b, &values, options.form, index, function, &left_out) {
            calls.push(call);
        }
        if b.exceeded().is_some() {
            break;
        }
    }
    let asks_call = matches!(options.choice, Choice::Required | Choice::Function(_));
    if asks_call && calls.is_empty() {
        let function = match (&options.choice, selected.first()) {
            (Choice::Function(_), Some((_, shown))) => Some(shown.clone()),
            _ => None,
        };
        let reason = if selected.is_empty() {
            NoCallable::NoFunctions
        } else if !options.not_again.is_empty() {
            // Checked first: a call left out is the likelier cause than a bound.
            NoCallable::LeftOut
        } else {
            NoCallable::CannotBind
        };
        return Err(GrammarError::NoCallable { reason, function });
    }

    // The character that opens a call; prose is written without it.
    let opener = match options.form {
        CallForm::Atfunc => '@',
        CallForm::Hermes => '<',
        CallForm::HermesList => '`',
    };
    // Built where it is used only: an engine may warn about a rule nothing refers to.
    let prose = |b: &mut Builder| {
        b.rule("prose", |_| {
            Node::repeat(Node::not_chars(&[(opener, opener)]), 0, None)
        })
    };
    let body = if calls.is_empty() {
        prose(&mut b)
    } else {
        // The calls after the first, each after `sep`: none when one call is the most.
        let more = |sep: &str, call: &Node| {
            if options.single {
                Vec::new()
            } else {
                vec![Node::repeat(
                    Node::seq([Node::text(sep), call.clone()]),
                    0,
                    None,
                )]
            }
        };
        let call = b.rule("call", |_| Node::alt(calls));
        // The list form: the calls as one fenced JSON list, which stands for a call below.
        let call = if options.form == CallForm::HermesList {
            let rest = more(",\n  ", &call);
            let list = [Node::text("```json\n[\n  "), call]
                .into_iter()
                .chain(rest)
                .chain([Node::text("\n]\n```")]);
            b.rule("calls", |_| Node::seq(list))
        } else {
            call
        };
        if asks_call && options.continued {
            Node::optional(Node::seq([Node::text("\n"), call]))
        } else if asks_call && options.form == CallForm::HermesList {
            call
        } else if options.form == CallForm::HermesList {
            // The list has no marker of its own: the reader takes it for calls only where
            // the answer is the list alone, so an answer is the list or prose, never both.
            Node::alt([call, prose(&mut b)])
        } else if asks_call {
            let more = more("\n", &call);
            // The Hermes format's own answers are the blocks alone: no lead-in.
            let lead = match options.form {
                CallForm::Hermes | CallForm::HermesList => Node::seq([]),
                CallForm::Atfunc => b.rule("lead-in", |_| {
                    Node::optional(Node::seq([
                        Node::repeat(
                            Node::not_chars(&[('@', '@'), ('\n', '\n')]),
                            0,
                            Some(options.lead_in),
                        ),
                        Node::chars(&[(' ', ' '), ('\n', '\n')]),
                    ]))
                }),
            };
            Node::seq([lead, call].into_iter().chain(more))
        } else {
            // The parser takes an `@` right after an identifier character for prose
            // (`bob@example.com`), so prose before a call ends in anything else; non-ASCII
            // characters are left out there wholesale, letters and digits among them.
            // In the Hermes form any prose may stand before a block.
            let before = if options.form == CallForm::Hermes {
                prose(&mut b)
            } else {
                b.rule("before-call", |_| {
                    Node::optional(Node::seq([
                        Node::repeat(Node::not_chars(&[('@', '@')]), 0, None),
                        Node::not_chars(&[
                            ('@', '@'),
                            ('0', '9'),
                            ('A', 'Z'),
                            ('_', '_'),
                            ('a', 'z'),
                            ('\u{80}', '\u{10FFFF}'),
                        ]),
                    ]))
                })
            };
            let max = if options.single { Some(1) } else { None };
            Node::seq([
                Node::repeat(Node::seq([before, call]), 0, max),
                prose(&mut b),
            ])
        }
    };
    b.define(root, body);
    match b.exceeded() {
        None => Ok(b.finish()),
        Some(Exceeded::Rules) => Err(GrammarError::TooLarge {
            limit: GrammarLimit::Rules,
            value: options.max_rules,
        }),
        Some(Exceeded::Bytes) => Err(GrammarError::TooLarge {
            limit: GrammarLimit::Bytes,
            value: options.max_bytes,
        }),
    }
}

/// The functions in order, each with the name a call uses, first of each name only.
fn callable_names<'a>(
    interfaces: &'a [Interface],
    root: Option<&str>,
) -> Vec<(&'a Interface, String)> {
    // `@fn` finds a function without a domain before `fn` in the root toolbox: a root
    // toolbox function whose short name is taken that way is shown qualified.
    let domainless: std::collections::HashSet<String> = interfaces
        .iter()
        .filter(|i| i.domain.is_none())
        .map(|i| fold(&i.name))
        .collect();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for interface in interfaces {
        if !seen.insert(fold(&interface.qualified_name())) {
            continue;
        }
        let shown = match (&interface.domain, root) {
            (Some(domain), Some(root))
                if domain == root && !domainless.contains(&fold(&interface.name)) =>
            {
                interface.name.clone()
            }
            _ => interface.qualified_name(),
        };
        out.push((interface, shown));
    }
    out
}

fn fold(name: &str) -> String {
    UniCase::new(name).to_folded_case()
}

/// `@name(arg=value, ...)`, then the body when the function takes one; `None` when a
/// required parameter or body field has no value that binds.
/// Without the calls `left_out` ([`GrammarOptions::with_not_again`]); `None` also when they are
/// all of its calls.
/// In [`CallForm::Hermes`], the call block with its arguments as a JSON object; in
/// [`CallForm::HermesList`], the call object alone.
fn call(
    b: &mut Builder,
    values: &Values,
    form: CallForm,
    index: usize,
    (interface, shown): (&Interface, &str),
    left_out: &[&WrittenCall],
) -> Option<Node> {
    // The Hermes form writes the names the model's template shows: the tool's own, before
    // any change that made them identifiers for atfunc's syntax (`get-weather`).
    let key = |param: &crate::interface::Param| match form {
        CallForm::Atfunc => format!("{}=", param.name),
        CallForm::Hermes | CallForm::HermesList => {
            format!("{}: ", Json::from(param.original_name()))
        }
    };
    let mut args = Vec::new();
    for param in &interface.params {
        match values.param(b, param, 0, Slot::Named) {
            Some(value) => {
                let key = key(param);
                let node = Node::seq([Node::text(key.clone()), value]);
                args.push(exclude::Arg { param, key, node });
            }
            None if param.required => return None,
            None => {}
        }
    }
    let list = if left_out.is_empty() {
        let items = args
            .into_iter()
            .map(|arg| (arg.node, arg.param.required))
            .collect();
        separated(b, items, ", ")
    } else {
        // Each call as its values in the order of `args`; one that gives a parameter the
        // grammar has no value for can never be written, so it needs no leaving out.
        let rows: Vec<Vec<Option<String>>> = left_out
            .iter()
            .filter(|written| {
                written
                    .args
                    .iter()
                    .all(|(name, _)| args.iter().any(|arg| arg.param.name == *name))
            })
            .map(|written| {
                args.iter()
                    .map(|arg| {
                        written
                            .args
                            .iter()
                            .find(|(name, _)| *name == arg.param.name)
                            .map(|(_, value)| value.clone())
                    })
                    .collect()
            })
            .collect();
        exclude::args_except(b, values, &args, &rows)?
    };
    if form.json() {
        if interface.request_body.iter().any(|field| field.required) {
            return None;
        }
        let (open, close) = match form {
            CallForm::Hermes => ("<tool_call>\n", "\n</tool_call>"),
            _ => ("", ""),
        };
        let node = Node::seq([
            Node::text(format!(
                "{open}{{\"name\": {}, \"arguments\": {{",
                Json::from(interface.original_qualified_name())
            )),
            list,
            Node::text(format!("}}}}{close}")),
        ]);
        return Some(b.rule(&format!("call-{index}"), |_| node));
    }
    let mut parts = vec![Node::text(format!("@{shown}(")), list, Node::text(")")];
    if interface.has_body() {
        let object = values.object(b, &interface.request_body, 1)?;
        let body = Node::seq([Node::text(" with_body [["), object, Node::text("]]")]);
        if interface.request_body.iter().any(|field| field.required) {
            parts.push(body);
        } else {
            parts.push(Node::optional(body));
        }
    }
    let node = Node::seq(parts);
    Some(b.rule(&format!("call-{index}"), |_| node))
}
