//! The config file: which tool boxes a registry holds, and how each reaches its system.
//!
//! ```json
//! {"root": "weather",
//!  "toolboxes": [
//!    {"name": "file", "kind": "file", "root": "./sandbox"},
//!    {"name": "weather", "kind": "command",
//!     "functions": [{"name": "get_temp", "description": "Current temperature",
//!                    "parameters": {"type": "object",
//!                                   "properties": {"location": {"type": "string"}},
//!                                   "required": ["location"]},
//!                    "command": ["python3", "weather.py"]}]},
//!    {"name": "api", "kind": "http", "base_url": "http://127.0.0.1:8080",
//!     "headers": {"Authorization": {"env": "API_TOKEN", "prefix": "Bearer "}},
//!     "functions": [{"...api-wrapper interface...": "", "method": "POST", "path": "/users/{org}"}]},
//!    {"name": "everything", "kind": "mcp",
//!     "command": ["npx", "-y", "@modelcontextprotocol/server-everything"]}]}
//! ```
//!
//! [`Config::from_path`] reads and checks a file, listing every problem at once, each
//! naming its toolbox and field; [`Config::build`] then reads the environment variables the
//! file names, opens folders, starts MCP servers and returns a [`Registry`].
//! [`Config::check`] goes the same way as `build` without starting the MCP servers, so
//! it reports what `build` would refuse.
//!
//! # Fields
//!
//! - `root` (optional): the toolbox whose functions are called without a prefix.
//! - `toolboxes`: a list; each has a `name` (a domain: letters, digits, `_`, parts joined by
//!   `.`; unique ignoring case; not `tools`, the control functions' domain), a `kind`, and
//!   optionally `timeout_ms` (a call's time limit; for `command`, `http` and `mcp` the
//!   default is 30 s, for `file` none) and `confirm` (`true`: every call of the box waits
//!   for the user's confirmation, see [`Registry::require_confirmation`]; a list of
//!   function names, as a call writes them after the box's name: those functions, which
//!   for an `mcp` box are checked against the server's tools when it has started). A
//!   function of a `command` or `http` box may say `"confirm": true` too, for itself alone.
//! - `file`: `root`, the folder (relative to the config file's folder); `max_read_bytes`.
//! - `command`: `functions`, interfaces each with a `command` (`["program", "arg", ...]`;
//!   a program holding a `/` is relative to the config file's folder, other names are
//!   looked up in `PATH`); `env`, variables to set; `pass_env`, names of this process's
//!   variables to pass on; `inherit_env` (default `false`: programs find only `PATH`,
//!   `HOME`, `LANG`, `TMPDIR`, `pass_env` and `env`; `true` passes every variable of this
//!   process, secrets included, on to them); `cwd`, the working directory (default: the
//!   config file's folder); `max_output_bytes` (default 1 MiB); `uid` and `gid`, the user
//!   and group the programs run as (Unix, atfunc running as root; default: atfunc's own).
//! - `http`: `base_url` (`http` or `https`, no credentials in it); `headers`, sent with every
//!   request; `functions`, interfaces each with a `path` (`/users/{org}`, placeholders
//!   naming parameters) and a `method` (default `GET`); `max_response_bytes` (default
//!   1 MiB); `max_redirects` (default 5, same origin and below
//!   the base URL's path only).
//! - `mcp`: `command`, the server to start; `env`, variables to set.
//!
//! An interface is any shape the loader reads ([`load_interfaces`]): the standard format
//! (its `domain` may be left out), an OpenAI tool, or a JSON Schema function. Its domain is
//! the toolbox's name.
//!
//! A value in `env` or `headers` is a string, or `{"env": "NAME"}` to read the variable
//! `NAME` when the registry is built (`{"env": "NAME", "prefix": "Bearer "}` puts text in
//! front). A value read from the environment is a secret: it is never printed, and an HTTP
//! response, a program's output or an error that echoes it (as written, in hex, in base64,
//! percent- or JSON-escaped) shows `[redacted]` instead. A variable that is not set
//! is a config error naming the variable when the registry is built to run calls
//! ([`Config::build`]); listing the functions ([`Config::build_for_listing`]) needs none.
//!
//! A field that is not known where it stands (`"timout_ms"`) is a problem too, reported
//! with the closest known name, so a typo is never dropped without a word.

#[cfg(feature = "file")]
use crate::execute::FileBox;
use crate::execute::{Registry, Timeout, ToolBox};
use crate::interface::json_kind;
use crate::interface::{is_identifier, load_interfaces, validate_toolbox, Interface, LoadError};
use serde_json::{Map, Value as Json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The name a config read from text (not a file) goes by in messages.
const TEXT_NAME: &str = "config";

/// Why a config could not be read, checked or built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The text is not JSON.
    #[error("{file}:{line}:{column}: not valid JSON: {message}")]
    Syntax {
        /// The file, as named to [`Config::from_path`].
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the JSON parser expected.
        message: String,
    },
    /// The config is JSON but wrong, or something it names could not be set up. Every
    /// problem is listed, one per line in the display.
    #[error("{}", list(.file, .problems))]
    Invalid {
        /// The file, as named to [`Config::from_path`].
        file: String,
        /// One message per problem: `toolbox 'api' (#3): field 'base_url' must be ...`.
        problems: Vec<String>,
    },
}

fn list(file: &str, problems: &[String]) -> String {
    problems
        .iter()
        .map(|p| format!("{file}: {p}"))
        .collect::<Vec<_>>()
        .join("\n")
}

impl ConfigError {
    /// The problems of an [`Invalid`](ConfigError::Invalid) config; empty otherwise.
    pub fn problems(&self) -> &[String] {
        match self {
            ConfigError::Invalid { problems, .. } => problems,
            _ => &[],
        }
    }
}

/// A string that is written in the config or read from the environment when the registry
/// is built.
#[derive(Clone, PartialEq)]
enum Source {
    Literal(String),
    Env { name: String, prefix: String },
}

impl Source {
    fn is_secret(&self) -> bool {
        matches!(self, Source::Env { .. })
    }
}

/// A checked config file: build it into a [`Registry`] with [`Config::build`].
#[derive(Clone)]
pub struct Config {
    file: String,
    dir: PathBuf,
    root: Option<String>,
    toolboxes: Vec<ToolboxSpec>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("file", &self.file)
            .field("root", &self.root)
            .field(
                "toolboxes",
                &self
                    .toolboxes
                    .iter()
                    .map(|t| (t.name.as_str(), t.kind.name()))
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

#[derive(Clone)]
struct ToolboxSpec {
    /// 1-based position in `toolboxes`, for messages.
    number: usize,
    name: String,
    timeout: Option<Duration>,
    /// Every function of the box needs the user's confirmation.
    confirm: bool,
    /// Functions that need it, by the name a call writes (`box.fn`).
    confirm_functions: Vec<String>,
    /// Functions the toolbox's own `confirm` lists, as a call writes them after the
    /// prefix: checked against the functions once the box is built (an MCP server's are
    /// known only then).
    confirm_listed: Vec<String>,
    kind: KindSpec,
}

impl ToolboxSpec {
    fn at(&self) -> String {
        format!("toolbox '{}' (#{})", self.name, self.number)
    }
}

#[derive(Clone)]
enum KindSpec {
    #[cfg_attr(not(feature = "file"), allow(dead_code))]
    File {
        root: PathBuf,
        max_read_bytes: Option<u64>,
    },
    Command {
        functions: Vec<(Interface, Vec<String>)>,
        env: Vec<(String, Source)>,
        inherit_env: bool,
        pass_env: Vec<String>,
        cwd: PathBuf,
        max_output_bytes: Option<usize>,
        run_as: Option<(u32, u32)>,
    },
    Http {
        base_url: String,
        headers: Vec<(String, Source)>,
        functions: Vec<(Interface, String, String)>,
        max_response_bytes: Option<usize>,
        max_redirects: Option<usize>,
    },
    Mcp {
        #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
        command: Vec<String>,
        env: Vec<(String, Source)>,
    },
}

impl KindSpec {
    fn name(&self) -> &'static str {
        match self {
            KindSpec::File { .. } => "file",
            KindSpec::Command { .. } => "command",
            KindSpec::Http { .. } => "http",
            KindSpec::Mcp { .. } => "mcp",
        }
    }
}

impl Config {
    /// Reads and checks a config file. Relative paths in it are relative to its folder.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        let dir = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
            _ => PathBuf::from("."),
        };
        Config::parse(&text, &dir, path.display().to_string())
    }

    /// Checks a config given as text; relative paths in it are relative to `dir`.
    ///
    /// ```
    /// use atfunc::config::Config;
    ///
    /// let folder = tempfile::tempdir()?;
    /// std::fs::create_dir(folder.path().join("sandbox"))?;
    /// let config = Config::from_text(
    ///     r#"{"toolboxes": [{"name": "file", "kind": "file", "root": "sandbox"}]}"#,
    ///     folder.path(),
    /// )?;
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// let registry = config.build().await?;
    /// assert_eq!(registry.toolboxes(), ["file", "tools"]);
    /// # Ok::<(), atfunc::config::ConfigError>(())
    /// # })?;
    ///
    /// let wrong = Config::from_text(r#"{"toolboxes": [{"name": "api", "kind": "http",
    ///     "base_url": "ftp://x", "functions": []}]}"#, ".").unwrap_err();
    /// assert_eq!(
    ///     wrong.to_string(),
    ///     "config: toolbox 'api' (#1): field 'base_url' must be an http(s) URL, found \"ftp://x\""
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_text(text: &str, dir: impl AsRef<Path>) -> Result<Config, ConfigError> {
        Config::parse(text, dir.as_ref(), TEXT_NAME.to_owned())
    }

    fn parse(text: &str, dir: &Path, file: String) -> Result<Config, ConfigError> {
        let json: Json = serde_json::from_str(text).map_err(|e| {
            let full = e.to_string();
            let message = match full.rfind(" at line ") {
                Some(cut) => full.get(..cut).unwrap_or(&full).to_owned(),
                None => full.clone(),
            };
            ConfigError::Syntax {
                file: file.clone(),
                line: e.line(),
                column: e.column(),
                message,
            }
        })?;
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
        let mut problems = Vec::new();
        let config = read_config(&json, &dir, &file, &mut problems);
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(ConfigError::Invalid { file, problems })
        }
    }

    /// The toolbox called without a prefix, if the config names one.
    pub fn root(&self) -> Option<&str> {
        self.root.as_deref()
    }

    /// The folder relative paths are taken from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The toolboxes' names, in order.
    pub fn toolbox_names(&self) -> Vec<&str> {
        self.toolboxes.iter().map(|t| t.name.as_str()).collect()
    }

    /// Builds the registry: reads the environment variables the config names, opens the
    /// file boxes' folders, starts the MCP servers, registers every box (and the control
    /// functions) and sets the root. Every problem is reported at once; if any is found,
    /// no MCP server is left running.
    pub async fn build(&self) -> Result<Registry, ConfigError> {
        self.build_with(Secrets::Required, Servers::Start).await
    }

    /// Checks the config as [`Config::build`] would build it, reporting every problem
    /// `build` would report, without starting anything: the environment variables it
    /// names are read, the file boxes' folders opened, every box but the MCP servers
    /// registered, the root set and the `confirm` lists checked against the functions.
    /// Only what a started MCP server would say (whether it starts, its tools, and so
    /// whether an MCP box's `confirm` list names them) is left out. This is
    /// `atfunc check --config`: one code path with `build`, so a config `check` passes is
    /// one `exec` and `serve` accept.
    ///
    /// ```
    /// use atfunc::config::Config;
    /// let config = Config::from_text(
    ///     r#"{"toolboxes": [{"name": "shell", "kind": "command", "confirm": ["wipe", "shred"],
    ///         "functions": [{"name": "wipe", "parameters": {"type": "object"}, "command": ["true"]}]}]}"#,
    ///     ".",
    /// )?;
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// let error = config.check().await.unwrap_err();
    /// assert_eq!(
    ///     error.problems(),
    ///     ["toolbox 'shell' (#1): field 'confirm': 'shred' is not one of its functions; they are wipe"]
    /// );
    /// # });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn check(&self) -> Result<(), ConfigError> {
        let registry = self.build_with(Secrets::Required, Servers::Skip).await?;
        // Nothing was started; closing is for form.
        let _ = registry.close().await;
        Ok(())
    }

    /// Builds the registry as [`Config::build`] does, to list its functions rather than
    /// run them (what `render --config` and `parse --config` show): listing needs no
    /// secret, so an environment variable that is not set is no error here. An http
    /// header it would give is sent empty, and a program's or an MCP server's variable is
    /// left unset (an MCP server is started, to list its tools).
    pub async fn build_for_listing(&self) -> Result<Registry, ConfigError> {
        self.build_with(Secrets::Optional, Servers::Start).await
    }

    async fn build_with(
        &self,
        secrets: Secrets,
        servers_do: Servers,
    ) -> Result<Registry, ConfigError> {
        let mut problems = Vec::new();
        let mut boxes: Vec<Arc<dyn ToolBox>> = Vec::new();
        // MCP servers start last, and only when everything else is right.
        let mut servers: Vec<&ToolboxSpec> = Vec::new();
        for spec in &self.toolboxes {
            if matches!(spec.kind, KindSpec::Mcp { .. }) {
                servers.push(spec);
                continue;
            }
            if let Some(tool_box) = build_local(spec, secrets, &mut problems) {
                boxes.push(tool_box);
            }
        }
        let mut mcp_env = Vec::new();
        for spec in &servers {
            if let KindSpec::Mcp { env, .. } = &spec.kind {
                mcp_env.push(resolve_all(env, &spec.at(), "env", secrets, &mut problems));
            }
        }
        if !problems.is_empty() {
            return Err(self.invalid(problems));
        }
        // Only checking, the MCP boxes are not there: not started, so not registered,
        // not the root, their confirm lists not checked.
        let skipped: Vec<&str> = match servers_do {
            Servers::Start => Vec::new(),
            Servers::Skip => std::mem::take(&mut servers)
                .into_iter()
                .map(|spec| spec.name.as_str())
                .collect(),
        };
        for (spec, env) in servers.into_iter().zip(mcp_env) {
            match start_mcp(spec, &env).await {
                Ok(tool_box) => boxes.push(tool_box),
                Err(problem) => problems.push(problem),
            }
        }
        // Keeps the registry's order the config's order.
        let order = |name: &str| {
            self.toolboxes
                .iter()
                .position(|t| t.name == name)
                .unwrap_or(usize::MAX)
        };
        boxes.sort_by_key(|b| order(b.name()));
        let registry = Registry::new();
        for tool_box in boxes {
            let name = tool_box.name().to_owned();
            if let Err(e) = registry.register_shared(tool_box) {
                let at = self
                    .toolboxes
                    .iter()
                    .find(|t| t.name == name)
                    .map_or_else(|| format!("toolbox '{name}'"), ToolboxSpec::at);
                problems.push(format!("{at}: {e}"));
            }
        }
        let is_skipped = |name: &str| skipped.iter().any(|s| s.eq_ignore_ascii_case(name));
        if let Some(root) = self.root.as_deref().filter(|root| !is_skipped(root)) {
            if let Err(e) = registry.set_root(root) {
                problems.push(format!("field 'root': {e}"));
            }
        }
        for spec in self.toolboxes.iter().filter(|t| !is_skipped(&t.name)) {
            let boxed = spec.confirm.then(|| spec.name.clone());
            for path in boxed.iter().chain(&spec.confirm_functions) {
                if let Err(e) = registry.require_confirmation(path) {
                    problems.push(format!("{}: field 'confirm': {e}", spec.at()));
                }
            }
            for function in &spec.confirm_listed {
                let path = format!("{}.{function}", spec.name);
                if registry.require_confirmation(&path).is_err() {
                    let known = registry
                        .toolbox_functions(&spec.name, &crate::execute::CallContext::new())
                        .unwrap_or_default();
                    let prefix = format!("{}.", spec.name);
                    let names: Vec<&str> = known
                        .iter()
                        .map(|f| f.strip_prefix(&prefix).unwrap_or(f))
                        .collect();
                    problems.push(format!(
                        "{}: field 'confirm': '{function}' is not one of its functions; they are {}",
                        spec.at(),
                        names.join(", ")
                    ));
                }
            }
        }
        if !problems.is_empty() {
            // Started servers are shut down rather than left to their drop.
            let _ = registry.close().await;
            return Err(self.invalid(problems));
        }
        Ok(registry)
    }

    fn invalid(&self, problems: Vec<String>) -> ConfigError {
        ConfigError::Invalid {
            file: self.file.clone(),
            problems,
        }
    }
}

/// Whether a build starts the MCP servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Servers {
    /// They start, and their boxes are registered: the registry is used.
    Start,
    /// They do not: the build only checks the config ([`Config::check`]).
    Skip,
}

/// Whether values read from the environment must be there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Secrets {
    /// Calls will run: a variable that is not set is a config error.
    Required,
    /// Functions are only listed: a variable that is not set is left out.
    Optional,
}

/// Builds a box that starts no process: file, command or http.
fn build_local(
    spec: &ToolboxSpec,
    secrets: Secrets,
    problems: &mut Vec<String>,
) -> Option<Arc<dyn ToolBox>> {
    let at = spec.at();
    let tool_box: Arc<dyn ToolBox> = match &spec.kind {
        #[cfg(feature = "file")]
        KindSpec::File {
            root,
            max_read_bytes,
        } => {
            let files = match FileBox::open(root) {
                Ok(files) => files.with_name(spec.name.clone()),
                Err(e) => {
                    problems.push(format!("{at}: field 'root': {e}"));
                    return None;
                }
            };
            let files = match max_read_bytes {
                Some(max) => files.with_max_read_bytes(*max),
                None => files,
            };
            with_timeout(files, spec.timeout)
        }
        #[cfg(not(feature = "file"))]
        KindSpec::File { .. } => {
            problems.push(format!(
                "{at}: a file toolbox needs atfunc built with its 'file' feature"
            ));
            return None;
        }
        KindSpec::Command {
            functions,
            env,
            inherit_env,
            pass_env,
            cwd,
            max_output_bytes,
            run_as,
        } => {
            let mut resolved = Vec::new();
            for (name, source) in env {
                match resolve(source) {
                    Ok(value) => resolved.push((name.clone(), value, source.is_secret())),
                    Err(_) if secrets == Secrets::Optional => {}
                    Err(variable) => {
                        problems.push(missing_variable(&at, &format!("env.{name}"), &variable))
                    }
                }
            }
            let environment = CommandEnv {
                values: resolved,
                inherit: *inherit_env,
                pass: pass_env,
            };
            build_command(
                spec,
                functions,
                environment,
                cwd,
                (*max_output_bytes, *run_as),
                problems,
            )?
        }
        KindSpec::Http {
            base_url,
            headers,
            functions,
            max_response_bytes,
            max_redirects,
        } => {
            let mut resolved = Vec::new();
            let mut missing = false;
            for (name, source) in headers {
                match resolve(source) {
                    Ok(value) => resolved.push((name.clone(), value, source.is_secret())),
                    Err(_) if secrets == Secrets::Optional => {
                        resolved.push((name.clone(), String::new(), true));
                    }
                    Err(variable) => {
                        missing = true;
                        problems.push(missing_variable(&at, &format!("headers.{name}"), &variable));
                    }
                }
            }
            if missing {
                return None;
            }
            let settings = HttpSettings {
                base_url,
                headers: resolved,
                functions,
                timeout: spec.timeout,
                max_response_bytes: *max_response_bytes,
                max_redirects: *max_redirects,
            };
            match build_http(&spec.name, settings) {
                Ok(tool_box) => tool_box,
                Err(found) => {
                    problems.extend(found.into_iter().map(|p| format!("{at}: {p}")));
                    return None;
                }
            }
        }
        KindSpec::Mcp { .. } => return None,
    };
    Some(tool_box)
}

#[cfg_attr(not(feature = "file"), allow(dead_code))]
fn with_timeout<B: ToolBox + 'static>(tool_box: B, limit: Option<Duration>) -> Arc<dyn ToolBox> {
    match limit {
        Some(limit) => Arc::new(Timeout::new(tool_box, limit)),
        None => Arc::new(tool_box),
    }
}

fn missing_variable(at: &str, field: &str, variable: &str) -> String {
    format!("{at}: field '{field}' reads the environment variable {variable}, which is not set")
}

/// Reads a value; `Err(variable)` when its environment variable is not set.
fn resolve(source: &Source) -> Result<String, String> {
    match source {
        Source::Literal(value) => Ok(value.clone()),
        Source::Env { name, prefix } => match std::env::var(name) {
            Ok(value) => Ok(format!("{prefix}{value}")),
            Err(_) => Err(name.clone()),
        },
    }
}

fn resolve_all(
    sources: &[(String, Source)],
    at: &str,
    field: &str,
    secrets: Secrets,
    problems: &mut Vec<String>,
) -> BTreeMap<String, String> {
    let mut values = BTreeMap::new();
    for (name, source) in sources {
        match resolve(source) {
            Ok(value) => {
                values.insert(name.clone(), value);
            }
            Err(_) if secrets == Secrets::Optional => {}
            Err(variable) => {
                problems.push(missing_variable(at, &format!("{field}.{name}"), &variable))
            }
        }
    }
    values
}

/// A command toolbox's environment: values (with whether each is a secret), and what it
/// takes from this process's. Only a build with the `command` feature starts programs, so
/// without it the fields are gathered (and checked) but never read.
#[cfg_attr(not(feature = "command"), allow(dead_code))]
struct CommandEnv<'a> {
    values: Vec<(String, String, bool)>,
    inherit: bool,
    pass: &'a [String],
}

#[cfg(feature = "command")]
fn build_command(
    spec: &ToolboxSpec,
    functions: &[(Interface, Vec<String>)],
    env: CommandEnv<'_>,
    cwd: &Path,
    (max_output_bytes, run_as): (Option<usize>, Option<(u32, u32)>),
    _problems: &mut [String],
) -> Option<Arc<dyn ToolBox>> {
    let mut tool_box = crate::execute::CommandBox::new(spec.name.clone())
        .inherit_env(env.inherit)
        .current_dir(cwd);
    for name in env.pass {
        tool_box = tool_box.pass_env(name.clone());
    }
    for (name, value, secret) in env.values {
        tool_box = if secret {
            tool_box.secret_env(name, value)
        } else {
            tool_box.env(name, value)
        };
    }
    if let Some(limit) = spec.timeout {
        tool_box = tool_box.timeout(limit);
    }
    if let Some(max) = max_output_bytes {
        tool_box = tool_box.max_output_bytes(max);
    }
    if let Some((uid, gid)) = run_as {
        tool_box = tool_box.run_as(uid, gid);
    }
    for (interface, command) in functions {
        tool_box = tool_box.function(interface.clone(), command.iter().cloned());
    }
    Some(Arc::new(tool_box))
}

#[cfg(not(feature = "command"))]
fn build_command(
    spec: &ToolboxSpec,
    _functions: &[(Interface, Vec<String>)],
    _env: CommandEnv<'_>,
    _cwd: &Path,
    _limits: (Option<usize>, Option<(u32, u32)>),
    problems: &mut Vec<String>,
) -> Option<Arc<dyn ToolBox>> {
    problems.push(format!("{}: {}", spec.at(), without("command", "command")));
    None
}

/// What an http box is built from, headers already read.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
struct HttpSettings<'a> {
    base_url: &'a str,
    headers: Vec<(String, String, bool)>,
    functions: &'a [(Interface, String, String)],
    timeout: Option<Duration>,
    max_response_bytes: Option<usize>,
    max_redirects: Option<usize>,
}

#[cfg(feature = "http")]
fn build_http(name: &str, settings: HttpSettings<'_>) -> Result<Arc<dyn ToolBox>, Vec<String>> {
    let mut builder = crate::execute::HttpBox::builder(name, settings.base_url);
    for (header, value, secret) in settings.headers {
        builder = if secret {
            builder.secret_header(header, value)
        } else {
            builder.header(header, value)
        };
    }
    for (interface, method, path) in settings.functions {
        builder = builder.endpoint(interface.clone(), method.clone(), path.clone());
    }
    if let Some(limit) = settings.timeout {
        builder = builder.timeout(limit);
    }
    if let Some(max) = settings.max_response_bytes {
        builder = builder.max_response_bytes(max);
    }
    if let Some(max) = settings.max_redirects {
        builder = builder.max_redirects(max);
    }
    match builder.build() {
        Ok(tool_box) => Ok(Arc::new(tool_box)),
        Err(e) => Err(e.problems),
    }
}

#[cfg(not(feature = "http"))]
fn build_http(_name: &str, _settings: HttpSettings<'_>) -> Result<Arc<dyn ToolBox>, Vec<String>> {
    Err(vec![without("HTTP", "http")])
}

/// The message for a kind this build of atfunc leaves out.
fn without(what: &str, feature: &str) -> String {
    format!("this atfunc was built without {what} support (feature `{feature}`)")
}

/// The time limit of an MCP tool call when the config sets no `timeout_ms`.
#[cfg(feature = "mcp")]
pub const DEFAULT_MCP_TIMEOUT: Duration = Duration::from_secs(30);

#[cfg(feature = "mcp")]
async fn start_mcp(
    spec: &ToolboxSpec,
    env: &BTreeMap<String, String>,
) -> Result<Arc<dyn ToolBox>, String> {
    let KindSpec::Mcp { command, .. } = &spec.kind else {
        return Err(format!("{}: not an mcp toolbox", spec.at()));
    };
    match crate::execute::McpBox::spawn(&spec.name, command, env).await {
        // A server's tool can hang like any program: the same default limit as `command`.
        Ok(server) => Ok(with_timeout(
            server,
            Some(spec.timeout.unwrap_or(DEFAULT_MCP_TIMEOUT)),
        )),
        Err(e) => Err(format!(
            "{}: the MCP server could not be started: {e}",
            spec.at()
        )),
    }
}

#[cfg(not(feature = "mcp"))]
async fn start_mcp(
    spec: &ToolboxSpec,
    _env: &BTreeMap<String, String>,
) -> Result<Arc<dyn ToolBox>, String> {
    Err(format!("{}: {}", spec.at(), without("MCP", "mcp")))
}

// ---------------------------------------------------------------------------------------
// Reading the JSON, every problem collected.

const TOP_FIELDS: &[&str] = &["root", "toolboxes"];
const COMMON_FIELDS: &[&str] = &["name", "kind", "timeout_ms", "confirm"];
const FILE_FIELDS: &[&str] = &["root", "max_read_bytes"];
const COMMAND_FIELDS: &[&str] = &[
    "functions",
    "env",
    "pass_env",
    "inherit_env",
    "cwd",
    "max_output_bytes",
    "uid",
    "gid",
];
const HTTP_FIELDS: &[&str] = &[
    "base_url",
    "headers",
    "functions",
    "max_response_bytes",
    "max_redirects",
];
const MCP_FIELDS: &[&str] = &["command", "env"];
/// The fields of a function in each shape a tools file takes (see `load_interfaces`).
const STANDARD_FIELDS: &[&str] = &[
    "domain",
    "name",
    "type",
    "description",
    "params",
    "path_params",
    "query_params",
    "request_body",
    "returns",
    "response_type",
];
const SCHEMA_FUNCTION_FIELDS: &[&str] = &[
    "type",
    "name",
    "description",
    "parameters",
    "returns",
    "strict",
];
const OPENAI_TOOL_FIELDS: &[&str] = &["type", "function"];
const KINDS: &str = "file, command, http or mcp";

fn read_config(json: &Json, dir: &Path, file: &str, problems: &mut Vec<String>) -> Config {
    let mut config = Config {
        file: file.to_owned(),
        dir: dir.to_owned(),
        root: None,
        toolboxes: Vec::new(),
    };
    let Some(map) = json.as_object() else {
        problems.push(format!(
            "the config must be a JSON object with 'toolboxes', found {}",
            json_kind(json)
        ));
        return config;
    };
    let mut top = Fields {
        map,
        at: String::new(),
        problems,
    };
    top.unknown(&[TOP_FIELDS]);
    config.root = top.string("root", false);
    let entries = match map.get("toolboxes") {
        Some(Json::Array(items)) => items.as_slice(),
        Some(other) => {
            problems.push(format!(
                "field 'toolboxes' must be a list of toolboxes, found {}",
                json_kind(other)
            ));
            &[]
        }
        None => {
            problems.push(String::from("missing required field 'toolboxes'"));
            &[]
        }
    };
    for (index, entry) in entries.iter().enumerate() {
        if let Some(spec) = read_toolbox(index + 1, entry, dir, problems) {
            config.toolboxes.push(spec);
        }
    }
    // Names are unique ignoring case, as calls match them.
    for (i, spec) in config.toolboxes.iter().enumerate() {
        let lower = spec.name.to_lowercase();
        if lower == crate::execute::CONTROL_DOMAIN {
            problems.push(format!(
                "{}: field 'name': '{}' is the control functions' domain; choose another name",
                spec.at(),
                spec.name
            ));
        }
        let earlier = config.toolboxes.get(..i).unwrap_or_default();
        if let Some(first) = earlier.iter().find(|t| t.name.to_lowercase() == lower) {
            problems.push(format!(
                "{}: field 'name': '{}' is taken by toolbox #{}; names must differ (ignoring case)",
                spec.at(),
                spec.name,
                first.number
            ));
        }
    }
    if let Some(root) = &config.root {
        if !config
            .toolboxes
            .iter()
            .any(|t| t.name.to_lowercase() == root.to_lowercase())
        {
            problems.push(format!(
                "field 'root': no toolbox is named '{root}'; it must be one of the toolboxes' names"
            ));
        }
    }
    config
}

fn read_toolbox(
    number: usize,
    entry: &Json,
    dir: &Path,
    problems: &mut Vec<String>,
) -> Option<ToolboxSpec> {
    let Some(map) = entry.as_object() else {
        problems.push(format!(
            "toolbox #{number}: must be an object with 'name' and 'kind', found {}",
            json_kind(entry)
        ));
        return None;
    };
    let name = match map.get("name") {
        Some(Json::String(name)) => Some(name.clone()),
        _ => None,
    };
    let at = match &name {
        Some(name) => format!("toolbox '{name}' (#{number})"),
        None => format!("toolbox #{number}"),
    };
    let mut fields = Fields {
        map,
        at: at.clone(),
        problems,
    };
    match (map.get("name"), &name) {
        (None, _) => fields.report("missing required field 'name'"),
        (Some(other), None) => fields.report(format!(
            "field 'name' must be a string, found {}",
            json_kind(other)
        )),
        (_, Some(name)) => {
            if name.is_empty() || !name.split('.').all(is_identifier) {
                fields.report(format!(
                    "field 'name' must be a name (letters, digits and '_', parts joined by '.'), found {}",
                    Json::String(name.clone())
                ));
            }
        }
    }
    let kind = fields.string("kind", true);
    let timeout = fields.positive("timeout_ms").map(Duration::from_millis);
    let (confirm, confirm_listed) = toolbox_confirm(&mut fields);
    let mut confirm_functions = Vec::new();
    let name = name?;
    let kind = match kind.as_deref() {
        Some("file") => {
            fields.unknown(&[COMMON_FIELDS, FILE_FIELDS]);
            let root = fields.string("root", true).map(|r| dir.join(r));
            let max_read_bytes = fields.positive("max_read_bytes");
            KindSpec::File {
                root: root?,
                max_read_bytes,
            }
        }
        Some("command") => {
            fields.unknown(&[COMMON_FIELDS, COMMAND_FIELDS]);
            let env = fields.sources("env");
            let inherit_env = fields.boolean("inherit_env").unwrap_or(false);
            let pass_env = fields.variable_names("pass_env");
            let cwd = fields
                .string("cwd", false)
                .map_or_else(|| dir.to_owned(), |c| dir.join(c));
            let max_output_bytes = fields.positive("max_output_bytes").map(to_usize);
            let run_as = fields.user_and_group();
            let mut functions = Vec::new();
            let read = read_functions(&mut fields, &name, &["command", "confirm"]);
            for (interface, extra) in read {
                if function_confirm(&mut fields, &interface, &extra) {
                    confirm_functions.push(interface.qualified_name());
                }
                let command = match extra.get("command") {
                    Some(value) => string_list(value),
                    None => Err(String::from("missing required field 'command'")),
                };
                match command {
                    Ok(command) => functions.push((interface, resolve_program(command, dir))),
                    Err(message) => fields.report(format!(
                        "function '{}': {}",
                        interface.name,
                        message.replace("the value", "field 'command'")
                    )),
                }
            }
            for (interface, _) in &functions {
                if interface.has_body() && interface.params.iter().any(|p| p.name == "body") {
                    fields.report(format!(
                        "function '{}': a parameter named 'body' clashes with the request body, which the program receives under \"body\"",
                        interface.name
                    ));
                }
            }
            KindSpec::Command {
                functions,
                env,
                inherit_env,
                pass_env,
                cwd,
                max_output_bytes,
                run_as,
            }
        }
        Some("http") => {
            fields.unknown(&[COMMON_FIELDS, HTTP_FIELDS]);
            let base_url = fields.string("base_url", true);
            let headers = fields.sources("headers");
            let max_response_bytes = fields.positive("max_response_bytes").map(to_usize);
            let max_redirects = fields.count("max_redirects").map(to_usize);
            let mut functions = Vec::new();
            let read = read_functions(&mut fields, &name, &["method", "path", "confirm"]);
            for (interface, extra) in read {
                if function_confirm(&mut fields, &interface, &extra) {
                    confirm_functions.push(interface.qualified_name());
                }
                let method = match extra.get("method") {
                    None => Some(String::from("GET")),
                    Some(Json::String(method)) => Some(method.clone()),
                    Some(other) => {
                        fields.report(format!(
                            "function '{}': field 'method' must be a string, found {}",
                            interface.name,
                            json_kind(other)
                        ));
                        None
                    }
                };
                let path = match extra.get("path") {
                    Some(Json::String(path)) => Some(path.clone()),
                    Some(other) => {
                        fields.report(format!(
                            "function '{}': field 'path' must be a string, found {}",
                            interface.name,
                            json_kind(other)
                        ));
                        None
                    }
                    None => {
                        fields.report(format!(
                            "function '{}': missing required field 'path'",
                            interface.name
                        ));
                        None
                    }
                };
                if let (Some(method), Some(path)) = (method, path) {
                    functions.push((interface, method, path));
                }
            }
            let Some(base_url) = base_url else {
                // The endpoints are still checked, against a stand-in URL, so that every
                // problem is reported at once.
                check_http(&name, "http://127.0.0.1", &headers, &functions, &mut fields);
                return None;
            };
            check_http(&name, &base_url, &headers, &functions, &mut fields);
            KindSpec::Http {
                base_url,
                headers,
                functions,
                max_response_bytes,
                max_redirects,
            }
        }
        Some("mcp") => {
            fields.unknown(&[COMMON_FIELDS, MCP_FIELDS]);
            let env = fields.sources("env");
            let command = match map.get("command") {
                Some(value) => match string_list(value) {
                    Ok(command) => Some(resolve_program(command, dir)),
                    Err(message) => {
                        fields.report(message.replace("the value", "field 'command'"));
                        None
                    }
                },
                None => {
                    fields.report("missing required field 'command'");
                    None
                }
            };
            KindSpec::Mcp {
                command: command?,
                env,
            }
        }
        Some(other) => {
            fields.report(format!(
                "field 'kind' must be {KINDS}, found {}",
                Json::String(other.to_owned())
            ));
            return None;
        }
        None => return None,
    };
    let spec = ToolboxSpec {
        number,
        name,
        timeout,
        confirm,
        confirm_functions,
        confirm_listed,
        kind,
    };
    check_built_in(&spec, &mut fields);
    Some(spec)
}

/// Kinds this build leaves out are reported while reading, with the other problems.
fn check_built_in(spec: &ToolboxSpec, fields: &mut Fields<'_>) {
    let missing = match spec.kind {
        KindSpec::Command { .. } if cfg!(not(feature = "command")) => Some(("command", "command")),
        KindSpec::Http { .. } if cfg!(not(feature = "http")) => Some(("HTTP", "http")),
        KindSpec::Mcp { .. } if cfg!(not(feature = "mcp")) => Some(("MCP", "mcp")),
        _ => None,
    };
    if let Some((what, feature)) = missing {
        fields.report(format!("field 'kind': {}", without(what, feature)));
    }
}

/// The static checks of an http box (URL, methods, paths, placeholders): an http box is
/// built with stand-in header values, which are read from the environment only later.
#[cfg(feature = "http")]
fn check_http(
    name: &str,
    base_url: &str,
    headers: &[(String, Source)],
    functions: &[(Interface, String, String)],
    fields: &mut Fields<'_>,
) {
    let stand_in = headers
        .iter()
        .map(|(header, source)| match source {
            Source::Literal(value) => (header.clone(), value.clone(), false),
            Source::Env { .. } => (header.clone(), String::from("stand-in"), false),
        })
        .collect();
    let settings = HttpSettings {
        base_url,
        headers: stand_in,
        functions,
        timeout: None,
        max_response_bytes: None,
        max_redirects: None,
    };
    if let Err(problems) = build_http(name, settings) {
        for problem in problems {
            fields.report(problem);
        }
    }
}

#[cfg(not(feature = "http"))]
fn check_http(
    _name: &str,
    _base_url: &str,
    _headers: &[(String, Source)],
    _functions: &[(Interface, String, String)],
    _fields: &mut Fields<'_>,
) {
}

/// A toolbox's `confirm`: `true` for every function, or a list of some functions' names.
fn toolbox_confirm(fields: &mut Fields<'_>) -> (bool, Vec<String>) {
    match fields.map.get("confirm") {
        None => (false, Vec::new()),
        Some(Json::Bool(confirm)) => (*confirm, Vec::new()),
        Some(Json::Array(items)) => {
            let mut names = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Json::String(name) if !name.is_empty() => names.push(name.clone()),
                    other => {
                        fields.report(format!(
                            "field 'confirm' must list function names, found {}",
                            json_kind(other)
                        ));
                        return (false, Vec::new());
                    }
                }
            }
            (false, names)
        }
        Some(other) => {
            fields.report(format!(
                "field 'confirm' must be true, false or a list of the toolbox's function names, found {}",
                json_kind(other)
            ));
            (false, Vec::new())
        }
    }
}

/// Whether a function entry says `"confirm": true`.
fn function_confirm(
    fields: &mut Fields<'_>,
    interface: &Interface,
    extra: &Map<String, Json>,
) -> bool {
    match extra.get("confirm") {
        None => false,
        Some(Json::Bool(confirm)) => *confirm,
        Some(other) => {
            fields.report(format!(
                "function '{}': field 'confirm' must be true or false, found {}",
                interface.name,
                json_kind(other)
            ));
            false
        }
    }
}

/// A program holding a `/` is relative to the config's folder; a bare name is looked up
/// in `PATH` when it runs.
fn resolve_program(mut command: Vec<String>, dir: &Path) -> Vec<String> {
    if let Some(program) = command.first_mut() {
        if program.contains('/') && Path::new(program.as_str()).is_relative() {
            *program = dir.join(program.as_str()).to_string_lossy().into_owned();
        }
    }
    command
}

fn string_list(value: &Json) -> Result<Vec<String>, String> {
    let Json::Array(items) = value else {
        return Err(format!(
            "the value must be a list of strings (the program, then its arguments), found {}",
            json_kind(value)
        ));
    };
    let mut list = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Json::String(s) => list.push(s.clone()),
            other => {
                return Err(format!(
                    "the value must hold only strings, found {}",
                    json_kind(other)
                ))
            }
        }
    }
    match list.first() {
        None => Err(String::from(
            "the value must name a program: it is an empty list",
        )),
        Some(program) if program.is_empty() => Err(String::from(
            "the value must name a program: its first item is empty",
        )),
        Some(_) => Ok(list),
    }
}

/// Reads a box's `functions`: each entry's own keys (`extra`) taken out, the rest loaded as
/// an interface in the box's domain.
fn read_functions(
    fields: &mut Fields<'_>,
    toolbox: &str,
    extra_keys: &[&str],
) -> Vec<(Interface, Map<String, Json>)> {
    let entries = match fields.map.get("functions") {
        Some(Json::Array(items)) => items.clone(),
        Some(other) => {
            fields.report(format!(
                "field 'functions' must be a list of interfaces, found {}",
                json_kind(other)
            ));
            return Vec::new();
        }
        None => {
            fields.report("missing required field 'functions'");
            return Vec::new();
        }
    };
    let mut loaded = Vec::new();
    for (index, entry) in entries.into_iter().enumerate() {
        let number = index + 1;
        let Json::Object(mut map) = entry else {
            fields.report(format!(
                "function #{number}: must be an object (an interface), found {}",
                json_kind(&entry)
            ));
            continue;
        };
        let mut extra = Map::new();
        for key in extra_keys {
            if let Some(value) = map.remove(*key) {
                extra.insert((*key).to_owned(), value);
            }
        }
        // The standard format requires a domain; inside a toolbox it is the toolbox's name.
        let openai = matches!(map.get("function"), Some(Json::Object(_)));
        let schema = map.contains_key("parameters") && !map.contains_key("params");
        let standard = !openai && !schema;
        // A misspelt field would otherwise be dropped without a word.
        let shape: &[&str] = if openai {
            OPENAI_TOOL_FIELDS
        } else if schema {
            SCHEMA_FUNCTION_FIELDS
        } else {
            STANDARD_FIELDS
        };
        let known: Vec<&str> = shape.iter().chain(extra_keys).copied().collect();
        let elsewhere: Vec<(&str, &str)> = COMMON_FIELDS
            .iter()
            .map(|name| (*name, "toolbox"))
            .collect();
        let label = match map
            .get("name")
            .or_else(|| map.get("function").and_then(|f| f.get("name")))
        {
            Some(Json::String(name)) => format!("function '{name}'"),
            _ => format!("function #{number}"),
        };
        for key in map.keys().filter(|key| !known.contains(&key.as_str())) {
            let message = unknown_field(key, &known, &elsewhere);
            fields.report(format!("{label}: {message}"));
        }
        if standard && !map.contains_key("domain") {
            map.insert("domain".into(), Json::String(toolbox.to_owned()));
        }
        let mut interfaces = match load_interfaces(&Json::Array(vec![Json::Object(map)])) {
            Ok(interfaces) => interfaces,
            Err(LoadError::Invalid(found)) => {
                for problem in found {
                    let function =
                        if problem.function.is_empty() || problem.function.starts_with('#') {
                            format!("function #{number}")
                        } else {
                            format!("function '{}'", problem.function)
                        };
                    fields.report(format!("{function}: {}", problem.message));
                }
                continue;
            }
            Err(other) => {
                fields.report(format!("function #{number}: {other}"));
                continue;
            }
        };
        let Some(mut interface) = interfaces.pop() else {
            continue;
        };
        match &interface.domain {
            None => interface.domain = Some(toolbox.to_owned()),
            Some(domain) if domain == toolbox => {}
            Some(domain) => {
                fields.report(format!(
                    "function '{}': its domain '{domain}' is not the toolbox's name '{toolbox}'; leave the domain out",
                    interface.qualified_name()
                ));
                continue;
            }
        }
        loaded.push((interface, extra));
    }
    let interfaces: Vec<Interface> = loaded.iter().map(|(i, _)| i.clone()).collect();
    if let Err(errors) = validate_toolbox(toolbox, &interfaces) {
        for error in errors.0 {
            fields.report(format!("function '{}': {}", error.function, error.message));
        }
    }
    loaded
}

/// One object's fields, read with problems reported against `at`.
struct Fields<'a> {
    map: &'a Map<String, Json>,
    /// `toolbox 'api' (#3)`, or empty at the top level.
    at: String,
    problems: &'a mut Vec<String>,
}

impl Fields<'_> {
    fn report(&mut self, message: impl Into<String>) {
        let message = message.into();
        if self.at.is_empty() {
            self.problems.push(message);
        } else {
            self.problems.push(format!("{}: {message}", self.at));
        }
    }

    fn unknown(&mut self, known: &[&[&str]]) {
        let mut unknown = Vec::new();
        for key in self.map.keys() {
            if !known.iter().any(|set| set.contains(&key.as_str())) {
                unknown.push(key.clone());
            }
        }
        let all: Vec<&str> = known.iter().flat_map(|set| set.iter().copied()).collect();
        for key in unknown {
            let message = unknown_field(&key, &all, &[]);
            self.report(message);
        }
    }

    fn string(&mut self, key: &str, required: bool) -> Option<String> {
        match self.map.get(key) {
            Some(Json::String(s)) => Some(s.clone()),
            None if required => {
                self.report(format!("missing required field '{key}'"));
                None
            }
            None => None,
            Some(other) => {
                self.report(format!(
                    "field '{key}' must be a string, found {}",
                    json_kind(other)
                ));
                None
            }
        }
    }

    fn boolean(&mut self, key: &str) -> Option<bool> {
        match self.map.get(key) {
            None => None,
            Some(Json::Bool(b)) => Some(*b),
            Some(other) => {
                self.report(format!(
                    "field '{key}' must be true or false, found {}",
                    json_kind(other)
                ));
                None
            }
        }
    }

    /// A whole number, at least 1.
    fn positive(&mut self, key: &str) -> Option<u64> {
        let value = self.count(key)?;
        if value == 0 {
            self.report(format!("field '{key}' must be at least 1, found 0"));
            return None;
        }
        Some(value)
    }

    /// `uid` and `gid`, both or neither: the user and group a command box's programs run
    /// as.
    fn user_and_group(&mut self) -> Option<(u32, u32)> {
        let mut id = |key: &str| {
            let value = self.count(key)?;
            match u32::try_from(value) {
                Ok(id) => Some(id),
                Err(_) => {
                    self.report(format!(
                        "field '{key}' must be a user or group id (at most {}), found {value}",
                        u32::MAX
                    ));
                    None
                }
            }
        };
        let (uid, gid) = (id("uid"), id("gid"));
        match (uid, gid) {
            (Some(uid), Some(gid)) => Some((uid, gid)),
            (Some(_), None) if !self.map.contains_key("gid") => {
                self.report(String::from(
                    "field 'uid' needs 'gid' beside it: the group the programs run as",
                ));
                None
            }
            (None, Some(_)) if !self.map.contains_key("uid") => {
                self.report(String::from(
                    "field 'gid' needs 'uid' beside it: the user the programs run as",
                ));
                None
            }
            _ => None,
        }
    }

    /// A whole number, 0 or more.
    fn count(&mut self, key: &str) -> Option<u64> {
        match self.map.get(key) {
            None => None,
            Some(Json::Number(n)) if n.as_u64().is_some() => n.as_u64(),
            Some(other) => {
                let found = match other {
                    Json::Number(n) => n.to_string(),
                    other => json_kind(other).to_owned(),
                };
                self.report(format!(
                    "field '{key}' must be a whole number, found {found}"
                ));
                None
            }
        }
    }

    /// `["NAME", ...]`: names of environment variables.
    fn variable_names(&mut self, key: &str) -> Vec<String> {
        let names = match self.map.get(key) {
            None => return Vec::new(),
            Some(Json::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Json::String(name) if !name.is_empty() && !name.contains(['=', '\0']) => {
                        Some(name.clone())
                    }
                    _ => None,
                })
                .collect::<Option<Vec<String>>>(),
            Some(_) => None,
        };
        names.unwrap_or_else(|| {
            self.report(format!(
                "field '{key}' must be a list of environment variable names, such as [\"LANG\"]"
            ));
            Vec::new()
        })
    }

    /// `{"NAME": "value" | {"env": "VAR", "prefix": "..."}}`.
    fn sources(&mut self, key: &str) -> Vec<(String, Source)> {
        let map = match self.map.get(key) {
            None => return Vec::new(),
            Some(Json::Object(map)) => map,
            Some(other) => {
                self.report(format!(
                    "field '{key}' must be an object of names to values, found {}",
                    json_kind(other)
                ));
                return Vec::new();
            }
        };
        let mut sources = Vec::new();
        for (name, value) in map {
            let field = format!("{key}.{name}");
            match value {
                Json::String(s) => sources.push((name.clone(), Source::Literal(s.clone()))),
                Json::Object(spec) => {
                    let variable = match spec.get("env") {
                        Some(Json::String(v)) if !v.is_empty() && !v.contains(['=', '\0']) => {
                            v.clone()
                        }
                        _ => {
                            self.report(format!(
                                "field '{field}' must be a string or {{\"env\": \"VARIABLE\"}}, and 'env' must name an environment variable"
                            ));
                            continue;
                        }
                    };
                    let prefix = match spec.get("prefix") {
                        None => String::new(),
                        Some(Json::String(p)) => p.clone(),
                        Some(other) => {
                            self.report(format!(
                                "field '{field}.prefix' must be a string, found {}",
                                json_kind(other)
                            ));
                            continue;
                        }
                    };
                    if let Some(extra) = spec
                        .keys()
                        .find(|k| !matches!(k.as_str(), "env" | "prefix"))
                    {
                        self.report(format!(
                            "field '{field}.{extra}' is not known here; the fields are env, prefix"
                        ));
                    }
                    sources.push((
                        name.clone(),
                        Source::Env {
                            name: variable,
                            prefix,
                        },
                    ));
                }
                other => self.report(format!(
                    "field '{field}' must be a string or {{\"env\": \"VARIABLE\"}}, found {}",
                    json_kind(other)
                )),
            }
        }
        sources
    }
}

/// Least similarity for a known field to be suggested for an unknown one.
const CLOSE_ENOUGH: f64 = 0.7;

/// `field 'timout_ms' is not known here (did you mean 'timeout_ms'?); the fields are ...`.
/// `elsewhere` are fields of the enclosing object, named when the key is one of them (or
/// close to one) and none of `known` is closer.
fn unknown_field(key: &str, known: &[&str], elsewhere: &[(&str, &str)]) -> String {
    let score = |name: &str| {
        strsim::normalized_damerau_levenshtein(&key.to_lowercase(), &name.to_lowercase())
    };
    let closest = known
        .iter()
        .map(|name| (score(name), *name))
        .filter(|(similarity, _)| *similarity >= CLOSE_ENOUGH)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let outside = elsewhere
        .iter()
        .map(|(name, owner)| (score(name), *name, *owner))
        .filter(|(similarity, _, _)| *similarity >= CLOSE_ENOUGH)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let hint = match (closest, outside) {
        (Some((here, _)), Some((there, name, owner))) if there > here => {
            format!(" ('{name}' is a field of the {owner})")
        }
        (Some((_, name)), _) => format!(" (did you mean '{name}'?)"),
        (None, Some((_, name, owner))) => format!(" ('{name}' is a field of the {owner})"),
        (None, None) => String::new(),
    };
    format!(
        "field '{key}' is not known here{hint}; the fields are {}",
        known.join(", ")
    )
}

fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}
