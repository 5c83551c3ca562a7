//! One turn of a conversation with tools, without I/O: the engine the gateway (`serve`)
//! and the evaluator (`eval`) both drive.
//!
//! A client's request goes in (a `Request`, its tools a `ToolSet`); the engine adds the
//! atfunc prompt and a grammar where the policy says so, reads each upstream answer as it
//! streams (`Turn::feed`), binds its calls, cuts it at a repeated call, and at the end of
//! each answer says whether to ask again (a resample or a repair round) and with which
//! request, or that the turn is done. The drivers own the sockets: the gateway's client
//! stream or whole answer, the evaluator's report. Because both run this code, an accuracy
//! figure measures the gateway, not a sibling of it.

mod answer;
mod built;
mod constrain;
mod conversation;
mod error;
mod history;
mod odds;
mod plan;
mod request;
mod tools;

pub(crate) use answer::{Out, RoundEnd, Shaper, Turn, MAX_CALLS};
pub(crate) use built::{Grammar, Prompt};
pub use constrain::UpstreamKind;
pub(crate) use constrain::{call_form, grammars, has_grammar, Grammars};
pub use conversation::DEFAULT_CALL_ROUNDS;
pub(crate) use conversation::{answer_request, Since};
pub(crate) use error::TurnError;
pub(crate) use history::{add_prompt_raw, content_text, native_history, rewrite_raw, user_text};
#[doc(hidden)]
pub use odds::threshold_error;
pub(crate) use odds::{call_odds, odds_request, OddsError, TOP_LOGPROBS};
pub(crate) use plan::{Plan, Settings as PlanSettings};
pub(crate) use request::{Request, RequestError};
pub(crate) use tools::{read_tools, ToolSet};
