//! `atfunc serve --constrain --call-threshold P` against the scripted upstream of
//! `dialect.rs`: the first token is asked for with its log probabilities, and the answer
//! is held to the `required` grammar when the tokens that open a call hold at least `P`,
//! to prose alone when they hold less; in atfunc's syntax and in a model's own format;
//! the odds are shown beside the answer, whole and streamed; an upstream without log
//! probabilities is a clear 502; only `auto` under a grammar is weighed; and the setting
//! is refused where it cannot work.

use super::dialect::{joined, request, tools, Setup};
use atfunc::grammar::{CallForm, Choice};
use atfunc::parse::Dialect;
use atfunc::GrammarOptions;
use atfunc_gateway::serve::{CallThreshold, Gateway, GatewayOptions};
use serde_json::{json, Value as Json};

fn weighing(dialect: Dialect) -> GatewayOptions {
    let mut options = GatewayOptions::default();
    options.upstream.dialect = dialect;
    options.policy.constrain = true;
    options.policy.call_threshold = CallThreshold::At(0.5);
    options.policy.resamples = 0;
    options
}

/// The upstream's answer to the one-token request: the first token's alternatives with
/// their probabilities, and its usage.
fn first_token(top: &[(&str, f64)]) -> Json {
    let top: Vec<Json> = top
        .iter()
        .map(|(token, p)| json!({"token": token, "logprob": p.ln(), "bytes": null}))
        .collect();
    json!({"content": top[0]["token"], "usage": {"prompt_tokens": 300,
        "completion_tokens": 1, "total_tokens": 301},
        "logprobs": {"content": [{"token": top[0]["token"], "logprob": top[0]["logprob"],
            "top_logprobs": top}]}})
}

/// The library's grammar for the scripted tools under `choice`, in `form`.
fn library_grammar(choice: Choice, form: CallForm) -> String {
    atfunc::grammar::grammar(
        &atfunc::load_interfaces(&tools()).unwrap(),
        &GrammarOptions::default()
            .with_choice(choice)
            .with_form(form),
    )
    .unwrap()
    .to_gbnf()
}

/// The odds the answer was weighed at, beside its `choices`.
fn assert_odds(answer: &Json, expected: f64) {
    let odds = answer["atfunc"]["call_odds"].as_f64();
    assert!(
        odds.is_some_and(|odds| (odds - expected).abs() < 1e-9),
        "{answer}"
    );
}

/// The one-token request is the answer's request, asked for one token and its
/// alternatives, unstreamed, without a grammar.
fn assert_weighs(weigh: &Json, answer: &Json) {
    assert_eq!(weigh["max_tokens"], 1, "{weigh}");
    assert_eq!(weigh["logprobs"], true);
    assert_eq!(weigh["top_logprobs"], 20);
    assert_eq!(weigh["stream"], false);
    assert_eq!(weigh["messages"], answer["messages"]);
    for field in ["grammar", "max_completion_tokens", "stream_options"] {
        assert!(weigh.get(field).is_none(), "{field}: {weigh}");
    }
    assert!(answer.get("logprobs").is_none(), "{answer}");
}

#[tokio::test]
async fn likely_calls_are_held_to_the_required_grammar() {
    let setup = Setup::with_options(
        weighing(Dialect::Atfunc),
        &[
            first_token(&[("@", 0.6), ("I", 0.3), (" @", 0.05)]),
            json!({"content": "@get_weather(city=\"Paris\")",
                "usage": {"prompt_tokens": 300, "completion_tokens": 9, "total_tokens": 309}}),
        ],
    )
    .await;
    let mut asked = request();
    asked["max_completion_tokens"] = json!(200);
    let (status, whole) = setup.whole(&asked).await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(
        joined(&whole)["calls"],
        json!([{"name": "get-weather", "arguments": "{\"city\":\"Paris\"}"}])
    );
    // Both requests' tokens count.
    assert_eq!(
        whole["usage"],
        json!({"prompt_tokens": 600, "completion_tokens": 10, "total_tokens": 610})
    );
    assert_odds(&whole, 0.65);
    let sent = setup.requests();
    assert_eq!(sent.len(), 2, "{sent:#?}");
    assert_weighs(&sent[0], &sent[1]);
    assert_eq!(sent[1]["max_completion_tokens"], 200);
    // The grammar the gateway sends without weighing when a call is required.
    let mut options = weighing(Dialect::Atfunc);
    options.policy.call_threshold = CallThreshold::Off;
    let plain =
        Setup::with_options(options, &[json!({"content": "@local_time(city=\"Oslo\")"})]).await;
    let mut required = request();
    required["tool_choice"] = json!("required");
    assert_eq!(plain.whole(&required).await.0, 200);
    assert_eq!(sent[1]["grammar"], plain.requests()[0]["grammar"]);
    assert!(sent[1]["grammar"]
        .as_str()
        .unwrap()
        .starts_with("root ::= lead-in call"));
}

#[tokio::test]
async fn unlikely_calls_leave_prose_alone() {
    let setup = Setup::with_options(
        weighing(Dialect::Atfunc),
        &[
            first_token(&[("I", 0.7), ("@", 0.2), ("The", 0.1)]),
            json!({"content": "I cannot tell the future."}),
        ],
    )
    .await;
    let (status, whole) = setup.whole(&request()).await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(
        joined(&whole),
        json!({"content": "I cannot tell the future.", "calls": []})
    );
    assert_eq!(whole["choices"][0]["finish_reason"], "stop");
    assert_odds(&whole, 0.2);
    let sent = setup.requests();
    assert_eq!(sent.len(), 2);
    let prose = library_grammar(Choice::None, CallForm::Atfunc);
    assert_eq!(sent[1]["grammar"], prose);
    // Prose alone: no call can be written under it.
    let g = atfunc::grammar::grammar(
        &atfunc::load_interfaces(&tools()).unwrap(),
        &GrammarOptions::default().with_choice(Choice::None),
    )
    .unwrap();
    assert!(g.accepts("I cannot tell the future."));
    assert!(!g.accepts("@get_weather(city=\"Paris\")"));
}

#[tokio::test]
async fn a_streamed_answer_ends_with_the_odds() {
    let setup = Setup::with_options(
        weighing(Dialect::Atfunc),
        &[
            first_token(&[("I", 0.9), ("@", 0.1)]),
            json!({"content": "I cannot tell the future."}),
        ],
    )
    .await;
    let text = setup.stream_text(&request()).await;
    let chunks: Vec<Json> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter(|data| *data != "[DONE]")
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    let last = chunks
        .iter()
        .rfind(|chunk| chunk["choices"][0]["finish_reason"].is_string())
        .unwrap_or_else(|| panic!("no chunk ends the answer: {text}"));
    assert_odds(last, 0.1);
    // Only the last chunk carries them.
    let with_odds = chunks.iter().filter(|c| c.get("atfunc").is_some()).count();
    assert_eq!(with_odds, 1, "{text}");
}

#[tokio::test]
async fn a_models_own_format_is_weighed_by_its_own_openers() {
    let list =
        "```json\n[\n  {\"name\": \"get-weather\", \"arguments\": {\"city\": \"Paris\"}}\n]\n```";
    for (top, calls) in [
        (vec![("```", 0.5), ("{\"", 0.2), ("Sure", 0.3)], 1),
        (vec![("Sure", 0.6), ("```", 0.3), ("@", 0.1)], 0),
    ] {
        let answer = if calls == 1 { list } else { "Sure, Paris." };
        let setup = Setup::with_options(
            weighing(Dialect::Hermes),
            &[first_token(&top), json!({"content": answer})],
        )
        .await;
        let (status, whole) = setup.whole(&request()).await;
        assert_eq!(status, 200, "{whole}");
        assert_eq!(
            joined(&whole)["calls"].as_array().map(Vec::len),
            Some(calls),
            "{whole}"
        );
        assert_odds(&whole, if calls == 1 { 0.7 } else { 0.3 });
        let sent = setup.requests();
        assert_eq!(sent.len(), 2);
        assert_weighs(&sent[0], &sent[1]);
        // The tools go up for the template in both requests.
        assert_eq!(sent[0]["tools"], tools());
        assert_eq!(sent[0]["tool_choice"], "none");
        let choice = if calls == 1 {
            Choice::Required
        } else {
            Choice::None
        };
        assert_eq!(
            sent[1]["grammar"],
            library_grammar(choice, CallForm::HermesList),
            "{top:?}"
        );
    }
}

#[tokio::test]
async fn an_upstream_without_log_probabilities_is_told_apart() {
    let setup = Setup::with_options(
        weighing(Dialect::Atfunc),
        &[json!({"content": "@"}), json!({"content": "unused"})],
    )
    .await;
    let (status, whole) = setup.whole(&request()).await;
    assert_eq!(status, 502, "{whole}");
    let message = whole["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("--call-threshold") && message.contains("top_logprobs"),
        "{message}"
    );
    assert_eq!(setup.requests().len(), 1);
}

#[tokio::test]
async fn only_auto_under_a_grammar_is_weighed() {
    let answered = json!({"content": "@get_weather(city=\"Paris\")"});
    let mut required = request();
    required["tool_choice"] = json!("required");
    let mut named = request();
    named["tool_choice"] = json!({"type": "function", "function": {"name": "get-weather"}});
    let mut unconstrained = request();
    unconstrained["atfunc_constrain"] = json!(false);
    for asked in [required, named, unconstrained] {
        let setup =
            Setup::with_options(weighing(Dialect::Atfunc), std::slice::from_ref(&answered)).await;
        let (status, whole) = setup.whole(&asked).await;
        assert_eq!(status, 200, "{whole}");
        assert!(whole.get("atfunc").is_none(), "{whole}");
        let sent = setup.requests();
        assert_eq!(sent.len(), 1, "{asked}");
        assert!(sent[0].get("logprobs").is_none());
    }
}

#[test]
fn a_threshold_that_cannot_work_is_refused_saying_why() {
    let refused = |change: &dyn Fn(&mut GatewayOptions)| {
        let mut options = weighing(Dialect::Atfunc);
        change(&mut options);
        match Gateway::new(options) {
            Err(error) => error.to_string(),
            Ok(_) => panic!("a gateway that cannot weigh was started"),
        }
    };
    for threshold in [0.0, 1.5, f64::NAN] {
        let error = refused(&|o| o.policy.call_threshold = CallThreshold::At(threshold));
        assert!(error.contains("above 0 and at most 1"), "{error}");
    }
    let error = refused(&|o| o.policy.decide = true);
    assert!(error.contains("give one of them"), "{error}");
    let error = refused(&|o| o.policy.constrain = false);
    assert!(error.contains("give --constrain"), "{error}");
    let mut options = weighing(Dialect::Atfunc);
    options.policy.call_threshold = CallThreshold::At(1.0);
    assert!(Gateway::new(options).is_ok());
}

/// The gateway's defaults under a grammar: no threshold given.
fn by_default(dialect: Dialect) -> GatewayOptions {
    let mut options = weighing(dialect);
    options.policy.call_threshold = CallThreshold::default();
    options
}

/// The grammar a gateway that does not weigh sends for `request`.
async fn unweighed_grammar(request: &Json) -> Json {
    let mut options = weighing(Dialect::Atfunc);
    options.policy.call_threshold = CallThreshold::Off;
    let plain = Setup::with_options(options, &[json!({"content": "It is sunny."})]).await;
    assert_eq!(plain.whole(request).await.0, 200);
    plain.requests()[0]["grammar"].clone()
}

#[tokio::test]
async fn by_default_atfunc_syntax_is_weighed_at_its_threshold() {
    let threshold = atfunc_gateway::serve::DEFAULT_CALL_THRESHOLD;
    for (odds, calls) in [(threshold + 0.01, 1), (threshold - 0.01, 0)] {
        let answer = if calls == 1 {
            "@get_weather(city=\"Paris\")"
        } else {
            "It is sunny."
        };
        let setup = Setup::with_options(
            by_default(Dialect::Atfunc),
            &[
                first_token(&[("Hi", 1.0)]),
                first_token(&[("I", 1.0 - odds), ("@", odds)]),
                json!({"content": answer}),
            ],
        )
        .await;
        let (status, whole) = setup.whole(&request()).await;
        assert_eq!(status, 200, "{whole}");
        assert_eq!(
            joined(&whole)["calls"].as_array().map(Vec::len),
            Some(calls)
        );
        assert_odds(&whole, odds);
        let sent = setup.requests();
        assert_eq!(sent.len(), 3, "{sent:#?}");
        assert_probes(&sent[0], "m");
        let sent = &sent[1..];
        assert_weighs(&sent[0], &sent[1]);
        let choice = if calls == 1 {
            Choice::Required
        } else {
            Choice::None
        };
        let rule = sent[1]["grammar"].as_str().unwrap().lines().next().unwrap();
        let expected = library_grammar(choice, CallForm::Atfunc);
        assert_eq!(Some(rule), expected.lines().next(), "{odds}");
    }
}

/// The gateway's own request, asking `model` whether it returns log probabilities: a
/// fixed message, nothing of the client's.
fn assert_probes(sent: &Json, model: &str) {
    assert_eq!(
        sent,
        &json!({"model": model, "messages": [{"role": "user", "content": "Hello"}],
            "max_tokens": 1, "logprobs": true, "top_logprobs": 20, "stream": false})
    );
}

/// `request()` naming `model`.
fn for_model(model: &str) -> Json {
    let mut asked = request();
    asked["model"] = json!(model);
    asked
}

#[tokio::test]
async fn by_default_a_model_without_log_probabilities_goes_unweighed_and_unasked() {
    let setup = Setup::with_options(
        by_default(Dialect::Atfunc),
        &[
            json!({"content": "I"}),
            json!({"content": "It is sunny."}),
            json!({"content": "@local_time(city=\"Oslo\")"}),
        ],
    )
    .await;
    let (status, whole) = setup.whole(&request()).await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(joined(&whole)["content"], "It is sunny.");
    assert!(whole.get("atfunc").is_none(), "{whole}");
    let sent = setup.requests();
    assert_eq!(sent.len(), 2, "{sent:#?}");
    // The gateway's own request found it, not the client's.
    assert_probes(&sent[0], "m");
    // The answer goes under the `auto` grammar, as without weighing.
    assert_eq!(sent[1]["grammar"], unweighed_grammar(&request()).await);
    // The model is not asked for log probabilities again.
    let (status, whole) = setup.whole(&request()).await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(joined(&whole)["calls"].as_array().map(Vec::len), Some(1));
    let sent = setup.requests();
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert!(sent[0].get("logprobs").is_none());
}

fn refusal(status: u16, message: &str) -> Json {
    json!({"error_status": status, "error": {"message": message,
        "type": "invalid_request_error"}})
}

#[tokio::test]
async fn by_default_a_refusal_of_log_probabilities_turns_weighing_off_for_the_model() {
    let setup = Setup::with_options(
        by_default(Dialect::Atfunc),
        &[
            refusal(400, "top_logprobs is not supported by this server"),
            json!({"content": "It is sunny."}),
            json!({"content": "It is still sunny."}),
        ],
    )
    .await;
    for expected in ["It is sunny.", "It is still sunny."] {
        let (status, whole) = setup.whole(&request()).await;
        assert_eq!(status, 200, "{whole}");
        assert_eq!(joined(&whole)["content"], expected);
    }
    let sent = setup.requests();
    assert_eq!(sent.len(), 3);
    assert_probes(&sent[0], "m");
    // Another model of the same upstream is asked for itself, and weighed.
    setup.script(&[
        first_token(&[("Hi", 1.0)]),
        first_token(&[("@", 0.9), ("I", 0.1)]),
        json!({"content": "@get_weather(city=\"Paris\")"}),
    ]);
    let (status, whole) = setup.whole(&for_model("other")).await;
    assert_eq!(status, 200, "{whole}");
    assert_odds(&whole, 0.9);
    let sent = setup.requests();
    assert_eq!(sent.len(), 3, "{sent:#?}");
    assert_probes(&sent[0], "other");
}

#[tokio::test]
async fn a_clients_unknown_model_does_not_turn_weighing_off() {
    // The upstream's 404 names the model, and the name holds "logprobs".
    let unknown = || refusal(404, "model 'gpt-logprobs-test' not found");
    let setup = Setup::with_options(
        by_default(Dialect::Atfunc),
        &[
            unknown(),
            unknown(),
            unknown(),
            first_token(&[("Hi", 1.0)]),
            first_token(&[("@", 0.9), ("I", 0.1)]),
            json!({"content": "@get_weather(city=\"Paris\")"}),
        ],
    )
    .await;
    let (status, whole) = setup.whole(&for_model("gpt-logprobs-test")).await;
    assert_eq!(status, 404, "{whole}");
    assert!(whole.to_string().contains("not found"), "{whole}");
    let sent = setup.requests();
    assert_eq!(sent.len(), 3, "{sent:#?}");
    assert_probes(&sent[0], "gpt-logprobs-test");
    // The next client's model is weighed.
    let (status, whole) = setup.whole(&request()).await;
    assert_eq!(status, 200, "{whole}");
    assert_odds(&whole, 0.9);
    assert_eq!(setup.requests().len(), 3);
    // A refusal of the client's own one-token request names log probabilities: this
    // answer goes unweighed, and the model is still weighed for the next one.
    setup.script(&[
        refusal(
            400,
            "logprobs: top_logprobs must be at most 20 for this request",
        ),
        json!({"content": "It is sunny."}),
        first_token(&[("@", 0.8), ("I", 0.2)]),
        json!({"content": "@get_weather(city=\"Paris\")"}),
    ]);
    let (status, whole) = setup.whole(&request()).await;
    assert_eq!(status, 200, "{whole}");
    assert!(whole.get("atfunc").is_none(), "{whole}");
    let (status, whole) = setup.whole(&request()).await;
    assert_eq!(status, 200, "{whole}");
    assert_odds(&whole, 0.8);
    assert_eq!(setup.requests().len(), 4);
}

/// An answer to the one-token request as a Python server writes it: `top` with each log
/// probability's text as given (`NaN`, `-Infinity`).
fn python_first_token(top: &[(&str, &str)]) -> Json {
    let top: Vec<String> = top
        .iter()
        .map(|(token, logprob)| {
            format!(r#"{{"token": "{token}", "logprob": {logprob}, "bytes": null}}"#)
        })
        .collect();
    let body = format!(
        r#"{{"id": "c", "object": "chat.completion", "model": "m", "choices": [{{"index": 0,
        "message": {{"role": "assistant", "content": "I"}}, "finish_reason": "length",
        "logprobs": {{"content": [{{"token": "I", "logprob": -0.1, "top_logprobs": [{}]}}]}}}}],
        "usage": {{"prompt_tokens": 300, "completion_tokens": 1, "total_tokens": 301}}}}"#,
        top.join(", ")
    );
    json!({ "raw_body": body })
}

#[tokio::test]
async fn log_probabilities_that_are_not_numbers_leave_that_answer_unweighed() {
    for options in [by_default(Dialect::Atfunc), weighing(Dialect::Atfunc)] {
        let probe: &[Json] = if options.policy.call_threshold == CallThreshold::default() {
            &[first_token(&[("Hi", 1.0)])]
        } else {
            &[]
        };
        let mut script = probe.to_vec();
        script.extend([
            python_first_token(&[("I", "-0.1"), ("@", "NaN"), ("The", "-Infinity")]),
            json!({"content": "It is sunny."}),
            python_first_token(&[("I", "-0.1"), ("@", "-Infinity"), ("x", "NaN")]),
            json!({"content": "It is still sunny."}),
        ]);
        let setup = Setup::with_options(options, &script).await;
        // `NaN` for a token that opens a call: the odds are not known, and the answer
        // goes under the `auto` grammar, unweighed.
        let (status, whole) = setup.whole(&request()).await;
        assert_eq!(status, 200, "{whole}");
        assert_eq!(joined(&whole)["content"], "It is sunny.");
        assert!(whole.get("atfunc").is_none(), "{whole}");
        let sent = setup.requests();
        let sent = &sent[probe.len()..];
        assert_eq!(sent.len(), 2, "{sent:#?}");
        assert_eq!(sent[1]["grammar"], unweighed_grammar(&request()).await);
        // `-Infinity` for it: a token that cannot come, odds 0, prose; another
        // alternative's `NaN` is not read.
        let (status, whole) = setup.whole(&request()).await;
        assert_eq!(status, 200, "{whole}");
        assert_eq!(joined(&whole)["content"], "It is still sunny.");
        assert_odds(&whole, 0.0);
        let sent = setup.requests();
        assert_eq!(sent.len(), 2, "{sent:#?}");
        assert_eq!(
            sent[1]["grammar"],
            library_grammar(Choice::None, CallForm::Atfunc)
        );
    }
}

#[tokio::test]
async fn the_one_token_request_carries_none_of_the_clients_sampling_settings() {
    let setup = Setup::with_options(
        weighing(Dialect::Atfunc),
        &[
            first_token(&[("@", 0.9), ("I", 0.1)]),
            json!({"content": "@get_weather(city=\"Paris\")"}),
        ],
    )
    .await;
    let mut asked = request();
    let extras = json!({"n_predict": 3, "stop": ["@"], "logit_bias": {"31": -100},
        "temperature": 0.3, "top_k": 5, "seed": 7, "max_tokens": 50, "logprobs": false,
        "top_logprobs": 2, "presence_penalty": 1.0, "user": "u"});
    for (key, value) in extras.as_object().unwrap() {
        asked[key] = value.clone();
    }
    let (status, whole) = setup.whole(&asked).await;
    assert_eq!(status, 200, "{whole}");
    let sent = setup.requests();
    assert_eq!(sent.len(), 2, "{sent:#?}");
    let mut keys: Vec<&str> = sent[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "logprobs",
            "max_tokens",
            "messages",
            "model",
            "stream",
            "top_logprobs"
        ],
        "{}",
        sent[0]
    );
    assert_eq!(sent[0]["max_tokens"], 1);
    assert_eq!(sent[0]["logprobs"], true);
    assert_eq!(sent[0]["top_logprobs"], 20);
    assert_eq!(sent[0]["messages"], sent[1]["messages"]);
    // The answer's own request keeps them all.
    for (key, value) in extras.as_object().unwrap() {
        assert_eq!(&sent[1][key], value, "{key}");
    }
}

#[tokio::test]
async fn by_default_a_models_own_format_is_not_weighed() {
    let setup = Setup::with_options(
        by_default(Dialect::Hermes),
        &[json!({"content": "Sure, Paris."})],
    )
    .await;
    let (status, whole) = setup.whole(&request()).await;
    assert_eq!(status, 200, "{whole}");
    assert!(whole.get("atfunc").is_none(), "{whole}");
    let sent = setup.requests();
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert!(sent[0].get("logprobs").is_none());
}
