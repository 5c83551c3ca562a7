//! The file box as the registry sees it: built on a root folder, its six functions, and a
//! call dispatched to the operation it names.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use serde_json::{Map, Value as Json};

use super::error::{FileBoxError, FileError, FileErrorKind};
use super::path::shown;
use crate::{CallContext, ToolBox, ToolError};
use atfunc::interface::{Interface, Param, ParamType};
use atfunc::messages::json_kind;

/// How many bytes `readfile` reads at most unless told otherwise: 1 MiB.
pub const DEFAULT_MAX_READ_BYTES: u64 = 1024 * 1024;

/// The tool box's name unless told otherwise; its functions are called as `file.readfile(...)`.
pub const DEFAULT_NAME: &str = "file";

/// A tool box of file operations confined to one root folder: `readfile(filepath)`,
/// `writefile(filepath, content)`, `deletefile(filepath)`, `listfiles(subdir?)`,
/// `mkdir(dirpath)` and `rmdir(dirpath)`.
///
/// Paths are relative to the root. Nothing outside it can be reached: `..` above the top,
/// absolute paths, symbolic links leading out and symbolic link loops are all refused, and
/// error messages show paths only as the model wrote them.
///
/// Choices worth knowing:
/// - `writefile` replaces the whole file and creates missing parent folders, saying so in its
///   result, because models routinely write `output/results.txt` into a fresh folder.
///   It writes a new file beside the target and renames it over the target, so a hard
///   link inside the root to a file outside it is replaced, never written through.
/// - `readfile` refuses files above the read limit ([`DEFAULT_MAX_READ_BYTES`] unless set
///   with [`FileBox::with_max_read_bytes`]) and files that are not UTF-8 text, rather than
///   return part of them: a model that edits a file it only partly saw would lose the rest.
/// - `listfiles` returns a sorted JSON array of names; folders end with `/`.
/// - `rmdir` removes empty folders only.
/// - `readfile` and `writefile` open without blocking and accept only a regular file, checked
///   on the opened file: a FIFO or device put in a file's place is refused, never waited on.
///   A file path ending in `/` is refused rather than read as the name before it.
/// - Messages quote paths with control, bidirectional and zero-width characters escaped.
///
/// ```
/// use atfunc_tools::FileBox;
///
/// let root = tempfile::tempdir()?;
/// let files = FileBox::open(root.path())?;
/// files.write_file("notes/todo.txt", "buy milk")?;
/// assert_eq!(files.read_file("notes/todo.txt")?, "buy milk");
/// assert_eq!(files.list_files(".")?, ["notes/"]);
/// assert!(files.read_file("../secret.txt").is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct FileBox {
    pub(super) dir: Arc<Dir>,
    pub(super) name: String,
    pub(super) max_read_bytes: u64,
}

impl fmt::Debug for FileBox {
    // The root's location stays out of debug output, which can end up in a model's context.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileBox")
            .field("name", &self.name)
            .field("max_read_bytes", &self.max_read_bytes)
            .finish_non_exhaustive()
    }
}

/// The operation a message is about, named as the model sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Read,
    Write,
    Delete,
    List,
    Mkdir,
    Rmdir,
}

impl Op {
    pub(super) fn verb(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Delete => "delete",
            Op::List => "list",
            Op::Mkdir => "create the folder",
            Op::Rmdir => "remove the folder",
        }
    }
}

impl FileBox {
    /// A file box rooted at `root`, which must be an existing folder.
    ///
    /// This is the only place the box uses ambient authority: from here on it can reach the
    /// root and what lies beneath it, nothing else.
    pub fn open(root: impl AsRef<Path>) -> Result<FileBox, FileBoxError> {
        let root = root.as_ref();
        match std::fs::metadata(root) {
            Ok(meta) if !meta.is_dir() => {
                return Err(FileBoxError::RootNotAFolder {
                    path: root.to_owned(),
                })
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                return Err(FileBoxError::RootMissing {
                    path: root.to_owned(),
                })
            }
            _ => {}
        }
        let dir = Dir::open_ambient_dir(root, ambient_authority()).map_err(|source| {
            FileBoxError::OpenRoot {
                path: root.to_owned(),
                source,
            }
        })?;
        Ok(FileBox {
            dir: Arc::new(dir),
            name: DEFAULT_NAME.to_owned(),
            max_read_bytes: DEFAULT_MAX_READ_BYTES,
        })
    }

    /// A file box rooted at the folder named in a `.filetb` file.
    ///
    /// The file holds one path, surrounding whitespace ignored. A relative path is taken
    /// relative to the folder holding the `.filetb` file, not to the current directory, so a
    /// project can ship `.filetb` next to its data.
    ///
    /// ```
    /// use atfunc_tools::FileBox;
    ///
    /// let project = tempfile::tempdir()?;
    /// std::fs::create_dir(project.path().join("data"))?;
    /// std::fs::write(project.path().join(".filetb"), "data\n")?;
    /// let files = FileBox::from_filetb(project.path().join(".filetb"))?;
    /// files.write_file("hello.txt", "hi")?;
    /// assert!(project.path().join("data/hello.txt").exists());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_filetb(filetb: impl AsRef<Path>) -> Result<FileBox, FileBoxError> {
        let filetb = filetb.as_ref();
        let text = std::fs::read_to_string(filetb).map_err(|source| FileBoxError::ReadFiletb {
            path: filetb.to_owned(),
            source,
        })?;
        let line = text.trim();
        if line.is_empty() {
            return Err(FileBoxError::EmptyFiletb {
                path: filetb.to_owned(),
            });
        }
        if line.contains(['\n', '\r']) {
            return Err(FileBoxError::MultilineFiletb {
                path: filetb.to_owned(),
            });
        }
        let root = match filetb.parent() {
            Some(parent) => parent.join(line),
            None => PathBuf::from(line),
        };
        FileBox::open(root)
    }

    /// Renames the box; its functions are then called as `{name}.readfile(...)`.
    pub fn with_name(mut self, name: impl Into<String>) -> FileBox {
        self.name = name.into();
        self
    }

    /// Sets the largest file `readfile` returns, in bytes.
    pub fn with_max_read_bytes(mut self, max: u64) -> FileBox {
        self.max_read_bytes = max;
        self
    }

    /// The box's name (`file` unless renamed).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The largest file `readfile` returns, in bytes.
    pub fn max_read_bytes(&self) -> u64 {
        self.max_read_bytes
    }

    /// The interfaces of the six functions, in the box's domain.
    fn build_interfaces(&self) -> Vec<Interface> {
        let domain = self.name.as_str();
        let filepath = |what: &str| {
            Param::new("filepath", ParamType::String)
                .required()
                .describe(format!(
                    "Path of the file {what}, relative to the working folder, e.g. \"docs/readme.txt\"."
                ))
        };
        let dirpath = |what: &str| {
            Param::new("dirpath", ParamType::String)
                .required()
                .describe(format!(
                "Path of the folder {what}, relative to the working folder, e.g. \"docs/drafts\"."
            ))
        };
        let returns = |mut interface: Interface, returns: &str| {
            interface.returns = Some(returns.to_owned());
            interface
        };
        vec![
            returns(
                Interface::new("readfile")
                    .in_domain(domain)
                    .describe("Read a text file in the working folder and return its content.")
                    .param(filepath("to read")),
                "string",
            ),
            returns(
                Interface::new("writefile")
                    .in_domain(domain)
                    .describe(
                        "Write text to a file in the working folder, replacing what it held. \
                         Missing parent folders are created.",
                    )
                    .param(filepath("to write"))
                    .param(
                        Param::new("content", ParamType::String)
                            .required()
                            .describe("The complete new content of the file."),
                    ),
                "string",
            ),
            returns(
                Interface::new("deletefile")
                    .in_domain(domain)
                    .describe("Delete a file in the working folder.")
                    .param(filepath("to delete")),
                "string",
            ),
            returns(
                Interface::new("listfiles")
                    .in_domain(domain)
                    .describe(
                        "List the files and folders in the working folder or one of its \
                         subfolders, sorted by name; folder names end with \"/\".",
                    )
                    .param(Param::new("subdir", ParamType::String).describe(
                        "Subfolder to list, relative to the working folder; leave it out \
                             to list the top level.",
                    )),
                "array",
            ),
            returns(
                Interface::new("mkdir")
                    .in_domain(domain)
                    .describe("Create a folder in the working folder, with any missing parents.")
                    .param(dirpath("to create")),
                "string",
            ),
            returns(
                Interface::new("rmdir")
                    .in_domain(domain)
                    .describe("Remove an empty folder from the working folder.")
                    .param(dirpath("to remove")),
                "string",
            ),
        ]
    }

    /// Runs one of the box's functions by name (ignoring ASCII case) with its arguments by
    /// parameter name. Blocking: from async code run it on a blocking thread.
    pub fn call_blocking(
        &self,
        function: &str,
        args: &Map<String, Json>,
    ) -> Result<Json, FileError> {
        let name = function.to_ascii_lowercase();
        match name.as_str() {
            "readfile" => self
                .read_file(self.arg(&name, args, "filepath")?)
                .map(Json::String),
            "writefile" => self
                .write_file(
                    self.arg(&name, args, "filepath")?,
                    self.arg(&name, args, "content")?,
                )
                .map(Json::String),
            "deletefile" => self
                .delete_file(self.arg(&name, args, "filepath")?)
                .map(Json::String),
            "listfiles" => {
                let subdir = match args.get("subdir") {
                    None | Some(Json::Null) => "",
                    Some(_) => self.arg(&name, args, "subdir")?,
                };
                self.list_files(subdir)
                    .map(|names| Json::Array(names.into_iter().map(Json::String).collect()))
            }
            "mkdir" => self
                .make_dir(self.arg(&name, args, "dirpath")?)
                .map(Json::String),
            "rmdir" => self
                .remove_dir(self.arg(&name, args, "dirpath")?)
                .map(Json::String),
            _ => Err(FileError::new(
                FileErrorKind::UnknownFunction,
                format!(
                    "the {0} tool box has no function {1}; it has {0}.readfile, {0}.writefile, \
                     {0}.deletefile, {0}.listfiles, {0}.mkdir and {0}.rmdir",
                    self.name,
                    shown(function)
                ),
            )),
        }
    }
}

impl FileBox {
    /// A string argument, or a message saying how to give it.
    fn arg<'a>(
        &self,
        function: &str,
        args: &'a Map<String, Json>,
        param: &str,
    ) -> Result<&'a str, FileError> {
        match args.get(param) {
            Some(Json::String(s)) => Ok(s),
            None | Some(Json::Null) => Err(FileError::new(
                FileErrorKind::BadCall,
                format!(
                    "{}.{function} needs the argument {param}; {}",
                    self.name,
                    self.usage(function)
                ),
            )),
            Some(other) => Err(FileError::new(
                FileErrorKind::BadCall,
                format!(
                    "the argument {param} of {}.{function} must be a string, not {}; {}",
                    self.name,
                    json_kind(other),
                    self.usage(function)
                ),
            )),
        }
    }

    fn usage(&self, function: &str) -> String {
        let example = match function {
            "writefile" => "(\"notes.txt\", \"the text\")",
            "listfiles" => "(\"docs\")",
            "mkdir" | "rmdir" => "(\"docs/drafts\")",
            _ => "(\"docs/readme.txt\")",
        };
        format!("call it like {}.{function}{example}", self.name)
    }
}

#[async_trait::async_trait]
impl ToolBox for FileBox {
    fn name(&self) -> &str {
        &self.name
    }

    fn interfaces(&self, _ctx: &CallContext) -> Vec<Interface> {
        self.build_interfaces()
    }

    async fn call(
        &self,
        function: &str,
        args: Map<String, Json>,
        _ctx: &CallContext,
    ) -> Result<Json, ToolError> {
        let files = self.clone();
        let owned = function.to_owned();
        // File operations block; keep them off the threads that drive other calls.
        let outcome = tokio::task::spawn_blocking(move || files.call_blocking(&owned, &args)).await;
        match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(err)) if err.kind() == FileErrorKind::UnknownFunction => {
                Err(ToolError::unknown(function))
            }
            Ok(Err(err)) => Err(err.into()),
            Err(join) => Err(ToolError::Panicked {
                name: format!("{}.{function}", self.name),
                message: if join.is_cancelled() {
                    "it was cancelled".to_owned()
                } else {
                    "it panicked".to_owned()
                },
            }),
        }
    }
}

impl From<FileError> for ToolError {
    fn from(err: FileError) -> ToolError {
        ToolError::Failed(err.message)
    }
}
