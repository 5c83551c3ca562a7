//! `atfunc parse --jsonl`: many completions at once, one JSON line each, on every core.
//!
//! Three stages run side by side: a thread reads batches of lines, rayon's pool turns each
//! batch into output lines, a thread writes them. The channels between the stages hold at
//! most two batches each, so memory stays bounded however long the input is.

use super::Failure;
use atfunc::batch::Batch;
use atfunc::Catalog;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::time::Instant;

/// A batch ends after this many lines...
const BATCH_LINES: usize = 2048;
/// ...or once its lines hold this many bytes (a single longer line is still one batch).
const BATCH_BYTES: usize = 4 << 20;
/// Batches waiting between two stages.
const QUEUE: usize = 2;

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
    let (out_tx, out_rx) = sync_channel::<Vec<String>>(QUEUE);
    let writer = std::thread::spawn(move || write_batches(&out_rx));

    let (records, bytes) = process(&batch, &lines_rx, &out_tx, &progress);
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

/// Turns every batch read into output lines, in order; returns the records and bytes done.
/// Stops early when the writer has gone (it failed; its error is reported by the caller).
fn process(
    batch: &Batch,
    lines: &Receiver<Lines>,
    out: &SyncSender<Vec<String>>,
    progress: &ProgressBar,
) -> (u64, u64) {
    let (mut records, mut bytes) = (0u64, 0u64);
    for read in lines {
        let output = batch.process_lines(read.first, &read.lines);
        records += output.len() as u64;
        bytes += read.bytes;
        if out.send(output).is_err() {
            break;
        }
        progress.set_position(bytes);
        progress.set_message(format!("{records} records"));
    }
    (records, bytes)
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

fn write_batches(batches: &Receiver<Vec<String>>) -> Result<(), Failure> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let fail = |e: std::io::Error| Failure(format!("cannot write output: {e}"));
    for batch in batches {
        for line in batch {
            out.write_all(line.as_bytes()).map_err(fail)?;
            out.write_all(b"\n").map_err(fail)?;
        }
        // A reader of a live pipe sees each batch as soon as it is done.
        out.flush().map_err(fail)?;
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
