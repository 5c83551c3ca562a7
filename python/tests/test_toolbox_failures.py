"""`Toolbox`: a tool that raises. The model reads `TypeName: message`; the traceback is
kept in the call's record (`record["traceback"]`) and logged on the logger `atfunc`."""

import asyncio
import logging

import atfunc


def failing_toolbox():
    toolbox = atfunc.Toolbox()

    @toolbox.tool
    def divide(a: int, b: int) -> float:
        """Divides."""
        return helper(a, b)

    @toolbox.tool
    async def fetch(url: str) -> str:
        """Fetches."""
        await asyncio.sleep(0)
        raise ConnectionError(f"cannot reach {url}")

    return toolbox


def helper(a, b):
    return a / b


def test_the_record_keeps_the_traceback_and_the_model_reads_the_message(caplog):
    toolbox = failing_toolbox()
    with caplog.at_level(logging.ERROR, logger="atfunc"):
        turn = toolbox.run('@divide(1, 0) @fetch("http://x") @divide(4, 2)')
    divide, fetch, fine = turn.results
    assert divide["error"] == "ZeroDivisionError: division by zero"
    trace = divide["traceback"]
    assert trace.startswith("Traceback (most recent call last):")
    assert "in divide" in trace and "in helper" in trace and "return a / b" in trace
    assert trace.rstrip().endswith("ZeroDivisionError: division by zero")
    # The frames that only started the call are left out.
    assert "toolbox.py" not in trace
    assert "in fetch" in fetch["traceback"] and "ConnectionError" in fetch["traceback"]
    assert "traceback" not in fine and fine["result"] == 2.0
    # The model's text has the messages only.
    assert "Traceback" not in turn.text and "division by zero" in turn.text

    logged = [r for r in caplog.records if r.name == "atfunc"]
    assert [r.levelno for r in logged] == [logging.ERROR, logging.ERROR]
    by_tool = {r.getMessage().split("'")[1]: r for r in logged}
    assert set(by_tool) == {"divide", "fetch"}
    assert by_tool["divide"].exc_info[0] is ZeroDivisionError
    assert "division by zero" in by_tool["divide"].getMessage()


def test_a_streamed_answer_and_tool_calls_keep_it_too():
    toolbox = failing_toolbox()
    stream = toolbox.stream()
    [record] = stream.feed("@divide(1, 0)\n")
    assert "in helper" in record["traceback"]
    assert "in helper" in stream.finish().results[0]["traceback"]
    turn = toolbox.run_tool_calls([{"id": "c1", "type": "function", "function": {
        "name": "divide", "arguments": '{"a": 1, "b": 0}'}}])
    assert "in helper" in turn.results[0]["traceback"]
    assert turn.results[0]["call_id"] == "c1"


def test_a_refused_call_has_no_traceback():
    toolbox = failing_toolbox()
    [record] = toolbox.run('@divide("one", 0)').results
    assert "error" in record and "traceback" not in record


def test_a_confirmed_call_keeps_its_traceback():
    toolbox = atfunc.Toolbox()

    @toolbox.tool(confirm=True)
    def wipe(path: str) -> str:
        """Wipes a path."""
        raise PermissionError(path)

    [held] = toolbox.run('@wipe("/")').results
    record = toolbox.confirm(held["confirmation_id"])
    assert record["error"] == "PermissionError: /"
    assert "in wipe" in record["traceback"]
