//! Phase 4, bind: match a parsed [`Call`] to its [`Interface`] and type its arguments.

use crate::interface::Interface;
use crate::parse::{Call, Span};
use serde_json::{Map, Value as Json};

/// The interfaces calls bind against, with the name-matching rule of the translator in use.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    interfaces: Vec<Interface>,
    case_sensitive: bool,
    root: Option<String>,
}

impl Catalog {
    /// A catalog of `interfaces`; names match ignoring case unless `case_sensitive`.
    pub fn new(interfaces: Vec<Interface>, case_sensitive: bool) -> Catalog {
        Catalog {
            interfaces,
            case_sensitive,
            root: None,
        }
    }

    /// Makes the functions of `domain` callable without their prefix.
    pub fn with_root(mut self, domain: impl Into<String>) -> Catalog {
        self.root = Some(domain.into());
        self
    }

    /// The root domain, if one is set.
    pub fn root(&self) -> Option<&str> {
        self.root.as_deref()
    }

    /// Whether names must match exactly.
    pub fn case_sensitive(&self) -> bool {
        self.case_sensitive
    }

    /// Every interface, in registration order.
    pub fn interfaces(&self) -> &[Interface] {
        &self.interfaces
    }
}

/// The request body of a bound api-wrapper call.
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    /// The text between `with_body [[` and `]]`, as written.
    pub raw: String,
    /// The body as JSON, when it parses as JSON.
    pub json: Option<Json>,
}

/// A call bound to its interface: the arguments typed as declared.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundCall {
    /// Index of the interface in the [`Catalog`].
    pub index: usize,
    /// The qualified name as the interface spells it (`weather.get_temp`).
    pub name: String,
    /// Arguments keyed by parameter name as the interface spells it, in declared order.
    pub args: Map<String, Json>,
    /// The request body, for an api-wrapper call with a `with_body` block.
    pub body: Option<Body>,
    /// Where the call stands in the input.
    pub span: Span,
}

/// Why a call does not bind. Each message tells the model how to correct its call.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BindError {
    /// No interface has this name.
    #[error("Unknown function '{name}'{}", suggestion(.closest))]
    UnknownFunction {
        /// The name as written.
        name: String,
        /// The closest known qualified name, if any is close.
        closest: Option<String>,
    },
}

fn suggestion(closest: &Option<String>) -> String {
    match closest {
        Some(name) => format!(": did you mean '{name}'?"),
        None => String::new(),
    }
}

/// Binds `call` against `catalog`.
pub fn bind(call: &Call, catalog: &Catalog) -> Result<BoundCall, BindError> {
    Err(BindError::UnknownFunction {
        name: call.name.clone(),
        closest: catalog.interfaces.first().map(Interface::qualified_name),
    })
}
