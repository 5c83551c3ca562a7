//! Which tools exist: the options every command shares, and reading a tools file with
//! errors that say where the file is wrong.

use super::Failure;
use atfunc::interface::{json_message, LoadOptions, Loaded, Strictness};
use atfunc::interface::{LoadLimits, ValidationError};
use atfunc::{Catalog, Interface, LoadError};
use atfunc_tools::config::Config;
use atfunc_tools::{CallContext, FileBox, FnBox, Registry, CONTROL_DOMAIN};
use std::path::{Path, PathBuf};

/// Loads and validates a tools file. `Ok(Err(problems))` when it is JSON but its
/// definitions are invalid; `Err` when it cannot be read or is not JSON at all.
pub(crate) fn load(
    path: &Path,
    limits: &LoadLimits,
    strictness: Strictness,
) -> Result<Result<Loaded, Vec<ValidationError>>, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure(format!("cannot read tools file {}: {e}", path.display())))?;
    match LoadOptions::default()
        .with_limits(*limits)
        .with_strictness(strictness)
        .load_str(&text)
    {
        Ok(loaded) => Ok(Ok(loaded)),
        Err(LoadError::Invalid(problems)) => Ok(Err(problems)),
        Err(LoadError::Json(e)) => Err(Failure(json_error(path, &e))),
        Err(other) => Err(Failure(format!("{}: {other}", path.display()))),
    }
}

/// Loads a tools file that must be readable (for `render`, `grammar`, `parse`, `exec`):
/// every problem is listed in the failure; what was worked around to read it is said once
/// on stderr.
pub(crate) fn load_valid(path: &Path, limits: &LoadLimits) -> Result<Vec<Interface>, Failure> {
    let problems = match load(path, limits, Strictness::Lenient)? {
        Ok(loaded) => {
            for warning in &loaded.warnings {
                super::output::note(&format!(
                    "warning: {}: {}",
                    path.display(),
                    warning.warning()
                ));
            }
            return Ok(loaded.interfaces);
        }
        Err(problems) => problems,
    };
    let list = problems
        .iter()
        .map(|p| format!("\n  {p}"))
        .collect::<String>();
    Err(Failure(format!(
        "{}: invalid tools file ({} problem(s); `atfunc check` lists them too):{list}",
        path.display(),
        problems.len()
    )))
}

/// `tools.json:2:12: expected value` — the place first, as compilers print it.
fn json_error(path: &Path, error: &serde_json::Error) -> String {
    format!(
        "{}:{}:{}: not valid JSON: {}",
        path.display(),
        error.line(),
        error.column(),
        json_message(error)
    )
}

/// Which tools exist: the options `render`, `grammar`, `check`, `parse` and `exec` share,
/// so that the prompt lists exactly the functions `exec` runs and calls bind against them.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct ToolArgs {
    /// The tools file (JSON: atfunc interfaces, an OpenAI tools array, or JSON Schema
    /// functions). `exec` has no implementation for its functions: a call to one answers
    /// with an error saying so.
    #[arg(long, value_name = "FILE", conflicts_with = "config")]
    pub(crate) tools: Option<PathBuf>,
    /// A config file of tool boxes that run: folders, commands, HTTP APIs, MCP servers
    /// (to list their functions, its MCP servers are started).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Add the file box (`file.readfile`, `file.listfiles`, ...), which cannot reach
    /// outside DIR.
    #[arg(long, value_name = "DIR")]
    pub(crate) files: Option<PathBuf>,
    /// The toolbox whose functions are called without their prefix (default: the
    /// config's `root`).
    #[arg(long, value_name = "TOOLBOX")]
    pub(crate) root_toolbox: Option<String>,
    #[command(flatten)]
    pub(crate) limits: LoadLimitArgs,
}

/// How far tool schemas may expand when they are loaded (`$ref`s written out in place):
/// [`LoadLimits`], as flags. Shared by the commands that read tools and by `serve`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct LoadLimitArgs {
    /// Most schema nodes the `$ref`s of the tools' schemas may write out, all tools
    /// together; past it loading fails naming the function.
    #[arg(long, value_name = "N", default_value_t = LoadLimits::default().max_ref_nodes)]
    max_ref_nodes: usize,
    /// Most bytes the `$ref`s of the tools' schemas may write out, all tools together.
    #[arg(long, value_name = "BYTES", default_value_t = LoadLimits::default().max_ref_bytes)]
    max_ref_bytes: usize,
    /// Deepest nesting of a tool's parameter schema, `$ref`s followed.
    #[arg(long, value_name = "N", default_value_t = LoadLimits::default().max_depth)]
    max_schema_depth: usize,
}

impl Default for LoadLimitArgs {
    fn default() -> Self {
        let limits = LoadLimits::default();
        LoadLimitArgs {
            max_ref_nodes: limits.max_ref_nodes,
            max_ref_bytes: limits.max_ref_bytes,
            max_schema_depth: limits.max_depth,
        }
    }
}

impl LoadLimitArgs {
    /// The limits the flags set.
    pub(crate) fn limits(&self) -> LoadLimits {
        LoadLimits::default()
            .with_max_ref_nodes(self.max_ref_nodes)
            .with_max_ref_bytes(self.max_ref_bytes)
            .with_max_depth(self.max_schema_depth)
    }
}

/// What a set of tools offers, for the commands that only list or bind: the functions
/// (the control functions `tools.*` only when asked for) and the root toolbox.
pub(crate) struct Offered {
    /// The tools or config file, for messages.
    pub(crate) source: PathBuf,
    pub(crate) interfaces: Vec<Interface>,
    pub(crate) root: Option<String>,
}

impl Offered {
    /// The functions as the binder reads calls of them: under the root toolbox's names
    /// without the toolbox, when there is one.
    pub(crate) fn catalog(&self) -> Catalog {
        let catalog = Catalog::new(self.interfaces.clone());
        match &self.root {
            Some(root) => catalog.with_root(root.clone()),
            None => catalog,
        }
    }
}

impl ToolArgs {
    /// Whether any tools are given at all (`parse` runs without).
    pub(crate) fn is_empty(&self) -> bool {
        self.tools.is_none() && self.config.is_none() && self.files.is_none()
    }

    /// The file that says which tools exist (`--files` alone names the folder).
    pub(crate) fn source(&self) -> Result<&Path, Failure> {
        self.config
            .as_deref()
            .or(self.tools.as_deref())
            .or(self.files.as_deref())
            .ok_or_else(|| Failure(String::from("give --tools FILE or --config FILE")))
    }

    /// The registry `exec` runs calls in: the config's boxes, or one box per domain of the
    /// tools file (declared functions without an implementation); the file box with
    /// `--files`; the control functions; the root toolbox. `listing` builds it only to
    /// list the functions, so secrets that are not set are no error.
    pub(crate) fn registry(
        &self,
        runtime: &tokio::runtime::Runtime,
        listing: bool,
    ) -> Result<Registry, Failure> {
        let source = self.source()?.to_owned();
        let registry = match (&self.config, &self.tools) {
            (Some(path), _) => config_registry(path, runtime, listing)?,
            (None, Some(path)) => declared_registry(path, &self.limits.limits())?,
            (None, None) => Registry::new(),
        };
        if let Some(dir) = &self.files {
            let files = FileBox::open(dir).map_err(|e| Failure(format!("--files: {e}")))?;
            registry.register(files).map_err(|e| {
                Failure(format!(
                    "--files: cannot add the file box: {e} ({} already has a toolbox named 'file')",
                    source.display()
                ))
            })?;
        }
        if let Some(name) = &self.root_toolbox {
            registry
                .set_root(name)
                .map_err(|e| Failure(format!("--root-toolbox: {e}")))?;
        }
        Ok(registry)
    }

    /// What `render`, `grammar` and `parse` offer: the functions of [`ToolArgs::registry`]
    /// (the control functions only `with_control`), its root toolbox. Started MCP servers
    /// are closed again.
    pub(crate) fn offered(&self, with_control: bool) -> Result<Offered, Failure> {
        let source = self.source()?.to_owned();
        let runtime = runtime()?;
        let registry = self.registry(&runtime, true)?;
        let interfaces = registry
            .interfaces(&CallContext::new())
            .into_iter()
            .filter(|i| with_control || i.domain.as_deref() != Some(CONTROL_DOMAIN))
            .collect();
        let root = registry.root();
        if let Err(e) = runtime.block_on(registry.close()) {
            eprintln!("atfunc: closing the tool boxes: {e}");
        }
        Ok(Offered {
            source,
            interfaces,
            root,
        })
    }
}

/// A runtime on this thread: MCP servers started on it must be called on it too.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure(format!("cannot start the async runtime: {e}")))
}

/// The registry a config file builds (MCP servers start on `runtime`, which must then run
/// every call); `listing` needs no secret.
fn config_registry(
    path: &Path,
    runtime: &tokio::runtime::Runtime,
    listing: bool,
) -> Result<Registry, Failure> {
    let config = Config::from_path(path).map_err(|e| Failure(e.to_string()))?;
    note_config_warnings(path, &config);
    let build = async {
        if listing {
            config.build_for_listing().await
        } else {
            config.build().await
        }
    };
    runtime.block_on(build).map_err(|e| Failure(e.to_string()))
}

/// Says on stderr, once, what reading a config's function definitions worked around and
/// the restrictions they declare that atfunc does not enforce, as [`load_valid`] says a
/// tools file's.
pub(crate) fn note_config_warnings(path: &Path, config: &Config) {
    for warning in config.warnings() {
        super::output::note(&format!("warning: {}: {warning}", path.display()));
    }
}

/// One box per domain of a tools file, in the order domains first appear, each function
/// declared without an implementation; root functions go in the box named "".
fn declared_registry(path: &Path, limits: &LoadLimits) -> Result<Registry, Failure> {
    let interfaces = load_valid(path, limits)?;
    let registry = Registry::new();
    let mut boxes: Vec<(String, FnBox)> = Vec::new();
    for interface in interfaces {
        let domain = interface.domain.clone().unwrap_or_default();
        let index = match boxes.iter().position(|(name, _)| *name == domain) {
            Some(index) => index,
            None => {
                boxes.push((domain.clone(), FnBox::new(domain)));
                boxes.len() - 1
            }
        };
        if let Some((name, tool_box)) = boxes.get_mut(index) {
            let declared = std::mem::replace(tool_box, FnBox::new(name.clone()));
            *tool_box = declared.declare(interface);
        }
    }
    for (name, tool_box) in boxes {
        registry.register(tool_box).map_err(|e| {
            Failure(format!(
                "{}: cannot register toolbox '{name}': {e}",
                path.display()
            ))
        })?;
    }
    Ok(registry)
}
