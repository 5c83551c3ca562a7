//! `--decide`: under `tool_choice: "auto"` with a grammar, one short request first that
//! decides which function answers (or none), before the answer itself.
//!
//! The decision request is the turn's first request as it would go upstream (the client's
//! fields, the conversation with the atfunc prompt in front), with:
//! - one more user message, [`DECIDE_QUESTION`], after the conversation;
//! - the grammar [`decision_gbnf`] of the tools' names as the prompt lists them
//!   ([`decision_names`]), or `none`,
//!   in the field the upstream reads ([`UpstreamKind`](super::UpstreamKind));
//! - `max_tokens` set to [`TurnPolicy::decide_max_tokens`](super::TurnPolicy::decide_max_tokens)
//!   (and `max_completion_tokens` left out), `stream: false` (and no `stream_options`):
//!   it is never streamed to the client.
//!
//! [`ask`] reads its answer with [`read_decision`]. The evaluator's `decide` mode asks the
//! same question under the same grammar (`atfunc eval --mode decide`), so the gateway's
//! decision is the one EVAL.md measures.
//!
//! `--call-threshold` judges the same thing without a question: [`weigh`] asks the turn's
//! own request for one token, and chooses calls or prose by the odds that it opens a call
//! ([`crate::turn::call_odds`]; the gateway's module doc, "Weighing first").

use super::weighable::Known;
use super::{ApiError, Gateway};
use crate::turn::{call_odds, odds_request, Grammar, OddsError, Request, ToolSet, Turn};
use atfunc::grammar::{
    decision_gbnf, decision_names, read_decision, Choice, ToolDecision, DECIDE_QUESTION,
};
use atfunc::parse::Dialect;
use axum::body::Bytes;
use axum::http::HeaderValue;
use serde_json::{json, Value as Json};

/// The decision for `request` (the turn's first request, prompted) over `tools`, and the
/// upstream's usage for it, its grammar in the field of `kind` (the policy in effect). An
/// upstream error is the turn's error, as the first request's would be.
pub(crate) async fn ask(
    gateway: &Gateway,
    auth: Option<&HeaderValue>,
    request: &Request,
    tools: &ToolSet,
    kind: super::UpstreamKind,
) -> Result<(ToolDecision, Option<Json>), ApiError> {
    let names = decision_names(tools.catalog.interfaces());
    let asking = decision_request(
        request,
        &names,
        gateway.options.policy.decide_max_tokens,
        kind,
    );
    let limit = gateway.options.limits.max_request_bytes;
    if asking.size() > limit {
        return Err(ApiError::grammar_too_large(&format!(
            "the decision request with the grammar of the tools' names is larger than the \
             gateway's limit on requests ({limit} bytes, --max-request-bytes)"
        )));
    }
    let answer = gateway
        .upstream
        .chat_json(Bytes::from(asking.body(Some(false))), auth)
        .await?;
    let content = crate::turn::content_text(answer.pointer("/choices/0/message/content"));
    Ok((
        read_decision(&content, &names),
        answer.get("usage").cloned(),
    ))
}

/// The decision request for `request`: see the module's contract.
fn decision_request(
    request: &Request,
    names: &[String],
    max_tokens: u32,
    kind: super::UpstreamKind,
) -> Request {
    let mut asking = request.clone();
    asking.push_message(&json!({"role": "user", "content": DECIDE_QUESTION}));
    asking.remove("max_completion_tokens");
    asking.insert("max_tokens", &Json::from(max_tokens));
    kind.put_in(&mut asking, &Grammar::new(decision_gbnf(names)));
    asking
}

/// What weighing an answer found: see [`weigh`].
pub(crate) struct Weighing {
    /// Calls at or above the threshold, prose below it.
    pub(crate) choice: Choice,
    /// The odds that the answer opens with a call.
    pub(crate) odds: f64,
    /// The upstream's usage for asking.
    pub(crate) usage: Option<Json>,
}

impl Weighing {
    /// Records what the turn needs of the weighing: its request's usage, counted in the
    /// turn's, and the odds, shown to the client beside the answer.
    pub(crate) fn record_in(self, turn: &mut Turn) {
        turn.count_usage(self.usage);
        turn.weighed_at(self.odds);
    }
}

/// Weighs the answer to `request` (the turn's first request, before its grammar) by the
/// odds that it opens with a call in `dialect`: the grammar's choice is calls at or above
/// `threshold`, prose below it.
///
/// `required` (an explicit `--call-threshold P`): an upstream error is the turn's error,
/// and so is an answer without log probabilities (502, saying what the upstream must
/// return). Otherwise (the default threshold) the weighing is taken where the upstream's
/// model allows it, as the gateway learned with a request of its own
/// ([`super::weighable`]), and `None` means the answer goes unweighed: a model that
/// returns no log probabilities is not asked, and for this request alone, a refusal (4xx)
/// of the one-token request, or an answer to it without log probabilities, leaves the
/// answer to its own request. Nothing a client's request meets changes what the next one
/// gets. A server error or an unreachable upstream is the turn's error either way: the
/// answer's request would meet it too.
///
/// Odds that cannot be read from an answer that has log probabilities (one of a token
/// that opens a call is `NaN`) leave that answer unweighed, `None`, whatever `required`
/// says: the upstream did return them, and the next answer may be read.
pub(crate) async fn weigh(
    gateway: &Gateway,
    auth: Option<&HeaderValue>,
    request: &Request,
    (dialect, threshold, required): (Dialect, f64, bool),
) -> Result<Option<Weighing>, ApiError> {
    if !required {
        let known = gateway.weighable(request.raw("model"), auth).await?;
        if known == Some(Known::Unweighable) {
            return Ok(None);
        }
    }
    let asking = odds_request(request);
    let answer = match gateway
        .upstream
        .chat_json(Bytes::from(asking.body(Some(false))), auth)
        .await
    {
        Ok(answer) => answer,
        Err(error) if !required && error.status().is_client_error() => return Ok(None),
        Err(error) => return Err(error),
    };
    let odds = match call_odds(&answer, dialect) {
        Ok(odds) => odds,
        Err(OddsError::Unreadable { .. }) => return Ok(None),
        Err(OddsError::Missing) if !required => return Ok(None),
        Err(why) => {
            return Err(ApiError::bad_gateway(format!(
                "the upstream was asked for one token and its log probabilities to weigh \
                 whether to call (--call-threshold), and {why}"
            )))
        }
    };
    let choice = if odds >= threshold {
        Choice::Required
    } else {
        Choice::None
    };
    Ok(Some(Weighing {
        choice,
        odds,
        usage: answer.get("usage").cloned(),
    }))
}
