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


def test_a_question_for_a_tool_calls_it_once(tmp_path: Path):
    out, grammars = _run(tmp_path, ['@get_weather("Paris")', "Sunny in Paris."])
    assert grammars[0] == atfunc.grammar(_tools(), choice="required")
    # The next answer may not make the same call again.
    assert grammars[1] == atfunc.grammar(_tools(), not_again=['@get_weather("Paris")'])
    assert len(grammars) == 2
    assert "Function call: get_weather(" in out and '"sky":"sunny"' in out, out
    assert out.rstrip().endswith("Sunny in Paris.")
