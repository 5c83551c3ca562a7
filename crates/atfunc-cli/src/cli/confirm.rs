//! `atfunc exec --confirm ask|yes|no`: what happens to calls of functions that need the
//! user's confirmation (a config's `"confirm": true`).

use atfunc_tools::async_trait;
use atfunc_tools::{Confirmer, Decision, HeldCall, Registry};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::sync::{Arc, Mutex, PoisonError};

/// The choice of `--confirm`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ConfirmMode {
    /// Show each call on the terminal and wait for y or n; without a terminal, as `no`.
    #[default]
    Ask,
    /// Run every such call.
    Yes,
    /// Run none: each stays held, and its result says so.
    No,
}

/// Sets the registry up for `mode`, and gives why calls that need confirmation are left
/// waiting, for the note at the end (they wait only with `no` or when `ask` cannot ask).
/// `answer_on_terminal`: the model's answer is read from the terminal, which then cannot
/// be asked as well (the reader would take the user's y or n as the model's text).
pub(crate) fn set_up(
    registry: &Registry,
    mode: ConfirmMode,
    answer_on_terminal: bool,
) -> &'static str {
    match mode {
        ConfirmMode::Yes => {
            registry.set_confirmer(Decision::Run);
            "--confirm yes"
        }
        ConfirmMode::No => "--confirm no",
        ConfirmMode::Ask if answer_on_terminal => {
            "the model's answer is read from the terminal, so it cannot ask there too"
        }
        ConfirmMode::Ask => match Terminal::open() {
            Some(terminal) => {
                registry.set_confirmer(terminal);
                "asked"
            }
            // No terminal to ask on: the calls stay held, as with `no`.
            None => "there is no terminal to ask on",
        },
    }
}

/// The process's controlling terminal, read and written directly so that redirected
/// input and output (the model's answer, the results) are not mixed with the questions.
struct Terminal {
    tty: Arc<Mutex<File>>,
}

impl Terminal {
    fn open() -> Option<Terminal> {
        let tty = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .ok()?;
        Some(Terminal {
            tty: Arc::new(Mutex::new(tty)),
        })
    }
}

#[async_trait]
impl Confirmer for Terminal {
    async fn decide(&self, call: &HeldCall) -> Decision {
        let question = format!(
            "atfunc: the model calls {}\nRun it? [y/N] ",
            shown_call(call)
        );
        let tty = Arc::clone(&self.tty);
        // Waiting for a person must not hold up the runtime's other work.
        let answer = tokio::task::spawn_blocking(move || {
            let mut tty = tty.lock().unwrap_or_else(PoisonError::into_inner);
            // Keys pressed before the question is shown are not its answer: a `y` typed
            // ahead (or a second `y` typed at the previous question) would otherwise
            // answer a call the user has not seen.
            discard_typed_ahead(&tty);
            tty.write_all(RESET.as_bytes()).ok()?;
            tty.write_all(question.as_bytes()).ok()?;
            tty.flush().ok()?;
            let mut line = String::new();
            BufReader::new(&mut *tty).read_line(&mut line).ok()?;
            Some(line)
        })
        .await
        .ok()
        .flatten();
        match answer.as_deref().map(|a| a.trim().to_lowercase()) {
            Some(answer) if answer == "y" || answer == "yes" => Decision::Run,
            _ => Decision::Decline,
        }
    }
}

/// Written before each question: attributes back to normal (a tool's output may have left
/// hidden or same-colour text on), the cursor shown, the ASCII character set selected
/// (`ESC ( B`, then SI back to it). The screen is left as it is: switching back from an
/// alternate screen also moves the cursor to a saved position, on a terminal that was
/// never switched too, and would draw the question over older lines.
const RESET: &str = "\x1b[0m\x1b[?25h\x1b(B\x0f";

/// Drops what was typed on the terminal and not read yet.
fn discard_typed_ahead(tty: &File) {
    #[cfg(unix)]
    {
        // Nothing to drop is no error; a terminal that refuses is asked all the same.
        let _ = rustix::termios::tcflush(tty, rustix::termios::QueueSelector::IFlush);
    }
    #[cfg(not(unix))]
    let _ = tty;
}

/// Whether the model's answer, read from `path`, comes from the terminal questions would
/// be asked on: this process's controlling terminal, under any name (`/dev/tty`,
/// `/dev/pts/3`, a link to either). A terminal is that one when it is the controlling
/// terminal of this process's session.
pub(crate) fn is_controlling_terminal(path: &std::path::Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        // Only a character device can be a terminal; anything else is not opened here
        // (opening a FIFO would wait for its writer).
        let is_device = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_char_device());
        if !is_device {
            return false;
        }
        let Ok(file) = File::open(path) else {
            return false;
        };
        match (
            rustix::termios::tcgetsid(&file),
            rustix::process::getsid(None),
        ) {
            (Ok(owner), Ok(session)) => owner == session,
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// The longest call shown in a question, in characters.
const SHOWN_LIMIT: usize = 2000;

/// `files.delete(path="notes.txt")`, with every character that could hide or reorder what
/// the terminal shows written as an escape, and cut at [`SHOWN_LIMIT`] characters.
fn shown_call(call: &HeldCall) -> String {
    let mut text = atfunc::format::call_text_from_args(&call.function, &call.args);
    if let Some(body) = &call.body {
        text.push_str(&format!(" with_body [[ {} ]]", body_text(body)));
    }
    let escaped = atfunc::format::escape_for_terminal(&text).into_owned();
    let total = escaped.chars().count();
    if total <= SHOWN_LIMIT {
        return escaped;
    }
    let kept: String = escaped.chars().take(SHOWN_LIMIT).collect();
    format!("{kept} [... {} more characters]", total - SHOWN_LIMIT)
}

fn body_text(body: &atfunc::bind::Body) -> String {
    match &body.json {
        Some(json) => json.to_string(),
        None => body.raw.clone(),
    }
}
