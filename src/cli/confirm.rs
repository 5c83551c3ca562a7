//! `atfunc exec --confirm ask|yes|no`: what happens to calls of functions that need the
//! user's confirmation (a config's `"confirm": true`).

use atfunc::async_trait;
use atfunc::execute::{Confirmer, Decision, HeldCall, Registry};
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
