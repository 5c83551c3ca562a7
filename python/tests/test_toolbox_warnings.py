"""`Toolbox`: what a tool definition leaves out or gets wrong. One rule for the whole
package: what can be read is read, with a `UserWarning` saying what was worked around, and
`strict=True` (`Toolbox(strict=True)`, `Tools(..., strict=True)`) makes it a `ToolsError`."""

import functools
import warnings

import pytest

import atfunc


def added(toolbox, *args, **kwargs):
    """`add_tool`, with the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        toolbox.add_tool(*args, **kwargs)
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def test_a_lambda_without_a_docstring_or_hints_is_warned_of_by_name():
    said = added(atfunc.Toolbox(), lambda city: city, name="weather.get")
    [message] = said
    assert "'weather.get'" in message
    assert "docstring" in message and "type hints" in message and "'city'" in message


def test_an_undocumented_function_is_warned_of_and_so_are_untyped_parameters():
    def lookup(word: str, limit=3):
        return word

    [message] = added(atfunc.Toolbox(), lookup)
    assert "'lookup'" in message and "docstring" in message
    assert "'limit'" in message and "'word'" not in message


def test_a_documented_typed_function_and_a_partial_of_one_are_not_warned_of():
    def lookup(word: str, limit: int = 3) -> str:
        """Looks a word up."""
        return word

    toolbox = atfunc.Toolbox()
    assert added(toolbox, lookup) == []
    assert added(toolbox, functools.partial(lookup, limit=5), name="lookup5") == []
    # A description given stands for the docstring, `args` for the hints.
    assert added(toolbox, lambda q: q, name="q", description="Asks.",
                 args={"q": {"type": "string"}}) == []


def test_the_warning_points_at_the_line_that_added_the_tool():
    toolbox = atfunc.Toolbox()
    with pytest.warns(UserWarning, match="docstring") as caught:
        toolbox.add_tool(lambda x: x, name="f")
    assert caught[0].filename == __file__


def strng_by_args(toolbox):
    return added(toolbox, lambda city: city, name="weather.get", description="Weather.",
                 args={"city": {"type": "strng"}})


def strng_by_hint(toolbox):
    def get(city: "strng") -> str:  # noqa: F821 (the misspelling is the test)
        """Weather."""
        return city

    return added(toolbox, get, name="weather.get")


@pytest.mark.parametrize("define", [strng_by_args, strng_by_hint], ids=["args", "hint"])
def test_an_unknown_type_is_a_warning_and_any_value_then_an_error_when_strict(define):
    toolbox = atfunc.Toolbox()
    said = define(toolbox)
    # Named as the loader names it ("function 'get' in toolbox 'weather'") or as added.
    assert any("'strng'" in m and ("weather.get" in m or "toolbox 'weather'" in m) for m in said), said
    # Read as any value, as `Tools` reads it.
    [record] = toolbox.run('@weather.get(city=7)').results
    assert record["result"] == 7, record

    strict = atfunc.Toolbox(strict=True)
    with pytest.raises(atfunc.ToolsError, match="strng") as raised:
        define(strict)
    assert raised.value.problems
    assert strict.tools.names == []


def test_tools_read_the_same_definition_the_same_way():
    definition = [{"name": "weather.get", "description": "Weather.", "parameters": {
        "type": "object", "properties": {"city": {"type": "strng"}}}}]
    with pytest.warns(UserWarning, match="strng"):
        atfunc.Tools(definition)
    with pytest.raises(atfunc.ToolsError, match="strng"):
        atfunc.Tools(definition, strict=True)


def test_a_warning_is_said_once_not_again_at_each_tool_added_after():
    toolbox = atfunc.Toolbox()
    assert len(strng_by_args(toolbox)) == 1

    def other(n: int) -> int:
        """Another tool."""
        return n

    assert added(toolbox, other) == []


@pytest.mark.parametrize("strict", [False, True])
def test_a_name_given_twice_is_refused_whatever_the_strictness(strict):
    toolbox = atfunc.Toolbox(strict=strict)

    def first(n: int) -> int:
        """First."""
        return n

    def second(n: int) -> int:
        """Second."""
        return -n

    toolbox.add_tool(first, name="f")
    with pytest.raises(atfunc.ToolsError):
        toolbox.add_tool(second, name="f")
    assert toolbox.run("@f(2)").results[0]["result"] == 2
