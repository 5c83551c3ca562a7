//! Reading a tools file, with errors that say where the file is wrong.

use super::Failure;
use atfunc::{Interface, LoadError, ValidationError};
use std::path::Path;

/// Loads a tools file. `Ok(Err(problems))` when it is JSON but its definitions are invalid;
/// `Err` when it cannot be read or is not JSON at all.
pub(crate) fn load(path: &Path) -> Result<Result<Vec<Interface>, Vec<ValidationError>>, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure(format!("cannot read tools file {}: {e}", path.display())))?;
    match atfunc::load_interfaces_str(&text) {
        Ok(interfaces) => Ok(Ok(interfaces)),
        Err(LoadError::Invalid(problems)) => Ok(Err(problems)),
        Err(LoadError::Json(e)) => Err(Failure(json_error(path, &e))),
        Err(other) => Err(Failure(format!("{}: {other}", path.display()))),
    }
}

/// Loads a tools file that must be valid (for `render`, `parse`, `exec`): every problem is
/// listed in the failure.
pub(crate) fn load_valid(path: &Path) -> Result<Vec<Interface>, Failure> {
    let problems = match load(path)? {
        Ok(interfaces) => match atfunc::validate_all(&interfaces) {
            Ok(()) => return Ok(interfaces),
            Err(errors) => errors.0,
        },
        Err(problems) => problems,
    };
    let list = problems
        .iter()
        .map(|p| format!("\n  {p}"))
        .collect::<String>();
    Err(Failure(format!(
        "{}: invalid tools file ({} problem(s); `atfunc check` lists them too):{list}",
        path.display(),
        problems.len()
    )))
}

/// `tools.json:2:12: expected value` — the place first, as compilers print it.
fn json_error(path: &Path, error: &serde_json::Error) -> String {
    let full = error.to_string();
    // serde_json appends " at line L column C"; the place is printed up front instead.
    let message = match full.rfind(" at line ") {
        Some(cut) => full.get(..cut).unwrap_or(&full),
        None => &full,
    };
    format!(
        "{}:{}:{}: not valid JSON: {message}",
        path.display(),
        error.line(),
        error.column()
    )
}
