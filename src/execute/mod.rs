//! Phase 5, execute: tool boxes, the registry, and running calls.
