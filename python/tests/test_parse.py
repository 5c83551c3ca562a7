"""parse gives the records `atfunc parse` prints; StreamParser gives the same on any split."""

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import atfunc
from conftest import COMPLETIONS, DEMO_TOOLS, TOOLS

WHOLE = "\n".join(COMPLETIONS)
# A refused call whose first 200 bytes end inside a character: `raw` is cut there.
CUT = '@weather.get("x' + "ø" * 300 + '", days=0)'


def cli_records(cli, text: bytes, *args):
    return [json.loads(line) for line in cli(["parse", *args], text).splitlines()]


@pytest.mark.parametrize("text", COMPLETIONS + [WHOLE, CUT])
@pytest.mark.parametrize("with_tools", [False, True])
def test_equals_the_cli(cli, text, with_tools):
    args = ["--tools", DEMO_TOOLS] if with_tools else []
    tools = DEMO_TOOLS if with_tools else None
    assert atfunc.parse(text, tools) == cli_records(cli, text.encode(), *args)


def test_bytes_with_invalid_utf8_equal_the_cli(cli):
    text = b"\xff\xfe @a.b('\xc3') @c.d(\xe2\x82) end"
    assert atfunc.parse(text) == cli_records(cli, text)
    assert atfunc.parse(text, with_text=True) == cli_records(cli, text, "--text")


# Long prose is cut into text records of 64 KiB, never inside a character; invalid bytes
# between the text are records of their own.
LONG = (("prose ø " * 12000).encode() + b"\xff\xfe" * 5 + b"@a.b(1)\xc3"
        + ("more 🙂" * 20000).encode())


TEXTS = [t.encode() for t in COMPLETIONS + [WHOLE, CUT]] + [LONG]


@pytest.mark.parametrize("index", range(len(TEXTS)))
def test_text_records_equal_the_cli(cli, index):
    data = TEXTS[index]
    expected = cli_records(cli, data, "--text")
    assert atfunc.parse(data, with_text=True) == expected
    rng = random.Random(3)
    cuts = [rng.randrange(len(data) + 1) for _ in range(6)]
    assert stream(split(data, cuts), with_text=True, text_release="gap") == expected
    # Text given out at every feed: the same records once adjacent text is joined.
    assert merged(stream(split(data, cuts), with_text=True)) == merged(expected)


def test_records_carry_bound_arguments():
    calls = atfunc.parse('@weather.get("Oslo", days="2")', TOOLS)
    assert calls == [
        {"name": "weather.get", "args": {"city": "Oslo", "days": 2}, "body": None,
         "span": [0, 30], "chars": [0, 30]}
    ]


def stream(pieces, tools=None, with_text=False, **options):
    parser = atfunc.StreamParser(tools, with_text=with_text, **options)
    records = []
    for piece in pieces:
        records += parser.feed(piece)
    return records + parser.finish()


def merged(records):
    """Adjacent text records joined."""
    out = []
    for record in records:
        if "text" in record and out and "text" in out[-1]:
            out[-1] = {"text": out[-1]["text"] + record["text"]}
        else:
            out.append(dict(record))
    return out


def split(data, cuts):
    cuts = sorted(set(cuts))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]


@pytest.mark.parametrize("tools", [None, TOOLS])
def test_any_split_gives_the_records_of_the_whole(tools):
    rng = random.Random(11)
    for text in [WHOLE, CUT, *COMPLETIONS]:
        whole = atfunc.parse(text, tools)
        data = text.encode()
        assert stream([data], tools) == whole
        assert stream([bytes([b]) for b in data], tools) == whole
        for _ in range(20):
            cuts = [rng.randrange(len(data) + 1) for _ in range(rng.randrange(1, 8))]
            assert stream(split(data, cuts), tools) == whole, cuts
            assert stream(split(text, cuts), tools) == whole, cuts


@settings(max_examples=200, deadline=None)
@given(
    text=st.lists(
        st.sampled_from(['@a.b(', '"', "x", "ø", ")", " ", "@", "[[", "]]", " with_body ",
                         "1,", "=", "'", "\\", "\n", "@weather.get(", "🙂"]),
        max_size=40,
    ).map("".join),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=6),
)
def test_random_texts_split_anywhere(text, cuts):
    data = text.encode()
    whole = atfunc.parse(text, TOOLS)
    cuts = [c for c in cuts if c <= len(data)]
    assert stream(split(data, cuts), TOOLS) == whole


def test_finish_starts_a_new_completion():
    parser = atfunc.StreamParser()
    assert parser.feed("@a.b(1) @c.d(") == [
        {"name": "a.b", "positional": [1], "named": {}, "body": None,
         "span": [0, 7], "chars": [0, 7]}
    ]
    assert [r["raw"] for r in parser.finish()] == ["@c.d("]
    # Offsets count from the new start; a call may still get a body until the end.
    again = parser.feed("@e.f()") + parser.finish()
    assert [r["span"] for r in again] == [[0, 6]]


def test_wrong_chunk_types_are_refused():
    with pytest.raises(TypeError, match="str or bytes"):
        atfunc.StreamParser().feed(12)
    assert atfunc.parse(bytearray(b"@a.b()"))[0]["name"] == "a.b"


def test_text_without_calls_reaches_a_chat_ui_before_the_answer_ends():
    answer = "The capital of Norway is Oslo. It lies at the end of the Oslofjord; Blåbær 🙂!"
    tokens = [answer[i:i + 4] for i in range(0, len(answer), 4)]
    shown = []

    def model():
        for k, token in enumerate(tokens):
            # Before the model writes the next token, the UI shows all it wrote so far.
            assert "".join(shown) == "".join(tokens[:k])
            yield token

    parser = atfunc.StreamParser(with_text=True)
    for token in model():
        shown += [r["text"] for r in parser.feed(token)]
    # The whole answer was on screen before it ended.
    assert "".join(shown) == answer
    assert parser.finish() == []


def test_text_is_held_only_where_a_call_may_start():
    parser = atfunc.StreamParser(with_text=True)
    assert parser.feed("Mail bob@example.org or ") == [{"text": "Mail bob@example.org or "}]
    assert parser.feed("call @weather") == [{"text": "call "}]
    assert parser.feed('.get("Oslo") now') == [
        {"name": "weather.get", "positional": ["Oslo"], "named": {}, "body": None,
         "span": [29, 49], "chars": [29, 49]},
        {"text": " now"},
    ]
    assert parser.feed("@ home") == [{"text": "@ home"}]
    assert parser.finish() == []
    hermes = atfunc.StreamParser(with_text=True, dialect="hermes")
    assert hermes.feed("Sure <tool_") == [{"text": "Sure "}]
    assert hermes.feed("box> done") == [{"text": "<tool_box> done"}]


def test_text_release_gap_keeps_one_record_per_run_of_text():
    parser = atfunc.StreamParser(with_text=True, text_release="gap")
    assert parser.feed("Hello ") == []
    assert parser.feed("there @a.b(1) bye")[0] == {"text": "Hello there "}
    assert parser.finish() == [{"text": " bye"}]
    with pytest.raises(ValueError, match="text_release"):
        atfunc.StreamParser(text_release="soon")


def test_a_large_answer_is_not_held_twice():
    # `parse` makes the records of each 64 KiB of the text Python objects before reading
    # on: the records of 200k calls were held as JSON and as Python objects at once (2.9 KB
    # a call at the peak; 1.3 KB now, the Python objects themselves).
    code = """
import resource, atfunc
n = 200_000
text = "@f(a=1)\\n" * n
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
records = atfunc.parse(text)
assert len(records) == n
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024 / n)
"""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert float(out.stdout) < 2000, out.stdout


def test_records_across_the_pieces_parse_reads_in_are_those_of_a_stream():
    # Calls, text and a character cut at the 64 KiB steps `parse` reads in.
    text = ("é" * 32767 + " @f(a='x') ") * 3 + "@g(b=[1, 2]) tail"
    whole = atfunc.parse(text, with_text=True)
    stream = atfunc.StreamParser(with_text=True, text_release="gap")
    pieces = stream.feed(text) + stream.finish()
    assert whole == pieces
    assert [r["name"] for r in whole if "name" in r] == ["f", "f", "f", "g"]
