//! The upstream server: the shared endpoint client, its errors in the gateway's words.

use super::ApiError;
use crate::endpoint::{error_chain, AnswerError, Endpoint, EndpointError, Route, TimeLimit};
use axum::body::Bytes;
use axum::http::{HeaderValue, StatusCode};
use serde_json::Value as Json;
use std::time::Duration;

/// The OpenAI-compatible server the gateway stands in front of.
#[derive(Debug, Clone)]
pub(crate) struct Upstream {
    /// Its time limit bounds the wait for the response head and between two pieces of
    /// its body.
    endpoint: Endpoint,
}

/// What the upstream answered before its body: a response to read.
pub(crate) type Response = reqwest::Response;

impl Upstream {
    /// An upstream at `base` (`http://127.0.0.1:11434`, or with `/v1` at the end).
    pub(crate) fn new(
        base: &str,
        timeout: Duration,
        max_response_bytes: usize,
    ) -> Result<Upstream, String> {
        use crate::endpoint::EndpointSetupError;
        let endpoint = Endpoint::new(base, TimeLimit::EachWait(timeout), max_response_bytes)
            .map_err(|error| {
                let base = base.trim_end_matches('/');
                match error {
                    EndpointSetupError::NotUrl(why) => {
                        format!("invalid upstream URL '{base}': {why}")
                    }
                    EndpointSetupError::NotHttp => {
                        format!("invalid upstream URL '{base}': use http:// or https://")
                    }
                    EndpointSetupError::Client(e) => format!("cannot start the HTTP client: {e}"),
                }
            })?;
        Ok(Upstream { endpoint })
    }

    /// Largest response body read.
    pub(crate) fn max_response_bytes(&self) -> usize {
        self.endpoint.max_response_bytes()
    }

    /// `POST /v1/chat/completions` with `body`; returns once the response head is in.
    pub(crate) async fn chat(
        &self,
        body: Bytes,
        auth: Option<&HeaderValue>,
    ) -> Result<Response, ApiError> {
        self.endpoint
            .post(Route::ChatCompletions, body, auth)
            .await
            .map_err(|e| self.error(e))
    }

    /// `GET /v1/models`.
    pub(crate) async fn models(&self, auth: Option<&HeaderValue>) -> Result<Response, ApiError> {
        self.endpoint
            .get(Route::Models, auth)
            .await
            .map_err(|e| self.error(e))
    }

    /// The next piece of a response body, `None` at its end.
    pub(crate) async fn next_chunk(
        &self,
        response: &mut Response,
    ) -> Result<Option<Bytes>, ApiError> {
        self.endpoint
            .next_piece(response)
            .await
            .map_err(|e| self.answer_error(e))
    }

    /// A whole response body, within the size limit.
    pub(crate) async fn read_body(&self, response: &mut Response) -> Result<Bytes, ApiError> {
        self.endpoint
            .read_bytes(response)
            .await
            .map(Bytes::from)
            .map_err(|e| self.answer_error(e))
    }

    /// A whole response body as text, within the size limit: an answer that is not UTF-8
    /// is refused, never read with replacement characters.
    pub(crate) async fn read_text(&self, response: &mut Response) -> Result<String, ApiError> {
        self.endpoint
            .read_text(response)
            .await
            .map_err(|e| self.answer_error(e))
    }

    /// The error for a request that failed.
    fn error(&self, error: EndpointError) -> ApiError {
        match error {
            EndpointError::TimedOut(after) => ApiError::timeout(after),
            // reqwest names the URL in its message: clients are not to learn the
            // upstream's address, path or credentials.
            EndpointError::Unreachable(error) => ApiError::bad_gateway(format!(
                "Cannot reach the upstream server: {}",
                error_chain(&error.without_url())
            )),
            EndpointError::Answer(error) => self.answer_error(error),
            // An error body that cannot be read is left out; the status still says what
            // happened.
            EndpointError::Status { status, body } => {
                ApiError::from_upstream(status, &body.unwrap_or_default())
            }
            EndpointError::NotJson { error, .. } => ApiError::bad_gateway(format!(
                "The upstream server's answer is not JSON ({error})"
            )),
        }
    }

    /// The error for a streamed answer whose byte `at` (from the stream's start) is the
    /// first that is not UTF-8: as for a whole answer, a 502.
    pub(crate) fn not_utf8(&self, at: usize) -> ApiError {
        self.answer_error(AnswerError::NotUtf8 { at })
    }

    /// The error for an answer that could not be read.
    fn answer_error(&self, error: AnswerError) -> ApiError {
        match error {
            AnswerError::Waited(after) => ApiError::timeout(after),
            AnswerError::Failed(error) => ApiError::bad_gateway(format!(
                "The upstream server broke off its answer: {}",
                error_chain(&error)
            )),
            AnswerError::TooLarge { .. } | AnswerError::NotUtf8 { .. } => {
                ApiError::bad_gateway(format!("The upstream server's answer {}", error.what()))
            }
        }
    }

    /// A response as an error when its status is one: its body read (as far as the limit
    /// allows) and turned into OpenAI's error shape.
    pub(crate) async fn check(&self, response: Response) -> Result<Response, ApiError> {
        self.endpoint
            .check(response)
            .await
            .map_err(|e| self.error(e))
    }

    /// [`Upstream::chat`], its answer [checked](Upstream::check): an error status is an
    /// error.
    pub(crate) async fn chat_checked(
        &self,
        body: Bytes,
        auth: Option<&HeaderValue>,
    ) -> Result<Response, ApiError> {
        let response = self.chat(body, auth).await?;
        self.check(response).await
    }

    /// A non-streaming chat completion as JSON.
    pub(crate) async fn chat_json(
        &self,
        body: Bytes,
        auth: Option<&HeaderValue>,
    ) -> Result<Json, ApiError> {
        self.endpoint
            .post_json(Route::ChatCompletions, body, auth)
            .await
            .map(|answer| answer.json)
            .map_err(|e| self.error(e))
    }

    /// The error for a body over the limit.
    pub(crate) fn too_large(&self) -> ApiError {
        self.answer_error(AnswerError::TooLarge {
            limit: self.max_response_bytes(),
        })
    }
}

/// An upstream URL fit for a log: its user name and password, query and fragment replaced
/// or dropped. Text that is not a URL is not shown at all.
///
/// ```
/// assert_eq!(
///     atfunc_gateway::serve::shown_url("https://me:hunter2@llm.example:8443/v1?key=abc"),
///     "https://[redacted]@llm.example:8443/v1"
/// );
/// assert_eq!(atfunc_gateway::serve::shown_url("http://127.0.0.1:11434"), "http://127.0.0.1:11434/");
/// ```
pub fn shown_url(url: &str) -> String {
    let Ok(mut parsed) = reqwest::Url::parse(url) else {
        return String::from("(not a URL)");
    };
    let had_credentials = !parsed.username().is_empty() || parsed.password().is_some();
    let _ = parsed.set_password(None);
    let _ = parsed.set_username("");
    parsed.set_query(None);
    parsed.set_fragment(None);
    let shown = parsed.to_string();
    match shown.split_once("://") {
        Some((scheme, rest)) if had_credentials => format!("{scheme}://[redacted]@{rest}"),
        _ => shown,
    }
}

/// Whether a status means the upstream refused or failed.
pub(crate) fn is_error(status: StatusCode) -> bool {
    status.is_client_error() || status.is_server_error()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_url_says_so_in_the_gateways_words() {
        let error = Upstream::new("ftp://x/", Duration::from_secs(1), 1).unwrap_err();
        assert_eq!(
            error,
            "invalid upstream URL 'ftp://x': use http:// or https://"
        );
        let error = Upstream::new("nowhere", Duration::from_secs(1), 1).unwrap_err();
        assert_eq!(
            error,
            "invalid upstream URL 'nowhere': relative URL without a base"
        );
    }

    #[tokio::test]
    async fn an_unreachable_upstream_is_not_named_to_clients() {
        // A port nothing listens on: bound, then closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let base = format!("http://admin:hunter2@127.0.0.1:{port}/private/prefix");
        let upstream = Upstream::new(&base, Duration::from_secs(5), 1024).unwrap();
        let error = upstream
            .chat(Bytes::from_static(b"{}"), None)
            .await
            .unwrap_err();
        let message = error.message().to_owned();
        assert!(
            message.starts_with("Cannot reach the upstream server"),
            "{message}"
        );
        for secret in ["hunter2", "admin", "/private/prefix", "chat/completions"] {
            assert!(!message.contains(secret), "{message}");
        }
    }

    #[test]
    fn shown_urls_hold_no_credentials() {
        let shown = shown_url("http://user:pw-secret@host:1/v1?token=t0k#x");
        assert_eq!(shown, "http://[redacted]@host:1/v1");
        assert_eq!(shown_url("not a url"), "(not a URL)");
    }
}
