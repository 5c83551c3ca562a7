//! Checks run when interfaces are registered.

use super::Interface;

/// One validation failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Validation failed for function '{function}' in toolbox '{toolbox}': {message}")]
pub struct ValidationError {
    /// The function concerned.
    pub function: String,
    /// The toolbox being registered.
    pub toolbox: String,
    /// What is wrong.
    pub message: String,
}

/// Every validation failure of one registration.
#[derive(Debug, Clone, PartialEq, Eq, Default, thiserror::Error)]
#[error("{} validation error(s)", .0.len())]
pub struct ValidationErrors(pub Vec<ValidationError>);

/// Validates the interfaces of the toolbox `toolbox`.
pub fn validate_toolbox(_toolbox: &str, _interfaces: &[Interface]) -> Result<(), ValidationErrors> {
    Ok(())
}
