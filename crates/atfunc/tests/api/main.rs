//! The public API as a Rust user meets it: builders whose order does not matter, errors
//! that say where and what, one way to load tools.

mod bind_errors;
mod error_sizes;
mod features;
mod load;
mod parse_errors;
mod parser_config;
