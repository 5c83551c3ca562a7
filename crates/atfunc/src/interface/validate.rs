//! Checks run when interfaces are registered, as the reference library runs them.
//!
//! Loading ([`super::load_interfaces`]) already checks each definition's own fields; this
//! checks what only makes sense for a set of interfaces registered together under one
//! toolbox name: the domain, names a model can write, and names that would collide when
//! matched ignoring case.

use super::{is_identifier, Interface, Param, ParamType};
use serde_json::Value as Json;
use std::collections::HashMap;
use std::fmt;

/// One validation failure, naming the function and the toolbox.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub struct ValidationError {
    /// The function concerned, as spelled in its definition (`#3` when it has no name).
    pub function: String,
    /// The toolbox being registered (empty for root functions).
    pub toolbox: String,
    /// What kind of problem it is, for a program that sorts or counts them.
    pub kind: ValidationErrorKind,
    /// What is wrong and, where it helps, how to fix it.
    pub message: String,
}

/// What kind of problem a [`ValidationError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ValidationErrorKind {
    /// A field of the definition is missing, of the wrong type or not understood.
    Definition,
    /// The function's domain is not the toolbox it is registered under.
    Domain,
    /// A function or parameter name that a call cannot write.
    Name,
    /// Two names a call would write alike (the same, or differing only in case).
    Clash,
    /// A parameter no call could satisfy: bounds the wrong way round, choices none of
    /// which is of its type.
    Unsatisfiable,
    /// A restriction the definition declares that atfunc does not enforce (`pattern`,
    /// `maxLength`, `not`, a union of schemas in `anyOf`, ...): a warning that the tool must
    /// check it itself, and a problem when read strictly.
    Ignored,
    /// A restriction atfunc enforces in another form than the definition writes it
    /// (`const` as the only choice): a warning however strictly the definition is read,
    /// since nothing of it is lost.
    Rewritten,
}

impl ValidationError {
    /// The problem as a warning reads it (`function 'f' in toolbox 't': ...`): what a
    /// lenient loader worked around was not a failure.
    pub fn warning(&self) -> String {
        let mut out = format!("function '{}'", self.function);
        if !self.toolbox.is_empty() {
            out.push_str(&format!(" in toolbox '{}'", self.toolbox));
        }
        out.push_str(": ");
        out.push_str(&self.message);
        out
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Validation failed for function '{}'", self.function)?;
        if !self.toolbox.is_empty() {
            write!(f, " in toolbox '{}'", self.toolbox)?;
        }
        let mut message = self.message.chars();
        // The reference's messages start with a capital letter after the colon.
        match message.next() {
            Some(first) => write!(f, ": {}{}", first.to_uppercase(), message.as_str()),
            None => Ok(()),
        }
    }
}

/// Every validation failure of one registration, in definition order.
#[derive(Debug, Clone, PartialEq, Eq, Default, thiserror::Error)]
pub struct ValidationErrors(pub Vec<ValidationError>);

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

/// Validates the interfaces of the toolbox `toolbox` before they are registered.
///
/// Each interface's domain must be the toolbox's name (a toolbox named `""` holds root
/// functions, whose domain is `None`); function and parameter names must be identifiers;
/// no two functions may have names that differ only in case. Every problem is reported.
///
/// ```
/// use atfunc::Interface;
/// use atfunc::interface::validate_toolbox;
/// let wrong = Interface::new("get_temp").in_domain("wrong");
/// let errors = validate_toolbox("weather", &[wrong]).unwrap_err();
/// assert_eq!(
///     errors.to_string(),
///     "Validation failed for function 'get_temp' in toolbox 'weather': \
///      Interface domain 'wrong' does not match toolbox name 'weather'"
/// );
/// ```
pub fn validate_toolbox(toolbox: &str, interfaces: &[Interface]) -> Result<(), ValidationErrors> {
    let mut errors = Vec::new();
    let mut seen: HashMap<String, (&str, &str)> = HashMap::new();
    for interface in interfaces {
        let mut report = |kind: ValidationErrorKind, message: String| {
            errors.push(ValidationError {
                function: interface.name.clone(),
                toolbox: toolbox.to_owned(),
                kind,
                message,
            })
        };
        match (&interface.domain, toolbox.is_empty()) {
            (Some(domain), false) if domain == toolbox => {}
            (None, true) => {}
            (Some(domain), _) => report(
                ValidationErrorKind::Domain,
                format!("Interface domain '{domain}' does not match toolbox name '{toolbox}'"),
            ),
            (None, false) => report(
                ValidationErrorKind::Domain,
                format!("Interface has no domain; it must be the toolbox name '{toolbox}'"),
            ),
        }
        if !is_identifier(&interface.name) {
            report(ValidationErrorKind::Name, format!(
                "Function name '{}' is not an identifier: use letters, digits and '_', not starting with a digit",
                interface.name
            ));
        }
        // Request body fields are JSON keys, sent as written: any name will do.
        for param in &interface.params {
            if !is_identifier(&param.name) {
                report(ValidationErrorKind::Name, format!(
                    "Parameter name '{}' is not an identifier: use letters, digits and '_', not starting with a digit",
                    param.name
                ));
            }
        }
        for param in interface.params.iter().chain(&interface.request_body) {
            param_problems(param, &param.name, &mut |message| {
                report(ValidationErrorKind::Unsatisfiable, message)
            });
        }
        // The same folding the binder matches names with: `maß` and `MASS` are one name.
        let key = unicase::UniCase::new(interface.name.as_str()).to_folded_case();
        let spelled = defined_name(interface);
        match seen.get(key.as_str()) {
            Some((first, first_spelled)) if *first == interface.name && *first_spelled == spelled => {
                report(ValidationErrorKind::Clash, format!("Function '{spelled}' is defined twice"))
            }
            Some((first, first_spelled)) if *first == interface.name => report(ValidationErrorKind::Clash, format!(
                "Functions '{first_spelled}' and '{spelled}' would both be called as '{first}'; rename one"
            )),
            Some((first, _)) => report(ValidationErrorKind::Clash, format!(
                "Function name '{}' differs only in case from '{first}'; names are matched ignoring case",
                interface.name
            )),
            None => {
                seen.insert(key, (&interface.name, spelled));
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ValidationErrors(errors))
    }
}

/// What no call could satisfy in `param` (shown as `path`) and the fields and items inside
/// it: bounds the wrong way round (`min` above `max`), and choices of which none is of the
/// parameter's type. Each is reported as a message through `report`.
///
/// Choices of which only some are of the type (`"enum": [1, "XL", "L"]` on a string, as
/// tool files in the wild have them) are kept: the others can still be called with.
pub(crate) fn param_problems(param: &Param, path: &str, report: &mut dyn FnMut(String)) {
    walk(param, path, report);
}

fn walk(param: &Param, path: &str, report: &mut dyn FnMut(String)) {
    if let (Some(min), Some(max)) = (param.min, param.max) {
        if min > max {
            report(format!(
                "Parameter '{path}': its minimum {min} is greater than its maximum {max}; no value is allowed"
            ));
        }
    }
    if let Some(message) = unfit_choices(param, path) {
        report(message);
    }
    for (inner, at) in nested(param, path) {
        walk(inner, &at, report);
    }
}

/// The fields of an object parameter and the items of an array, each with its path
/// (`options.limit`, `ids[]`): what a check of `param` goes on to check.
fn nested<'a>(param: &'a Param, path: &str) -> Vec<(&'a Param, String)> {
    match &param.ty {
        ParamType::Object { properties } => properties
            .iter()
            .map(|field| (field, format!("{path}.{}", field.name)))
            .collect(),
        ParamType::Array { items: Some(item) } => vec![(&**item, format!("{path}[]"))],
        _ => Vec::new(),
    }
}

/// Whether none of `param`'s own choices is of its type (fields and items not looked at),
/// said as a problem of the parameter shown as `path`.
pub(crate) fn unfit_choices(param: &Param, path: &str) -> Option<String> {
    let (kind, fits) = match param.ty {
        ParamType::String => ("a string", Json::is_string as fn(&Json) -> bool),
        ParamType::Integer => ("an integer", is_integer as fn(&Json) -> bool),
        ParamType::Number => ("a number", Json::is_number as fn(&Json) -> bool),
        ParamType::Boolean => ("a boolean", Json::is_boolean as fn(&Json) -> bool),
        ParamType::Object { .. } | ParamType::Array { .. } | ParamType::Any => return None,
    };
    // `null` among the choices says the value may be left empty (a nullable enum).
    let values: Vec<&Json> = param
        .choices
        .as_deref()?
        .iter()
        .filter(|choice| !choice.is_null())
        .collect();
    if values.is_empty() || values.iter().any(|choice| fits(choice)) {
        return None;
    }
    let listed: Vec<String> = values.iter().map(|choice| choice.to_string()).collect();
    Some(format!(
        "Parameter '{path}' is {} but none of its choices ({}) is {kind}",
        param.ty.name(),
        listed.join(", ")
    ))
}

/// What is wrong with the declared defaults of `param` (shown as `path`) and of the fields
/// and items inside it: a default of another type, outside the choices or outside the
/// bounds. A call never receives such a default (binding does not fill defaults in), but a
/// tool that applies it, or a reader of an exported schema, would meet a value the
/// definition itself forbids.
pub(crate) fn default_problems(param: &Param, path: &str, report: &mut dyn FnMut(String)) {
    if let Some(default) = param.default.as_ref().filter(|d| !d.is_null()) {
        if let Some(problem) = default_problem(param, default) {
            report(format!(
                "Parameter '{path}': its default {default} {problem}"
            ));
        }
    }
    for (inner, at) in nested(param, path) {
        default_problems(inner, &at, report);
    }
}

fn default_problem(param: &Param, default: &Json) -> Option<String> {
    let fits = match param.ty {
        ParamType::String => default.is_string(),
        ParamType::Integer => is_integer(default),
        ParamType::Number => default.is_number(),
        ParamType::Boolean => default.is_boolean(),
        ParamType::Object { .. } => default.is_object(),
        ParamType::Array { .. } => default.is_array(),
        ParamType::Any => true,
    };
    if !fits {
        return Some(format!("is not of its type {}", param.ty.name()));
    }
    if let Some(choices) = param
        .choices
        .as_deref()
        .filter(|_| param.element_choices().is_none())
    {
        let same = |choice: &Json| match (choice.as_f64(), default.as_f64()) {
            (Some(a), Some(b)) => a == b,
            _ => choice == default,
        };
        if !choices.is_empty() && !choices.iter().any(same) {
            return Some(String::from("is not one of its choices"));
        }
    }
    if let Some(n) = default.as_f64() {
        if let Some(min) = param.min.filter(|min| n < *min) {
            return Some(format!("is below its minimum {min}"));
        }
        if let Some(max) = param.max.filter(|max| n > *max) {
            return Some(format!("is above its maximum {max}"));
        }
    }
    None
}

/// A whole number, written as one (`3`) or with a zero fraction (`3.0`).
fn is_integer(value: &Json) -> bool {
    match value {
        Json::Number(n) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => false,
    }
}

/// The function name as its definition spells it.
pub(crate) fn defined_name(interface: &Interface) -> &str {
    interface
        .original
        .as_ref()
        .and_then(|o| o.name.as_deref())
        .unwrap_or(&interface.name)
}

/// Validates a whole set of loaded interfaces, each under its own domain as toolbox (what
/// `atfunc check` runs): the checks of [`validate_toolbox`] per domain.
pub fn validate_all(interfaces: &[Interface]) -> Result<(), ValidationErrors> {
    let mut groups: Vec<(String, Vec<Interface>)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for interface in interfaces {
        let domain = interface.domain.clone().unwrap_or_default();
        let slot = *index.entry(domain.clone()).or_insert_with(|| {
            groups.push((domain, Vec::new()));
            groups.len() - 1
        });
        if let Some((_, group)) = groups.get_mut(slot) {
            group.push(interface.clone());
        }
    }
    let mut errors = Vec::new();
    // Calls match domains ignoring case too, so `Weather.x` and `weather.x` would be one name.
    let mut folded: HashMap<String, &str> = HashMap::new();
    for (domain, group) in &groups {
        let key = unicase::UniCase::new(domain.as_str()).to_folded_case();
        match folded.get(key.as_str()) {
            Some(first) => {
                for interface in group {
                    errors.push(ValidationError {
                        function: interface.name.clone(),
                        toolbox: domain.clone(),
                        kind: ValidationErrorKind::Clash,
                        message: format!(
                            "Toolbox name '{domain}' differs only in case from '{first}'; names are matched ignoring case"
                        ),
                    });
                }
            }
            None => {
                folded.insert(key, domain);
            }
        }
        if let Err(ValidationErrors(mut more)) = validate_toolbox(domain, group) {
            errors.append(&mut more);
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ValidationErrors(errors))
    }
}
