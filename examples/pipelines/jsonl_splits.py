"""A JSON Lines file cut into numbered splits, and atfunc's step on one Arrow batch of it.

Both pipelines (`ray_parse.py`, `spark_parse.py`) are built from three pieces here:

1. `plan_splits(path, ...)` runs once, on the driver. It reads the file once for line ends
   only (no JSON is parsed) and cuts it into byte ranges that end just after a newline,
   noting the number of each range's first line.
2. `read_split(split)` runs on a worker: it reads its byte range and returns an Arrow table
   of `line` (the line's number in the file) and `text` (the line as bytes, its newline
   kept), the text column built over the bytes as read, without a copy per line.
3. `parse_batch(table, tools)` runs on a worker: `atfunc.parse_jsonl` over the `text`
   column, `PARSE_BATCH_LINES` at a time, each call told the number of its first line.

Why numbered splits rather than an engine's own text reader: `atfunc parse --jsonl` answers
a line that is not a processable record with `{"id", "line", "error"}`, `line` counting from
the first line of the file, blank lines included. A record must come out the same whichever
worker parsed it, so every worker has to know where its lines sit in the file; engines'
text readers hand out lines without that. A split is also the unit of parallelism: each is
one task, read and parsed where it runs, its memory bounded by its size.

Lines travel as bytes, not strings, so a line that is not UTF-8 reaches atfunc as it is and
gets the CLI's answer to it. Paths go through `pyarrow.fs`, so a path may be local or a URI
(`s3://bucket/records.jsonl`) that every node can read.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs

# A split holds at least this much (unless the file is smaller)...
MIN_SPLIT_BYTES = 256 << 10
# ...and at most about this much: a worker holds one split's bytes and output at a time.
MAX_SPLIT_BYTES = 64 << 20
# The driver scans for line ends in reads of this size.
SCAN_BYTES = 8 << 20
# `parse_jsonl` gets this many lines at a time: enough that the cost of a call vanishes, few
# enough that what one call holds stays a few MB.
PARSE_BATCH_LINES = 4096

# The environment of the engines' workers. `parse_jsonl` spreads a call over every core by
# default; under an engine that already runs one task per core, that would put every core's
# threads on every core, so each task keeps to its own.
WORKER_ENV = {"RAYON_NUM_THREADS": "1"}


@dataclasses.dataclass(frozen=True)
class Split:
    """Bytes `[start, end)` of the file at `path`; its first line is line `first_line`."""

    path: str
    start: int
    end: int
    first_line: int


def _filesystem(path: str) -> tuple[pyarrow.fs.FileSystem, str]:
    try:
        return pyarrow.fs.FileSystem.from_uri(path)
    except (pa.ArrowInvalid, ValueError):
        # A plain relative path is no URI.
        return pyarrow.fs.LocalFileSystem(), str(path)


def split_bytes_for(size: int, workers: int) -> int:
    """The split size for a file of `size` bytes on `workers` workers: four splits a worker,
    so a slow one does not hold the others up, within the bounds above."""
    wanted = -(-size // max(1, 4 * workers))
    return max(MIN_SPLIT_BYTES, min(MAX_SPLIT_BYTES, wanted))


def plan_splits(path: str, split_bytes: int) -> list[Split]:
    """Cuts the file at `path` into splits of about `split_bytes` bytes, each ending just
    after a newline (or at the end of the file)."""
    if split_bytes < 1:
        raise ValueError(f"split_bytes must be at least 1, got {split_bytes}")
    filesystem, name = _filesystem(path)
    splits = []
    start, first_line = 0, 1
    # Newlines seen since `start`; `pos` is the file offset of the chunk being scanned.
    ended, pos = 0, 0
    with filesystem.open_input_stream(name) as stream:
        while chunk := stream.read(SCAN_BYTES):
            at = 0
            while True:
                # The split may end at the first newline at or past this index of the chunk.
                want = max(start + split_bytes - 1 - pos, at)
                newline = chunk.find(b"\n", want) if want < len(chunk) else -1
                if newline < 0:
                    ended += chunk.count(b"\n", at)
                    break
                ended += chunk.count(b"\n", at, newline + 1)
                end = pos + newline + 1
                splits.append(Split(path, start, end, first_line))
                start, first_line, ended, at = end, first_line + ended, 0, newline + 1
            pos += len(chunk)
    if pos > start:
        splits.append(Split(path, start, pos, first_line))
    return splits


def read_split(split: Split) -> pa.Table:
    """The lines of `split` as a table of `line` (int64, the number in the file) and `text`
    (binary, each line with its newline, as `atfunc parse --jsonl` reads it)."""
    filesystem, name = _filesystem(split.path)
    with filesystem.open_input_file(name) as file:
        data = file.read_at(split.end - split.start, split.start)
    if len(data) != split.end - split.start:
        raise ValueError(
            f"{split.path}: expected {split.end - split.start} bytes at {split.start}, "
            f"read {len(data)}: did the file change after the splits were planned?"
        )
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == ord("\n")) + 1
    if len(data) and (not len(ends) or ends[-1] != len(data)):
        # The last line of a file may have no newline; it is a line all the same.
        ends = np.append(ends, len(data))
    # Offsets of 32 bits: a split is far below 2 GiB (MAX_SPLIT_BYTES).
    offsets = np.concatenate([[0], ends]).astype(np.int32)
    text = pa.Array.from_buffers(
        pa.binary(), len(ends), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    line = pa.array(np.arange(split.first_line, split.first_line + len(ends), dtype=np.int64))
    return pa.table({"line": line, "text": text})


@functools.lru_cache(maxsize=4)
def loaded_tools(text: str):
    """The `atfunc.Tools` of a tools file's text, loaded once per worker process, not once
    per split: every split a worker parses shares it, with its cache of the tool sets that
    records bring of their own."""
    import atfunc

    return atfunc.Tools(text)


def parse_batch(table: pa.Table, tools=None, dialect: str = "atfunc") -> pa.Table:
    """The output lines for a table of `line` and `text` (as `read_split` gives it), as a
    one-column table `value`: one line per record, exactly as `atfunc parse --jsonl` prints
    it for the same file (blank lines give none). `tools`: the `--tools`, as the text of a
    tools file or an `atfunc.Tools`, or None. `dialect`: the `--dialect`, the call format
    the completions are written in."""
    import atfunc

    tools = loaded_tools(tools) if isinstance(tools, str) else tools
    pieces = []
    for start in range(0, table.num_rows, PARSE_BATCH_LINES):
        piece = table.slice(start, PARSE_BATCH_LINES)
        # The lines of a split are consecutive: the first one's number gives the others'.
        first_line = piece.column("line")[0].as_py()
        if piece.column("line")[-1].as_py() - first_line != piece.num_rows - 1:
            raise ValueError(
                f"the lines of a batch must follow each other (a split's, in order); lines "
                f"{first_line} to {piece.column('line')[-1].as_py()} are {piece.num_rows}"
            )
        out = atfunc.parse_jsonl(piece.column("text").combine_chunks(), tools,
                                 first_line=first_line, dialect=dialect)
        # A blank line gives None: the CLI prints nothing for it.
        pieces.append(out.drop_null())
    return pa.table({"value": pa.concat_arrays(pieces) if pieces else pa.array([], pa.string())})


def output_bytes(values: pa.Array) -> pa.Buffer:
    """The lines of `values` (no nulls), each followed by a newline, as one buffer."""
    if len(values) == 0:
        return pa.py_buffer(b"")
    # Each value with a newline after it, in one new array whose data is the whole text.
    joined = pc.binary_join_element_wise(values, "", "\n")
    offsets = np.frombuffer(joined.buffers()[1], dtype=np.int32)
    first, last = offsets[joined.offset], offsets[joined.offset + len(joined)]
    return joined.buffers()[2][first:last]
