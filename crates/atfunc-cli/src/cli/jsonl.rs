//! `atfunc parse --jsonl`: many completions at once, one JSON line each, on every core.
//!
//! Three stages run side by side: a thread reads batches of lines, rayon's pool turns each
//! batch's lines into output lines, a thread writes them in input order. Memory stays
//! bounded however long the input is, and however many calls a line holds:
//!
//! - the reader sends at most two batches ahead;
//! - a worker writes the output of a run of consecutive lines as their calls are parsed
//!   ([`Batch::write_line`]) into a [`Run`]. While every line before the run is written,
//!   the run sends what it has on to the writer every [`SPILL`] bytes, so a line of a
//!   million calls streams through as plain `atfunc parse` does; otherwise it holds its
//!   output, as bytes, and sends it as a whole once a line ends past [`SPILL`] bytes or
//!   the worker's share of the batch is done;
//! - the writer holds the runs that came before their turn (bytes) until those before
//!   them come; the channel to it takes at most [`PIECES`] messages.
//!
//! So what waits is bytes of output: a batch's, and the next one's while the writer is
//! still at it. Sending runs rather than lines keeps the messages (and the wake-ups of
//! the writer) few: a message per line cost 60 % more CPU time on a batch of small lines.

use super::Failure;
use atfunc::batch::Batch;
use atfunc::Catalog;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::time::Instant;

/// A batch ends after this many lines...
const BATCH_LINES: usize = 2048;
/// ...or once its lines hold this many bytes (a single longer line is still one batch).
const BATCH_BYTES: usize = 4 << 20;
/// Batches waiting between reading and parsing.
const QUEUE: usize = 2;
/// A run's output goes to the writer in pieces of about this many bytes: few messages,
/// little held per message.
const SPILL: usize = 64 << 10;
/// Messages waiting for the writer, each about [`SPILL`] bytes (more for a long line done
/// before its turn).
const PIECES: usize = 64;

/// Lines read from the input, the first one numbered `first` (1-based).
struct Lines {
    first: u64,
    lines: Vec<Vec<u8>>,
    bytes: u64,
}

/// Runs `parse --jsonl`; records without their own `tools` bind to `catalog` (from
/// `--tools` or `--config`), or stay unbound without one.
pub(crate) fn run(
    catalog: Option<Catalog>,
    limits: &atfunc::interface::LoadLimits,
    dialect: atfunc::parse::Dialect,
    file: Option<&Path>,
) -> Result<ExitCode, Failure> {
    let (input, total): (Box<dyn Read + Send>, Option<u64>) = match file {
        Some(path) => {
            let file = std::fs::File::open(path)
                .map_err(|e| Failure(format!("cannot read input {}: {e}", path.display())))?;
            let size = file.metadata().ok().map(|m| m.len());
            (Box::new(file), size)
        }
        None => (Box::new(std::io::stdin()), None),
    };
    let batch = Batch::new(catalog)
        .with_load_limits(*limits)
        .with_dialect(dialect);
    let progress = progress_bar(total);
    let started = Instant::now();

    let (lines_tx, lines_rx) = sync_channel(QUEUE);
    let reader = std::thread::spawn(move || read_batches(input, &lines_tx));
    let (out_tx, out_rx) = sync_channel::<Piece>(PIECES);
    let due = Arc::new(AtomicU64::new(1));
    let writer = {
        let due = Arc::clone(&due);
        std::thread::spawn(move || write_in_order(&out_rx, &due))
    };

    let (records, bytes) = process(&batch, &lines_rx, &out_tx, &due, &progress);
    // Closing the channels ends both threads: the reader at its next send, the writer once
    // it has written what is queued.
    drop(lines_rx);
    drop(out_tx);
    let written = writer
        .join()
        .unwrap_or_else(|_| Err(Failure("the output thread failed".to_owned())));
    let read = reader
        .join()
        .unwrap_or_else(|_| Err(Failure("the input thread failed".to_owned())));
    progress.finish_and_clear();
    written?;
    read?;

    let seconds = started.elapsed().as_secs_f64().max(1e-9);
    eprintln!(
        "{records} records, {:.0} records/s, {:.1} MB/s",
        records as f64 / seconds,
        bytes as f64 / 1e6 / seconds
    );
    Ok(ExitCode::SUCCESS)
}

/// What the workers send the writer. A run is lines `first..end` of the input, one after
/// the other; its bytes are their output lines, newlines included.
enum Piece {
    /// More of the run from line `first`. Sent only while the run is due (every line
    /// before `first` written), so it is written at once.
    Part { first: u64, bytes: Vec<u8> },
    /// The rest of the run `first..end`, and its end.
    Done {
        first: u64,
        end: u64,
        bytes: Vec<u8>,
    },
    /// A batch is done: flushed, so a reader of a live pipe sees it at once.
    Flush,
}

/// Turns every batch read into output lines sent to the writer; returns the records and
/// bytes done. Stops early when the writer has gone (it failed; its error is reported by
/// the caller).
fn process(
    batch: &Batch,
    lines: &Receiver<Lines>,
    out: &SyncSender<Piece>,
    due: &AtomicU64,
    progress: &ProgressBar,
) -> (u64, u64) {
    let (mut records, mut bytes) = (0u64, 0u64);
    for read in lines {
        // Each worker takes consecutive lines; each share is one run or more.
        let done = read
            .lines
            .par_iter()
            .enumerate()
            .try_fold(
                || Run::new(out, due),
                |mut run, (i, line)| {
                    run.line(batch, read.first + i as u64, line)?;
                    Ok(run)
                },
            )
            .map(|run| run.and_then(Run::finish))
            .try_reduce(|| 0, |a, b| Ok(a + b));
        let Ok(done): io::Result<u64> = done else {
            break;
        };
        records += done;
        bytes += read.bytes;
        if out.send(Piece::Flush).is_err() {
            break;
        }
        progress.set_position(bytes);
        progress.set_message(format!("{records} records"));
    }
    (records, bytes)
}

/// Output lines of consecutive input lines, as a worker writes them.
struct Run<'a> {
    /// The run is lines `first..end`; empty (`first == end`) before its first line.
    first: u64,
    end: u64,
    /// Output not sent yet: below [`SPILL`] bytes (but for the line being written) while
    /// the run is due; all of it while it waits for the lines before it.
    held: Vec<u8>,
    /// Lines with an output line (blank lines have none), sent or not.
    records: u64,
    out: &'a SyncSender<Piece>,
    /// The first line the writer has not written: every line before it is written.
    due: &'a AtomicU64,
}

impl<'a> Run<'a> {
    fn new(out: &'a SyncSender<Piece>, due: &'a AtomicU64) -> Run<'a> {
        Run {
            first: 0,
            end: 0,
            held: Vec::new(),
            records: 0,
            out,
            due,
        }
    }

    /// Writes the output of input line `number`, the one after the run's last.
    fn line(&mut self, batch: &Batch, number: u64, line: &[u8]) -> io::Result<()> {
        if self.first == self.end {
            self.first = number;
        }
        debug_assert_eq!(
            self.end.max(self.first),
            number,
            "a run is consecutive lines"
        );
        if batch.write_line(number, line, self)? {
            self.held.push(b'\n');
            self.records += 1;
        }
        self.end = number + 1;
        if self.held.len() >= SPILL {
            // Ends the run: what it holds can be written as soon as its turn comes, and
            // the next line starts a run that may stream when due.
            self.send_done()?;
        }
        Ok(())
    }

    /// The worker's share is done: sends what is left; returns the records written.
    fn finish(mut self) -> io::Result<u64> {
        self.send_done()?;
        Ok(self.records)
    }

    fn send_done(&mut self) -> io::Result<()> {
        if self.first == self.end {
            return Ok(());
        }
        let piece = Piece::Done {
            first: self.first,
            end: self.end,
            bytes: std::mem::take(&mut self.held),
        };
        self.first = self.end;
        send(self.out, piece)
    }
}

impl Write for Run<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.held.extend_from_slice(bytes);
        // The writer moves `due` on only once it wrote every line before the run: a
        // part sent now reaches it after their output, so it is written in its place.
        if self.held.len() >= SPILL && self.due.load(Ordering::Acquire) == self.first {
            let piece = Piece::Part {
                first: self.first,
                bytes: std::mem::replace(&mut self.held, Vec::with_capacity(SPILL * 2)),
            };
            send(self.out, piece)?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Sends `piece` to the writer; an error once it has gone (it failed, and says why).
fn send(out: &SyncSender<Piece>, piece: Piece) -> io::Result<()> {
    out.send(piece)
        .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the output thread stopped"))
}

fn read_batches(input: Box<dyn Read + Send>, out: &SyncSender<Lines>) -> Result<(), Failure> {
    let mut input = BufReader::with_capacity(1 << 16, input);
    let mut number = 1u64;
    loop {
        let mut batch = Lines {
            first: number,
            lines: Vec::with_capacity(BATCH_LINES),
            bytes: 0,
        };
        let mut held = 0usize;
        while batch.lines.len() < BATCH_LINES && held < BATCH_BYTES {
            let mut line = Vec::new();
            let n = input
                .read_until(b'\n', &mut line)
                .map_err(|e| Failure(format!("cannot read input: {e}")))?;
            if n == 0 {
                break;
            }
            held += n;
            batch.lines.push(line);
        }
        if batch.lines.is_empty() {
            return Ok(());
        }
        number += batch.lines.len() as u64;
        batch.bytes = held as u64;
        let full = batch.lines.len() == BATCH_LINES || held >= BATCH_BYTES;
        if out.send(batch).is_err() || !full {
            return Ok(());
        }
    }
}

/// Writes the runs in input order, from line 1: a run done before its turn waits (as
/// bytes) for those before it. Moves `due` on as runs are written.
fn write_in_order(pieces: &Receiver<Piece>, due: &AtomicU64) -> Result<(), Failure> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let fail = |e: std::io::Error| Failure(format!("cannot write output: {e}"));
    let mut next = 1u64;
    // Runs by first line: (end, bytes).
    let mut waiting: BTreeMap<u64, (u64, Vec<u8>)> = BTreeMap::new();
    for piece in pieces {
        match piece {
            Piece::Part { first, bytes } => {
                if first != next {
                    // `Run` sends a part only once `due` says the run is next.
                    return Err(Failure(format!(
                        "output from line {first} came while line {next} was due"
                    )));
                }
                out.write_all(&bytes).map_err(fail)?;
            }
            Piece::Done { first, end, bytes } => {
                if first != next {
                    waiting.insert(first, (end, bytes));
                    continue;
                }
                let mut run = Some((end, bytes));
                while let Some((end, bytes)) = run {
                    out.write_all(&bytes).map_err(fail)?;
                    next = end;
                    run = waiting.remove(&next);
                }
                due.store(next, Ordering::Release);
            }
            // A reader of a live pipe sees each batch as soon as it is done.
            Piece::Flush => out.flush().map_err(fail)?,
        }
    }
    out.flush().map_err(fail)
}

/// A bar over the input's bytes when its size is known, a spinner otherwise; hidden unless
/// stderr is a terminal, so logs and pipes get only the closing summary.
fn progress_bar(total: Option<u64>) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    match total {
        Some(len) => {
            let bar = ProgressBar::new(len);
            if let Ok(style) = ProgressStyle::with_template(
                "{bar:40} {bytes}/{total_bytes} {msg} ({bytes_per_sec}, {eta})",
            ) {
                bar.set_style(style);
            }
            bar
        }
        None => {
            let bar = ProgressBar::new_spinner();
            if let Ok(style) =
                ProgressStyle::with_template("{spinner} {bytes} read, {msg} ({bytes_per_sec})")
            {
                bar.set_style(style);
            }
            bar.enable_steady_tick(std::time::Duration::from_millis(100));
            bar
        }
    }
}
