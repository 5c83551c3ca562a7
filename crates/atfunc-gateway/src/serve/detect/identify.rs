//! What the probes' replies say the upstream is, and what a chat template teaches its
//! model: pure reading, no I/O.

use serde_json::Value as Json;

/// The kind of server the upstream was found to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServerKind {
    /// llama.cpp's `llama-server`.
    LlamaServer,
    /// llama-cpp-python's server (`python -m llama_cpp.server`).
    LlamaCppPython,
    /// Ollama.
    Ollama,
    /// vLLM; `guided` for a version before `structured_outputs` (0.10.2).
    Vllm {
        /// Takes `guided_grammar`, not `structured_outputs`.
        guided: bool,
    },
    /// SGLang.
    Sglang,
    /// A server that answered, as none of the others.
    Unknown,
}

impl ServerKind {
    /// The name the route gives it.
    pub(crate) fn id(self) -> &'static str {
        match self {
            ServerKind::LlamaServer => "llama-server",
            ServerKind::LlamaCppPython => "llama-cpp-python",
            ServerKind::Ollama => "ollama",
            ServerKind::Vllm { .. } => "vllm",
            ServerKind::Sglang => "sglang",
            ServerKind::Unknown => "unknown",
        }
    }

    /// The name a person reads.
    pub(crate) fn described(self) -> &'static str {
        match self {
            ServerKind::LlamaServer => "llama.cpp's llama-server",
            ServerKind::LlamaCppPython => "llama-cpp-python's server",
            ServerKind::Ollama => "Ollama",
            ServerKind::Vllm { guided: false } => "vLLM",
            ServerKind::Vllm { guided: true } => "vLLM before 0.10.2",
            ServerKind::Sglang => "SGLang",
            ServerKind::Unknown => "a server of no kind known",
        }
    }
}

/// The call format a chat template teaches its model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TemplateCalls {
    /// Hermes' `<tool_call>` blocks (Qwen2.5, Hermes).
    Hermes,
    /// None that the gateway knows: the template shows no calls, or calls in a format not
    /// read here.
    NoneKnown,
}

impl TemplateCalls {
    pub(crate) fn id(self) -> &'static str {
        match self {
            TemplateCalls::Hermes => "hermes",
            TemplateCalls::NoneKnown => "none known",
        }
    }
}

/// The call format `template` (a chat template's text, Jinja or Ollama's Go template)
/// teaches its model. A template that writes the calls of an assistant message, or asks
/// for them, spells out their markers: `<tool_call>` is Hermes' (and Qwen2.5's, which
/// took it).
pub(crate) fn template_calls(template: &str) -> TemplateCalls {
    if template.contains("<tool_call>") {
        TemplateCalls::Hermes
    } else {
        TemplateCalls::NoneKnown
    }
}

/// What the probes found the upstream to be.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Found {
    pub(crate) server: ServerKind,
    /// Which answer said so (`GET /props answered`).
    pub(crate) by: String,
    /// The server's version or build, when it said.
    pub(crate) version: Option<String>,
    /// The model it serves (its path or id; the first listed when it serves several).
    pub(crate) model: Option<String>,
    /// The call format of the model's chat template; `None` when no template was read
    /// (a server that does not show it).
    pub(crate) template: Option<TemplateCalls>,
}

/// What one probe got.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) enum Reply {
    /// No answer: the connection failed or the time limit passed.
    #[default]
    Nothing,
    /// An answer with a status that is not a success.
    Status(u16),
    /// A success whose body is not JSON (or could not be read whole).
    NotJson,
    /// A success in JSON.
    Json(Json),
}

impl Reply {
    /// Whether the server answered as one that is up: "503" is llama-server's answer
    /// while it loads its model.
    fn answered(&self) -> bool {
        !matches!(self, Reply::Nothing | Reply::Status(503))
    }

    /// The answer's field `name`, when the answer is a JSON object that has it.
    fn field(&self, name: &str) -> Option<&Json> {
        match self {
            Reply::Json(Json::Object(object)) => object.get(name),
            _ => None,
        }
    }

    pub(crate) fn text(&self, name: &str) -> Option<String> {
        self.field(name)
            .and_then(Json::as_str)
            .map(ToOwned::to_owned)
    }
}

/// The probes' replies, one per route asked.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Replies {
    /// `GET /props` (llama-server).
    pub(crate) props: Reply,
    /// `GET /v1/models` (every OpenAI-compatible server).
    pub(crate) models: Reply,
    /// `GET /api/version` (Ollama).
    pub(crate) ollama_version: Reply,
    /// `GET /version` (vLLM).
    pub(crate) version: Reply,
    /// `GET /get_model_info` (SGLang).
    pub(crate) model_info: Reply,
}

/// The first model `GET /v1/models` lists: its `id` and `owned_by`.
fn first_model(models: &Reply) -> (Option<String>, Option<String>) {
    let first = models
        .field("data")
        .and_then(Json::as_array)
        .and_then(|list| list.first());
    let text = |name: &str| {
        first
            .and_then(|model| model.get(name))
            .and_then(Json::as_str)
            .map(ToOwned::to_owned)
    };
    (text("id"), text("owned_by"))
}

/// Whether a vLLM `version` (`0.10.1.1`, `0.9.2rc1`, `0.6.3.post1`) is before 0.10.2,
/// which took `structured_outputs`; a version that cannot be read is taken as recent.
fn vllm_is_guided(version: &str) -> bool {
    let mut numbers = version.split('.').map(|part| {
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u64>().ok()
    });
    let mut next = || numbers.next().flatten();
    match (next(), next(), next()) {
        (Some(major), Some(minor), patch) => (major, minor, patch.unwrap_or(0)) < (0, 10, 2),
        _ => false,
    }
}

/// What `replies` say the upstream is; `None` when nothing answered as a server that is
/// up. The server's own routes are believed before `owned_by` in `/v1/models`, and an
/// answer of any other shape is a server of no kind known.
pub(crate) fn identify(replies: &Replies) -> Option<Found> {
    let all = [
        &replies.props,
        &replies.models,
        &replies.ollama_version,
        &replies.version,
        &replies.model_info,
    ];
    if !all.iter().any(|reply| reply.answered()) {
        return None;
    }
    let (model_id, owned_by) = first_model(&replies.models);
    let found = |server, by: &str| Found {
        server,
        by: by.to_owned(),
        version: None,
        model: model_id.clone(),
        template: None,
    };
    let props = &replies.props;
    if ["chat_template", "build_info", "default_generation_settings"]
        .iter()
        .any(|name| props.field(name).is_some())
    {
        return Some(Found {
            version: props.text("build_info"),
            model: props.text("model_path").or_else(|| model_id.clone()),
            template: props.text("chat_template").map(|t| template_calls(&t)),
            ..found(ServerKind::LlamaServer, "GET /props answered")
        });
    }
    if let Some(path) = replies.model_info.text("model_path") {
        return Some(Found {
            model: Some(path),
            ..found(ServerKind::Sglang, "GET /get_model_info answered")
        });
    }
    if let Some(version) = replies.ollama_version.text("version") {
        return Some(Found {
            version: Some(version),
            ..found(ServerKind::Ollama, "GET /api/version answered")
        });
    }
    let by_owner = match owned_by.as_deref() {
        Some("vllm") => {
            let version = replies.version.text("version");
            let guided = version.as_deref().is_some_and(vllm_is_guided);
            return Some(Found {
                version,
                ..found(
                    ServerKind::Vllm { guided },
                    "GET /v1/models answered with owned_by \"vllm\"",
                )
            });
        }
        Some("me") => ServerKind::LlamaCppPython,
        Some("llamacpp") => ServerKind::LlamaServer,
        Some("sglang") => ServerKind::Sglang,
        Some("library" | "ollama") => ServerKind::Ollama,
        _ => {
            let refused = all
                .iter()
                .any(|reply| matches!(reply, Reply::Status(401 | 403)));
            let by = if refused {
                "it answered, as no kind known; it refused a probe without a key (give \
                 --upstream-key-env)"
            } else {
                "it answered, as no kind known"
            };
            return Some(found(ServerKind::Unknown, by));
        }
    };
    let by = format!(
        "GET /v1/models answered with owned_by \"{}\"",
        owned_by.unwrap_or_default()
    );
    Some(found(by_owner, &by))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// From the chat template of Qwen2.5-Coder-0.5B-Instruct (its GGUF's
    /// `tokenizer.chat_template`): the lines that ask for calls and write them.
    const QWEN25_TEMPLATE: &str = r#"{{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
        {%- for tool_call in message.tool_calls %}
            {{- '\n<tool_call>\n{"name": "' }}"#;

    /// The whole chat template of SmolLM2-135M-Instruct (its GGUF's): no tools, no calls.
    const SMOLLM2_TEMPLATE: &str = "{% for message in messages %}{% if loop.first and \
        messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI \
        assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' \
        + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if \
        add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

    #[test]
    fn a_template_that_writes_tool_call_tags_teaches_hermes() {
        assert_eq!(template_calls(QWEN25_TEMPLATE), TemplateCalls::Hermes);
        assert_eq!(template_calls(SMOLLM2_TEMPLATE), TemplateCalls::NoneKnown);
        assert_eq!(template_calls(""), TemplateCalls::NoneKnown);
    }

    fn props(template: &str) -> Reply {
        Reply::Json(json!({
            "default_generation_settings": {"n_ctx": 4096},
            "total_slots": 1,
            "model_path": "/models/qwen.gguf",
            "chat_template": template,
            "build_info": "b6000-abc",
        }))
    }

    fn models(owned_by: &str) -> Reply {
        Reply::Json(json!({"object": "list", "data": [
            {"id": "m-1", "object": "model", "owned_by": owned_by, "extra": [1, 2]}
        ]}))
    }

    #[test]
    fn each_kind_of_server_is_told_by_its_own_answers() {
        let llama = identify(&Replies {
            props: props(QWEN25_TEMPLATE),
            models: models("llamacpp"),
            ..Replies::default()
        })
        .unwrap();
        assert_eq!(llama.server, ServerKind::LlamaServer);
        assert_eq!(llama.by, "GET /props answered");
        assert_eq!(llama.template, Some(TemplateCalls::Hermes));
        assert_eq!(llama.version.as_deref(), Some("b6000-abc"));
        assert_eq!(llama.model.as_deref(), Some("/models/qwen.gguf"));

        let python = identify(&Replies {
            props: Reply::Status(404),
            models: models("me"),
            ..Replies::default()
        })
        .unwrap();
        assert_eq!(python.server, ServerKind::LlamaCppPython);
        assert_eq!(python.template, None);

        let ollama = identify(&Replies {
            props: Reply::NotJson,
            models: models("library"),
            ollama_version: Reply::Json(json!({"version": "0.5.7"})),
            ..Replies::default()
        })
        .unwrap();
        assert_eq!(ollama.server, ServerKind::Ollama);
        assert_eq!(ollama.version.as_deref(), Some("0.5.7"));
        assert_eq!(ollama.model.as_deref(), Some("m-1"));

        let vllm = |version: &str| {
            identify(&Replies {
                models: models("vllm"),
                version: Reply::Json(json!({"version": version})),
                ..Replies::default()
            })
            .unwrap()
            .server
        };
        assert_eq!(vllm("0.11.0"), ServerKind::Vllm { guided: false });
        assert_eq!(vllm("0.10.2"), ServerKind::Vllm { guided: false });
        assert_eq!(vllm("0.10.1.1"), ServerKind::Vllm { guided: true });
        assert_eq!(vllm("0.9.2rc1"), ServerKind::Vllm { guided: true });
        assert_eq!(vllm("dev"), ServerKind::Vllm { guided: false });

        let sglang = identify(&Replies {
            model_info: Reply::Json(
                json!({"model_path": "Qwen/Qwen2.5-7B", "is_generation": true}),
            ),
            models: models("sglang"),
            ..Replies::default()
        })
        .unwrap();
        assert_eq!(sglang.server, ServerKind::Sglang);
        assert_eq!(sglang.model.as_deref(), Some("Qwen/Qwen2.5-7B"));
    }

    #[test]
    fn answers_of_other_shapes_are_a_server_of_no_kind_known() {
        let other = identify(&Replies {
            props: Reply::Json(json!(["not", "an", "object"])),
            models: Reply::Json(json!({"data": "nothing listed"})),
            version: Reply::Status(404),
            ..Replies::default()
        })
        .unwrap();
        assert_eq!(other.server, ServerKind::Unknown);
        let locked = identify(&Replies {
            models: Reply::Status(401),
            ..Replies::default()
        })
        .unwrap();
        assert!(locked.by.contains("--upstream-key-env"), "{}", locked.by);
    }

    #[test]
    fn nothing_or_only_loading_is_not_an_answer() {
        assert_eq!(identify(&Replies::default()), None);
        let loading = Replies {
            props: Reply::Status(503),
            models: Reply::Status(503),
            ..Replies::default()
        };
        assert_eq!(identify(&loading), None);
    }
}
