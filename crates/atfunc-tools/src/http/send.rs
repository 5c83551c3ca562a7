//! One request: the call's arguments put in the path, the query and the body, the answer
//! read within its size limit, and every failure told to the model without secrets.

use super::build::RedirectRefused;
use super::path::{join_url, path_param, path_value, Piece, SEGMENT};
use super::tool::{Endpoint, HttpBox};
use crate::binary::{self, Binary};
use crate::toolbox::{CallContext, ToolError};
use atfunc::interface::{Kind, Location, Param};
use atfunc::messages::{json_kind, qualified};
use percent_encoding::utf8_percent_encode;
use reqwest::header::{CONTENT_TYPE, USER_AGENT};
use reqwest::Method;
use serde_json::{Map, Value as Json};

/// How much of a response body an error quotes, in characters.
const EXCERPT_CHARS: usize = 300;

impl HttpBox {
    pub(super) fn qualified(&self, function: &str) -> String {
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

    pub(super) async fn send(
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
            atfunc::messages::human_bytes(self.max_response_bytes),
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

/// The beginning of a text, cut at a character boundary.
fn excerpt(text: &str) -> String {
    match text.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}…", text.get(..cut).unwrap_or_default()),
        None => text.to_owned(),
    }
}
