//! The example call of the preamble, in the shape of one of the tools themselves.
//!
//! The example shows how a call is written: `@`, a listed name, one argument by position and
//! one by name. It must never run as written, though: a small model copies it, values and
//! all, and a copied call of a real tool would run (a weather lookup for Oslo, or an email
//! sent to "example"). So its values are placeholders that no binder takes
//! ([`BindError::Placeholder`](crate::BindError::Placeholder)): `"<location>"` for text,
//! quoted as the model must write text, and `<days>` for the rest.
//!
//! 1. **Which function.** The first, in listed order, of those that read best as an
//!    example: it takes a value (the call of a function without arguments, `@list_files()`,
//!    would run as written; when no listed function takes one, the example calls a made-up
//!    function, `@function_name("<text>", number=<number>)`, that no binder knows); its
//!    parameter names can be written as `name=value`; it needs no request
//!    body; its first parameter is a required string (written positionally, the commonest
//!    shape); its call shows two arguments (one by position, one by name) rather than one
//!    or many; it has fewer required parameters.
//! 2. **Which arguments.** The first parameter by position when it is required; every other
//!    required parameter by name; when that makes fewer than two, one optional parameter by
//!    name too (one with choices first). A required body gets a `with_body` block of its
//!    required fields.
//! 3. **Which values.** The parameter's name in angle brackets, as the listing writes a
//!    parameter: quoted for a text parameter (`"<location>"`), bare for any other.

use super::{call_name, PromptOptions};
use crate::interface::{is_identifier, Interface, Param, ParamType};

/// A call of `interface`, domain included, with a placeholder in place of each value: how a
/// model should write a call, and never one that runs. The prompt's [`preamble`](super::preamble)
/// writes it under the name the listing gives the function.
///
/// ```
/// use atfunc::render::example_call;
/// use atfunc::{Interface, Param, ParamType};
///
/// let weather = Interface::new("get_current_weather")
///     .in_domain("weather")
///     .param(Param::new("location", ParamType::String).required())
///     .param(Param::new("unit", ParamType::String).choices(["celsius", "fahrenheit"]));
/// let example = example_call(&weather);
/// assert_eq!(example, r#"@weather.get_current_weather("<location>", unit="<unit>")"#);
///
/// // Copied as it is, it does not bind.
/// let call = atfunc::parse_events(&example)
///     .into_iter()
///     .find_map(|event| match event {
///         atfunc::Event::Call(call) => Some(call),
///         _ => None,
///     })
///     .unwrap();
/// let catalog = atfunc::Catalog::new(vec![weather]);
/// let refused = atfunc::bind(&call, &catalog).unwrap_err();
/// assert!(refused
///     .problems()
///     .iter()
///     .all(|problem| matches!(problem, atfunc::BindError::Placeholder { .. })));
/// ```
pub fn example_call(interface: &Interface) -> String {
    example_call_with(interface, &PromptOptions::default())
}

/// [`example_call`] under the name the prompt lists the function by: without the domain
/// for the functions of [`PromptOptions::root`] (the separator plays no part).
pub(crate) fn example_call_with(interface: &Interface, options: &PromptOptions) -> String {
    let mut out = format!("@{}(", call_name(interface, options.root));
    let args: Vec<String> = arguments(interface)
        .into_iter()
        .map(|(param, by_name)| {
            let value = placeholder(param);
            if by_name {
                format!("{}={value}", param.name)
            } else {
                value
            }
        })
        .collect();
    out.push_str(&args.join(", "));
    out.push(')');
    if needs_body(interface) {
        let fields: Vec<String> = interface
            .request_body
            .iter()
            .filter(|field| field.required)
            .map(|field| {
                let name = serde_json::Value::from(field.name.as_str());
                format!("{name}: {}", placeholder(field))
            })
            .collect();
        out.push_str(" with_body [[ {");
        out.push_str(&fields.join(", "));
        out.push_str("} ]]");
    }
    out
}

/// The interface whose call makes the best example (see the module docs), if any takes a
/// value: the call of one that takes none would run as written.
pub(super) fn pick(interfaces: &[Interface]) -> Option<&Interface> {
    interfaces
        .iter()
        .enumerate()
        .filter_map(|(index, interface)| {
            let args = arguments(interface);
            let body = needs_body(interface);
            if args.is_empty() && !body {
                return None;
            }
            let writable = args
                .iter()
                .all(|(param, by_name)| !by_name || is_identifier(&param.name));
            let first_is_required_string = interface
                .params
                .first()
                .is_some_and(|p| p.required && p.ty == ParamType::String);
            let required = interface.params.iter().filter(|p| p.required).count();
            let rank = (
                !writable,
                body,
                !first_is_required_string,
                args.len().abs_diff(2),
                required,
                index,
            );
            Some((rank, interface))
        })
        .min_by_key(|(rank, _)| *rank)
        .map(|(_, interface)| interface)
}

/// The example when no listed function takes a value: a call of a made-up function,
/// named as none of `interfaces` is (compared case-insensitively, as the binder compares),
/// with a domain when the listed names have one.
pub(super) fn made_up_call(interfaces: &[Interface], options: &PromptOptions) -> String {
    let listed: Vec<String> = interfaces
        .iter()
        .map(|interface| call_name(interface, options.root))
        .collect();
    let base = if listed.iter().any(|name| name.contains('.')) {
        "domain.function_name"
    } else {
        "function_name"
    };
    let taken = |name: &str| listed.iter().any(|l| l.eq_ignore_ascii_case(name));
    let name = (1..)
        .map(|n| match n {
            1 => base.to_owned(),
            n => format!("{base}{n}"),
        })
        .find(|name| !taken(name))
        .unwrap_or_else(|| base.to_owned());
    format!("@{name}(\"<text>\", number=<number>)")
}

/// Whether a call must carry a body: an api-wrapper with a required body field.
fn needs_body(interface: &Interface) -> bool {
    interface.has_body() && interface.request_body.iter().any(|field| field.required)
}

/// The placeholder of a parameter's value: `"<name>"` for text, which a model must quote,
/// `<name>` for anything else. A model that sees text written bare writes it bare, and a
/// grammar, which quotes text, then cuts into what it began (`function=">2*x^2"`); the
/// binder refuses both forms ([`BindError::Placeholder`](crate::BindError::Placeholder)).
fn placeholder(param: &Param) -> String {
    if param.ty == ParamType::String {
        format!("\"<{}>\"", param.name)
    } else {
        format!("<{}>", param.name)
    }
}

/// The parameters the example gives, each with whether it is written by name.
fn arguments(interface: &Interface) -> Vec<(&Param, bool)> {
    let params = &interface.params;
    let mut args: Vec<(&Param, bool)> = params
        .iter()
        .enumerate()
        .filter(|(_, param)| param.required)
        .map(|(i, param)| (param, i > 0))
        .collect();
    if args.len() < 2 {
        let optional = || params.iter().filter(|param| !param.required);
        let shown = optional()
            .find(|param| param.choices.is_some())
            .or_else(|| optional().next());
        args.extend(shown.map(|param| (param, true)));
    }
    args
}
