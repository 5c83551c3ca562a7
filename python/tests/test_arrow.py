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


def test_each_row_may_bring_its_own_tools():
    """`row_tools` is parse --jsonl's per-record `tools`: a row's own set wins, None keeps
    `tools`, and a set that does not load is that row's `tools_error`."""
    texts = ['@weather.get("Oslo")', '@math.power(2, 3)', "@a.b(1)", "@a.b(1)"]
    own = [None, json.dumps(TOOLS[1:]), "[{\"name\": \"a b\"}]", None]
    result = atfunc.parse_arrow(pa.array(texts), TOOLS[:1], row_tools=pa.array(own))
    rows = result.to_pylist()
    records = [
        json.dumps({"id": i, "completion": t, **({"tools": json.loads(o)} if o else {})})
        for i, (t, o) in enumerate(zip(texts, own))
    ]
    lines = [json.loads(line) for line in atfunc.parse_jsonl(records, TOOLS[:1]).to_pylist()]
    for row, line in zip(rows, lines):
        if "error" in line:
            assert row["tools_error"] == line["error"] and row["calls"] == []
        else:
            assert row["tools_error"] is None
            assert as_records(row) == {"calls": line["calls"], "errors": line["errors"]}
    assert [r["calls"][0]["name"] for r in rows[:2]] == ["weather.get", "math.power"]
    assert rows[2]["tools_error"].startswith('invalid "tools"')
    assert rows[3]["errors"][0]["error"].startswith("Unknown function")
    # Without row_tools the answer has no tools_error field, as before.
    assert "tools_error" not in atfunc.parse_arrow(texts, TOOLS).type.names
    with pytest.raises(ValueError, match="row_tools has 1 element"):
        atfunc.parse_arrow(texts, row_tools=[None])


def test_args_as_structs_typed_from_the_tools():
    texts = ['@weather.get("Oslo", days=3, unit="c")', '@math.power(2, 0.5)', None, "no call"]
    result = atfunc.parse_arrow(texts, TOOLS, args="struct")
    args = result.type.field("calls").type.value_type.field("args").type
    assert [(f.name, f.type) for f in args] == [
        ("city", pa.string()), ("unit", pa.string()), ("days", pa.int64()),
        ("base", pa.float64()), ("exponent", pa.float64()),
    ]
    rows = result.to_pylist()
    assert rows[0]["calls"][0]["args"] == {
        "city": "Oslo", "unit": "c", "days": 3, "base": None, "exponent": None}
    assert rows[1]["calls"][0]["args"] == {
        "city": None, "unit": None, "days": None, "base": 2.0, "exponent": 0.5}
    assert rows[2] is None and rows[3]["calls"] == []
    # The default stays JSON text.
    assert json.loads(atfunc.parse_arrow(texts, TOOLS).to_pylist()[0]["calls"][0]["args"]) == {
        "city": "Oslo", "unit": "c", "days": 3}
    with pytest.raises(ValueError, match="needs tools"):
        atfunc.parse_arrow(texts, args="struct")
    with pytest.raises(ValueError, match="unknown args 'dict'"):
        atfunc.parse_arrow(texts, TOOLS, args="dict")


def test_args_as_structs_over_row_tools_agree_on_one_type():
    """A parameter whose type differs between tool sets is JSON text in every row."""
    a = [{"name": "f", "parameters": {"type": "object", "properties": {
        "x": {"type": "integer"}, "o": {"type": "object"}}}}]
    b = [{"name": "f", "parameters": {"type": "object", "properties": {
        "x": {"type": "string"}}}}]
    result = atfunc.parse_arrow(
        ['@f(1, {"k": [1]})', '@f("one")'], row_tools=[json.dumps(a), json.dumps(b)],
        args="struct")
    rows = result.to_pylist()
    assert [c["args"] for r in rows for c in r["calls"]] == [
        {"x": "1", "o": '{"k":[1]}'}, {"x": '"one"', "o": None}]
