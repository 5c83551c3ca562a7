"""`dialect=`: other models' call formats read by `parse`, `StreamParser`, `parse_jsonl`
and `parse_arrow`, with the records `atfunc parse --dialect` prints, whole and in any
pieces. The answers are BFCL ground truth rendered in each dialect, as the Rust tests
render them (crates/atfunc/tests/parse/dialects.rs)."""

import json
import random
from pathlib import Path

import pyarrow as pa
import pytest

import atfunc
from conftest import REPO
from test_arrow import as_records

DIALECTS = ["atfunc", "hermes", "llama3", "mistral", "pythonic", "deepseek", "qwen3_xml",
            "harmony"]
DATA = REPO / "tests" / "data" / "bfcl" / "possible_answer"
FILES = ["BFCL_v4_simple_python.json", "BFCL_v4_multiple.json", "BFCL_v4_parallel.json",
         "BFCL_v4_parallel_multiple.json"]
# Answers taken from each file.
PER_FILE = 2


def answers():
    """Ground-truth answers: a list of (name, args) calls each, the first accepted value of
    each argument ("" alone means optional: left out)."""
    out = []
    for file in FILES:
        lines = [line for line in (DATA / file).read_text(encoding="utf-8").splitlines()
                 if line.strip()]
        for line in lines[:PER_FILE]:
            calls = []
            for call in json.loads(line)["ground_truth"]:
                for name, params in call.items():
                    args = {}
                    for key, options in params.items():
                        value = next((v for v in options if v != ""), None)
                        if value is not None:
                            args[key] = value
                    calls.append((name, args))
            out.append(calls)
    return out


def py_literal(value):
    if value is None:
        return "None"
    if value is True:
        return "True"
    if value is False:
        return "False"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
        return f"'{escaped}'"
    if isinstance(value, list):
        return "[" + ", ".join(map(py_literal, value)) + "]"
    return "{" + ", ".join(f"{py_literal(k)}: {py_literal(v)}" for k, v in value.items()) + "}"


def compact(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def render(dialect: str, calls, variant: int) -> str:
    """One answer in `dialect`, prose before and after (but for pythonic, whose list has
    no marker of its own: a call only where the answer is the list); `variant` picks
    between a dialect's forms (hermes: a block a call or an array; mistral: an array or
    `[ARGS]`; deepseek: V3 or V3.1)."""
    if dialect == "atfunc":
        block = " ".join(
            f"@{name}(" + ", ".join(f"{k}={compact(v)}" for k, v in args.items()) + ")"
            for name, args in calls)
    elif dialect == "hermes" and variant % 2:
        items = ", ".join(compact({"name": n, "arguments": a}) for n, a in calls)
        block = f"<tool_call>\n[{items}]\n</tool_call>"
    elif dialect == "hermes":
        block = "\n".join(f"<tool_call>\n{compact({'name': n, 'arguments': a})}\n</tool_call>"
                          for n, a in calls)
    elif dialect == "llama3":
        block = "<|python_tag|>" + "; ".join(compact({"name": n, "parameters": a})
                                             for n, a in calls)
    elif dialect == "mistral" and variant % 2:
        block = "".join(f"[TOOL_CALLS]{n}[ARGS]{compact(a)}" for n, a in calls)
    elif dialect == "mistral":
        items = ", ".join(compact({"name": n, "arguments": a}) for n, a in calls)
        block = f"[TOOL_CALLS] [{items}]"
    elif dialect == "pythonic":
        items = ", ".join(
            f"{n}(" + ", ".join(f"{k}={py_literal(v)}" for k, v in a.items()) + ")"
            for n, a in calls)
        return f"[{items}]"
    elif dialect == "deepseek":
        if variant % 2:
            items = "\n".join(f"<｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{compact(a)}<｜tool▁call▁end｜>"
                              for n, a in calls)
        else:
            items = "\n".join(
                f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{n}\n```json\n{compact(a)}\n```"
                "<｜tool▁call▁end｜>" for n, a in calls)
        block = f"<｜tool▁calls▁begin｜>{items}<｜tool▁calls▁end｜>"
    elif dialect == "qwen3_xml":
        def param(k, v):
            raw = v if isinstance(v, str) else compact(v)
            return f"<parameter={k}>\n{raw}\n</parameter>\n"
        block = "\n".join(
            f"<tool_call>\n<function={n}>\n" + "".join(param(k, v) for k, v in a.items())
            + "</function>\n</tool_call>" for n, a in calls)
    elif dialect == "harmony":
        block = "".join(
            f"<|start|>assistant<|channel|>commentary to=functions.{n} <|constrain|>json"
            f"<|message|>{compact(a)}<|call|>" for n, a in calls)
    else:
        raise ValueError(dialect)
    return f"Let me look that up for you. Ærlig 😀\n{block}\nThat should do it."


CASES = [(dialect, i, render(dialect, calls, i), len(calls))
         for dialect in DIALECTS for i, calls in enumerate(answers())]


def cli_records(cli, text: str, *args):
    return [json.loads(line) for line in cli(["parse", *args], text.encode()).splitlines()]


def merged(records):
    """Adjacent text records joined."""
    out = []
    for record in records:
        if "text" in record and out and "text" in out[-1]:
            out[-1] = {"text": out[-1]["text"] + record["text"]}
        else:
            out.append(dict(record))
    return out


def pieces_of(data: bytes, rng: random.Random):
    """The ways a completion is fed: whole, in 1- and 3-byte pieces, in random ones."""
    yield [data]
    for size in (1, 3):
        yield [data[i:i + size] for i in range(0, len(data), size)]
    for _ in range(3):
        out, i = [], 0
        while i < len(data):
            n = rng.randrange(1, 12)
            out.append(data[i:i + n])
            i += n
        yield out


def stream(pieces, **options):
    parser = atfunc.StreamParser(**options)
    records = []
    for piece in pieces:
        records += parser.feed(piece)
    return records + parser.finish()


@pytest.mark.parametrize("dialect,index,text,calls", CASES,
                         ids=[f"{d}-{i}" for d, i, _, _ in CASES])
def test_every_dialect_equals_the_cli_whole_and_in_pieces(cli, dialect, index, text, calls):
    expected = cli_records(cli, text, "--text", "--dialect", dialect)
    whole = atfunc.parse(text, with_text=True, dialect=dialect)
    assert whole == expected
    assert len([r for r in whole if "name" in r]) == calls, whole
    assert not [r for r in whole if "error" in r], whole
    # `auto` finds the dialect from its first marker (atfunc is none of the others).
    if dialect != "atfunc":
        assert atfunc.parse(text, with_text=True, dialect="auto") == whole
    assert atfunc.parse(text, dialect=dialect) == [r for r in whole if "text" not in r]
    rng = random.Random(index)
    for pieces in pieces_of(text.encode(), rng):
        sizes = [len(p) for p in pieces][:8]
        got = stream(pieces, with_text=True, dialect=dialect, text_release="gap")
        assert got == whole, (dialect, sizes)
        early = stream(pieces, with_text=True, dialect=dialect)
        assert merged(early) == merged(whole), (dialect, sizes)
        assert stream(pieces, dialect=dialect) == [r for r in whole if "text" not in r]


def test_the_default_dialect_is_atfunc():
    text = render("hermes", answers()[0], 0)
    assert atfunc.parse(text) == []
    assert atfunc.parse(text, dialect="atfunc") == []
    assert atfunc.parse(text, dialect="HERMES")[0]["name"] == answers()[0][0][0]


def test_an_unknown_dialect_is_a_value_error_that_lists_the_names():
    calls = [
        lambda: atfunc.parse("x", dialect="hermez"),
        lambda: atfunc.StreamParser(dialect="hermez"),
        lambda: atfunc.parse_jsonl(['{"completion": "x"}'], dialect="hermez"),
        lambda: atfunc.parse_arrow(["x"], dialect="hermez"),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="unknown dialect `hermez`") as raised:
            call()
        for name in DIALECTS + ["auto"]:
            assert name in str(raised.value)


@pytest.mark.parametrize("dialect", DIALECTS[1:] + ["auto"])
def test_jsonl_and_arrow_read_the_dialect_as_the_cli(cli, dialect):
    texts = [text for d, _, text, _ in CASES if d == dialect or dialect == "auto"]
    lines = [json.dumps({"id": i, "completion": t}) for i, t in enumerate(texts)]
    out = cli(["parse", "--jsonl", "--dialect", dialect], ("\n".join(lines) + "\n").encode())
    expected = out.splitlines()
    got = atfunc.parse_jsonl(pa.array(lines), dialect=dialect).to_pylist()
    assert got == expected
    assert any(json.loads(line)["calls"] for line in expected)
    found = atfunc.parse_arrow(pa.array(texts), dialect=dialect, threads=2).to_pylist()
    for result, line in zip(found, expected):
        want = json.loads(line)
        assert as_records(result) == {"calls": want["calls"], "errors": want["errors"]}


def test_a_dialect_binds_against_tools(cli):
    tools = REPO / "tests" / "data" / "reference_tools.json"
    text = ("Sure <tool_call>\n{\"name\": \"weather.get_current_weather\", \"arguments\": "
            "{\"location\": \"Oslo\"}}\n</tool_call> and <tool_call>{\"name\": \"no.such\", "
            "\"arguments\": {}}</tool_call>")
    expected = cli_records(cli, text, "--text", "--tools", tools, "--dialect", "hermes")
    assert atfunc.parse(text, tools, with_text=True, dialect="hermes") == expected
    assert expected[1]["args"] == {"location": "Oslo"}
    assert expected[3]["raw"].startswith("<tool_call>")
    data = text.encode()
    for pieces in pieces_of(data, random.Random(1)):
        assert stream(pieces, tools=tools, with_text=True, dialect="hermes",
                      text_release="gap") == expected
