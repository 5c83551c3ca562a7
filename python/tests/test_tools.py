"""Tools in every form; ToolsError lists every problem; render and grammar equal the CLI."""

import json
from pathlib import Path

import pytest

import atfunc
from conftest import DEMO_TOOLS, TOOLS


def test_every_form_loads_the_same_tools(tmp_path):
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(TOOLS))
    forms = [TOOLS, json.dumps(TOOLS), path, {"tools": TOOLS}, atfunc.Tools(TOOLS)]
    names = [atfunc.Tools(form).names if not isinstance(form, atfunc.Tools) else form.names
             for form in forms]
    assert names == [["weather.get", "math.power"]] * len(forms)
    prompts = {atfunc.render(form) for form in forms}
    assert len(prompts) == 1


def test_tools_error_lists_every_problem():
    bad = [
        {"name": "a b", "parameters": {"type": "object"}},
        {"name": "ok.fn", "parameters": {"type": "object",
                                         "properties": {"x": {"type": "nonsense"}}}},
        {"name": "ok.fn2", "parameters": {"type": "object",
                                          "properties": {"y": {"type": "strange"}}}},
    ]
    with pytest.raises(atfunc.ToolsError) as caught:
        atfunc.Tools(bad)
    problems = caught.value.problems
    assert len(problems) >= 2
    message = str(caught.value)
    assert message.startswith(f"invalid tools ({len(problems)} problem(s)):")
    for problem in problems:
        assert problem in message
    assert isinstance(caught.value, ValueError)


def test_bad_json_and_files_say_where(tmp_path):
    with pytest.raises(atfunc.ToolsError, match="not valid JSON"):
        atfunc.parse("@a.b()", "[{")
    path = tmp_path / "tools.json"
    path.write_text('[{"name": "a b"}]')
    with pytest.raises(atfunc.ToolsError, match=f"^{path}: invalid tools file"):
        atfunc.render(path)
    with pytest.raises(atfunc.ToolsError, match=r"to read the file .*, pass pathlib.Path"):
        atfunc.Tools(str(DEMO_TOOLS))
    with pytest.raises(OSError, match="cannot read tools file"):
        atfunc.Tools(tmp_path / "missing.json")
    with pytest.raises(TypeError, match="cannot be written as JSON"):
        atfunc.Tools([object()])


def test_tools_pickle_as_their_definitions(tmp_path):
    import pickle

    path = tmp_path / "tools.json"
    path.write_text(json.dumps(TOOLS))
    tools = atfunc.Tools(path, root="weather")
    path.unlink()
    again = pickle.loads(pickle.dumps(tools))
    assert again.names == tools.names and again.root == "weather"
    assert atfunc.render(again) == atfunc.render(tools)


def test_root_toolbox_drops_the_prefix():
    tools = atfunc.Tools(TOOLS, root="weather")
    assert tools.root == "weather"
    assert "@get( <*city>" in atfunc.render(tools)
    assert atfunc.parse('@get("Oslo")', tools)[0]["name"] == "weather.get"
    assert len(tools) == 2 and "weather.get" in repr(tools)


@pytest.mark.parametrize("separator", [False, True])
@pytest.mark.parametrize("preamble", [False, True])
def test_render_equals_the_cli(cli, separator, preamble):
    args = ["render", "--tools", DEMO_TOOLS]
    args += ["--separator"] if separator else []
    args += [] if preamble else ["--no-preamble"]
    assert atfunc.render(DEMO_TOOLS, separator=separator, preamble=preamble) == cli(args)


@pytest.mark.parametrize("fmt", ["openai", "mcp"])
def test_api_formats_equal_the_cli(cli, fmt):
    expected = cli(["render", "--tools", DEMO_TOOLS, "--format", fmt])
    assert atfunc.render(DEMO_TOOLS, format=fmt) == expected
    assert json.loads(expected)


def test_unknown_formats_and_clashes_are_reported():
    with pytest.raises(ValueError, match="use atfunc, openai or mcp"):
        atfunc.render(TOOLS, format="yaml")
    clashing = [{"name": "a.b_c", "parameters": {"type": "object"}},
                {"name": "a_b.c", "parameters": {"type": "object"}}]
    with pytest.warns(UserWarning):
        tools = json.loads(atfunc.render(clashing, format="openai"))
    assert len(tools) == 1


@pytest.mark.parametrize(
    "options,args",
    [
        ({}, []),
        ({"choice": "required", "single": True}, ["--choice", "required", "--single"]),
        ({"choice": "none"}, ["--choice", "none"]),
        ({"choice": "math.calculate_power"}, ["--choice", "math.calculate_power"]),
    ],
)
def test_grammar_equals_the_cli(cli, options, args):
    expected = cli(["grammar", "--tools", DEMO_TOOLS, *args])
    assert atfunc.grammar(DEMO_TOOLS, **options) == expected


def test_grammar_errors_name_the_functions():
    with pytest.raises(atfunc.GrammarError, match="weather.get_current_weather"):
        atfunc.grammar(DEMO_TOOLS, choice="no.such")
