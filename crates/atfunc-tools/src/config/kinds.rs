//! The box builders that need a feature: each with its twin for a build without it.

use super::*;

/// A command toolbox's environment: values (with whether each is a secret), and what it
/// takes from this process's. Only a build with the `command` feature starts programs, so
/// without it the fields are gathered (and checked) but never read.
#[cfg_attr(not(feature = "command"), allow(dead_code))]
pub(super) struct CommandEnv<'a> {
    pub(super) values: Vec<(String, String, bool)>,
    pub(super) inherit: bool,
    pub(super) pass: &'a [String],
}

#[cfg(feature = "command")]
pub(super) fn build_command(
    spec: &ToolboxSpec,
    functions: &[(Interface, Vec<String>)],
    env: CommandEnv<'_>,
    cwd: &Path,
    (max_output_bytes, run_as): (Option<usize>, Option<(u32, u32)>),
    _problems: &mut [String],
) -> Option<Arc<dyn ToolBox>> {
    let mut tool_box = crate::CommandBox::new(spec.name.clone())
        .inherit_env(if env.inherit {
            crate::EnvInheritance::All
        } else {
            crate::EnvInheritance::Listed
        })
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
pub(super) fn build_command(
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
pub(super) struct HttpSettings<'a> {
    pub(super) base_url: &'a str,
    pub(super) headers: Vec<(String, String, bool)>,
    pub(super) functions: &'a [(Interface, String, String)],
    pub(super) timeout: Option<Duration>,
    pub(super) max_response_bytes: Option<usize>,
    pub(super) max_redirects: Option<usize>,
}

#[cfg(feature = "http")]
pub(super) fn build_http(
    name: &str,
    settings: HttpSettings<'_>,
) -> Result<Arc<dyn ToolBox>, Vec<String>> {
    let mut builder = crate::HttpBox::builder(name, settings.base_url);
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
pub(super) fn build_http(
    _name: &str,
    _settings: HttpSettings<'_>,
) -> Result<Arc<dyn ToolBox>, Vec<String>> {
    Err(vec![without("HTTP", "http")])
}

/// The message for a kind this build of atfunc leaves out.
pub(super) fn without(what: &str, feature: &str) -> String {
    format!("this atfunc was built without {what} support (feature `{feature}`)")
}

/// The time limit of an MCP tool call when the config sets no `timeout_ms`.
#[cfg(feature = "mcp")]
pub const DEFAULT_MCP_TIMEOUT: Duration = Duration::from_secs(30);

#[cfg(feature = "mcp")]
pub(super) async fn start_mcp(
    spec: &ToolboxSpec,
    env: &BTreeMap<String, String>,
) -> Result<Arc<dyn ToolBox>, String> {
    let KindSpec::Mcp { command, .. } = &spec.kind else {
        return Err(format!("{}: not an mcp toolbox", spec.at()));
    };
    match crate::McpBox::spawn(&spec.name, command, env).await {
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
pub(super) async fn start_mcp(
    spec: &ToolboxSpec,
    _env: &BTreeMap<String, String>,
) -> Result<Arc<dyn ToolBox>, String> {
    Err(format!("{}: {}", spec.at(), without("MCP", "mcp")))
}
