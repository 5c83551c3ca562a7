//! The file tool box: read, write, list and delete files inside one root folder, and nowhere
//! else.
//!
//! Every path goes through a [`cap_std::fs::Dir`] opened once on the root, so `..`, absolute
//! paths and symbolic links cannot reach anything outside it, however the path is spelled and
//! even if the folder changes while a call runs. Paths are checked as strings only to give the
//! model a clearer message than the operating system would.
//!
//! One job per file: `tool` is the box as the registry sees it (its functions, a call
//! dispatched to an operation), `ops` the operations on the root folder, `failure` the
//! message for each way an operation fails, `path` the checks of a path as the model wrote
//! it, and `error` the error types.

mod error;
mod failure;
mod ops;
mod path;
mod tool;

pub use error::{FileBoxError, FileError, FileErrorKind};
pub use tool::{FileBox, DEFAULT_MAX_READ_BYTES};
