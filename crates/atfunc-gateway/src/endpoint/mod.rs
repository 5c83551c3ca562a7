//! One client for an OpenAI-compatible endpoint, the same for the gateway
//! ([`crate::serve`], which calls the endpoint its upstream) and the lab's evaluator.
//!
//! The contract, step by step:
//!
//! 1. The base URL is checked once, when the client is made: it must parse as a URL and
//!    use `http` or `https` ([`EndpointSetupError`]). A `/` at its end is dropped, and `/v1` is
//!    added unless the base ends with it. The OpenAI routes ([`Route::ChatCompletions`],
//!    [`Route::Models`]) are under `/v1`; llama-server's own routes
//!    ([`Route::ApplyTemplate`], [`Route::Completion`]) and any server's own
//!    ([`Route::Own`]) are under the root, the base without `/v1`.
//! 2. A request carries the caller's `Authorization` value when it has one. Redirects are
//!    not followed: a `3xx` is an error status like any other, so a key never goes to a
//!    server the caller did not name.
//! 3. The time limit ([`TimeLimit`]) bounds either each wait (for the answer's head, then
//!    for each piece of its body: the gateway, whose streamed answers may go on for long)
//!    or the whole exchange (the evaluator's time for one answer). Connecting is bounded by
//!    the same duration in both.
//! 4. An answer is read within the size limit and, as text, must be UTF-8 (see
//!    [`AnswerError`]). A whole answer read as JSON may hold Python's words for numbers
//!    that are not finite (`NaN`, `Infinity`, `-Infinity`): they are read as strings
//!    (see `nonfinite`).
//! 5. What went wrong is an [`EndpointError`]; each caller puts it in its own words (the
//!    gateway's `ApiError`, the evaluator's failed case). A [`reqwest::Error`] in it still
//!    names the URL: the evaluator shows it, the gateway drops it before a client sees it.

// Each caller uses its part of the client (the gateway one time limit and `/v1/models`,
// the evaluator the other and llama-server's routes): built for one alone, the other's
// part is unused, not dead.

mod answer;
mod nonfinite;
mod sse;
#[cfg(test)]
mod tests;

pub use answer::AnswerError;
use bytes::Bytes;
pub(crate) use nonfinite::parse_lenient;
use reqwest::header::{self, HeaderValue};
use reqwest::{Response, StatusCode};
use serde_json::Value as Json;
pub use sse::{Sse, SseDecoder};
use std::time::Duration;

/// Whether `response` is a server-sent event stream: a server may answer a streamed
/// request whole (llama-cpp-python does with `tools`), and both callers read either.
pub fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// The default of both callers' limit on an answer's size (`max_response_bytes`):
/// 16 MiB, many times the longest answer a model writes.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 16 << 20;

/// How long a request may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeLimit {
    /// The longest wait for the answer's head, and then for each piece of its body: an
    /// answer that keeps coming may take longer as a whole.
    EachWait(Duration),
    /// The longest the whole exchange takes, from connecting to the answer's last byte.
    Whole(Duration),
}

impl TimeLimit {
    /// The duration, whichever it bounds.
    pub fn duration(self) -> Duration {
        match self {
            TimeLimit::EachWait(limit) | TimeLimit::Whole(limit) => limit,
        }
    }

    /// The bound on the wait for one piece of a body, when this limit sets one (a whole
    /// limit is kept by the client itself).
    fn piece_wait(self) -> Option<Duration> {
        match self {
            TimeLimit::EachWait(limit) => Some(limit),
            TimeLimit::Whole(_) => None,
        }
    }
}

/// A route of the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `POST /v1/chat/completions`.
    ChatCompletions,
    /// `GET /v1/models`.
    Models,
    /// llama-server's `POST /apply-template`: messages through the model's chat template.
    ApplyTemplate,
    /// llama-server's `POST /completion`: a raw prompt completed.
    Completion,
    /// A route of the server's own under the root (`/props`, `/api/version`): what the
    /// gateway asks to find out what kind of server it is.
    Own(&'static str),
}

/// Why no client could be made for a base URL.
#[derive(Debug)]
pub enum EndpointSetupError {
    /// The base is not a URL; the parser's reason.
    NotUrl(String),
    /// The base is a URL of another scheme than `http` or `https`.
    NotHttp,
    /// The HTTP client could not start (its TLS set-up failed).
    Client(reqwest::Error),
}

/// Why a request to the endpoint failed.
#[derive(Debug)]
pub enum EndpointError {
    /// No answer came: the connection was refused or broke, the name did not resolve, TLS
    /// failed. The error names the URL.
    Unreachable(reqwest::Error),
    /// The time limit passed before the answer's head came.
    TimedOut(Duration),
    /// The answer's body could not be read.
    Answer(AnswerError),
    /// The endpoint answered an error status (or a redirect); its body as far as it could
    /// be read.
    Status {
        /// The status.
        status: StatusCode,
        /// The body, or why it could not be read.
        body: Result<Vec<u8>, AnswerError>,
    },
    /// The answer is not JSON.
    NotJson {
        /// The parser's reason.
        error: serde_json::Error,
        /// The answer's text.
        text: String,
    },
}

/// An answer that is JSON.
#[derive(Debug)]
pub struct JsonAnswer {
    /// The answer, parsed.
    pub json: Json,
    /// Its text, for a message that quotes it.
    pub text: String,
}

/// An OpenAI-compatible endpoint: where it is, the client that asks it and the limits of
/// one request.
#[derive(Debug, Clone)]
pub struct Endpoint {
    client: reqwest::Client,
    /// The base URL with `/v1` at its end (and no `/` after it).
    api: String,
    /// The base URL without `/v1` at its end (and no `/` after it).
    root: String,
    time_limit: TimeLimit,
    max_response_bytes: usize,
}

impl Endpoint {
    /// An endpoint at `base` (`http://127.0.0.1:8080`, or with `/v1` at the end).
    pub fn new(
        base: &str,
        time_limit: TimeLimit,
        max_response_bytes: usize,
    ) -> Result<Endpoint, EndpointSetupError> {
        let base = base.trim_end_matches('/');
        let parsed =
            reqwest::Url::parse(base).map_err(|e| EndpointSetupError::NotUrl(e.to_string()))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(EndpointSetupError::NotHttp);
        }
        // The routes are the base's own text with a path added, not the parsed URL
        // written back, which would add a `/` to a bare host and change what was given.
        let root = base.strip_suffix("/v1").unwrap_or(base).to_owned();
        let client = reqwest::Client::builder()
            .connect_timeout(time_limit.duration())
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(EndpointSetupError::Client)?;
        Ok(Endpoint {
            client,
            api: format!("{root}/v1"),
            root,
            time_limit,
            max_response_bytes,
        })
    }

    /// The URL of `route`.
    pub fn url(&self, route: Route) -> String {
        match route {
            Route::ChatCompletions => format!("{}/chat/completions", self.api),
            Route::Models => format!("{}/models", self.api),
            Route::ApplyTemplate => format!("{}/apply-template", self.root),
            Route::Completion => format!("{}/completion", self.root),
            Route::Own(path) => format!("{}{path}", self.root),
        }
    }

    /// The largest answer read, in bytes.
    pub fn max_response_bytes(&self) -> usize {
        self.max_response_bytes
    }

    /// `POST` of a JSON `body` to `route`; returns once the answer's head is in, whatever
    /// its status.
    pub async fn post(
        &self,
        route: Route,
        body: impl Into<reqwest::Body>,
        auth: Option<&HeaderValue>,
    ) -> Result<Response, EndpointError> {
        let request = self
            .client
            .post(self.url(route))
            .header(header::CONTENT_TYPE, "application/json")
            .body(body);
        self.send(request, auth).await
    }

    /// `GET` of `route`; returns once the answer's head is in, whatever its status.
    pub async fn get(
        &self,
        route: Route,
        auth: Option<&HeaderValue>,
    ) -> Result<Response, EndpointError> {
        self.send(self.client.get(self.url(route)), auth).await
    }

    /// Sends `request`, and once more on a new connection when the first one broke
    /// before any answer came: a kept-alive connection the server closed just as it was
    /// reused (llama.cpp's server closes one idle for 5 s, reqwest keeps it for 90 s) is
    /// not the server being unreachable. Asking a model again has no effect beyond the
    /// work, so a request that did reach it can be sent twice.
    async fn send(
        &self,
        mut request: reqwest::RequestBuilder,
        auth: Option<&HeaderValue>,
    ) -> Result<Response, EndpointError> {
        if let Some(auth) = auth {
            request = request.header(header::AUTHORIZATION, auth.clone());
        }
        let again = request.try_clone();
        match (self.send_once(request).await, again) {
            (Err(EndpointError::Unreachable(error)), Some(again)) if broke_off(&error) => {
                self.send_once(again).await
            }
            (sent, _) => sent,
        }
    }

    async fn send_once(&self, request: reqwest::RequestBuilder) -> Result<Response, EndpointError> {
        let sent = match self.time_limit {
            TimeLimit::EachWait(limit) => tokio::time::timeout(limit, request.send())
                .await
                .map_err(|_| EndpointError::TimedOut(limit))?,
            TimeLimit::Whole(limit) => request.timeout(limit).send().await,
        };
        sent.map_err(|error| {
            if error.is_timeout() {
                EndpointError::TimedOut(self.time_limit.duration())
            } else {
                EndpointError::Unreachable(error)
            }
        })
    }

    /// `response` when its status is a success; otherwise the status with its body.
    pub async fn check(&self, mut response: Response) -> Result<Response, EndpointError> {
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body = self.read_bytes(&mut response).await;
        Err(EndpointError::Status { status, body })
    }

    /// `POST` of a JSON `body` to `route`, its answer [checked](Endpoint::check), read as
    /// text and parsed as JSON: leniently, an answer that is JSON but for numbers written
    /// as `NaN`, `Infinity` or `-Infinity` (as Python writes them) is read with those as
    /// strings ([`nonfinite`]).
    pub async fn post_json(
        &self,
        route: Route,
        body: impl Into<reqwest::Body>,
        auth: Option<&HeaderValue>,
    ) -> Result<JsonAnswer, EndpointError> {
        let response = self.post(route, body, auth).await?;
        let mut response = self.check(response).await?;
        let text = self
            .read_text(&mut response)
            .await
            .map_err(EndpointError::Answer)?;
        match nonfinite::parse_lenient(&text) {
            Ok(json) => Ok(JsonAnswer { json, text }),
            Err(error) => Err(EndpointError::NotJson { error, text }),
        }
    }

    /// The next piece of an answer's body, `None` at its end.
    pub async fn next_piece(&self, response: &mut Response) -> Result<Option<Bytes>, AnswerError> {
        answer::next_piece(response, self.time_limit.piece_wait()).await
    }

    /// An answer's whole body, within the size limit.
    pub async fn read_bytes(&self, response: &mut Response) -> Result<Vec<u8>, AnswerError> {
        answer::read_bytes(
            response,
            self.max_response_bytes,
            self.time_limit.piece_wait(),
        )
        .await
    }

    /// An answer's whole body as text: within the size limit, and UTF-8.
    pub async fn read_text(&self, response: &mut Response) -> Result<String, AnswerError> {
        answer::read_text(
            response,
            self.max_response_bytes,
            self.time_limit.piece_wait(),
        )
        .await
    }
}

/// An error and its sources, joined: reqwest's own message alone rarely says what failed.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Whether `error` is a connection that broke while a request was sent or its answer's
/// head awaited: not a failure to connect, a timeout, or a request that could not be built.
fn broke_off(error: &reqwest::Error) -> bool {
    error.is_request() && !error.is_connect() && !error.is_timeout() && !error.is_builder()
}
