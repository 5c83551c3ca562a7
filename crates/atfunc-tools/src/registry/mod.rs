//! The registry: the tool boxes a model may call, and running the calls it writes.
//!
//! A [`Registry`] is shared by every conversation (every method takes `&self`). What it
//! does is split by job, one file each:
//!
//! - `registration`: the [`Registry`], what it holds (tool boxes, control functions,
//!   output filters, limits) and what it offers (the functions, the prompt, a function by
//!   its path).
//! - `run`: the doors calls come in by: [`Registry::call`] for one call of the host's own,
//!   [`Registry::execute_response`] for a whole answer, [`Registry::stream`] for an answer
//!   as it streams in.
//! - `turn`: one answer's calls, each bound, run in its box (or answered by a control
//!   function, or held for confirmation) and made an [`Outcome`]. A turn holds no
//!   registry: a snapshot of what it offered when the answer began, and a ledger it
//!   shares with it (statistics, call ids, held calls). So a [`ResponseStream`] borrows
//!   nothing and can be moved to a task or served as a response body.
//! - `stream`: the answer fed chunk by chunk, or read from a byte stream ([`Outcomes`], with
//!   its text [`Pieces`]),
//!   ended at the first call that repeats one when asked ([`atfunc::bind::Repeats`]).
//! - `view` and `control`: what an answer sees (the functions offered, its
//!   [`Settings`]) and the control functions (`tools.*`) that answer from it.
//! - `outcome`: a call's [`Outcome`], its result block, an answer's [`ExecutionReport`].
//! - `confirmation`: marking calls as needing the user's confirmation; listing,
//!   confirming and rejecting held ones.
//! - `stats`: call counts per box and function ([`Stats`]).
//!
//! Files import downwards only: `registration` and `run` know the turn; the turn, the
//! stream and the control functions never name the registry.

mod confirmation;
mod control;
mod outcome;
mod registration;
mod run;
mod stats;
mod stream;
mod turn;
mod view;

pub use control::CONTROL_DOMAIN;
pub use outcome::{ExecutionReport, Outcome, OutcomeState, ERROR_TEXT_FLOOR};
pub use registration::{FoundFunction, RegisterError, Registry, RegistryPrompt};
pub use run::CallOptions;
pub use stats::{FunctionStats, Stats};
pub use stream::{InputError, Outcomes, Piece, Pieces, ResponseStream, StreamEnd};
pub use view::Settings;
