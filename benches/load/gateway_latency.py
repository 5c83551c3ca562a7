"""Latency the gateway adds to streamed answers, and its peak memory, under N concurrent
clients.

    python3 benches/load/gateway_latency.py --bin target/release/atfunc

A loopback upstream (standard library only) streams the same answer to every request:
40 text pieces 5 ms apart, then a call. Each of N clients (threads) makes a fixed number
of streamed requests with tools, one after another, first straight to the upstream and
then through `atfunc serve`. For each request it notes the time to the first content byte
and to the end of the stream; the added latency is the gateway's figure minus the direct
one at the same percentile. Every loop is bounded: a fixed number of requests, each with
a timeout.
"""

import argparse
import json
import subprocess
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PIECES = 40
GAP = 0.005
TIMEOUT = 60

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


def event(delta, finish=None):
    chunk = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


class Server(ThreadingHTTPServer):
    # The default backlog of 5 drops connections when many clients start at once, and a
    # dropped SYN is retried a second later: that second would show in the figures.
    request_queue_size = 1024
    daemon_threads = True


class Upstream:
    def __init__(self):
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for i in range(PIECES):
                    if i:
                        time.sleep(GAP)
                    self.wfile.write(event({"content": "word%d " % i}))
                    self.wfile.flush()
                self.wfile.write(event({"content": '@get_weather(city="Paris")'}))
                self.wfile.write(event({}, "stop") + b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self.server = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]


def timed_request(url, body):
    """(seconds to the first content byte, seconds to the end of the stream)."""
    request = urllib.request.Request(url + "/v1/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    started = time.perf_counter()
    first = None
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        for line in response:
            if first is None and b'"content"' in line:
                first = time.perf_counter() - started
    return first, time.perf_counter() - started


def run(url, clients, requests):
    body = json.dumps({"model": "m", "stream": True, "tools": TOOLS,
                       "messages": [{"role": "user", "content": "Weather in Paris?"}]}).encode()
    results = []
    failures = []
    lock = threading.Lock()

    def client():
        for _ in range(requests):
            try:
                timing = timed_request(url, body)
            except OSError as error:
                with lock:
                    failures.append(error)
                continue
            with lock:
                results.append(timing)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT * requests)
    if failures:
        print("%d requests to %s failed, the first: %r" % (len(failures), url, failures[0]))
    return results


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def peak_mb(pid):
    with open("/proc/%d/status" % pid) as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default="target/release/atfunc")
    parser.add_argument("--clients", default="1,16,64")
    parser.add_argument("--requests", type=int, default=20, help="per client")
    args = parser.parse_args()
    upstream = Upstream()
    print("| clients | requests | first byte p50 / p99, direct (ms) | added p50 / p99 (ms) "
          "| end of stream p50 / p99, direct (ms) | added p50 / p99 (ms) | gateway peak (MB) |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for clients in [int(n) for n in args.clients.split(",")]:
        gateway = subprocess.Popen(
            [args.bin, "serve", "--upstream", upstream.url, "--listen", "127.0.0.1:0", "--no-detect",
             "--max-concurrent", str(max(64, clients))],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        line = gateway.stderr.readline()
        url = line.split("listening on ", 1)[1].split()[0]
        direct = run(upstream.url, clients, args.requests)
        through = run(url, clients, args.requests)
        peak = peak_mb(gateway.pid)
        gateway.terminate()
        gateway.wait(timeout=10)
        row = [clients, len(through)]
        for index in (0, 1):
            d = [t[index] * 1000 for t in direct]
            g = [t[index] * 1000 for t in through]
            row.append("%.1f / %.1f" % (percentile(d, 50), percentile(d, 99)))
            row.append("%.1f / %.1f" % (percentile(g, 50) - percentile(d, 50),
                                        percentile(g, 99) - percentile(d, 99)))
        row.append("%.1f" % peak)
        print("| " + " | ".join(str(v) for v in row) + " |", flush=True)


if __name__ == "__main__":
    main()
