//! Errors of the file tool box: [`FileError`] goes back to the model, [`FileBoxError`] to the
//! program that sets the box up.

use std::io;
use std::path::PathBuf;

/// What went wrong with a file operation, for code that wants to react to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FileErrorKind {
    /// The path is malformed: empty, a NUL character, a name too long.
    InvalidPath,
    /// The path leads outside the root: `..` above the top, an absolute path, or a symbolic
    /// link pointing out.
    OutsideRoot,
    /// Nothing exists at the path.
    NotFound,
    /// The operation wants a file and found a folder.
    IsAFolder,
    /// The operation wants a folder and found something else.
    NotAFolder,
    /// The path names something that is neither a regular file nor a folder (a device, a
    /// pipe, a socket, a dangling link).
    NotAFile,
    /// `rmdir` on a folder that still has entries.
    FolderNotEmpty,
    /// A file larger than the read limit.
    TooLarge,
    /// A file whose content is not UTF-8 text.
    NotText,
    /// A missing or mistyped argument.
    BadCall,
    /// The box has no function of that name.
    UnknownFunction,
    /// The operating system refused or failed (permissions, a symbolic link loop, a full disk).
    Io,
}

/// A file operation that failed, with a message written for the model: what failed and how
/// to do it right.
///
/// The message only ever shows paths as the model wrote them, never the root's location on
/// disk nor anything outside it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FileError {
    kind: FileErrorKind,
    pub(super) message: String,
}

impl FileError {
    pub(crate) fn new(kind: FileErrorKind, message: String) -> FileError {
        FileError { kind, message }
    }

    /// What went wrong.
    pub fn kind(&self) -> FileErrorKind {
        self.kind
    }

    /// The message for the model (the same text as `Display`).
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Setting up a [`FileBox`](super::FileBox) failed. Meant for the program and its user, so
/// it names the paths involved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileBoxError {
    /// The root folder does not exist.
    #[error("the root folder {} does not exist", .path.display())]
    RootMissing {
        /// The root as given.
        path: PathBuf,
    },
    /// The root exists but is not a folder.
    #[error("the root {} is not a folder", .path.display())]
    RootNotAFolder {
        /// The root as given.
        path: PathBuf,
    },
    /// The root folder could not be opened.
    #[error("cannot open the root folder {}: {source}", .path.display())]
    OpenRoot {
        /// The root as given.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The `.filetb` file could not be read.
    #[error("cannot read the .filetb file {}: {source}", .path.display())]
    ReadFiletb {
        /// The `.filetb` file as given.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The `.filetb` file holds no path.
    #[error("the .filetb file {} is empty; write the root folder's path in it", .path.display())]
    EmptyFiletb {
        /// The `.filetb` file as given.
        path: PathBuf,
    },
    /// The `.filetb` file holds more than one line.
    #[error(
        "the .filetb file {} holds more than one line; it must hold only the root folder's path",
        .path.display()
    )]
    MultilineFiletb {
        /// The `.filetb` file as given.
        path: PathBuf,
    },
}
