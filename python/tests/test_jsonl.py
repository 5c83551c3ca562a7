"""parse_jsonl gives, line for line, what `atfunc parse --jsonl` prints."""

import json

import pyarrow as pa
import pytest

import atfunc
from conftest import DEMO_TOOLS, jsonl_records


def cli_lines(cli, lines, *args):
    out = cli(["parse", "--jsonl", *args], ("\n".join(lines) + "\n").encode())
    return out.splitlines()


@pytest.mark.parametrize("with_tools", [False, True])
def test_equals_the_cli_line_for_line(cli, with_tools):
    lines = jsonl_records()
    args = ["--tools", DEMO_TOOLS] if with_tools else []
    tools = DEMO_TOOLS if with_tools else None
    out = atfunc.parse_jsonl(pa.array(lines), tools)
    assert isinstance(out, pa.StringArray)
    assert len(out) == len(lines)
    # A blank line gives None: the CLI prints nothing for it.
    blank = [i for i, line in enumerate(lines) if not line.strip()]
    assert [i for i, v in enumerate(out.to_pylist()) if v is None] == blank
    assert [v for v in out.to_pylist() if v is not None] == cli_lines(cli, lines, *args)


def test_line_numbers_count_from_first_line(cli):
    lines = ["", "not json", '{"id": 1}']
    out = atfunc.parse_jsonl(lines, first_line=41).to_pylist()
    assert out[0] is None
    assert json.loads(out[1])["line"] == 42
    assert json.loads(out[2]) == {"id": 1, "line": 43, "error": 'missing "completion"'}


def test_list_chunked_and_large_inputs_agree():
    lines = jsonl_records()
    plain = atfunc.parse_jsonl(pa.array(lines)).to_pylist()
    assert atfunc.parse_jsonl(lines).to_pylist() == plain
    large = atfunc.parse_jsonl(pa.array(lines, pa.large_string()))
    assert large.type == pa.large_string()
    assert large.to_pylist() == plain
    assert atfunc.parse_jsonl(pa.array([s.encode() for s in lines])).to_pylist() == plain
    chunked = pa.chunked_array([lines[:7], lines[7:8], [], lines[8:]])
    out = atfunc.parse_jsonl(chunked)
    assert isinstance(out, pa.ChunkedArray)
    assert [len(c) for c in out.chunks] == [7, 1, 0, len(lines) - 8]
    assert out.to_pylist() == plain


def test_nulls_in_are_nulls_out():
    out = atfunc.parse_jsonl(pa.array([None, '{"id": 1, "completion": ""}', None]))
    assert out.to_pylist() == [None, '{"id":1,"calls":[],"errors":[]}', None]


def test_a_record_s_own_tools_win_and_tools_objects_are_reused():
    tools = atfunc.Tools(DEMO_TOOLS)
    line = json.dumps({"id": 1, "completion": "@math.calculate_power(2, 3)"})
    out = json.loads(atfunc.parse_jsonl([line], tools)[0].as_py())
    assert out["calls"][0]["args"] == {"base": 2, "exponent": 3}
    own = json.dumps({"id": 2, "completion": "@math.calculate_power(2, 3)", "tools": []})
    out = json.loads(atfunc.parse_jsonl([own], tools)[0].as_py())
    assert out["calls"] == [] and "Unknown function" in out["errors"][0]["error"]


def test_wrong_inputs_say_what_is_expected():
    with pytest.raises(TypeError, match="wrap it in a list"):
        atfunc.parse_jsonl('{"id": 1}')
    with pytest.raises(TypeError, match="array of strings"):
        atfunc.parse_jsonl(pa.array([1, 2]))
    with pytest.raises(TypeError):
        atfunc.parse_jsonl([1, 2])


@pytest.mark.parametrize("work", [atfunc.parse_jsonl, atfunc.parse_arrow])
def test_any_number_of_threads_gives_the_same_answer(work):
    lines = pa.array(jsonl_records() * 20)
    every_core = work(lines).to_pylist()
    for threads in [1, 2, 3, 2]:
        assert work(lines, threads=threads).to_pylist() == every_core
    with pytest.raises(ValueError, match="at least 1"):
        work(lines, threads=0)


def test_random_records_equal_the_cli(cli):
    """Records put together at random from pieces of calls, prose and broken JSON."""
    import random

    from conftest import COMPLETIONS, TOOLS

    rng = random.Random(7)
    pieces = ['@a.b(', '"', "x", "ø", ")", " ", "@", "[[", "]]", " with_body ", "1,", "=",
              "'", "\\\\", "\n", "@weather.get(", "@math.power(", "🙂", "city=", "2", "{", "}"]
    lines = []
    for i in range(600):
        kind = rng.random()
        if kind < 0.05:
            lines.append(rng.choice(["", " ", "{", "[]", '"x"', '{"id": 1, "completion": null}']))
            continue
        completion = "".join(rng.choice(pieces) for _ in range(rng.randrange(30)))
        if rng.random() < 0.3:
            completion += rng.choice(COMPLETIONS)
        record = {"id": rng.choice([i, str(i), None, [i]]), "completion": completion}
        if rng.random() < 0.3:
            record["tools"] = rng.choice([TOOLS, TOOLS[:1], [], {"tools": TOOLS}])
        lines.append(json.dumps(record, ensure_ascii=rng.random() < 0.5))
    expected = cli_lines(cli, lines, "--tools", DEMO_TOOLS)
    out = atfunc.parse_jsonl(lines, DEMO_TOOLS).to_pylist()
    assert [line for line in out if line is not None] == expected
