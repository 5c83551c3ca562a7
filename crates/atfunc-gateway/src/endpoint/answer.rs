//! Reading an endpoint's answer within the size limit.
//!
//! An answer is read piece by piece and refused as soon as it passes the size limit, so
//! an endpoint that sends without end costs the limit and no more; the text of a whole
//! answer must be UTF-8, and one that is not is refused, never read with replacement
//! characters: the gateway would otherwise pass on, and the evaluator score, text the
//! model never wrote. Both callers turn an [`AnswerError`] into their own words (a 502 for
//! the gateway's client, a failed case for the evaluator), from the same reasons.

use super::error_chain;
use bytes::Bytes;
use reqwest::Response;
use std::time::Duration;

/// Why an answer could not be read.
#[derive(Debug)]
pub enum AnswerError {
    /// The answer passed the limit (its first bytes were read, the rest was not).
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The answer is not UTF-8.
    NotUtf8 {
        /// Where the first byte that is not UTF-8 is.
        at: usize,
    },
    /// Nothing came for this long (between two pieces, or before the first).
    Waited(Duration),
    /// The connection failed or broke off.
    Failed(reqwest::Error),
}

impl AnswerError {
    /// What went wrong, for a message that names the endpoint in front of it: "is larger
    /// than 1024 bytes", "is not valid UTF-8 (its byte 12 is not)".
    pub fn what(&self) -> String {
        match self {
            AnswerError::TooLarge { limit } => format!("is larger than {limit} bytes"),
            AnswerError::NotUtf8 { at } => {
                format!("is not valid UTF-8 (from byte {at} on)")
            }
            AnswerError::Waited(after) => format!("did not go on for {} s", after.as_secs_f64()),
            AnswerError::Failed(error) => format!("broke off: {}", error_chain(error)),
        }
    }
}

/// The next piece of an answer, `None` at its end; `wait` bounds the wait for it (`None`
/// leaves that to the client's own time limit).
pub(super) async fn next_piece(
    response: &mut Response,
    wait: Option<Duration>,
) -> Result<Option<Bytes>, AnswerError> {
    let piece = match wait {
        Some(wait) => tokio::time::timeout(wait, response.chunk())
            .await
            .map_err(|_| AnswerError::Waited(wait))?,
        None => response.chunk().await,
    };
    piece.map_err(|error| AnswerError::Failed(error.without_url()))
}

/// A whole answer's bytes, refused once they pass `limit`.
pub(super) async fn read_bytes(
    response: &mut Response,
    limit: usize,
    wait: Option<Duration>,
) -> Result<Vec<u8>, AnswerError> {
    let declared = response.content_length().unwrap_or(0);
    if declared > limit as u64 {
        return Err(AnswerError::TooLarge { limit });
    }
    // `declared` is at most `limit` here, so it fits.
    let mut body = Vec::with_capacity(usize::try_from(declared).unwrap_or(0));
    while let Some(piece) = next_piece(response, wait).await? {
        if piece.len() > limit - body.len() {
            return Err(AnswerError::TooLarge { limit });
        }
        body.extend_from_slice(&piece);
    }
    Ok(body)
}

/// A whole answer as text: within `limit`, and UTF-8.
pub(super) async fn read_text(
    response: &mut Response,
    limit: usize,
    wait: Option<Duration>,
) -> Result<String, AnswerError> {
    let body = read_bytes(response, limit, wait).await?;
    String::from_utf8(body).map_err(|e| AnswerError::NotUtf8 {
        at: e.utf8_error().valid_up_to(),
    })
}
