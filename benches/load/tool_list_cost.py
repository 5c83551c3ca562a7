"""What a long tool list costs `atfunc serve` a request: sent again and again (as agents
send the same list with every request of a conversation), and new with every request,
beside the same request without tools.

    python3 benches/load/tool_list_cost.py --bin target/release/atfunc --tools 200

A loopback upstream of this script's own (a process of its own, threads, kept-alive
connections, TCP_NODELAY) answers every request at once: a short streamed answer of
prose, or a whole one. One client on one kept-alive connection (a socket that writes each
request whole and reads the whole answer) makes its requests one after another, in
blocks of BLOCK requests per case, the cases taking turns until each has made REQUESTS,
so that the machine's load weighs on all alike:

- `no tools`: the conversation without `tools`, passed through;
- `same list`: with the same TOOLS tools every time;
- `new list`: with the same tools, one byte of the first tool's description changed in
  every request, so that no list is ever seen twice: what every request cost before the
  gateway kept the lists it read.

With `--distinct N`, it sends N lists it never saw and prints the gateway's resident
memory every 40, to check the bound on what it keeps.

Each case runs against `atfunc serve` (plain) and `atfunc serve --constrain
--call-threshold off` (a grammar of all the tools in every request, not weighed first).
Figures: each request's time from its first byte written to its answer's last byte read
(p50 / p90, ms), and the gateway's CPU time per request (the time its threads ran, from
/proc's schedstat, over the case's blocks). Every loop is bounded: a fixed number of
requests, each with a timeout.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import time

import harness

TIMEOUT = 30


# ------------------------------------------------------------------------ the upstream


def event(delta, finish=None):
    body = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


STREAM = b"".join([event({"role": "assistant", "content": ""}),
                   event({"content": "It is sunny "}), event({"content": "in Paris."}),
                   event({}, "stop"), b"data: [DONE]\n\n"])
WHOLE = json.dumps({
    "id": "x", "object": "chat.completion", "created": 1, "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "It is sunny in Paris."}}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
}).encode()




def serve_upstream(port_file):
    """The upstream: the same short answer, whole or streamed, to every request."""

    def answer(conn, body):
        # Not parsed: parsing a long prompt here would weigh on the figures.
        streamed = b'"stream":true' in body or b'"stream": true' in body
        if streamed:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(STREAM), STREAM))
        else:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(WHOLE), WHOLE))

    harness.serve_forever(port_file, answer, backlog=128)


class Gateway(harness.Gateway):
    """The harness's gateway, which can tell the CPU time it has used."""

    def cpu_seconds(self):
        # The time each of its threads ran, in ns (schedstat), rather than /proc's stat,
        # whose clock ticks of 10 ms are too coarse for a few hundred requests.
        total = 0
        folder = "/proc/%d/task" % self.process.pid
        for task in os.listdir(folder):
            try:
                with open(os.path.join(folder, task, "schedstat")) as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError):
                pass
        return total / 1e9


# ------------------------------------------------------------------------ the requests


def tool(i, variant=None):
    """A tool of the kind agents list: a description, a few parameters of each kind."""
    description = "Looks up records of kind %d in the team's tracker and returns them." % i
    if variant is not None:
        description += " (%d)" % variant
    return {"type": "function", "function": {
        "name": "tracker_lookup_%d" % i,
        "description": description,
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "description": "Words the records must contain."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100,
                      "description": "Most records returned."},
            "status": {"type": "string", "enum": ["open", "closed", "any"]},
            "filters": {"type": "object", "properties": {
                "owner": {"type": "string"}, "since": {"type": "string", "format": "date"}}},
            "fields": {"type": "array", "items": {"type": "string"}}},
            "required": ["query"]}}}


MESSAGES = [{"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What is the weather in Paris?"}]


def body(case, count, i):
    request = {"model": "m", "messages": MESSAGES, "stream": False}
    if case == "same list":
        request["tools"] = SAME[count]
    elif case == "new list":
        request["tools"] = [tool(0, variant=i)] + SAME[count][1:]
    return json.dumps(request).encode()


SAME = {}


class RawClient:
    """One kept-alive connection; each request written whole, the answer read whole."""

    def __init__(self, url):
        host, port = url.split("//", 1)[1].split(":")
        self.host = "%s:%s" % (host, port)
        self.sock = socket.create_connection((host, int(port)), timeout=TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffered = b""

    def ask(self, payload):
        request = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: "
                   b"application/json\r\nContent-Length: %d\r\n\r\n%s"
                   % (self.host.encode(), len(payload), payload))
        start = time.perf_counter()
        self.sock.sendall(request)
        status, length, chunked = self.read_head()
        if chunked:
            self.read_chunked()
        else:
            self.read_exactly(length)
        took = time.perf_counter() - start
        if status != 200:
            raise RuntimeError("status %d" % status)
        return took

    def fill(self):
        data = self.sock.recv(1 << 16)
        if not data:
            raise RuntimeError("the connection closed")
        self.buffered += data

    def read_head(self):
        while b"\r\n\r\n" not in self.buffered:
            self.fill()
        head, self.buffered = self.buffered.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        length, chunked = 0, False
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
        return status, length, chunked

    def read_exactly(self, length):
        while len(self.buffered) < length:
            self.fill()
        data, self.buffered = self.buffered[:length], self.buffered[length:]
        return data

    def read_chunked(self):
        while True:
            while b"\r\n" not in self.buffered:
                self.fill()
            size_line, self.buffered = self.buffered.split(b"\r\n", 1)
            size = int(size_line.split(b";")[0], 16)
            self.read_exactly(size + 2)
            if size == 0:
                return


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def measure(binary, upstream, args, counts, requests, block):
    gateway = Gateway(binary, upstream.url, args)
    try:
        client = RawClient(gateway.url)
        cases = [("no tools", 0)] + [(case, count) for count in counts
                                     for case in ("same list", "new list")]
        # Each case once before the figures: the first request of a list reads it.
        for case, count in cases:
            client.ask(body(case, count, -1))
        times = {key: [] for key in cases}
        cpu = {key: 0.0 for key in cases}
        serial = 0
        while any(len(times[key]) < requests for key in cases):
            for key in cases:
                before = gateway.cpu_seconds()
                for _ in range(block):
                    serial += 1
                    times[key].append(client.ask(body(key[0], key[1], serial)))
                cpu[key] += gateway.cpu_seconds() - before
        return {key: (times[key], cpu[key] / len(times[key])) for key in cases}
    finally:
        gateway.stop()


def resident_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def distinct(binary, upstream, count, lists):
    """The gateway's resident memory as it is sent `lists` lists it never saw."""
    gateway = Gateway(binary, upstream.url, ["--constrain", "--call-threshold", "off"])
    try:
        client = RawClient(gateway.url)
        for i in range(5):
            client.ask(body("no tools", 0, i))
        print("before: %d kB" % resident_kb(gateway.process.pid))
        for i in range(lists):
            client.ask(body("new list", count, i))
            if (i + 1) % 40 == 0 or i + 1 == lists:
                print("after %d lists of %d tools: %d kB" % (
                    i + 1, count, resident_kb(gateway.process.pid)))
    finally:
        gateway.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default="target/release/atfunc")
    parser.add_argument("--tools", default="200", help="tool counts, comma separated")
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--block", type=int, default=20)
    parser.add_argument("--distinct", type=int, default=0,
                        help="instead: send this many new lists of the largest count to "
                             "`atfunc serve --constrain` and print its memory every 40")
    parser.add_argument("--serve-upstream", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_upstream:
        serve_upstream(args.serve_upstream)
        return
    counts = [int(count) for count in args.tools.split(",")]
    for count in counts:
        SAME[count] = [tool(i) for i in range(count)]
        size = len(json.dumps(SAME[count]))
        print("%d tools: %d bytes of `tools`" % (count, size))
    upstream = harness.Upstream(__file__)
    if args.distinct:
        try:
            distinct(args.bin, upstream, max(counts), args.distinct)
        finally:
            upstream.stop()
        return
    try:
        print("| gateway | tools | case | p50 / p90 (ms) | added to `no tools`, p50 (ms) | "
              "gateway CPU a request (µs) |")
        print("|---|---:|---|---:|---:|---:|")
        for name, extra in (("plain", []), ("--constrain", ["--constrain", "--call-threshold", "off"])):
            figures = measure(args.bin, upstream, extra, counts, args.requests, args.block)
            base = percentile(figures[("no tools", 0)][0], 50)
            for (case, count), (times, cpu) in figures.items():
                p50, p90 = percentile(times, 50), percentile(times, 90)
                print("| %s | %s | %s | %.2f / %.2f | %s | %.0f |" % (
                    name, count or "", case, p50 * 1e3, p90 * 1e3,
                    "" if case == "no tools" else "%.2f" % ((p50 - base) * 1e3), cpu * 1e6))
                sys.stdout.flush()
    finally:
        upstream.stop()


if __name__ == "__main__":
    main()
