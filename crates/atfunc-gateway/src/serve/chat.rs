//! `POST /v1/chat/completions`: pass-through, tool turns (whole and streamed), and the
//! answers in OpenAI's format.

use super::reply::{channel_body, error_event};
use super::rounds::answer;
use super::sse::WholeEvents;
use super::upstream::{self, Response as UpstreamResponse};
use super::{decide, execute, ApiError, Gateway};
use crate::endpoint::is_event_stream;
use crate::turn;
use crate::turn::{add_prompt_raw, rewrite_raw, user_text};
use crate::turn::{answer_request, Since};
use crate::turn::{read_tools, ToolSet};
use crate::turn::{Plan, PlanSettings, Turn};
use crate::turn::{Request, RequestError};
use atfunc::grammar::{CallForm, Choice, ToolDecision};
use atfunc::parse::Dialect;
use axum::body::Bytes;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde_json::value::RawValue;
use serde_json::Value as Json;
use std::sync::Arc;
use tracing::Instrument;

/// A request's tools: a list read before, or one read now.
enum Tools {
    Known(Arc<ToolSet>),
    Read(Json),
}

/// Fields of a request that are for the gateway, not the upstream.
const TOOL_FIELDS: [&str; 5] = [
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "atfunc_execute",
    "atfunc_constrain",
];

/// Answers a request whose client is authorized and whose body, `raw`, was read whole;
/// an executed request's calls go to `ran` as they run.
pub(crate) async fn handle(
    gateway: Arc<Gateway>,
    headers: HeaderMap,
    raw: Bytes,
    ran: execute::RanCalls,
) -> Result<Response, ApiError> {
    let mut request = Request::parse(&raw).map_err(|error| match error {
        RequestError::Json(e) => {
            ApiError::bad_request(format!("The request body is not valid JSON: {e}"))
        }
        RequestError::NotAnObject => {
            ApiError::bad_request("The request body must be a JSON object")
        }
    })?;
    let auth = gateway.upstream_auth(&headers);
    // A list sent before is taken as it was read (see the module doc of `serve`, "Tool
    // lists kept"); of any other, only what the interface loader reads is kept.
    let tools = match request.raw("tools") {
        None => None,
        Some(text) => match gateway.tools.get(text.get()) {
            Some(known) => Some(Tools::Known(known)),
            None => match read_tools(text.get())? {
                Json::Null => None,
                Json::Array(list) if list.is_empty() => None,
                tools => Some(Tools::Read(tools)),
            },
        },
    };
    let options = &gateway.options;
    // Read once: the policy may change when the upstream is found late.
    let in_effect = gateway.policy_in_effect();
    let settings = PlanSettings {
        execute_all: options.policy.execute_all,
        constrain: in_effect.constrain.value,
        constrain_per_request: options.policy.constrain_per_request,
        dialect: in_effect.dialect.value,
    };
    let dialect = in_effect.dialect.value;
    let boxes = options.registry.clone();
    let (tools, constrain) = match Plan::resolve(&settings, &request, tools, boxes)? {
        Plan::Execute(registry) => {
            tracing::debug!("executed: the gateway runs the calls");
            for field in TOOL_FIELDS {
                request.remove(field);
            }
            drop(raw);
            return execute::handle(gateway, auth, request, registry, ran).await;
        }
        Plan::PassThrough { strip } => {
            tracing::debug!("passed through: no tools");
            if !strip {
                drop(request);
                return pass_through(gateway, raw, auth).await;
            }
            request.remove("atfunc_execute");
            request.remove("atfunc_constrain");
            drop(raw);
            let body = Bytes::from(request.body(None));
            return pass_through(gateway, body, auth).await;
        }
        Plan::Tools { tools, constrain } => (tools, constrain),
    };
    // From here on the request is held as its fields' text; the body is not needed.
    drop(raw);
    let tools = match tools {
        Tools::Known(tools) => tools,
        Tools::Read(json) => {
            let limits = &gateway.options.limits.load_limits;
            let read = Arc::new(ToolSet::from_tools_with(&json, limits)?);
            // The tools' JSON is not needed once they are loaded: kept, it would stay alive
            // (several times the size of its text) until the answer is sent.
            drop(json);
            if let Some(text) = request.raw("tools") {
                gateway.tools.put(text.get(), &read);
            }
            read
        }
    };
    gateway.warn_once(&tools.warnings);
    let choice = tools.choice(request.get("tool_choice").as_ref())?;
    let single_call = request.get("parallel_tool_calls") == Some(Json::Bool(false));
    let not_a_list = || ApiError::bad_request("'messages' must be a list");
    let messages = request.take_messages().ok_or_else(not_a_list)?;
    let messages: Vec<Box<RawValue>> =
        serde_json::from_str(messages.get()).map_err(|_| not_a_list())?;
    // After tool results the turn follows the conversation policy (`turn::Since`).
    let since = Since::read(&messages, &tools);
    let choice = since.choice(choice);
    tracing::debug!(
        tools = tools.catalog.interfaces().len(),
        choice = ?choice,
        dialect = ?dialect,
        constrain,
        after_results = since.after_results,
        "turn"
    );
    if dialect != Dialect::Atfunc {
        let asked = Asked {
            messages,
            since,
            choice,
            single_call,
            constrain,
        };
        return native_turn(gateway, auth, request, tools, asked, &in_effect).await;
    }
    let messages = rewrite_raw(messages, &tools)?;
    for field in TOOL_FIELDS {
        request.remove(field);
    }
    if choice == Choice::None {
        request.set_messages(messages);
        let body = Bytes::from(request.body(None));
        return pass_through(gateway, body, auth).await;
    }
    refuse_several_choices(&request)?;
    let at_cap = since.at_cap(gateway.options.policy.call_rounds);
    let constrain = constrain && !at_cap;
    let answer = since.after_results.then(|| {
        let mut answer = request.clone();
        answer.set_messages(answer_request(messages.clone(), &since.answer_note()));
        answer
    });
    let grounding = (constrain && gateway.options.policy.ground_text).then(|| user_text(&messages));
    let mut messages = messages;
    add_prompt_raw(
        &mut messages,
        &tools.prompt(
            &choice,
            single_call,
            gateway.options.policy.param_descriptions,
        ),
    );
    request.set_messages(messages);
    // `--decide`: a tool the model chose narrows the grammar to its calls; `none`, or a
    // decision that names no tool, leaves the `auto` grammar (see the module doc).
    let mut grammar_choice = choice.clone();
    let mut decision_usage = None;
    if constrain && gateway.options.policy.decide && choice == Choice::Auto && !at_cap {
        let kind = in_effect.kind.value;
        let (decision, usage) =
            decide::ask(&gateway, auth.as_ref(), &request, &tools, kind).await?;
        decision_usage = usage;
        if let ToolDecision::Function(name) = decision {
            grammar_choice = Choice::Function(name);
        }
    }
    // `--call-threshold`: calls or prose, by the odds of the answer's first token. Its
    // threshold is measured on first answers: after results the grammar's `auto` leaves
    // the choice to the model (weighed there, a low threshold held answers to junk calls).
    let asked = (
        &request,
        constrain && !since.after_results,
        &choice,
        Dialect::Atfunc,
    );
    let weighing = weigh_first(&gateway, auth.as_ref(), asked).await?;
    if let Some(weighing) = &weighing {
        grammar_choice = weighing.choice.clone();
    }
    let grammars = if constrain {
        let choices = (&grammar_choice, &choice);
        let grounding = grounding.as_deref();
        let built = (CallForm::Atfunc, single_call, grounding);
        turn_grammars(&gateway, &tools, &request, choices, built)?
    } else {
        None
    };
    let parts = TurnParts {
        request,
        choice,
        single_call,
        dialect: Dialect::Atfunc,
        grammars,
        weighing,
        decision_usage,
        answer,
        at_cap,
    };
    let turn = build_turn(&gateway, tools, &since, parts, &in_effect);
    run_turn(gateway, auth, turn).await
}

/// What the client asked of this answer, with the history it came with: the messages
/// (not yet rewritten), the conversation read from them, and the choices of the request.
struct Asked {
    messages: Vec<Box<RawValue>>,
    since: Since,
    choice: Choice,
    single_call: bool,
    /// Whether the answer goes under its grammar, as the policy and the request say.
    constrain: bool,
}

/// What a turn is built from once the request to send is ready, in either call format.
struct TurnParts {
    request: Request,
    choice: Choice,
    single_call: bool,
    dialect: Dialect,
    grammars: Option<turn::Grammars>,
    weighing: Option<decide::Weighing>,
    /// The tokens a `--decide` request used, counted in the answer's usage.
    decision_usage: Option<Json>,
    /// After tool results: the request for an answer in words.
    answer: Option<Request>,
    at_cap: bool,
}

/// The turn of `parts`, with the gateway's policy: its grammars, resamples and repair
/// rounds, the repeated calls it drops, the usage of the requests made before it, and
/// after tool results the conversation policy. Written once for both call formats.
fn build_turn(
    gateway: &Gateway,
    tools: Arc<ToolSet>,
    since: &Since,
    parts: TurnParts,
    in_effect: &super::detect::InEffect,
) -> Turn {
    let policy = &gateway.options.policy;
    // What was built from a kept list counts toward the bound on what is kept.
    gateway.tools.recount(&tools);
    let mut turn = Turn::new(
        tools,
        parts.request,
        parts.choice,
        parts.single_call,
        policy.repair_rounds,
        parts.dialect,
    );
    if let Some(grammars) = parts.grammars {
        turn.constrain(in_effect.kind.value, grammars, policy.resamples);
    }
    turn.keep_repeated_calls(policy.keep_repeated_calls);
    turn.count_usage(parts.decision_usage);
    // Never together with a decision, whose usage it would replace: the default does not
    // weigh under `--decide`, and the gateway refuses a given threshold with it at setup.
    if let Some(weighing) = parts.weighing {
        weighing.record_in(&mut turn);
    }
    if let Some(answer) = parts.answer {
        turn.after_results(since, answer, parts.at_cap);
    }
    turn
}

/// A request with tools for a model that writes its own call format
/// ([`UpstreamOptions::dialect`](super::UpstreamOptions::dialect)): the upstream's chat
/// template shows the tools and the history as they came, so neither is rewritten and no
/// prompt is added. `tool_choice` goes upstream as `"none"`: a server without a tool parser
/// refuses `auto` (vLLM) and would enforce a named tool with a JSON schema, not the model's
/// format; the gateway checks `required` and a named tool itself, with repair rounds.
///
/// With `constrain`, the answer is held to the grammar of the tools' calls in the model's
/// own format ([`turn::call_form`]: Hermes' `<tool_call>` blocks), with the same resamples
/// and repair grammars as atfunc's syntax: the model writes what its template taught it,
/// and every call binds.
async fn native_turn(
    gateway: Arc<Gateway>,
    auth: Option<HeaderValue>,
    mut request: Request,
    tools: Arc<ToolSet>,
    asked: Asked,
    in_effect: &super::detect::InEffect,
) -> Result<Response, ApiError> {
    let Asked {
        messages,
        since,
        choice,
        single_call,
        constrain,
    } = asked;
    request.remove("atfunc_execute");
    request.remove("atfunc_constrain");
    let policy = &gateway.options.policy;
    let at_cap = since.at_cap(policy.call_rounds);
    let constrain = constrain && !at_cap;
    let grounding = (constrain && policy.ground_text).then(|| user_text(&messages));
    let messages = turn::native_history(messages)?;
    // The answer in words: the history without the tools, and the request for it.
    let answer = since.after_results.then(|| {
        let mut answer = request.clone();
        for field in TOOL_FIELDS {
            answer.remove(field);
        }
        answer.set_messages(answer_request(messages.clone(), &since.answer_note()));
        answer
    });
    request.set_messages(messages);
    if choice == Choice::None {
        let body = Bytes::from(request.body(None));
        return pass_through(gateway, body, auth).await;
    }
    refuse_several_choices(&request)?;
    request.remove("parallel_tool_calls");
    request.insert("tool_choice", &Json::String("none".into()));
    let dialect = in_effect.dialect.value;
    let form = turn::call_form(dialect, in_effect.hermes_blocks.value);
    let mut grammar_choice = choice.clone();
    let weighed = constrain && form.is_some() && !since.after_results;
    let asked = (&request, weighed, &choice, dialect);
    let weighing = weigh_first(&gateway, auth.as_ref(), asked).await?;
    if let Some(weighing) = &weighing {
        grammar_choice = weighing.choice.clone();
    }
    let grammars = match form {
        Some(form) if constrain => {
            let choices = (&grammar_choice, &choice);
            let built = (form, single_call, grounding.as_deref());
            turn_grammars(&gateway, &tools, &request, choices, built)?
        }
        _ => None,
    };
    let parts = TurnParts {
        request,
        choice,
        single_call,
        dialect,
        grammars,
        weighing,
        decision_usage: None,
        answer,
        at_cap,
    };
    let turn = build_turn(&gateway, tools, &since, parts, in_effect);
    run_turn(gateway, auth, turn).await
}

/// The weighing of `request`'s answer in `dialect` (`--call-threshold`), when the
/// gateway's threshold applies to the dialect ([`super::CallThreshold::in_dialect`]), the request
/// is under a grammar (`constrain`), and its `tool_choice` is `auto`; `None` otherwise,
/// without asking, and when a default weighing finds the upstream unable to weigh.
async fn weigh_first(
    gateway: &Gateway,
    auth: Option<&HeaderValue>,
    (request, constrain, choice, dialect): (&Request, bool, &Choice, Dialect),
) -> Result<Option<decide::Weighing>, ApiError> {
    let policy = &gateway.options.policy;
    let threshold = policy
        .call_threshold
        .in_dialect(dialect, policy.decide)
        .filter(|_| constrain && *choice == Choice::Auto);
    match threshold {
        Some((threshold, required)) => {
            decide::weigh(gateway, auth, request, (dialect, threshold, required)).await
        }
        None => Ok(None),
    }
}

/// The grammars of a turn with `tools`: calls in `form` (one with `single_call`, text
/// arguments grounded in `grounding` when given, values as the gateway's policy says),
/// under the answer's `chosen` choice (a decision's or a weighing's), or under the
/// client's `asked` one when no call of the chosen can bind.
fn turn_grammars(
    gateway: &Gateway,
    tools: &ToolSet,
    request: &Request,
    (chosen, asked): (&Choice, &Choice),
    (form, single_call, grounding): (CallForm, bool, Option<&str>),
) -> Result<Option<turn::Grammars>, turn::TurnError> {
    let policy = &gateway.options.policy;
    let build = |choice: &Choice| {
        turn::grammars(
            tools,
            (choice, form),
            single_call,
            (grounding, policy.bound_values, policy.bare_strings),
            request.size(),
            gateway.options.limits.max_request_bytes,
        )
    };
    match build(chosen)? {
        // A chosen tool, or calls judged likely, none of which can bind: the asked
        // choice's grammar, then.
        None if chosen != asked => build(asked),
        grammars => Ok(grammars),
    }
}

async fn run_turn(
    gateway: Arc<Gateway>,
    auth: Option<HeaderValue>,
    turn: Turn,
) -> Result<Response, ApiError> {
    answer(gateway, auth, turn).await
}

/// Several choices (`n` above 1) cannot share one turn's calls: refused with tools.
fn refuse_several_choices(request: &Request) -> Result<(), ApiError> {
    if request
        .get("n")
        .and_then(|n| n.as_u64())
        .is_some_and(|n| n > 1)
    {
        return Err(ApiError::bad_request(
            "'n' above 1 is not supported with tools",
        ));
    }
    Ok(())
}

async fn pass_through(
    gateway: Arc<Gateway>,
    body: Bytes,
    auth: Option<HeaderValue>,
) -> Result<Response, ApiError> {
    let response = gateway.upstream.chat(body, auth.as_ref()).await?;
    Ok(relay(gateway, response).await)
}

/// The upstream's answer as it is: an error status as OpenAI's error JSON, a stream piece
/// by piece, anything else whole.
pub(crate) async fn relay(gateway: Arc<Gateway>, mut response: UpstreamResponse) -> Response {
    let status = response.status();
    if upstream::is_error(status) {
        return match gateway.upstream.check(response).await {
            Ok(_) => ApiError::from_upstream(status, b"").into_response(),
            Err(error) => error.into_response(),
        };
    }
    let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
    if !is_event_stream(&response) {
        let body = match gateway.upstream.read_body(&mut response).await {
            Ok(body) => body,
            Err(error) => return error.into_response(),
        };
        let mut reply = (status, body).into_response();
        if let Some(content_type) = content_type {
            reply
                .headers_mut()
                .insert(header::CONTENT_TYPE, content_type);
        }
        return reply;
    }
    let (tx, body) = channel_body();
    let relaying = async move {
        let mut sent = 0usize;
        // Only whole events are passed on: an error event of the gateway's then starts
        // on a line of its own, and the event it cut short is not passed on half.
        let mut whole = WholeEvents::default();
        loop {
            let chunk = tokio::select! {
                biased;
                () = tx.closed() => return,
                chunk = gateway.upstream.next_chunk(&mut response) => chunk,
            };
            match chunk {
                Ok(Some(chunk)) => {
                    sent += chunk.len();
                    if sent > gateway.upstream.max_response_bytes() {
                        tx.send(error_event(&gateway.upstream.too_large())).await;
                        return;
                    }
                    if let Some(events) = whole.push(&chunk) {
                        if !tx.send(events).await {
                            return;
                        }
                    }
                }
                Ok(None) => {
                    if let Some(rest) = whole.finish() {
                        tx.send(rest).await;
                    }
                    tracing::info!(bytes = sent, "stream passed through");
                    return;
                }
                Err(error) => {
                    tx.send(error_event(&error)).await;
                    return;
                }
            }
        }
    };
    // The stream goes on after the handler has returned, in the request's span.
    tokio::spawn(relaying.instrument(tracing::Span::current()));
    let mut reply = (status, body).into_response();
    if let Some(content_type) = content_type {
        reply
            .headers_mut()
            .insert(header::CONTENT_TYPE, content_type);
    }
    reply
}
