//! The command tool box: each function runs an external program.
//!
//! The program is started directly, never through a shell, with the call's bound arguments
//! as one JSON object on its standard input. What it writes to standard output is the
//! result; a non-zero exit is an error carrying the end of what it wrote to standard error.
//! Output that is not UTF-8 (a chart as PNG, a PDF) goes to the client whole as an element
//! (see [`CallContext::add_element`]) and to the model as one line,
//! `[image: image/png, 5120 bytes]`, the type recognised by the output's first bytes.

#[cfg(target_os = "linux")]
mod tree;

use super::binary::Binary;
use super::redact::Redactor;
use super::toolbox::{CallContext, ToolBox, ToolError};
use async_trait::async_trait;
use atfunc::interface::Interface;
use atfunc::messages::qualified;
use serde_json::{Map, Value as Json};
use std::fmt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// How long a program may run when no limit is set.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// The most a program may write to standard output when no limit is set: 1 MiB.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1 << 20;

/// How much of the end of standard error a failure carries.
const STDERR_TAIL_BYTES: usize = 2048;

/// How much of an over-long output an error quotes, in characters.
const EXCERPT_CHARS: usize = 300;

/// The variables a program finds when the environment is not inherited, if this process
/// has them: enough to find programs, a home, a language and a temporary folder.
pub const BASE_ENV: [&str; 4] = ["PATH", "HOME", "LANG", "TMPDIR"];

/// How long a program that has exited may keep its output open (through a background
/// process it started) before the call returns with what it wrote so far.
const EXIT_GRACE: Duration = Duration::from_millis(200);

/// The variable that marks every process of one run of a program: a random id, new for
/// each call, which the program's children inherit and by which they are found when the
/// call ends.
pub const RUN_ID_VARIABLE: &str = "ATFUNC_RUN_ID";

/// The key under which a call's `with_body [[ ... ]]` block reaches the program.
const BODY_KEY: &str = "body";

/// Which of this process's environment variables a [`CommandBox`]'s programs get
/// ([`CommandBox::inherit_env`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EnvInheritance {
    /// Only the base variables and those named by
    /// [`pass_env`](CommandBox::pass_env) (the default).
    #[default]
    Listed,
    /// Every variable of this process. Secrets in the host's environment then reach the
    /// programs, and through their output the model.
    All,
}

/// A tool box whose functions are external programs.
///
/// Each call starts the function's program (no shell: arguments cannot be read as shell
/// syntax) and writes the bound arguments to its standard input as one JSON object, then a
/// newline, then closes it. An api-wrapper call's `with_body` block is added under the key
/// `"body"` (as JSON when it parses, else as text). The program also finds
/// `ATFUNC_FUNCTION` (the qualified name) and `ATFUNC_CALL_ID` in its environment.
///
/// - Standard output is the result: JSON when it parses as JSON, else the text without its
///   trailing newlines. More than [`max_output_bytes`](CommandBox::max_output_bytes) stops
///   the program and is an error that quotes the beginning.
/// - A non-zero exit status is an error with the status and the last 2 KB of standard error.
/// - The program runs in a process group of its own. Still running after the time limit
///   (30 s by default), the whole group is killed (processes it started in the background
///   too), and the call ends with [`ToolError::Timeout`]. A program that exits while a
///   background process keeps its output open is done: the call returns what it wrote
///   (after a grace of 200 ms) and the group is killed.
/// - The environment is not inherited: a program finds only the base variables (`PATH`, `HOME`,
///   `LANG`, `TMPDIR`), the variables named with [`pass_env`](CommandBox::pass_env) and
///   those set with [`env`](CommandBox::env) and [`secret_env`](CommandBox::secret_env).
///   [`inherit_env(EnvInheritance::All)`](CommandBox::inherit_env) passes every variable of
///   this process instead.
/// - A secret value ([`secret_env`](CommandBox::secret_env)) found in the output or an error,
///   as written, in hexadecimal (either case), in base64 or behind percent or JSON escapes,
///   reads `[redacted]`.
/// - A program that cannot be started is named without its folder.
///
/// ```no_run
/// use atfunc_tools::{CommandBox, Registry};
/// use atfunc::{Interface, Param, ParamType};
///
/// # async fn demo() {
/// let weather = CommandBox::new("weather")
///     .function(
///         Interface::new("get_temp").in_domain("weather")
///             .describe("Current temperature of a city")
///             .param(Param::new("location", ParamType::String).required()),
///         ["python3", "weather.py"],
///     )
///     .current_dir("tools")
///     .timeout(std::time::Duration::from_secs(5));
/// let registry = Registry::new();
/// registry.register(weather).unwrap();
/// let report = registry.execute_response("@weather.get_temp(\"Paris\")").await;
/// println!("{}", report.output);
/// # }
/// ```
#[derive(Clone)]
pub struct CommandBox {
    name: String,
    functions: Vec<CommandFunction>,
    env: Vec<(String, String)>,
    /// The values of [`CommandBox::secret_env`], looked for in what goes back to the model.
    secrets: Vec<String>,
    redactor: Redactor,
    inherit_env: EnvInheritance,
    pass_env: Vec<String>,
    current_dir: Option<PathBuf>,
    timeout: Duration,
    max_output_bytes: usize,
    /// The user and group the programs run as; `None`: this process's.
    run_as: Option<(u32, u32)>,
}

#[derive(Clone)]
struct CommandFunction {
    interface: Interface,
    /// The program and its arguments, as given.
    command: Vec<String>,
}

impl fmt::Debug for CommandBox {
    // Environment values may be secrets: only their names are shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommandBox")
            .field("name", &self.name)
            .field(
                "functions",
                &self
                    .functions
                    .iter()
                    .map(|function| (&function.interface.name, &function.command))
                    .collect::<Vec<_>>(),
            )
            .field(
                "env",
                &self.env.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            )
            .field("inherit_env", &self.inherit_env)
            .field("pass_env", &self.pass_env)
            .field("current_dir", &self.current_dir)
            .field("timeout", &self.timeout)
            .field("max_output_bytes", &self.max_output_bytes)
            .field("run_as", &self.run_as)
            .finish()
    }
}

impl CommandBox {
    /// An empty box named `name`.
    pub fn new(name: impl Into<String>) -> CommandBox {
        CommandBox {
            name: name.into(),
            functions: Vec::new(),
            env: Vec::new(),
            secrets: Vec::new(),
            redactor: Redactor::default(),
            inherit_env: EnvInheritance::Listed,
            pass_env: Vec::new(),
            current_dir: None,
            timeout: DEFAULT_COMMAND_TIMEOUT,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            run_as: None,
        }
    }

    /// Adds a function run by `command`: the program, then its fixed arguments. A program
    /// name without a `/` is looked up in `PATH`; a relative path is taken from the
    /// working directory ([`current_dir`](CommandBox::current_dir)). An empty command makes
    /// every call of the function an error.
    pub fn function<I, S>(mut self, interface: Interface, command: I) -> CommandBox
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.functions.push(CommandFunction {
            interface,
            command: command.into_iter().map(Into::into).collect(),
        });
        self
    }

    /// Sets a variable in the programs' environment. Its value is not a secret; use
    /// [`secret_env`](CommandBox::secret_env) for credentials.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> CommandBox {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Sets a variable whose value is a secret: wherever it shows up in a program's output
    /// or error text (as written, in hexadecimal, in base64, percent- or JSON-escaped) the model reads
    /// `[redacted]`. What cannot be caught is listed in the README (a program can always
    /// hash or reshape what it prints).
    pub fn secret_env(mut self, name: impl Into<String>, value: impl Into<String>) -> CommandBox {
        let value = value.into();
        self.secrets.push(value.clone());
        self.redactor = Redactor::new(&self.secrets);
        self.env.push((name.into(), value));
        self
    }

    /// Passes this process's variable `name` on to the programs, when it is set.
    pub fn pass_env(mut self, name: impl Into<String>) -> CommandBox {
        self.pass_env.push(name.into());
        self
    }

    /// Which variables of this process the programs get: [`EnvInheritance::All`] passes
    /// every one on (default [`EnvInheritance::Listed`]: only the base variables and
    /// [`pass_env`](CommandBox::pass_env)). Secrets in the host's environment then reach
    /// the programs, and through their output the model.
    pub fn inherit_env(mut self, inherit: EnvInheritance) -> CommandBox {
        self.inherit_env = inherit;
        self
    }

    /// The folder programs run in (default: this process's working directory).
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> CommandBox {
        self.current_dir = Some(dir.into());
        self
    }

    /// How long a program may run before it is killed (default 30 s).
    pub fn timeout(mut self, limit: Duration) -> CommandBox {
        self.timeout = limit;
        self
    }

    /// The most a program may write to standard output, in bytes (default 1 MiB).
    pub fn max_output_bytes(mut self, max: usize) -> CommandBox {
        self.max_output_bytes = max;
        self
    }

    /// Runs the programs as the user `uid` and the group `gid`, without this process's
    /// supplementary groups (Unix; this process must be allowed to switch users, which in
    /// practice means running as root). A program under another user cannot read this
    /// process's memory or environment, nor those of the user's other processes (the shell
    /// that started this one, whose environment may hold unrelated secrets), and cannot
    /// write what that user's files protect. It needs read access to its program and
    /// working folder; `HOME` is still this process's unless set with
    /// [`env`](CommandBox::env). Elsewhere than Unix every call is an error.
    pub fn run_as(mut self, uid: u32, gid: u32) -> CommandBox {
        self.run_as = Some((uid, gid));
        self
    }

    /// The time limit of one call.
    pub fn time_limit(&self) -> Duration {
        self.timeout
    }

    fn qualified(&self, function: &str) -> String {
        qualified(&self.name, function)
    }

    async fn run(
        &self,
        function: &CommandFunction,
        args: Map<String, Json>,
        ctx: &CallContext,
    ) -> Result<Json, ToolError> {
        let qualified = self.qualified(&function.interface.name);
        let Some((program, fixed_args)) = function.command.split_first() else {
            return Err(ToolError::msg(format!(
                "Function '{qualified}' has no program to run; it cannot be called"
            )));
        };
        let mut input = args;
        if let Some(body) = &ctx.body {
            let value = body
                .json
                .clone()
                .unwrap_or_else(|| Json::String(body.raw.clone()));
            input.insert(BODY_KEY.to_owned(), value);
        }
        let mut stdin_bytes = serde_json::to_vec(&Json::Object(input))
            .map_err(|e| ToolError::msg(format!("Function '{qualified}': {e}")))?;
        stdin_bytes.push(b'\n');

        let mut command = tokio::process::Command::new(program);
        command
            .args(fixed_args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Its own group, so a time limit can stop what it started too.
        #[cfg(unix)]
        command.process_group(0);
        if self.inherit_env == EnvInheritance::Listed {
            command.env_clear();
            for name in BASE_ENV
                .iter()
                .copied()
                .chain(self.pass_env.iter().map(String::as_str))
            {
                if let Some(value) = std::env::var_os(name) {
                    command.env(name, value);
                }
            }
        }
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        let run_id = super::confirm::new_id();
        command
            .env("ATFUNC_FUNCTION", &qualified)
            .env("ATFUNC_CALL_ID", &ctx.call_id)
            .env(RUN_ID_VARIABLE, &run_id);
        if let Some(dir) = &self.current_dir {
            command.current_dir(dir);
        }
        if let Some((uid, gid)) = self.run_as {
            #[cfg(unix)]
            command.uid(uid).gid(gid);
            #[cfg(not(unix))]
            return Err(ToolError::msg(format!(
                "Function '{qualified}' is set to run as user {uid} (group {gid}), which only a Unix system can do; it is not available here"
            )));
        }
        #[cfg(target_os = "linux")]
        // SAFETY: the closure runs in the child between fork and exec, where only
        // async-signal-safe calls may be made: it makes `prctl` system calls through
        // rustix, which allocate nothing and take no lock.
        unsafe {
            command.pre_exec(|| {
                // What the program starts stays below it in the process tree while it
                // runs, even when its parent exits: the time limit finds it (see `tree`).
                let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
                // A program run as root cannot read this (non-dumpable) process's memory
                // or environment through /proc: that takes CAP_SYS_PTRACE, and for reading
                // CAP_PERFMON or CAP_SYS_ADMIN do too. Dropped from the bounding set,
                // they are not granted at exec. Without the right to drop them (not
                // root) the program never had them.
                for capability in [
                    rustix::thread::CapabilitySet::SYS_PTRACE,
                    rustix::thread::CapabilitySet::PERFMON,
                    rustix::thread::CapabilitySet::SYS_ADMIN,
                ] {
                    let _ = rustix::thread::remove_capability_from_bounding_set(capability);
                }
                Ok(())
            });
        }
        let mut child = command.spawn().map_err(|e| {
            let why = match e.kind() {
                std::io::ErrorKind::NotFound => String::from("the program was not found"),
                std::io::ErrorKind::PermissionDenied => match self.run_as {
                    Some((uid, _)) => format!(
                        "permission denied: the program cannot be run as user {uid}, or this process may not switch to that user (which takes root)"
                    ),
                    None => String::from("the program may not be run (permission denied)"),
                },
                _ => e.to_string(),
            };
            // The host's folders are no business of the model's.
            let shown = std::path::Path::new(program)
                .file_name()
                .map_or_else(|| program.clone(), |n| n.to_string_lossy().into_owned());
            ToolError::msg(self.redactor.redact(&format!(
                "Function '{qualified}' could not be started ({shown}: {why}); it is not available now"
            )))
        })?;
        // What the program started is ended on every way out of this function: a clean
        // end, the time limit, too much output, a caller that stops waiting.
        let mut group = RunGuard::new(child.id(), &run_id);
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let max = self.max_output_bytes;
        let mut out = Captured::default();
        let mut err = Tail::default();
        let finished = {
            let io = async {
                let write = async {
                    if let Some(mut stdin) = stdin {
                        // A program that exits without reading its input is not an error
                        // here: its exit status says what happened.
                        let _ = stdin.write_all(&stdin_bytes).await;
                        let _ = stdin.shutdown().await;
                    }
                };
                let read_out = async {
                    read_capped(stdout, max, &mut out).await;
                    if out.overflowed {
                        group.end();
                    }
                };
                tokio::join!(
                    write,
                    read_out,
                    read_tail(stderr, STDERR_TAIL_BYTES, &mut err)
                );
            };
            tokio::pin!(io);
            tokio::time::timeout(self.timeout, async {
                let exited = tokio::select! {
                    () = &mut io => None,
                    status = child.wait() => Some(status),
                };
                match exited {
                    None => child.wait().await,
                    Some(status) => {
                        // What is already in the pipes is read; a background process
                        // holding them open is not waited for.
                        let _ = tokio::time::timeout(EXIT_GRACE, &mut io).await;
                        status
                    }
                }
            })
            .await
        };
        let status = match finished {
            Ok(status) => {
                group.reaped();
                status
            }
            Err(_) => {
                group.end();
                // Reaps the killed program; it cannot outlive a SIGKILL for long.
                if tokio::time::timeout(Duration::from_secs(5), child.wait())
                    .await
                    .is_ok()
                {
                    group.reaped();
                }
                return Err(ToolError::Timeout {
                    name: qualified,
                    limit: self.timeout,
                });
            }
        };
        drop(group);
        let redact = |text: String| self.redactor.redact(&text);
        if out.overflowed {
            return Err(ToolError::msg(redact(format!(
                "Function '{qualified}' wrote more than {} of output and was stopped; ask for less. Its output began: {}",
                atfunc::messages::human_bytes(max),
                excerpt(&String::from_utf8_lossy(&out.bytes))
            ))));
        }
        let status = status.map_err(|e| {
            ToolError::msg(format!(
                "Function '{qualified}' ended in an unknown way ({e})"
            ))
        })?;
        if !status.success() {
            let how = describe_status(&status);
            let tail = stderr_text(&err.finish());
            let message = if tail.is_empty() {
                format!("Function '{qualified}' failed ({how}) without an error message")
            } else {
                format!("Function '{qualified}' failed ({how}): {tail}")
            };
            return Err(ToolError::Failed(redact(message)));
        }
        if let Some(binary) = Binary::of(None, &out.bytes) {
            return Ok(binary.hand_out(&out.bytes, None, &self.redactor, ctx));
        }
        let mut value = output_value(&out.bytes);
        self.redactor.redact_json(&mut value);
        Ok(value)
    }
}

/// Ends what a program started when dropped, if not already ended: its process group and,
/// on Linux, every process of its run, those that left the group too (see `tree`).
struct RunGuard {
    /// The group's id (the program's pid, as it leads its own group); `None` when the
    /// program's id is unknown (it was already reaped).
    group: Option<u32>,
    #[cfg(target_os = "linux")]
    tree: Option<tree::Tree>,
    /// Whether the program was waited for: its pid may then belong to another process,
    /// and only the run's mark finds what it left.
    reaped: AtomicBool,
    ended: AtomicBool,
}

impl RunGuard {
    fn new(id: Option<u32>, run_id: &str) -> RunGuard {
        #[cfg(not(target_os = "linux"))]
        let _ = run_id;
        RunGuard {
            group: id,
            #[cfg(target_os = "linux")]
            tree: id.and_then(|pid| tree::Tree::new(pid, run_id)),
            reaped: AtomicBool::new(false),
            ended: AtomicBool::new(false),
        }
    }

    /// Kills every process of the run and the program's group.
    fn end(&self) {
        self.ended.store(true, Ordering::Relaxed);
        #[cfg(target_os = "linux")]
        if let Some(tree) = &self.tree {
            tree.end(!self.reaped.load(Ordering::Relaxed));
        }
        #[cfg(unix)]
        if let Some(pid) = self
            .group
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw)
        {
            // A group already gone (ESRCH) is what we wanted.
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }

    /// The program has been waited for.
    fn reaped(&mut self) {
        self.reaped.store(true, Ordering::Relaxed);
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        if !self.ended.load(Ordering::Relaxed) {
            self.end();
        }
    }
}

#[async_trait]
impl ToolBox for CommandBox {
    fn name(&self) -> &str {
        &self.name
    }

    fn interfaces(&self, _ctx: &CallContext) -> Vec<Interface> {
        self.functions
            .iter()
            .map(|function| function.interface.clone())
            .collect()
    }

    async fn call(
        &self,
        function: &str,
        args: Map<String, Json>,
        ctx: &CallContext,
    ) -> Result<Json, ToolError> {
        let Some(found) = self.functions.iter().find(|f| f.interface.name == function) else {
            return Err(ToolError::unknown(self.qualified(function)));
        };
        self.run(found, args, ctx).await
    }
}

/// What was read from standard output: at most the limit, and whether there was more.
#[derive(Default)]
struct Captured {
    bytes: Vec<u8>,
    overflowed: bool,
}

/// Reads into `captured` as it goes, so what was read survives a reader that is stopped
/// (the program exited but a background process holds the pipe).
async fn read_capped<R: AsyncRead + Unpin>(reader: Option<R>, max: usize, captured: &mut Captured) {
    let Some(mut reader) = reader else {
        return;
    };
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let chunk = buf.get(..n).unwrap_or_default();
                let room = max.saturating_sub(captured.bytes.len());
                if chunk.len() > room {
                    captured
                        .bytes
                        .extend_from_slice(chunk.get(..room).unwrap_or_default());
                    captured.overflowed = true;
                    return;
                }
                captured.bytes.extend_from_slice(chunk);
            }
        }
    }
}

/// The end of a stream read so far.
#[derive(Default)]
struct Tail {
    bytes: Vec<u8>,
    /// Whether bytes before `bytes` were dropped.
    cut: bool,
}

impl Tail {
    /// The last `STDERR_TAIL_BYTES`; a cut start is marked with `…`.
    fn finish(mut self) -> Vec<u8> {
        let keep = STDERR_TAIL_BYTES;
        if self.bytes.len() > keep {
            self.bytes.drain(..self.bytes.len() - keep);
            self.cut = true;
        }
        if !self.cut {
            return self.bytes;
        }
        let mut marked = "…".as_bytes().to_vec();
        marked.extend_from_slice(skip_continuation(&self.bytes));
        marked
    }
}

/// Reads a stream to its end into `tail`, keeping at least its last `keep` bytes.
async fn read_tail<R: AsyncRead + Unpin>(reader: Option<R>, keep: usize, tail: &mut Tail) {
    let Some(mut reader) = reader else {
        return;
    };
    let mut buf = vec![0u8; 8 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                tail.bytes
                    .extend_from_slice(buf.get(..n).unwrap_or_default());
                // Trimmed only once it doubles, so long streams cost linear time.
                if tail.bytes.len() > 2 * keep {
                    tail.bytes.drain(..tail.bytes.len() - keep);
                    tail.cut = true;
                }
            }
        }
    }
}

/// Drops the UTF-8 continuation bytes a cut left at the start.
fn skip_continuation(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .take(3)
        .take_while(|b| (**b & 0b1100_0000) == 0b1000_0000)
        .count();
    bytes.get(start..).unwrap_or_default()
}

fn stderr_text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).trim().to_owned()
}

/// Standard output as a result: JSON when it parses, else text without trailing newlines.
fn output_value(bytes: &[u8]) -> Json {
    let text = String::from_utf8_lossy(bytes);
    let trimmed = text.trim_end_matches(['\n', '\r']);
    match serde_json::from_str::<Json>(trimmed) {
        Ok(value) if !trimmed.trim().is_empty() => value,
        _ => Json::String(trimmed.to_owned()),
    }
}

fn describe_status(status: &std::process::ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit status {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("killed by signal {signal}");
        }
    }
    String::from("no exit status")
}

/// The beginning of a text, cut at a character boundary.
fn excerpt(text: &str) -> String {
    let mut chars = text.char_indices();
    match chars.nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}…", text.get(..cut).unwrap_or_default()),
        None => text.to_owned(),
    }
}
