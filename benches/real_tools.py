"""Every real tool set BFCL ships, through every entry point that reads tools: how many load.

    python benches/real_tools.py [--cli PATH] [--data DIR] [--skip-python] [--skip-serve]

BFCL's data (the PyPI package `bfcl-eval`, Apache-2.0) holds the tool sets its questions
offer: user-contributed APIs of the "live" categories, the Python, Java and JavaScript
functions of the others, and the multi-turn API classes. They are held out of the tests
(the tests are written from the rules, not fitted to this data), so this reads them fresh:
`--data DIR` is an unpacked `bfcl_eval/data` folder; without it the wheel is downloaded
with pip into a temporary folder.

Each unique tool set (the `function` list of a question, the same list counted once) goes
through:
- `atfunc check --tools` and `atfunc check --strict --tools` (loaded, refused, warned);
- `atfunc render --tools` and `atfunc parse --tools` on empty input (the other commands);
- `atfunc.Tools(...)` in Python, when the package is installed (`--skip-python` not);
- `atfunc serve` with the tool set as a request's `tools` (status 400 = refused; the
  upstream is a closed port, so a request it accepts answers 502).

It prints one table: per entry point, the tool sets read and refused, and the first refusals.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile


def tool_sets(data: str) -> dict[str, list]:
    """The unique tool sets of every BFCL data file, by a hash of their JSON."""
    sets: dict[str, list] = {}
    for path in sorted(glob.glob(os.path.join(data, "BFCL_v*_*.json"))):
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                functions = record.get("function")
                if not functions:
                    continue
                text = json.dumps(functions, sort_keys=True)
                sets.setdefault(hashlib.sha1(text.encode()).hexdigest()[:16], functions)
    for path in sorted(glob.glob(os.path.join(data, "multi_turn_func_doc", "*.json"))):
        with open(path, encoding="utf-8") as f:
            functions = [json.loads(line) for line in f if line.strip()]
        sets["multi_turn_" + os.path.basename(path)[:-5]] = functions
    return sets


def download(into: str) -> str:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", into, "bfcl-eval"],
        check=True,
    )
    wheel = glob.glob(os.path.join(into, "bfcl_eval-*.whl"))[0]
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(into)
    return os.path.join(into, "bfcl_eval", "data")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", default="target/debug/atfunc")
    parser.add_argument("--data")
    parser.add_argument("--skip-python", action="store_true")
    parser.add_argument("--skip-serve", action="store_true")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="atfunc-real-tools-")
    data = args.data or download(work)
    sets = tool_sets(data)
    files = {}
    for key, functions in sets.items():
        path = os.path.join(work, key + ".json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(functions, f)
        files[key] = path

    results: dict[str, list[str]] = {}
    warned = 0

    def record(entry: str, key: str, ok: bool) -> None:
        results.setdefault(entry, [])
        if not ok:
            results[entry].append(key)

    for key, path in files.items():
        check = subprocess.run([args.cli, "check", "--tools", path], capture_output=True, text=True)
        record("check", key, check.returncode == 0)
        warned += ": warning:" in check.stdout
        strict = subprocess.run(
            [args.cli, "check", "--strict", "--tools", path], capture_output=True, text=True
        )
        record("check --strict", key, strict.returncode == 0)
        render = subprocess.run([args.cli, "render", "--tools", path], capture_output=True)
        record("render", key, render.returncode == 0)
        parse = subprocess.run(
            [args.cli, "parse", "--tools", path], input=b"", capture_output=True
        )
        record("parse", key, parse.returncode == 0)

    if not args.skip_python:
        try:
            import warnings

            import atfunc  # type: ignore

            for key, functions in sets.items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        atfunc.Tools(functions)
                        record("python Tools", key, True)
                    except Exception:  # noqa: BLE001 - any refusal counts
                        record("python Tools", key, False)
        except ImportError:
            print("python: the atfunc package is not installed (pip install ./python)")

    if not args.skip_serve:
        port, dead = free_port(), free_port()
        server = subprocess.Popen(
            [args.cli, "serve", "--listen", f"127.0.0.1:{port}",
             "--upstream", f"http://127.0.0.1:{dead}/v1"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    time.sleep(0.1)
            for key, functions in sets.items():
                tools = [{"type": "function", "function": f} for f in functions]
                body = json.dumps({"model": "m", "tools": tools,
                                   "messages": [{"role": "user", "content": "hi"}]}).encode()
                request = urllib.request.Request(
                    f"http://127.0.0.1:{port}/v1/chat/completions", data=body,
                    headers={"Content-Type": "application/json"})
                try:
                    urllib.request.urlopen(request, timeout=30)
                    status = 200
                except urllib.error.HTTPError as e:
                    status = e.code
                record("serve (not 400)", key, status != 400)
        finally:
            server.terminate()
            server.wait()

    print(f"{len(sets)} unique tool sets; {warned} loaded with warnings")
    print(f"{'entry point':<18} {'read':>6} {'refused':>8}  first refused")
    for entry, refused in results.items():
        print(f"{entry:<18} {len(sets) - len(refused):>6} {len(refused):>8}  {' '.join(refused[:3])}")


if __name__ == "__main__":
    main()
