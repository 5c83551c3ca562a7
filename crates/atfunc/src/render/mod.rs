//! Phase 2, render: interfaces as the text a model reads in its prompt.
//!
//! Each function renders in the reference's line form:
//!
//! ```text
//! @weather.get_current_weather( <*location>, <unit> )
//! Description: Get current weather information for a location
//! ```
//!
//! `*` marks a required parameter; a parameter whose type is not a string carries a
//! `{type}` suffix. Beyond the reference, restrictions reach the model inside the same
//! braces, so plain parameters keep the reference's exact text:
//! - choices: `<*unit{"celsius"|"fahrenheit"}>` (a string's choices need no type name, nor
//!   do those of a value of any type: `<laundry{true|false|"dontcare"}>`),
//!   `<level{integer: 1|2|3}>`;
//! - bounds: `<*days{integer 1..16}>`, `<ratio{number >=0}>`, `<count{integer <=10}>`;
//! - the elements of a list: `<metrics{array of "view"|"click"}>`, `<ids{array of integer >=1}>`.
//!
//! An api-wrapper with a request body adds `with_body [[ ... ]]` with a JSON skeleton of
//! the body, and a `Body:` line listing its fields in the same notation.
//!
//! The whole prompt ([`render_prompt`]) opens with a short [`preamble`] that teaches the
//! call syntax by one example: a call of one of the listed functions with a placeholder in
//! place of each value ([`example_call`], under the name the listing gives the function),
//! so a model that copies it as it is calls nothing.

mod example;

pub use example::example_call;
use example::example_call_with;

use crate::interface::{Interface, Param, ParamType};
use serde_json::Value as Json;
use std::fmt::Write;

/// The line drawn under a function when a separator is asked for.
pub const SEPARATOR: &str = "----------------------------------------";

/// Renders one interface in the atfunc line form, domain included, without a separator
/// (see the module docs); [`render_interface_with`] takes [`PromptOptions`].
///
/// ```
/// use atfunc::{Interface, Param, ParamType};
/// use atfunc::render::render_interface;
/// let weather = Interface::new("get_current_weather")
///     .in_domain("weather")
///     .describe("Get current weather information for a location")
///     .param(Param::new("location", ParamType::String).required())
///     .param(Param::new("unit", ParamType::String));
/// assert_eq!(
///     render_interface(&weather),
///     "@weather.get_current_weather( <*location>, <unit> )\n\
///      Description: Get current weather information for a location\n"
/// );
/// ```
pub fn render_interface(interface: &Interface) -> String {
    render_interface_with(interface, &PromptOptions::default())
}

/// Renders one interface as [`render_prompt`] lists it: under the name a call should use
/// (without the domain for the functions of [`PromptOptions::root`]), with a separator line
/// under it when [`PromptOptions::separator`] asks for one.
///
/// ```
/// use atfunc::render::{render_interface_with, PromptOptions, SEPARATOR};
/// use atfunc::Interface;
/// let now = Interface::new("now").in_domain("clock").describe("The time");
/// let options = PromptOptions::default().with_root(Some("clock")).with_separator(true);
/// assert_eq!(
///     render_interface_with(&now, &options),
///     format!("@now()\nDescription: The time\n{SEPARATOR}\n")
/// );
/// ```
pub fn render_interface_with(interface: &Interface, options: &PromptOptions) -> String {
    render_named(interface, &call_name(interface, options.root), options)
}

/// The name a call uses under `root`: without the domain for the root toolbox's functions.
fn call_name(interface: &Interface, root: Option<&str>) -> String {
    match (&interface.domain, root) {
        (Some(domain), Some(root)) if domain == root => interface.name.clone(),
        _ => interface.qualified_name(),
    }
}

fn render_named(interface: &Interface, name: &str, options: &PromptOptions) -> String {
    let mut out = String::new();
    out.push('@');
    out.push_str(name);
    out.push('(');
    if !interface.params.is_empty() {
        out.push(' ');
        out.push_str(&param_list(&interface.params));
        out.push(' ');
    }
    out.push(')');
    if interface.has_body() {
        out.push_str(" with_body [[\n");
        out.push_str(&body_skeleton(&interface.request_body));
        out.push_str("\n]]");
    }
    out.push('\n');
    if !interface.description.is_empty() {
        out.push_str("Description: ");
        // A description spanning lines would look like more interface lines; keep it on one.
        out.push_str(&one_line(&interface.description));
        out.push('\n');
    }
    if interface.has_body() {
        out.push_str("Body: ");
        out.push_str(&param_list(&interface.request_body));
        out.push('\n');
    }
    // A model cannot fill an object it has not seen: the fields of structured parameters
    // follow, one line each, only for parameters that have them.
    for param in &interface.params {
        if let Some(shape) = shape(param, 0) {
            out.push_str(&param.name);
            out.push_str(": ");
            out.push_str(&shape);
            out.push('\n');
        }
    }
    if options.param_descriptions {
        let mut described = interface
            .params
            .iter()
            .filter(|p| !p.description.trim().is_empty())
            .peekable();
        if described.peek().is_some() {
            out.push_str("Parameters:\n");
        }
        for param in described {
            out.push_str("- ");
            out.push_str(&param.name);
            out.push_str(": ");
            out.push_str(&one_line(&param.description));
            out.push('\n');
        }
    }
    if options.separator {
        out.push_str(SEPARATOR);
        out.push('\n');
    }
    out
}

/// `<*a>, <b{number}>`: the parameters in declared order.
fn param_list(params: &[Param]) -> String {
    params
        .iter()
        .map(param_token)
        .collect::<Vec<_>>()
        .join(", ")
}

/// How deep [`shape`] writes nested fields; deeper ones show as `{object}`.
const MAX_SHAPE_DEPTH: usize = 4;

/// The fields of a structured parameter: `{ <*sku>, <*qty{integer >=1}> }` for an object,
/// `[ ... ]` around its items' shape for an array. `None` when there is nothing to show
/// beyond the parameter's `{type}`.
fn shape(param: &Param, depth: usize) -> Option<String> {
    if depth >= MAX_SHAPE_DEPTH {
        return None;
    }
    match &param.ty {
        ParamType::Object { properties } if !properties.is_empty() => {
            let fields = properties
                .iter()
                .map(|field| match shape(field, depth + 1) {
                    Some(inner) => {
                        let star = if field.required { "*" } else { "" };
                        format!("{star}{}: {inner}", field.name)
                    }
                    None => param_token(field),
                })
                .collect::<Vec<_>>()
                .join(", ");
            Some(format!("{{ {fields} }}"))
        }
        ParamType::Array { items: Some(item) } => {
            shape(item, depth + 1).map(|inner| format!("[ {inner} ]"))
        }
        _ => None,
    }
}

/// `<*name{type restrictions}>` for one parameter.
fn param_token(param: &Param) -> String {
    let mut out = String::from("<");
    if param.required {
        out.push('*');
    }
    out.push_str(&param.name);
    let suffix = type_suffix(param);
    if !suffix.is_empty() {
        out.push('{');
        out.push_str(&suffix);
        out.push('}');
    }
    out.push('>');
    out
}

/// What goes between the braces: the type unless it is a string, a string's checked format
/// (`{date}`), then choices or bounds.
/// An array whose elements are restricted says so after `of`: `array of "a"|"b"`,
/// `array of integer 1..5`.
fn type_suffix(param: &Param) -> String {
    if let Some(element) = restricted_element(param) {
        return format!("array of {}", type_suffix(&element));
    }
    let mut parts: Vec<String> = Vec::new();
    let is_string = param.ty == ParamType::String;
    // Choices say all a value of any type may be (`true|false|"dontcare"`), as a string's do.
    let only_choices = param.ty == ParamType::Any && param.choices.is_some();
    let named = !is_string && !only_choices;
    if named {
        parts.push(param.ty.name().to_owned());
    }
    if let Some(format) = param.known_format().filter(|_| is_string) {
        parts.push(format.name().to_owned());
    }
    if let Some(choices) = &param.choices {
        let list = choices
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join("|");
        parts.push(list);
    }
    match (param.min, param.max) {
        (Some(min), Some(max)) => parts.push(format!("{}..{}", number(min), number(max))),
        (Some(min), None) => parts.push(format!(">={}", number(min))),
        (None, Some(max)) => parts.push(format!("<={}", number(max))),
        (None, None) => {}
    }
    match parts.as_slice() {
        [] => String::new(),
        [only] => only.clone(),
        [ty, rest @ ..] if param.choices.is_some() && named => {
            format!("{ty}: {}", rest.join(" "))
        }
        _ => parts.join(" "),
    }
}

/// The element of an array parameter, when it carries choices or bounds worth showing.
/// Elements of undeclared type with choices show only the choices, as a string's do.
fn restricted_element(param: &Param) -> Option<Param> {
    let mut element = param.element()?;
    let restricted = element.choices.as_ref().is_some_and(|c| !c.is_empty())
        || element.min.is_some()
        || element.max.is_some()
        || element.known_format().is_some();
    if !restricted {
        return None;
    }
    if element.ty == ParamType::Any && element.choices.is_some() {
        element.ty = ParamType::String;
    }
    Some(element)
}

/// A bound as the model would write it: `16`, not `16.0`.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

/// A JSON skeleton of a request body: each field with its default, first choice, or a
/// placeholder of its type.
fn body_skeleton(fields: &[Param]) -> String {
    let mut object = serde_json::Map::new();
    for field in fields {
        object.insert(field.name.clone(), placeholder(field));
    }
    serde_json::to_string_pretty(&Json::Object(object)).unwrap_or_else(|_| String::from("{}"))
}

fn placeholder(param: &Param) -> Json {
    if let Some(default) = &param.default {
        return default.clone();
    }
    // Choices of a list's elements are no value of the list itself.
    if let Some(first) = param
        .choices
        .as_ref()
        .filter(|_| param.element_choices().is_none())
        .and_then(|c| c.first())
    {
        return first.clone();
    }
    match &param.ty {
        ParamType::String | ParamType::Any => Json::String(String::from("...")),
        ParamType::Number | ParamType::Integer => Json::from(param.min.unwrap_or(0.0) as i64),
        ParamType::Boolean => Json::Bool(false),
        ParamType::Object { properties } => {
            let mut object = serde_json::Map::new();
            for p in properties {
                object.insert(p.name.clone(), placeholder(p));
            }
            Json::Object(object)
        }
        ParamType::Array { .. } => Json::Array(Vec::new()),
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// How interfaces appear in the prompt: options for [`render_prompt`], [`preamble`],
/// [`render_interface_with`]. The default: every name with its
/// domain, no separator lines.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct PromptOptions<'a> {
    /// The root toolbox, whose functions are called without a prefix.
    pub root: Option<&'a str>,
    /// Draw a separator line under each function.
    pub separator: bool,
    /// Under each function, its parameters' descriptions, one line each (`Parameters:`,
    /// then `- name: what it is`), for the parameters that have one. They tell a model
    /// which value of a question goes where; they cost prompt tokens.
    pub param_descriptions: bool,
}

impl<'a> PromptOptions<'a> {
    /// The same options with [`root`](Self::root) set.
    pub fn with_root(mut self, root: Option<&'a str>) -> Self {
        self.root = root;
        self
    }

    /// The same options with [`separator`](Self::separator) set.
    pub fn with_separator(mut self, separator: bool) -> Self {
        self.separator = separator;
        self
    }

    /// The same options with [`param_descriptions`](Self::param_descriptions) set.
    pub fn with_param_descriptions(mut self, param_descriptions: bool) -> Self {
        self.param_descriptions = param_descriptions;
        self
    }
}

/// The preamble that teaches a model the call syntax, with an example call of one of
/// `interfaces` ([`example_call`], under the name the listing gives it; a made-up function
/// when none of them takes an argument, whose call would run as written; none when there are
/// no interfaces). Short on purpose: every line costs context, and small models follow a few plain rules and one example best.
///
/// ```
/// use atfunc::render::{preamble, PromptOptions};
/// use atfunc::{Interface, Param, ParamType};
/// let tools = [Interface::new("sqrt").in_domain("math")
///     .param(Param::new("x", ParamType::Number).required())];
/// let text = preamble(&tools, &PromptOptions::default());
/// assert!(text.contains("in parentheses, for example:\n@math.sqrt(<x>)\nRules:"));
///
/// // The functions of the root toolbox are called without their domain.
/// let text = preamble(&tools, &PromptOptions::default().with_root(Some("math")));
/// assert!(text.contains("for example:\n@sqrt(<x>)\n"));
///
/// // `@math.pi()` would run as written.
/// let text = preamble(&[Interface::new("pi").in_domain("math")], &PromptOptions::default());
/// assert!(text.contains("for example:\n@domain.function_name(\"<text>\", number=<number>)\n"));
/// ```
pub fn preamble(interfaces: &[Interface], options: &PromptOptions) -> String {
    let mut out = String::from(
        "You can call the functions listed below. To call one, write @, its name and its \
         arguments in parentheses",
    );
    let example = match example::pick(interfaces) {
        Some(interface) => Some(example_call_with(interface, options)),
        None if !interfaces.is_empty() => Some(example::made_up_call(interfaces, options)),
        None => None,
    };
    match example {
        Some(example) => {
            out.push_str(", for example:\n");
            out.push_str(&example);
            out.push('\n');
        }
        None => out.push_str(".\n"),
    }
    out.push_str(RULES);
    out
}

/// The rules of the preamble, after its example.
const RULES: &str = "\
Rules:
- Write a value in place of each <name>, in the listed order or by name as name=value. <*name> is required, <name> optional.
- Quote text with double quotes and escape inner quotes as \\\". Write numbers, true, false, \
[lists] and {\"json\": \"objects\"} as they are.
- {type} shows a type other than text; {\"a\"|\"b\"} lists the allowed values; {integer 1..10} gives bounds.
- A line \"name: { <*a>, <b> }\" under a function gives the fields of an object argument: write it as JSON, {\"a\": 1}; [ ... ] is a list of them.
- A function shown with with_body [[ ... ]] takes a JSON body between [[ and ]] right after its closing parenthesis.
- Write calls as plain text, not inside code blocks. After your calls, stop and wait: \
the results come back as \"Function call: ...\" / \"Returned: ...\".
";

/// Every interface as the prompt lists it, without the [`preamble`] (what
/// `atfunc render --no-preamble` prints): for an application that teaches the syntax its
/// own way.
///
/// ```
/// use atfunc::{Interface, Param, ParamType};
/// use atfunc::render::{render_functions, PromptOptions};
/// let tools = [Interface::new("sqrt").in_domain("math")
///     .param(Param::new("x", ParamType::Number).required()),
///     Interface::new("now").in_domain("clock")];
/// let text = render_functions(&tools, &PromptOptions::default());
/// assert_eq!(text, "@math.sqrt( <*x{number}> )\n\n@clock.now()\n");
/// ```
pub fn render_functions(interfaces: &[Interface], options: &PromptOptions) -> String {
    interfaces
        .iter()
        .map(|i| render_interface_with(i, options))
        .collect::<Vec<_>>()
        .join(if options.separator { "" } else { "\n" })
}

/// The whole prompt: the [`preamble`], then every interface.
///
/// ```
/// use atfunc::{Interface, Param, ParamType};
/// use atfunc::render::{render_prompt, PromptOptions};
/// let tools = [Interface::new("sqrt").in_domain("math")
///     .describe("Square root")
///     .param(Param::new("x", ParamType::Number).required())];
/// let prompt = render_prompt(&tools, &PromptOptions::default());
/// assert!(prompt.ends_with("@math.sqrt( <*x{number}> )\nDescription: Square root\n"));
/// ```
pub fn render_prompt(interfaces: &[Interface], options: &PromptOptions) -> String {
    let mut out = preamble(interfaces, options);
    out.push_str("\nFunctions:\n\n");
    for (i, interface) in interfaces.iter().enumerate() {
        if i > 0 && !options.separator {
            out.push('\n');
        }
        let _ = write!(out, "{}", render_interface_with(interface, options));
    }
    out
}
