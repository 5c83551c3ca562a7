"""How a Toolbox runs the calls of an answer: time limits, cancellation, interrupts that
reach the caller, calls at the same time, and one stream giving text and results.

Timings are failure guards with wide margins (a call that should be stopped after 0.3 s
must end well within 5 s), never exact figures."""

import asyncio
import datetime
import os
import random
import signal
import threading
import time
from typing import List, Optional, Set, Tuple

import pytest

import atfunc


def hanging_toolbox(**options):
    """A toolbox with an async tool and a plain one that hang until told to stop."""
    toolbox = atfunc.Toolbox(**options)
    seen = {"cancelled": threading.Event(), "release": threading.Event()}

    @toolbox.tool
    async def hang_async() -> str:
        """Waits for ever."""
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            seen["cancelled"].set()
            raise
        return "woke"

    @toolbox.tool
    def hang() -> str:
        """Waits until released."""
        seen["release"].wait(60)
        return "released"

    return toolbox, seen


def test_a_toolbox_timeout_stops_a_hung_async_call_and_the_answer_goes_on():
    toolbox, seen = hanging_toolbox(timeout=0.3)

    @toolbox.tool
    def quick() -> str:
        """Answers at once."""
        return "quick"

    began = time.monotonic()
    turn = toolbox.run("@hang_async() then @quick()")
    assert time.monotonic() - began < 5
    timed_out, answered = turn.results
    assert "did not finish within" in timed_out["error"] and "hang_async" in timed_out["error"]
    assert answered["result"] == "quick"
    assert seen["cancelled"].wait(5), "the async tool was not cancelled"


def test_a_tool_has_its_own_timeout_and_a_plain_function_is_left_behind():
    toolbox = atfunc.Toolbox(timeout=30)
    release = threading.Event()

    def slow() -> str:
        """Takes its time."""
        release.wait(60)
        return "late"

    toolbox.add_tool(slow, timeout=0.3)
    assert toolbox.timeout == 30
    began = time.monotonic()
    [record] = toolbox.run("@slow()").results
    assert time.monotonic() - began < 5
    assert "did not finish within" in record["error"]
    release.set()
    with pytest.raises(ValueError, match="timeout"):
        toolbox.add_tool(slow, name="slower", timeout=0)


def test_the_timeout_can_be_changed_and_removed():
    toolbox, seen = hanging_toolbox()
    assert toolbox.timeout is None
    toolbox.timeout = 0.2
    assert "did not finish within" in toolbox.run("@hang()").results[0]["error"]
    seen["release"].set()
    toolbox.timeout = None
    assert toolbox.run("@hang()").results[0]["result"] == "released"


def test_cancelling_run_async_cancels_its_async_calls():
    toolbox, seen = hanging_toolbox()

    async def main():
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(toolbox.run_async("@hang_async()"), 0.3)
        # The cancellation reached the tool on this loop.
        for _ in range(100):
            if seen["cancelled"].is_set():
                return True
            await asyncio.sleep(0.05)
        return False

    began = time.monotonic()
    assert asyncio.run(main())
    assert time.monotonic() - began < 5


def test_cancelling_feed_async_cancels_its_calls_and_ends_the_stream():
    toolbox, seen = hanging_toolbox()

    async def main():
        stream = toolbox.stream()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(stream.feed_async("@hang_async()"), 0.3)
        await asyncio.sleep(0.2)
        with pytest.raises(RuntimeError, match="finished"):
            stream.feed("more")

    asyncio.run(main())
    assert seen["cancelled"].wait(5)


@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit])
def test_keyboard_interrupt_and_system_exit_from_a_tool_reach_the_caller(stop):
    toolbox = atfunc.Toolbox()
    after = []

    @toolbox.tool
    def give_up() -> str:
        """Stops the program."""
        raise stop()

    @toolbox.tool
    async def give_up_async() -> str:
        """Stops the program, from a coroutine."""
        raise stop()

    @toolbox.tool
    def later() -> str:
        """Runs after."""
        after.append(1)
        return "ran"

    toolbox.max_concurrency = 1
    with pytest.raises(stop):
        toolbox.run("@give_up() @later()")
    with pytest.raises(stop):
        toolbox.run("@give_up_async()")
    with pytest.raises(stop):
        asyncio.run(toolbox.run_async("@give_up_async()"))
    with pytest.raises(stop):
        asyncio.run(toolbox.run_async("@give_up()"))
    stream = toolbox.stream()
    with pytest.raises(stop):
        stream.feed("@give_up()")
    assert after == []
    # A call held for confirmation stops the program when it runs.
    toolbox.require_confirmation("give_up")
    [held] = toolbox.run("@give_up()").results
    with pytest.raises(stop):
        toolbox.confirm(held["confirmation_id"])
    # An ordinary exception is still the model's to read.
    assert toolbox.run("@later()").results[0]["result"] == "ran"


@pytest.mark.skipif(os.name != "posix", reason="sends itself SIGINT")
def test_ctrl_c_stops_a_run_waiting_on_a_hung_tool():
    toolbox = atfunc.Toolbox()
    waiting = threading.Event()
    cancelled = threading.Event()

    @toolbox.tool
    async def hang() -> str:
        """Waits for ever."""
        waiting.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "woke"

    def interrupt():
        # Once the tool runs, the run waits on it: that is when Ctrl-C lands.
        if waiting.wait(30):
            os.kill(os.getpid(), signal.SIGINT)

    signaller = threading.Thread(target=interrupt, daemon=True)
    signaller.start()
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        toolbox.run("@hang()")
    signaller.join(30)
    assert time.monotonic() - began < 30
    assert cancelled.wait(5), "the async tool was not cancelled"


class Loud(str):
    """A parameter type whose making, in the call's start, is where Ctrl-C lands."""

    def __new__(cls, value):
        os.kill(os.getpid(), signal.SIGINT)
        return super().__new__(cls, value)


def ctrl_c(value=None):
    """Ctrl-C lands now; then goes on as if nothing happened."""
    os.kill(os.getpid(), signal.SIGINT)
    return value


@pytest.mark.skipif(os.name != "posix", reason="sends itself SIGINT")
@pytest.mark.parametrize("moment", ["event", "parser", "confirmer", "output filter", "call start",
                                    "plain tool", "async tool"])
def test_ctrl_c_at_any_moment_of_a_run_reaches_the_caller(moment):
    """Python code of a run (hooks, the start of a call) may run on the caller's thread,
    where Ctrl-C raises inside it: wherever it lands, the run stops and the caller gets
    the KeyboardInterrupt. The hung tool's time limit bounds a run that would lose it."""
    toolbox = atfunc.Toolbox(timeout=10)
    started = []

    @toolbox.tool
    async def hang() -> str:
        """Waits."""
        started.append("hang")
        if moment == "async tool":
            ctrl_c()
        await asyncio.sleep(60)
        return "woke"

    def first(label: Loud if moment == "call start" else str) -> str:  # type: ignore[valid-type]
        """Answers at once."""
        if moment == "plain tool":
            ctrl_c()
        return "first"

    parsed = {"label": {"type": "string", "parser": ctrl_c}} if moment == "parser" else None
    toolbox.add_tool(first, args=parsed, confirm=moment == "confirmer")
    if moment == "confirmer":
        toolbox.set_confirmer(lambda call: ctrl_c("run"))
    elif moment == "event":
        sent = []

        def on_event(event):
            # Once: were the run to go on and start the next call, a second Ctrl-C would
            # stop the tests instead of failing this one.
            if event["event"] == "start" and not sent:
                sent.append(event)
                ctrl_c()

        toolbox.on_event(on_event)
    elif moment == "output filter":
        toolbox.add_output_filter(lambda name, args, text: ctrl_c(None))
    toolbox.max_concurrency = 1
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        toolbox.run('@first("x") @hang()')
    assert time.monotonic() - began < 8
    # The run stopped where Ctrl-C landed: the call after it did not start (the signal
    # from a tool's own thread may land a little later).
    if moment != "plain tool":
        assert started == (["hang"] if moment == "async tool" else [])


class Cancelled(BaseException):
    """A library's own cancellation, outside `Exception` as asyncio's is."""


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no words")


class Unwritable:
    """A result that `json.dumps` writes with `str`, which raises."""

    def __str__(self):
        raise Cancelled("in str")


@pytest.mark.parametrize("kind", ["plain", "async"])
@pytest.mark.parametrize("raises, expected", [
    (Cancelled("stopped"), "Cancelled: stopped"),
    (GeneratorExit(), "GeneratorExit"),
    (Unprintable(), "Unprintable"),
    (None, "Cancelled: in str"),
], ids=["base-exception", "generator-exit", "unprintable", "unwritable-result"])
def test_whatever_a_tool_raises_is_its_error_result_not_a_hang(kind, raises, expected):
    toolbox = atfunc.Toolbox(timeout=10)

    def fail():
        if raises is None:
            return Unwritable()
        raise raises

    async def fail_async():
        return fail()

    toolbox.add_tool(fail if kind == "plain" else fail_async, name="fail", description="Fails.")
    began = time.monotonic()
    [record] = toolbox.run("@fail()").results
    assert time.monotonic() - began < 8
    assert record["error"].startswith(expected), record["error"]
    assert "did not finish" not in record["error"]


def test_async_calls_of_one_answer_run_at_the_same_time_in_order():
    toolbox = atfunc.Toolbox()

    @toolbox.tool
    async def nap(seconds: float, label: str) -> str:
        """Sleeps."""
        await asyncio.sleep(seconds)
        return label

    answer = '@nap(1, "a") @nap(0.9, "b") @nap(0.8, "c")'
    began = time.monotonic()
    turn = asyncio.run(toolbox.run_async(answer))
    assert time.monotonic() - began < 2.5
    assert [r["result"] for r in turn.results] == ["a", "b", "c"]
    assert [r["call_id"] for r in turn.results] == ["call_1", "call_2", "call_3"]
    assert turn.text.index('"a"') < turn.text.index('"b"') < turn.text.index('"c"')

    began = time.monotonic()
    assert [r["result"] for r in toolbox.run(answer).results] == ["a", "b", "c"]
    assert time.monotonic() - began < 2.5


def test_plain_calls_run_at_the_same_time_up_to_max_concurrency():
    toolbox = atfunc.Toolbox(max_concurrency=3)
    running = []
    most = []
    lock = threading.Lock()

    @toolbox.tool
    def wait(seconds: float) -> float:
        """Sleeps."""
        with lock:
            running.append(1)
            most.append(len(running))
        time.sleep(seconds)
        with lock:
            running.pop()
        return seconds

    began = time.monotonic()
    turn = toolbox.run("@wait(1) @wait(0.9) @wait(0.8)")
    assert time.monotonic() - began < 2.5
    assert [r["result"] for r in turn.results] == [1, 0.9, 0.8]

    toolbox.max_concurrency = 1
    assert toolbox.max_concurrency == 1
    most.clear()
    toolbox.run("@wait(0.1) @wait(0.11) @wait(0.12)")
    assert max(most) == 1
    with pytest.raises(ValueError, match="max_concurrency"):
        toolbox.max_concurrency = 0


def streaming_toolbox():
    toolbox = atfunc.Toolbox()

    @toolbox.tool
    def add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    return toolbox


def joined(records):
    """Records with adjacent texts joined: what a stream gives whatever its pieces."""
    out = []
    for record in records:
        if "text" in record and out and "text" in out[-1]:
            out[-1] = {"text": out[-1]["text"] + record["text"]}
        else:
            out.append({k: v for k, v in record.items() if k != "call_id"})
    return out


def streamed(toolbox, pieces):
    stream = toolbox.stream(with_text=True)
    given = []
    for piece in pieces:
        given.extend(stream.feed(piece))
    turn = stream.finish()
    assert turn.records[: len(given)] == given
    return turn.records, turn


ANSWER = 'Adding: @add(1, 2) — and é then @add(3, b=4) @nope(1) @add("x", 1) done.'


def chunks(text, size):
    return [text[i:i + size] for i in range(0, len(text), size)]


def test_one_stream_gives_text_and_results_in_order_whatever_the_pieces():
    toolbox = streaming_toolbox()
    whole, turn = streamed(toolbox, [ANSWER])
    expected = joined(whole)
    kinds = [("text" if "text" in r else r.get("result", "error")) for r in expected]
    assert kinds == ["text", 3, "text", 7, "text", "error", "text", "error", "text"]
    assert expected[0] == {"text": "Adding: "}
    assert expected[-1] == {"text": " done."}
    assert turn.prose == "Adding:  — and é then    done."
    rng = random.Random(7)
    for pieces in (chunks(ANSWER, 1), chunks(ANSWER, 3)):
        assert joined(streamed(toolbox, pieces)[0]) == expected
    for _ in range(20):
        cuts = sorted(rng.sample(range(1, len(ANSWER)), rng.randint(1, 12)))
        pieces = [ANSWER[i:j] for i, j in zip([0] + cuts, cuts + [len(ANSWER)])]
        assert joined(streamed(toolbox, pieces)[0]) == expected
    # `run` gives the same records, and a stream without text only the calls'.
    assert joined(toolbox.run(ANSWER).records) == expected
    stream = toolbox.stream()
    assert all("text" not in r for piece in chunks(ANSWER, 5) for r in stream.feed(piece))


def test_text_after_a_repeated_call_is_not_given():
    toolbox = streaming_toolbox()
    answer = "a @add(1, 2) b @add(1, 2) c"
    for pieces in ([answer], chunks(answer, 1)):
        records, turn = streamed(toolbox, pieces)
        assert [r.get("text", r.get("result")) for r in joined(records)] == ["a ", 3, " b "]
        assert turn.repeated_at == answer.index("@add(1, 2) c")


def messages_toolbox():
    toolbox = atfunc.Toolbox()

    @toolbox.tool(name="weather.get")
    def get(city: str) -> str:
        """Weather."""
        return f"sunny in {city}"

    return toolbox


def test_openai_messages_keep_the_text_and_the_calls_that_did_not_bind():
    toolbox = messages_toolbox()
    turn = toolbox.run('Let me look. @weather.get("Oslo") @weather.gett("Rome") @weather.get(')
    assistant, *tools = toolbox.openai_messages(turn)
    assert assistant["role"] == "assistant"
    assert assistant["content"].strip() == "Let me look."
    names = [call["function"]["name"] for call in assistant["tool_calls"]]
    assert len(names) == 3 and names[1] == "weather_gett"
    assert [m["tool_call_id"] for m in tools] == [c["id"] for c in assistant["tool_calls"]]
    assert tools[0]["content"] == "sunny in Oslo"
    assert "Unknown function" in tools[1]["content"] and 'weather.gett("Rome")' in tools[1]["content"]
    assert tools[2]["content"].startswith("Error: ")
    # Text alone is an assistant message too; records with their text give the same.
    assert toolbox.openai_messages(toolbox.run("Just words.")) == [
        {"role": "assistant", "content": "Just words."}
    ]
    assert toolbox.openai_messages(turn.records) == toolbox.openai_messages(turn)


def test_run_tool_calls_keeps_the_models_ids_and_answers_a_repeated_call():
    toolbox = atfunc.Toolbox()
    ran = []

    @toolbox.tool
    def add(a: int, b: int) -> int:
        """Adds."""
        ran.append((a, b))
        return a + b

    def call(call_id, arguments):
        return {"id": call_id, "type": "function",
                "function": {"name": "add", "arguments": arguments}}

    calls = [call("call_A", '{"a": 1, "b": 2}'), call("call_B", '{"b": 2, "a": 1}'),
             call("call_C", '{"a": 2, "b": 2}'), call("call_D", '{"a": '),
             call("call_E", '{"a": 2, "b": 3}')]
    ids = [c["id"] for c in calls]
    turn = toolbox.run_tool_calls(calls)
    assert [r["call_id"] for r in turn.results] == ids
    # The repeat is answered with the first one's result and does not run again; the
    # calls after it run.
    assert [r.get("result") for r in turn.results] == [3, 3, 4, None, 5]
    assert ran == [(1, 2), (2, 2), (2, 3)]
    assert turn.text.count("Returned: 3") == 2 and "Returned: 5" in turn.text
    assistant, *tools = toolbox.openai_messages(turn)
    assert [c["id"] for c in assistant["tool_calls"]] == ids
    assert [m["tool_call_id"] for m in tools] == ids
    assert [m["content"] for m in tools][:3] == ["3", "3", "4"]
    # Each call that returned is remembered once.
    assert toolbox.history == ["@add(a=1, b=2)", "@add(a=2, b=2)", "@add(a=2, b=3)"]


def test_format_results_takes_the_records_of_calls_that_did_not_bind():
    toolbox = messages_toolbox()
    turn = toolbox.run('@weather.get("Oslo") @weather.get(days=2) @nope()')
    text = atfunc.format_results(turn.results)
    assert text == turn.text
    # A record without the call's text still formats, by its name.
    [record] = [r for r in turn.results if r["name"] == "nope"]
    del record["call"]
    assert "Function call: nope(...)" in atfunc.format_results([record])


def test_run_tool_calls_runs_the_good_calls_when_one_is_malformed():
    toolbox = messages_toolbox()
    calls = [
        {"id": "a", "type": "function", "function": {"name": "weather_get", "arguments": '{"city": "Oslo"}'}},
        {"id": "b", "type": "function", "function": {"name": "weather_get", "arguments": '{"city": '}},
        {"id": "c", "type": "function", "function": {"name": "weather_get", "arguments": '{"city": "Rome"}'}},
    ]
    turn = toolbox.run_tool_calls(calls)
    first, bad, last = turn.results
    assert first["result"] == "sunny in Oslo" and last["result"] == "sunny in Rome"
    assert bad["call_id"] == "b" and bad["args"] is None and bad["error"]
    assert turn.text.index("Oslo") < turn.text.index('{"city": ') < turn.text.index("Rome")
    messages = toolbox.openai_messages(turn)
    assert len(messages[0]["tool_calls"]) == 3 and len(messages) == 4


# ---------------------------------------------------------------- definitions


def test_signatures_no_call_could_fill_are_refused_at_registration():
    toolbox = atfunc.Toolbox()

    def many(*values: int) -> int:
        """Sums."""
        return sum(values)

    def options(**flags: bool) -> dict:
        """Flags."""
        return flags

    def one(x: int) -> int:
        """One."""
        return x

    with pytest.raises(atfunc.ToolsError, match=r"\*values cannot be given"):
        toolbox.add_tool(many)
    with pytest.raises(atfunc.ToolsError, match=r"\*\*flags shows the model no parameter"):
        toolbox.add_tool(options)
    with pytest.raises(atfunc.ToolsError, match=r"args names 'y', which the function does not take"):
        toolbox.add_tool(one, args={"y": {"type": "integer"}})
    with pytest.raises(atfunc.ToolsError, match=r"'x' have no default and are not in args"):
        toolbox.add_tool(one, args={})
    # **kwargs takes what args names.
    toolbox.add_tool(options, args={"loud": {"type": "boolean"}})
    assert toolbox.run("@options(loud=true)").results[0]["result"] == {"loud": True}
    assert toolbox.tools.names == ["options"]


def test_types_no_json_value_stands_for_are_refused_at_registration():
    import decimal

    toolbox = atfunc.Toolbox()

    def at(when: datetime.time) -> str:
        """When."""
        return str(when)

    def costs(amounts: List[decimal.Decimal]) -> str:
        """Costs."""
        return str(amounts)

    with pytest.raises(atfunc.ToolsError, match=r"parameter 'when' has the type time"):
        toolbox.add_tool(at)
    with pytest.raises(atfunc.ToolsError, match=r"parameter 'amounts' has the type .*Decimal"):
        toolbox.add_tool(costs)
    assert toolbox.tools.names == []


def test_dates_sets_and_tuples_arrive_as_their_types():
    toolbox = atfunc.Toolbox()
    got = {}

    @toolbox.tool
    def plan(day: datetime.date, tags: Set[int], pair: Tuple[int, str],
             at: Optional[datetime.datetime] = None, more: Tuple[int, ...] = ()) -> str:
        """Plans."""
        got.update(day=day, tags=tags, pair=pair, at=at, more=more)
        return "ok"

    assert "<*day{date}>" in toolbox.prompt()
    [record] = toolbox.run('@plan("2026-01-05", [1, 2, 2], [3, "x"], at="2026-01-05T10:00:00Z", more=[1])').results
    assert record["result"] == "ok", record
    assert got["day"] == datetime.date(2026, 1, 5)
    assert got["tags"] == {1, 2}
    assert got["pair"] == (3, "x")
    assert got["at"] == datetime.datetime(2026, 1, 5, 10, tzinfo=datetime.timezone.utc)
    assert got["more"] == (1,)
    [record] = toolbox.run('@plan("2026-01-06", [], [1, "a", 2])').results
    assert "expected a list of 2 items, got 3" in record["error"]
    [record] = toolbox.run('@plan("2026-02-30", [], [1, "a"])').results
    assert "not a date" in record["error"]


def test_a_toolbox_dropped_while_another_one_runs_goes_quietly():
    import sys

    seen = []
    before = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: seen.append(unraisable.exc_value)
    try:
        other = [atfunc.Toolbox()]
        toolbox = atfunc.Toolbox()

        @toolbox.tool
        def go() -> str:
            """Goes."""
            return "went"

        # The last handle of the other toolbox goes inside this one's run.
        toolbox.on_event(lambda event: other.clear())
        assert toolbox.run("@go()").results[0]["result"] == "went"
    finally:
        sys.unraisablehook = before
    assert other == [] and seen == []
