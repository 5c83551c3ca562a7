//! What the model reads when an operation fails: each message names the path as the model
//! wrote it and what to do instead.

use std::io;
use std::path::Path;

use super::error::{FileError, FileErrorKind};
use super::path::shown;
use super::tool::{FileBox, Op};

impl FileBox {
    pub(super) fn is_a_folder(&self, op: Op, raw: &str) -> FileError {
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

    pub(super) fn not_a_file(&self, op: Op, raw: &str) -> FileError {
        FileError::new(
            FileErrorKind::NotAFile,
            format!(
                "cannot {} {}: it is not a regular file",
                op.verb(),
                shown(raw)
            ),
        )
    }

    pub(super) fn parent_not_a_folder(&self, op: Op, raw: &str) -> FileError {
        FileError::new(
            FileErrorKind::NotAFolder,
            format!(
                "cannot {} {}: a part of the path before the last name is a file, not a folder",
                op.verb(),
                shown(raw)
            ),
        )
    }

    pub(super) fn too_large(&self, raw: &str, len: u64) -> FileError {
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
    pub(super) fn io_error(&self, op: Op, raw: &str, err: io::Error) -> FileError {
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
