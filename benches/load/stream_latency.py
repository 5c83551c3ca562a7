"""What `atfunc serve` adds to a streamed answer, one client at a time, for clients that
keep their connection open (the way curl, wrk and most HTTP libraries do), and how it
passes on pieces that an upstream sends a few milliseconds apart.

    python3 benches/load/stream_latency.py --bin before=atfunc-before --bin after=target/release/atfunc

Each `--bin NAME=PATH` is a gateway binary; all are measured in the same run, in turns
(the order of the binaries alternates from one repeat to the next), against the same
upstream, and beside the upstream itself ("direct"). The upstream is a small server of
this script's own, in a process of its own: it answers a streamed request with PIECES
events of content, each holding the time it was written (`t=<CLOCK_MONOTONIC ns>;`),
either all at once (`--pace 0`) or one every PACE ms, then a finish and `[DONE]`; a
request that is not streamed (the gateway's weighing under `--constrain`) gets one token
with its log probabilities. It keeps its connections alive and sets TCP_NODELAY, so that
what it sends leaves at once.

Modes: `pass-through` (a request without tools), `tools` (with tools, `tool_choice`
auto), `constrain` (the same under `atfunc serve --constrain`: the gateway weighs the
first token, one more request, and sends a grammar).

Clients, each on one kept-alive connection, one request after another:
- `raw`: a blocking socket that writes each request whole and reads the chunked answer
  as it comes: the time to the first content byte and to the end of the stream.
- `curl`: one `curl` process making REQUESTS transfers on one connection:
  `time_starttransfer` (the response head) and `time_total`.
- `openai`: the `openai` Python client (httpx), streamed: first content chunk and end.
The `raw` and `openai` clients hold one connection to each target and take turns, one
request to each, so that the machine's load at any moment weighs on all targets alike;
`curl` measures one target after another.
- `wrk`: `wrk -t1 -cC` with a POST script for `--wrk-duration` seconds: requests per
  second and latency percentiles (C = 1 and `--wrk-connections`).

With `--paces`, the figure is each piece's delay: when the raw client had it, minus when
the upstream wrote it (both read CLOCK_MONOTONIC on the same machine), the client's
requests to one target back to back.

Every loop is bounded: a fixed number of requests, each with a timeout.
"""

import argparse
import json
import os
import re
import select
import socket
import subprocess
import sys
import tempfile
import time

from harness import Gateway, Upstream, serve_forever

PIECES = 20
TIMEOUT = 30
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
MODES = {
    "pass-through": ([], {}),
    "tools": ([], {"tools": TOOLS}),
    "constrain": (["--constrain"], {"tools": TOOLS}),
}


# ------------------------------------------------------------------------ the upstream


def chunk(data):
    return b"%x\r\n%s\r\n" % (len(data), data)


def event(delta, finish=None):
    body = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


ONE_TOKEN = json.dumps({
    "id": "x", "object": "chat.completion", "created": 1, "model": "m",
    "choices": [{"index": 0, "finish_reason": "length",
                 "message": {"role": "assistant", "content": "I"},
                 "logprobs": {"content": [{"token": "I", "logprob": -0.01, "top_logprobs": [
                     {"token": "I", "logprob": -0.01}, {"token": "@", "logprob": -6.0}]}]}}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
}).encode()

HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n")


def serve_upstream(port_file, pace):
    """The upstream: one thread per connection, each kept alive; a streamed answer's
    pieces `pace` ms apart (all at once for 0)."""

    def answer(conn, body):
        try:
            streamed = json.loads(body).get("stream") is True
        except ValueError:
            streamed = False
        if not streamed:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(ONE_TOKEN), ONE_TOKEN))
            return
        end = chunk(event({}, "stop") + b"data: [DONE]\n\n") + b"0\r\n\r\n"
        if pace == 0:
            pieces = [chunk(event({"content": "t=%d;" % time.monotonic_ns()}))
                      for _ in range(PIECES)]
            conn.sendall(HEAD + b"".join(pieces) + end)
            return
        conn.sendall(HEAD)
        for i in range(PIECES):
            if i:
                time.sleep(pace / 1000)
            conn.sendall(chunk(event({"content": "t=%d;" % time.monotonic_ns()})))
        conn.sendall(end)

    serve_forever(port_file, answer, backlog=1024)


# ------------------------------------------------------------------------ the clients


def request_bytes(url, body):
    host = url.split("//", 1)[1]
    return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: "
            b"application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (host.encode(), len(body), body))


class RawClient:
    """One kept-alive connection; each request written whole, the answer read as it comes."""

    def __init__(self, url):
        host, port = url.split("//", 1)[1].split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=TIMEOUT)
        self.url = url

    def close(self):
        self.sock.close()

    def ask(self, body):
        """(seconds to the first content byte, seconds to the end, [piece delays in s])."""
        self.sock.sendall(request_bytes(self.url, body))
        started = time.perf_counter()
        first = None
        delays = []
        data = b""
        head = None
        body_bytes = b""  # de-chunked
        seen = 0  # how much of body_bytes was searched for pieces
        while True:
            ready, _, _ = select.select([self.sock], [], [], TIMEOUT)
            if not ready:
                raise TimeoutError("no answer")
            got = self.sock.recv(65536)
            now_ns = time.monotonic_ns()
            if not got:
                raise ConnectionError("closed")
            data += got
            if head is None:
                if b"\r\n\r\n" not in data:
                    continue
                head, data = data.split(b"\r\n\r\n", 1)
                if b" 200 " not in head.split(b"\r\n", 1)[0]:
                    raise RuntimeError(head.decode(errors="replace"))
            # De-chunk what is whole.
            done = False
            while True:
                line_end = data.find(b"\r\n")
                if line_end < 0:
                    break
                size = int(data[:line_end].split(b";")[0], 16)
                if len(data) < line_end + 2 + size + 2:
                    break
                body_bytes += data[line_end + 2:line_end + 2 + size]
                data = data[line_end + 2 + size + 2:]
                if size == 0:
                    done = True
                    break
            if first is None and b"t=" in body_bytes:
                first = time.perf_counter() - started
            for match in re.finditer(rb"t=(\d+);", body_bytes[seen:]):
                delays.append((now_ns - int(match.group(1))) / 1e9)
            cut = body_bytes.rfind(b";")
            if cut >= seen:
                seen = cut + 1
            if done:
                return first, time.perf_counter() - started, delays


def curl_runs(url, body, requests):
    with tempfile.NamedTemporaryFile("wb", suffix=".json", delete=False) as f:
        f.write(body)
    args = ["curl", "-s", "--max-time", str(TIMEOUT * requests)]
    for i in range(requests):
        if i:
            args.append("--next")
        args += ["-o", "/dev/null", "-H", "Content-Type: application/json",
                 "--data-binary", "@" + f.name, "-w", "%{time_starttransfer} %{time_total}\n",
                 url + "/v1/chat/completions"]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    os.unlink(f.name)
    return [(float(a), float(b), []) for a, b in (line.split() for line in out.splitlines())]


class OpenAIClient:
    """The `openai` client on its kept-alive connection, streamed."""

    def __init__(self, url):
        import openai

        self.client = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0,
                                    timeout=TIMEOUT)

    def close(self):
        self.client.close()

    def ask(self, body):
        params = json.loads(body)
        params.pop("stream")
        started = time.perf_counter()
        first = None
        for part in self.client.chat.completions.create(stream=True, **params):
            if first is None and part.choices and part.choices[0].delta.content:
                first = time.perf_counter() - started
        return first, time.perf_counter() - started, []


def interleaved(kind, urls, body, requests):
    """`requests` requests to each of `urls` by clients of `kind`, one client (and
    connection) per URL, taking turns request by request so that the machine's load at
    any moment weighs on every URL alike: {url: [(first, end, delays)]}."""
    clients = {url: kind(url) for url in urls}
    runs = {url: [] for url in urls}
    try:
        for i in range(requests):
            turn = urls[i % len(urls):] + urls[:i % len(urls)]
            for url in turn:
                runs[url].append(clients[url].ask(body))
    finally:
        for client in clients.values():
            client.close()
    return runs


def cpu_seconds(pid):
    """User and system CPU time a process has used so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wrk_run(url, body, connections, duration):
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
                "wrk.body = %s\n" % json.dumps(body.decode()))
    out = subprocess.run(
        ["wrk", "-t1", "-c%d" % connections, "-d%ds" % duration, "--latency", "-s", f.name,
         url + "/v1/chat/completions"], capture_output=True, text=True, check=True,
        timeout=duration + 30).stdout
    os.unlink(f.name)
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))

    def ms(label):
        found = re.search(r"\s%s\s+([\d.]+)(us|ms|s)\b" % label, out)
        if not found:
            return float("nan")
        value, unit = float(found.group(1)), found.group(2)
        return value * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]

    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors or "Socket errors" in out:
        print("wrk saw errors:\n" + out, file=sys.stderr)
    done = int(re.search(r"(\d+) requests in", out).group(1))
    return rate, ms("50%"), ms("90%"), ms("99%"), done


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def body_for(mode):
    extra = MODES[mode][1]
    return json.dumps({"model": "m", "stream": True, "max_tokens": 50,
                       "messages": [{"role": "user", "content": "Weather in Paris?"}],
                       **extra}).encode()


CLIENTS = {"raw": RawClient, "openai": OpenAIClient}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", action="append", default=[], help="NAME=PATH")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--requests", type=int, default=100, help="per client and cell")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--clients", default="raw,curl,openai")
    parser.add_argument("--paces", default="2,10", help="ms between pieces; 0 for none")
    parser.add_argument("--wrk-duration", type=int, default=5)
    parser.add_argument("--wrk-connections", type=int, default=64)
    parser.add_argument("--serve-upstream")
    parser.add_argument("--pace", type=float, default=0)
    args = parser.parse_args()
    if args.serve_upstream:
        serve_upstream(args.serve_upstream, args.pace)
        return
    if not args.bin:
        parser.error("give at least one --bin NAME=PATH")
    binaries = [tuple(b.split("=", 1)) for b in args.bin]
    modes = args.modes.split(",")
    clients = [c for c in args.clients.split(",") if c]

    # Unpaced: what the gateway adds to the first content byte and to the end.
    upstream = Upstream(__file__, "--pace", "0")
    cells = {}  # (mode, client, target) -> [(first, end, delays)]
    wrk_cells = {}  # (mode, connections, target) -> [(rate, p50, p90, p99)]
    try:
        for repeat in range(args.repeats):
            order = binaries if repeat % 2 == 0 else binaries[::-1]
            for mode in modes:
                body = body_for(mode)
                targets = [("direct", upstream.url, None)]
                for name, path in order:
                    targets.append((name, None, Gateway(path, upstream.url, MODES[mode][0])))
                try:
                    for client in clients:
                        urls = [url or gateway.url for _, url, gateway in targets]
                        if client == "curl":
                            runs = {u: curl_runs(u, body, args.requests) for u in urls}
                        else:
                            runs = interleaved(CLIENTS[client], urls, body, args.requests)
                        for (name, _, _), url in zip(targets, urls):
                            cells.setdefault((mode, client, name), []).extend(runs[url])
                    if args.wrk_duration:
                        for connections in sorted({1, args.wrk_connections}):
                            for name, url, gateway in targets:
                                used = cpu_seconds(gateway.process.pid) if gateway else 0
                                figures = wrk_run(url or gateway.url, body, connections,
                                                  args.wrk_duration)
                                if gateway:
                                    used = cpu_seconds(gateway.process.pid) - used
                                # The gateway's CPU time per request it answered.
                                figures += (used / max(figures[4], 1),)
                                wrk_cells.setdefault((mode, connections, name), []).append(
                                    figures)
                finally:
                    for _, _, gateway in targets:
                        if gateway:
                            gateway.stop()
    finally:
        upstream.stop()

    names = ["direct"] + [name for name, _ in binaries]
    print("\n### Concurrency 1, upstream answers at once (%d requests x %d repeats a cell)\n"
          % (args.requests, args.repeats))
    print("| mode | client | " + " | ".join(
        "%s first p50 / p90 (ms)" % n for n in names) + " | " + " | ".join(
        "%s end p50 / p90 (ms)" % n for n in names) + " |")
    print("|---|---|" + "---:|" * (2 * len(names)))
    for mode in modes:
        for client in clients:
            row = [mode, client]
            for index in (0, 1):
                for name in names:
                    values = [r[index] * 1000 for r in cells[(mode, client, name)]
                              if r[index] is not None]
                    row.append("%.2f / %.2f" % (percentile(values, 50), percentile(values, 90)))
            print("| " + " | ".join(row) + " |")
    if wrk_cells:
        print("\n### wrk (%d s a run x %d repeats): requests/s (mean), latency p50 / p90 / p99 "
              "(ms, median of the runs), the gateway's CPU time a request (us, mean)\n"
              % (args.wrk_duration, args.repeats))
        print("| mode | connections | " + " | ".join(names) + " |")
        print("|---|---:|" + "---:|" * len(names))
        for mode in modes:
            for connections in sorted({1, args.wrk_connections}):
                row = [mode, str(connections)]
                for name in names:
                    runs = wrk_cells[(mode, connections, name)]
                    rate = sum(r[0] for r in runs) / len(runs)
                    p = [percentile([r[i] for r in runs], 50) for i in (1, 2, 3)]
                    cell = "%.0f/s, %.2f / %.2f / %.2f" % (rate, *p)
                    if name != "direct":
                        cell += ", %.0f us" % (sum(r[5] for r in runs) / len(runs) * 1e6)
                    row.append(cell)
                print("| " + " | ".join(row) + " |")

    # Paced: each piece's delay from the upstream's write to the raw client's read.
    paces = [float(p) for p in args.paces.split(",") if p]
    if not paces:
        return
    print("\n### Paced upstream: each piece's delay, upstream write to client read "
          "(raw client, concurrency 1, %d requests x %d repeats)\n" % (args.requests, args.repeats))
    print("| pace (ms) | mode | " + " | ".join(
        "%s p50 / p90 / max (ms)" % n for n in names) + " |")
    print("|---:|---|" + "---:|" * len(names))
    for pace in paces:
        upstream = Upstream(__file__, "--pace", str(pace))
        delays = {}
        try:
            for repeat in range(args.repeats):
                order = binaries if repeat % 2 == 0 else binaries[::-1]
                for mode in [m for m in modes if m != "constrain"]:
                    body = body_for(mode)
                    targets = [("direct", upstream.url, None)]
                    for name, path in order:
                        targets.append((name, None, Gateway(path, upstream.url, MODES[mode][0])))
                    try:
                        # One target after another, each client's requests back to
                        # back, as a client streaming answer after answer: turns taken
                        # with other targets would leave each connection idle between
                        # its requests, and the client's stack acknowledges the first
                        # pieces after an idle spell at once, hiding what a busy
                        # connection meets.
                        for name, url, gateway in targets:
                            client = RawClient(url or gateway.url)
                            try:
                                for _ in range(args.requests // 4 or 1):
                                    delays.setdefault((mode, name), []).extend(
                                        client.ask(body)[2])
                            finally:
                                client.close()
                    finally:
                        for _, _, gateway in targets:
                            if gateway:
                                gateway.stop()
        finally:
            upstream.stop()
        for mode in [m for m in modes if m != "constrain"]:
            row = ["%g" % pace, mode]
            for name in names:
                values = [d * 1000 for d in delays[(mode, name)]]
                row.append("%.2f / %.2f / %.2f" % (percentile(values, 50), percentile(values, 90),
                                                   max(values)))
            print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
