//! Paths as the model writes them: checked for the mistakes that deserve a clearer message than
//! the operating system would give, and normalised before they reach the sandboxed directory.
//!
//! None of this is the sandbox. Every path still goes through a `cap_std::fs::Dir`, which refuses
//! anything that resolves outside the root, symbolic links included. The checks here only turn
//! the obvious cases (`..` above the top, an absolute path, a NUL byte) into a message that tells
//! the model what to write instead.

use std::path::{Component, Path, PathBuf};

use super::error::{FileError, FileErrorKind};

/// The longest name of one file or folder, in bytes (the common file system limit).
pub(crate) const MAX_NAME_BYTES: usize = 255;

/// The longest path accepted, in bytes.
pub(crate) const MAX_PATH_BYTES: usize = 4096;

/// How many characters of a path an error message shows before cutting it short.
const SHOWN_CHARS: usize = 80;

/// A path relative to the root, with `.` removed and `..` resolved lexically. Empty means the
/// root itself.
pub(crate) type Relative = PathBuf;

/// Checks `raw`, the path exactly as the model gave it for the argument `arg` of an
/// operation described by `verb` ("read", "create the folder"), and returns it normalised and
/// relative to the root.
///
/// `..` is resolved against the components written before it, so `a/../b.txt` is `b.txt`
/// whether or not `a` exists; a `..` with nothing left to cancel is refused. Resolving
/// lexically can only ever stay closer to the root than resolving through a symbolic link
/// would, and the sandboxed directory checks the result anyway.
pub(crate) fn normalise(raw: &str, arg: &str, verb: &str) -> Result<Relative, FileError> {
    let refuse = |kind: FileErrorKind, why: String| {
        FileError::new(kind, format!("cannot {verb} {}: {why}", shown(raw)))
    };
    if raw.is_empty() {
        return Err(FileError::new(
            FileErrorKind::InvalidPath,
            format!(
                "cannot {verb}: the {arg} is empty; give a path relative to the working folder, such as \"docs/readme.txt\""
            ),
        ));
    }
    if raw.contains('\0') {
        return Err(refuse(
            FileErrorKind::InvalidPath,
            format!("the {arg} contains a NUL character, which no file name can hold; remove it"),
        ));
    }
    if is_absolute(raw) {
        return Err(refuse(
            FileErrorKind::OutsideRoot,
            format!(
                "the {arg} is an absolute path; only paths relative to the working folder can be used, such as \"docs/readme.txt\""
            ),
        ));
    }
    if raw.len() > MAX_PATH_BYTES {
        return Err(refuse(
            FileErrorKind::InvalidPath,
            format!(
                "the {arg} is {} bytes long and at most {MAX_PATH_BYTES} are allowed; use a shorter path",
                raw.len()
            ),
        ));
    }
    let mut out = PathBuf::new();
    for component in Path::new(raw).components() {
        match component {
            Component::Normal(name) => {
                if name.len() > MAX_NAME_BYTES {
                    return Err(refuse(
                        FileErrorKind::InvalidPath,
                        format!(
                            "the {arg} has a name of {} bytes and one file or folder name can have at most {MAX_NAME_BYTES}; use a shorter name",
                            name.len()
                        ),
                    ));
                }
                out.push(name);
            }
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return Err(refuse(
                        FileErrorKind::OutsideRoot,
                        format!(
                            "the {arg} leads outside the working folder through \"..\"; only paths inside the working folder can be used"
                        ),
                    ));
                }
            }
            // `is_absolute` above has already refused anything with a root or a prefix.
            Component::RootDir | Component::Prefix(_) => {
                return Err(refuse(
                    FileErrorKind::OutsideRoot,
                    format!("the {arg} is not a relative path"),
                ));
            }
        }
    }
    Ok(out)
}

/// Whether `raw` is absolute on any platform a model might have in mind: `/etc`, `\\server`,
/// `C:\`, `C:/`. A model that writes one of these on a Unix host still deserves the same answer.
fn is_absolute(raw: &str) -> bool {
    if raw.starts_with('/') || raw.starts_with('\\') || Path::new(raw).has_root() {
        return true;
    }
    matches!(
        raw.as_bytes(),
        [letter, b':'] | [letter, b':', b'/' | b'\\', ..] if letter.is_ascii_alphabetic()
    )
}

/// A path as shown in an error message: quoted, control and bidirectional-formatting
/// characters escaped (a U+202E would show the rest of the message reversed), and cut short
/// when long, so a 10,000-character name does not flood the model's context.
pub(crate) fn shown(raw: &str) -> String {
    let mut out = String::from("\"");
    for (count, c) in raw.chars().enumerate() {
        if count == SHOWN_CHARS {
            let total = raw.chars().count();
            out.push_str(&format!("…\" ({total} characters)"));
            return out;
        }
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() || atfunc::format::is_invisible(c) => {
                out.extend(c.escape_default());
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dots_resolve_within_the_root() {
        assert_eq!(
            normalise("./a/../b/c.txt", "filepath", "read").ok(),
            Some(PathBuf::from("b/c.txt"))
        );
        assert_eq!(
            normalise("a/..", "dirpath", "read").ok(),
            Some(PathBuf::new())
        );
    }

    #[test]
    fn escapes_are_refused() {
        for raw in [
            "..",
            "../x",
            "a/../../x",
            "/etc/passwd",
            "\\\\srv\\x",
            "C:\\x",
            "c:/x",
        ] {
            let err = normalise(raw, "filepath", "read").err();
            assert_eq!(
                err.map(|e| e.kind()),
                Some(FileErrorKind::OutsideRoot),
                "{raw}"
            );
        }
    }

    #[test]
    fn shown_escapes_and_cuts() {
        assert_eq!(shown("a\0b"), "\"a\\u{0}b\"");
        let long = "x".repeat(10_000);
        let s = shown(&long);
        assert!(s.len() < 120, "{s}");
        assert!(s.ends_with("(10000 characters)"), "{s}");
    }
}
