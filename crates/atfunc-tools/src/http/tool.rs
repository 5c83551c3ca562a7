//! The HTTP box as the registry sees it: its endpoints, their interfaces, a call run
//! within the time limit.

use super::path::Piece;
use crate::redact::Redactor;
use crate::toolbox::{CallContext, ToolBox, ToolError};
use async_trait::async_trait;
use atfunc::interface::Interface;
use reqwest::header::HeaderMap;
use reqwest::{Method, Url};
use serde_json::{Map, Value as Json};
use std::fmt;
use std::time::Duration;

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
/// - Secret headers ([`HttpBoxBuilder::secret_header`](super::HttpBoxBuilder::secret_header)) are marked sensitive, left out of
///   debug output, and any echo of their value in a response or error is replaced by
///   `[redacted]`.
///
/// ```no_run
/// use atfunc_tools::HttpBox;
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
    pub(super) name: String,
    pub(super) base: Url,
    pub(super) client: reqwest::Client,
    pub(super) headers: HeaderMap,
    pub(super) header_names: Vec<(String, bool)>,
    /// Finds the secret header values in what comes back.
    pub(super) redactor: Redactor,
    pub(super) endpoints: Vec<Endpoint>,
    pub(super) timeout: Duration,
    pub(super) max_response_bytes: usize,
}

pub(super) struct Endpoint {
    pub(super) interface: Interface,
    pub(super) method: Method,
    pub(super) template: Vec<Piece>,
    /// The template as written, for debug output.
    pub(super) path: String,
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
