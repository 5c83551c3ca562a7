//! The gateway in front of a model that writes its own call format (`--upstream-dialect`):
//! a scripted upstream answers with hermes or pythonic text, and the client gets OpenAI
//! `tool_calls`, the same whole and streamed; a call that does not bind gets a repair round
//! that does not ask for atfunc's syntax; a hermes model can be held to a grammar of its own
//! blocks, and grammars are refused with a dialect that has none.

use atfunc::parse::Dialect;
use atfunc_gateway::serve::{Gateway, GatewayOptions};
use serde_json::{json, Value as Json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// What the scripted upstream answers, in order, and the requests it was sent.
#[derive(Default)]
struct Script {
    /// Each answer's message: `content` and, optionally, the upstream's own `tool_calls`.
    answers: VecDeque<Json>,
    requests: Vec<Json>,
}

/// The pieces a streamed answer's content is cut into, in characters, over and over.
const PIECES: [usize; 5] = [1, 3, 2, 7, 4];

/// `message` as a stream of chunks; with `usage` (asked for with
/// `stream_options.include_usage`), a last chunk without choices carries it, as OpenAI
/// sends it.
fn stream_events(message: &Json, usage: Option<&Json>) -> String {
    let mut events = String::new();
    let mut push = |delta: Json, finish: Json| {
        let chunk = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk",
            "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        events.push_str(&format!("data: {chunk}\n\n"));
    };
    let content: Vec<char> = message["content"]
        .as_str()
        .unwrap_or_default()
        .chars()
        .collect();
    let mut at = 0;
    for size in PIECES.iter().cycle() {
        if at >= content.len() {
            break;
        }
        let end = (at + size).min(content.len());
        let piece: String = content[at..end].iter().collect();
        push(json!({"content": piece}), Json::Null);
        at = end;
    }
    // The upstream's own calls come as OpenAI streams them: the name first, the
    // arguments in two pieces.
    for (index, call) in message["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let arguments = call["function"]["arguments"].as_str().unwrap_or_default();
        let half = arguments.len() / 2;
        push(
            json!({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                "function": {"name": call["function"]["name"], "arguments": &arguments[..half]}}]}),
            Json::Null,
        );
        push(
            json!({"tool_calls": [{"index": index, "function": {"arguments": &arguments[half..]}}]}),
            Json::Null,
        );
    }
    push(json!({}), json!("stop"));
    if let Some(usage) = usage {
        let chunk = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk",
            "created": 1, "model": "m", "choices": [], "usage": usage});
        events.push_str(&format!("data: {chunk}\n\n"));
    }
    events.push_str("data: [DONE]\n\n");
    events
}

/// A scripted upstream; its base URL.
async fn upstream(script: Arc<Mutex<Script>>) -> String {
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |body: String| {
            let script = Arc::clone(&script);
            async move {
                let request: Json = serde_json::from_str(&body).unwrap();
                let stream = request["stream"] == json!(true);
                let counted = request["stream_options"]["include_usage"] == json!(true);
                let message = {
                    let mut script = script.lock().unwrap();
                    script.requests.push(request);
                    script.answers.pop_front().expect("an answer is scripted")
                };
                let mut message = message;
                // A scripted `raw_body` is the whole answer's text, as it is: JSON that
                // serde_json would not write (Python's `-Infinity`).
                if let Some(body) = message.get("raw_body").and_then(Json::as_str) {
                    return (
                        axum::http::StatusCode::OK,
                        [(axum::http::header::CONTENT_TYPE, "application/json")],
                        body.to_owned(),
                    );
                }
                // A scripted `error_status` is an error answer of that status, its
                // `error` the OpenAI-shaped error object.
                if let Some(status) = message.get("error_status").and_then(Json::as_u64) {
                    let status = axum::http::StatusCode::from_u16(status as u16).unwrap();
                    let body = json!({"error": message["error"]}).to_string();
                    return (
                        status,
                        [(axum::http::header::CONTENT_TYPE, "application/json")],
                        body,
                    );
                }
                // A scripted `usage` goes beside `choices`, as servers send it.
                let usage = message
                    .as_object_mut()
                    .and_then(|m| m.remove("usage"))
                    .unwrap_or(Json::Null);
                // Scripted `logprobs` go in the choice beside the message, as servers send
                // them.
                let logprobs = message
                    .as_object_mut()
                    .and_then(|m| m.remove("logprobs"))
                    .unwrap_or(Json::Null);
                message["role"] = json!("assistant");
                if stream {
                    let usage = (counted && !usage.is_null()).then_some(&usage);
                    (
                        axum::http::StatusCode::OK,
                        [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
                        stream_events(&message, usage),
                    )
                } else {
                    let mut answer = json!({"id": "chatcmpl-1", "object": "chat.completion",
                        "created": 1, "model": "m",
                        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]});
                    if !usage.is_null() {
                        answer["usage"] = usage;
                    }
                    if !logprobs.is_null() {
                        answer["choices"][0]["logprobs"] = logprobs;
                    }
                    (
                        axum::http::StatusCode::OK,
                        [(axum::http::header::CONTENT_TYPE, "application/json")],
                        answer.to_string(),
                    )
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}")
}

pub(super) fn tools() -> Json {
    json!([{"type": "function", "function": {"name": "get-weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string"}, "max-days": {"type": "integer"}},
            "required": ["city"]}}},
        {"type": "function", "function": {"name": "local_time",
        "description": "The time in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
            "required": ["city"]}}}])
}

/// A gateway reading `dialect` in front of an upstream that answers `answers` in turn.
pub(super) struct Setup {
    script: Arc<Mutex<Script>>,
    address: String,
}

impl Setup {
    async fn new(dialect: Dialect, answers: &[Json]) -> Setup {
        Setup::with_options(
            {
                let mut options = GatewayOptions::default();
                options.upstream.dialect = dialect;
                options
            },
            answers,
        )
        .await
    }

    /// A gateway of `options` (its upstream the scripted one) in front of an upstream
    /// that answers `answers` in turn.
    pub(super) async fn with_options(options: GatewayOptions, answers: &[Json]) -> Setup {
        let script = Arc::new(Mutex::new(Script {
            answers: answers.iter().cloned().collect(),
            requests: Vec::new(),
        }));
        let gateway = Gateway::new({
            let mut options = options;
            options.upstream.url = upstream(Arc::clone(&script)).await;
            options
        })
        .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, gateway.router()).await });
        Setup {
            script,
            address: format!("http://{address}"),
        }
    }

    /// Scripts the answers again, for the same request made a second time.
    pub(super) fn script(&self, answers: &[Json]) {
        self.script.lock().unwrap().answers = answers.iter().cloned().collect();
    }

    pub(super) fn requests(&self) -> Vec<Json> {
        std::mem::take(&mut self.script.lock().unwrap().requests)
    }

    /// The client's answer to `request`, whole: status and body.
    pub(super) async fn whole(&self, request: &Json) -> (u16, Json) {
        let answer = reqwest::Client::new()
            .post(format!("{}/v1/chat/completions", self.address))
            .json(request)
            .send()
            .await
            .unwrap();
        (answer.status().as_u16(), answer.json().await.unwrap())
    }

    /// The client's answer to `request` streamed, as it came: the body of events.
    pub(super) async fn stream_text(&self, request: &Json) -> String {
        let mut request = request.clone();
        request["stream"] = json!(true);
        reqwest::Client::new()
            .post(format!("{}/v1/chat/completions", self.address))
            .json(&request)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// The client's answer to `request` streamed: the deltas joined into a message, and
    /// the finish reason.
    pub(super) async fn streamed(&self, request: &Json) -> (Json, String) {
        let text = self.stream_text(request).await;
        let mut content = String::new();
        let mut calls: Vec<Json> = Vec::new();
        let mut finish = String::new();
        for line in text.lines() {
            let Some(data) = line.strip_prefix("data: ") else {
                continue;
            };
            if data == "[DONE]" {
                break;
            }
            let chunk: Json = serde_json::from_str(data).unwrap();
            assert!(chunk.get("error").is_none(), "{chunk}");
            let Some(choice) = chunk.pointer("/choices/0") else {
                continue;
            };
            if let Some(reason) = choice["finish_reason"].as_str() {
                finish = reason.to_owned();
            }
            let delta = &choice["delta"];
            if let Some(piece) = delta["content"].as_str() {
                content.push_str(piece);
            }
            for call in delta["tool_calls"].as_array().into_iter().flatten() {
                let index = call["index"].as_u64().unwrap() as usize;
                assert_eq!(index, calls.len(), "each call comes whole, once: {text}");
                calls.push(json!({"name": call["function"]["name"],
                    "arguments": call["function"]["arguments"]}));
            }
        }
        let content = if content.is_empty() {
            Json::Null
        } else {
            Json::String(content)
        };
        (json!({"content": content, "calls": calls}), finish)
    }
}

/// A whole answer's message as [`Setup::streamed`] joins one: ids left out (each answer
/// gets fresh ones).
pub(super) fn joined(answer: &Json) -> Json {
    let message = &answer["choices"][0]["message"];
    let calls: Vec<Json> = message["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|call| {
            json!({"name": call["function"]["name"],
            "arguments": call["function"]["arguments"]})
        })
        .collect();
    json!({"content": message["content"], "calls": calls})
}

pub(super) fn request() -> Json {
    json!({"model": "m", "messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Paris and Oslo?"}],
        "tools": tools()})
}

/// `answer`, read in `dialect`, is `expected` whole and streamed.
async fn reads_as(dialect: Dialect, answer: &str, expected: Json) {
    let message = json!({"content": answer});
    let setup = Setup::new(dialect, std::slice::from_ref(&message)).await;
    let (status, whole) = setup.whole(&request()).await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(joined(&whole), expected, "{dialect}: {whole}");
    assert_eq!(whole["choices"][0]["finish_reason"], "tool_calls");
    for call in whole["choices"][0]["message"]["tool_calls"]
        .as_array()
        .unwrap()
    {
        assert!(call["id"].as_str().unwrap().starts_with("call_"), "{call}");
    }
    // The upstream got the tools and the conversation as they came, with no atfunc prompt.
    let sent = setup.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["tools"], tools());
    assert_eq!(sent[0]["messages"], request()["messages"]);
    assert_eq!(sent[0]["tool_choice"], "none");

    setup.script(&[message]);
    let (streamed, finish) = setup.streamed(&request()).await;
    assert_eq!(streamed, expected, "{dialect} streamed");
    assert_eq!(finish, "tool_calls");
}

/// `answer`, read in `dialect`, is text alone, whole and streamed: the calls it shows
/// have no marker of their own and stand beside prose.
async fn reads_as_text(dialect: Dialect, answer: &str) {
    let message = json!({"content": answer});
    let setup = Setup::new(dialect, std::slice::from_ref(&message)).await;
    let (status, whole) = setup.whole(&request()).await;
    assert_eq!(status, 200, "{whole}");
    // The gateway trims blanks at the end of an answer's content.
    let expected = json!({"content": answer.trim_end(), "calls": []});
    assert_eq!(joined(&whole), expected, "{dialect}: {whole}");
    assert_eq!(whole["choices"][0]["finish_reason"], "stop");
    setup.script(&[message]);
    let (streamed, finish) = setup.streamed(&request()).await;
    assert_eq!(streamed, expected, "{dialect} streamed");
    assert_eq!(finish, "stop");
}

#[tokio::test]
async fn a_hermes_answer_becomes_tool_calls_whole_and_streamed() {
    reads_as(
        Dialect::Hermes,
        "Let me check both.\n<tool_call>\n{\"name\": \"get-weather\", \"arguments\": \
         {\"city\": \"Paris\", \"max-days\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": \
         \"get-weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\nOne moment.",
        json!({"content": "Let me check both.\nOne moment.", "calls": [
            {"name": "get-weather", "arguments": "{\"city\":\"Paris\",\"max-days\":2}"},
            {"name": "get-weather", "arguments": "{\"city\":\"Oslo\"}"}]}),
    )
    .await;
}

#[tokio::test]
async fn a_pythonic_answer_becomes_tool_calls_whole_and_streamed() {
    reads_as(
        Dialect::Pythonic,
        "[local_time(city='Paris'), local_time(city=\"Oslo\")]\n",
        json!({"content": null, "calls": [
            {"name": "local_time", "arguments": "{\"city\":\"Paris\"}"},
            {"name": "local_time", "arguments": "{\"city\":\"Oslo\"}"}]}),
    )
    .await;
    // A list has no marker of its own: beside prose it is an example, not a call.
    reads_as_text(
        Dialect::Pythonic,
        "Checking [1, 2] first. [local_time(city='Paris'), local_time(city=\"Oslo\")] Done.",
    )
    .await;
}

#[tokio::test]
async fn auto_reads_the_format_the_model_wrote() {
    for answer in [
        "<tool_call>{\"name\": \"local_time\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>",
        "[local_time(city='Oslo')]",
    ] {
        reads_as(
            Dialect::Auto,
            answer,
            json!({"content": null, "calls": [
                {"name": "local_time", "arguments": "{\"city\":\"Oslo\"}"}]}),
        )
        .await;
    }
}

/// Qwen 2.5 under its own template writes a call as bare JSON, without `<tool_call>` tags:
/// hermes and auto read it when it names an offered tool, under the name the client gave
/// the tool too.
#[tokio::test]
async fn an_untagged_json_call_naming_an_offered_tool_becomes_tool_calls() {
    for dialect in [Dialect::Hermes, Dialect::Auto] {
        reads_as(
            dialect,
            "{\"name\": \"local_time\", \"arguments\": {\"city\": \"Oslo\"}}",
            json!({"content": null, "calls": [
                {"name": "local_time", "arguments": "{\"city\":\"Oslo\"}"}]}),
        )
        .await;
        reads_as(
            dialect,
            "{\"name\": \"get-weather\", \"arguments\": {\"city\": \"Oslo\"}}",
            json!({"content": null, "calls": [
                {"name": "get-weather", "arguments": "{\"city\":\"Oslo\"}"}]}),
        )
        .await;
        // Qwen2.5-Coder's way: the call in a ```json fence, which goes with it.
        reads_as(
            dialect,
            "```json\n{\n  \"name\": \"local_time\",\n  \"arguments\": {\n    \"city\": \"Oslo\"\n  }\n}\n```",
            json!({"content": null, "calls": [
                {"name": "local_time", "arguments": "{\"city\":\"Oslo\"}"}]}),
        )
        .await;
        // Beside prose, the same object is an example, whatever stands around it.
        reads_as_text(
            dialect,
            "Checking.\n```json\n{\"name\": \"local_time\", \"arguments\": {\"city\": \"Oslo\"}}\n```\n",
        )
        .await;
        reads_as_text(
            dialect,
            "{\"name\": \"local_time\", \"arguments\": {\"city\": \"Oslo\"}}\nThat is how you call it.",
        )
        .await;
    }
}

#[tokio::test]
async fn a_call_that_does_not_bind_gets_a_repair_round_in_the_models_format() {
    let bad = "Looking. <tool_call>{\"name\": \"get-weather\", \"arguments\": {\"max-days\": 2}}</tool_call>";
    let good = "<tool_call>{\"name\": \"get-weather\", \"arguments\": {\"city\": \"Paris\", \"max-days\": 2}}</tool_call>";
    let answers = [json!({"content": bad}), json!({"content": good})];
    let setup = Setup::new(Dialect::Hermes, &answers).await;
    let expected = json!({"content": "Looking.", "calls": [
        {"name": "get-weather", "arguments": "{\"city\":\"Paris\",\"max-days\":2}"}]});
    let (status, whole) = setup.whole(&request()).await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(joined(&whole), expected, "{whole}");
    let sent = setup.requests();
    assert_eq!(sent.len(), 2);
    let messages = sent[1]["messages"].as_array().unwrap();
    assert_eq!(messages[2], json!({"role": "assistant", "content": bad}));
    let note = messages[3]["content"].as_str().unwrap();
    assert_eq!(messages[3]["role"], "user");
    // The call as the model wrote it, the error, and no atfunc syntax.
    assert!(
        note.starts_with(
            "Function call: <tool_call>{\"name\": \"get-weather\", \"arguments\": {\"max-days\": 2}}</tool_call>\n\
             Returned: Error: Missing required parameter"
        ),
        "{note}"
    );
    assert!(note.contains("in the same tool-call format"), "{note}");
    assert!(!note.contains('@'), "{note}");

    setup.script(&answers);
    let (streamed, _) = setup.streamed(&request()).await;
    assert_eq!(streamed, expected);
}

/// A repair answer that writes again a call the first answer passed on (the model lists
/// every call, not only the corrected one) does not pass it on twice: atfunc's syntax and
/// models' own formats, whole and streamed.
#[tokio::test]
async fn a_repair_answer_does_not_pass_on_a_call_made_before() {
    let cases = [
        (
            Dialect::Atfunc,
            "@get_weather(Paris)\n@local_time()",
            "@get_weather(Paris)\n@local_time(Oslo)",
        ),
        (
            Dialect::Hermes,
            "<tool_call>{\"name\": \"get-weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>\n\
             <tool_call>{\"name\": \"local_time\", \"arguments\": {}}</tool_call>",
            "<tool_call>{\"name\": \"get-weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>\n\
             <tool_call>{\"name\": \"local_time\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>",
        ),
        (
            Dialect::Pythonic,
            "[get_weather(city='Paris'), local_time()]",
            "[get_weather(city='Paris'), local_time(city='Oslo')]",
        ),
    ];
    let expected = json!({"content": null, "calls": [
        {"name": "get-weather", "arguments": "{\"city\":\"Paris\"}"},
        {"name": "local_time", "arguments": "{\"city\":\"Oslo\"}"}]});
    for (dialect, first, repair) in cases {
        let answers = [json!({"content": first}), json!({"content": repair})];
        let setup = Setup::new(dialect, &answers).await;
        let (status, whole) = setup.whole(&request()).await;
        assert_eq!(status, 200, "{whole}");
        assert_eq!(joined(&whole), expected, "{dialect}: {whole}");
        assert_eq!(setup.requests().len(), 2, "{dialect}: no repair round");
        setup.script(&answers);
        let (streamed, finish) = setup.streamed(&request()).await;
        assert_eq!(streamed, expected, "{dialect} streamed");
        assert_eq!(finish, "tool_calls");
    }
}

#[tokio::test]
async fn a_call_block_that_cannot_be_read_gets_a_repair_round() {
    let bad = "<tool_call>{\"name\": \"get-weather\", \"arguments\": {\"city\": </tool_call>";
    let good = "[local_time(city='Paris')]";
    let setup = Setup::new(
        Dialect::Auto,
        &[json!({"content": bad}), json!({"content": good})],
    )
    .await;
    let (_, whole) = setup.whole(&request()).await;
    assert_eq!(
        joined(&whole),
        json!({"content": null, "calls": [
            {"name": "local_time", "arguments": "{\"city\":\"Paris\"}"}]})
    );
    let sent = setup.requests();
    let note = sent[1]["messages"][3]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        note.contains("Returned: Error: This call could not be read"),
        "{note}"
    );
    assert!(!note.contains('@'), "{note}");
}

#[tokio::test]
async fn required_tool_choice_asks_again_without_naming_a_syntax() {
    let answers = [
        json!({"content": "It is probably sunny."}),
        json!({"content": "[local_time(city='Paris')]"}),
    ];
    let setup = Setup::new(Dialect::Pythonic, &answers).await;
    let mut asked = request();
    asked["tool_choice"] = json!({"type": "function", "function": {"name": "local_time"}});
    let (_, whole) = setup.whole(&asked).await;
    assert_eq!(
        whole["choices"][0]["finish_reason"], "tool_calls",
        "{whole}"
    );
    let sent = setup.requests();
    assert_eq!(sent[0]["tool_choice"], "none");
    assert_eq!(
        sent[1]["messages"][3]["content"],
        "This answer must call local_time. Write the call now, and nothing else."
    );
}

#[tokio::test]
async fn the_upstreams_own_tool_calls_are_passed_on() {
    let message = json!({"content": "On it.", "tool_calls": [{"id": "call_up1",
        "type": "function", "function": {"name": "get-weather",
        "arguments": "{\"city\": \"Rome\"}"}}]});
    let setup = Setup::new(Dialect::Hermes, std::slice::from_ref(&message)).await;
    let expected = json!({"content": "On it.", "calls": [
        {"name": "get-weather", "arguments": "{\"city\": \"Rome\"}"}]});
    let (_, whole) = setup.whole(&request()).await;
    assert_eq!(joined(&whole), expected, "{whole}");
    assert_eq!(
        whole["choices"][0]["message"]["tool_calls"][0]["id"],
        "call_up1"
    );
    setup.script(&[message]);
    let (streamed, finish) = setup.streamed(&request()).await;
    assert_eq!(streamed, expected);
    assert_eq!(finish, "tool_calls");
}

/// With `--constrain`, a hermes model's answer is held to the grammar of its own call
/// objects, one fenced JSON list of them by default and `<tool_call>` blocks with
/// `hermes_blocks`: the grammar goes upstream with the tools for its template
/// (`tool_choice` "none", so that the server applies no format of its own), and the repair
/// round's grammar too.
#[tokio::test]
async fn a_hermes_model_is_held_to_the_grammar_of_its_own_calls() {
    use atfunc::grammar::CallForm;
    let object = |days: &str| {
        format!("{{\"name\": \"get-weather\", \"arguments\": {{\"city\": \"Paris\", \"max-days\": {days}}}}}")
    };
    let block = |days: &str| format!("<tool_call>\n{}\n</tool_call>", object(days));
    let list = |days: &str| format!("```json\n[\n  {}\n]\n```", object(days));
    for (blocks, form, written, marker) in [
        (
            false,
            CallForm::HermesList,
            &list as &dyn Fn(&str) -> String,
            "```json\n[",
        ),
        (true, CallForm::Hermes, &block, "<tool_call>"),
    ] {
        let (bad, good) = (written("\"two\""), written("2"));
        let answers = [json!({"content": bad}), json!({"content": good})];
        let options = {
            let mut options = GatewayOptions::default();
            options.upstream.dialect = Dialect::Hermes;
            options.upstream.hermes_blocks = blocks;
            options.policy.constrain = true;
            options.policy.resamples = 0;
            options
        };
        let setup = Setup::with_options(options, &answers).await;
        let mut asked = request();
        asked["tool_choice"] = json!("required");
        let (status, whole) = setup.whole(&asked).await;
        assert_eq!(status, 200, "{whole}");
        let expected = json!({"content": null, "calls": [
            {"name": "get-weather", "arguments": "{\"city\":\"Paris\",\"max-days\":2}"}]});
        assert_eq!(joined(&whole), expected, "{form:?}: {whole}");
        let sent = setup.requests();
        assert_eq!(sent.len(), 2, "one answer and one repair round");
        for request in &sent {
            assert_eq!(
                request["tools"],
                tools(),
                "the tools go up for the template"
            );
            assert_eq!(request["tool_choice"], "none");
            let grammar = request["grammar"].as_str().expect("a grammar upstream");
            let g = grammar.replace("\\\"", "\"").replace("\\n", "\n");
            assert!(g.contains(marker), "{grammar}");
            assert!(g.contains("\"name\": \"get-weather\""), "{grammar}");
            assert!(!grammar.contains('@'), "{grammar}");
        }
        // The grammar is that of the library: it takes the good answer and not the bad one.
        let g = atfunc::grammar::grammar(
            &atfunc::load_interfaces(&tools()).unwrap(),
            &atfunc::GrammarOptions::default()
                .with_choice(atfunc::grammar::Choice::Required)
                .with_form(form),
        )
        .unwrap();
        assert_eq!(g.to_gbnf(), sent[0]["grammar"].as_str().unwrap());
        assert!(g.accepts(&good) && !g.accepts(&bad), "{form:?}");
    }
}

#[tokio::test]
async fn grammars_are_refused_with_a_dialect_that_has_none() {
    for (constrain, constrain_per_request) in [(true, false), (false, true)] {
        let error = Gateway::new({
            let mut options = GatewayOptions::default();
            options.upstream.dialect = Dialect::Pythonic;
            options.policy.constrain = constrain;
            options.policy.constrain_per_request = constrain_per_request;
            options
        })
        .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("the upstream dialect is pythonic"),
            "{error}"
        );
        assert!(error.to_string().contains("atfunc or hermes"), "{error}");
    }
    let error = Gateway::new({
        let mut options = GatewayOptions::default();
        options.upstream.dialect = Dialect::Hermes;
        options.policy.constrain = true;
        options.policy.decide = true;
        options
    })
    .unwrap_err();
    assert!(error.to_string().contains("--decide"), "{error}");
    let setup = Setup::new(Dialect::Pythonic, &[]).await;
    let mut constrained = request();
    constrained["atfunc_constrain"] = json!(true);
    let (status, answer) = setup.whole(&constrained).await;
    assert_eq!(status, 400, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("(pythonic)"), "{message}");
    assert!(setup.requests().is_empty());
}

/// The second round of an agent loop: the assistant's call, with `"content": null` as
/// OpenAI writes it, and its result.
fn second_round(result_id: &str) -> Json {
    let mut asked = request();
    let messages = asked["messages"].as_array_mut().unwrap();
    messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get-weather", "arguments": "{\"city\": \"Paris\"}"}}]}));
    messages.push(json!({"role": "tool", "tool_call_id": result_id, "content": "21C"}));
    asked
}

#[tokio::test]
async fn an_assistant_message_without_content_goes_upstream_with_an_empty_one() {
    for dialect in [Dialect::Hermes, Dialect::Atfunc] {
        let setup = Setup::new(dialect, &[json!({"content": "It is 21C in Paris."})]).await;
        let asked = second_round("call_1");
        let (status, whole) = setup.whole(&asked).await;
        assert_eq!(status, 200, "{whole}");
        let sent = setup.requests();
        assert_eq!(sent.len(), 1);
        let assistant: Vec<&Json> = sent[0]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "assistant")
            .collect();
        assert_eq!(assistant.len(), 1, "{}", sent[0]);
        assert!(
            assistant[0]["content"].is_string(),
            "{dialect}: {}",
            sent[0]
        );
        if dialect == Dialect::Hermes {
            // Otherwise as the client wrote it, for the model's template.
            let mut expected = asked["messages"].clone();
            expected[2]["content"] = json!("");
            assert_eq!(sent[0]["messages"], expected);
        }
        // `tool_choice: "none"` sends the history on too.
        setup.script(&[json!({"content": "Sunny."})]);
        let mut none = asked.clone();
        none["tool_choice"] = json!("none");
        let (status, whole) = setup.whole(&none).await;
        assert_eq!(status, 200, "{whole}");
        let sent = setup.requests();
        assert_eq!(sent[0]["messages"][2]["role"], "assistant", "{}", sent[0]);
        assert!(sent[0]["messages"][2]["content"].is_string(), "{}", sent[0]);
    }
}

#[tokio::test]
async fn a_tool_result_for_a_call_never_made_is_refused_naming_the_ids() {
    for dialect in [Dialect::Hermes, Dialect::Atfunc] {
        let setup = Setup::new(dialect, &[]).await;
        let (status, whole) = setup.whole(&second_round("call_9")).await;
        assert_eq!(status, 400, "{whole}");
        let message = whole["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("messages[3] is a tool result for the call \"call_9\"")
                && message.contains("have the ids \"call_1\""),
            "{message}"
        );
        assert!(setup.requests().is_empty());
    }
}
