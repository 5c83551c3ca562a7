//! `atfunc parse`: calls out of a model's output as JSON Lines, while it streams.

use super::output::write_failure;
use super::tools::ToolArgs;
use super::Failure;
use atfunc::batch::{RecordStream, TextRecords};
use atfunc::parse::Dialect;
use serde_json::Value as Json;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

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
    /// The call format to read: atfunc, hermes, llama3, mistral, pythonic, deepseek,
    /// qwen3_xml, harmony, or auto (any of them, atfunc's included: the first call read
    /// fixes the format of each completion; another format's marker in a sentence is prose,
    /// an @ after a word character is never a call).
    #[arg(long, value_name = "NAME", default_value_t = Dialect::Atfunc)]
    dialect: Dialect,
    /// The model output to read (default: standard input).
    file: Option<PathBuf>,
}

/// Bytes asked of the input per read; the parser is still fed `--chunk-size` at a time.
const READ_SIZE: usize = 64 * 1024;

pub(crate) fn run(args: ParseArgs) -> Result<ExitCode, Failure> {
    let catalog = if args.tools.is_empty() {
        None
    } else {
        // A tools file's functions are bound as declared; a config's as `exec` offers
        // them, the control functions included.
        Some(args.tools.offered(args.tools.config.is_some())?.catalog())
    };
    if args.jsonl {
        let limits = args.tools.limits.limits();
        return super::jsonl::run(catalog, &limits, args.dialect, args.file.as_deref());
    }
    let mut input = super::open_input(args.file.as_deref())?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut stream = RecordStream::new(catalog.map(Arc::new))
        .with_text(if args.text {
            TextRecords::Included
        } else {
            TextRecords::Omitted
        })
        .with_dialect(args.dialect);
    let size = usize::try_from(args.chunk_size).unwrap_or(usize::MAX);
    // Reads are large whatever the chunk size: one system call per byte costs far more
    // than parsing the byte. A read returns what a live stream holds so far, so nothing
    // waits for a block to fill.
    let mut buf = vec![0u8; size.max(READ_SIZE)];
    let mut records = Vec::new();
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Failure(format!("cannot read input: {e}"))),
        };
        for chunk in buf.get(..n).unwrap_or_default().chunks(size) {
            stream.feed(chunk, &mut records);
        }
        // Records go out once the bytes read so far are parsed, for readers of a live
        // stream: once per read, not once per record.
        if !records.is_empty() {
            write_records(&mut out, &mut records)?;
            out.flush().map_err(write_failure)?;
        }
    }
    stream.finish(&mut records);
    write_records(&mut out, &mut records)?;
    out.flush().map_err(write_failure)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes `records` as JSON lines and empties it.
fn write_records(out: &mut impl Write, records: &mut Vec<Json>) -> Result<(), Failure> {
    for record in records.drain(..) {
        serde_json::to_writer(&mut *out, &record)
            .map_err(|e| Failure(format!("cannot write output: {e}")))?;
        out.write_all(b"\n").map_err(write_failure)?;
    }
    Ok(())
}
