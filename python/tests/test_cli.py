"""The `atfunc` command the package installs: the binary's command line, run by the
extension module. Each test runs the installed script as a user would and compares it with
the binary cargo built (the `cli` fixture)."""

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import atfunc

from conftest import DEMO_TOOLS, REPO

# How long a started `atfunc serve` may take to say where it listens, and to stop once
# signalled: only a bound on a hang, never a measurement.
BOUND = 60


def installed_command() -> str:
    """The `atfunc` script pip put beside this interpreter."""
    script = Path(sys.executable).with_name("atfunc")
    assert script.exists(), (
        f"no atfunc command beside {sys.executable}: the package installs one "
        "([project.scripts] in python/pyproject.toml)"
    )
    return str(script)


def run(args, stdin=b"", command=None):
    return subprocess.run(
        [*(command or [installed_command()]), *map(str, args)],
        input=stdin,
        capture_output=True,
        cwd=REPO,
    )


def binary(args, stdin=b""):
    """The binary's own answer (status, stdout, stderr), from the `ATFUNC_BIN` or the one
    cargo built."""
    done = subprocess.run(
        [os.environ.get("ATFUNC_BIN") or str(REPO / "target" / "debug" / "atfunc"), *map(str, args)],
        input=stdin,
        capture_output=True,
        cwd=REPO,
    )
    return done.returncode, done.stdout, done.stderr


def test_version_is_the_packages(cli):
    done = run(["--version"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == f"atfunc {atfunc.__version__}\n"
    assert done.stdout.decode() == cli(["--version"])


def test_python_m_atfunc_is_the_command_too():
    done = run(["--version"], command=[sys.executable, "-m", "atfunc"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == f"atfunc {atfunc.__version__}\n"


def test_parse_reads_stdin_and_prints_what_the_binary_prints(cli):
    completion = 'Sure: @weather.get_current_weather("Oslo") and @weather.nope(1)'.encode()
    done = run(["parse", "--tools", DEMO_TOOLS], stdin=completion)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == cli(["parse", "--tools", DEMO_TOOLS], stdin=completion)
    records = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert records[0]["args"] == {"location": "Oslo"}
    assert "error" in records[1]


@pytest.mark.parametrize(
    "args",
    [
        ["no-such-command"],
        ["parse", "--tools", "no/such/file.json"],
        ["check", "--tools", str(REPO / "python" / "pyproject.toml")],
    ],
    ids=["unknown-command", "missing-file", "not-tools"],
)
def test_failures_exit_and_say_what_the_binary_does(args):
    done = run(args)
    status, _, stderr = binary(args)
    assert status != 0
    assert done.returncode == status
    assert done.stderr.decode().replace(installed_command(), "atfunc") == stderr.decode()
    assert done.stdout == b""


class Upstream(BaseHTTPRequestHandler):
    """A model server that answers every chat completion with one call."""

    def do_POST(self):  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps({
            "id": "c1", "object": "chat.completion", "created": 0, "model": "tiny",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant", "content": '@get_weather("Paris")'}}],
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def upstream():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def start_serve(upstream_url):
    """`atfunc serve` from the installed command, and the URL it listens on."""
    process = subprocess.Popen(
        [installed_command(), "serve", "--upstream", upstream_url, "--listen", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: "queue.Queue[str | None]" = queue.Queue()

    def drain():
        for line in process.stderr:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=drain, daemon=True).start()
    said = []
    while True:
        try:
            line = lines.get(timeout=BOUND)
        except queue.Empty:
            process.kill()
            pytest.fail("atfunc serve did not say where it listens: " + "".join(said))
        if line is None:
            pytest.fail("atfunc serve exited: " + "".join(said))
        said.append(line)
        if "listening on " in line:
            return process, line.split("listening on ", 1)[1].split()[0]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_answers_and_stops_cleanly_on_a_signal(upstream, stop):
    process, url = start_serve(upstream)
    try:
        with urllib.request.urlopen(url + "/health", timeout=BOUND) as answer:
            assert answer.read() == b"ok"
        request = urllib.request.Request(
            url + "/v1/chat/completions",
            data=json.dumps({
                "model": "tiny",
                "messages": [{"role": "user", "content": "Weather in Paris?"}],
                "tools": [{"type": "function", "function": {
                    "name": "get_weather", "parameters": {
                        "type": "object", "properties": {"city": {"type": "string"}},
                        "required": ["city"]}}}],
            }).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=BOUND) as answer:
            message = json.loads(answer.read())["choices"][0]["message"]
        [call] = message["tool_calls"]
        assert call["function"]["name"] == "get_weather"
        assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}
        process.send_signal(stop)
        # The server's own handler stops it: a clean exit, not death by the signal and
        # not a Python traceback.
        assert process.wait(timeout=BOUND) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_ends_a_command_that_reads_stdin_as_it_ends_the_binary():
    """Python would turn SIGINT into a KeyboardInterrupt raised only once the command
    returned, which a command waiting on stdin never does: the script gives the signal its
    default action back, as the binary has it."""
    binary_path = os.environ.get("ATFUNC_BIN") or str(REPO / "target" / "debug" / "atfunc")
    statuses = []
    for command in (installed_command(), binary_path):
        process = subprocess.Popen(
            [command, "parse", "--tools", str(DEMO_TOOLS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            process.stdin.write(b'@weather.get_current_weather("Oslo")\n')
            process.stdin.flush()
            # The call's record is printed as soon as it is read: the command is running
            # and waits on stdin, which stays open.
            assert b'"location":"Oslo"' in process.stdout.readline()
            process.send_signal(signal.SIGINT)
            statuses.append(process.wait(timeout=BOUND))
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            process.stdin.close()
            process.stdout.close()
    assert statuses == [-signal.SIGINT, -signal.SIGINT]
