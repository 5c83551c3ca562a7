"""The README's agent loop (examples/python/agent.py) without a model: a stand-in for the
`openai` client answers from a script and keeps the grammars it was given."""

import json
import os
import subprocess
import sys
from pathlib import Path

import atfunc

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python" / "agent.py"

CLIENT = '''
import json, os
from types import SimpleNamespace

class OpenAI:
    def __init__(self):
        self.chat = SimpleNamespace(completions=self)

    def create(self, model, messages, max_tokens, extra_body):
        with open(os.environ["ASKED"], "a") as log:
            log.write(json.dumps(extra_body["grammar"]) + "\\n")
        with open(os.environ["ASKED"]) as log:
            n = sum(1 for _ in log)
        content = json.loads(os.environ["ANSWERS"])[n - 1]
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=content))])
'''


def _run(tmp_path: Path, answers):
    (tmp_path / "openai.py").write_text(CLIENT)
    asked = tmp_path / "asked.jsonl"
    env = {**os.environ, "ANSWERS": json.dumps(answers), "ASKED": str(asked),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(EXAMPLE)], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout, [json.loads(line) for line in asked.read_text().splitlines()]


def _tools():
    toolbox = atfunc.Toolbox()

    @toolbox.tool
    def get_weather(city: str, days: int = 1) -> dict:
        """Current weather of a city."""
        return {}

    return toolbox.tools


def test_a_greeting_gets_a_text_answer(tmp_path: Path):
    out, grammars = _run(tmp_path, ["none", "Hello! How can I help?"])
    assert grammars[0] == 'root ::= "get_weather" | "none"'
    # No call is forced: the answer is asked for under the `auto` grammar.
    assert grammars[1] == atfunc.grammar(_tools(), choice="auto")
    assert len(grammars) == 2
    assert out.strip() == "Hello! How can I help?"


def test_a_question_for_a_tool_calls_it_once(tmp_path: Path):
    out, grammars = _run(tmp_path, ["get_weather", '@get_weather("Paris")', "Sunny in Paris."])
    assert grammars[1] == atfunc.grammar(_tools(), choice="get_weather")
    # The next answer may not make the same call again.
    assert grammars[2] == atfunc.grammar(_tools(), not_again=['@get_weather("Paris")'])
    assert "Function call: get_weather(" in out and '"sky":"sunny"' in out, out
    assert out.rstrip().endswith("Sunny in Paris.")
