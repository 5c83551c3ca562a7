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

/// `request` (the turn's first request as it would go upstream, before its grammar) asked
/// for one token and its [`TOP_LOGPROBS`] likeliest alternatives, unstreamed.
pub(crate) fn odds_request(request: &Request) -> Request {
    let mut asking = request.clone();
    asking.remove("max_completion_tokens");
    asking.insert("max_tokens", &Json::from(1));
    asking.insert("logprobs", &Json::Bool(true));
    asking.insert("top_logprobs", &Json::from(TOP_LOGPROBS));
    asking
}

/// The probability that the answer opens with a call in `dialect`: the summed
/// probability of the first token's alternatives (`choices[0].logprobs.content[0]
/// .top_logprobs`, OpenAI's shape) whose text, leading white space aside, opens a call
/// ([`opens`]). An answer without them is an error that names the field, unless its one
/// token ends inside a character ([`cut_in_a_character`]): that token opens no call, and
/// the odds are 0.
pub(crate) fn call_odds(answer: &Json, dialect: Dialect) -> Result<f64, String> {
    let Some(top) = answer
        .pointer("/choices/0/logprobs/content/0/top_logprobs")
        .and_then(Json::as_array)
    else {
        if cut_in_a_character(answer) {
            return Ok(0.0);
        }
        return Err(String::from(
            "its answer has no choices[0].logprobs.content[0].top_logprobs: the upstream \
             must return log probabilities (llama.cpp's server, vLLM and OpenAI do)",
        ));
    };
    let openers = openers(dialect);
    let mut odds = 0.0;
    for alternative in top {
        let (Some(token), Some(logprob)) = (
            alternative.get("token").and_then(Json::as_str),
            alternative.get("logprob").and_then(Json::as_f64),
        ) else {
            continue;
        };
        if opens(token.trim_start(), openers) {
            odds += logprob.exp();
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
        assert!(error.unwrap_err().contains("top_logprobs"));
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
        let request = Request::parse(br#"{"messages": [], "max_completion_tokens": 9}"#).unwrap();
        let asking = odds_request(&request);
        assert_eq!(asking.get("max_tokens"), Some(json!(1)));
        assert_eq!(asking.get("max_completion_tokens"), None);
        assert_eq!(asking.get("logprobs"), Some(json!(true)));
        assert_eq!(asking.get("top_logprobs"), Some(json!(TOP_LOGPROBS)));
    }
}
