"""Writes a file of `atfunc parse --jsonl` input records, the same file for the same seed.

    python examples/pipelines/make_records.py OUTPUT.jsonl [--records N] [--seed S] [--clean]
        [--no-record-tools] [--tools-file TOOLS.json]

The records are what a post-processing job meets: completions with one to four calls among
prose (some in code fences, some with a `with_body [[...]]` block), calls that do not bind
(a missing argument, an unknown function, a bad choice), calls cut off or malformed,
completions with no call at all, text with characters of two to four bytes (so `span` and
`chars` differ), and ids of every JSON type. About a third of the records carry their own
`tools`, in each of the three shapes a tools file takes; the rest have none and get their
calls back unbound.

With `--no-record-tools` none does, for runs with `--tools` (`--tools-file` writes the tools
the calls are written against, `TOOLS_FILE`). Unless `--clean` is given, about one line in a
hundred is not a processable record: a blank line, a line that is not JSON, a record without
`completion`, with a `completion` that is not a string, or with `tools` that do not load.
`atfunc parse --jsonl` answers those with `{"id", "line", "error"}` (a blank line gets no
answer), so they check that a pipeline numbers lines as the file does.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

# The atfunc standard format, with an api-wrapper whose calls carry a body.
STANDARD_TOOLS = [
    {
        "domain": "weather",
        "name": "get_current_weather",
        "type": "function",
        "description": "Current weather of a city",
        "params": {
            "location": {"type": "string", "isRequired": True, "description": "City"},
            "unit": {
                "type": "string",
                "isRequired": False,
                "description": "Unit",
                "enum": ["celsius", "fahrenheit"],
            },
        },
        "returns": "object",
    },
    {
        "domain": "api",
        "name": "create_user",
        "type": "api-wrapper",
        "description": "Create a user account",
        "path_params": {
            "username": {"type": "string", "isRequired": True, "description": "Login"},
        },
        "query_params": {
            "email": {"type": "string", "isRequired": True, "description": "Address"},
        },
        "request_body": {
            "username": {"type": "string", "required": True, "description": "Login"},
            "age": {"type": "integer", "required": False, "description": "Years"},
        },
        "response_type": "application/json",
        "returns": "object",
    },
]

# An OpenAI `tools` array; a dotted name splits into toolbox and function.
OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "math.calculate_power",
            "description": "base raised to exponent",
            "parameters": {
                "type": "object",
                "properties": {
                    "base": {"type": "number"},
                    "exponent": {"type": "integer", "minimum": 0, "maximum": 64},
                },
                "required": ["base", "exponent"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "weather.get_current_weather",
            "description": "Current weather of a city",
            "parameters": {
                "type": "object",
                "properties": {"location": {"type": "string"}, "unit": {"type": "string"}},
                "required": ["location"],
            },
        },
    },
]

# Bare definitions, as in the Berkeley Function Calling Leaderboard; `book` is a root
# function, called without a toolbox.
BARE_TOOLS = [
    {
        "name": "book",
        "description": "Book a table",
        "parameters": {
            "type": "dict",
            "properties": {
                "restaurant": {"type": "string"},
                "guests": {"type": "integer", "minimum": 1, "maximum": 20},
                "day": {"type": "string", "format": "date"},
            },
            "required": ["restaurant", "guests"],
        },
    },
    {
        "name": "math.calculate_power",
        "description": "base raised to exponent",
        "parameters": {
            "type": "dict",
            "properties": {"base": {"type": "float"}, "exponent": {"type": "int"}},
            "required": ["base", "exponent"],
        },
    },
]

# The tools of `--tools` runs: every function the generated calls use.
TOOLS_FILE = STANDARD_TOOLS + [OPENAI_TOOLS[0]] + [BARE_TOOLS[0]]

PROSE = [
    "Let me look that up. ",
    "I'll check the current conditions first. ",
    "The numbers come first, then the comparison. ",
    "Mail bob@example.com if this fails; that is not a call. ",
    "Température à Zürich, s'il vous plaît. ",
    "東京の天気を調べます。 ",
    "Done 😀 — next step. ",
    "An email like @ alone, or a@b, is text. ",
]
CITIES = ["Paris", "Oslo", "San Francisco, CA", "Zürich", "東京", "Lagos"]


def good_call(rng: random.Random) -> str:
    pick = rng.randrange(6)
    if pick == 0:
        unit = rng.choice(["celsius", "fahrenheit"])
        return f'@weather.get_current_weather("{rng.choice(CITIES)}", unit="{unit}")'
    if pick == 1:
        return f"@Weather.Get_Current_Weather(location: '{rng.choice(CITIES)}')"
    if pick == 2:
        return f"@math.calculate_power({rng.randrange(1000)}, exponent={rng.randrange(12)})"
    if pick == 3:
        return f"@math.calculate_power(base={rng.random() * 10:.3f}, exponent={rng.randrange(5)})"
    if pick == 4:
        day = f"2026-{rng.randrange(1, 13):02}-{rng.randrange(1, 29):02}"
        return f'@book("Chez {rng.choice(CITIES)}", guests={rng.randrange(1, 9)}, day="{day}")'
    user = f"user{rng.randrange(100_000)}"
    age = 18 + rng.randrange(60)
    body = json.dumps({"username": user, "age": age})
    return f'@api.create_user({user}, "{user}@example.com") with_body [[{body}]]'


def bad_call(rng: random.Random) -> str:
    return rng.choice(
        [
            # Parses, does not bind: a missing argument, an unknown function, a bad choice,
            # a bound out of range, a date that does not exist.
            "@weather.get_current_weather()",
            '@wether.get_forecast("Oslo", days=3)',
            '@weather.get_current_weather("Oslo", unit="kelvin")',
            "@math.calculate_power(2, exponent=99)",
            '@book("Chez Oslo", guests=2, day="2026-02-30")',
            # Does not parse: cut off, an unterminated string, a stray token.
            "@math.calculate_power(2, ",
            '@weather.get_current_weather("Oslo',
            "@weather.get_current_weather(Oslo Paris)",
        ]
    )


def completion(rng: random.Random) -> str:
    if rng.randrange(8) == 0:
        return "".join(rng.choice(PROSE) for _ in range(1 + rng.randrange(4)))
    text = []
    for _ in range(1 + rng.randrange(4)):
        text.extend(rng.choice(PROSE) for _ in range(rng.randrange(3)))
        call = bad_call(rng) if rng.randrange(6) == 0 else good_call(rng)
        if rng.randrange(5) == 0:
            text.append(f"\n```\n{call}\n```\n")
        else:
            text.append(call + ". ")
    text.append(rng.choice(PROSE))
    return "".join(text)


def record_id(rng: random.Random, number: int):
    kind = rng.randrange(10)
    if kind == 0:
        return number
    if kind == 1:
        return {"batch": number // 1000, "n": number}
    if kind == 2:
        return None
    return f"sample-{number}"


def broken_line(rng: random.Random, number: int) -> str:
    return rng.choice(
        [
            "",
            "   ",
            "not json at all",
            '{"id": 1, "completion": "cut off',
            '["an array", "is not a record"]',
            json.dumps({"id": number}),
            json.dumps({"id": number, "completion": 42}),
            json.dumps({"id": number, "completion": "@a.b()", "tools": [{"name": 3}]}),
            json.dumps({"id": number, "completion": "@a.b()", "tools": "nope"}),
        ]
    )


def line(rng: random.Random, number: int, clean: bool, record_tools: bool) -> str:
    if not clean and rng.randrange(100) == 0:
        return broken_line(rng, number)
    record = {"id": record_id(rng, number), "completion": completion(rng)}
    tools = rng.randrange(9) if record_tools else -1
    if tools == 0:
        record["tools"] = STANDARD_TOOLS
    elif tools == 1:
        record["tools"] = OPENAI_TOOLS
    elif tools == 2:
        record["tools"] = BARE_TOOLS
    # Non-ASCII kept as is, as models and most writers emit it.
    return json.dumps(record, ensure_ascii=False)


def write_records(path: Path, records: int, seed: int = 11, clean: bool = False,
                  record_tools: bool = True) -> int:
    """Writes `records` lines to `path`; returns the number of bytes written. `clean`: only
    processable records; `record_tools=False`: no record carries its own tools."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        for number in range(records):
            out.write(line(rng, number, clean, record_tools))
            out.write("\n")
        return out.tell()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--clean", action="store_true", help="only processable records")
    parser.add_argument("--no-record-tools", action="store_true",
                        help="no record carries tools of its own (use --tools)")
    parser.add_argument("--tools-file", type=Path, help="also write TOOLS_FILE here")
    args = parser.parse_args()
    size = write_records(args.output, args.records, args.seed, args.clean,
                         not args.no_record_tools)
    if args.tools_file:
        args.tools_file.write_text(json.dumps(TOOLS_FILE, indent=1), encoding="utf-8")
    print(f"{args.records} records, {size / 1e6:.1f} MB in {args.output}")


if __name__ == "__main__":
    main()
