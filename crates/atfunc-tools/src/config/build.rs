//! Building the boxes that start no process (file, command, http) and the build settings.

use super::*;

/// Whether a build starts the MCP servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Servers {
    /// They start, and their boxes are registered: the registry is used.
    Start,
    /// They do not: the build only checks the config ([`Config::check`]).
    Skip,
}

/// Whether values read from the environment must be there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Secrets {
    /// Calls will run: a variable that is not set is a config error.
    Required,
    /// The config is only checked, maybe where the secrets are not (CI, a laptop): a
    /// variable that is not set is a warning, and the build goes on without it.
    Warn,
    /// Functions are only listed: a variable that is not set is left out.
    Optional,
}

/// What a build found: problems refuse the config, warnings do not.
#[derive(Debug, Default)]
pub(super) struct Found {
    pub(super) problems: Vec<String>,
    pub(super) warnings: Vec<String>,
}

impl Found {
    /// Files the message for a variable that is not set; whether the build goes on
    /// without its value.
    pub(super) fn unset(&mut self, secrets: Secrets, message: String) -> bool {
        match secrets {
            Secrets::Required => {
                self.problems.push(message);
                false
            }
            Secrets::Warn => {
                self.warnings.push(message);
                true
            }
            Secrets::Optional => true,
        }
    }
}

/// Builds a box that starts no process: file, command or http.
pub(super) fn build_local(
    spec: &ToolboxSpec,
    secrets: Secrets,
    found: &mut Found,
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
                    found.problems.push(format!("{at}: field 'root': {e}"));
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
            found.problems.push(format!(
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
                    // Left unset: the program finds no variable, as it would in a shell.
                    Err(variable) => {
                        found.unset(
                            secrets,
                            missing_variable(&at, &format!("env.{name}"), &variable),
                        );
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
                &mut found.problems,
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
                    Err(variable) => {
                        let message = missing_variable(&at, &format!("headers.{name}"), &variable);
                        if found.unset(secrets, message) {
                            // Sent empty: the box is still built, so its checks still run.
                            resolved.push((name.clone(), String::new(), true));
                        } else {
                            missing = true;
                        }
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
                Err(problems) => {
                    found
                        .problems
                        .extend(problems.into_iter().map(|p| format!("{at}: {p}")));
                    return None;
                }
            }
        }
        KindSpec::Mcp { .. } => return None,
    };
    Some(tool_box)
}

#[cfg_attr(not(feature = "file"), allow(dead_code))]
pub(super) fn with_timeout<B: ToolBox + 'static>(
    tool_box: B,
    limit: Option<Duration>,
) -> Arc<dyn ToolBox> {
    match limit {
        Some(limit) => Arc::new(Timeout::new(tool_box, limit)),
        None => Arc::new(tool_box),
    }
}
