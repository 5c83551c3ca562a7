#!/usr/bin/env python3
# usage: repeat_stop.py GATEWAY_URL SERVER_URL QUESTIONS.json N OUT.json [--whole]
"""What ending an answer at its first repeated call saves, measured through the gateway.

Asks the first N questions of a BFCL file through `atfunc serve --constrain` (GATEWAY_URL,
streamed, or with --whole as one answer, `tool_choice: "required"`, greedy, `max_tokens`
256), one at a time, and reads
after each answer how many tokens the llama.cpp server behind it (SERVER_URL, started
with `--metrics` and serving nothing else) generated, from its `/metrics` counter
`llamacpp:tokens_predicted_total`. Run it once against a gateway started with
`--keep-repeated-calls` and once against one without: the difference is the tokens a
loop no longer costs. Writes one record per question and the totals to OUT.json."""
import json
import sys
import time
import urllib.request

import openai

TYPES = {"dict": "object", "float": "number", "tuple": "array"}


def schema(node):
    """A BFCL parameter schema in JSON Schema's words (`dict` is `object`, ...)."""
    if isinstance(node, list):
        return [schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: schema(v) for k, v in node.items()}
    kind = out.get("type")
    if not isinstance(kind, str):
        # A property named "type", inside `properties`.
        return out
    if kind == "any":
        del out["type"]
    elif kind in TYPES:
        out["type"] = TYPES[kind]
    return out


def tools(functions):
    # OpenAI tool names take no dots.
    return [{"type": "function", "function": {
        "name": f["name"].replace(".", "_"),
        "description": f.get("description", ""),
        "parameters": schema(f["parameters"]),
    }} for f in functions]


def predicted(server):
    with urllib.request.urlopen(server.rstrip("/") + "/metrics") as response:
        for line in response.read().decode().splitlines():
            if line.startswith("llamacpp:tokens_predicted_total"):
                return float(line.split()[-1])
    raise SystemExit("the server has no llamacpp:tokens_predicted_total: start it with --metrics")


def main():
    args = sys.argv[1:]
    whole = "--whole" in args
    if whole:
        args.remove("--whole")
    if len(args) != 5:
        sys.exit("usage: repeat_stop.py GATEWAY_URL SERVER_URL QUESTIONS.json N OUT.json [--whole]")
    gateway, server, questions, n, out = args[0], args[1], args[2], int(args[3]), args[4]
    client = openai.OpenAI(base_url=gateway.rstrip("/") + "/v1", api_key="unused", timeout=900)
    records = []
    with open(questions) as lines:
        cases = [json.loads(line) for line in lines if line.strip()][:n]
    for case in cases:
        before = predicted(server)
        started = time.monotonic()
        calls, finish = {}, None
        answer = client.chat.completions.create(
            model="default", messages=case["question"][0], tools=tools(case["function"]),
            tool_choice="required", temperature=0, max_tokens=256, stream=not whole)
        if whole:
            choice = answer.choices[0]
            finish = choice.finish_reason
            for index, call in enumerate(choice.message.tool_calls or []):
                calls[index] = call.function.name + call.function.arguments
        else:
            for chunk in answer:
                for choice in chunk.choices:
                    finish = choice.finish_reason or finish
                    for call in choice.delta.tool_calls or []:
                        calls.setdefault(call.index, "")
                        calls[call.index] += (call.function.name or "") + (call.function.arguments or "")
        seconds = time.monotonic() - started
        # The server counts a request's tokens when it ends it; a dropped stream ends soon after.
        time.sleep(1.0)
        tokens = predicted(server) - before
        records.append({"id": case["id"], "calls": len(calls), "written": [calls[i] for i in sorted(calls)],
                        "finish_reason": finish,
                        "seconds": round(seconds, 2), "tokens": tokens})
        print(json.dumps(records[-1]), flush=True)
    total = {"cases": len(records),
             "tokens": sum(r["tokens"] for r in records),
             "seconds": round(sum(r["seconds"] for r in records), 1)}
    with open(out, "w") as f:
        json.dump({"gateway": gateway, "questions": questions, "whole": whole, "total": total,
                   "records": records}, f, indent=1)
    print(json.dumps(total))


if __name__ == "__main__":
    main()
