//! `atfunc parse`: calls out of a model's output as JSON Lines, while it streams.

use super::tools::ToolArgs;
use super::Failure;
use atfunc::batch::{self, CallHead};
use atfunc::{Catalog, Event, Span, StreamParser};
use serde_json::{json, Value as Json};
use std::borrow::Cow;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `atfunc parse`.
#[derive(Debug, clap::Args)]
pub(crate) struct ParseArgs {
    /// Bind each call to the functions these options offer (as `exec` runs them): typed
    /// arguments, and an error record for a call that does not bind. With --config the
    /// control functions `tools.*` bind too.
    #[command(flatten)]
    tools: ToolArgs,
    /// Bytes fed to the parser at a time. The output is the same for every size.
    #[arg(long, value_name = "N", default_value_t = 8192, value_parser = clap::value_parser!(u64).range(1..=(1 << 30)))]
    chunk_size: u64,
    /// Print the text around calls too, as {"text": "..."} records.
    #[arg(long)]
    text: bool,
    /// Read JSON Lines records {"id", "completion", "tools"} and write one line per record,
    /// {"id", "calls", "errors"}, in input order, parsing on every core. A record's own
    /// "tools" wins over --tools and --config.
    #[arg(long, conflicts_with_all = ["text", "chunk_size"])]
    jsonl: bool,
    /// The model output to read (default: standard input).
    file: Option<PathBuf>,
}

/// Bytes asked of the input per read; the parser is still fed `--chunk-size` at a time.
const READ_SIZE: usize = 64 * 1024;

/// Text records are cut at this many bytes, so memory stays bounded on endless prose and
/// the cut points do not depend on the chunk size.
const TEXT_RECORD_LIMIT: usize = 64 * 1024;

pub(crate) fn run(args: ParseArgs) -> Result<ExitCode, Failure> {
    let catalog = if args.tools.is_empty() {
        None
    } else {
        // A tools file's functions are bound as declared; a config's as `exec` offers
        // them, the control functions included.
        let offered = args.tools.offered(args.tools.config.is_some())?;
        let catalog = Catalog::new(offered.interfaces);
        Some(match offered.root {
            Some(root) => catalog.with_root(root),
            None => catalog,
        })
    };
    if args.jsonl {
        return super::jsonl::run(catalog, args.file.as_deref());
    }
    let mut input = super::open_input(args.file.as_deref())?;
    let stdout = std::io::stdout();
    let mut printer = Printer {
        out: std::io::BufWriter::new(stdout.lock()),
        catalog: catalog.as_ref(),
        with_text: args.text,
        text: String::new(),
        invalid: Vec::new(),
        invalid_span: None,
        head: CallHead::default(),
        wrote: false,
    };
    let mut parser = StreamParser::new(batch::parser_config(catalog.as_ref()));
    let size = usize::try_from(args.chunk_size).unwrap_or(usize::MAX);
    // Reads are large whatever the chunk size: one system call per byte costs far more
    // than parsing the byte. A read returns what a live stream holds so far, so nothing
    // waits for a block to fill.
    let mut buf = vec![0u8; size.max(READ_SIZE)];
    let mut events = Vec::new();
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Failure(format!("cannot read input: {e}"))),
        };
        for chunk in buf.get(..n).unwrap_or_default().chunks(size) {
            printer.head.see(chunk);
            parser.feed_into(chunk, &mut events);
            printer.print(&mut events, chunk)?;
        }
        // Records go out once the bytes read so far are parsed, for readers of a live
        // stream: once per read, not once per record.
        if std::mem::take(&mut printer.wrote) {
            printer.out.flush().map_err(write_failure)?;
        }
    }
    parser.finish_into(&mut events);
    printer.print(&mut events, &[])?;
    printer.flush_text()?;
    printer.out.flush().map_err(write_failure)?;
    Ok(ExitCode::SUCCESS)
}

fn write_failure(e: std::io::Error) -> Failure {
    Failure(format!("cannot write output: {e}"))
}

struct Printer<'a, W: Write> {
    out: W,
    catalog: Option<&'a Catalog>,
    with_text: bool,
    /// Text not printed yet; adjacent text events merge here so the records do not depend
    /// on how the input was chunked.
    text: String,
    /// Invalid bytes not printed yet, merged like text, and where they stand.
    invalid: Vec<u8>,
    invalid_span: Option<Span>,
    head: CallHead,
    /// Whether records were written since the last flush.
    wrote: bool,
}

impl<W: Write> Printer<'_, W> {
    /// Prints the records `events` complete; `chunk` is the chunk whose feeding gave them.
    fn print(&mut self, events: &mut Vec<Event>, chunk: &[u8]) -> Result<(), Failure> {
        for event in events.drain(..) {
            match event {
                Event::Text { text } if self.with_text => {
                    self.flush_invalid()?;
                    self.text.push_str(&text);
                    self.flush_full_text()?;
                }
                Event::InvalidUtf8 { bytes, span } if self.with_text => {
                    self.flush_plain_text()?;
                    match &mut self.invalid_span {
                        Some(held) if held.end == span.start => {
                            *held = Span::new(held.start, span.end)
                                .with_chars(held.char_start, span.char_end);
                        }
                        _ => {
                            self.flush_invalid()?;
                            self.invalid_span = Some(span);
                        }
                    }
                    self.invalid.extend_from_slice(&bytes);
                    if self.invalid.len() >= TEXT_RECORD_LIMIT {
                        self.flush_invalid()?;
                    }
                }
                Event::CallStarted { name, start } => self.head.start(start, &name, chunk),
                Event::Call(call) => {
                    self.flush_text()?;
                    let head = &self.head;
                    let record = batch::call_record(&call, self.catalog, || {
                        Cow::Owned(head.raw(call.span.len()))
                    })
                    .into_json();
                    self.head.stop();
                    self.line(&record)?;
                    self.wrote = true;
                }
                Event::Malformed { span, error, text } => {
                    self.flush_text()?;
                    self.head.stop();
                    self.line(&batch::malformed_record(span, &error, &text))?;
                    self.wrote = true;
                }
                // Text without --text, and future event kinds, print nothing.
                _ => {}
            }
        }
        Ok(())
    }

    fn flush_full_text(&mut self) -> Result<(), Failure> {
        while self.text.len() >= TEXT_RECORD_LIMIT {
            let mut at = TEXT_RECORD_LIMIT;
            while !self.text.is_char_boundary(at) {
                at -= 1;
            }
            let rest = self.text.split_off(at);
            let full = std::mem::replace(&mut self.text, rest);
            self.line(&json!({ "text": full }))?;
        }
        Ok(())
    }

    fn flush_invalid(&mut self) -> Result<(), Failure> {
        if let Some(span) = self.invalid_span.take() {
            let hex: String = self.invalid.iter().map(|b| format!("{b:02x}")).collect();
            self.invalid.clear();
            let mut record = json!({ "invalid_utf8": hex });
            batch::add_span(&mut record, span);
            self.line(&record)?;
        }
        Ok(())
    }

    /// Prints the text and invalid bytes held back so far (only one of them is non-empty).
    fn flush_text(&mut self) -> Result<(), Failure> {
        self.flush_invalid()?;
        self.flush_plain_text()
    }

    fn flush_plain_text(&mut self) -> Result<(), Failure> {
        if !self.text.is_empty() {
            let text = std::mem::take(&mut self.text);
            self.line(&json!({ "text": text }))?;
        }
        Ok(())
    }

    fn line(&mut self, record: &Json) -> Result<(), Failure> {
        serde_json::to_writer(&mut self.out, record)
            .map_err(|e| Failure(format!("cannot write output: {e}")))?;
        self.out.write_all(b"\n").map_err(write_failure)
    }
}
