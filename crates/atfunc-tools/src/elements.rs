//! Elements: what a call shows the client (a card, an image, a table) beside the value the
//! model reads.
//!
//! A call's value goes into the model's result block; its elements never do. They travel
//! beside it to whoever runs the conversation: [`Outcome::elements`](super::Outcome), the
//! `elements` list of a call in `atfunc exec --json` and in the gateway's `atfunc` field.
//!
//! # The shape of an element
//!
//! An element is a JSON object with a string `type`; the rest depends on the type. atfunc
//! itself makes these (from MCP content, see [`McpBox`](super::McpBox)), and a tool may make
//! any other (`{"type": "card", "title": ...}`) for a client that knows it:
//!
//! | `type` | fields |
//! |---|---|
//! | `text` | `text` |
//! | `image`, `audio` | `mime_type`, `data` (base64) |
//! | `resource` | `uri` and `mime_type` (when known), `text` or `data` (base64) |
//! | `resource_link` | `uri`, `name`, `mime_type` (when known) |
//!
//! # How a tool adds one
//!
//! Every tool box gets a [`CallContext`]; [`CallContext::add_element`] adds an element to the
//! call the context belongs to. The registry gives each call a context that collects them,
//! so any box (a [`FnBox`](super::FnBox) closure, a typed tool, a box of your own) can add
//! elements without [`ToolBox::call`](super::ToolBox::call) returning anything but the
//! model's value, and wrappers that pass the context on pass the elements on too.
//!
//! ```
//! use atfunc_tools::{FnBox, Registry};
//! use atfunc::{json, Interface};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let registry = Registry::new();
//! registry.register(FnBox::new("chart").function(
//!     Interface::new("sales").in_domain("chart"),
//!     |_args, ctx| {
//!         ctx.add_element(json!({"type": "image", "mime_type": "image/svg+xml", "data": "PHN2Zy8+"}));
//!         Ok(json!("Sales rose 4% in March; the chart is on the user's screen."))
//!     },
//! )).unwrap();
//! let report = registry.execute_response("@chart.sales()").await;
//! assert!(!report.output.contains("image/svg+xml"));
//! assert_eq!(report.calls[0].elements[0]["type"], "image");
//! # });
//! ```

use super::toolbox::CallContext;
use serde_json::{json, Value as Json};
use std::sync::{Arc, Mutex, PoisonError};

/// A call's result split by who reads it: the value for the model and elements for the
/// client. `From<Json>` makes a plain value one without elements.
///
/// ```
/// use atfunc_tools::ToolOutput;
/// use atfunc::json;
///
/// let output = ToolOutput::new(json!({"temp": 21}))
///     .with_element(json!({"type": "card", "title": "Oslo", "body": "21 °C, sunny"}));
/// assert_eq!(output.value, json!({"temp": 21}));
/// assert_eq!(output.elements.len(), 1);
/// assert_eq!(ToolOutput::from(json!(1)).elements, Vec::<atfunc::serde_json::Value>::new());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ToolOutput {
    /// What the model reads in the call's result block.
    pub value: Json,
    /// What the client gets beside it, in order: each a JSON object with a string `type`.
    pub elements: Vec<Json>,
}

impl ToolOutput {
    /// A value without elements.
    pub fn new(value: Json) -> ToolOutput {
        ToolOutput {
            value,
            elements: Vec::new(),
        }
    }

    /// Adds an element (builder style).
    pub fn with_element(mut self, element: Json) -> ToolOutput {
        self.elements.push(element);
        self
    }

    /// A `text` element.
    pub fn text_element(text: impl Into<String>) -> Json {
        json!({"type": "text", "text": text.into()})
    }

    /// An `image` element; `data` is base64.
    pub fn image_element(mime_type: impl Into<String>, data: impl Into<String>) -> Json {
        json!({"type": "image", "mime_type": mime_type.into(), "data": data.into()})
    }
}

impl From<Json> for ToolOutput {
    fn from(value: Json) -> ToolOutput {
        ToolOutput::new(value)
    }
}

/// The elements of one call, shared by the clones of its context (a [`FnBox`](super::FnBox)
/// closure gets its own clone). Kept in the context's extensions under this private type, so
/// no caller's value can take its place.
#[derive(Debug, Clone, Default)]
struct Collected(Arc<Mutex<Vec<Json>>>);

impl CallContext {
    /// Adds an element for the client to this call's result; the model never sees it. The
    /// registry's calls collect elements; in a context that does not (one made with
    /// [`CallContext::new`] and not [`collecting_elements`](CallContext::collecting_elements)),
    /// the element is dropped.
    pub fn add_element(&self, element: Json) {
        if let Some(Collected(elements)) = self.get::<Collected>() {
            elements
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(element);
        }
    }

    /// Adds `output`'s elements to this call and gives back its value: how a box whose
    /// work yields a [`ToolOutput`] answers [`ToolBox::call`](super::ToolBox::call).
    pub fn add_output(&self, output: ToolOutput) -> Json {
        for element in output.elements {
            self.add_element(element);
        }
        output.value
    }

    /// The same context, collecting elements afresh, as [`CallContext::for_call`] makes each
    /// call's; for calling a box yourself. Take them with [`CallContext::take_elements`]
    /// after the call.
    pub fn collecting_elements(mut self) -> CallContext {
        self.extensions.insert(Collected::default());
        self
    }

    /// Copies of the elements added after the first `skip`: what a wrapper's inner call
    /// added, when the wrapper counted them before (see [`Recording`](super::Recording)).
    pub(crate) fn elements_after(&self, skip: usize) -> Vec<Json> {
        match self.get::<Collected>() {
            Some(Collected(elements)) => elements
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .skip(skip)
                .cloned()
                .collect(),
            None => Vec::new(),
        }
    }

    /// How many elements were added so far.
    pub(crate) fn element_count(&self) -> usize {
        self.get::<Collected>().map_or(0, |Collected(elements)| {
            elements
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .len()
        })
    }

    /// The elements added so far, removed from the context.
    pub fn take_elements(&self) -> Vec<Json> {
        match self.get::<Collected>() {
            Some(Collected(elements)) => {
                std::mem::take(&mut *elements.lock().unwrap_or_else(PoisonError::into_inner))
            }
            None => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_reach_the_context_that_collects_them_and_no_other() {
        let plain = CallContext::new();
        plain.add_element(json!({"type": "text", "text": "lost"}));
        assert!(plain.take_elements().is_empty());

        let ctx = CallContext::new().collecting_elements();
        // A closure gets a clone: what it adds reaches the original.
        ctx.clone().add_element(ToolOutput::text_element("a"));
        let value = ctx.add_output(ToolOutput::new(json!(1)).with_element(json!({"type": "b"})));
        assert_eq!(value, json!(1));
        assert_eq!(
            ctx.take_elements(),
            [json!({"type": "text", "text": "a"}), json!({"type": "b"})]
        );
        assert!(ctx.take_elements().is_empty());

        // A call's context starts empty even when its parent collected elements.
        ctx.add_element(json!({"type": "parent"}));
        let call = ctx.for_call("call_1", None);
        assert!(call.take_elements().is_empty());
    }
}
