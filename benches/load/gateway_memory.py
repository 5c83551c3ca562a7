"""Peak memory of `atfunc serve` under big requests and big answers.

    python3 benches/load/gateway_memory.py --bin target/release/atfunc

Starts a loopback upstream (standard library only) and the gateway in front of it, runs
each scenario against a fresh gateway, and prints the gateway's peak resident memory
(VmHWM) and what stays resident afterwards (VmRSS). Every loop is bounded: a fixed number
of requests, each with a timeout.

Scenarios:
- one_big_request: one 8 MB request with tools, the tool half a long description and
  half an array of small numbers.
- crowd_of_big_requests: 40 such requests at once against --max-concurrent 4.
- big_answer: an upstream answer of 600k calls (13.8 MB), whole and streamed; counts the
  bytes sent to the client.
- failed_repair: a streamed answer of 600k calls that do not bind (15.6 MB), one repair
  round that fails the same way; counts the bytes sent to the client.
- executed_reads: an executed turn (`--config --execute`, a file box) whose answer makes
  250, 500, 1,000 and 1,500 calls that each read a different 1 MB file (hard links to
  one), then answers "Done."; a fresh gateway for each, the answer asked for whole.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REQUEST_BYTES = 8_000_000
TIMEOUT = 120


def big_request(stream=False):
    """8 MB: a tool whose description is a 4 MB string and whose parameter lists 4 MB of
    small numbers (`enum`-free, as an example list the schema carries)."""
    numbers = "[" + ",".join(["7"] * (REQUEST_BYTES // 2 // 2)) + "]"
    text = "x" * (REQUEST_BYTES // 2)
    body = (
        '{"model": "m", "stream": ' + ("true" if stream else "false") + ', "messages": '
        '[{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": '
        '{"name": "f", "description": "' + text + '", "parameters": {"type": "object", '
        '"properties": {"n": {"type": "integer", "examples": ' + numbers + '}}}}}]}'
    )
    return body.encode()


class Server(ThreadingHTTPServer):
    # The default backlog of 5 drops connections when many clients start at once, and a
    # dropped SYN is retried a second later: that second would show in the figures.
    request_queue_size = 1024
    daemon_threads = True


class Upstream:
    """Answers each chat completion with `self.answer` (text), whole or as a stream."""

    def __init__(self):
        self.answer = "Hello."
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length))
                text = upstream.answer(request) if callable(upstream.answer) else upstream.answer
                if request.get("stream"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    step = 4096
                    for at in range(0, len(text), step):
                        chunk = {"choices": [{"index": 0, "delta": {"content": text[at:at + step]},
                                              "finish_reason": None}]}
                        self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                    end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                    self.wfile.write(b"data: " + json.dumps(end).encode() + b"\n\ndata: [DONE]\n\n")
                    self.close_connection = True
                    return
                body = json.dumps({"id": "x", "object": "chat.completion", "created": 1,
                                   "model": "m", "choices": [{"index": 0, "finish_reason": "stop",
                                   "message": {"role": "assistant", "content": text}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]


class Gateway:
    def __init__(self, binary, upstream, *args):
        self.process = subprocess.Popen(
            [binary, "serve", "--upstream", upstream, "--listen", "127.0.0.1:0", "--no-detect",
             "--max-request-bytes", str(9 << 20), "--max-response-bytes", str(32 << 20), *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        line = self.process.stderr.readline()
        if "listening on " not in line:
            raise RuntimeError("atfunc serve did not start: " + line)
        self.url = line.split("listening on ", 1)[1].split()[0]
        threading.Thread(target=lambda: [None for _ in self.process.stderr], daemon=True).start()

    def memory(self):
        """(peak, resident) in MB."""
        fields = {}
        with open("/proc/%d/status" % self.process.pid) as status:
            for line in status:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        kb = lambda key: int(fields[key].split()[0])
        return kb("VmHWM") / 1024, kb("VmRSS") / 1024

    def post(self, body):
        """(status, bytes received)."""
        request = urllib.request.Request(self.url + "/v1/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                received = 0
                while True:
                    piece = response.read(1 << 16)
                    if not piece:
                        return response.status, received
                    received += len(piece)
        except urllib.error.HTTPError as error:
            return error.code, len(error.read())
        except TimeoutError:
            return "timed out after %d s" % TIMEOUT, 0
        except (urllib.error.URLError, ConnectionError):
            # Refused (503) before the whole body was read: the gateway closed the
            # connection while the body was still being sent.
            return "closed while sending", 0

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def report(name, gateway, extra=""):
    time.sleep(2)
    peak, resident = gateway.memory()
    print("%-26s peak %7.1f MB   resident after %7.1f MB   %s" % (name, peak, resident, extra),
          flush=True)


def one_big_request(binary, upstream):
    gateway = Gateway(binary, upstream.url)
    status, _ = gateway.post(big_request())
    report("one_big_request", gateway, "status %d" % status)
    gateway.stop()


def crowd_of_big_requests(binary, upstream, clients=40, limit=4):
    gateway = Gateway(binary, upstream.url, "--max-concurrent", str(limit))
    body = big_request()
    statuses = []
    threads = [threading.Thread(target=lambda: statuses.append(gateway.post(body)[0]))
               for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
    counts = {s: statuses.count(s) for s in sorted(set(statuses), key=str)}
    report("crowd_of_big_requests", gateway, "statuses %s" % counts)
    gateway.stop()


TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {
    "type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}},
    "required": ["n"]}}}]


def big_answer(binary, upstream, calls=600_000):
    # 23 bytes a call, 13.8 MB in all.
    upstream.answer = '@f(n=1, s="abcdefghi")\n' * calls
    for stream in (False, True):
        gateway = Gateway(binary, upstream.url, "--repair-rounds", "0")
        body = json.dumps({"model": "m", "stream": stream, "tools": TOOLS,
                           "messages": [{"role": "user", "content": "hi"}]}).encode()
        status, received = gateway.post(body)
        report("big_answer" + (" streamed" if stream else ""), gateway,
               "status %d, %.1f MB answer, %.1f MB sent" % (
                   status, len(upstream.answer) / 1e6, received / 1e6))
        gateway.stop()
    upstream.answer = "Hello."


def failed_repair(binary, upstream, calls=600_000):
    # `n` must be an integer: every call is refused, the repair round too.
    # 26 bytes a call, 15.6 MB in all.
    upstream.answer = '@f(n="x", s="abcdefghij")\n' * calls
    gateway = Gateway(binary, upstream.url, "--repair-rounds", "1")
    body = json.dumps({"model": "m", "stream": True, "tools": TOOLS,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    status, received = gateway.post(body)
    report("failed_repair streamed", gateway, "status %d, %.1f MB answer, %.1f MB sent" % (
        status, len(upstream.answer) / 1e6, received / 1e6))
    gateway.stop()
    upstream.answer = "Hello."


def executed_reads(binary, upstream, counts=(250, 500, 1000, 1500)):
    folder = tempfile.mkdtemp(prefix="atfunc-reads-")
    try:
        root = os.path.join(folder, "files")
        os.mkdir(root)
        line = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ ........\n"
        big = os.path.join(root, "big.txt")
        with open(big, "w") as out:
            out.write(line * (1_000_000 // len(line)))
        for i in range(max(counts)):
            os.link(big, os.path.join(root, "copy%d.txt" % i))
        config = os.path.join(folder, "tools.json")
        with open(config, "w") as out:
            json.dump({"toolboxes": [{"name": "file", "kind": "file", "root": root}]}, out)
        for calls in counts:
            reads = "Reading.\n" + "".join('@file.readfile("copy%d.txt")\n' % i for i in range(calls))
            # The results come back in a user message of result blocks: then it is done.
            upstream.answer = lambda request: (
                "Done." if request["messages"][-1]["content"].startswith("Function call:") else reads)
            gateway = Gateway(binary, upstream.url, "--config", config, "--execute")
            body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
            status, received = gateway.post(body)
            report("executed_reads %d" % calls, gateway,
                   "status %s, %.1f MB sent" % (status, received / 1e6))
            gateway.stop()
    finally:
        upstream.answer = "Hello."
        shutil.rmtree(folder, ignore_errors=True)


SCENARIOS = {f.__name__: f for f in (one_big_request, crowd_of_big_requests, big_answer, failed_repair,
                                     executed_reads)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default="target/release/atfunc")
    parser.add_argument("scenarios", nargs="*", default=list(SCENARIOS))
    args = parser.parse_args()
    upstream = Upstream()
    for name in args.scenarios:
        SCENARIOS[name](args.bin, upstream)


if __name__ == "__main__":
    main()
