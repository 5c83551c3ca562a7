//! A tool box served by an MCP server: a child process spoken to over stdio.
//!
//! The server's tools are listed once, when it starts, and converted to interfaces through
//! the same loader as any JSON Schema tool definition ([`load_interfaces`]), so an MCP tool
//! reads, renders and binds like every other function.
//!
//! # Names
//!
//! MCP tool names may hold characters a model cannot write in a call (`get-sum`,
//! `files/read`). Each character that is not a letter, digit or `_` becomes `_`, a name
//! starting with a digit gets a leading `_`, and a name that would then clash with an
//! earlier one (ignoring case, as calls do) gets `_2`, `_3`, ... The box keeps the map back
//! to the server's spelling, so `@everything.get_sum(a=1, b=2)` calls the server's
//! `get-sum`. Parameter names are treated the same way within each tool. A parameter whose
//! schema atfunc cannot read (an unknown type, a nested property with an unusual name)
//! accepts any value, and the server checks it.
//!
//! # Results
//!
//! Each content item goes to whom its `annotations.audience` names: `["assistant"]` only, to
//! the model; `["user"]` only, to the client as an element (see [`CallContext::add_element`]);
//! both or no audience, to both. What the model gets is the text items joined by newlines,
//! and a line describing each binary item (`[image: image/png, 1234 bytes]`), for the user
//! or not: a model reads no image, the client gets it whole. When every item is text for
//! the user alone, the model reads what kind was shown (`[shown to the user: text]`), so it
//! knows the call did its work. A result with no content but structured content returns that JSON. A
//! result marked `isError` is an error carrying the server's text, every item described.
//!
//! # The process
//!
//! The server's stderr is captured (its last few kilobytes appear in start-up errors) and
//! never reaches atfunc's stdout or stderr. [`ToolBox::close`] closes the server's stdin and
//! waits for it to exit, then terminates it if it does not; dropping the box kills it.

use super::elements::ToolOutput;
use super::toolbox::{CallContext, ToolBox, ToolError};
use async_trait::async_trait;
use atfunc::interface::{identifier, load_interfaces, Interface, Original};
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Map, Value as Json};
use std::collections::BTreeMap;
use std::fmt;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use unicase::UniCase;

/// How long a server may take to start and answer `initialize` and `tools/list`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// How much of the end of the server's stderr is kept for error messages.
const STDERR_TAIL_BYTES: usize = 4096;

/// Options for starting an MCP server (see [`McpBox::spawn_with`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpOptions {
    /// Limit on start-up: spawning, `initialize` and listing the tools. A server that
    /// takes longer is killed and the start fails.
    pub startup_timeout: Duration,
}

impl Default for McpOptions {
    fn default() -> McpOptions {
        McpOptions {
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
        }
    }
}

/// One server tool as atfunc offers it.
#[derive(Debug, Clone)]
struct McpTool {
    interface: Interface,
    /// The tool's name as the server spells it.
    server_name: String,
}

/// A tool box whose functions are the tools of an MCP server started as a child process.
///
/// ```no_run
/// use atfunc_tools::{McpBox, Registry, ToolBox};
/// use std::collections::BTreeMap;
///
/// # async fn demo() -> Result<(), atfunc_tools::ToolError> {
/// let command = ["npx", "-y", "@modelcontextprotocol/server-everything"].map(String::from);
/// let everything = McpBox::spawn("everything", &command, &BTreeMap::new()).await?;
/// let registry = Registry::new();
/// registry.register(everything).expect("valid interfaces");
/// let report = registry.execute_response(r#"@everything.echo(message="hi")"#).await;
/// println!("{}", report.output);
/// registry.close().await?;
/// # Ok(())
/// # }
/// ```
pub struct McpBox {
    name: String,
    /// The command line, for error messages.
    command: String,
    tools: Vec<McpTool>,
    peer: Peer<RoleClient>,
    /// The running connection; `None` once closed. Dropping it ends the connection and
    /// kills the server.
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, ClientConfig>>>,
    closed: AtomicBool,
    stderr: StderrTail,
    pid: Option<u32>,
}

impl fmt::Debug for McpBox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpBox")
            .field("name", &self.name)
            .field("command", &self.command)
            .field(
                "tools",
                &self
                    .tools
                    .iter()
                    .map(|t| t.server_name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("pid", &self.pid)
            .finish()
    }
}

impl McpBox {
    /// Starts the MCP server `command` (program and arguments, never through a shell) with
    /// `env` added to atfunc's environment, initialises it and lists its tools, within
    /// [`DEFAULT_STARTUP_TIMEOUT`]. The box's functions are the server's tools under the
    /// domain `name`.
    ///
    /// Fails with a message naming the command when the program cannot be started, exits,
    /// does not speak MCP, takes too long, or offers a tool whose definition cannot be read.
    pub async fn spawn(
        name: &str,
        command: &[String],
        env: &BTreeMap<String, String>,
    ) -> Result<McpBox, ToolError> {
        McpBox::spawn_with(name, command, env, &McpOptions::default()).await
    }

    /// [`McpBox::spawn`] with options.
    pub async fn spawn_with(
        name: &str,
        command: &[String],
        env: &BTreeMap<String, String>,
        options: &McpOptions,
    ) -> Result<McpBox, ToolError> {
        let shown = show_command(command);
        let Some((program, args)) = command.split_first() else {
            return Err(ToolError::msg(format!(
                "MCP server '{name}': the command is empty; give the program and its arguments"
            )));
        };
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args).envs(env).kill_on_drop(true);
        let (transport, stderr) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| {
                ToolError::msg(format!(
                    "MCP server '{name}' could not be started with `{shown}`: {error}"
                ))
            })?;
        let pid = transport.id();
        let tail = StderrTail::default();
        if let Some(stderr) = stderr {
            tail.drain(stderr);
        }
        let start = async {
            let service = client_config()
                .serve(transport)
                .await
                .map_err(|error| format!("it did not complete the MCP handshake ({error})"))?;
            let tools = service
                .peer()
                .list_all_tools()
                .await
                .map_err(|error| format!("listing its tools failed ({error})"))?;
            Ok::<_, String>((service, tools))
        };
        let (service, tools) = match tokio::time::timeout(options.startup_timeout, start).await {
            Ok(Ok(started)) => started,
            Ok(Err(why)) => return Err(start_error(name, &shown, &why, &tail)),
            Err(_) => {
                let why = format!(
                    "it did not answer within {}",
                    super::toolbox::human_duration(options.startup_timeout)
                );
                return Err(start_error(name, &shown, &why, &tail));
            }
        };
        let tools = match convert_tools(name, &tools) {
            Ok(tools) => tools,
            Err(why) => {
                let mut service = service;
                let _ = service.close().await;
                return Err(ToolError::msg(format!(
                    "MCP server '{name}' (`{shown}`) offers a tool atfunc cannot read: {why}"
                )));
            }
        };
        Ok(McpBox {
            name: name.to_owned(),
            command: shown,
            tools,
            peer: service.peer().clone(),
            service: tokio::sync::Mutex::new(Some(service)),
            closed: AtomicBool::new(false),
            stderr: tail,
            pid,
        })
    }

    /// The server's process id, while it was known at start.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The end of what the server wrote to its stderr so far (at most a few kilobytes).
    pub fn stderr_tail(&self) -> String {
        self.stderr.text()
    }

    /// The server's name for the atfunc function `function`, if the box offers it.
    pub fn server_tool_name(&self, function: &str) -> Option<&str> {
        self.find(function).map(|tool| tool.server_name.as_str())
    }

    fn find(&self, function: &str) -> Option<&McpTool> {
        self.tools
            .iter()
            .find(|t| t.interface.name == function)
            .or_else(|| {
                self.tools
                    .iter()
                    .find(|t| UniCase::new(t.interface.name.as_str()) == UniCase::new(function))
            })
    }

    fn gone(&self, why: impl fmt::Display) -> ToolError {
        let mut message = format!(
            "The MCP server '{}' (`{}`) is not answering: {why}",
            self.name, self.command
        );
        let tail = self.stderr.text();
        if !tail.trim().is_empty() {
            message.push_str("; its stderr ends with: ");
            message.push_str(tail.trim());
        }
        ToolError::msg(message)
    }
}

#[async_trait]
impl ToolBox for McpBox {
    fn name(&self) -> &str {
        &self.name
    }

    fn interfaces(&self, _ctx: &CallContext) -> Vec<Interface> {
        self.tools.iter().map(|t| t.interface.clone()).collect()
    }

    async fn call(
        &self,
        function: &str,
        args: Map<String, Json>,
        ctx: &CallContext,
    ) -> Result<Json, ToolError> {
        let Some(tool) = self.find(function) else {
            return Err(ToolError::unknown(function));
        };
        if self.closed.load(Ordering::Acquire) {
            return Err(ToolError::msg(format!(
                "The MCP server '{}' has been shut down; its functions cannot be called any more",
                self.name
            )));
        }
        // Bound arguments are keyed by the server's own parameter names already.
        let params = CallToolRequestParams::new(tool.server_name.clone()).with_arguments(args);
        let result = self
            .peer
            .call_tool(params)
            .await
            .map_err(|error| self.gone(error))?;
        // The wire form is the stable contract; rmcp's content types change between versions.
        let content = serde_json::to_value(&result.content).unwrap_or(Json::Null);
        let items = content.as_array().map(Vec::as_slice).unwrap_or_default();
        if result.is_error == Some(true) {
            let text = describe_content(items);
            return Err(ToolError::msg(if text.is_empty() {
                format!("Function '{function}' failed without saying why")
            } else {
                text
            }));
        }
        if items.is_empty() {
            return Ok(result.structured_content.unwrap_or(Json::Null));
        }
        Ok(ctx.add_output(split_content(items)))
    }

    async fn close(&self) -> Result<(), ToolError> {
        self.closed.store(true, Ordering::Release);
        let service = self.service.lock().await.take();
        if let Some(service) = service {
            // Cancelling closes the server's stdin and waits for it to exit, escalating to
            // SIGTERM and then SIGKILL after a few seconds each.
            service.cancel().await.map_err(|error| {
                ToolError::msg(format!(
                    "The MCP server '{}' did not shut down cleanly: {error}",
                    self.name
                ))
            })?;
        }
        Ok(())
    }
}

fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("atfunc", env!("CARGO_PKG_VERSION")),
    )
}

/// The command line as a person would type it, for messages.
fn show_command(command: &[String]) -> String {
    command
        .iter()
        .map(|part| {
            if !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_alphanumeric() || "-_./=:@+,".contains(c))
            {
                part.clone()
            } else {
                format!("'{}'", part.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn start_error(name: &str, shown: &str, why: &str, tail: &StderrTail) -> ToolError {
    let mut message = format!("MCP server '{name}' (`{shown}`) failed to start: {why}");
    let text = tail.text();
    if !text.trim().is_empty() {
        message.push_str("; its stderr ends with: ");
        message.push_str(text.trim());
    }
    ToolError::msg(message)
}

/// The last [`STDERR_TAIL_BYTES`] the server wrote to stderr. Draining the pipe all the
/// time also keeps a chatty server from blocking on a full pipe.
#[derive(Debug, Clone, Default)]
struct StderrTail {
    bytes: Arc<Mutex<Vec<u8>>>,
}

impl StderrTail {
    fn drain(&self, mut stderr: tokio::process::ChildStderr) {
        let bytes = Arc::clone(&self.bytes);
        tokio::spawn(async move {
            let mut chunk = [0u8; 1024];
            while let Ok(read) = stderr.read(&mut chunk).await {
                let Some(new) = chunk.get(..read).filter(|new| !new.is_empty()) else {
                    break;
                };
                let mut kept = bytes.lock().unwrap_or_else(PoisonError::into_inner);
                kept.extend_from_slice(new);
                let excess = kept.len().saturating_sub(STDERR_TAIL_BYTES);
                kept.drain(..excess);
            }
        });
    }

    fn text(&self) -> String {
        let kept = self.bytes.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&kept).into_owned()
    }
}

/// The server's tools as atfunc tools, in the server's order.
///
/// Names go through the loader's one mapping: a tool or parameter name that is not an
/// identifier (`get-sum`, `file-path`) is written as one in calls (`get_sum`, `file_path`)
/// and keeps the server's spelling in bound calls, so arguments reach the server as it
/// named them. Two tools written alike (ignoring case) get `_2`, `_3`, ...: the server's
/// list is not ours to fix.
fn convert_tools(box_name: &str, tools: &[rmcp::model::Tool]) -> Result<Vec<McpTool>, String> {
    let mut taken: Vec<String> = Vec::new();
    let mut converted = Vec::with_capacity(tools.len());
    for tool in tools {
        let wire = serde_json::to_value(tool).map_err(|error| error.to_string())?;
        let server_name = wire
            .get("name")
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_owned();
        let name = unique_name(&server_name, &taken);
        taken.push(name.clone());
        let schema = wire.get("inputSchema").cloned().unwrap_or(json!({}));
        let mut definition = Map::new();
        // The server's name may hold dots; the box's name is the whole domain.
        definition.insert("name".into(), json!(format!("{box_name}.{name}")));
        if let Some(description) = wire.get("description").filter(|d| d.is_string()) {
            definition.insert("description".into(), description.clone());
        }
        // Read leniently, as every client's tools are: a property whose schema atfunc
        // cannot read (an unknown type) accepts any value, and the server checks it.
        definition.insert("parameters".into(), schema);
        let mut interface = load_interfaces(&Json::Object(definition))
            .map_err(|error| format!("'{server_name}': {error}"))?
            .into_iter()
            .next()
            .ok_or_else(|| format!("'{server_name}': no definition"))?;
        if name != server_name {
            interface.original = Some(Original {
                domain: None,
                name: Some(server_name.clone()),
            });
        }
        converted.push(McpTool {
            interface,
            server_name,
        });
    }
    Ok(converted)
}

/// `raw` as an identifier (see [`identifier`]) not in `taken` (compared ignoring case).
fn unique_name(raw: &str, taken: &[String]) -> String {
    let base = identifier(raw).into_owned();
    let free = |candidate: &str| {
        !taken
            .iter()
            .any(|t| UniCase::new(t.as_str()) == UniCase::new(candidate))
    };
    if free(&base) {
        return base;
    }
    (2..)
        .map(|n| format!("{base}_{n}"))
        .find(|candidate| free(candidate))
        .unwrap_or(base)
}

/// Who a content item is for, from its `annotations.audience`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Audience {
    /// `["assistant"]`: the model alone.
    Model,
    /// `["user"]`: the client alone.
    User,
    /// Both named, or no audience given.
    Both,
}

fn audience(item: &Json) -> Audience {
    let Some(Json::Array(names)) = item.pointer("/annotations/audience") else {
        return Audience::Both;
    };
    let named = |role: &str| names.iter().any(|name| name.as_str() == Some(role));
    match (named("user"), named("assistant")) {
        (true, false) => Audience::User,
        (false, true) => Audience::Model,
        _ => Audience::Both,
    }
}

/// A successful result's content: the model's value (text verbatim, other items described,
/// one per line) and the client's elements, each item sent where its audience says.
fn split_content(items: &[Json]) -> ToolOutput {
    let mut for_model = Vec::new();
    let mut elements = Vec::new();
    for item in items {
        let audience = audience(item);
        // A model cannot read binary content, only its one-line description, which tells
        // it what the user was shown; so that line goes to the model whatever the audience.
        if audience != Audience::User || is_binary(item) {
            for_model.push(item);
        }
        if audience != Audience::Model {
            elements.push(element(item));
        }
    }
    let value = if for_model.is_empty() {
        // An empty result reads as a call that did nothing; say what the user was shown.
        let kinds: Vec<&str> = items
            .iter()
            .map(|item| item.get("type").and_then(Json::as_str).unwrap_or("content"))
            .collect();
        format!("[shown to the user: {}]", kinds.join(", "))
    } else {
        for_model
            .into_iter()
            .map(describe_item)
            .collect::<Vec<_>>()
            .join("\n")
    };
    ToolOutput {
        value: Json::String(value),
        elements,
    }
}

/// Whether the item is bytes rather than text: an image, audio, a resource's blob.
fn is_binary(item: &Json) -> bool {
    match item.get("type").and_then(Json::as_str) {
        Some("image" | "audio") => true,
        Some("resource") => item.pointer("/resource/text").is_none(),
        _ => false,
    }
}

/// An MCP content item as an element: the item whole, in the element shape (snake case
/// names, base64 as `data`), annotations left out.
fn element(item: &Json) -> Json {
    let field = |key: &str| item.get(key).cloned().unwrap_or(Json::Null);
    let kind = item.get("type").and_then(Json::as_str).unwrap_or_default();
    let mut element = Map::new();
    element.insert("type".into(), json!(kind));
    let mut put = |name: &str, value: Json| {
        if !value.is_null() {
            element.insert(name.into(), value);
        }
    };
    match kind {
        "text" => put("text", field("text")),
        "image" | "audio" => {
            put("mime_type", field("mimeType"));
            put("data", field("data"));
        }
        "resource" => {
            let resource = item.get("resource").unwrap_or(&Json::Null);
            let part = |key: &str| resource.get(key).cloned().unwrap_or(Json::Null);
            put("uri", part("uri"));
            put("mime_type", part("mimeType"));
            put("text", part("text"));
            put("data", part("blob"));
        }
        "resource_link" => {
            put("uri", field("uri"));
            put("name", field("name"));
            put("mime_type", field("mimeType"));
            put("description", field("description"));
        }
        // A kind this version does not know: as the server sent it.
        _ => {
            if let Json::Object(map) = item {
                for (key, value) in map {
                    if key != "annotations" && key != "type" {
                        put(key, value.clone());
                    }
                }
            }
        }
    }
    Json::Object(element)
}

/// Text items verbatim, other items described, one per line.
fn describe_content(items: &[Json]) -> String {
    items
        .iter()
        .map(describe_item)
        .collect::<Vec<_>>()
        .join("\n")
}

fn describe_item(item: &Json) -> String {
    let field = |key: &str| item.get(key).and_then(Json::as_str);
    match field("type").unwrap_or_default() {
        "text" => field("text").unwrap_or_default().to_owned(),
        kind @ ("image" | "audio") => format!(
            "[{kind}: {}, {} bytes]",
            field("mimeType").unwrap_or("unknown type"),
            base64_len(field("data").unwrap_or_default())
        ),
        "resource" => {
            let resource = item.get("resource").unwrap_or(&Json::Null);
            let part = |key: &str| resource.get(key).and_then(Json::as_str);
            let uri = part("uri").unwrap_or_default();
            let mime = part("mimeType")
                .map(|m| format!(", {m}"))
                .unwrap_or_default();
            match (part("text"), part("blob")) {
                (Some(text), _) => format!("[resource: {uri}{mime}]\n{text}"),
                (None, Some(blob)) => {
                    format!("[resource: {uri}{mime}, {} bytes]", base64_len(blob))
                }
                (None, None) => format!("[resource: {uri}{mime}]"),
            }
        }
        "resource_link" => {
            let mime = field("mimeType")
                .map(|m| format!(", {m}"))
                .unwrap_or_default();
            format!(
                "[resource link: {} <{}>{mime}]",
                field("name").unwrap_or_default(),
                field("uri").unwrap_or_default()
            )
        }
        other => format!("[{other} content]"),
    }
}

/// The decoded length of base64 text, without decoding it.
fn base64_len(data: &str) -> usize {
    let significant = data.trim_end_matches('=').len();
    significant * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_identifiers_and_stay_unique() {
        let mut taken = Vec::new();
        for raw in ["get-sum", "get_sum", "GET-SUM", "2fa", "files/read"] {
            let name = unique_name(raw, &taken);
            taken.push(name);
        }
        assert_eq!(
            taken,
            ["get_sum", "get_sum_2", "GET_SUM_3", "_2fa", "files_read"]
        );
    }

    #[test]
    fn parameters_keep_the_servers_names_and_unreadable_ones_accept_anything() {
        let tool: rmcp::model::Tool = serde_json::from_value(json!({
            "name": "log",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "file-path": {"type": "string"},
                    "when": {"type": "date", "description": "a day"},
                },
                "required": ["file-path"],
            },
        }))
        .unwrap();
        let converted = convert_tools("box", &[tool]).unwrap();
        let params: Vec<(&str, Option<&str>, &str, &str)> = converted[0]
            .interface
            .params
            .iter()
            .map(|p| {
                let original = p.original.as_deref();
                (
                    p.name.as_str(),
                    original,
                    p.ty.name(),
                    p.description.as_str(),
                )
            })
            .collect();
        assert_eq!(
            params,
            [
                ("file_path", Some("file-path"), "string", ""),
                ("when", None, "any", "a day")
            ]
        );
    }

    #[test]
    fn content_is_joined_and_described() {
        let items = [
            json!({"type": "text", "text": "hello"}),
            json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
            json!({"type": "resource", "resource": {"uri": "test://1", "text": "body"}}),
            json!({"type": "resource_link", "uri": "test://2", "name": "two"}),
            json!({"type": "hologram"}),
        ];
        assert_eq!(
            describe_content(&items),
            "hello\n[image: image/png, 3 bytes]\n[resource: test://1]\nbody\n[resource link: two <test://2>]\n[hologram content]"
        );
    }

    #[test]
    fn content_goes_where_its_audience_says() {
        let user = json!({"audience": ["user"], "priority": 0.7});
        let items = [
            json!({"type": "text", "text": "for both"}),
            json!({"type": "text", "text": "for the model", "annotations": {"audience": ["assistant"]}}),
            json!({"type": "text", "text": "for the user", "annotations": user}),
            json!({"type": "image", "data": "AAAA", "mimeType": "image/png",
                   "annotations": {"audience": ["assistant", "user"]}}),
            json!({"type": "resource", "resource": {"uri": "test://1", "blob": "AAAA"}, "annotations": user}),
        ];
        let output = split_content(&items);
        assert_eq!(
            output.value,
            json!("for both\nfor the model\n[image: image/png, 3 bytes]\n[resource: test://1, 3 bytes]")
        );
        assert_eq!(
            output.elements,
            [
                json!({"type": "text", "text": "for both"}),
                json!({"type": "text", "text": "for the user"}),
                json!({"type": "image", "mime_type": "image/png", "data": "AAAA"}),
                json!({"type": "resource", "uri": "test://1", "data": "AAAA"}),
            ]
        );
    }

    #[test]
    fn content_for_the_user_alone_leaves_the_model_a_note() {
        let user = json!({"audience": ["user"]});
        let items = [
            json!({"type": "text", "text": "Done", "annotations": user}),
            json!({"type": "image", "data": "AAAA", "mimeType": "image/png", "annotations": user}),
        ];
        assert_eq!(
            split_content(&items[..1]).value,
            json!("[shown to the user: text]")
        );
        // The image's description is the model's, whoever the image is for.
        let output = split_content(&items);
        assert_eq!(output.value, json!("[image: image/png, 3 bytes]"));
        assert_eq!(output.elements.len(), 2);
        // An image for the model alone is described and goes nowhere else.
        let mine = json!({"type": "image", "data": "AAAA", "mimeType": "image/png",
                          "annotations": {"audience": ["assistant"]}});
        let output = split_content(&[mine]);
        assert_eq!(output.value, json!("[image: image/png, 3 bytes]"));
        assert!(output.elements.is_empty());
    }

    #[test]
    fn commands_are_shown_quoted_where_needed() {
        let command = ["node", "server.js", "a b", "it's"].map(String::from);
        assert_eq!(show_command(&command), r"node server.js 'a b' 'it'\''s'");
    }
}
