"""parse_arrow gives each text the calls and errors `atfunc parse --jsonl` finds in it."""

import json

import pyarrow as pa
import pytest

import atfunc
from conftest import COMPLETIONS, DEMO_TOOLS, TOOLS


def as_records(result):
    """A parse_arrow result back as the {"calls", "errors"} of a `parse --jsonl` line."""
    if result is None:
        return None
    calls = []
    for call in result["calls"]:
        record = {"name": call["name"]}
        if call["args"] is not None:
            record["args"] = json.loads(call["args"])
        else:
            record["positional"] = json.loads(call["positional"])
            record["named"] = json.loads(call["named"])
        record["body"] = call["body"]
        record["span"] = [call["span"]["start"], call["span"]["end"]]
        record["chars"] = [call["chars"]["start"], call["chars"]["end"]]
        calls.append(record)
    errors = [
        {
            "error": e["error"],
            "span": [e["span"]["start"], e["span"]["end"]],
            "chars": [e["chars"]["start"], e["chars"]["end"]],
            "raw": e["raw"],
        }
        for e in result["errors"]
    ]
    return {"calls": calls, "errors": errors}


@pytest.mark.parametrize("tools", [None, TOOLS])
def test_equals_the_cli(cli, tools):
    records = [json.dumps({"id": i, "completion": c}) for i, c in enumerate(COMPLETIONS)]
    out = cli(
        ["parse", "--jsonl", *(["--tools", DEMO_TOOLS] if tools else [])],
        ("\n".join(records) + "\n").encode(),
    )
    expected = [json.loads(line) for line in out.splitlines()]
    result = atfunc.parse_arrow(pa.array(COMPLETIONS), DEMO_TOOLS if tools else None)
    assert isinstance(result, pa.StructArray)
    assert len(result) == len(COMPLETIONS)
    for got, want in zip(result.to_pylist(), expected):
        assert as_records(got) == {"calls": want["calls"], "errors": want["errors"]}


def test_types_are_plain_enough_for_spark():
    result = atfunc.parse_arrow(["@a.b(1)"])
    call = result.type.field("calls").type.value_type
    assert call.field("args").type == pa.string()
    assert [(f.name, f.type) for f in call.field("span").type] == [
        ("start", pa.int64()), ("end", pa.int64())
    ]
    assert result.to_pylist()[0]["calls"][0]["positional"] == "[1]"


def test_nulls_in_are_nulls_out_and_chunks_are_kept():
    texts = pa.chunked_array([["@a.b(1)", None], [], [None, "x @c.d("]])
    result = atfunc.parse_arrow(texts)
    assert isinstance(result, pa.ChunkedArray)
    assert [len(c) for c in result.chunks] == [2, 0, 2]
    rows = result.to_pylist()
    assert rows[1] is None and rows[2] is None
    assert rows[0]["calls"][0]["name"] == "a.b"
    assert rows[3]["errors"][0]["raw"] == "@c.d("


def test_view_and_binary_inputs_agree():
    plain = atfunc.parse_arrow(COMPLETIONS).to_pylist()
    assert atfunc.parse_arrow(pa.array(COMPLETIONS, pa.string_view())).to_pylist() == plain
    binary = pa.array([c.encode() for c in COMPLETIONS], pa.large_binary())
    assert atfunc.parse_arrow(binary).to_pylist() == plain


def test_random_texts_equal_parse_jsonl():
    """parse_jsonl is checked against the CLI; parse_arrow must find the same."""
    import random

    rng = random.Random(5)
    pieces = ['@a.b(', '"', "x", "ø", ")", " ", "@", "[[", "]]", " with_body ", "1,", "=",
              "'", "\n", "@weather.get(", "@math.power(", "🙂", "city=", "2", "{", "}"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randrange(40))) for _ in range(500)]
    texts += COMPLETIONS
    for tools in [None, TOOLS]:
        lines = atfunc.parse_jsonl([json.dumps({"id": 0, "completion": t}) for t in texts], tools)
        results = atfunc.parse_arrow(texts, tools).to_pylist()
        for line, result in zip(lines.to_pylist(), results):
            want = json.loads(line)
            assert as_records(result) == {"calls": want["calls"], "errors": want["errors"]}
