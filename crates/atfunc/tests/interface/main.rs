//! Tool interfaces, the first phase: loading them in every shape and validating them
//! (`interface.rs`), the text a model reads (`render.rs`), and the OpenAI and MCP formats
//! with the bridge to OpenAI's chat format (`interop.rs`).
//!
//! One test binary per phase keeps the build short (each binary links the whole crate); a
//! module per subject keeps the tests apart. Snapshots are in `snapshots/`, named
//! `interface__<module>__<name>.snap`.

mod interface;
mod interop;
mod render;
