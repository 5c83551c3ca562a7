//! What the command line writes: one writer for standard output, and messages whose
//! input-derived text is shown, never obeyed, by the terminal.
//!
//! `print!` panics when standard output is a pipe whose reader has gone
//! (`atfunc render | head`: exit 101, "failed printing to stdout"); [`print`] turns that
//! into a [`Failure`], as `parse` and `exec` report it. A tool's or toolbox's name comes
//! from a file, and a message quoting it raw would hand its escape sequences to the
//! terminal (a new window title, a cleared screen): [`visible`] writes them out.

use super::Failure;
use std::borrow::Cow;
use std::io::Write;

/// Writes `text` to standard output and flushes it; a write that fails is a [`Failure`].
pub(crate) fn print(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(write_failure)
}

/// Why standard output could not be written.
pub(crate) fn write_failure(e: std::io::Error) -> Failure {
    Failure(format!("cannot write output: {e}"))
}

/// `text` with its control and invisible characters written as escapes (`\u{001b}`),
/// line breaks and tabs kept: for a message that may quote names read from input.
pub(crate) fn visible(text: &str) -> Cow<'_, str> {
    atfunc::format::escape_lines_for_terminal(text)
}

/// Writes `atfunc: <message>` to standard error, `message` made [`visible`]. Standard
/// error that cannot be written is no reason to stop (nor to panic, as `eprintln!` does).
pub(crate) fn note(message: &str) {
    let line = format!("atfunc: {}\n", visible(message));
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_in_names_are_shown_not_sent() {
        let name = "x\u{1b}]0;title\u{7}\u{1b}[2Jy";
        assert_eq!(
            visible(&format!("toolbox '{name}':\n\tbad")),
            "toolbox 'x\\u{001b}]0;title\\u{0007}\\u{001b}[2Jy':\n\tbad"
        );
        assert!(matches!(visible("plain"), Cow::Borrowed("plain")));
    }
}
