"""What the grammar of `atfunc serve --constrain` costs the inference engine: the same
answers generated with the tools' GBNF grammar and without it.

    python3 benches/load/grammar_cost.py --bin target/release/atfunc
    python3 benches/load/grammar_cost.py --bin target/release/atfunc --engine llama-cpp-python

The engine is llama.cpp's `llama-server` as crates/atfunc-lab/conversations/llama_server.sh
builds it (llama.cpp as llama-cpp-python 0.3.36 vendors it, AVX2), or llama-cpp-python's
own server (`python3 -m llama_cpp.server`), serving Qwen2.5-Coder-0.5B-Instruct
(tests/qwen_model.py); `--llama-server` and `--model` choose others. For each tool count
(tools of the kind agents list, as benches/load/tool_list_cost.py writes them) and each
choice (`auto`, `required`), one request is sent in turns without a grammar and with the
grammar `atfunc grammar` prints for those tools and that choice, REPEATS times each:
the tools' atfunc prompt as the system message and one question, greedy, at most TOKENS
tokens. The prompt is the same in both, so after the first request the server takes it
from its cache and the difference is the grammar's.

Each answer is streamed, one token a chunk in both servers. Figures (medians over the
repeats): the time per generated token (from the first token's chunk to the last's, over
the tokens between), the tokens, and the time before the first token (from the request
sent), which holds reading the grammar. Every loop is bounded: a fixed number of
requests, each with a timeout.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TIMEOUT = 300

sys.path.insert(0, HERE)
from tool_list_cost import tool  # noqa: E402

QUESTION = "Find the open records about the login page, at most 5."


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def found(command, what):
    """The path a script of the repository prints, or a clear error naming it."""
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0 or not done.stdout.strip():
        sys.exit("%s not found: `%s` said: %s" % (what, " ".join(command), done.stderr.strip()))
    return done.stdout.strip().splitlines()[-1]


class Server:
    """The engine on a free port; its URL once it answers."""

    def __init__(self, engine, binary, model, threads):
        self.log = tempfile.NamedTemporaryFile(prefix="engine-", suffix=".log")
        port = free_port()
        if engine == "llama-server":
            command = [binary, "-m", model, "-c", "8192", "-t", str(threads), "-np", "1"]
        else:
            command = [sys.executable, "-m", "llama_cpp.server", "--model", model,
                       "--n_ctx", "8192", "--n_threads", str(threads)]
        self.process = subprocess.Popen(
            command + ["--host", "127.0.0.1", "--port", str(port)],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.url = "http://127.0.0.1:%d" % port
        deadline = time.time() + 120
        while True:
            try:
                urllib.request.urlopen(self.url + "/v1/models", timeout=2).read()
                return
            except OSError:
                if self.process.poll() is not None or time.time() > deadline:
                    self.stop()
                    sys.exit("the engine did not start; its log: " + open(self.log.name).read()[-2000:])
                time.sleep(0.5)

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def ask(self, prompt, grammar, tokens):
        body = {"messages": [{"role": "system", "content": prompt},
                             {"role": "user", "content": QUESTION}],
                "temperature": 0, "max_tokens": tokens, "stream": True}
        if grammar is not None:
            body["grammar"] = grammar
        request = urllib.request.Request(self.url + "/v1/chat/completions",
                                         data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        start = time.perf_counter()
        times, text = [], []
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            for line in response:
                if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                for choice in chunk.get("choices", []):
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        times.append(time.perf_counter())
                        text.append(piece)
        if len(times) < 2:
            sys.exit("the engine streamed fewer than two tokens: %r" % "".join(text))
        return {"per_token": (times[-1] - times[0]) * 1e3 / (len(times) - 1),
                "tokens": len(times),
                "before_first": (times[0] - start) * 1e3,
                "text": "".join(text)}


def atfunc(binary, *args):
    return subprocess.run([binary, *args], check=True, capture_output=True, text=True).stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default="target/release/atfunc")
    parser.add_argument("--engine", choices=["llama-server", "llama-cpp-python"],
                        default="llama-server")
    parser.add_argument("--llama-server", help="default: what llama_server.sh prints")
    parser.add_argument("--model", help="a GGUF file; default: what tests/qwen_model.py prints")
    parser.add_argument("--tools", default="1,10,50", help="tool counts, comma separated")
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    binary = None
    if args.engine == "llama-server":
        binary = args.llama_server or found(
            ["bash", os.path.join(ROOT, "crates/atfunc-lab/conversations/llama_server.sh")],
            "llama-server")
    model = args.model or found(["python3", os.path.join(ROOT, "tests/qwen_model.py")],
                                "the Qwen model")
    folder = tempfile.mkdtemp(prefix="atfunc-grammar-cost-")
    server = Server(args.engine, binary, model, args.threads)
    rows = []
    try:
        for count in [int(c) for c in args.tools.split(",")]:
            tools_file = os.path.join(folder, "tools-%d.json" % count)
            with open(tools_file, "w") as f:
                json.dump([tool(i) for i in range(count)], f)
            prompt = atfunc(args.bin, "render", "--tools", tools_file)
            for choice in ("auto", "required"):
                grammar = atfunc(args.bin, "grammar", "--tools", tools_file, "--choice", choice)
                runs = {"none": [], "grammar": []}
                # The first request fills the engine's prompt cache; it is not counted.
                server.ask(prompt, None, args.tokens)
                for _ in range(args.repeats):
                    runs["none"].append(server.ask(prompt, None, args.tokens))
                    runs["grammar"].append(server.ask(prompt, grammar, args.tokens))
                rows.append((count, choice, len(grammar), runs))
                print("done: %d tools, %s" % (count, choice), file=sys.stderr)
    finally:
        server.stop()

    def median(runs, key):
        return statistics.median(r[key] for r in runs)

    print("| tools | choice | grammar bytes | ms a token, none / grammar | added a token (ms) "
          "| tokens, none / grammar | ms before the first token, none / grammar |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for count, choice, size, runs in rows:
        none, held = runs["none"], runs["grammar"]
        print("| %d | %s | %d | %.1f / %.1f | %+.1f | %d / %d | %.0f / %.0f |" % (
            count, choice, size, median(none, "per_token"), median(held, "per_token"),
            median(held, "per_token") - median(none, "per_token"),
            median(none, "tokens"), median(held, "tokens"),
            median(none, "before_first"), median(held, "before_first")))
    print("\nanswers under the grammar (last repeat):", file=sys.stderr)
    for count, choice, _, runs in rows:
        print("  %d %s: %r" % (count, choice, runs["grammar"][-1]["text"][:120]), file=sys.stderr)


if __name__ == "__main__":
    main()
