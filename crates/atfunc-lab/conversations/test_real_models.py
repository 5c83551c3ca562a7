"""A few conversations with the real models, through `atfunc serve` with no flag but the
upstream, as the benchmark runs them: each model served by llama-cpp-python under its own
chat template (tests/llama_server.py), the loop run by the `openai` client.

The tasks are the ones each model must keep right under the gateway's conversation
policy (docs/gateway.md): Qwen2.5-Coder-0.5B looks up, converts and answers in words;
SmolLM2-135M, which almost never calls, must at least end a conversation that needs no
tool without looping to the cap. The binary is named by ATFUNC_BIN (tests/run.sh sets it);
under CI a missing model or server fails the test (tests/pytest_ci.py).
"""

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[2] / "tests"))

import run  # noqa: E402
from llama_server import qwen_server, smollm2_server  # noqa: E402,F401 (the fixtures)
from pytest_ci import pytest_runtest_makereport  # noqa: E402,F401

QWEN_TASKS = ["dev-weather-lisbon", "dev-note-groceries", "dev-none-hello"]
SMOLLM2_TASKS = ["dev-none-hello", "dev-none-thanks"]


class Gateway:
    """`atfunc serve --upstream URL` on a free port, stopped on exit."""

    def __init__(self, upstream: str):
        binary = os.environ.get("ATFUNC_BIN")
        if not binary:
            pytest.fail("set ATFUNC_BIN to the atfunc binary (tests/run.sh does)")
        self.process = subprocess.Popen(
            [binary, "serve", "--upstream", upstream, "--listen", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in self.process.stderr], daemon=True).start()
        self.url = None
        while self.url is None:
            line = lines.get(timeout=30)
            if "listening on " in line:
                self.url = line.split("listening on ")[1].split()[0]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.process.terminate()
        self.process.wait(timeout=10)


def _run(server, model: str, tasks: list[str], out: Path) -> list[dict]:
    with Gateway(server.url) as gateway:
        argv = ["--base-url", gateway.url + "/v1", "--model", model, "--set", "dev", "--out", str(out),
                "--timeout", "300"]
        for task in tasks:
            argv += ["--task", task]
        assert run.main(argv) == 0
    server.check_alive("during the conversations")
    return json.loads(out.read_text())["tasks"]


def test_qwen_ends_its_conversations_right(qwen_server, tmp_path):
    records = _run(qwen_server, "qwen2.5-coder-0.5b-instruct", QWEN_TASKS, tmp_path / "qwen.json")
    assert [r["id"] for r in records] == QWEN_TASKS
    for record in records:
        assert record["right"], (record["id"], record["verdict"], record["messages"])


def test_smollm2_ends_a_conversation_that_needs_no_tool(smollm2_server, tmp_path):
    records = _run(smollm2_server, "smollm2-135m-instruct", SMOLLM2_TASKS, tmp_path / "smollm2.json")
    for record in records:
        assert record["ended"] and record["effects_ok"], (record["id"], record["verdict"], record["messages"])
