//! The odds that an answer opens with a call, read from one token asked with its
//! likeliest alternatives (`--call-threshold`).
//!
//! Under `tool_choice: "auto"` a small model's greedy answer is a poor judge of whether to
//! call: Qwen2.5-Coder-0.5B writes a call to almost every question it is shown tools for,
//! and under atfunc's `auto` grammar it answers half the questions that need a call in
//! prose (EVAL.md (ae)). The probability mass of its first token is a better one: the
//! share of it on tokens that open a call in the model's format separates the two kinds
//! of question where the greedy choice does not. The gateway asks for that token first
//! ([`odds_request`]), reads the share ([`call_odds`]), and holds the answer to calls or
//! to prose by a threshold.

use super::request::Request;
use atfunc::parse::Dialect;
use serde_json::Value as Json;

/// How many alternatives the first token is asked with: the most OpenAI's API allows.
pub(crate) const TOP_LOGPROBS: u32 = 20;

/// The text that opens a call in `dialect`, as an answer starts: atfunc's `@`; for
/// hermes, its tagged block, and the bare JSON object, the list of them and the fence
/// around either that the model also writes.
fn openers(dialect: Dialect) -> &'static [&'static str] {
    match dialect {
        Dialect::Hermes => &["<tool_call>", "```", "{", "["],
        _ => &["@"],
    }
}

/// Why `threshold` cannot weigh an answer, if it cannot: it is a probability, above 0 (at
/// 0 every answer would be held to calls, which `tool_choice: "required"` says) and at
/// most 1.
/// Why a call threshold is refused (outside (0, 1]), or `None`.
pub fn threshold_error(threshold: f64) -> Option<String> {
    (!(threshold > 0.0 && threshold <= 1.0)).then(|| {
        format!(
            "the call threshold (--call-threshold) is a probability: give one above 0 and \
             at most 1, not {threshold}"
        )
    })
}

/// The fields of the turn's request the one-token request keeps, besides its messages:
/// those that make the prompt the model reads (the model; for a model's own format, the
/// tools its template shows, and `tool_choice`; the template's own settings). The client's
/// sampling settings are left out: they do not change the log probabilities of the first
/// token, which servers report before sampling (llama.cpp's, llama-cpp-python's, vLLM's),
/// and some change or break the one token itself (`n_predict`, `stop`, `logit_bias`, a
/// `grammar` of the client's own).
const ODDS_FIELDS: [&str; 7] = [
    "model",
    "tools",
    "tool_choice",
    "chat_template",
    "chat_template_kwargs",
    "add_generation_prompt",
    "continue_final_message",
];

/// `request` (the turn's first request as it would go upstream, before its grammar) asked
/// for one token and its [`TOP_LOGPROBS`] likeliest alternatives, unstreamed: its
/// messages and [`ODDS_FIELDS`], nothing else of the client's.
pub(crate) fn odds_request(request: &Request) -> Request {
    let mut asking = request.keeping(&ODDS_FIELDS);
    asking.insert("max_tokens", &Json::from(1));
    asking.insert("logprobs", &Json::Bool(true));
    asking.insert("top_logprobs", &Json::from(TOP_LOGPROBS));
    asking
}

/// Why the odds that an answer opens with a call cannot be read from it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum OddsError {
    /// The answer has no log probabilities: the upstream does not give them.
    #[error(
        "its answer has no choices[0].logprobs.content[0].top_logprobs: the upstream \
         must return log probabilities (llama.cpp's server, vLLM and OpenAI do)"
    )]
    Missing,
    /// They are there, but an alternative that opens a call has a log probability that
    /// is not a number (`NaN`, `Infinity`, `null`, none): the odds are not known for this
    /// answer, which says nothing of the next one.
    #[error("the log probability of the alternative {token} is {value}, not a number")]
    Unreadable {
        /// The alternative, as JSON.
        token: String,
        /// What stood for its log probability, as JSON (a string for Python's `NaN`).
        value: String,
    },
}

/// The probability that the answer opens with a call in `dialect`: the summed
/// probability of the first token's alternatives (`choices[0].logprobs.content[0]
/// .top_logprobs`, OpenAI's shape) whose text, leading white space aside, opens a call
/// ([`opens`]). An answer without them is [`OddsError::Missing`], unless its one token
/// ends inside a character ([`cut_in_a_character`]): that token opens no call, and the
/// odds are 0. An alternative that opens a call counts with a log probability that is a
/// number, or `"-Infinity"` (Python's word, read as a string by
/// [`crate::endpoint::parse_lenient`]: a token that cannot come, adding nothing); with
/// anything else the odds are [`OddsError::Unreadable`]. The log probabilities of the
/// other alternatives are not read.
pub(crate) fn call_odds(answer: &Json, dialect: Dialect) -> Result<f64, OddsError> {
    let Some(top) = answer
        .pointer("/choices/0/logprobs/content/0/top_logprobs")
        .and_then(Json::as_array)
    else {
        if cut_in_a_character(answer) {
            return Ok(0.0);
        }
        return Err(OddsError::Missing);
    };
    let openers = openers(dialect);
    let mut odds = 0.0;
    for alternative in top {
        let Some(token) = alternative.get("token").and_then(Json::as_str) else {
            continue;
        };
        if !opens(token.trim_start(), openers) {
            continue;
        }
        let logprob = alternative.get("logprob");
        match logprob.and_then(Json::as_f64) {
            Some(logprob) => odds += logprob.exp(),
            None if logprob.and_then(Json::as_str) == Some("-Infinity") => {}
            None => {
                return Err(OddsError::Unreadable {
                    token: Json::from(token).to_string(),
                    value: logprob.map_or_else(|| String::from("missing"), Json::to_string),
                })
            }
        }
    }
    Ok(odds.min(1.0))
}

/// Whether the answer's one token ends inside a UTF-8 character (its text holds U+FFFD):
/// llama.cpp's server sends no log probabilities for such a token, since it holds the
/// bytes back until the character is whole (SmolLM2 opens so on some questions written
/// in Chinese). Every opener is ASCII, so the likeliest answer opens with prose; the
/// alternatives are unknown, and the odds are taken as 0, where an upstream that sends
/// no log probabilities at all is still told apart.
fn cut_in_a_character(answer: &Json) -> bool {
    answer
        .pointer("/choices/0/message/content")
        .and_then(Json::as_str)
        .is_some_and(|text| text.contains('\u{FFFD}'))
}

/// Whether `token` opens a call: it starts with an opener, or is the start of one of two
/// characters or more (`<tool`, ```` `` ````, where a tokenizer splits the opener). A
/// single character that only starts an opener (`<`, `` ` ``) opens markup or code as
/// often, and is not counted.
fn opens(token: &str, openers: &[&str]) -> bool {
    openers.iter().any(|opener| {
        token.starts_with(opener) || (token.chars().nth(1).is_some() && opener.starts_with(token))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(top: &[(&str, f64)]) -> Json {
        let top: Vec<Json> = top
            .iter()
            .map(|(token, p)| json!({"token": token, "logprob": p.ln()}))
            .collect();
        json!({"choices": [{"logprobs": {"content": [{"token": "x", "top_logprobs": top}]}}]})
    }

    #[test]
    fn the_share_on_openers_is_summed() {
        let top = [
            ("```", 0.5),
            ("{\"", 0.2),
            ("The", 0.2),
            (" [", 0.05),
            ("<tool", 0.05),
        ];
        let odds = call_odds(&answer(&top), Dialect::Hermes).unwrap();
        assert!((odds - 0.8).abs() < 1e-9, "{odds}");
        let odds = call_odds(
            &answer(&[("@", 0.3), (" @", 0.1), ("I", 0.6)]),
            Dialect::Atfunc,
        );
        assert!((odds.unwrap() - 0.4).abs() < 1e-9);
    }

    #[test]
    fn white_space_prose_and_a_lone_first_character_are_not_openers() {
        let top = [
            ("\n", 0.4),
            (" ", 0.2),
            ("Sure", 0.2),
            ("<", 0.1),
            ("`", 0.1),
        ];
        assert_eq!(call_odds(&answer(&top), Dialect::Hermes).unwrap(), 0.0);
        assert_eq!(call_odds(&answer(&top), Dialect::Atfunc).unwrap(), 0.0);
    }

    #[test]
    fn an_answer_without_log_probabilities_says_which_field_is_missing() {
        let error = call_odds(&json!({"choices": [{"message": {}}]}), Dialect::Atfunc);
        assert_eq!(error, Err(OddsError::Missing));
        assert!(OddsError::Missing.to_string().contains("top_logprobs"));
    }

    #[test]
    fn log_probabilities_python_could_not_write_as_numbers() {
        // As `crate::endpoint::parse_lenient` reads Python's words.
        let top = |opener: Json, other: Json| {
            json!({"choices": [{"logprobs": {"content": [{"token": "I", "top_logprobs": [
                {"token": "I", "logprob": (0.75f64).ln()},
                {"token": "The", "logprob": other},
                {"token": "@", "logprob": opener}]}]}}]})
        };
        // A token that cannot come adds nothing; another's log probability is not read.
        let odds = call_odds(&top(json!("-Infinity"), json!("NaN")), Dialect::Atfunc);
        assert_eq!(odds, Ok(0.0));
        let odds = call_odds(&top(json!((0.25f64).ln()), json!(null)), Dialect::Atfunc);
        assert!((odds.unwrap() - 0.25).abs() < 1e-9);
        // An opener's that is not a number: not known.
        for (value, shown) in [
            (json!("NaN"), "\"NaN\""),
            (json!("Infinity"), "\"Infinity\""),
            (json!(null), "null"),
        ] {
            let error = call_odds(&top(value, json!(-1.0)), Dialect::Atfunc).unwrap_err();
            assert_eq!(
                error,
                OddsError::Unreadable {
                    token: "\"@\"".into(),
                    value: shown.into()
                }
            );
        }
        let missing = json!({"choices": [{"logprobs": {"content": [{"top_logprobs": [
            {"token": "@"}]}]}}]});
        let error = call_odds(&missing, Dialect::Atfunc).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the log probability of the alternative \"@\" is missing, not a number"
        );
    }

    #[test]
    fn a_token_cut_inside_a_character_has_no_alternatives_and_opens_no_call() {
        // llama.cpp's answer when the first token is the first bytes of a character.
        let cut = json!({"choices": [{"finish_reason": "length",
            "message": {"role": "assistant", "content": "\u{FFFD}"}}]});
        assert_eq!(call_odds(&cut, Dialect::Atfunc), Ok(0.0));
        assert_eq!(call_odds(&cut, Dialect::Hermes), Ok(0.0));
        // A whole token without them is still the upstream's fault.
        let whole = json!({"choices": [{"message": {"content": "@"}}]});
        assert!(call_odds(&whole, Dialect::Atfunc).is_err());
    }

    #[test]
    fn a_threshold_is_a_probability_above_0() {
        for good in [1e-9, 0.5, 1.0] {
            assert_eq!(threshold_error(good), None);
        }
        for bad in [0.0, -0.5, 1.5, f64::NAN, f64::INFINITY] {
            let error = threshold_error(bad).unwrap();
            assert!(error.contains("above 0 and at most 1"), "{error}");
        }
    }

    #[test]
    fn the_request_asks_one_token_and_its_alternatives() {
        let request = Request::parse(
            br#"{"model": "m", "messages": [], "max_completion_tokens": 9, "n_predict": 5,
                "stop": ["@"], "logit_bias": {"31": -100}, "temperature": 0.2, "top_k": 3,
                "max_tokens": 7, "logprobs": false, "top_logprobs": 2, "seed": 1,
                "grammar": "root ::= \"x\"", "tool_choice": "none",
                "chat_template_kwargs": {"enable_thinking": false}}"#,
        )
        .unwrap();
        let asking = odds_request(&request);
        let sent: Json = serde_json::from_slice(&asking.body(Some(false))).unwrap();
        assert_eq!(
            sent,
            json!({"model": "m", "messages": [], "tool_choice": "none",
                "chat_template_kwargs": {"enable_thinking": false}, "max_tokens": 1,
                "logprobs": true, "top_logprobs": TOP_LOGPROBS, "stream": false})
        );
    }
}
