//! Checks run when interfaces are registered, as the reference library runs them.
//!
//! Loading ([`super::load_interfaces`]) already checks each definition's own fields; this
//! checks what only makes sense for a set of interfaces registered together under one
//! toolbox name: the domain, names a model can write, and names that would collide when
//! matched ignoring case.

use super::{is_identifier, Interface};
use std::collections::HashMap;
use std::fmt;

/// One validation failure, naming the function and the toolbox.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ValidationError {
    /// The function concerned, as spelled in its definition (`#3` when it has no name).
    pub function: String,
    /// The toolbox being registered (empty for root functions).
    pub toolbox: String,
    /// What is wrong and, where it helps, how to fix it.
    pub message: String,
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
        let mut report = |message: String| {
            errors.push(ValidationError {
                function: interface.name.clone(),
                toolbox: toolbox.to_owned(),
                message,
            })
        };
        match (&interface.domain, toolbox.is_empty()) {
            (Some(domain), false) if domain == toolbox => {}
            (None, true) => {}
            (Some(domain), _) => report(format!(
                "Interface domain '{domain}' does not match toolbox name '{toolbox}'"
            )),
            (None, false) => report(format!(
                "Interface has no domain; it must be the toolbox name '{toolbox}'"
            )),
        }
        if !is_identifier(&interface.name) {
            report(format!(
                "Function name '{}' is not an identifier: use letters, digits and '_', not starting with a digit",
                interface.name
            ));
        }
        // Request body fields are JSON keys, sent as written: any name will do.
        for param in &interface.params {
            if !is_identifier(&param.name) {
                report(format!(
                    "Parameter name '{}' is not an identifier: use letters, digits and '_', not starting with a digit",
                    param.name
                ));
            }
        }
        // The same folding the binder matches names with: `maß` and `MASS` are one name.
        let key = unicase::UniCase::new(interface.name.as_str()).to_folded_case();
        let spelled = defined_name(interface);
        match seen.get(key.as_str()) {
            Some((first, first_spelled)) if *first == interface.name && *first_spelled == spelled => {
                report(format!("Function '{spelled}' is defined twice"))
            }
            Some((first, first_spelled)) if *first == interface.name => report(format!(
                "Functions '{first_spelled}' and '{spelled}' would both be called as '{first}'; rename one"
            )),
            Some((first, _)) => report(format!(
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

/// The function name as its definition spells it.
fn defined_name(interface: &Interface) -> &str {
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
