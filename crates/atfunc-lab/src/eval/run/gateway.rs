//! The modes that are policies of the gateway, put through the gateway's own code.
//!
//! A case goes to an in-process [`Gateway`] as a client would send it to `atfunc serve`:
//! the case's messages, its functions as `tools`, `tool_choice`, and `parallel_tool_calls:
//! false` outside BFCL's parallel categories. The gateway prompts, constrains, decides,
//! resamples and repairs as it does for any client, and its answer's `tool_calls` are
//! scored. So a figure of these modes is the gateway's, made by the same code, and
//! [`Policy::serve_flags`] says how to start `atfunc serve` to get it.

use super::{CaseOutcome, EvalOptions, Read};
use crate::eval::case::{presented, Case};
use crate::eval::literal::Language;
use crate::eval::mode::{Mode, Strategy, Variant};
use crate::eval::score::ScoredCall;
use atfunc::bind::{BoundCall, Catalog};
use atfunc::format::CallRecord;
use atfunc::interop::{to_openai_tools, ControlFields, NameMap, ToolFormatOptions};
use atfunc::parse::Dialect;
use atfunc_gateway::serve::{CallThreshold, Gateway, GatewayOptions, TurnPolicy};
use serde_json::{json, Map, Value as Json};
use std::sync::Arc;

/// A mode as a gateway policy: the gateway's options and what the request asks.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    pub(crate) options: GatewayOptions,
    /// The request's `tool_choice`.
    pub(crate) tool_choice: &'static str,
    /// Whether the request asks llama.cpp for its per-token timings
    /// ([`EvalOptions::stop_at_repeat`]).
    pub(crate) timings: bool,
}

impl Policy {
    /// The policy of `mode` under `eval`'s options; `None` for a mode that is not one:
    /// `native` (the endpoint's own tool calling, without the gateway), `lazy` and `+next`
    /// (which need llama-server's own routes), and any mode asked with `--samples` above 1
    /// (the gateway answers a client once).
    pub(crate) fn of(mode: &Mode, eval: &EvalOptions) -> Option<Policy> {
        if mode.has(Variant::Next) || eval.samples > 1 {
            return None;
        }
        let mut options = {
            let mut options = GatewayOptions::default();
            options.upstream.url = eval.endpoint.clone();
            options.upstream.timeout = eval.timeout;
            options.upstream.max_response_bytes = eval.max_response_bytes;
            options.policy.repair_rounds = eval.repair_rounds;
            options.policy.resamples = usize::try_from(eval.resamples).unwrap_or(usize::MAX);
            options.policy.keep_repeated_calls = eval.keep_repeated_calls;
            options.policy.decide_max_tokens = eval.decide_max_tokens;
            options.policy.param_descriptions = mode.has(Variant::Desc);
            options
        };
        let grammar = |options: &mut GatewayOptions| {
            options.policy.constrain = true;
            options.policy.ground_text = mode.has(Variant::Spans);
            options.policy.bound_values = mode.has(Variant::Bound);
            options.policy.bare_strings = mode.has(Variant::Bare);
        };
        let tool_choice = match mode.strategy {
            // The prompt alone, measured without a second chance.
            Strategy::Text => {
                options.policy.repair_rounds = 0;
                "auto"
            }
            Strategy::Repair => "auto",
            Strategy::Grammar => {
                grammar(&mut options);
                "required"
            }
            Strategy::Auto => {
                grammar(&mut options);
                "auto"
            }
            Strategy::Decide => {
                grammar(&mut options);
                options.policy.decide = true;
                "auto"
            }
            Strategy::Dialect | Strategy::DialectGrammar | Strategy::DialectAuto => {
                options.upstream.dialect = eval.dialect;
                options.upstream.hermes_blocks = eval.hermes_blocks;
                // No atfunc prompt: its descriptions stay at the gateway's default, unnamed.
                options.policy.param_descriptions = TurnPolicy::default().param_descriptions;
                if mode.strategy.holds_own_format() {
                    grammar(&mut options);
                }
                if mode.strategy == Strategy::DialectGrammar {
                    "required"
                } else {
                    "auto"
                }
            }
            Strategy::Native | Strategy::Lazy => return None,
        };
        // The modes that weigh as the gateway does; the others never weigh.
        options.policy.call_threshold = if mode.strategy.weighable() {
            eval.call_threshold
        } else {
            CallThreshold::Off
        };
        Some(Policy {
            options,
            tool_choice,
            timings: eval.stop_at_repeat,
        })
    }

    /// The command line of `atfunc serve` that answers as this policy does, with the
    /// `tool_choice` its clients send: `atfunc serve --constrain --resamples 3
    /// --repair-rounds 1, tool_choice "required"`. Options at their default are left out.
    pub(crate) fn serve_flags(&self) -> String {
        let o = &self.options.policy;
        let default = TurnPolicy::default();
        let dialect = self.options.upstream.dialect;
        let mut flags = String::from("atfunc serve");
        let mut flag = |on: bool, text: &str| {
            if on {
                flags.push(' ');
                flags.push_str(text);
            }
        };
        flag(o.constrain, "--constrain");
        flag(o.decide, "--decide");
        match o.call_threshold {
            CallThreshold::At(threshold) => flag(true, &format!("--call-threshold {threshold}")),
            // Off differs from the default only where the default weighs.
            CallThreshold::Off => flag(
                o.constrain
                    && self.tool_choice == "auto"
                    && default
                        .call_threshold
                        .in_dialect(dialect, o.decide)
                        .is_some(),
                "--call-threshold off",
            ),
            // The default (and a kind added later) needs no flag.
            _ => {}
        }
        flag(
            o.decide && o.decide_max_tokens != default.decide_max_tokens,
            &format!("--decide-max-tokens {}", o.decide_max_tokens),
        );
        flag(
            o.constrain && o.resamples != default.resamples,
            &format!("--resamples {}", o.resamples),
        );
        flag(
            o.repair_rounds != default.repair_rounds,
            &format!("--repair-rounds {}", o.repair_rounds),
        );
        flag(o.ground_text, "--ground-text");
        flag(o.bound_values, "--bound-values");
        // Bare words are a rule of atfunc's syntax under a grammar; elsewhere the flag
        // changes nothing, so a command line needs it only where it does.
        flag(
            o.constrain && dialect == Dialect::Atfunc && o.bare_strings != default.bare_strings,
            if o.bare_strings {
                "--bare-strings"
            } else {
                "--no-bare-strings"
            },
        );
        flag(
            o.param_descriptions != default.param_descriptions,
            if o.param_descriptions {
                "--param-descriptions"
            } else {
                "--no-param-descriptions"
            },
        );
        flag(o.keep_repeated_calls, "--keep-repeated-calls");
        flag(
            dialect != Dialect::Atfunc,
            &format!("--upstream-dialect {}", dialect),
        );
        flag(
            o.constrain && dialect == Dialect::Hermes && self.options.upstream.hermes_blocks,
            "--hermes-blocks",
        );
        format!("{flags}, tool_choice \"{}\"", self.tool_choice)
    }

    /// The gateway of this policy.
    pub(crate) fn gateway(&self) -> Result<Arc<Gateway>, String> {
        Gateway::new(self.options.clone())
            .map(Arc::new)
            .map_err(|e| format!("cannot set up the gateway for this mode: {e}"))
    }
}

/// The request a client sends the gateway for `case`: its messages and functions, the
/// policy's `tool_choice`, one call per answer outside BFCL's parallel categories, and
/// the evaluator's `fields` (model, token limit, greedy decoding, extra fields).
///
/// For the atfunc prompt the functions go under their own names (`math.factorial`, which
/// the prompt shows as a function of the domain `math`, as the evaluator always showed
/// it); for a model's own format, under OpenAI's tool names (`math_factorial`), as
/// `native` sends them, since the server's chat template shows them to the model as they
/// are. `names` maps those back.
pub(crate) fn request(
    case: &Case,
    policy: &Policy,
    fields: Map<String, Json>,
) -> (Json, Option<NameMap>) {
    let mut request = fields;
    request.insert("messages".into(), Json::Array(case.messages.clone()));
    let (tools, names) = if policy.options.upstream.dialect == Dialect::Atfunc {
        // The functions as BFCL shows them (a Java or JavaScript parameter as a string).
        let shown = presented(&case.functions, Language::of(&case.category));
        let tools = shown
            .into_iter()
            .map(|function| json!({"type": "function", "function": function}))
            .collect();
        (Json::Array(tools), None)
    } else {
        let rendered = to_openai_tools(&case.interfaces, &openai_options());
        (rendered.tools, Some(rendered.names))
    };
    request.insert("tools".into(), tools);
    request.insert("tool_choice".into(), json!(policy.tool_choice));
    if !case.category.contains("parallel") {
        request.insert("parallel_tool_calls".into(), Json::Bool(false));
    }
    if policy.timings {
        // A field the gateway passes on as it came.
        request.insert("timings_per_token".into(), Json::Bool(true));
    }
    (Json::Object(request), names)
}

/// OpenAI's tools of a case, as `native` renders them: without atfunc's control functions.
fn openai_options() -> ToolFormatOptions {
    ToolFormatOptions::default().with_control_fields(ControlFields::none())
}

/// Puts `case` to `gateway` under `policy` and reads its answer: the `tool_calls` are the
/// calls made; a call the gateway could not bind, even after its rounds, stays in the
/// content as the text it was, and is read back from there as refused.
pub(crate) async fn ask(
    gateway: &Arc<Gateway>,
    case: &Case,
    policy: &Policy,
    fields: Map<String, Json>,
    outcome: &mut CaseOutcome,
) -> Result<Read, String> {
    let (body, names) = request(case, policy, fields);
    let body = body.to_string();
    let (status, answer) = gateway.complete(body.into()).await;
    let answer = answer?;
    let text = String::from_utf8_lossy(&answer);
    let json: Json = serde_json::from_str(&text).map_err(|e| {
        format!(
            "the gateway's answer is not JSON ({e}): {}",
            super::excerpt(&text)
        )
    })?;
    if !status.is_success() {
        let message = json
            .pointer("/error/message")
            .and_then(Json::as_str)
            .map_or_else(|| super::excerpt(&text), str::to_owned);
        return Err(format!("the gateway answered {status}: {message}"));
    }
    let usage = |field: &str| {
        json.pointer(&format!("/usage/{field}"))
            .and_then(Json::as_u64)
            .unwrap_or(0)
    };
    outcome.prompt_tokens += usage("prompt_tokens");
    outcome.completion_tokens += usage("completion_tokens");
    outcome.call_odds = json.pointer("/atfunc/call_odds").and_then(Json::as_f64);
    let message = json.pointer("/choices/0/message");
    let content = message
        .and_then(|m| m.get("content"))
        .and_then(Json::as_str)
        .unwrap_or_default();
    outcome.answer = content.to_owned();
    let mut read = Read::default();
    let entries = message
        .and_then(|m| m.get("tool_calls"))
        .and_then(Json::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for entry in entries {
        let name = entry
            .pointer("/function/name")
            .and_then(Json::as_str)
            .unwrap_or_default();
        let arguments = entry
            .pointer("/function/arguments")
            .and_then(Json::as_str)
            .unwrap_or("{}");
        let args = match serde_json::from_str(arguments) {
            Ok(Json::Object(args)) => args,
            _ => {
                return Err(format!(
                    "the gateway passed on a call whose arguments are not a JSON object: \
                     {name}({arguments})"
                ))
            }
        };
        // Under its OpenAI name, a call names the function and its parameters as the
        // names map them back.
        let (name, args) = match names.as_ref().and_then(|n| Some((n, n.qualified(name)?))) {
            Some((names, qualified)) => {
                let args = args
                    .into_iter()
                    .map(|(key, value)| (names.written_param(name, &key).to_owned(), value))
                    .collect();
                (qualified.to_owned(), args)
            }
            None => (name.to_owned(), args),
        };
        read.passed.push(ScoredCall { name, args });
    }
    let catalog = Catalog::new(case.interfaces.clone());
    let left = match policy.options.upstream.dialect {
        Dialect::Atfunc => super::read_text(content, &catalog, false),
        dialect => {
            let names = names.unwrap_or_default();
            super::read_dialect(content, dialect, &names, &catalog)
        }
    };
    // A call still in the content is one the gateway did not pass on: refused (in a
    // model's own format, one that names a tool the client did not define binds against
    // the case's functions here, but not at the gateway).
    read.refused = left.refused;
    read.refused
        .extend(left.bound.iter().map(|call| CallRecord {
            call_text: call_text_of(call),
            result: Err(String::from("the gateway did not pass this call on")),
        }));
    Ok(read)
}

/// A bound call as a refused one is quoted: its function and arguments.
fn call_text_of(call: &BoundCall) -> String {
    format!("{}({})", call.name, Json::Object(call.args.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_gateway_mode_names_the_serve_flags_that_reproduce_it() {
        let eval = EvalOptions::default();
        let flags = |mode: &str| {
            Policy::of(&mode.parse().unwrap(), &eval).map(|policy| policy.serve_flags())
        };
        // The gateway's default policy: the grammar, descriptions and bare words.
        assert_eq!(
            flags("grammar+desc+bare").as_deref(),
            Some("atfunc serve --constrain, tool_choice \"required\"")
        );
        assert_eq!(
            flags("auto+desc+bare").as_deref(),
            Some("atfunc serve --constrain, tool_choice \"auto\"")
        );
        assert_eq!(
            flags("grammar+desc").as_deref(),
            Some("atfunc serve --constrain --no-bare-strings, tool_choice \"required\"")
        );
        assert_eq!(
            flags("grammar").as_deref(),
            Some(
                "atfunc serve --constrain --no-bare-strings --no-param-descriptions, \
                 tool_choice \"required\""
            )
        );
        assert_eq!(
            flags("dialect-grammar").as_deref(),
            Some("atfunc serve --constrain --upstream-dialect auto, tool_choice \"required\"")
        );
        assert_eq!(
            flags("dialect-auto").as_deref(),
            Some("atfunc serve --constrain --upstream-dialect auto, tool_choice \"auto\"")
        );
        assert_eq!(
            flags("decide+spans+desc").as_deref(),
            Some(
                "atfunc serve --constrain --decide --ground-text --no-bare-strings, \
                 tool_choice \"auto\""
            )
        );
        assert_eq!(
            flags("text").as_deref(),
            Some("atfunc serve --repair-rounds 0 --no-param-descriptions, tool_choice \"auto\"")
        );
        assert_eq!(
            flags("dialect").as_deref(),
            Some("atfunc serve --upstream-dialect auto, tool_choice \"auto\"")
        );
        for experiment in ["native", "lazy", "grammar+next"] {
            assert_eq!(flags(experiment), None, "{experiment}");
        }
        // The threshold weighs the modes under "auto" with a grammar, and only those.
        let weighing = EvalOptions {
            call_threshold: CallThreshold::At(0.5),
            ..EvalOptions::default()
        };
        let weighed = |mode: &str| {
            Policy::of(&mode.parse().unwrap(), &weighing).map(|policy| policy.serve_flags())
        };
        assert_eq!(
            weighed("dialect-auto").as_deref(),
            Some(
                "atfunc serve --constrain --call-threshold 0.5 --upstream-dialect auto, \
                 tool_choice \"auto\""
            )
        );
        assert!(weighed("auto+desc+bare")
            .unwrap()
            .contains("--call-threshold 0.5"));
        for unweighed in ["grammar+desc+bare", "dialect-grammar", "decide", "dialect"] {
            assert!(
                !weighed(unweighed).unwrap().contains("--call-threshold"),
                "{unweighed}"
            );
        }
        // `off` is named where the default would weigh (atfunc's syntax under "auto"),
        // and nowhere else; the default is named nowhere.
        let off = EvalOptions {
            call_threshold: CallThreshold::Off,
            ..EvalOptions::default()
        };
        let unweighed = |mode: &str| {
            Policy::of(&mode.parse().unwrap(), &off).map(|policy| policy.serve_flags())
        };
        assert_eq!(
            unweighed("auto+desc+bare").as_deref(),
            Some("atfunc serve --constrain --call-threshold off, tool_choice \"auto\"")
        );
        for mode in ["dialect-auto", "grammar+desc+bare", "decide"] {
            assert!(
                !unweighed(mode).unwrap().contains("--call-threshold"),
                "{mode}"
            );
        }
        assert!(!flags("auto+desc+bare")
            .unwrap()
            .contains("--call-threshold"));
        let voted = EvalOptions {
            samples: 3,
            ..EvalOptions::default()
        };
        assert!(Policy::of(&"grammar".parse().unwrap(), &voted).is_none());
    }
}
