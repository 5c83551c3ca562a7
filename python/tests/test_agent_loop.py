"""The agent loop of docs/python.md (examples/python/agent.py) without a model: a stand-in for the
`openai` client answers from a script, keeps the grammars and messages it was given, and
can make the weather tool hang."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import atfunc

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python" / "agent.py"

# A scripted answer "HANG <answer>" first makes the example's get_weather hang (its code is
# swapped for a sleep of an hour), then answers <answer>.
CLIENT = '''
import json, os, sys
from types import SimpleNamespace

class OpenAI:
    def __init__(self):
        self.chat = SimpleNamespace(completions=self)

    def create(self, model, messages, max_tokens, temperature, extra_body):
        with open(os.environ["ASKED"], "a") as log:
            log.write(json.dumps({"grammar": extra_body["grammar"], "messages": messages}) + "\\n")
        with open(os.environ["ASKED"]) as log:
            n = sum(1 for _ in log)
        content = json.loads(os.environ["ANSWERS"])[n - 1]
        if content.startswith("HANG "):
            hang = lambda city, days=1: __import__("time").sleep(3600)
            sys.modules["__main__"].get_weather.__code__ = hang.__code__
            content = content[len("HANG "):]
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=content))])
'''


def _run(tmp_path: Path, answers):
    (tmp_path / "openai.py").write_text(CLIENT)
    asked = tmp_path / "asked.jsonl"
    env = {**os.environ, "ANSWERS": json.dumps(answers), "ASKED": str(asked),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(EXAMPLE)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout, [json.loads(line) for line in asked.read_text().splitlines()]


def _tools():
    toolbox = atfunc.Toolbox()

    @toolbox.tool
    def get_weather(city: str, days: int = 1) -> dict:
        """Current weather of a city."""
        return {}

    @toolbox.tool
    def reply(text: str) -> str:
        """Answer the user in words, when no other tool is needed (a greeting, a thank-you, small talk)."""
        return text

    return toolbox.tools


def test_a_greeting_is_answered_without_a_tool(tmp_path: Path):
    out, asked = _run(tmp_path, ['@reply(text="Hi there!")',
                                 '@get_weather(city="Paris")', '@reply(text="Sunny.")'])
    # Every answer is calls only, with `reply` among them, so nothing forces a tool on a
    # greeting; the greeting's answer is the reply, and nothing else ran.
    assert asked[0]["grammar"] == atfunc.grammar(_tools(), choice="required", lead_in=0)
    assert out.startswith("> Hello!\nHi there!\n> What is the weather in Paris?\n"), out
    assert len(asked) == 3
    assert len(asked[1]["messages"]) == 2, "a new conversation: the prompt and the question"


def test_a_question_for_a_tool_calls_it_once(tmp_path: Path):
    out, asked = _run(tmp_path, ['@reply(text="Hi!")',
                                 '@get_weather(city="Paris")', '@get_weather(city="Paris")',
                                 '@reply(text="Sunny in Paris.")'])
    # Once the call ran, the next answer may not make the same call again: the grammar
    # leaves it out (a model that still writes it gets the binder's answer, not a rerun).
    assert asked[2]["grammar"] == atfunc.grammar(
        _tools(), choice="required", lead_in=0, not_again=['@get_weather(city="Paris")'])
    results = asked[2]["messages"][-1]["content"]
    assert "Function call: get_weather(" in results and '"sky":"sunny"' in results, results
    assert out.rstrip().endswith("Sunny in Paris."), out


def test_a_hung_tool_fails_after_its_time_limit_and_the_loop_goes_on(tmp_path: Path):
    started = time.monotonic()
    out, asked = _run(tmp_path, ['@reply(text="Hi!")',
                                 'HANG @get_weather(city="Paris")', '@reply(text="No weather now.")'])
    took = time.monotonic() - started
    # The example's toolbox gives a call 10 s: the hung call became an error the model read.
    results = asked[2]["messages"][-1]["content"]
    assert "Function call: get_weather(" in results and "10" in results, results
    assert "sunny" not in results, results
    assert out.rstrip().endswith("No weather now."), out
    assert 10 <= took < 60, took


def test_a_model_that_never_replies_ends_at_the_step_limit(tmp_path: Path):
    calls = [f'@get_weather(city="Paris", days={n})' for n in range(1, 5)]
    out, asked = _run(tmp_path, ['@reply(text="Hi!")', *calls])
    assert len(asked) == 5
    assert out.rstrip().endswith("(no reply)"), out
