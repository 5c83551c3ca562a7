//! The HTTP tool box: each function is an endpoint of an HTTP API (an api-wrapper).
//!
//! A call becomes one request: path parameters substituted into the endpoint's path,
//! percent-encoded so that no value can add a segment; query parameters in the query
//! string; the `with_body [[ ... ]]` block as the body. Headers whose values are secrets
//! never appear in results, errors or debug output.
//!
//! One job per file: `tool` is the box as the registry sees it (its endpoints, a call
//! turned into a request), `build` checks a definition and builds the box, `path` turns an
//! endpoint's path template and a call's values into a URL under the base, and `send`
//! makes the request and reads the answer into a result or an error for the model.

mod build;
mod path;
mod send;
mod tool;

pub use build::{
    HttpBoxBuilder, HttpBoxError, DEFAULT_HTTP_TIMEOUT, DEFAULT_MAX_REDIRECTS,
    DEFAULT_MAX_RESPONSE_BYTES,
};
pub use tool::HttpBox;
