//! The operations on the root folder: read, write, delete and list files, make and remove
//! folders, each through the [`cap_std::fs::Dir`] opened on the root.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use cap_std::fs::{File, OpenOptions};

use super::error::{FileError, FileErrorKind};
use super::path::{normalise, shown, Relative};
use super::tool::{FileBox, Op};

impl FileBox {
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
