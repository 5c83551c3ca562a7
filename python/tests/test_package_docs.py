"""What `help(atfunc)` and a toolbox's prompt tell."""

import pydoc

import atfunc


def test_help_names_the_toolbox():
    text = pydoc.render_doc(atfunc, renderer=pydoc.plaintext)
    description = text.split("PACKAGE CONTENTS")[0]
    assert "Toolbox" in description, description


def test_the_prompt_has_the_docstrings_parameter_descriptions():
    toolbox = atfunc.Toolbox()

    @toolbox.tool
    def get_weather(city: str, days: int = 1) -> dict:
        """Current weather of a city.

        Args:
            city: the city's English name
            days: how many days ahead
        """
        return {}

    prompt = toolbox.prompt()
    assert "- city: the city's English name" in prompt, prompt
    assert "- days: how many days ahead" in prompt, prompt
    # Asked not to, it leaves them out.
    assert "English name" not in toolbox.prompt(param_descriptions=False)
