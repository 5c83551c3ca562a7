"""Shared fixtures: the repository, the `atfunc` command line the package must agree with,
and a corpus of completions that covers every kind of record."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Under CI a skipped test fails (tests/pytest_ci.py).
sys.path.insert(0, str(REPO / "tests"))
from pytest_ci import pytest_runtest_makereport  # noqa: E402,F401
DEMO_TOOLS = REPO / "examples" / "demo" / "tools.json"


@pytest.fixture(scope="session")
def cli():
    """A function running the `atfunc` binary: `ATFUNC_BIN`, or the one `cargo test` built,
    or one built now."""
    binary = os.environ.get("ATFUNC_BIN")
    if not binary:
        built = REPO / "target" / "debug" / "atfunc"
        if not built.exists():
            subprocess.run(
                ["cargo", "build", "--quiet", "-p", "atfunc-cli", "--bin", "atfunc"],
                cwd=REPO,
                check=True,
            )
        binary = str(built)

    def run(args, stdin: bytes = b"") -> str:
        done = subprocess.run(
            [binary, *map(str, args)], input=stdin, capture_output=True, check=True
        )
        return done.stdout.decode("utf-8")

    return run


TOOLS = [
    {
        "name": "weather.get",
        "description": "Current weather",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["c", "f"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 10},
            },
            "required": ["city"],
        },
    },
    {
        "type": "function",
        "function": {
            "name": "math.power",
            "parameters": {
                "type": "object",
                "properties": {"base": {"type": "number"}, "exponent": {"type": "number"}},
                "required": ["base", "exponent"],
            },
        },
    },
]

# Every kind of span: bound and refused calls, unbound ones, malformed and unterminated
# calls, bodies, non-ASCII text before and inside calls, a long refused call whose `raw` is
# cut, prose with `@` that is no call.
COMPLETIONS = [
    "",
    "no calls here, mail me at bob@example.org",
    'Sure: @weather.get("Oslo", unit="c")',
    "@Weather.Get(city: 'Bergen', days=\"3\") then @math.power(2, 10)",
    "@weather.get() and @weather.get(\"x\", days=99) and @nope.nothing(1)",
    "broken @weather.get(\"Oslo\" unit=c) and @math.power(1,",
    "Ærlig talt: @weather.get(\"Tromsø\", unit=\"f\") – ferdig ✓",
    "@api.post(1) with_body [[ {\"a\": [1, 2, {\"b\": null}]} ]] trailing",
    "@weather.get(\"" + "å" * 150 + "\", unit=\"kelvin\")",
    "@math.power(base=1.5e3, exponent=-2) @math.power([1], {\"x\": true})",
    "nested @a.b(@c.d(1)) and ((@e.f()))\n\n@g.h(\"multi\nline\")",
    "emoji 🙂 @weather.get(\"🙂\") @weather.get('unterminated",
]


def jsonl_records(with_tools_every: int = 4):
    """Input lines of `parse --jsonl`: the corpus as records, some with their own tools,
    plus the lines that are not records at all."""
    lines = []
    for i, completion in enumerate(COMPLETIONS * 3):
        record = {"id": i, "completion": completion}
        if i % with_tools_every == 1:
            record["tools"] = TOOLS
        lines.append(json.dumps(record, ensure_ascii=i % 2 == 0))
    lines += [
        "",
        "   ",
        "not json",
        "[1, 2]",
        '{"id": "x"}',
        '{"id": 5, "completion": 7}',
        '{"id": 6, "completion": "@a.b(1)", "tools": [{"name": "a b"}]}',
        '{"id": 7, "completion": "@a.b(1)", "tools": "nope"}',
        '{"id": 8, "completion": "@a.b(1)"}  ',
        '{"id": null, "completion": "@weather.get(1)", "tools": ' + json.dumps(TOOLS) + "}",
    ]
    return lines
