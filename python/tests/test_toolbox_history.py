"""A toolbox remembers the calls of a conversation and leaves them out of the next
grammar, so a model cannot call the same thing turn after turn; no model needed."""

import asyncio

import pytest

import atfunc


def _toolbox():
    toolbox = atfunc.Toolbox()

    @toolbox.tool
    def get_weather(city: str, days: int = 1) -> dict:
        """Current weather of a city."""
        return {"city": city, "sky": "sunny"}

    @toolbox.tool
    def fails(x: int) -> int:
        raise ValueError("no")

    return toolbox


def test_the_calls_that_ran_are_remembered_in_order():
    toolbox = _toolbox()
    assert toolbox.history == []
    toolbox.run('@get_weather("Paris")')
    toolbox.run('Then @get_weather("Oslo", days=2) @nope(1) @fails(1)')
    # Only calls that returned: an unknown function or a failed call may be written again.
    assert toolbox.history == ['@get_weather("Paris")', '@get_weather("Oslo", days=2)']


def test_the_next_grammar_leaves_out_the_calls_already_made():
    toolbox = _toolbox()
    fresh = toolbox.grammar()
    assert fresh == atfunc.grammar(toolbox.tools)
    toolbox.run('@get_weather("Paris")')
    remembered = toolbox.grammar()
    assert remembered != fresh
    assert remembered == atfunc.grammar(toolbox.tools, not_again=['@get_weather("Paris")'])
    # A call given by the caller is left out too, with those of the history.
    both = toolbox.grammar(not_again=['@get_weather("Rome")'])
    assert both == atfunc.grammar(
        toolbox.tools, not_again=['@get_weather("Paris")', '@get_weather("Rome")']
    )


def test_clear_history_starts_a_new_conversation():
    toolbox = _toolbox()
    fresh = toolbox.grammar()
    toolbox.run('@get_weather("Paris")')
    toolbox.clear_history()
    assert toolbox.history == []
    assert toolbox.grammar() == fresh


def test_the_history_is_a_copy():
    toolbox = _toolbox()
    toolbox.run('@get_weather("Paris")')
    toolbox.history.clear()
    assert toolbox.history == ['@get_weather("Paris")']


@pytest.mark.parametrize("how", ["run_async", "stream", "run_tool_calls"])
def test_every_way_of_running_remembers(how):
    toolbox = _toolbox()
    if how == "run_async":
        asyncio.run(toolbox.run_async('@get_weather("Paris")'))
    elif how == "stream":
        stream = toolbox.stream()
        stream.feed('@get_weather("Pa')
        stream.feed('ris")')
        stream.finish()
    else:
        toolbox.run_tool_calls([{"id": "c1", "type": "function", "function": {
            "name": "get_weather", "arguments": '{"city": "Paris"}'}}])
    assert len(toolbox.history) == 1
    # However the call was written, it is the same call that is left out.
    assert toolbox.grammar() == atfunc.grammar(toolbox.tools, not_again=['@get_weather("Paris")'])
