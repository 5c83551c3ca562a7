"""Fixtures: the scripted upstream, `atfunc serve` in front of it, and OpenAI clients.

The `atfunc` binary is named by the ATFUNC_BIN environment variable (crates/atfunc-cli/tests/serve/gateway.rs
sets it to the binary cargo built).
"""

import os
import queue
import subprocess
import sys
import threading

import openai
import pytest

sys.path.insert(0, os.path.dirname(__file__))

from scripted_upstream import Upstream  # noqa: E402

# Under CI a skipped test fails (tests/pytest_ci.py); the workspace's shared test helpers
# (pytest_ci, llama_server) are in tests/ at its root.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "tests"))
from pytest_ci import pytest_runtest_makereport  # noqa: E402,F401

START_TIMEOUT = 20


class Gateway:
    """A running `atfunc serve`."""

    def __init__(self, upstream_url, args=(), env=None):
        binary = os.environ.get("ATFUNC_BIN")
        if not binary:
            raise RuntimeError("set ATFUNC_BIN to the atfunc binary")
        # The scripted upstream records every request and answers each POST with the next
        # reply: the gateway's own probes of it would count among them.
        command = [binary, "serve", "--upstream", upstream_url, "--listen", "127.0.0.1:0",
                   "--no-detect", *args]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        self.log = []
        lines = queue.Queue()

        def drain():
            for line in self.process.stderr:
                self.log.append(line)
                lines.put(line)
            lines.put(None)

        threading.Thread(target=drain, daemon=True).start()
        self.url = None
        while self.url is None:
            try:
                line = lines.get(timeout=START_TIMEOUT)
            except queue.Empty:
                self.stop()
                raise RuntimeError("atfunc serve did not start: " + "".join(self.log))
            if line is None:
                raise RuntimeError("atfunc serve exited: " + "".join(self.log))
            marker = "listening on "
            if marker in line:
                self.url = line.split(marker, 1)[1].split()[0]

    def client(self, api_key="unused", **kwargs):
        return openai.OpenAI(base_url=self.url + "/v1", api_key=api_key, max_retries=0, **kwargs)

    def alive(self):
        return self.process.poll() is None

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="session")
def upstream_server():
    server = Upstream()
    yield server
    server.close()


@pytest.fixture
def upstream(upstream_server):
    """The scripted upstream, with no requests recorded and no replies left over."""
    upstream_server.reset()
    yield upstream_server
    upstream_server.reset()


@pytest.fixture(scope="session")
def gateway(upstream_server):
    """A gateway with the default options but a short upstream timeout."""
    running = Gateway(upstream_server.url, ["--upstream-timeout", "2"])
    yield running
    running.stop()


@pytest.fixture
def start_gateway(upstream_server):
    """Starts a gateway with extra arguments; stopped when the test ends."""
    started = []

    def start(*args, env=None):
        running = Gateway(upstream_server.url, args, env)
        started.append(running)
        return running

    yield start
    for running in started:
        running.stop()


@pytest.fixture
def client(gateway, upstream):
    return gateway.client()
