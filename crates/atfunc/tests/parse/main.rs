//! Parsing, the second phase: calls found in streaming model output. Every case runs whole
//! and in 1-byte, 3-byte and random chunks (`parse_common.rs` does it for all of them).
//!
//! - `parse_corpus.rs`: the tricky-input corpus, its events snapshotted in `snapshots/`;
//! - `parse_limits.rs`: large and hostile inputs, limits, bounded memory;
//! - `parse_props.rs`: property tests against a tiny reference parser (failures found
//!   earlier are replayed from `parse_props.proptest-regressions`);
//! - `parse_regressions.rs`: inputs found by fuzzing or review;
//! - `dialects.rs`: other models' call formats, from the BFCL ground truth and hostile input.

mod parse_common;

mod dialects;
mod parse_corpus;
mod parse_limits;
mod parse_props;
mod parse_regressions;
