//! `atfunc serve`: the OpenAI-compatible gateway in front of a model server without
//! native tool calling. The behaviour is documented in `atfunc_gateway::serve`.

use super::Failure;
use atfunc::parse::Dialect;
use atfunc_gateway::serve::{CallThreshold, Gateway, GatewayOptions, UpstreamKind, DEFAULT_LISTEN};
use atfunc_tools::config::Config;
use atfunc_tools::Registry;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// Arguments of `atfunc serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// The OpenAI-compatible server to forward to (`http://127.0.0.1:11434` for Ollama,
    /// `http://127.0.0.1:8080` for llama.cpp); `/v1` is added unless the URL ends with it.
    #[arg(long, value_name = "URL")]
    upstream: String,
    /// The address to listen on. Port 0 picks a free port; the address in use is printed.
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN)]
    listen: String,
    /// A config file of tool boxes; requests with "atfunc_execute": true have their calls
    /// run there.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Run the calls of every request that carries no tools of its own (needs --config).
    #[arg(long, requires = "config")]
    execute: bool,
    /// Most model answers in one executed request.
    #[arg(long, value_name = "N", default_value_t = 8)]
    max_steps: usize,
    /// How many times a request may ask the model again to fix calls that do not bind.
    #[arg(long, value_name = "N", default_value_t = 1)]
    repair_rounds: usize,
    /// Rounds of calls after a user message before the gateway asks the model for its
    /// answer in words, without the tools (at least 1).
    #[arg(long, value_name = "N", default_value_t = atfunc_gateway::turn::DEFAULT_CALL_ROUNDS)]
    call_rounds: usize,
    /// Seconds to wait for the upstream's answer to start, and for each next piece of it.
    #[arg(long, value_name = "SECONDS", default_value_t = 300.0)]
    upstream_timeout: f64,
    /// Seconds one request may take from its head to its answer's last byte, repair
    /// rounds and executed steps included; past it the answer is cut off with an error.
    #[arg(long, value_name = "SECONDS", default_value_t = 600.0)]
    request_timeout: f64,
    /// Seconds a request's head may take to arrive, from its first byte; past it the
    /// connection is closed.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    header_timeout: f64,
    /// Seconds a request's body may take to arrive once its head is in; past it the
    /// client gets 408.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    body_timeout: f64,
    /// Seconds a connection may wait for its next request (or its first), or its client
    /// take nothing of its answer; past it the connection is closed.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    idle_timeout: f64,
    /// Seconds the rest of a request's body is read and thrown away after an answer given
    /// before it was read (503, 401, 413, 400), so the client reads the answer instead of a
    /// connection reset (at most --max-request-bytes); 0 closes at once.
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    linger_timeout: f64,
    /// The environment variable holding the key clients must send as
    /// `Authorization: Bearer <key>`.
    #[arg(long, value_name = "NAME")]
    api_key_env: Option<String>,
    /// The environment variable holding the key sent to the upstream as
    /// `Authorization: Bearer <key>` (without it, and without --api-key-env, the client's
    /// own Authorization header is forwarded).
    #[arg(long, value_name = "NAME")]
    upstream_key_env: Option<String>,
    /// Largest request body accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 8 << 20)]
    max_request_bytes: usize,
    /// Largest upstream answer read, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 20)]
    max_response_bytes: usize,
    /// Most requests handled at once; one more gets 503 at once.
    #[arg(long, value_name = "N", default_value_t = atfunc_gateway::serve::DEFAULT_MAX_CONCURRENT)]
    max_concurrent: usize,
    /// Most tool lists kept as read, so that a request sending a list again costs a hash
    /// (agents send the same one with every request); 0 keeps none.
    #[arg(long, value_name = "N", default_value_t = 64)]
    tool_cache_lists: usize,
    /// Most bytes the tool lists kept may hold together (each counted as twelve times its
    /// text, plus its prompt and grammars); the list used longest ago goes first.
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20)]
    tool_cache_bytes: usize,
    /// Send requests with tools upstream with the GBNF grammar of their tools, so the model
    /// can only write calls that bind (a request's "atfunc_constrain" overrides this).
    /// Without --constrain or --no-constrain, the policy chosen for the upstream found
    /// decides (off for every upstream for now; see GET /atfunc/policy).
    #[arg(long, overrides_with = "no_constrain")]
    constrain: bool,
    /// Send no grammar unless a request asks (with --constrain-per-request), whatever the
    /// policy chosen for the upstream says.
    #[arg(long, overrides_with = "constrain")]
    no_constrain: bool,
    /// Let a request turn the grammar on for itself with "atfunc_constrain": true (without
    /// this, or --constrain, such a request gets 400: building a grammar is work the server
    /// pays for).
    #[arg(long)]
    constrain_per_request: bool,
    /// Under a grammar and tool_choice "auto", decide first: a short request whose grammar
    /// allows one tool's name or none, then, for a name, the answer under that tool's
    /// grammar (none: the auto grammar, as without this flag). Needs --constrain (or
    /// --constrain-per-request).
    #[arg(long)]
    decide: bool,
    /// The max_tokens of --decide's decision request; a name cut by it counts as no
    /// decision.
    #[arg(long, value_name = "N", default_value_t = 32)]
    decide_max_tokens: u32,
    /// Under a grammar and tool_choice "auto", weigh first: one token asked with its log
    /// probabilities, then the answer held to calls when the tokens that open a call hold
    /// at least P, to prose without a call when they hold less. Without this flag, in
    /// atfunc's syntax, P is 0.03 where the upstream returns log probabilities (stderr
    /// says when it does not; the answers then go under the auto grammar), and a model's
    /// own format (--upstream-dialect) and --decide are not weighed. A given P is above 0
    /// and at most 1, needs --constrain (or --constrain-per-request) and an upstream that
    /// returns log probabilities, and is not taken with --decide; off never weighs.
    #[arg(long, value_name = "P|off")]
    call_threshold: Option<CallThreshold>,
    /// Pass on a call that repeats one passed on earlier in the same answer (the same
    /// tool, the same arguments). Without it such a repeat ends the answer: a small model
    /// that cannot stop writes its calls again until its token limit.
    #[arg(long)]
    keep_repeated_calls: bool,
    /// Under a grammar, ask an answer whose calls do not bind again as it was asked,
    /// sampled (at temperature 0.7 when the client's is 0 or unset, with a seed each), at
    /// most N times before the repair rounds; a small model's failures under a grammar are
    /// loops, which another sample rarely repeats. 0: repair rounds only.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u16).range(0..=64))]
    resamples: u16,
    /// Under a grammar, a text argument must be a run of whole words of the user's
    /// messages (within a sentence): no invented or copied values, but no text the user
    /// did not write either. For tools that take names, places and ids from the question.
    #[arg(long)]
    ground_text: bool,
    /// List each described parameter under its function in the prompt: which value goes
    /// where, for more prompt tokens. The default; the flag is kept so that a command line
    /// can say so.
    #[arg(long, overrides_with = "no_param_descriptions")]
    param_descriptions: bool,
    /// Leave the parameters' descriptions out of the prompt: fewer prompt tokens, less
    /// accuracy (EVAL.md (w)).
    #[arg(long, overrides_with = "param_descriptions")]
    no_param_descriptions: bool,
    /// Under a grammar, bound every string to 256 characters and every list to 32 items,
    /// so that a model looping inside a value still closes its call.
    #[arg(long)]
    bound_values: bool,
    /// Under a grammar, let a text argument be a bare word (`unit=units`) as well as a
    /// quoted string: a model that writes values unquoted is not made to open a quote. The
    /// default; the flag is kept so that a command line can say so.
    #[arg(long, overrides_with = "no_bare_strings")]
    bare_strings: bool,
    /// Under a grammar, every text argument is a quoted string: for a model that quotes
    /// its values (SmolLM2-135M gets 2 more of 908 BFCL cases right, and 4 points less on
    /// BFCL's Simple; EVAL.md (y)).
    #[arg(long, overrides_with = "bare_strings")]
    no_bare_strings: bool,
    #[command(flatten)]
    limits: super::tools::LoadLimitArgs,
    /// The kind of upstream, which decides the field the grammar goes in: llama-cpp
    /// (`grammar`), vllm (`structured_outputs.grammar`), vllm-guided (`guided_grammar`,
    /// older vLLM), sglang (`ebnf`). Without it, the kind the gateway finds the upstream
    /// to be, else llama-cpp.
    #[arg(long, value_enum, value_name = "KIND")]
    upstream_kind: Option<UpstreamKindArg>,
    /// The call format the upstream's model writes as plain content: atfunc (the gateway
    /// prompts it with atfunc's syntax), or the model's own format behind a server without
    /// a tool parser: hermes, llama3, mistral, pythonic, deepseek, qwen3_xml, harmony, or
    /// auto (any of them: the first call read fixes the format of each answer; a call in
    /// a sentence is prose). With another format than
    /// atfunc, the tools go upstream as they came for the model's template; --constrain
    /// holds hermes answers to the tools' calls, all of them one JSON list in a ```json
    /// fence (the best policy measured for Qwen2.5-Coder-0.5B, EVAL.md (ad)), and is
    /// refused for the other formats. Without it, the policy chosen for the upstream found
    /// decides (atfunc for every upstream for now; see GET /atfunc/policy).
    #[arg(long, value_name = "NAME")]
    upstream_dialect: Option<Dialect>,
    /// With --upstream-dialect hermes --constrain: hold the answer to `<tool_call>` blocks,
    /// one per call, instead of one fenced list of calls (for a model trained to write the
    /// tags).
    #[arg(long)]
    hermes_blocks: bool,
    /// Do not ask the upstream what it is: the flags and the defaults alone make the
    /// policy. Without it the gateway asks at start (GET /props, /v1/models, /api/version,
    /// /version, /get_model_info; 2 s each), chooses the grammar field, the call format and
    /// the grammar for what it found where no flag gives them, and says so on stderr and
    /// at GET /atfunc/policy.
    #[arg(long)]
    no_detect: bool,
    /// Write what the gateway does to stderr: `info` (a line per request with its status
    /// and time, the end of each stream, and every error answered with its message),
    /// `debug` (also what each turn chose and each round asked of the upstream), or a
    /// filter as RUST_LOG takes it (`atfunc_gateway=debug,hyper=info`). A bare level is
    /// the gateway's alone. Without it, RUST_LOG when set; otherwise nothing.
    #[arg(long, value_name = "FILTER")]
    log: Option<String>,
    /// Seconds to wait at start for the upstream to answer; when it has not, the gateway
    /// starts with the defaults and keeps asking in the background, and the policy for
    /// what it finds holds for the requests after. 0 does not wait.
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    detect_wait: f64,
}

fn env_key(name: &Option<String>, what: &str) -> Result<Option<String>, Failure> {
    let Some(name) = name else {
        return Ok(None);
    };
    match std::env::var(name) {
        Ok(value) if !value.is_empty() => Ok(Some(value)),
        _ => Err(Failure(format!(
            "the environment variable {name} ({what}) is not set or empty"
        ))),
    }
}

/// `seconds` as a duration, when it is a positive number a duration can hold.
fn seconds(seconds: f64, flag: &str) -> Result<Duration, Failure> {
    if seconds.is_finite() && seconds > 0.0 {
        if let Ok(duration) = Duration::try_from_secs_f64(seconds) {
            return Ok(duration);
        }
    }
    Err(Failure(format!(
        "--{flag} must be a positive number of seconds"
    )))
}

/// The gateway's options for `args`, the config's registry (if any) given.
fn options(args: &ServeArgs, registry: Option<Arc<Registry>>) -> Result<GatewayOptions, Failure> {
    let upstream_timeout = seconds(args.upstream_timeout, "upstream-timeout")?;
    let request_timeout = seconds(args.request_timeout, "request-timeout")?;
    let header_timeout = seconds(args.header_timeout, "header-timeout")?;
    let body_timeout = seconds(args.body_timeout, "body-timeout")?;
    let idle_timeout = seconds(args.idle_timeout, "idle-timeout")?;
    let linger_timeout = if args.linger_timeout == 0.0 {
        Duration::ZERO
    } else {
        seconds(args.linger_timeout, "linger-timeout")?
    };
    let mut options = GatewayOptions::new(args.upstream.clone());
    options.upstream.timeout = upstream_timeout;
    options.policy.repair_rounds = args.repair_rounds;
    options.limits.max_request_bytes = args.max_request_bytes;
    options.upstream.max_response_bytes = args.max_response_bytes;
    options.api_key = env_key(&args.api_key_env, "--api-key-env")?;
    options.upstream.key = env_key(&args.upstream_key_env, "--upstream-key-env")?;
    options.registry = registry;
    options.policy.execute_all = args.execute;
    options.policy.max_steps = args.max_steps.max(1);
    options.policy.call_rounds = args.call_rounds.max(1);
    options.policy.constrain = args.constrain;
    options.detect.given.constrain = args.constrain || args.no_constrain;
    options.policy.constrain_per_request = args.constrain_per_request;
    options.policy.decide = args.decide;
    options.policy.decide_max_tokens = args.decide_max_tokens;
    options.policy.call_threshold = args.call_threshold.unwrap_or_default();
    options.policy.keep_repeated_calls = args.keep_repeated_calls;
    options.policy.resamples = usize::from(args.resamples);
    options.policy.ground_text = args.ground_text;
    options.policy.param_descriptions = !args.no_param_descriptions;
    options.policy.bound_values = args.bound_values;
    options.policy.bare_strings = !args.no_bare_strings;
    options.limits.load_limits = args.limits.limits();
    if let Some(kind) = args.upstream_kind {
        options.upstream.kind = kind.into();
    }
    if let Some(dialect) = args.upstream_dialect {
        options.upstream.dialect = dialect;
    }
    options.upstream.hermes_blocks = args.hermes_blocks;
    options.detect.enabled = !args.no_detect;
    options.detect.given.kind = args.upstream_kind.is_some();
    options.detect.given.dialect = args.upstream_dialect.is_some();
    options.detect.given.hermes_blocks = args.hermes_blocks;
    options.detect.wait_at_start = if args.detect_wait == 0.0 {
        Duration::ZERO
    } else {
        seconds(args.detect_wait, "detect-wait")?
    };
    options.limits.max_concurrent = args.max_concurrent;
    options.limits.tool_cache_lists = args.tool_cache_lists;
    options.limits.tool_cache_bytes = args.tool_cache_bytes;
    options.limits.header_timeout = header_timeout;
    options.limits.body_timeout = body_timeout;
    options.limits.idle_timeout = idle_timeout;
    options.limits.request_timeout = request_timeout;
    options.limits.linger_timeout = linger_timeout;
    Ok(options)
}

/// The gateway's options for the arguments of `atfunc serve` (after `serve`), without a
/// config: what the command would serve. For the lab, which checks that each of its modes
/// makes the requests `atfunc serve` makes with the flags it names.
pub fn serve_options<I, T>(args: I) -> Result<GatewayOptions, String>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    #[derive(Debug, clap::Parser)]
    struct Serve {
        #[command(flatten)]
        args: ServeArgs,
    }
    let args =
        std::iter::once(std::ffi::OsString::from("serve")).chain(args.into_iter().map(Into::into));
    let parsed = <Serve as clap::Parser>::try_parse_from(args).map_err(|e| e.to_string())?;
    if parsed.args.config.is_some() {
        return Err("--config needs the command's own runtime; start `atfunc serve`".to_owned());
    }
    options(&parsed.args, None).map_err(|e| e.0)
}

pub(crate) fn run(args: ServeArgs) -> Result<ExitCode, Failure> {
    install_log(args.log.as_deref())?;
    super::exec::keep_environment_private();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async {
        let registry = match &args.config {
            Some(path) => {
                let config = Config::from_path(path).map_err(|e| Failure(e.to_string()))?;
                super::tools::note_config_warnings(path, &config);
                Some(Arc::new(
                    config.build().await.map_err(|e| Failure(e.to_string()))?,
                ))
            }
            None => None,
        };
        let options = options(&args, registry.clone())?;
        let has_key = options.api_key.is_some();
        let gateway = Gateway::new(options).map_err(|e| Failure(e.to_string()))?;
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .map_err(|e| Failure(format!("cannot listen on {}: {e}", args.listen)))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Failure(format!("cannot listen on {}: {e}", args.listen)))?;
        if !addr.ip().is_loopback() && !has_key {
            eprintln!(
                "atfunc: warning: listening on {addr}, beyond this machine, without --api-key-env"
            );
        }
        eprintln!(
            "atfunc serve: listening on http://{addr} (upstream {})",
            atfunc_gateway::serve::shown_url(&args.upstream)
        );
        // The address is the first line (scripts read it); connections made while the
        // upstream is asked wait to be accepted, and get the policy chosen for it. A stop
        // signal meanwhile stops the command as it would stop the server.
        let mut stop = Box::pin(stop_signal());
        let stopped = tokio::select! {
            () = gateway.detect_upstream() => false,
            () = &mut stop => true,
        };
        let served = if stopped {
            Ok(())
        } else {
            atfunc_gateway::serve::serve(listener, gateway, stop).await
        };
        if let Some(registry) = registry {
            // MCP servers are child processes: end them before leaving.
            let _ = registry.close().await;
        }
        served.map_err(|e| Failure(format!("the server stopped: {e}")))?;
        Ok(ExitCode::SUCCESS)
    })
}

/// Completes on Ctrl-C, or on SIGTERM where there is one, so that the config's MCP servers
/// are closed either way.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut terminate) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// `--upstream-kind`: [`UpstreamKind`] as the command line spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum UpstreamKindArg {
    /// llama.cpp's `llama-server` and llama-cpp-python's server: `"grammar"`.
    LlamaCpp,
    /// vLLM: `"structured_outputs": {"grammar"}`.
    Vllm,
    /// Older vLLM: `"guided_grammar"`.
    VllmGuided,
    /// SGLang: `"ebnf"`.
    Sglang,
}

impl From<UpstreamKindArg> for UpstreamKind {
    fn from(kind: UpstreamKindArg) -> UpstreamKind {
        match kind {
            UpstreamKindArg::LlamaCpp => UpstreamKind::LlamaCpp,
            UpstreamKindArg::Vllm => UpstreamKind::Vllm,
            UpstreamKindArg::VllmGuided => UpstreamKind::VllmGuided,
            UpstreamKindArg::Sglang => UpstreamKind::Sglang,
        }
    }
}

/// Levels a bare `--log` names, which then filter the atfunc crates alone: `debug` for
/// everything would bury the gateway's lines under the HTTP libraries'.
const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

/// Installs the subscriber `--log` (or RUST_LOG) asks for; none when neither is given.
fn install_log(flag: Option<&str>) -> Result<(), Failure> {
    let (filter, from) = match flag {
        Some(filter) => (filter.trim().to_owned(), "--log"),
        None => match std::env::var("RUST_LOG") {
            Ok(filter) if !filter.trim().is_empty() => (filter.trim().to_owned(), "RUST_LOG"),
            _ => return Ok(()),
        },
    };
    let directives = if LEVELS.contains(&filter.to_ascii_lowercase().as_str()) {
        format!("warn,atfunc={filter},atfunc_gateway={filter},atfunc_tools={filter}")
    } else {
        filter.clone()
    };
    let filter = tracing_subscriber::EnvFilter::try_new(&directives).map_err(|e| {
        Failure(format!(
            "{from} {filter}: not a log filter ({e}); give a level (info, debug) or \
             directives such as atfunc_gateway=debug"
        ))
    })?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init()
        .map_err(|e| Failure(format!("cannot start the log: {e}")))
}

#[cfg(test)]
mod tests {
    use super::serve_options;

    #[test]
    fn the_tool_list_cache_bounds_are_flags() {
        let upstream = ["--upstream", "http://127.0.0.1:9"];
        let options = serve_options(upstream.iter().chain(&[
            "--tool-cache-lists",
            "0",
            "--tool-cache-bytes",
            "1000",
        ]))
        .unwrap();
        assert_eq!(options.limits.tool_cache_lists, 0);
        assert_eq!(options.limits.tool_cache_bytes, 1000);
        let defaults = serve_options(upstream).unwrap();
        assert_eq!(defaults.limits.tool_cache_lists, 64);
        assert_eq!(defaults.limits.tool_cache_bytes, 64 << 20);
        let bad = serve_options(upstream.iter().chain(&["--tool-cache-lists", "many"]));
        assert!(bad.unwrap_err().contains("--tool-cache-lists"));
    }
}
