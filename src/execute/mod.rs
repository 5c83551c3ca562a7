//! Phase 5, execute: tool boxes, the registry, and running calls.
//!
//! A [`ToolBox`] is a set of tools under one domain, called asynchronously. Boxes compose:
//! wrappers add behaviour around a call without adding tools, and the registry runs the
//! calls a model wrote and formats what they returned.

mod file;
mod toolbox;

pub use file::{FileBox, FileBoxError, FileError, FileErrorKind};
pub use toolbox::{CallContext, Extensions, ToolBox, ToolError};
