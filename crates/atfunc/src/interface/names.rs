//! The one name mapping: names a model can write for names that are not identifiers.
//!
//! Real tool files name things `get-weather`, `max-results`, `Content-Type` or `$filter`,
//! none of which a call can write (`@get-weather(max-results=5)` would read as arithmetic).
//! The loader keeps each such name as the definition spells it ([`Interface::original`],
//! [`Param::original`](super::Param::original)) and gives the interface the identifier
//! [`identifier`] makes of it. The prompt, the call grammar and binding see only the
//! identifiers; what goes back to a tool or an application (bound calls, results,
//! `tool_calls`) carries the original spelling again.
//!
//! The mapping is a plain function of the name, so it is the same in every command, in the
//! library and in the gateway. Two names of one scope that map to one identifier (compared
//! ignoring case, as calls are matched) are refused, naming both.

use super::{is_identifier, is_identifier_char, Interface, Original, Param};
use std::borrow::Cow;
use std::collections::HashMap;
use unicase::UniCase;

/// The identifier a call writes for `name`: `name` itself when it is one; otherwise each
/// character that cannot be in an identifier becomes `_`, and `_` goes in front of a name
/// that would start with a digit.
///
/// ```
/// use atfunc::interface::identifier;
/// assert_eq!(identifier("get-weather"), "get_weather");
/// assert_eq!(identifier("Content-Type"), "Content_Type");
/// assert_eq!(identifier("$filter"), "_filter");
/// assert_eq!(identifier("2fa code"), "_2fa_code");
/// assert_eq!(identifier("año"), "año");
/// assert_eq!(identifier(""), "_");
/// ```
pub fn identifier(name: &str) -> Cow<'_, str> {
    if is_identifier(name) {
        return Cow::Borrowed(name);
    }
    let mut out: String = name
        .chars()
        .map(|c| if is_identifier_char(c) { c } else { '_' })
        .collect();
    if !out.starts_with(|c: char| c.is_alphabetic() || c == '_') {
        out.insert(0, '_');
    }
    Cow::Owned(out)
}

/// A dotted name with each part made an identifier (`my-api.list` → `my_api.list`): the
/// name a call writes for a tool defined as `name`.
pub fn dotted_identifier(name: &str) -> Cow<'_, str> {
    if !name.is_empty() && name.split('.').all(is_identifier) {
        return Cow::Borrowed(name);
    }
    Cow::Owned(
        name.split('.')
            .map(identifier)
            .collect::<Vec<_>>()
            .join("."),
    )
}

/// Gives `interface` the names a call writes: its domain, its function name and each of
/// its parameters (not the fields of its request body, which are JSON keys). Returns one
/// message per pair of parameters that would be written alike.
pub(super) fn name_interface(interface: &mut Interface) -> Vec<String> {
    let mut original = Original::default();
    if let Some(domain) = &mut interface.domain {
        if let Cow::Owned(written) = dotted_identifier(domain) {
            original.domain = Some(std::mem::replace(domain, written));
        }
    }
    if let Cow::Owned(written) = identifier(&interface.name) {
        original.name = Some(std::mem::replace(&mut interface.name, written));
    }
    if original != Original::default() {
        interface.original = Some(original);
    }
    for param in &mut interface.params {
        if let Cow::Owned(written) = identifier(&param.name) {
            param.original = Some(std::mem::replace(&mut param.name, written));
        }
    }
    let mut problems = Vec::new();
    // Folded as binding folds names, so `max-results` and `MAX_RESULTS` meet here.
    let mut seen: HashMap<String, &Param> = HashMap::new();
    for param in &interface.params {
        let key = UniCase::new(param.name.as_str()).to_folded_case();
        match seen.get(&key) {
            // Two names that differ only in case, neither of them made here, are reported
            // by the checks that have always run; this is about the names made here.
            Some(first) if first.original.is_some() || param.original.is_some() => {
                problems.push(format!(
                    "parameters '{}' and '{}' would both be written '{}' in a call; rename one",
                    first.original_name(),
                    param.original_name(),
                    param.name
                ));
            }
            Some(_) => {}
            None => {
                seen.insert(key, param);
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interface::ParamType;

    #[test]
    fn names_that_are_identifiers_are_kept() {
        let mut f = Interface::new("get_temp")
            .in_domain("weather")
            .param(Param::new("straße", ParamType::String));
        assert!(name_interface(&mut f).is_empty());
        assert_eq!(f.original, None);
        assert_eq!(f.params[0].original, None);
    }

    #[test]
    fn every_part_is_mapped_and_kept() {
        let mut f = Interface::new("get-user")
            .in_domain("my-api.v2")
            .param(Param::new("user-id", ParamType::String))
            .param(Param::new("$filter", ParamType::String));
        assert!(name_interface(&mut f).is_empty());
        assert_eq!(f.qualified_name(), "my_api.v2.get_user");
        assert_eq!(f.original_qualified_name(), "my-api.v2.get-user");
        let names: Vec<(&str, &str)> = f
            .params
            .iter()
            .map(|p| (p.name.as_str(), p.original_name()))
            .collect();
        assert_eq!(names, [("user_id", "user-id"), ("_filter", "$filter")]);
    }

    #[test]
    fn names_written_alike_are_refused_naming_both() {
        let mut f = Interface::new("search")
            .param(Param::new("max-results", ParamType::Integer))
            .param(Param::new("MAX_RESULTS", ParamType::Integer));
        assert_eq!(
            name_interface(&mut f),
            ["parameters 'max-results' and 'MAX_RESULTS' would both be written 'MAX_RESULTS' in a call; rename one"]
        );
    }
}
