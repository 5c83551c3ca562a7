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
        atfunc.Tools(bad, strict=True)
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
@pytest.mark.parametrize("described", [False, True])
def test_render_equals_the_cli(cli, separator, preamble, described):
    args = ["render", "--tools", DEMO_TOOLS]
    args += ["--separator"] if separator else []
    args += [] if preamble else ["--no-preamble"]
    args += ["--param-descriptions"] if described else []
    text = atfunc.render(
        DEMO_TOOLS, separator=separator, preamble=preamble, param_descriptions=described
    )
    assert text == cli(args)
    assert ("- location: City name\n" in text) == described


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
        ({"grounded_text": "Weather in Oslo? Use celsius."},
         ["--grounded-text", "Weather in Oslo? Use celsius."]),
        ({"grounded_numbers": "2 to the power of 10 or 3.5", "max_string_chars": 40,
          "max_list_items": 4},
         ["--grounded-numbers", "2 to the power of 10 or 3.5", "--max-string-chars", "40",
          "--max-list-items", "4"]),
        ({"choice": "weather.get_current_weather", "grounded_text": "Oslo", "continued": True,
          "not_again": ['@weather.get_current_weather("Oslo")',
                        '@weather.get_current_weather("Oslo", unit="celsius")']},
         ["--choice", "weather.get_current_weather", "--grounded-text", "Oslo", "--continued",
          "--not-again", '@weather.get_current_weather("Oslo")',
          "--not-again", '@weather.get_current_weather("Oslo", unit="celsius")']),
        ({"choice": "required", "form": "hermes"}, ["--choice", "required", "--form", "hermes"]),
        ({"choice": "required", "bare_strings": True}, ["--choice", "required", "--bare-strings"]),
    ],
)
def test_grammar_equals_the_cli(cli, options, args):
    expected = cli(["grammar", "--tools", DEMO_TOOLS, *args])
    assert atfunc.grammar(DEMO_TOOLS, **options) == expected


def test_a_form_is_atfunc_or_hermes():
    blocks = atfunc.grammar(DEMO_TOOLS, choice="required", form="hermes")
    assert "<tool_call>" in blocks and "@" not in blocks
    listed = atfunc.grammar(DEMO_TOOLS, choice="required", form="hermes-list")
    assert "```json" in listed and "<tool_call>" not in listed and "@" not in listed
    with pytest.raises(ValueError, match='form must be "atfunc", "hermes" or "hermes-list", not "json"'):
        atfunc.grammar(DEMO_TOOLS, form="json")


def test_grammar_errors_name_the_functions():
    with pytest.raises(atfunc.GrammarError, match="weather.get_current_weather"):
        atfunc.grammar(DEMO_TOOLS, choice="no.such")


def test_calls_left_out_are_read_and_bound():
    # The one call the question's words allow left out, and the units too: nothing left.
    every = ['@weather.get_current_weather("Oslo")',
             '@weather.get_current_weather("Oslo", "celsius")',
             '@WEATHER.get_current_weather(location="Oslo", unit="fahrenheit")']
    with pytest.raises(atfunc.GrammarError, match=r"left out \(not_again\)"):
        atfunc.grammar(DEMO_TOOLS, choice="weather.get_current_weather",
                       grounded_text="Oslo", not_again=every)
    with pytest.raises(ValueError, match=r"not_again: @weather.get_current_weather\(town=1\): "
                       r"The call of function .* has 2 problems:\n- Unknown parameter 'town'"):
        atfunc.grammar(DEMO_TOOLS, not_again=["@weather.get_current_weather(town=1)"])
    with pytest.raises(ValueError, match="not_again: no call in"):
        atfunc.grammar(DEMO_TOOLS, not_again=["Oslo"])


def test_a_required_key_that_is_no_property_is_refused_when_strict():
    bad = [{"name": "a.f", "parameters": {"type": "object",
            "properties": {"x": {"type": "string"}}, "required": ["y"]}}]
    with pytest.raises(atfunc.ToolsError) as caught:
        atfunc.Tools(bad, strict=True)
    assert caught.value.problems == [
        "Validation failed for function 'f' in toolbox 'a': 'parameters.required' names 'y', "
        "which is not one of its properties: describe it under 'parameters.properties' "
        "or drop it from 'required'"
    ]
    with pytest.warns(UserWarning, match="the requirement is left out"):
        tools = atfunc.Tools(bad)
    assert tools.names == ["a.f"]


def test_a_boolean_with_string_choices_loads_with_a_warning_and_binds_each_choice():
    real = [{"name": "Hotels_2_SearchHouse", "parameters": {"type": "object", "properties": {
        "has_laundry_service": {"type": "boolean", "enum": ["True", "False", "dontcare"],
                                "default": "dontcare"}}}}]
    # The choices that spell booleans are booleans: a boolean arrives as one, never as the
    # text "True", which a tool reads as true whatever it says.
    with pytest.warns(UserWarning, match='it is read as any with the choices true, false, "dontcare"'):
        tools = atfunc.Tools(real)
    calls = atfunc.parse(
        '@Hotels_2_SearchHouse(has_laundry_service="dontcare") '
        "@Hotels_2_SearchHouse(has_laundry_service=True) "
        '@Hotels_2_SearchHouse(has_laundry_service="False")',
        tools,
    )
    assert [c["args"] for c in calls] == [
        {"has_laundry_service": "dontcare"},
        {"has_laundry_service": True},
        {"has_laundry_service": False},
    ]
    with pytest.raises(atfunc.ToolsError, match=r"Parameter 'has_laundry_service' is boolean"):
        atfunc.Tools(real, strict=True)


def test_a_root_that_is_no_toolbox_is_refused_naming_the_toolboxes():
    with pytest.raises(atfunc.ToolsError) as caught:
        atfunc.Tools(TOOLS, root="nope")
    assert caught.value.problems == [
        "root 'nope' is not a toolbox of these tools; the toolboxes are: weather, math"
    ]
    # As the CLI's --root-toolbox: regardless of case, spelt as the definitions spell it.
    assert atfunc.Tools(TOOLS, root="Weather").root == "weather"
    with pytest.raises(atfunc.ToolsError, match="these tools have no toolbox"):
        atfunc.Tools([{"name": "f", "parameters": {"type": "object"}}], root="f")


def test_a_str_that_is_no_json_says_a_path_is_a_pathlib_path():
    with pytest.raises(atfunc.ToolsError) as caught:
        atfunc.Tools("no-such-dir/tools.json")
    message = str(caught.value)
    assert "not valid JSON" in message and "pathlib.Path" in message


@pytest.mark.parametrize(
    "name,call",
    [
        ("lead_in", lambda: atfunc.grammar(TOOLS, lead_in=-1)),
        ("any_depth", lambda: atfunc.grammar(TOOLS, any_depth=-1)),
        ("max_string_chars", lambda: atfunc.grammar(TOOLS, max_string_chars=-1)),
        ("limit", lambda: atfunc.truncate("text", -1)),
        ("limit", lambda: atfunc.fit_json([1], -1)),
        ("limit", lambda: atfunc.format_results([], limit=-1)),
        ("threads", lambda: atfunc.parse_jsonl(["{}"], threads=-1)),
        ("first_line", lambda: atfunc.parse_jsonl(["{}"], first_line=-1)),
        ("threads", lambda: atfunc.parse_arrow(["@a.b()"], threads=-2)),
    ],
)
def test_a_negative_count_is_a_value_error_naming_it(name, call):
    with pytest.raises(ValueError, match=f"^{name} must be 0 or more, got -"):
        call()


def test_tools_give_back_their_definitions_and_compare_equal(tmp_path):
    tools = atfunc.Tools(TOOLS)
    assert tools.definitions() == TOOLS
    assert atfunc.Tools(tools.definitions()) == tools
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"tools": TOOLS}))
    from_file = atfunc.Tools(path)
    assert from_file.definitions() == TOOLS
    assert from_file == tools and hash(from_file) == hash(tools)
    assert atfunc.Tools(TOOLS[:1]) != tools
    assert atfunc.Tools(TOOLS, root="weather") != tools
    assert tools != TOOLS
