//! The file tool box: read, write, list and delete files inside one root folder, and nowhere
//! else.
//!
//! Every path goes through a [`cap_std::fs::Dir`] opened once on the root, so `..`, absolute
//! paths and symbolic links cannot reach anything outside it, however the path is spelled and
//! even if the folder changes while a call runs. Paths are checked as strings only to give the
//! model a clearer message than the operating system would.

mod error;
mod path;

pub use error::{FileBoxError, FileError, FileErrorKind};

use std::fmt;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::{Dir, File, OpenOptions};
use serde_json::{Map, Value as Json};

use super::{CallContext, ToolBox, ToolError};
use crate::interface::{Interface, Param, ParamType};
use crate::messages::json_kind;
use path::{normalise, shown, Relative};

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
/// use atfunc::execute::FileBox;
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
    dir: Arc<Dir>,
    name: String,
    max_read_bytes: u64,
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
enum Op {
    Read,
    Write,
    Delete,
    List,
    Mkdir,
    Rmdir,
}

impl Op {
    fn verb(self) -> &'static str {
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
    /// use atfunc::execute::FileBox;
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

    /// Reads a text file. Refuses folders, files larger than the read limit and content that
    /// is not UTF-8.
    pub fn read_file(&self, filepath: &str) -> Result<String, FileError> {
        let op = Op::Read;
        let rel = self.file_target(op, filepath)?;
        let mut options = OpenOptions::new();
        options.read(true);
        let file = self.open_regular(op, filepath, &rel, &options)?;
        let len = file
            .metadata()
            .map_err(|e| self.io_error(op, filepath, e))?
            .len();
        if len > self.max_read_bytes {
            return Err(self.too_large(filepath, len));
        }
        let mut bytes = Vec::new();
        // The file may have grown since it was measured; never read past the limit.
        file.take(self.max_read_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| self.io_error(op, filepath, e))?;
        let len = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if len > self.max_read_bytes {
            return Err(self.too_large(filepath, len));
        }
        String::from_utf8(bytes).map_err(|_| {
            FileError::new(
                FileErrorKind::NotText,
                format!(
                    "cannot read {}: it is not UTF-8 text (a binary file?); only text files can be read",
                    shown(filepath)
                ),
            )
        })
    }

    /// Writes `content` to a file, replacing what it held, and creates missing parent
    /// folders. Returns a confirmation for the model.
    pub fn write_file(&self, filepath: &str, content: &str) -> Result<String, FileError> {
        let op = Op::Write;
        let rel = self.file_target(op, filepath)?;
        let existing = match self.dir.metadata(&rel) {
            Ok(meta) if meta.is_dir() => return Err(self.is_a_folder(op, filepath)),
            Ok(meta) if !meta.is_file() => return Err(self.not_a_file(op, filepath)),
            Ok(meta) => Some(meta),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(self.io_error(op, filepath, e)),
        };
        let existed = existing.is_some();
        let mut created_parents = false;
        if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
            match self.dir.metadata(parent) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => return Err(self.parent_not_a_folder(op, filepath)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    self.dir
                        .create_dir_all(parent)
                        .map_err(|e| self.io_error(op, filepath, e))?;
                    created_parents = true;
                }
                Err(e) => return Err(self.io_error(op, filepath, e)),
            }
        }
        // A file that exists is replaced where it really is: through a symbolic link
        // inside the root, the link stays and its target gets the new content.
        let destination = match existing {
            Some(_) => self
                .dir
                .canonicalize(&rel)
                .map_err(|e| self.io_error(op, filepath, e))?,
            None => rel.clone(),
        };
        self.replace(op, filepath, &destination, content, existing)?;
        let bytes = match content.len() {
            1 => "1 byte".to_owned(),
            n => format!("{n} bytes"),
        };
        let what = if existed {
            "replacing its previous content"
        } else if created_parents {
            "a new file; its missing parent folders were created"
        } else {
            "a new file"
        };
        Ok(format!("Wrote {bytes} to {} ({what}).", shown(filepath)))
    }

    /// Writes `content` to a new file beside `destination` and renames it over
    /// `destination`. Writing in place would change every other name of the file too: a
    /// hard link inside the root to a file outside it would let the model change that
    /// file. The new file takes the old one's permissions; its owner is this process's
    /// user.
    fn replace(
        &self,
        op: Op,
        raw: &str,
        destination: &Path,
        content: &str,
        existing: Option<cap_std::fs::Metadata>,
    ) -> Result<(), FileError> {
        let folder = destination.parent().unwrap_or(Path::new(""));
        let (temporary, mut file) = self.create_temporary(op, raw, folder)?;
        let written = (|| {
            if let Some(meta) = &existing {
                file.set_permissions(meta.permissions())?;
            }
            file.write_all(content.as_bytes())?;
            drop(file);
            self.dir.rename(&temporary, &self.dir, destination)
        })();
        written.map_err(|e| {
            // The new file is not left behind; a failure here changes nothing more.
            let _ = self.dir.remove_file(&temporary);
            self.io_error(op, raw, e)
        })
    }

    /// A new, empty file in `folder` under a name no other file has.
    fn create_temporary(
        &self,
        op: Op,
        raw: &str,
        folder: &Path,
    ) -> Result<(PathBuf, File), FileError> {
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let mut options = OpenOptions::new();
        // `create_new` never opens what is already there, a symbolic link included.
        options.write(true).create_new(true);
        let mut attempt = 0;
        loop {
            let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let name = format!(".atfunc-write-{}-{n}.tmp", std::process::id());
            let temporary = folder.join(name);
            match self.dir.open_with(&temporary, &options) {
                Ok(file) => return Ok((temporary, file)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => {
                    attempt += 1;
                }
                Err(e) => return Err(self.io_error(op, raw, e)),
            }
        }
    }

    /// Deletes a file (or a symbolic link, never what it points to). Refuses folders.
    pub fn delete_file(&self, filepath: &str) -> Result<String, FileError> {
        let op = Op::Delete;
        let rel = self.file_target(op, filepath)?;
        let meta = self
            .dir
            .symlink_metadata(&rel)
            .map_err(|e| self.io_error(op, filepath, e))?;
        if meta.is_dir() {
            return Err(FileError::new(
                FileErrorKind::IsAFolder,
                format!(
                    "cannot delete {0}: it is a folder; remove an empty folder with {1}.rmdir({0})",
                    shown(filepath),
                    self.name
                ),
            ));
        }
        self.dir
            .remove_file(&rel)
            .map_err(|e| self.io_error(op, filepath, e))?;
        Ok(format!("Deleted {}.", shown(filepath)))
    }

    /// Lists a folder, `subdir` relative to the working folder (the working folder itself
    /// when empty or `.`): names sorted, folders ending with `/`.
    pub fn list_files(&self, subdir: &str) -> Result<Vec<String>, FileError> {
        let op = Op::List;
        let rel = if subdir.is_empty() {
            Relative::new()
        } else {
            normalise(subdir, "subdir", op.verb())?
        };
        let entries = if rel.as_os_str().is_empty() {
            self.dir.entries()
        } else {
            let raw = subdir;
            match self.dir.metadata(&rel) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    return Err(FileError::new(
                        FileErrorKind::NotAFolder,
                        format!(
                            "cannot list {0}: it is a file, not a folder; read it with {1}.readfile({0})",
                            shown(raw),
                            self.name
                        ),
                    ))
                }
                Err(e) => return Err(self.io_error(op, raw, e)),
            }
            self.dir.read_dir(&rel)
        };
        let entries = entries
            .map_err(|e| self.io_error(op, if subdir.is_empty() { "." } else { subdir }, e))?;
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry
                .map_err(|e| self.io_error(op, if subdir.is_empty() { "." } else { subdir }, e))?;
            let mut name = entry.file_name().to_string_lossy().into_owned();
            // A link to a folder inside the root is listed as a folder, since it can be used
            // as one; a link leading out fails the sandboxed lookup and is listed plainly.
            let is_dir = match entry.file_type() {
                Ok(ty) if ty.is_dir() => true,
                Ok(ty) if ty.is_symlink() => self
                    .dir
                    .metadata(rel.join(entry.file_name()))
                    .is_ok_and(|m| m.is_dir()),
                _ => false,
            };
            if is_dir {
                name.push('/');
            }
            names.push(name);
        }
        names.sort();
        Ok(names)
    }

    /// Creates a folder and any missing parents. A folder that already exists is not an
    /// error; a file in its place is.
    pub fn make_dir(&self, dirpath: &str) -> Result<String, FileError> {
        let op = Op::Mkdir;
        let rel = self.target(op, dirpath, "dirpath")?;
        match self.dir.metadata(&rel) {
            Ok(meta) if meta.is_dir() => {
                return Ok(format!("The folder {} already exists.", shown(dirpath)))
            }
            Ok(_) => {
                return Err(FileError::new(
                    FileErrorKind::NotAFolder,
                    format!(
                        "cannot create the folder {0}: a file with that name exists; delete it first with {1}.deletefile({0}) or choose another name",
                        shown(dirpath),
                        self.name
                    ),
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(self.io_error(op, dirpath, e)),
        }
        self.dir
            .create_dir_all(&rel)
            .map_err(|e| self.io_error(op, dirpath, e))?;
        Ok(format!("Created the folder {}.", shown(dirpath)))
    }

    /// Removes an empty folder. Refuses files and folders that still hold anything.
    pub fn remove_dir(&self, dirpath: &str) -> Result<String, FileError> {
        let op = Op::Rmdir;
        let rel = self.target(op, dirpath, "dirpath")?;
        let meta = self
            .dir
            .symlink_metadata(&rel)
            .map_err(|e| self.io_error(op, dirpath, e))?;
        if !meta.is_dir() {
            return Err(FileError::new(
                FileErrorKind::NotAFolder,
                format!(
                    "cannot remove the folder {0}: it is not a folder; delete a file with {1}.deletefile({0})",
                    shown(dirpath),
                    self.name
                ),
            ));
        }
        self.dir
            .remove_dir(&rel)
            .map_err(|e| self.io_error(op, dirpath, e))?;
        Ok(format!("Removed the folder {}.", shown(dirpath)))
    }

    /// Checks a path that must name something below the root, not the root itself.
    fn target(&self, op: Op, raw: &str, arg: &str) -> Result<Relative, FileError> {
        let rel = normalise(raw, arg, op.verb())?;
        if rel.as_os_str().is_empty() {
            return Err(FileError::new(
                FileErrorKind::InvalidPath,
                format!(
                    "cannot {} {}: that is the working folder itself; name something inside it",
                    op.verb(),
                    shown(raw)
                ),
            ));
        }
        Ok(rel)
    }

    /// Like [`FileBox::target`], for a path that must name a file: a trailing `/` names a
    /// folder, and the system would quietly drop it (`writefile("notes/")` would write a
    /// file named `notes`).
    fn file_target(&self, op: Op, raw: &str) -> Result<Relative, FileError> {
        let rel = self.target(op, raw, "filepath")?;
        if raw.ends_with(['/', '\\']) {
            let trimmed = raw.trim_end_matches(['/', '\\']);
            return Err(FileError::new(
                FileErrorKind::InvalidPath,
                format!(
                    "cannot {} {}: a path ending in \"/\" names a folder, not a file; write the file's name without it, such as {}",
                    op.verb(),
                    shown(raw),
                    shown(&format!("{trimmed}/notes.txt"))
                ),
            ));
        }
        Ok(rel)
    }

    /// Opens `rel` without blocking and refuses anything but a regular file, checked on the
    /// open file itself: a FIFO or device swapped in after any earlier look would otherwise
    /// block the opening (a FIFO waits for its other end) or the reading for good.
    fn open_regular(
        &self,
        op: Op,
        raw: &str,
        rel: &Path,
        options: &OpenOptions,
    ) -> Result<File, FileError> {
        let mut options = options.clone();
        #[cfg(unix)]
        {
            use cap_std::fs::OpenOptionsExt;
            // Regular files ignore the flag; a FIFO then opens (or fails) at once.
            options.custom_flags(nonblocking_flag());
        }
        let file = self.dir.open_with(rel, &options).map_err(|e| {
            if no_reader(&e) {
                self.not_a_file(op, raw)
            } else {
                self.io_error(op, raw, e)
            }
        })?;
        let meta = file.metadata().map_err(|e| self.io_error(op, raw, e))?;
        if meta.is_dir() {
            return Err(self.is_a_folder(op, raw));
        }
        if !meta.is_file() {
            return Err(self.not_a_file(op, raw));
        }
        Ok(file)
    }

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

    fn is_a_folder(&self, op: Op, raw: &str) -> FileError {
        let path = shown(raw);
        FileError::new(
            FileErrorKind::IsAFolder,
            format!(
                "cannot {} {path}: it is a folder, not a file; see what it holds with {}.listfiles({path})",
                op.verb(),
                self.name
            ),
        )
    }

    fn not_a_file(&self, op: Op, raw: &str) -> FileError {
        FileError::new(
            FileErrorKind::NotAFile,
            format!(
                "cannot {} {}: it is not a regular file",
                op.verb(),
                shown(raw)
            ),
        )
    }

    fn parent_not_a_folder(&self, op: Op, raw: &str) -> FileError {
        FileError::new(
            FileErrorKind::NotAFolder,
            format!(
                "cannot {} {}: a part of the path before the last name is a file, not a folder",
                op.verb(),
                shown(raw)
            ),
        )
    }

    fn too_large(&self, raw: &str, len: u64) -> FileError {
        FileError::new(
            FileErrorKind::TooLarge,
            format!(
                "cannot read {}: it holds {len} bytes and at most {} can be read",
                shown(raw),
                self.max_read_bytes
            ),
        )
    }

    /// Turns an operating system error into a message for the model. Only the path as the
    /// model wrote it and the system's own description of the error appear in it, never a
    /// path from the error (the io errors seen here carry none).
    fn io_error(&self, op: Op, raw: &str, err: io::Error) -> FileError {
        let path = shown(raw);
        let verb = op.verb();
        let (kind, message) = match err.kind() {
            io::ErrorKind::NotFound => {
                let parent = Path::new(raw)
                    .parent()
                    .map(|p| p.to_string_lossy().into_owned())
                    .filter(|p| !p.is_empty());
                let hint = match parent {
                    Some(parent) => format!("{}.listfiles({})", self.name, shown(&parent)),
                    None => format!("{}.listfiles()", self.name),
                };
                (
                    FileErrorKind::NotFound,
                    format!("cannot {verb} {path}: it does not exist; {hint} shows what does"),
                )
            }
            // cap-std reports an escape as its own PermissionDenied error without an OS code.
            io::ErrorKind::PermissionDenied if err.raw_os_error().is_none() => (
                FileErrorKind::OutsideRoot,
                format!(
                    "cannot {verb} {path}: it leads outside the working folder (through a symbolic link or \"..\"); only paths inside the working folder can be used"
                ),
            ),
            io::ErrorKind::NotADirectory => (
                FileErrorKind::NotAFolder,
                format!("cannot {verb} {path}: a part of the path is a file, not a folder"),
            ),
            io::ErrorKind::IsADirectory => (
                FileErrorKind::IsAFolder,
                format!("cannot {verb} {path}: it is a folder"),
            ),
            io::ErrorKind::DirectoryNotEmpty => (
                FileErrorKind::FolderNotEmpty,
                format!(
                    "cannot {verb} {path}: it is not empty; see what it holds with {}.listfiles({path}) and delete that first",
                    self.name
                ),
            ),
            io::ErrorKind::AlreadyExists => (
                FileErrorKind::Io,
                format!("cannot {verb} {path}: something with that name already exists"),
            ),
            _ => {
                // Rebuild from the OS code alone, so the text cannot carry anything else; a
                // symbolic link loop reads "Too many levels of symbolic links".
                let cause = match err.raw_os_error() {
                    Some(code) => io::Error::from_raw_os_error(code).to_string(),
                    None => err.kind().to_string(),
                };
                (
                    FileErrorKind::Io,
                    format!("cannot {verb} {path}: {cause}"),
                )
            }
        };
        FileError::new(kind, message)
    }
}

/// Whether opening failed because a FIFO opened for writing has no reader (ENXIO).
fn no_reader(error: &io::Error) -> bool {
    #[cfg(unix)]
    {
        error.raw_os_error() == Some(rustix::io::Errno::NXIO.raw_os_error())
    }
    #[cfg(not(unix))]
    {
        let _ = error;
        false
    }
}

/// `O_NONBLOCK`, as the open flags take it.
#[cfg(unix)]
fn nonblocking_flag() -> i32 {
    i32::try_from(rustix::fs::OFlags::NONBLOCK.bits()).unwrap_or(0)
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
