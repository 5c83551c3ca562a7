"""Peak memory of `atfunc serve` and of the CLI on tool schemas that expand: `$ref`s that
multiply, `$ref`s that copy large definitions, a flat object of 2,000 optional fields, and a
6.4 MB tools request.

    python3 benches/load/schema_memory.py --bin target/release/atfunc [SCENARIO ...]

Gateway scenarios start a loopback upstream (standard library only, from
gateway_memory.py) and a fresh `atfunc serve` in front of it, send the request, read the
gateway's peak resident memory (VmHWM) from /proc, then send a normal request with tools
and check it is answered 200. CLI scenarios run the command under `/usr/bin/time -v`.
Every run is bounded: a watchdog stops a process past --cap-mb of resident memory or
--timeout seconds (reported as "stopped"), so a binary that blows up cannot take the
machine with it.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gateway_memory import Gateway, Upstream  # noqa: E402


def tool(name, parameters, description=""):
    return {"type": "function", "function": {"name": name, "description": description,
                                             "parameters": parameters}}


def multiplying(name="bomb", fields=10):
    """One object whose `fields` properties each refer to the object itself."""
    props = {"p%d" % i: {"$ref": "#/$defs/D"} for i in range(fields)}
    return [tool(name, {"type": "object", "$defs": {"D": {"type": "object", "properties": props}},
                        "properties": {"root": {"$ref": "#/$defs/D"}}})]


def fanning_out(name="fan"):
    """Ten levels of definitions, each referring ten times to the next: 10^10 schemas
    written out. Not recursion, so it is refused by the limits, not read as open."""
    defs = {"L%d" % level: {"type": "object", "properties": {
        "p%d" % i: {"$ref": "#/$defs/L%d" % (level + 1)} for i in range(10)}} for level in range(10)}
    defs["L10"] = {"type": "string"}
    return [tool(name, {"type": "object", "$defs": defs, "properties": {"root": {"$ref": "#/$defs/L0"}}})]


def copying(name="copies"):
    """Three levels of ten references ending in a 27 KB definition: 1,000 copies of it,
    within the old budget of 1,000 expansions. About 31 KB of JSON."""
    big = {"type": "string", "enum": ["c%05d" % i for i in range(3000)]}
    level = lambda target: {"type": "object",
                            "properties": {"p%d" % i: {"$ref": "#/$defs/" + target} for i in range(10)}}
    defs = {"A": level("B"), "B": level("C"), "C": level("Big"), "Big": big}
    return [tool(name, {"type": "object", "$defs": defs, "properties": {"root": {"$ref": "#/$defs/A"}}})]


def flat(fields=2000):
    """One object of `fields` optional string fields: about 60 KB."""
    props = {"field_%04d" % i: {"type": "string"} for i in range(fields)}
    return [tool("flat", {"type": "object", "properties": props})]


def big_tools(tools=4950):
    """About 6.4 MB of ordinary tools: 4,950 functions of 10 described parameters."""
    out = []
    for t in range(tools):
        props = {"param_%d" % p: {"type": ["string", "integer", "number", "boolean"][p % 4],
                                  "description": "What parameter %d of tool %d means, in a sentence or so." % (p, t)}
                 for p in range(10)}
        out.append(tool("toolbox_%d.function_%d" % (t % 50, t), {"type": "object", "properties": props,
                                                                   "required": ["param_0"]},
                        "Does thing number %d for the user, as this sentence says." % t))
    return out


def chat(tools, **extra):
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools}
    body.update(extra)
    return json.dumps(body).encode()


NORMAL = chat([tool("get_weather", {"type": "object", "properties": {"city": {"type": "string"}},
                                    "required": ["city"]})])


def watch(pid, cap_mb, deadline, stopped):
    """Stops `pid` past `cap_mb` resident or past `deadline`."""
    while True:
        try:
            with open("/proc/%d/status" % pid) as status:
                rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))
        except (OSError, StopIteration):
            return
        if rss > cap_mb * 1024 or time.time() > deadline:
            stopped.append("%d MB" % (rss // 1024) if rss > cap_mb * 1024 else "time")
            os.kill(pid, 9)
            return
        time.sleep(0.05)


def gateway_run(binary, upstream, cap_mb, timeout, bodies, args=()):
    gateway = Gateway(binary, upstream.url, *args)
    stopped = []
    threading.Thread(target=watch, args=(gateway.process.pid, cap_mb, time.time() + timeout, stopped),
                     daemon=True).start()
    started = time.time()
    results = []
    threads = [threading.Thread(target=lambda b=b: results.append(gateway.post(b)[0])) for b in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    took = time.time() - started
    if gateway.process.poll() is not None:
        gateway.process.wait()
        peak = "stopped (%s)" % (stopped[0] if stopped else "exit %s" % gateway.process.returncode)
        after = "gateway gone"
    else:
        peak = "%.1f MB" % gateway.memory()[0]
        after = "next request %s" % gateway.post(NORMAL)[0]
    gateway.stop()
    return "peak %s, %.1f s, statuses %s, %s" % (peak, took, sorted(results, key=str), after)


def cli_run(binary, cap_mb, timeout, args, stdin=None):
    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    started = time.time()
    process = subprocess.Popen(["/usr/bin/time", "-v", binary, *args], stdin=stdin, stdout=out, stderr=err)
    stopped = []
    # The watchdog looks at the command itself, the child of `time`.
    time.sleep(0.05)
    children = subprocess.run(["pgrep", "-P", str(process.pid)], capture_output=True, text=True).stdout.split()
    if children:
        threading.Thread(target=watch, args=(int(children[0]), cap_mb, time.time() + timeout, stopped),
                         daemon=True).start()
    process.wait()
    took = time.time() - started
    out.seek(0)
    err.seek(0)
    printed = len(out.read())
    text = err.read().decode(errors="replace")
    peak = next((int(line.split()[-1]) / 1024 for line in text.splitlines()
                 if "Maximum resident set size" in line), 0)
    message = next((line for line in text.splitlines() if line.startswith("atfunc")), "")
    status = ("stopped (%s)" % stopped[0]) if stopped else "exit %s" % next(
        (line.split()[-1] for line in text.splitlines() if "Exit status" in line), "?")
    return "peak %.1f MB, %.1f s, %s, printed %.1f MB %s" % (peak, took, status, printed / 1e6, message[:160])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default="target/release/atfunc")
    parser.add_argument("--cap-mb", type=int, default=3000)
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--new", action="store_true",
                        help="the binary has --constrain-per-request (the fixed gateway)")
    parser.add_argument("scenarios", nargs="*")
    args = parser.parse_args()
    upstream = Upstream()
    folder = tempfile.mkdtemp()

    def write(name, value):
        path = os.path.join(folder, name)
        with open(path, "w") as f:
            f.write(value if isinstance(value, str) else json.dumps(value))
        return path

    bomb_file = write("bomb.json", multiplying())
    bomb50_file = write("bomb50.json", multiplying(fields=50))
    fan_file = write("fan.json", fanning_out())
    copies_file = write("copies.json", copying())
    flat_file = write("flat.json", flat())
    records = "".join(json.dumps({"id": i, "completion": "@copies_%d()" % i,
                                  "tools": copying("copies_%d" % i)}) + "\n" for i in range(16))
    records_file = write("records.jsonl", records)
    per_request = ("--constrain-per-request",) if args.new else ()
    bomb_body = chat(multiplying(), atfunc_constrain=True)
    copies_body = chat(copying())
    fan_body = chat(fanning_out(), atfunc_constrain=True)
    flat_body = chat(flat())
    big_body = chat(big_tools())
    scenarios = {
        "gateway_bomb_constrained": lambda: gateway_run(args.bin, upstream, args.cap_mb, args.timeout,
                                                        [bomb_body], per_request),
        "gateway_fan_out_constrained": lambda: gateway_run(args.bin, upstream, args.cap_mb, args.timeout,
                                                           [fan_body], per_request),
        "gateway_ref_copies": lambda: gateway_run(args.bin, upstream, args.cap_mb, args.timeout, [copies_body]),
        "gateway_ref_copies_x8": lambda: gateway_run(args.bin, upstream, args.cap_mb, args.timeout,
                                                     [copies_body] * 8),
        "gateway_flat_2000_constrained": lambda: gateway_run(args.bin, upstream, args.cap_mb, args.timeout,
                                                             [flat_body], ("--constrain",)),
        "gateway_big_tools": lambda: gateway_run(args.bin, upstream, args.cap_mb, args.timeout, [big_body]),
        "cli_grammar_bomb": lambda: cli_run(args.bin, args.cap_mb, args.timeout,
                                            ["grammar", "--tools", bomb_file]),
        "cli_grammar_bomb_50": lambda: cli_run(args.bin, args.cap_mb, args.timeout,
                                               ["grammar", "--tools", bomb50_file]),
        "cli_grammar_fan_out": lambda: cli_run(args.bin, args.cap_mb, args.timeout,
                                               ["grammar", "--tools", fan_file]),
        "cli_render_ref_copies": lambda: cli_run(args.bin, args.cap_mb, args.timeout,
                                                 ["render", "--tools", copies_file]),
        "cli_parse_jsonl_ref_copies": lambda: cli_run(args.bin, args.cap_mb, args.timeout,
                                                      ["parse", "--jsonl", records_file]),
        "cli_grammar_flat_2000": lambda: cli_run(args.bin, args.cap_mb, args.timeout,
                                                 ["grammar", "--tools", flat_file]),
    }
    sizes = {"bomb request": len(bomb_body), "copies request": len(copies_body),
             "flat request": len(flat_body), "big tools request": len(big_body),
             "records file": len(records)}
    print("inputs: " + ", ".join("%s %d bytes" % kv for kv in sizes.items()), flush=True)
    for name in args.scenarios or list(scenarios):
        print("%-32s %s" % (name, scenarios[name]()), flush=True)


if __name__ == "__main__":
    main()
