"""The splits both pipelines read: every byte in exactly one split, every line numbered as
the file numbers it, whatever the split size."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "examples" / "pipelines"))

import jsonl_splits  # noqa: E402

# Blank lines, a line of spaces, CRLF, characters of two to four bytes, no final newline.
TEXT = (
    '{"id": 1, "completion": "a"}\n'
    "\n"
    "   \n"
    '{"id": "é", "completion": "Zürich 東京 😀"}\r\n'
    "not json\n"
    "\n"
    '{"id": 3, "completion": "@a.b(1)"}'
)


def lines_of(path: Path, split_bytes: int) -> list[tuple[int, str]]:
    splits = jsonl_splits.plan_splits(str(path), split_bytes)
    if not splits:
        assert path.stat().st_size == 0
        return []
    assert splits[0].start == 0 and splits[-1].end == path.stat().st_size
    for before, after in zip(splits, splits[1:]):
        assert before.end == after.start
    found = []
    for split in splits:
        table = jsonl_splits.read_split(split)
        found.extend(zip(table.column("line").to_pylist(), table.column("text").to_pylist()))
    return found


@pytest.mark.parametrize("text", [TEXT, TEXT + "\n", "\n\n\n", "one line", ""])
def test_every_split_size_gives_the_lines_of_the_file_numbered_from_one(tmp_path, text):
    path = tmp_path / "records.jsonl"
    path.write_bytes(text.encode("utf-8"))
    expected = list(enumerate(text.encode("utf-8").splitlines(keepends=True), start=1))
    for split_bytes in range(1, len(text.encode("utf-8")) + 2):
        assert lines_of(path, split_bytes) == expected, f"split_bytes={split_bytes}"


def test_splits_are_about_the_size_asked_and_end_at_a_line_end(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_bytes(b"".join(b"%05d\n" % i for i in range(10_000)))
    splits = jsonl_splits.plan_splits(str(path), 1000)
    assert len(splits) == 60
    assert all(split.end - split.start == 1002 for split in splits[:-1])
    assert [split.first_line for split in splits[:3]] == [1, 168, 335]


def test_a_line_that_is_not_utf8_is_read_as_it_is(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_bytes(b'{"id": 1}\n{"id": "\xff"}\n')
    [split] = jsonl_splits.plan_splits(str(path), 1 << 20)
    table = jsonl_splits.read_split(split)
    assert table.column("text").to_pylist() == [b'{"id": 1}\n', b'{"id": "\xff"}\n']
    assert table.column("line").to_pylist() == [1, 2]


def test_output_bytes_are_the_lines_each_with_a_newline():
    values = pa.array(["x", '{"id":"é"}', "z"])[1:]
    assert jsonl_splits.output_bytes(values).to_pybytes() == '{"id":"é"}\nz\n'.encode("utf-8")
    assert jsonl_splits.output_bytes(pa.array([], pa.string())).to_pybytes() == b""


def test_parse_batch_numbers_lines_from_the_table_and_drops_blank_ones():
    table = pa.table({
        "line": pa.array([41, 42, 43], pa.int64()),
        "text": pa.array([b'{"id": 1, "completion": "@a.b(1)"}\n', b"\n", b"nope\n"]),
    })
    # A batch smaller than the table: the second call starts at line 43.
    jsonl_splits.PARSE_BATCH_LINES, saved = 2, jsonl_splits.PARSE_BATCH_LINES
    try:
        out = jsonl_splits.parse_batch(table).column("value").to_pylist()
    finally:
        jsonl_splits.PARSE_BATCH_LINES = saved
    assert len(out) == 2 and out[0].startswith('{"id":1,"calls":[{"name":"a.b"')
    assert out[1] == '{"id":null,"line":43,"error":"not valid JSON: expected ident at column 2"}'


def test_parse_batch_refuses_lines_that_do_not_follow_each_other():
    table = pa.table({"line": pa.array([1, 3], pa.int64()), "text": pa.array([b"{}", b"{}"])})
    with pytest.raises(ValueError, match="must follow each other"):
        jsonl_splits.parse_batch(table)
