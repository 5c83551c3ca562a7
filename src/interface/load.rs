//! Loading interfaces from JSON in the shapes people already have.

use super::Interface;

/// One problem found in a definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The function concerned, when known.
    pub function: Option<String>,
    /// What is wrong.
    pub message: String,
}

/// Why a tools file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The text is not JSON.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
}

/// Loads interfaces from a parsed JSON value.
pub fn load_interfaces(_json: &serde_json::Value) -> Result<Vec<Interface>, LoadError> {
    Ok(Vec::new())
}

/// Loads interfaces from JSON text.
pub fn load_interfaces_str(text: &str) -> Result<Vec<Interface>, LoadError> {
    load_interfaces(&serde_json::from_str(text)?)
}
