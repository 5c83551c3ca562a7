//! Building an [`HttpBox`]: the builder, every check of the base URL, the headers and the
//! endpoints, and the client with its redirect policy.

use super::path::{parse_template, path_param, under_path, Piece};
use super::tool::{Endpoint, HttpBox};
use crate::redact::Redactor;
use atfunc::interface::{Interface, Location};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Url};
use serde_json::Value as Json;
use std::fmt;
use std::time::Duration;

/// How long a request may take, answer included, when no limit is set.
pub const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest response body read when no limit is set: 1 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 1 << 20;

/// How many redirects (to the same origin) are followed when no limit is set.
pub const DEFAULT_MAX_REDIRECTS: usize = 5;

/// Why an [`HttpBox`] could not be built: every problem, each naming the field (and the
/// function) it is about. No message quotes a header's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .problems.join("; "))]
pub struct HttpBoxError {
    /// One message per problem.
    pub problems: Vec<String>,
}

/// Builds an [`HttpBox`]; see [`HttpBox::builder`].
pub struct HttpBoxBuilder {
    name: String,
    base_url: String,
    headers: Vec<(String, String, bool)>,
    endpoints: Vec<(Interface, String, String)>,
    timeout: Duration,
    max_response_bytes: usize,
    max_redirects: usize,
}

impl fmt::Debug for HttpBoxBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpBoxBuilder")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field(
                "headers",
                &self
                    .headers
                    .iter()
                    .map(|(name, _, _)| name)
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl HttpBox {
    /// Starts a box named `name` for the API at `base_url` (an `http` or `https` URL; an
    /// endpoint's path is appended to it).
    pub fn builder(name: impl Into<String>, base_url: impl Into<String>) -> HttpBoxBuilder {
        HttpBoxBuilder {
            name: name.into(),
            base_url: base_url.into(),
            headers: Vec::new(),
            endpoints: Vec::new(),
            timeout: DEFAULT_HTTP_TIMEOUT,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_redirects: DEFAULT_MAX_REDIRECTS,
        }
    }

    /// The base URL endpoints' paths are appended to.
    pub fn base_url(&self) -> &str {
        self.base.as_str()
    }
}

impl HttpBoxBuilder {
    /// Sends a header with every request. Its value is not a secret: it may appear in
    /// debug output. Use [`secret_header`](HttpBoxBuilder::secret_header) for credentials.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> HttpBoxBuilder {
        self.headers.push((name.into(), value.into(), false));
        self
    }

    /// Sends a header whose value is a secret with every request: never shown, and blanked
    /// out of responses and errors that echo it.
    pub fn secret_header(
        mut self,
        name: impl Into<String>,
        value: impl Into<String>,
    ) -> HttpBoxBuilder {
        self.headers.push((name.into(), value.into(), true));
        self
    }

    /// Adds a function: `interface` (its domain must be the box's name) called as
    /// `method` (`GET`, `POST`, ...) on `path`, which starts with `/` and may hold
    /// `{param}` placeholders.
    pub fn endpoint(
        mut self,
        interface: Interface,
        method: impl Into<String>,
        path: impl Into<String>,
    ) -> HttpBoxBuilder {
        self.endpoints.push((interface, method.into(), path.into()));
        self
    }

    /// How long one request may take, the response body included (default 30 s).
    pub fn timeout(mut self, limit: Duration) -> HttpBoxBuilder {
        self.timeout = limit;
        self
    }

    /// The largest response body accepted, in bytes (default 1 MiB).
    pub fn max_response_bytes(mut self, max: usize) -> HttpBoxBuilder {
        self.max_response_bytes = max;
        self
    }

    /// How many redirects within the base URL's origin are followed (default 5; 0 follows
    /// none).
    pub fn max_redirects(mut self, max: usize) -> HttpBoxBuilder {
        self.max_redirects = max;
        self
    }

    /// Checks everything and builds the box; every problem is reported at once.
    pub fn build(self) -> Result<HttpBox, HttpBoxError> {
        let mut problems = Vec::new();
        let base = match parse_base_url(&self.base_url) {
            Ok(url) => Some(url),
            Err(message) => {
                problems.push(format!("field 'base_url' {message}"));
                None
            }
        };
        let mut headers = HeaderMap::new();
        let mut header_names = Vec::new();
        let mut secrets = Vec::new();
        for (name, value, secret) in &self.headers {
            let Ok(header) = HeaderName::from_bytes(name.as_bytes()) else {
                problems.push(format!(
                    "field 'headers': '{name}' is not a valid header name"
                ));
                continue;
            };
            match HeaderValue::from_str(value) {
                Ok(mut header_value) => {
                    header_value.set_sensitive(*secret);
                    headers.append(header, header_value);
                }
                // The value is never quoted: it may be a secret.
                Err(_) => problems.push(format!(
                    "field 'headers': the value of '{name}' is not a valid header value (control characters or a line break?)"
                )),
            }
            if *secret {
                secrets.push(value.clone());
            }
            header_names.push((name.clone(), *secret));
        }
        let mut endpoints = Vec::new();
        for (interface, method, path) in self.endpoints {
            let function = interface.name.clone();
            let method = match parse_method(&method) {
                Ok(method) => Some(method),
                Err(message) => {
                    problems.push(format!("function '{function}': field 'method' {message}"));
                    None
                }
            };
            let template = match parse_template(&path) {
                Ok(template) => Some(template),
                Err(message) => {
                    problems.push(format!("function '{function}': field 'path' {message}"));
                    None
                }
            };
            if let Some(template) = &template {
                for message in check_endpoint(&interface, template) {
                    problems.push(format!("function '{function}': {message}"));
                }
            }
            if let (Some(method), Some(template)) = (method, template) {
                endpoints.push(Endpoint {
                    interface,
                    method,
                    template,
                    path,
                });
            }
        }
        let client = match &base {
            Some(base) => match build_client(base, &self.timeout, self.max_redirects) {
                Ok(client) => Some(client),
                Err(e) => {
                    problems.push(format!("the HTTP client could not be set up: {e}"));
                    None
                }
            },
            None => None,
        };
        match (base, client) {
            (Some(base), Some(client)) if problems.is_empty() => Ok(HttpBox {
                name: self.name,
                base,
                client,
                headers,
                header_names,
                redactor: Redactor::new(&secrets),
                endpoints,
                timeout: self.timeout,
                max_response_bytes: self.max_response_bytes,
            }),
            _ => Err(HttpBoxError { problems }),
        }
    }
}

fn parse_base_url(text: &str) -> Result<Url, String> {
    let found = || format!("found {}", Json::String(text.to_owned()));
    let url = Url::parse(text).map_err(|_| format!("must be an http(s) URL, {}", found()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("must be an http(s) URL, {}", found()));
    }
    if url.host_str().is_none() {
        return Err(format!("must name a host, {}", found()));
    }
    if !url.username().is_empty() || url.password().is_some() {
        // Not quoted: the URL holds a credential.
        return Err(String::from(
            "must not hold a user name or password; send credentials in a header read from an environment variable",
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(format!(
            "must not have a query or fragment (endpoints add their own), {}",
            found()
        ));
    }
    Ok(url)
}

fn parse_method(text: &str) -> Result<Method, String> {
    let upper = text.trim().to_ascii_uppercase();
    match upper.as_str() {
        "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD" | "OPTIONS" => {
            Method::from_bytes(upper.as_bytes()).map_err(|e| e.to_string())
        }
        _ => Err(format!(
            "must be GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS, found {}",
            Json::String(text.to_owned())
        )),
    }
}

/// Placeholders name required parameters; path parameters appear in the path.
fn check_endpoint(interface: &Interface, template: &[Piece]) -> Vec<String> {
    let mut problems = Vec::new();
    let placeholders: Vec<&str> = template
        .iter()
        .filter_map(|piece| match piece {
            Piece::Param(name) => Some(name.as_str()),
            Piece::Text(_) => None,
        })
        .collect();
    for name in &placeholders {
        match path_param(interface, name) {
            None => problems.push(format!(
                "field 'path': the placeholder {{{name}}} names no parameter of the function"
            )),
            Some(param) if !param.required => problems.push(format!(
                "field 'path': the placeholder {{{name}}} names an optional parameter; path parameters must be required"
            )),
            Some(_) => {}
        }
    }
    for param in &interface.params {
        let placed = placeholders
            .iter()
            .any(|name| *name == param.name || *name == param.original_name());
        if param.location == Location::Path && !placed {
            problems.push(format!(
                "path parameter '{}' has no {{{}}} placeholder in field 'path'",
                param.name, param.name
            ));
        }
    }
    problems
}

/// Refuses a redirect; the message reaches the model.
#[derive(Debug)]
pub(super) struct RedirectRefused(String);

impl fmt::Display for RedirectRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RedirectRefused {}

fn build_client(
    base: &Url,
    timeout: &Duration,
    max_redirects: usize,
) -> Result<reqwest::Client, reqwest::Error> {
    let origin = base.origin();
    let base_path = base.path().trim_end_matches('/').to_owned();
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.url().origin() != origin {
            // Headers (secrets among them) must not travel to another site.
            attempt.error(RedirectRefused(String::from(
                "the server redirected to another site, which is not followed",
            )))
        } else if !under_path(&base_path, attempt.url().path()) {
            // Nor to another application on the same site.
            attempt.error(RedirectRefused(String::from(
                "the server redirected outside the API's base path, which is not followed",
            )))
        } else if attempt.previous().len() > max_redirects {
            attempt.error(RedirectRefused(format!(
                "the server redirected more than {max_redirects} times"
            )))
        } else {
            attempt.follow()
        }
    });
    reqwest::Client::builder()
        .redirect(policy)
        .connect_timeout((*timeout).min(Duration::from_secs(10)))
        .timeout(*timeout)
        .build()
}
