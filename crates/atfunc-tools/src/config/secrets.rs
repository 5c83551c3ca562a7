//! Values written in the config or read from the environment when a registry is built.

use super::*;

pub(super) fn missing_variable(at: &str, field: &str, variable: &str) -> String {
    format!("{at}: field '{field}' reads the environment variable {variable}, which is not set")
}

/// Reads a value; `Err(variable)` when its environment variable is not set.
pub(super) fn resolve(source: &Source) -> Result<String, String> {
    match source {
        Source::Literal(value) => Ok(value.clone()),
        Source::Env { name, prefix } => match std::env::var(name) {
            Ok(value) => Ok(format!("{prefix}{value}")),
            Err(_) => Err(name.clone()),
        },
    }
}

pub(super) fn resolve_all(
    sources: &[(String, Source)],
    at: &str,
    field: &str,
    secrets: Secrets,
    found: &mut Found,
) -> BTreeMap<String, String> {
    let mut values = BTreeMap::new();
    for (name, source) in sources {
        match resolve(source) {
            Ok(value) => {
                values.insert(name.clone(), value);
            }
            Err(variable) => {
                found.unset(
                    secrets,
                    missing_variable(at, &format!("{field}.{name}"), &variable),
                );
            }
        }
    }
    values
}
