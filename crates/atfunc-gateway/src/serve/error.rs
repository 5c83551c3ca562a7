//! Errors as OpenAI's API writes them: `{"error": {"message", "type", "code"}}`.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value as Json};
use std::time::Duration;

/// How much of a non-JSON upstream error body is quoted in the message.
const EXCERPT_CHARS: usize = 500;

/// An error answered to the client in OpenAI's shape, with an HTTP status.
///
/// ```
/// use atfunc_gateway::serve::ApiError;
/// let error = ApiError::bad_request("'messages' must be a list");
/// assert_eq!(error.status().as_u16(), 400);
/// assert_eq!(error.to_json()["error"]["type"], "invalid_request_error");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    status: StatusCode,
    message: String,
    kind: String,
    code: Option<String>,
    /// The upstream's OpenAI-shaped error object, sent back as it was (a numeric `code`,
    /// `param` and any other field included).
    /// Boxed: it is rare, and errors travel in every `Result` of the gateway.
    upstream: Option<Box<Map<String, Json>>>,
    /// For an executed request, the records of the calls that ran before the error
    /// (`error.atfunc_executed`).
    executed: Option<Box<[Json]>>,
}

impl ApiError {
    /// An error with every field given.
    pub fn new(
        status: StatusCode,
        message: impl Into<String>,
        kind: impl Into<String>,
        code: Option<&str>,
    ) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            kind: kind.into(),
            code: code.map(str::to_owned),
            upstream: None,
            executed: None,
        }
    }

    /// 400: the request cannot be served as it is.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            message,
            "invalid_request_error",
            None,
        )
    }

    /// 401: the bearer key is missing or wrong.
    pub(crate) fn unauthorized() -> ApiError {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "Missing or incorrect API key: send 'Authorization: Bearer <key>'",
            "invalid_request_error",
            Some("invalid_api_key"),
        )
    }

    /// 503: the gateway handles as many requests as it may (`max_concurrent`).
    pub(crate) fn busy(max_concurrent: usize) -> ApiError {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "The gateway is handling as many requests as it may ({max_concurrent}); try \
                 again shortly"
            ),
            "server_error",
            Some("busy"),
        )
    }

    /// 503: the bodies being read hold as many bytes as `max_concurrent` requests may
    /// send together.
    pub(crate) fn busy_reading(max_concurrent: usize) -> ApiError {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "The gateway is reading as many request bytes as {max_concurrent} requests \
                 may send; try again shortly"
            ),
            "server_error",
            Some("busy"),
        )
    }

    /// 413: the request body is over the limit.
    pub fn too_large(limit: usize) -> ApiError {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("The request body is larger than {limit} bytes"),
            "invalid_request_error",
            Some("request_too_large"),
        )
    }

    /// 413: the grammar of the request's tools would make the request sent upstream larger
    /// than the gateway's own limit on requests, or larger than a grammar may be.
    pub(crate) fn grammar_too_large(why: &str) -> ApiError {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "The grammar of these tools is too large to send upstream: {why}. Send fewer or \
                 smaller tools, or leave \"atfunc_constrain\" off for this request"
            ),
            "invalid_request_error",
            Some("grammar_too_large"),
        )
    }

    /// 504: the upstream sent nothing for `after`.
    pub fn timeout(after: Duration) -> ApiError {
        ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            format!(
                "The upstream server did not answer within {}",
                seconds(after)
            ),
            "upstream_error",
            Some("upstream_timeout"),
        )
    }

    /// 504: the request as a whole passed the gateway's time limit for one request.
    pub fn request_timeout(after: Duration) -> ApiError {
        ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            format!(
                "The request did not finish within {}, the longest the gateway gives one request",
                seconds(after)
            ),
            "upstream_error",
            Some("request_timeout"),
        )
    }

    /// 408: the client did not send its request body within `after`.
    pub fn body_timeout(after: Duration) -> ApiError {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "The request body did not arrive within {}: send it whole, without pauses",
                seconds(after)
            ),
            "invalid_request_error",
            Some("request_timeout"),
        )
    }

    /// 502: the upstream could not be reached, or answered something unusable.
    pub(crate) fn bad_gateway(message: impl Into<String>) -> ApiError {
        ApiError::new(
            StatusCode::BAD_GATEWAY,
            message,
            "upstream_error",
            Some("bad_upstream"),
        )
    }

    /// 500: the gateway itself failed.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            message,
            "server_error",
            None,
        )
    }

    /// The upstream answered `status` with `body`. An OpenAI-shaped error body keeps its
    /// message, type and code; any other body is quoted (its start) in the message.
    pub(crate) fn from_upstream(status: StatusCode, body: &[u8]) -> ApiError {
        let status = if status.is_client_error() || status.is_server_error() {
            status
        } else {
            StatusCode::BAD_GATEWAY
        };
        let parsed: Option<Json> = serde_json::from_slice(body).ok();
        let error = parsed.as_ref().and_then(|json| json.get("error"));
        let message = match error {
            Some(Json::Object(fields)) => fields.get("message").and_then(Json::as_str),
            Some(Json::String(message)) => Some(message.as_str()),
            _ => None,
        };
        if let Some(message) = message {
            let field = |name: &str| {
                error
                    .and_then(|e| e.get(name))
                    .and_then(Json::as_str)
                    .map(str::to_owned)
            };
            return ApiError {
                status,
                message: message.to_owned(),
                kind: field("type").unwrap_or_else(|| String::from("upstream_error")),
                code: field("code"),
                upstream: error.and_then(Json::as_object).cloned().map(Box::new),
                executed: None,
            };
        }
        let text = String::from_utf8_lossy(body);
        let excerpt: String = text.trim().chars().take(EXCERPT_CHARS).collect();
        let message = if excerpt.is_empty() {
            format!("The upstream server answered {status}")
        } else {
            format!("The upstream server answered {status}: {excerpt}")
        };
        ApiError::new(status, message, "upstream_error", None)
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The same error, saying that the calls of `records` ran before it: an executed
    /// request's client must not run them again when it retries.
    pub(crate) fn with_executed(mut self, records: Vec<Json>) -> ApiError {
        self.executed = Some(records.into_boxed_slice());
        self
    }

    /// `{"error": {"message", "type", "code"}}`, and `"atfunc_executed": [...]` in the
    /// error object of an executed request.
    pub fn to_json(&self) -> Json {
        let mut error = match &self.upstream {
            Some(error) => (**error).clone(),
            None => {
                let mut error = Map::new();
                error.insert("message".into(), json!(self.message));
                error.insert("type".into(), json!(self.kind));
                error.insert("code".into(), json!(self.code));
                error
            }
        };
        if let Some(records) = &self.executed {
            error.insert("atfunc_executed".into(), Json::Array(records.to_vec()));
        }
        json!({ "error": error })
    }
}

impl ApiError {
    /// Tells a `tracing` subscriber this error was answered: `error` for a 5xx, `info`
    /// for a request refused.
    pub(crate) fn trace(&self) {
        let status = self.status.as_u16();
        let code = self.code.as_deref().unwrap_or("none");
        let message = super::trace::one_line(&self.message);
        if self.status.is_server_error() {
            tracing::error!(status, code = %code, "{message}");
        } else {
            tracing::info!(status, code = %code, "refused: {message}");
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        self.trace();
        let busy = self.status == StatusCode::SERVICE_UNAVAILABLE
            && self.upstream.is_none()
            && self.code.as_deref() == Some("busy");
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            self.to_json().to_string(),
        )
            .into_response();
        if busy {
            // A place is free as soon as one answer ends.
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        }
        response
    }
}

/// `2s`, `1.5s`.
fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{}s", duration.as_secs())
    } else {
        format!("{secs}s")
    }
}

impl From<crate::turn::TurnError> for ApiError {
    fn from(error: crate::turn::TurnError) -> ApiError {
        match error {
            crate::turn::TurnError::BadRequest(message) => ApiError::bad_request(message),
            crate::turn::TurnError::GrammarTooLarge(why) => ApiError::grammar_too_large(&why),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_errors_keep_an_openai_body_and_quote_any_other() {
        let openai = br#"{"error": {"message": "model not found", "type": "invalid_request_error", "code": "model_not_found"}}"#;
        let error = ApiError::from_upstream(StatusCode::NOT_FOUND, openai);
        assert_eq!(error.status(), StatusCode::NOT_FOUND);
        assert_eq!(
            error.to_json(),
            json!({"error": {"message": "model not found", "type": "invalid_request_error", "code": "model_not_found"}})
        );
        let html = ApiError::from_upstream(StatusCode::INTERNAL_SERVER_ERROR, b"<h1>boom</h1>\n");
        assert_eq!(
            html.message(),
            "The upstream server answered 500 Internal Server Error: <h1>boom</h1>"
        );
        assert_eq!(html.to_json()["error"]["code"], Json::Null);
    }

    #[test]
    fn an_upstream_error_object_comes_back_whole() {
        let llama = br#"{"error": {"code": 400, "message": "too long", "type": "exceed_context_size_error", "param": null, "n_ctx": 4096}}"#;
        let error = ApiError::from_upstream(StatusCode::BAD_REQUEST, llama);
        assert_eq!(error.message(), "too long");
        assert_eq!(
            error.to_json(),
            serde_json::from_slice::<Json>(llama).unwrap()
        );
    }

    #[test]
    fn timeouts_say_how_long() {
        assert_eq!(
            ApiError::timeout(Duration::from_millis(1500)).message(),
            "The upstream server did not answer within 1.5s"
        );
    }
}
