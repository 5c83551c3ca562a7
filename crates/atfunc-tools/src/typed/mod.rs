//! Typed tools (feature `typed`): Rust functions whose arguments are a struct.
//!
//! The arguments struct derives `serde::Deserialize` and `schemars::JsonSchema`; its JSON
//! Schema becomes the tool's [`Interface`](atfunc::interface::Interface) through [`load_interfaces`](atfunc::interface::load_interfaces), the same path every
//! imported JSON Schema takes, so a typed tool is described to the model exactly as the same
//! schema in a tools file would be. Doc comments become descriptions: the struct's for the
//! function, each field's for its parameter.
//!
//! `schemars` comes with this crate, re-exported as [`atfunc_tools::schemars`](crate::schemars):
//! `use atfunc_tools::schemars;` puts it in scope for the derive, which writes its paths
//! from the name `schemars`, so no dependency of your own is needed and the version always
//! matches. Where that name cannot be in scope, name the path on the type instead:
//! `#[schemars(crate = "atfunc_tools::schemars")]`. `serde` is your own dependency.
//!
//! # What the model gets back
//!
//! A tool returns `Result<T, E>` with `T: Serialize` and `E: Display`, and fails the way
//! every other tool does:
//!
//! - `Ok(value)` → the value as JSON, as a [`FnBox`](crate::FnBox) closure's
//!   would be. A [`ToolOutput`](crate::ToolOutput) is the model's value and elements for the client beside it
//!   (a card, an image; see [`CallContext::add_element`](crate::CallContext::add_element)): the model reads the value alone.
//! - `Err(error)` → [`ToolError::Error`](crate::ToolError::Error), keeping the
//!   error whole ([`ToolError::downcast_ref`](crate::ToolError::downcast_ref)) (a `String` or `&str` message, which has none, is
//!   [`ToolError::Failed`](crate::ToolError::Failed)). The error is anything that
//!   boxes into a `Box<dyn Error + Send + Sync>`: a message, a `std::io::Error`, an
//!   `anyhow::Error`, your own error type. The model reads its chain of causes, outermost
//!   first, as anyhow's `{:#}` writes it (`loading the profile: reading settings.toml: no
//!   such file`): the result block reads `Returned: Error: ...`,
//!   [`Outcome::is_error`](crate::Outcome::is_error) is true and the registry's
//!   statistics count it.
//!
//! Arguments that do not deserialise are the model's mistake, not the tool's failure: a
//! refusal, [`ToolError::Bind`](crate::ToolError::Bind) with
//! [`BindError::InvalidArguments`](atfunc::bind::BindError::InvalidArguments), counted as
//! refused like a call the binder refuses. The message names the argument by its path
//! (`mailbox.address`, `items[2].qty`, `shape.Circle.r` inside an enum's variant) and the
//! type it needs.
//!
//! # Ids from type names
//!
//! A [`TypedTool`]'s function name defaults to its type's name without a `Tool` suffix, in
//! snake case, acronyms kept whole: `SendEmailTool` → `send_email`, `HTTPFetchTool` →
//! `http_fetch` (see [`tool_id`]).
//!
//! ```
//! use atfunc_tools::typed::TypedBox;
//! use atfunc_tools::{json, schemars, CallContext, ToolBox};
//!
//! /// Add two numbers.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add {
//!     /// The first number.
//!     a: f64,
//!     /// The second number.
//!     b: f64,
//! }
//!
//! let tools = TypedBox::new("math")
//!     .function("add", |args: Add| Ok::<_, String>(args.a + args.b))
//!     .build()
//!     .unwrap();
//! let add = &tools.interfaces(&CallContext::new())[0];
//! assert_eq!(add.description, "Add two numbers.");
//! assert_eq!(add.params[0].description, "The first number.");
//!
//! let args = json!({"a": 2, "b": 0.5}).as_object().unwrap().clone();
//! let result = futures::executor::block_on(tools.call("add", args, &CallContext::new()));
//! assert_eq!(result.unwrap(), json!(2.5));
//! ```

mod schema;
mod tool_box;

pub use schema::interface_of;
pub use tool_box::{IntoToolOutput, TypedBox};

use crate::CallContext;
use atfunc::interface::LoadError;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::sync::Arc;

/// A tool written as a Rust type: its arguments struct, what it returns, and how it runs.
///
/// ```
/// use atfunc_tools::CallContext;
/// use atfunc_tools::typed::TypedTool;
///
/// /// Fetch a web page.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Fetch {
///     /// The page's address.
///     url: String,
/// }
///
/// struct HTTPFetchTool;
///
/// impl TypedTool for HTTPFetchTool {
///     type Args = Fetch;
///     type Output = String;
///     type Error = String;
///
///     async fn call(&self, args: Fetch, _ctx: &CallContext) -> Result<String, String> {
///         Err(format!("no network here to fetch {}", args.url))
///     }
/// }
///
/// assert_eq!(HTTPFetchTool.id(), "http_fetch");
/// ```
pub trait TypedTool: Send + Sync + 'static {
    /// The arguments, deserialised from the model's call; their schema is the interface.
    type Args: DeserializeOwned + JsonSchema + Send;
    /// What a successful call returns: a value sent as its JSON, or a [`ToolOutput`](crate::ToolOutput).
    type Output: IntoToolOutput;
    /// Why a call failed: any error value (`std::io::Error`, `anyhow::Error`, your own
    /// error type) or a message (`String`, `&'static str`). An error becomes
    /// [`ToolError::Error`](crate::ToolError::Error), which keeps it whole
    /// ([`ToolError::downcast_ref`](crate::ToolError::downcast_ref)) and shows the model its chain of causes; a message becomes
    /// [`ToolError::Failed`](crate::ToolError::Failed).
    type Error: Into<Box<dyn std::error::Error + Send + Sync>>;

    /// The function's name: by default [`tool_id`] of the type's name.
    fn id(&self) -> String {
        tool_id(std::any::type_name::<Self>())
    }

    /// What the function does. `None` (the default) takes the doc comment of
    /// [`Args`](TypedTool::Args).
    fn description(&self) -> Option<String> {
        None
    }

    /// Runs the tool.
    fn call(
        &self,
        args: Self::Args,
        ctx: &CallContext,
    ) -> impl Future<Output = Result<Self::Output, Self::Error>> + Send;
}

/// A tool id from a type name: the last path segment without generics, without a `Tool`
/// suffix, in snake case. A run of capitals is one word (`HTTPFetch` → `http_fetch`), the
/// last capital before a lower-case letter starting the next one (`XMLHttpRequest` →
/// `xml_http_request`); digits stay with what they follow (`Base64Encode` →
/// `base64_encode`).
///
/// ```
/// use atfunc_tools::typed::tool_id;
/// assert_eq!(tool_id("SendEmailTool"), "send_email");
/// assert_eq!(tool_id("HTTPFetchTool"), "http_fetch");
/// assert_eq!(tool_id("my_crate::tools::GetURLTool<u8>"), "get_url");
/// ```
pub fn tool_id(type_name: &str) -> String {
    let base = type_name.split('<').next().unwrap_or(type_name);
    let base = base.rsplit("::").next().unwrap_or(base);
    let base = match base.strip_suffix("Tool") {
        Some(rest) if !rest.is_empty() => rest,
        _ => base,
    };
    let chars: Vec<char> = base.chars().collect();
    let mut out = String::with_capacity(base.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev = i.checked_sub(1).and_then(|p| chars.get(p)).copied();
            let next = chars.get(i + 1).copied();
            let starts_word = match prev {
                None | Some('_') => false,
                Some(p) if p.is_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_uppercase() => next.is_some_and(char::is_lowercase),
                Some(_) => false,
            };
            if starts_word {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Why a typed tool could not be registered.
///
/// [`Registry::register`](crate::Registry::register) reports each as a
/// [`BuildError`](crate::BuildError) of [`RegisterError::Build`](crate::RegisterError::Build);
/// [`BuildError::downcast_ref`](crate::BuildError::downcast_ref) gives it back.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TypedError {
    /// The arguments type is not a struct with named fields (or `()`).
    #[error("the arguments of '{name}' must be a struct with named fields; their JSON Schema is {schema}")]
    NotAnObject {
        /// The function's qualified name.
        name: String,
        /// The schema that was generated.
        schema: String,
    },
    /// The schema does not make a valid interface (a name that is not an identifier, a
    /// type atfunc does not know).
    #[error("the interface of '{name}' is invalid: {source}")]
    Interface {
        /// The function's qualified name.
        name: String,
        /// Every problem found; shared, so that a `TypedError` is `Clone`.
        #[source]
        source: Arc<LoadError>,
    },
    /// The box already has a function of that name (ignoring case: calls match names
    /// ignoring case).
    #[error("tool box '{box_name}' already has a function '{name}'")]
    Duplicate {
        /// The box's name.
        box_name: String,
        /// The function's name.
        name: String,
    },
}
