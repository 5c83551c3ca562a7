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
//! it reports what `build` would refuse; [`Config::check_file`] does both steps at once,
//! and lists the problems of reading and of building together.
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
//! An interface is any shape the loader reads ([`load_interfaces`](atfunc::load_interfaces)): the standard format
//! (its `domain` may be left out), an OpenAI tool, or a JSON Schema function. Its domain is
//! the toolbox's name.
//!
//! A value in `env` or `headers` is a string, or `{"env": "NAME"}` to read the variable
//! `NAME` when the registry is built (`{"env": "NAME", "prefix": "Bearer "}` puts text in
//! front). A value read from the environment is a secret: it is never printed, and an HTTP
//! response, a program's output or an error that echoes it (as written, in hex, in base64,
//! percent- or JSON-escaped) shows `[redacted]` instead. A variable that is not set
//! is a config error naming the variable when the registry is built to run calls
//! ([`Config::build`]); checking the config ([`Config::check`]) reports it as a warning,
//! and listing the functions ([`Config::build_for_listing`]) needs none.
//!
//! A field that is not known where it stands (`"timout_ms"`) is a problem too, reported
//! with the closest known name, so a typo is never dropped without a word. So is a key
//! given twice in one object (`"root": "./box", "root": "/"`), anywhere in the file: JSON
//! readers keep the last one silently.

#[cfg(feature = "file")]
use crate::FileBox;
use crate::{Registry, Timeout, ToolBox};
use atfunc::interface::{is_identifier, validate_toolbox, Interface, LoadError};
use atfunc::interface::{LoadLimits, LoadOptions, Strictness};
use atfunc::messages;
use atfunc::messages::{json_kind, json_message};
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
    /// Toolboxes that could not be read (a config with any is refused): their names, so
    /// that a check of the rest does not call them missing.
    unread: Vec<String>,
    /// What reading the functions' definitions worked around, and the restrictions they
    /// declare that atfunc does not enforce (see [`Config::warnings`]).
    warnings: Vec<String>,
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

/// A config file's text, its folder (where relative paths start) and its name for messages.
fn read_file(path: &Path) -> Result<(String, PathBuf, String), ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    };
    Ok((text, dir, path.display().to_string()))
}

impl Config {
    /// Reads and checks a config file. Relative paths in it are relative to its folder.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        let (text, dir, file) = read_file(path.as_ref())?;
        Config::parse(&text, &dir, file)
    }

    /// Reads a config file and checks it as [`Config::check`] does, in one go, so that
    /// every problem of the file is listed at once: those of reading it (a field of the
    /// wrong type, an unknown field) and those of building it (a folder that does not
    /// exist, a `confirm` list naming a function the box does not have). Only the toolboxes
    /// that read without a problem are built, so no problem is reported twice. This is
    /// `atfunc check --config`. Returns the config and the warnings of [`Config::check`].
    ///
    /// ```
    /// use atfunc_tools::config::Config;
    ///
    /// let folder = tempfile::tempdir()?;
    /// let path = folder.path().join("atfunc.json");
    /// std::fs::write(&path, r#"{"toolboxes": [
    ///     {"name": "api", "kind": "http", "base_url": 8080, "functions": []},
    ///     {"name": "docs", "kind": "file", "root": "no-such-folder"}]}"#)?;
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// let error = Config::check_file(&path).await.unwrap_err();
    /// let problems = error.problems();
    /// assert_eq!(problems[0], "toolbox 'api' (#1): field 'base_url' must be a string, found a number");
    /// assert!(problems[1].starts_with("toolbox 'docs' (#2): field 'root': "));
    /// # });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn check_file(path: impl AsRef<Path>) -> Result<(Config, Vec<String>), ConfigError> {
        Config::check_file_with(path, Strictness::Lenient).await
    }

    /// [`Config::check_file`], reading the functions' definitions with `strictness`: with
    /// [`Strictness::Strict`] what a lenient reading works around, and each restriction
    /// atfunc does not enforce, is a problem instead of a warning (`atfunc check --strict
    /// --config`).
    ///
    /// ```
    /// use atfunc_tools::config::Config;
    /// use atfunc::interface::Strictness;
    ///
    /// let folder = tempfile::tempdir()?;
    /// let path = folder.path().join("atfunc.json");
    /// std::fs::write(&path, r#"{"toolboxes": [{"name": "disk", "kind": "command",
    ///     "functions": [{"name": "wipe", "command": ["true"], "parameters": {
    ///         "type": "object", "properties": {"force": {"type": "boolean",
    ///                                                    "enum": ["True", "False"]}}}}]}]}"#)?;
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// let (_, warnings) = Config::check_file(&path).await.unwrap();
    /// assert_eq!(warnings, ["toolbox 'disk' (#1): function 'wipe': Parameter 'force' is \
    ///     boolean but none of its choices (\"True\", \"False\") is a boolean; it is read as \
    ///     boolean with the choices true, false"]);
    /// let strict = Config::check_file_with(&path, Strictness::Strict).await.unwrap_err();
    /// assert_eq!(strict.problems().len(), 1);
    /// # });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn check_file_with(
        path: impl AsRef<Path>,
        strictness: Strictness,
    ) -> Result<(Config, Vec<String>), ConfigError> {
        let (text, dir, file) = read_file(path.as_ref())?;
        let (config, mut problems) = Config::read(&text, &dir, file, strictness)?;
        match config.build_with(Secrets::Warn, Servers::Skip).await {
            Ok((registry, warnings)) => {
                // Nothing was started; closing is for form.
                let _ = registry.close().await;
                if problems.is_empty() {
                    let mut all = config.warnings.clone();
                    all.extend(warnings);
                    return Ok((config, all));
                }
            }
            Err(error) => problems.extend(error.problems().iter().cloned()),
        }
        Err(config.invalid(problems))
    }

    /// Checks a config given as text; relative paths in it are relative to `dir`.
    ///
    /// ```
    /// use atfunc_tools::config::Config;
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
    /// # Ok::<(), atfunc_tools::config::ConfigError>(())
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
        let (config, problems) = Config::read(text, dir, file, Strictness::Lenient)?;
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(config.invalid(problems))
        }
    }

    /// The config as far as it could be read, and the problems found; an error only for
    /// text that is not JSON. A toolbox with a problem is left out of the config, its
    /// name kept in `unread`. The functions' definitions are read with `strictness`.
    fn read(
        text: &str,
        dir: &Path,
        file: String,
        strictness: Strictness,
    ) -> Result<(Config, Vec<String>), ConfigError> {
        let json: Json = serde_json::from_str(text).map_err(|e| ConfigError::Syntax {
            file: file.clone(),
            line: e.line(),
            column: e.column(),
            message: json_message(&e),
        })?;
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
        // The parsed value kept only the last of two equal keys; the text still has both.
        let mut problems = duplicate_keys(text);
        let mut reading = Reading {
            strictness,
            warnings: Vec::new(),
        };
        let mut config = read_config(&json, &dir, &file, &mut problems, &mut reading);
        config.warnings = reading.warnings;
        Ok((config, problems))
    }

    /// What reading the functions' definitions worked around (a boolean whose choices
    /// are `["True", "False"]` read as a boolean, say), and the restrictions they declare
    /// that atfunc does not enforce (`pattern`, `not`, ...), each naming its toolbox and
    /// function: read as a tools file is ([`atfunc::interface::LoadOptions`]).
    /// [`Config::check`] returns them with its own warnings; `exec` and `serve` say them on
    /// stderr.
    ///
    /// ```
    /// use atfunc_tools::config::Config;
    /// let config = Config::from_text(r#"{"toolboxes": [{"name": "shop", "kind": "command",
    ///     "functions": [{"name": "pay", "command": ["true"], "parameters": {
    ///         "type": "object", "properties": {"amount": {"type": "number"}},
    ///         "required": "amount"}}]}]}"#, ".")?;
    /// assert_eq!(config.warnings(), ["toolbox 'shop' (#1): function 'pay': 'parameters.required' \
    ///     must be a list of property names, found a string; it is read as [\"amount\"]"]);
    /// # Ok::<(), atfunc_tools::config::ConfigError>(())
    /// ```
    pub fn warnings(&self) -> &[String] {
        &self.warnings
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
        let (registry, _) = self.build_with(Secrets::Required, Servers::Start).await?;
        Ok(registry)
    }

    /// Checks the config as [`Config::build`] would build it, reporting every problem
    /// `build` would report, without starting anything: the file boxes' folders are
    /// opened, every box but the MCP servers registered, the root set and the `confirm`
    /// lists checked against the functions. Only what a started MCP server would say
    /// (whether it starts, its tools, and so whether an MCP box's `confirm` list names
    /// them) is left out. This is `atfunc check --config`: one code path with `build`, so a
    /// config `check` passes is one `exec` and `serve` accept once its secrets are set.
    ///
    /// A config is checked where its secrets are not (CI, a laptop), as `terraform
    /// validate` needs no credentials: an environment variable it names that is not set
    /// is no problem here but a warning, one of those returned; `build` refuses it. The
    /// warnings of reading the functions' definitions ([`Config::warnings`]) come first.
    ///
    /// ```
    /// use atfunc_tools::config::Config;
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
    ///
    /// let unset = Config::from_text(
    ///     r#"{"toolboxes": [{"name": "shell", "kind": "command",
    ///         "env": {"TOKEN": {"env": "ATFUNC_DOC_UNSET"}}, "functions": []}]}"#,
    ///     ".",
    /// ).unwrap();
    /// assert_eq!(
    ///     unset.check().await.unwrap(),
    ///     ["toolbox 'shell' (#1): field 'env.TOKEN' reads the environment variable ATFUNC_DOC_UNSET, which is not set"]
    /// );
    /// assert!(unset.build().await.is_err());
    /// # });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn check(&self) -> Result<Vec<String>, ConfigError> {
        let (registry, warnings) = self.build_with(Secrets::Warn, Servers::Skip).await?;
        // Nothing was started; closing is for form.
        let _ = registry.close().await;
        let mut all = self.warnings.clone();
        all.extend(warnings);
        Ok(all)
    }

    /// Builds the registry as [`Config::build`] does, to list its functions rather than
    /// run them (what `render --config` and `parse --config` show): listing needs no
    /// secret, so an environment variable that is not set is no error here. An http
    /// header it would give is sent empty, and a program's or an MCP server's variable is
    /// left unset (an MCP server is started, to list its tools).
    pub async fn build_for_listing(&self) -> Result<Registry, ConfigError> {
        let (registry, _) = self.build_with(Secrets::Optional, Servers::Start).await?;
        Ok(registry)
    }

    async fn build_with(
        &self,
        secrets: Secrets,
        servers_do: Servers,
    ) -> Result<(Registry, Vec<String>), ConfigError> {
        let mut found = Found::default();
        let mut boxes: Vec<Arc<dyn ToolBox>> = Vec::new();
        // MCP servers start last, and only when everything else is right.
        let mut servers: Vec<&ToolboxSpec> = Vec::new();
        // Boxes that are not there, whose names the root and confirm checks pass over:
        // their problems are reported already.
        let mut failed: Vec<&str> = Vec::new();
        for spec in &self.toolboxes {
            if matches!(spec.kind, KindSpec::Mcp { .. }) {
                servers.push(spec);
                continue;
            }
            match build_local(spec, secrets, &mut found) {
                Some(tool_box) => boxes.push(tool_box),
                None => failed.push(spec.name.as_str()),
            }
        }
        let mut mcp_env = Vec::new();
        for spec in &servers {
            if let KindSpec::Mcp { env, .. } = &spec.kind {
                mcp_env.push(resolve_all(env, &spec.at(), "env", secrets, &mut found));
            }
        }
        let Found {
            mut problems,
            warnings,
        } = found;
        // Only checking, or with a problem already found, the MCP servers do not start:
        // their boxes are not registered, not the root, their confirm lists not checked.
        // The rest is still checked, so that every problem is listed at once.
        if servers_do == Servers::Skip || !problems.is_empty() {
            failed.extend(std::mem::take(&mut servers).iter().map(|s| s.name.as_str()));
        }
        for (spec, env) in servers.into_iter().zip(mcp_env) {
            match start_mcp(spec, &env).await {
                Ok(tool_box) => boxes.push(tool_box),
                Err(problem) => {
                    problems.push(problem);
                    failed.push(spec.name.as_str());
                }
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
        let is_skipped = |name: &str| {
            failed
                .iter()
                .copied()
                .chain(self.unread.iter().map(String::as_str))
                .any(|s| s.eq_ignore_ascii_case(name))
        };
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
                        .toolbox_functions(&spec.name, &crate::CallContext::new())
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
        Ok((registry, warnings))
    }

    fn invalid(&self, problems: Vec<String>) -> ConfigError {
        ConfigError::Invalid {
            file: self.file.clone(),
            problems,
        }
    }
}

mod build;
mod duplicates;
mod fields;
mod kinds;
mod read;
mod secrets;

use build::*;
use duplicates::duplicate_keys;
use fields::*;
#[cfg(feature = "mcp")]
pub use kinds::DEFAULT_MCP_TIMEOUT;
use kinds::*;
use read::*;
use secrets::*;
