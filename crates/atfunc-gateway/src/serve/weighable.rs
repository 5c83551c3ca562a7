//! Whether an upstream model returns log probabilities, so that the default
//! `--call-threshold` can weigh its answers: learned by a request of the gateway's own, once
//! per model, and never from a client's request or its error.
//!
//! The contract:
//!
//! 1. The first time a request under the default threshold names a model (its `model`
//!    field, or none), the gateway asks the upstream [`probe_body`]: that model, one fixed
//!    user message ([`PROBE_MESSAGE`]), one token, `logprobs: true` and
//!    `top_logprobs` as the weighing asks for them, unstreamed. Nothing of the client's
//!    request goes with it but the model's name (and the `Authorization` the upstream gets
//!    for the client).
//! 2. Its answer ([`read_probe`]): with `top_logprobs`, the model is [`Known::Weighable`];
//!    without them, or refused (400, 422) with a message that names log probabilities
//!    once the model's name is taken out of it, [`Known::Unweighable`]. Anything else says
//!    nothing of the model (`None`, nothing kept): not found (404, a client's wrong model
//!    name), not allowed (401, 403), too many requests (429), another refusal, or a token
//!    cut inside a character. A server error or an unreachable upstream is the request's
//!    error, as the weighing's or the answer's own request would be.
//! 3. What is learned is kept per model ([`Models`], at most [`MAX_MODELS`] of them, the
//!    oldest forgotten first; a name longer than [`MAX_MODEL_NAME`] is not kept, and
//!    asked about each time). An unweighable model's answers go unweighed, under the
//!    `auto` grammar, and stderr says so once when it is learned. Requests for a model
//!    not yet known that arrive together may each ask.

use super::ApiError;
use crate::turn::TOP_LOGPROBS;
use serde_json::value::RawValue;
use serde_json::{json, Value as Json};
use std::collections::VecDeque;
use std::sync::Mutex;

/// The most models whose answer is kept: many more than one upstream serves, and a bound
/// on what clients that name new models each time can make the gateway hold.
pub(crate) const MAX_MODELS: usize = 64;

/// The longest model name kept, in bytes of its JSON text.
pub(crate) const MAX_MODEL_NAME: usize = 512;

/// The user message the gateway asks its one token for.
pub(crate) const PROBE_MESSAGE: &str = "Hello";

/// What the gateway learned of a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Known {
    /// It returns log probabilities: its answers are weighed.
    Weighable,
    /// It does not: its answers go unweighed.
    Unweighable,
}

/// What the gateway learned, per model: the key is the `model` field's JSON text, `""`
/// for a request without one.
#[derive(Debug, Default)]
pub(crate) struct Models(Mutex<VecDeque<(String, Known)>>);

impl Models {
    /// What was learned of `model`, if anything.
    pub(crate) fn get(&self, model: &str) -> Option<Known> {
        let models = self.0.lock().ok()?;
        models
            .iter()
            .find(|(name, _)| name == model)
            .map(|(_, known)| *known)
    }

    /// Keeps `known` for `model`, forgetting the oldest model when [`MAX_MODELS`] are
    /// kept; a name over [`MAX_MODEL_NAME`] is not kept. Whether it was new.
    pub(crate) fn learn(&self, model: &str, known: Known) -> bool {
        if model.len() > MAX_MODEL_NAME {
            return false;
        }
        let Ok(mut models) = self.0.lock() else {
            return false;
        };
        if let Some(kept) = models.iter_mut().find(|(name, _)| name == model) {
            let new = kept.1 != known;
            kept.1 = known;
            return new;
        }
        if models.len() >= MAX_MODELS {
            models.pop_front();
        }
        models.push_back((model.to_owned(), known));
        true
    }
}

/// The key of a request's `model` (its JSON text; `""` without one).
pub(crate) fn model_key(model: Option<&RawValue>) -> &str {
    model.map_or("", RawValue::get)
}

/// The gateway's own request for `model` (see the module's contract).
pub(crate) fn probe_body(model: Option<&RawValue>) -> Vec<u8> {
    let mut body = json!({
        "messages": [{"role": "user", "content": PROBE_MESSAGE}],
        "max_tokens": 1,
        "logprobs": true,
        "top_logprobs": TOP_LOGPROBS,
        "stream": false,
    });
    if let Some(model) = model.and_then(|m| serde_json::from_str::<Json>(m.get()).ok()) {
        body["model"] = model;
    }
    body.to_string().into_bytes()
}

/// What the answer to [`probe_body`] for `model` (its key) says of the model: see the
/// module's contract. `Err` is the request's error.
pub(crate) fn read_probe(
    answer: Result<Json, ApiError>,
    model: &str,
) -> Result<Option<Known>, ApiError> {
    let answer = match answer {
        Ok(answer) => answer,
        Err(error) if error.status().is_client_error() => {
            let refused = matches!(error.status().as_u16(), 400 | 422);
            // The model's name may say anything ("gpt-logprobs-test"): only the rest of
            // the message speaks of the request.
            let name = serde_json::from_str::<String>(model).unwrap_or_default();
            let mut message = error.message().to_owned();
            if !name.is_empty() {
                message = message.replace(&name, "");
            }
            let names_them = message.to_ascii_lowercase().contains("logprob");
            return Ok((refused && names_them).then_some(Known::Unweighable));
        }
        Err(error) => return Err(error),
    };
    let has_them = answer
        .pointer("/choices/0/logprobs/content/0/top_logprobs")
        .is_some_and(Json::is_array);
    if has_them {
        return Ok(Some(Known::Weighable));
    }
    // llama.cpp's server holds back the log probabilities of a token that ends inside a
    // character: such an answer says nothing.
    let cut = answer
        .pointer("/choices/0/message/content")
        .and_then(Json::as_str)
        .is_some_and(|text| text.contains('\u{FFFD}'));
    Ok((!cut).then_some(Known::Unweighable))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    fn refusal(status: u16, message: &str) -> Result<Json, ApiError> {
        let body = json!({"error": {"message": message, "type": "invalid_request_error"}});
        Err(ApiError::from_upstream(
            StatusCode::from_u16(status).unwrap(),
            body.to_string().as_bytes(),
        ))
    }

    #[test]
    fn the_probe_asks_one_token_of_the_model_and_nothing_of_the_client() {
        let model = raw(r#""qwen""#);
        let body: Json = serde_json::from_slice(&probe_body(Some(&model))).unwrap();
        assert_eq!(
            body,
            json!({"model": "qwen", "messages": [{"role": "user", "content": "Hello"}],
                "max_tokens": 1, "logprobs": true, "top_logprobs": TOP_LOGPROBS,
                "stream": false})
        );
        let body: Json = serde_json::from_slice(&probe_body(None)).unwrap();
        assert!(body.get("model").is_none(), "{body}");
    }

    #[test]
    fn what_a_probe_answer_says_of_the_model() {
        let with = json!({"choices": [{"message": {"content": "Hi"},
            "logprobs": {"content": [{"token": "Hi", "top_logprobs": []}]}}]});
        let without = json!({"choices": [{"message": {"content": "Hi"}, "logprobs": null}]});
        let cut = json!({"choices": [{"message": {"content": "\u{FFFD}"}}]});
        let key = r#""gpt-logprobs-test""#;
        assert_eq!(read_probe(Ok(with), key).unwrap(), Some(Known::Weighable));
        assert_eq!(
            read_probe(Ok(without), key).unwrap(),
            Some(Known::Unweighable)
        );
        assert_eq!(read_probe(Ok(cut), key).unwrap(), None);
        let unweighable = refusal(400, "top_logprobs is not supported");
        assert_eq!(
            read_probe(unweighable, key).unwrap(),
            Some(Known::Unweighable)
        );
        let unweighable = refusal(422, "logprobs: must be at most 5");
        assert_eq!(
            read_probe(unweighable, key).unwrap(),
            Some(Known::Unweighable)
        );
        // The model's name says nothing of log probabilities, whatever it holds.
        for status in [400, 404, 422] {
            let unknown = refusal(status, "The model `gpt-logprobs-test` does not exist.");
            assert_eq!(read_probe(unknown, key).unwrap(), None, "{status}");
        }
        for status in [401, 403, 404, 429] {
            let refused = refusal(status, "logprobs are for paying clients");
            assert_eq!(read_probe(refused, key).unwrap(), None, "{status}");
        }
        let failed = refusal(500, "top_logprobs broke the server");
        assert_eq!(read_probe(failed, key).unwrap_err().status(), 500);
    }

    #[test]
    fn models_are_kept_each_apart_and_bounded() {
        let models = Models::default();
        assert!(models.learn("\"a\"", Known::Weighable));
        assert!(models.learn("\"b\"", Known::Unweighable));
        assert!(!models.learn("\"b\"", Known::Unweighable));
        assert_eq!(models.get("\"a\""), Some(Known::Weighable));
        assert_eq!(models.get("\"b\""), Some(Known::Unweighable));
        assert_eq!(models.get(""), None);
        for i in 0..MAX_MODELS {
            models.learn(&format!("\"m{i}\""), Known::Weighable);
        }
        // The oldest are forgotten first.
        assert_eq!(models.get("\"a\""), None);
        assert_eq!(models.get("\"b\""), None);
        assert_eq!(models.get("\"m0\""), Some(Known::Weighable));
        let long = format!("\"{}\"", "x".repeat(MAX_MODEL_NAME));
        assert!(!models.learn(&long, Known::Unweighable));
        assert_eq!(models.get(&long), None);
        assert_eq!(models.0.lock().unwrap().len(), MAX_MODELS);
    }
}
