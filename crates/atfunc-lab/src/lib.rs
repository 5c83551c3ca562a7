//! atfunc's lab: the evaluator, which measures how well a model behind an
//! OpenAI-compatible endpoint calls functions on BFCL questions, through the same engine
//! the gateway runs. Not published: it is research, a client of the library, not part of
//! it. Its notebook is `EVAL.md` beside this crate, its reports are in `reports/`.
#![deny(missing_docs)]

pub mod eval;
