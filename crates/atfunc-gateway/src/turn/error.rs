//! What the engine refuses in a request, before anything is asked upstream.

/// A request the turn cannot be run for; the gateway answers it with an HTTP error, the
/// evaluator fails the case with its message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TurnError {
    /// Something the client must fix in its request (400).
    #[error("{0}")]
    BadRequest(String),
    /// The grammar of the request's tools is larger than an upstream request may be (413).
    #[error("{0}")]
    GrammarTooLarge(String),
}

impl TurnError {
    pub(crate) fn bad_request(message: impl Into<String>) -> TurnError {
        TurnError::BadRequest(message.into())
    }
}
