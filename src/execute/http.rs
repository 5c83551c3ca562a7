//! The HTTP tool box: each function is an endpoint of an HTTP API (an api-wrapper).
//!
//! A call becomes one request: path parameters substituted into the endpoint's path,
//! percent-encoded so that no value can add a segment; query parameters in the query
//! string; the `with_body [[ ... ]]` block as the body. Headers whose values are secrets
//! never appear in results, errors or debug output.

use super::binary::{self, Binary};
use super::redact::Redactor;
use super::toolbox::{CallContext, ToolBox, ToolError};
use crate::interface::{Interface, Kind, Location, Param};
use crate::messages::{json_kind, qualified};
use async_trait::async_trait;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE, USER_AGENT};
use reqwest::{Method, Url};
use serde_json::{Map, Value as Json};
use std::fmt;
use std::time::Duration;

/// How long a request may take, answer included, when no limit is set.
pub const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest response body read when no limit is set: 1 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 1 << 20;

/// How many redirects (to the same origin) are followed when no limit is set.
pub const DEFAULT_MAX_REDIRECTS: usize = 5;

/// How much of a response body an error quotes, in characters.
const EXCERPT_CHARS: usize = 300;

/// Bytes of a path value left as they are; everything else, `/` and `%` included, is
/// percent-encoded. `.` stays readable, and a segment that is only dots is refused.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A tool box whose functions are endpoints of one HTTP API.
///
/// Built with [`HttpBox::builder`]. For each call:
///
/// - Parameters whose location is `path`, or whose name appears as `{name}` in the
///   endpoint's path, are substituted into it, percent-encoded: `/` becomes `%2F`, and a
///   segment that would be `.` or `..` is refused, so a value cannot reach another route.
/// - Parameters whose location is `query` go in the query string (an array repeats the
///   key). Plain parameters (from JSON Schema or `type: function` definitions) go in the
///   query string too, except for a `function` sent with POST, PUT or PATCH, where they
///   form the JSON body.
/// - The `with_body [[ ... ]]` block is the body: as JSON when it parses, else as text.
/// - The response body is the result (JSON when it parses, else text). A status that is not
///   a success is an error with the status and the beginning of the body. A binary body (an
///   `image/`, `audio/` or `video/` type, or bytes that are not UTF-8) goes to the client
///   whole as an element (see [`CallContext::add_element`]) and to the model as one line,
///   `[image: image/png, 1234 bytes]`. A body larger
///   than the limit (1 MiB by default) is refused. Redirects are followed only within the
///   base URL's origin and path (a base of `http://host/api` follows `/api/v2/x`, refuses
///   `/admin`), at most 5 times, so the headers go nowhere the base URL does not name. A request that takes longer than the limit (30 s
///   by default) ends with [`ToolError::Timeout`].
/// - Secret headers ([`HttpBoxBuilder::secret_header`]) are marked sensitive, left out of
///   debug output, and any echo of their value in a response or error is replaced by
///   `[redacted]`.
///
/// ```no_run
/// use atfunc::execute::HttpBox;
/// use atfunc::load_interfaces_str;
///
/// let interfaces = load_interfaces_str(r#"[{"domain": "api", "name": "get_user",
///     "type": "api-wrapper", "description": "A user of an organisation", "returns": "object",
///     "path_params": {"org": {"type": "string", "isRequired": true, "description": "Organisation"},
///                     "user": {"type": "string", "isRequired": true, "description": "User name"}}}]"#)?;
/// let token = std::env::var("API_TOKEN")?;
/// let api = HttpBox::builder("api", "https://api.example.com/v1")
///     .secret_header("Authorization", format!("Bearer {token}"))
///     .endpoint(interfaces[0].clone(), "GET", "/orgs/{org}/users/{user}")
///     .build()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct HttpBox {
    name: String,
    base: Url,
    client: reqwest::Client,
    headers: HeaderMap,
    header_names: Vec<(String, bool)>,
    /// Finds the secret header values in what comes back.
    redactor: Redactor,
    endpoints: Vec<Endpoint>,
    timeout: Duration,
    max_response_bytes: usize,
}

struct Endpoint {
    interface: Interface,
    method: Method,
    template: Vec<Piece>,
    /// The template as written, for debug output.
    path: String,
}

/// A part of an endpoint's path: text as written, or a parameter's value.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    Param(String),
}

impl fmt::Debug for HttpBox {
    // Header values stay out: some are secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpBox")
            .field("name", &self.name)
            .field("base_url", &self.base.as_str())
            .field(
                "headers",
                &self
                    .header_names
                    .iter()
                    .map(|(name, _)| name)
                    .collect::<Vec<_>>(),
            )
            .field(
                "endpoints",
                &self
                    .endpoints
                    .iter()
                    .map(|e| format!("{} {} {}", e.interface.name, e.method, e.path))
                    .collect::<Vec<_>>(),
            )
            .field("timeout", &self.timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish_non_exhaustive()
    }
}

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

/// `/users/{org}/repos` → text and parameter pieces.
fn parse_template(path: &str) -> Result<Vec<Piece>, String> {
    let quoted = || Json::String(path.to_owned());
    if !path.starts_with('/') {
        return Err(format!("must start with '/', found {}", quoted()));
    }
    if path.contains(['?', '#']) || path.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "must be a plain path (no query, fragment or spaces), found {}",
            quoted()
        ));
    }
    let mut pieces = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find(['{', '}']) {
        let (text, after) = rest.split_at(open);
        if after.starts_with('}') {
            return Err(format!("has a '}}' without its '{{' in {}", quoted()));
        }
        let after = after.get(1..).unwrap_or_default();
        let Some(close) = after.find('}') else {
            return Err(format!("has a '{{' without its '}}' in {}", quoted()));
        };
        let name = after.get(..close).unwrap_or_default();
        // The API's own spelling (`{user-id}`) is fine: it names the parameter as defined.
        if name.trim().is_empty() || name.contains('/') {
            return Err(format!(
                "has a placeholder {{{name}}} that is not a parameter name, in {}",
                quoted()
            ));
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text.to_owned()));
        }
        pieces.push(Piece::Param(name.to_owned()));
        rest = after.get(close + 1..).unwrap_or_default();
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest.to_owned()));
    }
    Ok(pieces)
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

/// The parameter a path placeholder names: by its name as defined (`{user-id}`) or as a
/// call writes it (`{user_id}`).
fn path_param<'a>(interface: &'a Interface, placeholder: &str) -> Option<&'a Param> {
    interface
        .params
        .iter()
        .find(|p| p.original_name() == placeholder)
        .or_else(|| interface.params.iter().find(|p| p.name == placeholder))
}

/// Refuses a redirect; the message reaches the model.
#[derive(Debug)]
struct RedirectRefused(String);

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

impl HttpBox {
    fn qualified(&self, function: &str) -> String {
        qualified(&self.name, function)
    }

    /// Blanks out every secret header value found in `text`, in any spelling
    /// [`Redactor`] knows.
    fn redact(&self, text: &str) -> String {
        self.redactor.redact(text)
    }

    /// Blanks out every secret in the strings (keys included) of a parsed body; whether
    /// anything was blanked.
    fn redact_json(&self, value: &mut Json) -> bool {
        self.redactor.redact_json(value)
    }

    async fn send(
        &self,
        endpoint: &Endpoint,
        args: &Map<String, Json>,
        ctx: &CallContext,
        qualified: &str,
    ) -> Result<Json, ToolError> {
        let interface = &endpoint.interface;
        let fail = |message: String| ToolError::Failed(format!("Function '{qualified}' {message}"));
        // Path.
        let mut path = String::new();
        for piece in &endpoint.template {
            match piece {
                Piece::Text(text) => path.push_str(text),
                Piece::Param(placeholder) => {
                    // Bound arguments are keyed by the names the definition spells.
                    let name = path_param(interface, placeholder)
                        .map_or(placeholder.as_str(), Param::original_name);
                    let value = args.get(name).ok_or_else(|| {
                        fail(format!(
                            "needs the path parameter '{name}'; give it a value"
                        ))
                    })?;
                    let text = path_value(value).ok_or_else(|| {
                        fail(format!(
                            "cannot put {} in the path as parameter '{name}'; give a string or a number",
                            json_kind(value)
                        ))
                    })?;
                    if text.is_empty() {
                        return Err(fail(format!(
                            "needs a non-empty value for the path parameter '{name}'"
                        )));
                    }
                    path.extend(utf8_percent_encode(&text, SEGMENT));
                }
            }
        }
        if path
            .split('/')
            .any(|segment| segment == "." || segment == "..")
        {
            return Err(fail(String::from(
                "was given a path parameter of '.' or '..', which is not allowed; give the name itself",
            )));
        }
        let url = join_url(&self.base, &path).ok_or_else(|| {
            fail(String::from(
                "was given path parameters that lead outside the API; give plain names",
            ))
        })?;
        // Query and body fields.
        let in_path: Vec<&str> = endpoint
            .template
            .iter()
            .filter_map(|piece| match piece {
                Piece::Param(placeholder) => Some(
                    path_param(interface, placeholder)
                        .map_or(placeholder.as_str(), Param::original_name),
                ),
                Piece::Text(_) => None,
            })
            .collect();
        let plain_in_body = interface.kind == Kind::Function
            && matches!(endpoint.method, Method::POST | Method::PUT | Method::PATCH);
        let mut query: Vec<(String, String)> = Vec::new();
        let mut fields = Map::new();
        for param in &interface.params {
            // The API gets each argument under the name its definition spells.
            let name = param.original_name();
            if in_path.contains(&name) {
                continue;
            }
            let Some(value) = args.get(name) else {
                continue;
            };
            match param.location {
                Location::Path => {}
                Location::Body => {
                    fields.insert(name.to_owned(), value.clone());
                }
                Location::Param if plain_in_body => {
                    fields.insert(name.to_owned(), value.clone());
                }
                Location::Query | Location::Param => push_query(&mut query, name, value),
            }
        }
        let mut url = url;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        let shown = format!("{} {}", endpoint.method, url.path());
        // Where a binary answer came from, for its element: no credentials, no query.
        let url_shown = format!("{}{}", url.origin().ascii_serialization(), url.path());
        let mut request = self
            .client
            .request(endpoint.method.clone(), url)
            .headers(self.headers.clone());
        if !self.headers.contains_key(USER_AGENT) {
            request = request.header(USER_AGENT, concat!("atfunc/", env!("CARGO_PKG_VERSION")));
        }
        if let Some(body) = &ctx.body {
            request = match &body.json {
                Some(json) => request.json(json),
                None => {
                    let request = if self.headers.contains_key(CONTENT_TYPE) {
                        request
                    } else {
                        request.header(CONTENT_TYPE, "text/plain; charset=utf-8")
                    };
                    request.body(body.raw.clone())
                }
            };
        } else if !fields.is_empty() {
            request = request.json(&Json::Object(fields));
        }
        let mut response = request
            .send()
            .await
            .map_err(|e| self.transport_error(&e, qualified, "could not reach the API", &shown))?;
        let status = response.status();
        let media_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(binary::media_type);
        if let Some(length) = response.content_length() {
            if length > self.max_response_bytes as u64 {
                return Err(self.too_large(qualified, &shown, status));
            }
        }
        let mut bytes: Vec<u8> = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if bytes.len() + chunk.len() > self.max_response_bytes {
                        return Err(self.too_large(qualified, &shown, status));
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => {
                    return Err(self.transport_error(
                        &e,
                        qualified,
                        "got a broken answer from the API",
                        &shown,
                    ))
                }
            }
        }
        let text = self.redact(&String::from_utf8_lossy(&bytes));
        let mut parsed = serde_json::from_str::<Json>(&text).ok();
        let escaped_secret = parsed.as_mut().is_some_and(|value| self.redact_json(value));
        if !status.is_success() {
            let reason = status.canonical_reason().unwrap_or("");
            let mut message = format!("failed: HTTP {} {reason} from {shown}", status.as_u16());
            // A secret hidden in JSON escapes is quoted from the blanked JSON instead.
            let decoded = parsed
                .filter(|_| escaped_secret)
                .map(|value| value.to_string());
            let body = decoded.as_deref().unwrap_or(&text).trim();
            if !body.is_empty() {
                message.push_str(": ");
                message.push_str(&excerpt(body));
            }
            return Err(fail(message));
        }
        if let Some(binary) = Binary::of(media_type.as_deref(), &bytes) {
            return Ok(binary.hand_out(&bytes, Some(&url_shown), &self.redactor, ctx));
        }
        if text.trim().is_empty() {
            let reason = status.canonical_reason().unwrap_or("");
            return Ok(Json::String(
                format!("HTTP {} {reason}", status.as_u16())
                    .trim_end()
                    .to_owned(),
            ));
        }
        Ok(parsed.unwrap_or(Json::String(text)))
    }

    fn too_large(&self, qualified: &str, shown: &str, status: reqwest::StatusCode) -> ToolError {
        ToolError::Failed(format!(
            "Function '{qualified}' got an answer larger than {} (HTTP {} from {shown}), which was refused; ask for less (a filter, a smaller page)",
            human_bytes(self.max_response_bytes),
            status.as_u16()
        ))
    }

    /// A failed exchange as the model reads it; the client's own time limit is the box's.
    fn transport_error(
        &self,
        error: &reqwest::Error,
        qualified: &str,
        what: &str,
        shown: &str,
    ) -> ToolError {
        if error.is_timeout() {
            return ToolError::Timeout {
                name: qualified.to_owned(),
                limit: self.timeout,
            };
        }
        ToolError::Failed(format!(
            "Function '{qualified}' {what} ({shown}): {}",
            self.describe(error)
        ))
    }

    /// A transport error in a few words, without the URL's query and without secrets.
    fn describe(&self, error: &reqwest::Error) -> String {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
        while let Some(current) = source {
            if let Some(refused) = current.downcast_ref::<RedirectRefused>() {
                return refused.to_string();
            }
            source = current.source();
        }
        if error.is_connect() {
            return String::from("the connection failed; the API may be down");
        }
        // The innermost cause is the most specific and carries no URL.
        let mut innermost: &(dyn std::error::Error + 'static) = error;
        while let Some(next) = innermost.source() {
            innermost = next;
        }
        self.redact(&innermost.to_string())
    }
}

/// Whether `path` is `base` (without its trailing `/`) or below it, segment-wise: `/api`
/// holds `/api/x`, not `/apix`.
fn under_path(base: &str, path: &str) -> bool {
    base.is_empty()
        || path
            .strip_prefix(base)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Appends `path` to the base URL's path; `None` if the result leaves the base.
fn join_url(base: &Url, path: &str) -> Option<Url> {
    let base_path = base.path().trim_end_matches('/');
    let mut url = base.clone();
    url.set_path(&format!("{base_path}{path}"));
    let stays = url.origin() == base.origin()
        && url.path().starts_with(base_path)
        && url.path().len() >= base_path.len();
    stays.then_some(url)
}

fn path_value(value: &Json) -> Option<String> {
    match value {
        Json::String(s) => Some(s.clone()),
        Json::Number(n) => Some(n.to_string()),
        Json::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn push_query(query: &mut Vec<(String, String)>, name: &str, value: &Json) {
    match value {
        Json::Null => {}
        Json::String(s) => query.push((name.to_owned(), s.clone())),
        Json::Array(items) => {
            for item in items {
                match item {
                    Json::Array(_) | Json::Object(_) => {
                        query.push((name.to_owned(), item.to_string()))
                    }
                    other => push_query(query, name, other),
                }
            }
        }
        other => query.push((name.to_owned(), other.to_string())),
    }
}

/// `1 MiB`, `64 KiB`, `1000 bytes`.
fn human_bytes(n: usize) -> String {
    if n >= 1 << 20 && n & ((1 << 20) - 1) == 0 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n & ((1 << 10) - 1) == 0 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// The beginning of a text, cut at a character boundary.
fn excerpt(text: &str) -> String {
    match text.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}…", text.get(..cut).unwrap_or_default()),
        None => text.to_owned(),
    }
}

#[async_trait]
impl ToolBox for HttpBox {
    fn name(&self) -> &str {
        &self.name
    }

    fn interfaces(&self, _ctx: &CallContext) -> Vec<Interface> {
        self.endpoints
            .iter()
            .map(|endpoint| endpoint.interface.clone())
            .collect()
    }

    async fn call(
        &self,
        function: &str,
        args: Map<String, Json>,
        ctx: &CallContext,
    ) -> Result<Json, ToolError> {
        let qualified = self.qualified(function);
        let Some(endpoint) = self.endpoints.iter().find(|e| e.interface.name == function) else {
            return Err(ToolError::unknown(qualified));
        };
        match tokio::time::timeout(self.timeout, self.send(endpoint, &args, ctx, &qualified)).await
        {
            Ok(result) => result,
            Err(_) => Err(ToolError::Timeout {
                name: qualified,
                limit: self.timeout,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_split_into_text_and_parameters() {
        assert_eq!(
            parse_template("/users/{org}/repos/{repo}.json"),
            Ok(vec![
                Piece::Text("/users/".into()),
                Piece::Param("org".into()),
                Piece::Text("/repos/".into()),
                Piece::Param("repo".into()),
                Piece::Text(".json".into()),
            ])
        );
        assert!(parse_template("users").is_err());
        assert!(parse_template("/a/{b").is_err());
        assert!(parse_template("/a/b}").is_err());
        assert!(parse_template("/a/{}").is_err());
        assert!(parse_template("/a?x=1").is_err());
    }

    #[test]
    fn path_values_cannot_add_segments() {
        let encoded: String = utf8_percent_encode("../a/b%2F c", SEGMENT).collect();
        assert_eq!(encoded, "..%2Fa%2Fb%252F%20c");
    }

    #[test]
    fn joined_urls_stay_under_the_base() {
        let base = Url::parse("http://127.0.0.1:1/api/v1/").unwrap();
        assert_eq!(
            join_url(&base, "/users/x").unwrap().as_str(),
            "http://127.0.0.1:1/api/v1/users/x"
        );
        assert!(join_url(&base, "/../../etc").is_none());
    }
}
