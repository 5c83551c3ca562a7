"""The Python agent loop of docs/python.md (examples/python/agent.py, shown verbatim) runs against a real small model: llama-cpp-python's server with
Qwen2.5-Coder-0.5B-Instruct under its own template. It answers the greeting with `reply`
and the weather question with `get_weather`, then `reply`. (SmolLM2-135M is too small for
the choice: it calls get_weather for "Hello!" too.)"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llama_server import qwen_server  # noqa: F401 (the fixture)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "python" / "agent.py"


def test_the_documentation_shows_the_example_verbatim():
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    example = EXAMPLE.read_text()
    for page in [REPO / "docs" / "python.md"]:
        blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
        assert example in blocks, f"{page.name}'s agent example differs from examples/python/agent.py"
    # Any other page that shows the loop (it opens as the example does) shows it whole.
    opening = "\n".join(example.splitlines()[:4])
    for page in pages:
        for block in re.findall(r"```python\n(.*?)```", page.read_text(), re.S):
            if block.startswith(opening):
                assert block == example, f"{page.name} shows another agent loop than examples/python/agent.py"


def test_the_agent_example_runs_against_a_real_model(qwen_server):  # noqa: F811
    pytest.importorskip("openai", reason="the openai client is not installed (pip install -r crates/atfunc-cli/tests/gateway/requirements.txt)")
    env = {**os.environ, "OPENAI_BASE_URL": qwen_server.url + "/v1", "OPENAI_API_KEY": "unused"}
    try:
        done = subprocess.run([sys.executable, str(EXAMPLE)], env=env, capture_output=True,
                              text=True, timeout=600, cwd=REPO)
    except Exception:
        qwen_server.check_alive("during the example")
        raise
    qwen_server.check_alive("during the example")
    assert done.returncode == 0, done.stderr
    greeting, weather = done.stdout.split("> What is the weather in Paris?\n")
    # The greeting got words, not a tool's result; the question got the tool's result,
    # put in words by the model (its reply names what the tool returned).
    assert greeting.startswith("> Hello!\n") and "(no reply)" not in greeting, done.stdout
    assert "sunny" not in greeting.lower(), done.stdout
    assert "sunny" in weather.lower() or "21" in weather, done.stdout
